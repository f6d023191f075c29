//! Interpreter speed: wave-instructions per second on a VALU/SALU mix and on a memory mix,
//! and the rate at which code is pre-decoded into a [`CodeCache`].
//!
//! The rows whose names say `hostenv` run against `isa`'s test environment ([`HostEnv`]),
//! whose memory is a map of byte vectors looked up per access: they time the interpreter
//! plus that test double, not the model's memory path. The model's own memory path (its GPU
//! page tables, with vadd and SGEMM kernels against native loops) is timed by
//! `cargo bench -p kfd-model --bench kernels`.
//!
//! Absolute rates differ from one host to the next; after the criterion rows, the ALU mix
//! and the LDS sgemm loop are also timed against a native Rust loop doing the same work on
//! 64 lanes, alternately in the same run, and printed as that ratio (`-- --quick` runs fewer
//! rounds).
//!
//! The programs are fixed byte strings assembled once with `llvm-mc-15 -mcpu=gfx900`. Each
//! program runs through the block compiler (`CodeCache::new`'s default unless
//! `KFD_MODEL_JIT=0`) and, in the `_interpreted` row beside it, through the interpreter alone.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, Criterion, Throughput};
use isa::exec::{CodeCache, HostEnv, Mode, Stop, Wave};
use isa::Target;
use std::hint::black_box;
use std::time::Instant;

/// Loop of 12 instructions: 9 VALU (int, f32 mul/fma, carry chain, compare, cndmask), 3 SALU
/// (counter, compare, branch back); then s_endpgm.
const ALU_LOOP: &[u8] = &[
    0x01, 0x01, 0x02, 0x68, // v_add_u32_e32 v1, v1, v0
    0x02, 0x07, 0x04, 0x0a, // v_mul_f32_e32 v2, v2, v3
    0x04, 0x00, 0xcb, 0xd1, 0x02, 0x07, 0x12, 0x04, // v_fma_f32 v4, v2, v3, v4
    0x05, 0x03, 0x0a, 0x2a, // v_xor_b32_e32 v5, v5, v1
    0x83, 0x0a, 0x0c, 0x24, // v_lshlrev_b32_e32 v6, 3, v5
    0x06, 0x03, 0x0e, 0x32, // v_add_co_u32_e32 v7, vcc, v6, v1
    0x80, 0x10, 0x10, 0x38, // v_addc_co_u32_e32 v8, vcc, 0, v8, vcc
    0x07, 0x11, 0x98, 0x7d, // v_cmp_gt_u32_e32 vcc, v7, v8
    0x01, 0x05, 0x12, 0x00, // v_cndmask_b32_e32 v9, v1, v2, vcc
    0x00, 0x81, 0x00, 0x80, // s_add_u32 s0, s0, 1
    0x00, 0x01, 0x07, 0xbf, // s_cmp_lg_u32 s0, s1
    0xf3, 0xff, 0x85, 0xbf, // s_cbranch_scc1 -13 (back to the start)
    0x00, 0x00, 0x81, 0xbf, // s_endpgm
];
const ALU_LOOP_LEN: u64 = 12;

/// Loop of 9 instructions: global load/store, LDS write/read, a scalar load, one VALU, and
/// the 3-instruction SALU loop control; then s_endpgm.
const MEM_LOOP: &[u8] = &[
    0x00, 0x80, 0x50, 0xdc, 0x02, 0x00, 0x7f, 0x01, // global_load_dword v1, v[2:3], off
    0x01, 0x01, 0x02, 0x68, // v_add_u32_e32 v1, v1, v0
    0x00, 0x80, 0x70, 0xdc, 0x02, 0x01, 0x7f, 0x00, // global_store_dword v[2:3], v1, off
    0x00, 0x00, 0x1a, 0xd8, 0x04, 0x01, 0x00, 0x00, // ds_write_b32 v4, v1
    0x00, 0x00, 0x6c, 0xd8, 0x04, 0x00, 0x00, 0x05, // ds_read_b32 v5, v4
    0x82, 0x00, 0x02, 0xc0, 0x00, 0x00, 0x00, 0x00, // s_load_dword s2, s[4:5], 0x0
    0x00, 0x81, 0x00, 0x80, // s_add_u32 s0, s0, 1
    0x00, 0x01, 0x07, 0xbf, // s_cmp_lg_u32 s0, s1
    0xf2, 0xff, 0x85, 0xbf, // s_cbranch_scc1 -14
    0x00, 0x00, 0x81, 0xbf, // s_endpgm
];
const MEM_LOOP_LEN: u64 = 9;

