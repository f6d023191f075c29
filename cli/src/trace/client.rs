//! A client of the model that speaks only ioctl bytes, as a C program on `/dev/kfd` does:
//! ACQUIRE_VM with a render node, ALLOC/MAP buffers, CREATE/DESTROY_QUEUE with the buffers
//! Linux 6.12 validates. Every ioctl is timed for the timeline.
// ALLOC_MEMORY_OF_GPU, WAIT_EVENTS and SVM are `unsafe` to issue (a USERPTR buffer, an output
// array, a range given to the GPU); the calls here uphold their contract.
#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

use kfd_model::{MapSource, Model, Process, RenderNode};
use kfd_sys::*;

use crate::error::{CliError, CliResult};

/// One ioctl as the timeline shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct IoctlSpan {
    /// `AMDKFD_IOC_…`.
    pub name: &'static str,
    /// PASID of the caller.
    pub pasid: u32,
    /// Start, microseconds since the trace began.
    pub start_us: f64,
    /// End.
    pub end_us: f64,
    /// `0`, or the errno name.
    pub result: String,
}

/// The ioctls of a trace, shared by its clients.
pub type Spans = Rc<RefCell<Vec<IoctlSpan>>>;

/// A queue's buffers and ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueInfo {
    /// The queue id CREATE_QUEUE returned.
    pub id: u32,
    /// The `queue_type` it was created with.
    pub queue_type: u32,
    /// Ring address and size.
    pub ring: (u64, u32),
    /// Where the client stores the write pointer.
    pub wptr_address: u64,
    /// Where the engine reports the read pointer.
    pub rptr_address: u64,
    /// The mmap offset of its doorbell.
    pub doorbell_offset: u64,
}

/// A GTT buffer allocated, mapped on the GPU and mapped for the CPU.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// GPU (= CPU) virtual address.
    pub va: u64,
    /// Size in bytes.
    pub size: u64,
    /// The handle ALLOC_MEMORY_OF_GPU returned.
    pub handle: u64,
    mem: MapSource,
}

impl Buffer {
    /// Stores `data` at byte `offset` of the buffer.
    pub fn write(&self, offset: u64, data: &[u8]) -> CliResult<()> {
        let at = self
            .mem
            .offset
            .checked_add(offset)
            .and_then(|o| usize::try_from(o).ok());
        at.and_then(|at| self.mem.memory.write(at, data))
            .ok_or_else(|| CliError::failure(format!("write outside the buffer at {:#x}", self.va)))
    }

    /// Loads the 64-bit value at byte `offset`.
    pub fn read_u64(&self, offset: u64) -> Option<u64> {
        let at = usize::try_from(self.mem.offset.checked_add(offset)?).ok()?;
        self.mem.memory.load_u64(at)
    }
}

/// One process of the model with its VM acquired on one GPU.
pub struct Client {
    /// The open `/dev/kfd`.
    pub process: Process,
    /// The render node whose fd ACQUIRE_VM took.
    pub render: RenderNode,
    /// The GPU.
    pub gpu_id: u32,
    model: Model,
    next_va: Cell<u64>,
    spans: Spans,
    epoch: Instant,
}

impl Client {
    /// Opens `/dev/kfd` and the render node of `gpu_id` and acquires the VM.
    pub fn open(model: &Model, gpu_id: u32, spans: Spans, epoch: Instant) -> CliResult<Client> {
        let node = model
            .topology()
            .gpus()
            .find(|n| n.gpu_id == gpu_id)
            .ok_or_else(|| CliError::failure(format!("the model has no GPU {gpu_id:#x}")))?;
        let minor = u32::try_from(node.properties.drm_render_minor)
            .map_err(|_| CliError::failure("render minor out of range"))?;
        let process = model
            .open()
            .map_err(|e| CliError::failure(format!("open /dev/kfd: {e}")))?;
        let render = model
            .open_render_node(minor)
            .map_err(|e| CliError::failure(format!("open renderD{minor}: {e}")))?;
        let client = Client {
            process,
            gpu_id,
            model: model.clone(),
            next_va: Cell::new(0x1_0000_0000),
            spans,
            epoch,
            render,
        };
        let mut acquire = kfd_ioctl_acquire_vm_args {
            drm_fd: client.render.fd as u32,
            gpu_id,
        };
        client.ioctl::<AcquireVm>(&mut acquire)?;
        Ok(client)
    }

