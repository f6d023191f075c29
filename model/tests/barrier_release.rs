//! Waves released by a barrier all run before any of them can overwrite, with data it loads
//! from memory after the barrier, what the barrier published in LDS — as on hardware, where
//! the waves of a workgroup issue in parallel and a global load takes hundreds of clocks.
//! RCCL's work loop relies on it: its waves read the LDS work header after a barrier while
//! wave 0 already copies the next header there (`tests/kernels/barrier_release.cl`). Without
//! it a grouped all-reduce left three quarters of its last collective unwritten.

mod common;
mod opencl;

use common::*;
use kfd_model::{ModelConfig, Preset};
use kfd_sys::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long the dispatch may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(120);

/// Runs `work_loop` in one workgroup of `waves` waves over a chain of `rounds` headers on
/// `cu_threads` host threads; what each wave read in each round (`[round][wave]`).
fn run_work_loop(
    preset: Preset,
    mcpu: &str,
    cu_threads: usize,
    waves: u16,
    rounds: u32,
) -> Vec<Vec<u32>> {
    let cfg = ModelConfig::new(preset)
        .with_engine_thread(false)
        .with_cu_threads(cu_threads);
    let model = model_with(cfg);
    let c = Client::new(&model);
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/barrier_release.cl");
    let (_code, exe) = opencl::load(&c, mcpu, &opencl::compile(&src, mcpu));
    let kernel = exe.kernel("work_loop").unwrap();
    let (_, queue) = c
        .create_queue_sized(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
        .unwrap();
    let works = c.gtt(4096);
    for r in 0..rounds {
        works.write_bytes(4 * u64::from(r), &header(r, rounds).to_le_bytes());
    }
    let seen = c.gtt(4096);
    seen.write_bytes(0, &[0xff; 4096]);
    let kernargs = c.gtt(4096);
    let mut args = Vec::new();
    for p in [works.va, seen.va] {
        args.extend(p.to_le_bytes());
    }
    kernargs.write_bytes(0, &args);
    let signals = c.gtt(4096);
    signals.write_u64(0, 1);
    signals.write_u64(8, 1);
    let items = 64 * waves;
    KernelDispatch::of(
        &kernel,
        [items, 1, 1],
        [u32::from(items), 1, 1],
        0,
        kernargs.va,
        signals.va,
    )
    .write(&queue, 0);
    c.submit(&queue, 1);
    let start = Instant::now();
    while signals.read_u64(8) != 0 {
        assert!(start.elapsed() < HANG, "{mcpu}: the work loop hung");
        model.step();
    }
    (0..rounds)
        .map(|r| {
            (0..u32::from(waves))
                .map(|w| seen.read_u32(4 * u64::from(r * u32::from(waves) + w)))
                .collect()
        })
        .collect()
}

/// Header `r` of a chain of `rounds`: the next one's index in bits 31:1, bit 0 on the last.
fn header(r: u32, rounds: u32) -> u32 {
    ((r + 1) << 1) | u32::from(r + 1 == rounds)
}

fn check(preset: Preset, mcpu: &str, cu_threads: usize) {
    const WAVES: u16 = 4;
    const ROUNDS: u32 = 6;
    let seen = run_work_loop(preset, mcpu, cu_threads, WAVES, ROUNDS);
    for (r, waves) in seen.iter().enumerate() {
        for (w, &h) in waves.iter().enumerate() {
            assert_eq!(
                h,
                header(r as u32, ROUNDS),
                "{mcpu}, {cu_threads} threads: wave {w} read header {h:#x} in round {r} (all: {seen:x?})"
            );
        }
    }
}

#[test]
fn every_wave_reads_the_header_a_barrier_published_before_wave_0_replaces_it() {
    for threads in [1, 2] {
        check(Preset::Gfx900, "gfx900", threads);
    }
    check(Preset::Gfx90a, "gfx90a", 1);
}
