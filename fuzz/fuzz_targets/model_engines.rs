//! Fuzz the CP (PM4 and AQL) and SDMA engines on arbitrary packet streams in mapped memory.
//!
//! One process per input on a model whose engines only run when driven: a signal event page,
//! signal/memory/hardware/queue events, a writable GTT data buffer, a read-only GTT buffer, a
//! VRAM buffer, and a PM4, an AQL and an SDMA queue. The input fills the data buffer and then
//! submits streams — raw dwords mixed with well-formed packets whose addresses point into the
//! buffers — to a queue of its choice at a write pointer of its choice, and the engines run
//! until idle after each submission.
//!
//! Checks: the host never crashes (a bad packet or address stops the queue with an error, a
//! GPU VM fault becomes a memory exception); the scheduler never hangs; queues can still be
//! destroyed; once the process is dropped the model is back at its baseline.
#![no_main]

use arbitrary::Arbitrary;
use kfd_fuzz::{open, shared_model, Arena, ModelKey, SharedModel};
use kfd_model::{KResult, MapSource, Process};
use kfd_sys::*;
use libfuzzer_sys::fuzz_target;
use pm4::fields::CompareFunction;
use pm4::sdma::{
    SdmaConstantFill, SdmaCopyLinear, SdmaFence, SdmaIndirect, SdmaPollRegmem, SdmaTimestamp,
    SdmaTrap, SdmaWrite, TimestampOp,
};
use pm4::user::*;
use pm4::{Encode, GfxGen, PacketWriter, SdmaGen};
use std::sync::Arc;

const MAX_SUBMITS: usize = 8;
const MAX_CHUNKS: usize = 32;
const RING_BYTES: u64 = 4096;

#[derive(Arbitrary, Debug)]
struct Input {
    preset: u8,
    /// Initial contents of the data buffer (IBs, AQL signals, poll targets …).
    data: Vec<u8>,
    submits: Vec<Submit>,
}

#[derive(Arbitrary, Debug)]
struct Submit {
    /// 0: PM4, 1: AQL, 2: SDMA.
    queue: u8,
    chunks: Vec<Chunk>,
    wptr: Wptr,
}

#[derive(Arbitrary, Debug)]
enum Wptr {
    /// Just past what was written.
    Exact,
    /// That plus a few units more or less.
    Delta(i8),
    /// Any value.
    Raw(u64),
}

#[derive(Arbitrary, Debug)]
enum Chunk {
    Raw(Vec<u32>),
    Pm4(Pm4Packet),
    Sdma(SdmaPacket),
    Aql(AqlPacket),
}

/// An address inside one of the process's buffers (or past it), or any address.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Addr {
    In { buffer: u8, offset: u16 },
    Any(u64),
}

#[derive(Arbitrary, Debug)]
enum Pm4Packet {
    WriteData {
        dst: Addr,
        data: Vec<u32>,
    },
    ReleaseMem {
        addr: Addr,
        data: u64,
        int_sel: u8,
        data_sel: u8,
        ctxid: u32,
    },
    SignalEvent {
        event: u8,
    },
    WaitRegMem {
        addr: Addr,
        function: u8,
        reference: u32,
        mask: u32,
    },
    IndirectBuffer {
        addr: Addr,
        dwords: u16,
        chain: bool,
    },
    Nop {
        dwords: u8,
    },
}

#[derive(Arbitrary, Debug)]
enum SdmaPacket {
    Write {
        dst: Addr,
        data: Vec<u32>,
    },
    Copy {
        src: Addr,
        dst: Addr,
        bytes: u32,
    },
    Fill {
        dst: Addr,
        value: u32,
        bytes: u32,
    },
    Fence {
        addr: Addr,
        value: u32,
    },
    Trap {
        ctx: u32,
    },
    SignalEvent {
        event: u8,
    },
    Poll {
        addr: Addr,
        function: u8,
        reference: u32,
        mask: u32,
        retries: u16,
    },
    Timestamp {
        op: u8,
        addr: Addr,
    },
    Indirect {
        addr: Addr,
        dwords: u16,
    },
}

#[derive(Arbitrary, Debug)]
struct AqlPacket {
    /// Packet type (`[7:0]` of the header): 0 vendor, 1 invalid, 2 dispatch, 3 barrier-and,
    /// 4 agent dispatch, 5 barrier-or, others.
    kind: u8,
    barrier: bool,
    acquire: u8,
    release: u8,
    /// Header bits `[31:16]` (for vendor packets: the AMD format).
    dw0_hi: u16,
    /// Quadwords 1..=6 of the body: dependent signals, IB addresses …
    body: [Option<Addr>; 6],
    completion: Option<Addr>,
}

