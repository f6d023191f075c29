//! What the shader engines report about the kernels they run: counters (what the SQ's
//! performance counters count — dispatches, workgroups, waves, instructions, wave faults) and
//! an optional [`DispatchObserver`] that sees every dispatch, each wave's initial registers,
//! chosen waves instruction by instruction with the registers each one changed, and each
//! wave's end.
//!
//! Every GPU owns one [`ShaderActivity`] (`Gpu::shader`). The SPI takes a [`Watch`] of it when
//! a dispatch starts; the observer is looked up then and checked once per wave, so a model
//! without an observer pays a few atomic additions per wave and nothing per instruction.

use crate::hw::spi::BARRIER_RELEASE_TURN;
use isa::exec::wave::sreg;
use isa::exec::{CodeCache, Lanes, Stop, Wave, WaveEnv};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// A snapshot of a GPU's shader counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShaderCounts {
    /// Kernel dispatches started (AQL KERNEL_DISPATCH and PM4 DISPATCH_DIRECT).
    pub dispatches: u64,
    /// Workgroups launched.
    pub workgroups: u64,
    /// Waves launched.
    pub waves: u64,
    /// Instructions the waves executed.
    pub instructions: u64,
    /// Waves stopped by a fault, a trap or an illegal instruction.
    pub faults: u64,
}

impl std::ops::Add for ShaderCounts {
    type Output = ShaderCounts;

    fn add(self, o: ShaderCounts) -> ShaderCounts {
        ShaderCounts {
            dispatches: self.dispatches + o.dispatches,
            workgroups: self.workgroups + o.workgroups,
            waves: self.waves + o.waves,
            instructions: self.instructions + o.instructions,
            faults: self.faults + o.faults,
        }
    }
}

/// Where a wave sits in its dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveId {
    /// The GPU's dispatch number (1 for its first dispatch).
    pub dispatch: u64,
    /// The workgroup's id.
    pub workgroup: [u32; 3],
    /// The workgroup's number in launch order (x fastest).
    pub workgroup_index: u64,
    /// The wave's index in its workgroup.
    pub wave: u32,
    /// The wave's number in the dispatch, in launch order (`--wave N` of `kfd trace dispatch`).
    pub index: u64,
}

/// A dispatch as the SPI starts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchStart {
    /// The GPU's dispatch number.
    pub dispatch: u64,
    /// Address of the AQL packet (or the PM4 DISPATCH_DIRECT).
    pub packet: u64,
    /// Address of the kernel object (descriptor).
    pub kernel_object: u64,
    /// Address of the first instruction.
    pub entry: u64,
    /// Work-items of the grid, per dimension.
    pub grid: [u32; 3],
    /// Work-items per workgroup, per dimension.
    pub workgroup: [u32; 3],
    /// Workgroups of the grid, per dimension.
    pub groups: [u32; 3],
    /// Waves per workgroup.
    pub waves_per_group: u32,
    /// VGPRs each wave got.
    pub vgprs: usize,
    /// AGPRs each wave got (gfx90a).
    pub agprs: usize,
    /// LDS bytes per workgroup.
    pub lds_bytes: u32,
}

/// A register an instruction changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegChange {
    /// A scalar register by operand number (`s0`–`s101`, `vcc_lo`, `m0`, `exec_lo`, …).
    Sgpr {
        /// Operand number (see [`isa::exec::wave::sreg`]).
        index: usize,
        /// Value before.
        old: u32,
        /// Value after.
        new: u32,
    },
    /// A VGPR (all 64 lanes; some may be unchanged).
    Vgpr {
        /// Register number.
        index: usize,
        /// Lanes before.
        old: Box<Lanes>,
        /// Lanes after.
        new: Box<Lanes>,
    },
    /// An AGPR (gfx90a).
    Agpr {
        /// Register number.
        index: usize,
        /// Lanes before.
        old: Box<Lanes>,
        /// Lanes after.
        new: Box<Lanes>,
    },
    /// The scalar condition code.
    Scc {
        /// Before.
        old: bool,
        /// After.
        new: bool,
    },
}

