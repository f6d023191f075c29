//! User-mode queues: PM4 compute, AQL and SDMA, with everything they need allocated the way the
//! driver validates it (facts §9.9, §9.10), and a typed writer per kind whose write pointer
//! has the kind's unit — dwords ([`DwordPtr`]), bytes ([`SdmaBytePtr`]) or 64-byte packets
//! ([`AqlSlotPtr`]).
//!
//! Buffers of a queue: the ring (GTT, exactly `ring_size` bytes, one mapping), one page holding
//! the read pointer, the write pointer and the error payload, and for compute queues the EOP
//! buffer and the context-save (CWSR) area with a `kfd_context_save_area_header` per XCC.
//! The process doorbell page of the GPU is mapped once and shared by all queues.
//!
//! Pushing a packet encodes it (a packet that fails to encode, or does not fit, reaches
//! neither the ring nor the write pointer) and writes it straight into the ring past the
//! published write pointer, where the engine does not read. Submitting stores the 64-bit
//! write pointer, then the same value into the doorbell, each a release store: the engine
//! that sees the doorbell sees the write pointer, and the one that sees the write pointer
//! sees the packets.

use crate::backend::Backend;
use crate::error::{Errno, Error, Result};
use crate::event::{Event, SignalTarget};
use crate::gpu::Gpu;
use crate::kfd::{lock, Session};
use crate::memory::{alloc_raw, free_raw, map_raw, AllocOptions, Memory, MemoryKind};
use crate::packets::ReleaseMem;
use crate::poll::poll_until;
use crate::va::{map_kfd_over, Access, VaRange};
use kfd_sys::*;
use pm4::aql::{amd_queue, AqlHeader, AqlPacketType, FenceScope};
use pm4::ring::{
    AqlSlotPtr, DwordPtr, Placement, Pm4Ring, RingError, SdmaBytePtr, SdmaRing, AQL_PACKET_BYTES,
    AQL_PACKET_DWORDS,
};
use pm4::sdma::{SdmaConstantFill, SdmaCopyLinear, SdmaFence, SdmaTrap, SdmaWrite};
use pm4::user::{ReleaseMemArgs, WriteData};
use pm4::{Encode, GfxGen, SdmaGen};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

// The queue's pointer page starts with an `amd_queue_t` (ROCr's), whose `read_dispatch_id`
// and `write_dispatch_id` are the read and write pointers: a GPU's packet processor finds the
// structure 128 bytes before the read pointer it reports to and reads its scratch fields,
// `queue_properties` and `queue_inactive_signal` there, so they must be this page's (zero
// unless set), not whatever memory lies before it. The two pointers sit in different cache
// lines, as in ROCr's queues, so the engine's read-pointer updates do not contend with the
// client's write-pointer stores.

/// Byte offset of the read pointer in the queue's pointer page (`amd_queue_t.read_dispatch_id`).
pub const READ_POINTER_OFFSET: u64 = amd_queue::READ_DISPATCH_ID;
/// Byte offset of the write pointer in the queue's pointer page
/// (`amd_queue_t.write_dispatch_id`).
pub const WRITE_POINTER_OFFSET: u64 = amd_queue::WRITE_DISPATCH_ID;
/// Byte offset of the error payload (the context-save header's `err_payload_addr`), after the
/// `amd_queue_t`.
pub const ERROR_PAYLOAD_OFFSET: u64 = amd_queue::SIZE as u64;

/// Default ring size: 64 KiB.
pub const DEFAULT_RING_SIZE: u32 = 64 << 10;

/// A queue priority, 0 (lowest) to 15 (highest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueuePriority(u8);

impl QueuePriority {
    /// HSA `MINIMUM` (−3).
    pub const MINIMUM: QueuePriority = QueuePriority(0);
    /// HSA `LOW` (−2).
    pub const LOW: QueuePriority = QueuePriority(3);
    /// HSA `BELOW_NORMAL` (−1).
    pub const BELOW_NORMAL: QueuePriority = QueuePriority(5);
    /// HSA `NORMAL` (0): what libhsakmt uses by default.
    pub const NORMAL: QueuePriority = QueuePriority(7);
    /// HSA `ABOVE_NORMAL` (+1).
    pub const ABOVE_NORMAL: QueuePriority = QueuePriority(9);
    /// HSA `HIGH` (+2).
    pub const HIGH: QueuePriority = QueuePriority(11);
    /// HSA `MAXIMUM` (+3).
    pub const MAXIMUM: QueuePriority = QueuePriority(15);

    /// A raw priority (0–15).
    pub fn new(raw: u32) -> Result<Self> {
        u8::try_from(raw)
            .ok()
            .filter(|&p| u32::from(p) <= KFD_MAX_QUEUE_PRIORITY)
            .map(QueuePriority)
            .ok_or_else(|| {
                Error::invalid(
                    "CREATE_QUEUE",
                    format!("queue priority {raw} is above {KFD_MAX_QUEUE_PRIORITY}"),
                )
            })
    }

    /// The raw value.
    pub fn raw(self) -> u32 {
        u32::from(self.0)
    }
}

impl Default for QueuePriority {
    fn default() -> Self {
        QueuePriority::NORMAL
    }
}

/// Which SDMA engine an SDMA queue runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SdmaEngine {
    /// Any PCIe SDMA engine (`KFD_IOC_QUEUE_TYPE_SDMA`).
    #[default]
    Any,
    /// Any xGMI SDMA engine (`KFD_IOC_QUEUE_TYPE_SDMA_XGMI`).
    Xgmi,
    /// This engine (`KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID`, interface 1.17+).
    Id(u32),
}

/// How to create a queue.
#[derive(Clone, Debug)]
pub struct QueueOptions {
    ring_size: u32,
    percentage: u32,
    priority: QueuePriority,
    sdma_engine: SdmaEngine,
    error_event: Option<u32>,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            ring_size: DEFAULT_RING_SIZE,
            percentage: 100,
            priority: QueuePriority::NORMAL,
            sdma_engine: SdmaEngine::Any,
            error_event: None,
        }
    }
}

impl QueueOptions {
    /// A 64 KiB ring, 100 %, normal priority.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ring size in bytes: a power of two, at least 1024 (the driver's minimum).
    pub fn ring_size(mut self, bytes: u32) -> Self {
        self.ring_size = bytes;
        self
    }

    /// Queue percentage 0–100 (0 creates the queue inactive).
    pub fn percentage(mut self, percentage: u32) -> Self {
        self.percentage = percentage;
        self
    }

    /// Priority.
    pub fn priority(mut self, priority: QueuePriority) -> Self {
        self.priority = priority;
        self
    }

    /// The SDMA engine (SDMA queues only).
    pub fn sdma_engine(mut self, engine: SdmaEngine) -> Self {
        self.sdma_engine = engine;
        self
    }

    /// The event the firmware signals on a queue error (compute queues: written into the
    /// context-save header's `err_event_id`).
    pub fn error_event(mut self, event: &Event) -> Self {
        self.error_event = Some(event.id());
        self
    }

