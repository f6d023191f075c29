//! SCRATCH instructions and FLAT accesses that land in the shared (LDS) or private (scratch)
//! aperture (AMDGPUUsage, "Address Spaces" and "Flat Scratch"; Vega ISA guide, FLAT).
//!
//! A flat address whose high 32 bits are the shared aperture's is an LDS offset; the private
//! aperture's, a private-segment offset. Private memory is interleaved per lane exactly as the
//! scratch buffer descriptor interleaves it for MUBUF (element size 4, index stride 64): byte
//! `p` of lane `l` lives at `FLAT_SCRATCH + (p / 4) * 256 + l * 4 + p % 4`, where
//! FLAT_SCRATCH is the wave's scratch base (the kernel prolog sets it from Flat Scratch Init
//! plus the scratch wave offset). Multi-dword private accesses are split per dword.

use super::memory::scalar_operand_at;
use super::{illegal, Wave, R};
use crate::exec::cache::{Cached, MemKind, SrcType};
use crate::exec::env::{AtomicRequest, WaveEnv};
use crate::exec::fault::{Access, MemFault};
use crate::exec::wave::{sreg, Lanes, WAVE_SIZE};

/// How a [`Routed`] world reads the lane addresses it is given.
#[derive(Clone, Copy)]
enum Route {
    /// FLAT: 64-bit addresses; the two apertures are the 4 GiB windows at `shared` and
    /// `private`.
    Flat { shared: u64, private: u64 },
    /// SCRATCH: every address is a 32-bit private offset.
    Scratch,
}

/// A [`WaveEnv`] that sends each lane of a memory instruction where its address points:
/// global memory as is, the private aperture through the per-lane interleave to the wave's
/// scratch, the shared aperture to the workgroup's LDS.
struct Routed<'e, E: WaveEnv + ?Sized> {
    inner: &'e mut E,
    route: Route,
    scratch_base: u64,
}

/// Lanes of `exec` by destination: (global, private, shared).
fn split(route: Route, addresses: &[u64; WAVE_SIZE], exec: u64) -> (u64, u64, u64) {
    match route {
        Route::Scratch => (0, exec, 0),
        Route::Flat { shared, private } => {
            let (mut g, mut p, mut s) = (0, 0, 0);
            for (l, a) in addresses.iter().enumerate() {
                let bit = 1u64 << l;
                if exec & bit == 0 {
                    continue;
                }
                if a >> 32 == shared >> 32 {
                    s |= bit;
                } else if a >> 32 == private >> 32 {
                    p |= bit;
                } else {
                    g |= bit;
                }
            }
            (g, p, s)
        }
    }
}

impl<E: WaveEnv + ?Sized> Routed<'_, E> {
    /// The interleaved address of byte `offset` of `lane`'s private segment.
    fn private_address(&self, offset: u32, lane: usize) -> u64 {
        let o = u64::from(offset);
        self.scratch_base
            .wrapping_add((o / 4) * 256)
            .wrapping_add(lane as u64 * 4)
            .wrapping_add(o % 4)
    }

    /// Per dword of a `bytes`-wide private access: the interleaved address of each lane, and
    /// the chunk width. Accesses that would straddle a dword are a fault (the compiler keeps
    /// private data naturally aligned).
    fn private_chunks(
        &self,
        addresses: &[u64; WAVE_SIZE],
        lanes: u64,
        bytes: u32,
        access: Access,
    ) -> Result<Vec<([u64; WAVE_SIZE], u32)>, MemFault> {
        let mut chunks = Vec::with_capacity(bytes.div_ceil(4) as usize);
        let mut done = 0;
        while done < bytes {
            let width = (bytes - done).min(4);
            let mut a = [0u64; WAVE_SIZE];
            for (l, slot) in a.iter_mut().enumerate() {
                if (lanes >> l) & 1 == 0 {
                    continue;
                }
                let offset = (addresses[l] as u32).wrapping_add(done);
                if offset % 4 + width > 4 {
                    return Err(MemFault {
                        address: addresses[l],
                        access,
                    });
                }
                *slot = self.private_address(offset, l);
            }
            chunks.push((a, width));
            done += width;
        }
        Ok(chunks)
    }

    /// The LDS byte offset of a lane's shared-aperture access; None when it lies outside the
    /// allocation, which the hardware drops as it does a DS access (the write is lost, the
    /// read is 0); a strict world reports it as a memory fault.
    fn lds_range(
        &mut self,
        address: u64,
        bytes: u32,
        access: Access,
    ) -> Result<Option<usize>, MemFault> {
        let offset = address as u32;
        if offset as usize + bytes as usize <= self.inner.lds().len() {
            return Ok(Some(offset as usize));
        }
        if self.inner.lds_strict() {
            return Err(MemFault { address, access });
        }
        self.inner.lds_out_of_range(offset);
        Ok(None)
    }
}

