//! [`Instruction`] to the text llvm-objdump-15 prints for it.

use crate::decode::{field_value, Ext, Instruction, Operand, SpecialReg};
use crate::table::{flag, prop, Class, Enc, Field, LitType, ModRule, Mods, Op, Row};
use core::fmt::{self, Write};

// the decoder owns it (it turns a branch's SIMM16 into a label); the printer re-exports it
pub use crate::decode::is_branch;

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

fn float_const(code: u8, dwords: u8, f64_op: bool) -> &'static str {
    let dwords = if f64_op {
        2
    } else if dwords > 2 {
        1
    } else {
        dwords
    };
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

/// The operand type of source `src` as far as constants print (the row's
/// [`Row::lit`], generated from the mnemonic's last type: `v_cvt_f32_f16` reads f16), except
/// the 32-bit accumulators of [`prop::SRC2_NO_LIT`].
fn half_of(row: &Row, enc: Enc, src: usize) -> LitType {
    if !matches!(enc, Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3) {
        return LitType::No;
    }
    if src == 2 && row.props & prop::SRC2_NO_LIT != 0 {
        return LitType::No;
    }
    row.lit
}

/// Sources that are integers in a float instruction: their neg bit prints as `sext()` and
/// their abs bit does not print.
fn int_source(row: &Row, src: usize) -> bool {
    (row.props & prop::INT_SRC1 != 0 && src == 1) || (row.props & prop::INT_SRC12 != 0 && src >= 1)
}

fn f16_bits(code: u8) -> u32 {
    match code {
        240 => 0x3800,
        241 => 0xB800,
        242 => 0x3C00,
        243 => 0xBC00,
        244 => 0x4000,
        245 => 0xC000,
        246 => 0x4400,
        247 => 0xC400,
        _ => 0x3118,
    }
}

fn operand(f: &mut impl Write, o: &Operand, dwords: u8, half: LitType) -> fmt::Result {
    match *o {
        Operand::Sgpr { first, count } => reg_range(f, "s", first.into(), count.into()),
        Operand::Vgpr { first, count } => reg_range(f, "v", first.into(), count.into()),
        Operand::Agpr { first, count } => reg_range(f, "a", first.into(), count.into()),
        Operand::Ttmp { first, count } => reg_range(f, "ttmp", first.into(), count.into()),
        Operand::Special { reg, count, hi } => f.write_str(special_name(reg, count, hi)),
        Operand::IntConst(i) => write!(f, "{i}"),
        Operand::FloatConst(c) if half == LitType::Int => write!(f, "0x{:x}", f16_bits(c)),
        Operand::FloatConst(c) if half == LitType::Packed32 => {
            f.write_str(float_const(c, 1, false))
        }
        Operand::FloatConst(c) => {
            f.write_str(float_const(c, dwords, dwords > 2 && half == LitType::F64))
        }
        Operand::Literal(v) => {
            if dwords >= 2 {
                write!(f, "0x{v:x}")
            } else if matches!(half, LitType::Float | LitType::Int) {
                let v16 = v & 0xFFFF;
                if half == LitType::Int {
                    let i = v16 as u16 as i16;
                    if (-16..=64).contains(&i) {
                        return write!(f, "{i}");
                    }
                    return write!(f, "0x{v16:x}");
                }
                literal(f, v16, true)
            } else {
                literal(f, v, false)
            }
        }
        Operand::Imm(v) => write!(f, "{v}"),
        Operand::Label(l) => write!(f, "{l}"),
        Operand::Off => f.write_str("off"),
    }
}

/// The addressing modifiers MUBUF and MTBUF share, at the same bits of their first dword:
/// `idxen`, `offen`, `offset:N` and `glc`, in llvm-objdump's order.
fn buffer_addressing(f: &mut impl Write, w0: u32) -> fmt::Result {
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
    Ok(())
}

