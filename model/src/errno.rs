//! Kernel error numbers, as amdkfd returns them (negated in the kernel, positive here): the
//! one [`Errno`] type of `kfd_sys::errno`, which the thunk receives as well.

pub use kfd_sys::errno::Errno;

/// Result of a modelled kernel operation.
pub type KResult<T> = Result<T, Errno>;

/// The [`Errno`] of a failed system call the model made on its own behalf.
pub(crate) fn from_nix(e: nix::errno::Errno) -> Errno {
    Errno(e as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_the_host_ones() {
        let pairs = [
            (Errno::EPERM, libc::EPERM),
            (Errno::ENOENT, libc::ENOENT),
            (Errno::ESRCH, libc::ESRCH),
            (Errno::EINTR, libc::EINTR),
            (Errno::EIO, libc::EIO),
            (Errno::EBADF, libc::EBADF),
            (Errno::EAGAIN, libc::EAGAIN),
            (Errno::ENOMEM, libc::ENOMEM),
            (Errno::EACCES, libc::EACCES),
            (Errno::EFAULT, libc::EFAULT),
            (Errno::EBUSY, libc::EBUSY),
            (Errno::EEXIST, libc::EEXIST),
            (Errno::ENODEV, libc::ENODEV),
            (Errno::EINVAL, libc::EINVAL),
            (Errno::ENOTTY, libc::ENOTTY),
            (Errno::ENOSPC, libc::ENOSPC),
            (Errno::ERANGE, libc::ERANGE),
            (Errno::ETIME, libc::ETIME),
            (Errno::EOPNOTSUPP, libc::EOPNOTSUPP),
            (Errno::ETIMEDOUT, libc::ETIMEDOUT),
            (Errno::ECANCELED, libc::ECANCELED),
        ];
        for (e, host) in pairs {
            assert_eq!(e.0, host, "{}", e.name());
        }
        assert_eq!(from_nix(nix::errno::Errno::EFAULT), Errno::EFAULT);
    }
}
