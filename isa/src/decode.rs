//! Bytes to [`Instruction`]: encoding detection, table lookup, operand decoding and the
//! validity checks llvm-mc-15 applies.

use crate::table::{flag, lookup, prop, Class, Enc, Field, ModRule, Mods, Op, Row, ROWS};
use crate::Target;
use core::fmt;

/// A scalar register that has a name of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialReg {
    /// `flat_scratch` (102/103).
    FlatScratch,
    /// `xnack_mask` (104/105).
    XnackMask,
    /// `vcc` (106/107).
    Vcc,
    /// `m0` (124).
    M0,
    /// `null` (125).
    Null,
    /// `exec` (126/127).
    Exec,
    /// `src_shared_base` (235).
    SharedBase,
    /// `src_shared_limit` (236).
    SharedLimit,
    /// `src_private_base` (237).
    PrivateBase,
    /// `src_private_limit` (238).
    PrivateLimit,
    /// `src_pops_exiting_wave_id` (239).
    PopsExitingWaveId,
    /// `src_vccz` (251).
    Vccz,
    /// `src_execz` (252).
    Execz,
    /// `src_scc` (253).
    Scc,
    /// `src_lds_direct` (254).
    LdsDirect,
}

/// One decoded operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// `s[first..first+count]`.
    Sgpr {
        /// First register.
        first: u8,
        /// Number of dwords.
        count: u8,
    },
    /// `v[first..first+count]`.
    Vgpr {
        /// First register.
        first: u8,
        /// Number of dwords.
        count: u8,
    },
    /// `a[first..first+count]`.
    Agpr {
        /// First register.
        first: u8,
        /// Number of dwords.
        count: u8,
    },
    /// `ttmp[first..first+count]`.
    Ttmp {
        /// First register.
        first: u8,
        /// Number of dwords.
        count: u8,
    },
    /// A named special register; `hi` selects the high half of a 64-bit pair read as 32 bits.
    Special {
        /// Which register.
        reg: SpecialReg,
        /// Number of dwords read.
        count: u8,
        /// The `_hi` half (for 32-bit reads of a pair).
        hi: bool,
    },
    /// Inline integer constant -16..=64.
    IntConst(i8),
    /// Inline float constant; the code is the 9-bit source value 240..=248.
    FloatConst(u8),
    /// 32-bit literal following the instruction.
    Literal(u32),
    /// An immediate field (offsets, SIMM16, …).
    Imm(u32),
    /// A branch target, as a signed dword offset from the next instruction.
    Label(i16),
    /// `off` (no SADDR / SOFFSET).
    Off,
}

/// Why bytes could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the instruction needs.
    Truncated {
        /// Address of the instruction.
        addr: u64,
        /// The first dword (or 0 if even that is missing).
        word: u32,
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// No instruction of this encoding has this opcode on the target.
    UnknownOpcode {
        /// Address of the instruction.
        addr: u64,
        /// The first dword.
        word: u32,
        /// The encoding recognised.
        encoding: &'static str,
        /// The opcode field.
        opcode: u16,
    },
    /// A known opcode with fields the hardware (and llvm) do not accept.
    Illegal {
        /// Address of the instruction.
        addr: u64,
        /// The first dword.
        word: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// An encoding this crate recognises but does not decode (VINTRP,
    /// GLOBAL/SCRATCH loads to LDS), or no GFX9 encoding at all.
    Unsupported {
        /// Address of the instruction.
        addr: u64,
        /// The first dword.
        word: u32,
        /// The encoding recognised, or "unknown".
        encoding: &'static str,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Truncated {
                addr,
                word,
                needed,
                available,
            } => write!(
                f,
                "{addr:#x}: instruction {word:#010x} needs {needed} bytes, only {available} left"
            ),
            DecodeError::UnknownOpcode {
                addr,
                word,
                encoding,
                opcode,
            } => {
                write!(
                    f,
                    "{addr:#x}: word {word:#010x}: unknown {encoding} opcode {opcode:#x}"
                )
            }
            DecodeError::Illegal { addr, word, reason } => {
                write!(
                    f,
                    "{addr:#x}: word {word:#010x}: illegal encoding: {reason}"
                )
            }
            DecodeError::Unsupported {
                addr,
                word,
                encoding,
            } => {
                write!(
                    f,
                    "{addr:#x}: word {word:#010x}: {encoding} encoding is not decoded"
                )
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// An extension dword of a VOP1/VOP2/VOPC instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ext {
    /// None: the plain 32-bit encoding (or any other encoding).
    None,
    /// SDWA: sub-dword selection; `words[1]` holds the SDWA dword.
    Sdwa,
    /// DPP: data-parallel lane permutation; `words[1]` holds the DPP dword.
    Dpp,
}

/// Maximum number of printed operands of one instruction.
pub const MAX_OPERANDS: usize = 6;

/// One decoded instruction: `Copy`, no heap, everything the disassembler and an
/// interpreter need (the raw dwords keep the modifier bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// The instruction.
    pub op: Op,
    /// Index of its row in [`ROWS`].
    pub row: u16,
    /// The encoding it was decoded from.
    pub enc: Enc,
    /// The target it was decoded for.
    pub target: Target,
    /// The SDWA extension, if any.
    pub ext: Ext,
    /// The instruction's dwords (the second is 0 for 32-bit encodings).
    pub words: [u32; 2],
    /// The 32-bit literal, if the instruction has one.
    pub literal: Option<u32>,
    /// Length in bytes (4, 8 or 12).
    pub len: u8,
    /// Operands in printed order; `n_operands` of them are valid.
    pub operands: [Operand; MAX_OPERANDS],
    /// Number of valid entries in `operands`.
    pub n_operands: u8,
}

impl Instruction {
    /// The table row.
    pub fn row(&self) -> &'static Row {
        &ROWS[self.row as usize]
    }

    /// The valid operands.
    pub fn operands(&self) -> &[Operand] {
        &self.operands[..self.n_operands as usize]
    }

    /// A bit-field of the instruction's 64 bits (dword 1 above dword 0).
    #[inline]
    pub fn bits(&self, lo: u32, width: u32) -> u32 {
        let v = (self.words[0] as u64) | ((self.words[1] as u64) << 32);
        ((v >> lo) & ((1u64 << width) - 1)) as u32
    }
}

