//! The producer protocol — reserve, write, commit — and the close that ends a generation,
//! implemented once for the host side (host producers, and the channel's flushes). A
//! device-side producer (HIP, OpenCL, assembly) does the same steps with its own atomics;
//! `drain/device/producer.cl` ([`crate::device`]) is that producer for kernels.
//!
//! # Reserve, write, commit
//!
//! A record of payload `n` needs `need = 8 + round_up(n, 8)` bytes (at most P). With `P` the
//! record-area size and `N` the slot count:
//!
//! 1. `pos = load(cursor)`; `g = pos / P`, `off = pos % P`.
//! 2. If `off + need <= P` the record goes to generation `g` at `off`; otherwise it goes to
//!    `g + 1` at 0 and this producer will *close* `g` at `end = off`.
//! 3. The target slot (index `target mod N`) must hold the target generation:
//!    `load_acquire(slot.sequence) == target as u32`. If it still holds `target − N` (not
//!    drained yet): lossless producers wait and start over; drop-mode producers add 1 to
//!    `records_dropped` and `need` to `bytes_dropped` and give up — nothing was reserved.
//! 4. `compare_and_swap(cursor, pos, target·P + target_off + need)`; on failure start over.
//! 5. If closing `g`: store `slot[g].end = off`, `slot[g].closer = id`,
//!    `slot[g].flags = FULL`, then `fetch_add_release(slot[g].committed, P − off)`.
//! 6. Write the record header and payload at the reserved place (plain stores).
//! 7. If the record ends exactly at P, it closes its own generation: store `end = P`,
//!    `closer`, `flags = FULL` before the commit.
//! 8. Commit: `fetch_add_release(slot.committed, need)`. When `committed` reaches P the slot
//!    is full and the drain engine takes it.
//! 9. Statistics (relaxed): `records_produced += 1`, `bytes_produced += need`.
//!
//! Reserving with a compare-and-swap (rather than a blind add) is what makes drop mode exact:
//! a producer only ever reserves space in a slot it has seen free, so a drop never leaves a
//! hole that nobody commits.
//!
//! # Memory ordering
//!
//! * The commit is a **release** atomic at system scope, after the record's stores: the
//!   drain engine's poll (an acquire) then sees the whole record. On the GPU that is
//!   `__hip_atomic_fetch_add(&committed, need, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM)`
//!   (or `__threadfence_system()` before `atomicAdd_system`).
//! * The sequence check is an **acquire** load: the drain engine resets a slot's counters
//!   before it writes the new sequence, so a producer that sees its generation sees zeros.
//! * The buffer is **fine-grained** (coherent) system memory (GTT with the COHERENT flag):
//!   GPU atomics, CPU atomics (host producers, flushes) and the copy engine all see one
//!   value. In coarse-grained memory a kernel's stores may sit in the GPU's L2 until the
//!   kernel ends, so the drain could copy stale bytes; a producer there must write its record
//!   back (a system-scope release fence) before committing, and CPU flushes cannot close a
//!   slot safely while such kernels run.

use crate::error::{Error, Result};
use crate::layout::{buffer_flags, header, slot, slot_flags, Layout, HOST_FLUSH_PRODUCER};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use thunk::{Gpu, Kfd, Memory};

/// The device buffer and what every user of it shares: the channel and its producers.
pub(crate) struct Shared {
    pub kfd: Kfd,
    pub gpu: Gpu,
    pub buffer: Memory,
    pub layout: Layout,
    pub drop_mode: bool,
    /// Host producers waiting for a free slot right now (lossless back-pressure).
    pub producers_waiting: AtomicU32,
}

/// Counts a producer in [`Shared::producers_waiting`] from its first wait until it returns.
struct WaitingProducer<'a>(&'a AtomicU32);

impl Drop for WaitingProducer<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("layout", &self.layout)
            .field("drop_mode", &self.drop_mode)
            .finish_non_exhaustive()
    }
}

/// Where a reservation landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reservation {
    pub generation: u64,
    pub offset: u32,
    pub need: u32,
}

/// The outcome of a reservation attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reserved {
    At(Reservation),
    Dropped,
}

/// A generation closed by a flush: its records end at `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlushClose {
    pub generation: u64,
    pub end: u32,
}

/// Spin, then yield, then sleep with a growing back-off.
pub(crate) struct Backoff {
    round: u32,
    sleep: Duration,
}

impl Backoff {
    pub fn new() -> Self {
        Backoff {
            round: 0,
            sleep: Duration::from_micros(5),
        }
    }

