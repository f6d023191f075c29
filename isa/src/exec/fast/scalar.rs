//! The scalar fast path: the common SALU instructions and the SOPP branches, planned once per
//! code address ([`SFast`], [`Cond`]) to register indices and constants and run with no operand
//! decoding; SCC and the carries come out as the general interpreter's.

use crate::decode::{Instruction, Operand};
use crate::exec::cache::SrcType;
use crate::exec::int;
use crate::exec::operand::{float_const, scalar_index};
use crate::exec::wave::{sreg, Wave};
use crate::table::{Enc, Op};

use super::Plan;

/// A scalar source resolved at cache-build time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SSrc {
    /// A scalar register (or the low register of a pair) by operand number.
    Reg(u8),
    /// A constant, already in the width the op reads.
    K(u64),
}

/// The scalar ops the fast path runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the instructions
pub enum SOp {
    AddU32,
    SubU32,
    AddI32,
    SubI32,
    AddcU32,
    SubbU32,
    MinI32,
    MinU32,
    MaxI32,
    MaxU32,
    MulI32,
    And32,
    Or32,
    Xor32,
    Andn2_32,
    Lshl32,
    Lshr32,
    Ashr32,
    And64,
    Or64,
    Xor64,
    Andn2_64,
    Mov32,
    Mov64,
    Cselect32,
    CmpEq32,
    CmpLg32,
    CmpGtI32,
    CmpGeI32,
    CmpLtI32,
    CmpLeI32,
    CmpGtU32,
    CmpGeU32,
    CmpLtU32,
    CmpLeU32,
    AndSaveexec,
    OrSaveexec,
    Andn2Saveexec,
}

/// A pre-resolved scalar instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SFast {
    /// The operation.
    pub op: SOp,
    /// Destination operand number, or `NO_DST`.
    pub dst: u8,
    /// Sources 0 and 1.
    pub src: [SSrc; 2],
}

/// [`SFast::dst`] of an instruction that writes no scalar register.
pub const NO_DST: u8 = u8::MAX;

/// The branch conditions of SOPP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the instructions
pub enum Cond {
    Never,
    Always,
    Scc0,
    Scc1,
    Vccz,
    Vccnz,
    Execz,
    Execnz,
}

fn ssrc(op: Option<Operand>, wide: bool) -> Option<SSrc> {
    Some(match op? {
        Operand::IntConst(i) => SSrc::K(i64::from(i) as u64),
        Operand::FloatConst(code) => SSrc::K(float_const(code, SrcType::Int, wide)),
        Operand::Literal(l) => SSrc::K(u64::from(l)),
        o => {
            let i = scalar_index(o)?;
            SSrc::Reg(
                u8::try_from(i)
                    .ok()
                    .filter(|&i| usize::from(i) < sreg::FILE_SIZE)?,
            )
        }
    })
}

/// Plans the scalar or branch fast form of `inst`.
pub(crate) fn plan_scalar(inst: &Instruction, fields: &[Option<Operand>; 5]) -> Plan {
    plan_scalar_inner(inst, fields).unwrap_or(Plan::None)
}

