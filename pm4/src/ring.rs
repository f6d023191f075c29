//! Write pointers in their three units, and rings over caller-owned memory.
//!
//! Queue write pointers are monotonic 64-bit counters whose unit depends on the queue
//! kind (facts §4): **dwords** for PM4 queues ([`DwordPtr`]), **bytes** for SDMA queues
//! ([`SdmaBytePtr`]), **64-byte packets** for AQL queues ([`AqlSlotPtr`]). Each is its own
//! type; conversions are explicit methods, and the slot in a ring is `ptr mod ring size`
//! in the pointer's own unit.
//!
//! [`Pm4Ring`] and [`SdmaRing`] implement the kernel's kernel-queue (HIQ) discipline over
//! a `&mut [u32]` the caller owns (facts §9.6): free space is
//! `(rptr + size − 1 − wptr) mod size`; a request larger than that fails; a packet that
//! would reach the end of the ring (`wptr + n >= size`, as the kernel tests it) first
//! fills the tail with one-dword NOPs and restarts at slot 0, which needs `n < rptr`;
//! acquisitions accumulate in a pending write pointer that [`Pm4Ring::submit`] publishes
//! and [`Pm4Ring::rollback`] discards. [`AqlRing`] hands out 64-byte slots.
//!
//! ```
//! use pm4::ring::{DwordPtr, Pm4Ring};
//! use pm4::hws::{RunList, RunListArgs};
//! let mut mem = [0u32; 512];
//! let mut hiq = Pm4Ring::new(mem.len())?;
//! let rl = RunList::new(&RunListArgs::submit(0x10_0000, 0x40, 1))?;
//! hiq.push(&mut mem, &rl)?;
//! let wptr = hiq.submit(); // write to the wptr memory, ring the doorbell
//! assert_eq!(wptr, DwordPtr::new(4));
//! assert_eq!(mem[0], 0xC002_A500);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;

use crate::header::NOP_ONE_DWORD;
use crate::writer::Encode;

macro_rules! write_ptr {
    ($(#[$m:meta])* $name:ident, $unit:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u64);

        impl $name {
            /// A pointer with the raw counter value.
            pub const fn new(raw: u64) -> Self {
                $name(raw)
            }

            /// The raw counter value (what goes into wptr memory and the doorbell).
            pub const fn get(self) -> u64 {
                self.0
            }

            #[doc = concat!("The slot in a ring of `ring_len` ", $unit, ": `ptr mod ring_len` (0 for an empty ring).")]
            pub const fn slot(self, ring_len: u64) -> u64 {
                if ring_len == 0 { 0 } else { self.0 % ring_len }
            }

            #[doc = concat!("The pointer advanced by `n` ", $unit, " (wrapping at 2^64).")]
            pub const fn add(self, n: u64) -> Self {
                $name(self.0.wrapping_add(n))
            }

            #[doc = concat!($unit, " from `earlier` to `self` (wrapping).")]
            pub const fn distance_from(self, earlier: Self) -> u64 {
                self.0.wrapping_sub(earlier.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#x} {}", self.0, $unit)
            }
        }
    };
}

write_ptr!(
    /// A PM4 queue write/read pointer, counted in dwords.
    DwordPtr, "dwords"
);
write_ptr!(
    /// An SDMA queue write/read pointer, counted in bytes.
    SdmaBytePtr, "bytes"
);
write_ptr!(
    /// An AQL queue write/read pointer, counted in 64-byte packets.
    AqlSlotPtr, "packets"
);

/// Bytes in an AQL packet.
pub const AQL_PACKET_BYTES: u64 = 64;
/// Dwords in an AQL packet.
pub const AQL_PACKET_DWORDS: usize = 16;

impl DwordPtr {
    /// The same position in bytes.
    pub const fn to_bytes(self) -> u64 {
        self.0.wrapping_mul(4)
    }
}

impl SdmaBytePtr {
    /// The byte position of a dword position.
    pub const fn from_dwords(p: DwordPtr) -> Self {
        SdmaBytePtr(p.to_bytes())
    }

    /// The dword position, or `None` if the pointer is not dword aligned.
    pub const fn to_dwords(self) -> Option<DwordPtr> {
        if self.0 % 4 == 0 {
            Some(DwordPtr(self.0 / 4))
        } else {
            None
        }
    }
}

impl AqlSlotPtr {
    /// The dword position of the packet (×16; what the HQD loader computes).
    pub const fn to_dwords(self) -> DwordPtr {
        DwordPtr(self.0.wrapping_mul(AQL_PACKET_DWORDS as u64))
    }

    /// The byte position of the packet (×64).
    pub const fn to_bytes(self) -> u64 {
        self.0.wrapping_mul(AQL_PACKET_BYTES)
    }

    /// The packet position of a dword position, or `None` if it is not on a packet
    /// boundary.
    pub const fn from_dwords(p: DwordPtr) -> Option<Self> {
        if p.0 % AQL_PACKET_DWORDS as u64 == 0 {
            Some(AqlSlotPtr(p.0 / AQL_PACKET_DWORDS as u64))
        } else {
            None
        }
    }
}

/// A ring operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The ring has fewer free dwords than requested (the kernel's `-ENOMEM`).
    Full {
        /// Dwords requested.
        requested: usize,
        /// Dwords free.
        free: usize,
    },
    /// The packet would reach the ring end, and after wrapping to slot 0 it would
    /// overrun the read pointer.
    NoSpaceAfterWrap {
        /// Dwords requested.
        requested: usize,
        /// Read-pointer slot.
        rptr_slot: usize,
    },
    /// The memory passed in is not the ring's size.
    WrongMemory {
        /// Ring size in dwords.
        expected: usize,
        /// Length of the memory given.
        actual: usize,
    },
    /// A ring must have at least 2 dwords (AQL: 2 packets) and, for AQL, a whole number
    /// of packets.
    BadSize {
        /// The size given.
        size: usize,
    },
    /// The packet could not be encoded.
    Write(crate::error::WriteError),
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::Full { requested, free } => {
                write!(f, "ring full: {requested} dwords requested, {free} free")
            }
            RingError::NoSpaceAfterWrap {
                requested,
                rptr_slot,
            } => {
                write!(f, "ring wrap: {requested} dwords do not fit before the read pointer at slot {rptr_slot}")
            }
            RingError::WrongMemory { expected, actual } => {
                write!(f, "ring memory is {actual} dwords, the ring has {expected}")
            }
            RingError::BadSize { size } => write!(f, "bad ring size {size}"),
            RingError::Write(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for RingError {}

/// Where a request of `dwords` goes in ring memory the caller writes itself, without lending
/// the ring's memory to [`Pm4Ring`] or [`SdmaRing`] (ring memory a device reads is not
/// something to hold a `&mut [u32]` to): [`Pm4Ring::place`] decides it without changing the
/// ring, the caller writes the filler and its packet, then [`Pm4Ring::commit`] adds them to
/// the pending write pointer. A request that does not fit fails in `place`, before anything
/// is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Pending write pointer (dwords) the placement starts from.
    from: u64,
    /// Pending write pointer after it.
    to: u64,
    filler_slot: usize,
    filler_dwords: usize,
    filler: u32,
    slot: usize,
    dwords: usize,
}

impl Placement {
    /// Slots to fill with [`Placement::filler`] first (empty unless the request wraps: then
    /// the ring's tail, from the pending write pointer to the end).
    #[inline]
    pub fn filler_range(&self) -> core::ops::Range<usize> {
        self.filler_slot..self.filler_slot + self.filler_dwords
    }

    /// The one-dword NOP of the ring's engine.
    pub fn filler(&self) -> u32 {
        self.filler
    }

    /// Slots the request's dwords go to.
    #[inline]
    pub fn packet_range(&self) -> core::ops::Range<usize> {
        self.slot..self.slot + self.dwords
    }

    /// Dwords the pending write pointer advances by: filler and request.
    pub fn advance_dwords(&self) -> u64 {
        self.to.wrapping_sub(self.from)
    }
}

/// The kernel-queue ring discipline, in dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DwordRing {
    size: usize,
    wptr: u64,
    pending: u64,
    rptr: u64,
    fill: u32,
}

impl DwordRing {
    fn new(size: usize, fill: u32) -> Result<Self, RingError> {
        if size < 2 {
            return Err(RingError::BadSize { size });
        }
        Ok(DwordRing {
            size,
            wptr: 0,
            pending: 0,
            rptr: 0,
            fill,
        })
    }

    #[inline]
    fn slot(&self, p: u64) -> usize {
        // Queue rings are powers of two: a mask, not a division, on the submit path.
        if self.size.is_power_of_two() {
            (p & (self.size as u64 - 1)) as usize
        } else {
            (p % self.size as u64) as usize
        }
    }

    #[inline]
    fn free(&self) -> usize {
        let (r, w) = (self.slot(self.rptr), self.slot(self.pending));
        // Both slots are below `size`, so one subtraction is the `mod size`.
        let f = r + self.size - 1 - w;
        if f >= self.size {
            f - self.size
        } else {
            f
        }
    }

    #[inline]
    fn place(&self, n: usize) -> Result<Placement, RingError> {
        let free = self.free();
        if n > free {
            return Err(RingError::Full { requested: n, free });
        }
        let w = self.slot(self.pending);
        let (filler_slot, filler_dwords, at) = if w + n >= self.size {
            let r = self.slot(self.rptr);
            if n >= r {
                return Err(RingError::NoSpaceAfterWrap {
                    requested: n,
                    rptr_slot: r,
                });
            }
            (w, self.size - w, 0)
        } else {
            (w, 0, w)
        };
        Ok(Placement {
            from: self.pending,
            to: self.pending.wrapping_add((filler_dwords + n) as u64),
            filler_slot,
            filler_dwords,
            filler: self.fill,
            slot: at,
            dwords: n,
        })
    }

    #[inline]
    fn commit(&mut self, p: &Placement) -> bool {
        if p.from != self.pending {
            return false;
        }
        self.pending = p.to;
        true
    }

    fn acquire<'m>(&mut self, mem: &'m mut [u32], n: usize) -> Result<&'m mut [u32], RingError> {
        if mem.len() != self.size {
            return Err(RingError::WrongMemory {
                expected: self.size,
                actual: mem.len(),
            });
        }
        let p = self.place(n)?;
        if let Some(tail) = mem.get_mut(p.filler_range()) {
            tail.fill(p.filler);
        }
        self.pending = p.to;
        // `place` keeps the request inside the ring.
        mem.get_mut(p.packet_range()).ok_or(RingError::Full {
            requested: n,
            free: 0,
        })
    }

    fn push<P: Encode + ?Sized>(
        &mut self,
        mem: &mut [u32],
        packet: &P,
    ) -> Result<usize, RingError> {
        let n = packet.dwords();
        let before = self.pending;
        let dst = self.acquire(mem, n)?;
        match packet.encode_into(dst) {
            Ok(written) => Ok(written),
            Err(e) => {
                self.pending = before;
                Err(RingError::Write(e))
            }
        }
    }
}

