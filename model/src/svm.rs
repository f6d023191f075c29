//! `kfd_svm` and `kfd_migrate`: shared virtual memory ranges of a process.
//!
//! `AMDKFD_IOC_SVM` gives any page range of the process's address space to the GPUs with
//! attributes. The driver keeps the attributes in an interval structure of ranges that split
//! where a SET_ATTR span starts or ends inside one; the model also joins neighbours whose
//! attributes and placement became equal again (the kernel leaves them split: nothing a client
//! can query tells the two apart). A range lives in system memory or in one GPU's VRAM;
//! prefetching moves it and the GPU mappings follow.
//!
//! What the model does differently, and why:
//! * VRAM placement: a range in VRAM is accounted to that GPU's VRAM (SMI events, statistics
//!   and VRAM use as the kernel's), but its bytes stay in the CPU's pages, which the GPUs map —
//!   a coherent large-BAR view of the same bytes at the same address. The kernel instead moves
//!   them into device pages and installs device-private entries that fault back to system
//!   memory on a CPU touch. The model's VRAM is host memory: moving the bytes would cost host
//!   memory for every page, touched or not (an untouched page is the shared zero page for the
//!   CPU's and the GPU's reads), and would open a window in which a CPU reader misses the
//!   data. As in the kernel, only anonymous pages migrate: a file's pages stay in system
//!   memory, where the GPUs write the file.
//! * MMU notifiers: a user-space model is not told about `munmap`. It looks instead: every SVM
//!   ioctl and every GPU fault first drops the pages of its ranges that are no longer mapped
//!   (found with `msync`, which fails with `ENOMEM` on an unmapped page), and
//!   [`crate::Process::svm_cpu_unmapped`] is the notifier a shim that sees `munmap` can call.
//!   Between a `munmap` and the next look, a GPU access to that system memory is the caller's
//!   responsibility, as for USERPTR memory. A protection change (`mprotect`, and fork's
//!   copy-on-write protection) comes through [`crate::Process::svm_cpu_protection_changed`]
//!   and [`crate::Process::svm_forked`]: ranges take the CPU's protection on the GPUs
//!   (read-only, or unmapped), with the queues evicted meanwhile (XNACK off) or the pages
//!   unmapped from the GPUs to be faulted in again (XNACK on). A forked child has its own
//!   copy-on-write pages of every range, in VRAM or not, as in the kernel.
//! * Recoverable faults (XNACK on): the hardware model stops the queue at the faulting packet
//!   and posts the fault; the driver model maps (migrating if the preferred location says so)
//!   and remaps the queue, which retries that packet. The hardware would stall the access
//!   instead; what the driver does is the same. A shader's fault (XNACK replay on: the
//!   process's `SH_MEM_CONFIG` has RETRY_DISABLE clear) stops the dispatch with the faulting
//!   wave at the faulting instruction and the rest of the dispatch suspended; once the queue
//!   is mapped again the dispatch resumes and the wave retries that instruction.

// Unsafe here: SVM ranges are client memory mapped for the GPU (`UserMemory::new`), `msync`.
#![allow(unsafe_code)]

use crate::config::KernelVersion;
use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::hw::mem::PAGE_SIZE;
use crate::hw::vm::{Backing, UserMemory, VmMapping};
use crate::process::{ProcessInner, ProcessState};
use crate::smi::{self, MigrateTrigger, UnmapTrigger};
use kfd_sys::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The buffer handle SVM mappings carry in a GPU VM. KFD handles are `gpu_id << 32 | idr` with
/// a small idr, so no buffer has this one.
pub const SVM_MAPPING_HANDLE: u64 = u64::MAX;

/// Default migration granularity: 2^9 pages (2 MiB).
pub const DEFAULT_GRANULARITY: u8 = 9;

/// Largest granularity SET_ATTR stores from Linux 6.7 on (larger values are clamped to it).
pub const MAX_GRANULARITY: u8 = 0x3F;

/// The granularity SET_ATTR stores for `value`. The range keeps it in a byte
/// (`svm_range.granularity` is a `uint8_t`); Linux 6.1 stores the value's low byte as given,
/// and from 6.7 on (upstream 282c1d793076, "drm/amdkfd: Fix shift out-of-bounds issue";
/// later proposed for the stable series, the model follows 6.1 as released) the value is
/// clamped to [`MAX_GRANULARITY`] first.
pub fn granularity(value: u32, kernel: KernelVersion) -> u8 {
    match kernel {
        KernelVersion::Linux6_1 => value as u8,
        KernelVersion::Linux6_12 => value.min(u32::from(MAX_GRANULARITY)) as u8,
    }
}

/// Flags a new range starts with.
pub const DEFAULT_FLAGS: u32 = KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT;

const PAGE: u64 = PAGE_SIZE as u64;

/// A change of the CPU's mappings a shim reported while the process was busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuChange {
    /// `munmap` of `[start, end)`.
    Unmap(u64, u64),
    /// `mprotect` (or fork's copy-on-write protection) of `[start, end)`.
    Protect(u64, u64),
}

/// What the CPU may do with a range's pages (the VMA flags the SVM code checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuAccess {
    /// Read and write.
    #[default]
    ReadWrite,
    /// Read only: the GPUs map it read-only.
    ReadOnly,
    /// Neither (or unmapped): the GPUs do not map it.
    None,
}

/// The attributes of one range. GPUs are named by their index in the process (`gpuidx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SvmAttributes {
    /// `KFD_IOCTL_SVM_ATTR_PREFERRED_LOC`: 0 (system), a gpu_id, or UNDEFINED.
    pub preferred_loc: u32,
    /// `KFD_IOCTL_SVM_ATTR_PREFETCH_LOC`: 0 (system), a gpu_id, or UNDEFINED.
    pub prefetch_loc: u32,
    /// GPUs that may access the range, with migration allowed (bit = gpuidx).
    pub access: u64,
    /// GPUs that access the range where it is, without migration.
    pub access_in_place: u64,
    /// `KFD_IOCTL_SVM_FLAG_*`.
    pub flags: u32,
    /// Migration granularity: log2 of the page count.
    pub granularity: u8,
}

impl SvmAttributes {
    /// The attributes of a new range (`svm_range_set_default_attributes`); with XNACK on every
    /// GPU may access it.
    pub fn new_range(all_gpus: u64, xnack: bool) -> Self {
        SvmAttributes {
            preferred_loc: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            prefetch_loc: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            access: if xnack { all_gpus } else { 0 },
            access_in_place: 0,
            flags: DEFAULT_FLAGS,
            granularity: DEFAULT_GRANULARITY,
        }
    }

    fn apply(
        &mut self,
        attr: &kfd_ioctl_svm_attribute,
        gpuidx: impl Fn(u32) -> Option<usize>,
        kernel: KernelVersion,
    ) {
        let bit = |v| gpuidx(v).map_or(0, |i| 1u64 << i);
        match attr.r#type {
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => self.preferred_loc = attr.value,
            KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => self.prefetch_loc = attr.value,
            KFD_IOCTL_SVM_ATTR_ACCESS => {
                self.access |= bit(attr.value);
                self.access_in_place &= !bit(attr.value);
            }
            KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => {
                self.access &= !bit(attr.value);
                self.access_in_place |= bit(attr.value);
            }
            KFD_IOCTL_SVM_ATTR_NO_ACCESS => {
                self.access &= !bit(attr.value);
                self.access_in_place &= !bit(attr.value);
            }
            KFD_IOCTL_SVM_ATTR_SET_FLAGS => self.flags |= attr.value,
            KFD_IOCTL_SVM_ATTR_CLR_FLAGS => self.flags &= !attr.value,
            KFD_IOCTL_SVM_ATTR_GRANULARITY => {
                self.granularity = granularity(attr.value, kernel);
            }
            _ => {}
        }
    }
}

