//! The interposed libc functions. Each one passes a call it does not own straight on to libc
//! (one atomic load for descriptor calls, a prefix check for path calls); calls on
//! `/dev/kfd`, the modelled render nodes, the served sysfs paths and `/proc/modules` are
//! answered by [`crate::shim`].
//!
//! Inside the shim a thread-local guard makes every nested hooked call (from the model,
//! `std`, libc) go straight to libc. The functions keep the C prototypes of glibc on x86-64;
//! variadic ones (`open`, `ioctl`, `fcntl`) read their optional argument as the register it
//! arrives in.

use crate::real;
use crate::shim::{self, fd_kind, FdKind, Guard, Route};
use core::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void, CStr};
use kfd_model::Errno;
use libc::{mode_t, off_t, size_t, ssize_t, DIR, FILE};
use std::os::fd::AsRawFd;

/// Room for a redirected path (`PATH_MAX` plus the tree root).
const PATH_BUF: usize = 4096 + 256;

const _: () = assert!(core::mem::size_of::<libc::stat>() == core::mem::size_of::<libc::stat64>());

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e };
}

/// Sets errno and returns `value` (the C error return of the caller).
fn fail<T>(e: Errno, value: T) -> T {
    set_errno(e.0);
    value
}

/// A libc result, or `ENOSYS` when libc lacks the function.
fn or_enosys<T>(r: Option<T>, error_value: T) -> T {
    r.unwrap_or_else(|| fail(Errno(libc::ENOSYS), error_value))
}

fn fd_result(r: Result<c_int, Errno>) -> c_int {
    r.unwrap_or_else(|e| fail(e, -1))
}

/// # Safety
/// `p` is null or a NUL-terminated string that outlives `'a`.
unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: non-null pointers are C strings by the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

/// # Safety
/// As [`cstr`]; the result is `Some` only for absolute paths.
unsafe fn abs_path<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: `p` is null or a C string outliving `'a` by this function's contract, which is all
    // `cstr` needs.
    unsafe { cstr(p) }.filter(|c| c.to_bytes().first() == Some(&b'/'))
}

// ------------------------------------------------------------------------------------------
// open

/// Shared body of the `open` family: `real_open` opens a path with the caller's flags.
///
/// # Safety
/// `path` is null or a C string; `real_open` is a libc open function.
unsafe fn open_path(
    path: *const c_char,
    flags: c_int,
    real_open: impl Fn(*const c_char) -> Option<c_int>,
) -> c_int {
    let Some(_guard) = Guard::enter() else {
        return or_enosys(real_open(path), -1);
    };
    // SAFETY: `path` is null or a C string by this function's contract, which is all `abs_path`
    // needs.
    let Some(p) = (unsafe { abs_path(path) }) else {
        return or_enosys(real_open(path), -1);
    };
    let mut buf = [0u8; PATH_BUF];
    match shim::route(p, &mut buf) {
        Route::Pass => or_enosys(real_open(path), -1),
        Route::Redirect(np) => or_enosys(real_open(np.as_ptr()), -1),
        Route::Kfd => fd_result(shim::open_kfd(flags)),
        Route::Render(minor) => fd_result(shim::open_render(minor, flags)),
        Route::ProcModules => fd_result(shim::open_proc_modules(flags)),
        Route::Fail(e) => fail(e, -1),
    }
}

/// Interposed `open`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: the caller's arguments, passed to libc's open as given.
    unsafe { open_path(path, flags, |p| real::open(p, flags, mode)) }
}

/// Interposed `open64`.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: `open64`'s caller passes `path` as a C string or null, `open_path`'s contract; libc's
    // `open64` gets the caller's arguments as given.
    unsafe { open_path(path, flags, |p| real::open64(p, flags, mode)) }
}

/// Interposed `__open_2` (fortified `open` without a mode).
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: `__open_2`'s caller passes `path` as a C string or null, `open_path`'s contract;
    // libc's `__open_2` gets the caller's arguments as given.
    unsafe { open_path(path, flags, |p| real::__open_2(p, flags)) }
}

/// Interposed `__open64_2`.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: `__open64_2`'s caller passes `path` as a C string or null, `open_path`'s contract;
    // libc's `__open64_2` gets the caller's arguments as given.
    unsafe { open_path(path, flags, |p| real::__open64_2(p, flags)) }
}

/// Interposed `openat`: absolute paths are routed, relative ones pass.
#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    // SAFETY: `openat`'s caller passes `path` as a C string or null, `open_path`'s contract; libc's
    // `openat` gets the caller's arguments as given (an absolute path ignores `dirfd`).
    unsafe { open_path(path, flags, |p| real::openat(dirfd, p, flags, mode)) }
}

/// Interposed `openat64`.
#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    // SAFETY: `openat64`'s caller passes `path` as a C string or null, `open_path`'s contract;
    // libc's `openat64` gets the caller's arguments as given.
    unsafe { open_path(path, flags, |p| real::openat64(dirfd, p, flags, mode)) }
}

/// Interposed `__openat_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: `__openat_2`'s caller passes `path` as a C string or null, `open_path`'s contract;
    // libc's `__openat_2` gets the caller's arguments as given.
    unsafe { open_path(path, flags, |p| real::__openat_2(dirfd, p, flags)) }
}

/// Interposed `__openat64_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: `__openat64_2`'s caller passes `path` as a C string or null, `open_path`'s contract;
    // libc's `__openat64_2` gets the caller's arguments as given.
    unsafe { open_path(path, flags, |p| real::__openat64_2(dirfd, p, flags)) }
}

/// `open` flags for an `fopen` mode string.
fn fopen_flags(mode: &[u8]) -> c_int {
    let mut flags = if mode.contains(&b'+') || mode.first().is_some_and(|&m| m == b'w' || m == b'a')
    {
        if mode.contains(&b'+') {
            libc::O_RDWR
        } else {
            libc::O_WRONLY
        }
    } else {
        libc::O_RDONLY
    };
    if mode.contains(&b'e') {
        flags |= libc::O_CLOEXEC;
    }
    flags
}

