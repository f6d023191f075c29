//! Stepping a wave through pre-decoded code: operand access, the scalar and vector ALUs,
//! program control, and memory through [`WaveEnv`].
//!
//! This file is the run loop ([`Wave::run`]) and the dispatch of one instruction by its
//! encoding (`execute`); what each encoding does lives in a room of its own:
//!
//! - `operands`: scalar and vector operand reads and writes, VOP3 modifiers, lane loops;
//! - `scalar`: SALU, program control (SOPP) and scalar memory (SMEM);
//! - `vector`: the VALU (VOP1/VOP2/VOP3, compares), `packed` its f16/packed/VOP3P forms,
//!   `sdwa_dpp` its SDWA and DPP forms, `mfma` and `mfma_packed` the matrix ops;
//! - `memory`: MUBUF, FLAT/GLOBAL and vector atomics; `format` (MTBUF and format loads),
//!   `aperture` (FLAT apertures and scratch), `image` (MIMG);
//! - `lds`: DS on the wave's LDS and GWS requests.

use crate::decode::Operand;
use crate::disasm::disasm;
use crate::table::{Enc, Field, Op};

use super::cache::{Cached, CodeCache, SrcType};
use super::env::WaveEnv;
use super::fast::Plan;
use super::fault::{Access, MemFault, Stop, WaveFault};
use super::wave::{sreg, Wave};

mod aperture;
mod format;
pub(crate) use format::mtbuf_format_bits;
mod image;
mod lds;
mod memory;
mod mfma;
mod mfma_packed;
mod operands;
mod packed;
mod scalar;
mod sdwa_dpp;
mod vector;

type R<T> = Result<T, WaveFault>;

/// What one instruction asks of the run loop.
enum Flow {
    Next,
    Jump(u64),
    Stop(Stop),
}

/// The operand printed for `field`, if the instruction has one.
#[inline]
fn opnd(c: &Cached, field: Field) -> Option<Operand> {
    match field {
        Field::A => return c.fields[0],
        Field::B => return c.fields[1],
        Field::C => return c.fields[2],
        Field::D => return c.fields[3],
        Field::E => return c.fields[4],
        _ => {}
    }
    let inst = &c.inst;
    inst.row()
        .slots
        .iter()
        .zip(inst.operands())
        .find(|(s, _)| s.field == field)
        .map(|(_, o)| *o)
}

/// Whether the instruction is an `s_waitcnt` that waits for vector memory: VM_CNT (SIMM16
/// `[3:0]` and `[15:14]` on gfx9) below its maximum 63.
pub(crate) fn waits_for_vector_memory(c: &Cached) -> bool {
    let word = c.inst.words[0];
    let vm_cnt = (word & 0xf) | ((word >> 14) & 0x3) << 4;
    c.inst.op == Op::SWaitcnt && vm_cnt < 0x3f
}

/// Whether the instruction issues vector memory (counted by VM_CNT).
pub(crate) fn issues_vector_memory(c: &Cached) -> bool {
    matches!(
        c.inst.enc,
        Enc::Mubuf | Enc::Mtbuf | Enc::Mimg | Enc::Flat | Enc::Global | Enc::Scratch
    )
}

fn illegal(pc: u64, c: &Cached) -> WaveFault {
    WaveFault::IllegalInstruction {
        pc,
        disassembly: disasm(&c.inst),
    }
}

impl Wave {
    /// Runs at most `budget` instructions of `code` from the current PC and says why it
    /// stopped. Resumable after every [`Stop`] except [`Stop::EndOfProgram`] and
    /// [`Stop::Fault`]; never panics on any instruction stream.
    ///
    /// Code compiled into blocks (see [`CodeCache::with_compiler`]) runs through them, with
    /// the same results; the rest is interpreted.
    pub fn run<E: WaveEnv + ?Sized>(&mut self, code: &CodeCache, env: &mut E, budget: u64) -> Stop {
        match code.blocks() {
            Some(blocks) => self.run_compiled(code, blocks, env, budget),
            None => self.interpret(code, env, budget),
        }
    }

