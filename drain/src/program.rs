//! The programs the drain queue runs, one per slot generation, pre-loaded ahead of time:
//!
//! | step | SDMA | PM4 (compute) |
//! |---|---|---|
//! | wait until the slot is full (`committed == P`) | POLL_REGMEM | WAIT_REG_MEM |
//! | stamp the time it became full | TIMESTAMP (global) | COPY_DATA from the GPU clock |
//! | copy the slot to its host slot | INDIRECT → COPY_LINEAR… | INDIRECT_BUFFER → DMA_DATA… |
//! | reset the slot's counters, then its sequence to `g + N` | WRITE, FENCE | WRITE_DATA, RELEASE_MEM |
//! | publish "generation `g` drained" (`g + 1`) | FENCE | RELEASE_MEM (32-bit) |
//! | signal the channel's event (event waits only) | FENCE + TRAP | RELEASE_MEM + interrupt |
//!
//! The copy runs from a small indirect buffer per host slot rather than from the ring, so
//! that a flush can shorten the copy of a slot it closed early (to the header and the
//! records) after the program was queued: the engine reads the IB only once the slot is full,
//! and the flush rewrites it before its commit makes the slot full.

use crate::config::DrainEngine;
use crate::error::{packet, Result};
use crate::layout::{slot, Layout, SLOT_HEADER_BYTES};
use pm4::fields::CompareFunction;
use pm4::sdma::{SdmaCopyLinear, SdmaIndirect, SdmaPollRegmem, SdmaTimestamp, TimestampOp};
use pm4::user::{
    CopyCountSel, CopyData, CopyDataControl, CopyDstSel, CopySrcSel, DmaData, DmaDataCommand,
    DmaDataControl, DmaDstSel, DmaSrcSel, IndirectBuffer, IndirectBufferControl, PollTarget,
    WaitArgs, WaitOperation, WaitRegMem, WriteData,
};
use pm4::{GfxGen, SdmaGen};
use thunk::packets::ReleaseMem;
use thunk::{
    AllocOptions, Gpu, Memory, MemoryKind, Pm4Queue, QueueOptions, SdmaQueue, SignalTarget,
};

/// Dwords of one SDMA drain program (with the event signal).
const SDMA_PROGRAM_DWORDS: usize = 6 + 3 + 6 + 8 + 4 + 4 + 4 + 2;
/// Dwords of one PM4 drain program (with the event signal).
const PM4_PROGRAM_DWORDS: usize = 7 + 6 + 4 + 8 + 8 + 8 + 8;
/// Dwords of one kernel-end watch.
const WATCH_DWORDS: usize = 8 + 8 + 8;
/// Bytes one PM4 DMA_DATA moves (within the gfx9-safe 2 MiB − 1).
const PM4_COPY_CHUNK: u64 = 1 << 20;
/// SDMA POLL_REGMEM retry count 0xFFF: poll until met.
const POLL_FOREVER: u16 = 0xFFF;
/// Poll interval of the waits (in the engines' clock units; 10 as amdgpu uses for fences).
const POLL_INTERVAL: u16 = 10;

/// A queue of either kind.
pub(crate) enum EngineQueue {
    Sdma(SdmaQueue),
    Pm4(Pm4Queue),
}

impl std::fmt::Debug for EngineQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineQueue::Sdma(q) => q.fmt(f),
            EngineQueue::Pm4(q) => q.fmt(f),
        }
    }
}

impl EngineQueue {
    pub fn create(gpu: &Gpu, engine: DrainEngine, ring_bytes: u32) -> Result<Self> {
        let opts = QueueOptions::new().ring_size(ring_bytes);
        Ok(match engine {
            DrainEngine::Sdma => EngineQueue::Sdma(gpu.create_sdma_queue(&opts)?),
            DrainEngine::Pm4 => EngineQueue::Pm4(gpu.create_pm4_queue(&opts)?),
        })
    }

    pub fn submit(&mut self) -> Result<()> {
        match self {
            EngineQueue::Sdma(q) => q.submit().map(drop)?,
            EngineQueue::Pm4(q) => q.submit().map(drop)?,
        }
        Ok(())
    }

    pub fn rollback(&mut self) {
        match self {
            EngineQueue::Sdma(q) => q.rollback(),
            EngineQueue::Pm4(q) => q.rollback(),
        }
    }

