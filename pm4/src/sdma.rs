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

// ---------------------------------------------------------------------------------------
// NOP
// ---------------------------------------------------------------------------------------

/// SDMA NOP header: `count [29:16]` = following dwords to skip ("burst" NOP).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaNopHeader {
    /// `[7:0]` opcode (0).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (0).
    pub sub_op: u8,
    /// `[29:16]` dwords that follow.
    #[bits(14)]
    pub count: u16,
    #[bits(2)]
    __: u8,
}

/// SDMA NOP: a zero dword (one-dword NOP) or a burst NOP skipping `count` dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdmaNop<'a> {
    /// dw0.
    pub header: SdmaNopHeader,
    /// The skipped dwords.
    pub payload: &'a [u32],
}

impl<'a> SdmaNop<'a> {
    /// A NOP skipping `payload` (at most `0x3FFF` dwords; empty = the zero dword).
    pub fn new(payload: &'a [u32]) -> Result<Self, BuildError> {
        check_bits(Self::NAME, "count", payload.len() as u64, 14)?;
        Ok(SdmaNop {
            header: SdmaNopHeader::new().with_count(payload.len() as u16),
            payload,
        })
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        if self.header.sub_op() != 0 {
            return Err(invalid_field(
                Self::NAME,
                0,
                "sub_op",
                self.header.sub_op().into(),
            ));
        }
        check_reserved(Self::NAME, 0, self.header.into_bits(), 0xC000_0000)
    }
}

impl Encode for SdmaNop<'_> {
    fn dwords(&self) -> usize {
        1 + self.payload.len()
    }
    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
        let n = self.dwords();
        let dst = space(out, n)?;
        let (head, body) = dst.split_at_mut(1);
        head[0] = self.header.into_bits();
        body.copy_from_slice(self.payload);
        Ok(n)
    }
}

// ---------------------------------------------------------------------------------------
// COPY_LINEAR
// ---------------------------------------------------------------------------------------

/// COPY_LINEAR dw0. Bit 27 (broadcast) makes the packet a [`SdmaCopyLinearBroadcast`], two
/// dwords longer.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaCopyHeader {
    /// `[7:0]` opcode (COPY).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (LINEAR = 0).
    pub sub_op: u8,
    /// `[16]` encrypt.
    pub encrypt: bool,
    #[bits(1)]
    __: u8,
    /// `[18]` TMZ.
    pub tmz: bool,
    #[bits(6)]
    __: u8,
    /// `[25]` copy backwards (SDMA 5+).
    pub backwards: bool,
    #[bits(1)]
    __: u8,
    /// `[27]` broadcast: the packet is a [`SdmaCopyLinearBroadcast`] (SDMA 4.4+).
    pub broadcast: bool,
    #[bits(4)]
    __: u8,
}

const COPY_HEADER_RESERVED: u32 = reserved_mask!(SdmaCopyHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, ENCRYPT_OFFSET / ENCRYPT_BITS,
    TMZ_OFFSET / TMZ_BITS, BACKWARDS_OFFSET / BACKWARDS_BITS);

impl SdmaCopyHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = COPY_HEADER_RESERVED;
}

/// COPY_LINEAR dw2: endian swap and (SDMA 6) cache policies.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaCopyParams {
    #[bits(16)]
    __: u16,
    /// `[17:16]` destination swap.
    #[bits(2)]
    pub dst_sw: EndianSwap,
    /// `[20:18]` destination cache policy (SDMA 6).
    #[bits(3)]
    pub dst_cache_policy: u8,
    #[bits(3)]
    __: u8,
    /// `[25:24]` source swap.
    #[bits(2)]
    pub src_sw: EndianSwap,
    /// `[28:26]` source cache policy (SDMA 6).
    #[bits(3)]
    pub src_cache_policy: u8,
    #[bits(3)]
    __: u8,
}

const COPY_PARAMS_RESERVED: u32 = reserved_mask!(SdmaCopyParams:
    DST_SW_OFFSET / DST_SW_BITS, DST_CACHE_POLICY_OFFSET / DST_CACHE_POLICY_BITS,
    SRC_SW_OFFSET / SRC_SW_BITS, SRC_CACHE_POLICY_OFFSET / SRC_CACHE_POLICY_BITS);

impl SdmaCopyParams {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = COPY_PARAMS_RESERVED;
}
const COPY_PARAMS_SDMA6_ONLY: u32 = (0b111 << SdmaCopyParams::DST_CACHE_POLICY_OFFSET)
    | (0b111 << SdmaCopyParams::SRC_CACHE_POLICY_OFFSET);

