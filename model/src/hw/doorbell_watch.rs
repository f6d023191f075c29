//! Noticing a doorbell store of an unmodified client while the engine thread sleeps.
//!
//! A client rings a doorbell with a plain store into its mapping of the doorbell page: nothing
//! the model can see, short of polling. Polling every 100 µs costs a few percent of a core;
//! sleeping up to [`DEEP_IDLE_SLEEP`](crate::hw::engine::DEEP_IDLE_SLEEP) misses the store by
//! up to 16 ms. Instead, the clients' doorbell mappings are registered with a
//! `userfaultfd` in write-protect mode: before the engine thread goes to sleep it
//! write-protects them ([`DoorbellWatch::arm`]) and then sleeps in [`DoorbellWatch::wait`],
//! a `ppoll` on an `eventfd` (and the `userfaultfd`). The first store after that faults, and
//! the fault is resolved on the storing thread itself: the `userfaultfd` has
//! `UFFD_FEATURE_SIGBUS`, so the store raises SIGBUS, whose handler (installed once per
//! process, chaining to any earlier one for addresses it does not watch) lifts the
//! protection of that page, counts the fault and writes the engine's `eventfd`; the store
//! then completes at once, without waiting for any other thread, and the engine thread
//! wakes to find it. One thread wake-up between the store and the pass that sees it. (Where
//! the SIGBUS feature is refused, faults are queued on the `userfaultfd` instead and the
//! engine thread resolves them when it wakes: the store waits for that.) Asleep, the model costs
//! no CPU; awake, the pages are writable and cost nothing either (the engine lifts the
//! protection as soon as it finds work, [`DoorbellWatch::disarm`]). Where `userfaultfd` is
//! not available (an old kernel, a seccomp filter), [`DoorbellWatch::new`] fails and the
//! engine keeps its polling sleep.
//!
//! Linux ABI (`linux/userfaultfd.h`): `userfaultfd(2)` with `UFFD_USER_MODE_ONLY`, the
//! `UFFDIO_API`, `UFFDIO_REGISTER` (mode WP) and `UFFDIO_WRITEPROTECT` ioctls, and 32-byte
//! `uffd_msg` records whose `UFFD_EVENT_PAGEFAULT` carries `UFFD_PAGEFAULT_FLAG_WP`;
//! with `UFFD_FEATURE_SIGBUS` a fault raises SIGBUS (`BUS_ADRERR`, `si_addr` the address).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `UFFD_API`.
const UFFD_API: u64 = 0xAA;
/// `UFFD_USER_MODE_ONLY`: only faults from user mode (allowed without privileges).
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
/// `UFFD_FEATURE_WP_HUGETLBFS_SHMEM`: write protection of shared memory (the doorbell page
/// is a memfd).
const UFFD_FEATURE_WP_HUGETLBFS_SHMEM: u64 = 1 << 12;
/// `UFFD_FEATURE_SIGBUS`: a fault raises SIGBUS in the faulting thread instead of waiting.
const UFFD_FEATURE_SIGBUS: u64 = 1 << 7;
/// `UFFDIO_REGISTER_MODE_WP`.
const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
/// `UFFDIO_WRITEPROTECT_MODE_WP`.
const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1 << 0;
/// `UFFD_EVENT_PAGEFAULT`.
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
/// `UFFD_PAGEFAULT_FLAG_WP`.
const UFFD_PAGEFAULT_FLAG_WP: u64 = 1 << 1;

/// `_IOWR('\xAA', nr, size)`.
const fn uffdio(nr: u64, size: usize) -> u64 {
    (3 << 30) | ((size as u64) << 16) | (0xAA << 8) | nr
}
/// `UFFDIO_API`: `struct uffdio_api` is 24 bytes.
const UFFDIO_API: u64 = uffdio(0x3F, 24);
/// `UFFDIO_REGISTER`: `struct uffdio_register` is 32 bytes.
const UFFDIO_REGISTER: u64 = uffdio(0x00, 32);
/// `UFFDIO_WRITEPROTECT`: `struct uffdio_writeprotect` is 24 bytes.
const UFFDIO_WRITEPROTECT: u64 = uffdio(0x06, 24);

/// `struct uffdio_api`.
#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

/// `struct uffdio_register`.
#[repr(C)]
struct UffdioRegister {
    start: u64,
    len: u64,
    mode: u64,
    ioctls: u64,
}

/// `struct uffdio_writeprotect`.
#[repr(C)]
struct UffdioWriteprotect {
    start: u64,
    len: u64,
    mode: u64,
}

