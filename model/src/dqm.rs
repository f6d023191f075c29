//! `kfd_device_queue_manager` with the hardware scheduler (`cpsch`, facts §9).
//!
//! Every process that has opened the device has a [`Qpd`]; it is *registered* (in
//! `dqm->queues`, prepended, so the most recent comes first in the runlist) while it has
//! queues. Every change of what should run is an `execute`: UNMAP_QUEUES + QUERY_STATUS on the
//! HIQ, a wait for the preemption fence (10 → 100) with the configured timeout, then a new
//! runlist (MAP_PROCESS / MAP_QUEUES) and RUN_LIST. A fence that never arrives is a hung
//! scheduler: `ETIME`, then `EIO` for every later operation until the GPU is reset.

use crate::config::{KernelVersion, SchedPolicy};
use crate::device::Gpu;
use crate::errno::{Errno, KResult};
use crate::hw::doorbell::DoorbellBar;
use crate::hw::gart::GartAlloc;
use crate::kernel_queue::KernelQueue;
use crate::packet_manager::{
    PacketManager, RunlistCounts, UnmapFilter, KFD_FENCE_COMPLETED, KFD_FENCE_INIT,
};
use crate::process::ProcessDevice;
use kfd_sys::*;
use mqd::{ComputeDescriptor, ComputeMqd, CuMask, MqdConfig, QueueProperties, SdmaMqd, UpdateInfo};
use std::time::{Duration, Instant};

/// Where a queue runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueClass {
    /// A compute queue (PM4 or AQL).
    Compute,
    /// An SDMA queue.
    Sdma {
        /// Engine index (xGMI engines after the PCIe ones).
        engine: u32,
        /// Queue within the engine.
        queue: u32,
        /// The driver's SDMA id (bit in the PCIe or xGMI bitmap).
        sdma_id: u32,
        /// Allocated from the xGMI engines.
        xgmi: bool,
    },
}

/// A user queue (`struct queue`).
#[derive(Debug, Clone)]
pub struct Queue {
    /// Queue id within the process.
    pub id: u32,
    /// `KFD_IOC_QUEUE_TYPE_*` it was created with.
    pub ioctl_type: u32,
    /// Compute or SDMA.
    pub class: QueueClass,
    /// Properties the MQD is built from.
    pub props: QueueProperties,
    /// Doorbell id within the process slice.
    pub doorbell_id: u32,
    /// Doorbell dword index in the BAR.
    pub doorbell_off: u32,
    /// GART memory of the MQD.
    pub mqd_mem: GartAlloc,
    /// Mapped by the runlist.
    pub is_active: bool,
    /// Owns GWS.
    pub is_gws: bool,
    /// The CU mask last set.
    pub cu_mask: Option<CuMask>,
}

/// Per-process scheduling data of one device (`qcm_process_device`).
#[derive(Debug, Clone)]
pub struct Qpd {
    /// PASID.
    pub pasid: u32,
    /// In `dqm->queues` (has queues).
    pub registered: bool,
    /// Page-directory base of the process VM.
    pub page_table_base: u64,
    /// `SH_MEM_CONFIG`.
    pub sh_mem_config: u32,
    /// `SH_MEM_BASES`.
    pub sh_mem_bases: u32,
    /// Trap handler base (the CWSR trap handler when CWSR is on).
    pub tba_addr: u64,
    /// Trap memory.
    pub tma_addr: u64,
    /// All user queues of the process on the device.
    pub queue_count: u32,
    /// Eviction refcount.
    pub evicted: u32,
    /// A debug (DIQ) queue exists.
    pub is_debug: bool,
    /// GWS entries of the process.
    pub num_gws: u32,
    /// A GWS queue is mapped.
    pub mapped_gws_queue: bool,
    /// A queue of the process was reset after a failed preemption.
    pub has_reset_queue: bool,
    /// User queues, most recent first.
    pub queues: Vec<Queue>,
}

/// The counters of facts §9.2, for inspection and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DqmCounters {
    /// Registered processes.
    pub processes_count: u32,
    /// Active CP + SDMA queues.
    pub active_queue_count: u32,
    /// Active compute queues.
    pub active_cp_queue_count: u32,
    /// Active GWS queues.
    pub gws_queue_count: u32,
    /// All queues (inactive included).
    pub total_queue_count: u32,
    /// Scheduler running.
    pub sched_running: bool,
    /// A runlist is mapped.
    pub active_runlist: bool,
    /// The scheduler hung; `EIO` until reset.
    pub is_hws_hang: bool,
}

