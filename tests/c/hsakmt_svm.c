/*
 * Debian's unmodified libhsakmt (5.2.3) using the SVM API on the kfd model through the
 * LD_PRELOAD shim: hsaKmtSVMSetAttr / hsaKmtSVMGetAttr / hsaKmtSetXNACKMode /
 * hsaKmtGetXNACKMode, the SVMAPISupported capability, prefetch to VRAM and back with the
 * bytes intact, an SDMA write into an SVM range, and (on parts with per-process XNACK) a
 * recoverable GPU fault; SMI events of a migration read from the AMDKFD_IOC_SMI_EVENTS file;
 * fork (the child's copy of a VRAM-resident range is its own) and mprotect read-only (the
 * GPU still writes the other page, not the protected one).
 *
 * Build: gcc -O2 -Wall -Wextra -o hsakmt_svm hsakmt_svm.c -lhsakmt
 * Run:   KFD_MODEL_PRESET=gfx90a LD_PRELOAD=.../libkfd_preload.so ./hsakmt_svm
 *
 * Every case prints "PASS name" or "FAIL name: why"; the last line is "N passed, M failed".
 * libhsakmt takes node ids where the driver takes gpu ids (0 = system memory) and gives
 * node ids back; a location the ranges disagree on comes back as 0xffffffff.
 */
#define _GNU_SOURCE
#include <hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;
static char why[512];

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            snprintf(why, sizeof why, __VA_ARGS__);                                        \
            return 0;                                                                      \
        }                                                                                  \
    } while (0)

#define CHECK_IS(call, want)                                                               \
    do {                                                                                   \
        HSAKMT_STATUS s_ = (call);                                                         \
        CHECK(s_ == (want), "%s = %d, want %d (line %d)", #call, (int)s_, (int)(want),     \
              __LINE__);                                                                   \
    } while (0)

#define CHECK_OK(call) CHECK_IS(call, HSAKMT_STATUS_SUCCESS)

