//! A compute unit's part of a dispatch: running one workgroup's waves. A workgroup's waves
//! start with the ABI's initial state ([`KernelRun`]'s `new_group`), share its LDS, take
//! turns round robin on one host thread and meet at `s_barrier` and the queue's GWS; a
//! wave's trap or fault ends its workgroup's turn or enters its trap handler.

use super::code::holds;
use super::polling::Activity;
use super::sq::{enter_trap_handler, retry_fault, VmEnv, DOORBELL_ID_MASK, MSG_GET_DOORBELL};
use super::{
    DecodedCode, KernelRun, SqMessage, WaveException, QUEUE_ERROR_ILLEGAL_INSTRUCTION,
    QUEUE_ERROR_MEMORY_VIOLATION, QUEUE_ERROR_TRAP,
};
use crate::hw::engine::QueueError;
use crate::hw::gws::GwsWait;
use crate::hw::vm::{GpuVm, Tlb, VmFault};
use isa::exec::wave::HwId;
use isa::exec::{Access, CodeCache, Lanes, MemFault, Mode, Stop, Wave, WaveFault, WAVE_SIZE};
use isa::Target;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Instructions a wave runs before the next wave of its workgroup gets a turn.
pub const WAVE_TURN: u64 = 4096;

/// Instructions a wave that polled in its last run (`polling`) runs before the next wave of
/// its workgroup gets a turn.
pub const POLL_TURN: u64 = 256;

/// The first round after a barrier releases a workgroup's waves: each wave runs until its
/// first wait for a load (`Wave::run_to_memory_wait`: an `s_waitcnt` on VM_CNT after it
/// issued vector memory), at most [`WAVE_TURN`] instructions. On hardware the waves of a
/// workgroup sit on different SIMDs and all issue at once after a barrier, and a load takes
/// hundreds of clocks: every wave reads what the barrier published (LDS) before any wave can
/// write LDS with data it loaded after the barrier. Kernels rely on it (RCCL's work loop
/// reads the LDS work header after a barrier while wave 0 already loads the next header into
/// the same place). A wave an observer watches instruction by instruction ends that round
/// after this many instructions instead.
pub const BARRIER_RELEASE_TURN: u64 = 8;

/// Instructions a workgroup runs in one turn on a compute-unit thread (at least one round of
/// its waves) before the thread takes the next workgroup's turn: a workgroup that spins
/// waiting for an earlier one gives its thread back (`group_queue` says how turns go round).
pub const GROUP_TURN: u64 = 16 * 1024;

/// Bytes of one LDS allocation granule (128 dwords).
const LDS_GRANULE: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WaveState {
    Ready,
    Barrier,
    /// Waiting on a global wave sync resource of the queue.
    Gws(GwsWait),
    Done,
}

#[derive(Debug, Clone)]
pub(super) struct Workgroup {
    id: [u32; 3],
    /// Its number in launch order, and its first wave's number in the dispatch.
    pub(super) index: u64,
    pub(super) first_wave: u64,
    /// Its slot in the scratch ring: its waves' private segments follow each other there.
    pub(super) slot: u32,
    pub(super) waves: Vec<(Wave, WaveState)>,
    /// Per wave: the exception its trap handler is handling (what is reported if the handler
    /// itself fails).
    in_handler: Vec<Option<WaveException>>,
    /// Per wave: its last run's memory accesses, and whether that run polled.
    activity: Vec<(Activity, bool)>,
    lds: Vec<u8>,
    /// A barrier just released its waves: in the next round each runs to its first wait for
    /// a load ([`BARRIER_RELEASE_TURN`] says why).
    released: bool,
}

/// How a workgroup's turn on a compute unit ended.
pub(super) enum GroupEnd {
    /// Every wave ended (the workgroup is handed back so the next one reuses its waves).
    Done(Workgroup),
    /// The time slice is over (or another thread stopped the dispatch): resume it later.
    Unfinished(Workgroup),
    /// Its waves only polled (`polling`): resume it later, and let the host run a thread
    /// with other work first.
    Polled(Workgroup),
    /// A wave faulted on memory.
    Fault(QueueError),
    /// A wave faulted on memory with XNACK replay on: the workgroup waits, the faulting wave
    /// at the faulting instruction, until the driver has handled the fault.
    Retry(Box<Workgroup>, QueueError),
    /// A wave halted on a trap or an exception.
    Halt(WaveException),
}

