//! Benchmarks of the drain path on the in-process model:
//!
//! * `throughput/memcpy_1MiB` — single-thread `memcpy` of 1 MiB blocks over the same
//!   footprint as the channel (16 source, 16 destination blocks): the baseline.
//! * `throughput/drain_1MiB_slots_{event,poll}` — slots of 1 MiB drained by the SDMA queue
//!   and taken zero-copy by the reader; the producer only writes each slot's record header
//!   (the payload stays), so the drain's own copy and signalling are measured.
//! * `throughput/end_to_end_1MiB_slots` — the same with a producer that writes every byte.
//! * `throughput/interleaved/{event,poll}` (printed) — memcpy and drain alternated, 64 MiB
//!   each, 20 rounds: the drain/memcpy ratio per round, robust to a machine shared with
//!   other work.
//! * `latency/commit_to_visible_{event,poll}` — a record's commit (the one that makes its
//!   slot full) until the reader holds the drained slot.
//! * `cpu/drain_path_1MiB_slot_{event,poll}` — CPU time of the reading thread per drained
//!   1 MiB slot (× 1024 = per GiB); the producer thread and the model's engine thread (the
//!   "GPU") are not counted.
//!
//! * `kernel/drain_64KiB` — an instrumented kernel (`traced_work`, 4 waves, the device
//!   producer library linked in by the loader) writing 64 KiB of 64-byte records through 4
//!   slots of 4 KiB while the reader verifies them: GB/s, and records/s and reader CPU per GiB
//!   printed.
//! * `kernel/traced_work_{plain,instrumented}` — the same kernel without and with
//!   instrumentation (a record per wave every 16 iterations), dispatch to completion: the
//!   instrumentation's overhead (the model's interpreter runs the waves).
//!
//! `cargo bench -p drain -- --warm-up-time 1 --measurement-time 3`. The latency and CPU
//! benchmarks also print percentiles and per-GiB figures on stderr.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use drain::{thread_cpu_time, Channel, ChannelConfig, WaitStrategy};
use std::time::{Duration, Instant};
use thunk::{Kfd, OpenOptions, Preset};

const MIB: usize = 1 << 20;
const SLOTS: u32 = 16;

fn gpu() -> (Kfd, thunk::Gpu) {
    let kfd = Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1)).expect("model");
    let gpu = kfd.gpu(0).expect("gpu");
    (kfd, gpu)
}

fn channel(gpu: &thunk::Gpu, slot: u32, wait: WaitStrategy) -> Channel {
    Channel::new(gpu, ChannelConfig::new(slot, SLOTS).wait(wait)).expect("channel")
}

/// Drains `slots` full slots: a producer thread closes each with one slot-sized record
/// (writing the payload only if `write_payload`), this thread takes each chunk.
fn drain_slots(ch: &mut Channel, slots: u64, write_payload: bool, payload: &[u8]) -> Duration {
    let mut p = ch.host_producer(1);
    let max = p.max_payload();
    std::thread::scope(|s| {
        let start = Instant::now();
        s.spawn(move || {
            for _ in 0..slots {
                p.produce_with(1, max, |space| {
                    if write_payload {
                        space.write(0, &payload[..max as usize])
                    } else {
                        Ok(())
                    }
                })
                .expect("produce");
            }
        });
        for _ in 0..slots {
            let c = ch
                .next_chunk(Some(Duration::from_secs(30)))
                .expect("read")
                .expect("chunk");
            assert_eq!(c.len(), max as usize + 8);
        }
        start.elapsed()
    })
}

