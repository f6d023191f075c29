//! The f16 VOP1/VOP2/VOP3 ops, the VOP3P packed ops (16-bit lanes, gfx90a's packed f32,
//! mixed-precision FMA, dot products) and `v_trig_preop_f64`: operand selection and
//! destination halves here, the arithmetic in [`half`](crate::exec::half).

use super::operands::{mods_of, Mods};
use super::{illegal, opnd, Wave, R};
use crate::decode::Operand;
use crate::exec::cache::{Cached, SrcType};
use crate::exec::float as fp;
use crate::exec::half::{self as h, PackedInt, UnaryF16};
use crate::exec::operand::scalar_index;
use crate::exec::wave::{Lanes, WAVE_SIZE};
use crate::table::{Enc, Field, Op};

/// The VOP3P modifier fields: `op_sel` (source i's low result lane reads its high half),
/// `op_sel_hi` (the high result lane reads the high half), `neg_lo`/`neg_hi` and clamp.
#[derive(Clone, Copy)]
struct PackedMods {
    op_sel: u32,
    op_sel_hi: u32,
    neg_lo: u32,
    neg_hi: u32,
    clamp: bool,
}

fn packed_mods(c: &Cached) -> PackedMods {
    let [w0, w1] = c.inst.words;
    PackedMods {
        op_sel: (w0 >> 11) & 7,
        op_sel_hi: ((w1 >> 27) & 3) | (((w0 >> 14) & 1) << 2),
        neg_lo: (w1 >> 29) & 7,
        neg_hi: (w0 >> 8) & 7,
        clamp: (w0 >> 15) & 1 != 0,
    }
}

const SRC_FIELDS: [Field; 3] = [Field::A, Field::B, Field::C];

/// Whether an f16 VOP3 op of gfx9 takes VOP3 `op_sel` (source halves, destination half)
/// and keeps the destination half it does not write. The VOP1/VOP2 ops and the `*_legacy`
/// encodings zero bits 31:16 instead (gfx9's split, as LLVM's list of 16-bit instructions
/// that zero the high half records it).
fn vop3_op_sel(op: Op) -> bool {
    matches!(
        op,
        Op::VFmaF16
            | Op::VMadF16
            | Op::VDivFixupF16
            | Op::VMadU16
            | Op::VMadI16
            | Op::VMax3F16
            | Op::VMin3F16
            | Op::VMed3F16
            | Op::VMax3I16
            | Op::VMax3U16
            | Op::VMin3I16
            | Op::VMin3U16
            | Op::VMed3I16
            | Op::VMed3U16
            | Op::VAddI16
            | Op::VSubI16
    )
}

/// The 16-bit integer VOP3 ops of gfx9 (`op_sel` like the f16 ones, no float modifiers).
fn int16_op(op: Op) -> bool {
    matches!(
        op,
        Op::VMadU16
            | Op::VMadI16
            | Op::VMax3I16
            | Op::VMax3U16
            | Op::VMin3I16
            | Op::VMin3U16
            | Op::VMed3I16
            | Op::VMed3U16
            | Op::VAddI16
            | Op::VSubI16
    )
}

/// The median of three: the largest of the pairwise minima.
fn med3<T: Ord + Copy>(a: T, b: T, c: T) -> T {
    a.min(b).max(a.max(b).min(c))
}

impl Wave {
    /// A 32-bit source with no modifiers; an inline constant of a packed op fills both
    /// halves (`splat16`), as the hardware applies it to each 16-bit lane.
    fn raw_src32(&self, c: &Cached, field: Field, splat16: bool) -> R<Lanes> {
        let Some(op) = opnd(c, field) else {
            return Ok([0; WAVE_SIZE]);
        };
        let mut v = self.vread32(op, c.src_type)?;
        if splat16 && matches!(op, Operand::IntConst(_) | Operand::FloatConst(_)) {
            for x in v.iter_mut() {
                *x = (*x & 0xffff) | (*x << 16);
            }
        }
        Ok(v)
    }

