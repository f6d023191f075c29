//! The device-side buffer: a public, versioned byte layout that any producer — a HIP or OpenCL
//! kernel, hand-written assembly, a PM4 program, a host thread — writes with plain stores and
//! a handful of atomics. `LAYOUT.md` in the crate folder is the same contract in prose; the
//! constants here are its single spelling in code.
//!
//! ```text
//! buffer:  [ header page: 4096 bytes ][ slot 0 ][ slot 1 ] … [ slot N-1 ]      (GTT, fine-grained)
//! slot i:  at 4096 + i·S, S bytes: [ slot header: 64 bytes ][ records … (P = S − 64 bytes) ]
//! record:  [ length: u32 ][ kind: u16 | producer: u16 ][ payload: length bytes ][ pad to 8 ]
//! ```
//!
//! All fields are little-endian. Offsets in [`header`] and [`slot`] are bytes from the start
//! of the header page and of a slot.
//!
//! The *stream position* is a 64-bit byte count over the payload areas of all slots ever
//! used: generation `g` (the `g`-th slot to be filled, at index `g mod N`) covers positions
//! `[g·P, (g+1)·P)`. The header page's [`header::CURSOR`] is the position of the next free
//! byte; producers reserve by compare-and-swap on it (see [`crate::protocol`]).

/// The layout version this crate writes and reads ([`header::VERSION`]).
pub const LAYOUT_VERSION: u32 = 1;

/// `"KFDDRAIN"` as a little-endian u64 ([`header::MAGIC`]).
pub const MAGIC: u64 = u64::from_le_bytes(*b"KFDDRAIN");

/// Size of the header page; slot 0 starts here.
pub const HEADER_PAGE_BYTES: u64 = 4096;

/// Size of a slot header; the record area starts here.
pub const SLOT_HEADER_BYTES: u32 = 64;

/// Slot sizes are multiples of this (so every slot, and its record area, is 64-byte aligned
/// and SDMA/DMA copies of whole slots are burst-sized).
pub const SLOT_ALIGN: u32 = 256;

/// The largest slot (1 GiB): positions inside a slot, and the commit counter, stay below
/// 2³¹ even with many reservations in flight.
pub const MAX_SLOT_BYTES: u32 = 1 << 30;

/// The fewest slots a buffer may have: one being filled while another drains.
pub const MIN_SLOTS: u32 = 2;

/// Size of a record header.
pub const RECORD_HEADER_BYTES: u32 = 8;

/// Records start, and are padded to, this alignment.
pub const RECORD_ALIGN: u32 = 8;

/// The producer id the channel itself uses when a flush closes a slot.
pub const HOST_FLUSH_PRODUCER: u16 = 0xFFFF;

/// Record kind 0 is never valid, so a zeroed or torn header is detected.
pub const RECORD_KIND_INVALID: u16 = 0;

/// Byte offsets of the header page fields.
pub mod header {
    /// u64: [`super::MAGIC`].
    pub const MAGIC: u64 = 0x000;
    /// u32: [`super::LAYOUT_VERSION`].
    pub const VERSION: u64 = 0x008;
    /// u32: size of the header page (4096): where slot 0 starts.
    pub const HEADER_BYTES: u64 = 0x00C;
    /// u32: slot size S in bytes (a multiple of 256).
    pub const SLOT_SIZE: u64 = 0x010;
    /// u32: number of slots N (at least 2).
    pub const SLOT_COUNT: u64 = 0x014;
    /// u32: size of a slot header (64).
    pub const SLOT_HEADER_BYTES: u64 = 0x018;
    /// u32: [`super::buffer_flags`], read by producers.
    pub const FLAGS: u64 = 0x01C;
    /// u64: the stream position of the next free byte (own 64-byte line).
    pub const CURSOR: u64 = 0x040;
    /// u64: records committed (statistics; producers add after their commit).
    pub const RECORDS_PRODUCED: u64 = 0x080;
    /// u64: record bytes committed, headers and padding included (statistics).
    pub const BYTES_PRODUCED: u64 = 0x088;
    /// u64: records a drop-mode producer dropped.
    pub const RECORDS_DROPPED: u64 = 0x0C0;
    /// u64: record bytes (headers and padding included) a drop-mode producer dropped.
    pub const BYTES_DROPPED: u64 = 0x0C8;
    /// u64: times a lossless producer found its slot not drained yet and started to wait
    /// (statistics; device producers count each record that waited once). Added to version
    /// 1 in reserved space: zero from producers that do not count.
    pub const PRODUCER_STALLS: u64 = 0x0D0;
    /// u64: slot-full interrupts device producers sent (`s_sendmsg`, see
    /// [`NOTIFY_MAILBOX`]).
    pub const SLOTS_NOTIFIED: u64 = 0x0D8;
    /// u64: address of the event mailbox slot a device producer writes before it sends a
    /// slot-full interrupt; 0 (absent): send none. Written by the channel.
    pub const NOTIFY_MAILBOX: u64 = 0x0E0;
    /// u32: the event id the slot-full interrupt carries in M0 (24 bits).
    pub const NOTIFY_EVENT_ID: u64 = 0x0E8;
    /// u32: the value written into [`NOTIFY_MAILBOX`] (the event's trigger value).
    pub const NOTIFY_VALUE: u64 = 0x0EC;
}

