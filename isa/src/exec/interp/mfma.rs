//! The f32 MFMA shapes (`v_mfma_f32_*x*x*f32`) and the C/D register access every MFMA
//! shares (VGPRs or AGPRs, ACC_CD).

use super::operands::Mods;
use super::{illegal, opnd, Wave, R};
use crate::decode::Operand;
use crate::exec::cache::{Cached, SrcType};
use crate::exec::mfma::MfmaF32;
use crate::exec::wave::{Lanes, WAVE_SIZE};
use crate::table::{Field, Op};

impl Wave {
    pub(super) fn mfma(&mut self, c: &Cached, op: Op) -> R<()> {
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
    pub(super) fn mfma_c(&self, c: &Cached, regs: usize, ty: SrcType) -> R<Vec<Lanes>> {
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
    pub(super) fn mfma_d(&mut self, c: &Cached, d: &[Lanes]) -> R<()> {
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
