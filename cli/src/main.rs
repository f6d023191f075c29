//! `kfd` — the project's command line; see the `kfd_cli` library for the subcommands.

use std::process::ExitCode;

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
    ExitCode::from(kfd_cli::run(std::env::args_os()))
}
