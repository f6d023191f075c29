//! The thunk's everyday operations, timed exactly the way `tests/c/hsakmt_bench.c` times
//! libhsakmt's (and `tests/c/hsa_dispatch_bench.c` times ROCr's dispatch): a warm-up batch,
//! then batches of the same number of iterations, the median batch's time per operation.
//! `kfd bench` shows them as rows; `kfd bench --ops` prints them one per line for
//! `tests/c/bench.sh`, which alternates the thunk with libhsakmt round by round under the
//! shim so that both sides see the same machine.

use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use thunk::{AllocOptions, Executable, Gpu, Kfd, MemoryKind, QueueOptions, WaitStatus};

use crate::error::{CliError, CliResult};
use crate::measure::spin_until;

/// The operations, in the order they run, with the iterations of one batch (the same as the
/// C side's).
pub const OPS: [(&str, usize); 6] = [
    ("pm4_queue_create_destroy", 50),
    ("alloc_map_unmap_free_64k", 500),
    ("event_set_wait", 2000),
    ("submit_fence_round_trip", 10_000),
    ("aql_barrier_round_trip", 10_000),
    ("dispatch_empty_kernel", 2_000),
];

/// What one line of the C side says: `name`, median ns per operation, batches × iterations.
#[derive(Clone, Debug, PartialEq)]
pub struct OpTiming {
    /// The operation.
    pub name: &'static str,
    /// Nanoseconds per operation in the median batch.
    pub median_ns: f64,
    /// Fastest batch, ns per operation.
    pub min_ns: f64,
    /// Slowest batch, ns per operation.
    pub max_ns: f64,
    /// Batches timed.
    pub batches: usize,
    /// Operations per batch.
    pub iterations: usize,
}

impl OpTiming {
    /// The C side's line format: `<name> <median ns> <batches>x<iterations> <fastest ns>`.
    pub fn line(&self) -> String {
        format!(
            "{} {:.0} {}x{} {:.0}",
            self.name, self.median_ns, self.batches, self.iterations, self.min_ns
        )
    }
}

/// How long any one wait may take before the measurement fails.
const WAIT: Duration = Duration::from_secs(10);

/// The empty kernel (`cli/kernels/empty.cl`), prebuilt for the presets that run kernels:
/// regenerate with `cli/kernels/regenerate.sh` (cli/tests/kernels.rs checks they still match
/// their source).
pub const EMPTY_KERNELS: [(&str, &[u8]); 2] = [
    ("gfx900", include_bytes!("../kernels/empty-gfx900.hsaco")),
    ("gfx90a", include_bytes!("../kernels/empty-gfx90a.hsaco")),
];

fn failed(what: &str) -> impl Fn(thunk::Error) -> CliError + '_ {
    move |e| CliError::failure(format!("{what}: {e}"))
}

/// Times `op`: one warm-up batch, then `batches` batches of `iterations`.
fn batches(
    name: &'static str,
    batches: usize,
    iterations: usize,
    mut op: impl FnMut() -> CliResult<()>,
) -> CliResult<OpTiming> {
    let batches = batches.max(1);
    let iterations = iterations.max(1);
    for _ in 0..iterations {
        op()?;
    }
    let mut per_op = Vec::with_capacity(batches);
    for _ in 0..batches {
        let start = Instant::now();
        for _ in 0..iterations {
            op()?;
        }
        per_op.push(start.elapsed().as_nanos() as f64 / iterations as f64);
    }
    per_op.sort_by(f64::total_cmp);
    Ok(OpTiming {
        name,
        median_ns: per_op[batches / 2],
        min_ns: per_op[0],
        max_ns: per_op[batches - 1],
        batches,
        iterations,
    })
}

