//! GPU memory, allocated the way libhsakmt does it: reserve address space, `ALLOC_MEMORY_OF_GPU`
//! at that address (GPU VA = CPU VA), map the pages for the CPU over the reservation (through
//! the render node for VRAM and GTT, through `/dev/kfd` for doorbell and MMIO pages), then
//! `MAP_MEMORY_TO_GPU` on one or more GPUs. Dropping a [`Memory`] undoes all of it.

// An ioctl whose argument carries a user address, upholding its contract.
#![allow(unsafe_code)]

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::kfd::{lock, Session};
use crate::poll::poll_until;
use crate::pool::PooledBuffer;
use crate::va::{align_up, map_kfd_over, map_render_over, Access, VaRange, PAGE_SIZE};
use kfd_sys::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What kind of memory a buffer is (`KFD_IOC_ALLOC_MEM_FLAGS_*` type bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Device memory; CPU-mapped through the render node unless
    /// [`AllocOptions::device_only`].
    Vram,
    /// System memory reached through the GPU's GART; CPU-mapped through the render node.
    Gtt,
    /// Ordinary process memory (anonymous pages the thunk allocates) registered with the GPU.
    UserPtr,
    /// The process doorbell page (exactly 8 KiB), CPU-mapped through `/dev/kfd`.
    Doorbell,
    /// The MMIO remap page (HDP flush registers, exactly 4 KiB), CPU-mapped through `/dev/kfd`.
    MmioRemap,
}

impl MemoryKind {
    fn flag(self) -> u32 {
        match self {
            MemoryKind::Vram => KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
            MemoryKind::Gtt => KFD_IOC_ALLOC_MEM_FLAGS_GTT,
            MemoryKind::UserPtr => KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
            MemoryKind::Doorbell => KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL,
            MemoryKind::MmioRemap => KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP,
        }
    }

    /// The exact size the driver requires, for the kinds that have one.
    fn fixed_size(self) -> Option<u64> {
        match self {
            MemoryKind::Doorbell => Some(KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15),
            MemoryKind::MmioRemap => Some(PAGE_SIZE),
            _ => None,
        }
    }
}

/// How to allocate a buffer.
///
/// ```
/// use thunk::{AllocOptions, MemoryKind};
/// let opts = AllocOptions::new(MemoryKind::Vram, 1 << 20).executable().device_only();
/// assert_eq!(opts.size(), 1 << 20);
/// ```
#[derive(Clone, Debug)]
pub struct AllocOptions {
    kind: MemoryKind,
    size: u64,
    writable: bool,
    executable: bool,
    cpu_access: bool,
    coherent: bool,
    uncached: bool,
    extra_flags: u32,
    map_to: Option<Vec<Gpu>>,
}

impl AllocOptions {
    /// `size` bytes (rounded up to pages) of `kind`: GPU-writable, CPU-mapped, mapped on the
    /// allocating GPU.
    pub fn new(kind: MemoryKind, size: u64) -> Self {
        AllocOptions {
            kind,
            size,
            writable: true,
            executable: false,
            cpu_access: true,
            coherent: false,
            uncached: false,
            extra_flags: 0,
            map_to: None,
        }
    }

    /// The requested size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The GPU may only read it.
    pub fn read_only(mut self) -> Self {
        self.writable = false;
        self
    }

    /// The GPU may execute it (shader code, trap handlers).
    pub fn executable(mut self) -> Self {
        self.executable = true;
        self
    }

    /// No CPU mapping (VRAM only): the address range stays reserved but inaccessible.
    pub fn device_only(mut self) -> Self {
        self.cpu_access = false;
        self
    }

    /// Fine-grained coherence with the CPU.
    pub fn coherent(mut self) -> Self {
        self.coherent = true;
        self
    }

    /// Uncached on the GPU.
    pub fn uncached(mut self) -> Self {
        self.uncached = true;
        self
    }

    /// More `KFD_IOC_ALLOC_MEM_FLAGS_*` bits (not the kind bits).
    pub fn flags(mut self, flags: u32) -> Self {
        self.extra_flags |= flags;
        self
    }

    /// Map on these GPUs instead of only the allocating one (an empty list: on none).
    pub fn map_to(mut self, gpus: &[&Gpu]) -> Self {
        self.map_to = Some(gpus.iter().map(|g| (*g).clone()).collect());
        self
    }