    fn validate(&self, kind: Kind) -> Result<()> {
        const OP: &str = "CREATE_QUEUE";
        let r = self.ring_size;
        if !r.is_power_of_two() {
            return Err(Error::invalid(
                OP,
                format!("ring size {r} is not a power of two"),
            ));
        }
        if r < KFD_MIN_QUEUE_RING_SIZE {
            return Err(Error::invalid(
                OP,
                format!(
                    "ring size {r} is below the driver's minimum of {KFD_MIN_QUEUE_RING_SIZE} bytes"
                ),
            ));
        }
        if kind == Kind::Aql && u64::from(r) < 2 * AQL_PACKET_BYTES {
            return Err(Error::invalid(OP, "an AQL ring holds at least two packets"));
        }
        if self.percentage > KFD_MAX_QUEUE_PERCENTAGE {
            return Err(Error::invalid(
                OP,
                format!(
                    "queue percentage {} is above {KFD_MAX_QUEUE_PERCENTAGE}",
                    self.percentage
                ),
            ));
        }
        Ok(())
    }
}

use sealed::Kind;

mod sealed {
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
pub trait QueueKind: sealed::Sealed + Sized + fmt::Debug + Send + Sync {
    /// The unit of the read and write pointers: dwords ([`DwordPtr`]), bytes
    /// ([`SdmaBytePtr`]) or 64-byte packets ([`AqlSlotPtr`]).
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

/// The process doorbell page of one GPU.
#[derive(Debug)]
pub(crate) struct DoorbellPage {
    range: VaRange,
    /// The DOORBELL buffer on the user-buffer path.
    handle: Option<u64>,
}

impl DoorbellPage {
    /// Unmaps and frees the DOORBELL buffer (the CPU range unmaps on drop).
    pub(crate) fn release(self, backend: &dyn Backend, gpu_id: u32) {
        let Some(handle) = self.handle else { return };
        let ids = [gpu_id];
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        if let Err(e) = backend.call::<UnmapMemoryFromGpu>(&mut u) {
            log::warn!(target: "thunk::queue", "unmapping doorbell buffer {handle:#x}: {e}");
        }
        let mut f = kfd_ioctl_free_memory_of_gpu_args { handle };
        if let Err(e) = backend.call::<FreeMemoryOfGpu>(&mut f) {
            log::warn!(target: "thunk::queue", "freeing doorbell buffer {handle:#x}: {e}");
        }
    }
}

/// Maps the doorbell page of GPU `index` if it is not mapped yet.
fn ensure_doorbells(session: &Session, index: usize, doorbell_offset: u64) -> Result<()> {
    let state = session
        .gpus
        .get(index)
        .ok_or_else(|| Error::invalid("doorbell", format!("no GPU with index {index}")))?;
    if state.doorbells.get().is_some() {
        return Ok(());
    }
    let _guard = lock(&state.doorbell_init);
    if state.doorbells.get().is_some() {
        return Ok(());
    }
    let page = if session.user_pages {
        let buf = alloc_raw(
            session,
            index,
            MemoryKind::Doorbell,
            KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15,
            KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            true,
        )?;
        if let Err(e) = map_raw(session, buf.handle, &[state.gpu_id], true) {
            let _ = free_raw(session, buf.handle);
            return Err(e);
        }
        DoorbellPage {
            range: buf.range,
            handle: Some(buf.handle),
        }
    } else {
        let size = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        let mut range = VaRange::reserve(size, size)?;
        map_kfd_over(
            session.backend.as_ref(),
            &mut range,
            Access::ReadWrite,
            doorbell_offset & !(size - 1),
        )
        .map_err(|e| {
            Error::new(
                "mmap",
                e,
                format!(
                    "cannot map the doorbell page of gpu {:#x} (offset {:#x})",
                    state.gpu_id,
                    doorbell_offset & !(size - 1)
                ),
            )
        })?;
        DoorbellPage {
            range,
            handle: None,
        }
    };
    log::debug!(target: "thunk::queue", "doorbell page of gpu {:#x} at {:#x}", state.gpu_id, page.range.addr());
    // Cannot already be set: `doorbell_init` is held.
    let _ = state.doorbells.set(page);
    Ok(())
}

/// What every queue kind has: its id, doorbell and buffers. Dropping it destroys the queue
/// (`DESTROY_QUEUE`), then frees the buffers; the ring and the pointer page go to the GPU's
/// pool of queue buffers when it has room (`crate::pool`).
pub struct RawQueue {
    session: Arc<Session>,
    gpu: Gpu,
    kind: Kind,
    queue_type: u32,
    queue_id: u32,
    doorbell_offset: u64,
    /// Byte offset of the queue's doorbell in the GPU's doorbell page.
    doorbell_byte: u64,
    ring_size: u32,
    percentage: u32,
    priority: QueuePriority,
    // Dropped after `Drop::drop` destroyed the queue.
    ring: Memory,
    pointers: Memory,
    eop: Option<Memory>,
    context_save: Option<Memory>,
}

impl std::fmt::Debug for RawQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawQueue")
            .field("kind", &self.kind)
            .field("queue_id", &self.queue_id)
            .field("gpu_id", &format_args!("{:#x}", self.gpu.id()))
            .field(
                "ring",
                &format_args!("{:#x}+{:#x}", self.ring.gpu_va(), self.ring_size),
            )
            .field(
                "doorbell_offset",
                &format_args!("{:#x}", self.doorbell_offset),
            )
            .finish()
    }
}

impl RawQueue {
    fn create(gpu: &Gpu, kind: Kind, opts: &QueueOptions) -> Result<RawQueue> {
        const OP: &str = "CREATE_QUEUE";
        opts.validate(kind)?;
        let session = gpu.session.clone();
        let node = gpu.node();
        let queue_type = match (kind, opts.sdma_engine) {
            (Kind::Pm4, _) => KFD_IOC_QUEUE_TYPE_COMPUTE,
            (Kind::Aql, _) => KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            (Kind::Sdma, SdmaEngine::Any) => KFD_IOC_QUEUE_TYPE_SDMA,
            (Kind::Sdma, SdmaEngine::Xgmi) => KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
            (Kind::Sdma, SdmaEngine::Id(id)) => {
                if !session.version.at_least(17) {
                    return Err(Error::new(
                        OP,
                        Errno::EOPNOTSUPP,
                        format!(
                            "choosing SDMA engine {id} needs KFD interface 1.17 (Linux 6.12); \
                             the driver speaks {}",
                            session.version
                        ),
                    ));
                }
                let engines =
                    node.properties.num_sdma_engines + node.properties.num_sdma_xgmi_engines;
                if u64::from(id) >= engines {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "SDMA engine {id} does not exist; gpu {:#x} has {engines}",
                            gpu.id()
                        ),
                    ));
                }
                KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID
            }
        };
        let sdma_engine_id = match opts.sdma_engine {
            SdmaEngine::Id(id) if kind == Kind::Sdma => id,
            _ => 0,
        };
        let gtt =
            |size: u64| {
                gpu.alloc_with(&AllocOptions::new(MemoryKind::Gtt, size).flags(
                    KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT,
                ))
            };
        // The ring and the pointer page come from the pool of destroyed queues' buffers
        // when it has them (zeroed), as `gtt` would make them otherwise.
        let pooled_gtt = |size: u64| {
            Memory::reuse_or_allocate(
                gpu,
                &AllocOptions::new(MemoryKind::Gtt, size).flags(
                    KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT,
                ),
            )
        };
        let ring = pooled_gtt(u64::from(opts.ring_size))?;
        if kind == Kind::Aql {
            // Every slot starts INVALID so the packet processor never takes a stale packet.
            let invalid = u32::from(
                AqlHeader::new(
                    AqlPacketType::Invalid,
                    false,
                    FenceScope::None,
                    FenceScope::None,
                )
                .0,
            );
            for slot in 0..u64::from(opts.ring_size) / AQL_PACKET_BYTES {
                ring.store_u32(slot * AQL_PACKET_BYTES, invalid)?;
            }
        }
        let pointers = pooled_gtt(4096)?;
        let mut args = kfd_ioctl_create_queue_args {
            ring_base_address: ring.gpu_va(),
            write_pointer_address: pointers.gpu_addr(WRITE_POINTER_OFFSET),
            read_pointer_address: pointers.gpu_addr(READ_POINTER_OFFSET),
            ring_size: opts.ring_size,
            gpu_id: gpu.id(),
            queue_type,
            queue_percentage: opts.percentage,
            queue_priority: opts.priority.raw(),
            sdma_engine_id,
            ..Default::default()
        };
        let (eop, context_save) = if kind.is_compute() {
            let sizes = node.queue_sizes()?;
            let eop_kind = if node.is_dgpu() {
                MemoryKind::Vram
            } else {
                MemoryKind::Gtt
            };
            let eop = gpu.alloc_with(
                &AllocOptions::new(eop_kind, u64::from(sizes.eop_buffer_size)).device_only(),
            )?;
            let ctx = gtt(sizes.context_save_area_size())?;
            write_context_save_headers(
                &ctx,
                &sizes,
                pointers.gpu_addr(ERROR_PAYLOAD_OFFSET),
                opts.error_event.unwrap_or(0),
            )?;
            args.eop_buffer_address = eop.gpu_va();
            args.eop_buffer_size = u64::from(sizes.eop_buffer_size);
            args.ctx_save_restore_address = ctx.gpu_va();
            args.ctx_save_restore_size = sizes.cwsr_size;
            args.ctl_stack_size = sizes.ctl_stack_size;
            (Some(eop), Some(ctx))
        } else {
            (None, None)
        };
        session.ioctl::<CreateQueue>(&mut args).map_err(|e| {
            Error::ioctl(
                OP,
                e,
                format_args!(
                    "{kind:?} queue on gpu {:#x} (ring {} bytes)",
                    gpu.id(),
                    opts.ring_size
                ),
            )
        })?;
        // From here on the queue exists: dropping `queue` destroys it on any error below.
        let mut queue = RawQueue {
            session: session.clone(),
            gpu: gpu.clone(),
            kind,
            queue_type,
            queue_id: args.queue_id,
            doorbell_offset: args.doorbell_offset,
            doorbell_byte: 0,
            ring_size: opts.ring_size,
            percentage: opts.percentage,
            priority: opts.priority,
            ring,
            pointers,
            eop,
            context_save,
        };
        let o = KfdMmapOffset::decode(args.doorbell_offset);
        let slice = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        let byte = o.value & (slice - 1);
        if o.kind != KfdMmapType::Doorbell
            || o.gpu_id != KfdMmapOffset::doorbell(gpu.id(), 0).gpu_id
            || byte % KFD_DOORBELL_SIZE_SOC15 != 0
        {
            return Err(Error::bad_answer(
                OP,
                format!(
                    "queue {}: doorbell offset {:#x} is not a doorbell of gpu {:#x}",
                    args.queue_id,
                    args.doorbell_offset,
                    gpu.id()
                ),
            ));
        }
        queue.doorbell_byte = byte;
        ensure_doorbells(&session, gpu.index, args.doorbell_offset)?;
        log::debug!(
            target: "thunk::queue",
            "created {kind:?} queue {} on gpu {:#x}: ring {:#x}+{:#x}, doorbell {:#x}",
            args.queue_id,
            gpu.id(),
            queue.ring.gpu_va(),
            opts.ring_size,
            args.doorbell_offset
        );
        Ok(queue)
    }

    /// A ring buffer of `bytes` for this queue (GTT, exactly that size).
    fn alloc_ring(&self, bytes: u32) -> Result<Memory> {
        self.gpu.alloc_with(
            &AllocOptions::new(MemoryKind::Gtt, u64::from(bytes))
                .flags(KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT),
        )
    }

    /// Moves the write pointer `w` (absolute, in dwords) of an idle queue on to a multiple of
    /// `multiple` dwords by writing `filler` dwords (a one-dword NOP) into the ring, in submits
    /// the engine finishes one by one — never a whole ring at once. `published` turns a dword
    /// position into the write-pointer value, `reached` says whether the engine read up to it.
    fn pad_write_pointer(
        &self,
        mut w: u64,
        multiple: u64,
        filler: u32,
        timeout: Duration,
        published: impl Fn(u64) -> u64,
        reached: impl Fn(&RawQueue, u64) -> bool,
    ) -> Result<u64> {
        let ring = u64::from(self.ring_size / 4);
        while multiple > 0 && w % multiple != 0 {
            let slot = w % ring;
            let room = if slot == 0 { ring / 2 } else { ring - slot };
            let n = (multiple - w % multiple).min(room);
            let fill = vec![filler; n as usize];
            self.ring.write_dwords(slot * 4, &fill)?;
            w += n;
            let value = published(w);
            self.publish(value)?;
            self.wait_for("padding the ring before a resize", timeout, || {
                reached(self, value)
            })?;
        }
        Ok(w)
    }

    /// Points the queue at `ring` of `bytes` (`UPDATE_QUEUE`); the old ring is freed.
    fn replace_ring(&mut self, ring: Memory, bytes: u32) -> Result<()> {
        let mut a = kfd_ioctl_update_queue_args {
            ring_base_address: ring.gpu_va(),
            queue_id: self.queue_id,
            ring_size: bytes,
            queue_percentage: self.percentage,
            queue_priority: self.priority.raw(),
        };
        self.session.ioctl::<UpdateQueue>(&mut a).map_err(|e| {
            Error::ioctl(
                "UPDATE_QUEUE",
                e,
                format_args!("queue {}: new ring of {bytes} bytes", self.queue_id),
            )
        })?;
        log::debug!(target: "thunk::queue", "queue {}: ring {:#x}+{:#x} -> {:#x}+{bytes:#x}", self.queue_id, self.ring.gpu_va(), self.ring_size, ring.gpu_va());
        self.ring = ring;
        self.ring_size = bytes;
        Ok(())
    }

    fn doorbell(&self) -> Result<&AtomicU64> {
        let page = self
            .session
            .gpus
            .get(self.gpu.index)
            .and_then(|g| g.doorbells.get())
            .ok_or_else(|| Error::invalid("submit", "the doorbell page is not mapped"))?;
        page.range.atomic_u64(self.doorbell_byte)
    }

    /// Publishes `wptr`: the write pointer memory, then the doorbell. Each store is a release:
    /// the engine that sees the doorbell sees the write pointer, and the one that sees the
    /// write pointer sees the packets. (The rings are cached system memory and the doorbell an
    /// uncached mapping, which x86 keeps in order without a full fence.)
    fn publish(&self, wptr: u64) -> Result<()> {
        let doorbell = self.doorbell()?;
        let wptr_word = self.pointers.atomic_u64(WRITE_POINTER_OFFSET)?;
        wptr_word.store(wptr, Ordering::Release);
        doorbell.store(wptr, Ordering::Release);
        self.session.backend.doorbell_rung(self.gpu.id());
        Ok(())
    }

    fn read_u32_pointer(&self) -> u64 {
        self.pointers
            .load_u32(READ_POINTER_OFFSET)
            .map(u64::from)
            .unwrap_or(0)
    }

    fn read_u64_pointer(&self) -> u64 {
        self.pointers.load_u64(READ_POINTER_OFFSET).unwrap_or(0)
    }

    fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        mut done: impl FnMut() -> bool,
    ) -> Result<()> {
        if poll_until(timeout, &mut done) {
            Ok(())
        } else {
            Err(Error::timeout(
                "wait",
                format!(
                    "queue {} on gpu {:#x}: {what} after {timeout:?} (read pointer {:#x})",
                    self.queue_id,
                    self.gpu.id(),
                    self.read_u64_pointer()
                ),
            ))
        }
    }
}

