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
        let out = Command::new("clang-15")
            .args(["-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa"])
            .arg(format!("-mcpu={gfx}"))
            .args(["-O2", "-nogpulib", "-o"])
            .arg(&co)
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = blocks(&ok(&["disasm", co.to_str().unwrap()]));
        let theirs = objdump_blocks(&co, gfx);
        for name in ["loops", "mix", "blend"] {
            let (a, b) = (&ours[name], &theirs[name]);
            assert!(!a.is_empty(), "{gfx} {name}: no instructions listed");
            // llvm-objdump runs on to the next symbol through the alignment padding; we stop
            // at the symbol's size.
            assert!(
                a.len() <= b.len(),
                "{gfx} {name}: {} lines, objdump {}",
                a.len(),
                b.len()
            );
            for pad in &b[a.len()..] {
                assert!(
                    pad.contains("s_nop") || pad.contains("s_code_end"),
                    "{gfx} {name}: {pad}"
                );
            }
            for (x, y) in a.iter().zip(b) {
                assert_eq!(x, y, "{gfx} {name}");
                compared += 1;
            }
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
