//! The semantic helpers as pure functions, for what the decoder cannot reach yet (DPP) and
//! for properties over many inputs.

use isa::exec::env::AtomicOp;
use isa::exec::float::{self, f16_to_f32, f32_to_f16};
use isa::exec::lanes::{dpp_gather, dpp_source_lane, swizzle_source_lane};
use isa::exec::mfma::MfmaF32;
use isa::exec::wave::{Mode, Round};
use proptest::prelude::*;

#[test]
fn dpp_row_shifts_rotates_and_broadcasts() {
    // row_shl:1 (0x101): lane reads lane + 1 within its row of 16; lane 15 has no source
    assert_eq!(dpp_source_lane(0x101, 0), Some(1));
    assert_eq!(dpp_source_lane(0x101, 15), None);
    assert_eq!(dpp_source_lane(0x101, 16), Some(17));
    // row_shr:3 (0x113)
    assert_eq!(dpp_source_lane(0x113, 19), Some(16));
    assert_eq!(
        dpp_source_lane(0x113, 18),
        None,
        "lane 2 of row 1 has no lane 3 to its left"
    );
    // row_ror:4 (0x124): rotates within the row
    assert_eq!(dpp_source_lane(0x124, 33), Some(32 + 13));
    // wave_shr:1 (0x138), wave_rol:1 (0x134)
    assert_eq!(dpp_source_lane(0x138, 0), None);
    assert_eq!(dpp_source_lane(0x134, 63), Some(0));
    // row_mirror, row_half_mirror
    assert_eq!(dpp_source_lane(0x140, 17), Some(30));
    assert_eq!(dpp_source_lane(0x141, 9), Some(14));
    // row_bcast:15 / row_bcast:31
    assert_eq!(dpp_source_lane(0x142, 20), Some(15));
    assert_eq!(dpp_source_lane(0x142, 5), None);
    assert_eq!(dpp_source_lane(0x143, 40), Some(31));
    // quad_perm [3,2,1,0] = 0x1b
    assert_eq!(dpp_source_lane(0x1b, 4), Some(7));
    assert_eq!(dpp_source_lane(0x1b, 7), Some(4));
}

#[test]
fn dpp_masks_and_bound_ctrl() {
    let src: [u32; 64] = core::array::from_fn(|l| 100 + l as u32);
    // row_shl:1, all rows and banks, lane 15 invalid: without bound_ctrl it keeps its value
    let (vals, write) = dpp_gather(&src, 0x101, u64::MAX, 0xf, 0xf, false);
    assert_eq!(vals[0], 101);
    assert_eq!(write & (1 << 15), 0);
    let (vals, write) = dpp_gather(&src, 0x101, u64::MAX, 0xf, 0xf, true);
    assert_eq!(
        (vals[15], write & (1 << 15) != 0),
        (0, true),
        "bound_ctrl reads 0"
    );
    // row_mask 0b0001: only row 0 writes; bank_mask 0b0010: only lanes 4-7 of each row
    let (_, write) = dpp_gather(&src, 0xe4, u64::MAX, 0b0001, 0b0010, false);
    assert_eq!(write, 0xf0);
    // a source lane disabled in EXEC counts as invalid
    let (_, write) = dpp_gather(&src, 0x101, !2, 0xf, 0xf, false);
    assert_eq!(write & 1, 0);
}

#[test]
fn swizzle_modes() {
    // bitmask mode: and 0x1f, or 0, xor 1 → swap neighbours (offset = 1 << 10 | 0x1f)
    assert_eq!(swizzle_source_lane((1 << 10) | 0x1f, 6), 7);
    assert_eq!(swizzle_source_lane((1 << 10) | 0x1f, 39), 38);
    // and 0 or 5: broadcast lane 5 of each half
    assert_eq!(swizzle_source_lane(5 << 5, 20), 5);
    assert_eq!(swizzle_source_lane(5 << 5, 50), 37);
    // quad-permute mode [1,0,3,2]
    assert_eq!(swizzle_source_lane(0x8000 | 0b10_11_00_01, 9), 8);
}

#[test]
fn mfma_layouts_follow_the_mi200_guide() {
    let s = MfmaF32::M32N32K2;
    assert_eq!(s.result_registers(), 16);
    assert_eq!(s.a_lane(5, 1, 0), 37);
    assert_eq!(s.d_location(0, 0, 0), (0, 0));
    assert_eq!(s.d_location(4, 3, 0), (0, 35));
    assert_eq!(s.d_location(8, 0, 0), (4, 0));
    assert_eq!(s.d_location(31, 31, 0), (15, 63));
    let s = MfmaF32::M16N16K4;
    assert_eq!(s.result_registers(), 4);
    assert_eq!(s.d_location(5, 2, 0), (1, 18));
    assert_eq!(MfmaF32::M32N32K1.result_registers(), 32);
    assert_eq!(MfmaF32::M32N32K1.d_location(0, 0, 1), (16, 0));
    assert_eq!(MfmaF32::M16N16K1.d_location(0, 0, 3), (12, 0));
    // every output element has one home
    for shape in [
        MfmaF32::M32N32K1,
        MfmaF32::M32N32K2,
        MfmaF32::M16N16K1,
        MfmaF32::M16N16K4,
        MfmaF32::M4N4K1,
    ] {
        let (m, n, _, blocks) = shape.dims();
        let mut seen = std::collections::HashSet::new();
        for b in 0..blocks {
            for i in 0..m {
                for j in 0..n {
                    assert!(seen.insert(shape.d_location(i, j, b)), "{shape:?}");
                }
            }
        }
        assert_eq!(seen.len(), shape.result_registers() * 64);
    }
}

