//! `kfd mqd build`, `decode` and `fields` against the facts (§6).

mod common;

use common::*;

fn field_line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
}

fn value(out: &str, name: &str) -> String {
    field_line(out, name)
        .split_whitespace()
        .nth(2)
        .unwrap_or_default()
        .to_owned()
}

/// Facts §6.4 golden example (the defaults of `kfd mqd build`).
#[test]
fn build_prints_the_golden_aql_queue_per_generation() {
    for (gfx, kernel, pq_control, persistent, ib_control) in [
        ("gfx9", "6.12", "0x1c01450f", "0x40005301", "0x00b00000"),
        ("gfx9", "6.1", "0x0c01450f", "0x40005301", "0x00b00000"),
        ("gfx10", "6.12", "0x1808450f", "0x40005301", "0x00300000"),
        ("gfx11", "6.12", "0x1808450f", "0x40005501", "0x00300000"),
    ] {
        let out = ok(&["mqd", "build", "--gfx", gfx, "--kernel", kernel]);
        assert_eq!(
            value(&out, "cp_hqd_pq_control"),
            pq_control,
            "{gfx} {kernel}"
        );
        assert_eq!(value(&out, "cp_hqd_persistent_state"), persistent, "{gfx}");
        assert_eq!(value(&out, "cp_hqd_ib_control"), ib_control, "{gfx}");
        assert_eq!(value(&out, "cp_hqd_pq_doorbell_control"), "0x0000401a");
        assert_eq!(value(&out, "cp_hqd_eop_control"), "0x00000009");
        assert_eq!(value(&out, "cp_hqd_quantum"), "0x00000111");
        assert!(field_line(&out, "cp_hqd_pq_control").starts_with("    dw145 "));
    }
    let out = ok(&["mqd", "build"]);
    assert!(out.starts_with("v9_mqd (gfx9 compute, AQL)"), "{out}");
    assert!(out.contains("  priority              pipe CS_MEDIUM (1), queue 7"));
    assert!(out.contains("non-zero dwords of 512:"), "{out}");
}

#[test]
fn sdma_build_per_generation() {
    // Facts §6.5: 1 MiB ring → rb_cntl 0x00061024 (v9/v10), 0x00061824 (v11); doorbell at dw22/dw22/dw19.
    for (gfx, rb_cntl, doorbell_dw, name) in [
        ("gfx9", "0x00061024", "dw22", "v9_sdma_mqd"),
        ("gfx10", "0x00061024", "dw22", "v10_sdma_mqd"),
        ("gfx11", "0x00061824", "dw19", "v11_sdma_mqd"),
    ] {
        let out = ok(&[
            "mqd",
            "build",
            "--kind",
            "sdma",
            "--gfx",
            gfx,
            "--ring-size",
            "1M",
        ]);
        assert!(out.starts_with(name), "{out}");
        assert_eq!(value(&out, "sdmax_rlcx_rb_cntl"), rb_cntl, "{gfx}");
        assert!(
            field_line(&out, "sdmax_rlcx_doorbell_offset")
                .starts_with(&format!("    {doorbell_dw}")),
            "{gfx}"
        );
        assert_eq!(value(&out, "sdmax_rlcx_doorbell_offset"), "0x00004018");
    }
}

#[test]
fn build_out_then_decode_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    for gfx in ["gfx9", "gfx10", "gfx11"] {
        for kind in ["aql", "pm4", "sdma", "hiq"] {
            let path = dir.path().join(format!("{gfx}-{kind}.bin"));
            let path = path.to_str().unwrap();
            let o = kfd(&["mqd", "build", "--gfx", gfx, "--kind", kind, "--out", path]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            let size = std::fs::metadata(path).unwrap().len();
            let expect = match (gfx, kind) {
                ("gfx10", "sdma") => 520,
                (_, "sdma") => 512,
                _ => 2048,
            };
            assert_eq!(size, expect, "{gfx} {kind}");
            let built = ok(&["mqd", "build", "--gfx", gfx, "--kind", kind]);
            let decoded = ok(&["mqd", "decode", path, "--gfx", gfx]);
            assert_eq!(decoded, built, "{gfx} {kind}");
        }
    }
    // --out - writes the raw bytes to stdout.
    let o = kfd(&["mqd", "build", "--out", "-"]);
    assert_eq!(o.stdout.len(), 2048);
    assert_eq!(
        o.stdout[..4],
        0xC031_0800u32.to_le_bytes(),
        "the compute MQD header"
    );
    // --hex output is input for decode.
    let hex = ok(&["mqd", "build", "--hex"]);
    assert!(
        hex.starts_with("# v9_mqd (gfx9), 2048 bytes\n0x0000: c0310800 "),
        "{hex}"
    );
    let o = kfd_with_stdin(&["mqd", "decode"], hex.as_bytes());
    assert_eq!(stdout(&o), ok(&["mqd", "build"]));
}

#[test]
fn json_output_parses() {
    let v = json(&ok(&["mqd", "build", "--json"]));
    assert_eq!(
        (v["struct"].as_str(), v["size"].as_u64(), v["kind"].as_str()),
        (Some("v9_mqd"), Some(2048), Some("compute"))
    );
    assert_eq!(v["summary"]["doorbell_offset"], 0x1006);
    assert_eq!(v["summary"]["aql"], true);
    let pq = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "cp_hqd_pq_control")
        .unwrap();
    assert_eq!(
        (pq["dword"].as_u64(), pq["value"].as_u64()),
        (Some(145), Some(0x1C01_450F))
    );
    let f = json(&ok(&[
        "mqd", "fields", "--gfx", "gfx10", "--kind", "sdma", "--json",
    ]));
    assert_eq!(
        (f["struct"].as_str(), f["size"].as_u64()),
        (Some("v10_sdma_mqd"), Some(520))
    );
    let engine = f["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "sdma_engine_id")
        .unwrap();
    assert_eq!(engine["dword"], 128);
}

#[test]
fn fields_lists_the_struct() {
    let out = ok(&["mqd", "fields"]);
    assert!(out.starts_with("v9_mqd: 2048 bytes, 512 dwords"), "{out}");
    assert!(out.contains("\n  dw130      cp_hqd_active\n"), "{out}");
    assert!(
        out.contains("compute_static_thread_mgmt_se4 (GC 9.4.3: "),
        "{out}"
    );
}

#[test]
fn bad_queues_and_dumps_are_one_line() {
    let e = usage_error(&kfd(&["mqd", "build", "--ring-size", "3000"]));
    assert_eq!(
        e,
        "kfd: cannot build the MQD: ring size 3000 is not a power of two"
    );
    let e = usage_error(&kfd(&["mqd", "build", "--ring-address", "0x1001"]));
    assert!(
        e.contains("ring address 0x1001 is not 256-byte aligned"),
        "{e}"
    );
    let e = usage_error(&kfd(&["mqd", "decode", "--hex", "c0310800 0 0"]));
    assert!(
        e.contains("12 bytes are too short for a v9_mqd, which needs 2048"),
        "{e}"
    );
    let zeros = "0 ".repeat(512);
    let e = usage_error(&kfd(&[
        "mqd", "decode", "--hex", &zeros, "--kind", "compute",
    ]));
    assert!(e.contains("not the compute MQD header 0xc0310800"), "{e}");
}