/// # Safety
/// `path` and `mode` are null or C strings; `real_fopen` is libc's fopen or fopen64.
unsafe fn fopen_path(
    path: *const c_char,
    mode: *const c_char,
    real_fopen: impl Fn(*const c_char) -> Option<*mut FILE>,
) -> *mut FILE {
    let null = core::ptr::null_mut();
    let Some(_guard) = Guard::enter() else {
        return or_enosys(real_fopen(path), null);
    };
    // SAFETY: `path` and `mode` are null or C strings by this function's contract, which is all
    // `abs_path` and `cstr` need.
    let (Some(p), Some(m)) = (unsafe { abs_path(path) }, unsafe { cstr(mode) }) else {
        return or_enosys(real_fopen(path), null);
    };
    let mut buf = [0u8; PATH_BUF];
    let flags = fopen_flags(m.to_bytes());
    let opened = match shim::route(p, &mut buf) {
        Route::Pass => return or_enosys(real_fopen(path), null),
        Route::Redirect(np) => return or_enosys(real_fopen(np.as_ptr()), null),
        Route::Fail(e) => return fail(e, null),
        Route::Kfd => shim::open_kfd(flags),
        Route::Render(minor) => shim::open_render(minor, flags),
        Route::ProcModules => shim::open_proc_modules(flags),
    };
    match opened {
        Ok(fd) => {
            // SAFETY: `fd` is a descriptor just opened for this stream; `mode` is a C string.
            let file = unsafe { real::fdopen(fd, mode) }.unwrap_or(null);
            if file.is_null() {
                shim::forget_fd(fd);
                // SAFETY: closing the descriptor that could not become a stream.
                unsafe { real::close(fd) };
            }
            file
        }
        Err(e) => fail(e, null),
    }
}

/// Interposed `fopen` (glibc's does not go through `open`).
#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: `fopen`'s caller passes `path` and `mode` as C strings, `fopen_path`'s contract;
    // libc's `fopen` gets them as given.
    unsafe { fopen_path(path, mode, |p| real::fopen(p, mode)) }
}

/// Interposed `fopen64`.
#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: `fopen64`'s caller passes `path` and `mode` as C strings, `fopen_path`'s contract;
    // libc's `fopen64` gets them as given.
    unsafe { fopen_path(path, mode, |p| real::fopen64(p, mode)) }
}

/// Interposed `opendir`: the served trees list their own entries.
#[no_mangle]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut DIR {
    let null = core::ptr::null_mut();
    // SAFETY: libc's opendir with the caller's path.
    let pass = |p: *const c_char| or_enosys(unsafe { real::opendir(p) }, null);
    let Some(_guard) = Guard::enter() else {
        return pass(path);
    };
    // SAFETY: the caller passes a C string or null.
    let Some(p) = (unsafe { abs_path(path) }) else {
        return pass(path);
    };
    let mut buf = [0u8; PATH_BUF];
    match shim::route(p, &mut buf) {
        Route::Pass => pass(path),
        Route::Redirect(np) => pass(np.as_ptr()),
        Route::Fail(e) => fail(e, null),
        Route::Kfd | Route::Render(_) | Route::ProcModules => fail(Errno(libc::ENOTDIR), null),
    }
}

// ------------------------------------------------------------------------------------------
// stat and access

/// What a `stat` of a path is answered with.
enum StatAnswer<'b> {
    Pass,
    Redirect(&'b CStr),
    Device(FdKind),
    /// `/proc/modules` where the system has none: a read-only procfs-like file.
    ProcFile,
    Fail(Errno),
}

fn stat_route<'b>(p: &CStr, buf: &'b mut [u8]) -> StatAnswer<'b> {
    match shim::route(p, buf) {
        Route::Pass => StatAnswer::Pass,
        Route::Redirect(np) => StatAnswer::Redirect(np),
        Route::Kfd => StatAnswer::Device(FdKind::Kfd),
        Route::Render(m) => StatAnswer::Device(FdKind::Render(m)),
        Route::ProcModules => {
            if std::path::Path::new("/proc/modules").exists() {
                StatAnswer::Pass
            } else {
                StatAnswer::ProcFile
            }
        }
        Route::Fail(e) => StatAnswer::Fail(e),
    }
}

fn proc_file_stat() -> libc::stat {
    // SAFETY: `stat` is plain integers; all-zero is a valid value.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    st.st_mode = libc::S_IFREG | 0o444;
    st.st_nlink = 1;
    st.st_blksize = 1024;
    st
}

/// Shared body of the path `stat` family; `buf` points at a `struct stat` (or the
/// identical `stat64`).
///
/// # Safety
/// `path` is null or a C string; `buf` is writable for one `struct stat`.
unsafe fn stat_path(
    path: *const c_char,
    buf: *mut libc::stat,
    real_stat: impl Fn(*const c_char) -> Option<c_int>,
) -> c_int {
    let Some(_guard) = Guard::enter() else {
        return or_enosys(real_stat(path), -1);
    };
    // SAFETY: `path` is null or a C string by this function's contract, which is all `abs_path`
    // needs.
    let Some(p) = (unsafe { abs_path(path) }) else {
        return or_enosys(real_stat(path), -1);
    };
    let mut pbuf = [0u8; PATH_BUF];
    let answer = match stat_route(p, &mut pbuf) {
        StatAnswer::Pass => return or_enosys(real_stat(path), -1),
        StatAnswer::Redirect(np) => return or_enosys(real_stat(np.as_ptr()), -1),
        StatAnswer::Fail(e) => return fail(e, -1),
        StatAnswer::Device(kind) => shim::device_stat(kind),
        StatAnswer::ProcFile => proc_file_stat(),
    };
    if buf.is_null() {
        return fail(Errno::EFAULT, -1);
    }
    // SAFETY: `buf` is the caller's writable `struct stat`.
    unsafe { buf.write(answer) };
    0
}

/// Shared body of `fstat`.
///
/// # Safety
/// `buf` is writable for one `struct stat`.
unsafe fn stat_fd(
    fd: c_int,
    buf: *mut libc::stat,
    real_fstat: impl Fn() -> Option<c_int>,
) -> c_int {
    // Inside the shim (the model asking which open file a descriptor names) the real file
    // answers.
    let kind = fd_kind(fd).and_then(|k| Guard::enter().map(|_| k));
    match kind {
        Some(kind) if !buf.is_null() => {
            // SAFETY: `buf` is the caller's writable `struct stat`.
            unsafe { buf.write(shim::device_stat(kind)) };
            0
        }
        _ => or_enosys(real_fstat(), -1),
    }
}

