//! The GFX9 instruction set (GCN5 `gfx900`/`gfx906`, CDNA `gfx908`/`gfx90a`): one table of
//! every instruction, a decoder from bytes to typed [`Instruction`]s, and a disassembler
//! whose text is the text `llvm-objdump-15 -d --mcpu=<gfx>` prints, byte for byte.
//!
//! RDNA targets (`gfx10xx`, `gfx11xx`) use other encodings and are refused by
//! [`Target`]'s parser rather than misdecoded.
//!
//! - [`table`]: one row per opcode of each encoding (SOP2, SOPK, SOP1, SOPC, SOPP, SMEM,
//!   VOP1, VOP2, VOPC, VOP3A/B, VOP3P/MAI, DS, MUBUF, FLAT/GLOBAL/SCRATCH) with its [`Op`],
//!   printed operands and widths, VOP3 modifier rules and targets; lookups are const arrays
//!   indexed by opcode.
//! - [`decode()`]: bytes to a `Copy` [`Instruction`] with typed [`Operand`]s; SDWA and DPP
//!   (with gfx90a's 64-bit DPP) are decoded; MTBUF, MIMG, EXP and VINTRP are recognised and
//!   refused with [`DecodeError::Unsupported`].
//! - [`mod@disasm`]: `Display` for [`Instruction`], the text `llvm-objdump-15` prints.
//! - [`Program`]: a code range decoded once per dword address, for an interpreter's fetch.
//!
//! ```
//! use isa::{decode, Op, Target};
//!
//! let target: Target = "gfx900".parse().unwrap();
//! // v_add_co_u32_e32 v2, vcc, s2, v0
//! let bytes = 0x3204_0002u32.to_le_bytes();
//! let (inst, len) = decode(&bytes, 0x1000, target).unwrap();
//! assert_eq!(len, 4);
//! assert_eq!(inst.op, Op::VAddCoU32);
//! assert_eq!(inst.to_string(), "v_add_co_u32_e32 v2, vcc, s2, v0");
//! assert!("gfx1030".parse::<Target>().is_err());
//! ```
#![forbid(unsafe_code)]

pub mod decode;
pub mod disasm;
pub mod exec;
pub mod program;
pub mod table;
mod target;

pub use decode::{decode, DecodeError, Ext, Instruction, Operand, SpecialReg};
pub use disasm::disasm;
pub use program::Program;
pub use table::{Enc, Op, Row, ROWS};
pub use target::{Target, TargetError};
