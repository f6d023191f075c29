//! The packed-input MFMAs (f16, bf16, bf16_1k, i8) of gfx908/gfx90a against a host matrix
//! product. Inputs are placed by the MI200 ISA guide's layout — element `(i, k)` of A in
//! block `b` is element `k % pack` of lane `i + M·(k / pack + (K / pack)·b)` (B alike with
//! `j`, N), C/D as the f32 MFMAs (4×4 blocks: register `i`, lane `j + 4b`; else row
//! `i = 4g + r` in register `r + 4·(g / (64/N))` plus the block's base, lane
//! `j + N·(g mod (64/N))`) — and the result is read back the same way. Values are small
//! integers so every float sum is exact, and i8 products use the full range.

// Matrix code indexes rows, columns and k together; index loops read as the definition.
#![allow(clippy::needless_range_loop)]

mod assemble;

use assemble::asm;

use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;

#[derive(Clone, Copy, PartialEq)]
enum Ty {
    F16,
    Bf16,
    I8,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}

/// f16 bits of a small integer (|x| <= 16).
fn f16_int(x: i32) -> u32 {
    if x == 0 {
        return 0;
    }
    let a = x.unsigned_abs();
    let e = 31 - a.leading_zeros(); // exponent of the leading bit
    let mant = (a << (10 - e)) & 0x3ff;
    (if x < 0 { 0x8000 } else { 0 }) | ((e + 15) << 10) | mant
}

/// bf16 bits of a small integer (the high half of the f32).
fn bf16_int(x: i32) -> u32 {
    (x as f32).to_bits() >> 16
}

fn d_location(m: usize, n: usize, i: usize, j: usize, b: usize) -> (usize, usize) {
    if m == 4 {
        return (i, j + 4 * b);
    }
    let per_block = m * n / 64;
    let groups = 64 / n;
    (
        per_block * b + i % 4 + 4 * ((i / 4) / groups),
        j + n * ((i / 4) % groups),
    )
}