/// Read the little-endian dword at byte `i`.
fn dword(bytes: &[u8], i: usize) -> Option<u32> {
    let b = bytes.get(i..i + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Which encoding a first dword belongs to, and its instruction size without literal.
fn classify(w: u32) -> Result<(Enc, usize), &'static str> {
    let top9 = w >> 23;
    if top9 == 0x17F {
        return Ok((Enc::Sopp, 4));
    }
    if top9 == 0x17E {
        return Ok((Enc::Sopc, 4));
    }
    if top9 == 0x17D {
        return Ok((Enc::Sop1, 4));
    }
    if w >> 28 == 0xB {
        return Ok((Enc::Sopk, 4));
    }
    if w >> 30 == 0b10 {
        return Ok((Enc::Sop2, 4));
    }
    if w >> 31 == 0 {
        return Ok(match w >> 25 {
            0x3F => (Enc::Vop1, 4),
            0x3E => (Enc::Vopc, 4),
            _ => (Enc::Vop2, 4),
        });
    }
    match w >> 26 {
        0b110000 => Ok((Enc::Smem, 8)),
        0b110100 => Ok((Enc::Vop3, 8)),
        0b110110 => Ok((Enc::Ds, 8)),
        0b111000 => Ok((Enc::Mubuf, 8)),
        0b110111 => match (w >> 14) & 3 {
            0 => Ok((Enc::Flat, 8)),
            1 => Ok((Enc::Scratch, 8)),
            2 => Ok((Enc::Global, 8)),
            _ => Err("FLAT"),
        },
        0b111010 => Ok((Enc::Mtbuf, 8)),
        0b111100 => Ok((Enc::Mimg, 8)),
        0b110001 => Ok((Enc::Exp, 8)),
        0b110101 => Err("VINTRP"),
        _ => Err("unknown"),
    }
}

fn opcode_of(enc: Enc, w: u32) -> u16 {
    (match enc {
        Enc::Sop2 => (w >> 23) & 0x7F,
        Enc::Sopk => (w >> 23) & 0x1F,
        Enc::Sop1 => (w >> 8) & 0xFF,
        Enc::Sopc | Enc::Sopp => (w >> 16) & 0x7F,
        Enc::Smem => (w >> 18) & 0xFF,
        Enc::Vop2 => (w >> 25) & 0x3F,
        Enc::Vop1 => (w >> 9) & 0xFF,
        Enc::Vopc => (w >> 17) & 0xFF,
        Enc::Vop3 => (w >> 16) & 0x3FF,
        Enc::Ds => (w >> 17) & 0xFF,
        Enc::Mubuf | Enc::Flat | Enc::Global | Enc::Scratch => (w >> 18) & 0x7F,
        Enc::Mtbuf => (w >> 15) & 0xF,
        Enc::Exp => 0,
        Enc::Mimg => (w >> 18) & 0x7F,
    }) as u16
}

/// The words of an `enc` instruction with opcode `opcode` and every other field 0 (GLOBAL
/// and SCRATCH with SADDR `off`): the inverse of [`classify`] and [`opcode_of`], for probes.
pub(crate) fn encoding_prefix(enc: Enc, opcode: u16) -> [u32; 2] {
    let op = u32::from(opcode);
    match enc {
        Enc::Sop2 => [0x8000_0000 | op << 23, 0],
        Enc::Sopk => [0xB000_0000 | op << 23, 0],
        Enc::Sop1 => [0xBE80_0000 | op << 8, 0],
        Enc::Sopc => [0xBF00_0000 | op << 16, 0],
        Enc::Sopp => [0xBF80_0000 | op << 16, 0],
        Enc::Smem => [0xC000_0000 | op << 18, 0],
        Enc::Vop2 => [op << 25, 0],
        Enc::Vop1 => [0x7E00_0000 | op << 9, 0],
        Enc::Vopc => [0x7C00_0000 | op << 17, 0],
        Enc::Vop3 => [0xD000_0000 | op << 16, 0],
        Enc::Ds => [0xD800_0000 | op << 17, 0],
        Enc::Mubuf => [0xE000_0000 | op << 18, 0],
        Enc::Flat => [0xDC00_0000 | op << 18, 0],
        Enc::Scratch => [0xDC00_4000 | op << 18, 0x007F_0000],
        Enc::Global => [0xDC00_8000 | op << 18, 0x007F_0000],
        Enc::Mtbuf => [0xE800_0000 | op << 15, 0],
        Enc::Exp => [0xC400_0000, 0],
        Enc::Mimg => [0xF000_0000 | op << 18, 0],
    }
}

/// Sets `field` of an `enc` instruction to `v` (the inverse of [`field_value`], which the
/// probes of `exec::coverage` are checked against by decoding them).
pub(crate) fn place_field(enc: Enc, field: Field, v: u32, w: &mut [u32; 2]) {
    let [w0, w1] = w;
    let (word, shift, mask, v) = match (enc, field) {
        (Enc::Sop2 | Enc::Sop1 | Enc::Sopk, Field::D) => (w0, 16, 0x7F, v),
        (Enc::Sop2 | Enc::Sop1 | Enc::Sopc, Field::A) => (w0, 0, 0xFF, v),
        (Enc::Sop2 | Enc::Sopc, Field::B) => (w0, 8, 0xFF, v),
        (Enc::Sopk | Enc::Sopp, Field::K) => (w0, 0, 0xFFFF, v),
        (Enc::Smem, Field::D) => (w0, 6, 0x7F, v),
        (Enc::Smem, Field::S) => (w0, 0, 0x3F, v >> 1),
        (Enc::Smem, Field::O) => (w1, 0, 0x1F_FFFF, v),
        (Enc::Vop2 | Enc::Vop1, Field::D) => (w0, 17, 0xFF, v),
        (Enc::Vop2 | Enc::Vop1 | Enc::Vopc, Field::A) => (w0, 0, 0x1FF, v),
        (Enc::Vop2 | Enc::Vopc, Field::B) => (w0, 9, 0xFF, v),
        (Enc::Vop3, Field::D) => (w0, 0, 0xFF, v),
        (Enc::Vop3, Field::E) => (w0, 8, 0x7F, v),
        (Enc::Vop3, Field::A) => (w1, 0, 0x1FF, v),
        (Enc::Vop3, Field::B) => (w1, 9, 0x1FF, v),
        (Enc::Vop3, Field::C) => (w1, 18, 0x1FF, v),
        (Enc::Ds | Enc::Exp, Field::A) => (w1, 0, 0xFF, v),
        (Enc::Ds | Enc::Exp, Field::B) => (w1, 8, 0xFF, v),
        (Enc::Ds | Enc::Exp, Field::C) => (w1, 16, 0xFF, v),
        (Enc::Ds | Enc::Exp, Field::D) => (w1, 24, 0xFF, v),
        (Enc::Mubuf | Enc::Mtbuf | Enc::Mimg, Field::A) => (w1, 0, 0xFF, v),
        (Enc::Mubuf | Enc::Mtbuf | Enc::Mimg, Field::B) => (w1, 8, 0xFF, v),
        (Enc::Mubuf | Enc::Mtbuf | Enc::Mimg, Field::R) => (w1, 16, 0x1F, v >> 2),
        (Enc::Mubuf | Enc::Mtbuf, Field::O) => (w1, 24, 0xFF, v),
        (Enc::Mimg, Field::S) => (w1, 21, 0x1F, v >> 2),
        (Enc::Exp, Field::K) => (w0, 4, 0x3F, v),
        (Enc::Flat | Enc::Global | Enc::Scratch, Field::A) => (w1, 0, 0xFF, v),
        (Enc::Flat | Enc::Global | Enc::Scratch, Field::B) => (w1, 8, 0xFF, v),
        (Enc::Flat | Enc::Global | Enc::Scratch, Field::S) => (w1, 16, 0x7F, v),
        (Enc::Flat | Enc::Global | Enc::Scratch, Field::D) => (w1, 24, 0xFF, v),
        _ => return,
    };
    *word = (*word & !(mask << shift)) | ((v & mask) << shift);
}

/// The raw value of `field` in encoding `enc` (bit positions of the GFX9 encodings).
pub(crate) fn field_value(enc: Enc, field: Field, w0: u32, w1: u32) -> u32 {
    match (enc, field) {
        (Enc::Sop2 | Enc::Sop1 | Enc::Sopk, Field::D) => (w0 >> 16) & 0x7F,
        (Enc::Sop2 | Enc::Sop1 | Enc::Sopc, Field::A) => w0 & 0xFF,
        (Enc::Sop2 | Enc::Sopc, Field::B) => (w0 >> 8) & 0xFF,
        (Enc::Sopk | Enc::Sopp, Field::K) => w0 & 0xFFFF,
        (Enc::Smem, Field::D) => (w0 >> 6) & 0x7F,
        (Enc::Smem, Field::S) => (w0 & 0x3F) << 1,
        (Enc::Smem, Field::O) => w1 & 0x1F_FFFF,
        (Enc::Smem, Field::K) => (w0 >> 6) & 0x7F,
        (Enc::Vop2 | Enc::Vop1, Field::D) => (w0 >> 17) & 0xFF,
        (Enc::Vop2 | Enc::Vop1 | Enc::Vopc, Field::A) => w0 & 0x1FF,
        (Enc::Vop2 | Enc::Vopc, Field::B) => (w0 >> 9) & 0xFF,
        (Enc::Vop3, Field::D) => w0 & 0xFF,
        (Enc::Vop3, Field::E) => (w0 >> 8) & 0x7F,
        (Enc::Vop3, Field::A) => w1 & 0x1FF,
        (Enc::Vop3, Field::B) => (w1 >> 9) & 0x1FF,
        (Enc::Vop3, Field::C) => (w1 >> 18) & 0x1FF,
        (Enc::Ds, Field::A) => w1 & 0xFF,
        (Enc::Ds, Field::B) => (w1 >> 8) & 0xFF,
        (Enc::Ds, Field::C) => (w1 >> 16) & 0xFF,
        (Enc::Ds, Field::D) => w1 >> 24,
        (Enc::Mubuf | Enc::Mtbuf, Field::A) => w1 & 0xFF,
        (Enc::Mubuf | Enc::Mtbuf, Field::B) => (w1 >> 8) & 0xFF,
        (Enc::Mubuf | Enc::Mtbuf, Field::R) => ((w1 >> 16) & 0x1F) << 2,
        (Enc::Mubuf | Enc::Mtbuf, Field::O) => w1 >> 24,
        (Enc::Exp, Field::K) => (w0 >> 4) & 0x3F,
        (Enc::Mimg, Field::A) => w1 & 0xFF,
        (Enc::Mimg, Field::B) => (w1 >> 8) & 0xFF,
        (Enc::Mimg, Field::R) => ((w1 >> 16) & 0x1F) << 2,
        (Enc::Mimg, Field::S) => ((w1 >> 21) & 0x1F) << 2,
        (Enc::Exp, Field::A) => w1 & 0xFF,
        (Enc::Exp, Field::B) => (w1 >> 8) & 0xFF,
        (Enc::Exp, Field::C) => (w1 >> 16) & 0xFF,
        (Enc::Exp, Field::D) => w1 >> 24,
        (Enc::Flat | Enc::Global | Enc::Scratch, Field::A) => w1 & 0xFF,
        (Enc::Flat | Enc::Global | Enc::Scratch, Field::B) => (w1 >> 8) & 0xFF,
        (Enc::Flat | Enc::Global | Enc::Scratch, Field::S) => (w1 >> 16) & 0x7F,
        (Enc::Flat | Enc::Global | Enc::Scratch, Field::D) => w1 >> 24,
        _ => 0,
    }
}

/// Whether a 9-bit (or 8-bit scalar) source value is a valid scalar operand of `dwords`.
pub(crate) fn scalar_operand(
    v: u32,
    dwords: u8,
    literal: &mut Option<u32>,
    lit_word: Option<u32>,
) -> Result<Operand, &'static str> {
    let wide = dwords >= 2;
    let reg = |reg, hi| Operand::Special {
        reg,
        count: dwords,
        hi,
    };
    Ok(match v {
        0..=101 => {
            let first = align_sgpr(v, dwords);
            if dwords >= 2 && u32::from(first) + u32::from(dwords) > 104 {
                return Err("SGPR range past s103");
            }
            Operand::Sgpr {
                first,
                count: dwords,
            }
        }
        102 | 103 if wide && v == 103 => return Err("odd half of a 64-bit special register"),
        102 | 103 => reg(crate::decode::SpecialReg::FlatScratch, v == 103),
        104 | 105 if wide && v == 105 => return Err("odd half of a 64-bit special register"),
        104 | 105 => reg(SpecialReg::XnackMask, v == 105),
        106 | 107 if wide && v == 107 => return Err("odd half of a 64-bit special register"),
        106 | 107 => reg(SpecialReg::Vcc, v == 107),
        108..=123 => {
            let t = (v - 108) as u8;
            let first = match dwords {
                0 | 1 => t,
                2 => t & !1,
                _ => t & !3,
            };
            if u32::from(first) + u32::from(dwords) > 16 {
                return Err("TTMP range past ttmp15");
            }
            Operand::Ttmp {
                first,
                count: dwords,
            }
        }
        124 if wide => return Err("m0 is 32-bit"),
        124 => reg(SpecialReg::M0, false),
        125 => reg(SpecialReg::Null, false),
        126 | 127 if wide && v == 127 => return Err("odd half of a 64-bit special register"),
        126 | 127 => reg(SpecialReg::Exec, v == 127),
        128..=192 => Operand::IntConst((v - 128) as i8),
        193..=208 => Operand::IntConst(-((v - 192) as i8)),
        235 => reg(SpecialReg::SharedBase, false),
        236 => reg(SpecialReg::SharedLimit, false),
        237 => reg(SpecialReg::PrivateBase, false),
        238 => reg(SpecialReg::PrivateLimit, false),
        239 => reg(SpecialReg::PopsExitingWaveId, false),
        240..=248 => Operand::FloatConst(v as u8),
        251 => reg(SpecialReg::Vccz, false),
        252 => reg(SpecialReg::Execz, false),
        253 => reg(SpecialReg::Scc, false),
        254 if wide => return Err("lds_direct is 32-bit"),
        254 => reg(SpecialReg::LdsDirect, false),
        255 => match lit_word {
            Some(l) => {
                *literal = Some(l);
                Operand::Literal(l)
            }
            None => return Err("literal not allowed here"),
        },
        _ => return Err("reserved source operand"),
    })
}

