//! Vector memory: MUBUF buffer accesses (V# addressing, loads to LDS), FLAT and GLOBAL
//! loads, stores and atomics, and the data registers (VGPR or AGPR) they read and write.

use super::lds::lds_place;
use super::{illegal, Wave, R};
use crate::decode::Operand;
use crate::exec::cache::{Cached, MemKind, SrcType, D16};
use crate::exec::env::{AtomicOp, AtomicRequest, WaveEnv};
use crate::exec::wave::{write_masked, Lanes, WAVE_SIZE};
use crate::table::{Enc, Op};

/// A 1- or 2-byte signed load's value (zero-extended by [`WaveEnv::load`]) sign-extended to
/// 32 bits.
pub(super) fn sign_extend_load(v: u32, bytes: u32) -> u32 {
    if bytes == 1 {
        v as u8 as i8 as i32 as u32
    } else {
        v as u16 as i16 as i32 as u32
    }
}

/// Fields of a buffer resource descriptor (V#).
#[derive(Clone, Copy, Debug)]
struct BufferResource {
    base: u64,
    stride: u64,
    swizzle: bool,
    num_records: u64,
    index_stride: u64,
    add_tid: bool,
}

impl BufferResource {
    fn from_dwords(d: [u32; 4]) -> Self {
        BufferResource {
            base: u64::from(d[0]) | (u64::from(d[1] & 0xffff) << 32),
            stride: u64::from((d[1] >> 16) & 0x3fff),
            swizzle: (d[1] >> 31) & 1 != 0,
            num_records: u64::from(d[2]),
            index_stride: 8 << ((d[3] >> 21) & 3),
            add_tid: (d[3] >> 23) & 1 != 0,
        }
    }
}

impl Wave {
    /// Byte addresses of a MUBUF access per lane, and the lanes in range.
    pub(super) fn buffer_addresses(&self, c: &Cached) -> R<([u64; WAVE_SIZE], u64)> {
        let [w0, w1] = c.inst.words;
        let offset12 = u64::from(w0 & 0xfff);
        let offen = (w0 >> 12) & 1 != 0;
        let idxen = (w0 >> 13) & 1 != 0;
        let vaddr = (w1 & 0xff) as usize;
        let srsrc = (((w1 >> 16) & 0x1f) << 2) as usize;
        let soffset_field = w1 >> 24;
        let soffset = self.sread(scalar_operand_at(soffset_field), SrcType::Int, false);
        let rsrc = BufferResource::from_dwords([
            self.sgpr[srsrc],
            self.sgpr[srsrc + 1],
            self.sgpr[srsrc + 2],
            self.sgpr[srsrc + 3],
        ]);
        let mut vidx = [0u32; WAVE_SIZE];
        let mut voff = [0u32; WAVE_SIZE];
        match (idxen, offen) {
            (true, true) => {
                vidx = *self.v(vaddr)?;
                voff = *self.v(vaddr + 1)?;
            }
            (true, false) => vidx = *self.v(vaddr)?,
            (false, true) => voff = *self.v(vaddr)?,
            (false, false) => {}
        }
        let exec = self.exec();
        let mut addrs = [0u64; WAVE_SIZE];
        let mut in_range = 0u64;
        for l in 0..WAVE_SIZE {
            let index = u64::from(vidx[l]) + if rsrc.add_tid { l as u64 } else { 0 };
            let offset = u64::from(voff[l]) + offset12;
            let (addr, ok) = if rsrc.swizzle {
                let es = 4u64;
                let is = rsrc.index_stride;
                let (imsb, ilsb) = (index / is, index % is);
                let (omsb, olsb) = (offset / es, offset % es);
                let a = rsrc
                    .base
                    .wrapping_add(soffset)
                    .wrapping_add(
                        (imsb.wrapping_mul(rsrc.stride).wrapping_add(omsb * es)).wrapping_mul(is),
                    )
                    .wrapping_add(ilsb * es + olsb);
                (a, rsrc.stride == 0 || index < rsrc.num_records)
            } else if rsrc.stride == 0 {
                (
                    rsrc.base.wrapping_add(soffset).wrapping_add(offset),
                    offset < rsrc.num_records,
                )
            } else {
                (
                    rsrc.base
                        .wrapping_add(soffset)
                        .wrapping_add(index.wrapping_mul(rsrc.stride))
                        .wrapping_add(offset),
                    index < rsrc.num_records,
                )
            };
            addrs[l] = addr;
            if ok && (exec >> l) & 1 != 0 {
                in_range |= 1 << l;
            }
        }
        Ok((addrs, in_range))
    }

