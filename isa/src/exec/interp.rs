//! Stepping a wave through pre-decoded code: operand access, the scalar and vector ALUs,
//! program control, and memory through [`WaveEnv`].

use crate::decode::{Operand, SpecialReg};
use crate::disasm::disasm;
use crate::table::{Enc, Field, Op};

use super::cache::{Cached, CmpType, CodeCache, MemKind, SrcType, D16};
use super::env::{AtomicOp, AtomicRequest, WaveEnv};
use super::fast::Plan;
use super::fault::{Access, MemFault, Stop, WaveFault};
use super::float as fp;
use super::int;
use super::lanes;
use super::media;
use super::mfma::MfmaF32;
use super::wave::{sreg, write_masked, HwRegField, Lanes, Wave, WAVE_SIZE};

mod aperture;
mod format;
pub(crate) use format::mtbuf_format_bits;
mod image;
mod mfma_packed;
mod packed;

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

/// A 1- or 2-byte signed load's value (zero-extended by [`WaveEnv::load`]) sign-extended to
/// 32 bits.
fn sign_extend_load(v: u32, bytes: u32) -> u32 {
    if bytes == 1 {
        v as u8 as i8 as i32 as u32
    } else {
        v as u16 as i16 as i32 as u32
    }
}

/// Where `n` bytes at LDS byte `a` lie in an LDS of `len` bytes: `Some(a)` inside the
/// allocation. Outside it the hardware drops the write and reads 0 (the ISA guides'
/// out-of-range rules): `None`, and the first such offset is kept in `dropped` for
/// [`WaveEnv::lds_out_of_range`]; a strict world ([`WaveEnv::lds_strict`]) stops the wave.
fn lds_place(
    a: u32,
    n: u32,
    len: usize,
    strict: bool,
    dropped: &mut Option<u32>,
) -> R<Option<usize>> {
    if u64::from(a) + u64::from(n) <= len as u64 {
        Ok(Some(a as usize))
    } else if strict {
        Err(WaveFault::LdsOutOfRange { offset: a })
    } else {
        dropped.get_or_insert(a);
        Ok(None)
    }
}

fn illegal(pc: u64, c: &Cached) -> WaveFault {
    WaveFault::IllegalInstruction {
        pc,
        disassembly: disasm(&c.inst),
    }
}

