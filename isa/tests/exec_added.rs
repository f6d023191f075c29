//! The instructions the compiler corpus showed missing (`isa/COVERAGE.md`), each against a
//! host reference of the ISA guides' definition: 16-bit integer VOP3 ops with `op_sel` and
//! clamp, `v_mad_{u32_u16,i32_i16}`, `v_swap_b32`, and LDS accesses past the allocation
//! (dropped as the hardware drops them, or a fault in a strict world). Programs are
//! assembled by llvm-mc-15.

// Lanes are indexed by number: the lane is what the assertions name.
#![allow(clippy::needless_range_loop)]

mod assemble;

use assemble::asm;

use isa::exec::fault::WaveFault;
use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;

struct Run {
    wave: Wave,
    env: HostEnv,
    cache: CodeCache,
}

impl Run {
    fn new(src: &str, target: Target, lds: usize) -> Run {
        let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
        let mut wave = Wave::new(target, 32, 0);
        wave.pc = BASE;
        Run {
            wave,
            env: HostEnv::new(lds),
            cache: CodeCache::new(target, BASE, &code),
        }
    }

    fn go(&mut self) -> Stop {
        self.wave.run(&self.cache, &mut self.env, 1000)
    }
}

/// Lane values that cover the 16-bit edge cases: 0, 1, 0x7fff, 0x8000, 0xffff and a spread.
fn half_pattern(l: usize, salt: u32) -> u16 {
    const EDGES: [u16; 6] = [0, 1, 0x7fff, 0x8000, 0xffff, 0x8001];
    let x = (l as u32)
        .wrapping_mul(0x9e37)
        .wrapping_add(salt.wrapping_mul(0x45d9));
    if l % 3 == 0 {
        EDGES[(l / 3 + salt as usize) % EDGES.len()]
    } else {
        (x ^ (x >> 7)) as u16
    }
}

fn med3<T: Ord + Copy>(a: T, b: T, c: T) -> T {
    // the middle value, by sorting: an independent formulation of the median
    let mut v = [a, b, c];
    v.sort();
    v[1]
}

/// Runs `op vdst, v0, v1, v2` (with `mods`) over lanes whose low halves are `a`, `b`, `c` and
/// whose high halves are other values, with v3's old value 0xdead_beef and the odd lanes off.
fn three_16(op: &str, mods: &str) -> (Run, [[u32; 64]; 3]) {
    let mut r = Run::new(
        &format!("s_mov_b32 exec_lo, 0x55555555\ns_mov_b32 exec_hi, 0x55555555\n{op} v3, v0, v1, v2 {mods}"),
        Target::Gfx900,
        0,
    );
    let mut src = [[0u32; 64]; 3];
    for (i, s) in src.iter_mut().enumerate() {
        for (l, x) in s.iter_mut().enumerate() {
            *x = u32::from(half_pattern(l, i as u32))
                | u32::from(half_pattern(63 - l, 7 + i as u32)) << 16;
        }
        r.wave.vgpr[i] = *s;
    }
    r.wave.vgpr[3] = [0xdead_beef; 64];
    assert_eq!(r.go(), Stop::EndOfProgram, "{op} {mods}");
    (r, src)
}

#[test]
fn med3_min3_max3_of_16_bit_integers() {
    type Reference = fn(u16, u16, u16) -> u16;
    let cases: [(&str, Reference); 6] = [
        ("v_med3_u16", |a, b, c| med3(a, b, c)),
        ("v_med3_i16", |a, b, c| {
            med3(a as i16, b as i16, c as i16) as u16
        }),
        ("v_min3_u16", |a, b, c| a.min(b).min(c)),
        ("v_max3_u16", |a, b, c| a.max(b).max(c)),
        ("v_min3_i16", |a, b, c| {
            (a as i16).min(b as i16).min(c as i16) as u16
        }),
        ("v_max3_i16", |a, b, c| {
            (a as i16).max(b as i16).max(c as i16) as u16
        }),
    ];
    for (op, reference) in cases {
        // plain: the low halves, the result in bits 15:0 and bits 31:16 kept
        let (r, s) = three_16(op, "");
        // op_sel: sources 0 and 2 from their high halves, the result to bits 31:16
        let (rh, _) = three_16(op, "op_sel:[1,0,1,1]");
        for l in 0..64 {
            let v3 = r.wave.vgpr[3][l];
            let v3h = rh.wave.vgpr[3][l];
            if l % 2 == 1 {
                assert_eq!(v3, 0xdead_beef, "{op}: lane {l} is off");
                assert_eq!(v3h, 0xdead_beef, "{op}: lane {l} is off");
                continue;
            }
            let lo = |x: u32| x as u16;
            let hi = |x: u32| (x >> 16) as u16;
            let want = reference(lo(s[0][l]), lo(s[1][l]), lo(s[2][l]));
            assert_eq!(v3, 0xdead_0000 | u32::from(want), "{op} lane {l}");
            let want = reference(hi(s[0][l]), lo(s[1][l]), hi(s[2][l]));
            assert_eq!(v3h, u32::from(want) << 16 | 0xbeef, "{op} op_sel lane {l}");
        }
    }
}

