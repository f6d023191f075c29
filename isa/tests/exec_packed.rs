//! Semantic tests of the f16, packed (VOP3P), mixed-precision, dot and trig-preop
//! instructions: each program is assembled by llvm-mc-15, run on one wave, and the registers
//! compared with values the Vega / MI200 ISA guides define (f16 bit patterns worked out by
//! hand: 1.0 = 0x3c00, 1.5 = 0x3e00, 2.0 = 0x4000, 2.25 = 0x4080, …).

mod assemble;

use assemble::asm;

use isa::exec::{CodeCache, HostEnv, Mode, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;

/// Runs `src` on one wave whose VGPRs `init` gives, and returns the wave.
fn run(src: &str, target: Target, init: &[(usize, u32)]) -> Wave {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut wave = Wave::new(target, 32, 16);
    wave.pc = BASE;
    // compute dispatch default: IEEE, DX10 clamp, f64/f16 denormals on, f32 flushed
    wave.mode = Mode((3 << 6) | (1 << 8) | (1 << 9));
    for &(r, v) in init {
        wave.vgpr[r] = [v; 64];
    }
    let cache = CodeCache::new(target, BASE, &code);
    let mut env = HostEnv::new(1024);
    assert_eq!(
        wave.run(&cache, &mut env, 1000),
        Stop::EndOfProgram,
        "{src}"
    );
    wave
}

fn lane0(w: &Wave, r: usize) -> u32 {
    w.vgpr[r][0]
}

const F16_1: u32 = 0x3c00;
const F16_1_5: u32 = 0x3e00;
const F16_2: u32 = 0x4000;
const F16_2_25: u32 = 0x4080;
const F16_3_75: u32 = 0x4380;

#[test]
fn pk_add_f16_adds_each_half_with_op_sel_and_neg() {
    let v0 = F16_1_5 | (F16_2_25 << 16);
    let v1 = F16_2_25 | (F16_1 << 16);
    for target in [Target::Gfx900, Target::Gfx90a] {
        let w = run(
            "v_pk_add_f16 v2, v0, v1\n\
             v_pk_add_f16 v3, v0, v1 op_sel:[1,0] op_sel_hi:[0,1]\n\
             v_pk_add_f16 v4, v0, v1 neg_lo:[0,1] neg_hi:[1,0]\n\
             v_pk_add_f16 v5, v0, 1.0",
            target,
            &[(0, v0), (1, v1)],
        );
        // 1.5+2.25 = 3.75, 2.25+1 = 3.25 (0x4280)
        assert_eq!(lane0(&w, 2), F16_3_75 | (0x4280 << 16), "{target:?}");
        // lo: v0.hi + v1.lo = 4.5 (0x4480); hi: v0.lo + v1.hi = 2.5 (0x4100)
        assert_eq!(lane0(&w, 3), 0x4480 | (0x4100 << 16));
        // lo: 1.5 - 2.25 = -0.75 (0xba00); hi: -2.25 + 1 = -1.25 (0xbd00)
        assert_eq!(lane0(&w, 4), 0xba00 | (0xbd00 << 16));
        // an inline constant applies to both halves: 2.5, 3.25
        assert_eq!(lane0(&w, 5), 0x4100 | (0x4280 << 16));
    }
}

#[test]
fn pk_mul_and_fma_f16_round_once() {
    // (1 + 3·2^-10)^2 - 1 = 1.5·2^-8 + 2.25·2^-18 → fused: 0x1e02 (ulp 2^-18 here); the
    // unrounded product is lost by an unfused multiply-add (which would give 0x1e00)
    let a = 0x3c03;
    let w = run(
        "v_pk_fma_f16 v3, v0, v0, v1\nv_pk_mul_f16 v4, v0, v2\nv_fma_f16 v5, v0, v0, v1\nv_mad_f16 v6, v0, v0, v1",
        Target::Gfx900,
        &[(0, a | (a << 16)), (1, 0xbc00 | (0xbc00 << 16)), (2, F16_2 | (0xc000 << 16)), (5, 0xdead_0000), (6, 0xbeef_0000)],
    );
    assert_eq!(lane0(&w, 3), 0x1e02 | (0x1e02 << 16));
    // 1.0029296875 · ±2 = ±2.005859375 (0x4003 / 0xc003): exact
    assert_eq!(lane0(&w, 4), 0x4003 | (0xc003 << 16));
    // gfx9's op_sel VOP3 f16 ops keep the destination half they do not write
    assert_eq!(lane0(&w, 5), 0xdead_0000 | 0x1e02);
    assert_eq!(
        lane0(&w, 6),
        0xbeef_0000 | 0x1e00,
        "v_mad_f16 rounds the product first"
    );
}

#[test]
fn gfx9_f16_ops_that_keep_the_high_half() {
    // v_mac_f16 and the op_sel VOP3 forms keep bits 31:16; v_add_f16 and the *_legacy
    // encodings zero them
    let w = run(
        "v_mac_f16_e32 v2, v0, v1\nv_max3_f16 v3, v0, v1, v0\nv_add_f16_e32 v4, v0, v1\n\
         v_mad_legacy_f16 v5, v0, v1, v0",
        Target::Gfx900,
        &[
            (0, F16_2),
            (1, F16_1_5),
            (2, 0x1234_3c00),
            (3, 0x5678_0000),
            (4, 0x9abc_0000),
            (5, 0xdef0_0000),
        ],
    );
    assert_eq!(lane0(&w, 2), 0x1234_4400, "2·1.5 + 1 = 4, bits 31:16 kept");
    assert_eq!(lane0(&w, 3), 0x5678_4000, "max3(2, 1.5, 2) = 2");
    assert_eq!(lane0(&w, 4), 0x0000_4300, "2 + 1.5 = 3.5");
    assert_eq!(lane0(&w, 5), 0x0000_4500, "2·1.5 + 2 = 5");
}

#[test]
fn vop3_op_sel_reads_and_writes_high_halves() {
    let w = run(
        "v_fma_f16 v2, v0, v1, v1 op_sel:[1,1,0,1]",
        Target::Gfx900,
        &[
            (0, F16_1 | (F16_2 << 16)),
            (1, F16_1_5 | (F16_2_25 << 16)),
            (2, 0x0000_1234),
        ],
    );
    // hi(v0)·hi(v1) + lo(v1) = 2·2.25 + 1.5 = 6 (0x4600), written to bits 31:16
    assert_eq!(lane0(&w, 2), 0x4600_1234);
}

#[test]
fn f16_vop1_results_zero_the_high_half() {
    let w = run(
        "v_sqrt_f16 v1, v0\nv_exp_f16 v2, 0x4200\nv_log_f16 v3, 0x3400\nv_rcp_f16 v4, v0\n\
         v_rsq_f16 v5, v0\nv_floor_f16 v6, 0xc080\nv_fract_f16 v7, 0x4280\nv_cvt_i16_f16 v8, 0xc880\n\
         v_cvt_f16_u16 v9, 0x7b\nv_ldexp_f16 v10, 0x3c00, -3",
        Target::Gfx900,
        &[(0, 0xffff_4400), (1, u32::MAX), (2, u32::MAX)], // v0.lo = 4.0
    );
    assert_eq!(lane0(&w, 1), F16_2, "sqrt(4) = 2, bits 31:16 zeroed");
    assert_eq!(lane0(&w, 2), 0x4800, "2^3 = 8");
    assert_eq!(lane0(&w, 3), 0xc000, "log2(0.25) = -2");
    assert_eq!(lane0(&w, 4), 0x3400, "1/4");
    assert_eq!(lane0(&w, 5), 0x3800, "1/sqrt(4) = 0.5");
    assert_eq!(lane0(&w, 6), 0xc200, "floor(-2.25) = -3");
    assert_eq!(lane0(&w, 7), 0x3400, "fract(3.25) = 0.25");
    assert_eq!(lane0(&w, 8), 0xfff7, "(i16)-9.0");
    assert_eq!(lane0(&w, 9), 0x57b0, "123.0");
    assert_eq!(lane0(&w, 10), 0x3000, "1·2^-3");
}

#[test]
fn div_fixup_f16_special_cases() {
    // s0 quotient, s1 denominator, s2 numerator
    let w = run(
        "v_div_fixup_f16 v3, v0, v1, v2\nv_div_fixup_f16 v4, v0, 0, v2\nv_div_fixup_f16 v5, v0, 0, 0\n\
         v_div_fixup_f16 v6, v0, v1, v7",
        Target::Gfx900,
        &[(0, 0x3800), (1, 0xc000), (2, F16_1), (7, 0x7e00)],
    );
    assert_eq!(
        lane0(&w, 3),
        0xb800,
        "1/-2: the quotient with the sign of s1^s2"
    );
    assert_eq!(lane0(&w, 4), 0x7c00, "1/0 = +inf");
    assert_eq!(lane0(&w, 5), 0xfe00, "0/0 = the default NaN");
    assert_eq!(lane0(&w, 6), 0x7e00, "a NaN numerator passes (quieted)");
}

#[test]
fn pk_int16_ops_wrap_or_saturate() {
    let w = run(
        "v_pk_add_u16 v2, v0, v1\nv_pk_add_u16 v3, v0, v1 clamp\nv_pk_sub_i16 v4, v1, v0\n\
         v_pk_lshlrev_b16 v5, v6, v1\nv_pk_max_i16 v7, v0, v1\nv_pk_mad_u16 v8, v0, v1, v1\n\
         v_pk_mul_lo_u16 v9, v0, v1\nv_pk_ashrrev_i16 v10, 1, v0",
        Target::Gfx900,
        &[
            (0, 0xfff0 | (0x8000 << 16)),
            (1, 0x0020 | (0x0003 << 16)),
            (6, 17 | (4 << 16)),
        ],
    );
    assert_eq!(lane0(&w, 2), 0x0010 | (0x8003 << 16), "wraps");
    assert_eq!(
        lane0(&w, 3),
        0xffff | (0x8003 << 16),
        "clamp saturates unsigned"
    );
    // 0x20 - (-16) = 48; 3 - (-32768) wraps to 0x8003
    assert_eq!(lane0(&w, 4), 0x0030 | (0x8003 << 16));
    // shift amounts use their low 4 bits: 17 → 1, 4 → 4
    assert_eq!(lane0(&w, 5), 0x0040 | (0x0030 << 16));
    assert_eq!(
        lane0(&w, 7),
        0x0020 | (0x0003 << 16),
        "signed max: -16 < 32, -32768 < 3"
    );
    // 0xfff0·0x20 + 0x20 = 0x1ffe20 → 0xfe20; 0x8000·3 + 3 = 0x18003 → 0x8003
    assert_eq!(lane0(&w, 8), 0xfe20 | (0x8003 << 16));
    assert_eq!(lane0(&w, 9), 0xfe00 | (0x8000 << 16));
    // -16 >> 1 = -8 (0xfff8); -32768 >> 1 = 0xc000 (the constant 1 applies to both halves)
    assert_eq!(lane0(&w, 10), 0xfff8 | (0xc000 << 16));
}

#[test]
fn pk_f32_ops_on_gfx90a_pick_dwords_with_op_sel() {
    let (one, two, three, half) = (
        1.0f32.to_bits(),
        2.0f32.to_bits(),
        3.0f32.to_bits(),
        0.5f32.to_bits(),
    );
    let w = run(
        "v_pk_add_f32 v[4:5], v[0:1], v[2:3]\nv_pk_mul_f32 v[6:7], v[0:1], v[2:3] op_sel:[1,0] op_sel_hi:[0,1]\n\
         v_pk_fma_f32 v[8:9], v[0:1], v[2:3], v[0:1] neg_lo:[1,0,0]\nv_pk_add_f32 v[10:11], v[0:1], 1.0",
        Target::Gfx90a,
        &[(0, one), (1, two), (2, three), (3, half)],
    );
    assert_eq!(
        [lane0(&w, 4), lane0(&w, 5)],
        [4.0f32.to_bits(), 2.5f32.to_bits()]
    );
    // lo: v1·v2 = 6; hi: v0·v3 = 0.5
    assert_eq!(
        [lane0(&w, 6), lane0(&w, 7)],
        [6.0f32.to_bits(), 0.5f32.to_bits()]
    );
    // lo: -1·3 + 1 = -2; hi: 2·0.5 + 2 = 3
    assert_eq!([lane0(&w, 8), lane0(&w, 9)], [(-2.0f32).to_bits(), three]);
    assert_eq!([lane0(&w, 10), lane0(&w, 11)], [two, three]);
}

#[test]
fn mad_mix_and_fma_mix_convert_f16_sources() {
    // v0 = (f16 1.5 lo, f16 2.0 hi); v1 = f32 0.25
    let init = [
        (0, F16_1_5 | (F16_2 << 16)),
        (1, 0.25f32.to_bits()),
        (4, 0xabcd_0000),
        (5, 0x0000_abcd),
    ];
    let w = run(
        "v_mad_mix_f32 v2, v0, v1, v0 op_sel:[1,0,0] op_sel_hi:[1,0,1]\n\
         v_mad_mixlo_f16 v4, v0, v0, v1 op_sel_hi:[1,1,0]\n\
         v_mad_mixhi_f16 v5, -v0, |v1|, v1 op_sel:[1,0,0] op_sel_hi:[1,0,0]",
        Target::Gfx900,
        &init,
    );
    // 2.0·0.25 + 1.5 = 2.0
    assert_eq!(lane0(&w, 2), 2.0f32.to_bits());
    // 1.5·1.5 + 0.25 = 2.5 → f16 0x4100 into bits 15:0, bits 31:16 kept
    assert_eq!(lane0(&w, 4), 0xabcd_4100);
    // -2.0·0.25 + 0.25 = -0.25 → f16 0xb400 into bits 31:16
    assert_eq!(lane0(&w, 5), 0xb400_abcd);
    let w = run(
        "v_fma_mix_f32 v2, v0, v1, v0 op_sel:[1,0,0] op_sel_hi:[1,0,1]",
        Target::Gfx90a,
        &init,
    );
    assert_eq!(lane0(&w, 2), 2.0f32.to_bits());
}

#[test]
fn dot_products_on_gfx90a() {
    let w = run(
        "v_dot2_f32_f16 v3, v0, v1, v2\nv_dot4_i32_i8 v4, v5, v6, 10\nv_dot8_u32_u4 v7, v5, v6, 0\n\
         v_dot2_i32_i16 v8, v5, v6, v9 clamp\nv_dot2_i32_i16 v10, v5, v6, v9",
        Target::Gfx90a,
        &[
            (0, F16_1_5 | (F16_2 << 16)),
            (1, F16_2 | (F16_2_25 << 16)),
            (2, 0.5f32.to_bits()),
            (5, 0x80ff_0102), // i8: 2, 1, -1, -128
            (6, 0x7f03_0405), // i8: 5, 4, 3, 127
            (9, 0x8000_0000), // i32::MIN
        ],
    );
    // 1.5·2 + 2·2.25 + 0.5 = 8
    assert_eq!(lane0(&w, 3), 8.0f32.to_bits());
    // 2·5 + 1·4 + (-1)·3 + (-128)·127 + 10 = -16235
    assert_eq!(lane0(&w, 4) as i32, -16235);
    // nibbles of 0x80ff0102 · 0x7f030405, low first: 2·5 + 0·0 + 1·4 + 0·0 + 15·3 + 15·0
    // + 0·15 + 8·7 = 115
    assert_eq!(lane0(&w, 7), 115);
    // i16: 0x0102·0x0405 + (-32513)·0x7f03 = 258·1029 - 32513·32515 = -1056894713; plus
    // i32::MIN it leaves the i32 range: clamp saturates, without clamp it wraps
    assert_eq!(lane0(&w, 8), 0x8000_0000, "clamp saturates to i32::MIN");
    assert_eq!(
        lane0(&w, 10),
        (-1_056_894_713i32).wrapping_add(i32::MIN) as u32
    );
}

#[test]
fn trig_preop_gives_53_bit_segments_of_two_over_pi() {
    let one = 1.0f64.to_bits();
    let big = 2f64.powi(100).to_bits(); // biased exponent 1123: 46 bits further
    let w = run(
        "v_trig_preop_f64 v[4:5], v[0:1], 0\nv_trig_preop_f64 v[6:7], v[0:1], 1\n\
         v_trig_preop_f64 v[8:9], v[0:1], 2\nv_trig_preop_f64 v[10:11], v[2:3], 0",
        Target::Gfx900,
        &[
            (0, one as u32),
            (1, (one >> 32) as u32),
            (2, big as u32),
            (3, (big >> 32) as u32),
        ],
    );
    let get = |r: usize| u64::from(lane0(&w, r)) | (u64::from(lane0(&w, r + 1)) << 32);
    // 2/π truncated to 53 bits (the rounded double is ...883)
    assert_eq!(get(4), 0x3fe4_5f30_6dc9_c882);
    assert_eq!(get(6), 0x3c94_a7f0_9d5f_47d4);
    assert_eq!(get(8), 0x394a_6ee0_6db1_4acc);
    assert_eq!(get(10), 0x3cb5_29fc_2757_d1e0);
}

/// The f64 division sequence clang 15 emits for `a / b` on gfx9 (div_scale ×2, rcp, two
/// Newton steps, mul, residual fma, div_fmas, div_fixup), run at the edges of the exponent
/// range against the host's correctly rounded quotient.
#[test]
fn f64_division_sequence_is_correctly_rounded_at_the_range_edges() {
    let seq = "v_div_scale_f64 v[5:6], s[0:1], v[3:4], v[3:4], v[1:2]\n\
               v_div_scale_f64 v[11:12], vcc, v[1:2], v[3:4], v[1:2]\n\
               v_rcp_f64_e32 v[7:8], v[5:6]\n\
               v_fma_f64 v[9:10], -v[5:6], v[7:8], 1.0\n\
               v_fma_f64 v[7:8], v[7:8], v[9:10], v[7:8]\n\
               v_fma_f64 v[9:10], -v[5:6], v[7:8], 1.0\n\
               v_fma_f64 v[7:8], v[7:8], v[9:10], v[7:8]\n\
               v_mul_f64 v[9:10], v[11:12], v[7:8]\n\
               v_fma_f64 v[5:6], -v[5:6], v[9:10], v[11:12]\n\
               v_div_fmas_f64 v[5:6], v[5:6], v[7:8], v[9:10]\n\
               v_div_fixup_f64 v[0:1], v[5:6], v[3:4], v[1:2]";
    let cases: [(f64, f64); 10] = [
        (1.0, 3.0),
        (1.0, 1.7e308),           // 1/den and the quotient are denormal
        (2.2e-308, 1.7e308),      // underflows to 0
        (1.7e308, 4.9e-323),      // overflows to inf
        (1.7e308, 0.5),           // near overflow: exponent difference ≥ 768 after scaling
        (4.9e-324, 3.0),          // denormal numerator
        (1.0, f64::MIN_POSITIVE), // smallest normal denominator
        (-9.1e307, 1.1e-309),     // denormal denominator, overflow
        (0.0, 0.0),               // NaN
        (5.0, f64::INFINITY),
    ];
    for (num, den) in cases {
        let w = run(
            seq,
            Target::Gfx900,
            &[
                (1, num.to_bits() as u32),
                (2, (num.to_bits() >> 32) as u32),
                (3, den.to_bits() as u32),
                (4, (den.to_bits() >> 32) as u32),
            ],
        );
        let got = f64::from_bits(u64::from(lane0(&w, 0)) | (u64::from(lane0(&w, 1)) << 32));
        let want = num / den;
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{num:e} / {den:e}: got {got:e}, want {want:e}"
        );
    }
}

