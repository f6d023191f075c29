// A hand-written gfx9 compute shader for tests/c/pm4_dispatch.c, assembled at test time by
// llvm-mc-15 (scripts/c-client-tests.sh) and dispatched through PM4 DISPATCH_DIRECT.
// Initial state (COMPUTE_PGM_RSRC2: USER_SGPR = 4, TGID_X_EN): s[0:1] = output buffer,
// s2 = a multiplier, s3 = an addend (COMPUTE_USER_DATA_0..3), s4 = workgroup id x,
// v0 = work-item id x. Each work-item stores out[wg * 64 + id] = (wg * 64 + id) * s2 + s3,
// then work-item 0 of each group atomically adds 1 to out[1024] (a completion count).
    s_lshl_b32 s5, s4, 6               // wg * 64
    v_add_u32_e32 v1, s5, v0           // global id
    v_mul_lo_u32 v2, v1, s2
    v_add_u32_e32 v2, s3, v2           // id * mul + add
    v_lshlrev_b32_e32 v1, 2, v1        // byte offset
    v_mov_b32_e32 v3, s1
    v_add_co_u32_e32 v4, vcc, s0, v1
    v_addc_co_u32_e32 v5, vcc, 0, v3, vcc
    global_store_dword v[4:5], v2, off
    v_cmp_eq_u32_e32 vcc, 0, v0
    s_and_saveexec_b64 s[6:7], vcc
    s_cbranch_execz done
    v_mov_b32_e32 v6, 1
    v_mov_b32_e32 v7, 0
    s_add_u32 s8, s0, 4096             // &out[1024]
    s_addc_u32 s9, s1, 0
    global_atomic_add v7, v6, s[8:9]
done:
    s_waitcnt vmcnt(0)
    s_endpgm
