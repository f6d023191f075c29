//! Memory of the modelled GPU: VRAM and GTT buffers, the doorbell BAR, the event page, the
//! MMIO remap page.
//!
//! Each piece is an anonymous shared file (`memfd`) that the model maps once for its own
//! accesses (what the GPU reaches through its page tables) and that clients map wherever they
//! ask (what the CPU reaches through the BAR or the render node) — two views of the same pages,
//! as on the real device. KFD's VRAM and GTT buffers are blocks of a few large such files
//! ([`crate::hw::heap`]). All accessors are bounds-checked; out-of-range offsets return `None`.

// Unsafe here: device memory is a memfd mapping, reached through raw pointers and atomics.
#![allow(unsafe_code)]

use crate::errno::from_nix;
use crate::errno::{Errno, KResult};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::ffi::CString;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The CPU page size the model assumes (x86-64).
pub const PAGE_SIZE: usize = 4096;

/// Rounds `len` up to whole pages.
pub fn page_align(len: u64) -> Option<u64> {
    len.checked_add(PAGE_SIZE as u64 - 1)
        .map(|v| v & !(PAGE_SIZE as u64 - 1))
}

/// One piece of device memory.
pub struct DeviceMemory {
    fd: OwnedFd,
    base: NonNull<u8>,
    len: usize,
    name: String,
}

// SAFETY: the mapping is shared memory owned by this value until drop; every access goes
// through raw pointers (bounds-checked) or atomics, never through Rust references that could
// alias a concurrent write, so sharing it across threads is sound.
unsafe impl Send for DeviceMemory {}
// SAFETY: `&DeviceMemory` only reads its fields and reaches the mapping through bounds-checked
// raw copies and atomics, which tolerate concurrent access from other threads.
unsafe impl Sync for DeviceMemory {}

impl DeviceMemory {
    /// Allocates `len` bytes (rounded up to pages), zero-filled. Pages are only backed when
    /// touched, so a large VRAM allocation costs nothing until used.
    pub(crate) fn new(name: &str, len: u64) -> KResult<DeviceMemory> {
        let len = page_align(len).filter(|&l| l > 0).ok_or(Errno::EINVAL)?;
        let len = usize::try_from(len).map_err(|_| Errno::ENOMEM)?;
        let cname = CString::new(format!("kfd-model:{name}")).map_err(|_| Errno::EINVAL)?;
        let fd = memfd_create(&cname, MemFdCreateFlag::MFD_CLOEXEC).map_err(from_nix)?;
        nix::unistd::ftruncate(&fd, len as i64).map_err(from_nix)?;
        let size = NonZeroUsize::new(len).ok_or(Errno::EINVAL)?;
        // SAFETY: a fresh shared mapping of a file we own, at an address the kernel picks, so it
        // cannot overlap any existing Rust object.
        let base = unsafe {
            mmap(
                None,
                size,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &fd,
                0,
            )
        }
        .map_err(from_nix)?;
        Ok(DeviceMemory {
            fd,
            base: base.cast(),
            len,
            name: name.to_owned(),
        })
    }

    /// The file a client maps to see this memory (offset 0 is the first byte).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: device memory has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What the memory is, for logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model's own view: base address of its mapping.
    pub fn host_base(&self) -> u64 {
        self.base.as_ptr() as u64
    }

