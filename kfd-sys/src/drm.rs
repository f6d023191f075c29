//! The DRM core and amdgpu render-node uapi the project speaks (`include/uapi/drm/drm.h` and
//! `include/uapi/drm/amdgpu_drm.h`; Debian ships them as `libdrm/drm.h` and
//! `libdrm/amdgpu_drm.h`): the request codes libdrm and libdrm_amdgpu send, computed with the
//! same `_IOC` encoding as the `AMDKFD_IOC_*` codes, and the query ids, GEM domains, flags and
//! operation codes the model decodes. C names are kept, as in the rest of the crate.
//!
//! The argument structs are spelled by their users (the shim); here each request's argument
//! size is a constant of [`size`], named after the C type and checked against the header by
//! the shim's header test.

use crate::ioctl::{ioc, IOC_READ, IOC_WRITE};

/// `DRM_IOCTL_BASE`: the DRM ioctl type byte, `'d'`.
pub const DRM_IOCTL_BASE: u32 = b'd' as u32;
/// `DRM_COMMAND_BASE`: the first command number of driver-specific ioctls.
pub const DRM_COMMAND_BASE: u32 = 0x40;

/// `DRM_IOW(nr, type)` for an argument of `size` bytes.
pub const fn drm_iow(nr: u32, size: usize) -> u32 {
    ioc(IOC_WRITE, DRM_IOCTL_BASE, nr, size)
}

/// `DRM_IOWR(nr, type)` for an argument of `size` bytes.
pub const fn drm_iowr(nr: u32, size: usize) -> u32 {
    ioc(IOC_READ | IOC_WRITE, DRM_IOCTL_BASE, nr, size)
}

/// The argument sizes of the requests below on x86-64, each named after its C type
/// (`sizeof(struct drm_version)`, …); a union is as large as its input member.
pub mod size {
    /// `sizeof(struct drm_version)`.
    pub const drm_version: usize = 64;
    /// `sizeof(struct drm_gem_close)`.
    pub const drm_gem_close: usize = 8;
    /// `sizeof(struct drm_prime_handle)`.
    pub const drm_prime_handle: usize = 12;
    /// `sizeof(union drm_amdgpu_gem_create)`.
    pub const drm_amdgpu_gem_create: usize = 32;
    /// `sizeof(union drm_amdgpu_gem_mmap)`.
    pub const drm_amdgpu_gem_mmap: usize = 8;
    /// `sizeof(union drm_amdgpu_ctx)`.
    pub const drm_amdgpu_ctx: usize = 16;
    /// `sizeof(union drm_amdgpu_bo_list)`.
    pub const drm_amdgpu_bo_list: usize = 24;
    /// `sizeof(union drm_amdgpu_cs)`.
    pub const drm_amdgpu_cs: usize = 24;
    /// `sizeof(struct drm_amdgpu_info)`.
    pub const drm_amdgpu_info: usize = 32;
    /// `sizeof(struct drm_amdgpu_gem_metadata)`.
    pub const drm_amdgpu_gem_metadata: usize = 288;
    /// `sizeof(struct drm_amdgpu_gem_va)`.
    pub const drm_amdgpu_gem_va: usize = 40;
    /// `sizeof(union drm_amdgpu_wait_cs)`.
    pub const drm_amdgpu_wait_cs: usize = 32;
    /// `sizeof(struct drm_amdgpu_gem_op)`.
    pub const drm_amdgpu_gem_op: usize = 16;
}

// DRM core requests.

/// `DRM_IOCTL_VERSION`: `DRM_IOWR(0x00, struct drm_version)`.
pub const DRM_IOCTL_VERSION: u32 = drm_iowr(0x00, size::drm_version);
/// `DRM_IOCTL_GEM_CLOSE`: `DRM_IOW(0x09, struct drm_gem_close)`.
pub const DRM_IOCTL_GEM_CLOSE: u32 = drm_iow(0x09, size::drm_gem_close);
/// `DRM_IOCTL_PRIME_HANDLE_TO_FD`: `DRM_IOWR(0x2d, struct drm_prime_handle)`.
pub const DRM_IOCTL_PRIME_HANDLE_TO_FD: u32 = drm_iowr(0x2d, size::drm_prime_handle);

