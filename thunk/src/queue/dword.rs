//! The kinds whose rings count dwords — PM4 and SDMA — and the push path they share.

use super::kind::QueueKind;
use super::pm4::Pm4;
use super::sdma::Sdma;
use super::Queue;
use crate::error::{Errno, Error, Result};
use crate::event::{Event, SignalTarget};
use crate::memory::Memory;
use pm4::ring::{Placement, RingError};

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

/// The kinds whose rings count dwords (PM4 and SDMA), which share one push path.
pub(super) trait DwordRingKind: QueueKind {
    /// [`Pm4Ring::place`] / [`SdmaRing::place`].
    fn place(&self, dwords: usize) -> std::result::Result<Placement, RingError>;
    /// [`Pm4Ring::commit`] / [`SdmaRing::commit`].
    fn commit(&mut self, placement: &Placement) -> bool;
    /// A read pointer the engine reported.
    fn set_rptr(&mut self, rptr: Self::Pointer);
    /// The write pointer including pushed, unsubmitted packets.
    fn pending(&self) -> Self::Pointer;
}

macro_rules! dword_ring_kind {
    ($kind:ty) => {
        impl DwordRingKind for $kind {
            #[inline(always)]
            fn place(&self, dwords: usize) -> std::result::Result<Placement, RingError> {
                self.ring.place(dwords)
            }
            #[inline(always)]
            fn commit(&mut self, placement: &Placement) -> bool {
                self.ring.commit(placement)
            }
            fn set_rptr(&mut self, rptr: Self::Pointer) {
                self.ring.set_rptr(rptr);
            }
            #[inline(always)]
            fn pending(&self) -> Self::Pointer {
                self.ring.pending_wptr().add(self.base)
            }
        }
    };
}
dword_ring_kind!(Pm4);
dword_ring_kind!(Sdma);

/// Reads the engine's read pointer into the ring's state.
pub(super) fn refresh<K: DwordRingKind>(q: &mut Queue<K>) {
    let r = q.rptr();
    q.kind.set_rptr(r);
}

/// Places `dwords` in the ring, writes them (and the NOP filler of a wrap) and adds them to
/// the pending write pointer. Inlined: a fence's eight dwords become fixed-size stores.
#[inline(always)]
pub(super) fn push_dwords<K: DwordRingKind>(
    q: &mut Queue<K>,
    dwords: &[u32],
) -> Result<K::Pointer> {
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
