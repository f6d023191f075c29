//! `kfd_process_queue_manager`: the queue ioctls of one process — validation of the user's
//! arguments (facts §9.9, in the kernel's order), queue ids, the Linux 6.12 checks of the queue
//! buffers against the process's GPU VM, and the calls into each device's queue manager.

use crate::config::KernelVersion;
use crate::errno::{Errno, KResult};
use crate::hw::mem::{page_align, PAGE_SIZE};
use crate::process::{ProcessDevice, ProcessInner, ProcessState};
use crate::user::UserAccessExt;
use kfd_sys::*;
use mqd::{CuMask, QueueKind, QueueProperties, UpdateInfo};
use std::collections::BTreeMap;

/// Queue ids a process may hold (`KFD_MAX_NUM_OF_QUEUES_PER_PROCESS`).
pub const MAX_QUEUE_IDS: u32 = 1024;
/// Highest user address `access_ok` accepts (x86-64 `TASK_SIZE_MAX`).
pub const TASK_SIZE: u64 = 0x0000_7fff_ffff_f000;

/// The buffers a queue holds mapped (Linux 6.12 `queue_refcount`), by buffer handle.
#[derive(Debug, Default, Clone)]
struct HeldBuffers {
    ring: u64,
    others: Vec<u64>,
}

/// The queues of one process: id → index of the GPU it lives on.
#[derive(Debug, Default)]
pub struct Pqm {
    queues: BTreeMap<u32, usize>,
    /// Linux 6.12: queue id → the buffers its creation validated, which cannot be unmapped
    /// from that queue's GPU until the queue is destroyed.
    held: BTreeMap<u32, HeldBuffers>,
}

impl Pqm {
    /// Number of queues.
    pub fn len(&self) -> usize {
        self.queues.len()
    }

    /// No queues.
    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// Ids and device indices.
    pub fn iter(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        self.queues.iter().map(|(&q, &d)| (q, d))
    }

    /// Whether a live queue on GPU `dev` holds buffer `handle` (6.12: unmapping it is `EBUSY`).
    pub fn holds(&self, handle: u64, dev: usize) -> bool {
        self.held.iter().any(|(id, b)| {
            self.queues.get(id) == Some(&dev) && (b.ring == handle || b.others.contains(&handle))
        })
    }

    fn remove(&mut self, id: u32) {
        self.queues.remove(&id);
        self.held.remove(&id);
    }

    fn alloc_id(&self) -> KResult<u32> {
        (0..MAX_QUEUE_IDS)
            .find(|id| !self.queues.contains_key(id))
            .ok_or(Errno::ENOMEM)
    }
}

/// `access_ok(addr, size)`.
fn access_ok(addr: u64, size: u64) -> bool {
    addr.checked_add(size).is_some_and(|end| end <= TASK_SIZE)
}

/// `set_queue_properties_from_user`: the checks before anything is allocated.
fn properties_from_user(a: &kfd_ioctl_create_queue_args) -> KResult<QueueProperties> {
    if a.queue_percentage & 0xFF > KFD_MAX_QUEUE_PERCENTAGE {
        return Err(Errno::EINVAL);
    }
    if a.queue_priority > KFD_MAX_QUEUE_PRIORITY {
        return Err(Errno::EINVAL);
    }
    if a.ring_base_address != 0 && !access_ok(a.ring_base_address, 8) {
        return Err(Errno::EFAULT);
    }
    if a.ring_size != 0 && !a.ring_size.is_power_of_two() {
        return Err(Errno::EINVAL);
    }
    let ring_size = a.ring_size.max(KFD_MIN_QUEUE_RING_SIZE);
    if !access_ok(a.read_pointer_address, 4) || !access_ok(a.write_pointer_address, 4) {
        return Err(Errno::EFAULT);
    }
    if a.eop_buffer_address != 0 && !access_ok(a.eop_buffer_address, 4) {
        return Err(Errno::EFAULT);
    }
    if a.ctx_save_restore_address != 0 && !access_ok(a.ctx_save_restore_address, 4) {
        return Err(Errno::EFAULT);
    }
    let kind = mqd_kind(a.queue_type).ok_or(Errno::ENOTSUPP)?;
    Ok(QueueProperties {
        kind,
        ring_address: a.ring_base_address,
        ring_size,
        rptr_address: a.read_pointer_address,
        wptr_address: a.write_pointer_address,
        eop_address: a.eop_buffer_address,
        eop_size: u32::try_from(a.eop_buffer_size).unwrap_or(u32::MAX),
        ctx_save_address: a.ctx_save_restore_address,
        ctx_save_size: a.ctx_save_restore_size,
        ctl_stack_size: a.ctl_stack_size,
        priority: a.queue_priority,
        percentage: a.queue_percentage & 0xFF,
        sdma_engine_id: a.sdma_engine_id,
        ..Default::default()
    })
}

