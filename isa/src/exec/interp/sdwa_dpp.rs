//! VOP1/VOP2/VOPC with an SDWA dword (byte/word source and destination selects) and
//! with a DPP dword (cross-lane source 0), including gfx90a's 64-bit DPP.

use super::{illegal, opnd, Wave, R};
use crate::decode::Operand;
use crate::exec::cache::{Cached, CmpType, SrcType};
use crate::exec::lanes;
use crate::exec::wave::WAVE_SIZE;
use crate::table::{Enc, Field, Op};

impl Wave {
    /// An SDWA-encoded VOP1/VOP2: sources are byte/word selected (zero- or sign-extended,
    /// then abs/neg for float ops), the operation runs on them, and the result's low field is
    /// placed at DST_SEL with the other bits padded, sign-extended or preserved
    /// (DST_UNUSED).
    pub(super) fn sdwa(&mut self, c: &Cached) -> R<()> {
        if let (Enc::Vopc, Some(cmp)) = (c.inst.enc, c.cmp) {
            return self.sdwa_vopc(c, cmp);
        }
        if !matches!(c.inst.enc, Enc::Vop1 | Enc::Vop2) {
            return Err(illegal(self.pc, c));
        }
        let w = c.inst.words[1];
        let dst_sel = (w >> 8) & 7;
        let dst_unused = (w >> 11) & 3;
        if dst_sel > 6 || dst_unused > 2 || (w >> 16) & 7 > 6 || (w >> 24) & 7 > 6 {
            return Err(illegal(self.pc, c));
        }
        let float = c.src_type != SrcType::Int;
        let mut srcs = Box::new([[0u32; WAVE_SIZE]; 2]);
        for (i, field) in [Field::A, Field::B].into_iter().enumerate() {
            let Some(op) = opnd(c, field) else { continue };
            let raw = self.vread32(op, c.src_type)?;
            let shift = 8 * i as u32;
            let sel = (w >> (16 + shift)) & 7;
            let sext = (w >> (19 + shift)) & 1 != 0;
            let neg = (w >> (20 + shift)) & 1 != 0;
            let abs = (w >> (21 + shift)) & 1 != 0;
            let sign_bit = if c.src_type == SrcType::F16 {
                0x8000
            } else {
                0x8000_0000
            };
            for l in 0..WAVE_SIZE {
                let mut v = sdwa_select(raw[l], sel, sext && !float);
                if float {
                    if abs {
                        v &= !sign_bit;
                    }
                    if neg {
                        v ^= sign_bit;
                    }
                }
                srcs[i][l] = v;
            }
        }
        let dst = match opnd(c, Field::D) {
            Some(Operand::Vgpr { first, .. }) => usize::from(first),
            _ => return Err(illegal(self.pc, c)),
        };
        let old = *self.v(dst)?;
        self.sdwa_src = Some(srcs);
        let result = self.valu(c);
        self.sdwa_src = None;
        result?;
        let exec = self.exec();
        let new = *self.v(dst)?;
        let out = self.v_mut(dst)?;
        for l in 0..WAVE_SIZE {
            if (exec >> l) & 1 != 0 {
                out[l] = sdwa_place(new[l], old[l], dst_sel, dst_unused);
            }
        }
        Ok(())
    }
}

