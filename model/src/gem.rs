//! `amdgpu_gem`: the buffer objects a render-node file creates (`DRM_IOCTL_AMDGPU_GEM_*`),
//! their CPU-map offsets, the file's own GPU VA mappings (`GEM_VA`), export as a dma-buf
//! (`DRM_IOCTL_PRIME_HANDLE_TO_FD`), the user-mode metadata a buffer carries
//! (`DRM_IOCTL_AMDGPU_GEM_METADATA`: tiling word, flags and up to 256 bytes that KFD's
//! `GET_DMABUF_INFO` hands an importer), how it was created (`DRM_IOCTL_AMDGPU_GEM_OP`) and
//! what KFD needs to import such a buffer (`AMDKFD_IOC_GET_DMABUF_INFO` /
//! `AMDKFD_IOC_IMPORT_DMABUF`).
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
use kfd_sys::drm::*;
use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, Weak};

/// The `AMDGPU_GEM_CREATE_*` bits the model accepts (bits 0–11 of `amdgpu_drm.h`); the
/// placement hints among them change nothing in the model.
pub const AMDGPU_GEM_CREATE_KNOWN: u64 = (1 << 12) - 1;

/// Most bytes of user-mode metadata a buffer carries (`drm_amdgpu_gem_metadata.data.data`).
pub const AMDGPU_GEM_METADATA_MAX_SIZE: usize = 256;

/// The domains `SET_PLACEMENT` keeps of the ones it is given (the memory a buffer can move
/// between; GDS, GWS and OA are not places a buffer moves to).
pub const AMDGPU_GEM_PLACEMENT_DOMAINS: u64 =
    AMDGPU_GEM_DOMAIN_VRAM | AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_CPU;

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
    /// `AMDGPU_GEM_CREATE_*` flags.
    pub flags: u64,
    /// Physical alignment in bytes (the one asked for, rounded up to pages; 0 for none).
    pub alignment: u64,
    placement: Mutex<Placement>,
    metadata: Mutex<BoMetadata>,
}

/// Where a buffer may live (`amdgpu_bo`'s `preferred_domains` and `allowed_domains`): the
/// domains it was created with until `GEM_OP(SET_PLACEMENT)` changes them. The model never
/// moves a buffer's bytes; the domains are what the kernel reports and decides by (KFD's
/// `GET_DMABUF_INFO`, `GET_GEM_CREATE_INFO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// `AMDGPU_GEM_DOMAIN_*` the buffer is placed in when it can be.
    pub preferred_domains: u64,
    /// `AMDGPU_GEM_DOMAIN_*` it may be placed in.
    pub allowed_domains: u64,
}

impl Placement {
    /// The placement `SET_PLACEMENT` gives for `value`: the placement domains of it, and a
    /// buffer that prefers VRAM alone may still go to GTT when VRAM is short.
    pub fn requested(value: u64) -> Placement {
        let preferred_domains = value & AMDGPU_GEM_PLACEMENT_DOMAINS;
        let allowed_domains = if preferred_domains == AMDGPU_GEM_DOMAIN_VRAM {
            preferred_domains | AMDGPU_GEM_DOMAIN_GTT
        } else {
            preferred_domains
        };
        Placement {
            preferred_domains,
            allowed_domains,
        }
    }
}

/// What `GEM_METADATA` sets on a buffer for other users of it (a display server, an
/// importing process): `amdgpu_bo`'s tiling flags, metadata flags and metadata bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoMetadata {
    /// Metadata flags (none are defined; kept as given).
    pub flags: u64,
    /// The family-specific tiling word.
    pub tiling_info: u64,
    /// The user-mode metadata, at most [`AMDGPU_GEM_METADATA_MAX_SIZE`] bytes.
    pub data: Vec<u8>,
}

/// `GEM_OP(GET_GEM_CREATE_INFO)`: how a buffer was created, as `drm_amdgpu_gem_create_in`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemCreateInfo {
    /// Bytes (page aligned).
    pub bo_size: u64,
    /// Physical alignment in bytes.
    pub alignment: u64,
    /// Preferred `AMDGPU_GEM_DOMAIN_*`.
    pub domains: u64,
    /// `AMDGPU_GEM_CREATE_*`.
    pub domain_flags: u64,
}

