//! Integer and bit semantics shared by the scalar (SOP*) and vector (VOP*) forms, as pure
//! functions of their operands. Shift amounts and bit-field offsets use only their low bits
//! (5 for 32-bit, 6 for 64-bit), as the ISA defines: a shift "by 32" is a shift by 0.

/// `v_add_co_u32` / `s_add_u32`: sum and carry out.
#[inline]
pub fn add_co(a: u32, b: u32) -> (u32, bool) {
    a.overflowing_add(b)
}

/// `v_addc_co_u32` / `s_addc_u32`: sum with carry in, and carry out.
#[inline]
pub fn addc(a: u32, b: u32, carry_in: bool) -> (u32, bool) {
    let wide = u64::from(a) + u64::from(b) + u64::from(carry_in);
    (wide as u32, wide >> 32 != 0)
}

/// `v_sub_co_u32` / `s_sub_u32`: difference and borrow out.
#[inline]
pub fn sub_co(a: u32, b: u32) -> (u32, bool) {
    a.overflowing_sub(b)
}

/// `v_subb_co_u32` / `s_subb_u32`: `a - b - borrow_in`, and borrow out.
#[inline]
pub fn subb(a: u32, b: u32, borrow_in: bool) -> (u32, bool) {
    let rhs = u64::from(b) + u64::from(borrow_in);
    (a.wrapping_sub(rhs as u32), rhs > u64::from(a))
}

/// `s_add_i32`: sum and signed overflow (SCC).
#[inline]
pub fn add_i32(a: u32, b: u32) -> (u32, bool) {
    let (v, o) = (a as i32).overflowing_add(b as i32);
    (v as u32, o)
}

/// `s_sub_i32`: difference and signed overflow (SCC).
#[inline]
pub fn sub_i32(a: u32, b: u32) -> (u32, bool) {
    let (v, o) = (a as i32).overflowing_sub(b as i32);
    (v as u32, o)
}

/// `v_add_u32` with the clamp bit: unsigned saturation.
#[inline]
pub fn add_u32_clamped(a: u32, b: u32) -> u32 {
    a.saturating_add(b)
}

/// `v_sub_u32` with the clamp bit: unsigned saturation at 0.
#[inline]
pub fn sub_u32_clamped(a: u32, b: u32) -> u32 {
    a.saturating_sub(b)
}

/// `v_mul_u32_u24`: low 32 bits of the product of the low 24 bits.
#[inline]
pub fn mul_u32_u24(a: u32, b: u32) -> u32 {
    (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff)
}

/// `v_mul_hi_u32_u24`: bits `[47:32]` of the product of the low 24 bits.
#[inline]
pub fn mul_hi_u32_u24(a: u32, b: u32) -> u32 {
    ((u64::from(a & 0xff_ffff) * u64::from(b & 0xff_ffff)) >> 32) as u32
}

fn sext24(v: u32) -> i64 {
    i64::from(((v << 8) as i32) >> 8)
}

/// `v_mul_i32_i24`: low 32 bits of the signed product of the low 24 bits.
#[inline]
pub fn mul_i32_i24(a: u32, b: u32) -> u32 {
    (sext24(a) * sext24(b)) as u32
}

/// `v_mul_hi_i32_i24`: bits `[47:32]` of the signed 24-bit product (sign-extended).
#[inline]
pub fn mul_hi_i32_i24(a: u32, b: u32) -> u32 {
    ((sext24(a) * sext24(b)) >> 32) as u32
}

/// `v_mul_hi_u32`.
#[inline]
pub fn mul_hi_u32(a: u32, b: u32) -> u32 {
    ((u64::from(a) * u64::from(b)) >> 32) as u32
}

/// `v_mul_hi_i32`.
#[inline]
pub fn mul_hi_i32(a: u32, b: u32) -> u32 {
    ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32
}

/// `v_mad_u64_u32`: `a * b + c` (64-bit) and the carry out of bit 63.
#[inline]
pub fn mad_u64_u32(a: u32, b: u32, c: u64) -> (u64, bool) {
    let wide = u128::from(a) * u128::from(b) + u128::from(c);
    (wide as u64, wide >> 64 != 0)
}

/// `v_mad_i64_i32`: `a * b + c` signed, and signed overflow of the 64-bit result.
#[inline]
pub fn mad_i64_i32(a: u32, b: u32, c: u64) -> (u64, bool) {
    let wide = i128::from(a as i32) * i128::from(b as i32) + i128::from(c as i64);
    (wide as u64, wide != i128::from(wide as i64))
}

/// 32-bit logical shift left by `amount[4:0]` (`s_lshl_b32`, `v_lshlrev_b32` with swapped
/// operands).
#[inline]
pub fn shl32(v: u32, amount: u32) -> u32 {
    v << (amount & 31)
}

