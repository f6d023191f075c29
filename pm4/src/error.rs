//! Errors of packet construction ([`BuildError`]) and of writing into a buffer
//! ([`WriteError`]). Decoding errors live in [`crate::decode`], ring errors in
//! [`crate::ring`].

use core::fmt;

/// A packet could not be built from the given field values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// A numeric field does not fit its bit width (or its documented range).
    FieldOutOfRange {
        /// Packet name (`"MAP_QUEUES"`).
        packet: &'static str,
        /// Field name (`"doorbell_offset"`).
        field: &'static str,
        /// The value given.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// An address does not have the alignment its field requires.
    Misaligned {
        /// Packet name.
        packet: &'static str,
        /// Field name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// Required alignment in bytes.
        align: u64,
    },
    /// A variable-length packet's total length is outside what its header can express.
    Length {
        /// Packet name.
        packet: &'static str,
        /// Requested total length in dwords.
        dwords: usize,
        /// Smallest legal total length.
        min: usize,
        /// Largest legal total length.
        max: usize,
    },
    /// Two field values cannot be combined (for example a 64-bit data select with an
    /// interrupt-only release).
    Conflict {
        /// Packet name.
        packet: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BuildError::FieldOutOfRange {
                packet,
                field,
                value,
                max,
            } => {
                write!(
                    f,
                    "{packet}: {field}={value:#x} does not fit (max {max:#x})"
                )
            }
            BuildError::Misaligned {
                packet,
                field,
                value,
                align,
            } => {
                write!(
                    f,
                    "{packet}: {field}={value:#x} is not {align}-byte aligned"
                )
            }
            BuildError::Length {
                packet,
                dwords,
                min,
                max,
            } => {
                write!(f, "{packet}: {dwords} dwords is outside {min}..={max}")
            }
            BuildError::Conflict { packet, reason } => write!(f, "{packet}: {reason}"),
        }
    }
}

impl core::error::Error for BuildError {}

/// Writing a packet into a caller's buffer failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// The buffer has fewer free dwords than the packet needs; nothing was written.
    OutOfSpace {
        /// Dwords the packet needs.
        needed: usize,
        /// Dwords left in the buffer.
        available: usize,
    },
    /// The packet itself is invalid (for example a NOP longer than a header can express).
    Build(BuildError),
}

impl From<BuildError> for WriteError {
    fn from(e: BuildError) -> Self {
        WriteError::Build(e)
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::OutOfSpace { needed, available } => {
                write!(
                    f,
                    "out of space: packet needs {needed} dwords, {available} available"
                )
            }
            WriteError::Build(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for WriteError {}

/// Checks that `value` fits in `bits` bits.
#[inline]
pub(crate) const fn check_bits(
    packet: &'static str,
    field: &'static str,
    value: u64,
    bits: u32,
) -> Result<(), BuildError> {
    let max = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    if value > max {
        Err(BuildError::FieldOutOfRange {
            packet,
            field,
            value,
            max,
        })
    } else {
        Ok(())
    }
}

/// Checks that `value` is a multiple of `align` (a power of two).
#[inline]
pub(crate) const fn check_align(
    packet: &'static str,
    field: &'static str,
    value: u64,
    align: u64,
) -> Result<(), BuildError> {
    if value & (align - 1) != 0 {
        Err(BuildError::Misaligned {
            packet,
            field,
            value,
            align,
        })
    } else {
        Ok(())
    }
}
