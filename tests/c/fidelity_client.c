/*
 * Model fidelity at scale (issue #20): what a real GPU with amdkfd does in seconds or less,
 * checked on the kfd model through the LD_PRELOAD shim with Debian's unmodified libhsakmt
 * and libdrm_amdgpu.
 *
 * Build: gcc -O2 -Wall -Wextra -I/usr/include/libdrm -o fidelity_client fidelity_client.c \
 *            -lhsakmt -ldrm_amdgpu -ldrm
 * Run:   KFD_MODEL_PRESET=gfx900 LD_PRELOAD=.../libkfd_preload.so ./fidelity_client CASE
 *
 * Cases (one per run, so each is timed on its own):
 *   oversubscribe  65 PM4 queues (more than the HQDs), 100 WRITE_DATA each, all doorbells
 *                  rung: every packet of every queue lands within 5 s (HWS time slicing).
 *   register_huge  a 128 MiB anonymous mapping registered and GPU-mapped as 16,384 pieces of
 *                  64 MiB at page offsets (1 TiB in all) without the process's resident memory
 *                  growing by more than 64 MiB (the driver keeps no per-page state of a
 *                  registration); a WRITE_DATA through the last piece's GPU VA reaches the
 *                  CPU's page. The calling thread's CPU time is printed as a measurement
 *                  (a real driver takes well under a second), never asserted. 1 TiB of user pages is more than the kernel's system-memory
 *                  limit lets KFD register unless amdgpu.no_system_mem_limit=1: run it with
 *                  KFD_MODEL_NO_SYSTEM_MEM_LIMIT=1.
 *   big_alloc      a quarter of the system memory the topology reports (which must not exceed
 *                  the host's MemTotal) allocated as GTT five times; each reads as zeros.
 *   zero_init      kfdtest's CheckZeroInitializationSysMem as a benchmark: five rounds of a
 *                  system-memory buffer (hsaKmtAllocMemory on node 0, which libhsakmt makes
 *                  a USERPTR registration of fresh anonymous memory), GPU-mapped, read at two
 *                  dwords of every page (all zero), filled with 0xFF by the CPU, freed. Prints
 *                  each round's time and the process's minor page faults (getrusage): the
 *                  driver populates a USERPTR range when it is registered (hmm_range_fault),
 *                  so the reads and the fill fault nothing more. ZERO_INIT_MIB sets the size
 *                  (default 512).
 *   many_buffers   50,000 live 4 KiB VRAM buffers (kfdtest's KFDLocalMemoryTest.Fragmentation
 *                  keeps as many): each allocated CPU-visible and written through its CPU
 *                  mapping, all read back intact, a PM4 WRITE_DATA into the last one seen by
 *                  the CPU; the process's descriptors stay few (the driver's buffers are
 *                  kernel objects, not descriptors of the client) and /proc/self/maps still
 *                  opens; then all freed.
 *   amdgpu_bo      a GTT buffer from amdgpu_bo_alloc, CPU-mapped with amdgpu_bo_cpu_map,
 *                  VA-mapped with amdgpu_bo_va_op, exported as a dma-buf, registered with
 *                  hsaKmtRegisterGraphicsHandleToNodes and mapped with hsaKmtMapMemoryToGPU: a
 *                  PM4 WRITE_DATA into it shows in the amdgpu CPU map.
 *   amdgpu_ctx_metadata  submission contexts through amdgpu_cs_ctx_create/_free and the reset
 *                  queries (ids from 1, no reset; EINVAL for a freed id or an unknown op);
 *                  26 bytes of metadata and a tiling word set with amdgpu_bo_set_metadata on
 *                  a VRAM buffer object, read back by amdgpu_bo_query_info (with its size,
 *                  alignment, heap and flags) and by hsaKmtRegisterGraphicsHandleToNodes
 *                  (KFD's GET_DMABUF_INFO), as kfdtest's RegisterGraphicsHandle expects;
 *                  ENOENT for no handle, EINVAL for 257 bytes.
 *   amdgpu_cs      kfdtest's KFDEvictTest submission path through libdrm_amdgpu: a context,
 *                  a BO list, SDMA IBs (a WRITE_LINEAR padded with NOPs to 16 dwords)
 *                  submitted with amdgpu_cs_submit and waited for with
 *                  amdgpu_cs_query_fence_status: sequence numbers 1, 2, 3, each fence
 *                  signalled, each WRITE in the target buffer; a compute IB the GPU would
 *                  hang on signals its fence and makes the context guilty (reset_state2
 *                  RESET|GUILTY, then ECANCELED); EINVAL for a fence not handed out or an
 *                  unknown context, ENOENT for a BO list naming no buffer.
 *   amdgpu_evict   KFDEvictTest.BasicTest in small: KFD VRAM buffers leave less VRAM free than
 *                  a 64 MiB graphics buffer; an SDMA IB whose BO list names it evicts the KFD
 *                  buffers and queues; a KFD queue WRITE_DATA submitted then lands after the
 *                  restore, the KFD buffers keep their bytes and hold their VRAM again.
 *
 * Prints "PASS case (N ms)" or "FAIL case: why (N ms)"; exit 0 only on PASS.
 */
#define _GNU_SOURCE
#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <errno.h>
#include <fcntl.h>
#include <hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>
#include <xf86drm.h>

static char why[512];
static unsigned gpu_node = 1; /* the first GPU node */

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            snprintf(why, sizeof why, __VA_ARGS__);                                        \
            return 0;                                                                      \
        }                                                                                  \
    } while (0)

