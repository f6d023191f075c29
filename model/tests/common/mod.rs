//! A small kfdtest-style client of the model: it speaks only ioctl bytes and mmap, as a C
//! client does, so the tests exercise the same surface.
#![allow(dead_code)]

use kfd_model::{Errno, KResult, MapSource, Model, ModelConfig, Preset, Process, RenderNode};
use kfd_sys::*;
use std::cell::Cell;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

/// A model with short preemption timeouts, so hang tests finish quickly.
pub fn model(preset: Preset, gpus: u32) -> Model {
    let cfg = ModelConfig::new(preset)
        .with_gpus(gpus)
        .with_preemption_timeout(Duration::from_millis(200));
    Model::new(cfg).expect("model")
}

pub fn model_with(cfg: ModelConfig) -> Model {
    Model::new(cfg.with_preemption_timeout(Duration::from_millis(200))).expect("model")
}

/// How long a test waits for something that must happen before it calls it a hang: long
/// enough for a 2-core host kept busy by other programs, never a measure of speed.
pub const HANG: Duration = Duration::from_secs(60);
/// [`HANG`] in milliseconds, for `WAIT_EVENTS` timeouts.
pub const HANG_MS: u32 = HANG.as_millis() as u32;

/// Spins (yielding) until `cond` holds; fails the test after [`HANG`], naming `what` it waited
/// for.
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + HANG;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited {HANG:?} for {what}"
        );
        std::thread::yield_now();
    }
}

/// A typed ioctl whose argument may carry user addresses ([`Process::call_unchecked`]), for
/// the requests that are not `SafeIoctl`; safe requests go through [`Process::call`].
///
/// # Safety
///
/// As [`Process::call_unchecked`]: every address inside `args` (a `USERPTR` buffer's user
/// address, `WAIT_EVENTS`' event array, the output array of `GET_PROCESS_APERTURES_NEW`,
/// `GET_TILE_CONFIG` or `GET_DMABUF_INFO`, …) is memory of this process that the caller owns
/// for everything the request does with it and for as long as it does (an output array until
/// the call returns; memory a GPU mapping reaches until the buffer is freed), with no Rust
/// reference into what the model writes meanwhile — or an address the model refuses without
/// dereferencing it.
pub unsafe fn ioctl_unchecked<R: Ioctl>(p: &Process, args: &mut R::Arg) -> KResult<i32> {
    // SAFETY: the caller keeps `call_unchecked`'s contract, which this function's is.
    unsafe { p.call_unchecked::<R>(args) }
}

/// A buffer allocated and mapped on one GPU.
#[derive(Debug, Clone)]
pub struct Buf {
    pub va: u64,
    pub size: u64,
    pub handle: u64,
    pub mem: Option<MapSource>,
}

impl Buf {
    pub fn write_u64(&self, offset: u64, v: u64) {
        let m = self.mem.as_ref().expect("device memory");
        m.memory
            .store_u64((m.offset + offset) as usize, v)
            .expect("in range");
    }
    pub fn read_u64(&self, offset: u64) -> u64 {
        let m = self.mem.as_ref().expect("device memory");
        m.memory
            .load_u64((m.offset + offset) as usize)
            .expect("in range")
    }
    pub fn write_u32(&self, offset: u64, v: u32) {
        let m = self.mem.as_ref().expect("device memory");
        m.memory
            .store_u32((m.offset + offset) as usize, v)
            .expect("in range")
    }
    pub fn read_u32(&self, offset: u64) -> u32 {
        let m = self.mem.as_ref().expect("device memory");
        m.memory
            .load_u32((m.offset + offset) as usize)
            .expect("in range")
    }
    pub fn write_bytes(&self, offset: u64, data: &[u8]) {
        let m = self.mem.as_ref().expect("device memory");
        m.memory
            .write((m.offset + offset) as usize, data)
            .expect("in range")
    }
    pub fn read_bytes(&self, offset: u64, out: &mut [u8]) {
        let m = self.mem.as_ref().expect("device memory");
        m.memory
            .read((m.offset + offset) as usize, out)
            .expect("in range")
    }
}

