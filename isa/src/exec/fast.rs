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
//!
//! The SALU instructions and SOPP branches have their own plans ([`SFast`], [`Cond`]) in
//! `fast/scalar.rs`; [`Plan`] is what a cache entry holds.

use std::cell::Cell;

use crate::decode::{Ext, Instruction, Operand};
use crate::table::{Enc, Op};

use super::cache::{Cmp, CmpType, SrcType};
use super::float as fp;
use super::int;
use super::operand::{float_const, scalar_index};
use super::wave::{sreg, write_masked, Lanes, Round, Wave, WAVE_SIZE};

mod scalar;
pub(crate) use scalar::plan_scalar;
pub use scalar::{Cond, SFast};

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
mod tests;