#define CHECK_OK(call)                                                                     \
    do {                                                                                   \
        HSAKMT_STATUS s_ = (call);                                                         \
        CHECK(s_ == HSAKMT_STATUS_SUCCESS, "%s = %d (line %d)", #call, (int)s_, __LINE__); \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Resident set of this process in KiB (VmRSS), or -1. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* CPU time of the calling thread: the model runs each ioctl in the caller's thread, so this is
 * what registering costs, whatever else the (shared) machine is doing. */
static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static HsaMemFlags system_flags(int exec)
{
    HsaMemFlags f = {0};
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.HostAccess = 1;
    f.ui32.NoNUMABind = 1;
    f.ui32.ExecuteAccess = exec;
    return f;
}

static void *alloc_mapped(HSAuint64 size, int exec)
{
    void *p = NULL;
    HSAuint64 gpu_va = 0;
    if (hsaKmtAllocMemory(gpu_node, size, system_flags(exec), &p) != HSAKMT_STATUS_SUCCESS)
        return NULL;
    if (hsaKmtMapMemoryToGPU(p, size, &gpu_va) != HSAKMT_STATUS_SUCCESS) {
        hsaKmtFreeMemory(p, size);
        return NULL;
    }
    return p;
}

static void free_mapped(void *p, HSAuint64 size)
{
    if (!p)
        return;
    hsaKmtUnmapMemoryToGPU(p);
    hsaKmtFreeMemory(p, size);
}

/* ---------------------------------------------------------------------------------------- */
/* PM4 queues (facts: type-3 header, WRITE_DATA 0x37 with dst_sel 5 = memory, wr_confirm). */

#define PM4_HDR(op, count) ((3u << 30) | (((count)&0x3fffu) << 16) | ((op) << 8))
#define PM4_WRITE_DATA 0x37

struct queue {
    HsaQueueResource res;
    uint32_t *ring;
    HSAuint64 ring_size;
    volatile uint64_t *pointers;
    uint64_t wptr; /* dwords, monotonic */
};

static int queue_create(struct queue *q, HSAuint64 ring_size)
{
    memset(q, 0, sizeof *q);
    q->ring_size = ring_size;
    q->ring = alloc_mapped(ring_size, 1);
    q->pointers = alloc_mapped(4096, 0);
    CHECK(q->ring && q->pointers, "ring or pointer allocation failed");
    memset(q->ring, 0, ring_size);
    q->res.QueueRptrValue = (HSAuint64)(uintptr_t)&q->pointers[0];
    q->res.QueueWptrValue = (HSAuint64)(uintptr_t)&q->pointers[8];
    CHECK_OK(hsaKmtCreateQueue(gpu_node, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL, q->ring,
                               ring_size, NULL, &q->res));
    CHECK(q->res.Queue_read_ptr_aql && q->res.Queue_write_ptr_aql && q->res.Queue_DoorBell_aql,
          "queue resource without rptr/wptr/doorbell");
    return 1;
}

static void queue_destroy(struct queue *q)
{
    if (q->res.QueueId)
        hsaKmtDestroyQueue(q->res.QueueId);
    free_mapped(q->ring, q->ring_size);
    free_mapped((void *)q->pointers, 4096);
}

/* WRITE_DATA of one dword `value` to `addr` (5 dwords). */
static void put_write_data(struct queue *q, uint64_t addr, uint32_t value)
{
    uint32_t dw[5] = {PM4_HDR(PM4_WRITE_DATA, 3), (5u << 8) | (1u << 20), (uint32_t)addr,
                      (uint32_t)(addr >> 32), value};
    uint64_t ring_dw = q->ring_size / 4;
    for (unsigned i = 0; i < 5; i++)
        q->ring[(q->wptr + i) % ring_dw] = dw[i];
    q->wptr += 5;
}

static void queue_submit(struct queue *q)
{
    __atomic_store_n(q->res.Queue_write_ptr_aql, q->wptr, __ATOMIC_RELEASE);
    __atomic_store_n(q->res.Queue_DoorBell_aql, q->wptr, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------------------------------- */

#define OVERSUB_QUEUES 65
#define OVERSUB_PACKETS 100

static int t_oversubscribe(void)
{
    static struct queue qs[OVERSUB_QUEUES];
    const HSAuint64 out_size = OVERSUB_QUEUES * OVERSUB_PACKETS * 4;
    volatile uint32_t *out = alloc_mapped((out_size + 4095) & ~4095ull, 0);
    int ok = 1;
    CHECK(out, "result buffer allocation failed");
    memset((void *)out, 0, out_size);
    int made = 0;
    for (; made < OVERSUB_QUEUES; made++)
        if (!queue_create(&qs[made], 4096)) {
            ok = 0;
            break;
        }
    if (ok) {
        for (int q = 0; q < OVERSUB_QUEUES; q++) {
            for (int i = 0; i < OVERSUB_PACKETS; i++) {
                volatile uint32_t *slot = &out[q * OVERSUB_PACKETS + i];
                put_write_data(&qs[q], (uint64_t)(uintptr_t)slot, ((uint32_t)q << 16) | (uint32_t)(i + 1));
            }
        }
        for (int q = 0; q < OVERSUB_QUEUES; q++)
            queue_submit(&qs[q]);
        double end = now_ms() + 5000;
        int done = 0;
        while (now_ms() < end) {
            done = 0;
            for (int q = 0; q < OVERSUB_QUEUES; q++)
                if (out[q * OVERSUB_PACKETS + OVERSUB_PACKETS - 1] ==
                    (((uint32_t)q << 16) | OVERSUB_PACKETS))
                    done++;
            if (done == OVERSUB_QUEUES)
                break;
            usleep(1000);
        }
        int bad = -1;
        for (int k = 0; k < OVERSUB_QUEUES * OVERSUB_PACKETS && bad < 0; k++)
            if (out[k] != (((uint32_t)(k / OVERSUB_PACKETS) << 16) | (uint32_t)(k % OVERSUB_PACKETS + 1)))
                bad = k;
        if (bad >= 0) {
            snprintf(why, sizeof why,
                     "after 5 s %d of %d queues finished; packet %d of queue %d wrote %#x",
                     done, OVERSUB_QUEUES, bad % OVERSUB_PACKETS, bad / OVERSUB_PACKETS, out[bad]);
            ok = 0;
        }
        /* Every queue consumed its ring: the read pointer reached the write pointer. */
        for (int q = 0; q < OVERSUB_QUEUES && ok; q++)
            if (*qs[q].res.Queue_read_ptr_aql % (qs[q].ring_size / 4) != qs[q].wptr % (qs[q].ring_size / 4)) {
                snprintf(why, sizeof why, "queue %d read pointer %llu, write pointer %llu", q,
                         (unsigned long long)*qs[q].res.Queue_read_ptr_aql,
                         (unsigned long long)qs[q].wptr);
                ok = 0;
            }
    }
    for (int q = 0; q < made; q++)
        queue_destroy(&qs[q]);
    free_mapped((void *)out, (out_size + 4095) & ~4095ull);
    return ok;
}

/* ---------------------------------------------------------------------------------------- */

#define HUGE_PIECES 16384
#define HUGE_PIECE (64ull << 20)

static int t_register_huge(void)
{
    const size_t page = 4096;
    const size_t span = HUGE_PIECE + (HUGE_PIECES - 1) * page; /* 128 MiB - 4 KiB */
    char *base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(base != MAP_FAILED, "mmap of %zu bytes: %s", span, strerror(errno));
    static HSAuint64 gpu_va[HUGE_PIECES];
    /* Touched first, the span's pages are the host's cost, not the registrations'. */
    memset(base, 0, span);
    int registered = 0, mapped = 0, ok = 1;
    long rss0 = rss_kib();
    double t0 = now_ms(), c0 = thread_cpu_ms(), half_cpu = 0;
    for (; registered < HUGE_PIECES; registered++) {
        void *piece = base + (size_t)registered * page;
        if (registered == HUGE_PIECES / 2)
            half_cpu = thread_cpu_ms() - c0;
        HSAKMT_STATUS s = hsaKmtRegisterMemory(piece, HUGE_PIECE);
        if (s != HSAKMT_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "hsaKmtRegisterMemory(piece %d) = %d", registered, s);
            ok = 0;
            break;
        }
        s = hsaKmtMapMemoryToGPU(piece, HUGE_PIECE, &gpu_va[registered]);
        if (s != HSAKMT_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "hsaKmtMapMemoryToGPU(piece %d) = %d", registered, s);
            registered++;
            ok = 0;
            break;
        }
        mapped++;
    }
    double took = now_ms() - t0, cpu = thread_cpu_ms() - c0;
    printf("    registered and mapped %d x 64 MiB (%.1f GiB) in %.0f ms (%.0f ms of CPU: %.0f for the "
           "first half, %.0f for the second)\n",
           mapped, mapped * (double)HUGE_PIECE / (1ull << 30), took, cpu, half_cpu, cpu - half_cpu);
    long rss1 = rss_kib(), grew_kib = rss1 - rss0;
    printf("    resident memory grew by %ld KiB while registering\n", grew_kib);
    if (ok && (rss0 < 0 || rss1 < 0)) {
        snprintf(why, sizeof why, "VmRSS not found in /proc/self/status");
        ok = 0;
    }
    if (ok && grew_kib > 64 * 1024) {
        snprintf(why, sizeof why,
                 "registering 1 TiB over a 128 MiB span grew the resident memory by %ld KiB "
                 "(want <= 65536): per-page state of a registration?",
                 grew_kib);
        ok = 0;
    }
    if (ok) {
        /* The GPU reaches the memory through the last piece: its last page is the mapping's. */
        struct queue q;
        if (queue_create(&q, 4096)) {
            int last = HUGE_PIECES - 1;
            uint64_t va = gpu_va[last] + HUGE_PIECE - page;
            volatile uint32_t *cpu = (volatile uint32_t *)(base + (size_t)last * page + HUGE_PIECE - page);
            *cpu = 0;
            put_write_data(&q, va, 0x1f1de717);
            queue_submit(&q);
            double end = now_ms() + 5000;
            while (*cpu != 0x1f1de717 && now_ms() < end)
                usleep(100);
            if (*cpu != 0x1f1de717) {
                snprintf(why, sizeof why, "WRITE_DATA to GPU VA %#llx did not reach the CPU page (%#x)",
                         (unsigned long long)va, *cpu);
                ok = 0;
            }
        } else {
            ok = 0;
        }
        queue_destroy(&q);
    }
    t0 = now_ms();
    for (int i = 0; i < registered; i++) {
        void *piece = base + (size_t)i * page;
        if (i < mapped)
            hsaKmtUnmapMemoryToGPU(piece);
        hsaKmtDeregisterMemory(piece);
    }
    printf("    unmapped and deregistered in %.0f ms\n", now_ms() - t0);
    munmap(base, span);
    return ok;
}

/* ---------------------------------------------------------------------------------------- */

static unsigned long long host_mem_total(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kib = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib * 1024;
}

static int t_big_alloc(void)
{
    HsaNodeProperties props;
    CHECK_OK(hsaKmtGetNodeProperties(0, &props));
    CHECK(props.NumMemoryBanks >= 1, "CPU node without memory banks");
    HsaMemoryProperties mem[8];
    unsigned banks = props.NumMemoryBanks < 8 ? props.NumMemoryBanks : 8;
    CHECK_OK(hsaKmtGetNodeMemoryProperties(0, banks, mem));
    unsigned long long system = 0;
    for (unsigned b = 0; b < banks; b++)
        system += mem[b].SizeInBytes;
    unsigned long long host = host_mem_total();
    CHECK(system > 0 && host > 0 && system <= host,
          "the topology reports %llu bytes of system memory, the host has %llu", system, host);
    const HSAuint64 size = (system / 4) & ~((HSAuint64)(2 << 20) - 1);
    const size_t stride = 64 << 10; /* one dword per 64 KiB, plus the whole first and last MiB */
    for (int round = 0; round < 5; round++) {
        double t0 = now_ms();
        volatile uint32_t *p = alloc_mapped(size, 0);
        CHECK(p, "round %d: allocating %llu bytes of GTT failed", round, (unsigned long long)size);
        size_t dwords = size / 4;
        for (size_t i = 0; i < (1 << 20) / 4; i++)
            CHECK(p[i] == 0 && p[dwords - 1 - i] == 0, "round %d: dword %zu is not zero", round, i);
        for (size_t off = 0; off < size; off += stride)
            CHECK(p[off / 4] == 0, "round %d: byte %zu is not zero", round, off);
        /* Dirty what was read so that a recycled page would show in the next round. */
        for (size_t off = 0; off < size; off += stride)
            p[off / 4] = 0xdeadbeef;
        p[dwords - 1] = 0xdeadbeef;
        free_mapped((void *)p, size);
        printf("    round %d: %llu MiB allocated, read as zeros, freed in %.0f ms\n", round,
               (unsigned long long)(size >> 20), now_ms() - t0);
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static int t_zero_init(void)
{
    const char *env = getenv("ZERO_INIT_MIB");
    HSAuint64 mib = env ? strtoull(env, NULL, 0) : 512;
    CHECK(mib > 0, "ZERO_INIT_MIB=%s is no size", env);
    const HSAuint64 size = mib << 20;
    const size_t per_page = 4096 / sizeof(uint64_t), offset = 257;
    double total_ms = 0;
    long total_faults = 0;
    for (int round = 0; round < 5; round++) {
        long f0 = minor_faults();
        double t0 = now_ms();
        HsaMemFlags flags = system_flags(0);
        volatile uint64_t *p = NULL;
        CHECK_OK(hsaKmtAllocMemory(0, size, flags, (void **)&p));
        CHECK_OK(hsaKmtMapMemoryToGPU((void *)p, size, NULL));
        for (size_t i = 0; i < size / sizeof *p; i += per_page)
            CHECK(p[i] == 0 && p[i + offset] == 0, "round %d: page %zu is not zero", round,
                  i / per_page);
        memset((void *)p, 0xff, size);
        CHECK_OK(hsaKmtUnmapMemoryToGPU((void *)p));
        CHECK_OK(hsaKmtFreeMemory((void *)p, size));
        double ms = now_ms() - t0;
        long faults = minor_faults() - f0;
        total_ms += ms;
        total_faults += faults;
        printf("    round %d: %llu MiB: %.0f ms, %ld minor faults (%.2f per page)\n", round,
               (unsigned long long)mib, ms, faults, (double)faults / (size / 4096));
    }
    printf("    5 rounds: %.0f ms, %ld minor faults\n", total_ms, total_faults);
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

#define MANY_BUFFERS 50000

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 2; /* . and .. */
}

static int t_many_buffers(void)
{
    static uint32_t *bufs[MANY_BUFFERS];
    HsaMemFlags flags = {0};
    flags.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    flags.ui32.HostAccess = 1;
    flags.ui32.NonPaged = 1;
    int fds_before = open_fds(), ok = 1, n = 0;
    double t0 = now_ms();
    for (; n < MANY_BUFFERS; n++) {
        HSAKMT_STATUS s = hsaKmtAllocMemory(gpu_node, 4096, flags, (void **)&bufs[n]);
        if (s != HSAKMT_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "hsaKmtAllocMemory(VRAM) #%d = %d (%d descriptors open)", n, s,
                     open_fds());
            ok = 0;
            break;
        }
        bufs[n][0] = 0x5eed0000u + (uint32_t)n;
        bufs[n][1023] = ~(uint32_t)n;
    }
    printf("    %d buffers allocated and written in %.0f ms; %d descriptors open (%d before)\n", n,
           now_ms() - t0, open_fds(), fds_before);
    if (ok && open_fds() > fds_before + 64) {
        snprintf(why, sizeof why, "%d live buffers hold %d descriptors", n, open_fds() - fds_before);
        ok = 0;
    }
    FILE *maps = fopen("/proc/self/maps", "r");
    if (ok && !maps) {
        snprintf(why, sizeof why, "/proc/self/maps does not open: %s", strerror(errno));
        ok = 0;
    }
    if (maps)
        fclose(maps);
    for (int i = 0; ok && i < n; i++)
        if (bufs[i][0] != 0x5eed0000u + (uint32_t)i || bufs[i][1023] != ~(uint32_t)i) {
            snprintf(why, sizeof why, "buffer %d reads %#x/%#x: another buffer's memory?", i,
                     bufs[i][0], bufs[i][1023]);
            ok = 0;
        }
    if (ok) {
        /* The GPU reaches the last one. */
        uint32_t *last = bufs[n - 1];
        HSAuint64 alternate_va = 0;
        struct queue q;
        if (hsaKmtMapMemoryToGPU(last, 4096, &alternate_va) != HSAKMT_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "hsaKmtMapMemoryToGPU of the last buffer failed");
            ok = 0;
        } else if (queue_create(&q, 4096)) {
            /* GPU VA = CPU VA on a dGPU (the alternate VA is for APUs). */
            put_write_data(&q, (uint64_t)(uintptr_t)last + 8, 0xfeedf00d);
            queue_submit(&q);
            double end = now_ms() + 5000;
            while (((volatile uint32_t *)last)[2] != 0xfeedf00d && now_ms() < end)
                usleep(100);
            if (((volatile uint32_t *)last)[2] != 0xfeedf00d) {
                snprintf(why, sizeof why, "WRITE_DATA into the last buffer did not reach the CPU");
                ok = 0;
            }
            queue_destroy(&q);
            hsaKmtUnmapMemoryToGPU(last);
        } else {
            ok = 0;
        }
    }
    t0 = now_ms();
    for (int i = 0; i < n; i++)
        if (hsaKmtFreeMemory(bufs[i], 4096) != HSAKMT_STATUS_SUCCESS && ok) {
            snprintf(why, sizeof why, "hsaKmtFreeMemory #%d failed", i);
            ok = 0;
        }
    printf("    freed in %.0f ms; %d descriptors open\n", now_ms() - t0, open_fds());
    return ok;
}

/* ---------------------------------------------------------------------------------------- */

static int t_amdgpu_bo(void)
{
    HsaNodeProperties props;
    CHECK_OK(hsaKmtGetNodeProperties(gpu_node, &props));
    char path[64];
    snprintf(path, sizeof path, "/dev/dri/renderD%u", props.DrmRenderMinor);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    uint32_t major = 0, minor = 0;
    amdgpu_device_handle dev = NULL;
    int r = amdgpu_device_initialize(fd, &major, &minor, &dev);
    CHECK(r == 0, "amdgpu_device_initialize = %d", r);

    const uint64_t size = 64 << 10;
    struct amdgpu_bo_alloc_request req = {
        .alloc_size = size,
        .phys_alignment = 4096,
        .preferred_heap = AMDGPU_GEM_DOMAIN_GTT,
        .flags = AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED,
    };
    amdgpu_bo_handle bo = NULL;
    r = amdgpu_bo_alloc(dev, &req, &bo);
    CHECK(r == 0, "amdgpu_bo_alloc = %d", r);
    void *cpu = NULL;
    r = amdgpu_bo_cpu_map(bo, &cpu);
    CHECK(r == 0 && cpu, "amdgpu_bo_cpu_map = %d", r);
    volatile uint32_t *words = cpu;
    for (size_t i = 0; i < size / 4; i++)
        CHECK(words[i] == 0, "a new buffer object reads %#x at dword %zu", words[i], i);
    words[1] = 0x600df00d; /* the CPU map writes the buffer too */

    /* A GPU VA in the render node's own VM (libdrm's VA manager, then GEM_VA). */
    uint64_t gfx_va = 0;
    amdgpu_va_handle va_handle = NULL;
    r = amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, size, 4096, 0, &gfx_va, &va_handle, 0);
    CHECK(r == 0, "amdgpu_va_range_alloc = %d", r);
    r = amdgpu_bo_va_op(bo, 0, size, gfx_va, 0, AMDGPU_VA_OP_MAP);
    CHECK(r == 0, "amdgpu_bo_va_op(MAP, %#llx) = %d", (unsigned long long)gfx_va, r);

    uint32_t dmabuf = 0;
    r = amdgpu_bo_export(bo, amdgpu_bo_handle_type_dma_buf_fd, &dmabuf);
    CHECK(r == 0, "amdgpu_bo_export(dma-buf) = %d", r);
    /* The dma-buf maps the same memory. */
    volatile uint32_t *via_dmabuf = mmap(NULL, size, PROT_READ, MAP_SHARED, (int)dmabuf, 0);
    CHECK(via_dmabuf != MAP_FAILED && via_dmabuf[1] == 0x600df00d, "the dma-buf does not show the buffer");
    munmap((void *)via_dmabuf, size);

    HsaGraphicsResourceInfo info;
    memset(&info, 0, sizeof info);
    HSAuint32 nodes[1] = {gpu_node};
    CHECK_OK(hsaKmtRegisterGraphicsHandleToNodes(dmabuf, &info, 1, nodes));
    CHECK(info.MemoryAddress && info.SizeInBytes == size, "registered at %p, %llu bytes",
          info.MemoryAddress, (unsigned long long)info.SizeInBytes);
    HSAuint64 kfd_va = 0;
    CHECK_OK(hsaKmtMapMemoryToGPU(info.MemoryAddress, info.SizeInBytes, &kfd_va));

    struct queue q;
    int ok = queue_create(&q, 4096);
    if (ok) {
        uint64_t target = (uint64_t)(uintptr_t)info.MemoryAddress + 8 * 4;
        put_write_data(&q, target, 0xab0c0de5);
        queue_submit(&q);
        double end = now_ms() + 5000;
        while (words[8] != 0xab0c0de5 && now_ms() < end)
            usleep(100);
        if (words[8] != 0xab0c0de5 || words[1] != 0x600df00d) {
            snprintf(why, sizeof why, "the amdgpu CPU map reads %#x at dword 8 (want 0xab0c0de5), %#x at dword 1",
                     words[8], words[1]);
            ok = 0;
        }
    }
    queue_destroy(&q);
    CHECK_OK(hsaKmtUnmapMemoryToGPU(info.MemoryAddress));
    CHECK_OK(hsaKmtDeregisterMemory(info.MemoryAddress));
    close((int)dmabuf);
    r = amdgpu_bo_va_op(bo, 0, size, gfx_va, 0, AMDGPU_VA_OP_UNMAP);
    CHECK(r == 0, "amdgpu_bo_va_op(UNMAP) = %d", r);
    amdgpu_va_range_free(va_handle);
    amdgpu_bo_cpu_unmap(bo);
    r = amdgpu_bo_free(bo);
    CHECK(r == 0, "amdgpu_bo_free = %d", r);
    amdgpu_device_deinitialize(dev);
    close(fd);
    return ok;
}

/* ---------------------------------------------------------------------------------------- */

/* kfdtest's KFDGraphicsInterop.RegisterGraphicsHandle metadata: 26 bytes with the NUL. */
static const char umd_metadata[] = "This data is really meta.";

static int t_amdgpu_ctx_metadata(void)
{
    HsaNodeProperties props;
    CHECK_OK(hsaKmtGetNodeProperties(gpu_node, &props));
    char path[64];
    snprintf(path, sizeof path, "/dev/dri/renderD%u", props.DrmRenderMinor);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    uint32_t major = 0, minor = 0;
    amdgpu_device_handle dev = NULL;
    int r = amdgpu_device_initialize(fd, &major, &minor, &dev);
    CHECK(r == 0, "amdgpu_device_initialize = %d", r);
    int dev_fd = amdgpu_device_get_fd(dev);

    /* Submission contexts (what KFDEvictTest creates first). */
    amdgpu_context_handle ctx[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        r = amdgpu_cs_ctx_create(dev, &ctx[i]);
        CHECK(r == 0, "amdgpu_cs_ctx_create #%d = %d", i, r);
    }
    uint32_t state = 99, hangs = 99;
    r = amdgpu_cs_query_reset_state(ctx[1], &state, &hangs);
    CHECK(r == 0 && state == AMDGPU_CTX_NO_RESET && hangs == 0,
          "amdgpu_cs_query_reset_state = %d (state %u, hangs %u)", r, state, hangs);
    uint64_t flags2 = 99;
    r = amdgpu_cs_query_reset_state2(ctx[0], &flags2);
    CHECK(r == 0 && flags2 == 0, "amdgpu_cs_query_reset_state2 = %d (flags %#llx)", r,
          (unsigned long long)flags2);
    union drm_amdgpu_ctx raw;
    memset(&raw, 0, sizeof raw);
    raw.in.op = AMDGPU_CTX_OP_ALLOC_CTX;
    raw.in.priority = AMDGPU_CTX_PRIORITY_LOW;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_CTX, &raw, sizeof raw);
    uint32_t third = raw.out.alloc.ctx_id;
    CHECK(r == 0 && third == 3, "CTX ALLOC (low priority) = %d, id %u (want 3: ids count from 1)", r, third);
    memset(&raw, 0, sizeof raw);
    raw.in.op = AMDGPU_CTX_OP_FREE_CTX;
    raw.in.ctx_id = third;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_CTX, &raw, sizeof raw);
    CHECK(r == 0, "CTX FREE %u = %d", third, r);
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_CTX, &raw, sizeof raw);
    CHECK(r == -EINVAL, "CTX FREE of a freed context = %d (want -EINVAL)", r);
    raw.in.op = 77;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_CTX, &raw, sizeof raw);
    CHECK(r == -EINVAL, "CTX op 77 = %d (want -EINVAL)", r);
    for (int i = 0; i < 2; i++) {
        r = amdgpu_cs_ctx_free(ctx[i]);
        CHECK(r == 0, "amdgpu_cs_ctx_free #%d = %d", i, r);
    }

    /* Metadata set on a VRAM buffer object, read back by libdrm and by KFD's importer. */
    const uint64_t size = 64 << 10;
    struct amdgpu_bo_alloc_request req = {
        .alloc_size = size,
        .phys_alignment = 4096,
        .preferred_heap = AMDGPU_GEM_DOMAIN_VRAM,
        .flags = AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED,
    };
    amdgpu_bo_handle bo = NULL;
    r = amdgpu_bo_alloc(dev, &req, &bo);
    CHECK(r == 0, "amdgpu_bo_alloc = %d", r);
    struct amdgpu_bo_metadata meta;
    memset(&meta, 0, sizeof meta);
    meta.tiling_info = 0x1234;
    meta.size_metadata = sizeof umd_metadata;
    memcpy(meta.umd_metadata, umd_metadata, sizeof umd_metadata);
    r = amdgpu_bo_set_metadata(bo, &meta);
    CHECK(r == 0, "amdgpu_bo_set_metadata = %d", r);
    struct amdgpu_bo_info bo_info;
    memset(&bo_info, 0, sizeof bo_info);
    r = amdgpu_bo_query_info(bo, &bo_info);
    CHECK(r == 0, "amdgpu_bo_query_info = %d", r);
    CHECK(bo_info.alloc_size == size && bo_info.phys_alignment == 4096 &&
              bo_info.preferred_heap == AMDGPU_GEM_DOMAIN_VRAM &&
              bo_info.alloc_flags == AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED,
          "amdgpu_bo_query_info: size %llu, alignment %llu, heap %#x, flags %#llx",
          (unsigned long long)bo_info.alloc_size, (unsigned long long)bo_info.phys_alignment,
          bo_info.preferred_heap, (unsigned long long)bo_info.alloc_flags);
    CHECK(bo_info.metadata.size_metadata == sizeof umd_metadata &&
              bo_info.metadata.tiling_info == 0x1234 &&
              memcmp(bo_info.metadata.umd_metadata, umd_metadata, sizeof umd_metadata) == 0,
          "amdgpu_bo_query_info: %u bytes of metadata, tiling %#llx",
          bo_info.metadata.size_metadata, (unsigned long long)bo_info.metadata.tiling_info);
    printf("    contexts 1, 2, 3 created and freed; %u bytes of metadata read back by libdrm\n",
           bo_info.metadata.size_metadata);

    /* The kernel's errnos: more than 256 bytes, no such handle. */
    struct drm_amdgpu_gem_metadata raw_meta;
    memset(&raw_meta, 0, sizeof raw_meta);
    raw_meta.handle = 0x7fff;
    raw_meta.op = AMDGPU_GEM_METADATA_OP_GET_METADATA;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_GEM_METADATA, &raw_meta, sizeof raw_meta);
    CHECK(r == -ENOENT, "GEM_METADATA of no handle = %d (want -ENOENT)", r);
    uint32_t kms = 0;
    r = amdgpu_bo_export(bo, amdgpu_bo_handle_type_kms, &kms);
    CHECK(r == 0, "amdgpu_bo_export(kms) = %d", r);
    raw_meta.handle = kms;
    raw_meta.op = AMDGPU_GEM_METADATA_OP_SET_METADATA;
    raw_meta.data.data_size_bytes = sizeof raw_meta.data.data + 1;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_GEM_METADATA, &raw_meta, sizeof raw_meta);
    CHECK(r == -EINVAL, "GEM_METADATA set of 257 bytes = %d (want -EINVAL)", r);

    /* GEM_OP(SET_PLACEMENT) moves the preferred domain to GTT (bits outside VRAM|GTT|CPU,
     * here GDS 0x8, are dropped); libdrm's query reads it back; then back to VRAM. */
    struct drm_amdgpu_gem_op op;
    memset(&op, 0, sizeof op);
    op.handle = kms;
    op.op = AMDGPU_GEM_OP_SET_PLACEMENT;
    op.value = AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_GDS;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_GEM_OP, &op, sizeof op);
    CHECK(r == 0, "GEM_OP SET_PLACEMENT(GTT) = %d", r);
    memset(&bo_info, 0, sizeof bo_info);
    r = amdgpu_bo_query_info(bo, &bo_info);
    CHECK(r == 0 && bo_info.preferred_heap == AMDGPU_GEM_DOMAIN_GTT,
          "after SET_PLACEMENT(GTT): query %d, heap %#x", r, bo_info.preferred_heap);
    op.value = AMDGPU_GEM_DOMAIN_VRAM;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_GEM_OP, &op, sizeof op);
    CHECK(r == 0, "GEM_OP SET_PLACEMENT(VRAM) = %d", r);
    op.handle = 0x7fff;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_GEM_OP, &op, sizeof op);
    CHECK(r == -ENOENT, "GEM_OP SET_PLACEMENT of no handle = %d (want -ENOENT)", r);
    printf("    SET_PLACEMENT: preferred heap GTT read back, then VRAM again\n");

    uint32_t dmabuf = 0;
    r = amdgpu_bo_export(bo, amdgpu_bo_handle_type_dma_buf_fd, &dmabuf);
    CHECK(r == 0, "amdgpu_bo_export(dma-buf) = %d", r);
    HsaGraphicsResourceInfo info;
    memset(&info, 0, sizeof info);
    HSAuint32 nodes[1] = {gpu_node};
    CHECK_OK(hsaKmtRegisterGraphicsHandleToNodes(dmabuf, &info, 1, nodes));
    printf("    registered through KFD: %llu bytes, %u bytes of metadata \"%s\"\n",
           (unsigned long long)info.SizeInBytes, info.MetadataSizeInBytes,
           info.Metadata ? (const char *)info.Metadata : "(none)");
    CHECK(info.SizeInBytes == size, "registered %llu bytes (want %llu)",
          (unsigned long long)info.SizeInBytes, (unsigned long long)size);
    CHECK(info.MetadataSizeInBytes == sizeof umd_metadata && info.Metadata &&
              strcmp(info.Metadata, umd_metadata) == 0,
          "KFD's GET_DMABUF_INFO gave %u bytes of metadata (want %zu)", info.MetadataSizeInBytes,
          sizeof umd_metadata);
    CHECK_OK(hsaKmtDeregisterMemory(info.MemoryAddress));
    close((int)dmabuf);
    r = amdgpu_bo_free(bo);
    CHECK(r == 0, "amdgpu_bo_free = %d", r);
    amdgpu_device_deinitialize(dev);
    close(fd);
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

