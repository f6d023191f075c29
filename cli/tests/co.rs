//! `kfd co` on code objects compiled at test time from the sources below, checked against what
//! `llvm-nm-15` says of the same files; and its errors. Needs clang-15, hipcc and llvm-nm-15,
//! which `make test` installs (missing: `kfd_testkit`'s policy).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const OPENCL: &str = r#"
int lib_counter = 7;
__attribute__((noinline)) int scale(int x, int k) { return x * k + lib_counter; }
__kernel void first(__global int *out, int k) { out[__builtin_amdgcn_workitem_id_x()] = scale((int)__builtin_amdgcn_workitem_id_x(), k); }
__kernel void second(__global float *a, __global const float *b) { a[__builtin_amdgcn_workitem_id_x()] += b[__builtin_amdgcn_workitem_id_x()]; }
"#;

const HIP: &str = r#"
#include <hip/hip_runtime.h>
__global__ void twice(int *p) { p[threadIdx.x] *= 2; }
int main() { int *p; hipMalloc(&p, 256); hipLaunchKernelGGL(twice, dim3(1), dim3(64), 0, 0, p); return 0; }
"#;

/// The compiled inputs, once per run: (OpenCL code object for gfx900, HIP program for gfx900 and
/// gfx90a), or `None` when a compiler is missing.
fn inputs() -> Option<&'static (PathBuf, PathBuf)> {
    static DIR: OnceLock<Option<(tempfile::TempDir, (PathBuf, PathBuf))>> = OnceLock::new();
    DIR.get_or_init(|| {
        kfd_testkit::tools(&["clang-15", "hipcc", "llvm-nm-15"])?;
        let dir = tempfile::tempdir().expect("temp dir");
        let cl = dir.path().join("lib.cl");
        let co = dir.path().join("lib.co");
        std::fs::write(&cl, OPENCL).unwrap();
        let code_object = kfd_testkit::opencl_to_code_object(&cl, "gfx900", &[]);
        std::fs::write(&co, code_object).unwrap();
        let hip = dir.path().join("prog.hip");
        let prog = dir.path().join("prog");
        std::fs::write(&hip, HIP).unwrap();
        run(Command::new("hipcc")
            .args(["--offload-arch=gfx900", "--offload-arch=gfx90a", "-o"])
            .arg(&prog)
            .arg(&hip));
        Some((dir, (co, prog)))
    })
    .as_ref()
    .map(|(_, files)| files)
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("compiler runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `llvm-nm-15` of `file`: (name, address, type letter) of every defined symbol.
fn nm(file: &Path) -> Vec<(String, u64, char)> {
    let out = Command::new("llvm-nm-15")
        .arg(file)
        .output()
        .expect("llvm-nm");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            let kind = f.next()?.chars().next()?;
            Some((f.next()?.to_owned(), addr, kind))
        })
        .collect()
}

fn addr_of(nm: &[(String, u64, char)], name: &str) -> u64 {
    nm.iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("llvm-nm has no {name}"))
        .1
}

