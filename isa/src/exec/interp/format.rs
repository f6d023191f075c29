//! Typed ("format") buffer accesses: MTBUF `tbuffer_{load,store}_format_*` take the data
//! and number format from the instruction's DFMT/NFMT fields; MUBUF
//! `buffer_{load,store}_format_*` from the buffer resource (V# dword 3: DST_SEL_X..W
//! `[11:0]`, NUM_FORMAT `[14:12]`, DATA_FORMAT `[18:15]`), and their loads route each
//! register through DST_SEL (Vega ISA guide, "Buffer Instructions" and the buffer resource
//! table).
//!
//! Formats whose components are whole bytes are modelled: `8`, `16`, `8_8`, `32`, `16_16`,
//! `8_8_8_8`, `32_32`, `16_16_16_16`, `32_32_32`, `32_32_32_32`, each with UNORM, SNORM,
//! USCALED, SSCALED, UINT, SINT, and FLOAT for 16/32-bit components. The packed 10/11-bit
//! formats, FLOAT on 8-bit components and the reserved values fault as illegal.

use super::{illegal, Wave, R};
use crate::exec::cache::Cached;
use crate::exec::env::WaveEnv;
use crate::exec::float::{f16_to_f32, f32_to_f16};
use crate::exec::wave::{write_masked, Lanes, Round, WAVE_SIZE};
use crate::table::{Enc, Op};

/// One typed access: direction, registers' components, and whether they are packed 16-bit.
#[derive(Clone, Copy)]
struct Access {
    load: bool,
    comps: usize,
    d16: bool,
}

/// The typed access an instruction makes, if it is one.
fn access(op: Op) -> Option<Access> {
    use Op::*;
    let (load, comps, d16) = match op {
        BufferLoadFormatX | TbufferLoadFormatX => (true, 1, false),
        BufferLoadFormatXy | TbufferLoadFormatXy => (true, 2, false),
        BufferLoadFormatXyz | TbufferLoadFormatXyz => (true, 3, false),
        BufferLoadFormatXyzw | TbufferLoadFormatXyzw => (true, 4, false),
        BufferStoreFormatX | TbufferStoreFormatX => (false, 1, false),
        BufferStoreFormatXy | TbufferStoreFormatXy => (false, 2, false),
        BufferStoreFormatXyz | TbufferStoreFormatXyz => (false, 3, false),
        BufferStoreFormatXyzw | TbufferStoreFormatXyzw => (false, 4, false),
        BufferLoadFormatD16X | TbufferLoadFormatD16X => (true, 1, true),
        BufferLoadFormatD16Xy | TbufferLoadFormatD16Xy => (true, 2, true),
        BufferLoadFormatD16Xyz | TbufferLoadFormatD16Xyz => (true, 3, true),
        BufferLoadFormatD16Xyzw | TbufferLoadFormatD16Xyzw => (true, 4, true),
        BufferStoreFormatD16X | TbufferStoreFormatD16X => (false, 1, true),
        BufferStoreFormatD16Xy | TbufferStoreFormatD16Xy => (false, 2, true),
        BufferStoreFormatD16Xyz | TbufferStoreFormatD16Xyz => (false, 3, true),
        BufferStoreFormatD16Xyzw | TbufferStoreFormatD16Xyzw => (false, 4, true),
        _ => return None,
    };
    Some(Access { load, comps, d16 })
}

/// Whether `op` is a MUBUF format access (executed here rather than as an untyped one).
pub(super) fn is_format(op: Op) -> bool {
    access(op).is_some()
}

/// Bytes per component and component count of a DATA_FORMAT, for the byte-aligned ones.
pub(super) fn data_format(dfmt: u32) -> Option<(u32, usize)> {
    Some(match dfmt {
        1 => (1, 1),
        2 => (2, 1),
        3 => (1, 2),
        4 => (4, 1),
        5 => (2, 2),
        10 => (1, 4),
        11 => (4, 2),
        12 => (2, 4),
        13 => (4, 3),
        14 => (4, 4),
        _ => return None,
    })
}

pub(super) const UNORM: u32 = 0;
pub(super) const SNORM: u32 = 1;
pub(super) const USCALED: u32 = 2;
pub(super) const SSCALED: u32 = 3;
pub(super) const UINT: u32 = 4;
pub(super) const SINT: u32 = 5;
pub(super) const FLOAT: u32 = 7;