/// The per-wave body of a grid-stride HIP vector add `c[i] = a[i] + b[i]` (10 instructions:
/// index to byte offset, two global loads with SGPR bases, f32 add, global store, index
/// step, loop control); then s_endpgm.
const VADD_LOOP: &[u8] = &[
    0x82, 0x00, 0x02, 0x24, // v_lshlrev_b32_e32 v1, 2, v0
    0x00, 0x80, 0x50, 0xdc, 0x01, 0x00, 0x00, 0x02, // global_load_dword v2, v1, s[0:1]
    0x00, 0x80, 0x50, 0xdc, 0x01, 0x00, 0x02, 0x03, // global_load_dword v3, v1, s[2:3]
    0x70, 0x0f, 0x8c, 0xbf, // s_waitcnt vmcnt(0)
    0x02, 0x07, 0x04, 0x02, // v_add_f32_e32 v2, v2, v3
    0x00, 0x80, 0x70, 0xdc, 0x01, 0x02, 0x04, 0x00, // global_store_dword v1, v2, s[4:5]
    0xc0, 0x00, 0x00, 0x68, // v_add_u32_e32 v0, 64, v0
    0x06, 0x81, 0x06, 0x80, // s_add_u32 s6, s6, 1
    0x06, 0x07, 0x07, 0xbf, // s_cmp_lg_u32 s6, s7
    0xf3, 0xff, 0x85, 0xbf, // s_cbranch_scc1 -13
    0x00, 0x00, 0x81, 0xbf, // s_endpgm
];
const VADD_LOOP_LEN: u64 = 10;

/// The inner k-loop of an LDS-tiled sgemm (13 instructions: three LDS reads of the A and B
/// tiles, two f32 fmas into accumulators, LDS pointer steps wrapped to the tile, loop
/// control); then s_endpgm.
const SGEMM_LOOP: &[u8] = &[
    0x00, 0x00, 0x6c, 0xd8, 0x01, 0x00, 0x00, 0x03, // ds_read_b32 v3, v1
    0x00, 0x00, 0x6c, 0xd8, 0x02, 0x00, 0x00, 0x04, // ds_read_b32 v4, v2
    0x00, 0x01, 0x6c, 0xd8, 0x02, 0x00, 0x00, 0x05, // ds_read_b32 v5, v2 offset:256
    0x7f, 0xc0, 0x8c, 0xbf, // s_waitcnt lgkmcnt(0)
    0x0a, 0x00, 0xcb, 0xd1, 0x03, 0x09, 0x2a, 0x04, // v_fma_f32 v10, v3, v4, v10
    0x0b, 0x00, 0xcb, 0xd1, 0x03, 0x0b, 0x2e, 0x04, // v_fma_f32 v11, v3, v5, v11
    0x84, 0x02, 0x02, 0x68, // v_add_u32_e32 v1, 4, v1
    0xff, 0x04, 0x04, 0x68, 0x00, 0x02, 0x00, 0x00, // v_add_u32_e32 v2, 0x200, v2
    0xff, 0x02, 0x02, 0x26, 0xfc, 0x3f, 0x00, 0x00, // v_and_b32_e32 v1, 0x3ffc, v1
    0xff, 0x04, 0x04, 0x26, 0xfc, 0x3f, 0x00, 0x00, // v_and_b32_e32 v2, 0x3ffc, v2
    0x06, 0x81, 0x06, 0x80, // s_add_u32 s6, s6, 1
    0x06, 0x07, 0x07, 0xbf, // s_cmp_lg_u32 s6, s7
    0xeb, 0xff, 0x85, 0xbf, // s_cbranch_scc1 -21
    0x00, 0x00, 0x81, 0xbf, // s_endpgm
];
const SGEMM_LOOP_LEN: u64 = 13;

