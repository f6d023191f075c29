//! Shared helpers of the differential tests: finding the LLVM 15 tools and running
//! `llvm-mc-15 --disassemble` over many instructions in one process.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

/// The path of an LLVM 15 tool, or None when it is missing and skipping is allowed (the
/// workspace's one policy: `kfd_testkit::tool`).
pub fn tool(name: &str) -> Option<String> {
    kfd_testkit::tool(name).map(|p| p.display().to_string())
}

/// The marker instruction between cases: `s_sethalt 0x1234`, never generated as a case.
pub const MARKER: u32 = 0xBF8D_1234;

/// Disassemble every case (its bytes, one instruction each) with one llvm-mc run (more
/// only if llvm-mc crashes: the case it crashed on is then reported and skipped).
/// Returns, per case, `Some(text)` when llvm printed exactly one instruction, `None`
/// when it rejected the bytes (or printed several, or crashed on them).
pub fn llvm_mc_batch(mc: &str, cpu: &str, cases: &[Vec<u8>]) -> Vec<Option<String>> {
    let (groups, complete) = run_once(mc, cpu, cases);
    if complete {
        return groups
            .into_iter()
            .map(|g| {
                if g.len() == 1 {
                    g.into_iter().next()
                } else {
                    None
                }
            })
            .collect();
    }
    if cases.len() == 1 {
        println!(
            "llvm-mc-15 --mcpu={cpu} crashed on {:02x?}; counted as rejected",
            cases[0]
        );
        return vec![None];
    }
    // llvm-mc crashed somewhere in here (its buffered output does not say where): halve.
    let (a, b) = cases.split_at(cases.len() / 2);
    let mut out = llvm_mc_batch(mc, cpu, a);
    out.extend(llvm_mc_batch(mc, cpu, b));
    out
}

fn run_once(mc: &str, cpu: &str, cases: &[Vec<u8>]) -> (Vec<Vec<String>>, bool) {
    let mut input = String::with_capacity(cases.len() * 64);
    for c in cases {
        input.push('[');
        for (i, b) in c.iter().enumerate() {
            if i > 0 {
                input.push(',');
            }
            input.push_str(&format!("0x{b:02x}"));
        }
        input.push_str("]\n[");
        let m = MARKER.to_le_bytes();
        input.push_str(&format!(
            "0x{:02x},0x{:02x},0x{:02x},0x{:02x}]\n",
            m[0], m[1], m[2], m[3]
        ));
    }
    let mut child = Command::new(mc)
        .args(["--disassemble", "-arch=amdgcn", &format!("-mcpu={cpu}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn llvm-mc");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("llvm-mc output");
    writer.join().expect("writer");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut groups: Vec<Vec<String>> = Vec::with_capacity(cases.len());
    let mut cur = Vec::new();
    for line in stdout.lines() {
        let t = line.trim();
        if t.is_empty() || t == ".text" {
            continue;
        }
        if t == "s_sethalt 0x1234" {
            groups.push(std::mem::take(&mut cur));
        } else {
            cur.push(t.to_string());
        }
    }
    // llvm-mc exits with 1 when it warned about an invalid encoding; only a missing group
    // (it died on a signal) means the output is incomplete.
    let complete = groups.len() == cases.len();
    assert!(
        complete || out.status.code().is_none(),
        "llvm-mc output out of step with its input"
    );
    (groups, complete)
}
