//! `kfd demo` (what `make run` runs): a short guided run of the whole stack — open the
//! device (the model when there is no `/dev/kfd`), read the topology, allocate GTT and VRAM,
//! create a PM4 compute queue and an SDMA queue, submit packets (shown disassembled, read
//! back from the ring), signal and wait on an event, run the project's own kernel on an AQL
//! queue and check its result, drain a trace buffer at full speed with a progress bar, drain
//! the trace of an instrumented kernel while it runs, and end with what happened and the
//! measured numbers.
//!
//! Every step checks its result (the words the CP wrote, the bytes SDMA copied, the records
//! the drain delivered, in order and with valid checksums); a wrong result is a failure
//! (status 1), not a line of output.

use std::time::{Duration, Instant};

use drain::{ChannelConfig, DrainConfig, DrainReport, ProducerKind, Trigger, Verify};
use pm4::ring::{DwordPtr, SdmaBytePtr};
use serde::Serialize;
use thunk::{
    Event, EventKind, Gpu, Kfd, Memory, MemoryKind, Pm4Queue, QueueOptions, SdmaQueue, WaitStatus,
};

use crate::decode::{decode_words, Engine};
use crate::device::{DeviceArgs, Source};
use crate::error::{CliError, CliResult};
use crate::kernels::{self, Axpy};
use crate::measure::{self, Samples};
use crate::output::{Out, Style, Tone};
use crate::progress::{bar, percent, time_left, ProgressLine};
use crate::target::Target;
use crate::units;

/// What `kfd demo` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct DemoArgs {
    /// Where to run.
    #[command(flatten)]
    pub device: DeviceArgs,
    /// A shorter run: 16 MiB drained, fewer latency samples.
    #[arg(long)]
    pub quick: bool,
    /// Bytes to move through the drain channel [default: 1G, 16M with --quick].
    #[arg(long, value_name = "BYTES", value_parser = crate::mqd_tool::parse_number)]
    pub drain_bytes: Option<u64>,
    /// Print the report as JSON at the end instead of the guided text.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
    /// Print nothing; the exit status says whether every step worked.
    #[arg(long)]
    pub quiet: bool,
}

/// One step of the run.
#[derive(Clone, Debug, Serialize)]
pub struct StepReport {
    /// Short title.
    pub title: String,
    /// What happened, one line each (no colour).
    pub lines: Vec<String>,
}

/// One measured number.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    /// What was measured.
    pub name: String,
    /// The value, in `unit`.
    pub value: f64,
    /// `ns`, `GB/s`, …
    pub unit: &'static str,
    /// How (`median of 200`, …).
    pub how: String,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct DemoReport {
    /// Where it ran.
    pub source: Source,
    /// KFD interface version.
    pub interface: String,
    /// The steps, in order.
    pub steps: Vec<StepReport>,
    /// The numbers.
    pub measurements: Vec<Measurement>,
    /// Wall time of the whole run, ms.
    pub elapsed_ms: f64,
}

/// Prints steps as they finish (text mode) and keeps them for the JSON report.
struct Narrator {
    out: Option<Out>,
    style: Style,
    steps: Vec<StepReport>,
    total: usize,
}

impl Narrator {
    fn step(&mut self, title: &str, lines: Lines) -> CliResult<()> {
        let n = self.steps.len() + 1;
        if let Some(out) = &mut self.out {
            out.line(&format!(
                "{} {}",
                self.style
                    .paint(Tone::Layer(0), &format!("[{n}/{}]", self.total)),
                self.style.paint(Tone::Bold, title)
            ))?;
            for (coloured, _) in &lines {
                out.line(&format!("      {coloured}"))?;
            }
            out.flush()?;
        }
        self.steps.push(StepReport {
            title: title.to_owned(),
            lines: lines.into_iter().map(|(_, plain)| plain).collect(),
        });
        Ok(())
    }
}

/// A line in both spellings: coloured for the terminal, plain for JSON.
fn both(style: Style, f: impl Fn(Style) -> String) -> (String, String) {
    (f(style), f(Style::plain()))
}

fn plain(text: String) -> (String, String) {
    (text.clone(), text)
}

fn thunk_err(what: &'static str) -> impl Fn(thunk::Error) -> CliError {
    move |e| CliError::failure_in(what, e)
}

