//! The MFMAs with packed inputs (gfx908/gfx90a): `v_mfma_f32_*f16`, `*bf16`, `*bf16_1k` and
//! `v_mfma_i32_*i8`. Each lane holds `pack` consecutive K elements of A (and of B) in one or
//! two registers; otherwise the layout is the f32 MFMAs' (see `exec::mfma`): element
//! `(i, k)` of A in block `b` is element `k % pack` of lane `i + M·(k / pack + K'·b)` with
//! `K' = K / pack`, B likewise with `j` and N, and D/C exactly as the f32 form of the same
//! M×N and block count. Products are exact (f16/bf16 products fit an f64; i8 products an
//! i32); each is added to the accumulator in K order, the sum formed in f64 and rounded to
//! f32 (the i32 forms wrap).

use super::{illegal, opnd, Wave, R};
use crate::decode::Operand;
use crate::exec::cache::{Cached, SrcType};
use crate::exec::float::f16_to_f32;
use crate::exec::mfma::d_location;
use crate::exec::wave::{Lanes, WAVE_SIZE};
use crate::table::{Field, Op};

/// Input element type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum In {
    F16,
    Bf16,
    I8,
}

/// (M, N, K, blocks, input type, elements per lane).
fn shape(op: Op) -> Option<(usize, usize, usize, usize, In, usize)> {
    use Op::*;
    Some(match op {
        VMfmaF3232x32x4f16 => (32, 32, 4, 2, In::F16, 4),
        VMfmaF3216x16x4f16 => (16, 16, 4, 4, In::F16, 4),
        VMfmaF324x4x4f16 => (4, 4, 4, 16, In::F16, 4),
        VMfmaF3232x32x8f16 => (32, 32, 8, 1, In::F16, 4),
        VMfmaF3216x16x16f16 => (16, 16, 16, 1, In::F16, 4),
        VMfmaI3232x32x4i8 => (32, 32, 4, 2, In::I8, 4),
        VMfmaI3216x16x4i8 => (16, 16, 4, 4, In::I8, 4),
        VMfmaI324x4x4i8 => (4, 4, 4, 16, In::I8, 4),
        VMfmaI3232x32x8i8 => (32, 32, 8, 1, In::I8, 4),
        VMfmaI3216x16x16i8 => (16, 16, 16, 1, In::I8, 4),
        VMfmaF3232x32x2bf16 => (32, 32, 2, 2, In::Bf16, 2),
        VMfmaF3216x16x2bf16 => (16, 16, 2, 4, In::Bf16, 2),
        VMfmaF324x4x2bf16 => (4, 4, 2, 16, In::Bf16, 2),
        VMfmaF3232x32x4bf16 => (32, 32, 4, 1, In::Bf16, 2),
        VMfmaF3216x16x8bf16 => (16, 16, 8, 1, In::Bf16, 2),
        VMfmaF3232x32x4bf161k => (32, 32, 4, 2, In::Bf16, 4),
        VMfmaF3216x16x4bf161k => (16, 16, 4, 4, In::Bf16, 4),
        VMfmaF324x4x4bf161k => (4, 4, 4, 16, In::Bf16, 4),
        VMfmaF3232x32x8bf161k => (32, 32, 8, 1, In::Bf16, 4),
        VMfmaF3216x16x16bf161k => (16, 16, 16, 1, In::Bf16, 4),
        _ => return None,
    })
}

/// Whether `op` is one of the MFMAs this module executes.
pub(super) fn is_packed_mfma(op: Op) -> bool {
    shape(op).is_some() || op == Op::VMfmaF6416x16x4f64
}

/// Element `e` of a lane's packed input, as f64 (floats) or as an integer in an f64.
fn element(regs: &[Lanes], lane: usize, e: usize, ty: In) -> f64 {
    match ty {
        In::F16 => f64::from(f16_to_f32((regs[e / 2][lane] >> (16 * (e % 2))) as u16)),
        In::Bf16 => {
            let h = (regs[e / 2][lane] >> (16 * (e % 2))) & 0xffff;
            f64::from(f32::from_bits(h << 16))
        }
        In::I8 => f64::from((regs[0][lane] >> (8 * e)) as u8 as i8),
    }
}

impl Wave {
    /// A/B of a packed MFMA: the one or two registers it names (VGPRs or AGPRs).
    fn mfma_source(&self, c: &Cached, field: Field, regs: usize) -> R<Vec<Lanes>> {
        match opnd(c, field) {
            Some(Operand::Vgpr { first, .. }) => (0..regs)
                .map(|i| self.v(usize::from(first) + i).copied())
                .collect(),
            Some(Operand::Agpr { first, .. }) => (0..regs)
                .map(|i| self.a(usize::from(first) + i).copied())
                .collect(),
            Some(o) if regs == 1 => {
                Ok(vec![[self.sread(o, SrcType::Int, false) as u32; WAVE_SIZE]])
            }
            _ => Err(illegal(self.pc, c)),
        }
    }

