//! Half-precision and packed semantics as pure functions of operands (AMD's Vega and MI200
//! ISA guides): the f16 VOP1/VOP2/VOP3 arithmetic, the 16-bit lanes of VOP3P packed ops, the
//! mixed-precision FMA inputs, the dot products, and `v_trig_preop_f64`.
//!
//! f16 values are computed in f64 and rounded once to f16 under MODE; an f16 multiply is
//! exact in f64, and the fused forms carry the f64 sum's rounding error as a sticky bit so
//! the single rounding to f16 stays correct.

use super::float::{f16_to_f32, f64_to_f16};
use super::wave::Mode;
#[cfg(test)]
use super::wave::Round;

/// An f16 operand as f64 under MODE's f16 denormal handling.
pub fn h_in(h: u16, mode: Mode) -> f64 {
    if mode.denorm_f64_f16().flushes_input() && h & 0x7c00 == 0 {
        return if h & 0x8000 != 0 { -0.0 } else { 0.0 };
    }
    f64::from(f16_to_f32(h))
}

/// An f64 value rounded once to f16 under MODE (rounding and output denormals).
pub fn h_out(x: f64, mode: Mode) -> u16 {
    let r = f64_to_f16(x, mode.round_f64_f16());
    if mode.denorm_f64_f16().flushes_output() && r & 0x7c00 == 0 {
        r & 0x8000
    } else {
        r
    }
}

fn round_toward(x: f64, up: bool) -> f64 {
    // one f64 ulp toward +inf (`up`) or -inf: a sticky bit far below f16 precision
    let bits = x.to_bits();
    let away = up == (x > 0.0);
    if x == 0.0 {
        let tiny = f64::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    f64::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// `a * b + c` with one rounding to f16 (`v_fma_f16`, `v_pk_fma_f16`).
pub fn fma_f16(a: u16, b: u16, c: u16, mode: Mode) -> u16 {
    let (x, y, z) = (h_in(a, mode), h_in(b, mode), h_in(c, mode));
    let p = x * y; // exact: 11-bit by 11-bit significands
    let s = p + z;
    if !s.is_finite() || s == 0.0 {
        return h_out(s, mode);
    }
    // two-sum: the exact error of the f64 addition
    let bb = s - p;
    let err = (p - (s - bb)) + (z - bb);
    h_out(
        if err == 0.0 {
            s
        } else {
            round_toward(s, err > 0.0)
        },
        mode,
    )
}

/// `v_mad_f16`: multiply, round to f16, add, round (the unfused form).
pub fn mad_f16(a: u16, b: u16, c: u16, mode: Mode) -> u16 {
    let p = h_out(h_in(a, mode) * h_in(b, mode), mode);
    h_out(h_in(p, mode) + h_in(c, mode), mode)
}

fn is_snan16(h: u16) -> bool {
    h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 && h & 0x200 == 0
}

/// `v_min_f16` / `v_max_f16`: as the f32 forms (IEEE mode: a signalling NaN gives a quiet
/// NaN; otherwise a NaN loses to the number; -0 < +0).
pub fn minmax_f16(a: u16, b: u16, mode: Mode, max: bool) -> u16 {
    if mode.ieee() && (is_snan16(a) || is_snan16(b)) {
        return 0x7e00;
    }
    let (x, y) = (h_in(a, mode), h_in(b, mode));
    let pick_x = if x.is_nan() {
        false
    } else if y.is_nan() {
        true
    } else if x == y {
        // -0 vs +0: max prefers +0, min prefers -0
        max != x.is_sign_negative()
    } else {
        (x > y) == max
    };
    let r = if pick_x { x } else { y };
    h_out(r, mode)
}

/// `v_med3_f16`: the median, composed as the ISA composes MIN3/MAX3.
pub fn med3_f16(a: u16, b: u16, c: u16, mode: Mode) -> u16 {
    let lo = minmax_f16(a, b, mode, false);
    let hi = minmax_f16(a, b, mode, true);
    minmax_f16(hi, minmax_f16(lo, c, mode, true), mode, false)
}

/// The f16 unary ops (`v_sqrt_f16`, `v_rcp_f16`, …): the f64 result rounded to f16. The
/// hardware is within 1 ulp for the transcendentals; this gives the correctly rounded value.
pub fn unary_f16(op: UnaryF16, a: u16, mode: Mode) -> u16 {
    let x = h_in(a, mode);
    let r = match op {
        UnaryF16::Sqrt => x.sqrt(),
        UnaryF16::Rcp => 1.0 / x,
        UnaryF16::Rsq => 1.0 / x.sqrt(),
        UnaryF16::Exp => x.exp2(),
        UnaryF16::Log => x.log2(),
        UnaryF16::Sin | UnaryF16::Cos if x.is_infinite() => f64::NAN,
        UnaryF16::Sin => (x.fract() * std::f64::consts::TAU).sin(),
        UnaryF16::Cos => (x.fract() * std::f64::consts::TAU).cos(),
        UnaryF16::Fract if x.is_infinite() => f64::NAN,
        // at most the largest f16 below 1.0
        UnaryF16::Fract => (x - x.floor()).min(f64::from(f16_to_f32(0x3bff))),
        UnaryF16::Trunc => x.trunc(),
        UnaryF16::Ceil => x.ceil(),
        UnaryF16::Floor => x.floor(),
        UnaryF16::Rndne => {
            let r = x.round();
            if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
                r - x.signum()
            } else {
                r
            }
        }
    };
    if x.is_nan() {
        return a | 0x200; // NaN in, quieted NaN out
    }
    h_out(r, mode)
}

/// The f16 unary operations of [`unary_f16`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryF16 {
    /// `v_sqrt_f16`.
    Sqrt,
    /// `v_rcp_f16`.
    Rcp,
    /// `v_rsq_f16`.
    Rsq,
    /// `v_exp_f16`: 2^x.
    Exp,
    /// `v_log_f16`: log2(x).
    Log,
    /// `v_sin_f16`: sin(2π·x).
    Sin,
    /// `v_cos_f16`: cos(2π·x).
    Cos,
    /// `v_fract_f16`.
    Fract,
    /// `v_trunc_f16`.
    Trunc,
    /// `v_ceil_f16`.
    Ceil,
    /// `v_floor_f16`.
    Floor,
    /// `v_rndne_f16`.
    Rndne,
}