/// SGPR tuples are aligned: pairs to 2, wider tuples to 4 (llvm prints the aligned range).
fn align_sgpr(v: u32, dwords: u8) -> u8 {
    let v = v as u8;
    match dwords {
        0 | 1 => v,
        2 => v & !1,
        _ => v & !3,
    }
}

fn vector_range(v: u32, dwords: u8, agpr: bool) -> Result<Operand, &'static str> {
    if v + u32::from(dwords.max(1)) > 256 {
        return Err("register range past 255");
    }
    let first = v as u8;
    let count = dwords.max(1);
    Ok(if agpr {
        Operand::Agpr { first, count }
    } else {
        Operand::Vgpr { first, count }
    })
}

/// Instructions whose 9-bit SRC0 names a VGPR/AGPR by its low 8 bits only.
fn eight_bit_vector_src(row: &Row) -> bool {
    matches!(row.enc, Enc::Vop1 | Enc::Vop3) && row.flags & flag::SRC0_VREG8 != 0
}

/// Whether a 9-bit VOP source field reads a VGPR/AGPR.
fn is_vector_src(enc: Enc, field: Field) -> bool {
    matches!(
        (enc, field),
        (Enc::Vop2 | Enc::Vop1 | Enc::Vopc, Field::A) | (Enc::Vop3, Field::A | Field::B | Field::C)
    )
}