#[test]
fn add_sub_i16_wrap_or_saturate_with_clamp() {
    for (op, f) in [
        ("v_add_i16", i16::wrapping_add as fn(i16, i16) -> i16),
        ("v_sub_i16", i16::wrapping_sub),
    ] {
        let sat: fn(i16, i16) -> i16 = if op == "v_add_i16" {
            i16::saturating_add
        } else {
            i16::saturating_sub
        };
        for clamp in [false, true] {
            let mods = if clamp { "clamp" } else { "" };
            let mut r = Run::new(&format!("{op} v3, v0, v1 {mods}"), Target::Gfx906, 0);
            for l in 0..64 {
                r.wave.vgpr[0][l] = u32::from(half_pattern(l, 1)) | 0xabcd_0000;
                r.wave.vgpr[1][l] = u32::from(half_pattern(l, 4));
            }
            r.wave.vgpr[3] = [0x1234_5678; 64];
            assert_eq!(r.go(), Stop::EndOfProgram);
            for l in 0..64 {
                let (a, b) = (half_pattern(l, 1) as i16, half_pattern(l, 4) as i16);
                let want = if clamp { sat(a, b) } else { f(a, b) };
                assert_eq!(
                    r.wave.vgpr[3][l],
                    0x1234_0000 | u32::from(want as u16),
                    "{op} {mods} lane {l}: {a} and {b}"
                );
            }
        }
    }
}

#[test]
fn mad_32_from_16_bit_factors() {
    for (op, signed) in [("v_mad_u32_u16", false), ("v_mad_i32_i16", true)] {
        for (mods, hi, clamp) in [
            ("", false, false),
            ("op_sel:[1,1,0,0]", true, false),
            ("clamp", false, true),
        ] {
            let mut r = Run::new(&format!("{op} v3, v0, v1, v2 {mods}"), Target::Gfx90a, 0);
            for l in 0..64 {
                r.wave.vgpr[0][l] =
                    u32::from(half_pattern(l, 2)) | u32::from(half_pattern(l, 5)) << 16;
                r.wave.vgpr[1][l] =
                    u32::from(half_pattern(l, 3)) | u32::from(half_pattern(l, 6)) << 16;
                // addends near the 32-bit limits, so clamp has work
                r.wave.vgpr[2][l] = match l % 4 {
                    0 => 0xffff_0000,
                    1 => 0x7fff_ff00,
                    2 => 0x8000_0010,
                    _ => l as u32,
                };
            }
            assert_eq!(r.go(), Stop::EndOfProgram);
            for l in 0..64 {
                let pick = |v: u32| if hi { (v >> 16) as u16 } else { v as u16 };
                let (a, b) = (pick(r.wave.vgpr[0][l]), pick(r.wave.vgpr[1][l]));
                let c = r.wave.vgpr[2][l];
                let want = if signed {
                    let s = i64::from(a as i16) * i64::from(b as i16) + i64::from(c as i32);
                    if clamp {
                        s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
                    } else {
                        s as u32
                    }
                } else {
                    let s = u64::from(a) * u64::from(b) + u64::from(c);
                    if clamp {
                        s.min(u64::from(u32::MAX)) as u32
                    } else {
                        s as u32
                    }
                };
                assert_eq!(r.wave.vgpr[3][l], want, "{op} {mods} lane {l}");
            }
        }
    }
}

