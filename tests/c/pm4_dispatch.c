/*
 * A kfdtest-style C client of Debian's unmodified libhsakmt that runs a hand-written shader
 * through PM4 DISPATCH_DIRECT on a compute queue of the kfd model (LD_PRELOAD shim).
 *
 * Build: gcc -O2 -Wall -Wextra -o pm4_dispatch pm4_dispatch.c -lhsakmt
 * Run:   KFD_MODEL_PRESET=gfx900 LD_PRELOAD=.../libkfd_preload.so ./pm4_dispatch shader.bin
 *
 * shader.bin is the raw code of tests/c/pm4_dispatch.s (assembled by llvm-mc-15 for the
 * preset's gfx target and cut out with llvm-objcopy-15 -O binary --only-section=.text).
 * The ring carries SET_SH_REG (COMPUTE_PGM_LO/HI = code address >> 8, COMPUTE_PGM_RSRC1/2,
 * COMPUTE_USER_DATA_0..3, COMPUTE_NUM_THREAD_X/Y/Z), DISPATCH_DIRECT (16 x 1 x 1 groups,
 * COMPUTE_SHADER_EN), then RELEASE_MEM end-of-pipe with an interrupt for an event. Register
 * addresses are gfx9's (SH base 0x2C00). Every result is compared with the host's own
 * computation; prints "pm4_dispatch: ok" and exits 0, else names the first mismatch and
 * exits 1.
 */
#define _GNU_SOURCE
#include <hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PM4_HDR(op, count) ((3u << 30) | (((count)&0x3fffu) << 16) | ((op) << 8))
#define PM4_SET_SH_REG 0x76
#define PM4_DISPATCH_DIRECT 0x15
#define PM4_RELEASE_MEM 0x49
#define SH_REG_BASE 0x2C00u
#define COMPUTE_NUM_THREAD_X 0x2E07u
#define COMPUTE_PGM_LO 0x2E0Cu
#define COMPUTE_PGM_RSRC1 0x2E12u
#define COMPUTE_USER_DATA_0 0x2E40u

enum { GROUPS = 16, LOCAL = 64, N = GROUPS * LOCAL, MUL = 7, ADD = 12345 };

static unsigned gpu_node;

static void *alloc_mapped(HSAuint64 size, int exec)
{
    HsaMemFlags f = {0};
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.HostAccess = 1;
    f.ui32.NoNUMABind = 1;
    f.ui32.ExecuteAccess = exec;
    void *p = NULL;
    HSAuint64 gpu_va = 0;
    if (hsaKmtAllocMemory(gpu_node, size, f, &p) != HSAKMT_STATUS_SUCCESS)
        return NULL;
    if (hsaKmtMapMemoryToGPU(p, size, &gpu_va) != HSAKMT_STATUS_SUCCESS)
        return NULL;
    return p;
}

static uint32_t ring_dw[1024];
static unsigned ring_n;

static void put(const uint32_t *dw, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        ring_dw[ring_n++] = dw[i];
}

static void set_sh_reg(uint32_t reg, const uint32_t *values, unsigned n)
{
    uint32_t hdr[2] = {PM4_HDR(PM4_SET_SH_REG, n), reg - SH_REG_BASE};
    put(hdr, 2);
    put(values, n);
}

