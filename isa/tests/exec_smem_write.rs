//! Scalar memory writes of gfx9: `s_store_dword{,x2,x4}`, `s_buffer_store_dword{,x2,x4}` and
//! the scalar atomics `s_atomic_*[_x2]` / `s_buffer_atomic_*[_x2]`, on gfx900 and gfx90a.
//! Programs are assembled by llvm-mc-15 and run on one wave over a `HostEnv`; memory and
//! SGPRs afterwards are compared with values computed here on the host (the reference
//! operations below are written from the ISA's definitions, independently of the
//! interpreter's). A write outside the mapping faults and leaves memory as it was.

mod assemble;

use assemble::asm;

use isa::exec::{Access, CodeCache, HostEnv, MemFault, Stop, Wave, WaveFault};
use isa::Target;

const BASE: u64 = 0x1000;
/// The mapped data page (and the one after it).
const MEM: u64 = 0x8000;
const TARGETS: [Target; 2] = [Target::Gfx900, Target::Gfx90a];

fn code(src: &str, target: Target) -> CodeCache {
    let bytes = asm(&format!("{src}\ns_endpgm\n"), target.name());
    CodeCache::new(target, BASE, &bytes)
}

/// A wave with `s[0:1]` = MEM and `s[16:19]` a buffer resource whose base is MEM (stride and
/// the upper descriptor bits set, which the scalar buffer address must ignore).
fn wave(target: Target) -> (Wave, HostEnv) {
    let mut w = Wave::new(target, 8, 0);
    w.pc = BASE;
    w.set_sgpr64(0, MEM);
    w.sgpr[16..20].copy_from_slice(&[MEM as u32, (MEM >> 32) as u32 | (16 << 16), 4096, 0x27000]);
    let mut env = HostEnv::new(0);
    env.write(MEM, &[0; 8192]);
    (w, env)
}

fn dword(env: &HostEnv, addr: u64) -> u32 {
    let b = env.read(addr, 4).unwrap();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn qword(env: &HostEnv, addr: u64) -> u64 {
    u64::from(dword(env, addr)) | (u64::from(dword(env, addr + 4)) << 32)
}

/// xorshift64*: reproducible test values.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn stores_write_sdata_at_every_addressing_form() {
    let src = "\
s_store_dword s4, s[0:1], 0x0
s_store_dwordx2 s[6:7], s[0:1], 0x10
s_store_dwordx4 s[8:11], s[0:1], s20 offset:0x20
s_store_dword s12, s[0:1], m0
s_buffer_store_dword s13, s[16:19], 0x40
s_buffer_store_dwordx2 s[14:15], s[16:19], s21
s_buffer_store_dwordx4 s[4:7], s[16:19], 0x80 glc
s_store_dword s13, s[2:3], -0x4
s_waitcnt lgkmcnt(0)
s_load_dwordx4 s[24:27], s[0:1], 0x120
s_load_dword s28, s[2:3], -0x4
s_waitcnt lgkmcnt(0)";
    for target in TARGETS {
        let cache = code(src, target);
        let mut rng = Rng(0x5eed ^ target as u64);
        let (mut w, mut env) = wave(target);
        let vals: Vec<u32> = (0..12).map(|_| rng.next() as u32).collect();
        w.sgpr[4..16].copy_from_slice(&vals);
        w.sgpr[20] = 0x100; // SOE offset register, plus the immediate 0x20
        w.sgpr[21] = 0x60;
        w.sgpr[sreg_m0()] = 0x30;
        w.set_sgpr64(2, MEM + 0x204); // -4 reaches MEM + 0x200
        assert_eq!(
            w.run(&cache, &mut env, 100),
            Stop::EndOfProgram,
            "{target:?}"
        );
        assert_eq!(dword(&env, MEM), vals[0], "s_store_dword");
        assert_eq!(
            qword(&env, MEM + 0x10),
            u64::from(vals[2]) | (u64::from(vals[3]) << 32)
        );
        for i in 0..4 {
            assert_eq!(
                dword(&env, MEM + 0x120 + 4 * i),
                vals[4 + i as usize],
                "x4 via SOE"
            );
            assert_eq!(w.sgpr[24 + i as usize], vals[4 + i as usize], "loaded back");
        }
        assert_eq!(dword(&env, MEM + 0x30), vals[8], "m0 offset");
        assert_eq!(dword(&env, MEM + 0x40), vals[9], "buffer store");
        assert_eq!(dword(&env, MEM + 0x60), vals[10], "buffer x2, SGPR offset");
        assert_eq!(dword(&env, MEM + 0x64), vals[11], "buffer x2, SGPR offset");
        for i in 0..4 {
            assert_eq!(
                dword(&env, MEM + 0x80 + 4 * i),
                vals[i as usize],
                "buffer x4"
            );
        }
        assert_eq!(
            dword(&env, MEM + 0x200),
            vals[9],
            "negative immediate offset"
        );
        assert_eq!(w.sgpr[28], vals[9], "load with a negative immediate offset");
        // nothing else was written
        let written: [u64; 13] = [
            0, 0x10, 0x14, 0x120, 0x124, 0x128, 0x12c, 0x30, 0x40, 0x60, 0x64, 0x200, 0x80,
        ];
        for off in (0..0x300).step_by(4) {
            let in_x4 = (0x80..0x90).contains(&off);
            if !written.contains(&off) && !in_x4 {
                assert_eq!(dword(&env, MEM + off), 0, "stray write at +{off:#x}");
            }
        }
    }
}

