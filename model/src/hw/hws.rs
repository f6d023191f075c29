//! The hardware scheduler (HWS) firmware of the MEC: it reads the HIQ, executes the packets the
//! driver writes there (SET_RESOURCES, RUN_LIST, UNMAP_QUEUES, QUERY_STATUS, register writes),
//! walks runlist IBs (MAP_PROCESS, MAP_QUEUES, the chain RUN_LIST), and maps the listed queues
//! into hardware queue descriptors (HQDs) and SDMA queue slots, giving each process a VMID.
//!
//! It knows the driver only through bytes: the HIQ MQD, ring, pointers, IBs and fences in GART,
//! decoded with `pm4` and `mqd`. When the runlist is larger than the hardware (more queues
//! than HQDs or more processes than VMIDs) it time-slices: at each [`Hws::tick`] the quantum
//! ends, every queue is preempted, and mapping resumes queue by queue with the first queue the
//! last quantum left out, so every queue of the runlist gets its turn.

use crate::config::Strict;
use crate::hw::cp::{CpQueue, ShRegisters};
use crate::hw::engine::{EngineActivity, ExecEnv, QueueError, QueueIdentity, RunState};
use crate::hw::gart::Gart;
use crate::hw::gpu::Gpu;
use crate::hw::sdma::SdmaQueue;
use crate::hw::spi::ShaderArray;
use crate::hw::spi::{ProcessRegisters, TrapHandler, FIRST_LEVEL_TRAP_HANDLER};
use crate::hw::vm::GpuVm;
use mqd::{ComputeDescriptor, ComputeMqd, Generation, SdmaMqd};
use pm4::decode::{decode_pm4_packet, Packet};
use pm4::hws::{
    MapProcessCommon, MapQueueType, MapQueues, QueryCommand, QueryTarget, QueueEngine, RunList,
    UnmapAction, UnmapTarget,
};
use pm4::user::WriteDataTarget;
use pm4::SdmaGen;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One queue of a runlist, as a MAP_QUEUES packet described it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunlistQueue {
    /// Engine the queue runs on.
    pub engine: QueueEngine,
    /// Normal, static or debug queue.
    pub queue_type: MapQueueType,
    /// Doorbell dword index in the BAR.
    pub doorbell_offset: u32,
    /// GART address of the MQD.
    pub mqd_addr: u64,
    /// Where the write pointer lives (process VA).
    pub wptr_addr: u64,
    /// The queue controls GWS.
    pub gws: bool,
}

/// One process of a runlist, as a MAP_PROCESS packet described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunlistProcess {
    /// PASID.
    pub pasid: u16,
    /// Page-directory base (selects the process's GPU VM).
    pub page_table_base: u64,
    /// `num_queues` field: all of the process's queues on the device.
    pub num_queues: u16,
    /// Trap handler base address.
    pub tba_addr: u64,
    /// Trap handler memory address.
    pub tma_addr: u64,
    /// `SH_MEM_CONFIG` (its RETRY_DISABLE bit says whether XNACK replay is off).
    pub sh_mem_config: u32,
    /// `SH_MEM_BASES`: the process's LDS and scratch apertures.
    pub sh_mem_bases: u32,
    /// The queues the runlist maps for it (active queues only).
    pub queues: Vec<RunlistQueue>,
}

/// Where a mapped queue runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HqdSlot {
    /// A compute HQD: MEC, pipe, queue.
    Compute {
        /// MEC index.
        mec: u8,
        /// Pipe.
        pipe: u8,
        /// Queue within the pipe.
        queue: u8,
    },
    /// An SDMA queue slot (RLC queue) of an engine.
    Sdma {
        /// Engine.
        engine: u8,
        /// Queue slot within the engine.
        queue: u8,
    },
}

/// A queue the firmware has mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedQueue {
    /// Where.
    pub slot: HqdSlot,
    /// The owning process.
    pub pasid: u16,
    /// The VMID the firmware gave the process.
    pub vmid: u8,
    /// Its page-directory base.
    pub page_table_base: u64,
    /// The queue.
    pub queue: RunlistQueue,
}

/// A fault the firmware can be told to have (fault injection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HwsFaults {
    /// Stop processing the HIQ altogether (no fence is ever written).
    pub hang: bool,
    /// The queue with this doorbell offset does not preempt: UNMAP leaves it mapped and the
    /// firmware reports its doorbell in the HIQ MQD's `queue_doorbell_id0`.
    pub unpreemptible_doorbell: Option<u32>,
    /// The HIQ has no room: every packet the driver tries to write there fails (`ENOMEM`).
    pub hiq_full: bool,
    /// A slow engine: each user-queue packet takes at least this long (the queue runs one
    /// packet per pass and waits out the time before the next).
    pub packet_delay: Option<std::time::Duration>,
}

/// Counters of what the firmware did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HwsStats {
    /// HIQ packets executed.
    pub packets: u64,
    /// RUN_LIST packets accepted.
    pub runlists: u64,
    /// UNMAP_QUEUES packets executed.
    pub unmaps: u64,
    /// Fences written by QUERY_STATUS.
    pub fences: u64,
    /// Queues mapped into HQD or SDMA slots.
    pub queue_maps: u64,
    /// Queues preempted out of their slot.
    pub queue_preemptions: u64,
    /// Time-slice rotations.
    pub rotations: u64,
}

/// The saved execution context of a user queue, kept from its first mapping until the driver
/// frees its MQD.
#[derive(Debug)]
enum QueueContext {
    Compute(Box<CpQueue>),
    Sdma(SdmaQueue),
}

