// A kernel that calls abort() (s_trap 2): on a GPU, ROCr's trap handler marks the queue
// and ROCr reports the error and aborts the process. On the kfd model it must do the
// same — never hang (scripts/hip-tests.sh checks the message and that the process ends).
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void stop_here(int *p) {
    if (threadIdx.x == 3) abort();
    p[threadIdx.x] = 1;
}

int main() {
    int *d = nullptr;
    if (hipMalloc(&d, 64 * sizeof(int)) != hipSuccess) return 2;
    hipLaunchKernelGGL(stop_here, dim3(1), dim3(64), 0, 0, d);
    hipError_t e = hipDeviceSynchronize();
    std::printf("trap: hipDeviceSynchronize returned %s\n", hipGetErrorString(e));
    return 0;
}
