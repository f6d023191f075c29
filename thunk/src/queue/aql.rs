//! The AQL kind: 64-byte packets written in place.

use super::kind::{sealed, Kind, QueueKind};
use super::raw::RawQueue;
use super::{AqlQueue, Queue};
use crate::error::{Errno, Error, Result};
use crate::gpu::Gpu;
use crate::memory::Memory;
use crate::poll::poll_until;
use pm4::ring::{AqlSlotPtr, AQL_PACKET_BYTES, AQL_PACKET_DWORDS};
use std::time::Duration;

/// The AQL kind: 64-byte packets written in place, write pointer in packets ([`AqlSlotPtr`]).
/// Kernel dispatch needs shader code; barrier and vendor packets are what a tool writes.
pub struct Aql {
    slots: u64,
    wptr: u64,
    pending: u64,
    /// The read index last read from memory.
    rptr_seen: u64,
    /// Completion signals and kernarg segments reused by [`AqlQueue::dispatch`], made on
    /// the first dispatch.
    completions: Option<crate::dispatch::CompletionPool>,
    /// Scratch backing memory, newest last: older buffers stay until the queue is gone, since
    /// dispatches that started with them may still run.
    pub(super) scratch: Vec<Memory>,
    /// Bytes per lane and waves the newest scratch buffer holds.
    pub(super) scratch_lane_bytes: u32,
    pub(super) scratch_waves: u32,
}

impl std::fmt::Debug for Aql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aql")
            .field("slots", &self.slots)
            .field("wptr", &self.wptr)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl sealed::Sealed for Aql {}

impl QueueKind for Aql {
    type Pointer = AqlSlotPtr;
    const KIND: Kind = Kind::Aql;
    const ENGINE: &'static str = "the packet processor";

    fn new(gpu: &Gpu, ring_bytes: u32) -> Result<Self> {
        gpu.generation()?;
        Ok(Aql {
            slots: u64::from(ring_bytes) / AQL_PACKET_BYTES,
            wptr: 0,
            pending: 0,
            rptr_seen: 0,
            completions: None,
            scratch: Vec::new(),
            scratch_lane_bytes: 0,
            scratch_waves: 0,
        })
    }

    fn rptr(&self, raw: &RawQueue) -> AqlSlotPtr {
        AqlSlotPtr::new(raw.read_u64_pointer())
    }

    fn wptr(&self) -> AqlSlotPtr {
        AqlSlotPtr::new(self.wptr)
    }

    fn submit(&mut self, raw: &RawQueue) -> Result<AqlSlotPtr> {
        self.wptr = self.pending;
        raw.publish(self.wptr)?;
        Ok(AqlSlotPtr::new(self.wptr))
    }

    fn rollback(&mut self) {
        // Packets are written in place, but only `submit` publishes them.
        self.pending = self.wptr;
    }

    fn idle(&self, raw: &RawQueue) -> bool {
        raw.read_u64_pointer() == self.wptr
    }
}

impl AqlQueue {
    /// The queue's pool of completion slots (none before the first dispatch).
    pub(crate) fn completion_pool(&mut self) -> &mut Option<crate::dispatch::CompletionPool> {
        &mut self.kind.completions
    }
}

impl Queue<Aql> {
    /// Ring size in packets.
    pub fn size_packets(&self) -> u64 {
        self.kind.slots
    }

    /// Writes a packet into the next slot: dwords 1–15 first, then dword 0 (header and setup)
    /// with release ordering, so the packet processor never sees a half-written packet.
    /// Returns the packet's index.
    pub fn push_packet(&mut self, packet: &[u32; AQL_PACKET_DWORDS]) -> Result<AqlSlotPtr> {
        if self.kind.pending.wrapping_sub(self.kind.rptr_seen) >= self.kind.slots {
            self.kind.rptr_seen = self.raw.read_u64_pointer();
        }
        let rptr = self.kind.rptr_seen;
        if self.kind.pending.wrapping_sub(rptr) >= self.kind.slots {
            return Err(Error::new(
                "push",
                Errno::ENOSPC,
                format!(
                    "AQL ring full: {} packets pending, read index {rptr:#x}; submit and wait",
                    self.kind.slots
                ),
            ));
        }
        let at = AqlSlotPtr::new(self.kind.pending);
        let offset = at.slot(self.kind.slots) * AQL_PACKET_BYTES;
        self.raw.ring.write_dwords(offset + 4, &packet[1..])?;
        self.raw.ring.store_u32(offset, packet[0])?;
        self.kind.pending += 1;
        Ok(at)
    }

    /// Waits until at least `packets` slots are free.
    pub fn wait_for_space(&self, packets: u64, timeout: Duration) -> Result<()> {
        let need = packets.min(self.kind.slots);
        if poll_until(timeout, || {
            self.kind.slots
                - self
                    .kind
                    .pending
                    .wrapping_sub(self.raw.read_u64_pointer())
                    .min(self.kind.slots)
                >= need
        }) {
            Ok(())
        } else {
            Err(Error::timeout(
                "wait",
                format!(
                    "queue {}: {packets} AQL slots did not become free within {timeout:?}",
                    self.raw.queue_id
                ),
            ))
        }
    }
}
