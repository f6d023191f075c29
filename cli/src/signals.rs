//! What `kfd` does with SIGINT, SIGTERM and SIGHUP. The binary blocks them in every thread and
//! one thread takes them (`sigwaitinfo`); it asks [`deliver`] first. While `kfd run` waits for
//! its program, a signal another process sent (`kill`, a job scheduler, `timeout`) is passed on
//! to the program, and `kfd run` goes on waiting, prints the summary and ends with the
//! program's status, as `env` and `timeout --foreground` leave it to the program. A signal from
//! the terminal (Ctrl-C, a hang-up) already reached the program, which shares `kfd`'s process
//! group: it is not sent twice. At any other time the signal ends `kfd` (after its cleanup).

use std::sync::Mutex;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The signals `kfd` takes in its signal thread.
pub const HANDLED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

#[derive(Default)]
struct State {
    /// A program is being started or waited for.
    forwarding: bool,
    /// Its pid, once started.
    child: Option<Pid>,
    /// Signals that came before the pid was known.
    pending: Vec<Signal>,
}

static STATE: Mutex<State> = Mutex::new(State {
    forwarding: false,
    child: None,
    pending: Vec::new(),
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Called by the signal thread for `signal`; `from_a_process` when another process sent it
/// (`SI_USER`/`SI_QUEUE`), not the terminal or the kernel. Returns whether `kfd` keeps running
/// (the signal belongs to the program `kfd run` waits for).
pub fn deliver(signal: Signal, from_a_process: bool) -> bool {
    let mut s = state();
    if !s.forwarding {
        return false;
    }
    if from_a_process {
        match s.child {
            Some(pid) => {
                let _ = kill(pid, signal);
            }
            None => s.pending.push(signal),
        }
    }
    true
}

/// While alive, signals go to the program being run (see the module docs).
pub struct Forwarding(());

impl Forwarding {
    /// Starts forwarding, before the program is spawned.
    pub fn begin() -> Self {
        let mut s = state();
        s.forwarding = true;
        s.child = None;
        s.pending.clear();
        Forwarding(())
    }

    /// The program started as `pid`: signals that came meanwhile go to it now.
    pub fn started(&self, pid: u32) {
        let mut s = state();
        let pid = Pid::from_raw(pid as i32);
        s.child = Some(pid);
        for signal in std::mem::take(&mut s.pending) {
            let _ = kill(pid, signal);
        }
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        let mut s = state();
        s.forwarding = false;
        s.child = None;
        s.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_end_kfd_unless_a_program_runs() {
        assert!(!deliver(Signal::SIGTERM, true));
        let f = Forwarding::begin();
        // Before the pid is known, a sent signal waits; a terminal's is the program's already.
        assert!(deliver(Signal::SIGTERM, true));
        assert!(deliver(Signal::SIGINT, false));
        assert_eq!(state().pending, [Signal::SIGTERM]);
        drop(f);
        assert!(!deliver(Signal::SIGINT, true));
        assert!(state().pending.is_empty());
    }
}
