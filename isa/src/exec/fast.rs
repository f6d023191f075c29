//! The fast path for the common VALU instructions: operands resolved once per code address
//! (when the [`CodeCache`](super::CodeCache) is built) to register indices and constants,
//! lane loops over the register file that the compiler vectorises, carries and compare
//! results packed with no per-lane shifts.
//!
//! An instruction gets a [`Fast`] plan only when it has no SDWA/DPP dword and no VOP3
//! modifiers (abs, neg, clamp, omod); at run time the plan also steps aside when a register
//! index is outside the wave's allocation or, for float ops, when MODE asks for a directed
//! rounding. In those cases the general interpreter runs the instruction, so both paths give
//! bit-identical results by construction: the fast loops use the same helper semantics.

use std::cell::Cell;

use crate::decode::{Ext, Instruction, Operand};
use crate::table::{Enc, Op};

use super::cache::{Cmp, CmpType, SrcType};
use super::float as fp;
use super::int;
use super::operand::{float_const, scalar_index};
use super::wave::{sreg, write_masked, Lanes, Round, Wave, WAVE_SIZE};

/// A source operand resolved at cache-build time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// A VGPR by number.
    V(u16),
    /// A 32-bit scalar register by operand number (index into [`Wave::sgpr`]).
    S(u8),
    /// A constant (inline constant or literal, already in the source type's bits).
    K(u32),
}

/// What a planned instruction computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// One source, one VGPR result.
    Un(Un),
    /// Two sources, one VGPR result.
    Bin(Bin),
    /// Three sources, one VGPR result.
    Tri(Tri),
    /// f32 arithmetic (round-to-nearest-even MODE only).
    Float(FloatOp),
    /// Two sources, a VGPR result and a carry/borrow mask.
    Carry(CarryOp),
    /// `v_cndmask_b32`.
    Cndmask,
    /// A 64-bit shift of a VGPR pair (source 1) by source 0, into a VGPR pair.
    Shift64(Shift64),
    /// A 32-bit vector compare (truth table over less/equal/greater/unordered).
    Cmp {
        /// Outcome truth table (see [`Cmp::truth`]).
        truth: u8,
        /// Operand type: [`CmpType::U32`], [`CmpType::I32`] or [`CmpType::F32`].
        ty: CmpType,
        /// `v_cmpx`: also writes EXEC.
        writes_exec: bool,
    },
}

/// Unary integer ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the instructions
pub enum Un {
    Mov,
    Not,
    Bfrev,
}

/// Binary integer ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the instructions
pub enum Bin {
    AddU32,
    SubU32,
    SubrevU32,
    MulLoU32,
    MulHiU32,
    MulHiI32,
    MulU32U24,
    MulI32I24,
    And,
    Or,
    Xor,
    Xnor,
    Lshlrev,
    Lshrrev,
    Ashrrev,
    MinI32,
    MaxI32,
    MinU32,
    MaxU32,
    Bfm,
    BcntU32,
}

/// Ternary integer ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the instructions
pub enum Tri {
    MadU32U24,
    MadI32I24,
    BfeU32,
    BfeI32,
    Bfi,
    Alignbit,
    Alignbyte,
    Perm,
    LshlAdd,
    AddLshl,
    Add3,
    LshlOr,
    AndOr,
    Or3,
    Xad,
    Min3I32,
    Max3I32,
    Min3U32,
    Max3U32,
    Med3I32,
    Med3U32,
}

/// f32 ops with a vectorisable round-to-nearest-even form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the instructions
pub enum FloatOp {
    Add,
    Sub,
    Subrev,
    Mul,
    /// `v_fma_f32`, `v_fmac_f32` (source 2 is the destination).
    Fma,
    /// `v_mad_f32`, `v_mac_f32` (source 2 is the destination).
    Mad,
    Min,
    Max,
}

/// 64-bit shifts (`v_lshlrev_b64`, `v_lshrrev_b64`, `v_ashrrev_i64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the instructions
pub enum Shift64 {
    Lshlrev,
    Lshrrev,
    Ashrrev,
}

/// Ops with a carry or borrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named after the instructions
pub enum CarryOp {
    AddCo,
    SubCo,
    SubrevCo,
    Addc,
    Subb,
    Subbrev,
}

/// A pre-resolved instruction for the fast path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fast {
    /// The operation.
    pub kind: Kind,
    /// Destination VGPR (vector results).
    pub dst: u16,
    /// Sources 0–2 (unused ones are `K(0)`).
    pub src: [Src; 3],
    /// Scalar destination of a carry-out or compare mask (a pair starting here).
    pub sdst: u8,
    /// Scalar pair a carry-in or select mask is read from.
    pub cin: u8,
    /// One past the highest VGPR a source reads (0: none reads one), so a wave with fewer
    /// VGPRs is turned away with one compare.
    pub src_vgpr_end: u16,
}

fn src_of(op: Option<Operand>, ty: SrcType) -> Option<Src> {
    Some(match op? {
        Operand::Vgpr { first, count: 1 } => Src::V(u16::from(first)),
        Operand::IntConst(i) => Src::K(i32::from(i) as u32),
        Operand::FloatConst(code) => Src::K(float_const(code, ty, false) as u32),
        Operand::Literal(l) => Src::K(l),
        o => {
            let i = scalar_index(o)?;
            Src::S(
                u8::try_from(i)
                    .ok()
                    .filter(|&i| usize::from(i) < sreg::FILE_SIZE)?,
            )
        }
    })
}

fn pair_index(op: Option<Operand>) -> Option<u8> {
    let i = scalar_index(op?)?;
    u8::try_from(i)
        .ok()
        .filter(|&i| usize::from(i) + 1 < sreg::FILE_SIZE)
}

