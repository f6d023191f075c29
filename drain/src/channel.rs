//! The channel: the device buffer, the drain queue pre-loaded with per-slot programs, the host
//! ring they copy into, and the reading side — `read`, zero-copy chunks, records.

// Calls `host_view::drained_bytes`, whose contract (no engine writes a borrowed slot) the
// channel keeps by its slot discipline.
#![allow(unsafe_code)]

use crate::clock::GpuClock;
use crate::config::{ChannelConfig, LossPolicy, Trigger, WaitStrategy};
use crate::error::{Error, Result};
use crate::host_view::drained_bytes;
use crate::layout::{
    buffer_flags, header, slot, slot_flags, Layout, RecordBuf, Records, HEADER_PAGE_BYTES,
    SLOT_HEADER_BYTES,
};
use crate::producer::HostProducer;
use crate::program::{Drainer, Targets, Watcher};
use crate::protocol::Shared;
use crate::stats::{LatencyHistogram, Stats};
use pm4::fields::CompareFunction;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thunk::{AllocOptions, Event, EventKind, Gpu, Memory, MemoryKind, WaitStatus};

/// Byte offsets in the channel's control page (host memory the drain engine writes).
pub mod control {
    /// u32: generations drained so far (modulo 2³²): the drain fence.
    pub const DRAINED: u64 = 0x00;
    /// u32: kernel-end watches completed (modulo 2³²).
    pub const KERNEL_ENDS: u64 = 0x04;
    /// u64 per host slot: GPU timestamp of the moment the slot's generation became full.
    pub const TIMESTAMPS: u64 = 0x40;
}

/// The longest single event wait; waits are re-armed, so a lost interrupt costs at most this.
const MAX_EVENT_WAIT: Duration = Duration::from_millis(100);

/// A comparison of [`SignalWait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// `value == reference`.
    Equal,
    /// `value != reference`.
    NotEqual,
    /// `value < reference`.
    Less,
    /// `value <= reference`.
    LessEqual,
    /// `value > reference`.
    Greater,
    /// `value >= reference`.
    GreaterEqual,
}

impl Condition {
    fn function(self) -> CompareFunction {
        match self {
            Condition::Equal => CompareFunction::Equal,
            Condition::NotEqual => CompareFunction::NotEqual,
            Condition::Less => CompareFunction::Less,
            Condition::LessEqual => CompareFunction::LessEqual,
            Condition::Greater => CompareFunction::Greater,
            Condition::GreaterEqual => CompareFunction::GreaterEqual,
        }
    }
}

/// An application completion signal to drain at: the 32-bit word at `address`, masked, compared
/// with `reference` (the engines' waits compare 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalWait {
    /// GPU address of the word (4-byte aligned, mapped on the channel's GPU).
    pub address: u64,
    /// How to compare.
    pub condition: Condition,
    /// What to compare with.
    pub reference: u32,
    /// Mask applied to the word first.
    pub mask: u32,
}

impl SignalWait {
    /// The word at `address` compared with `reference`, unmasked.
    pub fn new(address: u64, condition: Condition, reference: u32) -> Self {
        SignalWait {
            address,
            condition,
            reference,
            mask: u32::MAX,
        }
    }

    /// An HSA completion signal (`amd_signal_t`, whose value is the i64 at byte 8) reaching 0,
    /// as it does when the kernel it was attached to completes. `signal` is the signal's
    /// address. Only the low 32 bits of the value are compared.
    pub fn hsa_completion(signal: u64) -> Self {
        Self::new(signal + 8, Condition::Equal, 0)
    }
}

/// What [`Channel::close`] and [`Channel::finish`] give back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    /// Record bytes that had reached host memory but were not read yet, in order.
    pub unread: Vec<u8>,
    /// The counters at the end.
    pub stats: Stats,
    /// For [`Channel::finish`]: whether everything committed before the call was drained
    /// within the timeout. Always true for [`Channel::close`].
    pub complete: bool,
}

#[derive(Clone, Copy, Debug)]
struct Current {
    generation: u64,
    offset: u32,
    end: u32,
    flags: u32,
    closer: u16,
}

