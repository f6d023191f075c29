//! The block compiler: a code object's straight-line runs of instructions translated, once,
//! into blocks of pre-decoded steps that run one after another with no per-instruction fetch,
//! decode-cache lookup or dispatch on the encoding.
//!
//! # Design
//!
//! This is a threaded-code compiler, not a machine-code generator. Each step is a small enum
//! whose operands (register numbers, constants, offsets) were resolved when the block was
//! built; the step's work is one of the interpreter's own lane kernels (the `fast` module's
//! loops over 64-lane arrays, which the Rust compiler vectorises with the host's SIMD), so a
//! compiled step and the interpreter compute with the very same code. What compiling removes
//! is what surrounds that work in the interpreter's run loop: the decode-cache lookup and
//! the fetch checks per instruction, the encoding dispatch, the VGPR-index-mode test, and for
//! memory the classification of the access; block-wide facts (the highest VGPR a memory step
//! names) are checked once on entry.
//!
//! Why not Cranelift: a machine-code back end needs `unsafe` to call the code it emits (the
//! `isa` crate forbids `unsafe`), a second implementation of every semantic it covers (denormal
//! flushing, NaN selection, rounding MODE, carries), and a dependency tree larger than the
//! crate; the differential tests below would then be the only guard of that second
//! implementation. Threaded code reuses the interpreter's vectorised kernels, so it is exact
//! by construction, and it leaves a clear seam (the `Step` enum) where a later back end can compile
//! a whole block's lane loops into one.
//!
//! # Fallback
//!
//! Anything a block does not compile is a `Step::Interp` step: the interpreter runs that one
//! instruction (it sets the PC, counts it, reports its faults). A compiled step that meets a
//! case its kernel does not cover at run time (a partial EXEC for a whole-wave memory run, an
//! LDS lane outside the allocation, a directed rounding MODE for the f32 kernels) hands the
//! same instruction to the interpreter, so faults are always the interpreter's reports. A
//! block whose registers the wave did not allocate, one longer than the budget left, and any
//! code run in VGPR index mode, go to the interpreter instruction by instruction.
//!
//! # Switch
//!
//! [`CodeCache::new`](super::CodeCache::new) compiles lazily (a block the first time a wave
//! enters it) unless the environment variable `KFD_MODEL_JIT` is `0`;
//! [`CodeCache::with_compiler`](super::CodeCache::with_compiler) and
//! [`CodeCache::without_compiler`](super::CodeCache::without_compiler) choose explicitly.

mod run;

use std::sync::OnceLock;

use crate::table::{Enc, Op};
use crate::Target;

use super::cache::{Cached, CodeCache, MemKind, D16};
use super::fast::{Cond, Fast, Plan, SFast};

/// The most instructions one block holds (a longer run continues in the next block).
const MAX_BLOCK: usize = 256;

/// The environment variable that switches the compiler off (`0`) for A/B comparison.
pub const SWITCH: &str = "KFD_MODEL_JIT";

/// Whether the environment asks for compiled execution (read once per process).
pub fn enabled_by_environment() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var(SWITCH).map_or(true, |v| v.trim() != "0"))
}

/// The `saddr` field value that means "no SGPR base" (`off`).
const SADDR_OFF: u8 = 0x7f;

