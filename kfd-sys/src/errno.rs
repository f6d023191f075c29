//! The error numbers `/dev/kfd` answers with (positive here, negated in the kernel), by name.
//!
//! Besides the ordinary Linux values, amdkfd leaks two kernel-internal ones to user space:
//! `ENOTSUPP` (524, for an unknown queue type — not `EOPNOTSUPP`, 95) and, from an interrupted
//! wait, `ERESTARTSYS` (512). Values are those of Linux on x86-64.

use core::fmt;

/// Kernel-internal "operation not supported" that amdkfd returns for an unknown queue type.
pub const ENOTSUPP: i32 = 524;
/// Kernel-internal "restart the system call" (a wait interrupted by a non-fatal signal).
pub const ERESTARTSYS: i32 = 512;

/// An error number `/dev/kfd` answers with (positive), shared by the driver model, which
/// returns it, and the thunk, which receives it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// Operation not permitted (deprecated debugger ioctls, device queue limit, sched_policy 1).
    pub const EPERM: Errno = Errno(1);
    /// No such file or directory.
    pub const ENOENT: Errno = Errno(2);
    /// No such process (binding the process to a device failed).
    pub const ESRCH: Errno = Errno(3);
    /// Interrupted by a fatal signal.
    pub const EINTR: Errno = Errno(4);
    /// I/O error: GPU in reset, scheduler firmware hung, or an event destroyed while waited on.
    pub const EIO: Errno = Errno(5);
    /// Bad file descriptor (fd used from a process other than the opener, unknown drm fd).
    pub const EBADF: Errno = Errno(9);
    /// Try again; for the debugger query: no raised exception was found.
    pub const EAGAIN: Errno = Errno(11);
    /// Out of memory, no free queue id, no free SDMA queue, HIQ full.
    pub const ENOMEM: Errno = Errno(12);
    /// Permission denied (update of a reset queue, CRIU without capability).
    pub const EACCES: Errno = Errno(13);
    /// Bad address (a user pointer the kernel cannot read or write).
    pub const EFAULT: Errno = Errno(14);
    /// Busy (destroy while debugged, no free doorbell, XNACK change with queues).
    pub const EBUSY: Errno = Errno(16);
    /// Already exists.
    pub const EEXIST: Errno = Errno(17);
    /// No such device (unknown gpu id in an mmap offset, minor ≠ 0).
    pub const ENODEV: Errno = Errno(19);
    /// Invalid argument.
    pub const EINVAL: Errno = Errno(22);
    /// Inappropriate ioctl (unknown command number).
    pub const ENOTTY: Errno = Errno(25);
    /// No space (per-process queue limit, event slots exhausted).
    pub const ENOSPC: Errno = Errno(28);
    /// Result out of range.
    pub const ERANGE: Errno = Errno(34);
    /// Timer expired (preemption fence timeout, a wait's timeout).
    pub const ETIME: Errno = Errno(62);
    /// Operation not supported (the user-space value, 95).
    pub const EOPNOTSUPP: Errno = Errno(95);
    /// Address already in use (98): an SVM range and a buffer may not share pages.
    pub const EADDRINUSE: Errno = Errno(98);
    /// Timed out (a wait of the thunk's own).
    pub const ETIMEDOUT: Errno = Errno(110);
    /// The kernel-internal `ENOTSUPP` (524) that amdkfd leaks to user space for an unknown
    /// queue type. Not `EOPNOTSUPP`.
    pub const ENOTSUPP: Errno = Errno(ENOTSUPP);
    /// Restart the system call (interrupted by a non-fatal signal).
    pub const ERESTARTSYS: Errno = Errno(ERESTARTSYS);

    /// The symbolic name (`"EINVAL"`), or `"E?"` for numbers without one here.
    pub fn name(self) -> &'static str {
        errno_name(self.0).unwrap_or("E?")
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

impl core::error::Error for Errno {}

const NAMES: &[(i32, &str)] = &[
    (1, "EPERM"),
    (2, "ENOENT"),
    (3, "ESRCH"),
    (4, "EINTR"),
    (5, "EIO"),
    (9, "EBADF"),
    (11, "EAGAIN"),
    (12, "ENOMEM"),
    (13, "EACCES"),
    (14, "EFAULT"),
    (16, "EBUSY"),
    (17, "EEXIST"),
    (19, "ENODEV"),
    (22, "EINVAL"),
    (25, "ENOTTY"),
    (28, "ENOSPC"),
    (34, "ERANGE"),
    (62, "ETIME"),
    (95, "EOPNOTSUPP"),
    (98, "EADDRINUSE"),
    (110, "ETIMEDOUT"),
    (ERESTARTSYS, "ERESTARTSYS"),
    (ENOTSUPP, "ENOTSUPP"),
];

/// The symbolic name of an error number amdkfd or a KFD client deals in (`"EINVAL"` for 22),
/// `None` for others.
pub fn errno_name(errno: i32) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|&&(n, _)| n == errno)
        .map(|&(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_the_kernel_internal_and_ordinary_values() {
        assert_eq!(errno_name(22), Some("EINVAL"));
        assert_eq!(errno_name(ENOTSUPP), Some("ENOTSUPP"));
        assert_eq!(errno_name(95), Some("EOPNOTSUPP"));
        assert_eq!(errno_name(62), Some("ETIME"));
        assert_eq!(errno_name(7), None);
    }

    #[test]
    fn errno_values_and_names() {
        extern crate std;
        use std::format;
        assert_eq!(Errno::ENOTSUPP.0, 524);
        assert_ne!(Errno::ENOTSUPP, Errno::EOPNOTSUPP);
        assert_eq!(Errno::EOPNOTSUPP.0, 95);
        assert_eq!(format!("{}", Errno::EINVAL), "EINVAL (22)");
        assert_eq!(format!("{:?}", Errno::EFAULT), "EFAULT(14)");
        assert_eq!(Errno(7).name(), "E?");
        // Every named constant has its name in the table.
        for e in [
            Errno::EPERM,
            Errno::ENOENT,
            Errno::ESRCH,
            Errno::EINTR,
            Errno::EIO,
            Errno::EBADF,
            Errno::EAGAIN,
            Errno::ENOMEM,
            Errno::EACCES,
            Errno::EFAULT,
            Errno::EBUSY,
            Errno::EEXIST,
            Errno::ENODEV,
            Errno::EINVAL,
            Errno::ENOTTY,
            Errno::ENOSPC,
            Errno::ERANGE,
            Errno::ETIME,
            Errno::EOPNOTSUPP,
            Errno::EADDRINUSE,
            Errno::ETIMEDOUT,
            Errno::ENOTSUPP,
            Errno::ERESTARTSYS,
        ] {
            assert_ne!(e.name(), "E?", "{}", e.0);
        }
    }
}
