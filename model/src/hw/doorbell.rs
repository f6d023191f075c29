//! The doorbell BAR: each process gets an 8 KiB slice of 1024 64-bit doorbells (SOC15), which
//! user space maps and writes with plain stores; the engines read them.
//!
//! Doorbell ids inside a slice follow the kernel's rules (facts §7.4): CP queues take the first
//! free id of a 1024-bit bitmap whose SDMA/IH range (and its +512 mirror) is pre-reserved; SDMA
//! queues use a static id derived from engine and queue.

use crate::errno::{Errno, KResult};
use crate::hw::mem::DeviceMemory;
use kfd_sys::{
    KFD_DOORBELLS_PER_PROCESS, KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15, KFD_DOORBELL_SIZE_SOC15,
};
use std::sync::{Arc, Mutex};

/// Process slices in the modelled BAR.
pub const MAX_PROCESS_SLICES: u32 = 256;
/// Dword index in the BAR where KFD's first process slice starts (amdgpu keeps the doorbells
/// below for its own rings).
pub const KFD_DOORBELL_BASE_DW: u32 = 0x1000;
/// Offset between a doorbell id and its mirror (`KFD_QUEUE_DOORBELL_MIRROR_OFFSET`).
pub const DOORBELL_MIRROR_OFFSET: u32 = 512;

/// Which doorbell ids a part reserves for SDMA and IH, and where each SDMA engine's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoorbellLayout {
    /// First id not usable by CP queues.
    pub first_non_cp: u32,
    /// Last id not usable by CP queues.
    pub last_non_cp: u32,
    /// Id of SDMA engine 0's first queue.
    pub sdma_base: u32,
    /// Distance between the first ids of consecutive SDMA engines.
    pub sdma_stride: u32,
}

impl DoorbellLayout {
    /// Vega 10 ("AMDGPU_DOORBELL64"): SDMA 0xF0, 0xF2; CP ids skip 0xF0–0xFF.
    pub const VEGA10: DoorbellLayout = DoorbellLayout {
        first_non_cp: 0xF0,
        last_non_cp: 0xFF,
        sdma_base: 0xF0,
        sdma_stride: 2,
    };
    /// Vega 20 and later ("VEGA20" layout): SDMA every 0xA from 0x100; CP ids skip 0x100–0x18F.
    pub const VEGA20: DoorbellLayout = DoorbellLayout {
        first_non_cp: 0x100,
        last_non_cp: 0x18F,
        sdma_base: 0x100,
        sdma_stride: 0xA,
    };

    /// Whether `id` is reserved for non-CP use (directly or as a mirror).
    pub fn is_reserved(&self, id: u32) -> bool {
        let base = id % DOORBELL_MIRROR_OFFSET;
        (self.first_non_cp..=self.last_non_cp).contains(&base)
    }

    /// The static doorbell id of SDMA `queue` on `engine`.
    pub fn sdma_id(&self, engine: u32, queue: u32) -> u32 {
        self.sdma_base
            + engine * self.sdma_stride
            + (queue & 1) * DOORBELL_MIRROR_OFFSET
            + (queue >> 1)
    }
}

/// Per-process CP doorbell ids in use (`qpd->doorbell_bitmap`). SDMA ids are static and are
/// the reserved ones, never taken from here.
#[derive(Debug, Clone)]
pub struct DoorbellIds {
    used: Vec<bool>,
}

impl DoorbellIds {
    /// A bitmap with the layout's reserved ids taken.
    pub fn new(layout: &DoorbellLayout) -> Self {
        let used = (0..KFD_DOORBELLS_PER_PROCESS as u32)
            .map(|i| layout.is_reserved(i))
            .collect();
        DoorbellIds { used }
    }

    /// The first free id for a CP queue, or `EBUSY`.
    pub fn alloc_cp(&mut self) -> KResult<u32> {
        let id = self.used.iter().position(|u| !u).ok_or(Errno::EBUSY)?;
        self.used[id] = true;
        Ok(id as u32)
    }

    /// Releases an id.
    pub fn release(&mut self, id: u32) {
        if let Some(slot) = self.used.get_mut(id as usize) {
            *slot = false;
        }
    }
}

/// The BAR of one GPU.
#[derive(Debug)]
pub struct DoorbellBar {
    mem: Arc<DeviceMemory>,
    slices: Mutex<Vec<bool>>,
    /// The part's id layout.
    pub layout: DoorbellLayout,
}

impl DoorbellBar {
    /// A BAR with room for `MAX_PROCESS_SLICES` processes.
    pub fn new(layout: DoorbellLayout) -> KResult<DoorbellBar> {
        let size = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15 * u64::from(MAX_PROCESS_SLICES);
        Ok(DoorbellBar {
            mem: Arc::new(DeviceMemory::new("doorbell BAR", size)?),
            slices: Mutex::new(vec![false; MAX_PROCESS_SLICES as usize]),
            layout,
        })
    }

