//! [`Instruction`] to the text llvm-objdump-15 prints for it.

use crate::decode::{field_value, Instruction, Operand, SpecialReg};
use crate::table::{Class, Enc, Field, ModRule, Mods, Op, Row};
use core::fmt::{self, Write};

/// Whether `op` is a SOPP branch whose SIMM16 is a signed dword offset.
pub fn is_branch(op: Op) -> bool {
    let m = op.mnemonic();
    m == "s_branch" || m.starts_with("s_cbranch_")
}

fn reg_range(f: &mut impl Write, prefix: &str, first: u32, count: u32) -> fmt::Result {
    if count <= 1 {
        write!(f, "{prefix}{first}")
    } else {
        write!(f, "{prefix}[{first}:{}]", first + count - 1)
    }
}

fn special_name(reg: SpecialReg, count: u8, hi: bool) -> &'static str {
    let wide = count >= 2;
    match reg {
        SpecialReg::FlatScratch if wide => "flat_scratch",
        SpecialReg::FlatScratch if hi => "flat_scratch_hi",
        SpecialReg::FlatScratch => "flat_scratch_lo",
        SpecialReg::XnackMask if wide => "xnack_mask",
        SpecialReg::XnackMask if hi => "xnack_mask_hi",
        SpecialReg::XnackMask => "xnack_mask_lo",
        SpecialReg::Vcc if wide => "vcc",
        SpecialReg::Vcc if hi => "vcc_hi",
        SpecialReg::Vcc => "vcc_lo",
        SpecialReg::Exec if wide => "exec",
        SpecialReg::Exec if hi => "exec_hi",
        SpecialReg::Exec => "exec_lo",
        SpecialReg::M0 => "m0",
        SpecialReg::Null => "null",
        SpecialReg::SharedBase => "src_shared_base",
        SpecialReg::SharedLimit => "src_shared_limit",
        SpecialReg::PrivateBase => "src_private_base",
        SpecialReg::PrivateLimit => "src_private_limit",
        SpecialReg::PopsExitingWaveId => "src_pops_exiting_wave_id",
        SpecialReg::Vccz => "src_vccz",
        SpecialReg::Execz => "src_execz",
        SpecialReg::Scc => "src_scc",
        SpecialReg::LdsDirect => "src_lds_direct",
    }
}

fn float_const(code: u8, dwords: u8) -> &'static str {
    match code {
        240 => "0.5",
        241 => "-0.5",
        242 => "1.0",
        243 => "-1.0",
        244 => "2.0",
        245 => "-2.0",
        246 => "4.0",
        247 => "-4.0",
        _ if dwords >= 2 => "0.15915494309189532",
        _ => "0.15915494",
    }
}

/// How a literal of an operand is printed: as the inline constant it equals, else hex.
fn literal(f: &mut impl Write, v: u32, half: bool) -> fmt::Result {
    let iv = v as i32;
    if (-16..=64).contains(&iv) {
        return write!(f, "{iv}");
    }
    let name = if half {
        match v {
            0x3800 => Some("0.5"),
            0xB800 => Some("-0.5"),
            0x3C00 => Some("1.0"),
            0xBC00 => Some("-1.0"),
            0x4000 => Some("2.0"),
            0xC000 => Some("-2.0"),
            0x4400 => Some("4.0"),
            0xC400 => Some("-4.0"),
            0x3118 => Some("0.15915494"),
            _ => None,
        }
    } else {
        match v {
            0x3F00_0000 => Some("0.5"),
            0xBF00_0000 => Some("-0.5"),
            0x3F80_0000 => Some("1.0"),
            0xBF80_0000 => Some("-1.0"),
            0x4000_0000 => Some("2.0"),
            0xC000_0000 => Some("-2.0"),
            0x4080_0000 => Some("4.0"),
            0xC080_0000 => Some("-4.0"),
            0x3E22_F983 => Some("0.15915494"),
            _ => None,
        }
    };
    match name {
        Some(n) => f.write_str(n),
        None => write!(f, "0x{v:x}"),
    }
}

