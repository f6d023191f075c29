//! The compute micro-engine (MEC) of the command processor: executes the user queues the
//! scheduler mapped into HQDs, as their MQDs describe them.
//!
//! * PM4 queues: the ring at `cp_hqd_pq_base`, write pointer in **dwords** (a monotonic
//!   counter read from the write-pointer address and the doorbell), read pointer reported as a
//!   32-bit **wrapped** dword offset at `cp_hqd_pq_rptr_report_addr`. Packets: NOP, WRITE_DATA,
//!   RELEASE_MEM, ACQUIRE_MEM, WAIT_REG_MEM(64), INDIRECT_BUFFER (two levels, chained),
//!   COPY_DATA, DMA_DATA, EVENT_WRITE, SET_SH_REG (into the queue's [`ShRegisters`]).
//!   DISPATCH_DIRECT runs the program the COMPUTE_* SH registers name on the
//!   [`spi`](crate::hw::spi), with the scratch COMPUTE_TMPRING_SIZE and
//!   COMPUTE_DISPATCH_SCRATCH_BASE describe. A large DMA_DATA copy or fill runs
//!   [`DMA_BYTES_PER_PASS`] at a time and yields between passes; so does a running dispatch.
//! * AQL queues: 64-byte packets, write pointer = monotonic **packet** index, the 64-bit read
//!   index written back. Barrier-AND, barrier-OR and the AMD vendor packets (BARRIER_VALUE,
//!   PM4 IB) run; a packet whose type is still INVALID is not published yet; a consumed
//!   slot's type is set back to INVALID. KERNEL_DISPATCH runs on the
//!   [`spi`](crate::hw::spi) and completes its signal like a barrier packet; the queue's
//!   `amd_queue_t` (128 bytes below the read-index report address, where ROCr puts
//!   `read_dispatch_id`) gives the scratch, and its `queue_inactive_signal` carries
//!   out-of-scratch (code 1, ROCr grows it and stores 0) and, for a wave halted with no trap
//!   handler to report it, what ROCr's handler would write (trap 1<<31, illegal instruction
//!   1<<30). A wave its handler halted only keeps the queue on the packet. Agent dispatch
//!   stops the queue with an error.
//!
//! An unmet wait parks the queue on its packet: the engine moves on and polls it again on a
//! later pass; a packet that yields (still running) is continued on the next pass. When the
//! scheduler preempts the queue its read pointer goes into the MQD (`cp_hqd_pq_rptr`,
//! `cp_hqd_pq_wptr`) and its IB state, SH registers and the progress of a running packet stay
//! in the engine's saved context, so it resumes on the same packet when mapped again.
//!
//! The module's rooms: this file holds the queue context ([`CpQueue`] and its ring, pointers
//! and SH registers) and drives a queue for a pass; `pm4` runs PM4 rings and IBs, `aql` runs
//! AQL rings, `exceptions` reports what stops a queue or one of its waves (interrupts,
//! `queue_inactive_signal`, the context-save error payload).

mod aql;
mod exceptions;
mod pm4;
#[cfg(test)]
mod tests;

pub(crate) use exceptions::post_queue_error;

use crate::config::Strict;
use crate::hw::engine::{
    unwrap_pointer, write_pointer, ExecEnv, IbFrame, QueueError, QueueIdentity, QueueRun,
    QueueStatus, RunState,
};
use crate::hw::hws::HqdSlot;
use crate::hw::ih::{IH_CLIENT_GRBM_CP, IH_CLIENT_UTCL2};
use crate::hw::observe::ShaderActivity;
use crate::hw::spi::{DecodedCode, KernelRun, ProcessRegisters, ShaderArray, WavePlacement};
use crate::hw::vm::{GpuVm, VmFault};
use ::pm4::regs::ShReg;
use ::pm4::ring::{AqlSlotPtr, DwordPtr, AQL_PACKET_DWORDS};
use ::pm4::GfxGen;
use mqd::{ComputeDescriptor, ComputeMqd};
use std::collections::BTreeMap;
use std::sync::Arc;

/// IB levels below the ring (IB1 and IB2).
pub const MAX_IB_DEPTH: usize = 2;

/// Bytes of a DMA_DATA copy or fill done in one pass; a larger one yields and continues on
/// the next pass (other queues run in between, as they do beside a long CP DMA).
pub const DMA_BYTES_PER_PASS: u64 = 256 << 10;