    pub(super) fn mubuf<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        // Cache write-back/invalidate: the WaveEnv's memory is coherent, nothing to do.
        if matches!(
            c.inst.op,
            Op::BufferWbinvl1 | Op::BufferWbinvl1Vol | Op::BufferWbl2 | Op::BufferInvl2
        ) {
            return Ok(());
        }
        if super::format::is_format(c.inst.op) {
            return self.mubuf_format(c, env);
        }
        let [w0, w1] = c.inst.words;
        if (w0 >> 16) & 1 != 0 {
            return self.mubuf_load_to_lds(c, env);
        }
        let vdata = ((w1 >> 8) & 0xff) as usize;
        let glc = (w0 >> 14) & 1 != 0;
        let (addrs, mask) = self.buffer_addresses(c)?;
        let acc = self.target == crate::Target::Gfx90a && (w1 >> 23) & 1 != 0;
        self.vmem(c, env, &addrs, mask, vdata, glc, acc)
    }

    /// A MUBUF load with the `lds` bit ("LDS DMA": `buffer_load_{ubyte,sbyte,ushort,sshort,
    /// dword} ... lds`, which Tensile's rocBLAS kernels use): the data goes to LDS, not to a
    /// VGPR (VDATA is ignored; llvm-mc prints none).
    ///
    /// - The memory address, the buffer's range check and its out-of-range rule (the lane's
    ///   data is 0) are those of the plain load ([`Wave::buffer_addresses`]).
    /// - Lane `l` writes one dword at LDS byte `M0[15:0] + OFFSET + 4 * l` (the workgroup's
    ///   LDS base is 0 here): the LDS address is "M0 + inst_offset + (TIDinWave * 4)" (LLVM
    ///   review D125409, S. Mekhanoshin, AMD, on why wider LDS loads are useless); "LDS_ADDR
    ///   = LDS_BASE + (M0&0xffff) + LANEID*4" (CLRX, `doc/GcnMemHandling.md`, which leaves
    ///   out the instruction offset that D125409 and LLVM's `AMDGPUDMAOperations` ("offset
    ///   applied to both src and LDS address") include); the stride is 4 bytes for every
    ///   size up to a dword (`AMDGPUDMAOperations`: "implicitly offset by 4 * lane_id bytes
    ///   for sizes up to 4 bytes").
    /// - A byte or short is stored as a whole dword, zero-extended (CLRX, as above); the
    ///   signed forms are sign-extended as the same load into a VGPR is (the model's reading:
    ///   no source at hand says otherwise).
    /// - EXEC-masked lanes write nothing. A dword past the LDS allocation follows the DS
    ///   rule ([`lds_place`]): dropped, a fault only in a strict world.
    ///
    /// Wider loads (`dwordx2`..`x4`), D16 and format loads with the bit stay illegal:
    /// llvm-mc-15 rejects the first two with `lds` on gfx9, and D125409 calls wider ones
    /// useless (neighbouring lanes overwrite each other).
    fn mubuf_load_to_lds<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let MemKind::Load {
            bytes: bytes @ (1 | 2 | 4),
            signed,
            half: D16::Full,
        } = c.mem
        else {
            return Err(illegal(self.pc, c));
        };
        let offset12 = c.inst.words[0] & 0xfff;
        let (addrs, in_range) = self.buffer_addresses(c)?;
        let mut data = [[0u32; WAVE_SIZE]; 1];
        env.load(&addrs, in_range, bytes, &mut data)?;
        let exec = self.exec();
        let first = (self.m0() & 0xffff) + offset12;
        let lds_len = env.lds().len();
        let strict = env.lds_strict();
        let mut dropped = None;
        for (l, &raw) in data[0].iter().enumerate() {
            if (exec >> l) & 1 == 0 {
                continue;
            }
            let value = match (in_range >> l) & 1 {
                0 => 0,
                _ if signed => sign_extend_load(raw, bytes),
                _ => raw,
            };
            let a = first + 4 * l as u32;
            if let Some(p) = lds_place(a, 4, lds_len, strict, &mut dropped)? {
                env.lds()[p..p + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
        if let Some(offset) = dropped {
            env.lds_out_of_range(offset);
        }
        Ok(())
    }

    pub(super) fn flat<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let [w0, w1] = c.inst.words;
        let vaddr = (w1 & 0xff) as usize;
        let vdata = ((w1 >> 8) & 0xff) as usize;
        let saddr = ((w1 >> 16) & 0x7f) as usize;
        let vdst = (w1 >> 24) as usize;
        let glc = (w0 >> 16) & 1 != 0;
        let offset: i64 = if c.inst.enc == Enc::Flat {
            i64::from(w0 & 0xfff)
        } else {
            i64::from(((w0 & 0x1fff) << 19) as i32 >> 19)
        };
        if c.inst.enc == Enc::Global && self.global_dword_run(c, env, w1, offset)? {
            return Ok(());
        }
        let lo = self.v(vaddr)?;
        // built lane by lane (no zeroing of the array first)
        let addrs: [u64; WAVE_SIZE] = if saddr != 0x7f && c.inst.enc == Enc::Global {
            let base = self.sgpr64(saddr);
            std::array::from_fn(|l| {
                base.wrapping_add(u64::from(lo[l]))
                    .wrapping_add_signed(offset)
            })
        } else {
            let hi = self.v(vaddr + 1)?;
            std::array::from_fn(|l| {
                (u64::from(lo[l]) | (u64::from(hi[l]) << 32)).wrapping_add_signed(offset)
            })
        };
        let exec = self.exec();
        // loads write VDST; stores and atomics read DATA
        let data_reg = match c.mem {
            MemKind::Load { .. } => vdst,
            _ => vdata,
        };
        let acc = self.target == crate::Target::Gfx90a && (w1 >> 23) & 1 != 0;
        if c.inst.enc == Enc::Flat && self.sh_mem_bases != 0 {
            // lanes inside the shared (LDS) or private (scratch) aperture go there
            let shared = u64::from(self.sh_mem_bases >> 16) << 48;
            let private = u64::from(self.sh_mem_bases & 0xffff) << 48;
            let in_aperture = |a: u64| a >> 32 == shared >> 32 || a >> 32 == private >> 32;
            if (0..WAVE_SIZE).any(|l| (exec >> l) & 1 != 0 && in_aperture(addrs[l])) {
                let regs = (data_reg, vdata, vdst);
                return self.flat_routed(c, env, &addrs, exec, regs, glc, acc);
            }
        }
        if let MemKind::Atomic { .. } = c.mem {
            return self.vatomic(c, env, &addrs, exec, vdata, vdst, glc, acc);
        }
        self.vmem(c, env, &addrs, exec, data_reg, glc, acc)
    }

    /// A GLOBAL dword load or store of the whole wave whose lanes address one run of memory
    /// (lane `l` at lane 0's address + 4 `l`, the compiler's `a[i]` over consecutive `i`),
    /// through [`WaveEnv::load_run`] / [`WaveEnv::store_run`]: no 64-bit lane addresses are
    /// built. `Ok(false)` (nothing done) for every other access, or when the environment has
    /// no quick way: the general path runs it then, with the same result.
    fn global_dword_run<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        w1: u32,
        offset: i64,
    ) -> R<bool> {
        let load = match c.mem {
            MemKind::Load {
                bytes: 4,
                half: D16::Full,
                ..
            } => true,
            MemKind::Store {
                bytes: 4,
                half: D16::Full,
            } => false,
            _ => return Ok(false),
        };
        let acc = self.target == crate::Target::Gfx90a && (w1 >> 23) & 1 != 0;
        if acc || self.exec() != u64::MAX {
            return Ok(false);
        }
        let saddr = ((w1 >> 16) & 0x7f) as usize;
        let vaddr = (w1 & 0xff) as usize;
        let Ok(lo) = self.v(vaddr) else {
            return Ok(false);
        };
        // lane l's low half is lane 0's + 4l without wrapping, the high halves all equal
        let first = lo[0];
        if first.checked_add(4 * (WAVE_SIZE as u32 - 1)).is_none() {
            return Ok(false);
        }
        let mut diff = 0u32;
        let mut want = first;
        for &v in lo {
            diff |= v ^ want;
            want = want.wrapping_add(4);
        }
        let start = if saddr != 0x7f {
            self.sgpr64(saddr).wrapping_add(u64::from(first))
        } else {
            let Ok(hi) = self.v(vaddr + 1) else {
                return Ok(false);
            };
            let top = hi[0];
            for &v in hi {
                diff |= v ^ top;
            }
            u64::from(first) | u64::from(top) << 32
        };
        let start = start.wrapping_add_signed(offset);
        if diff != 0 || start.checked_add(4 * (WAVE_SIZE as u64 - 1)).is_none() {
            return Ok(false);
        }
        if load {
            // Straight into the destination: `load_run` writes nothing when it declines. (A
            // destination outside the VGPRs: the general path reports it.)
            let vdst = (w1 >> 24) as usize;
            let Ok(dst) = self.v_mut(vdst) else {
                return Ok(false);
            };
            Ok(env.load_run(start, dst))
        } else {
            let vdata = ((w1 >> 8) & 0xff) as usize;
            match self.v(vdata) {
                Ok(data) => Ok(env.store_run(start, data)),
                Err(_) => Ok(false),
            }
        }
    }

    /// Loads and stores of MUBUF/FLAT/GLOBAL: `reg` is the data (store) or destination (load)
    /// VGPR.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn vmem<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        addrs: &[u64; WAVE_SIZE],
        mask: u64,
        reg: usize,
        glc: bool,
        acc: bool,
    ) -> R<()> {
        match c.mem {
            MemKind::Load {
                bytes,
                signed,
                half,
            } => {
                let dwords = bytes.div_ceil(4) as usize;
                // one dword (the common case) zeroes one row, not four
                let (mut one, mut four);
                let out: &mut [[u32; WAVE_SIZE]] = if dwords <= 1 {
                    one = [[0u32; WAVE_SIZE]; 1];
                    &mut one[..dwords]
                } else {
                    four = [[0u32; WAVE_SIZE]; 4];
                    &mut four[..dwords]
                };
                env.load(addrs, mask, bytes, out)?;
                if signed {
                    for v in out[0].iter_mut() {
                        *v = sign_extend_load(*v, bytes);
                    }
                }
                // lanes out of buffer range read 0
                let exec = self.exec();
                for (i, d) in out.iter_mut().enumerate() {
                    let dst = self.data_reg_mut(acc, reg + i)?;
                    if half == D16::Full {
                        // the same, as a copy the compiler vectorises
                        if mask & exec != exec {
                            for (l, v) in d.iter_mut().enumerate() {
                                *v &= 0u32.wrapping_sub(((mask >> l) & 1) as u32);
                            }
                        }
                        write_masked(dst, d, exec);
                        continue;
                    }
                    for l in 0..WAVE_SIZE {
                        if (exec >> l) & 1 != 0 {
                            let v = if (mask >> l) & 1 != 0 { d[l] } else { 0 };
                            dst[l] = match half {
                                D16::Full => v,
                                D16::Lo => (dst[l] & 0xffff_0000) | (v & 0xffff),
                                D16::Hi => (dst[l] & 0xffff) | (v << 16),
                            };
                        }
                    }
                }
                Ok(())
            }
            MemKind::Store { bytes, half } => {
                let dwords = bytes.div_ceil(4) as usize;
                if dwords == 1 && half != D16::Hi {
                    // one whole dword per lane: the register itself is the data
                    let data = self.data_reg(acc, reg)?;
                    env.store(addrs, mask, bytes, std::slice::from_ref(data))?;
                    return Ok(());
                }
                let mut data = [[0u32; WAVE_SIZE]; 4];
                for (i, d) in data[..dwords].iter_mut().enumerate() {
                    *d = *self.data_reg(acc, reg + i)?;
                }
                if half == D16::Hi {
                    data[0].iter_mut().for_each(|v| *v >>= 16);
                }
                env.store(addrs, mask, bytes, &data[..dwords])?;
                Ok(())
            }
            MemKind::Atomic { .. } => {
                // MUBUF atomics: VDATA holds the source and receives the return value
                self.vatomic(c, env, addrs, mask, reg, reg, glc, acc)
            }
            MemKind::Other => Err(illegal(self.pc, c)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn vatomic<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        addrs: &[u64; WAVE_SIZE],
        mask: u64,
        data: usize,
        ret: usize,
        glc: bool,
        acc: bool,
    ) -> R<()> {
        let MemKind::Atomic { op, wide } = c.mem else {
            return Err(illegal(self.pc, c));
        };
        let n = if wide { 2 } else { 1 };
        let read = |w: &Wave, r: usize| -> R<[u64; WAVE_SIZE]> {
            let mut v = [0u64; WAVE_SIZE];
            let lo = w.data_reg(acc, r)?;
            for l in 0..WAVE_SIZE {
                v[l] = u64::from(lo[l]);
            }
            if wide {
                let hi = w.data_reg(acc, r + 1)?;
                for l in 0..WAVE_SIZE {
                    v[l] |= u64::from(hi[l]) << 32;
                }
            }
            Ok(v)
        };
        let src = read(self, data)?;
        // cmpswap: DATA = {src, cmp}
        let cmp = if op == AtomicOp::CmpSwap {
            read(self, data + n)?
        } else {
            [0u64; WAVE_SIZE]
        };
        let mut old = [0u64; WAVE_SIZE];
        env.atomic(
            &AtomicRequest {
                op,
                wide,
                exec: mask,
                addresses: addrs,
                src: &src,
                cmp: &cmp,
            },
            &mut old,
        )?;
        if glc {
            let exec = self.exec();
            let mut lo = [0u32; WAVE_SIZE];
            let mut hi = [0u32; WAVE_SIZE];
            for l in 0..WAVE_SIZE {
                lo[l] = old[l] as u32;
                hi[l] = (old[l] >> 32) as u32;
            }
            write_masked(self.data_reg_mut(acc, ret)?, &lo, exec);
            if wide {
                write_masked(self.data_reg_mut(acc, ret + 1)?, &hi, exec);
            }
        }
        Ok(())
    }

    /// Writes a data register (VGPR, or AGPR with the gfx90a ACC bit) in the lanes of `mask`.
    pub(super) fn write_d(&mut self, acc: bool, index: usize, value: &Lanes, mask: u64) -> R<()> {
        write_masked(self.data_reg_mut(acc, index)?, value, mask);
        Ok(())
    }

    /// A data register of a memory instruction: VGPR, or AGPR when the gfx90a ACC bit is set.
    pub(super) fn data_reg(&self, acc: bool, index: usize) -> R<&Lanes> {
        if acc {
            self.a(index)
        } else {
            self.v(index)
        }
    }

    pub(super) fn data_reg_mut(&mut self, acc: bool, index: usize) -> R<&mut Lanes> {
        if acc {
            self.a_mut(index)
        } else {
            self.v_mut(index)
        }
    }
}

/// A scalar operand from an 8-bit SOFFSET-style field (SGPRs, specials and inline integers),
/// read with the decoder's own operand rules; a value no scalar source may hold reads as 0.
pub(super) fn scalar_operand_at(v: u32) -> Operand {
    crate::decode::scalar_operand(v, 1, &mut None, None).unwrap_or(Operand::IntConst(0))
}
