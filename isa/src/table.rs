//! The one instruction table: every row is one opcode of one encoding on a set of targets.
//!
//! The rows live in `table_rows.rs` (generated from probes of `llvm-mc-15`, see
//! `isa/tools/`), expanded by the `isa_table!` macro into the [`Op`] enum, the [`ROWS`] slice and
//! compile-time per-target lookup arrays indexed by opcode. The decoder, the disassembler
//! and the interpreter read only this table: no opcode number or mnemonic is written
//! anywhere else, and what they need to know about an instruction (source type, memory
//! kind, compare, [`prop`] bits) is a column of its row, so nothing parses a mnemonic.

pub use crate::exec::cache::{Cmp, CmpType, MemKind, SrcType, D16};
pub use crate::exec::AtomicOp;

/// The instruction encodings (formats) of GFX9.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enc {
    /// Scalar, two sources.
    Sop2,
    /// Scalar, 16-bit immediate.
    Sopk,
    /// Scalar, one source.
    Sop1,
    /// Scalar compare.
    Sopc,
    /// Scalar program control.
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector, two sources (32-bit encoding).
    Vop2,
    /// Vector, one source (32-bit encoding).
    Vop1,
    /// Vector compare (32-bit encoding).
    Vopc,
    /// Vector, 64-bit encoding (VOP3A/VOP3B, and VOP3P/MAI at opcodes 0x380 and up).
    Vop3,
    /// Local/global data share.
    Ds,
    /// Untyped buffer memory.
    Mubuf,
    /// Flat memory.
    Flat,
    /// Global memory (the FLAT encoding, segment 2).
    Global,
    /// Scratch memory (the FLAT encoding, segment 1).
    Scratch,
    /// Typed buffer memory (format from the instruction's DFMT/NFMT fields).
    Mtbuf,
    /// Export (graphics: decode and disassembly only).
    Exp,
    /// Image memory (decode and disassembly only).
    Mimg,
}

impl Enc {
    /// Number of opcodes of the encoding (size of its lookup block).
    pub const fn opcode_space(self) -> usize {
        match self {
            Enc::Sop2 => 128,
            Enc::Sopk => 32,
            Enc::Sop1 => 256,
            Enc::Sopc => 128,
            Enc::Sopp => 128,
            Enc::Smem => 256,
            Enc::Vop2 => 64,
            Enc::Vop1 => 256,
            Enc::Vopc => 256,
            Enc::Vop3 => 1024,
            Enc::Ds => 256,
            Enc::Mubuf => 128,
            Enc::Flat | Enc::Global | Enc::Scratch => 128,
            Enc::Mtbuf => 16,
            Enc::Exp => 1,
            Enc::Mimg => 128,
        }
    }

    const fn base(self) -> usize {
        match self {
            Enc::Sop2 => 0,
            Enc::Sopk => 128,
            Enc::Sop1 => 160,
            Enc::Sopc => 416,
            Enc::Sopp => 544,
            Enc::Smem => 672,
            Enc::Vop2 => 928,
            Enc::Vop1 => 992,
            Enc::Vopc => 1248,
            Enc::Vop3 => 1504,
            Enc::Ds => 2528,
            Enc::Mubuf => 2784,
            Enc::Flat => 2912,
            Enc::Global => 3040,
            Enc::Scratch => 3168,
            Enc::Mtbuf => 3296,
            Enc::Exp => 3312,
            Enc::Mimg => 3313,
        }
    }

    /// The encoding's name, as used in error messages.
    pub const fn name(self) -> &'static str {
        match self {
            Enc::Sop2 => "SOP2",
            Enc::Sopk => "SOPK",
            Enc::Sop1 => "SOP1",
            Enc::Sopc => "SOPC",
            Enc::Sopp => "SOPP",
            Enc::Smem => "SMEM",
            Enc::Vop2 => "VOP2",
            Enc::Vop1 => "VOP1",
            Enc::Vopc => "VOPC",
            Enc::Vop3 => "VOP3",
            Enc::Ds => "DS",
            Enc::Mubuf => "MUBUF",
            Enc::Flat => "FLAT",
            Enc::Global => "GLOBAL",
            Enc::Scratch => "SCRATCH",
            Enc::Mtbuf => "MTBUF",
            Enc::Exp => "EXP",
            Enc::Mimg => "MIMG",
        }
    }
}

