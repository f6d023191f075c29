//! A whole drain session in one call — channel, producer, reader, verification, progress —
//! for the CLI's `kfd drain`, the example and the benchmarks.

use crate::channel::{Channel, Condition, SignalWait};
use crate::config::{ChannelConfig, LossPolicy, Trigger};
use crate::device::{TracedCheck, TracedDispatch, TracedWork};
use crate::error::{Error, Result};
use crate::pm4_producer::Completion;
use crate::producer::Produced;
use crate::stats::{LatencySummary, Stats};
use crate::synth::{SynthCheck, SynthSource, SYNTH_KIND};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thunk::{Event, EventData, EventKind, Gpu, MemoryKind, WaitStatus};

/// Who produces the records in [`run`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProducerKind {
    /// A CPU thread writing into the GPU buffer ([`crate::HostProducer`]).
    #[default]
    HostThread,
    /// PM4 programs on a compute queue ([`crate::Pm4Producer`]).
    Pm4,
    /// An instrumented kernel: `traced_work` with the device producer library linked in by
    /// the loader ([`crate::device`]), [`DrainConfig::kernel_waves`] waves writing records
    /// while the channel drains them. Needs clang-15 and ld.lld-15.
    Kernel,
}

/// How [`run`] checks the records it receives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// Not at all (only the framing is parsed).
    Off,
    /// Sequence numbers in order, checksums recomputed over the received bytes.
    #[default]
    Checksum,
    /// Sequence numbers in order, every payload compared byte for byte with what was produced
    /// (its checksum field included); `memcmp` speed.
    Exact,
}

/// What [`run`] does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainConfig {
    /// The channel.
    pub channel: ChannelConfig,
    /// The producer.
    pub producer: ProducerKind,
    /// Record bytes to move (headers included); rounded up to whole records.
    pub total_bytes: u64,
    /// Payload bytes per record (a multiple of 8, at least 16, at most slot size − 72).
    pub record_payload: u32,
    /// Records per "kernel": the producer signals a completion after each batch (used by the
    /// kernel-end trigger; also the size of each PM4 program).
    pub records_per_kernel: u32,
    /// How every record is checked.
    pub verify: Verify,
    /// How often the progress callback runs (it also runs once when the session ends).
    pub progress_every: Duration,
    /// Waves of the instrumented kernel ([`ProducerKind::Kernel`]); the records are split
    /// evenly among them.
    pub kernel_waves: u32,
}

impl DrainConfig {
    /// Moves `total_bytes` through `channel` with a host-thread producer, records of about a
    /// quarter slot, checksums verified, 64 records per kernel, progress every second.
    pub fn new(channel: ChannelConfig, total_bytes: u64) -> Self {
        let payload = ((channel.slot_size / 4).saturating_sub(72) / 8 * 8).max(16);
        DrainConfig {
            channel,
            producer: ProducerKind::HostThread,
            total_bytes,
            record_payload: payload,
            records_per_kernel: 64,
            verify: Verify::Checksum,
            progress_every: Duration::from_secs(1),
            kernel_waves: 4,
        }
    }
}

/// A progress report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Record bytes received so far.
    pub bytes: u64,
    /// Records received.
    pub records: u64,
    /// Since the start.
    pub elapsed: Duration,
    /// Received throughput so far, GB/s (10⁹ bytes per second).
    pub gb_per_s: f64,
    /// Drain latency so far.
    pub latency: LatencySummary,
    /// Records dropped so far (drop mode).
    pub records_dropped: u64,
}

impl Progress {
    /// The progress of a session that started at `start`, with `channel`'s statistics.
    fn now(channel: &mut Channel, bytes: u64, records: u64, start: Instant) -> Progress {
        let elapsed = start.elapsed();
        let s = channel.stats();
        Progress {
            bytes,
            records,
            elapsed,
            gb_per_s: bytes as f64 / elapsed.as_secs_f64().max(1e-9) / 1e9,
            latency: s.drain_latency,
            records_dropped: s.records_dropped,
        }
    }
}

