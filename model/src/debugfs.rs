//! What amdkfd shows under `/sys/kernel/debug/kfd` (`hqds`, `mqds`, `rls`), as a read-only
//! view of one GPU — the public contract for tools that watch the driver work, so that they
//! need none of the hardware model's internals.
//!
//! ```
//! use kfd_model::{Model, ModelConfig, Preset};
//! let model = Model::new(ModelConfig::new(Preset::Gfx900).with_engine_thread(false))?;
//! let debugfs = model.nodes()[0].debugfs();
//! let hws = debugfs.hws();
//! assert_eq!(hws.hqd_count, 24);
//! assert!(hws.mapped.is_empty());
//! assert!(debugfs.hiq_mqd_address().is_some());
//! # Ok::<(), kfd_model::Errno>(())
//! ```

use crate::device::KfdNode;
use crate::hw::hws::HqdSlot;
use core::fmt;
use kfd_sys::gpu::Generation;

/// A hardware queue slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// A compute HQD.
    Compute {
        /// MEC index.
        mec: u8,
        /// Pipe.
        pipe: u8,
        /// Queue within the pipe.
        queue: u8,
    },
    /// An SDMA queue slot of an engine.
    Sdma {
        /// Engine.
        engine: u8,
        /// Queue slot within the engine.
        queue: u8,
    },
}

impl From<HqdSlot> for Slot {
    fn from(slot: HqdSlot) -> Self {
        match slot {
            HqdSlot::Compute { mec, pipe, queue } => Slot::Compute { mec, pipe, queue },
            HqdSlot::Sdma { engine, queue } => Slot::Sdma { engine, queue },
        }
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Slot::Compute { mec, pipe, queue } => write!(f, "MEC{mec} pipe {pipe} queue {queue}"),
            Slot::Sdma { engine, queue } => write!(f, "SDMA{engine} queue {queue}"),
        }
    }
}

/// A queue the scheduler firmware has mapped into a slot (a line of `hqds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedQueue {
    /// Where it runs.
    pub slot: Slot,
    /// The owning process.
    pub pasid: u16,
    /// The VMID the firmware gave the process.
    pub vmid: u8,
    /// The queue's doorbell offset.
    pub doorbell_offset: u32,
    /// GPU address of its MQD.
    pub mqd_address: u64,
}

/// The scheduler firmware's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwsState {
    /// Hardware queue slots the firmware may use.
    pub hqd_count: usize,
    /// The runlist asks for more than the slots hold (it rotates processes).
    pub oversubscribed: bool,
    /// What is mapped now.
    pub mapped: Vec<MappedQueue>,
}

/// A user queue the driver holds (a line of `mqds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverQueue {
    /// The owning process.
    pub pasid: u32,
    /// The queue id.
    pub queue_id: u32,
    /// Its doorbell offset.
    pub doorbell_offset: u32,
    /// GPU address of its MQD.
    pub mqd_address: u64,
}

/// The debug view of one GPU.
#[derive(Debug, Clone, Copy)]
pub struct DebugFs<'a> {
    node: &'a KfdNode,
}

impl KfdNode {
    /// The debug view of this GPU.
    pub fn debugfs(&self) -> DebugFs<'_> {
        DebugFs { node: self }
    }

    /// Lets the scheduler firmware's time quantum expire now: with an oversubscribed
    /// runlist it maps the next queues (what the hardware does on its own timer).
    pub fn hws_time_slice(&self) {
        self.gpu.hws.tick(&self.gpu.gart);
    }
}

impl DebugFs<'_> {
    /// The MQD generation of the GPU.
    pub fn generation(&self) -> Generation {
        self.node.gpu.generation
    }

    /// The scheduler firmware's slots and what is mapped in them (`hqds`).
    pub fn hws(&self) -> HwsState {
        let hws = &self.node.gpu.hws;
        HwsState {
            hqd_count: hws.hqd_slots().len(),
            oversubscribed: hws.oversubscribed(),
            mapped: hws
                .mapped_queues()
                .iter()
                .map(|m| MappedQueue {
                    slot: m.slot.into(),
                    pasid: m.pasid,
                    vmid: m.vmid,
                    doorbell_offset: m.queue.doorbell_offset,
                    mqd_address: m.queue.mqd_addr,
                })
                .collect(),
        }
    }

    /// Every user queue the driver holds, process by process (`mqds`).
    pub fn queues(&self) -> Vec<DriverQueue> {
        let dqm = self.node.dqm();
        dqm.qpds
            .iter()
            .flat_map(|qpd| {
                qpd.queues.iter().map(move |q| DriverQueue {
                    pasid: qpd.pasid,
                    queue_id: q.id,
                    doorbell_offset: q.doorbell_off,
                    mqd_address: q.mqd_mem.gpu_addr,
                })
            })
            .collect()
    }

    /// The doorbell offset of queue `queue_id` of process `pasid`.
    pub fn queue_doorbell(&self, pasid: u32, queue_id: u32) -> Option<u32> {
        self.node
            .dqm()
            .queue(pasid, queue_id)
            .map(|q| q.doorbell_off)
    }

    /// GPU address of the HIQ's MQD (the kernel queue the driver talks to the firmware on).
    pub fn hiq_mqd_address(&self) -> Option<u64> {
        self.node.dqm().hiq_mqd_addr()
    }

    /// Reads driver-owned GPU memory (MQDs, the HIQ ring, runlists) at `address`; `None`
    /// outside it.
    pub fn read(&self, address: u64, buf: &mut [u8]) -> Option<()> {
        self.node.gpu.gart.read(address, buf)
    }

    /// The 64-bit word of driver-owned GPU memory at `address`.
    pub fn load_u64(&self, address: u64) -> Option<u64> {
        self.node.gpu.gart.load_u64(address)
    }
}
