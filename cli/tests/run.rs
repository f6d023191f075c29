//! `kfd run`: unmodified programs on the model under the LD_PRELOAD shim — a HIP program
//! compiled at test time (hipcc, gfx900 and gfx90a), a libhsakmt C client, shell programs for
//! the exit status — and the one-line errors for programs it cannot run.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds the shim next to the `kfd` under test (cargo does not build a cdylib of another
/// package for this crate's tests).
fn shim_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let kfd = PathBuf::from(env!("CARGO_BIN_EXE_kfd"));
        let release = kfd
            .parent()
            .is_some_and(|d| d.file_name().is_some_and(|n| n == "release"));
        let mut cmd = Command::new(env!("CARGO"));
        cmd.current_dir(workspace())
            .args(["build", "-q", "-p", "kfd-preload"]);
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo runs");
        assert!(status.success(), "cargo build -p kfd-preload failed");
    });
}

/// A path in the temporary directory for this test process (each test removes its files).
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kfd-cli-run-{}-{name}", std::process::id()))
}

/// `kfd run ARGS…` with a clean model environment.
fn kfd_run(args: &[&str]) -> Output {
    shim_built();
    Command::new(env!("CARGO_BIN_EXE_kfd"))
        .arg("run")
        .args(args)
        .env_remove("KFD_MODEL_PRESET")
        .env_remove("KFD_MODEL_GPUS")
        .env_remove("KFD_PRELOAD_LIB")
        .env_remove("KFD_MODEL_LOG")
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("kfd runs")
}

/// The `--json` summary: the last line of stderr.
fn summary(o: &Output) -> serde_json::Value {
    let err = stderr(o);
    json(err.lines().last().unwrap_or(""))
}

fn count(v: &serde_json::Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing: {v}"))
}

fn hipcc(arch: &str) -> Option<PathBuf> {
    static SERIAL: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = scratch(&format!("vadd-{arch}-{n}"));
    let src = workspace().join("tests/hip/vadd.hip");
    let s = Command::new(kfd_testkit::tool("hipcc")?)
        .arg(format!("--offload-arch={arch}"))
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("hipcc runs");
    assert!(s.success(), "hipcc failed for {arch}");
    Some(out)
}

