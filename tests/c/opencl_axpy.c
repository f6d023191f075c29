// One OpenCL program through the ROCm OpenCL runtime (rocm-opencl-icd) on the model: the
// kernel source is compiled at run time by the runtime's compiler for the modelled GPU, run
// over 64 Ki work-items in workgroups of 256, and every result is checked against the host:
//   axpy:   y[i] = a * x[i] + y[i]                     (global loads and stores)
//   sums:   per workgroup, the sum of its y values     (local memory and barriers)
// Integers, so the host's answer is exact. Prints "opencl: ok (...)" or the first mismatch.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (64 * 1024)
#define WG 256

static const char *source =
    "__kernel void axpy(int a, __global const int *x, __global int *y) {\n"
    "  size_t i = get_global_id(0);\n"
    "  y[i] = a * x[i] + y[i];\n"
    "}\n"
    "__kernel void sums(__global const int *y, __global int *out, __local int *tmp) {\n"
    "  size_t l = get_local_id(0);\n"
    "  tmp[l] = y[get_global_id(0)];\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {\n"
    "    if (l < s) tmp[l] += tmp[l + s];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (l == 0) out[get_group_id(0)] = tmp[0];\n"
    "}\n";

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cl_int err_ = (call);                                                                          \
    if (err_ != CL_SUCCESS) {                                                                      \
      printf("opencl: %s = %d\n", #call, err_);                                                    \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(void) {
  cl_platform_id platform;
  cl_device_id device;
  cl_uint n;
  cl_int err;
  CHECK(clGetPlatformIDs(1, &platform, &n));
  CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_GPU, 1, &device, &n));
  char name[256] = {0};
  CHECK(clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL));
  cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  CHECK(err);
  cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
  CHECK(err);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
  CHECK(err);
  if (clBuildProgram(prog, 1, &device, "", NULL, NULL) != CL_SUCCESS) {
    char log[4096] = {0};
    clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    printf("opencl: build failed:\n%s\n", log);
    return 1;
  }
  cl_kernel axpy = clCreateKernel(prog, "axpy", &err);
  CHECK(err);
  cl_kernel sums = clCreateKernel(prog, "sums", &err);
  CHECK(err);

  int *x = malloc(N * sizeof(int)), *y = malloc(N * sizeof(int)), *got = malloc(N * sizeof(int));
  int groups[N / WG], want_groups[N / WG];
  const int a = 3;
  for (int i = 0; i < N; i++) {
    x[i] = i % 1000 - 500;
    y[i] = (i * 7) % 333;
  }
  cl_mem bx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, N * sizeof(int), x, &err);
  CHECK(err);
  cl_mem by = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * sizeof(int), y, &err);
  CHECK(err);
  cl_mem bg = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof groups, NULL, &err);
  CHECK(err);
  CHECK(clSetKernelArg(axpy, 0, sizeof(int), &a));
  CHECK(clSetKernelArg(axpy, 1, sizeof(cl_mem), &bx));
  CHECK(clSetKernelArg(axpy, 2, sizeof(cl_mem), &by));
  CHECK(clSetKernelArg(sums, 0, sizeof(cl_mem), &by));
  CHECK(clSetKernelArg(sums, 1, sizeof(cl_mem), &bg));
  CHECK(clSetKernelArg(sums, 2, WG * sizeof(int), NULL));
  size_t global = N, local = WG;
  CHECK(clEnqueueNDRangeKernel(q, axpy, 1, NULL, &global, &local, 0, NULL, NULL));
  CHECK(clEnqueueNDRangeKernel(q, sums, 1, NULL, &global, &local, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(q, by, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(q, bg, CL_TRUE, 0, sizeof groups, groups, 0, NULL, NULL));

  for (int g = 0; g < N / WG; g++)
    want_groups[g] = 0;
  for (int i = 0; i < N; i++) {
    int want = a * x[i] + y[i];
    want_groups[i / WG] += want;
    if (got[i] != want) {
      printf("opencl: axpy y[%d] = %d, want %d\n", i, got[i], want);
      return 1;
    }
  }
  for (int g = 0; g < N / WG; g++) {
    if (groups[g] != want_groups[g]) {
      printf("opencl: sums[%d] = %d, want %d\n", g, groups[g], want_groups[g]);
      return 1;
    }
  }
  printf("opencl: ok (%s: %d axpy results, %d workgroup sums)\n", name, N, N / WG);
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  clReleaseMemObject(bg);
  clReleaseKernel(axpy);
  clReleaseKernel(sums);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  free(x);
  free(y);
  free(got);
  return 0;
}
