//! Buffers of a process (the counterpart of `amdgpu_amdkfd_gpuvm`): allocation of VRAM, GTT,
//! USERPTR, doorbell and MMIO-remap buffers, their handles and mmap offsets, and mapping them
//! into the GPU VMs of one or more GPUs.

// Unsafe here: USERPTR buffers hand client memory to the GPU VM (`UserMemory::new`).
#![allow(unsafe_code)]

use crate::config::KernelVersion;
use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::hw::doorbell::DoorbellBar;
use crate::hw::mem::{page_align, DeviceMemory, PAGE_SIZE};
use crate::hw::vm::{Backing, UserMemory, VmMapping};
use crate::user::is_user_range_mapped_rw;
use kfd_sys::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// `AMDGPU_RESERVE_MEM_LIMIT` (Linux 6.12): system memory kept back from KFD.
const RESERVE_MEM_LIMIT: u64 = 3 << 29;

/// `kfd_mem_limit`: how much system memory the KFD processes of the whole machine may hold
/// (one table for every GPU, as in the kernel). GTT buffers count against both the system and
/// the TTM limit, USERPTR buffers against the system limit only; going over either is
/// `ENOMEM` (`amdgpu_amdkfd_reserve_mem_limit`). Buffers are backed lazily, so the limit is
/// bookkeeping: nothing is touched when a large buffer is allocated.
#[derive(Debug)]
pub struct KfdMemLimit {
    /// `max_system_mem_limit`.
    pub max_system: u64,
    /// `max_ttm_mem_limit`.
    pub max_ttm: u64,
    /// `amdgpu.no_system_mem_limit`: `max_system` is not enforced.
    pub no_system_mem_limit: bool,
    used: Mutex<(u64, u64)>,
}

impl KfdMemLimit {
    /// The limits `amdgpu_amdkfd_gpuvm_init_mem_limits` derives from `system_memory` bytes.
    /// Linux 6.12: system = RAM − RAM/64 − 1.5 GiB (half of that below 3 GiB), TTM = the TTM
    /// page limit, half of RAM. Linux 6.1: system = 15/16 and TTM = 3/8 of the free RAM at
    /// module load, which the model takes to be all of it.
    pub fn new(system_memory: u64, kernel: KernelVersion) -> Self {
        let mem = system_memory;
        let (max_system, max_ttm) = match kernel {
            KernelVersion::Linux6_12 => {
                let system = mem - (mem >> 6);
                let system = if system < 2 * RESERVE_MEM_LIMIT {
                    system >> 1
                } else {
                    system - RESERVE_MEM_LIMIT
                };
                (system, (mem / PAGE_SIZE as u64 / 2) * PAGE_SIZE as u64)
            }
            KernelVersion::Linux6_1 => (mem - (mem >> 4), (mem >> 1) - (mem >> 3)),
        };
        KfdMemLimit {
            max_system,
            max_ttm,
            no_system_mem_limit: false,
            used: Mutex::new((0, 0)),
        }
    }

    /// The same with `amdgpu.no_system_mem_limit` set or cleared.
    pub fn with_no_system_mem_limit(mut self, on: bool) -> Self {
        self.no_system_mem_limit = on;
        self
    }

    /// The limits for the system memory a topology reports (the CPU nodes' memory banks).
    pub fn for_topology(topology: &crate::topology::Topology, kernel: KernelVersion) -> Self {
        let system = topology
            .nodes
            .iter()
            .filter(|n| !n.is_gpu())
            .flat_map(|n| &n.mem_banks)
            .map(|b| b.size_in_bytes)
            .sum();
        Self::new(system, kernel)
    }