#[test]
fn swap_exchanges_two_vgprs_in_the_exec_lanes() {
    let mut r = Run::new(
        "s_mov_b32 exec_lo, 0xf0f0f0f0\ns_mov_b32 exec_hi, 0xf0f0f0f0\nv_swap_b32 v1, v2\ns_mov_b64 exec, -1\nv_swap_b32 v3, v3",
        Target::Gfx900,
        0,
    );
    for l in 0..64 {
        r.wave.vgpr[1][l] = 100 + l as u32;
        r.wave.vgpr[2][l] = 200 + l as u32;
        r.wave.vgpr[3][l] = 300 + l as u32;
    }
    assert_eq!(r.go(), Stop::EndOfProgram);
    for l in 0..64 {
        let on = (0xf0f0_f0f0_f0f0_f0f0u64 >> l) & 1 != 0;
        let (one, two) = (100 + l as u32, 200 + l as u32);
        assert_eq!(r.wave.vgpr[1][l], if on { two } else { one }, "v1 lane {l}");
        assert_eq!(r.wave.vgpr[2][l], if on { one } else { two }, "v2 lane {l}");
        assert_eq!(r.wave.vgpr[3][l], 300 + l as u32, "v3 swapped with itself");
    }
}

/// A workgroup with 256 bytes of LDS: lane l stores l+1 at byte 8*l (lanes 32.. are past the
/// end), adds 5 to the same dword with return, reads it back, and reads two dwords with
/// `ds_read2_b32` at 8*l and 8*l+4.
const LDS_PROGRAM: &str = "v_lshlrev_b32_e32 v1, 3, v0
v_add_u32_e32 v2, 1, v0
ds_write_b32 v1, v2
v_mov_b32_e32 v3, 5
ds_add_rtn_u32 v4, v1, v3
ds_read_b32 v5, v1
ds_read2_b32 v[6:7], v1 offset1:1
s_waitcnt lgkmcnt(0)";

fn lds_run(strict: bool) -> (Run, Stop) {
    let mut r = Run::new(LDS_PROGRAM, Target::Gfx900, 256);
    r.env.lds_strict = strict;
    r.env.lds.fill(0xee);
    for l in 0..64 {
        r.wave.vgpr[0][l] = l as u32;
        for v in 4..8 {
            r.wave.vgpr[v][l] = 0x5a5a_5a5a;
        }
    }
    let stop = r.go();
    (r, stop)
}

#[test]
fn lds_past_the_allocation_drops_writes_and_reads_zero() {
    let (r, stop) = lds_run(false);
    assert_eq!(stop, Stop::EndOfProgram);
    for l in 0..64 {
        let inside = l < 32;
        let w = r.wave.vgpr.as_slice();
        if inside {
            assert_eq!(w[4][l], l as u32 + 1, "ds_add_rtn returns the stored value");
            assert_eq!(w[5][l], l as u32 + 6, "the store and the add landed");
            assert_eq!(w[6][l], l as u32 + 6);
            assert_eq!(w[7][l], 0xeeee_eeee, "the dword after it is untouched");
        } else {
            assert_eq!(w[4][l], 0, "an atomic past the end returns 0 (lane {l})");
            assert_eq!(w[5][l], 0, "a read past the end returns 0 (lane {l})");
            assert_eq!((w[6][l], w[7][l]), (0, 0), "read2 past the end (lane {l})");
        }
    }
    // Every in-range byte is the stores' or the fill's: nothing wrapped around into LDS.
    for (i, chunk) in r.env.lds.chunks_exact(8).enumerate() {
        let first = u32::from_le_bytes(chunk[..4].try_into().unwrap());
        assert_eq!(first, i as u32 + 6, "dword {}", 2 * i);
        assert_eq!(&chunk[4..], &[0xee; 4], "dword {}", 2 * i + 1);
    }
    assert_eq!(r.env.lds.len(), 256);
    // one notice per instruction that had lanes outside: write, add, read, read2
    assert_eq!(r.env.lds_out_of_range, vec![0x100; 4]);
}

#[test]
fn lds_past_the_allocation_faults_in_a_strict_world() {
    let (r, stop) = lds_run(true);
    assert_eq!(
        stop,
        Stop::Fault(WaveFault::LdsOutOfRange { offset: 0x100 }),
        "the first lane past the end of 256 bytes is lane 32"
    );
    assert!(r.env.lds_out_of_range.is_empty());
}

