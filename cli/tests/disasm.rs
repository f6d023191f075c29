//! `kfd disasm` against `llvm-objdump-15 -d` on code compiled at test time: every instruction line
//! of every kernel and device function must be the same text. Needs clang-15 and
//! llvm-objdump-15, which `make test` installs (missing: `kfd_testkit`'s policy).

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const SOURCE: &str = r#"
__attribute__((noinline)) float blend(float a, float b, int k) {
  return k & 1 ? a * b + 1.0f : a / (b + 2.0f);
}
__kernel void loops(__global int *a, int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += a[i] * i;
  a[0] = s;
}
__kernel void mix(__global float *x, __global const float *y, __global double *d, int k) {
  int i = __builtin_amdgcn_workitem_id_x();
  __local float tile[64];
  tile[i] = blend(x[i], y[i], k + i);
  __builtin_amdgcn_s_barrier();
  x[i] = tile[63 - i] + __builtin_sqrtf(y[i]);
  d[i] = (double)x[i] / (double)(k + 1);
  __atomic_fetch_add((__global int *)x, 1, __ATOMIC_RELAXED);
}
"#;

/// The instruction lines of each symbol in llvm-objdump's listing.
fn objdump_blocks(file: &Path, gfx: &str) -> BTreeMap<String, Vec<String>> {
    let out = Command::new("llvm-objdump-15")
        .args(["-d", &format!("--mcpu={gfx}")])
        .arg(file)
        .output()
        .expect("llvm-objdump runs");
    blocks(&String::from_utf8_lossy(&out.stdout))
}

/// Splits a listing into `<name>:` blocks of tab-indented instruction lines.
fn blocks(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut map = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line
            .split_once(" <")
            .filter(|(addr, rest)| addr.len() == 16 && rest.ends_with(">:"))
            .map(|(_, rest)| rest.trim_end_matches(">:").to_owned())
        {
            current = Some(name.clone());
            map.entry(name).or_insert_with(Vec::new);
        } else if line.starts_with('\t') {
            if let Some(c) = &current {
                map.get_mut(c).unwrap().push(line.trim_end().to_owned());
            }
        } else if line.is_empty() {
            current = None;
        }
    }
    map
}

