// Generic (flat) pointers into the private and shared apertures, and 16-bit data: a
// non-inlined device function takes an int* / short* that points into a thread's private
// array, into __shared__ memory or into global memory, so the compiler must use FLAT
// instructions whose addresses the hardware routes by aperture (private: the wave's scratch
// with its per-lane interleave; shared: the workgroup's LDS). Half-word stores and loads of
// both halves of a register (d16 / d16_hi forms) come with the shorts. Run unmodified on the
// kfd model (scripts/hip-tests.sh), also built with flat scratch (-mllvm
// -amdgpu-enable-flat-scratch: scratch_* instructions, FLAT_SCRATCH from the flat scratch
// init SGPRs). Checked against a host reference; prints "apertures: ok" and exits 0.
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

// Through a generic pointer: scale p[0..n) and return their sum.
__device__ __noinline__ int touch(int *p, int n, int k) {
    int s = 0;
    for (int j = 0; j < n; j++) {
        p[j] = p[j] * k + j;
        s += p[j];
    }
    return s;
}

__device__ __noinline__ void swap_halves(short *p, int n) {
    for (int j = 0; j + 1 < n; j += 2) {
        short a = p[j], b = p[j + 1];
        p[j] = b;
        p[j + 1] = (short)(a - 1);
    }
}

__global__ void kernel(int *global, short *shorts, int *out, int sel) {
    __shared__ int shared[64 * 4];
    __shared__ short shared16[64 * 2];
    int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    int priv[8];
    short priv16[4];
    for (int j = 0; j < 8; j++)
        priv[j] = g * 8 + j;
    for (int j = 0; j < 4; j++) {
        shared[t * 4 + j] = g + 100 * j;
        priv16[j] = (short)(g * 3 - 2 * j);
    }
    shared16[t * 2] = (short)(-g);
    shared16[t * 2 + 1] = (short)(g + 7);
    // The callee sees three kinds of generic pointer; sel (1 at run time) keeps the
    // compiler from specialising the calls.
    int a = touch(sel ? priv : global, 8, 3);
    int b = touch(sel ? shared + t * 4 : global, 4, 5);
    int c = touch(global + g * 2, 2, 7);
    swap_halves(sel ? priv16 : shorts, 4);
    swap_halves(sel ? shared16 + t * 2 : shorts, 2);
    swap_halves(shorts + g * 2, 2);
    out[g * 8 + 0] = a;
    out[g * 8 + 1] = b;
    out[g * 8 + 2] = c;
    out[g * 8 + 3] = priv[g % 8];
    out[g * 8 + 4] = shared[t * 4 + 3];
    out[g * 8 + 5] = priv16[0] * 65536 + (priv16[1] & 0xffff);
    out[g * 8 + 6] = priv16[2] * 65536 + (priv16[3] & 0xffff);
    out[g * 8 + 7] = shared16[t * 2] * 65536 + (shared16[t * 2 + 1] & 0xffff);
}

int main() {
    const int local = 64, groups = 4, n = local * groups;
    std::vector<int> global(n * 2), out(n * 8);
    std::vector<short> shorts(n * 2);
    for (int i = 0; i < n * 2; i++) {
        global[i] = i * 3 - 50;
        shorts[i] = (short)(i * 11 - 900);
    }
    int *dglobal, *dout;
    short *dshorts;
    CHECK(hipMalloc(&dglobal, global.size() * sizeof(int)));
    CHECK(hipMalloc(&dshorts, shorts.size() * sizeof(short)));
    CHECK(hipMalloc(&dout, out.size() * sizeof(int)));
    CHECK(hipMemcpy(dglobal, global.data(), global.size() * sizeof(int), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dshorts, shorts.data(), shorts.size() * sizeof(short), hipMemcpyHostToDevice));
    hipLaunchKernelGGL(kernel, dim3(groups), dim3(local), 0, 0, dglobal, dshorts, dout, 1);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    std::vector<int> gout(n * 2);
    std::vector<short> sout(n * 2);
    CHECK(hipMemcpy(out.data(), dout, out.size() * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(gout.data(), dglobal, gout.size() * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(sout.data(), dshorts, sout.size() * sizeof(short), hipMemcpyDeviceToHost));

    int bad = 0;
    auto expect = [&](const char *what, int i, long long got, long long want) {
        if (got != want && bad++ < 10)
            std::printf("apertures: %s [%d]: got %lld, want %lld\n", what, i, got, want);
    };
    auto host_touch = [](int *p, int n, int k) {
        int s = 0;
        for (int j = 0; j < n; j++) {
            p[j] = p[j] * k + j;
            s += p[j];
        }
        return s;
    };
    auto host_swap = [](short *p, int n) {
        for (int j = 0; j + 1 < n; j += 2) {
            short a = p[j], b = p[j + 1];
            p[j] = b;
            p[j + 1] = (short)(a - 1);
        }
    };
    std::vector<int> want_global = global;
    std::vector<short> want_shorts = shorts;
    for (int g = 0; g < n; g++) {
        int priv[8], shared[4];
        short priv16[4], shared16[2];
        for (int j = 0; j < 8; j++)
            priv[j] = g * 8 + j;
        for (int j = 0; j < 4; j++) {
            shared[j] = g + 100 * j;
            priv16[j] = (short)(g * 3 - 2 * j);
        }
        shared16[0] = (short)(-g);
        shared16[1] = (short)(g + 7);
        int a = host_touch(priv, 8, 3), b = host_touch(shared, 4, 5);
        int c = host_touch(&want_global[g * 2], 2, 7);
        host_swap(priv16, 4);
        host_swap(shared16, 2);
        host_swap(&want_shorts[g * 2], 2);
        const int *o = &out[g * 8];
        expect("sum through a private pointer", g, o[0], a);
        expect("sum through a shared pointer", g, o[1], b);
        expect("sum through a global pointer", g, o[2], c);
        expect("private array after the call", g, o[3], priv[g % 8]);
        expect("shared array after the call", g, o[4], shared[3]);
        expect("private shorts 0,1", g, o[5], priv16[0] * 65536 + (priv16[1] & 0xffff));
        expect("private shorts 2,3", g, o[6], priv16[2] * 65536 + (priv16[3] & 0xffff));
        expect("shared shorts", g, o[7], shared16[0] * 65536 + (shared16[1] & 0xffff));
    }
    for (int i = 0; i < n * 2; i++) {
        expect("global ints", i, gout[i], want_global[i]);
        expect("global shorts", i, sout[i], want_shorts[i]);
    }
    if (bad) {
        std::printf("apertures: %d mismatches\n", bad);
        return 1;
    }
    std::printf("apertures: ok\n");
    return 0;
}