/// What the engines report about one queue (for inspection and tracing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineQueueState {
    /// The HQD or SDMA slot it last ran in.
    pub slot: HqdSlot,
    /// Mapped right now.
    pub mapped: bool,
    /// The monotonic read pointer.
    pub rptr: u64,
    /// The last write pointer the engine saw.
    pub wptr: u64,
    /// The pointers' unit: "dwords" (PM4), "packets" (AQL) or "bytes" (SDMA).
    pub unit: &'static str,
    /// Packets executed so far.
    pub packets: u64,
    /// Waiting on memory at the end of its last pass.
    pub parked: bool,
    /// Why it stopped, if it did.
    pub error: Option<QueueError>,
    /// The SH registers its SET_SH_REG packets wrote (compute queues; `None` for SDMA).
    pub sh_registers: Option<ShRegisters>,
}

#[derive(Debug)]
struct State {
    /// The part's generation: its MQD and PM4 layouts.
    generation: Generation,
    /// The SDMA engines' IP version (count widths, broadcast copy).
    sdma_gen: SdmaGen,
    /// The ISA of the compute units, or why the model cannot run this GPU's shaders.
    shader_isa: Result<isa::Target, String>,
    /// Host threads a dispatch's workgroups run on.
    cu_threads: usize,
    /// What dispatches report instead of tolerating it (`KFD_MODEL_STRICT`).
    strict: Strict,
    /// The compute units dispatches place their waves on.
    shader_array: ShaderArray,
    sdma_engines: u8,
    sdma_queues_per_engine: u8,
    hiq_mqd: Option<u64>,
    hiq_rptr: u64,
    vmid_mask: u16,
    hqd_slots: Vec<HqdSlot>,
    runlist: Vec<RunlistProcess>,
    runlist_ib: Option<(u64, u32)>,
    oversubscribed: bool,
    process_cnt: u8,
    /// Where the next quantum starts, as a position in the runlist's queues (process by
    /// process, each process's queues in runlist order).
    rotation: usize,
    /// How far the next time slice moves [`State::rotation`]: to the first queue the current
    /// quantum left out.
    rotation_step: usize,
    mapped: Vec<MappedQueue>,
    registers: BTreeMap<u32, u32>,
    faults: HwsFaults,
    stats: HwsStats,
    last_error: Option<String>,
    /// Engine contexts by MQD address.
    contexts: HashMap<u64, QueueContext>,
    /// MQDs mapped since the engines last looked: their context is refreshed from the MQD.
    remapped: Vec<u64>,
    /// Slow-engine fault: when each queue may run its next packet.
    not_before: HashMap<u64, std::time::Instant>,
}

/// The firmware of one GPU.
#[derive(Debug)]
pub struct Hws {
    state: Mutex<State>,
    /// Threads other than the engine's that asked for `state`, and those of them that got
    /// it. The engine thread holds the lock for a whole pass (a dispatch's time slice
    /// included) and takes it again at once; a mutex is not fair, so without this the
    /// driver's HIQ doorbell could wait seconds behind a never-ending kernel. The engine lets
    /// in those that asked before it, not later ones, so neither side starves.
    asked: AtomicUsize,
    served: AtomicUsize,
}

impl Hws {
    /// The GPU whose gfx name is `gfx` runs kernels on the model's compute units when the
    /// model has its ISA (gfx900, gfx906, gfx908, gfx90a); others stop their dispatches with
    /// "ISA not modelled for this GPU".
    pub fn with_shader_isa(self, gfx: &str) -> Self {
        let isa = gfx
            .parse::<isa::Target>()
            .map_err(|e| format!("ISA not modelled for this GPU ({e})"));
        if let Ok(mut s) = self.state.lock() {
            s.shader_isa = isa;
        }
        self
    }

    /// The SDMA engines are of IP version `gen` (by default the oldest of the MQD
    /// generation's).
    pub fn with_sdma_gen(self, gen: SdmaGen) -> Self {
        if let Ok(mut s) = self.state.lock() {
            s.sdma_gen = gen;
        }
        self
    }

    /// Dispatches run their workgroups on `threads` host threads (at least 1).
    pub fn with_cu_threads(self, threads: usize) -> Self {
        if let Ok(mut s) = self.state.lock() {
            s.cu_threads = threads.max(1);
        }
        self
    }

    /// Dispatches report what `strict` names instead of tolerating it.
    pub fn with_strict(self, strict: Strict) -> Self {
        if let Ok(mut s) = self.state.lock() {
            s.strict = strict;
        }
        self
    }

    /// The GPU's compute units, over which dispatches place their waves (`HW_ID`).
    pub fn with_shader_array(self, array: ShaderArray) -> Self {
        if let Ok(mut s) = self.state.lock() {
            s.shader_array = array;
        }
        self
    }

    /// Firmware for a GPU of `generation` (its MQD and PM4 layouts), with
    /// `sdma_engines` engines of `sdma_queues_per_engine` user queues.
    pub fn new(generation: Generation, sdma_engines: u8, sdma_queues_per_engine: u8) -> Self {
        Hws {
            state: Mutex::new(State {
                generation,
                sdma_gen: SdmaGen::from(generation),
                shader_isa: Err("ISA not modelled for this GPU".into()),
                cu_threads: 1,
                strict: Strict::default(),
                shader_array: ShaderArray::default(),
                sdma_engines,
                sdma_queues_per_engine,
                hiq_mqd: None,
                hiq_rptr: 0,
                vmid_mask: 0,
                hqd_slots: Vec::new(),
                runlist: Vec::new(),
                runlist_ib: None,
                oversubscribed: false,
                process_cnt: 0,
                rotation: 0,
                rotation_step: 1,
                mapped: Vec::new(),
                registers: BTreeMap::new(),
                faults: HwsFaults::default(),
                stats: HwsStats::default(),
                last_error: None,
                contexts: HashMap::new(),
                remapped: Vec::new(),
                not_before: HashMap::new(),
            }),
            asked: AtomicUsize::new(0),
            served: AtomicUsize::new(0),
        }
    }