    pub fn snooze(&mut self) {
        self.round = self.round.saturating_add(1);
        if self.round < 64 {
            std::hint::spin_loop();
        } else if self.round < 128 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
            // Short enough that a waiting producer refills slots before the engine runs dry.
            self.sleep = (self.sleep * 2).min(Duration::from_micros(100));
        }
    }
}

impl Shared {
    fn word32(&self, offset: u64) -> Result<&AtomicU32> {
        Ok(self.buffer.atomic_u32(offset)?)
    }

    fn word64(&self, offset: u64) -> Result<&AtomicU64> {
        Ok(self.buffer.atomic_u64(offset)?)
    }

    pub fn cursor(&self) -> Result<&AtomicU64> {
        self.word64(header::CURSOR)
    }

    pub fn slot_word(&self, generation: u64, field: u64) -> Result<&AtomicU32> {
        let index = self.layout.slot_of_generation(generation);
        self.word32(self.layout.slot_offset(index) + field)
    }

    pub fn header_word64(&self, field: u64) -> Result<&AtomicU64> {
        self.word64(field)
    }

    pub fn buffer_flags(&self) -> Result<u32> {
        Ok(self.word32(header::FLAGS)?.load(Ordering::Acquire))
    }

    pub fn set_closed(&self) -> Result<()> {
        // Device producers still running send no more slot-full interrupts to an event that
        // is about to go.
        self.word64(header::NOTIFY_MAILBOX)?
            .store(0, Ordering::Release);
        self.word32(header::FLAGS)?
            .fetch_or(buffer_flags::CLOSED, Ordering::AcqRel);
        Ok(())
    }

    pub fn is_closed(&self) -> bool {
        self.buffer_flags()
            .map(|f| f & buffer_flags::CLOSED != 0)
            .unwrap_or(true)
    }

    /// Tells the backend a doorbell-worthy change happened, through the thunk's backend
    /// contract: a model's engine thread looks now; hardware polls by itself and ignores it.
    pub fn nudge(&self) {
        self.kfd.backend().doorbell_rung(self.gpu.id());
    }

    /// Steps 1–5 of the protocol. A lossless producer waits up to `timeout` for its slot.
    pub fn reserve(&self, need: u32, closer: u16, timeout: Duration) -> Result<Reserved> {
        let p = u64::from(self.layout.capacity());
        let n = u64::from(self.layout.slot_count());
        let cursor = self.cursor()?;
        let mut backoff = Backoff::new();
        let mut waiting_since: Option<Instant> = None;
        let mut _waiting: Option<WaitingProducer<'_>> = None;
        loop {
            let pos = cursor.load(Ordering::Acquire);
            let (g, off) = self.layout.split_position(pos);
            let (target, target_off, closes) = if u64::from(off) + u64::from(need) > p {
                (g + 1, 0u32, Some(off))
            } else {
                (g, off, None)
            };
            let seq = self
                .slot_word(target, slot::SEQUENCE)?
                .load(Ordering::Acquire);
            if seq != target as u32 {
                let behind = seq == (target.wrapping_sub(n)) as u32;
                if behind && self.drop_mode {
                    self.count_drop(need)?;
                    return Ok(Reserved::Dropped);
                }
                if self.is_closed() {
                    return Err(Error::Closed);
                }
                let since = *waiting_since.get_or_insert_with(|| {
                    self.producers_waiting.fetch_add(1, Ordering::Relaxed);
                    _waiting = Some(WaitingProducer(&self.producers_waiting));
                    Instant::now()
                });
                if since.elapsed() >= timeout {
                    return Err(Error::Timeout(format!(
                        "no free slot for generation {target} within {timeout:?} (slot {} still holds sequence {seq}); is anyone reading the channel?",
                        self.layout.slot_of_generation(target)
                    )));
                }
                backoff.snooze();
                continue;
            }
            let next = target * p + u64::from(target_off) + u64::from(need);
            if cursor
                .compare_exchange_weak(pos, next, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                std::hint::spin_loop();
                continue;
            }
            if let Some(end) = closes {
                self.close_generation(g, end, closer, 0)?;
                self.commit_bytes(g, (p - u64::from(end)) as u32)?;
            }
            return Ok(Reserved::At(Reservation {
                generation: target,
                offset: target_off,
                need,
            }));
        }
    }

