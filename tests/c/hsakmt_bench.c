/*
 * Times Debian's libhsakmt on the kfd model through the LD_PRELOAD shim, for the same four
 * operations preload/benches/devkfd.rs times with the Rust thunk's DevKfd backend:
 *
 *   pm4_queue_create_destroy   hsaKmtCreateQueue + hsaKmtDestroyQueue (ring allocated once)
 *   alloc_map_unmap_free_64k   hsaKmtAllocMemory (VRAM, host-visible) + Map + Unmap + Free
 *   event_set_wait             hsaKmtSetEvent + hsaKmtWaitOnEvent (auto-reset)
 *   submit_fence_round_trip    RELEASE_MEM fence on a PM4 queue, doorbell, CPU polls the value
 *
 * Prints one line per operation: "<name> <median ns/op> <batches>x<iterations>".
 * Build: gcc -O2 -o hsakmt_bench hsakmt_bench.c -lhsakmt
 */
#define _GNU_SOURCE
#include <hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 7

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, int status)
{
    fprintf(stderr, "hsakmt_bench: %s failed (%d)\n", what, status);
    exit(1);
}

#define OK(call)                                                                           \
    do {                                                                                   \
        HSAKMT_STATUS s_ = (call);                                                         \
        if (s_ != HSAKMT_STATUS_SUCCESS)                                                   \
            die(#call, s_);                                                                \
    } while (0)

static const unsigned node = 1;

/* Runs `op` `iters` times per batch, BATCHES batches after one warm-up batch; prints the
 * median per-operation time. */
static void bench(const char *name, int iters, void (*op)(void))
{
    double per_op[BATCHES];
    for (int i = 0; i < iters; i++)
        op();
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (int i = 0; i < iters; i++)
            op();
        per_op[b] = (now_ns() - t0) / iters;
    }
    qsort(per_op, BATCHES, sizeof per_op[0], cmp_double);
    printf("%s %.0f %dx%d\n", name, per_op[BATCHES / 2], BATCHES, iters);
    fflush(stdout);
}

static HsaMemFlags host_flags(int exec)
{
    HsaMemFlags f = {0};
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.HostAccess = 1;
    f.ui32.NoNUMABind = 1;
    f.ui32.ExecuteAccess = exec;
    return f;
}

static void *alloc_mapped(HSAuint64 size, HsaMemFlags flags)
{
    void *p = NULL;
    HSAuint64 va;
    OK(hsaKmtAllocMemory(node, size, flags, &p));
    OK(hsaKmtMapMemoryToGPU(p, size, &va));
    return p;
}

/* ---------------------------------------------------------------------------------------- */

static void *ring;
static volatile uint64_t *pointers;

static void op_queue(void)
{
    HsaQueueResource r;
    memset(&r, 0, sizeof r);
    r.QueueRptrValue = (HSAuint64)(uintptr_t)&pointers[0];
    r.QueueWptrValue = (HSAuint64)(uintptr_t)&pointers[8];
    OK(hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r));
    OK(hsaKmtDestroyQueue(r.QueueId));
}

static void op_memory(void)
{
    HsaMemFlags f = {0};
    void *p = NULL;
    HSAuint64 va;
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.NonPaged = 1;
    f.ui32.HostAccess = 1;
    f.ui32.NoSubstitute = 1;
    OK(hsaKmtAllocMemory(node, 64 << 10, f, &p));
    OK(hsaKmtMapMemoryToGPU(p, 64 << 10, &va));
    OK(hsaKmtUnmapMemoryToGPU(p));
    OK(hsaKmtFreeMemory(p, 64 << 10));
}

static HsaEvent *event;

static void op_event(void)
{
    OK(hsaKmtSetEvent(event));
    OK(hsaKmtWaitOnEvent(event, 1000));
}

static HsaQueueResource fq;
static uint32_t *fring;
static volatile uint64_t *fence;
static uint64_t fwptr, seq;
static int gfx10;

static void op_fence(void)
{
    uint64_t a = (uint64_t)(uintptr_t)fence;
    seq++;
    /* RELEASE_MEM, end of pipe, 64-bit data, no interrupt. */
    uint32_t pkt[8] = {(3u << 30) | (6u << 16) | (0x49u << 8), gfx10 ? (0x14u | (5u << 8)) : 0x00028514u,
                       2u << 29, (uint32_t)a, (uint32_t)(a >> 32), (uint32_t)seq, (uint32_t)(seq >> 32), 0};
    for (int i = 0; i < 8; i++)
        fring[(fwptr + i) % 1024] = pkt[i];
    fwptr += 8;
    __atomic_store_n(fq.Queue_write_ptr_aql, fwptr, __ATOMIC_RELEASE);
    __atomic_store_n(fq.Queue_DoorBell_aql, fwptr, __ATOMIC_RELEASE);
    double deadline = now_ns() + 1e9;
    while (__atomic_load_n(fence, __ATOMIC_ACQUIRE) != seq)
        if (now_ns() > deadline)
            die("fence round trip (timeout)", -1);
}

int main(void)
{
    HsaSystemProperties sys;
    HsaNodeProperties np;
    OK(hsaKmtOpenKFD());
    OK(hsaKmtAcquireSystemProperties(&sys));
    OK(hsaKmtGetNodeProperties(node, &np));
    gfx10 = np.EngineId.ui32.Major >= 10;

    ring = alloc_mapped(4096, host_flags(1));
    pointers = alloc_mapped(4096, host_flags(0));
    bench("pm4_queue_create_destroy", 50, op_queue);

    bench("alloc_map_unmap_free_64k", 500, op_memory);

    HsaEventDescriptor d = {0};
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    d.NodeId = node;
    OK(hsaKmtCreateEvent(&d, false, false, &event));
    bench("event_set_wait", 2000, op_event);

    fring = alloc_mapped(4096, host_flags(1));
    fence = alloc_mapped(4096, host_flags(0));
    memset(&fq, 0, sizeof fq);
    fq.QueueRptrValue = (HSAuint64)(uintptr_t)&pointers[0];
    fq.QueueWptrValue = (HSAuint64)(uintptr_t)&pointers[8];
    OK(hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL, fring, 4096, NULL, &fq));
    bench("submit_fence_round_trip", 500, op_fence);
    OK(hsaKmtDestroyQueue(fq.QueueId));

    hsaKmtDestroyEvent(event);
    hsaKmtCloseKFD();
    return 0;
}