    /// The f16 arithmetic of VOP1/VOP2/VOP3 (and their SDWA forms through `sdwa_src`).
    pub(super) fn f16_op(&mut self, c: &Cached) -> R<()> {
        let op = c.inst.op;
        let mode = self.mode;
        let m = if c.inst.enc == Enc::Vop3 {
            mods_of(c)
        } else {
            Mods::default()
        };
        // gfx9's *_legacy forms are the older encodings of the same operations: no op_sel,
        // bits 31:16 of the destination zeroed
        let op = match op {
            Op::VMadLegacyF16 => Op::VMadF16,
            Op::VFmaLegacyF16 => Op::VFmaF16,
            Op::VDivFixupLegacyF16 => Op::VDivFixupF16,
            Op::VMadLegacyU16 => Op::VMadU16,
            Op::VMadLegacyI16 => Op::VMadI16,
            other => other,
        };
        let legacy = op != c.inst.op;
        let with_op_sel = c.inst.enc == Enc::Vop3 && vop3_op_sel(op) && !legacy;
        let op_sel = if with_op_sel {
            (c.inst.words[0] >> 11) & 15
        } else {
            0
        };
        let n = match op {
            Op::VFmaF16 | Op::VMadF16 | Op::VDivFixupF16 | Op::VMadU16 | Op::VMadI16 => 3,
            Op::VMaxF16 | Op::VMinF16 | Op::VLdexpF16 | Op::VMacF16 => 2,
            Op::VMax3F16 | Op::VMin3F16 | Op::VMed3F16 => 3,
            Op::VMax3I16 | Op::VMax3U16 | Op::VMin3I16 | Op::VMin3U16 => 3,
            Op::VMed3I16 | Op::VMed3U16 => 3,
            Op::VAddI16 | Op::VSubI16 => 2,
            _ => 1,
        };
        let mut src = [[0u16; WAVE_SIZE]; 3];
        for (i, field) in SRC_FIELDS.into_iter().enumerate().take(n) {
            // SDWA sources arrive selected and modified already
            let sdwa = self.sdwa_src.as_ref().filter(|_| i < 2).map(|s| s[i]);
            let raw = match sdwa {
                Some(v) => v,
                None => self.raw_src32(c, field, false)?,
            };
            let hi = (op_sel >> i) & 1 != 0;
            let (abs, neg) = ((m.abs >> i) & 1 != 0, (m.neg >> i) & 1 != 0);
            let int = int16_op(op) || (op == Op::VLdexpF16 && i == 1);
            for l in 0..WAVE_SIZE {
                let mut x = if hi { raw[l] >> 16 } else { raw[l] } as u16;
                if !int && sdwa.is_none() {
                    if abs {
                        x &= 0x7fff;
                    }
                    if neg {
                        x ^= 0x8000;
                    }
                }
                src[i][l] = x;
            }
        }
        // v_mac_f16 accumulates into its destination
        if op == Op::VMacF16 {
            if let Some(d) = opnd(c, Field::D) {
                let acc = self.vread32(d, SrcType::F16)?;
                for l in 0..WAVE_SIZE {
                    src[2][l] = acc[l] as u16;
                }
            }
        }
        let unary = |u| match u {
            Op::VSqrtF16 => Some(UnaryF16::Sqrt),
            Op::VRcpF16 => Some(UnaryF16::Rcp),
            Op::VRsqF16 => Some(UnaryF16::Rsq),
            Op::VExpF16 => Some(UnaryF16::Exp),
            Op::VLogF16 => Some(UnaryF16::Log),
            Op::VSinF16 => Some(UnaryF16::Sin),
            Op::VCosF16 => Some(UnaryF16::Cos),
            Op::VFractF16 => Some(UnaryF16::Fract),
            Op::VTruncF16 => Some(UnaryF16::Trunc),
            Op::VCeilF16 => Some(UnaryF16::Ceil),
            Op::VFloorF16 => Some(UnaryF16::Floor),
            Op::VRndneF16 => Some(UnaryF16::Rndne),
            _ => None,
        };
        let mut r = [0u16; WAVE_SIZE];
        let mut float_out = true;
        for l in 0..WAVE_SIZE {
            let (a, b, d) = (src[0][l], src[1][l], src[2][l]);
            r[l] = match op {
                Op::VFmaF16 => h::fma_f16(a, b, d, mode),
                Op::VMadF16 | Op::VMacF16 => h::mad_f16(a, b, d, mode),
                Op::VDivFixupF16 => h::div_fixup_f16(a, b, d),
                Op::VMaxF16 => h::minmax_f16(a, b, mode, true),
                Op::VMinF16 => h::minmax_f16(a, b, mode, false),
                Op::VMax3F16 => h::minmax_f16(h::minmax_f16(a, b, mode, true), d, mode, true),
                Op::VMin3F16 => h::minmax_f16(h::minmax_f16(a, b, mode, false), d, mode, false),
                Op::VMed3F16 => h::med3_f16(a, b, d, mode),
                Op::VLdexpF16 => h::ldexp_f16(a, u32::from(b), mode),
                Op::VFrexpMantF16 => h::frexp_mant_f16(a, mode),
                Op::VFrexpExpI16F16 => {
                    float_out = false;
                    h::frexp_exp_f16(a, mode)
                }
                Op::VCvtF16U16 => h::cvt_f16_int(a, false, mode),
                Op::VCvtF16I16 => h::cvt_f16_int(a, true, mode),
                Op::VCvtU16F16 => {
                    float_out = false;
                    h::cvt_int_f16(a, false, mode)
                }
                Op::VCvtI16F16 => {
                    float_out = false;
                    h::cvt_int_f16(a, true, mode)
                }
                Op::VMadU16 => {
                    float_out = false;
                    h::packed_int16(PackedInt::MadU16, a, b, d, m.clamp)
                }
                Op::VMadI16 => {
                    float_out = false;
                    h::packed_int16(PackedInt::MadI16, a, b, d, m.clamp)
                }
                Op::VAddI16 => {
                    float_out = false;
                    h::packed_int16(PackedInt::AddI16, a, b, 0, m.clamp)
                }
                Op::VSubI16 => {
                    float_out = false;
                    h::packed_int16(PackedInt::SubI16, a, b, 0, m.clamp)
                }
                Op::VMax3U16 | Op::VMin3U16 | Op::VMed3U16 => {
                    float_out = false;
                    match op {
                        Op::VMax3U16 => a.max(b).max(d),
                        Op::VMin3U16 => a.min(b).min(d),
                        _ => med3(a, b, d),
                    }
                }
                Op::VMax3I16 | Op::VMin3I16 | Op::VMed3I16 => {
                    float_out = false;
                    let (a, b, d) = (a as i16, b as i16, d as i16);
                    (match op {
                        Op::VMax3I16 => a.max(b).max(d),
                        Op::VMin3I16 => a.min(b).min(d),
                        _ => med3(a, b, d),
                    }) as u16
                }
                u => match unary(u) {
                    Some(f) => h::unary_f16(f, a, mode),
                    None => return Err(illegal(self.pc, c)),
                },
            };
        }
        if float_out && (m.clamp || m.omod != 0) {
            for x in r.iter_mut() {
                *x = h::modify_out16(*x, m.omod, m.clamp, mode);
            }
        }
        let Some(dst) = opnd(c, Field::D) else {
            return Ok(());
        };
        let exec = self.exec();
        // v_mac_f16 keeps bits 31:16 on gfx9 (it zeroed them on gfx8)
        let keeps_high = with_op_sel || op == Op::VMacF16;
        let mut out = if keeps_high {
            // gfx9's op_sel forms keep the half they do not write
            self.vread32(dst, SrcType::Int)?
        } else {
            [0u32; WAVE_SIZE]
        };
        let hi = (op_sel >> 3) & 1 != 0;
        for l in 0..WAVE_SIZE {
            if keeps_high {
                out[l] = if hi {
                    (out[l] & 0xffff) | (u32::from(r[l]) << 16)
                } else {
                    (out[l] & 0xffff_0000) | u32::from(r[l])
                };
            } else {
                out[l] = u32::from(r[l]);
            }
        }
        self.vwrite32(dst, &out, exec)
    }

