// HIP vector add, run unmodified on the kfd model through the LD_PRELOAD shim
// (scripts/hip-tests.sh). Prints "vadd: N of N correct" and exits 0 when all match.
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

__global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

int main() {
    const int n = 10000;
    std::vector<float> a(n), b(n), c(n, -1.0f);
    for (int i = 0; i < n; i++) {
        a[i] = i * 0.5f;
        b[i] = 3.0f - i;
    }
    float *da, *db, *dc;
    CHECK(hipMalloc(&da, n * sizeof(float)));
    CHECK(hipMalloc(&db, n * sizeof(float)));
    CHECK(hipMalloc(&dc, n * sizeof(float)));
    CHECK(hipMemcpy(da, a.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(db, b.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(dc, 0, n * sizeof(float)));
    hipLaunchKernelGGL(vadd, dim3((n + 255) / 256), dim3(256), 0, 0, da, db, dc, n);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(c.data(), dc, n * sizeof(float), hipMemcpyDeviceToHost));
    int ok = 0;
    for (int i = 0; i < n; i++)
        ok += c[i] == a[i] + b[i];
    std::printf("vadd: %d of %d correct\n", ok, n);
    CHECK(hipFree(da));
    CHECK(hipFree(db));
    CHECK(hipFree(dc));
    return ok == n ? 0 : 1;
}