/// A step's lines, each coloured for the terminal and plain for JSON.
type Lines = Vec<(String, String)>;

const STEPS: usize = 10;
/// Payload bytes of each drained record (256 with the 8-byte record header).
const DEMO_RECORD_PAYLOAD: u32 = 248;
const WAIT: Duration = Duration::from_secs(10);

/// Runs `kfd demo`.
pub fn run(args: &DemoArgs, style: Style) -> CliResult<()> {
    let started = Instant::now();
    let drain_bytes = args
        .drain_bytes
        .unwrap_or(if args.quick { 16 << 20 } else { 1 << 30 });
    if drain_bytes == 0 {
        return Err(CliError::usage("--drain-bytes 0: nothing to drain"));
    }
    let text = !args.json && !args.quiet;
    let mut narrator = Narrator {
        out: text.then(Out::stdout),
        style,
        steps: Vec::new(),
        total: STEPS,
    };
    // 1. Open (before any output: a device that cannot be opened is one line on stderr).
    let (opened, lines) = open_step(args, narrator.out.as_mut(), style)?;
    let Opened {
        kfd,
        source,
        interface,
        gpus,
        gpu,
    } = opened;
    narrator.step("open", lines)?;

    // 2. Topology.
    narrator.step("topology", topology_step(&gpus, style))?;

    // 3. Memory.
    let (host, vram, fences, lines) = memory_step(&gpu)?;
    narrator.step(
        "allocate and map (ALLOC_MEMORY_OF_GPU, MAP_MEMORY_TO_GPU, mmap)",
        lines,
    )?;

    // 4. PM4 queue: WRITE_DATA + RELEASE_MEM fence.
    let target = gpu_target(&gpu)?;
    let (mut pm4, lines) = pm4_step(&gpu, &fences, target, style)?;
    narrator.step("PM4 compute queue", lines)?;

    // 5. SDMA queue: GTT → VRAM → GTT.
    let (_sdma, lines) = sdma_step(&gpu, &host, &vram, &fences, target, style)?;
    narrator.step("SDMA queue", lines)?;

    // 6. Event.
    let (_event, lines) = event_step(&kfd, &mut pm4, target, style)?;
    narrator.step("signal and wait on an event", lines)?;

    // 7. A kernel.
    let lines = kernel_step(&kfd, &gpu, style)?;
    narrator.step(
        &format!(
            "run a kernel: the project's {} ({}) on an AQL queue",
            kernels::AXPY,
            kernels::AXPY_SOURCE
        ),
        lines,
    )?;

    // 8. Drain.
    let (drained, lines) = drain_step(&gpu, drain_bytes, text)?;
    narrator.step(
        "drain a trace buffer (SDMA drain queue, 8 slots of 1 MiB, on-full trigger)",
        lines,
    )?;

    // 9. A kernel as the producer.
    let (title, lines) = kernel_drain_step(&gpu, text, args.quick)?;
    narrator.step(&title, lines)?;

    // 10. Numbers.
    let (measurements, lines) = measured_step(&kfd, &gpu, &source, &drained, args.quick, style)?;
    narrator.step("measured", lines)?;

    let report = DemoReport {
        source,
        interface,
        steps: narrator.steps,
        measurements,
        elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
    };
    if args.json {
        let mut out = Out::stdout();
        out.json(&report)?;
        out.flush()?;
    } else if let Some(out) = &mut narrator.out {
        out.line(&format!(
            "\ndone in {} on {}",
            units::duration(started.elapsed()),
            report.source.description
        ))?;
        out.flush()?;
    }
    Ok(())
}

/// What step 1 opened: the device, where it is, its interface version, its GPUs and the one
/// the demo uses (the first).
struct Opened {
    kfd: Kfd,
    source: Source,
    interface: String,
    gpus: Vec<Gpu>,
    gpu: Gpu,
}