fn throughput(c: &mut Criterion) {
    let (_kfd, gpu) = gpu();
    let mut g = c.benchmark_group("throughput");
    g.throughput(Throughput::Bytes(MIB as u64));
    let src = vec![0x5Au8; MIB * SLOTS as usize];
    let mut dst = vec![0u8; MIB * SLOTS as usize];
    let mut i = 0usize;
    g.bench_function("memcpy_1MiB", |b| {
        b.iter(|| {
            let k = i % SLOTS as usize;
            let j = (i * 3 + 1) % SLOTS as usize;
            dst[j * MIB..(j + 1) * MIB].copy_from_slice(&src[k * MIB..(k + 1) * MIB]);
            i += 1;
            std::hint::black_box(&dst);
        })
    });
    let payload = vec![0xA5u8; MIB];
    for (name, wait) in [("event", WaitStrategy::Event), ("poll", WaitStrategy::Poll)] {
        let mut ch = channel(&gpu, MIB as u32, wait);
        g.bench_function(BenchmarkId::new("drain_1MiB_slots", name), |b| {
            b.iter_custom(|iters| drain_slots(&mut ch, iters, false, &payload))
        });
    }
    let mut ch = channel(&gpu, MIB as u32, WaitStrategy::Event);
    g.bench_function("end_to_end_1MiB_slots", |b| {
        b.iter_custom(|iters| drain_slots(&mut ch, iters, true, &payload))
    });
    g.finish();
    // The machine is shared: a baseline measured minutes apart from the drain compares two
    // different machines. So also alternate the two, 64 MiB each, and compare round by round.
    for (name, wait) in [("event", WaitStrategy::Event), ("poll", WaitStrategy::Poll)] {
        let mut ch = channel(&gpu, MIB as u32, wait);
        let mut ratios = Vec::new();
        let (mut m_total, mut d_total) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..20 {
            let t = Instant::now();
            for i in 0..64usize {
                let k = i % SLOTS as usize;
                let j = (i * 3 + 1) % SLOTS as usize;
                dst[j * MIB..(j + 1) * MIB].copy_from_slice(&src[k * MIB..(k + 1) * MIB]);
                std::hint::black_box(&dst);
            }
            let m = t.elapsed();
            let d = drain_slots(&mut ch, 64, false, &payload);
            m_total += m;
            d_total += d;
            ratios.push(m.as_secs_f64() / d.as_secs_f64());
        }
        ratios.sort_by(f64::total_cmp);
        let gib = |t: Duration| 20.0 * 64.0 / 1024.0 / t.as_secs_f64();
        eprintln!(
            "throughput/interleaved/{name}: memcpy {:.2} GiB/s, drain {:.2} GiB/s; drain/memcpy per round: median {:.0}%, min {:.0}%, max {:.0}%",
            gib(m_total),
            gib(d_total),
            ratios[ratios.len() / 2] * 100.0,
            ratios[0] * 100.0,
            ratios[ratios.len() - 1] * 100.0
        );
    }
}

fn percentile(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    // Empty when a benchmark filter skipped the measurement.
    let at = (v.len().saturating_sub(1) as f64 * q).round() as usize;
    v.get(at).copied().unwrap_or_default()
}

fn latency(c: &mut Criterion) {
    let (_kfd, gpu) = gpu();
    let mut g = c.benchmark_group("latency");
    for (name, wait) in [("event", WaitStrategy::Event), ("poll", WaitStrategy::Poll)] {
        let mut ch = channel(&gpu, 4096, wait);
        let mut p = ch.host_producer(1);
        let max = p.max_payload();
        let mut samples = Vec::new();
        g.bench_function(BenchmarkId::new("commit_to_visible", name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    // One record fills the slot: its commit makes the slot full.
                    p.produce_with(1, max, |_| Ok(())).expect("produce");
                    let committed = Instant::now();
                    let c = ch
                        .next_chunk(Some(Duration::from_secs(10)))
                        .expect("read")
                        .expect("chunk");
                    let seen = committed.elapsed();
                    drop(c);
                    samples.push(seen);
                    total += seen;
                }
                total
            })
        });
        let n = samples.len();
        eprintln!(
            "latency/commit_to_visible/{name}: {n} samples, p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs",
            percentile(&mut samples, 0.5).as_secs_f64() * 1e6,
            percentile(&mut samples, 0.9).as_secs_f64() * 1e6,
            percentile(&mut samples, 0.99).as_secs_f64() * 1e6,
        );
        eprintln!(
            "  channel's own drain latency (full → seen): {}",
            ch.stats().drain_latency
        );
    }
    g.finish();
}