/// One SVM range: `[start, end)` in bytes, page aligned.
#[derive(Debug, Clone)]
pub struct SvmRange {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Its attributes.
    pub attrs: SvmAttributes,
    /// The GPU whose VRAM holds it (accounted there; its bytes stay where the CPU maps them).
    vram: Option<Arc<KfdNode>>,
    /// When it last moved into VRAM (the order in which a full VRAM evicts ranges).
    placed: u64,
    /// GPUs a recoverable fault mapped it on (XNACK on maps lazily).
    fault_mapped: u64,
    /// What the CPU may do with its pages (SET_ATTR requires read-write; `mprotect` changes
    /// it).
    pub cpu: CpuAccess,
}

impl SvmRange {
    fn new(start: u64, end: u64, attrs: SvmAttributes) -> Self {
        SvmRange {
            start,
            end,
            attrs,
            vram: None,
            placed: 0,
            fault_mapped: 0,
            cpu: CpuAccess::ReadWrite,
        }
    }

    fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Where the bytes are: 0 for system memory, else the gpu_id whose VRAM holds them.
    pub fn actual_loc(&self) -> u32 {
        self.vram.as_ref().map_or(0, |n| n.gpu_id)
    }

    /// The part from `at` on, leaving `[start, at)` in `self`.
    fn split_off(&mut self, at: u64) -> SvmRange {
        let mut tail = self.clone();
        tail.start = at;
        self.end = at;
        tail
    }

    /// Whether `next` (starting at `self.end`) can join this range.
    fn joins(&self, next: &SvmRange) -> bool {
        self.end == next.start
            && self.attrs == next.attrs
            && self.fault_mapped == next.fault_mapped
            && self.cpu == next.cpu
            && match (&self.vram, &next.vram) {
                (None, None) => true,
                // Placed together (one buffer in the kernel: TTM evicts it whole).
                (Some(a), Some(b)) => Arc::ptr_eq(a, b) && self.placed == next.placed,
                _ => false,
            }
    }
}

/// What the SVM code of one process did, for tests and tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SvmStats {
    /// Ranges moved from system memory to VRAM.
    pub migrations_to_vram: u64,
    /// Ranges moved from VRAM to system memory.
    pub migrations_to_ram: u64,
    /// Of those, ranges a full VRAM evicted to make room for another (TTM eviction).
    pub vram_evictions: u64,
    /// Times the process's queues were evicted around a migration (XNACK off).
    pub queue_evictions: u64,
    /// Times they were restored after one.
    pub queue_restores: u64,
    /// GPU faults recovered (XNACK on).
    pub recoverable_faults: u64,
    /// Page runs dropped because the CPU unmapped them.
    pub cpu_unmaps: u64,
    /// Notifier calls for a CPU protection change (`mprotect`, fork) that hit ranges.
    pub cpu_protection_changes: u64,
    /// Bytes of the ranges held against the system-memory limit (XNACK off only).
    pub reserved_bytes: u64,
}

/// The SVM ranges of one process (`svm_range_list`).
#[derive(Debug, Default)]
pub struct SvmRanges {
    ranges: BTreeMap<u64, SvmRange>,
    /// The last [`SvmRange::placed`] given out.
    placements: u64,
    /// Counters.
    pub stats: SvmStats,
}

impl SvmRanges {
    /// The ranges in address order.
    pub fn iter(&self) -> impl Iterator<Item = &SvmRange> {
        self.ranges.values()
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// No ranges.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The range holding `addr`.
    pub fn find(&self, addr: u64) -> Option<&SvmRange> {
        self.ranges
            .range(..=addr)
            .next_back()
            .map(|(_, r)| r)
            .filter(|r| addr < r.end)
    }

    /// Whether any range overlaps `[start, end)`.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        self.keys_in(start, end).next().is_some()
    }

    /// Start addresses of the ranges overlapping `[start, end)`.
    fn keys_in(&self, start: u64, end: u64) -> impl Iterator<Item = u64> + '_ {
        let first = self
            .ranges
            .range(..=start)
            .next_back()
            .filter(|(_, r)| r.end > start)
            .map(|(&k, _)| k)
            .unwrap_or(start);
        self.ranges.range(first..end).map(|(&k, _)| k)
    }

    /// Splits the range holding `at` so that one starts there.
    fn split_at(&mut self, at: u64) {
        let Some((&k, r)) = self.ranges.range_mut(..at).next_back() else {
            return;
        };
        if r.end > at {
            let tail = r.split_off(at);
            log::trace!(target: crate::layer::SVM, "split [{k:#x}, {:#x}) at {at:#x}", tail.end);
            self.ranges.insert(at, tail);
        }
    }

    /// Splits at both ends of `[start, end)` and fills its holes with new ranges of `fresh`
    /// attributes; returns the start addresses of the ranges that now tile the span.
    fn carve(&mut self, start: u64, end: u64, fresh: SvmAttributes) -> Vec<u64> {
        self.split_at(start);
        self.split_at(end);
        let mut cur = start;
        let mut keys = Vec::new();
        let existing: Vec<(u64, u64)> = self
            .ranges
            .range(start..end)
            .map(|(&k, r)| (k, r.end))
            .collect();
        for (k, e) in existing {
            if k > cur {
                self.ranges.insert(cur, SvmRange::new(cur, k, fresh));
                keys.push(cur);
            }
            keys.push(k);
            cur = e;
        }
        if cur < end {
            self.ranges.insert(cur, SvmRange::new(cur, end, fresh));
            keys.push(cur);
        }
        keys
    }

    /// Joins neighbours that became equal.
    fn coalesce(&mut self) {
        let keys: Vec<u64> = self.ranges.keys().copied().collect();
        let mut prev: Option<u64> = None;
        for k in keys {
            if let Some(p) = prev {
                let joins = self.ranges[&p].joins(&self.ranges[&k]);
                if joins {
                    if let Some(r) = self.ranges.remove(&k) {
                        if let Some(head) = self.ranges.get_mut(&p) {
                            head.end = r.end;
                        }
                    }
                    continue;
                }
            }
            prev = Some(k);
        }
    }

    /// Removes `[start, end)` from the ranges, returning what was there.
    fn remove(&mut self, start: u64, end: u64) -> Vec<SvmRange> {
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<u64> = self.ranges.range(start..end).map(|(&k, _)| k).collect();
        keys.into_iter()
            .filter_map(|k| self.ranges.remove(&k))
            .collect()
    }
}

/// Whether every page of `[start, end)` is mapped in this process. `msync(MS_ASYNC)` does not
/// write anything back for private memory and fails with `ENOMEM` on an unmapped page.
fn cpu_mapped(start: u64, end: u64) -> bool {
    if start >= end {
        return true;
    }
    let Ok(len) = usize::try_from(end - start) else {
        return false;
    };
    // SAFETY: msync only inspects the mappings of the range (MS_ASYNC schedules no write-back
    // of private pages and never changes memory); an unmapped or bad range is an error return.
    unsafe { libc::msync(start as *mut libc::c_void, len, libc::MS_ASYNC) == 0 }
}

/// The unmapped page runs inside `[start, end)` (bisecting with [`cpu_mapped`]).
fn unmapped_runs(start: u64, end: u64, out: &mut Vec<(u64, u64)>) {
    if cpu_mapped(start, end) {
        return;
    }
    if end - start <= PAGE {
        match out.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => out.push((start, end)),
        }
        return;
    }
    let mid = start + ((end - start) / PAGE / 2) * PAGE;
    unmapped_runs(start, mid, out);
    unmapped_runs(mid, end, out);
}