/// Bits of [`header::FLAGS`].
pub mod buffer_flags {
    /// Drop mode: a producer that finds its slot not yet drained drops the record and counts
    /// it instead of waiting.
    pub const DROP: u32 = 1 << 0;
    /// The channel is closed: producers stop (a waiting producer gives up).
    pub const CLOSED: u32 = 1 << 1;
}

/// Byte offsets of the slot header fields.
pub mod slot {
    /// u32: the generation the slot holds, modulo 2³². Slot `i` starts at generation `i`;
    /// the drain engine writes `g + N` after it drained generation `g`. A producer may write
    /// into the slot for generation `g` only while this equals `g`.
    pub const SEQUENCE: u64 = 0x00;
    /// u32: bytes accounted for in this generation (records, plus the unused tail the closer
    /// commits). The slot is *full* — ready to drain — when this equals the record-area size
    /// P. Producers add with a release atomic; the drain engine polls it.
    pub const COMMITTED: u64 = 0x04;
    /// u32: bytes of records in this generation, written by the closer before it commits.
    pub const END: u64 = 0x08;
    /// u32: [`super::slot_flags`], written by the closer before it commits.
    pub const FLAGS: u64 = 0x0C;
    /// u32: producer id of the closer (low 16 bits); [`super::HOST_FLUSH_PRODUCER`] for a
    /// flush.
    pub const CLOSER: u64 = 0x10;
}

/// Bits of [`slot::FLAGS`].
pub mod slot_flags {
    /// Closed: no more records go into this generation.
    pub const FULL: u32 = 1 << 0;
    /// Closed by a flush (periodic, kernel end, explicit) before the record area filled up.
    pub const FLUSHED: u32 = 1 << 1;
}

/// Bytes a record of `payload` bytes occupies: header plus payload, padded to 8.
pub const fn record_size(payload: u32) -> u64 {
    let p = payload as u64;
    RECORD_HEADER_BYTES as u64 + p.div_ceil(RECORD_ALIGN as u64) * RECORD_ALIGN as u64
}

/// The two header dwords of a record.
pub const fn encode_record_header(payload_len: u32, kind: u16, producer: u16) -> [u32; 2] {
    [payload_len, kind as u32 | (producer as u32) << 16]
}

/// Where everything is in one buffer: the addresses a device-side producer needs.
///
/// ```
/// use drain::layout::{Layout, HEADER_PAGE_BYTES, SLOT_HEADER_BYTES};
/// let l = Layout::new(0x7f00_0000_0000, 4096, 4).unwrap();
/// assert_eq!(l.capacity(), 4096 - 64);
/// assert_eq!(l.slot_addr(1), 0x7f00_0000_0000 + HEADER_PAGE_BYTES + 4096);
/// assert_eq!(l.records_addr(0), l.slot_addr(0) + u64::from(SLOT_HEADER_BYTES));
/// // Generation 5 lives in slot 5 mod 4 = 1.
/// assert_eq!(l.slot_of_generation(5), 1);
/// assert_eq!(l.total_bytes(), 4096 + 4 * 4096);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    base: u64,
    slot_size: u32,
    slot_count: u32,
}

impl Layout {
    /// The layout of a buffer at `base` with `slot_count` slots of `slot_size` bytes; `None`
    /// if the sizes break the rules of [`crate::ChannelConfig::validate`] or overflow.
    pub fn new(base: u64, slot_size: u32, slot_count: u32) -> Option<Layout> {
        let ok = slot_size >= SLOT_ALIGN
            && slot_size % SLOT_ALIGN == 0
            && slot_size <= MAX_SLOT_BYTES
            && slot_count >= MIN_SLOTS;
        let l = Layout {
            base,
            slot_size,
            slot_count,
        };
        (ok && u64::from(slot_count)
            .checked_mul(u64::from(slot_size))
            .and_then(|b| b.checked_add(HEADER_PAGE_BYTES))
            .and_then(|b| b.checked_add(base))
            .is_some())
        .then_some(l)
    }

