//! The shader processor input (SPI) and the compute units: what a KERNEL_DISPATCH becomes.
//!
//! The CP hands the SPI a dispatch ([`KernelRun::start`]): the kernel object (a code object
//! v3+ descriptor or the legacy `amd_kernel_code_t`) is read through the process's GPU VM, the
//! grid is split into workgroups and each workgroup into waves of 64 lanes, and every wave
//! starts with the initial state of the AMDGPU ABI (user SGPRs per the descriptor's enable
//! bits, system SGPRs per RSRC2, work-item ids in VGPRs, MODE from RSRC1). A workgroup's waves
//! share its LDS (fixed size from the descriptor plus the packet's dynamic size) and meet at
//! `s_barrier`. Every load, store and atomic goes through the GPU VM: an access outside the
//! process's mappings ends the dispatch with a VM fault. [`KernelRun::step`] runs for a time
//! slice on up to `cu_threads` host threads (whole workgroups per thread) and returns, so a
//! long kernel yields to the engine's other queues and can be preempted between slices;
//! workgroups started and not finished stay suspended in the [`KernelRun`]. Workgroups start
//! in dispatch order and take bounded turns, so one that waits on an earlier one never starves
//! it (`group_queue`); waves that only poll memory run in short turns (`polling`). Each workgroup
//! in flight holds a slot of the scratch, each wave its own slice of it. With a trap handler
//! installed, `s_trap`, illegal instructions and memory violations enter it with the
//! hardware's trap state; the handler runs to its end (ROCr's reports through scalar atomics
//! or a PRIV `MSG_INTERRUPT` and halts the wave with STATUS.HALT).
//! Decoded code is kept per queue and reused while memory still holds the same bytes.
//!
//! The rooms along that path: this file holds the dispatch's setup (what the CP hands the SPI)
//! and [`KernelRun`]'s slicing across compute-unit threads; `cu` runs a workgroup's waves
//! (round robin, barriers, wave start-up); `sq` is the waves' outside world (memory, LDS,
//! messages, traps); `code` decodes and keeps the code windows; `group_queue` and `polling`
//! decide whose turn it is.

mod code;
mod cu;
mod group_queue;
mod placement;
mod polling;
mod sq;

pub use code::DecodedCode;
pub(crate) use cu::BARRIER_RELEASE_TURN;
pub use placement::WavePlacement;
pub use sq::{
    SqMessage, WaveException, QUEUE_ERROR_ILLEGAL_INSTRUCTION, QUEUE_ERROR_MEMORY_VIOLATION,
    QUEUE_ERROR_TRAP,
};

use crate::config::Strict;
use crate::hw::engine::QueueError;
use crate::hw::gws::Gws;
use crate::hw::observe::{DispatchStart, ShaderActivity, Watch};
use crate::hw::vm::{GpuVm, Tlb};
use codeobj::{DispatchInfo, KernelCode};
use cu::{GroupEnd, Workgroup};
use group_queue::{GroupQueue, Turn};
use isa::exec::{CodeCache, WAVE_SIZE};
use isa::Target;
use pm4::aql::KernelDispatchPacket;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How long one [`KernelRun::step`] runs waves before it gives the engine back.
pub const DISPATCH_SLICE: Duration = Duration::from_millis(2);

/// How long a dispatch's first slice runs on the calling thread alone before the other CU
/// threads start: starting a thread costs tens of microseconds on a VM, more than a small
/// dispatch takes on one thread.
pub const SOLO_START: Duration = Duration::from_micros(100);

/// Instructions a compute-unit thread runs between two reads of the clock (a slice ends
/// within a few microseconds of its deadline; the clock is not read per small workgroup).
const CLOCK_EVERY: u64 = 1024;

/// Offsets in ROCr's `amd_queue_t` that the CP reads.
pub use pm4::aql::amd_queue;

/// The private segment (scratch) a dispatch's waves get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scratch {
    /// The buffer resource (V#) given to waves as the private segment buffer.
    pub resource: [u32; 4],
    /// Base address of the backing memory.
    pub base: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Bytes per lane each wave's slice holds.
    pub lane_bytes: u32,
    /// Waves the scratch has room for (`COMPUTE_TMPRING_SIZE.WAVES` of a PM4 dispatch;
    /// `None`: as many as `size` holds).
    pub max_waves: Option<u32>,
}