impl GemObject {
    /// Its preferred and allowed domains now.
    pub fn placement(&self) -> Placement {
        *self.placement.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Its metadata now (`amdgpu_bo_get_metadata` and the tiling flags).
    pub fn metadata(&self) -> BoMetadata {
        self.metadata
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
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

impl GemObject {
    /// Whether the buffer is a VRAM buffer that prefers VRAM now (what a submission moves
    /// into VRAM).
    pub fn prefers_vram(&self) -> bool {
        self.bo.kind == BoKind::Vram
            && self
                .placement
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .preferred_domains
                & AMDGPU_GEM_DOMAIN_VRAM
                != 0
    }
}

impl GemFile {
    /// `amdgpu_gem_create_ioctl`: a buffer of `size` bytes in `domains`, aligned to
    /// `alignment` bytes; returns its handle.
    pub fn create(
        &mut self,
        node: &Arc<KfdNode>,
        size: u64,
        alignment: u64,
        domains: u64,
        flags: u64,
    ) -> KResult<u32> {
        if flags & !AMDGPU_GEM_CREATE_KNOWN != 0 || domains & !AMDGPU_GEM_DOMAIN_MASK != 0 {
            return Err(Errno::EINVAL);
        }
        // GDS, GWS and OA are on-chip resources the model does not have.
        if domains & (AMDGPU_GEM_DOMAIN_GDS | AMDGPU_GEM_DOMAIN_GWS | AMDGPU_GEM_DOMAIN_OA) != 0 {
            log::debug!(target: crate::layer::GEM, "GEM_CREATE: GDS/GWS/OA domains are not modelled");
            return Err(Errno::EINVAL);
        }
        let kind = if domains & AMDGPU_GEM_DOMAIN_VRAM != 0 {
            BoKind::Vram
        } else {
            // GTT and CPU domains (and none: the kernel then places it in system memory).
            BoKind::Gtt
        };
        let size = page_align(size).filter(|&s| s > 0).ok_or(Errno::EINVAL)?;
        // TTM keeps the alignment in pages.
        let alignment = page_align(alignment).ok_or(Errno::EINVAL)?;
        let handle = self.next_free_handle()?;
        let bo = Arc::new(crate::memory::alloc_graphics_bo(node, kind, size)?);
        crate::memory::publish_graphics_bo(&bo);
        let object = GemObject {
            bo,
            flags,
            alignment,
            // amdgpu_bo_create: the domains asked for, with GTT allowed for VRAM alone (the
            // checks above leave only VRAM, GTT and CPU bits).
            placement: Mutex::new(Placement::requested(domains)),
            metadata: Mutex::new(BoMetadata::default()),
        };
        self.objects.insert(handle, Arc::new(object));
        log::debug!(target: crate::layer::GEM, "GEM_CREATE {kind:?} size {size:#x} domains {domains:#x} flags {flags:#x} = handle {handle}");
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

    /// `amdgpu_gem_metadata_ioctl(SET_METADATA)`: replaces the buffer's metadata; more than
    /// [`AMDGPU_GEM_METADATA_MAX_SIZE`] bytes is `EINVAL`, no bytes clears them.
    pub fn set_metadata(&self, handle: u32, metadata: BoMetadata) -> KResult<()> {
        let obj = self.object(handle)?;
        if metadata.data.len() > AMDGPU_GEM_METADATA_MAX_SIZE {
            return Err(Errno::EINVAL);
        }
        log::debug!(target: crate::layer::GEM, "GEM_METADATA set handle {handle}: {} bytes, tiling {:#x}, flags {:#x}", metadata.data.len(), metadata.tiling_info, metadata.flags);
        *obj.metadata.lock().unwrap_or_else(|e| e.into_inner()) = metadata;
        Ok(())
    }

    /// `amdgpu_gem_metadata_ioctl(GET_METADATA)`.
    pub fn metadata(&self, handle: u32) -> KResult<BoMetadata> {
        Ok(self.object(handle)?.metadata())
    }

    /// `amdgpu_gem_op_ioctl(GET_GEM_CREATE_INFO)`.
    pub fn create_info(&self, handle: u32) -> KResult<GemCreateInfo> {
        let obj = self.object(handle)?;
        Ok(GemCreateInfo {
            bo_size: obj.bo.size,
            alignment: obj.alignment,
            domains: obj.placement().preferred_domains,
            domain_flags: obj.flags,
        })
    }

    /// `amdgpu_gem_op_ioctl(SET_PLACEMENT)`: the buffer's preferred domains become the
    /// VRAM, GTT and CPU bits of `value` (other bits are dropped, not refused); its allowed
    /// domains follow ([`Placement::requested`]). The kernel refuses this for a userptr
    /// buffer (`EPERM`), for an imported one asked into VRAM (`EINVAL`) and for one mapped by
    /// another GPU of its XGMI hive (`EINVAL`); the model's render node creates none of
    /// those (no userptr GEM objects, no `PRIME_FD_TO_HANDLE`, one GPU per file), so every
    /// buffer it holds takes the new placement. The bytes stay where they are: the model
    /// does not migrate buffers.
    pub fn set_placement(&self, handle: u32, value: u64) -> KResult<Placement> {
        let obj = self.object(handle)?;
        let placement = Placement::requested(value);
        *obj.placement.lock().unwrap_or_else(|e| e.into_inner()) = placement;
        log::debug!(target: crate::layer::GEM, "GEM_OP SET_PLACEMENT handle {handle}: {value:#x} = {placement:?}");
        Ok(placement)
    }

    /// `DRM_IOCTL_GEM_CLOSE`: drops the handle and the file's mappings of the buffer.
    pub fn close(&mut self, handle: u32) -> KResult<()> {
        let obj = self.objects.remove(&handle).ok_or(Errno::EINVAL)?;
        let gone = self.vm.unmap_handle(u64::from(handle));
        log::debug!(target: crate::layer::GEM, "GEM_CLOSE handle {handle} ({gone} VA mapping(s) with it, {} bytes)", obj.bo.size);
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
            log::debug!(target: crate::layer::GEM, "GEM_VA: PRT mappings are not modelled");
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
        log::debug!(target: crate::layer::GEM, "GEM_VA op {} handle {} va {:#x}+{:#x} bo offset {:#x}", r.operation, r.handle, r.va_address, r.map_size, r.offset_in_bo);
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
        log::debug!(target: crate::layer::GEM, "PRIME_HANDLE_TO_FD handle {handle} = fd {fd}");
        Ok(fd)
    }
}
