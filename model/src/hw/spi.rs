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

mod group_queue;
mod polling;

use crate::config::Strict;
use crate::hw::engine::QueueError;
use crate::hw::gws::{Gws, GwsWait};
use crate::hw::observe::{DispatchStart, ShaderActivity, Watch};
use crate::hw::vm::{GpuVm, Tlb, VmFault};
use codeobj::{DispatchInfo, KernelCode};
use group_queue::{GroupQueue, Turn};
use isa::exec::wave::{HwId, HwIdFields};
use isa::exec::{
    Access, AtomicRequest, CodeCache, Lanes, MemFault, Mode, Stop, Wave, WaveEnv, WaveFault,
    WAVE_SIZE,
};
use isa::Target;
use pm4::aql::KernelDispatchPacket;
use polling::Activity;
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

/// Instructions a wave runs before the next wave of its workgroup gets a turn.
pub const WAVE_TURN: u64 = 4096;

/// Instructions a wave that polled in its last run (`polling`) runs before the next wave of
/// its workgroup gets a turn.
pub const POLL_TURN: u64 = 256;

/// Instructions each wave runs in the first round after its workgroup's barrier releases it.
/// On hardware the waves of a workgroup sit on different SIMDs and all issue at once after a
/// barrier, and a global load takes hundreds of clocks: every wave reads what the barrier
/// published (LDS) before any wave can write LDS with data it loaded after the barrier.
/// Kernels rely on it (RCCL's work loop reads the LDS work header after a barrier while wave 0
/// already loads the next header into the same place): a short first turn keeps that order.
pub const BARRIER_RELEASE_TURN: u64 = 8;

/// Instructions a workgroup runs in one turn on a compute-unit thread (at least one round of
/// its waves) before the thread takes the next workgroup's turn: a workgroup that spins
/// waiting for an earlier one gives its thread back (`group_queue` says how turns go round).
pub const GROUP_TURN: u64 = 16 * 1024;

/// Bytes of one LDS allocation granule (128 dwords).
const LDS_GRANULE: usize = 512;

/// Instructions a compute-unit thread runs between two reads of the clock (a slice ends
/// within a few microseconds of its deadline; the clock is not read per small workgroup).
const CLOCK_EVERY: u64 = 1024;

/// Bytes of code decoded around a PC (a window; a branch outside it decodes another).
const CODE_WINDOW: u64 = 64 << 10;

/// Decoded code windows a queue keeps from one dispatch to the next.
pub const KEPT_CODE_WINDOWS: usize = 8;

/// A window of code decoded for the waves, with the bytes it was decoded from (a later
/// dispatch reuses it only while memory still holds those bytes).
#[derive(Debug, Clone)]
pub struct DecodedCode {
    start: u64,
    bytes: Arc<[u8]>,
    cache: Arc<CodeCache>,
}

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

/// What places a dispatch's waves: the GPU's compute units and the queue the waves come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WavePlacement {
    /// The compute units.
    pub array: ShaderArray,
    /// The queue's micro engine (1: MEC1, 2: MEC2), pipe and queue, and its process's VMID.
    pub me: u8,
    /// The HQD's pipe.
    pub pipe: u8,
    /// The HQD's queue within the pipe.
    pub queue: u8,
    /// The process's VMID.
    pub vmid: u8,
}

impl WavePlacement {
    /// `HW_REG_HW_ID` of the waves of the `group`th workgroup, with WAVE_ID and SIMD_ID 0
    /// ([`WavePlacement::wave_bits`] adds them): the SPI deals workgroups to the shader
    /// engines in turn and, within an engine, to its compute units in turn (alternating
    /// between its shader arrays).
    pub fn group_hw_id(&self, target: Target, group: u64) -> HwId {
        let a = &self.array;
        let engines = u64::from(a.engines.max(1));
        let arrays = u64::from(a.arrays_per_engine.max(1));
        let per_engine = u64::from(a.cus_per_engine.max(1));
        let cu_in_engine = (group / engines) % per_engine;
        HwId::encode(
            target,
            &HwIdFields {
                wave_id: 0,
                simd_id: 0,
                pipe_id: u32::from(self.pipe),
                cu_id: (cu_in_engine / arrays) as u32,
                sh_id: (cu_in_engine % arrays) as u32,
                se_id: (group % engines) as u32,
                // The workgroup's turn on its compute unit.
                tg_id: (group / (engines * per_engine)) as u32,
                vm_id: u32::from(self.vmid),
                queue_id: u32::from(self.queue),
                state_id: 0,
                me_id: u32::from(self.me),
            },
        )
    }