    fn count_drop(&self, need: u32) -> Result<()> {
        self.word64(header::RECORDS_DROPPED)?
            .fetch_add(1, Ordering::Relaxed);
        self.word64(header::BYTES_DROPPED)?
            .fetch_add(u64::from(need), Ordering::Relaxed);
        Ok(())
    }

    /// Byte offset in the buffer of a reservation's first byte.
    pub fn record_offset(&self, r: &Reservation) -> u64 {
        let index = self.layout.slot_of_generation(r.generation);
        self.layout.slot_offset(index)
            + u64::from(crate::layout::SLOT_HEADER_BYTES)
            + u64::from(r.offset)
    }

    /// Steps 7–9: closes the generation if the record fills it, commits, counts.
    pub fn commit(&self, r: &Reservation, closer: u16) -> Result<()> {
        let p = self.layout.capacity();
        if r.offset + r.need == p {
            self.close_generation(r.generation, p, closer, 0)?;
        }
        self.commit_bytes(r.generation, r.need)?;
        self.word64(header::RECORDS_PRODUCED)?
            .fetch_add(1, Ordering::Relaxed);
        self.word64(header::BYTES_PRODUCED)?
            .fetch_add(u64::from(r.need), Ordering::Relaxed);
        Ok(())
    }

    /// Writes the closer's fields (ordered before its commit by the commit's release).
    fn close_generation(&self, g: u64, end: u32, closer: u16, extra_flags: u32) -> Result<()> {
        self.slot_word(g, slot::END)?.store(end, Ordering::Relaxed);
        self.slot_word(g, slot::CLOSER)?
            .store(u32::from(closer), Ordering::Relaxed);
        self.slot_word(g, slot::FLAGS)?
            .store(slot_flags::FULL | extra_flags, Ordering::Relaxed);
        Ok(())
    }

    /// The release add of a commit; wakes the engine when it completes the slot.
    pub fn commit_bytes(&self, g: u64, bytes: u32) -> Result<()> {
        let before = self
            .slot_word(g, slot::COMMITTED)?
            .fetch_add(bytes, Ordering::Release);
        if before.wrapping_add(bytes) == self.layout.capacity() {
            self.nudge();
        }
        Ok(())
    }

    /// Closes the generation being filled, if anything was reserved in it, as a flush: the
    /// cursor jumps to the next slot boundary, the closer's fields are written, but the gap is
    /// *not* committed yet — the caller commits it with [`Shared::commit_bytes`] once it has
    /// prepared the drain of the short slot.
    pub fn flush_close(&self) -> Result<Option<FlushClose>> {
        let p = u64::from(self.layout.capacity());
        let cursor = self.cursor()?;
        loop {
            let pos = cursor.load(Ordering::Acquire);
            let (g, off) = self.layout.split_position(pos);
            if off == 0 {
                return Ok(None);
            }
            if cursor
                .compare_exchange_weak(pos, (g + 1) * p, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                self.close_generation(g, off, HOST_FLUSH_PRODUCER, slot_flags::FLUSHED)?;
                return Ok(Some(FlushClose {
                    generation: g,
                    end: off,
                }));
            }
        }
    }
}

impl Shared {
    /// Claims `count` whole generations for a producer that fills them alone (the PM4
    /// producer): a partly filled generation at the cursor is closed first, as any producer
    /// whose record does not fit would close it. Returns the first claimed generation. The
    /// claimed slots need not be drained yet; their producer waits for them itself.
    pub fn claim_whole(&self, count: u64, closer: u16) -> Result<u64> {
        let p = u64::from(self.layout.capacity());
        let cursor = self.cursor()?;
        loop {
            let pos = cursor.load(Ordering::Acquire);
            let (g, off) = self.layout.split_position(pos);
            if off > 0 {
                if cursor
                    .compare_exchange_weak(pos, (g + 1) * p, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    self.close_generation(g, off, closer, 0)?;
                    self.commit_bytes(g, (p - u64::from(off)) as u32)?;
                }
                continue;
            }
            let end = g
                .checked_add(count)
                .and_then(|e| e.checked_mul(p))
                .ok_or_else(|| Error::config("the stream position overflows"))?;
            if cursor
                .compare_exchange_weak(pos, end, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(g);
            }
        }
    }

    /// Adds to the produced counters (for producers that commit without CPU atomics).
    pub fn count_produced(&self, records: u64, bytes: u64) -> Result<()> {
        self.word64(header::RECORDS_PRODUCED)?
            .fetch_add(records, Ordering::Relaxed);
        self.word64(header::BYTES_PRODUCED)?
            .fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }
}