// [`SdmaCopyLinear`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaCopyLinear {
    /// A copy of `bytes` (1..=[`max_copy_bytes`]) from `src` to `dst`.
    pub fn new(gen: SdmaGen, src: u64, dst: u64, bytes: u64) -> Result<Self, BuildError> {
        Ok(SdmaCopyLinear {
            header: SdmaCopyHeader::new().with_op(SdmaOpcode::COPY),
            count: check_bytes(Self::NAME, copy_count_bits(gen), bytes)?,
            params: SdmaCopyParams::new(),
            src_lo: lo32(src),
            src_hi: hi32(src),
            dst_lo: lo32(dst),
            dst_hi: hi32(dst),
        })
    }

    /// Bytes copied (`count + 1`).
    pub const fn byte_count(&self) -> u64 {
        self.count as u64 + 1
    }

    /// Source address.
    pub const fn src(&self) -> u64 {
        join(self.src_lo, self.src_hi)
    }

    /// Destination address.
    pub const fn dst(&self) -> u64 {
        join(self.dst_lo, self.dst_hi)
    }

    /// Checks reserved bits and field values as the decoder for `gen` does.
    pub fn validate(&self, gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        const P: &str = SdmaCopyLinear::NAME;
        // The broadcast bit makes the packet a broadcast copy, which the decoder reads as one.
        let mut reserved = COPY_HEADER_RESERVED | 1 << SdmaCopyHeader::BROADCAST_OFFSET;
        if gen.major() == 4 {
            reserved |= 1 << SdmaCopyHeader::BACKWARDS_OFFSET;
        }
        check_reserved(P, 0, self.header.into_bits(), reserved)?;
        check_count(P, 1, copy_count_bits(gen), self.count)?;
        let mut reserved = COPY_PARAMS_RESERVED;
        if gen.major() != 6 {
            reserved |= COPY_PARAMS_SDMA6_ONLY;
        }
        check_reserved(P, 2, self.params.into_bits(), reserved)
    }
}

// ---------------------------------------------------------------------------------------
// COPY_LINEAR, broadcast
// ---------------------------------------------------------------------------------------

/// The broadcast copy's dw2: endian swaps and (SDMA 6) cache policies of the source and both
/// destinations.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaBroadcastParams {
    #[bits(8)]
    __: u8,
    /// `[9:8]` second destination's swap.
    #[bits(2)]
    pub dst2_sw: EndianSwap,
    /// `[12:10]` second destination's cache policy (SDMA 6).
    #[bits(3)]
    pub dst2_cache_policy: u8,
    #[bits(3)]
    __: u8,
    /// `[17:16]` first destination's swap.
    #[bits(2)]
    pub dst1_sw: EndianSwap,
    /// `[20:18]` first destination's cache policy (SDMA 6).
    #[bits(3)]
    pub dst1_cache_policy: u8,
    #[bits(3)]
    __: u8,
    /// `[25:24]` source swap.
    #[bits(2)]
    pub src_sw: EndianSwap,
    /// `[28:26]` source cache policy (SDMA 6).
    #[bits(3)]
    pub src_cache_policy: u8,
    #[bits(3)]
    __: u8,
}

const BROADCAST_PARAMS_RESERVED: u32 = reserved_mask!(SdmaBroadcastParams:
    DST2_SW_OFFSET / DST2_SW_BITS, DST2_CACHE_POLICY_OFFSET / DST2_CACHE_POLICY_BITS,
    DST1_SW_OFFSET / DST1_SW_BITS, DST1_CACHE_POLICY_OFFSET / DST1_CACHE_POLICY_BITS,
    SRC_SW_OFFSET / SRC_SW_BITS, SRC_CACHE_POLICY_OFFSET / SRC_CACHE_POLICY_BITS);
const BROADCAST_PARAMS_SDMA6_ONLY: u32 = (0b111 << SdmaBroadcastParams::DST2_CACHE_POLICY_OFFSET)
    | (0b111 << SdmaBroadcastParams::DST1_CACHE_POLICY_OFFSET)
    | (0b111 << SdmaBroadcastParams::SRC_CACHE_POLICY_OFFSET);

impl SdmaBroadcastParams {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = BROADCAST_PARAMS_RESERVED;
}

