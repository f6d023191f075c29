// Cooperative groups: a grid-wide barrier (`this_grid().sync()`, a GWS barrier: ds_gws_init in
// HIP's own init kernel, ds_gws_barrier in this one) between phases that read what other
// workgroups wrote in the phase before. Launched with hipLaunchCooperativeKernel; checked
// against a host reference.
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

#define CHECK(x)                                                              \
  do {                                                                        \
    hipError_t e = (x);                                                       \
    if (e != hipSuccess) {                                                    \
      printf("FAIL %s: %s (line %d)\n", #x, hipGetErrorString(e), __LINE__); \
      return 1;                                                               \
    }                                                                         \
  } while (0)

constexpr int kPhases = 12;

// Each phase: every element takes the sum of itself and its mirror element (written by
// another workgroup in the phase before), plus the phase number. Double-buffered, so a
// missing grid barrier reads stale or half-written data.
__global__ void phases(int* a, int* b, int n, int* total) {
  cg::grid_group grid = cg::this_grid();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int p = 0; p < kPhases; p++) {
    int* from = (p & 1) ? b : a;
    int* to = (p & 1) ? a : b;
    if (i < n) to[i] = from[i] + from[n - 1 - i] + p;
    grid.sync();
  }
  // After the last barrier one thread sums what every workgroup wrote.
  if (i == 0) {
    int s = 0;
    int* last = (kPhases & 1) ? b : a;
    for (int k = 0; k < n; k++) s += last[k];
    *total = s;
  }
}

int main() {
  hipDeviceProp_t prop;
  CHECK(hipGetDeviceProperties(&prop, 0));
  if (!prop.cooperativeLaunch) {
    printf("FAIL the device reports no cooperative launch\n");
    return 1;
  }
  const int blocks = 8, threads = 256, n = blocks * threads;
  std::vector<int> host(n);
  for (int k = 0; k < n; k++) host[k] = (k * 7) % 13;
  int *a, *b, *total;
  CHECK(hipMalloc(&a, n * sizeof(int)));
  CHECK(hipMalloc(&b, n * sizeof(int)));
  CHECK(hipMalloc(&total, sizeof(int)));
  CHECK(hipMemcpy(a, host.data(), n * sizeof(int), hipMemcpyHostToDevice));
  int nn = n;
  void* args[] = {&a, &b, &nn, &total};
  CHECK(hipLaunchCooperativeKernel((void*)phases, dim3(blocks), dim3(threads), args, 0, 0));
  CHECK(hipDeviceSynchronize());
  std::vector<int> got(n);
  int* last = (kPhases & 1) ? b : a;
  CHECK(hipMemcpy(got.data(), last, n * sizeof(int), hipMemcpyDeviceToHost));
  int got_total = 0;
  CHECK(hipMemcpy(&got_total, total, sizeof(int), hipMemcpyDeviceToHost));
  // Host reference.
  std::vector<int> x = host, y(n);
  for (int p = 0; p < kPhases; p++) {
    for (int k = 0; k < n; k++) y[k] = x[k] + x[n - 1 - k] + p;
    x.swap(y);
  }
  int want_total = 0, wrong = 0;
  for (int k = 0; k < n; k++) {
    want_total += x[k];
    if (got[k] != x[k]) wrong++;
  }
  printf("%s %d phases over %d workgroups: %d of %d elements correct\n", wrong ? "FAIL" : "PASS",
         kPhases, blocks, n - wrong, n);
  printf("%s total after the last barrier: %d (want %d)\n",
         got_total == want_total ? "PASS" : "FAIL", got_total, want_total);
  if (wrong != 0 || got_total != want_total) return 1;
  printf("coop: ok (%d grid barriers over %d workgroups, %d of %d correct)\n", kPhases, blocks,
         n - wrong, n);
  return 0;
}
