//! Operand access of the interpreter: scalar and vector register reads and writes,
//! VOP3 source modifiers (abs, neg) and output modifiers (clamp, omod), and the lane loops
//! the VALU operations run their per-lane function through.

use super::{opnd, Wave, R};
use crate::decode::{Operand, SpecialReg};
use crate::exec::cache::{Cached, SrcType};
use crate::exec::float as fp;
use crate::exec::operand::{float_const, scalar_index};
use crate::exec::wave::{write_masked, Lanes, WAVE_SIZE};
use crate::table::{Enc, Field};

/// VOP3 modifier bits of an instruction.
#[derive(Clone, Copy, Default)]
pub(super) struct Mods {
    pub(super) abs: u32,
    pub(super) neg: u32,
    pub(super) clamp: bool,
    pub(super) omod: u8,
}

pub(super) fn mods_of(c: &Cached) -> Mods {
    if c.inst.enc != Enc::Vop3 {
        return Mods::default();
    }
    let [w0, w1] = c.inst.words;
    let vop3b = c.fields[4].is_some();
    Mods {
        abs: if vop3b { 0 } else { (w0 >> 8) & 7 },
        neg: w1 >> 29,
        clamp: (w0 >> 15) & 1 != 0,
        omod: ((w1 >> 27) & 3) as u8,
    }
}

impl Wave {
    /// Reads a scalar operand (32 or 64 bits).
    pub(super) fn sread(&self, op: Operand, ty: SrcType, wide: bool) -> u64 {
        if let Some(i) = scalar_index(op) {
            return if wide {
                self.sgpr64(i)
            } else {
                u64::from(self.sgpr[i])
            };
        }
        let v = match op {
            Operand::IntConst(i) => i64::from(i) as u64,
            Operand::FloatConst(code) => float_const(code, ty, wide),
            Operand::Literal(l) => {
                if wide && ty == SrcType::F64 {
                    u64::from(l) << 32
                } else {
                    u64::from(l)
                }
            }
            Operand::Imm(v) => u64::from(v),
            Operand::Special { reg, .. } => match reg {
                SpecialReg::SharedBase => u64::from(self.sh_mem_bases >> 16) << 48,
                SpecialReg::PrivateBase => u64::from(self.sh_mem_bases & 0xffff) << 48,
                SpecialReg::SharedLimit => (u64::from(self.sh_mem_bases >> 16) << 48) | 0xffff_ffff,
                SpecialReg::PrivateLimit => {
                    (u64::from(self.sh_mem_bases & 0xffff) << 48) | 0xffff_ffff
                }
                SpecialReg::Vccz => u64::from(self.vcc() == 0),
                SpecialReg::Execz => u64::from(self.exec() == 0),
                SpecialReg::Scc => u64::from(self.scc),
                _ => 0,
            },
            _ => 0,
        };
        if !wide {
            if let Operand::Special {
                reg: SpecialReg::SharedBase | SpecialReg::PrivateBase,
                ..
            } = op
            {
                return v >> 32;
            }
            return v & 0xffff_ffff;
        }
        v
    }

    pub(super) fn swrite(&mut self, op: Operand, value: u64, wide: bool) {
        if let Some(i) = scalar_index(op) {
            if wide {
                self.set_sgpr64(i, value);
            } else {
                self.sgpr[i] = value as u32;
            }
        }
    }

    pub(super) fn vread32(&self, op: Operand, ty: SrcType) -> R<Lanes> {
        match op {
            Operand::Vgpr { first, .. } => Ok(*self.v(usize::from(first))?),
            Operand::Agpr { first, .. } => Ok(*self.a(usize::from(first))?),
            _ => Ok([self.sread(op, ty, false) as u32; WAVE_SIZE]),
        }
    }

    pub(super) fn vread64(&self, op: Operand, ty: SrcType) -> R<[u64; WAVE_SIZE]> {
        let pair = |lo: &Lanes, hi: &Lanes| {
            let mut out = [0u64; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                out[l] = u64::from(lo[l]) | (u64::from(hi[l]) << 32);
            }
            out
        };
        match op {
            Operand::Vgpr { first, .. } => {
                let f = usize::from(first);
                Ok(pair(self.v(f)?, self.v(f + 1)?))
            }
            Operand::Agpr { first, .. } => {
                let f = usize::from(first);
                Ok(pair(self.a(f)?, self.a(f + 1)?))
            }
            _ => Ok([self.sread(op, ty, true); WAVE_SIZE]),
        }
    }

    pub(super) fn vwrite32(&mut self, op: Operand, value: &Lanes, mask: u64) -> R<()> {
        let dst = match op {
            Operand::Vgpr { first, .. } => self.v_mut(usize::from(first))?,
            Operand::Agpr { first, .. } => self.a_mut(usize::from(first))?,
            _ => return Ok(()),
        };
        write_masked(dst, value, mask);
        Ok(())
    }

