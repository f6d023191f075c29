//! `kfd co`: what a code-object file holds — the targets it was built for, and per target the
//! kernels (descriptor and entry addresses, code size, segment sizes, registers), the device
//! functions and variables with their sizes, the symbols it needs from other code objects; for a
//! HIP program or library also the host-side kernel symbols paired with their device kernels.
//!
//! A HIP program of several translation units, or a ROCm library, holds one offload bundle per
//! unit: every one of them is listed (with `--target`, each bundle's code objects for that
//! target — the loader loads one from every bundle).

use std::path::PathBuf;

use codeobj::{Binding, CodeObject, Container, ContainerEntry, ContainerKind, TargetId};
use serde_json::{json, Value};

use crate::error::{CliError, CliResult};
use crate::names;
use crate::output::{Out, Style, Tone};

/// `kfd co` arguments.
#[derive(Debug, clap::Args)]
pub struct CoArgs {
    /// A code object (`.co`, `.hsaco`), a clang offload bundle, or a HIP program or shared library.
    pub file: PathBuf,
    /// Show only the code objects for this target: a processor (`gfx90a`, matching any
    /// xnack/sramecc setting) or a full target ID (`gfx90a:xnack-`,
    /// `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
    #[arg(long, value_name = "TARGET_ID")]
    pub target: Option<String>,
    /// Show C++ names demangled (`void bitonic<int>(int*, int)`), as `llvm-objdump -C` does;
    /// the JSON always has both.
    #[arg(long, short = 'C')]
    pub demangle: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `kfd co`.
pub fn run(args: &CoArgs, style: Style) -> CliResult<()> {
    let label = args.file.display().to_string();
    if let Some(t) = &args.target {
        parse_query("--target", t)?;
    }
    let bytes = crate::code_file::open(&args.file)?;
    let report = inspect(&bytes, args.target.as_deref()).map_err(|e| e.context(&label))?;
    let mut out = Out::stdout();
    if args.json {
        out.json(&report)?;
    } else {
        out.text(&render(&label, &report, args.demangle, style))?;
    }
    out.flush()
}

/// The container in `bytes`, or the error that says it is none.
pub fn parse_container(bytes: &[u8]) -> CliResult<Container<'_>> {
    Container::parse(bytes).map_err(|e| {
        CliError::failure(format!(
            "not a code object, offload bundle or HIP program: {e}"
        ))
    })
}

/// The target ID of `--target`/`--gfx` (`option`), as a query.
pub fn parse_query(option: &str, text: &str) -> CliResult<TargetId> {
    text.parse::<TargetId>().map_err(|_| {
        CliError::usage(format!(
            "{option} {text:?} is not a target ID (a processor such as gfx90a, optionally with \
             :sramecc± and :xnack±, or amdgcn-amd-amdhsa--gfx90a:xnack-)"
        ))
    })
}

/// The entries of `container` for `query` (every entry without one); the error names each
/// target the file has once.
pub fn choose<'c, 'data>(
    container: &'c Container<'data>,
    query: Option<&TargetId>,
) -> CliResult<Vec<&'c ContainerEntry<'data>>> {
    match query {
        Some(q) => container.matching(q).map_err(|_| {
            let have = container.distinct_targets();
            CliError::failure(format!(
                "no code object for {q}; the file has {}",
                if have.is_empty() {
                    "none".to_owned()
                } else {
                    have.join(", ")
                }
            ))
        }),
        None => Ok(container.entries().iter().collect()),
    }
}