/// Interposed `stat`.
#[no_mangle]
pub unsafe extern "C" fn stat(path: *const c_char, buf: *mut libc::stat) -> c_int {
    // SAFETY: `stat`'s caller passes `path` as a C string and `buf` writable for one `struct stat`,
    // `stat_path`'s contract; libc's `stat` gets them as given.
    unsafe { stat_path(path, buf, |p| real::stat(p, buf)) }
}

/// Interposed `stat64`.
#[no_mangle]
pub unsafe extern "C" fn stat64(path: *const c_char, buf: *mut libc::stat64) -> c_int {
    // SAFETY: `stat64` and `stat` are the same struct on x86-64 (asserted above).
    unsafe { stat_path(path, buf.cast(), |p| real::stat64(p, buf)) }
}

/// Interposed `lstat` (the served device nodes are not symlinks).
#[no_mangle]
pub unsafe extern "C" fn lstat(path: *const c_char, buf: *mut libc::stat) -> c_int {
    // SAFETY: `lstat`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat`, `stat_path`'s contract; libc's `lstat` gets them as given.
    unsafe { stat_path(path, buf, |p| real::lstat(p, buf)) }
}

/// Interposed `lstat64`.
#[no_mangle]
pub unsafe extern "C" fn lstat64(path: *const c_char, buf: *mut libc::stat64) -> c_int {
    // SAFETY: `lstat64`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat64`, the same struct as `stat` on x86-64 (asserted above): `stat_path`'s
    // contract; libc's `lstat64` gets them as given.
    unsafe { stat_path(path, buf.cast(), |p| real::lstat64(p, buf)) }
}

/// Interposed `__xstat` (what binaries built against glibc < 2.33 call for `stat`).
#[no_mangle]
pub unsafe extern "C" fn __xstat(ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int {
    // SAFETY: `__xstat`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat`, `stat_path`'s contract; libc's `__xstat` (or, without that compat symbol,
    // `stat`: the same call) gets them as given.
    unsafe {
        stat_path(path, buf, |p| {
            real::__xstat(ver, p, buf).or_else(|| real::stat(p, buf))
        })
    }
}

/// Interposed `__xstat64`.
#[no_mangle]
pub unsafe extern "C" fn __xstat64(
    ver: c_int,
    path: *const c_char,
    buf: *mut libc::stat64,
) -> c_int {
    // SAFETY: `__xstat64`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat64`, the same struct as `stat` on x86-64: `stat_path`'s contract; libc's
    // `__xstat64` (or `stat64`) gets them as given.
    unsafe {
        stat_path(path, buf.cast(), |p| {
            real::__xstat64(ver, p, buf).or_else(|| real::stat64(p, buf))
        })
    }
}

/// Interposed `__lxstat`.
#[no_mangle]
pub unsafe extern "C" fn __lxstat(ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int {
    // SAFETY: `__lxstat`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat`, `stat_path`'s contract; libc's `__lxstat` (or `lstat`) gets them as given.
    unsafe {
        stat_path(path, buf, |p| {
            real::__lxstat(ver, p, buf).or_else(|| real::lstat(p, buf))
        })
    }
}

/// Interposed `__lxstat64`.
#[no_mangle]
pub unsafe extern "C" fn __lxstat64(
    ver: c_int,
    path: *const c_char,
    buf: *mut libc::stat64,
) -> c_int {
    // SAFETY: `__lxstat64`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat64`, the same struct as `stat` on x86-64: `stat_path`'s contract; libc's
    // `__lxstat64` (or `lstat64`) gets them as given.
    unsafe {
        stat_path(path, buf.cast(), |p| {
            real::__lxstat64(ver, p, buf).or_else(|| real::lstat64(p, buf))
        })
    }
}

/// Interposed `fstat`: the shim's descriptors are character devices.
#[no_mangle]
pub unsafe extern "C" fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: `fstat`'s caller passes `buf` writable for one `struct stat`, `stat_fd`'s contract;
    // libc's `fstat` gets the caller's arguments as given.
    unsafe { stat_fd(fd, buf, || real::fstat(fd, buf)) }
}

/// Interposed `fstat64`.
#[no_mangle]
pub unsafe extern "C" fn fstat64(fd: c_int, buf: *mut libc::stat64) -> c_int {
    // SAFETY: `fstat64`'s caller passes `buf` writable for one `struct stat64`, the same struct as
    // `stat` on x86-64: `stat_fd`'s contract; libc's `fstat64` gets the caller's arguments as
    // given.
    unsafe { stat_fd(fd, buf.cast(), || real::fstat64(fd, buf)) }
}

/// Interposed `__fxstat`.
#[no_mangle]
pub unsafe extern "C" fn __fxstat(ver: c_int, fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: `__fxstat`'s caller passes `buf` writable for one `struct stat`, `stat_fd`'s
    // contract; libc's `__fxstat` (or `fstat`) gets the caller's arguments as given.
    unsafe {
        stat_fd(fd, buf, || {
            real::__fxstat(ver, fd, buf).or_else(|| real::fstat(fd, buf))
        })
    }
}

/// Interposed `__fxstat64`.
#[no_mangle]
pub unsafe extern "C" fn __fxstat64(ver: c_int, fd: c_int, buf: *mut libc::stat64) -> c_int {
    // SAFETY: `__fxstat64`'s caller passes `buf` writable for one `struct stat64`, the same struct
    // as `stat` on x86-64: `stat_fd`'s contract; libc's `__fxstat64` (or `fstat64`) gets the
    // caller's arguments as given.
    unsafe {
        stat_fd(fd, buf.cast(), || {
            real::__fxstat64(ver, fd, buf).or_else(|| real::fstat64(fd, buf))
        })
    }
}

/// Shared body of `fstatat`: an empty path with `AT_EMPTY_PATH` is `fstat(dirfd)`, an
/// absolute path is routed, a relative one passes.
///
/// # Safety
/// As for [`stat_path`].
unsafe fn stat_at(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
    real_statat: impl Fn(*const c_char) -> Option<c_int>,
) -> c_int {
    // SAFETY: `path` is null or a C string by this function's contract (`stat_path`'s), which is
    // all `cstr` needs.
    let empty = unsafe { cstr(path) }.is_some_and(|p| p.is_empty());
    if empty && flags & libc::AT_EMPTY_PATH != 0 {
        // SAFETY: `buf` is writable for one `struct stat` by this function's contract
        // (`stat_path`'s), which is `stat_fd`'s.
        return unsafe { stat_fd(dirfd, buf, || real_statat(path)) };
    }
    // SAFETY: this function's contract is `stat_path`'s: `path` null or a C string, `buf` writable
    // for one `struct stat`.
    unsafe { stat_path(path, buf, real_statat) }
}

/// Interposed `fstatat`.
#[no_mangle]
pub unsafe extern "C" fn fstatat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    // SAFETY: `fstatat`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat`, `stat_at`'s contract; libc's `fstatat` gets the caller's arguments as given.
    unsafe {
        stat_at(dirfd, path, buf, flags, |p| {
            real::fstatat(dirfd, p, buf, flags)
        })
    }
}