// amdgpu command numbers (relative to `DRM_COMMAND_BASE`).

/// `DRM_AMDGPU_GEM_CREATE`.
pub const DRM_AMDGPU_GEM_CREATE: u32 = 0x00;
/// `DRM_AMDGPU_GEM_MMAP`.
pub const DRM_AMDGPU_GEM_MMAP: u32 = 0x01;
/// `DRM_AMDGPU_CTX`.
pub const DRM_AMDGPU_CTX: u32 = 0x02;
/// `DRM_AMDGPU_BO_LIST`.
pub const DRM_AMDGPU_BO_LIST: u32 = 0x03;
/// `DRM_AMDGPU_CS`.
pub const DRM_AMDGPU_CS: u32 = 0x04;
/// `DRM_AMDGPU_INFO`.
pub const DRM_AMDGPU_INFO: u32 = 0x05;
/// `DRM_AMDGPU_GEM_METADATA`.
pub const DRM_AMDGPU_GEM_METADATA: u32 = 0x06;
/// `DRM_AMDGPU_GEM_VA`.
pub const DRM_AMDGPU_GEM_VA: u32 = 0x08;
/// `DRM_AMDGPU_WAIT_CS`.
pub const DRM_AMDGPU_WAIT_CS: u32 = 0x09;
/// `DRM_AMDGPU_GEM_OP`.
pub const DRM_AMDGPU_GEM_OP: u32 = 0x10;

// amdgpu requests.

/// `DRM_IOCTL_AMDGPU_GEM_CREATE`: `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_CREATE, union
/// drm_amdgpu_gem_create)`.
pub const DRM_IOCTL_AMDGPU_GEM_CREATE: u32 = drm_iowr(
    DRM_COMMAND_BASE + DRM_AMDGPU_GEM_CREATE,
    size::drm_amdgpu_gem_create,
);
/// `DRM_IOCTL_AMDGPU_GEM_MMAP`: `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_MMAP, union
/// drm_amdgpu_gem_mmap)`.
pub const DRM_IOCTL_AMDGPU_GEM_MMAP: u32 = drm_iowr(
    DRM_COMMAND_BASE + DRM_AMDGPU_GEM_MMAP,
    size::drm_amdgpu_gem_mmap,
);
/// `DRM_IOCTL_AMDGPU_CTX`: `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_CTX, union drm_amdgpu_ctx)`.
pub const DRM_IOCTL_AMDGPU_CTX: u32 =
    drm_iowr(DRM_COMMAND_BASE + DRM_AMDGPU_CTX, size::drm_amdgpu_ctx);
/// `DRM_IOCTL_AMDGPU_BO_LIST`: `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_BO_LIST, union
/// drm_amdgpu_bo_list)`.
pub const DRM_IOCTL_AMDGPU_BO_LIST: u32 = drm_iowr(
    DRM_COMMAND_BASE + DRM_AMDGPU_BO_LIST,
    size::drm_amdgpu_bo_list,
);
/// `DRM_IOCTL_AMDGPU_CS`: `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_CS, union drm_amdgpu_cs)`.
pub const DRM_IOCTL_AMDGPU_CS: u32 =
    drm_iowr(DRM_COMMAND_BASE + DRM_AMDGPU_CS, size::drm_amdgpu_cs);
/// `DRM_IOCTL_AMDGPU_INFO`: `DRM_IOW(DRM_COMMAND_BASE + DRM_AMDGPU_INFO, struct
/// drm_amdgpu_info)`.
pub const DRM_IOCTL_AMDGPU_INFO: u32 =
    drm_iow(DRM_COMMAND_BASE + DRM_AMDGPU_INFO, size::drm_amdgpu_info);