/// What `kfd co` reports about `bytes`, as JSON (the text view is rendered from it, so both
/// always say the same). An entry whose code object does not parse is listed with its error.
pub fn inspect(bytes: &[u8], target: Option<&str>) -> CliResult<Value> {
    let container = parse_container(bytes)?;
    let query = target.map(|t| parse_query("--target", t)).transpose()?;
    let chosen = choose(&container, query.as_ref())?;
    let mut objects = Vec::new();
    let mut parsed = Vec::new();
    for entry in &chosen {
        let mut o = match entry.code_object() {
            Ok(co) => {
                parsed.push(*entry);
                code_object_json(&co)
            }
            Err(e) => json!({"target": entry.target.to_string(), "error": e.to_string()}),
        };
        o["entry"] = json!(entry.id);
        o["bundle"] = json!(entry.bundle);
        o["file_offset"] = json!(entry.file_offset);
        o["bytes"] = json!(entry.bytes.len());
        objects.push(o);
    }
    let host_kernels: Vec<Value> = container
        .host_kernels_of(&parsed)
        .map_err(|e| CliError::failure(format!("host kernel symbols: {e}")))?
        .into_iter()
        .map(|k| {
            json!({
                "device_kernel": k.device_name,
                "demangled": names::demangle(&k.device_name),
                "handle": {"name": k.handle.name, "address": k.handle.address},
                "stub": k.stub.map(|s| json!({"name": s.name, "address": s.address})),
                "targets": k.targets.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({
        "container": kind_name(container.kind()),
        "bundles": container.bundle_count(),
        "targets": container.distinct_targets(),
        "code_objects": objects,
        "host_kernels": host_kernels,
    }))
}

fn kind_name(kind: ContainerKind) -> &'static str {
    match kind {
        ContainerKind::CodeObject => "code object",
        ContainerKind::OffloadBundle => "offload bundle",
        ContainerKind::HostExecutable => "HIP host program",
    }
}

fn binding_name(b: Binding) -> String {
    match b {
        Binding::Local => "local".into(),
        Binding::Global => "global".into(),
        Binding::Weak => "weak".into(),
        Binding::Other(v) => format!("binding {v}"),
    }
}

fn code_object_json(co: &CodeObject) -> Value {
    let kernels: Vec<Value> = co
        .kernels()
        .iter()
        .map(|k| {
            let m = k.metadata.as_ref();
            json!({
                "name": k.name,
                "demangled": names::demangle(&k.name),
                "descriptor": k.descriptor_address,
                "entry": k.entry_address,
                "code_size": k.code_size,
                "kernarg_size": k.descriptor.kernarg_size,
                "group_segment_size": k.descriptor.group_segment_fixed_size,
                "private_segment_size": k.descriptor.private_segment_fixed_size,
                "sgprs": m.map(|m| m.sgpr_count),
                "vgprs": m.map(|m| m.vgpr_count),
                "agprs": m.and_then(|m| m.agpr_count),
                "wavefront_size": m.map(|m| m.wavefront_size),
                "arguments": m.map_or(0, |m| m.args.len()),
            })
        })
        .collect();
    let symbols = |it: &mut dyn Iterator<Item = &codeobj::Symbol>| -> Vec<Value> {
        it.map(|s| {
            json!({
                "name": s.name,
                "demangled": names::demangle(&s.name),
                "address": s.value,
                "size": s.size,
                "binding": binding_name(s.binding),
            })
        })
        .collect()
    };
    json!({
        "target": co.target().to_string(),
        "processor_named": co.target().is_named(),
        "e_flags": co.e_flags(),
        "version": format!("{:?}", co.version()),
        "kernels": kernels,
        "device_functions": symbols(&mut co.device_functions()),
        "variables": symbols(&mut co.variables()),
        "needs": co.undefined_symbols().map(|s| s.name.clone()).collect::<Vec<_>>(),
    })
}

fn hex(v: &Value) -> String {
    v.as_u64().map_or_else(|| "-".into(), |n| format!("{n:#x}"))
}

fn num(v: &Value) -> String {
    v.as_u64().map_or_else(|| "-".into(), |n| n.to_string())
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("-")
}

/// A symbol's name as the text view shows it: demangled with `-C`.
fn name_of(v: &Value, demangled: bool) -> &str {
    match v["demangled"].as_str() {
        Some(d) if demangled => d,
        _ => text(&v["name"]),
    }
}

/// The text view of an [`inspect`] report; `demangled` shows C++ names demangled.
pub fn render(label: &str, report: &Value, demangled: bool, style: Style) -> String {
    let mut s = String::new();
    let objects = report["code_objects"].as_array().map_or(&[][..], |v| v);
    let bundles = report["bundles"].as_u64().unwrap_or(0);
    s += &format!(
        "{label}: {}, {} device code object(s){}\n",
        text(&report["container"]),
        objects.len(),
        if bundles > 1 {
            format!(" from {bundles} bundles (one per translation unit)")
        } else {
            String::new()
        }
    );
    for o in objects {
        let bundle = if bundles > 1 {
            format!(", bundle {}", num(&o["bundle"]))
        } else {
            String::new()
        };
        if let Some(e) = o["error"].as_str() {
            s += &format!(
                "\n{} — target {}{bundle}, {} bytes at file offset {}: {}\n",
                style.paint(Tone::Bold, text(&o["entry"])),
                text(&o["target"]),
                num(&o["bytes"]),
                hex(&o["file_offset"]),
                style.paint(Tone::Error, e),
            );
            continue;
        }
        let unnamed = if o["processor_named"].as_bool() == Some(false) {
            " (a processor kfd has no name for)"
        } else {
            ""
        };
        s += &format!(
            "\n{} — target {}{unnamed}{bundle}, code object {}, {} bytes at file offset {}\n",
            style.paint(Tone::Bold, text(&o["entry"])),
            text(&o["target"]),
            text(&o["version"]),
            num(&o["bytes"]),
            hex(&o["file_offset"]),
        );
        for k in o["kernels"].as_array().into_iter().flatten() {
            s += &format!(
                "  kernel    {}\n            descriptor {}  entry {}  code {} B  kernarg {} B  LDS {} B  scratch {} B/lane  sgpr {} vgpr {}{}  wave{}\n",
                style.paint(Tone::Name, name_of(k, demangled)),
                hex(&k["descriptor"]),
                hex(&k["entry"]),
                num(&k["code_size"]),
                num(&k["kernarg_size"]),
                num(&k["group_segment_size"]),
                num(&k["private_segment_size"]),
                num(&k["sgprs"]),
                num(&k["vgprs"]),
                k["agprs"]
                    .as_u64()
                    .map_or(String::new(), |a| format!(" agpr {a}")),
                num(&k["wavefront_size"]),
            );
        }
        for (what, key) in [("function", "device_functions"), ("variable", "variables")] {
            for f in o[key].as_array().into_iter().flatten() {
                s += &format!(
                    "  {what:<9} {}  at {}  {} B  {}\n",
                    style.paint(Tone::Name, name_of(f, demangled)),
                    hex(&f["address"]),
                    num(&f["size"]),
                    text(&f["binding"]),
                );
            }
        }
        for n in o["needs"].as_array().into_iter().flatten() {
            s += &format!("  needs     {} (from another code object)\n", text(n));
        }
    }
    let hosts = report["host_kernels"].as_array().map_or(&[][..], |v| v);
    if !hosts.is_empty() {
        s += "\nhost-side kernel symbols:\n";
        for h in hosts {
            let stub = &h["stub"];
            s += &format!(
                "  {} at {}  stub {}  → device kernel {} ({})\n",
                text(&h["handle"]["name"]),
                hex(&h["handle"]["address"]),
                if stub.is_null() {
                    "-".to_string()
                } else {
                    format!("{} at {}", text(&stub["name"]), hex(&stub["address"]))
                },
                style.paint(
                    Tone::Name,
                    match h["demangled"].as_str() {
                        Some(d) if demangled => d,
                        _ => text(&h["device_kernel"]),
                    }
                ),
                h["targets"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(text)
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
    }
    s
}
