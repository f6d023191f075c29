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
        run(Command::new("clang-15")
            .args([
                "-x",
                "cl",
                "-cl-std=CL2.0",
                "-target",
                "amdgcn-amd-amdhsa",
                "-mcpu=gfx900",
                "-O2",
                "-nogpulib",
                "-o",
            ])
            .arg(&co)
            .arg(&cl));
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
    assert!(
        stderr(&o).contains("the file has: gfx900"),
        "{}",
        stderr(&o)
    );
    let o = kfd(&["co", co.to_str().unwrap(), "--target", "not a target"]);
    assert!(usage_error(&o).contains("--target"));
}
