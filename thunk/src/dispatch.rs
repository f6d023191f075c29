//! Kernel dispatch on an AQL queue: [`KernelArgs`] (explicit arguments laid out per the
//! kernel's metadata, hidden ones filled in for the dispatch), [`AqlQueue::dispatch`] and the
//! [`Completion`] to wait on.
//!
//! The completion signal is an `amd_signal_t` (kind at 0, value at 8, event mailbox pointer at
//! 16, event id at 24) in a buffer of its own that also holds the kernarg segment: the packet
//! processor decrements the value from 1 to 0 when the dispatch retires, writes the event id
//! into the mailbox (the event's slot) and raises the interrupt that wakes `WAIT_EVENTS`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Errno, Error, Result};
use crate::event::{Event, EventKind};
use crate::executable::Kernel;
use crate::kfd::lock;
use crate::memory::{AllocOptions, Memory, MemoryKind};
use crate::poll::poll_until;
use crate::queue::AqlQueue;
use crate::va::PAGE_SIZE;
use pm4::aql::{AqlHeader, AqlPacketType, FenceScope};

/// `amd_signal_t.kind` of a signal the CPU and GPU share through memory (`AMD_SIGNAL_KIND_USER`).
const AMD_SIGNAL_KIND_USER: u64 = 1;
/// Byte offsets in `amd_signal_t`.
const SIGNAL_KIND: u64 = 0;
const SIGNAL_VALUE: u64 = 8;
const SIGNAL_EVENT_MAILBOX_PTR: u64 = 16;
const SIGNAL_EVENT_ID: u64 = 24;
/// The kernarg segment follows the signal in the dispatch's buffer.
const KERNARG_OFFSET: u64 = 256;
/// A bound on the kernarg segment of any kernel (real kernels stay far below it).
pub const MAX_KERNARG_SIZE: u64 = 64 << 10;
/// The most work-items in a workgroup (gfx9 and later).
pub const MAX_WORKGROUP_SIZE: u64 = 1024;
/// LDS per workgroup (gfx9 and later).
pub const MAX_GROUP_SEGMENT_SIZE: u64 = 64 << 10;
/// How long an event wait sleeps before the signal value is looked at again (the fallback for
/// a lost interrupt).
const EVENT_RECHECK: Duration = Duration::from_millis(50);

/// An argument of the kernarg segment as the metadata describes it.
#[derive(Debug, Clone)]
struct Slot {
    offset: u64,
    size: u64,
    value_kind: String,
}

/// The kernel arguments of one dispatch: explicit ones pushed in order, hidden ones filled in
/// by [`AqlQueue::dispatch`] from the grid and workgroup sizes.
///
/// With metadata (code objects v3 and later) each pushed value goes to its argument's offset
/// and must have its size; without, values are appended at their natural alignment.
#[derive(Debug, Clone)]
pub struct KernelArgs {
    kernel: String,
    explicit: Option<Vec<Slot>>,
    hidden: Vec<Slot>,
    bytes: Vec<u8>,
    pushed: usize,
    /// Where the last appended argument ended (without metadata).
    appended_end: u64,
    dynamic_group_segment: u32,
}

/// The hidden-argument values of one dispatch.
#[derive(Debug, Clone, Copy)]
struct Launch {
    grid: [u32; 3],
    workgroup: [u16; 3],
    dims: u16,
    dynamic_group_segment: u32,
}

impl Launch {
    /// The value of a hidden argument this dispatch defines; `None` for the others (buffers
    /// a runtime would provide: printf, hostcall, heap, default queue, …), which stay zero.
    fn hidden_value(&self, value_kind: &str) -> Option<u64> {
        let axis = |name: &str| match name {
            "x" => Some(0),
            "y" => Some(1),
            "z" => Some(2),
            _ => None,
        };
        if let Some((kind, a)) = value_kind.rsplit_once('_') {
            if let Some(d) = axis(a) {
                let (grid, wg) = (u64::from(self.grid[d]), u64::from(self.workgroup[d]));
                return match kind {
                    "hidden_block_count" => Some(grid / wg),
                    "hidden_group_size" => Some(wg),
                    "hidden_remainder" => Some(grid % wg),
                    "hidden_global_offset" => Some(0),
                    _ => None,
                };
            }
        }
        match value_kind {
            "hidden_grid_dims" => Some(u64::from(self.dims)),
            "hidden_dynamic_lds_size" => Some(u64::from(self.dynamic_group_segment)),
            _ => None,
        }
    }
}

impl Kernel {
    /// An empty argument list for this kernel.
    pub fn args(&self) -> Result<KernelArgs> {
        let too_large = |end: u64| {
            Error::new(
                "kernel arguments",
                Errno(libc::E2BIG),
                format!(
                    "{}: a kernarg segment of {end} bytes is larger than {MAX_KERNARG_SIZE}",
                    self.name
                ),
            )
        };
        let mut size = self.kernarg_size;
        let (explicit, hidden) = match &self.metadata {
            None => (None, Vec::new()),
            Some(m) => {
                let mut explicit = Vec::new();
                let mut hidden = Vec::new();
                for a in &m.args {
                    let end = a
                        .offset
                        .checked_add(a.size)
                        .ok_or_else(|| too_large(u64::MAX))?;
                    size = size.max(end);
                    let slot = Slot {
                        offset: a.offset,
                        size: a.size,
                        value_kind: a.value_kind.clone(),
                    };
                    if a.is_hidden() {
                        hidden.push(slot);
                    } else {
                        explicit.push(slot);
                    }
                }
                (Some(explicit), hidden)
            }
        };
        if size > MAX_KERNARG_SIZE {
            return Err(too_large(size));
        }
        Ok(KernelArgs {
            kernel: self.name.clone(),
            explicit,
            hidden,
            bytes: vec![0; size as usize],
            pushed: 0,
            appended_end: 0,
            dynamic_group_segment: 0,
        })
    }
}

impl KernelArgs {
    /// Appends the next explicit argument's bytes (a pointer is its 8-byte GPU address).
    pub fn push_bytes(&mut self, value: &[u8]) -> Result<&mut Self> {
        let len = value.len() as u64;
        let offset = match &self.explicit {
            Some(slots) => {
                let slot = slots.get(self.pushed).ok_or_else(|| {
                    Error::invalid(
                        "kernel arguments",
                        format!(
                            "{} takes {} arguments; argument {} is one too many",
                            self.kernel,
                            slots.len(),
                            self.pushed
                        ),
                    )
                })?;
                if slot.size != len {
                    return Err(Error::invalid(
                        "kernel arguments",
                        format!(
                            "{}: argument {} ({}) has {} bytes, {len} given",
                            self.kernel, self.pushed, slot.value_kind, slot.size
                        ),
                    ));
                }
                slot.offset
            }
            None => {
                // Natural alignment, as the ABI lays out scalars and pointers.
                let align = len.clamp(1, 8).next_power_of_two().min(8);
                self.appended_end.next_multiple_of(align)
            }
        };
        let end = offset + len;
        if end > self.bytes.len() as u64 {
            return Err(Error::new(
                "kernel arguments",
                Errno(libc::E2BIG),
                format!(
                    "{}: {len} bytes at offset {offset} do not fit its {}-byte kernarg segment",
                    self.kernel,
                    self.bytes.len()
                ),
            ));
        }
        self.bytes[offset as usize..end as usize].copy_from_slice(value);
        self.pushed += 1;
        if self.explicit.is_none() {
            self.appended_end = end;
        }
        Ok(self)
    }

    /// Appends a 32-bit unsigned argument.
    pub fn push_u32(&mut self, value: u32) -> Result<&mut Self> {
        self.push_bytes(&value.to_le_bytes())
    }

    /// Appends a 32-bit signed argument.
    pub fn push_i32(&mut self, value: i32) -> Result<&mut Self> {
        self.push_bytes(&value.to_le_bytes())
    }

