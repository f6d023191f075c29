// A 3-D grid of 3-D workgroups (blockIdx/threadIdx/blockDim/gridDim in x, y and z) and
// dynamic shared memory (extern __shared__, sized at launch) on the kfd model
// (scripts/hip-tests.sh). Every thread writes its coordinates; every workgroup reverses a
// block-sized array through dynamic LDS and sums it. Checked against a host reference;
// prints "grid3d: ok" and exits 0, or names the first mismatches and exits 1.
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

__global__ void coords(int *out, const int *in, int *reversed, int *sums) {
    extern __shared__ int dyn[]; // blockDim.x*y*z ints, plus one for the sum
    int local = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    int size = blockDim.x * blockDim.y * blockDim.z;
    int global = block * size + local;
    int *o = out + global * 4;
    o[0] = blockIdx.x * 10000 + blockIdx.y * 100 + blockIdx.z;
    o[1] = threadIdx.x * 10000 + threadIdx.y * 100 + threadIdx.z;
    o[2] = blockDim.x * 10000 + blockDim.y * 100 + blockDim.z;
    o[3] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
    if (local == 0)
        dyn[size] = 0;
    dyn[local] = in[global];
    __syncthreads();
    reversed[global] = dyn[size - 1 - local];
    atomicAdd(&dyn[size], dyn[local]);
    __syncthreads();
    if (local == 0)
        sums[block] = dyn[size];
}

int main() {
    const dim3 grid(3, 2, 4), block(8, 4, 3);
    const int blocks = grid.x * grid.y * grid.z, size = block.x * block.y * block.z;
    const int n = blocks * size;
    std::vector<int> in(n);
    for (int i = 0; i < n; i++)
        in[i] = (i * 2654435761u) % 10007;
    int *dout, *din, *drev, *dsums;
    CHECK(hipMalloc(&dout, n * 4 * sizeof(int)));
    CHECK(hipMalloc(&din, n * sizeof(int)));
    CHECK(hipMalloc(&drev, n * sizeof(int)));
    CHECK(hipMalloc(&dsums, blocks * sizeof(int)));
    CHECK(hipMemcpy(din, in.data(), n * sizeof(int), hipMemcpyHostToDevice));
    hipLaunchKernelGGL(coords, grid, block, (size + 1) * sizeof(int), 0, dout, din, drev, dsums);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    std::vector<int> out(n * 4), rev(n), sums(blocks);
    CHECK(hipMemcpy(out.data(), dout, out.size() * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(rev.data(), drev, n * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(sums.data(), dsums, blocks * sizeof(int), hipMemcpyDeviceToHost));
    int bad = 0;
    auto expect = [&](const char *what, int i, int got, int want) {
        if (got != want && bad++ < 10)
            std::printf("grid3d: %s [%d]: got %d, want %d\n", what, i, got, want);
    };
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                int b = (bz * grid.y + by) * grid.x + bx;
                int sum = 0;
                for (unsigned tz = 0; tz < block.z; tz++)
                    for (unsigned ty = 0; ty < block.y; ty++)
                        for (unsigned tx = 0; tx < block.x; tx++) {
                            int l = (tz * block.y + ty) * block.x + tx, g = b * size + l;
                            expect("blockIdx", g, out[g * 4], bx * 10000 + by * 100 + bz);
                            expect("threadIdx", g, out[g * 4 + 1], tx * 10000 + ty * 100 + tz);
                            expect("blockDim", g, out[g * 4 + 2],
                                   block.x * 10000 + block.y * 100 + block.z);
                            expect("gridDim", g, out[g * 4 + 3],
                                   grid.x * 10000 + grid.y * 100 + grid.z);
                            expect("reversed through dynamic LDS", g, rev[g],
                                   in[b * size + size - 1 - l]);
                            sum += in[g];
                        }
                expect("workgroup sum in dynamic LDS", b, sums[b], sum);
            }
    if (bad) {
        std::printf("grid3d: %d mismatches\n", bad);
        return 1;
    }
    std::printf("grid3d: ok\n");
    return 0;
}
