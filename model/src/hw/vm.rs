//! The GPU virtual memory of one process on one GPU: which ranges are mapped and to what.
//!
//! GPU VA = CPU VA (shared virtual memory). A range maps either device memory (VRAM, GTT,
//! doorbell and MMIO pages: a [`DeviceMemory`] at some offset) or user memory (`USERPTR`: an
//! address in this process, checked mapped when registered). Every engine access goes
//! through [`GpuVm::read`] / [`GpuVm::write`] and friends; an access outside the mappings is a
//! [`VmFault`], which the hardware model turns into a memory-exception event — never a fault of
//! the host process.

// Unsafe here: every GPU access dereferences a mapping's host address (memfd or client memory).
#![allow(unsafe_code)]

use crate::hw::mem::DeviceMemory;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Lanes of a wave (the per-lane arrays of [`GpuVm::load_lanes`] and [`GpuVm::store_lanes`]).
const LANES: usize = 64;

/// What a range is backed by.
#[derive(Debug, Clone)]
pub enum Backing {
    /// Device memory, starting at `offset` inside it.
    Device {
        /// The memory.
        mem: Arc<DeviceMemory>,
        /// Byte offset of the range's first byte.
        offset: usize,
    },
    /// User memory (USERPTR) of this process — often at a different address than the GPU VA,
    /// since libhsakmt places registered memory in its own GPU aperture.
    User(UserMemory),
}

/// Host memory of this process handed to the GPU (USERPTR). Only an `unsafe` constructor makes
/// one, because every access through the mapping that holds it dereferences `host_addr`:
/// that keeps `GpuVm::map` safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserMemory {
    host_addr: u64,
}

impl UserMemory {
    /// The user memory whose first byte is at `host_addr`.
    ///
    /// # Safety
    ///
    /// For as long as a [`GpuVm`] maps a range backed by this value (until it is unmapped or
    /// the VM dropped), the mapped length of bytes from `host_addr` must stay mapped read-write
    /// in this process and be the GPU's to read and write at any time: no Rust reference may
    /// point into it, and the CPU touches it only through raw pointers or atomics. (The kernel
    /// evicts the queues on munmap; the model does not watch munmap, so this is the caller's
    /// promise — for a client, the one it made to [`crate::Process::ioctl`].)
    pub const unsafe fn new(host_addr: u64) -> Self {
        Self { host_addr }
    }

    /// CPU address of the range's first byte.
    pub const fn host_addr(&self) -> u64 {
        self.host_addr
    }
}

/// One mapped range.
#[derive(Debug, Clone)]
pub struct VmMapping {
    /// First GPU VA.
    pub va: u64,
    /// Length in bytes.
    pub len: u64,
    /// What it maps.
    pub backing: Backing,
    /// GPU may write.
    pub writable: bool,
    /// Buffer handle that created the mapping (0 for driver-internal mappings).
    pub handle: u64,
}

impl VmMapping {
    fn end(&self) -> u64 {
        self.va + self.len
    }

    /// Host address of GPU VA `va` (inside this mapping).
    fn host(&self, va: u64) -> u64 {
        let off = va - self.va;
        match &self.backing {
            Backing::Device { mem, offset } => mem.host_base() + *offset as u64 + off,
            Backing::User(user) => user.host_addr() + off,
        }
    }
}

/// A GPU page fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmFault {
    /// The first faulting address.
    pub va: u64,
    /// The access was a write.
    pub write: bool,
    /// `true`: nothing mapped there; `false`: mapped read-only and written.
    pub not_present: bool,
}

impl std::fmt::Display for VmFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.not_present {
            "not present"
        } else {
            "read-only"
        };
        let rw = if self.write { "write" } else { "read" };
        write!(f, "GPU VM fault: {rw} at {:#x} ({kind})", self.va)
    }
}

/// Mappings of one process on one GPU.
#[derive(Debug)]
pub struct GpuVm {
    ranges: BTreeMap<u64, VmMapping>,
    /// Ranges where every GPU access faults although they may be mapped (fault injection);
    /// the driver's own lookups do not see them.
    injected: Vec<(u64, u64)>,
    /// A number no other state of any VM has had: renewed by every change to the mappings,
    /// so a translation remembered under it ([`Tlb`]) is still exact while it matches.
    generation: u64,
}

impl Default for GpuVm {
    fn default() -> Self {
        GpuVm {
            ranges: BTreeMap::new(),
            injected: Vec::new(),
            generation: next_generation(),
        }
    }
}

/// The next VM generation (never 0, never given twice in this process).
fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One remembered translation: the whole mapping `[va, end)` of the VM state `generation`,
/// whose first byte is at host address `host`.
#[derive(Debug, Clone, Copy)]
struct TlbEntry {
    generation: u64,
    va: u64,
    end: u64,
    host: u64,
    writable: bool,
}

impl TlbEntry {
    /// Translates `[va, end)` of the VM state `generation`.
    #[inline]
    fn covers(&self, generation: u64, va: u64, end: u64) -> bool {
        self.generation == generation && self.va <= va && end <= self.end
    }
}

/// Entries of a translation cache.
const TLB_ENTRIES: usize = 4;

const EMPTY_TLB_ENTRY: TlbEntry = TlbEntry {
    generation: 0,
    va: 0,
    end: 0,
    host: 0,
    writable: false,
};

/// The mappings a user of a VM used last (a wave's kernel touches a few buffers over and
/// over): a lookup that hits needs no walk of the mapping tree. Entries carry the VM generation
/// they were made under, and every change to a VM's mappings gives it a new generation, so an
/// entry never outlives its mapping. Each compute-unit worker owns one for the waves it runs
/// (no thread-local access per load); the engines' accesses use their thread's.
#[derive(Debug, Clone)]
pub struct Tlb {
    entries: [TlbEntry; TLB_ENTRIES],
    /// The entry the next miss replaces (round robin).
    next: usize,
}

impl Default for Tlb {
    fn default() -> Self {
        Tlb {
            entries: [EMPTY_TLB_ENTRY; TLB_ENTRIES],
            next: 0,
        }
    }
}

impl Tlb {
    /// The remembered translation covering `[va, end)` under `generation`.
    #[inline]
    fn find(&self, generation: u64, va: u64, end: u64) -> Option<TlbEntry> {
        self.entries
            .iter()
            .find(|e| e.covers(generation, va, end))
            .copied()
    }

    /// Remembers `entry` in place of the oldest.
    fn remember(&mut self, entry: TlbEntry) {
        let i = self.next % TLB_ENTRIES;
        self.next = i + 1;
        self.entries[i] = entry;
    }
}