/// Inline float constants (source codes 240–248) as f16, f32 and f64 bit patterns.
pub(crate) fn float_const(code: u8, ty: SrcType, wide: bool) -> u64 {
    let i = usize::from(code.saturating_sub(240)).min(8);
    const F32: [u32; 9] = [
        0x3f00_0000,
        0xbf00_0000,
        0x3f80_0000,
        0xbf80_0000,
        0x4000_0000,
        0xc000_0000,
        0x4080_0000,
        0xc080_0000,
        0x3e22_f983,
    ];
    const F64: [u64; 9] = [
        0x3fe0_0000_0000_0000,
        0xbfe0_0000_0000_0000,
        0x3ff0_0000_0000_0000,
        0xbff0_0000_0000_0000,
        0x4000_0000_0000_0000,
        0xc000_0000_0000_0000,
        0x4010_0000_0000_0000,
        0xc010_0000_0000_0000,
        0x3fc4_5f30_6dc9_c882,
    ];
    const F16: [u16; 9] = [
        0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118,
    ];
    if wide {
        F64[i]
    } else if ty == SrcType::F16 {
        u64::from(F16[i])
    } else {
        u64::from(F32[i])
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

    /// The interpreter: [`Wave::run`] one instruction at a time through the decode cache.
    pub(crate) fn interpret<E: WaveEnv + ?Sized>(
        &mut self,
        code: &CodeCache,
        env: &mut E,
        budget: u64,
    ) -> Stop {
        if self.halted() {
            return Stop::Halt;
        }
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

    // ------------------------------------------------------------ operands

    fn sindex(&self, op: Operand) -> Option<usize> {
        Some(match op {
            Operand::Sgpr { first, .. } => usize::from(first),
            Operand::Ttmp { first, .. } => sreg::TTMP0 + usize::from(first),
            Operand::Special { reg, hi, .. } => {
                let base = match reg {
                    SpecialReg::FlatScratch => sreg::FLAT_SCRATCH_LO,
                    SpecialReg::XnackMask => sreg::XNACK_MASK_LO,
                    SpecialReg::Vcc => sreg::VCC_LO,
                    SpecialReg::M0 => sreg::M0,
                    SpecialReg::Exec => sreg::EXEC_LO,
                    _ => return None,
                };
                base + usize::from(hi)
            }
            _ => return None,
        })
    }

    /// Reads a scalar operand (32 or 64 bits).
    fn sread(&self, op: Operand, ty: SrcType, wide: bool) -> u64 {
        if let Some(i) = self.sindex(op) {
            return if wide {
                self.sgpr64(i)
            } else {
                u64::from(self.sgpr[i])
            };
        }
        let v = match op {
            Operand::IntConst(i) => i64::from(i) as u64,
            Operand::FloatConst(code) => float_const(code, ty, wide),
            Operand::Literal(l) => {
                if wide && ty == SrcType::F64 {
                    u64::from(l) << 32
                } else {
                    u64::from(l)
                }
            }
            Operand::Imm(v) => u64::from(v),
            Operand::Special { reg, .. } => match reg {
                SpecialReg::SharedBase => u64::from(self.sh_mem_bases >> 16) << 48,
                SpecialReg::PrivateBase => u64::from(self.sh_mem_bases & 0xffff) << 48,
                SpecialReg::SharedLimit => (u64::from(self.sh_mem_bases >> 16) << 48) | 0xffff_ffff,
                SpecialReg::PrivateLimit => {
                    (u64::from(self.sh_mem_bases & 0xffff) << 48) | 0xffff_ffff
                }
                SpecialReg::Vccz => u64::from(self.vcc() == 0),
                SpecialReg::Execz => u64::from(self.exec() == 0),
                SpecialReg::Scc => u64::from(self.scc),
                _ => 0,
            },
            _ => 0,
        };
        if !wide {
            if let Operand::Special {
                reg: SpecialReg::SharedBase | SpecialReg::PrivateBase,
                ..
            } = op
            {
                return v >> 32;
            }
            return v & 0xffff_ffff;
        }
        v
    }

    fn swrite(&mut self, op: Operand, value: u64, wide: bool) {
        if let Some(i) = self.sindex(op) {
            if wide {
                self.set_sgpr64(i, value);
            } else {
                self.sgpr[i] = value as u32;
            }
        }
    }

    fn vread32(&self, op: Operand, ty: SrcType) -> R<Lanes> {
        match op {
            Operand::Vgpr { first, .. } => Ok(*self.v(usize::from(first))?),
            Operand::Agpr { first, .. } => Ok(*self.a(usize::from(first))?),
            _ => Ok([self.sread(op, ty, false) as u32; WAVE_SIZE]),
        }
    }

    fn vread64(&self, op: Operand, ty: SrcType) -> R<[u64; WAVE_SIZE]> {
        let pair = |lo: &Lanes, hi: &Lanes| {
            let mut out = [0u64; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                out[l] = u64::from(lo[l]) | (u64::from(hi[l]) << 32);
            }
            out
        };
        match op {
            Operand::Vgpr { first, .. } => {
                let f = usize::from(first);
                Ok(pair(self.v(f)?, self.v(f + 1)?))
            }
            Operand::Agpr { first, .. } => {
                let f = usize::from(first);
                Ok(pair(self.a(f)?, self.a(f + 1)?))
            }
            _ => Ok([self.sread(op, ty, true); WAVE_SIZE]),
        }
    }

    fn vwrite32(&mut self, op: Operand, value: &Lanes, mask: u64) -> R<()> {
        let dst = match op {
            Operand::Vgpr { first, .. } => self.v_mut(usize::from(first))?,
            Operand::Agpr { first, .. } => self.a_mut(usize::from(first))?,
            _ => return Ok(()),
        };
        write_masked(dst, value, mask);
        Ok(())
    }

    fn vwrite64(&mut self, op: Operand, value: &[u64; WAVE_SIZE], mask: u64) -> R<()> {
        let mut lo = [0u32; WAVE_SIZE];
        let mut hi = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            lo[l] = value[l] as u32;
            hi[l] = (value[l] >> 32) as u32;
        }
        let (first, agpr) = match op {
            Operand::Vgpr { first, .. } => (usize::from(first), false),
            Operand::Agpr { first, .. } => (usize::from(first), true),
            _ => return Ok(()),
        };
        if agpr {
            write_masked(self.a_mut(first)?, &lo, mask);
            write_masked(self.a_mut(first + 1)?, &hi, mask);
        } else {
            write_masked(self.v_mut(first)?, &lo, mask);
            write_masked(self.v_mut(first + 1)?, &hi, mask);
        }
        Ok(())
    }

    // ------------------------------------------------------------ scalar ALU

    fn salu(&mut self, c: &Cached, next: u64) -> R<Flow> {
        let op = c.inst.op;
        let t = SrcType::Int;
        let a_op = opnd(c, Field::A);
        let b_op = opnd(c, Field::B);
        let d_op = opnd(c, Field::D);
        let k = opnd(c, Field::K).map_or(0, |o| self.sread(o, t, false) as u32);
        let a32 = a_op.map_or(0, |o| self.sread(o, t, false) as u32);
        let b32 = b_op.map_or(0, |o| self.sread(o, t, false) as u32);
        let a64 = a_op.map_or(0, |o| self.sread(o, t, true));
        let b64 = b_op.map_or(0, |o| self.sread(o, t, true));
        let d32 = d_op.map_or(0, |o| self.sread(o, t, false) as u32);
        let simm = k as u16 as i16 as i32 as u32;
        let scc = self.scc;
        // (result, wide, new scc)
        let (res, wide, new_scc): (u64, bool, Option<bool>) = match op {
            Op::SAddU32 => {
                let (v, c) = int::add_co(a32, b32);
                (v.into(), false, Some(c))
            }
            Op::SSubU32 => {
                let (v, c) = int::sub_co(a32, b32);
                (v.into(), false, Some(c))
            }
            Op::SAddI32 => {
                let (v, o) = int::add_i32(a32, b32);
                (v.into(), false, Some(o))
            }
            Op::SSubI32 => {
                let (v, o) = int::sub_i32(a32, b32);
                (v.into(), false, Some(o))
            }
            Op::SAddcU32 => {
                let (v, c) = int::addc(a32, b32, scc);
                (v.into(), false, Some(c))
            }
            Op::SSubbU32 => {
                let (v, c) = int::subb(a32, b32, scc);
                (v.into(), false, Some(c))
            }
            Op::SMinI32 => (
                (a32 as i32).min(b32 as i32) as u32 as u64,
                false,
                Some((a32 as i32) < (b32 as i32)),
            ),
            Op::SMinU32 => (a32.min(b32).into(), false, Some(a32 < b32)),
            Op::SMaxI32 => (
                (a32 as i32).max(b32 as i32) as u32 as u64,
                false,
                Some((a32 as i32) > (b32 as i32)),
            ),
            Op::SMaxU32 => (a32.max(b32).into(), false, Some(a32 > b32)),
            Op::SCselectB32 => (if scc { a32 } else { b32 }.into(), false, None),
            Op::SCselectB64 => (if scc { a64 } else { b64 }, true, None),
            Op::SAndB32 => nz32(a32 & b32),
            Op::SOrB32 => nz32(a32 | b32),
            Op::SXorB32 => nz32(a32 ^ b32),
            Op::SAndn2B32 => nz32(a32 & !b32),
            Op::SOrn2B32 => nz32(a32 | !b32),
            Op::SNandB32 => nz32(!(a32 & b32)),
            Op::SNorB32 => nz32(!(a32 | b32)),
            Op::SXnorB32 => nz32(!(a32 ^ b32)),
            Op::SAndB64 => nz64(a64 & b64),
            Op::SOrB64 => nz64(a64 | b64),
            Op::SXorB64 => nz64(a64 ^ b64),
            Op::SAndn2B64 => nz64(a64 & !b64),
            Op::SOrn2B64 => nz64(a64 | !b64),
            Op::SNandB64 => nz64(!(a64 & b64)),
            Op::SNorB64 => nz64(!(a64 | b64)),
            Op::SXnorB64 => nz64(!(a64 ^ b64)),
            Op::SLshlB32 => nz32(int::shl32(a32, b32)),
            Op::SLshrB32 => nz32(int::lshr32(a32, b32)),
            Op::SAshrI32 => nz32(int::ashr32(a32, b32)),
            Op::SLshlB64 => nz64(int::shl64(a64, b32)),
            Op::SLshrB64 => nz64(int::lshr64(a64, b32)),
            Op::SAshrI64 => nz64(int::ashr64(a64, b32)),
            Op::SBfmB32 => (int::bfm(a32, b32).into(), false, None),
            Op::SBfmB64 => {
                let w = a32 & 63;
                let m = if w == 0 { 0 } else { u64::MAX >> (64 - w) };
                (m << (b32 & 63), true, None)
            }
            Op::SMulI32 => (
                (a32 as i32).wrapping_mul(b32 as i32) as u32 as u64,
                false,
                None,
            ),
            Op::SMulHiU32 => (int::mul_hi_u32(a32, b32).into(), false, None),
            Op::SMulHiI32 => (int::mul_hi_i32(a32, b32).into(), false, None),
            Op::SBfeU32 => nz32(int::s_bfe_u32(a32, b32)),
            Op::SBfeI32 => nz32(int::s_bfe_i32(a32, b32)),
            Op::SBfeU64 => nz64(int::s_bfe_u64(a64, b32)),
            Op::SBfeI64 => nz64(int::s_bfe_i64(a64, b32)),
            Op::SAbsdiffI32 => nz32((a32 as i32).wrapping_sub(b32 as i32).unsigned_abs()),
            Op::SLshl1AddU32 | Op::SLshl2AddU32 | Op::SLshl3AddU32 | Op::SLshl4AddU32 => {
                let n = match op {
                    Op::SLshl1AddU32 => 1,
                    Op::SLshl2AddU32 => 2,
                    Op::SLshl3AddU32 => 3,
                    _ => 4,
                };
                let wide = (u64::from(a32) << n) + u64::from(b32);
                (wide & 0xffff_ffff, false, Some(wide >> 32 != 0))
            }
            Op::SPackLlB32B16 => (((a32 & 0xffff) | (b32 << 16)).into(), false, None),
            Op::SPackLhB32B16 => (((a32 & 0xffff) | (b32 & 0xffff_0000)).into(), false, None),
            Op::SPackHhB32B16 => (((a32 >> 16) | (b32 & 0xffff_0000)).into(), false, None),
            // SOP1
            Op::SMovB32 => (a32.into(), false, None),
            Op::SMovB64 => (a64, true, None),
            Op::SCmovB32 => (if scc { a32 } else { d32 }.into(), false, None),
            Op::SCmovB64 => {
                let d64 = d_op.map_or(0, |o| self.sread(o, t, true));
                (if scc { a64 } else { d64 }, true, None)
            }
            Op::SNotB32 => nz32(!a32),
            Op::SNotB64 => nz64(!a64),
            Op::SWqmB64 => nz64(int::wqm64(a64)),
            Op::SBrevB32 => (int::brev32(a32).into(), false, None),
            Op::SBrevB64 => (a64.reverse_bits(), true, None),
            Op::SBcnt0I32B32 => nz32((!a32).count_ones()),
            Op::SBcnt0I32B64 => nz32((!a64).count_ones()),
            Op::SBcnt1I32B32 => nz32(a32.count_ones()),
            Op::SBcnt1I32B64 => nz32(a64.count_ones()),
            Op::SFf0I32B32 => (int::ffbl(!a32).into(), false, None),
            Op::SFf1I32B32 => (int::ffbl(a32).into(), false, None),
            Op::SFf1I32B64 => (
                if a64 == 0 {
                    u32::MAX
                } else {
                    a64.trailing_zeros()
                }
                .into(),
                false,
                None,
            ),
            Op::SFf0I32B64 => (
                if !a64 == 0 {
                    u32::MAX
                } else {
                    (!a64).trailing_zeros()
                }
                .into(),
                false,
                None,
            ),
            Op::SFlbitI32B32 => (int::ffbh_u32(a32).into(), false, None),
            Op::SFlbitI32B64 => (
                if a64 == 0 {
                    u32::MAX
                } else {
                    a64.leading_zeros()
                }
                .into(),
                false,
                None,
            ),
            Op::SFlbitI32 => (int::ffbh_i32(a32).into(), false, None),
            Op::SSextI32I8 => (a32 as i8 as i32 as u32 as u64, false, None),
            Op::SSextI32I16 => (a32 as i16 as i32 as u32 as u64, false, None),
            Op::SBitset0B32 => ((d32 & !(1 << (a32 & 31))).into(), false, None),
            Op::SBitset1B32 => ((d32 | (1 << (a32 & 31))).into(), false, None),
            Op::SBitset0B64 | Op::SBitset1B64 => {
                let d64 = d_op.map_or(0, |o| self.sread(o, t, true));
                let bit = 1u64 << (a32 & 63);
                (
                    if op == Op::SBitset1B64 {
                        d64 | bit
                    } else {
                        d64 & !bit
                    },
                    true,
                    None,
                )
            }
            Op::SQuadmaskB64 => nz64(int::quadmask64(a64)),
            Op::SAbsI32 => nz32((a32 as i32).unsigned_abs()),
            Op::SGetpcB64 => (next, true, None),
            Op::SSetpcB64 => return Ok(Flow::Jump(a64)),
            // Return from the trap handler: leave privileged mode, jump to the saved PC.
            // A handler that set STATUS.HALT returns into a halted wave.
            Op::SRfeB64 => {
                self.status &= !super::wave::status::PRIV;
                let target = a64 & 0xffff_ffff_ffff;
                if self.halted() {
                    self.pc = target;
                    return Ok(Flow::Stop(Stop::Halt));
                }
                return Ok(Flow::Jump(target));
            }
            Op::SSwappcB64 => {
                if let Some(d) = d_op {
                    self.swrite(d, next, true);
                }
                return Ok(Flow::Jump(a64));
            }
            Op::SAndSaveexecB64
            | Op::SOrSaveexecB64
            | Op::SXorSaveexecB64
            | Op::SAndn2SaveexecB64
            | Op::SOrn2SaveexecB64
            | Op::SNandSaveexecB64
            | Op::SNorSaveexecB64
            | Op::SXnorSaveexecB64
            | Op::SAndn1SaveexecB64
            | Op::SOrn1SaveexecB64 => {
                let exec = self.exec();
                let new = match op {
                    Op::SAndSaveexecB64 => a64 & exec,
                    Op::SOrSaveexecB64 => a64 | exec,
                    Op::SXorSaveexecB64 => a64 ^ exec,
                    Op::SAndn2SaveexecB64 => a64 & !exec,
                    Op::SOrn2SaveexecB64 => a64 | !exec,
                    Op::SNandSaveexecB64 => !(a64 & exec),
                    Op::SNorSaveexecB64 => !(a64 | exec),
                    Op::SXnorSaveexecB64 => !(a64 ^ exec),
                    Op::SAndn1SaveexecB64 => !a64 & exec,
                    _ => !a64 | exec,
                };
                if let Some(d) = d_op {
                    self.swrite(d, exec, true);
                }
                self.set_exec(new);
                self.scc = new != 0;
                return Ok(Flow::Next);
            }
            // SOPC
            Op::SCmpEqI32 | Op::SCmpEqU32 => return self.set_scc(a32 == b32),
            Op::SCmpLgI32 | Op::SCmpLgU32 => return self.set_scc(a32 != b32),
            Op::SCmpGtI32 => return self.set_scc((a32 as i32) > (b32 as i32)),
            Op::SCmpGeI32 => return self.set_scc((a32 as i32) >= (b32 as i32)),
            Op::SCmpLtI32 => return self.set_scc((a32 as i32) < (b32 as i32)),
            Op::SCmpLeI32 => return self.set_scc((a32 as i32) <= (b32 as i32)),
            Op::SCmpGtU32 => return self.set_scc(a32 > b32),
            Op::SCmpGeU32 => return self.set_scc(a32 >= b32),
            Op::SCmpLtU32 => return self.set_scc(a32 < b32),
            Op::SCmpLeU32 => return self.set_scc(a32 <= b32),
            Op::SCmpEqU64 => return self.set_scc(a64 == b64),
            Op::SCmpLgU64 => return self.set_scc(a64 != b64),
            Op::SBitcmp0B32 => return self.set_scc((a32 >> (b32 & 31)) & 1 == 0),
            Op::SBitcmp1B32 => return self.set_scc((a32 >> (b32 & 31)) & 1 == 1),
            Op::SBitcmp0B64 => return self.set_scc((a64 >> (b32 & 63)) & 1 == 0),
            Op::SBitcmp1B64 => return self.set_scc((a64 >> (b32 & 63)) & 1 == 1),
            // SOPK: D is the first source of compares
            Op::SMovkI32 => (simm.into(), false, None),
            Op::SCmovkI32 => (if scc { simm } else { d32 }.into(), false, None),
            Op::SCmpkEqI32 => return self.set_scc(d32 == simm),
            Op::SCmpkLgI32 => return self.set_scc(d32 != simm),
            Op::SCmpkGtI32 => return self.set_scc((d32 as i32) > (simm as i32)),
            Op::SCmpkGeI32 => return self.set_scc((d32 as i32) >= (simm as i32)),
            Op::SCmpkLtI32 => return self.set_scc((d32 as i32) < (simm as i32)),
            Op::SCmpkLeI32 => return self.set_scc((d32 as i32) <= (simm as i32)),
            Op::SCmpkEqU32 => return self.set_scc(d32 == k & 0xffff),
            Op::SCmpkLgU32 => return self.set_scc(d32 != k & 0xffff),
            Op::SCmpkGtU32 => return self.set_scc(d32 > k & 0xffff),
            Op::SCmpkGeU32 => return self.set_scc(d32 >= k & 0xffff),
            Op::SCmpkLtU32 => return self.set_scc(d32 < k & 0xffff),
            Op::SCmpkLeU32 => return self.set_scc(d32 <= k & 0xffff),
            Op::SAddkI32 => {
                let (v, o) = int::add_i32(d32, simm);
                (v.into(), false, Some(o))
            }
            Op::SMulkI32 => (
                (d32 as i32).wrapping_mul(simm as i32) as u32 as u64,
                false,
                None,
            ),
            Op::SGetregB32 => (
                self.getreg(HwRegField::from_simm16(k as u16))?.into(),
                false,
                None,
            ),
            Op::SSetregB32 => {
                self.setreg(HwRegField::from_simm16(k as u16), d32)?;
                return Ok(Flow::Next);
            }
            Op::SSetregImm32B32 => {
                // the value is the 32-bit literal that follows the instruction
                let value = match opnd(c, Field::O) {
                    Some(Operand::Literal(v)) => v,
                    _ => return Err(illegal(self.pc, c)),
                };
                self.setreg(HwRegField::from_simm16(k as u16), value)?;
                return Ok(Flow::Next);
            }
            _ => return Err(illegal(self.pc, c)),
        };
        if let Some(d) = d_op {
            self.swrite(d, res, wide);
        }
        if let Some(s) = new_scc {
            self.scc = s;
        }
        Ok(Flow::Next)
    }

    fn set_scc(&mut self, v: bool) -> R<Flow> {
        self.scc = v;
        Ok(Flow::Next)
    }

    // ------------------------------------------------------------ program control

    fn sopp<E: WaveEnv + ?Sized>(&mut self, c: &Cached, next: u64, env: &mut E) -> R<Flow> {
        let simm = c.inst.words[0] & 0xffff;
        let target = next.wrapping_add_signed(i64::from(simm as u16 as i16) * 4);
        let branch = |taken: bool| {
            Ok(if taken {
                Flow::Jump(target)
            } else {
                Flow::Next
            })
        };
        match c.inst.op {
            Op::SNop | Op::SWaitcnt | Op::SIcacheInv | Op::SIncperflevel | Op::SDecperflevel => {
                Ok(Flow::Next)
            }
            Op::STtracedata | Op::SSetkill | Op::SWakeup => Ok(Flow::Next),
            Op::SSetprio => {
                self.priority = (simm & 3) as u8;
                Ok(Flow::Next)
            }
            // s_sethalt: STATUS.HALT = SIMM16[0]; inside the trap handler it takes effect when
            // the handler returns.
            Op::SSethalt => {
                use super::wave::status::HALT;
                self.status = (self.status & !HALT) | if simm & 1 != 0 { HALT } else { 0 };
                if self.halted() {
                    self.pc = next;
                    return Ok(Flow::Stop(Stop::Halt));
                }
                Ok(Flow::Next)
            }
            Op::SEndpgm => Ok(Flow::Stop(Stop::EndOfProgram)),
            Op::SBranch => branch(true),
            Op::SCbranchScc0 => branch(!self.scc),
            Op::SCbranchScc1 => branch(self.scc),
            Op::SCbranchVccz => branch(self.vcc() == 0),
            Op::SCbranchVccnz => branch(self.vcc() != 0),
            Op::SCbranchExecz => branch(self.exec() == 0),
            Op::SCbranchExecnz => branch(self.exec() != 0),
            Op::SBarrier => {
                self.pc = next;
                Ok(Flow::Stop(Stop::Barrier))
            }
            Op::SSleep => {
                self.pc = next;
                Ok(Flow::Stop(Stop::Sleep {
                    cycles: simm & 0x7f,
                }))
            }
            Op::SSendmsg | Op::SSendmsghalt => {
                env.send_message(simm as u16, self.m0());
                Ok(Flow::Next)
            }
            Op::STrap => {
                let id = (simm & 0xff) as u8;
                // {ttmp1, ttmp0} = {trap id [23:16], PC[47:0]}; PC is the s_trap's own address
                self.sgpr[sreg::TTMP0] = self.pc as u32;
                self.sgpr[sreg::TTMP0 + 1] =
                    ((self.pc >> 32) as u32 & 0xffff) | (u32::from(id) << 16);
                self.pc = next;
                Ok(Flow::Stop(Stop::Trap { id }))
            }
            _ => Err(illegal(self.pc, c)),
        }
    }

    // ------------------------------------------------------------ scalar memory

    fn smem<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let w0 = c.inst.words[0];
        let op = c.inst.op;
        let sdata = ((w0 >> 6) & 0x7f) as usize;
        match op {
            Op::SMemtime | Op::SMemrealtime => {
                let t = if op == Op::SMemtime {
                    env.shader_clock()
                } else {
                    env.real_time()
                };
                self.set_sgpr64(sdata, t);
                return Ok(());
            }
            // the functional model has no scalar data cache to invalidate or write back
            Op::SDcacheInv | Op::SDcacheWb | Op::SDcacheInvVol | Op::SDcacheWbVol => return Ok(()),
            _ => {}
        }
        let address = self.smem_address(c);
        match c.mem {
            MemKind::Store { bytes, .. } => {
                let mut data = [0u32; 4];
                for (i, d) in data[..bytes as usize / 4].iter_mut().enumerate() {
                    *d = self.sgpr.get(sdata + i).copied().unwrap_or(0);
                }
                return Ok(env.store_scalar(address, &data[..bytes as usize / 4])?);
            }
            MemKind::Atomic { op: aop, wide } => {
                return self.smem_atomic(c, env, address, aop, wide)
            }
            _ => {}
        }
        let dwords = match op {
            Op::SLoadDword | Op::SBufferLoadDword => 1,
            Op::SLoadDwordx2 | Op::SBufferLoadDwordx2 => 2,
            Op::SLoadDwordx4 | Op::SBufferLoadDwordx4 => 4,
            Op::SLoadDwordx8 | Op::SBufferLoadDwordx8 => 8,
            Op::SLoadDwordx16 | Op::SBufferLoadDwordx16 => 16,
            _ => return Err(illegal(self.pc, c)),
        };
        let mut buf = [0u32; 16];
        env.load_scalar(address, &mut buf[..dwords])?;
        for (i, v) in buf[..dwords].iter().enumerate() {
            if let Some(r) = self.sgpr.get_mut(sdata + i) {
                *r = *v;
            }
        }
        Ok(())
    }

    /// The dword-aligned byte address of a scalar memory access: SBASE (a 64-bit address, or
    /// for `s_buffer_*` the base in bits 47:0 of the buffer resource) plus the offset: IMM = 1
    /// the signed 21-bit immediate (llvm-mc encodes `-4` as 0x1ffffc on gfx9), IMM = 0 the
    /// SGPR the offset field names; with SOE also the SGPR in SOFFSET (w1[31:25]).
    fn smem_address(&self, c: &Cached) -> u64 {
        let [w0, w1] = c.inst.words;
        let sbase = ((w0 & 0x3f) << 1) as usize;
        let imm = (w0 >> 17) & 1 != 0;
        let soe = (w0 >> 14) & 1 != 0;
        let sgpr = |i: u32| self.sgpr.get(i as usize).copied().unwrap_or(0);
        let mut offset = if imm {
            (((w1 << 11) as i32) >> 11) as i64 as u64
        } else if soe {
            0
        } else {
            u64::from(sgpr(w1 & 0x7f))
        };
        if soe {
            offset = offset.wrapping_add(u64::from(sgpr(w1 >> 25)));
        }
        let buffer = c.inst.op.mnemonic().starts_with("s_buffer_");
        let base = if buffer {
            self.sgpr64(sbase) & 0xffff_ffff_ffff
        } else {
            self.sgpr64(sbase)
        };
        base.wrapping_add(offset) & !3
    }

    /// `s_atomic_*` / `s_buffer_atomic_*`: one read-modify-write at `address` with the data
    /// in SDATA (`cmpswap`: the new value in the first half of SDATA, the compare value in
    /// the second); with GLC the pre-op memory value is written back to SDATA[0] (SDATA[0:1]
    /// for `_x2`).
    fn smem_atomic<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        address: u64,
        op: AtomicOp,
        wide: bool,
    ) -> R<()> {
        let w0 = c.inst.words[0];
        let sdata = ((w0 >> 6) & 0x7f) as usize;
        let glc = (w0 >> 16) & 1 != 0;
        let n = if wide { 2 } else { 1 };
        let value = |w: &Wave, r: usize| -> u64 {
            let lo = w.sgpr.get(r).copied().unwrap_or(0);
            let hi = if wide {
                w.sgpr.get(r + 1).copied().unwrap_or(0)
            } else {
                0
            };
            u64::from(lo) | (u64::from(hi) << 32)
        };
        let mut addresses = [0u64; WAVE_SIZE];
        let mut src = [0u64; WAVE_SIZE];
        let mut cmp = [0u64; WAVE_SIZE];
        addresses[0] = address;
        src[0] = value(self, sdata);
        if op == AtomicOp::CmpSwap {
            cmp[0] = value(self, sdata + n);
        }
        let mut old = [0u64; WAVE_SIZE];
        env.atomic(
            &AtomicRequest {
                op,
                wide,
                exec: 1,
                addresses: &addresses,
                src: &src,
                cmp: &cmp,
            },
            &mut old,
        )?;
        if glc {
            if wide {
                self.set_sgpr64(sdata, old[0]);
            } else if let Some(r) = self.sgpr.get_mut(sdata) {
                *r = old[0] as u32;
            }
        }
        Ok(())
    }
}

