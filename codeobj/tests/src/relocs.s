// One relocation of every R_AMDGPU_* type, to check codeobj's names and numbers against
// llvm-readelf-15 -r.
	.text
	s_nop 0
	.reloc 0, R_AMDGPU_NONE, sym
	.reloc 0, R_AMDGPU_ABS32_LO, sym
	.reloc 0, R_AMDGPU_ABS32_HI, sym
	.reloc 0, R_AMDGPU_ABS64, sym
	.reloc 0, R_AMDGPU_REL32, sym
	.reloc 0, R_AMDGPU_REL64, sym
	.reloc 0, R_AMDGPU_ABS32, sym
	.reloc 0, R_AMDGPU_GOTPCREL, sym
	.reloc 0, R_AMDGPU_GOTPCREL32_LO, sym
	.reloc 0, R_AMDGPU_GOTPCREL32_HI, sym
	.reloc 0, R_AMDGPU_REL32_LO, sym
	.reloc 0, R_AMDGPU_REL32_HI, sym
	.reloc 0, R_AMDGPU_RELATIVE64, sym
	.reloc 0, R_AMDGPU_REL16, sym
