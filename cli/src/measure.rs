//! Short, self-timed measurements of the project's headline numbers, for `kfd bench` and
//! `kfd demo`. Each one repeats a small experiment a number of rounds and keeps every round's
//! result in [`Samples`], so the report can say "median of N". They reproduce what the
//! criterion benchmarks measure (`pm4/benches`, `model/benches/engines.rs`,
//! `thunk/benches`, `drain/benches`) without criterion's statistics — numbers to look at on
//! a shared machine, not to gate on.
//!
//! Where the machine is shared, a baseline measured seconds apart from the thing it is
//! compared with compares two different machines; so the "vs memcpy" measurements alternate
//! the two round by round and report the median of the per-round ratios.

use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use drain::{Channel, ChannelConfig, WaitStrategy};
use kfd_sys::{kfd_ioctl_get_version_args, GetVersion};
use pm4::decode::Pm4Decoder;
use pm4::fields::CompareFunction;
use pm4::hws::{
    MapProcess, MapProcessArgs, MapQueueSel, MapQueueType, MapQueues, MapQueuesArgs, QueueEngine,
};
use pm4::user::{
    AcquireMemGfx9, AcquireRange, CopyCountSel, CopyData, CopyDataControl, CopyDstSel, CopySrcSel,
    DispatchDirect, DispatchInitiator, EventWrite, IndirectBuffer, IndirectBufferControl,
    PollTarget, ReleaseMemArgs, ReleaseMemGfx9, SetShReg, WaitArgs, WaitOperation, WaitRegMem,
    WriteData,
};
use pm4::{GfxGen, PacketWriter};
use thunk::model_access::{KfdModelExt, ModelConfig, OpenOptionsModelExt};
use thunk::{EventKind, Gpu, Kfd, MemoryKind, OpenOptions, Preset, QueueOptions};

use crate::error::{CliError, CliResult};

/// How long any single wait in a measurement may take before it is reported as a failure.
const WAIT: Duration = Duration::from_secs(10);

/// The results of the rounds of one measurement, sorted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    sorted: Vec<f64>,
}

impl Samples {
    /// Samples from unsorted values (NaNs are dropped).
    pub fn new(mut values: Vec<f64>) -> Self {
        values.retain(|v| !v.is_nan());
        values.sort_by(f64::total_cmp);
        Samples { sorted: values }
    }

    /// How many.
    pub fn count(&self) -> usize {
        self.sorted.len()
    }

    /// The value below which `q` (0..=1) of the samples lie (nearest rank); NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((self.sorted.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        self.sorted.get(rank).copied().unwrap_or(f64::NAN)
    }

    /// The median.
    pub fn median(&self) -> f64 {
        self.quantile(0.5)
    }

    /// The values, smallest first.
    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.sorted.iter().copied()
    }

    /// The smallest.
    pub fn min(&self) -> f64 {
        self.sorted.first().copied().unwrap_or(f64::NAN)
    }

    /// The largest.
    pub fn max(&self) -> f64 {
        self.sorted.last().copied().unwrap_or(f64::NAN)
    }
}

fn thunk_failure(what: &str) -> impl Fn(thunk::Error) -> CliError + '_ {
    move |e| CliError::failure(format!("{what}: {e}"))
}

fn drain_failure(what: &str) -> impl Fn(drain::Error) -> CliError + '_ {
    move |e| CliError::failure(format!("{what}: {e}"))
}

// ----------------------------------------------------------------------------------------
// pm4: encode and decode

/// MAP_QUEUES packets in the runlist of [`runlist_encode`].
pub const RUNLIST_MAP_QUEUES: usize = 128;
const RUNLIST_PROCESSES: u32 = 8;
const RUNLIST_DWORDS: usize =
    RUNLIST_PROCESSES as usize * MapProcess::DWORDS + RUNLIST_MAP_QUEUES * MapQueues::DWORDS;

