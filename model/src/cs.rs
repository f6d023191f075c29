//! `amdgpu_cs` and `amdgpu_bo_list`: the graphics driver's command submission on a
//! render-node file — lists of GEM buffers (`DRM_IOCTL_AMDGPU_BO_LIST`), indirect buffers
//! submitted on a context (`DRM_IOCTL_AMDGPU_CS`) and waits for them (`DRM_IOCTL_AMDGPU_WAIT_CS`)
//! — what `amdgpu_bo_list_create`, `amdgpu_cs_submit` and `amdgpu_cs_query_fence_status` send
//! (kfdtest's `KFDEvictTest` keeps an SDMA ring busy this way).
//!
//! What is modelled: an IB for an SDMA ring runs on that engine, through the file's GPU VM
//! (`GEM_VA` mappings), when it is submitted, so its fence has signalled by the time the ioctl
//! returns; an IB for a GFX or compute ring runs the same way through the CP's PM4 processor
//! (`WRITE_DATA`, `RELEASE_MEM`, `NOP`, `COPY_DATA`, `DMA_DATA`, ...). Not modelled:
//! multimedia IPs (`EINVAL`), dispatches and unmet waits in an IB (a hang, below).
//!
//! # One failure rule for IBs
//!
//! As amdgpu: what `amdgpu_cs_ioctl` checks before anything runs fails the ioctl — an unknown
//! context (`EINVAL`), a guilty one (`ECANCELED`), no or an unknown chunk, an IP or ring that
//! does not exist, a bad IB size ([`check`], `EINVAL`), an unknown BO list (`ENOENT`). What goes
//! wrong on the GPU does not: an IB that stops on its engine — a VM fault, a packet that does
//! not decode, one the model cannot run there — is the job a real GPU would hang on, which the
//! driver's job timeout resets. Its fence signals, the IBs after it in the submission are
//! cancelled (their fences signal without running them), the context becomes guilty
//! ([`crate::ctx`]: `QUERY_STATE2` reports `RESET | GUILTY`) and its later submissions fail
//! with `ECANCELED`. The same rule holds for SDMA and GFX/compute rings; the error is logged
//! naming the IB and why it stopped. Only the guilty context sees the reset (the model resets
//! nothing else: KFD's queues and other contexts go on).
//!
//! # The eviction a submission causes
//!
//! On the GPU, `amdgpu_cs_ioctl` validates every buffer of the submission's BO list into its
//! preferred domain; when VRAM is full TTM evicts other buffers, and evicting a KFD buffer
//! signals its process's eviction fence, which stops all the process's queues until amdkfd's
//! restore worker brings buffers and queues back. `KFDEvictTest` counts on that: its graphics
//! buffers plus its KFD buffers exceed VRAM, and its KFD queues must keep producing correct
//! results across the evictions. The model does it ([`crate::eviction`]): one VRAM account per
//! GPU holds KFD's and the render node's VRAM buffers; before the IBs run, the BO list's
//! buffers that prefer VRAM move in, KFD buffers are evicted (oldest allocation first) when
//! they do not fit, their owners' queues stop (SMI `QUEUE_EVICTION`, trigger TTM) and come
//! back after `PROCESS_RESTORE_TIME_MS` on the engine pass (SMI `QUEUE_RESTORE`). Bytes never
//! move (an evicted buffer keeps its `memfd`, which is lazily backed, so even a buffer as large
//! as VRAM costs host memory only where it is touched): what is observable is the queues being
//! off the GPU and the VRAM account.
//!
//! Under the shim each process has its own model GPU (#39), so the graphics and KFD sides of
//! one test process share a GPU, which is what KFDEvictTest needs.

use crate::errno::{Errno, KResult};
use kfd_sys::drm::*;
use std::collections::BTreeMap;

/// GFX rings a GPU of the model has (`amdgpu`'s `num_gfx_rings` on gfx9: one).
pub const GFX_RINGS: u32 = 1;
/// Compute rings the graphics driver has (`amdgpu`'s kernel compute queues, `num_kcq`: 8
/// by default).
pub const COMPUTE_RINGS: u32 = 8;

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
                log::debug!(target: crate::layer::GEM, "CS: IBs for IP type {other} are not modelled (GFX, compute and SDMA only)");
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