fn plan_scalar_inner(inst: &Instruction, fields: &[Option<Operand>; 5]) -> Option<Plan> {
    let [a, b, _, d, _] = *fields;
    if inst.enc == Enc::Sopp {
        let cond = match inst.op {
            Op::SBranch => Cond::Always,
            Op::SCbranchScc0 => Cond::Scc0,
            Op::SCbranchScc1 => Cond::Scc1,
            Op::SCbranchVccz => Cond::Vccz,
            Op::SCbranchVccnz => Cond::Vccnz,
            Op::SCbranchExecz => Cond::Execz,
            Op::SCbranchExecnz => Cond::Execnz,
            // no effect in the interpreter: a branch never taken
            Op::SNop | Op::SWaitcnt => Cond::Never,
            _ => return None,
        };
        return Some(Plan::Branch(cond, (inst.words[0] & 0xffff) as u16 as i16));
    }
    if !matches!(inst.enc, Enc::Sop1 | Enc::Sop2 | Enc::Sopc) {
        return None;
    }
    use SOp::*;
    // (op, source 0 is 64-bit, source 1 is 64-bit)
    let (op, wa, wb) = match inst.op {
        Op::SAddU32 => (AddU32, false, false),
        Op::SSubU32 => (SubU32, false, false),
        Op::SAddI32 => (AddI32, false, false),
        Op::SSubI32 => (SubI32, false, false),
        Op::SAddcU32 => (AddcU32, false, false),
        Op::SSubbU32 => (SubbU32, false, false),
        Op::SMinI32 => (MinI32, false, false),
        Op::SMinU32 => (MinU32, false, false),
        Op::SMaxI32 => (MaxI32, false, false),
        Op::SMaxU32 => (MaxU32, false, false),
        Op::SMulI32 => (MulI32, false, false),
        Op::SAndB32 => (And32, false, false),
        Op::SOrB32 => (Or32, false, false),
        Op::SXorB32 => (Xor32, false, false),
        Op::SAndn2B32 => (Andn2_32, false, false),
        Op::SLshlB32 => (Lshl32, false, false),
        Op::SLshrB32 => (Lshr32, false, false),
        Op::SAshrI32 => (Ashr32, false, false),
        Op::SAndB64 => (And64, true, true),
        Op::SOrB64 => (Or64, true, true),
        Op::SXorB64 => (Xor64, true, true),
        Op::SAndn2B64 => (Andn2_64, true, true),
        Op::SMovB32 => (Mov32, false, false),
        Op::SMovB64 => (Mov64, true, false),
        Op::SCselectB32 => (Cselect32, false, false),
        Op::SCmpEqI32 | Op::SCmpEqU32 => (CmpEq32, false, false),
        Op::SCmpLgI32 | Op::SCmpLgU32 => (CmpLg32, false, false),
        Op::SCmpGtI32 => (CmpGtI32, false, false),
        Op::SCmpGeI32 => (CmpGeI32, false, false),
        Op::SCmpLtI32 => (CmpLtI32, false, false),
        Op::SCmpLeI32 => (CmpLeI32, false, false),
        Op::SCmpGtU32 => (CmpGtU32, false, false),
        Op::SCmpGeU32 => (CmpGeU32, false, false),
        Op::SCmpLtU32 => (CmpLtU32, false, false),
        Op::SCmpLeU32 => (CmpLeU32, false, false),
        Op::SAndSaveexecB64 => (AndSaveexec, true, false),
        Op::SOrSaveexecB64 => (OrSaveexec, true, false),
        Op::SAndn2SaveexecB64 => (Andn2Saveexec, true, false),
        _ => return None,
    };
    let src = [
        ssrc(a, wa)?,
        if b.is_some() {
            ssrc(b, wb)?
        } else {
            SSrc::K(0)
        },
    ];
    let dst = match d {
        None => NO_DST,
        Some(o) => match scalar_index(o) {
            Some(i) => u8::try_from(i)
                .ok()
                .filter(|&i| usize::from(i) < sreg::FILE_SIZE)?,
            // writes to null (or a constant) are dropped, as swrite drops them
            None => NO_DST,
        },
    };
    Some(Plan::Scalar(SFast { op, dst, src }))
}

impl Wave {
    #[inline(always)]
    fn s32(&self, s: SSrc) -> u32 {
        match s {
            SSrc::Reg(i) => self.sgpr[usize::from(i)],
            SSrc::K(k) => k as u32,
        }
    }

    #[inline(always)]
    fn s64(&self, s: SSrc) -> u64 {
        match s {
            SSrc::Reg(i) => self.sgpr64(usize::from(i)),
            SSrc::K(k) => k,
        }
    }