// [`SdmaCopyLinearBroadcast`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaCopyLinearBroadcast {
    /// A copy of `bytes` (1..=[`max_copy_bytes`]) from `src` to both `dst1` and `dst2`; an
    /// error on a generation without broadcast copy.
    pub fn new(
        gen: SdmaGen,
        src: u64,
        dst1: u64,
        dst2: u64,
        bytes: u64,
    ) -> Result<Self, BuildError> {
        if !has_broadcast_copy(gen) {
            return Err(BuildError::Conflict {
                packet: Self::NAME,
                reason: "broadcast copy needs SDMA 4.4 or later",
            });
        }
        Ok(SdmaCopyLinearBroadcast {
            header: SdmaCopyHeader::new()
                .with_op(SdmaOpcode::COPY)
                .with_broadcast(true),
            count: check_bytes(Self::NAME, copy_count_bits(gen), bytes)?,
            params: SdmaBroadcastParams::new(),
            src_lo: lo32(src),
            src_hi: hi32(src),
            dst1_lo: lo32(dst1),
            dst1_hi: hi32(dst1),
            dst2_lo: lo32(dst2),
            dst2_hi: hi32(dst2),
        })
    }

    /// Bytes copied to each destination (`count + 1`).
    pub const fn byte_count(&self) -> u64 {
        self.count as u64 + 1
    }

    /// Source address.
    pub const fn src(&self) -> u64 {
        join(self.src_lo, self.src_hi)
    }

    /// The two destination addresses.
    pub const fn dsts(&self) -> [u64; 2] {
        [
            join(self.dst1_lo, self.dst1_hi),
            join(self.dst2_lo, self.dst2_hi),
        ]
    }

    /// Checks reserved bits and field values as the decoder for `gen` does (a generation
    /// without broadcast copy reports the broadcast bit as reserved).
    pub fn validate(&self, gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        const P: &str = SdmaCopyLinearBroadcast::NAME;
        let broadcast = 1 << SdmaCopyHeader::BROADCAST_OFFSET;
        let mut reserved = COPY_HEADER_RESERVED | 1 << SdmaCopyHeader::BACKWARDS_OFFSET;
        if has_broadcast_copy(gen) {
            reserved &= !broadcast;
        }
        check_reserved(P, 0, self.header.into_bits(), reserved)?;
        check_count(P, 1, copy_count_bits(gen), self.count)?;
        let mut reserved = BROADCAST_PARAMS_RESERVED;
        if gen.major() != 6 {
            reserved |= BROADCAST_PARAMS_SDMA6_ONLY;
        }
        check_reserved(P, 2, self.params.into_bits(), reserved)
    }
}

// ---------------------------------------------------------------------------------------
// COPY_LINEAR_SUB_WIND
// ---------------------------------------------------------------------------------------

/// `sub_op` of COPY_LINEAR_SUB_WIND.
pub const SDMA_SUBOP_COPY_LINEAR_SUB_WIND: u8 = 4;

/// Largest `elementsize` (log2 of the element in bytes) of a sub-window copy: 16-byte
/// elements.
pub const SUB_WIND_MAX_ELEMENTSIZE: u8 = 4;

/// COPY_LINEAR_SUB_WIND dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaSubWindHeader {
    /// `[7:0]` opcode (COPY).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (LINEAR_SUB_WIND = 4).
    pub sub_op: u8,
    #[bits(2)]
    __: u8,
    /// `[18]` TMZ.
    pub tmz: bool,
    #[bits(10)]
    __: u16,
    /// `[31:29]` log2 of the element size in bytes (0..=4).
    #[bits(3)]
    pub elementsize: u8,
}

const SUB_WIND_HEADER_RESERVED: u32 = reserved_mask!(SdmaSubWindHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, TMZ_OFFSET / TMZ_BITS,
    ELEMENTSIZE_OFFSET / ELEMENTSIZE_BITS);

impl SdmaSubWindHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = SUB_WIND_HEADER_RESERVED;
}

/// COPY_LINEAR_SUB_WIND dw3 / dw8 (the origin's x and y) and dw11 (the rectangle's width
/// and height, each stored minus one).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaSubWindXy {
    /// `[13:0]` x (elements).
    #[bits(14)]
    pub x: u16,
    #[bits(2)]
    __: u8,
    /// `[29:16]` y (rows).
    #[bits(14)]
    pub y: u16,
    #[bits(2)]
    __: u8,
}

const SUB_WIND_XY_RESERVED: u32 =
    reserved_mask!(SdmaSubWindXy: X_OFFSET / X_BITS, Y_OFFSET / Y_BITS);

/// COPY_LINEAR_SUB_WIND dw4 / dw9: the origin's z and the surface's row pitch.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaSubWindZPitch {
    /// `[10:0]` z (slices).
    #[bits(11)]
    pub z: u16,
    #[bits(2)]
    __: u8,
    /// `[31:13]` row pitch in elements, minus one.
    #[bits(19)]
    pub pitch: u32,
}

const SUB_WIND_ZPITCH_RESERVED: u32 =
    reserved_mask!(SdmaSubWindZPitch: Z_OFFSET / Z_BITS, PITCH_OFFSET / PITCH_BITS);

/// Mask of the slice-pitch dwords (dw5 / dw10): `[27:0]` slice pitch in elements, minus one.
const SUB_WIND_SLICE_PITCH_MASK: u32 = 0x0FFF_FFFF;

/// COPY_LINEAR_SUB_WIND dw12: the rectangle's depth, swaps and (SDMA 6) cache policies.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaSubWindRectZ {
    /// `[10:0]` depth in slices, minus one.
    #[bits(11)]
    pub rect_z: u16,
    #[bits(5)]
    __: u8,
    /// `[17:16]` destination swap.
    #[bits(2)]
    pub dst_sw: EndianSwap,
    /// `[20:18]` destination cache policy (SDMA 6).
    #[bits(3)]
    pub dst_cache_policy: u8,
    #[bits(3)]
    __: u8,
    /// `[25:24]` source swap.
    #[bits(2)]
    pub src_sw: EndianSwap,
    /// `[28:26]` source cache policy (SDMA 6).
    #[bits(3)]
    pub src_cache_policy: u8,
    #[bits(3)]
    __: u8,
}

