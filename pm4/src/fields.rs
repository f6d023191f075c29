//! Field enums shared by several packets, and the machinery every field enum is built with.
//!
//! Every selector the hardware defines is a Rust enum. Each enum has one catch-all variant
//! so that any bit pattern read from memory can be represented (bitfield getters must be
//! total):
//!
//! * `Reserved(raw)` on *closed* enums — the facts list every legal value, and the decoder
//!   rejects the packet with [`DecodeErrorKind::InvalidField`](crate::decode::DecodeErrorKind);
//! * `Other(raw)` on *open* enums (for example VGT event types, of which only the ones the
//!   driver and user queues use are named) — the decoder accepts any value and the
//!   disassembler prints it in hex.
//!
//! Every enum has `from_bits`/`into_bits` (as `bitfield-struct` needs), `name()`,
//! `is_valid()`, `ALL` (the named variants) and a `Display` giving the umr-like name.

use core::fmt;

/// Behaviour every field enum shares; used by validation and tests.
pub trait FieldEnum: Copy + fmt::Debug + fmt::Display + PartialEq + 'static {
    /// Width of the field in bits.
    const BITS: u32;
    /// The named variants, in value order.
    const ALL: &'static [Self];
    /// The raw value of the field.
    fn raw(self) -> u32;
    /// Whether the decoder accepts this value (always true for open enums).
    fn is_valid(self) -> bool;
    /// The umr-like name, or `None` for a catch-all value.
    fn name(self) -> Option<&'static str>;
}

macro_rules! hw_enum {
    (@valid Reserved) => { false };
    (@valid Other) => { true };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $bits:literal bits, catch-all $catch:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal => $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value without a name here (see the module docs of `pm4::fields` for
            /// whether the decoder accepts it).
            $catch(u8),
        }

        impl $name {
            /// Converts raw field bits (as read by a bitfield getter).
            pub const fn from_bits(raw: u32) -> Self {
                match raw {
                    $( $value => Self::$variant, )+
                    other => Self::$catch(other as u8),
                }
            }

            /// The raw field bits.
            pub const fn into_bits(self) -> u32 {
                match self {
                    $( Self::$variant => $value, )+
                    Self::$catch(raw) => raw as u32,
                }
            }
        }

        impl $crate::fields::FieldEnum for $name {
            const BITS: u32 = $bits;
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            fn raw(self) -> u32 {
                self.into_bits()
            }
            fn is_valid(self) -> bool {
                match self {
                    Self::$catch(_) => hw_enum!(@valid $catch),
                    _ => true,
                }
            }
            fn name(self) -> Option<&'static str> {
                match self {
                    $( Self::$variant => Some($text), )+
                    Self::$catch(_) => None,
                }
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match $crate::fields::FieldEnum::name(*self) {
                    Some(text) => f.write_str(text),
                    None => write!(f, "{:#x}", self.into_bits()),
                }
            }
        }
    };
}
pub(crate) use hw_enum;

/// The mask of bits that no named field of a `bitfield-struct` dword covers, from the
/// generated `*_OFFSET`/`*_BITS` constants given in pairs. A field forgotten here shows up
/// as a "reserved bits set" decode error in the round-trip property tests.
macro_rules! reserved_mask {
    ($ty:ty : $($off:ident / $bits:ident),* $(,)?) => {
        !(0u32 $( | $crate::fields::field_mask(<$ty>::$off, <$ty>::$bits) )*)
    };
}
pub(crate) use reserved_mask;

/// The mask of a field `bits` wide starting at bit `offset`.
pub(crate) const fn field_mask(offset: usize, bits: usize) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        ((1u32 << bits) - 1) << offset
    }
}

hw_enum! {
    /// Cache policy of a memory access (`cache_policy` fields of WRITE_DATA, RELEASE_MEM,
    /// COPY_DATA, DMA_DATA, INDIRECT_BUFFER).
    pub enum CachePolicy: 2 bits, catch-all Reserved {
        /// Least recently used (the default).
        Lru = 0 => "LRU",
        /// Streaming.
        Stream = 1 => "STREAM",
        /// No allocate.
        Noa = 2 => "NOA",
        /// Bypass the cache.
        Bypass = 3 => "BYPASS",
    }
}