#[test]
fn vgpr_index_mode_offsets_the_named_operands() {
    let mut r = Run::new(
        "s_mov_b32 s0, 3
s_set_gpr_idx_on s0, gpr_idx(SRC0)
v_mov_b32_e32 v1, v10
s_set_gpr_idx_mode gpr_idx(DST)
s_mov_b32 exec_hi, 0
v_mov_b32_e32 v20, v11
s_mov_b32 exec_hi, -1
s_mov_b32 s1, 5
s_set_gpr_idx_idx s1
v_add_u32_e32 v2, v0, v4
s_set_gpr_idx_off
v_mov_b32_e32 v3, v10",
        Target::Gfx900,
        0,
    );
    for v in 0..32 {
        r.wave.vgpr[v] = [1000 * v as u32; 64];
    }
    assert_eq!(r.go(), Stop::EndOfProgram);
    let w = &r.wave.vgpr;
    for l in 0..64 {
        assert_eq!(w[1][l], 13_000, "SRC0 v10 + 3 reads v13 (lane {l})");
        let low = l < 32;
        // DST only: v20 + 3 = v23 gets v11 in the EXEC lanes, v20 keeps its value
        assert_eq!(w[23][l], if low { 11_000 } else { 23_000 }, "lane {l}");
        assert_eq!(w[20][l], 20_000);
        // index 5: v2 + 5 = v7 = v0 + v4, sources not indexed
        assert_eq!(w[7][l], 4_000, "lane {l}");
        assert_eq!(w[2][l], 2_000);
        // off: plain operands again
        assert_eq!(w[3][l], 10_000);
    }
    assert_eq!(
        r.wave.sgpr[isa::exec::wave::sreg::M0] & 0xf0ff,
        0x8005,
        "index 5, DST"
    );
    assert!(
        !r.wave.mode.gpr_idx(),
        "s_set_gpr_idx_off clears MODE.GPR_IDX_EN"
    );
}

#[test]
fn dot4_with_the_accumulator_op_sel_hi_clear_as_clang_17_writes_it() {
    for mods in ["", "op_sel_hi:[1,1,0]"] {
        let mut r = Run::new(
            &format!("v_dot4_i32_i8 v5, v1, v2, v3 {mods}"),
            Target::Gfx906,
            0,
        );
        for l in 0..64 {
            r.wave.vgpr[1][l] = (l as u32).wrapping_mul(0x0101_0101) ^ 0x80ff_7f01;
            r.wave.vgpr[2][l] = (l as u32 * 7).wrapping_mul(0x0102_0304) ^ 0x7f80_01ff;
            r.wave.vgpr[3][l] = (l as u32).wrapping_mul(0x0100_0001);
        }
        assert_eq!(r.go(), Stop::EndOfProgram, "{mods}");
        for l in 0..64 {
            let bytes = |v: u32| v.to_le_bytes().map(|b| i32::from(b as i8));
            let (a, b) = (bytes(r.wave.vgpr[1][l]), bytes(r.wave.vgpr[2][l]));
            let dot: i32 = (0..4).map(|i| a[i] * b[i]).sum();
            let want = dot.wrapping_add(r.wave.vgpr[3][l] as i32) as u32;
            assert_eq!(r.wave.vgpr[5][l], want, "{mods} lane {l}");
        }
    }
}

/// Bytes of `x`, low first.
fn bytes4(x: u32) -> [u32; 4] {
    x.to_le_bytes().map(u32::from)
}

fn set_sources(r: &mut Run) {
    for l in 0..64 {
        let x = (l as u32).wrapping_mul(0x9e37_79b9);
        r.wave.vgpr[0][l] = x ^ 0x00ff_8001;
        r.wave.vgpr[1][l] = x.rotate_left(11) & if l % 5 == 0 { 0xff00_ff00 } else { !0 };
        r.wave.vgpr[2][l] = x.rotate_left(23) ^ 0x0101_0100;
        r.wave.vgpr[3][l] = (l as u32) << 8 | 7;
    }
}

