//! `kfd_smi_events`: the System Management Interface event file of a GPU.
//!
//! `AMDKFD_IOC_SMI_EVENTS` gives the caller an anonymous file for one GPU. Writing 8 bytes
//! to it sets the client's event mask (bit `i - 1` enables event `i`,
//! `KFD_SMI_EVENT_MASK_FROM_INDEX`); reading it returns the queued event lines, each
//! `"<event id in hex> <text>\n"` in the kernel's formats, or `EAGAIN` when none is queued;
//! `poll` says readable while lines wait. A client sees the events of its own process, and
//! device-wide ones (VM faults); with `KFD_SMI_EVENT_ALL_PROCESS` in its mask a privileged
//! client sees every process's.
//!
//! The SVM code reports page faults (start: `@page(gpu) R|W`; end: `M` migrated or `U` only
//! mapped), migrations (`@page(pages) from->to`, with prefetch and preferred location at the
//! start, and the trigger), queue evictions and restores around a migration, and unmaps from
//! the GPUs (`@page(pages) gpu trigger`); the interrupt handler reports VM faults it does not
//! recover (`pid:task`). Addresses and sizes are in pages, times in `CLOCK_BOOTTIME`
//! nanoseconds.
//!
//! What the model does differently: the file is one end of a Unix stream socket pair, the
//! driver keeps the other (so `read`, `write`, `poll` and `close` are the host kernel's). The
//! mask the client wrote is picked up when the next event is posted. The kernel's queue holds
//! 1 KiB and drops what does not fit; here the socket's buffer does.

// Unsafe here: `socketpair`, `send`/`recv` and `fcntl` on the SMI event socket.
#![allow(unsafe_code)]

use crate::config::KernelVersion;
use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::process::ProcessInner;
use kfd_sys::*;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::Mutex;

/// `KFD_MIGRATE_TRIGGER_*`: why a range migrated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateTrigger {
    /// SET_ATTR's prefetch location.
    Prefetch = 0,
    /// A recoverable GPU page fault.
    PagefaultGpu = 1,
    /// A CPU page fault on VRAM.
    PagefaultCpu = 2,
    /// TTM evicted the VRAM.
    TtmEviction = 3,
}

/// `KFD_QUEUE_EVICTION_TRIGGER_*`: why a process's queues were evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictionTrigger {
    /// An SVM range changed under the GPU (MMU notifier, migration).
    Svm = 0,
    /// A userptr buffer changed.
    Userptr = 1,
    /// TTM moved a buffer.
    Ttm = 2,
    /// Suspend.
    Suspend = 3,
}

/// `KFD_SVM_UNMAP_TRIGGER_*`: why an SVM range was unmapped from a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnmapTrigger {
    /// The CPU mapping changed (MMU notifier).
    MmuNotify = 0,
    /// The range migrates.
    MmuNotifyMigrate = 1,
    /// The CPU unmapped it.
    UnmapFromCpu = 2,
}

/// One reader of a GPU's SMI events.
#[derive(Debug)]
struct SmiClient {
    /// The driver's end of the socket pair.
    sock: OwnedFd,
    /// The event mask the client last wrote.
    events: u64,
    /// Bytes of a mask write not yet complete.
    partial: Vec<u8>,
    /// The process that opened it (`task_tgid_nr`).
    pid: u32,
    /// It may see every process's events (`CAP_SYS_ADMIN`).
    suser: bool,
}

