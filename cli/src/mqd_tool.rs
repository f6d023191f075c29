//! `kfd mqd`: builds the MQD the kernel would write for given queue properties, decodes an
//! MQD dump, or lists an MQD struct's fields — per generation.

use std::path::PathBuf;

use mqd::{
    ComputeDescriptor, ComputeMqd, Generation, KernelVersion, MqdConfig, QueueKind,
    QueueProperties, SdmaDescriptor, SdmaMqd,
};
use serde::Serialize;

use crate::error::{CliError, CliResult};
use crate::input::{self, InputFormat};
use crate::mqd_fields::{self, FieldValue, MqdKind, Table};
use crate::output::{Out, Style, Tone};
use crate::target::Target;

/// `kfd mqd` subcommands.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum MqdCommand {
    /// Build the MQD init_mqd writes for a queue and print it (or write its bytes).
    Build(BuildArgs),
    /// Decode an MQD dump (binary or hex text) and print its fields.
    Decode(DecodeMqdArgs),
    /// List the fields of an MQD struct with their dword index.
    Fields(FieldsArgs),
}

/// A number on the command line: decimal, `0x` hex, or with a `K`/`M`/`G` suffix (× 1024ⁿ).
pub fn parse_number(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let (digits, shift) = match t.as_bytes().last() {
        Some(b'k' | b'K') => (&t[..t.len() - 1], 10),
        Some(b'm' | b'M') => (&t[..t.len() - 1], 20),
        Some(b'g' | b'G') => (&t[..t.len() - 1], 30),
        _ => (t.as_str(), 0),
    };
    let value = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse::<u64>(),
    }
    .map_err(|_| format!("'{s}' is not a number (decimal, 0x hex, or with K/M/G)"))?;
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{s}' does not fit in 64 bits"))
}

fn parse_u32(s: &str) -> Result<u32, String> {
    let v = parse_number(s)?;
    u32::try_from(v).map_err(|_| format!("'{s}' does not fit in 32 bits"))
}

/// Queue kinds `kfd mqd build` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BuildKind {
    /// AQL compute queue (what ROCr creates).
    Aql,
    /// PM4 compute queue.
    Pm4,
    /// SDMA queue.
    Sdma,
    /// The driver's HIQ (2048-byte ring, kernel queue bits).
    Hiq,
}

/// Kernel whose init_mqd to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelChoice {
    /// Linux 6.12.
    #[value(name = "6.12")]
    Linux6_12,
    /// Linux 6.1.
    #[value(name = "6.1")]
    Linux6_1,
}