    /// The firmware's state for the driver or an observer: announced, so the engine thread
    /// lets it in before its next pass.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.asked.fetch_add(1, Ordering::AcqRel);
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.served.fetch_add(1, Ordering::AcqRel);
        s
    }

    /// The firmware's state for one engine pass: after the threads that asked for it first.
    fn lock_for_pass(&self) -> MutexGuard<'_, State> {
        let before = self.asked.load(Ordering::Acquire);
        // Wrapping counters: `served` trails `asked` by the threads still waiting.
        while (before.wrapping_sub(self.served.load(Ordering::Acquire)) as isize) > 0 {
            std::thread::yield_now();
        }
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// amdgpu maps the HIQ through the KIQ: the firmware learns where the HIQ MQD is.
    pub fn load_hiq(&self, mqd_addr: u64) {
        let mut s = self.lock();
        s.hiq_mqd = Some(mqd_addr);
        s.hiq_rptr = 0;
        log::debug!(target: crate::layer::HWS, "HIQ loaded from MQD at {mqd_addr:#x} (MEC1 pipe 0 queue 0)");
    }

    /// The HIQ doorbell rang: executes everything between the HIQ read and write pointers.
    pub fn hiq_doorbell(&self, gart: &Gart) {
        let mut s = self.lock();
        if s.faults.hang {
            log::warn!(target: crate::layer::HWS, "firmware hung: HIQ doorbell ignored");
            return;
        }
        let Some(mqd_addr) = s.hiq_mqd else {
            log::warn!(target: crate::layer::HWS, "HIQ doorbell before the HIQ was loaded");
            return;
        };
        let Some(mqd) = read_compute_mqd(gart, s.generation, mqd_addr) else {
            s.fail("the HIQ MQD is unreadable");
            return;
        };
        let ring_base = mqd.ring_base_address();
        let ring_dwords = mqd.ring_size_bytes() / 4;
        let Some(wptr) = gart.load_u64(mqd.wptr_poll_address()) else {
            s.fail("the HIQ write pointer is outside GART");
            return;
        };
        let Some(ring) = gart
            .read_dwords(ring_base, ring_dwords as usize)
            .filter(|_| ring_dwords > 0)
        else {
            s.fail("the HIQ ring is outside GART");
            return;
        };
        while s.hiq_rptr < wptr {
            let slot = (s.hiq_rptr % ring_dwords) as usize;
            let (packet, len) = match decode_pm4_packet(&ring[slot..], s.generation) {
                Ok(p) => p,
                Err(e) => {
                    s.fail(&format!("bad packet on the HIQ at dword {slot}: {e}"));
                    return;
                }
            };
            log::trace!(target: crate::layer::HWS, "HIQ {slot:#05x}: {packet}");
            s.stats.packets += 1;
            s.execute(gart, mqd_addr, &packet);
            s.hiq_rptr += len as u64;
            if s.faults.hang {
                return;
            }
        }
        // Report the wrapped read pointer where the driver reads it.
        let _ = gart.store_u64(mqd.rptr_report_address(), s.hiq_rptr % ring_dwords);
    }

    /// Time slice: when the runlist does not fit the hardware, the quantum ends: every queue
    /// is preempted and mapping starts again from the first queue the last quantum left out.
    pub fn tick(&self, gart: &Gart) {
        let mut s = self.lock_for_pass();
        let queues = s.runlist_queue_count();
        if !s.oversubscribed || queues == 0 {
            return;
        }
        s.preempt_where(gart, |_| true);
        s.rotation = (s.rotation + s.rotation_step) % queues;
        s.stats.rotations += 1;
        s.schedule(gart);
    }

    /// How many time slices give every queue of an oversubscribed runlist at least one
    /// quantum on the hardware (0 when the runlist fits): each slice moves on by at least one
    /// queue, so the runlist's queue count is enough.
    pub fn quanta_per_round(&self) -> usize {
        let s = self.lock();
        if s.oversubscribed {
            s.runlist_queue_count()
        } else {
            0
        }
    }

    /// The queues mapped right now, in slot order.
    pub fn mapped_queues(&self) -> Vec<MappedQueue> {
        let mut v = self.lock().mapped.clone();
        v.sort_by_key(|m| m.slot);
        v
    }

    /// The current runlist.
    pub fn runlist(&self) -> Vec<RunlistProcess> {
        self.lock().runlist.clone()
    }

    /// Whether the current runlist is oversubscribed (chained).
    pub fn oversubscribed(&self) -> bool {
        self.lock().oversubscribed
    }

    /// The compute HQD slots SET_RESOURCES gave the scheduler.
    pub fn hqd_slots(&self) -> Vec<HqdSlot> {
        self.lock().hqd_slots.clone()
    }

    /// Counters.
    pub fn stats(&self) -> HwsStats {
        self.lock().stats
    }

    /// A register written through WRITE_DATA.
    pub fn register(&self, offset: u32) -> Option<u32> {
        self.lock().registers.get(&offset).copied()
    }

    /// Why the firmware last stopped, if it did.
    pub fn last_error(&self) -> Option<String> {
        self.lock().last_error.clone()
    }

    /// Sets the injected faults.
    pub fn set_faults(&self, faults: HwsFaults) {
        self.lock().faults = faults;
    }

    /// The injected faults.
    pub fn faults(&self) -> HwsFaults {
        self.lock().faults
    }

    /// Per-queue reset of the queue with `doorbell` (after it failed to preempt): it leaves its
    /// slot and the runlist.
    pub fn reset_queue(&self, gart: &Gart, doorbell: u32) {
        let mut s = self.lock();
        s.preempt_where(gart, |q| q.queue.doorbell_offset == doorbell);
        for p in &mut s.runlist {
            p.queues.retain(|q| q.doorbell_offset != doorbell);
        }
        s.runlist.retain(|p| !p.queues.is_empty());
        if s.faults.unpreemptible_doorbell == Some(doorbell) {
            s.faults.unpreemptible_doorbell = None;
        }
        log::warn!(target: crate::layer::HWS, "queue with doorbell {doorbell:#x} reset");
    }

    /// A GPU reset: the firmware restarts with nothing mapped and no HIQ.
    pub fn reset(&self, gart: &Gart) {
        let mut s = self.lock();
        s.preempt_where(gart, |_| true);
        s.runlist.clear();
        s.runlist_ib = None;
        s.oversubscribed = false;
        s.hiq_mqd = None;
        s.hiq_rptr = 0;
        s.hqd_slots.clear();
        s.faults = HwsFaults::default();
        s.last_error = None;
        // The reset restarts every engine: queues resume from their saved pointers, errors
        // are gone.
        let keys: Vec<u64> = s.contexts.keys().copied().collect();
        s.remapped.extend(keys);
        for c in s.contexts.values_mut() {
            match c {
                QueueContext::Compute(q) => q.clear_error(),
                QueueContext::Sdma(q) => q.clear_error(),
            }
        }
    }

    /// The driver freed the MQD at `mqd_addr` (its queue is destroyed): the engine context
    /// goes too, so a new queue whose MQD lands at the same address starts afresh.
    pub fn forget_queue(&self, mqd_addr: u64) {
        let mut s = self.lock();
        s.contexts.remove(&mqd_addr);
        s.not_before.remove(&mqd_addr);
        s.remapped.retain(|&a| a != mqd_addr);
    }

    /// What the engines know about the queue whose MQD is at `mqd_addr`.
    pub fn queue_state(&self, mqd_addr: u64) -> Option<EngineQueueState> {
        let s = self.lock();
        let mapped = s.mapped.iter().any(|m| m.queue.mqd_addr == mqd_addr);
        Some(match s.contexts.get(&mqd_addr)? {
            QueueContext::Compute(q) => EngineQueueState {
                slot: q.id.slot,
                mapped,
                rptr: q.rptr().get(),
                wptr: q.last_wptr().get(),
                unit: q.rptr().unit(),
                packets: q.packets(),
                parked: q.is_parked(),
                error: q.error().cloned(),
                sh_registers: Some(q.sh_registers().clone()),
            },
            QueueContext::Sdma(q) => EngineQueueState {
                slot: q.id.slot,
                mapped,
                rptr: q.rptr().get(),
                wptr: q.last_wptr().get(),
                unit: "bytes",
                packets: q.packets(),
                parked: q.is_parked(),
                error: q.error().cloned(),
                sh_registers: None,
            },
        })
    }

    /// The error that stopped the queue with doorbell `doorbell_offset`, if one did.
    pub fn queue_error(&self, doorbell_offset: u32) -> Option<QueueError> {
        let s = self.lock();
        s.contexts.values().find_map(|c| match c {
            QueueContext::Compute(q) if q.id.doorbell_offset == doorbell_offset => {
                q.error().cloned()
            }
            QueueContext::Sdma(q) if q.id.doorbell_offset == doorbell_offset => q.error().cloned(),
            _ => None,
        })
    }

    /// One pass of the engines over every mapped queue: each runs until it is idle, parks on a
    /// wait, stops on an error or uses up its budget. Interrupts go to the GPU's IH ring.
    pub fn run_queues(&self, gpu: &Gpu) -> EngineActivity {
        let mut s = self.lock_for_pass();
        let mut activity = EngineActivity::default();
        if s.mapped.is_empty() {
            return activity;
        }
        let State {
            mapped,
            runlist,
            contexts,
            registers,
            remapped,
            generation,
            sdma_gen,
            shader_isa,
            cu_threads,
            strict,
            shader_array,
            faults,
            not_before,
            ..
        } = &mut *s;
        let now = std::time::Instant::now();
        let (budget, delay) = match faults.packet_delay {
            Some(d) => (1, d),
            None => (crate::hw::engine::PASS_BUDGET, std::time::Duration::ZERO),
        };
        for m in mapped.iter() {
            if budget == 1 && not_before.get(&m.queue.mqd_addr).is_some_and(|&t| t > now) {
                activity.throttled += 1;
                continue;
            }
            let Some(vm) = gpu.vm(m.page_table_base) else {
                continue;
            };
            let vm = vm.read().unwrap_or_else(|e| e.into_inner());
            let doorbell = gpu.doorbells.read_bar_index(m.queue.doorbell_offset);
            let id = QueueIdentity {
                slot: m.slot,
                pasid: m.pasid,
                vmid: m.vmid,
                doorbell_offset: m.queue.doorbell_offset,
            };
            let addr = m.queue.mqd_addr;
            let refresh = remapped.contains(&addr);
            let ctx = match contexts.entry(addr) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    let c = e.into_mut();
                    if refresh {
                        match c {
                            QueueContext::Compute(q) => {
                                if let Some(mqd) = read_compute_mqd(&gpu.gart, *generation, addr) {
                                    q.remap(&mqd, m.queue.wptr_addr, id, &vm, doorbell);
                                }
                            }
                            QueueContext::Sdma(q) => {
                                if let Some(mqd) = read_sdma_mqd(&gpu.gart, *generation, addr) {
                                    q.remap(&mqd, m.queue.wptr_addr, id);
                                }
                            }
                        }
                    }
                    c
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    let c = match m.slot {
                        HqdSlot::Compute { .. } => {
                            let Some(mqd) = read_compute_mqd(&gpu.gart, *generation, addr) else {
                                continue;
                            };
                            let mut q = CpQueue::from_mqd(&mqd, m.queue.wptr_addr, id, *generation);
                            q.set_shader_isa(shader_isa.clone());
                            q.set_shader_activity(gpu.shader.clone());
                            q.set_cu_threads(*cu_threads);
                            q.set_strict(*strict);
                            q.set_shader_array(*shader_array);
                            QueueContext::Compute(Box::new(q))
                        }
                        HqdSlot::Sdma { .. } => {
                            let Some(mqd) = read_sdma_mqd(&gpu.gart, *generation, addr) else {
                                continue;
                            };
                            QueueContext::Sdma(SdmaQueue::from_mqd(
                                &mqd,
                                m.queue.wptr_addr,
                                id,
                                *sdma_gen,
                            ))
                        }
                    };
                    v.insert(c)
                }
            };
            if refresh {
                remapped.retain(|&a| a != addr);
            }
            let mut env = ExecEnv {
                vm: &vm,
                clock: &gpu.clock,
                registers: &mut *registers,
                ih: &gpu.ih,
                queue: id,
            };
            let run = match ctx {
                QueueContext::Compute(q) => {
                    if let Some(p) = runlist.iter().find(|p| p.pasid == m.pasid) {
                        q.set_process_registers(process_registers(&vm, p));
                    }
                    q.run(&mut env, doorbell, budget)
                }
                QueueContext::Sdma(q) => q.run(&mut env, doorbell, budget),
            };
            if budget == 1 && run.packets > 0 {
                not_before.insert(addr, now + delay);
            }
            if run.state != RunState::Idle || run.packets > 0 {
                log::trace!(target: crate::layer::ENGINE, "queue {:#x} ({:?}): {} packet(s), {:?}", id.doorbell_offset, id.slot, run.packets, run.state);
            }
            activity.add_queue(run);
        }
        activity
    }
}

