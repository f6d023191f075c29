// OpenCL C builtins that reach instructions of their own (for the compiler corpus built
// by isa/tools/corpus.py; nothing runs these).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

__kernel void ints(__global int* o, __global const int* a, __global const short* s,
                   __global const ushort* us, __global const char* c, __global const uchar* uc,
                   __global const long* l) {
    int t = get_global_id(0), x = a[t], y = a[t + 1];
    uint p = (uint)x, q = (uint)y;
    short s0 = s[t], s1 = s[t + 1];
    ushort w0 = us[t], w1 = us[t + 1];
    char c0 = c[t], c1 = c[t + 1];
    uchar u0 = uc[t], u1 = uc[t + 1];
    o[t] = mad24(x, y, 3) + mul24(x, y) + mad_hi(x, y, 1) + mul_hi(x, y) + rhadd(x, y)
         + hadd(x, y) + rotate(x, y) + clz(x) + popcount(x) + abs_diff(x, y) + add_sat(x, y)
         + sub_sat(x, y) + mad_sat(x, y, 5) + clamp(x, 1, 9) + upsample(s0, w1)
         + (int)upsample(c0, u1) + add_sat(s0, s1) + sub_sat(s0, s1) + add_sat(w0, w1)
         + sub_sat(w0, w1) + add_sat(c0, c1) + sub_sat(u0, u1) + mad_sat(s0, s1, s0)
         + mad_sat(w0, w1, w0) + hadd(s0, s1) + rhadd(w0, w1) + abs(s0) + abs_diff(s0, s1)
         + max(s0, s1) + min(w0, w1) + clamp(s0, s1, (short)9) + clamp(w0, w1, (ushort)70)
         + mul_hi(s0, s1) + mad_hi(w0, w1, w0) + rotate(s0, s1) + clz(w0) + popcount(c0)
         + (int)mad_sat((long)x, (long)y, l[t]) + (int)mul_hi(l[t], l[t + 1])
         + (int)rotate(l[t], (long)y) + (int)clz(l[t]) + (int)popcount(l[t]) + (int)abs(l[t]);
    o[t + 64] = convert_short_sat(x) + convert_uchar_sat(y) + convert_char_sat(s0)
              + convert_ushort_sat(s1) + convert_int_sat(l[t]) + convert_short_sat_rte(1.5f * x)
              + convert_uchar_sat_rtz(2.5f * y) + convert_int_rtn(0.5f * x) + convert_uint_sat(y);
}

__kernel void floats(__global float* o, __global const float* a, __global half* h,
                     __global const double* d, __global double* od) {
    int t = get_global_id(0);
    float x = a[t], y = a[t + 1], z = a[t + 2];
    o[t] = mad(x, y, z) + native_sin(x) + native_cos(y) + native_exp(z) + native_log(x)
         + native_recip(y) + native_rsqrt(z) + native_divide(x, y) + half_sqrt(x)
         + fract(x, &o[t + 64]) + sign(y) + step(x, y) + smoothstep(x, y, z) + mix(x, y, z)
         + degrees(x) + radians(y) + fdim(x, y) + nextafter(x, y) + logb(z) + (float)ilogb(x)
         + fmin(x, y) + maxmag(x, y) + minmag(y, z) + nan(3u) + rootn(x, 3) + pown(y, 3)
         + sinpi(z) + cospi(x) + tanpi(y) + asinpi(z) + expm1(x) + log1p(y) + remquo(x, y, (int*)&o[t + 128]);
    vstore_half(x * y, t, h);
    vstore_half_rtz(z, t + 64, h);
    o[t + 192] = vload_half(t, h) + vload_half(t + 1, (const __global half*)h);
    float4 v = vload4(t, a);
    o[t + 256] = dot(v, v) + length(v) + distance(v, v.wzyx) + fast_length(v) + normalize(v).x
               + cross(v, v.yzxw).y;
    double u = d[t], w = d[t + 1];
    od[t] = mad(u, w, u) + fract(u, &od[t + 64]) + sign(w) + fdim(u, w) + (double)ilogb(u)
          + sinpi(u) + nextafter(u, w) + rootn(w, 5) + pown(u, 3) + expm1(w) + log1p(u)
          + (double)convert_int_sat(u) + (double)convert_ulong_sat(w) + convert_double(t);
}

__kernel void groups(__global int* o, __global const int* a, __global float* f,
                     __global atomic_int* ai, __global long* al) {
    int t = get_global_id(0);
    __local int li[256];
    __local long ll[64];
    li[get_local_id(0)] = a[t];
    work_group_barrier(CLK_LOCAL_MEM_FENCE);
    o[t] = work_group_reduce_add(a[t]) + work_group_scan_inclusive_max(a[t])
         + work_group_scan_exclusive_add(a[t]) + work_group_broadcast(a[t], 3)
         + work_group_any(a[t] > 2) + work_group_all(a[t] < 9) + li[(t + 1) & 255];
    f[t] = work_group_reduce_min(f[t]) + work_group_scan_inclusive_add(f[t]);
    atomic_fetch_add_explicit(ai, 1, memory_order_relaxed, memory_scope_device);
    atomic_fetch_max(ai + 1, t);
    atomic_compare_exchange_strong(ai + 2, &t, 5);
    o[t + 256] = atomic_inc(&li[t & 7]) + atomic_dec(&li[8]) + atomic_xchg(&li[9], t)
               + atom_add(&ll[t & 3], 1L) + atom_cmpxchg(&ll[5], 1L, 2L) + atom_min(&al[0], (long)t)
               + atom_xor(&al[1], (long)t) + atomic_cmpxchg(&li[10], 3, t);
}