    /// Runs a planned scalar instruction (always succeeds: scalar indices were checked when
    /// planning).
    #[inline]
    pub(crate) fn run_scalar(&mut self, f: &SFast) {
        use SOp::*;
        let (a, b) = (self.s32(f.src[0]), self.s32(f.src[1]));
        let scc = self.scc;
        // (value, 64-bit, new SCC)
        let (v, wide, new_scc): (u64, bool, Option<bool>) = match f.op {
            AddU32 => carry32(int::add_co(a, b)),
            SubU32 => carry32(int::sub_co(a, b)),
            AddI32 => carry32(int::add_i32(a, b)),
            SubI32 => carry32(int::sub_i32(a, b)),
            AddcU32 => carry32(int::addc(a, b, scc)),
            SubbU32 => carry32(int::subb(a, b, scc)),
            MinI32 => (
                u64::from((a as i32).min(b as i32) as u32),
                false,
                Some((a as i32) < (b as i32)),
            ),
            MinU32 => (u64::from(a.min(b)), false, Some(a < b)),
            MaxI32 => (
                u64::from((a as i32).max(b as i32) as u32),
                false,
                Some((a as i32) > (b as i32)),
            ),
            MaxU32 => (u64::from(a.max(b)), false, Some(a > b)),
            MulI32 => (u64::from(a.wrapping_mul(b)), false, None),
            And32 => nz(u64::from(a & b), false),
            Or32 => nz(u64::from(a | b), false),
            Xor32 => nz(u64::from(a ^ b), false),
            Andn2_32 => nz(u64::from(a & !b), false),
            Lshl32 => nz(u64::from(int::shl32(a, b)), false),
            Lshr32 => nz(u64::from(int::lshr32(a, b)), false),
            Ashr32 => nz(u64::from(int::ashr32(a, b)), false),
            And64 => nz(self.s64(f.src[0]) & self.s64(f.src[1]), true),
            Or64 => nz(self.s64(f.src[0]) | self.s64(f.src[1]), true),
            Xor64 => nz(self.s64(f.src[0]) ^ self.s64(f.src[1]), true),
            Andn2_64 => nz(self.s64(f.src[0]) & !self.s64(f.src[1]), true),
            Mov32 => (u64::from(a), false, None),
            Mov64 => (self.s64(f.src[0]), true, None),
            Cselect32 => (u64::from(if scc { a } else { b }), false, None),
            CmpEq32 => return self.scc = a == b,
            CmpLg32 => return self.scc = a != b,
            CmpGtI32 => return self.scc = (a as i32) > (b as i32),
            CmpGeI32 => return self.scc = (a as i32) >= (b as i32),
            CmpLtI32 => return self.scc = (a as i32) < (b as i32),
            CmpLeI32 => return self.scc = (a as i32) <= (b as i32),
            CmpGtU32 => return self.scc = a > b,
            CmpGeU32 => return self.scc = a >= b,
            CmpLtU32 => return self.scc = a < b,
            CmpLeU32 => return self.scc = a <= b,
            AndSaveexec | OrSaveexec | Andn2Saveexec => {
                let exec = self.exec();
                let s = self.s64(f.src[0]);
                let new = match f.op {
                    AndSaveexec => s & exec,
                    OrSaveexec => s | exec,
                    _ => s & !exec,
                };
                if f.dst != NO_DST {
                    self.set_sgpr64(usize::from(f.dst), exec);
                }
                self.set_exec(new);
                self.scc = new != 0;
                return;
            }
        };
        if f.dst != NO_DST {
            if wide {
                self.set_sgpr64(usize::from(f.dst), v);
            } else {
                self.sgpr[usize::from(f.dst)] = v as u32;
            }
        }
        if let Some(s) = new_scc {
            self.scc = s;
        }
    }

    /// Whether a planned branch is taken.
    #[inline(always)]
    pub(crate) fn branch_taken(&self, c: Cond) -> bool {
        match c {
            Cond::Never => false,
            Cond::Always => true,
            Cond::Scc0 => !self.scc,
            Cond::Scc1 => self.scc,
            Cond::Vccz => self.vcc() == 0,
            Cond::Vccnz => self.vcc() != 0,
            Cond::Execz => self.exec() == 0,
            Cond::Execnz => self.exec() != 0,
        }
    }
}

#[inline(always)]
fn carry32((v, c): (u32, bool)) -> (u64, bool, Option<bool>) {
    (u64::from(v), false, Some(c))
}

#[inline(always)]
fn nz(v: u64, wide: bool) -> (u64, bool, Option<bool>) {
    (v, wide, Some(v != 0))
}