/// What `kfd mqd build` was asked. The defaults are the golden AQL queue of the facts (§6.4).
#[derive(Clone, Debug, clap::Args)]
pub struct BuildArgs {
    /// GPU generation or part.
    #[arg(long, value_name = "TARGET", default_value = "gfx9")]
    pub gfx: Target,
    /// Queue kind.
    #[arg(long, value_enum, default_value_t = BuildKind::Aql)]
    pub kind: BuildKind,
    /// Kernel behaviour.
    #[arg(long, value_enum, default_value_t = KernelChoice::Linux6_12)]
    pub kernel: KernelChoice,
    /// Ring base address (256-byte aligned).
    #[arg(long, value_parser = parse_number, default_value = "0x7f1234500000")]
    pub ring_address: u64,
    /// Ring size in bytes (power of two, at least 1K).
    #[arg(long, value_parser = parse_u32, default_value = "256K")]
    pub ring_size: u32,
    /// Read-pointer report address.
    #[arg(long, value_parser = parse_number, default_value = "0x7f1234600080")]
    pub rptr: u64,
    /// Write-pointer poll address.
    #[arg(long, value_parser = parse_number, default_value = "0x7f1234600038")]
    pub wptr: u64,
    /// Doorbell dword index in the doorbell BAR.
    #[arg(long, value_parser = parse_u32, default_value = "0x1006")]
    pub doorbell: u32,
    /// EOP buffer address (compute).
    #[arg(long, value_parser = parse_number, default_value = "0x7f1234700000")]
    pub eop_address: u64,
    /// EOP buffer size in bytes (compute).
    #[arg(long, value_parser = parse_u32, default_value = "4096")]
    pub eop_size: u32,
    /// Context save/restore (CWSR) area address (compute; 0 for none).
    #[arg(long, value_parser = parse_number, default_value = "0x7f1234800000")]
    pub ctx_save_address: u64,
    /// CWSR area size in bytes.
    #[arg(long, value_parser = parse_u32, default_value = "0x2f6000")]
    pub ctx_save_size: u32,
    /// Control stack size in bytes.
    #[arg(long, value_parser = parse_u32, default_value = "0x5000")]
    pub ctl_stack_size: u32,
    /// Queue priority 0-15.
    #[arg(long, value_parser = parse_u32, default_value = "7")]
    pub priority: u32,
    /// Queue percentage 0-100 (0 makes the queue inactive).
    #[arg(long, value_parser = parse_u32, default_value = "100")]
    pub percentage: u32,
    /// VMID (0 under the hardware scheduler).
    #[arg(long, value_parser = parse_u32, default_value = "0")]
    pub vmid: u32,
    /// Trap handler base address (gfx9 sets TRAP_PRESENT when non-zero).
    #[arg(long, value_parser = parse_number, default_value = "0")]
    pub tba: u64,
    /// SDMA engine.
    #[arg(long, value_parser = parse_u32, default_value = "0")]
    pub sdma_engine: u32,
    /// SDMA queue within the engine.
    #[arg(long, value_parser = parse_u32, default_value = "0")]
    pub sdma_queue: u32,
    /// GART address of the MQD itself (cp_mqd_base_addr).
    #[arg(long, value_parser = parse_number, default_value = "0x1000")]
    pub mqd_address: u64,
    /// CWSR off (amdgpu.cwsr_enable=0).
    #[arg(long)]
    pub no_cwsr: bool,
    /// gfx11: PCIe atomics supported.
    #[arg(long)]
    pub pcie_atomics: bool,
    /// The process is evicted (the queue is built inactive).
    #[arg(long)]
    pub evicted: bool,
    /// gfx11 debugger CWSR workaround.
    #[arg(long)]
    pub debugger_workaround: bool,
    /// Write the MQD's bytes to FILE (`-` for stdout) instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the MQD as hex dwords (input for `kfd mqd decode` and `kfd decode`).
    #[arg(long, conflicts_with = "json")]
    pub hex: bool,
    /// Also print dwords that are zero.
    #[arg(long)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `kfd mqd decode` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct DecodeMqdArgs {
    /// The dump: binary or hex text; `-` or nothing reads stdin.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The dump as hex dwords on the command line.
    #[arg(long, value_name = "TEXT", conflicts_with = "input")]
    pub hex: Option<String>,
    /// How the input is spelled.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub format: InputFormat,
    /// GPU generation whose struct to read.
    #[arg(long, value_name = "TARGET", default_value = "gfx9")]
    pub gfx: Target,
    /// Compute or SDMA (default: compute when dword 0 is the compute header 0xc0310800).
    #[arg(long, value_enum)]
    pub kind: Option<MqdKind>,
    /// Also print dwords that are zero.
    #[arg(long)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `kfd mqd fields` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct FieldsArgs {
    /// GPU generation.
    #[arg(long, value_name = "TARGET", default_value = "gfx9")]
    pub gfx: Target,
    /// Compute or SDMA.
    #[arg(long, value_enum, default_value_t = MqdKind::Compute)]
    pub kind: MqdKind,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// An MQD of either kind.
#[derive(Clone, Debug)]
pub enum AnyMqd {
    /// Compute or HIQ.
    Compute(Box<ComputeMqd>),
    /// SDMA.
    Sdma(Box<SdmaMqd>),
}

impl AnyMqd {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            AnyMqd::Compute(m) => m.as_bytes(),
            AnyMqd::Sdma(m) => m.as_bytes(),
        }
    }

    /// Compute or SDMA.
    pub fn kind(&self) -> MqdKind {
        match self {
            AnyMqd::Compute(_) => MqdKind::Compute,
            AnyMqd::Sdma(_) => MqdKind::Sdma,
        }
    }

    /// The named summary (the `mqd` crate's `Display`).
    pub fn summary_text(&self) -> String {
        match self {
            AnyMqd::Compute(m) => m.summary().to_string(),
            AnyMqd::Sdma(m) => m.summary().to_string(),
        }
    }

    /// The summary as data.
    pub fn summary(&self) -> Summary {
        match self {
            AnyMqd::Compute(m) => Summary {
                ring_base: m.ring_base_address(),
                ring_size: m.ring_size_bytes(),
                rptr_address: m.rptr_report_address(),
                wptr_address: Some(m.wptr_poll_address()),
                doorbell_offset: m.doorbell_offset(),
                vmid: m.vmid(),
                active: Some(ComputeDescriptor::is_active(m.as_ref())),
                aql: Some(m.is_aql()),
                kernel_queue: Some(m.is_kernel_queue()),
                queue_priority: Some(m.queue_priority()),
                pipe_priority: Some(m.pipe_priority().to_string()),
                eop_base: Some(m.eop_base_address()),
                eop_size: Some(m.eop_size_bytes()),
                cwsr_area: m.cwsr_area().map(|a| (a.address, a.size, a.ctl_stack_size)),
                sdma_engine: None,
                sdma_queue: None,
            },
            AnyMqd::Sdma(m) => Summary {
                ring_base: m.ring_base_address(),
                ring_size: m.ring_size_bytes(),
                rptr_address: m.rptr_writeback_address(),
                wptr_address: m.wptr_poll_address(),
                doorbell_offset: m.doorbell_offset(),
                vmid: m.vmid(),
                active: None,
                aql: None,
                kernel_queue: None,
                queue_priority: None,
                pipe_priority: None,
                eop_base: None,
                eop_size: None,
                cwsr_area: None,
                sdma_engine: Some(m.engine_id()),
                sdma_queue: Some(m.queue_id()),
            },
        }
    }
}

/// What an MQD says about its queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Ring base address.
    pub ring_base: u64,
    /// Ring size in bytes.
    pub ring_size: u64,
    /// Read-pointer report / write-back address.
    pub rptr_address: u64,
    /// Write-pointer poll address (none on SDMA 4/5).
    pub wptr_address: Option<u64>,
    /// Doorbell dword index.
    pub doorbell_offset: u32,
    /// VMID.
    pub vmid: u32,
    /// `cp_hqd_active` (compute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    /// AQL format (compute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aql: Option<bool>,
    /// Kernel queue (HIQ) bits (compute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_queue: Option<bool>,
    /// Queue priority (compute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_priority: Option<u32>,
    /// Pipe priority (compute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipe_priority: Option<String>,
    /// EOP buffer address (compute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eop_base: Option<u64>,
    /// EOP buffer size (compute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eop_size: Option<u64>,
    /// CWSR area: address, size, control stack size (compute with CWSR).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwsr_area: Option<(u64, u32, u32)>,
    /// SDMA engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sdma_engine: Option<u32>,
    /// SDMA queue within the engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sdma_queue: Option<u32>,
}

/// The JSON form of a printed MQD.
#[derive(Clone, Debug, Serialize)]
pub struct MqdReport {
    /// C struct name.
    pub r#struct: &'static str,
    /// Generation.
    pub generation: String,
    /// Compute or SDMA.
    pub kind: MqdKind,
    /// Size in bytes.
    pub size: usize,
    /// What the MQD says about its queue.
    pub summary: Summary,
    /// The named dwords (non-zero ones unless `--all`).
    pub fields: Vec<FieldValue>,
    /// `mqd decode`: the layouts whose size the input has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits: Option<Vec<&'static str>>,
    /// `mqd decode`: fields that are not what the kernel writes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// `AMDGPU_MAX_SDMA_INSTANCES`: the most SDMA engines any part has.
const MAX_SDMA_ENGINES: u32 = 16;

/// SDMA engines of `target` (including xGMI engines): the preset's topology, or the most any
/// part has for a bare generation.
fn sdma_engines(target: Target) -> (u32, String) {
    match target.preset {
        Some(p) => {
            let topology =
                kfd_model::topology::Topology::from_config(&kfd_model::ModelConfig::new(p));
            let n = topology.gpus().next().map_or(0, |n| {
                n.properties.num_sdma_engines + n.properties.num_sdma_xgmi_engines
            });
            (n as u32, format!("{p} has {n} SDMA engines"))
        }
        None => (
            MAX_SDMA_ENGINES,
            format!(
                "no part has more than {MAX_SDMA_ENGINES}; name a part (--gfx gfx90a) for its own count"
            ),
        ),
    }
}

/// The checks `kfd mqd build` makes before building: values the kernel would never put in an
/// MQD, each refused with the range it takes.
fn check_build_args(args: &BuildArgs) -> CliResult<()> {
    const RANGE: &str = "allowed: powers of two from 1K to 2G bytes";
    let ring = args.ring_size;
    // Other sizes that are not a power of two are the builder's to refuse.
    if ring == 0 {
        return Err(CliError::usage(format!(
            "--ring-size 0 is not a ring size; {RANGE}"
        )));
    }
    if ring.is_power_of_two() && ring < 1024 {
        return Err(CliError::usage(format!(
            "--ring-size {ring} is too small (KFD_MIN_QUEUE_RING_SIZE is 1024); {RANGE}"
        )));
    }
    if matches!(args.kind, BuildKind::Aql | BuildKind::Pm4) && args.eop_size != 0 {
        // EOP_SIZE is log2(size / 8); Linux 6.12 refuses an EOP buffer under 4096 bytes.
        let min = match args.kernel {
            KernelChoice::Linux6_12 => 4096,
            KernelChoice::Linux6_1 => 8,
        };
        let range = format!(
            "allowed: 0 (no EOP buffer) or a power of two of at least {min} bytes{}",
            if min == 4096 {
                " (Linux 6.12 refuses a smaller EOP buffer)"
            } else {
                ""
            }
        );
        let eop = args.eop_size;
        if !eop.is_power_of_two() {
            return Err(CliError::usage(format!(
                "--eop-size {eop} is not a power of two; {range}"
            )));
        }
        if eop < min {
            return Err(CliError::usage(format!(
                "--eop-size {eop} is too small; {range}"
            )));
        }
    }
    if args.kind == BuildKind::Sdma {
        let (engines, why) = sdma_engines(args.gfx);
        if args.sdma_engine >= engines {
            return Err(CliError::usage(format!(
                "--sdma-engine {} is out of range; allowed: 0 to {} ({why})",
                args.sdma_engine,
                engines.saturating_sub(1)
            )));
        }
    }
    Ok(())
}

/// Builds the MQD `args` describe.
pub fn build(args: &BuildArgs) -> CliResult<AnyMqd> {
    check_build_args(args)?;
    let kernel = match args.kernel {
        KernelChoice::Linux6_12 => KernelVersion::Linux6_12,
        KernelChoice::Linux6_1 => KernelVersion::Linux6_1,
    };
    let mut config = MqdConfig::new(args.gfx.gc).with_kernel(kernel);
    config.cwsr_enabled = !args.no_cwsr;
    config.pcie_atomics = args.pcie_atomics;
    let kind = match args.kind {
        BuildKind::Aql => QueueKind::ComputeAql,
        BuildKind::Pm4 | BuildKind::Hiq => QueueKind::ComputePm4,
        BuildKind::Sdma => QueueKind::Sdma,
    };
    let props = QueueProperties {
        kind,
        ring_address: args.ring_address,
        ring_size: args.ring_size,
        rptr_address: args.rptr,
        wptr_address: args.wptr,
        doorbell_offset: args.doorbell,
        eop_address: args.eop_address,
        eop_size: args.eop_size,
        ctx_save_address: args.ctx_save_address,
        ctx_save_size: args.ctx_save_size,
        ctl_stack_size: args.ctl_stack_size,
        priority: args.priority,
        percentage: args.percentage,
        vmid: args.vmid,
        tba_address: args.tba,
        sdma_engine_id: args.sdma_engine,
        sdma_queue_id: args.sdma_queue,
        debugger_workaround: args.debugger_workaround,
        is_evicted: args.evicted,
        is_suspended: false,
    };
    let built = match args.kind {
        BuildKind::Sdma => SdmaMqd::init(&config, &props).map(|m| AnyMqd::Sdma(Box::new(m))),
        BuildKind::Hiq => {
            let hiq = QueueProperties::hiq(
                args.ring_address,
                args.rptr,
                args.wptr,
                args.eop_address,
                args.doorbell,
            );
            ComputeMqd::init_hiq(&config, &hiq, args.mqd_address)
                .map(|m| AnyMqd::Compute(Box::new(m)))
        }
        BuildKind::Aql | BuildKind::Pm4 => ComputeMqd::init(&config, &props, args.mqd_address)
            .map(|m| AnyMqd::Compute(Box::new(m))),
    };
    built.map_err(|e| CliError::usage(format!("cannot build the MQD: {e}")))
}

/// Reads an MQD of `kind` (or the detected kind) for `target` from `bytes`.
pub fn decode(bytes: &[u8], target: Target, kind: Option<MqdKind>) -> CliResult<AnyMqd> {
    let kind = kind.unwrap_or_else(|| mqd_fields::detect_kind(bytes));
    let generation = target.generation();
    let decoded = match kind {
        MqdKind::Compute => {
            ComputeMqd::decode(generation, bytes).map(|m| AnyMqd::Compute(Box::new(m)))
        }
        MqdKind::Sdma => SdmaMqd::decode(generation, bytes).map(|m| AnyMqd::Sdma(Box::new(m))),
    };
    let kind_name = match kind {
        MqdKind::Compute => "compute",
        MqdKind::Sdma => "SDMA",
    };
    decoded.map_err(|e| CliError::usage(format!("not a {generation} {kind_name} MQD: {e}")))
}

fn report(mqd: &AnyMqd, target: Target, all: bool) -> (Table, MqdReport) {
    let table = mqd_fields::table(target.generation(), mqd.kind());
    let fields = mqd_fields::values(&table, mqd.bytes(), all);
    (
        table,
        MqdReport {
            r#struct: table.name,
            generation: target.generation().to_string(),
            kind: mqd.kind(),
            size: table.size,
            summary: mqd.summary(),
            fields,
            fits: None,
            warnings: Vec::new(),
        },
    )
}

/// What `mqd decode` found out about a dump beyond its fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodeNotes {
    /// Bytes in the dump.
    pub size: usize,
    /// The layouts of that size.
    pub fits: Vec<&'static str>,
    /// Fields that are not what the kernel writes.
    pub warnings: Vec<String>,
}

/// Prints an MQD: its summary, then the named dwords.
pub fn print(
    out: &mut Out,
    mqd: &AnyMqd,
    target: Target,
    all: bool,
    json: bool,
    style: Style,
) -> CliResult<()> {
    print_with_notes(out, mqd, target, all, json, style, None)
}

/// [`print()`], with what `mqd decode` noticed: the layouts the size fits (JSON `fits`; in text
/// a line after the heading when there are warnings) and warnings (JSON `warnings`; in text,
/// `kfd: warning:` lines on stderr).
pub fn print_with_notes(
    out: &mut Out,
    mqd: &AnyMqd,
    target: Target,
    all: bool,
    json: bool,
    style: Style,
    notes: Option<&DecodeNotes>,
) -> CliResult<()> {
    let (table, mut report) = report(mqd, target, all);
    if let Some(n) = notes {
        report.fits = Some(n.fits.clone());
        report.warnings.clone_from(&n.warnings);
        for w in &n.warnings {
            eprintln!("kfd: warning: {w}");
        }
    }
    if json {
        return out.json(&report);
    }
    let summary = mqd.summary_text();
    // The crate's summary ends with its "key dwords"; every non-zero dword follows here.
    let mut lines = summary.lines().take_while(|l| l.trim() != "key dwords:");
    if let Some(first) = lines.next() {
        out.line(&style.paint(Tone::Bold, first))?;
    }
    // The input's size and the layouts it fits, when something about the dump is off (a
    // clean MQD prints exactly what `mqd build` prints).
    if let Some(n) = notes.filter(|n| !n.warnings.is_empty()) {
        out.line(&format!(
            "  input                 {}",
            size_fit_text(n.size, &n.fits)
        ))?;
    }
    for line in lines {
        out.line(line)?;
    }
    out.line(&format!(
        "  {} {} dwords of {}:",
        report.fields.len(),
        if all { "named" } else { "non-zero" },
        table.dwords()
    ))?;
    for f in &report.fields {
        let alias = table
            .alias(f.dword)
            .map(|a| format!(" (GC 9.4.3: {a})"))
            .unwrap_or_default();
        out.line(&format!(
            "    {} {:<36} {}{alias}",
            style.paint(Tone::Dim, &format!("dw{:<3}", f.dword)),
            style.paint(Tone::Name, &f.name),
            format_args!("{:#010x}", f.value)
        ))?;
    }
    Ok(())
}

fn hex_lines(bytes: &[u8]) -> Vec<String> {
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    words
        .chunks(8)
        .enumerate()
        .map(|(i, chunk)| {
            let hex: Vec<String> = chunk.iter().map(|w| format!("{w:08x}")).collect();
            format!("{:#06x}: {}", i * 8, hex.join(" "))
        })
        .collect()
}

/// The largest MQD layout (the compute MQDs of every generation): `mqd decode` reads no more.
pub const MAX_MQD_BYTES: usize = 2048;

/// Every MQD layout.
fn all_tables() -> Vec<Table> {
    [Generation::Gfx9, Generation::Gfx10, Generation::Gfx11]
        .into_iter()
        .flat_map(|g| [MqdKind::Compute, MqdKind::Sdma].map(|k| mqd_fields::table(g, k)))
        .collect()
}

/// The MQD layouts that are exactly `len` bytes.
pub fn layouts_of_size(len: usize) -> Vec<&'static str> {
    all_tables()
        .into_iter()
        .filter(|t| t.size == len)
        .map(|t| t.name)
        .collect()
}

/// "512 bytes, the size of v9_sdma_mqd and v11_sdma_mqd" or "… the size of no MQD layout …".
fn size_fit_text(len: usize, fits: &[&str]) -> String {
    if fits.is_empty() {
        let mut sizes: Vec<usize> = all_tables().iter().map(|t| t.size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
        format!(
            "{len} bytes, the size of no MQD layout ({} bytes)",
            sizes.join(", ")
        )
    } else {
        format!("{len} bytes, the size of {}", fits.join(" and "))
    }
}

/// Reads an MQD dump: at most [`MAX_MQD_BYTES`] + 4 bytes of it, whatever its size.
fn read_dump(args: &DecodeMqdArgs) -> CliResult<(String, Vec<u8>)> {
    let mut input =
        input::DwordReader::open(args.input.as_deref(), args.hex.as_deref(), args.format)?;
    let label = input.label.clone();
    let mut words = Vec::new();
    input.read_into(MAX_MQD_BYTES / 4 + 1, &mut words)?;
    if words.is_empty() && input.trailing_bytes() == 0 {
        return Err(CliError::usage(format!("{label}: empty input")));
    }
    if words.len() > MAX_MQD_BYTES / 4 {
        return Err(CliError::usage(format!(
            "{label} holds more than {MAX_MQD_BYTES} bytes, more than any MQD layout (the \
             compute MQDs are {MAX_MQD_BYTES}); give just the MQD"
        )));
    }
    if input.trailing_bytes() > 0 {
        return Err(CliError::usage(format!(
            "{label} ends with {} byte(s) that do not make a whole dword (byte offset {:#x})",
            input.trailing_bytes(),
            words.len() * 4
        )));
    }
    Ok((label, words.iter().flat_map(|w| w.to_le_bytes()).collect()))
}

/// Fields of a decoded MQD that are not what the kernel's `init_mqd`/`update_mqd` writes
/// (facts §6.4, §6.5) — a dump with these is probably not an MQD, or not of this generation.
/// Compute: `cp_mqd_control.PRIV_STATE`, the persistent-state preload (0x53 on gfx9/10, 0x55
/// on gfx11), `cp_hqd_pq_control.RPTR_BLOCK_SIZE` 5, `cp_hqd_quantum` 0x111,
/// `compute_pipelinestat_enable` 1. SDMA: `rb_cntl` with RPTR_WRITEBACK_ENABLE and timer 6,
/// `sdmax_rlcx_dummy_reg` 0xF. Returns the warnings and how many fields were checked.
pub fn implausible_fields(mqd: &AnyMqd, target: Target) -> (Vec<String>, usize) {
    let generation = target.generation();
    let table = mqd_fields::table(generation, mqd.kind());
    let value = |name: &str| {
        table
            .fields
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| mqd_fields::dword(mqd.bytes(), f.dword))
    };
    let mut out = Vec::new();
    let mut checked = 0;
    let mut check = |name: &str, ok: &dyn Fn(u32) -> bool, expected: &str| {
        if let Some(v) = value(name) {
            checked += 1;
            if !ok(v) {
                out.push(format!(
                    "{name} is {v:#010x}; the kernel writes {expected} on every {} queue",
                    table.name
                ));
            }
        }
    };
    match mqd.kind() {
        MqdKind::Compute => {
            let preload = if generation == Generation::Gfx11 {
                0x55
            } else {
                0x53
            };
            check(
                "cp_mqd_control",
                &|v| v & (1 << 8) != 0,
                "PRIV_STATE (bit 8) set",
            );
            check(
                "cp_hqd_persistent_state",
                &|v| v & 1 == 1 && (v >> 8) & 0x3FF == preload,
                &format!("PRELOAD_REQ and PRELOAD_SIZE {preload:#x}"),
            );
            check(
                "cp_hqd_pq_control",
                &|v| (v >> 8) & 0x3F == 5,
                "RPTR_BLOCK_SIZE (bits 13:8) 5",
            );
            check("cp_hqd_quantum", &|v| v == 0x111, "0x00000111");
            check("compute_pipelinestat_enable", &|v| v == 1, "1");
        }
        MqdKind::Sdma => {
            check(
                "sdmax_rlcx_rb_cntl",
                &|v| v & (1 << 12) != 0 && (v >> 16) & 0x1F == 6,
                "RPTR_WRITEBACK_ENABLE (bit 12) and RPTR_WRITEBACK_TIMER (bits 20:16) 6",
            );
            check("sdmax_rlcx_dummy_reg", &|v| v == 0xF, "0x0000000f");
        }
    }
    (out, checked)
}

/// Runs `kfd mqd`.
pub fn run(command: &MqdCommand, style: Style) -> CliResult<()> {
    let mut out = Out::stdout();
    match command {
        MqdCommand::Build(args) => {
            let mqd = build(args)?;
            if let Some(path) = &args.out {
                input::write_output(path, mqd.bytes())?;
                if path.as_os_str() == "-" {
                    return Ok(());
                }
                out.line(&format!(
                    "wrote {} bytes of {} to {}",
                    mqd.bytes().len(),
                    mqd_fields::table(args.gfx.generation(), mqd.kind()).name,
                    path.display()
                ))?;
                return out.flush();
            }
            if args.hex {
                out.line(&format!(
                    "# {} ({}), {} bytes",
                    mqd_fields::table(args.gfx.generation(), mqd.kind()).name,
                    args.gfx,
                    mqd.bytes().len()
                ))?;
                for line in hex_lines(mqd.bytes()) {
                    out.line(&line)?;
                }
            } else {
                print(&mut out, &mqd, args.gfx, args.all, args.json, style)?;
            }
        }
        MqdCommand::Decode(args) => {
            let (label, bytes) = read_dump(args)?;
            let fits = layouts_of_size(bytes.len());
            let mqd = decode(&bytes, args.gfx, args.kind).map_err(|e| {
                e.context(format!("{label} ({})", size_fit_text(bytes.len(), &fits)))
            })?;
            let mut warnings = Vec::new();
            let expected = mqd_fields::table(args.gfx.generation(), mqd.kind());
            if bytes.len() != expected.size {
                warnings.push(format!(
                    "{label} is {} bytes; {} is {} (the rest was not read)",
                    bytes.len(),
                    expected.name,
                    expected.size
                ));
            }
            let (implausible, checked) = implausible_fields(&mqd, args.gfx);
            // A compute dump already passed the MQD header check; an SDMA MQD has no header,
            // so one whose every checked field is off is not an MQD at all (random bytes).
            if mqd.kind() == MqdKind::Sdma && checked > 0 && implausible.len() == checked {
                return Err(CliError::failure(format!(
                    "{label} is not an MQD: none of the fields the kernel writes on every {} \
                     queue holds what it writes ({}); --kind compute reads it as a compute MQD",
                    expected.name,
                    implausible
                        .iter()
                        .map(|w| w.split(';').next().unwrap_or(w))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            warnings.extend(implausible);
            let notes = DecodeNotes {
                size: bytes.len(),
                fits,
                warnings,
            };
            print_with_notes(
                &mut out,
                &mqd,
                args.gfx,
                args.all,
                args.json,
                style,
                Some(&notes),
            )?;
        }
        MqdCommand::Fields(args) => {
            let table = mqd_fields::table(args.gfx.generation(), args.kind);
            if args.json {
                #[derive(Serialize)]
                struct Field {
                    name: &'static str,
                    dword: usize,
                    dwords: usize,
                }
                #[derive(Serialize)]
                struct Fields {
                    r#struct: &'static str,
                    size: usize,
                    fields: Vec<Field>,
                }
                out.json(&Fields {
                    r#struct: table.name,
                    size: table.size,
                    fields: table
                        .fields
                        .iter()
                        .map(|f| Field {
                            name: f.name,
                            dword: f.dword,
                            dwords: f.dwords,
                        })
                        .collect(),
                })?;
            } else {
                out.line(&style.paint(
                    Tone::Bold,
                    &format!(
                        "{}: {} bytes, {} dwords",
                        table.name,
                        table.size,
                        table.dwords()
                    ),
                ))?;
                for f in table.fields {
                    let span = if f.dwords > 1 {
                        format!("dw{}..{}", f.dword, f.dword + f.dwords - 1)
                    } else {
                        format!("dw{}", f.dword)
                    };
                    let alias = table
                        .alias(f.dword)
                        .map(|a| format!(" (GC 9.4.3: {a})"))
                        .unwrap_or_default();
                    out.line(&format!("  {:<10} {}{alias}", span, f.name))?;
                }
            }
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(subcommand)]
        command: MqdCommand,
    }

    fn build_args(extra: &[&str]) -> BuildArgs {
        let mut argv = vec!["t", "build"];
        argv.extend_from_slice(extra);
        match Wrap::parse_from(argv).command {
            MqdCommand::Build(b) => b,
            _ => unreachable!("build subcommand"),
        }
    }

    #[test]
    fn numbers_take_hex_decimal_and_suffixes() {
        assert_eq!(parse_number("0x1006"), Ok(0x1006));
        assert_eq!(parse_number("256K"), Ok(256 * 1024));
        assert_eq!(parse_number("1M"), Ok(1 << 20));
        assert_eq!(parse_number("4_096"), Ok(4096));
        assert!(parse_number("12q").is_err());
        assert!(parse_number("0xffffffffffffffffK").is_err());
        assert!(parse_u32("0x100000000").is_err());
    }

    /// Facts §6.4 golden example: the defaults are that queue.
    #[test]
    fn defaults_build_the_golden_aql_queue() {
        for (gfx, kernel, pq_control, persistent, dw160) in [
            ("gfx9", "6.12", 0x1C01_450F, 0x4000_5301, 0x4000),
            ("gfx9", "6.1", 0x0C01_450F, 0x4000_5301, 0),
            ("gfx10", "6.12", 0x1808_450F, 0x4000_5301, 0x4000),
            ("gfx11", "6.12", 0x1808_450F, 0x4000_5501, 0x4000),
        ] {
            let mqd = build(&build_args(&["--gfx", gfx, "--kernel", kernel])).unwrap();
            let dw = |i| mqd_fields::dword(mqd.bytes(), i).unwrap();
            assert_eq!(dw(145), pq_control, "{gfx} {kernel} pq_control");
            assert_eq!(dw(132), persistent, "{gfx} persistent_state");
            assert_eq!(dw(160), dw160, "{gfx} {kernel} dw160");
            assert_eq!(dw(143), 0x401A, "doorbell control");
            assert_eq!((dw(136), dw(137)), (0x1234_5000, 0x7F), "pq_base");
            assert_eq!(dw(167), 9, "eop_control");
            assert_eq!((dw(133), dw(134)), (1, 7), "priorities");
        }
    }

    /// Facts §6.5: a 1 MiB SDMA ring gives rb_cntl 0x00061024 (v9/v10) and 0x00061824 (v11).
    #[test]
    fn sdma_rb_cntl_per_generation() {
        for (gfx, rb_cntl, size) in [
            ("gfx9", 0x0006_1024, 512),
            ("gfx10", 0x0006_1024, 520),
            ("gfx11", 0x0006_1824, 512),
        ] {
            let mqd = build(&build_args(&[
                "--gfx",
                gfx,
                "--kind",
                "sdma",
                "--ring-size",
                "1M",
            ]))
            .unwrap();
            assert_eq!(mqd.bytes().len(), size);
            assert_eq!(mqd_fields::dword(mqd.bytes(), 0), Some(rb_cntl), "{gfx}");
        }
    }

    #[test]
    fn hiq_has_kernel_queue_bits_and_round_trips_through_decode() {
        let mqd = build(&build_args(&["--kind", "hiq"])).unwrap();
        let s = mqd.summary();
        assert_eq!(
            (s.kernel_queue, s.aql, s.ring_size),
            (Some(true), Some(false), 2048)
        );
        let back = decode(mqd.bytes(), Target::default(), None).unwrap();
        assert_eq!(back.bytes(), mqd.bytes());
        assert_eq!(back.kind(), MqdKind::Compute);
    }

    #[test]
    fn bad_properties_and_dumps_are_usage_errors() {
        let e = build(&build_args(&["--ring-size", "3000"])).err().unwrap();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("not a power of two"), "{}", e.message);
        let e = build(&build_args(&["--priority", "16"])).err().unwrap();
        assert!(e.message.contains("priority 16"), "{}", e.message);
        let e = decode(&[0u8; 100], Target::default(), Some(MqdKind::Compute))
            .err()
            .unwrap();
        assert!(e.message.contains("too short"), "{}", e.message);
        let e = decode(&[0u8; 2048], Target::default(), Some(MqdKind::Compute))
            .err()
            .unwrap();
        assert!(e.message.contains("header"), "{}", e.message);
    }

    #[test]
    fn hex_lines_are_labelled_rows_of_eight() {
        let lines = hex_lines(&[1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(lines, ["0x0000: 00000001 00000002"]);
    }
}
