// An application kernel instrumented with the drain producer library: it calls
// kfd_drain_reserve/kfd_drain_commit as undefined externals, which the code-object loader
// resolves against producer.cl's code object. Built with -DKFD_DRAIN_OFF it is the same
// kernel without instrumentation (the overhead baseline).
//
// Every work-item runs `records` steps of `rounds` LCG iterations and writes its final value
// to out[]; after each step lane 0 of every wave writes one record of `payload_words` words:
//   [0] wave  [1] step  [2..3] s_memrealtime  [4] lane 0's value  [5..n-2] filler  [n-1] FNV-1a

typedef unsigned int u32;

#ifndef KFD_DRAIN_OFF
extern global void *kfd_drain_reserve(u32 len, u32 kind, u32 producer);
extern void kfd_drain_commit(global void *payload);
#endif

#define TRACE_KIND 0x7D1

static inline u32 fnv(u32 h, u32 w) { return (h ^ w) * 0x01000193u; }

kernel void traced_work(global u32 *out, u32 rounds, u32 records, u32 payload_words) {
    u32 lid = __builtin_amdgcn_workitem_id_x();
    u32 gid = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + lid;
    u32 wave = gid / 64;
    u32 x = gid * 2654435761u + 1u;
    for (u32 r = 0; r < records; r++) {
        for (u32 i = 0; i < rounds; i++)
            x = x * 1664525u + 1013904223u;
#ifndef KFD_DRAIN_OFF
        if (lid % 64 == 0 && payload_words >= 6) {
            global u32 *p = (global u32 *)kfd_drain_reserve(payload_words * 4, TRACE_KIND, wave);
            if (p) {
                unsigned long t = __builtin_amdgcn_s_memrealtime();
                u32 w[5] = {wave, r, (u32)t, (u32)(t >> 32), x};
                u32 h = 0x811C9DC5u;
                for (u32 i = 0; i < 5; i++) {
                    p[i] = w[i];
                    h = fnv(h, w[i]);
                }
                for (u32 i = 5; i + 1 < payload_words; i++) {
                    u32 f = (wave * 0x9E3779B9u) ^ (r * 0x85EBCA6Bu) ^ i;
                    p[i] = f;
                    h = fnv(h, f);
                }
                p[payload_words - 1] = h;
                kfd_drain_commit(p);
            }
        }
#endif
    }
    out[gid] = x;
}
