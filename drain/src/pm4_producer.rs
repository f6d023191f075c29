//! A producer without shader execution: a PM4 program on a compute queue of its own that
//! writes records into the GPU-side buffer (WRITE_DATA for small slots, DMA_DATA from a
//! staging buffer for large ones) and marks the slots full — what an instrumented kernel
//! does, for tests, demos and benchmarks on machines (or models) that run no shaders.
//!
//! The PM4 engine has no atomics, so the program uses the protocol's *whole-slot* form: the
//! CPU that builds the program claims whole generations on the cursor (compare-and-swap, as
//! every producer reserves), and the program is then the only writer and committer of those
//! slots. Per slot it waits on the GPU until the slot holds its generation (WAIT_REG_MEM on
//! the sequence), writes the records, writes `end`/`flags`/`closer`, and commits by storing
//! `committed = P`. A PM4 program cannot branch, so it always waits: it never drops, even on
//! a drop-mode channel. Host producers and flushes can run alongside; they never touch a
//! claimed slot.

use crate::error::{packet, Error, Result};
use crate::layout::{encode_record_header, record_size, slot, slot_flags, RECORD_KIND_INVALID};
use crate::protocol::Shared;
use pm4::fields::CompareFunction;
use pm4::user::{
    DmaData, DmaDataCommand, DmaDataControl, DmaDstSel, DmaSrcSel, PollTarget, WaitArgs,
    WaitOperation, WaitRegMem,
};
use std::sync::Arc;
use std::time::Duration;
use thunk::packets::ReleaseMem;
use thunk::{AllocOptions, Memory, MemoryKind, Pm4Queue, QueueOptions};

/// Slots whose records take at most this many bytes are written inline with WRITE_DATA.
const INLINE_BYTES: usize = 512;
/// Bytes per DMA_DATA (within the gfx9-safe 2 MiB − 1).
const DMA_CHUNK: u64 = 1 << 20;
/// The producer's ring (256 KiB).
const RING_BYTES: u32 = 256 << 10;

/// A completion signal the program writes at its end, as an application kernel's completion
/// would be written: the 32-bit `value` to `address` (4-byte aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// GPU address.
    pub address: u64,
    /// The value written.
    pub value: u32,
}

/// What one [`Pm4Producer::run`] queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pm4Run {
    /// The first slot generation the program fills.
    pub first_generation: u64,
    /// Slots it fills (the last possibly in part).
    pub slots: u64,
    /// Records it writes.
    pub records: u64,
    /// Record bytes, headers and padding included.
    pub bytes: u64,
}

/// The PM4 producer ([`crate::Channel::pm4_producer`]). Each [`Pm4Producer::run`] is one
/// program, like one instrumented kernel launch.
pub struct Pm4Producer {
    queue: Pm4Queue,
    staging: Option<Memory>,
    fence: Memory,
    submitted: u64,
    shared: Arc<Shared>,
    id: u16,
}

impl std::fmt::Debug for Pm4Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pm4Producer")
            .field("id", &self.id)
            .field("queue", &self.queue.id())
            .field("submitted", &self.submitted)
            .finish()
    }
}

struct SlotImage {
    generation: u64,
    image: Vec<u8>,
}

impl Pm4Producer {
    pub(crate) fn new(shared: Arc<Shared>, id: u16) -> Result<Self> {
        let gpu = shared.gpu.clone();
        let queue = gpu.create_pm4_queue(&QueueOptions::new().ring_size(RING_BYTES))?;
        let fence = gpu.alloc_with(&AllocOptions::new(MemoryKind::Gtt, 4096).coherent())?;
        Ok(Pm4Producer {
            queue,
            staging: None,
            fence,
            submitted: 0,
            shared,
            id,
        })
    }

    /// The producer id written into every record.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The compute queue's id.
    pub fn queue_id(&self) -> u32 {
        self.queue.id()
    }

