//! Floating-point memory atomics of gfx908/gfx90a: `*_atomic_pk_add_f16` (buffer, global),
//! `*_atomic_add_f32`, and gfx90a's `*_atomic_{add,min,max}_f64` (buffer, global, flat). Each
//! program is assembled by llvm-mc-15 and run on one wave; memory and returned values are
//! compared with a host reference that applies the lanes in ascending order (f16 adds are
//! computed exactly and rounded to nearest even once, as IEEE 754 defines).

mod assemble;

use assemble::asm;

use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;
const MEM: u64 = 0x8000;

fn run(src: &str, target: Target, setup: impl FnOnce(&mut Wave, &mut HostEnv)) -> (Wave, HostEnv) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut w = Wave::new(target, 32, 16);
    w.pc = BASE;
    let mut env = HostEnv::new(1024);
    env.write(MEM, &[0; 4096]);
    w.set_sgpr64(0, MEM);
    w.sgpr[8..12].copy_from_slice(&[MEM as u32, 0, 4096, 0]);
    setup(&mut w, &mut env);
    let cache = CodeCache::new(target, BASE, &code);
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram, "{src}");
    (w, env)
}

/// f16 bits of `x`, which must be an f16 normal number or zero (checked).
fn f16_of(x: f64) -> u32 {
    if x == 0.0 {
        return 0;
    }
    let sign = if x < 0.0 { 0x8000 } else { 0 };
    let a = x.abs();
    let e = a.log2().floor() as i32;
    let m = (a / 2f64.powi(e) - 1.0) * 1024.0;
    assert!(
        m.fract() == 0.0 && (-14..=15).contains(&e),
        "{x} is not an f16 normal"
    );
    sign | (((e + 15) as u32) << 10) | m as u32
}

fn f16_val(h: u32) -> f64 {
    let e = ((h >> 10) & 0x1f) as i32;
    let m = f64::from(h & 0x3ff);
    let v = if e == 0 {
        m / 1024.0 * 2f64.powi(-14)
    } else {
        (1.0 + m / 1024.0) * 2f64.powi(e - 15)
    };
    if h & 0x8000 != 0 {
        -v
    } else {
        v
    }
}

