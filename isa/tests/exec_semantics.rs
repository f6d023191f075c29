//! Per-family semantic tests: each program is assembled by llvm-mc-15, run on one wave, and
//! the registers compared with the values the Vega / MI200 ISA guides define.

mod assemble;

use assemble::asm;

use isa::exec::fault::WaveFault;
use isa::exec::wave::{hwreg, sreg, HwRegField};
use isa::exec::{CodeCache, HostEnv, Mode, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;

struct Run {
    wave: Wave,
    env: HostEnv,
    cache: CodeCache,
}

impl Run {
    fn new(src: &str, target: Target) -> Run {
        let mcpu = target.name();
        let code = asm(&format!("{src}\ns_endpgm\n"), mcpu);
        let mut wave = Wave::new(target, 32, 16);
        wave.pc = BASE;
        // the common default of compute dispatches: IEEE on, DX10 clamp on, f64/f16 denormals
        // on, f32 denormals flushed
        wave.mode = Mode((3 << 6) | (1 << 8) | (1 << 9));
        Run {
            wave,
            env: HostEnv::new(1024),
            cache: CodeCache::new(target, BASE, &code),
        }
    }

    fn gfx9(src: &str) -> Run {
        Run::new(src, Target::Gfx900)
    }

    fn go(&mut self) -> Stop {
        self.wave.run(&self.cache, &mut self.env, 10_000)
    }

    fn ok(mut self) -> Run {
        assert_eq!(self.go(), Stop::EndOfProgram);
        self
    }

    fn v(&self, r: usize) -> [u32; 64] {
        self.wave.vgpr[r]
    }
}

fn lanes_of(f: impl Fn(usize) -> u32) -> [u32; 64] {
    let mut a = [0u32; 64];
    for (l, x) in a.iter_mut().enumerate() {
        *x = f(l);
    }
    a
}

// ------------------------------------------------------------------ integer

#[test]
fn vector_add_with_carry_out_and_in() {
    let mut r =
        Run::gfx9("v_add_co_u32_e32 v2, vcc, v0, v1\nv_addc_co_u32_e32 v3, vcc, 0, v4, vcc");
    r.wave.vgpr[0] = lanes_of(|l| if l % 2 == 0 { u32::MAX } else { 5 });
    r.wave.vgpr[1] = [1; 64];
    let r = r.ok();
    for l in 0..64 {
        let carry = l % 2 == 0;
        assert_eq!(r.v(2)[l], if carry { 0 } else { 6 });
        assert_eq!(
            r.v(3)[l],
            u32::from(carry),
            "carry propagated by v_addc in lane {l}"
        );
    }
    assert_eq!(r.wave.vcc(), 0, "no carry out of 0 + 0 + 1");
}

#[test]
fn scalar_64bit_add_via_carry_and_borrow() {
    let mut r = Run::gfx9(
        "s_add_u32 s4, s0, s2\ns_addc_u32 s5, s1, s3\ns_sub_u32 s6, s0, s2\ns_cselect_b32 s7, 1, 0\ns_subb_u32 s8, s1, s3",
    );
    r.wave.set_sgpr64(0, 0x0000_0001_ffff_fffe);
    r.wave.set_sgpr64(2, 0x0000_0000_0000_0003);
    let r = r.ok();
    assert_eq!(r.wave.sgpr64(4), 0x0000_0002_0000_0001);
    assert_eq!(r.wave.sgpr[6], 0xffff_fffb);
    assert_eq!(r.wave.sgpr[7], 0, "0xfffffffe - 3 does not borrow");
    assert_eq!(r.wave.sgpr[8], 1);
}

#[test]
fn shifts_use_only_the_low_bits_of_the_amount() {
    let mut r = Run::gfx9(
        "v_lshlrev_b32_e32 v1, 33, v0\nv_lshrrev_b32_e32 v2, 32, v0\nv_ashrrev_i32_e32 v3, 63, v0\ns_lshl_b64 s[2:3], s[0:1], 65\nv_lshrrev_b64 v[4:5], 64, v[6:7]",
    );
    r.wave.vgpr[0] = [0x8000_0003; 64];
    r.wave.vgpr[6] = [0x1234_5678; 64];
    r.wave.vgpr[7] = [0x9abc_def0; 64];
    r.wave.set_sgpr64(0, 0x8000_0000_0000_0001);
    let r = r.ok();
    assert_eq!(r.v(1)[0], 0x0000_0006, "shift by 33 shifts by 1");
    assert_eq!(r.v(2)[0], 0x8000_0003, "shift by 32 shifts by 0");
    assert_eq!(
        r.v(3)[0],
        0xffff_ffff,
        "arithmetic shift by 63 shifts by 31"
    );
    assert_eq!(
        r.wave.sgpr64(2),
        0x0000_0000_0000_0002,
        "64-bit shift by 65 shifts by 1"
    );
    assert_eq!(
        (r.v(4)[0], r.v(5)[0]),
        (0x1234_5678, 0x9abc_def0),
        "64-bit shift by 64 shifts by 0"
    );
    assert!(r.wave.scc, "s_lshl_b64 sets SCC for a nonzero result");
}

#[test]
fn bit_field_ops() {
    let mut r = Run::gfx9(
        "s_mov_b32 s10, 0xff00ff00\ns_mov_b32 s11, 0x11223344\nv_bfe_u32 v1, v0, 4, 8\nv_bfe_i32 v2, v0, 4, 8\nv_bfe_u32 v3, v0, 4, 0\nv_bfi_b32 v4, s10, v0, 0\nv_alignbit_b32 v5, v0, s11, 8\nv_alignbyte_b32 v6, v0, s11, 3\ns_bfe_u32 s1, s0, 0x80004",
    );
    r.wave.vgpr[0] = [0x1234_5f80; 64];
    r.wave.sgpr[0] = 0x1234_5f80;
    let r = r.ok();
    assert_eq!(r.v(1)[0], 0xf8);
    assert_eq!(r.v(2)[0], 0xffff_fff8, "v_bfe_i32 sign-extends the field");
    assert_eq!(r.v(3)[0], 0, "width 0 gives 0");
    assert_eq!(r.v(4)[0], 0x1200_5f00);
    assert_eq!(r.v(5)[0], 0x8011_2233, "{{v0, lit}} >> 8");
    assert_eq!(r.v(6)[0], 0x345f_8011, "{{v0, lit}} >> 24");
    assert_eq!(r.wave.sgpr[1], 0xf8);
}

#[test]
fn v_perm_selects_bytes_and_constants() {
    let mut r = Run::gfx9(
        "s_mov_b32 s0, 0x03020100\ns_mov_b32 s1, 0x07060504\ns_mov_b32 s2, 0x0c0c0d0d\ns_mov_b32 s3, 0x08090a0b\nv_perm_b32 v2, v0, v1, s0\nv_perm_b32 v3, v0, v1, s1\nv_perm_b32 v4, v0, v1, s2\nv_perm_b32 v5, v0, v1, s3",
    );
    r.wave.vgpr[0] = [0x8877_6655; 64];
    r.wave.vgpr[1] = [0x4433_2211; 64];
    let r = r.ok();
    assert_eq!(r.v(2)[0], 0x4433_2211, "bytes 0-3 come from src1");
    assert_eq!(r.v(3)[0], 0x8877_6655, "bytes 4-7 come from src0");
    assert_eq!(r.v(4)[0], 0x0000_ffff, "12 gives 0x00, 13 gives 0xff");
    // 8: sign of byte 1 (0x22 → 0), 9: byte 3 (0x44 → 0), 10: byte 5 (0x66 → 0), 11: byte 7 (0x88 → ff)
    assert_eq!(r.v(5)[0], 0x0000_00ff);
}

#[test]
fn mbcnt_counts_lanes_below() {
    let r = Run::gfx9("v_mbcnt_lo_u32_b32 v0, -1, 0\nv_mbcnt_hi_u32_b32 v0, -1, v0\ns_mov_b32 s0, 0x55555555\nv_mbcnt_lo_u32_b32 v1, s0, 0").ok();
    assert_eq!(r.v(0), lanes_of(|l| l as u32), "mbcnt(-1) is the lane id");
    assert_eq!(r.v(1)[5], 3, "lanes 0, 2, 4 are set below lane 5");
    assert_eq!(r.v(1)[40], 16);
}

#[test]
fn exec_masked_lanes_are_untouched() {
    let mut r = Run::gfx9("v_mov_b32_e32 v0, 7\nv_add_co_u32_e32 v1, vcc, -1, v2");
    r.wave.set_exec(0x5555_5555_5555_5555);
    r.wave.vgpr[0] = [9; 64];
    r.wave.vgpr[1] = [9; 64];
    r.wave.vgpr[2] = [1; 64];
    let r = r.ok();
    for l in 0..64 {
        let on = l % 2 == 0;
        assert_eq!(r.v(0)[l], if on { 7 } else { 9 }, "lane {l}");
        assert_eq!(r.v(1)[l], if on { 0 } else { 9 }, "lane {l}");
    }
    assert_eq!(
        r.wave.vcc(),
        0x5555_5555_5555_5555,
        "carry only from active lanes"
    );
}

#[test]
fn mad_u64_u32_and_mul_hi() {
    let mut r = Run::gfx9("v_mad_u64_u32 v[2:3], s[0:1], v0, v1, v[4:5]\nv_mul_hi_u32 v6, v0, v1\nv_mul_hi_i32 v7, v0, v1");
    r.wave.vgpr[0] = [0xffff_ffff; 64];
    r.wave.vgpr[1] = [0xffff_ffff; 64];
    r.wave.vgpr[4] = [0xffff_ffff; 64];
    r.wave.vgpr[5] = [0xffff_ffff; 64];
    let r = r.ok();
    // (2^32-1)^2 + 2^64-1 = 2^65 - 2^33 → low 64 bits 0xfffffffe_00000000, carry out
    assert_eq!((r.v(2)[0], r.v(3)[0]), (0x0000_0000, 0xffff_fffe));
    assert_eq!(r.wave.sgpr64(0), u64::MAX, "carry out in every lane");
    assert_eq!(r.v(6)[0], 0xffff_fffe);
    assert_eq!(r.v(7)[0], 0, "(-1) * (-1) = 1: high dword 0");
}

// ------------------------------------------------------------------ float

#[test]
fn denormals_follow_mode() {
    let src = "v_add_f32_e32 v1, 0, v0\nv_mul_f32_e32 v2, 0.5, v3\nv_add_f64 v[4:5], 0, v[6:7]";
    let mut flush = Run::gfx9(src);
    flush.wave.vgpr[0] = [0x0000_0001; 64]; // smallest f32 denormal
    flush.wave.vgpr[3] = [0x0080_0000; 64]; // smallest normal; half of it is denormal
    flush.wave.vgpr[6] = [1; 64]; // smallest f64 denormal
    let mut keep = Run::gfx9(src);
    keep.wave.vgpr = flush.wave.vgpr.clone();
    flush.wave.mode = Mode(0); // FP_DENORM = 0: flush everything
    keep.wave.mode = Mode(0xf << 4); // FP_DENORM = 3 for both: keep
    let (flush, keep) = (flush.ok(), keep.ok());
    assert_eq!(flush.v(1)[0], 0, "a denormal input is flushed");
    assert_eq!(flush.v(2)[0], 0, "a denormal result is flushed");
    assert_eq!((flush.v(4)[0], flush.v(5)[0]), (0, 0));
    assert_eq!(keep.v(1)[0], 1);
    assert_eq!(keep.v(2)[0], 0x0040_0000);
    assert_eq!((keep.v(4)[0], keep.v(5)[0]), (1, 0));
}

#[test]
fn round_mode_toward_zero_and_plus_infinity() {
    let src = "v_add_f32_e32 v1, 1.0, v0";
    let eps_half = 0x3380_0000; // 2^-24: 1 + 2^-24 is a tie between 1 and 1 + 2^-23
    let mut near = Run::gfx9(src);
    near.wave.vgpr[0] = [eps_half + 1; 64]; // a bit above the tie
    let mut zero = Run::gfx9(src);
    zero.wave.vgpr[0] = near.wave.vgpr[0];
    zero.wave.mode = Mode(3); // f32 round toward zero
    let mut up = Run::gfx9(src);
    up.wave.vgpr[0] = [0x2f80_0000; 64]; // 2^-32, far below an ulp of 1
    up.wave.mode = Mode(1); // toward +inf
    let (near, zero, up) = (near.ok(), zero.ok(), up.ok());
    assert_eq!(
        near.v(1)[0],
        0x3f80_0001,
        "nearest: above the tie rounds up"
    );
    assert_eq!(zero.v(1)[0], 0x3f80_0000, "toward zero truncates");
    assert_eq!(up.v(1)[0], 0x3f80_0001, "toward +inf rounds any excess up");
}

#[test]
fn ieee_mode_min_max_with_nans() {
    let mut r =
        Run::gfx9("v_max_f32_e32 v2, v0, v1\nv_min_f32_e32 v3, v0, v1\nv_max_f32_e32 v4, v5, v1");
    r.wave.vgpr[0] = [0x7fc0_0000; 64]; // qNaN
    r.wave.vgpr[1] = [0x3f80_0000; 64]; // 1.0
    r.wave.vgpr[5] = [0x7f80_0001; 64]; // sNaN
    let r = r.ok();
    assert_eq!(r.v(2)[0], 0x3f80_0000, "a quiet NaN loses to a number");
    assert_eq!(r.v(3)[0], 0x3f80_0000);
    assert_eq!(
        r.v(4)[0] & 0x7fc0_0000,
        0x7fc0_0000,
        "IEEE mode: a signalling NaN gives a quiet NaN"
    );
}

#[test]
fn clamp_omod_neg_abs_modifiers() {
    let mut r = Run::gfx9(
        "v_add_f32_e64 v2, v0, v1 clamp\nv_add_f32_e64 v3, -v0, v1 clamp\nv_mul_f32_e64 v4, v0, v1 mul:2\nv_mul_f32_e64 v5, v0, v1 div:2\nv_add_f32_e64 v6, -|v7|, v1\nv_add_f32_e64 v8, v9, v1 clamp",
    );
    r.wave.vgpr[0] = [0.75f32.to_bits(); 64];
    r.wave.vgpr[1] = [0.5f32.to_bits(); 64];
    r.wave.vgpr[7] = [(-3.0f32).to_bits(); 64];
    r.wave.vgpr[9] = [0x7fc0_0000; 64];
    let r = r.ok();
    assert_eq!(f32::from_bits(r.v(2)[0]), 1.0, "1.25 clamps to 1.0");
    assert_eq!(r.v(3)[0], 0, "-0.25 clamps to +0.0");
    assert_eq!(f32::from_bits(r.v(4)[0]), 0.75);
    assert_eq!(f32::from_bits(r.v(5)[0]), 0.1875);
    assert_eq!(f32::from_bits(r.v(6)[0]), -2.5, "-|-3| + 0.5");
    assert_eq!(r.v(8)[0], 0, "DX10_CLAMP: NaN clamps to 0");
}

#[test]
fn division_helpers_special_cases() {
    let mut r = Run::gfx9(
        "v_div_fixup_f32 v3, v0, v1, v2\nv_div_fixup_f32 v4, v0, v5, v6\nv_div_fixup_f32 v7, v0, v5, v1",
    );
    r.wave.vgpr[0] = [0x1234_5678; 64]; // any quotient
    r.wave.vgpr[1] = [0; 64]; // den 0
    r.wave.vgpr[2] = [0; 64]; // num 0
    r.wave.vgpr[5] = [0xc000_0000; 64]; // den -2
    r.wave.vgpr[6] = [0x7f80_0000; 64]; // num +inf
    let r = r.ok();
    assert_eq!(r.v(3)[0], 0xffc0_0000, "0/0 is the default NaN");
    assert_eq!(r.v(4)[0], 0xff80_0000, "inf / -2 is -inf");
    assert_eq!(r.v(7)[0], 0x8000_0000, "0 / -2 is -0");
}

#[test]
fn division_sequence_is_correctly_rounded() {
    // the sequence clang-15 emits for a correctly rounded f32 division (gfx900, f32
    // denormals flushed), run over pairs including the rescaling cases
    let seq = "v_div_scale_f32 v2, s[0:1], v1, v1, v0
v_div_scale_f32 v3, vcc, v0, v1, v0
v_rcp_f32_e32 v4, v2
s_denorm_mode 15
v_fma_f32 v5, -v2, v4, 1.0
v_fma_f32 v4, v5, v4, v4
v_mul_f32_e32 v5, v3, v4
v_fma_f32 v6, -v2, v5, v3
v_fma_f32 v5, v6, v4, v5
v_fma_f32 v2, -v2, v5, v3
s_denorm_mode 12
v_div_fmas_f32 v2, v2, v4, v5
v_div_fixup_f32 v0, v2, v1, v0";
    // gfx9 has no s_denorm_mode: clang toggles denormals with s_setreg; emulate with it
    let seq = seq
        .replace(
            "s_denorm_mode 15",
            "s_setreg_b32 hwreg(HW_REG_MODE, 4, 2), s10",
        )
        .replace(
            "s_denorm_mode 12",
            "s_setreg_b32 hwreg(HW_REG_MODE, 4, 2), s11",
        );
    let mut r = Run::gfx9(&seq);
    r.wave.sgpr[10] = 3;
    r.wave.sgpr[11] = 0;
    let pairs: Vec<(f32, f32)> = (0..64)
        .map(|l| match l {
            0 => (1.0, 3.0),
            1 => (1e38, 1e-10), // quotient overflows
            2 => (3e38, 1e-30), // exponent difference >= 96
            3 => (1e-30, 3e38), // quotient denormal
            4 => (7.0, 7.0),
            5 => (1.0, 0.0),
            6 => (0.0, 0.0),
            7 => (-5.0, f32::INFINITY),
            8 => (1.5e-38, 3.0), // tiny numerator
            _ => {
                let x = f32::from_bits(
                    0x0100_0000 + (l as u32).wrapping_mul(0x0123_4567) % 0x7d00_0000,
                );
                let y = f32::from_bits(
                    0x0100_0000 + (l as u32).wrapping_mul(0x0765_4321) % 0x7d00_0000,
                );
                (x, y)
            }
        })
        .collect();
    r.wave.vgpr[0] = lanes_of(|l| pairs[l].0.to_bits());
    r.wave.vgpr[1] = lanes_of(|l| pairs[l].1.to_bits());
    r.wave.mode = Mode((3 << 6) | (1 << 8) | (1 << 9)); // f32 denormals flushed
    let r = r.ok();
    for (l, (x, y)) in pairs.iter().enumerate() {
        let want = x / y;
        let got = f32::from_bits(r.v(0)[l]);
        if want.is_nan() {
            assert!(got.is_nan(), "{x:e}/{y:e}");
        } else if want != 0.0 && want.abs() < f32::MIN_POSITIVE {
            // a denormal quotient is flushed on output (MODE f32 denormals off)
            assert_eq!(got.abs(), 0.0, "{x:e}/{y:e}");
        } else {
            assert_eq!(got, want, "lane {l}: {x:e}/{y:e}");
        }
    }
}

#[test]
fn transcendental_and_conversion_edges() {
    let mut r = Run::gfx9(
        "v_rcp_f32_e32 v1, 0\nv_rsq_f32_e32 v2, -1.0\nv_sqrt_f32_e32 v3, v0\nv_cvt_i32_f32_e32 v4, v5\nv_cvt_u32_f32_e32 v6, -1.0\nv_cvt_i32_f32_e32 v7, v8\nv_frexp_mant_f32_e32 v9, v10\nv_frexp_exp_i32_f32_e32 v11, v10\nv_ldexp_f32 v12, v10, -3\nv_cvt_f16_f32_e32 v13, v14\nv_exp_f32_e32 v15, 4.0\nv_log_f32_e32 v16, v17",
    );
    r.wave.vgpr[0] = [0x8000_0000; 64]; // -0
    r.wave.vgpr[5] = [0x7fc0_0000; 64]; // NaN
    r.wave.vgpr[8] = [0x4f80_0000; 64]; // 2^32
    r.wave.vgpr[10] = [12.0f32.to_bits(); 64];
    r.wave.vgpr[14] = [65520.0f32.to_bits(); 64]; // rounds to f16 infinity
    r.wave.vgpr[17] = [8.0f32.to_bits(); 64];
    let r = r.ok();
    assert_eq!(r.v(1)[0], 0x7f80_0000, "1/+0 = +inf");
    assert!(f32::from_bits(r.v(2)[0]).is_nan(), "rsq(-1) = NaN");
    assert_eq!(r.v(3)[0], 0x8000_0000, "sqrt(-0) = -0");
    assert_eq!(r.v(4)[0], 0, "NaN converts to 0");
    assert_eq!(r.v(6)[0], 0, "negative saturates to 0");
    assert_eq!(r.v(7)[0], 0x7fff_ffff, "2^32 saturates to INT_MAX");
    assert_eq!(f32::from_bits(r.v(9)[0]), 0.75, "12 = 0.75 * 2^4");
    assert_eq!(r.v(11)[0], 4);
    assert_eq!(f32::from_bits(r.v(12)[0]), 1.5);
    assert_eq!(r.v(13)[0], 0x7c00, "65520 rounds to f16 +inf");
    assert_eq!(f32::from_bits(r.v(15)[0]), 16.0, "v_exp_f32 is 2^x");
    assert_eq!(f32::from_bits(r.v(16)[0]), 3.0, "v_log_f32 is log2");
}

#[test]
fn compares_write_vcc_sdst_and_exec() {
    let mut r = Run::gfx9(
        "v_cmp_gt_u32_e32 vcc, v0, v1\nv_cmp_class_f32_e64 s[4:5], v2, 0x3\nv_cmpx_lt_i32_e32 vcc, v0, v1\nv_mov_b32_e32 v3, 1",
    );
    r.wave.vgpr[0] = lanes_of(|l| l as u32);
    r.wave.vgpr[1] = [32; 64];
    r.wave.vgpr[2] = lanes_of(|l| {
        if l == 0 {
            0x7f80_0001
        } else if l == 1 {
            0x7fc0_0000
        } else {
            0
        }
    });
    let r = r.ok();
    assert_eq!(
        r.wave.sgpr64(4),
        0b11,
        "class mask 3: signalling and quiet NaN"
    );
    assert_eq!(r.wave.exec(), 0xffff_ffff, "v_cmpx wrote EXEC");
    assert_eq!(r.wave.vcc(), 0xffff_ffff, "and VCC");
    assert_eq!(
        r.v(3),
        lanes_of(|l| u32::from(l < 32)),
        "later ops see the new EXEC"
    );
}

#[test]
fn lane_access_ops() {
    let mut r = Run::gfx9(
        "v_readlane_b32 s0, v0, 17\nv_writelane_b32 v1, 42, 3\nv_readfirstlane_b32 s1, v0\nds_bpermute_b32 v2, v3, v0\nds_swizzle_b32 v4, v0 offset:swizzle(SWAP,1)",
    );
    r.wave.vgpr[0] = lanes_of(|l| 100 + l as u32);
    r.wave.vgpr[3] = lanes_of(|l| (4 * (63 - l)) as u32); // reverse
    r.wave.set_exec(!0b1111);
    let r = r.ok();
    assert_eq!(r.wave.sgpr[0], 117);
    assert_eq!(r.v(1)[3], 42, "v_writelane ignores EXEC");
    assert_eq!(r.wave.sgpr[1], 104, "first active lane is 4");
    assert_eq!(r.v(2)[10], 153, "bpermute reads lane 63 - 10");
    assert_eq!(r.v(2)[62], 0, "reading an inactive lane (1) gives 0");
    assert_eq!(r.v(4)[10], 111, "swap neighbours: lane 10 reads lane 11");
}

// ------------------------------------------------------------------ control and state

#[test]
fn branches_getpc_setpc_swappc() {
    let r = Run::gfx9(
        "s_getpc_b64 s[0:1]
s_add_u32 s0, s0, 16
s_addc_u32 s1, s1, 0
s_swappc_b64 s[2:3], s[0:1]
s_branch 1
s_mov_b32 s5, 1
s_mov_b32 s6, 2
s_cmp_eq_u32 s6, 2
s_cbranch_scc0 1
s_mov_b32 s7, 3",
    )
    .ok();
    // s_getpc gives BASE + 4 (the next instruction); + 16 = BASE + 20, the `s_mov_b32 s5, 1`
    // after the s_branch at BASE + 16; the s_swappc at BASE + 12 saves BASE + 16
    assert_eq!(
        r.wave.sgpr64(2),
        BASE + 16,
        "s_swappc saves the address of the next instruction"
    );
    assert_eq!(r.wave.sgpr[5], 1);
    assert_eq!(r.wave.sgpr[6], 2);
    assert_eq!(r.wave.sgpr[7], 3, "scc1: s_cbranch_scc0 not taken");
}

#[test]
fn saveexec_and_mode_registers() {
    let mut r = Run::gfx9(
        "s_and_saveexec_b64 s[0:1], s[2:3]\ns_getreg_b32 s4, hwreg(HW_REG_MODE, 0, 32)\ns_setreg_b32 hwreg(HW_REG_MODE, 0, 2), s5\ns_getreg_b32 s6, hwreg(HW_REG_STATUS, 9, 1)",
    );
    r.wave.set_sgpr64(2, 0xff);
    r.wave.sgpr[5] = 3;
    let before = r.wave.mode.0;
    let r = r.ok();
    assert_eq!(r.wave.sgpr64(0), u64::MAX, "old EXEC saved");
    assert_eq!(r.wave.exec(), 0xff);
    assert!(r.wave.scc);
    assert_eq!(r.wave.sgpr[4], before);
    assert_eq!(r.wave.mode.0, before | 3, "FP_ROUND f32 set to toward zero");
    assert_eq!(r.wave.sgpr[6], 0, "EXECZ clear");
}

#[test]
fn trap_saves_pc_and_id_in_ttmps() {
    let mut r = Run::gfx9("s_nop 0\ns_trap 2");
    assert_eq!(r.go(), Stop::Trap { id: 2 });
    assert_eq!(r.wave.sgpr[sreg::TTMP0], (BASE + 4) as u32);
    assert_eq!(r.wave.sgpr[sreg::TTMP0 + 1] >> 16 & 0xff, 2);
    assert_eq!(r.go(), Stop::EndOfProgram, "resumable after the trap");
}

#[test]
fn messages_barrier_and_sleep() {
    let mut r =
        Run::gfx9("s_mov_b32 m0, 0x1234\ns_sendmsg sendmsg(MSG_INTERRUPT)\ns_barrier\ns_sleep 2");
    assert_eq!(r.go(), Stop::Barrier);
    assert_eq!(r.env.messages, vec![(1, 0x1234)]);
    assert_eq!(r.go(), Stop::Sleep { cycles: 2 });
    assert_eq!(r.go(), Stop::EndOfProgram);
}

#[test]
fn faults_are_typed_and_name_the_instruction() {
    // an instruction the interpreter does not run (isa/COVERAGE.md)
    let mut r = Run::gfx9("v_log_legacy_f32_e32 v0, v1");
    match r.go() {
        Stop::Fault(WaveFault::IllegalInstruction { pc, disassembly }) => {
            assert_eq!(pc, BASE);
            assert!(
                disassembly.starts_with("v_log_legacy_f32_e32 v0, v1"),
                "{disassembly}"
            );
        }
        other => panic!("{other:?}"),
    }
    let mut r = Run::gfx9("global_load_dword v0, v[2:3], off");
    r.wave.vgpr[2] = [0xdead_0000; 64];
    r.wave.vgpr[3] = [0; 64];
    match r.go() {
        Stop::Fault(WaveFault::Memory(m)) => assert_eq!(m.address, 0xdead_0000),
        other => panic!("{other:?}"),
    }
    // A destination past the wave's VGPRs: ignored in the hardware's way (exec_vgpr_range),
    // an operand fault in a strict world.
    let mut r = Run::gfx9("v_mov_b32_e32 v200, 0");
    r.env.vgpr_strict = true;
    assert_eq!(
        r.go(),
        Stop::Fault(WaveFault::RegisterOutOfRange {
            file: 'v',
            index: 200
        })
    );
}

#[test]
fn budget_bounds_an_endless_loop() {
    let mut r = Run::gfx9("s_branch -1");
    assert_eq!(r.go(), Stop::BudgetExhausted);
    assert_eq!(r.wave.pc, BASE, "still at the loop");
    assert_eq!(r.go(), Stop::BudgetExhausted);
}

#[test]
fn scalar_and_buffer_memory() {
    let mut r = Run::gfx9(
        "s_load_dwordx2 s[2:3], s[0:1], 0x8\ns_buffer_load_dword s4, s[8:11], 0x4\nbuffer_load_dword v1, v0, s[8:11], 0 offen offset:4\nbuffer_store_dword v1, v0, s[8:11], 0 offen offset:8\nglobal_atomic_add v2, v0, v3, s[0:1] glc",
    );
    r.env
        .write(0x2000, &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]);
    r.wave.set_sgpr64(0, 0x2000);
    // raw buffer: base 0x2000, stride 0, num_records 12
    r.wave.sgpr[8..12].copy_from_slice(&[0x2000, 0, 12, 0]);
    r.wave.vgpr[0] = lanes_of(|l| if l == 0 { 0 } else { 4 }); // lane 1+ offset 4+4 = 8 in range, +8 = 12 out
    r.wave.vgpr[3] = [1; 64];
    r.wave.set_exec(0b11);
    let r = r.ok();
    assert_eq!(r.wave.sgpr64(2), 3 | (4 << 32));
    assert_eq!(r.wave.sgpr[4], 2);
    assert_eq!(r.v(1)[0], 2, "buffer load at 0 + 4");
    assert_eq!(r.v(1)[1], 3, "buffer load at 4 + 4");
    let mem = r.env.read(0x2000, 16).unwrap();
    // lane 0 stored 2 at 8, lane 1's store (4 + 8 = 12) is out of range and dropped; then
    // the atomics add 1 at 0x2000 + 0 and 0x2000 + 4
    assert_eq!(mem, vec![2, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0]);
    assert_eq!(
        (r.v(2)[0], r.v(2)[1]),
        (1, 2),
        "glc returns the pre-op values"
    );
}

