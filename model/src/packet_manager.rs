//! `kfd_packet_manager`: builds the runlist IB and the HIQ packets with `pm4` (facts §3, §9.6).
//!
//! The runlist lists, for every registered process in `dqm->queues` order (most recently
//! registered first), one MAP_PROCESS whose `num_queues` counts all of the process's queues,
//! then one MAP_QUEUES per *active* queue (most recently created first). When the runlist
//! asks more of the hardware than it has — more processes than a quantum holds, more compute
//! queues than HQDs, or more than one GWS queue — a chain RUN_LIST pointing back at the start
//! of the same IB closes it, so the firmware keeps cycling.

use crate::device::Gpu;
use crate::dqm::{Qpd, Queue, QueueClass};
use crate::errno::{Errno, KResult};
use crate::hw::gart::GartAlloc;
use crate::kernel_queue::KernelQueue;
use pm4::hws::*;
use pm4::{Encode, PacketWriter};

/// `KFD_FENCE_INIT`: what the driver writes into the fence before QUERY_STATUS.
pub const KFD_FENCE_INIT: u64 = 10;
/// `KFD_FENCE_COMPLETED`: what the firmware writes when everything before it is done.
pub const KFD_FENCE_COMPLETED: u64 = 100;
/// MAP_PROCESS `process_quantum`.
pub const PROCESS_QUANTUM: u8 = 10;
/// SET_RESOURCES `unmap_latency` (units of 100 ms).
pub const UNMAP_LATENCY: u8 = 40;

/// Which queues an unmap acts on (`enum kfd_unmap_queues_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnmapFilter {
    /// Every queue.
    AllQueues,
    /// Every non-static queue.
    DynamicQueues,
    /// Every queue of a PASID.
    ByPasid(u16),
}

/// The packet manager of one GPU.
#[derive(Debug)]
pub struct PacketManager {
    /// MAP_PROCESS layout of the part.
    pub form: MapProcessForm,
    /// SDMA IP ≥ 5.2: SDMA engines use the extended engine select.
    pub use_ext_eng: bool,
    /// Processes one scheduling quantum holds.
    pub max_proc_per_quantum: u32,
    /// Compute HQDs available to the scheduler.
    pub hqd_count: u32,
    ib: Option<GartAlloc>,
    ib_dwords: u32,
    oversubscribed: bool,
}

/// What the runlist sizing looks at (`pm_calc_rlib_size`).
#[derive(Debug, Clone, Copy)]
pub struct RunlistCounts {
    /// Registered processes.
    pub processes: u32,
    /// Active queues (CP and SDMA).
    pub active_queues: u32,
    /// Active compute queues.
    pub active_cp_queues: u32,
    /// Active GWS queues.
    pub gws_queues: u32,
}

impl PacketManager {
    /// A packet manager.
    pub fn new(
        form: MapProcessForm,
        use_ext_eng: bool,
        max_proc_per_quantum: u32,
        hqd_count: u32,
    ) -> Self {
        PacketManager {
            form,
            use_ext_eng,
            max_proc_per_quantum,
            hqd_count,
            ib: None,
            ib_dwords: 0,
            oversubscribed: false,
        }
    }

    /// Whether a runlist IB is allocated.
    pub fn has_ib(&self) -> bool {
        self.ib.is_some()
    }

    /// The runlist IB currently allocated: its GART address and the dwords the runlist uses.
    pub fn runlist_ib(&self) -> Option<(u64, u32)> {
        self.ib.map(|ib| (ib.gpu_addr, self.ib_dwords))
    }

    /// Whether the last runlist was oversubscribed.
    pub fn oversubscribed(&self) -> bool {
        self.oversubscribed
    }

    /// SET_RESOURCES on the HIQ.
    pub fn send_set_resources(
        &self,
        kq: &mut KernelQueue,
        gpu: &Gpu,
        vmid_mask: u16,
        queue_mask: u64,
    ) -> KResult<()> {
        let p = SetResources::new(&SetResourcesArgs {
            vmid_mask,
            unmap_latency: UNMAP_LATENCY,
            enb_xnack_retry_disable_check: false,
            queue_type: ResourceQueueType::Hiq,
            queue_mask,
            gws_mask: u64::MAX,
            oac_mask: 0,
            gds_heap_base: 0,
            gds_heap_size: 0,
        })
        .map_err(build_err)?;
        log::debug!(target: crate::layer::PM, "SET_RESOURCES vmid_mask {vmid_mask:#06x} queue_mask {queue_mask:#x}");
        kq.push(gpu, &p)?;
        kq.submit(gpu);
        Ok(())
    }

