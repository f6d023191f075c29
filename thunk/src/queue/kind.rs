//! The queue kinds as a sealed trait: what a [`super::Queue`] of each kind has of its own.

use super::raw::RawQueue;
use crate::error::Result;
use crate::gpu::Gpu;
use std::fmt;

pub(super) use sealed::Kind;

pub(super) mod sealed {
    /// Only this module's three kinds implement [`super::QueueKind`].
    pub trait Sealed {}

    /// The kind as a value, for what `CREATE_QUEUE` needs.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Kind {
        Pm4,
        Aql,
        Sdma,
    }

    impl Kind {
        pub fn is_compute(self) -> bool {
            matches!(self, Kind::Pm4 | Kind::Aql)
        }
    }
}

/// A queue kind — PM4 compute ([`Pm4`]), SDMA ([`Sdma`]) or AQL ([`Aql`]) — and the ring state
/// only a queue of that kind has. The kind decides which packets a [`Queue`] takes and the
/// unit of its read and write pointers ([`QueueKind::Pointer`]). Sealed: these three are all
/// there are.
///
/// [`Pm4`]: super::Pm4
/// [`Sdma`]: super::Sdma
/// [`Aql`]: super::Aql
/// [`Queue`]: super::Queue
pub trait QueueKind: sealed::Sealed + Sized + fmt::Debug + Send + Sync {
    /// The unit of the read and write pointers: dwords ([`DwordPtr`]), bytes
    /// ([`SdmaBytePtr`]) or 64-byte packets ([`AqlSlotPtr`]).
    ///
    /// [`DwordPtr`]: pm4::ring::DwordPtr
    /// [`SdmaBytePtr`]: pm4::ring::SdmaBytePtr
    /// [`AqlSlotPtr`]: pm4::ring::AqlSlotPtr
    type Pointer: Copy + Eq + fmt::Debug + fmt::Display;

    #[doc(hidden)]
    const KIND: Kind;
    #[doc(hidden)]
    /// What reads the ring, for messages.
    const ENGINE: &'static str;
    #[doc(hidden)]
    /// The state of a fresh queue on `gpu` with a ring of `ring_bytes`.
    fn new(gpu: &Gpu, ring_bytes: u32) -> Result<Self>;
    #[doc(hidden)]
    /// The read pointer the engine reported.
    fn rptr(&self, raw: &RawQueue) -> Self::Pointer;
    #[doc(hidden)]
    /// The published write pointer.
    fn wptr(&self) -> Self::Pointer;
    #[doc(hidden)]
    /// Makes everything pushed visible to the engine; returns the new write pointer.
    fn submit(&mut self, raw: &RawQueue) -> Result<Self::Pointer>;
    #[doc(hidden)]
    /// Discards everything pushed since the last submit.
    fn rollback(&mut self);
    #[doc(hidden)]
    /// The engine has read everything submitted.
    fn idle(&self, raw: &RawQueue) -> bool;
}