    fn range(&self, offset: usize, len: usize) -> Option<*mut u8> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then(|| {
            // SAFETY: offset ≤ len of the mapping, so the result stays inside it.
            unsafe { self.base.as_ptr().add(offset) }
        })
    }

    /// Copies `buf.len()` bytes from `offset`.
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> Option<()> {
        let src = self.range(offset, buf.len())?;
        // SAFETY: `src..src+len` is inside the live mapping; `buf` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), buf.len()) };
        Some(())
    }

    /// Copies `data` to `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Option<()> {
        let dst = self.range(offset, data.len())?;
        // SAFETY: `dst..dst+len` is inside the live mapping; `data` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Some(())
    }

    /// Sets `len` bytes at `offset` to `byte`.
    pub fn fill(&self, offset: usize, len: usize, byte: u8) -> Option<()> {
        let dst = self.range(offset, len)?;
        // SAFETY: inside the live mapping.
        unsafe { std::ptr::write_bytes(dst, byte, len) };
        Some(())
    }

    fn atomic64(&self, offset: usize) -> Option<&AtomicU64> {
        if offset % 8 != 0 {
            return None;
        }
        let p = self.range(offset, 8)?;
        // SAFETY: 8-byte aligned (page-aligned base + multiple of 8), inside the mapping, and only
        // ever accessed atomically or by raw copies, as device memory is.
        Some(unsafe { AtomicU64::from_ptr(p.cast()) })
    }

    fn atomic32(&self, offset: usize) -> Option<&AtomicU32> {
        if offset % 4 != 0 {
            return None;
        }
        let p = self.range(offset, 4)?;
        // SAFETY: 4-byte aligned (page-aligned base + multiple of 4), inside the mapping, and
        // only ever accessed atomically or by raw copies, as device memory is.
        Some(unsafe { AtomicU32::from_ptr(p.cast()) })
    }

    /// Atomic 64-bit load (acquire) of an 8-byte-aligned word.
    pub fn load_u64(&self, offset: usize) -> Option<u64> {
        Some(self.atomic64(offset)?.load(Ordering::Acquire))
    }

    /// Atomic 64-bit store (release).
    pub fn store_u64(&self, offset: usize, value: u64) -> Option<()> {
        self.atomic64(offset)?.store(value, Ordering::Release);
        Some(())
    }

    /// Atomic 64-bit compare-and-swap; returns the previous value.
    pub fn compare_exchange_u64(
        &self,
        offset: usize,
        current: u64,
        new: u64,
    ) -> Option<Result<u64, u64>> {
        Some(self.atomic64(offset)?.compare_exchange(
            current,
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ))
    }

    /// Atomic 32-bit load (acquire).
    pub fn load_u32(&self, offset: usize) -> Option<u32> {
        Some(self.atomic32(offset)?.load(Ordering::Acquire))
    }

    /// Atomic 32-bit store (release).
    pub fn store_u32(&self, offset: usize, value: u32) -> Option<()> {
        self.atomic32(offset)?.store(value, Ordering::Release);
        Some(())
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` is the mapping created in `new`, unmapped exactly once here; no
        // reference into it outlives `self`.
        if let Err(e) = unsafe { munmap(self.base.cast(), self.len) } {
            log::warn!(target: crate::layer::MEM, "munmap of {} failed: {e}", self.name);
        }
    }
}

impl std::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMemory")
            .field("name", &self.name)
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_checked_access() {
        let m = DeviceMemory::new("test", 100).unwrap();
        assert_eq!(m.len(), 4096);
        assert!(m.write(4090, &[1, 2, 3, 4, 5, 6]).is_some());
        assert!(m.write(4091, &[0; 6]).is_none());
        let mut b = [0u8; 6];
        m.read(4090, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4, 5, 6]);
        assert!(m.store_u64(8, 0xdead_beef).is_some());
        assert_eq!(m.load_u64(8), Some(0xdead_beef));
        assert_eq!(m.load_u64(9), None, "misaligned");
        assert_eq!(m.load_u64(4096), None, "out of range");
        assert_eq!(m.load_u32(usize::MAX - 1), None, "overflow");
        assert!(DeviceMemory::new("zero", 0).is_err());
    }

    #[test]
    fn a_second_mapping_of_the_fd_sees_the_same_bytes() {
        let m = DeviceMemory::new("shared", 4096).unwrap();
        m.store_u32(16, 42).unwrap();
        let size = NonZeroUsize::new(4096).unwrap();
        // SAFETY: a fresh mapping at a kernel-chosen address, unmapped below.
        let p = unsafe {
            mmap(
                None,
                size,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                m.fd(),
                0,
            )
        }
        .unwrap();
        // SAFETY: reading an aligned u32 inside the mapping we just made.
        let seen = unsafe { p.cast::<u32>().as_ptr().add(4).read_volatile() };
        assert_eq!(seen, 42);
        // SAFETY: writing inside our own mapping, then unmapping it once.
        unsafe {
            p.cast::<u32>().as_ptr().add(5).write_volatile(7);
            munmap(p, 4096).unwrap();
        }
        assert_eq!(m.load_u32(20), Some(7));
    }
}