    /// UNMAP_QUEUES on the HIQ.
    pub fn send_unmap(
        &self,
        kq: &mut KernelQueue,
        gpu: &Gpu,
        filter: UnmapFilter,
        reset: bool,
    ) -> KResult<()> {
        let target = match filter {
            UnmapFilter::AllQueues => UnmapTarget::AllQueues,
            UnmapFilter::DynamicQueues => UnmapTarget::DynamicQueues,
            UnmapFilter::ByPasid(p) => UnmapTarget::Pasid(p),
        };
        let p = UnmapQueues::new(&UnmapQueuesArgs {
            action: if reset {
                UnmapAction::Reset
            } else {
                UnmapAction::Preempt
            },
            target,
            extended_engine_sel: if self.use_ext_eng {
                ExtendedEngineSel::Sdma0To7
            } else {
                ExtendedEngineSel::Legacy
            },
            engine_sel: 0,
            num_queues: 0,
        })
        .map_err(build_err)?;
        log::debug!(target: crate::layer::PM, "UNMAP_QUEUES {target:?}{}", if reset { " (reset)" } else { "" });
        kq.push(gpu, &p)?;
        kq.submit(gpu);
        Ok(())
    }

    /// QUERY_STATUS on the HIQ: the firmware writes `value` at `fence_addr` after everything
    /// before it is done.
    pub fn send_query_status(
        &self,
        kq: &mut KernelQueue,
        gpu: &Gpu,
        fence_addr: u64,
        value: u64,
    ) -> KResult<()> {
        let p = QueryStatus::new(&QueryStatusArgs {
            context_id: 0,
            command: QueryCommand::FenceOnlyAfterWriteAck,
            target: QueryTarget::Completion,
            fence_addr,
            fence_value: value,
        })
        .map_err(build_err)?;
        kq.push(gpu, &p)?;
        kq.submit(gpu);
        Ok(())
    }

    /// `pm_send_runlist`: builds the IB, then RUN_LIST on the HIQ. Any failure releases the IB.
    pub fn send_runlist(
        &mut self,
        kq: &mut KernelQueue,
        gpu: &Gpu,
        qpds: &[Qpd],
        counts: RunlistCounts,
    ) -> KResult<()> {
        let (ib_addr, ib_dwords) = self.create_runlist_ib(gpu, qpds, counts)?;
        let process_cnt = counts.processes.min(self.max_proc_per_quantum).min(15) as u8;
        let rl = match RunList::new(&RunListArgs::submit(ib_addr, ib_dwords, process_cnt)) {
            Ok(rl) => rl,
            Err(e) => {
                self.release_ib(gpu);
                return Err(build_err(e));
            }
        };
        if let Err(e) = kq.push(gpu, &rl) {
            kq.rollback();
            self.release_ib(gpu);
            return Err(e);
        }
        log::debug!(target: crate::layer::PM, "RUN_LIST ib {ib_addr:#x} size {ib_dwords} dwords, process_cnt {process_cnt}");
        kq.submit(gpu);
        Ok(())
    }

    /// Frees the runlist IB (`pm_release_ib`).
    pub fn release_ib(&mut self, gpu: &Gpu) {
        if let Some(ib) = self.ib.take() {
            gpu.gart.free(ib);
        }
    }

    /// `pm_create_runlist_ib`: sizes, allocates and fills the IB; returns its GART address and
    /// size in dwords.
    pub fn create_runlist_ib(
        &mut self,
        gpu: &Gpu,
        qpds: &[Qpd],
        c: RunlistCounts,
    ) -> KResult<(u64, u32)> {
        if self.ib.is_some() {
            log::warn!(target: crate::layer::PM, "runlist IB already allocated");
            return Err(Errno::EFAULT);
        }
        let max_proc = self.max_proc_per_quantum.max(1);
        let oversubscribed =
            c.processes > max_proc || c.active_cp_queues > self.hqd_count || c.gws_queues > 1;
        if oversubscribed && !self.oversubscribed {
            log::info!(target: crate::layer::PM, "Runlist is getting oversubscribed");
        }
        self.oversubscribed = oversubscribed;
        let map_process = self.form.dwords();
        let mut dwords =
            c.processes as usize * map_process + c.active_queues as usize * MapQueues::DWORDS;
        if oversubscribed {
            dwords += RunList::DWORDS;
        }
        let ib = gpu.gart.alloc((dwords * 4) as u64, 256)?;
        self.ib = Some(ib);
        self.ib_dwords = dwords as u32;
        let mut buf = vec![0u32; dwords];
        let result = self.fill_ib(&mut buf, qpds, c, ib.gpu_addr);
        if let Err(e) = result {
            self.release_ib(gpu);
            return Err(e);
        }
        gpu.gart
            .write_dwords(ib.gpu_addr, &buf)
            .ok_or(Errno::ENOMEM)?;
        log::debug!(
            target: crate::layer::PM,
            "runlist IB: {} process(es), {} active queue(s), {dwords} dwords{}",
            c.processes,
            c.active_queues,
            if oversubscribed { ", chained" } else { "" }
        );
        if log::log_enabled!(target: crate::layer::PM, log::Level::Trace) {
            let listing = pm4::disasm::Pm4Listing::new(&buf, gpu.generation).to_string();
            for line in listing.lines() {
                log::trace!(target: crate::layer::PM, "{line}");
            }
        }
        Ok((ib.gpu_addr, dwords as u32))
    }