/// Interposed `fstatat64`.
#[no_mangle]
pub unsafe extern "C" fn fstatat64(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat64,
    flags: c_int,
) -> c_int {
    // SAFETY: `fstatat64`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat64`, the same struct as `stat` on x86-64: `stat_at`'s contract; libc's
    // `fstatat64` gets the caller's arguments as given.
    unsafe {
        stat_at(dirfd, path, buf.cast(), flags, |p| {
            real::fstatat64(dirfd, p, buf, flags)
        })
    }
}

/// Interposed `__fxstatat`.
#[no_mangle]
pub unsafe extern "C" fn __fxstatat(
    ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    // SAFETY: `__fxstatat`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat`, `stat_at`'s contract; libc's `__fxstatat` (or `fstatat`) gets the caller's
    // arguments as given.
    unsafe {
        stat_at(dirfd, path, buf, flags, |p| {
            real::__fxstatat(ver, dirfd, p, buf, flags)
                .or_else(|| real::fstatat(dirfd, p, buf, flags))
        })
    }
}

/// Interposed `__fxstatat64`.
#[no_mangle]
pub unsafe extern "C" fn __fxstatat64(
    ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat64,
    flags: c_int,
) -> c_int {
    // SAFETY: `__fxstatat64`'s caller passes `path` as a C string and `buf` writable for one
    // `struct stat64`, the same struct as `stat` on x86-64: `stat_at`'s contract; libc's
    // `__fxstatat64` (or `fstatat64`) gets the caller's arguments as given.
    unsafe {
        stat_at(dirfd, path, buf.cast(), flags, |p| {
            real::__fxstatat64(ver, dirfd, p, buf, flags)
                .or_else(|| real::fstatat64(dirfd, p, buf, flags))
        })
    }
}

/// Interposed `statx` (what `ls` and newer programs use).
#[no_mangle]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    // SAFETY: libc's statx with the caller's arguments and the given path.
    let pass = |p: *const c_char| or_enosys(unsafe { real::statx(dirfd, p, flags, mask, buf) }, -1);
    let Some(_guard) = Guard::enter() else {
        return pass(path);
    };
    // SAFETY: the caller passes a C string or null.
    let Some(p) = (unsafe { cstr(path) }) else {
        return pass(path);
    };
    let kind = if p.is_empty() && flags & libc::AT_EMPTY_PATH != 0 {
        fd_kind(dirfd)
    } else if p.to_bytes().first() == Some(&b'/') {
        let mut pbuf = [0u8; PATH_BUF];
        match stat_route(p, &mut pbuf) {
            StatAnswer::Pass | StatAnswer::ProcFile => return pass(path),
            StatAnswer::Redirect(np) => return pass(np.as_ptr()),
            StatAnswer::Fail(e) => return fail(e, -1),
            StatAnswer::Device(kind) => Some(kind),
        }
    } else {
        None
    };
    match kind {
        Some(kind) if !buf.is_null() => {
            // SAFETY: `buf` is the caller's writable `struct statx`.
            unsafe { buf.write(shim::device_statx(kind)) };
            0
        }
        _ => pass(path),
    }
}

/// Shared body of the `access` family.
///
/// # Safety
/// `path` is null or a C string.
unsafe fn access_path(
    path: *const c_char,
    mode: c_int,
    real_access: impl Fn(*const c_char) -> Option<c_int>,
) -> c_int {
    let Some(_guard) = Guard::enter() else {
        return or_enosys(real_access(path), -1);
    };
    // SAFETY: `path` is null or a C string by this function's contract, which is all `abs_path`
    // needs.
    let Some(p) = (unsafe { abs_path(path) }) else {
        return or_enosys(real_access(path), -1);
    };
    let mut buf = [0u8; PATH_BUF];
    match shim::route(p, &mut buf) {
        Route::Pass => or_enosys(real_access(path), -1),
        Route::Redirect(np) => or_enosys(real_access(np.as_ptr()), -1),
        Route::Fail(e) => fail(e, -1),
        // Device nodes are read-write for everyone, never executable.
        Route::Kfd | Route::Render(_) if mode & libc::X_OK != 0 => fail(Errno::EACCES, -1),
        Route::Kfd | Route::Render(_) => 0,
        Route::ProcModules if mode & (libc::W_OK | libc::X_OK) != 0 => fail(Errno::EACCES, -1),
        Route::ProcModules => 0,
    }
}

/// Interposed `access`.
#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: `access`'s caller passes `path` as a C string, `access_path`'s contract; libc's
    // `access` gets the caller's arguments as given.
    unsafe { access_path(path, mode, |p| real::access(p, mode)) }
}

/// Interposed `faccessat` (absolute paths routed).
#[no_mangle]
pub unsafe extern "C" fn faccessat(
    dirfd: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: `faccessat`'s caller passes `path` as a C string, `access_path`'s contract; libc's
    // `faccessat` gets the caller's arguments as given (an absolute path ignores `dirfd`).
    unsafe { access_path(path, mode, |p| real::faccessat(dirfd, p, mode, flags)) }
}