/// `v_ldexp_f16`: `a * 2^e` with `e` a signed 16-bit integer (one rounding).
pub fn ldexp_f16(a: u16, e: u32, mode: Mode) -> u16 {
    let x = h_in(a, mode);
    if x.is_nan() {
        return a | 0x200;
    }
    let e = i32::from(e as u16 as i16).clamp(-64, 64); // beyond ±64 the result is 0 or inf
    h_out(x * 2f64.powi(e), mode)
}

/// `v_frexp_mant_f16`: the significand in [0.5, 1.0); NaN and inf pass through.
pub fn frexp_mant_f16(a: u16, mode: Mode) -> u16 {
    let x = h_in(a, mode);
    if !x.is_finite() || x == 0.0 {
        return a;
    }
    let e = x.abs().log2().floor() as i32 + 1;
    h_out(x * 2f64.powi(-e), mode)
}

/// `v_frexp_exp_i16_f16`: the exponent such that x = mant·2^exp, mant in [0.5, 1.0); 0 for
/// zero, NaN and inf.
pub fn frexp_exp_f16(a: u16, mode: Mode) -> u16 {
    let x = h_in(a, mode);
    if !x.is_finite() || x == 0.0 {
        return 0;
    }
    (x.abs().log2().floor() as i32 + 1) as i16 as u16
}

/// `v_div_fixup_f16` (see `div_fixup_f32`): `s0` the quotient, `s1` the denominator, `s2`
/// the numerator.
pub fn div_fixup_f16(s0: u16, s1: u16, s2: u16) -> u16 {
    let (den, num) = (f16_to_f32(s1), f16_to_f32(s2));
    let sign = (s1 ^ s2) & 0x8000;
    let exp = |h: u16| i32::from((h >> 10) & 0x1f);
    if num.is_nan() {
        s2 | 0x200
    } else if den.is_nan() {
        s1 | 0x200
    } else if (den == 0.0 && num == 0.0) || (den.is_infinite() && num.is_infinite()) {
        0xfe00
    } else if den == 0.0 || num.is_infinite() {
        sign | 0x7c00
    } else if den.is_infinite() || num == 0.0 || exp(s2) - exp(s1) < -25 {
        sign
    } else if f16_to_f32(s0).is_nan() {
        sign | 0x7c00
    } else {
        sign | (s0 & 0x7fff)
    }
}

/// `v_cvt_f16_u16` / `v_cvt_f16_i16`: one rounding under MODE.
pub fn cvt_f16_int(a: u16, signed: bool, mode: Mode) -> u16 {
    let x = if signed {
        f64::from(a as i16)
    } else {
        f64::from(a)
    };
    h_out(x, mode)
}

/// `v_cvt_u16_f16` / `v_cvt_i16_f16`: toward zero, saturating; NaN gives 0.
pub fn cvt_int_f16(a: u16, signed: bool, mode: Mode) -> u16 {
    let x = h_in(a, mode);
    if x.is_nan() {
        return 0;
    }
    if signed {
        x.trunc().clamp(-32768.0, 32767.0) as i16 as u16
    } else {
        x.trunc().clamp(0.0, 65535.0) as u16
    }
}