hw_enum! {
    /// VGT event type (`event_type` of RELEASE_MEM and EVENT_WRITE). Open: the hardware has
    /// 64 event types; the ones the driver and user queues use are named.
    pub enum EventType: 6 bits, catch-all Other {
        /// Cache flush with timestamp.
        CacheFlushTs = 0x04 => "CACHE_FLUSH_TS",
        /// Cache flush.
        CacheFlush = 0x06 => "CACHE_FLUSH",
        /// Compute-shader partial flush.
        CsPartialFlush = 0x07 => "CS_PARTIAL_FLUSH",
        /// Cache flush and invalidate with timestamp (the usual fence event).
        CacheFlushAndInvTsEvent = 0x14 => "CACHE_FLUSH_AND_INV_TS_EVENT",
        /// Cache flush and invalidate.
        CacheFlushAndInvEvent = 0x16 => "CACHE_FLUSH_AND_INV_EVENT",
        /// Start performance counters.
        PerfcounterStart = 0x17 => "PERFCOUNTER_START",
        /// Stop performance counters.
        PerfcounterStop = 0x18 => "PERFCOUNTER_STOP",
        /// Sample performance counters.
        PerfcounterSample = 0x1B => "PERFCOUNTER_SAMPLE",
        /// Bottom of pipe timestamp.
        BottomOfPipeTs = 0x28 => "BOTTOM_OF_PIPE_TS",
        /// Compute shaders done.
        CsDone = 0x2F => "CS_DONE",
        /// Thread trace start.
        ThreadTraceStart = 0x33 => "THREAD_TRACE_START",
        /// Thread trace stop.
        ThreadTraceStop = 0x34 => "THREAD_TRACE_STOP",
        /// Thread trace marker.
        ThreadTraceMarker = 0x35 => "THREAD_TRACE_MARKER",
        /// Thread trace flush.
        ThreadTraceFlush = 0x36 => "THREAD_TRACE_FLUSH",
        /// Thread trace finish.
        ThreadTraceFinish = 0x37 => "THREAD_TRACE_FINISH",
    }
}

hw_enum! {
    /// Comparison of WAIT_REG_MEM and SDMA POLL_REGMEM: `(value & mask) <op> reference`.
    pub enum CompareFunction: 3 bits, catch-all Reserved {
        /// Always true.
        Always = 0 => "ALWAYS",
        /// `<`.
        Less = 1 => "LT",
        /// `<=`.
        LessEqual = 2 => "LE",
        /// `==`.
        Equal = 3 => "EQ",
        /// `!=`.
        NotEqual = 4 => "NE",
        /// `>=`.
        GreaterEqual = 5 => "GE",
        /// `>`.
        Greater = 6 => "GT",
    }
}

impl CompareFunction {
    /// Evaluates the comparison the way the CP/SDMA firmware does.
    pub const fn compare(self, masked_value: u64, reference: u64) -> bool {
        match self {
            Self::Always => true,
            Self::Less => masked_value < reference,
            Self::LessEqual => masked_value <= reference,
            Self::Equal => masked_value == reference,
            Self::NotEqual => masked_value != reference,
            Self::GreaterEqual => masked_value >= reference,
            Self::Greater => masked_value > reference,
            Self::Reserved(_) => false,
        }
    }
}

hw_enum! {
    /// The micro engine a graphics-ring packet runs on (`engine_sel`); always `Me` on MEC.
    pub enum EngineSel: 2 bits, catch-all Reserved {
        /// Micro engine.
        Me = 0 => "ME",
        /// Pre-fetch parser.
        Pfp = 1 => "PFP",
        /// Constant engine.
        Ce = 2 => "CE",
    }
}

/// Joins two dwords into a 64-bit value.
pub(crate) const fn join(lo: u32, hi: u32) -> u64 {
    (lo as u64) | ((hi as u64) << 32)
}

/// Low 32 bits.
pub(crate) const fn lo32(v: u64) -> u32 {
    v as u32
}

/// High 32 bits.
pub(crate) const fn hi32(v: u64) -> u32 {
    (v >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_every_raw_value() {
        for raw in 0..8 {
            assert_eq!(CompareFunction::from_bits(raw).into_bits(), raw);
        }
        assert_eq!(CompareFunction::from_bits(7), CompareFunction::Reserved(7));
        assert!(!CompareFunction::Reserved(7).is_valid());
        assert!(EventType::Other(0x3F).is_valid());
        assert_eq!(
            EventType::CacheFlushAndInvTsEvent.into_bits(),
            0x14,
            "facts §4.3"
        );
        extern crate std;
        use std::string::ToString;
        assert_eq!(EventType::Other(0x3A).to_string(), "0x3a");
        assert_eq!(CachePolicy::Bypass.to_string(), "BYPASS");
    }

    #[test]
    fn field_mask_edges() {
        assert_eq!(field_mask(0, 32), u32::MAX);
        assert_eq!(field_mask(4, 2), 0x30);
        assert_eq!(field_mask(31, 1), 0x8000_0000);
    }
}
