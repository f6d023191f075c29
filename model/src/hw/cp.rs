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

use crate::config::Strict;
use crate::hw::doorbell::DoorbellBar;
use crate::hw::engine::{
    read_linear, read_ring, unwrap_pointer, write_pointer, ExecEnv, Flow, IbFrame, QueueError,
    QueueIdentity, QueueRun, QueueStatus, RunState,
};
use crate::hw::hws::HqdSlot;
use crate::hw::ih::{
    sq_sendmsg_context, IH_CLIENT_GRBM_CP, IH_CLIENT_UTCL2, SQ_WAVE_CTXID_PRIV, SRC_CP_BAD_OPCODE,
    SRC_CP_END_OF_PIPE, SRC_SQ_INTERRUPT_MSG, SRC_VM_FAULT, VM_FAULT_NOT_PRESENT,
    VM_FAULT_READ_ONLY, VM_FAULT_WRITE,
};
use crate::hw::observe::ShaderActivity;
use crate::hw::spi::{
    amd_queue, DecodedCode, DispatchSetup, KernelRun, ProcessRegisters, Scratch, ShaderArray,
    WaveException, WavePlacement, QUEUE_ERROR_TRAP,
};
use crate::hw::vm::{GpuVm, VmFault};
use mqd::{ComputeDescriptor, ComputeMqd};
use pm4::aql::{
    amd_signal, decode_aql, AqlError, AqlPacket, AqlPacketType, SignalCondition,
    COMPLETION_SIGNAL_OFFSET, PACKET_SIZE,
};
use pm4::decode::{decode_pm4_packet, Packet};
use pm4::header::{PacketType, Type3Header};
use pm4::regs::ShReg;
use pm4::ring::{AqlSlotPtr, DwordPtr, AQL_PACKET_BYTES, AQL_PACKET_DWORDS};
use pm4::user::{
    CopyCountSel, CopyData, CopyDstSel, CopySrcSel, DmaData, DmaDstSel, DmaSrcSel, PollTarget,
    ReleaseDataSel, ReleaseDstSel, ReleaseIntSel, ReleaseMemTail, WriteData, WriteDataTarget,
};
use pm4::GfxGen;
use std::collections::BTreeMap;
use std::sync::Arc;
use zerocopy::IntoBytes;

/// IB levels below the ring (IB1 and IB2).
pub const MAX_IB_DEPTH: usize = 2;

/// Bytes of a DMA_DATA copy or fill done in one pass; a larger one yields and continues on
/// the next pass (other queues run in between, as they do beside a long CP DMA).
pub const DMA_BYTES_PER_PASS: u64 = 256 << 10;