/// Static facts about the device the DQM manages.
#[derive(Debug, Clone)]
pub struct DqmConfig {
    /// Scheduler policy.
    pub policy: SchedPolicy,
    /// Kernel behaviour.
    pub kernel: KernelVersion,
    /// Preemption fence timeout.
    pub preemption_timeout: Duration,
    /// Device queue limit.
    pub max_queues_per_device: u32,
    /// Per-process queue limit.
    pub max_queues_per_process: u32,
    /// KFD VMIDs.
    pub vmid_mask: u16,
    /// HQD slots given to the scheduler (`queue_mask` of SET_RESOURCES).
    pub queue_mask: u64,
    /// PCIe SDMA engines.
    pub sdma_engines: u32,
    /// xGMI SDMA engines.
    pub xgmi_sdma_engines: u32,
    /// User queues per SDMA engine.
    pub sdma_queues_per_engine: u32,
    /// CWSR on.
    pub cwsr_enable: bool,
    /// GWS available.
    pub has_gws: bool,
    /// `SH_MEM_CONFIG` without the retry-disable bit.
    pub sh_mem_config_base: u32,
    /// The part changes XNACK per process (GC 9.4.2): retry-disable follows the process.
    pub per_process_xnack: bool,
    /// MQD builder configuration.
    pub mqd: MqdConfig,
}

/// `SH_MEM_BASES` for the gfx9+ apertures every process gets (LDS at
/// [`LDS_APERTURE_BASE`](crate::process::LDS_APERTURE_BASE), scratch at
/// [`SCRATCH_APERTURE_BASE`](crate::process::SCRATCH_APERTURE_BASE)).
pub const SH_MEM_BASES_64: u32 = pm4::regs::sh_mem::bases(
    crate::process::LDS_APERTURE_BASE,
    crate::process::SCRATCH_APERTURE_BASE,
);
/// Where KFD maps its CWSR trap handler (`SVM_CWSR_BASE`).
pub const CWSR_TBA_ADDR: u64 = 0x2000;
/// Size of the trap-handler pages: code, then the trap memory (`KFD_CWSR_TBA_TMA_SIZE`).
pub const CWSR_TBA_TMA_SIZE: u64 = 2 * crate::hw::mem::PAGE_SIZE as u64;
/// Offset of the trap memory from the trap handler (`KFD_CWSR_TMA_OFFSET`).
pub const CWSR_TMA_OFFSET: u64 = 4096 + 2048;

/// The device queue manager of one GPU.
#[derive(Debug)]
pub struct Dqm {
    /// Static configuration.
    pub cfg: DqmConfig,
    /// Every process with a device context, registered or not; registered ones first in
    /// registration order (most recent first).
    pub qpds: Vec<Qpd>,
    active_queue_count: u32,
    active_cp_queue_count: u32,
    gws_queue_count: u32,
    total_queue_count: u32,
    sched_running: bool,
    sched_halt: bool,
    active_runlist: bool,
    is_hws_hang: bool,
    sdma_free: Vec<bool>,
    xgmi_free: Vec<bool>,
    fence: Option<GartAlloc>,
    kq: Option<KernelQueue>,
    /// The packet manager.
    pub pm: PacketManager,
}

impl Dqm {
    /// A stopped DQM.
    pub fn new(cfg: DqmConfig, pm: PacketManager) -> Self {
        let n = (cfg.sdma_engines * cfg.sdma_queues_per_engine) as usize;
        let x = (cfg.xgmi_sdma_engines * cfg.sdma_queues_per_engine) as usize;
        Dqm {
            cfg,
            qpds: Vec::new(),
            active_queue_count: 0,
            active_cp_queue_count: 0,
            gws_queue_count: 0,
            total_queue_count: 0,
            sched_running: false,
            sched_halt: false,
            active_runlist: false,
            is_hws_hang: false,
            sdma_free: vec![true; n],
            xgmi_free: vec![true; x],
            fence: None,
            kq: None,
            pm,
        }
    }

    /// The counters.
    pub fn counters(&self) -> DqmCounters {
        DqmCounters {
            processes_count: self.processes_count(),
            active_queue_count: self.active_queue_count,
            active_cp_queue_count: self.active_cp_queue_count,
            gws_queue_count: self.gws_queue_count,
            total_queue_count: self.total_queue_count,
            sched_running: self.sched_running,
            active_runlist: self.active_runlist,
            is_hws_hang: self.is_hws_hang,
        }
    }

    fn processes_count(&self) -> u32 {
        self.qpds.iter().filter(|q| q.registered).count() as u32
    }

    fn hqd_count(&self) -> u32 {
        self.cfg.queue_mask.count_ones()
    }

    fn qpd(&mut self, pasid: u32) -> KResult<&mut Qpd> {
        self.qpds
            .iter_mut()
            .find(|q| q.pasid == pasid)
            .ok_or(Errno::EINVAL)
    }

    /// The GART address of the preemption fence.
    pub fn fence_addr(&self) -> Option<u64> {
        self.fence.map(|f| f.gpu_addr)
    }

    /// The GART address of the HIQ MQD.
    pub fn hiq_mqd_addr(&self) -> Option<u64> {
        self.kq.as_ref().map(KernelQueue::mqd_addr)
    }

