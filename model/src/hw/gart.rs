//! The GART aperture: kernel-owned GPU memory reachable by address from the firmware and the
//! engines — MQDs, the HIQ ring and its pointers, runlist IBs, the preemption fence.
//!
//! The driver sub-allocates it like `kfd_gtt_sa_allocate` (fixed chunks, first fit) and the
//! firmware reads what it was given only by GART address, so driver and firmware meet through
//! bytes as they do on the real GPU.

use crate::errno::{Errno, KResult};
use crate::hw::mem::DeviceMemory;
use std::sync::{Arc, Mutex};

/// GPU address where the modelled GART aperture starts.
pub const GART_BASE: u64 = 0x0000_ff00_0000_0000;
/// Allocation granule (`kfd_gtt_sa` chunk size).
pub const GART_CHUNK: u64 = 512;

/// A GART allocation; freed by [`Gart::free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GartAlloc {
    /// GPU (GART) address of the first byte.
    pub gpu_addr: u64,
    /// Bytes (a multiple of [`GART_CHUNK`]).
    pub size: u64,
}

/// The aperture and its allocator.
#[derive(Debug)]
pub struct Gart {
    mem: Arc<DeviceMemory>,
    used: Mutex<Vec<bool>>,
}

impl Gart {
    /// An aperture of `size` bytes.
    pub fn new(size: u64) -> KResult<Gart> {
        let mem = Arc::new(DeviceMemory::new("gart", size)?);
        let chunks = (mem.len() as u64 / GART_CHUNK) as usize;
        Ok(Gart {
            mem,
            used: Mutex::new(vec![false; chunks]),
        })
    }

    /// The backing memory.
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.mem
    }

    /// Allocates `size` bytes aligned to `align` (a power of two ≥ one chunk), zeroed.
    pub fn alloc(&self, size: u64, align: u64) -> KResult<GartAlloc> {
        let chunks = size.div_ceil(GART_CHUNK).max(1) as usize;
        let step = (align.max(GART_CHUNK) / GART_CHUNK) as usize;
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let total = used.len();
        let start = (0..total)
            .step_by(step)
            .find(|&s| s + chunks <= total && used[s..s + chunks].iter().all(|u| !u))
            .ok_or(Errno::ENOMEM)?;
        used[start..start + chunks]
            .iter_mut()
            .for_each(|u| *u = true);
        let offset = start as u64 * GART_CHUNK;
        let size = chunks as u64 * GART_CHUNK;
        self.mem
            .fill(offset as usize, size as usize, 0)
            .ok_or(Errno::ENOMEM)?;
        Ok(GartAlloc {
            gpu_addr: GART_BASE + offset,
            size,
        })
    }

    /// Returns an allocation.
    pub fn free(&self, a: GartAlloc) {
        let Some(off) = a.gpu_addr.checked_sub(GART_BASE) else {
            return;
        };
        let start = (off / GART_CHUNK) as usize;
        let chunks = (a.size / GART_CHUNK) as usize;
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(range) = used.get_mut(start..start + chunks) {
            range.iter_mut().for_each(|u| *u = false);
        }
    }

    /// Chunks in use (for leak checks).
    pub fn chunks_in_use(&self) -> usize {
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|u| **u)
            .count()
    }

    fn offset(&self, gpu_addr: u64, len: usize) -> Option<usize> {
        let off = usize::try_from(gpu_addr.checked_sub(GART_BASE)?).ok()?;
        (off.checked_add(len)? <= self.mem.len()).then_some(off)
    }

    /// Reads `buf.len()` bytes at a GART address.
    pub fn read(&self, gpu_addr: u64, buf: &mut [u8]) -> Option<()> {
        self.mem.read(self.offset(gpu_addr, buf.len())?, buf)
    }

    /// Writes bytes at a GART address.
    pub fn write(&self, gpu_addr: u64, data: &[u8]) -> Option<()> {
        self.mem.write(self.offset(gpu_addr, data.len())?, data)
    }

    /// Atomic 64-bit load at a GART address.
    pub fn load_u64(&self, gpu_addr: u64) -> Option<u64> {
        self.mem.load_u64(self.offset(gpu_addr, 8)?)
    }

    /// Atomic 64-bit store at a GART address.
    pub fn store_u64(&self, gpu_addr: u64, value: u64) -> Option<()> {
        self.mem.store_u64(self.offset(gpu_addr, 8)?, value)
    }

    /// Reads `count` little-endian dwords at a GART address.
    pub fn read_dwords(&self, gpu_addr: u64, count: usize) -> Option<Vec<u32>> {
        let mut bytes = vec![0u8; count.checked_mul(4)?];
        self.read(gpu_addr, &mut bytes)?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }

    /// Writes dwords at a GART address.
    pub fn write_dwords(&self, gpu_addr: u64, dwords: &[u32]) -> Option<()> {
        let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.write(gpu_addr, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_aligned_chunks() {
        let g = Gart::new(64 * 1024).unwrap();
        let a = g.alloc(100, 512).unwrap();
        assert_eq!(
            a,
            GartAlloc {
                gpu_addr: GART_BASE,
                size: 512
            }
        );
        let b = g.alloc(2048, 4096).unwrap();
        assert_eq!(b.gpu_addr, GART_BASE + 4096);
        let c = g.alloc(512, 512).unwrap();
        assert_eq!(c.gpu_addr, GART_BASE + 512);
        g.free(a);
        assert_eq!(g.alloc(1, 1).unwrap().gpu_addr, GART_BASE);
        assert!(g.alloc(1 << 20, 512).is_err());
        g.write_dwords(b.gpu_addr, &[1, 2, 3]).unwrap();
        assert_eq!(g.read_dwords(b.gpu_addr, 3).unwrap(), vec![1, 2, 3]);
        assert!(g.read_dwords(GART_BASE + 64 * 1024 - 4, 2).is_none());
        assert!(g.load_u64(0x10).is_none());
    }
}
