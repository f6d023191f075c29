//! # kfd-sys — the amdkfd user-space ABI, byte for byte
//!
//! This crate is the one place in the project where the kernel interface of `/dev/kfd` is
//! spelled. It mirrors `include/uapi/linux/kfd_ioctl.h` as of interface **1.18** (Linux 6.12+
//! plus the 1.18 rename) and `include/uapi/linux/kfd_sysfs.h`, keeping the C names the way
//! `-sys` crates do, so that a reader can hold it next to the header:
//!
//! * every `AMDKFD_IOC_*` request code ([`AMDKFD_IOC_CREATE_QUEUE`], …) and a descriptor
//!   table of all of them ([`AMDKFD_IOCTLS`]) with name, number, direction and argument size;
//! * every argument struct (`kfd_ioctl_create_queue_args`, …) as a `#[repr(C)]` type with
//!   explicit padding fields, deriving zerocopy's [`FromBytes`], [`IntoBytes`],
//!   [`KnownLayout`] and [`Immutable`], with its size asserted at compile time and its field
//!   layout published through [`AbiLayout`];
//! * the constants and flags (`KFD_IOC_QUEUE_TYPE_*`, `KFD_IOC_ALLOC_MEM_FLAGS_*`,
//!   `KFD_IOC_EVENT_*`, `KFD_IOC_WAIT_RESULT_*`, debugger enums, SVM, SMI, CRIU …);
//! * the `/dev/kfd` mmap offset encoding ([`mmap`]) and the sysfs topology vocabulary
//!   ([`sysfs`]: file names, property keys, `HSA_CAP_*` bits);
//! * the GPU facts every layer shares ([`gpu`]): graphics versions, their [`gpu::Generation`],
//!   and the parts the model knows ([`gpu::Preset`]) with one table row each;
//! * the older generation spoken by Debian's libhsakmt 5.2.3 — interface 1.8 plus the ROCm
//!   DKMS-only ioctls 0x80–0x84 and the 88-byte `CREATE_QUEUE` — in its own module,
//!   [`v1_8`], so that a driver model can serve both;
//! * the DRM core and amdgpu render-node uapi the project speaks ([`drm`]): request codes,
//!   `AMDGPU_INFO_*` queries, GEM domains, flags and operations.
//!
//! The crate holds no logic beyond the ABI's own arithmetic (request-code and mmap-offset
//! encoding), allocates nothing and contains no `unsafe`.
//!
//! ## Reading argument bytes safely
//!
//! Argument structs are plain old data. Untrusted bytes become a struct only through
//! zerocopy, which checks length and alignment and returns an error instead of panicking:
//!
//! ```
//! use kfd_sys::{kfd_ioctl_create_queue_args, FromBytes, IntoBytes};
//!
//! let bytes = [0u8; 96];
//! let args = kfd_ioctl_create_queue_args::read_from_bytes(&bytes).unwrap();
//! assert_eq!(args.as_bytes().len(), 96);
//! // Too short: an error, never a panic.
//! assert!(kfd_ioctl_create_queue_args::read_from_bytes(&bytes[..88]).is_err());
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

#[macro_use]
mod macros;

mod args;
mod consts;
mod debug;
pub mod drm;
pub mod errno;
pub mod gpu;
pub mod ioctl;
pub mod layout;
pub mod mmap;
pub mod sysfs;
pub mod v1_8;

pub use args::*;
pub use consts::*;
pub use debug::*;
pub use ioctl::*;
pub use layout::{AbiLayout, FieldLayout, StructLayout};
pub use mmap::*;
pub use sysfs::*;

pub use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// Every argument struct of the current generation, with its size and field layout, in header
/// order. Used by the layout test against the system header and by tools that print the ABI.
pub const ALL_STRUCTS: &[StructLayout] = layouts![
    kfd_ioctl_get_version_args,
    kfd_ioctl_create_queue_args,
    kfd_ioctl_destroy_queue_args,
    kfd_ioctl_update_queue_args,
    kfd_ioctl_set_cu_mask_args,
    kfd_ioctl_get_queue_wave_state_args,
    kfd_ioctl_get_available_memory_args,
    kfd_dbg_device_info_entry,
    kfd_ioctl_set_memory_policy_args,
    kfd_ioctl_get_clock_counters_args,
    kfd_process_device_apertures,
    kfd_ioctl_get_process_apertures_args,
    kfd_ioctl_get_process_apertures_new_args,
    kfd_ioctl_dbg_register_args,
    kfd_ioctl_dbg_unregister_args,
    kfd_ioctl_dbg_address_watch_args,
    kfd_ioctl_dbg_wave_control_args,
    kfd_ioctl_create_event_args,
    kfd_ioctl_destroy_event_args,
    kfd_ioctl_set_event_args,
    kfd_ioctl_reset_event_args,
    kfd_memory_exception_failure,
    kfd_hsa_memory_exception_data,
    kfd_hsa_hw_exception_data,
    kfd_hsa_signal_event_data,
    kfd_event_data,
    kfd_ioctl_wait_events_args,
    kfd_ioctl_set_scratch_backing_va_args,
    kfd_ioctl_get_tile_config_args,
    kfd_ioctl_set_trap_handler_args,
    kfd_ioctl_acquire_vm_args,
    kfd_ioctl_alloc_memory_of_gpu_args,
    kfd_ioctl_free_memory_of_gpu_args,
    kfd_ioctl_map_memory_to_gpu_args,
    kfd_ioctl_unmap_memory_from_gpu_args,
    kfd_ioctl_alloc_queue_gws_args,
    kfd_ioctl_get_dmabuf_info_args,
    kfd_ioctl_import_dmabuf_args,
    kfd_ioctl_export_dmabuf_args,
    kfd_ioctl_smi_events_args,
    kfd_ioctl_criu_args,
    kfd_criu_device_bucket,
    kfd_criu_bo_bucket,
    kfd_ioctl_svm_attribute,
    kfd_ioctl_svm_args,
    kfd_ioctl_set_xnack_mode_args,
    kfd_runtime_info,
    kfd_ioctl_runtime_enable_args,
    kfd_queue_snapshot_entry,
    kfd_context_save_area_header_wave_state,
    kfd_context_save_area_header,
    kfd_ioctl_dbg_trap_enable_args,
    kfd_ioctl_dbg_trap_send_runtime_event_args,
    kfd_ioctl_dbg_trap_set_exceptions_enabled_args,
    kfd_ioctl_dbg_trap_set_wave_launch_override_args,
    kfd_ioctl_dbg_trap_set_wave_launch_mode_args,
    kfd_ioctl_dbg_trap_suspend_queues_args,
    kfd_ioctl_dbg_trap_resume_queues_args,
    kfd_ioctl_dbg_trap_set_node_address_watch_args,
    kfd_ioctl_dbg_trap_clear_node_address_watch_args,
    kfd_ioctl_dbg_trap_set_flags_args,
    kfd_ioctl_dbg_trap_query_debug_event_args,
    kfd_ioctl_dbg_trap_query_exception_info_args,
    kfd_ioctl_dbg_trap_queue_snapshot_args,
    kfd_ioctl_dbg_trap_device_snapshot_args,
    kfd_ioctl_dbg_trap_args,
];
