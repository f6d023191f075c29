// Device printf (HIP 5.2's hostcall): the kernel pushes its format and arguments to a host
// listener through a lock-free stack, signals it with s_sendmsg(MSG_INTERRUPT) and polls
// for the reply. scripts/hip-tests.sh checks that every thread's line arrives.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void hello() { printf("hello %d\n", int(threadIdx.x)); }

int main() {
    hipLaunchKernelGGL(hello, dim3(1), dim3(4), 0, 0);
    hipError_t e = hipDeviceSynchronize();
    std::printf("printf: %s\n", e == hipSuccess ? "ok" : hipGetErrorString(e));
    return e == hipSuccess ? 0 : 1;
}
