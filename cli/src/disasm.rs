//! `kfd disasm`: the kernels and device functions of a code object, offload bundle or HIP
//! program — each kernel's descriptor (as `.amdhsa_*` directives) and register counts, then the
//! code, one instruction a line in the text `llvm-objdump-15 -d` prints (the `// address: words`
//! comment and the `<symbol+offset>` of branch targets included), with a label line before
//! every instruction a branch goes to.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use codeobj::{CodeObject, SymbolKind, TargetId};
use isa::{decode, DecodeError, Instruction, Target};

use crate::co::{choose, parse_container, parse_query};
use crate::error::{CliError, CliResult};
use crate::names;
use crate::output::{Out, Style, Tone};

/// The processors the decoder knows, for messages.
const DECODER_KNOWS: &str = "gfx900, gfx906, gfx908, gfx90a";

/// `kfd disasm` arguments.
#[derive(Debug, clap::Args)]
pub struct DisasmArgs {
    /// A code object (`.co`, `.hsaco`), a clang offload bundle, or a HIP program or shared library.
    pub file: PathBuf,
    /// Only the kernel or device function of this name: mangled, as the metadata names it,
    /// demangled (`void bitonic<int>(int*, int)`) or without return type and parameters
    /// (`bitonic<int>`).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// Only the code objects for this target: a processor the decoder knows (gfx900, gfx906,
    /// gfx908, gfx90a), matching any xnack/sramecc setting, or a full target ID
    /// (`gfx90a:xnack-`); default: every code object, each decoded for its own processor.
    #[arg(long, value_name = "TARGET_ID")]
    pub gfx: Option<String>,
    /// Show C++ names demangled, as `llvm-objdump -C` does.
    #[arg(long, short = 'C')]
    pub demangle: bool,
}

/// Runs `kfd disasm`. The listing goes out one code object at a time: a ROCm library's is
/// gigabytes of text.
pub fn run(args: &DisasmArgs, style: Style) -> CliResult<()> {
    let label = args.file.display().to_string();
    let options = Options {
        only: args.kernel.as_deref(),
        gfx: args.gfx.as_deref(),
        demangle: args.demangle,
    };
    let query = options.query()?;
    let bytes = crate::code_file::open(&args.file)?;
    let mut out = Out::stdout();
    write_listing(&bytes, &options, query.as_ref(), style, &mut |text| {
        out.text(text)
    })
    .map_err(|e| e.context(&label))?;
    out.flush()
}

/// What to list.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options<'a> {
    /// Only the kernel or device function of this name (any spelling, see [`names::matches`]).
    pub only: Option<&'a str>,
    /// Only the code objects for this target ID.
    pub gfx: Option<&'a str>,
    /// Names demangled.
    pub demangle: bool,
}

fn parse_gfx(name: &str) -> CliResult<Target> {
    name.parse::<Target>()
        .map_err(|e| CliError::usage(format!("--gfx {name:?}: {e}")))
}

impl Options<'_> {
    /// The `--gfx` target ID, checked against the decoder.
    fn query(&self) -> CliResult<Option<TargetId>> {
        self.gfx
            .map(|g| {
                let q = parse_query("--gfx", g)?;
                parse_gfx(&q.processor)?;
                Ok(q)
            })
            .transpose()
    }
}

/// The whole listing of `bytes` as text (see [`write_listing`]).
pub fn listing(bytes: &[u8], options: &Options<'_>, style: Style) -> CliResult<String> {
    let query = options.query()?;
    let mut text = String::new();
    write_listing(bytes, options, query.as_ref(), style, &mut |t| {
        text.push_str(t);
        Ok(())
    })?;
    Ok(text)
}