/// `DRM_IOCTL_AMDGPU_GEM_METADATA`: `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_METADATA,
/// struct drm_amdgpu_gem_metadata)`.
pub const DRM_IOCTL_AMDGPU_GEM_METADATA: u32 = drm_iowr(
    DRM_COMMAND_BASE + DRM_AMDGPU_GEM_METADATA,
    size::drm_amdgpu_gem_metadata,
);
/// `DRM_IOCTL_AMDGPU_GEM_VA`: `DRM_IOW(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_VA, struct
/// drm_amdgpu_gem_va)`.
pub const DRM_IOCTL_AMDGPU_GEM_VA: u32 = drm_iow(
    DRM_COMMAND_BASE + DRM_AMDGPU_GEM_VA,
    size::drm_amdgpu_gem_va,
);
/// `DRM_IOCTL_AMDGPU_WAIT_CS`: `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_WAIT_CS, union
/// drm_amdgpu_wait_cs)`.
pub const DRM_IOCTL_AMDGPU_WAIT_CS: u32 = drm_iowr(
    DRM_COMMAND_BASE + DRM_AMDGPU_WAIT_CS,
    size::drm_amdgpu_wait_cs,
);
/// `DRM_IOCTL_AMDGPU_GEM_OP`: `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, struct
/// drm_amdgpu_gem_op)`.
pub const DRM_IOCTL_AMDGPU_GEM_OP: u32 = drm_iowr(
    DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP,
    size::drm_amdgpu_gem_op,
);

// GEM domains and creation flags.

/// `AMDGPU_GEM_DOMAIN_CPU`.
pub const AMDGPU_GEM_DOMAIN_CPU: u64 = 0x1;
/// `AMDGPU_GEM_DOMAIN_GTT`.
pub const AMDGPU_GEM_DOMAIN_GTT: u64 = 0x2;
/// `AMDGPU_GEM_DOMAIN_VRAM`.
pub const AMDGPU_GEM_DOMAIN_VRAM: u64 = 0x4;
/// `AMDGPU_GEM_DOMAIN_GDS`.
pub const AMDGPU_GEM_DOMAIN_GDS: u64 = 0x8;
/// `AMDGPU_GEM_DOMAIN_GWS`.
pub const AMDGPU_GEM_DOMAIN_GWS: u64 = 0x10;
/// `AMDGPU_GEM_DOMAIN_OA`.
pub const AMDGPU_GEM_DOMAIN_OA: u64 = 0x20;
/// `AMDGPU_GEM_DOMAIN_MASK`: every domain bit.
pub const AMDGPU_GEM_DOMAIN_MASK: u64 = AMDGPU_GEM_DOMAIN_CPU
    | AMDGPU_GEM_DOMAIN_GTT
    | AMDGPU_GEM_DOMAIN_VRAM
    | AMDGPU_GEM_DOMAIN_GDS
    | AMDGPU_GEM_DOMAIN_GWS
    | AMDGPU_GEM_DOMAIN_OA;
/// `AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED`.
pub const AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED: u64 = 1 << 0;

// GEM VA operations and page flags.

/// `AMDGPU_VA_OP_MAP`.
pub const AMDGPU_VA_OP_MAP: u32 = 1;
/// `AMDGPU_VA_OP_UNMAP`.
pub const AMDGPU_VA_OP_UNMAP: u32 = 2;
/// `AMDGPU_VA_OP_CLEAR`.
pub const AMDGPU_VA_OP_CLEAR: u32 = 3;
/// `AMDGPU_VA_OP_REPLACE`.
pub const AMDGPU_VA_OP_REPLACE: u32 = 4;
/// `AMDGPU_VM_PAGE_WRITEABLE`.
pub const AMDGPU_VM_PAGE_WRITEABLE: u32 = 1 << 2;
/// `AMDGPU_VM_PAGE_PRT`: partially resident textures.
pub const AMDGPU_VM_PAGE_PRT: u32 = 1 << 4;

// GEM metadata and GEM operations.