/// What the scheduler loads for a queue's process from its `MAP_PROCESS` packet: the
/// registers its waves run with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessRegisters {
    /// The trap handler a trapping wave enters, if the process has one.
    pub trap_handler: Option<TrapHandler>,
    /// XNACK replay is on for the process (`SH_MEM_CONFIG.RETRY_DISABLE` clear): a wave's
    /// memory fault stalls it at the faulting instruction, the dispatch stops with the fault
    /// (the queue posts it to the driver) and resumes, retrying that instruction, when the
    /// driver has handled the fault and mapped the queue again. Off: the fault ends the
    /// dispatch.
    pub retry_faults: bool,
    /// `SH_MEM_BASES`: where the process's LDS and scratch apertures are in the flat
    /// address space ([`pm4::regs::sh_mem::bases`]).
    pub sh_mem_bases: u32,
}

/// The code the model's driver copies to a process's trap base with CWSR, where amdkfd copies
/// its first-level trap handler (`cwsr_trap_gfx9_hex`, AMD's own code, which the model does not
/// carry). The scheduler recognises these bytes at TBA and stands in for that handler: it finds
/// the process's own handler in the TMA (see `hws::process_registers`). They are not
/// instructions: a wave never runs them.
pub const FIRST_LEVEL_TRAP_HANDLER: [u8; 16] = *b"kfd-model:cwsr\0\0";

/// A trap handler: where the hardware sends a trapping wave (the TBA/TMA registers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrapHandler {
    /// Trap base address: where a trapping wave continues.
    pub tba: u64,
    /// Trap memory address: the handler's data, given to it in `ttmp14:15`.
    pub tma: u64,
}

/// Everything the SPI needs to start a dispatch's waves.
#[derive(Debug, Clone)]
pub struct DispatchSetup {
    /// The ISA the waves run.
    pub target: Target,
    /// Address of the dispatch packet (the dispatch-ptr SGPRs).
    pub packet_addr: u64,
    /// Address of the `amd_queue_t` (the queue-ptr SGPRs; 0 for PM4).
    pub queue_addr: u64,
    /// Address of the kernel object.
    pub kernel_object: u64,
    /// Address of the kernel arguments.
    pub kernarg: u64,
    /// The dispatch id (the dispatch-id SGPRs).
    pub dispatch_id: u64,
    /// Work-items per workgroup, per dimension.
    pub workgroup: [u32; 3],
    /// Work-items of the grid, per dimension.
    pub grid: [u32; 3],
    /// Dynamic LDS bytes from the packet (added to the descriptor's fixed size).
    pub dynamic_lds: u32,
    /// Scratch bytes per work-item the packet asks for (ROCr: the kernel's fixed size plus
    /// its dynamic stack).
    pub private_segment_size: u32,
    /// The queue's scratch.
    pub scratch: Scratch,
    /// PM4 dispatches: the user SGPRs come from `COMPUTE_USER_DATA_*` instead of the
    /// descriptor's enable bits.
    pub user_data: Option<[u32; 16]>,
    /// The registers of the queue's process (its `MAP_PROCESS`).
    pub process: ProcessRegisters,
    /// The queue's doorbell as the SQ answers `s_sendmsg MSG_GET_DOORBELL`: its 64-bit
    /// doorbell index in the BAR, 12 bits (ROCr's trap handler takes the low 10 bits, the
    /// doorbell's index in the process's slice, to find its queue in the TMA table).
    pub doorbell_id: u32,
    /// Where the SPI places the waves (what `HW_REG_HW_ID` reports to them).
    pub placement: WavePlacement,
}

/// The compute units of a GPU as the SPI spreads workgroups over them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShaderArray {
    /// Shader engines.
    pub engines: u32,
    /// Shader arrays (SH) per engine.
    pub arrays_per_engine: u32,
    /// Active compute units per engine.
    pub cus_per_engine: u32,
    /// SIMDs per compute unit.
    pub simds_per_cu: u32,
    /// Wave slots per SIMD.
    pub waves_per_simd: u32,
}