impl Drop for RawQueue {
    fn drop(&mut self) {
        let mut a = kfd_ioctl_destroy_queue_args {
            queue_id: self.queue_id,
            pad: 0,
        };
        match self.session.ioctl::<DestroyQueue>(&mut a) {
            Ok(_) => {
                log::debug!(target: "thunk::queue", "destroyed queue {}", self.queue_id);
                // No queue reads them any more: keep them for the next queue.
                self.ring.recycle_on_drop();
                self.pointers.recycle_on_drop();
            }
            Err(e) => {
                log::warn!(target: "thunk::queue", "{}", Error::ioctl("DESTROY_QUEUE", e, format_args!("queue {}", self.queue_id)))
            }
        }
    }
}

/// Writes a `kfd_context_save_area_header` at the start of each XCC's CWSR area. The debugger
/// area of every XCC follows all the CWSR areas; each header's `debug_offset` is relative to
/// the header. The wave-state fields stay 0: the firmware fills them when it saves a queue.
fn write_context_save_headers(
    ctx: &Memory,
    sizes: &crate::topology::QueueSizes,
    error_payload: u64,
    error_event: u32,
) -> Result<()> {
    let cwsr = u64::from(sizes.cwsr_size);
    let debug = u64::from(sizes.debug_memory_size);
    let xcc = u64::from(sizes.num_xcc);
    for i in 0..xcc {
        let debug_offset = ((xcc - i).saturating_mul(cwsr)).saturating_add(i.saturating_mul(debug));
        let header = kfd_context_save_area_header {
            debug_offset: u32::try_from(debug_offset).unwrap_or(u32::MAX),
            debug_size: sizes.debug_memory_size,
            err_payload_addr: error_payload,
            err_event_id: error_event,
            ..Default::default()
        };
        ctx.write(i * cwsr, header.as_bytes())?;
    }
    Ok(())
}

fn ring_error(op: &'static str, e: RingError, unit: &str) -> Error {
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
fn with_encoded<T>(
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

/// The RELEASE_MEM of a 64-bit end-of-pipe fence without interrupt, built once per queue by
/// [`ReleaseMem::fence`]; [`fence_dwords`] puts an address and value into it. The address
/// and data dwords (3–6) are the same in every generation's layout.
fn fence_template(gen: GfxGen) -> Result<[u32; 8]> {
    let mut t = [0u32; 8];
    ReleaseMem::fence(gen, 0, 0, true, None)
        .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?
        .encode_into(&mut t)
        .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?;
    Ok(t)
}

/// The fence `template` writing `value` to `addr` (8-byte aligned): what
/// `ReleaseMem::fence(gen, addr, value, true, None)` encodes to.
fn fence_dwords(template: &[u32; 8], addr: u64, value: u64) -> [u32; 8] {
    let mut p = *template;
    p[3] = addr as u32;
    p[4] = (addr >> 32) as u32;
    p[5] = value as u32;
    p[6] = (value >> 32) as u32;
    p
}

/// A user-mode queue of kind `K` ([`Pm4`], [`Sdma`] or [`Aql`]): the part every kind shares
/// (id, doorbell, buffers, percentage and priority, read and write pointers in the kind's
/// unit, submit and wait) is written once here; what only one kind has is in its own `impl`
/// block (`impl Queue<Pm4>`: PM4 packets; `impl Queue<Sdma>`: SDMA packets; `impl Queue<Aql>`:
/// 64-byte packets). Dropping it destroys the queue (`DESTROY_QUEUE`), then frees its buffers.
///
/// ```
/// # fn main() -> Result<(), thunk::Error> {
/// # #[cfg(feature = "model")] {
/// use thunk::{Kfd, OpenOptions, Preset, QueueOptions};
/// let kfd = Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1))?;
/// let gpu = kfd.gpu(0).unwrap();
/// let mut q = gpu.create_pm4_queue(&QueueOptions::new().ring_size(4096))?;
/// let wptr = q.push_nop(4)?;
/// assert_eq!(wptr.get(), 4); // dwords
/// # }
/// # Ok(()) }
/// ```
pub struct Queue<K: QueueKind> {
    raw: RawQueue,
    kind: K,
}

/// A PM4 compute queue: packets from [`pm4::user`], write pointer in dwords.
pub type Pm4Queue = Queue<Pm4>;
/// An SDMA queue: packets from [`pm4::sdma`], write pointer in bytes.
pub type SdmaQueue = Queue<Sdma>;
/// An AQL queue: 64-byte packets, write pointer in packets.
pub type AqlQueue = Queue<Aql>;

impl AqlQueue {
    /// The queue's pool of completion slots (none before the first dispatch).
    pub(crate) fn completion_pool(&mut self) -> &mut Option<crate::dispatch::CompletionPool> {
        &mut self.kind.completions
    }
}

impl<K: QueueKind> std::fmt::Debug for Queue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("raw", &self.raw)
            .field("wptr", &self.kind.wptr())
            .finish()
    }
}

impl<K: QueueKind> Queue<K> {
    fn create(gpu: &Gpu, options: &QueueOptions) -> Result<Self> {
        // The kind first: a GPU whose generation it cannot serve gets no queue.
        let kind = K::new(gpu, options.ring_size)?;
        let raw = RawQueue::create(gpu, K::KIND, options)?;
        Ok(Queue { raw, kind })
    }

    /// The queue id.
    pub fn id(&self) -> u32 {
        self.raw.queue_id
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.raw.gpu
    }

    /// The `KFD_IOC_QUEUE_TYPE_*` it was created with.
    pub fn queue_type(&self) -> u32 {
        self.raw.queue_type
    }

    /// The doorbell offset `CREATE_QUEUE` returned.
    pub fn doorbell_offset(&self) -> u64 {
        self.raw.doorbell_offset
    }

    /// The CPU (and GPU) address of the queue's doorbell.
    pub fn doorbell_address(&self) -> Option<u64> {
        self.raw
            .session
            .gpus
            .get(self.raw.gpu.index)?
            .doorbells
            .get()
            .map(|p| p.range.addr() + self.raw.doorbell_byte)
    }

    /// Ring size in bytes.
    pub fn ring_size(&self) -> u32 {
        self.raw.ring_size
    }

    /// The ring buffer.
    pub fn ring(&self) -> &Memory {
        &self.raw.ring
    }

    /// The page holding the read pointer ([`READ_POINTER_OFFSET`]), the write pointer
    /// ([`WRITE_POINTER_OFFSET`]) and the error payload ([`ERROR_PAYLOAD_OFFSET`]).
    pub fn pointers(&self) -> &Memory {
        &self.raw.pointers
    }

    /// The EOP buffer (compute queues).
    pub fn eop_buffer(&self) -> Option<&Memory> {
        self.raw.eop.as_ref()
    }

    /// The context-save area (compute queues).
    pub fn context_save_area(&self) -> Option<&Memory> {
        self.raw.context_save.as_ref()
    }