/* GTT buffer object mapped for the CPU and in the render node's own VM (libdrm's VA manager). */
struct gfx_bo {
    amdgpu_bo_handle bo;
    amdgpu_va_handle va_handle;
    uint64_t va;
    uint32_t *cpu;
};

static int gfx_bo_create(amdgpu_device_handle dev, uint64_t size, struct gfx_bo *b)
{
    struct amdgpu_bo_alloc_request req = {
        .alloc_size = size, .phys_alignment = 4096, .preferred_heap = AMDGPU_GEM_DOMAIN_GTT};
    memset(b, 0, sizeof *b);
    int r = amdgpu_bo_alloc(dev, &req, &b->bo);
    CHECK(r == 0, "amdgpu_bo_alloc = %d", r);
    r = amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, size, 4096, 0, &b->va, &b->va_handle, 0);
    CHECK(r == 0, "amdgpu_va_range_alloc = %d", r);
    r = amdgpu_bo_va_op(b->bo, 0, size, b->va, 0, AMDGPU_VA_OP_MAP);
    CHECK(r == 0, "amdgpu_bo_va_op(MAP) = %d", r);
    r = amdgpu_bo_cpu_map(b->bo, (void **)&b->cpu);
    CHECK(r == 0, "amdgpu_bo_cpu_map = %d", r);
    return 1;
}