/// The SH registers a compute queue's SET_SH_REG packets wrote (COMPUTE_PGM_LO,
/// COMPUTE_USER_DATA_0, …), by dword address: what a dispatch reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShRegisters(BTreeMap<u32, u32>);

impl ShRegisters {
    /// The value last written to `reg`, if any.
    pub fn get(&self, reg: ShReg) -> Option<u32> {
        self.0.get(&reg.0).copied()
    }

    /// Writes `reg`.
    pub fn set(&mut self, reg: ShReg, value: u32) {
        self.0.insert(reg.0, value);
    }

    /// Every register written, in address order.
    pub fn iter(&self) -> impl Iterator<Item = (ShReg, u32)> + '_ {
        self.0.iter().map(|(&r, &v)| (ShReg(r), v))
    }

    /// How many registers were written.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What the CP keeps for a queue's packets from one packet and one pass to the next.
#[derive(Debug, Clone, Default)]
pub struct CpState {
    /// The SH registers.
    pub sh: ShRegisters,
    /// How far the packet at the read position got before it yielded (bytes of a DMA_DATA);
    /// 0 when it has not started.
    pub progress: u64,
    /// The ISA of the compute units (`None`: the model cannot run this GPU's shaders).
    pub shader_isa: Option<isa::Target>,
    /// The DISPATCH_DIRECT at the read position, while its waves run.
    pub kernel: Option<Box<KernelRun>>,
    /// Where the compute units count and report what they run.
    pub shader_activity: Option<Arc<ShaderActivity>>,
    /// Host threads a dispatch's workgroups run on (0 counts as 1).
    pub cu_threads: usize,
    /// What the queue's dispatches report instead of tolerating it (`KFD_MODEL_STRICT`).
    pub strict: Strict,
    /// The GPU's compute units, over which the SPI places the waves.
    pub shader_array: ShaderArray,
    /// The owning process's registers (from its MAP_PROCESS).
    pub process: ProcessRegisters,
    /// Code the queue's last dispatches decoded (reused while memory still holds it).
    pub code: Vec<DecodedCode>,
    /// The queue's global wave sync resources (they outlive a dispatch).
    pub gws: Arc<crate::hw::gws::Gws>,
}

/// Where a compute queue's ring and pointers are, from its MQD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpRing {
    /// Ring base address.
    pub base: u64,
    /// Ring size in dwords.
    pub dwords: u64,
    /// Where the read pointer is reported.
    pub rptr_report: u64,
    /// Where the write pointer is read.
    pub wptr_addr: u64,
    /// An AQL queue.
    pub aql: bool,
}

impl CpRing {
    /// The ring an MQD describes; `wptr_addr` is what MAP_QUEUES carried (the MQD's poll
    /// address when 0).
    pub fn from_mqd(mqd: &ComputeMqd, wptr_addr: u64) -> CpRing {
        CpRing {
            base: mqd.ring_base_address(),
            dwords: mqd.ring_size_bytes() / 4,
            rptr_report: mqd.rptr_report_address(),
            wptr_addr: if wptr_addr != 0 {
                wptr_addr
            } else {
                mqd.wptr_poll_address()
            },
            aql: mqd.is_aql(),
        }
    }

    fn packets(&self) -> u64 {
        self.dwords / AQL_PACKET_DWORDS as u64
    }
}

/// A position on a compute queue's ring in the queue's own unit: its read pointer, or the
/// write pointer last seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpReadPointer {
    /// PM4: dwords.
    Pm4(DwordPtr),
    /// AQL: packets.
    Aql(AqlSlotPtr),
}

impl CpReadPointer {
    /// The raw monotonic counter.
    pub fn get(self) -> u64 {
        match self {
            CpReadPointer::Pm4(p) => p.get(),
            CpReadPointer::Aql(p) => p.get(),
        }
    }

    /// The position `raw` in the same unit.
    pub fn at(self, raw: u64) -> Self {
        match self {
            CpReadPointer::Pm4(_) => CpReadPointer::Pm4(DwordPtr::new(raw)),
            CpReadPointer::Aql(_) => CpReadPointer::Aql(AqlSlotPtr::new(raw)),
        }
    }