const SUB_WIND_RECT_Z_RESERVED: u32 = reserved_mask!(SdmaSubWindRectZ:
    RECT_Z_OFFSET / RECT_Z_BITS, DST_SW_OFFSET / DST_SW_BITS,
    DST_CACHE_POLICY_OFFSET / DST_CACHE_POLICY_BITS, SRC_SW_OFFSET / SRC_SW_BITS,
    SRC_CACHE_POLICY_OFFSET / SRC_CACHE_POLICY_BITS);
const SUB_WIND_RECT_Z_SDMA6_ONLY: u32 = (0b111 << SdmaSubWindRectZ::DST_CACHE_POLICY_OFFSET)
    | (0b111 << SdmaSubWindRectZ::SRC_CACHE_POLICY_OFFSET);

// [`SdmaCopyLinearSubWind`]'s dwords: its row of the packet table (`sdma_packets!`).

/// One side of a sub-window copy: a pitched linear surface and the box's origin in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SubWindSurface {
    /// Base address (dword aligned).
    pub addr: u64,
    /// Origin x in elements (14 bits).
    pub x: u32,
    /// Origin y in rows (14 bits).
    pub y: u32,
    /// Origin z in slices (11 bits).
    pub z: u32,
    /// Row pitch in elements (1..=2^19).
    pub pitch: u32,
    /// Slice pitch in elements (1..=2^28).
    pub slice_pitch: u32,
}

fn check_range(
    packet: &'static str,
    field: &'static str,
    value: u32,
    min: u32,
    max: u32,
) -> Result<(), BuildError> {
    if value < min || value > max {
        return Err(BuildError::FieldOutOfRange {
            packet,
            field,
            value: value.into(),
            max: max.into(),
        });
    }
    Ok(())
}

impl SdmaCopyLinearSubWind {
    /// A copy of the `rect` box (`[width, height, depth]` in elements, rows, slices; each
    /// 1..=2^14, 1..=2^14, 1..=2^11) of `1 << elementsize`-byte elements
    /// (`elementsize` 0..=4) from `src` to `dst`.
    pub fn new(
        elementsize: u8,
        src: SubWindSurface,
        dst: SubWindSurface,
        rect: [u32; 3],
    ) -> Result<Self, BuildError> {
        const P: &str = SdmaCopyLinearSubWind::NAME;
        check_bits(P, "elementsize", elementsize.into(), 3)?;
        if elementsize > SUB_WIND_MAX_ELEMENTSIZE {
            return Err(BuildError::FieldOutOfRange {
                packet: P,
                field: "elementsize",
                value: elementsize.into(),
                max: SUB_WIND_MAX_ELEMENTSIZE.into(),
            });
        }
        let side = |s: SubWindSurface, names: [&'static str; 6]| -> Result<_, BuildError> {
            check_align(P, names[0], s.addr, 4)?;
            check_bits(P, names[1], s.x.into(), 14)?;
            check_bits(P, names[2], s.y.into(), 14)?;
            check_bits(P, names[3], s.z.into(), 11)?;
            check_range(P, names[4], s.pitch, 1, 1 << 19)?;
            check_range(P, names[5], s.slice_pitch, 1, 1 << 28)?;
            Ok((
                SdmaSubWindXy::new().with_x(s.x as u16).with_y(s.y as u16),
                SdmaSubWindZPitch::new()
                    .with_z(s.z as u16)
                    .with_pitch(s.pitch - 1),
                s.slice_pitch - 1,
            ))
        };
        let (src_xy, src_z_pitch, src_slice_pitch) = side(
            src,
            [
                "src",
                "src_x",
                "src_y",
                "src_z",
                "src_pitch",
                "src_slice_pitch",
            ],
        )?;
        let (dst_xy, dst_z_pitch, dst_slice_pitch) = side(
            dst,
            [
                "dst",
                "dst_x",
                "dst_y",
                "dst_z",
                "dst_pitch",
                "dst_slice_pitch",
            ],
        )?;
        check_range(P, "rect_x", rect[0], 1, 1 << 14)?;
        check_range(P, "rect_y", rect[1], 1, 1 << 14)?;
        check_range(P, "rect_z", rect[2], 1, 1 << 11)?;
        Ok(SdmaCopyLinearSubWind {
            header: SdmaSubWindHeader::new()
                .with_op(SdmaOpcode::COPY)
                .with_sub_op(SDMA_SUBOP_COPY_LINEAR_SUB_WIND)
                .with_elementsize(elementsize),
            src_lo: lo32(src.addr),
            src_hi: hi32(src.addr),
            src_xy,
            src_z_pitch,
            src_slice_pitch,
            dst_lo: lo32(dst.addr),
            dst_hi: hi32(dst.addr),
            dst_xy,
            dst_z_pitch,
            dst_slice_pitch,
            rect_xy: SdmaSubWindXy::new()
                .with_x((rect[0] - 1) as u16)
                .with_y((rect[1] - 1) as u16),
            rect_z: SdmaSubWindRectZ::new().with_rect_z((rect[2] - 1) as u16),
        })
    }