/// Whether a NUM_FORMAT produces floats in the registers.
pub(super) fn float_valued(nfmt: u32) -> bool {
    !matches!(nfmt, UINT | SINT)
}

/// Whether the (component size, NUM_FORMAT) pair is modelled.
pub(super) fn valid(bytes: u32, nfmt: u32) -> bool {
    match nfmt {
        UNORM | SNORM | USCALED | SSCALED => bytes < 4,
        UINT | SINT => true,
        FLOAT => bytes >= 2,
        _ => false,
    }
}

/// A component read from memory as the 32-bit register value.
pub(super) fn to_reg(raw: u32, bytes: u32, nfmt: u32) -> u32 {
    let bits = 8 * bytes;
    let sext = ((raw << (32 - bits)) as i32) >> (32 - bits);
    let umax = ((1u64 << bits) - 1) as f64;
    let smax = ((1u64 << (bits - 1)) - 1) as f64;
    match nfmt {
        UNORM => ((f64::from(raw) / umax) as f32).to_bits(),
        SNORM => ((f64::from(sext) / smax).max(-1.0) as f32).to_bits(),
        USCALED => (raw as f32).to_bits(),
        SSCALED => (sext as f32).to_bits(),
        SINT => sext as u32,
        FLOAT if bytes == 2 => f16_to_f32(raw as u16).to_bits(),
        _ => raw,
    }
}

/// A 32-bit register value converted to a component of `bytes` for memory.
pub(super) fn from_reg(v: u32, bytes: u32, nfmt: u32) -> u32 {
    let bits = 8 * bytes;
    let mask = ((1u64 << bits) - 1) as u32;
    let f = f32::from_bits(v);
    let f = if f.is_nan() { 0.0 } else { f64::from(f) };
    let umax = ((1u64 << bits) - 1) as f64;
    let smax = ((1u64 << (bits - 1)) - 1) as f64;
    match nfmt {
        UNORM => (f.clamp(0.0, 1.0) * umax).round_ties_even() as u32,
        SNORM => ((f.clamp(-1.0, 1.0) * smax).round_ties_even() as i32 as u32) & mask,
        USCALED => (f.clamp(0.0, umax) as u32) & mask,
        SSCALED => (f.clamp(-smax - 1.0, smax) as i32 as u32) & mask,
        FLOAT if bytes == 2 => u32::from(f32_to_f16(f32::from_bits(v), Round::NearestEven)),
        _ => v & mask,
    }
}

/// A 32-bit register value as the 16-bit half a d16 access keeps (floats to f16).
pub(super) fn to_d16(v: u32, nfmt: u32) -> u32 {
    if float_valued(nfmt) {
        u32::from(f32_to_f16(f32::from_bits(v), Round::NearestEven))
    } else {
        v & 0xffff
    }
}

/// A d16 register half widened back to the 32-bit value a store converts.
pub(super) fn from_d16(h: u32, nfmt: u32) -> u32 {
    if float_valued(nfmt) {
        f16_to_f32(h as u16).to_bits()
    } else if nfmt == SINT {
        h as u16 as i16 as i32 as u32
    } else {
        h & 0xffff
    }
}

/// Bit positions of MTBUF's DFMT (4 bits) and NFMT (3 bits) in the first dword.
const MTBUF_DFMT: u32 = 19;
const MTBUF_NFMT: u32 = 23;

/// The first-dword bits of an MTBUF format (for probes).
pub(crate) fn mtbuf_format_bits(dfmt: u32, nfmt: u32) -> u32 {
    (dfmt & 0xf) << MTBUF_DFMT | (nfmt & 7) << MTBUF_NFMT
}