fn nz32(v: u32) -> (u64, bool, Option<bool>) {
    (u64::from(v), false, Some(v != 0))
}

fn nz64(v: u64) -> (u64, bool, Option<bool>) {
    (v, true, Some(v != 0))
}

/// VOP3 modifier bits of an instruction.
#[derive(Clone, Copy, Default)]
struct Mods {
    abs: u32,
    neg: u32,
    clamp: bool,
    omod: u8,
}

fn mods_of(c: &Cached) -> Mods {
    if c.inst.enc != Enc::Vop3 {
        return Mods::default();
    }
    let [w0, w1] = c.inst.words;
    let vop3b = c.fields[4].is_some();
    Mods {
        abs: if vop3b { 0 } else { (w0 >> 8) & 7 },
        neg: w1 >> 29,
        clamp: (w0 >> 15) & 1 != 0,
        omod: ((w1 >> 27) & 3) as u8,
    }
}

impl Wave {
    // ------------------------------------------------------------ vector ALU

    fn src32(&self, c: &Cached, field: Field, index: u32, m: Mods) -> R<Lanes> {
        let mut v = [0u32; WAVE_SIZE];
        self.src32_into(c, field, index, m, &mut v)?;
        Ok(v)
    }

    /// Reads a 32-bit source (with abs/neg applied) into `v`.
    fn src32_into(&self, c: &Cached, field: Field, index: u32, m: Mods, v: &mut Lanes) -> R<()> {
        if let Some(sel) = &self.sdwa_src {
            if index < 2 {
                *v = sel[index as usize];
                return Ok(());
            }
        }
        let Some(op) = opnd(c, field) else {
            *v = [0; WAVE_SIZE];
            return Ok(());
        };
        match op {
            Operand::Vgpr { first, .. } => v.copy_from_slice(self.v(usize::from(first))?),
            Operand::Agpr { first, .. } => v.copy_from_slice(self.a(usize::from(first))?),
            _ => v.fill(self.sread(op, c.src_type, false) as u32),
        }
        let (abs, neg) = ((m.abs >> index) & 1 != 0, (m.neg >> index) & 1 != 0);
        if abs || neg {
            let (am, nm) = if c.src_type == SrcType::F16 {
                (0x7fffu32, 0x8000u32)
            } else {
                (0x7fff_ffff, 0x8000_0000)
            };
            for x in v.iter_mut() {
                if abs {
                    *x &= am;
                }
                if neg {
                    *x ^= nm;
                }
            }
        }
        Ok(())
    }

    fn src64(&self, c: &Cached, field: Field, index: u32, m: Mods) -> R<[u64; WAVE_SIZE]> {
        let Some(op) = opnd(c, field) else {
            return Ok([0; WAVE_SIZE]);
        };
        let mut v = self.vread64(op, c.src_type)?;
        let (abs, neg) = ((m.abs >> index) & 1 != 0, (m.neg >> index) & 1 != 0);
        if abs || neg {
            for x in v.iter_mut() {
                *x = fp::modify_in64(*x, abs, neg);
            }
        }
        Ok(v)
    }

    fn dst32(&mut self, c: &Cached, mut r: Lanes, m: Mods, float_out: bool) -> R<()> {
        if float_out && (m.clamp || m.omod != 0) {
            for x in r.iter_mut() {
                *x = fp::modify_out32(f32::from_bits(*x), m.omod, m.clamp, self.mode).to_bits();
            }
        }
        let exec = self.exec();
        if let Some(d) = opnd(c, Field::D) {
            self.vwrite32(d, &r, exec)?;
        }
        Ok(())
    }

    fn dst64(&mut self, c: &Cached, mut r: [u64; WAVE_SIZE], m: Mods, float_out: bool) -> R<()> {
        if float_out && (m.clamp || m.omod != 0) {
            for x in r.iter_mut() {
                *x = fp::modify_out64(f64::from_bits(*x), m.omod, m.clamp, self.mode).to_bits();
            }
        }
        let exec = self.exec();
        if let Some(d) = opnd(c, Field::D) {
            self.vwrite64(d, &r, exec)?;
        }
        Ok(())
    }

    /// The carry/condition mask an instruction reads: its C operand (VOP3) or VCC.
    fn mask_in(&self, c: &Cached) -> u64 {
        match opnd(c, Field::C) {
            Some(o) if c.inst.enc == Enc::Vop3 => self.sread(o, SrcType::Int, true),
            _ => self.vcc(),
        }
    }

    /// Writes a lane mask to the instruction's E operand (VOP3B) or VCC.
    fn mask_out(&mut self, c: &Cached, mask: u64) {
        match opnd(c, Field::E) {
            Some(o) => self.swrite(o, mask, true),
            None => self.set_vcc(mask),
        }
    }