/// `kfd_queue_buffer_get`: the page of `addr` must start a GPU mapping of exactly `size` bytes.
/// The kernel compares in pages, so a size below one page (a 1 or 2 KiB ring) only needs the
/// mapping to start at that page, as does a size of 0.
/// Returns the handle of the buffer behind the mapping.
fn buffer_get(pdd: &ProcessDevice, addr: u64, size: u64) -> KResult<u64> {
    let vm = pdd.vm.read().unwrap_or_else(|e| e.into_inner());
    let page_size = PAGE_SIZE as u64;
    let page = addr & !(page_size - 1);
    let pages = size / page_size;
    // SVM ranges are not buffers: the kernel looks only at buffer mappings here.
    match vm
        .lookup(addr)
        .filter(|m| m.handle != crate::svm::SVM_MAPPING_HANDLE)
    {
        Some(m) if m.va == page && (pages == 0 || m.len.div_ceil(page_size) == pages) => {
            Ok(m.handle)
        }
        Some(m) => {
            log::debug!(
                target: crate::layer::PQM,
                "buffer {addr:#x}: expected a mapping of {size:#x} at {page:#x}, found {:#x}+{:#x}",
                m.va,
                m.len
            );
            Err(Errno::EINVAL)
        }
        None => {
            log::debug!(target: crate::layer::PQM, "buffer {addr:#x} is not mapped on the GPU");
            Err(Errno::EINVAL)
        }
    }
}

/// `kfd_queue_acquire_buffers` (Linux 6.12): every queue buffer must be what the topology
/// says, mapped where the queue says. Returns the buffers the queue now holds.
fn acquire_buffers(
    pdd: &ProcessDevice,
    props: &QueueProperties,
    cwsr_enable: bool,
    svm_ok: impl Fn(u64, u64) -> bool,
) -> KResult<HeldBuffers> {
    let wptr = buffer_get(pdd, props.wptr_address, PAGE_SIZE as u64)?;
    let rptr = buffer_get(pdd, props.rptr_address, PAGE_SIZE as u64)?;
    let ring = buffer_get(pdd, props.ring_address, u64::from(props.ring_size))?;
    let mut held = HeldBuffers {
        ring,
        others: vec![wptr, rptr],
    };
    if !props.kind.is_compute() {
        return Ok(held);
    }
    let sizes = pdd.node.queue_sizes;
    if props.eop_address != 0 {
        if props.eop_size < sizes.eop_buffer_size {
            log::debug!(target: crate::layer::PQM, "EOP buffer {:#x} smaller than {:#x}", props.eop_size, sizes.eop_buffer_size);
            return Err(Errno::EINVAL);
        }
        held.others.push(buffer_get(
            pdd,
            props.eop_address,
            u64::from(props.eop_size),
        )?);
    }
    if !cwsr_enable {
        return Ok(held);
    }
    if props.ctl_stack_size != sizes.ctl_stack_size {
        log::debug!(target: crate::layer::PQM, "ctl_stack_size {:#x} != {:#x}", props.ctl_stack_size, sizes.ctl_stack_size);
        return Err(Errno::EINVAL);
    }
    if props.ctx_save_size < sizes.cwsr_size {
        log::debug!(target: crate::layer::PQM, "CWSR area {:#x} smaller than {:#x}", props.ctx_save_size, sizes.cwsr_size);
        return Err(Errno::EINVAL);
    }
    let xcc = pdd.node.topo.properties.num_xcc.max(1);
    let total = page_align((u64::from(sizes.cwsr_size) + u64::from(sizes.debug_memory_size)) * xcc)
        .ok_or(Errno::EINVAL)?;
    // The CWSR area may be an SVM range mapped on this GPU with GPU_ALWAYS_MAPPED (1.11).
    if !svm_ok(props.ctx_save_address, total) {
        held.others
            .push(buffer_get(pdd, props.ctx_save_address, total)?);
    }
    Ok(held)
}

