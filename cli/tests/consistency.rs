//! One behaviour across subcommands: fixed choices listed in errors, the same model options on
//! `kfd trace` as elsewhere, sizes refused for the right reason.

mod common;

use common::*;

#[test]
fn options_with_fixed_choices_list_them() {
    for (args, choices) in [
        (&["info", "--kernel", "5.0"][..], "choose one of 6.1, 6.12"),
        (
            &["trace", "bogus"],
            "choose one of create-queue, oversubscribe, evict-restore, vm-fault, event-signal",
        ),
        (
            &["abi", "--generation", "2.0"],
            "choose one of current, 1.8",
        ),
        (
            &["--color", "sometimes", "abi"],
            "choose one of auto, always, never",
        ),
        (
            &["decode", "--engine", "x", "--hex", "0"],
            "choose one of auto, pm4, sdma",
        ),
        (
            &["trace", "create-queue", "--kernel", "4.19"],
            "choose one of 6.1, 6.12",
        ),
    ] {
        let e = usage_error(&kfd(args));
        assert!(e.starts_with("kfd: invalid value '"), "{e}");
        assert!(e.contains(choices), "{args:?}: {e}");
    }
}

#[test]
fn a_missing_argument_is_named() {
    let e = usage_error(&kfd(&["disasm"]));
    assert!(
        e.starts_with("kfd: the following required arguments were not provided: <FILE>"),
        "{e}"
    );
}

#[test]
fn trace_takes_the_model_options_of_every_other_command() {
    // --model (with --preset kept as its alias), --gpus and --kernel.
    for flag in ["--model", "--preset"] {
        let v = json(&ok(&["trace", "create-queue", flag, "gfx90a", "--json"]));
        assert_eq!(v["preset"], "gfx90a", "{flag}");
    }
    let out = ok(&[
        "trace",
        "create-queue",
        "--model",
        "gfx90a",
        "--gpus",
        "2",
        "--kernel",
        "6.1",
    ]);
    assert!(
        out.starts_with("kfd trace create-queue on the model (gfx90a)"),
        "{out}"
    );
    let e = usage_error(&kfd(&["trace", "create-queue", "--gpus", "0"]));
    assert!(e.contains("--gpus"), "{e}");
}

#[test]
fn ring_sizes_are_refused_for_the_right_reason() {
    // 4G is a power of two; it does not fit CREATE_QUEUE's 32-bit ring_size.
    let e = usage_error(&kfd(&["trace", "create-queue", "--ring-size", "4G"]));
    assert_eq!(
        e,
        "kfd: --ring-size 4294967296 does not fit 32 bits (CREATE_QUEUE's ring_size); the largest is 2G"
    );
    let e = usage_error(&kfd(&["trace", "create-queue", "--ring-size", "3000"]));
    assert_eq!(e, "kfd: --ring-size 3000 is not a power of two");
    let e = usage_error(&kfd(&["trace", "create-queue", "--ring-size", "512"]));
    assert_eq!(e, "kfd: --ring-size 512 is below the smallest ring, 1K");
    let e = usage_error(&kfd(&["mqd", "build", "--ring-size", "4G"]));
    assert!(e.contains("does not fit in 32 bits"), "{e}");
}

#[test]
fn a_long_demo_drain_shows_its_progress_on_a_terminal() {
    // `script` gives kfd a terminal (util-linux); without it there is nothing to test.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        return;
    }
    let cmd = format!(
        "{} demo --quick --model gfx900 --drain-bytes 64M",
        env!("CARGO_BIN_EXE_kfd")
    );
    let o = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("KFD_MODEL_FAULTS")
        .env_remove("NO_COLOR")
        .output()
        .expect("script runs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    // Redrawn in place: \r, clear line, the bar with the percentage, bytes and the rate.
    let draws: Vec<&str> = text
        .split('\r')
        .filter(|l| l.contains("draining ["))
        .collect();
    assert!(!draws.is_empty(), "no progress line in:\n{text}");
    assert!(
        draws
            .iter()
            .all(|l| l.contains("% ") && l.contains(" / 64 MiB") && l.contains("GB/s")),
        "{draws:?}"
    );
}