    fn valu(&mut self, c: &Cached) -> R<()> {
        if self.sdwa_src.is_none() && !self.in_dpp64 {
            match c.inst.ext {
                crate::decode::Ext::None => {}
                crate::decode::Ext::Sdwa => return self.sdwa(c),
                crate::decode::Ext::Dpp => return self.dpp(c),
            }
        }
        if let Some(cmp) = c.cmp {
            return self.vcmp(c, cmp);
        }
        let m = mods_of(c);
        let mode = self.mode;
        let exec = self.exec();
        let op = c.inst.op;
        // each lane loop lives in its own small monomorphised function (no giant frame)
        macro_rules! un32 {
            ($f:expr, $float:expr) => {
                self.lanes1(c, m, $float, $f)
            };
        }
        macro_rules! bin32 {
            ($f:expr, $float:expr) => {
                self.lanes2(c, m, $float, $f)
            };
        }
        macro_rules! tri32 {
            ($f:expr, $float:expr) => {
                self.lanes3(c, m, $float, $f)
            };
        }
        macro_rules! un64 {
            ($f:expr) => {
                self.lanes64_1(c, m, $f)
            };
        }
        macro_rules! bin64 {
            ($f:expr) => {
                self.lanes64_2(c, m, $f)
            };
        }
        macro_rules! tri64 {
            ($f:expr) => {
                self.lanes64_3(c, m, $f)
            };
        }
        // f64 result from a 32-bit source
        macro_rules! widen {
            ($f:expr) => {
                self.lanes_widen(c, m, $f)
            };
        }
        // 32-bit result from an f64 source
        macro_rules! narrow {
            ($f:expr, $float:expr) => {
                self.lanes_narrow(c, m, $float, $f)
            };
        }
        let clamp = m.clamp;
        match op {
            Op::VNop => Ok(()),
            Op::VMovB32 | Op::VAccvgprReadB32 | Op::VAccvgprWriteB32 | Op::VAccvgprMovB32 => {
                un32!(|a| a, false)
            }
            Op::VReadfirstlaneB32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let v = lanes::readfirstlane(&a, exec);
                if let Some(d) = opnd(c, Field::D) {
                    self.swrite(d, v.into(), false);
                }
                Ok(())
            }
            Op::VReadlaneB32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let lane = opnd(c, Field::B).map_or(0, |o| self.sread(o, SrcType::Int, false))
                    as usize
                    & 63;
                if let Some(d) = opnd(c, Field::D) {
                    self.swrite(d, a[lane].into(), false);
                }
                Ok(())
            }
            Op::VWritelaneB32 => {
                let v = opnd(c, Field::A).map_or(0, |o| self.sread(o, SrcType::Int, false)) as u32;
                let lane = opnd(c, Field::B).map_or(0, |o| self.sread(o, SrcType::Int, false))
                    as usize
                    & 63;
                if let Some(Operand::Vgpr { first, .. }) = opnd(c, Field::D) {
                    self.v_mut(usize::from(first))?[lane] = v;
                }
                Ok(())
            }
            Op::VCndmaskB32 => {
                let sel = self.mask_in(c);
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = if (sel >> l) & 1 != 0 { b[l] } else { a[l] };
                }
                self.dst32(c, r, m, false)
            }
            // f32 arithmetic
            Op::VAddF32 => bin32!(|a, b| fp::add_f32(a, b, mode), true),
            Op::VSubF32 => bin32!(|a, b| fp::add_f32(a, b ^ 0x8000_0000, mode), true),
            Op::VSubrevF32 => bin32!(|a: u32, b| fp::add_f32(b, a ^ 0x8000_0000, mode), true),
            Op::VMulF32 => bin32!(|a, b| fp::mul_f32(a, b, mode), true),
            Op::VMulLegacyF32 => bin32!(
                |a: u32, b: u32| if a & 0x7fff_ffff == 0 || b & 0x7fff_ffff == 0 {
                    0
                } else {
                    fp::mul_f32(a, b, mode)
                },
                true
            ),
            Op::VMinF32 => bin32!(|a, b| fp::min_f32(a, b, mode), true),
            Op::VMaxF32 => bin32!(|a, b| fp::max_f32(a, b, mode), true),
            Op::VFmaF32 => tri32!(|a, b, d| fp::fma_f32(a, b, d, mode), true),
            Op::VMadF32 | Op::VMadLegacyF32 => tri32!(|a, b, d| fp::mad_f32(a, b, d, mode), true),
            Op::VFmacF32 | Op::VMacF32 => {
                let d = match opnd(c, Field::D) {
                    Some(o) => self.vread32(o, SrcType::F32)?,
                    None => [0; WAVE_SIZE],
                };
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = if op == Op::VFmacF32 {
                        fp::fma_f32(a[l], b[l], d[l], mode)
                    } else {
                        fp::mad_f32(a[l], b[l], d[l], mode)
                    };
                }
                self.dst32(c, r, m, true)
            }
            Op::VMin3F32 => tri32!(
                |a, b, d| fp::min_f32(fp::min_f32(a, b, mode), d, mode),
                true
            ),
            Op::VMax3F32 => tri32!(
                |a, b, d| fp::max_f32(fp::max_f32(a, b, mode), d, mode),
                true
            ),
            Op::VMed3F32 => tri32!(|a, b, d| fp::med3_f32(a, b, d, mode), true),
            Op::VLdexpF32 => bin32!(|a, b| fp::ldexp_f32(a, b, mode), true),
            Op::VRcpF32 | Op::VRcpIflagF32 => un32!(|a| fp::rcp_f32(a, mode), true),
            Op::VRsqF32 => un32!(|a| fp::rsq_f32(a, mode), true),
            Op::VSqrtF32 => un32!(|a| fp::sqrt_f32(a, mode), true),
            Op::VExpF32 => un32!(|a| fp::exp_f32(a, mode), true),
            Op::VLogF32 => un32!(|a| fp::log_f32(a, mode), true),
            Op::VSinF32 => un32!(|a| fp::sin_f32(a, mode), true),
            Op::VCosF32 => un32!(|a| fp::cos_f32(a, mode), true),
            Op::VFractF32 => un32!(|a| fp::fract_f32(a, mode), true),
            Op::VTruncF32 => un32!(|a| f32::from_bits(a).trunc().to_bits(), true),
            Op::VCeilF32 => un32!(|a| f32::from_bits(a).ceil().to_bits(), true),
            Op::VFloorF32 => un32!(|a| f32::from_bits(a).floor().to_bits(), true),
            Op::VRndneF32 => un32!(fp::rndne_f32, true),
            Op::VFrexpMantF32 => un32!(fp::frexp_mant_f32, true),
            Op::VFrexpExpI32F32 => un32!(fp::frexp_exp_f32, false),
            Op::VDivScaleF32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let d = self.src32(c, Field::C, 2, m)?;
                let mut r = [0u32; WAVE_SIZE];
                let mut vcc = 0u64;
                for l in 0..WAVE_SIZE {
                    let (v, flag) = fp::div_scale_f32(a[l], b[l], d[l]);
                    r[l] = v;
                    vcc |= u64::from(flag) << l;
                }
                self.mask_out(c, vcc & exec);
                self.dst32(c, r, m, true)
            }
            Op::VDivFmasF32 => {
                let vcc = self.vcc();
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let d = self.src32(c, Field::C, 2, m)?;
                let mut r = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = fp::div_fmas_f32(a[l], b[l], d[l], (vcc >> l) & 1 != 0, mode);
                }
                self.dst32(c, r, m, true)
            }
            Op::VDivFixupF32 => tri32!(fp::div_fixup_f32, true),
            // f64 arithmetic
            Op::VAddF64 => bin64!(|a, b| fp::add_f64(a, b, mode)),
            Op::VMulF64 => bin64!(|a, b| fp::mul_f64(a, b, mode)),
            Op::VMinF64 => bin64!(|a, b| fp::min_f64(a, b, mode)),
            Op::VMaxF64 => bin64!(|a, b| fp::max_f64(a, b, mode)),
            Op::VFmaF64 => tri64!(|a, b, d| fp::fma_f64(a, b, d, mode)),
            Op::VFmacF64 => {
                let d = match opnd(c, Field::D) {
                    Some(o) => self.vread64(o, SrcType::F64)?,
                    None => [0; WAVE_SIZE],
                };
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src64(c, Field::B, 1, m)?;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = fp::fma_f64(a[l], b[l], d[l], mode);
                }
                self.dst64(c, r, m, true)
            }
            Op::VLdexpF64 => {
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, Mods::default())?;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = fp::ldexp_f64(a[l], b[l], mode);
                }
                self.dst64(c, r, m, true)
            }
            Op::VRcpF64 => un64!(|a| fp::rcp_f64(a, mode)),
            Op::VRsqF64 => un64!(|a| fp::rsq_f64(a, mode)),
            Op::VSqrtF64 => un64!(|a| fp::sqrt_f64(a, mode)),
            Op::VFractF64 => un64!(|a| fp::fract_f64(a, mode)),
            Op::VTruncF64 => un64!(|a| f64::from_bits(a).trunc().to_bits()),
            Op::VCeilF64 => un64!(|a| f64::from_bits(a).ceil().to_bits()),
            Op::VFloorF64 => un64!(|a| f64::from_bits(a).floor().to_bits()),
            Op::VRndneF64 => un64!(fp::rndne_f64),
            Op::VFrexpMantF64 => un64!(fp::frexp_mant_f64),
            Op::VFrexpExpI32F64 => narrow!(fp::frexp_exp_f64, false),
            Op::VDivScaleF64 => {
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src64(c, Field::B, 1, m)?;
                let d = self.src64(c, Field::C, 2, m)?;
                let mut r = [0u64; WAVE_SIZE];
                let mut vcc = 0u64;
                for l in 0..WAVE_SIZE {
                    let (v, flag) = fp::div_scale_f64(a[l], b[l], d[l]);
                    r[l] = v;
                    vcc |= u64::from(flag) << l;
                }
                self.mask_out(c, vcc & exec);
                self.dst64(c, r, m, true)
            }
            Op::VDivFmasF64 => {
                let vcc = self.vcc();
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src64(c, Field::B, 1, m)?;
                let d = self.src64(c, Field::C, 2, m)?;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = fp::div_fmas_f64(a[l], b[l], d[l], (vcc >> l) & 1 != 0, mode);
                }
                self.dst64(c, r, m, true)
            }
            Op::VDivFixupF64 => tri64!(fp::div_fixup_f64),
            // conversions
            Op::VCvtI32F32 => un32!(|a| fp::cvt_i32_f32(a, mode), false),
            Op::VCvtU32F32 => un32!(|a| fp::cvt_u32_f32(a, mode), false),
            Op::VCvtF32I32 => un32!(|a| fp::cvt_f32_i32(a, mode), true),
            Op::VCvtF32U32 => un32!(|a| fp::cvt_f32_u32(a, mode), true),
            Op::VCvtRpiI32F32 => un32!(|a| (f32::from_bits(a) + 0.5).floor() as i32 as u32, false),
            Op::VCvtFlrI32F32 => un32!(|a| f32::from_bits(a).floor() as i32 as u32, false),
            Op::VCvtF32Ubyte0 => un32!(|a| fp::cvt_f32_ubyte(a, 0), false),
            Op::VCvtF32Ubyte1 => un32!(|a| fp::cvt_f32_ubyte(a, 1), false),
            Op::VCvtF32Ubyte2 => un32!(|a| fp::cvt_f32_ubyte(a, 2), false),
            Op::VCvtF32Ubyte3 => un32!(|a| fp::cvt_f32_ubyte(a, 3), false),
            Op::VCvtF16F32 => un32!(|a| fp::cvt_f16_f32(a, mode), false),
            Op::VCvtF32F16 => un32!(|a| fp::cvt_f32_f16(a, mode), true),
            Op::VCvtPkrtzF16F32 => bin32!(|a, b| fp::cvt_pkrtz_f16_f32(a, b, mode), false),
            Op::VCvtF64F32 => widen!(|a| fp::cvt_f64_f32(a, mode)),
            Op::VCvtF64I32 => widen!(fp::cvt_f64_i32),
            Op::VCvtF64U32 => widen!(fp::cvt_f64_u32),
            Op::VCvtF32F64 => narrow!(|a| fp::cvt_f32_f64(a, mode), true),
            Op::VCvtI32F64 => narrow!(fp::cvt_i32_f64, false),
            Op::VCvtU32F64 => narrow!(fp::cvt_u32_f64, false),
            // f16 arithmetic (low halves; the high half of the destination is zeroed)
            Op::VAddF16 => bin32!(|a, b| fp::f16_binop(a, b, mode, |x, y| x + y), false),
            Op::VSubF16 => bin32!(|a, b| fp::f16_binop(a, b, mode, |x, y| x - y), false),
            Op::VSubrevF16 => bin32!(|a, b| fp::f16_binop(a, b, mode, |x, y| y - x), false),
            Op::VMulF16 => bin32!(|a, b| fp::f16_binop(a, b, mode, |x, y| x * y), false),
            // integer
            Op::VAddU32 => bin32!(
                |a, b| if clamp {
                    int::add_u32_clamped(a, b)
                } else {
                    a.wrapping_add(b)
                },
                false
            ),
            Op::VSubU32 => bin32!(
                |a, b| if clamp {
                    int::sub_u32_clamped(a, b)
                } else {
                    a.wrapping_sub(b)
                },
                false
            ),
            Op::VSubrevU32 => bin32!(
                |a: u32, b: u32| if clamp {
                    int::sub_u32_clamped(b, a)
                } else {
                    b.wrapping_sub(a)
                },
                false
            ),
            Op::VAddI32 => bin32!(
                |a: u32, b: u32| if clamp {
                    (a as i32).saturating_add(b as i32) as u32
                } else {
                    a.wrapping_add(b)
                },
                false
            ),
            Op::VSubI32 => bin32!(
                |a: u32, b: u32| if clamp {
                    (a as i32).saturating_sub(b as i32) as u32
                } else {
                    a.wrapping_sub(b)
                },
                false
            ),
            Op::VAddCoU32 | Op::VSubCoU32 | Op::VSubrevCoU32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                let mut carry = 0u64;
                for l in 0..WAVE_SIZE {
                    let (v, cy) = match op {
                        Op::VAddCoU32 => int::add_co(a[l], b[l]),
                        Op::VSubCoU32 => int::sub_co(a[l], b[l]),
                        _ => int::sub_co(b[l], a[l]),
                    };
                    r[l] = if clamp {
                        if cy {
                            if op == Op::VAddCoU32 {
                                u32::MAX
                            } else {
                                0
                            }
                        } else {
                            v
                        }
                    } else {
                        v
                    };
                    carry |= u64::from(cy) << l;
                }
                self.mask_out(c, carry & exec);
                self.dst32(c, r, m, false)
            }
            Op::VAddcCoU32 | Op::VSubbCoU32 | Op::VSubbrevCoU32 => {
                let cin = self.mask_in(c);
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                let mut carry = 0u64;
                for l in 0..WAVE_SIZE {
                    let ci = (cin >> l) & 1 != 0;
                    let (v, cy) = match op {
                        Op::VAddcCoU32 => int::addc(a[l], b[l], ci),
                        Op::VSubbCoU32 => int::subb(a[l], b[l], ci),
                        _ => int::subb(b[l], a[l], ci),
                    };
                    r[l] = v;
                    carry |= u64::from(cy) << l;
                }
                self.mask_out(c, carry & exec);
                self.dst32(c, r, m, false)
            }
            Op::VMulLoU32 => bin32!(|a: u32, b| a.wrapping_mul(b), false),
            Op::VMulHiU32 => bin32!(int::mul_hi_u32, false),
            Op::VMulHiI32 => bin32!(int::mul_hi_i32, false),
            Op::VMulU32U24 => bin32!(int::mul_u32_u24, false),
            Op::VMulHiU32U24 => bin32!(int::mul_hi_u32_u24, false),
            Op::VMulI32I24 => bin32!(int::mul_i32_i24, false),
            Op::VMulHiI32I24 => bin32!(int::mul_hi_i32_i24, false),
            Op::VMadU32U24 => tri32!(|a, b, d: u32| int::mul_u32_u24(a, b).wrapping_add(d), false),
            Op::VMadI32I24 => tri32!(|a, b, d: u32| int::mul_i32_i24(a, b).wrapping_add(d), false),
            Op::VMadU64U32 | Op::VMadI64I32 => {
                let a = self.src32(c, Field::A, 0, Mods::default())?;
                let b = self.src32(c, Field::B, 1, Mods::default())?;
                let d = match opnd(c, Field::C) {
                    Some(o) => self.vread64(o, SrcType::Int)?,
                    None => [0; WAVE_SIZE],
                };
                let mut r = [0u64; WAVE_SIZE];
                let mut carry = 0u64;
                for l in 0..WAVE_SIZE {
                    let (v, cy) = if op == Op::VMadU64U32 {
                        int::mad_u64_u32(a[l], b[l], d[l])
                    } else {
                        int::mad_i64_i32(a[l], b[l], d[l])
                    };
                    r[l] = v;
                    carry |= u64::from(cy) << l;
                }
                self.mask_out(c, carry & exec);
                self.dst64(c, r, Mods::default(), false)
            }
            Op::VMinI32 => bin32!(|a: u32, b: u32| (a as i32).min(b as i32) as u32, false),
            Op::VMaxI32 => bin32!(|a: u32, b: u32| (a as i32).max(b as i32) as u32, false),
            Op::VMinU32 => bin32!(|a: u32, b: u32| a.min(b), false),
            Op::VMaxU32 => bin32!(|a: u32, b: u32| a.max(b), false),
            Op::VMin3I32 => tri32!(
                |a: u32, b: u32, d: u32| (a as i32).min(b as i32).min(d as i32) as u32,
                false
            ),
            Op::VMax3I32 => tri32!(
                |a: u32, b: u32, d: u32| (a as i32).max(b as i32).max(d as i32) as u32,
                false
            ),
            Op::VMin3U32 => tri32!(|a: u32, b: u32, d: u32| a.min(b).min(d), false),
            Op::VMax3U32 => tri32!(|a: u32, b: u32, d: u32| a.max(b).max(d), false),
            Op::VMed3I32 => tri32!(int::med3_i32, false),
            Op::VMed3U32 => tri32!(int::med3_u32, false),
            Op::VLshrrevB32 => bin32!(|a, b| int::lshr32(b, a), false),
            Op::VAshrrevI32 => bin32!(|a, b| int::ashr32(b, a), false),
            Op::VLshlrevB32 => bin32!(|a, b| int::shl32(b, a), false),
            // 16-bit integer ops use bits 15:0 of the sources; on gfx9 they zero VDST[31:16]
            Op::VAddU16 => bin32!(|a, b| u32::from((a as u16).wrapping_add(b as u16)), false),
            Op::VSubU16 => bin32!(|a, b| u32::from((a as u16).wrapping_sub(b as u16)), false),
            Op::VSubrevU16 => bin32!(|a, b| u32::from((b as u16).wrapping_sub(a as u16)), false),
            Op::VMulLoU16 => bin32!(|a, b| u32::from((a as u16).wrapping_mul(b as u16)), false),
            Op::VLshlrevB16 => bin32!(|a, b| u32::from((b as u16) << (a & 15)), false),
            Op::VLshrrevB16 => bin32!(|a, b| u32::from((b as u16) >> (a & 15)), false),
            Op::VAshrrevI16 => bin32!(|a, b| u32::from(((b as i16) >> (a & 15)) as u16), false),
            Op::VMaxU16 => bin32!(|a, b| u32::from((a as u16).max(b as u16)), false),
            Op::VMinU16 => bin32!(|a, b| u32::from((a as u16).min(b as u16)), false),
            Op::VMaxI16 => bin32!(|a, b| u32::from((a as i16).max(b as i16) as u16), false),
            Op::VMinI16 => bin32!(|a, b| u32::from((a as i16).min(b as i16) as u16), false),
            Op::VLshlrevB64 | Op::VLshrrevB64 | Op::VAshrrevI64 => {
                let a = self.src32(c, Field::A, 0, Mods::default())?;
                let b = self.src64(c, Field::B, 1, Mods::default())?;
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = match op {
                        Op::VLshlrevB64 => int::shl64(b[l], a[l]),
                        Op::VLshrrevB64 => int::lshr64(b[l], a[l]),
                        _ => int::ashr64(b[l], a[l]),
                    };
                }
                self.dst64(c, r, Mods::default(), false)
            }
            Op::VAndB32 => bin32!(|a, b| a & b, false),
            Op::VOrB32 => bin32!(|a, b| a | b, false),
            Op::VXorB32 => bin32!(|a, b| a ^ b, false),
            Op::VXnorB32 => bin32!(|a: u32, b: u32| !(a ^ b), false),
            Op::VNotB32 => un32!(|a: u32| !a, false),
            Op::VBfrevB32 => un32!(int::brev32, false),
            Op::VFfbhU32 => un32!(int::ffbh_u32, false),
            Op::VFfblB32 => un32!(int::ffbl, false),
            Op::VFfbhI32 => un32!(int::ffbh_i32, false),
            Op::VBfeU32 => tri32!(int::bfe_u32, false),
            Op::VBfeI32 => tri32!(int::bfe_i32, false),
            Op::VBfiB32 => tri32!(int::bfi, false),
            Op::VBfmB32 => bin32!(int::bfm, false),
            Op::VAlignbitB32 => tri32!(int::alignbit, false),
            Op::VAlignbyteB32 => tri32!(int::alignbyte, false),
            Op::VPermB32 => tri32!(int::perm, false),
            Op::VSadU8 => tri32!(int::sad_u8, false),
            Op::VSadHiU8 => tri32!(media::sad_hi_u8, false),
            Op::VSadU16 => tri32!(media::sad_u16, false),
            Op::VMsadU8 => tri32!(media::msad_u8, false),
            Op::VLerpU8 => tri32!(media::lerp_u8, false),
            Op::VCvtPkU8F32 => tri32!(media::cvt_pk_u8_f32, false),
            Op::VCvtPkI16I32 => bin32!(media::cvt_pk_i16_i32, false),
            Op::VCvtPkU16U32 => bin32!(media::cvt_pk_u16_u32, false),
            Op::VCvtPknormI16F32 => bin32!(media::cvt_pknorm_i16_f32, false),
            Op::VCvtPknormU16F32 => bin32!(media::cvt_pknorm_u16_f32, false),
            Op::VCubeidF32 => tri32!(media::cubeid, true),
            Op::VCubemaF32 => tri32!(media::cubema, true),
            Op::VCubescF32 => tri32!(media::cubesc, true),
            Op::VCubetcF32 => tri32!(media::cubetc, true),
            Op::VQsadPkU16U8 | Op::VMqsadPkU16U8 | Op::VMqsadU32U8 => self.qsad(c),
            Op::VSadU32 => tri32!(int::sad_u32, false),
            Op::VLshlAddU32 => tri32!(|a, b, d: u32| int::shl32(a, b).wrapping_add(d), false),
            Op::VAddLshlU32 => tri32!(|a: u32, b, d| int::shl32(a.wrapping_add(b), d), false),
            Op::VAdd3U32 => tri32!(|a: u32, b, d| a.wrapping_add(b).wrapping_add(d), false),
            Op::VLshlOrB32 => tri32!(|a, b, d| int::shl32(a, b) | d, false),
            Op::VAndOrB32 => tri32!(|a, b, d| (a & b) | d, false),
            Op::VOr3B32 => tri32!(|a, b, d| a | b | d, false),
            Op::VXadU32 => tri32!(|a: u32, b: u32, d: u32| (a ^ b).wrapping_add(d), false),
            Op::VBcntU32B32 => bin32!(|a: u32, b: u32| a.count_ones().wrapping_add(b), false),
            Op::VMbcntLoU32B32 | Op::VMbcntHiU32B32 => {
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, m)?;
                let mut r = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    r[l] = if op == Op::VMbcntLoU32B32 {
                        int::mbcnt_lo(a[l], b[l], l)
                    } else {
                        int::mbcnt_hi(a[l], b[l], l)
                    };
                }
                self.dst32(c, r, m, false)
            }
            Op::VPkMovB32 => {
                // gfx90a: d.lo = src0[op_sel[0]], d.hi = src1[op_sel[1]] (dwords of 64-bit pairs)
                let w0 = c.inst.words[0];
                let a = self.src64(c, Field::A, 0, Mods::default())?;
                let b = self.src64(c, Field::B, 1, Mods::default())?;
                let (sa, sb) = ((w0 >> 11) & 1, (w0 >> 12) & 1);
                let mut r = [0u64; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    let lo = (a[l] >> (32 * sa)) & 0xffff_ffff;
                    let hi = (b[l] >> (32 * sb)) & 0xffff_ffff;
                    r[l] = lo | (hi << 32);
                }
                self.dst64(c, r, Mods::default(), false)
            }
            Op::VMfmaF3232x32x1f32
            | Op::VMfmaF3232x32x2f32
            | Op::VMfmaF3216x16x1f32
            | Op::VMfmaF3216x16x4f32
            | Op::VMfmaF324x4x1f32 => self.mfma(c, op),
            op if mfma_packed::is_packed_mfma(op) => self.mfma_packed(c, op),
            Op::VFmaF16
            | Op::VMadF16
            | Op::VMacF16
            | Op::VDivFixupF16
            | Op::VMaxF16
            | Op::VMinF16
            | Op::VMax3F16
            | Op::VMin3F16
            | Op::VMed3F16
            | Op::VLdexpF16
            | Op::VSqrtF16
            | Op::VRcpF16
            | Op::VRsqF16
            | Op::VExpF16
            | Op::VLogF16
            | Op::VSinF16
            | Op::VCosF16
            | Op::VFractF16
            | Op::VTruncF16
            | Op::VCeilF16
            | Op::VFloorF16
            | Op::VRndneF16
            | Op::VFrexpMantF16
            | Op::VFrexpExpI16F16
            | Op::VCvtF16U16
            | Op::VCvtF16I16
            | Op::VCvtU16F16
            | Op::VCvtI16F16
            | Op::VMadU16
            | Op::VMadI16
            | Op::VMadLegacyF16
            | Op::VFmaLegacyF16
            | Op::VDivFixupLegacyF16
            | Op::VMadLegacyU16
            | Op::VMadLegacyI16
            | Op::VMax3I16
            | Op::VMax3U16
            | Op::VMin3I16
            | Op::VMin3U16
            | Op::VMed3I16
            | Op::VMed3U16
            | Op::VAddI16
            | Op::VSubI16 => self.f16_op(c),
            Op::VMadU32U16 | Op::VMadI32I16 => self.mad_32_16(c),
            Op::VSwapB32 => self.swap(c),
            Op::VPkAddF16
            | Op::VPkMulF16
            | Op::VPkFmaF16
            | Op::VPkMaxF16
            | Op::VPkMinF16
            | Op::VPkAddU16
            | Op::VPkSubU16
            | Op::VPkAddI16
            | Op::VPkSubI16
            | Op::VPkMulLoU16
            | Op::VPkMadU16
            | Op::VPkMadI16
            | Op::VPkLshlrevB16
            | Op::VPkLshrrevB16
            | Op::VPkAshrrevI16
            | Op::VPkMaxU16
            | Op::VPkMinU16
            | Op::VPkMaxI16
            | Op::VPkMinI16
            | Op::VPkAddF32
            | Op::VPkMulF32
            | Op::VPkFmaF32
            | Op::VMadMixF32
            | Op::VFmaMixF32
            | Op::VMadMixloF16
            | Op::VFmaMixloF16
            | Op::VMadMixhiF16
            | Op::VFmaMixhiF16
            | Op::VDot2F32F16
            | Op::VDot2I32I16
            | Op::VDot2U32U16
            | Op::VDot4I32I8
            | Op::VDot4U32U8
            | Op::VDot8I32I4
            | Op::VDot8U32U4 => self.vop3p(c),
            Op::VTrigPreopF64 => self.trig_preop(c),
            Op::VMadmkF32 | Op::VMadakF32 | Op::VMadmkF16 | Op::VMadakF16 => self.mad_literal(c),
            Op::VPackB32F16 => self.pack_b32_f16(c),
            Op::VDot2cF32F16 | Op::VDot4cI32I8 => self.dot_accumulate(c),
            _ => Err(illegal(self.pc, c)),
        }
    }

    #[inline(never)]
    fn vcmp(&mut self, c: &Cached, cmp: super::cache::Cmp) -> R<()> {
        let m = mods_of(c);
        let exec = self.exec();
        let mut result = 0u64;
        // outcome index: 0 less, 1 equal, 2 greater, 3 unordered
        #[inline(always)]
        fn ford<T: PartialOrd>(x: T, y: T) -> u32 {
            if x < y {
                0
            } else if x == y {
                1
            } else if x > y {
                2
            } else {
                3
            }
        }
        #[inline(always)]
        fn iord<T: Ord>(x: T, y: T) -> u32 {
            match x.cmp(&y) {
                std::cmp::Ordering::Less => 0,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Greater => 2,
            }
        }
        match (cmp.truth, cmp.ty) {
            (None, CmpType::F64) => {
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, Mods::default())?;
                for l in 0..WAVE_SIZE {
                    result |= u64::from(fp::class_f64(a[l], b[l])) << l;
                }
            }
            (None, CmpType::F32 | CmpType::F16) => {
                let a = self.src32(c, Field::A, 0, m)?;
                let b = self.src32(c, Field::B, 1, Mods::default())?;
                let half = cmp.ty == CmpType::F16;
                for l in 0..WAVE_SIZE {
                    let x = if half {
                        fp::f16_to_f32(a[l] as u16).to_bits()
                    } else {
                        a[l]
                    };
                    result |= u64::from(fp::class_f32(x, b[l])) << l;
                }
            }
            (None, _) => return Err(illegal(self.pc, c)),
            (Some(truth), CmpType::F64 | CmpType::I64 | CmpType::U64) => {
                let a = self.src64(c, Field::A, 0, m)?;
                let b = self.src64(c, Field::B, 1, m)?;
                for l in 0..WAVE_SIZE {
                    let o = match cmp.ty {
                        CmpType::F64 => ford(f64::from_bits(a[l]), f64::from_bits(b[l])),
                        CmpType::I64 => iord(a[l] as i64, b[l] as i64),
                        _ => iord(a[l], b[l]),
                    };
                    result |= u64::from((truth >> o) & 1) << l;
                }
            }
            (Some(truth), ty) => {
                let (mut sa, mut sb) = ([0u32; WAVE_SIZE], [0u32; WAVE_SIZE]);
                let a = self.src_ref(c, Field::A, 0, m, &mut sa)?;
                let b = self.src_ref(c, Field::B, 1, m, &mut sb)?;
                let mut bits = [0u8; WAVE_SIZE];
                match ty {
                    CmpType::F32 => {
                        for l in 0..WAVE_SIZE {
                            bits[l] =
                                (truth >> ford(f32::from_bits(a[l]), f32::from_bits(b[l]))) & 1;
                        }
                    }
                    CmpType::F16 => {
                        for l in 0..WAVE_SIZE {
                            let (x, y) = (fp::f16_to_f32(a[l] as u16), fp::f16_to_f32(b[l] as u16));
                            bits[l] = (truth >> ford(x, y)) & 1;
                        }
                    }
                    CmpType::I32 => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = (truth >> iord(a[l] as i32, b[l] as i32)) & 1;
                        }
                    }
                    CmpType::U32 => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = (truth >> iord(a[l], b[l])) & 1;
                        }
                    }
                    CmpType::I16 => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = (truth >> iord(a[l] as i16, b[l] as i16)) & 1;
                        }
                    }
                    _ => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = (truth >> iord(a[l] as u16, b[l] as u16)) & 1;
                        }
                    }
                }
                for (l, bit) in bits.iter().enumerate() {
                    result |= u64::from(*bit) << l;
                }
            }
        }
        let result = result & exec;
        // e32 writes VCC; e64 writes its SDST (the D operand)
        match (c.inst.enc, opnd(c, Field::D)) {
            (Enc::Vop3, Some(d)) => self.swrite(d, result, true),
            _ => self.set_vcc(result),
        }
        if cmp.writes_exec {
            self.set_exec(result);
        }
        Ok(())
    }

    fn mfma(&mut self, c: &Cached, op: Op) -> R<()> {
        let shape = match op {
            Op::VMfmaF3232x32x1f32 => MfmaF32::M32N32K1,
            Op::VMfmaF3232x32x2f32 => MfmaF32::M32N32K2,
            Op::VMfmaF3216x16x1f32 => MfmaF32::M16N16K1,
            Op::VMfmaF3216x16x4f32 => MfmaF32::M16N16K4,
            _ => MfmaF32::M4N4K1,
        };
        let [w0, w1] = c.inst.words;
        // cbsz/abid/blgp broadcast controls are not modelled
        if (w0 >> 8) & 0x3f != 0 || (w1 >> 29) != 0 {
            return Err(illegal(self.pc, c));
        }
        let a = self.src32(c, Field::A, 0, Mods::default())?;
        let b = self.src32(c, Field::B, 1, Mods::default())?;
        let regs = shape.result_registers();
        let cin = self.mfma_c(c, regs, SrcType::F32)?;
        let d = shape.compute(&a, &b, &cin);
        self.mfma_d(c, &d)
    }

    /// Whether an MFMA's C and D are AGPRs: the ACC_CD bit (gfx90a); always on gfx908.
    fn mfma_acc_cd(&self, c: &Cached) -> bool {
        (c.inst.words[0] >> 15) & 1 != 0 || self.target == crate::Target::Gfx908
    }

    /// An MFMA's `regs` C registers: VGPRs or AGPRs from SRC2, or an inline constant or SGPR
    /// (read as `ty`) broadcast to every register and lane.
    fn mfma_c(&self, c: &Cached, regs: usize, ty: SrcType) -> R<Vec<Lanes>> {
        let acc_cd = self.mfma_acc_cd(c);
        let src2 = ((c.inst.words[1] >> 18) & 0x1ff) as usize;
        let mut cin = Vec::with_capacity(regs);
        for i in 0..regs {
            cin.push(if src2 >= 256 {
                if acc_cd {
                    *self.a(src2 - 256 + i)?
                } else {
                    *self.v(src2 - 256 + i)?
                }
            } else {
                let o = opnd(c, Field::C).unwrap_or(Operand::IntConst(0));
                [self.sread(o, ty, false) as u32; WAVE_SIZE]
            });
        }
        Ok(cin)
    }

    /// Writes an MFMA's D registers (VGPRs or AGPRs from VDST); MFMA ignores EXEC, all lanes
    /// take part.
    fn mfma_d(&mut self, c: &Cached, d: &[Lanes]) -> R<()> {
        let acc_cd = self.mfma_acc_cd(c);
        let vdst = (c.inst.words[0] & 0xff) as usize;
        for (i, r) in d.iter().enumerate() {
            if acc_cd {
                *self.a_mut(vdst + i)? = *r;
            } else {
                *self.v_mut(vdst + i)? = *r;
            }
        }
        Ok(())
    }
}

