//! The shim's `log` backend: records of the model (`kfd::ioctl`, `kfd::dqm`, `hw::hws` …) and
//! of the shim (`preload`) go to a file descriptor with one `write(2)` per record, so logging
//! never passes through a hooked call.

use crate::config::LogFilter;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

/// Writes records that pass a [`LogFilter`] to a descriptor.
#[derive(Debug)]
pub struct FdLogger {
    fd: AtomicI32,
    filter: OnceLock<LogFilter>,
}

impl FdLogger {
    /// A logger writing to stderr with the default filter until [`FdLogger::configure`].
    pub const fn new() -> FdLogger {
        FdLogger {
            fd: AtomicI32::new(2),
            filter: OnceLock::new(),
        }
    }

    /// Sets the filter (once) and the descriptor.
    pub fn configure(&self, filter: LogFilter, fd: i32) {
        let _ = self.filter.set(filter);
        self.fd.store(fd, Ordering::Relaxed);
    }

    fn filter(&self) -> Option<&LogFilter> {
        self.filter.get()
    }

    /// One record as the shim prints it.
    pub fn format(pid: u32, record: &log::Record<'_>) -> String {
        format!(
            "kfd-preload[{pid}] {:<5} {}: {}\n",
            record.level(),
            record.target(),
            record.args()
        )
    }
}

impl Default for FdLogger {
    fn default() -> Self {
        FdLogger::new()
    }
}

impl log::Log for FdLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.filter()
            .is_some_and(|f| metadata.level() <= f.level_for(metadata.target()))
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = FdLogger::format(std::process::id(), record);
        write_all(self.fd.load(Ordering::Relaxed), line.as_bytes());
    }

    fn flush(&self) {}
}

/// `write(2)` until done or an error; errors are dropped (there is nowhere to report them).
pub fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live slice; write(2) reads at most `len` bytes from it.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        match usize::try_from(n) {
            Ok(0) | Err(_) => {
                if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                }
                return;
            }
            Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use log::Log;

    #[test]
    fn filters_and_formats() {
        let logger = FdLogger::new();
        let meta = |level, target| log::Metadata::builder().level(level).target(target).build();
        assert!(
            !logger.enabled(&meta(log::Level::Error, "kfd")),
            "silent until configured"
        );
        let mut fds = [0i32; 2];
        // SAFETY: a fresh pipe into a two-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        logger.configure(LogFilter::parse("kfd::ioctl=debug,warn").unwrap(), fds[1]);
        assert!(logger.enabled(&meta(log::Level::Debug, "kfd::ioctl")));
        assert!(!logger.enabled(&meta(log::Level::Debug, "kfd::dqm")));
        assert!(logger.enabled(&meta(log::Level::Warn, "kfd::dqm")));
        logger.log(
            &log::Record::builder()
                .level(log::Level::Debug)
                .target("kfd::ioctl")
                .args(format_args!("GET_VERSION = 0"))
                .build(),
        );
        logger.log(
            &log::Record::builder()
                .level(log::Level::Trace)
                .target("kfd::ioctl")
                .args(format_args!("dropped"))
                .build(),
        );
        let mut buf = [0u8; 256];
        // SAFETY: reading into a live buffer of its stated size.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        let text = std::str::from_utf8(&buf[..n as usize]).unwrap();
        assert_eq!(
            text,
            format!(
                "kfd-preload[{}] DEBUG kfd::ioctl: GET_VERSION = 0\n",
                std::process::id()
            )
        );
        // SAFETY: closing the two descriptors this test opened.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
