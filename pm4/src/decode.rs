//! Decoding dword streams into typed packets.
//!
//! [`Pm4Decoder`] turns a `&[u32]` PM4 stream into [`Packet`]s, [`SdmaDecoder`] an SDMA
//! stream into [`SdmaPacket`]s. Both are iterators of `Result<Decoded, DecodeError>`;
//! each decoded packet carries its dword offset and its raw dwords.
//!
//! Guarantees, on any input: no panic, no read past the slice, no allocation. Each packet
//! is checked completely before it is returned: length against the header, reserved
//! bits (per generation), enum fields against the values the hardware defines,
//! alignment of addresses whose low bits are reserved.
//!
//! **After an error**, by default ([`ErrorPolicy::Stop`]) the iterator yields that one
//! error and then ends: a command processor does not guess where the next packet
//! starts. [`ErrorPolicy::Resync`] (PM4 only; used by the listing) continues instead:
//! after a packet whose type-3 header is intact and whose dwords are all present it
//! resumes after that packet (its `count` says where), after a bad header it resumes at
//! the next dword; a truncated packet always ends the stream. SDMA streams always stop,
//! since an unknown SDMA opcode does not say how long it is.
//!
//! ```
//! use pm4::decode::{Pm4Decoder, Packet};
//! use pm4::GfxGen;
//! let stream = [0xFFFF_1000, 0xC000_4600, 0x0000_0407];
//! let packets: Vec<_> = Pm4Decoder::new(&stream, GfxGen::Gfx9).collect::<Result<_, _>>()?;
//! assert_eq!(packets.len(), 2);
//! assert_eq!(packets[1].offset, 1);
//! assert!(matches!(packets[1].packet, Packet::EventWrite(_)));
//! # Ok::<(), pm4::decode::DecodeError>(())
//! ```

use core::fmt;

use zerocopy::IntoBytes;

use crate::fields::FieldEnum;
use crate::header::{Opcode, PacketType, Type3Header, TYPE2_FILLER};
use crate::packets::decode_type3;
pub use crate::packets::Packet;
use crate::sdma::*;
use crate::writer::FixedPacket;
use crate::{GfxGen, SdmaGen};

/// What is wrong with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The stream ends inside a packet.
    Truncated {
        /// Packet name (`"TYPE3"` if the opcode is unknown).
        packet: &'static str,
        /// Dwords the packet needs.
        needed: usize,
        /// Dwords left in the stream.
        available: usize,
    },
    /// A PM4 header of type 0 or 1.
    BadPacketType {
        /// The header dword.
        header: u32,
    },
    /// A valid type-3 header with an opcode not in the table.
    UnknownOpcode {
        /// The opcode.
        opcode: Opcode,
        /// Total packet length the header gives.
        dwords: usize,
    },
    /// A known opcode this crate does not decode (for example DISPATCH_INDIRECT).
    UnsupportedOpcode {
        /// The opcode (its name is `opcode.name()`).
        opcode: Opcode,
        /// Total packet length the header gives.
        dwords: usize,
    },
    /// An SDMA opcode not in the table.
    UnknownSdmaOpcode {
        /// `op` (dw0 `[7:0]`).
        op: u8,
        /// `sub_op` (dw0 `[15:8]`).
        sub_op: u8,
    },
    /// A known SDMA operation this crate does not decode.
    UnsupportedSdmaOpcode {
        /// `op`.
        op: SdmaOpcode,
        /// `sub_op`.
        sub_op: u8,
    },
    /// The header's length is not one this packet can have.
    WrongLength {
        /// Packet name.
        packet: &'static str,
        /// Total dwords the header gives.
        dwords: usize,
        /// Smallest legal length.
        min: usize,
        /// Largest legal length.
        max: usize,
    },
    /// Bits that are reserved (on this generation) are set.
    ReservedBits {
        /// Packet name.
        packet: &'static str,
        /// Dword index within the packet.
        dword: usize,
        /// The offending bits.
        bits: u32,
    },
    /// A field holds a value the hardware does not define.
    InvalidField {
        /// Packet name.
        packet: &'static str,
        /// Dword index within the packet.
        dword: usize,
        /// Field name.
        field: &'static str,
        /// The raw value.
        value: u32,
    },
}