impl Wave {
    /// `v_qsad_pk_u16_u8`, `v_mqsad_pk_u16_u8` (64-bit results) and `v_mqsad_u32_u8` (128-bit):
    /// SADs of a 32-bit reference against the four byte windows of a 64-bit source.
    fn qsad(&mut self, c: &Cached) -> R<()> {
        let op = c.inst.op;
        let a = self.src64(c, Field::A, 0, Mods::default())?;
        let b = self.src32(c, Field::B, 1, Mods::default())?;
        let dwords = if op == Op::VMqsadU32U8 { 4 } else { 2 };
        // SRC2: as many VGPRs as the result, or a constant in every dword
        let mut acc = [[0u32; WAVE_SIZE]; 4];
        match opnd(c, Field::C) {
            Some(Operand::Vgpr { first, .. }) => {
                for (i, d) in acc.iter_mut().enumerate().take(dwords) {
                    *d = *self.v(usize::from(first) + i)?;
                }
            }
            Some(o) => {
                let v = self.sread(o, SrcType::Int, false) as u32;
                acc = [[v; WAVE_SIZE]; 4];
            }
            None => {}
        }
        let Some(Operand::Vgpr { first: d, .. }) = opnd(c, Field::D) else {
            return Err(illegal(self.pc, c));
        };
        let mut out = [[0u32; WAVE_SIZE]; 4];
        for l in 0..WAVE_SIZE {
            if op == Op::VMqsadU32U8 {
                let r =
                    media::mqsad_u32_u8(a[l], b[l], [acc[0][l], acc[1][l], acc[2][l], acc[3][l]]);
                for (i, x) in r.into_iter().enumerate() {
                    out[i][l] = x;
                }
            } else {
                let cin = u64::from(acc[0][l]) | u64::from(acc[1][l]) << 32;
                let r = media::qsad_pk_u16_u8(a[l], b[l], cin, op == Op::VMqsadPkU16U8);
                out[0][l] = r as u32;
                out[1][l] = (r >> 32) as u32;
            }
        }
        let exec = self.exec();
        for (i, r) in out.iter().enumerate().take(dwords) {
            write_masked(self.v_mut(usize::from(d) + i)?, r, exec);
        }
        Ok(())
    }

    /// `v_swap_b32`: VDST and SRC0 (both VGPRs) exchange their values in the EXEC lanes.
    fn swap(&mut self, c: &Cached) -> R<()> {
        let (Some(Operand::Vgpr { first: d, .. }), Some(Operand::Vgpr { first: s, .. })) =
            (opnd(c, Field::D), opnd(c, Field::A))
        else {
            return Err(illegal(self.pc, c));
        };
        let (d, s) = (usize::from(d), usize::from(s));
        let exec = self.exec();
        let (x, y) = (*self.v(d)?, *self.v(s)?);
        write_masked(self.v_mut(d)?, &y, exec);
        write_masked(self.v_mut(s)?, &x, exec);
        Ok(())
    }

