//! The DRM ioctls libdrm and libdrm_amdgpu send to a render node, answered from the model's
//! topology: `DRM_IOCTL_VERSION` (driver name `amdgpu`) and `DRM_IOCTL_AMDGPU_INFO` (device
//! information, memory sizes, register reads); and the buffer-object ioctls, answered by the
//! model's render-node file ([`gem_answer`]): `GEM_CREATE`, `GEM_MMAP`, `GEM_VA`, `GEM_CLOSE`,
//! `GEM_METADATA`, `GEM_OP` (`GET_GEM_CREATE_INFO`, `SET_PLACEMENT`), `PRIME_HANDLE_TO_FD`, the file's
//! submission contexts (`CTX`), BO lists (`BO_LIST`) and command submission (`CS`,
//! `WAIT_CS`).
//!
//! The request codes and constants are kfd-sys's ([`kfd_sys::drm`]). The argument structs
//! are spelled here (byte offsets as in `drm.h` / `amdgpu_drm.h` on x86-64) because only the
//! shim needs them; each is checked at compile time to be as large as its request code says. Every answer is built into a byte buffer; the
//! caller copies it to user memory, so a bad user pointer is `EFAULT`, never a crash.

use kfd_model::ctx::{CtxAnswer, CtxRequest};
use kfd_model::gem::BoMetadata;
use kfd_model::topology::Node;
use kfd_model::{Errno, KernelVersion, Preset};
use kfd_sys::drm::*;
use kfd_sys::gpu::VramType;
use kfd_sys::ioc_size;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Most entries of one BO list and chunks of one submission the shim reads.
pub const MAX_CS_ENTRIES: u32 = 1 << 16;

/// The GTT size the modelled driver reports (system memory the GPU may map).
pub const GTT_SIZE: u64 = 32 << 30;

/// Most registers one `READ_MMR_REG` query may read (the kernel's limit).
pub const MAX_MMR_READ: u32 = 128;

/// `struct drm_version` (64 bytes).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmVersion {
    /// Major version.
    pub version_major: i32,
    /// Minor version.
    pub version_minor: i32,
    /// Patch level.
    pub version_patchlevel: i32,
    /// Padding before the first pointer-sized field.
    pub pad: u32,
    /// In: room at `name`; out: length of the name.
    pub name_len: u64,
    /// User pointer for the name.
    pub name: u64,
    /// In: room at `date`; out: length of the date.
    pub date_len: u64,
    /// User pointer for the date.
    pub date: u64,
    /// In: room at `desc`; out: length of the description.
    pub desc_len: u64,
    /// User pointer for the description.
    pub desc: u64,
}

/// `struct drm_amdgpu_gem_create_in` (32 bytes), the input of `union drm_amdgpu_gem_create`;
/// the output (`drm_amdgpu_gem_create_out`: handle, pad) overlays its first 8 bytes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuGemCreateIn {
    /// Bytes.
    pub bo_size: u64,
    /// Physical alignment.
    pub alignment: u64,
    /// `AMDGPU_GEM_DOMAIN_*`.
    pub domains: u64,
    /// `AMDGPU_GEM_CREATE_*`.
    pub domain_flags: u64,
}

/// `struct drm_amdgpu_gem_create_out` (8 bytes).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuGemCreateOut {
    /// The new GEM handle.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct drm_amdgpu_gem_mmap_in` (8 bytes); the output (`drm_amdgpu_gem_mmap_out`:
/// `addr_ptr`, a u64) overlays it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuGemMmapIn {
    /// GEM handle.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct drm_amdgpu_gem_va` (40 bytes).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuGemVa {
    /// GEM handle.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
    /// `AMDGPU_VA_OP_*`.
    pub operation: u32,
    /// `AMDGPU_VM_PAGE_*`.
    pub flags: u32,
    /// GPU VA.
    pub va_address: u64,
    /// Offset inside the buffer.
    pub offset_in_bo: u64,
    /// Bytes.
    pub map_size: u64,
}

/// `struct drm_amdgpu_ctx_in` (16 bytes); `union drm_amdgpu_ctx_out` overlays it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuCtxIn {
    /// `AMDGPU_CTX_OP_*`.
    pub op: u32,
    /// Flags of the operation.
    pub flags: u32,
    /// The context.
    pub ctx_id: u32,
    /// `AMDGPU_CTX_PRIORITY_*`.
    pub priority: i32,
}

/// `struct drm_amdgpu_gem_metadata` (288 bytes), input and output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmAmdgpuGemMetadata {
    /// @0 GEM handle.
    pub handle: u32,
    /// @4 `AMDGPU_GEM_METADATA_OP_*`.
    pub op: u32,
    /// @8 metadata flags.
    pub flags: u64,
    /// @16 tiling word.
    pub tiling_info: u64,
    /// @24 bytes used of `data`.
    pub data_size_bytes: u32,
    /// @28 the metadata.
    pub data: [u8; 256],
    /// @284 padding to the struct's 8-byte alignment.
    pub pad: u32,
}