    pub(super) fn vwrite64(&mut self, op: Operand, value: &[u64; WAVE_SIZE], mask: u64) -> R<()> {
        let mut lo = [0u32; WAVE_SIZE];
        let mut hi = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            lo[l] = value[l] as u32;
            hi[l] = (value[l] >> 32) as u32;
        }
        let (first, agpr) = match op {
            Operand::Vgpr { first, .. } => (usize::from(first), false),
            Operand::Agpr { first, .. } => (usize::from(first), true),
            _ => return Ok(()),
        };
        if agpr {
            write_masked(self.a_mut(first)?, &lo, mask);
            write_masked(self.a_mut(first + 1)?, &hi, mask);
        } else {
            write_masked(self.v_mut(first)?, &lo, mask);
            write_masked(self.v_mut(first + 1)?, &hi, mask);
        }
        Ok(())
    }

    pub(super) fn src32(&self, c: &Cached, field: Field, index: u32, m: Mods) -> R<Lanes> {
        let mut v = [0u32; WAVE_SIZE];
        self.src32_into(c, field, index, m, &mut v)?;
        Ok(v)
    }

    /// Reads a 32-bit source (with abs/neg applied) into `v`.
    fn src32_into(&self, c: &Cached, field: Field, index: u32, m: Mods, v: &mut Lanes) -> R<()> {
        if let Some(sel) = &self.sdwa_src {
            if index < 2 {
                *v = sel[index as usize];
                return Ok(());
            }
        }
        let Some(op) = opnd(c, field) else {
            *v = [0; WAVE_SIZE];
            return Ok(());
        };
        match op {
            Operand::Vgpr { first, .. } => v.copy_from_slice(self.v(usize::from(first))?),
            Operand::Agpr { first, .. } => v.copy_from_slice(self.a(usize::from(first))?),
            _ => v.fill(self.sread(op, c.src_type, false) as u32),
        }
        let (abs, neg) = ((m.abs >> index) & 1 != 0, (m.neg >> index) & 1 != 0);
        if abs || neg {
            let (am, nm) = if c.src_type == SrcType::F16 {
                (0x7fffu32, 0x8000u32)
            } else {
                (0x7fff_ffff, 0x8000_0000)
            };
            for x in v.iter_mut() {
                if abs {
                    *x &= am;
                }
                if neg {
                    *x ^= nm;
                }
            }
        }
        Ok(())
    }

    pub(super) fn src64(
        &self,
        c: &Cached,
        field: Field,
        index: u32,
        m: Mods,
    ) -> R<[u64; WAVE_SIZE]> {
        let Some(op) = opnd(c, field) else {
            return Ok([0; WAVE_SIZE]);
        };
        let mut v = self.vread64(op, c.src_type)?;
        let (abs, neg) = ((m.abs >> index) & 1 != 0, (m.neg >> index) & 1 != 0);
        if abs || neg {
            for x in v.iter_mut() {
                *x = fp::modify_in64(*x, abs, neg);
            }
        }
        Ok(v)
    }

    pub(super) fn dst32(&mut self, c: &Cached, mut r: Lanes, m: Mods, float_out: bool) -> R<()> {
        if float_out && (m.clamp || m.omod != 0) {
            for x in r.iter_mut() {
                *x = fp::modify_out32(f32::from_bits(*x), m.omod, m.clamp, self.mode).to_bits();
            }
        }
        let exec = self.exec();
        if let Some(d) = opnd(c, Field::D) {
            self.vwrite32(d, &r, exec)?;
        }
        Ok(())
    }

    pub(super) fn dst64(
        &mut self,
        c: &Cached,
        mut r: [u64; WAVE_SIZE],
        m: Mods,
        float_out: bool,
    ) -> R<()> {
        if float_out && (m.clamp || m.omod != 0) {
            for x in r.iter_mut() {
                *x = fp::modify_out64(f64::from_bits(*x), m.omod, m.clamp, self.mode).to_bits();
            }
        }
        let exec = self.exec();
        if let Some(d) = opnd(c, Field::D) {
            self.vwrite64(d, &r, exec)?;
        }
        Ok(())
    }

    /// The carry/condition mask an instruction reads: its C operand (VOP3) or VCC.
    pub(super) fn mask_in(&self, c: &Cached) -> u64 {
        match opnd(c, Field::C) {
            Some(o) if c.inst.enc == Enc::Vop3 => self.sread(o, SrcType::Int, true),
            _ => self.vcc(),
        }
    }

    /// Writes a lane mask to the instruction's E operand (VOP3B) or VCC.
    pub(super) fn mask_out(&mut self, c: &Cached, mask: u64) {
        match opnd(c, Field::E) {
            Some(o) => self.swrite(o, mask, true),
            None => self.set_vcc(mask),
        }
    }

    /// A 32-bit source as lanes: a reference into the register file when it is a plain
    /// VGPR, else materialised (constant splat, modifiers) into `store`.
    #[inline(always)]
    pub(super) fn src_ref<'a>(
        &'a self,
        c: &Cached,
        field: Field,
        index: u32,
        m: Mods,
        store: &'a mut Lanes,
    ) -> R<&'a Lanes> {
        let mods = ((m.abs | m.neg) >> index) & 1 != 0;
        match opnd(c, field) {
            Some(Operand::Vgpr { first, .. }) if !mods && self.sdwa_src.is_none() => {
                self.v(usize::from(first))
            }
            _ => {
                self.src32_into(c, field, index, m, store)?;
                Ok(store)
            }
        }
    }

    #[inline(always)]
    fn finish32(&mut self, c: &Cached, mut r: Lanes, m: Mods, float_out: bool) -> R<()> {
        if float_out && (m.clamp || m.omod != 0) {
            for x in r.iter_mut() {
                *x = fp::modify_out32(f32::from_bits(*x), m.omod, m.clamp, self.mode).to_bits();
            }
        }
        let exec = self.exec();
        match opnd(c, Field::D) {
            Some(Operand::Vgpr { first, .. }) => {
                write_masked(self.v_mut(usize::from(first))?, &r, exec)
            }
            Some(d) => self.vwrite32(d, &r, exec)?,
            None => {}
        }
        Ok(())
    }

    #[inline(never)]
    pub(super) fn lanes1(
        &mut self,
        c: &Cached,
        m: Mods,
        float_out: bool,
        f: impl Fn(u32) -> u32,
    ) -> R<()> {
        let mut sa = [0u32; WAVE_SIZE];
        let a = self.src_ref(c, Field::A, 0, m, &mut sa)?;
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l]);
        }
        self.finish32(c, r, m, float_out)
    }

    #[inline(never)]
    pub(super) fn lanes2(
        &mut self,
        c: &Cached,
        m: Mods,
        float_out: bool,
        f: impl Fn(u32, u32) -> u32,
    ) -> R<()> {
        let (mut sa, mut sb) = ([0u32; WAVE_SIZE], [0u32; WAVE_SIZE]);
        let a = self.src_ref(c, Field::A, 0, m, &mut sa)?;
        let b = self.src_ref(c, Field::B, 1, m, &mut sb)?;
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l], b[l]);
        }
        self.finish32(c, r, m, float_out)
    }

    #[inline(never)]
    pub(super) fn lanes3(
        &mut self,
        c: &Cached,
        m: Mods,
        float_out: bool,
        f: impl Fn(u32, u32, u32) -> u32,
    ) -> R<()> {
        let (mut sa, mut sb, mut sc) = ([0u32; WAVE_SIZE], [0u32; WAVE_SIZE], [0u32; WAVE_SIZE]);
        let a = self.src_ref(c, Field::A, 0, m, &mut sa)?;
        let b = self.src_ref(c, Field::B, 1, m, &mut sb)?;
        let d = self.src_ref(c, Field::C, 2, m, &mut sc)?;
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l], b[l], d[l]);
        }
        self.finish32(c, r, m, float_out)
    }

    #[inline(never)]
    pub(super) fn lanes64_1(&mut self, c: &Cached, m: Mods, f: impl Fn(u64) -> u64) -> R<()> {
        let a = self.src64(c, Field::A, 0, m)?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l]);
        }
        self.dst64(c, r, m, true)
    }

    #[inline(never)]
    pub(super) fn lanes64_2(&mut self, c: &Cached, m: Mods, f: impl Fn(u64, u64) -> u64) -> R<()> {
        let a = self.src64(c, Field::A, 0, m)?;
        let b = self.src64(c, Field::B, 1, m)?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l], b[l]);
        }
        self.dst64(c, r, m, true)
    }

    #[inline(never)]
    pub(super) fn lanes64_3(
        &mut self,
        c: &Cached,
        m: Mods,
        f: impl Fn(u64, u64, u64) -> u64,
    ) -> R<()> {
        let a = self.src64(c, Field::A, 0, m)?;
        let b = self.src64(c, Field::B, 1, m)?;
        let d = self.src64(c, Field::C, 2, m)?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l], b[l], d[l]);
        }
        self.dst64(c, r, m, true)
    }

    #[inline(never)]
    pub(super) fn lanes_widen(&mut self, c: &Cached, m: Mods, f: impl Fn(u32) -> u64) -> R<()> {
        let a = self.src32(c, Field::A, 0, m)?;
        let mut r = [0u64; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l]);
        }
        self.dst64(c, r, m, false)
    }

    #[inline(never)]
    pub(super) fn lanes_narrow(
        &mut self,
        c: &Cached,
        m: Mods,
        float_out: bool,
        f: impl Fn(u64) -> u32,
    ) -> R<()> {
        let a = self.src64(c, Field::A, 0, m)?;
        let mut r = [0u32; WAVE_SIZE];
        for l in 0..WAVE_SIZE {
            r[l] = f(a[l]);
        }
        self.dst32(c, r, m, float_out)
    }
}