/// The name of scalar operand number `index`, as the disassembler prints it.
pub fn sgpr_name(index: usize) -> String {
    match index {
        i if i < sreg::SGPR_COUNT => format!("s{i}"),
        sreg::FLAT_SCRATCH_LO => "flat_scratch_lo".into(),
        sreg::FLAT_SCRATCH_HI => "flat_scratch_hi".into(),
        sreg::XNACK_MASK_LO => "xnack_mask_lo".into(),
        sreg::XNACK_MASK_HI => "xnack_mask_hi".into(),
        sreg::VCC_LO => "vcc_lo".into(),
        sreg::VCC_HI => "vcc_hi".into(),
        i if (sreg::TTMP0..sreg::TTMP0 + 16).contains(&i) => format!("ttmp{}", i - sreg::TTMP0),
        sreg::M0 => "m0".into(),
        sreg::EXEC_LO => "exec_lo".into(),
        sreg::EXEC_HI => "exec_hi".into(),
        i => format!("sreg{i}"),
    }
}

impl fmt::Display for RegChange {
    /// `s4: 0x0 → 0x10`; a VGPR shows its first changed lane and how many lanes changed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lanes = |f: &mut fmt::Formatter<'_>, name: String, old: &Lanes, new: &Lanes| {
            let changed: Vec<usize> = (0..old.len()).filter(|&l| old[l] != new[l]).collect();
            match changed.first() {
                Some(&l) => write!(
                    f,
                    "{name}: lane {l} {:#x} → {:#x} ({} lanes changed)",
                    old[l],
                    new[l],
                    changed.len()
                ),
                None => write!(f, "{name}: unchanged"),
            }
        };
        match self {
            RegChange::Sgpr { index, old, new } => {
                write!(f, "{}: {old:#x} → {new:#x}", sgpr_name(*index))
            }
            RegChange::Vgpr { index, old, new } => lanes(f, format!("v{index}"), old, new),
            RegChange::Agpr { index, old, new } => lanes(f, format!("a{index}"), old, new),
            RegChange::Scc { old, new } => {
                write!(f, "scc: {} → {}", u8::from(*old), u8::from(*new))
            }
        }
    }
}

/// One instruction of an observed wave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionStep {
    /// Its address.
    pub pc: u64,
    /// Its disassembly (llvm-objdump's text).
    pub text: String,
    /// The registers it changed.
    pub changes: Vec<RegChange>,
}

/// How a wave ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaveEnd {
    /// `s_endpgm`.
    EndOfProgram {
        /// Instructions it executed.
        instructions: u64,
    },
    /// A fault, trap or illegal instruction halted it.
    Halted {
        /// Instructions it executed.
        instructions: u64,
        /// Why.
        why: String,
    },
}

/// Sees what the shader engines do. Every method has an empty default; the model calls them on
/// its engine thread (or the thread running `run_until_idle`).
pub trait DispatchObserver: Send + Sync {
    /// A dispatch starts.
    fn dispatch_start(&self, _dispatch: &DispatchStart) {}
    /// A wave is launched with these initial registers.
    fn wave_start(&self, _id: WaveId, _initial: &Wave) {}
    /// Whether to report this wave instruction by instruction (it then runs one instruction
    /// at a time, with a register comparison after each).
    fn wants_instructions(&self, _id: WaveId) -> bool {
        false
    }
    /// An instruction of a wave [`DispatchObserver::wants_instructions`] chose.
    fn instruction(&self, _id: WaveId, _step: &InstructionStep) {}
    /// A wave ended.
    fn wave_end(&self, _id: WaveId, _end: &WaveEnd) {}
    /// Every wave of the dispatch ended (`faulted`: it stopped on a fault instead).
    fn dispatch_end(&self, _dispatch: u64, _faulted: bool) {}
}

/// A GPU's shader counters and observer.
#[derive(Default)]
pub struct ShaderActivity {
    dispatches: AtomicU64,
    workgroups: AtomicU64,
    waves: AtomicU64,
    instructions: AtomicU64,
    faults: AtomicU64,
    observer: RwLock<Option<Arc<dyn DispatchObserver>>>,
}