/// A decoding error at a dword offset of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Dword offset of the packet (header) the error is in.
    pub offset: usize,
    /// What is wrong.
    pub kind: DecodeErrorKind,
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeErrorKind::Truncated {
                packet,
                needed,
                available,
            } => {
                write!(
                    f,
                    "truncated {packet}: needs {needed} dwords, {available} left"
                )
            }
            DecodeErrorKind::BadPacketType { header } => {
                write!(
                    f,
                    "header {header:#010x} has packet type {} (expected 3)",
                    header >> 30
                )
            }
            DecodeErrorKind::UnknownOpcode { opcode, dwords } => {
                write!(f, "unknown opcode {:#04x} ({dwords} dwords)", opcode.0)
            }
            DecodeErrorKind::UnsupportedOpcode { opcode, dwords } => {
                write!(
                    f,
                    "opcode {:#04x} ({opcode}) is not decoded ({dwords} dwords)",
                    opcode.0
                )
            }
            DecodeErrorKind::UnknownSdmaOpcode { op, sub_op } => {
                write!(f, "unknown SDMA op {op:#04x} sub_op {sub_op:#04x}")
            }
            DecodeErrorKind::UnsupportedSdmaOpcode { op, sub_op } => {
                write!(f, "SDMA {op} sub_op {sub_op} is not decoded")
            }
            DecodeErrorKind::WrongLength {
                packet,
                dwords,
                min,
                max,
            } => {
                if min == max {
                    write!(f, "{packet} with {dwords} dwords (must be {min})")
                } else {
                    write!(f, "{packet} with {dwords} dwords (must be {min}..={max})")
                }
            }
            DecodeErrorKind::ReservedBits {
                packet,
                dword,
                bits,
            } => {
                write!(f, "{packet}: reserved bits {bits:#010x} set in dw{dword}")
            }
            DecodeErrorKind::InvalidField {
                packet,
                dword,
                field,
                value,
            } => {
                write!(f, "{packet}: impossible {field}={value:#x} in dw{dword}")
            }
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at dword {}: {}", self.offset, self.kind)
    }
}

impl core::error::Error for DecodeError {}

/// `Err(ReservedBits)` if `raw & mask != 0`.
#[inline]
pub(crate) fn check_reserved(
    packet: &'static str,
    dword: usize,
    raw: u32,
    mask: u32,
) -> Result<(), DecodeErrorKind> {
    let bits = raw & mask;
    if bits != 0 {
        Err(DecodeErrorKind::ReservedBits {
            packet,
            dword,
            bits,
        })
    } else {
        Ok(())
    }
}

/// `Err(InvalidField)` if `value` is a value the decoder rejects.
#[inline]
pub(crate) fn check_enum<E: FieldEnum>(
    packet: &'static str,
    dword: usize,
    field: &'static str,
    value: E,
) -> Result<(), DecodeErrorKind> {
    if value.is_valid() {
        Ok(())
    } else {
        Err(invalid_field(packet, dword, field, value.raw()))
    }
}

/// An `InvalidField` error.
pub(crate) const fn invalid_field(
    packet: &'static str,
    dword: usize,
    field: &'static str,
    value: u32,
) -> DecodeErrorKind {
    DecodeErrorKind::InvalidField {
        packet,
        dword,
        field,
        value,
    }
}

/// A packet decoded from a stream, with where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded<'a, P> {
    /// Dword offset of the packet's first dword.
    pub offset: usize,
    /// The packet's dwords.
    pub words: &'a [u32],
    /// The typed packet.
    pub packet: P,
}

/// What a decoder does after an error (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ErrorPolicy {
    /// Yield the error, then end.
    #[default]
    Stop,
    /// Yield the error, then continue after the bad packet where its length is known.
    Resync,
}

/// Reads a fixed-size packet from exactly its dwords.
#[inline]
pub(crate) fn fixed<T: FixedPacket>(body: &[u32]) -> Result<T, DecodeErrorKind> {
    if body.len() != T::DWORDS {
        return Err(DecodeErrorKind::WrongLength {
            packet: T::NAME,
            dwords: body.len(),
            min: T::DWORDS,
            max: T::DWORDS,
        });
    }
    T::read_from_bytes(body.as_bytes()).map_err(|_| DecodeErrorKind::WrongLength {
        packet: T::NAME,
        dwords: body.len(),
        min: T::DWORDS,
        max: T::DWORDS,
    })
}

/// A failed decode: the error and, where the packet's extent is known, its length.
type Failure = (DecodeErrorKind, Option<usize>);

/// Decodes the packet at the start of `words` (non-empty).
fn decode_pm4_at(words: &[u32], gen: GfxGen) -> Result<(Packet<'_>, usize), Failure> {
    let Some(&raw) = words.first() else {
        return Err((
            DecodeErrorKind::Truncated {
                packet: "TYPE3",
                needed: 1,
                available: 0,
            },
            None,
        ));
    };
    let header = Type3Header::from_bits(raw);
    match header.packet_type() {
        PacketType::Type3 => {}
        PacketType::Type2 => {
            return if raw == TYPE2_FILLER {
                Ok((Packet::Type2Filler, 1))
            } else {
                Err((
                    DecodeErrorKind::ReservedBits {
                        packet: "TYPE2",
                        dword: 0,
                        bits: raw & !TYPE2_FILLER,
                    },
                    Some(1),
                ))
            };
        }
        _ => return Err((DecodeErrorKind::BadPacketType { header: raw }, Some(1))),
    }
    let total = header.total_dwords();
    let opcode = header.opcode();
    let Some(body) = words.get(..total) else {
        let packet = opcode.name().unwrap_or("TYPE3");
        return Err((
            DecodeErrorKind::Truncated {
                packet,
                needed: total,
                available: words.len(),
            },
            None,
        ));
    };
    let fail = |kind| (kind, Some(total));
    if raw & Type3Header::RESERVED_MASK != 0 {
        let packet = opcode.name().unwrap_or("TYPE3");
        return Err(fail(DecodeErrorKind::ReservedBits {
            packet,
            dword: 0,
            bits: raw & Type3Header::RESERVED_MASK,
        }));
    }
    let packet = decode_type3(opcode, header, body, gen).map_err(fail)?;
    Ok((packet, total))
}