    pub fn id(&self) -> u32 {
        match self {
            EngineQueue::Sdma(q) => q.id(),
            EngineQueue::Pm4(q) => q.id(),
        }
    }

    /// Waits until `addr` (4-byte aligned) compares true against `reference` under `mask`.
    fn push_wait(
        &mut self,
        addr: u64,
        func: CompareFunction,
        reference: u32,
        mask: u32,
    ) -> Result<()> {
        match self {
            EngineQueue::Sdma(q) => {
                let p = SdmaPollRegmem::memory(
                    addr,
                    func,
                    reference,
                    mask,
                    POLL_INTERVAL,
                    POLL_FOREVER,
                )
                .map_err(|e| packet("POLL_REGMEM", e))?;
                q.push(&p)?;
            }
            EngineQueue::Pm4(q) => {
                let p = WaitRegMem::new(
                    &WaitArgs {
                        function: func,
                        operation: WaitOperation::WaitRegMem,
                        target: PollTarget::Memory(addr),
                        poll_interval: POLL_INTERVAL,
                        optimize_ace_offload_mode: false,
                    },
                    reference,
                    mask,
                )
                .map_err(|e| packet("WAIT_REG_MEM", e))?;
                q.push(&p)?;
            }
        }
        Ok(())
    }

    /// Writes the 32-bit `value` to `addr` after everything before it.
    fn push_fence32(&mut self, addr: u64, value: u32) -> Result<()> {
        match self {
            EngineQueue::Sdma(q) => {
                q.push_fence(addr, value)?;
            }
            EngineQueue::Pm4(q) => {
                let p = ReleaseMem::fence(q.gfx_gen(), addr, u64::from(value), false, None)
                    .map_err(|e| packet("RELEASE_MEM", e))?;
                q.push(&p)?;
            }
        }
        Ok(())
    }

    fn push_write(&mut self, addr: u64, data: &[u32]) -> Result<()> {
        match self {
            EngineQueue::Sdma(q) => {
                q.push_write(addr, data)?;
            }
            EngineQueue::Pm4(q) => {
                let p = WriteData::memory(addr, data).map_err(|e| packet("WRITE_DATA", e))?;
                q.push(&p)?;
            }
        }
        Ok(())
    }

    fn push_signal(&mut self, t: &SignalTarget) -> Result<()> {
        match self {
            EngineQueue::Sdma(q) => {
                q.push_fence(t.slot_address, t.value)?;
                q.push_trap(t.int_ctxid)?;
            }
            EngineQueue::Pm4(q) => {
                let p = ReleaseMem::signal(q.gfx_gen(), t).map_err(|e| packet("RELEASE_MEM", e))?;
                q.push(&p)?;
            }
        }
        Ok(())
    }

    /// The smallest power-of-two ring (≥ 4 KiB) that holds `programs` programs of
    /// `dwords` each plus the filler of one wrap.
    pub fn ring_bytes(programs: u32, dwords: usize) -> u32 {
        let need = (u64::from(programs) + 2) * dwords as u64 * 4;
        need.next_power_of_two().clamp(4096, 1 << 24) as u32
    }
}

/// Where a drain program reads and writes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Targets {
    pub layout: Layout,
    pub host_base: u64,
    pub host_slots: u32,
    pub drained_addr: u64,
    pub timestamps_addr: u64,
    pub signal: Option<SignalTarget>,
}

impl Targets {
    pub fn host_slot(&self, generation: u64) -> u32 {
        (generation % u64::from(self.host_slots)) as u32
    }

    pub fn host_slot_addr(&self, generation: u64) -> u64 {
        self.host_base + u64::from(self.host_slot(generation)) * u64::from(self.layout.slot_size())
    }

    pub fn timestamp_addr(&self, generation: u64) -> u64 {
        self.timestamps_addr + 8 * u64::from(self.host_slot(generation))
    }
}

enum Gen {
    Sdma(SdmaGen),
    Pm4(GfxGen),
}

/// The drain queue with its copy IBs.
pub(crate) struct Drainer {
    pub queue: EngineQueue,
    ib: Memory,
    ib_stride: u64,
    ib_dwords: u32,
    chunk: u64,
    gen: Gen,
    pub t: Targets,
    /// Reused IB image, so queuing a program allocates nothing.
    scratch: std::cell::RefCell<Vec<u32>>,
}

impl std::fmt::Debug for Drainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drainer")
            .field("queue", &self.queue)
            .field("ib_dwords", &self.ib_dwords)
            .finish_non_exhaustive()
    }
}