/// One pre-decoded instruction of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A VALU instruction on the fast path's kernels.
    Valu(Fast),
    /// A SALU instruction on the fast path's kernels.
    Salu(SFast),
    /// An instruction with no effect on the functional model (`s_nop`, `s_waitcnt`).
    Nop,
    /// `global_load_dword vdst, vaddr, saddr|off offset:…` (whole-wave runs compiled).
    GlobalLoadDword {
        /// Address VGPR (the low one of a pair when `saddr` is off).
        vaddr: u8,
        /// SGPR pair of the base, or [`SADDR_OFF`].
        saddr: u8,
        /// Destination VGPR.
        vdst: u8,
        /// Signed 13-bit immediate offset.
        offset: i16,
    },
    /// `global_store_dword vaddr, vdata, saddr|off offset:…` (whole-wave runs compiled).
    GlobalStoreDword {
        /// Address VGPR (the low one of a pair when `saddr` is off).
        vaddr: u8,
        /// SGPR pair of the base, or [`SADDR_OFF`].
        saddr: u8,
        /// Data VGPR.
        vdata: u8,
        /// Signed 13-bit immediate offset.
        offset: i16,
    },
    /// `ds_read_b32 vdst, addr offset:…` with every enabled lane inside the LDS allocation.
    DsReadB32 {
        /// Address VGPR.
        addr: u8,
        /// Destination VGPR.
        vdst: u8,
        /// Unsigned 16-bit offset.
        offset: u16,
    },
    /// `ds_read2_b32 vdst[0:1], addr offset0:… offset1:…` (dword offsets) with both dwords
    /// of every enabled lane inside the LDS allocation.
    DsRead2B32 {
        /// Address VGPR.
        addr: u8,
        /// First of the two destination VGPRs.
        vdst: u8,
        /// The two offsets, in dwords.
        offsets: [u8; 2],
    },
    /// `ds_write_b32 addr, data offset:…` with every enabled lane inside the LDS allocation.
    DsWriteB32 {
        /// Address VGPR.
        addr: u8,
        /// Data VGPR.
        data: u8,
        /// Unsigned 16-bit offset.
        offset: u16,
    },
    /// A relative branch (ends the block); taken to `target`.
    Branch {
        /// The condition.
        cond: Cond,
        /// Byte address of the taken branch.
        target: u64,
    },
    /// The interpreter runs this instruction.
    Interp,
}

/// A step and where its instruction lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    /// Byte address of the instruction.
    pub pc: u64,
    /// Byte address of the next instruction.
    pub next: u64,
    /// What it does.
    pub step: Step,
}

/// A compiled straight-line run of instructions, entered at its first instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// The steps, in program order; a branch, if any, is the last.
    pub steps: Box<[Placed]>,
    /// One past the highest VGPR a compiled memory step names (the VALU kernels check their
    /// own), so a wave with fewer is sent to the interpreter with one compare.
    pub vgpr_end: usize,
    /// Some instruction of the block issues vector memory.
    pub issues_vector_memory: bool,
    /// Some instruction of the block is an `s_waitcnt` on VM_CNT: a run to the first wait
    /// for a load ([`Wave::run_to_memory_wait`](crate::exec::Wave::run_to_memory_wait))
    /// takes such a block an instruction at a time once a load may be pending.
    pub waits_for_vector_memory: bool,
}

/// The compiled blocks of one code region, by entry address (dword offset from the base),
/// each built the first time a wave enters there. Lookups after that take no lock.
#[derive(Clone, Debug, Default)]
pub struct Blocks {
    slots: Box<[OnceLock<Option<Box<Block>>>]>,
}