    fn raw_flags(&self) -> u32 {
        let mut f = self.kind.flag() | self.extra_flags;
        if self.writable || self.kind == MemoryKind::Doorbell {
            f |= KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        }
        if self.executable {
            f |= KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
        }
        if self.kind == MemoryKind::Vram && self.cpu_access {
            f |= KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
        }
        if self.coherent {
            f |= KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
        }
        if self.uncached {
            f |= KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
        }
        f
    }
}

/// A buffer the driver knows: handle, address range, and the CPU mapping if any.
#[derive(Debug)]
pub(crate) struct RawBuffer {
    pub handle: u64,
    pub range: VaRange,
    pub gpu_id: u32,
    pub flags: u32,
}

impl RawBuffer {
    /// A buffer that owns nothing: what a [`Memory`] keeps after giving its buffer to a pool.
    fn empty() -> RawBuffer {
        RawBuffer {
            handle: 0,
            range: VaRange::empty(),
            gpu_id: 0,
            flags: 0,
        }
    }

    /// `UNMAP_MEMORY_FROM_GPU` on `mapped_on` and `FREE_MEMORY_OF_GPU`; the CPU range is
    /// unmapped when `self` drops.
    pub(crate) fn free(self, session: &Session, mapped_on: &[u32]) {
        if let Err(e) = map_raw(session, self.handle, mapped_on, false) {
            log::warn!(target: "thunk::memory", "pool: {e}");
        }
        if let Err(e) = free_raw(session, self.handle) {
            log::warn!(target: "thunk::memory", "pool: {e}");
        }
    }
}

/// Alignment of the reserved address range: 2 MiB for buffers of 2 MiB or more (so the GPU can
/// use large pages), 64 KiB for VRAM, a page otherwise.
fn va_alignment(kind: MemoryKind, size: u64) -> u64 {
    if size >= 2 << 20 {
        2 << 20
    } else if kind == MemoryKind::Vram {
        64 << 10
    } else {
        PAGE_SIZE
    }
}

/// `ALLOC_MEMORY_OF_GPU` plus the CPU mapping; frees the buffer again if the mapping fails.
pub(crate) fn alloc_raw(
    session: &Session,
    gpu: usize,
    kind: MemoryKind,
    size: u64,
    flags: u32,
    cpu_access: bool,
) -> Result<RawBuffer> {
    const OP: &str = "ALLOC_MEMORY_OF_GPU";
    let state = session
        .gpus
        .get(gpu)
        .ok_or_else(|| Error::invalid(OP, format!("no GPU with index {gpu}")))?;
    if size == 0 {
        return Err(Error::invalid(OP, format!("{kind:?} buffer of size 0")));
    }
    if let Some(exact) = kind.fixed_size() {
        if size != exact {
            return Err(Error::invalid(
                OP,
                format!("a {kind:?} buffer is exactly {exact} bytes, not {size}"),
            ));
        }
    }
    let size = align_up(size, PAGE_SIZE)
        .ok_or_else(|| Error::invalid(OP, format!("size {size:#x} is too large")))?;
    let align = va_alignment(kind, size);
    let mut range = if kind == MemoryKind::UserPtr {
        VaRange::anonymous_rw(size, align)?
    } else {
        VaRange::reserve(size, align)?
    };
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: range.addr(),
        size,
        gpu_id: state.gpu_id,
        flags,
        mmap_offset: if kind == MemoryKind::UserPtr {
            range.addr()
        } else {
            0
        },
        ..Default::default()
    };
    // SAFETY: the VA is `range`, a reservation of this process's address space that the new
    // [`Memory`] owns; for USERPTR, the user pages are that same anonymous mapping, reached
    // from Rust only through the `Memory`'s raw pointers.
    unsafe { session.ioctl_unchecked::<AllocMemoryOfGpu>(&mut a) }.map_err(|e| {
        Error::ioctl(
            OP,
            e,
            format_args!(
                "{kind:?} buffer of {size:#x} bytes on gpu {:#x}",
                state.gpu_id
            ),
        )
    })?;
    let handle = a.handle;
    let free = |reason: Error| -> Error {
        let mut f = kfd_ioctl_free_memory_of_gpu_args { handle };
        if let Err(e) = session.ioctl::<FreeMemoryOfGpu>(&mut f) {
            log::warn!(target: "thunk::memory", "freeing handle {handle:#x} after a failed mapping: {e}");
        }
        reason
    };
    if (handle >> 32) as u32 != state.gpu_id {
        return Err(free(Error::bad_answer(
            OP,
            format!(
                "handle {handle:#x} names gpu {:#x}, not {:#x}",
                handle >> 32,
                state.gpu_id
            ),
        )));
    }
    let access = if (flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE != 0) || kind == MemoryKind::Doorbell
    {
        Access::ReadWrite
    } else {
        Access::ReadOnly
    };
    let cpu_map = match kind {
        MemoryKind::Vram => cpu_access,
        MemoryKind::Gtt | MemoryKind::Doorbell | MemoryKind::MmioRemap => true,
        MemoryKind::UserPtr => false,
    };
    if cpu_map {
        let (mapped, via) = match kind {
            MemoryKind::Doorbell | MemoryKind::MmioRemap => (
                map_kfd_over(session.backend.as_ref(), &mut range, access, a.mmap_offset),
                "/dev/kfd",
            ),
            _ => (
                map_render_over(state.render.as_ref(), &mut range, access, a.mmap_offset),
                "the render node",
            ),
        };
        if let Err(e) = mapped {
            return Err(free(Error::new(
                "mmap",
                e,
                format!(
                    "cannot map {kind:?} buffer {handle:#x} (offset {:#x}) through {via}",
                    a.mmap_offset
                ),
            )));
        }
    }
    log::debug!(target: "thunk::memory", "alloc {kind:?} {size:#x} bytes at {:#x} on gpu {:#x}: handle {handle:#x}", range.addr(), state.gpu_id);
    Ok(RawBuffer {
        handle,
        range,
        gpu_id: state.gpu_id,
        flags,
    })
}