    /// The unit, for messages.
    pub fn unit(self) -> &'static str {
        match self {
            CpReadPointer::Pm4(_) => "dwords",
            CpReadPointer::Aql(_) => "packets",
        }
    }
}

/// The execution context of one compute queue (what the HQD holds while mapped and the
/// engine saves while not).
#[derive(Debug, Clone)]
pub struct CpQueue {
    /// The ring.
    pub ring: CpRing,
    /// Who the queue is.
    pub id: QueueIdentity,
    rptr: CpReadPointer,
    last_wptr: CpReadPointer,
    ibs: Vec<IbFrame>,
    /// The IB stack belongs to the AQL vendor packet at the read pointer.
    aql_ib_active: bool,
    status: QueueStatus,
    gen: GfxGen,
    state: CpState,
    scratch: Vec<u32>,
    /// The ISA the GPU's compute units run (or why kernels cannot run on this GPU).
    shader_isa: Result<isa::Target, String>,
    /// The kernel dispatch at the read pointer, while its waves run.
    kernel: Option<Box<KernelRun>>,
    /// The dispatch at the read pointer needs more scratch: the CP reported it through the
    /// queue's `queue_inactive_signal` and waits for the runtime to store 0 there.
    scratch_wait: bool,
    /// A wave of the dispatch at the read pointer is halted (trap or exception reported).
    wave_halted: bool,
    /// The queue's CWSR area (`cp_hqd_ctx_save_base_addr`; 0 without CWSR): its
    /// `kfd_context_save_area_header` says where queue exceptions go.
    ctx_save_address: u64,
    /// GPU clock when the AQL packet at the read pointer was first processed: its
    /// completion signal's `start_ts` on a queue with profiling enabled.
    packet_start_ts: Option<u64>,
}

impl CpQueue {
    /// A context for a queue mapped for the first time: its read pointer is the MQD's saved
    /// `cp_hqd_pq_rptr` (0 for a new queue).
    pub fn from_mqd(mqd: &ComputeMqd, wptr_addr: u64, id: QueueIdentity, gen: GfxGen) -> CpQueue {
        let ring = CpRing::from_mqd(mqd, wptr_addr);
        let saved = u64::from(mqd.hqd_rptr());
        let rptr = if ring.aql {
            CpReadPointer::Aql(AqlSlotPtr::new(saved / AQL_PACKET_DWORDS as u64))
        } else {
            CpReadPointer::Pm4(DwordPtr::new(saved))
        };
        let mut queue = CpQueue::idle(ring, rptr, id, gen);
        queue.ctx_save_address = mqd.cwsr_area().map_or(0, |a| a.address);
        queue
    }

    /// A context on `ring` at `rptr` with nothing in flight, no shader ISA and no
    /// context-save area.
    fn idle(ring: CpRing, rptr: CpReadPointer, id: QueueIdentity, gen: GfxGen) -> CpQueue {
        CpQueue {
            ring,
            id,
            rptr,
            last_wptr: rptr,
            ibs: Vec::new(),
            aql_ib_active: false,
            status: QueueStatus::default(),
            gen,
            state: CpState::default(),
            scratch: Vec::new(),
            shader_isa: Err("no shader ISA was given to this queue".into()),
            kernel: None,
            scratch_wait: false,
            wave_halted: false,
            ctx_save_address: 0,
            packet_start_ts: None,
        }
    }

    /// An indirect buffer the graphics driver submits to a GFX or compute ring (a render
    /// node's `DRM_AMDGPU_CS`), run to its end through `env.vm` with a fresh CP state: the
    /// packets it ran. A packet that would wait (an unmet `WAIT_REG_MEM`), a dispatch (no
    /// shader ISA is set: the model runs no shaders for the graphics driver) and an IB of more
    /// than `budget` packets are not modelled here: they stop the IB with an error that says
    /// so.
    pub fn run_submitted_ib(
        gen: GfxGen,
        id: QueueIdentity,
        ib: IbFrame,
        env: &mut ExecEnv<'_>,
        budget: usize,
    ) -> Result<usize, QueueError> {
        let no_ring = CpRing {
            base: 0,
            dwords: 0,
            rptr_report: 0,
            wptr_addr: 0,
            aql: false,
        };
        let mut queue = CpQueue::idle(no_ring, CpReadPointer::Pm4(DwordPtr::new(0)), id, gen);
        queue.shader_isa =
            Err("the model runs no shaders for the graphics driver's submissions".into());
        queue.enter_ib(ib)?;
        let mut scratch = Vec::new();
        let mut ran = 0;
        for _ in 0..budget {
            if queue.ibs.is_empty() {
                return Ok(ran);
            }
            let addr = queue.ibs.last().map_or(ib.addr, |f| f.cursor());
            match queue.step_ib(env, &mut scratch)? {
                None => {}
                Some(RunState::Parked) => {
                    return Err(QueueError::NotModelled {
                        addr,
                        what: "a submitted IB that waits (WAIT_REG_MEM)".into(),
                    })
                }
                Some(RunState::Yielded) => {}
                Some(_) => ran += 1,
            }
        }
        Err(QueueError::NotModelled {
            addr: ib.addr,
            what: format!("a submitted IB of more than {budget} packets"),
        })
    }

