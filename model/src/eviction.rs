//! TTM's eviction of KFD buffers under VRAM pressure from the graphics driver, and amdkfd's
//! restore of them (`evict_process_worker` / `restore_process_worker`).
//!
//! One VRAM account per GPU ([`KfdNode::reserve_vram`]) holds the bytes of every VRAM buffer
//! resident now: KFD's VRAM allocations and the graphics driver's GEM objects. When a command
//! submission names GEM objects that prefer VRAM and are not in it, `validate_for_submission`
//! moves them in; if they do not fit beside what is resident, KFD buffers on that GPU are
//! evicted first, in process (PASID) order and, within a process, in handle order — the order
//! they were allocated in. That is TTM's LRU order as the model has it: the model never moves
//! a buffer along the LRU after its allocation (it does not see which buffers a KFD queue
//! touches). Each process that loses a buffer has its queues evicted once
//! (`KFD_SMI_EVENT_QUEUE_EVICTION`, trigger `KFD_QUEUE_EVICTION_TRIGGER_TTM`), and its
//! restore is due [`crate::ModelConfig::process_restore_delay`] later (amdkfd's
//! `PROCESS_RESTORE_TIME_MS`). Buffers evicted while the restore is pending join it.
//!
//! The restore runs on the engine pass (`run_due_restores`, from the engine thread or
//! [`crate::Model::step`]): it moves the process's evicted buffers back into VRAM, moving
//! graphics VRAM buffers out (to GTT) when short — all of them are idle, since a submission
//! completes inside its ioctl — then restores the queues (`KFD_SMI_EVENT_QUEUE_RESTORE`), so
//! they map again and run what their doorbells asked for meanwhile. When the buffers still do
//! not fit, the restore backs off by the same delay and tries again.
//!
//! A new KFD VRAM buffer that does not fit moves idle graphics buffers to GTT
//! (`reserve_vram_for_kfd`): amdkfd's own limit counts only KFD's buffers, and TTM makes room
//! for the rest.
//!
//! What the model does not do: copy bytes (an evicted buffer keeps its memory; only the
//! accounting and the queues change, so contents survive as they do on the GPU), evict at
//! `GEM_CREATE` (a VRAM buffer that does not fit is created in GTT, as amdgpu's create retries
//! with GTT added), throttle moves per
//! submission (`amdgpu_cs_get_threshold_for_moves`), or let a process keep running on its
//! resident buffers (amdkfd stops all its queues too).

use crate::device::KfdNode;
use crate::errno::KResult;
use crate::instance::ModelInner;
use crate::memory::Bo;
use crate::process::{lock, ProcessInner};
use crate::smi;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

/// What TTM evictions did to one process so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EvictionStats {
    /// Times its queues were evicted because TTM moved its buffers out of VRAM.
    pub evictions: u64,
    /// Times the restore brought the buffers and queues back.
    pub restores: u64,
    /// Its buffers out of VRAM now.
    pub evicted_buffers: usize,
}

/// A process's buffers TTM evicted and not restored yet (`kfd_process`'s eviction state).
#[derive(Debug, Default)]
pub(crate) struct ProcessEviction {
    /// The evicted buffers (freeing one while evicted drops it).
    bos: Vec<Weak<Bo>>,
    /// When the restore is due; `None` while the process is not evicted.
    restore_at: Option<Instant>,
    evictions: u64,
    restores: u64,
}

impl ProcessEviction {
    /// The counters.
    pub fn stats(&self) -> EvictionStats {
        EvictionStats {
            evictions: self.evictions,
            restores: self.restores,
            evicted_buffers: self.bos.iter().filter(|w| w.strong_count() > 0).count(),
        }
    }
}

/// The restores due, by PASID (the model's delayed work queue for them).
#[derive(Debug, Default)]
pub(crate) struct RestoreQueue {
    due: Mutex<Vec<(Instant, u32)>>,
    /// Entries in `due`: the engine pass looks at the list only when there are some.
    len: AtomicUsize,
}

impl RestoreQueue {
    fn schedule(&self, pasid: u32, at: Instant) {
        let mut due = lock(&self.due);
        due.retain(|&(_, p)| p != pasid);
        due.push((at, pasid));
        self.len.store(due.len(), Ordering::Release);
    }

    fn take_due(&self, now: Instant) -> Vec<u32> {
        if self.len.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let mut due = lock(&self.due);
        let taken = due
            .iter()
            .filter(|&&(at, _)| at <= now)
            .map(|&(_, p)| p)
            .collect();
        due.retain(|&(at, _)| at > now);
        self.len.store(due.len(), Ordering::Release);
        taken
    }
}

/// `amdgpu_cs_parser_bos`' validation of a submission's buffers: the graphics VRAM buffers in
/// `wanted` that are not in VRAM move in, after KFD buffers on `node` are evicted to make room.
/// One that still does not fit stays in GTT (its allowed domain), and the submission runs.
pub(crate) fn validate_for_submission(model: &ModelInner, node: &Arc<KfdNode>, wanted: &[Arc<Bo>]) {
    let missing: Vec<&Arc<Bo>> = wanted.iter().filter(|b| b.is_evicted()).collect();
    let need: u64 = missing.iter().map(|b| b.size).sum();
    if need == 0 {
        return;
    }
    let available = node.vram_available();
    if available < need {
        evict_kfd_buffers(model, node, need - available);
    }
    for bo in missing {
        if bo.make_resident_in_vram().is_err() {
            log::debug!(target: crate::layer::TTM, "gpu {:#x}: a graphics buffer of {:#x} bytes stays in GTT (VRAM full)", node.gpu_id, bo.size);
        }
    }
}

