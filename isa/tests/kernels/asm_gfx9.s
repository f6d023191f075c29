// Hand-written instructions for the differential test (gfx900 and gfx90a).
.text
.globl asm_mix
.p2align 8
.type asm_mix,@function
asm_mix:
  s_mov_b32 s0, 0x12345678
  s_movk_i32 s1, 0x7fff
  s_getreg_b32 s2, hwreg(HW_REG_HW_ID)
  s_add_u32 s4, s4, 16
  s_addc_u32 s5, s5, 0
  s_load_dwordx2 s[6:7], s[4:5], 0x8 glc
  s_waitcnt vmcnt(0) lgkmcnt(0)
  v_mov_b32_e32 v1, 0.5
  v_add_f32_e64 v2, -v1, |s0| clamp
  v_mad_u64_u32 v[4:5], s[8:9], v1, v2, v[4:5]
  v_cvt_f16_f32_e32 v3, v2
  v_pk_add_f16 v6, v3, v3 op_sel:[1,0]
  v_cmp_lt_i32_e64 s[10:11], v1, 5
  v_cndmask_b32_e64 v7, 0, 1, s[10:11]
  ds_write2_b32 v1, v2, v3 offset0:4 offset1:8
  ds_read_b64 v[8:9], v1 offset:64
  buffer_load_dword v10, v1, s[12:15], 0 offen offset:4 glc
  global_atomic_add v11, v[4:5], v12, off glc
  flat_load_dwordx4 v[12:15], v[4:5]
  scratch_store_dword v1, v2, off offset:-16
  tbuffer_load_format_xyzw v[16:19], v1, s[12:15], 0 format:[BUF_DATA_FORMAT_32_32_32_32,BUF_NUM_FORMAT_FLOAT] offen offset:16
  tbuffer_store_format_x v2, v1, s[12:15], s3 format:[BUF_DATA_FORMAT_8] idxen glc slc
  tbuffer_load_format_d16_xy v20, off, s[12:15], 0 format:[BUF_NUM_FORMAT_UINT]
  image_load v[20:23], v1, s[16:23] dmask:0xf unorm
  image_sample v[24:26], v[2:3], s[16:23], s[28:31] dmask:0x7 glc da
  image_atomic_add v2, v1, s[16:23] dmask:0x1 glc
  s_cbranch_vccnz asm_mix
  s_endpgm
