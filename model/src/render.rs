//! A render node opened on the model (`/dev/dri/renderD<minor>`): the DRM file a runtime opens
//! beside `/dev/kfd`, its GEM buffers and CS submissions, and how the driver finds it again
//! from a descriptor number.

use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::file::FileIdentity;
use crate::instance::ModelInner;
use crate::process::{lock, MapSource};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

/// A render node opened on the model (`/dev/dri/renderD<minor>`).
#[derive(Debug)]
pub struct RenderNode {
    model: Arc<ModelInner>,
    /// The GPU behind it.
    pub node: Arc<KfdNode>,
    /// A unique id of this open file.
    pub file_id: u64,
    /// A descriptor number that names it to `ACQUIRE_VM`: a synthetic one (no real
    /// descriptor stands for the file) until [`RenderNode::bind_fd`] gives it a real one.
    pub fd: i32,
    /// How the driver finds this file from a descriptor.
    key: RenderFileKey,
    /// The file's GEM objects and GPU VA mappings.
    gem: Mutex<crate::gem::GemFile>,
    /// The file's command-submission contexts.
    contexts: Mutex<crate::ctx::CtxTable>,
    /// The file's BO lists.
    bo_lists: Mutex<crate::cs::BoLists>,
}

impl RenderNode {
    /// A new open file of `node`'s render node, known to the driver by a synthetic
    /// descriptor number until [`RenderNode::bind_fd`].
    pub(crate) fn open(model: &Arc<ModelInner>, node: Arc<KfdNode>) -> RenderNode {
        let file_id = model.next_render_file.fetch_add(1, Ordering::Relaxed);
        let fd = model.next_fake_fd.fetch_add(1, Ordering::Relaxed);
        let key = RenderFileKey::Synthetic(fd);
        lock(&model.render_files).insert(key, (file_id, node.gpu_id));
        RenderNode {
            model: model.clone(),
            node,
            file_id,
            fd,
            key,
            gem: Mutex::new(Default::default()),
            contexts: Mutex::new(Default::default()),
            bo_lists: Mutex::new(Default::default()),
        }
    }

    /// The render minor.
    pub fn minor(&self) -> u32 {
        self.node.topo.properties.drm_render_minor as u32
    }

    /// Makes the open file behind the real descriptor `fd` (the shim's) this render file: from
    /// now on `ACQUIRE_VM` knows it through `fd` and through every descriptor that names the
    /// same open file (its duplicates, as the kernel's `fget` does), and no longer through
    /// the synthetic number. `EBADF` when `fd` is not open.
    pub fn bind_fd(&mut self, fd: i32) -> KResult<()> {
        let key = RenderFileKey::File(FileIdentity::of(fd)?);
        let mut files = lock(&self.model.render_files);
        files.remove(&self.key);
        files.insert(key, (self.file_id, self.node.gpu_id));
        self.key = key;
        self.fd = fd;
        Ok(())
    }

    /// `mmap` on the render node: the buffer whose `mmap_offset` ALLOC returned.
    pub fn mmap(&self, offset: u64, len: u64) -> KResult<MapSource> {
        let bo = lock(&self.node.bo_offsets)
            .get(&offset)
            .and_then(Weak::upgrade)
            .ok_or(Errno::EINVAL)?;
        if len == 0 || len > bo.size {
            return Err(Errno::EINVAL);
        }
        let (memory, off) = bo.device_memory().ok_or(Errno::EINVAL)?;
        Ok(MapSource {
            memory,
            offset: off as u64,
            len,
        })
    }
}