impl Wave {
    /// An SDWA-encoded VOPC: both sources are selected and extended (then abs/neg for float
    /// compares) as for VOP1/VOP2; the result mask goes to VCC, or with SD (`[15]`) to the
    /// scalar destination SDST (`[14:8]`). There is no destination select.
    fn sdwa_vopc(&mut self, c: &Cached, cmp: crate::exec::cache::Cmp) -> R<()> {
        let w = c.inst.words[1];
        if (w >> 16) & 7 > 6 || (w >> 24) & 7 > 6 {
            return Err(illegal(self.pc, c));
        }
        if matches!(cmp.ty, CmpType::F64 | CmpType::I64 | CmpType::U64) {
            return Err(illegal(self.pc, c)); // not encodable: SDWA has 32-bit sources
        }
        let float = c.src_type != SrcType::Int;
        let sign_bit = if c.src_type == SrcType::F16 {
            0x8000
        } else {
            0x8000_0000
        };
        let mut srcs = Box::new([[0u32; WAVE_SIZE]; 2]);
        for (i, field) in [Field::A, Field::B].into_iter().enumerate() {
            let Some(op) = opnd(c, field) else { continue };
            let raw = self.vread32(op, c.src_type)?;
            let shift = 8 * i as u32;
            let sel = (w >> (16 + shift)) & 7;
            let sext = (w >> (19 + shift)) & 1 != 0;
            let neg = (w >> (20 + shift)) & 1 != 0;
            let abs = (w >> (21 + shift)) & 1 != 0;
            for l in 0..WAVE_SIZE {
                let mut v = sdwa_select(raw[l], sel, sext && !float);
                if float {
                    if abs {
                        v &= !sign_bit;
                    }
                    if neg {
                        v ^= sign_bit;
                    }
                }
                srcs[i][l] = v;
            }
        }
        let vcc_before = self.vcc();
        self.sdwa_src = Some(srcs);
        let result = self.vcmp(c, cmp);
        self.sdwa_src = None;
        result?;
        if (w >> 15) & 1 != 0 {
            // vcmp wrote the mask to VCC: move it to SDST
            let mask = self.vcc();
            self.set_vcc(vcc_before);
            self.set_sgpr64(((w >> 8) & 0x7f) as usize, mask);
        }
        Ok(())
    }
}

impl Wave {
    /// A VOP1/VOP2 with a DPP dword: source 0 is read from the lane its DPP control names
    /// (`dpp_gather`), both sources get the dword's float neg/abs, and only the lanes whose
    /// row and bank are enabled (and whose source lane is valid, unless `bound_ctrl`) write.
    pub(super) fn dpp(&mut self, c: &Cached) -> R<()> {
        if !matches!(c.inst.enc, Enc::Vop1 | Enc::Vop2) {
            return Err(illegal(self.pc, c)); // VOPC DPP is not modelled
        }
        // 64-bit operands (gfx90a's 64-bit DPP) are not modelled.
        let wide = [Field::A, Field::B, Field::D]
            .into_iter()
            .any(|f| matches!(opnd(c, f), Some(Operand::Vgpr { count, .. }) if count > 1));
        if wide {
            return self.dpp64(c);
        }
        let w = c.inst.words[1];
        let ctrl = (w >> 8) & 0x1FF;
        // gfx90a adds row_newbcast:n (0x150 + n) for 32-bit DPP too
        let newbcast = self.target == crate::Target::Gfx90a && (0x150..=0x15f).contains(&ctrl);
        if !lanes::dpp_ctrl_is_valid(ctrl) && !newbcast {
            return Err(illegal(self.pc, c));
        }
        let bound_ctrl = (w >> 19) & 1 != 0;
        let bank_mask = (w >> 24) & 0xF;
        let row_mask = (w >> 28) & 0xF;
        let float = c.src_type != SrcType::Int;
        let sign_bit = if c.src_type == SrcType::F16 {
            0x8000
        } else {
            0x8000_0000
        };
        let exec = self.exec();
        let mut srcs = Box::new([[0u32; WAVE_SIZE]; 2]);
        let mut write = exec;
        for (i, field) in [Field::A, Field::B].into_iter().enumerate() {
            let Some(op) = opnd(c, field) else { continue };
            let raw = self.vread32(op, c.src_type)?;
            let lanes = if i == 0 {
                let (gathered, mask) =
                    lanes::dpp_gather(&raw, ctrl, exec, row_mask, bank_mask, bound_ctrl);
                write &= mask;
                gathered
            } else {
                raw
            };
            let neg = (w >> (20 + 2 * i)) & 1 != 0;
            let abs = (w >> (21 + 2 * i)) & 1 != 0;
            for (l, v) in lanes.iter().enumerate() {
                let mut v = *v;
                if float {
                    if abs {
                        v &= !sign_bit;
                    }
                    if neg {
                        v ^= sign_bit;
                    }
                }
                srcs[i][l] = v;
            }
        }
        // Run the operation on the writing lanes only, then give EXEC back.
        self.set_exec(write);
        self.sdwa_src = Some(srcs);
        let result = self.valu(c);
        self.sdwa_src = None;
        self.set_exec(exec);
        result
    }
}