#[test]
fn every_instruction_line_equals_llvm_objdump() {
    if kfd_testkit::tools(&["clang-15", "llvm-objdump-15"]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("k.cl");
    std::fs::write(&src, SOURCE).unwrap();
    let mut compared = 0;
    for gfx in ["gfx900", "gfx90a"] {
        let co = dir.path().join(format!("{gfx}.co"));
        std::fs::write(&co, kfd_testkit::opencl_to_code_object(&src, gfx, &[])).unwrap();
        let ours = blocks(&ok(&["disasm", co.to_str().unwrap()]));
        let theirs = objdump_blocks(&co, gfx);
        for name in ["loops", "mix", "blend"] {
            let (a, b) = (&ours[name], &theirs[name]);
            assert!(!a.is_empty(), "{gfx} {name}: no instructions listed");
            // Up to the next symbol, as llvm-objdump runs on: the alignment padding included.
            assert_eq!(a, b, "{gfx} {name}");
            compared += a.len();
        }
        // The same code object with one kernel selected lists only that kernel.
        let one = ok(&["disasm", co.to_str().unwrap(), "--kernel", "loops"]);
        assert!(one.contains("<loops>:") && !one.contains("<mix>:"), "{one}");
        assert!(one.contains(".amdhsa_kernel loops"), "{one}");
        // Branch targets inside the routine get a label line.
        assert!(one.lines().any(|l| l.starts_with("<loops+0x")), "{one}");
    }
    eprintln!("{compared} instruction lines equal llvm-objdump-15's");
    assert!(compared > 100, "only {compared} lines compared");

    let co = dir.path().join("gfx900.co");
    let o = kfd(&["disasm", co.to_str().unwrap(), "--kernel", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no kernel or device function named \"nope\""),
        "{}",
        stderr(&o)
    );
    let o = kfd(&["disasm", co.to_str().unwrap(), "--gfx", "gfx1030"]);
    assert!(usage_error(&o).contains("--gfx"));
}

/// The instruction lines of a whole listing, code object by code object (each starts at a
/// `— decoded for` line), without the headings.
fn listing_lines(text: &str) -> Vec<Vec<String>> {
    let mut objects: Vec<Vec<String>> = Vec::new();
    for line in text.lines() {
        if line.contains(" — decoded for ") {
            objects.push(Vec::new());
        } else if line.starts_with('\t') {
            if let Some(o) = objects.last_mut() {
                o.push(line.trim_end().to_owned());
            }
        }
    }
    objects
}

#[test]
fn a_two_unit_hip_program_lists_as_llvm_objdump_does_padding_included() {
    if !have("llvm-objdump-15") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = two_unit_hip_program(dir.path()) else {
        return;
    };
    let p = prog.to_str().unwrap();
    let file = std::fs::read(&prog).unwrap();
    let report = json(&ok(&["co", p, "--json"]));
    let objects = report["code_objects"].as_array().unwrap();
    assert_eq!(objects.len(), 4, "2 units × 2 targets");
    let ours = listing_lines(&ok(&["disasm", p]));
    assert_eq!(ours.len(), 4);
    let mut compared = 0;
    let mut padding = 0;
    for (o, lines) in objects.iter().zip(&ours) {
        // Each code object's own bytes, cut out where `kfd co` says they lie (an ELF header
        // starts there), disassembled by llvm-objdump-15.
        let at = o["file_offset"].as_u64().unwrap() as usize;
        let len = o["bytes"].as_u64().unwrap() as usize;
        assert_eq!(&file[at..at + 4], b"\x7fELF");
        let co = dir.path().join(format!("object{at:x}.co"));
        std::fs::write(&co, &file[at..at + len]).unwrap();
        let mcpu = o["target"].as_str().unwrap().split(':').next().unwrap();
        let out = Command::new("llvm-objdump-15")
            .args(["-d", &format!("--mcpu={mcpu}")])
            .arg(&co)
            .output()
            .unwrap();
        let theirs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with('\t'))
            .map(|l| l.trim_end().to_owned())
            .collect();
        assert_eq!(lines.len(), theirs.len(), "{}: line count", o["entry"]);
        for (i, (a, b)) in lines.iter().zip(&theirs).enumerate() {
            assert_eq!(a, b, "{} line {i}", o["entry"]);
        }
        compared += lines.len();
        padding += lines.iter().filter(|l| l.contains("s_nop 0 ")).count();
    }
    eprintln!("{compared} lines equal llvm-objdump-15's, {padding} of them s_nop padding");
    assert!(
        padding > 0,
        "device functions are padded to their alignment"
    );
}

