//! `kfd co`: what a code-object file holds — the targets it was built for, and per target the
//! kernels (descriptor and entry addresses, code size, segment sizes, registers), the device
//! functions and variables with their sizes, the symbols it needs from other code objects; for a
//! HIP program or library also the host-side kernel symbols paired with their device kernels.

use std::path::PathBuf;

use codeobj::{Binding, CodeObject, Container, ContainerKind, TargetId};
use serde_json::{json, Value};

use crate::error::{CliError, CliResult};
use crate::output::{Out, Style, Tone};

/// `kfd co` arguments.
#[derive(Debug, clap::Args)]
pub struct CoArgs {
    /// A code object (`.co`, `.hsaco`), a clang offload bundle, or a HIP program or shared library.
    pub file: PathBuf,
    /// Show only the code object that would run on this agent (a target ID such as `gfx90a`,
    /// `gfx90a:xnack-`, `amdgcn-amd-amdhsa--gfx900`).
    #[arg(long, value_name = "TARGET_ID")]
    pub target: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `kfd co`.
pub fn run(args: &CoArgs, style: Style) -> CliResult<()> {
    let label = args.file.display().to_string();
    let bytes = std::fs::read(&args.file)
        .map_err(|e| CliError::usage(format!("cannot read '{label}': {e}")))?;
    let report = inspect(&bytes, args.target.as_deref()).map_err(|e| e.context(&label))?;
    let mut out = Out::stdout();
    if args.json {
        out.json(&report)?;
    } else {
        out.text(&render(&label, &report, style))?;
    }
    out.flush()
}

/// What `kfd co` reports about `bytes`, as JSON (the text view is rendered from it, so both
/// always say the same).
pub fn inspect(bytes: &[u8], target: Option<&str>) -> CliResult<Value> {
    let container = Container::parse(bytes).map_err(|e| {
        CliError::failure(format!(
            "not a code object, offload bundle or HIP program: {e}"
        ))
    })?;
    let agent = target
        .map(|t| {
            t.parse::<TargetId>()
                .map_err(|e| CliError::usage(format!("--target {t:?}: {e}")))
        })
        .transpose()?;
    let chosen: Vec<_> = match &agent {
        Some(a) => vec![container.select(a).map_err(|e| {
            let have: Vec<String> = container
                .entries()
                .iter()
                .map(|e| e.target.to_string())
                .collect();
            CliError::failure(format!(
                "no code object for {a}: {e} (the file has: {})",
                have.join(", ")
            ))
        })?],
        None => container.entries().iter().collect(),
    };
    let mut objects = Vec::new();
    for entry in chosen {
        let co = entry
            .code_object()
            .map_err(|e| CliError::failure(format!("entry {}: {e}", entry.id)))?;
        let mut o = code_object_json(&co);
        o["entry"] = json!(entry.id);
        o["file_offset"] = json!(entry.file_offset);
        o["bytes"] = json!(entry.bytes.len());
        objects.push(o);
    }
    let host_kernels: Vec<Value> = container
        .host_kernels()
        .map_err(|e| CliError::failure(format!("host kernel symbols: {e}")))?
        .into_iter()
        .map(|k| {
            json!({
                "device_kernel": k.device_name,
                "handle": {"name": k.handle.name, "address": k.handle.address},
                "stub": k.stub.map(|s| json!({"name": s.name, "address": s.address})),
                "targets": k.targets.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({
        "container": kind_name(container.kind()),
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
                "address": s.value,
                "size": s.size,
                "binding": binding_name(s.binding),
            })
        })
        .collect()
    };
    json!({
        "target": co.target().to_string(),
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

/// The text view of an [`inspect`] report.
pub fn render(label: &str, report: &Value, style: Style) -> String {
    let mut s = String::new();
    let objects = report["code_objects"].as_array().map_or(&[][..], |v| v);
    s += &format!(
        "{label}: {}, {} device code object(s)\n",
        text(&report["container"]),
        objects.len()
    );
    for o in objects {
        s += &format!(
            "\n{} — target {}, code object {}, {} bytes at file offset {}\n",
            style.paint(Tone::Bold, text(&o["entry"])),
            text(&o["target"]),
            text(&o["version"]),
            num(&o["bytes"]),
            hex(&o["file_offset"]),
        );
        for k in o["kernels"].as_array().into_iter().flatten() {
            s += &format!(
                "  kernel    {}\n            descriptor {}  entry {}  code {} B  kernarg {} B  LDS {} B  scratch {} B/lane  sgpr {} vgpr {}{}  wave{}\n",
                style.paint(Tone::Name, text(&k["name"])),
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
                    style.paint(Tone::Name, text(&f["name"])),
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
                style.paint(Tone::Name, text(&h["device_kernel"])),
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
