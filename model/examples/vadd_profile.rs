//! The dispatch bench's vadd (c = a + b over 2^24 floats, workgroups of 256) run a few
//! times on the stepped model, for profiling (`valgrind --tool=callgrind`) and quick
//! timings: `cargo run --release -p kfd-model --example vadd_profile -- [runs] [threads]`
//! prints each run's wall time and the native loop's.
#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/opencl/mod.rs"]
mod opencl;

use codeobj::{CodeObject, Executable, TargetId};
use common::*;
use kfd_model::{ModelConfig, Preset};
use kfd_sys::*;
use opencl::BufMemory;
use std::path::PathBuf;
use std::time::Instant;

/// hsa_packet_header: KERNEL_DISPATCH (2), barrier bit, system-scope acquire and release.
const KERNEL_DISPATCH: u16 = 2 | 1 << 8 | 2 << 9 | 2 << 11;

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
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
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
    let model = model_with(
        ModelConfig::new(Preset::Gfx900)
            .with_engine_thread(false)
            .with_cu_threads(threads),
    );
    let c = Client::new(&model);
    let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    let code = c
        .alloc_on(c.gpu(), 1 << 20, flags | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE)
        .unwrap();
    let mut exe = Executable::new("amdgcn-amd-amdhsa--gfx900".parse::<TargetId>().unwrap());
    let mut mem = BufMemory {
        buf: &code,
        used: 0,
    };
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/kernels/bench.cl");
    exe.load(
        CodeObject::parse(&opencl::compile(&src, "gfx900")).unwrap(),
        &mut mem,
    )
    .unwrap();
    exe.freeze(&mut mem).unwrap();
    let k = exe.kernel("vadd").unwrap();
    let (_, q) = c
        .create_queue_sized(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
        .unwrap();
    let signals = c.gtt(4096);
    let kernargs = c.gtt(4096);
    let bytes = 4 * N as u64;
    let (pa, pb, pc) = (c.gtt(bytes), c.gtt(bytes), c.gtt(bytes));
    let f32_bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    pa.write_bytes(0, &f32_bytes(&a));
    pb.write_bytes(0, &f32_bytes(&b));
    let mut kargs: Vec<u8> = [pa.va, pb.va, pc.va]
        .iter()
        .flat_map(|p| p.to_le_bytes())
        .collect();
    kargs.extend((N as u32).to_le_bytes());
    kernargs.write_bytes(0, &kargs);
    for run in 0..runs as u64 {
        signals.write_u64(0, 1);
        signals.write_u64(8, 1);
        let mut p = [0u8; 64];
        p[2..4].copy_from_slice(&2u16.to_le_bytes());
        p[4..6].copy_from_slice(&256u16.to_le_bytes());
        p[6..8].copy_from_slice(&1u16.to_le_bytes());
        p[8..10].copy_from_slice(&1u16.to_le_bytes());
        p[12..16].copy_from_slice(&(N as u32).to_le_bytes());
        p[16..20].copy_from_slice(&1u32.to_le_bytes());
        p[20..24].copy_from_slice(&1u32.to_le_bytes());
        p[32..40].copy_from_slice(&k.descriptor_address.to_le_bytes());
        p[40..48].copy_from_slice(&kernargs.va.to_le_bytes());
        p[56..64].copy_from_slice(&signals.va.to_le_bytes());
        let slot = run % (q.ring.size / 64);
        q.ring.write_bytes(slot * 64 + 2, &p[2..]);
        q.ring
            .write_bytes(slot * 64, &KERNEL_DISPATCH.to_le_bytes());
        c.submit(&q, run + 1);
        let (t, cpu) = (Instant::now(), process_cpu_ms());
        model.run_until_idle();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let cpu = process_cpu_ms() - cpu;
        assert_eq!(signals.read_u64(8), 0, "the dispatch completed");
        println!("model, {threads} CU thread(s): {ms:.2} ms ({cpu:.2} ms of CPU)");
    }
    let mut got = vec![0u8; 4 * N];
    pc.read_bytes(0, &mut got);
    let ok = got
        .chunks_exact(4)
        .zip(&out)
        .all(|(m, n)| f32::from_le_bytes([m[0], m[1], m[2], m[3]]) == *n);
    assert!(ok, "the model's vadd equals the native one");
}