/// `MAP_MEMORY_TO_GPU` / `UNMAP_MEMORY_FROM_GPU` of `handle` on `gpu_ids`.
pub(crate) fn map_raw(session: &Session, handle: u64, gpu_ids: &[u32], map: bool) -> Result<()> {
    let op = if map {
        "MAP_MEMORY_TO_GPU"
    } else {
        "UNMAP_MEMORY_FROM_GPU"
    };
    if gpu_ids.is_empty() {
        return Ok(());
    }
    let n = u32::try_from(gpu_ids.len()).map_err(|_| Error::invalid(op, "too many GPUs"))?;
    let mut a = kfd_ioctl_map_memory_to_gpu_args {
        handle,
        device_ids_array_ptr: gpu_ids.as_ptr() as u64,
        n_devices: n,
        n_success: 0,
    };
    let r = if map {
        session.ioctl::<MapMemoryToGpu>(&mut a)
    } else {
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle,
            device_ids_array_ptr: a.device_ids_array_ptr,
            n_devices: n,
            n_success: 0,
        };
        let r = session.ioctl::<UnmapMemoryFromGpu>(&mut u);
        a.n_success = u.n_success;
        r
    };
    r.map_err(|e| {
        let failed = gpu_ids.get(a.n_success as usize).copied().unwrap_or(0);
        Error::ioctl(
            op,
            e,
            format_args!(
                "buffer {handle:#x} on gpu {failed:#x} ({} of {n} done)",
                a.n_success
            ),
        )
    })?;
    Ok(())
}

/// `FREE_MEMORY_OF_GPU`.
pub(crate) fn free_raw(session: &Session, handle: u64) -> Result<()> {
    let mut f = kfd_ioctl_free_memory_of_gpu_args { handle };
    session
        .ioctl::<FreeMemoryOfGpu>(&mut f)
        .map_err(|e| Error::ioctl("FREE_MEMORY_OF_GPU", e, format_args!("buffer {handle:#x}")))?;
    Ok(())
}

/// A buffer of GPU memory, CPU-mapped at its GPU address where its kind allows. Dropping it
/// unmaps it from every GPU, frees it and unmaps the CPU range.
///
/// CPU accesses are bounds-checked copies and atomics ([`Memory::read`], [`Memory::write`],
/// [`Memory::atomic_u64`] …): the GPU writes this memory concurrently, so no Rust slice of it is
/// ever handed out.
pub struct Memory {
    session: Arc<Session>,
    kind: MemoryKind,
    buf: RawBuffer,
    mapped_on: Mutex<Vec<u32>>,
    /// On drop, keep the buffer in its GPU's [`BufferPool`] instead of freeing it.
    recycle: bool,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("kind", &self.kind)
            .field("gpu_va", &format_args!("{:#x}", self.gpu_va()))
            .field("size", &format_args!("{:#x}", self.size()))
            .field("handle", &format_args!("{:#x}", self.handle()))
            .finish()
    }
}

