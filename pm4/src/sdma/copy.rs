//! SDMA copies: COPY_LINEAR (and its broadcast form) and COPY_LINEAR_SUB_WIND.

use super::*;

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
