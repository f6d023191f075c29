//! Float semantics: f16/f32/f64 arithmetic under the MODE register's denormal and rounding
//! controls, the input (abs/neg) and output (omod/clamp) modifiers, the division and square
//! root helpers, transcendentals and conversions.
//!
//! Round-to-nearest-even uses the host's IEEE operations (correctly rounded); the directed
//! modes round the exact result, recovered as an unevaluated sum `hi + lo` by error-free
//! transformations, toward the mode's direction.

use super::wave::{Denorm, Mode, Round};

// ---------------------------------------------------------------- denormals

/// Reads an f32 source under `denorm`: a denormal becomes a zero of its sign when inputs
/// are flushed.
#[inline]
pub fn f32_in(bits: u32, denorm: Denorm) -> f32 {
    if denorm.flushes_input() && bits & 0x7f80_0000 == 0 {
        f32::from_bits(bits & 0x8000_0000)
    } else {
        f32::from_bits(bits)
    }
}

/// Writes an f32 result under `denorm`: a denormal becomes a zero of its sign when outputs
/// are flushed.
#[inline]
pub fn f32_out(v: f32, denorm: Denorm) -> u32 {
    let bits = v.to_bits();
    if denorm.flushes_output() && bits & 0x7f80_0000 == 0 {
        bits & 0x8000_0000
    } else {
        bits
    }
}

/// Reads an f64 source under `denorm`.
#[inline]
pub fn f64_in(bits: u64, denorm: Denorm) -> f64 {
    if denorm.flushes_input() && bits & 0x7ff0_0000_0000_0000 == 0 {
        f64::from_bits(bits & (1 << 63))
    } else {
        f64::from_bits(bits)
    }
}

/// Writes an f64 result under `denorm`.
#[inline]
pub fn f64_out(v: f64, denorm: Denorm) -> u64 {
    let bits = v.to_bits();
    if denorm.flushes_output() && bits & 0x7ff0_0000_0000_0000 == 0 {
        bits & (1 << 63)
    } else {
        bits
    }
}

// ---------------------------------------------------------------- modifiers

/// Applies the VOP3 input modifiers to an f32 source: `abs` clears the sign, then `neg`
/// flips it.
#[inline]
pub fn modify_in32(bits: u32, abs: bool, neg: bool) -> u32 {
    let b = if abs { bits & 0x7fff_ffff } else { bits };
    if neg {
        b ^ 0x8000_0000
    } else {
        b
    }
}

/// Applies the VOP3 input modifiers to an f64 source.
#[inline]
pub fn modify_in64(bits: u64, abs: bool, neg: bool) -> u64 {
    let b = if abs { bits & !(1 << 63) } else { bits };
    if neg {
        b ^ (1 << 63)
    } else {
        b
    }
}

/// The output modifier field (OMOD): 0 none, 1 ×2, 2 ×4, 3 ×0.5.
#[inline]
fn omod_factor(omod: u8) -> f64 {
    match omod & 3 {
        1 => 2.0,
        2 => 4.0,
        3 => 0.5,
        _ => 1.0,
    }
}

/// OMOD then clamp on an f32 result: clamp limits to [0.0, 1.0]; a NaN clamps to 0 when
/// MODE.DX10_CLAMP is set, else stays NaN.
pub fn modify_out32(v: f32, omod: u8, clamp: bool, mode: Mode) -> f32 {
    let mut r = if omod & 3 == 0 {
        v
    } else {
        (f64::from(v) * omod_factor(omod)) as f32
    };
    if clamp {
        r = if r.is_nan() {
            if mode.dx10_clamp() {
                0.0
            } else {
                r
            }
        } else {
            r.clamp(0.0, 1.0)
        };
        // clamp maps -0.0 to +0.0
        if r == 0.0 {
            r = 0.0;
        }
    }
    r
}

/// OMOD then clamp on an f64 result.
pub fn modify_out64(v: f64, omod: u8, clamp: bool, mode: Mode) -> f64 {
    let mut r = v * omod_factor(omod);
    if clamp {
        r = if r.is_nan() {
            if mode.dx10_clamp() {
                0.0
            } else {
                r
            }
        } else {
            r.clamp(0.0, 1.0)
        };
        if r == 0.0 {
            r = 0.0;
        }
    }
    r
}

// ---------------------------------------------------------------- rounding

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    (s, err)
}