/// Whether the CPU may read and write every page of `[start, end)`. SET_ATTR refuses what it
/// could not copy or hand to the GPU without faulting the host (where the kernel would map a
/// read-only VMA read-only).
fn cpu_read_write(start: u64, end: u64) -> bool {
    cpu_access(start, end) == CpuAccess::ReadWrite
}

/// What the CPU may do with every page of `[start, end)`, from `/proc/self/maps`.
fn cpu_access(start: u64, end: u64) -> CpuAccess {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return CpuAccess::None;
    };
    let mut access = CpuAccess::ReadWrite;
    let mut cur = start;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        if b <= cur || a > cur {
            continue;
        }
        if !perms.starts_with('r') {
            return CpuAccess::None;
        }
        if !perms.starts_with("rw") {
            access = CpuAccess::ReadOnly;
        }
        cur = b;
        if cur >= end {
            return access;
        }
    }
    if cur >= end {
        access
    } else {
        CpuAccess::None
    }
}

/// Whether every page of `[start, end)` is private anonymous memory (`/proc/self/maps`: a
/// private mapping of no file). Only such pages migrate to VRAM: the kernel's
/// `migrate_vma_setup` collects anonymous pages alone, so a file's pages (a shared or private
/// file mapping, shared memory) stay in system memory, where the GPUs map them and write
/// through to the file.
fn cpu_private_anonymous(start: u64, end: u64) -> bool {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    let mut cur = start;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms), Some(_offset), Some(_dev), Some(inode)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        if b <= cur || a > cur {
            continue;
        }
        if perms.as_bytes().get(3) != Some(&b'p') || inode != "0" {
            return false;
        }
        cur = b;
        if cur >= end {
            return true;
        }
    }
    cur >= end
}

/// `svm_migrate_ram_to_vram`: the range moves into `node`'s VRAM: its bytes are accounted
/// there; `false` when it stays where it is (a file's pages, which the kernel does not
/// migrate). The bytes themselves stay in the CPU's pages: the model's VRAM is host memory, so
/// moving them would only cost host memory for pages the client never touched (an untouched
/// page is the shared zero page for the CPU's and the GPU's reads alike) and give CPU readers
/// a window without the data; what the CPU and the GPUs see is the same either way.
fn migrate_to_vram(r: &mut SvmRange, node: &Arc<KfdNode>) -> KResult<bool> {
    if r.vram.as_ref().is_some_and(|n| Arc::ptr_eq(n, node)) {
        return Ok(false);
    }
    if r.vram.is_some() {
        migrate_to_ram(r)?;
    }
    if r.cpu == CpuAccess::None {
        // Its bytes cannot be read through the CPU mapping.
        return Err(Errno::EFAULT);
    }
    if !cpu_private_anonymous(r.start, r.end) {
        log::debug!(target: crate::layer::SVM, "[{:#x}, {:#x}) is not all anonymous memory: it stays in system memory", r.start, r.end);
        return Ok(false);
    }
    node.reserve_vram(r.len())?;
    log::debug!(target: crate::layer::SVM, "migrated [{:#x}, {:#x}) to VRAM of gpu {:#x}", r.start, r.end, node.gpu_id);
    r.vram = Some(node.clone());
    Ok(true)
}

/// `svm_migrate_vram_to_ram`: the range leaves its GPU's VRAM (its bytes never left the CPU's
/// pages, so a CPU thread reading meanwhile sees them throughout).
fn migrate_to_ram(r: &mut SvmRange) -> KResult<()> {
    let Some(node) = r.vram.take() else {
        return Ok(());
    };
    node.release_vram(r.len());
    log::debug!(target: crate::layer::SVM, "migrated [{:#x}, {:#x}) from VRAM of gpu {:#x} to system memory", r.start, r.end, node.gpu_id);
    Ok(())
}

/// Which GPUs (by index) must map range `r` now (`svm_range_validate_and_map`): with XNACK off
/// every GPU with access; with XNACK on the in-place ones, the GPU whose VRAM holds it, every
/// accessing GPU when GPU_ALWAYS_MAPPED, and those a fault mapped it on.
fn mapped_gpus(r: &SvmRange, xnack: bool, gpu_index: impl Fn(u32) -> Option<usize>) -> u64 {
    let any = r.attrs.access | r.attrs.access_in_place;
    if r.cpu == CpuAccess::None {
        return 0;
    }
    if !xnack {
        return any;
    }
    let mut m = r.attrs.access_in_place;
    if let Some(i) = gpu_index(r.actual_loc()) {
        m |= r.attrs.access & (1 << i);
    }
    if r.attrs.flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED != 0 {
        m |= r.attrs.access;
    }
    m | (r.fault_mapped & any)
}

fn gpu_index_of(st: &ProcessState) -> impl Fn(u32) -> Option<usize> + '_ {
    |gpu_id| st.pdds.iter().position(|d| d.node.gpu_id == gpu_id)
}

/// Rebuilds every GPU VM's SVM mappings from the ranges (the model's page-table update).
pub(crate) fn sync_gpu_mappings(st: &ProcessState) {
    let idx = gpu_index_of(st);
    for (d, pdd) in st.pdds.iter().enumerate() {
        let mut vm = pdd.vm.write().unwrap_or_else(|e| e.into_inner());
        vm.unmap_handle(SVM_MAPPING_HANDLE);
        for r in st.svm.iter() {
            if mapped_gpus(r, st.xnack_enabled, &idx) & (1 << d) == 0 {
                continue;
            }
            // SAFETY: the client gave this range to the GPU through AMDKFD_IOC_SVM, the
            // promise `Process::ioctl` takes for every address handed to the device; pages
            // the CPU unmapped are dropped from the ranges before they are mapped again.
            let backing = Backing::User(unsafe { UserMemory::new(r.start) });
            let ok = vm.map(VmMapping {
                va: r.start,
                len: r.len(),
                backing,
                writable: r.attrs.flags & KFD_IOCTL_SVM_FLAG_GPU_RO == 0
                    && r.cpu == CpuAccess::ReadWrite,
                handle: SVM_MAPPING_HANDLE,
            });
            if !ok {
                log::warn!(target: crate::layer::SVM, "[{:#x}, {:#x}) overlaps a buffer on gpu {:#x}", r.start, r.end, pdd.node.gpu_id);
            }
        }
    }
}

/// `svm_range_unmap_from_cpu`: the CPU no longer maps `[start, end)`; the ranges there go and
/// the GPUs stop mapping them.
pub(crate) fn cpu_unmapped(p: &ProcessInner, st: &mut ProcessState, start: u64, end: u64) {
    let removed = st.svm.remove(start, end);
    if removed.is_empty() {
        return;
    }
    unmap_from_gpus(
        st,
        p.owner_pid,
        start,
        end,
        Some(UnmapTrigger::UnmapFromCpu),
    );
    if !st.xnack_enabled {
        let bytes = removed.iter().map(SvmRange::len).sum();
        unreserve(p, st, bytes);
    }
    for r in &removed {
        if let Some(node) = &r.vram {
            node.release_vram(r.len());
        }
        log::debug!(target: crate::layer::SVM, "CPU unmapped [{:#x}, {:#x}): range dropped, GPU mappings removed", r.start, r.end);
    }
    st.svm.stats.cpu_unmaps += 1;
    sync_gpu_mappings(st);
}

