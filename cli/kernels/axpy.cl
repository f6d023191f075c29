// The project's own kernel for `kfd demo` (make run) and `kfd trace dispatch`:
// y[i] = a * x[i] + y[i] over n unsigned integers, exact, so the host checks every element.
// Only clang builtins (no device library): the work-item's index comes from the workgroup
// id, the workgroup size and the work-item id, as the ABI hands them to the wave.
// Rebuild the kept code objects with ./regenerate.sh (the exact clang-15 commands).

__kernel void axpy(__global const uint *x, __global uint *y, uint a, uint n) {
    uint i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
             __builtin_amdgcn_workitem_id_x();
    if (i < n)
        y[i] = a * x[i] + y[i];
}
