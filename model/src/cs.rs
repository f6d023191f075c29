//! `amdgpu_cs` and `amdgpu_bo_list`: the graphics driver's command submission on a
//! render-node file — lists of GEM buffers (`DRM_IOCTL_AMDGPU_BO_LIST`), indirect buffers
//! submitted on a context (`DRM_IOCTL_AMDGPU_CS`) and waits for them (`DRM_IOCTL_AMDGPU_WAIT_CS`)
//! — what `amdgpu_bo_list_create`, `amdgpu_cs_submit` and `amdgpu_cs_query_fence_status` send
//! (kfdtest's `KFDEvictTest` keeps an SDMA ring busy this way).
//!
//! What is modelled: an IB for an SDMA ring runs on that engine, through the file's GPU VM
//! (`GEM_VA` mappings), when it is submitted, so its fence has signalled by the time the ioctl
//! //! returns; an IB for a GFX or compute ring runs the same way through the CP's PM4 processor
//! (`WRITE_DATA`, `RELEASE_MEM`, `NOP`, `COPY_DATA`, `DMA_DATA`, ...). An IB that faults is
//! logged and still signals its fence, as the GPU's does after a fault; a PM4 IB the model
//! cannot run (a bad packet, a wait, a dispatch) fails the submission with `EINVAL` and an
//! error in the log naming the packet. Not modelled: multimedia IPs (`EINVAL`); the buffers a
//! submission names being made resident (the model never moves a buffer out of VRAM, so
//! submissions never evict KFD's buffers or queues as TTM does under VRAM pressure).
//!
//! # Design: the eviction a submission would cause (not built yet)
//!
//! On the GPU, `amdgpu_cs_ioctl` validates every buffer of the submission's BO list into its
//! preferred domain. When VRAM is full, TTM evicts other buffers to make room; a KFD buffer
//! carries its process's eviction fence, and evicting it signals that fence, which makes
//! amdkfd stop all the process's queues (`kfd_process_evict_queues`), and schedules the
//! restore worker, which after a delay validates the KFD buffers back, remaps them and
//! restarts the queues (`kfd_process_restore_queues`). `KFDEvictTest` counts on exactly that:
//! its graphics buffers plus its KFD buffers exceed VRAM, and its KFD queues must keep
//! producing correct results across the evictions. The model would do it in three parts:
//! 1. VRAM accounting shared by the render node and KFD on one GPU: the bytes of VRAM buffers
//!    resident now (GEM objects whose preferred domain is VRAM, KFD VRAM allocations), against
//!    the GPU's VRAM size.
//! 2. In `cs_submit`, before the IBs run: if the BO list's VRAM buffers do not fit beside what
//!    is resident, take the needed bytes from the KFD buffers of the processes on that GPU (in
//!    LRU order), call [`crate::Process::evict_queues`]'s path for each owning process and
//!    mark those buffers evicted. The bytes stay in their `memfd` (the model never copies
//!    them), so correctness of later reads is free; what is observable is the queues being
//!    off the GPU (their doorbells do not run) and the eviction counters/SMI events.
//! 3. A restore worker on the engine thread: after the kernel's restore delay on the model's
//!    clock, mark the buffers resident again (evicting graphics buffers not in flight, which
//!    here means all of them, since submissions complete when the ioctl returns) and call the
//!    restore path, so the queues map again and run their pending packets.
//!
//! Under the shim each process has its own model GPU (#39), so the graphics and KFD sides of
//! one test process share a GPU, which is what KFDEvictTest needs.

use crate::errno::{Errno, KResult};
use std::collections::BTreeMap;

/// `AMDGPU_BO_LIST_OP_CREATE`.
pub const AMDGPU_BO_LIST_OP_CREATE: u32 = 0;
/// `AMDGPU_BO_LIST_OP_DESTROY`.
pub const AMDGPU_BO_LIST_OP_DESTROY: u32 = 1;
/// `AMDGPU_BO_LIST_OP_UPDATE`.
pub const AMDGPU_BO_LIST_OP_UPDATE: u32 = 2;

