//! The error numbers `/dev/kfd` answers with (positive here, negated in the kernel), by name.
//!
//! Besides the ordinary Linux values, amdkfd leaks two kernel-internal ones to user space:
//! `ENOTSUPP` (524, for an unknown queue type — not `EOPNOTSUPP`, 95) and, from an interrupted
//! wait, `ERESTARTSYS` (512). Values are those of Linux on x86-64.

/// Kernel-internal "operation not supported" that amdkfd returns for an unknown queue type.
pub const ENOTSUPP: i32 = 524;
/// Kernel-internal "restart the system call" (a wait interrupted by a non-fatal signal).
pub const ERESTARTSYS: i32 = 512;

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
}