/// The address of the field `offset` bytes into the `amd_signal_t` at `signal` (a 64-bit value
/// from a packet): past the top of the address space it is a fault at the signal, not an
/// overflow.
fn signal_field(signal: u64, offset: u64) -> Result<u64, VmFault> {
    signal.checked_add(offset).ok_or(VmFault {
        va: signal,
        write: false,
        not_present: true,
    })
}

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
            log::debug!(target: "hw::cp", "queue {:#x}: new ring, new context", id.doorbell_offset);
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
    pub fn ib_depth(&self) -> usize {
        self.ibs.len()
    }

    /// The SH registers its SET_SH_REG packets wrote.
    pub fn sh_registers(&self) -> &ShRegisters {
        &self.state.sh
    }

    /// How far the packet at the read position got before it yielded (0: not started).
    pub fn progress(&self) -> u64 {
        self.state.progress
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
        self.status.finish(done, result, &id, "hw::cp", |e| {
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

    fn run_pm4(
        &mut self,
        env: &mut ExecEnv<'_>,
        doorbell: u64,
        budget: usize,
        done: &mut usize,
        scratch: &mut Vec<u32>,
    ) -> Result<RunState, QueueError> {
        let ring = self.ring.dwords;
        if ring == 0 {
            return Ok(RunState::Idle);
        }
        let wptr = self.wptr(env, doorbell, ring)?;
        while *done < budget {
            if !self.ibs.is_empty() {
                match self.step_ib(env, scratch)? {
                    Some(s @ (RunState::Parked | RunState::Yielded)) => return Ok(s),
                    Some(_) => *done += 1,
                    None => {}
                }
                continue;
            }
            let CpReadPointer::Pm4(rptr) = self.rptr else {
                return Ok(RunState::Idle);
            };
            let avail = wptr - rptr.get();
            if avail == 0 {
                return Ok(RunState::Idle);
            }
            let slot = rptr.slot(ring);
            let addr = self.ring.base + slot * 4;
            let Some(len) = fetch_pm4(
                env.vm,
                Source::Ring(self.ring.base, ring, slot),
                avail,
                scratch,
            )?
            else {
                // The rest of the packet is not submitted yet.
                return Ok(RunState::Idle);
            };
            let flow = exec_packet(&scratch[..len], addr, self.gen, &mut self.state, env)?;
            match flow {
                Flow::Park => return Ok(RunState::Parked),
                Flow::Yield => return Ok(RunState::Yielded),
                Flow::Next => {}
                Flow::Call(f) | Flow::Chain(f) => self.enter_ib(f)?,
            }
            self.rptr = CpReadPointer::Pm4(rptr.add(len as u64));
            self.report_rptr(env.vm)?;
            *done += 1;
        }
        Ok(RunState::Busy)
    }

    /// One packet of the innermost IB. `Some(state)` when a packet ran (or parked), `None`
    /// when an IB ended.
    fn step_ib(
        &mut self,
        env: &mut ExecEnv<'_>,
        scratch: &mut Vec<u32>,
    ) -> Result<Option<RunState>, QueueError> {
        let Some(frame) = self.ibs.last().copied() else {
            return Ok(None);
        };
        if frame.remaining() == 0 {
            self.ibs.pop();
            return Ok(None);
        }
        let addr = frame.cursor();
        let Some(len) = fetch_pm4(
            env.vm,
            Source::Linear(addr),
            u64::from(frame.remaining()),
            scratch,
        )?
        else {
            return Err(QueueError::BadPacket {
                addr,
                reason: format!(
                    "the packet runs past the end of the IB ({} dwords left)",
                    frame.remaining()
                ),
            });
        };
        let flow = exec_packet(&scratch[..len], addr, self.gen, &mut self.state, env)?;
        let top = self.ibs.len() - 1;
        match flow {
            Flow::Park => return Ok(Some(RunState::Parked)),
            Flow::Yield => return Ok(Some(RunState::Yielded)),
            Flow::Next => self.ibs[top].pos += len as u32,
            Flow::Call(f) => {
                self.ibs[top].pos += len as u32;
                self.enter_ib(f)?;
            }
            Flow::Chain(f) => self.ibs[top] = f,
        }
        Ok(Some(RunState::Busy))
    }

    fn enter_ib(&mut self, f: IbFrame) -> Result<(), QueueError> {
        if self.ibs.len() >= MAX_IB_DEPTH {
            return Err(QueueError::NotModelled {
                addr: f.addr,
                what: format!("an IB nested deeper than {MAX_IB_DEPTH} levels"),
            });
        }
        if f.dwords > 0 {
            self.ibs.push(f);
        }
        Ok(())
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

    fn run_aql(
        &mut self,
        env: &mut ExecEnv<'_>,
        doorbell: u64,
        budget: usize,
        done: &mut usize,
        scratch: &mut Vec<u32>,
    ) -> Result<RunState, QueueError> {
        let packets = self.ring.packets();
        if packets == 0 {
            return Ok(RunState::Idle);
        }
        let wptr = self.wptr(env, doorbell, packets)?;
        while *done < budget {
            let CpReadPointer::Aql(rptr) = self.rptr else {
                return Ok(RunState::Idle);
            };
            let pkt = self.ring.base + rptr.slot(packets) * AQL_PACKET_BYTES;
            if self.aql_ib_active {
                match self.step_ib(env, scratch)? {
                    Some(s @ (RunState::Parked | RunState::Yielded)) => return Ok(s),
                    Some(_) => *done += 1,
                    None if self.ibs.is_empty() => {
                        self.aql_ib_active = false;
                        self.complete_aql(env, pkt)?;
                    }
                    None => {}
                }
                continue;
            }
            if wptr == rptr.get() {
                return Ok(RunState::Idle);
            }
            let slot = read_aql_slot(env.vm, pkt)?;
            let packet = decode_aql(&slot).map_err(|e| match e {
                AqlError::UnknownAmdFormat(f) => QueueError::NotModelled {
                    addr: pkt,
                    what: format!("AMD vendor AQL format {f}"),
                },
                AqlError::UnknownType(_) | AqlError::WrongSize(_) => QueueError::BadPacket {
                    addr: pkt,
                    reason: e.to_string(),
                },
            })?;
            log::trace!(target: "hw::cp", "{pkt:#x}: AQL {packet}");
            if self.packet_start_ts.is_none() && !matches!(packet, AqlPacket::Invalid(_)) {
                self.packet_start_ts = Some(env.clock.now());
            }
            match packet {
                AqlPacket::Invalid(_) => return Ok(RunState::Idle),
                AqlPacket::KernelDispatch(k) => {
                    if self.kernel.is_none() {
                        let queue_addr = self
                            .ring
                            .rptr_report
                            .wrapping_sub(amd_queue::READ_DISPATCH_ID);
                        let target = match self.shader_isa.clone() {
                            Ok(t) => t,
                            Err(why) => {
                                // As for code the CP cannot run: error 8 ("invalid code") in
                                // queue_inactive_signal, which ROCr reports as
                                // HSA_STATUS_ERROR_INVALID_CODE_OBJECT; the queue stops.
                                report_inactive(env, queue_addr, QUEUE_ERROR_INVALID_CODE)?;
                                return Err(QueueError::NotModelled {
                                    addr: pkt,
                                    what: format!(
                                        "shader execution (AQL KERNEL_DISPATCH of kernel object {:#x}): {why}",
                                        k.kernel_object
                                    ),
                                });
                            }
                        };
                        // After an out-of-scratch stop the scratch fields are read only
                        // once the runtime's release store of 0 into queue_inactive_signal
                        // says it has written them all: its handler writes them as plain
                        // stores in whatever order its compiler chose, so a new lane size
                        // read early may come with the old (or no) scratch base.
                        if self.scratch_wait {
                            if let Some(waiting) = self.scratch_grown(env, pkt, queue_addr)? {
                                return Ok(waiting);
                            }
                        }
                        let scratch = aql_scratch(env.vm, queue_addr);
                        if k.private_segment_size > scratch.lane_bytes {
                            return self.out_of_scratch(env, pkt, queue_addr);
                        }
                        let setup = DispatchSetup {
                            process: self.state.process,
                            doorbell_id: doorbell_id(&env.queue),
                            placement: placement(&env.queue, self.state.shader_array),
                            ..DispatchSetup::from_aql(
                                target,
                                pkt,
                                &k,
                                queue_addr,
                                rptr.get(),
                                scratch,
                            )
                        };
                        let kept = std::mem::take(&mut self.state.code);
                        let mut run = KernelRun::start(env.vm, setup)?
                            .with_cu_threads(self.state.cu_threads)
                            .with_strict(self.state.strict)
                            .with_gws(self.state.gws.clone())
                            .with_code(env.vm, kept);
                        if let Some(a) = &self.state.shader_activity {
                            run.watch(a);
                        }
                        self.kernel = Some(Box::new(run));
                    }
                    let Some(run) = self.kernel.as_mut() else {
                        return Ok(RunState::Idle);
                    };
                    let finished = run.step(env.vm);
                    let messages = run.take_messages();
                    let halted = run.exception().cloned();
                    // The memory hub raises a VM fault when the access faults, before the
                    // faulting wave's trap handler can send anything.
                    if let Some(ex) = halted.as_ref().filter(|ex| ex.fault.is_some()) {
                        self.wave_exception(env, pkt, ex.clone())?;
                    }
                    for m in messages {
                        log::debug!(
                            target: "hw::spi",
                            "s_sendmsg {:#x} m0 {:#x}{}",
                            m.simm16,
                            m.m0,
                            if m.privileged { " (trap handler)" } else { "" }
                        );
                        // SIMM16[3:0] is the message; the SQ forwards MSG_INTERRUPT with M0,
                        // marked PRIV when the trap handler sent it.
                        if m.simm16 & 0xf == MSG_INTERRUPT {
                            let [mut ctx0, ctx1] = sq_sendmsg_context(m.m0 & 0xff_ffff);
                            if m.privileged {
                                ctx0 |= SQ_WAVE_CTXID_PRIV;
                            }
                            env.interrupt(
                                IH_CLIENT_GRBM_CP,
                                SRC_SQ_INTERRUPT_MSG,
                                [ctx0, ctx1, 0, 0],
                            );
                        }
                    }
                    if let Some(ex) = halted {
                        return self.wave_exception(env, pkt, ex);
                    }
                    let Some(run) = self.kernel.as_mut() else {
                        return Ok(RunState::Idle);
                    };
                    let retry = run.awaits_retry();
                    if !matches!(finished, Ok(false)) && !retry {
                        run.watch_end(finished.is_err());
                    }
                    match finished {
                        Ok(false) => return Ok(RunState::Yielded),
                        Ok(true) => {
                            if let Some(mut run) = self.kernel.take() {
                                self.state.code = run.take_code();
                            }
                            self.complete_aql(env, pkt)?;
                            *done += 1;
                        }
                        Err(e) => {
                            // A retry fault keeps the dispatch: it resumes once remapped.
                            if !retry {
                                self.kernel = None;
                            }
                            return Err(e);
                        }
                    }
                }
                AqlPacket::AgentDispatch(_) => {
                    return Err(QueueError::NotModelled {
                        addr: pkt,
                        what: "an AQL AGENT_DISPATCH".into(),
                    })
                }
                AqlPacket::BarrierAnd(b) | AqlPacket::BarrierOr(b) => {
                    let mut any = false;
                    let mut all = true;
                    let mut deps = 0;
                    for signal in b.dependencies() {
                        deps += 1;
                        let value = env.vm.load_u64(signal_field(signal, amd_signal::VALUE)?)?;
                        any |= value == 0;
                        all &= value == 0;
                    }
                    let ready = if b.header.packet_type() == AqlPacketType::BarrierAnd {
                        all
                    } else {
                        any || deps == 0
                    };
                    if !ready {
                        return Ok(RunState::Parked);
                    }
                    self.complete_aql(env, pkt)?;
                    *done += 1;
                }
                // hsa_ext_amd.h: a null signal is a satisfied dependency (ROCclr sends one
                // with mask 0 when a barrier-value packet has nothing to wait for).
                AqlPacket::BarrierValue(v) if v.signal == 0 => {
                    self.complete_aql(env, pkt)?;
                    *done += 1;
                }
                AqlPacket::BarrierValue(v) => {
                    let Some(cond) = SignalCondition::from_raw(v.cond) else {
                        return Err(QueueError::BadPacket {
                            addr: pkt,
                            reason: format!(
                                "BARRIER_VALUE condition {} is not one of EQ, NE, LT, GTE",
                                v.cond
                            ),
                        });
                    };
                    let current = env
                        .vm
                        .load_u64(signal_field(v.signal, amd_signal::VALUE)?)?
                        & v.mask as u64;
                    if !cond.holds(current as i64, v.value) {
                        return Ok(RunState::Parked);
                    }
                    self.complete_aql(env, pkt)?;
                    *done += 1;
                }
                AqlPacket::Pm4Ib(ib) => match decode_pm4_packet(&ib.pm4_ib_command, self.gen) {
                    Ok((Packet::IndirectBuffer(ib), _)) => {
                        self.enter_ib(IbFrame::new(ib.ib_addr(), ib.control.ib_size()))?;
                        self.aql_ib_active = true;
                    }
                    Ok((other, _)) => {
                        return Err(QueueError::BadPacket {
                            addr: pkt,
                            reason: format!(
                                "a PM4-IB vendor packet must hold INDIRECT_BUFFER, not {}",
                                other.name()
                            ),
                        })
                    }
                    Err(e) => {
                        return Err(QueueError::BadPacket {
                            addr: pkt,
                            reason: format!("PM4-IB vendor packet: {e}"),
                        })
                    }
                },
            }
        }
        Ok(RunState::Busy)
    }

    /// The CP's out-of-scratch protocol (ROCr's dynamic scratch): the queue stops on the
    /// dispatch, error code 1 goes into `queue_inactive_signal` with its event; when the
    /// runtime has grown the scratch it stores 0 there and the dispatch starts
    /// ([`CpQueue::scratch_grown`]).
    fn out_of_scratch(
        &mut self,
        env: &ExecEnv<'_>,
        pkt: u64,
        queue_addr: u64,
    ) -> Result<RunState, QueueError> {
        let vm = env.vm;
        let signal = vm.load_u64(queue_addr + amd_queue::QUEUE_INACTIVE_SIGNAL)?;
        if signal == 0 {
            return Err(QueueError::NotModelled {
                addr: pkt,
                what: "a dispatch needing more scratch on a queue without queue_inactive_signal"
                    .into(),
            });
        }
        log::debug!(target: "hw::cp", "{pkt:#x}: out of scratch; signalling {signal:#x}");
        vm.store_u64(
            signal_field(signal, amd_signal::VALUE)?,
            QUEUE_ERROR_OUT_OF_SCRATCH,
        )?;
        notify_signal(env, signal)?;
        self.scratch_wait = true;
        Ok(RunState::Parked)
    }

    /// Whether the runtime has answered an out-of-scratch stop: `None` once it stored 0 into
    /// `queue_inactive_signal` (loaded with acquire, so the scratch fields it wrote before
    /// are seen); the queue stays parked while the value is still the error code. Any other
    /// value (ROCr stores -1 when it gives up) leaves the queue stopped with an error.
    fn scratch_grown(
        &mut self,
        env: &ExecEnv<'_>,
        pkt: u64,
        queue_addr: u64,
    ) -> Result<Option<RunState>, QueueError> {
        let vm = env.vm;
        let signal = vm.load_u64(queue_addr + amd_queue::QUEUE_INACTIVE_SIGNAL)?;
        match vm.load_u64(signal_field(signal, amd_signal::VALUE)?)? {
            0 => {
                self.scratch_wait = false;
                Ok(None)
            }
            QUEUE_ERROR_OUT_OF_SCRATCH => Ok(Some(RunState::Parked)),
            other => Err(QueueError::NotModelled {
                addr: pkt,
                what: format!(
                    "a dispatch whose scratch the runtime did not grow (queue_inactive_signal {:#x})",
                    other
                ),
            }),
        }
    }

    /// A wave of the dispatch at `pkt` halted on a trap or exception; the queue stays on the
    /// packet with the wave halted. A memory violation is also the VM fault the memory hub
    /// reports. When the wave's trap handler reported the exception itself (ROCr's, which
    /// the model runs), that is all. Otherwise (no handler, or the handler failed) the CP
    /// does what ROCr's handler would: the error bit goes into `queue_inactive_signal`
    /// (atomically, once) and its event fires; without such a signal the queue stops with an
    /// error.
    fn wave_exception(
        &mut self,
        env: &ExecEnv<'_>,
        pkt: u64,
        ex: WaveException,
    ) -> Result<RunState, QueueError> {
        if self.wave_halted {
            return Ok(RunState::Parked);
        }
        // A memory violation is reported as the VM fault it is: the memory hub's interrupt,
        // on which amdkfd signals the memory exception event and evicts the process's
        // queues (ROCr prints its "Memory access fault" message and aborts).
        if let Some(f) = ex.fault {
            log::error!(target: "hw::spi", "{pkt:#x}: wave halted: {}", ex.what);
            post_queue_error(
                env,
                IH_CLIENT_GRBM_CP,
                IH_CLIENT_UTCL2,
                &QueueError::VmFault(f),
            );
            self.wave_halted = true;
            return Ok(RunState::Parked);
        }
        if ex.reported {
            log::error!(target: "hw::spi", "{pkt:#x}: wave halted by its trap handler: {}", ex.what);
            self.wave_halted = true;
            return Ok(RunState::Parked);
        }
        let vm = env.vm;
        let queue_addr = self
            .ring
            .rptr_report
            .wrapping_sub(amd_queue::READ_DISPATCH_ID);
        let signal = vm
            .load_u64(queue_addr + amd_queue::QUEUE_INACTIVE_SIGNAL)
            .unwrap_or(0);
        if signal == 0 {
            self.kernel = None;
            return Err(QueueError::NotModelled {
                addr: pkt,
                what: format!(
                    "a halted wave ({}) on a queue without queue_inactive_signal",
                    ex.what
                ),
            });
        }
        log::error!(target: "hw::spi", "{pkt:#x}: wave halted: {}", ex.what);
        vm.update_u64(signal_field(signal, amd_signal::VALUE)?, |v| v | ex.error)?;
        notify_signal(env, signal)?;
        self.report_queue_exception(env, &ex)?;
        self.wave_halted = true;
        Ok(RunState::Parked)
    }

    /// amdkfd's side of a wave exception for a runtime that registered an error payload in
    /// the queue's context-save header (ROCr with KFD exception reporting): the exception's
    /// `KFD_EC_MASK` is ORed into `err_payload_addr` and event `err_event_id` is signalled.
    /// Such a runtime clears `queue_inactive_signal` and acts on this payload instead.
    /// The event goes through the end-of-pipe interrupt path, which fires only an event
    /// whose mailbox slot was written: ROCr uses one event for both signals, and
    /// `notify_signal` has just written it. (When ROCr's own handler runs, amdkfd does this
    /// from the handler's SQ interrupt message: `crate::interrupt`.)
    fn report_queue_exception(&self, env: &ExecEnv<'_>, ex: &WaveException) -> Result<(), VmFault> {
        if self.ctx_save_address == 0 {
            return Ok(());
        }
        let vm = env.vm;
        let header = self.ctx_save_address;
        let payload = vm.load_u64(header + CTX_SAVE_HEADER_ERR_PAYLOAD_ADDR)?;
        let event_id = vm.load_u32(header + CTX_SAVE_HEADER_ERR_EVENT_ID)?;
        if payload == 0 {
            return Ok(());
        }
        let code = if ex.error == QUEUE_ERROR_TRAP {
            kfd_sys::EC_QUEUE_WAVE_TRAP
        } else {
            kfd_sys::EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION
        };
        log::debug!(target: "hw::cp", "queue exception {code}: payload {payload:#x}, event {event_id}");
        vm.update_u64(payload, |v| v | kfd_sys::KFD_EC_MASK(code))?;
        if event_id != 0 {
            env.interrupt(IH_CLIENT_GRBM_CP, SRC_CP_END_OF_PIPE, [event_id, 0, 0, 0]);
        }
        Ok(())
    }

    /// Retires the AQL packet at `pkt`: its completion signal is decremented (and its event
    /// mailbox written and an interrupt raised when it has one), the slot is set back to
    /// INVALID and the read index moves on.
    fn complete_aql(&mut self, env: &ExecEnv<'_>, pkt: u64) -> Result<(), QueueError> {
        let vm = env.vm;
        let signal = vm.load_u64(pkt + COMPLETION_SIGNAL_OFFSET as u64)?;
        let start_ts = self.packet_start_ts.take();
        if signal != 0 {
            // With AMD_QUEUE_PROPERTIES_ENABLE_PROFILING the CP stamps the signal before the
            // decrement: ROCr's hsa_amd_profiling_get_dispatch_time (HIP events) reads them.
            // A queue without an amd_queue_t (no read-pointer report, or none mapped there)
            // has no profiling bit.
            let queue_addr = self
                .ring
                .rptr_report
                .wrapping_sub(amd_queue::READ_DISPATCH_ID);
            let properties = match self.ring.rptr_report {
                0 => 0,
                _ => vm
                    .load_u32(queue_addr.wrapping_add(amd_queue::QUEUE_PROPERTIES))
                    .unwrap_or(0),
            };
            if properties & amd_queue::PROPERTIES_ENABLE_PROFILING != 0 {
                let end = env.clock.now();
                let start = start_ts.unwrap_or(end).min(end);
                vm.store_u64(signal_field(signal, amd_signal::START_TS)?, start)?;
                vm.store_u64(signal_field(signal, amd_signal::END_TS)?, end)?;
            }
            let old = vm.fetch_add_u64(signal_field(signal, amd_signal::VALUE)?, u64::MAX)?;
            log::debug!(target: "hw::cp", "{pkt:#x}: retired; completion signal {signal:#x}: {old} -> {}", old.wrapping_sub(1));
            notify_signal(env, signal)?;
        }
        let dw0 = vm.load_u32(pkt)?;
        vm.store_u32(pkt, (dw0 & !0xFF) | u32::from(AqlPacketType::Invalid.raw()))?;
        if let CpReadPointer::Aql(r) = self.rptr {
            self.rptr = CpReadPointer::Aql(r.add(1));
        }
        self.report_rptr(vm)?;
        Ok(())
    }
}

/// DISPATCH_DIRECT: the program, resources, user SGPRs and workgroup size from the SH
/// registers SET_SH_REG wrote; the packet's dimensions count workgroups (or work-items with
/// USE_THREAD_DIMENSIONS). Runs for a time slice per pass and yields until every wave ended.
fn dispatch_direct(
    d: &pm4::user::DispatchDirect,
    addr: u64,
    state: &mut CpState,
    env: &mut ExecEnv<'_>,
) -> Result<Flow, QueueError> {
    if state.kernel.is_none() {
        let dims = format!("DISPATCH_DIRECT {}x{}x{}", d.dim_x, d.dim_y, d.dim_z);
        let Some(target) = state.shader_isa else {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("shader execution ({dims}): ISA not modelled for this GPU"),
            });
        };
        let reg = |r: ShReg| state.sh.get(r).unwrap_or(0);
        let pgm = (u64::from(reg(ShReg::COMPUTE_PGM_HI)) << 32
            | u64::from(reg(ShReg::COMPUTE_PGM_LO)))
            << 8;
        // NUM_THREAD_FULL is bits 15:0.
        let workgroup = [
            ShReg::COMPUTE_NUM_THREAD_X,
            ShReg::COMPUTE_NUM_THREAD_Y,
            ShReg::COMPUTE_NUM_THREAD_Z,
        ]
        .map(|r| reg(r) & 0xFFFF);
        let dim = [d.dim_x, d.dim_y, d.dim_z];
        let grid = if d.initiator.use_thread_dimensions() {
            dim
        } else {
            [0, 1, 2].map(|i| dim[i].saturating_mul(workgroup[i]))
        };
        let mut user_data = [0u32; 16];
        for (i, u) in user_data.iter_mut().enumerate() {
            *u = reg(ShReg(ShReg::COMPUTE_USER_DATA_0.0 + i as u32));
        }
        let rsrc2 = reg(ShReg::COMPUTE_PGM_RSRC2);
        let scratch = pm4_scratch(&state.sh);
        let setup = DispatchSetup {
            target,
            packet_addr: addr,
            queue_addr: 0,
            kernel_object: pgm,
            kernarg: 0,
            dispatch_id: 0,
            workgroup,
            grid,
            dynamic_lds: 0,
            private_segment_size: 0,
            scratch,
            user_data: Some(user_data),
            process: state.process,
            doorbell_id: doorbell_id(&env.queue),
            placement: placement(&env.queue, state.shader_array),
        };
        let kept = std::mem::take(&mut state.code);
        let mut run = KernelRun::from_registers(setup, pgm, reg(ShReg::COMPUTE_PGM_RSRC1), rsrc2)?
            .with_cu_threads(state.cu_threads)
            .with_strict(state.strict)
            .with_gws(state.gws.clone())
            .with_code(env.vm, kept);
        if let Some(a) = &state.shader_activity {
            run.watch(a);
        }
        state.kernel = Some(Box::new(run));
    }
    let Some(run) = state.kernel.as_mut() else {
        return Ok(Flow::Next);
    };
    let finished = run.step(env.vm);
    let retry = run.awaits_retry();
    if !matches!(finished, Ok(false)) && !retry {
        run.watch_end(finished.is_err());
    }
    if let Some(ex) = run.exception().cloned() {
        state.kernel = None;
        // A memory violation stops the queue as the VM fault it is.
        if let Some(f) = ex.fault {
            return Err(QueueError::VmFault(f));
        }
        return Err(QueueError::NotModelled {
            addr,
            what: format!("a halted wave ({}) of a PM4 dispatch", ex.what),
        });
    }
    match finished {
        Ok(false) => Ok(Flow::Yield),
        Ok(true) => {
            if let Some(mut run) = state.kernel.take() {
                state.code = run.take_code();
            }
            Ok(Flow::Next)
        }
        Err(e) => {
            if !retry {
                state.kernel = None;
            }
            Err(e)
        }
    }
}

/// `COMPUTE_TMPRING_SIZE.WAVES` (bits 11:0): waves the scratch ring has room for.
const TMPRING_WAVES_MASK: u32 = 0xFFF;
/// `COMPUTE_TMPRING_SIZE.WAVESIZE` (bits 24:12): scratch per wave, in 1 KiB units on gfx9.
const TMPRING_WAVESIZE_SHIFT: u32 = 12;
/// Its width mask.
const TMPRING_WAVESIZE_MASK: u32 = 0x1FFF;
/// Bytes of one `WAVESIZE` unit on gfx9.
const TMPRING_WAVESIZE_UNIT: u32 = 1024;

/// The scratch of a PM4 dispatch, as kfdtest-style clients set it up: `COMPUTE_TMPRING_SIZE`
/// says how many waves fit and how much each gets, `COMPUTE_DISPATCH_SCRATCH_BASE_LO/HI`
/// (address >> 8) where the ring starts; the buffer resource the waves use comes to them in
/// the user SGPRs the client wrote (`COMPUTE_USER_DATA_*`). The SPI gives each wave its offset
/// in the ring in the scratch-wave-offset SGPR.
fn pm4_scratch(sh: &ShRegisters) -> Scratch {
    let reg = |r: ShReg| sh.get(r).unwrap_or(0);
    let tmpring = reg(ShReg::COMPUTE_TMPRING_SIZE);
    let waves = tmpring & TMPRING_WAVES_MASK;
    let wave_bytes =
        (tmpring >> TMPRING_WAVESIZE_SHIFT & TMPRING_WAVESIZE_MASK) * TMPRING_WAVESIZE_UNIT;
    let base = (u64::from(reg(ShReg::COMPUTE_DISPATCH_SCRATCH_BASE_HI)) << 32
        | u64::from(reg(ShReg::COMPUTE_DISPATCH_SCRATCH_BASE_LO)))
        << 8;
    let mut resource = [0u32; 4];
    for (i, r) in resource.iter_mut().enumerate() {
        *r = reg(ShReg(ShReg::COMPUTE_USER_DATA_0.0 + i as u32));
    }
    Scratch {
        resource,
        base,
        size: u64::from(waves) * u64::from(wave_bytes),
        lane_bytes: wave_bytes / isa::exec::WAVE_SIZE as u32,
        max_waves: Some(waves),
    }
}

/// `s_sendmsg` message id (SIMM16[3:0]) of an interrupt to the host.
const MSG_INTERRUPT: u16 = 1;

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

/// `kfd_context_save_area_header.err_payload_addr`'s offset.
const CTX_SAVE_HEADER_ERR_PAYLOAD_ADDR: u64 =
    std::mem::offset_of!(kfd_sys::kfd_context_save_area_header, err_payload_addr) as u64;
/// `kfd_context_save_area_header.err_event_id`'s offset.
const CTX_SAVE_HEADER_ERR_EVENT_ID: u64 =
    std::mem::offset_of!(kfd_sys::kfd_context_save_area_header, err_event_id) as u64;

/// `queue_inactive_signal` error code: the dispatch's code cannot run ("invalid code").
const QUEUE_ERROR_INVALID_CODE: u64 = 8;

/// ORs `error` into the `queue_inactive_signal` of the `amd_queue_t` at `queue` and wakes
/// its waiters; nothing when the queue has no such signal (not a ROCr queue).
fn report_inactive(env: &ExecEnv<'_>, queue: u64, error: u64) -> Result<(), VmFault> {
    let vm = env.vm;
    let signal = vm
        .load_u64(queue.wrapping_add(amd_queue::QUEUE_INACTIVE_SIGNAL))
        .unwrap_or(0);
    if signal == 0 {
        return Ok(());
    }
    vm.update_u64(signal_field(signal, amd_signal::VALUE)?, |v| v | error)?;
    notify_signal(env, signal)
}

/// `queue_inactive_signal` error code: the dispatch needs more scratch than the queue has.
const QUEUE_ERROR_OUT_OF_SCRATCH: u64 = 1;

/// Wakes the waiters of the `amd_signal_t` at `signal`: when it has an event mailbox, its
/// event id goes there and the CP raises the end-of-pipe interrupt that amdkfd turns into the
/// event.
fn notify_signal(env: &ExecEnv<'_>, signal: u64) -> Result<(), VmFault> {
    let vm = env.vm;
    let mailbox = vm.load_u64(signal_field(signal, amd_signal::EVENT_MAILBOX_PTR)?)?;
    if mailbox != 0 {
        let event_id = vm.load_u32(signal_field(signal, amd_signal::EVENT_ID)?)?;
        vm.store_u64(mailbox, u64::from(event_id))?;
        env.interrupt(IH_CLIENT_GRBM_CP, SRC_CP_END_OF_PIPE, [event_id, 0, 0, 0]);
    }
    Ok(())
}

/// The AQL packet in the slot at `pkt`, read as the HSA packet protocol orders it: the
/// producer fills the body, then stores the first dword (header and setup) with release
/// semantics, and the write pointer may move before either (ROCr bumps `write_dispatch_id`,
/// which the CP polls, before it fills the slot). So the first dword is loaded first, with
/// acquire, and the copy of the whole slot after it keeps that dword: a header seen valid
/// comes with the body written before it, never with the slot's stale body (which a single
/// 64-byte copy, loading its halves in whatever order the compiler chose, could return).
fn read_aql_slot(vm: &GpuVm, pkt: u64) -> Result<[u8; PACKET_SIZE], VmFault> {
    let first = vm.load_u32(pkt)?;
    let mut slot = [0u8; PACKET_SIZE];
    vm.read(pkt, &mut slot)?;
    slot[..4].copy_from_slice(&first.to_le_bytes());
    Ok(slot)
}

/// The scratch ROCr set up in the `amd_queue_t` at `queue`; none when it cannot be read.
fn aql_scratch(vm: &GpuVm, queue: u64) -> Scratch {
    let read = || -> Result<Scratch, VmFault> {
        let mut resource = [0u32; 4];
        for (i, r) in resource.iter_mut().enumerate() {
            *r = vm.load_u32(queue + amd_queue::SCRATCH_RESOURCE_DESCRIPTOR + 4 * i as u64)?;
        }
        Ok(Scratch {
            resource,
            base: vm.load_u64(queue + amd_queue::SCRATCH_BACKING_MEMORY_LOCATION)?,
            size: vm.load_u64(queue + amd_queue::SCRATCH_BACKING_MEMORY_BYTE_SIZE)?,
            lane_bytes: vm.load_u32(queue + amd_queue::SCRATCH_WAVE64_LANE_BYTE_SIZE)?,
            max_waves: None,
        })
    };
    read().unwrap_or_default()
}

/// Posts the interrupt a stopped queue raises: a VM fault from the memory hub (`fault_client`)
/// or a queue error from the engine (`engine_client`).
pub(crate) fn post_queue_error(
    env: &ExecEnv<'_>,
    engine_client: u8,
    fault_client: u8,
    e: &QueueError,
) {
    match e {
        QueueError::VmFault(f) => {
            let page = f.va >> 12;
            let mut data1 = ((page >> 32) & 0xF) as u32;
            if f.write {
                data1 |= VM_FAULT_WRITE;
            }
            let kind = if f.not_present {
                VM_FAULT_NOT_PRESENT
            } else {
                VM_FAULT_READ_ONLY
            };
            env.interrupt(fault_client, SRC_VM_FAULT, [page as u32, data1, kind, 0]);
        }
        other => {
            let id = DoorbellBar::slice_and_id(env.queue.doorbell_offset).map_or(0, |(_, id)| id);
            env.interrupt(
                engine_client,
                SRC_CP_BAD_OPCODE,
                [
                    (id & 0x3FF) | other.code() << 10,
                    env.queue.doorbell_offset,
                    0,
                    0,
                ],
            );
        }
    }
}

enum Source {
    /// Ring base, ring size in dwords, slot.
    Ring(u64, u64, u64),
    /// A linear buffer at this address.
    Linear(u64),
}

/// Reads the PM4 packet at `src` into `out`; `None` if it is longer than the `avail` dwords
/// that may be read.
fn fetch_pm4(
    vm: &GpuVm,
    src: Source,
    avail: u64,
    out: &mut Vec<u32>,
) -> Result<Option<usize>, QueueError> {
    let read = |n: usize, out: &mut Vec<u32>| match src {
        Source::Ring(base, ring, slot) => read_ring(vm, base, ring, slot, n, out),
        Source::Linear(addr) => read_linear(vm, addr, n, out),
    };
    read(1, out)?;
    let header = Type3Header::from_bits(out[0]);
    let len = match header.packet_type() {
        PacketType::Type3 => header.total_dwords(),
        // Type 2 is a one-dword filler; types 0 and 1 are rejected by the decoder.
        _ => 1,
    };
    if len as u64 > avail {
        return Ok(None);
    }
    if len > 1 {
        read(len, out)?;
    }
    Ok(Some(len))
}

/// Decodes and executes one PM4 packet of a user queue.
fn exec_packet(
    words: &[u32],
    addr: u64,
    gen: GfxGen,
    state: &mut CpState,
    env: &mut ExecEnv<'_>,
) -> Result<Flow, QueueError> {
    let (packet, _) = decode_pm4_packet(words, gen).map_err(|e| QueueError::BadPacket {
        addr,
        reason: e.to_string(),
    })?;
    log::trace!(target: "hw::cp", "{addr:#x}: {packet}");
    let flow = exec_pm4(&packet, addr, state, env)?;
    if flow != Flow::Yield {
        state.progress = 0;
    }
    Ok(flow)
}

/// Executes one decoded PM4 packet of a user queue with the queue's CP state. Every packet
/// kind has its arm: a new one in the packet table makes this match fail to compile.
pub fn exec_pm4(
    p: &Packet<'_>,
    addr: u64,
    state: &mut CpState,
    env: &mut ExecEnv<'_>,
) -> Result<Flow, QueueError> {
    match p {
        // Caches are coherent and the pipeline is idle between packets in the model.
        Packet::Nop(_)
        | Packet::Type2Filler
        | Packet::AcquireMemGfx9(_)
        | Packet::AcquireMemGfx10(_)
        | Packet::EventWrite(_)
        | Packet::EventWriteAddr(_) => Ok(Flow::Next),
        Packet::SetShReg(s) => {
            for (reg, value) in s.registers() {
                state.sh.set(reg, value);
            }
            Ok(Flow::Next)
        }
        // Context registers are graphics state: a compute queue has none to write.
        Packet::SetContextReg(_) => Ok(Flow::Next),
        Packet::WriteData(w) => write_data(w, addr, env),
        Packet::ReleaseMemGfx9(r) => release_mem(&r.tail, addr, env),
        Packet::ReleaseMemGfx10(r) => release_mem(&r.tail, addr, env),
        Packet::WaitRegMem(w) => {
            let value = poll(w.target(), false, env)?;
            let met = w
                .control
                .function()
                .compare(value & u64::from(w.mask), u64::from(w.reference));
            Ok(if met { Flow::Next } else { Flow::Park })
        }
        Packet::WaitRegMem64(w) => {
            let value = poll(w.target(), true, env)?;
            let met = w
                .control
                .function()
                .compare(value & w.mask(), w.reference());
            Ok(if met { Flow::Next } else { Flow::Park })
        }
        Packet::IndirectBuffer(ib) => {
            let f = IbFrame::new(ib.ib_addr(), ib.control.ib_size());
            Ok(if ib.control.chain() {
                Flow::Chain(f)
            } else {
                Flow::Call(f)
            })
        }
        Packet::CopyData(c) => copy_data(c, addr, env),
        Packet::DmaData(d) => dma_data(d, addr, &mut state.progress, env),
        Packet::DispatchDirect(d) => dispatch_direct(d, addr, state, env),
        Packet::SetResources(_)
        | Packet::RunList(_)
        | Packet::MapProcess(_)
        | Packet::MapProcessAldebaran(_)
        | Packet::MapQueues(_)
        | Packet::UnmapQueues(_)
        | Packet::QueryStatus(_) => Err(QueueError::BadPacket {
            addr,
            reason: format!(
                "{} is a scheduler packet; user queues cannot execute it",
                p.name()
            ),
        }),
    }
}

fn register(env: &ExecEnv<'_>, reg: u32) -> u32 {
    env.registers.get(&reg).copied().unwrap_or(0)
}

fn poll(target: PollTarget, wide: bool, env: &ExecEnv<'_>) -> Result<u64, QueueError> {
    Ok(match target {
        PollTarget::Memory(a) if wide => env.vm.load_u64(a)?,
        PollTarget::Memory(a) => u64::from(env.vm.load_u32(a)?),
        PollTarget::Register { reg, .. } => {
            let lo = u64::from(register(env, reg));
            if wide {
                lo | u64::from(register(env, reg + 1)) << 32
            } else {
                lo
            }
        }
    })
}

fn write_data(w: &WriteData<'_>, addr: u64, env: &mut ExecEnv<'_>) -> Result<Flow, QueueError> {
    let one_addr = w.head.control.addr_incr();
    match w.target() {
        Some(WriteDataTarget::Memory(dst)) if one_addr => {
            for &v in w.data {
                env.vm.store_u32(dst, v)?;
            }
        }
        Some(WriteDataTarget::Memory(dst)) => env.vm.write(dst, w.data.as_bytes())?,
        Some(WriteDataTarget::Register(reg)) => {
            for (i, &v) in w.data.iter().enumerate() {
                let r = if one_addr { reg } else { reg + i as u32 };
                env.registers.insert(r, v);
            }
        }
        Some(WriteDataTarget::Gds(_)) => {
            return Err(QueueError::NotModelled {
                addr,
                what: "WRITE_DATA to GDS".into(),
            })
        }
        None => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("WRITE_DATA to {}", w.head.control.dst_sel()),
            })
        }
    }
    Ok(Flow::Next)
}