static void run(const char *name, int (*fn)(void))
{
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

/* From linux/kfd_ioctl.h (which needs the kernel's drm/drm.h, not installed here). */
struct kfd_ioctl_smi_events_args {
    uint32_t gpuid;
    uint32_t anon_fd;
};
#define AMDKFD_IOC_SMI_EVENTS _IOWR('K', 0x1F, struct kfd_ioctl_smi_events_args)
#define KFD_SMI_EVENT_MIGRATE_START 5
#define KFD_SMI_EVENT_MIGRATE_END 6
#define KFD_SMI_EVENT_MASK_FROM_INDEX(i) (1ULL << ((i) - 1))

#define PAGE 4096u
#define GPU_NODE 1u
#define UNDEFINED_NODE 0xffffffffu

static int xnack_capable; /* per-process XNACK: GC 9.4.2 (gfx90a) */

static uint32_t *map_pages(unsigned n)
{
    void *p = mmap(NULL, (size_t)n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static HSA_SVM_ATTRIBUTE attr(HSAuint32 type, HSAuint32 value)
{
    HSA_SVM_ATTRIBUTE a = {type, value};
    return a;
}

/* ---------------------------------------------------------------------------------------- */

static int t_capability(void)
{
    HsaNodeProperties p;
    CHECK_OK(hsaKmtGetNodeProperties(GPU_NODE, &p));
    CHECK(p.Capability.ui32.SVMAPISupported == 1, "SVMAPISupported is %u",
          p.Capability.ui32.SVMAPISupported);
    return 1;
}

static int t_xnack_mode(void)
{
    HSAint32 on = -1;
    CHECK_OK(hsaKmtGetXNACKMode(&on));
    CHECK(on == 0, "XNACK starts %d, want 0", on);
    if (!xnack_capable) {
        /* The driver says EPERM; libhsakmt turns that into NOT_SUPPORTED. */
        CHECK_IS(hsaKmtSetXNACKMode(1), HSAKMT_STATUS_NOT_SUPPORTED);
        return 1;
    }
    CHECK_OK(hsaKmtSetXNACKMode(1));
    CHECK_OK(hsaKmtGetXNACKMode(&on));
    CHECK(on == 1, "XNACK %d after turning it on", on);
    CHECK_OK(hsaKmtSetXNACKMode(0));
    CHECK_OK(hsaKmtGetXNACKMode(&on));
    CHECK(on == 0, "XNACK %d after turning it off", on);
    return 1;
}

static int t_set_get_split_ranges(void)
{
    uint32_t *m = map_pages(4);
    CHECK(m != NULL, "mmap failed");
    HSA_SVM_ATTRIBUTE set[] = {
        attr(HSA_SVM_ATTR_ACCESS, GPU_NODE),
        attr(HSA_SVM_ATTR_PREFERRED_LOC, 0),
    };
    CHECK_OK(hsaKmtSVMSetAttr(m, 4 * PAGE, 2, set));
    /* The middle two pages differ: read-only for the GPU, granularity 2, preferred on the GPU. */
    HSA_SVM_ATTRIBUTE mid[] = {
        attr(HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_GPU_RO),
        attr(HSA_SVM_ATTR_GRANULARITY, 2),
        attr(HSA_SVM_ATTR_PREFERRED_LOC, GPU_NODE),
    };
    CHECK_OK(hsaKmtSVMSetAttr((char *)m + PAGE, 2 * PAGE, 3, mid));
    HSA_SVM_ATTRIBUTE get[] = {
        attr(HSA_SVM_ATTR_PREFERRED_LOC, 0), attr(HSA_SVM_ATTR_SET_FLAGS, 0),
        attr(HSA_SVM_ATTR_CLR_FLAGS, 0),     attr(HSA_SVM_ATTR_GRANULARITY, 0),
        attr(HSA_SVM_ATTR_ACCESS, GPU_NODE),
    };
    CHECK_OK(hsaKmtSVMGetAttr(m, 4 * PAGE, 5, get));
    const HSAuint32 dflt = HSA_SVM_FLAG_HOST_ACCESS | HSA_SVM_FLAG_COHERENT;
    CHECK(get[0].value == UNDEFINED_NODE, "preferred over disagreeing ranges: %#x", get[0].value);
    CHECK(get[1].value == dflt, "SET_FLAGS (all have) %#x, want %#x", get[1].value, dflt);
    CHECK(get[2].value == ~(dflt | HSA_SVM_FLAG_GPU_RO), "CLR_FLAGS (none has) %#x", get[2].value);
    CHECK(get[3].value == 2, "granularity %u, want the smallest (2)", get[3].value);
    CHECK(get[4].type == HSA_SVM_ATTR_ACCESS, "access type %u", get[4].type);
    HSA_SVM_ATTRIBUTE one[] = {attr(HSA_SVM_ATTR_PREFERRED_LOC, 0), attr(HSA_SVM_ATTR_SET_FLAGS, 0)};
    CHECK_OK(hsaKmtSVMGetAttr((char *)m + PAGE, 2 * PAGE, 2, one));
    CHECK(one[0].value == GPU_NODE, "preferred of the middle: node %u", one[0].value);
    CHECK(one[1].value == (dflt | HSA_SVM_FLAG_GPU_RO), "middle flags %#x", one[1].value);
    munmap(m, 4 * PAGE);
    return 1;
}

static int t_errors(void)
{
    uint32_t *m = map_pages(2);
    CHECK(m != NULL, "mmap failed");
    HSA_SVM_ATTRIBUTE a = attr(HSA_SVM_ATTR_ACCESS, GPU_NODE);
    /* libhsakmt's own checks. */
    CHECK_IS(hsaKmtSVMSetAttr((char *)m + 8, PAGE, 1, &a), HSAKMT_STATUS_INVALID_PARAMETER);
    HSA_SVM_ATTRIBUTE cpu = attr(HSA_SVM_ATTR_ACCESS, 0);
    CHECK_IS(hsaKmtSVMSetAttr(m, PAGE, 1, &cpu), HSAKMT_STATUS_INVALID_NODE_UNIT);
    /* The driver's: an unknown attribute type (EINVAL), memory the CPU does not map (EFAULT). */
    HSA_SVM_ATTRIBUTE bad = attr(8, 0);
    CHECK_IS(hsaKmtSVMSetAttr(m, PAGE, 1, &bad), HSAKMT_STATUS_ERROR);
    munmap(m, 2 * PAGE);
    CHECK_IS(hsaKmtSVMSetAttr(m, PAGE, 1, &a), HSAKMT_STATUS_ERROR);
    return 1;
}

/* munmap is the MMU notifier's event: the range goes with the pages. Memory mapped again at
 * the same address is not an SVM range (the shim tells the driver model before the pages go;
 * without that the model could not tell the new pages from the old). */
static int t_munmap_drops_the_range(void)
{
    uint32_t *m = map_pages(2);
    CHECK(m != NULL, "mmap failed");
    HSA_SVM_ATTRIBUTE set[] = {attr(HSA_SVM_ATTR_ACCESS, GPU_NODE), attr(HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_GPU_RO)};
    CHECK_OK(hsaKmtSVMSetAttr(m, 2 * PAGE, 2, set));
    munmap(m, 2 * PAGE);
    void *again = mmap(m, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    CHECK(again == (void *)m, "could not map the same address again");
    HSA_SVM_ATTRIBUTE get[] = {attr(HSA_SVM_ATTR_ACCESS, GPU_NODE), attr(HSA_SVM_ATTR_SET_FLAGS, 0)};
    CHECK_OK(hsaKmtSVMGetAttr(m, 2 * PAGE, 2, get));
    munmap(m, 2 * PAGE);
    CHECK(get[0].type == HSA_SVM_ATTR_NO_ACCESS, "access type %u after munmap, want NO_ACCESS", get[0].type);
    CHECK(get[1].value == (HSA_SVM_FLAG_HOST_ACCESS | HSA_SVM_FLAG_COHERENT), "flags %#x: the old range survived", get[1].value);
    return 1;
}

/* --- SDMA ------------------------------------------------------------------------------- */

#define SDMA_OP_FENCE 5

struct queue {
    HsaQueueResource res;
    uint32_t *ring;
    volatile uint64_t *pointers;
    uint64_t wptr; /* bytes */
};

static void *alloc_gtt(HSAuint64 size, int exec)
{
    HsaMemFlags f = {0};
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.HostAccess = 1;
    f.ui32.NoNUMABind = 1;
    f.ui32.ExecuteAccess = exec;
    void *p = NULL;
    HSAuint64 va = 0;
    if (hsaKmtAllocMemory(GPU_NODE, size, f, &p) != HSAKMT_STATUS_SUCCESS)
        return NULL;
    if (hsaKmtMapMemoryToGPU(p, size, &va) != HSAKMT_STATUS_SUCCESS) {
        hsaKmtFreeMemory(p, size);
        return NULL;
    }
    return p;
}

static void free_gtt(void *p, HSAuint64 size)
{
    hsaKmtUnmapMemoryToGPU(p);
    hsaKmtFreeMemory(p, size);
}

static int sdma_create(struct queue *q)
{
    memset(q, 0, sizeof *q);
    q->ring = alloc_gtt(PAGE, 1);
    q->pointers = alloc_gtt(PAGE, 0);
    if (!q->ring || !q->pointers) {
        snprintf(why, sizeof why, "queue buffers");
        return 0;
    }
    memset(q->ring, 0, PAGE);
    q->res.QueueRptrValue = (HSAuint64)(uintptr_t)&q->pointers[0];
    q->res.QueueWptrValue = (HSAuint64)(uintptr_t)&q->pointers[8];
    HSAKMT_STATUS s = hsaKmtCreateQueue(GPU_NODE, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                        q->ring, PAGE, NULL, &q->res);
    if (s != HSAKMT_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "hsaKmtCreateQueue(SDMA) = %d", s);
        return 0;
    }
    return 1;
}

static void sdma_destroy(struct queue *q)
{
    if (q->res.QueueId)
        hsaKmtDestroyQueue(q->res.QueueId);
    if (q->ring)
        free_gtt(q->ring, PAGE);
    if (q->pointers)
        free_gtt((void *)q->pointers, PAGE);
}

/* FENCE: the SDMA engine writes `value` at `addr`; then publish and ring. */
static void sdma_fence(struct queue *q, const volatile uint32_t *addr, uint32_t value)
{
    uint64_t a = (uint64_t)(uintptr_t)addr;
    uint32_t pkt[] = {SDMA_OP_FENCE, (uint32_t)a, (uint32_t)(a >> 32), value};
    for (unsigned i = 0; i < 4; i++)
        q->ring[(q->wptr / 4 + i) % (PAGE / 4)] = pkt[i];
    q->wptr += sizeof pkt;
    __atomic_store_n((volatile uint64_t *)q->res.Queue_write_ptr_aql, q->wptr, __ATOMIC_RELEASE);
    __atomic_store_n(q->res.Queue_DoorBell_aql, q->wptr, __ATOMIC_RELEASE);
}

static int wait_u32(const volatile uint32_t *p, uint32_t want, int ms)
{
    double end = now_ms() + ms;
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != want)
        if (now_ms() > end)
            return 0;
    return 1;
}

static int t_prefetch_both_ways_with_sdma(void)
{
    const unsigned pages = 2, words = pages * PAGE / 4;
    uint32_t *m = map_pages(pages);
    CHECK(m != NULL, "mmap failed");
    for (unsigned i = 0; i < words; i++)
        m[i] = 0x51f70000u ^ i;
    struct queue q;
    int ok = sdma_create(&q);
    if (!ok)
        return 0;
    HSA_SVM_ATTRIBUTE to_gpu[] = {attr(HSA_SVM_ATTR_ACCESS, GPU_NODE), attr(HSA_SVM_ATTR_PREFETCH_LOC, GPU_NODE)};
    HSAKMT_STATUS s = hsaKmtSVMSetAttr(m, pages * PAGE, 2, to_gpu);
    HSA_SVM_ATTRIBUTE where = attr(HSA_SVM_ATTR_PREFETCH_LOC, 0);
    if (s == HSAKMT_STATUS_SUCCESS)
        s = hsaKmtSVMGetAttr(m, pages * PAGE, 1, &where);
    if (s != HSAKMT_STATUS_SUCCESS || where.value != GPU_NODE) {
        snprintf(why, sizeof why, "prefetch to the GPU: status %d, location %#x", s, where.value);
        ok = 0;
    }
    for (unsigned i = 0; ok && i < words; i++)
        if (m[i] != (0x51f70000u ^ i)) {
            snprintf(why, sizeof why, "in VRAM, word %u reads %#x", i, m[i]);
            ok = 0;
        }
    if (ok) {
        sdma_fence(&q, &m[4], 0xfeed0001);
        if (!wait_u32(&m[4], 0xfeed0001, 2000)) {
            snprintf(why, sizeof why, "SDMA FENCE into VRAM-resident SVM memory: %#x", m[4]);
            ok = 0;
        }
    }
    HSA_SVM_ATTRIBUTE back = attr(HSA_SVM_ATTR_PREFETCH_LOC, 0);
    if (ok && hsaKmtSVMSetAttr(m, pages * PAGE, 1, &back) != HSAKMT_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "prefetch back to system memory failed");
        ok = 0;
    }
    if (ok) {
        sdma_fence(&q, &m[5], 0xfeed0002);
        if (!wait_u32(&m[5], 0xfeed0002, 2000)) {
            snprintf(why, sizeof why, "SDMA FENCE after moving back: %#x", m[5]);
            ok = 0;
        }
    }
    for (unsigned i = 0; ok && i < words; i++) {
        uint32_t want = i == 4 ? 0xfeed0001 : i == 5 ? 0xfeed0002 : 0x51f70000u ^ i;
        if (m[i] != want) {
            snprintf(why, sizeof why, "back in system memory, word %u reads %#x, want %#x", i, m[i], want);
            ok = 0;
        }
    }
    sdma_destroy(&q);
    munmap(m, pages * PAGE);
    return ok;
}

/* XNACK on: the range is accessible but not mapped until the GPU touches it; the write
 * faults, the driver maps it, and the SDMA engine retries the FENCE. */
static int t_xnack_recoverable_fault(void)
{
    CHECK_OK(hsaKmtSetXNACKMode(1));
    uint32_t *m = map_pages(1);
    CHECK(m != NULL, "mmap failed");
    m[1] = 0x1234;
    HSA_SVM_ATTRIBUTE pref = attr(HSA_SVM_ATTR_PREFERRED_LOC, GPU_NODE);
    CHECK_OK(hsaKmtSVMSetAttr(m, PAGE, 1, &pref));
    struct queue q;
    int ok = sdma_create(&q);
    if (ok && hsaKmtSetXNACKMode(0) != HSAKMT_STATUS_ERROR) {
        snprintf(why, sizeof why, "XNACK changed while a queue exists");
        ok = 0;
    }
    if (ok) {
        sdma_fence(&q, &m[0], 0xfa017ed);
        if (!wait_u32(&m[0], 0xfa017ed, 2000) || m[1] != 0x1234) {
            snprintf(why, sizeof why, "after the fault: word 0 %#x, word 1 %#x", m[0], m[1]);
            ok = 0;
        }
    }
    sdma_destroy(&q);
    munmap(m, PAGE);
    if (ok && hsaKmtSetXNACKMode(0) != HSAKMT_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "XNACK off after the queue is gone");
        ok = 0;
    }
    return ok;
}