impl Memory {
    /// Allocates on `gpu` as `options` say.
    pub(crate) fn allocate(gpu: &Gpu, options: &AllocOptions) -> Result<Memory> {
        let session = &gpu.session;
        let targets: Vec<Gpu> = match &options.map_to {
            Some(list) => list.clone(),
            None => vec![gpu.clone()],
        };
        if let Some(other) = targets.iter().find(|g| !Arc::ptr_eq(&g.session, session)) {
            return Err(Error::invalid(
                "MAP_MEMORY_TO_GPU",
                format!("gpu {:#x} belongs to another process", other.id()),
            ));
        }
        let buf = alloc_raw(
            session,
            gpu.index,
            options.kind,
            options.size,
            options.raw_flags(),
            options.cpu_access,
        )?;
        let memory = Memory {
            session: session.clone(),
            kind: options.kind,
            buf,
            mapped_on: Mutex::new(Vec::new()),
            recycle: false,
        };
        let ids: Vec<u32> = targets.iter().map(Gpu::id).collect();
        memory.map_to_ids(&ids)?;
        Ok(memory)
    }

    /// A buffer as [`Memory::allocate`] would make it, taken from `gpu`'s [`BufferPool`] when
    /// one that matches `options` exactly (kind, page-rounded size, flags, mapped on `gpu`
    /// only) is there, and zeroed; otherwise a new one. Only for CPU-mapped GTT buffers.
    pub(crate) fn reuse_or_allocate(gpu: &Gpu, options: &AllocOptions) -> Result<Memory> {
        let poolable = options.kind == MemoryKind::Gtt && options.cpu_access && options.writable;
        let size = align_up(options.size, PAGE_SIZE);
        let (true, None, Some(size), Some(state)) = (
            poolable,
            &options.map_to,
            size,
            gpu.session.gpus.get(gpu.index),
        ) else {
            return Memory::allocate(gpu, options);
        };
        let taken =
            lock(&state.buffer_pool).take(options.kind, size, options.raw_flags(), state.gpu_id);
        let Some(entry) = taken else {
            return Memory::allocate(gpu, options);
        };
        let memory = Memory {
            session: gpu.session.clone(),
            kind: entry.kind,
            buf: entry.buf,
            mapped_on: Mutex::new(entry.mapped_on),
            recycle: false,
        };
        // A new owner sees what a new buffer has: zeros (the driver clears fresh GTT pages).
        memory.fill(0, size, 0)?;
        log::debug!(target: "thunk::memory", "reused {:?} buffer {:#x} ({size:#x} bytes) from the pool", memory.kind, memory.buf.handle);
        Ok(memory)
    }

    /// On drop, put the buffer in its GPU's pool (if it has room) instead of freeing it: for
    /// buffers nothing refers to any more, such as the ring of a destroyed queue.
    pub(crate) fn recycle_on_drop(&mut self) {
        self.recycle = true;
    }

    fn map_to_ids(&self, ids: &[u32]) -> Result<()> {
        let mut mapped = lock(&self.mapped_on);
        let new: Vec<u32> =
            ids.iter()
                .copied()
                .filter(|id| !mapped.contains(id))
                .fold(Vec::new(), |mut v, id| {
                    if !v.contains(&id) {
                        v.push(id);
                    }
                    v
                });
        map_raw(&self.session, self.buf.handle, &new, true)?;
        mapped.extend(new);
        Ok(())
    }

    /// Maps the buffer on more GPUs (already mapped ones are skipped).
    pub fn map_to(&self, gpus: &[&Gpu]) -> Result<()> {
        if let Some(other) = gpus
            .iter()
            .find(|g| !Arc::ptr_eq(&g.session, &self.session))
        {
            return Err(Error::invalid(
                "MAP_MEMORY_TO_GPU",
                format!("gpu {:#x} belongs to another process", other.id()),
            ));
        }
        let ids: Vec<u32> = gpus.iter().map(|g| g.id()).collect();
        self.map_to_ids(&ids)
    }