/// Where the vector add's arrays live (a, b, c), each `ITERATIONS * 256` bytes.
const VADD_A: u64 = 0x100_0000;
const VADD_B: u64 = 0x200_0000;
const VADD_C: u64 = 0x300_0000;

const BASE: u64 = 0x1000;
const ITERATIONS: u32 = 1000;

fn wave(mem: bool) -> Wave {
    let mut w = Wave::new(Target::Gfx900, 16, 0);
    w.pc = BASE;
    w.mode = Mode((3 << 6) | (1 << 8) | (1 << 9));
    w.sgpr[1] = ITERATIONS;
    for l in 0..64 {
        w.vgpr[0][l] = l as u32;
        if !mem {
            w.vgpr[3][l] = 0x3f80_0000;
        } else {
            w.vgpr[2][l] = 0x10_0000 + 4 * l as u32;
            w.vgpr[4][l] = 4 * l as u32;
        }
    }
    w.set_sgpr64(4, 0x20_0000);
    w
}

/// A wave for the vector add and sgemm loops: f32 denormals on (HIP's default MODE),
/// lane ids in v0, LDS pointers in v1/v2, array bases in s[0:5], the trip count in s7.
fn kernel_wave() -> Wave {
    let mut w = Wave::new(Target::Gfx900, 16, 0);
    w.pc = BASE;
    w.mode = Mode((3 << 4) | (3 << 6) | (1 << 8) | (1 << 9));
    w.sgpr[7] = ITERATIONS;
    w.set_sgpr64(0, VADD_A);
    w.set_sgpr64(2, VADD_B);
    w.set_sgpr64(4, VADD_C);
    for l in 0..64 {
        w.vgpr[0][l] = l as u32;
        w.vgpr[1][l] = 4 * l as u32;
        w.vgpr[2][l] = 4 * l as u32;
    }
    w
}

fn run_kernel(cache: &CodeCache, env: &mut HostEnv) {
    let mut w = kernel_wave();
    let stop = w.run(cache, env, u64::MAX);
    assert_eq!(
        stop,
        Stop::EndOfProgram,
        "bench program must run to its end"
    );
}

