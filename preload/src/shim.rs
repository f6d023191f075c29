//! The per-process state behind the hooks: the configuration, the model and its one
//! `kfd_process`, the descriptors the shim handed out, and the tree of files it serves.
//!
//! Everything here runs with the re-entry guard held (see [`Guard`]), so whatever it calls —
//! `std::fs`, the model, the allocator — reaches libc directly.

use crate::config::{ConfigError, ShimConfig};
use crate::drm::{self, RenderInfo};
use crate::logger::{write_all, FdLogger};
use crate::paths::{classify, redirect_into, PathClass};
use crate::real;
use crate::tree;
use core::cell::Cell;
use core::ffi::{c_int, c_uint, c_void, CStr};
use kfd_model::file::FileIdentity;
use kfd_model::topology::Topology;
use kfd_model::user::SelfProcess;
use kfd_model::{Errno, MapSource, Model, Process, RenderNode};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// `ENOENT`: what a path the shim cannot serve looks like.
const ENOENT: Errno = Errno(libc::ENOENT);

/// Descriptors the fd table covers; the shim refuses to hand out larger ones.
pub(crate) const MAX_FDS: usize = 1 << 16;

/// Fd table value: not ours.
const FD_NONE: u32 = 0;
/// Fd table value: a `/dev/kfd` descriptor.
const FD_KFD: u32 = 1;
/// Fd table flag: a render node; the low bits are the minor.
const FD_RENDER: u32 = 0x1_0000;

/// What each descriptor number is to the shim: one atomic per fd, so passing a foreign fd
/// on costs one load.
static FDS: [AtomicU32; MAX_FDS] = [const { AtomicU32::new(FD_NONE) }; MAX_FDS];

/// What a descriptor the shim handed out stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FdKind {
    /// `/dev/kfd`.
    Kfd,
    /// `/dev/dri/renderD<minor>`.
    Render(u32),
}

/// The shim's kind of `fd`, if it handed it out.
#[inline]
pub(crate) fn fd_kind(fd: c_int) -> Option<FdKind> {
    let slot = FDS.get(usize::try_from(fd).ok()?)?;
    match slot.load(Ordering::Acquire) {
        FD_NONE => None,
        FD_KFD => Some(FdKind::Kfd),
        v => Some(FdKind::Render(v & !FD_RENDER)),
    }
}

fn set_fd_kind(fd: c_int, kind: Option<FdKind>) {
    let value = match kind {
        None => FD_NONE,
        Some(FdKind::Kfd) => FD_KFD,
        Some(FdKind::Render(minor)) => FD_RENDER | minor,
    };
    if let Some(slot) = usize::try_from(fd).ok().and_then(|i| FDS.get(i)) {
        slot.store(value, Ordering::Release);
    }
}

thread_local! {
    static IN_SHIM: Cell<bool> = const { Cell::new(false) };
}

/// Held while the shim works on a hooked call; a hooked call made meanwhile on the same
/// thread (by the model, `std`, libc internals) goes straight to libc.
pub(crate) struct Guard(());

impl Guard {
    /// `None` when this thread is already inside the shim.
    #[inline]
    pub(crate) fn enter() -> Option<Guard> {
        IN_SHIM
            .try_with(|inside| (!inside.replace(true)).then_some(Guard(())))
            .ok()
            .flatten()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = IN_SHIM.try_with(|inside| inside.set(false));
    }
}

static LOGGER: FdLogger = FdLogger::new();
static CONFIG: OnceLock<Result<ShimConfig, ConfigError>> = OnceLock::new();
static TOPOLOGY: OnceLock<Topology> = OnceLock::new();

/// The configuration, read (and the logger installed) on first use.
pub(crate) fn config() -> Result<&'static ShimConfig, Errno> {
    CONFIG
        .get_or_init(|| {
            let cfg = ShimConfig::from_env();
            match &cfg {
                Ok(c) => install_logger(c),
                Err(e) => write_all(
                    2,
                    format!("kfd-preload: {e}; the modelled GPU stays absent\n").as_bytes(),
                ),
            }
            cfg
        })
        .as_ref()
        .map_err(|_| ENOENT)
}

