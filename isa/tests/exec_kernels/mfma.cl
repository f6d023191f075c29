// gfx90a only: one v_mfma_f32_32x32x2f32 over a wave; A and B read per lane, D written per lane.
typedef float float16 __attribute__((ext_vector_type(16)));
kernel void mfma32(global const float *a, global const float *b, global float *d) {
    size_t l = __builtin_amdgcn_workitem_id_x();
    float16 c = 0;
    c = __builtin_amdgcn_mfma_f32_32x32x2f32(a[l], b[l], c, 0, 0, 0);
    for (int r = 0; r < 16; r++)
        d[r * 64 + l] = c[r];
}
