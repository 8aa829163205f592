	.file	"tmpxft_0000675a_00000000-6_split_reduction.cudafe1.cpp"
	.text
.Ltext0:
	.file 0 "/tmp/al/g12" "/tmp/tmpxft_0000675a_00000000-6_split_reduction.cudafe1.cpp"
#APP
	.section .nv_fatbin, "a"
.align 8
fatbinData:
.quad 0x00100001ba55ed50,0x00000000000224d0,0x0000004001010002,0x000000000001d848
.quad 0x0000000000000000,0x0000005a00010008,0x0000000000000000,0x0000000000000011
.quad 0x0000000000000000,0x0000000000000000,0x41010102464c457f,0x0000000000000008
.text

#NO_APP
	.section	.text._ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi,"axG",@progbits,_ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi,comdat
	.align 2
	.p2align 4
	.weak	_ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi
	.type	_ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi, @function
_ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi:
.LVL0:
.LFB9186:
