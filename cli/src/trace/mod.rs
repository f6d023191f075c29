//! `kfd trace <scenario>`: runs a scenario on the model and shows how each request travels
//! through the driver and the firmware, layer by layer, with the PM4 of every packet and the
//! MQD dwords that changed; `--chrome-trace FILE` writes the timeline.
//!
//! How it works: a [`capture::Capture`] is attached to the log (the model logs one target
//! per layer), the scenario runs in [`session::Session`] steps, and at every record the
//! capture looks at GART for new HIQ packets and MQD changes. [`render`] draws the tree,
//! [`chrome`] the timeline.

pub mod capture;
pub mod chrome;
pub mod client;
pub mod dispatch;
pub mod render;
pub mod scenarios;
pub mod session;

use std::path::PathBuf;

use kfd_model::{ModelConfig, Preset};
use serde::Serialize;

use crate::device::KernelChoice;
use crate::error::{CliError, CliResult};
use crate::output::{Out, Style, Tone};
use scenarios::{Scenario, ScenarioOptions};
use session::{Session, Step};

/// Queue kinds `create-queue` can make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum QueueType {
    /// AQL compute (what ROCr creates).
    Aql,
    /// PM4 compute.
    Pm4,
    /// SDMA.
    Sdma,
}

/// What `kfd trace` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct TraceArgs {
    /// The scenario to run.
    #[arg(value_enum)]
    pub scenario: Scenario,
    /// GPU part to model: gfx900, gfx90a, gfx942, gfx1030 (default: per scenario).
    #[arg(long = "model", visible_alias = "preset", value_name = "PART", value_parser = parse_preset)]
    pub preset: Option<Preset>,
    /// GPUs in the model (1 to 64); the scenario runs on the first.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::device::MAX_MODEL_GPUS as i64))]
    pub gpus: Option<u32>,
    /// Kernel whose behaviour the model follows.
    #[arg(long, value_enum, value_name = "VERSION")]
    pub kernel: Option<KernelChoice>,
    /// Make the model misbehave on purpose (the KFD_MODEL_FAULTS syntax, e.g. hiq-full);
    /// repeatable, added to KFD_MODEL_FAULTS.
    #[arg(long = "fault", value_name = "SPEC", value_parser = crate::device::parse_faults)]
    pub faults: Vec<Vec<kfd_model::Fault>>,
    /// The queue the scenario makes: create-queue takes aql (default), pm4 or sdma;
    /// event-signal and vm-fault take pm4 (default) or sdma.
    #[arg(long, value_enum)]
    pub queue_type: Option<QueueType>,
    /// Ring size in bytes (power of two, at least 1K).
    #[arg(long, value_parser = crate::mqd_tool::parse_number, default_value = "4K")]
    pub ring_size: u64,
    /// Show every step in full, setup included.
    #[arg(long)]
    pub all: bool,
    /// dispatch: the wave to trace instruction by instruction, by its number in the
    /// dispatch (0–3; default 0).
    #[arg(long, value_name = "N")]
    pub wave: Option<u64>,
    /// Write a Chrome/Perfetto timeline (trace-event JSON) to FILE.
    #[arg(long, value_name = "FILE")]
    pub chrome_trace: Option<PathBuf>,
    /// Print the steps and records as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_preset(s: &str) -> Result<Preset, String> {
    crate::device::parse_preset(s)
}

/// A `--ring-size` CREATE_QUEUE can carry: its `ring_size` is 32 bits, and the driver wants
/// a power of two of at least 1 KiB.
pub fn check_ring_size(bytes: u64) -> CliResult<u32> {
    let size = u32::try_from(bytes).map_err(|_| {
        CliError::usage(format!(
            "--ring-size {bytes} does not fit 32 bits (CREATE_QUEUE's ring_size); the largest is 2G"
        ))
    })?;
    if !size.is_power_of_two() {
        return Err(CliError::usage(format!(
            "--ring-size {bytes} is not a power of two"
        )));
    }
    if size < 1024 {
        return Err(CliError::usage(format!(
            "--ring-size {bytes} is below the smallest ring, 1K"
        )));
    }
    Ok(size)
}

