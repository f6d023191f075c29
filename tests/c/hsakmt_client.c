/*
 * kfdtest-style checks of Debian's unmodified libhsakmt (5.2.3) running on the kfd model
 * through the LD_PRELOAD shim (libkfd_preload.so).
 *
 * Build: gcc -O2 -Wall -Wextra -o hsakmt_client hsakmt_client.c -lhsakmt
 * Run:   KFD_MODEL_PRESET=gfx900 LD_PRELOAD=.../libkfd_preload.so ./hsakmt_client [--skip a,b]
 *
 * Every case prints "PASS name" or "FAIL name: why"; the last line is "N passed, M failed"
 * (plus ", K skipped" when --skip named cases). The exit status is 0 only when M is 0.
 *
 * Expected values come from the model's presets (what the topology of each modelled part
 * says), and packet encodings from the PM4/SDMA facts: WRITE_DATA dst_sel 5 with write
 * confirm, RELEASE_MEM event 0x14 index 5 with int_sel 2 / data_sel 1 and int_ctxid = event
 * id, SDMA COPY_LINEAR (count = bytes - 1), FENCE, TRAP (int_context = event id).
 */
#define _GNU_SOURCE
#include <hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed, failed, skipped;
static const char *skip_list = "";
static char why[512];

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

static int skipped_by_name(const char *name)
{
    size_t n = strlen(name);
    for (const char *p = skip_list; (p = strstr(p, name)) != NULL; p += n) {
        int starts = p == skip_list || p[-1] == ',';
        int ends = p[n] == '\0' || p[n] == ',';
        if (starts && ends)
            return 1;
    }
    return 0;
}

static void run(const char *name, int (*fn)(void))
{
    if (skipped_by_name(name)) {
        printf("SKIP %s\n", name);
        skipped++;
        return;
    }
    why[0] = '\0';
    if (fn()) {
        printf("PASS %s\n", name);
        passed++;
    } else {
        printf("FAIL %s: %s\n", name, why);
        failed++;
    }
    fflush(stdout);
}

/* What the model's presets say about each part. */
struct part {
    const char *name;
    unsigned simds, simd_per_cu, wave, major, minor, stepping, device_id, caches;
    unsigned long long vram;
    unsigned l1_kib, l2_kib;
};

/* Caches as amdkfd lists them, one per instance: gfx900 64 vector L1 + 24 + 24 scalar (per 3
 * CUs of each 16-CU array) + L2; gfx90a 104 + 56 + 56 (per 2 CUs of 13) + L2; gfx942 304 +
 * 160 + 160 + L2 + L3; gfx1030 80 + 40 + 40 + 8 GL1 + L2 + L3. l1_kib is the vector L1. */
static const struct part parts[] = {
    {"gfx900", 256, 4, 64, 9, 0, 0, 0x6860, 113, 16ULL << 30, 16, 4096},
    {"gfx90a", 416, 4, 64, 9, 0, 10, 0x740f, 217, 64ULL << 30, 16, 8192},
    {"gfx942", 1216, 4, 64, 9, 4, 2, 0x74a1, 626, 192ULL << 30, 32, 4096},
    {"gfx1030", 160, 2, 32, 10, 3, 0, 0x73bf, 170, 16ULL << 30, 16, 4096},
};

static const struct part *part;
static unsigned gpus = 1;
static HsaSystemProperties sys;
static unsigned gpu_node = 1; /* first GPU node */
static int family_gfx10;

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Polls `*p & mask` until it equals `want` or `ms` pass (the CP and SDMA engines publish
 * their read pointer after the work, not before the interrupt). */