/// `AMDGPU_GEM_METADATA_OP_SET_METADATA`.
pub const AMDGPU_GEM_METADATA_OP_SET_METADATA: u32 = 1;
/// `AMDGPU_GEM_METADATA_OP_GET_METADATA`.
pub const AMDGPU_GEM_METADATA_OP_GET_METADATA: u32 = 2;
/// `AMDGPU_GEM_OP_GET_GEM_CREATE_INFO`.
pub const AMDGPU_GEM_OP_GET_GEM_CREATE_INFO: u32 = 0;
/// `AMDGPU_GEM_OP_SET_PLACEMENT`.
pub const AMDGPU_GEM_OP_SET_PLACEMENT: u32 = 1;

// Submission contexts.

/// `AMDGPU_CTX_OP_ALLOC_CTX`.
pub const AMDGPU_CTX_OP_ALLOC_CTX: u32 = 1;
/// `AMDGPU_CTX_OP_FREE_CTX`.
pub const AMDGPU_CTX_OP_FREE_CTX: u32 = 2;
/// `AMDGPU_CTX_OP_QUERY_STATE`.
pub const AMDGPU_CTX_OP_QUERY_STATE: u32 = 3;
/// `AMDGPU_CTX_OP_QUERY_STATE2`.
pub const AMDGPU_CTX_OP_QUERY_STATE2: u32 = 4;
/// `AMDGPU_CTX_OP_GET_STABLE_PSTATE`.
pub const AMDGPU_CTX_OP_GET_STABLE_PSTATE: u32 = 5;
/// `AMDGPU_CTX_OP_SET_STABLE_PSTATE`.
pub const AMDGPU_CTX_OP_SET_STABLE_PSTATE: u32 = 6;
/// `AMDGPU_CTX_NO_RESET`: what `QUERY_STATE` reports when the GPU was not reset.
pub const AMDGPU_CTX_NO_RESET: u32 = 0;
/// `AMDGPU_CTX_UNKNOWN_RESET`: what `QUERY_STATE` reports once after a reset.
pub const AMDGPU_CTX_UNKNOWN_RESET: u32 = 3;
/// `AMDGPU_CTX_QUERY2_FLAGS_RESET`: the GPU was reset since the context was created.
pub const AMDGPU_CTX_QUERY2_FLAGS_RESET: u64 = 1 << 0;
/// `AMDGPU_CTX_QUERY2_FLAGS_GUILTY`: a job of this context hung the GPU.
pub const AMDGPU_CTX_QUERY2_FLAGS_GUILTY: u64 = 1 << 2;
/// `AMDGPU_CTX_PRIORITY_UNSET`.
pub const AMDGPU_CTX_PRIORITY_UNSET: i32 = -2048;
/// `AMDGPU_CTX_PRIORITY_VERY_LOW`.
pub const AMDGPU_CTX_PRIORITY_VERY_LOW: i32 = -1023;
/// `AMDGPU_CTX_PRIORITY_LOW`.
pub const AMDGPU_CTX_PRIORITY_LOW: i32 = -512;
/// `AMDGPU_CTX_PRIORITY_NORMAL`.
pub const AMDGPU_CTX_PRIORITY_NORMAL: i32 = 0;
/// `AMDGPU_CTX_PRIORITY_HIGH` (needs `CAP_SYS_NICE` or DRM master).
pub const AMDGPU_CTX_PRIORITY_HIGH: i32 = 512;
/// `AMDGPU_CTX_PRIORITY_VERY_HIGH` (needs `CAP_SYS_NICE` or DRM master).
pub const AMDGPU_CTX_PRIORITY_VERY_HIGH: i32 = 1023;
/// `AMDGPU_CTX_STABLE_PSTATE_FLAGS_MASK`.
pub const AMDGPU_CTX_STABLE_PSTATE_FLAGS_MASK: u32 = 0xF;
/// `AMDGPU_CTX_STABLE_PSTATE_NONE`.
pub const AMDGPU_CTX_STABLE_PSTATE_NONE: u32 = 0;
/// `AMDGPU_CTX_STABLE_PSTATE_PEAK`: the highest state.
pub const AMDGPU_CTX_STABLE_PSTATE_PEAK: u32 = 4;

