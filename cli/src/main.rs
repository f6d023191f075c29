//! `kfd` — the project's command line.
//!
//! For now it prints the ABI that `kfd-sys` spells: every ioctl with its request code and
//! argument size, for the current interface or Debian libhsakmt's 1.8 generation, and the
//! field layout of any argument struct. Later issues add `info`, `demo`, `trace`, `decode`,
//! `mqd`, `drain` and `bench`.

use clap::{Parser, Subcommand, ValueEnum};
use kfd_sys::{ioctl::IoctlDesc, StructLayout};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "kfd", version, about = "AMD KFD user-space stack in Rust")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the /dev/kfd ioctl table: name, number, request code, argument size.
    Abi {
        /// Which interface generation to print.
        #[arg(long, value_enum, default_value_t = Generation::Current)]
        generation: Generation,
        /// Print the field layout of this argument struct instead (e.g. kfd_event_data).
        #[arg(long, value_name = "STRUCT")]
        layout: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Generation {
    /// Interface 1.18 (Linux 6.12+).
    Current,
    /// Interface 1.8 + ROCm DKMS ioctls (Debian libhsakmt 5.2.3).
    #[value(name = "1.8")]
    V1_8,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Abi {
            generation,
            layout: None,
        } => {
            print_ioctls(generation);
            ExitCode::SUCCESS
        }
        Command::Abi {
            generation,
            layout: Some(name),
        } => match find_struct(generation, &name) {
            Some(layout) => {
                print_layout(&layout);
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("kfd: no argument struct named '{name}'; `kfd abi` lists them");
                ExitCode::from(2)
            }
        },
    }
}

fn table(generation: Generation) -> Vec<&'static IoctlDesc> {
    let mut rows: Vec<_> = match generation {
        Generation::Current => kfd_sys::AMDKFD_IOCTLS.iter().collect(),
        Generation::V1_8 => kfd_sys::v1_8::AMDKFD_IOCTLS.iter().collect(),
    };
    rows.sort_by_key(|d| d.nr());
    rows
}

fn print_ioctls(generation: Generation) {
    let (title, version) = match generation {
        Generation::Current => ("current", kfd_sys::KFD_IOCTL_MINOR_VERSION),
        Generation::V1_8 => (
            "Debian libhsakmt 5.2.3 / DKMS",
            kfd_sys::v1_8::KFD_IOCTL_MINOR_VERSION,
        ),
    };
    let rows = table(generation);
    println!(
        "/dev/kfd ioctls, interface 1.{version} ({title}): {} commands",
        rows.len()
    );
    println!(
        "{:>4}  {:<42} {:<4}  {:<10}  {:>5}  argument",
        "nr", "name", "dir", "request", "size"
    );
    for d in rows {
        println!(
            "{:#04x}  {:<42} {:<4}  {:#010x}  {:>5}  struct {}",
            d.nr(),
            d.name,
            d.dir_name(),
            d.request,
            d.size(),
            d.arg.name
        );
    }
}

fn find_struct(generation: Generation, name: &str) -> Option<StructLayout> {
    let name = name.trim_start_matches("struct ").trim();
    let legacy = match generation {
        Generation::V1_8 => kfd_sys::v1_8::STRUCTS,
        Generation::Current => &[],
    };
    legacy
        .iter()
        .chain(kfd_sys::ALL_STRUCTS)
        .find(|s| s.name == name)
        .copied()
}

fn print_layout(layout: &StructLayout) {
    println!(
        "struct {} — {} bytes, align {}",
        layout.name, layout.size, layout.align
    );
    println!("{:>6}  {:>5}  field", "offset", "size");
    for f in layout.fields {
        println!("{:>6}  {:>5}  {}", f.offset, f.size, f.name);
    }
}