impl<E: WaveEnv + ?Sized> WaveEnv for Routed<'_, E> {
    fn load(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        out: &mut [Lanes],
    ) -> Result<(), MemFault> {
        let (g, p, s) = split(self.route, addresses, exec);
        if g != 0 {
            self.inner.load(addresses, g, bytes, out)?;
        }
        if p != 0 {
            for (d, (a, width)) in self
                .private_chunks(addresses, p, bytes, Access::Read)?
                .into_iter()
                .enumerate()
            {
                let mut tmp = [[0u32; WAVE_SIZE]];
                self.inner.load(&a, p, width, &mut tmp)?;
                for l in 0..WAVE_SIZE {
                    if (p >> l) & 1 != 0 {
                        out[d][l] = tmp[0][l];
                    }
                }
            }
        }
        for l in (0..WAVE_SIZE).filter(|l| (s >> l) & 1 != 0) {
            for dword in out.iter_mut().take(bytes.div_ceil(4) as usize) {
                dword[l] = 0;
            }
            let Some(base) = self.lds_range(addresses[l], bytes, Access::Read)? else {
                continue;
            };
            let lds = self.inner.lds();
            for i in 0..bytes as usize {
                out[i / 4][l] |= u32::from(lds[base + i]) << (8 * (i % 4));
            }
        }
        Ok(())
    }

    fn store(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        data: &[Lanes],
    ) -> Result<(), MemFault> {
        let (g, p, s) = split(self.route, addresses, exec);
        if g != 0 {
            self.inner.store(addresses, g, bytes, data)?;
        }
        if p != 0 {
            for (d, (a, width)) in self
                .private_chunks(addresses, p, bytes, Access::Write)?
                .into_iter()
                .enumerate()
            {
                self.inner.store(&a, p, width, &data[d..=d])?;
            }
        }
        for l in (0..WAVE_SIZE).filter(|l| (s >> l) & 1 != 0) {
            let Some(base) = self.lds_range(addresses[l], bytes, Access::Write)? else {
                continue;
            };
            let lds = self.inner.lds();
            for i in 0..bytes as usize {
                lds[base + i] = (data[i / 4][l] >> (8 * (i % 4))) as u8;
            }
        }
        Ok(())
    }

    fn load_scalar(&mut self, address: u64, out: &mut [u32]) -> Result<(), MemFault> {
        self.inner.load_scalar(address, out)
    }

    fn store_scalar(&mut self, address: u64, data: &[u32]) -> Result<(), MemFault> {
        self.inner.store_scalar(address, data)
    }

    fn atomic(
        &mut self,
        request: &AtomicRequest<'_>,
        old: &mut [u64; WAVE_SIZE],
    ) -> Result<(), MemFault> {
        let (g, p, s) = split(self.route, request.addresses, request.exec);
        if g != 0 {
            let global = AtomicRequest {
                exec: g,
                ..request.clone()
            };
            self.inner.atomic(&global, old)?;
        }
        let n = if request.wide { 8 } else { 4 };
        // private memory belongs to one lane: read, apply, write is atomic enough
        if p != 0 {
            let mut cur = [[0u32; WAVE_SIZE]; 2];
            self.load(request.addresses, p, n, &mut cur[..(n / 4) as usize])?;
            let mut new = [[0u32; WAVE_SIZE]; 2];
            for l in (0..WAVE_SIZE).filter(|l| (p >> l) & 1 != 0) {
                let o = u64::from(cur[0][l]) | (u64::from(cur[1][l]) << 32);
                let v = request
                    .op
                    .apply(o, request.src[l], request.cmp[l], request.wide);
                old[l] = o;
                new[0][l] = v as u32;
                new[1][l] = (v >> 32) as u32;
            }
            self.store(request.addresses, p, n, &new[..(n / 4) as usize])?;
        }
        for l in (0..WAVE_SIZE).filter(|l| (s >> l) & 1 != 0) {
            let Some(base) = self.lds_range(request.addresses[l], n, Access::Atomic)? else {
                old[l] = 0;
                continue;
            };
            let lds = self.inner.lds();
            let mut o = 0u64;
            for i in 0..n as usize {
                o |= u64::from(lds[base + i]) << (8 * i);
            }
            let v = request
                .op
                .apply(o, request.src[l], request.cmp[l], request.wide);
            for i in 0..n as usize {
                lds[base + i] = (v >> (8 * i)) as u8;
            }
            old[l] = o;
        }
        Ok(())
    }

    fn lds(&mut self) -> &mut [u8] {
        self.inner.lds()
    }

    fn lds_strict(&self) -> bool {
        self.inner.lds_strict()
    }

    fn lds_out_of_range(&mut self, offset: u32) {
        self.inner.lds_out_of_range(offset)
    }

    fn send_message(&mut self, simm16: u16, m0: u32) {
        self.inner.send_message(simm16, m0)
    }

    fn shader_clock(&mut self) -> u64 {
        self.inner.shader_clock()
    }

    fn real_time(&mut self) -> u64 {
        self.inner.real_time()
    }
}