fn read_sdma_mqd(gart: &Gart, gen: Generation, addr: u64) -> Option<SdmaMqd> {
    let mut bytes = vec![0u8; SdmaMqd::size(gen)];
    gart.read(addr, &mut bytes)?;
    SdmaMqd::decode(gen, &bytes).ok()
}

fn read_compute_mqd(gart: &Gart, gen: Generation, addr: u64) -> Option<ComputeMqd> {
    let mut bytes = [0u8; 2048];
    gart.read(addr, &mut bytes)?;
    ComputeMqd::decode(gen, &bytes).ok()
}

impl State {
    fn fail(&mut self, why: &str) {
        log::error!(target: crate::layer::HWS, "firmware stops: {why}");
        self.last_error = Some(why.to_owned());
        self.faults.hang = true;
    }

    fn execute(&mut self, gart: &Gart, hiq_mqd: u64, packet: &Packet<'_>) {
        match packet {
            Packet::Nop(_) | Packet::Type2Filler => {}
            Packet::SetResources(p) => {
                self.vmid_mask = p.dw1.vmid_mask();
                // Bit `mec*32 + pipe*8 + queue` of the mask is an HQD the scheduler may use.
                let mask = p.queue_mask();
                self.hqd_slots = (0..64u8)
                    .filter(|b| mask & (1u64 << b) != 0)
                    .map(|b| HqdSlot::Compute {
                        mec: b / 32,
                        pipe: (b % 32) / 8,
                        queue: b % 8,
                    })
                    .collect();
                log::debug!(
                    target: crate::layer::HWS,
                    "SET_RESOURCES: VMIDs {:#06x}, {} HQDs (mask {mask:#x})",
                    self.vmid_mask,
                    self.hqd_slots.len()
                );
            }
            Packet::RunList(rl) => self.run_list(gart, rl),
            Packet::UnmapQueues(u) => {
                self.stats.unmaps += 1;
                let target = u.target();
                let reset = u.dw1.action() == UnmapAction::Reset;
                let matches = |q: &MappedQueue| match target {
                    UnmapTarget::AllQueues => true,
                    UnmapTarget::DynamicQueues => !is_static(q.queue.queue_type),
                    UnmapTarget::Pasid(p) => q.pasid == p,
                    UnmapTarget::Queues {
                        doorbell_offsets,
                        count,
                    } => doorbell_offsets[..count as usize].contains(&q.queue.doorbell_offset),
                };
                let stuck = self.faults.unpreemptible_doorbell;
                let failed = self
                    .mapped
                    .iter()
                    .find(|q| matches(q) && Some(q.queue.doorbell_offset) == stuck)
                    .copied();
                if let Some(f) = failed {
                    // The firmware gives up on the unmap and logs the doorbell in the HIQ MQD.
                    log::warn!(target: crate::layer::HWS, "queue with doorbell {:#x} did not preempt", f.queue.doorbell_offset);
                    if let Some(mut hiq) = read_compute_mqd(gart, self.generation, hiq_mqd) {
                        hiq.set_queue_doorbell_id0(f.queue.doorbell_offset);
                        let _ = gart.write(hiq_mqd, hiq.bytes());
                    }
                }
                let before = self.mapped.len();
                let gone = |pasid: u16, q: &RunlistQueue| {
                    let on_hw = MappedQueue {
                        slot: HqdSlot::Sdma {
                            engine: 0,
                            queue: 0,
                        },
                        pasid,
                        vmid: 0,
                        page_table_base: 0,
                        queue: *q,
                    };
                    matches(&on_hw) && Some(q.doorbell_offset) != stuck
                };
                self.preempt_where(gart, |m| gone(m.pasid, &m.queue));
                // Unmapped queues leave the runlist; the driver sends a new one afterwards.
                for p in &mut self.runlist {
                    let pasid = p.pasid;
                    p.queues.retain(|q| !gone(pasid, q));
                }
                self.runlist.retain(|p| !p.queues.is_empty());
                if self.runlist.is_empty() {
                    self.oversubscribed = false;
                    self.runlist_ib = None;
                }
                log::debug!(
                    target: crate::layer::HWS,
                    "UNMAP_QUEUES {} {target:?}: {} queue(s) off the hardware",
                    if reset { "reset" } else { "preempt" },
                    before - self.mapped.len()
                );
            }
            Packet::QueryStatus(q) => {
                if q.target() == QueryTarget::Completion
                    && matches!(
                        q.dw1.command(),
                        QueryCommand::FenceOnlyAfterWriteAck
                            | QueryCommand::FenceOnlyImmediate
                            | QueryCommand::FenceWaitForWriteAckSendInterrupt
                    )
                {
                    if gart.store_u64(q.fence_addr(), q.fence_value()).is_some() {
                        self.stats.fences += 1;
                        log::debug!(target: crate::layer::HWS, "QUERY_STATUS: fence {:#x} = {}", q.fence_addr(), q.fence_value());
                    } else {
                        self.fail("QUERY_STATUS fence address is outside GART");
                    }
                }
            }
            Packet::WriteData(w) => {
                if let (Some(WriteDataTarget::Register(reg)), Some(&value)) =
                    (w.target(), w.data.last())
                {
                    self.registers.insert(reg, value);
                }
            }
            // What only user queues or runlist IBs carry: the firmware ignores it on the HIQ.
            Packet::MapProcess(_)
            | Packet::MapProcessAldebaran(_)
            | Packet::MapQueues(_)
            | Packet::ReleaseMemGfx9(_)
            | Packet::ReleaseMemGfx10(_)
            | Packet::AcquireMemGfx9(_)
            | Packet::AcquireMemGfx10(_)
            | Packet::WaitRegMem(_)
            | Packet::WaitRegMem64(_)
            | Packet::IndirectBuffer(_)
            | Packet::CopyData(_)
            | Packet::DmaData(_)
            | Packet::EventWrite(_)
            | Packet::EventWriteAddr(_)
            | Packet::SetShReg(_)
            | Packet::SetContextReg(_)
            | Packet::DispatchDirect(_) => {
                log::warn!(target: crate::layer::HWS, "unexpected packet on the HIQ: {}", packet.name())
            }
        }
    }

