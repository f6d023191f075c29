//! Noticing a doorbell store of an unmodified client while the engine thread sleeps.
//!
//! A client rings a doorbell with a plain store into its mapping of the doorbell page: nothing
//! the model can see, short of polling. Polling every 100 µs costs a few percent of a core;
//! sleeping up to [`DEEP_IDLE_SLEEP`](crate::hw::engine::DEEP_IDLE_SLEEP) misses the store by
//! up to 16 ms. Instead, the clients' doorbell mappings are registered with a
//! `userfaultfd` in write-protect mode: before the engine thread goes to sleep it
//! write-protects them ([`DoorbellWatch::arm`]) and then sleeps in [`DoorbellWatch::wait`],
//! a `ppoll` on the `userfaultfd` (and an `eventfd` for the model's own wake-ups). The first
//! store after that faults and wakes the engine thread itself, which runs its next pass at
//! once and only then removes the protection (which lets the store complete): clients write
//! their queue's write-pointer location before the doorbell (libhsakmt's PM4 clients, ROCr's
//! AQL `write_dispatch_id`), and the CP reads it, so the pass finds the new packets without
//! waiting for the faulting thread to be scheduled again. One thread wake-up between the
//! store and the packets running, no watcher thread in between. A client that rings the
//! doorbell alone is served by the pass after its store lands. Asleep, the model costs
//! no CPU; awake, the pages are writable and cost nothing either (the engine lifts the
//! protection as soon as it finds work, [`DoorbellWatch::disarm`]). Where `userfaultfd` is
//! not available (an old kernel, a seccomp filter), [`DoorbellWatch::new`] fails and the
//! engine keeps its polling sleep.
//!
//! Linux ABI (`linux/userfaultfd.h`): `userfaultfd(2)` with `UFFD_USER_MODE_ONLY`, the
//! `UFFDIO_API`, `UFFDIO_REGISTER` (mode WP) and `UFFDIO_WRITEPROTECT` ioctls, and 32-byte
//! `uffd_msg` records whose `UFFD_EVENT_PAGEFAULT` carries `UFFD_PAGEFAULT_FLAG_WP`.

// Unsafe here: userfaultfd and eventfd system calls on the client's doorbell pages.
#![allow(unsafe_code)]

