//! # kfd-cli — the `kfd` command
//!
//! The command line of kfd-rs, and the library behind it. Each subcommand is a module with
//! its clap arguments and a `run` function:
//!
//! | command | module | does |
//! |---|---|---|
//! | `kfd info` | [`info`] | the topology of the device or the model (the source is always printed): agents with gfx target, CUs, SIMDs, wave size, LDS, queues, memory banks, caches (identical ones folded), io links, KFD interface version |
//! | `kfd demo` | [`demo`] | what `make run` runs: a guided, checked run of the stack — open, topology, memory, a PM4 and an SDMA queue with their packets disassembled, an event, 1 GiB drained with a progress bar — and the measured numbers |
//! | `kfd drain` | [`drain_tool`] | a drain channel with a chosen producer, slot size and count, trigger, wait, engine and loss policy; live progress line, final report |
//! | `kfd bench` | [`bench`](mod@bench) | the headline measurements in one table beside their targets, with pass/miss and the machine's load |
//! | `kfd abi` | [`abi`] | the `/dev/kfd` ioctl table of `kfd-sys`, and struct layouts |
//! | `kfd decode` | [`decode`] | disassembles PM4 or SDMA streams (file, stdin, hex text, binary dump) with dword offsets; errors point at the offending dword |
//! | `kfd mqd` | [`mqd_tool`] | builds the MQD the kernel writes for a queue, decodes MQD dumps, lists MQD fields, per generation |
//! | `kfd co` | [`co`] | what a code object, offload bundle, HIP program or ROCm library holds, every bundle of it: targets, kernels, device functions, variables, host-side kernel symbols (`-C` demangled) |
//! | `kfd disasm` | [`disasm`] | the code of those kernels and device functions in llvm-objdump-15's text, padding included, with each kernel's descriptor |
//! | `kfd run` | [`run`](mod@run) | runs an unmodified ROCm program (HIP, libhsakmt, rocminfo) on the model under the LD_PRELOAD shim, passes SIGINT/SIGTERM/SIGHUP on to it ([`signals`]), passes its exit status through and prints what its kernels did: dispatches, workgroups, waves, instructions, faults |
//! | `kfd trace` | [`trace`] | runs a scenario on the model (create-queue, oversubscribe, evict-restore, vm-fault, event-signal, dispatch, svm-fault) and prints the path of each request layer by layer (ioctl → pqm → dqm → packet manager → HIQ → HWS → HQD → CP/SDMA → SPI → waves → IH → events), with the PM4 of every packet, the MQD dwords that changed, a kernel's waves with their initial registers and one wave instruction by instruction, and a Chrome/Perfetto timeline |
//!
//! The subcommands that open a GPU share [`device`]: `--device PATH`, `--model PART`,
//! `--gpus N`, `--kernel 6.1|6.12`, the thunk's `KFD_DEVICE` / `KFD_MODEL_PRESET` /
//! `KFD_MODEL_GPUS`, else `/dev/kfd` when it exists and a gfx900 model otherwise.
//!
//! Conventions of every subcommand: `--json` wherever the output is data; colour only on a
//! terminal (`--color`, `NO_COLOR`); bad arguments or bad input end with one line on stderr
//! and status 2, a failure of the work itself with status 1; logging goes through
//! `env_logger` (`RUST_LOG=kfd::dqm=debug kfd trace create-queue`).
//!
//! Shared pieces: [`kernels`] holds the project's own kernel (`axpy`, kept compiled for gfx900
//! and gfx90a) that `kfd demo` and `kfd trace dispatch` run; [`input`] reads files, stdin and
//! hex text; [`code_file`] maps the files `kfd co` and `kfd disasm` read; [`names`] demangles
//! C++ names; [`target`] parses `--gfx`;
//! [`mqd_fields`] names MQD dwords; [`output`] holds the stdout writer and colours;
//! [`logging`] tees log records to `kfd trace`; [`measure`] holds the self-timed
//! measurements of `kfd bench` and `kfd demo`; [`progress`] the live line on stderr (only on a
//! terminal); [`units`] formats sizes, durations and rates.
//!
//! ## Examples
//!
//! Decoding a stream the way `kfd decode --hex "ffff1000 c0004600 00000407"` does:
//!
//! ```
//! use kfd_cli::decode::{decode_words, Engine};
//! use kfd_cli::input::parse_hex_dwords;
//! use kfd_cli::target::Target;
//!
//! let words = parse_hex_dwords("ffff1000 c0004600 00000407")?;
//! let gfx9: Target = "gfx9".parse()?;
//! let (engine, entries) = decode_words(&words, 0, Engine::Auto, gfx9, false);
//! assert_eq!(engine, Engine::Pm4);
//! let names: Vec<_> = entries.iter().map(|e| (e.offset, e.name)).collect();
//! assert_eq!(names, [(0, Some("NOP")), (1, Some("EVENT_WRITE"))]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The topology report of `kfd info --model gfx90a --gpus 2`, as data:
//!
//! ```
//! use kfd_cli::device::DeviceArgs;
//! use kfd_cli::info;
//!
//! let args = DeviceArgs { gpus: Some(2), ..DeviceArgs::model(thunk::Preset::Gfx90a) };
//! let report = info::gather(&args)?;
//! assert_eq!(report.source.description, "model of 2 × gfx90a (Linux 6.12)");
//! let gpus: Vec<_> = report.nodes.iter().filter_map(|n| n.gpu.as_ref()).collect();
//! assert_eq!(gpus.len(), 2);
//! assert_eq!(gpus[0].gfx_target.as_deref(), Some("gfx90a"));
//! assert_eq!((gpus[0].compute_units, gpus[0].wave_size), (104, 64));
//! # Ok::<(), kfd_cli::error::CliError>(())
//! ```
#![deny(unsafe_code)]