/// `AMDGPU_HW_IP_GFX`.
pub const AMDGPU_HW_IP_GFX: u32 = 0;
/// `AMDGPU_HW_IP_COMPUTE`.
pub const AMDGPU_HW_IP_COMPUTE: u32 = 1;
/// `AMDGPU_HW_IP_DMA` (the SDMA engines).
pub const AMDGPU_HW_IP_DMA: u32 = 2;
/// GFX rings a GPU of the model has (`amdgpu`'s `num_gfx_rings` on gfx9: one).
pub const GFX_RINGS: u32 = 1;
/// Compute rings the graphics driver has (`amdgpu`'s kernel compute queues, `num_kcq`: 8
/// by default).
pub const COMPUTE_RINGS: u32 = 8;
/// `AMDGPU_HW_IP_NUM`: IP types are below it.
pub const AMDGPU_HW_IP_NUM: u32 = 9;

/// `AMDGPU_CHUNK_ID_IB`.
pub const AMDGPU_CHUNK_ID_IB: u32 = 0x01;
/// `AMDGPU_CHUNK_ID_FENCE`.
pub const AMDGPU_CHUNK_ID_FENCE: u32 = 0x02;
/// `AMDGPU_CHUNK_ID_DEPENDENCIES`.
pub const AMDGPU_CHUNK_ID_DEPENDENCIES: u32 = 0x03;
/// `AMDGPU_CHUNK_ID_SYNCOBJ_IN`.
pub const AMDGPU_CHUNK_ID_SYNCOBJ_IN: u32 = 0x04;
/// `AMDGPU_CHUNK_ID_SYNCOBJ_OUT`.
pub const AMDGPU_CHUNK_ID_SYNCOBJ_OUT: u32 = 0x05;
/// `AMDGPU_CHUNK_ID_BO_HANDLES`.
pub const AMDGPU_CHUNK_ID_BO_HANDLES: u32 = 0x06;
/// `AMDGPU_CHUNK_ID_SCHEDULED_DEPENDENCIES`.
pub const AMDGPU_CHUNK_ID_SCHEDULED_DEPENDENCIES: u32 = 0x07;
/// `AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_WAIT`.
pub const AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_WAIT: u32 = 0x08;
/// `AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_SIGNAL`.
pub const AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_SIGNAL: u32 = 0x09;

/// Most packets one submitted IB may run (the model runs it to its end in the ioctl).
pub const SUBMITTED_IB_BUDGET: usize = 1 << 16;

/// One `AMDGPU_CHUNK_ID_IB` chunk (`struct drm_amdgpu_cs_chunk_ib`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CsIb {
    /// `AMDGPU_IB_FLAG_*`.
    pub flags: u32,
    /// GPU VA of the IB in the file's VM.
    pub va_start: u64,
    /// Its size in bytes.
    pub ib_bytes: u32,
    /// `AMDGPU_HW_IP_*`.
    pub ip_type: u32,
    /// Instance of the IP (only 0 exists).
    pub ip_instance: u32,
    /// Ring of the IP.
    pub ring: u32,
}

/// A `DRM_IOCTL_AMDGPU_CS` as the model sees it: the IB chunks, and whether any chunk was of
/// an unknown kind (`EINVAL`). Fence, dependency, syncobj and BO-handle chunks change nothing
/// here (every earlier submission has completed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CsRequest {
    /// The context.
    pub ctx_id: u32,
    /// A BO list (0 for none).
    pub bo_list_handle: u32,
    /// The IB chunks in order.
    pub ibs: Vec<CsIb>,
    /// How many chunks there were.
    pub num_chunks: u32,
    /// Whether a chunk id was not one of `AMDGPU_CHUNK_ID_*`.
    pub unknown_chunk: bool,
}

/// The BO lists of one render-node file (`fpriv->bo_list_handles`).
#[derive(Debug, Default)]
pub struct BoLists {
    lists: BTreeMap<u32, Vec<u32>>,
}

impl BoLists {
    /// `AMDGPU_BO_LIST_OP_CREATE` of GEM `handles` (checked by the caller): the new list's
    /// id, the lowest free from 1.
    pub fn create(&mut self, handles: Vec<u32>) -> u32 {
        let id = (1..)
            .zip(self.lists.keys())
            .find(|(want, &have)| *want != have)
            .map_or(self.lists.len() as u32 + 1, |(want, _)| want);
        self.lists.insert(id, handles);
        id
    }

    /// `AMDGPU_BO_LIST_OP_DESTROY` (no error for an unknown list, as the kernel).
    pub fn destroy(&mut self, id: u32) {
        self.lists.remove(&id);
    }

    /// `AMDGPU_BO_LIST_OP_UPDATE`: `ENOENT` for an unknown list.
    pub fn update(&mut self, id: u32, handles: Vec<u32>) -> KResult<()> {
        *self.lists.get_mut(&id).ok_or(Errno::ENOENT)? = handles;
        Ok(())
    }