impl fmt::Debug for ShaderActivity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShaderActivity")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl ShaderActivity {
    /// The counters now.
    pub fn counts(&self) -> ShaderCounts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ShaderCounts {
            dispatches: get(&self.dispatches),
            workgroups: get(&self.workgroups),
            waves: get(&self.waves),
            instructions: get(&self.instructions),
            faults: get(&self.faults),
        }
    }

    /// Installs (or with `None` removes) the observer; dispatches that start later see it.
    pub fn set_observer(&self, observer: Option<Arc<dyn DispatchObserver>>) {
        *self.observer.write().unwrap_or_else(|e| e.into_inner()) = observer;
    }

    /// A watch over a dispatch that starts now: counts it and tells the observer.
    pub fn watch(self: &Arc<Self>, start: impl FnOnce(u64) -> DispatchStart) -> Watch {
        let dispatch = self.dispatches.fetch_add(1, Ordering::Relaxed) + 1;
        let observer = self
            .observer
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(o) = &observer {
            o.dispatch_start(&start(dispatch));
        }
        Watch {
            activity: self.clone(),
            observer,
            dispatch,
        }
    }
}

/// One dispatch's connection to its GPU's [`ShaderActivity`].
#[derive(Clone)]
pub struct Watch {
    activity: Arc<ShaderActivity>,
    observer: Option<Arc<dyn DispatchObserver>>,
    dispatch: u64,
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("dispatch", &self.dispatch)
            .field("observed", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// A workgroup launches with these waves (counted; the observer sees each one's initial
    /// registers), numbered in the dispatch from `first` (workgroups may launch on several
    /// host threads, so the caller numbers them: workgroup index × waves per workgroup).
    pub fn workgroup<'a>(
        &self,
        workgroup: [u32; 3],
        workgroup_index: u64,
        first: u64,
        waves: impl ExactSizeIterator<Item = &'a Wave>,
    ) {
        self.count_workgroups(1, waves.len() as u64);
        self.workgroup_start(workgroup, workgroup_index, first, waves);
    }

    /// Adds `groups` workgroups of `waves` waves in all to the counters (a compute-unit
    /// thread counts its workgroups once per time slice: no shared counter per workgroup).
    pub fn count_workgroups(&self, groups: u64, waves: u64) {
        if groups != 0 {
            self.activity
                .workgroups
                .fetch_add(groups, Ordering::Relaxed);
            self.activity.waves.fetch_add(waves, Ordering::Relaxed);
        }
    }