    /// Builds and submits one program writing `records` (kind, payload) in order, then, if
    /// given, writing `completion`. Waits first for the previous program to finish (its
    /// staging buffer is reused), up to `timeout`.
    pub fn run(
        &mut self,
        records: &[(u16, &[u8])],
        completion: Option<Completion>,
        timeout: Duration,
    ) -> Result<Pm4Run> {
        let p = self.shared.layout.capacity();
        for (i, (kind, payload)) in records.iter().enumerate() {
            if *kind == RECORD_KIND_INVALID {
                return Err(Error::config(format!(
                    "record {i}: kind 0 is reserved; use 1..=65535"
                )));
            }
            if payload.len() > self.shared.layout.max_payload() as usize {
                return Err(Error::config(format!(
                    "record {i}: a {}-byte payload does not fit a slot (at most {} bytes)",
                    payload.len(),
                    self.shared.layout.max_payload()
                )));
            }
        }
        if let Some(c) = completion {
            if c.address % 4 != 0 {
                return Err(Error::config(format!(
                    "the completion address {:#x} is not 4-byte aligned",
                    c.address
                )));
            }
        }
        if self.shared.is_closed() {
            return Err(Error::Closed);
        }
        self.wait(timeout)?;
        // Pack the records into slot images.
        let mut images: Vec<Vec<u8>> = Vec::new();
        let mut bytes = 0u64;
        for (kind, payload) in records {
            let size = record_size(payload.len() as u32) as usize;
            let fits = images
                .last()
                .is_some_and(|img| img.len() + size <= p as usize);
            if !fits {
                images.push(Vec::new());
            }
            if let Some(img) = images.last_mut() {
                for w in encode_record_header(payload.len() as u32, *kind, self.id) {
                    img.extend_from_slice(&w.to_le_bytes());
                }
                img.extend_from_slice(payload);
                img.resize(img.len().next_multiple_of(8), 0);
            }
            bytes += size as u64;
        }
        let dwords = self.program_dwords(&images);
        if dwords + 64 > RING_BYTES as usize / 4 {
            return Err(Error::config(format!(
                "{} records in {} slots make a {dwords}-dword program, more than the producer's ring holds; split them over several runs",
                records.len(),
                images.len()
            )));
        }
        let first = if images.is_empty() {
            0
        } else {
            self.shared.claim_whole(images.len() as u64, self.id)?
        };
        let slots: Vec<SlotImage> = images
            .into_iter()
            .enumerate()
            .map(|(k, image)| SlotImage {
                generation: first + k as u64,
                image,
            })
            .collect();
        let staged = self.stage(&slots)?;
        let r = self.push_program(&slots, &staged, completion);
        if let Err(e) = r {
            self.queue.rollback();
            // The claimed generations must still be committed, or the channel stalls: let the
            // CPU finish them as empty slots.
            for s in &slots {
                self.abandon(s.generation);
            }
            return Err(e);
        }
        self.queue.submit()?;
        self.submitted += 1;
        self.shared.nudge();
        self.shared.count_produced(records.len() as u64, bytes)?;
        Ok(Pm4Run {
            first_generation: first,
            slots: slots.len() as u64,
            records: records.len() as u64,
            bytes,
        })
    }

