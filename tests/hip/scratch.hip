// Private memory (scratch): a non-inlined recursive device function and a private array
// indexed at run time — run unmodified on the kfd model (scripts/hip-tests.sh). ROCr gives
// its queues scratch on demand: the model's CP reports the need through the queue's
// queue_inactive_signal and resumes when ROCr has grown it. Prints "scratch: ok".
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        hipError_t e = (x);                                                                \
        if (e != hipSuccess) {                                                             \
            std::printf("%s failed: %s\n", #x, hipGetErrorString(e));                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__global__ void kernel(const int *idx, int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int priv[32];
    for (int k = 0; k < 32; k++)
        priv[k] = k * k + i;
    out[i] = priv[idx[i] & 31] + fib(i % 12);
}

static int host_fib(int n) { return n < 2 ? n : host_fib(n - 1) + host_fib(n - 2); }

int main() {
    const int n = 512;
    std::vector<int> idx(n), out(n);
    for (int i = 0; i < n; i++)
        idx[i] = (i * 13) % 37;
    int *didx, *dout;
    CHECK(hipMalloc(&didx, n * sizeof(int)));
    CHECK(hipMalloc(&dout, n * sizeof(int)));
    CHECK(hipMemcpy(didx, idx.data(), n * sizeof(int), hipMemcpyHostToDevice));
    hipLaunchKernelGGL(kernel, dim3(n / 128), dim3(128), 0, 0, didx, dout);
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(out.data(), dout, n * sizeof(int), hipMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int k = idx[i] & 31;
        int want = k * k + i + host_fib(i % 12);
        if (out[i] != want && bad++ < 5)
            std::printf("out[%d] = %d, want %d\n", i, out[i], want);
    }
    std::printf(bad ? "scratch: %d wrong\n" : "scratch: ok\n", bad);
    return bad ? 1 : 0;
}