    /// WAVE_ID and SIMD_ID of a workgroup's wave `wave`: its waves go to the SIMDs in turn.
    pub fn wave_bits(&self, wave: u32) -> u32 {
        let simds = self.array.simds_per_cu.max(1);
        let slot = (wave / simds) % self.array.waves_per_simd.max(1);
        (slot & 0xf) | ((wave % simds) & 3) << 4
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
            log::warn!(target: "hw::spi", "compute-unit threads: {e}");
            None
        }
    }
}

/// Why a dispatch could not run or stopped.
fn bad(addr: u64, reason: String) -> QueueError {
    QueueError::BadPacket { addr, reason }
}

/// `queue_inactive_signal` bit ROCr's trap handler sets for `s_trap` (abort, `__builtin_trap`).
pub const QUEUE_ERROR_TRAP: u64 = 1 << 31;
/// `queue_inactive_signal` bit ROCr's trap handler sets for an illegal instruction (the model
/// also reports an instruction it has no semantics for this way).
pub const QUEUE_ERROR_ILLEGAL_INSTRUCTION: u64 = 1 << 30;
/// `queue_inactive_signal` bit ROCr's trap handler sets for a memory violation (TRAPSTS
/// MEM_VIOL without XNACK_ERROR).
pub const QUEUE_ERROR_MEMORY_VIOLATION: u64 = 1 << 29;

/// A wave that stopped on a trap or an exception: it stays halted, and the runtime learns of
/// it through its queue (what ROCr's second-level trap handler does on a GPU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaveException {
    /// The `queue_inactive_signal` error bit.
    pub error: u64,
    /// What happened, for the log.
    pub what: String,
    /// For a memory violation: the VM fault, which the memory hub reports to the driver as
    /// well (amdkfd's memory exception event).
    pub fault: Option<VmFault>,
    /// The wave's trap handler has reported the exception itself and halted the wave
    /// (STATUS.HALT): the queue only stays on the packet. Otherwise (no handler, or the
    /// handler failed) the CP reports it the way ROCr's handler would.
    pub reported: bool,
}

/// An `s_sendmsg` the SQ forwards: SIMM16, M0, and whether the wave sent it from its trap
/// handler (STATUS.PRIV: the SQ interrupt word's PRIV bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqMessage {
    /// `s_sendmsg` SIMM16 (`[3:0]`: the message).
    pub simm16: u16,
    /// M0 when it was sent.
    pub m0: u32,
    /// Sent by a privileged (trap handler) wave.
    pub privileged: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaveState {
    Ready,
    Barrier,
    /// Waiting on a global wave sync resource of the queue.
    Gws(GwsWait),
    Done,
}

#[derive(Debug, Clone)]
struct Workgroup {
    id: [u32; 3],
    /// Its number in launch order, and its first wave's number in the dispatch.
    index: u64,
    first_wave: u64,
    /// Its slot in the scratch ring: its waves' private segments follow each other there.
    slot: u32,
    waves: Vec<(Wave, WaveState)>,
    /// Per wave: the exception its trap handler is handling (what is reported if the handler
    /// itself fails).
    in_handler: Vec<Option<WaveException>>,
    /// Per wave: its last run's memory accesses, and whether that run polled.
    activity: Vec<(Activity, bool)>,
    lds: Vec<u8>,
    /// A barrier just released its waves: the next round gives each a short turn
    /// ([`BARRIER_RELEASE_TURN`]).
    released: bool,
}

/// How a workgroup's turn on a compute unit ended.
enum GroupEnd {
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

    /// Gives the dispatch code windows an earlier one decoded; those whose bytes changed in
    /// memory since (new code loaded at the same address) are dropped.
    pub fn with_code(mut self, vm: &GpuVm, kept: Vec<DecodedCode>) -> Self {
        let mut buf = Vec::new();
        self.code = kept
            .into_iter()
            .filter(|c| {
                buf.resize(c.bytes.len(), 0);
                vm.read(c.start, &mut buf).is_ok() && buf[..] == c.bytes[..]
            })
            .collect();
        self
    }

    /// The code windows the dispatch decoded (for the next dispatch of the queue), the most
    /// recent first, at most [`KEPT_CODE_WINDOWS`].
    pub fn take_code(&mut self) -> Vec<DecodedCode> {
        let mut code = std::mem::take(&mut self.code);
        code.reverse();
        code.truncate(KEPT_CODE_WINDOWS);
        code
    }

    /// Uses the queue's global wave sync resources (a dispatch alone gets its own).
    pub fn with_gws(mut self, gws: Arc<Gws>) -> Self {
        self.gws = gws;
        self
    }