const LOOKUP_LEN: usize = 3441;

/// Which bit-field of the encoding an operand comes from. The bit positions per
/// encoding are in the decoder (`decode.rs`), the only place that knows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Destination (SDST, VDST).
    D,
    /// VOP3B scalar destination (carry-out / div_scale VCC).
    E,
    /// First source (SSRC0, SRC0, DS ADDR, buffer/flat VADDR/ADDR).
    A,
    /// Second source (SSRC1, VSRC1/SRC1, DS DATA0, buffer VDATA, flat DATA).
    B,
    /// Third source (SRC2, DS DATA1).
    C,
    /// An immediate field (SIMM16, SMEM offset…).
    K,
    /// SMEM base, FLAT SADDR, MIMG SSAMP.
    S,
    /// Buffer resource (SRSRC).
    R,
    /// SMEM offset, buffer SOFFSET.
    O,
    /// The implicit VCC operand printed by VOP2 carry and VOPC instructions.
    Vcc,
}

/// What register file an operand slot prints as (for fields that allow a choice, the
/// register file of the row's own operand).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Scalar (SGPR, special register, constant).
    S,
    /// Vector register (or, for 9-bit source fields, any source).
    V,
    /// Accumulation register (AGPR).
    A,
    /// An immediate.
    Imm,
    /// The `off` keyword (no SADDR / SOFFSET).
    Off,
    /// A 32-bit literal that always follows the instruction (`v_madmk_f32`'s K).
    Lit,
}

/// One printed operand of a row: its field, register file, and width in dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The encoding field it is read from.
    pub field: Field,
    /// How it prints.
    pub class: Class,
    /// Register width in dwords (0 for immediates).
    pub dwords: u8,
}

/// How llvm-mc treats one VOP3 modifier bit for a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModRule {
    /// The bit is a modifier of this instruction and is printed.
    Print,
    /// The bit is accepted and has no printed effect.
    Ignore,
    /// The bit must be zero (the word is invalid otherwise).
    Reject,
}

/// The VOP3 modifier rules of a row, for bits `abs[0]`, `abs[2]`, `clamp`, `neg[0]`,
/// `neg[2]`, `omod[0]`, `op_sel[0]`, `op_sel[3]`, `abs[1]`, `neg[1]` (VOP3P reuses the same bit positions for
/// `neg_hi`, `neg_lo`, `op_sel_hi`; MAI for `cbsz`, `blgp`, `abid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mods {
    /// One rule per probed bit, in the order above.
    pub rules: [ModRule; 10],
    /// Whether this row is VOP3 at all (the rules mean nothing otherwise).
    pub present: bool,
}

impl Mods {
    /// Index of the `abs[0]` rule.
    pub const ABS0: usize = 0;
    /// Index of the `abs[2]` rule.
    pub const ABS2: usize = 1;
    /// Index of the `clamp` rule.
    pub const CLAMP: usize = 2;
    /// Index of the `neg[0]` rule.
    pub const NEG0: usize = 3;
    /// Index of the `neg[2]` rule.
    pub const NEG2: usize = 4;
    /// Index of the `omod` rule.
    pub const OMOD: usize = 5;
    /// Index of the `op_sel[0]` rule.
    pub const OPSEL0: usize = 6;
    /// Index of the `op_sel[3]` rule.
    pub const OPSEL3: usize = 7;
    /// Index of the `abs[1]` rule.
    pub const ABS1: usize = 8;
    /// Index of the `neg[1]` rule.
    pub const NEG1: usize = 9;

    /// The abs (VOP3P: `neg_hi`) rule of source `i`.
    pub const fn abs(&self, i: usize) -> ModRule {
        self.rules[[Self::ABS0, Self::ABS1, Self::ABS2][if i > 2 { 2 } else { i }]]
    }

    /// The neg (VOP3P: `neg_lo`) rule of source `i`.
    pub const fn neg(&self, i: usize) -> ModRule {
        self.rules[[Self::NEG0, Self::NEG1, Self::NEG2][if i > 2 { 2 } else { i }]]
    }

    const fn parse(s: &str) -> Mods {
        let b = s.as_bytes();
        let mut rules = [ModRule::Ignore; 10];
        if b.len() != 10 {
            return Mods {
                rules,
                present: false,
            };
        }
        let mut i = 0;
        while i < 10 {
            rules[i] = match b[i] {
                b'P' => ModRule::Print,
                b'R' => ModRule::Reject,
                _ => ModRule::Ignore,
            };
            i += 1;
        }
        Mods {
            rules,
            present: true,
        }
    }
}