#[allow(clippy::too_many_arguments)]
fn check(
    name: &str,
    m: usize,
    n: usize,
    k: usize,
    blocks: usize,
    ty: Ty,
    pack: usize,
    target: Target,
    vgpr_cd: bool,
) {
    let regs = m * n * blocks / 64;
    let in_regs = if ty == Ty::I8 { 1 } else { pack / 2 };
    let (a0, b0) = (0usize, 4usize);
    let src = |r: usize| {
        if in_regs == 1 {
            format!("v{r}")
        } else {
            format!("v[{r}:{}]", r + 1)
        }
    };
    let cd = if vgpr_cd {
        format!("v[8:{}]", 8 + regs - 1)
    } else {
        format!("a[0:{}]", regs - 1)
    };
    let text = format!("{name} {cd}, {}, {}, {cd}", src(a0), src(b0));
    let code = asm(&format!("{text}\ns_endpgm\n"), target.name());
    let mut w = Wave::new(target, 48, 32);
    w.pc = BASE;
    let mut rng = Rng(0x1234_5678 ^ (m * 1000 + k * 10 + pack) as u64);
    let small = |r: &mut Rng| (r.next() % 7) as i32 - 3;
    let kq = k / pack;
    // A[b][i][k], B[b][k][j], C[b][i][j]
    let mut am = vec![vec![vec![0i32; k]; m]; blocks];
    let mut bm = vec![vec![vec![0i32; n]; k]; blocks];
    let mut cm = vec![vec![vec![0i32; n]; m]; blocks];
    for b in 0..blocks {
        for i in 0..m {
            for kk in 0..k {
                am[b][i][kk] = if ty == Ty::I8 {
                    (rng.next() as u8 as i8).into()
                } else {
                    small(&mut rng)
                };
            }
        }
        for kk in 0..k {
            for j in 0..n {
                bm[b][kk][j] = if ty == Ty::I8 {
                    (rng.next() as u8 as i8).into()
                } else {
                    small(&mut rng)
                };
            }
        }
        for i in 0..m {
            for j in 0..n {
                cm[b][i][j] = (rng.next() % 201) as i32 - 100;
            }
        }
    }
    let encode = |x: i32| -> u32 {
        match ty {
            Ty::F16 => f16_int(x),
            Ty::Bf16 => bf16_int(x),
            Ty::I8 => x as u8 as u32,
        }
    };
    let bits = if ty == Ty::I8 { 8 } else { 16 };
    for b in 0..blocks {
        for i in 0..m {
            for kk in 0..k {
                let lane = i + m * (kk / pack + kq * b);
                let e = kk % pack;
                let (reg, shift) = (e * bits / 32, (e * bits) % 32);
                w.vgpr[a0 + reg][lane] |= encode(am[b][i][kk]) << shift;
            }
        }
        for kk in 0..k {
            for j in 0..n {
                let lane = j + n * (kk / pack + kq * b);
                let e = kk % pack;
                let (reg, shift) = (e * bits / 32, (e * bits) % 32);
                w.vgpr[b0 + reg][lane] |= encode(bm[b][kk][j]) << shift;
            }
        }
        for i in 0..m {
            for j in 0..n {
                let (reg, lane) = d_location(m, n, i, j, b);
                let v = if ty == Ty::I8 {
                    cm[b][i][j] as u32
                } else {
                    (cm[b][i][j] as f32).to_bits()
                };
                if vgpr_cd {
                    w.vgpr[8 + reg][lane] = v;
                } else {
                    w.agpr[reg][lane] = v;
                }
            }
        }
    }
    w.set_exec(0x1); // MFMA ignores EXEC
    let cache = CodeCache::new(target, BASE, &code);
    let mut env = HostEnv::new(0);
    assert_eq!(w.run(&cache, &mut env, 10), Stop::EndOfProgram, "{text}");
    for b in 0..blocks {
        for i in 0..m {
            for j in 0..n {
                let want: i64 = i64::from(cm[b][i][j])
                    + (0..k)
                        .map(|kk| i64::from(am[b][i][kk]) * i64::from(bm[b][kk][j]))
                        .sum::<i64>();
                let (reg, lane) = d_location(m, n, i, j, b);
                let got = if vgpr_cd {
                    w.vgpr[8 + reg][lane]
                } else {
                    w.agpr[reg][lane]
                };
                let got = if ty == Ty::I8 {
                    i64::from(got as i32)
                } else {
                    f32::from_bits(got) as i64
                };
                assert_eq!(got, want, "{text}: block {b} D[{i}][{j}]");
            }
        }
    }
}

const ALL: &[(&str, usize, usize, usize, usize, Ty, usize)] = &[
    ("v_mfma_f32_32x32x4f16", 32, 32, 4, 2, Ty::F16, 4),
    ("v_mfma_f32_16x16x4f16", 16, 16, 4, 4, Ty::F16, 4),
    ("v_mfma_f32_4x4x4f16", 4, 4, 4, 16, Ty::F16, 4),
    ("v_mfma_f32_32x32x8f16", 32, 32, 8, 1, Ty::F16, 4),
    ("v_mfma_f32_16x16x16f16", 16, 16, 16, 1, Ty::F16, 4),
    ("v_mfma_i32_32x32x4i8", 32, 32, 4, 2, Ty::I8, 4),
    ("v_mfma_i32_16x16x4i8", 16, 16, 4, 4, Ty::I8, 4),
    ("v_mfma_i32_4x4x4i8", 4, 4, 4, 16, Ty::I8, 4),
    ("v_mfma_i32_32x32x8i8", 32, 32, 8, 1, Ty::I8, 4),
    ("v_mfma_i32_16x16x16i8", 16, 16, 16, 1, Ty::I8, 4),
    ("v_mfma_f32_32x32x2bf16", 32, 32, 2, 2, Ty::Bf16, 2),
    ("v_mfma_f32_16x16x2bf16", 16, 16, 2, 4, Ty::Bf16, 2),
    ("v_mfma_f32_4x4x2bf16", 4, 4, 2, 16, Ty::Bf16, 2),
    ("v_mfma_f32_32x32x4bf16", 32, 32, 4, 1, Ty::Bf16, 2),
    ("v_mfma_f32_16x16x8bf16", 16, 16, 8, 1, Ty::Bf16, 2),
    ("v_mfma_f32_32x32x4bf16_1k", 32, 32, 4, 2, Ty::Bf16, 4),
    ("v_mfma_f32_16x16x4bf16_1k", 16, 16, 4, 4, Ty::Bf16, 4),
    ("v_mfma_f32_4x4x4bf16_1k", 4, 4, 4, 16, Ty::Bf16, 4),
    ("v_mfma_f32_32x32x8bf16_1k", 32, 32, 8, 1, Ty::Bf16, 4),
    ("v_mfma_f32_16x16x16bf16_1k", 16, 16, 16, 1, Ty::Bf16, 4),
];