/// Step 1: opens the device (before any output: a device that cannot be opened is one line
/// on stderr), then prints the title to `out`.
fn open_step(args: &DemoArgs, out: Option<&mut Out>, style: Style) -> CliResult<(Opened, Lines)> {
    let t = Instant::now();
    let (kfd, source) = args.device.open()?;
    let open_time = t.elapsed();
    if let Some(out) = out {
        out.line(&style.paint(
            Tone::Bold,
            "kfd demo — the KFD user-space stack end to end, in a few seconds",
        ))?;
        out.line("")?;
    }
    let interface = kfd.version().to_string();
    let gpus = kfd.gpus();
    let gpu = gpus
        .first()
        .cloned()
        .ok_or_else(|| CliError::failure(format!("{} has no usable GPU", source.description)))?;
    let lines = vec![
        both(style, |s| {
            format!("{} {}", s.paint(Tone::Dim, "source:"), source.line())
        }),
        plain(format!(
            "KFD interface {interface} (GET_VERSION), {} GPU(s) with their address space acquired (ACQUIRE_VM), {} event/doorbell pages, in {}",
            gpus.len(),
            if kfd.uses_user_pages() { "user-buffer (dGPU)" } else { "kernel (APU)" },
            units::duration(open_time)
        )),
    ];
    Ok((
        Opened {
            kfd,
            source,
            interface,
            gpus,
            gpu,
        },
        lines,
    ))
}

/// Step 2: every GPU's node in the topology.
fn topology_step(gpus: &[Gpu], style: Style) -> Lines {
    let mut lines = Vec::new();
    for g in gpus {
        let n = g.node();
        let p = &n.properties;
        lines.push(both(style, |s| {
            format!(
                "node {}: {} ({}), gpu_id {:#06x} — {} CUs, wave{}, {} LDS, {} VRAM, {} HQDs, {} SDMA engines × {} queues",
                n.index,
                s.paint(Tone::Name, &n.gfx_target_name().unwrap_or_else(|| "gfx?".into())),
                n.name,
                g.id(),
                n.cu_count(),
                p.wave_front_size,
                units::kib(p.lds_size_in_kb),
                units::bytes(n.vram_size()),
                p.num_cp_queues,
                p.num_sdma_engines,
                p.num_sdma_queues_per_engine
            )
        }));
    }
    lines.push(both(style, |s| {
        s.paint(Tone::Dim, "(kfd info shows everything sysfs says)")
    }));
    lines
}

/// Step 3: a GTT buffer, a VRAM buffer and a GTT page for the fences, each mapped for the CPU
/// and the GPU.
fn memory_step(gpu: &Gpu) -> CliResult<(Memory, Memory, Memory, Lines)> {
    let host = gpu
        .alloc(MemoryKind::Gtt, 128 << 10)
        .map_err(thunk_err("GTT allocation"))?;
    let vram = gpu
        .alloc(MemoryKind::Vram, 64 << 10)
        .map_err(thunk_err("VRAM allocation"))?;
    let fences = gpu
        .alloc(MemoryKind::Gtt, 4096)
        .map_err(thunk_err("GTT allocation"))?;
    let describe = |name: &str, m: &Memory| {
        plain(format!(
            "{name:<7} {:<4} {:>7} at {:#x} (handle {:#x})",
            kind_name(m.kind()),
            units::bytes(m.size()),
            m.gpu_va(),
            m.handle()
        ))
    };
    let lines = vec![
        describe("host", &host),
        describe("vram", &vram),
        describe("fences", &fences),
        plain("one address for the CPU and the GPU (shared virtual memory)".into()),
    ];
    Ok((host, vram, fences, lines))
}