#[test]
fn sixteen_bit_integer_ops_use_the_low_halves_and_zero_the_high_half_on_gfx9() {
    let mut r = Run::gfx9(
        "v_lshlrev_b16 v2, v0, v1\nv_lshrrev_b16 v3, v0, v1\nv_ashrrev_i16 v4, v0, v1\nv_add_u16 v5, v1, v1\nv_sub_u16 v6, v0, v1\nv_subrev_u16 v7, v0, v1\nv_mul_lo_u16 v8, v1, v1\nv_max_u16 v9, v0, v1\nv_max_i16 v10, v0, v1\nv_min_u16 v11, v0, v1\nv_min_i16 v12, v0, v1",
    );
    // shift amounts use bits 3:0 (0x11 -> 1); sources' high halves are ignored
    r.wave.vgpr[0] = [0xdead_0011; 64];
    r.wave.vgpr[1] = [0xbeef_8421; 64];
    for v in 2..=12 {
        r.wave.vgpr[v] = [0xffff_ffff; 64];
    }
    let r = r.ok();
    let got: Vec<u32> = (2..=12).map(|v| r.v(v)[0]).collect();
    assert_eq!(
        got,
        vec![
            0x0842, // 0x8421 << 1, 16 bits
            0x4210, // 0x8421 >> 1
            0xc210, // arithmetic: sign bit copied
            0x0842, // 0x8421 + 0x8421 wraps
            0x7bf0, // 0x0011 - 0x8421
            0x8410, // 0x8421 - 0x0011
            0x0c41, // 0x8421 * 0x8421 mod 2^16
            0x8421, // unsigned max
            0x0011, // signed max: 0x8421 is negative
            0x0011, // unsigned min
            0x8421, // signed min
        ]
    );
}