/// Whether `op` is a SOPP branch whose SIMM16 is a signed dword offset.
pub fn is_branch(op: Op) -> bool {
    op.props() & prop::BRANCH != 0
}

/// Decode one instruction at the start of `bytes`, which sits at address `addr`.
///
/// Returns the instruction and its length in bytes. Never panics: any word that is not a
/// valid instruction of `target` is a [`DecodeError`] naming the word and the address.
pub fn decode(
    bytes: &[u8],
    addr: u64,
    target: Target,
) -> Result<(Instruction, usize), DecodeError> {
    let Some(w0) = dword(bytes, 0) else {
        return Err(DecodeError::Truncated {
            addr,
            word: 0,
            needed: 4,
            available: bytes.len(),
        });
    };
    let (enc, base_len) = classify(w0).map_err(|e| DecodeError::Unsupported {
        addr,
        word: w0,
        encoding: e,
    })?;
    let illegal = |reason| DecodeError::Illegal {
        addr,
        word: w0,
        reason,
    };
    let w1 = if base_len == 8 {
        match dword(bytes, 4) {
            Some(w) => w,
            None => {
                return Err(DecodeError::Truncated {
                    addr,
                    word: w0,
                    needed: 8,
                    available: bytes.len(),
                })
            }
        }
    } else {
        0
    };
    let opcode = opcode_of(enc, w0);
    if enc == Enc::Vop3 && (0x270..0x278).contains(&opcode) && target != Target::Gfx90a {
        return Err(DecodeError::Unsupported {
            addr,
            word: w0,
            encoding: "VINTRP (VOP3 form)",
        });
    }
    let Some((row_idx, row)) = lookup(enc, opcode, target) else {
        return Err(DecodeError::UnknownOpcode {
            addr,
            word: w0,
            encoding: enc.name(),
            opcode,
        });
    };
    let eight_bit_src = eight_bit_vector_src(row);
    let ext_ok = !eight_bit_src;
    if ext_ok && matches!(enc, Enc::Vop1 | Enc::Vop2 | Enc::Vopc) && w0 & 0x1FF == 250 {
        return decode_dpp(bytes, addr, target, enc, row_idx, row, w0);
    }
    if ext_ok && matches!(enc, Enc::Vop1 | Enc::Vop2 | Enc::Vopc) && w0 & 0x1FF == 249 {
        return decode_sdwa(bytes, addr, target, enc, row_idx, row, w0);
    }
    // A literal may follow 32-bit encodings whose scalar source is 255.
    let lit_word = if base_len == 4 { dword(bytes, 4) } else { None };
    let always_literal = row.slots.iter().any(|s| s.class == Class::Lit);
    let needs_literal = always_literal
        || match enc {
            Enc::Sop2 => (w0 & 0xFF) == 255 || ((w0 >> 8) & 0xFF) == 255,
            Enc::Sop1 | Enc::Sopc => {
                (w0 & 0xFF) == 255 || (enc == Enc::Sopc && ((w0 >> 8) & 0xFF) == 255)
            }
            Enc::Vop1 | Enc::Vop2 | Enc::Vopc => (w0 & 0x1FF) == 255 && ext_ok,
            _ => false,
        };
    if needs_literal && lit_word.is_none() {
        return Err(DecodeError::Truncated {
            addr,
            word: w0,
            needed: 8,
            available: bytes.len(),
        });
    }
    let mut literal = None;
    let mut operands = [Operand::Off; crate::decode::MAX_OPERANDS];
    let mut n = 0usize;
    let gfx90a = target == Target::Gfx90a;
    let mem_acc = gfx90a
        && match enc {
            Enc::Ds => (w0 >> 25) & 1 == 1,
            Enc::Mimg => (w0 >> 16) & 1 == 1,
            Enc::Mubuf | Enc::Mtbuf | Enc::Flat | Enc::Global | Enc::Scratch => (w1 >> 23) & 1 == 1,
            _ => false,
        };
    for slot in row.slots {
        if n == operands.len() {
            break;
        }
        let v = field_value(enc, slot.field, w0, w1);
        let mut slot = *slot;
        if matches!(enc, Enc::Mubuf | Enc::Mtbuf) && slot.field == Field::A && (w0 >> 12) & 3 == 3 {
            slot.dwords = 2;
        }
        if enc == Enc::Mimg && slot.field == Field::B {
            slot.dwords = mimg_vdata_dwords(row, w0, w1, gfx90a);
        }
        if enc == Enc::Global && slot.field == Field::A && (w1 >> 16) & 0x7F != 0x7F {
            // With SADDR, VADDR is a 32-bit offset.
            slot.dwords = 1;
        }
        if enc == Enc::Vop3 && row.opcode >= 0x3C0 && row.props & prop::MFMA != 0 {
            let acc_cd = target == Target::Gfx908 || (w0 >> 15) & 1 == 1;
            if matches!(slot.field, Field::D | Field::C) && acc_cd {
                slot.class = Class::A;
            }
            if slot.field == Field::C {
                // SRC2 is as wide as the result, except that no scalar tuple is wider than 16.
                let d = row.slots[0].dwords;
                slot.dwords = match v {
                    0..=101 | 108..=123 if d > 16 => 1,
                    _ if v < 256 && d > 16 => 2,
                    _ => d,
                };
            }
            if (slot.field == Field::A && (w1 >> 27) & 1 == 1)
                || (slot.field == Field::B && (w1 >> 28) & 1 == 1)
            {
                slot.class = Class::A;
            }
        }
        let op = match (slot.field, slot.class) {
            (Field::Vcc, _) => Operand::Special {
                reg: SpecialReg::Vcc,
                count: 2,
                hi: false,
            },
            (_, Class::Lit) => match lit_word {
                // A literal SRC0 and the constant share the one literal dword.
                Some(l) => {
                    literal = Some(l);
                    Operand::Literal(l)
                }
                None => return Err(illegal("literal missing")),
            },
            (_, Class::Off) => {
                if v == 0x7F {
                    Operand::Off
                } else {
                    let dwords = if enc == Enc::Scratch { 1 } else { 2 };
                    scalar_operand(v, dwords, &mut literal, None).map_err(illegal)?
                }
            }
            (Field::O, Class::Imm) if enc == Enc::Smem => {
                // IMM selects a signed 21-bit offset; SOE an SGPR in dword 1; neither: an SGPR
                // numbered by the offset field.
                let (imm, soe) = ((w0 >> 17) & 1 == 1, (w0 >> 14) & 1 == 1);
                if soe {
                    scalar_operand(w1 >> 25, 1, &mut literal, None).map_err(illegal)?
                } else if imm {
                    Operand::Imm((((w1 & 0x1F_FFFF) << 11) as i32 >> 11) as u32)
                } else {
                    scalar_operand(w1 & 0x7F, 1, &mut literal, None).map_err(illegal)?
                }
            }
            (Field::K | Field::O, Class::Imm) => Operand::Imm(v),
            (_, Class::Imm) => Operand::Imm(v),
            (Field::A, class) if eight_bit_src => {
                vector_range(v & 0xFF, slot.dwords, class == Class::A).map_err(illegal)?
            }
            (f, class) if is_vector_src(enc, f) => {
                if v >= 256 {
                    vector_range(v - 256, slot.dwords, class == Class::A).map_err(illegal)?
                } else {
                    let lit = if enc == Enc::Vop3 { None } else { lit_word };
                    scalar_operand(v, slot.dwords, &mut literal, lit).map_err(illegal)?
                }
            }
            (Field::D, Class::S)
                if enc == Enc::Smem
                    && slot.dwords > 4
                    && ((102..108).contains(&v) || (124..128).contains(&v)) =>
            {
                return Err(illegal("special registers are at most 128-bit SMEM data"));
            }
            (_, Class::S) => {
                scalar_operand(v, slot.dwords, &mut literal, lit_word).map_err(illegal)?
            }
            (f, Class::V) => {
                let data = match enc {
                    Enc::Mubuf | Enc::Mtbuf | Enc::Mimg => f == Field::B,
                    Enc::Flat | Enc::Global | Enc::Scratch => matches!(f, Field::B | Field::D),
                    Enc::Ds => f != Field::A || row.flags & flag::GWS != 0,
                    _ => false,
                };
                vector_range(v, slot.dwords, mem_acc && data).map_err(illegal)?
            }
            (_, Class::A) => vector_range(v, slot.dwords, true).map_err(illegal)?,
        };
        operands[n] = op;
        n += 1;
    }
    if needs_literal && literal.is_none() {
        // The 255 sat in a field this instruction does not read; llvm reads no literal then.
    }
    strict_checks(enc, row, w0, w1).map_err(illegal)?;
    if matches!(enc, Enc::Global | Enc::Scratch) && (w0 >> 13) & 1 == 1 {
        // Loads to LDS from global/scratch: llvm's acceptance of their cache bits is not
        // modelled; refused as not decoded rather than guessed.
        return Err(DecodeError::Unsupported {
            addr,
            word: w0,
            encoding: "GLOBAL/SCRATCH LDS load",
        });
    }
    let float_atomic = row.flags & flag::FLOAT_ATOMIC != 0;
    if target == Target::Gfx90a
        && float_atomic
        && (w0 >> if enc == Enc::Mubuf { 15 } else { 25 }) & 1 == 1
    {
        return Err(illegal("float atomics take no SCC"));
    }
    if target == Target::Gfx908
        && float_atomic
        && (w0 >> if enc == Enc::Mubuf { 14 } else { 16 }) & 1 == 1
    {
        return Err(illegal(
            "gfx908 float atomics do not return (glc must be 0)",
        ));
    }
    let len = base_len + if literal.is_some() { 4 } else { 0 };
    if !ext_ok && enc == Enc::Vop1 && matches!(w0 & 0x1FF, 249 | 250) {
        // llvm reads an SDWA/DPP dword after these even though SRC0 names a plain VGPR here
        // (the 32-bit encoding only: in VOP3 these bits are VDST).
        return Err(DecodeError::Unsupported {
            addr,
            word: w0,
            encoding: "SDWA/DPP form of a VGPR-only source",
        });
    }
    if enc == Enc::Sopp {
        if let Some(i) = row.slots.iter().position(|s| s.field == Field::K) {
            if row.props & prop::BRANCH != 0 {
                operands[i] = Operand::Label((w0 & 0xFFFF) as u16 as i16);
            }
        }
    }
    Ok((
        Instruction {
            op: row.op,
            row: row_idx,
            enc,
            target,
            ext: Ext::None,
            words: [w0, w1],
            literal,
            len: len as u8,
            operands,
            n_operands: n as u8,
        },
        len,
    ))
}