#[test]
fn atomic_ops_as_defined() {
    assert_eq!(
        AtomicOp::Inc.apply(5, 5, 0, false),
        0,
        "inc wraps to 0 at src"
    );
    assert_eq!(AtomicOp::Inc.apply(4, 5, 0, false), 5);
    assert_eq!(AtomicOp::Dec.apply(0, 7, 0, false), 7, "dec of 0 gives src");
    assert_eq!(
        AtomicOp::Dec.apply(9, 7, 0, false),
        7,
        "dec above src gives src"
    );
    assert_eq!(AtomicOp::Dec.apply(3, 7, 0, false), 2);
    assert_eq!(AtomicOp::CmpSwap.apply(3, 9, 3, false), 9);
    assert_eq!(AtomicOp::CmpSwap.apply(4, 9, 3, false), 4);
    assert_eq!(AtomicOp::SMax.apply(0xffff_ffff, 1, 0, false), 1);
    assert_eq!(AtomicOp::UMax.apply(0xffff_ffff, 1, 0, false), 0xffff_ffff);
    assert_eq!(AtomicOp::Add.apply(u64::MAX, 2, 0, true), 1);
    assert_eq!(
        AtomicOp::Add.apply(0xffff_ffff, 2, 0, false),
        1,
        "32-bit wraps at 2^32"
    );
}

#[test]
fn f16_conversion_facts() {
    assert_eq!(f32_to_f16(1.0, Round::NearestEven), 0x3c00);
    assert_eq!(f32_to_f16(65504.0, Round::NearestEven), 0x7bff);
    assert_eq!(f32_to_f16(65520.0, Round::NearestEven), 0x7c00);
    assert_eq!(f32_to_f16(65520.0, Round::Zero), 0x7bff);
    assert_eq!(f32_to_f16(2f32.powi(-24), Round::NearestEven), 0x0001);
    assert_eq!(
        f32_to_f16(2f32.powi(-25), Round::NearestEven),
        0x0000,
        "tie to even (0)"
    );
    assert_eq!(f32_to_f16(-0.0, Round::NearestEven), 0x8000);
    assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(f16_to_f32(0xfc00), f32::NEG_INFINITY);
    assert!(f16_to_f32(0x7e00).is_nan());
}

proptest! {
    #[test]
    fn f16_round_trip_is_exact(h in 0u16..0x7c00) {
        let x = f16_to_f32(h);
        prop_assert_eq!(f32_to_f16(x, Round::NearestEven), h);
        prop_assert_eq!(f32_to_f16(-x, Round::NearestEven), h | 0x8000);
    }

    #[test]
    fn f32_ops_in_nearest_mode_match_ieee(a in any::<u32>(), b in any::<u32>(), c in any::<u32>()) {
        let mode = Mode(0xf << 4); // denormals kept, round to nearest even
        let (x, y, z) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
        let same = |got: u32, want: f32| got == want.to_bits() || (want.is_nan() && f32::from_bits(got).is_nan());
        prop_assert!(same(float::add_f32(a, b, mode), x + y));
        prop_assert!(same(float::mul_f32(a, b, mode), x * y));
        prop_assert!(same(float::fma_f32(a, b, c, mode), x.mul_add(y, z)));
    }

    #[test]
    fn directed_rounding_brackets_the_exact_sum(a in any::<u32>(), b in any::<u32>()) {
        let (x, y) = (f32::from_bits(a), f32::from_bits(b));
        prop_assume!(x.is_finite() && y.is_finite());
        let exact = f64::from(x) + f64::from(y); // exact: f32 sums fit in f64 unless far apart
        prop_assume!((exact - f64::from(x)) - f64::from(y) == 0.0);
        let up = f32::from_bits(float::add_f32(a, b, Mode((0xf << 4) | 1)));
        let down = f32::from_bits(float::add_f32(a, b, Mode((0xf << 4) | 2)));
        let zero = f32::from_bits(float::add_f32(a, b, Mode((0xf << 4) | 3)));
        if up.is_finite() { prop_assert!(f64::from(up) >= exact); }
        if down.is_finite() { prop_assert!(f64::from(down) <= exact); }
        prop_assert!(f64::from(zero).abs() <= exact.abs());
        prop_assert!(up == down || next_up(down) == up);
    }

    #[test]
    fn f64_division_sequence_pieces_round_trip(a in 1e-300f64..1e300, b in 1e-300f64..1e300) {
        // div_fixup returns the quotient when nothing special applies
        let q = a / b;
        prop_assert_eq!(float::div_fixup_f64(q.to_bits(), b.to_bits(), a.to_bits()), q.to_bits());
    }
}

fn next_up(x: f32) -> f32 {
    if x == 0.0 {
        return f32::from_bits(1);
    }
    if x > 0.0 {
        f32::from_bits(x.to_bits() + 1)
    } else {
        f32::from_bits(x.to_bits() - 1)
    }
}