fn sreg_m0() -> usize {
    isa::exec::wave::sreg::M0
}

const OPS: [&str; 13] = [
    "swap", "cmpswap", "add", "sub", "smin", "umin", "smax", "umax", "and", "or", "xor", "inc",
    "dec",
];

/// The ISA's definition of each scalar atomic, on `bits`-wide values.
fn reference(op: &str, old: u64, src: u64, cmp: u64, bits: u32) -> u64 {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let (old, src, cmp) = (old & mask, src & mask, cmp & mask);
    let signed = |v: u64| -> i64 {
        if bits == 64 {
            v as i64
        } else {
            i64::from(v as u32 as i32)
        }
    };
    let r = match op {
        "swap" => src,
        "cmpswap" => {
            if old == cmp {
                src
            } else {
                old
            }
        }
        "add" => old.wrapping_add(src),
        "sub" => old.wrapping_sub(src),
        "smin" => {
            if signed(old) < signed(src) {
                old
            } else {
                src
            }
        }
        "umin" => old.min(src),
        "smax" => {
            if signed(old) > signed(src) {
                old
            } else {
                src
            }
        }
        "umax" => old.max(src),
        "and" => old & src,
        "or" => old | src,
        "xor" => old ^ src,
        "inc" => {
            if old >= src {
                0
            } else {
                old + 1
            }
        }
        "dec" => {
            if old == 0 || old > src {
                src
            } else {
                old - 1
            }
        }
        _ => unreachable!("{op}"),
    };
    r & mask
}

/// (old, src, cmp) cases: edge values, an equal compare for cmpswap, inc/dec at their limits,
/// then pseudo-random ones.
fn cases(rng: &mut Rng, bits: u32) -> Vec<(u64, u64, u64)> {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let top = 1u64 << (bits - 1);
    let mut v = vec![
        (0, 0, 0),
        (mask, 1, mask),
        (top, top - 1, 5),
        (top - 1, top, top - 1),
        (7, 7, 7),
        (8, 7, 3),
        (0, 9, 0),
    ];
    for _ in 0..12 {
        let (a, b) = (rng.next() & mask, rng.next() & mask);
        let c = if rng.next() & 1 == 0 {
            a
        } else {
            rng.next() & mask
        };
        v.push((a, b, c));
    }
    v
}

/// SDATA register text of an atomic: 1, 2 or 4 registers from s4.
fn sdata(n: usize, first: usize) -> String {
    match n {
        1 => format!("s{first}"),
        _ => format!("s[{first}:{}]", first + n - 1),
    }
}

#[test]
fn atomics_apply_each_op_and_return_the_pre_op_value_with_glc() {
    for target in TARGETS {
        let mut rng = Rng(0xa70_31c ^ target as u64);
        for op in OPS {
            for wide in [false, true] {
                let bits = if wide { 64 } else { 32 };
                let words = if wide { 2 } else { 1 };
                let n = if op == "cmpswap" { 2 * words } else { words };
                let sfx = if wide { "_x2" } else { "" };
                // glc at +0x10 (data s4..), no glc at +0x20 (data s8..), buffer glc at +0x30
                // (data s12..); each SDATA block is 4 registers apart
                let src = format!(
                    "s_atomic_{op}{sfx} {}, s[0:1], 0x10 glc\n\
                     s_atomic_{op}{sfx} {}, s[0:1], 0x20\n\
                     s_buffer_atomic_{op}{sfx} {}, s[16:19], 0x30 glc\n\
                     s_waitcnt lgkmcnt(0)",
                    sdata(n, 4),
                    sdata(n, 8),
                    sdata(n, 12),
                );
                let cache = code(&src, target);
                for (old, s, c) in cases(&mut rng, bits) {
                    let (mut w, mut env) = wave(target);
                    for off in [0x10, 0x20, 0x30] {
                        env.write(MEM + off, &old.to_le_bytes()[..words * 4]);
                    }
                    for first in [4usize, 8, 12] {
                        w.sgpr[first] = s as u32;
                        if wide {
                            w.sgpr[first + 1] = (s >> 32) as u32;
                        }
                        if op == "cmpswap" {
                            w.sgpr[first + words] = c as u32;
                            if wide {
                                w.sgpr[first + words + 1] = (c >> 32) as u32;
                            }
                        }
                    }
                    let before = w.sgpr;
                    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram, "{src}");
                    let want = reference(op, old, s, c, bits);
                    let read = |env: &HostEnv, a| {
                        if wide {
                            qword(env, a)
                        } else {
                            u64::from(dword(env, a))
                        }
                    };
                    let what = format!("{target:?} {op}{sfx} old {old:#x} src {s:#x} cmp {c:#x}");
                    for off in [0x10, 0x20, 0x30] {
                        assert_eq!(read(&env, MEM + off), want, "memory at +{off:#x}: {what}");
                    }
                    if !wide {
                        // the dword after a 32-bit atomic is untouched
                        for off in [0x14, 0x24, 0x34] {
                            assert_eq!(dword(&env, MEM + off), 0, "{what}");
                        }
                    }
                    for first in [4usize, 12] {
                        // GLC: the pre-op value in SDATA[0] (SDATA[0:1] for _x2)
                        assert_eq!(w.sgpr[first], old as u32, "returned: {what}");
                        if wide {
                            assert_eq!(w.sgpr[first + 1], (old >> 32) as u32, "returned: {what}");
                        }
                        // the compare half of cmpswap's SDATA is not written
                        assert_eq!(
                            &w.sgpr[first + words..first + n],
                            &before[first + words..first + n],
                            "{what}"
                        );
                    }
                    // without GLC nothing is returned
                    assert_eq!(&w.sgpr[8..8 + n], &before[8..8 + n], "no glc: {what}");
                }
            }
        }
    }
}