#[test]
fn d16_loads_write_one_half_and_keep_the_other() {
    // Vega ISA: *_d16 loads write VDST[15:0], *_d16_hi loads VDST[31:16]; the other half
    // keeps its bits. ubyte zero-extends and sbyte sign-extends the byte to 16 bits.
    let mut r = Run::gfx9(
        "global_load_ubyte_d16_hi v1, v0, s[0:1]\nglobal_load_ubyte_d16 v2, v0, s[0:1]\nglobal_load_sbyte_d16 v3, v0, s[0:1]\nglobal_load_sbyte_d16_hi v4, v0, s[0:1]\nglobal_load_short_d16_hi v5, v0, s[0:1] offset:2\nglobal_load_short_d16 v6, v0, s[0:1] offset:2\ns_waitcnt vmcnt(0)",
    );
    r.env.write(0x2000, &[0x85, 0x7f, 0x34, 0x92]);
    r.wave.set_sgpr64(0, 0x2000);
    r.wave.vgpr[0] = lanes_of(|l| l as u32 % 2);
    for v in 1..=6 {
        r.wave.vgpr[v] = [0xaaaa_5555; 64];
    }
    r.wave.set_exec(0b111);
    let r = r.ok();
    let lanes = |v: usize| (r.v(v)[0], r.v(v)[1], r.v(v)[2], r.v(v)[3]);
    // lanes 0 and 2 read byte 0x85, lane 1 byte 0x7f; lane 3 is off and keeps its value
    assert_eq!(
        lanes(1),
        (0x0085_5555, 0x007f_5555, 0x0085_5555, 0xaaaa_5555)
    );
    assert_eq!(
        lanes(2),
        (0xaaaa_0085, 0xaaaa_007f, 0xaaaa_0085, 0xaaaa_5555)
    );
    assert_eq!(
        lanes(3),
        (0xaaaa_ff85, 0xaaaa_007f, 0xaaaa_ff85, 0xaaaa_5555)
    );
    assert_eq!(
        lanes(4),
        (0xff85_5555, 0x007f_5555, 0xff85_5555, 0xaaaa_5555)
    );
    // lane 0 reads the halfword at byte 2 (0x9234)
    assert_eq!((r.v(5)[0], r.v(6)[0]), (0x9234_5555, 0xaaaa_9234));
}

