//! The host-thread producer: a CPU thread writing records into the GPU-side buffer with the
//! same protocol an instrumented kernel uses ([`crate::protocol`]). Valid where the CPU can
//! reach the buffer with coherent atomics — shared-memory devices, GTT buffers, the model.

use crate::error::{Error, Result};
use crate::layout::{encode_record_header, record_size, RECORD_HEADER_BYTES, RECORD_KIND_INVALID};
use crate::protocol::{Reservation, Reserved, Shared};
use std::sync::Arc;
use std::time::Duration;

/// What became of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Produced {
    /// Committed into slot generation `generation` at byte `offset` of its record area.
    Written {
        /// The generation.
        generation: u64,
        /// Offset in the record area.
        offset: u32,
    },
    /// Dropped (drop mode: the slot it needed was not drained yet); counted in the buffer
    /// header.
    Dropped,
}

/// A producer on a CPU thread. Create one per thread with [`crate::Channel::host_producer`];
/// it keeps the device buffer alive, so it may outlive the channel (it then fails with
/// [`Error::Closed`]).
///
/// ```
/// # fn main() -> Result<(), drain::Error> {
/// use drain::{Channel, ChannelConfig, Produced};
/// use std::time::Duration;
/// let kfd = thunk::Kfd::open_with(thunk::OpenOptions::model(thunk::Preset::Gfx900, 1))?;
/// let gpu = kfd.gpu(0).unwrap();
/// let mut channel = Channel::new(&gpu, ChannelConfig::new(4096, 4))?;
/// let mut producer = channel.host_producer(7);
/// assert!(matches!(producer.produce(1, b"hello")?, Produced::Written { generation: 0, offset: 0 }));
/// channel.flush()?;
/// let chunk = channel.next_chunk(Some(Duration::from_secs(5)))?.expect("drained");
/// let record = chunk.records().next().unwrap()?;
/// assert_eq!((record.kind, record.producer, record.payload), (1, 7, &b"hello"[..]));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct HostProducer {
    shared: Arc<Shared>,
    id: u16,
    timeout: Duration,
}

/// The reserved place of one record, for [`HostProducer::produce_with`]: write the payload
/// into it (bounds-checked, straight into the device buffer).
#[derive(Debug)]
pub struct RecordSpace<'a> {
    shared: &'a Shared,
    payload_offset: u64,
    len: u32,
}

impl RecordSpace<'_> {
    /// Payload length.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes `bytes` at payload offset `at`.
    pub fn write(&mut self, at: u32, bytes: &[u8]) -> Result<()> {
        let end = u64::from(at) + bytes.len() as u64;
        if end > u64::from(self.len) {
            return Err(Error::config(format!(
                "writing {} bytes at payload offset {at} runs past the record's {} bytes",
                bytes.len(),
                self.len
            )));
        }
        Ok(self
            .shared
            .buffer
            .write(self.payload_offset + u64::from(at), bytes)?)
    }
}

impl HostProducer {
    pub(crate) fn new(shared: Arc<Shared>, id: u16, timeout: Duration) -> Self {
        HostProducer {
            shared,
            id,
            timeout,
        }
    }

    /// The producer id written into every record.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The largest payload a record may have (slot size − 72).
    pub fn max_payload(&self) -> u32 {
        self.shared.layout.max_payload()
    }

    /// Writes one record of `kind` (not 0) carrying `payload`. Lossless channels wait for a
    /// free slot (up to the channel's producer timeout); drop-mode channels return
    /// [`Produced::Dropped`] instead.
    pub fn produce(&mut self, kind: u16, payload: &[u8]) -> Result<Produced> {
        let len = u32::try_from(payload.len()).map_err(|_| self.too_big(payload.len()))?;
        self.produce_with(kind, len, |space| space.write(0, payload))
    }

    /// Reserves a record of `kind` with a `len`-byte payload and lets `fill` write the
    /// payload in place — no staging copy. `fill` runs between reserve and commit; if it
    /// fails, the record is still committed (with whatever it wrote) so the slot can drain.
    pub fn produce_with(
        &mut self,
        kind: u16,
        len: u32,
        fill: impl FnOnce(&mut RecordSpace<'_>) -> Result<()>,
    ) -> Result<Produced> {
        if kind == RECORD_KIND_INVALID {
            return Err(Error::config(
                "record kind 0 is reserved (it marks a zeroed header); use 1..=65535",
            ));
        }
        if len > self.max_payload() {
            return Err(self.too_big(len as usize));
        }
        if self.shared.is_closed() {
            return Err(Error::Closed);
        }
        let need = record_size(len) as u32;
        let r = match self.shared.reserve(need, self.id, self.timeout)? {
            Reserved::Dropped => return Ok(Produced::Dropped),
            Reserved::At(r) => r,
        };
        let filled = self.write_record(&r, kind, len, fill);
        self.shared.commit(&r, self.id)?;
        filled?;
        Ok(Produced::Written {
            generation: r.generation,
            offset: r.offset,
        })
    }

    fn write_record(
        &self,
        r: &Reservation,
        kind: u16,
        len: u32,
        fill: impl FnOnce(&mut RecordSpace<'_>) -> Result<()>,
    ) -> Result<()> {
        let at = self.shared.record_offset(r);
        let [a, b] = encode_record_header(len, kind, self.id);
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&a.to_le_bytes());
        head[4..].copy_from_slice(&b.to_le_bytes());
        self.shared.buffer.write(at, &head)?;
        let mut space = RecordSpace {
            shared: &self.shared,
            payload_offset: at + u64::from(RECORD_HEADER_BYTES),
            len,
        };
        fill(&mut space)
    }

    fn too_big(&self, len: usize) -> Error {
        Error::config(format!(
            "a {len}-byte payload does not fit a slot: at most {} bytes (slot size − 72)",
            self.max_payload()
        ))
    }
}
