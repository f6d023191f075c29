//! `kfd drain`: runs a drain channel — a chosen producer writing synthetic trace records
//! into a GPU buffer of N slots of S bytes, the channel's own raw queue draining full slots
//! to host memory, a reader verifying every record — with a live progress line on a terminal
//! (bytes, GB/s, drain latency) and a final report (`--json` for scripts).
//!
//! It is [`drain::run`] with every knob on the command line; argument mistakes (a slot size
//! that is not a multiple of 256, records that do not fit a slot …) are refused before
//! anything runs, with drain's own explanation.

use std::time::Duration;

use drain::{
    ChannelConfig, DrainConfig, DrainEngine, DrainReport, LossPolicy, ProducerKind, Trigger,
    Verify, WaitStrategy,
};
use serde::Serialize;

use crate::device::{DeviceArgs, Source};
use crate::error::{CliError, CliResult};
use crate::mqd_tool::parse_number;
use crate::output::{Out, Style, Tone};
use crate::progress::{bar, ProgressLine};
use crate::units;

/// Who writes the records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProducerChoice {
    /// A CPU thread writing into the GPU buffer with the device protocol.
    #[default]
    Host,
    /// PM4 programs on a compute queue (WRITE_DATA / DMA_DATA), as a kernel would.
    Pm4,
    /// An instrumented kernel (`traced_work`) calling drain's device producer library, which
    /// the loader links in; drained while it runs (needs clang-15 and ld.lld-15).
    Kernel,
}

/// When slots drain (besides when full).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TriggerChoice {
    /// Only full slots drain.
    #[default]
    OnFull,
    /// Also close the slot being filled every `--period`.
    Periodic,
    /// Also close it when a "kernel" of `--records-per-kernel` records ends.
    KernelEnd,
}

/// How the reader waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitChoice {
    /// Sleep in WAIT_EVENTS on the channel's event.
    #[default]
    Event,
    /// Spin on the drain fence (lowest latency, costs a CPU).
    Poll,
}

/// Which engine runs the drain programs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// An SDMA queue.
    #[default]
    Sdma,
    /// A PM4 compute queue.
    Pm4,
}

/// What producers do when no slot is free.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LossChoice {
    /// Wait: nothing is lost.
    #[default]
    Lossless,
    /// Drop and count.
    Drop,
}

/// How records are checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum VerifyChoice {
    /// Only the framing is parsed.
    Off,
    /// Sequence numbers in order, checksums recomputed.
    #[default]
    Checksum,
    /// Every payload compared byte for byte.
    Exact,
}

/// What `kfd drain` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct DrainArgs {
    /// Where to run.
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Who writes the records.
    #[arg(long, value_enum, default_value_t = ProducerChoice::Host)]
    pub producer: ProducerChoice,
    /// Slot size in bytes: a multiple of 256 (K/M/G suffixes).
    #[arg(long, value_name = "BYTES", value_parser = parse_number, default_value = "1M")]
    pub slot_size: u64,
    /// Device slots (at least 2).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub slots: u32,
    /// Host slots: drained slots that may wait for the reader [default: --slots].
    #[arg(long, value_name = "N")]
    pub host_slots: Option<u32>,
    /// When partly filled slots drain too.
    #[arg(long, value_enum, default_value_t = TriggerChoice::OnFull)]
    pub trigger: TriggerChoice,
    /// The period of `--trigger periodic` (`2ms`, `500us`, `1s`).
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "2ms")]
    pub period: Duration,
    /// Record bytes to move, headers included (K/M/G suffixes) [default: 256M; 1M with
    /// `--producer kernel`, whose waves run in the model's interpreter].
    #[arg(long, value_name = "BYTES", value_parser = parse_number)]
    pub total: Option<u64>,
    /// Waves of the instrumented kernel (`--producer kernel`); the records are split evenly.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub waves: u32,
    /// Payload bytes per record: a multiple of 8, at least 16 [default: about a quarter slot].
    #[arg(long, value_name = "BYTES", value_parser = parse_number)]
    pub record_size: Option<u64>,
    /// Records per "kernel" (kernel-end trigger points; the size of each PM4 program).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub records_per_kernel: u32,
    /// How the reader waits.
    #[arg(long, value_enum, default_value_t = WaitChoice::Event)]
    pub wait: WaitChoice,
    /// Which engine drains.
    #[arg(long, value_enum, default_value_t = EngineChoice::Sdma)]
    pub engine: EngineChoice,
    /// What producers do when the buffer is full.
    #[arg(long, value_enum, default_value_t = LossChoice::Lossless)]
    pub loss: LossChoice,
    /// How every record is checked.
    #[arg(long, value_enum, default_value_t = VerifyChoice::Checksum)]
    pub verify: VerifyChoice,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `2ms`, `500us`/`500µs`, `1.5s`, `250ns`; a bare number is milliseconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (like 2ms, 500us, 1s)"))?;
    let seconds = match unit.trim() {
        "" | "ms" => value / 1e3,
        "s" => value,
        "us" | "µs" => value / 1e6,
        "ns" => value / 1e9,
        other => {
            return Err(format!(
                "'{other}' in '{s}' is not a time unit (use s, ms, us or ns)"
            ))
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("'{s}' is out of range"))
}