    /// Waits until every submitted program has finished.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        if self.submitted == 0 {
            return Ok(());
        }
        self.fence.wait_u64(0, self.submitted, timeout).map_err(|e| {
            Error::Timeout(format!(
                "PM4 producer {}: program {} did not finish ({e}); lossless programs wait for the reader to free slots",
                self.id, self.submitted
            ))
        })
    }

    fn program_dwords(&self, images: &[Vec<u8>]) -> usize {
        let per_slot: usize = images
            .iter()
            .map(|img| {
                let body = if img.len() <= INLINE_BYTES {
                    4 + img.len() / 4
                } else {
                    7 * (img.len() as u64).div_ceil(DMA_CHUNK) as usize
                };
                7 + body + (4 + 3) + (4 + 1)
            })
            .sum();
        per_slot + 8 + 8
    }

    /// Copies the images of DMA-written slots into the staging buffer; returns each slot's
    /// staging offset.
    fn stage(&mut self, slots: &[SlotImage]) -> Result<Vec<Option<u64>>> {
        let total: u64 = slots
            .iter()
            .filter(|s| s.image.len() > INLINE_BYTES)
            .map(|s| s.image.len() as u64)
            .sum();
        if total == 0 {
            return Ok(vec![None; slots.len()]);
        }
        if self.staging.as_ref().is_none_or(|m| m.size() < total) {
            self.staging = None;
            self.staging = Some(self.shared.gpu.alloc(MemoryKind::Gtt, total)?);
        }
        let staging = self
            .staging
            .as_ref()
            .ok_or_else(|| Error::config("no staging buffer"))?;
        let mut at = 0u64;
        let mut out = Vec::with_capacity(slots.len());
        for s in slots {
            if s.image.len() > INLINE_BYTES {
                staging.write(at, &s.image)?;
                out.push(Some(staging.gpu_addr(at)));
                at += s.image.len() as u64;
            } else {
                out.push(None);
            }
        }
        Ok(out)
    }

    fn push_program(
        &mut self,
        slots: &[SlotImage],
        staged: &[Option<u64>],
        completion: Option<Completion>,
    ) -> Result<()> {
        let layout = self.shared.layout;
        let gen = self.queue.gfx_gen();
        for (s, staged) in slots.iter().zip(staged) {
            let index = layout.slot_of_generation(s.generation);
            // Lossless on the GPU: wait until the slot holds this generation.
            let wait = WaitRegMem::new(
                &WaitArgs {
                    function: CompareFunction::Equal,
                    operation: WaitOperation::WaitRegMem,
                    target: PollTarget::Memory(layout.slot_field(index, slot::SEQUENCE)),
                    poll_interval: 10,
                    optimize_ace_offload_mode: false,
                },
                s.generation as u32,
                u32::MAX,
            )
            .map_err(|e| packet("WAIT_REG_MEM", e))?;
            self.queue.push(&wait)?;
            let dst = layout.records_addr(index);
            match staged {
                None if !s.image.is_empty() => {
                    let words: Vec<u32> = s
                        .image
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    self.queue.push_write_data(dst, &words)?;
                }
                None => {}
                Some(src) => {
                    let n = s.image.len() as u64;
                    let count = n.div_ceil(DMA_CHUNK);
                    for k in 0..count {
                        let off = k * DMA_CHUNK;
                        let len = (n - off).min(DMA_CHUNK);
                        let p = DmaData::new(
                            gen,
                            DmaDataControl::new()
                                .with_src_sel(DmaSrcSel::SrcAddr)
                                .with_dst_sel(DmaDstSel::DstAddr)
                                .with_cp_sync(k + 1 == count),
                            src + off,
                            dst + off,
                            DmaDataCommand::new().with_byte_count(len as u32),
                        )
                        .map_err(|e| packet("DMA_DATA", e))?;
                        self.queue.push(&p)?;
                    }
                }
            }
            // Close (end, flags, closer), then commit the whole record area: this program is
            // the slot's only committer, so a store is the commit.
            self.queue.push_write_data(
                layout.slot_field(index, slot::END),
                &[s.image.len() as u32, slot_flags::FULL, u32::from(self.id)],
            )?;
            self.queue.push_write_data(
                layout.slot_field(index, slot::COMMITTED),
                &[layout.capacity()],
            )?;
        }
        if let Some(c) = completion {
            let p = ReleaseMem::fence(gen, c.address, u64::from(c.value), false, None)
                .map_err(|e| packet("RELEASE_MEM", e))?;
            self.queue.push(&p)?;
        }
        self.queue
            .push_fence(self.fence.gpu_addr(0), self.submitted + 1)?;
        Ok(())
    }

    /// Finishes a claimed generation from the CPU as an empty slot (used when building its
    /// program failed).
    fn abandon(&self, generation: u64) {
        let r = (|| -> Result<()> {
            let p = self.shared.layout.capacity();
            // The slot may still hold an older generation that is being drained.
            let seq = self.shared.slot_word(generation, slot::SEQUENCE)?;
            let since = std::time::Instant::now();
            let mut backoff = crate::protocol::Backoff::new();
            while seq.load(std::sync::atomic::Ordering::Acquire) != generation as u32 {
                if self.shared.is_closed() || since.elapsed() > Duration::from_secs(10) {
                    return Err(Error::Timeout(format!(
                        "slot of generation {generation} never became free"
                    )));
                }
                backoff.snooze();
            }
            self.shared
                .slot_word(generation, slot::END)?
                .store(0, std::sync::atomic::Ordering::Relaxed);
            self.shared
                .slot_word(generation, slot::FLAGS)?
                .store(slot_flags::FULL, std::sync::atomic::Ordering::Relaxed);
            self.shared.commit_bytes(generation, p)
        })();
        if let Err(e) = r {
            log::warn!(target: "drain", "abandoning generation {generation}: {e}");
        }
    }
}