impl Blocks {
    /// Room for a block at every dword of a region of `dwords` dwords.
    pub(crate) fn new(dwords: usize) -> Self {
        Blocks {
            slots: (0..dwords).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The block entered at `pc`, compiled on first use; `None` where no block starts (outside
    /// the region, an unaligned PC, an undecodable word): the interpreter reports those.
    #[inline]
    pub(crate) fn at(&self, code: &CodeCache, pc: u64) -> Option<&Block> {
        let off = pc.checked_sub(code.base())?;
        if off % 4 != 0 {
            return None;
        }
        let slot = self.slots.get(usize::try_from(off / 4).ok()?)?;
        slot.get_or_init(|| compile(code, pc).map(Box::new))
            .as_deref()
    }

    /// How many blocks have been compiled so far.
    pub fn compiled(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s.get(), Some(Some(_))))
            .count()
    }
}

/// Builds the block entered at `pc`: instructions up to a branch, an undecodable word, the
/// end of the region, or [`MAX_BLOCK`] instructions.
fn compile(code: &CodeCache, pc: u64) -> Option<Block> {
    let mut steps = Vec::new();
    let mut vgpr_end = 0usize;
    let (mut issues_vector_memory, mut waits_for_vector_memory) = (false, false);
    let mut at = pc;
    while steps.len() < MAX_BLOCK {
        let Some(Ok(c)) = code.get(at) else { break };
        issues_vector_memory |= super::interp::issues_vector_memory(c);
        waits_for_vector_memory |= super::interp::waits_for_vector_memory(c);
        let next = at.wrapping_add(u64::from(c.inst.len));
        let step = step_of(c, code.target(), next);
        vgpr_end = vgpr_end.max(vgprs_named(&step));
        steps.push(Placed { pc: at, next, step });
        if matches!(step, Step::Branch { .. }) {
            break;
        }
        at = next;
    }
    if steps.is_empty() {
        return None;
    }
    Some(Block {
        steps: steps.into_boxed_slice(),
        vgpr_end,
        issues_vector_memory,
        waits_for_vector_memory,
    })
}

/// One past the highest VGPR a compiled memory step reads or writes (0 for other steps).
fn vgprs_named(step: &Step) -> usize {
    let pair = |vaddr: u8, saddr: u8| usize::from(vaddr) + if saddr == SADDR_OFF { 2 } else { 1 };
    match *step {
        Step::GlobalLoadDword {
            vaddr, saddr, vdst, ..
        } => pair(vaddr, saddr).max(usize::from(vdst) + 1),
        Step::GlobalStoreDword {
            vaddr,
            saddr,
            vdata,
            ..
        } => pair(vaddr, saddr).max(usize::from(vdata) + 1),
        Step::DsReadB32 { addr, vdst, .. } => usize::from(addr.max(vdst)) + 1,
        Step::DsRead2B32 { addr, vdst, .. } => usize::from(addr).max(usize::from(vdst) + 1) + 1,
        Step::DsWriteB32 { addr, data, .. } => usize::from(addr.max(data)) + 1,
        _ => 0,
    }
}

/// The step for one decoded instruction.
fn step_of(c: &Cached, target: Target, next: u64) -> Step {
    match c.fast {
        Plan::Vector(f) => return Step::Valu(f),
        Plan::Scalar(f) => return Step::Salu(f),
        Plan::Branch(Cond::Never, _) => return Step::Nop,
        Plan::Branch(cond, offset) => {
            return Step::Branch {
                cond,
                target: next.wrapping_add_signed(i64::from(offset) * 4),
            }
        }
        Plan::None => {}
    }
    let [w0, w1] = c.inst.words;
    match (c.inst.enc, c.inst.op) {
        (Enc::Global, Op::GlobalLoadDword | Op::GlobalStoreDword) => {
            // gfx90a's ACC bit (data in AGPRs) stays with the interpreter
            let acc = target == Target::Gfx90a && (w1 >> 23) & 1 != 0;
            let whole_dword = matches!(
                c.mem,
                MemKind::Load {
                    bytes: 4,
                    half: D16::Full,
                    ..
                } | MemKind::Store {
                    bytes: 4,
                    half: D16::Full
                }
            );
            if acc || !whole_dword {
                return Step::Interp;
            }
            let vaddr = (w1 & 0xff) as u8;
            let saddr = ((w1 >> 16) & 0x7f) as u8;
            let offset = (((w0 & 0x1fff) << 19) as i32 >> 19) as i16;
            if c.inst.op == Op::GlobalLoadDword {
                Step::GlobalLoadDword {
                    vaddr,
                    saddr,
                    vdst: (w1 >> 24) as u8,
                    offset,
                }
            } else {
                Step::GlobalStoreDword {
                    vaddr,
                    saddr,
                    vdata: ((w1 >> 8) & 0xff) as u8,
                    offset,
                }
            }
        }
        (Enc::Ds, Op::DsReadB32 | Op::DsWriteB32 | Op::DsRead2B32) => {
            let gds = (w0 >> 16) & 1 != 0;
            let acc = target == Target::Gfx90a && (w0 >> 25) & 1 != 0;
            if gds || acc {
                return Step::Interp;
            }
            let addr = (w1 & 0xff) as u8;
            let offset = (w0 & 0xffff) as u16;
            if c.inst.op == Op::DsRead2B32 {
                Step::DsRead2B32 {
                    addr,
                    vdst: (w1 >> 24) as u8,
                    offsets: [(w0 & 0xff) as u8, ((w0 >> 8) & 0xff) as u8],
                }
            } else if c.inst.op == Op::DsReadB32 {
                Step::DsReadB32 {
                    addr,
                    vdst: (w1 >> 24) as u8,
                    offset,
                }
            } else {
                Step::DsWriteB32 {
                    addr,
                    data: ((w1 >> 8) & 0xff) as u8,
                    offset,
                }
            }
        }
        _ => Step::Interp,
    }
}

#[cfg(test)]
mod tests;
