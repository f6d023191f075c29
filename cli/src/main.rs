//! `kfd` — the project's command line; see the `kfd_cli` library for the subcommands.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_owned());
        eprintln!("kfd: internal error (a bug, please report it): {message}{location}");
    }));
    remove_temporary_directories_on_signals();
    let status = kfd_cli::run(std::env::args_os());
    // A signal's cleanup may have pulled the tree from under the work: let that thread end
    // the process by the signal rather than report the work's failure.
    if TERMINATING.load(Ordering::Acquire) {
        loop {
            std::thread::park();
        }
    }
    ExitCode::from(status)
}

/// Set once a SIGINT or SIGTERM is being handled.
static TERMINATING: AtomicBool = AtomicBool::new(false);

/// SIGINT and SIGTERM end `kfd` through one thread that first removes the model's sysfs trees
/// under $TMPDIR (a signal handler itself could not: removing files is not async-signal-safe),
/// then dies of the same signal so that the shell sees what happened.
fn remove_temporary_directories_on_signals() {
    use nix::sys::signal::{raise, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    // Blocked before any other thread exists, so every thread inherits the mask and only
    // the waiting thread takes these signals.
    if set.thread_block().is_err() {
        return;
    }
    let waiter = std::thread::Builder::new()
        .name("kfd-signals".into())
        .spawn(move || {
            let Ok(signal) = set.wait() else {
                return;
            };
            TERMINATING.store(true, Ordering::Release);
            kfd_model::tmpdirs::remove_registered();
            let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
            // SAFETY: restoring the default disposition installs no handler code.
            let _ = unsafe { sigaction(signal, &default) };
            let _ = set.thread_unblock();
            let _ = raise(signal);
            std::process::exit(128 + signal as i32);
        });
    if waiter.is_err() {
        let _ = set.thread_unblock();
    }
}