#[test]
fn a_hip_program_runs_and_its_kernels_are_counted() {
    for arch in ["gfx900", "gfx90a"] {
        let Some(program) = hipcc(arch) else {
            return;
        };
        let o = kfd_run(&["--preset", arch, "--json", "--", program.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{arch}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("vadd: 10000 of 10000 correct"),
            "{arch}: {}",
            stdout(&o)
        );
        let s = summary(&o);
        assert_eq!(s["status"], 0);
        assert_eq!(s["processes"], 1);
        // vadd alone: 10000 work-items in 40 groups of 256 = 160 waves of 64; hipMemset and
        // the copies may add blit kernels.
        assert!(count(&s, "dispatches") >= 1, "{arch}: {s}");
        assert!(count(&s, "workgroups") >= 40, "{arch}: {s}");
        assert!(count(&s, "waves") >= 160, "{arch}: {s}");
        assert!(
            count(&s, "waves") >= count(&s, "workgroups"),
            "{arch}: every workgroup has a wave: {s}"
        );
        // Every wave runs at least its s_endpgm; vadd's body is several instructions.
        assert!(
            count(&s, "instructions") >= 5 * count(&s, "waves"),
            "{arch}: {s}"
        );
        assert_eq!(count(&s, "faults"), 0, "{arch}: {s}");
        let _ = std::fs::remove_file(&program);
    }
}

#[test]
fn the_text_summary_names_the_program_the_part_and_the_counts() {
    let Some(program) = hipcc("gfx900") else {
        return;
    };
    let o = kfd_run(&["--", program.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("kfd run: "))
        .unwrap_or_else(|| panic!("no summary: {err}"));
    assert!(
        lines[head].ends_with("exited with status 0, on the model (1 × gfx900)"),
        "{err}"
    );
    let counts = lines[head + 1];
    for word in [
        "dispatches",
        "workgroups",
        "waves",
        "instructions",
        "0 faults",
    ] {
        assert!(counts.contains(word), "{counts}");
    }
    let _ = std::fs::remove_file(&program);
}

#[test]
fn a_libhsakmt_client_runs_and_dispatches_no_kernel() {
    let src = workspace().join("tests/c/hsakmt_client.c");
    let exe = scratch("hsakmt_client");
    let (Some(gcc), Some(_)) = (
        kfd_testkit::tool("gcc"),
        kfd_testkit::installed_file("/usr/include/hsakmt.h", "libhsakmt-dev"),
    ) else {
        return;
    };
    let built = Command::new(gcc)
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-lhsakmt")
        .status()
        .expect("gcc runs");
    assert!(built.success(), "gcc {src:?} -lhsakmt");
    let o = kfd_run(&[
        "--preset",
        "gfx90a",
        "--gpus",
        "2",
        "--json",
        "--",
        exe.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let last = out.lines().last().unwrap_or("");
    assert!(last.ends_with("passed, 0 failed"), "{out}");
    let s = summary(&o);
    assert_eq!(s["processes"], 1);
    // The client submits PM4 and SDMA packets only: no kernel dispatch, no wave.
    assert_eq!(count(&s, "dispatches"), 0, "{s}");
    assert_eq!(count(&s, "waves"), 0, "{s}");
    let _ = std::fs::remove_file(&exe);
}

#[test]
fn the_exit_status_passes_through_and_a_signal_becomes_128_plus_n() {
    let o = kfd_run(&["--", "sh", "-c", "echo out; exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert_eq!(stdout(&o), "out\n");
    let err = stderr(&o);
    assert!(err.contains("kfd run: sh exited with status 7"), "{err}");
    assert!(err.contains("never opened /dev/kfd"), "{err}");

    let o = kfd_run(&["--json", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(o.status.code(), Some(128 + 15));
    let s = summary(&o);
    assert_eq!(s["signal"], 15);
    assert_eq!(s["status"], 143);
    assert_eq!(s["processes"], 0);

    // Arguments that look like options belong to the program.
    let o = kfd_run(&["--quiet", "--", "sh", "-c", "echo \"$1\"", "sh", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "--json\n");
    assert_eq!(stderr(&o), "", "--quiet prints no summary");
}

#[test]
fn the_trace_file_gets_the_models_log() {
    let Some(program) = hipcc("gfx900") else {
        return;
    };
    let log = scratch("trace.log");
    let o = kfd_run(&[
        "--quiet",
        "--trace",
        log.to_str().unwrap(),
        "--",
        program.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&log).expect("the log file");
    // The ioctl layer and the SPI's dispatches, by their log targets.
    assert!(text.contains("kfd::ioctl"), "no ioctl records");
    assert!(text.contains("hw::spi"), "no dispatch records");
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&program);
}

fn one_line_error(o: &Output, code: i32) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.starts_with("kfd: "), "{err}");
    err.trim_end().to_owned()
}

#[test]
fn programs_it_cannot_run_get_one_line() {
    let missing = kfd_run(&["--", "./no-such-program"]);
    assert_eq!(
        one_line_error(&missing, 2),
        "kfd: program './no-such-program' does not exist"
    );
    let not_on_path = kfd_run(&["--", "no-such-program-on-path-x"]);
    assert!(one_line_error(&not_on_path, 2).contains("is not on PATH"));

    let text = scratch("not-executable.txt");
    std::fs::write(&text, "hello\n").unwrap();
    let o = kfd_run(&["--", text.to_str().unwrap()]);
    assert!(one_line_error(&o, 2).ends_with("is not executable"));

    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&text, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = kfd_run(&["--", text.to_str().unwrap()]);
    assert!(one_line_error(&o, 2).ends_with("not an ELF program or a script"));
    let _ = std::fs::remove_file(&text);

    let o = kfd_run(&["--", std::env::temp_dir().to_str().unwrap()]);
    assert!(one_line_error(&o, 2).contains("is a directory"));

    // No program at all is clap's usage error.
    let o = kfd_run(&[]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_statically_linked_program_is_refused() {
    let src = scratch("static.c");
    let exe = scratch("static");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let Some(gcc) = kfd_testkit::tool("gcc") else {
        return;
    };
    let built = Command::new(gcc)
        .arg("-static")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("gcc runs");
    assert!(built.success(), "gcc -static (libc6-dev's static libc)");
    let o = kfd_run(&["--", exe.to_str().unwrap()]);
    let line = one_line_error(&o, 2);
    assert!(line.contains("is statically linked"), "{line}");
    assert!(line.contains("LD_PRELOAD"), "{line}");
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&exe);
}

#[test]
fn a_named_shim_that_is_missing_is_an_error() {
    shim_built();
    let o = Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(["run", "--", "true"])
        .env("KFD_PRELOAD_LIB", "/nonexistent/libkfd_preload.so")
        .output()
        .unwrap();
    assert_eq!(
        one_line_error(&o, 2),
        "kfd: KFD_PRELOAD_LIB=/nonexistent/libkfd_preload.so is not a file"
    );
}
