//! SDMA packets of SDMA 4.x (gfx9), 5.x (gfx10) and 6.x (gfx11) (facts §5; COPY_LINEAR_SUB_WIND
//! is documented on [`SdmaCopyLinearSubWind`]).
//!
//! Header dw0 is `op [7:0]`, `sub_op [15:8]` and op-specific bits above. Byte counts
//! are encoded as **bytes − 1**; constructors take the byte count and an explicit
//! [`SdmaGen`], since the count widths ([`copy_count_bits`], [`fill_count_bits`]), some
//! header bits and the broadcast copy depend on the SDMA IP version.
//!
//! Every opcode is declared once, in the table `sdma_packets!` below (one row per opcode,
//! one layout per decoded sub-op: variant, type, length, name and, for a fixed layout, its
//! dword fields): the [`SdmaOpcode`] constants and names, the fixed layouts' structs,
//! [`SdmaPacket`] with its name, opcode, [`Encode`] and `Display` dispatch, each fixed
//! layout's `DWORDS`/`NAME`/`to_dwords`/[`Encode`] and [`SdmaBody`], and the decoder's
//! dispatch on `op`/`sub_op` all come from it. Each layout's disassembly is generated from a
//! field list in [`disasm`](crate::disasm).
//!
//! Adding a packet: its dword bitfields, a row in the table, `validate(gen)` on the layout,
//! a `layout_display!` row in `disasm.rs`, and an arm in each executor that matches on
//! [`SdmaPacket`] (the matches are exhaustive).
//!
//! ```
//! use pm4::sdma::*;
//! use pm4::SdmaGen;
//! let copy = SdmaCopyLinear::new(SdmaGen::Sdma5, 0x1000, 0x2000, 4096)?;
//! assert_eq!(copy.to_dwords()[..2], [0x0000_0001, 4095]);
//! assert_eq!(copy.byte_count(), 4096);
//! assert!(SdmaCopyLinear::new(SdmaGen::Sdma4, 0, 0, (4 << 20) + 1).is_err());
//! // gfx90a's SDMA 4.4 copies up to 1 GiB in one packet.
//! assert!(SdmaCopyLinear::new(SdmaGen::Sdma4_4, 0, 0, 1 << 30).is_ok());
//! # Ok::<(), pm4::BuildError>(())
//! ```

use core::fmt;

use bitfield_struct::bitfield;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::decode::{check_enum, check_reserved, invalid_field, DecodeErrorKind};
use crate::error::{check_align, check_bits, BuildError, WriteError};
use crate::fields::{hi32, hw_enum, join, lo32, reserved_mask, CompareFunction};
use crate::hws::{enum_overflow, zc_packet};
use crate::writer::{fixed_layout, space, Encode};
use crate::SdmaGen;

mod copy;
mod data;
mod sync;

pub use copy::*;
pub use data::*;
pub use sync::*;

/// An SDMA opcode (`op`, dw0 `[7:0]`). Open, with the names of facts §5; the known ones are
/// the rows of the [packet table](crate::sdma).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SdmaOpcode(pub u8);

/// An SDMA packet layout the decoder builds from a stream's dwords.
pub trait SdmaBody<'a>: Sized + Encode + fmt::Display {
    /// The packet's name as the disassembler prints it.
    const NAME: &'static str;

    /// Builds and validates the packet at the start of `rest` (header first) with the rules
    /// of `gen`; returns it and its length in dwords. Never panics.
    fn decode_body(rest: &'a [u32], gen: SdmaGen) -> Result<(Self, usize), DecodeErrorKind>;
}

