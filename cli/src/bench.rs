//! `kfd bench`: the project's headline measurements in one table, each beside its target —
//! packet encode and decode, the thunk's cost per ioctl, the doorbell round trip, event
//! latency, SDMA copy and drain throughput against memcpy, drain latency by event and by
//! polling — with the machine's load, since the machine may be shared.
//!
//! These are short self-timed runs ([`crate::measure`]), reported as "median of N"; the
//! criterion benchmarks (`make bench`) are the careful version. A missed target is reported,
//! not an error: the exit status is 0 whenever every measurement ran.

use serde::Serialize;

use drain::WaitStrategy;

use crate::device::{DeviceArgs, Source};
use crate::error::{CliError, CliResult};
use crate::measure::{self, Samples, Versus};
use crate::output::{Out, Style, Tone};
use crate::progress::ProgressLine;
use crate::thunk_ops;
use crate::units;

/// What `kfd bench` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Where the queue, event and drain measurements run (encode, decode and the thunk's
    /// overhead always run on this CPU and the model).
    #[command(flatten)]
    pub device: DeviceArgs,
    /// A fast pass: fewer rounds and samples (a few seconds; noisier).
    #[arg(long)]
    pub quick: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Time only the thunk's everyday operations (comma-separated names, or `all`), one line
    /// each as `<name> <median ns> <batches>x<iterations>` — the format of
    /// tests/c/hsakmt_bench.c, for tests/c/bench.sh.
    #[arg(long, value_name = "NAMES")]
    pub ops: Option<String>,
    /// With `--ops`: batches timed per operation.
    #[arg(long, value_name = "N", default_value_t = 7, requires = "ops",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub batches: u32,
    /// With `--ops`: iterations per batch, as a multiple of each operation's default.
    #[arg(long, value_name = "F", default_value_t = 1.0, requires = "ops")]
    pub scale: f64,
}

/// Which way a target points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    /// The value must be at most the target.
    AtMost,
    /// The value must be at least the target.
    AtLeast,
}

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What was measured.
    pub name: &'static str,
    /// Where: `cpu` (host-only code), `model`, or `device`.
    pub on: &'static str,
    /// The median, in `unit`.
    pub value: f64,
    /// `ns`, `GB/s`, `%`.
    pub unit: &'static str,
    /// The target, in `unit` (none: shown for information, compared elsewhere).
    pub target: Option<f64>,
    /// Its direction.
    pub goal: Goal,
    /// Whether the median meets the target.
    pub pass: bool,
    /// `median of 31 rounds`.
    pub how: String,
    /// More numbers (spread, the baseline).
    pub detail: String,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Where the device measurements ran.
    pub source: Source,
    /// `release` or `debug`.
    pub build: &'static str,
    /// `--quick`.
    pub quick: bool,
    /// Logical CPUs.
    pub cpus: usize,
    /// `/proc/loadavg` (1, 5, 15 min) before the run.
    pub load_before: Option<String>,
    /// The same after.
    pub load_after: Option<String>,
    /// The rows.
    pub rows: Vec<Row>,
    /// Rows meeting their target.
    pub passed: usize,
}

/// How much of each measurement to do.
#[derive(Clone, Copy, Debug)]
struct Effort {
    rounds: usize,
    builds: usize,
    passes: usize,
    blocks: usize,
    latency_samples: usize,
    event_samples: usize,
    copies: usize,
    copy_rounds: usize,
    drain_rounds: usize,
    drain_slots: u64,
    op_batches: usize,
    op_scale: f64,
}

impl Effort {
    fn new(quick: bool) -> Self {
        if quick {
            Effort {
                rounds: 5,
                builds: 100,
                passes: 1,
                blocks: 8,
                latency_samples: 100,
                event_samples: 30,
                copies: 2,
                copy_rounds: 3,
                drain_rounds: 3,
                drain_slots: 8,
                op_batches: 3,
                op_scale: 0.1,
            }
        } else {
            Effort {
                rounds: 31,
                builds: 2000,
                passes: 4,
                blocks: 64,
                latency_samples: 2000,
                event_samples: 500,
                copies: 8,
                copy_rounds: 21,
                drain_rounds: 21,
                drain_slots: 64,
                op_batches: 7,
                op_scale: 1.0,
            }
        }
    }
}

/// What a row measures and its target.
#[derive(Clone, Copy, Debug)]
struct Spec {
    name: &'static str,
    on: &'static str,
    unit: &'static str,
    target: Option<f64>,
    goal: Goal,
}