fn install_logger(cfg: &ShimConfig) {
    let mut fd = 2;
    if let Some(path) = &cfg.log_file {
        let opened = std::ffi::CString::new(path.as_str()).ok().and_then(|c| {
            // SAFETY: `c` is a NUL-terminated path; the flags create or append a regular file.
            unsafe {
                real::open(
                    c.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
                    0o644,
                )
            }
        });
        match opened {
            Some(f) if f >= 0 => fd = f,
            _ => write_all(
                2,
                format!(
                    "kfd-preload: cannot open log file {path}: {}; logging to stderr\n",
                    std::io::Error::last_os_error()
                )
                .as_bytes(),
            ),
        }
    }
    LOGGER.configure(cfg.log.clone(), fd);
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(cfg.log.max_level());
    }
}

fn topology(cfg: &ShimConfig) -> &'static Topology {
    TOPOLOGY.get_or_init(|| Topology::from_config(&cfg.model_config()))
}

/// The open file behind one or more descriptors the shim handed out or learned of: its
/// duplicates share it, and it goes when the last of them closes (the kernel's file
/// reference count).
#[derive(Debug, Clone)]
enum OpenFile {
    /// `/dev/kfd`, opened by this process.
    Kfd,
    /// `/dev/kfd` opened by another process (a descriptor inherited across `fork` or received
    /// through `SCM_RIGHTS`): the kernel answers `EBADF` to its ioctls.
    ForeignKfd,
    /// A render node file.
    Render(Arc<RenderNode>),
}

/// A descriptor the shim knows: the identity of its open file and what that file is.
#[derive(Debug, Clone)]
struct Descriptor {
    identity: FileIdentity,
    file: OpenFile,
}

/// The model side of one OS process.
struct Shim {
    /// The process this state belongs to (a forked child starts over).
    pid: u32,
    /// Root of the served file tree, NUL-terminated.
    tree: Option<Vec<u8>>,
    /// Writing the tree failed once; do not retry on every path.
    tree_failed: bool,
    model: Option<Model>,
    /// The one `kfd_process` of this OS process, as the kernel keeps one per mm.
    process: Option<Arc<Process>>,
    /// Every descriptor of a device file, by number.
    fds: HashMap<c_int, Descriptor>,
}

static SHIM: Mutex<Option<Shim>> = Mutex::new(None);

/// A malformed `KFD_MODEL_FAULTS` was reported (see [`Shim::model`]).
static FAULTS_REPORTED: AtomicBool = AtomicBool::new(false);

fn lock_shim() -> MutexGuard<'static, Option<Shim>> {
    SHIM.lock().unwrap_or_else(|e| e.into_inner())
}

fn with_shim<R>(
    f: impl FnOnce(&mut Shim, &'static ShimConfig) -> Result<R, Errno>,
) -> Result<R, Errno> {
    let cfg = config()?;
    let mut guard = lock_shim();
    let pid = kfd_model::user::current_pid();
    if guard.as_ref().is_some_and(|s| s.pid != pid) {
        // A forked child: the parent's model has no threads here and its process is not
        // ours (the kernel answers EBADF to a child). Start over without running any
        // destructor of the parent's state; the descriptors it inherited are learned again
        // on first use (see `Shim::descriptor`).
        core::mem::forget(guard.take());
    }
    let shim = guard.get_or_insert_with(|| Shim {
        pid,
        tree: None,
        tree_failed: false,
        model: None,
        process: None,
        fds: HashMap::new(),
    });
    f(shim, cfg)
}

impl Shim {
    fn model(&mut self, cfg: &ShimConfig) -> Result<&Model, Errno> {
        if self.model.is_none() {
            if let Err(e) = &cfg.faults {
                // One line per process, at its first try (not in children that never open
                // the device, such as rocminfo's `lsmod`).
                if !FAULTS_REPORTED.swap(true, Ordering::Relaxed) {
                    write_all(
                        2,
                        format!("kfd-preload: {e}; opening /dev/kfd fails with EINVAL\n")
                            .as_bytes(),
                    );
                }
                return Err(Errno::EINVAL);
            }
            let model = Model::new(cfg.model_config()).inspect_err(|e| {
                log::error!(target: "preload", "building the model ({} × {}) failed: {e}", cfg.gpus, cfg.preset);
            })?;
            log::info!(target: "preload", "pid {}: model of {} × {} up", self.pid, cfg.gpus, cfg.preset);
            self.model = Some(model);
        }
        self.model.as_ref().ok_or(Errno::ENODEV)
    }

    fn process(&mut self, cfg: &ShimConfig) -> Result<Arc<Process>, Errno> {
        if let Some(p) = &self.process {
            return Ok(p.clone());
        }
        let p = Arc::new(self.model(cfg)?.open()?);
        self.process = Some(p.clone());
        KFD_PROCESS_OPENED.store(true, Ordering::Release);
        Ok(p)
    }

    fn tree(&mut self, cfg: &ShimConfig) -> Result<&[u8], Errno> {
        if self.tree.is_none() {
            if self.tree_failed {
                return Err(ENOENT);
            }
            match make_tree(self.pid, cfg) {
                Ok(root) => self.tree = Some(root),
                Err(e) => {
                    log::error!(target: "preload", "cannot write the sysfs tree: {e}");
                    self.tree_failed = true;
                    return Err(ENOENT);
                }
            }
        }
        self.tree
            .as_deref()
            .and_then(|t| t.strip_suffix(b"\0"))
            .ok_or(ENOENT)
    }
}

const TREE_PREFIX: &str = "kfd-preload-";

/// Creates `kfd-preload-<pid>-XXXXXX` in `$TMPDIR` (else `/dev/shm`) and writes the tree into it; returns its path
/// with a trailing NUL.
fn make_tree(pid: u32, cfg: &ShimConfig) -> std::io::Result<Vec<u8>> {
    let base = kfd_model::tmpdirs::base_dir();
    // Trees of processes that died without running their exit handlers.
    kfd_model::tmpdirs::sweep_dead(&base, TREE_PREFIX);
    let mut template = base
        .join(format!("{TREE_PREFIX}{pid}-XXXXXX"))
        .as_os_str()
        .as_bytes()
        .to_vec();
    template.push(0);
    // SAFETY: `template` is a writable NUL-terminated buffer ending in XXXXXX, as mkdtemp
    // requires; it rewrites those six bytes in place.
    let made = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    let root = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(
        template.strip_suffix(b"\0").unwrap_or(&template),
    ));
    if let Err(e) = tree::write_tree(&root, cfg, topology(cfg)) {
        let _ = std::fs::remove_dir_all(&root);
        return Err(e);
    }
    log::debug!(target: "preload", "sysfs tree at {}", root.display());
    Ok(template)
}