/// A buffer of the process.
#[derive(Clone)]
struct Buf {
    va: u64,
    size: u64,
    handle: u64,
    mem: Option<MapSource>,
}

impl Buf {
    fn write(&self, offset: u64, data: &[u8]) {
        if let Some(m) = &self.mem {
            let _ = m.memory.write((m.offset + offset) as usize, data);
        }
    }
    fn store_u64(&self, offset: u64, v: u64) {
        if let Some(m) = &self.mem {
            let _ = m.memory.store_u64((m.offset + offset) as usize, v);
        }
    }
}

struct Queue {
    id: u32,
    ring: Buf,
    ptrs: Buf,
    doorbell_offset: u64,
    /// Write-pointer unit in bytes: 4 (PM4 dwords), 64 (AQL packets), 1 (SDMA bytes).
    unit: u64,
    /// Bytes written so far (monotonic).
    written: u64,
}

struct Client<'a> {
    shared: &'a SharedModel,
    p: Process,
    gpu: u32,
    gen: GfxGen,
    sgen: SdmaGen,
    buffers: Vec<Buf>,
    queues: Vec<Queue>,
    signal_events: Vec<u32>,
    page: Option<Buf>,
}

fn typed<T: IntoBytes + FromBytes + Immutable>(
    p: &Process,
    request: u32,
    args: &mut T,
) -> KResult<i32> {
    let mut bytes = args.as_bytes().to_vec();
    // SAFETY: this target builds its arguments itself: the addresses in them are buffers it
    // allocated through the model (device memory, never USERPTR) and keeps for the run.
    let r = unsafe { p.ioctl(request, &mut bytes) };
    if let Ok((v, _)) = T::read_from_prefix(&bytes) {
        *args = v;
    }
    r
}

fn encode<P: Encode + ?Sized>(p: &P, out: &mut Vec<u32>) {
    let mut tmp = vec![0u32; p.dwords()];
    if let Ok(n) = PacketWriter::new(&mut tmp).push(p) {
        out.extend_from_slice(&tmp[..n]);
    }
}

fn compare(f: u8) -> CompareFunction {
    CompareFunction::from_bits(u32::from(f % 8))
}