/* AMDKFD_IOC_SMI_EVENTS on our own /dev/kfd descriptor (the same kfd_process as
 * libhsakmt's): a migration to VRAM and back is reported as MIGRATE_START/END lines,
 * "<id> <ns> -<pid> @<page>(<pages>) <from>-><to> ...", gpu ids in hex, 0 = system memory. */
static int t_smi_migration_events(void)
{
    /* The gpu_id of node 1, from the topology in sysfs (the shim serves it). */
    unsigned gpu = 0;
    FILE *f = fopen("/sys/devices/virtual/kfd/kfd/topology/nodes/1/gpu_id", "r");
    CHECK(f != NULL, "gpu_id of node 1: %s", strerror(errno));
    int got_id = fscanf(f, "%u", &gpu);
    fclose(f);
    CHECK(got_id == 1 && gpu != 0, "gpu_id of node 1 unreadable");
    int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
    CHECK(kfd >= 0, "open /dev/kfd: %s", strerror(errno));
    struct kfd_ioctl_smi_events_args a = {.gpuid = gpu};
    int r = ioctl(kfd, AMDKFD_IOC_SMI_EVENTS, &a);
    close(kfd);
    CHECK(r == 0, "AMDKFD_IOC_SMI_EVENTS: %s", strerror(errno));
    int fd = (int)a.anon_fd;
    char buf[1024];
    CHECK(read(fd, buf, sizeof buf) == -1 && errno == EAGAIN, "an empty SMI file reads EAGAIN");
    uint64_t mask = KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_MIGRATE_START) |
                    KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_MIGRATE_END);
    CHECK(write(fd, &mask, sizeof mask) == (ssize_t)sizeof mask, "mask write");
    uint32_t *m = map_pages(2);
    CHECK(m != NULL, "mmap failed");
    HSA_SVM_ATTRIBUTE to_gpu[] = {attr(HSA_SVM_ATTR_ACCESS, GPU_NODE), attr(HSA_SVM_ATTR_PREFETCH_LOC, GPU_NODE)};
    HSA_SVM_ATTRIBUTE back = attr(HSA_SVM_ATTR_PREFETCH_LOC, 0);
    int ok = hsaKmtSVMSetAttr(m, 2 * PAGE, 2, to_gpu) == HSAKMT_STATUS_SUCCESS &&
             hsaKmtSVMSetAttr(m, 2 * PAGE, 1, &back) == HSAKMT_STATUS_SUCCESS;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    munmap(m, 2 * PAGE);
    CHECK(ok, "prefetch to the GPU and back failed");
    CHECK(n > 0, "no SMI events (read %zd, errno %d)", n, errno);
    buf[n] = '\0';
    unsigned long page = (unsigned long)(uintptr_t)m >> 12;
    char want[4][96];
    snprintf(want[0], sizeof want[0], "5 @%lx(2) 0->%x", page, gpu);
    snprintf(want[1], sizeof want[1], "6 @%lx(2) 0->%x 0", page, gpu);
    snprintf(want[2], sizeof want[2], "5 @%lx(2) %x->0", page, gpu);
    snprintf(want[3], sizeof want[3], "6 @%lx(2) %x->0 0", page, gpu);
    char *line = buf;
    for (int i = 0; i < 4; i++) {
        char *nl = strchr(line, '\n');
        CHECK(nl != NULL, "line %d missing in %.200s", i, buf);
        *nl = '\0';
        /* "<id> <ns> -<pid> <rest>": drop the timestamp and pid */
        unsigned id = 0;
        long long ns = 0;
        int pid = 0, used = 0;
        CHECK(sscanf(line, "%x %lld -%d %n", &id, &ns, &pid, &used) == 3 && ns > 0 && pid == getpid(),
              "line %d: %.200s", i, line);
        char got[128];
        snprintf(got, sizeof got, "%x %s", id, line + used);
        CHECK(strncmp(got, want[i], strlen(want[i])) == 0, "line %d: %.120s, want %.96s...", i, got, want[i]);
        line = nl + 1;
    }
    CHECK(*line == '\0', "more events than the migrations: %.200s", line);
    return 1;
}

