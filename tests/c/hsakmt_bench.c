/*
 * Times Debian's libhsakmt on the kfd model through the LD_PRELOAD shim, for the same four
 * operations preload/benches/devkfd.rs times with the Rust thunk's DevKfd backend:
 *
 *   pm4_queue_create_destroy   hsaKmtCreateQueue + hsaKmtDestroyQueue (ring allocated once)
 *   alloc_map_unmap_free_64k   hsaKmtAllocMemory (VRAM, host-visible) + Map + Unmap + Free
 *   event_set_wait             hsaKmtSetEvent + hsaKmtWaitOnEvent (auto-reset)
 *   submit_fence_round_trip    RELEASE_MEM fence on a PM4 queue, doorbell, CPU polls the value
 *   aql_barrier_round_trip     BARRIER_AND packet on an AQL queue, doorbell, CPU polls the
 *                              completion signal (amd_signal_t value) down to 0
 *
 * Usage: hsakmt_bench [-b BATCHES] [-s SCALE] [OPERATION...]   (default: all, 7 batches,
 * scale 1: each operation's own iteration count per batch). tests/c/bench.sh runs it in short
 * rounds alternated with `kfd bench --ops`, which times the thunk the same way.
 * Prints one line per operation: "<name> <median ns/op> <batches>x<iterations> <fastest batch's
 * ns/op>". The round trips take about 0.5 µs, so they run 10,000 times per batch: at 500 a
 * batch lasted 250 µs and one preemption of the client or the engine thread made it 30-45x
 * slower.
 * Build: gcc -O2 -o hsakmt_bench hsakmt_bench.c -lhsakmt
 */
#define _GNU_SOURCE
#include <hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#define MAX_BATCHES 1000

static int batches = 7;
static double scale = 1.0;

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

/* Polls until *word == value: checks without yielding for the first 20 us, then yields every
 * 256 checks, check for check as the thunk's side (`spin_until` in cli/src/measure.rs). A
 * yield on every 256th check from the start made each ~0.5 us round trip a count of system
 * calls, and the ratio of the two sides followed their loops' speed; past 20 us the yields
 * keep a waiter on an oversubscribed machine from holding off the engine thread. */
static void wait_u64(const volatile uint64_t *word, uint64_t value, const char *what)
{
    double start = 0;
    for (unsigned spins = 1; __atomic_load_n(word, __ATOMIC_ACQUIRE) != value; spins++) {
        if (spins % 256 == 0) {
            double t = now_ns();
            if (start == 0)
                start = t;
            if (t - start > 10e9)
                die(what, -1);
            if (t - start > 20e3)
                sched_yield();
        }
    }
}

static const unsigned node = 1;

/* Runs `op` `iters` times per batch, BATCHES batches after one warm-up batch; prints the
 * median and the fastest batch's per-operation time. */
static void bench(const char *name, int base_iters, void (*op)(void))
{
    static double per_op[MAX_BATCHES];
    int iters = (int)(base_iters * scale + 0.5);
    if (iters < 1)
        iters = 1;
    for (int i = 0; i < iters; i++)
        op();
    for (int b = 0; b < batches; b++) {
        double t0 = now_ns();
        for (int i = 0; i < iters; i++)
            op();
        per_op[b] = (now_ns() - t0) / iters;
    }
    qsort(per_op, batches, sizeof per_op[0], cmp_double);
    printf("%s %.0f %dx%d %.0f\n", name, per_op[batches / 2], batches, iters, per_op[0]);
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
    wait_u64(fence, seq, "fence round trip (timeout)");
}

/* An AQL queue with a user-mode signal: the packet processor decrements the value when the
 * barrier retires (kind at 0, value at 8; no event mailbox, the CPU polls). */
static HsaQueueResource aq;
static uint32_t *aring;
static volatile int64_t *asignal;
static uint64_t awptr;

static void op_aql_barrier(void)
{
    uint32_t *pkt = aring + (awptr % 64) * 16;
    uint64_t s = (uint64_t)(uintptr_t)asignal;
    __atomic_store_n(&asignal[1], 1, __ATOMIC_RELEASE);
    memset(pkt + 1, 0, 15 * sizeof(uint32_t));
    pkt[14] = (uint32_t)s;
    pkt[15] = (uint32_t)(s >> 32);
    /* Header last: BARRIER_AND (3), barrier bit, system-scope acquire and release fences. */
    __atomic_store_n(&pkt[0], 3u | (1u << 8) | (2u << 9) | (2u << 11), __ATOMIC_RELEASE);
    awptr++;
    __atomic_store_n(aq.Queue_write_ptr_aql, awptr, __ATOMIC_RELEASE);
    __atomic_store_n(aq.Queue_DoorBell_aql, awptr, __ATOMIC_RELEASE);
    wait_u64((const volatile uint64_t *)&asignal[1], 0, "AQL barrier round trip (timeout)");
}