impl Drainer {
    pub fn new(gpu: &Gpu, engine: DrainEngine, t: Targets) -> Result<Self> {
        let (gen, chunk, dwords) = match engine {
            DrainEngine::Sdma => {
                let g = gpu.sdma_gen()?;
                (
                    Gen::Sdma(g),
                    pm4::sdma::max_copy_bytes(g),
                    SDMA_PROGRAM_DWORDS,
                )
            }
            DrainEngine::Pm4 => (
                Gen::Pm4(gpu.generation()?),
                PM4_COPY_CHUNK,
                PM4_PROGRAM_DWORDS,
            ),
        };
        let copies = u64::from(t.layout.slot_size()).div_ceil(chunk);
        // COPY_LINEAR and DMA_DATA are both 7 dwords.
        let ib_dwords = u32::try_from(copies * 7).unwrap_or(u32::MAX);
        // SDMA IBs are 32-byte aligned.
        let ib_stride = (u64::from(ib_dwords) * 4).next_multiple_of(32);
        let ib = gpu.alloc_with(&AllocOptions::new(
            MemoryKind::Gtt,
            ib_stride * u64::from(t.host_slots),
        ))?;
        let queue =
            EngineQueue::create(gpu, engine, EngineQueue::ring_bytes(t.host_slots, dwords))?;
        Ok(Drainer {
            queue,
            ib,
            ib_stride,
            ib_dwords,
            chunk,
            gen,
            t,
            scratch: std::cell::RefCell::new(Vec::new()),
        })
    }

    fn ib_addr(&self, generation: u64) -> u64 {
        self.ib.gpu_addr(self.ib_offset(generation))
    }

    fn ib_offset(&self, generation: u64) -> u64 {
        u64::from(self.t.host_slot(generation)) * self.ib_stride
    }

    /// Writes the copy of generation `g` (its first `bytes` bytes, header included) into the
    /// generation's IB, padding the rest with NOPs.
    pub fn write_copy(&self, g: u64, bytes: u64) -> Result<()> {
        let index = self.t.layout.slot_of_generation(g);
        let src = self.t.layout.slot_addr(index);
        let dst = self.t.host_slot_addr(g);
        let mut ib = std::mem::take(&mut *self.scratch.borrow_mut());
        ib.clear();
        ib.resize(self.ib_dwords as usize, 0);
        let mut at = 0usize;
        let mut done = 0u64;
        let count = bytes.div_ceil(self.chunk);
        for k in 0..count {
            let n = (bytes - done).min(self.chunk);
            let words = match self.gen {
                Gen::Sdma(gen) => SdmaCopyLinear::new(gen, src + done, dst + done, n)
                    .map_err(|e| packet("COPY_LINEAR", e))?
                    .to_dwords(),
                Gen::Pm4(gen) => DmaData::new(
                    gen,
                    DmaDataControl::new()
                        .with_src_sel(DmaSrcSel::SrcAddr)
                        .with_dst_sel(DmaDstSel::DstAddr)
                        .with_cp_sync(k + 1 == count),
                    src + done,
                    dst + done,
                    DmaDataCommand::new().with_byte_count(n as u32),
                )
                .map_err(|e| packet("DMA_DATA", e))?
                .to_dwords(),
            };
            let slot = ib.get_mut(at..at + 7).ok_or_else(|| {
                packet(
                    "the copy IB",
                    "the slot needs more copies than the IB holds",
                )
            })?;
            slot.copy_from_slice(&words);
            at += 7;
            done += n;
        }
        // SDMA: zero dwords are one-dword NOPs. PM4: one NOP over the rest.
        if let (Gen::Pm4(_), Some(rest)) = (&self.gen, ib.get_mut(at..)) {
            if !rest.is_empty() {
                pm4::writer::write_nop(rest, rest.len()).map_err(|e| packet("NOP", e))?;
            }
        }
        let written = self.ib.write_dwords(self.ib_offset(g), &ib);
        *self.scratch.borrow_mut() = ib;
        Ok(written?)
    }

    /// Queues the drain program of generation `g`, copying `copy_bytes` (the whole slot, or
    /// header plus records for a slot a flush closed). Not visible until [`Drainer::submit`].
    pub fn push_program(&mut self, g: u64, copy_bytes: u64) -> Result<()> {
        self.write_copy(g, copy_bytes)?;
        let r = self.push_program_packets(g);
        if r.is_err() {
            self.queue.rollback();
        }
        r
    }