    /// Bytes per element (`1 << elementsize`).
    pub const fn element_bytes(&self) -> u64 {
        1 << self.header.elementsize()
    }

    /// The source surface (pitches in elements, minus-one encodings undone).
    pub const fn src(&self) -> SubWindSurface {
        SubWindSurface {
            addr: join(self.src_lo, self.src_hi),
            x: self.src_xy.x() as u32,
            y: self.src_xy.y() as u32,
            z: self.src_z_pitch.z() as u32,
            pitch: self.src_z_pitch.pitch() + 1,
            slice_pitch: (self.src_slice_pitch & SUB_WIND_SLICE_PITCH_MASK) + 1,
        }
    }

    /// The destination surface (pitches in elements, minus-one encodings undone).
    pub const fn dst(&self) -> SubWindSurface {
        SubWindSurface {
            addr: join(self.dst_lo, self.dst_hi),
            x: self.dst_xy.x() as u32,
            y: self.dst_xy.y() as u32,
            z: self.dst_z_pitch.z() as u32,
            pitch: self.dst_z_pitch.pitch() + 1,
            slice_pitch: (self.dst_slice_pitch & SUB_WIND_SLICE_PITCH_MASK) + 1,
        }
    }

    /// The box: `[width in elements, height in rows, depth in slices]`.
    pub const fn rect(&self) -> [u32; 3] {
        [
            self.rect_xy.x() as u32 + 1,
            self.rect_xy.y() as u32 + 1,
            self.rect_z.rect_z() as u32 + 1,
        ]
    }

    /// Bytes the copy moves (`width · height · depth · element_bytes`).
    pub const fn byte_count(&self) -> u64 {
        let [x, y, z] = self.rect();
        (x as u64) * (y as u64) * (z as u64) * self.element_bytes()
    }

    /// Checks reserved bits and field values as the decoder for `gen` does.
    pub fn validate(&self, gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        const P: &str = SdmaCopyLinearSubWind::NAME;
        check_reserved(P, 0, self.header.into_bits(), SUB_WIND_HEADER_RESERVED)?;
        if self.header.elementsize() > SUB_WIND_MAX_ELEMENTSIZE {
            return Err(invalid_field(
                P,
                0,
                "elementsize",
                self.header.elementsize().into(),
            ));
        }
        check_reserved(P, 1, self.src_lo, 0b11)?;
        check_reserved(P, 3, self.src_xy.into_bits(), SUB_WIND_XY_RESERVED)?;
        check_reserved(P, 4, self.src_z_pitch.into_bits(), SUB_WIND_ZPITCH_RESERVED)?;
        check_reserved(P, 5, self.src_slice_pitch, !SUB_WIND_SLICE_PITCH_MASK)?;
        check_reserved(P, 6, self.dst_lo, 0b11)?;
        check_reserved(P, 8, self.dst_xy.into_bits(), SUB_WIND_XY_RESERVED)?;
        check_reserved(P, 9, self.dst_z_pitch.into_bits(), SUB_WIND_ZPITCH_RESERVED)?;
        check_reserved(P, 10, self.dst_slice_pitch, !SUB_WIND_SLICE_PITCH_MASK)?;
        check_reserved(P, 11, self.rect_xy.into_bits(), SUB_WIND_XY_RESERVED)?;
        let mut reserved = SUB_WIND_RECT_Z_RESERVED;
        if gen.major() != 6 {
            reserved |= SUB_WIND_RECT_Z_SDMA6_ONLY;
        }
        check_reserved(P, 12, self.rect_z.into_bits(), reserved)
    }
}

// ---------------------------------------------------------------------------------------
// WRITE (linear)
// ---------------------------------------------------------------------------------------

/// WRITE dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaWriteHeader {
    /// `[7:0]` opcode (WRITE).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (LINEAR = 0).
    pub sub_op: u8,
    #[bits(2)]
    __: u8,
    /// `[18]` TMZ.
    pub tmz: bool,
    #[bits(13)]
    __: u16,
}

const WRITE_HEADER_RESERVED: u32 = reserved_mask!(SdmaWriteHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, TMZ_OFFSET / TMZ_BITS);

impl SdmaWriteHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = WRITE_HEADER_RESERVED;
}

/// WRITE dw3.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaWriteCount {
    /// `[19:0]` data dwords − 1.
    #[bits(20)]
    pub count: u32,
    #[bits(4)]
    __: u8,
    /// `[25:24]` swap.
    #[bits(2)]
    pub sw: EndianSwap,
    #[bits(6)]
    __: u8,
}

const WRITE_COUNT_RESERVED: u32 =
    reserved_mask!(SdmaWriteCount: COUNT_OFFSET / COUNT_BITS, SW_OFFSET / SW_BITS);