thread_local! {
    /// The translations of this thread's engine accesses (PM4, SDMA, the CP).
    static THREAD_TLB: RefCell<Tlb> = RefCell::new(Tlb::default());
}

impl GpuVm {
    /// An empty address space.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The mapping holding `[va, end)` (`va < end`) as a translation, from this thread's
    /// TLB or the mapping tree (then remembered). Ignores injected faults: callers check.
    #[inline]
    fn translate(&self, va: u64, end: u64) -> Option<TlbEntry> {
        THREAD_TLB.with_borrow_mut(|tlb| self.translate_in(tlb, va, end))
    }

    /// [`GpuVm::translate`] through the translation cache `tlb`.
    #[inline]
    fn translate_in(&self, tlb: &mut Tlb, va: u64, end: u64) -> Option<TlbEntry> {
        match tlb.find(self.generation, va, end) {
            Some(e) => Some(e),
            None => self.translate_miss(tlb, va, end),
        }
    }

    /// [`GpuVm::translate_in`] when `tlb` does not hold the mapping: the tree walk,
    /// remembered in place of the oldest entry.
    #[inline(never)]
    fn translate_miss(&self, tlb: &mut Tlb, va: u64, end: u64) -> Option<TlbEntry> {
        let m = self.lookup(va)?;
        let entry = TlbEntry {
            generation: self.generation,
            va: m.va,
            end: m.end(),
            host: m.host(m.va),
            writable: m.writable,
        };
        tlb.remember(entry);
        (end <= entry.end).then_some(entry)
    }

    /// Maps a range. Refused (`false`): an empty range, one past the end of the address space,
    /// one overlapping an existing mapping, a device-memory range that does not lie inside its
    /// memory, and one whose host address is not aligned as its GPU address is (modulo 8).
    /// Every access through a mapping dereferences its host address, so a mapping never
    /// reaches past the memory it maps, and an aligned GPU word is an aligned host word.
    pub(crate) fn map(&mut self, mapping: VmMapping) -> bool {
        let Some(end) = mapping.va.checked_add(mapping.len) else {
            return false;
        };
        if mapping.len == 0 || self.overlaps(mapping.va, end) {
            return false;
        }
        if let Backing::Device { mem, offset } = &mapping.backing {
            let inside = usize::try_from(mapping.len)
                .ok()
                .and_then(|len| offset.checked_add(len))
                .is_some_and(|mem_end| mem_end <= mem.len());
            if !inside {
                return false;
            }
        }
        // After the bound check: a device mapping's host address cannot overflow now.
        if (mapping.host(mapping.va) ^ mapping.va) % 8 != 0 {
            return false;
        }
        self.ranges.insert(mapping.va, mapping);
        self.generation = next_generation();
        true
    }

    fn overlaps(&self, va: u64, end: u64) -> bool {
        self.ranges
            .range(..end)
            .next_back()
            .is_some_and(|(_, m)| m.end() > va)
    }

    /// Removes the mapping that starts at `va`.
    pub fn unmap(&mut self, va: u64) -> Option<VmMapping> {
        self.generation = next_generation();
        self.ranges.remove(&va)
    }

    /// Removes every mapping created by `handle`.
    pub fn unmap_handle(&mut self, handle: u64) -> usize {
        let before = self.ranges.len();
        self.generation = next_generation();
        self.ranges.retain(|_, m| m.handle != handle);
        before - self.ranges.len()
    }

    /// The mapping containing `va`.
    pub fn lookup(&self, va: u64) -> Option<&VmMapping> {
        self.ranges
            .range(..=va)
            .next_back()
            .map(|(_, m)| m)
            .filter(|m| va < m.end())
    }

