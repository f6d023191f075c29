//! Execution coverage: which instructions the decoder knows and the interpreter does not run.
//!
//! [`probes`] builds one instruction for every row of a target's table (plus the SDWA and DPP
//! forms of each VOP1/VOP2/VOPC row that has them), with fixed operands: VGPRs v10 (first
//! source), v20, v32 and v64 (destination), SGPRs s12, s16, s20 and s32, a buffer resource in
//! `s[8:11]`, an image resource in `s[16:23]` and a sampler in `s[24:27]`. [`run_one`] runs one
//! instruction in a wave with every register allocated and zero, a valid resource in the
//! SGPRs the instruction names as its buffer or image, memory mapped at `[0, 2 MiB)` and
//! 64 KiB of LDS, and says whether the interpreter executed it: anything but an
//! illegal-instruction stop or an unmodelled hardware register counts as executed (a memory
//! fault, a trap or a barrier is the instruction doing its work). [`gaps`] is the list
//! `isa/COVERAGE.md` holds; `kfd isa coverage` and the `exec_coverage` test print it.

use crate::decode::{encoding_prefix, place_field, Operand};
use crate::table::{flag, Class, Enc, Field, Row, ROWS};
use crate::{decode, disasm, Op, Target};

use super::env::HostEnv;
use super::fault::{Stop, WaveFault};
use super::wave::{sreg, Wave};

/// The extension form of a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Form {
    /// The row's own encoding (`_e32`, `_e64`, or a non-VOP encoding).
    Plain,
    /// The SDWA dword form of a VOP1/VOP2/VOPC row.
    Sdwa,
    /// The DPP dword form of a VOP1/VOP2/VOPC row.
    Dpp,
}

/// One instruction built for a row.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The row.
    pub row: &'static Row,
    /// Its form.
    pub form: Form,
    /// The instruction's bytes (a literal dword follows every probe; only rows that take one
    /// read it).
    pub bytes: Vec<u8>,
}

impl Probe {
    /// The name llvm-objdump prints for this form: the mnemonic with `_e32`/`_e64`, `_sdwa`
    /// or `_dpp`.
    pub fn name(&self) -> String {
        let m = self.row.op.mnemonic();
        match self.form {
            Form::Plain => format!("{m}{}", self.row.suffix),
            Form::Sdwa => format!("{m}_sdwa"),
            Form::Dpp => format!("{m}_dpp"),
        }
    }
}

/// What running one instruction showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The interpreter executed it.
    Executed,
    /// Decoded, not executed: why (the fault's text).
    NotExecuted(String),
    /// The bytes do not decode on the target.
    NotDecoded(String),
}

/// An instruction the decoder knows and the interpreter does not run.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Gap {
    /// The name as llvm-objdump prints it (see [`Probe::name`]).
    pub name: String,
    /// The probe's disassembly.
    pub text: String,
    /// Why it did not run.
    pub reason: String,
}

const VGPR_A: u32 = 10;
const VGPR_B: u32 = 20;
const VGPR_C: u32 = 32;
const VGPR_D: u32 = 64;
const SGPR_A: u32 = 12;
const SGPR_B: u32 = 16;
const SGPR_C: u32 = 20;
const SGPR_D: u32 = 32;
const SGPR_E: u32 = 40;
const SMEM_BASE: u32 = 4;
const BUFFER_RSRC: usize = 8;
/// SGPRs a resource may occupy (s0..s101).
const BUFFER_LIMIT: usize = 102;
const IMAGE_RSRC: usize = 16;
const SAMPLER: usize = 24;
/// `hwreg(HW_REG_MODE)`, all 32 bits: the SIMM16 of the `s_getreg`/`s_setreg` probes.
const HWREG_MODE: u32 = 1 | (31 << 11);
/// The literal dword after every probe: 1.0.
const LITERAL: u32 = 0x3f80_0000;
/// Where probes run.
const BASE: u64 = 0x40_0000;
/// Bytes of memory mapped from address 0.
const MAPPED: u64 = 2 << 20;

fn is_vop_source(enc: Enc, field: Field) -> bool {
    matches!(
        (enc, field),
        (Enc::Vop1 | Enc::Vop2 | Enc::Vopc, Field::A) | (Enc::Vop3, Field::A | Field::B | Field::C)
    )
}

