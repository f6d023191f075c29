//! Runs the `kfd` binary the way a user does.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `kfd args…` with stdin closed.
pub fn kfd(args: &[&str]) -> Output {
    kfd_with_stdin(args, b"")
}

/// `kfd args…` with `input` on stdin.
pub fn kfd_with_stdin(args: &[&str], input: &[u8]) -> Output {
    kfd_with_env(args, input, &[])
}

/// `kfd args…` with `input` on stdin and the variables `env` set.
pub fn kfd_with_env(args: &[&str], input: &[u8], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(args)
        .env_remove("KFD_MODEL_FAULTS")
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        // The model unless a test asks otherwise, whatever the machine has.
        .env_remove("KFD_DEVICE")
        .env_remove("KFD_MODEL_PRESET")
        .env_remove("KFD_MODEL_GPUS")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kfd runs");
    // Fed from another thread, as a shell pipe is: `kfd` streams its output while it reads,
    // so writing all input before reading any output could fill both pipes.
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        // The program may exit before reading everything.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("kfd finishes");
    let _ = feeder.join();
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 0, empty stderr; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let o = kfd(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "kfd {args:?} failed: {}",
        stderr(&o)
    );
    stdout(&o)
}

/// Exit status 2 and exactly one line on stderr starting with `kfd: `; returns that line.
pub fn usage_error(o: &Output) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "expected status 2; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    assert!(err.starts_with("kfd: "), "{err:?}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    err.trim_end().to_owned()
}

/// `stdout` parsed as JSON.
pub fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}