fn release_mem(t: &ReleaseMemTail, addr: u64, env: &mut ExecEnv<'_>) -> Result<Flow, QueueError> {
    let c = t.data_control;
    let value = match c.data_sel() {
        ReleaseDataSel::None => None,
        ReleaseDataSel::Data32 => Some((t.data() & 0xFFFF_FFFF, 4)),
        ReleaseDataSel::Data64 => Some((t.data(), 8)),
        ReleaseDataSel::GpuClockCounter | ReleaseDataSel::SystemClockCounter => {
            Some((env.clock.now(), 8))
        }
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("RELEASE_MEM data_sel {other}"),
            })
        }
    };
    if let Some((v, size)) = value {
        match c.dst_sel() {
            ReleaseDstSel::MemoryController | ReleaseDstSel::TcL2 => {
                if size == 8 {
                    env.vm.store_u64(t.addr(), v)?;
                } else {
                    env.vm.store_u32(t.addr(), v as u32)?;
                }
            }
            other => {
                return Err(QueueError::NotModelled {
                    addr,
                    what: format!("RELEASE_MEM dst_sel {other}"),
                })
            }
        }
    }
    let interrupt = match c.int_sel() {
        ReleaseIntSel::None | ReleaseIntSel::SendDataAfterWriteConfirm => false,
        ReleaseIntSel::SendInterruptOnly
        | ReleaseIntSel::SendInterruptAfterWriteConfirm
        | ReleaseIntSel::UnconditionallySendIntCtxid => true,
        // The conditional forms compare the memory at the address with the data dwords.
        ReleaseIntSel::ConditionallySendIntCtxidBasedOn32BitCompare => {
            u64::from(env.vm.load_u32(t.addr())?) == t.data() & 0xFFFF_FFFF
        }
        ReleaseIntSel::ConditionallySendIntCtxidBasedOn64BitCompare => {
            env.vm.load_u64(t.addr())? == t.data()
        }
        other => {
            return Err(QueueError::BadPacket {
                addr,
                reason: format!("RELEASE_MEM int_sel {other}"),
            })
        }
    };
    if interrupt {
        env.interrupt(
            IH_CLIENT_GRBM_CP,
            SRC_CP_END_OF_PIPE,
            [t.int_ctxid, 0, 0, 0],
        );
    }
    Ok(Flow::Next)
}