/// The outcome of [`run`].
#[derive(Clone, Debug, PartialEq)]
pub struct DrainReport {
    /// Records received (and verified, if asked).
    pub records: u64,
    /// Record bytes received, headers included.
    pub bytes: u64,
    /// Records the producer wrote (committed).
    pub records_written: u64,
    /// Records dropped (drop mode), as the producer saw them.
    pub records_dropped: u64,
    /// From the first record produced to the last one received.
    pub elapsed: Duration,
    /// `bytes / elapsed`, GB/s.
    pub gb_per_s: f64,
    /// CPU time of the reading thread (the drain path on the CPU), if the OS reports it.
    pub reader_cpu: Option<Duration>,
    /// The channel's counters at the end.
    pub stats: Stats,
    /// For [`ProducerKind::Kernel`]: whether the instrumented kernel's own results (`out[]`)
    /// equal the host's reference; `None` for other producers.
    pub application_results_ok: Option<bool>,
    /// For [`ProducerKind::Kernel`]: records the reader received while the kernel was still
    /// running (the proof that data moves during a kernel).
    pub records_during_kernel: u64,
}

/// CPU time the calling thread has used (from `/proc/thread-self/schedstat`).
pub fn thread_cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

struct ProducerOutcome {
    written: AtomicU64,
    dropped: AtomicU64,
    kernels_done: AtomicU64,
    done: AtomicBool,
}

