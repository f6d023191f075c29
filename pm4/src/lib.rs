//! # pm4 — typed PM4 and SDMA packets
//!
//! The command packets the amdkfd driver and user queues exchange with AMD's command
//! processors, as `#[repr(C)]` zerocopy structs whose dwords are `bitfield-struct` types
//! with typed fields (enums wherever the hardware has an enum):
//!
//! * [`packets`] — the packet table: each PM4 opcode declared once (its layouts and the
//!   generations they apply to), from which the opcode constants, [`Packet`], its
//!   `Encode`/`Display` and the decoder's dispatch are generated. A new packet is its layout
//!   type, one table row, and the executor arms the compiler then asks for;
//! * [`header`] — the PM4 type-3 header (`count` = body dwords − 1; the one-dword NOP
//!   `0xFFFF1000`; the type-2 filler) and the [`header::Opcode`] type;
//! * [`hws`] — what the driver sends to the scheduler firmware on the HIQ and in runlist
//!   IBs: SET_RESOURCES, MAP_PROCESS (gfx9 16-dword and aldebaran 21-dword forms),
//!   MAP_QUEUES, UNMAP_QUEUES, QUERY_STATUS, RUN_LIST, the WRITE_DATA register form;
//! * [`user`] — user compute-queue packets: NOP, WRITE_DATA, RELEASE_MEM and ACQUIRE_MEM
//!   (gfx9 and gfx10+ layouts as separate types), WAIT_REG_MEM(64), INDIRECT_BUFFER,
//!   COPY_DATA, DMA_DATA, EVENT_WRITE, SET_SH_REG, DISPATCH_DIRECT, and the graphics
//!   ring's SET_CONTEXT_REG (decoded and disassembled; compute queues ignore it);
//! * [`sdma`] — SDMA 4/5/6 packets: NOP, COPY_LINEAR, WRITE, FENCE, TRAP, POLL_REGMEM,
//!   CONSTANT_FILL, TIMESTAMP, INDIRECT;
//! * [`regs`] — the gfx9 SH compute registers by name (`COMPUTE_PGM_LO`, …) that
//!   SET_SH_REG writes, and the common gfx9 context registers (`DB_RENDER_CONTROL`,
//!   `PA_SC_*`, `SPI_*`, `CB_*`, …) that SET_CONTEXT_REG writes, as disassembly names;
//! * [`aql`] — AQL packets (kernel dispatch, barrier-AND/OR, AMD BARRIER_VALUE and PM4-IB)
//!   as zerocopy structs with a decoder and `Display`;
//! * [`fields`] — the shared field enums (cache policy, event type, compare function);
//! * [`writer`] — [`Encode`] and a [`PacketWriter`] appending into a `&mut [u32]`
//!   without allocating;
//! * [`ring`] — write pointers in dwords, SDMA bytes and AQL packets as distinct types,
//!   and the HIQ ring discipline (free space, NOP fill on wrap, submit, rollback);
//! * [`decode`] — `&[u32]` → iterator of typed [`Packet`]s / [`SdmaPacket`]s with their
//!   offsets and precise errors; never panics, never reads past the slice;
//! * [`disasm`] — `Display` for every packet (umr-like one-liners) and dword-offset
//!   listings.
//!
//! Where a layout depends on the GPU generation the generation is explicit: [`GfxGen`]
//! for PM4, [`SdmaGen`] for SDMA. The crate is `no_std` and never allocates.
//!
//! ```
//! use pm4::decode::{Packet, Pm4Decoder};
//! use pm4::disasm::Pm4Listing;
//! use pm4::hws::*;
//! use pm4::user::*;
//! use pm4::{GfxGen, PacketWriter};
//!
//! let mut ib = [0u32; 32];
//! let mut w = PacketWriter::new(&mut ib);
//! w.push(&MapQueues::new(&MapQueuesArgs {
//!     queue_sel: MapQueueSel::HwsDetermined,
//!     queue_type: MapQueueType::NormalCompute,
//!     engine: QueueEngine::Compute,
//!     gws_control_queue: false,
//!     num_queues: 1,
//!     check_disable: false,
//!     doorbell_offset: 0x1234,
//!     mqd_addr: 0x40_0000,
//!     wptr_addr: 0x7f00_0000_1000,
//! })?)?;
//! w.push(&EventWrite::cs_partial_flush())?;
//! w.push(&WriteData::memory(0x7f00_0000_2000, &[1, 2])?)?;
//! let n = w.len();
//!
//! let names: Vec<_> = Pm4Decoder::new(&ib[..n], GfxGen::Gfx9)
//!     .map(|p| p.map(|d| d.packet.name()))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(names, ["MAP_QUEUES", "EVENT_WRITE", "WRITE_DATA"]);
//!
//! let listing = Pm4Listing::new(&ib[..n], GfxGen::Gfx9).to_string();
//! assert!(listing.starts_with("  0x0000: c005a200 20000010"));
//! println!("{listing}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]