fn row(spec: Spec, samples: &Samples, how: String, detail: String) -> Row {
    let value = samples.median();
    let pass = match (spec.goal, spec.target) {
        (_, None) => true,
        (Goal::AtMost, Some(target)) => value <= target,
        (Goal::AtLeast, Some(target)) => value >= target,
    };
    Row {
        name: spec.name,
        on: spec.on,
        value,
        unit: spec.unit,
        target: spec.target,
        goal: spec.goal,
        pass,
        how,
        detail,
    }
}

fn latency_row(name: &'static str, on: &'static str, s: &Samples, target_ns: f64) -> Row {
    row(
        Spec {
            name,
            on,
            unit: "ns",
            target: Some(target_ns),
            goal: Goal::AtMost,
        },
        s,
        format!("median of {}", s.count()),
        format!(
            "min {}, p90 {}, p99 {}, max {}",
            units::nanos(s.min()),
            units::nanos(s.quantile(0.9)),
            units::nanos(s.quantile(0.99)),
            units::nanos(s.max())
        ),
    )
}

/// A row for one of the thunk's everyday operations. Launching an empty kernel has #17's
/// target and the AQL barrier the PM4 fence's; the others are compared with libhsakmt by
/// tests/c/bench.sh, which this process cannot do (libhsakmt runs only under the shim).
fn op_row(t: &thunk_ops::OpTiming, on: &'static str) -> Row {
    let (name, target) = match t.name {
        "pm4_queue_create_destroy" => ("thunk: PM4 queue create + destroy", None),
        "alloc_map_unmap_free_64k" => ("thunk: alloc + map + unmap + free 64 KiB VRAM", None),
        "event_set_wait" => ("thunk: SET_EVENT + WAIT_EVENTS", None),
        "submit_fence_round_trip" => ("thunk: submit PM4 fence → CPU sees it", None),
        "aql_barrier_round_trip" => ("thunk: AQL barrier → completion signal", Some(2_000.0)),
        _ => (
            "thunk: dispatch an empty kernel → completion",
            Some(50_000.0),
        ),
    };
    let samples = Samples::new(vec![t.median_ns]);
    row(
        Spec {
            name,
            on,
            unit: "ns",
            target,
            goal: Goal::AtMost,
        },
        &samples,
        format!("median of {} batches of {}", t.batches, t.iterations),
        format!(
            "batches {}–{}{}",
            units::nanos(t.min_ns),
            units::nanos(t.max_ns),
            if target.is_none() {
                "; vs libhsakmt: tests/c/bench.sh"
            } else {
                ""
            }
        ),
    )
}

fn versus_row(name: &'static str, on: &'static str, v: &Versus) -> Row {
    let percent = Samples::new(v.ratio.values().map(|r| r * 100.0).collect());
    row(
        Spec {
            name,
            on,
            unit: "%",
            target: Some(80.0),
            goal: Goal::AtLeast,
        },
        &percent,
        format!("median of {} alternated rounds", percent.count()),
        format!(
            "medians {:.2} GB/s vs memcpy {:.2} GB/s; per-round ratio {:.0}–{:.0}%",
            v.measured.median(),
            v.baseline.median(),
            percent.min(),
            percent.max()
        ),
    )
}