/// Times the operation `name` on `gpu`, with `scale` × its batch size per batch (at least 1).
pub fn time_op(
    kfd: &Kfd,
    gpu: &Gpu,
    name: &str,
    batch_count: usize,
    scale: f64,
) -> CliResult<OpTiming> {
    let Some(&(name, base)) = OPS.iter().find(|(n, _)| *n == name) else {
        return Err(CliError::usage(format!(
            "unknown operation '{name}'; the operations are: {}",
            OPS.map(|(n, _)| n).join(", ")
        )));
    };
    let iterations = ((base as f64 * scale).round() as usize).max(1);
    match name {
        "pm4_queue_create_destroy" => batches(name, batch_count, iterations, || {
            let q = gpu
                .create_pm4_queue(&QueueOptions::new().ring_size(4096))
                .map_err(failed("CREATE_QUEUE"))?;
            drop(black_box(q));
            Ok(())
        }),
        "alloc_map_unmap_free_64k" => batches(name, batch_count, iterations, || {
            let m = gpu
                .alloc(MemoryKind::Vram, 64 << 10)
                .map_err(failed("ALLOC_MEMORY_OF_GPU"))?;
            drop(black_box(m));
            Ok(())
        }),
        "event_set_wait" => {
            let event = kfd
                .create_event(thunk::EventKind::Signal, true)
                .map_err(failed("CREATE_EVENT"))?;
            batches(name, batch_count, iterations, || {
                event.set().map_err(failed("SET_EVENT"))?;
                match event.wait(Some(WAIT)).map_err(failed("WAIT_EVENTS"))? {
                    WaitStatus::Signaled => Ok(()),
                    WaitStatus::TimedOut => Err(CliError::failure(
                        "a set event was not signalled".to_string(),
                    )),
                }
            })
        }
        "submit_fence_round_trip" => {
            let fence = gpu
                .alloc(MemoryKind::Gtt, 4096)
                .map_err(failed("fence buffer"))?;
            let word = fence.atomic_u64(0).map_err(failed("fence word"))?;
            let mut queue = gpu
                .create_pm4_queue(&QueueOptions::new().ring_size(4096))
                .map_err(failed("PM4 queue"))?;
            let mut seq = 0u64;
            batches(name, batch_count, iterations, || {
                seq += 1;
                queue
                    .push_fence(fence.gpu_addr(0), seq)
                    .map_err(failed("RELEASE_MEM"))?;
                queue.submit().map_err(failed("submit"))?;
                spin_until("the RELEASE_MEM fence", || {
                    word.load(Ordering::Acquire) == seq
                })
            })
        }
        "aql_barrier_round_trip" => {
            // A user-mode amd_signal_t (kind 1, value at 8, no mailbox): the packet processor
            // decrements it when the barrier retires; the CPU polls it.
            let signal = gpu
                .alloc_with(&AllocOptions::new(MemoryKind::Gtt, 4096).coherent())
                .map_err(failed("signal buffer"))?;
            signal.store_u64(0, 1).map_err(failed("signal kind"))?;
            let value = signal.atomic_u64(8).map_err(failed("signal value"))?;
            let mut queue = gpu
                .create_aql_queue(&QueueOptions::new().ring_size(4096))
                .map_err(failed("AQL queue"))?;
            let dwords = thunk::packets::aql_barrier_and([0; 5], signal.gpu_va());
            batches(name, batch_count, iterations, || {
                value.store(1, Ordering::Release);
                queue
                    .push_packet(&dwords)
                    .map_err(failed("barrier packet"))?;
                queue.submit().map_err(failed("submit"))?;
                spin_until("the barrier's completion signal", || {
                    value.load(Ordering::Acquire) == 0
                })
            })
        }
        "dispatch_empty_kernel" => {
            let exe = load_empty_kernel(gpu)?;
            let kernel = exe.kernel("empty").map_err(failed("kernel 'empty'"))?;
            let args = kernel.args().map_err(failed("kernel arguments"))?;
            let mut queue = gpu
                .create_aql_queue(&QueueOptions::new().ring_size(4096))
                .map_err(failed("AQL queue"))?;
            batches(name, batch_count, iterations, || {
                let done = queue
                    .dispatch(&kernel, [1, 1, 1], [1, 1, 1], &args)
                    .map_err(failed("dispatch"))?;
                done.wait_polling(WAIT).map_err(failed("completion"))
            })
        }
        _ => unreachable!("every name in OPS has a measurement"),
    }
}

/// Loads the kept empty kernel that matches `gpu`.
pub fn load_empty_kernel(gpu: &Gpu) -> CliResult<Executable> {
    let mut last = None;
    for (_, code) in EMPTY_KERNELS {
        match Executable::load(gpu, code) {
            Ok(exe) => return Ok(exe),
            Err(e) => last = Some(e),
        }
    }
    Err(CliError::failure(format!(
        "the empty kernel is built for {} only: {}",
        EMPTY_KERNELS.map(|(g, _)| g).join(" and "),
        last.map_or_else(String::new, |e| e.to_string())
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_batch_is_reported() {
        let mut n = 0u64;
        let t = batches("x", 5, 3, || {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((t.batches, t.iterations), (5, 3));
        assert_eq!(n, 18, "a warm-up batch and five timed ones");
        assert!(t.min_ns <= t.median_ns && t.median_ns <= t.max_ns);
        let line = t.line();
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!((f.len(), f[0], f[2]), (4, "x", "5x3"), "{line}");
    }
}