static void gfx_bo_destroy(struct gfx_bo *b, uint64_t size)
{
    if (!b->bo)
        return;
    amdgpu_bo_cpu_unmap(b->bo);
    amdgpu_bo_va_op(b->bo, 0, size, b->va, 0, AMDGPU_VA_OP_UNMAP);
    amdgpu_va_range_free(b->va_handle);
    amdgpu_bo_free(b->bo);
}

#define CS_ROUNDS 3

static int t_amdgpu_cs(void)
{
    HsaNodeProperties props;
    CHECK_OK(hsaKmtGetNodeProperties(gpu_node, &props));
    char path[64];
    snprintf(path, sizeof path, "/dev/dri/renderD%u", props.DrmRenderMinor);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    uint32_t major = 0, minor = 0;
    amdgpu_device_handle dev = NULL;
    int r = amdgpu_device_initialize(fd, &major, &minor, &dev);
    CHECK(r == 0, "amdgpu_device_initialize = %d", r);
    int dev_fd = amdgpu_device_get_fd(dev);
    amdgpu_context_handle ctx = NULL;
    r = amdgpu_cs_ctx_create(dev, &ctx);
    CHECK(r == 0, "amdgpu_cs_ctx_create = %d", r);

    struct gfx_bo ib, target;
    if (!gfx_bo_create(dev, 4096, &ib) || !gfx_bo_create(dev, 4096, &target))
        return 0;
    amdgpu_bo_handle resources[2] = {ib.bo, target.bo};
    amdgpu_bo_list_handle list = NULL;
    r = amdgpu_bo_list_create(dev, 2, resources, NULL, &list);
    CHECK(r == 0, "amdgpu_bo_list_create = %d", r);

    for (int round = 1; round <= CS_ROUNDS; round++) {
        /* SDMA WRITE_LINEAR (op 2, sub-op 0; dw3 = dwords - 1) of two dwords into the target,
         * then NOPs (0) to 16 dwords, as KFDEvictTest pads its IB. */
        memset(ib.cpu, 0, 64);
        ib.cpu[0] = 2;
        ib.cpu[1] = (uint32_t)(target.va + 8 * round);
        ib.cpu[2] = (uint32_t)((target.va + 8 * round) >> 32);
        ib.cpu[3] = 1;
        ib.cpu[4] = 0xc5000000u | (uint32_t)round;
        ib.cpu[5] = 0xc5100000u | (uint32_t)round;
        struct amdgpu_cs_ib_info ib_info = {.ib_mc_address = ib.va, .size = 16};
        struct amdgpu_cs_request req;
        memset(&req, 0, sizeof req);
        req.ip_type = AMDGPU_HW_IP_DMA;
        req.number_of_ibs = 1;
        req.ibs = &ib_info;
        req.resources = list;
        r = amdgpu_cs_submit(ctx, 0, &req, 1);
        CHECK(r == 0, "amdgpu_cs_submit #%d = %d", round, r);
        CHECK(req.seq_no == (uint64_t)round, "submission %d got sequence number %llu", round,
              (unsigned long long)req.seq_no);
        struct amdgpu_cs_fence fence = {
            .context = ctx, .ip_type = AMDGPU_HW_IP_DMA, .fence = req.seq_no};
        uint32_t expired = 0;
        r = amdgpu_cs_query_fence_status(&fence, 5000000000ull, 0, &expired);
        CHECK(r == 0 && expired, "amdgpu_cs_query_fence_status #%d = %d, expired %u", round, r, expired);
        CHECK(target.cpu[2 * round] == (0xc5000000u | (uint32_t)round) &&
                  target.cpu[2 * round + 1] == (0xc5100000u | (uint32_t)round),
              "round %d: the IB's WRITE left %#x %#x", round, target.cpu[2 * round],
              target.cpu[2 * round + 1]);
    }
    printf("    %d SDMA IBs submitted on a context: sequence numbers 1..%d, each fence signalled, "
           "each WRITE landed\n", CS_ROUNDS, CS_ROUNDS);

    /* A compute-ring IB: PM4 WRITE_DATA (type 3, opcode 0x37, count = dwords - 2 = 4;
     * dw1 DST_SEL [11:8] = 5, memory, WR_CONFIRM bit 20) of two dwords, then a 2-dword NOP
     * (opcode 0x10). It runs through the CP's packet processor with its own sequence numbers. */
    memset(ib.cpu, 0, 64);
    ib.cpu[0] = 0xc0043700u;
    ib.cpu[1] = (5u << 8) | (1u << 20);
    ib.cpu[2] = (uint32_t)(target.va + 256);
    ib.cpu[3] = (uint32_t)((target.va + 256) >> 32);
    ib.cpu[4] = 0xc0de0001u;
    ib.cpu[5] = 0xc0de0002u;
    ib.cpu[6] = 0xc0001000u;
    ib.cpu[7] = 0;
    struct amdgpu_cs_ib_info pm4_ib = {.ib_mc_address = ib.va, .size = 8};
    struct amdgpu_cs_request pm4_req;
    memset(&pm4_req, 0, sizeof pm4_req);
    pm4_req.ip_type = AMDGPU_HW_IP_COMPUTE;
    pm4_req.number_of_ibs = 1;
    pm4_req.ibs = &pm4_ib;
    pm4_req.resources = list;
    r = amdgpu_cs_submit(ctx, 0, &pm4_req, 1);
    CHECK(r == 0, "amdgpu_cs_submit of a compute IB = %d", r);
    CHECK(pm4_req.seq_no == 1, "the compute ring's first sequence number is %llu",
          (unsigned long long)pm4_req.seq_no);
    struct amdgpu_cs_fence pm4_fence = {
        .context = ctx, .ip_type = AMDGPU_HW_IP_COMPUTE, .fence = pm4_req.seq_no};
    uint32_t pm4_expired = 0;
    r = amdgpu_cs_query_fence_status(&pm4_fence, 5000000000ull, 0, &pm4_expired);
    CHECK(r == 0 && pm4_expired, "compute fence: %d, expired %u", r, pm4_expired);
    CHECK(target.cpu[64] == 0xc0de0001u && target.cpu[65] == 0xc0de0002u,
          "the compute IB's WRITE_DATA left %#x %#x", target.cpu[64], target.cpu[65]);
    /* A type-3 packet with an opcode nobody defines (0xee): a job the GPU would hang on. The
     * submission is accepted, its fence signals (sequence number 2), the context is guilty
     * (reset_state2: AMDGPU_CTX_QUERY2_FLAGS_RESET | _GUILTY) and refuses more (-ECANCELED). */
    ib.cpu[0] = 0xc000ee00u;
    pm4_ib.size = 2;
    r = amdgpu_cs_submit(ctx, 0, &pm4_req, 1);
    CHECK(r == 0 && pm4_req.seq_no == 2, "a compute IB with an unknown packet = %d, seq %llu "
          "(want 0, 2)", r, (unsigned long long)pm4_req.seq_no);
    pm4_fence.fence = pm4_req.seq_no;
    pm4_expired = 0;
    r = amdgpu_cs_query_fence_status(&pm4_fence, 5000000000ull, 0, &pm4_expired);
    CHECK(r == 0 && pm4_expired, "the hung IB's fence: %d, expired %u", r, pm4_expired);
    uint64_t reset_flags = 0;
    r = amdgpu_cs_query_reset_state2(ctx, &reset_flags);
    CHECK(r == 0 && reset_flags == (AMDGPU_CTX_QUERY2_FLAGS_RESET | AMDGPU_CTX_QUERY2_FLAGS_GUILTY),
          "reset_state2 after the hang = %d, flags %#llx (want 0x5)", r,
          (unsigned long long)reset_flags);
    r = amdgpu_cs_submit(ctx, 0, &pm4_req, 1);
    CHECK(r == -ECANCELED, "a submission on the guilty context = %d (want -ECANCELED)", r);
    printf("    a compute-ring IB: WRITE_DATA landed, sequence number 1 signalled; an unknown "
           "packet: fence 2 signalled, context guilty (flags %#llx), then -ECANCELED\n",
           (unsigned long long)reset_flags);

    /* The kernel's errnos: a fence not handed out yet, a context that does not exist, a list
     * naming no buffer. */
    struct amdgpu_cs_fence later = {.context = ctx, .ip_type = AMDGPU_HW_IP_DMA, .fence = CS_ROUNDS + 5};
    uint32_t expired = 0;
    r = amdgpu_cs_query_fence_status(&later, 0, 0, &expired);
    CHECK(r == -EINVAL, "waiting for sequence %d = %d (want -EINVAL)", CS_ROUNDS + 5, r);
    union drm_amdgpu_cs cs;
    memset(&cs, 0, sizeof cs);
    uint64_t no_chunks = 0;
    cs.in.ctx_id = 99;
    cs.in.num_chunks = 0;
    cs.in.chunks = (uint64_t)(uintptr_t)&no_chunks;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_CS, &cs, sizeof cs);
    CHECK(r == -EINVAL, "CS on context 99 = %d (want -EINVAL)", r);
    struct drm_amdgpu_bo_list_entry bad = {.bo_handle = 0x7fff};
    union drm_amdgpu_bo_list raw_list;
    memset(&raw_list, 0, sizeof raw_list);
    raw_list.in.operation = AMDGPU_BO_LIST_OP_CREATE;
    raw_list.in.bo_number = 1;
    raw_list.in.bo_info_size = sizeof bad;
    raw_list.in.bo_info_ptr = (uint64_t)(uintptr_t)&bad;
    r = drmCommandWriteRead(dev_fd, DRM_AMDGPU_BO_LIST, &raw_list, sizeof raw_list);
    CHECK(r == -ENOENT, "BO_LIST create naming no buffer = %d (want -ENOENT)", r);

    r = amdgpu_bo_list_destroy(list);
    CHECK(r == 0, "amdgpu_bo_list_destroy = %d", r);
    gfx_bo_destroy(&ib, 4096);
    gfx_bo_destroy(&target, 4096);
    r = amdgpu_cs_ctx_free(ctx);
    CHECK(r == 0, "amdgpu_cs_ctx_free = %d", r);
    amdgpu_device_deinitialize(dev);
    close(fd);
    return 1;
}