/// A drain channel: a GPU-side trace buffer, the tool's own raw queue that drains it, and a
/// reader on the CPU side.
///
/// ```
/// # fn main() -> Result<(), drain::Error> {
/// use drain::{Channel, ChannelConfig};
/// let kfd = thunk::Kfd::open_with(thunk::OpenOptions::model(thunk::Preset::Gfx900, 1))?;
/// let gpu = kfd.gpu(0).unwrap();
/// let mut channel = Channel::new(&gpu, ChannelConfig::new(1024, 4))?;
/// let mut producer = channel.host_producer(1);
/// // 12 records of 72 + 8 bytes fill one 960-byte record area: the slot drains by itself.
/// for i in 0..12u8 {
///     producer.produce(3, &[i; 72])?;
/// }
/// let mut first = [0u8; 80];
/// channel.read_exact(&mut first)?;
/// assert_eq!(u32::from_le_bytes(first[..4].try_into().unwrap()), 72); // payload length
/// assert_eq!(&first[8..], &[0u8; 72][..]);
/// # Ok(()) }
/// ```
pub struct Channel {
    // Queues first: dropping them stops the engines before the memory they write goes.
    watcher: Option<Watcher>,
    drainer: Option<Drainer>,
    event: Option<Event>,
    slot_full: Option<Event>,
    host: Memory,
    ctrl: Memory,
    shared: Arc<Shared>,
    config: ChannelConfig,
    consumed: u64,
    loaded: u64,
    drained: u64,
    current: Option<Current>,
    /// Generations a flush closed before their program was queued: (generation, end).
    short: VecDeque<(u64, u32)>,
    next_flush: Option<Instant>,
    kernel_ends: u64,
    bytes_drained: u64,
    bytes_consumed: u64,
    flushes: u64,
    latency: LatencyHistogram,
    clock: GpuClock,
    deferred: Option<Error>,
    next_producer_check: u16,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("layout", &self.shared.layout)
            .field("trigger", &self.config.trigger)
            .field("consumed", &self.consumed)
            .field("drained", &self.drained)
            .field("loaded", &self.loaded)
            .finish_non_exhaustive()
    }
}

impl Channel {
    /// Builds a channel on `gpu`: allocates the device buffer (fine-grained GTT), the host
    /// ring and the control page, creates the drain queue (and for [`Trigger::KernelEnd`] the
    /// watch queue), the event for [`WaitStrategy::Event`], and pre-loads one drain program
    /// per host slot.
    pub fn new(gpu: &Gpu, config: ChannelConfig) -> Result<Channel> {
        config.validate()?;
        let probe = Layout::new(0, config.slot_size, config.slot_count)
            .ok_or_else(|| Error::config("the buffer layout does not fit the address space"))?;
        let buffer =
            gpu.alloc_with(&AllocOptions::new(MemoryKind::Gtt, probe.total_bytes()).coherent())?;
        let layout = Layout::new(buffer.gpu_va(), config.slot_size, config.slot_count)
            .ok_or_else(|| Error::config("the buffer layout does not fit the address space"))?;
        init_buffer(&buffer, &layout, config.loss)?;
        let host_bytes = u64::from(config.host_slots) * u64::from(config.slot_size);
        let host = gpu.alloc(MemoryKind::Gtt, host_bytes)?;
        let ctrl_bytes = control::TIMESTAMPS + 8 * u64::from(config.host_slots);
        let ctrl = gpu.alloc_with(&AllocOptions::new(MemoryKind::Gtt, ctrl_bytes).coherent())?;
        let kfd = gpu.kfd();
        let event = match config.wait {
            WaitStrategy::Event => Some(kfd.create_event(EventKind::Signal, true)?),
            WaitStrategy::Poll => None,
        };
        let signal = match &event {
            Some(e) => Some(e.signal_target().ok_or_else(|| {
                Error::config("the channel's signal event has no event-page slot")
            })?),
            None => None,
        };
        let targets = Targets {
            layout,
            host_base: host.gpu_va(),
            host_slots: config.host_slots,
            drained_addr: ctrl.gpu_addr(control::DRAINED),
            timestamps_addr: ctrl.gpu_addr(control::TIMESTAMPS),
            signal,
        };
        let slot_full = if config.notify_full {
            let e = kfd.create_event(EventKind::Signal, true)?;
            let t = e
                .signal_target()
                .ok_or_else(|| Error::config("the slot-full event has no event-page slot"))?;
            buffer.store_u32(header::NOTIFY_EVENT_ID, t.int_ctxid)?;
            buffer.store_u32(header::NOTIFY_VALUE, t.value)?;
            buffer.store_u64(header::NOTIFY_MAILBOX, t.slot_address)?;
            Some(e)
        } else {
            None
        };
        let drainer = Drainer::new(gpu, config.engine, targets)?;
        let watcher = match config.trigger {
            Trigger::KernelEnd => Some(Watcher::new(gpu, config.engine)?),
            _ => None,
        };
        let next_flush = match config.trigger {
            Trigger::Periodic(p) => Some(Instant::now() + p),
            _ => None,
        };
        log::debug!(
            target: "drain",
            "channel on gpu {:#x}: {} slots of {} bytes at {:#x}, {} host slots at {:#x}, {:?}, {:?}, {:?}, {:?} queue {}",
            gpu.id(), config.slot_count, config.slot_size, layout.base(), config.host_slots,
            host.gpu_va(), config.trigger, config.wait, config.loss, config.engine, drainer.queue.id()
        );
        let shared = Arc::new(Shared {
            kfd,
            gpu: gpu.clone(),
            buffer,
            layout,
            drop_mode: config.loss == LossPolicy::Drop,
            producers_waiting: AtomicU32::new(0),
        });
        let mut channel = Channel {
            watcher,
            drainer: Some(drainer),
            event,
            slot_full,
            host,
            ctrl,
            clock: GpuClock::new(gpu),
            shared,
            config,
            consumed: 0,
            loaded: 0,
            drained: 0,
            current: None,
            short: VecDeque::new(),
            next_flush,
            kernel_ends: 0,
            bytes_drained: 0,
            bytes_consumed: 0,
            flushes: 0,
            latency: LatencyHistogram::default(),
            deferred: None,
            next_producer_check: 0,
        };
        channel.top_up()?;
        Ok(channel)
    }