/// `svm_range_evict` from the MMU notifier: the CPU changed the protection of
/// `[start, end)` (or fork made it copy-on-write). The ranges there take the new protection;
/// with XNACK off (or GPU_ALWAYS_MAPPED) the queues are evicted while the GPU mappings are
/// rebuilt and then restored, with XNACK on the GPUs lose the pages (they fault them in
/// again, if the CPU allows the access).
pub(crate) fn cpu_protection_changed(
    p: &ProcessInner,
    st: &mut ProcessState,
    start: u64,
    end: u64,
) {
    let start = start & !(PAGE - 1);
    let end = end.saturating_add(PAGE - 1) & !(PAGE - 1);
    if !st.svm.overlaps(start, end) {
        return;
    }
    st.svm.split_at(start);
    st.svm.split_at(end);
    let keys: Vec<u64> = st.svm.keys_in(start, end).collect();
    let always = keys
        .iter()
        .any(|k| st.svm.ranges[k].attrs.flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED != 0);
    let evicted = (!st.xnack_enabled || always) && evict_queues(p, st);
    let mut unmap = Vec::new();
    for k in &keys {
        let Some(r) = st.svm.ranges.get_mut(k) else {
            continue;
        };
        let before = r.cpu;
        r.cpu = cpu_access(r.start, r.end);
        if st.xnack_enabled && r.attrs.flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED == 0 {
            r.fault_mapped = 0;
            unmap.push((r.start, r.end));
        }
        log::debug!(target: crate::layer::SVM, "CPU protection of [{:#x}, {:#x}): {before:?} -> {:?}", r.start, r.end, r.cpu);
    }
    for (s, e) in unmap {
        unmap_from_gpus(st, p.owner_pid, s, e, Some(UnmapTrigger::MmuNotify));
    }
    st.svm.stats.cpu_protection_changes += 1;
    st.svm.coalesce();
    sync_gpu_mappings(st);
    if evicted {
        restore_after_migration(p, st);
    }
}

/// Drops the pages the CPU unmapped since the last look (the model's MMU notifier): first
/// the unmaps a shim reported while the process was busy (`svm_range_deferred_list_work`),
/// then whatever `msync` finds unmapped.
pub(crate) fn reap_cpu_unmapped(p: &ProcessInner, st: &mut ProcessState) {
    let deferred = std::mem::take(&mut *crate::process::lock(&p.svm_deferred));
    for change in deferred {
        match change {
            CpuChange::Unmap(s, e) => cpu_unmapped(p, st, s, e),
            CpuChange::Protect(s, e) => cpu_protection_changed(p, st, s, e),
        }
    }
    let mut runs = Vec::new();
    for r in st.svm.iter() {
        unmapped_runs(r.start, r.end, &mut runs);
    }
    for (s, e) in runs {
        cpu_unmapped(p, st, s, e);
    }
}

/// `amdgpu_amdkfd_unreserve_mem_limit` of SVM bytes (charged as USERPTR: system memory).
fn unreserve(p: &ProcessInner, st: &mut ProcessState, bytes: u64) {
    p.model.mem_limit.unreserve(bytes, 0);
    st.svm.stats.reserved_bytes = st.svm.stats.reserved_bytes.saturating_sub(bytes);
}

/// `svm_range_switch_xnack_reserve_mem`: with XNACK off every page of every range counts
/// against the system-memory limit as USERPTR memory does; with XNACK on none does (pages
/// are only mapped when faulted, and can be evicted). Turning XNACK off reserves them all,
/// or nothing and `ENOMEM` (the mode stays on); turning it on gives them back. Sets the mode.
pub(crate) fn switch_xnack_reserve_mem(
    p: &ProcessInner,
    st: &mut ProcessState,
    xnack: bool,
) -> KResult<()> {
    reap_cpu_unmapped(p, st);
    let bytes: u64 = st.svm.iter().map(SvmRange::len).sum();
    if xnack {
        unreserve(p, st, bytes);
    } else if bytes != 0 {
        p.model.mem_limit.reserve(bytes, 0).inspect_err(|_| {
            log::debug!(target: crate::layer::SVM, "pasid {:#x}: XNACK off would hold {bytes:#x} bytes of SVM memory over the limit", p.pasid);
        })?;
        st.svm.stats.reserved_bytes += bytes;
    }
    st.xnack_enabled = xnack;
    Ok(())
}

/// Process teardown: ranges in VRAM go back to system memory so the CPU keeps its bytes.
pub(crate) fn teardown(p: &ProcessInner, st: &mut ProcessState) {
    reap_cpu_unmapped(p, st);
    let all = std::mem::take(&mut st.svm.ranges);
    if !st.xnack_enabled {
        let bytes = all.values().map(SvmRange::len).sum();
        unreserve(p, st, bytes);
    }
    for (_, mut r) in all {
        if let Err(e) = migrate_to_ram(&mut r) {
            log::warn!(target: crate::layer::SVM, "[{:#x}, {:#x}) left in VRAM at teardown: {e}", r.start, r.end);
        }
    }
}

/// `svm_range_check_attr`: every attribute type known, every gpu_id one of the process's.
fn check_attrs(st: &ProcessState, attrs: &[kfd_ioctl_svm_attribute]) -> KResult<()> {
    let known = |gpu_id: u32| st.pdds.iter().any(|d| d.node.gpu_id == gpu_id);
    for a in attrs {
        let ok = match a.r#type {
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => {
                a.value == KFD_IOCTL_SVM_LOCATION_SYSMEM
                    || a.value == KFD_IOCTL_SVM_LOCATION_UNDEFINED
                    || known(a.value)
            }
            KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => {
                a.value == KFD_IOCTL_SVM_LOCATION_SYSMEM || known(a.value)
            }
            KFD_IOCTL_SVM_ATTR_ACCESS
            | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
            | KFD_IOCTL_SVM_ATTR_NO_ACCESS => known(a.value),
            KFD_IOCTL_SVM_ATTR_SET_FLAGS
            | KFD_IOCTL_SVM_ATTR_CLR_FLAGS
            | KFD_IOCTL_SVM_ATTR_GRANULARITY => true,
            _ => false,
        };
        if !ok {
            log::debug!(target: crate::layer::SVM, "bad attribute type {:#x} value {:#x}", a.r#type, a.value);
            return Err(Errno::EINVAL);
        }
    }
    Ok(())
}

/// `svm_range_is_valid`: every page mapped by the CPU (else `EFAULT`) and no KFD buffer mapped
/// in the span on any GPU (else `EADDRINUSE`).
fn check_span(st: &ProcessState, start: u64, end: u64) -> KResult<()> {
    if !cpu_mapped(start, end) {
        log::debug!(target: crate::layer::SVM, "[{start:#x}, {end:#x}) is not all mapped by the CPU");
        return Err(Errno::EFAULT);
    }
    for pdd in &st.pdds {
        // A doorbell mapping is VM_IO memory, which SVM refuses.
        if pdd.node.gpu.is_watched_doorbell_mapping(start, end) {
            log::debug!(target: crate::layer::SVM, "[{start:#x}, {end:#x}) overlaps a doorbell mapping");
            return Err(Errno::EFAULT);
        }
        let vm = pdd.vm.read().unwrap_or_else(|e| e.into_inner());
        if vm
            .mappings()
            .any(|m| m.handle != SVM_MAPPING_HANDLE && m.va < end && start < m.va + m.len)
        {
            log::debug!(target: crate::layer::SVM, "[{start:#x}, {end:#x}) overlaps a buffer on gpu {:#x}", pdd.node.gpu_id);
            return Err(Errno::EADDRINUSE);
        }
    }
    Ok(())
}

