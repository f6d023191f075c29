//! The model's sysfs trees under $TMPDIR (`kfd-model-topology-<pid>-*`) do not outlive `kfd`:
//! removed on SIGINT and SIGTERM, and swept by the next run after a SIGKILL.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// `kfd args…` on the model with `$TMPDIR` at `tmp`.
fn spawn(tmp: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kfd"))
        .args(args)
        .env("TMPDIR", tmp)
        .env_remove("KFD_DEVICE")
        .env_remove("KFD_MODEL_PRESET")
        .env_remove("KFD_MODEL_GPUS")
        .env_remove("KFD_MODEL_FAULTS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kfd runs")
}

/// The trees of process `pid` in `tmp`.
fn trees_of(tmp: &Path, pid: u32) -> Vec<String> {
    let prefix = format!("kfd-model-topology-{pid}-");
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Waits until `kfd` has written its tree (it is then well into its run).
fn wait_for_tree(tmp: &Path, child: &mut Child) {
    let start = Instant::now();
    while trees_of(tmp, child.id()).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "kfd ended before writing its tree"
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no tree after 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interrupted_drain_leaves_nothing(signal: Signal) {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = spawn(tmp.path(), &["drain", "--total", "10G"]);
    wait_for_tree(tmp.path(), &mut child);
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let status = child.wait().unwrap();
    // It dies of the signal, as a shell expects of an interrupted program.
    assert_eq!(status.signal(), Some(signal as i32), "{status:?}");
    assert_eq!(trees_of(tmp.path(), child.id()), Vec::<String>::new());
}

#[test]
fn sigint_during_a_long_drain_removes_the_tree() {
    interrupted_drain_leaves_nothing(Signal::SIGINT);
}

#[test]
fn sigterm_during_a_long_drain_removes_the_tree() {
    interrupted_drain_leaves_nothing(Signal::SIGTERM);
}

#[test]
fn the_next_run_sweeps_the_tree_of_a_killed_run() {
    let tmp = tempfile::tempdir().unwrap();
    let mut killed = spawn(tmp.path(), &["drain", "--total", "10G"]);
    wait_for_tree(tmp.path(), &mut killed);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(
        trees_of(tmp.path(), killed.id()).len(),
        1,
        "SIGKILL cannot clean up"
    );
    // A directory of another name is not the sweep's business.
    let other = tmp
        .path()
        .join(format!("kfd-model-topologyX-{}-keep", killed.id()));
    std::fs::create_dir(&other).unwrap();
    let mut next = spawn(tmp.path(), &["info"]);
    assert!(next.wait().unwrap().success());
    assert_eq!(trees_of(tmp.path(), killed.id()), Vec::<String>::new());
    assert_eq!(trees_of(tmp.path(), next.id()), Vec::<String>::new());
    assert!(other.exists());
}
