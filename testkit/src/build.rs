//! One function per tool job the tests, benches and examples need: OpenCL C to an amdgcn code
//! object (clang-15), to a relocatable object, a shared link (ld.lld-15), gfx9 assembly text
//! to machine code and an assembly file to an object (llvm-mc-15). Each finds its tool with [`require`] and,
//! when the tool fails, panics with the command line and the tool's stderr.

use crate::require;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The clang-15 flags every OpenCL C build for amdgcn shares (OpenCL 2.0, no device library,
/// `-O2`); the processor, then the caller's extra flags, follow them.
pub const OPENCL_FLAGS: [&str; 7] = [
    "-x",
    "cl",
    "-cl-std=CL2.0",
    "-target",
    "amdgcn-amd-amdhsa",
    "-nogpulib",
    "-O2",
];

/// The directory of the headers OpenCL C sources include (`kfd_workitem.h`: work-item
/// functions and a barrier without the device library); every OpenCL build passes it with `-I`.
pub const INCLUDE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");

/// A fresh directory under the temporary directory for one tool run (tests run in parallel:
/// one per call), removed by [`Scratch`]'s drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(job: &str) -> Scratch {
        static SERIAL: AtomicU32 = AtomicU32::new(0);
        let n = SERIAL.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("kfd-testkit-{job}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `cmd` (named `tool` in messages), feeding it `stdin`; panics unless it succeeds, with
/// the command line and the tool's stderr.
fn run(tool: &str, cmd: &mut Command, stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{tool} does not start: {e} ({cmd:?})"));
    if let Some(bytes) = stdin {
        // Written before the output is read: the inputs are small enough for the pipe.
        let mut pipe = child.stdin.take().expect("piped stdin");
        pipe.write_all(bytes)
            .unwrap_or_else(|e| panic!("writing {tool}'s input: {e}"));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("waiting for {tool}: {e}"));
    assert!(
        out.status.success(),
        "{tool} failed ({}): {cmd:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn read(path: &Path, tool: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{tool}'s output {}: {e}", path.display()))
}

/// clang-15 on the OpenCL C file `src` for `mcpu`: [`OPENCL_FLAGS`], `-I` [`INCLUDE_DIR`],
/// `-mcpu=<mcpu>`, `extra`
/// (e.g. `-D` definitions, `-mcode-object-version=5`, `-c`), the output's bytes.
fn clang_opencl(src: &Path, mcpu: &str, extra: &[&str], job: &str) -> Vec<u8> {
    let scratch = Scratch::new(job);
    let out = scratch.path("out");
    let mut cmd = Command::new(require("clang-15"));
    cmd.args(OPENCL_FLAGS)
        .arg(format!("-I{INCLUDE_DIR}"))
        .arg(format!("-mcpu={mcpu}"))
        .args(extra)
        .arg(src)
        .arg("-o")
        .arg(&out);
    run("clang-15", &mut cmd, None);
    read(&out, "clang-15")
}

/// Compiles the OpenCL C file `src` for `mcpu` into a code object (the shared ELF clang-15
/// links): `clang-15 -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -nogpulib -O2
/// -mcpu=<mcpu> <extra…> <src>`. `extra` holds what a caller adds (`-D` definitions, a
/// `-mcode-object-version=`). Panics, with clang's stderr, when the compile fails.
pub fn opencl_to_code_object(src: &Path, mcpu: &str, extra: &[&str]) -> Vec<u8> {
    clang_opencl(src, mcpu, extra, "opencl")
}

/// Compiles the OpenCL C file `src` for `mcpu` into a relocatable object (`-c`), for
/// [`link_shared`]: the command of [`opencl_to_code_object`] with `extra` and then `-c`.
pub fn opencl_to_object(src: &Path, mcpu: &str, extra: &[&str]) -> Vec<u8> {
    let mut args = extra.to_vec();
    args.push("-c");
    clang_opencl(src, mcpu, &args, "opencl-obj")
}

/// Links the relocatable amdgcn `object` into a shared code object: `ld.lld-15 -shared
/// <extra…> <object>` (e.g. `extra = ["--allow-shlib-undefined"]` for a code object whose
/// symbols another one defines). Panics, with ld.lld's stderr, when the link fails.
pub fn link_shared(object: &[u8], extra: &[&str]) -> Vec<u8> {
    let scratch = Scratch::new("link");
    let (obj, out) = (scratch.path("in.o"), scratch.path("out.co"));
    std::fs::write(&obj, object).unwrap_or_else(|e| panic!("writing {}: {e}", obj.display()));
    let mut cmd = Command::new(require("ld.lld-15"));
    cmd.arg("-shared").args(extra).arg(&obj).arg("-o").arg(&out);
    run("ld.lld-15", &mut cmd, None);
    read(&out, "ld.lld-15")
}

/// Assembles the gfx9 assembly text `src` for `mcpu` with `llvm-mc-15 -arch=amdgcn
/// -mcpu=<mcpu> -show-encoding` and returns the instructions' encodings, in order, as the bytes
/// a wave runs (no ELF: only the `encoding: [..]` llvm-mc prints). Panics, with llvm-mc's
/// stderr, when it rejects the text.
pub fn assemble(src: &str, mcpu: &str) -> Vec<u8> {
    let mut cmd = Command::new(require("llvm-mc-15"));
    cmd.args(["-arch=amdgcn", &format!("-mcpu={mcpu}"), "-show-encoding"]);
    let out = run("llvm-mc-15", &mut cmd, Some(src.as_bytes()));
    encodings(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|line| panic!("llvm-mc-15: unreadable encoding in {line:?}"))
}

/// Assembles the file `src` (amdgcn assembly with its directives) for `mcpu` into a
/// relocatable object: `llvm-mc-15 -triple=amdgcn-amd-amdhsa -filetype=obj -mcpu=<mcpu>
/// <src>`. Panics, with llvm-mc's stderr, when it rejects the file.
pub fn assemble_object(src: &Path, mcpu: &str) -> Vec<u8> {
    let scratch = Scratch::new("asm-obj");
    let out = scratch.path("out.o");
    let mut cmd = Command::new(require("llvm-mc-15"));
    cmd.args(["-triple=amdgcn-amd-amdhsa", "-filetype=obj"])
        .arg(format!("-mcpu={mcpu}"))
        .arg(src)
        .arg("-o")
        .arg(&out);
    run("llvm-mc-15", &mut cmd, None);
    read(&out, "llvm-mc-15")
}

/// The bytes of every `encoding: [0x.., ..]` in llvm-mc's `-show-encoding` text; `Err` with
/// the line whose list does not parse.
fn encodings(text: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    for line in text.lines() {
        if let Some(enc) = line.split("encoding: [").nth(1) {
            let list = enc.split(']').next().unwrap_or_default();
            for b in list.split(',') {
                let b = u8::from_str_radix(b.trim().trim_start_matches("0x"), 16)
                    .map_err(|_| line.to_string())?;
                bytes.push(b);
            }
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_are_collected_in_order() {
        let text = "\t.text\n\ts_mov_b32 s0, 5 ; encoding: [0x85,0x00,0x80,0xbe]\n\
                    \ts_endpgm ; encoding: [0x00,0x00,0x81,0xbf]\n";
        assert_eq!(
            encodings(text).unwrap(),
            [0x85, 0x00, 0x80, 0xbe, 0x00, 0x00, 0x81, 0xbf]
        );
        assert!(encodings("x ; encoding: [0x1g]").is_err());
        assert_eq!(encodings("no encodings here").unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn assemble_gives_the_encodings() {
        if crate::tool("llvm-mc-15").is_none() {
            return;
        }
        assert_eq!(
            assemble("s_mov_b32 s0, 5\ns_endpgm\n", "gfx900"),
            [0x85, 0x00, 0x80, 0xbe, 0x00, 0x00, 0x81, 0xbf]
        );
    }

    #[test]
    #[should_panic(expected = "llvm-mc-15 failed")]
    fn a_rejected_program_is_a_failure_with_the_reason() {
        if crate::tool("llvm-mc-15").is_none() {
            panic!("llvm-mc-15 failed (skipped: not installed)");
        }
        assemble("s_no_such_instruction s0\n", "gfx900");
    }

    #[test]
    fn opencl_builds_shared_elf_code_objects() {
        if crate::tools(&["clang-15", "ld.lld-15"]).is_none() {
            return;
        }
        let scratch = Scratch::new("selftest");
        let src = scratch.path("k.cl");
        std::fs::write(&src, "kernel void k(global int *p) { *p = N; }\n").unwrap();
        const ET_REL: u16 = 1;
        const ET_DYN: u16 = 3;
        let e_type = |elf: &[u8]| {
            assert_eq!(&elf[..4], b"\x7fELF");
            u16::from_le_bytes([elf[16], elf[17]])
        };
        let co = opencl_to_code_object(&src, "gfx900", &["-DN=7"]);
        assert_eq!(e_type(&co), ET_DYN);
        let obj = opencl_to_object(&src, "gfx900", &["-DN=7"]);
        assert_eq!(e_type(&obj), ET_REL);
        assert_eq!(e_type(&link_shared(&obj, &[])), ET_DYN);
        if crate::tool("llvm-mc-15").is_none() {
            return;
        }
        let asm = scratch.path("k.s");
        std::fs::write(&asm, "s_endpgm\n").unwrap();
        assert_eq!(e_type(&assemble_object(&asm, "gfx900")), ET_REL);
    }
}