    /// Where the device buffer is and how it is laid out: what a device-side producer needs.
    pub fn layout(&self) -> &Layout {
        &self.shared.layout
    }

    /// The configuration.
    pub fn config(&self) -> &ChannelConfig {
        &self.config
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.shared.gpu
    }

    /// The device buffer (header page and slots), for tools that inspect it.
    pub fn device_buffer(&self) -> &Memory {
        &self.shared.buffer
    }

    /// The id of the event drained slots signal (event waits only).
    pub fn event_id(&self) -> Option<u32> {
        self.event.as_ref().map(Event::id)
    }

    /// The event device producers signal with an `s_sendmsg` interrupt each time they fill
    /// a slot ([`ChannelConfig::notify_full`]): amdkfd's interrupt handler matches the
    /// interrupt's data (the event id) against the event page and wakes its waiters.
    pub fn slot_full_event(&self) -> Option<&Event> {
        self.slot_full.as_ref()
    }

    /// Points a device producer library linked into `executable` (the `kfd_drain_buffer`
    /// variable of `drain/device/producer.cl`, see [`crate::device`]) at this channel's
    /// buffer. Do it before dispatching the kernels that produce.
    pub fn attach(&self, executable: &thunk::Executable) -> Result<()> {
        let base = self.shared.layout.base();
        executable.write_variable(crate::device::BUFFER_VARIABLE, &base.to_le_bytes())?;
        Ok(())
    }

    /// The id of the drain queue.
    pub fn queue_id(&self) -> Option<u32> {
        self.drainer.as_ref().map(|d| d.queue.id())
    }

    /// A producer for a CPU thread, writing records with producer id `id`.
    pub fn host_producer(&self, id: u16) -> HostProducer {
        HostProducer::new(self.shared.clone(), id, self.config.producer_timeout)
    }

    /// A producer that runs PM4 programs on a compute queue of its own (see
    /// [`crate::Pm4Producer`]).
    pub fn pm4_producer(&self, id: u16) -> Result<crate::Pm4Producer> {
        crate::Pm4Producer::new(self.shared.clone(), id)
    }

    /// Drains at kernel end: when the word `wait` names meets its condition, the slot being
    /// filled is closed and drained. The wait runs on the channel's watch queue, in the order
    /// the calls were made. Returns the watch's index (0, 1, …). Needs [`Trigger::KernelEnd`].
    pub fn drain_at(&mut self, wait: SignalWait) -> Result<u64> {
        self.refresh_kernel_ends()?;
        let completed = self.kernel_ends;
        let signal = self.drainer.as_ref().and_then(|d| d.t.signal);
        let ends_addr = self.ctrl.gpu_addr(control::KERNEL_ENDS);
        let watcher = self.watcher.as_mut().ok_or_else(|| {
            Error::config(format!(
                "drain_at needs a channel built with Trigger::KernelEnd (this one is {:?})",
                self.config.trigger
            ))
        })?;
        if wait.address % 4 != 0 {
            return Err(Error::config(format!(
                "the completion signal word at {:#x} is not 4-byte aligned",
                wait.address
            )));
        }
        let pending = watcher.submitted - completed.min(watcher.submitted);
        if pending >= watcher.capacity {
            return Err(Error::config(format!(
                "{pending} kernel-end drains are already pending, the most the watch queue holds; \
                 read from the channel so they complete, then add more"
            )));
        }
        watcher.push_watch(
            wait.address,
            wait.condition.function(),
            wait.reference,
            wait.mask,
            ends_addr,
            signal.as_ref(),
        )?;
        let index = watcher.submitted - 1;
        self.shared.nudge();
        Ok(index)
    }

    /// Closes the slot being filled if anything was reserved in it, so that it drains as
    /// soon as its producers have committed — a partial slot, copied up to its last record.
    /// Returns whether a slot was closed.
    pub fn flush(&mut self) -> Result<bool> {
        let Some(c) = self.shared.flush_close()? else {
            return Ok(false);
        };
        let copy = Drainer::short_copy(c.end);
        if c.generation < self.loaded {
            if let Some(d) = &self.drainer {
                d.write_copy(c.generation, copy)?;
            }
        } else {
            self.short.push_back((c.generation, c.end));
        }
        let gap = self.shared.layout.capacity() - c.end;
        self.shared.commit_bytes(c.generation, gap)?;
        self.shared.nudge();
        self.flushes += 1;
        log::trace!(target: "drain", "flushed generation {} at {} bytes", c.generation, c.end);
        Ok(true)
    }