    /// Appends a 64-bit argument.
    pub fn push_u64(&mut self, value: u64) -> Result<&mut Self> {
        self.push_bytes(&value.to_le_bytes())
    }

    /// Appends a `float` argument.
    pub fn push_f32(&mut self, value: f32) -> Result<&mut Self> {
        self.push_bytes(&value.to_le_bytes())
    }

    /// Appends a pointer argument: a GPU address.
    pub fn push_pointer(&mut self, gpu_address: u64) -> Result<&mut Self> {
        self.push_bytes(&gpu_address.to_le_bytes())
    }

    /// Dynamic LDS bytes per workgroup on top of the kernel's fixed ones (the size behind a
    /// `__local` pointer argument, which starts at the fixed size).
    pub fn dynamic_group_segment(&mut self, bytes: u32) -> &mut Self {
        self.dynamic_group_segment = bytes;
        self
    }

    /// The segment as it stands: explicit arguments written, hidden ones still zero.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The segment for a dispatch of `grid` work-items in groups of `workgroup`: every
    /// explicit argument given, the hidden ones the dispatch defines filled in.
    pub fn finish(&self, grid: [u32; 3], workgroup: [u16; 3]) -> Result<Vec<u8>> {
        if let Some(slots) = &self.explicit {
            if self.pushed != slots.len() {
                return Err(Error::invalid(
                    "kernel arguments",
                    format!(
                        "{} takes {} arguments, {} given",
                        self.kernel,
                        slots.len(),
                        self.pushed
                    ),
                ));
            }
        }
        let launch = Launch {
            grid,
            workgroup,
            dims: grid_dims(grid, workgroup),
            dynamic_group_segment: self.dynamic_group_segment,
        };
        let mut bytes = self.bytes.clone();
        for slot in &self.hidden {
            let Some(value) = launch.hidden_value(&slot.value_kind) else {
                continue;
            };
            let n = slot.size.min(8) as usize;
            let at = slot.offset as usize;
            bytes[at..at + n].copy_from_slice(&value.to_le_bytes()[..n]);
        }
        Ok(bytes)
    }
}

/// The dimensions of a dispatch: up to the last axis with more than one work-item or group.
fn grid_dims(grid: [u32; 3], workgroup: [u16; 3]) -> u16 {
    (0..3)
        .rev()
        .find(|&d| grid[d] > 1 || workgroup[d] > 1)
        .map_or(1, |d| d as u16 + 1)
}

/// How many completion slots an AQL queue's pool holds: dispatches in flight beyond this
/// many get a buffer of their own.
pub const COMPLETION_POOL_SLOTS: u64 = 64;
/// Bytes per pooled slot: the signal, then the kernarg segment from [`KERNARG_OFFSET`].
const COMPLETION_SLOT_BYTES: u64 = 4096;

/// Completion signals and kernarg segments an AQL queue reuses from dispatch to dispatch,
/// with one event whose mailbox every signal names — so a dispatch costs no system call
/// beyond the doorbell, as with ROCr's pre-allocated signals and kernarg pool.
#[derive(Debug)]
pub(crate) struct CompletionPool {
    shared: Arc<PoolShared>,
}

#[derive(Debug)]
struct PoolShared {
    memory: Memory,
    event: Option<Event>,
    free: Mutex<Vec<u64>>,
}

impl CompletionPool {
    fn new(queue: &AqlQueue) -> Result<Self> {
        let gpu = queue.gpu();
        let memory = gpu.alloc_with(
            &AllocOptions::new(
                MemoryKind::Gtt,
                COMPLETION_POOL_SLOTS * COMPLETION_SLOT_BYTES,
            )
            .coherent(),
        )?;
        // Auto-reset: a wake-up is consumed by one wait, and every waiter looks at its own
        // signal's value before it sleeps again.
        let event = gpu.kfd().create_event(EventKind::Signal, true)?;
        let target = event.signal_target();
        for slot in 0..COMPLETION_POOL_SLOTS {
            let base = slot * COMPLETION_SLOT_BYTES;
            memory.store_u64(base + SIGNAL_KIND, AMD_SIGNAL_KIND_USER)?;
            memory.store_u64(base + SIGNAL_VALUE, 0)?;
            memory.store_u64(
                base + SIGNAL_EVENT_MAILBOX_PTR,
                target.map_or(0, |t| t.slot_address),
            )?;
            memory.store_u32(base + SIGNAL_EVENT_ID, target.map_or(0, |t| t.int_ctxid))?;
        }
        Ok(CompletionPool {
            shared: Arc::new(PoolShared {
                memory,
                event: target.map(|_| event),
                free: Mutex::new((0..COMPLETION_POOL_SLOTS).rev().collect()),
            }),
        })
    }

