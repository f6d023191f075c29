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
 *   amdgpu_bo      a GTT buffer from amdgpu_bo_alloc, CPU-mapped with amdgpu_bo_cpu_map,
 *                  VA-mapped with amdgpu_bo_va_op, exported as a dma-buf, registered with
 *                  hsaKmtRegisterGraphicsHandleToNodes and mapped with hsaKmtMapMemoryToGPU: a
 *                  PM4 WRITE_DATA into it shows in the amdgpu CPU map.
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

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(void);
    } cases[] = {
        {"oversubscribe", t_oversubscribe},
        {"register_huge", t_register_huge},
        {"big_alloc", t_big_alloc},
        {"amdgpu_bo", t_amdgpu_bo},
    };
    int (*fn)(void) = NULL;
    for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(argv[1], cases[i].name) == 0)
            fn = cases[i].fn;
    if (!fn) {
        fprintf(stderr, "usage: %s oversubscribe|register_huge|big_alloc|amdgpu_bo\n", argv[0]);
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