    /// Address of the header page.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Slot size S.
    pub fn slot_size(&self) -> u32 {
        self.slot_size
    }

    /// Slot count N.
    pub fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// Record-area size P = S − 64: what a generation holds.
    pub fn capacity(&self) -> u32 {
        self.slot_size - SLOT_HEADER_BYTES
    }

    /// The largest payload one record may carry (P − 8).
    pub fn max_payload(&self) -> u32 {
        self.capacity() - RECORD_HEADER_BYTES
    }

    /// Header page plus slots, in bytes.
    pub fn total_bytes(&self) -> u64 {
        HEADER_PAGE_BYTES + u64::from(self.slot_count) * u64::from(self.slot_size)
    }

    /// Byte offset of slot `index` from the header page.
    pub fn slot_offset(&self, index: u32) -> u64 {
        HEADER_PAGE_BYTES + u64::from(index % self.slot_count) * u64::from(self.slot_size)
    }

    /// Address of slot `index` (its header).
    pub fn slot_addr(&self, index: u32) -> u64 {
        self.base + self.slot_offset(index)
    }

    /// Address of slot `index`'s record area.
    pub fn records_addr(&self, index: u32) -> u64 {
        self.slot_addr(index) + u64::from(SLOT_HEADER_BYTES)
    }

    /// Address of the header-page field at `offset` (one of [`header`]).
    pub fn header_field(&self, offset: u64) -> u64 {
        self.base + offset
    }

    /// Address of the slot-header field at `offset` (one of [`slot`]) of slot `index`.
    pub fn slot_field(&self, index: u32, offset: u64) -> u64 {
        self.slot_addr(index) + offset
    }

    /// The slot generation `generation` lives in.
    pub fn slot_of_generation(&self, generation: u64) -> u32 {
        (generation % u64::from(self.slot_count)) as u32
    }

    /// Generation and in-slot offset of stream position `position`.
    pub fn split_position(&self, position: u64) -> (u64, u32) {
        let p = u64::from(self.capacity());
        (position / p, (position % p) as u32)
    }
}

/// A record, borrowed from the bytes it was parsed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Record kind (never 0).
    pub kind: u16,
    /// Producer id.
    pub producer: u16,
    /// The payload.
    pub payload: &'a [u8],
}

impl Record<'_> {
    /// Bytes the record occupies in a slot.
    pub fn size(&self) -> u64 {
        record_size(self.payload.len() as u32)
    }

    /// An owned copy.
    pub fn to_owned_record(&self) -> RecordBuf {
        RecordBuf {
            kind: self.kind,
            producer: self.producer,
            payload: self.payload.to_vec(),
        }
    }
}

/// A record with its own payload (what [`crate::Channel::records`] yields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordBuf {
    /// Record kind (never 0).
    pub kind: u16,
    /// Producer id.
    pub producer: u16,
    /// The payload.
    pub payload: Vec<u8>,
}

/// What is wrong with a byte stream that should hold records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Fewer than 8 bytes left where a header should start.
    TruncatedHeader {
        /// Offset of the header.
        offset: usize,
        /// Bytes left.
        left: usize,
    },
    /// The header's length runs past the end.
    TruncatedPayload {
        /// Offset of the header.
        offset: usize,
        /// The payload length the header claims.
        length: u32,
        /// Bytes left after the header.
        left: usize,
    },
    /// Kind 0.
    InvalidKind {
        /// Offset of the header.
        offset: usize,
    },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::TruncatedHeader { offset, left } => write!(
                f,
                "a record header at byte {offset} is cut off ({left} of 8 bytes present)"
            ),
            RecordError::TruncatedPayload {
                offset,
                length,
                left,
            } => write!(
                f,
                "the record at byte {offset} claims {length} payload bytes but only {left} follow"
            ),
            RecordError::InvalidKind { offset } => {
                write!(
                    f,
                    "the record at byte {offset} has kind 0 (a zeroed or torn header)"
                )
            }
        }
    }
}

impl std::error::Error for RecordError {}

