//! Fault injection from the command line: `KFD_MODEL_FAULTS` and `--fault` reach every model
//! `kfd` builds, and a malformed value is refused with one line naming the accepted kinds.

mod common;

use common::*;

/// The fault kinds the refusal must list (kfd_model::faults).
const KINDS: [&str; 8] = [
    "scheduler-hang",
    "unpreemptible=DOORBELL",
    "hiq-full",
    "lose-interrupts=N",
    "lose-every-interrupt=N",
    "delay-interrupts=TIME",
    "slow-engine=TIME",
    "vm-fault=VA+LEN",
];

/// README "Failure paths, on purpose": with the HIQ full, the ioctl that needs the scheduler
/// (CREATE_QUEUE maps the queue through a runlist on the HIQ) fails with ENOMEM.
fn assert_create_queue_fails_on_a_full_hiq(o: &std::process::Output) {
    let out = stdout(o);
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("kfd trace create-queue on the model (gfx900, injected fault hiq-full)"),
        "{out}"
    );
    let step = out
        .lines()
        .find(|l| l.contains("CREATE_QUEUE (AQL compute"))
        .unwrap_or_else(|| panic!("no CREATE_QUEUE step:\n{out}"));
    assert!(
        step.contains("failed: ") && step.contains("ENOMEM (12)"),
        "{step}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("HIQ") && l.contains("no space")),
        "{out}"
    );
    assert!(
        out.contains("AMDKFD_IOC_CREATE_QUEUE = ENOMEM (12)"),
        "{out}"
    );
    assert!(
        err.lines()
            .any(|l| l == "kfd: AMDKFD_IOC_CREATE_QUEUE failed: ENOMEM (12)"),
        "{err}"
    );
}

#[test]
fn the_environment_fills_the_hiq_under_trace() {
    let o = kfd_with_env(
        &["trace", "create-queue"],
        b"",
        &[("KFD_MODEL_FAULTS", "hiq-full")],
    );
    assert_create_queue_fails_on_a_full_hiq(&o);
}

#[test]
fn the_fault_option_fills_the_hiq_under_trace() {
    assert_create_queue_fails_on_a_full_hiq(&kfd(&[
        "trace",
        "create-queue",
        "--fault",
        "hiq-full",
    ]));
}

#[test]
fn without_a_fault_create_queue_succeeds() {
    let out = ok(&["trace", "create-queue"]);
    let step = out
        .lines()
        .find(|l| l.contains("CREATE_QUEUE (AQL compute"))
        .unwrap_or_else(|| panic!("no CREATE_QUEUE step:\n{out}"));
    assert!(!step.contains("failed"), "{step}");
}

fn assert_refusal_lists_the_kinds(line: &str, what: &str) {
    assert!(line.contains(what), "{line}");
    assert!(line.contains("unknown fault 'garbage'"), "{line}");
    for kind in KINDS {
        assert!(line.contains(kind), "{kind} missing from {line}");
    }
}

#[test]
fn a_malformed_environment_value_is_a_usage_error_everywhere_a_model_is_built() {
    for args in [
        &["demo", "--quick"][..],
        &["info"],
        &["trace", "create-queue"],
        &["drain", "--total", "1M"],
        &["bench", "--quick"],
    ] {
        let o = kfd_with_env(args, b"", &[("KFD_MODEL_FAULTS", "garbage")]);
        let line = usage_error(&o);
        assert_refusal_lists_the_kinds(&line, "KFD_MODEL_FAULTS=\"garbage\"");
        assert!(stdout(&o).is_empty(), "{args:?} printed before refusing");
    }
}

#[test]
fn a_malformed_fault_option_is_a_usage_error() {
    for args in [
        &["demo", "--quick", "--fault", "garbage"][..],
        &["info", "--fault", "garbage"],
        &["trace", "create-queue", "--fault", "garbage"],
    ] {
        assert_refusal_lists_the_kinds(&usage_error(&kfd(args)), "--fault");
    }
    let line = usage_error(&kfd(&["info", "--fault", "slow-engine=5h"]));
    assert!(line.contains("unit must be us, ms or s"), "{line}");
}

#[test]
fn the_source_line_names_the_injected_faults() {
    let out = ok(&[
        "info",
        "--fault",
        "hiq-full",
        "--fault",
        "slow-engine=100us,lose-interrupts=2",
    ]);
    assert!(
        out.lines().next().unwrap_or_default().contains(
            "model of 1 × gfx900 (Linux 6.12) with injected faults: hiq-full, \
             slow-engine=100us, lose-interrupts=2"
        ),
        "{out}"
    );
    // The environment's faults come first, then the options'.
    let o = kfd_with_env(
        &["info", "--fault", "hiq-full"],
        b"",
        &[("KFD_MODEL_FAULTS", "scheduler-hang")],
    );
    assert!(
        stdout(&o).contains("with injected faults: scheduler-hang, hiq-full"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_fault_cannot_be_injected_into_a_real_device() {
    let line = usage_error(&kfd(&[
        "info", "--device", "/dev/kfd", "--fault", "hiq-full",
    ]));
    assert!(
        line.contains("--fault") && line.contains("--device"),
        "{line}"
    );
}

#[test]
fn the_demo_stops_at_the_first_queue_on_a_full_hiq() {
    let o = kfd(&["demo", "--quick", "--fault", "hiq-full"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("ENOMEM (12)"), "{}", stderr(&o));
}