    fn run_list(&mut self, gart: &Gart, rl: &RunList) {
        let ib_addr = rl.ib_addr();
        let ib_dwords = rl.control.ib_size();
        let Some(ib) = gart.read_dwords(ib_addr, ib_dwords as usize) else {
            self.fail("the runlist IB is outside GART");
            return;
        };
        let mut processes: Vec<RunlistProcess> = Vec::new();
        let mut chained = false;
        let mut pos = 0usize;
        while pos < ib.len() {
            let (packet, len) = match decode_pm4_packet(&ib[pos..], self.generation) {
                Ok(p) => p,
                Err(e) => {
                    self.fail(&format!("bad packet in the runlist IB at dword {pos}: {e}"));
                    return;
                }
            };
            match &packet {
                Packet::MapProcess(m) => processes.push(process_of(&m.common)),
                Packet::MapProcessAldebaran(m) => processes.push(process_of(&m.common)),
                Packet::MapQueues(m) => match (processes.last_mut(), queue_of(m)) {
                    (Some(p), Some(q)) => p.queues.push(q),
                    _ => {
                        self.fail(&format!(
                            "MAP_QUEUES at IB dword {pos} without a process or engine"
                        ));
                        return;
                    }
                },
                Packet::RunList(chain) if chain.control.chain() => {
                    if chain.ib_addr() != ib_addr {
                        self.fail("chained runlist points at another IB");
                        return;
                    }
                    chained = true;
                    break;
                }
                Packet::Nop(_) | Packet::Type2Filler => {}
                Packet::RunList(_)
                | Packet::SetResources(_)
                | Packet::UnmapQueues(_)
                | Packet::QueryStatus(_)
                | Packet::WriteData(_)
                | Packet::ReleaseMemGfx9(_)
                | Packet::ReleaseMemGfx10(_)
                | Packet::AcquireMemGfx9(_)
                | Packet::AcquireMemGfx10(_)
                | Packet::WaitRegMem(_)
                | Packet::WaitRegMem64(_)
                | Packet::IndirectBuffer(_)
                | Packet::CopyData(_)
                | Packet::DmaData(_)
                | Packet::EventWrite(_)
                | Packet::EventWriteAddr(_)
                | Packet::SetShReg(_)
                | Packet::SetContextReg(_)
                | Packet::DispatchDirect(_) => {
                    self.fail(&format!("unexpected {} in the runlist IB", packet.name()));
                    return;
                }
            }
            pos += len;
        }
        self.stats.runlists += 1;
        self.preempt_where(gart, |_| true);
        self.runlist = processes;
        self.runlist_ib = Some((ib_addr, ib_dwords));
        self.process_cnt = rl.control.process_cnt();
        self.rotation = 0;
        self.oversubscribed = chained;
        log::debug!(
            target: crate::layer::HWS,
            "RUN_LIST: IB {ib_addr:#x} ({ib_dwords} dwords), {} process(es), {} queue(s){}",
            self.runlist.len(),
            self.runlist.iter().map(|p| p.queues.len()).sum::<usize>(),
            if chained { ", chained (oversubscribed)" } else { "" }
        );
        self.schedule(gart);
    }