fn swizzle(f: &mut impl Write, k: u32) -> fmt::Result {
    if k & 0x8000 != 0 {
        if k & 0x7F00 != 0 {
            return write!(f, " offset:{k}");
        }
        return write!(
            f,
            " offset:swizzle(QUAD_PERM,{},{},{},{})",
            k & 3,
            (k >> 2) & 3,
            (k >> 4) & 3,
            (k >> 6) & 3
        );
    }
    let (and, or, xor) = (k & 0x1F, (k >> 5) & 0x1F, (k >> 10) & 0x1F);
    if and == 0x1F && or == 0 && xor.is_power_of_two() {
        return write!(f, " offset:swizzle(SWAP,{xor})");
    }
    if and == 0x1F && or == 0 && xor != 0 && (xor + 1).is_power_of_two() {
        return write!(f, " offset:swizzle(REVERSE,{})", xor + 1);
    }
    if xor == 0 {
        let size = (!and & 0x1F) + 1;
        if size >= 2 && size.is_power_of_two() && or < size {
            return write!(f, " offset:swizzle(BROADCAST,{size},{or})");
        }
    }
    f.write_str(" offset:swizzle(BITMASK_PERM,\"")?;
    for bit in (0..5).rev() {
        let (a, o, x) = ((and >> bit) & 1, (or >> bit) & 1, (xor >> bit) & 1);
        let c = match (a, o, x) {
            (0, o, x) if o ^ x == 0 => '0',
            (0, _, _) => '1',
            (_, 1, 1) => '0',
            (_, 1, _) => '1',
            (_, _, 0) => 'p',
            _ => 'i',
        };
        f.write_char(c)?;
    }
    f.write_str("\")")
}

fn sendmsg(f: &mut impl Write, k: u32) -> fmt::Result {
    let id = k & 0xF;
    let op = (k >> 4) & 7;
    let stream = (k >> 8) & 3;

    // A valid (message, operation, stream) prints by name (other bits ignored); an invalid
    // one as a numeric triple when no bit outside the three fields is set, else as a number.
    let invalid = |f: &mut dyn Write| {
        if k & !0x37F == 0 {
            write!(f, "sendmsg({id}, {op}, {stream})")
        } else {
            write!(f, "{k}")
        }
    };
    let name = match id {
        1 => "MSG_INTERRUPT",
        2 => "MSG_GS",
        3 => "MSG_GS_DONE",
        4 => "MSG_SAVEWAVE",
        5 => "MSG_STALL_WAVE_GEN",
        6 => "MSG_HALT_WAVES",
        7 => "MSG_ORDERED_PS_DONE",
        8 => "MSG_EARLY_PRIM_DEALLOC",
        9 => "MSG_GS_ALLOC_REQ",
        10 => "MSG_GET_DOORBELL",
        15 => {
            return match op {
                1 if stream == 0 => f.write_str("sendmsg(MSG_SYSMSG, SYSMSG_OP_ECC_ERR_INTERRUPT)"),
                2 if stream == 0 => f.write_str("sendmsg(MSG_SYSMSG, SYSMSG_OP_REG_RD)"),
                3 if stream == 0 => f.write_str("sendmsg(MSG_SYSMSG, SYSMSG_OP_HOST_TRAP_ACK)"),
                4 if stream == 0 => f.write_str("sendmsg(MSG_SYSMSG, SYSMSG_OP_TTRACE_PC)"),
                _ => invalid(f),
            };
        }
        _ => return invalid(f),
    };
    let gs = id == 2 || id == 3;
    if (!gs && (op != 0 || stream != 0))
        || (gs && op == 0 && (stream != 0 || id == 2))
        || (gs && op > 3)
    {
        return invalid(f);
    }
    if !gs {
        return write!(f, "sendmsg({name})");
    }
    let op_name = ["GS_OP_NOP", "GS_OP_CUT", "GS_OP_EMIT", "GS_OP_EMIT_CUT"].get(op as usize);
    match op_name {
        Some(o) if op == 0 => write!(f, "sendmsg({name}, {o})"),
        Some(o) => write!(f, "sendmsg({name}, {o}, {stream})"),
        None => write!(f, "{k}"),
    }
}

