// LDS with __syncthreads, dynamic shared memory, global and shared atomics (32 and 64 bit),
// a 2-D grid, device-to-device copies and hipMemset (ROCr's blit kernels), events and a
// stream — run unmodified on the kfd model (scripts/hip-tests.sh). Checked against a host
// reference; prints "lds_atomics: ok" and exits 0.
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

__global__ void reduce(const int *in, int *sums, unsigned long long *total, unsigned *hist) {
    extern __shared__ int tmp[];
    __shared__ unsigned local_hist[8];
    unsigned l = threadIdx.x;
    if (l < 8)
        local_hist[l] = 0;
    int v = in[blockIdx.x * blockDim.x + l];
    tmp[l] = v;
    __syncthreads();
    atomicAdd(&local_hist[v & 7], 1u);
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (l < s)
            tmp[l] += tmp[l + s];
        __syncthreads();
    }
    if (l == 0) {
        sums[blockIdx.x] = tmp[0];
        atomicAdd(total, (unsigned long long)(long long)tmp[0]);
    }
    if (l < 8)
        atomicAdd(&hist[l], local_hist[l]);
}

__global__ void grid2d(int *out, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    out[y * w + x] = x * 1000 + y;
}

int main() {
    const int local = 256, groups = 40, n = local * groups;
    std::vector<int> in(n);
    for (int i = 0; i < n; i++)
        in[i] = (i * 7919) % 1000 - 300;
    int *din, *din2, *dsums;
    unsigned long long *dtotal;
    unsigned *dhist;
    CHECK(hipMalloc(&din, n * sizeof(int)));
    CHECK(hipMalloc(&din2, n * sizeof(int)));
    CHECK(hipMalloc(&dsums, groups * sizeof(int)));
    CHECK(hipMalloc(&dtotal, sizeof(unsigned long long)));
    CHECK(hipMalloc(&dhist, 8 * sizeof(unsigned)));
    hipStream_t stream;
    CHECK(hipStreamCreate(&stream));
    hipEvent_t done;
    CHECK(hipEventCreate(&done));
    CHECK(hipMemcpyAsync(din, in.data(), n * sizeof(int), hipMemcpyHostToDevice, stream));
    CHECK(hipMemcpyAsync(din2, din, n * sizeof(int), hipMemcpyDeviceToDevice, stream));
    CHECK(hipMemsetAsync(dtotal, 0, sizeof(unsigned long long), stream));
    CHECK(hipMemsetAsync(dhist, 0, 8 * sizeof(unsigned), stream));
    hipLaunchKernelGGL(reduce, dim3(groups), dim3(local), local * sizeof(int), stream, din2, dsums,
                       dtotal, dhist);
    CHECK(hipGetLastError());
    CHECK(hipEventRecord(done, stream));
    CHECK(hipEventSynchronize(done));
    std::vector<int> sums(groups);
    unsigned long long total = 0;
    unsigned hist[8];
    CHECK(hipMemcpy(sums.data(), dsums, groups * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(&total, dtotal, sizeof(total), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(hist, dhist, sizeof(hist), hipMemcpyDeviceToHost));
    int bad = 0;
    long long want_total = 0;
    unsigned want_hist[8] = {0};
    for (int g = 0; g < groups; g++) {
        int s = 0;
        for (int i = 0; i < local; i++) {
            s += in[g * local + i];
            want_hist[in[g * local + i] & 7]++;
        }
        want_total += s;
        if (sums[g] != s) {
            if (bad++ < 5)
                std::printf("group %d: %d, want %d\n", g, sums[g], s);
        }
    }
    if ((long long)total != want_total) {
        std::printf("total %lld, want %lld\n", (long long)total, want_total);
        bad++;
    }
    for (int b = 0; b < 8; b++)
        if (hist[b] != want_hist[b]) {
            std::printf("hist[%d] %u, want %u\n", b, hist[b], want_hist[b]);
            bad++;
        }

    const int w = 48, h = 20;
    int *dgrid;
    CHECK(hipMalloc(&dgrid, w * h * sizeof(int)));
    hipLaunchKernelGGL(grid2d, dim3(w / 16, h / 4), dim3(16, 4), 0, 0, dgrid, w);
    CHECK(hipDeviceSynchronize());
    std::vector<int> grid(w * h);
    CHECK(hipMemcpy(grid.data(), dgrid, w * h * sizeof(int), hipMemcpyDeviceToHost));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (grid[y * w + x] != x * 1000 + y) {
                if (bad++ < 10)
                    std::printf("grid (%d,%d) = %d\n", x, y, grid[y * w + x]);
            }
    std::printf(bad ? "lds_atomics: %d wrong\n" : "lds_atomics: ok\n", bad);
    return bad ? 1 : 0;
}