#[test]
fn lds_read2_write2_and_atomics() {
    let mut r = Run::gfx9(
        "ds_write2_b32 v0, v1, v2 offset0:1 offset1:3\nds_read2_b32 v[4:5], v0 offset0:1 offset1:3\nds_add_rtn_u32 v6, v0, v1 offset:4\nds_read_b32 v7, v0 offset:4",
    );
    r.wave.vgpr[0] = [0; 64];
    r.wave.vgpr[1] = [5; 64];
    r.wave.vgpr[2] = [9; 64];
    r.wave.set_exec(0b111);
    let r = r.ok();
    assert_eq!((r.v(4)[0], r.v(5)[0]), (5, 9), "offsets are in dwords");
    let got: Vec<u32> = (0..3).map(|l| r.v(6)[l]).collect();
    assert_eq!(
        got,
        vec![5, 10, 15],
        "lanes apply in order and return the old value"
    );
    assert_eq!(r.v(7)[0], 20);
}

#[test]
fn getreg_field_decoding() {
    let f = HwRegField::from_simm16(((32 - 1) << 11) | hwreg::MODE as u16);
    assert_eq!((f.id, f.offset, f.size), (1, 0, 32));
    let f = HwRegField::from_simm16((1 << 11) | (4 << 6) | hwreg::MODE as u16);
    assert_eq!((f.id, f.offset, f.size, f.mask()), (1, 4, 2, 0x30));
}