/// Clamp of an f16 result to [0, 1] (NaN → 0 under DX10_CLAMP), with OMOD before it.
pub fn modify_out16(h: u16, omod: u8, clamp: bool, mode: Mode) -> u16 {
    let mut r = h;
    if omod & 3 != 0 {
        let factor = match omod & 3 {
            1 => 2.0,
            2 => 4.0,
            _ => 0.5,
        };
        r = h_out(f64::from(f16_to_f32(r)) * factor, mode);
    }
    if clamp {
        let x = f16_to_f32(r);
        r = if x.is_nan() {
            if mode.dx10_clamp() {
                0
            } else {
                r
            }
        } else if x <= 0.0 {
            0
        } else if x >= 1.0 {
            0x3c00
        } else {
            r
        };
    }
    r
}

/// A VOP3P 16-bit integer lane op. `clamp` saturates the add/sub forms.
pub fn packed_int16(op: PackedInt, a: u16, b: u16, c: u16, clamp: bool) -> u16 {
    let (sa, sb) = (a as i16, b as i16);
    match op {
        PackedInt::AddU16 if clamp => a.saturating_add(b),
        PackedInt::AddU16 => a.wrapping_add(b),
        PackedInt::SubU16 if clamp => a.saturating_sub(b),
        PackedInt::SubU16 => a.wrapping_sub(b),
        PackedInt::AddI16 if clamp => sa.saturating_add(sb) as u16,
        PackedInt::AddI16 => sa.wrapping_add(sb) as u16,
        PackedInt::SubI16 if clamp => sa.saturating_sub(sb) as u16,
        PackedInt::SubI16 => sa.wrapping_sub(sb) as u16,
        PackedInt::MulLoU16 => a.wrapping_mul(b),
        PackedInt::MadU16 => {
            let r = u32::from(a) * u32::from(b) + u32::from(c);
            if clamp {
                r.min(0xffff) as u16
            } else {
                r as u16
            }
        }
        PackedInt::MadI16 => {
            let r = i32::from(sa) * i32::from(sb) + i32::from(c as i16);
            if clamp {
                r.clamp(-32768, 32767) as u16
            } else {
                r as u16
            }
        }
        // shift amounts: the low 4 bits of the first source
        PackedInt::LshlrevB16 => b << (a & 15),
        PackedInt::LshrrevB16 => b >> (a & 15),
        PackedInt::AshrrevI16 => (sb >> (a & 15)) as u16,
        PackedInt::MaxU16 => a.max(b),
        PackedInt::MinU16 => a.min(b),
        PackedInt::MaxI16 => sa.max(sb) as u16,
        PackedInt::MinI16 => sa.min(sb) as u16,
    }
}

/// The 16-bit integer VOP3P operations of [`packed_int16`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // the names are the mnemonics
pub enum PackedInt {
    AddU16,
    SubU16,
    AddI16,
    SubI16,
    MulLoU16,
    MadU16,
    MadI16,
    LshlrevB16,
    LshrrevB16,
    AshrrevI16,
    MaxU16,
    MinU16,
    MaxI16,
    MinI16,
}

/// `v_dot2_f32_f16`: `a.lo*b.lo + a.hi*b.hi + c` in f32 (the f16 products are exact; the
/// sum is rounded once, the way the fused dot unit of MI200 is documented).
pub fn dot2_f32_f16(a: u32, b: u32, c: u32, mode: Mode) -> u32 {
    let h = |x: u32, hi: bool| h_in(if hi { (x >> 16) as u16 } else { x as u16 }, mode);
    let p = h(a, false) * h(b, false) + h(a, true) * h(b, true); // exact in f64
    let z = f64::from(f32::from_bits(c));
    let s = p + z;
    if !s.is_finite() || s == 0.0 {
        return (s as f32).to_bits();
    }
    let bb = s - p;
    let err = (p - (s - bb)) + (z - bb);
    let s = if err == 0.0 {
        s
    } else {
        round_toward(s, err > 0.0)
    };
    super::float::round_to_f32(s, 0.0, mode.round_f32()).to_bits()
}

/// The integer dot products: `v_dot2_{i32_i16,u32_u16}`, `v_dot4_{i32_i8,u32_u8}`,
/// `v_dot8_{i32_i4,u32_u4}` — `elems` lanes of `32/elems` bits of `a` and `b` multiplied,
/// summed and added to `c`; `clamp` saturates the 32-bit result.
pub fn dot_int(a: u32, b: u32, c: u32, elems: u32, signed: bool, clamp: bool) -> u32 {
    let bits = 32 / elems;
    let mut sum = if signed {
        i64::from(c as i32)
    } else {
        i64::from(c)
    };
    for i in 0..elems {
        let field = |x: u32| -> i64 {
            let v = (x >> (i * bits)) & ((1u64 << bits) - 1) as u32;
            if signed {
                // sign-extend a `bits`-wide field
                i64::from(((v << (32 - bits)) as i32) >> (32 - bits))
            } else {
                i64::from(v)
            }
        };
        sum += field(a) * field(b);
    }
    if clamp {
        if signed {
            sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
        } else {
            sum.clamp(0, i64::from(u32::MAX)) as u32
        }
    } else {
        sum as u32
    }
}