/// Operand and encoding rules of a row that llvm-mc-15 applies per instruction (probed by
/// hand; see the end of `isa/tools/emit.py`), as bits of [`Row::flags`].
pub mod flag {
    /// SRC0 of the VOP1/VOP3 form names a VGPR/AGPR by its low 8 bits only (and SRC0 = 249 /
    /// 250 are plain registers, not SDWA/DPP).
    pub const SRC0_VREG8: u16 = 1 << 0;
    /// No SDWA form.
    pub const NO_SDWA: u16 = 1 << 1;
    /// No DPP form.
    pub const NO_DPP: u16 = 1 << 2;
    /// DPP takes neg/abs bits without printing or rejecting them (integer ops that accept them).
    pub const DPP_MODS_IGNORED: u16 = 1 << 3;
    /// DPP neg/abs are float modifiers even though the VOP3 form prints none.
    pub const DPP_FLOAT_MODS: u16 = 1 << 4;
    /// SDWA source 1 is an integer (sext, no neg/abs) of a float instruction.
    pub const SDWA_INT_SRC1: u16 = 1 << 5;
    /// SDWA source modifiers are integer ones although the VOP3 form prints abs.
    pub const SDWA_INT_MODS: u16 = 1 << 6;
    /// MUBUF/GLOBAL/SCRATCH: the load may target LDS (the `lds` bit).
    pub const LDS_LOAD: u16 = 1 << 7;
    /// A float atomic: gfx90a rejects its SCC bit, gfx908 its GLC (no returning form there).
    pub const FLOAT_ATOMIC: u16 = 1 << 8;
    /// MIMG: no D16 form.
    pub const NO_D16: u16 = 1 << 9;
    /// gfx90a cache control that takes SC1 (bit 15).
    pub const CACHE_SC1: u16 = 1 << 10;
    /// Cache control that takes GLC (SC0).
    pub const CACHE_GLC: u16 = 1 << 11;
    /// DS: no GDS form.
    pub const NO_GDS: u16 = 1 << 12;
    /// DS global wave sync (`ds_gws_*`): GDS only; its one operand (ADDR) is data (an AGPR
    /// with gfx90a's ACC bit), and without an operand the ACC bit is refused.
    pub const GWS: u16 = 1 << 13;
}

/// Target mask bit of gfx900.
pub const T_900: u8 = 1;
/// Target mask bit of gfx906.
pub const T_906: u8 = 2;
/// Target mask bit of gfx908.
pub const T_908: u8 = 4;
/// Target mask bit of gfx90a.
pub const T_90A: u8 = 8;

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The encoding.
    pub enc: Enc,
    /// The opcode number within the encoding.
    pub opcode: u16,
    /// The instruction.
    pub op: Op,
    /// `_e32`/`_e64` suffix printed after the mnemonic (empty if none).
    pub suffix: &'static str,
    /// Targets that have this row (`T_*` bits).
    pub targets: u8,
    /// Printed operands, in order.
    pub slots: &'static [Slot],
    /// VOP3 modifier rules.
    pub mods: Mods,
    /// Per-instruction operand rules ([`flag`] bits).
    pub flags: u16,
    /// Type of the sources, for inline constants and literals (the mnemonic's last
    /// `f16`/`f32`/`f64` token; `Int` if none).
    pub src: SrcType,
    /// What a DS/MUBUF/FLAT/GLOBAL/SCRATCH/SMEM instruction does to memory (`Other` for
    /// every other encoding, and for what the interpreter does not model as plain memory).
    pub mem: MemKind,
    /// A VOPC/VOP3 vector compare (`v_cmp[x]_<cond>_<type>`), if it is one.
    pub cmp: Option<Cmp>,
    /// How the disassembler prints constants of sources 0 and 1 (and of source 2 unless
    /// [`prop::SRC2_NO_LIT`]).
    pub lit: LitType,
    /// Facts about the instruction the decoder, printer and interpreter test ([`prop`] bits).
    pub props: u32,
}

