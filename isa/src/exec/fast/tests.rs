//! The fast paths against the general interpreter, bit for bit, on random instructions and
//! operands, and the lane-mask and fma helpers they rely on.

use super::*;
use crate::Target;

#[test]
fn lane_masks_pack_and_expand() {
    for mask in [
        0u64,
        u64::MAX,
        1,
        1 << 63,
        0x8000_0000_0000_0001,
        0x0123_4567_89ab_cdef,
        0xf0f0_0f0f_5555_aaaa,
    ] {
        let bytes: [u8; WAVE_SIZE] = std::array::from_fn(|l| ((mask >> l) & 1) as u8);
        assert_eq!(pack(&bytes), mask);
        for l in 0..WAVE_SIZE {
            let m = EXPAND[((mask >> (l & !7)) & 0xff) as usize][l & 7];
            assert_eq!(m != 0, (mask >> l) & 1 != 0, "lane {l} of {mask:#x}");
        }
    }
}

/// A small xorshift generator: the test needs no dependency and must be reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Register values that exercise the float rules: zeros, denormals, infinities, quiet
/// and signalling NaNs, values next to 1, carries and sign boundaries.
const VALUES: [u32; 16] = [
    0,
    0x8000_0000,
    1,
    0x807f_ffff,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0x7f80_0001,
    0x3f80_0000,
    0x3f80_0001,
    0x3380_0000,
    0xffff_ffff,
    0x7fff_ffff,
    0x0080_0000,
    31,
    33,
];

fn random_source(rng: &mut Rng) -> u32 {
    match rng.below(6) {
        0 | 1 => 256 + rng.below(8) as u32, // v0..v7
        2 => rng.below(8) as u32,           // s0..s7
        3 => 128 + rng.below(81) as u32,    // inline integers
        4 => [240, 241, 242, 243, 248, 106][rng.below(6) as usize], // floats, vcc_lo
        _ => 255,                           // literal
    }
}