/// One process of the model with its VM acquired on every GPU.
pub struct Client {
    pub model: Model,
    pub p: Process,
    pub renders: Vec<RenderNode>,
    pub gpus: Vec<u32>,
    next_va: Cell<u64>,
}

impl Client {
    pub fn new(model: &Model) -> Client {
        let c = Client::unbound(model);
        for (r, &gpu) in c.renders.iter().zip(&c.gpus) {
            let mut a = kfd_ioctl_acquire_vm_args {
                drm_fd: r.fd as u32,
                gpu_id: gpu,
            };
            c.p.call::<AcquireVm>(&mut a).expect("acquire vm");
        }
        c
    }

    /// Opened but without ACQUIRE_VM.
    pub fn unbound(model: &Model) -> Client {
        let p = model.open().expect("open");
        let gpus: Vec<u32> = model.topology().gpus().map(|n| n.gpu_id).collect();
        let renders = model
            .topology()
            .gpus()
            .map(|n| {
                model
                    .open_render_node(n.properties.drm_render_minor as u32)
                    .expect("render")
            })
            .collect();
        Client {
            model: model.clone(),
            p,
            renders,
            gpus,
            next_va: Cell::new(0x1_0000_0000),
        }
    }

    pub fn gpu(&self) -> u32 {
        self.gpus[0]
    }

    fn va(&self, size: u64) -> u64 {
        let va = self.next_va.get();
        self.next_va.set(va + size.next_multiple_of(1 << 21));
        va
    }