// BO lists and command submission.

/// `AMDGPU_BO_LIST_OP_CREATE`.
pub const AMDGPU_BO_LIST_OP_CREATE: u32 = 0;
/// `AMDGPU_BO_LIST_OP_DESTROY`.
pub const AMDGPU_BO_LIST_OP_DESTROY: u32 = 1;
/// `AMDGPU_BO_LIST_OP_UPDATE`.
pub const AMDGPU_BO_LIST_OP_UPDATE: u32 = 2;
/// `AMDGPU_HW_IP_GFX`.
pub const AMDGPU_HW_IP_GFX: u32 = 0;
/// `AMDGPU_HW_IP_COMPUTE`.
pub const AMDGPU_HW_IP_COMPUTE: u32 = 1;
/// `AMDGPU_HW_IP_DMA`: the SDMA engines.
pub const AMDGPU_HW_IP_DMA: u32 = 2;
/// `AMDGPU_HW_IP_NUM`: IP types are below it.
pub const AMDGPU_HW_IP_NUM: u32 = 9;
/// `AMDGPU_CHUNK_ID_IB`.
pub const AMDGPU_CHUNK_ID_IB: u32 = 0x01;
/// `AMDGPU_CHUNK_ID_FENCE`.
pub const AMDGPU_CHUNK_ID_FENCE: u32 = 0x02;
/// `AMDGPU_CHUNK_ID_DEPENDENCIES`.
pub const AMDGPU_CHUNK_ID_DEPENDENCIES: u32 = 0x03;
/// `AMDGPU_CHUNK_ID_SYNCOBJ_IN`.
pub const AMDGPU_CHUNK_ID_SYNCOBJ_IN: u32 = 0x04;
/// `AMDGPU_CHUNK_ID_SYNCOBJ_OUT`.
pub const AMDGPU_CHUNK_ID_SYNCOBJ_OUT: u32 = 0x05;
/// `AMDGPU_CHUNK_ID_BO_HANDLES`.
pub const AMDGPU_CHUNK_ID_BO_HANDLES: u32 = 0x06;
/// `AMDGPU_CHUNK_ID_SCHEDULED_DEPENDENCIES`.
pub const AMDGPU_CHUNK_ID_SCHEDULED_DEPENDENCIES: u32 = 0x07;
/// `AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_WAIT`.
pub const AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_WAIT: u32 = 0x08;
/// `AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_SIGNAL`.
pub const AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_SIGNAL: u32 = 0x09;

// `DRM_IOCTL_AMDGPU_INFO` queries and what they report.

