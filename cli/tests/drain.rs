//! `kfd drain` on the model: each producer and trigger delivers every record, the report
//! says so, `--json` parses, and wrong settings are refused before anything runs.

mod common;

use common::*;

fn field<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no {name:?} line in:\n{out}"))
}

#[test]
fn drain_host_producer_report() {
    // 4 MiB of 4 KiB records (4088 payload + 8 header) in 64 KiB slots.
    let out = ok(&[
        "drain",
        "--slot-size",
        "64K",
        "--slots",
        "4",
        "--total",
        "4M",
        "--record-size",
        "4088",
    ]);
    assert!(
        out.starts_with(
            "kfd drain: host producer → 4 × 64 KiB slots, SDMA drain queue, on-full trigger, event waits, lossless"
        ),
        "{out}"
    );
    assert!(
        field(&out, "source").contains("the model of 1 × gfx900"),
        "{out}"
    );
    assert_eq!(
        field(&out, "moved").trim(),
        "moved     4 MiB in 1024 records of 4088 payload bytes, verified: checksum"
    );
    assert!(field(&out, "speed").contains("GB/s"), "{out}");
    assert!(
        field(&out, "loss").contains("0 record(s) dropped (0 B), 1024 written"),
        "{out}"
    );
    assert!(!out.contains('\r'), "no progress line on a pipe: {out:?}");
}

#[test]
fn drain_pm4_producer_with_kernel_end_trigger_json() {
    let v = json(&ok(&[
        "drain",
        "--producer",
        "pm4",
        "--slot-size",
        "16K",
        "--total",
        "256K",
        "--record-size",
        "1016",
        "--records-per-kernel",
        "16",
        "--trigger",
        "kernel-end",
        "--json",
    ]));
    assert_eq!(v["config"]["producer"], "pm4");
    assert_eq!(v["config"]["trigger"], "kernel-end");
    // 256 KiB of 1 KiB records = 256 records = 16 kernels of 16.
    assert_eq!(v["records"], 256);
    assert_eq!(v["records_written"], 256);
    assert_eq!(v["bytes"], 256 << 10);
    assert!(v["kernel_ends"].as_u64().is_some_and(|k| k >= 1), "{v}");
    assert!(
        v["latency_ns"]["count"].as_u64().is_some_and(|c| c > 0),
        "{v}"
    );
}

#[test]
fn drain_periodic_poll_and_pm4_engine() {
    let v = json(&ok(&[
        "drain",
        "--slot-size",
        "64K",
        "--total",
        "1M",
        "--trigger",
        "periodic",
        "--period",
        "1ms",
        "--wait",
        "poll",
        "--engine",
        "pm4",
        "--verify",
        "exact",
        "--json",
    ]));
    assert_eq!(v["config"]["trigger"], "periodic");
    assert_eq!(v["config"]["period_ms"], 1.0);
    assert_eq!(v["config"]["wait"], "poll");
    assert_eq!(v["config"]["engine"], "pm4");
    assert_eq!(v["config"]["verify"], "exact");
    assert_eq!(v["records"], v["records_written"]);
    assert!(v["bytes"].as_u64().is_some_and(|b| b >= 1 << 20), "{v}");
}

#[test]
fn drain_drop_mode_counts_what_it_drops() {
    let v = json(&ok(&[
        "drain",
        "--slot-size",
        "4K",
        "--slots",
        "2",
        "--total",
        "1M",
        "--loss",
        "drop",
        "--json",
    ]));
    let written = v["records_written"].as_u64().unwrap();
    let dropped = v["records_dropped"].as_u64().unwrap();
    // Every record is either delivered or counted as dropped.
    assert_eq!(v["records"].as_u64(), Some(written));
    let record = 8 + v["config"]["record_payload"].as_u64().unwrap();
    assert_eq!(
        (written + dropped) * record,
        (1u64 << 20).div_ceil(record) * record
    );
}