/// Plans the fast form of `inst`, or `None` when the general interpreter must run it.
/// `fields` are the operands of fields A, B, C, D and E.
pub(crate) fn plan(
    inst: &Instruction,
    fields: &[Option<Operand>; 5],
    src_type: SrcType,
    cmp: Option<Cmp>,
) -> Option<Fast> {
    let mut f = plan_sources(inst, fields, src_type, cmp)?;
    f.src_vgpr_end = f
        .src
        .iter()
        .map(|&s| match s {
            Src::V(i) => i + 1,
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    Some(f)
}

/// [`plan`] but for [`Fast::src_vgpr_end`].
fn plan_sources(
    inst: &Instruction,
    fields: &[Option<Operand>; 5],
    src_type: SrcType,
    cmp: Option<Cmp>,
) -> Option<Fast> {
    if inst.ext != Ext::None {
        return None;
    }
    let vop3 = match inst.enc {
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc => false,
        Enc::Vop3 => true,
        _ => return None,
    };
    let [a, b, c, d, e] = *fields;
    if vop3 {
        let [w0, w1] = inst.words;
        let vop3b = e.is_some();
        let abs = if vop3b { 0 } else { (w0 >> 8) & 7 };
        let (neg, clamp, omod) = (w1 >> 29, (w0 >> 15) & 1, (w1 >> 27) & 3);
        if abs | neg | clamp | omod != 0 {
            return None;
        }
    }
    let s0 = src_of(a, src_type);
    let s1 = src_of(b, src_type);
    let s2 = src_of(c, src_type);
    let vdst = || match d {
        Some(Operand::Vgpr { first, count: 1 }) => Some(u16::from(first)),
        _ => None,
    };
    let mut f = Fast {
        kind: Kind::Un(Un::Mov),
        dst: 0,
        src: [Src::K(0); 3],
        sdst: sreg::VCC_LO as u8,
        cin: sreg::VCC_LO as u8,
        src_vgpr_end: 0,
    };
    if let Some(cmp) = cmp {
        let truth = cmp.truth?;
        if !matches!(cmp.ty, CmpType::U32 | CmpType::I32 | CmpType::F32) {
            return None;
        }
        f.kind = Kind::Cmp {
            truth,
            ty: cmp.ty,
            writes_exec: cmp.writes_exec,
        };
        f.src = [s0?, s1?, Src::K(0)];
        if vop3 {
            f.sdst = pair_index(d)?;
        }
        return Some(f);
    }
    let shift64 = match inst.op {
        Op::VLshlrevB64 => Some(Shift64::Lshlrev),
        Op::VLshrrevB64 => Some(Shift64::Lshrrev),
        Op::VAshrrevI64 => Some(Shift64::Ashrrev),
        _ => None,
    };
    if let Some(k) = shift64 {
        // VGPR pairs only (a scalar or constant 64-bit source takes the general path)
        let (
            Some(Operand::Vgpr { first: b, count: 2 }),
            Some(Operand::Vgpr { first: d, count: 2 }),
        ) = (b, d)
        else {
            return None;
        };
        f.kind = Kind::Shift64(k);
        f.src = [s0?, Src::V(u16::from(b)), Src::K(0)];
        f.dst = u16::from(d);
        return Some(f);
    }
    let un = |k: Un| Some((Kind::Un(k), 1));
    let bin = |k: Bin| Some((Kind::Bin(k), 2));
    let tri = |k: Tri| Some((Kind::Tri(k), 3));
    let float = |k: FloatOp, n| Some((Kind::Float(k), n));
    let carry = |k: CarryOp| Some((Kind::Carry(k), 2));
    let (kind, n_src) = match inst.op {
        Op::VMovB32 => un(Un::Mov),
        Op::VNotB32 => un(Un::Not),
        Op::VBfrevB32 => un(Un::Bfrev),
        Op::VAddU32 => bin(Bin::AddU32),
        Op::VSubU32 => bin(Bin::SubU32),
        Op::VSubrevU32 => bin(Bin::SubrevU32),
        Op::VMulLoU32 => bin(Bin::MulLoU32),
        Op::VMulHiU32 => bin(Bin::MulHiU32),
        Op::VMulHiI32 => bin(Bin::MulHiI32),
        Op::VMulU32U24 => bin(Bin::MulU32U24),
        Op::VMulI32I24 => bin(Bin::MulI32I24),
        Op::VAndB32 => bin(Bin::And),
        Op::VOrB32 => bin(Bin::Or),
        Op::VXorB32 => bin(Bin::Xor),
        Op::VXnorB32 => bin(Bin::Xnor),
        Op::VLshlrevB32 => bin(Bin::Lshlrev),
        Op::VLshrrevB32 => bin(Bin::Lshrrev),
        Op::VAshrrevI32 => bin(Bin::Ashrrev),
        Op::VMinI32 => bin(Bin::MinI32),
        Op::VMaxI32 => bin(Bin::MaxI32),
        Op::VMinU32 => bin(Bin::MinU32),
        Op::VMaxU32 => bin(Bin::MaxU32),
        Op::VBfmB32 => bin(Bin::Bfm),
        Op::VBcntU32B32 => bin(Bin::BcntU32),
        Op::VMadU32U24 => tri(Tri::MadU32U24),
        Op::VMadI32I24 => tri(Tri::MadI32I24),
        Op::VBfeU32 => tri(Tri::BfeU32),
        Op::VBfeI32 => tri(Tri::BfeI32),
        Op::VBfiB32 => tri(Tri::Bfi),
        Op::VAlignbitB32 => tri(Tri::Alignbit),
        Op::VAlignbyteB32 => tri(Tri::Alignbyte),
        Op::VPermB32 => tri(Tri::Perm),
        Op::VLshlAddU32 => tri(Tri::LshlAdd),
        Op::VAddLshlU32 => tri(Tri::AddLshl),
        Op::VAdd3U32 => tri(Tri::Add3),
        Op::VLshlOrB32 => tri(Tri::LshlOr),
        Op::VAndOrB32 => tri(Tri::AndOr),
        Op::VOr3B32 => tri(Tri::Or3),
        Op::VXadU32 => tri(Tri::Xad),
        Op::VMin3I32 => tri(Tri::Min3I32),
        Op::VMax3I32 => tri(Tri::Max3I32),
        Op::VMin3U32 => tri(Tri::Min3U32),
        Op::VMax3U32 => tri(Tri::Max3U32),
        Op::VMed3I32 => tri(Tri::Med3I32),
        Op::VMed3U32 => tri(Tri::Med3U32),
        Op::VAddF32 => float(FloatOp::Add, 2),
        Op::VSubF32 => float(FloatOp::Sub, 2),
        Op::VSubrevF32 => float(FloatOp::Subrev, 2),
        Op::VMulF32 => float(FloatOp::Mul, 2),
        Op::VMinF32 => float(FloatOp::Min, 2),
        Op::VMaxF32 => float(FloatOp::Max, 2),
        Op::VFmaF32 => float(FloatOp::Fma, 3),
        Op::VMadF32 | Op::VMadLegacyF32 => float(FloatOp::Mad, 3),
        // the accumulator is the destination
        Op::VFmacF32 => {
            f.src[2] = Src::V(vdst()?);
            float(FloatOp::Fma, 2)
        }
        Op::VMacF32 => {
            f.src[2] = Src::V(vdst()?);
            float(FloatOp::Mad, 2)
        }
        Op::VAddCoU32 => carry(CarryOp::AddCo),
        Op::VSubCoU32 => carry(CarryOp::SubCo),
        Op::VSubrevCoU32 => carry(CarryOp::SubrevCo),
        Op::VAddcCoU32 => carry(CarryOp::Addc),
        Op::VSubbCoU32 => carry(CarryOp::Subb),
        Op::VSubbrevCoU32 => carry(CarryOp::Subbrev),
        Op::VCndmaskB32 => Some((Kind::Cndmask, 2)),
        _ => None,
    }?;
    f.kind = kind;
    f.dst = vdst()?;
    f.src[0] = s0?;
    if n_src >= 2 {
        f.src[1] = s1?;
    }
    if n_src >= 3 {
        f.src[2] = s2?;
    }
    match kind {
        Kind::Carry(k) => {
            if let Some(e) = e {
                f.sdst = pair_index(Some(e))?;
            }
            if matches!(k, CarryOp::Addc | CarryOp::Subb | CarryOp::Subbrev) && vop3 {
                f.cin = pair_index(c)?;
            }
        }
        Kind::Cndmask if vop3 => f.cin = pair_index(c)?,
        _ => {}
    }
    Some(f)
}

/// Packs 64 booleans (one byte each, 0 or 1) into a lane mask, 8 lanes per multiply.
#[inline(always)]
fn pack(bits: &[u8; WAVE_SIZE]) -> u64 {
    let mut mask = 0u64;
    for (i, chunk) in bits.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        // byte k (0/1) lands on bit 56 + k; the partial products below bit 56 never carry
        let gathered = u64::from_le_bytes(b).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= gathered << (8 * i);
    }
    mask
}

/// Flushes a denormal f32 (bits) to a zero of its sign when `on`.
#[inline(always)]
fn ftz(bits: u32, on: bool) -> u32 {
    // all-ones where the exponent is zero: then only the sign survives (branch-free, so
    // it vectorises to a compare and two masks)
    let zero_exp = u32::from(bits & 0x7f80_0000 == 0).wrapping_neg();
    if on {
        bits & !(zero_exp & 0x7fff_ffff)
    } else {
        bits
    }
}

/// `fma` of three f32 in round-to-nearest-even through f64: the product is exact in f64, so
/// the f64 sum `s` is the exact result rounded once; rounding `s` to f32 gives the correctly
/// rounded result unless `s` sits exactly on an f32 rounding midpoint (or in the f32
/// denormal range, whose midpoints lie elsewhere, or is a NaN whose payload choice the host
/// fma defines). Returns the result and whether it must be recomputed with the host fma.
#[inline(always)]
fn fma_via_f64(x: f32, y: f32, z: f32) -> (f32, bool) {
    let s = f64::from(x) * f64::from(y) + f64::from(z);
    let bits = s.to_bits();
    (s as f32, fma_redo((bits >> 32) as u32, bits as u32))
}

/// Whether the f64 sum of [`fma_via_f64`], given as its high and low dwords, must be
/// recomputed with the host fma: it is an f32 rounding midpoint (its low 29 bits are
/// `1 << 28`), nonzero below 2^-126 (no f64 denormal can occur: |x*y| >= 2^-298), or an
/// infinity or NaN. 32-bit operations only, so a chunk of lanes vectorises.
#[inline(always)]
fn fma_redo(hi: u32, lo: u32) -> bool {
    let midpoint = lo & 0x1fff_ffff == 0x1000_0000;
    // the biased exponent in place: small ones are 1..=896 (below 2^-126), 0x7ff is inf/NaN
    let e = hi & 0x7ff0_0000;
    let special = (e != 0 && e < (1023 - 126) << 20) || e == 0x7ff0_0000;
    midpoint || special
}

/// Lanes per chunk: the engine loads 8 lanes of every source, computes, then stores, so a
/// destination that is also a source is read before it is written.
const CH: usize = 8;
type C8 = [u32; CH];
type Row = [Cell<u32>; WAVE_SIZE];

impl Wave {
    /// Runs `f` if it can; `false` leaves the wave untouched for the general interpreter.
    #[inline(always)]
    pub(crate) fn run_fast(&mut self, f: &Fast) -> bool {
        let n_vgpr = self.vgpr.len();
        if usize::from(f.src_vgpr_end) > n_vgpr {
            return false;
        }
        let exec = self.exec();
        if let Kind::Cmp {
            truth,
            ty,
            writes_exec,
        } = f.kind
        {
            let result = self.compare(f, truth, ty) & exec;
            self.set_sgpr64(usize::from(f.sdst), result);
            if writes_exec {
                self.set_exec(result);
            }
            return true;
        }
        if let Kind::Shift64(k) = f.kind {
            return self.shift64(f, k, exec);
        }
        if matches!(f.kind, Kind::Float(_)) && self.mode.round_f32() != Round::NearestEven {
            return false;
        }
        let dst = usize::from(f.dst);
        if dst >= n_vgpr {
            return false;
        }
        let mode = self.mode;
        let cin = self.sgpr64(usize::from(f.cin));
        let Wave { vgpr, sgpr, .. } = self;
        let rows = Cell::from_mut(vgpr.as_mut_slice()).as_slice_of_cells();
        // a uniform source 0 (constant or SGPR, the common VOP1/VOP2 case) is broadcast per
        // chunk instead of filling a row
        let k0 = match f.src[0] {
            Src::V(_) => None,
            Src::S(i) => Some(sgpr[usize::from(i)]),
            Src::K(k) => Some(k),
        };
        // sources the op does not read stand in as the destination (no fill)
        let n = arity(f.kind);
        let Some(d) = cells(&rows[dst]) else {
            return false;
        };
        // a uniform source 1 or 2 is splatted into a row on the stack (only when there is one)
        let (mut tb, mut tc): (Lanes, Lanes);
        macro_rules! row {
            ($s:expr, $tmp:ident) => {
                match $s {
                    Src::V(i) => cells(&rows[usize::from(i)]),
                    Src::S(i) => {
                        $tmp = [sgpr[usize::from(i)]; WAVE_SIZE];
                        cells(Cell::from_mut(&mut $tmp))
                    }
                    Src::K(k) => {
                        $tmp = [k; WAVE_SIZE];
                        cells(Cell::from_mut(&mut $tmp))
                    }
                }
            };
        }
        let s0 = match f.src[0] {
            Src::V(i) if k0.is_none() => cells(&rows[usize::from(i)]),
            _ => Some(d),
        };
        let s1 = if n >= 2 { row!(f.src[1], tb) } else { Some(d) };
        let s2 = if n >= 3 { row!(f.src[2], tc) } else { Some(d) };
        let (Some(s0), Some(s1), Some(s2)) = (s0, s1, s2) else {
            return false;
        };
        let srcs = [s0, s1, s2];
        let carry_out = if exec == u64::MAX {
            match k0 {
                Some(k) => dispatch::<true, true>(f, mode, d, srcs, exec, cin, k),
                None => dispatch::<true, false>(f, mode, d, srcs, exec, cin, 0),
            }
        } else {
            match k0 {
                Some(k) => dispatch::<false, true>(f, mode, d, srcs, exec, cin, k),
                None => dispatch::<false, false>(f, mode, d, srcs, exec, cin, 0),
            }
        };
        if let Kind::Carry(_) = f.kind {
            self.set_sgpr64(usize::from(f.sdst), carry_out & exec);
        }
        true
    }

    /// A planned 64-bit shift; `false` (nothing written) when a register of a pair is
    /// outside the file.
    #[inline(always)]
    fn shift64(&mut self, f: &Fast, k: Shift64, exec: u64) -> bool {
        let n = self.vgpr.len();
        let (Src::V(b), d) = (f.src[1], usize::from(f.dst)) else {
            return false;
        };
        let b = usize::from(b);
        if b + 1 >= n || d + 1 >= n {
            return false;
        }
        // a uniform amount (constant or SGPR, the common case) shifts every lane alike, so
        // the loop vectorises and no row of amounts is filled
        let uniform = match f.src[0] {
            Src::V(_) => None,
            Src::S(i) => Some(self.sgpr[usize::from(i)]),
            Src::K(c) => Some(c),
        };
        let (lo, hi) = (&self.vgpr[b], &self.vgpr[b + 1]);
        let (mut rlo, mut rhi) = ([0u32; WAVE_SIZE], [0u32; WAVE_SIZE]);
        macro_rules! each {
            ($op:path) => {
                match uniform {
                    Some(n) => {
                        for l in 0..WAVE_SIZE {
                            let r = $op(u64::from(lo[l]) | u64::from(hi[l]) << 32, n);
                            (rlo[l], rhi[l]) = (r as u32, (r >> 32) as u32);
                        }
                    }
                    None => {
                        let Src::V(i) = f.src[0] else { return false };
                        let amount = &self.vgpr[usize::from(i)];
                        for l in 0..WAVE_SIZE {
                            let r = $op(u64::from(lo[l]) | u64::from(hi[l]) << 32, amount[l]);
                            (rlo[l], rhi[l]) = (r as u32, (r >> 32) as u32);
                        }
                    }
                }
            };
        }
        match k {
            Shift64::Lshlrev => each!(int::shl64),
            Shift64::Lshrrev => each!(int::lshr64),
            Shift64::Ashrrev => each!(int::ashr64),
        }
        write_masked(&mut self.vgpr[d], &rlo, exec);
        write_masked(&mut self.vgpr[d + 1], &rhi, exec);
        true
    }

    /// A planned 32-bit compare: the result mask before EXEC.
    #[inline(always)]
    fn compare(&mut self, f: &Fast, truth: u8, ty: CmpType) -> u64 {
        let Wave { vgpr, sgpr, .. } = self;
        // uniform sources splatted into rows on the stack (only when there is one)
        let (ta, tb): (Lanes, Lanes);
        macro_rules! lanes {
            ($s:expr, $tmp:ident) => {
                match $s {
                    Src::V(i) => &vgpr[usize::from(i)],
                    Src::S(i) => {
                        $tmp = [sgpr[usize::from(i)]; WAVE_SIZE];
                        &$tmp
                    }
                    Src::K(k) => {
                        $tmp = [k; WAVE_SIZE];
                        &$tmp
                    }
                }
            };
        }
        let a = lanes!(f.src[0], ta);
        let b = lanes!(f.src[1], tb);
        let mut bits = [0u8; WAVE_SIZE];
        // one loop per condition, so each vectorises to a single compare
        macro_rules! by_truth {
            ($conv:expr) => {{
                let conv = $conv;
                macro_rules! each {
                    ($c:expr) => {
                        for l in 0..WAVE_SIZE {
                            bits[l] = u8::from($c(conv(a[l]), conv(b[l])));
                        }
                    };
                }
                match truth & 7 {
                    0 => {}
                    1 => each!(|x, y| x < y),
                    2 => each!(|x, y| x == y),
                    3 => each!(|x, y| x <= y),
                    4 => each!(|x, y| x > y),
                    5 => each!(|x, y| x != y && x == x && y == y),
                    6 => each!(|x, y| x >= y),
                    _ => each!(|x, y| x == x && y == y),
                }
            }};
        }
        // the truth table's bits for less, equal, greater, unordered
        let t = [
            truth & 1,
            (truth >> 1) & 1,
            (truth >> 2) & 1,
            (truth >> 3) & 1,
        ];
        match ty {
            CmpType::U32 => by_truth!(|v: u32| v),
            CmpType::I32 => by_truth!(|v: u32| v as i32),
            _ if t[3] == 0 => by_truth!(f32::from_bits),
            _ => {
                // conditions true on unordered (the `n*` and `u` forms)
                let pick = |lt: bool, eq: bool, gt: bool, un: bool| {
                    (u8::from(lt) & t[0])
                        | (u8::from(eq) & t[1])
                        | (u8::from(gt) & t[2])
                        | (u8::from(un) & t[3])
                };
                for l in 0..WAVE_SIZE {
                    let (x, y) = (f32::from_bits(a[l]), f32::from_bits(b[l]));
                    bits[l] = pick(x < y, x == y, x > y, x.is_nan() || y.is_nan());
                }
            }
        }
        pack(&bits)
    }
}

/// How many sources a kind reads.
fn arity(kind: Kind) -> usize {
    match kind {
        Kind::Un(_) => 1,
        Kind::Tri(_) | Kind::Float(FloatOp::Fma | FloatOp::Mad) => 3,
        _ => 2,
    }
}

/// A register as 64 cells (`Cell::as_array_of_cells` is newer than the crate's MSRV; the
/// slice form converts back to the array, which cannot fail for a `Lanes`).
#[inline(always)]
fn cells(r: &Cell<Lanes>) -> Option<&Row> {
    let unsized_row: &Cell<[u32]> = r;
    unsized_row.as_slice_of_cells().try_into().ok()
}

/// Runs `$op` chunk by chunk: the chunk of every source is loaded, `$op` computes the
/// results and their carry bits (given the carry-in bits as all-ones/zero dwords), and the
/// results are stored in the lanes EXEC enables (`$full`: all of them). Evaluates to the
/// carry mask. A macro rather than a function taking a closure, so the kernel is always
/// inlined into its loop.
macro_rules! chunks {
    ($full:expr, $u0:expr, $k0:expr, $d:expr, $s:expr, $exec:expr, $cin:expr, |$x:pat_param, $y:pat_param, $z:pat_param, $ci:pat_param| $op:expr) => {{
        let (d, s, exec, cin): (&Row, [&Row; 3], u64, u64) = ($d, $s, $exec, $cin);
        let _ = cin;
        for ch in 0..WAVE_SIZE / CH {
            let base = ch * CH;
            let x = if $u0 { [$k0; CH] } else { load(s[0], base) };
            let (y, z) = (load(s[1], base), load(s[2], base));
            let ci = &EXPAND[((cin >> base) & 0xff) as usize];
            let ($x, $y, $z, $ci): (&C8, &C8, &C8, &C8) = (&x, &y, &z, ci);
            let out: C8 = $op;
            store::<{ $full }>(d, base, &out, exec);
        }
        0u64
    }};
}

/// [`chunks!`] for kernels that also produce a carry per lane (`$op` gives the results and
/// the carries as 0/1); evaluates to the carry mask.
macro_rules! chunks_carry {
    ($full:expr, $u0:expr, $k0:expr, $d:expr, $s:expr, $exec:expr, $cin:expr, |$x:pat_param, $y:pat_param, $ci:pat_param| $op:expr) => {{
        let (d, s, exec, cin): (&Row, [&Row; 3], u64, u64) = ($d, $s, $exec, $cin);
        let mut cy = [0u8; WAVE_SIZE];
        for ch in 0..WAVE_SIZE / CH {
            let base = ch * CH;
            let x = if $u0 { [$k0; CH] } else { load(s[0], base) };
            let y = load(s[1], base);
            let ci = &EXPAND[((cin >> base) & 0xff) as usize];
            let ($x, $y, $ci): (&C8, &C8, &C8) = (&x, &y, ci);
            let (out, carry): (C8, C8) = $op;
            for j in 0..CH {
                cy[base + j] = carry[j] as u8;
            }
            store::<{ $full }>(d, base, &out, exec);
        }
        pack(&cy)
    }};
}

/// Stores a chunk in the lanes EXEC enables (`FULL`: all of them).
#[inline(always)]
fn store<const FULL: bool>(d: &Row, base: usize, out: &C8, exec: u64) {
    if FULL {
        for j in 0..CH {
            d[base + j].set(out[j]);
        }
    } else {
        let m = &EXPAND[((exec >> base) & 0xff) as usize];
        for j in 0..CH {
            let old = d[base + j].get();
            d[base + j].set((out[j] & m[j]) | (old & !m[j]));
        }
    }
}

/// The 8 lanes of `r` from `base`.
#[inline(always)]
fn load(r: &Row, base: usize) -> C8 {
    let mut v = [0u32; CH];
    for j in 0..CH {
        v[j] = r[base + j].get();
    }
    v
}

#[inline(always)]
fn e1(x: &C8, f: impl Fn(u32) -> u32) -> C8 {
    let mut out = [0u32; CH];
    for j in 0..CH {
        out[j] = f(x[j]);
    }
    out
}

#[inline(always)]
fn e2(x: &C8, y: &C8, f: impl Fn(u32, u32) -> u32) -> C8 {
    let mut out = [0u32; CH];
    for j in 0..CH {
        out[j] = f(x[j], y[j]);
    }
    out
}

#[inline(always)]
fn e3(x: &C8, y: &C8, z: &C8, f: impl Fn(u32, u32, u32) -> u32) -> C8 {
    let mut out = [0u32; CH];
    for j in 0..CH {
        out[j] = f(x[j], y[j], z[j]);
    }
    out
}

/// Element-wise with a carry in (`ci` all-ones/zero per lane) and a carry out (0/1) per
/// lane; `f` gives the result and the carry as 0/1.
#[inline(always)]
fn ec(x: &C8, y: &C8, ci: &C8, f: impl Fn(u32, u32, u32) -> (u32, u32)) -> (C8, C8) {
    let (mut out, mut cy) = ([0u32; CH], [0u32; CH]);
    for j in 0..CH {
        (out[j], cy[j]) = f(x[j], y[j], ci[j] & 1);
    }
    (out, cy)
}

/// `a + b + c` (`c` 0 or 1) and its carry out, in 32-bit arithmetic (as [`int::addc`]).
#[inline(always)]
fn add3c(a: u32, b: u32, c: u32) -> (u32, u32) {
    let (s1, c1) = a.overflowing_add(b);
    let (s2, c2) = s1.overflowing_add(c);
    (s2, u32::from(c1 | c2))
}

/// `a - b - c` (`c` 0 or 1) and its borrow out, in 32-bit arithmetic (as [`int::subb`]).
#[inline(always)]
fn sub3b(a: u32, b: u32, c: u32) -> (u32, u32) {
    let (d1, b1) = a.overflowing_sub(b);
    let (d2, b2) = d1.overflowing_sub(c);
    (d2, u32::from(b1 | b2))
}

/// Picks the kernel of `f` and runs it over the wave; returns the carry mask (0 for ops
/// without one).
#[inline(always)]
fn dispatch<const FULL: bool, const U0: bool>(
    f: &Fast,
    mode: super::wave::Mode,
    d: &Row,
    s: [&Row; 3],
    exec: u64,
    cin: u64,
    k0: u32,
) -> u64 {
    macro_rules! run {
        (|$x:pat_param, $y:pat_param, $z:pat_param, $ci:pat_param| $op:expr) => {
            chunks!(FULL, U0, k0, d, s, exec, cin, |$x, $y, $z, $ci| $op)
        };
    }
    // a uniform shift amount (constant or SGPR) lets the shift vectorise
    let uniform_a = U0;
    let n = k0 & 31;
    match f.kind {
        Kind::Un(Un::Mov) => run!(|x, _, _, _| e1(x, |a| a)),
        Kind::Un(Un::Not) => run!(|x, _, _, _| e1(x, |a| !a)),
        Kind::Un(Un::Bfrev) => run!(|x, _, _, _| e1(x, int::brev32)),
        Kind::Bin(Bin::Lshlrev) if uniform_a => run!(|_, y, _, _| e1(y, |b| b << n)),
        Kind::Bin(Bin::Lshrrev) if uniform_a => run!(|_, y, _, _| e1(y, |b| b >> n)),
        Kind::Bin(Bin::Ashrrev) if uniform_a => {
            run!(|_, y, _, _| e1(y, |b| ((b as i32) >> n) as u32))
        }
        Kind::Bin(k) => match k {
            Bin::AddU32 => run!(|x, y, _, _| e2(x, y, u32::wrapping_add)),
            Bin::SubU32 => run!(|x, y, _, _| e2(x, y, u32::wrapping_sub)),
            Bin::SubrevU32 => run!(|x, y, _, _| e2(x, y, |a, b| b.wrapping_sub(a))),
            Bin::MulLoU32 => run!(|x, y, _, _| e2(x, y, u32::wrapping_mul)),
            Bin::MulHiU32 => run!(|x, y, _, _| e2(x, y, int::mul_hi_u32)),
            Bin::MulHiI32 => run!(|x, y, _, _| e2(x, y, int::mul_hi_i32)),
            Bin::MulU32U24 => run!(|x, y, _, _| e2(x, y, int::mul_u32_u24)),
            Bin::MulI32I24 => run!(|x, y, _, _| e2(x, y, int::mul_i32_i24)),
            Bin::And => run!(|x, y, _, _| e2(x, y, |a, b| a & b)),
            Bin::Or => run!(|x, y, _, _| e2(x, y, |a, b| a | b)),
            Bin::Xor => run!(|x, y, _, _| e2(x, y, |a, b| a ^ b)),
            Bin::Xnor => run!(|x, y, _, _| e2(x, y, |a, b| !(a ^ b))),
            Bin::Lshlrev => run!(|x, y, _, _| e2(x, y, |a, b| int::shl32(b, a))),
            Bin::Lshrrev => run!(|x, y, _, _| e2(x, y, |a, b| int::lshr32(b, a))),
            Bin::Ashrrev => run!(|x, y, _, _| e2(x, y, |a, b| int::ashr32(b, a))),
            Bin::MinI32 => run!(|x, y, _, _| e2(x, y, |a, b| (a as i32).min(b as i32) as u32)),
            Bin::MaxI32 => run!(|x, y, _, _| e2(x, y, |a, b| (a as i32).max(b as i32) as u32)),
            Bin::MinU32 => run!(|x, y, _, _| e2(x, y, u32::min)),
            Bin::MaxU32 => run!(|x, y, _, _| e2(x, y, u32::max)),
            Bin::Bfm => run!(|x, y, _, _| e2(x, y, int::bfm)),
            Bin::BcntU32 => run!(|x, y, _, _| e2(x, y, |a, b| a.count_ones().wrapping_add(b))),
        },
        // a constant shift amount (source 1), the compiler's usual form, lets the shift
        // vectorise
        Kind::Tri(Tri::LshlOr | Tri::LshlAdd) if matches!(f.src[1], Src::K(_)) => {
            let n = match f.src[1] {
                Src::K(b) => b & 31,
                _ => 0,
            };
            if f.kind == Kind::Tri(Tri::LshlOr) {
                run!(|x, _, z, _| e2(x, z, |a, c| (a << n) | c))
            } else {
                run!(|x, _, z, _| e2(x, z, |a, c| (a << n).wrapping_add(c)))
            }
        }
        Kind::Tri(k) => match k {
            Tri::MadU32U24 => {
                run!(|x, y, z, _| e3(x, y, z, |a, b, c| int::mul_u32_u24(a, b).wrapping_add(c)))
            }
            Tri::MadI32I24 => {
                run!(|x, y, z, _| e3(x, y, z, |a, b, c| int::mul_i32_i24(a, b).wrapping_add(c)))
            }
            Tri::BfeU32 => run!(|x, y, z, _| e3(x, y, z, int::bfe_u32)),
            Tri::BfeI32 => run!(|x, y, z, _| e3(x, y, z, int::bfe_i32)),
            Tri::Bfi => run!(|x, y, z, _| e3(x, y, z, int::bfi)),
            Tri::Alignbit => run!(|x, y, z, _| e3(x, y, z, int::alignbit)),
            Tri::Alignbyte => run!(|x, y, z, _| e3(x, y, z, int::alignbyte)),
            Tri::Perm => run!(|x, y, z, _| e3(x, y, z, int::perm)),
            Tri::LshlAdd => {
                run!(|x, y, z, _| e3(x, y, z, |a, b, c| int::shl32(a, b).wrapping_add(c)))
            }
            Tri::AddLshl => {
                run!(|x, y, z, _| e3(x, y, z, |a, b, c| int::shl32(a.wrapping_add(b), c)))
            }
            Tri::Add3 => {
                run!(|x, y, z, _| e3(x, y, z, |a, b, c| a.wrapping_add(b).wrapping_add(c)))
            }
            Tri::LshlOr => run!(|x, y, z, _| e3(x, y, z, |a, b, c| int::shl32(a, b) | c)),
            Tri::AndOr => run!(|x, y, z, _| e3(x, y, z, |a, b, c| (a & b) | c)),
            Tri::Or3 => run!(|x, y, z, _| e3(x, y, z, |a, b, c| a | b | c)),
            Tri::Xad => run!(|x, y, z, _| e3(x, y, z, |a, b, c| (a ^ b).wrapping_add(c))),
            Tri::Min3I32 => run!(|x, y, z, _| e3(x, y, z, |a, b, c| (a as i32)
                .min(b as i32)
                .min(c as i32)
                as u32)),
            Tri::Max3I32 => run!(|x, y, z, _| e3(x, y, z, |a, b, c| (a as i32)
                .max(b as i32)
                .max(c as i32)
                as u32)),
            Tri::Min3U32 => run!(|x, y, z, _| e3(x, y, z, |a, b, c| a.min(b).min(c))),
            Tri::Max3U32 => run!(|x, y, z, _| e3(x, y, z, |a, b, c| a.max(b).max(c))),
            Tri::Med3I32 => run!(|x, y, z, _| e3(x, y, z, int::med3_i32)),
            Tri::Med3U32 => run!(|x, y, z, _| e3(x, y, z, int::med3_u32)),
        },
        Kind::Carry(k) => {
            macro_rules! runc {
                ($f:expr) => {
                    chunks_carry!(FULL, U0, k0, d, s, exec, cin, |x, y, ci| ec(x, y, ci, $f))
                };
            }
            match k {
                CarryOp::AddCo => runc!(|a, b, _| add3c(a, b, 0)),
                CarryOp::SubCo => runc!(|a, b, _| sub3b(a, b, 0)),
                CarryOp::SubrevCo => runc!(|a, b, _| sub3b(b, a, 0)),
                CarryOp::Addc => runc!(add3c),
                CarryOp::Subb => runc!(sub3b),
                CarryOp::Subbrev => runc!(|a, b, c| sub3b(b, a, c)),
            }
        }
        Kind::Cndmask => run!(|x, y, _, m| e3(x, y, m, |a, b, m| (b & m) | (a & !m))),
        Kind::Float(k) => {
            let dn = mode.denorm_f32();
            match (dn.flushes_input(), dn.flushes_output()) {
                (false, false) => float::<FULL, U0, false, false>(k, mode, d, s, exec, cin, k0),
                (true, false) => float::<FULL, U0, true, false>(k, mode, d, s, exec, cin, k0),
                (false, true) => float::<FULL, U0, false, true>(k, mode, d, s, exec, cin, k0),
                (true, true) => float::<FULL, U0, true, true>(k, mode, d, s, exec, cin, k0),
            }
        }
        Kind::Cmp { .. } | Kind::Shift64(_) => 0,
    }
}

/// The f32 kernels with input flushing `FI` and output flushing `FO` fixed at compile time.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernel's operands and its compile-time forms
fn float<const FULL: bool, const U0: bool, const FI: bool, const FO: bool>(
    k: FloatOp,
    mode: super::wave::Mode,
    d: &Row,
    s: [&Row; 3],
    exec: u64,
    cin: u64,
    k0: u32,
) -> u64 {
    let fin = fin::<FI>;
    let fout = fout::<FO>;
    macro_rules! run {
        (|$x:pat_param, $y:pat_param, $z:pat_param, $ci:pat_param| $op:expr) => {
            chunks!(FULL, U0, k0, d, s, exec, cin, |$x, $y, $z, $ci| $op)
        };
    }
    match k {
        FloatOp::Add => run!(|x, y, _, _| nan_from(
            e2(x, y, |a, b| fout(fin(a) + fin(b))),
            x,
            y,
            |a, b| fp::add_f32(a, b, mode)
        )),
        FloatOp::Sub => run!(|x, y, _, _| nan_from(
            e2(x, y, |a, b| fout(fin(a) + fin(b ^ 0x8000_0000))),
            x,
            y,
            |a, b| fp::add_f32(a, b ^ 0x8000_0000, mode)
        )),
        FloatOp::Subrev => run!(|x, y, _, _| nan_from(
            e2(x, y, |a, b| fout(fin(b) + fin(a ^ 0x8000_0000))),
            x,
            y,
            |a, b| fp::add_f32(b, a ^ 0x8000_0000, mode)
        )),
        FloatOp::Mul => run!(|x, y, _, _| nan_from(
            e2(x, y, |a, b| fout(fin(a) * fin(b))),
            x,
            y,
            |a, b| fp::mul_f32(a, b, mode)
        )),
        FloatOp::Min => run!(|x, y, _, _| e2(x, y, |a, b| fp::min_f32(a, b, mode))),
        FloatOp::Max => run!(|x, y, _, _| e2(x, y, |a, b| fp::max_f32(a, b, mode))),
        FloatOp::Fma => run!(|x, y, z, _| {
            let mut out = [0u32; CH];
            let mut slow = 0u32;
            for j in 0..CH {
                let (v, redo) = fma_via_f64(fin(x[j]), fin(y[j]), fin(z[j]));
                out[j] = fout(v);
                slow |= u32::from(redo);
            }
            if slow != 0 {
                for j in 0..CH {
                    if fma_via_f64(fin(x[j]), fin(y[j]), fin(z[j])).1 {
                        out[j] = fp::fma_f32(x[j], y[j], z[j], mode);
                    }
                }
            }
            out
        }),
        // mad flushes denormals in and out regardless of MODE (see fp::mad_f32)
        FloatOp::Mad => run!(|x, y, z, _| {
            let mut out = e3(x, y, z, |a, b, c| {
                let p = ftz(fout(f32::from_bits(ftz(a, true)) * fin(b)), true);
                ftz(fout(f32::from_bits(p) + fin(c)), true)
            });
            if any_nan(&out) {
                for j in 0..CH {
                    if is_nan(out[j]) {
                        out[j] = fp::mad_f32(x[j], y[j], z[j], mode);
                    }
                }
            }
            out
        }),
    }
}

/// Whether f32 bits are a NaN.
#[inline(always)]
fn is_nan(v: u32) -> bool {
    v & 0x7fff_ffff > 0x7f80_0000
}

/// Whether any lane of a chunk is a NaN.
#[inline(always)]
fn any_nan(out: &C8) -> bool {
    let mut nan = [0u32; CH];
    for j in 0..CH {
        nan[j] = u32::from(f32::from_bits(out[j]).is_nan());
    }
    (nan[0] | nan[1] | nan[2] | nan[3]) | (nan[4] | nan[5] | nan[6] | nan[7]) != 0
}

/// Which NaN an IEEE operation returns (which operand's payload, its sign, the default
/// NaN) depends on how the compiler ordered the host instruction's operands; lanes whose
/// result is a NaN are recomputed with the general helper so both paths agree bit for bit.
#[inline(always)]
fn nan_from(mut out: C8, x: &C8, y: &C8, general: impl Fn(u32, u32) -> u32) -> C8 {
    if any_nan(&out) {
        for j in 0..CH {
            if is_nan(out[j]) {
                out[j] = general(x[j], y[j]);
            }
        }
    }
    out
}

/// An f32 source, flushed when `FI`.
#[inline(always)]
fn fin<const FI: bool>(v: u32) -> f32 {
    f32::from_bits(ftz(v, FI))
}

/// An f32 result, flushed when `FO`.
#[inline(always)]
fn fout<const FO: bool>(v: f32) -> u32 {
    ftz(v.to_bits(), FO)
}

/// For each byte of a lane mask, the 8 lanes it covers as all-ones/all-zeros dwords.
static EXPAND: [[u32; 8]; 256] = expand_table();

const fn expand_table() -> [[u32; 8]; 256] {
    let mut t = [[0u32; 8]; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut j = 0;
        while j < 8 {
            if (byte >> j) & 1 != 0 {
                t[byte][j] = u32::MAX;
            }
            j += 1;
        }
        byte += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;

    #[test]
    fn lane_masks_pack_and_expand() {
        for mask in [
            0u64,
            u64::MAX,
            1,
            1 << 63,
            0x8000_0000_0000_0001,
            0x0123_4567_89ab_cdef,
            0xf0f0_0f0f_5555_aaaa,
        ] {
            let bytes: [u8; WAVE_SIZE] = std::array::from_fn(|l| ((mask >> l) & 1) as u8);
            assert_eq!(pack(&bytes), mask);
            for l in 0..WAVE_SIZE {
                let m = EXPAND[((mask >> (l & !7)) & 0xff) as usize][l & 7];
                assert_eq!(m != 0, (mask >> l) & 1 != 0, "lane {l} of {mask:#x}");
            }
        }
    }

    /// A small xorshift generator: the test needs no dependency and must be reproducible.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Register values that exercise the float rules: zeros, denormals, infinities, quiet
    /// and signalling NaNs, values next to 1, carries and sign boundaries.
    const VALUES: [u32; 16] = [
        0,
        0x8000_0000,
        1,
        0x807f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x7f80_0001,
        0x3f80_0000,
        0x3f80_0001,
        0x3380_0000,
        0xffff_ffff,
        0x7fff_ffff,
        0x0080_0000,
        31,
        33,
    ];

    fn random_source(rng: &mut Rng) -> u32 {
        match rng.below(6) {
            0 | 1 => 256 + rng.below(8) as u32, // v0..v7
            2 => rng.below(8) as u32,           // s0..s7
            3 => 128 + rng.below(81) as u32,    // inline integers
            4 => [240, 241, 242, 243, 248, 106][rng.below(6) as usize], // floats, vcc_lo
            _ => 255,                           // literal
        }
    }

    /// A random VOP1/VOP2/VOPC/VOP3 instruction (with a literal when a source asks for one).
    fn random_valu(rng: &mut Rng) -> Vec<u8> {
        let src0 = random_source(rng);
        let vdst = rng.below(8) as u32;
        let vsrc1 = rng.below(8) as u32;
        let mut words = match rng.below(4) {
            0 => vec![(rng.below(0x3e) as u32) << 25 | vdst << 17 | vsrc1 << 9 | src0],
            1 => vec![0x3f << 25 | vdst << 17 | (rng.below(0x80) as u32) << 9 | src0],
            2 => vec![0x3e << 25 | (rng.below(0x100) as u32) << 17 | vsrc1 << 9 | src0],
            _ => {
                let op = rng.below(0x300) as u32;
                // clamp, abs, neg and omod mostly clear, sometimes set
                let mods = if rng.below(4) == 0 {
                    rng.next() as u32
                } else {
                    0
                };
                let w0 = 0x34 << 26 | op << 16 | (mods & 0x8700) | vdst;
                let src1 = random_source(rng) & 0x1ff;
                let src2 = random_source(rng) & 0x1ff;
                let w1 = (mods & 0xf800_0000) | src2 << 18 | src1 << 9 | src0;
                vec![w0, w1]
            }
        };
        if words.iter().any(|w| w & 0x1ff == 255) || words.len() == 2 {
            words.push(VALUES[rng.below(16) as usize] ^ (rng.below(2) as u32));
        }
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn random_scalar_source(rng: &mut Rng) -> u32 {
        [
            0, 1, 2, 3, 4, 5, 6, 106, 126, 128, 129, 193, 200, 242, 246, 255,
        ][rng.below(16) as usize]
    }

    /// A random SOP1/SOP2/SOPC instruction or SOPP branch.
    fn random_salu(rng: &mut Rng) -> Vec<u8> {
        let (a, b) = (random_scalar_source(rng), random_scalar_source(rng));
        let d = [0, 1, 2, 4, 106, 126][rng.below(6) as usize];
        let mut words = match rng.below(4) {
            0 => vec![0b10 << 30 | (rng.below(0x30) as u32) << 23 | d << 16 | b << 8 | a],
            1 => vec![0x17d << 23 | d << 16 | (rng.below(0x40) as u32) << 8 | a],
            2 => vec![0x17e << 23 | (rng.below(0x14) as u32) << 16 | b << 8 | a],
            _ => vec![0x17f << 23 | (rng.below(13) as u32) << 16 | rng.below(0x10000) as u32],
        };
        if words[0] >> 30 != 0b11 && (a == 255 || b == 255) {
            words.push(VALUES[rng.below(16) as usize]);
        }
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn fast_path_matches_the_general_interpreter() {
        let mut kinds = std::collections::BTreeSet::new();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut planned = 0;
        for _ in 0..20_000 {
            let code = if rng.below(3) == 0 {
                random_salu(&mut rng)
            } else {
                random_valu(&mut rng)
            };
            let target = if rng.below(2) == 0 {
                Target::Gfx900
            } else {
                Target::Gfx90a
            };
            let fast = crate::exec::CodeCache::new(target, 0, &code);
            if fast.fast_path_entries() == 0
                || !matches!(fast.get(0), Some(Ok(c)) if c.fast != Plan::None)
            {
                continue;
            }
            planned += 1;
            if let Some(Ok(c)) = fast.get(0) {
                kinds.insert(c.inst.op.mnemonic());
            }
            let general = fast.clone().without_fast_path();
            let mut w = Wave::new(target, 8, 0);
            for v in 0..8 {
                for l in 0..WAVE_SIZE {
                    w.vgpr[v][l] = if rng.below(3) == 0 {
                        rng.next() as u32
                    } else {
                        VALUES[rng.below(16) as usize]
                    };
                }
            }
            for i in 0..8 {
                w.sgpr[i] = VALUES[rng.below(16) as usize];
            }
            w.set_vcc(rng.next());
            w.scc = rng.below(2) == 0;
            w.set_exec(if rng.below(2) == 0 {
                u64::MAX
            } else {
                rng.next()
            });
            w.mode = super::super::wave::Mode(rng.below(0x400) as u32);
            let mut a = w.clone();
            let mut b = w;
            let mut env = crate::exec::HostEnv::new(0);
            let sa = a.run(&fast, &mut env, 1);
            let sb = b.run(&general, &mut env, 1);
            let disasm = crate::disasm::disasm(&fast.get(0).unwrap().as_ref().unwrap().inst);
            assert_eq!(sa, sb, "{disasm}");
            assert_eq!(a.vgpr, b.vgpr, "{disasm} mode {:#x}", a.mode.0);
            assert_eq!(a.sgpr, b.sgpr, "{disasm}");
            assert_eq!((a.scc, a.pc), (b.scc, b.pc), "{disasm}");
        }
        // the generator reaches the planned instructions often enough to mean something
        eprintln!("{planned} planned, {} ops: {kinds:?}", kinds.len());
        assert!(planned > 2_000, "only {planned} planned instructions");
    }

    #[test]
    fn shift_and_or_add_by_a_constant_match_the_general_interpreter() {
        // (encodings from llvm-mc-15 -mcpu=gfx900; all planned)
        let cases: [[u8; 8]; 5] = [
            // v_lshl_or_b32 v0, s6, 8, v0
            [0x00, 0x00, 0x00, 0xd2, 0x06, 0x10, 0x01, 0x04],
            // v_lshl_or_b32 v1, v2, 40, v3 (only bits 4:0 of the amount count)
            [0x01, 0x00, 0x00, 0xd2, 0x02, 0x51, 0x0d, 0x04],
            // v_lshl_add_u32 v4, v5, 3, v6
            [0x04, 0x00, 0xfd, 0xd1, 0x05, 0x07, 0x19, 0x04],
            // v_lshl_add_u32 v2, v2, 33, s1
            [0x02, 0x00, 0xfd, 0xd1, 0x02, 0x43, 0x05, 0x00],
            // v_lshl_or_b32 v3, v1, s2, v3 (an SGPR amount: the per-lane form)
            [0x03, 0x00, 0x00, 0xd2, 0x01, 0x05, 0x0c, 0x04],
        ];
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for code in cases {
            one_instruction_matches_the_general_interpreter(&code, true, &mut rng, |w, rng| {
                for i in 0..8 {
                    w.sgpr[i] = rng.next() as u32;
                }
            });
        }
    }

    /// Runs the one instruction in `code` (planned or not, as `planned` says) on 64 random
    /// 8-VGPR waves, `setup` finishing each, with and without the fast path: the same stop,
    /// VGPRs and PC.
    fn one_instruction_matches_the_general_interpreter(
        code: &[u8],
        planned: bool,
        rng: &mut Rng,
        setup: impl Fn(&mut Wave, &mut Rng),
    ) {
        let fast = crate::exec::CodeCache::new(Target::Gfx900, 0, code);
        let Some(Ok(c)) = fast.get(0) else {
            panic!("decodes")
        };
        assert_eq!(c.fast != Plan::None, planned, "{:?} planned", c.inst.op);
        let general = fast.clone().without_fast_path();
        for round in 0..64 {
            let mut w = Wave::new(Target::Gfx900, 8, 0);
            for v in 0..8 {
                for l in 0..WAVE_SIZE {
                    w.vgpr[v][l] = rng.next() as u32;
                }
            }
            setup(&mut w, rng);
            w.set_exec(if round % 2 == 0 { u64::MAX } else { rng.next() });
            let (mut a, mut b) = (w.clone(), w);
            let mut env = crate::exec::HostEnv::new(0);
            let sa = a.run(&fast, &mut env, 1);
            let sb = b.run(&general, &mut env, 1);
            assert_eq!(sa, sb, "{:?}", c.inst.op);
            assert_eq!(a.vgpr, b.vgpr, "{:?}", c.inst.op);
            assert_eq!(a.pc, b.pc);
        }
    }

    #[test]
    fn shifts_of_vgpr_pairs_match_the_general_interpreter() {
        // (encoding from llvm-mc-15 -mcpu=gfx900, planned)
        let cases: [([u8; 8], bool); 6] = [
            // v_lshlrev_b64 v[0:1], 2, v[0:1]
            ([0x00, 0x00, 0x8f, 0xd2, 0x82, 0x00, 0x02, 0x00], true),
            // v_lshrrev_b64 v[2:3], v4, v[6:7]
            ([0x02, 0x00, 0x90, 0xd2, 0x04, 0x0d, 0x02, 0x00], true),
            // v_ashrrev_i64 v[4:5], s3, v[4:5]
            ([0x04, 0x00, 0x91, 0xd2, 0x03, 0x08, 0x02, 0x00], true),
            // v_ashrrev_i64 v[0:1], v7, v[6:7]
            ([0x00, 0x00, 0x91, 0xd2, 0x07, 0x0d, 0x02, 0x00], true),
            // v_lshlrev_b64 v[6:7], v0, v[7:8]: v8 is outside an 8-VGPR wave
            ([0x06, 0x00, 0x8f, 0xd2, 0x00, 0x0f, 0x02, 0x00], true),
            // v_lshlrev_b64 v[0:1], 1, s[2:3]: a scalar pair takes the general path
            ([0x00, 0x00, 0x8f, 0xd2, 0x81, 0x04, 0x00, 0x00], false),
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for (code, planned) in cases {
            one_instruction_matches_the_general_interpreter(&code, planned, &mut rng, |w, rng| {
                // shift amounts beyond 63 (only bits 5:0 count) and around 32
                w.vgpr[4][0] = 32;
                w.vgpr[7][1] = 95;
                for i in 0..8 {
                    w.sgpr[i] = rng.below(130) as u32;
                }
            });
        }
    }

    #[test]
    fn fma_via_f64_matches_the_host_fma_or_asks_for_it() {
        // operands around rounding midpoints, denormals, overflow and cancellation
        let vals = [
            1.0f32,
            -1.0,
            1.0 + f32::EPSILON,
            1.0 - f32::EPSILON / 2.0,
            0.5,
            3.0,
            1e-38,
            1e-45,
            -1e-40,
            f32::MAX,
            -f32::MAX,
            f32::MIN_POSITIVE,
            16_777_217.0,
            0.1,
            -0.3,
            f32::INFINITY,
            0.0,
            -0.0,
        ];
        let mut checked = 0;
        for &x in &vals {
            for &y in &vals {
                for &z in &vals {
                    let (v, slow) = fma_via_f64(x, y, z);
                    if !slow {
                        let want = x.mul_add(y, z);
                        assert_eq!(v.to_bits(), want.to_bits(), "fma({x:e}, {y:e}, {z:e})");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > vals.len() * vals.len());
        // a midpoint: 1 + 2^-24 is exactly halfway between 1 and 1 + 2^-23
        let (_, slow) = fma_via_f64(1.0, 1.0, f32::EPSILON / 2.0);
        assert!(slow);
    }
}

// ---------------------------------------------------------------- scalar fast path

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

/// A fast-path plan of one cache entry (an explicit tag byte: the run loop's match reads it
/// directly instead of decoding a niche of the payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Plan {
    /// The general interpreter runs it.
    None,
    /// A VALU instruction.
    Vector(Fast),
    /// A SALU instruction.
    Scalar(SFast),
    /// A relative branch: taken to `next + 4 * offset`.
    Branch(Cond, i16),
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