fn is_half(op: Op) -> bool {
    let m = op.mnemonic();
    m.contains("f16") || m.contains("i16") || m.contains("u16") || m.contains("b16")
}

fn operand(f: &mut impl Write, o: &Operand, dwords: u8, half: bool) -> fmt::Result {
    match *o {
        Operand::Sgpr { first, count } => reg_range(f, "s", first.into(), count.into()),
        Operand::Vgpr { first, count } => reg_range(f, "v", first.into(), count.into()),
        Operand::Agpr { first, count } => reg_range(f, "a", first.into(), count.into()),
        Operand::Ttmp { first, count } => reg_range(f, "ttmp", first.into(), count.into()),
        Operand::Special { reg, count, hi } => f.write_str(special_name(reg, count, hi)),
        Operand::IntConst(i) => write!(f, "{i}"),
        Operand::FloatConst(c) => f.write_str(float_const(c, dwords)),
        Operand::Literal(v) => {
            if dwords >= 2 {
                write!(f, "0x{v:x}")
            } else {
                literal(f, v, half)
            }
        }
        Operand::Imm(v) => write!(f, "{v}"),
        Operand::Label(l) => write!(f, "{l}"),
        Operand::Off => f.write_str("off"),
    }
}

fn hwreg_name(id: u32) -> Option<&'static str> {
    Some(match id {
        1 => "HW_REG_MODE",
        2 => "HW_REG_STATUS",
        3 => "HW_REG_TRAPSTS",
        4 => "HW_REG_HW_ID",
        5 => "HW_REG_GPR_ALLOC",
        6 => "HW_REG_LDS_ALLOC",
        7 => "HW_REG_IB_STS",
        15 => "HW_REG_SH_MEM_BASES",
        _ => return None,
    })
}

fn hwreg(f: &mut impl Write, k: u32) -> fmt::Result {
    let id = k & 0x3F;
    let offset = (k >> 6) & 0x1F;
    let size = ((k >> 11) & 0x1F) + 1;
    f.write_str("hwreg(")?;
    match hwreg_name(id) {
        Some(n) => f.write_str(n)?,
        None => write!(f, "{id}")?,
    }
    if offset != 0 || size != 32 {
        write!(f, ", {offset}, {size}")?;
    }
    f.write_str(")")
}

fn waitcnt(f: &mut impl Write, k: u32) -> fmt::Result {
    let vm = (k & 0xF) | ((k >> 14) & 3) << 4;
    let exp = (k >> 4) & 7;
    let lgkm = (k >> 8) & 0xF;
    let mut sep = "";
    let all = vm == 63 && exp == 7 && lgkm == 15;
    if vm != 63 || all {
        write!(f, "vmcnt({vm})")?;
        sep = " ";
    }
    if exp != 7 || all {
        write!(f, "{sep}expcnt({exp})")?;
        sep = " ";
    }
    if lgkm != 15 || all {
        write!(f, "{sep}lgkmcnt({lgkm})")?;
    }
    Ok(())
}