fn run(cache: &CodeCache, env: &mut HostEnv, mem: bool) {
    let mut w = wave(mem);
    let stop = w.run(cache, env, u64::MAX);
    assert_eq!(
        stop,
        Stop::EndOfProgram,
        "bench program must run to its end"
    );
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("exec");
    let alu = CodeCache::new(Target::Gfx900, BASE, ALU_LOOP);
    let mut env = HostEnv::new(1024);
    g.throughput(Throughput::Elements(
        ALU_LOOP_LEN * u64::from(ITERATIONS) + 1,
    ));
    g.bench_function("alu_mix_wave_instructions", |b| {
        b.iter(|| run(&alu, &mut env, false))
    });
    let alu_interpreted = alu.clone().without_compiler();
    g.bench_function("alu_mix_wave_instructions_interpreted", |b| {
        b.iter(|| run(&alu_interpreted, &mut env, false))
    });

    let mem = CodeCache::new(Target::Gfx900, BASE, MEM_LOOP);
    let mut env = HostEnv::new(1024);
    env.map(0x10_0000, 4096);
    env.map(0x20_0000, 4096);
    g.throughput(Throughput::Elements(
        MEM_LOOP_LEN * u64::from(ITERATIONS) + 1,
    ));
    g.bench_function("memory_mix_on_test_hostenv_wave_instructions", |b| {
        b.iter(|| run(&mem, &mut env, true))
    });
    let mem_interpreted = mem.clone().without_compiler();
    g.bench_function(
        "memory_mix_on_test_hostenv_wave_instructions_interpreted",
        |b| b.iter(|| run(&mem_interpreted, &mut env, true)),
    );

    let vadd = CodeCache::new(Target::Gfx900, BASE, VADD_LOOP);
    let mut env = HostEnv::new(0);
    let bytes = u64::from(ITERATIONS) * 256;
    for base in [VADD_A, VADD_B, VADD_C] {
        env.map(base, bytes);
    }
    // a[i] = i, b[i] = 2i as f32
    for i in 0..bytes / 4 {
        env.write(VADD_A + 4 * i, &(i as f32).to_le_bytes());
        env.write(VADD_B + 4 * i, &(2.0 * i as f32).to_le_bytes());
    }
    g.throughput(Throughput::Elements(
        VADD_LOOP_LEN * u64::from(ITERATIONS) + 1,
    ));
    g.bench_function("vadd_loop_on_test_hostenv_wave_instructions", |b| {
        b.iter(|| run_kernel(&vadd, &mut env))
    });
    let vadd_interpreted = vadd.clone().without_compiler();
    g.bench_function(
        "vadd_loop_on_test_hostenv_wave_instructions_interpreted",
        |b| b.iter(|| run_kernel(&vadd_interpreted, &mut env)),
    );
    // the kernel computed c = a + b
    for i in [0u64, 1, 12345, bytes / 4 - 1] {
        let c = env.read(VADD_C + 4 * i, 4).expect("c is mapped");
        let want = (i as f32) + 2.0 * i as f32;
        assert_eq!(c, want.to_le_bytes(), "c[{i}]");
    }

    let sgemm = CodeCache::new(Target::Gfx900, BASE, SGEMM_LOOP);
    let mut env = HostEnv::new(64 * 1024);
    for (i, b) in env.lds.iter_mut().enumerate() {
        // small floats (1.0 + i/2^20 patterns) so the sums stay finite
        *b = if i % 4 == 3 { 0x3f } else { (i % 251) as u8 };
    }
    g.throughput(Throughput::Elements(
        SGEMM_LOOP_LEN * u64::from(ITERATIONS) + 1,
    ));
    g.bench_function("sgemm_wave_instructions", |b| {
        b.iter(|| run_kernel(&sgemm, &mut env))
    });
    let sgemm_interpreted = sgemm.clone().without_compiler();
    g.bench_function("sgemm_wave_instructions_interpreted", |b| {
        b.iter(|| run_kernel(&sgemm_interpreted, &mut env))
    });

    // pre-decoding: every dword offset of 4 KiB of the ALU loop repeated
    let code: Vec<u8> = ALU_LOOP.iter().copied().cycle().take(4096).collect();
    g.throughput(Throughput::Elements(code.len() as u64 / 4));
    g.bench_function("predecode_dwords", |b| {
        b.iter(|| CodeCache::new(Target::Gfx900, BASE, &code))
    });
    g.finish();
}

/// The ALU loop's work as plain Rust over 64 lanes, one instruction at a time as the wave
/// runs them; `v` holds v0..v9 (v0: lane ids, v3: 1.0), as [`wave`] sets them up.
fn native_alu(v: &mut [[u32; 64]; 10], iterations: u32) {
    for _ in 0..iterations {
        let [v0, v1, v2, v3, v4, v5, v6, v7, v8, v9] = &mut *v;
        let mut vcc = [false; 64];
        for l in 0..64 {
            v1[l] = v1[l].wrapping_add(v0[l]);
            let mul = f32::from_bits(v2[l]) * f32::from_bits(v3[l]);
            v2[l] = mul.to_bits();
            v4[l] = mul
                .mul_add(f32::from_bits(v3[l]), f32::from_bits(v4[l]))
                .to_bits();
            v5[l] ^= v1[l];
            v6[l] = v5[l] << 3;
            let (sum, carry) = v6[l].overflowing_add(v1[l]);
            v7[l] = sum;
            v8[l] = v8[l].wrapping_add(u32::from(carry));
            vcc[l] = v7[l] > v8[l];
            v9[l] = if vcc[l] { v2[l] } else { v1[l] };
        }
        black_box(&vcc);
    }
}

