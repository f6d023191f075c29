// Kernels the model's SPI runs in model/tests/dispatch.rs (compiled with clang-15 at test
// time, -nogpulib: the work-item functions are clang builtins and the dispatch packet).

#include "kfd_workitem.h"

kernel void vadd(global const float *a, global const float *b, global float *c, uint n) {
    uint i = GLOBAL_X();
    if (i < n)
        c[i] = a[i] + b[i];
}

// Sums each workgroup's inputs in LDS (dynamic size from the packet) and adds the sum to a
// global total atomically; every work-item also takes a ticket from a global counter.
kernel void reduce(global const int *in, global int *sums, global int *total,
                   global uint *tickets, global uint *counter, local int *tmp) {
    uint l = LOCAL_X();
    tmp[l] = in[GLOBAL_X()];
    BARRIER();
    for (uint s = LOCAL_SIZE_X() / 2; s > 0; s >>= 1) {
        if (l < s)
            tmp[l] += tmp[l + s];
        BARRIER();
    }
    if (l == 0) {
        sums[GROUP_X()] = tmp[0];
        __atomic_fetch_add(total, tmp[0], __ATOMIC_RELAXED);
    }
    tickets[GLOBAL_X()] = __atomic_fetch_add(counter, 1u, __ATOMIC_RELAXED);
}

// A 2-D grid: out[y][x] = x * 1000 + y.
kernel void grid2d(global int *out) {
    uint x = GLOBAL_X();
    uint y = GLOBAL_Y();
    out[y * GRID_X() + x] = (int)(x * 1000 + y);
}

// Stores through whatever pointer it is given.
kernel void store_to(global int *p) {
    p[LOCAL_X()] = 1;
}

// A private array indexed at run time: scratch through the private segment buffer.
kernel void private_array(global const int *idx, global int *out) {
    int priv[64];
    uint i = GLOBAL_X();
    for (int k = 0; k < 64; k++)
        priv[k] = k * 3 + (int)i;
    out[i] = priv[idx[i] & 63];
}

// Device-scope acquire and system-scope release: the cache maintenance instructions
// (buffer_wbinvl1_vol; gfx90a also buffer_wbl2) around atomics.
kernel void acquire_flag(global atomic_int *flag, global const int *data, global int *out) {
    int f = __opencl_atomic_load(flag, __ATOMIC_ACQUIRE, __OPENCL_MEMORY_SCOPE_DEVICE);
    uint i = LOCAL_X();
    out[i] = f + data[i];
    if (i == 0)
        __opencl_atomic_store(flag, f + 1, __ATOMIC_RELEASE, __OPENCL_MEMORY_SCOPE_ALL_SVM_DEVICES);
}

// abort(): s_trap 2 in the work-item that finds a negative value.
kernel void trap_on_negative(global const int *in, global int *out) {
    uint i = LOCAL_X();
    if (in[i] < 0)
        __builtin_trap();
    out[i] = in[i];
}

// Ids only from the ABI registers (no dispatch packet): for PM4 DISPATCH_DIRECT.
kernel void store_ids(global uint *out) {
    uint id = GROUP_X() * 64 + LOCAL_X();
    out[id] = id + 1;
}

// Spins, sleeping between polls, until the host stores a non-zero flag; then every
// work-item writes flag + its id.
kernel void spin_until_flag(global atomic_int *flag, global int *out) {
    int f;
    while ((f = __opencl_atomic_load(flag, __ATOMIC_ACQUIRE,
                                     __OPENCL_MEMORY_SCOPE_ALL_SVM_DEVICES)) == 0)
        __builtin_amdgcn_s_sleep(2);
    out[GLOBAL_X()] = f + (int)GLOBAL_X();
}

// A hash chain of `rounds` steps per work-item (work enough to span time slices), and
// global atomics from every workgroup: out[i] = hash, sum[0] += hash & 0xffff, sum[1] += 1.
kernel void busy_hash(global uint *out, global uint *sum, uint rounds) {
    uint i = GLOBAL_X();
    uint h = i * 2654435761u;
    for (uint r = 0; r < rounds; r++)
        h = (h ^ (h >> 13)) * 0x5bd1e995u + r;
    out[i] = h;
    __atomic_fetch_add(&sum[0], h & 0xffff, __ATOMIC_RELAXED);
    __atomic_fetch_add(&sum[1], 1u, __ATOMIC_RELAXED);
}

// __builtin_debugtrap(): s_trap 3 `n` times per wave; the wave goes on when a trap handler
// returns, then every work-item writes its id + 1.
kernel void debugtrap_loop(global int *out, uint n) {
    uint i = GLOBAL_X();
    for (uint k = 0; k < n; k++)
        __builtin_debugtrap();
    out[i] = (int)i + 1;
}

// Each wave's HW_ID (s_getreg_b32 hwreg(HW_REG_HW_ID, 0, 32)): where the SPI placed it.
kernel void hw_id(global uint *out) {
    uint id = __builtin_amdgcn_s_getreg((31 << 11) | 4);
    if (LOCAL_X() % 64 == 0)
        out[GROUP_X() * (LOCAL_SIZE_X() / 64) + LOCAL_X() / 64] = id;
}

// Global wave sync resource 0 as a semaphore of count `count` (the init kernel kfdtest's
// KFDGWSTest.Semaphore and HIP dispatch before the kernel that uses the resource).
kernel void gws_init(uint count) {
    __builtin_amdgcn_ds_gws_init(count, 0);
}

// Mutual exclusion through GWS semaphore 0: each wave takes it, adds 1 to `*total` with a
// plain load and store (no atomic), sleeping in between so that other waves run, and gives
// it back — `rounds` times. `inside` counts the waves in the critical section; an entry that
// finds another wave there counts in `overlaps`.
kernel void gws_mutex(volatile global uint *total, global uint *inside, global uint *overlaps,
                      uint rounds) {
    for (uint r = 0; r < rounds; r++) {
        __builtin_amdgcn_ds_gws_sema_p(0);
        __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent");
        if (LOCAL_X() % 64 == 0) {
            if (__atomic_fetch_add(inside, 1u, __ATOMIC_RELAXED) != 0)
                __atomic_fetch_add(overlaps, 1u, __ATOMIC_RELAXED);
            uint v = *total;
            __builtin_amdgcn_s_sleep(1);
            *total = v + 1;
            __atomic_fetch_sub(inside, 1u, __ATOMIC_RELAXED);
        }
        __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent");
        __builtin_amdgcn_ds_gws_sema_v(0);
    }
}

// Stores, loads and atomics past the workgroup's LDS on purpose (issue #37): work-item l
// uses the int at tmp[l * stride]; the dispatch gives fewer bytes than the last lanes reach.
// out[l]: the value read back; out[64 + l]: what the atomic add returned; out[128 + l]: the
// value after the add.
kernel void lds_past_end(global int *out, local int *tmp, uint stride) {
    uint l = LOCAL_X();
    tmp[l * stride] = (int)l + 1;
    BARRIER();
    out[l] = tmp[l * stride];
    out[64 + l] = __atomic_fetch_add(&tmp[l * stride], 10, __ATOMIC_RELAXED);
    BARRIER();
    out[128 + l] = tmp[l * stride];
}
