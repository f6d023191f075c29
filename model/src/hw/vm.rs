//! The GPU virtual memory of one process on one GPU: which ranges are mapped and to what.
//!
//! GPU VA = CPU VA (shared virtual memory). A range maps either device memory (VRAM, GTT,
//! doorbell and MMIO pages: a [`DeviceMemory`] at some offset) or user memory (`USERPTR`: an
//! address in this process, checked mapped when registered). Every engine access goes
//! through [`GpuVm::read`] / [`GpuVm::write`] and friends; an access outside the mappings is a
//! [`VmFault`], which the hardware model turns into a memory-exception event — never a fault of
//! the host process.

use crate::hw::mem::DeviceMemory;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

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
/// that keeps [`GpuVm::map`] safe.
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
#[derive(Debug, Default)]
pub struct GpuVm {
    ranges: BTreeMap<u64, VmMapping>,
    /// Ranges where every GPU access faults although they may be mapped (fault injection);
    /// the driver's own lookups do not see them.
    injected: Vec<(u64, u64)>,
}

impl GpuVm {
    /// An empty address space.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps a range. Overlapping an existing mapping is refused (`false`).
    pub fn map(&mut self, mapping: VmMapping) -> bool {
        let Some(end) = mapping.va.checked_add(mapping.len) else {
            return false;
        };
        if mapping.len == 0 || self.overlaps(mapping.va, end) {
            return false;
        }
        self.ranges.insert(mapping.va, mapping);
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
        self.ranges.remove(&va)
    }

    /// Removes every mapping created by `handle`.
    pub fn unmap_handle(&mut self, handle: u64) -> usize {
        let before = self.ranges.len();
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
            self.injected.push((va, va.saturating_add(len)));
        }
    }

    /// Removes the injected fault ranges.
    pub fn clear_injected_faults(&mut self) {
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
        if !self.injected.is_empty() {
            return None;
        }
        let m = self.lookup(va)?;
        let end = va.checked_add(len)?;
        (end <= m.end() && (!write || m.writable)).then(|| m.host(va))
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
        if let Some(host) = self.single(va, buf.len() as u64, false) {
            // SAFETY: `host..host+len` lies inside one mapping of this VM (device memory kept
            // alive by the Arc in the mapping, or user memory checked mapped at registration).
            unsafe { std::ptr::copy(host as *const u8, buf.as_mut_ptr(), buf.len()) };
            return Ok(());
        }
        let mut done = 0usize;
        for (host, n) in self.pieces(va, buf.len() as u64, false)? {
            let n = n as usize;
            // SAFETY: `host..host+n` lies inside a mapping of this VM: device memory kept alive
            // by the Arc in the mapping, or user memory checked mapped at registration.
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
                // SAFETY: `lanes_single` checked that one mapping of this VM holds every
                // active lane's `n` bytes (kept alive as in `read`).
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
                // SAFETY: as in `gather`, and the mapping is writable.
                unsafe { std::ptr::copy(d.as_ptr(), (host + (addrs[l] - lo)) as *mut u8, n) };
            }
            return Ok(());
        }
        for l in active {
            self.write(addrs[l], &data(l)[..n])?;
        }
        Ok(())
    }

    /// Copies `data` into GPU memory at `va`.
    pub fn write(&self, va: u64, data: &[u8]) -> Result<(), VmFault> {
        if let Some(host) = self.single(va, data.len() as u64, true) {
            // SAFETY: as in `read`, and the mapping is writable.
            unsafe { std::ptr::copy(data.as_ptr(), host as *mut u8, data.len()) };
            return Ok(());
        }
        let mut done = 0usize;
        for (host, n) in self.pieces(va, data.len() as u64, true)? {
            let n = n as usize;
            // SAFETY: as in `read`, and the mapping is writable.
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
        // SAFETY: aligned, inside a live mapping; device memory is only accessed atomically or by
        // raw copies.
        Ok(unsafe { AtomicU32::from_ptr(host as *mut u32) }.load(Ordering::Acquire))
    }

    /// Atomic 64-bit load of an aligned word.
    pub fn load_u64(&self, va: u64) -> Result<u64, VmFault> {
        let host = self.word(va, 8, false)?;
        // SAFETY: as in `load_u32`.
        Ok(unsafe { AtomicU64::from_ptr(host as *mut u64) }.load(Ordering::Acquire))
    }

    /// Atomic 32-bit store of an aligned word.
    pub fn store_u32(&self, va: u64, value: u32) -> Result<(), VmFault> {
        let host = self.word(va, 4, true)?;
        // SAFETY: as in `load_u32`, and the mapping is writable.
        unsafe { AtomicU32::from_ptr(host as *mut u32) }.store(value, Ordering::Release);
        Ok(())
    }

    /// Atomic 64-bit add of an aligned word (wrapping); returns the previous value. What the
    /// packet processor uses to decrement a completion signal.
    pub fn fetch_add_u64(&self, va: u64, delta: u64) -> Result<u64, VmFault> {
        let host = self.word(va, 8, true)?;
        // SAFETY: as in `store_u32`.
        Ok(unsafe { AtomicU64::from_ptr(host as *mut u64) }.fetch_add(delta, Ordering::AcqRel))
    }

    /// Atomic read-modify-write of an aligned 32-bit word (a compare-exchange loop): stores
    /// `f(old)` and returns `old`. What shader atomics use, atomic with respect to the host.
    pub fn update_u32(&self, va: u64, f: impl Fn(u32) -> u32) -> Result<u32, VmFault> {
        let host = self.word(va, 4, true)?;
        // SAFETY: as in `store_u32`.
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
        // SAFETY: as in `store_u32`.
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
        // SAFETY: as in `store_u32`.
        unsafe { AtomicU64::from_ptr(host as *mut u64) }.store(value, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(len: u64) -> Arc<DeviceMemory> {
        Arc::new(DeviceMemory::new("vm-test", len).unwrap())
    }

    #[test]
    fn gathers_and_scatters_of_a_wave_check_every_active_lane() {
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

    #[test]
    fn accesses_are_checked_against_the_mappings() {
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