    pub(super) fn mfma_packed(&mut self, c: &Cached, op: Op) -> R<()> {
        if op == Op::VMfmaF6416x16x4f64 {
            return self.mfma_f64_16x16x4(c);
        }
        let Some((m, n, k, blocks, ty, pack)) = shape(op) else {
            return Err(illegal(self.pc, c));
        };
        let [w0, w1] = c.inst.words;
        // cbsz/abid/blgp broadcast controls are not modelled
        if (w0 >> 8) & 0x3f != 0 || (w1 >> 29) != 0 {
            return Err(illegal(self.pc, c));
        }
        let in_regs = if ty == In::I8 { 1 } else { pack / 2 };
        let a = self.mfma_source(c, Field::A, in_regs)?;
        let b = self.mfma_source(c, Field::B, in_regs)?;
        let regs = m * n * blocks / WAVE_SIZE;
        let c_type = if ty == In::I8 {
            SrcType::Int
        } else {
            SrcType::F32
        };
        let cin = self.mfma_c(c, regs, c_type)?;
        let kq = k / pack;
        let mut d = vec![[0u32; WAVE_SIZE]; regs];
        for blk in 0..blocks {
            for i in 0..m {
                for j in 0..n {
                    let (reg, lane) = d_location(m, n, i, j, blk);
                    let c0 = cin[reg][lane];
                    let (mut facc, mut iacc) = (f32::from_bits(c0), c0 as i32);
                    for kk in 0..k {
                        let (q, e) = (kk / pack, kk % pack);
                        let la = i + m * (q + kq * blk);
                        let lb = j + n * (q + kq * blk);
                        let (x, y) = (element(&a, la, e, ty), element(&b, lb, e, ty));
                        if ty == In::I8 {
                            iacc = iacc.wrapping_add((x as i32) * (y as i32));
                        } else {
                            facc = (f64::from(facc) + x * y) as f32;
                        }
                    }
                    d[reg][lane] = if ty == In::I8 {
                        iacc as u32
                    } else {
                        facc.to_bits()
                    };
                }
            }
        }
        self.mfma_d(c, &d)
    }
}

impl Wave {
    /// `v_mfma_f64_16x16x4f64` (gfx90a): one 16×16 block, K = 4, f64 in register pairs.
    /// A's `(i, k)` is lane `i + 16k`, B's `(k, j)` lane `j + 16k`; D's `(i, j)` is the f64 in
    /// registers `2·(i / 4)`, `+1` of lane `j + 16·(i mod 4)` (one row per lane group, not the
    /// f32 forms' groups of four). Products accumulate in K order with fused multiply-adds.
    fn mfma_f64_16x16x4(&mut self, c: &Cached) -> R<()> {
        let [w0, w1] = c.inst.words;
        // cbsz/abid/blgp (neg on later chips) are not modelled
        if (w0 >> 8) & 0x3f != 0 || (w1 >> 29) != 0 || self.target != crate::Target::Gfx90a {
            return Err(illegal(self.pc, c));
        }
        let pair =
            |r: &[Lanes], l: usize| f64::from_bits(u64::from(r[0][l]) | (u64::from(r[1][l]) << 32));
        let a = self.mfma_source(c, Field::A, 2)?;
        let b = self.mfma_source(c, Field::B, 2)?;
        let acc_cd = (w0 >> 15) & 1 != 0;
        let src2 = ((w1 >> 18) & 0x1ff) as usize;
        let vdst = (w0 & 0xff) as usize;
        let mut cin = Vec::with_capacity(8);
        for i in 0..8 {
            cin.push(if src2 >= 256 {
                if acc_cd {
                    *self.a(src2 - 256 + i)?
                } else {
                    *self.v(src2 - 256 + i)?
                }
            } else {
                // an inline constant as every element of C
                let o = opnd(c, Field::C).unwrap_or(Operand::IntConst(0));
                let v = self.sread(o, SrcType::F64, true);
                [if i % 2 == 0 {
                    v as u32
                } else {
                    (v >> 32) as u32
                }; WAVE_SIZE]
            });
        }
        let mut d = vec![[0u32; WAVE_SIZE]; 8];
        for i in 0..16 {
            for j in 0..16 {
                let (v, lane) = (i / 4, j + 16 * (i % 4));
                let mut acc = pair(&cin[2 * v..2 * v + 2], lane);
                for k in 0..4 {
                    acc = pair(&a, i + 16 * k).mul_add(pair(&b, j + 16 * k), acc);
                }
                d[2 * v][lane] = acc.to_bits() as u32;
                d[2 * v + 1][lane] = (acc.to_bits() >> 32) as u32;
            }
        }
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