impl Default for ShaderArray {
    /// One compute unit of four SIMDs with ten wave slots each.
    fn default() -> Self {
        ShaderArray {
            engines: 1,
            arrays_per_engine: 1,
            cus_per_engine: 1,
            simds_per_cu: 4,
            waves_per_simd: 10,
        }
    }
}

impl DispatchSetup {
    /// A dispatch from an AQL KERNEL_DISPATCH packet at `packet_addr` of the queue whose
    /// `amd_queue_t` is at `queue_addr`.
    pub fn from_aql(
        target: Target,
        packet_addr: u64,
        p: &KernelDispatchPacket,
        queue_addr: u64,
        dispatch_id: u64,
        scratch: Scratch,
    ) -> Self {
        let dims = (p.setup & 3).max(1);
        let size = |v: u32, d: u16| if dims > d { v } else { 1 };
        DispatchSetup {
            target,
            packet_addr,
            queue_addr,
            kernel_object: p.kernel_object,
            kernarg: p.kernarg_address,
            dispatch_id,
            workgroup: [
                u32::from(p.workgroup_size_x),
                size(u32::from(p.workgroup_size_y), 1),
                size(u32::from(p.workgroup_size_z), 2),
            ],
            grid: [
                p.grid_size_x,
                size(p.grid_size_y, 1),
                size(p.grid_size_z, 2),
            ],
            dynamic_lds: p.group_segment_size,
            private_segment_size: p.private_segment_size,
            scratch,
            user_data: None,
            process: ProcessRegisters::default(),
            doorbell_id: 0,
            placement: WavePlacement::default(),
        }
    }
}

/// The compute-unit threads besides the engine's: one pool of `threads` per size, shared by
/// every model of the process (a dispatch's slice is as long whichever threads run it).
/// `None` when the pool cannot be built; a forked child builds its own (threads do not
/// survive a fork).
fn cu_pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    type Pools = Mutex<(u32, HashMap<usize, Arc<rayon::ThreadPool>>)>;
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let mut pools = locked(POOLS.get_or_init(Default::default));
    let pid = std::process::id();
    if pools.0 != pid {
        *pools = (pid, HashMap::new());
    }
    if let Some(p) = pools.1.get(&threads) {
        return Some(p.clone());
    }
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("kfd-model-cu{}", i + 1))
        .build()
    {
        Ok(p) => {
            let p = Arc::new(p);
            pools.1.insert(threads, p.clone());
            Some(p)
        }
        Err(e) => {
            log::warn!(target: crate::layer::SPI, "compute-unit threads: {e}");
            None
        }
    }
}

/// Why a dispatch could not run or stopped.
fn bad(addr: u64, reason: String) -> QueueError {
    QueueError::BadPacket { addr, reason }
}

/// What the threads of one time slice found, beside finished workgroups.
#[derive(Debug, Default)]
struct SliceOutcome {
    messages: Vec<SqMessage>,
    fault: Option<QueueError>,
    /// The fault is a retry fault: the dispatch resumes after it.
    retry: bool,
    halt: Option<WaveException>,
}

/// Locks a mutex of the slice (a worker that panicked has already failed the dispatch).
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A dispatch in progress: the workgroups not yet started and those suspended between time
/// slices.
#[derive(Debug, Clone)]
pub struct KernelRun {
    setup: DispatchSetup,
    info: DispatchInfo,
    entry: u64,
    groups: [u32; 3],
    /// The workgroups not ended: suspended between turns, or not started.
    queue: GroupQueue<Workgroup>,
    code: Vec<DecodedCode>,
    vgprs: usize,
    agprs: usize,
    /// `s_sendmsg` messages the waves sent since the last [`KernelRun::take_messages`].
    messages: Vec<SqMessage>,
    /// A wave halted on a trap or an exception: the dispatch runs no further.
    exception: Option<WaveException>,
    /// The GPU's shader counters and observer ([`KernelRun::watch`]).
    watch: Option<Watch>,
    /// Host threads the workgroups run on.
    cu_threads: usize,
    /// The last step stopped on a retry fault ([`ProcessRegisters::retry_faults`]).
    awaiting_retry: bool,
    /// The queue's global wave sync resources.
    gws: Arc<Gws>,
    /// A slice has run (the first one starts on the calling thread alone, [`SOLO_START`]).
    started: bool,
    /// What the waves report instead of doing the hardware's thing (`KFD_MODEL_STRICT`).
    strict: Strict,
    /// An LDS access outside the allocation was dropped and said so (once per dispatch).
    lds_warned: Arc<AtomicBool>,
    /// A VGPR past a wave's allocation was read as VGPR0 or ignored and said so (once per
    /// dispatch).
    vgprs_warned: Arc<AtomicBool>,
}

