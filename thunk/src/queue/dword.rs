//! The kinds whose rings count dwords — PM4 and SDMA — and what they share: their
//! [`QueueKind`] methods, the push path and `resize_ring`.

use super::kind::{sealed, Kind, QueueKind};
use super::options::QueueOptions;
use super::raw::RawQueue;
use super::Queue;
use crate::error::{Errno, Error, Result};
use crate::event::{Event, SignalTarget};
use crate::gpu::Gpu;
use crate::memory::Memory;
use pm4::ring::{Placement, RingError};
use std::fmt;
use std::time::Duration;

pub(super) fn ring_error(op: &'static str, e: RingError, unit: &str) -> Error {
    match e {
        RingError::Full { .. } | RingError::NoSpaceAfterWrap { .. } => Error::new(
            op,
            Errno::ENOSPC,
            format!("{e} (in {unit}); submit and wait for the engine to read further"),
        ),
        other => Error::invalid(op, other.to_string()),
    }
}

/// Packets up to this many dwords are encoded on the stack before they go into the ring;
/// longer ones (a large WRITE_DATA or NOP) take a heap buffer.
const STACK_PACKET_DWORDS: usize = 32;

/// Encodes `packet` with `encode` into a buffer of `dwords` and hands the dwords written to
/// `place`. Nothing reaches the ring before the packet is encoded whole; a packet longer than
/// the ring (`ring_dwords`) is refused before any buffer is made for it.
pub(super) fn with_encoded<T>(
    dwords: usize,
    ring_dwords: usize,
    encode: impl FnOnce(&mut [u32]) -> std::result::Result<usize, pm4::WriteError>,
    place: impl FnOnce(&[u32]) -> Result<T>,
) -> Result<T> {
    if dwords >= ring_dwords {
        return Err(Error::new(
            "push",
            Errno::ENOSPC,
            format!("a packet of {dwords} dwords does not fit a ring of {ring_dwords} dwords"),
        ));
    }
    let mut stack = [0u32; STACK_PACKET_DWORDS];
    let mut heap = Vec::new();
    let buf: &mut [u32] = if dwords <= STACK_PACKET_DWORDS {
        &mut stack[..dwords]
    } else {
        heap.resize(dwords, 0);
        &mut heap
    };
    let written = encode(buf).map_err(|e| Error::invalid("push", e.to_string()))?;
    place(buf.get(..written).unwrap_or(buf))
}

/// Writes a placement's filler (the tail of the ring, when the packet wraps) and then
/// `dwords` into ring memory, past the published write pointer.
#[inline(always)]
fn write_placement(ring: &Memory, p: &Placement, dwords: &[u32]) -> Result<()> {
    const CHUNK: usize = 64;
    let fill = p.filler_range();
    if !fill.is_empty() {
        let nops = [p.filler(); CHUNK];
        let mut at = fill.start;
        while at < fill.end {
            let k = (fill.end - at).min(CHUNK);
            ring.write_dwords(at as u64 * 4, &nops[..k])?;
            at += k;
        }
    }
    ring.write_dwords(p.packet_range().start as u64 * 4, dwords)
}

/// A placement that `commit` refused: cannot happen while the queue is borrowed mutably.
fn moved_on() -> Error {
    Error::invalid("push", "the ring moved on while a packet was placed")
}

/// A kind whose ring counts dwords: PM4 ([`Pm4Ring`], pointers in dwords) or SDMA
/// ([`SdmaRing`], pointers in bytes). Each kind says here what tells it apart — the engine,
/// its read pointer, its NOP, the unit of its pointers — and [`dword_ring_state!`] writes its
/// ring bookkeeping; what the two share is written once, in this module: their [`QueueKind`]
/// methods, the push path and [`resize_ring`].
///
/// `pub` in a private module, as [`RawQueue`] is: the blanket [`QueueKind`] impl names it.
///
/// [`Pm4Ring`]: pm4::ring::Pm4Ring
/// [`SdmaRing`]: pm4::ring::SdmaRing
pub trait DwordRingKind: sealed::Sealed + Sized + fmt::Debug + Send + Sync {
    /// [`QueueKind::Pointer`].
    type Ptr: Copy + Eq + fmt::Debug + fmt::Display;
    /// [`QueueKind::KIND`].
    const QUEUE_KIND: Kind;
    /// [`QueueKind::ENGINE`].
    const ENGINE_NAME: &'static str;
    /// The engine's one-dword NOP, which pads the ring before a resize.
    const FILLER: u32;
    /// Units of the write pointer in a dword: 1 (dwords) or 4 (bytes).
    const UNITS_PER_DWORD: u64;