#[test]
fn targets_kernel_names_and_demangling() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = two_unit_hip_program(dir.path()) else {
        return;
    };
    let p = prog.to_str().unwrap();
    // A bare processor finds the gfx90a:xnack- builds of both units; so does the target ID.
    for gfx in [
        "gfx90a",
        "gfx90a:xnack-",
        "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
    ] {
        let text = ok(&["disasm", p, "--gfx", gfx]);
        let objects = text.matches(" — decoded for gfx90a").count();
        assert_eq!(objects, 2, "--gfx {gfx}: {objects} code objects");
        assert!(
            text.contains("<_Z2kbPi>:") && text.contains("<_Z2kaPi>:"),
            "--gfx {gfx}"
        );
    }
    let o = kfd(&["disasm", p, "--gfx", "gfx90a:xnack+"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .contains("no code object for gfx90a:xnack+; the file has gfx900, gfx90a:xnack-\n"),
        "{}",
        stderr(&o)
    );
    // --kernel takes the short demangled name; -C shows names as llvm-objdump -C does.
    let one = ok(&[
        "disasm",
        p,
        "--gfx",
        "gfx900",
        "--kernel",
        "bitonic<int>",
        "-C",
    ]);
    assert!(one.contains("<void bitonic<int>(int*, int)>:"), "{one}");
    assert!(one.contains("<void bitonic<int>(int*, int)+0x"), "{one}");
    assert!(
        !one.contains("bitonic<float>") && !one.contains("<ka(int*)>"),
        "{one}"
    );
    let full = ok(&[
        "disasm",
        p,
        "--gfx",
        "gfx900",
        "--kernel",
        "void bitonic<float>(float*, int)",
    ]);
    assert!(full.contains("<_Z7bitonicIfEvPT_i>:"), "{full}");
    if have("llvm-objdump-15") {
        // The demangled headings are llvm-objdump -C's.
        let report = json(&ok(&["co", p, "--target", "gfx900", "--json"]));
        let o = &report["code_objects"][0];
        let at = o["file_offset"].as_u64().unwrap() as usize;
        let len = o["bytes"].as_u64().unwrap() as usize;
        let co = dir.path().join("unit_a_gfx900.co");
        std::fs::write(&co, &std::fs::read(&prog).unwrap()[at..at + len]).unwrap();
        let out = Command::new("llvm-objdump-15")
            .args(["-d", "-C", "--mcpu=gfx900"])
            .arg(&co)
            .output()
            .unwrap();
        let heads = |t: &str| -> Vec<String> {
            let mut h: Vec<String> = t
                .lines()
                .filter(|l| l.len() > 18 && l.ends_with(">:") && l.as_bytes()[16] == b' ')
                .map(str::to_owned)
                .collect();
            h.sort();
            h
        };
        let ours = ok(&["disasm", co.to_str().unwrap(), "-C"]);
        assert_eq!(heads(&ours), heads(&String::from_utf8_lossy(&out.stdout)));
    }
}

#[test]
fn code_objects_the_decoder_lacks_are_named_not_fatal() {
    if kfd_testkit::tools(&["clang-15", "clang-offload-bundler-15"]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cl = dir.path().join("k.cl");
    std::fs::write(&cl, "__kernel void k(__global int *p) { p[0] = 1; }\n").unwrap();
    let mut inputs = Vec::new();
    for mcpu in ["gfx900", "gfx1100"] {
        let co = dir.path().join(format!("{mcpu}.co"));
        let out = Command::new("clang-15")
            .args([
                "-x",
                "cl",
                "-target",
                "amdgcn-amd-amdhsa",
                "-nogpulib",
                "-O1",
            ])
            .arg(format!("-mcpu={mcpu}"))
            .arg("-o")
            .arg(&co)
            .arg(&cl)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        inputs.push(co);
    }
    let host = dir.path().join("host.o");
    std::fs::write(&host, b"").unwrap();
    let bundle = dir.path().join("mixed.bundle");
    let out = Command::new("clang-offload-bundler-15")
        .args([
            "-type=o",
            "-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx900,hipv4-amdgcn-amd-amdhsa--gfx1100",
        ])
        .arg(format!("-input={}", host.display()))
        .arg(format!("-input={}", inputs[0].display()))
        .arg(format!("-input={}", inputs[1].display()))
        .arg(format!("-output={}", bundle.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = bundle.to_str().unwrap();
    let text = ok(&["disasm", b]);
    assert!(
        text.contains("hipv4-amdgcn-amd-amdhsa--gfx900 — decoded for gfx900"),
        "{text}"
    );
    assert!(
        text.contains("hipv4-amdgcn-amd-amdhsa--gfx1100 — target gfx1100: not disassembled (the decoder knows gfx900, gfx906, gfx908, gfx90a)"),
        "{text}"
    );
    // Only the one it cannot decode: that is the error.
    let o = kfd(&["disasm", inputs[1].to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("nothing to disassemble: the code objects are for gfx1100"),
        "{}",
        stderr(&o)
    );
    let o = kfd(&["disasm", b, "--gfx", "gfx1100"]);
    let err = usage_error(&o);
    assert_eq!(err.matches("gfx900, gfx906").count(), 1, "{err}");
}
