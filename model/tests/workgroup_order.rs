//! Workgroups start in dispatch order and every started workgroup makes progress, at any
//! number of compute-unit host threads (issue #34, item 6): what hardware guarantees and
//! every decoupled look-back algorithm (rocPRIM and hipCUB scans, rocSPARSE's triangular
//! solves) relies on. A look-back scan of our own (`tests/kernels/workgroup_order.cl`) whose
//! workgroups wait on their predecessors' published sums runs on 1, 2 and 16 host threads
//! and is checked against a host prefix sum.

mod common;
mod opencl;

use codeobj::LoadedKernel;
use common::*;
use kfd_model::{Model, ModelConfig, Preset};
use kfd_sys::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a dispatch may take before the test calls it a hang: far beyond the seconds the
/// scans need on a busy 2-core host.
const HANG: Duration = Duration::from_secs(120);

/// A stepped model (no engine thread) with `workgroup_order.cl` loaded and an AQL queue.
struct Scan {
    model: Model,
    c: Client,
    kernel: LoadedKernel,
    queue: QueueBufs,
    signals: Buf,
}

impl Scan {
    fn new(preset: Preset, mcpu: &str, cu_threads: usize) -> Scan {
        let cfg = ModelConfig::new(preset)
            .with_engine_thread(false)
            .with_cu_threads(cu_threads);
        let model = model_with(cfg);
        let c = Client::new(&model);
        let src =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/workgroup_order.cl");
        let (_code, exe) = opencl::load(&c, mcpu, &opencl::compile(&src, mcpu));
        let kernel = exe.kernel("lookback_scan").unwrap();
        let (_, queue) = c
            .create_queue_sized(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
            .unwrap();
        let signals = c.gtt(4096);
        Scan {
            model,
            c,
            kernel,
            queue,
            signals,
        }
    }

    /// Scans `input` in partitions of `group` items (`use_ticket`: partitions in the order
    /// workgroups take tickets, else by workgroup id); the output, or `None` if the dispatch
    /// did not complete within [`HANG`].
    fn run(&mut self, input: &[u32], group: u16, use_ticket: bool) -> Option<Vec<u32>> {
        let n = input.len() as u64;
        let partitions = n / u64::from(group);
        let bytes = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let inp = self.c.gtt(4 * n);
        inp.write_bytes(0, &bytes(input));
        let out = self.c.gtt(4 * n);
        let status = self.c.gtt(8 * partitions);
        status.write_bytes(0, &vec![0; 8 * partitions as usize]);
        let tickets = self.c.gtt(4096);
        let kernargs = self.c.gtt(4096);
        let mut args = Vec::new();
        for p in [inp.va, out.va, status.va, tickets.va] {
            args.extend(p.to_le_bytes());
        }
        args.extend(u32::from(use_ticket).to_le_bytes());
        // The local pointer: the dynamic LDS starts after the fixed part.
        args.extend(
            self.kernel
                .descriptor
                .group_segment_fixed_size
                .to_le_bytes(),
        );
        kernargs.write_bytes(0, &args);
        self.signals.write_u64(0, 1);
        self.signals.write_u64(8, 1);
        KernelDispatch::of(
            &self.kernel,
            [group, 1, 1],
            [n as u32, 1, 1],
            4 * u32::from(group),
            kernargs.va,
            self.signals.va,
        )
        .write(&self.queue, 0);
        self.c.submit(&self.queue, 1);
        let start = Instant::now();
        while self.signals.read_u64(8) != 0 {
            if start.elapsed() > HANG {
                return None;
            }
            self.model.step();
        }
        let mut got = vec![0u8; 4 * n as usize];
        out.read_bytes(0, &mut got);
        Some(
            got.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }
}

/// The inclusive prefix sum of `input`, wrapping as the kernel's u32 adds do.
fn prefix_sum(input: &[u32]) -> Vec<u32> {
    input
        .iter()
        .scan(0u32, |acc, &x| {
            *acc = acc.wrapping_add(x);
            Some(*acc)
        })
        .collect()
}

fn check_lookback(preset: Preset, mcpu: &str, threads: usize, use_ticket: bool) {
    // 640 partitions of 128 items (two waves each).
    const GROUP: u16 = 128;
    const PARTITIONS: usize = 640;
    let mut rng = Rng(0x5eed_0000 + threads as u64);
    let input: Vec<u32> = (0..PARTITIONS * usize::from(GROUP))
        .map(|_| rng.below(1000) as u32)
        .collect();
    let mut scan = Scan::new(preset, mcpu, threads);
    let how = if use_ticket {
        "tickets"
    } else {
        "workgroup ids"
    };
    let got = scan.run(&input, GROUP, use_ticket).unwrap_or_else(|| {
        panic!("{mcpu}, {threads} threads, partitions by {how}: the look-back scan hung")
    });
    let want = prefix_sum(&input);
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{mcpu}, {threads} threads, partitions by {how}: out[{i}] = {}, host {}",
            got[i], want[i]
        );
    }
}

#[test]
fn a_lookback_scan_by_workgroup_id_completes_on_1_2_and_16_host_threads() {
    for threads in [1, 2, 16] {
        check_lookback(Preset::Gfx900, "gfx900", threads, false);
    }
    check_lookback(Preset::Gfx90a, "gfx90a", 16, false);
}

#[test]
fn a_lookback_scan_by_ticket_completes_on_1_2_and_16_host_threads() {
    for threads in [1, 2, 16] {
        check_lookback(Preset::Gfx900, "gfx900", threads, true);
    }
}