/// `AMDKFD_IOC_CREATE_QUEUE`.
pub(crate) fn create_queue(p: &ProcessInner, a: &mut kfd_ioctl_create_queue_args) -> KResult<i32> {
    log::debug!(
        target: crate::layer::PQM,
        "pasid {:#x}: create queue type {} on gpu {:#x}, ring {:#x}+{:#x}",
        p.pasid,
        a.queue_type,
        a.gpu_id,
        a.ring_base_address,
        a.ring_size
    );
    let props = properties_from_user(a)?;
    let mut st = p.lock();
    let dev = st
        .pdds
        .iter()
        .position(|d| d.node.gpu_id == a.gpu_id)
        .ok_or(Errno::EINVAL)?;
    // Which CWSR spans SVM ranges cover, decided before the state is split into its parts.
    let ctx_in_svm = {
        let sizes = st.pdds[dev].node.queue_sizes;
        let xcc = st.pdds[dev].node.topo.properties.num_xcc.max(1);
        page_align((u64::from(sizes.cwsr_size) + u64::from(sizes.debug_memory_size)) * xcc)
            .is_some_and(|total| {
                crate::svm::queue_buffer_in_svm(&st, dev, props.ctx_save_address, total)
            })
    };
    let ProcessState {
        pdds,
        pqm,
        xnack_enabled,
        ..
    } = &mut *st;
    let pdd = &mut pdds[dev];
    pdd.bind().map_err(|_| Errno::ESRCH)?;
    let node = pdd.node.clone();
    if a.queue_type == KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID {
        let max =
            node.topo.properties.num_sdma_engines + node.topo.properties.num_sdma_xgmi_engines;
        if u64::from(a.sdma_engine_id) >= max {
            return Err(Errno::EINVAL);
        }
    }
    pdd.doorbell_slice()?;
    let held = if p.model.config.kernel == KernelVersion::Linux6_12 {
        Some(acquire_buffers(
            pdd,
            &props,
            p.model.config.cwsr_enable,
            |_, _| ctx_in_svm,
        )?)
    } else {
        None
    };
    let id = pqm.alloc_id()?;
    let offset = {
        let mut dqm = node.dqm();
        dqm.create_queue(
            &node.gpu,
            pdd,
            p.pasid,
            id,
            a.queue_type,
            props,
            *xnack_enabled,
        )?
    };
    pqm.queues.insert(id, dev);
    if let Some(held) = held {
        pqm.held.insert(id, held);
    }
    a.queue_id = id;
    a.doorbell_offset = KfdMmapOffset::doorbell(a.gpu_id, offset).encode();
    log::debug!(target: crate::layer::PQM, "pasid {:#x}: queue {id} created, doorbell offset {:#x}", p.pasid, a.doorbell_offset);
    Ok(0)
}

