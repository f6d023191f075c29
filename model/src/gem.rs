//! `amdgpu_gem`: the buffer objects a render-node file creates (`DRM_IOCTL_AMDGPU_GEM_*`),
//! their CPU-map offsets, the file's own GPU VA mappings (`GEM_VA`), export as a dma-buf
//! (`DRM_IOCTL_PRIME_HANDLE_TO_FD`) and what KFD needs to import such a buffer
//! (`AMDKFD_IOC_GET_DMABUF_INFO` / `AMDKFD_IOC_IMPORT_DMABUF`).
//!
//! A GEM object is a [`Bo`] of VRAM or GTT, backed like a KFD buffer (a lazily backed `memfd`),
//! so the render node's `mmap` at its offset reaches it as it reaches KFD buffers. Its dma-buf
//! is a duplicate of that `memfd`: mapping the dma-buf maps the buffer, and the model knows
//! the buffer again from the file's inode when KFD is handed the descriptor.

use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::file::FileIdentity;
use crate::hw::mem::page_align;
use crate::hw::vm::{GpuVm, VmMapping};
use crate::memory::{Bo, BoKind};
use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, Weak};

/// `AMDGPU_GEM_DOMAIN_CPU`.
pub const AMDGPU_GEM_DOMAIN_CPU: u64 = 0x1;
/// `AMDGPU_GEM_DOMAIN_GTT`.
pub const AMDGPU_GEM_DOMAIN_GTT: u64 = 0x2;
/// `AMDGPU_GEM_DOMAIN_VRAM`.
pub const AMDGPU_GEM_DOMAIN_VRAM: u64 = 0x4;
/// `AMDGPU_GEM_DOMAIN_GDS`.
pub const AMDGPU_GEM_DOMAIN_GDS: u64 = 0x8;
/// `AMDGPU_GEM_DOMAIN_GWS`.
pub const AMDGPU_GEM_DOMAIN_GWS: u64 = 0x10;
/// `AMDGPU_GEM_DOMAIN_OA`.
pub const AMDGPU_GEM_DOMAIN_OA: u64 = 0x20;
/// `AMDGPU_GEM_DOMAIN_MASK`.
pub const AMDGPU_GEM_DOMAIN_MASK: u64 = 0x3F;

/// `AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED`.
pub const AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED: u64 = 1 << 0;
/// The `AMDGPU_GEM_CREATE_*` bits the model accepts (bits 0–11 of `amdgpu_drm.h`); the
/// placement hints among them change nothing in the model.
pub const AMDGPU_GEM_CREATE_KNOWN: u64 = (1 << 12) - 1;

/// `AMDGPU_VA_OP_MAP`.
pub const AMDGPU_VA_OP_MAP: u32 = 1;
/// `AMDGPU_VA_OP_UNMAP`.
pub const AMDGPU_VA_OP_UNMAP: u32 = 2;
/// `AMDGPU_VA_OP_CLEAR`.
pub const AMDGPU_VA_OP_CLEAR: u32 = 3;
/// `AMDGPU_VA_OP_REPLACE`.
pub const AMDGPU_VA_OP_REPLACE: u32 = 4;
/// `AMDGPU_VM_PAGE_WRITEABLE`.
pub const AMDGPU_VM_PAGE_WRITEABLE: u32 = 1 << 2;
/// `AMDGPU_VM_PAGE_PRT` (partially resident textures: not modelled).
pub const AMDGPU_VM_PAGE_PRT: u32 = 1 << 4;

/// Lowest VA a `GEM_VA` mapping may use (`AMDGPU_VA_RESERVED_SIZE`, 1 MiB before Linux 6.10).
pub const AMDGPU_VA_RESERVED_SIZE: u64 = 1 << 20;
/// One past the highest VA of the low half of the 48-bit GPU address space.
pub const GPU_VA_LOW_END: u64 = 1 << 47;

/// Page size of GEM objects and mappings.
const GPU_PAGE: u64 = 4096;

/// A `GEM_VA` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemVaRequest {
    /// GEM handle (ignored by `CLEAR`).
    pub handle: u32,
    /// `AMDGPU_VA_OP_*`.
    pub operation: u32,
    /// `AMDGPU_VM_PAGE_*`.
    pub flags: u32,
    /// GPU VA.
    pub va_address: u64,
    /// Offset inside the buffer.
    pub offset_in_bo: u64,
    /// Bytes.
    pub map_size: u64,
}

/// The GEM objects and the GPU VM of one render-node file (`amdgpu_fpriv`).
#[derive(Debug, Default)]
pub struct GemFile {
    objects: BTreeMap<u32, Arc<GemObject>>,
    next_handle: u32,
    vm: GpuVm,
}