    /// `v_mad_u32_u16` and `v_mad_i32_i16`: a 16-bit product (each factor the half of its
    /// source that `op_sel` names, zero- or sign-extended) plus the 32-bit third source;
    /// clamp saturates the 32-bit sum.
    pub(super) fn mad_32_16(&mut self, c: &Cached) -> R<()> {
        let signed = c.inst.op == Op::VMadI32I16;
        let m = mods_of(c);
        let op_sel = (c.inst.words[0] >> 11) & 3;
        let a = self.raw_src32(c, Field::A, false)?;
        let b = self.raw_src32(c, Field::B, false)?;
        let d = self.raw_src32(c, Field::C, false)?;
        let half = |x: u32, i: u32| -> i64 {
            let h = if (op_sel >> i) & 1 != 0 { x >> 16 } else { x } as u16;
            if signed {
                i64::from(h as i16)
            } else {
                i64::from(h)
            }
        };
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            let addend = if signed {
                i64::from(d[l] as i32)
            } else {
                i64::from(d[l])
            };
            let sum = half(a[l], 0) * half(b[l], 1) + addend;
            r[l] = match (m.clamp, signed) {
                (true, true) => sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32,
                (true, false) => sum.clamp(0, i64::from(u32::MAX)) as u32,
                _ => sum as u32,
            };
        }
        let Some(dst) = opnd(c, Field::D) else {
            return Ok(());
        };
        let exec = self.exec();
        self.vwrite32(dst, &r, exec)
    }

    /// The VOP3P instructions other than `v_pk_mov_b32` and MFMA.
    pub(super) fn vop3p(&mut self, c: &Cached) -> R<()> {
        let op = c.inst.op;
        match op {
            Op::VPkAddF32 | Op::VPkMulF32 | Op::VPkFmaF32 => return self.packed_f32(c),
            Op::VMadMixF32
            | Op::VFmaMixF32
            | Op::VMadMixloF16
            | Op::VFmaMixloF16
            | Op::VMadMixhiF16
            | Op::VFmaMixhiF16 => return self.mix(c),
            Op::VDot2F32F16
            | Op::VDot2I32I16
            | Op::VDot2U32U16
            | Op::VDot4I32I8
            | Op::VDot4U32U8
            | Op::VDot8I32I4
            | Op::VDot8U32U4 => return self.dot(c),
            _ => {}
        }
        let pm = packed_mods(c);
        let mode = self.mode;
        let int = |k| Some(Err(k));
        let (kind, n): (Option<Result<u8, PackedInt>>, usize) = match op {
            Op::VPkAddF16 => (Some(Ok(0)), 2),
            Op::VPkMulF16 => (Some(Ok(1)), 2),
            Op::VPkFmaF16 => (Some(Ok(2)), 3),
            Op::VPkMaxF16 => (Some(Ok(3)), 2),
            Op::VPkMinF16 => (Some(Ok(4)), 2),
            Op::VPkAddU16 => (int(PackedInt::AddU16), 2),
            Op::VPkSubU16 => (int(PackedInt::SubU16), 2),
            Op::VPkAddI16 => (int(PackedInt::AddI16), 2),
            Op::VPkSubI16 => (int(PackedInt::SubI16), 2),
            Op::VPkMulLoU16 => (int(PackedInt::MulLoU16), 2),
            Op::VPkMadU16 => (int(PackedInt::MadU16), 3),
            Op::VPkMadI16 => (int(PackedInt::MadI16), 3),
            Op::VPkLshlrevB16 => (int(PackedInt::LshlrevB16), 2),
            Op::VPkLshrrevB16 => (int(PackedInt::LshrrevB16), 2),
            Op::VPkAshrrevI16 => (int(PackedInt::AshrrevI16), 2),
            Op::VPkMaxU16 => (int(PackedInt::MaxU16), 2),
            Op::VPkMinU16 => (int(PackedInt::MinU16), 2),
            Op::VPkMaxI16 => (int(PackedInt::MaxI16), 2),
            Op::VPkMinI16 => (int(PackedInt::MinI16), 2),
            _ => (None, 0),
        };
        let Some(kind) = kind else {
            return Err(illegal(self.pc, c));
        };
        let float = kind.is_ok();
        let mut src = [[0u32; WAVE_SIZE]; 3];
        for (i, field) in SRC_FIELDS.into_iter().enumerate().take(n) {
            src[i] = self.raw_src32(c, field, true)?;
        }
        let mut out = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            let mut halves = [0u16; 2];
            for (half, sel_bits, neg_bits) in
                [(0, pm.op_sel, pm.neg_lo), (1, pm.op_sel_hi, pm.neg_hi)]
            {
                let mut x = [0u16; 3];
                for i in 0..n {
                    let v = src[i][l];
                    let mut s = if (sel_bits >> i) & 1 != 0 { v >> 16 } else { v } as u16;
                    if float && (neg_bits >> i) & 1 != 0 {
                        s ^= 0x8000;
                    }
                    x[i] = s;
                }
                halves[half] = match kind {
                    Ok(0) => h::fma_f16(x[0], 0x3c00, x[1], mode), // a*1+b: one rounding
                    Ok(1) => h::fma_f16(x[0], x[1], 0x8000, mode), // a*b + -0: exact product
                    Ok(2) => h::fma_f16(x[0], x[1], x[2], mode),
                    Ok(3) => h::minmax_f16(x[0], x[1], mode, true),
                    Ok(_) => h::minmax_f16(x[0], x[1], mode, false),
                    Err(k) => h::packed_int16(k, x[0], x[1], x[2], pm.clamp),
                };
                if float && pm.clamp {
                    halves[half] = h::modify_out16(halves[half], 0, true, mode);
                }
            }
            out[l] = u32::from(halves[0]) | (u32::from(halves[1]) << 16);
        }
        let exec = self.exec();
        match opnd(c, Field::D) {
            Some(d) => self.vwrite32(d, &out, exec),
            None => Ok(()),
        }
    }

    /// A 64-bit source of a packed-f32 op: register pairs as they are, a constant or literal
    /// in both dwords.
    fn packed_f32_src(&self, c: &Cached, field: Field) -> R<[u64; WAVE_SIZE]> {
        let Some(op) = opnd(c, field) else {
            return Ok([0; WAVE_SIZE]);
        };
        match op {
            Operand::Vgpr { .. } | Operand::Agpr { .. } => self.vread64(op, SrcType::F32),
            _ if scalar_index(op).is_some() => self.vread64(op, SrcType::Int),
            _ => {
                let v = self.sread(op, SrcType::F32, false) & 0xffff_ffff;
                Ok([v | (v << 32); WAVE_SIZE])
            }
        }
    }

    /// gfx90a's `v_pk_add_f32`, `v_pk_mul_f32`, `v_pk_fma_f32`: two f32 lanes in a register
    /// pair, op_sel choosing the dword each lane of each source reads.
    fn packed_f32(&mut self, c: &Cached) -> R<()> {
        let op = c.inst.op;
        let pm = packed_mods(c);
        let mode = self.mode;
        let n = if op == Op::VPkFmaF32 { 3 } else { 2 };
        let mut src = [[0u64; WAVE_SIZE]; 3];
        for (i, field) in SRC_FIELDS.into_iter().enumerate().take(n) {
            src[i] = self.packed_f32_src(c, field)?;
        }
        let mut out = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            let mut r = [0u32; 2];
            for (half, sel_bits, neg_bits) in
                [(0, pm.op_sel, pm.neg_lo), (1, pm.op_sel_hi, pm.neg_hi)]
            {
                let mut x = [0u32; 3];
                for i in 0..n {
                    let v = src[i][l];
                    let mut s = if (sel_bits >> i) & 1 != 0 { v >> 32 } else { v } as u32;
                    if (neg_bits >> i) & 1 != 0 {
                        s ^= 0x8000_0000;
                    }
                    x[i] = s;
                }
                let v = match op {
                    Op::VPkAddF32 => fp::add_f32(x[0], x[1], mode),
                    Op::VPkMulF32 => fp::mul_f32(x[0], x[1], mode),
                    _ => fp::fma_f32(x[0], x[1], x[2], mode),
                };
                r[half] = if pm.clamp {
                    fp::modify_out32(f32::from_bits(v), 0, true, mode).to_bits()
                } else {
                    v
                };
            }
            out[l] = u64::from(r[0]) | (u64::from(r[1]) << 32);
        }
        let exec = self.exec();
        match opnd(c, Field::D) {
            Some(d) => self.vwrite64(d, &out, exec),
            None => Ok(()),
        }
    }

    /// `v_{mad,fma}_mix{_f32,lo_f16,hi_f16}`: each source is f32 (`op_sel_hi[i]` = 0) or the
    /// f16 half `op_sel[i]` picks, converted exactly; `neg_lo` negates and `neg_hi` takes
    /// the absolute value; the f32 result, or its f16 rounding into one half of the
    /// destination (the other half kept).
    fn mix(&mut self, c: &Cached) -> R<()> {
        let op = c.inst.op;
        let pm = packed_mods(c);
        let mode = self.mode;
        let mut src = [[0u32; WAVE_SIZE]; 3];
        for (i, field) in SRC_FIELDS.into_iter().enumerate() {
            let Some(o) = opnd(c, field) else { continue };
            let f16 = (pm.op_sel_hi >> i) & 1 != 0;
            // a constant is an f16 bit pattern for an f16 source, f32 otherwise
            let ty = if f16 { SrcType::F16 } else { SrcType::F32 };
            let raw = self.vread32(o, ty)?;
            for l in 0..WAVE_SIZE {
                let mut x = if f16 {
                    let half = if (pm.op_sel >> i) & 1 != 0 {
                        raw[l] >> 16
                    } else {
                        raw[l]
                    } as u16;
                    fp::f16_to_f32(half).to_bits()
                } else {
                    raw[l]
                };
                if (pm.neg_hi >> i) & 1 != 0 {
                    x &= 0x7fff_ffff;
                }
                if (pm.neg_lo >> i) & 1 != 0 {
                    x ^= 0x8000_0000;
                }
                src[i][l] = x;
            }
        }
        let fused = matches!(op, Op::VFmaMixF32 | Op::VFmaMixloF16 | Op::VFmaMixhiF16);
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            let (a, b, d) = (src[0][l], src[1][l], src[2][l]);
            let v = if fused {
                fp::fma_f32(a, b, d, mode)
            } else {
                fp::mad_f32(a, b, d, mode)
            };
            r[l] = if pm.clamp {
                fp::modify_out32(f32::from_bits(v), 0, true, mode).to_bits()
            } else {
                v
            };
        }
        let Some(dst) = opnd(c, Field::D) else {
            return Ok(());
        };
        let exec = self.exec();
        let out = match op {
            Op::VMadMixF32 | Op::VFmaMixF32 => r,
            _ => {
                let mut old = self.vread32(dst, SrcType::Int)?;
                let hi = matches!(op, Op::VMadMixhiF16 | Op::VFmaMixhiF16);
                for l in 0..WAVE_SIZE {
                    let hbits =
                        u32::from(fp::f32_to_f16(f32::from_bits(r[l]), mode.round_f64_f16()));
                    old[l] = if hi {
                        (old[l] & 0xffff) | (hbits << 16)
                    } else {
                        (old[l] & 0xffff_0000) | hbits
                    };
                }
                old
            }
        };
        self.vwrite32(dst, &out, exec)
    }

    /// The dot products (gfx906/gfx90a). Only the default operand selection is modelled
    /// (`op_sel` 0, `op_sel_hi` 1 for the two packed sources, no neg): anything else is an
    /// illegal-instruction fault rather than a silently different result. SRC2 is a 32-bit
    /// accumulator whose `op_sel_hi` bit selects nothing: clang-15 sets it, clang-17 clears it.
    fn dot(&mut self, c: &Cached) -> R<()> {
        let op = c.inst.op;
        let pm = packed_mods(c);
        if pm.op_sel != 0 || pm.op_sel_hi & 3 != 3 || pm.neg_lo != 0 || pm.neg_hi != 0 {
            return Err(illegal(self.pc, c));
        }
        let mode = self.mode;
        let a = self.raw_src32(c, Field::A, false)?;
        let b = self.raw_src32(c, Field::B, false)?;
        let d = {
            let Some(o) = opnd(c, Field::C) else {
                return Err(illegal(self.pc, c));
            };
            let ty = if op == Op::VDot2F32F16 {
                SrcType::F32
            } else {
                SrcType::Int
            };
            self.vread32(o, ty)?
        };
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = match op {
                Op::VDot2F32F16 => {
                    let v = h::dot2_f32_f16(a[l], b[l], d[l], mode);
                    if pm.clamp {
                        fp::modify_out32(f32::from_bits(v), 0, true, mode).to_bits()
                    } else {
                        v
                    }
                }
                Op::VDot2I32I16 => h::dot_int(a[l], b[l], d[l], 2, true, pm.clamp),
                Op::VDot2U32U16 => h::dot_int(a[l], b[l], d[l], 2, false, pm.clamp),
                Op::VDot4I32I8 => h::dot_int(a[l], b[l], d[l], 4, true, pm.clamp),
                Op::VDot4U32U8 => h::dot_int(a[l], b[l], d[l], 4, false, pm.clamp),
                Op::VDot8I32I4 => h::dot_int(a[l], b[l], d[l], 8, true, pm.clamp),
                _ => h::dot_int(a[l], b[l], d[l], 8, false, pm.clamp),
            };
        }
        let exec = self.exec();
        match opnd(c, Field::D) {
            Some(dst) => self.vwrite32(dst, &r, exec),
            None => Ok(()),
        }
    }

    /// `v_trig_preop_f64`: source 0 f64 (abs/neg apply), source 1 the segment index.
    pub(super) fn trig_preop(&mut self, c: &Cached) -> R<()> {
        let m = mods_of(c);
        let a = self.src64(c, Field::A, 0, m)?;
        let b = self.src32(c, Field::B, 1, Mods::default())?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = h::trig_preop_f64(a[l], b[l]);
        }
        self.dst64(c, r, m, true)
    }
}