zc_packet! {
    /// The fixed part of WRITE_LINEAR (dw0–dw3).
    pub struct SdmaWriteHead {
        /// dw0.
        pub header: SdmaWriteHeader,
        /// dw1: destination bits 31:0 (dword aligned).
        pub dst_lo: u32,
        /// dw2: destination bits 63:32.
        pub dst_hi: u32,
        /// dw3: data dwords − 1, swap.
        pub count: SdmaWriteCount,
    }
}

/// Most data dwords one WRITE_LINEAR carries (20-bit `count`).
pub const SDMA_WRITE_MAX_DWORDS: usize = 1 << 20;

/// WRITE_LINEAR (op 2, sub-op 0): 4 + N dwords writing N data dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdmaWrite<'a> {
    /// dw0–dw3.
    pub head: SdmaWriteHead,
    /// The N data dwords.
    pub data: &'a [u32],
}

impl<'a> SdmaWrite<'a> {
    /// A write of `data` (1..=[`SDMA_WRITE_MAX_DWORDS`] dwords) to `dst` (4-byte aligned).
    pub fn new(dst: u64, data: &'a [u32]) -> Result<Self, BuildError> {
        const P: &str = SdmaWrite::NAME;
        check_align(P, "dst", dst, 4)?;
        if data.is_empty() || data.len() > SDMA_WRITE_MAX_DWORDS {
            return Err(BuildError::Length {
                packet: P,
                dwords: 4 + data.len(),
                min: 5,
                max: 4 + SDMA_WRITE_MAX_DWORDS,
            });
        }
        Ok(SdmaWrite {
            head: SdmaWriteHead {
                header: SdmaWriteHeader::new().with_op(SdmaOpcode::WRITE),
                dst_lo: lo32(dst),
                dst_hi: hi32(dst),
                count: SdmaWriteCount::new().with_count(data.len() as u32 - 1),
            },
            data,
        })
    }

    /// Destination address.
    pub const fn dst(&self) -> u64 {
        join(self.head.dst_lo, self.head.dst_hi)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        const P: &str = SdmaWrite::NAME;
        check_reserved(P, 0, self.head.header.into_bits(), WRITE_HEADER_RESERVED)?;
        check_reserved(P, 1, self.head.dst_lo, 0b11)?;
        check_reserved(P, 3, self.head.count.into_bits(), WRITE_COUNT_RESERVED)?;
        if self.head.count.count() as usize + 1 != self.data.len() {
            return Err(invalid_field(P, 3, "count", self.head.count.count()));
        }
        Ok(())
    }
}

impl Encode for SdmaWrite<'_> {
    fn dwords(&self) -> usize {
        4 + self.data.len()
    }
    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
        let n = self.dwords();
        let dst = space(out, n)?;
        let (head, body) = dst.split_at_mut(4);
        head.as_mut_bytes().copy_from_slice(self.head.as_bytes());
        body.copy_from_slice(self.data);
        Ok(n)
    }
}

// ---------------------------------------------------------------------------------------
// FENCE, TRAP
// ---------------------------------------------------------------------------------------

/// FENCE dw0 (the cache bits exist on SDMA 5+).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaFenceHeader {
    /// `[7:0]` opcode (FENCE).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (0).
    pub sub_op: u8,
    /// `[18:16]` memory type (SDMA 5+).
    #[bits(3)]
    pub mtype: u8,
    /// `[19]` GCC (SDMA 5+).
    pub gcc: bool,
    /// `[20]` system (SDMA 5+).
    pub sys: bool,
    #[bits(1)]
    __: u8,
    /// `[22]` snoop (SDMA 5+).
    pub snp: bool,
    /// `[23]` GPA (SDMA 5+).
    pub gpa: bool,
    /// `[25:24]` L2 policy (SDMA 5+).
    #[bits(2)]
    pub l2_policy: u8,
    #[bits(6)]
    __: u8,
}

const FENCE_HEADER_RESERVED: u32 = reserved_mask!(SdmaFenceHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, MTYPE_OFFSET / MTYPE_BITS, GCC_OFFSET / GCC_BITS,
    SYS_OFFSET / SYS_BITS, SNP_OFFSET / SNP_BITS, GPA_OFFSET / GPA_BITS, L2_POLICY_OFFSET / L2_POLICY_BITS);

impl SdmaFenceHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = FENCE_HEADER_RESERVED;
}
const FENCE_SDMA5_ONLY: u32 = 0x03FF_0000;

// [`SdmaFence`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaFence {
    /// A fence writing `data` to `addr` (4-byte aligned).
    pub fn new(addr: u64, data: u32) -> Result<Self, BuildError> {
        check_align(Self::NAME, "addr", addr, 4)?;
        Ok(SdmaFence {
            header: SdmaFenceHeader::new().with_op(SdmaOpcode::FENCE),
            addr_lo: lo32(addr),
            addr_hi: hi32(addr),
            data,
        })
    }

    /// The address.
    pub const fn addr(&self) -> u64 {
        join(self.addr_lo, self.addr_hi)
    }

    /// Checks reserved bits as the decoder for `gen` does.
    pub fn validate(&self, gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        let mut reserved = FENCE_HEADER_RESERVED;
        if gen.major() == 4 {
            reserved |= FENCE_SDMA5_ONLY;
        }
        check_reserved(Self::NAME, 0, self.header.into_bits(), reserved)?;
        check_reserved(Self::NAME, 1, self.addr_lo, 0b11)
    }
}