/* fork: the child's copy of a range in VRAM is its own (its write stays in the child, it
 * reads the parent's bytes), and the parent's GPU keeps writing the parent's pages. */
static int t_fork_keeps_the_parent_mapping(void)
{
    uint32_t *m = map_pages(2);
    CHECK(m != NULL, "mmap failed");
    m[0] = 0xaaaa;
    struct queue q;
    int ok = sdma_create(&q);
    HSA_SVM_ATTRIBUTE to_gpu[] = {attr(HSA_SVM_ATTR_ACCESS, GPU_NODE), attr(HSA_SVM_ATTR_PREFETCH_LOC, GPU_NODE)};
    if (ok && hsaKmtSVMSetAttr(m, 2 * PAGE, 2, to_gpu) != HSAKMT_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "prefetch to the GPU failed");
        ok = 0;
    }
    if (ok) {
        pid_t child = fork();
        if (child == 0) {
            int seen = m[0] == 0xaaaa;
            m[0] = 0xc0de;
            _exit(seen && m[0] == 0xc0de ? 0 : 1);
        }
        int status = -1;
        if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            snprintf(why, sizeof why, "the child did not read the parent's bytes (status %#x)", status);
            ok = 0;
        } else if (m[0] != 0xaaaa) {
            snprintf(why, sizeof why, "the child's write reached the parent: %#x", m[0]);
            ok = 0;
        }
    }
    if (ok) {
        sdma_fence(&q, &m[2], 0xf0f0);
        if (!wait_u32(&m[2], 0xf0f0, 2000)) {
            snprintf(why, sizeof why, "SDMA FENCE after fork: %#x", m[2]);
            ok = 0;
        }
    }
    sdma_destroy(&q);
    munmap(m, 2 * PAGE);
    return ok;
}

