//! The PM4 type-3 header (facts §1) and the [`Opcode`] type; the opcodes themselves
//! (facts §2) are declared in the [packet table](crate::packets).
//!
//! ```
//! use pm4::header::{Opcode, Type3Header, NOP_ONE_DWORD};
//! let h = Type3Header::for_fixed_packet(Opcode::MAP_QUEUES, 7);
//! assert_eq!(h.into_bits(), 0xC005_A200);
//! assert_eq!(h.total_dwords(), 7);
//! assert!(Type3Header::from_bits(NOP_ONE_DWORD).is_one_dword_nop());
//! ```

use core::fmt;

use bitfield_struct::bitfield;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::error::BuildError;
use crate::fields::{hw_enum, reserved_mask};

/// The one-dword NOP (`count == 0x3FFF`): the filler KFD writes into the HIQ tail when the
/// ring wraps, and amdgpu's gfx9 ring NOP.
pub const NOP_ONE_DWORD: u32 = 0xFFFF_1000;

/// The type-2 filler dword. KFD does not use it; the decoder recognises it.
pub const TYPE2_FILLER: u32 = 0x8000_0000;

/// Largest encodable `count` (`[29:16]`); with opcode NOP it means "one-dword NOP".
pub const MAX_COUNT: u16 = 0x3FFF;

/// Most dwords a type-3 packet can have (`count == 0x3FFE` plus header): larger packets
/// cannot be expressed because `0x3FFF` is the one-dword NOP.
pub const MAX_PACKET_DWORDS: usize = MAX_COUNT as usize + 1;

/// A PM4 type-3 opcode (`IT_*`, header bits `[15:8]`). Open: any byte can appear in a
/// stream, and [`Opcode::name`] knows the names of facts §2. The named constants come
/// from the [packet table](crate::packets).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Opcode(pub u8);

macro_rules! opcodes {
    ($( $(#[$m:meta])* $name:ident = $value:literal, )+) => {
        impl Opcode {
            $( $(#[$m])* pub const $name: Opcode = Opcode($value); )+

            /// The `IT_*` name of a known opcode, without the prefix (`"RELEASE_MEM"`).
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($name)), )+
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use opcodes;

impl Opcode {
    /// Raw bits for `bitfield-struct`.
    pub const fn from_bits(raw: u32) -> Self {
        Opcode(raw as u8)
    }
    /// Raw bits for `bitfield-struct`.
    pub const fn into_bits(self) -> u32 {
        self.0 as u32
    }
}

impl fmt::Debug for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "Opcode::{name}"),
            None => write!(f, "Opcode({:#04x})", self.0),
        }
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "op={:#04x}", self.0),
        }
    }
}

hw_enum! {
    /// PM4 packet type (header `[31:30]`).
    pub enum PacketType: 2 bits, catch-all Reserved {
        /// Type 0: register writes (not used on MEC queues; rejected by the decoder).
        Type0 = 0 => "TYPE0",
        /// Type 1 (obsolete; rejected by the decoder).
        Type1 = 1 => "TYPE1",
        /// Type 2: the one-dword filler `0x80000000`.
        Type2 = 2 => "TYPE2",
        /// Type 3: opcode packets.
        Type3 = 3 => "TYPE3",
    }
}

/// The PM4 type-3 header dword (facts §1).
///
/// `count` is the number of body dwords minus one (total dwords − 2); `0x3FFF` with
/// opcode NOP is the one-dword NOP [`NOP_ONE_DWORD`].
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq, Hash)]
pub struct Type3Header {
    /// `[0]` predication enable (gfx ring only; 0 on compute).
    pub predicate: bool,
    /// `[1]` shader type: 1 = compute. KFD's HIQ packets leave it 0, kfdtest sets it.
    pub shader_type: bool,
    /// `[7:2]` reserved.
    #[bits(6)]
    __: u8,
    /// `[15:8]` opcode.
    #[bits(8)]
    pub opcode: Opcode,
    /// `[29:16]` body dwords − 1.
    #[bits(14)]
    pub count: u16,
    /// `[31:30]` packet type (3).
    #[bits(2)]
    pub packet_type: PacketType,
}