    /// (system, TTM) bytes held now.
    pub fn used(&self) -> (u64, u64) {
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What a buffer of `kind` and `size` bytes is charged: (system, TTM).
    fn charge(kind: BoKind, size: u64) -> (u64, u64) {
        match kind {
            BoKind::Gtt => (size, size),
            BoKind::Userptr => (size, 0),
            _ => (0, 0),
        }
    }

    /// `amdgpu_amdkfd_reserve_mem_limit`.
    pub(crate) fn reserve(&self, system: u64, ttm: u64) -> KResult<()> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let sys_total = used.0.checked_add(system).ok_or(Errno::ENOMEM)?;
        let ttm_total = used.1.checked_add(ttm).ok_or(Errno::ENOMEM)?;
        if (sys_total > self.max_system && !self.no_system_mem_limit) || ttm_total > self.max_ttm {
            log::debug!(target: crate::layer::MEMORY, "system memory limit: {system:#x} more would make {sys_total:#x} (limit {:#x}), TTM {ttm_total:#x} (limit {:#x})", self.max_system, self.max_ttm);
            return Err(Errno::ENOMEM);
        }
        *used = (sys_total, ttm_total);
        Ok(())
    }

    /// `amdgpu_amdkfd_unreserve_mem_limit`.
    pub(crate) fn unreserve(&self, system: u64, ttm: u64) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.0 = used.0.saturating_sub(system);
        used.1 = used.1.saturating_sub(ttm);
    }
}

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
    /// The system-memory table this buffer is charged to, and (system, TTM) bytes charged.
    mem_limit: Option<(Arc<KfdMemLimit>, u64, u64)>,
    /// For a KFD buffer imported from a dma-buf: the GEM object it shares (which owns the
    /// memory, its VRAM reservation and its render-node offset).
    imported: Option<Arc<crate::gem::GemObject>>,
    /// The block of the GPU's heap its memory is (KFD VRAM and GTT buffers): held so that
    /// dropping the buffer frees it.
    _block: Option<crate::hw::heap::HeapBlock>,
    /// A VRAM buffer that holds no VRAM now: a KFD buffer TTM evicted to make room for a
    /// graphics submission, or a graphics buffer placed in GTT (at creation when VRAM was
    /// full, or evicted by a KFD restore). Its bytes stay where they are (the model never
    /// copies them); only the VRAM accounting ([`KfdNode::reserve_vram`]) changes.
    evicted: AtomicBool,
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

impl Bo {
    /// Whether this VRAM buffer holds VRAM now (not evicted); `false` for other kinds.
    pub fn is_resident_in_vram(&self) -> bool {
        self.kind == BoKind::Vram
            && self.imported.is_none()
            && !self.evicted.load(Ordering::Acquire)
    }

    /// Whether this is a VRAM buffer that TTM moved out (or placed outside) VRAM.
    pub fn is_evicted(&self) -> bool {
        self.kind == BoKind::Vram && self.evicted.load(Ordering::Acquire)
    }

    /// Moves a resident VRAM buffer out of VRAM: its VRAM is returned to the GPU's
    /// accounting. `false` when it held none (another kind, imported, already evicted).
    pub(crate) fn evict_from_vram(&self) -> bool {
        if self.kind != BoKind::Vram || self.imported.is_some() {
            return false;
        }
        let was_resident = !self.evicted.swap(true, Ordering::AcqRel);
        if was_resident {
            self.node.release_vram(self.size);
        }
        was_resident
    }

    /// Moves an evicted VRAM buffer back into VRAM: `ENOMEM` when it does not fit now.
    pub(crate) fn make_resident_in_vram(&self) -> KResult<()> {
        if !self.is_evicted() || self.imported.is_some() {
            return Ok(());
        }
        self.node.reserve_vram(self.size)?;
        if !self.evicted.swap(false, Ordering::AcqRel) {
            // Another thread made it resident in between: one reservation is enough.
            self.node.release_vram(self.size);
        }
        Ok(())
    }
}