    /// A 32-bit source as lanes: a reference into the register file when it is a plain
    /// VGPR, else materialised (constant splat, modifiers) into `store`.
    #[inline(always)]
    fn src_ref<'a>(
        &'a self,
        c: &Cached,
        field: Field,
        index: u32,
        m: Mods,
        store: &'a mut Lanes,
    ) -> R<&'a Lanes> {
        let mods = ((m.abs | m.neg) >> index) & 1 != 0;
        match opnd(c, field) {
            Some(Operand::Vgpr { first, .. }) if !mods && self.sdwa_src.is_none() => {
                self.v(usize::from(first))
            }
            _ => {
                self.src32_into(c, field, index, m, store)?;
                Ok(store)
            }
        }
    }

    #[inline(always)]
    fn finish32(&mut self, c: &Cached, mut r: Lanes, m: Mods, float_out: bool) -> R<()> {
        if float_out && (m.clamp || m.omod != 0) {
            for x in r.iter_mut() {
                *x = fp::modify_out32(f32::from_bits(*x), m.omod, m.clamp, self.mode).to_bits();
            }
        }
        let exec = self.exec();
        match opnd(c, Field::D) {
            Some(Operand::Vgpr { first, .. }) => {
                write_masked(self.v_mut(usize::from(first))?, &r, exec)
            }
            Some(d) => self.vwrite32(d, &r, exec)?,
            None => {}
        }
        Ok(())
    }

    #[inline(never)]
    fn lanes1(&mut self, c: &Cached, m: Mods, float_out: bool, f: impl Fn(u32) -> u32) -> R<()> {
        let mut sa = [0u32; WAVE_SIZE];
        let a = self.src_ref(c, Field::A, 0, m, &mut sa)?;
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l]);
        }
        self.finish32(c, r, m, float_out)
    }

    #[inline(never)]
    fn lanes2(
        &mut self,
        c: &Cached,
        m: Mods,
        float_out: bool,
        f: impl Fn(u32, u32) -> u32,
    ) -> R<()> {
        let (mut sa, mut sb) = ([0u32; WAVE_SIZE], [0u32; WAVE_SIZE]);
        let a = self.src_ref(c, Field::A, 0, m, &mut sa)?;
        let b = self.src_ref(c, Field::B, 1, m, &mut sb)?;
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l], b[l]);
        }
        self.finish32(c, r, m, float_out)
    }

    #[inline(never)]
    fn lanes3(
        &mut self,
        c: &Cached,
        m: Mods,
        float_out: bool,
        f: impl Fn(u32, u32, u32) -> u32,
    ) -> R<()> {
        let (mut sa, mut sb, mut sc) = ([0u32; WAVE_SIZE], [0u32; WAVE_SIZE], [0u32; WAVE_SIZE]);
        let a = self.src_ref(c, Field::A, 0, m, &mut sa)?;
        let b = self.src_ref(c, Field::B, 1, m, &mut sb)?;
        let d = self.src_ref(c, Field::C, 2, m, &mut sc)?;
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l], b[l], d[l]);
        }
        self.finish32(c, r, m, float_out)
    }

    #[inline(never)]
    fn lanes64_1(&mut self, c: &Cached, m: Mods, f: impl Fn(u64) -> u64) -> R<()> {
        let a = self.src64(c, Field::A, 0, m)?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l]);
        }
        self.dst64(c, r, m, true)
    }

    #[inline(never)]
    fn lanes64_2(&mut self, c: &Cached, m: Mods, f: impl Fn(u64, u64) -> u64) -> R<()> {
        let a = self.src64(c, Field::A, 0, m)?;
        let b = self.src64(c, Field::B, 1, m)?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l], b[l]);
        }
        self.dst64(c, r, m, true)
    }

    #[inline(never)]
    fn lanes64_3(&mut self, c: &Cached, m: Mods, f: impl Fn(u64, u64, u64) -> u64) -> R<()> {
        let a = self.src64(c, Field::A, 0, m)?;
        let b = self.src64(c, Field::B, 1, m)?;
        let d = self.src64(c, Field::C, 2, m)?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l], b[l], d[l]);
        }
        self.dst64(c, r, m, true)
    }

    #[inline(never)]
    fn lanes_widen(&mut self, c: &Cached, m: Mods, f: impl Fn(u32) -> u64) -> R<()> {
        let a = self.src32(c, Field::A, 0, m)?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l]);
        }
        self.dst64(c, r, m, false)
    }

    #[inline(never)]
    fn lanes_narrow(
        &mut self,
        c: &Cached,
        m: Mods,
        float_out: bool,
        f: impl Fn(u64) -> u32,
    ) -> R<()> {
        let a = self.src64(c, Field::A, 0, m)?;
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l]);
        }
        self.dst32(c, r, m, float_out)
    }
}

impl Wave {
    /// An SDWA-encoded VOP1/VOP2: sources are byte/word selected (zero- or sign-extended,
    /// then abs/neg for float ops), the operation runs on them, and the result's low field is
    /// placed at DST_SEL with the other bits padded, sign-extended or preserved
    /// (DST_UNUSED).
    fn sdwa(&mut self, c: &Cached) -> R<()> {
        if let (Enc::Vopc, Some(cmp)) = (c.inst.enc, c.cmp) {
            return self.sdwa_vopc(c, cmp);
        }
        if !matches!(c.inst.enc, Enc::Vop1 | Enc::Vop2) {
            return Err(illegal(self.pc, c));
        }
        let w = c.inst.words[1];
        let dst_sel = (w >> 8) & 7;
        let dst_unused = (w >> 11) & 3;
        if dst_sel > 6 || dst_unused > 2 || (w >> 16) & 7 > 6 || (w >> 24) & 7 > 6 {
            return Err(illegal(self.pc, c));
        }
        let float = c.src_type != SrcType::Int;
        let mut srcs = Box::new([[0u32; WAVE_SIZE]; 2]);
        for (i, field) in [Field::A, Field::B].into_iter().enumerate() {
            let Some(op) = opnd(c, field) else { continue };
            let raw = self.vread32(op, c.src_type)?;
            let shift = 8 * i as u32;
            let sel = (w >> (16 + shift)) & 7;
            let sext = (w >> (19 + shift)) & 1 != 0;
            let neg = (w >> (20 + shift)) & 1 != 0;
            let abs = (w >> (21 + shift)) & 1 != 0;
            let sign_bit = if c.src_type == SrcType::F16 {
                0x8000
            } else {
                0x8000_0000
            };
            for l in 0..WAVE_SIZE {
                let mut v = sdwa_select(raw[l], sel, sext && !float);
                if float {
                    if abs {
                        v &= !sign_bit;
                    }
                    if neg {
                        v ^= sign_bit;
                    }
                }
                srcs[i][l] = v;
            }
        }
        let dst = match opnd(c, Field::D) {
            Some(Operand::Vgpr { first, .. }) => usize::from(first),
            _ => return Err(illegal(self.pc, c)),
        };
        let old = *self.v(dst)?;
        self.sdwa_src = Some(srcs);
        let result = self.valu(c);
        self.sdwa_src = None;
        result?;
        let exec = self.exec();
        let new = *self.v(dst)?;
        let out = self.v_mut(dst)?;
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 != 0 {
                out[l] = sdwa_place(new[l], old[l], dst_sel, dst_unused);
            }
        }
        Ok(())
    }
}

impl Wave {
    /// An SDWA-encoded VOPC: both sources are selected and extended (then abs/neg for float
    /// compares) as for VOP1/VOP2; the result mask goes to VCC, or with SD (`[15]`) to the
    /// scalar destination SDST (`[14:8]`). There is no destination select.
    fn sdwa_vopc(&mut self, c: &Cached, cmp: super::cache::Cmp) -> R<()> {
        let w = c.inst.words[1];
        if (w >> 16) & 7 > 6 || (w >> 24) & 7 > 6 {
            return Err(illegal(self.pc, c));
        }
        if matches!(cmp.ty, CmpType::F64 | CmpType::I64 | CmpType::U64) {
            return Err(illegal(self.pc, c)); // not encodable: SDWA has 32-bit sources
        }
        let float = c.src_type != SrcType::Int;
        let sign_bit = if c.src_type == SrcType::F16 {
            0x8000
        } else {
            0x8000_0000
        };
        let mut srcs = Box::new([[0u32; WAVE_SIZE]; 2]);
        for (i, field) in [Field::A, Field::B].into_iter().enumerate() {
            let Some(op) = opnd(c, field) else { continue };
            let raw = self.vread32(op, c.src_type)?;
            let shift = 8 * i as u32;
            let sel = (w >> (16 + shift)) & 7;
            let sext = (w >> (19 + shift)) & 1 != 0;
            let neg = (w >> (20 + shift)) & 1 != 0;
            let abs = (w >> (21 + shift)) & 1 != 0;
            for l in 0..WAVE_SIZE {
                let mut v = sdwa_select(raw[l], sel, sext && !float);
                if float {
                    if abs {
                        v &= !sign_bit;
                    }
                    if neg {
                        v ^= sign_bit;
                    }
                }
                srcs[i][l] = v;
            }
        }
        let vcc_before = self.vcc();
        self.sdwa_src = Some(srcs);
        let result = self.vcmp(c, cmp);
        self.sdwa_src = None;
        result?;
        if (w >> 15) & 1 != 0 {
            // vcmp wrote the mask to VCC: move it to SDST
            let mask = self.vcc();
            self.set_vcc(vcc_before);
            self.set_sgpr64(((w >> 8) & 0x7f) as usize, mask);
        }
        Ok(())
    }
}

impl Wave {
    /// A VOP1/VOP2 with a DPP dword: source 0 is read from the lane its DPP control names
    /// (`dpp_gather`), both sources get the dword's float neg/abs, and only the lanes whose
    /// row and bank are enabled (and whose source lane is valid, unless `bound_ctrl`) write.
    fn dpp(&mut self, c: &Cached) -> R<()> {
        if !matches!(c.inst.enc, Enc::Vop1 | Enc::Vop2) {
            return Err(illegal(self.pc, c)); // VOPC DPP is not modelled
        }
        // 64-bit operands (gfx90a's 64-bit DPP) are not modelled.
        let wide = [Field::A, Field::B, Field::D]
            .into_iter()
            .any(|f| matches!(opnd(c, f), Some(Operand::Vgpr { count, .. }) if count > 1));
        if wide {
            return self.dpp64(c);
        }
        let w = c.inst.words[1];
        let ctrl = (w >> 8) & 0x1FF;
        // gfx90a adds row_newbcast:n (0x150 + n) for 32-bit DPP too
        let newbcast = self.target == crate::Target::Gfx90a && (0x150..=0x15f).contains(&ctrl);
        if !super::lanes::dpp_ctrl_is_valid(ctrl) && !newbcast {
            return Err(illegal(self.pc, c));
        }
        let bound_ctrl = (w >> 19) & 1 != 0;
        let bank_mask = (w >> 24) & 0xF;
        let row_mask = (w >> 28) & 0xF;
        let float = c.src_type != SrcType::Int;
        let sign_bit = if c.src_type == SrcType::F16 {
            0x8000
        } else {
            0x8000_0000
        };
        let exec = self.exec();
        let mut srcs = Box::new([[0u32; WAVE_SIZE]; 2]);
        let mut write = exec;
        for (i, field) in [Field::A, Field::B].into_iter().enumerate() {
            let Some(op) = opnd(c, field) else { continue };
            let raw = self.vread32(op, c.src_type)?;
            let lanes = if i == 0 {
                let (gathered, mask) =
                    super::lanes::dpp_gather(&raw, ctrl, exec, row_mask, bank_mask, bound_ctrl);
                write &= mask;
                gathered
            } else {
                raw
            };
            let neg = (w >> (20 + 2 * i)) & 1 != 0;
            let abs = (w >> (21 + 2 * i)) & 1 != 0;
            for (l, v) in lanes.iter().enumerate() {
                let mut v = *v;
                if float {
                    if abs {
                        v &= !sign_bit;
                    }
                    if neg {
                        v ^= sign_bit;
                    }
                }
                srcs[i][l] = v;
            }
        }
        // Run the operation on the writing lanes only, then give EXEC back.
        self.set_exec(write);
        self.sdwa_src = Some(srcs);
        let result = self.valu(c);
        self.sdwa_src = None;
        self.set_exec(exec);
        result
    }
}

impl Wave {
    /// gfx90a's 64-bit DPP (row_newbcast only): source 0 (one or two VGPRs) is read from lane
    /// n of each row. The permuted source is put in place of source 0's registers while the
    /// operation runs on the writing lanes, then those registers get their values back except
    /// where the instruction wrote its own destination. Operand modifiers in the DPP dword and
    /// other sources overlapping source 0 are not modelled (an illegal-instruction stop).
    fn dpp64(&mut self, c: &Cached) -> R<()> {
        let w = c.inst.words[1];
        let ctrl = (w >> 8) & 0x1ff;
        let newbcast = (0x150..=0x15f).contains(&ctrl);
        if self.target != crate::Target::Gfx90a || !newbcast || (w >> 20) & 0xf != 0 {
            return Err(illegal(self.pc, c));
        }
        let (first, count) = match opnd(c, Field::A) {
            Some(Operand::Vgpr { first, count }) => (usize::from(first), usize::from(count)),
            _ => return Err(illegal(self.pc, c)),
        };
        let src0 = first..first + count;
        let range_of = |f: Field| match opnd(c, f) {
            Some(Operand::Vgpr { first, count }) => {
                Some(usize::from(first)..usize::from(first) + usize::from(count))
            }
            _ => None,
        };
        let overlaps = |r: Option<std::ops::Range<usize>>| {
            r.is_some_and(|r| r.start < src0.end && src0.start < r.end)
        };
        let dst = range_of(Field::D);
        // v_fmac_f64 also reads its destination
        let reads_dst = c.inst.op == Op::VFmacF64;
        if overlaps(range_of(Field::B)) || (reads_dst && overlaps(dst.clone())) {
            return Err(illegal(self.pc, c));
        }
        let exec = self.exec();
        let bound_ctrl = (w >> 19) & 1 != 0;
        let bank_mask = (w >> 24) & 0xf;
        let row_mask = (w >> 28) & 0xf;
        let mut write = exec;
        let mut saved = Vec::with_capacity(count);
        let mut gathered = Vec::with_capacity(count);
        for r in src0.clone() {
            let raw = *self.v(r)?;
            let (g, m) = lanes::dpp_gather(&raw, ctrl, exec, row_mask, bank_mask, bound_ctrl);
            write &= m;
            saved.push(raw);
            gathered.push(g);
        }
        for (r, g) in src0.clone().zip(&gathered) {
            *self.v_mut(r)? = *g;
        }
        self.set_exec(write);
        self.in_dpp64 = true;
        let result = self.valu(c);
        self.in_dpp64 = false;
        self.set_exec(exec);
        for (r, old) in src0.zip(&saved) {
            let written = dst.as_ref().is_some_and(|d| d.contains(&r));
            let reg = self.v_mut(r)?;
            for l in 0..WAVE_SIZE {
                if !(written && (write >> l) & 1 != 0) {
                    reg[l] = old[l];
                }
            }
        }
        result
    }
}

