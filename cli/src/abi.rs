//! `kfd abi`: the `/dev/kfd` ioctl table that `kfd-sys` spells, for the current interface or
//! Debian libhsakmt's 1.8 generation, and the field layout of any argument struct.

use kfd_sys::{ioctl::IoctlDesc, StructLayout};
use serde::Serialize;

use crate::error::{CliError, CliResult};
use crate::output::{Out, Style, Tone};

/// Which interface generation to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Generation {
    /// Interface 1.18 (Linux 6.12+).
    #[default]
    Current,
    /// Interface 1.8 + ROCm DKMS ioctls (Debian libhsakmt 5.2.3).
    #[value(name = "1.8")]
    V1_8,
}

/// What `kfd abi` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct AbiArgs {
    /// Which interface generation to print.
    #[arg(long, value_enum, default_value_t = Generation::Current)]
    pub generation: Generation,
    /// Print the field layout of this argument struct instead (e.g. kfd_event_data).
    #[arg(long, value_name = "STRUCT")]
    pub layout: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The ioctls of `generation`, by command number.
pub fn table(generation: Generation) -> Vec<&'static IoctlDesc> {
    let mut rows: Vec<_> = match generation {
        Generation::Current => kfd_sys::AMDKFD_IOCTLS.iter().collect(),
        Generation::V1_8 => kfd_sys::v1_8::AMDKFD_IOCTLS.iter().collect(),
    };
    rows.sort_by_key(|d| d.nr());
    rows
}

/// The argument struct called `name` (with or without `struct `) in `generation`.
pub fn find_struct(generation: Generation, name: &str) -> Option<StructLayout> {
    let name = name.trim().trim_start_matches("struct ").trim();
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

#[derive(Serialize)]
struct IoctlRow {
    nr: u32,
    name: &'static str,
    dir: &'static str,
    request: u32,
    size: usize,
    argument: &'static str,
}

#[derive(Serialize)]
struct AbiTable {
    interface: String,
    generation: &'static str,
    ioctls: Vec<IoctlRow>,
}

#[derive(Serialize)]
struct FieldRow {
    name: &'static str,
    offset: usize,
    size: usize,
}

#[derive(Serialize)]
struct LayoutJson {
    r#struct: &'static str,
    size: usize,
    align: usize,
    fields: Vec<FieldRow>,
}

/// Runs `kfd abi`.
pub fn run(args: &AbiArgs, style: Style) -> CliResult<()> {
    let mut out = Out::stdout();
    match &args.layout {
        Some(name) => {
            let layout = find_struct(args.generation, name).ok_or_else(|| {
                CliError::usage(format!(
                    "no argument struct named '{name}'; `kfd abi` lists them"
                ))
            })?;
            if args.json {
                out.json(&LayoutJson {
                    r#struct: layout.name,
                    size: layout.size,
                    align: layout.align,
                    fields: layout
                        .fields
                        .iter()
                        .map(|f| FieldRow {
                            name: f.name,
                            offset: f.offset,
                            size: f.size,
                        })
                        .collect(),
                })?;
            } else {
                print_layout(&mut out, &layout, style)?;
            }
        }
        None => print_ioctls(&mut out, args.generation, args.json, style)?,
    }
    out.flush()
}

fn print_ioctls(out: &mut Out, generation: Generation, json: bool, style: Style) -> CliResult<()> {
    let (title, version) = match generation {
        Generation::Current => ("current", kfd_sys::KFD_IOCTL_MINOR_VERSION),
        Generation::V1_8 => (
            "Debian libhsakmt 5.2.3 / DKMS",
            kfd_sys::v1_8::KFD_IOCTL_MINOR_VERSION,
        ),
    };
    let rows = table(generation);
    if json {
        return out.json(&AbiTable {
            interface: format!("1.{version}"),
            generation: title,
            ioctls: rows
                .iter()
                .map(|d| IoctlRow {
                    nr: d.nr(),
                    name: d.name,
                    dir: d.dir_name(),
                    request: d.request,
                    size: d.size(),
                    argument: d.arg.name,
                })
                .collect(),
        });
    }
    out.line(&style.paint(
        Tone::Bold,
        &format!(
            "/dev/kfd ioctls, interface 1.{version} ({title}): {} commands",
            rows.len()
        ),
    ))?;
    out.line(&format!(
        "{:>4}  {:<42} {:<4}  {:<10}  {:>5}  argument",
        "nr", "name", "dir", "request", "size"
    ))?;
    for d in rows {
        out.line(&format!(
            "{:#04x}  {} {:<4}  {:#010x}  {:>5}  struct {}",
            d.nr(),
            style.paint(Tone::Name, &format!("{:<42}", d.name)),
            d.dir_name(),
            d.request,
            d.size(),
            d.arg.name
        ))?;
    }
    Ok(())
}

fn print_layout(out: &mut Out, layout: &StructLayout, style: Style) -> CliResult<()> {
    out.line(&style.paint(
        Tone::Bold,
        &format!(
            "struct {} — {} bytes, align {}",
            layout.name, layout.size, layout.align
        ),
    ))?;
    out.line(&format!("{:>6}  {:>5}  field", "offset", "size"))?;
    for f in layout.fields {
        out.line(&format!("{:>6}  {:>5}  {}", f.offset, f.size, f.name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_queue_differs_between_generations() {
        let cq = |g| {
            table(g)
                .into_iter()
                .find(|d| d.name == "AMDKFD_IOC_CREATE_QUEUE")
                .map(|d| (d.request, d.size()))
        };
        // Facts §7.2: CREATE_QUEUE grew from 88 to 96 bytes in 1.17.
        assert_eq!(cq(Generation::Current), Some((0xC060_4B02, 96)));
        assert_eq!(cq(Generation::V1_8), Some((0xC058_4B02, 88)));
    }

    #[test]
    fn structs_are_found_with_or_without_the_keyword() {
        let a = find_struct(Generation::Current, "struct kfd_ioctl_create_queue_args").unwrap();
        assert_eq!(a.size, 96);
        assert!(find_struct(Generation::Current, "no_such").is_none());
    }
}