fn cpu(c: &mut Criterion) {
    let (_kfd, gpu) = gpu();
    let mut g = c.benchmark_group("cpu");
    let payload = vec![0u8; MIB];
    for (name, wait) in [("event", WaitStrategy::Event), ("poll", WaitStrategy::Poll)] {
        let mut ch = channel(&gpu, MIB as u32, wait);
        let (mut cpu_total, mut slots_total) = (Duration::ZERO, 0u64);
        g.bench_function(BenchmarkId::new("drain_path_1MiB_slot", name), |b| {
            b.iter_custom(|iters| {
                let before = thread_cpu_time().unwrap_or_default();
                drain_slots(&mut ch, iters, false, &payload);
                let used = thread_cpu_time().unwrap_or_default().saturating_sub(before);
                cpu_total += used;
                slots_total += iters;
                used
            })
        });
        eprintln!(
            "cpu/drain_path/{name}: {:.1} ms of reader CPU per GiB drained ({slots_total} slots)",
            cpu_total.as_secs_f64() * 1e3 * 1024.0 / slots_total.max(1) as f64
        );
    }
    g.finish();
}

fn kernel(c: &mut Criterion) {
    let (_kfd, gpu) = gpu();
    if let Err(e) = drain::device::producer_library("gfx900") {
        eprintln!("kernel benchmarks skipped: {e}");
        return;
    }
    let mut g = c.benchmark_group("kernel");
    g.sample_size(10);
    const TOTAL: u64 = 64 << 10;
    g.throughput(Throughput::Bytes(TOTAL));
    let mut config = drain::DrainConfig::new(ChannelConfig::new(4096, 4), TOTAL);
    config.producer = drain::ProducerKind::Kernel;
    config.record_payload = 56;
    config.kernel_waves = 4;
    let (mut bytes, mut records, mut cpu, mut busy) = (0u64, 0u64, Duration::ZERO, Duration::ZERO);
    g.bench_function("drain_64KiB", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let r = drain::run(&gpu, &config, |_| {}).expect("kernel drain");
                assert_eq!(r.application_results_ok, Some(true));
                total += r.elapsed;
                bytes += r.bytes;
                records += r.records;
                cpu += r.reader_cpu.unwrap_or_default();
                busy += r.elapsed;
            }
            total
        })
    });
    eprintln!(
        "kernel/drain_64KiB: {:.0} records/s, {:.4} GB/s, reader CPU {:.0} ms per GiB ({records} records)",
        records as f64 / busy.as_secs_f64().max(1e-9),
        bytes as f64 / busy.as_secs_f64().max(1e-9) / 1e9,
        cpu.as_secs_f64() * 1e3 * f64::from(1u32 << 30) / bytes.max(1) as f64
    );
    let work = drain::device::TracedWork {
        waves: 4,
        rounds: 16,
        records: 64,
        payload_words: 14,
    };
    g.throughput(Throughput::Elements(u64::from(work.waves * work.records)));
    for instrumented in [false, true] {
        let name = if instrumented {
            "traced_work_instrumented"
        } else {
            "traced_work_plain"
        };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut ch = Channel::new(&gpu, ChannelConfig::new(4096, 4)).expect("channel");
                    let d = drain::device::TracedDispatch::start(
                        &gpu,
                        work,
                        instrumented.then_some(&ch),
                    )
                    .expect("dispatch");
                    let t = Instant::now();
                    let mut end = None;
                    loop {
                        if end.is_none() && d.is_complete().expect("signal") {
                            end = Some(t.elapsed());
                            ch.flush().expect("flush");
                        }
                        let got = ch
                            .next_chunk(Some(Duration::from_millis(1)))
                            .expect("read")
                            .is_some();
                        if !got && end.is_some() && ch.stats().slots_in_flight == 0 {
                            break;
                        }
                    }
                    total += end.unwrap_or_default();
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = throughput, latency, cpu, kernel
}
criterion_main!(benches);