/// VOP1/VOP2/VOPC with SRC0 = 249: the SDWA dword follows.
fn decode_sdwa(
    bytes: &[u8],
    addr: u64,
    target: Target,
    enc: Enc,
    row_idx: u16,
    row: &Row,
    w0: u32,
) -> Result<(Instruction, usize), DecodeError> {
    let illegal = |reason| DecodeError::Illegal {
        addr,
        word: w0,
        reason,
    };
    let Some(sd) = dword(bytes, 4) else {
        return Err(DecodeError::Truncated {
            addr,
            word: w0,
            needed: 8,
            available: bytes.len(),
        });
    };
    if row
        .slots
        .iter()
        .any(|s| s.dwords > 1 && s.field != Field::Vcc)
    {
        return Err(illegal("SDWA is for 32-bit operands only"));
    }
    let mut operands = [Operand::Off; MAX_OPERANDS];
    let mut n = 0;
    let mut lit = None;
    for slot in row.slots {
        let op = match slot.field {
            Field::Vcc => Operand::Special {
                reg: SpecialReg::Vcc,
                count: 2,
                hi: false,
            },
            Field::D if enc == Enc::Vop1 || enc == Enc::Vop2 => {
                if slot.class == Class::S {
                    return Err(illegal("SDWA needs a VGPR destination"));
                }
                vector_range((w0 >> 17) & 0xFF, 1, false).map_err(illegal)?
            }
            Field::A => {
                if (sd >> 23) & 1 == 1 {
                    scalar_operand(sd & 0xFF, 1, &mut lit, None).map_err(illegal)?
                } else {
                    vector_range(sd & 0xFF, 1, false).map_err(illegal)?
                }
            }
            Field::B => {
                let v = (w0 >> 9) & 0xFF;
                if (sd >> 31) & 1 == 1 {
                    scalar_operand(v, 1, &mut lit, None).map_err(illegal)?
                } else {
                    vector_range(v, 1, false).map_err(illegal)?
                }
            }
            _ => return Err(illegal("operand not available in SDWA")),
        };
        if n < MAX_OPERANDS {
            operands[n] = op;
            n += 1;
        }
    }
    // Float operands take neg/abs, integer operands sext (as the instruction's VOP3 form).
    if row.flags & flag::NO_SDWA != 0 {
        return Err(illegal("no SDWA form"));
    }
    if enc == Enc::Vop1 && sd >> 24 != 0 {
        return Err(illegal("SRC1 SDWA bits of a VOP1 must be 0"));
    }
    let float_mods = row.flags & flag::SDWA_INT_MODS == 0
        && ROWS
            .iter()
            .any(|r| r.op == row.op && r.enc == Enc::Vop3 && r.mods.abs(0) == ModRule::Print);
    let int_src1 = row.flags & flag::SDWA_INT_SRC1 != 0;
    let nsrc = if enc == Enc::Vop1 { 1 } else { 2 };
    for i in 0..nsrc {
        let float_mods = float_mods && !(i == 1 && int_src1);
        let shift = 16 + 8 * i;
        let (sext, neg, abs) = (
            (sd >> (shift + 3)) & 1,
            (sd >> (shift + 4)) & 1,
            (sd >> (shift + 5)) & 1,
        );
        if float_mods && sext != 0 {
            return Err(illegal("sext on a float SDWA operand"));
        }
        if !float_mods && (neg | abs) != 0 {
            return Err(illegal("neg/abs on an integer SDWA operand"));
        }
    }
    if !float_mods && enc != Enc::Vopc && (sd >> 14) & 3 != 0 {
        return Err(illegal("omod on an integer SDWA instruction"));
    }
    let sel_ok = |v: u32| v <= 6;
    if !sel_ok((sd >> 16) & 7)
        || !sel_ok((sd >> 24) & 7)
        || (enc != Enc::Vopc && (!sel_ok((sd >> 8) & 7) || (sd >> 11) & 3 == 3))
    {
        return Err(illegal("reserved SDWA selector"));
    }
    Ok((
        Instruction {
            op: row.op,
            row: row_idx,
            enc,
            target,
            ext: Ext::Sdwa,
            words: [w0, sd],
            literal: None,
            len: 8,
            operands,
            n_operands: n as u8,
        },
        8,
    ))
}

