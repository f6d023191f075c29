//! Kernels through the model against the same work as a native loop, timed in the same run
//! (issue #38): each row prints the model's time, the native loop's, their ratio and the
//! target that ratio has.
//!
//! * vadd, c = a + b over 2^24 floats (`benches/kernels/bench.cl` `vadd`, workgroups of
//!   256), on 1 compute-unit thread and on N (`KFD_MODEL_CU_THREADS` or the host's cores),
//!   against a plain loop on one core. Target: model on 1 thread ≤ 2× the native loop.
//! * SGEMM 512² (`sgemm_tiled`, 16×16 LDS tiles) on 1 and N threads against a naive triple
//!   loop on one core. Target: model on 1 thread ≤ 1× the naive loop.
//! * speed-up from 1 to N threads of both. Target: ≥ 1.9× on 2 threads; ≥ 14× on 16 (the
//!   16-thread figure needs a 16-core machine with its cores idle).
//!
//! The model is stepped by the bench (`Model::run_until_idle`, no engine thread), so the rows
//! time the dispatch's waves and their memory path, not a doorbell. Each round runs the
//! native loop and then every model configuration once; the medians of the rounds are
//! compared. `-- --quick` (or `KFD_BENCH_ROUNDS=N`) runs fewer rounds. Results are checked
//! against the native ones before anything is timed. Not a criterion bench: the ratios are
//! what count, and criterion has no place for them.
#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/opencl/mod.rs"]
mod opencl;
mod rig;

use codeobj::LoadedKernel;
use common::*;
use rig::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

const VADD_N: usize = 1 << 24;
const SGEMM_N: usize = 512;

/// Which way a target points, and its value.
#[derive(Clone, Copy)]
enum Target {
    AtMost(f64),
    AtLeast(f64),
}

impl Target {
    fn met(self, v: f64) -> bool {
        match self {
            Target::AtMost(t) => v <= t,
            Target::AtLeast(t) => v >= t,
        }
    }