/// Step 4: a PM4 compute queue writes two words (WRITE_DATA) and a fence (RELEASE_MEM); the
/// words are checked and the packets shown disassembled from the ring.
fn pm4_step(
    gpu: &Gpu,
    fences: &Memory,
    target: Target,
    style: Style,
) -> CliResult<(Pm4Queue, Lines)> {
    let mut pm4 = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .map_err(thunk_err("PM4 queue"))?;
    let before = pm4.wptr();
    let words = [0xC0FF_EE00u32, 0x0000_BEEF];
    pm4.push_write_data(fences.gpu_addr(16), &words)
        .map_err(thunk_err("WRITE_DATA"))?;
    pm4.push_fence(fences.gpu_addr(0), 1)
        .map_err(thunk_err("RELEASE_MEM"))?;
    let t = Instant::now();
    let after = pm4.submit().map_err(thunk_err("submit"))?;
    fences
        .wait_u64(0, 1, WAIT)
        .map_err(thunk_err("PM4 fence"))?;
    let pm4_time = t.elapsed();
    let got = fences.read_dwords(16, 2).map_err(thunk_err("read back"))?;
    if got != words {
        return Err(CliError::failure(format!(
            "the CP wrote {got:08x?} instead of {words:08x?}"
        )));
    }
    let ring = pm4_ring_words(&pm4, before, after)?;
    let mut lines = vec![plain(format!(
        "queue {}: PM4 compute, 4 KiB ring at {:#x}, doorbell at {} (CREATE_QUEUE; the HWS maps it to an HQD)",
        pm4.id(),
        pm4.ring().gpu_va(),
        doorbell(pm4.doorbell_address())
    ))];
    lines.extend(disassembly(&ring.1, ring.0, Engine::Pm4, target, style));
    lines.push(plain(format!(
        "submitted (packet in the ring, write pointer, doorbell): the CP wrote {:#010x} {:#010x} and the fence after {}",
        got[0],
        got[1],
        units::duration(pm4_time)
    )));
    Ok((pm4, lines))
}

/// Step 5: an SDMA queue copies 64 KiB GTT → VRAM → GTT and writes a fence; the copy is
/// checked and the packets shown disassembled from the ring.
fn sdma_step(
    gpu: &Gpu,
    host: &Memory,
    vram: &Memory,
    fences: &Memory,
    target: Target,
    style: Style,
) -> CliResult<(SdmaQueue, Lines)> {
    let pattern: Vec<u8> = (0..64u32 << 10)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    host.write(0, &pattern).map_err(thunk_err("write"))?;
    host.fill(64 << 10, 64 << 10, 0)
        .map_err(thunk_err("fill"))?;
    let mut sdma = gpu
        .create_sdma_queue(&QueueOptions::new().ring_size(4096))
        .map_err(thunk_err("SDMA queue"))?;
    let before = sdma.wptr();
    sdma.push_copy(vram.gpu_va(), host.gpu_va(), 64 << 10)
        .map_err(thunk_err("COPY_LINEAR"))?;
    sdma.push_copy(host.gpu_addr(64 << 10), vram.gpu_va(), 64 << 10)
        .map_err(thunk_err("COPY_LINEAR"))?;
    sdma.push_fence(fences.gpu_addr(8), 1)
        .map_err(thunk_err("FENCE"))?;
    let t = Instant::now();
    let after = sdma.submit().map_err(thunk_err("submit"))?;
    fences
        .wait_u32(8, 1, WAIT)
        .map_err(thunk_err("SDMA fence"))?;
    let sdma_time = t.elapsed();
    let back = host
        .read_vec(64 << 10, 64 << 10)
        .map_err(thunk_err("read back"))?;
    if back != pattern {
        let at = back
            .iter()
            .zip(&pattern)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        return Err(CliError::failure(format!(
            "the SDMA round trip changed the data (first difference at byte {at})"
        )));
    }
    let ring = sdma_ring_words(&sdma, before, after)?;
    let mut lines = vec![plain(format!(
        "queue {}: SDMA, 4 KiB ring at {:#x}, doorbell at {}",
        sdma.id(),
        sdma.ring().gpu_va(),
        doorbell(sdma.doorbell_address())
    ))];
    lines.extend(disassembly(&ring.1, ring.0, Engine::Sdma, target, style));
    lines.push(plain(format!(
        "64 KiB GTT → VRAM → GTT came back identical; the fence landed after {}",
        units::duration(sdma_time)
    )));
    Ok((sdma, lines))
}