/// The JSON form of a trace.
#[derive(Serialize)]
pub struct TraceReport<'a> {
    /// Scenario name.
    pub scenario: &'static str,
    /// GPU part.
    pub preset: &'static str,
    /// The path the tree follows.
    pub path: &'static str,
    /// The steps.
    pub steps: &'a [Step],
}

/// Runs `kfd trace`.
pub fn run(args: &TraceArgs, style: Style) -> CliResult<()> {
    let ring_size = check_ring_size(args.ring_size)?;
    let allowed = scenarios::queue_types(args.scenario);
    let queue_type = match args.queue_type {
        None => allowed
            .first()
            .copied()
            .unwrap_or(kfd_sys::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL),
        Some(q) => {
            let t = match q {
                QueueType::Aql => kfd_sys::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                QueueType::Pm4 => kfd_sys::KFD_IOC_QUEUE_TYPE_COMPUTE,
                QueueType::Sdma => kfd_sys::KFD_IOC_QUEUE_TYPE_SDMA,
            };
            if !allowed.contains(&t) {
                let names: Vec<&str> = allowed
                    .iter()
                    .map(|&t| match t {
                        kfd_sys::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => "aql",
                        kfd_sys::KFD_IOC_QUEUE_TYPE_SDMA => "sdma",
                        _ => "pm4",
                    })
                    .collect();
                return Err(CliError::usage(format!(
                    "scenario '{}' takes --queue-type {}",
                    args.scenario.name(),
                    names.join(" or ")
                )));
            }
            t
        }
    };
    if args.wave.is_some() && args.scenario != Scenario::Dispatch {
        return Err(CliError::usage(format!(
            "--wave belongs to the dispatch scenario, not '{}'",
            args.scenario.name()
        )));
    }
    let options = ScenarioOptions {
        queue_type,
        ring_size,
        wave: args.wave.unwrap_or(0),
    };
    let preset = args.preset.unwrap_or(args.scenario.default_preset());
    if args.scenario == Scenario::Dispatch {
        dispatch::check(preset, options.wave)?;
    }
    let faults = crate::device::model_faults(|k| std::env::var(k).ok(), &args.faults)?;
    let config = faults.iter().fold(
        ModelConfig::new(preset)
            .with_gpus(args.gpus.unwrap_or(1))
            .with_kernel(args.kernel.unwrap_or_default().version()),
        |config, f| config.with_fault(*f),
    );
    let injected: String = faults
        .iter()
        .map(|f| format!(", injected fault {f}"))
        .collect();
    // One host thread for the compute units: the waves' story then reads the same every run.
    let config = if args.scenario == Scenario::Dispatch {
        config.with_cu_threads(1)
    } else {
        config
    };
    let mut session = Session::start(config)?;
    let outcome = scenarios::run(args.scenario, &mut session, options);
    let ioctls = session.ioctls();
    let steps = std::mem::take(&mut session.steps);
    drop(session);
    if let Some(path) = &args.chrome_trace {
        let timeline = chrome::timeline(args.scenario.name(), preset.name(), &steps, &ioctls);
        let text = serde_json::to_string(&timeline)
            .map_err(|e| CliError::failure(format!("cannot format the timeline: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::failure(format!("cannot write '{}': {e}", path.display())))?;
    }
    let path = match args.scenario {
        Scenario::Dispatch => render::DISPATCH_PATH,
        _ => render::PATH,
    };
    let mut out = Out::stdout();
    if args.json {
        out.json(&TraceReport {
            scenario: args.scenario.name(),
            preset: preset.name(),
            path,
            steps: &steps,
        })?;
    } else {
        out.line(&style.paint(
            Tone::Bold,
            &format!(
                "kfd trace {} on the model ({preset}{}): {} steps",
                args.scenario.name(),
                injected,
                steps.len()
            ),
        ))?;
        out.line(&style.paint(Tone::Dim, &format!("path: {path}")))?;
        for line in render::steps_lines(&steps, args.all, style) {
            out.line(&line)?;
        }
        if let Some(path) = &args.chrome_trace {
            out.line("")?;
            out.line(&format!(
                "timeline written to {} (open it in ui.perfetto.dev or chrome://tracing)",
                path.display()
            ))?;
        }
    }
    out.flush()?;
    outcome
}
