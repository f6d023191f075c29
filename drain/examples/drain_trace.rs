//! A trace drain session: a producer writes sequence-numbered, checksummed records into a
//! GPU-side buffer while the channel's own SDMA (or PM4) queue drains full slots to the CPU;
//! the reader checks every record and reports throughput, drain latency and the counters.
//!
//! ```sh
//! cargo run --release -p drain --example drain_trace                 # 256 MiB, on-full, SDMA
//! cargo run --release -p drain --example drain_trace -- --trigger periodic --wait poll
//! cargo run --release -p drain --example drain_trace -- --trigger kernel-end --producer pm4
//! cargo run --release -p drain --example drain_trace -- --loss drop --mib 64
//! cargo run --release -p drain --example drain_trace -- --producer kernel --mib 1 --slot-kib 4 --record 56
//! RUST_LOG=drain=debug cargo run -p drain --example drain_trace -- --mib 16
//! KFD_DEVICE=/dev/kfd cargo run --release -p drain --example drain_trace   # a real GPU
//! ```

use drain::{
    ChannelConfig, DrainConfig, DrainEngine, LossPolicy, ProducerKind, Trigger, Verify,
    WaitStrategy,
};
use std::time::Duration;

fn usage() -> ! {
    eprintln!(
        "usage: drain_trace [--mib N] [--slot-kib N] [--slots N] [--record N]\n\
         \x20                  [--trigger on-full|periodic|kernel-end] [--period-ms N]\n\
         \x20                  [--wait event|poll] [--loss lossless|drop] [--engine sdma|pm4]\n\
         \x20                  [--producer host|pm4|kernel] [--no-verify | --exact]"
    );
    std::process::exit(2)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    let mut mib = 256u64;
    let mut slot_kib = 1024u32;
    let mut slots = 8u32;
    let mut record = None;
    let mut trigger = "on-full".to_string();
    let mut period_ms = 2u64;
    let mut wait = WaitStrategy::Event;
    let mut loss = LossPolicy::Lossless;
    let mut engine = DrainEngine::Sdma;
    let mut producer = ProducerKind::HostThread;
    let mut verify = Verify::Checksum;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--mib" => mib = value().parse()?,
            "--slot-kib" => slot_kib = value().parse()?,
            "--slots" => slots = value().parse()?,
            "--record" => record = Some(value().parse::<u32>()?),
            "--trigger" => trigger = value(),
            "--period-ms" => period_ms = value().parse()?,
            "--wait" => {
                wait = match value().as_str() {
                    "event" => WaitStrategy::Event,
                    "poll" => WaitStrategy::Poll,
                    _ => usage(),
                }
            }
            "--loss" => {
                loss = match value().as_str() {
                    "lossless" => LossPolicy::Lossless,
                    "drop" => LossPolicy::Drop,
                    _ => usage(),
                }
            }
            "--engine" => {
                engine = match value().as_str() {
                    "sdma" => DrainEngine::Sdma,
                    "pm4" => DrainEngine::Pm4,
                    _ => usage(),
                }
            }
            "--producer" => {
                producer = match value().as_str() {
                    "host" => ProducerKind::HostThread,
                    "pm4" => ProducerKind::Pm4,
                    "kernel" => ProducerKind::Kernel,
                    _ => usage(),
                }
            }
            "--no-verify" => verify = Verify::Off,
            "--exact" => verify = Verify::Exact,
            _ => usage(),
        }
    }
    let trigger = match trigger.as_str() {
        "on-full" => Trigger::OnFull,
        "periodic" => Trigger::Periodic(Duration::from_millis(period_ms)),
        "kernel-end" => Trigger::KernelEnd,
        _ => usage(),
    };
    let slot_size = slot_kib.saturating_mul(1024);
    let channel = ChannelConfig::new(slot_size, slots)
        .trigger(trigger)
        .wait(wait)
        .loss(loss)
        .engine(engine);
    let mut config = DrainConfig::new(channel, mib << 20);
    config.producer = producer;
    config.verify = verify;
    if let Some(r) = record {
        config.record_payload = r;
    }

    let kfd = thunk::Kfd::open_with(thunk::OpenOptions::from_env()?)?;
    let gpu = kfd.gpu(0).ok_or("no GPU")?;
    println!(
        "{}: {} slots of {} KiB, {:?}, {:?} waits, {:?}, {:?} drain queue, {:?} producer, {}-byte records",
        kfd.backend().describe(),
        slots,
        slot_kib,
        trigger,
        wait,
        loss,
        engine,
        producer,
        config.record_payload
    );
    let report = drain::run(&gpu, &config, |p| {
        println!(
            "  {:>8.1} MiB  {:>6.2} GB/s  latency {}  dropped {}",
            p.bytes as f64 / (1 << 20) as f64,
            p.gb_per_s,
            p.latency,
            p.records_dropped
        );
    })?;
    let s = &report.stats;
    println!(
        "drained {} records, {:.1} MiB in {:.3} s: {:.2} GB/s{}",
        report.records,
        report.bytes as f64 / (1 << 20) as f64,
        report.elapsed.as_secs_f64(),
        report.gb_per_s,
        match verify {
            Verify::Off => "",
            Verify::Checksum => ", every sequence number and checksum checked",
            Verify::Exact => ", every sequence number checked, every payload compared",
        }
    );
    println!(
        "produced {} records ({} bytes), dropped {} records ({} bytes), {} slots drained, {} flushes",
        s.records_produced, s.bytes_produced, s.records_dropped, s.bytes_dropped, s.slots_drained, s.flushes
    );
    println!("drain latency: {}", s.drain_latency);
    if let Some(cpu) = report.reader_cpu {
        let gib = report.bytes as f64 / (1u64 << 30) as f64;
        println!(
            "reader CPU time: {:.1} ms ({:.1} ms per GiB)",
            cpu.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3 / gib.max(1e-12)
        );
    }
    Ok(())
}