#[test]
fn gfx90a_packed_mfmas_with_agpr_c_and_d() {
    for &(name, m, n, k, blocks, ty, pack) in ALL {
        check(name, m, n, k, blocks, ty, pack, Target::Gfx90a, false);
    }
}

#[test]
fn gfx90a_packed_mfmas_with_vgpr_c_and_d() {
    for &(name, m, n, k, blocks, ty, pack) in ALL {
        if m * n * blocks / 64 <= 16 {
            check(name, m, n, k, blocks, ty, pack, Target::Gfx90a, true);
        }
    }
}

#[test]
fn gfx908_packed_mfmas() {
    for &(name, m, n, k, blocks, ty, pack) in ALL.iter().filter(|r| !r.0.ends_with("_1k")) {
        check(name, m, n, k, blocks, ty, pack, Target::Gfx908, false);
    }
}

/// `v_mfma_f64_16x16x4f64`: A's `(i, k)` in lane `i + 16k`, B's `(k, j)` in lane `j + 16k`,
/// D's `(i, j)` in register pair `2·(i/4)` of lane `j + 16·(i mod 4)` (rows spread over the
/// four lane groups); D = C + Σk A·B with one fused multiply-add per k, in k order.
#[test]
fn gfx90a_f64_16x16x4_mfma() {
    for vgpr_cd in [false, true] {
        let cd = if vgpr_cd { "v[8:15]" } else { "a[0:7]" };
        let text = format!("v_mfma_f64_16x16x4f64 {cd}, v[0:1], v[2:3], {cd}");
        let code = asm(&format!("{text}\ns_endpgm\n"), "gfx90a");
        let mut w = Wave::new(Target::Gfx90a, 32, 16);
        w.pc = BASE;
        let mut rng = Rng(0xf64);
        let mut val = || (rng.next() as i32 as f64) / 1e6 * 1.000_000_1;
        let am: Vec<Vec<f64>> = (0..16).map(|_| (0..4).map(|_| val()).collect()).collect();
        let bm: Vec<Vec<f64>> = (0..4).map(|_| (0..16).map(|_| val()).collect()).collect();
        let cm: Vec<Vec<f64>> = (0..16).map(|_| (0..16).map(|_| val()).collect()).collect();
        let put = |w: &mut Wave, reg: usize, lane: usize, x: f64, acc: bool| {
            let b = x.to_bits();
            let file = if acc { &mut w.agpr } else { &mut w.vgpr };
            file[reg][lane] = b as u32;
            file[reg + 1][lane] = (b >> 32) as u32;
        };
        for k in 0..4 {
            for i in 0..16 {
                put(&mut w, 0, i + 16 * k, am[i][k], false);
            }
            for j in 0..16 {
                put(&mut w, 2, j + 16 * k, bm[k][j], false);
            }
        }
        let (base, acc) = if vgpr_cd { (8, false) } else { (0, true) };
        for i in 0..16 {
            for j in 0..16 {
                put(&mut w, base + 2 * (i / 4), j + 16 * (i % 4), cm[i][j], acc);
            }
        }
        let cache = CodeCache::new(Target::Gfx90a, BASE, &code);
        let mut env = HostEnv::new(0);
        assert_eq!(w.run(&cache, &mut env, 10), Stop::EndOfProgram, "{text}");
        for i in 0..16 {
            for j in 0..16 {
                let mut want = cm[i][j];
                for k in 0..4 {
                    want = am[i][k].mul_add(bm[k][j], want);
                }
                let (reg, lane) = (base + 2 * (i / 4), j + 16 * (i % 4));
                let file = if acc { &w.agpr } else { &w.vgpr };
                let got = u64::from(file[reg][lane]) | (u64::from(file[reg + 1][lane]) << 32);
                assert_eq!(f64::from_bits(got), want, "{text}: D[{i}][{j}]");
            }
        }
    }
}