impl DrainArgs {
    /// The session these arguments describe, checked: every refusal is a usage error that
    /// says what to change.
    pub fn config(&self) -> CliResult<DrainConfig> {
        let slot_size = u32::try_from(self.slot_size).map_err(|_| {
            CliError::usage(format!(
                "--slot-size {} is above the largest slot of 1 GiB",
                self.slot_size
            ))
        })?;
        let trigger = match self.trigger {
            TriggerChoice::OnFull => Trigger::OnFull,
            TriggerChoice::Periodic => Trigger::Periodic(self.period),
            TriggerChoice::KernelEnd => Trigger::KernelEnd,
        };
        let mut channel = ChannelConfig::new(slot_size, self.slots)
            .trigger(trigger)
            .wait(match self.wait {
                WaitChoice::Event => WaitStrategy::Event,
                WaitChoice::Poll => WaitStrategy::Poll,
            })
            .engine(match self.engine {
                EngineChoice::Sdma => DrainEngine::Sdma,
                EngineChoice::Pm4 => DrainEngine::Pm4,
            })
            .loss(match self.loss {
                LossChoice::Lossless => LossPolicy::Lossless,
                LossChoice::Drop => LossPolicy::Drop,
            });
        if let Some(h) = self.host_slots {
            channel = channel.host_slots(h);
        }
        channel
            .validate()
            .map_err(|e| CliError::usage(e.to_string().trim_start_matches("drain: ").to_owned()))?;
        let total = self.total.unwrap_or(match self.producer {
            ProducerChoice::Kernel => 1 << 20,
            _ => 256 << 20,
        });
        if total == 0 {
            return Err(CliError::usage("--total 0: nothing to drain"));
        }
        if self.producer == ProducerChoice::Kernel && !(1..=0xFFFF).contains(&self.waves) {
            return Err(CliError::usage(format!(
                "--waves {}: the kernel producer runs 1 to 65535 waves",
                self.waves
            )));
        }
        if self.records_per_kernel == 0 {
            return Err(CliError::usage(
                "--records-per-kernel 0: a kernel writes at least one record",
            ));
        }
        let mut config = DrainConfig::new(channel, total);
        config.kernel_waves = self.waves;
        if self.record_size.is_none() {
            // Records of about the default size that add up to exactly --total.
            let most = slot_size.saturating_sub(72);
            if let Some(payload) = payload_filling(total, config.record_payload, most) {
                config.record_payload = payload;
            }
        }
        if let Some(size) = self.record_size {
            let most = slot_size.saturating_sub(72);
            let payload = u32::try_from(size)
                .ok()
                .filter(|p| *p >= 16 && p % 8 == 0 && *p <= most)
                .ok_or_else(|| {
                    CliError::usage(format!(
                        "--record-size {size}: a payload is a multiple of 8 from 16 to {most} bytes with {} slots",
                        units::bytes(slot_size.into())
                    ))
                })?;
            config.record_payload = payload;
        }
        if self.producer == ProducerChoice::Kernel && config.record_payload < 24 {
            return Err(CliError::usage(format!(
                "--record-size {}: a kernel record carries wave, step, time, value and checksum: at least 24 bytes",
                config.record_payload
            )));
        }
        config.producer = match self.producer {
            ProducerChoice::Host => ProducerKind::HostThread,
            ProducerChoice::Pm4 => ProducerKind::Pm4,
            ProducerChoice::Kernel => ProducerKind::Kernel,
        };
        config.records_per_kernel = self.records_per_kernel;
        config.verify = match self.verify {
            VerifyChoice::Off => Verify::Off,
            VerifyChoice::Checksum => Verify::Checksum,
            VerifyChoice::Exact => Verify::Exact,
        };
        config.progress_every = Duration::from_millis(100);
        Ok(config)
    }
}

