// Kernels that call device functions of devlib.cl without defining them: the code object is
// linked with the undefined symbols left for the loader (ld.lld-15 -shared --allow-shlib-undefined).

extern int lib_add(int a, int b);
extern int lib_mul(int a, int b);
extern global int lib_counter;

kernel void add_kernel(global int *out, int a, int b) {
  out[__builtin_amdgcn_workitem_id_x()] = lib_add(a, b) + lib_counter;
}

kernel void mul_kernel(global int *out, int a, int b) {
  out[__builtin_amdgcn_workitem_id_x()] = lib_mul(a, b);
}
