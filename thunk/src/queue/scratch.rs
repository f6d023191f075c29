//! Scratch (private segment) backing memory of an AQL queue.

use super::{Aql, Queue};
use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use pm4::aql::amd_queue;

/// Lanes of a wave64.
const WAVE64_LANES: u64 = 64;

impl Queue<Aql> {
    /// Makes sure dispatches of this queue get at least `lane_bytes` of scratch per lane for
    /// `waves` waves (one workgroup's): allocates a larger backing buffer when needed and
    /// publishes it in the queue's `amd_queue_t` scratch fields — the swizzled buffer
    /// resource ROCr uses (SWIZZLE_ENABLE, 4-byte elements, index stride 64, ADD_TID_ENABLE),
    /// base, size and bytes per lane.
    ///
    /// The `amd_queue_t` is the start of the queue's pointer page. [`AqlQueue::dispatch`]
    /// calls this for every kernel that has a private segment, so the queue never runs out of
    /// scratch (the page's `queue_inactive_signal` is 0: no signal to report it on). Not done
    /// yet: the `compute_tmpring_size` word, which a GPU's packet processor also reads and the
    /// model does not.
    ///
    /// [`AqlQueue::dispatch`]: super::AqlQueue::dispatch
    pub fn reserve_scratch(&mut self, lane_bytes: u32, waves: u32) -> Result<()> {
        let lane_bytes = lane_bytes.next_multiple_of(16);
        let waves = waves.max(1);
        if lane_bytes <= self.kind.scratch_lane_bytes && waves <= self.kind.scratch_waves {
            return Ok(());
        }
        let lane_bytes = lane_bytes.max(self.kind.scratch_lane_bytes);
        let waves = waves.max(self.kind.scratch_waves);
        let size = u64::from(lane_bytes) * WAVE64_LANES * u64::from(waves);
        let num_records = u32::try_from(size).map_err(|_| {
            Error::invalid(
                "scratch",
                format!("{lane_bytes} bytes per lane for {waves} waves is more than 4 GiB"),
            )
        })?;
        let memory = self.raw.gpu.alloc(MemoryKind::Gtt, size)?;
        let base = memory.gpu_va();
        let queue = self
            .read_pointer_address()
            .wrapping_sub(amd_queue::READ_DISPATCH_ID);
        let page = self.raw.pointers.gpu_va();
        let offset = |field: u64| queue.wrapping_add(field).wrapping_sub(page);
        let resource = [
            base as u32,
            ((base >> 32) as u32 & 0xFFFF) | 1 << 31,
            num_records,
            1 << 19 | 3 << 21 | 1 << 23,
        ];
        for (i, word) in resource.iter().enumerate() {
            self.raw.pointers.store_u32(
                offset(amd_queue::SCRATCH_RESOURCE_DESCRIPTOR) + 4 * i as u64,
                *word,
            )?;
        }
        self.raw
            .pointers
            .store_u64(offset(amd_queue::SCRATCH_BACKING_MEMORY_LOCATION), base)?;
        self.raw
            .pointers
            .store_u64(offset(amd_queue::SCRATCH_BACKING_MEMORY_BYTE_SIZE), size)?;
        self.raw
            .pointers
            .store_u32(offset(amd_queue::SCRATCH_WAVE64_LANE_BYTE_SIZE), lane_bytes)?;
        log::debug!(target: "thunk::queue", "queue {}: scratch {lane_bytes} bytes per lane for {waves} waves at {base:#x}", self.raw.queue_id);
        self.kind.scratch.push(memory);
        self.kind.scratch_lane_bytes = lane_bytes;
        self.kind.scratch_waves = waves;
        Ok(())
    }
}