#define FAIL(...)                                                                          \
    do {                                                                                   \
        printf("pm4_dispatch: " __VA_ARGS__);                                              \
        printf("\n");                                                                      \
        return 1;                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s shader.bin\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        FAIL("cannot open %s", argv[1]);
    uint8_t code_bytes[4096];
    size_t code_len = fread(code_bytes, 1, sizeof code_bytes, f);
    fclose(f);
    if (code_len == 0 || code_len % 4)
        FAIL("%s: %zu bytes is not a shader", argv[1], code_len);

    if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS)
        FAIL("hsaKmtOpenKFD failed");
    HsaSystemProperties sys;
    if (hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS)
        FAIL("hsaKmtAcquireSystemProperties failed");
    for (unsigned n = 0; n < sys.NumNodes && !gpu_node; n++) {
        HsaNodeProperties props;
        if (hsaKmtGetNodeProperties(n, &props) == HSAKMT_STATUS_SUCCESS && props.NumFComputeCores)
            gpu_node = n;
    }
    if (!gpu_node)
        FAIL("no GPU node");

    uint8_t *code = alloc_mapped(4096, 1);
    uint32_t *out = alloc_mapped(8192, 0);
    uint32_t *ring = alloc_mapped(4096, 1);
    volatile uint64_t *pointers = alloc_mapped(4096, 0);
    if (!code || !out || !ring || !pointers)
        FAIL("allocating GPU-mapped memory failed");
    memcpy(code, code_bytes, code_len);
    memset(out, 0xee, 8192);
    out[1024] = 0;

    HsaEventDescriptor ed = {.EventType = HSA_EVENTTYPE_SIGNAL, .NodeId = gpu_node};
    HsaEvent *event = NULL;
    if (hsaKmtCreateEvent(&ed, false, false, &event) != HSAKMT_STATUS_SUCCESS)
        FAIL("hsaKmtCreateEvent failed");

    HsaQueueResource res = {0};
    res.QueueRptrValue = (HSAuint64)(uintptr_t)&pointers[0];
    res.QueueWptrValue = (HSAuint64)(uintptr_t)&pointers[8];
    memset(ring, 0, 4096);
    if (hsaKmtCreateQueue(gpu_node, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096,
                          NULL, &res) != HSAKMT_STATUS_SUCCESS)
        FAIL("hsaKmtCreateQueue failed");

    uint64_t pgm = (uint64_t)(uintptr_t)code >> 8, o = (uint64_t)(uintptr_t)out;
    uint32_t pgm_lo_hi[2] = {(uint32_t)pgm, (uint32_t)(pgm >> 32)};
    /* RSRC1: VGPRS 1 (8 or 16 VGPRs), SGPRS 2 (24), FLOAT_MODE 0xF0, DX10_CLAMP, IEEE.
     * RSRC2: USER_SGPR 4 (bits 5:1), TGID_X_EN (bit 7). */
    uint32_t rsrc[2] = {1u | (2u << 6) | (0xF0u << 12) | (1u << 21) | (1u << 23), (4u << 1) | (1u << 7)};
    uint32_t user[4] = {(uint32_t)o, (uint32_t)(o >> 32), MUL, ADD};
    uint32_t threads[3] = {LOCAL, 1, 1};
    set_sh_reg(COMPUTE_PGM_LO, pgm_lo_hi, 2);
    set_sh_reg(COMPUTE_PGM_RSRC1, rsrc, 2);
    set_sh_reg(COMPUTE_USER_DATA_0, user, 4);
    set_sh_reg(COMPUTE_NUM_THREAD_X, threads, 3);
    uint32_t dispatch[5] = {PM4_HDR(PM4_DISPATCH_DIRECT, 3), GROUPS, 1, 1, 1 /* COMPUTE_SHADER_EN */};
    put(dispatch, 5);
    /* RELEASE_MEM: end-of-pipe (event 0x14, index 5), data_sel 1 (32-bit event id to the
     * event slot), int_sel 2 (interrupt after the write confirms), int_ctxid = event id. */
    uint64_t slot = event->EventData.HWData2;
    uint32_t rm[8] = {PM4_HDR(PM4_RELEASE_MEM, 6), 0x00028514u, (2u << 24) | (1u << 29), (uint32_t)slot,
                      (uint32_t)(slot >> 32), event->EventId, 0, event->EventId};
    put(rm, 8);
    memcpy(ring, ring_dw, ring_n * 4);
    volatile uint64_t *wptr = (volatile uint64_t *)res.Queue_write_ptr_aql;
    __atomic_store_n(wptr, (uint64_t)ring_n, __ATOMIC_RELEASE);
    __atomic_store_n(res.Queue_DoorBell_aql, (uint64_t)ring_n, __ATOMIC_RELEASE);

    HSAKMT_STATUS s = hsaKmtWaitOnEvent(event, 10000);
    if (s != HSAKMT_STATUS_SUCCESS)
        FAIL("the RELEASE_MEM event after the dispatch did not arrive (wait = %d)", s);
    for (uint32_t i = 0; i < N; i++)
        if (out[i] != i * MUL + ADD)
            FAIL("out[%u] = %u, want %u", i, out[i], i * MUL + ADD);
    if (out[1024] != GROUPS)
        FAIL("%u workgroups counted themselves, want %u", out[1024], GROUPS);
    if (out[1025] != 0xeeeeeeeeu)
        FAIL("the shader wrote past its buffer");
    hsaKmtDestroyQueue(res.QueueId);
    hsaKmtDestroyEvent(event);
    hsaKmtCloseKFD();
    printf("pm4_dispatch: ok (%u work-items in %u workgroups)\n", N, GROUPS);
    return 0;
}