fn next_f32(v: f32, up: bool) -> f32 {
    if v.is_nan() || (v.is_infinite() && (v > 0.0) == up) {
        return v;
    }
    if v == 0.0 {
        let tiny = f32::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let bits = v.to_bits();
    let away = (v > 0.0) == up;
    f32::from_bits(if away { bits + 1 } else { bits - 1 })
}

fn next_f64(v: f64, up: bool) -> f64 {
    if v.is_nan() || (v.is_infinite() && (v > 0.0) == up) {
        return v;
    }
    if v == 0.0 {
        let tiny = f64::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let bits = v.to_bits();
    let away = (v > 0.0) == up;
    f64::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// Rounds the exact value `hi + lo` (with `|lo|` below half an f64 ulp of `hi`) to f32 under
/// `round`.
pub fn round_to_f32(hi: f64, lo: f64, round: Round) -> f32 {
    let r = hi as f32;
    if hi.is_nan() || hi.is_infinite() {
        return r;
    }
    let d = hi - f64::from(r);
    // sign of exact - r
    let above = if d != 0.0 { d > 0.0 } else { lo > 0.0 };
    let below = if d != 0.0 { d < 0.0 } else { lo < 0.0 };
    if r.is_infinite() {
        // overflow in RNE: directed modes may stop at the largest finite value
        let toward_inf_ok = match round {
            Round::NearestEven => true,
            Round::PlusInf => r > 0.0,
            Round::MinusInf => r < 0.0,
            Round::Zero => false,
        };
        return if toward_inf_ok {
            r
        } else {
            f32::MAX.copysign(r)
        };
    }
    match round {
        Round::NearestEven => {
            // hi was exactly halfway between two f32s and lo breaks the tie
            if lo != 0.0 && d != 0.0 {
                let other = next_f32(r, d > 0.0);
                if other.is_finite() && f64::from(other) - hi == d && (lo > 0.0) == (d > 0.0) {
                    return other;
                }
            }
            r
        }
        Round::PlusInf if above => next_f32(r, true),
        Round::MinusInf if below => next_f32(r, false),
        Round::Zero if (r > 0.0 && below) || (r < 0.0 && above) => next_f32(r, r < 0.0),
        Round::Zero if r == 0.0 => r,
        _ => r,
    }
}

/// Rounds `hi + lo` (an f64 with the sign of its rounding error in `lo`) to f64 under
/// `round`; `hi` is the nearest-even result.
pub fn round_to_f64(hi: f64, lo: f64, round: Round) -> f64 {
    if hi.is_nan() || lo == 0.0 || round == Round::NearestEven {
        return hi;
    }
    if hi.is_infinite() {
        return match round {
            Round::PlusInf if hi < 0.0 => -f64::MAX,
            Round::MinusInf if hi > 0.0 => f64::MAX,
            Round::Zero => f64::MAX.copysign(hi),
            _ => hi,
        };
    }
    match round {
        Round::PlusInf if lo > 0.0 => next_f64(hi, true),
        Round::MinusInf if lo < 0.0 => next_f64(hi, false),
        Round::Zero if (hi > 0.0 && lo < 0.0) || (hi < 0.0 && lo > 0.0) => next_f64(hi, hi < 0.0),
        _ => hi,
    }
}

// ---------------------------------------------------------------- f32 arithmetic

/// `v_add_f32` under MODE (inputs and output flushed per FP_DENORM, rounding per FP_ROUND).
// not inlined: the NaN it returns must not depend on how a caller's code is optimised
#[inline(never)]
pub fn add_f32(a: u32, b: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let (x, y) = (f32_in(a, dn), f32_in(b, dn));
    let r = match mode.round_f32() {
        Round::NearestEven => x + y,
        rm => {
            let (hi, lo) = two_sum(f64::from(x), f64::from(y));
            round_to_f32(hi, lo, rm)
        }
    };
    f32_out(r, dn)
}

/// `v_mul_f32` under MODE.
// not inlined: the NaN it returns must not depend on how a caller's code is optimised
#[inline(never)]
pub fn mul_f32(a: u32, b: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let (x, y) = (f32_in(a, dn), f32_in(b, dn));
    let r = match mode.round_f32() {
        Round::NearestEven => x * y,
        rm => round_to_f32(f64::from(x) * f64::from(y), 0.0, rm),
    };
    f32_out(r, dn)
}

/// `v_fma_f32` (and `v_fmac_f32`, `v_mac_f32` when denormals are on) under MODE: one rounding.
pub fn fma_f32(a: u32, b: u32, c: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let (x, y, z) = (f32_in(a, dn), f32_in(b, dn), f32_in(c, dn));
    let r = match mode.round_f32() {
        Round::NearestEven => x.mul_add(y, z),
        rm => {
            let (hi, lo) = two_sum(f64::from(x) * f64::from(y), f64::from(z));
            round_to_f32(hi, lo, rm)
        }
    };
    f32_out(r, dn)
}

/// `v_mad_f32` / `v_mac_f32`: multiply, round, add, round (denormals flushed as the ISA
/// specifies for MAD regardless of MODE).
pub fn mad_f32(a: u32, b: u32, c: u32, mode: Mode) -> u32 {
    let flush = Denorm::FlushAll;
    let p = f32_in(mul_f32(f32_out(f32_in(a, flush), flush), b, mode), flush);
    f32_out(f32_in(add_f32(p.to_bits(), c, mode), flush), flush)
}

/// `v_min_f32`: in IEEE mode a signalling NaN operand gives a quiet NaN, a quiet NaN loses to
/// a number; otherwise any NaN loses to the number. -0 < +0.
pub fn min_f32(a: u32, b: u32, mode: Mode) -> u32 {
    minmax_f32(a, b, mode, false)
}

/// `v_max_f32` (see [`min_f32`]).
pub fn max_f32(a: u32, b: u32, mode: Mode) -> u32 {
    minmax_f32(a, b, mode, true)
}

fn is_snan32(bits: u32) -> bool {
    bits & 0x7f80_0000 == 0x7f80_0000 && bits & 0x007f_ffff != 0 && bits & 0x0040_0000 == 0
}

fn minmax_f32(a: u32, b: u32, mode: Mode, max: bool) -> u32 {
    let dn = mode.denorm_f32();
    if mode.ieee() && (is_snan32(a) || is_snan32(b)) {
        return 0x7fc0_0000;
    }
    let (x, y) = (f32_in(a, dn), f32_in(b, dn));
    let r = if x.is_nan() {
        y
    } else if y.is_nan() {
        x
    } else if x == y {
        // -0 vs +0
        if max == (x.is_sign_negative() && !y.is_sign_negative()) {
            y
        } else {
            x
        }
    } else if (x > y) == max {
        x
    } else {
        y
    };
    f32_out(r, dn)
}

/// `v_med3_f32`: NaN-aware median (a NaN operand makes the result the min of the other two
/// as the ISA's MAX3/MIN3 composition does).
pub fn med3_f32(a: u32, b: u32, c: u32, mode: Mode) -> u32 {
    let lo = min_f32(a, b, mode);
    let hi = max_f32(a, b, mode);
    min_f32(hi, max_f32(lo, c, mode), mode)
}

// ---------------------------------------------------------------- f64 arithmetic

/// `v_add_f64` under MODE.
pub fn add_f64(a: u64, b: u64, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    let (x, y) = (f64_in(a, dn), f64_in(b, dn));
    let (s, e) = two_sum(x, y);
    f64_out(round_to_f64(s, e, mode.round_f64_f16()), dn)
}

/// `v_mul_f64` under MODE.
pub fn mul_f64(a: u64, b: u64, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    let (x, y) = (f64_in(a, dn), f64_in(b, dn));
    let p = x * y;
    let e = if p.is_finite() { x.mul_add(y, -p) } else { 0.0 };
    f64_out(round_to_f64(p, e, mode.round_f64_f16()), dn)
}

/// `v_fma_f64` under MODE.
pub fn fma_f64(a: u64, b: u64, c: u64, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    let (x, y, z) = (f64_in(a, dn), f64_in(b, dn), f64_in(c, dn));
    let r = x.mul_add(y, z);
    let rm = mode.round_f64_f16();
    let e = if rm != Round::NearestEven && r.is_finite() {
        // sign of (x*y + z - r): x*y = p + pe exactly; p + z - r computed with two_sum
        let p = x * y;
        let pe = x.mul_add(y, -p);
        let (s, se) = two_sum(p, z);
        (s - r) + se + pe
    } else {
        0.0
    };
    f64_out(round_to_f64(r, e, rm), dn)
}

/// `v_min_f64` (IEEE-mode NaN rules as [`min_f32`]).
pub fn min_f64(a: u64, b: u64, mode: Mode) -> u64 {
    minmax_f64(a, b, mode, false)
}

/// `v_max_f64`.
pub fn max_f64(a: u64, b: u64, mode: Mode) -> u64 {
    minmax_f64(a, b, mode, true)
}

fn is_snan64(bits: u64) -> bool {
    bits & 0x7ff0_0000_0000_0000 == 0x7ff0_0000_0000_0000
        && bits & 0x000f_ffff_ffff_ffff != 0
        && bits & 0x0008_0000_0000_0000 == 0
}

fn minmax_f64(a: u64, b: u64, mode: Mode, max: bool) -> u64 {
    let dn = mode.denorm_f64_f16();
    if mode.ieee() && (is_snan64(a) || is_snan64(b)) {
        return 0x7ff8_0000_0000_0000;
    }
    let (x, y) = (f64_in(a, dn), f64_in(b, dn));
    let r = if x.is_nan() {
        y
    } else if y.is_nan() {
        x
    } else if x == y {
        if max == (x.is_sign_negative() && !y.is_sign_negative()) {
            y
        } else {
            x
        }
    } else if (x > y) == max {
        x
    } else {
        y
    };
    f64_out(r, dn)
}

// ---------------------------------------------------------------- class, frexp, ldexp

/// `v_cmp_class_f32` mask bits: 0 signalling NaN, 1 quiet NaN, 2 -inf, 3 -normal,
/// 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf. True when the class of `a`
/// is in `mask`.
pub fn class_f32(a: u32, mask: u32) -> bool {
    let exp = a & 0x7f80_0000;
    let man = a & 0x007f_ffff;
    let neg = a >> 31 != 0;
    let bit = if exp == 0x7f80_0000 {
        if man == 0 {
            if neg {
                2
            } else {
                9
            }
        } else if man & 0x0040_0000 != 0 {
            1
        } else {
            0
        }
    } else if exp == 0 {
        match (man == 0, neg) {
            (true, true) => 5,
            (true, false) => 6,
            (false, true) => 4,
            (false, false) => 7,
        }
    } else if neg {
        3
    } else {
        8
    };
    mask & (1 << bit) != 0
}

/// `v_cmp_class_f64` (same mask bits as [`class_f32`]).
pub fn class_f64(a: u64, mask: u32) -> bool {
    let exp = a & 0x7ff0_0000_0000_0000;
    let man = a & 0x000f_ffff_ffff_ffff;
    let neg = a >> 63 != 0;
    let bit = if exp == 0x7ff0_0000_0000_0000 {
        if man == 0 {
            if neg {
                2
            } else {
                9
            }
        } else if man & 0x0008_0000_0000_0000 != 0 {
            1
        } else {
            0
        }
    } else if exp == 0 {
        match (man == 0, neg) {
            (true, true) => 5,
            (true, false) => 6,
            (false, true) => 4,
            (false, false) => 7,
        }
    } else if neg {
        3
    } else {
        8
    };
    mask & (1 << bit) != 0
}

/// Exponent `e` and mantissa `m` in [0.5, 1) with `x = m * 2^e`, for finite nonzero `x`.
fn frexp64(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (x, bias) = if x.abs() < f64::MIN_POSITIVE {
        (x * 2f64.powi(64), -64)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32 - 1022;
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, e + bias)
}

/// `v_frexp_mant_f32`: the mantissa in [0.5, 1) with the sign of `a`; NaN and infinities
/// pass through (a NaN quieted), zero stays zero.
pub fn frexp_mant_f32(a: u32) -> u32 {
    let x = f32::from_bits(a);
    if x.is_nan() {
        return a | 0x0040_0000;
    }
    if x.is_infinite() || x == 0.0 {
        return a;
    }
    (frexp64(f64::from(x)).0 as f32).to_bits()
}

/// `v_frexp_exp_i32_f32`: the exponent so that `a = mant * 2^exp`; 0 for zero, NaN and
/// infinities.
pub fn frexp_exp_f32(a: u32) -> u32 {
    let x = f32::from_bits(a);
    if !x.is_finite() || x == 0.0 {
        return 0;
    }
    frexp64(f64::from(x)).1 as u32
}

/// `v_frexp_mant_f64`.
pub fn frexp_mant_f64(a: u64) -> u64 {
    let x = f64::from_bits(a);
    if x.is_nan() {
        return a | 0x0008_0000_0000_0000;
    }
    if x.is_infinite() || x == 0.0 {
        return a;
    }
    frexp64(x).0.to_bits()
}

/// `v_frexp_exp_i32_f64`.
pub fn frexp_exp_f64(a: u64) -> u32 {
    let x = f64::from_bits(a);
    if !x.is_finite() || x == 0.0 {
        return 0;
    }
    frexp64(x).1 as u32
}

/// `x * 2^e` with one rounding (to nearest even) even when the result is denormal.
fn ldexp64(x: f64, e: i32) -> f64 {
    let e = e.clamp(-2200, 2200);
    let mut r = x;
    let mut left = e;
    // scale in steps that stay exact until the last one
    while left > 1000 {
        r *= 2f64.powi(1000);
        left -= 1000;
    }
    while left < -1000 {
        // keep the value normal while stepping down, finish with one rounding
        if (r * 2f64.powi(-1000)).abs() < f64::MIN_POSITIVE {
            break;
        }
        r *= 2f64.powi(-1000);
        left += 1000;
    }
    if left < -1022 {
        r *= 2f64.powi(-1022);
        left += 1022;
        if left < -1022 {
            return r * 2f64.powi(-1022) * 2f64.powi(left + 1022);
        }
    }
    r * 2f64.powi(left)
}

/// `v_ldexp_f32`: `a * 2^e` (rounded once), flushed per MODE.
pub fn ldexp_f32(a: u32, e: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let x = f64::from(f32_in(a, dn));
    let r = ldexp64(x, (e as i32).clamp(-400, 400));
    f32_out(r as f32, dn)
}

/// `v_ldexp_f64`.
pub fn ldexp_f64(a: u64, e: u32, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    f64_out(ldexp64(f64_in(a, dn), e as i32), dn)
}

fn exponent32(bits: u32) -> i32 {
    ((bits >> 23) & 0xff) as i32
}

fn exponent64(bits: u64) -> i32 {
    ((bits >> 52) & 0x7ff) as i32
}

// ---------------------------------------------------------------- division helpers

/// `v_div_scale_f32 d, vcc, s0, s1, s2` for one lane: `s1` is the denominator, `s2` the
/// numerator, `s0` the one of them being scaled. Returns the scaled value and the lane's VCC
/// bit (set when the quotient must be rescaled by `v_div_fmas`).
pub fn div_scale_f32(s0: u32, s1: u32, s2: u32) -> (u32, bool) {
    let (x0, den, num) = (f32::from_bits(s0), f32::from_bits(s1), f32::from_bits(s2));
    let mut vcc = false;
    let mut d = x0;
    let denorm = |v: f32| v != 0.0 && v.abs() < f32::MIN_POSITIVE;
    let denorm64 = |v: f64| v != 0.0 && v.abs() < f64::MIN_POSITIVE;
    if num == 0.0 || den == 0.0 {
        d = f32::NAN;
    } else if exponent32(s2) - exponent32(s1) >= 96 {
        vcc = true;
        if s0 == s1 {
            d = ldexp32(x0, 64);
        }
    } else if denorm(den) {
        d = ldexp32(x0, 64);
    } else if denorm64(1.0 / f64::from(den)) && denorm(num / den) {
        // (1/den is evaluated in f64 and so never denormal for an f32 den)
        vcc = true;
        if s0 == s1 {
            d = ldexp32(x0, 64);
        }
    } else if denorm64(1.0 / f64::from(den)) {
        d = ldexp32(x0, -64);
    } else if denorm(num / den) {
        vcc = true;
        if s0 == s2 {
            d = ldexp32(x0, 64);
        }
    } else if exponent32(s2) <= 23 {
        d = ldexp32(x0, 64);
    }
    (d.to_bits(), vcc)
}

fn ldexp32(x: f32, e: i32) -> f32 {
    ldexp64(f64::from(x), e) as f32
}

/// `v_div_scale_f64` for one lane (see [`div_scale_f32`]; thresholds 768 and 53, scale 2^128).
pub fn div_scale_f64(s0: u64, s1: u64, s2: u64) -> (u64, bool) {
    let (x0, den, num) = (f64::from_bits(s0), f64::from_bits(s1), f64::from_bits(s2));
    let mut vcc = false;
    let mut d = x0;
    let denorm = |v: f64| v != 0.0 && v.abs() < f64::MIN_POSITIVE;
    if num == 0.0 || den == 0.0 {
        d = f64::NAN;
    } else if exponent64(s2) - exponent64(s1) >= 768 {
        vcc = true;
        if s0 == s1 {
            d = ldexp64(x0, 128);
        }
    } else if denorm(den) {
        d = ldexp64(x0, 128);
    } else if denorm(1.0 / den) && denorm(num / den) {
        // the denominator is near the top of the range: scaling it down makes 1/den
        // normal, and v_div_fmas scales the (then normal) quotient back down. (Scaling it
        // up, as for the near-overflow case, overflows: 1.0 / 1.7e308 came out as inf.)
        vcc = true;
        if s0 == s1 {
            d = ldexp64(x0, -128);
        }
    } else if denorm(1.0 / den) {
        d = ldexp64(x0, -128);
    } else if denorm(num / den) {
        vcc = true;
        if s0 == s2 {
            d = ldexp64(x0, 128);
        }
    } else if exponent64(s2) <= 53 {
        d = ldexp64(x0, 128);
    }
    (d.to_bits(), vcc)
}

/// `v_div_fmas_f32` for one lane: `fma(s0, s1, s2)`, rounded once; when the lane's VCC bit
/// (set by `v_div_scale`) says an operand was pre-scaled, the result is rescaled by 2^64
/// if `s2`'s exponent is at least 127 (the denominator was scaled up) and by 2^-64
/// otherwise (the numerator was scaled up).
pub fn div_fmas_f32(s0: u32, s1: u32, s2: u32, vcc: bool, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let (x, y, z) = (f32_in(s0, dn), f32_in(s1, dn), f32_in(s2, dn));
    let (hi, lo) = two_sum(f64::from(x) * f64::from(y), f64::from(z));
    let scale = if !vcc {
        1.0
    } else if exponent32(s2) >= 127 {
        2f64.powi(64)
    } else {
        2f64.powi(-64)
    };
    f32_out(round_to_f32(hi * scale, lo * scale, mode.round_f32()), dn)
}

/// `v_div_fmas_f64` for one lane: as [`div_fmas_f32`] with threshold 1023 and scale 2^±128.
pub fn div_fmas_f64(s0: u64, s1: u64, s2: u64, vcc: bool, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    let (x, y, z) = (f64_in(s0, dn), f64_in(s1, dn), f64_in(s2, dn));
    if !vcc {
        return fma_f64(s0, s1, s2, mode);
    }
    // one rounding of the scaled result: scaling by a power of two is exact unless the
    // result is denormal, so compute the fma at full precision first when it may be
    let e = if exponent64(s2) >= 1023 { 128 } else { -128 };
    let r = x.mul_add(y, z);
    let scaled = ldexp64(r, e);
    if scaled != 0.0 && scaled.abs() < f64::MIN_POSITIVE {
        // fold the scale into an operand instead so the denormal result is rounded once
        return f64_out(x.mul_add(ldexp64(y, e), ldexp64(z, e)), dn);
    }
    f64_out(scaled, dn)
}

/// `v_div_fixup_f32` for one lane: `s0` the quotient, `s1` the denominator, `s2` the
/// numerator; handles NaN, infinities, zeros and out-of-range exponents, else returns the
/// quotient with the sign of `s1 ^ s2`. A NaN quotient from finite, nonzero operands means
/// the scaled quotient overflowed in the refinement steps: the result is a signed infinity
/// (what a correctly rounded overflow gives; the helper sequence relies on it).
pub fn div_fixup_f32(s0: u32, s1: u32, s2: u32) -> u32 {
    let (den, num) = (f32::from_bits(s1), f32::from_bits(s2));
    let sign = (s1 ^ s2) & 0x8000_0000;
    if num.is_nan() {
        s2 | 0x0040_0000
    } else if den.is_nan() {
        s1 | 0x0040_0000
    } else if (den == 0.0 && num == 0.0) || (den.is_infinite() && num.is_infinite()) {
        0xffc0_0000
    } else if den == 0.0 || num.is_infinite() {
        sign | 0x7f80_0000
    } else if den.is_infinite() || num == 0.0 || exponent32(s2) - exponent32(s1) < -150 {
        sign // x/inf, 0/y, or underflow
    } else if exponent32(s1) == 255 || f32::from_bits(s0).is_nan() {
        // overflow; a NaN quotient of finite operands is a scaled quotient that overflowed
        // inside the helper sequence
        sign | 0x7f80_0000
    } else {
        sign | (s0 & 0x7fff_ffff)
    }
}

/// `v_div_fixup_f64` for one lane (see [`div_fixup_f32`]; underflow below -1075).
pub fn div_fixup_f64(s0: u64, s1: u64, s2: u64) -> u64 {
    let (den, num) = (f64::from_bits(s1), f64::from_bits(s2));
    let sign = (s1 ^ s2) & (1 << 63);
    let inf = 0x7ff0_0000_0000_0000u64;
    if num.is_nan() {
        s2 | 0x0008_0000_0000_0000
    } else if den.is_nan() {
        s1 | 0x0008_0000_0000_0000
    } else if (den == 0.0 && num == 0.0) || (den.is_infinite() && num.is_infinite()) {
        0xfff8_0000_0000_0000
    } else if den == 0.0 || num.is_infinite() {
        sign | inf
    } else if den.is_infinite() || num == 0.0 || exponent64(s2) - exponent64(s1) < -1075 {
        sign
    } else if exponent64(s1) == 0x7ff || f64::from_bits(s0).is_nan() {
        sign | inf
    } else {
        sign | (s0 & !(1 << 63))
    }
}

// ---------------------------------------------------------------- transcendentals

/// `v_rcp_f32`: 1/x (the hardware is within 1 ulp; this gives the correctly rounded value);
/// ±0 → ±inf, ±inf → ±0.
pub fn rcp_f32(a: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let x = f32_in(a, dn);
    f32_out((1.0 / f64::from(x)) as f32, dn)
}

/// `v_rsq_f32`: 1/sqrt(x); -x → NaN, ±0 → ±inf.
pub fn rsq_f32(a: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let x = f32_in(a, dn);
    let r = if x == 0.0 {
        f32::INFINITY.copysign(x)
    } else {
        (1.0 / f64::from(x).sqrt()) as f32
    };
    f32_out(r, dn)
}

/// `v_sqrt_f32`: sqrt(x), -0 → -0, negative → NaN.
pub fn sqrt_f32(a: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let x = f32_in(a, dn);
    let r = match mode.round_f32() {
        Round::NearestEven => x.sqrt(),
        rm => {
            let s = f64::from(x).sqrt();
            let rem = (-s).mul_add(s, f64::from(x));
            round_to_f32(s, rem, rm)
        }
    };
    f32_out(r, dn)
}

/// `v_rcp_f64`.
pub fn rcp_f64(a: u64, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    f64_out(1.0 / f64_in(a, dn), dn)
}

/// `v_rsq_f64`.
pub fn rsq_f64(a: u64, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    let x = f64_in(a, dn);
    let r = if x == 0.0 {
        f64::INFINITY.copysign(x)
    } else {
        1.0 / x.sqrt()
    };
    f64_out(r, dn)
}

/// `v_sqrt_f64`.
pub fn sqrt_f64(a: u64, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    f64_out(f64_in(a, dn).sqrt(), dn)
}

/// `v_exp_f32`: 2^x.
pub fn exp_f32(a: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    f32_out(f64::from(f32_in(a, dn)).exp2() as f32, dn)
}

/// `v_log_f32`: log2(x); ±0 → -inf, negative → NaN.
pub fn log_f32(a: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let x = f32_in(a, dn);
    let r = if x == 0.0 {
        f32::NEG_INFINITY
    } else {
        f64::from(x).log2() as f32
    };
    f32_out(r, dn)
}

/// `v_sin_f32`: sin(2π·x) (the argument is in revolutions).
pub fn sin_f32(a: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let x = f64::from(f32_in(a, dn));
    let r = if x.is_infinite() {
        f64::NAN
    } else {
        (x.fract() * std::f64::consts::TAU).sin()
    };
    f32_out(r as f32, dn)
}

/// `v_cos_f32`: cos(2π·x).
pub fn cos_f32(a: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let x = f64::from(f32_in(a, dn));
    let r = if x.is_infinite() {
        f64::NAN
    } else {
        (x.fract() * std::f64::consts::TAU).cos()
    };
    f32_out(r as f32, dn)
}

/// `v_fract_f32`: `x - floor(x)`, at most the largest f32 below 1.0; NaN passes, ±inf → NaN.
pub fn fract_f32(a: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let x = f32_in(a, dn);
    let r = if x.is_infinite() {
        f32::NAN
    } else {
        (x - x.floor()).min(f32::from_bits(0x3f7f_ffff))
    };
    f32_out(r, dn)
}

/// `v_fract_f64`.
pub fn fract_f64(a: u64, mode: Mode) -> u64 {
    let dn = mode.denorm_f64_f16();
    let x = f64_in(a, dn);
    let r = if x.is_infinite() {
        f64::NAN
    } else {
        (x - x.floor()).min(f64::from_bits(0x3fef_ffff_ffff_ffff))
    };
    f64_out(r, dn)
}

/// `v_rndne_f32`: round to nearest integer, ties to even.
pub fn rndne_f32(a: u32) -> u32 {
    f32::from_bits(a).round_ties_even().to_bits()
}

/// `v_rndne_f64`.
pub fn rndne_f64(a: u64) -> u64 {
    f64::from_bits(a).round_ties_even().to_bits()
}

// ---------------------------------------------------------------- conversions

/// `v_cvt_i32_f32`: truncate toward zero, saturating; NaN → 0.
pub fn cvt_i32_f32(a: u32, mode: Mode) -> u32 {
    (f32_in(a, mode.denorm_f32()) as i32) as u32
}

/// `v_cvt_u32_f32`: truncate, saturating at 0 and 2^32-1; NaN → 0.
pub fn cvt_u32_f32(a: u32, mode: Mode) -> u32 {
    f32_in(a, mode.denorm_f32()) as u32
}

/// `v_cvt_f32_i32`, rounded per MODE.
pub fn cvt_f32_i32(a: u32, mode: Mode) -> u32 {
    round_to_f32(f64::from(a as i32), 0.0, mode.round_f32()).to_bits()
}

/// `v_cvt_f32_u32`, rounded per MODE.
pub fn cvt_f32_u32(a: u32, mode: Mode) -> u32 {
    round_to_f32(f64::from(a), 0.0, mode.round_f32()).to_bits()
}

/// `v_cvt_i32_f64`: truncate, saturating; NaN → 0.
pub fn cvt_i32_f64(a: u64) -> u32 {
    (f64::from_bits(a) as i32) as u32
}

/// `v_cvt_u32_f64`: truncate, saturating; NaN → 0.
pub fn cvt_u32_f64(a: u64) -> u32 {
    f64::from_bits(a) as u32
}

/// `v_cvt_f64_i32` (exact).
pub fn cvt_f64_i32(a: u32) -> u64 {
    f64::from(a as i32).to_bits()
}

/// `v_cvt_f64_u32` (exact).
pub fn cvt_f64_u32(a: u32) -> u64 {
    f64::from(a).to_bits()
}

/// `v_cvt_f32_f64`, rounded per MODE's f32 rounding, flushed per the f32 denormal mode.
pub fn cvt_f32_f64(a: u64, mode: Mode) -> u32 {
    let x = f64_in(a, mode.denorm_f64_f16());
    f32_out(round_to_f32(x, 0.0, mode.round_f32()), mode.denorm_f32())
}

/// `v_cvt_f64_f32` (exact).
pub fn cvt_f64_f32(a: u32, mode: Mode) -> u64 {
    f64_out(
        f64::from(f32_in(a, mode.denorm_f32())),
        mode.denorm_f64_f16(),
    )
}

/// `v_cvt_f32_ubyteN`: byte `n` of `a` as f32.
pub fn cvt_f32_ubyte(a: u32, n: u32) -> u32 {
    (((a >> (8 * (n & 3))) & 0xff) as f32).to_bits()
}

/// f16 bits to f32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = if exp == 0x1f {
        sign | 0x7f80_0000 | (man << 13)
    } else if exp == 0 {
        if man == 0 {
            sign
        } else {
            // denormal: man * 2^-24, exact in f32
            let magnitude = (man as f32) * 2f32.powi(-24);
            return if sign != 0 { -magnitude } else { magnitude };
        }
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

/// f32 to f16 bits under `round` (NaN stays NaN and is quieted; overflow per the mode).
pub fn f32_to_f16(x: f32, round: Round) -> u16 {
    f64_to_f16(f64::from(x), round)
}

/// f64 to f16 bits under `round`, one rounding.
pub fn f64_to_f16(x: f64, round: Round) -> u16 {
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_nan() {
        let payload = ((x.to_bits() >> 42) & 0x3ff) as u16;
        return sign | 0x7e00 | payload;
    }
    let ax = x.abs();
    if ax.is_infinite() {
        return sign | 0x7c00;
    }
    // scaled to units of the f16 denormal ulp (2^-24), or of the normal ulp
    let e = if ax == 0.0 {
        -25
    } else {
        ax.log2().floor() as i32
    };
    let ulp_exp = (e - 10).max(-24);
    let scaled = ax * 2f64.powi(-ulp_exp); // exact (power of two scale)
    let floor = scaled.floor();
    let frac = scaled - floor;
    let up = match round {
        Round::NearestEven => frac > 0.5 || (frac == 0.5 && (floor as u64) & 1 == 1),
        Round::PlusInf => frac > 0.0 && sign == 0,
        Round::MinusInf => frac > 0.0 && sign != 0,
        Round::Zero => false,
    };
    let mant = floor as u64 + u64::from(up);
    // value = mant * 2^ulp_exp; encode
    let value = (mant as f64) * 2f64.powi(ulp_exp);
    if value >= 65536.0 || (value > 65504.0) {
        let to_inf = match round {
            Round::NearestEven => true,
            Round::PlusInf => sign == 0,
            Round::MinusInf => sign != 0,
            Round::Zero => false,
        };
        return sign | if to_inf { 0x7c00 } else { 0x7bff };
    }
    if value < 2f64.powi(-14) {
        return sign | (mant as u16);
    }
    let ve = value.log2().floor() as i32;
    let m = ((value * 2f64.powi(10 - ve)) as u64).saturating_sub(1024);
    sign | (((ve + 15) as u16) << 10) | (m as u16)
}

/// `v_cvt_pkrtz_f16_f32`: two f32 to packed f16, rounding toward zero.
pub fn cvt_pkrtz_f16_f32(a: u32, b: u32, mode: Mode) -> u32 {
    let dn = mode.denorm_f32();
    let lo = f32_to_f16(f32_in(a, dn), Round::Zero);
    let hi = f32_to_f16(f32_in(b, dn), Round::Zero);
    u32::from(lo) | (u32::from(hi) << 16)
}

/// `v_cvt_f16_f32`: rounded per MODE's f16 rounding.
pub fn cvt_f16_f32(a: u32, mode: Mode) -> u32 {
    u32::from(f32_to_f16(
        f32_in(a, mode.denorm_f32()),
        mode.round_f64_f16(),
    ))
}

/// `v_cvt_f32_f16` (exact).
pub fn cvt_f32_f16(a: u32, mode: Mode) -> u32 {
    let x = f16_to_f32(a as u16);
    let flushed = if mode.denorm_f64_f16().flushes_input() && a & 0x7c00 == 0 {
        f32::from_bits(u32::from(a as u16 & 0x8000) << 16)
    } else {
        x
    };
    f32_out(flushed, mode.denorm_f32())
}

/// An f16 binary op computed in f64 and rounded once to f16 under MODE (exact for add, sub
/// and mul of f16 operands).
pub fn f16_binop(a: u32, b: u32, mode: Mode, op: impl Fn(f64, f64) -> f64) -> u32 {
    let dn = mode.denorm_f64_f16();
    let rd = |h: u32| {
        let h = h as u16;
        if dn.flushes_input() && h & 0x7c00 == 0 {
            if h & 0x8000 != 0 {
                -0.0
            } else {
                0.0
            }
        } else {
            f64::from(f16_to_f32(h))
        }
    };
    let r = f64_to_f16(op(rd(a), rd(b)), mode.round_f64_f16());
    let r = if dn.flushes_output() && r & 0x7c00 == 0 {
        r & 0x8000
    } else {
        r
    };
    u32::from(r)
}