#[test]
fn mad_with_a_literal_pack_and_accumulating_dots() {
    let w = run(
        "v_madmk_f32 v2, v0, 0x41200000, v1\nv_madak_f32 v3, v0, v1, 0x41200000\n\
         v_madak_f16 v4, v5, v5, 0x4000\nv_pack_b32_f16 v6, v5, -v7 op_sel:[0,1]",
        Target::Gfx900,
        &[
            (0, 2.0f32.to_bits()),
            (1, 0.5f32.to_bits()),
            (4, 0xabcd_0000),
            (5, F16_1_5),
            (7, F16_2_25 << 16),
        ],
    );
    assert_eq!(lane0(&w, 2), 20.5f32.to_bits(), "2·10 + 0.5");
    assert_eq!(lane0(&w, 3), 11.0f32.to_bits(), "2·0.5 + 10");
    // 1.5·1.5 + 2 = 4.25 (0x4440); bits 31:16 kept on gfx9
    assert_eq!(lane0(&w, 4), 0xabcd_4440);
    // lo: 1.5 from v5, hi: -(v7's high half 2.25)
    assert_eq!(lane0(&w, 6), F16_1_5 | ((F16_2_25 | 0x8000) << 16));
    let w = run(
        "v_dot2c_f32_f16_e32 v2, v0, v1\nv_dot4c_i32_i8_e32 v3, v4, v5",
        Target::Gfx90a,
        &[
            (0, F16_1_5 | (F16_2 << 16)),
            (1, F16_2 | (F16_2_25 << 16)),
            (2, 0.5f32.to_bits()),
            (3, 100),
            (4, 0x80ff_0102),
            (5, 0x7f03_0405),
        ],
    );
    assert_eq!(lane0(&w, 2), 8.0f32.to_bits(), "0.5 + 1.5·2 + 2·2.25");
    assert_eq!(lane0(&w, 3) as i32, 100 + 10 + 4 - 3 - 128 * 127);
}