    /// GPU address of the read pointer.
    pub fn read_pointer_address(&self) -> u64 {
        self.raw.pointers.gpu_addr(READ_POINTER_OFFSET)
    }

    /// GPU address of the write pointer.
    pub fn write_pointer_address(&self) -> u64 {
        self.raw.pointers.gpu_addr(WRITE_POINTER_OFFSET)
    }

    /// The error payload the firmware writes on a queue error (0 while there is none).
    pub fn error_payload(&self) -> u64 {
        self.raw
            .pointers
            .load_u64(ERROR_PAYLOAD_OFFSET)
            .unwrap_or(0)
    }

    /// The current percentage.
    pub fn percentage(&self) -> u32 {
        self.raw.percentage
    }

    /// The current priority.
    pub fn priority(&self) -> QueuePriority {
        self.raw.priority
    }

    /// Changes percentage and priority (`UPDATE_QUEUE`); percentage 0 deactivates the queue.
    pub fn update(&mut self, percentage: u32, priority: QueuePriority) -> Result<()> {
        if percentage > KFD_MAX_QUEUE_PERCENTAGE {
            return Err(Error::invalid(
                "UPDATE_QUEUE",
                format!("queue percentage {percentage} is above {KFD_MAX_QUEUE_PERCENTAGE}"),
            ));
        }
        let mut a = kfd_ioctl_update_queue_args {
            ring_base_address: self.raw.ring.gpu_va(),
            queue_id: self.raw.queue_id,
            ring_size: self.raw.ring_size,
            queue_percentage: percentage,
            queue_priority: priority.raw(),
        };
        self.raw.session.ioctl::<UpdateQueue>(&mut a).map_err(|e| {
            Error::ioctl(
                "UPDATE_QUEUE",
                e,
                format_args!("queue {}", self.raw.queue_id),
            )
        })?;
        self.raw.percentage = percentage;
        self.raw.priority = priority;
        Ok(())
    }

    /// Restricts the queue to the CUs whose bits are set (`SET_CU_MASK`; bit `i` of word `w`
    /// is CU `32·w + i`).
    pub fn set_cu_mask(&self, mask: &[u32]) -> Result<()> {
        const OP: &str = "SET_CU_MASK";
        if mask.is_empty() {
            return Err(Error::invalid(OP, "the CU mask is empty"));
        }
        let bits = u32::try_from(mask.len())
            .ok()
            .and_then(|n| n.checked_mul(32))
            .ok_or_else(|| Error::invalid(OP, "the CU mask is too long"))?;
        let mut a = kfd_ioctl_set_cu_mask_args {
            queue_id: self.raw.queue_id,
            num_cu_mask: bits,
            cu_mask_ptr: mask.as_ptr() as u64,
        };
        self.raw.session.ioctl::<SetCuMask>(&mut a).map_err(|e| {
            Error::ioctl(
                OP,
                e,
                format_args!("queue {}, {bits} bits", self.raw.queue_id),
            )
        })?;
        Ok(())
    }

    /// Gives the queue `count` global wave sync entries (`ALLOC_QUEUE_GWS`); returns the first.
    pub fn alloc_gws(&self, count: u32) -> Result<u32> {
        let mut a = kfd_ioctl_alloc_queue_gws_args {
            queue_id: self.raw.queue_id,
            num_gws: count,
            ..Default::default()
        };
        self.raw
            .session
            .ioctl::<AllocQueueGws>(&mut a)
            .map_err(|e| {
                Error::ioctl(
                    "ALLOC_QUEUE_GWS",
                    e,
                    format_args!("queue {}", self.raw.queue_id),
                )
            })?;
        Ok(a.first_gws)
    }

    /// The read pointer the engine reported.
    pub fn rptr(&self) -> K::Pointer {
        self.kind.rptr(&self.raw)
    }

    /// The published write pointer.
    pub fn wptr(&self) -> K::Pointer {
        self.kind.wptr()
    }

    /// Makes everything pushed visible to the engine (pushed packets are in the ring
    /// already): stores the write pointer and rings the doorbell. Returns the new write
    /// pointer.
    pub fn submit(&mut self) -> Result<K::Pointer> {
        self.kind.submit(&self.raw)
    }

    /// Discards everything pushed since the last submit.
    pub fn rollback(&mut self) {
        self.kind.rollback();
    }

    /// Waits until the engine has read everything submitted.
    pub fn wait_idle(&self, timeout: Duration) -> Result<()> {
        self.raw.wait_for(
            &format!("{} did not reach write pointer {}", K::ENGINE, self.wptr()),
            timeout,
            || self.kind.idle(&self.raw),
        )
    }
}

/// The PM4 compute kind: packets from [`pm4::user`] built for the GPU's generation, write
/// pointer in dwords ([`DwordPtr`]); pushed packets are written into the ring at once and
/// published on submit.
pub struct Pm4 {
    ring: Pm4Ring,
    gen: GfxGen,
    /// [`fence_template`] for `gen`.
    fence: [u32; 8],
    /// Write pointer where `ring` starts counting (a multiple of the ring size): moves when
    /// the ring is resized.
    base: u64,
}

/// The SDMA kind: packets from [`pm4::sdma`], write pointer in bytes ([`SdmaBytePtr`]).
pub struct Sdma {
    ring: SdmaRing,
    gen: SdmaGen,
    /// Write pointer (bytes) where `ring` starts counting: moves when the ring is resized.
    base: u64,
}

/// The AQL kind: 64-byte packets written in place, write pointer in packets ([`AqlSlotPtr`]).
/// Kernel dispatch needs shader code; barrier and vendor packets are what a tool writes.
pub struct Aql {
    slots: u64,
    wptr: u64,
    pending: u64,
    /// The read index last read from memory.
    rptr_seen: u64,
    /// Completion signals and kernarg segments reused by [`AqlQueue::dispatch`], made on
    /// the first dispatch.
    completions: Option<crate::dispatch::CompletionPool>,
    /// Scratch backing memory, newest last: older buffers stay until the queue is gone, since
    /// dispatches that started with them may still run.
    scratch: Vec<Memory>,
    /// Bytes per lane and waves the newest scratch buffer holds.
    scratch_lane_bytes: u32,
    scratch_waves: u32,
}

impl std::fmt::Debug for Pm4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pm4")
            .field("ring", &self.ring)
            .field("gen", &self.gen)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Sdma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sdma")
            .field("ring", &self.ring)
            .field("gen", &self.gen)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Aql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aql")
            .field("slots", &self.slots)
            .field("wptr", &self.wptr)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl sealed::Sealed for Pm4 {}
impl sealed::Sealed for Sdma {}
impl sealed::Sealed for Aql {}

impl QueueKind for Pm4 {
    type Pointer = DwordPtr;
    const KIND: Kind = Kind::Pm4;
    const ENGINE: &'static str = "the CP";

    fn new(gpu: &Gpu, ring_bytes: u32) -> Result<Self> {
        let gen = gpu.gfx_gen()?;
        let dwords = (ring_bytes / 4) as usize;
        Ok(Pm4 {
            ring: Pm4Ring::new(dwords).map_err(|e| ring_error("CREATE_QUEUE", e, "dwords"))?,
            gen,
            fence: fence_template(gen)?,
            base: 0,
        })
    }

    fn rptr(&self, raw: &RawQueue) -> DwordPtr {
        DwordPtr::new(raw.read_u32_pointer())
    }

