//! Files the driver is handed by descriptor number: the render node of `ACQUIRE_VM`, the
//! dma-buf of `GET_DMABUF_INFO` and `IMPORT_DMABUF`.
//!
//! The kernel turns such a number into its `struct file` (`fget`), so every descriptor that
//! names the file — a `dup`, `dup2`, `dup3` or `fcntl(F_DUPFD*)` of it, one received through
//! `SCM_RIGHTS` — reaches the same file, and the file lives while any of them is open. The
//! model does the same by the identity of the open file behind the descriptor: the device and
//! inode of the descriptor's file, which every duplicate shares and a new `open` does not.

use crate::errno::{Errno, KResult};
use std::os::fd::RawFd;

/// The identity of one open file: what every duplicate of a descriptor shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// `st_dev` of the file.
    pub dev: u64,
    /// `st_ino` of the file.
    pub ino: u64,
}

impl FileIdentity {
    /// The file behind descriptor `fd` of this process; `EBADF` when `fd` is not open.
    pub fn of(fd: RawFd) -> KResult<FileIdentity> {
        let st = nix::sys::stat::fstat(fd).map_err(|_| Errno::EBADF)?;
        Ok(FileIdentity {
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn duplicates_share_the_identity_and_a_new_open_does_not() {
        let a =
            nix::sys::memfd::memfd_create(c"a", nix::sys::memfd::MemFdCreateFlag::empty()).unwrap();
        let b =
            nix::sys::memfd::memfd_create(c"b", nix::sys::memfd::MemFdCreateFlag::empty()).unwrap();
        let dup = nix::unistd::dup(a.as_raw_fd()).unwrap();
        let id = FileIdentity::of(a.as_raw_fd()).unwrap();
        assert_eq!(FileIdentity::of(dup).unwrap(), id);
        assert_ne!(FileIdentity::of(b.as_raw_fd()).unwrap(), id);
        nix::unistd::close(dup).unwrap();
        assert_eq!(FileIdentity::of(dup), Err(Errno::EBADF));
    }
}