/* mprotect read-only (XNACK off): the GPU mapping follows; the GPU writes the page that stayed
 * writable and not the protected one (its write is a VM fault, so this case runs last). */
static int t_mprotect_read_only(void)
{
    uint32_t *m = map_pages(2);
    CHECK(m != NULL, "mmap failed");
    struct queue q;
    int ok = sdma_create(&q);
    HSA_SVM_ATTRIBUTE acc = attr(HSA_SVM_ATTR_ACCESS, GPU_NODE);
    if (ok && hsaKmtSVMSetAttr(m, 2 * PAGE, 1, &acc) != HSAKMT_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "SVMSetAttr failed");
        ok = 0;
    }
    if (ok && mprotect(m, PAGE, PROT_READ) != 0) {
        snprintf(why, sizeof why, "mprotect: %s", strerror(errno));
        ok = 0;
    }
    if (ok) {
        sdma_fence(&q, &m[PAGE / 4], 0x600d);
        if (!wait_u32(&m[PAGE / 4], 0x600d, 2000)) {
            snprintf(why, sizeof why, "SDMA FENCE into the writable page: %#x", m[PAGE / 4]);
            ok = 0;
        }
    }
    if (ok) {
        sdma_fence(&q, &m[0], 0xbad);
        if (wait_u32(&m[0], 0xbad, 300)) {
            snprintf(why, sizeof why, "the GPU wrote a page the CPU made read-only");
            ok = 0;
        }
    }
    sdma_destroy(&q);
    mprotect(m, PAGE, PROT_READ | PROT_WRITE);
    munmap(m, 2 * PAGE);
    return ok;
}

