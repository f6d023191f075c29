//! Small things a user meets (issue 37, item 6): a closed stdout pipe, short input, messages
//! that say a thing once and name what failed.

mod common;

use common::*;
use std::process::{Command, Stdio};

/// `kfd args…` writing into a pipe whose reading end is already closed.
fn into_closed_pipe(args: &[&str]) -> std::process::Output {
    let (read, write) = nix::unistd::pipe().expect("pipe");
    drop(read);
    Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .expect("kfd runs")
}

#[test]
fn a_closed_stdout_ends_any_command_quietly() {
    for args in [
        &["--help"][..],
        &["decode", "--help"],
        &["disasm", "--help"],
        &["run", "--help"],
        &["--version"],
        &["abi"],
        &["mqd", "fields"],
    ] {
        let o = into_closed_pipe(args);
        assert_eq!(o.status.code(), Some(0), "kfd {args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "kfd {args:?}");
    }
}

#[test]
fn a_few_trailing_bytes_are_named() {
    let e = usage_error(&kfd(&["decode", "--format", "bytes", "--hex", "0010"]));
    assert!(
        e.contains("--hex holds 2 byte(s), less than one dword"),
        "{e}"
    );
    let e = usage_error(&kfd(&["decode", "--hex", ""]));
    assert!(e.contains("holds no dwords to decode"), "{e}");
}

#[test]
fn a_full_hiq_is_named_and_no_phrase_repeats() {
    let o = kfd_with_env(
        &["trace", "dispatch"],
        b"",
        &[("KFD_MODEL_FAULTS", "hiq-full")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("CREATE_QUEUE: "), "{err}");
    assert_eq!(last.matches("CREATE_QUEUE").count(), 1, "{last}");
    assert!(last.contains("no room in the HIQ"), "{last}");
    let o = kfd_with_env(
        &["demo", "--quick"],
        b"",
        &[("KFD_MODEL_FAULTS", "hiq-full")],
    );
    let err = stderr(&o);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("HIQ") && last.matches("CREATE_QUEUE").count() == 1,
        "{err}"
    );
}
