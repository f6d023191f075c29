//! The vector ALU: VOP1/VOP2/VOP3 operations (`valu`), vector compares (`vcmp`) and
//! the ops that write several registers (`v_qsad`/`v_mqsad`, `v_swap_b32`).

use super::operands::{mods_of, Mods};
use super::{illegal, opnd, Wave, R};
use crate::decode::Operand;
use crate::exec::cache::{Cached, CmpType, SrcType};
use crate::exec::float as fp;
use crate::exec::int;
use crate::exec::lanes;
use crate::exec::media;
use crate::exec::wave::{write_masked, WAVE_SIZE};
use crate::table::{Enc, Field, Op};

impl Wave {
    pub(super) fn valu(&mut self, c: &Cached) -> R<()> {
        if self.sdwa_src.is_none() && !self.in_dpp64 {
            match c.inst.ext {
                crate::decode::Ext::None => {}
                crate::decode::Ext::Sdwa => return self.sdwa(c),
                crate::decode::Ext::Dpp => return self.dpp(c),
            }
        }
        if let Some(cmp) = c.cmp {
            return self.vcmp(c, cmp);
        }
        let m = mods_of(c);
        let mode = self.mode;
        let exec = self.exec();
        let op = c.inst.op;
        // each lane loop lives in its own small monomorphised function (no giant frame)
        macro_rules! un32 {
            ($f:expr, $float:expr) => {
                self.lanes1(c, m, $float, $f)
            };
        }
        macro_rules! bin32 {
            ($f:expr, $float:expr) => {
                self.lanes2(c, m, $float, $f)
            };
        }
        macro_rules! tri32 {
            ($f:expr, $float:expr) => {
                self.lanes3(c, m, $float, $f)
            };
        }
        macro_rules! un64 {
            ($f:expr) => {
                self.lanes64_1(c, m, $f)
            };
        }
        macro_rules! bin64 {
            ($f:expr) => {
                self.lanes64_2(c, m, $f)
            };
        }
        macro_rules! tri64 {
            ($f:expr) => {
                self.lanes64_3(c, m, $f)
            };
        }
        // f64 result from a 32-bit source
        macro_rules! widen {
            ($f:expr) => {
                self.lanes_widen(c, m, $f)
            };
        }
        // 32-bit result from an f64 source
        macro_rules! narrow {
            ($f:expr, $float:expr) => {
                self.lanes_narrow(c, m, $float, $f)
            };
        }
        let clamp = m.clamp;
        match op {
            Op::VNop => Ok(()),
            Op::VMovB32 | Op::VAccvgprReadB32 | Op::VAccvgprWriteB32 | Op::VAccvgprMovB32 => {
                un32!(|a| a, false)
            }
            Op::VReadfirstlaneB32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let v = lanes::readfirstlane(&a, exec);
                if let Some(d) = opnd(c, Field::D) {
                    self.swrite(d, v.into(), false);
                }
                Ok(())
            }
            Op::VReadlaneB32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let lane = opnd(c, Field::B).map_or(0, |o| self.sread(o, SrcType::Int, false))
                    as usize
                    & 63;
                if let Some(d) = opnd(c, Field::D) {
                    self.swrite(d, a[lane].into(), false);
                }
                Ok(())
            }
            Op::VWritelaneB32 => {
                let v = opnd(c, Field::A).map_or(0, |o| self.sread(o, SrcType::Int, false)) as u32;
                let lane = opnd(c, Field::B).map_or(0, |o| self.sread(o, SrcType::Int, false))
                    as usize
                    & 63;
                if let Some(Operand::Vgpr { first, .. }) = opnd(c, Field::D) {
                    self.v_mut(usize::from(first))?[lane] = v;
                }
                Ok(())
            }
            Op::VCndmaskB32 => {
                let sel = self.mask_in(c);
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = if (sel >> l) & 1 != 0 { b[l] } else { a[l] };
                }
                self.dst32(c, r, m, false)
            }
            // f32 arithmetic
            Op::VAddF32 => bin32!(|a, b| fp::add_f32(a, b, mode), true),
            Op::VSubF32 => bin32!(|a, b| fp::add_f32(a, b ^ 0x8000_0000, mode), true),
            Op::VSubrevF32 => bin32!(|a: u32, b| fp::add_f32(b, a ^ 0x8000_0000, mode), true),
            Op::VMulF32 => bin32!(|a, b| fp::mul_f32(a, b, mode), true),
            Op::VMulLegacyF32 => bin32!(
                |a: u32, b: u32| if a & 0x7fff_ffff == 0 || b & 0x7fff_ffff == 0 {
                    0
                } else {
                    fp::mul_f32(a, b, mode)
                },
                true
            ),
            Op::VMinF32 => bin32!(|a, b| fp::min_f32(a, b, mode), true),
            Op::VMaxF32 => bin32!(|a, b| fp::max_f32(a, b, mode), true),
            Op::VFmaF32 => tri32!(|a, b, d| fp::fma_f32(a, b, d, mode), true),
            Op::VMadF32 | Op::VMadLegacyF32 => tri32!(|a, b, d| fp::mad_f32(a, b, d, mode), true),
            Op::VFmacF32 | Op::VMacF32 => {
                let d = match opnd(c, Field::D) {
                    Some(o) => self.vread32(o, SrcType::F32)?,
                    None => [0; WAVE_SIZE],
                };
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = if op == Op::VFmacF32 {
                        fp::fma_f32(a[l], b[l], d[l], mode)
                    } else {
                        fp::mad_f32(a[l], b[l], d[l], mode)
                    };
                }
                self.dst32(c, r, m, true)
            }
            Op::VMin3F32 => tri32!(
                |a, b, d| fp::min_f32(fp::min_f32(a, b, mode), d, mode),
                true
            ),
            Op::VMax3F32 => tri32!(
                |a, b, d| fp::max_f32(fp::max_f32(a, b, mode), d, mode),
                true
            ),
            Op::VMed3F32 => tri32!(|a, b, d| fp::med3_f32(a, b, d, mode), true),
            Op::VLdexpF32 => bin32!(|a, b| fp::ldexp_f32(a, b, mode), true),
            Op::VRcpF32 | Op::VRcpIflagF32 => un32!(|a| fp::rcp_f32(a, mode), true),
            Op::VRsqF32 => un32!(|a| fp::rsq_f32(a, mode), true),
            Op::VSqrtF32 => un32!(|a| fp::sqrt_f32(a, mode), true),
            Op::VExpF32 => un32!(|a| fp::exp_f32(a, mode), true),
            Op::VLogF32 => un32!(|a| fp::log_f32(a, mode), true),
            Op::VSinF32 => un32!(|a| fp::sin_f32(a, mode), true),
            Op::VCosF32 => un32!(|a| fp::cos_f32(a, mode), true),
            Op::VFractF32 => un32!(|a| fp::fract_f32(a, mode), true),
            Op::VTruncF32 => un32!(|a| f32::from_bits(a).trunc().to_bits(), true),
            Op::VCeilF32 => un32!(|a| f32::from_bits(a).ceil().to_bits(), true),
            Op::VFloorF32 => un32!(|a| f32::from_bits(a).floor().to_bits(), true),
            Op::VRndneF32 => un32!(fp::rndne_f32, true),
            Op::VFrexpMantF32 => un32!(fp::frexp_mant_f32, true),
            Op::VFrexpExpI32F32 => un32!(fp::frexp_exp_f32, false),
            Op::VDivScaleF32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let d = self.src32(c, Field::C, 2, m)?;
                let mut r = [0u32; WAVE_SIZE];
                let mut vcc = 0u64;
                for l in 0..WAVE_SIZE {
                    let (v, flag) = fp::div_scale_f32(a[l], b[l], d[l]);
                    r[l] = v;
                    vcc |= u64::from(flag) << l;
                }
                self.mask_out(c, vcc & exec);
                self.dst32(c, r, m, true)
            }
            Op::VDivFmasF32 => {
                let vcc = self.vcc();
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let d = self.src32(c, Field::C, 2, m)?;
                let mut r = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = fp::div_fmas_f32(a[l], b[l], d[l], (vcc >> l) & 1 != 0, mode);
                }
                self.dst32(c, r, m, true)
            }
            Op::VDivFixupF32 => tri32!(fp::div_fixup_f32, true),
            // f64 arithmetic
            Op::VAddF64 => bin64!(|a, b| fp::add_f64(a, b, mode)),
            Op::VMulF64 => bin64!(|a, b| fp::mul_f64(a, b, mode)),
            Op::VMinF64 => bin64!(|a, b| fp::min_f64(a, b, mode)),
            Op::VMaxF64 => bin64!(|a, b| fp::max_f64(a, b, mode)),
            Op::VFmaF64 => tri64!(|a, b, d| fp::fma_f64(a, b, d, mode)),
            Op::VFmacF64 => {
                let d = match opnd(c, Field::D) {
                    Some(o) => self.vread64(o, SrcType::F64)?,
                    None => [0; WAVE_SIZE],
                };
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src64(c, Field::B, 1, m)?;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = fp::fma_f64(a[l], b[l], d[l], mode);
                }
                self.dst64(c, r, m, true)
            }
            Op::VLdexpF64 => {
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, Mods::default())?;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = fp::ldexp_f64(a[l], b[l], mode);
                }
                self.dst64(c, r, m, true)
            }
            Op::VRcpF64 => un64!(|a| fp::rcp_f64(a, mode)),
            Op::VRsqF64 => un64!(|a| fp::rsq_f64(a, mode)),
            Op::VSqrtF64 => un64!(|a| fp::sqrt_f64(a, mode)),
            Op::VFractF64 => un64!(|a| fp::fract_f64(a, mode)),
            Op::VTruncF64 => un64!(|a| f64::from_bits(a).trunc().to_bits()),
            Op::VCeilF64 => un64!(|a| f64::from_bits(a).ceil().to_bits()),
            Op::VFloorF64 => un64!(|a| f64::from_bits(a).floor().to_bits()),
            Op::VRndneF64 => un64!(fp::rndne_f64),
            Op::VFrexpMantF64 => un64!(fp::frexp_mant_f64),
            Op::VFrexpExpI32F64 => narrow!(fp::frexp_exp_f64, false),
            Op::VDivScaleF64 => {
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src64(c, Field::B, 1, m)?;
                let d = self.src64(c, Field::C, 2, m)?;
                let mut r = [0u64; WAVE_SIZE];
                let mut vcc = 0u64;
                for l in 0..WAVE_SIZE {
                    let (v, flag) = fp::div_scale_f64(a[l], b[l], d[l]);
                    r[l] = v;
                    vcc |= u64::from(flag) << l;
                }
                self.mask_out(c, vcc & exec);
                self.dst64(c, r, m, true)
            }
            Op::VDivFmasF64 => {
                let vcc = self.vcc();
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src64(c, Field::B, 1, m)?;
                let d = self.src64(c, Field::C, 2, m)?;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = fp::div_fmas_f64(a[l], b[l], d[l], (vcc >> l) & 1 != 0, mode);
                }
                self.dst64(c, r, m, true)
            }
            Op::VDivFixupF64 => tri64!(fp::div_fixup_f64),
            // conversions
            Op::VCvtI32F32 => un32!(|a| fp::cvt_i32_f32(a, mode), false),
            Op::VCvtU32F32 => un32!(|a| fp::cvt_u32_f32(a, mode), false),
            Op::VCvtF32I32 => un32!(|a| fp::cvt_f32_i32(a, mode), true),
            Op::VCvtF32U32 => un32!(|a| fp::cvt_f32_u32(a, mode), true),
            Op::VCvtRpiI32F32 => un32!(|a| (f32::from_bits(a) + 0.5).floor() as i32 as u32, false),
            Op::VCvtFlrI32F32 => un32!(|a| f32::from_bits(a).floor() as i32 as u32, false),
            Op::VCvtF32Ubyte0 => un32!(|a| fp::cvt_f32_ubyte(a, 0), false),
            Op::VCvtF32Ubyte1 => un32!(|a| fp::cvt_f32_ubyte(a, 1), false),
            Op::VCvtF32Ubyte2 => un32!(|a| fp::cvt_f32_ubyte(a, 2), false),
            Op::VCvtF32Ubyte3 => un32!(|a| fp::cvt_f32_ubyte(a, 3), false),
            Op::VCvtF16F32 => un32!(|a| fp::cvt_f16_f32(a, mode), false),
            Op::VCvtF32F16 => un32!(|a| fp::cvt_f32_f16(a, mode), true),
            Op::VCvtPkrtzF16F32 => bin32!(|a, b| fp::cvt_pkrtz_f16_f32(a, b, mode), false),
            Op::VCvtF64F32 => widen!(|a| fp::cvt_f64_f32(a, mode)),
            Op::VCvtF64I32 => widen!(fp::cvt_f64_i32),
            Op::VCvtF64U32 => widen!(fp::cvt_f64_u32),
            Op::VCvtF32F64 => narrow!(|a| fp::cvt_f32_f64(a, mode), true),
            Op::VCvtI32F64 => narrow!(fp::cvt_i32_f64, false),
            Op::VCvtU32F64 => narrow!(fp::cvt_u32_f64, false),
            // f16 arithmetic (low halves; the high half of the destination is zeroed)
            Op::VAddF16 => bin32!(|a, b| fp::f16_binop(a, b, mode, |x, y| x + y), false),
            Op::VSubF16 => bin32!(|a, b| fp::f16_binop(a, b, mode, |x, y| x - y), false),
            Op::VSubrevF16 => bin32!(|a, b| fp::f16_binop(a, b, mode, |x, y| y - x), false),
            Op::VMulF16 => bin32!(|a, b| fp::f16_binop(a, b, mode, |x, y| x * y), false),
            // integer
            Op::VAddU32 => bin32!(
                |a, b| if clamp {
                    int::add_u32_clamped(a, b)
                } else {
                    a.wrapping_add(b)
                },
                false
            ),
            Op::VSubU32 => bin32!(
                |a, b| if clamp {
                    int::sub_u32_clamped(a, b)
                } else {
                    a.wrapping_sub(b)
                },
                false
            ),
            Op::VSubrevU32 => bin32!(
                |a: u32, b: u32| if clamp {
                    int::sub_u32_clamped(b, a)
                } else {
                    b.wrapping_sub(a)
                },
                false
            ),
            Op::VAddI32 => bin32!(
                |a: u32, b: u32| if clamp {
                    (a as i32).saturating_add(b as i32) as u32
                } else {
                    a.wrapping_add(b)
                },
                false
            ),
            Op::VSubI32 => bin32!(
                |a: u32, b: u32| if clamp {
                    (a as i32).saturating_sub(b as i32) as u32
                } else {
                    a.wrapping_sub(b)
                },
                false
            ),
            Op::VAddCoU32 | Op::VSubCoU32 | Op::VSubrevCoU32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                let mut carry = 0u64;
                for l in 0..WAVE_SIZE {
                    let (v, cy) = match op {
                        Op::VAddCoU32 => int::add_co(a[l], b[l]),
                        Op::VSubCoU32 => int::sub_co(a[l], b[l]),
                        _ => int::sub_co(b[l], a[l]),
                    };
                    r[l] = if clamp {
                        if cy {
                            if op == Op::VAddCoU32 {
                                u32::MAX
                            } else {
                                0
                            }
                        } else {
                            v
                        }
                    } else {
                        v
                    };
                    carry |= u64::from(cy) << l;
                }
                self.mask_out(c, carry & exec);
                self.dst32(c, r, m, false)
            }
            Op::VAddcCoU32 | Op::VSubbCoU32 | Op::VSubbrevCoU32 => {
                let cin = self.mask_in(c);
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                let mut carry = 0u64;
                for l in 0..WAVE_SIZE {
                    let ci = (cin >> l) & 1 != 0;
                    let (v, cy) = match op {
                        Op::VAddcCoU32 => int::addc(a[l], b[l], ci),
                        Op::VSubbCoU32 => int::subb(a[l], b[l], ci),
                        _ => int::subb(b[l], a[l], ci),
                    };
                    r[l] = v;
                    carry |= u64::from(cy) << l;
                }
                self.mask_out(c, carry & exec);
                self.dst32(c, r, m, false)
            }
            Op::VMulLoU32 => bin32!(|a: u32, b| a.wrapping_mul(b), false),
            Op::VMulHiU32 => bin32!(int::mul_hi_u32, false),
            Op::VMulHiI32 => bin32!(int::mul_hi_i32, false),
            Op::VMulU32U24 => bin32!(int::mul_u32_u24, false),
            Op::VMulHiU32U24 => bin32!(int::mul_hi_u32_u24, false),
            Op::VMulI32I24 => bin32!(int::mul_i32_i24, false),
            Op::VMulHiI32I24 => bin32!(int::mul_hi_i32_i24, false),
            Op::VMadU32U24 => tri32!(|a, b, d: u32| int::mul_u32_u24(a, b).wrapping_add(d), false),
            Op::VMadI32I24 => tri32!(|a, b, d: u32| int::mul_i32_i24(a, b).wrapping_add(d), false),
            Op::VMadU64U32 | Op::VMadI64I32 => {
                let a = self.src32(c, Field::A, 0, Mods::default())?;
                let b = self.src32(c, Field::B, 1, Mods::default())?;
                let d = match opnd(c, Field::C) {
                    Some(o) => self.vread64(o, SrcType::Int)?,
                    None => [0; WAVE_SIZE],
                };
                let mut r = [0u64; WAVE_SIZE];
                let mut carry = 0u64;
                for l in 0..WAVE_SIZE {
                    let (v, cy) = if op == Op::VMadU64U32 {
                        int::mad_u64_u32(a[l], b[l], d[l])
                    } else {
                        int::mad_i64_i32(a[l], b[l], d[l])
                    };
                    r[l] = v;
                    carry |= u64::from(cy) << l;
                }
                self.mask_out(c, carry & exec);
                self.dst64(c, r, Mods::default(), false)
            }
            Op::VMinI32 => bin32!(|a: u32, b: u32| (a as i32).min(b as i32) as u32, false),
            Op::VMaxI32 => bin32!(|a: u32, b: u32| (a as i32).max(b as i32) as u32, false),
            Op::VMinU32 => bin32!(|a: u32, b: u32| a.min(b), false),
            Op::VMaxU32 => bin32!(|a: u32, b: u32| a.max(b), false),
            Op::VMin3I32 => tri32!(
                |a: u32, b: u32, d: u32| (a as i32).min(b as i32).min(d as i32) as u32,
                false
            ),
            Op::VMax3I32 => tri32!(
                |a: u32, b: u32, d: u32| (a as i32).max(b as i32).max(d as i32) as u32,
                false
            ),
            Op::VMin3U32 => tri32!(|a: u32, b: u32, d: u32| a.min(b).min(d), false),
            Op::VMax3U32 => tri32!(|a: u32, b: u32, d: u32| a.max(b).max(d), false),
            Op::VMed3I32 => tri32!(int::med3_i32, false),
            Op::VMed3U32 => tri32!(int::med3_u32, false),
            Op::VLshrrevB32 => bin32!(|a, b| int::lshr32(b, a), false),
            Op::VAshrrevI32 => bin32!(|a, b| int::ashr32(b, a), false),
            Op::VLshlrevB32 => bin32!(|a, b| int::shl32(b, a), false),
            // 16-bit integer ops use bits 15:0 of the sources; on gfx9 they zero VDST[31:16]
            Op::VAddU16 => bin32!(|a, b| u32::from((a as u16).wrapping_add(b as u16)), false),
            Op::VSubU16 => bin32!(|a, b| u32::from((a as u16).wrapping_sub(b as u16)), false),
            Op::VSubrevU16 => bin32!(|a, b| u32::from((b as u16).wrapping_sub(a as u16)), false),
            Op::VMulLoU16 => bin32!(|a, b| u32::from((a as u16).wrapping_mul(b as u16)), false),
            Op::VLshlrevB16 => bin32!(|a, b| u32::from((b as u16) << (a & 15)), false),
            Op::VLshrrevB16 => bin32!(|a, b| u32::from((b as u16) >> (a & 15)), false),
            Op::VAshrrevI16 => bin32!(|a, b| u32::from(((b as i16) >> (a & 15)) as u16), false),
            Op::VMaxU16 => bin32!(|a, b| u32::from((a as u16).max(b as u16)), false),
            Op::VMinU16 => bin32!(|a, b| u32::from((a as u16).min(b as u16)), false),
            Op::VMaxI16 => bin32!(|a, b| u32::from((a as i16).max(b as i16) as u16), false),
            Op::VMinI16 => bin32!(|a, b| u32::from((a as i16).min(b as i16) as u16), false),
            Op::VLshlrevB64 | Op::VLshrrevB64 | Op::VAshrrevI64 => {
                let a = self.src32(c, Field::A, 0, Mods::default())?;
                let b = self.src64(c, Field::B, 1, Mods::default())?;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = match op {
                        Op::VLshlrevB64 => int::shl64(b[l], a[l]),
                        Op::VLshrrevB64 => int::lshr64(b[l], a[l]),
                        _ => int::ashr64(b[l], a[l]),
                    };
                }
                self.dst64(c, r, Mods::default(), false)
            }
            Op::VAndB32 => bin32!(|a, b| a & b, false),
            Op::VOrB32 => bin32!(|a, b| a | b, false),
            Op::VXorB32 => bin32!(|a, b| a ^ b, false),
            Op::VXnorB32 => bin32!(|a: u32, b: u32| !(a ^ b), false),
            Op::VNotB32 => un32!(|a: u32| !a, false),
            Op::VBfrevB32 => un32!(int::brev32, false),
            Op::VFfbhU32 => un32!(int::ffbh_u32, false),
            Op::VFfblB32 => un32!(int::ffbl, false),
            Op::VFfbhI32 => un32!(int::ffbh_i32, false),
            Op::VBfeU32 => tri32!(int::bfe_u32, false),
            Op::VBfeI32 => tri32!(int::bfe_i32, false),
            Op::VBfiB32 => tri32!(int::bfi, false),
            Op::VBfmB32 => bin32!(int::bfm, false),
            Op::VAlignbitB32 => tri32!(int::alignbit, false),
            Op::VAlignbyteB32 => tri32!(int::alignbyte, false),
            Op::VPermB32 => tri32!(int::perm, false),
            Op::VSadU8 => tri32!(int::sad_u8, false),
            Op::VSadHiU8 => tri32!(media::sad_hi_u8, false),
            Op::VSadU16 => tri32!(media::sad_u16, false),
            Op::VMsadU8 => tri32!(media::msad_u8, false),
            Op::VLerpU8 => tri32!(media::lerp_u8, false),
            Op::VCvtPkU8F32 => tri32!(media::cvt_pk_u8_f32, false),
            Op::VCvtPkI16I32 => bin32!(media::cvt_pk_i16_i32, false),
            Op::VCvtPkU16U32 => bin32!(media::cvt_pk_u16_u32, false),
            Op::VCvtPknormI16F32 => bin32!(media::cvt_pknorm_i16_f32, false),
            Op::VCvtPknormU16F32 => bin32!(media::cvt_pknorm_u16_f32, false),
            Op::VCubeidF32 => tri32!(media::cubeid, true),
            Op::VCubemaF32 => tri32!(media::cubema, true),
            Op::VCubescF32 => tri32!(media::cubesc, true),
            Op::VCubetcF32 => tri32!(media::cubetc, true),
            Op::VQsadPkU16U8 | Op::VMqsadPkU16U8 | Op::VMqsadU32U8 => self.qsad(c),
            Op::VSadU32 => tri32!(int::sad_u32, false),
            Op::VLshlAddU32 => tri32!(|a, b, d: u32| int::shl32(a, b).wrapping_add(d), false),
            Op::VAddLshlU32 => tri32!(|a: u32, b, d| int::shl32(a.wrapping_add(b), d), false),
            Op::VAdd3U32 => tri32!(|a: u32, b, d| a.wrapping_add(b).wrapping_add(d), false),
            Op::VLshlOrB32 => tri32!(|a, b, d| int::shl32(a, b) | d, false),
            Op::VAndOrB32 => tri32!(|a, b, d| (a & b) | d, false),
            Op::VOr3B32 => tri32!(|a, b, d| a | b | d, false),
            Op::VXadU32 => tri32!(|a: u32, b: u32, d: u32| (a ^ b).wrapping_add(d), false),
            Op::VBcntU32B32 => bin32!(|a: u32, b: u32| a.count_ones().wrapping_add(b), false),
            Op::VMbcntLoU32B32 | Op::VMbcntHiU32B32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = if op == Op::VMbcntLoU32B32 {
                        int::mbcnt_lo(a[l], b[l], l)
                    } else {
                        int::mbcnt_hi(a[l], b[l], l)
                    };
                }
                self.dst32(c, r, m, false)
            }
            Op::VPkMovB32 => {
                // gfx90a: d.lo = src0[op_sel[0]], d.hi = src1[op_sel[1]] (dwords of 64-bit pairs)
                let w0 = c.inst.words[0];
                let a = self.src64(c, Field::A, 0, Mods::default())?;
                let b = self.src64(c, Field::B, 1, Mods::default())?;
                let (sa, sb) = ((w0 >> 11) & 1, (w0 >> 12) & 1);
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    let lo = (a[l] >> (32 * sa)) & 0xffff_ffff;
                    let hi = (b[l] >> (32 * sb)) & 0xffff_ffff;
                    r[l] = lo | (hi << 32);
                }
                self.dst64(c, r, Mods::default(), false)
            }
            Op::VMfmaF3232x32x1f32
            | Op::VMfmaF3232x32x2f32
            | Op::VMfmaF3216x16x1f32
            | Op::VMfmaF3216x16x4f32
            | Op::VMfmaF324x4x1f32 => self.mfma(c, op),
            op if super::mfma_packed::is_packed_mfma(op) => self.mfma_packed(c, op),
            Op::VFmaF16
            | Op::VMadF16
            | Op::VMacF16
            | Op::VDivFixupF16
            | Op::VMaxF16
            | Op::VMinF16
            | Op::VMax3F16
            | Op::VMin3F16
            | Op::VMed3F16
            | Op::VLdexpF16
            | Op::VSqrtF16
            | Op::VRcpF16
            | Op::VRsqF16
            | Op::VExpF16
            | Op::VLogF16
            | Op::VSinF16
            | Op::VCosF16
            | Op::VFractF16
            | Op::VTruncF16
            | Op::VCeilF16
            | Op::VFloorF16
            | Op::VRndneF16
            | Op::VFrexpMantF16
            | Op::VFrexpExpI16F16
            | Op::VCvtF16U16
            | Op::VCvtF16I16
            | Op::VCvtU16F16
            | Op::VCvtI16F16
            | Op::VMadU16
            | Op::VMadI16
            | Op::VMadLegacyF16
            | Op::VFmaLegacyF16
            | Op::VDivFixupLegacyF16
            | Op::VMadLegacyU16
            | Op::VMadLegacyI16
            | Op::VMax3I16
            | Op::VMax3U16
            | Op::VMin3I16
            | Op::VMin3U16
            | Op::VMed3I16
            | Op::VMed3U16
            | Op::VAddI16
            | Op::VSubI16 => self.f16_op(c),
            Op::VMadU32U16 | Op::VMadI32I16 => self.mad_32_16(c),
            Op::VSwapB32 => self.swap(c),
            Op::VPkAddF16
            | Op::VPkMulF16
            | Op::VPkFmaF16
            | Op::VPkMaxF16
            | Op::VPkMinF16
            | Op::VPkAddU16
            | Op::VPkSubU16
            | Op::VPkAddI16
            | Op::VPkSubI16
            | Op::VPkMulLoU16
            | Op::VPkMadU16
            | Op::VPkMadI16
            | Op::VPkLshlrevB16
            | Op::VPkLshrrevB16
            | Op::VPkAshrrevI16
            | Op::VPkMaxU16
            | Op::VPkMinU16
            | Op::VPkMaxI16
            | Op::VPkMinI16
            | Op::VPkAddF32
            | Op::VPkMulF32
            | Op::VPkFmaF32
            | Op::VMadMixF32
            | Op::VFmaMixF32
            | Op::VMadMixloF16
            | Op::VFmaMixloF16
            | Op::VMadMixhiF16
            | Op::VFmaMixhiF16
            | Op::VDot2F32F16
            | Op::VDot2I32I16
            | Op::VDot2U32U16
            | Op::VDot4I32I8
            | Op::VDot4U32U8
            | Op::VDot8I32I4
            | Op::VDot8U32U4 => self.vop3p(c),
            Op::VTrigPreopF64 => self.trig_preop(c),
            Op::VMadmkF32 | Op::VMadakF32 | Op::VMadmkF16 | Op::VMadakF16 => self.mad_literal(c),
            Op::VPackB32F16 => self.pack_b32_f16(c),
            Op::VDot2cF32F16 | Op::VDot4cI32I8 => self.dot_accumulate(c),
            _ => Err(illegal(self.pc, c)),
        }
    }

    #[inline(never)]
    pub(super) fn vcmp(&mut self, c: &Cached, cmp: crate::exec::cache::Cmp) -> R<()> {
        let m = mods_of(c);
        let exec = self.exec();
        let mut result = 0u64;
        // outcome index: 0 less, 1 equal, 2 greater, 3 unordered
        #[inline(always)]
        fn ford<T: PartialOrd>(x: T, y: T) -> u32 {
            if x < y {
                0
            } else if x == y {
                1
            } else if x > y {
                2
            } else {
                3
            }
        }
        #[inline(always)]
        fn iord<T: Ord>(x: T, y: T) -> u32 {
            match x.cmp(&y) {
                std::cmp::Ordering::Less => 0,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Greater => 2,
            }
        }
        match (cmp.truth, cmp.ty) {
            (None, CmpType::F64) => {
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, Mods::default())?;
                for l in 0..WAVE_SIZE {
                    result |= u64::from(fp::class_f64(a[l], b[l])) << l;
                }
            }
            (None, CmpType::F32 | CmpType::F16) => {
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, Mods::default())?;
                let half = cmp.ty == CmpType::F16;
                for l in 0..WAVE_SIZE {
                    let x = if half {
                        fp::f16_to_f32(a[l] as u16).to_bits()
                    } else {
                        a[l]
                    };
                    result |= u64::from(fp::class_f32(x, b[l])) << l;
                }
            }
            (None, _) => return Err(illegal(self.pc, c)),
            (Some(truth), CmpType::F64 | CmpType::I64 | CmpType::U64) => {
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src64(c, Field::B, 1, m)?;
                for l in 0..WAVE_SIZE {
                    let o = match cmp.ty {
                        CmpType::F64 => ford(f64::from_bits(a[l]), f64::from_bits(b[l])),
                        CmpType::I64 => iord(a[l] as i64, b[l] as i64),
                        _ => iord(a[l], b[l]),
                    };
                    result |= u64::from((truth >> o) & 1) << l;
                }
            }
            (Some(truth), ty) => {
                let (mut sa, mut sb) = ([0u32; WAVE_SIZE], [0u32; WAVE_SIZE]);
                let a = self.src_ref(c, Field::A, 0, m, &mut sa)?;
                let b = self.src_ref(c, Field::B, 1, m, &mut sb)?;
                let mut bits = [0u8; WAVE_SIZE];
                match ty {
                    CmpType::F32 => {
                        for l in 0..WAVE_SIZE {
                            bits[l] =
                                (truth >> ford(f32::from_bits(a[l]), f32::from_bits(b[l]))) & 1;
                        }
                    }
                    CmpType::F16 => {
                        for l in 0..WAVE_SIZE {
                            let (x, y) = (fp::f16_to_f32(a[l] as u16), fp::f16_to_f32(b[l] as u16));
                            bits[l] = (truth >> ford(x, y)) & 1;
                        }
                    }
                    CmpType::I32 => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = (truth >> iord(a[l] as i32, b[l] as i32)) & 1;
                        }
                    }
                    CmpType::U32 => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = (truth >> iord(a[l], b[l])) & 1;
                        }
                    }
                    CmpType::I16 => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = (truth >> iord(a[l] as i16, b[l] as i16)) & 1;
                        }
                    }
                    _ => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = (truth >> iord(a[l] as u16, b[l] as u16)) & 1;
                        }
                    }
                }
                for (l, bit) in bits.iter().enumerate() {
                    result |= u64::from(*bit) << l;
                }
            }
        }
        let result = result & exec;
        // e32 writes VCC; e64 writes its SDST (the D operand)
        match (c.inst.enc, opnd(c, Field::D)) {
            (Enc::Vop3, Some(d)) => self.swrite(d, result, true),
            _ => self.set_vcc(result),
        }
        if cmp.writes_exec {
            self.set_exec(result);
        }
        Ok(())
    }

    /// `v_qsad_pk_u16_u8`, `v_mqsad_pk_u16_u8` (64-bit results) and `v_mqsad_u32_u8` (128-bit):
    /// SADs of a 32-bit reference against the four byte windows of a 64-bit source.
    fn qsad(&mut self, c: &Cached) -> R<()> {
        let op = c.inst.op;
        let a = self.src64(c, Field::A, 0, Mods::default())?;
        let b = self.src32(c, Field::B, 1, Mods::default())?;
        let dwords = if op == Op::VMqsadU32U8 { 4 } else { 2 };
        // SRC2: as many VGPRs as the result, or a constant in every dword
        let mut acc = [[0u32; WAVE_SIZE]; 4];
        match opnd(c, Field::C) {
            Some(Operand::Vgpr { first, .. }) => {
                for (i, d) in acc.iter_mut().enumerate().take(dwords) {
                    *d = *self.v(usize::from(first) + i)?;
                }
            }
            Some(o) => {
                let v = self.sread(o, SrcType::Int, false) as u32;
                acc = [[v; WAVE_SIZE]; 4];
            }
            None => {}
        }
        let Some(Operand::Vgpr { first: d, .. }) = opnd(c, Field::D) else {
            return Err(illegal(self.pc, c));
        };
        let mut out = [[0u32; WAVE_SIZE]; 4];
        for l in 0..WAVE_SIZE {
            if op == Op::VMqsadU32U8 {
                let r =
                    media::mqsad_u32_u8(a[l], b[l], [acc[0][l], acc[1][l], acc[2][l], acc[3][l]]);
                for (i, x) in r.into_iter().enumerate() {
                    out[i][l] = x;
                }
            } else {
                let cin = u64::from(acc[0][l]) | u64::from(acc[1][l]) << 32;
                let r = media::qsad_pk_u16_u8(a[l], b[l], cin, op == Op::VMqsadPkU16U8);
                out[0][l] = r as u32;
                out[1][l] = (r >> 32) as u32;
            }
        }
        let exec = self.exec();
        for (i, r) in out.iter().enumerate().take(dwords) {
            write_masked(self.v_mut(usize::from(d) + i)?, r, exec);
        }
        Ok(())
    }

    /// `v_swap_b32`: VDST and SRC0 (both VGPRs) exchange their values in the EXEC lanes.
    fn swap(&mut self, c: &Cached) -> R<()> {
        let (Some(Operand::Vgpr { first: d, .. }), Some(Operand::Vgpr { first: s, .. })) =
            (opnd(c, Field::D), opnd(c, Field::A))
        else {
            return Err(illegal(self.pc, c));
        };
        let (d, s) = (usize::from(d), usize::from(s));
        let exec = self.exec();
        let (x, y) = (*self.v(d)?, *self.v(s)?);
        write_masked(self.v_mut(d)?, &y, exec);
        write_masked(self.v_mut(s)?, &x, exec);
        Ok(())
    }
}
