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

/// Issue #23 item 4: `mqd build` refuses values the kernel never writes, saying the range.
#[test]
fn build_refuses_out_of_range_sizes_and_engines() {
    let e = usage_error(&kfd(&["mqd", "build", "--ring-size", "0"]));
    assert_eq!(
        e,
        "kfd: --ring-size 0 is not a ring size; allowed: powers of two from 1K to 2G bytes"
    );
    let e = usage_error(&kfd(&["mqd", "build", "--ring-size", "512"]));
    assert!(
        e.contains("too small (KFD_MIN_QUEUE_RING_SIZE is 1024)"),
        "{e}"
    );
    let e = usage_error(&kfd(&["mqd", "build", "--eop-size", "3"]));
    assert_eq!(
        e,
        "kfd: --eop-size 3 is not a power of two; allowed: 0 (no EOP buffer) or a power of \
         two of at least 4096 bytes (Linux 6.12 refuses a smaller EOP buffer)"
    );
    let e = usage_error(&kfd(&["mqd", "build", "--eop-size", "2048"]));
    assert!(e.contains("--eop-size 2048 is too small"), "{e}");
    // Linux 6.1 does not check the EOP size; EOP_SIZE = log2(size / 8) needs 8 or more.
    ok(&["mqd", "build", "--kernel", "6.1", "--eop-size", "2048"]);
    let e = usage_error(&kfd(&[
        "mqd",
        "build",
        "--kernel",
        "6.1",
        "--eop-size",
        "4",
    ]));
    assert!(e.contains("at least 8 bytes"), "{e}");
    // SDMA queues have no EOP buffer: the value is not used.
    ok(&["mqd", "build", "--kind", "sdma", "--eop-size", "3"]);
    let e = usage_error(&kfd(&[
        "mqd",
        "build",
        "--kind",
        "sdma",
        "--sdma-engine",
        "99",
    ]));
    assert!(
        e.contains("--sdma-engine 99 is out of range; allowed: 0 to 15"),
        "{e}"
    );
    // A part: its topology's engines (gfx900: 2; gfx90a: 2 + 3 xGMI).
    let e = usage_error(&kfd(&[
        "mqd",
        "build",
        "--kind",
        "sdma",
        "--gfx",
        "gfx900",
        "--sdma-engine",
        "2",
    ]));
    assert!(
        e.contains("allowed: 0 to 1 (gfx900 has 2 SDMA engines)"),
        "{e}"
    );
    ok(&[
        "mqd",
        "build",
        "--kind",
        "sdma",
        "--gfx",
        "gfx90a",
        "--sdma-engine",
        "4",
    ]);
}

/// Issue #23 items 3 and 4: empty input, sizes, implausible fields, and no unbounded read.
#[test]
fn decode_says_empty_size_fit_and_implausible_fields() {
    let e = usage_error(&kfd_with_stdin(&["mqd", "decode", "-"], b""));
    assert_eq!(e, "kfd: stdin: empty input");
    // 512 and 2048 random-looking bytes (issue 37): not an MQD, every field the kernel always
    // writes is off; the status says so.
    for size in [512u32, 2048] {
        let junk: Vec<u8> = (0..size)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let o = kfd_with_stdin(&["mqd", "decode", "--format", "bin", "-"], &junk);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("kfd: stdin is not an MQD: none of the fields"),
            "{err}"
        );
        assert!(err.contains("sdmax_rlcx_dummy_reg is 0x"), "{err}");
        assert!(err.contains("sdmax_rlcx_rb_cntl is 0x"), "{err}");
    }
    // One field off: still an MQD, with a warning and the layouts of that size named.
    let mut edited = kfd(&["mqd", "build", "--kind", "sdma", "--out", "-"]).stdout;
    // dw27 is sdmax_rlcx_dummy_reg (kfd mqd fields --kind sdma).
    edited[4 * 27..4 * 28].copy_from_slice(&0xdead_beefu32.to_le_bytes());
    let o = kfd_with_stdin(&["mqd", "decode", "--format", "bin", "-"], &edited);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("kfd: warning: sdmax_rlcx_dummy_reg is 0xdeadbeef"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o)
            .contains("input                 512 bytes, the size of v9_sdma_mqd and v11_sdma_mqd"),
        "{}",
        stdout(&o)
    );
    // A built MQD has no warnings, and JSON lists the fits.
    let built = kfd(&["mqd", "build", "--kind", "sdma", "--out", "-"]).stdout;
    let o = kfd_with_stdin(&["mqd", "decode", "--json", "-"], &built);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let v = json(&stdout(&o));
    assert_eq!(
        v["fits"],
        serde_json::json!(["v9_sdma_mqd", "v11_sdma_mqd"])
    );
    assert!(v.get("warnings").is_none());
    let built = kfd(&["mqd", "build", "--out", "-"]).stdout;
    let o = kfd_with_stdin(&["mqd", "decode", "-"], &built);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    // A compute MQD with the header but a zeroed rest: the init_mqd fields are flagged.
    let mut hdr = vec![0u8; 2048];
    hdr[..4].copy_from_slice(&0xC031_0800u32.to_le_bytes());
    let o = kfd_with_stdin(&["mqd", "decode", "--format", "bin", "-"], &hdr);
    let err = stderr(&o);
    for field in [
        "cp_mqd_control",
        "cp_hqd_persistent_state",
        "cp_hqd_pq_control",
        "cp_hqd_quantum",
        "compute_pipelinestat_enable",
    ] {
        assert!(
            err.contains(&format!("warning: {field} is 0x00000000")),
            "{err}"
        );
    }
    // Sizes that fit no layout say so.
    let e = usage_error(&kfd(&["mqd", "decode", "--hex", "1 2 3"]));
    assert!(
        e.contains("12 bytes, the size of no MQD layout (512, 520, 2048 bytes)"),
        "{e}"
    );
    // More than the largest layout stops at 2052 bytes read: /dev/zero ends at once.
    let start = std::time::Instant::now();
    let e = usage_error(&kfd(&["mqd", "decode", "/dev/zero"]));
    assert!(e.contains("holds more than 2048 bytes"), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
}