    /// A free slot, if any.
    fn take(&self) -> Option<u64> {
        lock(&self.shared.free).pop()
    }
}

/// Where a completion's signal and kernarg segment live.
#[derive(Debug)]
enum Backing {
    /// A slot of the queue's pool.
    Pooled { pool: Arc<PoolShared>, slot: u64 },
    /// A buffer and event of its own (the pool was full, or the kernarg segment too big).
    Own {
        buffer: Option<Memory>,
        event: Option<Event>,
    },
}

/// A dispatch in flight: its completion signal (and the kernarg segment beside it) and the
/// event the signal's mailbox names.
///
/// Dropping a completion before the dispatch retired leaks its memory instead of freeing or
/// reusing memory the GPU still reads and writes.
#[derive(Debug)]
pub struct Completion {
    backing: Backing,
    packet: u64,
}

impl Completion {
    /// The memory and offset of the signal.
    fn signal(&self) -> Option<(&Memory, u64)> {
        match &self.backing {
            Backing::Pooled { pool, slot } => Some((&pool.memory, slot * COMPLETION_SLOT_BYTES)),
            Backing::Own { buffer, .. } => buffer.as_ref().map(|b| (b, 0)),
        }
    }

    /// GPU address of the completion signal (`amd_signal_t`).
    pub fn signal_address(&self) -> u64 {
        self.signal().map_or(0, |(m, offset)| m.gpu_addr(offset))
    }

    /// GPU address of the kernarg segment.
    pub fn kernarg_address(&self) -> u64 {
        self.signal_address() + KERNARG_OFFSET
    }

    /// The packet's index in the queue.
    pub fn packet_index(&self) -> u64 {
        self.packet
    }

    /// The event the completion raises (shared by the dispatches of a queue whose signals
    /// come from its pool).
    pub fn event(&self) -> Option<&Event> {
        match &self.backing {
            Backing::Pooled { pool, .. } => pool.event.as_ref(),
            Backing::Own { event, .. } => event.as_ref(),
        }
    }

    /// The signal's value: 1 while the dispatch runs, 0 once it retired.
    pub fn value(&self) -> Result<u64> {
        match self.signal() {
            Some((m, offset)) => m.load_u64(offset + SIGNAL_VALUE),
            None => Ok(0),
        }
    }

    /// Whether the dispatch retired.
    pub fn is_complete(&self) -> Result<bool> {
        Ok(self.value()? == 0)
    }

    /// Waits for the dispatch to retire, sleeping in `WAIT_EVENTS` on the signal's event and
    /// looking at the value between wake-ups; `ETIMEDOUT` after `timeout`.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.is_complete()? {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timed_out(timeout));
            }
            let nap = (deadline - now).min(EVENT_RECHECK);
            match self.event() {
                Some(event) => {
                    event.wait(Some(nap))?;
                }
                None => {
                    poll_until(nap, || self.is_complete().unwrap_or(true));
                }
            }
        }
    }

    /// Waits by polling the signal value only (no event).
    pub fn wait_polling(&self, timeout: Duration) -> Result<()> {
        if poll_until(timeout, || self.is_complete().unwrap_or(true)) && self.is_complete()? {
            Ok(())
        } else {
            Err(self.timed_out(timeout))
        }
    }

    fn timed_out(&self, timeout: Duration) -> Error {
        Error::timeout(
            "wait",
            format!(
                "dispatch packet {} did not complete within {timeout:?} (signal value {})",
                self.packet,
                self.value()
                    .map_or_else(|e| e.to_string(), |v| v.to_string())
            ),
        )
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        let complete = self.is_complete().unwrap_or(false);
        if !complete {
            log::warn!(target: "thunk::queue",
                "dispatch packet {} dropped before it completed: its memory is leaked",
                self.packet);
        }
        match &mut self.backing {
            Backing::Pooled { pool, slot } => {
                if complete {
                    lock(&pool.free).push(*slot);
                } else {
                    // The slot is never handed out again, and the pool outlives everything.
                    std::mem::forget(Arc::clone(pool));
                }
            }
            Backing::Own { buffer, .. } => {
                if !complete {
                    if let Some(buffer) = buffer.take() {
                        std::mem::forget(buffer);
                    }
                }
            }
        }
    }
}

