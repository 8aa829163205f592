	.file	"device_enumeration.cpp"
	.text
.Ltext0:
	.file 0 "/tmp/al/g12" "device_enumeration.cpp"
	.section	.text._ZNSt7__cxx119to_stringEi,"axG",@progbits,_ZNSt7__cxx119to_stringEi,comdat
	.p2align 4
	.weak	_ZNSt7__cxx119to_stringEi
	.type	_ZNSt7__cxx119to_stringEi, @function
_ZNSt7__cxx119to_stringEi:
.LVL0:
.LFB1484:
	.file 1 "/usr/include/c++/12/bits/basic_string.h"
