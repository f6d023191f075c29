//! Kernel error numbers, as amdkfd returns them (negated in the kernel, positive here).

use core::fmt;

/// An error number the modelled kernel returns from an ioctl, mmap or open.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// Operation not permitted (deprecated debugger ioctls, device queue limit, sched_policy 1).
    pub const EPERM: Errno = Errno(libc::EPERM);
    /// No such process (binding the process to a device failed).
    pub const ESRCH: Errno = Errno(libc::ESRCH);
    /// Interrupted by a fatal signal.
    pub const EINTR: Errno = Errno(libc::EINTR);
    /// I/O error: GPU in reset, scheduler firmware hung, or an event destroyed while waited on.
    pub const EIO: Errno = Errno(libc::EIO);
    /// Bad file descriptor (fd used from a process other than the opener, unknown drm fd).
    pub const EBADF: Errno = Errno(libc::EBADF);
    /// No raised exception was found (debugger query).
    pub const EAGAIN: Errno = Errno(libc::EAGAIN);
    /// Out of memory, no free queue id, no free SDMA queue, HIQ full.
    pub const ENOMEM: Errno = Errno(libc::ENOMEM);
    /// Permission denied (update of a reset queue, CRIU without capability).
    pub const EACCES: Errno = Errno(libc::EACCES);
    /// Bad address (a user pointer the kernel cannot read or write).
    pub const EFAULT: Errno = Errno(libc::EFAULT);
    /// Busy (destroy while debugged, no free doorbell).
    pub const EBUSY: Errno = Errno(libc::EBUSY);
    /// Already exists.
    pub const EEXIST: Errno = Errno(libc::EEXIST);
    /// No such device (unknown gpu id in an mmap offset, minor ≠ 0).
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    /// Invalid argument.
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    /// No space (per-process queue limit, event slots exhausted).
    pub const ENOSPC: Errno = Errno(libc::ENOSPC);
    /// Inappropriate ioctl (unknown command number).
    pub const ENOTTY: Errno = Errno(libc::ENOTTY);
    /// Timer expired (preemption fence timeout).
    pub const ETIME: Errno = Errno(libc::ETIME);
    /// Operation not supported (the user-space value, 95).
    pub const EOPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    /// The kernel-internal `ENOTSUPP` (524) that amdkfd leaks to user space for an unknown
    /// queue type. Not `EOPNOTSUPP`.
    pub const ENOTSUPP: Errno = Errno(kfd_sys::errno::ENOTSUPP);
    /// Restart the system call (interrupted by a non-fatal signal).
    pub const ERESTARTSYS: Errno = Errno(kfd_sys::errno::ERESTARTSYS);

    /// The symbolic name, for logs and messages.
    pub fn name(self) -> &'static str {
        kfd_sys::errno::errno_name(self.0).unwrap_or("E?")
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "-{} ({})", self.name(), self.0)
    }
}

impl std::error::Error for Errno {}

impl From<nix::errno::Errno> for Errno {
    fn from(e: nix::errno::Errno) -> Self {
        Errno(e as i32)
    }
}

/// Result of a modelled kernel operation.
pub type KResult<T> = Result<T, Errno>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enotsupp_is_the_kernel_internal_value() {
        assert_eq!(Errno::ENOTSUPP.0, 524);
        assert_ne!(Errno::ENOTSUPP, Errno::EOPNOTSUPP);
        assert_eq!(Errno::EOPNOTSUPP.0, 95);
        assert_eq!(format!("{}", Errno::EINVAL), "-EINVAL (22)");
    }
}