    /// Unmaps the buffer from these GPUs (ones it is not mapped on are skipped).
    pub fn unmap_from(&self, gpus: &[&Gpu]) -> Result<()> {
        let mut mapped = lock(&self.mapped_on);
        let ids: Vec<u32> = gpus
            .iter()
            .filter(|g| Arc::ptr_eq(&g.session, &self.session))
            .map(|g| g.id())
            .filter(|id| mapped.contains(id))
            .collect();
        map_raw(&self.session, self.buf.handle, &ids, false)?;
        mapped.retain(|id| !ids.contains(id));
        Ok(())
    }

    /// The GPUs (by `gpu_id`) the buffer is mapped on.
    pub fn mapped_on(&self) -> Vec<u32> {
        lock(&self.mapped_on).clone()
    }

    /// The kind.
    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// The address: the same for the GPU and the CPU.
    pub fn gpu_va(&self) -> u64 {
        self.buf.range.addr()
    }

    /// The GPU address of byte `offset` (no bounds check: a GPU may address past the end, and
    /// fault).
    pub fn gpu_addr(&self, offset: u64) -> u64 {
        self.gpu_va().wrapping_add(offset)
    }

    /// Size in bytes (whole pages).
    pub fn size(&self) -> u64 {
        self.buf.range.len()
    }

    /// The driver's handle (`gpu_id << 32 | idr`).
    pub fn handle(&self) -> u64 {
        self.buf.handle
    }

    /// The GPU the buffer was allocated on.
    pub fn owner_gpu_id(&self) -> u32 {
        self.buf.gpu_id
    }

    /// The `KFD_IOC_ALLOC_MEM_FLAGS_*` it was allocated with.
    pub fn flags(&self) -> u32 {
        self.buf.flags
    }

    /// How the CPU may access it.
    pub fn cpu_access(&self) -> Access {
        self.buf.range.access()
    }

    /// The CPU address (the same as [`Memory::gpu_va`]) for code that must hand a raw pointer
    /// to something else; dereferencing it is the caller's responsibility.
    pub fn as_ptr(&self) -> *mut u8 {
        self.buf.range.as_ptr().as_ptr().cast()
    }