    fn push_program_packets(&mut self, g: u64) -> Result<()> {
        let l = self.t.layout;
        let index = l.slot_of_generation(g);
        let n = u64::from(l.slot_count());
        let ib_addr = self.ib_addr(g);
        let ts = self.t.timestamp_addr(g);
        self.queue.push_wait(
            l.slot_field(index, slot::COMMITTED),
            CompareFunction::Equal,
            l.capacity(),
            u32::MAX,
        )?;
        match &mut self.queue {
            EngineQueue::Sdma(q) => {
                let p = SdmaTimestamp::new(TimestampOp::GetGlobal, ts)
                    .map_err(|e| packet("TIMESTAMP", e))?;
                q.push(&p)?;
                let p = SdmaIndirect::new(ib_addr, self.ib_dwords, 0, 0)
                    .map_err(|e| packet("INDIRECT", e))?;
                q.push(&p)?;
            }
            EngineQueue::Pm4(q) => {
                let c = CopyDataControl::new()
                    .with_src_sel(CopySrcSel::GpuClockCount)
                    .with_dst_sel(CopyDstSel::Memory)
                    .with_count_sel(CopyCountSel::Bits64)
                    .with_wr_confirm(true);
                let p = CopyData::new(c, 0, ts).map_err(|e| packet("COPY_DATA", e))?;
                q.push(&p)?;
                let p = IndirectBuffer::new(ib_addr, self.ib_dwords, IndirectBufferControl::new())
                    .map_err(|e| packet("INDIRECT_BUFFER", e))?;
                q.push(&p)?;
            }
        }
        // Counters first, the sequence last: a producer that sees the new sequence sees zeros.
        self.queue
            .push_write(l.slot_field(index, slot::COMMITTED), &[0, 0, 0, 0])?;
        self.queue
            .push_fence32(l.slot_field(index, slot::SEQUENCE), (g + n) as u32)?;
        self.queue
            .push_fence32(self.t.drained_addr, (g + 1) as u32)?;
        if let Some(signal) = self.t.signal {
            self.queue.push_signal(&signal)?;
        }
        Ok(())
    }

    pub fn submit(&mut self) -> Result<()> {
        self.queue.submit()
    }

    /// The IB at `addr` (tests).
    #[cfg(test)]
    pub fn read_ib(&self, addr: u64) -> Vec<u32> {
        let off = addr - self.ib.gpu_va();
        self.ib.read_dwords(off, self.ib_dwords as usize).unwrap()
    }

    /// Bytes a full-slot copy moves.
    pub fn full_copy(&self) -> u64 {
        u64::from(self.t.layout.slot_size())
    }

    /// Bytes the copy of a slot with `end` bytes of records moves.
    pub fn short_copy(end: u32) -> u64 {
        u64::from(SLOT_HEADER_BYTES) + u64::from(end)
    }
}

/// The second queue of a kernel-end channel: waits on application completion signals.
pub(crate) struct Watcher {
    pub queue: EngineQueue,
    pub submitted: u64,
    pub capacity: u64,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("queue", &self.queue)
            .field("submitted", &self.submitted)
            .finish()
    }
}

impl Watcher {
    pub fn new(gpu: &Gpu, engine: DrainEngine) -> Result<Self> {
        let ring = 16u32 << 10;
        Ok(Watcher {
            queue: EngineQueue::create(gpu, engine, ring)?,
            submitted: 0,
            capacity: (u64::from(ring) / 4 / WATCH_DWORDS as u64).saturating_sub(2),
        })
    }

    /// Queues a wait for `addr` `func` `reference` (under `mask`), then publishes the number
    /// of completed watches at `ends_addr` and signals.
    pub fn push_watch(
        &mut self,
        addr: u64,
        func: CompareFunction,
        reference: u32,
        mask: u32,
        ends_addr: u64,
        signal: Option<&SignalTarget>,
    ) -> Result<()> {
        let r = (|| {
            self.queue.push_wait(addr, func, reference, mask)?;
            self.queue
                .push_fence32(ends_addr, (self.submitted + 1) as u32)?;
            if let Some(s) = signal {
                self.queue.push_signal(s)?;
            }
            self.queue.submit()
        })();
        match r {
            Ok(()) => {
                self.submitted += 1;
                Ok(())
            }
            Err(e) => {
                self.queue.rollback();
                Err(e)
            }
        }
    }
}
