//! The semantic tests' assembler: a program of gfx9 assembly text through llvm-mc-15, its
//! encodings collected into the bytes the wave runs.

use std::io::Write;
use std::process::{Command, Stdio};

/// Assembles `src` for `mcpu` with llvm-mc-15 (which must be installed) into machine code.
pub fn asm(src: &str, mcpu: &str) -> Vec<u8> {
    let mut child = Command::new(kfd_testkit::require("llvm-mc-15"))
        .args(["-arch=amdgcn", &format!("-mcpu={mcpu}"), "-show-encoding"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("llvm-mc-15 must be installed");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(src.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "llvm-mc-15: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut bytes = Vec::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        if let Some(enc) = line.split("encoding: [").nth(1) {
            for b in enc.trim_end_matches(']').split(',') {
                bytes.push(u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap());
            }
        }
    }
    bytes
}