/// Watches the clients' doorbell mappings for stores while the engine thread sleeps.
#[derive(Debug)]
pub struct DoorbellWatch {
    uffd: OwnedFd,
    /// Its slot in the SIGBUS handler's table (`None`: faults are queued on `uffd`).
    slot: Option<usize>,
    /// The slot's fault count the engine thread has seen.
    faults_seen: AtomicU64,
    /// Ends a [`DoorbellWatch::wait`] early (the model's own wake-ups: a doorbell rung through
    /// the thunk, a runlist mapped, the model stopping).
    wake_fd: OwnedFd,
    /// Registered mappings: start and length.
    ranges: Mutex<Vec<(u64, u64)>>,
    /// The mappings are write-protected now.
    armed: AtomicBool,
    stop: AtomicBool,
    /// When a store last faulted: the faulting store completes only after the protection is
    /// lifted, so the engine must not protect again right away.
    last_fault: Mutex<Option<Instant>>,
    /// Times a store woke the engine thread.
    wakeups: AtomicU64,
}

/// How long after a fault the mappings stay writable at least (the store that faulted, and
/// the client's next ones, go through; the engine thread is awake meanwhile).
pub const REARM_AFTER_FAULT: Duration = Duration::from_millis(20);

fn uffd_ioctl<T>(fd: &OwnedFd, request: u64, arg: &mut T) -> io::Result<()> {
    // SAFETY: `arg` is the `repr(C)` struct whose size `request` encodes, valid for the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg as *mut T) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl DoorbellWatch {
    /// Opens a `userfaultfd` with write protection of shared memory (and the `eventfd` that
    /// ends a wait).
    pub fn new() -> io::Result<Arc<DoorbellWatch>> {
        let (uffd, sigbus) = match open_uffd(UFFD_FEATURE_WP_HUGETLBFS_SHMEM | UFFD_FEATURE_SIGBUS)
        {
            Ok(fd) => (fd, true),
            Err(e) => {
                log::debug!(target: "hw::engine", "userfaultfd without SIGBUS ({e}): the engine resolves doorbell faults");
                (open_uffd(UFFD_FEATURE_WP_HUGETLBFS_SHMEM)?, false)
            }
        };
        // SAFETY: eventfd takes an initial value and flags.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor that nothing else owns.
        let wake_fd = unsafe { OwnedFd::from_raw_fd(efd) };
        let slot = if sigbus {
            Some(sigbus::claim_slot(uffd.as_raw_fd(), wake_fd.as_raw_fd())?)
        } else {
            None
        };
        let faults_seen = AtomicU64::new(slot.map_or(0, sigbus::faults));
        Ok(Arc::new(DoorbellWatch {
            uffd,
            slot,
            faults_seen,
            wake_fd,
            ranges: Mutex::new(Vec::new()),
            armed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            last_fault: Mutex::new(None),
            wakeups: AtomicU64::new(0),
        }))
    }

    /// Registers a client's mapping of a doorbell page (`len` bytes at `addr`).
    ///
    /// # Safety
    /// `addr..addr + len` must be a shared mapping of the model's doorbell memory that stays
    /// a doorbell mapping while it is mapped: stores into it may wait (microseconds) for the
    /// engine thread.
    pub unsafe fn watch(&self, addr: u64, len: u64) -> io::Result<()> {
        let mut reg = UffdioRegister {
            start: addr,
            len,
            mode: UFFDIO_REGISTER_MODE_WP,
            ioctls: 0,
        };
        uffd_ioctl(&self.uffd, UFFDIO_REGISTER, &mut reg)?;
        self.lock().push((addr, len));
        // Armed ranges must all be protected: arm again before the next sleep.
        self.armed.store(false, Ordering::Release);
        log::debug!(target: "hw::engine", "watching doorbell mapping {addr:#x}+{len:#x}");
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        self.ranges.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets or clears the write protection of every registered mapping; a mapping the
    /// client unmapped is dropped. Clearing it also lets a store that faulted complete.
    fn protect(&self, on: bool) {
        let mut ranges = self.lock();
        ranges.retain(|&(start, len)| {
            let mut wp = UffdioWriteprotect {
                start,
                len,
                mode: if on { UFFDIO_WRITEPROTECT_MODE_WP } else { 0 },
            };
            match uffd_ioctl(&self.uffd, UFFDIO_WRITEPROTECT, &mut wp) {
                Ok(()) => true,
                Err(e) => {
                    log::debug!(target: "hw::engine", "doorbell mapping {start:#x} dropped: {e}");
                    false
                }
            }
        });
    }

    /// Before the engine thread sleeps: write-protects the doorbell mappings. `true` when it
    /// just did (the engine should look at the doorbells once more: a store may have landed
    /// before the protection), `false` when they already were protected or none is watched.
    pub fn arm(&self) -> bool {
        if self.armed.load(Ordering::Acquire)
            || self.stop.load(Ordering::Acquire)
            || self.lock().is_empty()
        {
            return false;
        }
        let recent = self
            .last_fault
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|t| t.elapsed() < REARM_AFTER_FAULT);
        if recent {
            return false;
        }
        self.armed.store(true, Ordering::Release);
        self.protect(true);
        log::trace!(target: "hw::engine", "doorbell mappings write-protected");
        true
    }

    /// How many times a doorbell store woke the engine thread.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// Whether the mappings are protected now.
    pub fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Acquire)
    }

    /// The engine found work: lifts the protection (a store that faulted in between
    /// completes), so the client's stores cost nothing while the engine is awake.
    pub fn disarm(&self) {
        if self.armed.swap(false, Ordering::AcqRel) {
            self.protect(false);
        }
    }

    /// Ends the current or next [`DoorbellWatch::wait`].
    pub fn notify(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writing 8 bytes from a live buffer to our eventfd. A full counter (never
        // reached: each wait drains it) only means a wake-up is pending already.
        let _ = unsafe { libc::write(self.wake_fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// The engine thread's sleep while the mappings are protected: up to `timeout`, ended by
    /// a store into a watched mapping (then the protection is lifted, the store completes,
    /// and `true` is returned: work is coming) or by [`DoorbellWatch::notify`].
    pub fn wait(&self, timeout: Duration) -> bool {
        let mut pfds = [
            libc::pollfd {
                fd: self.uffd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.wake_fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: two valid pollfds, a valid timeout and no signal mask.
        let n = unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if n <= 0 {
            return false;
        }
        if pfds[1].revents != 0 {
            let mut count = [0u8; 8];
            // SAFETY: reading 8 bytes into a live buffer from our non-blocking eventfd.
            let _ = unsafe {
                libc::read(
                    self.wake_fd.as_raw_fd(),
                    count.as_mut_ptr().cast(),
                    count.len(),
                )
            };
        }
        let queued = pfds[0].revents != 0 && self.take_queued_faults();
        queued || self.take_sigbus_faults()
    }

    /// Whether the SIGBUS handler resolved a store into the mappings since the last look;
    /// if so the engine lifts every protection (the handler lifted only the faulting page's).
    fn take_sigbus_faults(&self) -> bool {
        let Some(slot) = self.slot else {
            return false;
        };
        let now = sigbus::faults(slot);
        if self.faults_seen.swap(now, Ordering::AcqRel) == now {
            return false;
        }
        self.faulted();
        true
    }

    /// After a store faulted: the mappings stay writable for a while.
    fn faulted(&self) {
        self.armed.store(false, Ordering::Release);
        self.protect(false);
        *self.last_fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.wakeups.fetch_add(1, Ordering::Relaxed);
        log::trace!(target: "hw::engine", "doorbell store while asleep: woken");
    }

    /// Reads the pending `userfaultfd` messages; on a write-protect fault, lifts every
    /// protection (the faulting store completes) and returns `true`.
    fn take_queued_faults(&self) -> bool {
        let mut msg = [0u8; 32];
        let mut faulted = false;
        loop {
            // SAFETY: reading into a buffer of `msg.len()` bytes.
            let r =
                unsafe { libc::read(self.uffd.as_raw_fd(), msg.as_mut_ptr().cast(), msg.len()) };
            if r != msg.len() as isize {
                break;
            }
            let flags = u64::from_le_bytes(msg[8..16].try_into().unwrap_or([0; 8]));
            if msg[0] == UFFD_EVENT_PAGEFAULT && flags & UFFD_PAGEFAULT_FLAG_WP != 0 {
                faulted = true;
            }
        }
        if faulted {
            self.faulted();
        }
        faulted
    }

    /// Lifts every protection for good (the engine thread is stopping).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.armed.store(false, Ordering::Release);
        self.protect(false);
        self.notify();
    }
}

impl Drop for DoorbellWatch {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            sigbus::release_slot(slot);
        }
    }
}

/// Opens a non-blocking, user-mode-only `userfaultfd` with `features`.
fn open_uffd(features: u64) -> io::Result<OwnedFd> {
    let flags = libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY;
    // SAFETY: the userfaultfd system call takes only flags.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that nothing else owns.
    let uffd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    let mut api = UffdioApi {
        api: UFFD_API,
        features,
        ioctls: 0,
    };
    uffd_ioctl(&uffd, UFFDIO_API, &mut api)?;
    Ok(uffd)
}

/// The process's SIGBUS handler for write-protect faults on watched doorbell pages. It only
/// touches atomics and makes async-signal-safe system calls (`ioctl`, `write`).
mod sigbus {
    use super::{UffdioWriteprotect, UFFDIO_WRITEPROTECT};
    use std::io;
    use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// Watches at once (one per model in the process).
    const SLOTS: usize = 64;
    /// Per slot: the `userfaultfd` (-1: free), its engine's `eventfd`, faults resolved.
    static UFFD: [AtomicI32; SLOTS] = [const { AtomicI32::new(-1) }; SLOTS];
    static WAKE: [AtomicI32; SLOTS] = [const { AtomicI32::new(-1) }; SLOTS];
    static FAULTS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
    /// The SIGBUS disposition before ours (set once, when ours is installed).
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

    /// Registers a watch's descriptors and installs the handler if it is not yet.
    pub(super) fn claim_slot(uffd: i32, wake: i32) -> io::Result<usize> {
        install()?;
        for slot in 0..SLOTS {
            if WAKE[slot]
                .compare_exchange(-1, wake, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                UFFD[slot].store(uffd, Ordering::Release);
                return Ok(slot);
            }
        }
        Err(io::Error::other(
            "too many doorbell watches in this process",
        ))
    }

    /// Frees a slot (its descriptors are about to close).
    pub(super) fn release_slot(slot: usize) {
        UFFD[slot].store(-1, Ordering::Release);
        WAKE[slot].store(-1, Ordering::Release);
    }

    /// Faults the handler resolved for `slot`.
    pub(super) fn faults(slot: usize) -> u64 {
        FAULTS[slot].load(Ordering::Acquire)
    }

    fn install() -> io::Result<()> {
        let mut err = None;
        PREVIOUS.get_or_init(|| {
            // SAFETY: a zeroed sigaction is valid; the fields are set below.
            let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
            act.sa_sigaction = on_sigbus as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            // SAFETY: an empty signal set for the handler's mask.
            unsafe { libc::sigemptyset(&mut act.sa_mask) };
            // SAFETY: out-parameter for the previous disposition.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: valid sigaction structs; `on_sigbus` is async-signal-safe.
            if unsafe { libc::sigaction(libc::SIGBUS, &act, &mut old) } != 0 {
                err = Some(io::Error::last_os_error());
                // SAFETY: a zeroed sigaction is SIG_DFL.
                return unsafe { std::mem::zeroed() };
            }
            old
        });
        err.map_or(Ok(()), Err)
    }

    /// A store into a write-protected watched page: lift that page's protection (the store
    /// is retried when the handler returns), count the fault and wake the engine. Any other
    /// SIGBUS goes to the previous disposition.
    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
        let addr = unsafe { (*info).si_addr() } as u64;
        let page = addr & !0xfff;
        let mut claimed = false;
        for slot in 0..SLOTS {
            let fd = UFFD[slot].load(Ordering::Acquire);
            if fd < 0 {
                continue;
            }
            let mut wp = UffdioWriteprotect {
                start: page,
                len: 0x1000,
                mode: 0,
            };
            // SAFETY: ioctl with the struct its number encodes; fails harmlessly (ENOENT)
            // on a userfaultfd that does not watch the page.
            if unsafe { libc::ioctl(fd, UFFDIO_WRITEPROTECT as _, &mut wp) } == 0 {
                FAULTS[slot].fetch_add(1, Ordering::AcqRel);
                let one = 1u64.to_ne_bytes();
                let wake = WAKE[slot].load(Ordering::Acquire);
                // SAFETY: an 8-byte write from a live buffer to an eventfd.
                let _ = unsafe { libc::write(wake, one.as_ptr().cast(), one.len()) };
                claimed = true;
            }
        }
        if claimed {
            return;
        }
        match PREVIOUS.get() {
            Some(prev)
                if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN =>
            {
                if prev.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: the previous SA_SIGINFO handler, called as the kernel would.
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        unsafe { std::mem::transmute(prev.sa_sigaction) };
                    f(sig, info, ctx);
                } else {
                    // SAFETY: the previous plain handler, called as the kernel would.
                    let f: extern "C" fn(libc::c_int) =
                        unsafe { std::mem::transmute(prev.sa_sigaction) };
                    f(sig);
                }
            }
            _ => {
                // Not ours: back to the default action; the faulting access runs again and
                // raises it.
                // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
                let dfl: libc::sigaction = unsafe { std::mem::zeroed() };
                // SAFETY: valid sigaction struct.
                unsafe { libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut()) };
            }
        }
    }
}