static int wanted(int argc, char **argv, int first, const char *name)
{
    if (first >= argc)
        return 1;
    for (int i = first; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

static const char *const op_names[] = {"pm4_queue_create_destroy", "alloc_map_unmap_free_64k",
                                       "event_set_wait", "submit_fence_round_trip",
                                       "aql_barrier_round_trip"};

int main(int argc, char **argv)
{
    int first = 1;
    while (first + 1 < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-b") == 0)
            batches = atoi(argv[first + 1]);
        else if (strcmp(argv[first], "-s") == 0)
            scale = atof(argv[first + 1]);
        else
            break;
        first += 2;
    }
    if (batches < 1 || batches > MAX_BATCHES || !(scale > 0 && scale <= 100)) {
        fprintf(stderr, "hsakmt_bench: -b takes 1..%d batches, -s a scale in (0, 100]\n", MAX_BATCHES);
        return 2;
    }
    for (int i = first; i < argc; i++) {
        int known = 0;
        for (size_t k = 0; k < sizeof op_names / sizeof op_names[0]; k++)
            known |= strcmp(argv[i], op_names[k]) == 0;
        if (!known) {
            fprintf(stderr, "hsakmt_bench: unknown operation '%s'\n", argv[i]);
            return 2;
        }
    }
    HsaSystemProperties sys;
    HsaNodeProperties np;
    OK(hsaKmtOpenKFD());
    OK(hsaKmtAcquireSystemProperties(&sys));
    OK(hsaKmtGetNodeProperties(node, &np));
    gfx10 = np.EngineId.ui32.Major >= 10;

    ring = alloc_mapped(4096, host_flags(1));
    pointers = alloc_mapped(4096, host_flags(0));
    if (wanted(argc, argv, first, "pm4_queue_create_destroy"))
        bench("pm4_queue_create_destroy", 50, op_queue);

    if (wanted(argc, argv, first, "alloc_map_unmap_free_64k"))
        bench("alloc_map_unmap_free_64k", 500, op_memory);

    HsaEventDescriptor d = {0};
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    d.NodeId = node;
    OK(hsaKmtCreateEvent(&d, false, false, &event));
    if (wanted(argc, argv, first, "event_set_wait"))
        bench("event_set_wait", 2000, op_event);

    fring = alloc_mapped(4096, host_flags(1));
    fence = alloc_mapped(4096, host_flags(0));
    memset(&fq, 0, sizeof fq);
    fq.QueueRptrValue = (HSAuint64)(uintptr_t)&pointers[0];
    fq.QueueWptrValue = (HSAuint64)(uintptr_t)&pointers[8];
    OK(hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL, fring, 4096, NULL, &fq));
    if (wanted(argc, argv, first, "submit_fence_round_trip"))
        bench("submit_fence_round_trip", 10000, op_fence);
    OK(hsaKmtDestroyQueue(fq.QueueId));

    if (wanted(argc, argv, first, "aql_barrier_round_trip")) {
        aring = alloc_mapped(4096, host_flags(1));
        asignal = alloc_mapped(4096, host_flags(0));
        asignal[0] = 1; /* AMD_SIGNAL_KIND_USER */
        memset(&aq, 0, sizeof aq);
        aq.QueueRptrValue = (HSAuint64)(uintptr_t)&pointers[16];
        aq.QueueWptrValue = (HSAuint64)(uintptr_t)&pointers[24];
        /* Invalid headers (type 1) in every slot until a packet is written. */
        for (int i = 0; i < 64; i++)
            aring[i * 16] = 1;
        OK(hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, aring, 4096, NULL,
                             &aq));
        bench("aql_barrier_round_trip", 10000, op_aql_barrier);
        OK(hsaKmtDestroyQueue(aq.QueueId));
    }

    hsaKmtDestroyEvent(event);
    hsaKmtCloseKFD();
    return 0;
}