#[test]
fn drain_refuses_wrong_settings() {
    let e = usage_error(&kfd(&["drain", "--slot-size", "1000"]));
    assert_eq!(
        e,
        "kfd: slot size 1000 is not a multiple of 256 bytes (try 1024)"
    );
    let e = usage_error(&kfd(&["drain", "--slots", "1"]));
    assert!(e.contains("1 slot(s) are too few"), "{e}");
    let e = usage_error(&kfd(&["drain", "--slot-size", "4K", "--record-size", "8K"]));
    assert!(
        e.contains("--record-size 8192: a payload is a multiple of 8 from 16 to 4024 bytes"),
        "{e}"
    );
    let e = usage_error(&kfd(&["drain", "--record-size", "100"]));
    assert!(e.contains("multiple of 8"), "{e}");
    let e = usage_error(&kfd(&[
        "drain",
        "--trigger",
        "periodic",
        "--period",
        "10us",
    ]));
    assert!(e.contains("shorter than 100 µs"), "{e}");
    let e = usage_error(&kfd(&["drain", "--period", "soon"]));
    assert!(e.contains("'soon' is not a duration"), "{e}");
    let e = usage_error(&kfd(&["drain", "--total", "0"]));
    assert_eq!(e, "kfd: --total 0: nothing to drain");
    let e = usage_error(&kfd(&["drain", "--producer", "gpu"]));
    assert!(e.contains("'gpu'"), "{e}");
    let e = usage_error(&kfd(&["drain", "--slot-size", "8G"]));
    assert!(e.contains("largest slot"), "{e}");
}

#[test]
fn drain_kernel_producer_json() {
    // 8 KiB of 64-byte records from 2 waves of traced_work through 4 slots of 1 KiB.
    let o = kfd(&[
        "drain",
        "--producer",
        "kernel",
        "--slot-size",
        "1K",
        "--slots",
        "4",
        "--total",
        "8K",
        "--record-size",
        "56",
        "--waves",
        "2",
        "--trigger",
        "kernel-end",
        "--json",
    ]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    if kfd_testkit::tools(&["clang-15", "ld.lld-15"]).is_none() {
        return;
    }
    let v = json(&text);
    assert_eq!(v["config"]["producer"], "kernel");
    assert_eq!(v["records"], 128);
    assert_eq!(v["records_written"], 128);
    assert_eq!(v["bytes"], 8 << 10);
    assert_eq!(v["application_results_ok"], true);
    assert!(
        v["records_during_kernel"].as_u64().is_some_and(|n| n > 0),
        "{v}"
    );
    assert_eq!(v["kernel_ends"], 1);
}

#[test]
fn drain_kernel_producer_refuses_short_records() {
    let e = usage_error(&kfd(&[
        "drain",
        "--producer",
        "kernel",
        "--record-size",
        "16",
    ]));
    assert!(e.contains("at least 24 bytes"), "{e}");
    let e = usage_error(&kfd(&["drain", "--producer", "kernel", "--waves", "0"]));
    assert!(e.contains("1 to 65535 waves"), "{e}");
}

#[test]
fn drain_moves_exactly_the_total_or_says_why_not() {
    // The default records (about a quarter slot) are sized to add up to --total.
    for total in ["1M", "3M"] {
        let v = json(&ok(&["drain", "--total", total, "--json"]));
        let asked = v["config"]["total"].as_u64().unwrap();
        assert_eq!(v["bytes"].as_u64(), Some(asked), "--total {total}: {v}");
    }
    // Records of a size asked for that do not divide the total: rounded up, and said so.
    let out = ok(&[
        "drain",
        "--slot-size",
        "64K",
        "--total",
        "1000000",
        "--record-size",
        "4088",
    ]);
    assert!(
        field(&out, "moved").contains("(976.6 KiB asked: rounded up to whole 4096-byte records)"),
        "{out}"
    );
}

#[test]
fn drain_kernel_producer_on_a_part_the_interpreter_lacks_is_refused_up_front() {
    for part in ["gfx1030", "gfx942"] {
        let o = kfd_within(
            &["drain", "--producer", "kernel", "--model", part],
            std::time::Duration::from_secs(120),
        );
        let err = usage_error(&o);
        assert!(
            err.contains(&format!("not on {part}: use --model gfx900")),
            "{err}"
        );
    }
}

#[test]
fn drain_ends_with_the_error_when_its_queues_stop() {
    // Every engine access faults: amdkfd evicts the process's queues, the drain never
    // arrives; the session ends with the fault instead of waiting forever.
    let o = kfd_within_env(
        &["drain", "--total", "1M"],
        &[("KFD_MODEL_FAULTS", "vm-fault=0x1000+0x7ffffffff000")],
        std::time::Duration::from_secs(120),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("kfd: drain: GPU memory fault at 0x")
            && last.contains("stopped the session's queues"),
        "{err}"
    );
}