#[test]
fn mfma_on_gfx90a_from_registers() {
    // 4x4x1, 16 blocks: D[i][j] of block b in register i, lane j + 4b
    let mut r = Run::new("v_mfma_f32_4x4x1f32 a[0:3], v0, v1, 0", Target::Gfx90a);
    r.wave.vgpr[0] = lanes_of(|l| ((l % 4) as f32 + 1.0).to_bits()); // A[i][0] = i + 1 per block
    r.wave.vgpr[1] = lanes_of(|l| ((l / 4) as f32).to_bits()); // B[0][j] = block number
    let r = r.ok();
    for b in 0..16 {
        for i in 0..4 {
            for j in 0..4 {
                let want = (i as f32 + 1.0) * b as f32;
                assert_eq!(
                    f32::from_bits(r.wave.agpr[i][j + 4 * b]),
                    want,
                    "block {b} D[{i}][{j}]"
                );
            }
        }
    }
}

#[test]
fn sdwa_selects_and_destination_fields() {
    let mut r = Run::gfx9(
        "v_add_u32_sdwa v0, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:WORD_0
v_mov_b32_sdwa v3, v1 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_3
v_mov_b32_sdwa v4, sext(v1) dst_sel:WORD_0 dst_unused:UNUSED_SEXT src0_sel:BYTE_3
v_add_f16_sdwa v5, v6, -v6 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1 src1_sel:WORD_0",
    );
    r.wave.vgpr[1] = [0x8a12_34ff; 64];
    r.wave.vgpr[2] = [0x0000_ff02; 64];
    r.wave.vgpr[3] = [0x1111_1111; 64];
    r.wave.vgpr[5] = [0x0000_abcd; 64];
    r.wave.vgpr[6] = [0x4200_3c00; 64]; // hi: 3.0, lo: 1.0 (f16)
    let r = r.ok();
    assert_eq!(
        r.v(0)[0],
        (0xff + 0xff02) << 16 & 0xffff_0000,
        "byte 0 + word 0, into word 1"
    );
    assert_eq!(
        r.v(3)[0],
        0x1111_8a11,
        "byte 3 into byte 1, other bytes preserved"
    );
    assert_eq!(
        r.v(4)[0],
        0xffff_ff8a,
        "sext(byte 3) into word 0, upper bits sign-extended"
    );
    assert_eq!(
        r.v(5)[0],
        0x4000_abcd,
        "3.0 - 1.0 = 2.0 (f16 0x4000) into word 1, word 0 kept"
    );
}