/// The sgemm loop's work as plain Rust over 64 lanes: three LDS reads, two fmas, the
/// pointer steps; `v` holds v1, v2, v10, v11.
fn native_sgemm(lds: &[u8], v: &mut [[u32; 64]; 4], iterations: u32) {
    let read = |at: u32| {
        let at = at as usize;
        u32::from_le_bytes([lds[at], lds[at + 1], lds[at + 2], lds[at + 3]])
    };
    for _ in 0..iterations {
        let [v1, v2, v10, v11] = &mut *v;
        for l in 0..64 {
            let a = f32::from_bits(read(v1[l]));
            let b0 = f32::from_bits(read(v2[l]));
            let b1 = f32::from_bits(read(v2[l] + 256));
            v10[l] = a.mul_add(b0, f32::from_bits(v10[l])).to_bits();
            v11[l] = a.mul_add(b1, f32::from_bits(v11[l])).to_bits();
            v1[l] = (v1[l] + 4) & 0x3ffc;
            v2[l] = (v2[l] + 0x200) & 0x3ffc;
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `interp` and `native` alternately `rounds` times; prints the ratio of the medians.
fn print_ratio(name: &str, rounds: usize, interp: &mut dyn FnMut(), native: &mut dyn FnMut()) {
    let (mut i, mut n) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        interp();
        i.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        native();
        n.push(t.elapsed().as_secs_f64());
    }
    let (i, n) = (median(i), median(n));
    println!(
        "{name}: interpreter {:.1} µs, native loop {:.1} µs: {:.1}× native (median of {rounds})",
        i * 1e6,
        n * 1e6,
        i / n
    );
}

/// The ALU mix and the sgemm loop as ratios to native loops, each checked to compute what
/// the wave computes.
fn ratios_to_native(rounds: usize) {
    let alu = CodeCache::new(Target::Gfx900, BASE, ALU_LOOP);
    let mut env = HostEnv::new(1024);
    let mut w = wave(false);
    assert_eq!(w.run(&alu, &mut env, u64::MAX), Stop::EndOfProgram);
    let start = || {
        let w = wave(false);
        std::array::from_fn::<_, 10, _>(|r| std::array::from_fn(|l| w.vgpr[r][l]))
    };
    let mut v = start();
    native_alu(&mut v, ITERATIONS);
    for (r, lanes) in v.iter().enumerate() {
        assert!(
            (0..64).all(|l| w.vgpr[r][l] == lanes[l]),
            "native ALU loop computes v{r} as the wave does"
        );
    }
    print_ratio(
        "alu_mix (12 instructions x 1000)",
        rounds,
        &mut || run(&alu, &mut env, false),
        &mut || {
            let mut v = start();
            native_alu(&mut v, ITERATIONS);
            black_box(&v);
        },
    );

    let sgemm = CodeCache::new(Target::Gfx900, BASE, SGEMM_LOOP);
    let mut env = HostEnv::new(64 * 1024);
    for (i, b) in env.lds.iter_mut().enumerate() {
        *b = if i % 4 == 3 { 0x3f } else { (i % 251) as u8 };
    }
    let lds = env.lds.clone();
    let mut w = kernel_wave();
    assert_eq!(w.run(&sgemm, &mut env, u64::MAX), Stop::EndOfProgram);
    let start = || {
        let w = kernel_wave();
        [1, 2, 10, 11].map(|r| std::array::from_fn(|l| w.vgpr[r][l]))
    };
    let mut v = start();
    native_sgemm(&lds, &mut v, ITERATIONS);
    for (lanes, r) in v.iter().zip([1, 2, 10, 11]) {
        assert!(
            (0..64).all(|l| w.vgpr[r][l] == lanes[l]),
            "native sgemm loop computes v{r} as the wave does"
        );
    }
    print_ratio(
        "sgemm LDS loop (13 instructions x 1000)",
        rounds,
        &mut || run_kernel(&sgemm, &mut env),
        &mut || {
            let mut v = start();
            native_sgemm(&lds, &mut v, ITERATIONS);
            black_box(&v);
        },
    );
}

criterion_group!(exec, benches);

fn main() {
    exec();
    let quick = std::env::args().any(|a| a == "--quick");
    // `cargo bench` passes `--bench`; a filter that names other rows skips the ratios.
    let filtered = std::env::args()
        .skip(1)
        .any(|a| !a.starts_with("--") && !"ratios_to_native".contains(a.as_str()));
    if !filtered {
        ratios_to_native(if quick { 50 } else { 500 });
    }
    Criterion::default().configure_from_args().final_summary();
}