/// VOP1/VOP2 with SRC0 = 250: the DPP dword follows.
fn decode_dpp(
    bytes: &[u8],
    addr: u64,
    target: Target,
    enc: Enc,
    row_idx: u16,
    row: &Row,
    w0: u32,
) -> Result<(Instruction, usize), DecodeError> {
    let illegal = |reason| DecodeError::Illegal {
        addr,
        word: w0,
        reason,
    };
    let Some(dpp) = dword(bytes, 4) else {
        return Err(DecodeError::Truncated {
            addr,
            word: w0,
            needed: 8,
            available: bytes.len(),
        });
    };
    if enc == Enc::Vopc {
        return Err(illegal("no DPP form of VOPC"));
    }
    let wide = row
        .slots
        .iter()
        .any(|s| s.dwords > 1 && s.field != Field::Vcc);
    if wide && target != Target::Gfx90a {
        return Err(illegal("64-bit DPP is gfx90a only"));
    }
    if row.flags & flag::NO_DPP != 0 {
        return Err(illegal("no DPP form"));
    }
    let float_mods = row.flags & flag::DPP_FLOAT_MODS != 0
        || ROWS
            .iter()
            .any(|r| r.op == row.op && r.enc == Enc::Vop3 && r.mods.abs(0) == ModRule::Print);
    if enc == Enc::Vop1 && (dpp >> 22) & 3 != 0 {
        return Err(illegal("SRC1 modifiers of a VOP1 DPP"));
    }
    if row.op == Op::VNop && ((w0 >> 17) & 0xFF != 0 || dpp & 0xFF != 0) {
        return Err(illegal("v_nop DPP takes no operands"));
    }
    let mods_ignored = row.flags & flag::DPP_MODS_IGNORED != 0;
    if !float_mods && !mods_ignored && (dpp >> 20) & 0xF != 0 {
        return Err(illegal("neg/abs on an integer DPP instruction"));
    }
    let mut operands = [Operand::Off; MAX_OPERANDS];
    let mut n = 0;
    for slot in row.slots {
        let op = match slot.field {
            Field::Vcc => Operand::Special {
                reg: SpecialReg::Vcc,
                count: 2,
                hi: false,
            },
            Field::D => {
                if slot.class == Class::S {
                    return Err(illegal("DPP needs a VGPR destination"));
                }
                vector_range((w0 >> 17) & 0xFF, slot.dwords, false).map_err(illegal)?
            }
            Field::A => vector_range(dpp & 0xFF, slot.dwords, false).map_err(illegal)?,
            Field::B => vector_range((w0 >> 9) & 0xFF, slot.dwords, false).map_err(illegal)?,
            _ => return Err(illegal("operand not available in DPP")),
        };
        if n < MAX_OPERANDS {
            operands[n] = op;
            n += 1;
        }
    }
    Ok((
        Instruction {
            op: row.op,
            row: row_idx,
            enc,
            target,
            ext: Ext::Dpp,
            words: [w0, dpp],
            literal: None,
            len: 8,
            operands,
            n_operands: n as u8,
        },
        8,
    ))
}