impl Wave {
    fn flat_scratch_base(&self) -> u64 {
        u64::from(self.sgpr[sreg::FLAT_SCRATCH_LO])
            | (u64::from(self.sgpr[sreg::FLAT_SCRATCH_HI]) << 32)
    }

    /// A FLAT instruction some of whose lanes address an aperture.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn flat_routed<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        addrs: &[u64; WAVE_SIZE],
        exec: u64,
        regs: (usize, usize, usize),
        glc: bool,
        acc: bool,
    ) -> R<()> {
        let route = Route::Flat {
            shared: u64::from(self.sh_mem_bases >> 16) << 48,
            private: u64::from(self.sh_mem_bases & 0xffff) << 48,
        };
        self.routed(c, env, route, addrs, exec, regs, glc, acc)
    }

    #[allow(clippy::too_many_arguments)]
    fn routed<E: WaveEnv + ?Sized>(
        &mut self,
        c: &Cached,
        env: &mut E,
        route: Route,
        addrs: &[u64; WAVE_SIZE],
        exec: u64,
        (data_reg, vdata, vdst): (usize, usize, usize),
        glc: bool,
        acc: bool,
    ) -> R<()> {
        let mut routed = Routed {
            inner: env,
            route,
            scratch_base: self.flat_scratch_base(),
        };
        if let MemKind::Atomic { .. } = c.mem {
            return self.vatomic(c, &mut routed, addrs, exec, vdata, vdst, glc, acc);
        }
        self.vmem(c, &mut routed, addrs, exec, data_reg, glc, acc)
    }

    /// `scratch_load_*`, `scratch_store_*`: the private offset is SADDR (an SGPR) or VADDR
    /// (a VGPR, when SADDR is `off`) plus the signed 13-bit instruction offset.
    pub(super) fn scratch<E: WaveEnv + ?Sized>(&mut self, c: &Cached, env: &mut E) -> R<()> {
        let [w0, w1] = c.inst.words;
        let vaddr = (w1 & 0xff) as usize;
        let vdata = ((w1 >> 8) & 0xff) as usize;
        let saddr = (w1 >> 16) & 0x7f;
        let vdst = (w1 >> 24) as usize;
        let glc = (w0 >> 16) & 1 != 0;
        let offset = ((w0 & 0x1fff) << 19) as i32 >> 19;
        if let MemKind::Atomic { .. } = c.mem {
            return Err(illegal(self.pc, c)); // gfx9 has no scratch atomics
        }
        let mut addrs = [0u64; WAVE_SIZE];
        if saddr != 0x7f {
            let base = self.sread(scalar_operand_at(saddr), SrcType::Int, false) as u32;
            addrs = [u64::from(base.wrapping_add_signed(offset)); WAVE_SIZE];
        } else {
            let lo = self.v(vaddr)?;
            for l in 0..WAVE_SIZE {
                addrs[l] = u64::from(lo[l].wrapping_add_signed(offset));
            }
        }
        let data_reg = match c.mem {
            MemKind::Load { .. } => vdst,
            _ => vdata,
        };
        let acc = self.target == crate::Target::Gfx90a && (w1 >> 23) & 1 != 0;
        let exec = self.exec();
        self.routed(
            c,
            env,
            Route::Scratch,
            &addrs,
            exec,
            (data_reg, vdata, vdst),
            glc,
            acc,
        )
    }
}
