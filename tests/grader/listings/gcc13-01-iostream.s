	.file	"device_enumeration.cpp"
	.text
.Ltext0:
	.file 0 "/tmp/gi/submission/build" "../course/lessons/01-device-enumeration/device_enumeration.cpp"
#APP
	.globl _ZSt21ios_base_library_initv
	.section	.rodata._ZNSt7__cxx119to_stringEi.str1.1,"aMS",@progbits,1
.LC0:
	.string	"__pos <= size()"
	.section	.rodata._ZNSt7__cxx119to_stringEi.str1.8,"aMS",@progbits,1
	.align 8
.LC1:
	.ascii	"constexpr std::__cxx11::bas"
	.string	"ic_string<_CharT, _Traits, _Alloc>::reference std::__cxx11::basic_string<_CharT, _Traits, _Alloc>::operator[](size_type) [with _CharT = char; _Traits = std::char_traits<char>; _Alloc = std::allocator<char>; reference = char&; size_type = long unsigned int]"
	.align 8
.LC2:
	.string	"/usr/include/c++/13/bits/basic_string.h"
#NO_APP
	.section	.text._ZNSt7__cxx119to_stringEi,"axG",@progbits,_ZNSt7__cxx119to_stringEi,comdat
	.p2align 4
	.weak	_ZNSt7__cxx119to_stringEi
	.type	_ZNSt7__cxx119to_stringEi, @function
_ZNSt7__cxx119to_stringEi:
.LVL0:
.LFB1553:
	.file 1 "/usr/include/c++/13/bits/basic_string.h"
	.loc 1 4166 3 view -0
	.cfi_startproc
	.loc 1 4166 3 is_stmt 0 view .LVU1
	endbr64