/// Runs a drain session on `gpu`: builds the channel, produces `total_bytes` of synthetic
/// records on another thread, reads them here (checking order and checksums when
/// `verify`), calls `progress` every `progress_every` and once at the end, and reports.
pub fn run(
    gpu: &Gpu,
    config: &DrainConfig,
    mut progress: impl FnMut(&Progress),
) -> Result<DrainReport> {
    // Before any queue exists: the events see only what happens after they are created.
    let stops = StopNotices::new(gpu);
    let mut channel = Channel::new(gpu, config.channel.clone())?;
    let source = SynthSource::new(config.record_payload)?;
    let reference = source.clone();
    let max = channel.layout().max_payload();
    if config.record_payload > max {
        return Err(Error::config(format!(
            "{}-byte records do not fit {}-byte slots (at most {max})",
            config.record_payload, config.channel.slot_size
        )));
    }
    let record_size = crate::layout::record_size(config.record_payload);
    let records_total = config.total_bytes.div_ceil(record_size);
    let per_kernel = u64::from(config.records_per_kernel.max(1));
    let kernels = records_total.div_ceil(per_kernel);
    let kernel_end = config.channel.trigger == Trigger::KernelEnd;
    // The word each "kernel" bumps at its end, as an application's completion signal.
    let completion = Arc::new(gpu.alloc(MemoryKind::Gtt, 4096)?);
    let completion_addr = completion.gpu_addr(0);
    let outcome = Arc::new(ProducerOutcome {
        written: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
        kernels_done: AtomicU64::new(0),
        done: AtomicBool::new(false),
    });
    let start = Instant::now();
    let kernel = match config.producer {
        ProducerKind::Kernel => {
            let work = kernel_work(config, records_total)?;
            let d = TracedDispatch::start(gpu, work, Some(&channel))?;
            if kernel_end {
                channel.drain_at(SignalWait::hsa_completion(d.completion().signal_address()))?;
            }
            Some(d)
        }
        _ => None,
    };
    let producer_thread = if kernel.is_some() {
        None
    } else {
        Some({
            let outcome = outcome.clone();
            let timeout = config.channel.producer_timeout;
            match config.producer {
                ProducerKind::HostThread => {
                    let mut producer = channel.host_producer(1);
                    let completion = completion.clone();
                    let mut source = source;
                    let len = config.record_payload;
                    std::thread::Builder::new()
                        .name("drain-producer".into())
                        .spawn(move || -> Result<()> {
                            let r = (|| {
                                for k in 0..kernels {
                                    let n = per_kernel.min(records_total - k * per_kernel);
                                    for _ in 0..n {
                                        match producer.produce_with(SYNTH_KIND, len, |s| {
                                            source.write_next(s).map(drop)
                                        })? {
                                            Produced::Written { .. } => {
                                                outcome.written.fetch_add(1, Ordering::Relaxed);
                                            }
                                            Produced::Dropped => {
                                                source.skip();
                                                outcome.dropped.fetch_add(1, Ordering::Relaxed);
                                            }
                                        }
                                    }
                                    completion.store_u32(0, (k + 1) as u32)?;
                                    outcome.kernels_done.store(k + 1, Ordering::Release);
                                }
                                Ok(())
                            })();
                            outcome.done.store(true, Ordering::Release);
                            r
                        })
                }
                ProducerKind::Pm4 => {
                    let mut producer = channel.pm4_producer(1)?;
                    let mut source = source;
                    std::thread::Builder::new()
                        .name("drain-producer".into())
                        .spawn(move || -> Result<()> {
                            let r = (|| {
                                let mut payloads = Vec::new();
                                for k in 0..kernels {
                                    let n = per_kernel.min(records_total - k * per_kernel);
                                    payloads.clear();
                                    for _ in 0..n {
                                        let mut buf = Vec::new();
                                        source.next_payload(&mut buf);
                                        payloads.push(buf);
                                    }
                                    let recs: Vec<(u16, &[u8])> = payloads
                                        .iter()
                                        .map(|p| (SYNTH_KIND, p.as_slice()))
                                        .collect();
                                    producer.run(
                                        &recs,
                                        Some(Completion {
                                            address: completion_addr,
                                            value: (k + 1) as u32,
                                        }),
                                        timeout,
                                    )?;
                                    outcome.written.fetch_add(n, Ordering::Relaxed);
                                    outcome.kernels_done.store(k + 1, Ordering::Release);
                                }
                                producer.wait(timeout)?;
                                Ok(())
                            })();
                            outcome.done.store(true, Ordering::Release);
                            r
                        })
                }
                ProducerKind::Kernel => unreachable_kernel(),
            }
            .map_err(|e| Error::config(format!("cannot start the producer thread: {e}")))?
        })
    };
    let cpu0 = thread_cpu_time();
    let mut traced = kernel
        .as_ref()
        .map(|k| TracedCheck::new(*k.work(), config.channel.loss == LossPolicy::Drop));
    let mut records_during_kernel = 0u64;
    let mut check = if config.channel.loss == LossPolicy::Drop {
        SynthCheck::with_gaps()
    } else {
        SynthCheck::in_order()
    };
    if config.verify == Verify::Exact {
        check = check.exact(&reference);
    }
    let mut records = 0u64;
    let mut bytes = 0u64;
    let mut watched = 0u64;
    let mut last_progress = Instant::now();
    let mut last_record = start;
    let result = (|| -> Result<()> {
        loop {
            if let Some(k) = &kernel {
                if !outcome.done.load(Ordering::Acquire) && k.is_complete()? {
                    // The kernel ended: what it committed is what the reader must see.
                    let s = channel.stats();
                    outcome.written.store(s.records_produced, Ordering::Release);
                    outcome.dropped.store(s.records_dropped, Ordering::Release);
                    outcome.done.store(true, Ordering::Release);
                }
            }
            if kernel_end && kernel.is_none() {
                // Keep a few kernel ends queued ahead of the producer.
                while watched < kernels
                    && watched < outcome.kernels_done.load(Ordering::Acquire) + 8
                {
                    channel.drain_at(SignalWait::new(
                        completion_addr,
                        Condition::GreaterEqual,
                        (watched + 1) as u32,
                    ))?;
                    watched += 1;
                }
            }
            let done = outcome.done.load(Ordering::Acquire);
            let written = outcome.written.load(Ordering::Acquire);
            if done && records >= written {
                return Ok(());
            }
            let got = match channel.next_chunk(Some(Duration::from_millis(50)))? {
                Some(chunk) => {
                    // Looked at after the slot arrived: its records reached the reader while
                    // the kernel was still running.
                    let kernel_running = match &kernel {
                        Some(k) => !k.is_complete()?,
                        None => false,
                    };
                    for r in chunk.records() {
                        let r = r.map_err(|e| Error::corrupt(chunk.generation(), e.to_string()))?;
                        if config.verify != Verify::Off {
                            match traced.as_mut() {
                                Some(t) => t.check(&r)?,
                                None => check.check(&r).map(drop)?,
                            }
                        }
                        records += 1;
                        bytes += r.size();
                        if kernel_running {
                            records_during_kernel += 1;
                        }
                    }
                    last_record = Instant::now();
                    true
                }
                None => false,
            };
            if !got {
                // Nothing came: a queue the session needs may have stopped for good.
                stops.check()?;
                if let Some(k) = &kernel {
                    if k.queue().error_payload() != 0 {
                        return Err(Error::config(format!(
                            "the kernel's queue reported error payload {:#x} (a wave trapped or \
                             faulted): it will not finish",
                            k.queue().error_payload()
                        )));
                    }
                }
            }
            if !got && done {
                // The producer finished; close its last partial slot.
                channel.flush()?;
            }
            if last_progress.elapsed() >= config.progress_every {
                last_progress = Instant::now();
                progress(&Progress::now(&mut channel, bytes, records, start));
            }
        }
    })();
    if result.is_ok() {
        // The last report says 100%, also for a session shorter than `progress_every`.
        progress(&Progress::now(&mut channel, bytes, records, start));
    }
    let cpu1 = thread_cpu_time();
    if let Err(e) = result {
        // Let a waiting producer see the channel close.
        drop(channel);
        if let Some(t) = producer_thread {
            let _ = t.join();
        }
        return Err(e);
    }
    if let Some(t) = producer_thread {
        let produced = t
            .join()
            .map_err(|_| Error::config("the producer thread panicked"))?;
        produced?;
    }
    let application_results_ok = match &kernel {
        Some(k) => Some(k.results()? == k.work().reference()),
        None => None,
    };
    let elapsed = last_record.duration_since(start);
    let stats = channel.stats();
    // The watch queue polls the completion word: the channel goes first.
    drop(channel);
    drop(completion);
    Ok(DrainReport {
        records,
        bytes,
        records_written: outcome.written.load(Ordering::Acquire),
        records_dropped: outcome.dropped.load(Ordering::Acquire),
        elapsed,
        gb_per_s: bytes as f64 / elapsed.as_secs_f64().max(1e-9) / 1e9,
        reader_cpu: cpu0.zip(cpu1).map(|(a, b)| b.saturating_sub(a)),
        stats,
        application_results_ok,
        records_during_kernel,
    })
}

