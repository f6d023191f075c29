//! The world outside the wave: memory by address (bulk per instruction), atomics, LDS,
//! messages and clocks. The model implements [`WaveEnv`] over its GPU VM; tests use
//! [`HostEnv`].

use std::collections::HashMap;

use super::fault::{Access, MemFault};
use super::wave::{Lanes, WAVE_SIZE};

/// Read-modify-write operations of the `*_atomic_*` instructions (global, flat, buffer, DS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `swap`: new = src.
    Swap,
    /// `cmpswap`: new = (old == cmp) ? src : old.
    CmpSwap,
    /// `add`.
    Add,
    /// `sub`.
    Sub,
    /// `smin` (signed).
    SMin,
    /// `umin`.
    UMin,
    /// `smax` (signed).
    SMax,
    /// `umax`.
    UMax,
    /// `and`.
    And,
    /// `or`.
    Or,
    /// `xor`.
    Xor,
    /// `inc`: new = (old >= src) ? 0 : old + 1.
    Inc,
    /// `dec`: new = (old == 0 || old > src) ? src : old - 1.
    Dec,
    /// `add_f32` / `add_f64` (float add, round to nearest even, denormals kept).
    FAdd,
    /// `min_f64` (gfx90a).
    FMin,
    /// `max_f64` (gfx90a).
    FMax,
    /// `pk_add_f16` (gfx908/gfx90a): two f16 adds, one per half, each rounded to nearest
    /// even with denormals kept.
    PkAddF16,
}

impl AtomicOp {
    /// The value written back for an old memory value, as the ISA defines each op; `wide`
    /// selects 64-bit operation (else the low 32 bits are used and the result is
    /// zero-extended).
    pub fn apply(self, old: u64, src: u64, cmp: u64, wide: bool) -> u64 {
        if wide {
            self.apply64(old, src, cmp)
        } else {
            u64::from(self.apply32(old as u32, src as u32, cmp as u32))
        }
    }

    fn apply32(self, old: u32, src: u32, cmp: u32) -> u32 {
        match self {
            AtomicOp::Swap => src,
            AtomicOp::CmpSwap => {
                if old == cmp {
                    src
                } else {
                    old
                }
            }
            AtomicOp::Add => old.wrapping_add(src),
            AtomicOp::Sub => old.wrapping_sub(src),
            AtomicOp::SMin => (old as i32).min(src as i32) as u32,
            AtomicOp::UMin => old.min(src),
            AtomicOp::SMax => (old as i32).max(src as i32) as u32,
            AtomicOp::UMax => old.max(src),
            AtomicOp::And => old & src,
            AtomicOp::Or => old | src,
            AtomicOp::Xor => old ^ src,
            AtomicOp::Inc => {
                if old >= src {
                    0
                } else {
                    old + 1
                }
            }
            AtomicOp::Dec => {
                if old == 0 || old > src {
                    src
                } else {
                    old - 1
                }
            }
            AtomicOp::FAdd => (f32::from_bits(old) + f32::from_bits(src)).to_bits(),
            AtomicOp::FMin => f32::from_bits(old).min(f32::from_bits(src)).to_bits(),
            AtomicOp::FMax => f32::from_bits(old).max(f32::from_bits(src)).to_bits(),
            AtomicOp::PkAddF16 => pk_add_f16(old, src),
        }
    }