/// Interposed `eaccess`.
#[no_mangle]
pub unsafe extern "C" fn eaccess(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: `eaccess`'s caller passes `path` as a C string, `access_path`'s contract; libc's
    // `eaccess` gets the caller's arguments as given.
    unsafe { access_path(path, mode, |p| real::eaccess(p, mode)) }
}

/// Interposed `euidaccess`.
#[no_mangle]
pub unsafe extern "C" fn euidaccess(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: `euidaccess`'s caller passes `path` as a C string, `access_path`'s contract; libc's
    // `euidaccess` gets the caller's arguments as given.
    unsafe { access_path(path, mode, |p| real::euidaccess(p, mode)) }
}

/// Interposed `readlink`: the served tree's links (`subsystem`, `driver`, `device`).
#[no_mangle]
pub unsafe extern "C" fn readlink(path: *const c_char, out: *mut c_char, size: size_t) -> ssize_t {
    // SAFETY: libc's readlink with the caller's buffer.
    let pass = |p: *const c_char| or_enosys(unsafe { real::readlink(p, out, size) }, -1);
    let Some(_guard) = Guard::enter() else {
        return pass(path);
    };
    // SAFETY: the caller passes a C string or null.
    let Some(p) = (unsafe { abs_path(path) }) else {
        return pass(path);
    };
    let mut buf = [0u8; PATH_BUF];
    match shim::route(p, &mut buf) {
        Route::Pass => pass(path),
        Route::Redirect(np) => pass(np.as_ptr()),
        Route::Fail(e) => fail(e, -1),
        // A descriptor's link to a device the shim stands for reads as the device's path, as
        // the kernel's does; the device node itself is no link.
        route @ (Route::Kfd | Route::Render(_)) if crate::paths::is_fd_link(p.to_bytes()) => {
            let target = device_path(&route);
            let n = target.len().min(size);
            // SAFETY: `out` is the caller's buffer of `size` bytes; `n` bytes fit.
            unsafe { core::ptr::copy_nonoverlapping(target.as_ptr(), out.cast(), n) };
            n as ssize_t
        }
        Route::Kfd | Route::Render(_) | Route::ProcModules => fail(Errno::EINVAL, -1),
    }
}

/// The path of the device node a route stands for (without NUL).
fn device_path(route: &Route<'_>) -> Vec<u8> {
    match route {
        Route::Render(minor) => format!("/dev/dri/renderD{minor}").into_bytes(),
        _ => crate::paths::DEV_KFD.to_vec(),
    }
}

/// Shared body of `realpath`: a served path resolves inside the tree; a device node is its
/// own canonical name.
///
/// # Safety
/// `path` is null or a C string; `resolved` is null or has room for `PATH_MAX` bytes.
unsafe fn realpath_impl(
    path: *const c_char,
    resolved: *mut c_char,
    real_realpath: impl Fn(*const c_char) -> Option<*mut c_char>,
) -> *mut c_char {
    let null = core::ptr::null_mut();
    let Some(_guard) = Guard::enter() else {
        return or_enosys(real_realpath(path), null);
    };
    // SAFETY: `path` is null or a C string by this function's contract, which is all `abs_path`
    // needs.
    let Some(p) = (unsafe { abs_path(path) }) else {
        return or_enosys(real_realpath(path), null);
    };
    let mut buf = [0u8; PATH_BUF];
    match shim::route(p, &mut buf) {
        Route::Pass | Route::ProcModules => or_enosys(real_realpath(path), null),
        Route::Redirect(np) => or_enosys(real_realpath(np.as_ptr()), null),
        Route::Fail(e) => fail(e, null),
        route @ (Route::Kfd | Route::Render(_)) => {
            let mut canonical = device_path(&route);
            canonical.push(0);
            if resolved.is_null() {
                // SAFETY: `canonical` is NUL-terminated; strdup allocates with malloc, as
                // realpath does.
                unsafe { libc::strdup(canonical.as_ptr().cast()) }
            } else {
                let bytes = &canonical[..];
                if bytes.len() > libc::PATH_MAX as usize {
                    return fail(Errno(libc::ENAMETOOLONG), null);
                }
                // SAFETY: `resolved` has room for PATH_MAX bytes by contract; `bytes` fits.
                unsafe {
                    core::ptr::copy_nonoverlapping(bytes.as_ptr(), resolved.cast(), bytes.len())
                };
                resolved
            }
        }
    }
}

/// Interposed `realpath`.
#[no_mangle]
pub unsafe extern "C" fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char {
    // SAFETY: `realpath`'s caller passes `path` as a C string and `resolved` null or with room for
    // `PATH_MAX` bytes, `realpath_impl`'s contract; libc's `realpath` gets them as given.
    unsafe { realpath_impl(path, resolved, |p| real::realpath(p, resolved)) }
}

/// Interposed `__realpath_chk` (fortified `realpath`, which libdrm calls).
#[no_mangle]
pub unsafe extern "C" fn __realpath_chk(
    path: *const c_char,
    resolved: *mut c_char,
    resolved_len: size_t,
) -> *mut c_char {
    // SAFETY: `__realpath_chk`'s caller passes `path` as a C string and `resolved` with
    // `resolved_len` bytes of room, which libc's `__realpath_chk` checks against `PATH_MAX` itself:
    // `realpath_impl`'s contract.
    unsafe {
        realpath_impl(path, resolved, |p| {
            real::__realpath_chk(p, resolved, resolved_len)
        })
    }
}