/// Writes the runlist IB the HWS benchmark uses — 8 MAP_PROCESS, each followed by 16
/// MAP_QUEUES — into `ib`; returns the dwords written.
pub fn build_runlist(ib: &mut [u32], base: u64) -> CliResult<usize> {
    let bad = |e: &dyn std::fmt::Display| CliError::failure(format!("runlist encode: {e}"));
    let mut w = PacketWriter::new(ib);
    let queues_per_process = RUNLIST_MAP_QUEUES as u32 / RUNLIST_PROCESSES;
    for p in 0..RUNLIST_PROCESSES {
        let process = MapProcess::new(&MapProcessArgs {
            pasid: 0x8000 + p as u16,
            process_quantum: 10,
            page_table_base: base + u64::from(p) * 0x1000,
            sh_mem_bases: 0x0001_0002,
            sh_mem_config: 0x1018,
            sdma_enable: true,
            num_queues: queues_per_process as u16,
            ..Default::default()
        })
        .map_err(|e| bad(&e))?;
        w.push(&process).map_err(|e| bad(&e))?;
        for q in 0..queues_per_process {
            let i = p * queues_per_process + q;
            let map = MapQueues::new(&MapQueuesArgs {
                queue_sel: MapQueueSel::HwsDetermined,
                queue_type: MapQueueType::NormalCompute,
                engine: QueueEngine::Compute,
                gws_control_queue: false,
                num_queues: 1,
                check_disable: false,
                doorbell_offset: 0x1000 + 2 * i,
                mqd_addr: base + u64::from(i) * 0x1000,
                wptr_addr: 0x7f00_0000_0000 + u64::from(i) * 8,
            })
            .map_err(|e| bad(&e))?;
            w.push(&map).map_err(|e| bad(&e))?;
        }
    }
    Ok(w.len())
}

/// Nanoseconds per MAP_QUEUES while building the whole runlist IB ([`build_runlist`]), one
/// sample per round of `builds` builds.
pub fn runlist_encode(rounds: usize, builds: usize) -> CliResult<Samples> {
    let mut ib = vec![0u32; RUNLIST_DWORDS];
    build_runlist(&mut ib, 0x40_0000)?;
    let mut values = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..builds {
            black_box(build_runlist(black_box(&mut ib), black_box(0x40_0000))?);
        }
        let ns = start.elapsed().as_nanos() as f64;
        values.push(ns / (builds * RUNLIST_MAP_QUEUES).max(1) as f64);
    }
    Ok(Samples::new(values))
}

/// A user-queue stream that fills `words` with a mix of the packets compute queues carry
/// (SET_SH_REG, DISPATCH_DIRECT, EVENT_WRITE, ACQUIRE_MEM, RELEASE_MEM, WAIT_REG_MEM,
/// WRITE_DATA, COPY_DATA, INDIRECT_BUFFER), NOP-padded; returns the dwords used.
pub fn mixed_user_stream(words: &mut [u32]) -> CliResult<usize> {
    let bad = |e: &dyn std::fmt::Display| CliError::failure(format!("PM4 stream: {e}"));
    let release = ReleaseMemGfx9::new(
        &ReleaseMemArgs::event_signal(0x7f00_0000_0040, 8),
        ReleaseMemGfx9::amdgpu_fence_cache(),
    )
    .map_err(|e| bad(&e))?;
    let acquire = AcquireMemGfx9::new(AcquireMemGfx9::amdgpu_coher_cntl(), AcquireRange::full(4));
    let wait = WaitRegMem::new(
        &WaitArgs {
            function: CompareFunction::Equal,
            operation: WaitOperation::WaitRegMem,
            target: PollTarget::Memory(0x7f00_0000_0080),
            poll_interval: 4,
            optimize_ace_offload_mode: true,
        },
        1,
        u32::MAX,
    )
    .map_err(|e| bad(&e))?;
    let ib =
        IndirectBuffer::new(0x10_0000, 256, IndirectBufferControl::new()).map_err(|e| bad(&e))?;
    let copy = CopyData::new(
        CopyDataControl::new()
            .with_src_sel(CopySrcSel::GpuClockCount)
            .with_dst_sel(CopyDstSel::Memory)
            .with_count_sel(CopyCountSel::Bits64),
        0,
        0x7f00_0000_0100,
    )
    .map_err(|e| bad(&e))?;
    let dispatch = DispatchDirect::new(
        [64, 1, 1],
        DispatchInitiator::new().with_compute_shader_en(true),
    );
    let sh = SetShReg::new(0x2E40, &[0x1000, 0x7f, 0x0, 0x1]).map_err(|e| bad(&e))?;
    let write = WriteData::memory(0x7f00_0000_0200, &[1, 2, 3, 4]).map_err(|e| bad(&e))?;
    let flush = EventWrite::cs_partial_flush();
    let mut w = PacketWriter::new(words);
    let mut i = 0usize;
    while w.remaining() >= 16 {
        let r = match i % 9 {
            0 => w.push(&sh),
            1 => w.push(&dispatch),
            2 => w.push(&flush),
            3 => w.push(&acquire),
            4 => w.push(&release),
            5 => w.push(&wait),
            6 => w.push(&write),
            7 => w.push(&copy),
            _ => w.push(&ib),
        };
        r.map_err(|e| bad(&e))?;
        i += 1;
    }
    let rest = w.remaining();
    if rest > 0 {
        w.nop(rest).map_err(|e| bad(&e))?;
    }
    Ok(w.len())
}

