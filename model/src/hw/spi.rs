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
//! slice and returns, so a long kernel yields to the engine's other queues.

use crate::hw::engine::QueueError;
use crate::hw::vm::{GpuVm, VmFault};
use codeobj::{DispatchInfo, KernelCode};
use isa::exec::{
    Access, AtomicRequest, CodeCache, Lanes, MemFault, Mode, Stop, Wave, WaveEnv, WaveFault,
    WAVE_SIZE,
};
use isa::Target;
use pm4::aql::KernelDispatchPacket;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one [`KernelRun::step`] runs waves before it gives the engine back.
pub const DISPATCH_SLICE: Duration = Duration::from_millis(2);

/// Instructions a wave runs before the next wave of its workgroup gets a turn.
pub const WAVE_TURN: u64 = 4096;

/// Bytes of code decoded around a PC (a window; a branch outside it decodes another).
const CODE_WINDOW: u64 = 256 << 10;

/// The 64-bit `SH_MEM_BASES` value the model's driver gives every process: the shared (LDS)
/// aperture's top 16 bits in `[31:16]`, the private (scratch) aperture's in `[15:0]`.
const SH_MEM_BASES: u32 = ((crate::process::LDS_APERTURE_BASE >> 48) as u32) << 16
    | (crate::process::SCRATCH_APERTURE_BASE >> 48) as u32;

/// Offsets in ROCr's `amd_queue_t` (256 bytes, `amd_hsa_queue.h`) that the CP reads.
pub mod amd_queue {
    /// `read_dispatch_id`: what the MQD's read-pointer report address points at.
    pub const READ_DISPATCH_ID: u64 = 128;
    /// `scratch_resource_descriptor[4]`.
    pub const SCRATCH_RESOURCE_DESCRIPTOR: u64 = 144;
    /// `scratch_backing_memory_location`.
    pub const SCRATCH_BACKING_MEMORY_LOCATION: u64 = 160;
    /// `scratch_backing_memory_byte_size`.
    pub const SCRATCH_BACKING_MEMORY_BYTE_SIZE: u64 = 168;
    /// `scratch_wave64_lane_byte_size`.
    pub const SCRATCH_WAVE64_LANE_BYTE_SIZE: u64 = 176;
    /// `queue_inactive_signal`.
    pub const QUEUE_INACTIVE_SIGNAL: u64 = 192;
}

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

/// A wave that stopped on a trap or an exception: it stays halted, and the runtime learns of
/// it through its queue (what ROCr's second-level trap handler does on a GPU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaveException {
    /// The `queue_inactive_signal` error bit.
    pub error: u64,
    /// What happened, for the log.
    pub what: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaveState {
    Ready,
    Barrier,
    Done,
}

#[derive(Debug, Clone)]
struct Workgroup {
    id: [u32; 3],
    waves: Vec<(Wave, WaveState)>,
    lds: Vec<u8>,
}

