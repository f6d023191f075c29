// Debian 12's rocPRIM (librocprim-dev, header-only) on the kfd model through the LD_PRELOAD
// shim (scripts/rocm-libs-tests.sh): device-wide radix sort, reduction and inclusive scan
// of 100000 keys, each against a host reference. The scan is a single-pass decoupled
// look-back scan: its workgroups wait on the prefixes earlier workgroups publish, which
// only works if those have started and make progress. Prints "rocprim: ok (...)" and exits 0
// when every result matches.
#include <hip/hip_runtime.h>
#include <rocprim/rocprim.hpp>
#include <algorithm>
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

int main() {
    const size_t n = 100000;
    std::vector<unsigned int> keys(n);
    uint64_t state = 0x5eed;
    for (auto &k : keys) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        k = (unsigned int)(state >> 32);
    }
    unsigned int *d_in, *d_out, *d_sum;
    CHECK(hipMalloc(&d_in, n * sizeof(unsigned int)));
    CHECK(hipMalloc(&d_out, n * sizeof(unsigned int)));
    CHECK(hipMalloc(&d_sum, sizeof(unsigned int)));
    CHECK(hipMemcpy(d_in, keys.data(), n * sizeof(unsigned int), hipMemcpyHostToDevice));
    size_t temp_bytes = 0, need = 0;
    void *d_temp = nullptr;
    // One temporary buffer for all three: the largest size any asks for.
    CHECK(rocprim::radix_sort_keys(nullptr, need, d_in, d_out, n));
    temp_bytes = std::max(temp_bytes, need);
    CHECK(rocprim::reduce(nullptr, need, d_in, d_sum, 0u, n, rocprim::plus<unsigned int>()));
    temp_bytes = std::max(temp_bytes, need);
    CHECK(rocprim::inclusive_scan(nullptr, need, d_in, d_out, n, rocprim::plus<unsigned int>()));
    temp_bytes = std::max(temp_bytes, need);
    CHECK(hipMalloc(&d_temp, temp_bytes));
    int bad = 0;

    // Radix sort.
    std::vector<unsigned int> got(n), want = keys;
    std::sort(want.begin(), want.end());
    CHECK(rocprim::radix_sort_keys(d_temp, temp_bytes, d_in, d_out, n));
    CHECK(hipMemcpy(got.data(), d_out, n * sizeof(unsigned int), hipMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            if (bad < 5)
                std::printf("radix_sort_keys[%zu] = %#x, host %#x\n", i, got[i], want[i]);
            bad++;
        }
    }

    // Reduction (wrapping unsigned sum).
    unsigned int sum = 0, want_sum = 0;
    for (auto k : keys)
        want_sum += k;
    CHECK(rocprim::reduce(d_temp, temp_bytes, d_in, d_sum, 0u, n, rocprim::plus<unsigned int>()));
    CHECK(hipMemcpy(&sum, d_sum, sizeof(unsigned int), hipMemcpyDeviceToHost));
    if (sum != want_sum) {
        std::printf("reduce = %#x, host %#x\n", sum, want_sum);
        bad++;
    }

    // Inclusive scan.
    CHECK(rocprim::inclusive_scan(d_temp, temp_bytes, d_in, d_out, n,
                                  rocprim::plus<unsigned int>()));
    CHECK(hipMemcpy(got.data(), d_out, n * sizeof(unsigned int), hipMemcpyDeviceToHost));
    unsigned int acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += keys[i];
        if (got[i] != acc) {
            if (bad < 10)
                std::printf("inclusive_scan[%zu] = %#x, host %#x\n", i, got[i], acc);
            bad++;
        }
    }
    CHECK(hipFree(d_temp));
    CHECK(hipFree(d_in));
    CHECK(hipFree(d_out));
    CHECK(hipFree(d_sum));
    if (bad) {
        std::printf("rocprim: %d results differ\n", bad);
        return 1;
    }
    std::printf("rocprim: ok (radix_sort_keys, reduce and inclusive_scan of %zu keys)\n", n);
    return 0;
}
