//! The frame every subcommand shares: help, version, one-line usage errors with status 2,
//! colour only when asked or on a terminal, and `kfd abi`.

mod common;

use common::*;

#[test]
fn help_and_version_succeed() {
    let help = ok(&["--help"]);
    for sub in [
        "abi", "decode", "mqd", "trace", "info", "demo", "drain", "bench",
    ] {
        assert!(help.contains(sub), "{sub} in help:\n{help}");
    }
    assert!(ok(&["--version"]).starts_with("kfd "));
    assert!(ok(&["decode", "--help"]).contains("--gfx"));
    assert!(ok(&["trace", "--help"]).contains("--chrome-trace"));
    for (sub, flag) in [
        ("info", "--gpus"),
        ("demo", "--quick"),
        ("drain", "--slot-size"),
        ("bench", "--quick"),
    ] {
        let help = ok(&[sub, "--help"]);
        assert!(
            help.contains(flag) && help.contains("Examples:"),
            "{sub}:\n{help}"
        );
    }
}

#[test]
fn bad_arguments_are_one_line_and_status_2() {
    let e = usage_error(&kfd(&["frobnicate"]));
    assert!(e.contains("unrecognized subcommand 'frobnicate'"), "{e}");
    let e = usage_error(&kfd(&["decode", "--no-such-flag"]));
    assert!(
        e.contains("--no-such-flag") && e.contains("usage: kfd decode"),
        "{e}"
    );
    let e = usage_error(&kfd(&["decode", "--gfx", "gfx8", "--hex", "0"]));
    assert!(e.contains("unknown GPU target 'gfx8'"), "{e}");
    let e = usage_error(&kfd(&["mqd", "build", "--ring-size", "lots"]));
    assert!(e.contains("'lots' is not a number"), "{e}");
    let e = usage_error(&kfd(&["trace", "no-such-scenario"]));
    assert!(e.contains("no-such-scenario"), "{e}");
    // No subcommand: the help on stderr, status 2.
    let o = kfd(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Usage: kfd"));
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    // Tests run with stdout on a pipe: no escapes by default.
    let plain = ok(&["decode", "--hex", "ffff1000"]);
    assert!(!plain.contains('\x1b'), "{plain:?}");
    let coloured = ok(&["--color", "always", "decode", "--hex", "ffff1000"]);
    assert!(coloured.contains("\x1b[1;36mNOP\x1b[0m"), "{coloured:?}");
    let never = ok(&["decode", "--color", "never", "--hex", "ffff1000"]);
    assert_eq!(never, plain);
}

#[test]
fn abi_table_follows_the_facts() {
    let table = ok(&["abi"]);
    assert!(
        table.starts_with("/dev/kfd ioctls, interface 1.18"),
        "{table}"
    );
    // Facts §7.2: CREATE_QUEUE is 0xC0604B02 (96 bytes) in 1.17+, 0xC0584B02 (88) before.
    let row = |t: &str| {
        t.lines()
            .find(|l| l.contains("AMDKFD_IOC_CREATE_QUEUE "))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    assert!(
        row(&table).contains("0xc0604b02") && row(&table).contains("   96  "),
        "{}",
        row(&table)
    );
    let old = ok(&["abi", "--generation", "1.8"]);
    assert!(
        row(&old).contains("0xc0584b02") && row(&old).contains("   88  "),
        "{}",
        row(&old)
    );
    let layout = ok(&["abi", "--layout", "kfd_ioctl_create_queue_args"]);
    assert!(
        layout.starts_with("struct kfd_ioctl_create_queue_args — 96 bytes, align 8"),
        "{layout}"
    );
    let e = usage_error(&kfd(&["abi", "--layout", "no_such_struct"]));
    assert_eq!(
        e,
        "kfd: no argument struct named 'no_such_struct'; `kfd abi` lists them"
    );
}

#[test]
fn abi_json_parses() {
    let v = json(&ok(&["abi", "--json"]));
    assert_eq!(v["interface"], "1.18");
    let cq = v["ioctls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "AMDKFD_IOC_CREATE_QUEUE")
        .expect("CREATE_QUEUE");
    assert_eq!(
        (
            cq["nr"].as_u64(),
            cq["size"].as_u64(),
            cq["request"].as_u64()
        ),
        (Some(2), Some(96), Some(0xC060_4B02))
    );
    let l = json(&ok(&["abi", "--layout", "kfd_event_data", "--json"]));
    assert_eq!(l["struct"], "kfd_event_data");
    assert!(l["fields"].as_array().is_some_and(|f| !f.is_empty()));
}