    fn apply64(self, old: u64, src: u64, cmp: u64) -> u64 {
        match self {
            AtomicOp::Swap => src,
            AtomicOp::CmpSwap => {
                if old == cmp {
                    src
                } else {
                    old
                }
            }
            AtomicOp::Add => old.wrapping_add(src),
            AtomicOp::Sub => old.wrapping_sub(src),
            AtomicOp::SMin => (old as i64).min(src as i64) as u64,
            AtomicOp::UMin => old.min(src),
            AtomicOp::SMax => (old as i64).max(src as i64) as u64,
            AtomicOp::UMax => old.max(src),
            AtomicOp::And => old & src,
            AtomicOp::Or => old | src,
            AtomicOp::Xor => old ^ src,
            AtomicOp::Inc => {
                if old >= src {
                    0
                } else {
                    old + 1
                }
            }
            AtomicOp::Dec => {
                if old == 0 || old > src {
                    src
                } else {
                    old - 1
                }
            }
            AtomicOp::FAdd => (f64::from_bits(old) + f64::from_bits(src)).to_bits(),
            AtomicOp::FMin => f64::from_bits(old).min(f64::from_bits(src)).to_bits(),
            AtomicOp::FMax => f64::from_bits(old).max(f64::from_bits(src)).to_bits(),
            // a 32-bit operation: the high dword is kept
            AtomicOp::PkAddF16 => {
                (old & !0xffff_ffff) | u64::from(pk_add_f16(old as u32, src as u32))
            }
        }
    }
}

/// Both f16 halves added; the f64 sum of two f16 values is exact, so one rounding to f16.
fn pk_add_f16(old: u32, src: u32) -> u32 {
    use super::float::{f16_to_f32, f64_to_f16};
    use super::wave::Round;
    let half = |a: u32, b: u32| {
        let s = f64::from(f16_to_f32(a as u16)) + f64::from(f16_to_f32(b as u16));
        u32::from(f64_to_f16(s, Round::NearestEven))
    };
    half(old & 0xffff, src & 0xffff) | (half(old >> 16, src >> 16) << 16)
}

/// One atomic instruction's work: per lane an address, a source and a compare value.
#[derive(Clone, Debug)]
pub struct AtomicRequest<'a> {
    /// The operation.
    pub op: AtomicOp,
    /// 64-bit (`_x2`) operation.
    pub wide: bool,
    /// Lanes taking part.
    pub exec: u64,
    /// Byte address per lane (8-byte aligned when `wide`, else 4-byte).
    pub addresses: &'a [u64; WAVE_SIZE],
    /// Source data per lane.
    pub src: &'a [u64; WAVE_SIZE],
    /// Compare data per lane (`cmpswap` only).
    pub cmp: &'a [u64; WAVE_SIZE],
}

/// The outside world of a wave. Memory calls are per instruction: the 64 lane addresses and
/// the EXEC mask at once, so an implementation can check translations per page rather than
/// per lane. Lanes whose EXEC bit is clear must not be touched (and may hold any address).
pub trait WaveEnv {
    /// Loads `bytes` (1, 2, 4, 8, 12 or 16) per enabled lane. Dword `d` of lane `l` goes to
    /// `out[d][l]`; loads narrower than a dword are zero-extended (the interpreter
    /// sign-extends where the instruction asks).
    fn load(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        out: &mut [Lanes],
    ) -> Result<(), MemFault>;

    /// Stores `bytes` (1, 2, 4, 8, 12 or 16) per enabled lane from `data[d][l]` (the low bytes
    /// of dword 0 for sub-dword stores).
    fn store(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        data: &[Lanes],
    ) -> Result<(), MemFault>;

    /// A whole wave's dword load from one run of memory: lane `l` reads the dword at
    /// `address + 4 * l` into `out[l]`, as [`WaveEnv::load`] would with those addresses and
    /// every lane enabled. `false` when the implementation has no quick way to do it (say, the
    /// run crosses mappings or would fault): then nothing may be written to `out` — it is the
    /// destination register itself — and the interpreter calls [`WaveEnv::load`]. Never
    /// faults.
    fn load_run(&mut self, address: u64, out: &mut Lanes) -> bool {
        let _ = (address, out);
        false
    }

    /// The store of [`WaveEnv::load_run`]: lane `l`'s dword `data[l]` to `address + 4 * l`;
    /// `false` (nothing written) sends the interpreter to [`WaveEnv::store`].
    fn store_run(&mut self, address: u64, data: &Lanes) -> bool {
        let _ = (address, data);
        false
    }

    /// Scalar load of `out.len()` dwords from `address` (`s_load_*`, `s_buffer_load_*`).
    fn load_scalar(&mut self, address: u64, out: &mut [u32]) -> Result<(), MemFault>;