/// An SDWA source select: 0–3 a byte, 4–5 a word, 6 the dword; zero- or sign-extended.
fn sdwa_select(v: u32, sel: u32, sext: bool) -> u32 {
    let (shift, width) = match sel {
        0..=3 => (8 * sel, 8),
        4 | 5 => (16 * (sel - 4), 16),
        _ => return v,
    };
    let field = (v >> shift) & ((1 << width) - 1);
    if sext {
        (((field << (32 - width)) as i32) >> (32 - width)) as u32
    } else {
        field
    }
}

/// Places an SDWA result's low field at `sel`; `unused`: 0 pad with zeros, 1 sign-extend
/// the field upward (zeros below), 2 keep `old`'s other bits.
fn sdwa_place(result: u32, old: u32, sel: u32, unused: u32) -> u32 {
    let (shift, width) = match sel {
        0..=3 => (8 * sel, 8),
        4 | 5 => (16 * (sel - 4), 16),
        _ => return result,
    };
    let mask = ((1u32 << width) - 1) << shift;
    let placed = (result << shift) & mask;
    match unused {
        0 => placed,
        1 => {
            let top = shift + width;
            let signed = ((result << (32 - width)) as i32) >> (32 - width);
            let above = if top >= 32 {
                0
            } else {
                ((signed as u32) << shift) & !(u32::MAX >> (32 - top))
            };
            placed | above
        }
        _ => placed | (old & !mask),
    }
}

// ------------------------------------------------------------ vector memory

/// Fields of a buffer resource descriptor (V#).
#[derive(Clone, Copy, Debug)]
struct BufferResource {
    base: u64,
    stride: u64,
    swizzle: bool,
    num_records: u64,
    index_stride: u64,
    add_tid: bool,
}

impl BufferResource {
    fn from_dwords(d: [u32; 4]) -> Self {
        BufferResource {
            base: u64::from(d[0]) | (u64::from(d[1] & 0xffff) << 32),
            stride: u64::from((d[1] >> 16) & 0x3fff),
            swizzle: (d[1] >> 31) & 1 != 0,
            num_records: u64::from(d[2]),
            index_stride: 8 << ((d[3] >> 21) & 3),
            add_tid: (d[3] >> 23) & 1 != 0,
        }
    }
}

impl Wave {
    /// Byte addresses of a MUBUF access per lane, and the lanes in range.
    fn buffer_addresses(&self, c: &Cached) -> R<([u64; WAVE_SIZE], u64)> {
        let [w0, w1] = c.inst.words;
        let offset12 = u64::from(w0 & 0xfff);
        let offen = (w0 >> 12) & 1 != 0;
        let idxen = (w0 >> 13) & 1 != 0;
        let vaddr = (w1 & 0xff) as usize;
        let srsrc = (((w1 >> 16) & 0x1f) << 2) as usize;
        let soffset_field = w1 >> 24;
        let soffset = self.sread(scalar_operand_at(soffset_field), SrcType::Int, false);
        let rsrc = BufferResource::from_dwords([
            self.sgpr[srsrc],
            self.sgpr[srsrc + 1],
            self.sgpr[srsrc + 2],
            self.sgpr[srsrc + 3],
        ]);
        let mut vidx = [0u32; WAVE_SIZE];
        let mut voff = [0u32; WAVE_SIZE];
        match (idxen, offen) {
            (true, true) => {
                vidx = *self.v(vaddr)?;
                voff = *self.v(vaddr + 1)?;
            }
            (true, false) => vidx = *self.v(vaddr)?,
            (false, true) => voff = *self.v(vaddr)?,
            (false, false) => {}
        }
        let exec = self.exec();
        let mut addrs = [0u64; WAVE_SIZE];
        let mut in_range = 0u64;
        for l in 0..WAVE_SIZE {
            let index = u64::from(vidx[l]) + if rsrc.add_tid { l as u64 } else { 0 };
            let offset = u64::from(voff[l]) + offset12;
            let (addr, ok) = if rsrc.swizzle {
                let es = 4u64;
                let is = rsrc.index_stride;
                let (imsb, ilsb) = (index / is, index % is);
                let (omsb, olsb) = (offset / es, offset % es);
                let a = rsrc
                    .base
                    .wrapping_add(soffset)
                    .wrapping_add(
                        (imsb.wrapping_mul(rsrc.stride).wrapping_add(omsb * es)).wrapping_mul(is),
                    )
                    .wrapping_add(ilsb * es + olsb);
                (a, rsrc.stride == 0 || index < rsrc.num_records)
            } else if rsrc.stride == 0 {
                (
                    rsrc.base.wrapping_add(soffset).wrapping_add(offset),
                    offset < rsrc.num_records,
                )
            } else {
                (
                    rsrc.base
                        .wrapping_add(soffset)
                        .wrapping_add(index.wrapping_mul(rsrc.stride))
                        .wrapping_add(offset),
                    index < rsrc.num_records,
                )
            };
            addrs[l] = addr;
            if ok && (exec >> l) & 1 != 0 {
                in_range |= 1 << l;
            }
        }
        Ok((addrs, in_range))
    }

