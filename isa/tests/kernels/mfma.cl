// gfx90a only: MFMA, AGPR use and packed FP32.
typedef float float4 __attribute__((ext_vector_type(4)));
typedef float float2v __attribute__((ext_vector_type(2)));

__kernel void mfma(__global float4 *out, __global const float *a, __global const float *b) {
  int i = __builtin_amdgcn_workitem_id_x();
  float4 acc = out[i];
  acc = __builtin_amdgcn_mfma_f32_4x4x1f32(a[i], b[i], acc, 0, 0, 0);
  acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a[i + 1], b[i + 1], acc, 0, 0, 0);
  out[i] = acc;
}

__kernel void pk_f32(__global float2v *out, __global const float2v *a, __global const float2v *b) {
  int i = __builtin_amdgcn_workitem_id_x();
  out[i] = a[i] * b[i] + a[i];
}