/// The driver's notices that the session's queues will not go on: a GPU memory fault (amdkfd
/// evicts the process's queues) and a queue the GPU stopped (the model sets QUEUE_EVENT
/// events then). Looked at whenever the reader waited in vain, so a stopped queue ends the
/// session with its error instead of a wait without end.
struct StopNotices {
    memory: Option<Event>,
    queue: Option<Event>,
}

impl StopNotices {
    fn new(gpu: &Gpu) -> Self {
        let kfd = gpu.kfd();
        StopNotices {
            memory: kfd.create_event(EventKind::MemoryException, false).ok(),
            queue: kfd.create_event(EventKind::QueueEvent, false).ok(),
        }
    }

    fn check(&self) -> Result<()> {
        if let Some(e) = &self.memory {
            if let Some(EventData::MemoryException(m)) = e.wait_data(Some(Duration::ZERO))? {
                return Err(Error::config(format!(
                    "GPU memory fault at {:#x} on GPU {:#x}{}: the driver stopped the session's \
                     queues",
                    m.va,
                    m.gpu_id,
                    if m.not_present {
                        " (page not present)"
                    } else {
                        ""
                    }
                )));
            }
        }
        if let Some(e) = &self.queue {
            if e.wait(Some(Duration::ZERO))? == WaitStatus::Signaled {
                return Err(Error::config(
                    "the GPU stopped one of the session's queues (the driver's log says why)",
                ));
            }
        }
        Ok(())
    }
}

/// The `traced_work` dispatch that produces `records_total` records of `config`'s payload.
fn kernel_work(config: &DrainConfig, records_total: u64) -> Result<TracedWork> {
    if config.record_payload % 4 != 0 || config.record_payload < 24 {
        return Err(Error::config(format!(
            "the kernel producer writes payloads of whole words, at least 24 bytes (wave, step, \
             time, value, checksum); {} bytes do not fit",
            config.record_payload
        )));
    }
    let waves = config.kernel_waves.clamp(1, 0xFFFF);
    let per_wave = u32::try_from(records_total.div_ceil(u64::from(waves))).map_err(|_| {
        Error::config(format!(
            "{records_total} records are too many for {waves} waves"
        ))
    })?;
    Ok(TracedWork {
        waves,
        rounds: 1,
        records: per_wave,
        payload_words: config.record_payload / 4,
    })
}

/// The kernel producer runs on the GPU, never on a producer thread.
fn unreachable_kernel() -> std::io::Result<std::thread::JoinHandle<Result<()>>> {
    Err(std::io::Error::other(
        "the kernel producer has no producer thread",
    ))
}