/// Shared body of the extended-attribute calls: device nodes have none (`no_attr` is the
/// answer: `ENODATA` for a get, an empty list for a list), served paths are redirected.
///
/// # Safety
/// `path` is null or a C string.
unsafe fn xattr_path(
    path: *const c_char,
    no_attr: Result<ssize_t, Errno>,
    real_op: impl Fn(*const c_char) -> Option<ssize_t>,
) -> ssize_t {
    let Some(_guard) = Guard::enter() else {
        return or_enosys(real_op(path), -1);
    };
    // SAFETY: `path` is null or a C string by this function's contract, which is all `abs_path`
    // needs.
    let Some(p) = (unsafe { abs_path(path) }) else {
        return or_enosys(real_op(path), -1);
    };
    let mut buf = [0u8; PATH_BUF];
    match shim::route(p, &mut buf) {
        Route::Pass | Route::ProcModules => or_enosys(real_op(path), -1),
        Route::Redirect(np) => or_enosys(real_op(np.as_ptr()), -1),
        Route::Fail(e) => fail(e, -1),
        Route::Kfd | Route::Render(_) => no_attr.unwrap_or_else(|e| fail(e, -1)),
    }
}

/// Interposed `getxattr` (`ls -l` asks for the security label).
#[no_mangle]
pub unsafe extern "C" fn getxattr(
    path: *const c_char,
    name: *const c_char,
    value: *mut c_void,
    size: size_t,
) -> ssize_t {
    // SAFETY: `getxattr`'s caller passes `path` as a C string, `xattr_path`'s contract; libc's
    // `getxattr` gets the caller's arguments (`value` with `size` bytes of room) as given.
    unsafe {
        xattr_path(path, Err(Errno(libc::ENODATA)), |p| {
            real::getxattr(p, name, value, size)
        })
    }
}

/// Interposed `lgetxattr`.
#[no_mangle]
pub unsafe extern "C" fn lgetxattr(
    path: *const c_char,
    name: *const c_char,
    value: *mut c_void,
    size: size_t,
) -> ssize_t {
    // SAFETY: `lgetxattr`'s caller passes `path` as a C string, `xattr_path`'s contract; libc's
    // `lgetxattr` gets the caller's arguments (`value` with `size` bytes of room) as given.
    unsafe {
        xattr_path(path, Err(Errno(libc::ENODATA)), |p| {
            real::lgetxattr(p, name, value, size)
        })
    }
}

/// Interposed `listxattr`.
#[no_mangle]
pub unsafe extern "C" fn listxattr(
    path: *const c_char,
    list: *mut c_char,
    size: size_t,
) -> ssize_t {
    // SAFETY: `listxattr`'s caller passes `path` as a C string, `xattr_path`'s contract; libc's
    // `listxattr` gets the caller's arguments (`list` with `size` bytes of room) as given.
    unsafe { xattr_path(path, Ok(0), |p| real::listxattr(p, list, size)) }
}

/// Interposed `llistxattr`.
#[no_mangle]
pub unsafe extern "C" fn llistxattr(
    path: *const c_char,
    list: *mut c_char,
    size: size_t,
) -> ssize_t {
    // SAFETY: `llistxattr`'s caller passes `path` as a C string, `xattr_path`'s contract; libc's
    // `llistxattr` gets the caller's arguments (`list` with `size` bytes of room) as given.
    unsafe { xattr_path(path, Ok(0), |p| real::llistxattr(p, list, size)) }
}

// ------------------------------------------------------------------------------------------
// Never create, change or remove device nodes on the real /dev.

/// Whether an absolute path names `/dev/kfd` or anything under `/dev/dri`: the nodes the shim
/// answers, which must never be created, changed or removed on the real `/dev`.
///
/// # Safety
/// `path` is null or a C string.
unsafe fn is_served_dev_node(path: *const c_char) -> bool {
    // SAFETY: `path` is null or a C string by this function's contract, which is all `abs_path`
    // needs.
    let Some(p) = (unsafe { abs_path(path) }) else {
        return false;
    };
    let bytes = p.to_bytes();
    bytes == crate::paths::DEV_KFD
        || bytes == crate::paths::DEV_DRI
        || bytes.starts_with(b"/dev/dri/")
}

/// Body of the node-changing calls: pretend success for served device nodes.
///
/// # Safety
/// `path` is null or a C string.
unsafe fn dev_node_op(
    path: *const c_char,
    what: &str,
    real_op: impl Fn() -> Option<c_int>,
) -> c_int {
    let Some(_guard) = Guard::enter() else {
        return or_enosys(real_op(), -1);
    };
    // SAFETY: `path` is null or a C string by this function's contract, which is
    // `is_served_dev_node`'s.
    if unsafe { is_served_dev_node(path) } {
        // SAFETY: the path was just checked to be a C string.
        let p = unsafe { CStr::from_ptr(path) };
        log::debug!(target: "preload", "{what} {}: answered by the shim, nothing created on /dev", p.to_string_lossy());
        return 0;
    }
    or_enosys(real_op(), -1)
}

/// Interposed `mknod` (libdrm creates missing render nodes when run as root).
#[no_mangle]
pub unsafe extern "C" fn mknod(path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int {
    // SAFETY: `mknod`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `mknod` gets the caller's arguments as given.
    unsafe { dev_node_op(path, "mknod", || real::mknod(path, mode, dev)) }
}

/// Interposed `mknodat` (absolute paths checked).
#[no_mangle]
pub unsafe extern "C" fn mknodat(
    dirfd: c_int,
    path: *const c_char,
    mode: mode_t,
    dev: libc::dev_t,
) -> c_int {
    // SAFETY: `mknodat`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `mknodat` gets the caller's arguments as given.
    unsafe { dev_node_op(path, "mknodat", || real::mknodat(dirfd, path, mode, dev)) }
}

/// Interposed `__xmknod` (glibc < 2.33 binaries).
#[no_mangle]
pub unsafe extern "C" fn __xmknod(
    ver: c_int,
    path: *const c_char,
    mode: mode_t,
    dev: *mut libc::dev_t,
) -> c_int {
    // SAFETY: `__xmknod`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `__xmknod` gets the caller's arguments (`dev` untouched) as given.
    unsafe { dev_node_op(path, "mknod", || real::__xmknod(ver, path, mode, dev)) }
}

/// Interposed `__xmknodat`.
#[no_mangle]
pub unsafe extern "C" fn __xmknodat(
    ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    mode: mode_t,
    dev: *mut libc::dev_t,
) -> c_int {
    // SAFETY: `__xmknodat`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `__xmknodat` gets the caller's arguments as given.
    unsafe {
        dev_node_op(path, "mknodat", || {
            real::__xmknodat(ver, dirfd, path, mode, dev)
        })
    }
}

/// Interposed `mkdir` (`/dev/dri` "exists").
#[no_mangle]
pub unsafe extern "C" fn mkdir(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: `mkdir`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `mkdir` gets the caller's arguments as given.
    unsafe { dev_node_op(path, "mkdir", || real::mkdir(path, mode)) }
}

/// Interposed `chmod`.
#[no_mangle]
pub unsafe extern "C" fn chmod(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: `chmod`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `chmod` gets the caller's arguments as given.
    unsafe { dev_node_op(path, "chmod", || real::chmod(path, mode)) }
}

/// Interposed `chown`.
#[no_mangle]
pub unsafe extern "C" fn chown(path: *const c_char, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    // SAFETY: `chown`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `chown` gets the caller's arguments as given.
    unsafe { dev_node_op(path, "chown", || real::chown(path, uid, gid)) }
}

/// Interposed `unlink`.
#[no_mangle]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    // SAFETY: `unlink`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `unlink` gets the caller's arguments as given.
    unsafe { dev_node_op(path, "unlink", || real::unlink(path)) }
}