    /// ALLOC_MEMORY_OF_GPU + MAP_MEMORY_TO_GPU on `gpu`; never USERPTR (this safe function
    /// gives the model no user address).
    pub fn alloc_on(&self, gpu: u32, size: u64, flags: u32) -> KResult<Buf> {
        assert_eq!(
            flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
            0,
            "alloc_on makes no USERPTR"
        );
        let va = self.va(size);
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size,
            gpu_id: gpu,
            flags,
            ..Default::default()
        };
        // SAFETY: no USERPTR flag (asserted above): the argument carries no user address (`va_addr`
        // is a GPU virtual address; `mmap_offset` is read as one only for USERPTR).
        unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&self.p, &mut a) }?;
        let ids = [gpu];
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle: a.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        self.p.call::<MapMemoryToGpu>(&mut m)?;
        let mem = if flags & (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_VRAM) != 0 {
            let node = self.model.node(gpu).unwrap();
            let r = self
                .renders
                .iter()
                .find(|r| r.node.gpu_id == node.gpu_id)
                .unwrap();
            Some(r.mmap(a.mmap_offset, size).expect("render mmap"))
        } else {
            None
        };
        Ok(Buf {
            va,
            size,
            handle: a.handle,
            mem,
        })
    }

    /// The first GPU's clock counter (GET_CLOCK_COUNTERS), the clock RELEASE_MEM stamps.
    pub fn gpu_clock(&self) -> u64 {
        let mut clk = kfd_ioctl_get_clock_counters_args {
            gpu_id: self.gpu(),
            ..Default::default()
        };
        self.p.call::<GetClockCounters>(&mut clk).unwrap();
        clk.gpu_clock_counter
    }

    pub fn gtt(&self, size: u64) -> Buf {
        self.alloc_on(
            self.gpu(),
            size,
            KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        )
        .expect("gtt")
    }

    /// UNMAP + FREE.
    pub fn free(&self, b: &Buf) -> KResult<()> {
        let ids = [(b.handle >> 32) as u32];
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle: b.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        self.p.call::<UnmapMemoryFromGpu>(&mut u)?;
        let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: b.handle };
        self.p.call::<FreeMemoryOfGpu>(&mut f).map(|_| ())
    }

    /// Everything a queue needs, allocated the way the 6.12 validation wants it.
    pub fn queue_buffers(&self, gpu: u32, ring_size: u32, compute: bool) -> QueueBufs {
        let node = self.model.node(gpu).unwrap();
        let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        let ring = self
            .alloc_on(gpu, u64::from(ring_size), flags)
            .expect("ring");
        let ptrs = self.alloc_on(gpu, 4096, flags).expect("rptr/wptr");
        let (eop, ctx) = if compute {
            let sizes = node.queue_sizes;
            let xcc = node.topo.properties.num_xcc.max(1);
            let ctx_size = ((u64::from(sizes.cwsr_size) + u64::from(sizes.debug_memory_size))
                * xcc)
                .next_multiple_of(4096);
            (
                Some(self.alloc_on(gpu, 4096, flags).expect("eop")),
                Some((self.alloc_on(gpu, ctx_size, flags).expect("ctx"), sizes)),
            )
        } else {
            (None, None)
        };
        QueueBufs {
            ring,
            ptrs,
            eop,
            ctx,
            doorbell_offset: 0,
        }
    }

    /// CREATE_QUEUE arguments for `bufs`.
    pub fn queue_args(
        &self,
        gpu: u32,
        queue_type: u32,
        bufs: &QueueBufs,
    ) -> kfd_ioctl_create_queue_args {
        let mut a = kfd_ioctl_create_queue_args {
            ring_base_address: bufs.ring.va,
            write_pointer_address: bufs.ptrs.va + 0x38,
            read_pointer_address: bufs.ptrs.va + 0x80,
            ring_size: bufs.ring.size as u32,
            gpu_id: gpu,
            queue_type,
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        };
        if let (Some(eop), Some((ctx, sizes))) = (&bufs.eop, &bufs.ctx) {
            a.eop_buffer_address = eop.va;
            a.eop_buffer_size = 4096;
            a.ctx_save_restore_address = ctx.va;
            a.ctx_save_restore_size = sizes.cwsr_size;
            a.ctl_stack_size = sizes.ctl_stack_size;
        }
        a
    }

    /// Creates a queue of `queue_type` with fresh buffers; returns its id and buffers.
    pub fn create_queue(&self, queue_type: u32) -> KResult<(u32, QueueBufs)> {
        self.create_queue_on(self.gpu(), queue_type, 100)
    }

    pub fn create_queue_on(
        &self,
        gpu: u32,
        queue_type: u32,
        percentage: u32,
    ) -> KResult<(u32, QueueBufs)> {
        self.create_queue_sized(gpu, queue_type, percentage, 4096)
    }

    /// A queue with a ring of `ring_size` bytes.
    pub fn create_queue_sized(
        &self,
        gpu: u32,
        queue_type: u32,
        percentage: u32,
        ring_size: u32,
    ) -> KResult<(u32, QueueBufs)> {
        let compute = matches!(
            queue_type,
            KFD_IOC_QUEUE_TYPE_COMPUTE | KFD_IOC_QUEUE_TYPE_COMPUTE_AQL
        );
        let bufs = self.queue_buffers(gpu, ring_size, compute);
        let mut a = self.queue_args(gpu, queue_type, &bufs);
        a.queue_percentage = percentage;
        self.p.call::<CreateQueue>(&mut a)?;
        Ok((
            a.queue_id,
            QueueBufs {
                doorbell_offset: a.doorbell_offset,
                ..bufs
            },
        ))
    }

    pub fn destroy_queue(&self, id: u32) -> KResult<i32> {
        let mut d = kfd_ioctl_destroy_queue_args {
            queue_id: id,
            pad: 0,
        };
        self.p.call::<DestroyQueue>(&mut d)
    }

    pub fn pasid(&self) -> u32 {
        self.p.pasid()
    }

    pub fn node(&self) -> Arc<kfd_model::KfdNode> {
        self.model.node(self.gpu()).unwrap().clone()
    }

    /// Writes the 64-bit doorbell of a queue through the process's doorbell mapping (what a
    /// CPU store into the mmapped doorbell page does).
    pub fn ring_doorbell(&self, bufs: &QueueBufs, value: u64) {
        let slice = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        let page = self
            .p
            .mmap(bufs.doorbell_offset & !(slice - 1), slice)
            .expect("doorbell mmap");
        page.memory
            .store_u64(
                (page.offset + (bufs.doorbell_offset & (slice - 1))) as usize,
                value,
            )
            .expect("doorbell in range");
    }

    /// Publishes a write pointer: the wptr location first, then the doorbell.
    pub fn submit(&self, bufs: &QueueBufs, wptr: u64) {
        bufs.ptrs.write_u64(0x38, wptr);
        self.ring_doorbell(bufs, wptr);
    }

    /// A dGPU-style signal event page (a 32 KiB GTT buffer given to the first CREATE_EVENT).
    pub fn event_page(&self) -> Buf {
        self.gtt(KFD_SIGNAL_EVENT_PAGE_SIZE)
    }
}

