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
    /// Operation canceled (125): a command submission on an amdgpu context that hung the GPU.
    pub const ECANCELED: Errno = Errno(125);
    /// The kernel-internal `ENOTSUPP` (524) that amdkfd leaks to user space for an unknown
    /// queue type. Not `EOPNOTSUPP`.
    pub const ENOTSUPP: Errno = Errno(ENOTSUPP);
    /// Restart the system call (interrupted by a non-fatal signal).
    pub const ERESTARTSYS: Errno = Errno(ERESTARTSYS);

    /// The symbolic name (`"EINVAL"`), or `"E?"` for a number Linux does not define.
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

/// Every Linux error number of x86-64 (asm-generic/errno-base.h and errno.h; 41 and 58 are
/// unused), then the two kernel-internal values amdkfd leaks.
const NAMES: &[(i32, &str)] = &[
    (1, "EPERM"),
    (2, "ENOENT"),
    (3, "ESRCH"),
    (4, "EINTR"),
    (5, "EIO"),
    (6, "ENXIO"),
    (7, "E2BIG"),
    (8, "ENOEXEC"),
    (9, "EBADF"),
    (10, "ECHILD"),
    (11, "EAGAIN"),
    (12, "ENOMEM"),
    (13, "EACCES"),
    (14, "EFAULT"),
    (15, "ENOTBLK"),
    (16, "EBUSY"),
    (17, "EEXIST"),
    (18, "EXDEV"),
    (19, "ENODEV"),
    (20, "ENOTDIR"),
    (21, "EISDIR"),
    (22, "EINVAL"),
    (23, "ENFILE"),
    (24, "EMFILE"),
    (25, "ENOTTY"),
    (26, "ETXTBSY"),
    (27, "EFBIG"),
    (28, "ENOSPC"),
    (29, "ESPIPE"),
    (30, "EROFS"),
    (31, "EMLINK"),
    (32, "EPIPE"),
    (33, "EDOM"),
    (34, "ERANGE"),
    (35, "EDEADLK"),
    (36, "ENAMETOOLONG"),
    (37, "ENOLCK"),
    (38, "ENOSYS"),
    (39, "ENOTEMPTY"),
    (40, "ELOOP"),
    (42, "ENOMSG"),
    (43, "EIDRM"),
    (44, "ECHRNG"),
    (45, "EL2NSYNC"),
    (46, "EL3HLT"),
    (47, "EL3RST"),
    (48, "ELNRNG"),
    (49, "EUNATCH"),
    (50, "ENOCSI"),
    (51, "EL2HLT"),
    (52, "EBADE"),
    (53, "EBADR"),
    (54, "EXFULL"),
    (55, "ENOANO"),
    (56, "EBADRQC"),
    (57, "EBADSLT"),
    (59, "EBFONT"),
    (60, "ENOSTR"),
    (61, "ENODATA"),
    (62, "ETIME"),
    (63, "ENOSR"),
    (64, "ENONET"),
    (65, "ENOPKG"),
    (66, "EREMOTE"),
    (67, "ENOLINK"),
    (68, "EADV"),
    (69, "ESRMNT"),
    (70, "ECOMM"),
    (71, "EPROTO"),
    (72, "EMULTIHOP"),
    (73, "EDOTDOT"),
    (74, "EBADMSG"),
    (75, "EOVERFLOW"),
    (76, "ENOTUNIQ"),
    (77, "EBADFD"),
    (78, "EREMCHG"),
    (79, "ELIBACC"),
    (80, "ELIBBAD"),
    (81, "ELIBSCN"),
    (82, "ELIBMAX"),
    (83, "ELIBEXEC"),
    (84, "EILSEQ"),
    (85, "ERESTART"),
    (86, "ESTRPIPE"),
    (87, "EUSERS"),
    (88, "ENOTSOCK"),
    (89, "EDESTADDRREQ"),
    (90, "EMSGSIZE"),
    (91, "EPROTOTYPE"),
    (92, "ENOPROTOOPT"),
    (93, "EPROTONOSUPPORT"),
    (94, "ESOCKTNOSUPPORT"),
    (95, "EOPNOTSUPP"),
    (96, "EPFNOSUPPORT"),
    (97, "EAFNOSUPPORT"),
    (98, "EADDRINUSE"),
    (99, "EADDRNOTAVAIL"),
    (100, "ENETDOWN"),
    (101, "ENETUNREACH"),
    (102, "ENETRESET"),
    (103, "ECONNABORTED"),
    (104, "ECONNRESET"),
    (105, "ENOBUFS"),
    (106, "EISCONN"),
    (107, "ENOTCONN"),
    (108, "ESHUTDOWN"),
    (109, "ETOOMANYREFS"),
    (110, "ETIMEDOUT"),
    (111, "ECONNREFUSED"),
    (112, "EHOSTDOWN"),
    (113, "EHOSTUNREACH"),
    (114, "EALREADY"),
    (115, "EINPROGRESS"),
    (116, "ESTALE"),
    (117, "EUCLEAN"),
    (118, "ENOTNAM"),
    (119, "ENAVAIL"),
    (120, "EISNAM"),
    (121, "EREMOTEIO"),
    (122, "EDQUOT"),
    (123, "ENOMEDIUM"),
    (124, "EMEDIUMTYPE"),
    (125, "ECANCELED"),
    (126, "ENOKEY"),
    (127, "EKEYEXPIRED"),
    (128, "EKEYREVOKED"),
    (129, "EKEYREJECTED"),
    (130, "EOWNERDEAD"),
    (131, "ENOTRECOVERABLE"),
    (132, "ERFKILL"),
    (133, "EHWPOISON"),
    (ERESTARTSYS, "ERESTARTSYS"),
    (ENOTSUPP, "ENOTSUPP"),
];