/// The items of one layout row: a fixed layout (`Type: dwords`) gets [`fixed_layout!`] and
/// an [`SdmaBody`] that reads its dwords and checks them with `validate(gen)`; a layout with
/// a payload (`Type<'a>`) gets `NAME` and implements [`SdmaBody`] by hand.
macro_rules! sdma_layout {
    ($(#[$sm:meta])* $ty:ident : $dwords:literal, $name:literal { $($body:tt)* }) => {
        zc_packet! {
            $(#[$sm])*
            pub struct $ty { $($body)* }
        }
        fixed_layout!($ty, $dwords, $name);

        impl<'a> SdmaBody<'a> for $ty {
            const NAME: &'static str = $name;

            #[inline(always)]
            fn decode_body(
                rest: &'a [u32],
                gen: SdmaGen,
            ) -> Result<(Self, usize), DecodeErrorKind> {
                let (p, n): ($ty, usize) = crate::decode::sdma_fixed(rest)?;
                p.validate(gen)?;
                Ok((p, n))
            }
        }
    };
    ($(#[$sm:meta])* $ty:ident < $lt:lifetime >, $name:literal) => {
        impl $ty<'_> {
            /// The packet's name as the disassembler prints it.
            pub const NAME: &'static str = $name;
        }
    };
}

/// The SDMA packet table. A row is `NAME = op` for an opcode the crate knows but does not
/// decode, or `NAME = op => { layout, … }` for one it decodes, where a layout is
/// `[docs] sub_op [if guard] => Variant(Type[: dwords]) "NAME" [{ fields }]`: the first
/// layout whose sub-op pattern matches (and whose `guard(dw0, gen)` holds) decodes the
/// packet. A fixed layout (`Type: dwords`) lists its dword fields here and the table defines
/// its struct; a layout with a payload (`Type<'a>`) is defined by hand. From the table come
/// the [`SdmaOpcode`] constants and [`SdmaOpcode::name`], [`SdmaPacket`] with its `name`,
/// `opcode`, [`Encode`] and `Display`, each fixed layout's struct, `DWORDS`/`NAME`/
/// `to_dwords`/[`Encode`] and [`SdmaBody`], and the decoder's dispatch.
macro_rules! sdma_packets {
    ($(
        $(#[$m:meta])*
        $op:ident = $value:literal
        $( => { $(
            $(#[$sm:meta])*
            $sub:pat $(if $guard:ident)? =>
                $variant:ident ( $ty:ident $(< $lt:lifetime >)? $(: $dwords:literal)? )
                $name:literal
                $({ $($body:tt)* })?
        ),+ $(,)? } )? ,
    )+) => {
        impl SdmaOpcode {
            $( $(#[$m])* pub const $op: SdmaOpcode = SdmaOpcode($value); )+

            /// The name of a known opcode (`"COPY"`).
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($op)), )+
                    _ => None,
                }
            }
        }

        $( $( $(
            sdma_layout!($(#[$sm])* $ty $(< $lt >)? $(: $dwords)?, $name $({ $($body)* })?);
        )+ )? )+

        /// A typed SDMA packet: one variant per layout of the [packet table](crate::sdma).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[allow(missing_docs)] // each variant is the packet type of the same name
        pub enum SdmaPacket<'a> {
            $( $( $( $variant($ty $(< $lt >)?), )+ )? )+
        }

        impl SdmaPacket<'_> {
            /// The packet name as the disassembler prints it.
            pub fn name(&self) -> &'static str {
                match self {
                    $( $( $( SdmaPacket::$variant(_) => $name, )+ )? )+
                }
            }

            /// The opcode.
            pub fn opcode(&self) -> SdmaOpcode {
                match self {
                    $( $( $( SdmaPacket::$variant(_) => SdmaOpcode::$op, )+ )? )+
                }
            }
        }

        impl Encode for SdmaPacket<'_> {
            fn dwords(&self) -> usize {
                match self {
                    $( $( $( SdmaPacket::$variant(p) => p.dwords(), )+ )? )+
                }
            }

            fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
                match self {
                    $( $( $( SdmaPacket::$variant(p) => p.encode_into(out), )+ )? )+
                }
            }
        }

        impl fmt::Display for SdmaPacket<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( $( $( SdmaPacket::$variant(p) => p.fmt(f), )+ )? )+
                }
            }
        }

        /// Decodes the packet at the start of `rest` (at least one dword) for `gen`.
        // `_` rows expand to `matches!(sub_op, _)`, whose second arm is unreachable.
        #[allow(unreachable_patterns)]
        #[inline(always)]
        pub(crate) fn decode_sdma_body<'a>(
            rest: &'a [u32],
            raw: u32,
            gen: SdmaGen,
        ) -> Result<(SdmaPacket<'a>, usize), DecodeErrorKind> {
            let op = SdmaOpcode(raw as u8);
            let sub_op = (raw >> 8) as u8;
            match op {
                $( $(
                    SdmaOpcode::$op => {
                        $(
                            if matches!(sub_op, $sub) $(&& $guard(raw, gen))? {
                                return <$ty $(< $lt >)? as SdmaBody<'a>>::decode_body(rest, gen)
                                    .map(|(p, n)| (SdmaPacket::$variant(p), n));
                            }
                        )+
                        Err(DecodeErrorKind::UnsupportedSdmaOpcode { op, sub_op })
                    }
                )? )+
                op if op.name().is_some() => {
                    Err(DecodeErrorKind::UnsupportedSdmaOpcode { op, sub_op })
                }
                op => Err(DecodeErrorKind::UnknownSdmaOpcode { op: op.0, sub_op }),
            }
        }
    };
}