pub mod abi;
pub mod bench;
pub mod co;
pub mod code_file;
pub mod decode;
pub mod demo;
pub mod device;
pub mod disasm;
pub mod drain_tool;
pub mod error;
pub mod info;
pub mod input;
pub mod kernels;
pub mod logging;
pub mod measure;
pub mod mqd_fields;
pub mod mqd_tool;
pub mod names;
pub mod output;
pub mod progress;
pub mod run;
pub mod signals;
pub mod target;
pub mod thunk_ops;
pub mod trace;
pub mod units;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

use error::{CliError, EXIT_USAGE};
use output::{ColorChoice, Style};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "kfd",
    version,
    about = "AMD KFD user-space stack in Rust: the /dev/kfd ABI, PM4/SDMA packets, MQDs, and a model of the driver",
    propagate_version = true
)]
pub struct Cli {
    /// When to colour the output.
    #[arg(long, value_enum, global = true, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the /dev/kfd ioctl table: name, number, request code, argument size.
    Abi(abi::AbiArgs),
    /// Disassemble a PM4 or SDMA stream from a file, stdin or hex text.
    #[command(after_help = "Examples:
  kfd decode --hex 'c0055800 28c40000 ffffffff 00ffffff 0 0 4'
  kfd decode ring.bin --gfx gfx1030 --skip 64 --count 32
  xxd -p dump.bin | kfd decode --format bytes --engine sdma
  kfd decode ib.txt --json")]
    Decode(decode::DecodeArgs),
    /// Build, decode or list MQDs (memory queue descriptors) per generation.
    #[command(
        subcommand,
        after_help = "Examples:
  kfd mqd build --gfx gfx11 --kind aql --priority 12
  kfd mqd build --kind sdma --ring-size 1M --out sdma.mqd
  kfd mqd decode sdma.mqd --gfx gfx9
  kfd mqd fields --gfx gfx10 --kind sdma"
    )]
    Mqd(mqd_tool::MqdCommand),
    /// Run a scenario on the model and show each request layer by layer.
    #[command(after_help = "Examples:
  kfd trace create-queue
  kfd trace oversubscribe --chrome-trace over.json   (open in ui.perfetto.dev)
  kfd trace event-signal --queue-type sdma --model gfx1030
  kfd trace create-queue --fault hiq-full     (or KFD_MODEL_FAULTS=hiq-full)
  kfd trace vm-fault --json
  kfd trace dispatch --wave 3 --chrome-trace waves.json")]
    Trace(trace::TraceArgs),
    /// Show the topology of the GPU (or of the model): agents, memory, caches, links.
    #[command(after_help = "Examples:
  kfd info
  kfd info --model gfx90a --gpus 2
  kfd info --device /dev/kfd --json")]
    Info(info::InfoArgs),
    /// A guided run of the whole stack: open, topology, memory, PM4 and SDMA queues, an event, a drain channel, and the numbers.
    #[command(after_help = "Examples:
  kfd demo                      (what `make run` runs; the model when there is no /dev/kfd)
  kfd demo --model gfx90a --quick
  kfd demo --json | jq .measurements")]
    Demo(demo::DemoArgs),
    /// Run a drain channel: a producer fills GPU trace slots, the channel's queue drains them, the reader verifies.
    #[command(after_help = "Examples:
  kfd drain                                   (256 MiB, host producer, 8 × 1 MiB slots)
  kfd drain --producer pm4 --slot-size 64K --total 16M --trigger kernel-end
  kfd drain --trigger periodic --period 1ms --wait poll --json
  kfd drain --loss drop --slots 2 --record-size 4K")]
    Drain(drain_tool::DrainArgs),
    /// Measure the headline numbers (encode/decode, doorbell, events, SDMA, drain) and print them beside their targets.
    #[command(after_help = "Examples:
  kfd bench                     (about 20 s; the model when there is no /dev/kfd)
  kfd bench --quick --json")]
    Bench(bench::BenchArgs),
    /// List what a code object, offload bundle or HIP program holds: targets, kernels, device functions, variables, host-side kernel symbols.
    #[command(after_help = "Examples:
  kfd co app                    (a HIP program: every target, and host symbols → device kernels)
  kfd co kernels.hsaco --json
  kfd co app --target gfx90a:xnack-")]
    Co(co::CoArgs),
    /// Disassemble the kernels and device functions of a code object, bundle or HIP program (the text llvm-objdump prints), with each kernel's descriptor and registers.
    #[command(after_help = "Examples:
  kfd disasm app                         (every kernel and device function, every target)
  kfd disasm kernels.hsaco --kernel vadd
  kfd disasm app --gfx gfx90a")]
    Disasm(disasm::DisasmArgs),
    /// Run an unmodified ROCm program (HIP, libhsakmt, rocminfo) on the model and summarise what its kernels did; its exit status passes through.
    #[command(after_help = "Examples:
  kfd run -- ./vadd                        (the shim is found next to kfd: cargo build -p kfd-preload)
  kfd run --preset gfx90a --gpus 2 -- rocminfo
  kfd run --trace model.log -- ./app --size 1024
  kfd run --json -- ./app 2>&1 | tail -n 1")]
    Run(run::RunArgs),
}