    /// The PASID.
    pub fn pasid(&self) -> u32 {
        self.process.pasid()
    }

    /// A typed ioctl that safe code may issue: the struct's bytes in, the kernel's bytes back.
    pub fn ioctl<R: SafeIoctl>(&self, args: &mut R::Arg) -> CliResult<i32> {
        self.timed::<R>(args, |process, args| process.call::<R>(args))
    }

    /// Issues `R` through `issue` and records its span on the timeline.
    fn timed<R: Ioctl>(
        &self,
        args: &mut R::Arg,
        issue: impl FnOnce(&Process, &mut R::Arg) -> kfd_model::KResult<i32>,
    ) -> CliResult<i32> {
        let name = R::NAME;
        let start = self.epoch.elapsed();
        let result = issue(&self.process, args);
        let end = self.epoch.elapsed();
        self.spans.borrow_mut().push(IoctlSpan {
            name,
            pasid: self.pasid(),
            start_us: start.as_secs_f64() * 1e6,
            end_us: end.as_secs_f64() * 1e6,
            result: match &result {
                Ok(r) => r.to_string(),
                Err(e) => format!("{e:?}"),
            },
        });
        result.map_err(|e| CliError::failure(format!("{name} failed: {e}")))
    }

    /// Page-aligned host memory of `pages` pages for an SVM range, kept for the life of the
    /// process (the GPU may reach it at any time once it is a range). Only its address is kept:
    /// no Rust reference points into memory the GPU writes.
    pub fn svm_memory(pages: u64) -> u64 {
        let page = 4096u64;
        let raw = Box::into_raw(vec![0u8; ((pages + 1) * page) as usize].into_boxed_slice());
        (raw as *mut u8 as u64).next_multiple_of(page)
    }

    /// AMDKFD_IOC_SVM as libhsakmt issues it: the attributes follow the header and their size
    /// is added to the request's size field. Returns the attributes as the driver left them.
    pub fn svm(
        &self,
        op: u32,
        start: u64,
        size: u64,
        attrs: &[kfd_ioctl_svm_attribute],
    ) -> CliResult<Vec<kfd_ioctl_svm_attribute>> {
        let head = kfd_ioctl_svm_args {
            start_addr: start,
            size,
            op,
            nattr: attrs.len() as u32,
            attrs: [],
        };
        let mut bytes = head.as_bytes().to_vec();
        for a in attrs {
            bytes.extend_from_slice(a.as_bytes());
        }
        let request = with_size(AMDKFD_IOC_SVM, bytes.len()).ok_or_else(|| {
            CliError::failure(format!(
                "AMDKFD_IOC_SVM: {} attributes do not fit",
                attrs.len()
            ))
        })?;
        let start_t = self.epoch.elapsed();
        // SAFETY: the scenarios pass ranges of `svm_memory`, which lives as long as the
        // process and is touched by the CPU only through copies, never references.
        let result = unsafe { self.process.ioctl(request, &mut bytes) };
        let end_t = self.epoch.elapsed();
        self.spans.borrow_mut().push(IoctlSpan {
            name: "AMDKFD_IOC_SVM",
            pasid: self.pasid(),
            start_us: start_t.as_secs_f64() * 1e6,
            end_us: end_t.as_secs_f64() * 1e6,
            result: match &result {
                Ok(r) => r.to_string(),
                Err(e) => format!("{e:?}"),
            },
        });
        result.map_err(|e| CliError::failure(format!("AMDKFD_IOC_SVM failed: {e}")))?;
        Ok(bytes
            .get(core::mem::size_of::<kfd_ioctl_svm_args>()..)
            .unwrap_or_default()
            .chunks_exact(8)
            .filter_map(|c| kfd_ioctl_svm_attribute::read_from_bytes(c).ok())
            .collect())
    }