/// Runs every measurement; `step` is told which one starts (index, total, name).
pub fn measure_all(
    device: &DeviceArgs,
    quick: bool,
    mut step: impl FnMut(usize, usize, &str),
) -> CliResult<BenchReport> {
    let effort = Effort::new(quick);
    let load_before = measure::load_average();
    let (kfd, source) = device.open()?;
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| CliError::failure(format!("{} has no usable GPU", source.description)))?;
    let on = if source.is_model() { "model" } else { "device" };
    const TOTAL: usize = 9 + thunk_ops::OPS.len();
    let mut rows = Vec::with_capacity(TOTAL);

    step(1, TOTAL, "PM4 runlist encode");
    let s = measure::runlist_encode(effort.rounds, effort.builds)?;
    rows.push(row(
        Spec {
            name: "PM4 runlist encode, 8 MAP_PROCESS + 128 MAP_QUEUES",
            on: "cpu",
            unit: "ns",
            target: Some(5.0),
            goal: Goal::AtMost,
        },
        &s,
        format!("median of {} rounds", s.count()),
        format!(
            "per MAP_QUEUES; {} builds a round, min {}",
            effort.builds,
            units::nanos(s.min())
        ),
    ));

    step(2, TOTAL, "PM4 decode");
    let s = measure::pm4_decode(effort.rounds, effort.passes)?;
    rows.push(row(
        Spec {
            name: "PM4 decode, 1 MiB mixed user-queue stream",
            on: "cpu",
            unit: "GB/s",
            target: Some(2.0),
            goal: Goal::AtLeast,
        },
        &s,
        format!("median of {} rounds", s.count()),
        format!("min {:.2}, max {:.2} GB/s", s.min(), s.max()),
    ));

    step(3, TOTAL, "thunk overhead per ioctl");
    let s = measure::thunk_overhead(effort.rounds, effort.blocks)?;
    rows.push(row(
        Spec {
            name: "thunk overhead per ioctl (GET_VERSION, ABBA blocks)",
            on: "model",
            unit: "ns",
            target: Some(50.0),
            goal: Goal::AtMost,
        },
        &s,
        format!("median of {} rounds", s.count()),
        format!(
            "{} calls a round, min {}",
            effort.blocks * 32,
            units::nanos(s.min())
        ),
    ));

    step(4, TOTAL, "doorbell → RELEASE_MEM");
    let s = measure::doorbell_round_trip(&gpu, effort.latency_samples)?;
    rows.push(latency_row(
        "doorbell → RELEASE_MEM seen by the submitter",
        on,
        &s,
        2_000.0,
    ));

    step(5, TOTAL, "RELEASE_MEM interrupt → WAIT_EVENTS");
    let s = measure::event_latency(&kfd, &gpu, effort.event_samples)?;
    rows.push(latency_row(
        "RELEASE_MEM interrupt → WAIT_EVENTS return",
        on,
        &s,
        20_000.0,
    ));

    step(6, TOTAL, "SDMA COPY_LINEAR vs memcpy");
    let v = measure::sdma_copy_vs_memcpy(&gpu, effort.copy_rounds, effort.copies)?;
    rows.push(versus_row("SDMA COPY_LINEAR 1 MiB, % of memcpy", on, &v));

    step(7, TOTAL, "drain throughput vs memcpy");
    let v = measure::drain_vs_memcpy(
        &gpu,
        1 << 20,
        WaitStrategy::Event,
        effort.drain_rounds,
        effort.drain_slots,
    )?;
    rows.push(versus_row(
        "drain throughput, 1 MiB slots, % of memcpy",
        on,
        &v,
    ));

    step(8, TOTAL, "drain commit → visible (event)");
    let s = measure::drain_commit_to_visible(&gpu, WaitStrategy::Event, effort.event_samples)?;
    rows.push(latency_row(
        "drain commit → visible, by event",
        on,
        &s,
        50_000.0,
    ));

    step(9, TOTAL, "drain commit → visible (poll)");
    let s = measure::drain_commit_to_visible(&gpu, WaitStrategy::Poll, effort.event_samples)?;
    rows.push(latency_row(
        "drain commit → visible, by polling",
        on,
        &s,
        5_000.0,
    ));

    for (i, (name, _)) in thunk_ops::OPS.iter().enumerate() {
        step(10 + i, TOTAL, name);
        let t = thunk_ops::time_op(&kfd, &gpu, name, effort.op_batches, effort.op_scale)?;
        rows.push(op_row(&t, on));
    }

    let passed = rows.iter().filter(|r| r.pass && r.target.is_some()).count();
    Ok(BenchReport {
        source,
        build: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        quick,
        cpus: measure::cpus(),
        load_before,
        load_after: measure::load_average(),
        rows,
        passed,
    })
}

fn value_text(value: f64, unit: &str) -> String {
    match unit {
        "ns" => units::nanos(value),
        "%" => format!("{value:.0}%"),
        _ => format!("{value:.2} {unit}"),
    }
}