impl KernelRun {
    /// Reads the kernel object and checks the dispatch's shape; nothing runs yet.
    pub fn start(vm: &GpuVm, setup: DispatchSetup) -> Result<KernelRun, QueueError> {
        let at = setup.packet_addr;
        let mut header = [0u8; 256];
        // A v3+ descriptor is 64 bytes and may sit at the end of a mapping.
        let kc = if vm.read(setup.kernel_object, &mut header).is_ok() {
            KernelCode::parse(&header)
        } else {
            vm.read(setup.kernel_object, &mut header[..64])?;
            KernelCode::parse(&header[..64])
        }
        .map_err(|e| {
            bad(
                at,
                format!("kernel object at {:#x}: {e}", setup.kernel_object),
            )
        })?;
        let info = kc.dispatch_info();
        let accum_offset = match kc {
            KernelCode::Descriptor(d) if setup.target == Target::Gfx90a => {
                Some((usize::from(d.rsrc3_gfx90a().accum_offset()) + 1) * 4)
            }
            _ => None,
        };
        Self::with_info(setup, info, accum_offset)
    }

    /// A PM4 dispatch: the program and its resources from the COMPUTE_* registers
    /// (`pgm` = `COMPUTE_PGM_HI:LO << 8`).
    pub fn from_registers(
        setup: DispatchSetup,
        pgm: u64,
        rsrc1: u32,
        rsrc2: u32,
    ) -> Result<KernelRun, QueueError> {
        let rsrc2 = codeobj::ComputePgmRsrc2::from_bits(rsrc2);
        let info = DispatchInfo {
            kernel_code_entry_byte_offset: 0,
            compute_pgm_rsrc1: codeobj::ComputePgmRsrc1::from_bits(rsrc1),
            compute_pgm_rsrc2: rsrc2,
            compute_pgm_rsrc3: 0,
            kernel_code_properties: codeobj::KernelCodeProperties::new(),
            // LDS_SIZE is in blocks of 128 dwords on gfx9.
            group_segment_fixed_size: u32::from(rsrc2.granulated_lds_size()) * 512,
            private_segment_fixed_size: 0,
            kernarg_size: 0,
        };
        let setup = DispatchSetup {
            kernel_object: pgm,
            ..setup
        };
        Self::with_info(setup, info, None)
    }

    /// Uses the queue's global wave sync resources (a dispatch alone gets its own).
    pub fn with_gws(mut self, gws: Arc<Gws>) -> Self {
        self.gws = gws;
        self
    }

    /// The same dispatch run by `threads` host threads (each runs whole workgroups; at
    /// least 1).
    pub fn with_cu_threads(mut self, threads: usize) -> Self {
        self.cu_threads = threads.max(1);
        self
    }

    /// The same reporting what `strict` names instead of tolerating it as the hardware does
    /// (default: nothing).
    pub fn with_strict(mut self, strict: Strict) -> Self {
        self.strict = strict;
        self
    }