/// CREATE_EVENT.
pub fn create_event(
    c: &Client,
    event_type: u32,
    auto_reset: bool,
    page: u64,
) -> Result<kfd_ioctl_create_event_args, Errno> {
    let mut e = kfd_ioctl_create_event_args {
        event_page_offset: page,
        event_type,
        auto_reset: u32::from(auto_reset),
        ..Default::default()
    };
    c.p.call::<CreateEvent>(&mut e).map(|_| e)
}

/// WAIT_EVENTS; returns the ioctl result, the wait result and the event data written back.
pub fn wait_events_data(
    c: &Client,
    ids: &[u32],
    all: bool,
    timeout: u32,
) -> (Result<i32, Errno>, u32, Vec<kfd_event_data>) {
    let mut data: Vec<kfd_event_data> = ids
        .iter()
        .map(|&event_id| kfd_event_data {
            event_id,
            ..Default::default()
        })
        .collect();
    let mut w = kfd_ioctl_wait_events_args {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: ids.len() as u32,
        wait_for_all: u32::from(all),
        timeout,
        wait_result: 99,
    };
    // SAFETY: `events_ptr` is `data`, `ids.len()` entries owned by this function and untouched
    // until the call returns; the model reads and writes at most `num_events` of them.
    let r = unsafe { ioctl_unchecked::<WaitEvents>(&c.p, &mut w) };
    (r, w.wait_result, data)
}

/// WAIT_EVENTS; returns the ioctl result and the wait result.
pub fn wait_events(c: &Client, ids: &[u32], all: bool, timeout: u32) -> (Result<i32, Errno>, u32) {
    let (r, result, _) = wait_events_data(c, ids, all, timeout);
    (r, result)
}

/// Writes packets into a queue's ring at a monotonic write pointer, wrapping at the end of the
/// ring, in the queue's unit (dwords for PM4, bytes for SDMA).
pub struct RingWriter {
    pub ring_dwords: u64,
    /// Write pointer in dwords.
    pub wptr_dw: u64,
    /// Bytes per write-pointer unit: 4 for PM4 (dwords), 1 for SDMA (bytes).
    pub unit: u64,
}

impl RingWriter {
    pub fn pm4(bufs: &QueueBufs) -> Self {
        RingWriter {
            ring_dwords: bufs.ring.size / 4,
            wptr_dw: 0,
            unit: 4,
        }
    }

    pub fn sdma(bufs: &QueueBufs) -> Self {
        RingWriter {
            unit: 1,
            ..Self::pm4(bufs)
        }
    }

    /// Copies `dwords` into the ring (wrapping) and advances the write pointer.
    pub fn write(&mut self, bufs: &QueueBufs, dwords: &[u32]) {
        for &d in dwords {
            let slot = self.wptr_dw % self.ring_dwords;
            bufs.ring.write_u32(slot * 4, d);
            self.wptr_dw += 1;
        }
    }

    /// Encodes one packet into the ring.
    pub fn push<P: pm4::Encode + ?Sized>(&mut self, bufs: &QueueBufs, p: &P) {
        let mut tmp = vec![0u32; p.dwords()];
        let n = pm4::PacketWriter::new(&mut tmp).push(p).expect("encode");
        self.write(bufs, &tmp[..n]);
    }

    /// A RELEASE_MEM (gfx9) that stamps the GPU clock at `va` when the CP reaches it.
    pub fn push_clock_stamp(&mut self, bufs: &QueueBufs, va: u64) {
        use pm4::user::{ReleaseDataSel, ReleaseIntSel, ReleaseMemArgs, ReleaseMemGfx9};
        let stamp = ReleaseMemArgs::end_of_pipe(
            va,
            0,
            ReleaseDataSel::GpuClockCounter,
            ReleaseIntSel::None,
            0,
        );
        self.push(
            bufs,
            &ReleaseMemGfx9::new(&stamp, Default::default()).unwrap(),
        );
    }