    /// Whether every live wave of `group` waits on a GWS resource that keeps it waiting: the
    /// group cannot run until another workgroup gets there.
    fn gws_blocked(&self, group: &Workgroup) -> bool {
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
            target: "hw::spi",
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
                            log::warn!(target: "hw::spi", "compute-unit thread: {e}");
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

    /// Runs a workgroup's waves round robin until they all end, one halts or faults, its turn
    /// ([`GROUP_TURN`] instructions) is over, or the slice is.
    #[allow(clippy::too_many_arguments)]
    fn run_group(
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
                let budget = if short_round {
                    BARRIER_RELEASE_TURN
                } else if polled {
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
                            retired,
                        ),
                        None => {
                            let before = wave.retired;
                            let stop = wave.run(code, &mut env, budget);
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
                        target: "hw::spi",
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
                        log::debug!(target: "hw::spi", "workgroup {:?} wave {i}: retry fault {m:?}", group.id);
                        let fault = retry_fault(m);
                        return GroupEnd::Retry(Box::new(group), fault);
                    }
                    Stop::Fault(WaveFault::Memory(m)) if !privileged => {
                        // As amdgpu prints a GPU page fault in the kernel log: the wave, the
                        // instruction's address and the faulting address, whoever handles it.
                        log::warn!(
                            target: "hw::spi",
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
                            target: "hw::spi",
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

    /// Decodes the code window around `pc` into this thread's cache and the dispatch's.
    fn decode_at(
        &self,
        vm: &GpuVm,
        pc: u64,
        local_code: &mut Vec<Arc<CodeCache>>,
        shared_code: &Mutex<Vec<DecodedCode>>,
    ) -> Result<Arc<CodeCache>, MemFault> {
        if let Some(c) = locked(shared_code).iter().find(|c| holds(&c.cache, pc)) {
            local_code.push(c.cache.clone());
            return Ok(c.cache.clone());
        }
        let c = code_window(vm, self.setup.target, pc)?;
        let cache = c.cache.clone();
        locked(shared_code).push(c);
        local_code.push(cache.clone());
        Ok(cache)
    }

    /// A workgroup's waves with their initial state (AMDGPUUsage, "Initial Kernel Execution
    /// State"), in the allocations of `reuse` (a finished workgroup) when given.
    fn new_group(
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

/// `s_sendmsg` message id (SIMM16[3:0]) asking the SQ for the wave's queue doorbell.
const MSG_GET_DOORBELL: u16 = 10;
/// The doorbell id bits of the MSG_GET_DOORBELL answer.
const DOORBELL_ID_MASK: u32 = 0xfff;

/// `TRAPSTS.MEM_VIOL` (bit 8).
const TRAPSTS_MEM_VIOL: u32 = 1 << 8;
/// `TRAPSTS.ILLEGAL_INST` (bit 11).
const TRAPSTS_ILLEGAL_INST: u32 = 1 << 11;
/// `ttmp12`: where the first-level handler leaves the wave's STATUS for the second level.
const TTMP_SAVED_STATUS: usize = 12;

/// What the hardware (and amdkfd's first-level handler, which the model stands in for) does
/// when a wave traps with a handler installed: `{ttmp1, ttmp0}` hold the PC with the trap id
/// in `ttmp1[23:16]` (`s_trap` has set them; an exception saves the faulting PC with id 0 and
/// sets its TRAPSTS bit: MEM_VIOL for a memory violation, ILLEGAL_INST otherwise),
/// `ttmp12` the wave's STATUS, `ttmp14:15` the handler's TMA, STATUS.PRIV is set and the wave
/// continues at TBA. `s_rfe_b64` returns.
fn enter_trap_handler(wave: &mut Wave, handler: TrapHandler, error: u64) {
    use isa::exec::wave::sreg::TTMP0;
    if error != QUEUE_ERROR_TRAP {
        wave.sgpr[TTMP0] = wave.pc as u32;
        wave.sgpr[TTMP0 + 1] = (wave.pc >> 32) as u32 & 0xffff;
        wave.trapsts |= if error == QUEUE_ERROR_MEMORY_VIOLATION {
            TRAPSTS_MEM_VIOL
        } else {
            TRAPSTS_ILLEGAL_INST
        };
    }
    wave.sgpr[TTMP0 + TTMP_SAVED_STATUS] = wave.status_value();
    wave.sgpr[TTMP0 + 14] = handler.tma as u32;
    wave.sgpr[TTMP0 + 15] = (handler.tma >> 32) as u32;
    wave.status |= isa::exec::wave::status::PRIV;
    wave.pc = handler.tba;
}

/// Whether `code` holds the whole instruction at `pc`. An instruction whose first dword is
/// a window's last and whose second is not in it is cut by the window, not by memory: the
/// window around `pc` decodes it whole.
fn holds(code: &CodeCache, pc: u64) -> bool {
    !matches!(
        code.get(pc),
        None | Some(Err(isa::DecodeError::Truncated { .. }))
    )
}

/// Decodes the code window around `pc`: inside the mapping that holds it, plus the first
/// dword after the mapping when memory is mapped there (an 8-byte instruction may start in
/// one mapping's last dword and end in the next's first, as the fetch of hardware sees one
/// address space).
fn code_window(vm: &GpuVm, target: Target, pc: u64) -> Result<DecodedCode, MemFault> {
    let fault = MemFault {
        address: pc,
        access: Access::Fetch,
    };
    let m = vm.lookup(pc).ok_or(fault)?;
    let start = pc.saturating_sub(CODE_WINDOW / 4).max(m.va) & !3;
    let mapping_end = m.va + m.len;
    let end = pc.saturating_add(CODE_WINDOW).min(mapping_end);
    let mut bytes = vec![0u8; (end - start) as usize];
    vm.read(start, &mut bytes).map_err(|_| fault)?;
    if end == mapping_end {
        let mut next = [0u8; 4];
        if vm.read(end, &mut next).is_ok() {
            bytes.extend_from_slice(&next);
        }
    }
    Ok(DecodedCode {
        start,
        cache: Arc::new(CodeCache::new(target, start, &bytes)),
        bytes: bytes.into(),
    })
}

/// The waves' outside world: the process's GPU VM, the workgroup's LDS and the message log.
struct VmEnv<'a> {
    vm: &'a GpuVm,
    /// The worker's translation cache.
    tlb: &'a mut Tlb,
    lds: &'a mut Vec<u8>,
    messages: &'a mut Vec<SqMessage>,
    /// The wave runs its trap handler (its messages carry PRIV).
    privileged: bool,
    /// What the wave's accesses in this run did (whether it polls).
    activity: Activity,
    /// `KFD_MODEL_STRICT=lds`: an LDS access outside the allocation faults.
    lds_strict: bool,
    /// The dispatch's "LDS access dropped" warning has been logged.
    lds_warned: &'a AtomicBool,
    /// `KFD_MODEL_STRICT=vgprs`: naming a VGPR past the wave's allocation faults.
    vgpr_strict: bool,
    /// The dispatch's "VGPR past the allocation" warning has been logged.
    vgprs_warned: &'a AtomicBool,
    /// The dispatch's kernel object, to name it in those warnings.
    kernel_object: u64,
}

/// The VM fault a wave's retry fault posts.
fn retry_fault(m: MemFault) -> QueueError {
    QueueError::VmFault(VmFault {
        va: m.address,
        write: matches!(m.access, Access::Write | Access::Atomic),
        not_present: true,
    })
}

fn mem_fault(f: VmFault, access: Access) -> MemFault {
    MemFault {
        address: f.va,
        access,
    }
}

impl WaveEnv for VmEnv<'_> {
    fn load(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        out: &mut [Lanes],
    ) -> Result<(), MemFault> {
        self.vm
            .load_lanes(self.tlb, addresses, exec, bytes as usize, out)
            .map_err(|f| mem_fault(f, Access::Read))?;
        let lane = exec.trailing_zeros() as usize;
        if let (Some(a), Some(v)) = (addresses.get(lane), out.first().and_then(|d| d.get(lane))) {
            self.activity.read(*a, *v);
        }
        Ok(())
    }

    fn store(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        data: &[Lanes],
    ) -> Result<(), MemFault> {
        self.activity.write();
        self.vm
            .store_lanes(self.tlb, addresses, exec, bytes as usize, data)
            .map_err(|f| mem_fault(f, Access::Write))
    }

    fn load_run(&mut self, address: u64, out: &mut Lanes) -> bool {
        let done = self.vm.load_run(self.tlb, address, out);
        if done {
            self.activity.read(address, out[0]);
        }
        done
    }

    fn store_run(&mut self, address: u64, data: &Lanes) -> bool {
        self.activity.write();
        self.vm.store_run(self.tlb, address, data)
    }

    fn load_scalar(&mut self, address: u64, out: &mut [u32]) -> Result<(), MemFault> {
        // s_load_dwordx16 at most: no allocation for the common sizes
        let mut small = [0u8; 64];
        let mut large = Vec::new();
        let buf = match small.get_mut(..out.len() * 4) {
            Some(b) => b,
            None => {
                large.resize(out.len() * 4, 0);
                &mut large[..]
            }
        };
        self.vm
            .read_for_wave(self.tlb, address, buf)
            .map_err(|f| mem_fault(f, Access::Read))?;
        for (d, c) in out.iter_mut().zip(buf.chunks_exact(4)) {
            *d = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        self.activity
            .read(address, out.first().copied().unwrap_or(0));
        Ok(())
    }

    fn store_scalar(&mut self, address: u64, data: &[u32]) -> Result<(), MemFault> {
        // s_store_dwordx4 at most
        let mut bytes = [0u8; 16];
        let n = (data.len() * 4).min(bytes.len());
        for (c, d) in bytes.chunks_exact_mut(4).zip(data) {
            c.copy_from_slice(&d.to_le_bytes());
        }
        self.activity.write();
        // `GpuVm::write` checks the whole range (present and writable) before it writes.
        self.vm
            .write_for_wave(self.tlb, address, &bytes[..n])
            .map_err(|f| mem_fault(f, Access::Write))
    }

    fn atomic(
        &mut self,
        r: &AtomicRequest<'_>,
        old: &mut [u64; WAVE_SIZE],
    ) -> Result<(), MemFault> {
        // A fault leaves memory untouched, so a retried instruction applies each lane once.
        let size = if r.wide { 8 } else { 4 };
        for lane in (0..WAVE_SIZE).filter(|l| r.exec >> l & 1 != 0) {
            self.vm
                .probe(r.addresses[lane], size, true)
                .map_err(|f| mem_fault(f, Access::Atomic))?;
        }
        for lane in (0..WAVE_SIZE).filter(|l| r.exec >> l & 1 != 0) {
            let (src, cmp) = (r.src[lane], r.cmp[lane]);
            let op = r.op;
            old[lane] = if r.wide {
                self.vm
                    .update_u64(r.addresses[lane], |v| op.apply(v, src, cmp, true))
            } else {
                self.vm
                    .update_u32(r.addresses[lane], |v| {
                        op.apply(u64::from(v), src, cmp, false) as u32
                    })
                    .map(u64::from)
            }
            .map_err(|f| mem_fault(f, Access::Atomic))?;
            // An atomic that left memory as it was (a poll with `atomicOr(p, 0)`) only read.
            let new = op.apply(old[lane], src, cmp, r.wide);
            let unchanged = if r.wide {
                new == old[lane]
            } else {
                new as u32 == old[lane] as u32
            };
            if unchanged {
                self.activity.read(r.addresses[lane], old[lane] as u32);
            } else {
                self.activity.write();
            }
        }
        Ok(())
    }

    fn lds(&mut self) -> &mut [u8] {
        self.lds
    }

    fn lds_strict(&self) -> bool {
        self.lds_strict
    }

    fn lds_out_of_range(&mut self, offset: u32) {
        if !self.lds_warned.swap(true, Ordering::Relaxed) {
            log::warn!(
                target: "hw::spi",
                "dispatch {:#x}: LDS access at byte {offset:#x} is past the workgroup's {} bytes: \
                 dropped as the hardware does (writes lost, reads 0); {}=lds reports it instead",
                self.kernel_object,
                self.lds.len(),
                crate::config::STRICT_ENV
            );
        }
    }

    fn vgpr_strict(&self) -> bool {
        self.vgpr_strict
    }

    fn vgpr_out_of_range(&mut self, index: u32, destination: bool) {
        if !self.vgprs_warned.swap(true, Ordering::Relaxed) {
            let what = if destination {
                "writing it, the instruction is ignored"
            } else {
                "reading it reads v0"
            };
            log::warn!(
                target: "hw::spi",
                "dispatch {:#x}: v{index} is past the wave's VGPR allocation \
                 (COMPUTE_PGM_RSRC1.VGPRS): {what}, as the hardware does; {}=vgprs reports it \
                 instead",
                self.kernel_object,
                crate::config::STRICT_ENV
            );
        }
    }

    fn send_message(&mut self, simm16: u16, m0: u32) {
        self.messages.push(SqMessage {
            simm16,
            m0,
            privileged: self.privileged,
        });
    }

    fn shader_clock(&mut self) -> u64 {
        crate::hw::clock::cpu_clock_ns()
    }

    fn real_time(&mut self) -> u64 {
        crate::hw::clock::cpu_clock_ns() / 10
    }
}
