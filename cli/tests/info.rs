//! `kfd info` on the model: the source line, the interface version, and each preset's
//! topology as the model publishes it in sysfs.

mod common;

use common::*;

/// The line of `out` that starts (after indentation) with `name`.
fn field<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no {name:?} line in:\n{out}"))
}

#[test]
fn info_names_the_source_and_the_gfx900_agent() {
    let out = ok(&["info", "--model", "gfx900"]);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("source: the model of 1 × gfx900 (Linux 6.12) — --model")
    );
    // Facts §7.1: Linux 6.12 speaks interface 1.17.
    assert!(
        lines.next().is_some_and(
            |l| l.starts_with("KFD interface 1.17 ") && l.ends_with("2 node(s): 1 CPU, 1 GPU")
        ),
        "{out}"
    );
    assert!(out.contains("node 0 · CPU · 16 cores"), "{out}");
    assert!(
        out.contains("node 1 · GPU gfx900 (vega10) · gpu_id 0x4f3a · renderD128"),
        "{out}"
    );
    assert!(
        field(&out, "compute")
            .contains("64 CUs × 4 SIMDs = 256 SIMDs, wave64, 10 waves/SIMD, 1500 MHz"),
        "{out}"
    );
    assert!(
        field(&out, "LDS").contains("64 KiB per work-group"),
        "{out}"
    );
    let gpu = &out[out.find("node 1").unwrap_or(0)..];
    assert!(
        field(gpu, "memory").contains("VRAM (CPU-visible) 16 GiB (2048-bit"),
        "{gpu}"
    );
    assert!(field(gpu, "caches").contains("L1 16 KiB"), "{gpu}");
    assert!(gpu.contains("L2 4 MiB"), "{gpu}");
    assert!(field(gpu, "io links").contains("→ node 0 PCIe"), "{gpu}");
    assert!(field(gpu, "queues").contains("24 HQDs for KFD"), "{gpu}");
    assert!(field(gpu, "capability").contains("doorbell 2.0"), "{gpu}");
}