int main(void)
{
    const char *preset = getenv("KFD_MODEL_PRESET");
    xnack_capable = preset && strcmp(preset, "gfx90a") == 0;
    printf("libhsakmt SVM on the kfd model: %s\n", preset ? preset : "(default)");
    if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS) {
        printf("FAIL open\n0 passed, 1 failed\n");
        return 1;
    }
    HsaSystemProperties sys;
    if (hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
        printf("FAIL topology\n0 passed, 1 failed\n");
        return 1;
    }
    run("svm_capability", t_capability);
    run("xnack_mode", t_xnack_mode);
    run("svm_set_get_split_ranges", t_set_get_split_ranges);
    run("svm_errors", t_errors);
    run("svm_munmap_drops_the_range", t_munmap_drops_the_range);
    run("svm_prefetch_both_ways_with_sdma", t_prefetch_both_ways_with_sdma);
    if (xnack_capable)
        run("svm_xnack_recoverable_fault", t_xnack_recoverable_fault);
    run("svm_smi_migration_events", t_smi_migration_events);
    run("svm_fork_keeps_the_parent_mapping", t_fork_keeps_the_parent_mapping);
    run("svm_mprotect_read_only", t_mprotect_read_only); /* last: ends in a VM fault */
    hsaKmtReleaseSystemProperties();
    hsaKmtCloseKFD();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