/// Step 6: the PM4 queue signals an event (RELEASE_MEM with an interrupt) that the CPU waits
/// on.
fn event_step(
    kfd: &Kfd,
    pm4: &mut Pm4Queue,
    target: Target,
    style: Style,
) -> CliResult<(Event, Lines)> {
    let event = kfd
        .create_event(EventKind::Signal, true)
        .map_err(thunk_err("CREATE_EVENT"))?;
    let before = pm4.wptr();
    pm4.push_signal(&event)
        .map_err(thunk_err("RELEASE_MEM signal"))?;
    let t = Instant::now();
    let after = pm4.submit().map_err(thunk_err("submit"))?;
    let status = event.wait(Some(WAIT)).map_err(thunk_err("WAIT_EVENTS"))?;
    let event_time = t.elapsed();
    if status != WaitStatus::Signaled {
        return Err(CliError::failure(format!(
            "event {} was not signalled within {WAIT:?}",
            event.id()
        )));
    }
    let ring = pm4_ring_words(pm4, before, after)?;
    let mut lines = vec![plain(format!(
        "event {}: signal, auto-reset, slot {} of the event page (CREATE_EVENT)",
        event.id(),
        event.slot().map_or("?".into(), |s| s.to_string())
    ))];
    lines.extend(disassembly(&ring.1, ring.0, Engine::Pm4, target, style));
    lines.push(plain(format!(
        "RELEASE_MEM wrote the slot and raised an interrupt; IH → event → WAIT_EVENTS returned after {}",
        units::duration(event_time)
    )));
    Ok((event, lines))
}

/// Step 8: `drain_bytes` of synthetic trace records, written by a CPU thread into the GPU
/// buffer and drained by the channel's SDMA queue, with a progress line when `text`.
fn drain_step(gpu: &Gpu, drain_bytes: u64, text: bool) -> CliResult<(DrainReport, Lines)> {
    let mut config = DrainConfig::new(
        ChannelConfig::new(1 << 20, 8).trigger(Trigger::OnFull),
        drain_bytes,
    );
    // Trace-sized records: 256 bytes with their header.
    config.record_payload = DEMO_RECORD_PAYLOAD;
    config.producer = ProducerKind::HostThread;
    config.verify = Verify::Checksum;
    config.progress_every = Duration::from_millis(100);
    let mut line = ProgressLine::new(text);
    let report = drain::run(gpu, &config, |p| {
        let left = time_left(p.bytes, drain_bytes, p.gb_per_s * 1e9)
            .map(|t| format!(", {t}"))
            .unwrap_or_default();
        line.draw(&format!(
            "      draining {} {} {} / {}  {:.2} GB/s{left} (Ctrl-C stops)",
            bar(p.bytes, drain_bytes, 30),
            percent(p.bytes, drain_bytes),
            units::bytes(p.bytes),
            units::bytes(drain_bytes),
            p.gb_per_s
        ));
    })
    .map_err(|e| CliError::failure(e.to_string()))?;
    line.finish();
    let lat = report.stats.drain_latency;
    let us = |d: Option<Duration>| d.map_or("-".into(), units::duration);
    let lines = vec![
        plain(format!(
            "a CPU thread produced {} records of {} bytes ({}) into the GPU buffer; the SDMA queue copied {} full slots to host memory with no CPU work per slot",
            report.records_written,
            DEMO_RECORD_PAYLOAD + 8,
            units::bytes(report.bytes),
            report.stats.slots_drained
        )),
        plain(format!(
            "received {} records in order, checksums verified, in {}: {:.2} GB/s; reader CPU {}",
            report.records,
            units::duration(report.elapsed),
            report.gb_per_s,
            report.reader_cpu.map_or("-".into(), units::duration)
        )),
        plain(format!(
            "drain latency (slot full → seen by the reader): p50 {}, p99 {}, over {} slots",
            us(lat.p50),
            us(lat.p99),
            lat.count
        )),
    ];
    Ok((report, lines))
}