    fn mubuf<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        // Cache write-back/invalidate: the WaveEnv's memory is coherent, nothing to do.
        if matches!(
            c.inst.op,
            Op::BufferWbinvl1 | Op::BufferWbinvl1Vol | Op::BufferWbl2 | Op::BufferInvl2
        ) {
            return Ok(());
        }
        if format::is_format(c.inst.op) {
            return self.mubuf_format(c, env);
        }
        let [w0, w1] = c.inst.words;
        if (w0 >> 16) & 1 != 0 {
            return self.mubuf_load_to_lds(c, env);
        }
        let vdata = ((w1 >> 8) & 0xff) as usize;
        let glc = (w0 >> 14) & 1 != 0;
        let (addrs, mask) = self.buffer_addresses(c)?;
        let acc = self.target == crate::Target::Gfx90a && (w1 >> 23) & 1 != 0;
        self.vmem(c, env, &addrs, mask, vdata, glc, acc)
    }

    /// A MUBUF load with the `lds` bit ("LDS DMA": `buffer_load_{ubyte,sbyte,ushort,sshort,
    /// dword} ... lds`, which Tensile's rocBLAS kernels use): the data goes to LDS, not to a
    /// VGPR (VDATA is ignored; llvm-mc prints none).
    ///
    /// - The memory address, the buffer's range check and its out-of-range rule (the lane's
    ///   data is 0) are those of the plain load ([`Wave::buffer_addresses`]).
    /// - Lane `l` writes one dword at LDS byte `M0[15:0] + OFFSET + 4 * l` (the workgroup's
    ///   LDS base is 0 here): the LDS address is "M0 + inst_offset + (TIDinWave * 4)" (LLVM
    ///   review D125409, S. Mekhanoshin, AMD, on why wider LDS loads are useless); "LDS_ADDR
    ///   = LDS_BASE + (M0&0xffff) + LANEID*4" (CLRX, `doc/GcnMemHandling.md`, which leaves
    ///   out the instruction offset that D125409 and LLVM's `AMDGPUDMAOperations` ("offset
    ///   applied to both src and LDS address") include); the stride is 4 bytes for every
    ///   size up to a dword (`AMDGPUDMAOperations`: "implicitly offset by 4 * lane_id bytes
    ///   for sizes up to 4 bytes").
    /// - A byte or short is stored as a whole dword, zero-extended (CLRX, as above); the
    ///   signed forms are sign-extended as the same load into a VGPR is (the model's reading:
    ///   no source at hand says otherwise).
    /// - EXEC-masked lanes write nothing. A dword past the LDS allocation follows the DS
    ///   rule ([`lds_place`]): dropped, a fault only in a strict world.
    ///
    /// Wider loads (`dwordx2`..`x4`), D16 and format loads with the bit stay illegal:
    /// llvm-mc-15 rejects the first two with `lds` on gfx9, and D125409 calls wider ones
    /// useless (neighbouring lanes overwrite each other).
    fn mubuf_load_to_lds<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let MemKind::Load {
            bytes: bytes @ (1 | 2 | 4),
            signed,
            half: D16::Full,
        } = c.mem
        else {
            return Err(illegal(self.pc, c));
        };
        let offset12 = c.inst.words[0] & 0xfff;
        let (addrs, in_range) = self.buffer_addresses(c)?;
        let mut data = [[0u32; WAVE_SIZE]; 1];
        env.load(&addrs, in_range, bytes, &mut data)?;
        let exec = self.exec();
        let first = (self.m0() & 0xffff) + offset12;
        let lds_len = env.lds().len();
        let strict = env.lds_strict();
        let mut dropped = None;
        for (l, &raw) in data[0].iter().enumerate() {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            let value = match (in_range >> l) & 1 {
                0 => 0,
                _ if signed => sign_extend_load(raw, bytes),
                _ => raw,
            };
            let a = first + 4 * l as u32;
            if let Some(p) = lds_place(a, 4, lds_len, strict, &mut dropped)? {
                env.lds()[p..p + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
        if let Some(offset) = dropped {
            env.lds_out_of_range(offset);
        }
        Ok(())
    }

    fn flat<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let [w0, w1] = c.inst.words;
        let vaddr = (w1 & 0xff) as usize;
        let vdata = ((w1 >> 8) & 0xff) as usize;
        let saddr = ((w1 >> 16) & 0x7f) as usize;
        let vdst = (w1 >> 24) as usize;
        let glc = (w0 >> 16) & 1 != 0;
        let offset: i64 = if c.inst.enc == Enc::Flat {
            i64::from(w0 & 0xfff)
        } else {
            i64::from(((w0 & 0x1fff) << 19) as i32 >> 19)
        };
        if c.inst.enc == Enc::Global && self.global_dword_run(c, env, w1, offset)? {
            return Ok(());
        }
        let lo = self.v(vaddr)?;
        // built lane by lane (no zeroing of the array first)
        let addrs: [u64; WAVE_SIZE] = if saddr != 0x7f && c.inst.enc == Enc::Global {
            let base = self.sgpr64(saddr);
            std::array::from_fn(|l| {
                base.wrapping_add(u64::from(lo[l]))
                    .wrapping_add_signed(offset)
            })
        } else {
            let hi = self.v(vaddr + 1)?;
            std::array::from_fn(|l| {
                (u64::from(lo[l]) | (u64::from(hi[l]) << 32)).wrapping_add_signed(offset)
            })
        };
        let exec = self.exec();
        // loads write VDST; stores and atomics read DATA
        let data_reg = match c.mem {
            MemKind::Load { .. } => vdst,
            _ => vdata,
        };
        let acc = self.target == crate::Target::Gfx90a && (w1 >> 23) & 1 != 0;
        if c.inst.enc == Enc::Flat && self.sh_mem_bases != 0 {
            // lanes inside the shared (LDS) or private (scratch) aperture go there
            let shared = u64::from(self.sh_mem_bases >> 16) << 48;
            let private = u64::from(self.sh_mem_bases & 0xffff) << 48;
            let in_aperture = |a: u64| a >> 32 == shared >> 32 || a >> 32 == private >> 32;
            if (0..WAVE_SIZE).any(|l| (exec >> l) & 1 != 0 && in_aperture(addrs[l])) {
                let regs = (data_reg, vdata, vdst);
                return self.flat_routed(c, env, &addrs, exec, regs, glc, acc);
            }
        }
        if let MemKind::Atomic { .. } = c.mem {
            return self.vatomic(c, env, &addrs, exec, vdata, vdst, glc, acc);
        }
        self.vmem(c, env, &addrs, exec, data_reg, glc, acc)
    }

    /// A GLOBAL dword load or store of the whole wave whose lanes address one run of memory
    /// (lane `l` at lane 0's address + 4 `l`, the compiler's `a[i]` over consecutive `i`),
    /// through [`WaveEnv::load_run`] / [`WaveEnv::store_run`]: no 64-bit lane addresses are
    /// built. `Ok(false)` (nothing done) for every other access, or when the environment has
    /// no quick way: the general path runs it then, with the same result.
    fn global_dword_run<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        w1: u32,
        offset: i64,
    ) -> R<bool> {
        let load = match c.mem {
            MemKind::Load {
                bytes: 4,
                half: D16::Full,
                ..
            } => true,
            MemKind::Store {
                bytes: 4,
                half: D16::Full,
            } => false,
            _ => return Ok(false),
        };
        let acc = self.target == crate::Target::Gfx90a && (w1 >> 23) & 1 != 0;
        if acc || self.exec() != u64::MAX {
            return Ok(false);
        }
        let saddr = ((w1 >> 16) & 0x7f) as usize;
        let vaddr = (w1 & 0xff) as usize;
        let Ok(lo) = self.v(vaddr) else {
            return Ok(false);
        };
        // lane l's low half is lane 0's + 4l without wrapping, the high halves all equal
        let first = lo[0];
        if first.checked_add(4 * (WAVE_SIZE as u32 - 1)).is_none() {
            return Ok(false);
        }
        let mut diff = 0u32;
        let mut want = first;
        for &v in lo {
            diff |= v ^ want;
            want = want.wrapping_add(4);
        }
        let start = if saddr != 0x7f {
            self.sgpr64(saddr).wrapping_add(u64::from(first))
        } else {
            let Ok(hi) = self.v(vaddr + 1) else {
                return Ok(false);
            };
            let top = hi[0];
            for &v in hi {
                diff |= v ^ top;
            }
            u64::from(first) | u64::from(top) << 32
        };
        let start = start.wrapping_add_signed(offset);
        if diff != 0 || start.checked_add(4 * (WAVE_SIZE as u64 - 1)).is_none() {
            return Ok(false);
        }
        if load {
            // Straight into the destination: `load_run` writes nothing when it declines. (A
            // destination outside the VGPRs: the general path reports it.)
            let vdst = (w1 >> 24) as usize;
            let Ok(dst) = self.v_mut(vdst) else {
                return Ok(false);
            };
            Ok(env.load_run(start, dst))
        } else {
            let vdata = ((w1 >> 8) & 0xff) as usize;
            match self.v(vdata) {
                Ok(data) => Ok(env.store_run(start, data)),
                Err(_) => Ok(false),
            }
        }
    }

    /// Loads and stores of MUBUF/FLAT/GLOBAL: `reg` is the data (store) or destination (load)
    /// VGPR.
    #[allow(clippy::too_many_arguments)]
    fn vmem<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        addrs: &[u64; WAVE_SIZE],
        mask: u64,
        reg: usize,
        glc: bool,
        acc: bool,
    ) -> R<()> {
        match c.mem {
            MemKind::Load {
                bytes,
                signed,
                half,
            } => {
                let dwords = bytes.div_ceil(4) as usize;
                // one dword (the common case) zeroes one row, not four
                let (mut one, mut four);
                let out: &mut [[u32; WAVE_SIZE]] = if dwords <= 1 {
                    one = [[0u32; WAVE_SIZE]; 1];
                    &mut one[..dwords]
                } else {
                    four = [[0u32; WAVE_SIZE]; 4];
                    &mut four[..dwords]
                };
                env.load(addrs, mask, bytes, out)?;
                if signed {
                    for v in out[0].iter_mut() {
                        *v = sign_extend_load(*v, bytes);
                    }
                }
                // lanes out of buffer range read 0
                let exec = self.exec();
                for (i, d) in out.iter_mut().enumerate() {
                    let dst = self.data_reg_mut(acc, reg + i)?;
                    if half == D16::Full {
                        // the same, as a copy the compiler vectorises
                        if mask & exec != exec {
                            for (l, v) in d.iter_mut().enumerate() {
                                *v &= 0u32.wrapping_sub(((mask >> l) & 1) as u32);
                            }
                        }
                        write_masked(dst, d, exec);
                        continue;
                    }
                    for l in 0..WAVE_SIZE {
                        if (exec >> l) & 1 != 0 {
                            let v = if (mask >> l) & 1 != 0 { d[l] } else { 0 };
                            dst[l] = match half {
                                D16::Full => v,
                                D16::Lo => (dst[l] & 0xffff_0000) | (v & 0xffff),
                                D16::Hi => (dst[l] & 0xffff) | (v << 16),
                            };
                        }
                    }
                }
                Ok(())
            }
            MemKind::Store { bytes, half } => {
                let dwords = bytes.div_ceil(4) as usize;
                if dwords == 1 && half != D16::Hi {
                    // one whole dword per lane: the register itself is the data
                    let data = self.data_reg(acc, reg)?;
                    env.store(addrs, mask, bytes, std::slice::from_ref(data))?;
                    return Ok(());
                }
                let mut data = [[0u32; WAVE_SIZE]; 4];
                for (i, d) in data[..dwords].iter_mut().enumerate() {
                    *d = *self.data_reg(acc, reg + i)?;
                }
                if half == D16::Hi {
                    data[0].iter_mut().for_each(|v| *v >>= 16);
                }
                env.store(addrs, mask, bytes, &data[..dwords])?;
                Ok(())
            }
            MemKind::Atomic { .. } => {
                // MUBUF atomics: VDATA holds the source and receives the return value
                self.vatomic(c, env, addrs, mask, reg, reg, glc, acc)
            }
            MemKind::Other => Err(illegal(self.pc, c)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn vatomic<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        addrs: &[u64; WAVE_SIZE],
        mask: u64,
        data: usize,
        ret: usize,
        glc: bool,
        acc: bool,
    ) -> R<()> {
        let MemKind::Atomic { op, wide } = c.mem else {
            return Err(illegal(self.pc, c));
        };
        let n = if wide { 2 } else { 1 };
        let read = |w: &Wave, r: usize| -> R<[u64; WAVE_SIZE]> {
            let mut v = [0u64; WAVE_SIZE];
            let lo = w.data_reg(acc, r)?;
            for l in 0..WAVE_SIZE {
                v[l] = u64::from(lo[l]);
            }
            if wide {
                let hi = w.data_reg(acc, r + 1)?;
                for l in 0..WAVE_SIZE {
                    v[l] |= u64::from(hi[l]) << 32;
                }
            }
            Ok(v)
        };
        let src = read(self, data)?;
        // cmpswap: DATA = {src, cmp}
        let cmp = if op == AtomicOp::CmpSwap {
            read(self, data + n)?
        } else {
            [0u64; WAVE_SIZE]
        };
        let mut old = [0u64; WAVE_SIZE];
        env.atomic(
            &AtomicRequest {
                op,
                wide,
                exec: mask,
                addresses: addrs,
                src: &src,
                cmp: &cmp,
            },
            &mut old,
        )?;
        if glc {
            let exec = self.exec();
            let mut lo = [0u32; WAVE_SIZE];
            let mut hi = [0u32; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                lo[l] = old[l] as u32;
                hi[l] = (old[l] >> 32) as u32;
            }
            write_masked(self.data_reg_mut(acc, ret)?, &lo, exec);
            if wide {
                write_masked(self.data_reg_mut(acc, ret + 1)?, &hi, exec);
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ LDS

    /// `ds_gws_*`: the request goes to the dispatcher (the GWS resources are the queue's).
    fn gws(&mut self, c: &Cached, next: u64) -> R<Flow> {
        use crate::exec::fault::{GwsOp, GwsRequest, GWS_RESOURCES};
        let [w0, w1] = c.inst.words;
        let op = match c.inst.op {
            Op::DsGwsInit => GwsOp::Init,
            Op::DsGwsSemaV => GwsOp::SemaV,
            Op::DsGwsSemaBr => GwsOp::SemaBr,
            Op::DsGwsSemaP => GwsOp::SemaP,
            Op::DsGwsBarrier => GwsOp::Barrier,
            Op::DsGwsSemaReleaseAll => GwsOp::SemaReleaseAll,
            _ => return Err(illegal(self.pc, c)),
        };
        let value = if c.inst.row().slots.is_empty() {
            0
        } else {
            let acc = self.target == crate::Target::Gfx90a && (w0 >> 25) & 1 != 0;
            let exec = self.exec();
            let lane = if exec == 0 {
                0
            } else {
                exec.trailing_zeros() as usize
            };
            self.data_reg(acc, (w1 & 0xff) as usize)?[lane]
        };
        let resource = (((self.m0() >> 16) & 0x3f) + (w0 & 0xffff)) % GWS_RESOURCES;
        self.pc = next;
        Ok(Flow::Stop(Stop::Gws(GwsRequest {
            op,
            resource,
            value,
        })))
    }

    fn ds<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let [w0, w1] = c.inst.words;
        if (w0 >> 16) & 1 != 0 {
            return Err(illegal(self.pc, c)); // GDS
        }
        // gfx90a ACC bit: DATA0/DATA1 and VDST are AGPRs (ADDR stays a VGPR)
        let acc = self.target == crate::Target::Gfx90a && (w0 >> 25) & 1 != 0;
        let offset0 = w0 & 0xff;
        let offset1 = (w0 >> 8) & 0xff;
        let offset = w0 & 0xffff;
        let addr_r = (w1 & 0xff) as usize;
        let data0 = ((w1 >> 8) & 0xff) as usize;
        let data1 = ((w1 >> 16) & 0xff) as usize;
        let vdst = (w1 >> 24) as usize;
        let exec = self.exec();
        let op = c.inst.op;
        match op {
            Op::DsSwizzleB32 => {
                // ds_swizzle_b32 vdst, vaddr: the data comes from ADDR
                let a = *self.v(addr_r)?;
                let r = lanes::swizzle(&a, offset as u16, exec);
                return self.write_d(acc, vdst, &r, exec);
            }
            Op::DsBpermuteB32 | Op::DsPermuteB32 => {
                let a = *self.v(addr_r)?;
                let d = *self.data_reg(acc, data0)?;
                let r = if op == Op::DsBpermuteB32 {
                    lanes::bpermute(&a, &d, offset, exec)
                } else {
                    lanes::permute(&a, &d, offset, exec)
                };
                return self.write_d(acc, vdst, &r, exec);
            }
            _ => {}
        }
        let addr = *self.v(addr_r)?;
        let lds_len = env.lds().len();
        let strict = env.lds_strict();
        // The first lane outside the allocation: the hardware drops its write and reads 0 for
        // it (the ISA guides' out-of-range rules); a strict world stops the wave instead.
        let mut dropped: Option<u32> = None;
        let mut check = |a: u32, n: u32| lds_place(a, n, lds_len, strict, &mut dropped);
        let two = |name: &str| {
            name.contains("2st64") || name.contains("read2") || name.contains("write2")
        };
        let name = op.mnemonic();
        // read2/write2 are the DS ops without a plain MemKind: skip the name tests otherwise
        if matches!(c.mem, MemKind::Other) && two(name) {
            let size: u32 = if name.ends_with("b64") { 8 } else { 4 };
            let scale = if name.contains("st64") {
                size * 64
            } else {
                size
            };
            let dw = (size / 4) as usize;
            let load = name.starts_with("ds_read2");
            let mut out = [[0u32; WAVE_SIZE]; 4];
            let d0 = if load {
                [[0u32; WAVE_SIZE]; 2]
            } else {
                [
                    *self.data_reg(acc, data0)?,
                    if dw == 2 {
                        *self.data_reg(acc, data0 + 1)?
                    } else {
                        [0; WAVE_SIZE]
                    },
                ]
            };
            let d1 = if load {
                [[0u32; WAVE_SIZE]; 2]
            } else {
                [
                    *self.data_reg(acc, data1)?,
                    if dw == 2 {
                        *self.data_reg(acc, data1 + 1)?
                    } else {
                        [0; WAVE_SIZE]
                    },
                ]
            };
            let lds = env.lds();
            for l in 0..WAVE_SIZE {
                if (exec >> l) & 1 == 0 {
                    continue;
                }
                for (half, off) in [(0usize, offset0), (1, offset1)] {
                    let a = addr[l].wrapping_add(off * scale);
                    let Some(base) = check(a, size)? else {
                        continue; // dropped: the read's registers get 0
                    };
                    for d in 0..dw {
                        let p = base + 4 * d;
                        if load {
                            out[half * dw + d][l] =
                                u32::from_le_bytes([lds[p], lds[p + 1], lds[p + 2], lds[p + 3]]);
                        } else {
                            let v = if half == 0 { d0[d][l] } else { d1[d][l] };
                            lds[p..p + 4].copy_from_slice(&v.to_le_bytes());
                        }
                    }
                }
            }
            if load {
                for (i, r) in out[..2 * dw].iter().enumerate() {
                    self.write_d(acc, vdst + i, r, exec)?;
                }
            }
            if let Some(offset) = dropped {
                env.lds_out_of_range(offset);
            }
            return Ok(());
        }
        match c.mem {
            MemKind::Load {
                bytes,
                signed,
                half,
            } => {
                let dwords = bytes.div_ceil(4) as usize;
                let mut out = [[0u32; WAVE_SIZE]; 4];
                let lds = env.lds();
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 0 {
                        continue;
                    }
                    let a = addr[l].wrapping_add(offset);
                    // dropped: the lane reads 0
                    if let Some(base) = check(a, bytes)? {
                        for i in 0..bytes as usize {
                            out[i / 4][l] |= u32::from(lds[base + i]) << (8 * (i % 4));
                        }
                    }
                    if signed {
                        out[0][l] = sign_extend_load(out[0][l], bytes);
                    }
                }
                if half != D16::Full {
                    // d16 reads write one half of VDST and keep the other
                    let old = *self.data_reg(acc, vdst)?;
                    for l in 0..WAVE_SIZE {
                        out[0][l] = match half {
                            D16::Lo => (old[l] & 0xffff_0000) | (out[0][l] & 0xffff),
                            _ => (old[l] & 0xffff) | (out[0][l] << 16),
                        };
                    }
                }
                for (i, r) in out[..dwords].iter().enumerate() {
                    self.write_d(acc, vdst + i, r, exec)?;
                }
                if let Some(offset) = dropped {
                    env.lds_out_of_range(offset);
                }
                Ok(())
            }
            MemKind::Store { bytes, half } => {
                let dwords = bytes.div_ceil(4) as usize;
                let mut data = [[0u32; WAVE_SIZE]; 4];
                for (i, d) in data[..dwords].iter_mut().enumerate() {
                    *d = *self.data_reg(acc, data0 + i)?;
                }
                if half == D16::Hi {
                    data[0].iter_mut().for_each(|v| *v >>= 16);
                }
                let lds = env.lds();
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 0 {
                        continue;
                    }
                    let a = addr[l].wrapping_add(offset);
                    let Some(base) = check(a, bytes)? else {
                        continue; // dropped
                    };
                    for i in 0..bytes as usize {
                        lds[base + i] = (data[i / 4][l] >> (8 * (i % 4))) as u8;
                    }
                }
                if let Some(offset) = dropped {
                    env.lds_out_of_range(offset);
                }
                Ok(())
            }
            MemKind::Atomic { op: aop, wide } => {
                let n = if wide { 8u32 } else { 4 };
                // ds_cmpst: DATA0 is the compare value, DATA1 the value stored on a match
                let cmpst = aop == AtomicOp::CmpSwap;
                let src_reg = if cmpst { data1 } else { data0 };
                let pair = |w: &Wave, r: usize| -> R<(Lanes, Lanes)> {
                    let hi = if wide {
                        *w.data_reg(acc, r + 1)?
                    } else {
                        [0; WAVE_SIZE]
                    };
                    Ok((*w.data_reg(acc, r)?, hi))
                };
                let (src_lo, src_hi) = pair(self, src_reg)?;
                let (cmp_lo, cmp_hi) = if cmpst {
                    pair(self, data0)?
                } else {
                    ([0; WAVE_SIZE], [0; WAVE_SIZE])
                };
                let mut old_lo = [0u32; WAVE_SIZE];
                let mut old_hi = [0u32; WAVE_SIZE];
                let lds = env.lds();
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 0 {
                        continue;
                    }
                    let a = addr[l].wrapping_add(offset);
                    // dropped: no write, and the returned value is 0
                    let Some(base) = check(a, n)? else {
                        continue;
                    };
                    let mut old = 0u64;
                    for i in 0..n as usize {
                        old |= u64::from(lds[base + i]) << (8 * i);
                    }
                    let src = u64::from(src_lo[l]) | (u64::from(src_hi[l]) << 32);
                    let cmp = u64::from(cmp_lo[l]) | (u64::from(cmp_hi[l]) << 32);
                    let new = aop.apply(old, src, cmp, wide);
                    for i in 0..n as usize {
                        lds[base + i] = (new >> (8 * i)) as u8;
                    }
                    old_lo[l] = old as u32;
                    old_hi[l] = (old >> 32) as u32;
                }
                if name.contains("_rtn_") {
                    self.write_d(acc, vdst, &old_lo, exec)?;
                    if wide {
                        self.write_d(acc, vdst + 1, &old_hi, exec)?;
                    }
                }
                if let Some(offset) = dropped {
                    env.lds_out_of_range(offset);
                }
                Ok(())
            }
            MemKind::Other => Err(illegal(self.pc, c)),
        }
    }

    /// Writes a data register (VGPR, or AGPR with the gfx90a ACC bit) in the lanes of `mask`.
    fn write_d(&mut self, acc: bool, index: usize, value: &Lanes, mask: u64) -> R<()> {
        write_masked(self.data_reg_mut(acc, index)?, value, mask);
        Ok(())
    }

    /// A data register of a memory instruction: VGPR, or AGPR when the gfx90a ACC bit is set.
    fn data_reg(&self, acc: bool, index: usize) -> R<&Lanes> {
        if acc {
            self.a(index)
        } else {
            self.v(index)
        }
    }

    fn data_reg_mut(&mut self, acc: bool, index: usize) -> R<&mut Lanes> {
        if acc {
            self.a_mut(index)
        } else {
            self.v_mut(index)
        }
    }
}

/// A scalar operand from an 8-bit SOFFSET-style field (SGPRs, specials and inline integers),
/// read with the decoder's own operand rules; a value no scalar source may hold reads as 0.
fn scalar_operand_at(v: u32) -> Operand {
    crate::decode::scalar_operand(v, 1, &mut None, None).unwrap_or(Operand::IntConst(0))
}