/// `struct drm_amdgpu_gem_op` (16 bytes).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuGemOp {
    /// GEM handle.
    pub handle: u32,
    /// `AMDGPU_GEM_OP_*`.
    pub op: u32,
    /// In or out: for `GET_GEM_CREATE_INFO` a user pointer to a `drm_amdgpu_gem_create_in`.
    pub value: u64,
}

/// `struct drm_amdgpu_bo_list_in` (24 bytes); the output (`list_handle`, pad) overlays it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuBoListIn {
    /// `AMDGPU_BO_LIST_OP_*`.
    pub operation: u32,
    /// The list (`DESTROY`, `UPDATE`).
    pub list_handle: u32,
    /// Entries at `bo_info_ptr`.
    pub bo_number: u32,
    /// Bytes of one entry as the caller lays them out.
    pub bo_info_size: u32,
    /// User pointer to the `drm_amdgpu_bo_list_entry` array.
    pub bo_info_ptr: u64,
}

/// `struct drm_amdgpu_cs_in` (24 bytes); the output (the sequence number, a u64) overlays it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuCsIn {
    /// The context.
    pub ctx_id: u32,
    /// A BO list, or 0.
    pub bo_list_handle: u32,
    /// Chunks at `chunks`.
    pub num_chunks: u32,
    /// Flags.
    pub flags: u32,
    /// User pointer to `num_chunks` user pointers to `drm_amdgpu_cs_chunk`s.
    pub chunks: u64,
}

/// `struct drm_amdgpu_cs_chunk` (16 bytes).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuCsChunk {
    /// `AMDGPU_CHUNK_ID_*`.
    pub chunk_id: u32,
    /// Dwords at `chunk_data`.
    pub length_dw: u32,
    /// User pointer to the chunk's data.
    pub chunk_data: u64,
}

/// `struct drm_amdgpu_cs_chunk_ib` (32 bytes).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuCsChunkIb {
    /// Padding.
    pub pad: u32,
    /// `AMDGPU_IB_FLAG_*`.
    pub flags: u32,
    /// GPU VA of the IB.
    pub va_start: u64,
    /// Its size in bytes.
    pub ib_bytes: u32,
    /// `AMDGPU_HW_IP_*`.
    pub ip_type: u32,
    /// IP instance.
    pub ip_instance: u32,
    /// Ring.
    pub ring: u32,
}

/// `struct drm_amdgpu_wait_cs_in` (32 bytes); the output (`status`, a u64: 0 once signalled)
/// overlays it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuWaitCsIn {
    /// The sequence number `CS` returned.
    pub handle: u64,
    /// Absolute timeout in ns.
    pub timeout: u64,
    /// `AMDGPU_HW_IP_*`.
    pub ip_type: u32,
    /// IP instance.
    pub ip_instance: u32,
    /// Ring.
    pub ring: u32,
    /// The context.
    pub ctx_id: u32,
}

/// `struct drm_gem_close` (8 bytes).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmGemClose {
    /// GEM handle.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct drm_prime_handle` (12 bytes).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmPrimeHandle {
    /// GEM handle.
    pub handle: u32,
    /// `DRM_CLOEXEC` | `DRM_RDWR`.
    pub flags: u32,
    /// Out: the dma-buf descriptor.
    pub fd: i32,
}

/// `struct drm_amdgpu_info` (32 bytes): the query header; the 16-byte union is kept as the
/// `READ_MMR_REG` member, the only one the shim reads.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuInfo {
    /// Where the answer goes.
    pub return_pointer: u64,
    /// Room at `return_pointer`.
    pub return_size: u32,
    /// `AMDGPU_INFO_*`.
    pub query: u32,
    /// `read_mmr_reg.dword_offset`.
    pub mmr_dword_offset: u32,
    /// `read_mmr_reg.count`.
    pub mmr_count: u32,
    /// `read_mmr_reg.instance`.
    pub mmr_instance: u32,
    /// `read_mmr_reg.flags`.
    pub mmr_flags: u32,
}

