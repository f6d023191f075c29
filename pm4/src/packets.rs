//! The PM4 packet table: every type-3 opcode is declared here once, and the opcode
//! constants ([`Opcode::NOP`], …), [`Opcode::name`], the [`Packet`] enum with its
//! [`Packet::name`], [`Packet::opcode`], [`Encode`] and `Display`, and the decoder's
//! dispatch are all generated from it.
//!
//! A row is `NAME = opcode` for an opcode the crate knows but does not decode, or
//! `NAME = opcode => { Variant(Type) [in [Gfx..]], … }` for one it decodes: each variant is
//! one layout, optionally limited to some generations. When several layouts apply to a
//! generation (MAP_PROCESS, EVENT_WRITE) the packet length chooses. A layout type
//! implements [`Pm4Body`] (fixed-size packets get it from `fixed_packet!`) and `Display`.
//!
//! Adding a packet: its layout type (with `fixed_packet!` and `Display`), one row here, and
//! an arm in each executor that matches on [`Packet`] (the compiler lists them: the
//! matches are exhaustive).
//!
//! ```
//! use pm4::header::Opcode;
//! use pm4::packets::Pm4Body;
//! use pm4::user::ReleaseMemGfx9;
//! assert_eq!(Opcode::RELEASE_MEM, Opcode(0x49));
//! assert_eq!(Opcode(0x49).name(), Some("RELEASE_MEM"));
//! assert_eq!(<ReleaseMemGfx9 as Pm4Body>::MIN_DWORDS, 8);
//! ```

use core::fmt;

use crate::decode::DecodeErrorKind;
use crate::header::{Opcode, Type3Header, MAX_PACKET_DWORDS, TYPE2_FILLER};
use crate::hws::*;
use crate::user::*;
use crate::writer::{space, Encode};
use crate::GfxGen;

/// A PM4 packet layout the decoder builds from a packet's dwords.
pub trait Pm4Body<'a>: Sized + Encode + fmt::Display {
    /// Fewest dwords a packet of this layout has (header included).
    const MIN_DWORDS: usize;
    /// Most dwords a packet of this layout has (header included).
    const MAX_DWORDS: usize;

    /// Builds and validates the packet from its dwords `words` (header included; `header`
    /// is `words[0]`), with the rules of `gen`. Never panics.
    fn decode_body(
        header: Type3Header,
        words: &'a [u32],
        gen: GfxGen,
    ) -> Result<Self, DecodeErrorKind>;
}

/// Whether a table variant applies to `gen` (all generations when the row names none).
macro_rules! for_gen {
    ($gen:ident;) => {
        true
    };
    ($gen:ident; $($g:ident),+) => {
        matches!($gen, $(GfxGen::$g)|+)
    };
}

/// The decoder arm of one table row: a row with one layout for every generation calls it
/// directly (it checks the length itself); otherwise the generation and then the length
/// choose among the layouts.
macro_rules! decode_row {
    ($op:ident, $opcode:ident, $header:ident, $words:ident, $gen:ident; $variant:ident ( $ty:ty )) => {
        match <$ty as Pm4Body>::decode_body($header, $words, $gen) {
            Ok(p) => Ok(Packet::$variant(p)),
            Err(e) => Err(e),
        }
    };
    ($op:ident, $opcode:ident, $header:ident, $words:ident, $gen:ident;
        $( $variant:ident ( $ty:ty ) $( in [ $($g:ident),+ ] )? ),+) => {{
        let total = $words.len();
        $(
            if for_gen!($gen; $( $($g),+ )?)
                && (<$ty as Pm4Body>::MIN_DWORDS..=<$ty as Pm4Body>::MAX_DWORDS).contains(&total)
            {
                return match <$ty as Pm4Body>::decode_body($header, $words, $gen) {
                    Ok(p) => Ok(Packet::$variant(p)),
                    Err(e) => Err(e),
                };
            }
        )+
        // No layout has this length. With one layout for this generation, it reports the
        // error itself; with several, the error gives the range they cover.
        let layouts = 0 $( + for_gen!($gen; $( $($g),+ )?) as usize )+;
        if layouts == 1 {
            $(
                if for_gen!($gen; $( $($g),+ )?) {
                    return match <$ty as Pm4Body>::decode_body($header, $words, $gen) {
                        Ok(p) => Ok(Packet::$variant(p)),
                        Err(e) => Err(e),
                    };
                }
            )+
        }
        let (mut min, mut max) = (usize::MAX, 0);
        $(
            if for_gen!($gen; $( $($g),+ )?) {
                min = min.min(<$ty as Pm4Body>::MIN_DWORDS);
                max = max.max(<$ty as Pm4Body>::MAX_DWORDS);
            }
        )+
        if layouts == 0 {
            return Err(DecodeErrorKind::UnsupportedOpcode { opcode: $opcode, dwords: total });
        }
        Err(DecodeErrorKind::WrongLength {
            packet: stringify!($op),
            dwords: total,
            min,
            max,
        })
    }};
}