fn dword(env: &HostEnv, addr: u64) -> u32 {
    let b = env.read(addr, 4).unwrap();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn qword(env: &HostEnv, addr: u64) -> u64 {
    let b = env.read(addr, 8).unwrap();
    u64::from_le_bytes(b.try_into().unwrap())
}

#[test]
fn pk_add_f16_global_and_buffer_per_lane() {
    for target in [Target::Gfx908, Target::Gfx90a] {
        // lane l adds (l/2, -l/4) to the pair at 4*l (initially (1.5, 8.0)) with global, and
        // (l, 0.5) at 512 + 4*l with buffer
        let (_, env) = run(
            "global_atomic_pk_add_f16 v0, v1, s[0:1]\nbuffer_atomic_pk_add_f16 v2, v3, s[8:11], 0 offen offset:512",
            target,
            |w, env| {
                for l in 0..64 {
                    w.vgpr[0][l] = 4 * l as u32;
                    w.vgpr[3][l] = 4 * l as u32;
                    w.vgpr[1][l] = f16_of(l as f64 / 2.0) | f16_of(-(l as f64) / 4.0) << 16;
                    w.vgpr[2][l] = f16_of(l as f64) | f16_of(0.5) << 16;
                    let init = f16_of(1.5) | f16_of(8.0) << 16;
                    env.write(MEM + 4 * l as u64, &init.to_le_bytes());
                }
            },
        );
        for l in 0..64u64 {
            let x = l as f64;
            let want = f16_of(1.5 + x / 2.0) | f16_of(8.0 - x / 4.0) << 16;
            assert_eq!(dword(&env, MEM + 4 * l), want, "{target} global lane {l}");
            let want = f16_of(x) | f16_of(0.5) << 16;
            assert_eq!(
                dword(&env, MEM + 512 + 4 * l),
                want,
                "{target} buffer lane {l}"
            );
        }
    }
}

#[test]
fn pk_add_f16_rounds_each_lane_to_nearest_even_and_returns_on_gfx90a() {
    // every lane adds (1.0, 0.25) to one pair starting at (2048.0, 0.0): 2048 + 1 is a tie
    // that rounds to even (2048) each time, so the low half stays 2048; the high half sums
    // to 16.0 exactly; glc returns each lane's pre-op value
    let (w, env) = run(
        "global_atomic_pk_add_f16 v2, v0, v1, s[0:1] glc",
        Target::Gfx90a,
        |w, env| {
            w.vgpr[0] = [0; 64];
            w.vgpr[1] = [f16_of(1.0) | f16_of(0.25) << 16; 64];
            env.write(MEM, &f16_of(2048.0).to_le_bytes());
        },
    );
    assert_eq!(dword(&env, MEM), f16_of(2048.0) | f16_of(16.0) << 16);
    for l in 0..64 {
        let r = w.vgpr[2][l];
        assert_eq!(f16_val(r & 0xffff), 2048.0, "lane {l} low");
        assert_eq!(
            f16_val(r >> 16),
            l as f64 * 0.25,
            "lane {l} sees the earlier lanes"
        );
    }
}

#[test]
fn add_f32_and_f64_min_max_on_gfx90a() {
    let src = "global_atomic_add_f32 v4, v0, v1, s[0:1] glc\n\
               global_atomic_add_f64 v[6:7], v0, v[2:3], s[0:1] offset:512 glc\n\
               global_atomic_min_f64 v0, v[2:3], s[0:1] offset:1024\n\
               buffer_atomic_max_f64 v[8:9], v0, s[8:11], 0 offen offset:1536\n\
               flat_atomic_add_f64 v[10:11], v[12:13], v[2:3] glc\n\
               flat_atomic_max_f64 v[14:15], v[2:3]";
    let x = |l: usize| (l as f64 - 20.0) * 0.75;
    let (w, env) = run(src, Target::Gfx90a, |w, env| {
        for l in 0..64 {
            w.vgpr[0][l] = 8 * l as u32;
            w.vgpr[1][l] = (x(l) as f32).to_bits();
            let b = x(l).to_bits();
            w.vgpr[2][l] = b as u32;
            w.vgpr[3][l] = (b >> 32) as u32;
            w.vgpr[8][l] = b as u32;
            w.vgpr[9][l] = (b >> 32) as u32;
            let flat = MEM + 2048;
            w.vgpr[12][l] = flat as u32;
            w.vgpr[13][l] = (flat >> 32) as u32;
            let max_at = MEM + 2080 + 8 * (l as u64 % 4);
            w.vgpr[14][l] = max_at as u32;
            w.vgpr[15][l] = (max_at >> 32) as u32;
        }
        for l in 0..64u64 {
            env.write(MEM + 1024 + 8 * l, &1.0f64.to_bits().to_le_bytes());
            env.write(MEM + 1536 + 8 * l, &0.5f64.to_bits().to_le_bytes());
        }
        for i in 0..4u64 {
            env.write(MEM + 2080 + 8 * i, &(-100.0f64).to_bits().to_le_bytes());
        }
    });
    let mut flat_sum = 0.0f64;
    for l in 0..64 {
        let a = 8 * l as u64;
        // add_f32 at 8*l: 0 + x, returns 0
        assert_eq!(f32::from_bits(dword(&env, MEM + a)), x(l) as f32);
        assert_eq!(w.vgpr[4][l], 0);
        // add_f64 at 512 + 8*l: 0 + x, returns 0
        assert_eq!(
            f64::from_bits(qword(&env, MEM + 512 + a)),
            x(l),
            "add_f64 lane {l}"
        );
        assert_eq!((w.vgpr[6][l], w.vgpr[7][l]), (0, 0));
        assert_eq!(
            f64::from_bits(qword(&env, MEM + 1024 + a)),
            x(l).min(1.0),
            "min_f64 lane {l}"
        );
        assert_eq!(
            f64::from_bits(qword(&env, MEM + 1536 + a)),
            x(l).max(0.5),
            "buffer max_f64 lane {l}"
        );
        // flat add_f64: every lane adds to one address, in lane order
        let ret = f64::from_bits(u64::from(w.vgpr[10][l]) | u64::from(w.vgpr[11][l]) << 32);
        assert_eq!(
            ret, flat_sum,
            "flat add_f64 returns the running sum, lane {l}"
        );
        flat_sum += x(l);
    }
    assert_eq!(f64::from_bits(qword(&env, MEM + 2048)), flat_sum);
    for i in 0..4usize {
        let want = (0..64).filter(|l| l % 4 == i).map(x).fold(-100.0, f64::max);
        assert_eq!(f64::from_bits(qword(&env, MEM + 2080 + 8 * i as u64)), want);
    }
}