    /// The GEM handles of list `id`, if it exists.
    pub fn get(&self, id: u32) -> Option<&[u32]> {
        self.lists.get(&id).map(Vec::as_slice)
    }
}

/// The checks `amdgpu_cs_ioctl` makes before it runs anything: at least one chunk, no
/// unknown chunk, at least one IB, each on an IP and ring that exists (`dma_rings` SDMA
/// rings, [`GFX_RINGS`], [`COMPUTE_RINGS`]), instance 0, a whole number of dwords; IPs other
/// than GFX, compute and SDMA (the multimedia engines) are not modelled. `EINVAL` for any
/// failure.
pub fn check(request: &CsRequest, dma_rings: u32) -> KResult<()> {
    if request.num_chunks == 0 || request.unknown_chunk || request.ibs.is_empty() {
        return Err(Errno::EINVAL);
    }
    for ib in &request.ibs {
        if ib.ip_type >= AMDGPU_HW_IP_NUM || ib.ip_instance != 0 {
            return Err(Errno::EINVAL);
        }
        let rings = match ib.ip_type {
            AMDGPU_HW_IP_GFX => GFX_RINGS,
            AMDGPU_HW_IP_COMPUTE => COMPUTE_RINGS,
            AMDGPU_HW_IP_DMA => dma_rings,
            other => {
                log::debug!(target: "kfd::gem", "CS: IBs for IP type {other} are not modelled (GFX, compute and SDMA only)");
                return Err(Errno::EINVAL);
            }
        };
        if ib.ring >= rings || ib.ib_bytes == 0 || ib.ib_bytes % 4 != 0 {
            return Err(Errno::EINVAL);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bo_lists_take_the_lowest_free_id_and_updates_need_a_list() {
        let mut l = BoLists::default();
        assert_eq!((l.create(vec![1]), l.create(vec![2, 3])), (1, 2));
        l.destroy(1);
        l.destroy(7);
        assert_eq!(l.create(vec![4]), 1);
        assert_eq!(l.update(9, vec![]), Err(Errno::ENOENT));
        l.update(2, vec![5]).unwrap();
        assert_eq!(l.get(2), Some(&[5][..]));
    }

    #[test]
    fn a_submission_needs_chunks_and_ibs_on_rings_that_exist() {
        let ib = CsIb {
            va_start: 0x10_0000,
            ib_bytes: 64,
            ip_type: AMDGPU_HW_IP_DMA,
            ..Default::default()
        };
        let ok = CsRequest {
            ctx_id: 1,
            ibs: vec![ib],
            num_chunks: 1,
            ..Default::default()
        };
        assert_eq!(check(&ok, 2), Ok(()));
        let with = |f: &dyn Fn(&mut CsRequest)| {
            let mut r = ok.clone();
            f(&mut r);
            check(&r, 2)
        };
        assert_eq!(with(&|r| r.num_chunks = 0), Err(Errno::EINVAL));
        assert_eq!(with(&|r| r.unknown_chunk = true), Err(Errno::EINVAL));
        assert_eq!(with(&|r| r.ibs.clear()), Err(Errno::EINVAL));
        assert_eq!(
            with(&|r| r.ibs[0].ring = 2),
            Err(Errno::EINVAL),
            "ring 2 of 2"
        );
        assert_eq!(with(&|r| r.ibs[0].ip_instance = 1), Err(Errno::EINVAL));
        assert_eq!(with(&|r| r.ibs[0].ib_bytes = 6), Err(Errno::EINVAL));
        let on = |ip: u32, ring: u32| {
            with(&|r| {
                r.ibs[0].ip_type = ip;
                r.ibs[0].ring = ring;
            })
        };
        assert_eq!(on(AMDGPU_HW_IP_GFX, 0), Ok(()));
        assert_eq!(on(AMDGPU_HW_IP_GFX, 1), Err(Errno::EINVAL), "one GFX ring");
        assert_eq!(on(AMDGPU_HW_IP_COMPUTE, 7), Ok(()));
        assert_eq!(on(AMDGPU_HW_IP_COMPUTE, 8), Err(Errno::EINVAL), "8 rings");
        assert_eq!(on(3, 0), Err(Errno::EINVAL), "UVD is not modelled");
        assert_eq!(with(&|r| r.ibs[0].ip_type = 9), Err(Errno::EINVAL));
    }
}
