//! LDS and GWS: the DS instructions (`ds_*` on the wave's LDS allocation, with the
//! out-of-range rules) and `ds_gws_*` requests to the dispatcher.

use super::memory::sign_extend_load;
use super::{illegal, Flow, Wave, R};
use crate::exec::cache::{Cached, MemKind, D16};
use crate::exec::env::{AtomicOp, WaveEnv};
use crate::exec::fault::{Stop, WaveFault};
use crate::exec::lanes;
use crate::exec::wave::{Lanes, WAVE_SIZE};
use crate::table::{prop, Op};

/// Where `n` bytes at LDS byte `a` lie in an LDS of `len` bytes: `Some(a)` inside the
/// allocation. Outside it the hardware drops the write and reads 0 (the ISA guides'
/// out-of-range rules): `None`, and the first such offset is kept in `dropped` for
/// [`WaveEnv::lds_out_of_range`]; a strict world ([`WaveEnv::lds_strict`]) stops the wave.
pub(super) fn lds_place(
    a: u32,
    n: u32,
    len: usize,
    strict: bool,
    dropped: &mut Option<u32>,
) -> R<Option<usize>> {
    if u64::from(a) + u64::from(n) <= len as u64 {
        Ok(Some(a as usize))
    } else if strict {
        Err(WaveFault::LdsOutOfRange { offset: a })
    } else {
        dropped.get_or_insert(a);
        Ok(None)
    }
}

impl Wave {
    /// `ds_gws_*`: the request goes to the dispatcher (the GWS resources are the queue's).
    pub(super) fn gws(&mut self, c: &Cached, next: u64) -> R<Flow> {
        use crate::exec::fault::{GwsOp, GwsRequest, GWS_RESOURCES};
        let [w0, w1] = c.inst.words;
        let op = match c.inst.op {
            Op::DsGwsInit => GwsOp::Init,
            Op::DsGwsSemaV => GwsOp::SemaV,
            Op::DsGwsSemaBr => GwsOp::SemaBr,
            Op::DsGwsSemaP => GwsOp::SemaP,
            Op::DsGwsBarrier => GwsOp::Barrier,
            Op::DsGwsSemaReleaseAll => GwsOp::SemaReleaseAll,
            _ => return Err(illegal(self.pc, c)),
        };
        let value = if c.inst.row().slots.is_empty() {
            0
        } else {
            let acc = self.target == crate::Target::Gfx90a && (w0 >> 25) & 1 != 0;
            let exec = self.exec();
            let lane = if exec == 0 {
                0
            } else {
                exec.trailing_zeros() as usize
            };
            self.data_reg(acc, (w1 & 0xff) as usize)?[lane]
        };
        let resource = (((self.m0() >> 16) & 0x3f) + (w0 & 0xffff)) % GWS_RESOURCES;
        self.pc = next;
        Ok(Flow::Stop(Stop::Gws(GwsRequest {
            op,
            resource,
            value,
        })))
    }