/// A random VOP1/VOP2/VOPC/VOP3 instruction (with a literal when a source asks for one).
fn random_valu(rng: &mut Rng) -> Vec<u8> {
    let src0 = random_source(rng);
    let vdst = rng.below(8) as u32;
    let vsrc1 = rng.below(8) as u32;
    let mut words = match rng.below(4) {
        0 => vec![(rng.below(0x3e) as u32) << 25 | vdst << 17 | vsrc1 << 9 | src0],
        1 => vec![0x3f << 25 | vdst << 17 | (rng.below(0x80) as u32) << 9 | src0],
        2 => vec![0x3e << 25 | (rng.below(0x100) as u32) << 17 | vsrc1 << 9 | src0],
        _ => {
            let op = rng.below(0x300) as u32;
            // clamp, abs, neg and omod mostly clear, sometimes set
            let mods = if rng.below(4) == 0 {
                rng.next() as u32
            } else {
                0
            };
            let w0 = 0x34 << 26 | op << 16 | (mods & 0x8700) | vdst;
            let src1 = random_source(rng) & 0x1ff;
            let src2 = random_source(rng) & 0x1ff;
            let w1 = (mods & 0xf800_0000) | src2 << 18 | src1 << 9 | src0;
            vec![w0, w1]
        }
    };
    if words.iter().any(|w| w & 0x1ff == 255) || words.len() == 2 {
        words.push(VALUES[rng.below(16) as usize] ^ (rng.below(2) as u32));
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn random_scalar_source(rng: &mut Rng) -> u32 {
    [
        0, 1, 2, 3, 4, 5, 6, 106, 126, 128, 129, 193, 200, 242, 246, 255,
    ][rng.below(16) as usize]
}

/// A random SOP1/SOP2/SOPC instruction or SOPP branch.
fn random_salu(rng: &mut Rng) -> Vec<u8> {
    let (a, b) = (random_scalar_source(rng), random_scalar_source(rng));
    let d = [0, 1, 2, 4, 106, 126][rng.below(6) as usize];
    let mut words = match rng.below(4) {
        0 => vec![0b10 << 30 | (rng.below(0x30) as u32) << 23 | d << 16 | b << 8 | a],
        1 => vec![0x17d << 23 | d << 16 | (rng.below(0x40) as u32) << 8 | a],
        2 => vec![0x17e << 23 | (rng.below(0x14) as u32) << 16 | b << 8 | a],
        _ => vec![0x17f << 23 | (rng.below(13) as u32) << 16 | rng.below(0x10000) as u32],
    };
    if words[0] >> 30 != 0b11 && (a == 255 || b == 255) {
        words.push(VALUES[rng.below(16) as usize]);
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn fast_path_matches_the_general_interpreter() {
    let mut kinds = std::collections::BTreeSet::new();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut planned = 0;
    for _ in 0..20_000 {
        let code = if rng.below(3) == 0 {
            random_salu(&mut rng)
        } else {
            random_valu(&mut rng)
        };
        let target = if rng.below(2) == 0 {
            Target::Gfx900
        } else {
            Target::Gfx90a
        };
        let fast = crate::exec::CodeCache::new(target, 0, &code);
        if fast.fast_path_entries() == 0
            || !matches!(fast.get(0), Some(Ok(c)) if c.fast != Plan::None)
        {
            continue;
        }
        planned += 1;
        if let Some(Ok(c)) = fast.get(0) {
            kinds.insert(c.inst.op.mnemonic());
        }
        let general = fast.clone().without_fast_path();
        let mut w = Wave::new(target, 8, 0);
        for v in 0..8 {
            for l in 0..WAVE_SIZE {
                w.vgpr[v][l] = if rng.below(3) == 0 {
                    rng.next() as u32
                } else {
                    VALUES[rng.below(16) as usize]
                };
            }
        }
        for i in 0..8 {
            w.sgpr[i] = VALUES[rng.below(16) as usize];
        }
        w.set_vcc(rng.next());
        w.scc = rng.below(2) == 0;
        w.set_exec(if rng.below(2) == 0 {
            u64::MAX
        } else {
            rng.next()
        });
        w.mode = super::super::wave::Mode(rng.below(0x400) as u32);
        let mut a = w.clone();
        let mut b = w;
        let mut env = crate::exec::HostEnv::new(0);
        let sa = a.run(&fast, &mut env, 1);
        let sb = b.run(&general, &mut env, 1);
        let disasm = crate::disasm::disasm(&fast.get(0).unwrap().as_ref().unwrap().inst);
        assert_eq!(sa, sb, "{disasm}");
        assert_eq!(a.vgpr, b.vgpr, "{disasm} mode {:#x}", a.mode.0);
        assert_eq!(a.sgpr, b.sgpr, "{disasm}");
        assert_eq!((a.scc, a.pc), (b.scc, b.pc), "{disasm}");
    }
    // the generator reaches the planned instructions often enough to mean something
    eprintln!("{planned} planned, {} ops: {kinds:?}", kinds.len());
    assert!(planned > 2_000, "only {planned} planned instructions");
}

#[test]
fn shift_and_or_add_by_a_constant_match_the_general_interpreter() {
    // (encodings from llvm-mc-15 -mcpu=gfx900; all planned)
    let cases: [[u8; 8]; 5] = [
        // v_lshl_or_b32 v0, s6, 8, v0
        [0x00, 0x00, 0x00, 0xd2, 0x06, 0x10, 0x01, 0x04],
        // v_lshl_or_b32 v1, v2, 40, v3 (only bits 4:0 of the amount count)
        [0x01, 0x00, 0x00, 0xd2, 0x02, 0x51, 0x0d, 0x04],
        // v_lshl_add_u32 v4, v5, 3, v6
        [0x04, 0x00, 0xfd, 0xd1, 0x05, 0x07, 0x19, 0x04],
        // v_lshl_add_u32 v2, v2, 33, s1
        [0x02, 0x00, 0xfd, 0xd1, 0x02, 0x43, 0x05, 0x00],
        // v_lshl_or_b32 v3, v1, s2, v3 (an SGPR amount: the per-lane form)
        [0x03, 0x00, 0x00, 0xd2, 0x01, 0x05, 0x0c, 0x04],
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for code in cases {
        one_instruction_matches_the_general_interpreter(&code, true, &mut rng, |w, rng| {
            for i in 0..8 {
                w.sgpr[i] = rng.next() as u32;
            }
        });
    }
}

/// Runs the one instruction in `code` (planned or not, as `planned` says) on 64 random
/// 8-VGPR waves, `setup` finishing each, with and without the fast path: the same stop,
/// VGPRs and PC.
fn one_instruction_matches_the_general_interpreter(
    code: &[u8],
    planned: bool,
    rng: &mut Rng,
    setup: impl Fn(&mut Wave, &mut Rng),
) {
    let fast = crate::exec::CodeCache::new(Target::Gfx900, 0, code);
    let Some(Ok(c)) = fast.get(0) else {
        panic!("decodes")
    };
    assert_eq!(c.fast != Plan::None, planned, "{:?} planned", c.inst.op);
    let general = fast.clone().without_fast_path();
    for round in 0..64 {
        let mut w = Wave::new(Target::Gfx900, 8, 0);
        for v in 0..8 {
            for l in 0..WAVE_SIZE {
                w.vgpr[v][l] = rng.next() as u32;
            }
        }
        setup(&mut w, rng);
        w.set_exec(if round % 2 == 0 { u64::MAX } else { rng.next() });
        let (mut a, mut b) = (w.clone(), w);
        let mut env = crate::exec::HostEnv::new(0);
        let sa = a.run(&fast, &mut env, 1);
        let sb = b.run(&general, &mut env, 1);
        assert_eq!(sa, sb, "{:?}", c.inst.op);
        assert_eq!(a.vgpr, b.vgpr, "{:?}", c.inst.op);
        assert_eq!(a.pc, b.pc);
    }
}

#[test]
fn shifts_of_vgpr_pairs_match_the_general_interpreter() {
    // (encoding from llvm-mc-15 -mcpu=gfx900, planned)
    let cases: [([u8; 8], bool); 6] = [
        // v_lshlrev_b64 v[0:1], 2, v[0:1]
        ([0x00, 0x00, 0x8f, 0xd2, 0x82, 0x00, 0x02, 0x00], true),
        // v_lshrrev_b64 v[2:3], v4, v[6:7]
        ([0x02, 0x00, 0x90, 0xd2, 0x04, 0x0d, 0x02, 0x00], true),
        // v_ashrrev_i64 v[4:5], s3, v[4:5]
        ([0x04, 0x00, 0x91, 0xd2, 0x03, 0x08, 0x02, 0x00], true),
        // v_ashrrev_i64 v[0:1], v7, v[6:7]
        ([0x00, 0x00, 0x91, 0xd2, 0x07, 0x0d, 0x02, 0x00], true),
        // v_lshlrev_b64 v[6:7], v0, v[7:8]: v8 is outside an 8-VGPR wave
        ([0x06, 0x00, 0x8f, 0xd2, 0x00, 0x0f, 0x02, 0x00], true),
        // v_lshlrev_b64 v[0:1], 1, s[2:3]: a scalar pair takes the general path
        ([0x00, 0x00, 0x8f, 0xd2, 0x81, 0x04, 0x00, 0x00], false),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (code, planned) in cases {
        one_instruction_matches_the_general_interpreter(&code, planned, &mut rng, |w, rng| {
            // shift amounts beyond 63 (only bits 5:0 count) and around 32
            w.vgpr[4][0] = 32;
            w.vgpr[7][1] = 95;
            for i in 0..8 {
                w.sgpr[i] = rng.below(130) as u32;
            }
        });
    }
}

#[test]
fn fma_via_f64_matches_the_host_fma_or_asks_for_it() {
    // operands around rounding midpoints, denormals, overflow and cancellation
    let vals = [
        1.0f32,
        -1.0,
        1.0 + f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
        0.5,
        3.0,
        1e-38,
        1e-45,
        -1e-40,
        f32::MAX,
        -f32::MAX,
        f32::MIN_POSITIVE,
        16_777_217.0,
        0.1,
        -0.3,
        f32::INFINITY,
        0.0,
        -0.0,
    ];
    let mut checked = 0;
    for &x in &vals {
        for &y in &vals {
            for &z in &vals {
                let (v, slow) = fma_via_f64(x, y, z);
                if !slow {
                    let want = x.mul_add(y, z);
                    assert_eq!(v.to_bits(), want.to_bits(), "fma({x:e}, {y:e}, {z:e})");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > vals.len() * vals.len());
    // a midpoint: 1 + 2^-24 is exactly halfway between 1 and 1 + 2^-23
    let (_, slow) = fma_via_f64(1.0, 1.0, f32::EPSILON / 2.0);
    assert!(slow);
}