    /// The write pointer in the queue's unit.
    pub fn wptr(&self) -> u64 {
        self.wptr_dw * 4 / self.unit
    }

    /// Dwords the ring can take without overwriting unread packets, given the queue's read
    /// pointer in dwords (monotonic).
    pub fn free_dwords(&self, rptr_dw: u64) -> u64 {
        self.ring_dwords - (self.wptr_dw - rptr_dw)
    }
}

/// An AQL KERNEL_DISPATCH packet as a runtime writes it (barrier bit, system-scope acquire
/// and release); its dimension count follows `grid`.
pub struct KernelDispatch {
    pub workgroup: [u16; 3],
    pub grid: [u32; 3],
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    pub kernarg: u64,
    pub completion_signal: u64,
}

impl KernelDispatch {
    /// hsa_packet_header: KERNEL_DISPATCH (2), barrier bit, system-scope acquire and release.
    pub const HEADER: u16 = 2 | 1 << 8 | 2 << 9 | 2 << 11;

    /// A dispatch of `k` (its scratch and LDS sizes, plus `dynamic_lds` bytes of LDS).
    pub fn of(
        k: &codeobj::LoadedKernel,
        workgroup: [u16; 3],
        grid: [u32; 3],
        dynamic_lds: u32,
        kernarg: u64,
        completion_signal: u64,
    ) -> Self {
        KernelDispatch {
            workgroup,
            grid,
            private_segment_size: k.descriptor.private_segment_fixed_size,
            group_segment_size: k.descriptor.group_segment_fixed_size + dynamic_lds,
            kernel_object: k.descriptor_address,
            kernarg,
            completion_signal,
        }
    }

    /// Writes the packet into slot `index` of the AQL ring: the body, then the header, as the
    /// HSA producer protocol requires (the caller then publishes the write index).
    pub fn write(&self, q: &QueueBufs, index: u64) {
        let dims: u16 = if self.grid[2] > 1 {
            3
        } else if self.grid[1] > 1 {
            2
        } else {
            1
        };
        let mut p = [0u8; 64];
        p[2..4].copy_from_slice(&dims.to_le_bytes());
        for d in 0..3 {
            p[4 + 2 * d..6 + 2 * d].copy_from_slice(&self.workgroup[d].to_le_bytes());
            p[12 + 4 * d..16 + 4 * d].copy_from_slice(&self.grid[d].to_le_bytes());
        }
        p[24..28].copy_from_slice(&self.private_segment_size.to_le_bytes());
        p[28..32].copy_from_slice(&self.group_segment_size.to_le_bytes());
        p[32..40].copy_from_slice(&self.kernel_object.to_le_bytes());
        p[40..48].copy_from_slice(&self.kernarg.to_le_bytes());
        p[56..64].copy_from_slice(&self.completion_signal.to_le_bytes());
        let slot = index % (q.ring.size / 64);
        q.ring.write_bytes(slot * 64 + 2, &p[2..]);
        q.ring.write_bytes(slot * 64, &Self::HEADER.to_le_bytes());
    }
}

/// Buffers of one queue.
#[derive(Debug, Clone)]
pub struct QueueBufs {
    pub ring: Buf,
    pub ptrs: Buf,
    pub eop: Option<Buf>,
    pub ctx: Option<(Buf, mqd::TopologySizes)>,
    pub doorbell_offset: u64,
}

impl QueueBufs {
    pub fn wptr_va(&self) -> u64 {
        self.ptrs.va + 0x38
    }
}

/// The current runlist IB of a GPU, decoded.
pub fn runlist(node: &kfd_model::KfdNode) -> Vec<pm4::Packet<'static>> {
    let Some((addr, n)) = node.dqm().pm.runlist_ib() else {
        return Vec::new();
    };
    let dwords = node.gpu.gart.read_dwords(addr, n as usize).unwrap();
    // Leaked so the borrowed packets can outlive this call; tests are short-lived.
    let dwords: &'static [u32] = Box::leak(dwords.into_boxed_slice());
    pm4::Pm4Decoder::new(dwords, node.gpu.generation)
        .map(|d| d.expect("runlist decodes").packet)
        .collect()
}