impl KernelRun {
    /// Whether every live wave of `group` waits on a GWS resource that keeps it waiting: the
    /// group cannot run until another workgroup gets there.
    pub(super) fn gws_blocked(&self, group: &Workgroup) -> bool {
        let mut waiting = false;
        for (_, state) in &group.waves {
            match state {
                WaveState::Ready => return false,
                WaveState::Gws(w) if self.gws.could_go(*w) => return false,
                WaveState::Gws(_) => waiting = true,
                WaveState::Barrier | WaveState::Done => {}
            }
        }
        waiting
    }

    /// Runs a workgroup's waves round robin until they all end, one halts or faults, its turn
    /// ([`GROUP_TURN`] instructions) is over, or the slice is.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_group(
        &self,
        vm: &GpuVm,
        tlb: &mut Tlb,
        mut group: Workgroup,
        deadline: Instant,
        stop: &AtomicBool,
        local_code: &mut Vec<Arc<CodeCache>>,
        shared_code: &Mutex<Vec<DecodedCode>>,
        messages: &mut Vec<SqMessage>,
        retired: &mut u64,
    ) -> GroupEnd {
        let turn_end = *retired + GROUP_TURN;
        loop {
            let mut ran = false;
            let short_round = std::mem::take(&mut group.released);
            // Every wave that ran in this round polled (`polling`).
            let mut all_polled = true;
            for i in 0..group.waves.len() {
                if group.waves[i].1 != WaveState::Ready {
                    continue;
                }
                ran = true;
                let (last_activity, polled) = group.activity[i];
                let released = short_round;
                let budget = if polled && !released {
                    POLL_TURN
                } else {
                    WAVE_TURN
                };
                let sent_before = messages.len();
                // A wave enters and leaves its handler only at a stop, so PRIV at the start
                // holds for what this run sends (an s_rfe_b64 that returns to the shader
                // mid-run leaves later messages marked: amdkfd lets PRIV messages that name no
                // queue exception through to the event path anyway).
                let in_handler = group.waves[i].0.status & isa::exec::wave::status::PRIV != 0;
                let mut env = VmEnv {
                    vm,
                    tlb: &mut *tlb,
                    lds: &mut group.lds,
                    messages: &mut *messages,
                    privileged: in_handler,
                    activity: Activity::default(),
                    lds_strict: self.strict.lds,
                    lds_warned: &self.lds_warned,
                    vgpr_strict: self.strict.vgprs,
                    vgprs_warned: &self.vgprs_warned,
                    kernel_object: self.setup.kernel_object,
                };
                let wave = &mut group.waves[i].0;
                let stop_reason = loop {
                    // Borrowed, not cloned: the threads of a slice share the code's `Arc`,
                    // whose count they would otherwise pass back and forth for every wave.
                    let found = local_code.iter().position(|c| holds(c, wave.pc));
                    let at = match found {
                        Some(at) => at,
                        None => match self.decode_at(vm, wave.pc, local_code, shared_code) {
                            Ok(_) => local_code.len() - 1,
                            Err(e) => break Stop::Fault(WaveFault::Memory(e)),
                        },
                    };
                    let code: &CodeCache = &local_code[at];
                    let stop = match &self.watch {
                        Some(watch) => watch.run_local(
                            || watch.id(group.id, group.index, i as u32, group.first_wave),
                            wave,
                            code,
                            &mut env,
                            budget,
                            released,
                            retired,
                        ),
                        None => {
                            let before = wave.retired;
                            let stop = if released {
                                wave.run_to_memory_wait(code, &mut env, budget)
                            } else {
                                wave.run(code, &mut env, budget)
                            };
                            *retired += wave.retired - before;
                            stop
                        }
                    };
                    // An instruction outside the decoded window, or cut by its end: decode the
                    // window around the PC (`code_window`).
                    let outside = match &stop {
                        Stop::Fault(WaveFault::Memory(MemFault {
                            access: Access::Fetch,
                            ..
                        })) => vm.probe(wave.pc, 4, false).is_ok(),
                        Stop::Fault(WaveFault::IllegalInstruction { pc, .. }) => *pc == wave.pc,
                        _ => false,
                    };
                    if outside && !holds(code, wave.pc) {
                        match self.decode_at(vm, wave.pc, local_code, shared_code) {
                            // Cut in the window around it too: the dword after it is not
                            // mapped, and fetching it faults as on hardware.
                            Ok(fresh) if !holds(&fresh, wave.pc) => {
                                break Stop::Fault(WaveFault::Memory(MemFault {
                                    address: wave.pc + 4,
                                    access: Access::Fetch,
                                }))
                            }
                            Ok(_) => continue,
                            Err(e) => break Stop::Fault(WaveFault::Memory(e)),
                        }
                    }
                    break stop;
                };
                let activity = env.activity;
                let polls = activity.polled_after(&last_activity);
                group.activity[i] = (activity, polls);
                all_polled &= polls;
                let privileged = group.waves[i].0.status & isa::exec::wave::status::PRIV != 0;
                let sent = &messages[sent_before..];
                let asked_doorbell = sent.iter().any(|m| m.simm16 & 0xf == MSG_GET_DOORBELL);
                if asked_doorbell {
                    // The SQ answers MSG_GET_DOORBELL in EXEC_LO: the doorbell id, bit 31
                    // clear (the asking wave set bit 31 and waits for it to clear).
                    let wave = &mut group.waves[i].0;
                    let exec = wave.exec() & !0xffff_ffff;
                    wave.set_exec(exec | u64::from(self.setup.doorbell_id & DOORBELL_ID_MASK));
                }
                if stop_reason == Stop::Halt {
                    // The wave halted itself: its trap handler reported the exception (ROCr's
                    // swaps the error into queue_inactive_signal or interrupts the host with
                    // the exception code, then sets STATUS.HALT and returns), or it executed
                    // s_sethalt. It stays halted; the queue stays on the packet.
                    let ex = group.in_handler[i].take().unwrap_or_else(|| WaveException {
                        error: 0,
                        what: format!("s_sethalt in workgroup {:?} wave {i}", group.id),
                        fault: None,
                        reported: true,
                    });
                    log::debug!(
                        target: crate::layer::SPI,
                        "workgroup {:?} wave {i} halted at {:#x} ({})",
                        group.id, group.waves[i].0.pc, ex.what
                    );
                    return GroupEnd::Halt(WaveException {
                        reported: true,
                        ..ex
                    });
                }
                if !privileged {
                    // Out of the handler (or never in it).
                    group.in_handler[i] = None;
                }
                if let Some(watch) = &self.watch {
                    // An exception an installed handler takes is no end, nor is a memory fault
                    // that XNACK replay retries.
                    let memory = matches!(stop_reason, Stop::Fault(WaveFault::Memory(_)));
                    let handled = !privileged
                        && (self.setup.process.trap_handler.is_some()
                            || (self.setup.process.retry_faults && memory));
                    let why = match &stop_reason {
                        Stop::EndOfProgram => Some(None),
                        Stop::Trap { id } if !handled => Some(Some(format!("s_trap {id}"))),
                        Stop::Fault(f) if !handled => Some(Some(f.to_string())),
                        _ => None,
                    };
                    if let Some(why) = why {
                        let id = || watch.id(group.id, group.index, i as u32, group.first_wave);
                        watch.wave_end(id, &group.waves[i].0, why);
                    }
                }
                let exception = match stop_reason {
                    Stop::EndOfProgram => {
                        group.waves[i].1 = WaveState::Done;
                        continue;
                    }
                    Stop::Barrier => {
                        group.waves[i].1 = WaveState::Barrier;
                        continue;
                    }
                    Stop::Gws(req) => {
                        if let Some(wait) = self.gws.apply(req) {
                            group.waves[i].1 = WaveState::Gws(wait);
                        }
                        continue;
                    }
                    Stop::BudgetExhausted | Stop::Sleep { .. } | Stop::Halt => continue,
                    Stop::Trap { id } => WaveException {
                        error: QUEUE_ERROR_TRAP,
                        what: format!("s_trap {id} in workgroup {:?} wave {i}", group.id),
                        fault: None,
                        reported: false,
                    },
                    // XNACK replay: the wave stays at the instruction, which runs again once
                    // the driver has handled the fault (`crate::svm::restore_pages`).
                    Stop::Fault(WaveFault::Memory(m))
                        if !privileged && self.setup.process.retry_faults =>
                    {
                        log::debug!(target: crate::layer::SPI, "workgroup {:?} wave {i}: retry fault {m:?}", group.id);
                        let fault = retry_fault(m);
                        return GroupEnd::Retry(Box::new(group), fault);
                    }
                    Stop::Fault(WaveFault::Memory(m)) if !privileged => {
                        // As amdgpu prints a GPU page fault in the kernel log: the wave, the
                        // instruction's address and the faulting address, whoever handles it.
                        log::warn!(
                            target: crate::layer::SPI,
                            "dispatch {:#x} workgroup {:?} wave {i} at pc {:#x}: {:?} fault at {:#x}",
                            self.setup.kernel_object,
                            group.id,
                            group.waves[i].0.pc,
                            m.access,
                            m.address
                        );
                        let fault = VmFault {
                            va: m.address,
                            write: matches!(m.access, Access::Write | Access::Atomic),
                            not_present: true,
                        };
                        if self.setup.process.trap_handler.is_none() {
                            return GroupEnd::Fault(QueueError::VmFault(fault));
                        }
                        // With a trap handler the wave takes the memory violation exception.
                        WaveException {
                            error: QUEUE_ERROR_MEMORY_VIOLATION,
                            what: format!("workgroup {:?} wave {i}: {fault}", group.id),
                            fault: Some(fault),
                            reported: false,
                        }
                    }
                    Stop::Fault(f) => WaveException {
                        error: QUEUE_ERROR_ILLEGAL_INSTRUCTION,
                        what: format!("workgroup {:?} wave {i}: {f}", group.id),
                        fault: None,
                        reported: false,
                    },
                };
                let wave = &mut group.waves[i].0;
                match (self.setup.process.trap_handler, privileged) {
                    (Some(handler), false) => {
                        enter_trap_handler(wave, handler, exception.error);
                        group.in_handler[i] = Some(exception);
                    }
                    // The handler itself trapped or faulted: the wave halts with what it was
                    // handling (what the runtime's handler would have reported).
                    (Some(_), true) => {
                        let first = group.in_handler[i].take().unwrap_or(exception.clone());
                        log::warn!(
                            target: crate::layer::SPI,
                            "trap handler of workgroup {:?} wave {i} failed ({}); reporting {}",
                            group.id, exception.what, first.what
                        );
                        return GroupEnd::Halt(first);
                    }
                    (None, _) => return GroupEnd::Halt(exception),
                }
            }
            for w in group.waves.iter_mut() {
                if let WaveState::Gws(wait) = w.1 {
                    if self.gws.may_go(wait) {
                        w.1 = WaveState::Ready;
                    }
                }
            }
            if group.waves.iter().all(|w| w.1 == WaveState::Done) {
                return GroupEnd::Done(group);
            }
            let gws_waiting = group.waves.iter().any(|w| matches!(w.1, WaveState::Gws(_)));
            if group.waves.iter().all(|w| w.1 != WaveState::Ready) {
                if gws_waiting {
                    // Other workgroups must reach the GWS barrier first: this one waits
                    // among the suspended ones and its thread takes another.
                    return GroupEnd::Unfinished(group);
                }
                // Every live wave waits at the barrier: release them.
                for w in group.waves.iter_mut().filter(|w| w.1 == WaveState::Barrier) {
                    w.1 = WaveState::Ready;
                }
                group.released = true;
            } else if !ran {
                return GroupEnd::Unfinished(group);
            }
            // A workgroup whose waves only poll gives its turn to others at once.
            if ran && all_polled && !short_round {
                return GroupEnd::Polled(group);
            }
            if *retired >= turn_end || Instant::now() >= deadline || stop.load(Ordering::Acquire) {
                return GroupEnd::Unfinished(group);
            }
        }
    }

    /// A workgroup's waves with their initial state (AMDGPUUsage, "Initial Kernel Execution
    /// State"), in the allocations of `reuse` (a finished workgroup) when given.
    pub(super) fn new_group(
        &self,
        id: [u32; 3],
        index: u64,
        slot: u32,
        reuse: Option<Workgroup>,
    ) -> Workgroup {
        let s = &self.setup;
        let wg = s.workgroup;
        let items = wg[0] * wg[1] * wg[2];
        let nwaves = items.div_ceil(WAVE_SIZE as u32);
        // The SPI allocates LDS in granules (COMPUTE_PGM_RSRC2.LDS_SIZE counts 128 dwords on
        // gfx7 and later): an access past the bytes asked for but inside the last granule is
        // inside the allocation on the hardware.
        let lds = (self.info.group_segment_fixed_size as usize)
            .saturating_add(s.dynamic_lds as usize)
            .next_multiple_of(LDS_GRANULE)
            .min(64 << 10);
        // Work-items of this group inside the grid (a partial last group has fewer).
        let extent = [0, 1, 2].map(|d| (s.grid[d] - id[d] * wg[d]).min(wg[d]));
        let mut group = reuse.unwrap_or_else(|| Workgroup {
            id,
            index: 0,
            first_wave: 0,
            slot,
            in_handler: Vec::new(),
            activity: Vec::new(),
            waves: Vec::new(),
            lds: Vec::new(),
            released: false,
        });
        group.id = id;
        group.index = index;
        group.first_wave = index * u64::from(nwaves);
        group.slot = slot;
        group.waves.truncate(nwaves as usize);
        let hw_id = s.placement.group_hw_id(s.target, index).0;
        for w in 0..nwaves {
            let scratch_wave = u64::from(slot) * u64::from(nwaves) + u64::from(w);
            match group.waves.get_mut(w as usize) {
                Some((wave, state)) => {
                    wave.reset(s.target, self.vgprs, self.agprs);
                    self.initial_wave(wave, id, w, extent, scratch_wave);
                    wave.hw_id = HwId(hw_id | s.placement.wave_bits(w));
                    *state = WaveState::Ready;
                }
                None => {
                    let mut wave = Wave::new(s.target, self.vgprs, self.agprs);
                    self.initial_wave(&mut wave, id, w, extent, scratch_wave);
                    wave.hw_id = HwId(hw_id | s.placement.wave_bits(w));
                    group.waves.push((wave, WaveState::Ready));
                }
            }
        }
        group.in_handler.clear();
        group.in_handler.resize(nwaves as usize, None);
        group.activity.clear();
        group.activity.resize(nwaves as usize, Default::default());
        group.lds.clear();
        group.lds.resize(lds, 0);
        group.released = false;
        group
    }

    /// Sets `wave` (as [`Wave::new`] made it) up as wave `w` of workgroup `group`, whose
    /// private segment is the `scratch_wave`th of the scratch.
    fn initial_wave(
        &self,
        wave: &mut Wave,
        group: [u32; 3],
        w: u32,
        extent: [u32; 3],
        scratch_wave: u64,
    ) {
        let s = &self.setup;
        let info = &self.info;
        let props = info.kernel_code_properties;
        let rsrc2 = info.compute_pgm_rsrc2;
        wave.pc = self.entry;
        wave.mode = Mode::from_rsrc1(info.compute_pgm_rsrc1.into_bits());
        wave.sh_mem_bases = s.process.sh_mem_bases;
        wave.lds_alloc = self
            .info
            .group_segment_fixed_size
            .saturating_add(s.dynamic_lds);
        let wave_scratch = u64::from(s.scratch.lane_bytes) * WAVE_SIZE as u64;
        let wave_offset = scratch_wave * wave_scratch;
        // The initial SGPRs, built on the stack (a new wave allocates nothing for them).
        let mut sgprs = SgprList::default();
        if let Some(user) = &s.user_data {
            // PM4: COMPUTE_USER_DATA_* are the user SGPRs.
            sgprs.extend(user.iter().take(usize::from(rsrc2.user_sgpr_count())));
        }
        let push64 = |v: &mut SgprList, x: u64| v.extend([x as u32, (x >> 32) as u32]);
        if s.user_data.is_some() {
        } else if props.enable_sgpr_private_segment_buffer() {
            sgprs.extend(s.scratch.resource);
        }
        if props.enable_sgpr_dispatch_ptr() {
            push64(&mut sgprs, s.packet_addr);
        }
        if props.enable_sgpr_queue_ptr() {
            push64(&mut sgprs, s.queue_addr);
        }
        if props.enable_sgpr_kernarg_segment_ptr() {
            push64(&mut sgprs, s.kernarg);
        }
        if props.enable_sgpr_dispatch_id() {
            push64(&mut sgprs, s.dispatch_id);
        }
        if props.enable_sgpr_flat_scratch_init() {
            // gfx9: the queue's 64-bit scratch base; the kernel prolog adds the scratch wave
            // offset SGPR to form its FLAT_SCRATCH (AMDGPUUsage, "Flat Scratch").
            push64(&mut sgprs, s.scratch.base);
        }
        if props.enable_sgpr_private_segment_size() {
            sgprs.push(info.private_segment_fixed_size);
        }
        // The user SGPR count in RSRC2 is authoritative for where system SGPRs start.
        sgprs.resize(usize::from(rsrc2.user_sgpr_count()), 0);
        if rsrc2.enable_sgpr_workgroup_id_x() {
            sgprs.push(group[0]);
        }
        if rsrc2.enable_sgpr_workgroup_id_y() {
            sgprs.push(group[1]);
        }
        if rsrc2.enable_sgpr_workgroup_id_z() {
            sgprs.push(group[2]);
        }
        if rsrc2.enable_sgpr_workgroup_info() {
            sgprs.push(0);
        }
        if rsrc2.enable_private_segment() {
            sgprs.push(wave_offset as u32);
        }
        for (r, v) in wave.sgpr.iter_mut().zip(sgprs.as_slice()) {
            *r = *v;
        }
        // Work-item ids: lane l of wave w is flat id w*64+l in x-major order.
        let wg = s.workgroup;
        let flat = w * WAVE_SIZE as u32;
        if wg[1] == 1 && wg[2] == 1 && flat + WAVE_SIZE as u32 <= wg[0] && extent == wg {
            // A whole wave of a whole 1-D workgroup: x counts up in v0 (also gfx90a's packed
            // form, y and z being 0), the other id VGPRs stay 0, every lane runs.
            if let Ok(v) = wave.v_mut(0) {
                for (l, x) in v.iter_mut().enumerate() {
                    *x = flat + l as u32;
                }
            }
            wave.set_exec(u64::MAX);
            return;
        }
        let mut ids = [[0u32; WAVE_SIZE]; 3];
        let mut exec = 0u64;
        let [xs, ys, zs] = &mut ids;
        if wg[1] == 1 && wg[2] == 1 && flat + WAVE_SIZE as u32 <= wg[0] {
            // A 1-D workgroup and a wave inside it: x counts up, y and z are 0.
            for (l, x) in xs.iter_mut().enumerate() {
                *x = flat + l as u32;
            }
        } else {
            // The first lane's id by division, the others by counting (no division per lane).
            let (mut cx, mut cy, mut cz) =
                (flat % wg[0], (flat / wg[0]) % wg[1], flat / (wg[0] * wg[1]));
            for ((x, y), z) in xs.iter_mut().zip(ys.iter_mut()).zip(zs.iter_mut()) {
                (*x, *y, *z) = (cx, cy, cz);
                cx += 1;
                if cx == wg[0] {
                    cx = 0;
                    cy += 1;
                    if cy == wg[1] {
                        cy = 0;
                        cz += 1;
                    }
                }
            }
        }
        let items = wg[0] * wg[1] * wg[2];
        if extent == wg {
            // A whole workgroup: the lanes below its work-item count.
            exec = match items.checked_sub(flat) {
                Some(n) if n >= WAVE_SIZE as u32 => u64::MAX,
                Some(n) => (1u64 << n) - 1,
                None => 0,
            };
        } else {
            for l in 0..WAVE_SIZE {
                let (x, y, z) = (xs[l], ys[l], zs[l]);
                let inside = (z < wg[2]) & (x < extent[0]) & (y < extent[1]) & (z < extent[2]);
                exec |= u64::from(inside) << l;
            }
        }
        wave.set_exec(exec);
        let comps = usize::from(rsrc2.enable_vgpr_workitem_id()) + 1;
        if s.target == Target::Gfx90a {
            let mut packed: Lanes = [0; WAVE_SIZE];
            for (l, p) in packed.iter_mut().enumerate() {
                *p = ids[0][l] | (ids[1][l] << 10) | (ids[2][l] << 20);
            }
            if let Ok(v) = wave.v_mut(0) {
                *v = packed;
            }
        } else {
            for (d, lanes) in ids.iter().enumerate().take(comps.min(3)) {
                if let Ok(v) = wave.v_mut(d) {
                    *v = *lanes;
                }
            }
        }
    }
}

/// A wave's initial SGPRs in order: the user SGPRs (RSRC2 counts at most 31) and the
/// system SGPRs after them (at most 5), so 48 always has room.
struct SgprList {
    regs: [u32; 48],
    len: usize,
}

impl Default for SgprList {
    fn default() -> Self {
        SgprList {
            regs: [0; 48],
            len: 0,
        }
    }
}

impl SgprList {
    fn push(&mut self, v: u32) {
        if let Some(r) = self.regs.get_mut(self.len) {
            *r = v;
            self.len += 1;
        }
    }

    fn extend(&mut self, vs: impl IntoIterator<Item = impl std::borrow::Borrow<u32>>) {
        for v in vs {
            self.push(*v.borrow());
        }
    }

    /// Truncates or pads with zeros to `len` registers.
    fn resize(&mut self, len: usize, fill: u32) {
        let len = len.min(self.regs.len());
        for r in self.regs.iter_mut().take(len).skip(self.len) {
            *r = fill;
        }
        self.len = len;
    }

    fn as_slice(&self) -> &[u32] {
        &self.regs[..self.len]
    }
}