macro_rules! kernel_ring {
    ($(#[$m:meta])* $name:ident, $ptr:ident, $to:expr, $from:expr, $fill:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            ring: DwordRing,
        }

        impl $name {
            /// A ring of `size_dwords` dwords (at least 2), all pointers at 0.
            pub fn new(size_dwords: usize) -> Result<Self, RingError> {
                Ok($name { ring: DwordRing::new(size_dwords, $fill)? })
            }

            /// Ring size in dwords.
            pub fn size_dwords(&self) -> usize {
                self.ring.size
            }

            /// The published write pointer.
            pub fn wptr(&self) -> $ptr {
                ($to)(self.ring.wptr)
            }

            /// The write pointer including acquired, unsubmitted space.
            pub fn pending_wptr(&self) -> $ptr {
                ($to)(self.ring.pending)
            }

            /// The read pointer last reported by the consumer.
            pub fn rptr(&self) -> $ptr {
                ($to)(self.ring.rptr)
            }

            /// Records how far the consumer has read.
            pub fn set_rptr(&mut self, rptr: $ptr) {
                self.ring.rptr = ($from)(rptr);
            }

            /// Free dwords: `(rptr + size − 1 − pending_wptr) mod size`.
            pub fn free_dwords(&self) -> usize {
                self.ring.free()
            }

            /// Reserves `dwords` contiguous dwords of `mem` (the ring memory, exactly
            /// `size_dwords` long), NOP-filling the tail first if they would reach the end.
            pub fn acquire<'m>(&mut self, mem: &'m mut [u32], dwords: usize) -> Result<&'m mut [u32], RingError> {
                self.ring.acquire(mem, dwords)
            }

            /// Where `dwords` contiguous dwords would go (after NOP-filling the tail if they
            /// would reach the end), for a caller that writes ring memory itself; the ring
            /// does not change until [`Self::commit`]. Fails as [`Self::acquire`] does.
            #[inline]
            pub fn place(&self, dwords: usize) -> Result<Placement, RingError> {
                self.ring.place(dwords)
            }

            /// Adds a placement made by [`Self::place`] — its filler and dwords written — to
            /// the pending write pointer. Returns false, changing nothing, when the ring moved
            /// on since (another acquisition, a submit or rollback, a new read pointer does
            /// not count).
            #[must_use]
            #[inline]
            pub fn commit(&mut self, placement: &Placement) -> bool {
                self.ring.commit(placement)
            }

            /// Acquires space for `packet` and encodes it there; returns its dwords.
            pub fn push<P: Encode + ?Sized>(&mut self, mem: &mut [u32], packet: &P) -> Result<usize, RingError> {
                self.ring.push(mem, packet)
            }

            /// Publishes everything acquired; returns the new write pointer (to store in
            /// the wptr memory and the doorbell).
            pub fn submit(&mut self) -> $ptr {
                self.ring.wptr = self.ring.pending;
                self.wptr()
            }

            /// Discards everything acquired since the last submit.
            pub fn rollback(&mut self) {
                self.ring.pending = self.ring.wptr;
            }
        }
    };
}

