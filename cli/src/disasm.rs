//! `kfd disasm`: the kernels and device functions of a code object, offload bundle or HIP
//! program — each kernel's descriptor (as `.amdhsa_*` directives) and register counts, then the
//! code, one instruction a line in the text `llvm-objdump-15 -d` prints (the `// address: words`
//! comment and the `<symbol+offset>` of branch targets included), with a label line before
//! every instruction a branch goes to.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use codeobj::{CodeObject, Container, TargetId};
use isa::{decode, DecodeError, Instruction, Target};

use crate::error::{CliError, CliResult};
use crate::output::{Out, Style, Tone};

/// `kfd disasm` arguments.
#[derive(Debug, clap::Args)]
pub struct DisasmArgs {
    /// A code object (`.co`, `.hsaco`), a clang offload bundle, or a HIP program or shared library.
    pub file: PathBuf,
    /// Only the kernel or device function of this name (mangled or as the metadata names it).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// Decode for this GPU (`gfx900`, `gfx906`, `gfx908`, `gfx90a`) and pick the code object
    /// that runs there; default: every code object, each for its own target.
    #[arg(long, value_name = "GFX")]
    pub gfx: Option<String>,
}

/// Runs `kfd disasm`.
pub fn run(args: &DisasmArgs, style: Style) -> CliResult<()> {
    let label = args.file.display().to_string();
    let bytes = std::fs::read(&args.file)
        .map_err(|e| CliError::usage(format!("cannot read '{label}': {e}")))?;
    let text = listing(&bytes, args.kernel.as_deref(), args.gfx.as_deref(), style)
        .map_err(|e| e.context(&label))?;
    let mut out = Out::stdout();
    out.text(&text)?;
    out.flush()
}

fn parse_gfx(name: &str) -> CliResult<Target> {
    name.parse::<Target>().map_err(|e| {
        CliError::usage(format!(
            "--gfx {name:?}: {e} (the decoder knows gfx900, gfx906, gfx908, gfx90a)"
        ))
    })
}

/// The whole listing of `bytes` as text.
pub fn listing(
    bytes: &[u8],
    only: Option<&str>,
    gfx: Option<&str>,
    style: Style,
) -> CliResult<String> {
    let container = Container::parse(bytes).map_err(|e| {
        CliError::failure(format!(
            "not a code object, offload bundle or HIP program: {e}"
        ))
    })?;
    let forced = gfx.map(parse_gfx).transpose()?;
    let entries: Vec<_> = match forced {
        Some(t) => {
            let agent = TargetId::new(t.name());
            vec![container
                .select(&agent)
                .map_err(|e| CliError::failure(format!("no code object for {}: {e}", t.name())))?]
        }
        None => container.entries().iter().collect(),
    };
    let mut out = String::new();
    let mut found = false;
    for entry in entries {
        let co = entry
            .code_object()
            .map_err(|e| CliError::failure(format!("entry {}: {e}", entry.id)))?;
        let target = match forced {
            Some(t) => t,
            None => parse_gfx(&co.target().processor).map_err(|_| {
                CliError::failure(format!(
                    "entry {} is for {}, which the decoder does not know (gfx9 targets only: gfx900, gfx906, gfx908, gfx90a)",
                    entry.id,
                    co.target()
                ))
            })?,
        };
        let _ = writeln!(
            out,
            "{}",
            style.paint(
                Tone::Bold,
                &format!("{} — decoded for {}", entry.id, target.name())
            )
        );
        found |= code_object_listing(&mut out, &co, target, only, style);
    }
    match only {
        Some(name) if !found => Err(CliError::failure(format!(
            "no kernel or device function named {name:?} (kfd co FILE lists them)"
        ))),
        _ => Ok(out),
    }
}

/// One symbol's code to list.
struct Routine<'a> {
    name: &'a str,
    start: u64,
    size: u64,
}