/// Removes this process's tree at exit (a forked child leaves its parent's alone).
extern "C" fn remove_tree_at_exit() {
    let _guard = Guard::enter();
    let Ok(shim) = SHIM.try_lock() else {
        return;
    };
    if let Some(s) = shim
        .as_ref()
        .filter(|s| s.pid == kfd_model::user::current_pid())
    {
        if let Some(root) = s.tree.as_deref().and_then(|t| t.strip_suffix(b"\0")) {
            let _ = std::fs::remove_dir_all(std::ffi::OsStr::from_bytes(root));
        }
    }
}

// Runs when the process exits (and if the library were unloaded).
#[used]
#[link_section = ".fini_array"]
static REMOVE_TREE_AT_EXIT: extern "C" fn() = remove_tree_at_exit;

/// Appends this process's shader counters to `KFD_RUN_SUMMARY` at exit (only a process that
/// built a model; a forked child writes its own line only if it built its own).
extern "C" fn write_summary_at_exit() {
    let _guard = Guard::enter();
    let Some(Ok(cfg)) = CONFIG.get() else {
        return;
    };
    let Some(path) = &cfg.summary_file else {
        return;
    };
    let Ok(shim) = SHIM.try_lock() else {
        return;
    };
    let pid = kfd_model::user::current_pid();
    let Some(model) = shim
        .as_ref()
        .filter(|s| s.pid == pid)
        .and_then(|s| s.model.as_ref())
    else {
        return;
    };
    let line = crate::summary::summary_line(pid, cfg.preset, cfg.gpus, &model.shader_counts());
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    if let Err(e) = written {
        write_all(
            2,
            format!("kfd-preload: cannot write the summary to {path}: {e}\n").as_bytes(),
        );
    }
}

#[used]
#[link_section = ".fini_array"]
static WRITE_SUMMARY_AT_EXIT: extern "C" fn() = write_summary_at_exit;

/// Where a path goes.
pub(crate) enum Route<'b> {
    /// Not the shim's: libc as asked.
    Pass,
    /// `/dev/kfd`.
    Kfd,
    /// A modelled render node.
    Render(u32),
    /// `/proc/modules`.
    ProcModules,
    /// Served from the tree at this NUL-terminated path.
    Redirect(&'b CStr),
    /// The shim's answer is this error.
    Fail(Errno),
}