static int poll_u64(volatile uint64_t *p, uint64_t mask, uint64_t want, int ms)
{
    double end = now_ms() + ms;
    while ((__atomic_load_n(p, __ATOMIC_ACQUIRE) & mask) != want)
        if (now_ms() > end)
            return 0;
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

static int t_open_close(void)
{
    HsaVersionInfo v;
    CHECK_OK(hsaKmtOpenKFD());
    CHECK_OK(hsaKmtGetVersion(&v));
    CHECK(v.KernelInterfaceMajorVersion == 1, "interface major %u, want 1", v.KernelInterfaceMajorVersion);
    CHECK(v.KernelInterfaceMinorVersion >= 1, "interface minor %u", v.KernelInterfaceMinorVersion);
    CHECK_OK(hsaKmtCloseKFD());
    /* Closed: calls fail until the next open. */
    CHECK(hsaKmtGetVersion(&v) != HSAKMT_STATUS_SUCCESS, "GetVersion succeeded on a closed KFD");
    CHECK_OK(hsaKmtOpenKFD());
    CHECK_OK(hsaKmtGetVersion(&v));
    return 1;
}

static int t_topology_system(void)
{
    CHECK_OK(hsaKmtAcquireSystemProperties(&sys));
    CHECK(sys.NumNodes == 1 + gpus, "%u nodes, want CPU + %u GPUs", sys.NumNodes, gpus);
    CHECK(sys.PlatformOem == 0x414d44, "platform_oem %#x", sys.PlatformOem);
    return 1;
}

static int t_topology_nodes(void)
{
    HsaNodeProperties p;
    CHECK_OK(hsaKmtGetNodeProperties(0, &p));
    CHECK(p.NumCPUCores > 0 && p.NumFComputeCores == 0, "node 0 is not a CPU node (%u cores, %u simds)",
          p.NumCPUCores, p.NumFComputeCores);
    CHECK(p.NumIOLinks == gpus, "CPU node has %u io links, want %u", p.NumIOLinks, gpus);
    for (unsigned n = 1; n <= gpus; n++) {
        CHECK_OK(hsaKmtGetNodeProperties(n, &p));
        CHECK(p.NumFComputeCores == part->simds, "node %u: %u SIMDs, want %u", n, p.NumFComputeCores, part->simds);
        CHECK(p.NumSIMDPerCU == part->simd_per_cu, "node %u: %u SIMD/CU", n, p.NumSIMDPerCU);
        CHECK(p.WaveFrontSize == part->wave, "node %u: wave %u", n, p.WaveFrontSize);
        CHECK(p.EngineId.ui32.Major == part->major && p.EngineId.ui32.Minor == part->minor &&
                  p.EngineId.ui32.Stepping == part->stepping,
              "node %u: gfx %u.%u.%u, want %u.%u.%u", n, p.EngineId.ui32.Major, p.EngineId.ui32.Minor,
              p.EngineId.ui32.Stepping, part->major, part->minor, part->stepping);
        CHECK(p.VendorId == 0x1002 && p.DeviceId == part->device_id, "node %u: %04x:%04x", n, p.VendorId,
              p.DeviceId);
        CHECK(p.NumCPUCores == 0, "GPU node %u has CPU cores", n);
        CHECK(p.NumSdmaEngines >= 2, "node %u: %u SDMA engines", n, p.NumSdmaEngines);
        CHECK(p.NumCpQueues > 0, "node %u: no CP queues", n);
        CHECK(p.LocalMemSize == part->vram, "node %u: local memory %llu", n, (unsigned long long)p.LocalMemSize);
    }
    return 1;
}

static int t_topology_memory(void)
{
    for (unsigned n = 1; n <= gpus; n++) {
        HsaNodeProperties p;
        CHECK_OK(hsaKmtGetNodeProperties(n, &p));
        HsaMemoryProperties m[16];
        CHECK(p.NumMemoryBanks >= 1 && p.NumMemoryBanks <= 16, "node %u: %u banks", n, p.NumMemoryBanks);
        CHECK_OK(hsaKmtGetNodeMemoryProperties(n, p.NumMemoryBanks, m));
        int found = 0;
        for (unsigned i = 0; i < p.NumMemoryBanks; i++)
            if ((m[i].HeapType == HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC ||
                 m[i].HeapType == HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE) &&
                m[i].SizeInBytes == part->vram)
                found = 1;
        CHECK(found, "node %u: no frame-buffer heap of %llu bytes", n, part->vram);
    }
    return 1;
}

static int t_topology_caches(void)
{
    for (unsigned n = 1; n <= gpus; n++) {
        HsaNodeProperties p;
        CHECK_OK(hsaKmtGetNodeProperties(n, &p));
        CHECK(p.NumCaches == part->caches, "node %u: %u caches, want %u", n, p.NumCaches, part->caches);
        HsaCacheProperties *c = calloc(p.NumCaches, sizeof *c);
        CHECK(c != NULL, "out of memory");
        HSAKMT_STATUS s = hsaKmtGetNodeCacheProperties(n, p.FComputeIdLo, p.NumCaches, c);
        int hsacu = 0, l1 = 0, l2 = 0;
        for (unsigned i = 0; i < p.NumCaches; i++) {
            hsacu |= c[i].CacheType.ui32.HSACU;
            if (c[i].CacheLevel == 1 && !l1) l1 = c[i].CacheSize; /* the first: vector L1 */
            if (c[i].CacheLevel == 2) l2 = c[i].CacheSize;
        }
        free(c);
        CHECK(s == HSAKMT_STATUS_SUCCESS, "GetNodeCacheProperties = %d", s);
        CHECK(hsacu, "node %u: no cache with the HSACU bit", n);
        CHECK((unsigned)l1 == part->l1_kib && (unsigned)l2 == part->l2_kib, "node %u: L1 %d KiB, L2 %d KiB", n, l1, l2);
    }
    return 1;
}

static int t_topology_io_links(void)
{
    for (unsigned n = 1; n <= gpus; n++) {
        HsaNodeProperties p;
        CHECK_OK(hsaKmtGetNodeProperties(n, &p));
        CHECK(p.NumIOLinks >= 1 && p.NumIOLinks <= 16, "node %u: %u io links", n, p.NumIOLinks);
        HsaIoLinkProperties l[16];
        CHECK_OK(hsaKmtGetNodeIoLinkProperties(n, p.NumIOLinks, l));
        CHECK(l[0].IoLinkType == HSA_IOLINKTYPE_PCIEXPRESS, "node %u: link 0 type %d", n, l[0].IoLinkType);
        CHECK(l[0].NodeFrom == n && l[0].NodeTo == 0, "node %u: link 0 %u -> %u", n, l[0].NodeFrom, l[0].NodeTo);
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

static void *alloc_mapped(unsigned node, HSAuint64 size, HsaMemFlags flags)
{
    void *p = NULL;
    HSAuint64 gpu_va = 0;
    if (hsaKmtAllocMemory(node, size, flags, &p) != HSAKMT_STATUS_SUCCESS)
        return NULL;
    if (hsaKmtMapMemoryToGPU(p, size, &gpu_va) != HSAKMT_STATUS_SUCCESS) {
        hsaKmtFreeMemory(p, size);
        return NULL;
    }
    return p;
}

static void free_mapped(void *p, HSAuint64 size)
{
    hsaKmtUnmapMemoryToGPU(p);
    hsaKmtFreeMemory(p, size);
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

static HsaMemFlags vram_flags(void)
{
    HsaMemFlags f = {0};
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.NonPaged = 1;
    f.ui32.HostAccess = 1;
    f.ui32.NoSubstitute = 1;
    return f;
}

static int fill_and_check(volatile uint32_t *p, size_t dwords, uint32_t seed)
{
    for (size_t i = 0; i < dwords; i++)
        p[i] = seed ^ (uint32_t)(i * 2654435761u);
    for (size_t i = 0; i < dwords; i++)
        if (p[i] != (seed ^ (uint32_t)(i * 2654435761u)))
            return 0;
    return 1;
}

static int t_memory_system(void)
{
    const HSAuint64 size = 64 << 10;
    HSAuint64 gpu_va = 0;
    void *p = NULL;
    CHECK_OK(hsaKmtAllocMemory(gpu_node, size, system_flags(0), &p));
    CHECK(p != NULL && ((uintptr_t)p & 4095) == 0, "address %p", p);
    CHECK_OK(hsaKmtMapMemoryToGPU(p, size, &gpu_va));
    CHECK(fill_and_check(p, size / 4, 0x5157e3), "CPU pattern mismatch");
    CHECK_OK(hsaKmtUnmapMemoryToGPU(p));
    CHECK_OK(hsaKmtFreeMemory(p, size));
    return 1;
}

static int t_memory_vram(void)
{
    const HSAuint64 size = 64 << 10;
    HSAuint64 gpu_va = 0;
    void *p = NULL;
    CHECK_OK(hsaKmtAllocMemory(gpu_node, size, vram_flags(), &p));
    CHECK(p != NULL && ((uintptr_t)p & 4095) == 0, "address %p", p);
    CHECK_OK(hsaKmtMapMemoryToGPU(p, size, &gpu_va));
    /* The BO is CPU-mapped through the render node: the model's VRAM at this address. */
    CHECK(fill_and_check(p, size / 4, 0x7a3e), "CPU pattern mismatch in VRAM");
    CHECK_OK(hsaKmtUnmapMemoryToGPU(p));
    CHECK_OK(hsaKmtFreeMemory(p, size));
    /* A second round reuses the freed handle and range. */
    CHECK_OK(hsaKmtAllocMemory(gpu_node, size, vram_flags(), &p));
    CHECK_OK(hsaKmtFreeMemory(p, size));
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

struct queue {
    HsaQueueResource res;
    uint32_t *ring;
    HSAuint64 ring_size;
    volatile uint64_t *pointers; /* [0] read pointer, [8] write pointer (separate lines) */
    volatile uint64_t *rptr, *wptr_mem; /* where the queue's pointers live after creation */
    uint64_t wptr;               /* PM4: dwords, SDMA: bytes (monotonic) */
    int sdma;
};

static int queue_create(struct queue *q, int sdma)
{
    memset(q, 0, sizeof *q);
    q->sdma = sdma;
    q->ring_size = 4096;
    q->ring = alloc_mapped(gpu_node, q->ring_size, system_flags(1));
    q->pointers = alloc_mapped(gpu_node, 4096, system_flags(0));
    if (!q->ring || !q->pointers)
        return 0;
    memset(q->ring, 0, q->ring_size);
    q->res.QueueRptrValue = (HSAuint64)(uintptr_t)&q->pointers[0];
    q->res.QueueWptrValue = (HSAuint64)(uintptr_t)&q->pointers[8];
    HSAKMT_STATUS s = hsaKmtCreateQueue(gpu_node, sdma ? HSA_QUEUE_SDMA : HSA_QUEUE_COMPUTE, 100,
                                        HSA_QUEUE_PRIORITY_NORMAL, q->ring, q->ring_size, NULL, &q->res);
    if (s != HSAKMT_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "hsaKmtCreateQueue(%s) = %d", sdma ? "SDMA" : "PM4", s);
        return 0;
    }
    /* libhsakmt may move the pointers into memory of its own (it does on gfx9+ dGPUs): the
     * resource says where they are now. */
    q->rptr = (volatile uint64_t *)q->res.Queue_read_ptr_aql;
    q->wptr_mem = (volatile uint64_t *)q->res.Queue_write_ptr_aql;
    if (!q->rptr || !q->wptr_mem || !q->res.Queue_DoorBell_aql) {
        snprintf(why, sizeof why, "queue resource without rptr/wptr/doorbell");
        return 0;
    }
    return 1;
}

static void queue_destroy(struct queue *q)
{
    if (q->res.QueueId)
        hsaKmtDestroyQueue(q->res.QueueId);
    if (q->ring)
        free_mapped(q->ring, q->ring_size);
    if (q->pointers)
        free_mapped((void *)q->pointers, 4096);
}

/* Appends dwords at the write pointer (the ring is long enough for these tests). */
static void queue_put(struct queue *q, const uint32_t *dw, unsigned n)
{
    uint64_t ring_dw = q->ring_size / 4;
    uint64_t at = q->sdma ? q->wptr / 4 : q->wptr;
    for (unsigned i = 0; i < n; i++)
        q->ring[(at + i) % ring_dw] = dw[i];
    q->wptr += q->sdma ? 4ull * n : n;
}

/* Publishes the write pointer, then rings the 64-bit doorbell with the same value. */
static void queue_submit(struct queue *q)
{
    __atomic_store_n(q->wptr_mem, q->wptr, __ATOMIC_RELEASE);
    __atomic_store_n(q->res.Queue_DoorBell_aql, q->wptr, __ATOMIC_RELEASE);
}

static int t_queue_pm4_create_destroy(void)
{
    struct queue q;
    int ok = queue_create(&q, 0);
    if (ok && !(q.res.QueueId != 0 && q.res.Queue_DoorBell != NULL)) {
        snprintf(why, sizeof why, "queue id %llu doorbell %p", (unsigned long long)q.res.QueueId,
                 (void *)q.res.Queue_DoorBell);
        ok = 0;
    }
    if (ok) {
        HSAKMT_STATUS s = hsaKmtDestroyQueue(q.res.QueueId);
        q.res.QueueId = 0;
        if (s != HSAKMT_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "hsaKmtDestroyQueue = %d", s);
            ok = 0;
        }
    }
    queue_destroy(&q);
    return ok;
}

static int t_queue_sdma_create_destroy(void)
{
    struct queue a, b;
    int ok = queue_create(&a, 1) && queue_create(&b, 1);
    if (ok && a.res.Queue_DoorBell == b.res.Queue_DoorBell) {
        snprintf(why, sizeof why, "two SDMA queues share doorbell %p", (void *)a.res.Queue_DoorBell);
        ok = 0;
    }
    queue_destroy(&b);
    queue_destroy(&a);
    return ok;
}

/* ---------------------------------------------------------------------------------------- */

static HsaEvent *signal_event(int manual_reset)
{
    HsaEventDescriptor d = {0};
    HsaEvent *e = NULL;
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    d.NodeId = gpu_node;
    if (hsaKmtCreateEvent(&d, manual_reset, false, &e) != HSAKMT_STATUS_SUCCESS)
        return NULL;
    return e;
}

static int t_event_set_wait(void)
{
    HsaEvent *e = signal_event(true);
    CHECK(e != NULL, "hsaKmtCreateEvent failed");
    CHECK(e->EventId != 0, "event id 0 is reserved");
    CHECK(e->EventData.HWData2 != 0, "no event slot address");
    CHECK_OK(hsaKmtSetEvent(e));
    CHECK_OK(hsaKmtWaitOnEvent(e, 1000));
    /* Manual reset: still signaled until reset. */
    CHECK_OK(hsaKmtWaitOnEvent(e, 0));
    CHECK_OK(hsaKmtResetEvent(e));
    CHECK(hsaKmtWaitOnEvent(e, 0) == HSAKMT_STATUS_WAIT_TIMEOUT, "signaled after reset");
    CHECK_OK(hsaKmtDestroyEvent(e));
    return 1;
}

static int t_event_wait_timeout(void)
{
    HsaEvent *e = signal_event(false);
    CHECK(e != NULL, "hsaKmtCreateEvent failed");
    double t0 = now_ms();
    HSAKMT_STATUS s = hsaKmtWaitOnEvent(e, 50);
    double dt = now_ms() - t0;
    CHECK(s == HSAKMT_STATUS_WAIT_TIMEOUT, "wait = %d, want WAIT_TIMEOUT (%d)", s, HSAKMT_STATUS_WAIT_TIMEOUT);
    CHECK(dt >= 45 && dt < 2000, "waited %.1f ms for a 50 ms timeout", dt);
    /* Auto reset: one set satisfies one wait. */
    CHECK_OK(hsaKmtSetEvent(e));
    CHECK_OK(hsaKmtWaitOnEvent(e, 1000));
    CHECK(hsaKmtWaitOnEvent(e, 0) == HSAKMT_STATUS_WAIT_TIMEOUT, "auto-reset event stayed signaled");
    CHECK_OK(hsaKmtDestroyEvent(e));
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

#define PM4_HDR(op, count) ((3u << 30) | (((count)&0x3fffu) << 16) | ((op) << 8))
#define PM4_WRITE_DATA 0x37
#define PM4_RELEASE_MEM 0x49

static int t_pm4_write_data_release_mem(void)
{
    struct queue q;
    HsaEvent *e = signal_event(false);
    volatile uint32_t *dst = alloc_mapped(gpu_node, 4096, system_flags(0));
    int ok = e != NULL && dst != NULL && queue_create(&q, 0);
    if (!ok) {
        if (!why[0]) snprintf(why, sizeof why, "setup failed");
        goto out;
    }
    dst[0] = 0;
    dst[1] = 0;
    uint64_t a = (uint64_t)(uintptr_t)dst;
    /* WRITE_DATA: dst_sel 5 (memory), wr_confirm, two dwords. */
    uint32_t wd[] = {PM4_HDR(PM4_WRITE_DATA, 2 + 2), (5u << 8) | (1u << 20), (uint32_t)a, (uint32_t)(a >> 32),
                     0xcafebabe, 0x0badf00d};
    queue_put(&q, wd, 6);
    /* RELEASE_MEM: end-of-pipe, write the event id to the event slot, then interrupt with it. */
    uint64_t slot = e->EventData.HWData2;
    uint32_t dw1 = family_gfx10 ? (0x14u | (5u << 8)) : 0x00028514u;
    uint32_t rm[] = {PM4_HDR(PM4_RELEASE_MEM, 6), dw1, (2u << 24) | (1u << 29), (uint32_t)slot, (uint32_t)(slot >> 32),
                     e->EventId, 0, e->EventId};
    queue_put(&q, rm, 8);
    queue_submit(&q);
    HSAKMT_STATUS s = hsaKmtWaitOnEvent(e, 2000);
    if (s != HSAKMT_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "event not signaled: wait = %d (rptr %llu, wptr %llu)", s,
                 (unsigned long long)*q.rptr, (unsigned long long)q.wptr);
        ok = 0;
    } else if (dst[0] != 0xcafebabe || dst[1] != 0x0badf00d) {
        snprintf(why, sizeof why, "WRITE_DATA wrote %08x %08x", dst[0], dst[1]);
        ok = 0;
    } else if (!poll_u64(q.rptr, 0xffffffffu, q.wptr % (q.ring_size / 4), 1000)) {
        snprintf(why, sizeof why, "read pointer %llu, want %llu", (unsigned long long)*q.rptr,
                 (unsigned long long)(q.wptr % (q.ring_size / 4)));
        ok = 0;
    }
    queue_destroy(&q);
out:
    if (dst) free_mapped((void *)dst, 4096);
    if (e) hsaKmtDestroyEvent(e);
    return ok;
}

#define SDMA_OP_COPY 1
#define SDMA_OP_FENCE 5
#define SDMA_OP_TRAP 6

static int t_sdma_copy_fence_trap(void)
{
    struct queue q;
    HsaEvent *e = signal_event(false);
    uint8_t *buf = alloc_mapped(gpu_node, 8192, system_flags(0));
    int ok = e != NULL && buf != NULL && queue_create(&q, 1);
    if (!ok) {
        if (!why[0]) snprintf(why, sizeof why, "setup failed");
        goto out;
    }
    uint8_t *src = buf, *dst = buf + 4096;
    volatile uint32_t *fence = (volatile uint32_t *)(buf + 8192 - 64);
    for (int i = 0; i < 1024; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    memset(dst, 0, 1024);
    *fence = 0;
    uint64_t s = (uint64_t)(uintptr_t)src, d = (uint64_t)(uintptr_t)dst, f = (uint64_t)(uintptr_t)fence;
    uint32_t copy[] = {SDMA_OP_COPY, 1024 - 1, 0, (uint32_t)s, (uint32_t)(s >> 32), (uint32_t)d, (uint32_t)(d >> 32)};
    queue_put(&q, copy, 7);
    uint32_t fence_pkt[] = {SDMA_OP_FENCE, (uint32_t)f, (uint32_t)(f >> 32), 0x600dcafe};
    queue_put(&q, fence_pkt, 4);
    uint64_t slot = e->EventData.HWData2;
    uint32_t slot_fence[] = {SDMA_OP_FENCE, (uint32_t)slot, (uint32_t)(slot >> 32), e->EventId};
    queue_put(&q, slot_fence, 4);
    uint32_t trap[] = {SDMA_OP_TRAP, e->EventId & 0x0fffffff};
    queue_put(&q, trap, 2);
    queue_submit(&q);
    HSAKMT_STATUS st = hsaKmtWaitOnEvent(e, 2000);
    if (st != HSAKMT_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "event not signaled: wait = %d (rptr %llu, wptr %llu bytes)", st,
                 (unsigned long long)*q.rptr, (unsigned long long)q.wptr);
        ok = 0;
    } else if (memcmp(src, dst, 1024) != 0) {
        snprintf(why, sizeof why, "COPY_LINEAR: destination differs from source");
        ok = 0;
    } else if (*fence != 0x600dcafe) {
        snprintf(why, sizeof why, "FENCE wrote %08x", *fence);
        ok = 0;
    } else if (!poll_u64(q.rptr, ~0ull, q.wptr, 1000)) {
        snprintf(why, sizeof why, "read pointer %llu bytes, want %llu", (unsigned long long)*q.rptr,
                 (unsigned long long)q.wptr);
        ok = 0;
    }
    queue_destroy(&q);
out:
    if (buf) free_mapped(buf, 8192);
    if (e) hsaKmtDestroyEvent(e);
    return ok;
}

/* ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--skip") == 0 && i + 1 < argc)
            skip_list = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--skip case,case,...]\n", argv[0]);
            return 2;
        }
    }
    const char *preset = env_or("KFD_MODEL_PRESET", "gfx900");
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strcmp(parts[i].name, preset) == 0)
            part = &parts[i];
    if (!part) {
        fprintf(stderr, "unknown KFD_MODEL_PRESET %s\n", preset);
        return 2;
    }
    gpus = (unsigned)atoi(env_or("KFD_MODEL_GPUS", "1"));
    family_gfx10 = part->major >= 10;
    printf("libhsakmt on the kfd model: %u x %s\n", gpus, part->name);

    run("open_close", t_open_close);
    run("topology_system", t_topology_system);
    run("topology_nodes", t_topology_nodes);
    run("topology_memory", t_topology_memory);
    run("topology_caches", t_topology_caches);
    run("topology_io_links", t_topology_io_links);
    run("memory_system_alloc_map_free", t_memory_system);
    run("memory_vram_alloc_map_free", t_memory_vram);
    run("queue_pm4_create_destroy", t_queue_pm4_create_destroy);
    run("queue_sdma_create_destroy", t_queue_sdma_create_destroy);
    run("event_set_wait", t_event_set_wait);
    run("event_wait_timeout", t_event_wait_timeout);
    run("pm4_write_data_release_mem_event", t_pm4_write_data_release_mem);
    run("sdma_copy_fence_trap_event", t_sdma_copy_fence_trap);

    hsaKmtReleaseSystemProperties();
    hsaKmtCloseKFD();
    if (skipped)
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else
        printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
