// A HIP program for two targets; its fat binary, host kernel handles and stubs are what
// codeobj's container tests read.
#include <hip/hip_runtime.h>

__device__ __attribute__((noinline)) int dev_square(int x) { return x * x; }

__global__ void square_kernel(int *out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = dev_square(i);
}

template <typename T> __global__ void scale_kernel(T *out, T factor) { out[threadIdx.x] *= factor; }
template __global__ void scale_kernel<float>(float *, float);

int main() {
  hipLaunchKernelGGL(square_kernel, dim3(1), dim3(64), 0, 0, static_cast<int *>(nullptr), 64);
  hipLaunchKernelGGL(scale_kernel<float>, dim3(1), dim3(64), 0, 0, static_cast<float *>(nullptr), 2.0f);
  return 0;
}
