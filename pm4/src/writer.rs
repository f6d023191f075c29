//! Appending packets to a caller's dword buffer without allocating.
//!
//! Every packet type implements [`Encode`]; a [`PacketWriter`] appends packets to a
//! `&mut [u32]` and reports the dwords written, or [`WriteError::OutOfSpace`] (nothing is
//! written then) when the rest of the buffer is too short. For a ring with a read pointer
//! and wrap-around, see [`crate::ring`].
//!
//! ```
//! use pm4::hws::{RunList, RunListArgs};
//! use pm4::writer::PacketWriter;
//! let mut buf = [0u32; 8];
//! let mut w = PacketWriter::new(&mut buf);
//! let rl = RunList::new(&RunListArgs::submit(0x1000, 0x10, 1))?;
//! assert_eq!(w.push(&rl)?, 4);
//! assert_eq!(w.nop(3)?, 3);
//! assert_eq!(w.len(), 7);
//! assert!(w.push(&rl).is_err()); // 1 dword left
//! assert_eq!(buf[0], 0xC002_A500);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use zerocopy::IntoBytes;

use crate::error::{BuildError, WriteError};
use crate::header::{Opcode, Type3Header, MAX_PACKET_DWORDS, NOP_ONE_DWORD};

/// A packet that can be written as dwords.
pub trait Encode {
    /// Total length in dwords, header included.
    fn dwords(&self) -> usize;

    /// Writes the packet at the start of `out` and returns the dwords written. Fails
    /// with [`WriteError::OutOfSpace`] (writing nothing) when `out` is shorter than
    /// [`Encode::dwords`].
    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError>;
}

impl<T: Encode + ?Sized> Encode for &T {
    fn dwords(&self) -> usize {
        (**self).dwords()
    }
    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
        (**self).encode_into(out)
    }
}

/// The first `needed` dwords of `out`, or `OutOfSpace`.
#[inline]
pub(crate) fn space(out: &mut [u32], needed: usize) -> Result<&mut [u32], WriteError> {
    let available = out.len();
    out.get_mut(..needed)
        .ok_or(WriteError::OutOfSpace { needed, available })
}

/// Copies a fixed-size zerocopy packet into `out`.
#[inline]
pub(crate) fn encode_fixed<T: IntoBytes + zerocopy::Immutable>(
    packet: &T,
    dwords: usize,
    out: &mut [u32],
) -> Result<usize, WriteError> {
    let dst = space(out, dwords)?;
    dst.as_mut_bytes().copy_from_slice(packet.as_bytes());
    Ok(dwords)
}

/// Writes a NOP of `total_dwords` dwords (header included) at the start of `out`: the
/// one-dword NOP `0xFFFF1000` for 1, otherwise a header with `count = total − 2`
/// followed by zero dwords.
pub fn write_nop(out: &mut [u32], total_dwords: usize) -> Result<usize, WriteError> {
    if total_dwords == 1 {
        let dst = space(out, 1)?;
        dst[0] = NOP_ONE_DWORD;
        return Ok(1);
    }
    if total_dwords == 0 || total_dwords > MAX_PACKET_DWORDS {
        return Err(WriteError::Build(BuildError::Length {
            packet: "NOP",
            dwords: total_dwords,
            min: 1,
            max: MAX_PACKET_DWORDS,
        }));
    }
    let dst = space(out, total_dwords)?;
    let (head, body) = dst.split_at_mut(1);
    head[0] = Type3Header::for_fixed_packet(Opcode::NOP, total_dwords).into_bits();
    body.fill(0);
    Ok(total_dwords)
}

/// Appends packets to a caller-owned dword buffer.
#[derive(Debug)]
pub struct PacketWriter<'a> {
    buf: &'a mut [u32],
    len: usize,
}

impl<'a> PacketWriter<'a> {
    /// A writer appending from the start of `buf`.
    pub fn new(buf: &'a mut [u32]) -> Self {
        PacketWriter { buf, len: 0 }
    }

    /// Appends one packet; returns the dwords written.
    #[inline]
    pub fn push<P: Encode + ?Sized>(&mut self, packet: &P) -> Result<usize, WriteError> {
        let rest = self.buf.get_mut(self.len..).unwrap_or_default();
        let n = packet.encode_into(rest)?;
        self.len += n;
        Ok(n)
    }

    /// Appends a NOP of `total_dwords` dwords (see [`write_nop`]).
    pub fn nop(&mut self, total_dwords: usize) -> Result<usize, WriteError> {
        let rest = self.buf.get_mut(self.len..).unwrap_or_default();
        let n = write_nop(rest, total_dwords)?;
        self.len += n;
        Ok(n)
    }

    /// Appends raw dwords (already-encoded packets).
    pub fn push_raw(&mut self, dwords: &[u32]) -> Result<usize, WriteError> {
        let rest = self.buf.get_mut(self.len..).unwrap_or_default();
        space(rest, dwords.len())?.copy_from_slice(dwords);
        self.len += dwords.len();
        Ok(dwords.len())
    }

    /// Dwords written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Dwords still free.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.len
    }

    /// The dwords written so far.
    pub fn written(&self) -> &[u32] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// Ends writing and returns the written part of the buffer.
    pub fn into_written(self) -> &'a mut [u32] {
        self.buf.get_mut(..self.len).unwrap_or_default()
    }
}

