// Streams, events and every copy direction on the kfd model (scripts/hip-tests.sh):
// hipMemcpy and hipMemcpyAsync host->device, device->host, device->device and host->host,
// hipMemset/hipMemsetAsync (ROCr's fill kernel), pinned host memory (hipHostMalloc) as
// source, destination and as memory a kernel reads and writes directly, two streams with an
// event dependency between them, and hipEventElapsedTime > 0 across a kernel. Every buffer
// is compared with a host reference; prints "memcpy: ok" and exits 0, or exits 1.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        hipError_t e = (x);                                                                \
        if (e != hipSuccess) {                                                             \
            std::printf("%s failed: %s\n", #x, hipGetErrorString(e));                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

__global__ void scale(const int *in, int *out, int k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * k + 1;
}

// Enough work that the kernel takes measurable time between two events.
__global__ void busy(int *out, int rounds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = i;
    for (int r = 0; r < rounds; r++)
        v = v * 1664525u + 1013904223u;
    out[i] = v;
}

static int bad = 0;
static void expect_eq(const char *what, const std::vector<int> &got, const std::vector<int> &want) {
    for (size_t i = 0; i < want.size(); i++)
        if (got[i] != want[i]) {
            if (bad++ < 10)
                std::printf("memcpy: %s [%zu]: got %d, want %d\n", what, i, got[i], want[i]);
            return;
        }
}

int main() {
    const int n = 3000; // not a multiple of the blit kernels' granule
    const size_t bytes = n * sizeof(int);
    std::vector<int> src(n), want(n), got(n);
    for (int i = 0; i < n; i++)
        src[i] = i * 31 - 7000;

    int *d1, *d2, *d3, *pinned_in, *pinned_out;
    CHECK(hipMalloc(&d1, bytes));
    CHECK(hipMalloc(&d2, bytes));
    CHECK(hipMalloc(&d3, bytes));
    CHECK(hipHostMalloc(&pinned_in, bytes, hipHostMallocDefault));
    CHECK(hipHostMalloc(&pinned_out, bytes, hipHostMallocDefault));

    // Synchronous copies: H->D, D->D, D->H, H->H.
    CHECK(hipMemcpy(d1, src.data(), bytes, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d2, d1, bytes, hipMemcpyDeviceToDevice));
    CHECK(hipMemcpy(got.data(), d2, bytes, hipMemcpyDeviceToHost));
    expect_eq("hipMemcpy H->D->D->H", got, src);
    std::vector<int> host_copy(n, 0);
    CHECK(hipMemcpy(host_copy.data(), src.data(), bytes, hipMemcpyHostToHost));
    expect_eq("hipMemcpy H->H", host_copy, src);

    // hipMemset: bytes 0x5a everywhere, then a sub-range of zeros at an odd offset.
    CHECK(hipMemset(d3, 0x5a, bytes));
    CHECK(hipMemset(reinterpret_cast<char *>(d3) + 403, 0, 1001));
    std::vector<unsigned char> want_bytes(bytes, 0x5a), got_bytes(bytes);
    std::memset(want_bytes.data() + 403, 0, 1001);
    CHECK(hipMemcpy(got_bytes.data(), d3, bytes, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; i++)
        if (got_bytes[i] != want_bytes[i]) {
            if (bad++ < 10)
                std::printf("memcpy: hipMemset byte %zu: got %#x, want %#x\n", i, got_bytes[i],
                            want_bytes[i]);
            break;
        }

    // Two streams: s1 fills pinned -> d1, runs scale into d2 and records an event; s2 waits
    // for it, copies d2 -> d3 and d3 -> pinned_out, then memsets d1 asynchronously.
    hipStream_t s1, s2;
    CHECK(hipStreamCreate(&s1));
    CHECK(hipStreamCreate(&s2));
    hipEvent_t ready, start, stop;
    CHECK(hipEventCreate(&ready));
    CHECK(hipEventCreate(&start));
    CHECK(hipEventCreate(&stop));
    for (int i = 0; i < n; i++)
        pinned_in[i] = src[i] ^ 0x1234;
    CHECK(hipMemcpyAsync(d1, pinned_in, bytes, hipMemcpyHostToDevice, s1));
    hipLaunchKernelGGL(scale, dim3((n + 255) / 256), dim3(256), 0, s1, d1, d2, 3, n);
    CHECK(hipGetLastError());
    CHECK(hipEventRecord(ready, s1));
    CHECK(hipStreamWaitEvent(s2, ready, 0));
    CHECK(hipMemcpyAsync(d3, d2, bytes, hipMemcpyDeviceToDevice, s2));
    CHECK(hipMemcpyAsync(pinned_out, d3, bytes, hipMemcpyDeviceToHost, s2));
    CHECK(hipMemsetAsync(d1, 0xff, bytes, s2));
    CHECK(hipMemcpyAsync(host_copy.data(), pinned_in, bytes, hipMemcpyHostToHost, s2));
    CHECK(hipStreamSynchronize(s2));
    for (int i = 0; i < n; i++)
        want[i] = (src[i] ^ 0x1234) * 3 + 1;
    std::vector<int> pinned_got(pinned_out, pinned_out + n);
    expect_eq("stream s1 kernel -> event -> s2 D->D -> D->H (pinned)", pinned_got, want);
    std::vector<int> want_in(pinned_in, pinned_in + n);
    expect_eq("hipMemcpyAsync H->H", host_copy, want_in);
    CHECK(hipMemcpy(got.data(), d1, bytes, hipMemcpyDeviceToHost));
    expect_eq("hipMemsetAsync 0xff", got, std::vector<int>(n, -1));

    // A kernel reading and writing pinned host memory directly.
    hipLaunchKernelGGL(scale, dim3((n + 255) / 256), dim3(256), 0, s1, pinned_in, pinned_out, -2, n);
    CHECK(hipStreamSynchronize(s1));
    for (int i = 0; i < n; i++)
        want[i] = (src[i] ^ 0x1234) * -2 + 1;
    pinned_got.assign(pinned_out, pinned_out + n);
    expect_eq("kernel on pinned host memory", pinned_got, want);

    // Events around a kernel: elapsed time is positive.
    CHECK(hipEventRecord(start, s1));
    hipLaunchKernelGGL(busy, dim3(4), dim3(256), 0, s1, d2, 200);
    CHECK(hipEventRecord(stop, s1));
    CHECK(hipEventSynchronize(stop));
    float ms = 0;
    CHECK(hipEventElapsedTime(&ms, start, stop));
    if (!(ms > 0.0f)) {
        std::printf("memcpy: hipEventElapsedTime = %f ms, want > 0\n", ms);
        bad++;
    }
    CHECK(hipMemcpy(got.data(), d2, 1024 * sizeof(int), hipMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++) {
        unsigned v = i;
        for (int r = 0; r < 200; r++)
            v = v * 1664525u + 1013904223u;
        if (got[i] != (int)v && bad++ < 10)
            std::printf("memcpy: busy [%d]: got %d, want %d\n", i, got[i], (int)v);
    }
    CHECK(hipStreamDestroy(s1));
    CHECK(hipStreamDestroy(s2));
    CHECK(hipHostFree(pinned_in));
    CHECK(hipHostFree(pinned_out));
    if (bad) {
        std::printf("memcpy: %d mismatches\n", bad);
        return 1;
    }
    std::printf("memcpy: ok (event elapsed %.3f ms)\n", ms);
    return 0;
}