    /// The next drained slot's records, borrowed from the host ring without a copy; `None`
    /// if nothing arrived within `timeout` (`None` waits without limit). Dropping the chunk
    /// hands the host slot back to the drain engine. After a partial [`Channel::read`], the
    /// chunk holds the rest of the slot (which may start inside a record).
    pub fn next_chunk(&mut self, timeout: Option<Duration>) -> Result<Option<Chunk<'_>>> {
        if self.current.is_none() {
            let deadline = timeout.map(|t| Instant::now() + t);
            if !self.wait_ready(deadline)? {
                return Ok(None);
            }
            self.open_current()?;
        }
        let Some(cur) = self.current else {
            return Ok(None);
        };
        let offset = self.host_records_offset(cur.generation) + u64::from(cur.offset);
        let len = (cur.end - cur.offset) as usize;
        // SAFETY: `cur` is a host slot this reader saw drained (acquire load of its fence in
        // `wait_ready`/`open_current`) and has not released: no engine writes it until
        // `&mut self` is free again. (Checked here so that `Chunk::bytes` cannot fail.)
        unsafe { drained_bytes(&self.host, offset, len) }?;
        Ok(Some(Chunk {
            channel: self,
            current: cur,
            offset,
            len,
        }))
    }

    /// Fills `buf` with drained record bytes in order (records framed as in
    /// [`crate::layout`]), waiting up to the configured read timeout for the first byte, then
    /// taking only what has already arrived. Returns the bytes read (at least one).
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let deadline = Instant::now() + self.config.read_timeout;
        self.read_until(buf, Some(deadline))
    }

    /// As [`Channel::read`] without waiting: 0 when nothing has arrived.
    pub fn try_read(&mut self, buf: &mut [u8]) -> Result<usize> {
        match self.read_until(buf, Some(Instant::now())) {
            Err(Error::Timeout(_)) => Ok(0),
            other => other,
        }
    }

    /// Reads exactly `buf.len()` bytes (each wait bounded by the read timeout).
    pub fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let rest = buf.get_mut(done..).unwrap_or_default();
            done += self.read(rest)?;
        }
        Ok(())
    }

    fn read_until(&mut self, buf: &mut [u8], deadline: Option<Instant>) -> Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            if self.current.is_none() {
                let ready = if n == 0 {
                    self.wait_ready(deadline)?
                } else {
                    self.service()?;
                    self.drained > self.consumed
                };
                if !ready {
                    break;
                }
                self.open_current()?;
            }
            let Some(cur) = self.current else {
                break;
            };
            let take = ((cur.end - cur.offset) as usize).min(buf.len() - n);
            let at = self.host_records_offset(cur.generation) + u64::from(cur.offset);
            if let Some(dst) = buf.get_mut(n..n + take) {
                self.host.read(at, dst)?;
            }
            n += take;
            self.bytes_consumed += take as u64;
            if cur.offset + take as u32 == cur.end {
                self.release_current();
            } else if let Some(c) = self.current.as_mut() {
                c.offset += take as u32;
            }
        }
        if n == 0 && !buf.is_empty() {
            return Err(Error::Timeout(format!(
                "no drained data within {:?} ({} slots drained, {} read)",
                self.config.read_timeout, self.drained, self.consumed
            )));
        }
        Ok(n)
    }

    /// The records, one by one, copied out of the host ring; the iterator ends when nothing
    /// arrives for `idle`. Corrupt bytes end it with an error.
    pub fn records(&mut self, idle: Duration) -> RecordStream<'_> {
        RecordStream {
            channel: self,
            idle,
            pending: VecDeque::new(),
            error: None,
            done: false,
        }
    }

    /// Polls once: publishes what the drain engine finished, runs a due periodic or
    /// kernel-end flush, tops the program ring up. Reading does this by itself; call it when
    /// the reader is busy elsewhere for long.
    pub fn poll(&mut self) -> Result<()> {
        self.service()
    }

    /// The counters, after publishing what the drain engine has finished.
    pub fn stats(&mut self) -> Stats {
        if let Err(e) = self.refresh() {
            self.deferred.get_or_insert(e);
        }
        self.counters()
    }

    fn counters(&self) -> Stats {
        let load64 = |f: u64| {
            self.shared
                .header_word64(f)
                .map(|a| a.load(Ordering::Relaxed))
                .unwrap_or(0)
        };
        let (g, off) = self.shared.layout.split_position(load64(header::CURSOR));
        let reserved = g + u64::from(off > 0);
        Stats {
            records_produced: load64(header::RECORDS_PRODUCED),
            bytes_produced: load64(header::BYTES_PRODUCED),
            records_dropped: load64(header::RECORDS_DROPPED),
            bytes_dropped: load64(header::BYTES_DROPPED),
            bytes_drained: self.bytes_drained,
            slots_drained: self.drained,
            bytes_consumed: self.bytes_consumed,
            slots_in_flight: reserved.saturating_sub(self.drained),
            host_slots_ready: self.drained - self.consumed,
            flushes: self.flushes,
            kernel_ends: self.kernel_ends,
            drain_latency: self.latency.summary(),
            producers_waiting: u64::from(self.shared.producers_waiting.load(Ordering::Relaxed)),
            producer_stalls: load64(header::PRODUCER_STALLS),
            slots_notified: load64(header::SLOTS_NOTIFIED),
        }
    }

    /// Tears the channel down now: producers are told to stop, the queues are destroyed, the
    /// bytes already drained but not read are returned, and the event and memory are
    /// released (the device buffer once the last producer is dropped too).
    pub fn close(mut self) -> Result<Closed> {
        let unread = self.stop_and_collect()?;
        Ok(Closed {
            unread,
            stats: self.counters(),
            complete: true,
        })
    }

    /// Flushes, waits up to `timeout` until everything committed so far has drained,
    /// collects it, then closes as [`Channel::close`]. `complete` says whether it all came.
    pub fn finish(mut self, timeout: Duration) -> Result<Closed> {
        let deadline = Instant::now() + timeout;
        self.flush()?;
        let cursor = self.shared.cursor()?.load(Ordering::Acquire);
        let (g, off) = self.shared.layout.split_position(cursor);
        let target = g + u64::from(off > 0);
        let mut out = Vec::new();
        let mut complete = true;
        while self.consumed < target {
            if self.current.is_none() {
                if !self.wait_ready(Some(deadline))? {
                    complete = false;
                    break;
                }
                self.open_current()?;
            }
            self.take_current_into(&mut out)?;
        }
        out.extend(self.stop_and_collect()?);
        Ok(Closed {
            unread: out,
            stats: self.counters(),
            complete,
        })
    }

    fn stop_and_collect(&mut self) -> Result<Vec<u8>> {
        self.shared.set_closed()?;
        // Destroying the queues stops every write into the host ring before it is read.
        self.watcher = None;
        self.drainer = None;
        self.refresh()?;
        let mut out = Vec::new();
        while self.current.is_some() || self.consumed < self.drained {
            if self.current.is_none() {
                self.open_current()?;
            }
            self.take_current_into(&mut out)?;
        }
        log::debug!(target: "drain", "closed: {} unread bytes returned", out.len());
        Ok(out)
    }

    fn take_current_into(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if let Some(cur) = self.current {
            let at = self.host_records_offset(cur.generation) + u64::from(cur.offset);
            let n = (cur.end - cur.offset) as usize;
            let start = out.len();
            out.resize(start + n, 0);
            if let Some(dst) = out.get_mut(start..) {
                self.host.read(at, dst)?;
            }
            self.bytes_consumed += n as u64;
            self.release_current();
        }
        Ok(())
    }

    fn host_slot_offset(&self, generation: u64) -> u64 {
        (generation % u64::from(self.config.host_slots)) * u64::from(self.config.slot_size)
    }

    fn host_records_offset(&self, generation: u64) -> u64 {
        self.host_slot_offset(generation) + u64::from(SLOT_HEADER_BYTES)
    }

    /// Reads and checks the header of drained generation `g` in the host ring.
    fn host_header(&self, g: u64) -> Result<Current> {
        let mut h = [0u8; 20];
        self.host.read(self.host_slot_offset(g), &mut h)?;
        let word = |field: u64| {
            let f = field as usize;
            let mut b = [0u8; 4];
            b.copy_from_slice(h.get(f..f + 4).unwrap_or(&[0; 4]));
            u32::from_le_bytes(b)
        };
        let seq = word(slot::SEQUENCE);
        let committed = word(slot::COMMITTED);
        let end = word(slot::END);
        let flags = word(slot::FLAGS);
        let closer = word(slot::CLOSER);
        let p = self.shared.layout.capacity();
        if seq != g as u32 {
            return Err(Error::corrupt(
                g,
                format!("its copy carries sequence {seq}, not {}", g as u32),
            ));
        }
        if committed != p {
            return Err(Error::corrupt(
                g,
                format!("it was copied with {committed} of {p} bytes committed"),
            ));
        }
        if flags & slot_flags::FULL == 0 {
            return Err(Error::corrupt(
                g,
                format!("it was copied without the FULL flag (flags {flags:#x})"),
            ));
        }
        if end > p {
            return Err(Error::corrupt(
                g,
                format!("its records end at {end}, past the {p}-byte record area"),
            ));
        }
        Ok(Current {
            generation: g,
            offset: 0,
            end,
            flags,
            closer: (closer & 0xFFFF) as u16,
        })
    }

    fn open_current(&mut self) -> Result<()> {
        if self.current.is_none() && self.consumed < self.drained {
            self.current = Some(self.host_header(self.consumed)?);
        }
        Ok(())
    }

    fn release_current(&mut self) {
        if self.current.take().is_some() {
            self.consumed += 1;
            if let Err(e) = self.top_up() {
                self.deferred.get_or_insert(e);
            }
        }
    }

    /// Queues drain programs for every host slot that is free.
    fn top_up(&mut self) -> Result<()> {
        let Some(d) = self.drainer.as_mut() else {
            return Ok(());
        };
        let limit = self.consumed + u64::from(self.config.host_slots);
        let mut queued = false;
        while self.loaded < limit {
            let g = self.loaded;
            let copy = match self.short.front() {
                Some(&(sg, end)) if sg == g => {
                    self.short.pop_front();
                    Drainer::short_copy(end)
                }
                _ => d.full_copy(),
            };
            d.push_program(g, copy)?;
            self.loaded += 1;
            queued = true;
        }
        if queued {
            d.submit()?;
            self.shared.nudge();
        }
        Ok(())
    }

    fn refresh(&mut self) -> Result<()> {
        let raw = self.ctrl.load_u32(control::DRAINED)?;
        let delta = u64::from(raw.wrapping_sub(self.drained as u32));
        if delta == 0 {
            return Ok(());
        }
        if self.drained + delta > self.loaded {
            return Err(Error::corrupt(
                self.drained,
                format!(
                    "the drain fence says {} generations drained, but only {} programs were queued",
                    self.drained + delta,
                    self.loaded
                ),
            ));
        }
        for g in self.drained..self.drained + delta {
            let h = g % u64::from(self.config.host_slots);
            let stamp = self.ctrl.load_u64(control::TIMESTAMPS + 8 * h)?;
            if let Some(age) = self.clock.age(stamp) {
                self.latency.record(age);
            }
            let mut b = [0u8; 4];
            self.host
                .read(self.host_slot_offset(g) + slot::END, &mut b)?;
            self.bytes_drained +=
                u64::from(u32::from_le_bytes(b).min(self.shared.layout.capacity()));
        }
        self.drained += delta;
        Ok(())
    }

    fn refresh_kernel_ends(&mut self) -> Result<bool> {
        let raw = self.ctrl.load_u32(control::KERNEL_ENDS)?;
        let delta = u64::from(raw.wrapping_sub(self.kernel_ends as u32));
        self.kernel_ends += delta;
        Ok(delta > 0)
    }

    fn service(&mut self) -> Result<()> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        self.refresh()?;
        if self.watcher.is_some() && self.refresh_kernel_ends()? {
            self.flush()?;
        }
        if let (Trigger::Periodic(p), Some(due)) = (self.config.trigger, self.next_flush) {
            let now = Instant::now();
            if now >= due {
                self.flush()?;
                self.next_flush = Some(now + p);
            }
        }
        // Producers in drop mode never wait, so nothing else notices a stalled engine; a
        // cheap periodic nudge keeps the model's engine looking while data is pending.
        self.next_producer_check = self.next_producer_check.wrapping_add(1);
        if self.next_producer_check % 1024 == 0 && self.loaded > self.drained {
            self.shared.nudge();
        }
        self.top_up()
    }

    /// Waits until a drained slot is ready to read or `deadline` passes.
    fn wait_ready(&mut self, deadline: Option<Instant>) -> Result<bool> {
        let mut spins = 0u32;
        loop {
            self.service()?;
            if self.drained > self.consumed {
                return Ok(true);
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(false);
            }
            let until = match (deadline, self.next_flush) {
                (Some(d), Some(f)) => Some(d.min(f)),
                (d, f) => d.or(f),
            };
            match (&self.event, self.config.wait) {
                (Some(event), WaitStrategy::Event) => {
                    let t = until
                        .map(|u| u.saturating_duration_since(now))
                        .unwrap_or(MAX_EVENT_WAIT)
                        .min(MAX_EVENT_WAIT);
                    if !t.is_zero() {
                        match event.wait(Some(t))? {
                            WaitStatus::Signaled | WaitStatus::TimedOut => {}
                        }
                    }
                }
                _ => {
                    spins = spins.wrapping_add(1);
                    if spins % 64 == 0 {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
            }
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // Producers (which may outlive the channel) stop instead of waiting forever.
        if let Err(e) = self.shared.set_closed() {
            log::warn!(target: "drain", "closing the channel: {e}");
        }
    }
}

impl std::io::Read for Channel {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        Channel::read(self, buf).map_err(Into::into)
    }
}

/// One drained slot's records, borrowed from the host ring (see [`Channel::next_chunk`]).
/// Dropping it releases the host slot to the drain engine.
pub struct Chunk<'a> {
    channel: &'a mut Channel,
    current: Current,
    offset: u64,
    len: usize,
}