impl RenderNode {
    /// `DRM_IOCTL_AMDGPU_GEM_CREATE`: a buffer of `size` bytes aligned to `alignment` bytes in
    /// `domains` (`AMDGPU_GEM_DOMAIN_*`) with `flags` (`AMDGPU_GEM_CREATE_*`); returns its GEM
    /// handle.
    pub fn gem_create(&self, size: u64, alignment: u64, domains: u64, flags: u64) -> KResult<u32> {
        lock(&self.gem).create(&self.node, size, alignment, domains, flags)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_METADATA`, `SET_METADATA`.
    pub fn gem_set_metadata(&self, handle: u32, metadata: crate::gem::BoMetadata) -> KResult<()> {
        lock(&self.gem).set_metadata(handle, metadata)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_METADATA`, `GET_METADATA`.
    pub fn gem_metadata(&self, handle: u32) -> KResult<crate::gem::BoMetadata> {
        lock(&self.gem).metadata(handle)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_OP`, `GET_GEM_CREATE_INFO`.
    pub fn gem_create_info(&self, handle: u32) -> KResult<crate::gem::GemCreateInfo> {
        lock(&self.gem).create_info(handle)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_OP`, `SET_PLACEMENT`: the buffer's new domains.
    pub fn gem_set_placement(&self, handle: u32, value: u64) -> KResult<crate::gem::Placement> {
        lock(&self.gem).set_placement(handle, value)
    }

    /// `DRM_IOCTL_AMDGPU_BO_LIST`: `operation` (`AMDGPU_BO_LIST_OP_*`) on list `list` with
    /// the GEM `handles` (`ENOENT` for one that is not open, or an unknown list to update;
    /// `EINVAL` for an unknown operation); the list's id (0 after `DESTROY`).
    pub fn bo_list(&self, operation: u32, list: u32, handles: Vec<u32>) -> KResult<u32> {
        use kfd_sys::drm::*;
        if matches!(
            operation,
            AMDGPU_BO_LIST_OP_CREATE | AMDGPU_BO_LIST_OP_UPDATE
        ) {
            let gem = lock(&self.gem);
            for &h in &handles {
                gem.object(h)?;
            }
        }
        let mut lists = lock(&self.bo_lists);
        match operation {
            AMDGPU_BO_LIST_OP_CREATE => Ok(lists.create(handles)),
            AMDGPU_BO_LIST_OP_DESTROY => {
                lists.destroy(list);
                Ok(0)
            }
            AMDGPU_BO_LIST_OP_UPDATE => lists.update(list, handles).map(|()| list),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `DRM_IOCTL_AMDGPU_CS`: validates the submission (`EINVAL` for an unknown context or a
    /// bad chunk, `ENOENT` for an unknown BO list, `ECANCELED` on a guilty context), moves the
    /// BO list's VRAM buffers into VRAM — evicting KFD buffers when they do not fit
    /// ([`crate::eviction`]) — then runs the IBs on their SDMA engines or, for GFX and compute
    /// rings, through the CP's PM4 processor, through the file's GPU VM, and returns the
    /// sequence number of the last. An IB that stops on the GPU (a fault, a packet that does
    /// not decode or that the model cannot run) is what a real GPU would hang on: its fence
    /// signals all the same, the IBs after it are not run (their fences signal too), and the
    /// context becomes guilty ([`crate::cs`]'s failure rule).
    pub fn cs_submit(&self, request: &crate::cs::CsRequest) -> KResult<u64> {
        use crate::hw::engine::{ExecEnv, IbFrame, QueueIdentity};
        let p = &self.node.topo.properties;
        let dma_rings = (p.num_sdma_engines + p.num_sdma_xgmi_engines) as u32;
        let mut contexts = lock(&self.contexts);
        contexts.last_submitted(request.ctx_id, (0, 0, 0))?;
        if contexts.is_guilty(request.ctx_id) {
            return Err(Errno::ECANCELED);
        }
        let bo_list: Vec<u32> = match request.bo_list_handle {
            0 => Vec::new(),
            list => lock(&self.bo_lists)
                .get(list)
                .ok_or(Errno::ENOENT)?
                .to_vec(),
        };
        crate::cs::check(request, dma_rings)?;
        let wanted: Vec<Arc<crate::memory::Bo>> = {
            let gem = lock(&self.gem);
            bo_list
                .iter()
                .filter_map(|&h| gem.object(h).ok())
                .filter(|o| o.prefers_vram())
                .map(|o| o.bo.clone())
                .collect()
        };
        crate::eviction::validate_for_submission(&self.model, &self.node, &wanted);
        let gem = lock(&self.gem);
        let sdma_gen = pm4::SdmaGen::from(self.node.gpu.generation);
        let gfx_gen = self.node.gpu.generation;
        let mut seq = 0;
        let mut hung = false;
        for ib in &request.ibs {
            let ring = (ib.ip_type, ib.ip_instance, ib.ring);
            if hung {
                // Cancelled with the job that hung: its fence signals without running it.
                seq = contexts.submit(request.ctx_id, ring)?;
                continue;
            }
            let on_cp = ib.ip_type != kfd_sys::drm::AMDGPU_HW_IP_DMA;
            let slot = if on_cp {
                // The graphics driver's kernel rings sit on pipes KFD does not use; the
                // identity only names the engine in messages.
                crate::hw::hws::HqdSlot::Compute {
                    mec: 0,
                    pipe: 0,
                    queue: ib.ring as u8,
                }
            } else {
                crate::hw::hws::HqdSlot::Sdma {
                    engine: ib.ring as u8,
                    queue: 0,
                }
            };
            let id = QueueIdentity {
                slot,
                pasid: 0,
                vmid: 0,
                doorbell_offset: 0,
            };
            // The graphics driver's own interrupts (fences, traps) go to amdgpu, not to KFD.
            let ih = crate::hw::ih::IhRing::new();
            let mut registers = Default::default();
            let mut env = ExecEnv {
                vm: gem.vm(),
                clock: &self.node.gpu.clock,
                registers: &mut registers,
                ih: &ih,
                queue: id,
            };
            let frame = IbFrame::new(ib.va_start, ib.ib_bytes / 4);
            let budget = crate::cs::SUBMITTED_IB_BUDGET;
            let (ran, engine) = if on_cp {
                let ran =
                    crate::hw::cp::CpQueue::run_submitted_ib(gfx_gen, id, frame, &mut env, budget);
                (ran, format!("ip {} ring {}", ib.ip_type, ib.ring))
            } else {
                let ran = crate::hw::sdma::SdmaQueue::run_submitted_ib(
                    sdma_gen, id, frame, &mut env, budget,
                );
                (ran, format!("sdma{}", ib.ring))
            };
            match ran {
                Ok(n) => {
                    log::debug!(target: crate::layer::GEM, "CS ctx {} {engine}: IB {:#x} ({} bytes), {n} packet(s)", request.ctx_id, ib.va_start, ib.ib_bytes)
                }
                Err(e) => {
                    log::error!(target: crate::layer::GEM, "CS ctx {} {engine}: the IB at {:#x} stopped: {e}; the ring is reset, its fence signals and the context is guilty", request.ctx_id, ib.va_start);
                    contexts.mark_guilty(request.ctx_id);
                    hung = true;
                }
            }
            seq = contexts.submit(request.ctx_id, ring)?;
        }
        Ok(seq)
    }

    /// `DRM_IOCTL_AMDGPU_WAIT_CS`: whether submission `seq` of context `ctx_id` on `ring`
    /// (`ip_type`, `ip_instance`, `ring`) has completed — always, once submitted (`EINVAL` for
    /// an unknown context or a sequence number not handed out yet).
    pub fn wait_cs(&self, ctx_id: u32, ring: (u32, u32, u32), seq: u64) -> KResult<bool> {
        let last = lock(&self.contexts).last_submitted(ctx_id, ring)?;
        if seq > last {
            return Err(Errno::EINVAL);
        }
        Ok(true)
    }

    /// `DRM_IOCTL_AMDGPU_CTX`: allocates, frees or queries one of the file's submission
    /// contexts.
    pub fn ctx(&self, request: crate::ctx::CtxRequest) -> KResult<crate::ctx::CtxAnswer> {
        lock(&self.contexts).ioctl(request)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_MMAP`: the offset at which `mmap` of this render node reaches
    /// the buffer.
    pub fn gem_mmap_offset(&self, handle: u32) -> KResult<u64> {
        lock(&self.gem).mmap_offset(handle)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_VA`: maps, unmaps or clears ranges of the file's GPU VM.
    pub fn gem_va(&self, request: crate::gem::GemVaRequest) -> KResult<()> {
        lock(&self.gem).va(request)
    }

    /// `DRM_IOCTL_GEM_CLOSE`.
    pub fn gem_close(&self, handle: u32) -> KResult<()> {
        lock(&self.gem).close(handle)
    }

    /// `DRM_IOCTL_PRIME_HANDLE_TO_FD`: the buffer as a dma-buf descriptor. `flags` may hold
    /// `O_CLOEXEC` and `O_RDWR` (`DRM_CLOEXEC`, `DRM_RDWR`); anything else is `EINVAL`.
    pub fn prime_handle_to_fd(&self, handle: u32, flags: u32) -> KResult<i32> {
        let allowed = (libc::O_CLOEXEC | libc::O_RDWR) as u32;
        if flags & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        let cloexec = flags & libc::O_CLOEXEC as u32 != 0;
        lock(&self.gem).export(&self.model.dmabufs, handle, cloexec)
    }

    /// (handle, size) of each GEM object, for inspection.
    pub fn gem_objects(&self) -> Vec<(u32, u64)> {
        lock(&self.gem).handles()
    }

    /// How many `GEM_VA` mappings the file has.
    pub fn gem_va_mappings(&self) -> usize {
        lock(&self.gem).vm().len()
    }
}

impl Drop for RenderNode {
    fn drop(&mut self) {
        lock(&self.model.render_files).remove(&self.key);
    }
}

/// How the driver finds a render file from a descriptor number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RenderFileKey {
    /// A number handed out by the model itself, for in-process clients with no real
    /// descriptor (far above any real descriptor: the kernel's limit is 2^20).
    Synthetic(i32),
    /// The open file a real descriptor names.
    File(FileIdentity),
}