/// Step 10: the doorbell round trip and the event latency, measured here, with the drain's
/// numbers from step 8.
fn measured_step(
    kfd: &Kfd,
    gpu: &Gpu,
    source: &Source,
    report: &DrainReport,
    quick: bool,
    style: Style,
) -> CliResult<(Vec<Measurement>, Lines)> {
    let samples = if quick { 50 } else { 500 };
    let round_trip = measure::doorbell_round_trip(gpu, samples)?;
    let events = measure::event_latency(kfd, gpu, samples / 5)?;
    let lat = report.stats.drain_latency;
    let mut measurements = vec![
        Measurement {
            name: "doorbell → RELEASE_MEM fence seen by the CPU".into(),
            value: round_trip.median(),
            unit: "ns",
            how: format!("median of {}", round_trip.count()),
        },
        Measurement {
            name: "RELEASE_MEM interrupt → WAIT_EVENTS return".into(),
            value: events.median(),
            unit: "ns",
            how: format!("median of {}", events.count()),
        },
        Measurement {
            name: "drain throughput, 1 MiB slots, checksums verified".into(),
            value: report.gb_per_s,
            unit: "GB/s",
            how: format!("{} in one run", units::bytes(report.bytes)),
        },
    ];
    if let Some(p50) = lat.p50 {
        measurements.push(Measurement {
            name: "drain latency, slot full → reader".into(),
            value: p50.as_nanos() as f64,
            unit: "ns",
            how: format!("median of {} slots", lat.count),
        });
    }
    let mut lines: Lines = measurements
        .iter()
        .map(|m| {
            let value = if m.unit == "ns" {
                units::nanos(m.value)
            } else {
                format!("{:.2} {}", m.value, m.unit)
            };
            both(style, |s| {
                format!(
                    "{:<52} {:>10}  {}",
                    m.name,
                    s.paint(Tone::Bold, &value),
                    m.how
                )
            })
        })
        .collect();
    lines.push(plain(spread("doorbell round trip", &round_trip)));
    if source.is_model() && round_trip.median() > 100_000.0 {
        lines.push(plain(
            "(a round trip near 200 µs means the waiter shared a core with the model's engine thread, which spins ~200 µs after each piece of work before it yields: a busy machine)".into(),
        ));
    }
    lines.push(both(style, |s| {
        s.paint(
            Tone::Dim,
            "next: kfd trace create-queue (the driver layer by layer) · kfd bench (numbers against targets)",
        )
    }));
    Ok((measurements, lines))
}

/// Step 8: an instrumented kernel writes trace records through drain's device producer
/// library (linked in by the loader) while the channel's SDMA queue drains them. Skipped, with
/// the reason, when clang-15 / ld.lld-15 are not installed.
fn kernel_drain_step(gpu: &Gpu, text: bool, quick: bool) -> CliResult<(String, Lines)> {
    let (slot, waves, total) = if quick {
        (1024u32, 2u32, 16u64 << 10)
    } else {
        (16 << 10, 8, 512 << 10)
    };
    let title = format!(
        "drain a running kernel (producer library linked by the loader, 4 slots of {}, kernel-end trigger)",
        units::bytes(slot.into())
    );
    let mcpu = drain::device::processor_of(gpu).map_err(|e| CliError::failure(e.to_string()))?;
    if !mcpu.starts_with("gfx9") {
        return Ok((
            title,
            vec![plain(format!(
                "skipped: the model runs gfx9 kernels (gfx900, gfx906, gfx90a), not {mcpu}"
            ))],
        ));
    }
    let probe = "kernel void probe() {}";
    if let Err(e) = drain::device::build(probe, &mcpu, &[], drain::device::Link::Library) {
        return Ok((title, vec![plain(format!("skipped: {e}"))]));
    }
    let mut config = DrainConfig::new(
        ChannelConfig::new(slot, 4).trigger(Trigger::KernelEnd),
        total,
    );
    config.producer = ProducerKind::Kernel;
    config.kernel_waves = waves;
    config.record_payload = 56;
    config.progress_every = Duration::from_millis(100);
    let mut line = ProgressLine::new(text);
    let r = drain::run(gpu, &config, |p| {
        line.draw(&format!(
            "      kernel tracing {} {} / {}",
            bar(p.bytes, total, 30),
            units::bytes(p.bytes),
            units::bytes(total)
        ));
    })
    .map_err(|e| CliError::failure(e.to_string()))?;
    line.finish();
    if r.application_results_ok != Some(true) {
        return Err(CliError::failure(
            "the instrumented kernel's results differ from the host reference",
        ));
    }
    if r.records != r.records_written || r.records_during_kernel == 0 {
        return Err(CliError::failure(format!(
            "the kernel producer: {} of {} records received, {} while it ran",
            r.records, r.records_written, r.records_during_kernel
        )));
    }
    Ok((
        title,
        vec![
            plain(format!(
                "traced_work: {waves} waves called kfd_drain_reserve/kfd_drain_commit (undefined in the kernel's code object, resolved by the loader against the library's) for {} records of 64 bytes ({}) through {} of buffer",
                r.records_written,
                units::bytes(r.bytes),
                units::bytes(4 * u64::from(slot))
            )),
            plain(format!(
                "{} records reached the reader while the kernel still ran; producers waited for a free slot {} time(s) (lossless, s_sleep); {} slots drained ({} closed early by the kernel-end flush)",
                r.records_during_kernel, r.stats.producer_stalls, r.stats.slots_drained, r.stats.flushes
            )),
            plain(format!(
                "every record in order per wave with a valid checksum; the kernel's own results match the host's; {:.1} MB/s through the model's interpreter",
                r.bytes as f64 / r.elapsed.as_secs_f64().max(1e-9) / 1e6
            )),
        ],
    ))
}