/// Runs the command line `args` (the first is the program name) and returns the exit status.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    logging::init();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let style = Style::new(cli.color.enabled());
    let result = match &cli.command {
        Command::Abi(args) => abi::run(args, style),
        Command::Decode(args) => decode::run(args, style),
        Command::Mqd(command) => mqd_tool::run(command, style),
        Command::Trace(args) => trace::run(args, style),
        Command::Info(args) => info::run(args, style),
        Command::Demo(args) => demo::run(args, style),
        Command::Drain(args) => drain_tool::run(args, style),
        Command::Bench(args) => bench::run(args, style),
        Command::Co(args) => co::run(args, style),
        Command::Disasm(args) => disasm::run(args, style),
        Command::Run(args) => match run::run(args, style) {
            Ok(status) => return status,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => 0,
        Err(e) if e.message == output::BROKEN_PIPE => 0,
        Err(e) => {
            eprintln!("kfd: {}", e.one_line());
            e.code
        }
    }
}

/// Prints a clap error as one line (help and version as they are) and returns the status.
fn usage_error(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // A closed pipe (`kfd decode --help | head`) ends the help quietly.
            use std::io::Write as _;
            let _ = write!(std::io::stdout(), "{}", e.render())
                .and_then(|()| std::io::stdout().flush());
            0
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprint!("{}", e.render());
            EXIT_USAGE
        }
        _ => {
            eprintln!("kfd: {}", one_line_usage(&e.render().to_string()));
            EXIT_USAGE
        }
    }
}

/// Clap's multi-line error as `message (usage: …)`.
pub fn one_line_usage(rendered: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines
        .next()
        .unwrap_or("bad arguments")
        .trim_start_matches("error: ")
        .to_owned();
    let usage = rendered
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("Usage: "));
    // A list under the first line (the missing arguments) belongs to it.
    let first = if first.ends_with(':') {
        let items: Vec<&str> = rendered
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  ") && !l.trim().is_empty())
            .map(str::trim)
            .collect();
        format!("{first} {}", items.join(", "))
    } else {
        first
    };
    // An option with fixed choices: name them on the same line.
    let first = match rendered
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("[possible values: "))
        .and_then(|l| l.strip_suffix(']'))
    {
        Some(choices) => format!("{first}; choose one of {choices}"),
        None => first,
    };
    let message = match usage {
        Some(u) => format!("{first} (usage: {u})"),
        None => first,
    };
    CliError::usage(message).one_line()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line() {
        let rendered = "error: unexpected argument '--x' found\n\n  tip: to pass '--x' as a value, use '-- --x'\n\nUsage: kfd decode [OPTIONS] [FILE]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line_usage(rendered),
            "unexpected argument '--x' found (usage: kfd decode [OPTIONS] [FILE])"
        );
    }

    #[test]
    fn missing_arguments_are_named() {
        let rendered = "error: the following required arguments were not provided:\n  <FILE>\n\nUsage: kfd disasm --kernel <NAME> <FILE>\n";
        assert_eq!(
            one_line_usage(rendered),
            "the following required arguments were not provided: <FILE> (usage: kfd disasm --kernel <NAME> <FILE>)"
        );
    }

    #[test]
    fn fixed_choices_are_listed_in_the_error() {
        let rendered = "error: invalid value '5.0' for '--kernel <VERSION>'\n  [possible values: 6.1, 6.12]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line_usage(rendered),
            "invalid value '5.0' for '--kernel <VERSION>'; choose one of 6.1, 6.12"
        );
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
