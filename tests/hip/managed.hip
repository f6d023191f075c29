// Managed memory on the kfd model (scripts/hip-tests.sh runs it on gfx90a with HSA_XNACK=1):
// hipMallocManaged memory the CPU fills, a kernel reads, writes and counts into atomically,
// and the CPU checks after hipDeviceSynchronize — no hipMemcpy. With XNACK on, ROCr gives
// managed memory to the GPU as SVM ranges and the GPU faults pages in (recoverable faults).
// Prints "managed: ok (...)" and exits 0 when every element and the count match.
#include <hip/hip_runtime.h>
#include <cstdio>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        hipError_t e = (x);                                                                \
        if (e != hipSuccess) {                                                             \
            std::printf("%s failed: %s\n", #x, hipGetErrorString(e));                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

__global__ void scale(const int *in, int *out, unsigned *count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i] * 3 + 1;
        atomicAdd(count, 1u);
    }
}

int main() {
    int managed = 0, concurrent = 0;
    CHECK(hipDeviceGetAttribute(&managed, hipDeviceAttributeManagedMemory, 0));
    CHECK(hipDeviceGetAttribute(&concurrent, hipDeviceAttributeConcurrentManagedAccess, 0));
    std::printf("managed memory %d, concurrent managed access %d\n", managed, concurrent);
    const int n = 1 << 16;
    int *in, *out;
    unsigned *count;
    CHECK(hipMallocManaged(&in, n * sizeof(int)));
    CHECK(hipMallocManaged(&out, n * sizeof(int)));
    CHECK(hipMallocManaged(&count, sizeof(unsigned)));
    for (int i = 0; i < n; i++) {
        in[i] = i ^ 0x5a5a;
        out[i] = -1;
    }
    *count = 0;
    hipLaunchKernelGGL(scale, dim3(n / 256), dim3(256), 0, 0, in, out, count, n);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    int ok = 0;
    for (int i = 0; i < n; i++)
        ok += out[i] == (i ^ 0x5a5a) * 3 + 1;
    // Again, after the CPU changed the input: the GPU sees the new bytes.
    for (int i = 0; i < n; i++)
        in[i] = -i;
    hipLaunchKernelGGL(scale, dim3(n / 256), dim3(256), 0, 0, in, out, count, n);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    int ok2 = 0;
    for (int i = 0; i < n; i++)
        ok2 += out[i] == -i * 3 + 1;
    CHECK(hipFree(in));
    bool good = ok == n && ok2 == n && *count == 2u * n;
    std::printf("managed: %s (%d + %d of %d elements, count %u of %u)\n", good ? "ok" : "wrong", ok,
                ok2, n, *count, 2u * n);
    CHECK(hipFree(out));
    CHECK(hipFree(count));
    return good ? 0 : 1;
}