/// Interposed `remove`.
#[no_mangle]
pub unsafe extern "C" fn remove(path: *const c_char) -> c_int {
    // SAFETY: `remove`'s caller passes `path` as a C string, `dev_node_op`'s contract; libc's
    // `remove` gets the caller's arguments as given.
    unsafe { dev_node_op(path, "remove", || real::remove(path)) }
}

// ------------------------------------------------------------------------------------------
// Descriptors

/// Interposed `ioctl`: KFD ioctls on `/dev/kfd` descriptors, DRM queries on render nodes.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    // SAFETY: libc's ioctl with the caller's arguments.
    let pass = || or_enosys(unsafe { real::ioctl(fd, request, arg) }, -1);
    let Some(kind) = fd_kind(fd) else {
        return pass();
    };
    let Some(_guard) = Guard::enter() else {
        return pass();
    };
    let result = match kind {
        // SAFETY: the client's own ioctl(2) arguments, with the contract it has with the kernel.
        FdKind::Kfd => unsafe { shim::kfd_ioctl(fd, request, arg) },
        // SAFETY: the client's own ioctl(2) arguments on a DRM device, with the contract it
        // has with the kernel (output buffers are its memory until the call returns).
        FdKind::Render(minor) => unsafe { shim::render_ioctl(fd, minor, request, arg) },
    };
    result.unwrap_or_else(|e| fail(e, -1))
}

/// Shared body of `mmap`/`mmap64`.
///
/// # Safety
/// The caller's `mmap` arguments.
unsafe fn mmap_impl(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    let pass = || {
        or_enosys(
            // SAFETY: libc's mmap with the caller's arguments.
            unsafe { real::mmap(addr, len, prot, flags, fd, offset) },
            libc::MAP_FAILED,
        )
    };
    let kind = match fd_kind(fd) {
        Some(kind) if flags & libc::MAP_ANONYMOUS == 0 => kind,
        _ => return pass(),
    };
    let Some(_guard) = Guard::enter() else {
        return pass();
    };
    let source = match shim::map_source(fd, kind, offset as u64, len as u64) {
        Ok(s) => s,
        Err(e) => {
            log::debug!(target: "preload", "mmap fd {fd} ({kind:?}) offset {offset:#x} len {len:#x} = {e}");
            return fail(e, libc::MAP_FAILED);
        }
    };
    let Ok(file_offset) = off_t::try_from(source.offset) else {
        return fail(Errno::EINVAL, libc::MAP_FAILED);
    };
    // The model's memory is a shared file: the mapping is always shared, at the caller's
    // address when it asks for one (libhsakmt maps BOs MAP_FIXED over its reserved VA).
    let shared = (flags & !libc::MAP_TYPE) | libc::MAP_SHARED;
    // SAFETY: mapping the model's memory file with the caller's address, length and
    // protection; a fixed address is the caller's own reservation, as with the real device.
    let mapped = unsafe {
        real::mmap(
            addr,
            len,
            prot,
            shared,
            source.memory.fd().as_raw_fd(),
            file_offset,
        )
    };
    let mapped = or_enosys(mapped, libc::MAP_FAILED);
    let doorbell = kind == FdKind::Kfd
        && kfd_sys::KfdMmapType::of(offset as u64) == kfd_sys::KfdMmapType::Doorbell;
    if doorbell && mapped != libc::MAP_FAILED {
        // SAFETY: the shared mapping of the model's doorbell memory made just above.
        unsafe { shim::watch_doorbell(mapped as u64, len as u64) };
    }
    log::debug!(
        target: "preload",
        "mmap fd {fd} ({kind:?}) offset {offset:#x} len {len:#x} -> {mapped:?} ({} +{:#x})",
        source.memory.name(),
        source.offset
    );
    mapped
}

/// Interposed `mmap`: doorbell, event and MMIO pages of `/dev/kfd`, buffers of render nodes.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    // SAFETY: the caller's arguments.
    unsafe { mmap_impl(addr, len, prot, flags, fd, offset) }
}

/// Interposed `mmap64` (the same call on x86-64; libdrm uses this name).
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    // SAFETY: the caller's arguments.
    unsafe { mmap_impl(addr, len, prot, flags, fd, offset) }
}

/// Interposed `munmap`: the driver model hears of it first (its SVM ranges there go), as
/// amdkfd hears of it through the MMU notifier; then libc unmaps.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    if let Some(_guard) = Guard::enter() {
        shim::notify_cpu_unmap(addr as u64, len as u64);
    }
    // SAFETY: libc's munmap with the caller's arguments.
    or_enosys(unsafe { real::munmap(addr, len) }, -1)
}

/// Interposed `mprotect`: libc changes the protection, then the driver model hears of it
/// (its SVM ranges there take the new protection on the GPUs), as amdkfd does through the
/// MMU notifier.
#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    // SAFETY: libc's mprotect with the caller's arguments.
    let r = or_enosys(unsafe { real::mprotect(addr, len, prot) }, -1);
    if r == 0 {
        if let Some(_guard) = Guard::enter() {
            shim::notify_cpu_protect(addr as u64, len as u64);
        }
    }
    r
}

