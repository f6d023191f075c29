//! The pre-decoded instruction cache: one entry per dword of a code region, decoded once and
//! shared by every wave that runs the code (the model keeps one per code object).

use crate::decode::{decode, DecodeError, Instruction, Operand};
use crate::table::Field;
use crate::Target;

use super::env::AtomicOp;

/// What a memory instruction does (a column of its table row, [`crate::table::Row::mem`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    /// A load of `bytes` per lane (`signed`: sign-extend sub-dword data).
    Load {
        /// Bytes per lane.
        bytes: u32,
        /// Sign-extend sub-dword loads.
        signed: bool,
        /// Which bits of the destination VGPR the data goes to.
        half: D16,
    },
    /// A store of `bytes` per lane.
    Store {
        /// Bytes per lane.
        bytes: u32,
        /// Which bits of the data VGPR are stored: bits 31:16 for `*_d16_hi` stores.
        half: D16,
    },
    /// An atomic read-modify-write.
    Atomic {
        /// The operation.
        op: AtomicOp,
        /// 64-bit operation.
        wide: bool,
    },
    /// Something the interpreter does not model (format conversions, d16 halves, …).
    Other,
}

/// Where a load's data lands in its destination VGPR: `*_d16` loads write bits 15:0 and
/// `*_d16_hi` loads bits 31:16, keeping the other half; all other loads write whole dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum D16 {
    /// Whole dwords.
    Full,
    /// Bits 15:0 (`*_d16`).
    Lo,
    /// Bits 31:16 (`*_d16_hi`).
    Hi,
}

/// Type of a VOP's sources, for inline constants and literals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrcType {
    /// Integer or untyped bits.
    Int,
    /// Half precision: float inline constants are f16 bit patterns.
    F16,
    /// Single precision.
    F32,
    /// Double precision: a 32-bit literal is the high half.
    F64,
}

/// One cache entry: the decoded instruction and what the interpreter derived from it.
#[derive(Clone, Debug)]
pub struct Cached {
    /// The instruction.
    pub inst: Instruction,
    /// Source type (the row's [`crate::table::Row::src`]: the mnemonic's last type token).
    pub src_type: SrcType,
    /// Memory behaviour (for DS, MUBUF, FLAT/GLOBAL/SCRATCH, and SMEM stores and atomics).
    pub mem: MemKind,
    /// Vector compare (`v_cmp*`), if it is one.
    pub cmp: Option<Cmp>,
    /// The operands of fields A, B, C, D and E (in that order), looked up once.
    pub fields: [Option<Operand>; 5],
    /// The fast-path plan, for the common VALU instructions without modifiers.
    pub(crate) fast: super::fast::Plan,
    /// The VGPRs it names (for the out-of-range rules).
    pub vgprs: super::vgpr_range::VgprUse,
}

/// Operand type of a vector compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpType {
    /// f16.
    F16,
    /// f32.
    F32,
    /// f64.
    F64,
    /// i16.
    I16,
    /// u16.
    U16,
    /// i32.
    I32,
    /// u32.
    U32,
    /// i64.
    I64,
    /// u64.
    U64,
}

/// A decoded `v_cmp[x]_<cond>_<type>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cmp {
    /// Condition name (`lt`, `eq`, `nge`, `class`, …).
    pub cond: &'static str,
    /// Operand type.
    pub ty: CmpType,
    /// `v_cmpx`: also writes EXEC.
    pub writes_exec: bool,
    /// Truth table over the outcome of comparing the operands: bit 0 less, bit 1 equal,
    /// bit 2 greater, bit 3 unordered (a NaN operand); `None` for `class`.
    pub truth: Option<u8>,
}

/// Pre-decoded code: an entry for every dword offset of `[base, base + len)`.
#[derive(Clone, Debug)]
pub struct CodeCache {
    base: u64,
    target: Target,
    entries: Vec<Result<Cached, DecodeError>>,
    /// The compiled blocks, when the code runs compiled (see [`super::jit`]).
    blocks: Option<super::jit::Blocks>,
}

impl CodeCache {
    /// Decodes `code` (loaded at `base`) for `target` at every dword offset, so a branch to
    /// any dword finds its instruction decoded. The code runs compiled (blocks built on first
    /// use, see [`super::jit`]) unless the environment variable `KFD_MODEL_JIT` is `0`.
    pub fn new(target: Target, base: u64, code: &[u8]) -> Self {
        let entries: Vec<_> = (0..code.len() / 4)
            .map(|i| {
                let off = i * 4;
                decode(&code[off..], base + off as u64, target).map(|(inst, _)| classify(inst))
            })
            .collect();
        let cache = CodeCache {
            base,
            target,
            entries,
            blocks: None,
        };
        if super::jit::enabled_by_environment() {
            cache.with_compiler()
        } else {
            cache
        }
    }

    /// The same code, run through compiled blocks whatever the environment says.
    pub fn with_compiler(mut self) -> Self {
        self.blocks = Some(super::jit::Blocks::new(self.entries.len()));
        self
    }

    /// The same code, run by the interpreter alone whatever the environment says: the
    /// reference for differential tests of the compiler.
    pub fn without_compiler(mut self) -> Self {
        self.blocks = None;
        self
    }

    /// The compiled blocks, if this code runs compiled.
    pub fn blocks(&self) -> Option<&super::jit::Blocks> {
        self.blocks.as_ref()
    }

    /// The same code with the fast path (and so the compiler, which builds on it) switched
    /// off: every instruction runs through the general interpreter. For differential tests
    /// of the fast path, and for debugging.
    pub fn without_fast_path(mut self) -> Self {
        for c in self.entries.iter_mut().flatten() {
            c.fast = super::fast::Plan::None;
        }
        self.without_compiler()
    }

    /// How many entries have a fast-path plan (a measure of the fast path's coverage).
    pub fn fast_path_entries(&self) -> usize {
        self.entries
            .iter()
            .flatten()
            .filter(|c| c.fast != super::fast::Plan::None)
            .count()
    }

    /// The target the code was decoded for.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The code's base address.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// The entry at `pc`, or `None` outside the region (or at an unaligned address).
    #[inline]
    pub fn get(&self, pc: u64) -> Option<&Result<Cached, DecodeError>> {
        let off = pc.checked_sub(self.base)?;
        if off % 4 != 0 {
            return None;
        }
        self.entries.get(usize::try_from(off / 4).ok()?)
    }
}

fn classify(inst: Instruction) -> Cached {
    // What the interpreter needs to know about the instruction is in its table row,
    // derived once by the generator (isa/tools/props.py).
    let row = inst.row();
    let (src_type, mem, cmp) = (row.src, row.mem, row.cmp);
    let mut fields = [None; 5];
    for (i, f) in [Field::A, Field::B, Field::C, Field::D, Field::E]
        .into_iter()
        .enumerate()
    {
        fields[i] = inst
            .row()
            .slots
            .iter()
            .zip(inst.operands())
            .find(|(s, _)| s.field == f)
            .map(|(_, o)| *o);
    }
    let fast = match super::fast::plan(&inst, &fields, src_type, cmp) {
        Some(f) => super::fast::Plan::Vector(f),
        None => super::fast::plan_scalar(&inst, &fields),
    };
    let vgprs = super::vgpr_range::vgpr_use(&inst, &fields, mem);
    Cached {
        inst,
        src_type,
        mem,
        cmp,
        fields,
        fast,
        vgprs,
    }
}
