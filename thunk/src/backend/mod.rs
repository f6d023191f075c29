//! The kernel's surface, as a trait: what the thunk needs from `/dev/kfd`, the render nodes and
//! sysfs, and nothing more.
//!
//! [`Backend`] is implemented twice: [`DevKfd`] makes real system calls on `/dev/kfd` and
//! `/dev/dri/renderD*`; [`ModelBackend`] (feature `model`) serves the same calls from the
//! in-process model of the driver and GPU. Everything above this module — topology, memory,
//! queues, events — only speaks these calls, so it behaves the same on both.
// `ioctl` and the mapping methods are `unsafe fn`: their callers promise the addresses they
// hand over are theirs.
#![allow(unsafe_code)]

use crate::error::Errno;
use crate::va::Access;
use kfd_sys::{IntoBytes, Ioctl, SafeIoctl};
use std::ffi::c_void;
use std::fmt;
use std::num::NonZeroUsize;
use std::path::Path;
use std::ptr::NonNull;

mod device;
#[cfg(feature = "model")]
mod model;

pub use device::{DevKfd, KFD_DEVICE_PATH};
#[cfg(feature = "model")]
pub use model::{ModelBackend, TOPOLOGY_DIR_PREFIX};

/// Where a mapping goes: a range of the caller's address space that it reserved itself.
#[derive(Clone, Copy, Debug)]
pub struct MapTarget {
    /// First address (page aligned).
    pub addr: NonNull<c_void>,
    /// Length in bytes (whole pages).
    pub len: NonZeroUsize,
    /// CPU access the mapping gets.
    pub access: Access,
}

/// An open render node (`/dev/dri/renderD<minor>`): the file `ACQUIRE_VM` takes the GPU's
/// address space from and VRAM/GTT buffers are CPU-mapped through. Closed on drop (except
/// that [`DevKfd`] keeps the files open for the life of the process, as the kernel binds the
/// address space to them).
pub trait RenderNode: Send + Sync + fmt::Debug {
    /// The render minor (128 for `renderD128`).
    fn minor(&self) -> u32;

    /// The file descriptor number `ACQUIRE_VM` is given.
    fn fd(&self) -> i32;

    /// `mmap(target, MAP_SHARED | MAP_FIXED, render_fd, offset)`: maps the buffer whose
    /// `mmap_offset` ALLOC returned over `target`.
    ///
    /// # Safety
    ///
    /// `target` must be a range of address space the caller owns (a reservation of its own)
    /// with no Rust references into it: the mapping replaces whatever was there.
    unsafe fn mmap(&self, target: MapTarget, offset: u64) -> Result<(), Errno>;
}

/// Which kind of backend serves the calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// Real system calls on a device file.
    Device,
    /// The in-process model.
    Model,
}

/// The kernel's surface: ioctl on raw argument bytes, mmap of `/dev/kfd` offsets, render
/// nodes, and the sysfs topology root.
pub trait Backend: Send + Sync + fmt::Debug {
    /// Device or model.
    fn kind(&self) -> BackendKind;

    /// A one-line description for logs (`"/dev/kfd"`, `"model: 2 × gfx900"`).
    fn describe(&self) -> String;

    /// `ioctl(kfd_fd, request, arg)`. `arg` must hold at least the argument size the request
    /// code names (its `_IOC_SIZE` field); shorter buffers are refused with `EFAULT` before
    /// any call. Returns the ioctl's non-negative result or the errno.
    ///
    /// The typed calls [`call`](#method.call) (safe, for [`SafeIoctl`] requests) and
    /// [`call_unchecked`](#method.call_unchecked) sit in front of this one.
    ///
    /// # Safety
    ///
    /// Every address inside the argument bytes (ring, read/write-pointer, EOP and save-area
    /// addresses, GPU VAs and user pointers of buffers, output arrays, …) must be memory the
    /// caller owns for everything the call does with it and for as long as it does: for an
    /// output array, until the call returns; for memory a queue or a mapping lets the GPU read
    /// or write, until the queue is destroyed or the buffer unmapped and freed. No Rust
    /// reference may point into memory the kernel or the GPU writes meanwhile.
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<i32, Errno>;

    /// `mmap(target, MAP_SHARED | MAP_FIXED, kfd_fd, offset)`: doorbell, event and MMIO pages.
    ///
    /// # Safety
    ///
    /// As [`RenderNode::mmap`]: `target` is address space the caller owns with no Rust
    /// references into it.
    unsafe fn mmap(&self, target: MapTarget, offset: u64) -> Result<(), Errno>;

    /// Opens `/dev/dri/renderD<minor>`.
    fn open_render_node(&self, minor: u32) -> Result<Box<dyn RenderNode>, Errno>;

    /// The directory holding the topology (`generation_id`, `system_properties`, `nodes/`).
    fn topology_root(&self) -> &Path;

    /// A hint after the thunk wrote a doorbell of `gpu_id`. Hardware notices doorbell writes
    /// by itself; a model may use the hint to start work without waiting for its poll.
    fn doorbell_rung(&self, gpu_id: u32) {
        let _ = gpu_id;
    }
}

impl dyn Backend + '_ {
    /// A typed ioctl that safe code may issue ([`SafeIoctl`]): the request code and the
    /// argument type come together from `R`, so they cannot disagree.
    #[inline]
    pub fn call<R: SafeIoctl>(&self, arg: &mut R::Arg) -> Result<i32, Errno> {
        // SAFETY: a `SafeIoctl` argument holds no address the kernel writes through and hands
        // no process memory to the GPU; the argument bytes themselves are `arg`'s.
        unsafe { self.ioctl(R::REQUEST, arg.as_mut_bytes()) }
    }

    /// A typed ioctl of any request, including those whose argument carries user addresses.
    ///
    /// # Safety
    ///
    /// As [`Backend::ioctl`]: every address inside `arg` is memory the caller owns for the
    /// call's effects and their lifetime.
    #[inline]
    pub unsafe fn call_unchecked<R: Ioctl>(&self, arg: &mut R::Arg) -> Result<i32, Errno> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.ioctl(R::REQUEST, arg.as_mut_bytes()) }
    }
}

/// `mmap(target, MAP_SHARED | MAP_FIXED, fd, offset)`: what both backends do to place a file's
/// pages in a range the thunk reserved.
///
/// # Safety
///
/// `target` is address space the caller owns with no Rust references into it.
pub(crate) unsafe fn map_fixed(
    target: MapTarget,
    fd: impl std::os::fd::AsFd,
    offset: libc::off_t,
) -> Result<(), Errno> {
    let addr = NonZeroUsize::new(target.addr.as_ptr() as usize).ok_or(Errno::EINVAL)?;
    // SAFETY: MAP_FIXED replaces the caller's own reservation, which the caller guarantees
    // nothing in Rust refers to.
    unsafe {
        nix::sys::mman::mmap(
            Some(addr),
            target.len,
            target.access.prot(),
            nix::sys::mman::MapFlags::MAP_SHARED | nix::sys::mman::MapFlags::MAP_FIXED,
            fd,
            offset,
        )
    }
    .map(drop)
    .map_err(crate::error::from_nix)
}

/// Refuses an argument buffer shorter than the request's size field, so that the kernel is
/// never told to read or write past it.
pub(crate) fn check_arg_len(request: u32, arg: &[u8]) -> Result<(), Errno> {
    if arg.len() < kfd_sys::ioctl::ioc_size(request) {
        Err(Errno::EFAULT)
    } else {
        Ok(())
    }
}
