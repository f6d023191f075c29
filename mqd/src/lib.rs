//! # mqd — Memory Queue Descriptors for amdkfd
//!
//! An MQD is the block of memory that describes one hardware queue to AMD's command
//! processor (compute) or SDMA engine: where its ring is, how big, where its read and write
//! pointers live, which doorbell wakes it, its priority and its context-save area. The
//! amdkfd driver writes one for every queue (`init_mqd`, then `update_mqd` on every change)
//! and hands its GPU address to the scheduler firmware in `MAP_QUEUES`.
//!
//! This crate holds those descriptors for gfx9, gfx10 and gfx11 and reproduces what the
//! kernel writes into them, field for field, on Linux 6.1 and 6.12:
//!
//! * the six structs — [`v9_mqd`], [`v10_compute_mqd`], [`v11_compute_mqd`] (2048 bytes) and
//!   [`v9_sdma_mqd`] (512), [`v10_sdma_mqd`] (520), [`v11_sdma_mqd`] (512) — as zerocopy
//!   `#[repr(C)]` structs with every named field at its dword index (asserted at compile
//!   time, field by field) and the registers the driver sets as bitfield types;
//! * builders with the kernel's semantics: `init` / `init_hiq` / `update` on each compute
//!   struct and `init` / `update` on each SDMA struct, driven by [`QueueProperties`] (the
//!   queue), [`MqdConfig`] (device and [`KernelVersion`]) and [`UpdateInfo`] (CU mask, GWS);
//! * one enum per kind over the generations, [`ComputeMqd`] and [`SdmaMqd`], and read-back
//!   traits for the hardware model, [`ComputeDescriptor`] and [`SdmaDescriptor`];
//! * the CU-mask distribution over shader engines ([`CuMask`], [`ShaderLayout`]) and the
//!   topology-derived buffer sizes ([`topology_sizes`]);
//! * decoding from bytes (`decode`) and printing: `Display` gives a named summary, and
//!   [`MqdLayout::dump`] every non-zero field with its dword index.
//!
//! Invalid input — a ring size that is not a power of two, a misaligned address, a
//! priority above 15, a CU mask of the wrong length, a CWSR area smaller than the topology
//! requires, a short dump — is an [`MqdError`] that says what was wrong; nothing panics.
//!
//! ## Example: the same AQL queue on three generations
//!
//! ```
//! use mqd::{ComputeDescriptor, ComputeMqd, GfxVersion, MqdConfig, QueueProperties};
//!
//! // The golden AQL queue of facts §6.4: 256 KiB ring, EOP, CWSR area, priority 7.
//! let queue = QueueProperties::golden_aql();
//! for gc in [GfxVersion::new(9, 0, 0), GfxVersion::new(10, 3, 0), GfxVersion::new(11, 0, 0)] {
//!     let config = MqdConfig::new(gc); // Linux 6.12 behaviour, CWSR on
//!     let mqd = ComputeMqd::init(&config, &queue, 0x1000).unwrap();
//!     let dw = |i: usize| {
//!         u32::from_ne_bytes(mqd.as_bytes()[i * 4..i * 4 + 4].try_into().unwrap())
//!     };
//!     println!(
//!         "{}: pq_control {:#010x} persistent_state {:#010x} ib_control {:#010x} eop_control {}",
//!         mqd.struct_name(), dw(145), dw(132), dw(149), dw(167),
//!     );
//!     assert_eq!(mqd.ring_base_address(), queue.ring_address);
//!     assert_eq!(mqd.ring_size_bytes(), 256 * 1024);
//! }
//! // v9_mqd: pq_control 0x1c01450f persistent_state 0x40005301 ib_control 0x00b00000 eop_control 9
//! // v10_compute_mqd: pq_control 0x1808450f persistent_state 0x40005301 ib_control 0x00300000 eop_control 9
//! // v11_compute_mqd: pq_control 0x1808450f persistent_state 0x40005501 ib_control 0x00300000 eop_control 9
//! ```
//!
//! `examples/key_dwords.rs` prints the full set of key dwords per generation and kernel.
//!
//! ## How it is organised
//!
//! | module | holds |
//! |---|---|
//! | [`v9`], [`v10`], [`v11`] | the structs and the registers whose bits are generation-specific |
//! | [`regs`] | registers laid out the same on every generation, and constants |
//! | [`props`] | [`QueueProperties`], [`MqdConfig`], [`KernelVersion`], [`UpdateInfo`], validation |
//! | [`compute`], [`sdma`] | the builders, the read-back traits and the generation enums |
//! | [`cu_mask`] | CU masks and their spread over shader engines |
//! | [`cwsr`] | topology-derived sizes (control stack, CWSR area, debug memory, EOP) |
//! | [`layout`] | per-struct field tables ([`MqdLayout`]) |
//! | [`print`] | summaries and full dumps |
//!
//! ## Conventions
//!
//! Field names are the kernel headers' (`cp_hqd_pq_control`, `sdmax_rlcx_rb_cntl`); reserved
//! dwords are named `reserved_N` after their first dword. Structs are native-endian like the
//! kernel's; the hosts amdkfd runs on are little-endian. The builders take ring sizes the
//! kernel has already raised to its 1024-byte minimum ([`raise_ring_size`] applies that
//! rule). The crate is `no_std`, allocates nothing and contains no `unsafe`.
#![no_std]
#![forbid(unsafe_code)]
#![allow(non_camel_case_types)]

#[macro_use]
pub mod layout;

pub mod compute;
pub mod cu_mask;
pub mod cwsr;
pub mod error;
pub mod print;
pub mod props;
pub mod regs;
pub mod sdma;
pub mod v10;
pub mod v11;
pub mod v9;

pub use compute::{ComputeDescriptor, ComputeMqd, CwsrArea};
pub use cu_mask::{CuMask, ShaderLayout};
pub use cwsr::{topology_sizes, vgpr_size_per_cu, TopologyInputs, TopologySizes};
pub use error::{AddressKind, MqdError};
pub use layout::{FieldInfo, MqdLayout};
pub use props::{
    raise_ring_size, Generation, GfxVersion, KernelVersion, MqdConfig, PipePriority, QueueKind,
    QueueProperties, UpdateInfo,
};
pub use sdma::{SdmaDescriptor, SdmaMqd};
pub use v10::{v10_compute_mqd, v10_sdma_mqd};
pub use v11::{v11_compute_mqd, v11_sdma_mqd};
pub use v9::{v9_mqd, v9_sdma_mqd};

pub use zerocopy::{FromBytes, FromZeros, IntoBytes};