/// TRAP dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaTrapContext {
    /// `[27:0]` interrupt context (→ IH `context_id0`; KFD uses 28 bits as event id).
    #[bits(28)]
    pub int_context: u32,
    #[bits(4)]
    __: u8,
}

// [`SdmaTrap`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaTrap {
    /// A trap with `int_context` (28 bits).
    pub fn new(int_context: u32) -> Result<Self, BuildError> {
        check_bits(Self::NAME, "int_context", int_context.into(), 28)?;
        Ok(SdmaTrap {
            header: SdmaHeader::of(SdmaOpcode::TRAP, 0),
            context: SdmaTrapContext::new().with_int_context(int_context),
        })
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(Self::NAME, 0, self.header.into_bits(), 0xFFFF_0000)?;
        check_reserved(Self::NAME, 1, self.context.into_bits(), 0xF000_0000)
    }
}

// ---------------------------------------------------------------------------------------
// POLL_REGMEM
// ---------------------------------------------------------------------------------------

/// POLL_REGMEM dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaPollHeader {
    /// `[7:0]` opcode (POLL_REGMEM).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (0 = poll).
    pub sub_op: u8,
    #[bits(10)]
    __: u16,
    /// `[26]` HDP flush.
    pub hdp_flush: bool,
    #[bits(1)]
    __: u8,
    /// `[30:28]` comparison.
    #[bits(3)]
    pub func: CompareFunction,
    /// `[31]` 1 = memory, 0 = register.
    pub mem_poll: bool,
}

const POLL_HEADER_RESERVED: u32 = reserved_mask!(SdmaPollHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, HDP_FLUSH_OFFSET / HDP_FLUSH_BITS,
    FUNC_OFFSET / FUNC_BITS, MEM_POLL_OFFSET / MEM_POLL_BITS);

impl SdmaPollHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = POLL_HEADER_RESERVED;
}

/// POLL_REGMEM dw5.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaPollInterval {
    /// `[15:0]` poll interval.
    pub interval: u16,
    /// `[27:16]` retry count (`0xFFF` = infinite).
    #[bits(12)]
    pub retry_count: u16,
    #[bits(4)]
    __: u8,
}

// [`SdmaPollRegmem`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaPollRegmem {
    /// A poll of memory at `addr` (4-byte aligned) until `(value & mask) func reference`.
    pub fn memory(
        addr: u64,
        func: CompareFunction,
        reference: u32,
        mask: u32,
        interval: u16,
        retry_count: u16,
    ) -> Result<Self, BuildError> {
        check_align(Self::NAME, "addr", addr, 4)?;
        check_bits(Self::NAME, "retry_count", retry_count.into(), 12)?;
        Ok(SdmaPollRegmem {
            header: SdmaPollHeader::new()
                .with_op(SdmaOpcode::POLL_REGMEM)
                .with_func_checked(func)
                .map_err(|_| enum_overflow(Self::NAME, "func", func.into_bits()))?
                .with_mem_poll(true),
            addr_lo: lo32(addr),
            addr_hi: hi32(addr),
            reference,
            mask,
            interval: SdmaPollInterval::new()
                .with_interval(interval)
                .with_retry_count(retry_count),
        })
    }

    /// The address (memory) or register byte offset.
    pub const fn addr(&self) -> u64 {
        join(self.addr_lo, self.addr_hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(Self::NAME, 0, self.header.into_bits(), POLL_HEADER_RESERVED)?;
        check_enum(Self::NAME, 0, "func", self.header.func())?;
        check_reserved(Self::NAME, 1, self.addr_lo, 0b11)?;
        check_reserved(Self::NAME, 5, self.interval.into_bits(), 0xF000_0000)
    }
}

// ---------------------------------------------------------------------------------------
// CONSTANT_FILL
// ---------------------------------------------------------------------------------------

/// CONSTANT_FILL dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaFillHeader {
    /// `[7:0]` opcode (CONST_FILL).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (0).
    pub sub_op: u8,
    /// `[17:16]` swap.
    #[bits(2)]
    pub sw: EndianSwap,
    #[bits(12)]
    __: u16,
    /// `[31:30]` fill unit.
    #[bits(2)]
    pub fillsize: FillSize,
}

const FILL_HEADER_RESERVED: u32 = reserved_mask!(SdmaFillHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, SW_OFFSET / SW_BITS, FILLSIZE_OFFSET / FILLSIZE_BITS);

impl SdmaFillHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = FILL_HEADER_RESERVED;
}