/// How constants of a vector instruction's sources print (16-bit types print literals as
/// 16 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LitType {
    /// Not a 16-bit source (or a type whose constants print by register width).
    No,
    /// f64 matrix sources (`v_mfma_f64_*`).
    F64,
    /// Packed 32-bit sources (`v_pk_*_f32`, `v_pk_mov_b32`).
    Packed32,
    /// f16.
    Float,
    /// i16, u16 or b16.
    Int,
}

/// Facts about an instruction, as bits of [`Row::props`]: generated with the row by
/// `isa/tools/props.py` (from the mnemonic, once), so no site parses the mnemonic.
pub mod prop {
    /// `s_buffer_*`: the SMEM base is a buffer resource (address in bits 47:0).
    pub const S_BUFFER: u32 = 1 << 0;
    /// `s_branch` and `s_cbranch_*`: SIMM16 is a signed dword offset.
    pub const BRANCH: u32 = 1 << 1;
    /// `v_mfma_*`.
    pub const MFMA: u32 = 1 << 2;
    /// `v_accvgpr_*`.
    pub const ACCVGPR: u32 = 1 << 3;
    /// A `*_load_*` (including format loads, which have no plain [`super::MemKind`]).
    pub const NAMED_LOAD: u32 = 1 << 4;
    /// `image_atomic_*`.
    pub const IMAGE_ATOMIC: u32 = 1 << 5;
    /// `image_store*`.
    pub const IMAGE_STORE: u32 = 1 << 6;
    /// `image_gather4*`.
    pub const IMAGE_GATHER4: u32 = 1 << 7;
    /// A `*_cmpswap` (ends so: two data halves).
    pub const CMPSWAP_SUFFIX: u32 = 1 << 8;
    /// DS with two addresses (`read2`, `write2`, `*2st64`).
    pub const DS2: u32 = 1 << 9;
    /// Ends in `b64` (DS two-address ops: 8-byte elements).
    pub const DS2_B64: u32 = 1 << 10;
    /// Has `st64` (DS two-address ops: offsets in units of 64 elements).
    pub const DS2_ST64: u32 = 1 << 11;
    /// `ds_read2*`.
    pub const DS_READ2: u32 = 1 << 12;
    /// Has `_rtn_` (a DS atomic that returns the old value).
    pub const DS_RTN: u32 = 1 << 13;
    /// Source 2 constants print by register width (`v_dot*`, `v_mad_i32_i16`,
    /// `v_mad_u32_u16`: a 32-bit accumulator).
    pub const SRC2_NO_LIT: u32 = 1 << 14;
    /// Source 1 is an integer of a float instruction (`v_ldexp_*`, `v_trig_preop_f64`,
    /// `v_cvt_pkaccum_u8_f32`): its neg prints as `sext()`, its abs not at all.
    pub const INT_SRC1: u32 = 1 << 15;
    /// Sources 1 and 2 are integers of a float instruction (`v_cvt_pk_u8_f32`).
    pub const INT_SRC12: u32 = 1 << 16;
    /// Has `_atomic_` (FLAT/GLOBAL/SCRATCH: with GLC the destination prints first).
    pub const ATOMIC: u32 = 1 << 17;
    /// Has `cmpswap` (the returned value is half the data).
    pub const CMPSWAP: u32 = 1 << 18;
    /// `s_getreg_*` / `s_setreg_*`: SIMM16 prints as `hwreg(...)`.
    pub const HWREG: u32 = 1 << 19;
    /// `s_sendmsg*`: SIMM16 prints as `sendmsg(...)`.
    pub const SENDMSG: u32 = 1 << 20;
    /// Has `_mix` (`v_mad_mix*`, `v_fma_mix*`: op_sel_hi prints per source).
    pub const MIX: u32 = 1 << 21;
    /// SMEM without a `glc` form (`s_dcache_*`, `s_atc_probe*`, `s_mem*`).
    pub const SMEM_NO_GLC: u32 = 1 << 22;
    /// DS with two offsets (`read2`, `write2`, `wrxchg2`): prints `offset0`/`offset1`.
    pub const DS_DUAL: u32 = 1 << 23;
    /// `buffer_atomic_*` (no `tfe`).
    pub const BUFFER_ATOMIC: u32 = 1 << 24;
}

/// The helpers the property columns of `table_rows.rs` are written with.
#[allow(non_snake_case)]
mod col {
    pub use super::AtomicOp::*;
    pub use super::CmpType::*;
    pub use super::MemKind::Other;
    pub use super::D16::*;
    use super::{AtomicOp, Cmp, CmpType, MemKind, D16};