    /// ALLOC_MEMORY_OF_GPU (GTT, writable) + MAP_MEMORY_TO_GPU, then the CPU mapping through
    /// the render node, as libhsakmt does.
    pub fn buffer(&self, size: u64) -> CliResult<Buffer> {
        let (va, handle, mmap_offset) = self.alloc(size)?;
        let mem = self
            .render
            .mmap(mmap_offset, size)
            .map_err(|e| CliError::failure(format!("mmap of the buffer at {va:#x}: {e}")))?;
        Ok(Buffer {
            va,
            size,
            handle,
            mem,
        })
    }

    /// ALLOC_MEMORY_OF_GPU (GTT, writable) + MAP_MEMORY_TO_GPU; returns the GPU VA.
    pub fn alloc_gtt(&self, size: u64) -> CliResult<u64> {
        self.alloc(size).map(|(va, _, _)| va)
    }

    fn alloc(&self, size: u64) -> CliResult<(u64, u64, u64)> {
        let va = self.next_va.get();
        self.next_va.set(va + size.next_multiple_of(1 << 21));
        let mut alloc = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size,
            gpu_id: self.gpu_id,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        self.timed::<AllocMemoryOfGpu>(&mut alloc, |process, alloc| {
            // SAFETY: a GTT buffer, not USERPTR: the model allocates its memory and writes no
            // address of this process.
            unsafe { process.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, alloc.as_mut_bytes()) }
        })?;
        let ids = [self.gpu_id];
        let mut map = kfd_ioctl_map_memory_to_gpu_args {
            handle: alloc.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        self.ioctl::<MapMemoryToGpu>(&mut map)?;
        Ok((va, alloc.handle, alloc.mmap_offset))
    }

    /// The CREATE_QUEUE arguments for a queue with freshly allocated buffers (ring, pointer
    /// page, and for compute the EOP buffer and the CWSR area of the topology's sizes), and
    /// the CPU mappings of the ring and the pointer page.
    pub fn queue_args(
        &self,
        queue_type: u32,
        ring_size: u32,
        priority: u32,
    ) -> CliResult<(kfd_ioctl_create_queue_args, QueueMemory)> {
        let node = self
            .model
            .node(self.gpu_id)
            .ok_or_else(|| CliError::failure("GPU vanished"))?
            .clone();
        let ring = self.buffer(u64::from(ring_size))?;
        let pointers = self.buffer(4096)?;
        let mut args = kfd_ioctl_create_queue_args {
            ring_base_address: ring.va,
            write_pointer_address: pointers.va + WPTR_OFFSET,
            read_pointer_address: pointers.va + RPTR_OFFSET,
            ring_size,
            gpu_id: self.gpu_id,
            queue_type,
            queue_percentage: 100,
            queue_priority: priority,
            ..Default::default()
        };
        if matches!(
            queue_type,
            KFD_IOC_QUEUE_TYPE_COMPUTE | KFD_IOC_QUEUE_TYPE_COMPUTE_AQL
        ) {
            let sizes = node.queue_sizes;
            let xcc = node.topo.properties.num_xcc.max(1);
            let ctx_bytes = ((u64::from(sizes.cwsr_size) + u64::from(sizes.debug_memory_size))
                * xcc)
                .next_multiple_of(4096);
            args.eop_buffer_address = self.alloc_gtt(4096)?;
            args.eop_buffer_size = 4096;
            args.ctx_save_restore_address = self.alloc_gtt(ctx_bytes)?;
            args.ctx_save_restore_size = sizes.cwsr_size;
            args.ctl_stack_size = sizes.ctl_stack_size;
        }
        Ok((args, QueueMemory { ring, pointers }))
    }

    /// CREATE_QUEUE with prepared arguments.
    pub fn create_queue_with(&self, mut args: kfd_ioctl_create_queue_args) -> CliResult<QueueInfo> {
        self.ioctl::<CreateQueue>(&mut args)?;
        Ok(QueueInfo {
            id: args.queue_id,
            queue_type: args.queue_type,
            ring: (args.ring_base_address, args.ring_size),
            wptr_address: args.write_pointer_address,
            rptr_address: args.read_pointer_address,
            doorbell_offset: args.doorbell_offset,
        })
    }