    /// Scalar store of `data` (1, 2 or 4 dwords) to `address` (`s_store_*`,
    /// `s_buffer_store_*`). A fault leaves memory untouched.
    fn store_scalar(&mut self, address: u64, data: &[u32]) -> Result<(), MemFault>;

    /// An atomic per enabled lane, lanes in ascending order; writes the pre-op memory value
    /// of each lane to `old[lane]`.
    fn atomic(
        &mut self,
        request: &AtomicRequest<'_>,
        old: &mut [u64; WAVE_SIZE],
    ) -> Result<(), MemFault>;

    /// The workgroup's LDS as bytes (its allocated size).
    fn lds(&mut self) -> &mut [u8];

    /// Whether a DS access outside the workgroup's LDS allocation stops the wave with
    /// [`WaveFault::LdsOutOfRange`](super::WaveFault::LdsOutOfRange) (a strict model, for
    /// finding the kernel bug) instead of doing what the hardware does: the ISA guides'
    /// out-of-range rules drop such a write and return 0 for such a read. Default: the
    /// hardware's way.
    fn lds_strict(&self) -> bool {
        false
    }

    /// Told, in the hardware's way, of a DS instruction that had lanes outside the LDS
    /// allocation (`offset`: the first such lane's byte address), so the outside world can
    /// say so once.
    fn lds_out_of_range(&mut self, offset: u32) {
        let _ = offset;
    }

    /// `s_sendmsg`/`s_sendmsghalt`: the message id (SIMM16) and M0.
    fn send_message(&mut self, simm16: u16, m0: u32);

    /// `s_memtime`: the shader clock (64-bit, core clock).
    fn shader_clock(&mut self) -> u64;

    /// `s_memrealtime`: the constant 100 MHz "REFCLK" counter.
    fn real_time(&mut self) -> u64;
}

const PAGE: u64 = 4096;

/// A sparse, byte-addressed host memory with explicit mappings, plus LDS, a message log and
/// counting clocks: the reference world for tests and benches. Unmapped bytes fault.
#[derive(Clone, Debug, Default)]
pub struct HostEnv {
    pages: HashMap<u64, Box<[u8; PAGE as usize]>>,
    /// The workgroup's LDS.
    pub lds: Vec<u8>,
    /// Every `s_sendmsg` seen: (SIMM16, M0).
    pub messages: Vec<(u16, u32)>,
    /// Shader clock; advances by one per `s_memtime`.
    pub clock: u64,
    /// [`WaveEnv::lds_strict`].
    pub lds_strict: bool,
    /// The offsets [`WaveEnv::lds_out_of_range`] was told of.
    pub lds_out_of_range: Vec<u32>,
}

impl HostEnv {
    /// An empty world with `lds_bytes` of LDS.
    pub fn new(lds_bytes: usize) -> Self {
        HostEnv {
            lds: vec![0; lds_bytes],
            ..Default::default()
        }
    }

    /// Maps (zero-filled) every page overlapping `[address, address + len)`.
    pub fn map(&mut self, address: u64, len: u64) {
        if len == 0 {
            return;
        }
        let first = address / PAGE;
        let last = address.saturating_add(len - 1) / PAGE;
        for page in first..=last {
            self.pages
                .entry(page)
                .or_insert_with(|| Box::new([0; PAGE as usize]));
        }
    }

    /// Maps and writes `bytes` at `address`.
    pub fn write(&mut self, address: u64, bytes: &[u8]) {
        self.map(address, bytes.len() as u64);
        for (i, b) in bytes.iter().enumerate() {
            let a = address + i as u64;
            if let Some(p) = self.pages.get_mut(&(a / PAGE)) {
                p[(a % PAGE) as usize] = *b;
            }
        }
    }

    /// Reads `len` bytes at `address`, or the first unmapped address.
    pub fn read(&self, address: u64, len: usize) -> Result<Vec<u8>, u64> {
        let mut v = Vec::with_capacity(len);
        for i in 0..len as u64 {
            v.push(
                self.byte(address.wrapping_add(i))
                    .ok_or(address.wrapping_add(i))?,
            );
        }
        Ok(v)
    }