fn copy_data(cd: &CopyData, addr: u64, env: &mut ExecEnv<'_>) -> Result<Flow, QueueError> {
    let c = cd.control;
    let wide = c.count_sel() == CopyCountSel::Bits64;
    let value = match c.src_sel() {
        CopySrcSel::MemMappedRegister => {
            let reg = (cd.src() & 0x3FFFF) as u32;
            let lo = u64::from(register(env, reg));
            if wide {
                lo | u64::from(register(env, reg + 1)) << 32
            } else {
                lo
            }
        }
        CopySrcSel::Memory | CopySrcSel::TcL2 if wide => env.vm.load_u64(cd.src())?,
        CopySrcSel::Memory | CopySrcSel::TcL2 => u64::from(env.vm.load_u32(cd.src())?),
        CopySrcSel::ImmediateData if wide => cd.src(),
        CopySrcSel::ImmediateData => cd.src() & 0xFFFF_FFFF,
        CopySrcSel::GpuClockCount | CopySrcSel::SystemClockCount => env.clock.now(),
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("COPY_DATA from {other}"),
            })
        }
    };
    match c.dst_sel() {
        CopyDstSel::MemMappedRegister | CopyDstSel::MemMappedRegisterDc => {
            let reg = (cd.dst() & 0x3FFFF) as u32;
            env.registers.insert(reg, value as u32);
            if wide {
                env.registers.insert(reg + 1, (value >> 32) as u32);
            }
        }
        CopyDstSel::Memory | CopyDstSel::TcL2 if wide => env.vm.store_u64(cd.dst(), value)?,
        CopyDstSel::Memory | CopyDstSel::TcL2 => env.vm.store_u32(cd.dst(), value as u32)?,
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("COPY_DATA to {other}"),
            })
        }
    }
    Ok(Flow::Next)
}

