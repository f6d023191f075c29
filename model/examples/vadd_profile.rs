//! The dispatch bench's vadd (c = a + b over 2^24 floats, workgroups of 256) run a few
//! times on the stepped model, for profiling (`valgrind --tool=callgrind`) and quick
//! timings: `cargo run --release -p kfd-model --example vadd_profile -- [runs] [threads]`
//! prints each run's wall time and the native loop's.
#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/opencl/mod.rs"]
mod opencl;
#[path = "../benches/rig/mod.rs"]
mod rig;

use rig::*;
use std::time::Instant;

/// CPU time of this process in milliseconds (every thread's, not counting time waiting
/// for a core: steadier than wall time on a busy host).
fn process_cpu_ms() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let runs: usize = argv.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let threads: usize = argv.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    const N: usize = 1 << 24;
    let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..N).map(|i| 7.0 - i as f32).collect();
    let mut out = vec![0f32; N];
    for _ in 0..runs {
        let t = Instant::now();
        for ((o, x), y) in out.iter_mut().zip(&a).zip(&b) {
            *o = x + y;
        }
        std::hint::black_box(&out);
        println!("native: {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    let mut vadd = Vadd::new(threads, &a, &b);
    for _ in 0..runs {
        let (t, cpu) = (Instant::now(), process_cpu_ms());
        vadd.run();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let cpu = process_cpu_ms() - cpu;
        println!("model, {threads} CU thread(s): {ms:.2} ms ({cpu:.2} ms of CPU)");
    }
    assert!(
        vadd.result() == out,
        "the model's vadd equals the native one"
    );
}