/// The value the probe puts in one operand field, or None to leave it 0.
fn field_value(row: &Row, field: Field, class: Class) -> Option<u32> {
    let vector = matches!(class, Class::V | Class::A);
    let v = match (field, class) {
        (Field::K, _) => {
            return matches!(
                row.op,
                Op::SGetregB32 | Op::SSetregB32 | Op::SSetregImm32B32
            )
            .then_some(HWREG_MODE)
        }
        (Field::Vcc, _) | (_, Class::Off | Class::Imm | Class::Lit) => return None,
        (Field::A, _) if vector => VGPR_A,
        (Field::B, _) if vector => VGPR_B,
        (Field::C, _) if vector => VGPR_C,
        (Field::D, _) if vector => VGPR_D,
        (Field::R, _) if row.enc == Enc::Mimg => IMAGE_RSRC as u32,
        (Field::R, _) => BUFFER_RSRC as u32,
        (Field::S, _) if row.enc == Enc::Mimg => SAMPLER as u32,
        (Field::S, _) => SMEM_BASE,
        (Field::O, _) => 0,
        (Field::A, _) => SGPR_A,
        (Field::B, _) => SGPR_B,
        (Field::C, _) => SGPR_C,
        (Field::D, _) => SGPR_D,
        (Field::E, _) => SGPR_E,
    };
    Some(if vector && is_vop_source(row.enc, field) {
        256 + v
    } else {
        v
    })
}

/// The plain probe words of `row`.
fn plain_words(row: &Row) -> [u32; 2] {
    let mut w = encoding_prefix(row.enc, row.opcode);
    for s in row.slots {
        if let Some(v) = field_value(row, s.field, s.class) {
            place_field(row.enc, s.field, v, &mut w);
        }
    }
    if row.enc == Enc::Ds && row.flags & flag::GWS != 0 {
        w[0] |= 1 << 16; // GDS: the global wave sync instructions need it
    }
    if row.enc == Enc::Mtbuf {
        w[0] |= super::interp::mtbuf_format_bits(4, 4); // 32-bit UINT
    }
    w
}