/// A record payload near `default` (a multiple of 8 from 24 to `most` bytes) whose records,
/// headers included, add up to exactly `total`; `None` when no count of records near the
/// default's does (the session then rounds up to whole records, and the report says so).
pub fn payload_filling(total: u64, default: u32, most: u32) -> Option<u32> {
    let header = drain::layout::record_size(0);
    let near = total.div_ceil(drain::layout::record_size(default)).max(1);
    // Record counts nearest the default's first, a few either way.
    let counts = (0..64u64).flat_map(|d| [near.checked_sub(d), near.checked_add(d + 1)]);
    counts.flatten().find_map(|records| {
        if records == 0 || total % records != 0 {
            return None;
        }
        let size = total / records;
        let payload = u32::try_from(size.checked_sub(header)?).ok()?;
        (size % 8 == 0 && (24..=most).contains(&payload)).then_some(payload)
    })
}

/// The JSON report.
#[derive(Clone, Debug, Serialize)]
pub struct DrainSummary {
    /// Where it ran.
    pub source: Source,
    /// The session, as run.
    pub config: ConfigSummary,
    /// Records received (and verified).
    pub records: u64,
    /// Record bytes received, headers included.
    pub bytes: u64,
    /// Records the producer committed.
    pub records_written: u64,
    /// Records dropped (drop mode).
    pub records_dropped: u64,
    /// Record bytes dropped.
    pub bytes_dropped: u64,
    /// First record produced to last received, seconds.
    pub elapsed_s: f64,
    /// GB/s (10⁹ bytes per second).
    pub gb_per_s: f64,
    /// CPU time of the reading thread, seconds.
    pub reader_cpu_s: Option<f64>,
    /// Slots that reached host memory.
    pub slots_drained: u64,
    /// Slots closed early (periodic, kernel-end, final flush).
    pub flushes: u64,
    /// Kernel-end watches that completed.
    pub kernel_ends: u64,
    /// Drain latency (slot taken by the engine → seen by the reader), ns.
    pub latency_ns: LatencyNs,
    /// Kernel producer: records the reader had before the kernel ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records_during_kernel: Option<u64>,
    /// Kernel producer: whether the kernel's own results equal the host's reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub application_results_ok: Option<bool>,
    /// Records whose lossless device producer had to wait for a free slot.
    pub producer_stalls: u64,
}

/// The session's settings.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigSummary {
    /// `host`, `pm4` or `kernel`.
    pub producer: &'static str,
    /// Slot bytes.
    pub slot_size: u32,
    /// Device slots.
    pub slots: u32,
    /// Host slots.
    pub host_slots: u32,
    /// `on-full`, `periodic`, `kernel-end`.
    pub trigger: &'static str,
    /// Period of the periodic trigger, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_ms: Option<f64>,
    /// `event` or `poll`.
    pub wait: &'static str,
    /// `sdma` or `pm4`.
    pub engine: &'static str,
    /// `lossless` or `drop`.
    pub loss: &'static str,
    /// `off`, `checksum`, `exact`.
    pub verify: &'static str,
    /// Payload bytes per record.
    pub record_payload: u32,
    /// Records per kernel.
    pub records_per_kernel: u32,
    /// Bytes asked for.
    pub total: u64,
}

/// Percentiles in nanoseconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LatencyNs {
    /// Samples (drained slots).
    pub count: u64,
    /// Median.
    pub p50: Option<u64>,
    /// 90th percentile.
    pub p90: Option<u64>,
    /// 99th percentile.
    pub p99: Option<u64>,
    /// Largest.
    pub max: Option<u64>,
}