/// Routes an absolute path; `buf` receives a redirected path.
pub(crate) fn route<'b>(path: &CStr, buf: &'b mut [u8]) -> Route<'b> {
    let bytes = path.to_bytes();
    // Paths outside /dev, /sys, /proc never need the configuration.
    if !matches!(bytes.get(..5), Some(b"/dev/" | b"/sys/")) && !bytes.starts_with(b"/proc/") {
        return Route::Pass;
    }
    let gpus = match config() {
        Ok(c) => c.gpus,
        Err(_) => return Route::Pass,
    };
    match classify(bytes, gpus) {
        PathClass::Other => Route::Pass,
        PathClass::Kfd => Route::Kfd,
        PathClass::RenderNode(m) => Route::Render(m),
        PathClass::ProcModules => Route::ProcModules,
        PathClass::FdLink => fd_link_route(path),
        PathClass::Redirect { prefix, rest } => {
            let routed = with_shim(|s, cfg| {
                let root = s.tree(cfg)?;
                let out =
                    redirect_into(buf, root, prefix, rest).ok_or(Errno(libc::ENAMETOOLONG))?;
                CStr::from_bytes_with_nul(out).map_err(|_| Errno::EINVAL)
            });
            match routed {
                Ok(p) => {
                    log::trace!(target: "preload", "{} -> {}", path.to_string_lossy(), p.to_string_lossy());
                    Route::Redirect(p)
                }
                Err(e) => Route::Fail(e),
            }
        }
    }
}

/// A descriptor standing for a device file: an empty memfd named for the device (see
/// [`crate::paths::KFD_FILE_NAME`]), so close/dup/poll/fcntl work and every process can
/// tell what an inherited or received descriptor is.
fn device_fd(name: &CStr, flags: c_int) -> Result<c_int, Errno> {
    let memfd_flags = if flags & libc::O_CLOEXEC != 0 {
        libc::MFD_CLOEXEC
    } else {
        0
    };
    // SAFETY: `name` is NUL-terminated; memfd_create has no other preconditions.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), memfd_flags) };
    if fd < 0 {
        return Err(Errno(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EMFILE),
        ));
    }
    if fd as usize >= MAX_FDS {
        // SAFETY: closing the descriptor just created.
        unsafe { real::close(fd) };
        return Err(Errno(libc::EMFILE));
    }
    Ok(fd)
}

/// The memfd name of render node `minor`'s descriptors.
fn render_file_name(minor: u32) -> std::ffi::CString {
    let mut name = crate::paths::RENDER_FILE_PREFIX.to_vec();
    name.extend_from_slice(minor.to_string().as_bytes());
    // The prefix and the digits hold no NUL.
    std::ffi::CString::new(name).unwrap_or_default()
}

fn check_device_flags(flags: c_int) -> Result<(), Errno> {
    if flags & libc::O_DIRECTORY != 0 {
        return Err(Errno(libc::ENOTDIR));
    }
    Ok(())
}

impl Shim {
    /// Records descriptor `fd` of `file`.
    fn insert(&mut self, fd: c_int, identity: FileIdentity, file: OpenFile) {
        let kind = match &file {
            OpenFile::Kfd | OpenFile::ForeignKfd => FdKind::Kfd,
            OpenFile::Render(r) => FdKind::Render(r.minor()),
        };
        self.fds.insert(fd, Descriptor { identity, file });
        set_fd_kind(fd, Some(kind));
    }

    /// What descriptor `fd` stands for: one the shim handed out, a duplicate of one made
    /// behind its back (received through `SCM_RIGHTS`), or one of a device file another
    /// process opened (inherited across `fork`, received from another process), learned by
    /// the memfd name in its procfs link. `None`: not a device file of the shim's.
    fn descriptor(&mut self, fd: c_int, cfg: &ShimConfig) -> Option<Descriptor> {
        if let Some(d) = self.fds.get(&fd) {
            return Some(d.clone());
        }
        let identity = FileIdentity::of(fd).ok()?;
        if let Some(same) = self.fds.values().find(|d| d.identity == identity).cloned() {
            log::debug!(target: "preload", "fd {fd} names the same file as a known descriptor ({:?})", same.file);
            self.insert(fd, identity, same.file.clone());
            return Some(same);
        }
        let file = match device_behind_fd(fd, cfg.gpus)? {
            PathClass::Kfd => {
                log::debug!(target: "preload", "fd {fd}: /dev/kfd of another process");
                OpenFile::ForeignKfd
            }
            PathClass::RenderNode(minor) => {
                // The file another process opened cannot be shared with it until one model
                // serves every process; this process gets a render file of its own on the
                // same GPU (its GEM objects are this process's).
                log::info!(target: "preload", "fd {fd}: renderD{minor} opened by another process; this process uses its own file of that GPU");
                let mut node = self.model(cfg).ok()?.open_render_node(minor).ok()?;
                node.bind_fd(fd).ok()?;
                OpenFile::Render(Arc::new(node))
            }
            _ => return None,
        };
        self.insert(fd, identity, file.clone());
        Some(Descriptor { identity, file })
    }
}