sdma_packets! {
    /// No operation (a zero dword is a one-dword NOP).
    NOP = 0 => { _ => Nop(SdmaNop<'a>) "SDMA_NOP" },
    /// Copy. The broadcast bit makes a COPY_LINEAR two dwords longer where the engine has it;
    /// elsewhere it is a reserved bit of the 7-dword packet.
    COPY = 1 => {
        /// COPY_LINEAR with the broadcast bit (op 1, sub-op 0, dw0 `[27]`), 9 dwords: the same
        /// bytes from one source to two destinations (SDMA 4.4+, [`has_broadcast_copy`]; what
        /// ROCr's broadcast copy and kfdtest's two-destination copy write).
        0 if is_broadcast_copy =>
            CopyLinearBroadcast(SdmaCopyLinearBroadcast: 9) "SDMA_COPY_LINEAR_BROADCAST" {
            /// dw0 (broadcast set).
            pub header: SdmaCopyHeader,
            /// dw1: bytes − 1.
            pub count: u32,
            /// dw2: swaps and cache policies.
            pub params: SdmaBroadcastParams,
            /// dw3: source address bits 31:0.
            pub src_lo: u32,
            /// dw4: source address bits 63:32.
            pub src_hi: u32,
            /// dw5: first destination bits 31:0.
            pub dst1_lo: u32,
            /// dw6: first destination bits 63:32.
            pub dst1_hi: u32,
            /// dw7: second destination bits 31:0.
            pub dst2_lo: u32,
            /// dw8: second destination bits 63:32.
            pub dst2_hi: u32,
        },
        /// COPY_LINEAR (op 1, sub-op 0), 7 dwords.
        0 => CopyLinear(SdmaCopyLinear: 7) "SDMA_COPY_LINEAR" {
            /// dw0.
            pub header: SdmaCopyHeader,
            /// dw1: bytes − 1.
            pub count: u32,
            /// dw2: swap and cache policies.
            pub params: SdmaCopyParams,
            /// dw3: source address bits 31:0.
            pub src_lo: u32,
            /// dw4: source address bits 63:32.
            pub src_hi: u32,
            /// dw5: destination address bits 31:0.
            pub dst_lo: u32,
            /// dw6: destination address bits 63:32.
            pub dst_hi: u32,
        },
        /// COPY_LINEAR_SUB_WIND (op 1, sub-op 4), 13 dwords: copies a `rect_x × rect_y ×
        /// rect_z` box of elements between two pitched linear surfaces (what ROCr emits for
        /// `hsa_amd_memory_async_copy_rect`, i.e. `hipMemcpy2D`/`hipMemcpy3D`).
        ///
        /// Layout (the same on SDMA 4, 5 and 6; facts from the Linux kernel's
        /// `vega10_sdma_pkt_open.h` `SDMA_PKT_COPY_LINEAR_SUBWIN` field masks and shifts, the
        /// SDMA 6 cache-policy bits from the SDMA 6 packet header, the minus-one encodings from
        /// how ROCr's `BuildCopyRectCommand` fills the packet):
        ///
        /// | dw | bits | field |
        /// |----|------|-------|
        /// | 0 | `[7:0]` op = 1, `[15:8]` sub_op = 4, `[18]` tmz, `[31:29]` elementsize | header |
        /// | 1, 2 | | source address bits 31:0 (dword aligned), 63:32 |
        /// | 3 | `[13:0]` src_x, `[29:16]` src_y | source origin |
        /// | 4 | `[10:0]` src_z, `[31:13]` src_pitch − 1 | |
        /// | 5 | `[27:0]` src_slice_pitch − 1 | |
        /// | 6, 7 | | destination address bits 31:0 (dword aligned), 63:32 |
        /// | 8 | `[13:0]` dst_x, `[29:16]` dst_y | destination origin |
        /// | 9 | `[10:0]` dst_z, `[31:13]` dst_pitch − 1 | |
        /// | 10 | `[27:0]` dst_slice_pitch − 1 | |
        /// | 11 | `[13:0]` rect_x − 1, `[29:16]` rect_y − 1 | rectangle |
        /// | 12 | `[10:0]` rect_z − 1, `[17:16]` dst_sw, `[20:18]` dst_cache_policy (SDMA 6), `[25:24]` src_sw, `[28:26]` src_cache_policy (SDMA 6) | |
        ///
        /// Units: an element is `1 << elementsize` bytes; x, the pitches and the rectangle's
        /// width count elements, y and the height rows, z and the depth slices. The element at
        /// `(x, y, z)` of a surface is at byte `addr + ((x + y·pitch + z·slice_pitch) <<
        /// elementsize)`.
        SDMA_SUBOP_COPY_LINEAR_SUB_WIND =>
            CopyLinearSubWind(SdmaCopyLinearSubWind: 13) "SDMA_COPY_LINEAR_SUB_WIND" {
            /// dw0.
            pub header: SdmaSubWindHeader,
            /// dw1: source address bits 31:0.
            pub src_lo: u32,
            /// dw2: source address bits 63:32.
            pub src_hi: u32,
            /// dw3: source x, y.
            pub src_xy: SdmaSubWindXy,
            /// dw4: source z, pitch − 1.
            pub src_z_pitch: SdmaSubWindZPitch,
            /// dw5: source slice pitch − 1 (`[27:0]`).
            pub src_slice_pitch: u32,
            /// dw6: destination address bits 31:0.
            pub dst_lo: u32,
            /// dw7: destination address bits 63:32.
            pub dst_hi: u32,
            /// dw8: destination x, y.
            pub dst_xy: SdmaSubWindXy,
            /// dw9: destination z, pitch − 1.
            pub dst_z_pitch: SdmaSubWindZPitch,
            /// dw10: destination slice pitch − 1 (`[27:0]`).
            pub dst_slice_pitch: u32,
            /// dw11: rectangle width − 1 (`x`), height − 1 (`y`).
            pub rect_xy: SdmaSubWindXy,
            /// dw12: rectangle depth − 1, swaps, cache policies.
            pub rect_z: SdmaSubWindRectZ,
        },
    },
    /// Write.
    WRITE = 2 => { 0 => Write(SdmaWrite<'a>) "SDMA_WRITE_LINEAR" },
    /// Indirect buffer.
    INDIRECT = 4 => {
        /// INDIRECT (op 4), 6 dwords: run an SDMA IB.
        0 => Indirect(SdmaIndirect: 6) "SDMA_INDIRECT" {
            /// dw0.
            pub header: SdmaIndirectHeader,
            /// dw1: IB address bits 31:0 (32-byte aligned).
            pub base_lo: u32,
            /// dw2: IB address bits 63:32.
            pub base_hi: u32,
            /// dw3: IB size in dwords `[19:0]`.
            pub ib_size: u32,
            /// dw4: context-save area bits 31:0.
            pub csa_lo: u32,
            /// dw5: context-save area bits 63:32.
            pub csa_hi: u32,
        },
    },
    /// Fence (32-bit memory write).
    FENCE = 5 => {
        /// FENCE (op 5), 4 dwords: writes 32-bit `data` to `addr`.
        0 => Fence(SdmaFence: 4) "SDMA_FENCE" {
            /// dw0.
            pub header: SdmaFenceHeader,
            /// dw1: address bits 31:0 (dword aligned).
            pub addr_lo: u32,
            /// dw2: address bits 63:32.
            pub addr_hi: u32,
            /// dw3: the value.
            pub data: u32,
        },
    },
    /// Trap (interrupt).
    TRAP = 6 => {
        /// TRAP (op 6), 2 dwords: raises an interrupt with a 28-bit context.
        0 => Trap(SdmaTrap: 2) "SDMA_TRAP" {
            /// dw0.
            pub header: SdmaHeader,
            /// dw1.
            pub context: SdmaTrapContext,
        },
    },
    /// Semaphore.
    SEM = 7,
    /// Poll register/memory.
    POLL_REGMEM = 8 => {
        /// POLL_REGMEM (op 8, sub-op 0), 6 dwords.
        0 => PollRegmem(SdmaPollRegmem: 6) "SDMA_POLL_REGMEM" {
            /// dw0.
            pub header: SdmaPollHeader,
            /// dw1: address bits 31:0 (memory) or register byte offset (`reg << 2`).
            pub addr_lo: u32,
            /// dw2: address bits 63:32.
            pub addr_hi: u32,
            /// dw3: reference.
            pub reference: u32,
            /// dw4: mask.
            pub mask: u32,
            /// dw5: interval and retry count.
            pub interval: SdmaPollInterval,
        },
    },
    /// Conditional execute.
    COND_EXE = 9,
    /// Atomic.
    ATOMIC = 10,
    /// Constant fill.
    CONST_FILL = 11 => {
        /// CONSTANT_FILL (op 11), 5 dwords.
        0 => ConstantFill(SdmaConstantFill: 5) "SDMA_CONSTANT_FILL" {
            /// dw0.
            pub header: SdmaFillHeader,
            /// dw1: destination bits 31:0.
            pub dst_lo: u32,
            /// dw2: destination bits 63:32.
            pub dst_hi: u32,
            /// dw3: the fill value.
            pub data: u32,
            /// dw4: bytes − 1 (with dword fill the two LSBs are ignored).
            pub count: u32,
        },
    },
    /// PTE/PDE generation.
    PTEPDE = 12,
    /// Timestamp (sub-ops SET 0, GET 1, GET_GLOBAL 2).
    TIMESTAMP = 13 => {
        /// TIMESTAMP (op 13), 3 dwords: SET (value) or GET/GET_GLOBAL (qword address).
        0..=2 => Timestamp(SdmaTimestamp: 3) "SDMA_TIMESTAMP" {
            /// dw0.
            pub header: SdmaTimestampHeader,
            /// dw1: address bits 31:3 / value bits 31:0.
            pub lo: u32,
            /// dw2: address bits 63:32 / value bits 63:32.
            pub hi: u32,
        },
    },
    /// SRBM register write.
    SRBM_WRITE = 14,
    /// Pre-execute.
    PRE_EXE = 15,
    /// Dummy trap.
    DUMMY_TRAP = 16,
}

/// Whether a COPY_LINEAR header `dw0` is the broadcast form on `gen`.
fn is_broadcast_copy(dw0: u32, gen: SdmaGen) -> bool {
    SdmaCopyHeader::from_bits(dw0).broadcast() && has_broadcast_copy(gen)
}

impl<'a> SdmaBody<'a> for SdmaNop<'a> {
    const NAME: &'static str = SdmaNop::NAME;

    fn decode_body(rest: &'a [u32], _gen: SdmaGen) -> Result<(Self, usize), DecodeErrorKind> {
        let header = SdmaNopHeader::from_bits(rest.first().copied().unwrap_or_default());
        let n = header.count() as usize + 1;
        let Some(body) = rest.get(..n) else {
            return Err(DecodeErrorKind::Truncated {
                packet: Self::NAME,
                needed: n,
                available: rest.len(),
            });
        };
        let p = SdmaNop {
            header,
            payload: body.get(1..).unwrap_or_default(),
        };
        p.validate()?;
        Ok((p, n))
    }
}

impl<'a> SdmaBody<'a> for SdmaWrite<'a> {
    const NAME: &'static str = SdmaWrite::NAME;

    fn decode_body(rest: &'a [u32], gen: SdmaGen) -> Result<(Self, usize), DecodeErrorKind> {
        let Some(head) = rest.get(..4) else {
            return Err(DecodeErrorKind::Truncated {
                packet: Self::NAME,
                needed: 4,
                available: rest.len(),
            });
        };
        let Ok(head) = SdmaWriteHead::read_from_bytes(head.as_bytes()) else {
            return Err(DecodeErrorKind::WrongLength {
                packet: Self::NAME,
                dwords: 4,
                min: 5,
                max: 5,
            });
        };
        let n = 4 + head.count.count() as usize + 1;
        let Some(data) = rest.get(4..n) else {
            return Err(DecodeErrorKind::Truncated {
                packet: Self::NAME,
                needed: n,
                available: rest.len(),
            });
        };
        let p = SdmaWrite { head, data };
        p.validate(gen)?;
        Ok((p, n))
    }
}

impl SdmaOpcode {
    /// Raw bits for `bitfield-struct`.
    pub const fn from_bits(raw: u32) -> Self {
        SdmaOpcode(raw as u8)
    }
    /// Raw bits for `bitfield-struct`.
    pub const fn into_bits(self) -> u32 {
        self.0 as u32
    }
}

impl fmt::Debug for SdmaOpcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "SdmaOpcode::{n}"),
            None => write!(f, "SdmaOpcode({:#04x})", self.0),
        }
    }
}