    fn with_info(
        setup: DispatchSetup,
        info: DispatchInfo,
        accum_offset: Option<usize>,
    ) -> Result<KernelRun, QueueError> {
        let at = setup.packet_addr;
        if info.kernel_code_properties.enable_wavefront_size32() {
            return Err(bad(at, "a wave32 kernel on a wave64 GPU".into()));
        }
        let entry = setup
            .kernel_object
            .wrapping_add_signed(info.kernel_code_entry_byte_offset);
        let wg = setup.workgroup;
        if wg.contains(&0) || setup.grid.contains(&0) {
            return Err(bad(
                at,
                format!("empty workgroup {wg:?} or grid {:?}", setup.grid),
            ));
        }
        let wg_items = u64::from(wg[0]) * u64::from(wg[1]) * u64::from(wg[2]);
        if wg_items > 1024 {
            return Err(bad(
                at,
                format!("workgroup of {wg_items} work-items (max 1024)"),
            ));
        }
        let groups = [0, 1, 2].map(|d| setup.grid[d].div_ceil(wg[d]));
        let granule = if setup.target == Target::Gfx90a { 8 } else { 4 };
        let total_vgprs =
            (usize::from(info.compute_pgm_rsrc1.granulated_workitem_vgpr_count()) + 1) * granule;
        let (vgprs, agprs) = match accum_offset {
            Some(accum) => (accum.min(total_vgprs), total_vgprs.saturating_sub(accum)),
            None => (total_vgprs, 0),
        };
        let lane_bytes = info
            .private_segment_fixed_size
            .max(setup.private_segment_size);
        if info.compute_pgm_rsrc2.enable_private_segment() && lane_bytes > setup.scratch.lane_bytes
        {
            return Err(QueueError::NotModelled {
                addr: at,
                what: format!(
                    "a dispatch needing {lane_bytes} scratch bytes per lane on a queue with {}",
                    setup.scratch.lane_bytes
                ),
            });
        }
        // Each workgroup in flight holds one slot of the scratch: a wave's private segment
        // for each of its waves.
        let free_slots = if info.compute_pgm_rsrc2.enable_private_segment() {
            let waves = wg_items.div_ceil(WAVE_SIZE as u64);
            let wave_bytes = u64::from(setup.scratch.lane_bytes) * WAVE_SIZE as u64;
            let slots = match setup.scratch.max_waves {
                Some(max) => u64::from(max) / waves,
                None if wave_bytes == 0 => 0,
                None => setup.scratch.size / (waves * wave_bytes),
            };
            if slots == 0 {
                return Err(QueueError::NotModelled {
                    addr: at,
                    what: format!(
                        "a dispatch whose workgroup of {waves} waves does not fit its scratch \
                         ({} bytes, {} per wave, waves {:?})",
                        setup.scratch.size, wave_bytes, setup.scratch.max_waves
                    ),
                });
            }
            // More slots than compute-unit threads are never used at once.
            Some((0..slots.min(1024) as u32).rev().collect())
        } else {
            None
        };
        // As many workgroups as the compute units have wave slots for are started at once.
        let a = &setup.placement.array;
        let wave_slots = [
            a.engines,
            a.cus_per_engine,
            a.simds_per_cu,
            a.waves_per_simd,
        ]
        .iter()
        .map(|&n| u64::from(n.max(1)))
        .product::<u64>();
        let resident_limit = wave_slots / wg_items.div_ceil(WAVE_SIZE as u64);
        let total_groups = groups.iter().map(|&g| u64::from(g)).product();
        log::debug!(
            target: crate::layer::SPI,
            "dispatch {:#x}: entry {entry:#x}, grid {:?} in workgroups of {:?}, {} VGPRs + {} AGPRs, LDS {}+{}",
            setup.kernel_object, setup.grid, wg, vgprs, agprs,
            info.group_segment_fixed_size, setup.dynamic_lds
        );
        Ok(KernelRun {
            setup,
            info,
            entry,
            groups,
            queue: GroupQueue::new(total_groups, resident_limit, free_slots),
            code: Vec::new(),
            vgprs,
            agprs,
            messages: Vec::new(),
            exception: None,
            watch: None,
            cu_threads: 1,
            awaiting_retry: false,
            gws: Arc::default(),
            started: false,
            strict: Strict::default(),
            lds_warned: Arc::default(),
            vgprs_warned: Arc::default(),
        })
    }

    /// Counts this dispatch, its waves and instructions in `activity` and reports them to its
    /// observer.
    pub fn watch(&mut self, activity: &Arc<ShaderActivity>) {
        let s = &self.setup;
        let wg = s.workgroup;
        let start = |dispatch| DispatchStart {
            dispatch,
            packet: s.packet_addr,
            kernel_object: s.kernel_object,
            entry: self.entry,
            grid: s.grid,
            workgroup: wg,
            groups: self.groups,
            waves_per_group: (wg[0] * wg[1] * wg[2]).div_ceil(WAVE_SIZE as u32),
            vgprs: self.vgprs,
            agprs: self.agprs,
            lds_bytes: self
                .info
                .group_segment_fixed_size
                .saturating_add(s.dynamic_lds),
        };
        self.watch = Some(activity.watch(start));
    }