/// What the procfs link of descriptor `fd` says it is (see [`crate::paths::device_behind_link`]).
fn device_behind_fd(fd: c_int, gpus: u32) -> Option<PathClass<'static>> {
    let link = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    device_behind_path(&link, gpus)
}

/// What the procfs link at `link` points to, as far as the shim is concerned.
fn device_behind_path(link: &CStr, gpus: u32) -> Option<PathClass<'static>> {
    let mut target = [0u8; 256];
    // SAFETY: `link` is NUL-terminated and `target` is writable for its length.
    let n = unsafe { real::readlink(link.as_ptr(), target.as_mut_ptr().cast(), target.len()) }?;
    let n = usize::try_from(n).ok()?;
    Some(crate::paths::device_behind_link(target.get(..n)?, gpus))
}

/// `open("/dev/kfd")`: a new descriptor on this process's one `kfd_process`.
pub(crate) fn open_kfd(flags: c_int) -> Result<c_int, Errno> {
    check_device_flags(flags)?;
    with_shim(|s, cfg| {
        s.process(cfg)?;
        let name = std::ffi::CString::new(crate::paths::KFD_FILE_NAME).unwrap_or_default();
        let fd = device_fd(&name, flags)?;
        let identity = FileIdentity::of(fd)?;
        s.insert(fd, identity, OpenFile::Kfd);
        log::debug!(target: "preload", "open /dev/kfd = fd {fd}");
        Ok(fd)
    })
}

/// `open("/dev/dri/renderD<minor>")`: a new render file.
pub(crate) fn open_render(minor: u32, flags: c_int) -> Result<c_int, Errno> {
    check_device_flags(flags)?;
    with_shim(|s, cfg| {
        let mut node = s.model(cfg)?.open_render_node(minor)?;
        let fd = device_fd(&render_file_name(minor), flags)?;
        let bound = node.bind_fd(fd).and_then(|()| FileIdentity::of(fd));
        let identity = match bound {
            Ok(id) => id,
            Err(e) => {
                // SAFETY: closing the descriptor just created, which nobody else knows.
                unsafe { real::close(fd) };
                return Err(e);
            }
        };
        s.insert(fd, identity, OpenFile::Render(Arc::new(node)));
        log::debug!(target: "preload", "open /dev/dri/renderD{minor} = fd {fd}");
        Ok(fd)
    })
}

/// `open` of a descriptor's procfs link (`/proc/self/fd/N` and the like): when it names a
/// device file of the shim's, opening it is a new open of that device, as it is in the
/// kernel (a character device's `open` runs again); anything else passes to libc.
pub(crate) fn fd_link_route(path: &CStr) -> Route<'static> {
    let Ok(cfg) = config() else {
        return Route::Pass;
    };
    match device_behind_path(path, cfg.gpus) {
        Some(PathClass::Kfd) => Route::Kfd,
        Some(PathClass::RenderNode(m)) => Route::Render(m),
        _ => Route::Pass,
    }
}

/// `open("/proc/modules")`: the real list (if any) plus the `amdgpu` line, in a memfd.
pub(crate) fn open_proc_modules(flags: c_int) -> Result<c_int, Errno> {
    if flags & libc::O_ACCMODE != libc::O_RDONLY {
        return Err(Errno::EACCES);
    }
    let mut text = std::fs::read("/proc/modules").unwrap_or_default();
    if !text
        .split(|&b| b == b'\n')
        .any(|l| l.starts_with(b"amdgpu "))
    {
        text.extend_from_slice(tree::PROC_MODULES_AMDGPU.as_bytes());
    }
    let fd = device_fd(c"proc-modules", flags)?;
    write_all(fd, &text);
    // SAFETY: rewinding a descriptor this function owns.
    unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    Ok(fd)
}

/// A descriptor closes: forget what it was (before libc reuses the number). The file itself
/// goes with its last descriptor.
pub(crate) fn forget_fd(fd: c_int) {
    let Some(kind) = fd_kind(fd) else {
        return;
    };
    set_fd_kind(fd, None);
    let dropped = with_shim(|s, _| Ok(s.fds.remove(&fd)));
    log::debug!(target: "preload", "close fd {fd} ({kind:?})");
    // A render file's last descriptor: the file is released here, outside the shim's lock.
    drop(dropped);
}

