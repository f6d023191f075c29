// Kernels for thunk/tests/dispatch.rs: no device libraries, only clang builtins.

__kernel void vadd(__global const float *a, __global const float *b, __global float *c,
                   uint n) {
    uint i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
             __builtin_amdgcn_workitem_id_x();
    if (i < n)
        c[i] = a[i] + b[i];
}

// Copies the hidden arguments the runtime filled in, as the code object's ABI lays them out
// after the explicit ones (work-item 0 of group 0 only).
__kernel void hidden_args(__global uint *out, uint words) {
    if (__builtin_amdgcn_workgroup_id_x() == 0 && __builtin_amdgcn_workitem_id_x() == 0) {
        __constant uint *implicit = (__constant uint *)__builtin_amdgcn_implicitarg_ptr();
        for (uint i = 0; i < words; i++)
            out[i] = implicit[i];
        out[words] = __builtin_amdgcn_workgroup_size_x();
    }
}