impl Wave {
    /// `v_madmk_{f32,f16}` (`a * K + b`) and `v_madak_{f32,f16}` (`a * b + K`), K the
    /// instruction's literal; the f16 forms keep bits 31:16 on gfx9.
    pub(super) fn mad_literal(&mut self, c: &Cached) -> R<()> {
        let op = c.inst.op;
        let Some(k) = c.inst.literal else {
            return Err(illegal(self.pc, c));
        };
        let mode = self.mode;
        let a = self.raw_src32(c, Field::A, false)?;
        let b = self.raw_src32(c, Field::B, false)?;
        let Some(dst) = opnd(c, Field::D) else {
            return Ok(());
        };
        let mut out = self.vread32(dst, SrcType::Int)?;
        for l in 0..WAVE_SIZE {
            out[l] = match op {
                Op::VMadmkF32 => fp::mad_f32(a[l], k, b[l], mode),
                Op::VMadakF32 => fp::mad_f32(a[l], b[l], k, mode),
                Op::VMadmkF16 => {
                    (out[l] & 0xffff_0000)
                        | u32::from(h::mad_f16(a[l] as u16, k as u16, b[l] as u16, mode))
                }
                _ => {
                    (out[l] & 0xffff_0000)
                        | u32::from(h::mad_f16(a[l] as u16, b[l] as u16, k as u16, mode))
                }
            };
        }
        let exec = self.exec();
        self.vwrite32(dst, &out, exec)
    }