    /// Copies `buf.len()` bytes from `offset`.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.buf.range.read(offset, buf)
    }

    /// The bytes `[offset, offset + len)`.
    pub fn read_vec(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut v = vec![0u8; len];
        self.read(offset, &mut v)?;
        Ok(v)
    }

    /// `count` dwords from `offset` (a multiple of 4).
    pub fn read_dwords(&self, offset: u64, count: usize) -> Result<Vec<u32>> {
        let bytes = self.read_vec(
            offset,
            count
                .checked_mul(4)
                .ok_or_else(|| Error::invalid("read", format!("{count} dwords is too many")))?,
        )?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// Copies `data` to `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.buf.range.write(offset, data)
    }

    /// Copies dwords to `offset` (a multiple of 4).
    #[inline]
    pub fn write_dwords(&self, offset: u64, data: &[u32]) -> Result<()> {
        self.buf.range.write_dwords(offset, data)?;
        std::sync::atomic::fence(Ordering::Release);
        Ok(())
    }

    /// Sets `len` bytes from `offset` to `byte`.
    pub fn fill(&self, offset: u64, len: u64, byte: u8) -> Result<()> {
        self.buf.range.fill(offset, len, byte)
    }

    /// The 32-bit word at `offset` (4-byte aligned) as an atomic.
    #[inline]
    pub fn atomic_u32(&self, offset: u64) -> Result<&AtomicU32> {
        self.buf.range.atomic_u32(offset)
    }

    /// The 64-bit word at `offset` (8-byte aligned) as an atomic.
    #[inline]
    pub fn atomic_u64(&self, offset: u64) -> Result<&AtomicU64> {
        self.buf.range.atomic_u64(offset)
    }

    /// Loads the 32-bit word at `offset` (acquire).
    #[inline]
    pub fn load_u32(&self, offset: u64) -> Result<u32> {
        Ok(self.atomic_u32(offset)?.load(Ordering::Acquire))
    }

    /// Loads the 64-bit word at `offset` (acquire).
    #[inline]
    pub fn load_u64(&self, offset: u64) -> Result<u64> {
        Ok(self.atomic_u64(offset)?.load(Ordering::Acquire))
    }

    /// Stores the 32-bit word at `offset` (release).
    #[inline]
    pub fn store_u32(&self, offset: u64, value: u32) -> Result<()> {
        self.atomic_u32(offset)?.store(value, Ordering::Release);
        Ok(())
    }

    /// Stores the 64-bit word at `offset` (release).
    pub fn store_u64(&self, offset: u64, value: u64) -> Result<()> {
        self.atomic_u64(offset)?.store(value, Ordering::Release);
        Ok(())
    }

    /// Waits until the 32-bit word at `offset` equals `value` (a fence the GPU writes).
    pub fn wait_u32(&self, offset: u64, value: u32, timeout: Duration) -> Result<()> {
        let word = self.atomic_u32(offset)?;
        if poll_until(timeout, || word.load(Ordering::Acquire) == value) {
            Ok(())
        } else {
            Err(Error::timeout(
                "wait",
                format!(
                    "the dword at {:#x} is {:#x}, not {value:#x}, after {timeout:?}",
                    self.gpu_addr(offset),
                    word.load(Ordering::Acquire)
                ),
            ))
        }
    }

    /// Waits until the 64-bit word at `offset` equals `value`.
    pub fn wait_u64(&self, offset: u64, value: u64, timeout: Duration) -> Result<()> {
        let word = self.atomic_u64(offset)?;
        if poll_until(timeout, || word.load(Ordering::Acquire) == value) {
            Ok(())
        } else {
            Err(Error::timeout(
                "wait",
                format!(
                    "the qword at {:#x} is {:#x}, not {value:#x}, after {timeout:?}",
                    self.gpu_addr(offset),
                    word.load(Ordering::Acquire)
                ),
            ))
        }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        let mapped = std::mem::take(&mut *lock(&self.mapped_on));
        let pool = self
            .session
            .gpus
            .iter()
            .find(|g| g.gpu_id == self.buf.gpu_id)
            .map(|g| &g.buffer_pool);
        let mapped = match (self.recycle, pool) {
            (true, Some(pool)) => {
                let entry = PooledBuffer {
                    kind: self.kind,
                    buf: std::mem::replace(&mut self.buf, RawBuffer::empty()),
                    mapped_on: mapped,
                };
                match lock(pool).put(entry) {
                    // What is left in `self` owns nothing.
                    Ok(()) => return,
                    Err(back) => {
                        self.buf = back.buf;
                        back.mapped_on
                    }
                }
            }
            _ => mapped,
        };
        if let Err(e) = map_raw(&self.session, self.buf.handle, &mapped, false) {
            log::warn!(target: "thunk::memory", "drop: {e}");
        }
        if let Err(e) = free_raw(&self.session, self.buf.handle) {
            log::warn!(target: "thunk::memory", "drop: {e}");
        }
        log::debug!(target: "thunk::memory", "freed {:?} buffer {:#x}", self.kind, self.buf.handle);
        // The CPU range is unmapped when `buf.range` drops, after this.
    }
}

impl Gpu {
    /// How many buffers of destroyed queues (rings, pointer pages) this GPU keeps for the next
    /// queues it creates (at most [`Gpu::QUEUE_BUFFER_POOL_MAX`]).
    pub fn pooled_queue_buffers(&self) -> usize {
        self.session
            .gpus
            .get(self.index)
            .map_or(0, |g| lock(&g.buffer_pool).len())
    }

    /// The most buffers of destroyed queues one GPU keeps (and at most 1 MiB of them).
    pub const QUEUE_BUFFER_POOL_MAX: usize = crate::pool::MAX_BUFFERS;

    /// Frees the buffers of destroyed queues kept for reuse now, rather than when the process
    /// closes the device.
    pub fn release_pooled_queue_buffers(&self) {
        let Some(state) = self.session.gpus.get(self.index) else {
            return;
        };
        let entries = lock(&state.buffer_pool).drain();
        for entry in entries {
            entry.buf.free(&self.session, &entry.mapped_on);
        }
    }

    /// Allocates `size` bytes of `kind` with the default options (GPU-writable, CPU-mapped,
    /// mapped on this GPU).
    pub fn alloc(&self, kind: MemoryKind, size: u64) -> Result<Memory> {
        Memory::allocate(self, &AllocOptions::new(kind, size))
    }

    /// Allocates on this GPU as `options` say.
    pub fn alloc_with(&self, options: &AllocOptions) -> Result<Memory> {
        Memory::allocate(self, options)
    }
}