macro_rules! pm4_packets {
    ($(
        $(#[$m:meta])*
        $op:ident = $code:literal
        $( => { $( $variant:ident ( $ty:ty ) $( in [ $($g:ident),+ ] )? ),+ $(,)? } )? ,
    )+) => {
        crate::header::opcodes! { $( $(#[$m])* $op = $code, )+ }

        /// A typed PM4 packet: one variant per layout of the [packet table](crate::packets).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[allow(missing_docs)] // each variant is the packet type of the same name
        pub enum Packet<'a> {
            /// The type-2 filler `0x80000000`.
            Type2Filler,
            $( $( $( $variant($ty), )+ )? )+
        }

        impl Packet<'_> {
            /// The opcode name (`"TYPE2"` for the filler).
            pub fn name(&self) -> &'static str {
                match self {
                    Packet::Type2Filler => "TYPE2",
                    $( $( $( Packet::$variant(_) => stringify!($op), )+ )? )+
                }
            }

            /// The opcode (`None` for the type-2 filler).
            pub fn opcode(&self) -> Option<Opcode> {
                match self {
                    Packet::Type2Filler => None,
                    $( $( $( Packet::$variant(_) => Some(Opcode::$op), )+ )? )+
                }
            }
        }

        impl Encode for Packet<'_> {
            fn dwords(&self) -> usize {
                match self {
                    Packet::Type2Filler => 1,
                    $( $( $( Packet::$variant(p) => p.dwords(), )+ )? )+
                }
            }

            fn encode_into(&self, out: &mut [u32]) -> Result<usize, crate::error::WriteError> {
                match self {
                    Packet::Type2Filler => space(out, 1).map(|d| {
                        d[0] = TYPE2_FILLER;
                        1
                    }),
                    $( $( $( Packet::$variant(p) => p.encode_into(out), )+ )? )+
                }
            }
        }

        impl fmt::Display for Packet<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    Packet::Type2Filler => f.write_str("TYPE2 (filler)"),
                    $( $( $( Packet::$variant(p) => p.fmt(f), )+ )? )+
                }
            }
        }

        /// Decodes a type-3 packet whose dwords `words` are all present (header checked).
        #[inline(always)]
        pub(crate) fn decode_type3<'a>(
            opcode: Opcode,
            header: Type3Header,
            words: &'a [u32],
            gen: GfxGen,
        ) -> Result<Packet<'a>, DecodeErrorKind> {
            let total = words.len();
            match opcode {
                $( $(
                    Opcode::$op => decode_row!(
                        $op, opcode, header, words, gen;
                        $( $variant($ty) $( in [ $($g),+ ] )? ),+
                    ),
                )? )+
                other if other.name().is_some() => Err(DecodeErrorKind::UnsupportedOpcode {
                    opcode: other,
                    dwords: total,
                }),
                other => Err(DecodeErrorKind::UnknownOpcode {
                    opcode: other,
                    dwords: total,
                }),
            }
        }
    };
}