    // --- bring-up ---------------------------------------------------------------------------

    /// `start_cpsch`: HIQ, SET_RESOURCES, fence, scheduler running.
    pub fn start(&mut self, gpu: &Gpu) -> KResult<()> {
        let mut kq = KernelQueue::new(gpu, &self.cfg.mqd)?;
        self.pm
            .send_set_resources(&mut kq, gpu, self.cfg.vmid_mask, self.cfg.queue_mask)?;
        self.kq = Some(kq);
        self.fence = Some(gpu.gart.alloc(8, 8)?);
        self.sched_running = true;
        self.sched_halt = false;
        log::debug!(target: crate::layer::DQM, "scheduler running: {} HQDs, VMIDs {:#06x}", self.hqd_count(), self.cfg.vmid_mask);
        self.execute(gpu, UnmapFilter::DynamicQueues)
    }

    /// A GPU reset: the firmware restarts, the HIQ is reloaded, SET_RESOURCES is sent again
    /// and the active queues are mapped anew. Clears the hang state. Returns the PASIDs of
    /// processes with queues on the device (they get a hardware-exception event).
    pub fn reset(&mut self, gpu: &Gpu) -> KResult<Vec<u32>> {
        gpu.hws.reset(&gpu.gart);
        if let Some(kq) = self.kq.take() {
            kq.free(gpu);
        }
        if let Some(f) = self.fence.take() {
            gpu.gart.free(f);
        }
        self.pm.release_ib(gpu);
        self.active_runlist = false;
        self.is_hws_hang = false;
        for qpd in &mut self.qpds {
            qpd.has_reset_queue = false;
        }
        log::warn!(target: crate::layer::DQM, "GPU reset: restarting the scheduler");
        self.start(gpu)?;
        // kfd_signal_reset_event: every process with a context on the device hears of it.
        Ok(self.qpds.iter().map(|q| q.pasid).collect())
    }

    // --- processes --------------------------------------------------------------------------

    /// A process opened the device (its `qpd` exists from now on).
    pub fn attach_process(&mut self, pasid: u32) {
        self.qpds.push(Qpd {
            pasid,
            registered: false,
            page_table_base: 0,
            sh_mem_config: 0,
            sh_mem_bases: 0,
            tba_addr: 0,
            tma_addr: 0,
            queue_count: 0,
            evicted: 0,
            is_debug: false,
            num_gws: 0,
            mapped_gws_queue: false,
            has_reset_queue: false,
            queues: Vec::new(),
        });
    }

    /// `register_process`: first queue of the process on this device.
    fn register_process(&mut self, pdd: &ProcessDevice, pasid: u32, xnack: bool) -> KResult<()> {
        let cfg = self.cfg.clone();
        let i = self
            .qpds
            .iter()
            .position(|q| q.pasid == pasid)
            .ok_or(Errno::EINVAL)?;
        let mut qpd = self.qpds.remove(i);
        qpd.registered = true;
        qpd.page_table_base = pdd.pd_base;
        qpd.sh_mem_bases = SH_MEM_BASES_64;
        qpd.sh_mem_config = cfg.sh_mem_config_base;
        if !(cfg.per_process_xnack && xnack) {
            qpd.sh_mem_config |= pm4::regs::sh_mem::CONFIG_RETRY_DISABLE;
        }
        if cfg.cwsr_enable {
            qpd.tba_addr = CWSR_TBA_ADDR;
            qpd.tma_addr = CWSR_TBA_ADDR + CWSR_TMA_OFFSET;
        } else {
            qpd.tba_addr = pdd.tba_addr;
            qpd.tma_addr = pdd.tma_addr;
        }
        // dqm->queues is a prepend list: the newest process runs first.
        self.qpds.insert(0, qpd);
        log::debug!(target: crate::layer::DQM, "register pasid {pasid:#x}: {} process(es)", self.processes_count());
        Ok(())
    }

    /// `unregister_process`: the last queue of the process on this device is gone.
    fn unregister_process(&mut self, pasid: u32) {
        if let Some(i) = self.qpds.iter().position(|q| q.pasid == pasid) {
            let mut qpd = self.qpds.remove(i);
            qpd.registered = false;
            self.qpds.push(qpd);
            log::debug!(target: crate::layer::DQM, "unregister pasid {pasid:#x}: {} process(es)", self.processes_count());
        }
    }

    /// Whether the process is registered.
    pub fn is_registered(&self, pasid: u32) -> bool {
        self.qpds.iter().any(|q| q.pasid == pasid && q.registered)
    }

    // --- queue creation and destruction ------------------------------------------------------

