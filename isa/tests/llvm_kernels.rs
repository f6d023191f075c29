//! Differential test (a): the project's kernels in `tests/kernels/` are compiled with
//! clang-15 (OpenCL C) or assembled with llvm-mc-15 for gfx900 and gfx90a at test time,
//! disassembled with `llvm-objdump-15 -d --mcpu=<gfx>`, and every instruction line is
//! compared with our text for the same bytes. Needs the tools (missing: `kfd_testkit`'s policy).

mod common;

use isa::{decode, Target};
use std::path::{Path, PathBuf};
use std::process::Command;

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One instruction line of llvm-objdump: its text, address and bytes.
struct Line {
    text: String,
    addr: u64,
    bytes: Vec<u8>,
}

/// Parse `\t<text>   // <addr>: <DWORD> <DWORD>... [<sym+off>]` lines.
fn parse_objdump(out: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    for l in out.lines() {
        let Some(rest) = l.strip_prefix('\t') else {
            continue;
        };
        let Some((text, comment)) = rest.split_once("// ") else {
            continue;
        };
        let Some((addr, words)) = comment.split_once(": ") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let mut bytes = Vec::new();
        for w in words.split_whitespace() {
            if w.starts_with('<') {
                break;
            }
            let Ok(v) = u32::from_str_radix(w, 16) else {
                break;
            };
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        lines.push(Line {
            text: text.trim_end().to_string(),
            addr,
            bytes,
        });
    }
    lines
}

#[test]
fn kernels_match_llvm_objdump() {
    let (Some(_clang), Some(_mc), Some(objdump)) = (
        common::tool("clang-15"),
        common::tool("llvm-mc-15"),
        common::tool("llvm-objdump-15"),
    ) else {
        return;
    };
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("isa-kernels");
    std::fs::create_dir_all(&out_dir).expect("create output dir");
    let sources = [
        ("compute.cl", &[Target::Gfx900, Target::Gfx90a][..]),
        ("mfma.cl", &[Target::Gfx90a][..]),
        ("asm_gfx9.s", &[Target::Gfx900, Target::Gfx90a][..]),
        ("asm_exp.s", &[Target::Gfx900][..]),
    ];
    let (mut compared, mut mismatches, mut objects) = (0usize, 0usize, 0usize);
    let mut report = String::new();
    let mut ops = std::collections::HashSet::new();
    for (src, targets) in sources {
        let path = kernels_dir().join(src);
        for &target in targets {
            let obj = out_dir.join(format!("{src}.{target}.o"));
            let bytes = if src.ends_with(".cl") {
                let header = ["-Xclang", "-finclude-default-header"];
                kfd_testkit::opencl_to_object(&path, target.name(), &header)
            } else {
                kfd_testkit::assemble_object(&path, target.name())
            };
            std::fs::write(&obj, bytes).expect("write object");
            let dis = run(Command::new(&objdump)
                .args(["-d", &format!("--mcpu={target}")])
                .arg(&obj))
            .unwrap_or_else(|e| panic!("disassembling {src}: {e}"));
            objects += 1;
            let lines = parse_objdump(&dis);
            assert!(!lines.is_empty(), "no instructions in {src} for {target}");
            for line in lines {
                compared += 1;
                let ours = match decode(&line.bytes, line.addr, target) {
                    Ok((inst, len)) if len == line.bytes.len() => {
                        ops.insert(inst.op);
                        inst.to_string()
                    }
                    Ok((inst, len)) => format!("{inst} (length {len}, llvm {})", line.bytes.len()),
                    Err(e) => format!("error: {e}"),
                };
                if ours != line.text {
                    mismatches += 1;
                    if mismatches <= 40 {
                        report.push_str(&format!(
                            "{src} {target} {:#x}\n   ours: {ours}\n   llvm: {}\n",
                            line.addr, line.text
                        ));
                    }
                }
            }
        }
    }
    println!(
        "kernels: objects {objects} instructions compared {compared} distinct ops {} mismatches {mismatches}",
        ops.len()
    );
    print!("{report}");
    assert_eq!(mismatches, 0, "disassembly differs from llvm-objdump-15");
}
