//! CPU address ranges the thunk owns, and the only place it touches mapped memory.
//!
//! As libhsakmt does, the thunk first reserves address space with an anonymous `PROT_NONE`
//! mapping, gives its address to the driver as the buffer's GPU virtual address (GPU VA = CPU VA),
//! then maps the buffer's pages over the reservation with `MAP_FIXED`. Dropping the
//! [`VaRange`] unmaps the whole range, reservation and pages alike.
//!
//! Mapped memory is shared with the GPU, which reads and writes it behind the compiler's back,
//! so no Rust reference into it is ever created: every access is a bounds-checked raw copy or
//! an atomic, and ordering between CPU and GPU is expressed with acquire/release atomics.
#![allow(unsafe_code)]

use crate::backend::{Backend, MapTarget, RenderNode};
use crate::error::{Errno, Error, Result};
use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};
use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// The page size the thunk assumes (x86-64; the kernel's KFD interfaces use 4 KiB pages).
pub const PAGE_SIZE: u64 = 4096;

/// Rounds `value` up to a multiple of `align` (a power of two), or `None` on overflow.
pub(crate) fn align_up(value: u64, align: u64) -> Option<u64> {
    let mask = align.checked_sub(1)?;
    value.checked_add(mask).map(|v| v & !mask)
}

/// How the CPU may access a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reserved only (`PROT_NONE`): the CPU must not touch it.
    None,
    /// Mapped readable.
    ReadOnly,
    /// Mapped readable and writable.
    ReadWrite,
}

impl Access {
    /// The `mmap` protection bits.
    pub(crate) fn prot(self) -> ProtFlags {
        match self {
            Access::None => ProtFlags::PROT_NONE,
            Access::ReadOnly => ProtFlags::PROT_READ,
            Access::ReadWrite => ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
        }
    }
}

/// A range of this process's address space owned by the thunk; unmapped on drop.
#[derive(Debug)]
pub struct VaRange {
    base: NonNull<u8>,
    len: usize,
    access: Access,
}

// SAFETY: the range is exclusively owned by this value until drop; all accesses go through
// raw-pointer copies and atomics, never through Rust references, so using it from several
// threads is no different from the GPU using it concurrently.
unsafe impl Send for VaRange {}
// SAFETY: as above; `&VaRange` only offers bounds-checked raw copies and atomics.
unsafe impl Sync for VaRange {}

impl VaRange {
    /// Reserves `len` bytes (rounded up to pages) aligned to `align` (a power of two ≥ one page)
    /// with no access, the way libhsakmt reserves GPU virtual address space.
    pub fn reserve(len: u64, align: u64) -> Result<VaRange> {
        Self::anonymous(len, align, Access::None)
    }

    /// A range of no bytes that owns nothing (what a recycled buffer leaves behind).
    pub(crate) const fn empty() -> VaRange {
        VaRange {
            base: NonNull::dangling(),
            len: 0,
            access: Access::None,
        }
    }

    /// Allocates `len` bytes (rounded up to pages) of zeroed, readable and writable anonymous
    /// memory aligned to `align`: the pages a USERPTR buffer registers.
    pub fn anonymous_rw(len: u64, align: u64) -> Result<VaRange> {
        Self::anonymous(len, align, Access::ReadWrite)
    }