    /// `create_queue_cpsch` (with `pqm_create_queue`'s registration and policy checks).
    /// Returns the doorbell's byte offset inside the process slice.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn create_queue(
        &mut self,
        gpu: &Gpu,
        pdd: &mut ProcessDevice,
        pasid: u32,
        id: u32,
        ioctl_type: u32,
        mut props: QueueProperties,
        xnack: bool,
    ) -> KResult<u64> {
        let registered_before = self.is_registered(pasid);
        if self.qpd(pasid)?.queue_count >= self.cfg.max_queues_per_process {
            return Err(Errno::ENOSPC);
        }
        if !registered_before {
            self.register_process(pdd, pasid, xnack)?;
        }
        let result = self.create_queue_inner(gpu, pdd, pasid, id, ioctl_type, &mut props);
        if result.is_err()
            && !registered_before
            && self.qpd(pasid).is_ok_and(|q| q.queues.is_empty())
        {
            self.unregister_process(pasid);
        }
        result
    }

    fn create_queue_inner(
        &mut self,
        gpu: &Gpu,
        pdd: &mut ProcessDevice,
        pasid: u32,
        id: u32,
        ioctl_type: u32,
        props: &mut QueueProperties,
    ) -> KResult<u64> {
        let compute = matches!(
            ioctl_type,
            KFD_IOC_QUEUE_TYPE_COMPUTE | KFD_IOC_QUEUE_TYPE_COMPUTE_AQL
        );
        if compute
            && self.cfg.policy == SchedPolicy::HwsNoOversubscription
            && (self.processes_count() >= self.cfg.vmid_mask.count_ones()
                || self.active_queue_count >= self.hqd_count())
        {
            log::debug!(target: crate::layer::DQM, "over-subscription is not allowed with sched_policy 1");
            return Err(Errno::EPERM);
        }
        if self.total_queue_count >= self.cfg.max_queues_per_device {
            log::warn!(target: crate::layer::DQM, "can't create a new queue: {} queues already exist", self.total_queue_count);
            return Err(Errno::EPERM);
        }
        let class = if compute {
            QueueClass::Compute
        } else {
            self.allocate_sdma(ioctl_type, props.sdma_engine_id)?
        };
        // CP queues take a free id from the bitmap; SDMA ids are static and live in the
        // range the bitmap reserves for them.
        let doorbell = match class {
            QueueClass::Compute => pdd.doorbell_ids.alloc_cp(),
            QueueClass::Sdma { engine, queue, .. } => {
                Ok(gpu.doorbells.layout.sdma_id(engine, queue))
            }
        };
        let doorbell_id = match doorbell {
            Ok(d) => d,
            Err(e) => {
                self.deallocate_sdma(class);
                return Err(e);
            }
        };
        let undo = |dqm: &mut Dqm, pdd: &mut ProcessDevice| {
            if class == QueueClass::Compute {
                pdd.doorbell_ids.release(doorbell_id);
            }
            dqm.deallocate_sdma(class);
        };
        let slice = match pdd.doorbell_slice() {
            Ok(s) => s,
            Err(e) => {
                undo(self, pdd);
                return Err(e);
            }
        };
        let doorbell_off = DoorbellBar::bar_dword_index(slice, doorbell_id);
        // A new queue's doorbell reads 0 until the client writes it (the engines take the
        // doorbell as a write pointer; a value left by an earlier queue must not leak in).
        gpu.doorbells.write(slice, doorbell_id, 0);
        props.doorbell_offset = doorbell_off;
        if let QueueClass::Sdma { engine, queue, .. } = class {
            props.sdma_engine_id = engine;
            props.sdma_queue_id = queue;
        }
        let evicted = self.qpd(pasid)?.evicted > 0;
        props.is_evicted = evicted;
        let mqd_size = if compute {
            2048
        } else {
            SdmaMqd::size(self.cfg.mqd.generation().map_err(|_| Errno::EINVAL)?) as u64
        };
        let mqd_mem = match gpu.gart.alloc(mqd_size, 256) {
            Ok(m) => m,
            Err(e) => {
                undo(self, pdd);
                return Err(e);
            }
        };
        let bytes = if compute {
            ComputeMqd::init(&self.cfg.mqd, props, mqd_mem.gpu_addr).map(|m| m.as_bytes().to_vec())
        } else {
            SdmaMqd::init(&self.cfg.mqd, props).map(|m| m.as_bytes().to_vec())
        };
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => {
                log::debug!(target: crate::layer::DQM, "init_mqd: {e}");
                free_mqd(gpu, mqd_mem);
                undo(self, pdd);
                return Err(Errno::EINVAL);
            }
        };
        let _ = gpu.gart.write(mqd_mem.gpu_addr, &bytes);
        let q = Queue {
            id,
            ioctl_type,
            class,
            props: *props,
            doorbell_id,
            doorbell_off,
            mqd_mem,
            is_active: props.is_active(),
            is_gws: false,
            cu_mask: None,
        };
        let active = q.is_active;
        let qpd = self.qpd(pasid)?;
        qpd.queues.insert(0, q);
        qpd.queue_count += 1;
        log::debug!(
            target: crate::layer::DQM,
            "pasid {pasid:#x} queue {id}: {class:?}, doorbell {doorbell_id} (BAR dw {doorbell_off:#x}), MQD at {:#x}, {}",
            mqd_mem.gpu_addr,
            if active { "active" } else { "inactive" }
        );
        if active {
            self.increment_queue_count(class, false);
            if let Err(e) = self.execute_new_queue(gpu) {
                // cleanup_queue
                let qpd = self.qpd(pasid)?;
                qpd.queues.retain(|q| q.id != id);
                qpd.queue_count -= 1;
                self.decrement_queue_count(class, false);
                free_mqd(gpu, mqd_mem);
                undo(self, pdd);
                return Err(e);
            }
        }
        self.total_queue_count += 1;
        Ok((u64::from(doorbell_off) * 4) & (KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15 - 1))
    }

    /// `destroy_queue_cpsch`. The queue is gone afterwards even when the scheduler did not
    /// answer (`ETIME`/`EIO` are still returned).
    pub(crate) fn destroy_queue(
        &mut self,
        gpu: &Gpu,
        pdd: &mut ProcessDevice,
        pasid: u32,
        id: u32,
    ) -> KResult<()> {
        let qpd = self.qpd(pasid)?;
        if qpd.is_debug {
            return Err(Errno::EBUSY);
        }
        let i = qpd
            .queues
            .iter()
            .position(|q| q.id == id)
            .ok_or(Errno::EINVAL)?;
        let q = qpd.queues[i].clone();
        if q.class == QueueClass::Compute {
            pdd.doorbell_ids.release(q.doorbell_id);
        }
        self.deallocate_sdma(q.class);
        let mut result = Ok(());
        if q.is_active {
            self.decrement_queue_count(q.class, q.is_gws);
            if let Ok(qpd) = self.qpd(pasid) {
                if let Some(qq) = qpd.queues.iter_mut().find(|x| x.id == id) {
                    qq.is_active = false;
                }
            }
            // The runlist still counts the queue in num_queues: it leaves the list after.
            result = self.execute(gpu, UnmapFilter::DynamicQueues);
        }
        let qpd = self.qpd(pasid)?;
        qpd.queues.retain(|x| x.id != id);
        qpd.queue_count -= 1;
        if q.is_gws {
            qpd.num_gws = 0;
        }
        let now_empty = qpd.queues.is_empty();
        self.total_queue_count -= 1;
        free_mqd(gpu, q.mqd_mem);
        if now_empty {
            self.unregister_process(pasid);
        }
        log::debug!(target: crate::layer::DQM, "pasid {pasid:#x} queue {id} destroyed");
        result
    }

    // --- updates ----------------------------------------------------------------------------

    /// `update_queue` (UPDATE_QUEUE, SET_CU_MASK, GWS): unmap, update the MQD, fix the counters,
    /// map. `change` edits the queue's properties; `info` is what `update_mqd` also gets.
    pub fn update_queue(
        &mut self,
        gpu: &Gpu,
        pasid: u32,
        id: u32,
        change: impl FnOnce(&mut Queue),
        info: Option<UpdateInfo>,
    ) -> KResult<()> {
        let qpd = self.qpd(pasid)?;
        let has_reset = qpd.has_reset_queue;
        let i = qpd
            .queues
            .iter()
            .position(|q| q.id == id)
            .ok_or(Errno::EFAULT)?;
        let prev = qpd.queues[i].clone();
        self.unmap(gpu, UnmapFilter::DynamicQueues, false)?;
        if has_reset {
            return Err(Errno::EACCES);
        }
        let cfg = self.cfg.mqd;
        let qpd = self.qpd(pasid)?;
        let q = &mut qpd.queues[i];
        change(q);
        // update_mqd on the MQD in memory (the firmware's changes included).
        let size = if q.class == QueueClass::Compute {
            2048
        } else {
            q.mqd_mem.size as usize
        };
        let mut bytes = vec![0u8; size];
        gpu.gart
            .read(q.mqd_mem.gpu_addr, &mut bytes)
            .ok_or(Errno::EFAULT)?;
        let gen = cfg.generation().map_err(|_| Errno::EINVAL)?;
        let updated = if q.class == QueueClass::Compute {
            ComputeMqd::decode(gen, &bytes).and_then(|mut m| {
                m.update(&cfg, &q.props, info.as_ref())
                    .map(|a| (a, m.as_bytes().to_vec()))
            })
        } else {
            SdmaMqd::decode(gen, &bytes)
                .and_then(|mut m| m.update(&cfg, &q.props).map(|a| (a, m.as_bytes().to_vec())))
        };
        let (active, bytes) = match updated {
            Ok(v) => v,
            Err(e) => {
                log::debug!(target: crate::layer::DQM, "update_mqd: {e}");
                *q = prev;
                let _ = self.map(gpu);
                return Err(Errno::EINVAL);
            }
        };
        let _ = gpu.gart.write(q.mqd_mem.gpu_addr, &bytes);
        q.is_active = active;
        let (class, now_gws) = (q.class, q.is_gws);
        if active && !prev.is_active {
            self.increment_queue_count(class, now_gws);
        } else if !active && prev.is_active {
            self.decrement_queue_count(class, prev.is_gws);
        } else if active && prev.is_gws != now_gws {
            if now_gws {
                self.gws_queue_count += 1;
            } else {
                self.gws_queue_count = self.gws_queue_count.saturating_sub(1);
            }
        }
        let qpd = self.qpd(pasid)?;
        qpd.mapped_gws_queue = qpd.queues.iter().any(|q| q.is_gws && q.is_active);
        self.map(gpu)
    }

    /// Sets the process's GWS count (ALLOC_QUEUE_GWS).
    pub fn set_process_gws(&mut self, pasid: u32, num_gws: u32) -> KResult<()> {
        self.qpd(pasid)?.num_gws = num_gws;
        Ok(())
    }

    /// The queue `id` of a process.
    pub fn queue(&self, pasid: u32, id: u32) -> Option<&Queue> {
        self.qpds
            .iter()
            .find(|q| q.pasid == pasid)?
            .queues
            .iter()
            .find(|q| q.id == id)
    }

    // --- eviction ---------------------------------------------------------------------------

    /// `evict_process_queues_cpsch` (refcounted: only the first eviction acts).
    pub fn evict_process(&mut self, gpu: &Gpu, pasid: u32) -> KResult<()> {
        let qpd = self.qpd(pasid)?;
        qpd.evicted += 1;
        if qpd.evicted > 1 {
            return Ok(());
        }
        let mut deactivated = Vec::new();
        for q in &mut qpd.queues {
            q.props.is_evicted = true;
            if q.is_active {
                q.is_active = false;
                deactivated.push((q.class, q.is_gws));
            }
        }
        let is_debug = qpd.is_debug;
        for (class, gws) in deactivated {
            self.decrement_queue_count(class, gws);
        }
        log::debug!(target: crate::layer::DQM, "evicting pasid {pasid:#x} queues");
        let filter = if is_debug {
            UnmapFilter::AllQueues
        } else {
            UnmapFilter::DynamicQueues
        };
        self.execute(gpu, filter)
    }

    /// `restore_process_queues_cpsch` (refcounted: only the last restore acts).
    pub fn restore_process(&mut self, gpu: &Gpu, pasid: u32, pd_base: u64) -> KResult<()> {
        let qpd = self.qpd(pasid)?;
        match qpd.evicted {
            0 => return Ok(()),
            1 => {}
            _ => {
                qpd.evicted -= 1;
                return Ok(());
            }
        }
        qpd.page_table_base = pd_base;
        let mut activated = Vec::new();
        for q in &mut qpd.queues {
            q.props.is_evicted = false;
            if q.props.is_active() && !q.is_active {
                q.is_active = true;
                activated.push((q.class, q.is_gws));
            }
        }
        for (class, gws) in activated {
            self.increment_queue_count(class, gws);
        }
        log::debug!(target: crate::layer::DQM, "restoring pasid {pasid:#x} queues");
        let result = self.execute(gpu, UnmapFilter::DynamicQueues);
        if let Ok(qpd) = self.qpd(pasid) {
            qpd.evicted = 0;
        }
        result
    }

    /// `process_termination_cpsch`: every queue of the process goes; the qpd is dropped.
    pub fn process_termination(&mut self, gpu: &Gpu, pasid: u32) -> KResult<()> {
        let Some(i) = self.qpds.iter().position(|q| q.pasid == pasid) else {
            return Ok(());
        };
        let qpd = self.qpds.remove(i);
        for q in &qpd.queues {
            self.deallocate_sdma(q.class);
            if q.is_active {
                self.decrement_queue_count(q.class, q.is_gws);
            }
            self.total_queue_count -= 1;
        }
        let result = if qpd.registered {
            self.execute(gpu, UnmapFilter::DynamicQueues)
        } else {
            Ok(())
        };
        for q in &qpd.queues {
            free_mqd(gpu, q.mqd_mem);
        }
        if !qpd.queues.is_empty() {
            log::debug!(target: crate::layer::DQM, "pasid {pasid:#x} terminated: {} queue(s) freed", qpd.queues.len());
        }
        result
    }

    // --- counters ---------------------------------------------------------------------------

    fn increment_queue_count(&mut self, class: QueueClass, gws: bool) {
        self.active_queue_count += 1;
        if class == QueueClass::Compute {
            self.active_cp_queue_count += 1;
        }
        if gws {
            self.gws_queue_count += 1;
        }
    }

    fn decrement_queue_count(&mut self, class: QueueClass, gws: bool) {
        self.active_queue_count = self.active_queue_count.saturating_sub(1);
        if class == QueueClass::Compute {
            self.active_cp_queue_count = self.active_cp_queue_count.saturating_sub(1);
        }
        if gws {
            self.gws_queue_count = self.gws_queue_count.saturating_sub(1);
        }
    }

    // --- SDMA slots ---------------------------------------------------------------------------

    fn allocate_sdma(&mut self, ioctl_type: u32, requested_engine: u32) -> KResult<QueueClass> {
        let engines = self.cfg.sdma_engines;
        let xgmi_engines = self.cfg.xgmi_sdma_engines;
        let (xgmi, id) = match ioctl_type {
            KFD_IOC_QUEUE_TYPE_SDMA => (false, first_free(&mut self.sdma_free, |_| true)),
            KFD_IOC_QUEUE_TYPE_SDMA_XGMI => (true, first_free(&mut self.xgmi_free, |_| true)),
            KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID => {
                if requested_engine < engines {
                    (
                        false,
                        first_free(&mut self.sdma_free, |id| id % engines == requested_engine),
                    )
                } else {
                    let e = requested_engine - engines;
                    (
                        true,
                        first_free(&mut self.xgmi_free, |id| {
                            xgmi_engines > 0 && id % xgmi_engines == e
                        }),
                    )
                }
            }
            _ => return Err(Errno::EINVAL),
        };
        let Some(id) = id else {
            log::debug!(target: crate::layer::DQM, "no free SDMA queue");
            return Err(Errno::ENOMEM);
        };
        Ok(if xgmi {
            QueueClass::Sdma {
                engine: engines + id % xgmi_engines,
                queue: id / xgmi_engines,
                sdma_id: id,
                xgmi,
            }
        } else {
            QueueClass::Sdma {
                engine: id % engines,
                queue: id / engines,
                sdma_id: id,
                xgmi,
            }
        })
    }

    fn deallocate_sdma(&mut self, class: QueueClass) {
        if let QueueClass::Sdma { sdma_id, xgmi, .. } = class {
            let map = if xgmi {
                &mut self.xgmi_free
            } else {
                &mut self.sdma_free
            };
            if let Some(slot) = map.get_mut(sdma_id as usize) {
                *slot = true;
            }
        }
    }

    // --- execute / unmap / map ------------------------------------------------------------

    /// `execute_queues_cpsch`: unmap, and only if that worked, map.
    pub fn execute(&mut self, gpu: &Gpu, filter: UnmapFilter) -> KResult<()> {
        self.execute_waking(gpu, filter, None)
    }

    /// [`Dqm::execute`] for a change that brings no work of its own (a new queue: nothing
    /// runs before its first doorbell). The engine thread is not woken for the new runlist
    /// if its doorbell mappings stayed write-protected from before the unmap to after the
    /// map: every queue in the list then either was idle when the engine went to sleep or
    /// had its doorbell rung since, and that store woke the engine for a pass after the map.
    fn execute_new_queue(&mut self, gpu: &Gpu) -> KResult<()> {
        let watched = gpu.engines_watched_epoch();
        self.execute_waking(gpu, UnmapFilter::DynamicQueues, watched)
    }

    fn execute_waking(
        &mut self,
        gpu: &Gpu,
        filter: UnmapFilter,
        watched: Option<u64>,
    ) -> KResult<()> {
        if self.is_hws_hang {
            return Err(Errno::EIO);
        }
        self.unmap(gpu, filter, false)?;
        self.map_waking(gpu, watched)
    }

    /// `unmap_queues_cpsch`: UNMAP_QUEUES, then the QUERY_STATUS fence.
    pub fn unmap(&mut self, gpu: &Gpu, filter: UnmapFilter, reset: bool) -> KResult<()> {
        if self.is_hws_hang {
            return Err(Errno::EIO);
        }
        if !self.sched_running || !self.active_runlist {
            return Ok(());
        }
        let (Some(kq), Some(fence)) = (self.kq.as_mut(), self.fence) else {
            return Err(Errno::EIO);
        };
        self.pm.send_unmap(kq, gpu, filter, reset)?;
        let _ = gpu.gart.store_u64(fence.gpu_addr, KFD_FENCE_INIT);
        self.pm
            .send_query_status(kq, gpu, fence.gpu_addr, KFD_FENCE_COMPLETED)?;
        if !wait_fence(gpu, fence.gpu_addr, self.cfg.preemption_timeout) {
            log::error!(
                target: crate::layer::DQM,
                "the CP might be in an unrecoverable state due to an unsuccessful queues preemption"
            );
            self.hws_hang();
            return Err(Errno::ETIME);
        }
        // A queue that would not preempt is reported in the HIQ MQD, not by the fence.
        if let Some(doorbell) = self.check_preemption_failed(gpu) {
            match self.cfg.kernel {
                KernelVersion::Linux6_1 => {
                    log::error!(target: crate::layer::DQM, "queue with doorbell {doorbell:#x} did not preempt");
                    self.hws_hang();
                    return Err(Errno::ETIME);
                }
                KernelVersion::Linux6_12 => self.reset_hung_queue(gpu, doorbell),
            }
        }
        self.pm.release_ib(gpu);
        self.active_runlist = false;
        Ok(())
    }

    /// `map_queues_cpsch`: a new runlist when something should run and none is mapped.
    pub fn map(&mut self, gpu: &Gpu) -> KResult<()> {
        self.map_waking(gpu, None)
    }

    /// [`Dqm::map`]; the engine thread is woken for the new runlist unless its doorbell
    /// mappings stayed protected since `watched` ([`Dqm::execute_new_queue`]).
    fn map_waking(&mut self, gpu: &Gpu, watched: Option<u64>) -> KResult<()> {
        if !self.sched_running || self.sched_halt || self.is_hws_hang {
            return Ok(());
        }
        if self.active_queue_count == 0 || self.processes_count() == 0 || self.active_runlist {
            return Ok(());
        }
        let counts = RunlistCounts {
            processes: self.processes_count(),
            active_queues: self.active_queue_count,
            active_cp_queues: self.active_cp_queue_count,
            gws_queues: self.gws_queue_count,
        };
        let Some(kq) = self.kq.as_mut() else {
            return Err(Errno::EIO);
        };
        let registered: Vec<Qpd> = self.qpds.iter().filter(|q| q.registered).cloned().collect();
        self.pm.send_runlist(kq, gpu, &registered, counts)?;
        self.active_runlist = true;
        gpu.wake_engines_unless_watched_since(watched);
        Ok(())
    }

    fn check_preemption_failed(&self, gpu: &Gpu) -> Option<u32> {
        let addr = self.hiq_mqd_addr()?;
        let mut bytes = [0u8; 2048];
        gpu.gart.read(addr, &mut bytes)?;
        let mqd = ComputeMqd::decode(self.cfg.mqd.generation().ok()?, &bytes).ok()?;
        let doorbell = mqd.queue_doorbell_id0();
        (doorbell != 0).then_some(doorbell)
    }

    /// 6.12 `reset_queues_on_hws_hang`: the queue that did not preempt is reset — taken off the
    /// hardware and deactivated, its state being lost — and its process marked, so further
    /// updates of its queues fail with `EACCES`.
    fn reset_hung_queue(&mut self, gpu: &Gpu, doorbell: u32) {
        if let Some(addr) = self.hiq_mqd_addr() {
            let mut bytes = [0u8; 2048];
            if gpu.gart.read(addr, &mut bytes).is_some() {
                if let Ok(mut mqd) = ComputeMqd::decode(gpu.generation, &bytes) {
                    mqd.set_queue_doorbell_id0(0);
                    let _ = gpu.gart.write(addr, mqd.as_bytes());
                }
            }
        }
        gpu.hws.reset_queue(&gpu.gart, doorbell);
        let mut deactivated = Vec::new();
        for qpd in &mut self.qpds {
            for q in qpd.queues.iter_mut().filter(|q| q.doorbell_off == doorbell) {
                qpd.has_reset_queue = true;
                if q.is_active {
                    q.is_active = false;
                    deactivated.push((q.class, q.is_gws));
                }
                log::warn!(target: crate::layer::DQM, "pasid {:#x}: queue {} reset after a failed preemption", qpd.pasid, q.id);
            }
        }
        for (class, gws) in deactivated {
            self.decrement_queue_count(class, gws);
        }
    }

    /// `kfd_hws_hang`: every later execute fails with `EIO` until the GPU is reset.
    fn hws_hang(&mut self) {
        self.is_hws_hang = true;
        for qpd in &mut self.qpds {
            if qpd.registered {
                qpd.has_reset_queue = true;
            }
        }
    }
}

/// Frees a queue's MQD; the engines forget the queue's saved context with it.
fn free_mqd(gpu: &Gpu, mqd: GartAlloc) {
    gpu.hws.forget_queue(mqd.gpu_addr);
    gpu.gart.free(mqd);
}

fn first_free(map: &mut [bool], pred: impl Fn(u32) -> bool) -> Option<u32> {
    let i = map
        .iter()
        .enumerate()
        .position(|(i, free)| *free && pred(i as u32))?;
    map[i] = false;
    Some(i as u32)
}

/// Polls the fence (as `amdkfd_fence_wait_timeout` does) until it reads the completed value.
fn wait_fence(gpu: &Gpu, addr: u64, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut spins = 0u32;
    loop {
        if gpu.gart.load_u64(addr) == Some(KFD_FENCE_COMPLETED) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        spins += 1;
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}