/// A dispatch in progress: the workgroups not yet started and the one running.
#[derive(Debug, Clone)]
pub struct KernelRun {
    setup: DispatchSetup,
    info: DispatchInfo,
    entry: u64,
    groups: [u32; 3],
    next_group: u64,
    current: Option<Workgroup>,
    code: Vec<Arc<CodeCache>>,
    vgprs: usize,
    agprs: usize,
    /// `s_sendmsg` messages the waves sent since the last [`KernelRun::take_messages`].
    messages: Vec<(u16, u32)>,
    /// A wave halted on a trap or an exception: the dispatch runs no further.
    exception: Option<WaveException>,
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
            next_group: 0,
            current: None,
            code: Vec::new(),
            vgprs,
            agprs,
            messages: Vec::new(),
            exception: None,
        })
    }

    /// The messages (`s_sendmsg` SIMM16 and M0) waves sent since the last call.
    pub fn take_messages(&mut self) -> Vec<(u16, u32)> {
        std::mem::take(&mut self.messages)
    }

    fn total_groups(&self) -> u64 {
        self.groups.iter().map(|&g| u64::from(g)).product()
    }

    /// The trap or exception that halted a wave, if one did.
    pub fn exception(&self) -> Option<&WaveException> {
        self.exception.as_ref()
    }

    /// Runs waves for about [`DISPATCH_SLICE`]: `Ok(true)` when every workgroup has ended,
    /// `Ok(false)` when there is more to run or a wave is halted ([`KernelRun::exception`]).
    pub fn step(&mut self, vm: &GpuVm) -> Result<bool, QueueError> {
        let started = Instant::now();
        loop {
            if self.exception.is_some() {
                return Ok(false);
            }
            if self.current.is_none() {
                if self.next_group >= self.total_groups() {
                    return Ok(true);
                }
                let g = self.next_group;
                self.next_group += 1;
                let gx = self.groups[0] as u64;
                let gy = self.groups[1] as u64;
                let id = [
                    (g % gx) as u32,
                    ((g / gx) % gy) as u32,
                    (g / (gx * gy)) as u32,
                ];
                self.current = Some(self.new_group(id));
            }
            if self.run_group(vm, started)? {
                self.current = None;
            }
            if started.elapsed() >= DISPATCH_SLICE {
                return Ok(self.current.is_none() && self.next_group >= self.total_groups());
            }
        }
    }

    /// Runs the current workgroup's waves round robin; `Ok(true)` when all have ended.
    fn run_group(&mut self, vm: &GpuVm, started: Instant) -> Result<bool, QueueError> {
        let Some(mut group) = self.current.take() else {
            return Ok(true);
        };
        let result = loop {
            let mut ran = false;
            let mut fault = None;
            let mut halt = None;
            for i in 0..group.waves.len() {
                if group.waves[i].1 != WaveState::Ready {
                    continue;
                }
                ran = true;
                let mut env = VmEnv {
                    vm,
                    lds: &mut group.lds,
                    messages: &mut self.messages,
                };
                let wave = &mut group.waves[i].0;
                let stop = loop {
                    let code = match self.code.iter().find(|c| c.get(wave.pc).is_some()) {
                        Some(c) => c.clone(),
                        None => match code_window(vm, self.setup.target, wave.pc) {
                            Ok(c) => {
                                self.code.push(c.clone());
                                c
                            }
                            Err(e) => break Stop::Fault(WaveFault::Memory(e)),
                        },
                    };
                    let stop = wave.run(&code, &mut env, WAVE_TURN);
                    // A fetch outside the decoded window: decode the window around the PC.
                    if let Stop::Fault(WaveFault::Memory(MemFault {
                        access: Access::Fetch,
                        ..
                    })) = stop
                    {
                        if code.get(wave.pc).is_none() && vm.probe(wave.pc, 4, false).is_ok() {
                            match code_window(vm, self.setup.target, wave.pc) {
                                Ok(c) => {
                                    self.code.push(c);
                                    continue;
                                }
                                Err(e) => break Stop::Fault(WaveFault::Memory(e)),
                            }
                        }
                    }
                    break stop;
                };
                match stop {
                    Stop::EndOfProgram => group.waves[i].1 = WaveState::Done,
                    Stop::Barrier => group.waves[i].1 = WaveState::Barrier,
                    Stop::BudgetExhausted | Stop::Sleep { .. } => {}
                    Stop::Trap { id } => {
                        halt = Some(WaveException {
                            error: QUEUE_ERROR_TRAP,
                            what: format!("s_trap {id} in workgroup {:?} wave {i}", group.id),
                        });
                        break;
                    }
                    Stop::Fault(WaveFault::Memory(m)) => {
                        log::debug!(target: "hw::spi", "workgroup {:?} wave {i}: {m:?}", group.id);
                        fault = Some(QueueError::VmFault(VmFault {
                            va: m.address,
                            write: matches!(m.access, Access::Write | Access::Atomic),
                            not_present: true,
                        }));
                        break;
                    }
                    Stop::Fault(f) => {
                        halt = Some(WaveException {
                            error: QUEUE_ERROR_ILLEGAL_INSTRUCTION,
                            what: format!("workgroup {:?} wave {i}: {f}", group.id),
                        });
                        break;
                    }
                }
            }
            if let Some(e) = fault {
                break Err(e);
            }
            if let Some(h) = halt {
                self.exception = Some(h);
                break Ok(false);
            }
            let live = group
                .waves
                .iter()
                .filter(|w| w.1 != WaveState::Done)
                .count();
            if live == 0 {
                break Ok(true);
            }
            if group.waves.iter().all(|w| w.1 != WaveState::Ready) {
                // Every live wave waits at the barrier: release them.
                for w in group.waves.iter_mut().filter(|w| w.1 == WaveState::Barrier) {
                    w.1 = WaveState::Ready;
                }
            } else if !ran {
                break Ok(false);
            }
            if started.elapsed() >= DISPATCH_SLICE {
                break Ok(false);
            }
        };
        if matches!(result, Ok(false)) {
            self.current = Some(group);
        }
        result
    }

    /// A workgroup's waves with their initial state (AMDGPUUsage, "Initial Kernel Execution
    /// State").
    fn new_group(&self, id: [u32; 3]) -> Workgroup {
        let s = &self.setup;
        let wg = s.workgroup;
        let items = wg[0] * wg[1] * wg[2];
        let nwaves = items.div_ceil(WAVE_SIZE as u32);
        let lds = (self.info.group_segment_fixed_size as usize)
            .saturating_add(s.dynamic_lds as usize)
            .min(64 << 10);
        // Work-items of this group inside the grid (a partial last group has fewer).
        let extent = [0, 1, 2].map(|d| (s.grid[d] - id[d] * wg[d]).min(wg[d]));
        let waves = (0..nwaves)
            .map(|w| (self.initial_wave(id, w, extent), WaveState::Ready))
            .collect();
        Workgroup {
            id,
            waves,
            lds: vec![0; lds],
        }
    }

    fn initial_wave(&self, group: [u32; 3], w: u32, extent: [u32; 3]) -> Wave {
        let s = &self.setup;
        let info = &self.info;
        let props = info.kernel_code_properties;
        let rsrc2 = info.compute_pgm_rsrc2;
        let mut wave = Wave::new(s.target, self.vgprs, self.agprs);
        wave.pc = self.entry;
        wave.mode = Mode::from_rsrc1(info.compute_pgm_rsrc1.into_bits());
        wave.sh_mem_bases = SH_MEM_BASES;
        wave.lds_alloc = self
            .info
            .group_segment_fixed_size
            .saturating_add(s.dynamic_lds);
        let wave_scratch = u64::from(s.scratch.lane_bytes) * WAVE_SIZE as u64;
        let wave_offset = u64::from(w) * wave_scratch;
        let mut sgprs: Vec<u32> = Vec::with_capacity(24);
        if let Some(user) = &s.user_data {
            // PM4: COMPUTE_USER_DATA_* are the user SGPRs.
            sgprs.extend(user.iter().take(usize::from(rsrc2.user_sgpr_count())));
        }
        let push64 = |v: &mut Vec<u32>, x: u64| v.extend([x as u32, (x >> 32) as u32]);
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
        for (r, v) in wave.sgpr.iter_mut().zip(&sgprs) {
            *r = *v;
        }
        // Work-item ids: lane l of wave w is flat id w*64+l in x-major order.
        let wg = s.workgroup;
        let mut ids = [[0u32; WAVE_SIZE]; 3];
        let mut exec = 0u64;
        let [xs, ys, zs] = &mut ids;
        for (l, ((x, y), z)) in xs
            .iter_mut()
            .zip(ys.iter_mut())
            .zip(zs.iter_mut())
            .enumerate()
        {
            let flat = w * WAVE_SIZE as u32 + l as u32;
            *x = flat % wg[0];
            *y = (flat / wg[0]) % wg[1];
            *z = flat / (wg[0] * wg[1]);
            if *z < wg[2] && *x < extent[0] && *y < extent[1] && *z < extent[2] {
                exec |= 1 << l;
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
        wave
    }
}

/// Decodes the code window around `pc` (inside the mapping that holds it).
fn code_window(vm: &GpuVm, target: Target, pc: u64) -> Result<Arc<CodeCache>, MemFault> {
    let fault = MemFault {
        address: pc,
        access: Access::Fetch,
    };
    let m = vm.lookup(pc).ok_or(fault)?;
    let start = pc.saturating_sub(CODE_WINDOW / 4).max(m.va) & !3;
    let end = pc.saturating_add(CODE_WINDOW).min(m.va + m.len);
    let mut bytes = vec![0u8; (end - start) as usize];
    vm.read(start, &mut bytes).map_err(|_| fault)?;
    Ok(Arc::new(CodeCache::new(target, start, &bytes)))
}

/// The waves' outside world: the process's GPU VM, the workgroup's LDS and the message log.
struct VmEnv<'a> {
    vm: &'a GpuVm,
    lds: &'a mut Vec<u8>,
    messages: &'a mut Vec<(u16, u32)>,
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
        let n = bytes.min(16) as usize;
        let mut buf = [0u8; 16];
        for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
            buf = [0; 16];
            self.vm
                .read(addresses[lane], &mut buf[..n])
                .map_err(|f| mem_fault(f, Access::Read))?;
            for (d, reg) in out.iter_mut().enumerate() {
                reg[lane] = u32::from_le_bytes(buf[4 * d..4 * d + 4].try_into().unwrap_or([0; 4]));
            }
        }
        let _ = buf;
        Ok(())
    }

    fn store(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        data: &[Lanes],
    ) -> Result<(), MemFault> {
        let n = bytes.min(16) as usize;
        for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
            let mut buf = [0u8; 16];
            for (d, reg) in data.iter().enumerate().take(4) {
                buf[4 * d..4 * d + 4].copy_from_slice(&reg[lane].to_le_bytes());
            }
            self.vm
                .write(addresses[lane], &buf[..n])
                .map_err(|f| mem_fault(f, Access::Write))?;
        }
        Ok(())
    }

    fn load_scalar(&mut self, address: u64, out: &mut [u32]) -> Result<(), MemFault> {
        let mut buf = vec![0u8; out.len() * 4];
        self.vm
            .read(address, &mut buf)
            .map_err(|f| mem_fault(f, Access::Read))?;
        for (d, c) in out.iter_mut().zip(buf.chunks_exact(4)) {
            *d = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(())
    }

    fn atomic(
        &mut self,
        r: &AtomicRequest<'_>,
        old: &mut [u64; WAVE_SIZE],
    ) -> Result<(), MemFault> {
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
        }
        Ok(())
    }

    fn lds(&mut self) -> &mut [u8] {
        self.lds
    }

    fn send_message(&mut self, simm16: u16, m0: u32) {
        self.messages.push((simm16, m0));
    }

    fn shader_clock(&mut self) -> u64 {
        crate::hw::clock::cpu_clock_ns()
    }

    fn real_time(&mut self) -> u64 {
        crate::hw::clock::cpu_clock_ns() / 10
    }
}