fn gpr_idx(f: &mut impl Write, k: u32) -> fmt::Result {
    if k > 15 {
        return write!(f, "0x{k:x}");
    }
    f.write_str("gpr_idx(")?;
    let mut sep = "";
    for (bit, name) in [(1, "SRC0"), (2, "SRC1"), (4, "SRC2"), (8, "DST")] {
        if k & bit != 0 {
            write!(f, "{sep}{name}")?;
            sep = ",";
        }
    }
    f.write_str(")")
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
        16 => "HW_REG_TBA_LO",
        17 => "HW_REG_TBA_HI",
        18 => "HW_REG_TMA_LO",
        19 => "HW_REG_TMA_HI",
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
    if inst.ext == Ext::Sdwa {
        return write_sdwa(f, inst);
    }
    if inst.ext == Ext::Dpp {
        return write_dpp(f, inst);
    }
    if inst.enc == Enc::Exp {
        return write_exp(f, inst);
    }
    let row = inst.row();
    f.write_str(row.op.mnemonic())?;
    f.write_str(row.suffix)?;
    let [w0, w1] = inst.words;
    let half = half_of(row, inst.enc, 0);
    let vop3p = inst.enc == Enc::Vop3 && row.opcode >= 0x380;
    let mfma = vop3p && row.props & prop::MFMA != 0;
    let mut sep = " ";
    let gfx90a = inst.target == crate::Target::Gfx90a;
    let atomic_rtn = matches!(inst.enc, Enc::Flat | Enc::Global | Enc::Scratch)
        && row.props & prop::ATOMIC != 0
        && (w0 >> 16) & 1 == 1;
    if atomic_rtn {
        // Returning atomics print the destination first (same width as the data, or half of cmpswap's).
        let data = row
            .slots
            .iter()
            .find(|s| s.field == Field::B)
            .map_or(1, |s| s.dwords);
        let d = if row.props & prop::CMPSWAP != 0 {
            data / 2
        } else {
            data
        };
        let v = field_value(inst.enc, Field::D, w0, w1);
        let acc = gfx90a && (w1 >> 23) & 1 == 1;
        reg_range(f.by_ref_sep(sep)?, if acc { "a" } else { "v" }, v, d.into())?;
        sep = ", ";
    }
    let flat_saddr = matches!(inst.enc, Enc::Global | Enc::Scratch) && (w1 >> 16) & 0x7F != 0x7F;
    if row.op == Op::SEndpgm && w0 & 0xFFFF == 0 {
        return Ok(());
    }
    for (i, slot) in row.slots.iter().enumerate() {
        let Some(o) = inst.operands().get(i) else {
            break;
        };
        if flat_saddr && slot.field == Field::A && inst.enc == Enc::Scratch {
            f.write_str(sep)?;
            sep = ", ";
            f.write_str("off")?;
            continue;
        }
        if flat_saddr && slot.field == Field::S {
            f.write_str(sep)?;
            operand(f, o, 2, LitType::No)?;
            continue;
        }
        if matches!(inst.enc, Enc::Global | Enc::Scratch)
            && slot.field == Field::D
            && (w0 >> 13) & 1 == 1
        {
            // LDS loads write LDS, not a VGPR.
            continue;
        }
        if inst.enc == Enc::Mubuf && slot.field == Field::B && (w0 >> 16) & 1 == 1 {
            continue;
        }
        if matches!(inst.enc, Enc::Mubuf | Enc::Mtbuf)
            && slot.field == Field::A
            && (w0 >> 12) & 3 == 0
        {
            f.write_str(sep)?;
            f.write_str("off")?;
            sep = ", ";
            continue;
        }
        f.write_str(sep)?;
        sep = ", ";
        match (inst.enc, slot.field) {
            (Enc::Sopk, Field::K) if row.props & prop::HWREG != 0 => {
                hwreg(f, w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopk, Field::K) if matches!(row.op, Op::SCbranchIFork | Op::SCallB64) => {
                write!(f, "{}", w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopk, Field::K) => {
                write!(f, "0x{:x}", w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopp, Field::K) if row.op == Op::SWaitcnt => {
                waitcnt(f, w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopp, Field::K) if row.op == Op::SSetGprIdxMode => {
                gpr_idx(f, w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopc, Field::K) if row.op == Op::SSetGprIdxOn => {
                gpr_idx(f, (w0 >> 8) & 0xFF)?;
                continue;
            }
            (Enc::Sopp, Field::K) if row.op == Op::SEndpgm => {
                if w0 & 0xFFFF != 0 {
                    write!(f, "{}", w0 & 0xFFFF)?;
                }
                continue;
            }
            (Enc::Sopp, Field::K) if row.props & prop::SENDMSG != 0 => {
                sendmsg(f, w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopp, Field::K) if row.props & prop::BRANCH != 0 => {
                write!(f, "{}", w0 & 0xFFFF)?;
                continue;
            }
            (Enc::Sopp, Field::K) => {
                let k = w0 & 0xFFFF;
                if k <= 64 {
                    write!(f, "{k}")?;
                } else {
                    write!(f, "0x{k:x}")?;
                }
                continue;
            }
            (Enc::Smem, Field::O) => {
                let imm = (w0 >> 17) & 1 == 1;
                let soe = (w0 >> 14) & 1 == 1;
                let off = ((w1 & 0x1F_FFFF) << 11) as i32 >> 11;
                match o {
                    Operand::Imm(_) => signed_hex(f, off)?,
                    _ => operand(f, o, 1, LitType::No)?,
                }
                if soe && imm {
                    f.write_str(" offset:")?;
                    signed_hex(f, off)?;
                }
                continue;
            }
            (Enc::Smem, Field::K) => {
                let k = (w0 >> 6) & 0x7F;
                if k <= 64 {
                    write!(f, "{k}")?;
                } else {
                    write!(f, "0x{k:x}")?;
                }
                continue;
            }
            _ => {}
        }
        let mix = vop3p && row.props & prop::MIX != 0;
        if inst.enc == Enc::Vop3
            && matches!(slot.field, Field::A | Field::B | Field::C)
            && (!vop3p || mix)
        {
            let i = match slot.field {
                Field::A => 0,
                Field::B => 1,
                _ => 2,
            };
            let half = half_of(row, inst.enc, i);
            let int_src = int_source(row, i);
            let neg = (w1 >> (29 + i)) & 1 == 1 && (mix || row.mods.neg(i) == ModRule::Print);
            let abs =
                (w0 >> (8 + i)) & 1 == 1 && (mix || row.mods.abs(i) == ModRule::Print) && !int_src;
            if int_src && neg {
                f.write_str("sext(")?;
                operand(f, o, slot.dwords, half)?;
                f.write_str(")")?;
                continue;
            }
            if register_only(row, slot.field)
                && matches!(
                    o,
                    Operand::IntConst(_) | Operand::FloatConst(_) | Operand::Literal(_)
                )
            {
                f.write_str("/*invalid immediate*/")?;
                continue;
            }
            let constant = matches!(
                o,
                Operand::IntConst(_) | Operand::FloatConst(_) | Operand::Literal(_)
            );
            let neg_call = neg && constant && !abs;
            f.write_str(match (neg, neg_call) {
                (true, true) => "neg(",
                (true, false) => "-",
                _ => "",
            })?;
            if abs {
                f.write_str("|")?;
            }
            operand(f, o, slot.dwords, half)?;
            if abs {
                f.write_str("|")?;
            }
            if neg_call {
                f.write_str(")")?;
            }
            continue;
        }
        if slot.class == Class::Lit {
            if let Operand::Literal(v) = o {
                if inst.enc == Enc::Sopk && *v <= 64 {
                    write!(f, "{v}")?;
                } else {
                    write!(f, "0x{v:x}")?;
                }
            }
            continue;
        }
        let half = match slot.field {
            Field::A => half_of(row, inst.enc, 0),
            Field::B => half_of(row, inst.enc, 1),
            Field::C => half_of(row, inst.enc, 2),
            _ => half,
        };
        if register_only(row, slot.field)
            && matches!(
                o,
                Operand::IntConst(_) | Operand::FloatConst(_) | Operand::Literal(_)
            )
        {
            f.write_str("/*invalid immediate*/")?;
            continue;
        }
        operand(f, o, slot.dwords, half)?;
    }
    match inst.enc {
        Enc::Smem if (w0 >> 16) & 1 == 1 && row.props & prop::SMEM_NO_GLC == 0 => {
            f.write_str(" glc")?;
        }
        Enc::Ds => {
            let dual = row.props & prop::DS_DUAL != 0;
            let (o0, o1) = (w0 & 0xFF, (w0 >> 8) & 0xFF);
            if dual {
                if o0 != 0 {
                    write!(f, " offset0:{o0}")?;
                }
                if o1 != 0 {
                    write!(f, " offset1:{o1}")?;
                }
            } else if row.op == Op::DsSwizzleB32 && w0 & 0xFFFF != 0 {
                swizzle(f, w0 & 0xFFFF)?;
            } else if w0 & 0xFFFF != 0 {
                write!(f, " offset:{}", w0 & 0xFFFF)?;
            }
            if (w0 >> 16) & 1 == 1 {
                f.write_str(" gds")?;
            }
        }
        Enc::Mubuf if row.slots.is_empty() => {}
        Enc::Mubuf => {
            buffer_addressing(f, w0)?;
            if (w0 >> 17) & 1 == 1 {
                f.write_str(" slc")?;
            }
            if gfx90a && (w0 >> 15) & 1 == 1 {
                f.write_str(" scc")?;
            }
            if (w0 >> 16) & 1 == 1 {
                f.write_str(" lds")?;
            }
            if !gfx90a
                && (w1 >> 23) & 1 == 1
                && row.props & prop::BUFFER_ATOMIC == 0
                && (w0 >> 16) & 1 == 0
            {
                f.write_str(" tfe")?;
            }
        }
        Enc::Mimg => {
            let dmask = (w0 >> 8) & 0xF;
            if dmask != 0 {
                write!(f, " dmask:0x{dmask:x}")?;
            }
            for (bit, text) in [(12, " unorm"), (13, " glc"), (25, " slc")] {
                if (w0 >> bit) & 1 == 1 {
                    f.write_str(text)?;
                }
            }
            if gfx90a && (w0 >> 7) & 1 == 1 {
                f.write_str(" scc")?;
            }
            if (w0 >> 15) & 1 == 1 {
                f.write_str(" a16")?;
            }
            if !gfx90a && (w0 >> 16) & 1 == 1 {
                f.write_str(" tfe")?;
            }
            for (bit, text) in [(17, " lwe"), (14, " da")] {
                if (w0 >> bit) & 1 == 1 {
                    f.write_str(text)?;
                }
            }
            if w1 >> 31 == 1 {
                f.write_str(" d16")?;
            }
        }
        Enc::Mtbuf => {
            let (dfmt, nfmt) = ((w0 >> 19) & 0xF, (w0 >> 23) & 7);
            if dfmt != 1 || nfmt != 0 {
                f.write_str(" format:[")?;
                if dfmt != 1 {
                    write!(f, "BUF_DATA_FORMAT_{}", DATA_FORMATS[dfmt as usize])?;
                }
                if nfmt != 0 {
                    if dfmt != 1 {
                        f.write_str(",")?;
                    }
                    write!(f, "BUF_NUM_FORMAT_{}", NUM_FORMATS[nfmt as usize])?;
                }
                f.write_str("]")?;
            }
            buffer_addressing(f, w0)?;
            if (w1 >> 22) & 1 == 1 {
                f.write_str(" slc")?;
            }
            if gfx90a && (w1 >> 21) & 1 == 1 {
                f.write_str(" scc")?;
            }
            if !gfx90a && (w1 >> 23) & 1 == 1 {
                f.write_str(" tfe")?;
            }
        }
        Enc::Flat | Enc::Global | Enc::Scratch => {
            let off = match inst.enc {
                Enc::Flat => w0 & 0x1FFF,
                _ => ((w0 << 19) as i32 >> 19) as u32,
            };
            if off != 0 {
                write!(f, " offset:{}", off as i32)?;
            }
            if (w0 >> 16) & 1 == 1 {
                f.write_str(" glc")?;
            }
            if (w0 >> 17) & 1 == 1 {
                f.write_str(" slc")?;
            }
            if gfx90a && (w0 >> 25) & 1 == 1 {
                f.write_str(" scc")?;
            }
            if inst.enc != Enc::Flat && (w0 >> 13) & 1 == 1 {
                f.write_str(" lds")?;
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
        Enc::Vop3 if row.props & prop::ACCVGPR != 0 => {}
        Enc::Vop3 if vop3p => write_vop3p_mods(f, inst, row, row.props & prop::MIX != 0)?,
        Enc::Vop3 => {
            let nsrc = row
                .slots
                .iter()
                .filter(|s| matches!(s.field, Field::A | Field::B | Field::C))
                .count();
            let opsel = (w0 >> 11) & 15;
            let vop3b = row.slots.iter().any(|s| s.field == Field::E);
            if opsel != 0 && !vop3b && row.mods.rules[Mods::OPSEL0] == ModRule::Print {
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

fn signed_hex(f: &mut impl Write, v: i32) -> fmt::Result {
    if v < 0 {
        write!(f, "-0x{:x}", v.unsigned_abs())
    } else {
        write!(f, "0x{v:x}")
    }
}

fn o_saddr(w1: u32, dwords: u8) -> Option<Operand> {
    let v = (w1 >> 16) & 0x7F;
    Some(match v {
        0..=101 => Operand::Sgpr {
            first: if dwords == 2 { (v & !1) as u8 } else { v as u8 },
            count: dwords,
        },
        106 => Operand::Special {
            reg: SpecialReg::Vcc,
            count: dwords,
            hi: false,
        },
        126 => Operand::Special {
            reg: SpecialReg::Exec,
            count: dwords,
            hi: false,
        },
        102 => Operand::Special {
            reg: SpecialReg::FlatScratch,
            count: dwords,
            hi: false,
        },
        104 => Operand::Special {
            reg: SpecialReg::XnackMask,
            count: dwords,
            hi: false,
        },
        108..=123 => Operand::Ttmp {
            first: (v - 108) as u8 & if dwords == 2 { !1 } else { !0 },
            count: dwords,
        },
        124 => Operand::Special {
            reg: SpecialReg::M0,
            count: 1,
            hi: false,
        },
        _ => return None,
    })
}

fn write_dpp(f: &mut impl Write, inst: &Instruction) -> fmt::Result {
    let row = inst.row();
    let dpp = inst.words[1];
    f.write_str(row.op.mnemonic())?;
    if row.op != Op::VNop {
        f.write_str("_dpp")?;
    }
    let mut sep = " ";
    let wide = row
        .slots
        .iter()
        .any(|s| s.field == Field::A && s.dwords > 1);
    let mods = row.flags & flag::DPP_MODS_IGNORED == 0;
    for (i, slot) in row.slots.iter().enumerate() {
        let Some(o) = inst.operands().get(i) else {
            break;
        };
        f.write_str(sep)?;
        sep = ", ";
        let shift = match slot.field {
            Field::A => 20,
            Field::B => 22,
            _ => {
                operand(f, o, slot.dwords, LitType::No)?;
                continue;
            }
        };
        let neg = mods && (dpp >> shift) & 1 == 1;
        let abs = mods && (dpp >> (shift + 1)) & 1 == 1;
        if shift == 22 && int_source(row, 1) {
            // An integer source: neg is sign extension, abs does not print.
            f.write_str(if neg { "sext(" } else { "" })?;
            operand(f, o, slot.dwords, LitType::No)?;
            f.write_str(if neg { ")" } else { "" })?;
            continue;
        }
        f.write_str(if neg { "-" } else { "" })?;
        f.write_str(if abs { "|" } else { "" })?;
        operand(f, o, slot.dwords, LitType::No)?;
        f.write_str(if abs { "|" } else { "" })?;
    }
    let ctrl = (dpp >> 8) & 0x1FF;
    let gfx90a = inst.target == crate::Target::Gfx90a;
    if wide && !(gfx90a && (0x150..0x160).contains(&ctrl)) {
        f.write_str("  /* 64 bit dpp only supports row_newbcast */")?;
    } else {
        match ctrl {
            0x000..=0x0FF => write!(f, " quad_perm:[{},{},{},{}]", ctrl & 3, (ctrl >> 2) & 3, (ctrl >> 4) & 3, (ctrl >> 6) & 3)?,
            0x101..=0x10F => write!(f, " row_shl:{}", ctrl & 0xF)?,
            0x111..=0x11F => write!(f, " row_shr:{}", ctrl & 0xF)?,
            0x121..=0x12F => write!(f, " row_ror:{}", ctrl & 0xF)?,
            0x130 => f.write_str(" wave_shl:1")?,
            0x134 => f.write_str(" wave_rol:1")?,
            0x138 => f.write_str(" wave_shr:1")?,
            0x13C => f.write_str(" wave_ror:1")?,
            0x140 => f.write_str(" row_mirror")?,
            0x141 => f.write_str(" row_half_mirror")?,
            0x142 => f.write_str(" row_bcast:15")?,
            0x143 => f.write_str(" row_bcast:31")?,
            0x150..=0x15F if gfx90a => write!(f, " row_newbcast:{}", ctrl & 0xF)?,
            0x150..=0x15F => {
                f.write_str("  /* row_newbcast/row_share is not supported on ASICs earlier than GFX90A/GFX10 */")?
            }
            0x160..=0x16F => f.write_str(" /* row_xmask is not supported on ASICs earlier than GFX10 */")?,
            _ => f.write_str(" /* Invalid dpp_ctrl value */")?,
        }
    }
    write!(
        f,
        " row_mask:0x{:x} bank_mask:0x{:x}",
        dpp >> 28,
        (dpp >> 24) & 0xF
    )?;
    if (dpp >> 19) & 1 == 1 {
        f.write_str(" bound_ctrl:1")?;
    }
    Ok(())
}

const SELS: [&str; 8] = [
    "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD", "DWORD",
];

fn write_sdwa(f: &mut impl Write, inst: &Instruction) -> fmt::Result {
    let row = inst.row();
    let [w0, sd] = inst.words;
    f.write_str(row.op.mnemonic())?;
    f.write_str("_sdwa")?;
    let mut sep = " ";
    for (i, slot) in row.slots.iter().enumerate() {
        let Some(o) = inst.operands().get(i) else {
            break;
        };
        f.write_str(sep)?;
        sep = ", ";
        match slot.field {
            Field::Vcc if inst.enc == Enc::Vopc && (sd >> 15) & 1 == 1 => {
                let v = (sd >> 8) & 0x7F;
                match o_saddr(v << 16, 2) {
                    Some(s) => operand(f, &s, 2, LitType::No)?,
                    None => write!(f, "{v}")?,
                }
            }
            Field::A | Field::B => {
                let shift = if slot.field == Field::A { 16 } else { 24 };
                let sext = (sd >> (shift + 3)) & 1 == 1;
                let neg = (sd >> (shift + 4)) & 1 == 1;
                let abs = (sd >> (shift + 5)) & 1 == 1;
                let constant = matches!(
                    o,
                    Operand::IntConst(_) | Operand::FloatConst(_) | Operand::Literal(_)
                );
                let neg_call = neg && constant && !abs;
                f.write_str(match (neg, neg_call) {
                    (true, true) => "neg(",
                    (true, false) => "-",
                    _ => "",
                })?;
                if abs {
                    f.write_str("|")?;
                }
                if sext {
                    f.write_str("sext(")?;
                }
                operand(
                    f,
                    o,
                    1,
                    half_of(row, inst.enc, if slot.field == Field::A { 0 } else { 1 }),
                )?;
                if sext {
                    f.write_str(")")?;
                }
                if abs {
                    f.write_str("|")?;
                }
                if neg_call {
                    f.write_str(")")?;
                }
            }
            _ => operand(f, o, slot.dwords, LitType::No)?,
        }
    }
    if inst.enc != Enc::Vopc {
        if (sd >> 13) & 1 == 1 {
            f.write_str(" clamp")?;
        }
        match (sd >> 14) & 3 {
            1 => f.write_str(" mul:2")?,
            2 => f.write_str(" mul:4")?,
            3 => f.write_str(" div:2")?,
            _ => {}
        }
        let unused = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "UNUSED_PAD"]
            [((sd >> 11) & 3) as usize];
        write!(
            f,
            " dst_sel:{} dst_unused:{unused}",
            SELS[((sd >> 8) & 7) as usize]
        )?;
    }
    write!(f, " src0_sel:{}", SELS[((sd >> 16) & 7) as usize])?;
    if inst.enc != Enc::Vop1 {
        write!(f, " src1_sel:{}", SELS[((sd >> 24) & 7) as usize])?;
    }
    let _ = w0;
    Ok(())
}

/// Source operands that take registers only: llvm prints a constant there as
/// `/*invalid immediate*/`.
fn register_only(row: &Row, field: Field) -> bool {
    let mfma = row.props & prop::MFMA != 0;
    match field {
        Field::A => {
            matches!(
                row.op,
                Op::SSetpcB64
                    | Op::SRfeB64
                    | Op::SMovrelsB32
                    | Op::SMovrelsB64
                    | Op::SCbranchJoin
                    | Op::VReadfirstlaneB32
                    | Op::VReadlaneB32
            ) || mfma
        }
        Field::B => mfma,
        Field::D => matches!(row.op, Op::VReadfirstlaneB32 | Op::VReadlaneB32),
        Field::C => matches!(
            row.op,
            Op::VAddcCoU32 | Op::VSubbCoU32 | Op::VSubbrevCoU32 | Op::VMqsadU32U8 | Op::VCndmaskB32
        ),
        _ => false,
    }
}

fn write_vop3p_mods(f: &mut impl Write, inst: &Instruction, row: &Row, mix: bool) -> fmt::Result {
    let [w0, w1] = inst.words;
    let nsrc = row
        .slots
        .iter()
        .filter(|s| matches!(s.field, Field::A | Field::B | Field::C))
        .count();
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
    if mix {
        // The mix instructions: op_sel_hi selects f16 sources (default 0), neg/abs print inline.
        if opsel_hi & mask != 0 {
            list(f, "op_sel_hi", opsel_hi)?;
        }
        if (w0 >> 15) & 1 == 1 {
            f.write_str(" clamp")?;
        }
        return Ok(());
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

/// MTBUF DFMT names (`BUF_DATA_FORMAT_*`), by field value.
const DATA_FORMATS: [&str; 16] = [
    "INVALID",
    "8",
    "16",
    "8_8",
    "32",
    "16_16",
    "10_11_11",
    "11_11_10",
    "10_10_10_2",
    "2_10_10_10",
    "8_8_8_8",
    "32_32",
    "16_16_16_16",
    "32_32_32",
    "32_32_32_32",
    "RESERVED_15",
];

/// MTBUF NFMT names (`BUF_NUM_FORMAT_*`), by field value.
const NUM_FORMATS: [&str; 8] = [
    "UNORM",
    "SNORM",
    "USCALED",
    "SSCALED",
    "UINT",
    "SINT",
    "RESERVED_6",
    "FLOAT",
];

/// `exp <target> <vsrc0..3>` with `done`, `compr`, `vm`: a disabled source (EN bit clear)
/// prints `off`; with COMPR the four slots name VSRC0, VSRC0, VSRC1, VSRC1.
fn write_exp(f: &mut impl Write, inst: &Instruction) -> fmt::Result {
    let [w0, _] = inst.words;
    f.write_str(inst.row().op.mnemonic())?;
    let target = (w0 >> 4) & 0x3F;
    match target {
        0..=7 => write!(f, " mrt{target}")?,
        8 => f.write_str(" mrtz")?,
        9 => f.write_str(" null")?,
        12..=15 => write!(f, " pos{}", target - 12)?,
        32..=63 => write!(f, " param{}", target - 32)?,
        _ => write!(f, " invalid_target_{target}")?,
    }
    let compr = (w0 >> 10) & 1 == 1;
    let ops = inst.operands();
    for i in 0..4 {
        f.write_str(if i == 0 { " " } else { ", " })?;
        if (w0 >> i) & 1 == 0 {
            f.write_str("off")?;
            continue;
        }
        let src = if compr { [0, 0, 1, 1][i] } else { i };
        match ops.get(1 + src) {
            Some(o) => operand(f, o, 1, LitType::No)?,
            None => f.write_str("off")?,
        }
    }
    if (w0 >> 11) & 1 == 1 {
        f.write_str(" done")?;
    }
    if compr {
        f.write_str(" compr")?;
    }
    if (w0 >> 12) & 1 == 1 {
        f.write_str(" vm")?;
    }
    Ok(())
}