impl Type3Header {
    /// Bits no field covers (`[7:2]`); the decoder rejects headers with any of them set.
    pub const RESERVED_MASK: u32 = reserved_mask!(Type3Header:
        PREDICATE_OFFSET / PREDICATE_BITS, SHADER_TYPE_OFFSET / SHADER_TYPE_BITS,
        OPCODE_OFFSET / OPCODE_BITS, COUNT_OFFSET / COUNT_BITS,
        PACKET_TYPE_OFFSET / PACKET_TYPE_BITS);

    /// The header of a packet of `total_dwords` dwords (header included), KFD style
    /// (shader_type 0). For compile-time packet sizes; `total_dwords` must be in
    /// `2..=MAX_PACKET_DWORDS` (a const-evaluation error otherwise).
    pub const fn for_fixed_packet(opcode: Opcode, total_dwords: usize) -> Self {
        assert!(total_dwords >= 2 && total_dwords <= MAX_PACKET_DWORDS);
        Self::new()
            .with_packet_type(PacketType::Type3)
            .with_opcode(opcode)
            .with_count((total_dwords - 2) as u16)
    }

    /// The header of a packet of `total_dwords` dwords, or an error when that length
    /// cannot be expressed (fewer than 2 or more than [`MAX_PACKET_DWORDS`]).
    pub const fn for_packet(opcode: Opcode, total_dwords: usize) -> Result<Self, BuildError> {
        if total_dwords < 2 || total_dwords > MAX_PACKET_DWORDS {
            return Err(BuildError::Length {
                packet: "TYPE3",
                dwords: total_dwords,
                min: 2,
                max: MAX_PACKET_DWORDS,
            });
        }
        Ok(Self::for_fixed_packet(opcode, total_dwords))
    }

    /// Whether this is the one-dword NOP (`count == 0x3FFF`, opcode NOP, type 3).
    pub const fn is_one_dword_nop(self) -> bool {
        self.into_bits() & !(Self::RESERVED_MASK | 0b11) == NOP_ONE_DWORD
    }

    /// Total packet length in dwords, header included: `count + 2`, or 1 for the
    /// one-dword NOP.
    pub const fn total_dwords(self) -> usize {
        if self.is_one_dword_nop() {
            1
        } else {
            self.count() as usize + 2
        }
    }
}

impl fmt::Display for Type3Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TYPE3 ")?;
        match self.opcode().name() {
            Some(name) => write!(f, "op={:#04x} ({name})", self.opcode().0)?,
            None => write!(f, "op={:#04x}", self.opcode().0)?,
        }
        write!(f, " count={}", self.count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_reserved_mask_is_bits_7_to_2() {
        assert_eq!(Type3Header::RESERVED_MASK, 0x0000_00FC);
    }

    #[test]
    fn one_dword_nop() {
        let h = Type3Header::from_bits(NOP_ONE_DWORD);
        assert_eq!(h.packet_type(), PacketType::Type3);
        assert_eq!(h.opcode(), Opcode::NOP);
        assert_eq!(h.count(), 0x3FFF);
        assert!(h.is_one_dword_nop());
        assert_eq!(h.total_dwords(), 1);
        // shader_type set is still the one-dword NOP.
        assert!(Type3Header::from_bits(NOP_ONE_DWORD | 2).is_one_dword_nop());
        assert!(!Type3Header::from_bits(0xFFFE_1000).is_one_dword_nop());
    }

    #[test]
    fn for_packet_rejects_unencodable_lengths() {
        assert!(Type3Header::for_packet(Opcode::NOP, 1).is_err());
        assert!(Type3Header::for_packet(Opcode::NOP, MAX_PACKET_DWORDS + 1).is_err());
        let h = Type3Header::for_packet(Opcode::NOP, MAX_PACKET_DWORDS).unwrap();
        assert_eq!(h.count(), 0x3FFE);
        assert_eq!(h.total_dwords(), MAX_PACKET_DWORDS);
    }
}