/// 32-bit logical shift right by `amount[4:0]`.
#[inline]
pub fn lshr32(v: u32, amount: u32) -> u32 {
    v >> (amount & 31)
}

/// 32-bit arithmetic shift right by `amount[4:0]`.
#[inline]
pub fn ashr32(v: u32, amount: u32) -> u32 {
    ((v as i32) >> (amount & 31)) as u32
}

/// 64-bit shift left by `amount[5:0]`.
#[inline]
pub fn shl64(v: u64, amount: u32) -> u64 {
    v << (amount & 63)
}

/// 64-bit logical shift right by `amount[5:0]`.
#[inline]
pub fn lshr64(v: u64, amount: u32) -> u64 {
    v >> (amount & 63)
}

/// 64-bit arithmetic shift right by `amount[5:0]`.
#[inline]
pub fn ashr64(v: u64, amount: u32) -> u64 {
    ((v as i64) >> (amount & 63)) as u64
}

/// Mask of the low `width` bits (width ≥ 32 gives all ones).
#[inline]
fn low_mask32(width: u32) -> u32 {
    if width >= 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    }
}

/// `v_bfe_u32`: `(s0 >> s1[4:0]) & ((1 << s2[4:0]) - 1)`.
#[inline]
pub fn bfe_u32(s0: u32, offset: u32, width: u32) -> u32 {
    (s0 >> (offset & 31)) & low_mask32(width & 31)
}

/// `v_bfe_i32`: the field sign-extended from its top bit; width 0 gives 0.
#[inline]
pub fn bfe_i32(s0: u32, offset: u32, width: u32) -> u32 {
    let w = width & 31;
    if w == 0 {
        return 0;
    }
    let field = (s0 >> (offset & 31)) & low_mask32(w);
    let shift = 32 - w;
    (((field << shift) as i32) >> shift) as u32
}

/// `s_bfe_u32`: offset in `s1[4:0]`, width in `s1[22:16]` (a width ≥ 32 keeps everything
/// above the offset).
#[inline]
pub fn s_bfe_u32(s0: u32, s1: u32) -> u32 {
    let width = (s1 >> 16) & 0x7f;
    (s0 >> (s1 & 31)) & low_mask32(width)
}

/// `s_bfe_i32`: as [`s_bfe_u32`], sign-extended from the field's top bit (width 0 gives 0).
#[inline]
pub fn s_bfe_i32(s0: u32, s1: u32) -> u32 {
    let width = (s1 >> 16) & 0x7f;
    if width == 0 {
        return 0;
    }
    if width >= 32 {
        return ((s0 as i32) >> (s1 & 31)) as u32;
    }
    let field = (s0 >> (s1 & 31)) & low_mask32(width);
    let shift = 32 - width;
    (((field << shift) as i32) >> shift) as u32
}

/// `s_bfe_u64`: offset in `s1[5:0]`, width in `s1[22:16]`.
#[inline]
pub fn s_bfe_u64(s0: u64, s1: u32) -> u64 {
    let width = (s1 >> 16) & 0x7f;
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (s0 >> (s1 & 63)) & mask
}

/// `s_bfe_i64`.
#[inline]
pub fn s_bfe_i64(s0: u64, s1: u32) -> u64 {
    let width = (s1 >> 16) & 0x7f;
    if width == 0 {
        return 0;
    }
    if width >= 64 {
        return ((s0 as i64) >> (s1 & 63)) as u64;
    }
    let field = (s0 >> (s1 & 63)) & ((1u64 << width) - 1);
    let shift = 64 - width;
    (((field << shift) as i64) >> shift) as u64
}

/// `v_bfi_b32` / `s_bfi`: bits of `s1` where `mask` is set, else bits of `s2`.
#[inline]
pub fn bfi(mask: u32, s1: u32, s2: u32) -> u32 {
    (mask & s1) | (!mask & s2)
}

/// `v_bfm_b32` / `s_bfm_b32`: `((1 << s0[4:0]) - 1) << s1[4:0]`.
#[inline]
pub fn bfm(width: u32, offset: u32) -> u32 {
    low_mask32(width & 31) << (offset & 31)
}

/// `v_alignbit_b32`: bits `[31:0]` of `{s0, s1} >> s2[4:0]`.
#[inline]
pub fn alignbit(s0: u32, s1: u32, s2: u32) -> u32 {
    ((((u64::from(s0)) << 32) | u64::from(s1)) >> (s2 & 31)) as u32
}

/// `v_alignbyte_b32`: bits `[31:0]` of `{s0, s1} >> (8 * s2[1:0])`.
#[inline]
pub fn alignbyte(s0: u32, s1: u32, s2: u32) -> u32 {
    ((((u64::from(s0)) << 32) | u64::from(s1)) >> (8 * (s2 & 3))) as u32
}