/// Evicts KFD VRAM buffers on `node` until `shortfall` bytes are free or none is left.
fn evict_kfd_buffers(model: &ModelInner, node: &Arc<KfdNode>, mut shortfall: u64) {
    for p in model.live_processes() {
        if shortfall == 0 {
            break;
        }
        let mut st = p.lock();
        let mut evicted = Vec::new();
        for entry in st.bos.values() {
            if shortfall == 0 {
                break;
            }
            if Arc::ptr_eq(&entry.bo.node, node) && entry.bo.evict_from_vram() {
                shortfall = shortfall.saturating_sub(entry.bo.size);
                evicted.push(Arc::downgrade(&entry.bo));
            }
        }
        if evicted.is_empty() {
            continue;
        }
        log::debug!(target: crate::layer::TTM, "gpu {:#x}: {} buffer(s) of pasid {:#x} evicted from VRAM", node.gpu_id, evicted.len(), p.pasid);
        st.eviction.bos.extend(evicted);
        if st.eviction.restore_at.is_some() {
            // Already evicted: the pending restore brings these back too.
            continue;
        }
        // The eviction fence signalled: kfd_process_evict_queues with the TTM trigger.
        for pdd in &st.pdds {
            smi::queue_eviction(&pdd.node, p.owner_pid, smi::EvictionTrigger::Ttm);
            if let Err(e) = pdd.node.dqm().evict_process(&pdd.node.gpu, p.pasid) {
                log::debug!(target: crate::layer::TTM, "evicting pasid {:#x} on gpu {:#x}: {e}", p.pasid, pdd.node.gpu_id);
            }
        }
        st.eviction.evictions += 1;
        let at = Instant::now() + model.config.process_restore_delay;
        st.eviction.restore_at = Some(at);
        model.restores.schedule(p.pasid, at);
    }
}

/// Runs the restores that are due; how many processes were looked at.
pub(crate) fn run_due_restores(model: &ModelInner) -> usize {
    let due = model.restores.take_due(Instant::now());
    for &pasid in &due {
        if let Some(p) = model.process(pasid) {
            restore(model, &p);
        }
    }
    due.len()
}

/// `restore_process_worker`: the evicted buffers back into VRAM, then the queues.
fn restore(model: &ModelInner, p: &ProcessInner) {
    let mut st = p.lock();
    if st.eviction.restore_at.is_none() {
        return;
    }
    let bos: Vec<Arc<Bo>> = st.eviction.bos.iter().filter_map(Weak::upgrade).collect();
    for node in &model.nodes {
        let need: u64 = bos
            .iter()
            .filter(|b| Arc::ptr_eq(&b.node, node) && b.is_evicted())
            .map(|b| b.size)
            .sum();
        let available = node.vram_available();
        if need > available {
            evict_graphics_buffers(node, need - available);
        }
    }
    let mut all_fit = true;
    for bo in &bos {
        all_fit &= bo.make_resident_in_vram().is_ok();
    }
    if !all_fit {
        // PROCESS_BACK_OFF_TIME_MS: try again later.
        st.eviction
            .bos
            .retain(|w| w.upgrade().is_some_and(|b| b.is_evicted()));
        let at = Instant::now() + model.config.process_restore_delay;
        st.eviction.restore_at = Some(at);
        model.restores.schedule(p.pasid, at);
        log::debug!(target: crate::layer::TTM, "pasid {:#x}: restore found VRAM full; retrying later", p.pasid);
        return;
    }
    st.eviction.bos.clear();
    st.eviction.restore_at = None;
    st.eviction.restores += 1;
    for pdd in &st.pdds {
        if let Err(e) = pdd
            .node
            .dqm()
            .restore_process(&pdd.node.gpu, p.pasid, pdd.pd_base)
        {
            log::debug!(target: crate::layer::TTM, "restoring pasid {:#x} on gpu {:#x}: {e}", p.pasid, pdd.node.gpu_id);
        }
        smi::queue_restore(&pdd.node, p.owner_pid, model.config.kernel);
    }
    log::debug!(target: crate::layer::TTM, "pasid {:#x}: buffers and queues restored", p.pasid);
}

/// TTM placing a new KFD VRAM buffer (`ttm_bo_validate` under amdkfd's allocation): KFD's
/// own limit leaves graphics buffers out, so when the shared VRAM account is full, idle
/// graphics buffers move to GTT, oldest first, to make room. `ENOMEM` when even that leaves too
/// little.
pub(crate) fn reserve_vram_for_kfd(node: &KfdNode, size: u64) -> KResult<()> {
    if node.reserve_vram(size).is_ok() {
        return Ok(());
    }
    evict_graphics_buffers(node, size.saturating_sub(node.vram_available()));
    node.reserve_vram(size)
}

/// Moves graphics VRAM buffers on `node` to GTT, oldest first, until `shortfall` bytes are
/// free or none is left in VRAM.
fn evict_graphics_buffers(node: &KfdNode, mut shortfall: u64) {
    let mut graphics = lock(&node.graphics_vram);
    graphics.retain(|w| w.strong_count() > 0);
    for bo in graphics.iter().filter_map(Weak::upgrade) {
        if shortfall == 0 {
            break;
        }
        if bo.evict_from_vram() {
            shortfall = shortfall.saturating_sub(bo.size);
            log::debug!(target: crate::layer::TTM, "gpu {:#x}: a graphics buffer of {:#x} bytes moved to GTT", node.gpu_id, bo.size);
        }
    }
}
