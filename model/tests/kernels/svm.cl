// Kernels for model/tests/svm.rs: they touch host memory the process registered only as SVM
// ranges, so a page's first access from the GPU may be a page fault. Compiled with clang-15
// -nogpulib at test time (work-item ids from clang builtins and the dispatch packet).

#define LOCAL_SIZE_X() (((const __constant unsigned short *)__builtin_amdgcn_dispatch_ptr())[2])
#define GLOBAL_X() (__builtin_amdgcn_workgroup_id_x() * LOCAL_SIZE_X() + __builtin_amdgcn_workitem_id_x())

// One atomic increment per work-item — of count[0] for lanes 0-31 of a wave, of count[1024]
// (the next page) for lanes 32-63 — then out[i] = in[i % 64] * 3 + 1. The atomic comes first,
// so a dispatch that started over after a later fault would count twice.
kernel void svm_scale(global const int *in, global int *out, global int *count) {
    uint i = GLOBAL_X();
    __atomic_fetch_add(count + ((i & 32) ? 1024 : 0), 1, __ATOMIC_RELAXED);
    out[i] = in[i & 63] * 3 + 1;
}