pm4_packets! {
    /// Ring padding.
    NOP = 0x10 => { Nop(Nop<'a>) },
    /// Compute dispatch with explicit dimensions.
    DISPATCH_DIRECT = 0x15 => { DispatchDirect(DispatchDirect) },
    /// Compute dispatch with dimensions in memory.
    DISPATCH_INDIRECT = 0x16,
    /// Atomic memory operation.
    ATOMIC_MEM = 0x1E,
    /// Conditional execution.
    COND_EXEC = 0x22,
    /// Predicated execution (multi-XCC).
    PRED_EXEC = 0x23,
    /// Write immediate data to memory or registers.
    WRITE_DATA = 0x37 => { WriteData(WriteData<'a>) },
    /// Wait for a register or memory condition.
    WAIT_REG_MEM = 0x3C => { WaitRegMem(WaitRegMem) },
    /// Execute an indirect buffer.
    INDIRECT_BUFFER = 0x3F => { IndirectBuffer(IndirectBuffer) },
    /// Copy data between registers, memory and counters.
    COPY_DATA = 0x40 => { CopyData(CopyData) },
    /// PFP/ME synchronisation (gfx ring).
    PFP_SYNC_ME = 0x42,
    /// Conditional write.
    COND_WRITE = 0x45,
    /// Pipeline event.
    EVENT_WRITE = 0x46 => { EventWrite(EventWrite), EventWriteAddr(EventWriteAddr) },
    /// End-of-pipe event (pre-gfx9).
    EVENT_WRITE_EOP = 0x47,
    /// End-of-shader event.
    EVENT_WRITE_EOS = 0x48,
    /// End-of-pipe release: cache actions, memory write, interrupt.
    RELEASE_MEM = 0x49 => {
        ReleaseMemGfx9(ReleaseMemGfx9) in [Gfx9],
        ReleaseMemGfx10(ReleaseMemGfx10) in [Gfx10, Gfx11],
    },
    /// CP DMA.
    DMA_DATA = 0x50 => { DmaData(DmaData) },
    /// Cache acquire (invalidate/write back).
    ACQUIRE_MEM = 0x58 => {
        AcquireMemGfx9(AcquireMemGfx9) in [Gfx9],
        AcquireMemGfx10(AcquireMemGfx10) in [Gfx10, Gfx11],
    },
    /// Indirect buffer with PASID (gfx10+).
    INDIRECT_BUFFER_PASID = 0x5C,
    /// Set config registers.
    SET_CONFIG_REG = 0x68,
    /// Set context (graphics state) registers.
    SET_CONTEXT_REG = 0x69 => { SetContextReg(SetContextReg<'a>) },
    /// Set SH (shader) registers.
    SET_SH_REG = 0x76 => { SetShReg(SetShReg<'a>) },
    /// Set user-config registers.
    SET_UCONFIG_REG = 0x79,
    /// 64-bit WAIT_REG_MEM (gfx10+).
    WAIT_REG_MEM64 = 0x93 => { WaitRegMem64(WaitRegMem64) },
    /// HWS: give resources to the scheduler.
    SET_RESOURCES = 0xA0 => { SetResources(SetResources) },
    /// HWS: describe a process of the runlist.
    MAP_PROCESS = 0xA1 => { MapProcess(MapProcess), MapProcessAldebaran(MapProcessAldebaran) },
    /// HWS: map a queue.
    MAP_QUEUES = 0xA2 => { MapQueues(MapQueues) },
    /// HWS: unmap (preempt/reset) queues.
    UNMAP_QUEUES = 0xA3 => { UnmapQueues(UnmapQueues) },
    /// HWS: fence/interrupt query.
    QUERY_STATUS = 0xA4 => { QueryStatus(QueryStatus) },
    /// HWS: run (or chain) a runlist IB.
    RUN_LIST = 0xA5 => { RunList(RunList) },
}

// The variable-length layouts (the fixed ones get `Pm4Body` from `fixed_packet!`).

impl<'a> Pm4Body<'a> for Nop<'a> {
    // The one-dword NOP is 1 dword; any other NOP is a header and `count + 1` dwords.
    const MIN_DWORDS: usize = 1;
    const MAX_DWORDS: usize = MAX_PACKET_DWORDS;

    #[inline(always)]
    fn decode_body(
        header: Type3Header,
        words: &'a [u32],
        _: GfxGen,
    ) -> Result<Self, DecodeErrorKind> {
        Ok(Nop {
            header,
            payload: words.get(1..).unwrap_or_default(),
        })
    }
}