/// `svm_range_best_prefetch_location`: the prefetch location, unless other GPUs must reach the
/// range in place — the model's GPUs share no XGMI hive, so that means system memory.
fn best_prefetch_location(r: &SvmRange, xnack: bool, idx: impl Fn(u32) -> Option<usize>) -> u32 {
    let best = r.attrs.prefetch_loc;
    if best == KFD_IOCTL_SVM_LOCATION_SYSMEM || best == KFD_IOCTL_SVM_LOCATION_UNDEFINED {
        return best;
    }
    let Some(home) = idx(best) else {
        return KFD_IOCTL_SVM_LOCATION_SYSMEM;
    };
    let others = if xnack {
        r.attrs.access_in_place
    } else {
        r.attrs.access | r.attrs.access_in_place
    } & !(1 << home);
    if others != 0 {
        KFD_IOCTL_SVM_LOCATION_SYSMEM
    } else {
        best
    }
}

/// `svm_range_unmap_from_gpus`: the GPUs that map part of `[start, end)` as SVM memory stop
/// mapping it (and SMI clients hear of it, with `trigger`; `None` tells no one).
fn unmap_from_gpus(
    st: &ProcessState,
    pid: u32,
    start: u64,
    end: u64,
    trigger: Option<UnmapTrigger>,
) {
    for pdd in &st.pdds {
        let mut vm = pdd.vm.write().unwrap_or_else(|e| e.into_inner());
        let stale: Vec<u64> = vm
            .mappings()
            .filter(|m| m.handle == SVM_MAPPING_HANDLE && m.va < end && start < m.va + m.len)
            .map(|m| m.va)
            .collect();
        if stale.is_empty() {
            continue;
        }
        for va in stale {
            vm.unmap(va);
        }
        if let Some(t) = trigger {
            smi::unmap_from_gpu(&pdd.node, pid, start, end, t);
        }
    }
}

/// Moves range `key` to `loc` (0: system memory, else a gpu_id). Returns whether bytes moved.
///
/// Each leg happens in the kernel's order: the migration-start event (`svm_migrate_vma_to_*`
/// sends it before `migrate_vma_setup`), then the MMU notifier that setup calls
/// ([`invalidate_for_migration`]), then the copy and the migration-end event. `evicted` says
/// whether the process's queues are already stopped for this operation.
fn migrate(
    p: &ProcessInner,
    st: &mut ProcessState,
    key: u64,
    loc: u32,
    trigger: MigrateTrigger,
    evicted: &mut bool,
) -> KResult<bool> {
    let pid = p.owner_pid;
    let node = if loc == KFD_IOCTL_SVM_LOCATION_SYSMEM {
        None
    } else {
        let i = st.pdd_index(loc)?;
        Some(st.pdds[i].node.clone())
    };
    let Some(r) = st.svm.ranges.get(&key) else {
        return Ok(false);
    };
    if r.actual_loc() == loc {
        return Ok(false);
    }
    let (start, end) = (r.start, r.end);
    let start_loc = r.actual_loc();
    let mut m = smi::Migration {
        start,
        end,
        from: start_loc,
        to: loc,
        prefetch_loc: r.attrs.prefetch_loc,
        preferred_loc: r.attrs.preferred_loc,
        trigger,
    };
    // VRAM to another GPU's VRAM goes through system memory.
    if let Some(from) = r.vram.clone() {
        m.to = KFD_IOCTL_SVM_LOCATION_SYSMEM;
        smi::migration_start(&from, pid, &m);
        invalidate_for_migration(p, st, start, end, evicted);
        let r = st.svm.ranges.get_mut(&key).ok_or(Errno::EINVAL)?;
        migrate_to_ram(r)?;
        smi::migration_end(&from, pid, &m);
        st.svm.stats.migrations_to_ram += 1;
    }
    if let Some(n) = node {
        m.from = KFD_IOCTL_SVM_LOCATION_SYSMEM;
        m.to = loc;
        smi::migration_start(&n, pid, &m);
        invalidate_for_migration(p, st, start, end, evicted);
        make_room_in_vram(p, st, &n, key, end - start, evicted);
        st.svm.placements += 1;
        let placed = st.svm.placements;
        let r = st.svm.ranges.get_mut(&key).ok_or(Errno::EINVAL)?;
        let moved = migrate_to_vram(r, &n)?;
        r.placed = placed;
        smi::migration_end(&n, pid, &m);
        if !moved {
            // Only the leg out of another GPU's VRAM (if any) moved bytes.
            return Ok(start_loc != KFD_IOCTL_SVM_LOCATION_SYSMEM);
        }
        st.svm.stats.migrations_to_vram += 1;
    }
    Ok(true)
}

/// TTM's eviction for a range that does not fit `node`'s VRAM: the process's other ranges
/// there go back to system memory, least recently placed first (`svm_range_evict_svm_bo`,
/// SMI trigger TTM_EVICTION), until `len` bytes are free or none is left. What still does not
/// fit makes the migration fail with `ENOMEM`, as a VRAM allocation TTM cannot satisfy.
fn make_room_in_vram(
    p: &ProcessInner,
    st: &mut ProcessState,
    node: &Arc<KfdNode>,
    key: u64,
    len: u64,
    evicted: &mut bool,
) {
    if node.vram_available() >= len {
        return;
    }
    let mut victims: Vec<(u64, u64)> = st
        .svm
        .ranges
        .iter()
        .filter(|&(&k, r)| k != key && r.vram.as_ref().is_some_and(|n| Arc::ptr_eq(n, node)))
        .map(|(&k, r)| (r.placed, k))
        .collect();
    victims.sort_unstable();
    for (_, k) in victims {
        if node.vram_available() >= len {
            break;
        }
        let Some(r) = st.svm.ranges.get(&k) else {
            continue;
        };
        let m = smi::Migration {
            start: r.start,
            end: r.end,
            from: node.gpu_id,
            to: KFD_IOCTL_SVM_LOCATION_SYSMEM,
            prefetch_loc: r.attrs.prefetch_loc,
            preferred_loc: r.attrs.preferred_loc,
            trigger: MigrateTrigger::TtmEviction,
        };
        smi::migration_start(node, p.owner_pid, &m);
        invalidate_for_migration(p, st, m.start, m.end, evicted);
        if let Some(r) = st.svm.ranges.get_mut(&k) {
            let _ = migrate_to_ram(r);
        }
        smi::migration_end(node, p.owner_pid, &m);
        st.svm.stats.migrations_to_ram += 1;
        st.svm.stats.vram_evictions += 1;
        log::debug!(target: crate::layer::SVM, "VRAM of gpu {:#x} full: [{:#x}, {:#x}) evicted to system memory", node.gpu_id, m.start, m.end);
    }
}

/// `svm_range_evict` for the MMU_NOTIFY_MIGRATE invalidation a migration raises: with XNACK
/// off the first one stops the process's queues (they come back once the range is mapped
/// again); with XNACK on the GPUs unmap the range (SMI trigger MMU_NOTIFY_MIGRATE). Either
/// way the GPUs lose the range before its bytes move, so an engine write meanwhile faults
/// instead of landing in the old copy (with XNACK off the kernel leaves the stopped GPUs'
/// mapping alone and tells no SMI client; the model drops it silently).
fn invalidate_for_migration(
    p: &ProcessInner,
    st: &mut ProcessState,
    start: u64,
    end: u64,
    evicted: &mut bool,
) {
    if st.xnack_enabled {
        unmap_from_gpus(
            st,
            p.owner_pid,
            start,
            end,
            Some(UnmapTrigger::MmuNotifyMigrate),
        );
    } else {
        if !*evicted {
            *evicted = evict_queues(p, st);
        }
        unmap_from_gpus(st, p.owner_pid, start, end, None);
    }
}