    /// [`QueueKind::new`].
    fn create(gpu: &Gpu, ring_bytes: u32) -> Result<Self>;
    /// [`QueueKind::rptr`].
    fn read_rptr(&self, raw: &RawQueue) -> Self::Ptr;
    /// [`QueueKind::idle`].
    fn is_idle(&self, raw: &RawQueue) -> bool;
    /// Whether the engine has read up to the write-pointer value `w` (what was published).
    fn reached(raw: &RawQueue, w: u64) -> bool;

    // The ring bookkeeping, written by `dword_ring_state!`.

    /// The raw value of a pointer (what goes into the write pointer and the doorbell).
    fn raw_pointer(p: Self::Ptr) -> u64;
    /// `Pm4Ring::place` / `SdmaRing::place`.
    fn place(&self, dwords: usize) -> std::result::Result<Placement, RingError>;
    /// `Pm4Ring::commit` / `SdmaRing::commit`.
    fn commit(&mut self, placement: &Placement) -> bool;
    /// A read pointer the engine reported.
    fn set_rptr(&mut self, rptr: Self::Ptr);
    /// The write pointer including pushed, unsubmitted packets.
    fn pending(&self) -> Self::Ptr;
    /// The published write pointer.
    fn published(&self) -> Self::Ptr;
    /// Publishes everything pushed in the ring's state; returns the new write pointer.
    fn submit_ring(&mut self) -> Self::Ptr;
    /// Discards everything pushed since the last submit.
    fn rollback_ring(&mut self);
    /// Ring size in dwords.
    fn ring_dwords(&self) -> usize;
    /// Packets were pushed and not submitted.
    fn unsubmitted(&self) -> bool;
    /// Sets the write pointer where the ring starts counting.
    fn set_base(&mut self, base: u64);
    /// A fresh ring of `dwords`, all its pointers at 0.
    fn reset_ring(&mut self, dwords: usize) -> Result<()>;
}

/// The ring bookkeeping of a [`DwordRingKind`] whose `ring` is a `$ring` and whose `base` is
/// the write pointer where `ring` starts counting (a multiple of the ring size: it moves when
/// the ring is resized).
macro_rules! dword_ring_state {
    ($ring:ty) => {
        fn raw_pointer(p: Self::Ptr) -> u64 {
            p.get()
        }
        #[inline(always)]
        fn place(
            &self,
            dwords: usize,
        ) -> std::result::Result<pm4::ring::Placement, pm4::ring::RingError> {
            self.ring.place(dwords)
        }
        #[inline(always)]
        fn commit(&mut self, placement: &pm4::ring::Placement) -> bool {
            self.ring.commit(placement)
        }
        fn set_rptr(&mut self, rptr: Self::Ptr) {
            self.ring.set_rptr(rptr);
        }
        #[inline(always)]
        fn pending(&self) -> Self::Ptr {
            self.ring.pending_wptr().add(self.base)
        }
        fn published(&self) -> Self::Ptr {
            self.ring.wptr().add(self.base)
        }
        fn submit_ring(&mut self) -> Self::Ptr {
            self.ring.submit().add(self.base)
        }
        fn rollback_ring(&mut self) {
            self.ring.rollback();
        }
        fn ring_dwords(&self) -> usize {
            self.ring.size_dwords()
        }
        fn unsubmitted(&self) -> bool {
            self.ring.pending_wptr() != self.ring.wptr()
        }
        fn set_base(&mut self, base: u64) {
            self.base = base;
        }
        fn reset_ring(&mut self, dwords: usize) -> crate::error::Result<()> {
            self.ring = <$ring>::new(dwords)
                .map_err(|e| super::dword::ring_error("UPDATE_QUEUE", e, "dwords"))?;
            Ok(())
        }
    };
}
pub(super) use dword_ring_state;