    /// Tells the observer the dispatch ended (`faulted`: on a VM fault).
    pub fn watch_end(&self, faulted: bool) {
        if let Some(w) = &self.watch {
            w.dispatch_end(faulted);
        }
    }

    /// The messages waves sent since the last call.
    pub fn take_messages(&mut self) -> Vec<SqMessage> {
        std::mem::take(&mut self.messages)
    }

    /// Whether the last [`KernelRun::step`] stopped on a retry fault: the dispatch is not
    /// over and the next step retries the faulting instruction.
    pub fn awaits_retry(&self) -> bool {
        self.awaiting_retry
    }

    /// The trap or exception that halted a wave, if one did.
    pub fn exception(&self) -> Option<&WaveException> {
        self.exception.as_ref()
    }

    /// Workgroups not yet ended (started or not).
    pub fn workgroups_left(&self) -> u64 {
        self.queue.left()
    }

    /// Runs waves for about [`DISPATCH_SLICE`] on up to `cu_threads` host threads (each takes
    /// whole workgroups, so a workgroup's LDS and barriers stay on one thread): `Ok(true)`
    /// when every workgroup has ended, `Ok(false)` when there is more to run or a wave is
    /// halted ([`KernelRun::exception`]). Waves stop at an instruction boundary when the slice
    /// is over, so the queue can be preempted between two calls.
    pub fn step(&mut self, vm: &GpuVm) -> Result<bool, QueueError> {
        self.awaiting_retry = false;
        if self.exception.is_some() {
            return Ok(false);
        }
        let left = self.workgroups_left();
        if left == 0 {
            return Ok(true);
        }
        let deadline = Instant::now() + DISPATCH_SLICE;
        let empty = GroupQueue::new(0, 1, None);
        let pending = Mutex::new(std::mem::replace(&mut self.queue, empty));
        let code = Mutex::new(std::mem::take(&mut self.code));
        let outcome = Mutex::new(SliceOutcome::default());
        let stop = AtomicBool::new(false);
        let workers = (self.cu_threads as u64).min(left).max(1) as usize;
        let first_slice = !self.started;
        self.started = true;
        {
            let this = &*self;
            let work = || this.worker(vm, deadline, &pending, &code, &outcome, &stop);
            if first_slice && workers > 1 {
                let solo = (Instant::now() + SOLO_START).min(deadline);
                this.worker(vm, solo, &pending, &code, &outcome, &stop);
            }
            let more = || locked(&pending).has_waiting();
            if workers == 1 {
                work();
            } else if stop.load(Ordering::Acquire) || Instant::now() >= deadline || !more() {
                // The solo start ended the dispatch, or the slice.
            } else if let Some(pool) = cu_pool(workers - 1) {
                // The pool's threads outlive the slice: waking one costs far less than
                // starting a thread, which the other CU threads paid every 2 ms slice.
                pool.in_place_scope(|s| {
                    for _ in 1..workers {
                        s.spawn(|_| work());
                    }
                    work();
                });
            } else {
                std::thread::scope(|s| {
                    for i in 1..workers {
                        // A thread that cannot be started leaves its share to the others.
                        if let Err(e) = std::thread::Builder::new()
                            .name(format!("kfd-model-cu{i}"))
                            .spawn_scoped(s, work)
                        {
                            log::warn!(target: crate::layer::SPI, "compute-unit thread: {e}");
                            break;
                        }
                    }
                    work();
                });
            }
        }
        self.queue = pending.into_inner().unwrap_or_else(|e| e.into_inner());
        self.code = code.into_inner().unwrap_or_else(|e| e.into_inner());
        let outcome = outcome.into_inner().unwrap_or_else(|e| e.into_inner());
        self.messages.extend(outcome.messages);
        if let Some(e) = outcome.fault {
            self.awaiting_retry = outcome.retry;
            return Err(e);
        }
        if let Some(h) = outcome.halt {
            self.exception = Some(h);
            return Ok(false);
        }
        Ok(self.workgroups_left() == 0)
    }