/// GB/s decoding a 1 MiB mixed user-queue stream, one sample per round of `passes` passes.
pub fn pm4_decode(rounds: usize, passes: usize) -> CliResult<Samples> {
    let mut words = vec![0u32; (1 << 20) / 4];
    let n = mixed_user_stream(&mut words)?;
    let stream = words.get(..n).unwrap_or(&words);
    let bytes = (stream.len() * 4) as u64;
    let mut values = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..passes {
            let mut dwords = 0usize;
            for item in Pm4Decoder::new(black_box(stream), GfxGen::Gfx9) {
                match item {
                    Ok(d) => dwords += d.words.len(),
                    Err(e) => {
                        return Err(CliError::failure(format!(
                            "the benchmark's own PM4 stream does not decode: {e}"
                        )))
                    }
                }
            }
            black_box(dwords);
        }
        values.push(crate::units::gb_per_s(
            bytes * passes as u64,
            start.elapsed(),
        ));
    }
    Ok(Samples::new(values))
}

// ----------------------------------------------------------------------------------------
// thunk

/// Nanoseconds the thunk adds to one ioctl: `Kfd::query_version` against the same
/// `GET_VERSION` on the model's process directly, in blocks of 32 calls ordered direct,
/// thunk, thunk, direct so both see the same machine load. One sample per round of
/// `blocks` blocks. Always on a model without an engine thread (nothing else runs). The
/// overhead is a difference of two timings: a round where the thunk came out faster than the
/// direct call (noise, not a saving) counts as 0 ns, never as a negative time.
pub fn thunk_overhead(rounds: usize, blocks: usize) -> CliResult<Samples> {
    let config = ModelConfig::new(Preset::Gfx900).with_engine_thread(false);
    let kfd = Kfd::open_with(OpenOptions::model_config(config))
        .map_err(thunk_failure("cannot start the model"))?;
    let model = kfd
        .model()
        .ok_or_else(|| CliError::failure("the model backend has no model"))?;
    let direct = model
        .open()
        .map_err(|e| CliError::failure(format!("cannot open a model process: {e}")))?;
    let mut direct_call = || -> CliResult<()> {
        let mut v = kfd_ioctl_get_version_args::default();
        direct
            .call::<GetVersion>(black_box(&mut v))
            .map_err(|e| CliError::failure(format!("GET_VERSION on the model: {e}")))?;
        black_box(v.minor_version);
        Ok(())
    };
    let mut thunk_call = || -> CliResult<()> {
        black_box(
            kfd.query_version()
                .map_err(thunk_failure("GET_VERSION through the thunk"))?,
        );
        Ok(())
    };
    const BLOCK: usize = 32;
    let time = |f: &mut dyn FnMut() -> CliResult<()>| -> CliResult<i128> {
        let t = Instant::now();
        for _ in 0..BLOCK / 2 {
            f()?;
        }
        Ok(t.elapsed().as_nanos() as i128)
    };
    // Warm both paths up.
    for _ in 0..BLOCK {
        direct_call()?;
        thunk_call()?;
    }
    let mut values = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut extra: i128 = 0;
        for _ in 0..blocks {
            let d1 = time(&mut direct_call)?;
            let t1 = time(&mut thunk_call)?;
            let t2 = time(&mut thunk_call)?;
            let d2 = time(&mut direct_call)?;
            extra += (t1 + t2) - (d1 + d2);
        }
        values.push(overhead_per_call(extra, blocks * BLOCK));
    }
    Ok(Samples::new(values))
}

