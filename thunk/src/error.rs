//! One error type for everything the thunk does: the operation that failed, the errno the
//! kernel (or the thunk's own check standing in for it) gave, and a sentence a user can act on.

use core::fmt;

/// A Linux error number as the kernel returns it (positive): the one type of
/// `kfd_sys::errno`, which the driver model returns as well.
pub use kfd_sys::errno::Errno;

/// The [`Errno`] of a failed system call.
pub(crate) fn from_nix(e: nix::errno::Errno) -> Errno {
    Errno(e as i32)
}

/// What went wrong: the operation (an ioctl name such as `"CREATE_QUEUE"`, or a thunk step
/// such as `"topology"`), the errno, and a message that says what to change.
///
/// ```
/// use thunk::{Errno, Error};
/// let e = Error::invalid("CREATE_QUEUE", "ring size 3000 is not a power of two");
/// assert_eq!(e.errno(), Errno::EINVAL);
/// assert_eq!(e.to_string(), "CREATE_QUEUE: ring size 3000 is not a power of two (EINVAL (22))");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    op: &'static str,
    errno: Errno,
    message: String,
}

impl Error {
    /// An error of `op` with `errno` and a message.
    pub fn new(op: &'static str, errno: Errno, message: impl Into<String>) -> Self {
        Error {
            op,
            errno,
            message: message.into(),
        }
    }

    /// A bad argument caught before it reached the kernel (`EINVAL`, what the kernel would say).
    pub fn invalid(op: &'static str, message: impl Into<String>) -> Self {
        Error::new(op, Errno::EINVAL, message)
    }

    /// A wait of the thunk's own that ran out of time (`ETIMEDOUT`).
    pub fn timeout(op: &'static str, message: impl Into<String>) -> Self {
        Error::new(op, Errno::ETIMEDOUT, message)
    }

    /// The device answered something that cannot be right (`EIO`): a value out of range, an
    /// offset for another GPU, a malformed sysfs file.
    pub fn bad_answer(op: &'static str, message: impl Into<String>) -> Self {
        Error::new(op, Errno::EIO, message)
    }

    /// An ioctl of `op` failed with `errno`; the message explains what that errno means for
    /// this ioctl, with `context` (the object concerned) in front.
    pub fn ioctl(op: &'static str, errno: Errno, context: impl fmt::Display) -> Self {
        let context = context.to_string();
        let meaning = explain(op, errno);
        let message = match (context.is_empty(), meaning) {
            (true, Some(m)) => m.to_owned(),
            (true, None) => "the kernel refused the request".to_owned(),
            (false, Some(m)) => format!("{context}: {m}"),
            (false, None) => format!("{context}: the kernel refused the request"),
        };
        Error::new(op, errno, message)
    }

    /// The operation that failed.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The error number.
    pub fn errno(&self) -> Errno {
        self.errno
    }

    /// The message, without the operation and errno.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether this is a timeout (of a thunk wait or a WAIT_EVENTS).
    pub fn is_timeout(&self) -> bool {
        matches!(self.errno, Errno::ETIMEDOUT | Errno::ETIME)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.op, self.message, self.errno)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({self})")
    }
}

impl std::error::Error for Error {}