/// `AMDGPU_INFO_ACCEL_WORKING`.
pub const AMDGPU_INFO_ACCEL_WORKING: u32 = 0x00;
/// `AMDGPU_INFO_VRAM_USAGE`.
pub const AMDGPU_INFO_VRAM_USAGE: u32 = 0x10;
/// `AMDGPU_INFO_GTT_USAGE`.
pub const AMDGPU_INFO_GTT_USAGE: u32 = 0x11;
/// `AMDGPU_INFO_VRAM_GTT`.
pub const AMDGPU_INFO_VRAM_GTT: u32 = 0x14;
/// `AMDGPU_INFO_READ_MMR_REG`.
pub const AMDGPU_INFO_READ_MMR_REG: u32 = 0x15;
/// `AMDGPU_INFO_DEV_INFO`.
pub const AMDGPU_INFO_DEV_INFO: u32 = 0x16;
/// `AMDGPU_INFO_VIS_VRAM_USAGE`.
pub const AMDGPU_INFO_VIS_VRAM_USAGE: u32 = 0x17;
/// `AMDGPU_INFO_MEMORY`.
pub const AMDGPU_INFO_MEMORY: u32 = 0x19;
/// `AMDGPU_FAMILY_AI`: gfx9.
pub const AMDGPU_FAMILY_AI: u32 = 141;
/// `AMDGPU_FAMILY_NV`: gfx10.
pub const AMDGPU_FAMILY_NV: u32 = 143;
/// `AMDGPU_VRAM_TYPE_HBM`.
pub const AMDGPU_VRAM_TYPE_HBM: u32 = 6;
/// `AMDGPU_VRAM_TYPE_GDDR6`.
pub const AMDGPU_VRAM_TYPE_GDDR6: u32 = 9;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ioctl::{ioc_dir, ioc_nr, ioc_size, ioc_type};

    /// The request codes as `drm.h` and `amdgpu_drm.h` (libdrm 2.4, x86-64) give them: printed
    /// by a C program including the headers.
    #[test]
    fn request_codes_match_the_headers() {
        let expected: [(u32, u32); 14] = [
            (DRM_IOCTL_VERSION, 0xC040_6400),
            (DRM_IOCTL_GEM_CLOSE, 0x4008_6409),
            (DRM_IOCTL_PRIME_HANDLE_TO_FD, 0xC00C_642D),
            (DRM_IOCTL_AMDGPU_GEM_CREATE, 0xC020_6440),
            (DRM_IOCTL_AMDGPU_GEM_MMAP, 0xC008_6441),
            (DRM_IOCTL_AMDGPU_CTX, 0xC010_6442),
            (DRM_IOCTL_AMDGPU_BO_LIST, 0xC018_6443),
            (DRM_IOCTL_AMDGPU_CS, 0xC018_6444),
            (DRM_IOCTL_AMDGPU_INFO, 0x4020_6445),
            (DRM_IOCTL_AMDGPU_GEM_METADATA, 0xC120_6446),
            (DRM_IOCTL_AMDGPU_GEM_VA, 0x4028_6448),
            (DRM_IOCTL_AMDGPU_WAIT_CS, 0xC020_6449),
            (DRM_IOCTL_AMDGPU_GEM_OP, 0xC010_6450),
            (
                crate::ioctl::with_size(DRM_IOCTL_AMDGPU_GEM_OP, size::drm_amdgpu_gem_op).unwrap(),
                0xC010_6450,
            ),
        ];
        for (got, want) in expected {
            assert_eq!(got, want, "{got:#x} != {want:#x}");
            assert_eq!(ioc_type(got), DRM_IOCTL_BASE);
        }
        assert_eq!(ioc_nr(DRM_IOCTL_AMDGPU_GEM_OP), 0x50);
        assert_eq!(ioc_size(DRM_IOCTL_AMDGPU_GEM_METADATA), 288);
        assert_eq!(ioc_dir(DRM_IOCTL_AMDGPU_INFO), IOC_WRITE);
    }

    /// Values as the headers give them (the same C program).
    #[test]
    fn constants_match_the_headers() {
        assert_eq!(AMDGPU_GEM_DOMAIN_MASK, 0x3F);
        assert_eq!([AMDGPU_VM_PAGE_WRITEABLE, AMDGPU_VM_PAGE_PRT], [0x4, 0x10]);
        assert_eq!(
            [
                AMDGPU_CTX_QUERY2_FLAGS_RESET,
                AMDGPU_CTX_QUERY2_FLAGS_GUILTY
            ],
            [0x1, 0x4]
        );
        assert_eq!(
            [
                AMDGPU_INFO_ACCEL_WORKING,
                AMDGPU_INFO_VRAM_USAGE,
                AMDGPU_INFO_GTT_USAGE,
                AMDGPU_INFO_VRAM_GTT,
                AMDGPU_INFO_READ_MMR_REG,
                AMDGPU_INFO_DEV_INFO,
                AMDGPU_INFO_VIS_VRAM_USAGE,
                AMDGPU_INFO_MEMORY,
            ],
            [0x00, 0x10, 0x11, 0x14, 0x15, 0x16, 0x17, 0x19]
        );
        assert_eq!([AMDGPU_FAMILY_AI, AMDGPU_FAMILY_NV], [0x8D, 0x8F]);
    }
}