/// One GEM object (an `amdgpu_bo`): the buffer and how it was asked for. Handles and KFD
/// imports share it; it lives while either does.
#[derive(Debug)]
pub struct GemObject {
    /// The buffer.
    pub bo: Arc<Bo>,
    /// `AMDGPU_GEM_DOMAIN_*` it was created with.
    pub domains: u64,
    /// `AMDGPU_GEM_CREATE_*` flags.
    pub flags: u64,
}

/// Dma-bufs exported from GEM objects, by the identity of their open file: KFD finds the
/// object behind a descriptor it is given through this table. The model keeps an object
/// alive through its handles and imports, not through the dma-buf descriptor.
#[derive(Debug, Default)]
pub struct DmaBufTable {
    exported: Mutex<HashMap<FileIdentity, Weak<GemObject>>>,
}

impl DmaBufTable {
    /// The GEM object a dma-buf descriptor was exported from: `EBADF` for a descriptor that is
    /// not open, `EINVAL` for one that is not an amdgpu dma-buf (`dma_buf_get` and the
    /// `amdgpu_dmabuf_ops` check).
    pub fn lookup(&self, fd: RawFd) -> KResult<Arc<GemObject>> {
        let key = FileIdentity::of(fd)?;
        let mut map = self.exported.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, w| w.strong_count() > 0);
        map.get(&key).and_then(Weak::upgrade).ok_or(Errno::EINVAL)
    }

    fn register(&self, key: FileIdentity, object: &Arc<GemObject>) {
        let mut map = self.exported.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(key, Arc::downgrade(object));
    }
}

impl GemFile {
    /// `amdgpu_gem_create_ioctl`: a buffer of `size` bytes in `domains`; returns its handle.
    pub fn create(
        &mut self,
        node: &Arc<KfdNode>,
        size: u64,
        domains: u64,
        flags: u64,
    ) -> KResult<u32> {
        if flags & !AMDGPU_GEM_CREATE_KNOWN != 0 || domains & !AMDGPU_GEM_DOMAIN_MASK != 0 {
            return Err(Errno::EINVAL);
        }
        // GDS, GWS and OA are on-chip resources the model does not have.
        if domains & (AMDGPU_GEM_DOMAIN_GDS | AMDGPU_GEM_DOMAIN_GWS | AMDGPU_GEM_DOMAIN_OA) != 0 {
            log::debug!(target: "kfd::gem", "GEM_CREATE: GDS/GWS/OA domains are not modelled");
            return Err(Errno::EINVAL);
        }
        let kind = if domains & AMDGPU_GEM_DOMAIN_VRAM != 0 {
            BoKind::Vram
        } else {
            // GTT and CPU domains (and none: the kernel then places it in system memory).
            BoKind::Gtt
        };
        let size = page_align(size).filter(|&s| s > 0).ok_or(Errno::EINVAL)?;
        let handle = self.next_free_handle()?;
        let bo = Arc::new(crate::memory::alloc_graphics_bo(node, kind, size)?);
        crate::memory::publish_graphics_bo(&bo);
        self.objects
            .insert(handle, Arc::new(GemObject { bo, domains, flags }));
        log::debug!(target: "kfd::gem", "GEM_CREATE {kind:?} size {size:#x} domains {domains:#x} flags {flags:#x} = handle {handle}");
        Ok(handle)
    }

    fn next_free_handle(&mut self) -> KResult<u32> {
        // Handles start at 1 (idr_alloc with start 1) and are reused once closed.
        let mut h = self.next_handle.max(1);
        for _ in 0..=self.objects.len() {
            if !self.objects.contains_key(&h) {
                self.next_handle = h.checked_add(1).unwrap_or(1);
                return Ok(h);
            }
            h = h.checked_add(1).unwrap_or(1);
        }
        Err(Errno::ENOSPC)
    }

    /// The object behind `handle` (`ENOENT` when there is none, as `drm_gem_object_lookup`).
    pub fn object(&self, handle: u32) -> KResult<&Arc<GemObject>> {
        self.objects.get(&handle).ok_or(Errno::ENOENT)
    }

    /// `amdgpu_gem_mmap_ioctl`: the offset to `mmap` the render node at for CPU access.
    pub fn mmap_offset(&self, handle: u32) -> KResult<u64> {
        Ok(self.object(handle)?.bo.mmap_offset)
    }

    /// `DRM_IOCTL_GEM_CLOSE`: drops the handle and the file's mappings of the buffer.
    pub fn close(&mut self, handle: u32) -> KResult<()> {
        let obj = self.objects.remove(&handle).ok_or(Errno::EINVAL)?;
        let gone = self.vm.unmap_handle(u64::from(handle));
        log::debug!(target: "kfd::gem", "GEM_CLOSE handle {handle} ({gone} VA mapping(s) with it, {} bytes)", obj.bo.size);
        Ok(())
    }