/// Forgets every descriptor of the shim's in `first..=last` (`close_range`, `closefrom`).
pub(crate) fn forget_fd_range(first: c_uint, last: c_uint) {
    let end = usize::try_from(last).map_or(MAX_FDS, |l| l.saturating_add(1).min(MAX_FDS));
    let start = usize::try_from(first).unwrap_or(MAX_FDS).min(end);
    for (fd, slot) in FDS.iter().enumerate().take(end).skip(start) {
        if slot.load(Ordering::Acquire) != FD_NONE {
            forget_fd(fd as c_int);
        }
    }
}

/// `dup`-like calls: `new` now names what `old` names.
pub(crate) fn track_dup(old: c_int, new: c_int) {
    if old == new || new < 0 {
        return;
    }
    forget_fd(new);
    if fd_kind(old).is_none() {
        return;
    }
    let _ = with_shim(|s, cfg| {
        if let Some(d) = s.descriptor(old, cfg) {
            s.insert(new, d.identity, d.file);
        }
        Ok(())
    });
}

/// Descriptors received through `SCM_RIGHTS`: those that stand for a device file of the
/// shim's (a duplicate of one of this process's, or one another process opened) become
/// known. A received number can only be a descriptor the shim has not seen.
pub(crate) fn track_received(fds: impl Iterator<Item = c_int>) {
    for fd in fds {
        forget_fd(fd);
        if !maybe_device_fd(fd) {
            continue;
        }
        let _ = with_shim(|s, cfg| {
            s.descriptor(fd, cfg);
            Ok(())
        });
    }
}

/// A cheap first look: the shim's descriptors are memfds, regular files with no link.
fn maybe_device_fd(fd: c_int) -> bool {
    // SAFETY: `stat` is plain integers; fstat fills it or fails.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `st` is writable; a bad descriptor only fails.
    let ok = unsafe { real::fstat(fd, &mut st) } == Some(0);
    ok && st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_nlink == 0
}

/// Set once this OS process opened the model's `/dev/kfd`: until then `munmap` has nothing to
/// tell the driver, and costs one load.
static KFD_PROCESS_OPENED: AtomicBool = AtomicBool::new(false);

/// The MMU notifier a real kernel gives amdkfd: the client is about to unmap
/// `[addr, addr+len)`, so its SVM ranges there go and no GPU maps them any more. Called
/// before the pages go; never blocks on the driver (a busy process defers the work).
pub(crate) fn notify_cpu_unmap(addr: u64, len: u64) {
    if let Some(p) = notified_process() {
        p.svm_cpu_unmapped(addr, len);
    }
}

/// The MMU notifier for `mprotect`: called after the protection of `[addr, addr+len)`
/// changed; never blocks on the driver.
pub(crate) fn notify_cpu_protect(addr: u64, len: u64) {
    if let Some(p) = notified_process() {
        p.svm_cpu_protection_changed(addr, len);
    }
}

/// The MMU notifier for `fork`, in the parent: its private pages became copy-on-write.
pub(crate) fn notify_fork() {
    if let Some(p) = notified_process() {
        p.svm_forked();
    }
}

/// This OS process's `kfd_process`, if it opened `/dev/kfd` and the shim is not busy.
fn notified_process() -> Option<Arc<Process>> {
    if !KFD_PROCESS_OPENED.load(Ordering::Acquire) {
        return None;
    }
    // Never wait for the shim's lock here: its holder may be waiting for this thread (an
    // engine thread being joined). A missed unmap is found by the driver's next look.
    // (A missed protection change is not found later: the GPUs keep the old protection.)
    let pid = kfd_model::user::current_pid();
    match SHIM.try_lock() {
        Ok(guard) => guard
            .as_ref()
            .filter(|s| s.pid == pid)
            .and_then(|s| s.process.clone()),
        Err(_) => None,
    }
}

/// The `kfd_process` a descriptor reaches; `EBADF` for a descriptor inherited from a parent
/// process (as the kernel answers).
fn kfd_process(fd: c_int) -> Result<Arc<Process>, Errno> {
    with_shim(|s, cfg| match s.descriptor(fd, cfg).map(|d| d.file) {
        Some(OpenFile::Kfd) => s.process.clone().ok_or(Errno::EBADF),
        _ => Err(Errno::EBADF),
    })
}