    /// Stores `value` into the queue's 64-bit doorbell through the process's doorbell
    /// mapping (what a CPU store into the mmapped doorbell page does).
    pub fn ring_doorbell(&self, queue: &QueueInfo, value: u64) -> CliResult<()> {
        let slice = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        let page = self
            .process
            .mmap(queue.doorbell_offset & !(slice - 1), slice)
            .map_err(|e| CliError::failure(format!("mmap of the doorbell page: {e}")))?;
        let at = page.offset + (queue.doorbell_offset & (slice - 1));
        usize::try_from(at)
            .ok()
            .and_then(|at| page.memory.store_u64(at, value))
            .ok_or_else(|| CliError::failure("doorbell outside its page"))
    }

    /// CREATE_EVENT; the first signal event passes `page` (a buffer handle) as the event page.
    pub fn create_event(
        &self,
        event_type: u32,
        auto_reset: bool,
        page: u64,
    ) -> CliResult<kfd_ioctl_create_event_args> {
        let mut args = kfd_ioctl_create_event_args {
            event_page_offset: page,
            event_type,
            auto_reset: u32::from(auto_reset),
            ..Default::default()
        };
        self.ioctl::<CreateEvent>(&mut args)?;
        Ok(args)
    }

    /// WAIT_EVENTS on one event; returns the wait result and the event data.
    pub fn wait_event(&self, event_id: u32, timeout_ms: u32) -> CliResult<(u32, kfd_event_data)> {
        let mut data = [kfd_event_data {
            event_id,
            ..Default::default()
        }];
        let mut args = kfd_ioctl_wait_events_args {
            events_ptr: data.as_mut_ptr() as u64,
            num_events: 1,
            wait_for_all: 1,
            timeout: timeout_ms,
            wait_result: 0,
        };
        self.timed::<WaitEvents>(&mut args, |process, args| {
            // SAFETY: `events_ptr` is `data`, one entry, alive and not borrowed until the call
            // returns; the model writes only that entry.
            unsafe { process.ioctl(AMDKFD_IOC_WAIT_EVENTS, args.as_mut_bytes()) }
        })?;
        Ok((args.wait_result, data[0]))
    }
}

/// Where a queue's write pointer sits in its pointer page.
pub const WPTR_OFFSET: u64 = 0x38;
/// Where a queue's read pointer sits in its pointer page.
pub const RPTR_OFFSET: u64 = 0x80;

/// The CPU side of a queue: its ring and its pointer page.
#[derive(Clone, Debug)]
pub struct QueueMemory {
    /// The ring.
    pub ring: Buffer,
    /// The page holding the write pointer (at +0x38) and the read pointer (at +0x80).
    pub pointers: Buffer,
}

impl QueueMemory {
    /// Writes `dwords` into the ring at dword `position` (monotonic; wraps at the end).
    pub fn write_ring(&self, position: u64, dwords: &[u32]) -> CliResult<()> {
        let ring_dwords = (self.ring.size / 4).max(1);
        for (i, d) in dwords.iter().enumerate() {
            let slot = (position + i as u64) % ring_dwords;
            self.ring.write(slot * 4, &d.to_le_bytes())?;
        }
        Ok(())
    }

    /// Stores the 64-bit write pointer where the engine polls it.
    pub fn store_wptr(&self, wptr: u64) -> CliResult<()> {
        self.pointers.write(WPTR_OFFSET, &wptr.to_le_bytes())
    }
}

impl Client {
    /// DESTROY_QUEUE.
    pub fn destroy_queue(&self, id: u32) -> CliResult<()> {
        let mut args = kfd_ioctl_destroy_queue_args {
            queue_id: id,
            pad: 0,
        };
        self.ioctl::<DestroyQueue>(&mut args).map(|_| ())
    }
}

/// A queue type's name as the kernel header spells the constant's suffix.
pub fn queue_type_name(queue_type: u32) -> &'static str {
    match queue_type {
        KFD_IOC_QUEUE_TYPE_COMPUTE => "PM4 compute",
        KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => "AQL compute",
        KFD_IOC_QUEUE_TYPE_SDMA => "SDMA",
        KFD_IOC_QUEUE_TYPE_SDMA_XGMI => "SDMA (XGMI)",
        _ => "queue",
    }
}