    fn text(self) -> String {
        match self {
            Target::AtMost(t) => format!("≤ {t}×"),
            Target::AtLeast(t) => format!("≥ {t}×"),
        }
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(f: &mut dyn FnMut()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// One line of the table.
fn print_row(name: &str, ratio: f64, target: Target, how: &str) {
    let verdict = if target.met(ratio) { "pass" } else { "miss" };
    println!(
        "{name:<44} {ratio:>7.2}×  {:>7}  {verdict}  {how}",
        target.text()
    );
}

/// Times `native` and each of `model` once per round, alternating; the medians.
fn alternate(
    rounds: usize,
    native: &mut dyn FnMut(),
    models: &mut [&mut dyn FnMut()],
) -> (Duration, Vec<Duration>) {
    let mut n = Vec::with_capacity(rounds);
    let mut m = vec![Vec::with_capacity(rounds); models.len()];
    for _ in 0..rounds {
        n.push(time(native));
        for (run, times) in models.iter_mut().zip(&mut m) {
            times.push(time(&mut **run));
        }
    }
    (median(&mut n), m.iter_mut().map(|t| median(t)).collect())
}

fn vadd(rounds: usize, threads: usize) {
    let a: Vec<f32> = (0..VADD_N).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..VADD_N).map(|i| 7.0 - i as f32).collect();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let mut one = Vadd::new(1, &a, &b);
    let mut many = Vadd::new(threads, &a, &b);
    for v in [&mut one, &mut many] {
        v.run();
        assert!(
            v.result() == want,
            "the model's vadd equals the native loop"
        );
    }
    let mut out = vec![0f32; VADD_N];
    let mut native = || {
        for ((o, x), y) in out.iter_mut().zip(black_box(&a)).zip(black_box(&b)) {
            *o = x + y;
        }
        black_box(&out);
    };
    let (mut run_one, mut run_many) = (|| one.run(), || many.run());
    let models: &mut [&mut dyn FnMut()] = &mut [&mut run_one, &mut run_many];
    let (n, m) = alternate(rounds, &mut native, models);
    let per_core = m[0].as_secs_f64() / n.as_secs_f64();
    print_row(
        "vadd 2^24, model 1 thread / native 1 core",
        per_core,
        Target::AtMost(2.0),
        &format!("{} vs {}", ms(m[0]), ms(n)),
    );
    print_row(
        &format!("vadd 2^24, model {threads} threads / native 1 core"),
        m[1].as_secs_f64() / n.as_secs_f64(),
        Target::AtMost(2.0 / threads as f64),
        &format!("{} vs {}; ≤ 2× per core", ms(m[1]), ms(n)),
    );
    speed_up("vadd 2^24", threads, m[0], m[1]);
}

fn speed_up(what: &str, threads: usize, one: Duration, many: Duration) {
    if threads < 2 {
        println!("{what}, speed-up: one thread only (KFD_MODEL_CU_THREADS or the host's cores)");
        return;
    }
    // ≥ 1.9× on 2 threads and ≥ 14× on 16: 95% and 87.5% of linear; in between, linear.
    let target = if threads >= 16 {
        14.0 * threads as f64 / 16.0
    } else {
        0.95 * threads as f64
    };
    print_row(
        &format!("{what}, speed-up 1 → {threads} threads"),
        one.as_secs_f64() / many.as_secs_f64(),
        Target::AtLeast((target * 100.0).round() / 100.0),
        &format!("{} → {}", ms(one), ms(many)),
    );
}

fn sgemm_native(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    for i in 0..n {
        for j in 0..n {
            let mut acc = 0.0f32;
            for k in 0..n {
                acc += a[i * n + k] * b[k * n + j];
            }
            c[i * n + j] = acc;
        }
    }
}

/// `sgemm_tiled` set up on a stepped model with `threads` compute-unit threads.
struct Sgemm {
    rig: Rig,
    kernel: LoadedKernel,
    kernargs: Vec<u8>,
    /// A, B and C, kept mapped while the kernel may run.
    bufs: [Buf; 3],
}

impl Sgemm {
    fn new(threads: usize, a: &[f32], b: &[f32]) -> Sgemm {
        let rig = Rig::new(stepped(threads));
        let bytes = (4 * SGEMM_N * SGEMM_N) as u64;
        let bufs = [rig.c.gtt(bytes), rig.c.gtt(bytes), rig.c.gtt(bytes)];
        bufs[0].write_bytes(0, &f32_bytes(a));
        bufs[1].write_bytes(0, &f32_bytes(b));
        let kernel = rig.kernel("sgemm_tiled");
        let kernargs = args(&[bufs[0].va, bufs[1].va, bufs[2].va], SGEMM_N as u32);
        Sgemm {
            rig,
            kernel,
            kernargs,
            bufs,
        }
    }

    fn run(&mut self) {
        let n = SGEMM_N as u32;
        self.rig.run(&self.kernel, &self.kernargs, [16, 16], [n, n]);
    }

    fn check(&self, want: &[f32]) {
        let got = read_f32s(&self.bufs[2], want.len());
        for (i, (m, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (m - w).abs() <= 1e-3 * w.abs().max(1.0),
                "C[{i}]: model {m}, native {w}"
            );
        }
    }
}

fn sgemm(rounds: usize, threads: usize) {
    let n = SGEMM_N;
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7) % 13) as f32 * 0.5 - 3.0)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i * 5) % 11) as f32 * 0.25 - 1.0)
        .collect();
    let mut want = vec![0f32; n * n];
    sgemm_native(n, &a, &b, &mut want);
    let mut one = Sgemm::new(1, &a, &b);
    let mut many = Sgemm::new(threads, &a, &b);
    for s in [&mut one, &mut many] {
        s.run();
        s.check(&want);
    }
    let mut c = vec![0f32; n * n];
    let mut native = || sgemm_native(n, black_box(&a), black_box(&b), black_box(&mut c));
    let (mut run_one, mut run_many) = (|| one.run(), || many.run());
    let models: &mut [&mut dyn FnMut()] = &mut [&mut run_one, &mut run_many];
    let (t, m) = alternate(rounds, &mut native, models);
    print_row(
        "SGEMM 512, model tiled 1 thread / native naive",
        m[0].as_secs_f64() / t.as_secs_f64(),
        Target::AtMost(1.0),
        &format!("{} vs {}", ms(m[0]), ms(t)),
    );
    print_row(
        &format!("SGEMM 512, model tiled {threads} threads / native"),
        m[1].as_secs_f64() / t.as_secs_f64(),
        Target::AtMost(1.0 / threads as f64),
        &format!("{} vs {}; ≤ 1× per core", ms(m[1]), ms(t)),
    );
    speed_up("SGEMM 512", threads, m[0], m[1]);
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = std::env::var("KFD_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
        .filter(|&r| r > 0)
        .unwrap_or(if quick { 3 } else { 7 });
    let threads = kfd_model::config::default_cu_threads();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "kernels through the model vs a native loop: {} CPU(s), load average {}; median of {rounds} alternated rounds",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!(
        "{:<44} {:>8}  {:>7}  result",
        "measurement", "ratio", "target"
    );
    vadd(rounds, threads);
    sgemm(rounds, threads);
}
