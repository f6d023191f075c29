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

/// Set once a SIGINT, SIGTERM or SIGHUP is ending `kfd`.
static TERMINATING: AtomicBool = AtomicBool::new(false);

/// SIGINT, SIGTERM and SIGHUP go to one thread. While `kfd run` waits for its program, the
/// library passes them on ([`kfd_cli::signals`]); otherwise the thread first removes the
/// model's sysfs trees under $TMPDIR (a signal handler itself could not: removing files is not
/// async-signal-safe), then dies of the same signal so that the shell sees what happened.
fn remove_temporary_directories_on_signals() {
    use nix::sys::signal::{raise, sigaction, SaFlags, SigAction, SigHandler, SigSet};
    let mut set = SigSet::empty();
    for signal in kfd_cli::signals::HANDLED {
        set.add(signal);
    }
    // Blocked before any other thread exists, so every thread inherits the mask and only
    // the waiting thread takes these signals (`kfd run` unblocks them in its program).
    if set.thread_block().is_err() {
        return;
    }
    let waiter = std::thread::Builder::new()
        .name("kfd-signals".into())
        .spawn(move || loop {
            let Some((signal, from_a_process)) = wait_for(&set) else {
                return;
            };
            if kfd_cli::signals::deliver(signal, from_a_process) {
                continue;
            }
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

/// The next signal of `set` and whether another process sent it (`kill`: `SI_USER`, or
/// `sigqueue`: `SI_QUEUE`) rather than the terminal or the kernel.
fn wait_for(set: &nix::sys::signal::SigSet) -> Option<(nix::sys::signal::Signal, bool)> {
    use nix::libc;
    loop {
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `set` is a valid signal set and `info` a writable siginfo_t; sigwaitinfo
        // writes only into `info`.
        let n = unsafe { libc::sigwaitinfo(set.as_ref(), info.as_mut_ptr()) };
        if n < 0 {
            if nix::errno::Errno::last() == nix::errno::Errno::EINTR {
                continue;
            }
            return None;
        }
        // SAFETY: sigwaitinfo succeeded, so it filled `info` (and it was zeroed before).
        let code = unsafe { info.assume_init() }.si_code;
        let signal = nix::sys::signal::Signal::try_from(n).ok()?;
        return Some((signal, code == libc::SI_USER || code == libc::SI_QUEUE));
    }
}