pub mod aql;
pub mod decode;
pub mod disasm;
pub mod error;
pub mod fields;
pub mod header;
pub mod hws;
pub mod packets;
pub mod regs;
pub mod ring;
pub mod sdma;
pub mod user;
pub mod writer;

pub use decode::{DecodeError, Packet, Pm4Decoder, SdmaDecoder, SdmaPacket};
pub use error::{BuildError, WriteError};
pub use writer::{Encode, PacketWriter};

/// The GPU generation whose PM4 layouts apply (RELEASE_MEM, ACQUIRE_MEM and the gfx10+
/// bits of WAIT_REG_MEM differ): the one table of generations, `kfd_sys::gpu::Generation`
/// (gfx11 has gfx10's PM4 layouts).
pub use kfd_sys::gpu::Generation as GfxGen;

/// The SDMA forms a GPU generation surely has: SDMA 4.0 on gfx9, 5.0 on gfx10, 6 on gfx11
/// ([`SdmaGen::from_ip_version`] knows the later IP versions within a generation).
impl From<kfd_sys::gpu::Generation> for SdmaGen {
    fn from(generation: kfd_sys::gpu::Generation) -> Self {
        use kfd_sys::gpu::Generation;
        match generation {
            Generation::Gfx9 => SdmaGen::Sdma4,
            Generation::Gfx10 => SdmaGen::Sdma5,
            Generation::Gfx11 => SdmaGen::Sdma6,
        }
    }
}

/// The SDMA IP version whose layouts apply (count widths, cache bits, broadcast copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SdmaGen {
    /// SDMA 4.0–4.2 (gfx900, gfx906, gfx908).
    Sdma4,
    /// SDMA 4.4 (gfx90a, gfx942): SDMA 4's packets with 30-bit COPY_LINEAR counts and
    /// broadcast copy.
    Sdma4_4,
    /// SDMA 5.0 (gfx101x).
    Sdma5,
    /// SDMA 5.2 (gfx103x): SDMA 5's packets with 30-bit COPY_LINEAR counts.
    Sdma5_2,
    /// SDMA 6.x (gfx11).
    Sdma6,
}

impl SdmaGen {
    /// The generation of SDMA IP version `major.minor` (as amdgpu's IP discovery and the
    /// presets name it); `None` for a version this crate has no layouts for.
    pub const fn from_ip_version(major: u8, minor: u8) -> Option<SdmaGen> {
        match (major, minor) {
            (4, 0..=3) => Some(SdmaGen::Sdma4),
            (4, _) => Some(SdmaGen::Sdma4_4),
            (5, 0..=1) => Some(SdmaGen::Sdma5),
            (5, _) => Some(SdmaGen::Sdma5_2),
            (6, _) => Some(SdmaGen::Sdma6),
            _ => None,
        }
    }

    /// The IP major version (4, 5 or 6): the packet layouts of one major version agree
    /// except where [`SdmaGen`]'s variants say otherwise.
    pub const fn major(self) -> u8 {
        match self {
            SdmaGen::Sdma4 | SdmaGen::Sdma4_4 => 4,
            SdmaGen::Sdma5 | SdmaGen::Sdma5_2 => 5,
            SdmaGen::Sdma6 => 6,
        }
    }

    /// Every generation, oldest first.
    pub const ALL: [SdmaGen; 5] = [
        SdmaGen::Sdma4,
        SdmaGen::Sdma4_4,
        SdmaGen::Sdma5,
        SdmaGen::Sdma5_2,
        SdmaGen::Sdma6,
    ];
}