/// `kgd2kfd_quiesce_mm` for the SVM code (trigger SVM): the process's queues stop until
/// [`restore_after_migration`]. `false` when it has none.
fn evict_queues(p: &ProcessInner, st: &mut ProcessState) -> bool {
    if st.pqm.is_empty() {
        return false;
    }
    for pdd in &st.pdds {
        smi::queue_eviction(&pdd.node, p.owner_pid, smi::EvictionTrigger::Svm);
        if let Err(e) = pdd.node.dqm().evict_process(&pdd.node.gpu, p.pasid) {
            log::debug!(target: crate::layer::SVM, "evicting for a migration on gpu {:#x}: {e}", pdd.node.gpu_id);
        }
    }
    st.svm.stats.queue_evictions += 1;
    log::debug!(target: crate::layer::SVM, "pasid {:#x}: queues evicted for a migration", p.pasid);
    true
}

fn restore_after_migration(p: &ProcessInner, st: &mut ProcessState) {
    for pdd in &st.pdds {
        if let Err(e) = pdd
            .node
            .dqm()
            .restore_process(&pdd.node.gpu, p.pasid, pdd.pd_base)
        {
            log::debug!(target: crate::layer::SVM, "restoring after a migration on gpu {:#x}: {e}", pdd.node.gpu_id);
        }
        smi::queue_restore(&pdd.node, p.owner_pid, p.model.config.kernel);
    }
    st.svm.stats.queue_restores += 1;
    log::debug!(target: crate::layer::SVM, "pasid {:#x}: queues restored after a migration", p.pasid);
}

fn all_gpus(st: &ProcessState) -> u64 {
    (0..st.pdds.len()).fold(0, |m, i| m | 1 << i)
}

/// `svm_range_set_attr`.
fn set_attr(
    p: &ProcessInner,
    st: &mut ProcessState,
    start: u64,
    end: u64,
    attrs: &[kfd_ioctl_svm_attribute],
) -> KResult<()> {
    check_attrs(st, attrs)?;
    check_span(st, start, end)?;
    if !cpu_read_write(start, end) {
        log::debug!(target: crate::layer::SVM, "[{start:#x}, {end:#x}) is not all readable and writable by the CPU");
        return Err(Errno::EFAULT);
    }
    // `svm_range_new`: with XNACK off the pages no range held yet count against the
    // system-memory limit (as USERPTR memory).
    if !st.xnack_enabled {
        let covered: u64 = st
            .svm
            .keys_in(start, end)
            .map(|k| {
                let r = &st.svm.ranges[&k];
                r.end.min(end) - r.start.max(start)
            })
            .sum();
        let new = (end - start) - covered;
        if new != 0 {
            p.model.mem_limit.reserve(new, 0).inspect_err(|_| {
                log::info!(target: crate::layer::SVM, "SVM mapping failed, exceeds resident system memory limit");
            })?;
            st.svm.stats.reserved_bytes += new;
        }
    }
    let fresh = SvmAttributes::new_range(all_gpus(st), st.xnack_enabled);
    let kernel = p.model.config.kernel;
    let keys = st.svm.carve(start, end, fresh);
    for &k in &keys {
        let gpu_ids: Vec<u32> = st.pdds.iter().map(|d| d.node.gpu_id).collect();
        let idx = |g: u32| gpu_ids.iter().position(|&x| x == g);
        if let Some(r) = st.svm.ranges.get_mut(&k) {
            for a in attrs {
                r.attrs.apply(a, idx, kernel);
            }
        }
    }
    let mut evicted = false;
    let mut result = Ok(());
    for &k in &keys {
        let Some(r) = st.svm.ranges.get(&k) else {
            continue;
        };
        let best = best_prefetch_location(r, st.xnack_enabled, gpu_index_of(st));
        if best == KFD_IOCTL_SVM_LOCATION_UNDEFINED
            || (best == KFD_IOCTL_SVM_LOCATION_SYSMEM && r.vram.is_none())
            || best == r.actual_loc()
        {
            continue;
        }
        if let Err(e) = migrate(p, st, k, best, MigrateTrigger::Prefetch, &mut evicted) {
            result = Err(e);
            break;
        }
    }
    st.svm.coalesce();
    sync_gpu_mappings(st);
    if evicted {
        restore_after_migration(p, st);
    }
    result
}

/// `svm_range_get_attr`: over a span holding several ranges, a location is reported only when
/// every range agrees (else UNDEFINED), access is what every range grants, SET_FLAGS is the
/// flags all ranges have, CLR_FLAGS the flags no range has, granularity the smallest. A span
/// without ranges reports the defaults.
fn get_attr(
    st: &ProcessState,
    start: u64,
    end: u64,
    attrs: &mut [kfd_ioctl_svm_attribute],
) -> KResult<()> {
    check_span(st, start, end)?;
    let (mut get_pref, mut get_prefetch, mut get_access, mut get_flags, mut get_gran) =
        (false, false, false, false, false);
    for a in attrs.iter() {
        match a.r#type {
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => get_pref = true,
            KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => get_prefetch = true,
            KFD_IOCTL_SVM_ATTR_ACCESS => get_access = true,
            KFD_IOCTL_SVM_ATTR_SET_FLAGS | KFD_IOCTL_SVM_ATTR_CLR_FLAGS => get_flags = true,
            KFD_IOCTL_SVM_ATTR_GRANULARITY => get_gran = true,
            other => {
                log::debug!(target: crate::layer::SVM, "GET_ATTR of type {other:#x}");
                return Err(Errno::EINVAL);
            }
        }
    }
    let supported = all_gpus(st);
    let mut location = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
    let mut prefetch = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
    let mut granularity = u8::MAX;
    let mut flags_and = u32::MAX;
    let mut flags_or = 0u32;
    let (mut access, mut in_place) = (supported, supported);
    let keys: Vec<u64> = st.svm.keys_in(start, end).collect();
    if keys.is_empty() {
        let d = SvmAttributes::new_range(supported, st.xnack_enabled);
        location = d.preferred_loc;
        prefetch = d.prefetch_loc;
        granularity = d.granularity;
        flags_and = d.flags;
        flags_or = d.flags;
        access = d.access;
        in_place = 0;
    }
    let agree = |acc: &mut u32, get: &mut bool, v: u32| {
        if !*get {
            return;
        }
        if v == KFD_IOCTL_SVM_LOCATION_UNDEFINED
            || (*acc != KFD_IOCTL_SVM_LOCATION_UNDEFINED && *acc != v)
        {
            *acc = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
            *get = false;
        } else {
            *acc = v;
        }
    };
    for k in keys {
        let r = &st.svm.ranges[&k];
        agree(&mut location, &mut get_pref, r.attrs.preferred_loc);
        agree(&mut prefetch, &mut get_prefetch, r.attrs.prefetch_loc);
        if get_access {
            access &= r.attrs.access;
            in_place &= r.attrs.access_in_place;
        }
        if get_flags {
            flags_and &= r.attrs.flags;
            flags_or |= r.attrs.flags;
        }
        if get_gran {
            granularity = granularity.min(r.attrs.granularity);
        }
    }
    for a in attrs.iter_mut() {
        match a.r#type {
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => a.value = location,
            KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => a.value = prefetch,
            KFD_IOCTL_SVM_ATTR_ACCESS => {
                let i = st.pdd_index(a.value)?;
                a.r#type = if access & (1 << i) != 0 {
                    KFD_IOCTL_SVM_ATTR_ACCESS
                } else if in_place & (1 << i) != 0 {
                    KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
                } else {
                    KFD_IOCTL_SVM_ATTR_NO_ACCESS
                };
            }
            KFD_IOCTL_SVM_ATTR_SET_FLAGS => a.value = flags_and,
            KFD_IOCTL_SVM_ATTR_CLR_FLAGS => a.value = !flags_or,
            KFD_IOCTL_SVM_ATTR_GRANULARITY => a.value = u32::from(granularity),
            _ => {}
        }
    }
    Ok(())
}

