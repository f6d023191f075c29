// Work-item functions and a workgroup barrier for OpenCL C built with -nogpulib (no device
// library): clang builtins and the HSA kernel dispatch packet. Every kernel source the tests,
// benches and examples compile through kfd-testkit's OpenCL builds includes this header
// (`#include "kfd_workitem.h"`; the builds pass its directory with -I).
#ifndef KFD_WORKITEM_H
#define KFD_WORKITEM_H

#define LOCAL_X() __builtin_amdgcn_workitem_id_x()
#define LOCAL_Y() __builtin_amdgcn_workitem_id_y()
#define GROUP_X() __builtin_amdgcn_workgroup_id_x()
#define GROUP_Y() __builtin_amdgcn_workgroup_id_y()
// hsa_kernel_dispatch_packet_t: workgroup_size_x/y (u16 at bytes 4, 6), grid_size_x (u32 at 12)
#define PACKET_U16(i) (((const __constant unsigned short *)__builtin_amdgcn_dispatch_ptr())[i])
#define PACKET_U32(i) (((const __constant unsigned int *)__builtin_amdgcn_dispatch_ptr())[i])
#define LOCAL_SIZE_X() PACKET_U16(2)
#define LOCAL_SIZE_Y() PACKET_U16(3)
#define GRID_X() PACKET_U32(3)
#define GLOBAL_X() (GROUP_X() * LOCAL_SIZE_X() + LOCAL_X())
#define GLOBAL_Y() (GROUP_Y() * LOCAL_SIZE_Y() + LOCAL_Y())
// A workgroup barrier with the memory ordering OpenCL's barrier(CLK_LOCAL_MEM_FENCE |
// CLK_GLOBAL_MEM_FENCE) gives within the workgroup.
#define BARRIER()                                                                          \
    do {                                                                                   \
        __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");                             \
        __builtin_amdgcn_s_barrier();                                                      \
        __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");                             \
    } while (0)

#endif
