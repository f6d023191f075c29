//! The SDMA kind and its packets.

use super::dword::{
    dword_ring_state, push_dwords, resize_ring, ring_error, signal_target, with_encoded,
    DwordRingKind,
};
use super::kind::{sealed, Kind};
use super::raw::RawQueue;
use super::Queue;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::gpu::Gpu;
use pm4::ring::{SdmaBytePtr, SdmaRing};
use pm4::sdma::{SdmaConstantFill, SdmaCopyLinear, SdmaFence, SdmaTrap, SdmaWrite};
use pm4::{Encode, SdmaGen};
use std::time::Duration;

/// The SDMA kind: packets from [`pm4::sdma`], write pointer in bytes ([`SdmaBytePtr`]).
pub struct Sdma {
    pub(super) ring: SdmaRing,
    gen: SdmaGen,
    /// Write pointer (bytes) where `ring` starts counting: moves when the ring is resized.
    pub(super) base: u64,
}

impl std::fmt::Debug for Sdma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sdma")
            .field("ring", &self.ring)
            .field("gen", &self.gen)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl sealed::Sealed for Sdma {}

impl DwordRingKind for Sdma {
    type Ptr = SdmaBytePtr;
    const QUEUE_KIND: Kind = Kind::Sdma;
    const ENGINE_NAME: &'static str = "the SDMA engine";
    /// The SDMA one-dword NOP.
    const FILLER: u32 = 0;
    const UNITS_PER_DWORD: u64 = 4;

    fn create(gpu: &Gpu, ring_bytes: u32) -> Result<Self> {
        let gen = gpu.sdma_gen()?;
        let dwords = (ring_bytes / 4) as usize;
        Ok(Sdma {
            ring: SdmaRing::new(dwords).map_err(|e| ring_error("CREATE_QUEUE", e, "dwords"))?,
            gen,
            base: 0,
        })
    }

    fn read_rptr(&self, raw: &RawQueue) -> SdmaBytePtr {
        SdmaBytePtr::new(raw.read_u64_pointer())
    }

    fn is_idle(&self, raw: &RawQueue) -> bool {
        self.read_rptr(raw) == self.published()
    }

    fn reached(raw: &RawQueue, w: u64) -> bool {
        raw.read_u64_pointer() == w
    }

    dword_ring_state!(SdmaRing);
}

impl Queue<Sdma> {
    /// The SDMA generation packets are built for.
    pub fn sdma_gen(&self) -> SdmaGen {
        self.kind.gen
    }

    /// The ring discipline state.
    pub fn ring_state(&self) -> &SdmaRing {
        &self.kind.ring
    }

    /// The write pointer including pushed, unsubmitted packets.
    pub fn pending_wptr(&self) -> SdmaBytePtr {
        self.kind.pending()
    }

    /// Appends a packet; returns the pending write pointer.
    /// As [`Pm4Queue::push`]: encoded first, then written into the ring.
    ///
    /// [`Pm4Queue::push`]: super::Pm4Queue::push
    pub fn push<P: Encode + ?Sized>(&mut self, packet: &P) -> Result<SdmaBytePtr> {
        with_encoded(
            packet.dwords(),
            self.kind.ring.size_dwords(),
            |buf| packet.encode_into(buf),
            |dw| push_dwords(self, dw),
        )
    }

    /// Appends already-encoded dwords.
    pub fn push_raw(&mut self, dwords: &[u32]) -> Result<SdmaBytePtr> {
        push_dwords(self, dwords)
    }

    /// Copies `bytes` from `src` to `dst` (as many COPY_LINEAR packets as the generation's
    /// byte-count field needs).
    pub fn push_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<SdmaBytePtr> {
        let max = pm4::sdma::max_copy_bytes(self.kind.gen);
        let mut done = 0;
        let mut w = self.pending_wptr();
        while done < bytes {
            let n = (bytes - done).min(max);
            let p = SdmaCopyLinear::new(self.kind.gen, src + done, dst + done, n)
                .map_err(|e| Error::invalid("COPY_LINEAR", e.to_string()))?;
            w = self.push(&p)?;
            done += n;
        }
        Ok(w)
    }

    /// Fills `bytes` (a multiple of 4) at `dst` with the dword `value`.
    pub fn push_fill(&mut self, dst: u64, value: u32, bytes: u64) -> Result<SdmaBytePtr> {
        let max = pm4::sdma::max_fill_bytes(self.kind.gen) & !3;
        let mut done = 0;
        let mut w = self.pending_wptr();
        while done < bytes {
            let n = (bytes - done).min(max);
            let p = SdmaConstantFill::new(self.kind.gen, dst + done, value, n)
                .map_err(|e| Error::invalid("CONSTANT_FILL", e.to_string()))?;
            w = self.push(&p)?;
            done += n;
        }
        Ok(w)
    }

    /// Writes `data` to `dst` (SDMA WRITE).
    pub fn push_write(&mut self, dst: u64, data: &[u32]) -> Result<SdmaBytePtr> {
        let p = SdmaWrite::new(dst, data).map_err(|e| Error::invalid("WRITE", e.to_string()))?;
        self.push(&p)
    }

    /// Writes the 32-bit `value` to `addr` once everything before it completed (FENCE).
    pub fn push_fence(&mut self, addr: u64, value: u32) -> Result<SdmaBytePtr> {
        let p = SdmaFence::new(addr, value).map_err(|e| Error::invalid("FENCE", e.to_string()))?;
        self.push(&p)
    }

    /// Raises an interrupt with context `int_context` (TRAP).
    pub fn push_trap(&mut self, int_context: u32) -> Result<SdmaBytePtr> {
        let p = SdmaTrap::new(int_context).map_err(|e| Error::invalid("TRAP", e.to_string()))?;
        self.push(&p)
    }

    /// Appends the signal of `event` (facts §8.2): FENCE of the trigger value into the slot,
    /// then TRAP with the event id.
    pub fn push_signal(&mut self, event: &Event) -> Result<SdmaBytePtr> {
        let t = signal_target(event)?;
        self.push_fence(t.slot_address, t.value)?;
        self.push_trap(t.int_ctxid)
    }

    /// Gives the queue a new ring of `bytes`, as [`Pm4Queue::resize_ring`] does (padding with
    /// SDMA NOPs).
    ///
    /// [`Pm4Queue::resize_ring`]: super::Pm4Queue::resize_ring
    pub fn resize_ring(&mut self, bytes: u32, timeout: Duration) -> Result<()> {
        resize_ring(self, bytes, timeout)
    }
}