/// The thunk's time per call from `extra` nanoseconds more than the direct path over `calls`
/// calls, floored at 0: a negative difference is the timings' noise.
pub fn overhead_per_call(extra: i128, calls: usize) -> f64 {
    (extra as f64 / calls.max(1) as f64).max(0.0)
}

/// How long [`spin_until`] and `tests/c/hsakmt_bench.c`'s wait check without yielding.
const SPIN_BEFORE_YIELDING: std::time::Duration = std::time::Duration::from_micros(20);

/// Waits until `done()`: checks without yielding for [`SPIN_BEFORE_YIELDING`], then yields
/// every 256 checks — `tests/c/hsakmt_bench.c`'s wait, check for check, and the thunk's own
/// polling in spirit. A yield on every 256th check made a round trip of ~0.5 µs a count of
/// yields (1.8 per round, each a system call): the two sides' ratio then followed how fast
/// each side's loop reached its 256th check rather than the path measured (issue #22: 1.02–1.04
/// with the same packets; 1.00 with this wait). Past the spin, yields keep a waiter on a
/// machine with more runnable threads than cores from holding off the engine it waits for.
pub(crate) fn spin_until(what: &str, mut done: impl FnMut() -> bool) -> CliResult<()> {
    let mut start = None;
    let mut spins = 0u32;
    while !done() {
        spins = spins.wrapping_add(1);
        if spins % 256 == 0 {
            let now = Instant::now();
            let elapsed = now.duration_since(*start.get_or_insert(now));
            if elapsed > WAIT {
                return Err(CliError::failure(format!(
                    "{what} did not land within {WAIT:?}"
                )));
            }
            if elapsed > SPIN_BEFORE_YIELDING {
                std::thread::yield_now();
            }
        }
    }
    Ok(())
}

// ----------------------------------------------------------------------------------------
// queues and events (on whatever `gpu` is: the model or a real GPU)

/// Nanoseconds from submitting a RELEASE_MEM fence on a PM4 queue (packet into the ring,
/// write pointer, doorbell) until the CPU sees the fence value, `samples` times.
pub fn doorbell_round_trip(gpu: &Gpu, samples: usize) -> CliResult<Samples> {
    let fence = gpu
        .alloc(MemoryKind::Gtt, 4096)
        .map_err(thunk_failure("fence buffer"))?;
    let word = fence.atomic_u64(0).map_err(thunk_failure("fence word"))?;
    let mut queue = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .map_err(thunk_failure("PM4 queue"))?;
    let mut values = Vec::with_capacity(samples);
    // A few unmeasured trips first: the engine wakes up and the lines get hot.
    let warm = 16;
    for i in 0..(samples + warm) as u64 {
        queue
            .push_fence(fence.gpu_addr(0), i + 1)
            .map_err(thunk_failure("RELEASE_MEM"))?;
        let start = Instant::now();
        queue.submit().map_err(thunk_failure("submit"))?;
        spin_until("the RELEASE_MEM fence", || {
            word.load(Ordering::Acquire) == i + 1
        })?;
        let ns = start.elapsed().as_nanos() as f64;
        if i >= warm as u64 {
            values.push(ns);
        }
    }
    Ok(Samples::new(values))
}