/// Result of a thunk operation.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What an errno means for one ioctl (facts §9.9 and the handlers' documented failures).
fn explain(op: &str, errno: Errno) -> Option<&'static str> {
    let generic = match errno {
        Errno::ENOTTY => Some("the driver does not know this ioctl (interface too old?)"),
        Errno::EBADF => Some("the /dev/kfd file was opened by another process"),
        Errno::EIO => Some("the GPU is in reset or its scheduler firmware hung"),
        Errno::ESRCH => Some("the process is not bound to this GPU (ACQUIRE_VM missing)"),
        _ => None,
    };
    let specific = match (op, errno) {
        ("CREATE_QUEUE", Errno::EINVAL) => Some(
            "the driver rejected the queue arguments (ring size a power of two, percentage \
             <= 100, priority <= 15, known gpu id, buffers mapped exactly as the topology \
             requires)",
        ),
        ("CREATE_QUEUE", Errno::EFAULT) => {
            Some("a ring, pointer, EOP or context-save address is not a user address")
        }
        ("CREATE_QUEUE", Errno::ENOSPC) => Some(
            "the process already has the maximum number of queues on this GPU (127; 255 on \
             GC 9.4.3 and later)",
        ),
        ("CREATE_QUEUE", Errno::ENOMEM) => Some(
            "no free queue id or SDMA queue slot on this GPU, or no room in the HIQ, the \
             ring the driver sends the scheduler its map packets on",
        ),
        ("CREATE_QUEUE", Errno::EPERM) => Some(
            "the device queue limit is reached, or the scheduler runs without \
             oversubscription and has no free VMID or hardware queue",
        ),
        ("CREATE_QUEUE", Errno::EBUSY) => Some("no free doorbell in this process's page"),
        ("CREATE_QUEUE", Errno::ENOTSUPP) => Some("the driver does not support this queue type"),
        ("CREATE_QUEUE", Errno::ETIME) => {
            Some("the scheduler did not preempt in time while remapping queues")
        }
        ("DESTROY_QUEUE", Errno::EINVAL) => Some("no queue with this id"),
        ("DESTROY_QUEUE", Errno::EBUSY) => {
            Some("the queue is being debugged or already being destroyed")
        }
        ("UPDATE_QUEUE", Errno::EFAULT) => Some("no queue with this id"),
        ("UPDATE_QUEUE", Errno::EINVAL) => {
            Some("percentage above 100, priority above 15 or ring size not a power of two")
        }
        ("UPDATE_QUEUE", Errno::EACCES) => Some("the queue was reset after a hang"),
        ("SET_CU_MASK", Errno::EINVAL) => {
            Some("the CU mask is empty or not a whole number of 32-bit words")
        }
        ("ALLOC_MEMORY_OF_GPU", Errno::ENOMEM) => Some("not enough memory of this kind"),
        ("ALLOC_MEMORY_OF_GPU", Errno::EINVAL) => {
            Some("bad size, flags or address for this memory kind")
        }
        ("ALLOC_MEMORY_OF_GPU", Errno::EFAULT) => {
            Some("the user pages are not mapped readable and writable")
        }
        ("FREE_MEMORY_OF_GPU", Errno::EINVAL) => Some("no buffer with this handle"),
        ("FREE_MEMORY_OF_GPU", Errno::EBUSY) => {
            Some("the buffer is still mapped on a GPU, or a queue still uses it")
        }
        ("FREE_MEMORY_OF_GPU", Errno::EPERM) => Some("the signal event page cannot be freed"),
        ("MAP_MEMORY_TO_GPU", Errno::EINVAL) => Some(
            "unknown gpu id, or the buffer's address is 0, unaligned, past 48 bits or overlaps \
             another mapping on that GPU",
        ),
        ("MAP_MEMORY_TO_GPU", Errno::ENOMEM) => Some("no buffer with this handle"),
        ("UNMAP_MEMORY_FROM_GPU", Errno::EINVAL) => {
            Some("unknown gpu id, or the buffer is not mapped on that GPU")
        }
        ("UNMAP_MEMORY_FROM_GPU", Errno::ENOMEM) => Some("no buffer with this handle"),
        ("UNMAP_MEMORY_FROM_GPU", Errno::EBUSY) => {
            Some("a queue still uses the buffer (its ring, pointers, EOP or CWSR area)")
        }
        ("ACQUIRE_VM", Errno::EINVAL) => Some("the render node does not belong to this GPU"),
        ("ACQUIRE_VM", Errno::EBUSY) => {
            Some("the GPU's address space was already acquired from another render node")
        }
        ("CREATE_EVENT", Errno::ENOSPC) => {
            Some("all signal event slots of the process are in use (4096)")
        }
        ("CREATE_EVENT", Errno::EINVAL) => {
            Some("the event page was already set, or the buffer offered for it is too small")
        }
        ("SET_EVENT" | "RESET_EVENT", Errno::EINVAL) => {
            Some("no signal event with this id (only signal events can be set or reset)")
        }
        ("DESTROY_EVENT", Errno::EINVAL) => Some("no event with this id"),
        ("WAIT_EVENTS", Errno::EINVAL) => Some("one of the events does not exist"),
        ("WAIT_EVENTS", Errno::EIO) => Some("an event was destroyed while being waited on"),
        ("SET_XNACK_MODE", Errno::EBUSY) => {
            Some("XNACK mode cannot change while the process has queues")
        }
        ("SET_XNACK_MODE", Errno::EPERM) => Some("a GPU of the process does not support XNACK"),
        ("mmap", Errno::EINVAL) => Some("the mapping length does not match what the driver maps"),
        ("mmap", Errno::ENODEV) => Some("the offset names no GPU of this process"),
        _ => None,
    };
    specific.or(generic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_errors_explain_the_errno() {
        let e = Error::ioctl("CREATE_QUEUE", Errno::ENOSPC, "gpu 0x4f3a");
        assert_eq!(e.op(), "CREATE_QUEUE");
        assert_eq!(e.errno(), Errno::ENOSPC);
        assert!(
            e.to_string().starts_with(
                "CREATE_QUEUE: gpu 0x4f3a: the process already has the maximum number of queues"
            ),
            "{e}"
        );
        assert!(e.to_string().ends_with("(ENOSPC (28))"), "{e}");
        let e = Error::ioctl("GET_VERSION", Errno(1234), "");
        assert_eq!(
            e.to_string(),
            "GET_VERSION: the kernel refused the request (E? (1234))"
        );
        assert_eq!(Errno::ENOTSUPP.0, 524);
        assert!(Error::timeout("wait", "x").is_timeout());
    }
}
