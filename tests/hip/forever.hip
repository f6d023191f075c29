// A kernel that never ends, launched and then abandoned: main returns without waiting for it.
// On a GPU the process exit tears the queue down and the kernel stops; on the kfd model the
// process must end likewise, within a bounded time (scripts/hip-tests.sh measures it).
// Prints "forever: launched" before returning 0.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void spin(volatile int *flag) {
    // The host never sets the flag: an endless loop that the compiler cannot remove.
    while (*flag == 0)
        __builtin_amdgcn_s_sleep(1);
}

int main() {
    int *flag = nullptr;
    if (hipMalloc(&flag, sizeof(int)) != hipSuccess)
        return 2;
    if (hipMemset(flag, 0, sizeof(int)) != hipSuccess)
        return 2;
    hipLaunchKernelGGL(spin, dim3(2), dim3(64), 0, 0, flag);
    if (hipGetLastError() != hipSuccess)
        return 2;
    std::printf("forever: launched\n");
    std::fflush(stdout);
    return 0;
}
