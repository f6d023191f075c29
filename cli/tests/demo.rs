//! `kfd demo` on the model: every step runs, its packets are the ones the facts give, the
//! results it reports were checked, and `--json` / `--quiet` behave.

mod common;

use common::*;

/// The lines between the heading of step `n` and the next step.
fn step(out: &str, n: usize) -> String {
    let start = format!("[{n}/10] ");
    let next = format!("[{}/10] ", n + 1);
    out.lines()
        .skip_while(|l| !l.starts_with(&start))
        .take_while(|l| l.starts_with(&start) || !l.starts_with(&next))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn demo_runs_every_step_on_the_model() {
    let out = ok(&["demo", "--quick", "--model", "gfx900"]);
    for (n, title) in [
        (1, "open"),
        (2, "topology"),
        (3, "allocate and map"),
        (4, "PM4 compute queue"),
        (5, "SDMA queue"),
        (6, "signal and wait on an event"),
        (7, "run a kernel: the project's axpy (cli/kernels/axpy.cl)"),
        (8, "drain a trace buffer"),
        (9, "drain a running kernel"),
        (10, "measured"),
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("[{n}/10] {title}"))),
            "step {n} {title}:\n{out}"
        );
    }
    let open = step(&out, 1);
    assert!(
        open.contains("source: the model of 1 × gfx900 (Linux 6.12) — --model"),
        "{open}"
    );
    assert!(open.contains("KFD interface 1.17"), "{open}");
    assert!(step(&out, 2).contains("gfx900 (vega10), gpu_id 0x4f3a — 64 CUs, wave64"));
    let memory = step(&out, 3);
    assert!(memory.contains("host    GTT  128 KiB at 0x"), "{memory}");
    assert!(memory.contains("vram    VRAM  64 KiB at 0x"), "{memory}");

    // Facts §4.2: WRITE_DATA of 2 dwords has header count N + 2 = 4; dst_sel 5 (memory).
    // Facts §4.3: RELEASE_MEM is 8 dwords with header 0xC0064900.
    let pm4 = step(&out, 4);
    assert!(pm4.contains("0x0000: c0043700 "), "{pm4}");
    assert!(pm4.contains("WRITE_DATA dst_sel=MEMORY"), "{pm4}");
    assert!(pm4.contains("0x0006: c0064900 "), "{pm4}");
    assert!(
        pm4.contains("RELEASE_MEM event_type=CACHE_FLUSH_AND_INV_TS_EVENT"),
        "{pm4}"
    );
    assert!(
        pm4.contains("the CP wrote 0xc0ffee00 0x0000beef and the fence after"),
        "{pm4}"
    );

    // Facts §5: COPY_LINEAR is 7 dwords, op 1, count = bytes − 1; FENCE is 4 dwords, op 5.
    let sdma = step(&out, 5);
    assert_eq!(sdma.matches(": 00000001 0000ffff ").count(), 2, "{sdma}");
    assert_eq!(
        sdma.matches("SDMA_COPY_LINEAR bytes=65536").count(),
        2,
        "{sdma}"
    );
    assert!(sdma.contains("0x000e: 00000005 "), "{sdma}");
    assert!(
        sdma.contains("64 KiB GTT → VRAM → GTT came back identical"),
        "{sdma}"
    );

    // Facts §8.2: the signal is a RELEASE_MEM with an interrupt carrying the event id.
    let event = step(&out, 6);
    assert!(event.contains("event 1: signal, auto-reset"), "{event}");
    assert!(
        event.contains("int_sel=SEND_INTERRUPT_AFTER_WRITE_CONFIRM"),
        "{event}"
    );
    assert!(event.contains("int_ctxid=0x1"), "{event}");
    assert!(event.contains("WAIT_EVENTS returned after"), "{event}");

    // The kept gfx900 code object; 1000 work-items in groups of 256 are 4 workgroups of
    // 4 waves (64 lanes each), every element checked against a·x + y on the host.
    let kernel = step(&out, 7);
    assert!(kernel.contains("code object for gfx900"), "{kernel}");
    assert!(
        kernel.contains("1000 work-items in workgroups of 256 → 4 workgroups of 4 waves"),
        "{kernel}"
    );
    assert!(kernel.contains("1000 of 1000 correct"), "{kernel}");
    assert!(
        kernel.contains("ran 4 workgroups, 16 waves,") && kernel.contains(", 0 faults"),
        "{kernel}"
    );

    // 16 MiB of 256-byte records: exactly 65536, all received and verified.
    let drain = step(&out, 8);
    assert!(
        drain.contains("produced 65536 records of 256 bytes (16 MiB)"),
        "{drain}"
    );
    assert!(
        drain.contains("received 65536 records in order, checksums verified"),
        "{drain}"
    );
    // The kernel producer (the demo skips it without clang-15, which the tests need):
    // every record while the kernel ran.
    let kernel = step(&out, 9);
    let skipped_without_clang =
        kernel.contains("skipped:") && kfd_testkit::tools(&["clang-15", "ld.lld-15"]).is_none();
    assert!(
        skipped_without_clang
            || (kernel.contains("records reached the reader while the kernel still ran")
                && kernel.contains("the kernel's own results match the host's")),
        "{kernel}"
    );
    let numbers = step(&out, 10);
    assert!(numbers.contains("median of 50"), "{numbers}");
    assert!(out
        .trim_end()
        .lines()
        .last()
        .is_some_and(|l| l.starts_with("done in ")));
    // No progress bar and no colour on a pipe.
    assert!(!out.contains('\r') && !out.contains('\x1b'), "{out:?}");
}

