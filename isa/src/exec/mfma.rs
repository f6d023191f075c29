//! The f32 matrix fused multiply-adds of gfx90a (`v_mfma_f32_*f32`): register/lane layout
//! and arithmetic. Each block computes `D = A × B + C` with A `M×K`, B `K×N`, C/D `M×N`.
//!
//! Layout: A's element `(i, k)` of block `b` is in lane `i + M·(k + K·b)` of the single A
//! register; B's `(k, j)` in lane `j + N·(k + K·b)`. D's rows go in groups of four: row
//! `i = 4g + r` of column `j` lives in register `r + 4·(g / (64/N))` (plus the block's
//! register base), lane `j + N·(g mod (64/N))`; for 4×4 blocks the blocks spread over lanes
//! (`lane = j + 4·b`, register `i`).

use super::wave::{Lanes, WAVE_SIZE};

/// The f32 MFMA shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MfmaF32 {
    /// `v_mfma_f32_32x32x1f32`: two 32×32 blocks, K = 1, 32 result registers.
    M32N32K1,
    /// `v_mfma_f32_32x32x2f32`: one 32×32 block, K = 2, 16 result registers.
    M32N32K2,
    /// `v_mfma_f32_16x16x1f32`: four 16×16 blocks, K = 1, 16 result registers.
    M16N16K1,
    /// `v_mfma_f32_16x16x4f32`: one 16×16 block, K = 4, 4 result registers.
    M16N16K4,
    /// `v_mfma_f32_4x4x1f32`: sixteen 4×4 blocks, K = 1, 4 result registers.
    M4N4K1,
}

impl MfmaF32 {
    /// (M, N, K, blocks).
    pub fn dims(self) -> (usize, usize, usize, usize) {
        match self {
            MfmaF32::M32N32K1 => (32, 32, 1, 2),
            MfmaF32::M32N32K2 => (32, 32, 2, 1),
            MfmaF32::M16N16K1 => (16, 16, 1, 4),
            MfmaF32::M16N16K4 => (16, 16, 4, 1),
            MfmaF32::M4N4K1 => (4, 4, 1, 16),
        }
    }

    /// Number of result (and C) registers.
    pub fn result_registers(self) -> usize {
        let (m, n, _, blocks) = self.dims();
        m * n * blocks / WAVE_SIZE
    }

    /// Lane of A's element `(i, k)` in block `b`.
    pub fn a_lane(self, i: usize, k: usize, b: usize) -> usize {
        let (m, _, kk, _) = self.dims();
        i + m * (k + kk * b)
    }

    /// Lane of B's element `(k, j)` in block `b`.
    pub fn b_lane(self, k: usize, j: usize, b: usize) -> usize {
        let (_, n, kk, _) = self.dims();
        j + n * (k + kk * b)
    }

    /// (register, lane) of D's element `(i, j)` in block `b`.
    pub fn d_location(self, i: usize, j: usize, b: usize) -> (usize, usize) {
        let (m, n, _, _) = self.dims();
        d_location(m, n, i, j, b)
    }

    /// Computes D = A × B + C for every block; `c` and the result have
    /// [`result_registers`](Self::result_registers) registers. Products accumulate in `k`
    /// order with fused multiply-adds (round to nearest even, denormals kept).
    pub fn compute(self, a: &Lanes, b: &Lanes, c: &[Lanes]) -> Vec<Lanes> {
        let (m, n, kk, blocks) = self.dims();
        let mut d = vec![[0u32; WAVE_SIZE]; self.result_registers()];
        for blk in 0..blocks {
            for i in 0..m {
                for j in 0..n {
                    let (reg, lane) = self.d_location(i, j, blk);
                    let mut acc = c.get(reg).map_or(0.0, |r| f32::from_bits(r[lane]));
                    for k in 0..kk {
                        let x = f32::from_bits(a[self.a_lane(i, k, blk)]);
                        let y = f32::from_bits(b[self.b_lane(k, j, blk)]);
                        acc = x.mul_add(y, acc);
                    }
                    d[reg][lane] = acc.to_bits();
                }
            }
        }
        d
    }
}

/// (register, lane) of D's element `(i, j)` of block `b` for an M×N result: the layout every
/// f32-accumulating MFMA shares (the packed-input forms too).
pub(crate) fn d_location(m: usize, n: usize, i: usize, j: usize, b: usize) -> (usize, usize) {
    if m == 4 {
        return (i, j + 4 * b);
    }
    let per_block = m * n / WAVE_SIZE;
    let lane_groups = WAVE_SIZE / n;
    let (g, r) = (i / 4, i % 4);
    (
        per_block * b + r + 4 * (g / lane_groups),
        j + n * (g % lane_groups),
    )
}