#[test]
fn cmpswap_layout_data_first_then_compare() {
    // s_atomic_cmpswap s[4:5]: s4 is the value stored on a match, s5 the compare value
    for target in TARGETS {
        let cache = code(
            "s_atomic_cmpswap s[4:5], s[0:1], 0x0 glc\ns_atomic_cmpswap_x2 s[8:11], s[0:1], 0x8 glc\ns_waitcnt lgkmcnt(0)",
            target,
        );
        let (mut w, mut env) = wave(target);
        env.write(MEM, &100u32.to_le_bytes());
        env.write(MEM + 8, &(1u64 << 40).to_le_bytes());
        w.sgpr[4] = 55;
        w.sgpr[5] = 100;
        w.set_sgpr64(8, 0x1234_5678_9abc);
        w.set_sgpr64(10, 1 << 40);
        assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
        assert_eq!(dword(&env, MEM), 55);
        assert_eq!(w.sgpr[4], 100);
        assert_eq!(qword(&env, MEM + 8), 0x1234_5678_9abc);
        assert_eq!(w.sgpr64(8), 1 << 40);
    }
}

#[test]
fn writes_outside_the_mapping_fault_and_write_nothing() {
    // the mapping is [MEM, MEM + 0x2000)
    let cases: [(&str, u64, Access); 5] = [
        ("s_store_dword s4, s[2:3], 0x0", MEM + 0x2000, Access::Write),
        // an x4 store whose last dword crosses the end: the first three are not written either
        (
            "s_store_dwordx4 s[4:7], s[2:3], 0x0",
            MEM + 0x2000,
            Access::Write,
        ),
        (
            "s_buffer_store_dwordx2 s[4:5], s[16:19], 0x2000",
            MEM + 0x2000,
            Access::Write,
        ),
        (
            "s_atomic_add s4, s[2:3], 0x0 glc",
            MEM + 0x2000,
            Access::Atomic,
        ),
        (
            "s_atomic_swap_x2 s[4:5], s[2:3], -0x8 glc",
            MEM - 8,
            Access::Atomic,
        ),
    ];
    for target in TARGETS {
        for (src, fault_at, access) in cases {
            let cache = code(src, target);
            let (mut w, mut env) = wave(target);
            let base = if src.contains("x4") {
                MEM + 0x2000 - 12
            } else if src.contains("-0x8") {
                MEM
            } else {
                MEM + 0x2000
            };
            w.set_sgpr64(2, base);
            w.sgpr[4..8].copy_from_slice(&[1, 2, 3, 4]);
            let before = w.sgpr;
            let stop = w.run(&cache, &mut env, 100);
            assert_eq!(
                stop,
                Stop::Fault(WaveFault::Memory(MemFault {
                    address: fault_at,
                    access
                })),
                "{target:?} {src}"
            );
            assert_eq!(w.sgpr, before, "{src}: no SGPR written");
            for off in (0..0x2000).step_by(4) {
                assert_eq!(dword(&env, MEM + off), 0, "{src}: written at +{off:#x}");
            }
        }
    }
}

#[test]
fn scratch_scalar_stores_stay_illegal() {
    // s_scratch_* exist in the gfx9 encoding but the model gives them no semantics yet
    for target in TARGETS {
        let cache = code("s_scratch_store_dword s4, s[0:1], 0x0", target);
        let (mut w, mut env) = wave(target);
        match w.run(&cache, &mut env, 100) {
            Stop::Fault(WaveFault::IllegalInstruction { disassembly, .. }) => {
                assert!(
                    disassembly.starts_with("s_scratch_store_dword"),
                    "{disassembly}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
