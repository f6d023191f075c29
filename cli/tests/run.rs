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

/// Waits until `path` exists, failing after a deadline that only catches a hang.
fn wait_for_file(path: &std::path::Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::yield_now();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `kfd run ARGS…` started in the background, with its output collected.
///
/// Its signals start at their default dispositions: a job a non-interactive shell put in the
/// background starts with SIGINT and SIGQUIT ignored (and `nohup` ignores SIGHUP), a child
/// inherits that, and a shell cannot trap a signal ignored on entry, so the program would never
/// see the signal a test forwards to it.
fn kfd_run_child(args: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    shim_built();
    let mut command = Command::new(env!("CARGO_BIN_EXE_kfd"));
    // SAFETY: the closure runs in the forked child before exec and only calls sigaction,
    // which is async-signal-safe; SIG_DFL installs no handler code.
    unsafe {
        command.pre_exec(|| {
            use nix::sys::signal::{signal, SigHandler, Signal};
            for s in [
                Signal::SIGHUP,
                Signal::SIGINT,
                Signal::SIGQUIT,
                Signal::SIGTERM,
            ] {
                signal(s, SigHandler::SigDfl).map_err(std::io::Error::from)?;
            }
            Ok(())
        })
    };
    command
        .arg("run")
        .args(args)
        .env_remove("KFD_MODEL_PRESET")
        .env_remove("KFD_MODEL_GPUS")
        .env_remove("KFD_PRELOAD_LIB")
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kfd runs")
}

/// The output of `kfd run` after it ended, failing after a deadline that only catches a hang
/// (the child is killed then, so a failing test does not hang the suite).
fn ended(mut child: std::process::Child) -> Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child
        .try_wait()
        .expect("kfd run can be waited for")
        .is_none()
    {
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let o = child.wait_with_output().expect("kfd run can be waited for");
            panic!("kfd run did not end within 120 s: {}", stderr(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child
        .wait_with_output()
        .expect("kfd run's output can be read")
}

/// Whether process `pid` is alive (not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn signals_sent_to_kfd_run_go_to_the_program_which_it_waits_for() {
    for (signal, name) in [("TERM", "SIGTERM"), ("INT", "SIGINT"), ("HUP", "SIGHUP")] {
        let ready = scratch(&format!("ready-{signal}"));
        let got = scratch(&format!("got-{signal}"));
        let _ = std::fs::remove_file(&ready);
        // The program says it is ready once its trap is set, and exits 7 on the signal.
        let script = format!(
            "trap 'echo {signal} > \"{got}\"; exit 7' {signal}; echo $$ > \"{ready}.tmp\"; mv \"{ready}.tmp\" \"{ready}\"; while :; do sleep 0.05; done",
            got = got.display(),
            ready = ready.display()
        );
        let child = kfd_run_child(&["--json", "--", "sh", "-c", &script]);
        wait_for_file(&ready);
        let program: i32 = std::fs::read_to_string(&ready)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let o = ended(child);
        let still_running = alive(program);
        if still_running {
            let _ = Command::new("kill")
                .args(["-KILL", &program.to_string()])
                .status();
        }
        assert!(!still_running, "{name}: the program outlived kfd run");
        // kfd run waited for the program and ended with its status, summary printed.
        assert_eq!(o.status.code(), Some(7), "{name}: {}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(&got).unwrap().trim(),
            signal,
            "{name}"
        );
        assert_eq!(summary(&o)["status"], 7, "{name}");
        let _ = std::fs::remove_file(&ready);
        let _ = std::fs::remove_file(&got);
    }
}

#[test]
fn a_program_killed_through_kfd_run_is_reported_by_its_signal() {
    // The program does not catch SIGTERM: it dies of it, and kfd run reports 128 + 15.
    let ready = scratch("ready-plain");
    let _ = std::fs::remove_file(&ready);
    let script = format!(
        "echo $$ > \"{r}.tmp\"; mv \"{r}.tmp\" \"{r}\"; while :; do sleep 0.05; done",
        r = ready.display()
    );
    let child = kfd_run_child(&["--", "sh", "-c", &script]);
    wait_for_file(&ready);
    let program: i32 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = ended(child);
    assert!(!alive(program), "the program outlived kfd run");
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("kfd run: sh was killed by signal 15 (status 143)"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_file(&ready);
}

#[test]
fn a_hip_program_in_an_endless_kernel_ends_with_kfd_run() {
    let src = scratch("spin.hip");
    let exe = scratch("spin");
    let ready = scratch("spin-ready");
    let _ = std::fs::remove_file(&ready);
    std::fs::write(
        &src,
        r#"#include <hip/hip_runtime.h>
#include <stdio.h>
#include <unistd.h>
__global__ void spin(volatile int *flag) { while (*flag == 0) {} }
int main(int argc, char **argv) {
  int *flag;
  if (hipMalloc(&flag, 4) != hipSuccess || hipMemset(flag, 0, 4) != hipSuccess) return 2;
  hipLaunchKernelGGL(spin, dim3(1), dim3(64), 0, 0, flag);
  FILE *f = fopen(argv[1], "w"); fprintf(f, "%d\n", (int)getpid()); fclose(f);
  return hipDeviceSynchronize() == hipSuccess ? 0 : 1;
}
"#,
    )
    .unwrap();
    let Some(hipcc) = kfd_testkit::tool("hipcc") else {
        return;
    };
    let s = Command::new(hipcc)
        .args(["--offload-arch=gfx900", "-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("hipcc runs");
    assert!(s.success(), "hipcc failed");
    let child = kfd_run_child(&["--", exe.to_str().unwrap(), ready.to_str().unwrap()]);
    wait_for_file(&ready);
    let program: i32 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = ended(child);
    let still_running = alive(program);
    if still_running {
        let _ = Command::new("kill")
            .args(["-KILL", &program.to_string()])
            .status();
    }
    assert!(!still_running, "the HIP program outlived kfd run");
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("was killed by signal 15"),
        "{}",
        stderr(&o)
    );
    for f in [&src, &exe, &ready] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn model_is_accepted_and_unknown_options_are_named() {
    let o = kfd_run(&[
        "--model",
        "gfx90a",
        "--quiet",
        "--",
        "sh",
        "-c",
        "echo $KFD_MODEL_PRESET",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "gfx90a\n");
    let o = kfd_run(&["--bogus", "--", "true"]);
    let err = one_line_error(&o, 2);
    assert!(err.contains("unexpected argument '--bogus'"), "{err}");
    // After the program's name, its options are its own, `--` or not.
    let o = kfd_run(&["--quiet", "sh", "-c", "echo \"$1\"", "sh", "--json"]);
    assert_eq!(stdout(&o), "--json\n", "{}", stderr(&o));
}

#[test]
fn gfx942_is_refused_up_front_where_rocr_does_not_know_it() {
    let dirs = kfd_cli::run::rocr_search_path();
    match kfd_cli::run::installed_rocr(&dirs) {
        Some((_, minor)) if minor < 11 => {}
        other => {
            eprintln!("SKIP: no ROCr older than 1.11 found ({other:?})");
            return;
        }
    }
    let o = kfd_run(&["--preset", "gfx942", "--", "rocminfo"]);
    let err = one_line_error(&o, 2);
    assert!(
        err.contains("the gfx942 preset needs ROCm 5.7 or later"),
        "{err}"
    );
    assert!(err.contains("--preset gfx90a"), "{err}");
    // Through the environment too.
    shim_built();
    let o = Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(["run", "--", "true"])
        .env("KFD_MODEL_PRESET", "gfx942")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