/// The VDATA width of a MIMG instruction as llvm-mc-15 reads it: one dword per DMASK bit
/// (DMASK 0 as one; gather4 always four), halved by D16, plus one for TFE (not on gfx90a,
/// where the bit is ACC). A width the instruction has no form for reads as its base form:
/// atomics exist with 1 or 2 dwords (cmpswap 2 or 4), gathers with 2, 4 or 5, the rest
/// with 1 to 5.
fn mimg_vdata_dwords(row: &Row, w0: u32, w1: u32, gfx90a: bool) -> u8 {
    let gather4 = row.props & prop::IMAGE_GATHER4 != 0;
    let dmask = (w0 >> 8) & 0xF;
    let mut n = if gather4 {
        4
    } else {
        dmask.count_ones().max(1)
    };
    if w1 >> 31 == 1 {
        n = n.div_ceil(2);
    }
    if !gfx90a && (w0 >> 16) & 1 == 1 {
        n += 1;
    }
    let (forms, base): (&[u32], u32) = if gather4 {
        (&[2, 4, 5], 4)
    } else if row.props & prop::CMPSWAP_SUFFIX != 0 {
        (&[2, 4], 2)
    } else if row.props & prop::IMAGE_ATOMIC != 0 {
        (&[1, 2], 1)
    } else {
        (&[1, 2, 3, 4, 5], 4)
    };
    let vdata = (w1 >> 8) & 0xFF;
    (if forms.contains(&n) && vdata + n <= 256 {
        n
    } else {
        base
    }) as u8
}

