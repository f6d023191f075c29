//! Buffers of a process (the counterpart of `amdgpu_amdkfd_gpuvm`): allocation of VRAM, GTT,
//! USERPTR, doorbell and MMIO-remap buffers, their handles and mmap offsets, and mapping them
//! into the GPU VMs of one or more GPUs.

use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::hw::doorbell::DoorbellBar;
use crate::hw::mem::{page_align, DeviceMemory, PAGE_SIZE};
use crate::hw::vm::{Backing, UserMemory, VmMapping};
use crate::user::is_user_range_mapped_rw;
use kfd_sys::*;
use std::sync::Arc;

/// What kind of memory a buffer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoKind {
    /// Device-local memory.
    Vram,
    /// System memory through the GART.
    Gtt,
    /// Registered user memory.
    Userptr,
    /// The process doorbell slice.
    Doorbell,
    /// The MMIO remap page.
    MmioRemap,
}

impl BoKind {
    /// The kind named by exactly one type bit of `flags`.
    pub fn from_flags(flags: u32) -> KResult<BoKind> {
        const TYPES: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM
            | KFD_IOC_ALLOC_MEM_FLAGS_GTT
            | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
            | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
            | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP;
        match flags & TYPES {
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM => Ok(BoKind::Vram),
            KFD_IOC_ALLOC_MEM_FLAGS_GTT => Ok(BoKind::Gtt),
            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR => Ok(BoKind::Userptr),
            KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL => Ok(BoKind::Doorbell),
            KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP => Ok(BoKind::MmioRemap),
            _ => Err(Errno::EINVAL),
        }
    }
}

/// A buffer object.
#[derive(Debug)]
pub struct Bo {
    /// `(gpu_id << 32) | idr`.
    pub handle: u64,
    /// The GPU it was allocated on.
    pub node: Arc<KfdNode>,
    /// GPU VA on every GPU it is mapped to.
    pub va: u64,
    /// Bytes (page aligned).
    pub size: u64,
    /// `KFD_IOC_ALLOC_MEM_FLAGS_*`.
    pub flags: u32,
    /// Kind.
    pub kind: BoKind,
    /// What backs it.
    pub backing: Backing,
    /// The `mmap_offset` returned by ALLOC (render-node offset, or a KFD mmap offset for
    /// doorbell and MMIO buffers, or the user address for USERPTR).
    pub mmap_offset: u64,
}

impl Bo {
    /// The mapping this buffer makes in a GPU VM.
    pub fn vm_mapping(&self) -> VmMapping {
        VmMapping {
            va: self.va,
            len: self.size,
            backing: self.backing.clone(),
            writable: self.flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE != 0
                || self.kind == BoKind::Doorbell,
            handle: self.handle,
        }
    }

    /// The device memory and offset behind the buffer, for CPU mappings and the event page.
    pub fn device_memory(&self) -> Option<(Arc<DeviceMemory>, usize)> {
        match &self.backing {
            Backing::Device { mem, offset } => Some((mem.clone(), *offset)),
            Backing::User(_) => None,
        }
    }
}

impl Drop for Bo {
    fn drop(&mut self) {
        if self.kind == BoKind::Vram {
            self.node.release_vram(self.size);
        }
        if matches!(self.kind, BoKind::Vram | BoKind::Gtt) {
            self.node
                .bo_offsets
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&self.mmap_offset);
        }
    }
}

/// What `ALLOC_MEMORY_OF_GPU` asks for.
#[derive(Debug, Clone, Copy)]
pub struct AllocRequest {
    /// GPU VA.
    pub va: u64,
    /// Size in bytes.
    pub size: u64,
    /// Flags.
    pub flags: u32,
    /// For USERPTR, the CPU address.
    pub user_addr: u64,
}

/// Allocates a buffer on `node` for a process whose doorbell slice is `doorbell_slice`.
pub fn alloc_bo(
    node: &Arc<KfdNode>,
    handle: u64,
    req: AllocRequest,
    doorbell_slice: Option<u32>,
) -> KResult<Arc<Bo>> {
    let kind = BoKind::from_flags(req.flags)?;
    if req.size == 0 {
        return Err(Errno::EINVAL);
    }
    let size = page_align(req.size).ok_or(Errno::EINVAL)?;
    req.va.checked_add(size).ok_or(Errno::EINVAL)?;
    let (backing, mmap_offset) = match kind {
        BoKind::Vram | BoKind::Gtt => {
            if kind == BoKind::Vram {
                node.reserve_vram(size)?;
            }
            let mem =
                match DeviceMemory::new(if kind == BoKind::Vram { "vram" } else { "gtt" }, size) {
                    Ok(m) => m,
                    Err(e) => {
                        if kind == BoKind::Vram {
                            node.release_vram(size);
                        }
                        return Err(e);
                    }
                };
            (
                Backing::Device {
                    mem: Arc::new(mem),
                    offset: 0,
                },
                node.new_bo_offset(size),
            )
        }
        BoKind::Userptr => {
            if req.user_addr % PAGE_SIZE as u64 != 0 {
                return Err(Errno::EINVAL);
            }
            if !is_user_range_mapped_rw(req.user_addr, size) {
                log::debug!(target: "kfd::memory", "userptr {:#x}+{size:#x} is not mapped read-write", req.user_addr);
                return Err(Errno::EFAULT);
            }
            (
                // SAFETY: the user address arrived in ALLOC's argument bytes, which the caller of
                // `Process::ioctl` promised are its memory for as long as the GPU maps them;
                // that it is mapped read-write was checked just above.
                Backing::User(unsafe { UserMemory::new(req.user_addr) }),
                req.user_addr,
            )
        }
        BoKind::Doorbell => {
            if size != KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15 {
                return Err(Errno::EINVAL);
            }
            let slice = doorbell_slice.ok_or(Errno::EINVAL)?;
            let mem = node.gpu.doorbells.memory().clone();
            let offset = KfdMmapOffset {
                kind: KfdMmapType::Doorbell,
                gpu_id: node.gpu_id,
                value: 0,
            }
            .encode();
            (
                Backing::Device {
                    mem,
                    offset: DoorbellBar::slice_offset(slice),
                },
                offset,
            )
        }
        BoKind::MmioRemap => {
            if size != PAGE_SIZE as u64 {
                return Err(Errno::EINVAL);
            }
            let offset = KfdMmapOffset {
                kind: KfdMmapType::Mmio,
                gpu_id: node.gpu_id,
                value: 0,
            }
            .encode();
            (
                Backing::Device {
                    mem: node.gpu.mmio.clone(),
                    offset: 0,
                },
                offset,
            )
        }
    };
    let bo = Arc::new(Bo {
        handle,
        node: node.clone(),
        va: req.va,
        size,
        flags: req.flags,
        kind,
        backing,
        mmap_offset,
    });
    if matches!(kind, BoKind::Vram | BoKind::Gtt) {
        node.bo_offsets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(mmap_offset, Arc::downgrade(&bo));
    }
    log::debug!(target: "kfd::memory", "alloc {kind:?} va {:#x} size {size:#x} handle {handle:#x}", req.va);
    Ok(bo)
}

/// The GPU id encoded in a buffer handle.
pub fn handle_gpu_id(handle: u64) -> u32 {
    (handle >> 32) as u32
}