    /// [`Watch::workgroup`] without the counters: tells the observer, if any, that the
    /// workgroup's waves start.
    pub fn workgroup_start<'a>(
        &self,
        workgroup: [u32; 3],
        workgroup_index: u64,
        first: u64,
        waves: impl ExactSizeIterator<Item = &'a Wave>,
    ) {
        if let Some(o) = &self.observer {
            for (w, wave) in waves.enumerate() {
                let id = WaveId {
                    dispatch: self.dispatch,
                    workgroup,
                    workgroup_index,
                    wave: w as u32,
                    index: first + w as u64,
                };
                o.wave_start(id, wave);
            }
        }
    }

    /// The [`WaveId`] of wave `wave` of a workgroup whose first wave had number `first`.
    pub fn id(&self, workgroup: [u32; 3], workgroup_index: u64, wave: u32, first: u64) -> WaveId {
        WaveId {
            dispatch: self.dispatch,
            workgroup,
            workgroup_index,
            wave,
            index: first + u64::from(wave),
        }
    }

    /// Runs `wave` for at most `budget` instructions, counting them; an observed wave runs one
    /// instruction at a time and each is reported with the registers it changed.
    pub fn run<E: WaveEnv + ?Sized>(
        &self,
        id: impl FnOnce() -> WaveId,
        wave: &mut Wave,
        code: &CodeCache,
        env: &mut E,
        budget: u64,
    ) -> Stop {
        let mut retired = 0;
        let stop = self.run_local(id, wave, code, env, budget, false, &mut retired);
        self.count_instructions(retired);
        stop
    }

    /// [`Watch::run`], adding the instructions to `retired` rather than to the shared count: a
    /// compute unit's thread sums them over its time slice and hands the sum over with
    /// [`Watch::count_instructions`] (one atomic add per slice rather than per wave turn).
    /// `released`: the wave's first turn after a barrier, which ends at its first wait for a
    /// load ([`Wave::run_to_memory_wait`]); an observed wave, run instruction by instruction,
    /// ends it after `BARRIER_RELEASE_TURN` (8) instructions instead.
    #[allow(clippy::too_many_arguments)]
    pub fn run_local<E: WaveEnv + ?Sized>(
        &self,
        id: impl FnOnce() -> WaveId,
        wave: &mut Wave,
        code: &CodeCache,
        env: &mut E,
        budget: u64,
        released: bool,
        retired: &mut u64,
    ) -> Stop {
        let before = wave.retired;
        let unobserved = |wave: &mut Wave, env: &mut E| {
            if released {
                wave.run_to_memory_wait(code, env, budget)
            } else {
                wave.run(code, env, budget)
            }
        };
        let stop = match &self.observer {
            Some(o) => {
                let id = id();
                if o.wants_instructions(id) {
                    let budget = if released {
                        budget.min(BARRIER_RELEASE_TURN)
                    } else {
                        budget
                    };
                    run_observed(o.as_ref(), id, wave, code, env, budget)
                } else {
                    unobserved(wave, env)
                }
            }
            None => unobserved(wave, env),
        };
        *retired += wave.retired - before;
        stop
    }

    /// Adds `n` executed instructions to the dispatch's count.
    pub fn count_instructions(&self, n: u64) {
        if n != 0 {
            self.activity.instructions.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A wave ended (`why`: `None` at `s_endpgm`, else what halted it).
    pub fn wave_end(&self, id: impl FnOnce() -> WaveId, wave: &Wave, why: Option<String>) {
        if why.is_some() {
            self.activity.faults.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(o) = &self.observer {
            let instructions = wave.retired;
            let end = match why {
                None => WaveEnd::EndOfProgram { instructions },
                Some(why) => WaveEnd::Halted { instructions, why },
            };
            o.wave_end(id(), &end);
        }
    }

    /// Every wave ended, or the dispatch stopped on a fault.
    pub fn dispatch_end(&self, faulted: bool) {
        if let Some(o) = &self.observer {
            o.dispatch_end(self.dispatch, faulted);
        }
    }
}

fn run_observed<E: WaveEnv + ?Sized>(
    o: &dyn DispatchObserver,
    id: WaveId,
    wave: &mut Wave,
    code: &CodeCache,
    env: &mut E,
    budget: u64,
) -> Stop {
    for _ in 0..budget {
        let pc = wave.pc;
        let text = match code.get(pc) {
            Some(Ok(c)) => c.inst.to_string(),
            _ => String::new(),
        };
        let before = wave.clone();
        let stop = wave.run(code, env, 1);
        if wave.retired != before.retired {
            o.instruction(
                id,
                &InstructionStep {
                    pc,
                    text,
                    changes: changes(&before, wave),
                },
            );
        }
        if stop != Stop::BudgetExhausted {
            return stop;
        }
    }
    Stop::BudgetExhausted
}

/// The registers that differ between `before` and `after` (PC excluded).
pub fn changes(before: &Wave, after: &Wave) -> Vec<RegChange> {
    let mut out = Vec::new();
    for (index, (&old, &new)) in before.sgpr.iter().zip(&after.sgpr).enumerate() {
        if old != new {
            out.push(RegChange::Sgpr { index, old, new });
        }
    }
    if before.scc != after.scc {
        out.push(RegChange::Scc {
            old: before.scc,
            new: after.scc,
        });
    }
    for (index, (old, new)) in before.vgpr.iter().zip(&after.vgpr).enumerate() {
        if old != new {
            out.push(RegChange::Vgpr {
                index,
                old: Box::new(*old),
                new: Box::new(*new),
            });
        }
    }
    for (index, (old, new)) in before.agpr.iter().zip(&after.agpr).enumerate() {
        if old != new {
            out.push(RegChange::Agpr {
                index,
                old: Box::new(*old),
                new: Box::new(*new),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use isa::exec::HostEnv;
    use isa::Target;
    use std::sync::Mutex;

    /// `s_mov_b32 s0, 5`, `v_mov_b32 v1, 7`, `s_cmp_eq_u32 s0, 5`, `s_endpgm` (llvm-mc-15,
    /// gfx900).
    const PROGRAM: [u32; 4] = [0xbe80_0085, 0x7e02_0287, 0xbf06_8500, 0xbf81_0000];

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl DispatchObserver for Log {
        fn wants_instructions(&self, id: WaveId) -> bool {
            id.index == 0
        }
        fn instruction(&self, _id: WaveId, step: &InstructionStep) {
            let changes: Vec<String> = step.changes.iter().map(|c| c.to_string()).collect();
            self.0.lock().unwrap().push(format!(
                "{:#x} {} | {}",
                step.pc,
                step.text,
                changes.join(", ")
            ));
        }
        fn wave_end(&self, id: WaveId, end: &WaveEnd) {
            self.0
                .lock()
                .unwrap()
                .push(format!("end {} {end:?}", id.index));
        }
    }

    fn run(observer: Option<Arc<Log>>) -> (ShaderCounts, Wave) {
        let activity = Arc::new(ShaderActivity::default());
        if let Some(o) = observer {
            activity.set_observer(Some(o));
        }
        let bytes: Vec<u8> = PROGRAM.iter().flat_map(|w| w.to_le_bytes()).collect();
        let code = CodeCache::new(Target::Gfx900, 0x1000, &bytes);
        let watch = activity.watch(|dispatch| DispatchStart {
            dispatch,
            packet: 0,
            kernel_object: 0,
            entry: 0x1000,
            grid: [64, 1, 1],
            workgroup: [64, 1, 1],
            groups: [1, 1, 1],
            waves_per_group: 1,
            vgprs: 4,
            agprs: 0,
            lds_bytes: 0,
        });
        let mut wave = Wave::new(Target::Gfx900, 4, 0);
        wave.pc = 0x1000;
        watch.workgroup([0; 3], 0, 0, std::iter::once(&wave));
        let id = || watch.id([0; 3], 0, 0, 0);
        let stop = watch.run(id, &mut wave, &code, &mut HostEnv::new(0), 100);
        assert_eq!(stop, Stop::EndOfProgram);
        watch.wave_end(id, &wave, None);
        (activity.counts(), wave)
    }

    #[test]
    fn counters_count_the_dispatch_its_waves_and_instructions() {
        let (counts, _) = run(None);
        assert_eq!(
            counts,
            ShaderCounts {
                dispatches: 1,
                workgroups: 1,
                waves: 1,
                instructions: 4,
                faults: 0
            }
        );
    }

    #[test]
    fn an_observed_wave_reports_each_instruction_with_the_registers_it_changed() {
        let log = Arc::new(Log::default());
        let (counts, wave) = run(Some(log.clone()));
        assert_eq!(counts.instructions, 4);
        assert_eq!(wave.sgpr[0], 5);
        let lines = log.0.lock().unwrap().clone();
        assert_eq!(
            lines,
            [
                "0x1000 s_mov_b32 s0, 5 | s0: 0x0 → 0x5",
                "0x1004 v_mov_b32_e32 v1, 7 | v1: lane 0 0x0 → 0x7 (64 lanes changed)",
                "0x1008 s_cmp_eq_u32 s0, 5 | scc: 0 → 1",
                "0x100c s_endpgm | ",
                "end 0 EndOfProgram { instructions: 4 }",
            ]
        );
    }

    #[test]
    fn scalar_names_follow_the_disassembler() {
        assert_eq!(sgpr_name(0), "s0");
        assert_eq!(sgpr_name(sreg::VCC_LO), "vcc_lo");
        assert_eq!(sgpr_name(sreg::EXEC_HI), "exec_hi");
        assert_eq!(sgpr_name(sreg::TTMP0 + 3), "ttmp3");
        assert_eq!(sgpr_name(sreg::M0), "m0");
    }
}