fn ns(d: Option<Duration>) -> Option<u64> {
    d.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The settings of `config` for the report.
pub fn config_summary(config: &DrainConfig) -> ConfigSummary {
    let c = &config.channel;
    let (trigger, period_ms) = match c.trigger {
        Trigger::OnFull => ("on-full", None),
        Trigger::Periodic(p) => ("periodic", Some(p.as_secs_f64() * 1e3)),
        Trigger::KernelEnd => ("kernel-end", None),
    };
    ConfigSummary {
        producer: match config.producer {
            ProducerKind::HostThread => "host",
            ProducerKind::Pm4 => "pm4",
            ProducerKind::Kernel => "kernel",
        },
        slot_size: c.slot_size,
        slots: c.slot_count,
        host_slots: c.host_slots,
        trigger,
        period_ms,
        wait: match c.wait {
            WaitStrategy::Event => "event",
            WaitStrategy::Poll => "poll",
        },
        engine: match c.engine {
            DrainEngine::Sdma => "sdma",
            DrainEngine::Pm4 => "pm4",
        },
        loss: match c.loss {
            LossPolicy::Lossless => "lossless",
            LossPolicy::Drop => "drop",
        },
        verify: match config.verify {
            Verify::Off => "off",
            Verify::Checksum => "checksum",
            Verify::Exact => "exact",
        },
        record_payload: config.record_payload,
        records_per_kernel: config.records_per_kernel,
        total: config.total_bytes,
    }
}

/// The report of a finished session.
pub fn summary(source: Source, config: &DrainConfig, r: &DrainReport) -> DrainSummary {
    let l = r.stats.drain_latency;
    DrainSummary {
        source,
        config: config_summary(config),
        records: r.records,
        bytes: r.bytes,
        records_written: r.records_written,
        records_dropped: r.records_dropped,
        bytes_dropped: r.stats.bytes_dropped,
        elapsed_s: r.elapsed.as_secs_f64(),
        gb_per_s: r.gb_per_s,
        reader_cpu_s: r.reader_cpu.map(|d| d.as_secs_f64()),
        slots_drained: r.stats.slots_drained,
        flushes: r.stats.flushes,
        kernel_ends: r.stats.kernel_ends,
        latency_ns: LatencyNs {
            count: l.count,
            p50: ns(l.p50),
            p90: ns(l.p90),
            p99: ns(l.p99),
            max: ns(l.max),
        },
        records_during_kernel: r.application_results_ok.map(|_| r.records_during_kernel),
        application_results_ok: r.application_results_ok,
        producer_stalls: r.stats.producer_stalls,
    }
}

/// GB/s, with MB/s beside it when small (an interpreted kernel producer).
fn rate(gb_per_s: f64) -> String {
    if gb_per_s < 0.1 {
        format!("{gb_per_s:.4} GB/s ({:.2} MB/s)", gb_per_s * 1e3)
    } else {
        format!("{gb_per_s:.2} GB/s")
    }
}

fn opt_ns(v: Option<u64>) -> String {
    v.map_or("-".into(), |n| units::duration(Duration::from_nanos(n)))
}

/// Why the bytes moved differ from `--total`, when they do: whole records (of the payload
/// asked for) do not add up to it.
fn rounding_note(s: &DrainSummary) -> String {
    let asked = s.config.total;
    if s.bytes == asked || s.records_dropped > 0 {
        return String::new();
    }
    format!(
        " ({} asked: rounded up to whole {}-byte records)",
        units::bytes(asked),
        drain::layout::record_size(s.config.record_payload)
    )
}

/// The text report.
pub fn render(s: &DrainSummary, style: Style) -> Vec<String> {
    let c = &s.config;
    let field = |name: &str, value: String| {
        format!(
            "  {} {value}",
            style.paint(Tone::Dim, &format!("{name:<9}"))
        )
    };
    let period = c
        .period_ms
        .map_or(String::new(), |p| format!(" every {p} ms"));
    let mut lines = vec![
        format!(
            "{} {} producer → {} × {} slots, {} drain queue, {}{period} trigger, {} waits, {}",
            style.paint(Tone::Bold, "kfd drain:"),
            c.producer,
            c.slots,
            units::bytes(c.slot_size.into()),
            c.engine.to_uppercase(),
            c.trigger,
            c.wait,
            c.loss
        ),
        field("source", s.source.line()),
        field(
            "moved",
            format!(
                "{} in {} records of {} payload bytes, verified: {}{}",
                units::bytes(s.bytes),
                s.records,
                c.record_payload,
                c.verify,
                rounding_note(s)
            ),
        ),
    ];
    let per_gib = s.reader_cpu_s.map_or(String::new(), |cpu| {
        let gib = s.bytes as f64 / f64::from(1u32 << 30);
        if gib > 0.0 {
            format!(" ({:.1} ms per GiB)", cpu * 1e3 / gib)
        } else {
            String::new()
        }
    });
    lines.push(field(
        "speed",
        format!(
            "{} in {} → {}; reader CPU {}{per_gib}",
            units::bytes(s.bytes),
            units::duration(Duration::from_secs_f64(s.elapsed_s.max(0.0))),
            style.paint(Tone::Bold, &rate(s.gb_per_s)),
            s.reader_cpu_s
                .map_or("-".into(), |c| units::duration(Duration::from_secs_f64(
                    c.max(0.0)
                )))
        ),
    ));
    lines.push(field(
        "slots",
        format!(
            "{} drained, {} closed early (flushes), {} kernel end(s)",
            s.slots_drained, s.flushes, s.kernel_ends
        ),
    ));
    let l = &s.latency_ns;
    lines.push(field(
        "latency",
        format!(
            "slot taken by the engine → seen by the reader: p50 {}, p90 {}, p99 {}, max {} ({} slots)",
            opt_ns(l.p50),
            opt_ns(l.p90),
            opt_ns(l.p99),
            opt_ns(l.max),
            l.count
        ),
    ));
    if let (Some(during), Some(ok)) = (s.records_during_kernel, s.application_results_ok) {
        lines.push(field(
            "kernel",
            format!(
                "{during} of {} records reached the reader while the kernel ran; {} producer stall(s); the kernel's own results {}",
                s.records,
                s.producer_stalls,
                if ok { "match the host reference" } else { "DIFFER from the host reference" }
            ),
        ));
    }
    lines.push(field(
        "loss",
        format!(
            "{} record(s) dropped ({}), {} written",
            s.records_dropped,
            units::bytes(s.bytes_dropped),
            s.records_written
        ),
    ));
    lines
}

/// Runs `kfd drain`.
pub fn run(args: &DrainArgs, style: Style) -> CliResult<()> {
    let config = args.config()?;
    let (kfd, source) = args.device.open()?;
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| CliError::failure(format!("{} has no usable GPU", source.description)))?;
    if args.producer == ProducerChoice::Kernel && source.is_model() {
        // The model runs kernels in its GFX9 interpreter: another part's kernel would stop
        // its queue at the first instruction.
        let gfx = gpu
            .node()
            .gfx_target_name()
            .unwrap_or_else(|| "this GPU".to_owned());
        if gfx.parse::<isa::Target>().is_err() {
            return Err(CliError::usage(format!(
                "--producer kernel runs its kernel in the model's GFX9 interpreter (gfx900, \
                 gfx906, gfx908, gfx90a), not on {gfx}: use --model gfx900 or --model gfx90a"
            )));
        }
    }
    let total = config.total_bytes;
    let mut line = ProgressLine::new(true);
    let report = drain::run(&gpu, &config, |p| {
        let lat = p.latency.p50.map_or("-".into(), units::duration);
        line.draw(&format!(
            "{} {} / {}  {:.2} GB/s  latency p50 {lat}  dropped {}",
            bar(p.bytes, total, 24),
            units::bytes(p.bytes),
            units::bytes(total),
            p.gb_per_s,
            p.records_dropped
        ));
    })
    .map_err(|e| CliError::failure(e.to_string()))?;
    line.finish();
    let s = summary(source, &config, &report);
    let mut out = Out::stdout();
    if args.json {
        out.json(&s)?;
    } else {
        for l in render(&s, style) {
            out.line(&l)?;
        }
    }
    out.flush()?;
    if report.application_results_ok == Some(false) {
        return Err(CliError::failure(
            "the instrumented kernel's results differ from the host reference",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_fill_the_total_exactly_when_they_can() {
        // 1 MiB in 1 MiB slots: the default quarter-slot record (262072 + 8 bytes) would move
        // 5 records, 1.25 MiB; 4 records of 262144 bytes are exactly 1 MiB.
        let default = (1u32 << 20) / 4 - 72;
        assert_eq!(
            payload_filling(1 << 20, default, (1 << 20) - 72),
            Some(262_136)
        );
        // 256 MiB: 1024 records of 256 KiB.
        assert_eq!(
            payload_filling(256 << 20, default, (1 << 20) - 72),
            Some(262_136)
        );
        // A prime number of bytes has no whole-record split.
        assert_eq!(payload_filling(1_000_003, default, (1 << 20) - 72), None);
        // Always a multiple of 8 that fits the slot.
        for total in [4096u64, 100_000, 3 << 20, 12_345_680] {
            if let Some(p) = payload_filling(total, 4000, 65_000) {
                assert_eq!((p % 8, total % (u64::from(p) + 8)), (0, 0), "{total}");
                assert!((24..=65_000).contains(&p));
            }
        }
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("500µs"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_millis(7)));
        assert!(parse_duration("fast")
            .unwrap_err()
            .contains("not a duration"));
        assert!(parse_duration("3h").unwrap_err().contains("'h'"));
    }
}