/// The table, one string per line.
pub fn render(r: &BenchReport, style: Style) -> Vec<String> {
    let mut lines = vec![
        format!(
            "{} {}",
            style.paint(Tone::Bold, "kfd bench:"),
            r.source.line()
        ),
        format!(
            "machine: {} CPU(s), load average {} before, {} after; {} build{}",
            r.cpus,
            r.load_before.as_deref().unwrap_or("unknown"),
            r.load_after.as_deref().unwrap_or("unknown"),
            r.build,
            if r.quick { ", --quick" } else { "" }
        ),
    ];
    if r.build == "debug" {
        lines.push(style.paint(
            Tone::Error,
            "note: an unoptimised build; the numbers say little (cargo run --release -p kfd-cli -- bench)",
        ));
    }
    let load_high = r
        .load_before
        .as_deref()
        .and_then(|l| l.split_whitespace().next())
        .and_then(|l| l.parse::<f64>().ok())
        .is_some_and(|l| l > r.cpus as f64 * 0.5);
    if load_high {
        lines.push(
            "note: the machine is busy (load above half its CPUs): latencies will be high and noisy"
                .to_owned(),
        );
    }
    lines.push(String::new());
    let name_w = r
        .rows
        .iter()
        .map(|x| x.name.chars().count())
        .max()
        .unwrap_or(0);
    let cells: Vec<(String, String)> = r
        .rows
        .iter()
        .map(|x| {
            let op = match x.goal {
                Goal::AtMost => "≤",
                Goal::AtLeast => "≥",
            };
            (
                value_text(x.value, x.unit),
                x.target.map_or_else(
                    || "—".to_owned(),
                    |t| format!("{op} {}", value_text(t, x.unit)),
                ),
            )
        })
        .collect();
    let width = |f: fn(&(String, String)) -> &String, title: &str| {
        cells
            .iter()
            .map(|c| f(c).chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let value_w = width(|c| &c.0, "measured");
    let target_w = width(|c| &c.1, "target");
    lines.push(style.paint(
        Tone::Dim,
        &format!(
            "{:<name_w$}  {:<6}  {:>value_w$}  {:>target_w$}  {:<6}  how",
            "measurement", "on", "measured", "target", "result"
        ),
    ));
    for (x, (value, target)) in r.rows.iter().zip(&cells) {
        let result = if x.target.is_none() {
            style.paint(Tone::Dim, &format!("{:<6}", "info"))
        } else if x.pass {
            style.paint(Tone::Name, &format!("{:<6}", "pass"))
        } else {
            style.paint(Tone::Error, &format!("{:<6}", "miss"))
        };
        let pad = name_w - x.name.chars().count();
        lines.push(format!(
            "{}{}  {:<6}  {value:>value_w$}  {target:>target_w$}  {result}  {}; {}",
            x.name,
            " ".repeat(pad),
            x.on,
            x.how,
            x.detail
        ));
    }
    lines.push(String::new());
    lines.push(format!(
        "{} of {} targets met (medians; the criterion benches in `make bench` are the careful measurement)",
        r.passed,
        r.rows.iter().filter(|x| x.target.is_some()).count()
    ));
    lines
}

/// Runs `kfd bench`.
pub fn run(args: &BenchArgs, style: Style) -> CliResult<()> {
    if let Some(ops) = &args.ops {
        return run_ops(args, ops);
    }
    let mut line = ProgressLine::new(!args.json);
    let report = measure_all(&args.device, args.quick, |i, n, name| {
        line.draw(&format!("measuring {i}/{n}: {name} …"));
    })?;
    line.finish();
    let mut out = Out::stdout();
    if args.json {
        out.json(&report)?;
    } else {
        for l in render(&report, style) {
            out.line(&l)?;
        }
    }
    out.flush()
}

/// `kfd bench --ops`: the named operations, one line each, in the C side's format.
fn run_ops(args: &BenchArgs, ops: &str) -> CliResult<()> {
    if !(args.scale.is_finite() && args.scale > 0.0 && args.scale <= 100.0) {
        return Err(CliError::usage(format!(
            "--scale {} is out of range: give a number above 0 and at most 100",
            args.scale
        )));
    }
    let names: Vec<&str> = if ops == "all" {
        thunk_ops::OPS.iter().map(|(n, _)| *n).collect()
    } else {
        ops.split(',').map(str::trim).collect()
    };
    if let Some(bad) = names
        .iter()
        .find(|n| !thunk_ops::OPS.iter().any(|(o, _)| o == *n))
    {
        return Err(CliError::usage(format!(
            "unknown operation '{bad}'; the operations are: all, {}",
            thunk_ops::OPS.map(|(n, _)| n).join(", ")
        )));
    }
    let (kfd, _source) = args.device.open()?;
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| CliError::failure("no usable GPU".to_owned()))?;
    let mut out = Out::stdout();
    for name in names {
        let t = thunk_ops::time_op(&kfd, &gpu, name, args.batches as usize, args.scale)?;
        out.line(&t.line())?;
        out.flush()?;
    }
    Ok(())
}