    fn fill_ib(
        &self,
        buf: &mut [u32],
        qpds: &[Qpd],
        c: RunlistCounts,
        ib_addr: u64,
    ) -> KResult<()> {
        let total = buf.len() as u32;
        let mut w = PacketWriter::new(buf);
        for (mapped, qpd) in qpds.iter().enumerate() {
            if mapped as u32 >= c.processes {
                log::debug!(target: crate::layer::PM, "not enough space left in runlist IB");
                return Err(Errno::ENOMEM);
            }
            let mp = AnyMapProcess::new(self.form, &map_process_args(qpd, self.form))
                .map_err(build_err)?;
            push(&mut w, &mp)?;
            for q in qpd.queues.iter().filter(|q| q.is_active) {
                let mq =
                    MapQueues::new(&self.map_queues_args(q, qpd.is_debug)).map_err(build_err)?;
                push(&mut w, &mq)?;
            }
        }
        if self.oversubscribed {
            let process_cnt = c.processes.min(self.max_proc_per_quantum).min(15) as u8;
            let chain = RunList::new(&RunListArgs::chain(ib_addr, total, process_cnt))
                .map_err(build_err)?;
            push(&mut w, &chain)?;
        }
        Ok(())
    }

    fn map_queues_args(&self, q: &Queue, is_static: bool) -> MapQueuesArgs {
        let (engine, queue_type) = match q.class {
            QueueClass::Compute => (
                QueueEngine::Compute,
                if is_static {
                    MapQueueType::NormalLatencyStatic
                } else {
                    MapQueueType::NormalCompute
                },
            ),
            QueueClass::Sdma { engine, .. } => {
                let e = engine as u8;
                let engine = if e < 2 && !self.use_ext_eng {
                    QueueEngine::SdmaLegacy(e)
                } else {
                    QueueEngine::SdmaExtended(e)
                };
                (engine, MapQueueType::NormalCompute)
            }
        };
        MapQueuesArgs {
            queue_sel: MapQueueSel::HwsDetermined,
            queue_type,
            engine,
            gws_control_queue: q.is_gws,
            num_queues: 1,
            check_disable: false,
            doorbell_offset: q.doorbell_off,
            mqd_addr: q.mqd_mem.gpu_addr,
            wptr_addr: q.props.wptr_address,
        }
    }
}

fn push<P: Encode + ?Sized>(w: &mut PacketWriter<'_>, p: &P) -> KResult<()> {
    w.push(p).map(|_| ()).map_err(|e| {
        log::error!(target: crate::layer::PM, "runlist IB too small: {e}");
        Errno::ENOMEM
    })
}

fn build_err(e: pm4::BuildError) -> Errno {
    log::error!(target: crate::layer::PM, "packet build: {e}");
    Errno::EINVAL
}

/// MAP_PROCESS for one process, as `pm_map_process_v9` / `_aldebaran` fill it.
fn map_process_args(qpd: &Qpd, form: MapProcessForm) -> MapProcessArgs {
    let generic = form == MapProcessForm::Gfx9;
    MapProcessArgs {
        pasid: qpd.pasid as u16,
        process_quantum: PROCESS_QUANTUM,
        diq_enable: qpd.is_debug,
        page_table_base: qpd.page_table_base,
        sh_mem_bases: qpd.sh_mem_bases,
        sh_mem_config: qpd.sh_mem_config,
        tba_addr: qpd.tba_addr,
        tma_addr: qpd.tma_addr,
        // The generic gfx9 builder sets TRAP_EN when a trap handler exists; aldebaran's does not.
        trap_en: generic && qpd.tba_addr != 0,
        num_gws: if qpd.mapped_gws_queue {
            qpd.num_gws as u8
        } else {
            0
        },
        sdma_enable: true,
        num_queues: if qpd.is_debug {
            0
        } else {
            qpd.queue_count as u16
        },
        ..Default::default()
    }
}