#[test]
fn flat_to_the_shared_aperture_reads_lds_and_global_flat_works() {
    let mut r = Run::gfx9("flat_load_dword v0, v[2:3]\nflat_store_dword v[2:3], v4");
    r.env.map(0x3000, 0x1000);
    r.env.write(0x3000, &7u32.to_le_bytes());
    r.wave.vgpr[2] = [0x3000; 64];
    r.wave.vgpr[3] = [0; 64];
    r.wave.vgpr[4] = [9; 64];
    r.wave.set_exec(1);
    let r = r.ok();
    assert_eq!(r.v(0)[0], 7);
    assert_eq!(r.env.read(0x3000, 4).unwrap(), vec![9, 0, 0, 0]);

    let mut r = Run::gfx9("flat_load_dword v0, v[2:3]");
    r.wave.sh_mem_bases = 0x0001_0002; // shared aperture 0x0001_0000_0000_0000
    r.wave.vgpr[2] = [0x10; 64];
    r.wave.vgpr[3] = [0x0001_0000; 64];
    r.env.lds[0x10..0x14].copy_from_slice(&0x1234_5678u32.to_le_bytes());
    let r = r.ok();
    assert_eq!(
        r.v(0),
        [0x1234_5678; 64],
        "LDS byte offset 0x10, not global memory"
    );
}

#[test]
fn dpp_moves_lanes_within_rows_and_masks_writes() {
    let mut r = Run::gfx9(
        "v_mov_b32_dpp v1, v0 row_shr:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v2, v0 quad_perm:[1,0,3,2] row_mask:0x1 bank_mask:0xf
v_add_f32_dpp v3, v4, v5 row_shl:1 row_mask:0xf bank_mask:0xf bound_ctrl:0
v_mov_b32_dpp v6, v0 row_mirror row_mask:0xf bank_mask:0x1",
    );
    r.wave.vgpr[0] = lanes_of(|l| l as u32);
    r.wave.vgpr[1] = [0xdead; 64];
    r.wave.vgpr[2] = [0xbeef; 64];
    r.wave.vgpr[4] = lanes_of(|l| (l as f32).to_bits());
    r.wave.vgpr[5] = [0.5f32.to_bits(); 64];
    r.wave.vgpr[6] = [0xcafe; 64];
    let r = r.ok();
    // row_shr:1: lane l reads lane l-1 of its row; the first lane of a row has no source and,
    // without bound_ctrl, keeps its value.
    assert_eq!(
        r.v(1),
        lanes_of(|l| if l % 16 == 0 { 0xdead } else { l as u32 - 1 })
    );
    // quad_perm [1,0,3,2] swaps neighbours; row_mask 0x1 lets only row 0 write.
    assert_eq!(
        r.v(2),
        lanes_of(|l| if l < 16 { (l ^ 1) as u32 } else { 0xbeef })
    );
    // row_shl:1 with bound_ctrl: the last lane of a row reads 0 and still writes.
    assert_eq!(
        r.v(3),
        lanes_of(|l| {
            let src = if l % 16 == 15 { 0.0 } else { (l + 1) as f32 };
            (src + 0.5).to_bits()
        })
    );
    // row_mirror with bank_mask 0x1: only lanes 0-3 of each row write, reading lane 15-i.
    assert_eq!(
        r.v(6),
        lanes_of(|l| if l % 16 < 4 {
            ((l & !15) + 15 - l % 16) as u32
        } else {
            0xcafe
        })
    );
}

// ------------------------------------------------------------------ SMEM clocks, caches, setreg

#[test]
fn memtime_is_monotonic_and_memrealtime_reads_the_reference_clock() {
    // s_memtime reads WaveEnv::shader_clock (HostEnv: +1 per read), s_memrealtime
    // WaveEnv::real_time (HostEnv: the same counter, not advanced)
    let mut r = Run::gfx9(
        "s_memtime s[4:5]\ns_waitcnt lgkmcnt(0)\ns_memtime s[6:7]\ns_memrealtime s[8:9]\ns_waitcnt lgkmcnt(0)",
    );
    r.env.clock = 0xffff_fffe; // the counter is 64 bits wide: crossing 2^32 carries
    let r = r.ok();
    assert_eq!(r.wave.sgpr64(4), 0xffff_ffff);
    assert_eq!(r.wave.sgpr64(6), 0x1_0000_0000);
    assert!(r.wave.sgpr64(6) > r.wave.sgpr64(4));
    assert_eq!(r.wave.sgpr64(8), 0x1_0000_0000);
}