    fn wptr(&self) -> DwordPtr {
        self.ring.wptr().add(self.base)
    }

    fn submit(&mut self, raw: &RawQueue) -> Result<DwordPtr> {
        // The packets are in the ring already.
        let w = self.ring.submit().add(self.base);
        raw.publish(w.get())?;
        Ok(w)
    }

    fn rollback(&mut self) {
        self.ring.rollback();
    }

    fn idle(&self, raw: &RawQueue) -> bool {
        // The CP reports a dword offset inside the ring.
        let size = self.ring.size_dwords() as u64;
        self.rptr(raw).slot(size) == self.ring.wptr().slot(size)
    }
}

impl QueueKind for Sdma {
    type Pointer = SdmaBytePtr;
    const KIND: Kind = Kind::Sdma;
    const ENGINE: &'static str = "the SDMA engine";

    fn new(gpu: &Gpu, ring_bytes: u32) -> Result<Self> {
        let gen = gpu.sdma_gen()?;
        let dwords = (ring_bytes / 4) as usize;
        Ok(Sdma {
            ring: SdmaRing::new(dwords).map_err(|e| ring_error("CREATE_QUEUE", e, "dwords"))?,
            gen,
            base: 0,
        })
    }

    fn rptr(&self, raw: &RawQueue) -> SdmaBytePtr {
        SdmaBytePtr::new(raw.read_u64_pointer())
    }

    fn wptr(&self) -> SdmaBytePtr {
        self.ring.wptr().add(self.base)
    }

    fn submit(&mut self, raw: &RawQueue) -> Result<SdmaBytePtr> {
        // The packets are in the ring already.
        let w = self.ring.submit().add(self.base);
        raw.publish(w.get())?;
        Ok(w)
    }

    fn rollback(&mut self) {
        self.ring.rollback();
    }

    fn idle(&self, raw: &RawQueue) -> bool {
        self.rptr(raw) == self.wptr()
    }
}

impl QueueKind for Aql {
    type Pointer = AqlSlotPtr;
    const KIND: Kind = Kind::Aql;
    const ENGINE: &'static str = "the packet processor";

    fn new(gpu: &Gpu, ring_bytes: u32) -> Result<Self> {
        gpu.gfx_gen()?;
        Ok(Aql {
            slots: u64::from(ring_bytes) / AQL_PACKET_BYTES,
            wptr: 0,
            pending: 0,
            rptr_seen: 0,
            completions: None,
            scratch: Vec::new(),
            scratch_lane_bytes: 0,
            scratch_waves: 0,
        })
    }

    fn rptr(&self, raw: &RawQueue) -> AqlSlotPtr {
        AqlSlotPtr::new(raw.read_u64_pointer())
    }

    fn wptr(&self) -> AqlSlotPtr {
        AqlSlotPtr::new(self.wptr)
    }

    fn submit(&mut self, raw: &RawQueue) -> Result<AqlSlotPtr> {
        self.wptr = self.pending;
        raw.publish(self.wptr)?;
        Ok(AqlSlotPtr::new(self.wptr))
    }

    fn rollback(&mut self) {
        // Packets are written in place, but only `submit` publishes them.
        self.pending = self.wptr;
    }

    fn idle(&self, raw: &RawQueue) -> bool {
        raw.read_u64_pointer() == self.wptr
    }
}