impl SmiClient {
    /// Reads the masks the client wrote since the last look; the last complete one counts.
    /// `false`: the client closed its file (`kfd_smi_ev_release`).
    fn update_mask(&mut self) -> bool {
        let mut buf = [0u8; 256];
        loop {
            // SAFETY: receives into a local buffer of the given length; non-blocking.
            let n = unsafe {
                libc::recv(
                    self.sock.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n == 0 {
                return false;
            }
            if n < 0 {
                return true;
            }
            self.partial.extend_from_slice(&buf[..n as usize]);
            while self.partial.len() >= 8 {
                let mut m = [0u8; 8];
                m.copy_from_slice(&self.partial[..8]);
                self.events = u64::from_ne_bytes(m);
                self.partial.drain(..8);
            }
        }
    }

    /// `kfd_smi_ev_enabled`.
    fn wants(&self, pid: u32, event: u32) -> bool {
        let all = KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_ALL_PROCESS);
        if pid != 0 && self.pid != pid && !(self.suser && self.events & all != 0) {
            return false;
        }
        self.events & KFD_SMI_EVENT_MASK_FROM_INDEX(event) != 0
    }

    /// Queues `line`; `false` when the client has gone (its end closed).
    fn send(&self, line: &[u8]) -> bool {
        // SAFETY: sends from a live slice; non-blocking, no SIGPIPE.
        let n = unsafe {
            libc::send(
                self.sock.as_raw_fd(),
                line.as_ptr().cast(),
                line.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e == Some(libc::EAGAIN) {
                log::debug!(target: crate::layer::SMI, "client of pid {}: no space left, event dropped", self.pid);
                return true;
            }
            return false;
        }
        true
    }
}

/// The SMI clients of one GPU (`kfd_node::smi_clients`).
#[derive(Debug, Default)]
pub struct SmiClients {
    clients: Mutex<Vec<SmiClient>>,
}

impl SmiClients {
    /// `kfd_smi_event_add`: formats `"<event> <text>"` and queues it for every client that
    /// wants it. `pid` 0 is a device-wide event.
    fn add(&self, pid: u32, event: u32, text: std::fmt::Arguments<'_>) {
        let mut clients = crate::process::lock(&self.clients);
        if clients.is_empty() {
            return;
        }
        let mut line = Vec::with_capacity(KFD_SMI_EVENT_MSG_SIZE as usize);
        let _ = write!(line, "{event:x} ");
        let _ = line.write_fmt(text);
        log::trace!(target: crate::layer::SMI, "{}", String::from_utf8_lossy(&line).trim_end());
        clients.retain_mut(|c| c.update_mask() && (!c.wants(pid, event) || c.send(&line)));
    }

    /// Number of open clients (those that closed their file are dropped first).
    pub fn len(&self) -> usize {
        let mut clients = crate::process::lock(&self.clients);
        clients.retain_mut(SmiClient::update_mask);
        clients.len()
    }

    /// No client is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `ktime_get_boottime_ns`.
fn boottime_ns() -> i64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
        .map(|t| t.tv_sec() * 1_000_000_000 + t.tv_nsec())
        .unwrap_or(0)
}

const PAGE_SHIFT: u32 = 12;

/// `kfd_smi_event_open` (`AMDKFD_IOC_SMI_EVENTS`): a new client of GPU `gpuid`; its file
/// descriptor goes to `anon_fd`.
pub(crate) fn open(p: &ProcessInner, a: &mut kfd_ioctl_smi_events_args) -> KResult<i32> {
    let node = {
        let st = p.lock();
        let i = st.pdd_index(a.gpuid)?;
        st.pdds[i].node.clone()
    };
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two descriptors into the local array.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        let e = std::io::Error::last_os_error().raw_os_error();
        return Err(Errno(e.unwrap_or(libc::EMFILE)));
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // The kernel's file: O_RDWR without O_CLOEXEC, and a read of an empty queue is EAGAIN.
    // SAFETY: fcntl on a descriptor owned here.
    unsafe {
        libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0);
        libc::fcntl(theirs.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
    }
    // SAFETY: geteuid has no preconditions.
    let suser = unsafe { libc::geteuid() } == 0;
    crate::process::lock(&node.smi.clients).push(SmiClient {
        sock: ours,
        events: 0,
        partial: Vec::new(),
        pid: p.owner_pid,
        suser,
    });
    a.anon_fd = theirs.into_raw_fd() as u32;
    log::debug!(target: crate::layer::SMI, "pasid {:#x}: SMI client of gpu {:#x} on fd {}", p.pasid, a.gpuid, a.anon_fd);
    Ok(0)
}

/// `kfd_smi_event_page_fault_start`.
pub(crate) fn page_fault_start(node: &KfdNode, pid: u32, addr: u64, write: bool) {
    node.smi.add(
        pid,
        KFD_SMI_EVENT_PAGE_FAULT_START,
        format_args!(
            "{} -{pid} @{:x}({:x}) {}\n",
            boottime_ns(),
            addr >> PAGE_SHIFT,
            node.gpu_id,
            if write { 'W' } else { 'R' }
        ),
    );
}

/// `kfd_smi_event_page_fault_end`: `migrated` says the range moved (else only mapped).
pub(crate) fn page_fault_end(node: &KfdNode, pid: u32, addr: u64, migrated: bool) {
    node.smi.add(
        pid,
        KFD_SMI_EVENT_PAGE_FAULT_END,
        format_args!(
            "{} -{pid} @{:x}({:x}) {}\n",
            boottime_ns(),
            addr >> PAGE_SHIFT,
            node.gpu_id,
            if migrated { 'M' } else { 'U' }
        ),
    );
}

/// A migration of `[start, end)` (bytes) from `from` to `to` (0: system memory).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub start: u64,
    pub end: u64,
    pub from: u32,
    pub to: u32,
    pub prefetch_loc: u32,
    pub preferred_loc: u32,
    pub trigger: MigrateTrigger,
}

/// `kfd_smi_event_migration_start`.
pub(crate) fn migration_start(node: &KfdNode, pid: u32, m: &Migration) {
    node.smi.add(
        pid,
        KFD_SMI_EVENT_MIGRATE_START,
        format_args!(
            "{} -{pid} @{:x}({:x}) {:x}->{:x} {:x}:{:x} {}\n",
            boottime_ns(),
            m.start >> PAGE_SHIFT,
            (m.end - m.start) >> PAGE_SHIFT,
            m.from,
            m.to,
            m.prefetch_loc,
            m.preferred_loc,
            m.trigger as u32
        ),
    );
}

/// `kfd_smi_event_migration_end`.
pub(crate) fn migration_end(node: &KfdNode, pid: u32, m: &Migration) {
    node.smi.add(
        pid,
        KFD_SMI_EVENT_MIGRATE_END,
        format_args!(
            "{} -{pid} @{:x}({:x}) {:x}->{:x} {}\n",
            boottime_ns(),
            m.start >> PAGE_SHIFT,
            (m.end - m.start) >> PAGE_SHIFT,
            m.from,
            m.to,
            m.trigger as u32
        ),
    );
}

/// `kfd_smi_event_queue_eviction`.
pub(crate) fn queue_eviction(node: &KfdNode, pid: u32, trigger: EvictionTrigger) {
    node.smi.add(
        pid,
        KFD_SMI_EVENT_QUEUE_EVICTION,
        format_args!(
            "{} -{pid} {:x} {}\n",
            boottime_ns(),
            node.gpu_id,
            trigger as u32
        ),
    );
}

/// `kfd_smi_event_queue_restore`: Linux 6.1 prints no fourth field; 6.12 (with its stable
/// fix) prints `0` for a restore that was not rescheduled.
pub(crate) fn queue_restore(node: &KfdNode, pid: u32, kernel: KernelVersion) {
    let ns = boottime_ns();
    match kernel {
        KernelVersion::Linux6_1 => node.smi.add(
            pid,
            KFD_SMI_EVENT_QUEUE_RESTORE,
            format_args!("{ns} -{pid} {:x}\n", node.gpu_id),
        ),
        KernelVersion::Linux6_12 => node.smi.add(
            pid,
            KFD_SMI_EVENT_QUEUE_RESTORE,
            format_args!("{ns} -{pid} {:x} 0\n", node.gpu_id),
        ),
    }
}

/// `kfd_smi_event_unmap_from_gpu`: `[start, end)` in bytes.
pub(crate) fn unmap_from_gpu(node: &KfdNode, pid: u32, start: u64, end: u64, t: UnmapTrigger) {
    node.smi.add(
        pid,
        KFD_SMI_EVENT_UNMAP_FROM_GPU,
        format_args!(
            "{} -{pid} @{:x}({:x}) {:x} {}\n",
            boottime_ns(),
            start >> PAGE_SHIFT,
            (end - start) >> PAGE_SHIFT,
            node.gpu_id,
            t as u32
        ),
    );
}

/// `kfd_smi_event_update_vmfault`: a device-wide event naming the faulting process.
pub(crate) fn vm_fault(node: &KfdNode, pid: u32) {
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    node.smi.add(
        0,
        KFD_SMI_EVENT_VMFAULT,
        format_args!("{pid:x}:{}\n", comm.trim_end()),
    );
}