    pub(super) fn ds<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let [w0, w1] = c.inst.words;
        if (w0 >> 16) & 1 != 0 {
            return Err(illegal(self.pc, c)); // GDS
        }
        // gfx90a ACC bit: DATA0/DATA1 and VDST are AGPRs (ADDR stays a VGPR)
        let acc = self.target == crate::Target::Gfx90a && (w0 >> 25) & 1 != 0;
        let offset0 = w0 & 0xff;
        let offset1 = (w0 >> 8) & 0xff;
        let offset = w0 & 0xffff;
        let addr_r = (w1 & 0xff) as usize;
        let data0 = ((w1 >> 8) & 0xff) as usize;
        let data1 = ((w1 >> 16) & 0xff) as usize;
        let vdst = (w1 >> 24) as usize;
        let exec = self.exec();
        let op = c.inst.op;
        match op {
            Op::DsSwizzleB32 => {
                // ds_swizzle_b32 vdst, vaddr: the data comes from ADDR
                let a = *self.v(addr_r)?;
                let r = lanes::swizzle(&a, offset as u16, exec);
                return self.write_d(acc, vdst, &r, exec);
            }
            Op::DsBpermuteB32 | Op::DsPermuteB32 => {
                let a = *self.v(addr_r)?;
                let d = *self.data_reg(acc, data0)?;
                let r = if op == Op::DsBpermuteB32 {
                    lanes::bpermute(&a, &d, offset, exec)
                } else {
                    lanes::permute(&a, &d, offset, exec)
                };
                return self.write_d(acc, vdst, &r, exec);
            }
            _ => {}
        }
        let addr = *self.v(addr_r)?;
        let lds_len = env.lds().len();
        let strict = env.lds_strict();
        // The first lane outside the allocation: the hardware drops its write and reads 0 for
        // it (the ISA guides' out-of-range rules); a strict world stops the wave instead.
        let mut dropped: Option<u32> = None;
        let mut check = |a: u32, n: u32| lds_place(a, n, lds_len, strict, &mut dropped);
        let props = c.inst.row().props;
        // read2/write2 are the DS ops without a plain MemKind
        if matches!(c.mem, MemKind::Other) && props & prop::DS2 != 0 {
            let size: u32 = if props & prop::DS2_B64 != 0 { 8 } else { 4 };
            let scale = if props & prop::DS2_ST64 != 0 {
                size * 64
            } else {
                size
            };
            let dw = (size / 4) as usize;
            let load = props & prop::DS_READ2 != 0;
            let mut out = [[0u32; WAVE_SIZE]; 4];
            let d0 = if load {
                [[0u32; WAVE_SIZE]; 2]
            } else {
                [
                    *self.data_reg(acc, data0)?,
                    if dw == 2 {
                        *self.data_reg(acc, data0 + 1)?
                    } else {
                        [0; WAVE_SIZE]
                    },
                ]
            };
            let d1 = if load {
                [[0u32; WAVE_SIZE]; 2]
            } else {
                [
                    *self.data_reg(acc, data1)?,
                    if dw == 2 {
                        *self.data_reg(acc, data1 + 1)?
                    } else {
                        [0; WAVE_SIZE]
                    },
                ]
            };
            let lds = env.lds();
            for l in 0..WAVE_SIZE {
                if (exec >> l) & 1 == 0 {
                    continue;
                }
                for (half, off) in [(0usize, offset0), (1, offset1)] {
                    let a = addr[l].wrapping_add(off * scale);
                    let Some(base) = check(a, size)? else {
                        continue; // dropped: the read's registers get 0
                    };
                    for d in 0..dw {
                        let p = base + 4 * d;
                        if load {
                            out[half * dw + d][l] =
                                u32::from_le_bytes([lds[p], lds[p + 1], lds[p + 2], lds[p + 3]]);
                        } else {
                            let v = if half == 0 { d0[d][l] } else { d1[d][l] };
                            lds[p..p + 4].copy_from_slice(&v.to_le_bytes());
                        }
                    }
                }
            }
            if load {
                for (i, r) in out[..2 * dw].iter().enumerate() {
                    self.write_d(acc, vdst + i, r, exec)?;
                }
            }
            if let Some(offset) = dropped {
                env.lds_out_of_range(offset);
            }
            return Ok(());
        }
        match c.mem {
            MemKind::Load {
                bytes,
                signed,
                half,
            } => {
                let dwords = bytes.div_ceil(4) as usize;
                let mut out = [[0u32; WAVE_SIZE]; 4];
                let lds = env.lds();
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 0 {
                        continue;
                    }
                    let a = addr[l].wrapping_add(offset);
                    // dropped: the lane reads 0
                    if let Some(base) = check(a, bytes)? {
                        for i in 0..bytes as usize {
                            out[i / 4][l] |= u32::from(lds[base + i]) << (8 * (i % 4));
                        }
                    }
                    if signed {
                        out[0][l] = sign_extend_load(out[0][l], bytes);
                    }
                }
                if half != D16::Full {
                    // d16 reads write one half of VDST and keep the other
                    let old = *self.data_reg(acc, vdst)?;
                    for l in 0..WAVE_SIZE {
                        out[0][l] = match half {
                            D16::Lo => (old[l] & 0xffff_0000) | (out[0][l] & 0xffff),
                            _ => (old[l] & 0xffff) | (out[0][l] << 16),
                        };
                    }
                }
                for (i, r) in out[..dwords].iter().enumerate() {
                    self.write_d(acc, vdst + i, r, exec)?;
                }
                if let Some(offset) = dropped {
                    env.lds_out_of_range(offset);
                }
                Ok(())
            }
            MemKind::Store { bytes, half } => {
                let dwords = bytes.div_ceil(4) as usize;
                let mut data = [[0u32; WAVE_SIZE]; 4];
                for (i, d) in data[..dwords].iter_mut().enumerate() {
                    *d = *self.data_reg(acc, data0 + i)?;
                }
                if half == D16::Hi {
                    data[0].iter_mut().for_each(|v| *v >>= 16);
                }
                let lds = env.lds();
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 0 {
                        continue;
                    }
                    let a = addr[l].wrapping_add(offset);
                    let Some(base) = check(a, bytes)? else {
                        continue; // dropped
                    };
                    for i in 0..bytes as usize {
                        lds[base + i] = (data[i / 4][l] >> (8 * (i % 4))) as u8;
                    }
                }
                if let Some(offset) = dropped {
                    env.lds_out_of_range(offset);
                }
                Ok(())
            }
            MemKind::Atomic { op: aop, wide } => {
                let n = if wide { 8u32 } else { 4 };
                // ds_cmpst: DATA0 is the compare value, DATA1 the value stored on a match
                let cmpst = aop == AtomicOp::CmpSwap;
                let src_reg = if cmpst { data1 } else { data0 };
                let pair = |w: &Wave, r: usize| -> R<(Lanes, Lanes)> {
                    let hi = if wide {
                        *w.data_reg(acc, r + 1)?
                    } else {
                        [0; WAVE_SIZE]
                    };
                    Ok((*w.data_reg(acc, r)?, hi))
                };
                let (src_lo, src_hi) = pair(self, src_reg)?;
                let (cmp_lo, cmp_hi) = if cmpst {
                    pair(self, data0)?
                } else {
                    ([0; WAVE_SIZE], [0; WAVE_SIZE])
                };
                let mut old_lo = [0u32; WAVE_SIZE];
                let mut old_hi = [0u32; WAVE_SIZE];
                let lds = env.lds();
                for l in 0..WAVE_SIZE {
                    if (exec >> l) & 1 == 0 {
                        continue;
                    }
                    let a = addr[l].wrapping_add(offset);
                    // dropped: no write, and the returned value is 0
                    let Some(base) = check(a, n)? else {
                        continue;
                    };
                    let mut old = 0u64;
                    for i in 0..n as usize {
                        old |= u64::from(lds[base + i]) << (8 * i);
                    }
                    let src = u64::from(src_lo[l]) | (u64::from(src_hi[l]) << 32);
                    let cmp = u64::from(cmp_lo[l]) | (u64::from(cmp_hi[l]) << 32);
                    let new = aop.apply(old, src, cmp, wide);
                    for i in 0..n as usize {
                        lds[base + i] = (new >> (8 * i)) as u8;
                    }
                    old_lo[l] = old as u32;
                    old_hi[l] = (old >> 32) as u32;
                }
                if props & prop::DS_RTN != 0 {
                    self.write_d(acc, vdst, &old_lo, exec)?;
                    if wide {
                        self.write_d(acc, vdst + 1, &old_hi, exec)?;
                    }
                }
                if let Some(offset) = dropped {
                    env.lds_out_of_range(offset);
                }
                Ok(())
            }
            MemKind::Other => Err(illegal(self.pc, c)),
        }
    }
}