    fn anonymous(len: u64, align: u64, access: Access) -> Result<VaRange> {
        const OP: &str = "reserve address space";
        let align = align.max(PAGE_SIZE);
        if !align.is_power_of_two() {
            return Err(Error::invalid(
                OP,
                format!("alignment {align:#x} is not a power of two"),
            ));
        }
        let len = align_up(len, PAGE_SIZE)
            .filter(|&l| l > 0)
            .ok_or_else(|| Error::invalid(OP, format!("size {len:#x} is zero or too large")))?;
        let padded = len
            .checked_add(align - PAGE_SIZE)
            .and_then(|p| usize::try_from(p).ok())
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| Error::invalid(OP, format!("size {len:#x} is too large")))?;
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses, so it cannot
        // overlap anything Rust owns.
        let raw = unsafe {
            mmap_anonymous(
                None,
                padded,
                access.prot(),
                MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
            )
        }
        .map_err(|e| {
            Error::new(
                OP,
                crate::error::from_nix(e),
                format!("cannot reserve {len:#x} bytes"),
            )
        })?;
        let start = raw.as_ptr() as u64;
        let aligned = align_up(start, align).unwrap_or(start);
        let head = aligned - start;
        let tail = padded.get() as u64 - head - len;
        // Give back the slack before and after the aligned part.
        if head > 0 {
            // SAFETY: `[start, start+head)` is part of the mapping created above and nothing
            // refers to it.
            let _ = unsafe { munmap(raw, head as usize) };
        }
        if tail > 0 {
            let tail_start = aligned + len;
            if let Some(p) = NonNull::new(tail_start as *mut c_void) {
                // SAFETY: `[aligned+len, start+padded)` is the rest of the same mapping.
                let _ = unsafe { munmap(p, tail as usize) };
            }
        }
        let base = NonNull::new(aligned as *mut u8)
            .ok_or_else(|| Error::new(OP, Errno::ENOMEM, "mmap returned a null address"))?;
        Ok(VaRange {
            base,
            len: len as usize,
            access,
        })
    }

    /// First address.
    pub fn addr(&self) -> u64 {
        self.base.as_ptr() as u64
    }

    /// Length in bytes (whole pages).
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// The first address as the pointer `mmap` takes.
    pub fn as_ptr(&self) -> NonNull<c_void> {
        self.base.cast()
    }

    /// How the CPU may access the range now.
    pub fn access(&self) -> Access {
        self.access
    }

    /// Records that the whole range was just mapped with `access` (by an `mmap` with
    /// `MAP_FIXED` over it).
    ///
    /// # Safety
    ///
    /// Every page of the range must now be mapped with at least the protection `access` names;
    /// otherwise later accesses fault.
    pub unsafe fn set_access(&mut self, access: Access) {
        self.access = access;
    }

    /// The pointer to `[offset, offset+len)`, if inside the range and readable (and writable
    /// for `write`). Inlined, with the errors out of line: queue submits go through it.
    #[inline]
    fn ptr(&self, op: &'static str, offset: u64, len: u64, write: bool) -> Result<*mut u8> {
        let inside = offset
            .checked_add(len)
            .is_some_and(|end| end <= self.len as u64);
        let allowed = match self.access {
            Access::None => false,
            Access::ReadOnly => !write,
            Access::ReadWrite => true,
        };
        if inside && allowed {
            // SAFETY: `offset + len <= self.len`, so the result stays inside the range.
            Ok(unsafe { self.base.as_ptr().add(offset as usize) })
        } else {
            Err(self.ptr_error(op, offset, len, inside))
        }
    }

    /// Why [`VaRange::ptr`] refused.
    #[cold]
    #[inline(never)]
    fn ptr_error(&self, op: &'static str, offset: u64, len: u64, inside: bool) -> Error {
        if !inside {
            return Error::invalid(
                op,
                format!(
                    "bytes {offset:#x}..+{len:#x} are outside the {:#x}-byte buffer",
                    self.len
                ),
            );
        }
        match self.access {
            Access::None => Error::new(op, Errno::EACCES, "the buffer is not mapped for the CPU"),
            _ => Error::new(
                op,
                Errno::EACCES,
                "the buffer is mapped read-only for the CPU",
            ),
        }
    }

    /// Copies `buf.len()` bytes from `offset`.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let src = self.ptr("read", offset, buf.len() as u64, false)?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        // SAFETY: `src..src+len` is inside the mapped range (checked above); `buf` is a
        // distinct Rust buffer, so the two cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Copies `data` to `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let dst = self.ptr("write", offset, data.len() as u64, true)?;
        // SAFETY: `dst..dst+len` is inside the writable mapped range; `data` is a distinct
        // Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Copies dwords to `offset` (a multiple of 4).
    #[inline]
    pub fn write_dwords(&self, offset: u64, data: &[u32]) -> Result<()> {
        if offset % 4 != 0 {
            return Err(Error::invalid(
                "write",
                format!("dword offset {offset:#x} is not 4-byte aligned"),
            ));
        }
        let dst = self.ptr("write", offset, data.len() as u64 * 4, true)?;
        // SAFETY: inside the writable mapped range and 4-byte aligned (page-aligned base plus
        // a multiple of 4); `data` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst.cast::<u32>(), data.len()) };
        Ok(())
    }

    /// Sets `len` bytes from `offset` to `byte`.
    pub fn fill(&self, offset: u64, len: u64, byte: u8) -> Result<()> {
        let dst = self.ptr("fill", offset, len, true)?;
        // SAFETY: inside the writable mapped range.
        unsafe { std::ptr::write_bytes(dst, byte, len as usize) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// The pointer to the `size`-byte word at `offset`: aligned to `size`, inside the range,
    /// mapped read-write.
    #[inline]
    fn atomic_ptr(&self, offset: u64, size: u64) -> Result<*mut u8> {
        if offset % size != 0 {
            return Err(atomic_error(offset, size, true));
        }
        let p = self.ptr("atomic access", offset, size, false)?;
        if self.access != Access::ReadWrite {
            return Err(atomic_error(offset, size, false));
        }
        Ok(p)
    }

    /// The 32-bit word at `offset` (4-byte aligned) as an atomic.
    #[inline]
    pub fn atomic_u32(&self, offset: u64) -> Result<&AtomicU32> {
        let p = self.atomic_ptr(offset, 4)?;
        // SAFETY: aligned, inside a read-write mapping that lives as long as `&self`; the
        // word is only accessed through atomics and raw copies (never a Rust reference to
        // plain data), as device memory shared with the GPU must be.
        Ok(unsafe { AtomicU32::from_ptr(p.cast()) })
    }

    /// The 64-bit word at `offset` (8-byte aligned) as an atomic.
    #[inline]
    pub fn atomic_u64(&self, offset: u64) -> Result<&AtomicU64> {
        let p = self.atomic_ptr(offset, 8)?;
        // SAFETY: as for `atomic_u32`, with 8-byte alignment.
        Ok(unsafe { AtomicU64::from_ptr(p.cast()) })
    }
}

/// An atomic access of the `size`-byte word at `offset` refused: `misaligned`, or not mapped
/// read-write.
#[cold]
#[inline(never)]
fn atomic_error(offset: u64, size: u64, misaligned: bool) -> Error {
    if misaligned {
        Error::invalid(
            "atomic access",
            format!("offset {offset:#x} is not {size}-byte aligned"),
        )
    } else {
        Error::new(
            "atomic access",
            Errno::EACCES,
            "atomics need a read-write CPU mapping",
        )
    }
}

/// The whole of `range` as an mmap target with `access`.
fn target(range: &VaRange, access: Access) -> Result<MapTarget, Errno> {
    Ok(MapTarget {
        addr: range.as_ptr(),
        len: NonZeroUsize::new(range.len).ok_or(Errno::EINVAL)?,
        access,
    })
}

/// Maps `offset` of the KFD file over all of `range` with `access` (doorbell, event and MMIO
/// pages).
pub(crate) fn map_kfd_over(
    backend: &dyn Backend,
    range: &mut VaRange,
    access: Access,
    offset: u64,
) -> Result<(), Errno> {
    let t = target(range, access)?;
    // SAFETY: `range` is a reservation this process owns, and `&mut` proves that no reference
    // into it (an atomic handed out by `&self` accessors) is alive.
    unsafe { backend.mmap(t, offset)? };
    // SAFETY: the whole range was just mapped with `access`.
    unsafe { range.set_access(access) };
    Ok(())
}

/// Maps the render-node buffer at `offset` over all of `range` with `access` (VRAM, GTT).
pub(crate) fn map_render_over(
    render: &dyn RenderNode,
    range: &mut VaRange,
    access: Access,
    offset: u64,
) -> Result<(), Errno> {
    let t = target(range, access)?;
    // SAFETY: as in `map_kfd_over`.
    unsafe { render.mmap(t, offset)? };
    // SAFETY: the whole range was just mapped with `access`.
    unsafe { range.set_access(access) };
    Ok(())
}

impl Drop for VaRange {
    fn drop(&mut self) {
        if self.len == 0 {
            return; // `VaRange::empty`: nothing reserved.
        }
        // SAFETY: `base..base+len` is the range this value owns (reservation and whatever was
        // mapped over it); no reference into it outlives `self`.
        if let Err(e) = unsafe { munmap(self.base.cast(), self.len) } {
            log::warn!(target: "thunk::memory", "munmap of {:#x}+{:#x} failed: {e}", self.addr(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn reservations_are_aligned_and_inaccessible() {
        let r = VaRange::reserve(5000, 1 << 21).unwrap();
        assert_eq!(r.addr() % (1 << 21), 0);
        assert_eq!(r.len(), 8192);
        let mut b = [0u8; 4];
        assert_eq!(r.read(0, &mut b).unwrap_err().errno(), Errno::EACCES);
        assert!(VaRange::reserve(0, 4096).is_err());
        assert!(VaRange::reserve(4096, 3 * 4096).is_err());
        assert!(VaRange::reserve(u64::MAX, 4096).is_err());
    }

    #[test]
    fn anonymous_memory_is_bounds_checked() {
        let r = VaRange::anonymous_rw(100, 4096).unwrap();
        r.write(4090, &[1, 2, 3, 4, 5, 6]).unwrap();
        assert!(r.write(4091, &[0; 6]).is_err());
        assert!(r.write(u64::MAX, &[0]).is_err());
        let mut b = [0u8; 6];
        r.read(4090, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4, 5, 6]);
        r.atomic_u64(8).unwrap().store(7, Ordering::Release);
        assert_eq!(r.atomic_u32(8).unwrap().load(Ordering::Acquire), 7);
        assert!(r.atomic_u64(12).is_err());
        assert!(r.atomic_u32(4096).is_err());
        r.write_dwords(16, &[0xdead_beef]).unwrap();
        assert_eq!(
            r.atomic_u32(16).unwrap().load(Ordering::Relaxed),
            0xdead_beef
        );
        assert!(r.write_dwords(2, &[1]).is_err());
        r.fill(0, 4096, 0xFF).unwrap();
        assert_eq!(
            r.atomic_u64(4088).unwrap().load(Ordering::Relaxed),
            u64::MAX
        );
    }

    #[test]
    fn align_up_saturates_to_none() {
        assert_eq!(align_up(1, 4096), Some(4096));
        assert_eq!(align_up(4096, 4096), Some(4096));
        assert_eq!(align_up(u64::MAX, 4096), None);
        assert_eq!(align_up(5, 0), None);
    }
}