#[test]
fn scalar_cache_maintenance_runs_as_a_no_op() {
    let mut r = Run::gfx9("s_dcache_inv\ns_dcache_wb\ns_mov_b32 s0, 7");
    r.wave.sgpr[1] = 0x1234;
    let r = r.ok();
    assert_eq!(r.wave.sgpr[0], 7, "execution continues past the cache ops");
    assert_eq!(r.wave.sgpr[1], 0x1234);
}

#[test]
fn setreg_imm32_writes_a_mode_field_from_its_literal() {
    // FP_DENORM is MODE[7:4]: write 0b1010 there from the literal, leave the other bits
    let r = Run::gfx9(
        "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 4), 0xa\ns_getreg_b32 s4, hwreg(HW_REG_MODE, 0, 32)",
    )
    .ok();
    let before = (3 << 6) | (1 << 8) | (1 << 9);
    let want = (before & !0xf0) | (0xa << 4);
    assert_eq!(r.wave.mode.0, want);
    assert_eq!(r.wave.sgpr[4], want);
    // only the field's width is taken from the literal
    let r = Run::gfx9("s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 2), 0xffffffff").ok();
    assert_eq!(r.wave.mode.0, before | 3);
}

// ------------------------------------------------------------------ VOPC with SDWA

#[test]
fn sdwa_compare_selects_bytes_and_writes_its_sdst() {
    // SD=1: the mask goes to s[2:3]; VCC keeps its value
    let mut r = Run::gfx9("v_cmp_eq_u32_sdwa s[2:3], v1, v2 src0_sel:BYTE_0 src1_sel:DWORD");
    r.wave.vgpr[1] = lanes_of(|l| 0xab00 | l as u32); // byte 0 is the lane number
    r.wave.vgpr[2] = lanes_of(|l| if l % 3 == 0 { l as u32 } else { 999 });
    r.wave.set_vcc(0x5555);
    let r = r.ok();
    let want = (0..64).filter(|l| l % 3 == 0).fold(0u64, |m, l| m | 1 << l);
    assert_eq!(r.wave.sgpr64(2), want);
    assert_eq!(r.wave.vcc(), 0x5555);
}

#[test]
fn sdwa_compare_sign_extends_only_when_asked() {
    // byte 1 = 0x80: -128 sign-extended (not > 0), 128 zero-extended (> 0)
    let mut r = Run::gfx9(
        "v_cmp_gt_i32_sdwa s[4:5], sext(v1), v2 src0_sel:BYTE_1 src1_sel:DWORD\nv_cmp_gt_i32_sdwa vcc, v1, v2 src0_sel:BYTE_1 src1_sel:DWORD",
    );
    r.wave.vgpr[1] = [0x8000; 64];
    r.wave.vgpr[2] = [0; 64];
    r.wave.set_exec(0xffff_0000_ffff_0000);
    let r = r.ok();
    assert_eq!(r.wave.sgpr64(4), 0, "-128 > 0 is false");
    assert_eq!(
        r.wave.vcc(),
        0xffff_0000_ffff_0000,
        "128 > 0 in the active lanes"
    );
}

#[test]
fn sdwa_cmpx_applies_float_modifiers_and_writes_exec() {
    // -v1 < |v2|: v1 = 1.0 in even lanes and -3.0 in odd ones, v2 = -2.0
    let mut r = Run::gfx9("v_cmpx_lt_f32_sdwa vcc, -v1, |v2| src0_sel:DWORD src1_sel:DWORD");
    r.wave.vgpr[1] = lanes_of(|l| if l % 2 == 0 { 0x3f80_0000 } else { 0xc040_0000 });
    r.wave.vgpr[2] = [0xc000_0000; 64];
    let r = r.ok();
    // even: -1.0 < 2.0; odd: 3.0 < 2.0 is false
    let even = 0x5555_5555_5555_5555u64;
    assert_eq!(r.wave.vcc(), even);
    assert_eq!(r.wave.exec(), even);
}

// ------------------------------------------------------------------ gfx90a 64-bit DPP

fn f64_lanes(f: impl Fn(usize) -> f64) -> ([u32; 64], [u32; 64]) {
    let (mut lo, mut hi) = ([0u32; 64], [0u32; 64]);
    for l in 0..64 {
        let b = f(l).to_bits();
        lo[l] = b as u32;
        hi[l] = (b >> 32) as u32;
    }
    (lo, hi)
}

fn f64_of(r: &Run, reg: usize, lane: usize) -> f64 {
    f64::from_bits(u64::from(r.v(reg)[lane]) | (u64::from(r.v(reg + 1)[lane]) << 32))
}

#[test]
fn dpp64_newbcast_broadcasts_lane_n_of_each_row() {
    // v[0:1] += v[2:3] (lane 3 of the row) * v[4:5]; v[2:3] itself is not changed
    let mut r = Run::new(
        "v_fmac_f64_dpp v[0:1], v[2:3], v[4:5] row_newbcast:3 row_mask:0xf bank_mask:0xf",
        Target::Gfx90a,
    );
    let (lo, hi) = f64_lanes(|l| l as f64);
    r.wave.vgpr[2] = lo;
    r.wave.vgpr[3] = hi;
    (r.wave.vgpr[4], r.wave.vgpr[5]) = f64_lanes(|_| 2.0);
    (r.wave.vgpr[0], r.wave.vgpr[1]) = f64_lanes(|_| 1.0);
    let r = r.ok();
    for l in 0..64 {
        let src = (l & !15) + 3;
        assert_eq!(f64_of(&r, 0, l), 1.0 + 2.0 * src as f64, "lane {l}");
    }
    assert_eq!(
        (r.v(2), r.v(3)),
        (lo, hi),
        "the source registers are unchanged"
    );
}

#[test]
fn dpp64_row_mask_and_in_place_destination() {
    // rows 0 and 2 convert lane 1 of their row; rows 1 and 3 keep v[6:7]
    let mut r = Run::new(
        "v_cvt_f64_f32_dpp v[6:7], v8 row_newbcast:1 row_mask:0x5 bank_mask:0xf\nv_rcp_f64_dpp v[10:11], v[10:11] row_newbcast:2 row_mask:0xf bank_mask:0xf",
        Target::Gfx90a,
    );
    r.wave.vgpr[8] = lanes_of(|l| (l as f32 * 0.5).to_bits());
    (r.wave.vgpr[6], r.wave.vgpr[7]) = f64_lanes(|_| -7.0);
    (r.wave.vgpr[10], r.wave.vgpr[11]) = f64_lanes(|l| f64::from(1u32 << (l % 16)));
    let r = r.ok();
    for l in 0..64 {
        let row = l / 16;
        let want = if row % 2 == 0 {
            ((l & !15) + 1) as f64 * 0.5
        } else {
            -7.0
        };
        assert_eq!(f64_of(&r, 6, l), want, "cvt lane {l}");
        // lane 2 of each row holds 4.0: every lane gets 1/4 (the destination is the source)
        assert_eq!(f64_of(&r, 10, l), 0.25, "rcp lane {l}");
    }
}