impl fmt::Display for SdmaOpcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "op={:#04x}", self.0),
        }
    }
}

hw_enum! {
    /// Endian swap of SDMA data (`*_sw` fields).
    pub enum EndianSwap: 2 bits, catch-all Reserved {
        /// No swap.
        None = 0 => "NONE",
        /// Swap bytes in 16-bit words.
        Swap16 = 1 => "8IN16",
        /// Swap bytes in 32-bit words.
        Swap32 = 2 => "8IN32",
        /// Swap bytes in 64-bit words.
        Swap64 = 3 => "8IN64",
    }
}

hw_enum! {
    /// `fillsize` of CONSTANT_FILL (dw0 `[31:30]`).
    pub enum FillSize: 2 bits, catch-all Reserved {
        /// Byte fill.
        Byte = 0 => "BYTE",
        /// Dword fill (what ROCr uses).
        Dword = 2 => "DWORD",
    }
}

hw_enum! {
    /// `sub_op` of TIMESTAMP.
    pub enum TimestampOp: 8 bits, catch-all Reserved {
        /// Set the timestamp counter (dw1/dw2 = value).
        Set = 0 => "SET",
        /// Write the local timestamp to memory.
        Get = 1 => "GET",
        /// Write the global timestamp to memory.
        GetGlobal = 2 => "GET_GLOBAL",
    }
}

