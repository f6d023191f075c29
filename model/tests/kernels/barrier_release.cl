// A work loop as RCCL's kernels run one: after a barrier every wave reads the work header in
// LDS, and wave 0 at once loads the next header (at the index the current one names) from
// global memory into the same LDS word, with no second barrier between the reads and that
// write. On hardware the load's latency lets every wave read first; each wave records what
// it read. Header: bit 0 = last, bits 31:1 = index of the next header. (model/tests/
// barrier_release.rs; compiled with clang-15 at test time, -nogpulib.)

#include "kfd_workitem.h"

kernel void work_loop(global const uint *works, global uint *seen) {
    local uint header;
    uint lid = LOCAL_X();
    uint wave = lid / 64;
    uint nwaves = LOCAL_SIZE_X() / 64;
    if (lid == 0)
        header = works[0];
    BARRIER();
    for (uint r = 0;; r++) {
        uint h = header;
        if ((lid & 63) == 0)
            seen[r * nwaves + wave] = h;
        if (h & 1)
            break;
        if (lid == 0)
            header = works[h >> 1];
        BARRIER();
    }
}
