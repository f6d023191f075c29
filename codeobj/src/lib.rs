//! AMDGPU code objects for tools that instrument kernels: the containers they come in (bare ELF,
//! clang offload bundles, HIP executables' `.hip_fatbin`), target IDs and their matching rule,
//! the kernel descriptor and the legacy `amd_kernel_code_t`, the metadata note, kernels and
//! **device functions as symbols**, and a loader that links several code objects into one
//! executable — a library of device functions in one, its users in another.
//!
//! Every input is untrusted: malformed bytes give an [`Error`], never a panic. No `unsafe`.
//!
//! ```
//! use codeobj::{FeatureSetting, KernelDescriptor, TargetId};
//!
//! // The agent is a gfx90a with SRAMECC on and XNACK off; a code object built for
//! // `gfx90a:xnack-` runs there, one built for `gfx90a:xnack+` does not.
//! let agent: TargetId = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-".parse()?;
//! assert!("gfx90a:xnack-".parse::<TargetId>()?.runs_on(&agent));
//! assert!(!"gfx90a:xnack+".parse::<TargetId>()?.runs_on(&agent));
//! assert_eq!(TargetId::from_e_flags(0x63f, codeobj::CodeObjectVersion::V4)?.xnack, FeatureSetting::Off);
//!
//! // A kernel descriptor: 64 bytes, entry offset at 16, RSRC1/RSRC2 at 48/52, properties at 56.
//! let mut bytes = [0u8; 64];
//! bytes[16..24].copy_from_slice(&0x1140i64.to_le_bytes());
//! bytes[52..56].copy_from_slice(&0x0000_0090u32.to_le_bytes()); // workgroup id x, 8 user SGPRs
//! let kd = KernelDescriptor::parse(&bytes)?;
//! assert_eq!(kd.kernel_code_entry_byte_offset, 0x1140);
//! assert_eq!(kd.compute_pgm_rsrc2.user_sgpr_count(), 8);
//! assert!(kd.compute_pgm_rsrc2.enable_sgpr_workgroup_id_x());
//! # Ok::<(), codeobj::Error>(())
//! ```
//!
//! Loading: parse each code object ([`CodeObject::parse`], or [`Container::code_object_for`]
//! for an agent), [`Executable::load`] them into a [`SegmentMemory`], [`Executable::freeze`],
//! then [`Executable::kernel`] / [`Executable::function`] / [`Executable::variable`].

#![forbid(unsafe_code)]

pub mod bundle;
pub mod code_object;
pub mod container;
pub mod descriptor;
pub mod error;
pub mod loader;
pub mod metadata;
pub mod target;

pub use bundle::{BundleEntry, EntryId, OffloadBundle};
pub use code_object::{
    Binding, CodeObject, CodeSection, DynamicRelocation, Kernel, LoadSegment, ObjectKind, Symbol,
    SymbolKind,
};
pub use container::{Container, ContainerEntry, ContainerKind, HostKernel, HostSymbol};
pub use descriptor::{
    AmdKernelCode, ComputePgmRsrc1, ComputePgmRsrc2, ComputePgmRsrc3Gfx90a, DispatchInfo,
    KernelCode, KernelCodeProperties, KernelDescriptor,
};
pub use error::{Error, Result};
pub use loader::{Executable, HostMemory, LoadedKernel, LoadedSymbol, SegmentMemory};
pub use metadata::{KernelArgument, KernelMetadata, Metadata};
pub use target::{CodeObjectVersion, FeatureSetting, TargetId};