impl std::fmt::Debug for Chunk<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunk")
            .field("generation", &self.current.generation)
            .field("len", &self.len)
            .field("flags", &self.current.flags)
            .finish()
    }
}

impl Chunk<'_> {
    /// The record bytes.
    pub fn bytes(&self) -> &[u8] {
        // Range checked when the chunk was made; the mapping cannot change while it lives.
        // SAFETY: the chunk borrows the channel mutably and holds a drained, unreleased host
        // slot: the drain program that would write it is queued only after the chunk is gone.
        unsafe { drained_bytes(&self.channel.host, self.offset, self.len) }.unwrap_or_default()
    }

    /// The records (zero-copy).
    pub fn records(&self) -> Records<'_> {
        Records::new(self.bytes())
    }

    /// Bytes in the chunk.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the chunk is empty (a flush of a slot holding nothing, or a slot whose bytes
    /// a partial read already took).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot generation (0 for the first slot filled, then 1, 2, …).
    pub fn generation(&self) -> u64 {
        self.current.generation
    }

    /// The slot flags ([`crate::layout::slot_flags`]).
    pub fn flags(&self) -> u32 {
        self.current.flags
    }

    /// Whether a flush closed the slot before it was full.
    pub fn flushed(&self) -> bool {
        self.current.flags & slot_flags::FLUSHED != 0
    }

    /// The producer that closed the slot ([`crate::layout::HOST_FLUSH_PRODUCER`] for a flush).
    pub fn closer(&self) -> u16 {
        self.current.closer
    }
}

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        self.channel.bytes_consumed += self.len as u64;
        self.channel.release_current();
    }
}

