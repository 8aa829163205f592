	.file	"tmpxft_0000005a_00000000-7_split_reduction.cudafe1.cpp"
	.text
.Ltext0:
	.file 0 "/tmp/gi/submission/build" "/tmp/tmpxft_0000005a_00000000-7_split_reduction.cudafe1.cpp"
#APP
	.globl _ZSt21ios_base_library_initv
	.section .nv_fatbin, "a"
.align 8
fatbinData:
.quad 0x00100001ba55ed50,0x00000000000610c0,0x0000007801010002,0x0000000000061048
.quad 0x0000000000000000,0x0000005a00010008,0x0000003700000040,0x0000000000000011
.quad 0x0000000000000000,0x0000000000000000,0x7372756f632f2e2e,0x6e6f7373656c2f65
.text

#NO_APP
	.section	.text._ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi,"axG",@progbits,_ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi,comdat
	.align 2
	.p2align 4
	.weak	_ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi
	.type	_ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi, @function
_ZNK6thrust23THRUST_300001_SM_900_NS6system14error_category23default_error_conditionEi:
.LVL0:
.LFB10525:
	.file 1 "/usr/local/cuda-13.0/targets/x86_64-linux/include/cccl/thrust/system/detail/error_category.inl"
	.loc 1 46 1 view -0
	.cfi_startproc
	.loc 1 46 1 is_stmt 0 view .LVU1
