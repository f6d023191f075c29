// Kernels the interpreter runs in isa/tests/exec_e2e.rs; results are compared with a host
// reference computed in the test. Built with -nogpulib, so the work-item functions, barrier,
// atomics and math are written with clang builtins instead of the OpenCL library's.

#include "kfd_workitem.h"

kernel void vadd_int(global const int *a, global const int *b, global int *c) {
    size_t i = GLOBAL_X();
    c[i] = a[i] + b[i];
}

kernel void vadd_float(global const float *a, global const float *b, global float *c) {
    size_t i = GLOBAL_X();
    c[i] = a[i] + b[i];
}

kernel void vadd_double(global const double *a, global const double *b, global double *c) {
    size_t i = GLOBAL_X();
    c[i] = a[i] + b[i];
}

kernel void saxpy(float alpha, global const float *x, global float *y) {
    size_t i = GLOBAL_X();
    y[i] = __builtin_fmaf(alpha, x[i], y[i]);
}

kernel void int_divmod(global const int *a, global const int *b, global int *q, global int *r,
                       global uint *uq, global uint *ur) {
    size_t i = GLOBAL_X();
    q[i] = a[i] / b[i];
    r[i] = a[i] % b[i];
    uq[i] = (uint)a[i] / (uint)b[i];
    ur[i] = (uint)a[i] % (uint)b[i];
}

kernel void float_div_sqrt(global const float *a, global const float *b, global float *q,
                           global float *s, global double *dq, global double *ds) {
    size_t i = GLOBAL_X();
    q[i] = a[i] / b[i];
    s[i] = __builtin_sqrtf(a[i]);
    dq[i] = (double)a[i] / (double)b[i];
    ds[i] = __builtin_sqrt((double)a[i]);
}

kernel void reduce_lds(global const int *in, global int *out) {
    local int tmp[256];
    size_t l = LOCAL_X();
    tmp[l] = in[GLOBAL_X()];
    BARRIER();
    for (size_t s = LOCAL_SIZE_X() / 2; s > 0; s >>= 1) {
        if (l < s)
            tmp[l] += tmp[l + s];
        BARRIER();
    }
    if (l == 0)
        out[GROUP_X()] = tmp[0];
}

kernel void atomics(global const int *in, global int *sum, global int *maxv, global uint *cnt,
                    global int *old_out) {
    local int lsum;
    size_t l = LOCAL_X();
    if (l == 0)
        lsum = 0;
    BARRIER();
    __atomic_fetch_add(&lsum, in[GLOBAL_X()], __ATOMIC_RELAXED);
    BARRIER();
    if (l == 0)
        __atomic_fetch_add(sum, lsum, __ATOMIC_RELAXED);
    __atomic_fetch_max(maxv, in[GLOBAL_X()], __ATOMIC_RELAXED);
    old_out[GLOBAL_X()] = __atomic_fetch_add(cnt, 1u, __ATOMIC_RELAXED);
}

kernel void collatz(global const uint *in, global uint *steps) {
    size_t i = GLOBAL_X();
    uint n = in[i];
    uint k = 0;
    while (n != 1 && k < 1000) {
        if (n & 1)
            n = 3 * n + 1;
        else
            n = n / 2;
        k++;
    }
    steps[i] = k;
}

kernel void private_array(global const int *idx, global int *out) {
    int arr[64];
    size_t i = GLOBAL_X();
    for (int k = 0; k < 64; k++)
        arr[k] = k * k + (int)i;
    out[i] = arr[idx[i] & 63] + arr[(idx[i] >> 8) & 63];
}

kernel void ptr64(global const long *a, global long *out, long stride) {
    size_t i = GLOBAL_X();
    global const long *p = a + i * stride;
    out[i] = p[0] * 3 + (p[1] >> 2) - (long)i;
}