    /// `v_pack_b32_f16`: source 0's f16 into bits 15:0, source 1's into 31:16 (op_sel picks
    /// each source's high half; abs/neg apply to the f16 values).
    pub(super) fn pack_b32_f16(&mut self, c: &Cached) -> R<()> {
        let m = mods_of(c);
        let op_sel = (c.inst.words[0] >> 11) & 3;
        let a = self.raw_src32(c, Field::A, false)?;
        let b = self.raw_src32(c, Field::B, false)?;
        let half = |v: u32, i: u32| {
            let mut x = if (op_sel >> i) & 1 != 0 { v >> 16 } else { v } & 0xffff;
            if (m.abs >> i) & 1 != 0 {
                x &= 0x7fff;
            }
            if (m.neg >> i) & 1 != 0 {
                x ^= 0x8000;
            }
            x
        };
        let mut out = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            out[l] = half(a[l], 0) | (half(b[l], 1) << 16);
        }
        let exec = self.exec();
        match opnd(c, Field::D) {
            Some(d) => self.vwrite32(d, &out, exec),
            None => Ok(()),
        }
    }

    /// gfx908/gfx90a's accumulating dot products (VOP2): `v_dot2c_f32_f16` and
    /// `v_dot4c_i32_i8` add the dot product of the two sources to the destination.
    pub(super) fn dot_accumulate(&mut self, c: &Cached) -> R<()> {
        let mode = self.mode;
        let a = self.raw_src32(c, Field::A, false)?;
        let b = self.raw_src32(c, Field::B, false)?;
        let Some(dst) = opnd(c, Field::D) else {
            return Ok(());
        };
        let d = self.vread32(dst, SrcType::Int)?;
        let mut out = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            out[l] = if c.inst.op == Op::VDot2cF32F16 {
                h::dot2_f32_f16(a[l], b[l], d[l], mode)
            } else {
                h::dot_int(a[l], b[l], d[l], 4, true, false)
            };
        }
        let exec = self.exec();
        self.vwrite32(dst, &out, exec)
    }
}