/// Interposed `fork`: in the parent, the driver model hears of the copy-on-write protection
/// fork gave its private pages (an MMU-notifier event for every SVM range).
#[no_mangle]
pub unsafe extern "C" fn fork() -> libc::pid_t {
    // SAFETY: libc's fork.
    let pid = or_enosys(unsafe { real::fork() }, -1);
    if pid > 0 {
        if let Some(_guard) = Guard::enter() {
            shim::notify_fork();
        }
    }
    pid
}

/// Interposed `close`: the shim forgets its descriptors before libc may reuse the number.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if fd_kind(fd).is_some() {
        if let Some(_guard) = Guard::enter() {
            shim::forget_fd(fd);
        }
    }
    // SAFETY: libc's close with the caller's descriptor.
    or_enosys(unsafe { real::close(fd) }, -1)
}

/// Interposed `close_range`: the shim forgets its descriptors in the range first (unless
/// the call only marks them close-on-exec).
#[no_mangle]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    if flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
        if let Some(_guard) = Guard::enter() {
            shim::forget_fd_range(first, last);
        }
    }
    // SAFETY: libc's close_range with the caller's arguments.
    or_enosys(unsafe { real::close_range(first, last, flags) }, -1)
}

/// Interposed `closefrom`.
#[no_mangle]
pub unsafe extern "C" fn closefrom(lowfd: c_int) {
    if let Some(_guard) = Guard::enter() {
        shim::forget_fd_range(c_uint::try_from(lowfd).unwrap_or(0), c_uint::MAX);
    }
    // SAFETY: libc's closefrom with the caller's argument.
    if unsafe { real::closefrom(lowfd) }.is_none() {
        set_errno(libc::ENOSYS);
    }
}

/// Interposed `recvmsg`: descriptors that arrive through `SCM_RIGHTS` and stand for a device
/// file of the shim's become known to it, as the kernel's file table knows them.
#[no_mangle]
pub unsafe extern "C" fn recvmsg(fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> ssize_t {
    // SAFETY: libc's recvmsg with the caller's arguments.
    let n = or_enosys(unsafe { real::recvmsg(fd, msg, flags) }, -1);
    if n >= 0 && !msg.is_null() {
        if let Some(_guard) = Guard::enter() {
            // SAFETY: recvmsg succeeded, so `msg` is the caller's valid header whose control
            // buffer the kernel just filled (`msg_controllen` says how much).
            let received = unsafe { rights_in(msg) };
            shim::track_received(received.into_iter());
        }
    }
    n
}

/// The descriptors of every `SCM_RIGHTS` message in the control data of `msg`.
///
/// # Safety
/// `msg` is a valid `msghdr` whose control buffer holds `msg_controllen` bytes of control
/// messages (as `recvmsg` leaves it).
unsafe fn rights_in(msg: *const libc::msghdr) -> Vec<c_int> {
    let mut fds = Vec::new();
    // SAFETY: the contract; CMSG_FIRSTHDR/CMSG_NXTHDR walk the buffer within its length.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: a non-null header from CMSG_FIRSTHDR/NXTHDR lies inside the buffer.
        let (level, kind, len) =
            unsafe { ((*cmsg).cmsg_level, (*cmsg).cmsg_type, (*cmsg).cmsg_len) };
        if level == libc::SOL_SOCKET && kind == libc::SCM_RIGHTS {
            // SAFETY: CMSG_LEN(0) is the header's size; the data follows it within `len`.
            let header = unsafe { libc::CMSG_LEN(0) } as usize;
            // `cmsg_len` is a `size_t` on glibc x86-64.
            let count = len.saturating_sub(header) / core::mem::size_of::<c_int>();
            // SAFETY: the data of this message holds `count` descriptors (possibly unaligned).
            let data = unsafe { libc::CMSG_DATA(cmsg) }.cast::<c_int>();
            for i in 0..count {
                // SAFETY: `i < count`, inside the message's data.
                fds.push(unsafe { data.add(i).read_unaligned() });
            }
        }
        // SAFETY: `cmsg` is a non-null header inside the control buffer, which holds
        // `msg_controllen` bytes of control messages by this function's contract, so CMSG_NXTHDR
        // stays within it.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    fds
}

/// Records a successful duplicate of a shim descriptor (and forgets an overwritten one).
fn after_dup(old: c_int, new: c_int) -> c_int {
    if new >= 0 && (fd_kind(old).is_some() || fd_kind(new).is_some()) {
        if let Some(_guard) = Guard::enter() {
            shim::track_dup(old, new);
        }
    }
    new
}

/// Interposed `dup`.
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: libc's dup with the caller's descriptor.
    after_dup(fd, or_enosys(unsafe { real::dup(fd) }, -1))
}

/// Interposed `dup2`.
#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, newfd: c_int) -> c_int {
    // SAFETY: libc's dup2 with the caller's descriptors.
    after_dup(fd, or_enosys(unsafe { real::dup2(fd, newfd) }, -1))
}

/// Interposed `dup3`.
#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, newfd: c_int, flags: c_int) -> c_int {
    // SAFETY: libc's dup3 with the caller's arguments.
    after_dup(fd, or_enosys(unsafe { real::dup3(fd, newfd, flags) }, -1))
}

fn fcntl_result(fd: c_int, cmd: c_int, r: c_int) -> c_int {
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        after_dup(fd, r)
    } else {
        r
    }
}

/// Interposed `fcntl` (`F_DUPFD*` of a shim descriptor is tracked; libdrm_amdgpu dups).
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    // SAFETY: libc's fcntl with the caller's arguments (the optional one as its register).
    fcntl_result(fd, cmd, or_enosys(unsafe { real::fcntl(fd, cmd, arg) }, -1))
}

/// Interposed `fcntl64`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    // SAFETY: libc's `fcntl64` with the caller's arguments (the optional one as its register).
    fcntl_result(
        fd,
        cmd,
        or_enosys(unsafe { real::fcntl64(fd, cmd, arg) }, -1),
    )
}