    /// Runs like [`Wave::run`] (at most `budget` instructions), but interpreted and ending
    /// the run early with [`Stop::BudgetExhausted`] at an `s_waitcnt` that would block on
    /// hardware: one that waits for vector memory (VM_CNT below its maximum) after the wave
    /// issued a vector memory instruction in this run. The PC stays on the `s_waitcnt`.
    ///
    /// A compute unit runs the waves a barrier released this way: on hardware they all issue
    /// at once and a load takes hundreds of clocks, so each wave gets as far as its first
    /// wait for a load before any wave goes past one and writes what it loaded.
    pub fn run_to_memory_wait<E: WaveEnv + ?Sized>(
        &mut self,
        code: &CodeCache,
        env: &mut E,
        budget: u64,
    ) -> Stop {
        match code.blocks() {
            Some(blocks) => self.run_compiled_until::<E, true>(code, blocks, env, budget),
            None => self.interpret_until::<E, true>(code, env, budget),
        }
    }

    /// The interpreter: [`Wave::run`] one instruction at a time through the decode cache.
    pub(crate) fn interpret<E: WaveEnv + ?Sized>(
        &mut self,
        code: &CodeCache,
        env: &mut E,
        budget: u64,
    ) -> Stop {
        self.interpret_until::<E, false>(code, env, budget)
    }

    /// [`Wave::interpret`], and with `MEMORY_WAIT` [`Wave::run_to_memory_wait`]'s early end.
    #[inline(always)]
    fn interpret_until<E: WaveEnv + ?Sized, const MEMORY_WAIT: bool>(
        &mut self,
        code: &CodeCache,
        env: &mut E,
        budget: u64,
    ) -> Stop {
        if self.halted() {
            return Stop::Halt;
        }
        let mut loads_issued = false;
        for _ in 0..budget {
            let cached = match code.get(self.pc) {
                Some(Ok(c)) => c,
                Some(Err(e)) => {
                    return Stop::Fault(WaveFault::IllegalInstruction {
                        pc: self.pc,
                        disassembly: e.to_string(),
                    })
                }
                None => {
                    return Stop::Fault(WaveFault::Memory(MemFault {
                        address: self.pc,
                        access: Access::Fetch,
                    }))
                }
            };
            if MEMORY_WAIT {
                if loads_issued && waits_for_vector_memory(cached) {
                    return Stop::BudgetExhausted;
                }
                loads_issued |= issues_vector_memory(cached);
            }
            let next = self.pc.wrapping_add(u64::from(cached.inst.len));
            let indexed;
            let cached = if self.mode.gpr_idx()
                && matches!(
                    cached.inst.enc,
                    Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3
                ) {
                match self.gpr_indexed(cached) {
                    Ok(c) => {
                        indexed = c;
                        &indexed
                    }
                    Err(fault) => return Stop::Fault(fault),
                }
            } else {
                cached
            };
            match &cached.fast {
                Plan::None => {}
                Plan::Vector(f) => {
                    if self.run_fast(f) {
                        self.pc = next;
                        self.retired += 1;
                        continue;
                    }
                }
                Plan::Scalar(f) => {
                    self.run_scalar(f);
                    self.pc = next;
                    self.retired += 1;
                    continue;
                }
                Plan::Branch(cond, offset) => {
                    self.pc = if self.branch_taken(*cond) {
                        next.wrapping_add_signed(i64::from(*offset) * 4)
                    } else {
                        next
                    };
                    self.retired += 1;
                    continue;
                }
            }
            let flow = if usize::from(cached.vgprs.end) > self.vgpr_file_len() {
                self.execute_out_of_range(cached, next, env)
            } else {
                self.execute(cached, next, env)
            };
            if flow.is_ok() {
                self.retired += 1;
            }
            match flow {
                Ok(Flow::Next) => self.pc = next,
                Ok(Flow::Jump(target)) => self.pc = target,
                Ok(Flow::Stop(stop)) => return stop,
                Err(fault) => return Stop::Fault(fault),
            }
        }
        Stop::BudgetExhausted
    }

    /// A VALU instruction as VGPR index mode makes it: M0`[7:0]` added to the VGPR operands
    /// M0`[15:12]` enables (SRC0, SRC1, SRC2, VDST), run by the general interpreter.
    fn gpr_indexed(&self, c: &Cached) -> R<Cached> {
        let m0 = self.m0();
        let (index, enabled) = ((m0 & 0xff) as u8, (m0 >> 12) & 0xf);
        let mut c = c.clone();
        c.fast = Plan::None;
        for (bit, field) in [Field::A, Field::B, Field::C, Field::D]
            .into_iter()
            .enumerate()
        {
            if (enabled >> bit) & 1 == 0 {
                continue;
            }
            let moved = |op: &mut Operand| -> R<()> {
                if let Operand::Vgpr { first, .. } = op {
                    *first = first
                        .checked_add(index)
                        .ok_or(WaveFault::RegisterOutOfRange {
                            file: 'v',
                            index: u32::from(*first) + u32::from(index),
                        })?;
                }
                Ok(())
            };
            if let Some(op) = c.fields[bit].as_mut() {
                moved(op)?;
            }
            let slots = c.inst.row().slots;
            let n = usize::from(c.inst.n_operands);
            for (slot, op) in slots.iter().zip(c.inst.operands[..n].iter_mut()) {
                if slot.field == field {
                    moved(op)?;
                }
            }
        }
        Ok(c)
    }