/// `v_mfma_f64_4x4x4f64`: four 4×4 blocks; A's `(i, k)` of block `b` in lane `i + 4b + 16k`,
/// B's `(k, j)` in lane `j + 4b + 16k`, C's and D's `(i, j)` in lane `j + 4b + 16i` of one
/// register pair (AMD's lab notes "AMD matrix cores", `mfma_fp64_4x4x4fp64.cpp`); D = C +
/// Σk A·B per block with one fused multiply-add per k, in k order.
#[test]
fn gfx90a_f64_4x4x4_mfma() {
    for (cd, base, acc) in [("v[8:9]", 8, false), ("a[2:3]", 2, true)] {
        let text = format!("v_mfma_f64_4x4x4f64 {cd}, v[0:1], v[2:3], {cd}");
        let code = asm(&format!("{text}\ns_endpgm\n"), "gfx90a");
        let mut w = Wave::new(Target::Gfx90a, 32, 16);
        w.pc = BASE;
        let mut rng = Rng(0x4f64);
        let mut val = || (rng.next() as i32 as f64) / 1e6 * 1.000_000_1;
        // [block][row][column]
        let mut mat = || -> Vec<Vec<Vec<f64>>> {
            (0..4)
                .map(|_| (0..4).map(|_| (0..4).map(|_| val()).collect()).collect())
                .collect()
        };
        let (am, bm, cm) = (mat(), mat(), mat());
        let put = |w: &mut Wave, reg: usize, lane: usize, x: f64, acc: bool| {
            let b = x.to_bits();
            let file = if acc { &mut w.agpr } else { &mut w.vgpr };
            file[reg][lane] = b as u32;
            file[reg + 1][lane] = (b >> 32) as u32;
        };
        for b in 0..4 {
            for x in 0..4 {
                for y in 0..4 {
                    put(&mut w, 0, x + 4 * b + 16 * y, am[b][x][y], false); // A(i = x, k = y)
                    put(&mut w, 2, y + 4 * b + 16 * x, bm[b][x][y], false); // B(k = x, j = y)
                    put(&mut w, base, y + 4 * b + 16 * x, cm[b][x][y], acc); // C(i = x, j = y)
                }
            }
        }
        let cache = CodeCache::new(Target::Gfx90a, BASE, &code);
        let mut env = HostEnv::new(0);
        assert_eq!(w.run(&cache, &mut env, 10), Stop::EndOfProgram, "{text}");
        let file = if acc { &w.agpr } else { &w.vgpr };
        for b in 0..4 {
            for i in 0..4 {
                for j in 0..4 {
                    let mut want = cm[b][i][j];
                    for k in 0..4 {
                        want = am[b][i][k].mul_add(bm[b][k][j], want);
                    }
                    let lane = j + 4 * b + 16 * i;
                    let got = u64::from(file[base][lane]) | (u64::from(file[base + 1][lane]) << 32);
                    assert_eq!(f64::from_bits(got), want, "{text}: D{b}[{i}][{j}]");
                }
            }
        }
        // nothing past the pair is written
        let other = if acc { &w.agpr } else { &w.vgpr };
        assert!(other[base + 2].iter().all(|&v| v == 0), "{text}");
    }
}