pub fn assert_errno<T: std::fmt::Debug>(r: KResult<T>, e: Errno, what: &str) {
    match r {
        Err(got) => assert_eq!(got, e, "{what}"),
        Ok(v) => panic!("{what}: expected {e:?}, got Ok({v:?})"),
    }
}

/// The client's own shared mapping of its doorbell slice (what the shim's `mmap` makes).
pub struct DoorbellMapping {
    pub addr: u64,
    pub len: u64,
}

impl DoorbellMapping {
    pub fn new(c: &Client, doorbell_offset: u64) -> DoorbellMapping {
        let slice = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        let src = c.p.mmap(doorbell_offset & !(slice - 1), slice).unwrap();
        // SAFETY: a new shared mapping of the model's doorbell memory file, owned by this
        // struct and unmapped in Drop.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                slice as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                src.memory.fd().as_raw_fd(),
                src.offset as libc::off_t,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED, "mmap of the doorbell memory");
        DoorbellMapping {
            addr: addr as u64,
            len: slice,
        }
    }

    /// The client's 64-bit doorbell store.
    pub fn ring(&self, doorbell_offset: u64, value: u64) {
        let at = self.addr + (doorbell_offset & (self.len - 1));
        // SAFETY: an aligned 8-byte slot inside this mapping.
        unsafe { std::ptr::write_volatile(at as *mut u64, value) };
    }
}

impl Drop for DoorbellMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping this struct made.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len as usize) };
    }
}

/// A gfx900 model and a client with a PM4 queue and 4 KiB of GTT.
pub fn pm4_queue() -> (Model, Client, QueueBufs, Buf) {
    pm4_queue_with(ModelConfig::new(Preset::Gfx900))
}

/// [`pm4_queue`] on a model built from `cfg` (with the tests' short preemption timeout).
pub fn pm4_queue_with(cfg: ModelConfig) -> (Model, Client, QueueBufs, Buf) {
    let model = model_with(cfg);
    let c = Client::new(&model);
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mem = c.gtt(4096);
    (model, c, q, mem)
}

/// [`pm4_queue`] and the client's own doorbell mapping, watched
/// (`Model::watch_doorbell_mapping`).
pub fn watched_pm4_queue() -> (Model, Client, QueueBufs, Buf, DoorbellMapping) {
    watched_pm4_queue_with(ModelConfig::new(Preset::Gfx900))
}

/// [`watched_pm4_queue`] on a model built from `cfg`.
pub fn watched_pm4_queue_with(
    cfg: ModelConfig,
) -> (Model, Client, QueueBufs, Buf, DoorbellMapping) {
    let (model, c, q, mem) = pm4_queue_with(cfg);
    let bell = DoorbellMapping::new(&c, q.doorbell_offset);
    // SAFETY: `bell` is a shared mapping of the model's doorbell memory, unmapped only when
    // the test that holds it ends (it is dropped before or with the model).
    unsafe { model.watch_doorbell_mapping(bell.addr, bell.len) }
        .expect("userfaultfd with shared-memory write protection (Linux 5.19+)");
    (model, c, q, mem, bell)
}

/// A small deterministic generator (xorshift64*): random test inputs that are the same on
/// every run. Seed it with a non-zero value.
pub struct Rng(pub u64);

impl Rng {
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value below `n` (not 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The render node a client opened first.
pub fn render(c: &Client) -> &RenderNode {
    &c.renders[0]
}

/// A new submission context on `r` (`AMDGPU_CTX_OP_ALLOC_CTX`).
pub fn new_ctx(r: &RenderNode) -> u32 {
    use kfd_model::ctx::*;
    let alloc = CtxRequest {
        op: kfd_sys::drm::AMDGPU_CTX_OP_ALLOC_CTX,
        ..Default::default()
    };
    match r.ctx(alloc).unwrap() {
        CtxAnswer::Alloc { ctx_id } => ctx_id,
        other => panic!("{other:?}"),
    }
}

/// An SDMA IB of 8 dwords: WRITE_LINEAR of one dword `value` at `va` (count field = dwords -
/// 1 = 0), then NOPs.
pub fn sdma_write_dword_ib(va: u64, value: u32) -> [u32; 8] {
    [2, va as u32, (va >> 32) as u32, 0, value, 0, 0, 0]
}