impl AqlQueue {
    /// Dispatches `kernel` over `grid` work-items (per axis; the last group may be partial)
    /// in groups of `workgroup`, with `args`: writes a KERNEL_DISPATCH packet (barrier bit,
    /// system-scope acquire and release) with a completion signal of its own and rings the
    /// doorbell.
    ///
    /// The signal and the kernarg segment come from a pool the queue keeps (made on the
    /// first dispatch: one buffer and one event), so later dispatches make no system call
    /// but the doorbell; beyond [`COMPLETION_POOL_SLOTS`] dispatches in flight, or for a
    /// kernarg segment over 3.75 KiB, a dispatch gets a buffer and event of its own.
    pub fn dispatch(
        &mut self,
        kernel: &Kernel,
        grid: [u32; 3],
        workgroup: [u16; 3],
        args: &KernelArgs,
    ) -> Result<Completion> {
        let gpu = self.gpu().clone();
        if kernel.gpu_id != gpu.id() {
            return Err(Error::invalid(
                "dispatch",
                format!(
                    "{} was loaded on GPU {}, the queue is on GPU {}",
                    kernel.name,
                    kernel.gpu_id,
                    gpu.id()
                ),
            ));
        }
        if args.kernel != kernel.name {
            return Err(Error::invalid(
                "dispatch",
                format!("arguments built for {}, not {}", args.kernel, kernel.name),
            ));
        }
        check_sizes(kernel, grid, workgroup, args.dynamic_group_segment)?;
        if kernel.private_segment_size > 0 {
            let items: u64 = workgroup.iter().map(|&w| u64::from(w)).product();
            self.reserve_scratch(kernel.private_segment_size, items.div_ceil(64) as u32)?;
        }
        let segment = args.finish(grid, workgroup)?;
        if kernel.kernarg_align > PAGE_SIZE {
            return Err(Error::invalid(
                "dispatch",
                format!(
                    "{}: kernarg alignment {}",
                    kernel.name, kernel.kernarg_align
                ),
            ));
        }
        let kernarg_offset = KERNARG_OFFSET.next_multiple_of(kernel.kernarg_align);
        let fits_slot = kernarg_offset + segment.len() as u64 <= COMPLETION_SLOT_BYTES;
        if fits_slot && self.completion_pool().is_none() {
            let pool = CompletionPool::new(self)?;
            *self.completion_pool() = Some(pool);
        }
        let pooled = match self.completion_pool() {
            Some(pool) if fits_slot => pool.take().map(|slot| (Arc::clone(&pool.shared), slot)),
            _ => None,
        };
        let backing = match pooled {
            Some((pool, slot)) => {
                let base = slot * COMPLETION_SLOT_BYTES;
                pool.memory.write(base + kernarg_offset, &segment)?;
                pool.memory.store_u64(base + SIGNAL_VALUE, 1)?;
                Backing::Pooled { pool, slot }
            }
            None => {
                let buffer = gpu.alloc_with(
                    &AllocOptions::new(MemoryKind::Gtt, kernarg_offset + segment.len() as u64)
                        .coherent(),
                )?;
                buffer.write(kernarg_offset, &segment)?;
                let event = gpu.kfd().create_event(EventKind::Signal, false)?;
                let target = event.signal_target();
                buffer.store_u64(SIGNAL_KIND, AMD_SIGNAL_KIND_USER)?;
                buffer.store_u64(SIGNAL_VALUE, 1)?;
                buffer.store_u64(
                    SIGNAL_EVENT_MAILBOX_PTR,
                    target.map_or(0, |t| t.slot_address),
                )?;
                buffer.store_u32(SIGNAL_EVENT_ID, target.map_or(0, |t| t.int_ctxid))?;
                Backing::Own {
                    buffer: Some(buffer),
                    event: target.map(|_| event),
                }
            }
        };
        let mut completion = Completion { backing, packet: 0 };
        let signal = completion.signal_address();
        let kernarg = signal + kernarg_offset;

        let group_segment = kernel.group_segment_size + args.dynamic_group_segment;
        let header = AqlHeader::new(
            AqlPacketType::KernelDispatch,
            true,
            FenceScope::System,
            FenceScope::System,
        )
        .0;
        let setup = grid_dims(grid, workgroup);
        let kernel_object = kernel.descriptor_address;
        let mut p = [0u32; 16];
        p[0] = u32::from(header) | u32::from(setup) << 16;
        p[1] = u32::from(workgroup[0]) | u32::from(workgroup[1]) << 16;
        p[2] = u32::from(workgroup[2]);
        p[3..6].copy_from_slice(&grid);
        p[6] = kernel.private_segment_size;
        p[7] = group_segment;
        p[8] = kernel_object as u32;
        p[9] = (kernel_object >> 32) as u32;
        p[10] = kernarg as u32;
        p[11] = (kernarg >> 32) as u32;
        p[14] = signal as u32;
        p[15] = (signal >> 32) as u32;
        let slot = match self.push_packet(&p) {
            Ok(slot) => slot,
            Err(e) => {
                // Never submitted: the signal goes back to idle so the slot is reused.
                if let Some((m, offset)) = completion.signal() {
                    m.store_u64(offset + SIGNAL_VALUE, 0)?;
                }
                return Err(e);
            }
        };
        completion.packet = slot.get();
        self.submit()?;
        Ok(completion)
    }
}