    fn runlist_queue_count(&self) -> usize {
        self.runlist.iter().map(|p| p.queues.len()).sum()
    }

    /// Maps queues from the rotation point, walking the runlist's queues in order (and
    /// around): a queue is mapped when its process has or can still get a VMID (VMIDs and the
    /// quantum's process count last) and a free HQD or SDMA slot is left for it. Records where
    /// the next quantum starts: at the first queue left out.
    fn schedule(&mut self, gart: &Gart) {
        let vmids: Vec<u8> = (0..16u8)
            .filter(|v| self.vmid_mask & (1 << v) != 0)
            .collect();
        let max_procs = vmids.len().min(usize::from(self.process_cnt.max(1)));
        let order: Vec<(usize, usize)> = self
            .runlist
            .iter()
            .enumerate()
            .flat_map(|(p, proc)| (0..proc.queues.len()).map(move |q| (p, q)))
            .collect();
        let n = order.len();
        self.rotation_step = 1;
        if n == 0 {
            return;
        }
        let mut free_hqds: Vec<HqdSlot> = self.hqd_slots.clone();
        free_hqds.retain(|s| !self.mapped.iter().any(|m| m.slot == *s));
        // VMIDs of processes with queues still mapped (none after a full preemption).
        let mut vmid_of: Vec<Option<u8>> = self
            .runlist
            .iter()
            .map(|p| {
                self.mapped
                    .iter()
                    .find(|m| m.pasid == p.pasid)
                    .map(|m| m.vmid)
            })
            .collect();
        let mut first_left_out: Option<usize> = None;
        for k in 0..n {
            let (pi, qi) = order[(self.rotation + k) % n];
            let q = self.runlist[pi].queues[qi];
            let vmid = match vmid_of[pi] {
                Some(v) => Some(v),
                None if vmid_of.iter().flatten().count() < max_procs => {
                    vmids.iter().copied().find(|v| !vmid_of.contains(&Some(*v)))
                }
                None => None,
            };
            let slot = vmid.and_then(|_| match q.engine {
                QueueEngine::Compute => (!free_hqds.is_empty()).then(|| free_hqds.remove(0)),
                QueueEngine::SdmaLegacy(e) | QueueEngine::SdmaExtended(e) => {
                    if e >= self.sdma_engines {
                        return None;
                    }
                    let used = |k: u8| {
                        self.mapped.iter().any(|m| {
                            m.slot
                                == HqdSlot::Sdma {
                                    engine: e,
                                    queue: k,
                                }
                        })
                    };
                    (0..self.sdma_queues_per_engine)
                        .find(|&k| !used(k))
                        .map(|k| HqdSlot::Sdma {
                            engine: e,
                            queue: k,
                        })
                }
            });
            let (Some(vmid), Some(slot)) = (vmid, slot) else {
                first_left_out.get_or_insert(k);
                continue;
            };
            vmid_of[pi] = Some(vmid);
            let p = &self.runlist[pi];
            let (pasid, page_table_base) = (p.pasid, p.page_table_base);
            if let HqdSlot::Compute { .. } = slot {
                if let Some(mut mqd) = read_compute_mqd(gart, self.generation, q.mqd_addr) {
                    mqd.set_active(true);
                    mqd.set_vmid(u32::from(vmid));
                    let _ = gart.write(q.mqd_addr, mqd.bytes());
                }
            }
            self.remapped.push(q.mqd_addr);
            self.mapped.push(MappedQueue {
                slot,
                pasid,
                vmid,
                page_table_base,
                queue: q,
            });
            self.stats.queue_maps += 1;
            log::trace!(target: crate::layer::HWS, "pasid {pasid:#x} queue doorbell {:#x} -> {slot:?} vmid {vmid}", q.doorbell_offset);
        }
        // A queue that cannot be mapped even first in line (no engine for it) must not hold
        // the rotation still: move on by at least one.
        self.rotation_step = first_left_out.unwrap_or(1).max(1);
    }