/// Bits of COPY_LINEAR's byte count: `[21:0]` on SDMA 4.0–4.2 and 5.0, `[29:0]` from SDMA 4.4
/// and 5.2 on (ROCr splits copies at 2^22 − 1 bytes on gfx900–gfx908 and gfx101x, at 2^30 − 1
/// bytes on gfx90a, gfx94x, gfx103x and gfx11).
pub const fn copy_count_bits(gen: SdmaGen) -> u32 {
    match gen {
        SdmaGen::Sdma4 | SdmaGen::Sdma5 => 22,
        SdmaGen::Sdma4_4 | SdmaGen::Sdma5_2 | SdmaGen::Sdma6 => 30,
    }
}

/// Bits of CONSTANT_FILL's byte count: `[21:0]` before SDMA 6, `[29:0]` on 6.
pub const fn fill_count_bits(gen: SdmaGen) -> u32 {
    match gen.major() {
        6 => 30,
        _ => 22,
    }
}

/// Largest byte count one COPY_LINEAR moves on `gen`.
pub const fn max_copy_bytes(gen: SdmaGen) -> u64 {
    1u64 << copy_count_bits(gen)
}

/// Largest byte count one CONSTANT_FILL writes on `gen`.
pub const fn max_fill_bytes(gen: SdmaGen) -> u64 {
    1u64 << fill_count_bits(gen)
}