/// Records as owned values, from [`Channel::records`].
pub struct RecordStream<'a> {
    channel: &'a mut Channel,
    idle: Duration,
    pending: VecDeque<RecordBuf>,
    error: Option<Error>,
    done: bool,
}

impl std::fmt::Debug for RecordStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordStream")
            .field("idle", &self.idle)
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl Iterator for RecordStream<'_> {
    type Item = Result<RecordBuf>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Some(Ok(r));
            }
            // The records before a corrupt one come out first, then the error, then nothing.
            if let Some(e) = self.error.take() {
                self.done = true;
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
            let chunk = match self.channel.next_chunk(Some(self.idle)) {
                Ok(Some(c)) => c,
                Ok(None) => return None,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let generation = chunk.generation();
            for r in chunk.records() {
                match r {
                    Ok(r) => self.pending.push_back(r.to_owned_record()),
                    Err(e) => {
                        self.error = Some(Error::corrupt(generation, e.to_string()));
                        break;
                    }
                }
            }
        }
    }
}

/// Writes the header page and every slot header of a new buffer.
fn init_buffer(buffer: &Memory, layout: &Layout, loss: LossPolicy) -> Result<()> {
    let flags = match loss {
        LossPolicy::Lossless => 0,
        LossPolicy::Drop => buffer_flags::DROP,
    };
    buffer.fill(0, HEADER_PAGE_BYTES, 0)?;
    buffer.store_u64(header::MAGIC, crate::layout::MAGIC)?;
    buffer.store_u32(header::VERSION, crate::layout::LAYOUT_VERSION)?;
    buffer.store_u32(header::HEADER_BYTES, HEADER_PAGE_BYTES as u32)?;
    buffer.store_u32(header::SLOT_SIZE, layout.slot_size())?;
    buffer.store_u32(header::SLOT_COUNT, layout.slot_count())?;
    buffer.store_u32(header::SLOT_HEADER_BYTES, SLOT_HEADER_BYTES)?;
    buffer.store_u32(header::FLAGS, flags)?;
    for i in 0..layout.slot_count() {
        let at = layout.slot_offset(i);
        buffer.fill(at, u64::from(SLOT_HEADER_BYTES), 0)?;
        buffer.store_u32(at + slot::SEQUENCE, i)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::EngineQueue;
    use thunk::{OpenOptions, Preset};

    fn lo(a: u64) -> u32 {
        a as u32
    }

    fn hi(a: u64) -> u32 {
        (a >> 32) as u32
    }

    fn queued(ch: &Channel) -> (Vec<u32>, &EngineQueue) {
        let d = ch.drainer.as_ref().unwrap();
        let words = match &d.queue {
            EngineQueue::Sdma(q) => q.ring().read_dwords(0, (q.wptr().get() / 4) as usize),
            EngineQueue::Pm4(q) => q.ring().read_dwords(0, q.wptr().get() as usize),
        };
        (words.unwrap(), &d.queue)
    }

    #[test]
    fn channels_and_producers_move_between_threads() {
        fn send<T: Send>() {}
        send::<Channel>();
        send::<crate::HostProducer>();
        send::<crate::Pm4Producer>();
        send::<Closed>();
    }

    /// The pre-loaded SDMA programs, dword by dword (facts §5, §8.2).
    #[test]
    fn sdma_drain_programs_are_the_documented_packets() {
        let kfd = thunk::Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1)).unwrap();
        let gpu = kfd.gpu(0).unwrap();
        let mut ch = Channel::new(&gpu, ChannelConfig::new(4096, 3).host_slots(2)).unwrap();
        let l = *ch.layout();
        let host = ch.host.gpu_va();
        let ctrl = ch.ctrl.gpu_va();
        let signal = ch.event.as_ref().unwrap().signal_target().unwrap();
        let (w, _) = queued(&ch);
        assert_eq!(w.len(), 2 * 37, "two programs of 37 dwords");
        for (g, p) in w.chunks_exact(37).enumerate() {
            let g = g as u64;
            let slot_addr = l.slot_addr(g as u32);
            let committed = slot_addr + slot::COMMITTED;
            let ts = ctrl + control::TIMESTAMPS + 8 * g;
            // POLL_REGMEM: op 8, func 3 (==) at [30:28], mem_poll [31]; reference P, mask all,
            // interval 10, retry 0xFFF.
            assert_eq!(
                p[..6],
                [
                    0xB000_0008,
                    lo(committed),
                    hi(committed),
                    4032,
                    u32::MAX,
                    0x0FFF_000A
                ]
            );
            // TIMESTAMP GET_GLOBAL: op 13, sub-op 2.
            assert_eq!(p[6..9], [0x0000_020D, lo(ts), hi(ts)]);
            // INDIRECT: op 4, the IB of host slot g (7 dwords: one COPY_LINEAR), no CSA.
            assert_eq!((p[9], p[12], p[13], p[14]), (4, 7, 0, 0));
            let ib = u64::from(p[10]) | u64::from(p[11]) << 32;
            // WRITE: op 2, 4 dwords (count N−1 = 3) of zeros at committed..closer.
            assert_eq!(p[15..23], [2, lo(committed), hi(committed), 3, 0, 0, 0, 0]);
            // FENCE: the slot's sequence becomes g + 3; then the drain fence g + 1.
            assert_eq!(p[23..27], [5, lo(slot_addr), hi(slot_addr), g as u32 + 3]);
            let drained = ctrl + control::DRAINED;
            assert_eq!(p[27..31], [5, lo(drained), hi(drained), g as u32 + 1]);
            // The event: FENCE of the trigger value into its slot, TRAP with its id.
            assert_eq!(
                p[31..35],
                [
                    5,
                    lo(signal.slot_address),
                    hi(signal.slot_address),
                    signal.value
                ]
            );
            assert_eq!(p[35..37], [6, signal.int_ctxid]);
            // The IB: COPY_LINEAR (op 1) of the whole slot (count = bytes − 1) to host slot g.
            let src = slot_addr;
            let dst = host + g * 4096;
            let d = ch.drainer.as_ref().unwrap();
            let ib_words = d_read(d, ib);
            assert_eq!(ib_words, [1, 4095, 0, lo(src), hi(src), lo(dst), hi(dst)]);
        }
        // A flush closes generation 0 at 16 bytes: its queued copy shrinks to header + records.
        ch.host_producer(1).produce(1, b"12345678").unwrap();
        assert!(ch.flush().unwrap());
        let d = ch.drainer.as_ref().unwrap();
        let (w, _) = queued(&ch);
        let ib = u64::from(w[10]) | u64::from(w[11]) << 32;
        assert_eq!(d_read(d, ib)[1], 64 + 16 - 1);
    }

    fn d_read(d: &Drainer, ib: u64) -> Vec<u32> {
        d.read_ib(ib)
    }

    /// The PM4 form: WAIT_REG_MEM, COPY_DATA of the clock, INDIRECT_BUFFER → DMA_DATA,
    /// WRITE_DATA, RELEASE_MEM ×2 (facts §4).
    #[test]
    fn pm4_drain_programs_are_the_documented_packets() {
        use pm4::decode::{Packet, Pm4Decoder};
        let kfd = thunk::Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1)).unwrap();
        let gpu = kfd.gpu(0).unwrap();
        let config = ChannelConfig::new(3 << 20, 2)
            .engine(crate::DrainEngine::Pm4)
            .wait(WaitStrategy::Poll);
        let ch = Channel::new(&gpu, config).unwrap();
        let l = *ch.layout();
        let (w, _) = queued(&ch);
        assert_eq!(
            w.len(),
            2 * (7 + 6 + 4 + 8 + 8 + 8),
            "no event signal when polling"
        );
        let names: Vec<&str> = Pm4Decoder::new(&w[..41], pm4::GfxGen::Gfx9)
            .map(|p| p.unwrap().packet.name())
            .collect();
        assert_eq!(
            names,
            [
                "WAIT_REG_MEM",
                "COPY_DATA",
                "INDIRECT_BUFFER",
                "WRITE_DATA",
                "RELEASE_MEM",
                "RELEASE_MEM"
            ]
        );
        let committed = l.slot_field(0, slot::COMMITTED);
        // WAIT_REG_MEM: header 0xC0053C00, function 3 (==) and memory space (1 << 4).
        assert_eq!(
            w[..6],
            [
                0xC005_3C00,
                0x13,
                lo(committed),
                hi(committed),
                (3 << 20) - 64,
                u32::MAX
            ]
        );
        // The IB: three 1 MiB DMA_DATA copies (the gfx9-safe size), cp_sync on the last.
        let Packet::IndirectBuffer(ib) = Pm4Decoder::new(&w[13..17], pm4::GfxGen::Gfx9)
            .next()
            .unwrap()
            .unwrap()
            .packet
        else {
            panic!("INDIRECT_BUFFER expected")
        };
        assert_eq!(ib.control.ib_size(), 21);
        let d = ch.drainer.as_ref().unwrap();
        let words = d.read_ib(ib.ib_addr());
        let copies: Vec<(u32, bool)> = Pm4Decoder::new(&words, pm4::GfxGen::Gfx9)
            .map(|p| match p.unwrap().packet {
                Packet::DmaData(d) => (d.command.byte_count(), d.control.cp_sync()),
                other => panic!("{}", other.name()),
            })
            .collect();
        assert_eq!(
            copies,
            [(1 << 20, false), (1 << 20, false), (1 << 20, true)]
        );
    }
}