    fn byte(&self, a: u64) -> Option<u8> {
        self.pages.get(&(a / PAGE)).map(|p| p[(a % PAGE) as usize])
    }

    fn set_byte(&mut self, a: u64, b: u8) -> bool {
        match self.pages.get_mut(&(a / PAGE)) {
            Some(p) => {
                p[(a % PAGE) as usize] = b;
                true
            }
            None => false,
        }
    }

    /// Little-endian read of up to 8 bytes.
    fn read_le(&self, a: u64, bytes: u32, access: Access) -> Result<u64, MemFault> {
        let off = (a % PAGE) as usize;
        if off + bytes as usize <= PAGE as usize {
            // fast path: one page, one lookup
            let page = self
                .pages
                .get(&(a / PAGE))
                .ok_or(MemFault { address: a, access })?;
            let mut buf = [0u8; 8];
            buf[..bytes as usize].copy_from_slice(&page[off..off + bytes as usize]);
            return Ok(u64::from_le_bytes(buf));
        }
        let mut v = 0u64;
        for i in 0..u64::from(bytes) {
            let addr = a.wrapping_add(i);
            let b = self.byte(addr).ok_or(MemFault {
                address: addr,
                access,
            })?;
            v |= u64::from(b) << (8 * i);
        }
        Ok(v)
    }

    fn write_le(&mut self, a: u64, bytes: u32, value: u64, access: Access) -> Result<(), MemFault> {
        let off = (a % PAGE) as usize;
        if off + bytes as usize <= PAGE as usize {
            let page = self
                .pages
                .get_mut(&(a / PAGE))
                .ok_or(MemFault { address: a, access })?;
            page[off..off + bytes as usize].copy_from_slice(&value.to_le_bytes()[..bytes as usize]);
            return Ok(());
        }
        // Check first so a faulting access writes nothing.
        for i in 0..u64::from(bytes) {
            let addr = a.wrapping_add(i);
            if self.byte(addr).is_none() {
                return Err(MemFault {
                    address: addr,
                    access,
                });
            }
        }
        for i in 0..u64::from(bytes) {
            self.set_byte(a.wrapping_add(i), (value >> (8 * i)) as u8);
        }
        Ok(())
    }
}

