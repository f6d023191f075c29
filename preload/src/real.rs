//! The libc functions the shim interposes, reached through `dlsym(RTLD_NEXT)`: each address
//! is looked up on first use and kept, so a hook costs one atomic load to pass a call on.
//!
//! A function this libc does not define (`__xstat` in a glibc without the compatibility
//! symbols) reads as `None`; the hooks answer `ENOSYS` then.

#![allow(clippy::missing_safety_doc)]

use core::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};
use libc::{mode_t, off_t, size_t, ssize_t, DIR, FILE};

/// Marks a symbol that `dlsym` did not find, so it is not looked up again.
const MISSING: usize = 1;

/// The address of the next definition of `name` (a NUL-terminated symbol name) after this
/// library, looked up once into `slot`.
pub(crate) fn resolve(slot: &AtomicUsize, name: &'static [u8]) -> Option<usize> {
    match slot.load(Ordering::Acquire) {
        0 => {
            // SAFETY: `name` is a NUL-terminated static string; RTLD_NEXT asks for the
            // definition that follows this object in the lookup order (libc's).
            let addr = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
            let stored = if addr == 0 { MISSING } else { addr };
            slot.store(stored, Ordering::Release);
            (addr != 0).then_some(addr)
        }
        MISSING => None,
        addr => Some(addr),
    }
}

macro_rules! real_fns {
    ($( fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; )*) => {$(
        #[doc = concat!("Calls libc's `", stringify!($name), "`; `None` if libc lacks it.")]
        pub(crate) unsafe fn $name($($arg: $ty),*) -> Option<$ret> {
            static SLOT: AtomicUsize = AtomicUsize::new(0);
            let addr = resolve(&SLOT, concat!(stringify!($name), "\0").as_bytes())?;
            // SAFETY: `addr` is the libc symbol of this name; its C prototype is the one
            // spelled here (glibc, x86-64), so the pointer has this function type.
            let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { core::mem::transmute(addr) };
            // SAFETY: the caller passes the arguments its own caller gave the hook, with the
            // contract of the libc function.
            Some(unsafe { f($($arg),*) })
        }
    )*};
}

real_fns! {
    fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int;
    fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int;
    fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int;
    fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int;
    fn __open_2(path: *const c_char, flags: c_int) -> c_int;
    fn __open64_2(path: *const c_char, flags: c_int) -> c_int;
    fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE;
    fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE;
    fn fdopen(fd: c_int, mode: *const c_char) -> *mut FILE;
    fn opendir(path: *const c_char) -> *mut DIR;
    fn stat(path: *const c_char, buf: *mut libc::stat) -> c_int;
    fn stat64(path: *const c_char, buf: *mut libc::stat64) -> c_int;
    fn lstat(path: *const c_char, buf: *mut libc::stat) -> c_int;
    fn lstat64(path: *const c_char, buf: *mut libc::stat64) -> c_int;
    fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int;
    fn fstat64(fd: c_int, buf: *mut libc::stat64) -> c_int;
    fn fstatat(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int;
    fn fstatat64(dirfd: c_int, path: *const c_char, buf: *mut libc::stat64, flags: c_int) -> c_int;
    fn __xstat(ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int;
    fn __xstat64(ver: c_int, path: *const c_char, buf: *mut libc::stat64) -> c_int;
    fn __lxstat(ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int;
    fn __lxstat64(ver: c_int, path: *const c_char, buf: *mut libc::stat64) -> c_int;
    fn __fxstat(ver: c_int, fd: c_int, buf: *mut libc::stat) -> c_int;
    fn __fxstat64(ver: c_int, fd: c_int, buf: *mut libc::stat64) -> c_int;
    fn __fxstatat(ver: c_int, dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int;
    fn __fxstatat64(ver: c_int, dirfd: c_int, path: *const c_char, buf: *mut libc::stat64, flags: c_int) -> c_int;
    fn statx(dirfd: c_int, path: *const c_char, flags: c_int, mask: c_uint, buf: *mut libc::statx) -> c_int;
    fn access(path: *const c_char, mode: c_int) -> c_int;
    fn faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int;
    fn eaccess(path: *const c_char, mode: c_int) -> c_int;
    fn euidaccess(path: *const c_char, mode: c_int) -> c_int;
    fn readlink(path: *const c_char, buf: *mut c_char, size: size_t) -> ssize_t;
    fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char;
    fn __realpath_chk(path: *const c_char, resolved: *mut c_char, resolved_len: size_t) -> *mut c_char;
    fn mknod(path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int;
    fn mknodat(dirfd: c_int, path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int;
    fn __xmknod(ver: c_int, path: *const c_char, mode: mode_t, dev: *mut libc::dev_t) -> c_int;
    fn __xmknodat(ver: c_int, dirfd: c_int, path: *const c_char, mode: mode_t, dev: *mut libc::dev_t) -> c_int;
    fn mkdir(path: *const c_char, mode: mode_t) -> c_int;
    fn chmod(path: *const c_char, mode: mode_t) -> c_int;
    fn chown(path: *const c_char, uid: libc::uid_t, gid: libc::gid_t) -> c_int;
    fn unlink(path: *const c_char) -> c_int;
    fn remove(path: *const c_char) -> c_int;
    fn getxattr(path: *const c_char, name: *const c_char, value: *mut c_void, size: size_t) -> ssize_t;
    fn lgetxattr(path: *const c_char, name: *const c_char, value: *mut c_void, size: size_t) -> ssize_t;
    fn listxattr(path: *const c_char, list: *mut c_char, size: size_t) -> ssize_t;
    fn llistxattr(path: *const c_char, list: *mut c_char, size: size_t) -> ssize_t;
    fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int;
    fn mmap(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, offset: off_t) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: size_t) -> c_int;
    fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int;
    fn fork() -> libc::pid_t;
    fn close(fd: c_int) -> c_int;
    fn dup(fd: c_int) -> c_int;
    fn dup2(fd: c_int, newfd: c_int) -> c_int;
    fn dup3(fd: c_int, newfd: c_int, flags: c_int) -> c_int;
    fn fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int;
    fn fcntl64(fd: c_int, cmd: c_int, arg: c_long) -> c_int;
    fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int;
    fn closefrom(lowfd: c_int) -> ();
    fn recvmsg(fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> ssize_t;
}