/// `struct drm_amdgpu_info_device` (368 bytes); fields the shim fills are named, the rest is
/// kept as reserved byte ranges at their offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmAmdgpuInfoDevice {
    /// @0 PCI device id.
    pub device_id: u32,
    /// @4 chip revision.
    pub chip_rev: u32,
    /// @8 external revision.
    pub external_rev: u32,
    /// @12 PCI revision.
    pub pci_rev: u32,
    /// @16 `AMDGPU_FAMILY_*`.
    pub family: u32,
    /// @20 shader engines.
    pub num_shader_engines: u32,
    /// @24 shader arrays per engine.
    pub num_shader_arrays_per_engine: u32,
    /// @28 GPU timestamp counter frequency in kHz.
    pub gpu_counter_freq: u32,
    /// @32 engine clock in kHz.
    pub max_engine_clock: u64,
    /// @40 memory clock in kHz.
    pub max_memory_clock: u64,
    /// @48 active compute units.
    pub cu_active_number: u32,
    /// @52 always-on CU mask.
    pub cu_ao_mask: u32,
    /// @56 `cu_bitmap[4][4]`.
    pub cu_bitmap: [u32; 16],
    /// @120 enabled render backends.
    pub enabled_rb_pipes_mask: u32,
    /// @124 render backends.
    pub num_rb_pipes: u32,
    /// @128 hardware graphics contexts.
    pub num_hw_gfx_contexts: u32,
    /// @132 padding.
    pub pad0: u32,
    /// @136 `AMDGPU_IDS_FLAGS_*`.
    pub ids_flags: u64,
    /// @144 lowest GPU VA for buffers.
    pub virtual_address_offset: u64,
    /// @152 end of the low GPU VA range.
    pub virtual_address_max: u64,
    /// @160 GPU VA alignment.
    pub virtual_address_alignment: u32,
    /// @164 PTE fragment size.
    pub pte_fragment_size: u32,
    /// @168 GART page size.
    pub gart_page_size: u32,
    /// @172 CE RAM size.
    pub ce_ram_size: u32,
    /// @176 `AMDGPU_VRAM_TYPE_*`.
    pub vram_type: u32,
    /// @180 VRAM bus width in bits.
    pub vram_bit_width: u32,
    /// @184 fields up to `wave_front_size` (graphics buffers), zero.
    pub reserved_184: [u32; 14],
    /// @240 wave front size.
    pub wave_front_size: u32,
    /// @244 shader-visible VGPRs.
    pub num_shader_visible_vgprs: u32,
    /// @248 CUs per shader array.
    pub num_cu_per_sh: u32,
    /// @252 TCC blocks.
    pub num_tcc_blocks: u32,
    /// @256 geometry fields and `cu_ao_bitmap`, zero.
    pub reserved_256: [u32; 20],
    /// @336 start of the high GPU VA range.
    pub high_va_offset: u64,
    /// @344 end of the high GPU VA range.
    pub high_va_max: u64,
    /// @352 `pa_sc_tile_steering_override` and padding.
    pub reserved_352: [u32; 2],
    /// @360 disabled TCC mask.
    pub tcc_disabled_mask: u64,
}

// Each request's argument struct is as large as the size its code (kfd-sys) carries.
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<DrmVersion>() == ioc_size(DRM_IOCTL_VERSION));
    assert!(size_of::<DrmAmdgpuInfo>() == ioc_size(DRM_IOCTL_AMDGPU_INFO));
    assert!(size_of::<DrmGemClose>() == ioc_size(DRM_IOCTL_GEM_CLOSE));
    assert!(size_of::<DrmPrimeHandle>() == ioc_size(DRM_IOCTL_PRIME_HANDLE_TO_FD));
    assert!(size_of::<DrmAmdgpuGemCreateIn>() == ioc_size(DRM_IOCTL_AMDGPU_GEM_CREATE));
    assert!(size_of::<DrmAmdgpuGemMmapIn>() == ioc_size(DRM_IOCTL_AMDGPU_GEM_MMAP));
    assert!(size_of::<DrmAmdgpuGemVa>() == ioc_size(DRM_IOCTL_AMDGPU_GEM_VA));
    assert!(size_of::<DrmAmdgpuCtxIn>() == ioc_size(DRM_IOCTL_AMDGPU_CTX));
    assert!(size_of::<DrmAmdgpuGemMetadata>() == ioc_size(DRM_IOCTL_AMDGPU_GEM_METADATA));
    assert!(size_of::<DrmAmdgpuGemOp>() == ioc_size(DRM_IOCTL_AMDGPU_GEM_OP));
    assert!(size_of::<DrmAmdgpuBoListIn>() == ioc_size(DRM_IOCTL_AMDGPU_BO_LIST));
    assert!(size_of::<DrmAmdgpuCsIn>() == ioc_size(DRM_IOCTL_AMDGPU_CS));
    assert!(size_of::<DrmAmdgpuWaitCsIn>() == ioc_size(DRM_IOCTL_AMDGPU_WAIT_CS));
};
const _: () = assert!(core::mem::size_of::<DrmAmdgpuCsChunk>() == 16);
const _: () = assert!(core::mem::size_of::<DrmAmdgpuCsChunkIb>() == 32);
const _: () = assert!(core::mem::size_of::<DrmAmdgpuInfoDevice>() == 368);

/// The PCI revision that makes libdrm's `amdgpu.ids` name the modelled board (a row of the
/// shared preset table).
pub fn pci_revision(preset: Preset) -> u32 {
    preset.facts().pci_revision
}

/// The amdgpu KMS driver version of a kernel (`DRM_IOCTL_VERSION`).
pub fn kms_version(kernel: KernelVersion) -> (i32, i32, i32) {
    match kernel {
        KernelVersion::Linux6_1 => (3, 49, 0),
        KernelVersion::Linux6_12 => (3, 59, 0),
    }
}

/// Driver name, date and description `DRM_IOCTL_VERSION` reports.
pub const DRIVER_NAME: &str = "amdgpu";
/// Driver date.
pub const DRIVER_DATE: &str = "20150101";
/// Driver description.
pub const DRIVER_DESC: &str = "AMD GPU";

/// One user-memory write an answer asks for: `data` at `addr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserWrite {
    /// User address.
    pub addr: u64,
    /// Bytes to store.
    pub data: Vec<u8>,
}

/// The answer to one DRM ioctl: the argument struct to copy back (if any) and the other user
/// memory to fill.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DrmAnswer {
    /// New argument bytes, copied back over the caller's struct.
    pub arg: Option<Vec<u8>>,
    /// Stores to user pointers named by the argument.
    pub writes: Vec<UserWrite>,
}