impl Wave {
    /// MTBUF: the format is the instruction's DFMT `[22:19]` and NFMT `[25:23]`.
    pub(super) fn mtbuf<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let w0 = c.inst.words[0];
        let (dfmt, nfmt) = ((w0 >> MTBUF_DFMT) & 0xf, (w0 >> MTBUF_NFMT) & 7);
        self.format_access(c, env, dfmt, nfmt, None)
    }

    /// MUBUF `buffer_*_format_*`: the format and DST_SEL come from the resource.
    pub(super) fn mubuf_format<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let srsrc = (((c.inst.words[1] >> 16) & 0x1f) << 2) as usize;
        let d3 = self.sgpr.get(srsrc + 3).copied().unwrap_or(0);
        let sel = [d3 & 7, (d3 >> 3) & 7, (d3 >> 6) & 7, (d3 >> 9) & 7];
        self.format_access(c, env, (d3 >> 15) & 0xf, (d3 >> 12) & 7, Some(sel))
    }

    fn format_access<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        dfmt: u32,
        nfmt: u32,
        dst_sel: Option<[u32; 4]>,
    ) -> R<()> {
        let Some(a) = access(c.inst.op) else {
            return Err(illegal(self.pc, c));
        };
        let Some((bytes, fmt_comps)) = data_format(dfmt) else {
            return Err(illegal(self.pc, c));
        };
        if !valid(bytes, nfmt) || (c.inst.enc == Enc::Mubuf && (c.inst.words[0] >> 16) & 1 != 0) {
            return Err(illegal(self.pc, c));
        }
        let w1 = c.inst.words[1];
        let vdata = ((w1 >> 8) & 0xff) as usize;
        let acc = self.target == crate::Target::Gfx90a && (w1 >> 23) & 1 != 0;
        let (addrs, mask) = self.buffer_addresses(c)?;
        let exec = self.exec();
        let one = if float_valued(nfmt) {
            1.0f32.to_bits()
        } else {
            1
        };
        // register values of the four components (x, y, z, w) as 32-bit values
        let mut comp = [[0u32; WAVE_SIZE]; 4];
        if a.load {
            let mut fetched = [[0u32; WAVE_SIZE]; 4];
            for (k, f) in fetched.iter_mut().enumerate() {
                if k >= fmt_comps {
                    // missing components read 0, and w reads 1
                    *f = [if k == 3 { one } else { 0 }; WAVE_SIZE];
                    continue;
                }
                let mut at = addrs;
                at.iter_mut()
                    .for_each(|x| *x = x.wrapping_add(u64::from(bytes) * k as u64));
                let mut raw = [[0u32; WAVE_SIZE]; 1];
                env.load(&at, mask, bytes, &mut raw)?;
                for l in 0..WAVE_SIZE {
                    f[l] = to_reg(raw[0][l], bytes, nfmt);
                }
            }
            for (k, out) in comp.iter_mut().enumerate() {
                *out = match dst_sel.map(|s| s[k]) {
                    None => fetched[k],
                    Some(s @ 4..=7) => fetched[(s - 4) as usize],
                    Some(1) => [one; WAVE_SIZE],
                    Some(_) => [0; WAVE_SIZE],
                };
            }
            // lanes out of the buffer's range read 0
            for out in comp.iter_mut() {
                for (l, v) in out.iter_mut().enumerate() {
                    if (mask >> l) & 1 == 0 {
                        *v = 0;
                    }
                }
            }
            if a.d16 {
                for pair in 0..a.comps.div_ceil(2) {
                    let mut r: Lanes = [0; WAVE_SIZE];
                    for l in 0..WAVE_SIZE {
                        let lo = to_d16(comp[2 * pair][l], nfmt);
                        let hi = if 2 * pair + 1 < a.comps {
                            to_d16(comp[2 * pair + 1][l], nfmt)
                        } else {
                            0
                        };
                        r[l] = lo | (hi << 16);
                    }
                    write_masked(self.data_reg_mut(acc, vdata + pair)?, &r, exec);
                }
            } else {
                for (k, r) in comp[..a.comps].iter().enumerate() {
                    write_masked(self.data_reg_mut(acc, vdata + k)?, r, exec);
                }
            }
            return Ok(());
        }
        for (k, slot) in comp[..a.comps].iter_mut().enumerate() {
            *slot = if a.d16 {
                let reg = self.data_reg(acc, vdata + k / 2)?;
                let mut v = [0u32; WAVE_SIZE];
                for l in 0..WAVE_SIZE {
                    v[l] = from_d16(reg[l] >> (16 * (k % 2)), nfmt);
                }
                v
            } else {
                *self.data_reg(acc, vdata + k)?
            };
        }
        for (k, src) in comp[..a.comps.min(fmt_comps)].iter().enumerate() {
            let mut raw = [[0u32; WAVE_SIZE]; 1];
            for l in 0..WAVE_SIZE {
                raw[0][l] = from_reg(src[l], bytes, nfmt);
            }
            let mut at = addrs;
            at.iter_mut()
                .for_each(|x| *x = x.wrapping_add(u64::from(bytes) * k as u64));
            env.store(&at, mask, bytes, &raw)?;
        }
        Ok(())
    }
}