/// DMA_DATA; `progress` is the bytes an earlier pass already did of this packet.
fn dma_data(
    d: &DmaData,
    addr: u64,
    progress: &mut u64,
    env: &mut ExecEnv<'_>,
) -> Result<Flow, QueueError> {
    let cmd = d.command;
    let n = u64::from(cmd.byte_count());
    if cmd.sas() || cmd.das() {
        return Err(QueueError::NotModelled {
            addr,
            what: "DMA_DATA with a register address space".into(),
        });
    }
    enum Src {
        Mem(u64),
        Fill(u32),
    }
    let src = match d.control.src_sel() {
        DmaSrcSel::SrcAddr | DmaSrcSel::SrcAddrTcL2 => Src::Mem(d.src()),
        DmaSrcSel::Data => Src::Fill(d.src_addr_lo),
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("DMA_DATA from {other}"),
            })
        }
    };
    let dst = match d.control.dst_sel() {
        DmaDstSel::DstAddr | DmaDstSel::DstAddrTcL2 => Some(d.dst()),
        DmaDstSel::Nowhere => None,
        other => {
            return Err(QueueError::NotModelled {
                addr,
                what: format!("DMA_DATA to {other}"),
            })
        }
    };
    if n == 0 {
        return Ok(Flow::Next);
    }
    let vm = env.vm;
    // A plain copy between disjoint ranges or a fill runs DMA_BYTES_PER_PASS at a time.
    let chunked = !cmd.saic() && !cmd.daic() && n > DMA_BYTES_PER_PASS;
    match (&src, dst) {
        (Src::Mem(s), Some(t))
            if chunked && (t.saturating_add(n) <= *s || s.saturating_add(n) <= t) =>
        {
            let from = (*progress).min(n);
            let len = (n - from).min(DMA_BYTES_PER_PASS);
            vm.copy(t.wrapping_add(from), s.wrapping_add(from), len)?;
            return Ok(advance(progress, from + len, n));
        }
        (Src::Fill(v), Some(t)) if chunked => {
            let from = (*progress).min(n);
            let len = (n - from).min(DMA_BYTES_PER_PASS);
            vm.fill_u32(t.wrapping_add(from), len, *v)?;
            return Ok(advance(progress, from + len, n));
        }
        _ => {}
    }
    match (src, dst) {
        (Src::Mem(s), None) => vm.probe(s, if cmd.saic() { 4 } else { n }, false)?,
        (Src::Fill(_), None) => {}
        (Src::Fill(v), Some(t)) if cmd.daic() => vm.store_u32(t, v)?,
        (Src::Fill(v), Some(t)) => vm.fill_u32(t, n, v)?,
        (Src::Mem(s), Some(t)) if cmd.saic() => {
            let v = vm.load_u32(s)?;
            if cmd.daic() {
                vm.store_u32(t, v)?;
            } else {
                vm.fill_u32(t, n, v)?;
            }
        }
        (Src::Mem(s), Some(t)) if cmd.daic() => {
            // Every dword lands on the same address: the last one stays.
            vm.probe(s, n, false)?;
            let last = s.wrapping_add(n.saturating_sub(4) / 4 * 4);
            let v = vm.load_u32(last)?;
            vm.store_u32(t, v)?;
        }
        (Src::Mem(s), Some(t)) => vm.copy(t, s, n)?,
    }
    Ok(Flow::Next)
}