/// What a render node is, for the DRM answers.
#[derive(Debug, Clone, Copy)]
pub struct RenderInfo<'a> {
    /// The GPU's topology node.
    pub node: &'a Node,
    /// The part.
    pub preset: Preset,
    /// Kernel behaviour.
    pub kernel: KernelVersion,
}

/// Answers a DRM ioctl on a render node. `arg` is the caller's argument struct (as many
/// bytes as the request code names). Unknown requests are `ENOTTY`, unknown `AMDGPU_INFO`
/// queries `EINVAL`, as the kernel answers them.
pub fn answer(info: &RenderInfo<'_>, request: u32, arg: &[u8]) -> Result<DrmAnswer, Errno> {
    match request {
        DRM_IOCTL_VERSION => version(info, arg),
        DRM_IOCTL_AMDGPU_INFO => amdgpu_info(info, arg),
        _ => Err(Errno::ENOTTY),
    }
}

/// The buffer-object ioctl [`gem_answer`] serves that `request` names, as the kernel's table
/// spells it. `drm_ioctl` finds the handler by the command number alone (libdrm sends
/// `GEM_VA` as read-write although the table declares it write-only) and copies
/// `min(user size, table size)` bytes in, zero-filling the rest, and out only when both the
/// user's and the table's codes say so.
pub fn gem_request(request: u32) -> Option<u32> {
    const TYPE_NR: u32 = 0xFFFF;
    [
        DRM_IOCTL_AMDGPU_GEM_CREATE,
        DRM_IOCTL_AMDGPU_GEM_MMAP,
        DRM_IOCTL_AMDGPU_GEM_VA,
        DRM_IOCTL_AMDGPU_GEM_METADATA,
        DRM_IOCTL_AMDGPU_GEM_OP,
        DRM_IOCTL_AMDGPU_CTX,
        DRM_IOCTL_AMDGPU_BO_LIST,
        DRM_IOCTL_AMDGPU_CS,
        DRM_IOCTL_AMDGPU_WAIT_CS,
        DRM_IOCTL_GEM_CLOSE,
        DRM_IOCTL_PRIME_HANDLE_TO_FD,
    ]
    .into_iter()
    .find(|&c| c & TYPE_NR == request & TYPE_NR)
}

/// Reads user memory for an answer: `buf.len()` bytes at an address (`EFAULT` when they are
/// not readable).
pub type UserRead<'a> = &'a dyn Fn(u64, &mut [u8]) -> Result<(), Errno>;

