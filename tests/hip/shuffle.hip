// Cross-lane operations of a wave64: __shfl (indexed), __shfl_up/__shfl_down, __shfl_xor,
// __ballot, __any, __all, __activemask and a butterfly reduction — run unmodified on the kfd
// model (scripts/hip-tests.sh). Each result is compared with a host model of the same lane
// arithmetic; prints "shuffle: ok" and exits 0, or names the first mismatch and exits 1.
#include <hip/hip_runtime.h>
#include <cstdint>
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

constexpr int W = 64;          // wavefront size of gfx900 and gfx90a
constexpr int kOut = 8;        // results per thread

__global__ void lanes(const int *in, int *out, unsigned long long *masks, int *wave_sums,
                      double *dsums) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % W;
    int v = in[t];
    int *o = out + t * kOut;
    o[0] = __shfl(v, (lane * 7 + 3) % W);          // indexed (ds_bpermute)
    o[1] = __shfl_down(v, 5);                       // lanes >= 59 keep their own value
    o[2] = __shfl_up(v, 9);                         // lanes < 9 keep their own value
    o[3] = __shfl_xor(v, 0x15);
    o[4] = __shfl(v, 17, 32);                       // width 32: lane 17 of each half
    o[5] = __any(v > 900) + 2 * __all(v >= 0);
    // Butterfly sum: every lane ends with the whole wave's sum.
    int s = v;
    for (int m = W / 2; m > 0; m /= 2)
        s += __shfl_xor(s, m);
    o[6] = s;
    // Tree sum with __shfl_down: lane 0 holds the sum.
    int d = v;
    for (int off = W / 2; off > 0; off /= 2)
        d += __shfl_down(d, off);
    if (lane == 0)
        wave_sums[t / W] = d;
    // 64-bit (double) shuffle reduction.
    double x = v * 0.25;
    for (int off = W / 2; off > 0; off /= 2)
        x += __shfl_down(x, off);
    if (lane == 0)
        dsums[t / W] = x;
    unsigned long long b = __ballot(v % 3 == 0);
    if (lane == 0)
        masks[t / W] = b;
    // Divergent branch: only odd lanes active.
    if (lane & 1)
        o[7] = __popcll(__ballot(1));
    else
        o[7] = -1;
}

int main() {
    const int local = 128, groups = 8, n = local * groups, waves = n / W;
    std::vector<int> in(n);
    for (int i = 0; i < n; i++)
        in[i] = (i * 7919 + 13) % 1000;
    in[5 * W + 3] = -4; // wave 5 has a negative value: __all(v >= 0) is false there
    int *din, *dout, *dws;
    unsigned long long *dmask;
    double *dds;
    CHECK(hipMalloc(&din, n * sizeof(int)));
    CHECK(hipMalloc(&dout, n * kOut * sizeof(int)));
    CHECK(hipMalloc(&dmask, waves * sizeof(unsigned long long)));
    CHECK(hipMalloc(&dws, waves * sizeof(int)));
    CHECK(hipMalloc(&dds, waves * sizeof(double)));
    CHECK(hipMemcpy(din, in.data(), n * sizeof(int), hipMemcpyHostToDevice));
    hipLaunchKernelGGL(lanes, dim3(groups), dim3(local), 0, 0, din, dout, dmask, dws, dds);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    std::vector<int> out(n * kOut), ws(waves);
    std::vector<unsigned long long> mask(waves);
    std::vector<double> ds(waves);
    CHECK(hipMemcpy(out.data(), dout, out.size() * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(mask.data(), dmask, waves * sizeof(unsigned long long), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(ws.data(), dws, waves * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(ds.data(), dds, waves * sizeof(double), hipMemcpyDeviceToHost));

    int bad = 0;
    auto expect = [&](const char *what, int t, long long got, long long want) {
        if (got != want && bad++ < 10)
            std::printf("shuffle: %s thread %d: got %lld, want %lld\n", what, t, got, want);
    };
    for (int w = 0; w < waves; w++) {
        const int *v = &in[w * W];
        int sum = 0, any = 0, all = 1;
        unsigned long long b = 0;
        for (int l = 0; l < W; l++) {
            sum += v[l];
            any |= v[l] > 900;
            all &= v[l] >= 0;
            if (v[l] % 3 == 0)
                b |= 1ull << l;
        }
        expect("ballot (low half)", w * W, (long long)(mask[w] & 0xffffffff), (long long)(b & 0xffffffff));
        expect("ballot (high half)", w * W, (long long)(mask[w] >> 32), (long long)(b >> 32));
        expect("shfl_down tree sum", w * W, ws[w], sum);
        // sum of v/4 over 64 small integers is exact in double
        expect("double shfl_down sum x4", w * W, (long long)(ds[w] * 4), sum);
        for (int l = 0; l < W; l++) {
            int t = w * W + l;
            const int *o = &out[t * kOut];
            expect("shfl", t, o[0], v[(l * 7 + 3) % W]);
            expect("shfl_down", t, o[1], l + 5 < W ? v[l + 5] : v[l]);
            expect("shfl_up", t, o[2], l >= 9 ? v[l - 9] : v[l]);
            expect("shfl_xor", t, o[3], v[l ^ 0x15]);
            expect("shfl width 32", t, o[4], v[(l & ~31) + 17]);
            expect("any/all", t, o[5], any + 2 * all);
            expect("butterfly sum", t, o[6], sum);
            expect("ballot popcount (odd lanes)", t, o[7], (l & 1) ? 32 : -1);
        }
    }
    if (bad) {
        std::printf("shuffle: %d mismatches\n", bad);
        return 1;
    }
    std::printf("shuffle: ok\n");
    return 0;
}