/// Write the instruction text (mnemonic and operands) exactly as llvm-objdump-15 prints it.
pub fn write_instruction(f: &mut impl Write, inst: &Instruction) -> fmt::Result {
    let row = inst.row();
    let name = row.op.mnemonic();
    f.write_str(name)?;
    f.write_str(row.suffix)?;
    let [w0, w1] = inst.words;
    let half = is_half(row.op);
    let vop3p = inst.enc == Enc::Vop3 && row.opcode >= 0x380;
    let mfma = vop3p && name.starts_with("v_mfma");
    let mut sep = " ";
    let gfx90a = inst.target == crate::Target::Gfx90a;
    let atomic_rtn = matches!(inst.enc, Enc::Flat | Enc::Global | Enc::Scratch) && name.contains("_atomic_") && (w0 >> 16) & 1 == 1;
    if atomic_rtn {
        // Returning atomics print the destination first (same width as the data, or half of cmpswap's).
        let data = row.slots.iter().find(|s| s.field == Field::B).map_or(1, |s| s.dwords);
        let d = if name.contains("cmpswap") { data / 2 } else { data };
        let v = field_value(inst.enc, Field::D, w0, w1);
        let acc = gfx90a && (w1 >> 23) & 1 == 1;
        reg_range(f.by_ref_sep(sep)?, if acc { "a" } else { "v" }, v, d.into())?;
        sep = ", ";
    }
    for (i, slot) in row.slots.iter().enumerate() {
        let Some(o) = inst.operands().get(i) else { break };
        if inst.enc == Enc::Mubuf && slot.field == Field::A && (w0 >> 12) & 3 == 0 {
            f.write_str(sep)?;
            f.write_str("off")?;
            sep = ", ";
            continue;
        }
        f.write_str(sep)?;
        sep = ", ";
        match (inst.enc, slot.field) {
            (Enc::Sopk, Field::K) if name.starts_with("s_getreg") || name.starts_with("s_setreg") => {
                hwreg(f, w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopk, Field::K) if name == "s_cbranch_i_fork" || name == "s_call_b64" => {
                write!(f, "{}", (w0 & 0xFFFF) as u16 as i16)?;
                continue;
            }
            (Enc::Sopk, Field::K) => {
                write!(f, "0x{:x}", w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopp, Field::K) if name == "s_waitcnt" => {
                waitcnt(f, w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Smem, Field::O) => {
                write!(f, "0x{:x}", w1 & 0x1F_FFFF)?;
                continue;
            }
            (Enc::Smem, Field::K) => {
                write!(f, "0x{:x}", (w0 >> 6) & 0x7F)?;
                continue;
            }
            _ => {}
        }
        if inst.enc == Enc::Vop3 && matches!(slot.field, Field::A | Field::B | Field::C) && !vop3p {
            let i = match slot.field {
                Field::A => 0,
                Field::B => 1,
                _ => 2,
            };
            let neg = (w1 >> (29 + i)) & 1 == 1 && mod_prints(row, i, Mods::NEG0, Mods::NEG2);
            let abs = (w0 >> (8 + i)) & 1 == 1 && mod_prints(row, i, Mods::ABS0, Mods::ABS2);
            if neg {
                f.write_str("-")?;
            }
            if abs {
                f.write_str("|")?;
            }
            operand(f, o, slot.dwords, half)?;
            if abs {
                f.write_str("|")?;
            }
            continue;
        }
        let _ = Class::S;
        operand(f, o, slot.dwords, half)?;
    }
    match inst.enc {
        Enc::Smem => {
            if (w0 >> 16) & 1 == 1 {
                f.write_str(" glc")?;
            }
        }
        Enc::Ds => {
            let dual = name.contains("2_") || name.contains("2st64");
            let (o0, o1) = (w0 & 0xFF, (w0 >> 8) & 0xFF);
            if dual {
                if o0 != 0 {
                    write!(f, " offset0:{o0}")?;
                }
                if o1 != 0 {
                    write!(f, " offset1:{o1}")?;
                }
            } else if w0 & 0xFFFF != 0 {
                write!(f, " offset:{}", w0 & 0xFFFF)?;
            }
            if (w0 >> 16) & 1 == 1 {
                f.write_str(" gds")?;
            }
        }
        Enc::Mubuf => {
            if (w0 >> 13) & 1 == 1 {
                f.write_str(" idxen")?;
            }
            if (w0 >> 12) & 1 == 1 {
                f.write_str(" offen")?;
            }
            if w0 & 0xFFF != 0 {
                write!(f, " offset:{}", w0 & 0xFFF)?;
            }
            if (w0 >> 14) & 1 == 1 {
                f.write_str(" glc")?;
            }
            if (w0 >> 17) & 1 == 1 {
                f.write_str(" slc")?;
            }
            if (w0 >> 16) & 1 == 1 {
                f.write_str(" lds")?;
            }
        }
        Enc::Flat | Enc::Global | Enc::Scratch => {
            let off = if inst.enc == Enc::Flat { w0 & 0xFFF } else { ((w0 << 19) as i32 >> 19) as u32 };
            if off != 0 {
                write!(f, " offset:{}", off as i32)?;
            }
            if (w0 >> 16) & 1 == 1 {
                f.write_str(" glc")?;
            }
            if (w0 >> 17) & 1 == 1 {
                f.write_str(" slc")?;
            }
        }
        Enc::Vop3 if mfma => {
            let cbsz = (w0 >> 8) & 7;
            let abid = (w0 >> 11) & 15;
            let blgp = w1 >> 29;
            if cbsz != 0 {
                write!(f, " cbsz:{cbsz}")?;
            }
            if abid != 0 {
                write!(f, " abid:{abid}")?;
            }
            if blgp != 0 {
                write!(f, " blgp:{blgp}")?;
            }
        }
        Enc::Vop3 if vop3p => write_vop3p_mods(f, inst, row)?,
        Enc::Vop3 => {
            let nsrc = row.slots.iter().filter(|s| matches!(s.field, Field::A | Field::B | Field::C)).count();
            let opsel = (w0 >> 11) & 15;
            if opsel != 0 && row.mods.rules[Mods::OPSEL0] == ModRule::Print {
                f.write_str(" op_sel:[")?;
                for i in 0..nsrc {
                    write!(f, "{},", (opsel >> i) & 1)?;
                }
                write!(f, "{}]", (opsel >> 3) & 1)?;
            }
            if (w0 >> 15) & 1 == 1 && row.mods.rules[Mods::CLAMP] == ModRule::Print {
                f.write_str(" clamp")?;
            }
            if row.mods.rules[Mods::OMOD] == ModRule::Print {
                match (w1 >> 27) & 3 {
                    1 => f.write_str(" mul:2")?,
                    2 => f.write_str(" mul:4")?,
                    3 => f.write_str(" div:2")?,
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn mod_prints(row: &Row, i: usize, first: usize, last: usize) -> bool {
    let rule = if i < 2 { row.mods.rules[first] } else { row.mods.rules[last] };
    rule == ModRule::Print
}

fn write_vop3p_mods(f: &mut impl Write, inst: &Instruction, row: &Row) -> fmt::Result {
    let [w0, w1] = inst.words;
    let nsrc = row.slots.iter().filter(|s| matches!(s.field, Field::A | Field::B | Field::C)).count();
    let opsel = (w0 >> 11) & 7;
    let opsel_hi = ((w1 >> 27) & 3) | (((w0 >> 14) & 1) << 2);
    let neg_lo = w1 >> 29;
    let neg_hi = (w0 >> 8) & 7;
    let list = |f: &mut dyn Write, name: &str, bits: u32| -> fmt::Result {
        write!(f, " {name}:[")?;
        for i in 0..nsrc {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", (bits >> i) & 1)?;
        }
        f.write_str("]")
    };
    let mask = (1u32 << nsrc) - 1;
    if opsel & mask != 0 {
        list(f, "op_sel", opsel)?;
    }
    if opsel_hi & mask != mask {
        list(f, "op_sel_hi", opsel_hi)?;
    }
    if neg_lo & mask != 0 {
        list(f, "neg_lo", neg_lo)?;
    }
    if neg_hi & mask != 0 {
        list(f, "neg_hi", neg_hi)?;
    }
    if (w0 >> 15) & 1 == 1 {
        f.write_str(" clamp")?;
    }
    Ok(())
}

trait SepWrite: Write + Sized {
    fn by_ref_sep(&mut self, sep: &str) -> Result<&mut Self, fmt::Error> {
        self.write_str(sep)?;
        Ok(self)
    }
}
impl<W: Write> SepWrite for W {}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_instruction(f, self)
    }
}

/// The instruction's text as llvm-objdump-15 prints it (allocates; `Display` does not).
pub fn disasm(inst: &Instruction) -> String {
    let mut s = String::with_capacity(48);
    let _ = write_instruction(&mut s, inst);
    s
}
