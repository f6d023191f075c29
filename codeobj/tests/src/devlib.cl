// A library of device functions and variables, built on its own into a code object
// (clang-15 -c, ld.lld-15 -shared) and linked at load time with kernels.cl by codeobj's loader.

global int lib_counter = 7;
// Static: only this code object sees it; the pointer to it needs an R_AMDGPU_RELATIVE64.
static global int lib_private = 11;
global int *global lib_private_ptr = &lib_private;

int lib_add(int a, int b) { return a + b + lib_counter + *lib_private_ptr; }

int lib_mul(int a, int b) { return a * b; }