impl Client<'_> {
    fn setup(shared: &SharedModel) -> Option<Client<'_>> {
        let p = open(shared, Arc::new(Arena::new()));
        let node = shared.model.nodes().first()?.clone();
        let gpu = node.gpu_id;
        let gen = node.gpu.generation;
        let sgen = match gen {
            GfxGen::Gfx9 => SdmaGen::Sdma4,
            GfxGen::Gfx10 => SdmaGen::Sdma5,
            GfxGen::Gfx11 => SdmaGen::Sdma6,
        };
        let mut a = kfd_ioctl_acquire_vm_args {
            drm_fd: shared.renders.first()?.fd as u32,
            gpu_id: gpu,
        };
        typed(&p, AMDKFD_IOC_ACQUIRE_VM, &mut a).expect("acquire vm");
        let mut c = Client {
            shared,
            p,
            gpu,
            gen,
            sgen,
            buffers: Vec::new(),
            queues: Vec::new(),
            signal_events: Vec::new(),
            page: None,
        };
        let gtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        let vram = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        // Buffer 0: data, 1: read-only, 2: VRAM, 3: event page.
        let data = c.alloc(0x1000_0000, 0x1_0000, gtt).expect("data buffer");
        let ro = c
            .alloc(0x1100_0000, 0x1000, KFD_IOC_ALLOC_MEM_FLAGS_GTT)
            .expect("read-only buffer");
        let vr = c.alloc(0x1200_0000, 0x1_0000, vram).expect("vram buffer");
        let page = c
            .alloc(0x1300_0000, KFD_SIGNAL_EVENT_PAGE_SIZE, gtt)
            .expect("event page");
        c.buffers.extend([data, ro, vr, page.clone()]);
        let mut first = true;
        for (event_type, auto_reset) in [
            (KFD_IOC_EVENT_SIGNAL, true),
            (KFD_IOC_EVENT_SIGNAL, false),
            (KFD_IOC_EVENT_SIGNAL, true),
            (KFD_IOC_EVENT_MEMORY, false),
            (KFD_IOC_EVENT_HW_EXCEPTION, false),
            (KFD_IOC_EVENT_QUEUE_EVENT, false),
        ] {
            let mut e = kfd_ioctl_create_event_args {
                event_page_offset: if first { page.handle } else { 0 },
                event_type,
                auto_reset: u32::from(auto_reset),
                ..Default::default()
            };
            first = false;
            typed(&c.p, AMDKFD_IOC_CREATE_EVENT, &mut e).expect("create event");
            if event_type == KFD_IOC_EVENT_SIGNAL {
                c.signal_events.push(e.event_id);
            }
        }
        c.page = Some(page);
        // Queues: PM4 at 0x2000_0000, AQL at 0x3000_0000, SDMA at 0x4000_0000 (buffers 4.. are
        // their rings and pointer pages).
        for (i, queue_type) in [
            KFD_IOC_QUEUE_TYPE_COMPUTE,
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            KFD_IOC_QUEUE_TYPE_SDMA,
        ]
        .into_iter()
        .enumerate()
        {
            let base = 0x2000_0000 * (i as u64 + 1);
            let q = c.create_queue(base, queue_type).expect("create queue");
            c.buffers.push(q.ring.clone());
            c.buffers.push(q.ptrs.clone());
            c.queues.push(q);
        }
        Some(c)
    }

    fn alloc(&self, va: u64, size: u64, flags: u32) -> KResult<Buf> {
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size,
            gpu_id: self.gpu,
            flags,
            ..Default::default()
        };
        typed(&self.p, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a)?;
        let ids = [self.gpu];
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle: a.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        typed(&self.p, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut m)?;
        let mem = self.shared.renders[0].mmap(a.mmap_offset, size).ok();
        Ok(Buf {
            va,
            size,
            handle: a.handle,
            mem,
        })
    }

    fn create_queue(&self, base: u64, queue_type: u32) -> KResult<Queue> {
        let gtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        let ring = self.alloc(base, RING_BYTES, gtt)?;
        let ptrs = self.alloc(base + 0x100_0000, 4096, gtt)?;
        let mut a = kfd_ioctl_create_queue_args {
            ring_base_address: ring.va,
            write_pointer_address: ptrs.va + 0x38,
            read_pointer_address: ptrs.va + 0x80,
            ring_size: RING_BYTES as u32,
            gpu_id: self.gpu,
            queue_type,
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        };
        let compute = queue_type != KFD_IOC_QUEUE_TYPE_SDMA;
        if compute {
            let node = self.shared.model.node(self.gpu).expect("gpu").clone();
            let sizes = node.queue_sizes;
            let xcc = node.topo.properties.num_xcc.max(1);
            let ctx_size = ((u64::from(sizes.cwsr_size) + u64::from(sizes.debug_memory_size))
                * xcc)
                .next_multiple_of(4096);
            let eop = self.alloc(base + 0x200_0000, 4096, gtt)?;
            let ctx = self.alloc(base + 0x300_0000, ctx_size, gtt)?;
            a.eop_buffer_address = eop.va;
            a.eop_buffer_size = 4096;
            a.ctx_save_restore_address = ctx.va;
            a.ctx_save_restore_size = sizes.cwsr_size;
            a.ctl_stack_size = sizes.ctl_stack_size;
        }
        typed(&self.p, AMDKFD_IOC_CREATE_QUEUE, &mut a)?;
        let unit = match queue_type {
            KFD_IOC_QUEUE_TYPE_COMPUTE => 4,
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => 64,
            _ => 1,
        };
        Ok(Queue {
            id: a.queue_id,
            ring,
            ptrs,
            doorbell_offset: a.doorbell_offset,
            unit,
            written: 0,
        })
    }

    fn addr(&self, a: Addr) -> u64 {
        match a {
            Addr::In { buffer, offset } => {
                let b = &self.buffers[buffer as usize % self.buffers.len()];
                // Mostly inside, sometimes just past the end.
                b.va + u64::from(offset) % (b.size + 64)
            }
            Addr::Any(v) => v,
        }
    }

    fn event_slot(&self, event: u8) -> (u64, u32) {
        let id = self.signal_events[event as usize % self.signal_events.len()];
        let page = self.page.as_ref().map_or(0, |p| p.va);
        (page + 8 * u64::from(id), id)
    }

    fn release_mem(&self, out: &mut Vec<u32>, addr: u64, data: u64, int: u8, sel: u8, ctx: u32) {
        let args = ReleaseMemArgs::end_of_pipe(
            addr,
            data,
            ReleaseDataSel::from_bits(u32::from(sel % 8)),
            ReleaseIntSel::from_bits(u32::from(int % 8)),
            ctx,
        );
        match self.gen {
            GfxGen::Gfx9 => {
                if let Ok(p) = ReleaseMemGfx9::new(&args, Default::default()) {
                    encode(&p, out);
                }
            }
            _ => {
                if let Ok(p) = ReleaseMemGfx10::new(&args, Default::default()) {
                    encode(&p, out);
                }
            }
        }
    }

    fn pm4(&self, p: &Pm4Packet, out: &mut Vec<u32>) {
        match p {
            Pm4Packet::WriteData { dst, data } => {
                let data = &data[..data.len().min(64)];
                if let Ok(w) = WriteData::memory(self.addr(*dst), data) {
                    encode(&w, out);
                }
            }
            Pm4Packet::ReleaseMem {
                addr,
                data,
                int_sel,
                data_sel,
                ctxid,
            } => self.release_mem(out, self.addr(*addr), *data, *int_sel, *data_sel, *ctxid),
            Pm4Packet::SignalEvent { event } => {
                let (slot, id) = self.event_slot(*event);
                // Interrupt after the write is confirmed, 32-bit data: kfdtest's signal.
                self.release_mem(out, slot, u64::from(id), 3, 1, id);
            }
            Pm4Packet::WaitRegMem {
                addr,
                function,
                reference,
                mask,
            } => {
                let args = WaitArgs {
                    function: compare(*function),
                    operation: WaitOperation::WaitRegMem,
                    target: PollTarget::Memory(self.addr(*addr)),
                    poll_interval: 4,
                    optimize_ace_offload_mode: true,
                };
                if let Ok(w) = WaitRegMem::new(&args, *reference, *mask) {
                    encode(&w, out);
                }
            }
            Pm4Packet::IndirectBuffer {
                addr,
                dwords,
                chain,
            } => {
                let control = IndirectBufferControl::new().with_chain(*chain);
                if let Ok(ib) = IndirectBuffer::new(self.addr(*addr), u32::from(*dwords), control) {
                    encode(&ib, out);
                }
            }
            Pm4Packet::Nop { dwords } => {
                let payload = vec![0u32; usize::from(*dwords % 32)];
                if let Ok(n) = Nop::new(&payload) {
                    encode(&n, out);
                }
            }
        }
    }

    fn sdma(&self, p: &SdmaPacket, out: &mut Vec<u32>) {
        let g = self.sgen;
        match p {
            SdmaPacket::Write { dst, data } => {
                let data = &data[..data.len().min(64)];
                if let Ok(w) = SdmaWrite::new(self.addr(*dst), data) {
                    encode(&w, out);
                }
            }
            SdmaPacket::Copy { src, dst, bytes } => {
                let n = u64::from(*bytes % 0x2_0000);
                if let Ok(c) = SdmaCopyLinear::new(g, self.addr(*src), self.addr(*dst), n) {
                    encode(&c, out);
                }
            }
            SdmaPacket::Fill { dst, value, bytes } => {
                let n = u64::from(*bytes % 0x2_0000);
                if let Ok(f) = SdmaConstantFill::new(g, self.addr(*dst), *value, n) {
                    encode(&f, out);
                }
            }
            SdmaPacket::Fence { addr, value } => {
                if let Ok(f) = SdmaFence::new(self.addr(*addr), *value) {
                    encode(&f, out);
                }
            }
            SdmaPacket::Trap { ctx } => {
                if let Ok(t) = SdmaTrap::new(*ctx) {
                    encode(&t, out);
                }
            }
            SdmaPacket::SignalEvent { event } => {
                let (slot, id) = self.event_slot(*event);
                if let (Ok(f), Ok(t)) = (SdmaFence::new(slot, id), SdmaTrap::new(id)) {
                    encode(&f, out);
                    encode(&t, out);
                }
            }
            SdmaPacket::Poll {
                addr,
                function,
                reference,
                mask,
                retries,
            } => {
                if let Ok(p) = SdmaPollRegmem::memory(
                    self.addr(*addr),
                    compare(*function),
                    *reference,
                    *mask,
                    4,
                    *retries % 4096,
                ) {
                    encode(&p, out);
                }
            }
            SdmaPacket::Timestamp { op, addr } => {
                let op = match op % 3 {
                    0 => TimestampOp::Set,
                    1 => TimestampOp::Get,
                    _ => TimestampOp::GetGlobal,
                };
                if let Ok(t) = SdmaTimestamp::new(op, self.addr(*addr)) {
                    encode(&t, out);
                }
            }
            SdmaPacket::Indirect { addr, dwords } => {
                if let Ok(ib) = SdmaIndirect::new(self.addr(*addr), u32::from(*dwords), 0, 0) {
                    encode(&ib, out);
                }
            }
        }
    }

    fn aql(&self, p: &AqlPacket, out: &mut Vec<u32>) {
        let mut d = [0u32; 16];
        let header = u32::from(p.kind % 8)
            | u32::from(p.barrier) << 8
            | u32::from(p.acquire % 4) << 9
            | u32::from(p.release % 4) << 11;
        d[0] = header | u32::from(p.dw0_hi) << 16;
        for (i, a) in p.body.iter().enumerate() {
            if let Some(a) = a {
                let v = self.addr(*a);
                d[2 + 2 * i] = v as u32;
                d[3 + 2 * i] = (v >> 32) as u32;
            }
        }
        if let Some(c) = p.completion {
            let v = self.addr(c);
            d[14] = v as u32;
            d[15] = (v >> 32) as u32;
        }
        // AQL packets sit on 64-byte slots.
        while !out.len().is_multiple_of(16) {
            out.push(0);
        }
        out.extend_from_slice(&d);
    }

    fn submit(&mut self, s: &Submit) {
        let qi = s.queue as usize % self.queues.len();
        let mut dwords = Vec::new();
        for c in s.chunks.iter().take(MAX_CHUNKS) {
            match c {
                Chunk::Raw(words) => dwords.extend_from_slice(&words[..words.len().min(256)]),
                Chunk::Pm4(p) => self.pm4(p, &mut dwords),
                Chunk::Sdma(p) => self.sdma(p, &mut dwords),
                Chunk::Aql(p) => self.aql(p, &mut dwords),
            }
        }
        dwords.truncate((RING_BYTES / 4) as usize);
        let q = &mut self.queues[qi];
        let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        // Into the ring at the write position, wrapping.
        for (i, chunk) in bytes.chunks(4).enumerate() {
            let at = (q.written + 4 * i as u64) % RING_BYTES;
            q.ring.write(at, chunk);
        }
        q.written += bytes.len() as u64;
        if q.unit == 64 {
            q.written = q.written.next_multiple_of(64);
        }
        let exact = q.written / q.unit;
        let wptr = match s.wptr {
            Wptr::Exact => exact,
            Wptr::Delta(d) => exact.wrapping_add_signed(i64::from(d)),
            Wptr::Raw(v) => v,
        };
        q.ptrs.store_u64(0x38, wptr);
        let slice = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        if let Ok(page) = self.p.mmap(q.doorbell_offset & !(slice - 1), slice) {
            let off = page.offset + (q.doorbell_offset & (slice - 1));
            let _ = page.memory.store_u64(off as usize, wptr);
        }
        self.shared.model.run_until_idle();
        for n in self.shared.model.nodes() {
            let c = n.counters();
            assert!(!c.is_hws_hang, "a packet stream hung the scheduler: {c:?}");
        }
    }

    /// Reads every queue's state and error, polls the events, destroys the queues.
    fn finish(self) {
        for q in &self.queues {
            if let Some(st) = self.p.queue_state(q.id) {
                let _ = format!("{st:?}");
            }
            if let Some(e) = self.p.queue_error(q.id) {
                let _ = e.to_string();
            }
        }
        let mut data: Vec<kfd_event_data> = self
            .signal_events
            .iter()
            .map(|&event_id| kfd_event_data {
                event_id,
                ..Default::default()
            })
            .collect();
        let mut w = kfd_ioctl_wait_events_args {
            events_ptr: data.as_mut_ptr() as u64,
            num_events: data.len() as u32,
            wait_for_all: 0,
            timeout: 0,
            wait_result: 0,
        };
        let _ = typed(&self.p, AMDKFD_IOC_WAIT_EVENTS, &mut w);
        for q in &self.queues {
            let mut d = kfd_ioctl_destroy_queue_args {
                queue_id: q.id,
                pad: 0,
            };
            let r = typed(&self.p, AMDKFD_IOC_DESTROY_QUEUE, &mut d);
            assert_eq!(r, Ok(0), "destroying queue {} after the stream", q.id);
        }
    }
}

fuzz_target!(|input: Input| {
    let key = ModelKey::from_bytes(input.preset, 1, 0);
    let shared = shared_model(key);
    let Some(mut c) = Client::setup(shared) else {
        return;
    };
    let data = &input.data[..input.data.len().min(0x1_0000)];
    c.buffers[0].write(0, data);
    for s in input.submits.iter().take(MAX_SUBMITS) {
        c.submit(s);
    }
    c.finish();
    shared
        .baseline
        .assert_restored(&shared.model, "after the process closed");
});