/// Writes the listing of `bytes` to `sink`, a code object at a time: every chosen code object
/// a decoder exists for (one for a processor it does not know gets a line saying so; if no
/// code object is left, that is the error).
pub fn write_listing(
    bytes: &[u8],
    options: &Options<'_>,
    query: Option<&TargetId>,
    style: Style,
    sink: &mut dyn FnMut(&str) -> CliResult<()>,
) -> CliResult<()> {
    let container = parse_container(bytes)?;
    let entries = choose(&container, query)?;
    let mut found = false;
    let mut decoded = 0usize;
    let mut skipped = Vec::new();
    for entry in entries {
        let mut out = String::new();
        let co = match entry.code_object() {
            Ok(co) => co,
            Err(e) => {
                let _ = writeln!(
                    out,
                    "{}",
                    style.paint(
                        Tone::Error,
                        &format!("{} — not disassembled: {e}", entry.id)
                    )
                );
                skipped.push(entry.target.to_string());
                sink(&out)?;
                continue;
            }
        };
        let Ok(target) = co.target().processor.parse::<Target>() else {
            let _ = writeln!(
                out,
                "{}",
                style.paint(
                    Tone::Dim,
                    &format!(
                        "{} — target {}: not disassembled (the decoder knows {DECODER_KNOWS})",
                        entry.id,
                        co.target()
                    )
                )
            );
            skipped.push(co.target().to_string());
            sink(&out)?;
            continue;
        };
        decoded += 1;
        let mut text = String::new();
        if code_object_listing(&mut text, &co, target, options, style) {
            found = true;
            let _ = writeln!(
                out,
                "{}",
                style.paint(
                    Tone::Bold,
                    &format!("{} — decoded for {}", entry.id, target.name())
                )
            );
            out += &text;
            sink(&out)?;
        }
    }
    if decoded == 0 {
        skipped.dedup();
        let mut seen = BTreeSet::new();
        skipped.retain(|t| seen.insert(t.clone()));
        return Err(CliError::failure(format!(
            "nothing to disassemble: the code objects are for {}, and the decoder knows {DECODER_KNOWS}",
            skipped.join(", ")
        )));
    }
    match options.only {
        Some(name) if !found => Err(CliError::failure(format!(
            "no kernel or device function named {name:?} (kfd co FILE lists them; -C shows them demangled)"
        ))),
        _ => Ok(()),
    }
}

/// One symbol's code to list: from its address to the next symbol of its section (or the
/// section's end), as llvm-objdump walks it, alignment padding included.
struct Routine<'a> {
    /// The symbol's name as shown.
    name: String,
    /// Its address.
    start: u64,
    /// Where its listing ends.
    end: u64,
    /// The kernel, for its heading.
    kernel: Option<&'a codeobj::Kernel>,
    /// The symbol's own size.
    size: u64,
}

/// Where each code symbol of `co` lies, sorted by address: what llvm-objdump splits a code
/// section at, and what it names branch targets after.
fn code_symbols(co: &CodeObject) -> Vec<(u64, &str)> {
    let mut symbols: Vec<(u64, &str)> = co
        .symbols()
        .iter()
        .filter(|s| {
            s.is_defined()
                && !matches!(s.kind, SymbolKind::KernelDescriptor | SymbolKind::Variable)
                && co.code_section_at(s.value).is_some()
        })
        .map(|s| (s.value, s.name.as_str()))
        .collect();
    symbols.sort();
    symbols.dedup_by_key(|s| s.0);
    symbols
}

/// The end of the listing of a symbol at `start` with `size` bytes: the next symbol's address
/// in the same code section, or the section's end; a symbol outside every code section ends
/// at its size.
fn routine_end(co: &CodeObject, symbols: &[(u64, &str)], start: u64, size: u64) -> u64 {
    let Some(section) = co.code_section_at(start) else {
        return start.saturating_add(size);
    };
    let section_end = section.address.saturating_add(section.size);
    symbols
        .iter()
        .map(|(a, _)| *a)
        .find(|a| *a > start)
        .filter(|a| *a < section_end)
        .unwrap_or(section_end)
}

