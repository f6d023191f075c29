// Kernels of model/benches/dispatch.rs (compiled with clang-15 at bench time, -nogpulib).

#define LOCAL_X() __builtin_amdgcn_workitem_id_x()
#define LOCAL_Y() __builtin_amdgcn_workitem_id_y()
#define GROUP_X() __builtin_amdgcn_workgroup_id_x()
#define GROUP_Y() __builtin_amdgcn_workgroup_id_y()
#define BARRIER()                                                                          \
    do {                                                                                   \
        __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");                             \
        __builtin_amdgcn_s_barrier();                                                      \
        __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");                             \
    } while (0)

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
