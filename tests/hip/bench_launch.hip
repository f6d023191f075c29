// The empty-kernel launch latency #17 asks for (≤ 50 µs): hipLaunchKernelGGL of an empty kernel,
// then hipDeviceSynchronize, 2000 times after 50 warm-up launches; prints p50, p90 and p99.
// Run by scripts/hip-bench.sh (release shim, gfx900 and gfx90a); a benchmark, not a test.
#include <hip/hip_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
__global__ void empty() {}
int main() {
  for (int i = 0; i < 50; i++) { hipLaunchKernelGGL(empty, dim3(1), dim3(1), 0, 0); hipDeviceSynchronize(); }
  std::vector<double> us;
  for (int i = 0; i < 2000; i++) {
    auto t0 = std::chrono::steady_clock::now();
    hipLaunchKernelGGL(empty, dim3(1), dim3(1), 0, 0);
    hipDeviceSynchronize();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  printf("empty launch -> hipDeviceSynchronize: p50 %.1f us, p90 %.1f us, p99 %.1f us over %zu\n", us[us.size()/2], us[us.size()*9/10], us[us.size()*99/100], us.size());
}
