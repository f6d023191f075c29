/*
 * Times an empty-kernel dispatch through ROCr's own path (hsa_queue_create, an AQL
 * KERNEL_DISPATCH packet written in place, hsa_signal_store_screlease on the doorbell,
 * hsa_signal_wait_scacquire with HSA_WAIT_STATE_ACTIVE), on the kfd model through the
 * LD_PRELOAD shim — the ROCr side of the "dispatch_empty_kernel" row that `kfd bench --ops`
 * times with the thunk (AqlQueue::dispatch + Completion::wait_polling).
 *
 * Usage: hsa_dispatch_bench [-b BATCHES] [-s SCALE] CODE_OBJECT
 * CODE_OBJECT holds a kernel named "empty" with no arguments (cli/kernels/empty.cl).
 * Prints "dispatch_empty_kernel <median ns/op> <batches>x<iterations> <fastest batch's ns/op>".
 * Build: gcc -O2 -o hsa_dispatch_bench hsa_dispatch_bench.c -lhsa-runtime64
 */
#define _GNU_SOURCE
#include <hsa/hsa.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_BATCHES 1000

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

#define OK(call)                                                                           \
    do {                                                                                   \
        hsa_status_t s_ = (call);                                                          \
        if (s_ != HSA_STATUS_SUCCESS) {                                                    \
            const char *m_ = NULL;                                                         \
            hsa_status_string(s_, &m_);                                                    \
            fprintf(stderr, "hsa_dispatch_bench: %s failed: %s\n", #call, m_ ? m_ : "?");  \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static hsa_status_t find_gpu(hsa_agent_t agent, void *data)
{
    hsa_device_type_t type;
    OK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
    if (type == HSA_DEVICE_TYPE_GPU) {
        *(hsa_agent_t *)data = agent;
        return HSA_STATUS_INFO_BREAK;
    }
    return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_kernarg_region(hsa_region_t region, void *data)
{
    hsa_region_segment_t segment;
    uint32_t flags;
    OK(hsa_region_get_info(region, HSA_REGION_INFO_SEGMENT, &segment));
    if (segment != HSA_REGION_SEGMENT_GLOBAL)
        return HSA_STATUS_SUCCESS;
    OK(hsa_region_get_info(region, HSA_REGION_INFO_GLOBAL_FLAGS, &flags));
    if (flags & HSA_REGION_GLOBAL_FLAG_KERNARG) {
        *(hsa_region_t *)data = region;
        return HSA_STATUS_INFO_BREAK;
    }
    return HSA_STATUS_SUCCESS;
}

static hsa_queue_t *queue;
static hsa_signal_t signal;
static uint64_t kernel_object;
static void *kernarg;
static uint32_t private_size, group_size;

static void dispatch_and_wait(void)
{
    uint64_t index = hsa_queue_add_write_index_relaxed(queue, 1);
    hsa_kernel_dispatch_packet_t *p =
        (hsa_kernel_dispatch_packet_t *)queue->base_address + (index & (queue->size - 1));
    memset((char *)p + 4, 0, sizeof *p - 4);
    p->workgroup_size_x = 1;
    p->workgroup_size_y = 1;
    p->workgroup_size_z = 1;
    p->grid_size_x = 1;
    p->grid_size_y = 1;
    p->grid_size_z = 1;
    p->private_segment_size = private_size;
    p->group_segment_size = group_size;
    p->kernel_object = kernel_object;
    p->kernarg_address = kernarg;
    p->completion_signal = signal;
    hsa_signal_store_relaxed(signal, 1);
    uint16_t header = HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE |
                      1 << HSA_PACKET_HEADER_BARRIER |
                      HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE |
                      HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE;
    uint32_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    __atomic_store_n((uint32_t *)p, header | setup << 16, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
    while (hsa_signal_wait_scacquire(signal, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                     HSA_WAIT_STATE_ACTIVE) != 0)
        ;
}

int main(int argc, char **argv)
{
    int batches = 7, first = 1;
    double scale = 1.0;
    while (first + 1 < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-b") == 0)
            batches = atoi(argv[first + 1]);
        else if (strcmp(argv[first], "-s") == 0)
            scale = atof(argv[first + 1]);
        else
            break;
        first += 2;
    }
    if (first != argc - 1 || batches < 1 || batches > MAX_BATCHES || !(scale > 0 && scale <= 100)) {
        fprintf(stderr, "usage: hsa_dispatch_bench [-b 1..%d] [-s (0,100]] CODE_OBJECT\n", MAX_BATCHES);
        return 2;
    }

    OK(hsa_init());
    hsa_agent_t gpu = {0};
    if (hsa_iterate_agents(find_gpu, &gpu) != HSA_STATUS_INFO_BREAK) {
        fprintf(stderr, "hsa_dispatch_bench: no GPU agent\n");
        return 1;
    }
    hsa_code_object_reader_t reader;
    FILE *f = fopen(argv[first], "rb");
    if (!f) {
        perror(argv[first]);
        return 1;
    }
    OK(hsa_code_object_reader_create_from_file(fileno(f), &reader));
    hsa_executable_t exe;
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    OK(hsa_executable_load_agent_code_object(exe, gpu, reader, NULL, NULL));
    OK(hsa_executable_freeze(exe, NULL));
    hsa_executable_symbol_t sym;
    OK(hsa_executable_get_symbol_by_name(exe, "empty.kd", &gpu, &sym));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &kernel_object));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                                      &private_size));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                      &group_size));
    uint32_t kernarg_size;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                      &kernarg_size));
    hsa_region_t region = {0};
    hsa_agent_iterate_regions(gpu, find_kernarg_region, &region);
    OK(hsa_memory_allocate(region, kernarg_size ? kernarg_size : 64, &kernarg));
    memset(kernarg, 0, kernarg_size ? kernarg_size : 64);

    OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX, &queue));
    OK(hsa_signal_create(1, 0, NULL, &signal));

    static double per_op[MAX_BATCHES];
    int iters = (int)(2000 * scale + 0.5);
    if (iters < 1)
        iters = 1;
    for (int i = 0; i < iters; i++)
        dispatch_and_wait();
    for (int b = 0; b < batches; b++) {
        double t0 = now_ns();
        for (int i = 0; i < iters; i++)
            dispatch_and_wait();
        per_op[b] = (now_ns() - t0) / iters;
    }
    qsort(per_op, batches, sizeof per_op[0], cmp_double);
    printf("dispatch_empty_kernel %.0f %dx%d %.0f\n", per_op[batches / 2], batches, iters, per_op[0]);
    fflush(stdout);

    hsa_signal_destroy(signal);
    hsa_queue_destroy(queue);
    hsa_executable_destroy(exe);
    hsa_code_object_reader_destroy(reader);
    fclose(f);
    hsa_shut_down();
    return 0;
}