/// `AMDKFD_IOC_DESTROY_QUEUE`: `EINVAL` for an unknown id; `ETIME`/`EIO` from the scheduler
/// still free the queue.
pub(crate) fn destroy_queue(p: &ProcessInner, id: u32) -> KResult<i32> {
    let mut st = p.lock();
    let dev = *st.pqm.queues.get(&id).ok_or(Errno::EINVAL)?;
    let pdd = &mut st.pdds[dev];
    let node = pdd.node.clone();
    let result = node.dqm().destroy_queue(&node.gpu, pdd, p.pasid, id);
    match result {
        Ok(()) | Err(Errno::ETIME) | Err(Errno::EIO) => st.pqm.remove(id),
        Err(_) => {}
    }
    result.map(|_| 0)
}

/// `AMDKFD_IOC_UPDATE_QUEUE`.
pub(crate) fn update_queue(p: &ProcessInner, a: &mut kfd_ioctl_update_queue_args) -> KResult<i32> {
    if a.queue_percentage & 0xFF > KFD_MAX_QUEUE_PERCENTAGE
        || a.queue_priority > KFD_MAX_QUEUE_PRIORITY
    {
        return Err(Errno::EINVAL);
    }
    if a.ring_base_address != 0 && !access_ok(a.ring_base_address, 8) {
        return Err(Errno::EFAULT);
    }
    if a.ring_size != 0 && !a.ring_size.is_power_of_two() {
        return Err(Errno::EINVAL);
    }
    let mut st = p.lock();
    let dev = *st.pqm.queues.get(&a.queue_id).ok_or(Errno::EFAULT)?;
    let pdd = &st.pdds[dev];
    let node = pdd.node.clone();
    let mut dqm = node.dqm();
    let old = dqm
        .queue(p.pasid, a.queue_id)
        .map(|q| q.props)
        .ok_or(Errno::EFAULT)?;
    // 6.12: a new ring must be a whole mapping; the queue then holds it instead of the old one.
    let new_ring = if p.model.config.kernel == KernelVersion::Linux6_12
        && a.ring_base_address != 0
        && a.ring_base_address != old.ring_address
    {
        Some(buffer_get(
            pdd,
            a.ring_base_address,
            u64::from(a.ring_size),
        )?)
    } else {
        None
    };
    let (addr, size, pct, prio) = (
        a.ring_base_address,
        a.ring_size,
        a.queue_percentage & 0xFF,
        a.queue_priority,
    );
    dqm.update_queue(
        &node.gpu,
        p.pasid,
        a.queue_id,
        |q| {
            q.props.ring_address = addr;
            q.props.ring_size = size;
            q.props.percentage = pct;
            q.props.priority = prio;
        },
        None,
    )?;
    drop(dqm);
    if let (Some(ring), Some(held)) = (new_ring, st.pqm.held.get_mut(&a.queue_id)) {
        held.ring = ring;
    }
    Ok(0)
}

/// `AMDKFD_IOC_SET_CU_MASK`.
pub(crate) fn set_cu_mask(p: &ProcessInner, a: &mut kfd_ioctl_set_cu_mask_args) -> KResult<i32> {
    if a.num_cu_mask == 0 || a.num_cu_mask % 32 != 0 {
        return Err(Errno::EINVAL);
    }
    // Bits beyond 1024 are dropped, as the kernel does.
    let bits = a.num_cu_mask.min(1024);
    let words: Vec<u32> = p.user.read_array(a.cu_mask_ptr, (bits / 32) as usize)?;
    let mask = CuMask::new(bits, &words).map_err(|_| Errno::EINVAL)?;
    let st = p.lock();
    let dev = *st.pqm.queues.get(&a.queue_id).ok_or(Errno::EFAULT)?;
    let node = st.pdds[dev].node.clone();
    let mut dqm = node.dqm();
    if dqm.cfg.mqd.shader_layout.is_none() {
        log::debug!(target: crate::layer::PQM, "no shader layout for CU masks on this part");
        return Err(Errno::EINVAL);
    }
    let gws = dqm.queue(p.pasid, a.queue_id).is_some_and(|q| q.is_gws);
    dqm.update_queue(
        &node.gpu,
        p.pasid,
        a.queue_id,
        |q| q.cu_mask = Some(mask),
        Some(UpdateInfo {
            cu_mask: Some(mask),
            gws,
        }),
    )?;
    Ok(0)
}