/// Bits of 2/π after the binary point, most significant first (2/π = 0.A2F9836E…), 1344 of
/// them: computed from Machin's formula for π in integer arithmetic.
const TWO_OVER_PI: [u64; 21] = [
    0xa2f9836e4e441529,
    0xfc2757d1f534ddc0,
    0xdb6295993c439041,
    0xfe5163abdebbc561,
    0xb7246e3a424dd2e0,
    0x06492eea09d1921c,
    0xfe1deb1cb129a73e,
    0xe88235f52ebb4484,
    0xe99c7026b45f7e41,
    0x3991d639835339f4,
    0x9c845f8bbdf9283b,
    0x1ff897ffde05980f,
    0xef2f118b5a0a6d1f,
    0x6d367ecf27cb09b7,
    0x4f463f669e5fea2d,
    0x7527bac7ebe5f17b,
    0x3d0739f78a5292ea,
    0x6bfb5fb11f8d5d08,
    0x56033046fc7b6bab,
    0xf0cfbc209af4361d,
    0xa9e391615ee61b08,
];

/// 53 bits of 2/π starting `skip` bits after the binary point, as an integer.
fn two_over_pi_bits(skip: u32) -> u64 {
    let mut v = 0u64;
    for i in 0..53 {
        let pos = skip + i; // 0 = the first bit after the point
        let bit = if pos < 1344 {
            (TWO_OVER_PI[(pos / 64) as usize] >> (63 - pos % 64)) & 1
        } else {
            0
        };
        v = (v << 1) | bit;
    }
    v
}

/// `v_trig_preop_f64`: the `s1[4:0]`-th 53-bit segment of 2/π, scaled to its place value,
/// for large-argument range reduction. For an `s0` exponent (biased) above 1077 the segment
/// starts that many bits further; at 1968 and above the result is scaled up by 2^128 (the
/// ISA guide's definition, which keeps the segment representable).
pub fn trig_preop_f64(s0: u64, s1: u32) -> u64 {
    let exp = ((s0 >> 52) & 0x7ff) as u32;
    let mut shift = (s1 & 31) * 53;
    if exp > 1077 {
        shift += exp - 1077;
    }
    let segment = two_over_pi_bits(shift) as f64; // exact: 53 bits
    let mut scale = -53 - shift as i32;
    if exp >= 1968 {
        scale += 128;
    }
    // two steps: 2^scale alone can be below f64's range while the product is not
    (segment * 2f64.powi(scale / 2) * 2f64.powi(scale - scale / 2)).to_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round to nearest even, no flushing, DX10_CLAMP and IEEE on (what HIP kernels run with).
    fn default_mode() -> Mode {
        Mode(0xf0 | (1 << 8) | (1 << 9))
    }

    #[test]
    fn fma_f16_rounds_once() {
        let m = default_mode();
        // (1 + 3·2^-10)^2 - 1 = 1.5·2^-8 + 2.25·2^-18: fused keeps the 2^-18 part (ulp 2^-18
        // at this exponent, so 2 ulps after rounding); unfused rounds it away in the product.
        let fused = fma_f16(0x3c03, 0x3c03, 0xbc00, m);
        let exact = (1.0f64 + 3.0 * 2f64.powi(-10)).powi(2) - 1.0;
        assert_eq!(
            f64::from(f16_to_f32(fused)),
            1.5 * 2f64.powi(-8) + 2.0 * 2f64.powi(-18)
        );
        assert_eq!(fused, f64_to_f16(exact, Round::NearestEven));
        let unfused = mad_f16(0x3c03, 0x3c03, 0xbc00, m);
        assert_eq!(f64::from(f16_to_f32(unfused)), 1.5 * 2f64.powi(-8));
    }

    #[test]
    fn trig_preop_first_segment_is_two_over_pi() {
        let two_over_pi = 2.0 / std::f64::consts::PI;
        let r = f64::from_bits(trig_preop_f64(1.0f64.to_bits(), 0));
        // the first 53 bits of 2/π truncated: within one ulp below the rounded constant
        assert!((r - two_over_pi).abs() <= f64::EPSILON, "{r:e}");
        assert!(r <= two_over_pi);
        // the next segment is the remainder at 2^-53 scale
        let r1 = f64::from_bits(trig_preop_f64(1.0f64.to_bits(), 1));
        assert!(r1 > 0.0 && r1 < 2f64.powi(-53));
    }
}