/// Whether COPY_LINEAR's broadcast form (one source, two destinations) exists on `gen`: from
/// SDMA 4.4 on (ROCr uses it on gfx90a, gfx94x and every gfx10+ part).
pub const fn has_broadcast_copy(gen: SdmaGen) -> bool {
    !matches!(gen, SdmaGen::Sdma4)
}

/// `bytes − 1`, checked against a count field of `bits`.
fn check_bytes(packet: &'static str, bits: u32, bytes: u64) -> Result<u32, BuildError> {
    let max = 1u64 << bits;
    if bytes == 0 || bytes > max {
        return Err(BuildError::FieldOutOfRange {
            packet,
            field: "bytes",
            value: bytes,
            max,
        });
    }
    Ok((bytes - 1) as u32)
}

/// A count dword of `bits` value bits, the rest reserved.
fn check_count(
    packet: &'static str,
    dword: usize,
    bits: u32,
    count: u32,
) -> Result<(), DecodeErrorKind> {
    check_reserved(
        packet,
        dword,
        count,
        !crate::fields::field_mask(0, bits as usize),
    )
}

/// A plain SDMA header: `op`, `sub_op`, op-specific bits reserved.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaHeader {
    /// `[7:0]` opcode.
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode.
    pub sub_op: u8,
    #[bits(16)]
    __: u16,
}

