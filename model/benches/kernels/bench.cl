// Kernels of model/benches/dispatch.rs (compiled with clang-15 at bench time, -nogpulib).

#include "kfd_workitem.h"

// c = a + b over workgroups of 256.
kernel void vadd(global const float *a, global const float *b, global float *c, uint n) {
    uint i = GROUP_X() * 256 + LOCAL_X();
    if (i < n)
        c[i] = a[i] + b[i];
}

#define TILE 16

// C = A * B for n x n row-major matrices (n a multiple of TILE), 16 x 16 tiles in LDS,
// workgroups of 16 x 16.
kernel void sgemm_tiled(global const float *A, global const float *B, global float *C, uint n) {
    local float As[TILE][TILE];
    local float Bs[TILE][TILE];
    uint tx = LOCAL_X(), ty = LOCAL_Y();
    uint row = GROUP_Y() * TILE + ty;
    uint col = GROUP_X() * TILE + tx;
    float acc = 0.0f;
    for (uint t = 0; t < n; t += TILE) {
        As[ty][tx] = A[row * n + t + tx];
        Bs[ty][tx] = B[(t + ty) * n + col];
        BARRIER();
        for (uint k = 0; k < TILE; k++)
            acc += As[ty][k] * Bs[k][tx];
        BARRIER();
    }
    C[row * n + col] = acc;
}

// Nothing: dispatch -> completion latency.
kernel void empty(void) {}
