// Kernels that rely on the order in which the SPI starts workgroups (model/tests/workgroup_order.rs;
// compiled with clang-15 at test time, -nogpulib).

#include "kfd_workitem.h"

// A partition's status word: its state in bits 63:32, its value in bits 31:0.
#define EMPTY 0ul
#define AGGREGATE 1ul
#define PREFIX 2ul

// An inclusive prefix sum by decoupled look-back (Merrill and Garland's single-pass scan),
// one partition of LOCAL_SIZE_X() items per workgroup. The workgroup scans its partition,
// publishes its aggregate, then walks back over its predecessors' status words, waiting on
// each that is still EMPTY, adding aggregates until it meets an inclusive prefix; then it
// publishes its own inclusive prefix. Its partition is its workgroup id (`use_ticket` 0:
// only correct if every earlier workgroup has started and makes progress, as hardware
// guarantees) or a ticket from `tickets` in the order workgroups got there (`use_ticket` 1).
// `status` holds one zeroed word per partition.
kernel void lookback_scan(global const uint *in, global uint *out, global ulong *status,
                          global uint *tickets, uint use_ticket, local uint *items) {
    local uint partition;
    local uint exclusive;
    uint l = LOCAL_X();
    uint n = LOCAL_SIZE_X();
    if (l == 0)
        partition = use_ticket ? __atomic_fetch_add(tickets, 1u, __ATOMIC_RELAXED) : GROUP_X();
    BARRIER();
    uint p = partition;
    items[l] = in[p * n + l];
    BARRIER();
    if (l == 0) {
        uint sum = 0;
        for (uint k = 0; k < n; k++) {
            sum += items[k];
            items[k] = sum;
        }
        __atomic_store_n(&status[p], ((p == 0 ? PREFIX : AGGREGATE) << 32) | sum,
                         __ATOMIC_RELEASE);
        uint before = 0;
        for (uint j = p; j > 0; j--) {
            ulong s;
            while (((s = __atomic_load_n(&status[j - 1], __ATOMIC_ACQUIRE)) >> 32) == EMPTY)
                ;
            before += (uint)s;
            if ((s >> 32) == PREFIX)
                break;
        }
        if (p != 0)
            __atomic_store_n(&status[p], (PREFIX << 32) | (before + sum), __ATOMIC_RELEASE);
        exclusive = before;
    }
    BARRIER();
    out[p * n + l] = items[l] + exclusive;
}