/// The kinds whose rings count dwords (PM4 and SDMA), which share one push path.
trait DwordRingKind: QueueKind {
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
fn refresh<K: DwordRingKind>(q: &mut Queue<K>) {
    let r = q.rptr();
    q.kind.set_rptr(r);
}

/// Places `dwords` in the ring, writes them (and the NOP filler of a wrap) and adds them to
/// the pending write pointer. Inlined: a fence's eight dwords become fixed-size stores.
#[inline(always)]
fn push_dwords<K: DwordRingKind>(q: &mut Queue<K>, dwords: &[u32]) -> Result<K::Pointer> {
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

impl Queue<Pm4> {
    /// The PM4 generation packets are built for.
    pub fn gfx_gen(&self) -> GfxGen {
        self.kind.gen
    }

    /// The ring discipline state (pointers, free space).
    pub fn ring_state(&self) -> &Pm4Ring {
        &self.kind.ring
    }

    /// The write pointer including pushed, unsubmitted packets.
    pub fn pending_wptr(&self) -> DwordPtr {
        self.kind.pending()
    }

    /// Dwords free right now.
    pub fn free_dwords(&mut self) -> usize {
        refresh(self);
        self.kind.ring.free_dwords()
    }

    /// Appends a packet (not yet visible to the CP); returns the pending write pointer. The
    /// packet is encoded first and goes into the ring past the published write pointer; one
    /// that fails to encode or does not fit leaves the ring and the write pointer as they
    /// were.
    pub fn push<P: Encode + ?Sized>(&mut self, packet: &P) -> Result<DwordPtr> {
        with_encoded(
            packet.dwords(),
            self.kind.ring.size_dwords(),
            |buf| packet.encode_into(buf),
            |dw| push_dwords(self, dw),
        )
    }

    /// Appends already-encoded dwords.
    pub fn push_raw(&mut self, dwords: &[u32]) -> Result<DwordPtr> {
        push_dwords(self, dwords)
    }

    /// Appends a NOP of `dwords` dwords (header included).
    pub fn push_nop(&mut self, dwords: usize) -> Result<DwordPtr> {
        let max = pm4::header::MAX_PACKET_DWORDS;
        if dwords == 0 || dwords > max {
            return Err(Error::invalid(
                "push",
                format!("a NOP is 1 to {max} dwords, not {dwords}"),
            ));
        }
        with_encoded(
            dwords,
            self.kind.ring.size_dwords(),
            |buf| pm4::writer::write_nop(buf, dwords),
            |dw| push_dwords(self, dw),
        )
    }

    /// Appends a WRITE_DATA of `data` to `addr` (4-byte aligned).
    pub fn push_write_data(&mut self, addr: u64, data: &[u32]) -> Result<DwordPtr> {
        let p = WriteData::memory(addr, data)
            .map_err(|e| Error::invalid("WRITE_DATA", e.to_string()))?;
        self.push(&p)
    }

    /// Appends a RELEASE_MEM built from `args` in this GPU's layout.
    pub fn push_release_mem(&mut self, args: &ReleaseMemArgs) -> Result<DwordPtr> {
        let p = ReleaseMem::new(self.kind.gen, args)
            .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?;
        self.push(&p)
    }

    /// Appends an end-of-pipe fence: RELEASE_MEM writing the 64-bit `value` to `addr`
    /// (8-byte aligned) once everything before it completed.
    pub fn push_fence(&mut self, addr: u64, value: u64) -> Result<DwordPtr> {
        if addr % 8 == 0 {
            // The queue's template with the address and value put in: no packet built.
            let p = fence_dwords(&self.kind.fence, addr, value);
            return push_dwords(self, &p);
        }
        // Misaligned: the builder says why.
        let p = ReleaseMem::fence(self.kind.gen, addr, value, true, None)
            .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?;
        self.push(&p)
    }

    /// Appends the signal of `event` (facts §8.2): RELEASE_MEM writing the trigger value into
    /// the event's slot, then an interrupt with the event id.
    pub fn push_signal(&mut self, event: &Event) -> Result<DwordPtr> {
        let t = signal_target(event)?;
        let p = ReleaseMem::signal(self.kind.gen, &t)
            .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?;
        self.push(&p)
    }

    /// Gives the queue a new ring of `bytes` (`UPDATE_QUEUE` with a new ring address and size).
    /// Needs nothing pushed and unsubmitted; waits until the CP has read everything, then pads
    /// the old ring with NOPs until the write pointer is a multiple of both ring sizes, so the
    /// CP's read position means the same in the old and the new ring.
    pub fn resize_ring(&mut self, bytes: u32, timeout: Duration) -> Result<()> {
        QueueOptions::new().ring_size(bytes).validate(Kind::Pm4)?;
        if bytes == self.raw.ring_size {
            return Ok(());
        }
        if self.kind.ring.pending_wptr() != self.kind.ring.wptr() {
            return Err(Error::invalid(
                "UPDATE_QUEUE",
                "packets were pushed but not submitted; submit or roll them back before resizing",
            ));
        }
        let new_ring = self.raw.alloc_ring(bytes)?;
        self.wait_idle(timeout)?;
        let old_dwords = self.kind.ring.size_dwords();
        let new_dwords = (bytes / 4) as usize;
        let multiple = old_dwords.max(new_dwords) as u64;
        let w = self.raw.pad_write_pointer(
            self.wptr().get(),
            multiple,
            pm4::header::NOP_ONE_DWORD,
            timeout,
            |w| w,
            |q, w| q.read_u32_pointer() == w % u64::from(q.ring_size / 4),
        )?;
        // Rebased on the old ring first: a refused update leaves a consistent queue.
        self.kind.base = w;
        self.kind.ring =
            Pm4Ring::new(old_dwords).map_err(|e| ring_error("UPDATE_QUEUE", e, "dwords"))?;
        self.raw.replace_ring(new_ring, bytes)?;
        self.kind.ring =
            Pm4Ring::new(new_dwords).map_err(|e| ring_error("UPDATE_QUEUE", e, "dwords"))?;
        Ok(())
    }

    /// Waits until at least `dwords` are free.
    pub fn wait_for_space(&mut self, dwords: usize, timeout: Duration) -> Result<()> {
        let size = self.kind.ring.size_dwords();
        let r = poll_until(timeout, || {
            let rp = DwordPtr::new(self.raw.read_u32_pointer());
            let w = self.kind.ring.pending_wptr().slot(size as u64) as usize;
            (rp.slot(size as u64) as usize + size - 1 - w) % size >= dwords
        });
        refresh(self);
        if r {
            Ok(())
        } else {
            Err(Error::timeout(
                "wait",
                format!(
                    "queue {}: {dwords} dwords did not become free within {timeout:?} ({} free)",
                    self.raw.queue_id,
                    self.kind.ring.free_dwords()
                ),
            ))
        }
    }
}

fn signal_target(event: &Event) -> Result<SignalTarget> {
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

impl Queue<Sdma> {
    /// The SDMA generation packets are built for.
    pub fn sdma_gen(&self) -> SdmaGen {
        self.kind.gen
    }

    /// The ring discipline state.
    pub fn ring_state(&self) -> &SdmaRing {
        &self.kind.ring
    }

    /// The write pointer including pushed, unsubmitted packets.
    pub fn pending_wptr(&self) -> SdmaBytePtr {
        self.kind.pending()
    }

    /// Appends a packet; returns the pending write pointer.
    /// As [`Pm4Queue::push`]: encoded first, then written into the ring.
    pub fn push<P: Encode + ?Sized>(&mut self, packet: &P) -> Result<SdmaBytePtr> {
        with_encoded(
            packet.dwords(),
            self.kind.ring.size_dwords(),
            |buf| packet.encode_into(buf),
            |dw| push_dwords(self, dw),
        )
    }

    /// Appends already-encoded dwords.
    pub fn push_raw(&mut self, dwords: &[u32]) -> Result<SdmaBytePtr> {
        push_dwords(self, dwords)
    }

    /// Copies `bytes` from `src` to `dst` (as many COPY_LINEAR packets as the generation's
    /// byte-count field needs).
    pub fn push_copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<SdmaBytePtr> {
        let max = pm4::sdma::max_copy_bytes(self.kind.gen);
        let mut done = 0;
        let mut w = self.pending_wptr();
        while done < bytes {
            let n = (bytes - done).min(max);
            let p = SdmaCopyLinear::new(self.kind.gen, src + done, dst + done, n)
                .map_err(|e| Error::invalid("COPY_LINEAR", e.to_string()))?;
            w = self.push(&p)?;
            done += n;
        }
        Ok(w)
    }

    /// Fills `bytes` (a multiple of 4) at `dst` with the dword `value`.
    pub fn push_fill(&mut self, dst: u64, value: u32, bytes: u64) -> Result<SdmaBytePtr> {
        let max = pm4::sdma::max_fill_bytes(self.kind.gen) & !3;
        let mut done = 0;
        let mut w = self.pending_wptr();
        while done < bytes {
            let n = (bytes - done).min(max);
            let p = SdmaConstantFill::new(self.kind.gen, dst + done, value, n)
                .map_err(|e| Error::invalid("CONSTANT_FILL", e.to_string()))?;
            w = self.push(&p)?;
            done += n;
        }
        Ok(w)
    }

    /// Writes `data` to `dst` (SDMA WRITE).
    pub fn push_write(&mut self, dst: u64, data: &[u32]) -> Result<SdmaBytePtr> {
        let p = SdmaWrite::new(dst, data).map_err(|e| Error::invalid("WRITE", e.to_string()))?;
        self.push(&p)
    }

    /// Writes the 32-bit `value` to `addr` once everything before it completed (FENCE).
    pub fn push_fence(&mut self, addr: u64, value: u32) -> Result<SdmaBytePtr> {
        let p = SdmaFence::new(addr, value).map_err(|e| Error::invalid("FENCE", e.to_string()))?;
        self.push(&p)
    }

    /// Raises an interrupt with context `int_context` (TRAP).
    pub fn push_trap(&mut self, int_context: u32) -> Result<SdmaBytePtr> {
        let p = SdmaTrap::new(int_context).map_err(|e| Error::invalid("TRAP", e.to_string()))?;
        self.push(&p)
    }

    /// Appends the signal of `event` (facts §8.2): FENCE of the trigger value into the slot,
    /// then TRAP with the event id.
    pub fn push_signal(&mut self, event: &Event) -> Result<SdmaBytePtr> {
        let t = signal_target(event)?;
        self.push_fence(t.slot_address, t.value)?;
        self.push_trap(t.int_ctxid)
    }

    /// Gives the queue a new ring of `bytes`, as [`Pm4Queue::resize_ring`] does (padding with
    /// SDMA NOPs).
    pub fn resize_ring(&mut self, bytes: u32, timeout: Duration) -> Result<()> {
        QueueOptions::new().ring_size(bytes).validate(Kind::Sdma)?;
        if bytes == self.raw.ring_size {
            return Ok(());
        }
        if self.kind.ring.pending_wptr() != self.kind.ring.wptr() {
            return Err(Error::invalid(
                "UPDATE_QUEUE",
                "packets were pushed but not submitted; submit or roll them back before resizing",
            ));
        }
        let new_ring = self.raw.alloc_ring(bytes)?;
        self.wait_idle(timeout)?;
        let old_dwords = self.kind.ring.size_dwords();
        let new_dwords = (bytes / 4) as usize;
        let multiple = old_dwords.max(new_dwords) as u64;
        let w = self.raw.pad_write_pointer(
            self.wptr().get() / 4,
            multiple,
            0,
            timeout,
            |w| w * 4,
            |q, w| q.read_u64_pointer() == w,
        )?;
        self.kind.base = w * 4;
        self.kind.ring =
            SdmaRing::new(old_dwords).map_err(|e| ring_error("UPDATE_QUEUE", e, "dwords"))?;
        self.raw.replace_ring(new_ring, bytes)?;
        self.kind.ring =
            SdmaRing::new(new_dwords).map_err(|e| ring_error("UPDATE_QUEUE", e, "dwords"))?;
        Ok(())
    }
}

/// Lanes of a wave64.
const WAVE64_LANES: u64 = 64;

impl Queue<Aql> {
    /// Makes sure dispatches of this queue get at least `lane_bytes` of scratch per lane for
    /// `waves` waves (one workgroup's): allocates a larger backing buffer when needed and
    /// publishes it in the queue's `amd_queue_t` scratch fields — the swizzled buffer
    /// resource ROCr uses (SWIZZLE_ENABLE, 4-byte elements, index stride 64, ADD_TID_ENABLE),
    /// base, size and bytes per lane.
    ///
    /// The `amd_queue_t` is the start of the queue's pointer page. [`AqlQueue::dispatch`]
    /// calls this for every kernel that has a private segment, so the queue never runs out of
    /// scratch (the page's `queue_inactive_signal` is 0: no signal to report it on). Not done
    /// yet: the `compute_tmpring_size` word, which a GPU's packet processor also reads and the
    /// model does not.
    pub fn reserve_scratch(&mut self, lane_bytes: u32, waves: u32) -> Result<()> {
        let lane_bytes = lane_bytes.next_multiple_of(16);
        let waves = waves.max(1);
        if lane_bytes <= self.kind.scratch_lane_bytes && waves <= self.kind.scratch_waves {
            return Ok(());
        }
        let lane_bytes = lane_bytes.max(self.kind.scratch_lane_bytes);
        let waves = waves.max(self.kind.scratch_waves);
        let size = u64::from(lane_bytes) * WAVE64_LANES * u64::from(waves);
        let num_records = u32::try_from(size).map_err(|_| {
            Error::invalid(
                "scratch",
                format!("{lane_bytes} bytes per lane for {waves} waves is more than 4 GiB"),
            )
        })?;
        let memory = self.raw.gpu.alloc(MemoryKind::Gtt, size)?;
        let base = memory.gpu_va();
        let queue = self
            .read_pointer_address()
            .wrapping_sub(amd_queue::READ_DISPATCH_ID);
        let page = self.raw.pointers.gpu_va();
        let offset = |field: u64| queue.wrapping_add(field).wrapping_sub(page);
        let resource = [
            base as u32,
            ((base >> 32) as u32 & 0xFFFF) | 1 << 31,
            num_records,
            1 << 19 | 3 << 21 | 1 << 23,
        ];
        for (i, word) in resource.iter().enumerate() {
            self.raw.pointers.store_u32(
                offset(amd_queue::SCRATCH_RESOURCE_DESCRIPTOR) + 4 * i as u64,
                *word,
            )?;
        }
        self.raw
            .pointers
            .store_u64(offset(amd_queue::SCRATCH_BACKING_MEMORY_LOCATION), base)?;
        self.raw
            .pointers
            .store_u64(offset(amd_queue::SCRATCH_BACKING_MEMORY_BYTE_SIZE), size)?;
        self.raw
            .pointers
            .store_u32(offset(amd_queue::SCRATCH_WAVE64_LANE_BYTE_SIZE), lane_bytes)?;
        log::debug!(target: "thunk::queue", "queue {}: scratch {lane_bytes} bytes per lane for {waves} waves at {base:#x}", self.raw.queue_id);
        self.kind.scratch.push(memory);
        self.kind.scratch_lane_bytes = lane_bytes;
        self.kind.scratch_waves = waves;
        Ok(())
    }

    /// Ring size in packets.
    pub fn size_packets(&self) -> u64 {
        self.kind.slots
    }

    /// Writes a packet into the next slot: dwords 1–15 first, then dword 0 (header and setup)
    /// with release ordering, so the packet processor never sees a half-written packet.
    /// Returns the packet's index.
    pub fn push_packet(&mut self, packet: &[u32; AQL_PACKET_DWORDS]) -> Result<AqlSlotPtr> {
        if self.kind.pending.wrapping_sub(self.kind.rptr_seen) >= self.kind.slots {
            self.kind.rptr_seen = self.raw.read_u64_pointer();
        }
        let rptr = self.kind.rptr_seen;
        if self.kind.pending.wrapping_sub(rptr) >= self.kind.slots {
            return Err(Error::new(
                "push",
                Errno::ENOSPC,
                format!(
                    "AQL ring full: {} packets pending, read index {rptr:#x}; submit and wait",
                    self.kind.slots
                ),
            ));
        }
        let at = AqlSlotPtr::new(self.kind.pending);
        let offset = at.slot(self.kind.slots) * AQL_PACKET_BYTES;
        self.raw.ring.write_dwords(offset + 4, &packet[1..])?;
        self.raw.ring.store_u32(offset, packet[0])?;
        self.kind.pending += 1;
        Ok(at)
    }

    /// Waits until at least `packets` slots are free.
    pub fn wait_for_space(&self, packets: u64, timeout: Duration) -> Result<()> {
        let need = packets.min(self.kind.slots);
        if poll_until(timeout, || {
            self.kind.slots
                - self
                    .kind
                    .pending
                    .wrapping_sub(self.raw.read_u64_pointer())
                    .min(self.kind.slots)
                >= need
        }) {
            Ok(())
        } else {
            Err(Error::timeout(
                "wait",
                format!(
                    "queue {}: {packets} AQL slots did not become free within {timeout:?}",
                    self.raw.queue_id
                ),
            ))
        }
    }
}

impl Gpu {
    /// Creates a PM4 compute queue.
    pub fn create_pm4_queue(&self, options: &QueueOptions) -> Result<Pm4Queue> {
        Queue::create(self, options)
    }

    /// Creates an SDMA queue.
    pub fn create_sdma_queue(&self, options: &QueueOptions) -> Result<SdmaQueue> {
        Queue::create(self, options)
    }

    /// Creates an AQL compute queue.
    pub fn create_aql_queue(&self, options: &QueueOptions) -> Result<AqlQueue> {
        Queue::create(self, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-queue fence template with an address and value put in is, dword for dword,
    /// the packet the RELEASE_MEM builder makes, in every generation's layout.
    #[test]
    fn fence_template_matches_the_builder() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for gen in [GfxGen::Gfx9, GfxGen::Gfx10, GfxGen::Gfx11] {
            let t = fence_template(gen).unwrap();
            let mut cases = vec![(0, 0), (8, 1), (0xFFFF_FFFF_FFFF_FFF8, u64::MAX)];
            for _ in 0..1000 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                cases.push((seed & !7, seed.rotate_left(29)));
            }
            for (addr, value) in cases {
                let mut want = [0u32; 8];
                ReleaseMem::fence(gen, addr, value, true, None)
                    .unwrap()
                    .encode_into(&mut want)
                    .unwrap();
                assert_eq!(
                    fence_dwords(&t, addr, value),
                    want,
                    "{gen:?} {addr:#x} {value:#x}"
                );
            }
        }
    }
}