/* KFDEvictTest.BasicTest in small: KFD VRAM buffers leave less VRAM free than a graphics
 * buffer needs; a context submits an SDMA IB whose BO list names that buffer, so TTM evicts
 * the KFD buffers and amdkfd stops the process's queues until its restore worker brings them
 * back. A KFD queue write submitted right after must still land, the KFD buffer keeps its
 * bytes, and once restored the KFD buffers hold their VRAM again (the idle graphics buffer
 * went to GTT). */
#define EVICT_GRAPHICS_BYTES (64ull << 20)

static int t_amdgpu_evict(void)
{
    HsaMemFlags vram = {0};
    vram.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    vram.ui32.HostAccess = 1;
    vram.ui32.NonPaged = 1;
    uint32_t *target = NULL;
    CHECK_OK(hsaKmtAllocMemory(gpu_node, 4096, vram, (void **)&target));
    HSAuint64 alternate_va = 0;
    CHECK_OK(hsaKmtMapMemoryToGPU(target, 4096, &alternate_va));
    uint64_t target_va = (uint64_t)(uintptr_t)target; /* a dGPU maps it at its CPU address */
    target[0] = 0x11112222u;
    target[2] = 0;
    /* Fill VRAM: the biggest buffers that still fit, down to 2 MiB (so less than that is
     * left), starting from the VRAM the node reports. */
    HsaNodeProperties props;
    CHECK_OK(hsaKmtGetNodeProperties(gpu_node, &props));
    HsaMemoryProperties banks[8];
    HSAuint32 nbanks = props.NumMemoryBanks < 8 ? props.NumMemoryBanks : 8;
    CHECK_OK(hsaKmtGetNodeMemoryProperties(gpu_node, nbanks, banks));
    HSAuint64 vram_size = 0;
    for (HSAuint32 b = 0; b < nbanks; b++)
        if (banks[b].HeapType == HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC ||
            banks[b].HeapType == HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE)
            vram_size += banks[b].SizeInBytes;
    CHECK(vram_size > EVICT_GRAPHICS_BYTES, "%llu bytes of VRAM", (unsigned long long)vram_size);
    enum { MAX_FILLERS = 64 };
    uint32_t *filler[MAX_FILLERS];
    HSAuint64 filler_size[MAX_FILLERS], filled = 0;
    int fillers = 0;
    for (HSAuint64 chunk = vram_size & ~((2ull << 20) - 1); chunk >= (2ull << 20) && fillers < MAX_FILLERS;) {
        if (hsaKmtAllocMemory(gpu_node, chunk, vram, (void **)&filler[fillers]) != HSAKMT_STATUS_SUCCESS) {
            chunk = (chunk / 2) & ~((2ull << 20) - 1);
            continue;
        }
        filler[fillers][chunk / 4 - 1] = 0x33330000u + (uint32_t)fillers;
        filler_size[fillers++] = chunk;
        filled += chunk;
    }
    struct queue q;
    if (!queue_create(&q, 4096))
        return 0;

    char path[64];
    snprintf(path, sizeof path, "/dev/dri/renderD%u", props.DrmRenderMinor);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    uint32_t major = 0, minor = 0;
    amdgpu_device_handle dev = NULL;
    int r = amdgpu_device_initialize(fd, &major, &minor, &dev);
    CHECK(r == 0, "amdgpu_device_initialize = %d", r);
    amdgpu_context_handle ctx = NULL;
    r = amdgpu_cs_ctx_create(dev, &ctx);
    CHECK(r == 0, "amdgpu_cs_ctx_create = %d", r);
    struct gfx_bo ib;
    if (!gfx_bo_create(dev, 4096, &ib))
        return 0;
    struct amdgpu_bo_alloc_request req = {
        .alloc_size = EVICT_GRAPHICS_BYTES, .phys_alignment = 4096,
        .preferred_heap = AMDGPU_GEM_DOMAIN_VRAM};
    amdgpu_bo_handle gfx = NULL;
    r = amdgpu_bo_alloc(dev, &req, &gfx);
    CHECK(r == 0, "amdgpu_bo_alloc of %llu bytes of VRAM with less than 2 MiB free = %d",
          EVICT_GRAPHICS_BYTES, r);
    uint64_t gfx_va = 0;
    amdgpu_va_handle gfx_va_handle = NULL;
    r = amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, EVICT_GRAPHICS_BYTES, 4096, 0,
                              &gfx_va, &gfx_va_handle, 0);
    CHECK(r == 0, "amdgpu_va_range_alloc = %d", r);
    r = amdgpu_bo_va_op(gfx, 0, EVICT_GRAPHICS_BYTES, gfx_va, 0, AMDGPU_VA_OP_MAP);
    CHECK(r == 0, "amdgpu_bo_va_op(MAP) = %d", r);
    amdgpu_bo_handle resources[2] = {ib.bo, gfx};
    amdgpu_bo_list_handle list = NULL;
    r = amdgpu_bo_list_create(dev, 2, resources, NULL, &list);
    CHECK(r == 0, "amdgpu_bo_list_create = %d", r);

    /* SDMA WRITE_LINEAR of one dword into the graphics buffer, NOPs to 16 dwords. */
    memset(ib.cpu, 0, 64);
    ib.cpu[0] = 2;
    ib.cpu[1] = (uint32_t)gfx_va;
    ib.cpu[2] = (uint32_t)(gfx_va >> 32);
    ib.cpu[4] = 0x600dcafeu;
    struct amdgpu_cs_ib_info ib_info = {.ib_mc_address = ib.va, .size = 16};
    struct amdgpu_cs_request cs;
    memset(&cs, 0, sizeof cs);
    cs.ip_type = AMDGPU_HW_IP_DMA;
    cs.number_of_ibs = 1;
    cs.ibs = &ib_info;
    cs.resources = list;
    r = amdgpu_cs_submit(ctx, 0, &cs, 1);
    CHECK(r == 0, "amdgpu_cs_submit = %d", r);
    struct amdgpu_cs_fence fence = {.context = ctx, .ip_type = AMDGPU_HW_IP_DMA, .fence = cs.seq_no};
    uint32_t expired = 0;
    r = amdgpu_cs_query_fence_status(&fence, 5000000000ull, 0, &expired);
    CHECK(r == 0 && expired, "amdgpu_cs_query_fence_status = %d, expired %u", r, expired);

    /* The KFD queue: a write submitted while its process may be evicted lands once it is
     * restored (the deadline only detects a hang). */
    put_write_data(&q, target_va + 8, 0xabcd0003u);
    queue_submit(&q);
    double t0 = now_ms();
    while (__atomic_load_n(&target[2], __ATOMIC_ACQUIRE) != 0xabcd0003u && now_ms() - t0 < 60000)
        usleep(1000);
    CHECK(target[2] == 0xabcd0003u, "the KFD queue's WRITE_DATA never landed (%#x)", target[2]);
    CHECK(target[0] == 0x11112222u, "the KFD buffer lost its bytes: %#x", target[0]);
    for (int i = 0; i < fillers; i++)
        CHECK(filler[i][filler_size[i] / 4 - 1] == 0x33330000u + (uint32_t)i,
              "filler %d lost its bytes: %#x", i, filler[i][filler_size[i] / 4 - 1]);
    /* Restored: the KFD buffers hold their VRAM again, so a 2 MiB one still does not fit. */
    uint32_t *more = NULL;
    CHECK(hsaKmtAllocMemory(gpu_node, 2ull << 20, vram, (void **)&more) != HSAKMT_STATUS_SUCCESS,
          "2 MiB of VRAM fit after the restore");
    printf("    %llu MiB of KFD VRAM in %d buffers; a %llu MiB graphics buffer in a submission's "
           "BO list: the KFD queue's WRITE_DATA landed after the restore, buffers intact\n",
           (unsigned long long)(filled >> 20), fillers + 1, EVICT_GRAPHICS_BYTES >> 20);

    amdgpu_bo_list_destroy(list);
    amdgpu_bo_va_op(gfx, 0, EVICT_GRAPHICS_BYTES, gfx_va, 0, AMDGPU_VA_OP_UNMAP);
    amdgpu_va_range_free(gfx_va_handle);
    amdgpu_bo_free(gfx);
    gfx_bo_destroy(&ib, 4096);
    amdgpu_cs_ctx_free(ctx);
    amdgpu_device_deinitialize(dev);
    close(fd);
    queue_destroy(&q);
    for (int i = 0; i < fillers; i++)
        hsaKmtFreeMemory(filler[i], filler_size[i]);
    free_mapped(target, 4096);
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(void);
    } cases[] = {
        {"oversubscribe", t_oversubscribe},
        {"register_huge", t_register_huge},
        {"big_alloc", t_big_alloc},
        {"zero_init", t_zero_init},
        {"many_buffers", t_many_buffers},
        {"amdgpu_bo", t_amdgpu_bo},
        {"amdgpu_ctx_metadata", t_amdgpu_ctx_metadata},
        {"amdgpu_cs", t_amdgpu_cs},
        {"amdgpu_evict", t_amdgpu_evict},
    };
    int (*fn)(void) = NULL;
    for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(argv[1], cases[i].name) == 0)
            fn = cases[i].fn;
    if (!fn) {
        fprintf(stderr, "usage: %s oversubscribe|register_huge|big_alloc|zero_init|many_buffers|amdgpu_bo|amdgpu_ctx_metadata|amdgpu_cs|amdgpu_evict\n", argv[0]);
        return 2;
    }
    if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS) {
        printf("FAIL %s: hsaKmtOpenKFD failed\n", argv[1]);
        return 1;
    }
    HsaSystemProperties sys;
    if (hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS || sys.NumNodes < 2) {
        printf("FAIL %s: no GPU node in the topology\n", argv[1]);
        return 1;
    }
    double t0 = now_ms();
    int ok = fn();
    double took = now_ms() - t0;
    if (ok)
        printf("PASS %s (%.0f ms)\n", argv[1], took);
    else
        printf("FAIL %s: %s (%.0f ms)\n", argv[1], why, took);
    hsaKmtReleaseSystemProperties();
    hsaKmtCloseKFD();
    return ok ? 0 : 1;
}