#[test]
fn global_dword_runs_load_and_store_what_lane_accesses_would() {
    // Wholly consecutive lanes take the interpreter's run path; reversed lanes, a partial
    // EXEC and a run reaching into an unmapped page take the per-lane path. Either way each
    // lane reads and writes the dword at its own address.
    let src = "global_load_dword v4, v[2:3], off offset:8\n\
               global_load_dword v5, v6, s[0:1]\n\
               v_add_u32_e32 v7, v4, v5\n\
               global_store_dword v[8:9], v7, off\n\
               global_store_dword v10, v7, s[0:1] offset:-4";
    let word = |a: u64| (a as u32).wrapping_mul(0x9e37_79b9) ^ 0x5a5a;
    for pattern in 0..4 {
        let mut r = Run::gfx9(src);
        let (a, b, c) = (0x10_0000u64, 0x20_0000u64, 0x30_0000u64);
        for (base, len) in [(a, 0x1000u64), (b, 0x1_1000)] {
            let bytes: Vec<u8> = (0..len / 4)
                .flat_map(|i| word(base + 4 * i).to_le_bytes())
                .collect();
            r.env.write(base, &bytes);
        }
        r.env.map(c, 0x1000);
        // the last lane's dword of the first load past the mapped page (pattern 3)
        let a0 = if pattern == 3 {
            a + 0x1000 - 0x100
        } else {
            a + 0x40
        };
        let lane = |l: usize| if pattern == 1 { 63 - l } else { l } as u64;
        r.wave.vgpr[2] = lanes_of(|l| (a0 + 4 * lane(l)) as u32);
        r.wave.vgpr[3] = [(a0 >> 32) as u32; 64];
        r.wave.vgpr[6] = lanes_of(|l| 0x400 + 4 * lane(l) as u32);
        r.wave.vgpr[8] = lanes_of(|l| (c + 0x80 + 4 * lane(l)) as u32);
        r.wave.vgpr[9] = [0; 64];
        r.wave.vgpr[10] = lanes_of(|l| 0x1_0000 + 0x200 + 4 * lane(l) as u32);
        (r.wave.sgpr[0], r.wave.sgpr[1]) = (b as u32, (b >> 32) as u32);
        let exec = if pattern == 2 {
            0x0f0f_f0f0_1234_8001
        } else {
            u64::MAX
        };
        r.wave.set_exec(exec);
        if pattern == 3 {
            match r.go() {
                Stop::Fault(WaveFault::Memory(m)) => assert_eq!(m.address, a + 0x1000),
                other => panic!("{other:?}"),
            }
            assert_eq!(r.v(4), [0; 64], "a faulting load writes nothing");
            continue;
        }
        let r = r.ok();
        for l in (0..64).filter(|l| exec >> l & 1 != 0) {
            let x = word(a0 + 4 * lane(l) + 8);
            let y = word(b + 0x400 + 4 * lane(l));
            assert_eq!((r.v(4)[l], r.v(5)[l]), (x, y), "pattern {pattern} lane {l}");
            let sum = x.wrapping_add(y).to_le_bytes().to_vec();
            let at = c + 0x80 + 4 * lane(l);
            assert_eq!(
                r.env.read(at, 4).unwrap(),
                sum,
                "pattern {pattern} lane {l}"
            );
            let at = b + 0x1_0000 + 0x200 + 4 * lane(l) - 4;
            assert_eq!(
                r.env.read(at, 4).unwrap(),
                sum,
                "pattern {pattern} lane {l}"
            );
        }
        for l in (0..64).filter(|l| exec >> l & 1 == 0) {
            assert_eq!(r.v(4)[l], 0, "a disabled lane keeps its register");
            let at = c + 0x80 + 4 * lane(l);
            assert_eq!(
                r.env.read(at, 4).unwrap(),
                vec![0; 4],
                "a disabled lane stores nothing"
            );
        }
    }
}

#[test]
fn a_run_to_memory_wait_ends_at_the_first_wait_that_would_block_on_a_load() {
    // Interpreted and through compiled blocks alike.
    for compiled in [false, true] {
        let program = |src: &str| {
            let mut r = Run::gfx9(src);
            r.cache = if compiled {
                r.cache.clone().with_compiler()
            } else {
                r.cache.clone().without_compiler()
            };
            r
        };
        // s_waitcnt vmcnt(0) with no load issued in the run, and lgkmcnt(0) (VM_CNT at its
        // maximum) after one, do not block; vmcnt(0) after the load does: the run ends there
        // with the PC on it (bytes before it: 4, 8 with the literal, 4, 8, 4), and a plain run
        // finishes the program.
        let mut r = program(
            "s_waitcnt vmcnt(0)\n\
             v_mov_b32 v2, 0x2000\n\
             v_mov_b32 v3, 0\n\
             global_load_dword v0, v[2:3], off\n\
             s_waitcnt lgkmcnt(0)\n\
             s_waitcnt vmcnt(0)\n\
             v_mov_b32 v1, 7",
        );
        r.env.map(0x2000, 4);
        assert_eq!(
            r.wave.run_to_memory_wait(&r.cache, &mut r.env, 100),
            Stop::BudgetExhausted,
            "compiled {compiled}"
        );
        assert_eq!(r.wave.pc, BASE + 28, "compiled {compiled}");
        assert_eq!(
            r.v(1),
            [0; 64],
            "nothing past the wait ran (compiled {compiled})"
        );
        // Resumed the same way, the wait is the run's first instruction and no load is
        // pending in it: the run goes on to the end.
        assert_eq!(
            r.wave.run_to_memory_wait(&r.cache, &mut r.env, 100),
            Stop::EndOfProgram
        );
        assert_eq!(r.v(1), [7; 64]);
        assert_eq!(
            r.cache.blocks().map_or(0, |b| b.compiled()) > 0,
            compiled,
            "blocks ran"
        );
        // vmcnt(1) waits too (below the maximum 63), even with one load in flight on hardware.
        let mut r = program(
            "v_mov_b32 v2, 0x2000\n\
             v_mov_b32 v3, 0\n\
             global_load_dword v0, v[2:3], off\n\
             s_waitcnt vmcnt(1)\n\
             v_mov_b32 v1, 7",
        );
        r.env.map(0x2000, 4);
        assert_eq!(
            r.wave.run_to_memory_wait(&r.cache, &mut r.env, 100),
            Stop::BudgetExhausted
        );
        assert_eq!(r.wave.pc, BASE + 20, "compiled {compiled}");
        // A budget shorter than the way to the wait ends the run at the budget.
        let mut r = program("v_mov_b32 v1, 1\nv_mov_b32 v1, 2\nv_mov_b32 v1, 3");
        assert_eq!(
            r.wave.run_to_memory_wait(&r.cache, &mut r.env, 2),
            Stop::BudgetExhausted
        );
        assert_eq!(r.v(1), [2; 64], "compiled {compiled}");
    }
}