/// The bytes of an instruction: `words` (the second only for 8-byte encodings), the literal.
fn bytes_of(words: &[u32]) -> Vec<u8> {
    words
        .iter()
        .chain(std::iter::once(&LITERAL))
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

/// Every probe of `target`: one per row, plus the SDWA and DPP forms that decode.
pub fn probes(target: Target) -> Vec<Probe> {
    let mut out = Vec::new();
    for row in ROWS.iter().filter(|r| r.targets & target.bit() != 0) {
        if row.enc == Enc::Vop2 && row.opcode >= 0x3e {
            continue; // the VOPC and VOP1 prefixes: rows the decoder never reaches
        }
        let w = plain_words(row);
        let eight_byte = !matches!(
            row.enc,
            Enc::Sop2
                | Enc::Sop1
                | Enc::Sopc
                | Enc::Sopk
                | Enc::Sopp
                | Enc::Vop1
                | Enc::Vop2
                | Enc::Vopc
        );
        let plain = if eight_byte { &w[..] } else { &w[..1] };
        out.push(Probe {
            row,
            form: Form::Plain,
            bytes: bytes_of(plain),
        });
        if !matches!(row.enc, Enc::Vop1 | Enc::Vop2 | Enc::Vopc) {
            continue;
        }
        // SRC0 = 249 (SDWA) or 250 (DPP); the extension dword names v10 as source 0.
        let w0 = (w[0] & !0x1ff) | 249;
        if row.flags & flag::NO_SDWA == 0 {
            // every select DWORD (6), dst_unused PAD; VOPC: the result to VCC
            let sdwa = VGPR_A | 6 << 16 | 6 << 24 | if row.enc == Enc::Vopc { 0 } else { 6 << 8 };
            out.push(Probe {
                row,
                form: Form::Sdwa,
                bytes: bytes_of(&[w0, sdwa]),
            });
        }
        if row.flags & flag::NO_DPP == 0 {
            // quad_perm:[0,1,2,3] (gfx90a's 64-bit DPP has only row_newbcast: row_newbcast:0),
            // every row and bank enabled
            let wide = row.slots.iter().any(|s| s.dwords == 2);
            let ctrl = if target == Target::Gfx90a && wide {
                0x150
            } else {
                0xe4
            };
            let dpp = VGPR_A | ctrl << 8 | 0xf << 24 | 0xf << 28;
            out.push(Probe {
                row,
                form: Form::Dpp,
                bytes: bytes_of(&[w0 + 1, dpp]),
            });
        }
    }
    out
}

/// Runs the one instruction at the start of `bytes` in the probe wave (see the module
/// documentation) and says whether the interpreter executed it.
pub fn run_one(target: Target, bytes: &[u8]) -> Outcome {
    Prober::new().run(target, bytes)
}

/// The memory the probes run against, kept from one instruction to the next (mapping it is
/// the costly part of a probe; what one instruction leaves there does not decide whether the
/// next one runs).
pub struct Prober {
    env: HostEnv,
}

impl Default for Prober {
    fn default() -> Self {
        Self::new()
    }
}

impl Prober {
    /// Memory mapped at `[0, 2 MiB)` and 64 KiB of LDS.
    pub fn new() -> Self {
        let mut env = HostEnv::new(64 << 10);
        env.map(0, MAPPED);
        Prober { env }
    }

    /// [`run_one`] against this prober's memory.
    pub fn run(&mut self, target: Target, bytes: &[u8]) -> Outcome {
        run_in(&mut self.env, target, bytes)
    }
}

fn run_in(env: &mut HostEnv, target: Target, bytes: &[u8]) -> Outcome {
    let inst = match decode(bytes, BASE, target) {
        Ok((inst, _)) => inst,
        Err(e) => return Outcome::NotDecoded(e.to_string()),
    };
    let mut code = bytes.to_vec();
    code.truncate(usize::from(inst.len));
    code.extend_from_slice(&0xbf81_0000u32.to_le_bytes()); // s_endpgm
    let cache = super::CodeCache::new(target, BASE, &code);
    let mut wave = Wave::new(target, 256, 256);
    wave.pc = BASE;
    // The resources the instruction names: a buffer of 64 records of 32-bit UINT at address
    // 0; a 1x1 2-D image of 32-bit UINT texels at 0x1000; a zero sampler.
    let sgpr_of = |field: Field| {
        inst.row()
            .slots
            .iter()
            .zip(inst.operands())
            .find(|(s, _)| s.field == field)
            .and_then(|(_, o)| match o {
                Operand::Sgpr { first, .. } => Some(usize::from(*first)),
                _ => None,
            })
    };
    let buffer = [0, 4 << 16, 64, 4 << 15 | 4 << 12];
    let image = [0x10, 4 << 20 | 4 << 26, 0, 9 << 28, 0, 0, 0, 0];
    match (inst.enc, sgpr_of(Field::R)) {
        (Enc::Mubuf | Enc::Mtbuf, Some(r)) if r + 4 <= BUFFER_LIMIT => {
            wave.sgpr[r..r + 4].copy_from_slice(&buffer)
        }
        (Enc::Mimg, Some(r)) if r + 8 <= BUFFER_LIMIT => {
            wave.sgpr[r..r + 8].copy_from_slice(&image)
        }
        _ => {}
    }
    wave.sgpr[sreg::M0] = 0;
    match wave.run(&cache, env, 1) {
        Stop::Fault(WaveFault::IllegalInstruction { disassembly, .. }) => {
            Outcome::NotExecuted(format!("not implemented: {disassembly}"))
        }
        Stop::Fault(f @ WaveFault::UnsupportedHwReg { .. }) => Outcome::NotExecuted(f.to_string()),
        _ => Outcome::Executed,
    }
}

/// The probes of `target` that decode and do not run, by name. A probe of a plain form that
/// does not decode is a gap too (the probe builder's fault: the test keeps that list empty).
pub fn gaps(target: Target) -> Vec<Gap> {
    let mut prober = Prober::new();
    let mut out = Vec::new();
    for p in probes(target) {
        let text = match decode(&p.bytes, BASE, target) {
            Ok((inst, _)) => disasm(&inst),
            Err(e) if p.form == Form::Plain => {
                out.push(Gap {
                    name: p.name(),
                    text: String::new(),
                    reason: format!("the probe does not decode: {e}"),
                });
                continue;
            }
            // the form is not encodable for this row
            Err(_) => continue,
        };
        if let Outcome::NotExecuted(reason) = prober.run(target, &p.bytes) {
            out.push(Gap {
                name: p.name(),
                text,
                reason,
            });
        }
    }
    out.sort();
    out.dedup();
    out
}