#[test]
fn sums_of_absolute_differences_and_lerp() {
    let mut r = Run::new(
        "s_mov_b32 exec_hi, 0
v_sad_hi_u8 v4, v0, v1, v3
v_sad_u16 v5, v0, v1, v3
v_msad_u8 v6, v0, v1, v3
v_lerp_u8 v7, v0, v1, v2",
        Target::Gfx900,
        0,
    );
    set_sources(&mut r);
    for v in 4..8 {
        r.wave.vgpr[v] = [0x5555_5555; 64];
    }
    assert_eq!(r.go(), Stop::EndOfProgram);
    for l in 0..64 {
        let w = &r.wave.vgpr;
        if l >= 32 {
            assert!((4..8).all(|v| w[v][l] == 0x5555_5555), "lane {l} is off");
            continue;
        }
        let (a, b, c, d) = (bytes4(w[0][l]), bytes4(w[1][l]), bytes4(w[2][l]), w[3][l]);
        let sad: u32 = (0..4).map(|i| a[i].abs_diff(b[i])).sum();
        assert_eq!(w[4][l], (sad << 16).wrapping_add(d), "v_sad_hi_u8 lane {l}");
        let (h0, h1) = (w[0][l] & 0xffff, w[0][l] >> 16);
        let (g0, g1) = (w[1][l] & 0xffff, w[1][l] >> 16);
        assert_eq!(
            w[5][l],
            h0.abs_diff(g0) + h1.abs_diff(g1) + d,
            "v_sad_u16 lane {l}"
        );
        let msad: u32 = (0..4)
            .filter(|&i| b[i] != 0)
            .map(|i| a[i].abs_diff(b[i]))
            .sum();
        assert_eq!(w[6][l], msad + d, "v_msad_u8 lane {l}");
        let lerp = (0..4).fold(0, |acc, i| {
            acc | ((a[i] + b[i] + (c[i] & 1)) / 2) << (8 * i)
        });
        assert_eq!(w[7][l], lerp, "v_lerp_u8 lane {l}");
    }
}

#[test]
fn quad_sads_over_byte_windows() {
    let mut r = Run::new(
        "v_qsad_pk_u16_u8 v[8:9], v[0:1], v2, v[4:5]
v_mqsad_pk_u16_u8 v[10:11], v[0:1], v2, v[4:5]
v_mqsad_u32_u8 v[12:15], v[0:1], v2, v[16:19]",
        Target::Gfx906,
        0,
    );
    set_sources(&mut r);
    for l in 0..64 {
        r.wave.vgpr[4][l] = 0xfff0_0001 ^ l as u32;
        r.wave.vgpr[5][l] = 0x0010_ffff;
        for i in 0..4 {
            r.wave.vgpr[16 + i][l] = 0xffff_fff0 + i as u32;
        }
    }
    assert_eq!(r.go(), Stop::EndOfProgram);
    let w = &r.wave.vgpr;
    for l in 0..64 {
        let src: u64 = u64::from(w[0][l]) | u64::from(w[1][l]) << 32;
        let reference = bytes4(w[2][l]);
        let acc16: u64 = u64::from(w[4][l]) | u64::from(w[5][l]) << 32;
        for i in 0..4 {
            let window = bytes4((src >> (8 * i)) as u32);
            let sad: u32 = (0..4).map(|k| window[k].abs_diff(reference[k])).sum();
            let msad: u32 = (0..4)
                .filter(|&k| reference[k] != 0)
                .map(|k| window[k].abs_diff(reference[k]))
                .sum();
            let lane = ((acc16 >> (16 * i)) & 0xffff) as u32;
            let pick = |lo: u32, hi: u32| (if i < 2 { lo } else { hi } >> (16 * (i % 2))) & 0xffff;
            assert_eq!(
                pick(w[8][l], w[9][l]),
                (sad + lane) & 0xffff,
                "qsad lane {l} window {i}"
            );
            assert_eq!(
                pick(w[10][l], w[11][l]),
                (msad + lane) & 0xffff,
                "mqsad_pk lane {l} {i}"
            );
            assert_eq!(
                w[12 + i][l],
                msad.wrapping_add(w[16 + i][l]),
                "mqsad_u32 lane {l} {i}"
            );
        }
    }
}