fn doorbell(address: Option<u64>) -> String {
    address.map_or("(not mapped)".into(), |a| format!("{a:#x}"))
}

fn kind_name(kind: MemoryKind) -> &'static str {
    match kind {
        MemoryKind::Vram => "VRAM",
        MemoryKind::Gtt => "GTT",
        MemoryKind::UserPtr => "USERPTR",
        MemoryKind::Doorbell => "DOORBELL",
        MemoryKind::MmioRemap => "MMIO",
    }
}

fn spread(name: &str, s: &Samples) -> String {
    format!(
        "{name}: min {}, p90 {}, max {}",
        units::nanos(s.min()),
        units::nanos(s.quantile(0.9)),
        units::nanos(s.max())
    )
}

/// Elements `axpy` runs over in the demo: 3 full workgroups of 256 and a partial one.
const AXPY_N: u32 = 1000;
/// Its workgroup size.
const AXPY_WORKGROUP: u16 = 256;
/// Its scalar.
const AXPY_A: u32 = 3;

/// Loads the kept `axpy` code object, dispatches it on a new AQL queue, waits for its
/// completion signal and checks every element against the host's reference.
fn kernel_step(kfd: &thunk::Kfd, gpu: &Gpu, style: Style) -> CliResult<Lines> {
    use thunk::model_access::KfdModelExt;
    let processor = thunk::Executable::target_of(gpu)
        .map(|t| t.processor)
        .unwrap_or_default();
    if kernels::kept_code_object(&processor).is_none() {
        return Ok(vec![plain(format!(
            "skipped: the repository keeps {} for {} only, not for {processor}",
            kernels::AXPY,
            kernels::kept_processors().join(" and ")
        ))]);
    }
    let axpy = Axpy::load(gpu, AXPY_N, AXPY_A)?;
    let k = &axpy.kernel;
    let d = &k.descriptor;
    let mut lines = vec![
        plain(format!(
            "code object for {} ({} bytes, kept in the repository; cli/kernels/regenerate.sh rebuilds it): loaded, linked, kernel descriptor at {:#x}",
            axpy.processor,
            axpy.code_object_bytes,
            k.descriptor_address
        )),
        plain(format!(
            "{}: {} VGPRs, {} SGPRs, {} bytes of kernel arguments, LDS {} bytes, scratch {} bytes per work-item",
            k.name,
            d.vgpr_count(axpy.processor),
            d.sgpr_count(),
            k.kernarg_size,
            k.group_segment_size,
            k.private_segment_size
        )),
    ];
    let before = kfd.model().map(|m| m.shader_counts());
    let mut queue = gpu
        .create_aql_queue(&QueueOptions::new())
        .map_err(thunk_err("CREATE_QUEUE (AQL)"))?;
    let args = axpy.args()?;
    let t = Instant::now();
    let done = queue
        .dispatch(k, [AXPY_N, 1, 1], [AXPY_WORKGROUP, 1, 1], &args)
        .map_err(thunk_err("dispatch"))?;
    done.wait(WAIT).map_err(thunk_err("completion signal"))?;
    let elapsed = t.elapsed();
    let groups = AXPY_N.div_ceil(u32::from(AXPY_WORKGROUP));
    let waves = groups * u32::from(AXPY_WORKGROUP).div_ceil(64);
    lines.push(plain(format!(
        "AQL KERNEL_DISPATCH (packet {} of a new AQL queue): {AXPY_N} work-items in workgroups of {AXPY_WORKGROUP} → {groups} workgroups of {} waves; completion signal at {:#x}",
        done.packet_index(),
        u32::from(AXPY_WORKGROUP).div_ceil(64),
        done.signal_address()
    )));
    let correct = axpy.correct()?;
    if correct != AXPY_N {
        return Err(CliError::failure(format!(
            "{}: {correct} of {AXPY_N} elements of y = {AXPY_A}·x + y are right",
            kernels::AXPY
        )));
    }
    lines.push(both(style, |s| {
        format!(
            "y[i] = {AXPY_A}·x[i] + y[i]: {} (checked on the host); the completion signal reached 0 after {}",
            s.paint(Tone::Bold, &format!("{correct} of {AXPY_N} correct")),
            units::duration(elapsed)
        )
    }));
    if let (Some(b), Some(a)) = (before, kfd.model().map(|m| m.shader_counts())) {
        let ran_waves = a.waves - b.waves;
        if ran_waves != u64::from(waves) {
            return Err(CliError::failure(format!(
                "the model launched {ran_waves} waves for {groups} workgroups of {AXPY_WORKGROUP}, not {waves}"
            )));
        }
        lines.push(plain(format!(
            "the model's compute units ran {} workgroups, {ran_waves} waves, {} instructions, {} faults",
            a.workgroups - b.workgroups,
            a.instructions - b.instructions,
            a.faults - b.faults
        )));
    }
    Ok(lines)
}