/// The symbolic name of a Linux error number (`"EINVAL"` for 22) or of the kernel-internal
/// ones amdkfd leaks (`ERESTARTSYS`, `ENOTSUPP`); `None` for other numbers.
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
        assert_eq!(errno_name(21), Some("EISDIR"));
        assert_eq!(errno_name(41), None);
        assert_eq!(errno_name(4000), None);
    }

    /// Every name agrees with the libc crate's value for it, and every libc value from 1 to
    /// 133 has a name.
    #[test]
    fn every_linux_errno_is_named_as_libc_names_it() {
        macro_rules! agree {
            ($($name:ident)*) => {
                $( assert_eq!(errno_name(libc::$name), Some(stringify!($name))); )*
                let all = [$(libc::$name),*];
                for n in 1..=133 {
                    if n != 41 && n != 58 {
                        assert!(all.contains(&n), "{n} has no libc constant here");
                    }
                }
            };
        }
        agree!(EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES
            EFAULT ENOTBLK EBUSY EEXIST EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY
            ETXTBSY EFBIG ENOSPC ESPIPE EROFS EMLINK EPIPE EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK
            ENOSYS ENOTEMPTY ELOOP ENOMSG EIDRM ECHRNG EL2NSYNC EL3HLT EL3RST ELNRNG EUNATCH ENOCSI
            EL2HLT EBADE EBADR EXFULL ENOANO EBADRQC EBADSLT EBFONT ENOSTR ENODATA ETIME ENOSR
            ENONET ENOPKG EREMOTE ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP EDOTDOT EBADMSG
            EOVERFLOW ENOTUNIQ EBADFD EREMCHG ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ
            ERESTART ESTRPIPE EUSERS ENOTSOCK EDESTADDRREQ EMSGSIZE EPROTOTYPE ENOPROTOOPT
            EPROTONOSUPPORT ESOCKTNOSUPPORT EOPNOTSUPP EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE
            EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET ECONNABORTED ECONNRESET ENOBUFS EISCONN
            ENOTCONN ESHUTDOWN ETOOMANYREFS ETIMEDOUT ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY
            EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL EISNAM EREMOTEIO EDQUOT ENOMEDIUM
            EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED EKEYREJECTED EOWNERDEAD
            ENOTRECOVERABLE ERFKILL EHWPOISON);
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
        assert_eq!(Errno(7).name(), "E2BIG");
        assert_eq!(Errno(4000).name(), "E?");
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
            Errno::ECANCELED,
            Errno::ENOTSUPP,
            Errno::ERESTARTSYS,
        ] {
            assert_ne!(e.name(), "E?", "{}", e.0);
        }
    }
}
