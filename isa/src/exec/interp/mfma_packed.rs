//! The MFMAs with packed inputs (gfx908/gfx90a): `v_mfma_f32_*f16`, `*bf16`, `*bf16_1k` and
//! `v_mfma_i32_*i8`. Each lane holds `pack` consecutive K elements of A (and of B) in one or
//! two registers; otherwise the layout is the f32 MFMAs' (see `exec::mfma`): element
//! `(i, k)` of A in block `b` is element `k % pack` of lane `i + M·(k / pack + K'·b)` with
//! `K' = K / pack`, B likewise with `j` and N, and D/C exactly as the f32 form of the same
//! M×N and block count. Products are exact (f16/bf16 products fit an f64; i8 products an
//! i32); each is added to the accumulator in K order, the sum formed in f64 and rounded to
//! f32 (the i32 forms wrap). The f64 MFMAs of gfx90a (`v_mfma_f64_16x16x4f64`,
//! `v_mfma_f64_4x4x4f64`) are here too, with their own layouts ([`MfmaF64`]).

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
    shape(op).is_some() || MfmaF64::of(op).is_some()
}

/// The f64 MFMAs of gfx90a, one f64 per lane of a register pair for A, B and each C/D pair.
///
/// - `v_mfma_f64_16x16x4f64`: one 16×16 block, K = 4. A's `(i, k)` is lane `i + 16k`, B's
///   `(k, j)` lane `j + 16k`; D's `(i, j)` is the pair `2·(i / 4)` of lane `j + 16·(i mod 4)`
///   (one row per lane group, not the f32 forms' groups of four); 8 C/D registers.
/// - `v_mfma_f64_4x4x4f64`: four 4×4 blocks, K = 4. A's `(i, k)` of block `b` is lane
///   `i + 4b + 16k`, B's `(k, j)` lane `j + 4b + 16k`, D's (and C's) `(i, j)` lane
///   `j + 4b + 16i` of the one pair; 2 C/D registers. Source: AMD's lab notes "AMD matrix
///   cores" (`amd/amd-lab-notes`, `matrix-cores/src/mfma_fp64_4x4x4fp64.cpp`: lanes 0-15
///   hold the first column of each A / row of each B, four lanes per block; lanes 16i..16i+15
///   hold row i of each D, four lanes per block; and its lane-layout figure; "the layout for
///   output D and input C is the same as the layout for input B"), with the block count
///   (4) and opcode (111) as in AMD's Matrix Instruction Calculator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MfmaF64 {
    M16N16K4,
    M4N4K4,
}

impl MfmaF64 {
    fn of(op: Op) -> Option<Self> {
        match op {
            Op::VMfmaF6416x16x4f64 => Some(MfmaF64::M16N16K4),
            Op::VMfmaF644x4x4f64 => Some(MfmaF64::M4N4K4),
            _ => None,
        }
    }

    /// (M, N, blocks); K is 4 for both.
    fn dims(self) -> (usize, usize, usize) {
        match self {
            MfmaF64::M16N16K4 => (16, 16, 1),
            MfmaF64::M4N4K4 => (4, 4, 4),
        }
    }

    /// Lane of A's `(i, k)` in block `b` (B's `(k, j)` is the same with `j`).
    fn input_lane(self, i: usize, k: usize, b: usize) -> usize {
        match self {
            MfmaF64::M16N16K4 => i + 16 * k,
            MfmaF64::M4N4K4 => i + 4 * b + 16 * k,
        }
    }

    /// (first register of the pair, lane) of D's `(i, j)` in block `b`.
    fn d_location(self, i: usize, j: usize, b: usize) -> (usize, usize) {
        match self {
            MfmaF64::M16N16K4 => (2 * (i / 4), j + 16 * (i % 4)),
            MfmaF64::M4N4K4 => (0, j + 4 * b + 16 * i),
        }
    }

    /// C/D registers (two per f64).
    fn result_registers(self) -> usize {
        let (m, n, blocks) = self.dims();
        2 * m * n * blocks / WAVE_SIZE
    }
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
        if let Some(shape) = MfmaF64::of(op) {
            return self.mfma_f64(c, shape);
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
    /// The f64 MFMAs ([`MfmaF64`], gfx90a). Products accumulate in K order with fused
    /// multiply-adds.
    fn mfma_f64(&mut self, c: &Cached, shape: MfmaF64) -> R<()> {
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
        let regs = shape.result_registers();
        let mut cin = Vec::with_capacity(regs);
        for i in 0..regs {
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
        let (m, n, blocks) = shape.dims();
        let mut d = vec![[0u32; WAVE_SIZE]; regs];
        for blk in 0..blocks {
            for i in 0..m {
                for j in 0..n {
                    let (v, lane) = shape.d_location(i, j, blk);
                    let mut acc = pair(&cin[v..v + 2], lane);
                    for k in 0..4 {
                        let x = pair(&a, shape.input_lane(i, k, blk));
                        acc = x.mul_add(pair(&b, shape.input_lane(j, k, blk)), acc);
                    }
                    d[v][lane] = acc.to_bits() as u32;
                    d[v + 1][lane] = (acc.to_bits() >> 32) as u32;
                }
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
