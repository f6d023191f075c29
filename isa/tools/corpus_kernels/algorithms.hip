// rocPRIM's device algorithms, instantiated for a few key and value types (compiled for
// the compiler corpus by isa/tools/corpus.py against Debian's librocprim-dev; not run).
#include <hip/hip_runtime.h>
// Debian 12's rocPRIM 5.3 headers with its HIP 5.2: the algorithms one by one (rocprim.hpp
// pulls in a histogram configuration that needs a newer HIP).
#include <iostream>
#include <rocprim/device/device_merge_sort.hpp>
#include <rocprim/device/device_partition.hpp>
#include <rocprim/device/device_radix_sort.hpp>
#include <rocprim/device/device_reduce.hpp>
#include <rocprim/device/device_run_length_encode.hpp>
#include <rocprim/device/device_scan.hpp>
#include <rocprim/device/device_segmented_radix_sort.hpp>
#include <rocprim/device/device_segmented_reduce.hpp>
#include <rocprim/device/device_select.hpp>
#include <rocprim/device/device_transform.hpp>

template <class K, class V>
void sorts(K* k, K* k2, V* v, V* v2, size_t n, void* tmp, size_t bytes) {
    rocprim::radix_sort_keys(tmp, bytes, k, k2, n);
    rocprim::radix_sort_pairs(tmp, bytes, k, k2, v, v2, n);
    rocprim::merge_sort(tmp, bytes, k, k2, n);
    rocprim::merge_sort(tmp, bytes, k, k2, v, v2, n);
    rocprim::inclusive_scan(tmp, bytes, k, k2, n, rocprim::plus<K>());
    rocprim::exclusive_scan(tmp, bytes, k, k2, K(0), n, rocprim::plus<K>());
    rocprim::reduce(tmp, bytes, k, k2, n, rocprim::maximum<K>());
    rocprim::transform(k, k2, n, [] __device__(K x) { return x * K(3); });
    rocprim::partition(tmp, bytes, k, k2, (unsigned*)v2, n,
                       [] __device__(K x) { return x > K(2); });
    rocprim::select(tmp, bytes, k, k2, (unsigned*)v2, n,
                    [] __device__(K x) { return x < K(9); });
    rocprim::unique(tmp, bytes, k, k2, (unsigned*)v2, n);
    rocprim::run_length_encode(tmp, bytes, k, n, k2, (unsigned*)v, (unsigned*)v2);
    rocprim::segmented_reduce(tmp, bytes, k, k2, 4u, (unsigned*)v, (unsigned*)v + 1,
                              rocprim::plus<K>(), K(0));
    rocprim::segmented_radix_sort_keys(tmp, bytes, k, k2, n, 4u, (unsigned*)v,
                                       (unsigned*)v + 1);
}

// 16-bit keys (merge sort's v_med3_u16/v_med3_i16), and 64-bit values.
template void sorts<unsigned short, float>(unsigned short*, unsigned short*, float*, float*,
                                           size_t, void*, size_t);
template void sorts<short, double>(short*, short*, double*, double*, size_t, void*, size_t);