    /// The BAR memory.
    pub fn memory(&self) -> &Arc<DeviceMemory> {
        &self.mem
    }

    /// Gives a process its slice (zeroed).
    pub fn alloc_slice(&self) -> KResult<u32> {
        let mut s = self.slices.lock().unwrap_or_else(|e| e.into_inner());
        let i = s.iter().position(|u| !u).ok_or(Errno::ENOMEM)?;
        s[i] = true;
        let off = Self::slice_offset(i as u32);
        self.mem
            .fill(off, KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15 as usize, 0)
            .ok_or(Errno::ENOMEM)?;
        Ok(i as u32)
    }

    /// Returns a slice.
    pub fn free_slice(&self, slice: u32) {
        let mut s = self.slices.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(u) = s.get_mut(slice as usize) {
            *u = false;
        }
    }

    /// Slices in use.
    pub fn slices_in_use(&self) -> usize {
        self.slices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|u| **u)
            .count()
    }

    /// Byte offset of a slice in the BAR.
    pub fn slice_offset(slice: u32) -> usize {
        slice as usize * KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15 as usize
    }

    /// The doorbell's dword index in the BAR, what the MQD and MAP_QUEUES carry.
    pub fn bar_dword_index(slice: u32, id: u32) -> u32 {
        KFD_DOORBELL_BASE_DW + slice * 2048 + id * 2
    }

    /// Inverse of [`Self::bar_dword_index`]: (slice, id).
    pub fn slice_and_id(bar_dword_index: u32) -> Option<(u32, u32)> {
        let rel = bar_dword_index.checked_sub(KFD_DOORBELL_BASE_DW)?;
        (rel % 2 == 0).then_some((rel / 2048, (rel % 2048) / 2))
    }

    /// The current 64-bit value of a doorbell.
    pub fn read(&self, slice: u32, id: u32) -> u64 {
        let off = Self::slice_offset(slice) + (id as u64 * KFD_DOORBELL_SIZE_SOC15) as usize;
        self.mem.load_u64(off).unwrap_or(0)
    }

    /// The current value of the doorbell at BAR dword index `index` (what MQDs and MAP_QUEUES
    /// carry); 0 for an index outside KFD's slices.
    pub fn read_bar_index(&self, index: u32) -> u64 {
        let Some(rel) = index.checked_sub(KFD_DOORBELL_BASE_DW) else {
            return 0;
        };
        self.mem.load_u64(rel as usize * 4).unwrap_or(0)
    }

    /// Writes a doorbell (what a CPU store through the user mapping does).
    pub fn write(&self, slice: u32, id: u32, value: u64) {
        let off = Self::slice_offset(slice) + (id as u64 * KFD_DOORBELL_SIZE_SOC15) as usize;
        let _ = self.mem.store_u64(off, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cp_ids_skip_the_reserved_range_and_its_mirror() {
        let l = DoorbellLayout::VEGA10;
        let mut ids = DoorbellIds::new(&l);
        let got: Vec<u32> = (0..0xF2).map(|_| ids.alloc_cp().unwrap()).collect();
        assert_eq!(got[0xEF], 0xEF);
        assert_eq!(got[0xF0], 0x100, "0xF0–0xFF are SDMA/IH doorbells");
        assert!(l.is_reserved(0xF0 + 512) && !l.is_reserved(0x100 + 512));
        // 1024 ids minus 2×16 reserved.
        let mut rest = 0xF2;
        while ids.alloc_cp().is_ok() {
            rest += 1;
        }
        assert_eq!(rest, 1024 - 32);
        assert_eq!(ids.alloc_cp(), Err(Errno::EBUSY));
    }

    #[test]
    fn sdma_ids_and_bar_indices() {
        assert_eq!(DoorbellLayout::VEGA10.sdma_id(0, 0), 0xF0);
        assert_eq!(DoorbellLayout::VEGA10.sdma_id(1, 1), 0xF2 + 512);
        assert_eq!(DoorbellLayout::VEGA20.sdma_id(1, 3), 0x10A + 512 + 1);
        // The golden MQD example: doorbell dword index 0x1006 = slice 0, id 3.
        assert_eq!(DoorbellBar::bar_dword_index(0, 3), 0x1006);
        assert_eq!(DoorbellBar::slice_and_id(0x1006 + 2048), Some((1, 3)));
        let bar = DoorbellBar::new(DoorbellLayout::VEGA20).unwrap();
        let s = bar.alloc_slice().unwrap();
        bar.write(s, 5, 0x40);
        assert_eq!(bar.read(s, 5), 0x40);
        assert_eq!(bar.slices_in_use(), 1);
        bar.free_slice(s);
        assert_eq!(bar.slices_in_use(), 0);
    }
}