/// The grid, workgroup and LDS limits a dispatch must meet.
fn check_sizes(
    kernel: &Kernel,
    grid: [u32; 3],
    workgroup: [u16; 3],
    dynamic_group_segment: u32,
) -> Result<()> {
    let bad = |what: String| {
        Err(Error::invalid(
            "dispatch",
            format!("{}: {what}", kernel.name),
        ))
    };
    if grid.contains(&0) || workgroup.contains(&0) {
        return bad(format!(
            "grid {grid:?} and workgroup {workgroup:?} need at least 1 on every axis"
        ));
    }
    let flat: u64 = workgroup.iter().map(|&w| u64::from(w)).product();
    let limit = kernel
        .metadata
        .as_ref()
        .and_then(|m| m.max_flat_workgroup_size)
        .unwrap_or(MAX_WORKGROUP_SIZE)
        .min(MAX_WORKGROUP_SIZE);
    if flat > limit {
        return bad(format!(
            "a workgroup of {flat} work-items is more than the kernel's limit of {limit}"
        ));
    }
    if let Some(reqd) = kernel
        .metadata
        .as_ref()
        .and_then(|m| m.reqd_workgroup_size.as_ref())
    {
        if reqd.len() == 3 && (0..3).any(|d| reqd[d] != u64::from(workgroup[d])) {
            return bad(format!(
                "the kernel requires workgroups of {reqd:?}, not {workgroup:?}"
            ));
        }
    }
    let lds = u64::from(kernel.group_segment_size) + u64::from(dynamic_group_segment);
    if lds > MAX_GROUP_SEGMENT_SIZE {
        return bad(format!(
            "{lds} bytes of LDS per workgroup are more than {MAX_GROUP_SEGMENT_SIZE}"
        ));
    }
    Ok(())
}