fn code_object_listing(
    out: &mut String,
    co: &CodeObject,
    target: Target,
    options: &Options<'_>,
    style: Style,
) -> bool {
    let wanted =
        |name: &str, meta: Option<&str>| options.only.is_none_or(|o| names::matches(o, name, meta));
    let symbols = code_symbols(co);
    let mut routines = Vec::new();
    for k in co.kernels() {
        let meta = k.metadata.as_ref().map(|m| m.name.as_str());
        if wanted(&k.name, meta) {
            routines.push(Routine {
                name: names::shown(&k.name, options.demangle),
                start: k.entry_address,
                end: routine_end(co, &symbols, k.entry_address, k.code_size),
                kernel: Some(k),
                size: k.code_size,
            });
        }
    }
    for f in co.device_functions() {
        if wanted(&f.name, None) {
            routines.push(Routine {
                name: names::shown(&f.name, options.demangle),
                start: f.value,
                end: routine_end(co, &symbols, f.value, f.size),
                kernel: None,
                size: f.size,
            });
        }
    }
    routines.sort_by_key(|r| r.start);
    let shown_symbols: Vec<(u64, String)> = symbols
        .iter()
        .map(|(a, n)| (*a, names::shown(n, options.demangle)))
        .collect();
    for r in &routines {
        match r.kernel {
            Some(k) => kernel_heading(out, k, r, target, style),
            None => {
                let _ = writeln!(
                    out,
                    "\n{} {}  at {:#x}  {} bytes",
                    style.paint(Tone::Bold, "function"),
                    style.paint(Tone::Name, &r.name),
                    r.start,
                    r.size
                );
            }
        }
        routine(out, co, target, r, &shown_symbols, style);
    }
    !routines.is_empty()
}

fn kernel_heading(
    out: &mut String,
    k: &codeobj::Kernel,
    r: &Routine<'_>,
    target: Target,
    style: Style,
) {
    let _ = writeln!(
        out,
        "\n{} {}  descriptor {:#x}  entry {:#x}  {} bytes",
        style.paint(Tone::Bold, "kernel"),
        style.paint(Tone::Name, &r.name),
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
}

/// What one position of a routine holds.
enum Slot {
    Inst(Instruction),
    Bad(DecodeError),
    /// A run of zero bytes llvm-objdump folds into `...` (at least 8, a multiple of 4).
    Zeros,
}

/// Signed dword offset of a SOPP branch → target address.
fn branch_target(inst: &Instruction, addr: u64) -> Option<u64> {
    if !isa::disasm::is_branch(inst.op) {
        return None;
    }
    let simm = i64::from((inst.words[0] & 0xFFFF) as u16 as i16);
    Some(addr.wrapping_add(4).wrapping_add((simm * 4) as u64))
}

/// How many of the zero bytes `bytes` starts with llvm-objdump skips as `...`: none for a run
/// shorter than 8, else the run rounded down to whole dwords.
fn skippable_zeros(bytes: &[u8]) -> usize {
    let run = bytes.iter().take_while(|b| **b == 0).count();
    if run < 8 {
        0
    } else {
        run & !3
    }
}

fn routine(
    out: &mut String,
    co: &CodeObject,
    target: Target,
    r: &Routine<'_>,
    symbols: &[(u64, String)],
    style: Style,
) {
    let span = r.end.saturating_sub(r.start);
    let Some(code) = co.bytes_at(r.start, span) else {
        let _ = writeln!(
            out,
            "  (its {} bytes at {:#x} are not in the file)",
            span, r.start
        );
        return;
    };
    // Decode once, then label every branch target inside the routine.
    let mut slots = Vec::new();
    let mut at = 0usize;
    while at < code.len() {
        let addr = r.start + at as u64;
        let zeros = skippable_zeros(&code[at..]);
        if zeros > 0 {
            slots.push((addr, Slot::Zeros));
            at += zeros;
            continue;
        }
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
            _ => None,
        })
        .filter(|t| (r.start..r.end).contains(t))
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
                    let _ = write!(line, " <{}>", symbolize(symbols, t));
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
            Slot::Zeros => {
                let _ = writeln!(out, "\t\t...");
            }
        }
    }
}

/// `name` or `name+0xOFF` for an address, after the nearest code symbol at or before it, as
/// llvm-objdump annotates branch targets.
fn symbolize(symbols: &[(u64, String)], addr: u64) -> String {
    match symbols.iter().rev().find(|(a, _)| *a <= addr) {
        Some((a, name)) if *a == addr => name.clone(),
        Some((a, name)) => format!("{name}+{:#x}", addr - a),
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