#[test]
fn kernels_functions_and_variables_match_llvm_nm() {
    let Some((co, _)) = inputs() else { return };
    let report = json(&ok(&["co", co.to_str().unwrap(), "--json"]));
    let syms = nm(co);
    assert_eq!(report["container"], "code object");
    let objects = report["code_objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1);
    let o = &objects[0];
    assert_eq!(o["target"], "gfx900");
    let kernels = o["kernels"].as_array().unwrap();
    let names: Vec<&str> = kernels
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first", "second"]);
    for k in kernels {
        let name = k["name"].as_str().unwrap();
        assert_eq!(
            k["descriptor"],
            addr_of(&syms, &format!("{name}.kd")),
            "{name}.kd"
        );
        assert_eq!(k["entry"], addr_of(&syms, name), "{name}");
    }
    // `first` takes a pointer and an int: 12 bytes of explicit arguments, 8-aligned pointer first.
    assert!(kernels[0]["kernarg_size"].as_u64().unwrap() >= 12);
    let functions = o["device_functions"].as_array().unwrap();
    let scale = functions
        .iter()
        .find(|f| f["name"] == "scale")
        .expect("the device function is listed");
    assert_eq!(scale["address"], addr_of(&syms, "scale"));
    assert!(scale["size"].as_u64().unwrap() > 0);
    let counter = o["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "lib_counter")
        .expect("the global variable is listed");
    assert_eq!(counter["address"], addr_of(&syms, "lib_counter"));
    assert_eq!(counter["size"], 4);

    let text = ok(&["co", co.to_str().unwrap()]);
    assert!(text.contains("1 device code object(s)"), "{text}");
    assert!(text.contains("kernel    first"), "{text}");
    assert!(text.contains("function  scale"), "{text}");
}

#[test]
fn a_hip_program_pairs_host_symbols_with_device_kernels_per_target() {
    let Some((_, prog)) = inputs() else { return };
    let p = prog.to_str().unwrap();
    let report = json(&ok(&["co", p, "--json"]));
    assert_eq!(report["container"], "HIP host program");
    let targets: Vec<&str> = report["code_objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets.len(), 2, "{targets:?}");
    assert!(targets[0].starts_with("gfx900") && targets[1].starts_with("gfx90a"));
    let host = report["host_kernels"].as_array().unwrap();
    assert_eq!(host.len(), 1);
    assert_eq!(host[0]["device_kernel"], "_Z5twicePi");
    // The handle is the host symbol of the kernel's own name, where llvm-nm puts it.
    assert_eq!(
        host[0]["handle"]["address"],
        addr_of(&nm(prog), "_Z5twicePi")
    );
    assert_eq!(host[0]["targets"].as_array().unwrap().len(), 2);

    let one = json(&ok(&["co", p, "--target", "gfx90a", "--json"]));
    let objects = one["code_objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1);
    assert!(objects[0]["target"].as_str().unwrap().starts_with("gfx90a"));
}

#[test]
fn errors_say_what_was_wrong() {
    let o = kfd(&["co", "/nonexistent/file"]);
    assert!(usage_error(&o).contains("cannot read '/nonexistent/file'"));

    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk");
    std::fs::write(&junk, b"\x7fELF this is not really one").unwrap();
    let o = kfd(&["co", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a code object, offload bundle or HIP program"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("panicked"));

    let Some((co, _)) = inputs() else { return };
    let o = kfd(&["co", co.to_str().unwrap(), "--target", "gfx1030"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("the file has gfx900"), "{}", stderr(&o));
    let o = kfd(&["co", co.to_str().unwrap(), "--target", "not a target"]);
    assert!(usage_error(&o).contains("--target"));
}

/// The two-unit HIP program of `common`, once per run.
fn two_units() -> Option<&'static Path> {
    static PROG: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    PROG.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let prog = two_unit_hip_program(dir.path())?;
        Some((dir, prog))
    })
    .as_ref()
    .map(|(_, p)| p.as_path())
}

fn kernel_names(report: &serde_json::Value) -> Vec<String> {
    report["code_objects"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| o["kernels"].as_array().unwrap().iter())
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_translation_unit_is_listed_for_a_target() {
    let Some(prog) = two_units() else { return };
    let p = prog.to_str().unwrap();
    // Each unit is a bundle of its own: the kernels of both are there for gfx900 …
    let gfx900 = json(&ok(&["co", p, "--target", "gfx900", "--json"]));
    assert_eq!(gfx900["bundles"], 2);
    let objects = gfx900["code_objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2, "one code object per unit");
    assert_eq!(
        (objects[0]["bundle"].clone(), objects[1]["bundle"].clone()),
        (0.into(), 1.into())
    );
    let names = kernel_names(&gfx900);
    for k in ["_Z2kaPi", "_Z3mixPfPKfi", "_Z7bitonicIiEvPT_i", "_Z2kbPi"] {
        assert!(names.iter().any(|n| n == k), "{k} missing from {names:?}");
    }
    // … and a bare processor finds the gfx90a:xnack- builds, as does the full target ID.
    for query in [
        "gfx90a",
        "gfx90a:xnack-",
        "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
    ] {
        let r = json(&ok(&["co", p, "--target", query, "--json"]));
        let targets: Vec<&str> = r["code_objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["target"].as_str().unwrap())
            .collect();
        assert_eq!(
            targets,
            ["gfx90a:xnack-", "gfx90a:xnack-"],
            "--target {query}"
        );
        assert!(
            kernel_names(&r).iter().any(|n| n == "_Z2kbPi"),
            "--target {query}"
        );
    }
    let text = ok(&["co", p, "--target", "gfx900"]);
    assert!(
        text.contains("2 device code object(s) from 2 bundles"),
        "{text}"
    );
    // A target the file lacks: each target it has, once.
    let o = kfd(&["co", p, "--target", "gfx90a:xnack+"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("no code object for gfx90a:xnack+; the file has gfx900, gfx90a:xnack-\n"),
        "{err}"
    );
}

#[test]
fn names_are_demangled_on_request() {
    let Some(prog) = two_units() else { return };
    let p = prog.to_str().unwrap();
    let r = json(&ok(&["co", p, "--target", "gfx900", "--json"]));
    let kernels: Vec<&serde_json::Value> = r["code_objects"][0]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let bitonic = kernels
        .iter()
        .find(|k| k["name"] == "_Z7bitonicIiEvPT_i")
        .unwrap();
    // What llvm-cxxfilt-15 prints for the symbol.
    assert_eq!(bitonic["demangled"], "void bitonic<int>(int*, int)");
    let plain = ok(&["co", p, "--target", "gfx900"]);
    assert!(plain.contains("kernel    _Z7bitonicIiEvPT_i"), "{plain}");
    for flag in ["-C", "--demangle"] {
        let text = ok(&["co", p, "--target", "gfx900", flag]);
        assert!(
            text.contains("kernel    void bitonic<int>(int*, int)"),
            "{text}"
        );
        assert!(text.contains("function  helper_a(int)"), "{text}");
        assert!(text.contains("→ device kernel kb(int*)"), "{text}");
    }
}

/// A code object clang-15 builds for `mcpu`, in `dir`.
fn opencl_code_object(dir: &Path, mcpu: &str) -> PathBuf {
    let cl = dir.join("k.cl");
    std::fs::write(&cl, "__kernel void k(__global int *p) { p[0] = 1; }\n").unwrap();
    let co = dir.join(format!("{mcpu}.co"));
    run(Command::new("clang-15")
        .args([
            "-x",
            "cl",
            "-target",
            "amdgcn-amd-amdhsa",
            "-nogpulib",
            "-O1",
            "-o",
        ])
        .arg(&co)
        .arg(format!("-mcpu={mcpu}"))
        .arg(&cl));
    co
}

#[test]
fn code_objects_for_processors_past_the_table_are_listed() {
    if !have("clang-15") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (mcpu, shown) in [("gfx940", "gfx940"), ("gfx1100", "gfx1100")] {
        let co = opencl_code_object(dir.path(), mcpu);
        let r = json(&ok(&["co", co.to_str().unwrap(), "--json"]));
        assert_eq!(r["code_objects"][0]["target"], shown);
        assert_eq!(r["code_objects"][0]["kernels"][0]["name"], "k");
    }
    // EF_AMDGPU_MACH 0x4c (gfx942 to later compilers, unknown to LLVM 15): named by number.
    let gfx940 = std::fs::read(opencl_code_object(dir.path(), "gfx940")).unwrap();
    let mut patched = gfx940.clone();
    let flags = u32::from_le_bytes(patched[48..52].try_into().unwrap());
    patched[48..52].copy_from_slice(&((flags & !0xff) | 0x4c).to_le_bytes());
    let co = dir.path().join("mach4c.co");
    std::fs::write(&co, &patched).unwrap();
    let text = ok(&["co", co.to_str().unwrap()]);
    assert!(
        text.contains("target EF_AMDGPU_MACH 0x04c (a processor kfd has no name for)"),
        "{text}"
    );
    assert!(text.contains("kernel    k"), "{text}");
}

#[test]
fn endless_or_device_input_is_refused_with_bounded_memory() {
    for (cmd, dev) in [
        ("co", "/dev/zero"),
        ("disasm", "/dev/urandom"),
        ("co", "/dev/null"),
    ] {
        let o = kfd_within(&[cmd, dev], std::time::Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(1), "kfd {cmd} {dev}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("is not a code object, offload bundle or HIP program (it starts with")
                || err.contains("is empty, not a code object"),
            "{err}"
        );
    }
    // A stream that starts like an ELF file and never ends stops at the stated cap.
    let mut child = Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(["co", "/dev/stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let mut chunk = vec![0u8; 1 << 20];
        chunk[..4].copy_from_slice(b"\x7fELF");
        // Ends when kfd closes the pipe; 1 GiB at most, should it never.
        for _ in 0..1024 {
            if stdin.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("gives more than 256 MiB: save it to a file first"),
        "{}",
        stderr(&o)
    );
}

/// Debian's librocsparse (1.3 GB, 111 bundles of 7 targets each), when installed.
const ROCSPARSE: &str = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0";

#[test]
fn a_rocm_library_is_read_in_place() {
    if kfd_testkit::installed_file(ROCSPARSE, "librocsparse0").is_none() {
        return;
    }
    // 512 MiB of data segment (RLIMIT_DATA counts private memory, not a read-only file map):
    // reading the 1.3 GB library into memory cannot fit, mapping it does.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -d 524288 && exec \"$0\" co {ROCSPARSE} --target gfx90a:xnack- --json"
        ))
        .arg(env!("CARGO_BIN_EXE_kfd"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&stdout(&o));
    assert_eq!(r["bundles"], 111);
    assert_eq!(r["code_objects"].as_array().unwrap().len(), 111);
    // Every target once, in the order the bundles list them.
    let targets: Vec<&str> = r["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(targets.len(), 7, "{targets:?}");
    assert!(targets.contains(&"gfx90a:xnack+") && targets.contains(&"gfx90a:xnack-"));
    // The error for a missing target stays one short line.
    let o = kfd(&["co", ROCSPARSE, "--target", "gfx1100"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).len() < 300, "{}", stderr(&o));
}