kernel_ring!(
    /// A PM4 ring (the HIQ): dword pointers, wrap filler `0xFFFF1000`.
    Pm4Ring, DwordPtr, DwordPtr::new, DwordPtr::get, NOP_ONE_DWORD
);

kernel_ring!(
    /// An SDMA ring: byte pointers, wrap filler the zero dword (SDMA one-dword NOP). A
    /// read pointer that is not dword aligned is rounded down.
    SdmaRing, SdmaBytePtr, |dw: u64| SdmaBytePtr::new(dw.wrapping_mul(4)), |p: SdmaBytePtr| p.get() / 4, 0
);

/// An AQL ring of 64-byte packets with monotonic pointers: free slots are
/// `size − (wptr − rptr)`; packets never straddle the end, so no filler is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AqlRing {
    slots: u64,
    wptr: u64,
    rptr: u64,
}

impl AqlRing {
    /// A ring of `size_dwords` dwords (a multiple of 16, at least 2 packets).
    pub fn new(size_dwords: usize) -> Result<Self, RingError> {
        if size_dwords % AQL_PACKET_DWORDS != 0 || size_dwords < 2 * AQL_PACKET_DWORDS {
            return Err(RingError::BadSize { size: size_dwords });
        }
        Ok(AqlRing {
            slots: (size_dwords / AQL_PACKET_DWORDS) as u64,
            wptr: 0,
            rptr: 0,
        })
    }

    /// Ring size in packets.
    pub fn size_packets(&self) -> u64 {
        self.slots
    }

    /// The write pointer.
    pub fn wptr(&self) -> AqlSlotPtr {
        AqlSlotPtr(self.wptr)
    }

    /// The read pointer.
    pub fn rptr(&self) -> AqlSlotPtr {
        AqlSlotPtr(self.rptr)
    }

    /// Records how far the packet processor has read.
    pub fn set_rptr(&mut self, rptr: AqlSlotPtr) {
        self.rptr = rptr.0;
    }

    /// Free packet slots.
    pub fn free_packets(&self) -> u64 {
        self.slots.saturating_sub(self.wptr.wrapping_sub(self.rptr))
    }

    /// Reserves the next packet slot in `mem` and advances the write pointer; returns
    /// the slot's 16 dwords and the pointer of that packet.
    pub fn next_slot<'m>(
        &mut self,
        mem: &'m mut [u32],
    ) -> Result<(&'m mut [u32], AqlSlotPtr), RingError> {
        let expected = self.slots as usize * AQL_PACKET_DWORDS;
        if mem.len() != expected {
            return Err(RingError::WrongMemory {
                expected,
                actual: mem.len(),
            });
        }
        if self.free_packets() == 0 {
            return Err(RingError::Full {
                requested: AQL_PACKET_DWORDS,
                free: 0,
            });
        }
        let at = AqlSlotPtr(self.wptr);
        let start = at.slot(self.slots) as usize * AQL_PACKET_DWORDS;
        let actual = mem.len();
        let slot = mem
            .get_mut(start..start + AQL_PACKET_DWORDS)
            .ok_or(RingError::WrongMemory { expected, actual })?;
        self.wptr = self.wptr.wrapping_add(1);
        Ok((slot, at))
    }
}
