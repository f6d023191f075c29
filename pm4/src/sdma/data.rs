//! SDMA packets that write data: NOP, WRITE (linear) and CONSTANT_FILL.

use super::*;

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
