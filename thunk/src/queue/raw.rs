//! What every queue kind has: `CREATE_QUEUE` with its buffers, the doorbell, publishing the
//! write pointer, `DESTROY_QUEUE`.

use super::doorbell::ensure_doorbells;
use super::kind::Kind;
use super::options::{QueueOptions, QueuePriority, SdmaEngine};
use super::{ERROR_PAYLOAD_OFFSET, READ_POINTER_OFFSET, WRITE_POINTER_OFFSET};
use crate::error::{Errno, Error, Result};
use crate::gpu::Gpu;
use crate::kfd::Session;
use crate::memory::{AllocOptions, Memory, MemoryKind};
use crate::poll::poll_until;
use kfd_sys::*;
use pm4::aql::{AqlHeader, AqlPacketType, FenceScope};
use pm4::ring::AQL_PACKET_BYTES;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What every queue kind has: its id, doorbell and buffers. Dropping it destroys the queue
/// (`DESTROY_QUEUE`), then frees the buffers; the ring and the pointer page go to the GPU's
/// pool of queue buffers when it has room (`crate::pool`).
pub struct RawQueue {
    pub(super) session: Arc<Session>,
    pub(super) gpu: Gpu,
    pub(super) kind: Kind,
    pub(super) queue_type: u32,
    pub(super) queue_id: u32,
    pub(super) doorbell_offset: u64,
    /// Byte offset of the queue's doorbell in the GPU's doorbell page.
    pub(super) doorbell_byte: u64,
    pub(super) ring_size: u32,
    pub(super) percentage: u32,
    pub(super) priority: QueuePriority,
    // Dropped after `Drop::drop` destroyed the queue.
    pub(super) ring: Memory,
    pub(super) pointers: Memory,
    pub(super) eop: Option<Memory>,
    pub(super) context_save: Option<Memory>,
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
    pub(super) fn create(gpu: &Gpu, kind: Kind, opts: &QueueOptions) -> Result<RawQueue> {
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
    pub(super) fn alloc_ring(&self, bytes: u32) -> Result<Memory> {
        self.gpu.alloc_with(
            &AllocOptions::new(MemoryKind::Gtt, u64::from(bytes))
                .flags(KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT),
        )
    }

    /// Moves the write pointer `w` (absolute, in dwords) of an idle queue on to a multiple of
    /// `multiple` dwords by writing `filler` dwords (a one-dword NOP) into the ring, in submits
    /// the engine finishes one by one — never a whole ring at once. `published` turns a dword
    /// position into the write-pointer value, `reached` says whether the engine read up to it.
    pub(super) fn pad_write_pointer(
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
    pub(super) fn replace_ring(&mut self, ring: Memory, bytes: u32) -> Result<()> {
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
    pub(super) fn publish(&self, wptr: u64) -> Result<()> {
        let doorbell = self.doorbell()?;
        let wptr_word = self.pointers.atomic_u64(WRITE_POINTER_OFFSET)?;
        wptr_word.store(wptr, Ordering::Release);
        doorbell.store(wptr, Ordering::Release);
        self.session.backend.doorbell_rung(self.gpu.id());
        Ok(())
    }

    pub(super) fn read_u32_pointer(&self) -> u64 {
        self.pointers
            .load_u32(READ_POINTER_OFFSET)
            .map(u64::from)
            .unwrap_or(0)
    }

    pub(super) fn read_u64_pointer(&self) -> u64 {
        self.pointers.load_u64(READ_POINTER_OFFSET).unwrap_or(0)
    }

    pub(super) fn wait_for(
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