/// The render file a descriptor names.
fn render_file(fd: c_int) -> Result<Arc<RenderNode>, Errno> {
    with_shim(|s, cfg| match s.descriptor(fd, cfg).map(|d| d.file) {
        Some(OpenFile::Render(r)) => Ok(r),
        _ => Err(Errno::EBADF),
    })
}

/// The kernel-internal restart code never reaches user space: a wait cut short by a signal
/// is `EINTR` to the caller.
fn user_errno(e: Errno) -> Errno {
    if e == Errno::ERESTARTSYS {
        Errno::EINTR
    } else {
        e
    }
}

/// `ioctl` on a `/dev/kfd` descriptor: the argument is copied in and out with the kernel's
/// `copy_from_user`/`copy_to_user` semantics (a bad pointer is `EFAULT`).
///
/// # Safety
///
/// The promise a C client makes to the kernel when it calls `ioctl(2)`: the addresses inside
/// the argument (queue buffers, user pointers, output arrays) are its own memory for as long
/// as the driver and the GPU use them ([`Process::ioctl`]'s contract).
pub(crate) unsafe fn kfd_ioctl(fd: c_int, request: u64, arg: *mut c_void) -> Result<c_int, Errno> {
    let process = kfd_process(fd)?;
    let request = u32::try_from(request).map_err(|_| Errno::ENOTTY)?;
    let size = kfd_sys::ioc_size(request);
    let addr = arg as u64;
    let mut inline = [0u8; 512];
    let mut before = [0u8; 512];
    let mut heap;
    let mut heap_before;
    let (buf, orig) = if size <= inline.len() {
        (&mut inline[..size], &mut before[..size])
    } else {
        heap = vec![0u8; size];
        heap_before = vec![0u8; size];
        (&mut heap[..], &mut heap_before[..])
    };
    SelfProcess.read(addr, buf)?;
    orig.copy_from_slice(buf);
    log::trace!(target: "preload", "ioctl fd {fd} {request:#010x} in  {buf:02x?}");
    // SAFETY: this function's contract is `Process::ioctl`'s: the addresses in the client's
    // argument are its memory for as long as the driver and the GPU use them.
    let result = unsafe { process.ioctl(request, buf) };
    log::trace!(target: "preload", "ioctl fd {fd} {request:#010x} out {buf:02x?} = {result:?}");
    // Copy back only what the driver changed: an IOW struct may live in read-only memory.
    if buf != orig {
        // SAFETY: `addr` is the client's ioctl argument, `size` bytes the request code names,
        // which our contract says is its memory for the kernel to write back into.
        unsafe { SelfProcess.write(addr, buf) }?;
    }
    result.map_err(user_errno)
}

/// `ioctl` on a render node: the DRM queries libdrm sends, and the buffer-object ioctls of
/// libdrm_amdgpu (answered by the model's render-node file behind `fd`).
///
/// # Safety
///
/// The promise a C client makes to the kernel when it calls `ioctl(2)` on a DRM device: the
/// argument (the bytes its request code names) and the output buffers its fields point to
/// (version strings, info query results, GEM create info) are its own memory for the kernel
/// to write until the call returns.
pub(crate) unsafe fn render_ioctl(
    fd: c_int,
    minor: u32,
    request: u64,
    arg: *mut c_void,
) -> Result<c_int, Errno> {
    let cfg = config()?;
    let request = u32::try_from(request).map_err(|_| Errno::ENOTTY)?;
    if let Some(table_cmd) = drm::gem_request(request) {
        let file = render_file(fd)?;
        let user_size = kfd_sys::ioc_size(request);
        let size = kfd_sys::ioc_size(table_cmd);
        let addr = arg as u64;
        let mut buf = vec![0u8; size];
        let n_in = user_size.min(size);
        let both = kfd_sys::ioc_dir(request) & kfd_sys::ioc_dir(table_cmd);
        if both & kfd_sys::IOC_WRITE != 0 {
            SelfProcess.read(addr, &mut buf[..n_in])?;
        }
        let read = |at: u64, out: &mut [u8]| SelfProcess.read(at, out);
        let answer = drm::gem_answer(&file, table_cmd, &buf, &read).inspect_err(|e| {
            log::debug!(target: "preload", "renderD{minor}: GEM ioctl {request:#010x} = {e}");
        })?;
        for w in &answer.writes {
            // SAFETY: `w.addr` is an output pointer the client put in its GEM ioctl argument,
            // its memory to write by this function's contract.
            unsafe { SelfProcess.write(w.addr, &w.data) }?;
        }
        if let (true, Some(new_arg)) = (both & kfd_sys::IOC_READ != 0, &answer.arg) {
            // SAFETY: `addr` is the client's argument, at most the `user_size` bytes its
            // request code names: its memory to write by this function's contract.
            unsafe { SelfProcess.write(addr, &new_arg[..n_in.min(new_arg.len())]) }?;
        }
        return Ok(0);
    }
    let node = topology(cfg)
        .gpus()
        .find(|n| n.properties.drm_render_minor == u64::from(minor))
        .ok_or(Errno::ENODEV)?;
    let info = RenderInfo {
        node,
        preset: cfg.preset,
        kernel: cfg.kernel,
    };
    let size = kfd_sys::ioc_size(request);
    let addr = arg as u64;
    let mut buf = vec![0u8; size];
    SelfProcess.read(addr, &mut buf)?;
    let answer = drm::answer(&info, request, &buf).inspect_err(|e| {
        log::debug!(target: "preload", "renderD{minor}: DRM ioctl {request:#010x} = {e}");
    })?;
    for w in &answer.writes {
        // SAFETY: `w.addr` is an output pointer the client put in its DRM ioctl argument (with
        // the room it gave), its memory to write by this function's contract.
        unsafe { SelfProcess.write(w.addr, &w.data) }?;
    }
    if let Some(new_arg) = &answer.arg {
        // SAFETY: `addr` is the client's argument, at most the `size` bytes its request code
        // names: its memory to write by this function's contract.
        unsafe { SelfProcess.write(addr, new_arg.get(..size).unwrap_or(new_arg)) }?;
    }
    Ok(0)
}