    /// Takes the matching queues off the hardware, saving their state in their MQDs.
    fn preempt_where(&mut self, gart: &Gart, pred: impl Fn(&MappedQueue) -> bool) {
        let (gone, kept): (Vec<_>, Vec<_>) = self.mapped.drain(..).partition(|q| pred(q));
        self.mapped = kept;
        for q in gone {
            let addr = q.queue.mqd_addr;
            // The engine stops between packets (it runs under this lock) and its pointers go
            // into the MQD, as the CP saves the HQD registers.
            match q.slot {
                HqdSlot::Compute { .. } => {
                    if let Some(mut mqd) = read_compute_mqd(gart, self.generation, addr) {
                        mqd.set_active(false);
                        if let Some(QueueContext::Compute(c)) = self.contexts.get(&addr) {
                            c.save(&mut mqd);
                        }
                        let _ = gart.write(addr, mqd.bytes());
                    }
                }
                HqdSlot::Sdma { .. } => {
                    if let Some(QueueContext::Sdma(c)) = self.contexts.get(&addr) {
                        if let Some(mut mqd) = read_sdma_mqd(gart, self.generation, addr) {
                            c.save(&mut mqd);
                            let _ = gart.write(addr, mqd.as_bytes());
                        }
                    }
                }
            }
            self.remapped.retain(|&a| a != addr);
            self.stats.queue_preemptions += 1;
        }
    }
}

fn is_static(t: MapQueueType) -> bool {
    matches!(
        t,
        MapQueueType::NormalLatencyStatic
            | MapQueueType::LowLatencyStatic
            | MapQueueType::DebugInterfaceQueue
    )
}