/// Iterator over the records of a record area (`[0, end)` of a drained slot). Stops after the
/// first error; never panics, whatever the bytes.
///
/// ```
/// use drain::layout::{encode_record_header, Records};
/// let mut bytes = Vec::new();
/// for w in encode_record_header(3, 7, 1) {
///     bytes.extend_from_slice(&w.to_le_bytes());
/// }
/// bytes.extend_from_slice(&[1, 2, 3, 0, 0, 0, 0, 0]); // payload padded to 8
/// let recs: Vec<_> = Records::new(&bytes).collect::<Result<_, _>>().unwrap();
/// assert_eq!((recs[0].kind, recs[0].producer, recs[0].payload), (7, 1, &[1u8, 2, 3][..]));
/// assert!(Records::new(&bytes[..5]).next().unwrap().is_err());
/// ```
#[derive(Clone, Debug)]
pub struct Records<'a> {
    bytes: &'a [u8],
    offset: usize,
    failed: bool,
}

impl<'a> Records<'a> {
    /// Records of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Records {
            bytes,
            offset: 0,
            failed: false,
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at.checked_add(4)?)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(w);
    Some(u32::from_le_bytes(a))
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.offset >= self.bytes.len() {
            return None;
        }
        let offset = self.offset;
        let left = self.bytes.len() - offset;
        let fail = |s: &mut Self, e| {
            s.failed = true;
            Some(Err(e))
        };
        let (Some(length), Some(word)) = (le32(self.bytes, offset), le32(self.bytes, offset + 4))
        else {
            return fail(self, RecordError::TruncatedHeader { offset, left });
        };
        let kind = (word & 0xFFFF) as u16;
        if kind == RECORD_KIND_INVALID {
            return fail(self, RecordError::InvalidKind { offset });
        }
        let start = offset + RECORD_HEADER_BYTES as usize;
        let after = left - RECORD_HEADER_BYTES as usize;
        let payload = match start
            .checked_add(length as usize)
            .and_then(|end| self.bytes.get(start..end))
        {
            Some(p) => p,
            None => {
                return fail(
                    self,
                    RecordError::TruncatedPayload {
                        offset,
                        length,
                        left: after,
                    },
                )
            }
        };
        // The padding of the last record may be cut by the end of the area; it carries nothing.
        let size = record_size(length) as usize;
        self.offset = offset.saturating_add(size).min(self.bytes.len());
        Some(Ok(Record {
            kind,
            producer: (word >> 16) as u16,
            payload,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_the_documented_ones() {
        assert_eq!(MAGIC.to_le_bytes(), *b"KFDDRAIN");
        assert_eq!(header::CURSOR % 64, 0, "the cursor has its own cache line");
        assert_eq!(header::RECORDS_PRODUCED % 64, 0);
        assert_eq!(header::RECORDS_DROPPED % 64, 0);
        assert_eq!(slot::COMMITTED, 4);
        assert_eq!(record_size(0), 8);
        assert_eq!(record_size(1), 16);
        assert_eq!(record_size(8), 16);
        assert_eq!(record_size(9), 24);
        assert_eq!(encode_record_header(5, 0x1234, 0xABCD), [5, 0xABCD_1234]);
    }

    #[test]
    fn layouts_refuse_bad_sizes() {
        assert!(Layout::new(0, 0, 4).is_none());
        assert!(Layout::new(0, 300, 4).is_none());
        assert!(Layout::new(0, 256, 1).is_none());
        assert!(Layout::new(0, MAX_SLOT_BYTES + 256, 2).is_none());
        assert!(Layout::new(u64::MAX - 4096, 256, 2).is_none());
        let l = Layout::new(0x1000, 256, 2).unwrap();
        assert_eq!(l.capacity(), 192);
        assert_eq!(l.split_position(192 * 3 + 5), (3, 5));
    }

    #[test]
    fn records_parse_and_stop_at_garbage() {
        let mut b = Vec::new();
        for (len, kind) in [(0u32, 1u16), (13, 2), (8, 3)] {
            for w in encode_record_header(len, kind, 9) {
                b.extend_from_slice(&w.to_le_bytes());
            }
            b.extend(std::iter::repeat_n(kind as u8, len as usize));
            b.resize(b.len().next_multiple_of(8), 0);
        }
        let r: Vec<_> = Records::new(&b).map(|r| r.unwrap()).collect();
        assert_eq!(r.len(), 3);
        assert_eq!(r[1].payload, &[2u8; 13][..]);
        assert_eq!(r.iter().map(|r| r.size()).sum::<u64>(), b.len() as u64);
        // A zero header after the last record is an error, then the iterator ends.
        b.extend_from_slice(&[0; 8]);
        let mut it = Records::new(&b);
        assert_eq!(it.by_ref().filter(|r| r.is_ok()).count(), 3);
        let mut it = Records::new(&b);
        it.nth(2);
        assert_eq!(
            it.next(),
            Some(Err(RecordError::InvalidKind { offset: 48 }))
        );
        assert_eq!(it.next(), None);
    }
}