impl Wave {
    /// gfx90a's 64-bit DPP (row_newbcast only): source 0 (one or two VGPRs) is read from lane
    /// n of each row. The permuted source is put in place of source 0's registers while the
    /// operation runs on the writing lanes, then those registers get their values back except
    /// where the instruction wrote its own destination. Operand modifiers in the DPP dword and
    /// other sources overlapping source 0 are not modelled (an illegal-instruction stop).
    fn dpp64(&mut self, c: &Cached) -> R<()> {
        let w = c.inst.words[1];
        let ctrl = (w >> 8) & 0x1ff;
        let newbcast = (0x150..=0x15f).contains(&ctrl);
        if self.target != crate::Target::Gfx90a || !newbcast || (w >> 20) & 0xf != 0 {
            return Err(illegal(self.pc, c));
        }
        let (first, count) = match opnd(c, Field::A) {
            Some(Operand::Vgpr { first, count }) => (usize::from(first), usize::from(count)),
            _ => return Err(illegal(self.pc, c)),
        };
        let src0 = first..first + count;
        let range_of = |f: Field| match opnd(c, f) {
            Some(Operand::Vgpr { first, count }) => {
                Some(usize::from(first)..usize::from(first) + usize::from(count))
            }
            _ => None,
        };
        let overlaps = |r: Option<std::ops::Range<usize>>| {
            r.is_some_and(|r| r.start < src0.end && src0.start < r.end)
        };
        let dst = range_of(Field::D);
        // v_fmac_f64 also reads its destination
        let reads_dst = c.inst.op == Op::VFmacF64;
        if overlaps(range_of(Field::B)) || (reads_dst && overlaps(dst.clone())) {
            return Err(illegal(self.pc, c));
        }
        let exec = self.exec();
        let bound_ctrl = (w >> 19) & 1 != 0;
        let bank_mask = (w >> 24) & 0xf;
        let row_mask = (w >> 28) & 0xf;
        let mut write = exec;
        let mut saved = Vec::with_capacity(count);
        let mut gathered = Vec::with_capacity(count);
        for r in src0.clone() {
            let raw = *self.v(r)?;
            let (g, m) = lanes::dpp_gather(&raw, ctrl, exec, row_mask, bank_mask, bound_ctrl);
            write &= m;
            saved.push(raw);
            gathered.push(g);
        }
        for (r, g) in src0.clone().zip(&gathered) {
            *self.v_mut(r)? = *g;
        }
        self.set_exec(write);
        self.in_dpp64 = true;
        let result = self.valu(c);
        self.in_dpp64 = false;
        self.set_exec(exec);
        for (r, old) in src0.zip(&saved) {
            let written = dst.as_ref().is_some_and(|d| d.contains(&r));
            let reg = self.v_mut(r)?;
            for l in 0..WAVE_SIZE {
                if !(written && (write >> l) & 1 != 0) {
                    reg[l] = old[l];
                }
            }
        }
        result
    }
}

/// An SDWA source select: 0–3 a byte, 4–5 a word, 6 the dword; zero- or sign-extended.
fn sdwa_select(v: u32, sel: u32, sext: bool) -> u32 {
    let (shift, width) = match sel {
        0..=3 => (8 * sel, 8),
        4 | 5 => (16 * (sel - 4), 16),
        _ => return v,
    };
    let field = (v >> shift) & ((1 << width) - 1);
    if sext {
        (((field << (32 - width)) as i32) >> (32 - width)) as u32
    } else {
        field
    }
}

/// Places an SDWA result's low field at `sel`; `unused`: 0 pad with zeros, 1 sign-extend
/// the field upward (zeros below), 2 keep `old`'s other bits.
fn sdwa_place(result: u32, old: u32, sel: u32, unused: u32) -> u32 {
    let (shift, width) = match sel {
        0..=3 => (8 * sel, 8),
        4 | 5 => (16 * (sel - 4), 16),
        _ => return result,
    };
    let mask = ((1u32 << width) - 1) << shift;
    let placed = (result << shift) & mask;
    match unused {
        0 => placed,
        1 => {
            let top = shift + width;
            let signed = ((result << (32 - width)) as i32) >> (32 - width);
            let above = if top >= 32 {
                0
            } else {
                ((signed as u32) << shift) & !(u32::MAX >> (32 - top))
            };
            placed | above
        }
        _ => placed | (old & !mask),
    }
}