/// The registers the hardware loads for process `p`'s waves from its `MAP_PROCESS`.
///
/// The trap handler is where the TBA register sends a trapping wave. When the driver put
/// amdkfd's first-level handler there (with CWSR it always does; the model's driver copies
/// [`FIRST_LEVEL_TRAP_HANDLER`] to TBA), that code finds the process's own handler in the first
/// two quadwords of its TMA, where `SET_TRAP_HANDLER` wrote TBA and TMA, and goes there, or, if
/// TBA is 0, returns to the wave as if there were no handler. The model stands in for that
/// code by reading the two quadwords through the process's VM. A TMA it cannot read leaves the
/// process without a handler.
fn process_registers(vm: &GpuVm, p: &RunlistProcess) -> ProcessRegisters {
    let trap_handler = (p.tba_addr != 0)
        .then(|| {
            let mut code = [0u8; FIRST_LEVEL_TRAP_HANDLER.len()];
            let first_level =
                vm.read(p.tba_addr, &mut code).is_ok() && code == FIRST_LEVEL_TRAP_HANDLER;
            if !first_level {
                return Some(TrapHandler {
                    tba: p.tba_addr,
                    tma: p.tma_addr,
                });
            }
            let mut second = [0u8; 16];
            vm.read(p.tma_addr, &mut second).ok()?;
            let tba = u64::from_le_bytes(second[..8].try_into().ok()?);
            let tma = u64::from_le_bytes(second[8..].try_into().ok()?);
            (tba != 0).then_some(TrapHandler { tba, tma })
        })
        .flatten();
    ProcessRegisters {
        trap_handler,
        retry_faults: p.sh_mem_config & pm4::regs::sh_mem::CONFIG_RETRY_DISABLE == 0,
        sh_mem_bases: p.sh_mem_bases,
    }
}

fn process_of(m: &MapProcessCommon) -> RunlistProcess {
    RunlistProcess {
        pasid: m.dw1.pasid(),
        page_table_base: m.page_table_base(),
        num_queues: m.dw13.num_queues(),
        tba_addr: m.tba_addr(),
        tma_addr: m.tma_addr(),
        sh_mem_config: m.sh_mem_config,
        sh_mem_bases: m.sh_mem_bases,
        queues: Vec::new(),
    }
}

fn queue_of(m: &MapQueues) -> Option<RunlistQueue> {
    Some(RunlistQueue {
        engine: m.engine()?,
        queue_type: m.dw1.queue_type(),
        doorbell_offset: m.dw2.doorbell_offset(),
        mqd_addr: m.mqd_addr(),
        wptr_addr: m.wptr_addr(),
        gws: m.dw1.gws_control_queue(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::mem::DeviceMemory;
    use crate::hw::vm::{Backing, VmMapping};
    use std::sync::Arc;

    const TBA: u64 = 0x2000;
    const TMA: u64 = 0x3800;

    /// A VM with two pages at [`TBA`]: `code` at the start, `tma` at [`TMA`].
    fn vm_with(code: &[u8], tma: &[u8]) -> GpuVm {
        let mem = Arc::new(DeviceMemory::new("trap pages", 0x2000).unwrap());
        mem.write(0, code).unwrap();
        mem.write((TMA - TBA) as usize, tma).unwrap();
        let mut vm = GpuVm::new();
        assert!(vm.map(VmMapping {
            va: TBA,
            len: 0x2000,
            backing: Backing::Device { mem, offset: 0 },
            writable: false,
            handle: 0,
        }));
        vm
    }

    fn process(tba_addr: u64, tma_addr: u64, sh_mem_config: u32) -> RunlistProcess {
        RunlistProcess {
            pasid: 1,
            page_table_base: 0,
            num_queues: 1,
            tba_addr,
            tma_addr,
            sh_mem_config,
            sh_mem_bases: 0x0001_0002,
            queues: Vec::new(),
        }
    }

    fn quadwords(a: u64, b: u64) -> [u8; 16] {
        let mut q = [0u8; 16];
        q[..8].copy_from_slice(&a.to_le_bytes());
        q[8..].copy_from_slice(&b.to_le_bytes());
        q
    }

    #[test]
    fn the_first_level_handler_sends_waves_to_the_handler_its_tma_names() {
        let vm = vm_with(
            &FIRST_LEVEL_TRAP_HANDLER,
            &quadwords(0x7000_1000, 0x7000_2000),
        );
        let r = process_registers(&vm, &process(TBA, TMA, 0));
        assert_eq!(
            r.trap_handler,
            Some(TrapHandler {
                tba: 0x7000_1000,
                tma: 0x7000_2000
            })
        );
        assert!(r.retry_faults);
        assert_eq!(r.sh_mem_bases, 0x0001_0002);
    }

    #[test]
    fn a_first_level_handler_with_an_empty_tma_means_no_handler() {
        let vm = vm_with(&FIRST_LEVEL_TRAP_HANDLER, &[0; 16]);
        let r = process_registers(
            &vm,
            &process(TBA, TMA, pm4::regs::sh_mem::CONFIG_RETRY_DISABLE),
        );
        assert_eq!(r.trap_handler, None);
        assert!(!r.retry_faults);
    }

    #[test]
    fn other_code_at_tba_is_the_handler_itself() {
        // s_endpgm: a handler of the process's own, named directly by MAP_PROCESS (no CWSR).
        let vm = vm_with(
            &[0x00, 0x00, 0x81, 0xbf],
            &quadwords(0x7000_1000, 0x7000_2000),
        );
        let r = process_registers(&vm, &process(TBA, TMA, 0));
        assert_eq!(r.trap_handler, Some(TrapHandler { tba: TBA, tma: TMA }));
    }

    #[test]
    fn no_tba_or_an_unreadable_tma_means_no_handler() {
        let vm = vm_with(
            &FIRST_LEVEL_TRAP_HANDLER,
            &quadwords(0x7000_1000, 0x7000_2000),
        );
        assert_eq!(
            process_registers(&vm, &process(0, TMA, 0)).trap_handler,
            None
        );
        // The first-level code, but a TMA outside every mapping.
        assert_eq!(
            process_registers(&vm, &process(TBA, 0x9000_0000, 0)).trap_handler,
            None
        );
    }
}