    pub const fn load(bytes: u32, signed: bool, half: D16) -> MemKind {
        MemKind::Load {
            bytes,
            signed,
            half,
        }
    }

    pub const fn store(bytes: u32, half: D16) -> MemKind {
        MemKind::Store { bytes, half }
    }

    pub const fn atomic(op: AtomicOp, wide: bool) -> MemKind {
        MemKind::Atomic { op, wide }
    }

    pub const fn cmp(
        cond: &'static str,
        ty: CmpType,
        writes_exec: bool,
        truth: Option<u8>,
    ) -> Option<Cmp> {
        Some(Cmp {
            cond,
            ty,
            writes_exec,
            truth,
        })
    }
}

macro_rules! isa_table {
    (
        ops { $($v:ident = $name:literal,)* }
        rows { $(($enc:ident, $opc:expr, $op:ident, $suf:literal, $tg:expr,
                  [$(($f:ident, $c:ident, $w:expr)),*], $mods:literal, $fl:expr,
                  $src:ident, $mem:expr, $cmp:expr, $lit:ident, $pr:expr),)* }
    ) => {
        /// One variant per instruction (the same variant for the 32- and 64-bit encodings
        /// of one VOP1/VOP2/VOPC instruction).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Op {
            $(#[doc = $name] $v,)*
        }

        impl Op {
            /// The mnemonic, without `_e32`/`_e64`.
            pub const fn mnemonic(self) -> &'static str {
                match self { $(Op::$v => $name,)* }
            }
        }

        /// Number of [`Op`] variants.
        const N_OPS: usize = [$($name),*].len();

        const ROWS_CONST: &[Row] = &[
            $(Row {
                enc: Enc::$enc,
                opcode: $opc,
                op: Op::$op,
                suffix: $suf,
                targets: $tg,
                slots: &[$(Slot { field: Field::$f, class: Class::$c, dwords: $w }),*],
                mods: Mods::parse($mods),
                flags: $fl,
                src: SrcType::$src,
                mem: {
                    #[allow(unused_imports)]
                    use col::*;
                    $mem
                },
                cmp: {
                    #[allow(unused_imports)]
                    use col::*;
                    $cmp
                },
                lit: LitType::$lit,
                props: $pr,
            },)*
        ];
    };
}

include!("table_rows.rs");

/// Every row of the table.
pub static ROWS: &[Row] = ROWS_CONST;

const NO_ROW: u16 = u16::MAX;

const fn build_lookup() -> [[u16; LOOKUP_LEN]; 4] {
    let mut t = [[NO_ROW; LOOKUP_LEN]; 4];
    let mut i = 0;
    while i < ROWS_CONST.len() {
        let r = &ROWS_CONST[i];
        let idx = r.enc.base() + r.opcode as usize;
        let mut k = 0;
        while k < 4 {
            if r.targets & (1 << k) != 0 {
                t[k][idx] = i as u16;
            }
            k += 1;
        }
        i += 1;
    }
    t
}

static LOOKUP: [[u16; LOOKUP_LEN]; 4] = build_lookup();

const fn build_op_rows() -> [u16; N_OPS] {
    let mut t = [NO_ROW; N_OPS];
    let mut i = 0;
    while i < ROWS_CONST.len() {
        let op = ROWS_CONST[i].op as usize;
        if t[op] == NO_ROW {
            t[op] = i as u16;
        }
        i += 1;
    }
    t
}

/// The first row of every op.
static OP_ROWS: [u16; N_OPS] = build_op_rows();

impl Op {
    /// The op's [`prop`] bits (they come from the mnemonic, so every row of the op has the
    /// same).
    pub fn props(self) -> u32 {
        ROWS[OP_ROWS[self as usize] as usize].props
    }
}

/// The row of `opcode` in `enc` on `target`, if that target has it.
#[inline]
pub fn lookup(enc: Enc, opcode: u16, target: crate::Target) -> Option<(u16, &'static Row)> {
    let opcode = opcode as usize;
    if opcode >= enc.opcode_space() {
        return None;
    }
    let i = LOOKUP[target.index()][enc.base() + opcode];
    if i == NO_ROW {
        None
    } else {
        Some((i, &ROWS[i as usize]))
    }
}