/// Fields an instruction does not use must be zero in the encodings where llvm-mc-15
/// rejects them otherwise (VOP1 `v_nop`/`v_clrexcp`, VOP3, DS).
fn strict_checks(enc: Enc, row: &Row, w0: u32, w1: u32) -> Result<(), &'static str> {
    let uses = |f: Field| row.slots.iter().any(|s| s.field == f);
    match enc {
        Enc::Vop1 if !uses(Field::D) && (w0 >> 17) & 0xFF != 0 => return Err("VDST must be 0"),
        Enc::Sopp if row.slots.is_empty() && w0 & 0xFFFF != 0 => return Err("SIMM16 must be 0"),
        Enc::Vop3 => {
            for (f, name) in [
                (Field::A, "SRC0 must be 0"),
                (Field::B, "SRC1 must be 0"),
                (Field::C, "SRC2 must be 0"),
            ] {
                if !uses(f) && field_value(enc, f, w0, w1) != 0 {
                    return Err(name);
                }
            }
            if !uses(Field::D) && w0 & 0xFF != 0 {
                return Err("VDST must be 0");
            }
            vop3_mod_checks(row, w0, w1)?;
        }
        Enc::Mubuf if (w0 >> 16) & 1 == 1 && row.flags & flag::LDS_LOAD == 0 => {
            return Err("LDS is for 1-, 2- and 4-byte loads only");
        }
        Enc::Flat | Enc::Global | Enc::Scratch
            if (w0 >> 13) & 1 == 1 && (enc == Enc::Flat || row.flags & flag::LDS_LOAD == 0) =>
        {
            return Err("LDS is for global/scratch loads only")
        }
        Enc::Mimg if w0 & 1 == 1 => return Err("MIMG bit 0 must be 0"),
        Enc::Mimg if (102..108).contains(&field_value(enc, Field::R, w0, w1)) => {
            return Err("the image resource is an SGPR octet")
        }
        Enc::Mimg if !uses(Field::S) && (w1 >> 21) & 0x1F != 0 => {
            return Err("SSAMP must be 0 without a sampler")
        }
        Enc::Mimg if w1 >> 31 == 1 && row.flags & flag::NO_D16 != 0 => {
            return Err("D16 is for loads, stores, samples and gathers of unpacked data")
        }
        Enc::Smem if !uses(Field::O) && (w0 >> 17) & 1 == 1 => {
            return Err("IMM must be 0 without an offset")
        }
        Enc::Flat if (w1 >> 16) & 0x7F != 0 => return Err("FLAT has no SADDR"),
        // gfx90a's buffer_wbl2/buffer_invl2 carry SC1 in bit 15 (clang-15 emits
        // `buffer_wbl2` with SC0|SC1 for a system-scope release).
        Enc::Mubuf
            if row.slots.is_empty()
                && ((w0 >> 12) & 3 != 0
                    || ((w0 >> 15) & 1 == 1 && row.flags & flag::CACHE_SC1 == 0)) =>
        {
            return Err("cache controls take no OFFEN/IDXEN/bit 15")
        }
        Enc::Mubuf
            if row.slots.is_empty() && (w0 >> 14) & 1 == 1 && row.flags & flag::CACHE_GLC == 0 =>
        {
            return Err("cache controls take no GLC")
        }
        Enc::Ds => {
            if (w0 >> 16) & 1 == 1 && row.flags & flag::NO_GDS != 0 {
                return Err("ds_permute/ds_bpermute cannot use GDS");
            }
            if row.flags & flag::GWS != 0 {
                if (w0 >> 16) & 1 == 0 {
                    return Err("ds_gws_* need the GDS bit");
                }
                if row.slots.is_empty() && (w0 >> 25) & 1 == 1 {
                    return Err("ACC bit without a data operand");
                }
            }
            for (f, name) in [
                (Field::A, "ADDR must be 0"),
                (Field::B, "DATA0 must be 0"),
                (Field::C, "DATA1 must be 0"),
                (Field::D, "VDST must be 0"),
            ] {
                if !uses(f) && field_value(enc, f, w0, w1) != 0 {
                    return Err(name);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn vop3_mod_checks(row: &Row, w0: u32, w1: u32) -> Result<(), &'static str> {
    let m: &Mods = &row.mods;
    if !m.present {
        return Ok(());
    }
    let nsrc = row
        .slots
        .iter()
        .filter(|s| matches!(s.field, Field::A | Field::B | Field::C))
        .count();
    let abs = (w0 >> 8) & 7;
    let neg = w1 >> 29;
    let sdst_is_e = row.slots.iter().any(|s| s.field == Field::E);
    for i in 0..3 {
        if !sdst_is_e && abs & (1 << i) != 0 && m.abs(i) == ModRule::Reject {
            return Err("abs modifier not allowed");
        }
        if neg & (1 << i) != 0 && m.neg(i) == ModRule::Reject {
            return Err("neg modifier not allowed");
        }
    }
    if row.opcode >= 0x380 && row.props & (prop::MFMA | prop::ACCVGPR) == 0 {
        // VOP3P: the per-source bits of sources the instruction does not have must be 0.
        for i in nsrc..3 {
            let opsel = (w0 >> (11 + i)) & 1;
            if opsel | ((abs >> i) & 1) | ((neg >> i) & 1) != 0 {
                return Err("modifier of a missing source");
            }
        }
    }
    if (w0 >> 15) & 1 != 0 && m.rules[Mods::CLAMP] == ModRule::Reject {
        return Err("clamp not allowed");
    }
    if (w1 >> 27) & 3 != 0 && m.rules[Mods::OMOD] == ModRule::Reject {
        return Err("omod not allowed");
    }
    if !sdst_is_e && row.opcode < 0x380 && m.rules[Mods::OPSEL0] == ModRule::Print {
        for i in nsrc..3 {
            if (w0 >> (11 + i)) & 1 != 0 {
                return Err("op_sel of a missing source");
            }
        }
    }
    if !sdst_is_e {
        if (w0 >> 11) & 7 != 0 && m.rules[Mods::OPSEL0] == ModRule::Reject {
            return Err("op_sel not allowed");
        }
        if (w0 >> 14) & 1 != 0 && m.rules[Mods::OPSEL3] == ModRule::Reject {
            return Err("op_sel not allowed");
        }
    }
    Ok(())
}