// [`SdmaConstantFill`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaConstantFill {
    /// A dword fill of `bytes` at `dst` (4-byte aligned) with `data`.
    pub fn new(gen: SdmaGen, dst: u64, data: u32, bytes: u64) -> Result<Self, BuildError> {
        check_align(Self::NAME, "dst", dst, 4)?;
        Ok(SdmaConstantFill {
            header: SdmaFillHeader::new()
                .with_op(SdmaOpcode::CONST_FILL)
                .with_fillsize(FillSize::Dword),
            dst_lo: lo32(dst),
            dst_hi: hi32(dst),
            data,
            count: check_bytes(Self::NAME, fill_count_bits(gen), bytes)?,
        })
    }

    /// Destination address.
    pub const fn dst(&self) -> u64 {
        join(self.dst_lo, self.dst_hi)
    }

    /// Bytes filled (`count + 1`).
    pub const fn byte_count(&self) -> u64 {
        self.count as u64 + 1
    }

    /// Checks reserved bits and field values as the decoder for `gen` does.
    pub fn validate(&self, gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(Self::NAME, 0, self.header.into_bits(), FILL_HEADER_RESERVED)?;
        check_enum(Self::NAME, 0, "fillsize", self.header.fillsize())?;
        check_count(Self::NAME, 4, fill_count_bits(gen), self.count)
    }
}

// ---------------------------------------------------------------------------------------
// TIMESTAMP
// ---------------------------------------------------------------------------------------

/// TIMESTAMP dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaTimestampHeader {
    /// `[7:0]` opcode (TIMESTAMP).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` which timestamp operation.
    #[bits(8)]
    pub sub_op: TimestampOp,
    #[bits(16)]
    __: u16,
}

// [`SdmaTimestamp`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaTimestamp {
    /// A GET or GET_GLOBAL writing the timestamp to `addr` (8-byte aligned), or a SET
    /// of the counter to `addr_or_value`.
    pub fn new(op: TimestampOp, addr_or_value: u64) -> Result<Self, BuildError> {
        if op != TimestampOp::Set {
            check_align(Self::NAME, "addr", addr_or_value, 8)?;
        }
        Ok(SdmaTimestamp {
            header: SdmaTimestampHeader::new()
                .with_op(SdmaOpcode::TIMESTAMP)
                .with_sub_op(op),
            lo: lo32(addr_or_value),
            hi: hi32(addr_or_value),
        })
    }

    /// The address (GET) or value (SET).
    pub const fn operand(&self) -> u64 {
        join(self.lo, self.hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(Self::NAME, 0, self.header.into_bits(), 0xFFFF_0000)?;
        check_enum(Self::NAME, 0, "sub_op", self.header.sub_op())?;
        if self.header.sub_op() != TimestampOp::Set {
            check_reserved(Self::NAME, 1, self.lo, 0b111)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// INDIRECT
// ---------------------------------------------------------------------------------------

/// INDIRECT dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaIndirectHeader {
    /// `[7:0]` opcode (INDIRECT).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (0).
    pub sub_op: u8,
    /// `[19:16]` VMID.
    #[bits(4)]
    pub vmid: u8,
    #[bits(11)]
    __: u16,
    /// `[31]` privileged.
    pub privileged: bool,
}

const INDIRECT_HEADER_RESERVED: u32 = reserved_mask!(SdmaIndirectHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, VMID_OFFSET / VMID_BITS, PRIVILEGED_OFFSET / PRIVILEGED_BITS);

impl SdmaIndirectHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = INDIRECT_HEADER_RESERVED;
}

// [`SdmaIndirect`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaIndirect {
    /// An IB of `size_dwords` (20 bits) at `base` (32-byte aligned) run with `vmid`.
    pub fn new(base: u64, size_dwords: u32, vmid: u8, csa: u64) -> Result<Self, BuildError> {
        check_align(Self::NAME, "base", base, 32)?;
        check_bits(Self::NAME, "ib_size", size_dwords.into(), 20)?;
        check_bits(Self::NAME, "vmid", vmid.into(), 4)?;
        Ok(SdmaIndirect {
            header: SdmaIndirectHeader::new()
                .with_op(SdmaOpcode::INDIRECT)
                .with_vmid(vmid),
            base_lo: lo32(base),
            base_hi: hi32(base),
            ib_size: size_dwords,
            csa_lo: lo32(csa),
            csa_hi: hi32(csa),
        })
    }

    /// IB address.
    pub const fn base(&self) -> u64 {
        join(self.base_lo, self.base_hi)
    }

    /// Context-save area.
    pub const fn csa(&self) -> u64 {
        join(self.csa_lo, self.csa_hi)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(
            Self::NAME,
            0,
            self.header.into_bits(),
            INDIRECT_HEADER_RESERVED,
        )?;
        check_reserved(Self::NAME, 1, self.base_lo, 0x1F)?;
        check_reserved(Self::NAME, 3, self.ib_size, 0xFFF0_0000)
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