/// `v_perm_b32`: each byte of `sel` picks a byte of `{s0, s1}` (0–3 from `s1`, 4–7 from
/// `s0`); 8–11 replicate the sign bit of bytes 1, 3, 5, 7; 12 gives 0x00; 13 and above 0xff.
#[inline]
pub fn perm(s0: u32, s1: u32, sel: u32) -> u32 {
    let combined = (u64::from(s0) << 32) | u64::from(s1);
    let mut out = 0u32;
    for i in 0..4 {
        let s = (sel >> (8 * i)) & 0xff;
        let byte = match s {
            0..=7 => ((combined >> (8 * s)) & 0xff) as u32,
            8..=11 => {
                let bit = 15 + 16 * (s - 8);
                if (combined >> bit) & 1 != 0 {
                    0xff
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xff,
        };
        out |= byte << (8 * i);
    }
    out
}

/// `v_mbcnt_lo_u32_b32` for `lane`: set bits of `mask` in lanes `0..lane` (of lanes 0–31),
/// plus `add`.
#[inline]
pub fn mbcnt_lo(mask: u32, add: u32, lane: usize) -> u32 {
    let below = if lane >= 32 {
        u32::MAX
    } else {
        (1u32 << lane) - 1
    };
    (mask & below).count_ones().wrapping_add(add)
}

/// `v_mbcnt_hi_u32_b32` for `lane`: set bits of `mask` in lanes `32..lane`, plus `add`.
#[inline]
pub fn mbcnt_hi(mask: u32, add: u32, lane: usize) -> u32 {
    let below = if lane < 32 {
        0
    } else if lane >= 64 {
        u32::MAX
    } else {
        (1u32 << (lane - 32)) - 1
    };
    (mask & below).count_ones().wrapping_add(add)
}

/// `v_ffbh_u32` / `s_flbit_i32_b32`: leading zeros, or `0xffffffff` for 0.
#[inline]
pub fn ffbh_u32(v: u32) -> u32 {
    if v == 0 {
        u32::MAX
    } else {
        v.leading_zeros()
    }
}

/// `v_ffbl_b32` / `s_ff1_i32_b32`: trailing zeros, or `0xffffffff` for 0.
#[inline]
pub fn ffbl(v: u32) -> u32 {
    if v == 0 {
        u32::MAX
    } else {
        v.trailing_zeros()
    }
}

/// `v_ffbh_i32` / `s_flbit_i32`: count of bits equal to the sign after it, or `0xffffffff`
/// for 0 and -1.
#[inline]
pub fn ffbh_i32(v: u32) -> u32 {
    if v == 0 || v == u32::MAX {
        u32::MAX
    } else if (v as i32) < 0 {
        (!v).leading_zeros()
    } else {
        v.leading_zeros()
    }
}

/// `v_sad_u8`: sum of absolute differences of the four bytes, plus `acc`.
#[inline]
pub fn sad_u8(a: u32, b: u32, acc: u32) -> u32 {
    let mut s = acc;
    for i in 0..4 {
        let x = (a >> (8 * i)) & 0xff;
        let y = (b >> (8 * i)) & 0xff;
        s = s.wrapping_add(x.abs_diff(y));
    }
    s
}

/// `v_sad_u32`: `|a - b| + acc`.
#[inline]
pub fn sad_u32(a: u32, b: u32, acc: u32) -> u32 {
    a.abs_diff(b).wrapping_add(acc)
}

/// `v_med3_i32`: median of three signed values.
#[inline]
pub fn med3_i32(a: u32, b: u32, c: u32) -> u32 {
    let (a, b, c) = (a as i32, b as i32, c as i32);
    a.max(b).min(a.min(b).max(c)) as u32
}

/// `v_med3_u32`: median of three unsigned values.
#[inline]
pub fn med3_u32(a: u32, b: u32, c: u32) -> u32 {
    a.max(b).min(a.min(b).max(c))
}

/// `s_quadmask_b64`: bit `i` set when any of bits `4i..4i+3` is set.
#[inline]
pub fn quadmask64(v: u64) -> u64 {
    let mut out = 0;
    for i in 0..16 {
        if (v >> (4 * i)) & 0xf != 0 {
            out |= 1 << i;
        }
    }
    out
}

/// `s_wqm_b64`: every quad with any bit set becomes all ones.
#[inline]
pub fn wqm64(v: u64) -> u64 {
    let mut out = 0;
    for i in 0..16 {
        if (v >> (4 * i)) & 0xf != 0 {
            out |= 0xf << (4 * i);
        }
    }
    out
}

/// `s_brev_b32` / `v_bfrev_b32`.
#[inline]
pub fn brev32(v: u32) -> u32 {
    v.reverse_bits()
}