fn code_object_listing(
    out: &mut String,
    co: &CodeObject,
    target: Target,
    only: Option<&str>,
    style: Style,
) -> bool {
    let wanted = |name: &str, meta: Option<&str>| only.is_none_or(|o| o == name || meta == Some(o));
    let mut found = false;
    for k in co.kernels() {
        let meta = k.metadata.as_ref().map(|m| m.name.as_str());
        if !wanted(&k.name, meta) {
            continue;
        }
        found = true;
        let _ = writeln!(
            out,
            "\n{} {}  descriptor {:#x}  entry {:#x}  {} bytes",
            style.paint(Tone::Bold, "kernel"),
            style.paint(Tone::Name, &k.name),
            k.descriptor_address,
            k.entry_address,
            k.code_size
        );
        if let Some(m) = &k.metadata {
            let _ = writeln!(
                out,
                "  registers: {} SGPRs, {} VGPRs{}; spills: {} SGPRs, {} VGPRs; wave{}; kernarg {} bytes, LDS {} bytes, scratch {} bytes per lane",
                m.sgpr_count,
                m.vgpr_count,
                m.agpr_count.map_or(String::new(), |a| format!(", {a} AGPRs")),
                m.sgpr_spill_count.unwrap_or(0),
                m.vgpr_spill_count.unwrap_or(0),
                m.wavefront_size,
                m.kernarg_segment_size,
                m.group_segment_fixed_size,
                m.private_segment_fixed_size
            );
        }
        for line in k.descriptor.to_directives(&k.name, target.name()).lines() {
            let line = line.trim();
            let indent = if line.starts_with(".amdhsa_kernel") || line == ".end_amdhsa_kernel" {
                "  "
            } else {
                "    "
            };
            let _ = writeln!(out, "{indent}{}", style.paint(Tone::Dim, line));
        }
        routine(
            out,
            co,
            target,
            &Routine {
                name: &k.name,
                start: k.entry_address,
                size: k.code_size,
            },
            style,
        );
    }
    for f in co.device_functions() {
        if !wanted(&f.name, None) {
            continue;
        }
        found = true;
        let _ = writeln!(
            out,
            "\n{} {}  at {:#x}  {} bytes",
            style.paint(Tone::Bold, "function"),
            style.paint(Tone::Name, &f.name),
            f.value,
            f.size
        );
        routine(
            out,
            co,
            target,
            &Routine {
                name: &f.name,
                start: f.value,
                size: f.size,
            },
            style,
        );
    }
    found
}

/// What one dword position of a routine holds.
enum Slot {
    Inst(Instruction),
    Bad(DecodeError),
}

/// Signed dword offset of a SOPP branch → target address.
fn branch_target(inst: &Instruction, addr: u64) -> Option<u64> {
    if !isa::disasm::is_branch(inst.op) {
        return None;
    }
    let simm = i64::from((inst.words[0] & 0xFFFF) as u16 as i16);
    Some(addr.wrapping_add(4).wrapping_add((simm * 4) as u64))
}

fn routine(out: &mut String, co: &CodeObject, target: Target, r: &Routine<'_>, style: Style) {
    let Some(code) = co.bytes_at(r.start, r.size) else {
        let _ = writeln!(
            out,
            "  (its {} bytes at {:#x} are not in the file)",
            r.size, r.start
        );
        return;
    };
    // Decode once, then label every branch target inside the routine.
    let mut slots = Vec::new();
    let mut at = 0usize;
    while at < code.len() {
        let addr = r.start + at as u64;
        match decode(&code[at..], addr, target) {
            Ok((inst, len)) => {
                slots.push((addr, Slot::Inst(inst)));
                at += len.max(4);
            }
            Err(e) => {
                slots.push((addr, Slot::Bad(e)));
                at += 4;
            }
        }
    }
    let labels: BTreeSet<u64> = slots
        .iter()
        .filter_map(|(addr, s)| match s {
            Slot::Inst(i) => branch_target(i, *addr),
            Slot::Bad(_) => None,
        })
        .filter(|t| (r.start..r.start + r.size).contains(t))
        .collect();
    let _ = writeln!(out, "\n{:016x} <{}>:", r.start, r.name);
    for (addr, slot) in &slots {
        if labels.contains(addr) && *addr != r.start {
            let _ = writeln!(
                out,
                "{}",
                style.paint(Tone::Name, &format!("<{}+{:#x}>:", r.name, addr - r.start))
            );
        }
        let off = (addr - r.start) as usize;
        match slot {
            Slot::Inst(inst) => {
                let len = usize::from(inst.len).clamp(4, code.len() - off);
                let words = words_hex(&code[off..off + len]);
                let mut line = format!("\t{:<59}// {addr:012X}: {words}", inst.to_string());
                if let Some(t) = branch_target(inst, *addr) {
                    let _ = write!(line, " <{}>", symbolize(r, t));
                }
                let _ = writeln!(out, "{line}");
            }
            Slot::Bad(e) => {
                let len = 4.min(code.len() - off);
                let words = words_hex(&code[off..off + len]);
                let _ = writeln!(
                    out,
                    "\t{:<59}// {addr:012X}: {words}",
                    style.paint(Tone::Error, &format!("; {e}"))
                );
            }
        }
    }
}

/// `name` or `name+0xOFF` for an address, as llvm-objdump annotates branch targets.
fn symbolize(r: &Routine<'_>, addr: u64) -> String {
    match addr.checked_sub(r.start) {
        Some(0) => r.name.to_string(),
        Some(off) => format!("{}+{off:#x}", r.name),
        None => format!("{addr:#x}"),
    }
}

fn words_hex(bytes: &[u8]) -> String {
    bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            format!("{:08X}", u32::from_le_bytes(w))
        })
        .collect::<Vec<_>>()
        .join(" ")
}
