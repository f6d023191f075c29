//! The dispatch bench's rig, shared with `examples/vadd_profile.rs`: a stepped model with the
//! bench kernels (`benches/kernels/bench.cl`, compiled with clang-15) loaded and an AQL queue.
#![allow(dead_code)]

use crate::common::*;
use crate::opencl;
use crate::opencl::BufMemory;
use codeobj::{CodeObject, Executable, LoadedKernel, TargetId};
use kfd_model::{Model, ModelConfig, Preset};
use kfd_sys::*;
use std::path::PathBuf;

/// A process with the bench kernels loaded and an AQL queue.
pub struct Rig {
    pub model: Model,
    pub c: Client,
    exe: Executable,
    queue: QueueBufs,
    signals: Buf,
    kernargs: Buf,
    packets: u64,
}

impl Rig {
    pub fn new(cfg: ModelConfig) -> Rig {
        let model = model_with(cfg);
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
        exe.load(
            CodeObject::parse(&compile_kernels("gfx900")).unwrap(),
            &mut mem,
        )
        .unwrap();
        exe.freeze(&mut mem).unwrap();
        let (_, queue) = c
            .create_queue_sized(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
            .unwrap();
        let signals = c.gtt(4096);
        let kernargs = c.gtt(4096);
        Rig {
            model,
            c,
            exe,
            queue,
            signals,
            kernargs,
            packets: 0,
        }
    }

    pub fn kernel(&self, name: &str) -> LoadedKernel {
        self.exe.kernel(name).unwrap()
    }

    /// Writes a KERNEL_DISPATCH and rings the doorbell; returns the completion signal's
    /// offset in `signals` (its value goes from 1 to 0).
    pub fn dispatch(&mut self, k: &LoadedKernel, args: &[u8], wg: [u16; 2], grid: [u32; 2]) -> u64 {
        let slot = self.packets % 64;
        self.kernargs.write_bytes(slot * 64, args);
        let sig = slot * 64;
        self.signals.write_u64(sig, 1);
        self.signals.write_u64(sig + 8, 1);
        let q = &self.queue;
        let kernarg = self.kernargs.va + slot * 64;
        let signal = self.signals.va + sig;
        KernelDispatch::of(
            k,
            [wg[0], wg[1], 1],
            [grid[0], grid[1], 1],
            0,
            kernarg,
            signal,
        )
        .write(q, self.packets);
        self.packets += 1;
        self.c.submit(q, self.packets);
        sig
    }

    pub fn done(&self, sig: u64) -> bool {
        self.signals.read_u64(sig + 8) == 0
    }

    /// Dispatches and runs the engines until the signal is 0 (stepped model).
    pub fn run(&mut self, k: &LoadedKernel, args: &[u8], wg: [u16; 2], grid: [u32; 2]) {
        let sig = self.dispatch(k, args, wg, grid);
        self.model.run_until_idle();
        assert!(self.done(sig), "the dispatch completed");
    }
}

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn read_f32s(b: &Buf, n: usize) -> Vec<f32> {
    let mut bytes = vec![0u8; 4 * n];
    b.read_bytes(0, &mut bytes);
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn args(ptrs: &[u64], n: u32) -> Vec<u8> {
    let mut a: Vec<u8> = ptrs.iter().flat_map(|p| p.to_le_bytes()).collect();
    a.extend(n.to_le_bytes());
    a
}

pub fn stepped(threads: usize) -> ModelConfig {
    ModelConfig::new(Preset::Gfx900)
        .with_engine_thread(false)
        .with_cu_threads(threads)
}

/// Compiles `benches/kernels/bench.cl` for `mcpu`.
pub fn compile_kernels(mcpu: &str) -> Vec<u8> {
    opencl::compile(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/kernels/bench.cl"),
        mcpu,
    )
}

/// The vadd kernel (c = a + b, workgroups of 256) set up on a stepped model with `threads`
/// compute-unit threads: the inputs copied in, ready to run.
pub struct Vadd {
    pub rig: Rig,
    kernel: LoadedKernel,
    kernargs: Vec<u8>,
    n: usize,
    /// a, b and c, kept mapped while the kernel may run.
    bufs: [Buf; 3],
}

impl Vadd {
    pub fn new(threads: usize, a: &[f32], b: &[f32]) -> Vadd {
        let rig = Rig::new(stepped(threads));
        let bytes = 4 * a.len() as u64;
        let bufs = [rig.c.gtt(bytes), rig.c.gtt(bytes), rig.c.gtt(bytes)];
        bufs[0].write_bytes(0, &f32_bytes(a));
        bufs[1].write_bytes(0, &f32_bytes(b));
        let kernel = rig.kernel("vadd");
        let kernargs = args(&[bufs[0].va, bufs[1].va, bufs[2].va], a.len() as u32);
        Vadd {
            rig,
            kernel,
            kernargs,
            n: a.len(),
            bufs,
        }
    }

    /// One dispatch over the whole grid, run to completion.
    pub fn run(&mut self) {
        let n = self.n as u32;
        self.rig.run(&self.kernel, &self.kernargs, [256, 1], [n, 1]);
    }

    /// c as the kernel left it.
    pub fn result(&self) -> Vec<f32> {
        read_f32s(&self.bufs[2], self.n)
    }
}