impl Drop for Bo {
    fn drop(&mut self) {
        if self.imported.is_some() {
            return;
        }
        if let Some((limit, system, ttm)) = &self.mem_limit {
            limit.unreserve(*system, *ttm);
        }
        if self.kind == BoKind::Vram && !*self.evicted.get_mut() {
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

/// Allocates a buffer on `node` for a process whose doorbell slice is `doorbell_slice`,
/// charging GTT and USERPTR buffers to `mem_limit`.
pub fn alloc_bo(
    node: &Arc<KfdNode>,
    handle: u64,
    req: AllocRequest,
    doorbell_slice: Option<u32>,
    mem_limit: &Arc<KfdMemLimit>,
) -> KResult<Arc<Bo>> {
    let kind = BoKind::from_flags(req.flags)?;
    if req.size == 0 {
        return Err(Errno::EINVAL);
    }
    let size = page_align(req.size).ok_or(Errno::EINVAL)?;
    req.va.checked_add(size).ok_or(Errno::EINVAL)?;
    // An AQL queue buffer is allocated at half its size and mapped twice; the kernel charges
    // the half.
    let charged = if req.flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM != 0 {
        page_align(req.size >> 1).ok_or(Errno::EINVAL)?
    } else {
        size
    };
    let (system, ttm) = KfdMemLimit::charge(kind, charged);
    mem_limit.reserve(system, ttm)?;
    let (backing, mmap_offset, block) =
        match backing_of(node, kind, size, req, doorbell_slice, true) {
            Ok(b) => b,
            Err(e) => {
                mem_limit.unreserve(system, ttm);
                return Err(e);
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
        mem_limit: ((system, ttm) != (0, 0)).then(|| (mem_limit.clone(), system, ttm)),
        imported: None,
        _block: block,
        evicted: AtomicBool::new(false),
    });
    if matches!(kind, BoKind::Vram | BoKind::Gtt) {
        node.bo_offsets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(mmap_offset, Arc::downgrade(&bo));
    }
    log::debug!(target: crate::layer::MEMORY, "alloc {kind:?} va {:#x} size {size:#x} handle {handle:#x}", req.va);
    Ok(bo)
}

/// A graphics buffer (`amdgpu_gem_create`) of VRAM or GTT on `node`: backed and CPU-mappable
/// through the render node as KFD buffers are, but not charged to KFD's system-memory limit
/// (amdgpu accounts graphics buffers apart). Its handle is 0: GEM handles live in the file.
/// A VRAM buffer that does not fit in the VRAM left is placed in GTT (evicted), as
/// `amdgpu_gem_create_ioctl` retries a VRAM-only buffer with GTT added when VRAM is short; a
/// command submission that names it moves it into VRAM ([`crate::eviction`]).
pub fn alloc_graphics_bo(node: &Arc<KfdNode>, kind: BoKind, size: u64) -> KResult<Bo> {
    if !matches!(kind, BoKind::Vram | BoKind::Gtt) {
        return Err(Errno::EINVAL);
    }
    let req = AllocRequest {
        va: 0,
        size,
        flags: 0,
        user_addr: 0,
    };
    // A graphics buffer has memory of its own: a dma-buf exported from it is that file.
    let (backing, mmap_offset, _) = backing_of(node, kind, size, req, None, false)?;
    let in_gtt = kind == BoKind::Vram && node.reserve_vram(size).is_err();
    let bo = Bo {
        handle: 0,
        node: node.clone(),
        va: 0,
        size,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
            | if kind == BoKind::Vram {
                KFD_IOC_ALLOC_MEM_FLAGS_VRAM
            } else {
                KFD_IOC_ALLOC_MEM_FLAGS_GTT
            },
        kind,
        backing,
        mmap_offset,
        mem_limit: None,
        imported: None,
        _block: None,
        evicted: AtomicBool::new(in_gtt),
    };
    Ok(bo)
}

/// Registers a graphics buffer in the render node's offset table once it sits in its `Arc`
/// (the table holds weak references).
pub fn publish_graphics_bo(bo: &Arc<Bo>) {
    bo.node
        .bo_offsets
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(bo.mmap_offset, Arc::downgrade(bo));
    if bo.kind == BoKind::Vram {
        let mut graphics = bo
            .node
            .graphics_vram
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        graphics.retain(|w| w.strong_count() > 0);
        graphics.push(Arc::downgrade(bo));
    }
}

/// `amdgpu_amdkfd_gpuvm_import_dmabuf_fd`: a KFD buffer with `handle` at GPU VA `va` on
/// `node` that shares the memory of the GEM object `gem`. Writable, as the kernel makes
/// imported buffers; VRAM or GTT as the object is.
pub fn import_bo(
    node: &Arc<KfdNode>,
    handle: u64,
    va: u64,
    gem: Arc<crate::gem::GemObject>,
) -> KResult<Arc<Bo>> {
    let src = &gem.bo;
    if !matches!(src.kind, BoKind::Vram | BoKind::Gtt) {
        return Err(Errno::EINVAL);
    }
    va.checked_add(src.size).ok_or(Errno::EINVAL)?;
    Ok(Arc::new(Bo {
        handle,
        node: node.clone(),
        va,
        size: src.size,
        flags: src.flags | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        kind: src.kind,
        backing: src.backing.clone(),
        mmap_offset: 0,
        mem_limit: None,
        imported: Some(gem.clone()),
        _block: None,
        evicted: AtomicBool::new(false),
    }))
}

/// What backs a new buffer of `kind`, its mmap offset, and for VRAM and GTT carved from the
/// GPU's heap (`from_heap`) the block it owns.
fn backing_of(
    node: &Arc<KfdNode>,
    kind: BoKind,
    size: u64,
    req: AllocRequest,
    doorbell_slice: Option<u32>,
    from_heap: bool,
) -> KResult<(Backing, u64, Option<crate::hw::heap::HeapBlock>)> {
    Ok(match kind {
        BoKind::Vram | BoKind::Gtt => {
            // A graphics buffer (not from the heap) reserves its VRAM itself.
            let reserve = kind == BoKind::Vram && from_heap;
            if reserve {
                crate::eviction::reserve_vram_for_kfd(node, size)?;
            }
            let carved = if from_heap {
                node.gpu
                    .heap
                    .alloc(size)
                    .map(|b| (b.memory().clone(), b.offset(), Some(b)))
            } else {
                DeviceMemory::new(if kind == BoKind::Vram { "vram" } else { "gtt" }, size)
                    .map(|m| (Arc::new(m), 0, None))
            };
            let (mem, offset, block) = match carved {
                Ok(c) => c,
                Err(e) => {
                    if reserve {
                        node.release_vram(size);
                    }
                    return Err(e);
                }
            };
            (
                Backing::Device { mem, offset },
                node.new_bo_offset(size),
                block,
            )
        }
        BoKind::Userptr => {
            if req.user_addr % PAGE_SIZE as u64 != 0 {
                return Err(Errno::EINVAL);
            }
            if !is_user_range_mapped_rw(req.user_addr, size) {
                log::debug!(target: crate::layer::MEMORY, "userptr {:#x}+{size:#x} is not mapped read-write", req.user_addr);
                return Err(Errno::EFAULT);
            }
            // A doorbell mapping is no user memory (amdkfd: get_user_pages fails on VM_IO).
            if node
                .gpu
                .is_watched_doorbell_mapping(req.user_addr, req.user_addr.saturating_add(size))
            {
                log::debug!(target: crate::layer::MEMORY, "userptr {:#x}+{size:#x} is a doorbell mapping", req.user_addr);
                return Err(Errno::EFAULT);
            }
            crate::user::populate_user_range_for_write(req.user_addr, size)?;
            (
                // SAFETY: the user address arrived in ALLOC's argument bytes, which the caller of
                // `Process::ioctl` promised are its memory for as long as the GPU maps them;
                // that it is mapped read-write was checked just above.
                Backing::User(unsafe { UserMemory::new(req.user_addr) }),
                req.user_addr,
                None,
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
                None,
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
                None,
            )
        }
    })
}

/// The GPU id encoded in a buffer handle.
pub fn handle_gpu_id(handle: u64) -> u32 {
    (handle >> 32) as u32
}