/// Nanoseconds from submitting a RELEASE_MEM that signals an event (slot write + interrupt)
/// until `WAIT_EVENTS` returns, `samples` times.
pub fn event_latency(kfd: &Kfd, gpu: &Gpu, samples: usize) -> CliResult<Samples> {
    let event = kfd
        .create_event(EventKind::Signal, true)
        .map_err(thunk_failure("event"))?;
    let mut queue = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .map_err(thunk_failure("PM4 queue"))?;
    let mut values = Vec::with_capacity(samples);
    let warm = 4;
    for i in 0..samples + warm {
        queue
            .push_signal(&event)
            .map_err(thunk_failure("RELEASE_MEM signal"))?;
        let start = Instant::now();
        queue.submit().map_err(thunk_failure("submit"))?;
        match event
            .wait(Some(WAIT))
            .map_err(thunk_failure("WAIT_EVENTS"))?
        {
            thunk::WaitStatus::Signaled => {}
            thunk::WaitStatus::TimedOut => {
                return Err(CliError::failure(format!(
                    "event {} was not signalled within {WAIT:?}",
                    event.id()
                )))
            }
        }
        let ns = start.elapsed().as_nanos() as f64;
        if i >= warm {
            values.push(ns);
        }
    }
    Ok(Samples::new(values))
}

/// One "A against B" comparison, round by round.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Versus {
    /// The baseline (memcpy), GB/s per round.
    pub baseline: Samples,
    /// The measured path, GB/s per round.
    pub measured: Samples,
    /// measured / baseline per round.
    pub ratio: Samples,
}

/// Copies `size` bytes `times` times with the CPU from block to block of `src` and `dst`
/// (as many blocks of `size` as they hold, visited in a stride so consecutive copies touch
/// different blocks); returns the elapsed time.
fn memcpy_blocks(src: &[u8], dst: &mut [u8], size: usize, times: usize) -> Duration {
    let blocks = (src.len() / size.max(1)).max(1);
    let start = Instant::now();
    for i in 0..times {
        let k = (i % blocks) * size;
        let j = ((i * 3 + 1) % blocks) * size;
        if let (Some(from), Some(to)) = (src.get(k..k + size), dst.get_mut(j..j + size)) {
            to.copy_from_slice(from);
        }
        black_box(&dst);
    }
    start.elapsed()
}

/// SDMA COPY_LINEAR of 1 MiB between two GTT buffers (COPY_LINEAR + FENCE, waited for)
/// against the CPU copying the same 1 MiB GTT source, alternated for `rounds` rounds of
/// `copies` copies each.
pub fn sdma_copy_vs_memcpy(gpu: &Gpu, rounds: usize, copies: usize) -> CliResult<Versus> {
    const SIZE: u64 = 1 << 20;
    let src = gpu
        .alloc(MemoryKind::Gtt, SIZE)
        .map_err(thunk_failure("copy source"))?;
    let dst = gpu
        .alloc(MemoryKind::Gtt, SIZE)
        .map_err(thunk_failure("copy destination"))?;
    let fence = gpu
        .alloc(MemoryKind::Gtt, 4096)
        .map_err(thunk_failure("fence buffer"))?;
    src.fill(0, SIZE, 0x5A).map_err(thunk_failure("fill"))?;
    let mut queue = gpu
        .create_sdma_queue(&QueueOptions::new().ring_size(64 << 10))
        .map_err(thunk_failure("SDMA queue"))?;
    // The CPU copies the same GTT source (memory mapped the way the engine sees it).
    let mut cpu_dst = vec![0u8; SIZE as usize];
    let mut memcpy = |copies: usize| -> CliResult<Duration> {
        let start = Instant::now();
        for _ in 0..copies {
            src.read(0, black_box(&mut cpu_dst))
                .map_err(thunk_failure("memcpy from GTT"))?;
        }
        Ok(start.elapsed())
    };
    let word = fence.atomic_u32(0).map_err(thunk_failure("fence word"))?;
    let mut seq = 0u32;
    let mut sdma = |copies: usize| -> CliResult<Duration> {
        let start = Instant::now();
        for _ in 0..copies {
            seq = seq.wrapping_add(1);
            queue
                .push_copy(dst.gpu_va(), src.gpu_va(), SIZE)
                .map_err(thunk_failure("COPY_LINEAR"))?;
            queue
                .push_fence(fence.gpu_addr(0), seq)
                .map_err(thunk_failure("FENCE"))?;
            queue.submit().map_err(thunk_failure("submit"))?;
            spin_until("the SDMA copy fence", || {
                word.load(Ordering::Acquire) == seq
            })?;
        }
        Ok(start.elapsed())
    };
    sdma(2)?;
    let last = dst.load_u64(SIZE - 8).map_err(thunk_failure("read back"))?;
    if last != 0x5A5A_5A5A_5A5A_5A5A {
        return Err(CliError::failure(format!(
            "the SDMA copy did not copy: the last qword is {last:#x}"
        )));
    }
    let mut result = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let m = memcpy(copies)?;
        let s = sdma(copies)?;
        let bytes = SIZE * copies as u64;
        let (mg, sg) = (
            crate::units::gb_per_s(bytes, m),
            crate::units::gb_per_s(bytes, s),
        );
        result.0.push(mg);
        result.1.push(sg);
        result.2.push(sg / mg);
    }
    Ok(Versus {
        baseline: Samples::new(result.0),
        measured: Samples::new(result.1),
        ratio: Samples::new(result.2),
    })
}

