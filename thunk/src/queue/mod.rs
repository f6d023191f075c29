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

mod aql;
mod doorbell;
mod dword;
mod kind;
mod options;
mod pm4;
mod raw;
mod scratch;
mod sdma;

pub use self::pm4::Pm4;
pub use aql::Aql;
pub(crate) use doorbell::DoorbellPage;
pub use kind::QueueKind;
pub use options::{QueueOptions, QueuePriority, SdmaEngine, DEFAULT_RING_SIZE};
pub use sdma::Sdma;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::memory::Memory;
use ::pm4::aql::amd_queue;
use kfd_sys::*;
use raw::RawQueue;
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

/// A PM4 compute queue: packets from [`pm4::user`](crate::pm4::user), write pointer in dwords.
pub type Pm4Queue = Queue<Pm4>;
/// An SDMA queue: packets from [`pm4::sdma`](crate::pm4::sdma), write pointer in bytes.
pub type SdmaQueue = Queue<Sdma>;
/// An AQL queue: 64-byte packets, write pointer in packets.
pub type AqlQueue = Queue<Aql>;

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