/// `AMDKFD_IOC_GET_QUEUE_WAVE_STATE`: only for an inactive compute queue with CWSR. No wave is
/// ever saved in the model, so the used sizes are 0.
pub(crate) fn get_wave_state(
    p: &ProcessInner,
    a: &mut kfd_ioctl_get_queue_wave_state_args,
) -> KResult<i32> {
    let st = p.lock();
    let dev = *st.pqm.queues.get(&a.queue_id).ok_or(Errno::EFAULT)?;
    let node = st.pdds[dev].node.clone();
    let dqm = node.dqm();
    let q = dqm.queue(p.pasid, a.queue_id).ok_or(Errno::EFAULT)?;
    if !q.props.kind.is_compute() || q.is_active || !p.model.config.cwsr_enable {
        return Err(Errno::EINVAL);
    }
    a.ctl_stack_used_size = 0;
    a.save_area_used_size = 0;
    Ok(0)
}

/// `AMDKFD_IOC_ALLOC_QUEUE_GWS`: one GWS queue per process on each device (amdkfd counts GWS
/// in the process's per-device data): EBUSY for a second one there, EINVAL to release GWS
/// the device's queues do not hold.
pub(crate) fn alloc_gws(p: &ProcessInner, a: &mut kfd_ioctl_alloc_queue_gws_args) -> KResult<i32> {
    let st = p.lock();
    let dev = *st.pqm.queues.get(&a.queue_id).ok_or(Errno::EINVAL)?;
    let want = a.num_gws > 0;
    let node = st.pdds[dev].node.clone();
    let mut dqm = node.dqm();
    if !dqm.cfg.has_gws {
        return Err(Errno::ENODEV);
    }
    let has = st
        .pqm
        .iter()
        .filter(|&(_, d)| d == dev)
        .any(|(qid, _)| dqm.queue(p.pasid, qid).is_some_and(|q| q.is_gws));
    if want && has {
        return Err(Errno::EBUSY);
    }
    if !want && !has {
        return Err(Errno::EINVAL);
    }
    let num_gws = if want {
        node.topo.properties.num_gws as u32
    } else {
        0
    };
    dqm.set_process_gws(p.pasid, num_gws)?;
    dqm.update_queue(
        &node.gpu,
        p.pasid,
        a.queue_id,
        |q| q.is_gws = want,
        Some(UpdateInfo {
            cu_mask: None,
            gws: want,
        }),
    )?;
    a.first_gws = 0;
    Ok(0)
}

/// Process termination: every device's queue manager drops the process.
pub(crate) fn terminate(p: &ProcessInner, st: &mut ProcessState) {
    for pdd in &st.pdds {
        let node = pdd.node.clone();
        let result = node.dqm().process_termination(&node.gpu, p.pasid);
        if let Err(e) = result {
            log::warn!(target: crate::layer::PQM, "pasid {:#x}: termination on gpu {:#x}: {e}", p.pasid, node.gpu_id);
        }
    }
    st.pqm.queues.clear();
    st.pqm.held.clear();
}

/// The queue kind an ioctl queue type builds an MQD for.
pub fn mqd_kind(ioctl_type: u32) -> Option<QueueKind> {
    match ioctl_type {
        KFD_IOC_QUEUE_TYPE_COMPUTE => Some(QueueKind::ComputePm4),
        KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => Some(QueueKind::ComputeAql),
        KFD_IOC_QUEUE_TYPE_SDMA
        | KFD_IOC_QUEUE_TYPE_SDMA_XGMI
        | KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID => Some(QueueKind::Sdma),
        _ => None,
    }
}