/// A packet of fixed size, readable and writable as plain dwords.
pub trait FixedPacket:
    zerocopy::FromBytes + IntoBytes + zerocopy::Immutable + zerocopy::KnownLayout + Copy + Encode
{
    /// Total length in dwords (header included).
    const DWORDS: usize;
    /// The packet's name as the disassembler prints it.
    const NAME: &'static str;
}

/// Implements the items every fixed-size packet has: `DWORDS`, `BYTES`, `NAME`, the size
/// assertion, `to_dwords`, [`Encode`] and [`FixedPacket`].
macro_rules! fixed_layout {
    ($ty:ident, $dwords:literal, $name:literal) => {
        const _: () = assert!(core::mem::size_of::<$ty>() == $dwords * 4);

        impl $ty {
            /// Total length in dwords (header included).
            pub const DWORDS: usize = $dwords;
            /// Total length in bytes.
            pub const BYTES: usize = $dwords * 4;
            /// The packet's name as the disassembler prints it.
            pub const NAME: &'static str = $name;

            /// The packet as dwords.
            pub fn to_dwords(&self) -> [u32; $dwords] {
                zerocopy::transmute!(*self)
            }
        }

        impl $crate::writer::Encode for $ty {
            #[inline]
            fn dwords(&self) -> usize {
                $dwords
            }
            #[inline]
            fn encode_into(&self, out: &mut [u32]) -> Result<usize, $crate::error::WriteError> {
                $crate::writer::encode_fixed(self, $dwords, out)
            }
        }

        impl $crate::writer::FixedPacket for $ty {
            const DWORDS: usize = $dwords;
            const NAME: &'static str = $name;
        }
    };
}
pub(crate) use fixed_layout;

/// [`fixed_layout!`] plus the PM4 items `OPCODE` and `HEADER`; with a last argument, also
/// [`Pm4Body`](crate::packets::Pm4Body) for the decoder, checking the packet with
/// `validate()` (`validate`), `validate(gen)` (`validate_gen`) or not at all (`unchecked`).
macro_rules! fixed_packet {
    ($ty:ident, $opcode:expr, $dwords:literal, $name:literal, validate) => {
        $crate::writer::fixed_packet!($ty, $opcode, $dwords, $name, body | p, _gen | p.validate());
    };
    ($ty:ident, $opcode:expr, $dwords:literal, $name:literal, validate_gen) => {
        $crate::writer::fixed_packet!(
            $ty,
            $opcode,
            $dwords,
            $name,
            body | p,
            gen | p.validate(gen)
        );
    };
    ($ty:ident, $opcode:expr, $dwords:literal, $name:literal, unchecked) => {
        $crate::writer::fixed_packet!($ty, $opcode, $dwords, $name, body | _p, _gen | Ok(()));
    };
    ($ty:ident, $opcode:expr, $dwords:literal, $name:literal, body |$p:ident, $gen:ident| $check:expr) => {
        $crate::writer::fixed_packet!($ty, $opcode, $dwords, $name);

        impl<'a> $crate::packets::Pm4Body<'a> for $ty {
            const MIN_DWORDS: usize = $dwords;
            const MAX_DWORDS: usize = $dwords;

            #[inline(always)]
            fn decode_body(
                _header: $crate::header::Type3Header,
                words: &'a [u32],
                $gen: $crate::GfxGen,
            ) -> Result<Self, $crate::decode::DecodeErrorKind> {
                let $p: $ty = $crate::decode::fixed(words)?;
                $check?;
                Ok($p)
            }
        }
    };
    ($ty:ident, $opcode:expr, $dwords:literal, $name:literal) => {
        $crate::writer::fixed_layout!($ty, $dwords, $name);

        impl $ty {
            /// The packet's opcode.
            pub const OPCODE: $crate::header::Opcode = $opcode;
            /// The packet's header (`count = DWORDS − 2`, shader_type 0 as KFD writes it).
            pub const HEADER: $crate::header::Type3Header =
                $crate::header::Type3Header::for_fixed_packet($opcode, $dwords);
        }
    };
}
pub(crate) use fixed_packet;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nop_encodings() {
        let mut buf = [0xAAAA_AAAAu32; 6];
        assert_eq!(write_nop(&mut buf, 1), Ok(1));
        assert_eq!(buf[0], 0xFFFF_1000);
        assert_eq!(write_nop(&mut buf, 4), Ok(4));
        assert_eq!(buf[..4], [0xC002_1000, 0, 0, 0]);
        assert_eq!(
            write_nop(&mut buf, 7),
            Err(WriteError::OutOfSpace {
                needed: 7,
                available: 6
            })
        );
        assert!(matches!(write_nop(&mut buf, 0), Err(WriteError::Build(_))));
    }

    #[test]
    fn writer_out_of_space_writes_nothing() {
        let mut buf = [7u32; 3];
        let mut w = PacketWriter::new(&mut buf);
        assert_eq!(w.push_raw(&[1, 2]), Ok(2));
        assert_eq!(
            w.push_raw(&[3, 4]),
            Err(WriteError::OutOfSpace {
                needed: 2,
                available: 1
            })
        );
        assert_eq!(w.written(), &[1, 2]);
        assert_eq!(w.remaining(), 1);
        assert_eq!(buf, [1, 2, 7]);
    }
}