/// What `mmap` of `len` bytes at `offset` of a shim descriptor maps.
pub(crate) fn map_source(
    fd: c_int,
    kind: FdKind,
    offset: u64,
    len: u64,
) -> Result<MapSource, Errno> {
    match kind {
        FdKind::Kfd => kfd_process(fd)?.mmap(offset, len),
        FdKind::Render(_) => render_file(fd)?.mmap(offset, len),
    }
}

/// A doorbell page of `/dev/kfd` was mapped at `addr`: the model write-protects it while its
/// engine thread sleeps, so the client's next store wakes it at once (without, it notices
/// the store at its next poll, up to 16 ms later).
///
/// # Safety
/// `addr..addr + len` is the mapping the shim just made of the model's doorbell memory.
pub(crate) unsafe fn watch_doorbell(addr: u64, len: u64) {
    let Ok(model) = with_shim(|s, _| s.model.clone().ok_or(Errno::ENODEV)) else {
        return;
    };
    // SAFETY: the caller's contract.
    if let Err(e) = unsafe { model.watch_doorbell_mapping(addr, len) } {
        log::info!(target: "preload", "doorbell mapping {addr:#x} not watched ({e}): the model polls for it");
    }
}

/// The `stat` of a device node the shim answers: a character device, read-write for all.
pub(crate) fn device_stat(kind: FdKind) -> libc::stat {
    let (major, minor) = match kind {
        FdKind::Kfd => (KFD_MAJOR, 0),
        FdKind::Render(m) => (crate::paths::DRM_MAJOR, m),
    };
    // SAFETY: `stat` is plain integers; all-zero is a valid value.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    st.st_dev = libc::makedev(0, 6);
    st.st_ino = 0x4b46_4400 + u64::from(minor) + u64::from(major) * 1024;
    st.st_nlink = 1;
    st.st_mode = libc::S_IFCHR | 0o666;
    st.st_rdev = libc::makedev(major, minor);
    st.st_blksize = 4096;
    st
}

/// The character-device major the shim gives `/dev/kfd` (dynamic on real systems).
pub(crate) const KFD_MAJOR: u32 = 235;

/// The same as a `statx` answer.
pub(crate) fn device_statx(kind: FdKind) -> libc::statx {
    let st = device_stat(kind);
    // SAFETY: `statx` is plain integers; all-zero is a valid value.
    let mut sx: libc::statx = unsafe { core::mem::zeroed() };
    sx.stx_mask = libc::STATX_BASIC_STATS;
    sx.stx_blksize = st.st_blksize as u32;
    sx.stx_nlink = st.st_nlink as u32;
    sx.stx_mode = st.st_mode as u16;
    sx.stx_ino = st.st_ino;
    sx.stx_rdev_major = libc::major(st.st_rdev);
    sx.stx_rdev_minor = libc::minor(st.st_rdev);
    sx.stx_dev_major = libc::major(st.st_dev);
    sx.stx_dev_minor = libc::minor(st.st_dev);
    sx
}