// ----------------------------------------------------------------------------------------
// drain

/// Device slots of the drain measurements.
pub const DRAIN_SLOTS: u32 = 16;

/// Drains `slots` full slots of `ch`: a producer thread closes each with one slot-sized
/// record (only its header written: the drain's own copy and signalling are measured), this
/// thread takes each chunk. Returns the time.
fn drain_slots(ch: &mut Channel, slots: u64) -> CliResult<Duration> {
    let mut producer = ch.host_producer(1);
    let max = producer.max_payload();
    std::thread::scope(|s| {
        let start = Instant::now();
        let worker = s.spawn(move || -> drain::Result<()> {
            for _ in 0..slots {
                producer.produce_with(1, max, |_| Ok(()))?;
            }
            Ok(())
        });
        let mut got = 0;
        let mut failure = None;
        while got < slots {
            match ch.next_chunk(Some(WAIT)) {
                Ok(Some(_)) => got += 1,
                Ok(None) => {
                    failure = Some(CliError::failure(format!(
                        "drain: no slot arrived within {WAIT:?} ({got} of {slots} drained)"
                    )));
                    break;
                }
                Err(e) => {
                    failure = Some(CliError::failure(format!("drain: {e}")));
                    break;
                }
            }
        }
        let elapsed = start.elapsed();
        if let Some(e) = failure {
            return Err(e);
        }
        match worker.join() {
            Ok(r) => r.map_err(drain_failure("drain producer"))?,
            Err(_) => return Err(CliError::failure("the drain producer thread panicked")),
        }
        Ok(elapsed)
    })
}

/// Drain throughput with `slot`-byte slots against memcpy of the same blocks, alternated
/// for `rounds` rounds of `slots_per_round` slots.
pub fn drain_vs_memcpy(
    gpu: &Gpu,
    slot: u32,
    wait: WaitStrategy,
    rounds: usize,
    slots_per_round: u64,
) -> CliResult<Versus> {
    let mut ch = Channel::new(gpu, ChannelConfig::new(slot, DRAIN_SLOTS).wait(wait))
        .map_err(drain_failure("drain channel"))?;
    let size = slot as usize;
    let src = vec![0x5Au8; size * DRAIN_SLOTS as usize];
    let mut dst = vec![0u8; size * DRAIN_SLOTS as usize];
    drain_slots(&mut ch, u64::from(DRAIN_SLOTS))?;
    let mut result = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let m = memcpy_blocks(&src, &mut dst, size, slots_per_round as usize);
        let d = drain_slots(&mut ch, slots_per_round)?;
        let bytes = u64::from(slot) * slots_per_round;
        let (mg, dg) = (
            crate::units::gb_per_s(bytes, m),
            crate::units::gb_per_s(bytes, d),
        );
        result.0.push(mg);
        result.1.push(dg);
        result.2.push(dg / mg);
    }
    Ok(Versus {
        baseline: Samples::new(result.0),
        measured: Samples::new(result.1),
        ratio: Samples::new(result.2),
    })
}