use std::io;
use std::num::NonZeroU32;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `UFFD_API`.
const UFFD_API: u64 = 0xAA;
/// `UFFD_USER_MODE_ONLY`: only faults from user mode (allowed without privileges).
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
/// `UFFD_FEATURE_WP_HUGETLBFS_SHMEM`: write protection of shared memory (the doorbell page
/// is a memfd).
const UFFD_FEATURE_WP_HUGETLBFS_SHMEM: u64 = 1 << 12;
/// `UFFD_FEATURE_THREAD_ID`: a page-fault message names the faulting thread (`feat.ptid`, the
/// 32 bits after the address).
const UFFD_FEATURE_THREAD_ID: u64 = 1 << 8;
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
    /// Ends a [`DoorbellWatch::wait`] early (the model's own wake-ups: a doorbell rung through
    /// the thunk, a runlist mapped, the model stopping).
    wake_fd: OwnedFd,
    /// Registered mappings: start and length.
    ranges: Mutex<Vec<(u64, u64)>>,
    /// The mappings are write-protected now.
    armed: AtomicBool,
    /// A store's fault was read off the `userfaultfd` and the protection has not been lifted
    /// since: that store waits until it is (its fault will not be reported again).
    unresolved: AtomicBool,
    stop: AtomicBool,
    /// When a store last faulted: the faulting store completes only after the protection is
    /// lifted, so the engine must not protect again right away.
    last_fault: Mutex<Option<Instant>>,
    /// Times a store woke the engine thread.
    wakeups: AtomicU64,
    /// The thread id of the last store that faulted (0 before any).
    last_storer: AtomicU32,
    /// Counts every change the engine thread could have missed a store through: each arm,
    /// disarm and fault read. The same value twice, armed both times, means every store in
    /// between faulted ([`DoorbellWatch::armed_epoch`]).
    epoch: AtomicU64,
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
            features: UFFD_FEATURE_WP_HUGETLBFS_SHMEM | UFFD_FEATURE_THREAD_ID,
            ioctls: 0,
        };
        uffd_ioctl(&uffd, UFFDIO_API, &mut api)?;
        // SAFETY: eventfd takes an initial value and flags.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor that nothing else owns.
        let wake_fd = unsafe { OwnedFd::from_raw_fd(efd) };
        Ok(Arc::new(DoorbellWatch {
            uffd,
            wake_fd,
            ranges: Mutex::new(Vec::new()),
            armed: AtomicBool::new(false),
            unresolved: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            last_fault: Mutex::new(None),
            wakeups: AtomicU64::new(0),
            last_storer: AtomicU32::new(0),
            epoch: AtomicU64::new(0),
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
        let mut ranges = self.lock();
        ranges.push((addr, len));
        // While armed every watched mapping is protected: this one too. (Under the lock:
        // `arm` and `disarm` change the protection of every mapping under it as well.)
        if self.armed.load(Ordering::Acquire) {
            if let Err(e) = self.write_protect(addr, len, true) {
                // Unprotected while armed: a store there goes unnoticed until the engine
                // wakes, never waits. The next arm protects it.
                log::debug!(target: crate::layer::ENGINE, "doorbell mapping {addr:#x} not protected yet: {e}");
            }
        }
        drop(ranges);
        log::debug!(target: crate::layer::ENGINE, "watching doorbell mapping {addr:#x}+{len:#x}");
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        self.ranges.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets or clears the write protection of every registered mapping; a mapping the
    /// client unmapped is dropped. Clearing it also lets a store that faulted complete.
    /// `false` when a mapping still registered could not be changed.
    fn protect(&self, on: bool) -> bool {
        let mut ranges = self.lock();
        let mut all = true;
        ranges.retain(|&(start, len)| {
            // Only a mapping that is gone (ENOENT: no longer a registered mapping) is
            // dropped; anything else (EAGAIN while the address space changes, ENOMEM) is
            // retried, then left for the next arm: a dropped mapping would be polled for good.
            let mut tries = 0;
            loop {
                match self.write_protect(start, len, on) {
                    Ok(()) => return true,
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                        // No longer one registered mapping (unmapped, or part of it): what
                        // is left of it loses its protection page by page before it is
                        // forgotten, so that no store waits on a mapping nobody watches.
                        self.release_pages(start, len);
                        log::debug!(target: crate::layer::ENGINE, "doorbell mapping {start:#x} dropped: {e}");
                        return false;
                    }
                    Err(e) if tries < 3 => {
                        tries += 1;
                        log::debug!(target: crate::layer::ENGINE, "doorbell mapping {start:#x}: {e}, again");
                        std::thread::yield_now();
                    }
                    Err(e) => {
                        log::warn!(target: crate::layer::ENGINE, "doorbell mapping {start:#x} not (un)protected: {e}");
                        all = false;
                        return true;
                    }
                }
            }
        });
        all
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
        if self.unresolved.load(Ordering::Acquire) {
            // A store still waits for a protection that an earlier lift could not remove.
            self.disarm();
            return false;
        }
        self.armed.store(true, Ordering::Release);
        if !self.protect(true) {
            // Not every mapping is protected: the engine sleeps as without a watch (polling)
            // and tries again before its next sleep. Nothing may stay protected meanwhile,
            // or a store there would wait for a wake-up nobody listens for.
            self.armed.store(false, Ordering::Release);
            self.protect(false);
            return false;
        }
        // After the protection: an epoch read while it was being set is not this one.
        self.epoch.fetch_add(1, Ordering::AcqRel);
        log::trace!(target: crate::layer::ENGINE, "doorbell mappings write-protected");
        true
    }

    /// While armed: the current epoch. If a later call returns the same value, the mappings
    /// were protected all along in between, so every store into them faulted and woke (or
    /// will wake) the engine thread for a pass after it.
    pub fn armed_epoch(&self) -> Option<u64> {
        let epoch = self.epoch.load(Ordering::Acquire);
        (self.armed.load(Ordering::Acquire) && self.epoch.load(Ordering::Acquire) == epoch)
            .then_some(epoch)
    }

    /// Whether `[start, end)` overlaps a watched doorbell mapping. Such memory is not memory
    /// the GPU may reach through the CPU's mapping (amdkfd refuses USERPTR and SVM ranges
    /// over its `VM_IO` doorbell mappings), and the engine thread must never store into it
    /// while it is write-protected: that store would wait for the engine thread itself.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        self.lock()
            .iter()
            .any(|&(a, len)| a < end && start < a.saturating_add(len))
    }

    /// How many times a doorbell store woke the engine thread.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// The thread whose store last woke the engine (its id, as `gettid` gives it), if the
    /// kernel named it.
    pub fn last_storer(&self) -> Option<u32> {
        NonZeroU32::new(self.last_storer.load(Ordering::Relaxed)).map(NonZeroU32::get)
    }

    /// Whether the mappings are protected now.
    pub fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Acquire)
    }

    /// The engine found work: lifts the protection (a store that faulted in between
    /// completes), so the client's stores cost nothing while the engine is awake.
    pub fn disarm(&self) {
        let armed = self.armed.swap(false, Ordering::AcqRel);
        if armed {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        if armed || self.unresolved.load(Ordering::Acquire) {
            // A store that faulted since the last wait is counted before the protection goes
            // (lifting it takes the fault's message off the `userfaultfd` unread).
            self.take_faults();
            // A store whose fault was read waits until this succeeds: until then `arm`
            // tries again instead of protecting.
            if self.protect(false) {
                self.unresolved.store(false, Ordering::Release);
            }
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
    /// a store into a watched mapping (`true`: work is coming; the store waits until the
    /// engine's next [`DoorbellWatch::disarm`], after the pass that follows) or by
    /// [`DoorbellWatch::notify`]. (Letting the store through before that pass measured
    /// worse: doorbell to packets executed went from 27 to 59 µs at p50, as the woken client
    /// competed with the pass for the core.)
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
        pfds[0].revents != 0 && self.take_faults()
    }

    /// Sets (`on`) or clears the write protection of `[start, start + len)`; clearing it
    /// also lets the stores that faulted there complete.
    fn write_protect(&self, start: u64, len: u64, on: bool) -> io::Result<()> {
        let mut wp = UffdioWriteprotect {
            start,
            len,
            mode: if on { UFFDIO_WRITEPROTECT_MODE_WP } else { 0 },
        };
        uffd_ioctl(&self.uffd, UFFDIO_WRITEPROTECT, &mut wp)
    }

    /// Lifts the protection of every page of `[start, start + len)` that still has one
    /// (errors for pages that are gone are expected and ignored).
    fn release_pages(&self, start: u64, len: u64) {
        const PAGE: u64 = 4096;
        for page in (start..start.saturating_add(len)).step_by(PAGE as usize) {
            let _ = self.write_protect(page, PAGE, false);
        }
    }

    /// Reads the pending `userfaultfd` messages; `true` on a write-protect fault. The
    /// protection stays until [`DoorbellWatch::disarm`]: the faulting thread stays in the
    /// kernel (it holds no lock of the model's) for the one engine pass that runs first.
    fn take_faults(&self) -> bool {
        // The kernel hands out as many messages as fit in one read: one system call drains
        // the queue unless it filled the buffer (on the doorbell path after an idle sleep,
        // each call costs microseconds).
        const MSG: usize = 32;
        let mut msgs = [0u8; MSG * 16];
        let mut faulted = false;
        loop {
            // SAFETY: reading into a buffer of `msgs.len()` bytes.
            let r =
                unsafe { libc::read(self.uffd.as_raw_fd(), msgs.as_mut_ptr().cast(), msgs.len()) };
            let Ok(n) = usize::try_from(r) else { break };
            for msg in msgs[..n - n % MSG].chunks_exact(MSG) {
                let flags = u64::from_le_bytes(msg[8..16].try_into().unwrap_or([0; 8]));
                if msg[0] == UFFD_EVENT_PAGEFAULT && flags & UFFD_PAGEFAULT_FLAG_WP != 0 {
                    faulted = true;
                    let ptid = u32::from_le_bytes(msg[24..28].try_into().unwrap_or([0; 4]));
                    self.last_storer.store(ptid, Ordering::Relaxed);
                }
            }
            if n < msgs.len() {
                break;
            }
        }
        if faulted {
            self.epoch.fetch_add(1, Ordering::AcqRel);
            self.unresolved.store(true, Ordering::Release);
            *self.last_fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            self.wakeups.fetch_add(1, Ordering::Relaxed);
            log::trace!(target: crate::layer::ENGINE, "doorbell store while asleep: woken");
        }
        faulted
    }

    /// Lifts every protection for good (the engine thread is stopping).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.armed.store(false, Ordering::Release);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.protect(false);
        self.notify();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Shared memory pages, as a client's doorbell mapping is (a memfd, mapped shared).
    struct SharedPage {
        addr: usize,
        len: usize,
        _fd: OwnedFd,
    }

    impl SharedPage {
        fn new() -> SharedPage {
            SharedPage::pages(1)
        }

        fn pages(n: usize) -> SharedPage {
            let len = 4096 * n;
            // SAFETY: a new memfd that nothing else owns, sized and mapped shared; the mapping
            // lives until `drop`.
            unsafe {
                let fd = libc::memfd_create(c"doorbell-watch-test".as_ptr(), libc::MFD_CLOEXEC);
                assert!(fd >= 0, "memfd_create: {}", io::Error::last_os_error());
                let fd = OwnedFd::from_raw_fd(fd);
                assert_eq!(libc::ftruncate(fd.as_raw_fd(), len as libc::off_t), 0);
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd.as_raw_fd(),
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED, "{}", io::Error::last_os_error());
                SharedPage {
                    addr: p as usize,
                    len,
                    _fd: fd,
                }
            }
        }

        /// Stores `v` from another thread, which reports on `done` once the store completed.
        fn store_from_a_thread(&self, v: u64) -> mpsc::Receiver<()> {
            self.store_from_a_thread_named(v).1
        }

        /// [`SharedPage::store_from_a_thread`], also giving the storing thread's id (sent just
        /// before the store, which is all it does until `done`).
        fn store_from_a_thread_named(&self, v: u64) -> (libc::pid_t, mpsc::Receiver<()>) {
            let (tx, done) = mpsc::channel();
            let (tid_tx, tid) = mpsc::channel();
            let addr = self.addr;
            std::thread::spawn(move || {
                let _ = tid_tx.send(nix::unistd::gettid().as_raw());
                // SAFETY: the page stays mapped until the test has seen `done` or stopped the
                // watch (which lets the store complete) and joined nothing: the test keeps
                // the page alive past both.
                unsafe { (addr as *mut u64).write_volatile(v) };
                let _ = tx.send(());
            });
            let tid = tid.recv_timeout(HANG).expect("the storing thread started");
            (tid, done)
        }

        fn load(&self) -> u64 {
            // SAFETY: a mapped, aligned word.
            unsafe { (self.addr as *const u64).read_volatile() }
        }
    }

    impl Drop for SharedPage {
        fn drop(&mut self) {
            // SAFETY: `addr`/`len` is this page's own mapping (from `pages`), unmapped once here;
            // only raw pointers ever pointed into it.
            unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
        }
    }

    /// Long enough that only a hang runs out of it, on a host as busy as it gets.
    const HANG: Duration = Duration::from_secs(30);

    /// Waits until thread `tid` of this process sleeps in the kernel (state S or D). A storing
    /// thread does nothing else after it reported its id, so it sleeps in its store's fault.
    fn until_blocked(tid: libc::pid_t) {
        let deadline = std::time::Instant::now() + HANG;
        loop {
            let stat =
                std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
            // The state follows the command name, which is in parentheses.
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next());
            if matches!(state, Some("S" | "D")) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "thread {tid} never blocked in its store ({state:?})"
            );
            std::thread::yield_now();
        }
    }

    fn watch() -> Option<Arc<DoorbellWatch>> {
        match DoorbellWatch::new() {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("SKIPPED: no userfaultfd write protection here: {e}");
                None
            }
        }
    }

    #[test]
    fn a_store_whose_fault_was_read_completes_even_if_the_watch_was_disarmed_meanwhile() {
        let Some(watch) = watch() else { return };
        let page = SharedPage::new();
        // SAFETY: a shared mapping that outlives the watch's use of it.
        unsafe { watch.watch(page.addr as u64, 4096) }.unwrap();
        assert!(watch.arm());
        let done = page.store_from_a_thread(7);
        assert!(watch.wait(HANG), "the store faulted");
        assert_eq!(watch.wakeups(), 1);
        // The flag went down between the wait that read the fault and the engine's disarm
        // (as `watch` of another mapping used to do): the store must still complete.
        watch.armed.store(false, Ordering::Release);
        watch.disarm();
        let completed = done.recv_timeout(HANG).is_ok();
        // Lets it complete anyway, before the page goes: a failure leaves no thread behind.
        watch.stop();
        let _ = done.recv_timeout(HANG);
        assert!(completed, "the faulting store completed after the disarm");
        assert_eq!(page.load(), 7);
    }

    #[test]
    fn the_armed_epoch_stays_only_while_every_store_would_fault() {
        let Some(watch) = watch() else { return };
        let page = SharedPage::new();
        // SAFETY: a shared mapping that outlives the watch's use of it.
        unsafe { watch.watch(page.addr as u64, 4096) }.unwrap();
        assert_eq!(watch.armed_epoch(), None, "not armed yet");
        assert!(watch.arm());
        let first = watch.armed_epoch().expect("armed");
        assert!(!watch.arm(), "already armed");
        assert_eq!(watch.armed_epoch(), Some(first), "nothing changed");
        watch.disarm();
        assert_eq!(watch.armed_epoch(), None);
        assert!(watch.arm());
        let second = watch.armed_epoch().expect("armed again");
        assert_ne!(second, first, "a disarm in between shows");
        // A store's fault read by the engine: still armed, but a pass is owed to it.
        let done = page.store_from_a_thread(5);
        assert!(watch.wait(HANG), "the store faulted");
        let after_fault = watch.armed_epoch();
        watch.disarm();
        let completed = done.recv_timeout(HANG).is_ok();
        watch.stop();
        let _ = done.recv_timeout(HANG);
        assert!(completed);
        assert!(
            after_fault.is_some_and(|e| e != second),
            "{after_fault:?} after {second}"
        );
    }

    #[test]
    fn one_wait_reads_every_pending_fault() {
        let Some(watch) = watch() else { return };
        let (first, second) = (SharedPage::new(), SharedPage::new());
        // SAFETY: shared mappings that outlive the watch's use of them.
        unsafe { watch.watch(first.addr as u64, 4096) }.unwrap();
        // SAFETY: `second` is a shared page this test maps and keeps until after the watch
        // stops using it.
        unsafe { watch.watch(second.addr as u64, 4096) }.unwrap();
        assert!(watch.arm());
        let (tids, done): (Vec<_>, Vec<_>) = [
            first.store_from_a_thread_named(1),
            second.store_from_a_thread_named(2),
        ]
        .into_iter()
        .unzip();
        // Both stores fault and wait before the engine looks.
        tids.iter().for_each(|&t| until_blocked(t));
        let woke = watch.wait(HANG);
        // Nothing is left unread: a second wait sleeps its whole time.
        let woke_again = watch.wait(Duration::from_millis(50));
        watch.disarm();
        let completed = done.iter().all(|d| d.recv_timeout(HANG).is_ok());
        watch.stop();
        for d in &done {
            let _ = d.recv_timeout(HANG);
        }
        assert!(woke && completed);
        assert!(!woke_again, "a fault's message was left for the next wait");
        assert_eq!((first.load(), second.load()), (1, 2));
    }

    #[test]
    fn a_wake_up_names_the_thread_that_stored() {
        let Some(watch) = watch() else { return };
        let page = SharedPage::new();
        // SAFETY: a shared mapping that outlives the watch's use of it.
        unsafe { watch.watch(page.addr as u64, 4096) }.unwrap();
        assert_eq!(watch.last_storer(), None, "no store yet");
        assert!(watch.arm());
        let (tid, done) = page.store_from_a_thread_named(7);
        until_blocked(tid);
        let woke = watch.wait(HANG);
        watch.disarm();
        let completed = done.recv_timeout(HANG).is_ok();
        watch.stop();
        assert!(woke && completed);
        assert_eq!(watch.last_storer(), u32::try_from(tid).ok());
    }

    #[test]
    fn a_mapping_watched_while_armed_is_protected_at_once() {
        let Some(watch) = watch() else { return };
        let (first, second) = (SharedPage::new(), SharedPage::new());
        // SAFETY: shared mappings that outlive the watch's use of them.
        unsafe { watch.watch(first.addr as u64, 4096) }.unwrap();
        assert!(watch.arm());
        // SAFETY: `second` is a shared page this test maps and keeps until after the watch
        // stops using it.
        unsafe { watch.watch(second.addr as u64, 4096) }.unwrap();
        assert!(watch.is_armed(), "still armed: both mappings are protected");
        let done = second.store_from_a_thread(9);
        let woke = watch.wait(HANG);
        watch.disarm();
        let completed = done.recv_timeout(HANG).is_ok();
        watch.stop();
        let _ = done.recv_timeout(HANG);
        assert!(woke, "a store into the mapping watched last woke the wait");
        assert!(completed);
        assert_eq!(second.load(), 9);
        // Lifted: stores complete without waiting for anyone.
        let done = first.store_from_a_thread(3);
        assert!(done.recv_timeout(HANG).is_ok());
        assert_eq!(first.load(), 3);
    }

    #[test]
    fn what_is_left_of_a_partly_unmapped_mapping_loses_its_protection() {
        let Some(watch) = watch() else { return };
        let mut pages = SharedPage::pages(2);
        // SAFETY: a shared mapping that outlives the watch's use of it.
        unsafe { watch.watch(pages.addr as u64, 8192) }.unwrap();
        assert!(watch.arm());
        // The client unmaps the second page: the watched range is no longer one mapping.
        let second = (pages.addr + 4096) as *mut libc::c_void;
        // SAFETY: the second page of our own mapping, used by nothing else.
        let unmapped = unsafe { libc::munmap(second, 4096) };
        assert_eq!(unmapped, 0);
        pages.len = 4096;
        let done = pages.store_from_a_thread(5);
        let woke = watch.wait(HANG);
        watch.disarm();
        let completed = done.recv_timeout(HANG).is_ok();
        if !completed {
            // The range is forgotten, so `stop` cannot help: keep the page and the watch so
            // that the waiting thread never stores into an unmapped page.
            std::mem::forget(pages);
            std::mem::forget(watch);
            panic!("the store into the page left never completed");
        }
        assert!(woke, "the store into the page left faulted");
        assert_eq!(pages.load(), 5);
    }
}
