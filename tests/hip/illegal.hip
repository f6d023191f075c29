// A kernel that executes an invalid instruction word (inline asm .long 0xffffffff, which
// decodes to no gfx9 instruction): on a GPU the SQ raises an illegal-instruction exception,
// ROCr reports it and aborts. On the kfd model the program must likewise report an error and
// end with a nonzero status within the time limit — never hang (scripts/hip-tests.sh).
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void bad_word(int *p) {
    p[threadIdx.x] = 1;
    asm volatile(".long 0xffffffff");
    p[threadIdx.x] = 2;
}

int main() {
    int *d = nullptr;
    if (hipMalloc(&d, 64 * sizeof(int)) != hipSuccess)
        return 2;
    hipLaunchKernelGGL(bad_word, dim3(1), dim3(64), 0, 0, d);
    hipError_t e = hipDeviceSynchronize();
    std::printf("illegal: hipDeviceSynchronize returned %s\n", hipGetErrorString(e));
    // Reaching here with success would mean the invalid word was executed as something.
    return e == hipSuccess ? 0 : 3;
}