/// The packet layouts of `gpu`; a GPU of a generation without layouts here is an error.
fn gpu_target(gpu: &Gpu) -> CliResult<Target> {
    gpu.node()
        .gfx_version()
        .and_then(Target::of_gc)
        .ok_or_else(|| {
            CliError::failure(format!(
                "gpu {:#x}: no packet layouts for its generation",
                gpu.id()
            ))
        })
}

/// The ring dwords between two PM4 write pointers, with the ring offset of the first.
fn pm4_ring_words(
    q: &thunk::Pm4Queue,
    from: DwordPtr,
    to: DwordPtr,
) -> CliResult<(usize, Vec<u32>)> {
    ring_words(q.ring(), from.get(), to.get())
}

/// The same for SDMA (byte pointers).
fn sdma_ring_words(
    q: &thunk::SdmaQueue,
    from: SdmaBytePtr,
    to: SdmaBytePtr,
) -> CliResult<(usize, Vec<u32>)> {
    ring_words(q.ring(), from.get() / 4, to.get() / 4)
}

fn ring_words(ring: &Memory, from: u64, to: u64) -> CliResult<(usize, Vec<u32>)> {
    let len = (ring.size() / 4).max(1);
    let mut words = Vec::new();
    for p in from..to {
        let at = (p % len) * 4;
        let w = ring.load_u32(at).map_err(thunk_err("read the ring"))?;
        words.push(w);
    }
    Ok(((from % len) as usize, words))
}

/// Width the packet text is wrapped to.
const TEXT_WIDTH: usize = 96;

/// Each packet as its offset and dwords, then its name and fields wrapped under them.
fn disassembly(
    words: &[u32],
    offset: usize,
    engine: Engine,
    target: Target,
    style: Style,
) -> Lines {
    let (_, entries) = decode_words(words, offset, engine, target, false);
    let mut lines = Vec::new();
    for e in &entries {
        let hex: Vec<String> = e.words.iter().map(|w| format!("{w:08x}")).collect();
        lines.push(both(style, |s| {
            format!(
                "  {}: {}",
                s.paint(Tone::Dim, &format!("{:#06x}", e.offset)),
                s.paint(Tone::Dim, &hex.join(" "))
            )
        }));
        let text = match (&e.text, &e.error) {
            (Some(t), _) => t.clone(),
            (None, Some(err)) => format!("error: {err}"),
            (None, None) => continue,
        };
        let mut rows: Vec<String> = Vec::new();
        for token in text.split(' ') {
            match rows.last_mut() {
                Some(row) if row.len() + 1 + token.len() <= TEXT_WIDTH => {
                    row.push(' ');
                    row.push_str(token);
                }
                _ => rows.push(token.to_owned()),
            }
        }
        for (i, row) in rows.iter().enumerate() {
            let indent = if i == 0 { "          " } else { "            " };
            lines.push(both(style, |s| {
                if i == 0 {
                    let (name, rest) = row.split_once(' ').unwrap_or((row.as_str(), ""));
                    format!("{indent}{} {rest}", s.paint(Tone::Name, name))
                } else {
                    format!("{indent}{row}")
                }
            }));
        }
    }
    lines
}
