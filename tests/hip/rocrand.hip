// Debian 12's rocRAND (librocrand1, and its device API headers) on the kfd model through the
// LD_PRELOAD shim (scripts/rocm-libs-tests.sh): Philox4x32-10 numbers from the host API
// (rocrand_generate, the library's own kernels) and from the device API (rocrand_init +
// rocrand in a kernel of ours), compared bit for bit with a host implementation of the
// generator written here. Prints "rocrand: ok (...)" and exits 0 when every number matches.
#include <hip/hip_runtime.h>
#include <rocrand/rocrand.h>
#include <rocrand/rocrand_kernel.h>
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

#define CHECK_RAND(x)                                                                      \
    do {                                                                                   \
        rocrand_status s = (x);                                                            \
        if (s != ROCRAND_STATUS_SUCCESS) {                                                 \
            std::printf("%s failed: rocrand status %d\n", #x, (int)s);                     \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): ten rounds over a 128-bit counter with a 64-bit key. A round multiplies words
// 0 and 2 by the two multipliers and mixes the products' halves with words 1 and 3 and the
// key; the key grows by the two Weyl constants between rounds. rocRAND's state puts the
// position in a subsequence in counter words 0-1 and the subsequence in words 2-3.
struct Philox {
    static constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
    static constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

    static void block(const uint32_t counter[4], uint64_t seed, uint32_t out[4]) {
        uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int round = 0; round < 10; round++) {
            uint64_t p0 = (uint64_t)kMul0 * c[0];
            uint64_t p1 = (uint64_t)kMul1 * c[2];
            uint32_t n[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k0, (uint32_t)p1,
                             (uint32_t)(p0 >> 32) ^ c[3] ^ k1, (uint32_t)p0};
            for (int w = 0; w < 4; w++)
                c[w] = n[w];
            k0 += kWeyl0;
            k1 += kWeyl1;
        }
        for (int w = 0; w < 4; w++)
            out[w] = c[w];
    }

    // The `index`th block (of four numbers) of subsequence `subsequence`.
    static void at(uint64_t seed, uint64_t subsequence, uint64_t index, uint32_t out[4]) {
        uint32_t counter[4] = {(uint32_t)index, (uint32_t)(index >> 32), (uint32_t)subsequence,
                               (uint32_t)(subsequence >> 32)};
        block(counter, seed, out);
    }
};

// Each thread draws `per_thread` numbers from its own subsequence (its thread id).
__global__ void philox_device_api(unsigned long long seed, unsigned int per_thread,
                                  unsigned int *out) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    rocrand_state_philox4x32_10 state;
    rocrand_init(seed, tid, 0, &state);
    for (unsigned int k = 0; k < per_thread; k++)
        out[tid * per_thread + k] = rocrand(&state);
}

int main() {
    const unsigned long long seed = 0x0123456789abcdefull;
    int bad = 0;

    // Device API: 64 blocks of 128 threads, 8 numbers each (two Philox blocks per thread).
    const unsigned int threads = 64 * 128, per_thread = 8;
    std::vector<unsigned int> dev(threads * per_thread);
    unsigned int *d_dev;
    CHECK(hipMalloc(&d_dev, dev.size() * sizeof(unsigned int)));
    hipLaunchKernelGGL(philox_device_api, dim3(64), dim3(128), 0, 0, seed, per_thread, d_dev);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(dev.data(), d_dev, dev.size() * sizeof(unsigned int),
                    hipMemcpyDeviceToHost));
    for (unsigned int t = 0; t < threads; t++) {
        for (unsigned int k = 0; k < per_thread; k++) {
            uint32_t want[4];
            Philox::at(seed, t, k / 4, want);
            if (dev[t * per_thread + k] != want[k % 4]) {
                if (bad < 5)
                    std::printf("device API thread %u number %u: %#x, host %#x\n", t, k,
                                dev[t * per_thread + k], want[k % 4]);
                bad++;
            }
        }
    }

    // Host API: rocrand_generate fills the buffer with the generator's stream from its
    // start (offset 0): number i is word i % 4 of block i / 4 of subsequence 0, however the
    // library spreads the blocks over its threads.
    const size_t n = 4 * 16384;
    std::vector<unsigned int> lib(n);
    unsigned int *d_lib;
    CHECK(hipMalloc(&d_lib, n * sizeof(unsigned int)));
    rocrand_generator gen;
    CHECK_RAND(rocrand_create_generator(&gen, ROCRAND_RNG_PSEUDO_PHILOX4_32_10));
    CHECK_RAND(rocrand_set_seed(gen, seed));
    CHECK_RAND(rocrand_generate(gen, d_lib, n));
    CHECK(hipMemcpy(lib.data(), d_lib, n * sizeof(unsigned int), hipMemcpyDeviceToHost));
    CHECK_RAND(rocrand_destroy_generator(gen));
    for (size_t i = 0; i < n; i++) {
        size_t b = i / 4;
        uint32_t want[4];
        Philox::at(seed, 0, b, want);
        if (lib[i] != want[i % 4]) {
            if (bad < 10)
                std::printf("host API number %zu: %#x, host %#x\n", i, lib[i], want[i % 4]);
            bad++;
        }
    }
    CHECK(hipFree(d_dev));
    CHECK(hipFree(d_lib));
    if (bad) {
        std::printf("rocrand: %d numbers differ\n", bad);
        return 1;
    }
    std::printf("rocrand: ok (philox4x32-10: %u from the device API, %zu from "
                "rocrand_generate, bit-exact)\n",
                threads * per_thread, n);
    return 0;
}
