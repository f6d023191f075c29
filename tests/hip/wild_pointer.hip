// A kernel that stores through a wild pointer: on a GPU, ROCr reports a memory access fault
// and aborts the process. On the kfd model it must do the same — never hang
// (scripts/hip-tests.sh checks the message and that the process ends).
#include <hip/hip_runtime.h>
#include <cstdint>
#include <cstdio>

__global__ void store_to(int *p) { p[threadIdx.x] = 1; }

int main() {
    int *wild = reinterpret_cast<int *>(uintptr_t(0x7dead0000ull));
    hipLaunchKernelGGL(store_to, dim3(1), dim3(64), 0, 0, wild);
    hipError_t e = hipDeviceSynchronize();
    std::printf("wild_pointer: hipDeviceSynchronize returned %s\n", hipGetErrorString(e));
    return 0;
}