/// Nanoseconds from the commit that fills a 4 KiB slot until the reader holds the drained
/// slot, `samples` times, waiting by `wait`.
pub fn drain_commit_to_visible(
    gpu: &Gpu,
    wait: WaitStrategy,
    samples: usize,
) -> CliResult<Samples> {
    let mut ch = Channel::new(gpu, ChannelConfig::new(4096, DRAIN_SLOTS).wait(wait))
        .map_err(drain_failure("drain channel"))?;
    let mut producer = ch.host_producer(1);
    let max = producer.max_payload();
    let mut values = Vec::with_capacity(samples);
    let warm = 4;
    for i in 0..samples + warm {
        // One record fills the slot: its commit makes the slot full.
        producer
            .produce_with(1, max, |_| Ok(()))
            .map_err(drain_failure("drain producer"))?;
        let committed = Instant::now();
        let chunk = ch
            .next_chunk(Some(WAIT))
            .map_err(drain_failure("drain read"))?;
        let seen = committed.elapsed();
        if chunk.is_none() {
            return Err(CliError::failure(format!(
                "drain: the full slot did not arrive within {WAIT:?}"
            )));
        }
        drop(chunk);
        if i >= warm {
            values.push(seen.as_nanos() as f64);
        }
    }
    Ok(Samples::new(values))
}

/// The machine's load averages (1, 5, 15 minutes) and running/total tasks, from
/// `/proc/loadavg`.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut parts = text.split_whitespace();
    let (a, b, c) = (parts.next()?, parts.next()?, parts.next()?);
    Some(format!("{a} {b} {c}"))
}

/// Logical CPUs available to this process.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overhead_below_the_noise_is_zero_not_negative() {
        // 8 blocks of 32 calls where the thunk came out 200 ns faster in all: issue 37's
        // "min -0.8 ns".
        assert_eq!(overhead_per_call(-200, 256), 0.0);
        assert_eq!(overhead_per_call(2560, 256), 10.0);
        assert_eq!(overhead_per_call(5, 0), 5.0);
    }

    #[test]
    fn samples_sort_and_pick_ranks() {
        let s = Samples::new(vec![5.0, 1.0, f64::NAN, 3.0, 2.0, 4.0]);
        assert_eq!(s.count(), 5);
        assert_eq!((s.min(), s.median(), s.max()), (1.0, 3.0, 5.0));
        assert_eq!(s.quantile(0.9), 5.0);
        assert!(Samples::default().median().is_nan());
    }

    #[test]
    fn the_runlist_has_the_facts_sizes() {
        // Facts §3.3/§3.5: MAP_PROCESS is 16 dwords on gfx9, MAP_QUEUES 7.
        let mut ib = vec![0u32; RUNLIST_DWORDS];
        assert_eq!(build_runlist(&mut ib, 0x40_0000).unwrap(), 8 * 16 + 128 * 7);
        // MAP_PROCESS header: type 3, opcode 0xA1, count 14.
        assert_eq!(ib[0], 0xC00E_A100);
        assert_eq!(ib[16] >> 8 & 0xff, 0xA2);
    }

    #[test]
    fn the_mixed_stream_decodes_to_the_end() {
        let mut words = vec![0u32; 4096];
        let n = mixed_user_stream(&mut words).unwrap();
        assert_eq!(n, words.len());
        let decoded: usize = Pm4Decoder::new(&words, GfxGen::Gfx9)
            .map(|d| d.unwrap().words.len())
            .sum();
        assert_eq!(decoded, n);
    }
}
