// Kernels for the llvm-objdump differential test: varied integer, float, f64, atomics,
// LDS, control flow and scratch code. Compiled with clang-15 -nogpulib at test time.

#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

typedef unsigned int uint;

__kernel void saxpy(__global float *y, __global const float *x, float a, int n) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 256;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

__kernel void int_mix(__global int *out, __global const int *in, int n) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 64;
  if (i >= n)
    return;
  int v = in[i];
  int r = (v * 7) ^ (v >> 3);
  r += (uint)v / 13u;
  r -= v % 5;
  r |= __builtin_popcount(v) << 2;
  r = r < 0 ? -r : r;
  out[i] = r + __builtin_clz((uint)v | 1u) + (short)(v >> 7);
}

__kernel void fp64(__global double *out, __global const double *a, __global const double *b) {
  int i = __builtin_amdgcn_workitem_id_x();
  double x = a[i], y = b[i];
  out[i] = x * y + x / (y + 1.0) - __builtin_sqrt(x * x + 2.5) + __builtin_fma(x, y, 0.125);
}

__kernel void fp_math(__global float *out, __global const float *in) {
  int i = __builtin_amdgcn_workitem_id_x();
  float x = in[i];
  out[i] = __builtin_floorf(x) + __builtin_fabsf(x) * 0.5f + __builtin_fminf(x, 3.0f) + x / (x + 2.0f) +
           (float)(int)x + __builtin_copysignf(1.0f, x);
}

__kernel void atomics(__global int *counter, __global uint *maxv, __global const int *in) {
  int i = __builtin_amdgcn_workitem_id_x();
  atomic_add(counter, in[i]);
  atomic_max(maxv, (uint)in[i]);
  int old = atomic_cmpxchg(counter + 1, 0, i);
  atomic_xchg(counter + 2, old);
}

__kernel void lds_reduce(__global float *out, __global const float *in) {
  __local float tile[256];
  uint lid = __builtin_amdgcn_workitem_id_x();
  tile[lid] = in[lid + __builtin_amdgcn_workgroup_id_x() * 256];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = 128; s > 0; s >>= 1) {
    if (lid < s)
      tile[lid] += tile[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    out[__builtin_amdgcn_workgroup_id_x()] = tile[0];
}

__kernel void control(__global int *out, __global const int *in, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  int acc = 0;
  for (int k = 0; k < n; k++) {
    int v = in[(i + k) & 1023];
    if (v & 1)
      acc += v;
    else if (v & 2)
      acc -= v * 3;
    else
      acc ^= k;
    if (acc > 100000)
      break;
  }
  out[i] = acc;
}

__kernel void scratch(__global int *out, __global const int *in, int sel) {
  int buf[64];
  int i = __builtin_amdgcn_workitem_id_x();
  for (int k = 0; k < 64; k++)
    buf[k] = in[(k * 7 + i) & 255];
  out[i] = buf[(sel + i) & 63] + buf[(sel * 3) & 63];
}

__kernel void halfs(__global half *out, __global const half *in) {
  int i = __builtin_amdgcn_workitem_id_x();
  out[i] = in[i] * (half)2.0 + (half)0.5;
}

__kernel void bytes(__global uchar *out, __global const ushort *in, __global long *wide) {
  int i = __builtin_amdgcn_workitem_id_x();
  out[i] = (uchar)(in[i] >> 3);
  wide[i] = (long)in[i] * 1000003L + wide[i + 1];
}