    /// Mapped again (after a preemption): the queue resumes where it stopped, retrying a
    /// faulted packet. If the driver gave it another ring meanwhile (UPDATE_QUEUE), the context
    /// starts over on the new ring at the saved position, placed within one ring behind the
    /// current write pointer.
    pub fn remap(
        &mut self,
        mqd: &ComputeMqd,
        wptr_addr: u64,
        id: QueueIdentity,
        vm: &GpuVm,
        doorbell: u64,
    ) {
        self.id = id;
        let ring = CpRing::from_mqd(mqd, wptr_addr);
        if ring != self.ring {
            log::debug!(target: crate::layer::CP, "queue {:#x}: new ring, new context", id.doorbell_offset);
            let mut fresh = CpQueue::from_mqd(mqd, wptr_addr, id, self.gen);
            let wptr = write_pointer(vm, ring.wptr_addr, doorbell);
            fresh.rptr = match fresh.rptr {
                CpReadPointer::Aql(p) => CpReadPointer::Aql(AqlSlotPtr::new(unwrap_pointer(
                    wptr,
                    p.get(),
                    ring.packets(),
                ))),
                CpReadPointer::Pm4(p) => {
                    CpReadPointer::Pm4(DwordPtr::new(unwrap_pointer(wptr, p.get(), ring.dwords)))
                }
            };
            // The queue is the same; its SH registers stay.
            fresh.state.sh = std::mem::take(&mut self.state.sh);
            fresh.shader_isa = self.shader_isa.clone();
            fresh.state.shader_activity = self.state.shader_activity.take();
            fresh.state.shader_isa = self.state.shader_isa;
            fresh.state.cu_threads = self.state.cu_threads;
            fresh.state.strict = self.state.strict;
            fresh.state.shader_array = self.state.shader_array;
            fresh.state.gws = self.state.gws.clone();
            *self = fresh;
            return;
        }
        self.status.retry_after_fault();
    }

    /// Sets the ISA of the GPU's compute units (`Err` with the reason when the model cannot
    /// run this GPU's shaders: its dispatches stop the queue with that reason).
    pub fn set_shader_isa(&mut self, isa: Result<isa::Target, String>) {
        self.state.shader_isa = isa.as_ref().ok().copied();
        self.shader_isa = isa;
    }

    /// Sets where the GPU's compute units count and report the dispatches of this queue.
    pub fn set_shader_activity(&mut self, activity: Arc<ShaderActivity>) {
        self.state.shader_activity = Some(activity);
    }

    /// The owning process's registers as its `MAP_PROCESS` gave them: dispatches started
    /// from now on run with its trap handler, XNACK replay and apertures.
    pub fn set_process_registers(&mut self, process: ProcessRegisters) {
        self.state.process = process;
    }

    /// Runs the queue's dispatches on `threads` host threads.
    pub fn set_cu_threads(&mut self, threads: usize) {
        self.state.cu_threads = threads.max(1);
    }

    /// The queue's dispatches report what `strict` names instead of tolerating it.
    pub fn set_strict(&mut self, strict: Strict) {
        self.state.strict = strict;
    }

    /// The GPU's compute units, over which dispatches of this queue place their waves.
    pub fn set_shader_array(&mut self, array: ShaderArray) {
        self.state.shader_array = array;
    }

    /// Forgets the error that stopped the queue (a GPU reset restarts the engines).
    pub fn clear_error(&mut self) {
        self.status.clear_error();
    }