#[test]
fn packing_conversions_saturate_and_round() {
    let floats = [
        f32::NAN,
        -2.0,
        -1.0,
        -0.75,
        -0.5,
        -0.0,
        0.0,
        1e-6,
        0.5,
        0.75,
        1.0,
        2.0,
        127.5,
        128.5,
        255.4,
        300.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    let ints = [
        i32::MIN,
        -40000,
        -32769,
        -32768,
        -1,
        0,
        1,
        32767,
        32768,
        65535,
        65536,
        i32::MAX,
    ];
    let mut r = Run::new(
        "v_cvt_pk_i16_i32 v4, v0, v1
v_cvt_pk_u16_u32 v5, v0, v1
v_cvt_pknorm_i16_f32 v6, v2, v3
v_cvt_pknorm_u16_f32 v7, v2, v3
v_cvt_pk_u8_f32 v8, v2, 1, v9
v_cvt_pk_u8_f32 v10, v3, 2, v9",
        Target::Gfx90a,
        0,
    );
    for l in 0..64 {
        r.wave.vgpr[0][l] = ints[l % ints.len()] as u32;
        r.wave.vgpr[1][l] = ints[(l * 5 + 3) % ints.len()] as u32;
        r.wave.vgpr[2][l] = floats[l % floats.len()].to_bits();
        r.wave.vgpr[3][l] = floats[(l * 7 + 2) % floats.len()].to_bits();
        r.wave.vgpr[9][l] = 0x1122_3344;
    }
    assert_eq!(r.go(), Stop::EndOfProgram);
    // references written out per value class rather than by clamping
    let sat_i16 = |x: i32| -> u32 {
        let v = match x {
            ..=-32768 => -32768,
            32767.. => 32767,
            _ => x,
        };
        v as u16 as u32
    };
    let sat_u16 = |x: u32| if x > 0xffff { 0xffff } else { x };
    let norm = |f: f32, signed: bool| -> u32 {
        let (lo, scale) = if signed {
            (-1.0, 32767.0)
        } else {
            (0.0, 65535.0)
        };
        let v = if f.is_nan() {
            0.0
        } else {
            (f.max(lo).min(1.0) * scale).round_ties_even()
        };
        (v as i32) as u16 as u32
    };
    let to_u8 = |f: f32| -> u32 {
        if f.is_nan() || f <= 0.0 {
            0
        } else if f >= 255.0 {
            255
        } else {
            f.round_ties_even() as u32
        }
    };
    let w = &r.wave.vgpr;
    for l in 0..64 {
        let (a, b) = (w[0][l], w[1][l]);
        let (f, g) = (f32::from_bits(w[2][l]), f32::from_bits(w[3][l]));
        assert_eq!(
            w[4][l],
            sat_i16(a as i32) | sat_i16(b as i32) << 16,
            "pk_i16 lane {l}"
        );
        assert_eq!(w[5][l], sat_u16(a) | sat_u16(b) << 16, "pk_u16 lane {l}");
        assert_eq!(
            w[6][l],
            norm(f, true) | norm(g, true) << 16,
            "pknorm_i16 {f} {g}"
        );
        assert_eq!(
            w[7][l],
            norm(f, false) | norm(g, false) << 16,
            "pknorm_u16 {f} {g}"
        );
        assert_eq!(w[8][l], 0x1122_0044 | to_u8(f) << 8, "pk_u8 byte 1 of {f}");
        assert_eq!(
            w[10][l],
            0x1100_3344 | to_u8(g) << 16,
            "pk_u8 byte 2 of {g}"
        );
    }
}

#[test]
fn cube_map_coordinates() {
    // (direction, face id, 2 * major axis, sc, tc), the faces as the ISA guide numbers them
    let cases: [([f32; 3], f32, f32, f32, f32); 8] = [
        ([3.0, 1.0, -2.0], 0.0, 6.0, 2.0, -1.0),
        ([-3.0, 1.0, 2.0], 1.0, -6.0, 2.0, -1.0),
        ([1.0, 4.0, -2.0], 2.0, 8.0, 1.0, -2.0),
        ([1.0, -4.0, 2.0], 3.0, -8.0, 1.0, -2.0),
        ([1.0, 2.0, 5.0], 4.0, 10.0, 1.0, -2.0),
        ([1.0, 2.0, -5.0], 5.0, -10.0, -1.0, -2.0),
        // ties: z wins over x and y, y over x
        ([2.0, 2.0, 2.0], 4.0, 4.0, 2.0, -2.0),
        ([-2.0, 2.0, 1.0], 2.0, 4.0, -2.0, 1.0),
    ];
    let mut r = Run::new(
        "v_cubeid_f32 v4, v0, v1, v2
v_cubema_f32 v5, v0, v1, v2
v_cubesc_f32 v6, v0, v1, v2
v_cubetc_f32 v7, v0, v1, v2",
        Target::Gfx908,
        0,
    );
    for l in 0..64 {
        let (d, ..) = cases[l % cases.len()];
        for i in 0..3 {
            r.wave.vgpr[i][l] = d[i].to_bits();
        }
    }
    assert_eq!(r.go(), Stop::EndOfProgram);
    for l in 0..64 {
        let (d, id, ma, sc, tc) = cases[l % cases.len()];
        let got = [4, 5, 6, 7].map(|v| f32::from_bits(r.wave.vgpr[v][l]));
        assert_eq!(got, [id, ma, sc, tc], "direction {d:?}");
    }
}