    /// One compute unit's share of a time slice: takes turns of workgroups as the queue
    /// hands them out (`group_queue`) until the slice ends.
    fn worker(
        &self,
        vm: &GpuVm,
        deadline: Instant,
        pending: &Mutex<GroupQueue<Workgroup>>,
        code: &Mutex<Vec<DecodedCode>>,
        outcome: &Mutex<SliceOutcome>,
        stop: &AtomicBool,
    ) {
        let mut local_code: Vec<Arc<CodeCache>> =
            locked(code).iter().map(|c| c.cache.clone()).collect();
        let mut messages = Vec::new();
        // The translations of this worker's waves (valid while the VM keeps its generation).
        let mut tlb = Tlb::default();
        // The last finished workgroup: the next new one takes over its waves' allocations.
        let mut spare: Option<Workgroup> = None;
        // Instructions retired in this slice, handed to the watch at its end.
        let mut retired = 0u64;
        // Workgroups and waves started in this slice, counted at its end.
        let (mut groups_started, mut waves_started) = (0u64, 0u64);
        // New workgroups taken in a batch and not started yet.
        let mut claimed = 0..0u64;
        // `retired` when the clock was last read (`None`: read it before the next group).
        let mut clock_at: Option<u64> = None;
        let workers = self.cu_threads.max(1) as u64;
        while !stop.load(Ordering::Acquire) {
            if clock_at.is_none_or(|at| retired - at >= CLOCK_EVERY) {
                if Instant::now() >= deadline {
                    break;
                }
                clock_at = Some(retired);
            }
            let next = match claimed.next() {
                Some(g) => Err((g, 0)),
                None => match locked(pending).next_turn(workers, |g| self.gws_blocked(g)) {
                    Turn::Resume(g) => Ok(g),
                    Turn::Start { first, count, slot } => {
                        claimed = first + 1..first + count;
                        Err((first, slot))
                    }
                    Turn::Idle => break,
                },
            };
            let group = next.unwrap_or_else(|(g, slot)| {
                let gx = u64::from(self.groups[0]);
                let gy = u64::from(self.groups[1]);
                let id = [
                    (g % gx) as u32,
                    ((g / gx) % gy) as u32,
                    (g / (gx * gy)) as u32,
                ];
                let group = self.new_group(id, g, slot, spare.take());
                groups_started += 1;
                waves_started += group.waves.len() as u64;
                if let Some(w) = &self.watch {
                    w.workgroup_start(id, g, group.first_wave, group.waves.iter().map(|w| &w.0));
                }
                group
            });
            let slot = group.slot;
            let end = self.run_group(
                vm,
                &mut tlb,
                group,
                deadline,
                stop,
                &mut local_code,
                code,
                &mut messages,
                &mut retired,
            );
            match end {
                GroupEnd::Done(g) => {
                    locked(pending).end(slot);
                    spare = Some(g);
                }
                GroupEnd::Unfinished(g) => {
                    locked(pending).suspend(g.index, g);
                    clock_at = None;
                }
                GroupEnd::Polled(g) => {
                    locked(pending).suspend(g.index, g);
                    clock_at = None;
                    // On a host with fewer free cores than compute-unit threads, the thread
                    // running what this one waits for may be waiting for a core.
                    std::thread::yield_now();
                }
                GroupEnd::Fault(e) => {
                    stop.store(true, Ordering::Release);
                    locked(outcome).fault.get_or_insert(e);
                }
                GroupEnd::Retry(g, e) => {
                    stop.store(true, Ordering::Release);
                    locked(pending).suspend_first(g.index, *g);
                    let mut o = locked(outcome);
                    if o.fault.is_none() {
                        o.fault = Some(e);
                        o.retry = true;
                    }
                }
                GroupEnd::Halt(h) => {
                    stop.store(true, Ordering::Release);
                    locked(outcome).halt.get_or_insert(h);
                }
            }
        }
        if !claimed.is_empty() {
            locked(pending).give_back(claimed);
        }
        if let Some(w) = &self.watch {
            w.count_workgroups(groups_started, waves_started);
            w.count_instructions(retired);
        }
        locked(outcome).messages.extend(messages);
    }
}