/// Decodes the first packet of a PM4 stream; returns it and its length in dwords.
pub fn decode_pm4_packet(words: &[u32], gen: GfxGen) -> Result<(Packet<'_>, usize), DecodeError> {
    decode_pm4_at(words, gen).map_err(|(kind, _)| DecodeError { offset: 0, kind })
}

/// Iterator over the packets of a PM4 stream (see the module docs for error handling).
#[derive(Clone, Debug)]
pub struct Pm4Decoder<'a> {
    words: &'a [u32],
    pos: usize,
    gen: GfxGen,
    policy: ErrorPolicy,
    done: bool,
}

impl<'a> Pm4Decoder<'a> {
    /// A decoder for `words` with the packet layouts of `gen`, stopping at the first
    /// error.
    pub fn new(words: &'a [u32], gen: GfxGen) -> Self {
        Pm4Decoder {
            words,
            pos: 0,
            gen,
            policy: ErrorPolicy::Stop,
            done: false,
        }
    }

    /// Sets what happens after an error.
    pub fn with_policy(mut self, policy: ErrorPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Dword offset of the next packet.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Pm4Decoder<'a> {
    type Item = Result<Decoded<'a, Packet<'a>>, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let offset = self.pos;
        let rest = self.words.get(offset..).filter(|r| !r.is_empty())?;
        match decode_pm4_at(rest, self.gen) {
            Ok((packet, n)) => {
                self.pos += n;
                Some(Ok(Decoded {
                    offset,
                    words: rest.get(..n).unwrap_or_default(),
                    packet,
                }))
            }
            Err((kind, skip)) => {
                match (self.policy, skip) {
                    (ErrorPolicy::Resync, Some(n)) => self.pos += n,
                    _ => self.done = true,
                }
                Some(Err(DecodeError { offset, kind }))
            }
        }
    }
}

impl core::iter::FusedIterator for Pm4Decoder<'_> {}

// ---------------------------------------------------------------------------------------
// SDMA
// ---------------------------------------------------------------------------------------

pub use crate::sdma::SdmaPacket;

/// Reads a fixed-size SDMA packet from the start of `rest`.
pub(crate) fn sdma_fixed<T: FixedPacket>(rest: &[u32]) -> Result<(T, usize), DecodeErrorKind> {
    let Some(body) = rest.get(..T::DWORDS) else {
        return Err(DecodeErrorKind::Truncated {
            packet: T::NAME,
            needed: T::DWORDS,
            available: rest.len(),
        });
    };
    Ok((fixed(body)?, T::DWORDS))
}

fn decode_sdma_at(rest: &[u32], gen: SdmaGen) -> Result<(SdmaPacket<'_>, usize), DecodeErrorKind> {
    let Some(&raw) = rest.first() else {
        return Err(DecodeErrorKind::Truncated {
            packet: "SDMA",
            needed: 1,
            available: 0,
        });
    };
    crate::sdma::decode_sdma_body(rest, raw, gen)
}

/// Decodes the first packet of an SDMA stream; returns it and its length in dwords.
pub fn decode_sdma_packet(
    words: &[u32],
    gen: SdmaGen,
) -> Result<(SdmaPacket<'_>, usize), DecodeError> {
    decode_sdma_at(words, gen).map_err(|kind| DecodeError { offset: 0, kind })
}

/// Iterator over the packets of an SDMA stream; ends after the first error.
#[derive(Clone, Debug)]
pub struct SdmaDecoder<'a> {
    words: &'a [u32],
    pos: usize,
    gen: SdmaGen,
    done: bool,
}

impl<'a> SdmaDecoder<'a> {
    /// A decoder for `words` with the packet layouts of `gen`.
    pub fn new(words: &'a [u32], gen: SdmaGen) -> Self {
        SdmaDecoder {
            words,
            pos: 0,
            gen,
            done: false,
        }
    }

    /// Dword offset of the next packet.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for SdmaDecoder<'a> {
    type Item = Result<Decoded<'a, SdmaPacket<'a>>, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let offset = self.pos;
        let rest = self.words.get(offset..).filter(|r| !r.is_empty())?;
        match decode_sdma_at(rest, self.gen) {
            Ok((packet, n)) => {
                self.pos += n;
                Some(Ok(Decoded {
                    offset,
                    words: rest.get(..n).unwrap_or_default(),
                    packet,
                }))
            }
            Err(kind) => {
                self.done = true;
                Some(Err(DecodeError { offset, kind }))
            }
        }
    }
}

impl core::iter::FusedIterator for SdmaDecoder<'_> {}