/// Answers a buffer-object ioctl on the render-node file `file`: the new argument bytes (a
/// union's output overlays its input) or the kernel's errno. `read` reaches the arrays the
/// argument points to (BO list entries, CS chunks).
pub fn gem_answer(
    file: &kfd_model::RenderNode,
    request: u32,
    arg: &[u8],
    read: UserRead<'_>,
) -> Result<DrmAnswer, Errno> {
    let reply = |bytes: &[u8]| {
        Ok(DrmAnswer {
            arg: Some(bytes.to_vec()),
            writes: Vec::new(),
        })
    };
    match request {
        DRM_IOCTL_AMDGPU_GEM_CREATE => {
            let (a, _) = DrmAmdgpuGemCreateIn::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            let handle = file.gem_create(a.bo_size, a.alignment, a.domains, a.domain_flags)?;
            let mut out = [0u8; 32];
            out[..8].copy_from_slice(DrmAmdgpuGemCreateOut { handle, pad: 0 }.as_bytes());
            reply(&out)
        }
        DRM_IOCTL_AMDGPU_GEM_MMAP => {
            let (a, _) = DrmAmdgpuGemMmapIn::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            let offset = file.gem_mmap_offset(a.handle)?;
            reply(offset.as_bytes())
        }
        DRM_IOCTL_AMDGPU_GEM_VA => {
            let (a, _) = DrmAmdgpuGemVa::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            file.gem_va(kfd_model::gem::GemVaRequest {
                handle: a.handle,
                operation: a.operation,
                flags: a.flags,
                va_address: a.va_address,
                offset_in_bo: a.offset_in_bo,
                map_size: a.map_size,
            })?;
            Ok(DrmAnswer::default())
        }
        DRM_IOCTL_AMDGPU_GEM_METADATA => gem_metadata(file, arg),
        DRM_IOCTL_AMDGPU_GEM_OP => {
            let (a, _) = DrmAmdgpuGemOp::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            // The handle first (ENOENT), then the operation.
            let info = file.gem_create_info(a.handle)?;
            match a.op {
                AMDGPU_GEM_OP_GET_GEM_CREATE_INFO => Ok(DrmAnswer {
                    arg: None,
                    writes: vec![UserWrite {
                        addr: a.value,
                        data: DrmAmdgpuGemCreateIn {
                            bo_size: info.bo_size,
                            alignment: info.alignment,
                            domains: info.domains,
                            domain_flags: info.domain_flags,
                        }
                        .as_bytes()
                        .to_vec(),
                    }],
                }),
                AMDGPU_GEM_OP_SET_PLACEMENT => {
                    file.gem_set_placement(a.handle, a.value)?;
                    Ok(DrmAnswer::default())
                }
                _ => Err(Errno::EINVAL),
            }
        }
        DRM_IOCTL_AMDGPU_CTX => {
            let (a, _) = DrmAmdgpuCtxIn::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            let answer = file.ctx(CtxRequest {
                op: a.op,
                flags: a.flags,
                ctx_id: a.ctx_id,
                priority: a.priority,
            })?;
            // The output overlays the input: only the fields the operation writes change.
            let mut out = [0u8; 16];
            out.copy_from_slice(&arg[..16]);
            match answer {
                CtxAnswer::Alloc { ctx_id } => out[..4].copy_from_slice(&ctx_id.to_ne_bytes()),
                CtxAnswer::Done => {}
                CtxAnswer::State {
                    flags,
                    hangs,
                    reset_status,
                } => {
                    out[..8].copy_from_slice(&flags.to_ne_bytes());
                    out[8..12].copy_from_slice(&hangs.to_ne_bytes());
                    out[12..].copy_from_slice(&reset_status.to_ne_bytes());
                }
                CtxAnswer::Pstate { flags } => out[..4].copy_from_slice(&flags.to_ne_bytes()),
            }
            reply(&out)
        }
        DRM_IOCTL_AMDGPU_BO_LIST => {
            let (a, _) = DrmAmdgpuBoListIn::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            let handles = if matches!(
                a.operation,
                AMDGPU_BO_LIST_OP_CREATE | AMDGPU_BO_LIST_OP_UPDATE
            ) {
                bo_list_entries(&a, read)?
            } else {
                Vec::new()
            };
            let list = file.bo_list(a.operation, a.list_handle, handles)?;
            let mut out = [0u8; 24];
            out.copy_from_slice(&arg[..24]);
            out[..8].copy_from_slice(&u64::from(list).to_ne_bytes());
            reply(&out)
        }
        DRM_IOCTL_AMDGPU_CS => {
            let (a, _) = DrmAmdgpuCsIn::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            let seq = file.cs_submit(&cs_request(&a, read)?)?;
            let mut out = [0u8; 24];
            out.copy_from_slice(&arg[..24]);
            out[..8].copy_from_slice(&seq.to_ne_bytes());
            reply(&out)
        }
        DRM_IOCTL_AMDGPU_WAIT_CS => {
            let (a, _) = DrmAmdgpuWaitCsIn::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            let done = file.wait_cs(a.ctx_id, (a.ip_type, a.ip_instance, a.ring), a.handle)?;
            // The kernel clears the union and writes 1 while the fence is busy.
            let mut out = [0u8; 32];
            out[..8].copy_from_slice(&u64::from(!done).to_ne_bytes());
            reply(&out)
        }
        DRM_IOCTL_GEM_CLOSE => {
            let (a, _) = DrmGemClose::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            file.gem_close(a.handle)?;
            Ok(DrmAnswer::default())
        }
        DRM_IOCTL_PRIME_HANDLE_TO_FD => {
            let (mut a, _) = DrmPrimeHandle::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
            a.fd = file.prime_handle_to_fd(a.handle, a.flags)?;
            reply(a.as_bytes())
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// The GEM handles of a BO list request: `bo_number` entries of `bo_info_size` bytes, the
/// handle in the first 4 bytes of each (an entry shorter than that reads as zeros past its
/// end, as the kernel copies it).
fn bo_list_entries(a: &DrmAmdgpuBoListIn, read: UserRead<'_>) -> Result<Vec<u32>, Errno> {
    if a.bo_number > MAX_CS_ENTRIES {
        return Err(Errno::EINVAL);
    }
    let size = a.bo_info_size.min(4) as usize;
    let mut handles = Vec::with_capacity(a.bo_number as usize);
    for i in 0..u64::from(a.bo_number) {
        let mut h = [0u8; 4];
        let addr = a
            .bo_info_ptr
            .checked_add(i * u64::from(a.bo_info_size))
            .ok_or(Errno::EFAULT)?;
        read(addr, &mut h[..size])?;
        handles.push(u32::from_ne_bytes(h));
    }
    Ok(handles)
}

/// The chunks of a `CS` request, read from user memory: the IBs and whether an unknown chunk
/// id came (an IB chunk shorter than its struct is `EINVAL`).
fn cs_request(a: &DrmAmdgpuCsIn, read: UserRead<'_>) -> Result<kfd_model::cs::CsRequest, Errno> {
    use kfd_model::cs::*;
    if a.num_chunks > MAX_CS_ENTRIES {
        return Err(Errno::EINVAL);
    }
    let mut request = CsRequest {
        ctx_id: a.ctx_id,
        bo_list_handle: a.bo_list_handle,
        num_chunks: a.num_chunks,
        ..Default::default()
    };
    for i in 0..u64::from(a.num_chunks) {
        let mut ptr = [0u8; 8];
        read(a.chunks.checked_add(i * 8).ok_or(Errno::EFAULT)?, &mut ptr)?;
        let mut raw = [0u8; 16];
        read(u64::from_ne_bytes(ptr), &mut raw)?;
        let (chunk, _) = DrmAmdgpuCsChunk::read_from_prefix(&raw).map_err(|_| Errno::EFAULT)?;
        match chunk.chunk_id {
            AMDGPU_CHUNK_ID_IB => {
                if (chunk.length_dw as usize) * 4 < core::mem::size_of::<DrmAmdgpuCsChunkIb>() {
                    return Err(Errno::EINVAL);
                }
                let mut bytes = [0u8; 32];
                read(chunk.chunk_data, &mut bytes)?;
                let (ib, _) =
                    DrmAmdgpuCsChunkIb::read_from_prefix(&bytes).map_err(|_| Errno::EFAULT)?;
                request.ibs.push(CsIb {
                    flags: ib.flags,
                    va_start: ib.va_start,
                    ib_bytes: ib.ib_bytes,
                    ip_type: ib.ip_type,
                    ip_instance: ib.ip_instance,
                    ring: ib.ring,
                });
            }
            AMDGPU_CHUNK_ID_FENCE
            | AMDGPU_CHUNK_ID_DEPENDENCIES
            | AMDGPU_CHUNK_ID_SYNCOBJ_IN
            | AMDGPU_CHUNK_ID_SYNCOBJ_OUT
            | AMDGPU_CHUNK_ID_BO_HANDLES
            | AMDGPU_CHUNK_ID_SCHEDULED_DEPENDENCIES
            | AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_WAIT
            | AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_SIGNAL => {}
            _ => request.unknown_chunk = true,
        }
    }
    Ok(request)
}

/// `amdgpu_gem_metadata_ioctl`: the handle first (`ENOENT`), then the operation (`EINVAL`
/// for an unknown one or more than 256 bytes to set).
fn gem_metadata(file: &kfd_model::RenderNode, arg: &[u8]) -> Result<DrmAnswer, Errno> {
    let (mut a, _) = DrmAmdgpuGemMetadata::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
    let current = file.gem_metadata(a.handle)?;
    match a.op {
        AMDGPU_GEM_METADATA_OP_SET_METADATA => {
            let n = a.data_size_bytes as usize;
            let data = a.data.get(..n).ok_or(Errno::EINVAL)?.to_vec();
            file.gem_set_metadata(
                a.handle,
                BoMetadata {
                    flags: a.flags,
                    tiling_info: a.tiling_info,
                    data,
                },
            )?;
        }
        AMDGPU_GEM_METADATA_OP_GET_METADATA => {
            a.flags = current.flags;
            a.tiling_info = current.tiling_info;
            a.data_size_bytes = current.data.len() as u32;
            a.data[..current.data.len()].copy_from_slice(&current.data);
        }
        _ => return Err(Errno::EINVAL),
    }
    Ok(DrmAnswer {
        arg: Some(a.as_bytes().to_vec()),
        writes: Vec::new(),
    })
}

/// `drm_copy_field`: at most the room given, and the full length reported back.
fn copy_field(len: &mut u64, ptr: u64, value: &str, writes: &mut Vec<UserWrite>) {
    let room = usize::try_from(*len).unwrap_or(usize::MAX);
    let n = value.len().min(room);
    if n > 0 && ptr != 0 {
        writes.push(UserWrite {
            addr: ptr,
            data: value.as_bytes()[..n].to_vec(),
        });
    }
    *len = value.len() as u64;
}

fn version(info: &RenderInfo<'_>, arg: &[u8]) -> Result<DrmAnswer, Errno> {
    let (mut v, _) = DrmVersion::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
    let (major, minor, patch) = kms_version(info.kernel);
    v.version_major = major;
    v.version_minor = minor;
    v.version_patchlevel = patch;
    let mut writes = Vec::new();
    copy_field(&mut v.name_len, v.name, DRIVER_NAME, &mut writes);
    copy_field(&mut v.date_len, v.date, DRIVER_DATE, &mut writes);
    copy_field(&mut v.desc_len, v.desc, DRIVER_DESC, &mut writes);
    Ok(DrmAnswer {
        arg: Some(v.as_bytes().to_vec()),
        writes,
    })
}

/// The device information of a modelled GPU.
pub fn device_info(info: &RenderInfo<'_>) -> DrmAmdgpuInfoDevice {
    let p = &info.node.properties;
    let cus = p.simd_count.checked_div(p.simd_per_cu).unwrap_or(0) as u32;
    let engines = p
        .array_count
        .checked_div(p.simd_arrays_per_engine)
        .unwrap_or(0) as u32;
    let facts = info.preset.facts();
    let mem_clock_mhz = info.node.mem_banks.first().map_or(0, |b| b.mem_clk_max);
    let vram_width = info.node.mem_banks.first().map_or(0, |b| b.width);
    // One bit per CU of each shader array, arrays laid out [engine][array].
    let mut cu_bitmap = [0u32; 16];
    let per_array = p.cu_per_simd_array.min(32) as u32;
    let array_bits = if per_array == 32 {
        u32::MAX
    } else {
        (1u32 << per_array) - 1
    };
    for (i, slot) in cu_bitmap.iter_mut().enumerate() {
        let (engine, array) = (i / 4, i % 4);
        if (engine as u32) < engines.min(4) && (array as u64) < p.simd_arrays_per_engine {
            *slot = array_bits;
        }
    }
    DrmAmdgpuInfoDevice {
        device_id: p.device_id as u32,
        chip_rev: 0,
        external_rev: facts.external_revision,
        pci_rev: pci_revision(info.preset),
        family: facts.drm_family,
        num_shader_engines: engines,
        num_shader_arrays_per_engine: p.simd_arrays_per_engine as u32,
        gpu_counter_freq: (kfd_model::hw::GPU_CLOCK_HZ / 1000) as u32,
        max_engine_clock: p.max_engine_clk_fcompute * 1000,
        max_memory_clock: u64::from(mem_clock_mhz) * 1000,
        cu_active_number: cus,
        cu_ao_mask: 0,
        cu_bitmap,
        enabled_rb_pipes_mask: 0xFFFF,
        num_rb_pipes: 16,
        num_hw_gfx_contexts: 8,
        pad0: 0,
        ids_flags: 0,
        virtual_address_offset: 0x20_0000,
        virtual_address_max: 0x8000_0000_0000,
        virtual_address_alignment: 4096,
        pte_fragment_size: 0x20_0000,
        gart_page_size: 4096,
        ce_ram_size: 0,
        vram_type: match facts.vram_type {
            VramType::Hbm => AMDGPU_VRAM_TYPE_HBM,
            VramType::Gddr6 => AMDGPU_VRAM_TYPE_GDDR6,
        },
        vram_bit_width: vram_width,
        reserved_184: [0; 14],
        wave_front_size: p.wave_front_size as u32,
        num_shader_visible_vgprs: 256,
        num_cu_per_sh: p.cu_per_simd_array as u32,
        num_tcc_blocks: 16,
        reserved_256: [0; 20],
        high_va_offset: 0xFFFF_8000_0000_0000,
        high_va_max: 0xFFFF_FFFF_FFFF_0000,
        reserved_352: [0; 2],
        tcc_disabled_mask: 0,
    }
}

fn amdgpu_info(info: &RenderInfo<'_>, arg: &[u8]) -> Result<DrmAnswer, Errno> {
    let (q, _) = DrmAmdgpuInfo::read_from_prefix(arg).map_err(|_| Errno::EFAULT)?;
    if q.return_pointer == 0 || q.return_size == 0 {
        return Err(Errno::EINVAL);
    }
    let vram = info.node.properties.local_mem_size;
    let data: Vec<u8> = match q.query {
        AMDGPU_INFO_ACCEL_WORKING => 1u32.to_ne_bytes().to_vec(),
        AMDGPU_INFO_DEV_INFO => device_info(info).as_bytes().to_vec(),
        AMDGPU_INFO_VRAM_GTT => [vram, vram, GTT_SIZE].as_bytes().to_vec(),
        AMDGPU_INFO_MEMORY => {
            // vram, cpu_accessible_vram, gtt: {total, usable, usage, max_allocation}.
            let heap = |size: u64| [size, size, 0, size / 4 * 3];
            let mut v = Vec::with_capacity(96);
            for size in [vram, vram, GTT_SIZE] {
                v.extend_from_slice(heap(size).as_bytes());
            }
            v
        }
        AMDGPU_INFO_VRAM_USAGE | AMDGPU_INFO_GTT_USAGE | AMDGPU_INFO_VIS_VRAM_USAGE => {
            0u64.to_ne_bytes().to_vec()
        }
        AMDGPU_INFO_READ_MMR_REG => {
            if q.mmr_count == 0 || q.mmr_count > MAX_MMR_READ {
                return Err(Errno::EINVAL);
            }
            // The model has no register file behind the render node: every register reads 0.
            vec![0u8; q.mmr_count as usize * 4]
        }
        _ => return Err(Errno::EINVAL),
    };
    let n = data.len().min(q.return_size as usize);
    Ok(DrmAnswer {
        arg: None,
        writes: vec![UserWrite {
            addr: q.return_pointer,
            data: data[..n].to_vec(),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kfd_model::topology::Topology;
    use kfd_model::ModelConfig;

    fn with_info<R>(preset: Preset, f: impl FnOnce(&RenderInfo<'_>) -> R) -> R {
        let topo = Topology::from_config(&ModelConfig::new(preset));
        let info = RenderInfo {
            node: &topo.nodes[1],
            preset,
            kernel: KernelVersion::Linux6_1,
        };
        f(&info)
    }

    #[test]
    fn version_reports_amdgpu_and_truncates_to_the_room_given() {
        with_info(Preset::Gfx900, |info| {
            // First call: lengths only (libdrm asks with zero room).
            let probe = DrmVersion::default();
            let a = answer(info, DRM_IOCTL_VERSION, probe.as_bytes()).unwrap();
            let (v, _) = DrmVersion::read_from_prefix(a.arg.as_deref().unwrap()).unwrap();
            assert_eq!((v.version_major, v.version_minor), (3, 49));
            assert_eq!((v.name_len, v.date_len, v.desc_len), (6, 8, 7));
            assert!(a.writes.is_empty());
            // Second call: room for 3 bytes of the name only.
            let ask = DrmVersion {
                name_len: 3,
                name: 0x1000,
                desc_len: 64,
                desc: 0x2000,
                ..Default::default()
            };
            let a = answer(info, DRM_IOCTL_VERSION, ask.as_bytes()).unwrap();
            assert_eq!(
                a.writes,
                vec![
                    UserWrite {
                        addr: 0x1000,
                        data: b"amd".to_vec()
                    },
                    UserWrite {
                        addr: 0x2000,
                        data: b"AMD GPU".to_vec()
                    },
                ]
            );
            let (v, _) = DrmVersion::read_from_prefix(a.arg.as_deref().unwrap()).unwrap();
            assert_eq!(v.name_len, 6, "full length reported");
        });
    }

    #[test]
    fn device_info_matches_the_topology() {
        with_info(Preset::Gfx900, |info| {
            let d = device_info(info);
            assert_eq!(d.device_id, 0x6860);
            assert_eq!(d.family, AMDGPU_FAMILY_AI);
            assert_eq!(d.cu_active_number, 64);
            assert_eq!(d.num_shader_engines, 4);
            assert_eq!(d.num_cu_per_sh, 16);
            assert_eq!(d.wave_front_size, 64);
            assert_eq!(d.max_engine_clock, 1_500_000);
            assert_eq!(d.gpu_counter_freq, 100_000);
            let active: u32 = d.cu_bitmap.iter().map(|m| m.count_ones()).sum();
            assert_eq!(active, d.cu_active_number, "bitmap and count agree");
        });
        with_info(Preset::Gfx1030, |info| {
            let d = device_info(info);
            assert_eq!((d.device_id, d.pci_rev), (0x73BF, 0xC0));
            assert_eq!(d.family, AMDGPU_FAMILY_NV);
            assert_eq!(d.wave_front_size, 32);
            assert_eq!(d.num_shader_engines, 4);
            let active: u32 = d.cu_bitmap.iter().map(|m| m.count_ones()).sum();
            assert_eq!(active, 80);
        });
    }

    #[test]
    fn info_queries_write_at_most_return_size() {
        with_info(Preset::Gfx90a, |info| {
            let q = |query: u32, size: u32| DrmAmdgpuInfo {
                return_pointer: 0x5000,
                return_size: size,
                query,
                ..Default::default()
            };
            let a = answer(
                info,
                DRM_IOCTL_AMDGPU_INFO,
                q(AMDGPU_INFO_DEV_INFO, 400).as_bytes(),
            )
            .unwrap();
            assert_eq!(a.arg, None, "AMDGPU_INFO is IOW: nothing copied back");
            assert_eq!(a.writes[0].data.len(), 368);
            assert_eq!(&a.writes[0].data[..4], &0x740Fu32.to_ne_bytes());
            let a = answer(
                info,
                DRM_IOCTL_AMDGPU_INFO,
                q(AMDGPU_INFO_DEV_INFO, 8).as_bytes(),
            )
            .unwrap();
            assert_eq!(
                a.writes[0].data.len(),
                8,
                "an older, shorter struct gets a prefix"
            );
            let a = answer(
                info,
                DRM_IOCTL_AMDGPU_INFO,
                q(AMDGPU_INFO_VRAM_GTT, 24).as_bytes(),
            )
            .unwrap();
            assert_eq!(&a.writes[0].data[..8], &(64u64 << 30).to_ne_bytes());
            let a = answer(
                info,
                DRM_IOCTL_AMDGPU_INFO,
                q(AMDGPU_INFO_MEMORY, 96).as_bytes(),
            )
            .unwrap();
            assert_eq!(a.writes[0].data.len(), 96);
            let a = answer(
                info,
                DRM_IOCTL_AMDGPU_INFO,
                q(AMDGPU_INFO_ACCEL_WORKING, 4).as_bytes(),
            )
            .unwrap();
            assert_eq!(a.writes[0].data, 1u32.to_ne_bytes());
            let mut mmr = q(AMDGPU_INFO_READ_MMR_REG, 64);
            mmr.mmr_count = 3;
            let a = answer(info, DRM_IOCTL_AMDGPU_INFO, mmr.as_bytes()).unwrap();
            assert_eq!(a.writes[0].data, vec![0u8; 12]);
            mmr.mmr_count = MAX_MMR_READ + 1;
            assert_eq!(
                answer(info, DRM_IOCTL_AMDGPU_INFO, mmr.as_bytes()),
                Err(Errno::EINVAL)
            );
            assert_eq!(
                answer(info, DRM_IOCTL_AMDGPU_INFO, q(0x7F, 8).as_bytes()),
                Err(Errno::EINVAL)
            );
            assert_eq!(
                answer(
                    info,
                    DRM_IOCTL_AMDGPU_INFO,
                    q(AMDGPU_INFO_DEV_INFO, 0).as_bytes()
                ),
                Err(Errno::EINVAL)
            );
            assert_eq!(
                answer(info, DRM_IOCTL_AMDGPU_INFO, &[0u8; 7]),
                Err(Errno::EFAULT),
                "short argument"
            );
            assert_eq!(answer(info, 0xC0106401, &[0u8; 16]), Err(Errno::ENOTTY));
        });
    }
}