    /// Whether `[va, va+len)` is exactly one whole mapping (the 6.12 queue buffer rule).
    pub fn is_exact_mapping(&self, va: u64, len: u64) -> bool {
        self.ranges.get(&va).is_some_and(|m| m.len == len)
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// No mappings.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// All mappings in address order.
    pub fn mappings(&self) -> impl Iterator<Item = &VmMapping> {
        self.ranges.values()
    }

    /// Makes every GPU access to `[va, va+len)` fault as if nothing were mapped there.
    pub fn inject_fault(&mut self, va: u64, len: u64) {
        if len > 0 {
            self.generation = next_generation();
            self.injected.push((va, va.saturating_add(len)));
        }
    }

    /// Removes the injected fault ranges.
    pub fn clear_injected_faults(&mut self) {
        self.generation = next_generation();
        self.injected.clear();
    }

    /// The first injected fault address inside `[va, end)`.
    fn injected_fault(&self, va: u64, end: u64, write: bool) -> Result<(), VmFault> {
        match self
            .injected
            .iter()
            .filter(|&&(s, e)| s < end && va < e)
            .map(|&(s, _)| s.max(va))
            .min()
        {
            Some(at) => Err(VmFault {
                va: at,
                write,
                not_present: true,
            }),
            None => Ok(()),
        }
    }

    /// The host address of `[va, va+len)` when one mapping holds all of it (the common case,
    /// served without allocating).
    fn single(&self, va: u64, len: u64, write: bool) -> Option<u64> {
        THREAD_TLB.with_borrow_mut(|tlb| self.single_in(tlb, va, len, write))
    }

    /// [`GpuVm::single`] through the translation cache `tlb`.
    #[inline]
    fn single_in(&self, tlb: &mut Tlb, va: u64, len: u64, write: bool) -> Option<u64> {
        if !self.injected.is_empty() || len == 0 {
            return None;
        }
        let end = va.checked_add(len)?;
        let t = self.translate_in(tlb, va, end)?;
        (!write || t.writable).then(|| t.host + (va - t.va))
    }

    /// Checks that every byte of `[va, va+len)` is mapped (and writable if `write`) without
    /// touching it.
    pub fn probe(&self, va: u64, len: u64, write: bool) -> Result<(), VmFault> {
        if self.single(va, len, write).is_some() {
            return Ok(());
        }
        self.pieces(va, len, write).map(|_| ())
    }

    /// Splits `[va, va+len)` into host pieces, checking every byte is mapped (and writable if
    /// `write`).
    fn pieces(&self, va: u64, len: u64, write: bool) -> Result<Vec<(u64, u64)>, VmFault> {
        let end = va.checked_add(len).ok_or(VmFault {
            va,
            write,
            not_present: true,
        })?;
        self.injected_fault(va, end, write)?;
        let mut out = Vec::new();
        let mut cur = va;
        while cur < end {
            let m = self.lookup(cur).ok_or(VmFault {
                va: cur,
                write,
                not_present: true,
            })?;
            if write && !m.writable {
                return Err(VmFault {
                    va: cur,
                    write,
                    not_present: false,
                });
            }
            let piece_end = end.min(m.end());
            out.push((m.host(cur), piece_end - cur));
            cur = piece_end;
        }
        Ok(out)
    }

    /// The host address of an aligned word, if the whole word is inside one mapping.
    fn word(&self, va: u64, size: u64, write: bool) -> Result<u64, VmFault> {
        if self.injected.is_empty() && va % size == 0 {
            if let Some(t) = va.checked_add(size).and_then(|end| self.translate(va, end)) {
                if !write || t.writable {
                    return Ok(t.host + (va - t.va));
                }
            }
        }
        let fault = VmFault {
            va,
            write,
            not_present: true,
        };
        let m = self.lookup(va).ok_or(fault)?;
        if va % size != 0 || va + size > m.end() {
            return Err(fault);
        }
        self.injected_fault(va, va + size, write)?;
        if write && !m.writable {
            return Err(VmFault {
                not_present: false,
                ..fault
            });
        }
        Ok(m.host(va))
    }

    /// Copies GPU memory at `va` into `buf`.
    pub fn read(&self, va: u64, buf: &mut [u8]) -> Result<(), VmFault> {
        THREAD_TLB.with_borrow_mut(|tlb| self.read_for_wave(tlb, va, buf))
    }

    /// [`GpuVm::read`] for a wave (`s_load_*`), through its worker's translation cache.
    #[inline]
    pub fn read_for_wave(&self, tlb: &mut Tlb, va: u64, buf: &mut [u8]) -> Result<(), VmFault> {
        if let Some(host) = self.single_in(tlb, va, buf.len() as u64, false) {
            // SAFETY: `single_in` found `host..host+len` inside one mapping of this VM (`map`
            // keeps device ranges inside their memory, which the mapping's `Arc` keeps alive;
            // user memory stays mapped by `UserMemory::new`'s contract); `buf` is ours.
            unsafe { std::ptr::copy(host as *const u8, buf.as_mut_ptr(), buf.len()) };
            return Ok(());
        }
        let mut done = 0usize;
        for (host, n) in self.pieces(va, buf.len() as u64, false)? {
            let n = n as usize;
            // SAFETY: `pieces` found `host..host+n` inside one mapping of this VM (device
            // memory kept alive by the mapping's `Arc`, user memory by `UserMemory::new`'s
            // contract); the pieces' lengths sum to `buf.len()`, so `buf[done..]` has `n` bytes.
            unsafe { std::ptr::copy(host as *const u8, buf[done..].as_mut_ptr(), n) };
            done += n;
        }
        Ok(())
    }

    /// The host address of the lowest of the lanes' accesses of `bytes` each when one mapping
    /// holds every active lane's access (a wave's loads and stores usually fall in one
    /// buffer), with that lowest address.
    fn lanes_single(
        &self,
        addrs: &[u64],
        exec: u64,
        bytes: u64,
        write: bool,
    ) -> Option<(u64, u64)> {
        let mut lo = u64::MAX;
        let mut hi = 0u64;
        for (l, &a) in addrs.iter().enumerate() {
            if exec >> l & 1 != 0 {
                lo = lo.min(a);
                hi = hi.max(a.checked_add(bytes)?);
            }
        }
        if lo == u64::MAX {
            return None;
        }
        self.single(lo, hi - lo, write).map(|host| (host, lo))
    }

    /// A gather of the lanes set in `exec` (bit `l` for `addrs[l]`): `bytes` (at most 16)
    /// from each address, handed to `each(lane, bytes)`. One mapping check for the whole
    /// wave when one mapping holds every access; else lane by lane.
    pub fn gather(
        &self,
        addrs: &[u64],
        exec: u64,
        bytes: usize,
        mut each: impl FnMut(usize, &[u8]),
    ) -> Result<(), VmFault> {
        let n = bytes.min(16);
        let mut buf = [0u8; 16];
        let active = (0..addrs.len().min(64)).filter(|l| exec >> l & 1 != 0);
        if let Some((host, lo)) = self.lanes_single(addrs, exec, n as u64, false) {
            for l in active {
                // SAFETY: `lanes_single` checked that one mapping of this VM holds every active
                // lane's `n` bytes, kept alive by the mapping's `Arc` or `UserMemory::new`'s
                // contract; `buf` has 16 >= `n` bytes.
                unsafe {
                    std::ptr::copy((host + (addrs[l] - lo)) as *const u8, buf.as_mut_ptr(), n)
                };
                each(l, &buf[..n]);
            }
            return Ok(());
        }
        for l in active {
            self.read(addrs[l], &mut buf[..n])?;
            each(l, &buf[..n]);
        }
        Ok(())
    }

    /// A scatter to the lanes set in `exec`: `data(lane)` gives the `bytes` (at most 16)
    /// stored at `addrs[lane]`, lanes in order; as [`GpuVm::gather`].
    pub fn scatter(
        &self,
        addrs: &[u64],
        exec: u64,
        bytes: usize,
        mut data: impl FnMut(usize) -> [u8; 16],
    ) -> Result<(), VmFault> {
        let n = bytes.min(16);
        let active = (0..addrs.len().min(64)).filter(|l| exec >> l & 1 != 0);
        if let Some((host, lo)) = self.lanes_single(addrs, exec, n as u64, true) {
            for l in active {
                let d = data(l);
                // SAFETY: `lanes_single` checked that one writable mapping of this VM holds every
                // active lane's `n` bytes, kept alive by the mapping's `Arc` or `UserMemory::new`'s
                // contract; `d` is a local 16-byte array.
                unsafe { std::ptr::copy(d.as_ptr(), (host + (addrs[l] - lo)) as *mut u8, n) };
            }
            return Ok(());
        }
        for l in active {
            self.write(addrs[l], &data(l)[..n])?;
        }
        Ok(())
    }

    /// The host address of the lowest active lane's access and that lane's address, when
    /// one mapping (writable if `write`) holds every active lane's `bytes`: the condition of
    /// [`GpuVm::lanes_single`], for the fixed-size lane arrays of a wave.
    #[inline]
    fn wave_window(
        &self,
        tlb: &mut Tlb,
        addrs: &[u64; LANES],
        exec: u64,
        bytes: u64,
        write: bool,
    ) -> Option<Window> {
        if exec == 0 || !self.injected.is_empty() {
            return None;
        }
        let run = exec == u64::MAX && contiguous(addrs, bytes);
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        if run {
            (lo, hi) = (addrs[0], addrs[LANES - 1]);
        } else if exec == u64::MAX {
            for &a in addrs {
                lo = lo.min(a);
                hi = hi.max(a);
            }
        } else {
            for (l, &a) in addrs.iter().enumerate() {
                if exec >> l & 1 != 0 {
                    lo = lo.min(a);
                    hi = hi.max(a);
                }
            }
        }
        let end = hi.checked_add(bytes)?;
        let t = self.translate_in(tlb, lo, end)?;
        (!write || t.writable).then(|| Window {
            host: t.host + (lo - t.va),
            lo,
            run,
        })
    }

    /// A wave's load: for each lane set in `exec`, `bytes` (1, 2, 4, 8, 12 or 16) from
    /// `addrs[lane]`, dword `d` into `out[d][lane]` (zero-extended; dwords past `bytes` are
    /// zero). Faults as [`GpuVm::gather`]: at the first faulting address of the first lane
    /// in order whose access faults, the lanes before it loaded.
    pub fn load_lanes(
        &self,
        tlb: &mut Tlb,
        addrs: &[u64; LANES],
        exec: u64,
        bytes: usize,
        out: &mut [[u32; LANES]],
    ) -> Result<(), VmFault> {
        let n = bytes.min(16);
        let Some(Window { host, lo, run }) = self.wave_window(tlb, addrs, exec, n as u64, false)
        else {
            return self.gather(addrs, exec, n, |lane, b| put_lane(out, lane, b));
        };
        // Every read below: `wave_window` found one mapping of this VM holding every active lane's
        // `n` bytes at `at(lane)`, kept alive by the mapping's `Arc` or `UserMemory::new`'s
        // contract; reading it unaligned and without a reference is how every engine access reads
        // it.
        let at = |lane: usize| (host + (addrs[lane] - lo)) as *const u8;
        let dwords = out.len().min(4);
        match (n, dwords) {
            (4, 1) => {
                let [d0] = out else { unreachable!() };
                if run {
                    // SAFETY: a `run` of 64 active lanes reads the 256 bytes from lane 0's address,
                    // inside the mapping `wave_window` found (kept alive by the mapping's `Arc` or
                    // `UserMemory::new`'s contract), into the 256 bytes of `d0`.
                    unsafe { std::ptr::copy(at(0), d0.as_mut_ptr().cast::<u8>(), 4 * LANES) };
                    // memory is little-endian (a no-op on a little-endian host)
                    for d in d0.iter_mut() {
                        *d = u32::from_le(*d);
                    }
                } else {
                    for_lanes(exec, |l| {
                        // SAFETY: active lane `l`'s 4 bytes at `at(l)` lie in the mapping
                        // `wave_window` found, kept alive by the mapping's `Arc` or
                        // `UserMemory::new`'s contract; read unaligned.
                        d0[l] = u32::from_le(unsafe { std::ptr::read_unaligned(at(l).cast()) });
                    });
                }
            }
            (8, 2) => {
                let [d0, d1] = out else { unreachable!() };
                for_lanes(exec, |l| {
                    // SAFETY: active lane `l`'s 8 bytes at `at(l)` lie in the mapping `wave_window`
                    // found, kept alive by the mapping's `Arc` or `UserMemory::new`'s contract;
                    // read unaligned.
                    let v = u64::from_le(unsafe { std::ptr::read_unaligned(at(l).cast()) });
                    (d0[l], d1[l]) = (v as u32, (v >> 32) as u32);
                });
            }
            _ => {
                for_lanes(exec, |l| {
                    let mut buf = [0u8; 16];
                    // SAFETY: active lane `l`'s `n` bytes at `at(l)` lie in the mapping
                    // `wave_window` found, kept alive by the mapping's `Arc` or `UserMemory::new`'s
                    // contract; `buf` has 16 >= `n` bytes.
                    unsafe { std::ptr::copy(at(l), buf.as_mut_ptr(), n) };
                    put_lane(out, l, &buf[..n]);
                });
            }
        }
        Ok(())
    }

    /// A whole wave's load of one run of dwords: the 64 dwords from `va` into `out`, when one
    /// mapping holds all 256 bytes (what [`GpuVm::load_lanes`] does for such lanes); `false`,
    /// nothing read, otherwise.
    pub fn load_run(&self, tlb: &mut Tlb, va: u64, out: &mut [u32; LANES]) -> bool {
        let Some(host) = self.single_in(tlb, va, 4 * LANES as u64, false) else {
            return false;
        };
        // SAFETY: `single_in` found one mapping of this VM holding the 256 bytes at `host`, kept
        // alive by the mapping's `Arc` or `UserMemory::new`'s contract; they are copied into the
        // 256 bytes of `out`.
        unsafe { std::ptr::copy(host as *const u8, out.as_mut_ptr().cast::<u8>(), 4 * LANES) };
        // memory is little-endian (a no-op on a little-endian host)
        for d in out.iter_mut() {
            *d = u32::from_le(*d);
        }
        true
    }

    /// The store of [`GpuVm::load_run`]: the 64 dwords of `data` to `va`, when one writable
    /// mapping holds all 256 bytes; `false`, nothing written, otherwise.
    pub fn store_run(&self, tlb: &mut Tlb, va: u64, data: &[u32; LANES]) -> bool {
        let Some(host) = self.single_in(tlb, va, 4 * LANES as u64, true) else {
            return false;
        };
        // Memory is little-endian: on a little-endian host the lanes go as they are.
        let raw: [u32; LANES];
        let src = if cfg!(target_endian = "little") {
            data
        } else {
            raw = std::array::from_fn(|l| data[l].to_le());
            &raw
        };
        // SAFETY: `single_in` found one writable mapping of this VM holding the 256 bytes at
        // `host`, kept alive by the mapping's `Arc` or `UserMemory::new`'s contract; `src` is 256
        // bytes of ours.
        unsafe { std::ptr::copy(src.as_ptr().cast::<u8>(), host as *mut u8, 4 * LANES) };
        true
    }

    /// A wave's store: for each lane set in `exec`, in lane order, `bytes` (1, 2, 4, 8, 12 or
    /// 16) from dwords `data[d][lane]` (the low bytes of dword 0 when narrower) to
    /// `addrs[lane]`. Faults as [`GpuVm::scatter`].
    pub fn store_lanes(
        &self,
        tlb: &mut Tlb,
        addrs: &[u64; LANES],
        exec: u64,
        bytes: usize,
        data: &[[u32; LANES]],
    ) -> Result<(), VmFault> {
        let n = bytes.min(16);
        let lane_bytes = |lane: usize| {
            let mut buf = [0u8; 16];
            for (d, reg) in data.iter().enumerate().take(4) {
                buf[4 * d..4 * d + 4].copy_from_slice(&reg[lane].to_le_bytes());
            }
            buf
        };
        let Some(Window { host, lo, run }) = self.wave_window(tlb, addrs, exec, n as u64, true)
        else {
            return self.scatter(addrs, exec, n, lane_bytes);
        };
        // Every write below: `wave_window` found one writable mapping of this VM holding every
        // active lane's `n` bytes at `at(lane)`, kept alive by the mapping's `Arc` or
        // `UserMemory::new`'s contract.
        let at = |lane: usize| (host + (addrs[lane] - lo)) as *mut u8;
        match (n, data) {
            (4, [d0, ..]) => {
                if run {
                    let raw: [u32; LANES] = std::array::from_fn(|l| d0[l].to_le());
                    // SAFETY: a `run` of 64 active lanes writes the 256 bytes from lane 0's
                    // address, inside the writable mapping `wave_window` found (kept alive by the
                    // mapping's `Arc` or `UserMemory::new`'s contract).
                    unsafe { std::ptr::copy(raw.as_ptr().cast::<u8>(), at(0), 4 * LANES) };
                } else {
                    for_lanes(exec, |l| {
                        // SAFETY: active lane `l`'s 4 bytes at `at(l)` lie in the writable mapping
                        // `wave_window` found, kept alive by the mapping's `Arc` or
                        // `UserMemory::new`'s contract; written unaligned.
                        unsafe { std::ptr::write_unaligned(at(l).cast(), d0[l].to_le()) };
                    });
                }
            }
            (8, [d0, d1, ..]) => for_lanes(exec, |l| {
                let v = u64::from(d0[l]) | u64::from(d1[l]) << 32;
                // SAFETY: active lane `l`'s 8 bytes at `at(l)` lie in the writable mapping
                // `wave_window` found, kept alive by the mapping's `Arc` or `UserMemory::new`'s
                // contract; written unaligned.
                unsafe { std::ptr::write_unaligned(at(l).cast(), v.to_le()) };
            }),
            _ => for_lanes(exec, |l| {
                let buf = lane_bytes(l);
                // SAFETY: active lane `l`'s `n` bytes at `at(l)` lie in the writable mapping
                // `wave_window` found, kept alive by the mapping's `Arc` or `UserMemory::new`'s
                // contract; `buf` has 16 >= `n` bytes.
                unsafe { std::ptr::copy(buf.as_ptr(), at(l), n) };
            }),
        }
        Ok(())
    }

    /// Copies `data` into GPU memory at `va`.
    pub fn write(&self, va: u64, data: &[u8]) -> Result<(), VmFault> {
        THREAD_TLB.with_borrow_mut(|tlb| self.write_for_wave(tlb, va, data))
    }

    /// [`GpuVm::write`] for a wave (`s_store_*`), through its worker's translation cache.
    #[inline]
    pub fn write_for_wave(&self, tlb: &mut Tlb, va: u64, data: &[u8]) -> Result<(), VmFault> {
        if let Some(host) = self.single_in(tlb, va, data.len() as u64, true) {
            // SAFETY: `single_in` found `host..host+len` inside one writable mapping of this VM,
            // kept alive by the mapping's `Arc` or `UserMemory::new`'s contract; `data` is the
            // caller's buffer.
            unsafe { std::ptr::copy(data.as_ptr(), host as *mut u8, data.len()) };
            return Ok(());
        }
        let mut done = 0usize;
        for (host, n) in self.pieces(va, data.len() as u64, true)? {
            let n = n as usize;
            // SAFETY: `pieces` found `host..host+n` inside one writable mapping of this VM, kept
            // alive by the mapping's `Arc` or `UserMemory::new`'s contract; the pieces' lengths sum
            // to `data.len()`, so `data[done..]` has `n` bytes.
            unsafe { std::ptr::copy(data[done..].as_ptr(), host as *mut u8, n) };
            done += n;
        }
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst`, both GPU addresses (SDMA, CP DMA).
    pub fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), VmFault> {
        if let (Some(s), Some(d)) = (self.single(src, len, false), self.single(dst, len, true)) {
            // SAFETY: both ranges lie inside single mappings checked just now; `copy` tolerates
            // overlap.
            unsafe { std::ptr::copy(s as *const u8, d as *mut u8, len as usize) };
            return Ok(());
        }
        let srcs = self.pieces(src, len, false)?;
        let dsts = self.pieces(dst, len, true)?;
        let (mut si, mut di, mut so, mut doff) = (0usize, 0usize, 0u64, 0u64);
        while si < srcs.len() && di < dsts.len() {
            let (sh, sl) = srcs[si];
            let (dh, dl) = dsts[di];
            let n = (sl - so).min(dl - doff);
            // SAFETY: both pieces were validated above; `copy` tolerates overlap.
            unsafe { std::ptr::copy((sh + so) as *const u8, (dh + doff) as *mut u8, n as usize) };
            so += n;
            doff += n;
            if so == sl {
                si += 1;
                so = 0;
            }
            if doff == dl {
                di += 1;
                doff = 0;
            }
        }
        Ok(())
    }

    /// Fills `len` bytes at `va` with the repeated 32-bit `value` (byte `len` need not be a
    /// multiple of 4; the pattern is cut).
    pub fn fill_u32(&self, va: u64, len: u64, value: u32) -> Result<(), VmFault> {
        // A 4 KiB block of the pattern, copied in as many times as needed.
        let block: Vec<u8> = value
            .to_le_bytes()
            .iter()
            .copied()
            .cycle()
            .take(4096)
            .collect();
        let mut pos = 0u64;
        for (host, n) in self.pieces(va, len, true)? {
            let mut i = 0u64;
            while i < n {
                let phase = ((pos + i) % 4) as usize;
                let chunk = (n - i).min(4092) as usize;
                // SAFETY: `host+i .. host+i+chunk` is inside a validated writable piece; the
                // source is a distinct local buffer of at least `phase + chunk` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        block[phase..].as_ptr(),
                        (host + i) as *mut u8,
                        chunk,
                    )
                };
                i += chunk as u64;
            }
            pos += n;
        }
        Ok(())
    }

    /// Atomic 32-bit load of an aligned word.
    pub fn load_u32(&self, va: u64) -> Result<u32, VmFault> {
        let host = self.word(va, 4, false)?;
        // SAFETY: `word` found the 4 bytes at `host` in one mapping, kept alive by its `Arc` or
        // `UserMemory::new`'s contract; `host` is aligned as `va` is (`map` keeps them equal
        // modulo 8); that memory is only accessed atomically or by raw copies.
        Ok(unsafe { AtomicU32::from_ptr(host as *mut u32) }.load(Ordering::Acquire))
    }

    /// Atomic 64-bit load of an aligned word.
    pub fn load_u64(&self, va: u64) -> Result<u64, VmFault> {
        let host = self.word(va, 8, false)?;
        // SAFETY: `word` found the 8 bytes at `host` in one mapping, kept alive by its `Arc` or
        // `UserMemory::new`'s contract; `host` is aligned as `va` is (`map` keeps them equal
        // modulo 8); that memory is only accessed atomically or by raw copies.
        Ok(unsafe { AtomicU64::from_ptr(host as *mut u64) }.load(Ordering::Acquire))
    }

    /// Atomic 32-bit store of an aligned word.
    pub fn store_u32(&self, va: u64, value: u32) -> Result<(), VmFault> {
        let host = self.word(va, 4, true)?;
        // SAFETY: `word` found the 4 bytes at `host` in one writable mapping, kept alive by its
        // `Arc` or `UserMemory::new`'s contract; `host` is aligned as `va` is (`map` keeps them
        // equal modulo 8); that memory is only accessed atomically or by raw copies.
        unsafe { AtomicU32::from_ptr(host as *mut u32) }.store(value, Ordering::Release);
        Ok(())
    }

    /// Atomic 64-bit add of an aligned word (wrapping); returns the previous value. What the
    /// packet processor uses to decrement a completion signal.
    pub fn fetch_add_u64(&self, va: u64, delta: u64) -> Result<u64, VmFault> {
        let host = self.word(va, 8, true)?;
        // SAFETY: `word` found the 8 bytes at `host` in one writable mapping, kept alive by its
        // `Arc` or `UserMemory::new`'s contract; `host` is aligned as `va` is (`map` keeps them
        // equal modulo 8); that memory is only accessed atomically or by raw copies.
        Ok(unsafe { AtomicU64::from_ptr(host as *mut u64) }.fetch_add(delta, Ordering::AcqRel))
    }

    /// Atomic read-modify-write of an aligned 32-bit word (a compare-exchange loop): stores
    /// `f(old)` and returns `old`. What shader atomics use, atomic with respect to the host.
    pub fn update_u32(&self, va: u64, f: impl Fn(u32) -> u32) -> Result<u32, VmFault> {
        let host = self.word(va, 4, true)?;
        // SAFETY: `word` found the 4 bytes at `host` in one writable mapping, kept alive by its
        // `Arc` or `UserMemory::new`'s contract; `host` is aligned as `va` is (`map` keeps them
        // equal modulo 8); that memory is only accessed atomically or by raw copies.
        let word = unsafe { AtomicU32::from_ptr(host as *mut u32) };
        Ok(
            match word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(f(v))) {
                Ok(v) | Err(v) => v,
            },
        )
    }

    /// Atomic read-modify-write of an aligned 64-bit word, as [`GpuVm::update_u32`].
    pub fn update_u64(&self, va: u64, f: impl Fn(u64) -> u64) -> Result<u64, VmFault> {
        let host = self.word(va, 8, true)?;
        // SAFETY: `word` found the 8 bytes at `host` in one writable mapping, kept alive by its
        // `Arc` or `UserMemory::new`'s contract; `host` is aligned as `va` is (`map` keeps them
        // equal modulo 8); that memory is only accessed atomically or by raw copies.
        let word = unsafe { AtomicU64::from_ptr(host as *mut u64) };
        Ok(
            match word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(f(v))) {
                Ok(v) | Err(v) => v,
            },
        )
    }

    /// Atomic 64-bit store of an aligned word.
    pub fn store_u64(&self, va: u64, value: u64) -> Result<(), VmFault> {
        let host = self.word(va, 8, true)?;
        // SAFETY: `word` found the 8 bytes at `host` in one writable mapping, kept alive by its
        // `Arc` or `UserMemory::new`'s contract; `host` is aligned as `va` is (`map` keeps them
        // equal modulo 8); that memory is only accessed atomically or by raw copies.
        unsafe { AtomicU64::from_ptr(host as *mut u64) }.store(value, Ordering::Release);
        Ok(())
    }
}

/// Runs `f` for each lane set in `exec`, in ascending order.
#[inline(always)]
fn for_lanes(exec: u64, mut f: impl FnMut(usize)) {
    if exec == u64::MAX {
        for l in 0..LANES {
            f(l);
        }
    } else {
        let mut m = exec;
        while m != 0 {
            f(m.trailing_zeros() as usize);
            m &= m - 1;
        }
    }
}

/// Where one mapping holds a wave's accesses: the host address of the lowest lane address
/// `lo`, and whether the wave accesses one run of memory (every lane `l` at `lo + l * bytes`).
struct Window {
    host: u64,
    lo: u64,
    run: bool,
}

/// Whether lane `l` addresses `addrs[0] + l * step` for every lane, ascending without
/// wrapping past the top of the address space (a wave reading or writing one run of memory).
#[inline(always)]
fn contiguous(addrs: &[u64; LANES], step: u64) -> bool {
    let base = addrs[0];
    if base.checked_add(step * (LANES as u64 - 1)).is_none() {
        return false;
    }
    // Whole 64-bit addresses against an induction (no halves, no early exit), so the loop
    // vectorises into a few dozen SIMD adds, xors and ors.
    let mut diff = 0u64;
    let mut want = base;
    for &a in addrs {
        diff |= a ^ want;
        want = want.wrapping_add(step);
    }
    diff == 0
}

/// Puts one lane's loaded bytes (at most 16) into `out[d][lane]`, zero-extended to whole
/// dwords (dwords past the data are zero).
#[inline(always)]
fn put_lane(out: &mut [[u32; LANES]], lane: usize, b: &[u8]) {
    let mut buf = [0u8; 16];
    buf[..b.len()].copy_from_slice(b);
    for (d, reg) in out.iter_mut().enumerate().take(4) {
        let w = &buf[4 * d..4 * d + 4];
        reg[lane] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(len: u64) -> Arc<DeviceMemory> {
        Arc::new(DeviceMemory::new("vm-test", len).unwrap())
    }

    /// 8 KiB of device memory mapped writable at 0x7000_0000_0000: the memory, the VM, the base.
    fn device_vm() -> (Arc<DeviceMemory>, GpuVm, u64) {
        let mem = dev(8192);
        let mut vm = GpuVm::new();
        let base = 0x7000_0000_0000u64;
        assert!(vm.map(VmMapping {
            va: base,
            len: 8192,
            backing: Backing::Device {
                mem: mem.clone(),
                offset: 0
            },
            writable: true,
            handle: 1
        }));
        (mem, vm, base)
    }

    #[test]
    fn gathers_and_scatters_of_a_wave_check_every_active_lane() {
        let (mem, vm, base) = device_vm();
        let mut addrs = [0u64; 64];
        for (l, a) in addrs.iter_mut().enumerate() {
            *a = base + 4 * (63 - l as u64);
        }
        // Lanes 0 and 2 store dwords, lane 1 is inactive (its address is never touched).
        addrs[1] = 0xdead_0000;
        let exec = 0b101;
        vm.scatter(&addrs, exec, 4, |l| {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&(0x100 + l as u32).to_le_bytes());
            b
        })
        .unwrap();
        assert_eq!(mem.load_u32(4 * 63), Some(0x100));
        assert_eq!(mem.load_u32(4 * 61), Some(0x102));
        let mut got = Vec::new();
        vm.gather(&addrs, exec, 1, |l, b| got.push((l, b.to_vec())))
            .unwrap();
        assert_eq!(
            got,
            vec![(0, vec![0x00]), (2, vec![0x02])],
            "one byte per lane"
        );
        // An active lane outside the mappings faults at its address, after the lanes before.
        let mut seen = Vec::new();
        let f = vm
            .gather(&addrs, 0b111, 4, |l, _| seen.push(l))
            .unwrap_err();
        assert_eq!(f.va, 0xdead_0000);
        assert_eq!(seen, vec![0]);
        assert!(vm.scatter(&addrs, 0b010, 4, |_| [0; 16]).is_err());
    }

    /// Lane addresses of the patterns a wave uses: one run, reversed, strided, repeated,
    /// unaligned.
    fn lane_patterns(base: u64, bytes: u64) -> Vec<[u64; 64]> {
        let run: [u64; 64] = std::array::from_fn(|l| base + bytes * l as u64);
        let reversed: [u64; 64] = std::array::from_fn(|l| base + bytes * (63 - l as u64));
        let strided: [u64; 64] = std::array::from_fn(|l| base + 3 * bytes * l as u64 + 8);
        let repeated: [u64; 64] = std::array::from_fn(|l| base + 16 * (l as u64 % 5));
        let unaligned: [u64; 64] = std::array::from_fn(|l| base + 1 + bytes * l as u64);
        vec![run, reversed, strided, repeated, unaligned]
    }

    #[test]
    fn wave_loads_and_stores_equal_lane_by_lane_accesses() {
        let (mem, vm, base) = device_vm();
        let pattern: Vec<u8> = (0..8192u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for bytes in [1u64, 2, 4, 8, 12, 16] {
            let dwords = bytes.div_ceil(4) as usize;
            for addrs in lane_patterns(base, bytes) {
                for exec in [
                    u64::MAX,
                    0x5555_5555_5555_5555,
                    1 << 63,
                    0x0000_ffff_0000_0001,
                    0,
                ] {
                    mem.write(0, &pattern).unwrap();
                    // loads: what a read of each active lane gives, zero-extended
                    let mut out = vec![[0xdead_beefu32; 64]; dwords];
                    vm.load_lanes(&mut Tlb::default(), &addrs, exec, bytes as usize, &mut out)
                        .unwrap();
                    for l in 0..64 {
                        let mut want = [0u8; 16];
                        vm.read(addrs[l], &mut want[..bytes as usize]).unwrap();
                        for (d, reg) in out.iter().enumerate() {
                            let w = if exec >> l & 1 != 0 {
                                u32::from_le_bytes(want[4 * d..4 * d + 4].try_into().unwrap())
                            } else {
                                0xdead_beef
                            };
                            assert_eq!(reg[l], w, "{bytes} bytes, lane {l}, exec {exec:#x}");
                        }
                    }
                    // stores: the lanes' writes in lane order over the old contents
                    let data: Vec<[u32; 64]> = (0..dwords)
                        .map(|d| std::array::from_fn(|l| 0x0101_0101 * (l as u32 + 1) + d as u32))
                        .collect();
                    let mut want = pattern.clone();
                    for l in (0..64).filter(|l| exec >> l & 1 != 0) {
                        let off = (addrs[l] - base) as usize;
                        for i in 0..bytes as usize {
                            want[off + i] = data[i / 4][l].to_le_bytes()[i % 4];
                        }
                    }
                    vm.store_lanes(&mut Tlb::default(), &addrs, exec, bytes as usize, &data)
                        .unwrap();
                    let mut got = vec![0u8; 8192];
                    mem.read(0, &mut got).unwrap();
                    assert!(got == want, "{bytes}-byte store, exec {exec:#x}");
                }
            }
        }
        // A lane outside the mapping: the fault of the lane-by-lane path, the lanes before
        // it done (and none after).
        mem.write(0, &pattern).unwrap();
        let mut addrs: [u64; 64] = std::array::from_fn(|l| base + 4 * l as u64);
        addrs[9] = base + 8190;
        addrs[20] = base - 4;
        let mut out = [[0u32; 64]];
        let f = vm
            .load_lanes(&mut Tlb::default(), &addrs, u64::MAX, 4, &mut out)
            .unwrap_err();
        assert_eq!(
            f,
            VmFault {
                va: base + 8192,
                write: false,
                not_present: true
            }
        );
        assert_eq!(
            out[0][8],
            u32::from_le_bytes(pattern[32..36].try_into().unwrap())
        );
        assert_eq!(out[0][10], 0, "no lane after the faulting one loaded");
        let f = vm
            .store_lanes(&mut Tlb::default(), &addrs, !(1 << 9), 4, &[[7; 64]])
            .unwrap_err();
        assert_eq!(
            f,
            VmFault {
                va: base - 4,
                write: true,
                not_present: true
            }
        );
        assert_eq!(mem.load_u32(4 * 19), Some(7));
        assert_eq!(
            mem.load_u32(4 * 21),
            Some(u32::from_le_bytes(pattern[84..88].try_into().unwrap())),
            "no lane after the faulting one stored"
        );
    }

    #[test]
    fn remembered_translations_end_with_their_mapping() {
        let (a, b) = (dev(4096), dev(4096));
        a.write(0, &[1; 4096]).unwrap();
        b.write(0, &[2; 4096]).unwrap();
        let mut vm = GpuVm::new();
        let va = 0x5000_0000u64;
        let map = |vm: &mut GpuVm, mem: &Arc<DeviceMemory>, writable| {
            assert!(vm.map(VmMapping {
                va,
                len: 4096,
                backing: Backing::Device {
                    mem: mem.clone(),
                    offset: 0
                },
                writable,
                handle: 1
            }));
        };
        map(&mut vm, &a, true);
        // one worker's cache through every change below, as a compute unit keeps it
        let mut tlb = Tlb::default();
        let addrs: [u64; 64] = std::array::from_fn(|l| va + 4 * l as u64);
        let mut out = [[0u32; 64]];
        vm.load_lanes(&mut tlb, &addrs, u64::MAX, 4, &mut out)
            .unwrap();
        assert_eq!(out[0][5], 0x0101_0101);
        // unmapped: faults; mapped again to other memory, read-only: reads it, writes fault
        vm.unmap(va);
        assert!(vm
            .load_lanes(&mut tlb, &addrs, u64::MAX, 4, &mut out)
            .is_err());
        assert!(vm.load_u32(va).is_err());
        map(&mut vm, &b, false);
        vm.load_lanes(&mut tlb, &addrs, u64::MAX, 4, &mut out)
            .unwrap();
        assert_eq!(out[0][5], 0x0202_0202);
        assert_eq!(vm.load_u32(va + 8).unwrap(), 0x0202_0202);
        let f = vm
            .store_lanes(&mut tlb, &addrs, u64::MAX, 4, &[[0; 64]])
            .unwrap_err();
        assert!(!f.not_present);
        assert!(vm.store_u32(va, 0).is_err());
        // an injected fault covers a mapping the thread has translated
        vm.inject_fault(va + 64, 4);
        let f = vm
            .load_lanes(&mut tlb, &addrs, u64::MAX, 4, &mut out)
            .unwrap_err();
        assert_eq!(f.va, va + 64);
        assert!(vm.load_u32(va + 64).is_err());
        vm.clear_injected_faults();
        assert_eq!(vm.load_u32(va + 64).unwrap(), 0x0202_0202);
        // another VM at the same addresses is another translation
        let mut other = GpuVm::new();
        assert!(other.load_u32(va).is_err());
        map(&mut other, &a, true);
        assert_eq!(other.load_u32(va).unwrap(), 0x0101_0101);
        assert_eq!(vm.load_u32(va).unwrap(), 0x0202_0202);
    }

    #[test]
    fn a_device_mapping_must_lie_inside_its_memory() {
        let mem = dev(8192);
        let mut vm = GpuVm::new();
        let va = 0x1000_0000u64;
        let mapping = |len: u64, offset: usize| VmMapping {
            va,
            len,
            backing: Backing::Device {
                mem: mem.clone(),
                offset,
            },
            writable: true,
            handle: 1,
        };
        // One byte past the end, from the start or from an offset, and an offset whose end
        // overflows: refused, nothing mapped.
        assert!(!vm.map(mapping(8193, 0)));
        assert!(!vm.map(mapping(4097, 4096)));
        assert!(!vm.map(mapping(4096, 8192)));
        assert!(!vm.map(mapping(4096, usize::MAX - 100)));
        // Inside, but an aligned GPU word would be a misaligned host word: refused.
        assert!(!vm.map(mapping(4096, 4)));
        assert!(vm.is_empty());
        assert!(vm.load_u32(va).is_err());
        // Ending exactly at the end: mapped, and its last word is the memory's last word.
        assert!(vm.map(mapping(4096, 4096)));
        assert!(vm.is_exact_mapping(va, 4096));
        vm.store_u32(va + 4092, 0x1234_5678).unwrap();
        assert_eq!(mem.load_u32(8188), Some(0x1234_5678));
        assert!(vm.load_u32(va + 4096).is_err());
    }

    #[test]
    fn accesses_are_checked_against_the_mappings() {
        let (mem, mut vm, base) = device_vm();
        assert!(!vm.map(VmMapping {
            va: base + 4096,
            len: 4096,
            backing: Backing::Device {
                mem: mem.clone(),
                offset: 0
            },
            writable: true,
            handle: 2
        }));
        vm.store_u64(base + 8, 0x1122_3344_5566_7788).unwrap();
        assert_eq!(mem.load_u64(8), Some(0x1122_3344_5566_7788));
        assert_eq!(vm.load_u32(base + 12).unwrap(), 0x1122_3344);
        let f = vm.load_u32(base + 8192).unwrap_err();
        assert_eq!(
            f,
            VmFault {
                va: base + 8192,
                write: false,
                not_present: true
            }
        );
        let f = vm.write(base + 8190, &[0; 4]).unwrap_err();
        assert_eq!(f.va, base + 8192);
        assert!(vm.is_exact_mapping(base, 8192));
        assert!(!vm.is_exact_mapping(base, 4096));
        assert_eq!(vm.unmap_handle(1), 1);
        assert!(vm.load_u32(base).is_err());
    }

    #[test]
    fn read_only_and_spanning_accesses() {
        let a = dev(4096);
        let b = dev(4096);
        let mut vm = GpuVm::new();
        let base = 0x10_0000u64;
        vm.map(VmMapping {
            va: base,
            len: 4096,
            backing: Backing::Device {
                mem: a.clone(),
                offset: 0,
            },
            writable: true,
            handle: 1,
        });
        vm.map(VmMapping {
            va: base + 4096,
            len: 4096,
            backing: Backing::Device {
                mem: b.clone(),
                offset: 0,
            },
            writable: false,
            handle: 2,
        });
        // A write crossing into the read-only range faults at its first byte.
        let f = vm.write(base + 4094, &[1, 2, 3, 4]).unwrap_err();
        assert_eq!(
            f,
            VmFault {
                va: base + 4096,
                write: true,
                not_present: false
            }
        );
        b.write(0, &[9, 8, 7]).unwrap();
        // A copy across the boundary reads both buffers.
        a.write(4094, &[5, 6]).unwrap();
        let mut buf = [0u8; 5];
        vm.read(base + 4094, &mut buf).unwrap();
        assert_eq!(buf, [5, 6, 9, 8, 7]);
        vm.copy(base, base + 4094, 5).unwrap();
        let mut back = [0u8; 5];
        a.read(0, &mut back).unwrap();
        assert_eq!(back, [5, 6, 9, 8, 7]);
        vm.fill_u32(base + 16, 6, 0xAABB_CCDD).unwrap();
        let mut filled = [0u8; 6];
        a.read(16, &mut filled).unwrap();
        assert_eq!(filled, [0xDD, 0xCC, 0xBB, 0xAA, 0xDD, 0xCC]);
    }

    #[test]
    fn user_memory_maps_at_any_gpu_address() {
        // Owned by raw pointer only, so the GPU's writes alias no Rust reference.
        let host: *mut [u64] = Box::into_raw(vec![0u64; 512].into_boxed_slice());
        let host_addr = host.cast::<u64>() as u64;
        let va = 0x2000_0000_0000;
        let mut vm = GpuVm::new();
        assert!(vm.map(VmMapping {
            va,
            len: 4096,
            // SAFETY: the 4096 bytes at `host_addr` are the leaked box above, reached only
            // through raw pointers, and freed below only after `vm` is dropped.
            backing: Backing::User(unsafe { UserMemory::new(host_addr) }),
            writable: true,
            handle: 3
        }));
        vm.store_u64(va + 16, 77).unwrap();
        drop(vm);
        // SAFETY: the VM that mapped the box is gone; this is the only owner again.
        let host = unsafe { Box::from_raw(host) };
        assert_eq!(host[2], 77);
    }
}