#[test]
fn demo_json_and_quiet() {
    let v = json(&ok(&["demo", "--quick", "--json", "--drain-bytes", "1M"]));
    assert_eq!(v["source"]["kind"], "model");
    let steps = v["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 10);
    assert_eq!(steps[3]["title"], "PM4 compute queue");
    let measurements = v["measurements"].as_array().expect("measurements");
    assert!(measurements.len() >= 3);
    for m in measurements {
        assert!(m["value"].as_f64().is_some_and(|x| x > 0.0), "{m}");
        assert!(m["unit"].is_string() && m["how"].is_string(), "{m}");
    }
    // 1 MiB of 256-byte records.
    assert!(
        steps[7]["lines"][0]
            .as_str()
            .is_some_and(|l| l.contains("produced 4096 records")),
        "{}",
        steps[7]
    );
    assert!(
        steps[6]["lines"]
            .as_array()
            .is_some_and(|l| l.iter().any(|l| l
                .as_str()
                .is_some_and(|l| l.contains("1000 of 1000 correct")))),
        "{}",
        steps[6]
    );
    let o = kfd(&["demo", "--quick", "--quiet", "--drain-bytes", "1M"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty());
}

#[test]
fn demo_on_another_part() {
    // gfx1030: SDMA 5 and the gfx10 PM4 layouts; the same steps work.
    let out = ok(&[
        "demo",
        "--quick",
        "--model",
        "gfx1030",
        "--drain-bytes",
        "1M",
    ]);
    assert!(step(&out, 2).contains("gfx1030"), "{out}");
    assert!(step(&out, 5).contains("came back identical"), "{out}");
    // No code object is kept for gfx1030 (and the model runs gfx9 shaders only).
    assert!(
        step(&out, 7).contains("skipped: the repository keeps axpy for gfx900 and gfx90a only"),
        "{out}"
    );
    assert!(
        step(&out, 9).contains("skipped: the model runs gfx9 kernels"),
        "{out}"
    );
}

#[test]
fn demo_bad_arguments() {
    let e = usage_error(&kfd(&["demo", "--drain-bytes", "0"]));
    assert_eq!(e, "kfd: --drain-bytes 0: nothing to drain");
    let e = usage_error(&kfd(&["demo", "--json", "--quiet"]));
    assert!(e.contains("cannot be used with"), "{e}");
    let e = usage_error(&kfd(&["demo", "--drain-bytes", "lots"]));
    assert!(e.contains("'lots' is not a number"), "{e}");
}