    /// The read pointer.
    pub fn rptr(&self) -> CpReadPointer {
        self.rptr
    }

    /// The last write pointer seen, in the queue's unit.
    pub fn last_wptr(&self) -> CpReadPointer {
        self.last_wptr
    }

    /// Why the queue stopped, if it did.
    pub fn error(&self) -> Option<&QueueError> {
        self.status.error()
    }

    /// Parked on a wait at the end of its last pass.
    pub fn is_parked(&self) -> bool {
        self.status.is_parked()
    }

    /// Packets executed so far.
    pub fn packets(&self) -> u64 {
        self.status.packets()
    }

    /// IB levels currently entered.
    #[cfg(test)]
    pub fn ib_depth(&self) -> usize {
        self.ibs.len()
    }

    /// The SH registers its SET_SH_REG packets wrote.
    pub fn sh_registers(&self) -> &ShRegisters {
        &self.state.sh
    }

    /// What the MQD saves: `cp_hqd_pq_rptr` (wrapped dwords) and `cp_hqd_pq_wptr` (dwords).
    pub fn save(&self, mqd: &mut ComputeMqd) {
        let (rptr_dw, wptr_dw) = match self.rptr {
            CpReadPointer::Pm4(p) => (p, DwordPtr::new(self.last_wptr.get())),
            CpReadPointer::Aql(p) => (
                p.to_dwords(),
                AqlSlotPtr::new(self.last_wptr.get()).to_dwords(),
            ),
        };
        mqd.set_hqd_rptr(rptr_dw.slot(self.ring.dwords) as u32);
        mqd.set_hqd_wptr(wptr_dw.get());
    }

    /// Runs the queue for one pass of at most `budget` packets. `doorbell` is the doorbell's
    /// current value.
    pub fn run(&mut self, env: &mut ExecEnv<'_>, doorbell: u64, budget: usize) -> QueueRun {
        if let Some(r) = self.status.halted_run() {
            return r;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut done = 0usize;
        let result = if self.ring.aql {
            self.run_aql(env, doorbell, budget, &mut done, &mut scratch)
        } else {
            self.run_pm4(env, doorbell, budget, &mut done, &mut scratch)
        };
        self.scratch = scratch;
        let id = self.id;
        self.status
            .finish(done, result, &id, crate::layer::CP, |e| {
                post_queue_error(env, IH_CLIENT_GRBM_CP, IH_CLIENT_UTCL2, e)
            })
    }

    fn wptr(&mut self, env: &ExecEnv<'_>, doorbell: u64, ring: u64) -> Result<u64, QueueError> {
        let wptr = write_pointer(env.vm, self.ring.wptr_addr, doorbell);
        let rptr = self.rptr.get();
        if wptr < rptr || wptr - rptr > ring {
            return Err(QueueError::WritePointer {
                wptr,
                rptr,
                ring,
                unit: self.rptr.unit(),
            });
        }
        self.last_wptr = self.rptr.at(wptr);
        Ok(wptr)
    }

    fn report_rptr(&self, vm: &GpuVm) -> Result<(), VmFault> {
        if self.ring.rptr_report == 0 {
            return Ok(());
        }
        match self.rptr {
            CpReadPointer::Pm4(p) => {
                vm.store_u32(self.ring.rptr_report, p.slot(self.ring.dwords) as u32)
            }
            CpReadPointer::Aql(p) => vm.store_u64(self.ring.rptr_report, p.get()),
        }
    }
}

/// The queue's doorbell as the SQ answers MSG_GET_DOORBELL: its 64-bit doorbell index in the
/// BAR (the MQD's dword index halved).
fn doorbell_id(queue: &QueueIdentity) -> u32 {
    queue.doorbell_offset / 2
}

/// Where the waves of a dispatch from `queue` go: its HQD names the micro engine (MEC1 is
/// ME 1), pipe and queue in the waves' `HW_ID`.
fn placement(queue: &QueueIdentity, array: ShaderArray) -> WavePlacement {
    let (me, pipe, hqd) = match queue.slot {
        HqdSlot::Compute { mec, pipe, queue } => (mec + 1, pipe, queue),
        HqdSlot::Sdma { .. } => (0, 0, 0),
    };
    WavePlacement {
        array,
        me,
        pipe,
        queue: hqd,
        vmid: queue.vmid,
    }
}