#[test]
fn info_json_has_every_agent_of_a_two_gpu_gfx90a() {
    let v = json(&ok(&["info", "--model", "gfx90a", "--gpus", "2", "--json"]));
    assert_eq!(v["source"]["kind"], "model");
    assert_eq!(
        v["source"]["description"],
        "model of 2 × gfx90a (Linux 6.12)"
    );
    assert_eq!(v["interface"], "1.17");
    let nodes = v["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0]["kind"], "cpu");
    for (i, node) in nodes[1..].iter().enumerate() {
        let g = &node["gpu"];
        assert_eq!(node["node"], i + 1);
        assert_eq!(g["gfx_target"], "gfx90a");
        // gfx_target_version = major×10000 + minor×100 + stepping.
        assert_eq!(g["gfx_target_version"], 90010);
        assert_eq!(g["compute_units"], 104);
        assert_eq!(g["simds"], 416);
        assert_eq!(g["wave_size"], 64);
        assert_eq!(g["lds_kib"], 64);
        assert_eq!(g["vram_bytes"], 64u64 << 30);
        assert_eq!(g["render_minor"], 128 + i);
        assert!(g["queue_buffers"]["context_save_area"].as_u64().unwrap() > 0);
        // Two GPUs of an xGMI part: one PCIe link to the CPU, one xGMI link to the peer.
        let links = node["io_links"].as_array().expect("links");
        let kinds: Vec<_> = links.iter().map(|l| l["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["PCIe", "xGMI"]);
        assert_eq!(links[1]["to"], if i == 0 { 2 } else { 1 });
    }
    assert_ne!(nodes[1]["gpu"]["gpu_id"], nodes[2]["gpu"]["gpu_id"]);
}

#[test]
fn info_wave32_part_and_one_node() {
    let out = ok(&["info", "--model", "gfx1030", "--node", "1"]);
    assert!(!out.contains("node 0 ·"), "{out}");
    assert!(
        field(&out, "compute").contains("80 CUs × 2 SIMDs = 160 SIMDs, wave32"),
        "{out}"
    );
    // Facts: gfx1030 gives KFD only 8 HQDs.
    assert!(field(&out, "queues").contains("8 HQDs for KFD"), "{out}");
    let v = json(&ok(&[
        "info", "--model", "gfx1030", "--node", "1", "--json",
    ]));
    assert_eq!(v["nodes"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["nodes"][0]["gpu"]["wave_size"], 32);
}

#[test]
fn info_follows_the_environment_and_the_kernel_flag() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(["info", "--json"])
        .env("KFD_MODEL_PRESET", "gfx942")
        .env_remove("KFD_DEVICE")
        .output()
        .expect("kfd runs");
    assert_eq!(o.status.code(), Some(0));
    let v = json(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(v["source"]["reason"], "KFD_MODEL_PRESET/KFD_MODEL_GPUS");
    assert_eq!(v["nodes"][1]["gpu"]["xccs"], 8);
    // Facts §7.1: Linux 6.1 is interface 1.11.
    let out = ok(&["info", "--kernel", "6.1"]);
    assert!(
        out.contains("(Linux 6.1)") && out.contains("KFD interface 1.11 "),
        "{out}"
    );
}

#[test]
fn info_bad_arguments_are_one_line() {
    let e = usage_error(&kfd(&["info", "--model", "gfx8"]));
    assert!(e.contains("unknown GPU preset 'gfx8'"), "{e}");
    let e = usage_error(&kfd(&["info", "--gpus", "0"]));
    assert!(e.contains("--gpus"), "{e}");
    let e = usage_error(&kfd(&["info", "--model", "gfx900", "--device", "/dev/kfd"]));
    assert!(e.contains("cannot be used with"), "{e}");
    let e = usage_error(&kfd(&["info", "--device", "/nonexistent/kfd"]));
    assert!(e.starts_with("kfd: cannot open /nonexistent/kfd: "), "{e}");
    let e = usage_error(&kfd(&["info", "--model", "gfx900", "--node", "7"]));
    assert_eq!(e, "kfd: there is no node 7; the topology has node(s) 0, 1");
}

#[test]
fn a_file_that_is_not_kfd_fails_with_one_line() {
    // /dev/null exists but answers GET_VERSION with ENOTTY: not a KFD device (status 1).
    // (With a real KFD sysfs tree, `info` prints that topology instead; see below.)
    let real_sysfs = std::path::Path::new("/sys/devices/virtual/kfd/kfd/topology").exists();
    for sub in ["info", "demo", "drain", "bench"] {
        if sub == "info" && real_sysfs {
            continue;
        }
        let o = kfd(&[sub, "--device", "/dev/null"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{sub}: {err}");
        assert_eq!(err.lines().count(), 1, "{sub}: {err}");
        assert!(
            err.starts_with(
                "kfd: cannot open /dev/null: not a KFD device (a character device that does \
                 not answer GET_VERSION: ENOTTY (25))"
            ),
            "{sub}: {err}"
        );
        assert!(o.stdout.is_empty(), "{sub}: {}", stdout(&o));
    }
}

#[test]
fn info_prints_sysfs_when_the_device_cannot_be_opened() {
    if !std::path::Path::new("/sys/devices/virtual/kfd/kfd/topology").exists() {
        return; // nothing to read on a machine without amdkfd
    }
    let out = ok(&["info", "--device", "/dev/null"]);
    assert!(
        out.contains("KFD interface unknown (cannot open /dev/null"),
        "{out}"
    );
}

/// The GPU block of `kfd info` output (from its `node 1` heading to the end).
fn gpu_block(out: &str) -> &str {
    &out[out.find("node 1").unwrap_or(0)..]
}

#[test]
fn info_names_the_board_and_the_isa_as_rocminfo_does() {
    // rocminfo 5.2.3 under the shim prints these Marketing Names and ISA names.
    for (model, name) in [
        (
            "gfx900",
            "AMD Radeon Instinct MI25 · ISA amdgcn-amd-amdhsa--gfx900:xnack-",
        ),
        (
            "gfx90a",
            "AMD Instinct MI210 · ISA amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
        ),
        (
            "gfx1030",
            "AMD Radeon RX 6900 XT · ISA amdgcn-amd-amdhsa--gfx1030",
        ),
    ] {
        let out = ok(&["info", "--model", model]);
        let line = field(gpu_block(&out), "name");
        assert_eq!(
            line.trim_start().trim_start_matches("name").trim(),
            name,
            "{out}"
        );
    }
    let v = json(&ok(&["info", "--json"]));
    let gpu = &v["nodes"][1]["gpu"];
    assert_eq!(gpu["marketing_name"], "AMD Radeon Instinct MI25");
    assert_eq!(gpu["isa"], "amdgcn-amd-amdhsa--gfx900:xnack-");
}

#[test]
fn info_shows_the_per_asic_cache_table() {
    // amdkfd's vega10 table: the vector L1 per CU, the scalar caches per 3 CUs (the last of
    // each 16-CU array alone), the L2 across all 64 CUs.
    let out = ok(&["info"]);
    let gpu = gpu_block(&out);
    let caches: Vec<&str> = gpu
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("caches"))
        .take(4)
        .map(|l| l.trim_start().trim_start_matches("caches").trim())
        .collect();
    assert_eq!(
        caches,
        [
            "L1 16 KiB data+hsacu ×64, 64 B lines, shared by 1 CU(s)",
            "L1 32 KiB instruction+hsacu ×24, 64 B lines, shared by 1–3 CU(s)",
            "L1 16 KiB data+hsacu ×24, 64 B lines, shared by 1–3 CU(s)",
            "L2 4 MiB data+hsacu, 64 B lines, shared by 64 CU(s)",
        ],
        "{gpu}"
    );
    let v = json(&ok(&["info", "--model", "gfx1030", "--json"]));
    let caches = v["nodes"][1]["caches"].as_array().unwrap();
    let gl1 = caches.iter().find(|c| c["size_kib"] == 128).expect("a GL1");
    assert_eq!(
        (gl1["instances"].as_u64(), gl1["shared_by"].as_u64()),
        (Some(8), Some(10))
    );
    let l3 = caches.iter().find(|c| c["level"] == 3).expect("an L3");
    assert_eq!(
        (l3["size_kib"].as_u64(), l3["shared_by"].as_u64()),
        (Some(131072), Some(80))
    );
}

#[test]
fn a_path_that_is_no_device_says_so_and_names_its_errno() {
    if std::path::Path::new("/sys/devices/virtual/kfd/kfd/topology").exists() {
        return; // info then prints the real sysfs instead
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    for (path, what) in [
        (dir.path().to_str().unwrap(), "a directory"),
        (file.to_str().unwrap(), "a regular file"),
    ] {
        let o = kfd(&["info", "--device", path]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(
            err.trim_end(),
            format!(
                "kfd: cannot open {path}: not a KFD device ({what}); use --model gfx900 to run on the model"
            )
        );
        assert!(!err.contains("E?"), "{err}");
    }
}

/// The README's `kfd info` block is what `kfd info` prints today, line for line (`…` marks
/// what it leaves out; the host's memory size differs from machine to machine).
#[test]
fn the_readmes_info_block_is_current() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
    )
    .unwrap();
    let start = readme
        .find("$ kfd info\n")
        .expect("the README shows kfd info");
    let block = &readme[start..];
    let block = &block[..block.find("```").unwrap()];
    let out = ok(&["info"]);
    let mut shown = 0;
    for line in block.lines().skip(1) {
        if line.trim() == "…" || line.contains("system ") {
            continue;
        }
        assert!(
            out.lines().any(|l| l == line),
            "README line not printed: {line:?}\n{out}"
        );
        shown += 1;
    }
    assert!(shown > 15, "{shown} lines checked");
}

#[test]
fn the_mi210_preset_runs_with_ecc_on() {
    let out = ok(&["info", "--model", "gfx90a"]);
    assert!(
        out.contains("ISA amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
        "{out}"
    );
    assert!(out.contains("memory EDC, RAS events, SRAM EDC"), "{out}");
    let out = ok(&["info", "--model", "gfx942"]);
    assert!(
        out.contains("ISA amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"),
        "{out}"
    );
    // Consumer and older parts: no ECC.
    for part in ["gfx900", "gfx1030"] {
        let out = ok(&["info", "--model", part]);
        assert!(
            !out.contains("SRAM EDC") && !out.contains("sramecc"),
            "{part}: {out}"
        );
    }
}