impl SdmaHeader {
    /// A header for `op`/`sub_op`.
    pub const fn of(op: SdmaOpcode, sub_op: u8) -> Self {
        Self::new().with_op(op).with_sub_op(sub_op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_those_of_facts_section_5() {
        let facts = [
            ("NOP", 0),
            ("COPY", 1),
            ("WRITE", 2),
            ("INDIRECT", 4),
            ("FENCE", 5),
            ("TRAP", 6),
            ("SEM", 7),
            ("POLL_REGMEM", 8),
            ("COND_EXE", 9),
            ("ATOMIC", 10),
            ("CONST_FILL", 11),
            ("PTEPDE", 12),
            ("TIMESTAMP", 13),
            ("SRBM_WRITE", 14),
            ("PRE_EXE", 15),
            ("DUMMY_TRAP", 16),
        ];
        for (name, op) in facts {
            assert_eq!(SdmaOpcode(op).name(), Some(name));
        }
        assert_eq!(SdmaOpcode(3).name(), None);
        assert_eq!(SdmaOpcode(17).name(), None);
    }

    #[test]
    fn the_table_names_each_layout_once() {
        let words = SdmaFence::new(0x1000, 7).unwrap().to_dwords();
        let (p, n) = decode_sdma_body(&words, words[0], SdmaGen::Sdma5).unwrap();
        assert_eq!(
            (p.name(), p.opcode(), n),
            (SdmaFence::NAME, SdmaOpcode::FENCE, 4)
        );
        assert_eq!(<SdmaFence as SdmaBody>::NAME, "SDMA_FENCE");
        assert_eq!(<SdmaWrite as SdmaBody>::NAME, "SDMA_WRITE_LINEAR");
        // A sub-op no row decodes is an unsupported, not an unknown, opcode.
        let words = [u32::from(SdmaOpcode::COPY.0) | 1 << 8];
        assert_eq!(
            decode_sdma_body(&words, words[0], SdmaGen::Sdma5).unwrap_err(),
            DecodeErrorKind::UnsupportedSdmaOpcode {
                op: SdmaOpcode::COPY,
                sub_op: 1
            }
        );
    }
}