    /// `s_set_gpr_idx_on`, `_off`, `_idx` and `_mode`: VGPR index mode on (index from
    /// SSRC0`[7:0]` into M0`[7:0]`, the operand mask from the immediate into M0`[15:12]`) or
    /// off, a new index, a new mask.
    fn set_gpr_idx(&mut self, c: &Cached) {
        let [w0, _] = c.inst.words;
        let src =
            || opnd(c, Field::A).map_or(0, |o| self.sread(o, SrcType::Int, false) as u32) & 0xff;
        let m0 = self.m0();
        let (m0, on) = match c.inst.op {
            Op::SSetGprIdxOn => ((m0 & !0xf0ff) | src() | ((w0 >> 8) & 0xf) << 12, Some(true)),
            Op::SSetGprIdxIdx => ((m0 & !0xff) | src(), None),
            Op::SSetGprIdxMode => ((m0 & !0xf000) | (w0 & 0xf) << 12, None),
            _ => (m0, Some(false)),
        };
        self.sgpr[sreg::M0] = m0;
        match on {
            Some(true) => self.mode.0 |= super::wave::Mode::GPR_IDX_EN,
            Some(false) => self.mode.0 &= !super::wave::Mode::GPR_IDX_EN,
            None => {}
        }
    }

    /// An instruction that names a VGPR past the wave's allocation, under the ISA guides'
    /// out-of-range rules (`vgpr_range`): ignored when its destination is out of range, run
    /// with VGPR0 for each source that is (the accessor's rule); a fault in a strict world.
    fn execute_out_of_range<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        next: u64,
        env: &mut E,
    ) -> R<Flow> {
        let file = self.vgpr_file_len();
        let dest_out = c
            .vgprs
            .dest
            .filter(|&(first, count)| usize::from(first + count) > file);
        let index = match dest_out {
            Some((first, count)) => (first..first + count)
                .find(|&r| usize::from(r) >= file)
                .unwrap_or(first),
            None => c.vgprs.end - 1,
        };
        if env.vgpr_strict() {
            return Err(WaveFault::RegisterOutOfRange {
                file: 'v',
                index: u32::from(index),
            });
        }
        env.vgpr_out_of_range(u32::from(index), dest_out.is_some());
        if dest_out.is_some() {
            return Ok(Flow::Next);
        }
        self.execute(c, next, env)
    }

    fn execute<E: WaveEnv + ?Sized>(&mut self, c: &Cached, next: u64, env: &mut E) -> R<Flow> {
        if matches!(
            c.inst.op,
            Op::SSetGprIdxOn | Op::SSetGprIdxOff | Op::SSetGprIdxIdx | Op::SSetGprIdxMode
        ) {
            self.set_gpr_idx(c);
            return Ok(Flow::Next);
        }
        match c.inst.enc {
            Enc::Sop2 | Enc::Sop1 | Enc::Sopc | Enc::Sopk => self.salu(c, next),
            Enc::Sopp => self.sopp(c, next, env),
            Enc::Smem => self.smem(c, env).map(|()| Flow::Next),
            Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 => self.valu(c).map(|()| Flow::Next),
            Enc::Ds if c.inst.row().flags & crate::table::flag::GWS != 0 => self.gws(c, next),
            Enc::Ds => self.ds(c, env).map(|()| Flow::Next),
            Enc::Mubuf => self.mubuf(c, env).map(|()| Flow::Next),
            Enc::Global | Enc::Flat => self.flat(c, env).map(|()| Flow::Next),
            Enc::Scratch => self.scratch(c, env).map(|()| Flow::Next),
            Enc::Mtbuf => self.mtbuf(c, env).map(|()| Flow::Next),
            Enc::Mimg => self.mimg(c, env).map(|()| Flow::Next),
            // exports go to the graphics pipeline, which a compute model does not have
            Enc::Exp => Err(illegal(self.pc, c)),
        }
    }
}