    /// `amdgpu_gem_va_ioctl`: maps, unmaps or clears ranges of this file's GPU VM.
    pub fn va(&mut self, r: GemVaRequest) -> KResult<()> {
        let aligned = |v: u64| v % GPU_PAGE == 0;
        if r.va_address < AMDGPU_VA_RESERVED_SIZE && r.operation != AMDGPU_VA_OP_CLEAR {
            return Err(Errno::EINVAL);
        }
        let end = r.va_address.checked_add(r.map_size).ok_or(Errno::EINVAL)?;
        if !aligned(r.va_address) || !aligned(r.offset_in_bo) || !aligned(r.map_size) {
            return Err(Errno::EINVAL);
        }
        if end > GPU_VA_LOW_END {
            return Err(Errno::EINVAL);
        }
        if r.flags & AMDGPU_VM_PAGE_PRT != 0 {
            log::debug!(target: "kfd::gem", "GEM_VA: PRT mappings are not modelled");
            return Err(Errno::EINVAL);
        }
        match r.operation {
            AMDGPU_VA_OP_MAP | AMDGPU_VA_OP_REPLACE => {
                let obj = self.object(r.handle)?;
                let in_bo = r
                    .offset_in_bo
                    .checked_add(r.map_size)
                    .is_some_and(|e| e <= obj.bo.size);
                if r.map_size == 0 || !in_bo {
                    return Err(Errno::EINVAL);
                }
                let (mem, base) = obj.bo.device_memory().ok_or(Errno::EINVAL)?;
                let mapping = VmMapping {
                    va: r.va_address,
                    len: r.map_size,
                    backing: crate::hw::vm::Backing::Device {
                        mem,
                        offset: base + r.offset_in_bo as usize,
                    },
                    writable: r.flags & AMDGPU_VM_PAGE_WRITEABLE != 0,
                    handle: u64::from(r.handle),
                };
                if r.operation == AMDGPU_VA_OP_REPLACE {
                    self.clear(r.va_address, end);
                }
                if !self.vm.map(mapping) {
                    return Err(Errno::EINVAL);
                }
            }
            AMDGPU_VA_OP_UNMAP => {
                self.object(r.handle)?;
                let exact = self
                    .vm
                    .lookup(r.va_address)
                    .is_some_and(|m| m.va == r.va_address && m.handle == u64::from(r.handle));
                if !exact {
                    return Err(Errno::ENOENT);
                }
                self.vm.unmap(r.va_address);
            }
            AMDGPU_VA_OP_CLEAR => self.clear(r.va_address, end),
            _ => return Err(Errno::EINVAL),
        }
        log::debug!(target: "kfd::gem", "GEM_VA op {} handle {} va {:#x}+{:#x} bo offset {:#x}", r.operation, r.handle, r.va_address, r.map_size, r.offset_in_bo);
        Ok(())
    }

    /// Removes every mapping that starts inside `[va, end)` (the model keeps mappings whole).
    fn clear(&mut self, va: u64, end: u64) {
        let starts: Vec<u64> = self
            .vm
            .mappings()
            .filter(|m| m.va < end && m.va + m.len > va)
            .map(|m| m.va)
            .collect();
        for s in starts {
            self.vm.unmap(s);
        }
    }

    /// (handle, size) of every object, in handle order.
    pub fn handles(&self) -> Vec<(u32, u64)> {
        self.objects.iter().map(|(&h, o)| (h, o.bo.size)).collect()
    }

    /// The file's GPU VM (its `GEM_VA` mappings).
    pub fn vm(&self) -> &GpuVm {
        &self.vm
    }

    /// `DRM_IOCTL_PRIME_HANDLE_TO_FD`: a new descriptor of the buffer as a dma-buf
    /// (`O_CLOEXEC` when `cloexec`), registered in `table` so that KFD can import it.
    pub fn export(&self, table: &DmaBufTable, handle: u32, cloexec: bool) -> KResult<RawFd> {
        let obj = self.object(handle)?;
        let (mem, _) = obj.bo.device_memory().ok_or(Errno::EINVAL)?;
        let cmd = if cloexec {
            nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(0)
        } else {
            nix::fcntl::FcntlArg::F_DUPFD(0)
        };
        let fd = nix::fcntl::fcntl(mem.fd().as_raw_fd(), cmd).map_err(crate::errno::from_nix)?;
        match FileIdentity::of(fd) {
            Ok(key) => table.register(key, obj),
            Err(e) => {
                let _ = nix::unistd::close(fd);
                return Err(e);
            }
        }
        log::debug!(target: "kfd::gem", "PRIME_HANDLE_TO_FD handle {handle} = fd {fd}");
        Ok(fd)
    }
}