/// Records that `done` of `total` bytes are done: the packet yields until all are.
fn advance(progress: &mut u64, done: u64, total: u64) -> Flow {
    if done < total {
        *progress = done;
        Flow::Yield
    } else {
        Flow::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::clock::GpuClock;
    use crate::hw::engine::PASS_BUDGET;
    use crate::hw::hws::HqdSlot;
    use crate::hw::ih::IhRing;
    use crate::hw::mem::DeviceMemory;
    use crate::hw::vm::{Backing, VmMapping};
    use pm4::user::{IndirectBufferControl, ReleaseMemArgs, ReleaseMemGfx9};
    use pm4::PacketWriter;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    const BASE: u64 = 0x10_0000;

    fn vm_with(len: u64) -> (GpuVm, Arc<DeviceMemory>) {
        let mem = Arc::new(DeviceMemory::new("cp-test", len).unwrap());
        let mut vm = GpuVm::new();
        vm.map(VmMapping {
            va: BASE,
            len,
            backing: Backing::Device {
                mem: mem.clone(),
                offset: 0,
            },
            writable: true,
            handle: 1,
        });
        (vm, mem)
    }

    fn id() -> QueueIdentity {
        QueueIdentity {
            slot: HqdSlot::Compute {
                mec: 0,
                pipe: 1,
                queue: 2,
            },
            pasid: 0x8001,
            vmid: 8,
            doorbell_offset: 0x1006,
        }
    }

    fn queue(ring_dwords: u64) -> CpQueue {
        CpQueue {
            ring: CpRing {
                base: BASE,
                dwords: ring_dwords,
                rptr_report: BASE + 0x8000,
                wptr_addr: BASE + 0x8008,
                aql: false,
            },
            id: id(),
            rptr: CpReadPointer::Pm4(DwordPtr::new(0)),
            last_wptr: CpReadPointer::Pm4(DwordPtr::new(0)),
            ibs: Vec::new(),
            aql_ib_active: false,
            status: QueueStatus::default(),
            gen: GfxGen::Gfx9,
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

    /// A render node's compute-ring IB runs to its end (WRITE_DATA, RELEASE_MEM); one that
    /// chains to itself forever stops at the packet budget instead of hanging.
    #[test]
    fn a_submitted_ib_runs_to_its_end_or_to_the_budget() {
        let (vm, mem) = vm_with(0x10000);
        let clock = GpuClock::new();
        let ih = IhRing::new();
        let mut regs = BTreeMap::new();
        let mut env = ExecEnv {
            vm: &vm,
            clock: &clock,
            registers: &mut regs,
            ih: &ih,
            queue: id(),
        };
        let mut ib = [0u32; 16];
        let mut w = PacketWriter::new(&mut ib);
        w.push(&WriteData::memory(BASE + 0x9000, &[0x5151]).unwrap())
            .unwrap();
        let rm = ReleaseMemGfx9::new(
            &ReleaseMemArgs::event_signal(BASE + 0x9008, 9),
            Default::default(),
        )
        .unwrap();
        w.push(&rm).unwrap();
        let n = w.len();
        mem.write(0x2000, ib[..n].as_bytes()).unwrap();
        let frame = IbFrame::new(BASE + 0x2000, n as u32);
        let ran = CpQueue::run_submitted_ib(GfxGen::Gfx9, id(), frame, &mut env, 100);
        assert_eq!(ran.unwrap(), 2);
        assert_eq!(mem.load_u32(0x9000), Some(0x5151));
        assert_eq!(mem.load_u32(0x9008), Some(9));

        let mut looping = [0u32; 8];
        let n = PacketWriter::new(&mut looping)
            .push(
                &pm4::user::IndirectBuffer::new(
                    BASE + 0x4000,
                    4,
                    IndirectBufferControl::new().with_chain(true),
                )
                .unwrap(),
            )
            .unwrap();
        assert_eq!(n, 4);
        mem.write(0x4000, looping[..n].as_bytes()).unwrap();
        let frame = IbFrame::new(BASE + 0x4000, 4);
        let ran = CpQueue::run_submitted_ib(GfxGen::Gfx9, id(), frame, &mut env, 100);
        assert!(
            matches!(ran, Err(QueueError::NotModelled { ref what, .. }) if what.contains("more than 100 packets")),
            "{ran:?}"
        );
    }

    #[test]
    fn write_data_and_release_mem_in_an_ib_chain() {
        let (vm, mem) = vm_with(0x10000);
        let clock = GpuClock::new();
        let ih = IhRing::new();
        let mut regs = BTreeMap::new();
        // IB A at 0x2000 writes 1 to 0x9000 and chains to IB B at 0x3000, which RELEASE_MEMs 7
        // to 0x9008 with an interrupt.
        let mut ib_b = [0u32; 8];
        let rm = ReleaseMemGfx9::new(
            &ReleaseMemArgs::event_signal(BASE + 0x9008, 7),
            Default::default(),
        )
        .unwrap();
        let n_b = PacketWriter::new(&mut ib_b).push(&rm).unwrap();
        mem.write(0x3000, ib_b[..n_b].as_bytes()).unwrap();
        let mut ib_a = [0u32; 16];
        let mut w = PacketWriter::new(&mut ib_a);
        w.push(&WriteData::memory(BASE + 0x9000, &[1]).unwrap())
            .unwrap();
        w.push(
            &pm4::user::IndirectBuffer::new(
                BASE + 0x3000,
                n_b as u32,
                IndirectBufferControl::new().with_chain(true),
            )
            .unwrap(),
        )
        .unwrap();
        let n_a = w.len();
        mem.write(0x2000, ib_a[..n_a].as_bytes()).unwrap();
        let mut ring = [0u32; 8];
        let n = PacketWriter::new(&mut ring)
            .push(
                &pm4::user::IndirectBuffer::new(
                    BASE + 0x2000,
                    n_a as u32,
                    IndirectBufferControl::new(),
                )
                .unwrap(),
            )
            .unwrap();
        mem.write(0, ring[..n].as_bytes()).unwrap();
        mem.store_u64(0x8008, n as u64).unwrap();
        let mut q = queue(1024);
        let mut env = ExecEnv {
            vm: &vm,
            clock: &clock,
            registers: &mut regs,
            ih: &ih,
            queue: id(),
        };
        let r = q.run(&mut env, 0, PASS_BUDGET);
        // The ring's IB, WRITE_DATA, the chained IB, RELEASE_MEM.
        assert_eq!(
            r,
            QueueRun {
                packets: 4,
                state: RunState::Idle
            }
        );
        assert_eq!(q.ib_depth(), 0, "both IBs finished");
        assert_eq!(mem.load_u32(0x9000), Some(1));
        assert_eq!(mem.load_u32(0x9008), Some(7));
        assert_eq!(mem.load_u32(0x8000), Some(4), "wrapped rptr in dwords");
        let irq = ih.drain();
        assert_eq!(irq.len(), 1);
        assert_eq!(irq[0].source_id, SRC_CP_END_OF_PIPE);
        assert_eq!(irq[0].src_data[0], 7);
        assert_eq!(irq[0].ring_id, (1 << 2) | 1 | (2 << 4));
    }

    #[test]
    fn a_bad_address_halts_with_a_vm_fault_interrupt() {
        let (vm, mem) = vm_with(0x10000);
        let clock = GpuClock::new();
        let ih = IhRing::new();
        let mut regs = BTreeMap::new();
        let mut ring = [0u32; 8];
        let n = PacketWriter::new(&mut ring)
            .push(&WriteData::memory(0xdead_0000, &[1]).unwrap())
            .unwrap();
        mem.write(0, ring[..n].as_bytes()).unwrap();
        mem.store_u64(0x8008, n as u64).unwrap();
        let mut q = queue(1024);
        let mut env = ExecEnv {
            vm: &vm,
            clock: &clock,
            registers: &mut regs,
            ih: &ih,
            queue: id(),
        };
        assert_eq!(q.run(&mut env, 0, PASS_BUDGET).state, RunState::Halted);
        assert!(
            matches!(q.error(), Some(QueueError::VmFault(f)) if f.va == 0xdead_0000 && f.write)
        );
        let irq = ih.drain();
        assert_eq!(
            (irq[0].client_id, irq[0].source_id),
            (IH_CLIENT_UTCL2, SRC_VM_FAULT)
        );
        assert_eq!(irq[0].src_data[0], 0xdead0, "page number");
        assert_eq!(q.rptr().get(), 0, "the faulting packet is not consumed");
    }
}