/// `AMDKFD_IOC_SVM`: `kbuf` holds the 24-byte header and, after it, the `nattr` attributes the
/// caller's request size covered (libhsakmt adds them to the size field of the request code).
pub(crate) fn ioctl(p: &ProcessInner, kbuf: &mut [u8]) -> KResult<i32> {
    let header_len = core::mem::size_of::<kfd_ioctl_svm_args>();
    let (args, _) = kfd_ioctl_svm_args::read_from_prefix(kbuf).map_err(|_| Errno::EFAULT)?;
    log::debug!(target: crate::layer::SVM, "pasid {:#x}: SVM op {} [{:#x} +{:#x}] nattr {}", p.pasid, args.op, args.start_addr, args.size, args.nattr);
    if args.start_addr % PAGE != 0
        || args.size % PAGE != 0
        || args.start_addr == 0
        || args.size == 0
    {
        return Err(Errno::EINVAL);
    }
    let end = args
        .start_addr
        .checked_add(args.size)
        .ok_or(Errno::EINVAL)?;
    let attr_len = core::mem::size_of::<kfd_ioctl_svm_attribute>();
    let n = args.nattr as usize;
    let attr_bytes = n.checked_mul(attr_len).ok_or(Errno::EINVAL)?;
    let body = kbuf
        .get_mut(header_len..header_len + attr_bytes)
        .ok_or_else(|| {
            log::debug!(target: crate::layer::SVM, "{n} attributes do not fit the request's size");
            Errno::EINVAL
        })?;
    let mut attrs: Vec<kfd_ioctl_svm_attribute> = body
        .chunks_exact(attr_len)
        .filter_map(|c| kfd_ioctl_svm_attribute::read_from_bytes(c).ok())
        .collect();
    let mut st = p.lock();
    reap_cpu_unmapped(p, &mut st);
    match args.op {
        KFD_IOCTL_SVM_OP_SET_ATTR => set_attr(p, &mut st, args.start_addr, end, &attrs)?,
        KFD_IOCTL_SVM_OP_GET_ATTR => {
            get_attr(&st, args.start_addr, end, &mut attrs)?;
            for (c, a) in body.chunks_exact_mut(attr_len).zip(&attrs) {
                c.copy_from_slice(a.as_bytes());
            }
        }
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

/// `svm_range_best_restore_location`: where a range faulted by GPU `gpuidx` should live.
fn best_restore_location(r: &SvmRange, gpu_id: u32, gpuidx: usize) -> u32 {
    if r.attrs.access_in_place & (1 << gpuidx) != 0 {
        return r.actual_loc();
    }
    match r.attrs.preferred_loc {
        KFD_IOCTL_SVM_LOCATION_UNDEFINED => r.actual_loc(),
        loc if loc == gpu_id => gpu_id,
        _ => KFD_IOCTL_SVM_LOCATION_SYSMEM,
    }
}

/// `svm_range_restore_pages`: a GPU page fault of a process with XNACK on. Maps the faulting
/// granule (migrating it where it belongs) and returns whether the fault was recovered; `false`
/// leaves it to the ordinary VM-fault path.
pub(crate) fn restore_pages(p: &ProcessInner, node: &KfdNode, va: u64, write: bool) -> bool {
    let mut st = p.lock();
    if !st.xnack_enabled {
        return false;
    }
    let Ok(gpuidx) = st.pdd_index(node.gpu_id) else {
        return false;
    };
    reap_cpu_unmapped(p, &mut st);
    let page = va & !(PAGE - 1);
    if st.svm.find(page).is_none() {
        // An address the process never registered: with XNACK on the driver makes a range of
        // default attributes for it (`svm_range_create_unregistered_range`), one granule
        // clipped to the neighbouring ranges and to what the CPU maps.
        if !cpu_read_write(page, page + PAGE) || check_span(&st, page, page + PAGE).is_err() {
            return false;
        }
        let g = PAGE << DEFAULT_GRANULARITY;
        let (mut s, mut e) = (page & !(g - 1), (page & !(g - 1)) + g);
        if let Some(prev) = st.svm.ranges.range(..page).next_back().map(|(_, r)| r.end) {
            s = s.max(prev);
        }
        if let Some(&next) = st.svm.ranges.range(page..).next().map(|(k, _)| k) {
            e = e.min(next);
        }
        if !cpu_read_write(s, e) || check_span(&st, s, e).is_err() {
            (s, e) = (page, page + PAGE);
        }
        let fresh = SvmAttributes::new_range(all_gpus(&st), true);
        st.svm.carve(s, e, fresh);
        log::debug!(target: crate::layer::SVM, "fault at {va:#x}: new range [{s:#x}, {e:#x}) for an unregistered address");
    }
    let Some(r) = st.svm.find(page) else {
        return false;
    };
    smi::page_fault_start(node, p.owner_pid, va, write);
    if (r.attrs.access | r.attrs.access_in_place) & (1 << gpuidx) == 0 {
        log::debug!(target: crate::layer::SVM, "fault at {va:#x}: gpu {:#x} has no access", node.gpu_id);
        return false;
    }
    if write && r.attrs.flags & KFD_IOCTL_SVM_FLAG_GPU_RO != 0 {
        return false;
    }
    // `svm_fault_allowed`: the CPU's VMA must allow the access.
    if r.cpu == CpuAccess::None || (write && r.cpu == CpuAccess::ReadOnly) {
        log::debug!(target: crate::layer::SVM, "fault at {va:#x}: the CPU mapping is {:?}", r.cpu);
        return false;
    }
    // Migrate and map one granule around the fault.
    let g = PAGE << r.attrs.granularity.min(40);
    let (gs, ge) = (
        (page & !(g - 1)).max(r.start),
        (page & !(g - 1)).saturating_add(g).min(r.end),
    );
    let best = best_restore_location(r, node.gpu_id, gpuidx);
    st.svm.split_at(gs);
    st.svm.split_at(ge);
    log::info!(target: crate::layer::SVM, "pasid {:#x}: recoverable GPU fault at {va:#x} on gpu {:#x} ({}): range [{gs:#x}, {ge:#x}) -> {}", p.pasid, node.gpu_id, if write { "write" } else { "read" }, if best == 0 { "system memory".to_owned() } else { format!("VRAM of gpu {best:#x}") });
    let mut evicted = false;
    let migrated = match migrate(
        p,
        &mut st,
        gs,
        best,
        MigrateTrigger::PagefaultGpu,
        &mut evicted,
    ) {
        Ok(moved) => moved,
        Err(e) => {
            log::warn!(target: crate::layer::SVM, "migration for the fault at {va:#x} failed: {e}; mapping in place");
            false
        }
    };
    if let Some(r) = st.svm.ranges.get_mut(&gs) {
        r.fault_mapped |= 1 << gpuidx;
    }
    st.svm.coalesce();
    sync_gpu_mappings(&st);
    // A fault the mapping did not cure would only repeat: leave it to the VM-fault path.
    let cured = st.pdds[gpuidx]
        .vm
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .lookup(page)
        .is_some_and(|m| m.handle == SVM_MAPPING_HANDLE);
    if !cured {
        log::warn!(target: crate::layer::SVM, "fault at {va:#x}: still not mapped on gpu {:#x}", node.gpu_id);
        return false;
    }
    st.svm.stats.recoverable_faults += 1;
    smi::page_fault_end(node, p.owner_pid, va, migrated);
    log::info!(target: crate::layer::SVM, "pasid {:#x}: mapped on gpu {:#x}; the queue retries", p.pasid, node.gpu_id);
    true
}

/// `kfd_queue_buffer_svm_get`: whether `[addr, addr+size)` is covered by SVM ranges mapped on
/// GPU `gpuidx` with GPU_ALWAYS_MAPPED (a queue's CWSR area may live there).
pub(crate) fn queue_buffer_in_svm(st: &ProcessState, gpuidx: usize, addr: u64, size: u64) -> bool {
    let page = addr & !(PAGE - 1);
    let Some(end) = page.checked_add(size) else {
        return false;
    };
    let idx = gpu_index_of(st);
    let mut cur = page;
    while cur < end {
        let Some(r) = st.svm.find(cur) else {
            return false;
        };
        let ok = mapped_gpus(r, st.xnack_enabled, &idx) & (1 << gpuidx) != 0
            && (r.attrs.access | r.attrs.access_in_place) & (1 << gpuidx) != 0
            && r.attrs.flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED != 0;
        if !ok {
            return false;
        }
        cur = r.end;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(flags: u32) -> SvmAttributes {
        SvmAttributes {
            flags,
            ..SvmAttributes::new_range(1, false)
        }
    }

    #[test]
    fn carve_splits_at_both_ends_and_fills_holes() {
        let mut s = SvmRanges::default();
        s.carve(0x10000, 0x20000, attrs(1));
        assert_eq!(s.len(), 1);
        let keys = s.carve(0x18000, 0x30000, attrs(1));
        // [0x10000,0x18000) [0x18000,0x20000) [0x20000,0x30000)
        assert_eq!(keys, vec![0x18000, 0x20000]);
        assert_eq!(s.len(), 3);
        let bounds: Vec<(u64, u64)> = s.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(
            bounds,
            vec![(0x10000, 0x18000), (0x18000, 0x20000), (0x20000, 0x30000)]
        );
        s.coalesce();
        assert_eq!(s.len(), 1, "equal neighbours join");
        assert_eq!(
            s.find(0x2ffff).map(|r| (r.start, r.end)),
            Some((0x10000, 0x30000))
        );
        assert!(s.find(0x30000).is_none());
    }

    #[test]
    fn different_attributes_stay_split_and_remove_cuts() {
        let mut s = SvmRanges::default();
        s.carve(0x10000, 0x40000, attrs(1));
        for k in s.carve(0x20000, 0x30000, attrs(1)) {
            s.ranges.get_mut(&k).unwrap().attrs.flags = 2;
        }
        s.coalesce();
        assert_eq!(s.len(), 3);
        let removed = s.remove(0x1f000, 0x21000);
        assert_eq!(removed.len(), 2);
        assert_eq!(
            s.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(),
            vec![(0x10000, 0x1f000), (0x21000, 0x30000), (0x30000, 0x40000)]
        );
        assert!(s.overlaps(0x1e000, 0x1f001));
        assert!(!s.overlaps(0x1f000, 0x21000));
    }

    #[test]
    fn granularity_is_clamped_and_access_bits_exclusive() {
        let mut a = SvmAttributes::new_range(0b11, false);
        let idx = |g: u32| (g == 7).then_some(1usize);
        a.apply(
            &kfd_ioctl_svm_attribute {
                r#type: KFD_IOCTL_SVM_ATTR_GRANULARITY,
                value: 200,
            },
            idx,
            KernelVersion::Linux6_12,
        );
        assert_eq!(a.granularity, MAX_GRANULARITY);
        assert_eq!(
            granularity(200, KernelVersion::Linux6_1),
            200,
            "6.1: as given"
        );
        assert_eq!(
            granularity(0x1FF, KernelVersion::Linux6_1),
            0xFF,
            "6.1: a byte"
        );
        assert_eq!(granularity(0x3F, KernelVersion::Linux6_12), 0x3F);
        a.apply(
            &kfd_ioctl_svm_attribute {
                r#type: KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE,
                value: 7,
            },
            idx,
            KernelVersion::Linux6_12,
        );
        assert_eq!((a.access, a.access_in_place), (0, 0b10));
        a.apply(
            &kfd_ioctl_svm_attribute {
                r#type: KFD_IOCTL_SVM_ATTR_ACCESS,
                value: 7,
            },
            idx,
            KernelVersion::Linux6_12,
        );
        assert_eq!((a.access, a.access_in_place), (0b10, 0));
    }

    /// The notifier never blocks: an unmap reported while the process state is locked is
    /// queued and applied by the next look, even though msync still sees the pages mapped.
    #[test]
    fn an_unmap_reported_while_the_process_is_busy_is_applied_later() {
        use crate::{Model, ModelConfig, Preset};
        use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};
        let model = Model::new(ModelConfig::new(Preset::Gfx90a).with_engine_thread(false)).unwrap();
        let p = model.open().unwrap();
        let gpu = model.topology().gpus().next().unwrap().gpu_id;
        let len = std::num::NonZeroUsize::new(2 * PAGE_SIZE).unwrap();
        // SAFETY: a fresh private mapping, unmapped at the end; the GPU never runs here.
        let base = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .unwrap();
        let b = base.as_ptr() as u64;
        let head = kfd_ioctl_svm_args {
            start_addr: b,
            size: 2 * PAGE,
            op: KFD_IOCTL_SVM_OP_SET_ATTR,
            nattr: 1,
            attrs: [],
        };
        let mut bytes = head.as_bytes().to_vec();
        bytes.extend_from_slice(
            kfd_ioctl_svm_attribute {
                r#type: KFD_IOCTL_SVM_ATTR_ACCESS,
                value: gpu,
            }
            .as_bytes(),
        );
        // SAFETY: the range is the mapping above, alive until the end of the test.
        unsafe { p.ioctl(AMDKFD_IOC_SVM + (8 << 16), &mut bytes) }.unwrap();
        {
            let _busy = p.inner.lock();
            p.svm_cpu_unmapped(b, PAGE);
            assert_eq!(crate::process::lock(&p.inner.svm_deferred).len(), 1);
        }
        let r = p.svm_ranges();
        assert_eq!(
            r.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
            vec![(b + PAGE, b + 2 * PAGE)]
        );
        assert!(crate::process::lock(&p.inner.svm_deferred).is_empty());
        assert_eq!(p.svm_stats().cpu_unmaps, 1);
        drop(p);
        // SAFETY: `base` is this test's own two-page mapping; the process that had it as SVM
        // memory is dropped and no reference into it exists.
        unsafe { munmap(base, 2 * PAGE_SIZE) }.unwrap();
    }

    #[test]
    fn unmapped_runs_finds_holes() {
        use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};
        let len = std::num::NonZeroUsize::new(8 * PAGE_SIZE).unwrap();
        // SAFETY: a fresh private mapping, unmapped in parts below; nothing else refers to it.
        let base = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .unwrap();
        let b = base.as_ptr() as u64;
        // SAFETY: pages 2..4 of this test's own mapping, which nothing refers to.
        unsafe {
            munmap(
                std::ptr::NonNull::new((b + 2 * PAGE) as *mut _).unwrap(),
                2 * PAGE_SIZE,
            )
        }
        .unwrap();
        let mut runs = Vec::new();
        unmapped_runs(b, b + 8 * PAGE, &mut runs);
        assert_eq!(runs, vec![(b + 2 * PAGE, b + 4 * PAGE)]);
        assert!(cpu_mapped(b, b + 2 * PAGE));
        assert!(!cpu_mapped(b, b + 3 * PAGE));
        // SAFETY: pages 0..2 and 4..8 of this test's own mapping, which nothing refers to.
        unsafe {
            munmap(base, 2 * PAGE_SIZE).unwrap();
            munmap(
                std::ptr::NonNull::new((b + 4 * PAGE) as *mut _).unwrap(),
                4 * PAGE_SIZE,
            )
            .unwrap();
        }
    }
}