impl<K: DwordRingKind> QueueKind for K {
    type Pointer = K::Ptr;
    const KIND: Kind = K::QUEUE_KIND;
    const ENGINE: &'static str = K::ENGINE_NAME;

    fn new(gpu: &Gpu, ring_bytes: u32) -> Result<Self> {
        K::create(gpu, ring_bytes)
    }

    fn rptr(&self, raw: &RawQueue) -> K::Ptr {
        self.read_rptr(raw)
    }

    fn wptr(&self) -> K::Ptr {
        self.published()
    }

    fn submit(&mut self, raw: &RawQueue) -> Result<K::Ptr> {
        // The packets are in the ring already.
        let w = self.submit_ring();
        raw.publish(K::raw_pointer(w))?;
        Ok(w)
    }

    fn rollback(&mut self) {
        self.rollback_ring();
    }

    fn idle(&self, raw: &RawQueue) -> bool {
        self.is_idle(raw)
    }
}

/// Reads the engine's read pointer into the ring's state.
pub(super) fn refresh<K: DwordRingKind>(q: &mut Queue<K>) {
    let r = q.rptr();
    q.kind.set_rptr(r);
}

/// Places `dwords` in the ring, writes them (and the NOP filler of a wrap) and adds them to
/// the pending write pointer. Inlined: a fence's eight dwords become fixed-size stores.
#[inline(always)]
pub(super) fn push_dwords<K: DwordRingKind>(q: &mut Queue<K>, dwords: &[u32]) -> Result<K::Ptr> {
    // The read pointer lives in a line the engine writes; reading it costs a cache miss, so
    // it is only read when the last value seen leaves too little room (it only moves ahead).
    let p = match q.kind.place(dwords.len()) {
        Ok(p) => p,
        Err(_) => {
            refresh(q);
            q.kind
                .place(dwords.len())
                .map_err(|e| ring_error("push", e, "dwords"))?
        }
    };
    write_placement(&q.raw.ring, &p, dwords)?;
    if !q.kind.commit(&p) {
        return Err(moved_on());
    }
    Ok(q.kind.pending())
}

pub(super) fn signal_target(event: &Event) -> Result<SignalTarget> {
    event.signal_target().ok_or_else(|| {
        Error::invalid(
            "signal",
            format!(
                "event {} ({:?}) has no event-page slot; only signal events can be signalled by a queue",
                event.id(),
                event.kind()
            ),
        )
    })
}

/// Gives the queue a new ring of `bytes` (`UPDATE_QUEUE` with a new ring address and size).
/// Needs nothing pushed and unsubmitted; waits until the engine has read everything, then pads
/// the old ring with the kind's one-dword NOPs until the write pointer is a multiple of both
/// ring sizes, so the engine's read position means the same in the old and the new ring.
pub(super) fn resize_ring<K: DwordRingKind>(
    q: &mut Queue<K>,
    bytes: u32,
    timeout: Duration,
) -> Result<()> {
    QueueOptions::new()
        .ring_size(bytes)
        .validate(K::QUEUE_KIND)?;
    if bytes == q.raw.ring_size {
        return Ok(());
    }
    if q.kind.unsubmitted() {
        return Err(Error::invalid(
            "UPDATE_QUEUE",
            "packets were pushed but not submitted; submit or roll them back before resizing",
        ));
    }
    let new_ring = q.raw.alloc_ring(bytes)?;
    q.wait_idle(timeout)?;
    let old_dwords = q.kind.ring_dwords();
    let new_dwords = (bytes / 4) as usize;
    let multiple = old_dwords.max(new_dwords) as u64;
    let w = q.raw.pad_write_pointer(
        K::raw_pointer(q.wptr()) / K::UNITS_PER_DWORD,
        multiple,
        K::FILLER,
        timeout,
        |w| w * K::UNITS_PER_DWORD,
        K::reached,
    )?;
    // Rebased on the old ring first: a refused update leaves a consistent queue.
    q.kind.set_base(w * K::UNITS_PER_DWORD);
    q.kind.reset_ring(old_dwords)?;
    q.raw.replace_ring(new_ring, bytes)?;
    q.kind.reset_ring(new_dwords)?;
    Ok(())
}