impl WaveEnv for HostEnv {
    fn load(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        out: &mut [Lanes],
    ) -> Result<(), MemFault> {
        // the page of the previous lane: neighbouring lanes mostly share one
        let mut last: Option<(u64, &[u8; PAGE as usize])> = None;
        let mut mask = exec;
        while mask != 0 {
            let lane = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let a = addresses[lane];
            let off = (a % PAGE) as usize;
            if off + bytes as usize <= PAGE as usize {
                let number = a / PAGE;
                let page = match last {
                    Some((n, p)) if n == number => p,
                    _ => {
                        let p = self.pages.get(&number).ok_or(MemFault {
                            address: a,
                            access: Access::Read,
                        })?;
                        last = Some((number, p));
                        p
                    }
                };
                for (dword, reg) in out.iter_mut().enumerate().take(bytes.div_ceil(4) as usize) {
                    let start = off + 4 * dword;
                    let n = (bytes as usize - 4 * dword).min(4);
                    let mut buf = [0u8; 4];
                    buf[..n].copy_from_slice(&page[start..start + n]);
                    reg[lane] = u32::from_le_bytes(buf);
                }
                continue;
            }
            let mut done = 0u32;
            let mut dword = 0usize;
            while done < bytes {
                let chunk = (bytes - done).min(4);
                let v = self.read_le(a.wrapping_add(u64::from(done)), chunk, Access::Read)?;
                if let Some(reg) = out.get_mut(dword) {
                    reg[lane] = v as u32;
                }
                done += chunk;
                dword += 1;
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
        // the page of the previous lane, as in `load`
        let mut last: Option<(u64, &mut Box<[u8; PAGE as usize]>)> = None;
        let mut mask = exec;
        while mask != 0 {
            let lane = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let a = addresses[lane];
            let off = (a % PAGE) as usize;
            if off + bytes as usize <= PAGE as usize {
                let number = a / PAGE;
                if !matches!(&last, Some((n, _)) if *n == number) {
                    let p = self.pages.get_mut(&number).ok_or(MemFault {
                        address: a,
                        access: Access::Write,
                    })?;
                    last = Some((number, p));
                }
                if let Some((_, page)) = last.as_mut() {
                    for dword in 0..bytes.div_ceil(4) as usize {
                        let start = off + 4 * dword;
                        let n = (bytes as usize - 4 * dword).min(4);
                        let v = data.get(dword).map_or(0, |r| r[lane]);
                        page[start..start + n].copy_from_slice(&v.to_le_bytes()[..n]);
                    }
                }
                continue;
            }
            last = None;
            let mut done = 0u32;
            let mut dword = 0usize;
            while done < bytes {
                let chunk = (bytes - done).min(4);
                let v = data.get(dword).map_or(0, |r| r[lane]);
                self.write_le(
                    a.wrapping_add(u64::from(done)),
                    chunk,
                    u64::from(v),
                    Access::Write,
                )?;
                done += chunk;
                dword += 1;
            }
        }
        Ok(())
    }

    fn load_run(&mut self, address: u64, out: &mut Lanes) -> bool {
        // the reference world's quick path: the run read at once when it is all mapped
        if address.checked_add(4 * WAVE_SIZE as u64).is_none() {
            return false;
        }
        let Ok(bytes) = self.read(address, 4 * WAVE_SIZE) else {
            return false;
        };
        for (d, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *d = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        true
    }

    fn store_run(&mut self, address: u64, data: &Lanes) -> bool {
        if address.checked_add(4 * WAVE_SIZE as u64).is_none()
            || self.read(address, 4 * WAVE_SIZE).is_err()
        {
            return false;
        }
        let bytes: Vec<u8> = data.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.write(address, &bytes);
        true
    }

    fn load_scalar(&mut self, address: u64, out: &mut [u32]) -> Result<(), MemFault> {
        for (i, d) in out.iter_mut().enumerate() {
            *d = self.read_le(address.wrapping_add(4 * i as u64), 4, Access::Read)? as u32;
        }
        Ok(())
    }

    fn store_scalar(&mut self, address: u64, data: &[u32]) -> Result<(), MemFault> {
        // every dword's page first, so a fault writes nothing
        for i in 0..data.len() as u64 {
            let a = address.wrapping_add(4 * i);
            self.read_le(a, 4, Access::Write)?;
        }
        for (i, d) in data.iter().enumerate() {
            let a = address.wrapping_add(4 * i as u64);
            self.write_le(a, 4, u64::from(*d), Access::Write)?;
        }
        Ok(())
    }

    fn atomic(
        &mut self,
        request: &AtomicRequest<'_>,
        old: &mut [u64; WAVE_SIZE],
    ) -> Result<(), MemFault> {
        let bytes = if request.wide { 8 } else { 4 };
        #[allow(clippy::needless_range_loop)] // four per-lane arrays indexed together
        for lane in 0..WAVE_SIZE {
            if (request.exec >> lane) & 1 == 0 {
                continue;
            }
            let a = request.addresses[lane];
            let before = self.read_le(a, bytes, Access::Atomic)?;
            let after =
                request
                    .op
                    .apply(before, request.src[lane], request.cmp[lane], request.wide);
            self.write_le(a, bytes, after, Access::Atomic)?;
            old[lane] = before;
        }
        Ok(())
    }

    fn lds(&mut self) -> &mut [u8] {
        &mut self.lds
    }

    fn lds_strict(&self) -> bool {
        self.lds_strict
    }

    fn lds_out_of_range(&mut self, offset: u32) {
        self.lds_out_of_range.push(offset);
    }

    fn send_message(&mut self, simm16: u16, m0: u32) {
        self.messages.push((simm16, m0));
    }

    fn shader_clock(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn real_time(&mut self) -> u64 {
        self.clock
    }
}
