//! Fuzz the model's ioctl dispatcher: a sequence of ioctls on one process — raw request codes
//! with raw argument bytes, and every known command with its argument struct filled from the
//! input where chosen fields take values the driver handed out earlier (GPU ids, render fds,
//! buffer handles and addresses, queue and event ids) or pointers into the process's user
//! memory. Also mmap on `/dev/kfd` and the render nodes, eviction/restore and GPU resets.
//!
//! Checks: nothing panics; every ioctl returns a non-negative value or an errno; the queue
//! count of the process matches the queue managers' count after every call; once the process
//! is dropped the model is back at its baseline (no leaked queue, GART chunk, doorbell slice,
//! VRAM, registered process or mapped HWS queue; scheduler not hung).
#![no_main]

use arbitrary::Arbitrary;
use kfd_fuzz::{open, shared_model, Arena, ModelKey, SharedModel, ARENA_BYTES};
use kfd_model::Process;
use kfd_sys::ioctl::{self, ioc_nr, IoctlDesc};
use kfd_sys::*;
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

const MAX_OPS: usize = 48;

#[derive(Arbitrary, Debug)]
struct Input {
    preset: u8,
    kernel: u8,
    gpus: u8,
    /// ACQUIRE_VM on every GPU before the sequence.
    acquire_vm: bool,
    /// Initial contents of the user memory arena.
    user_memory: Vec<u8>,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// Any request code, any argument bytes.
    Raw { request: u32, arg: Vec<u8> },
    /// A command of the 1.18 or 1.8 table with its exact request code.
    Cmd {
        which: u8,
        arg: Vec<u8>,
        fills: Vec<Fill>,
        /// Bytes to add to (positive) or cut from (negative) the argument buffer.
        slack: i8,
    },
    /// The buffers a queue needs (ring, pointers, EOP, CWSR area), allocated and mapped
    /// through ioctls, so that CREATE_QUEUE can reach the scheduler.
    QueueKit {
        gpu: u8,
        ring_log2: u8,
        compute: bool,
    },
    /// CREATE_QUEUE over a queue kit, then some fields changed.
    CreateQueue {
        kit: u8,
        queue_type: u8,
        fills: Vec<Fill>,
    },
    /// mmap on /dev/kfd.
    Mmap {
        kind: u8,
        gpu: u8,
        value: u64,
        len: u64,
    },
    /// mmap on a render node, at an offset ALLOC returned (or any).
    RenderMmap {
        gpu: u8,
        which: u8,
        raw_offset: Option<u64>,
        len: u64,
    },
    /// Memory eviction of the process's queues, or the matching restore.
    Evict { restore: bool },
    /// A GPU reset.
    Reset { gpu: u8 },
    /// New bytes in the user memory arena.
    Poke { offset: u16, bytes: Vec<u8> },
}

/// Sets one field of the argument struct.
#[derive(Arbitrary, Debug)]
struct Fill {
    field: u8,
    source: Source,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Source {
    /// The `n`-th value the driver handed out of the field's kind.
    Known(u8),
    /// The same plus a small offset.
    KnownPlus(u8, i16),
    /// An address in the user memory arena.
    User(u16),
    /// Zero.
    Zero,
    /// Any value.
    Value(u64),
}

/// What a field holds, judged by its C name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pointer,
    GpuId,
    DrmFd,
    Handle,
    QueueId,
    EventId,
    Address,
    Size,
    Other,
}

fn kind_of(name: &str) -> Kind {
    match name {
        "gpu_id" => Kind::GpuId,
        "drm_fd" => Kind::DrmFd,
        "handle" | "event_page_offset" => Kind::Handle,
        "queue_id" => Kind::QueueId,
        "event_id" => Kind::EventId,
        "mmap_offset" => Kind::Pointer,
        n if n.ends_with("_ptr") => Kind::Pointer,
        n if n.ends_with("address") || n.ends_with("_addr") || n == "va_addr" => Kind::Address,
        n if n.ends_with("size") => Kind::Size,
        _ => Kind::Other,
    }
}

/// Values the driver handed out, to be fed back.
#[derive(Default)]
struct Known {
    gpu_ids: Vec<u64>,
    fds: Vec<u64>,
    handles: Vec<u64>,
    queue_ids: Vec<u64>,
    event_ids: Vec<u64>,
    addresses: Vec<u64>,
    sizes: Vec<u64>,
    /// Render-node mmap offsets of GTT/VRAM buffers, with the GPU index.
    bo_offsets: Vec<(usize, u64)>,
    kits: Vec<Kit>,
}

impl Known {
    fn pool(&self, k: Kind) -> &[u64] {
        match k {
            Kind::GpuId => &self.gpu_ids,
            Kind::DrmFd => &self.fds,
            Kind::Handle => &self.handles,
            Kind::QueueId => &self.queue_ids,
            Kind::EventId => &self.event_ids,
            Kind::Address => &self.addresses,
            Kind::Size => &self.sizes,
            Kind::Pointer | Kind::Other => &self.addresses,
        }
    }

    fn value(&self, k: Kind, src: Source, arena: &Arena) -> u64 {
        let pick = |n: u8| {
            let pool = self.pool(k);
            if pool.is_empty() {
                0
            } else {
                pool[n as usize % pool.len()]
            }
        };
        match src {
            Source::Known(n) if k == Kind::Pointer => arena.addr(u64::from(n) * 64),
            Source::Known(n) => pick(n),
            Source::KnownPlus(n, d) => pick(n).wrapping_add_signed(i64::from(d)),
            Source::User(off) => arena.addr(u64::from(off)),
            Source::Zero => 0,
            Source::Value(v) => v,
        }
    }
}

/// Buffers for one queue, as VAs the queue arguments name.
#[derive(Debug, Clone, Copy)]
struct Kit {
    gpu: u32,
    ring: u64,
    ring_size: u32,
    ptrs: u64,
    eop: u64,
    ctx: u64,
    ctx_size: u32,
    ctl_stack_size: u32,
}

struct Harness<'a> {
    shared: &'a SharedModel,
    p: Process,
    arena: Arc<Arena>,
    known: Known,
    next_va: u64,
}

/// Every command the dispatcher knows, 1.18 first, then the 1.8/DKMS ones.
fn commands() -> impl Iterator<Item = &'static IoctlDesc> {
    AMDKFD_IOCTLS.iter().chain(v1_8::AMDKFD_IOCTLS.iter())
}

fn put(arg: &mut [u8], offset: usize, size: usize, value: u64) {
    let bytes = value.to_le_bytes();
    let n = size.min(8);
    if let Some(dst) = arg.get_mut(offset..offset + n) {
        dst.copy_from_slice(&bytes[..n]);
    }
}

fn get(arg: &[u8], offset: usize, size: usize) -> u64 {
    let mut b = [0u8; 8];
    let n = size.min(8);
    if let Some(src) = arg.get(offset..offset + n) {
        b[..n].copy_from_slice(src);
    }
    u64::from_le_bytes(b)
}

/// WAIT_EVENTS may not block the fuzzer: at most 2 ms, and never forever.
fn clamp_wait(nr: u32, arg: &mut [u8]) {
    if nr == 0x0C && arg.len() >= 20 {
        let t = get(arg, 16, 4).min(2);
        put(arg, 16, 4, t);
    }
}

impl Harness<'_> {
    fn ioctl(&mut self, request: u32, arg: &mut [u8]) -> Option<i32> {
        let nr = ioc_nr(request);
        clamp_wait(nr, arg);
        let before = arg.to_vec();
        // SAFETY: not upheld in general, on purpose: the input chooses the addresses, to find
        // arguments the model fails to refuse. The model writes user memory only through
        // `process_vm_writev` (an unmapped address is EFAULT) and device memory it owns, so the
        // one way to corrupt this process is a USERPTR buffer over a live page of it that a
        // later GPU write reaches — a finding of the run, like a crash.
        let r = unsafe { self.p.ioctl(request, arg) };
        if let Ok(v) = r {
            assert!(v >= 0, "ioctl {request:#x} returned {v}");
        }
        self.check_counts();
        let ok = r.is_ok();
        // Remember what the driver handed out.
        if ok {
            self.harvest(nr, &before, arg);
        }
        r.ok()
    }

    fn harvest(&mut self, nr: u32, before: &[u8], after: &[u8]) {
        let Some(desc) = ioctl::find_by_nr(AMDKFD_IOCTLS, nr) else {
            return;
        };
        let field = |bytes: &[u8], name: &str| {
            desc.arg
                .field(name)
                .map(|f| get(bytes, f.offset, f.size))
                .unwrap_or(0)
        };
        match nr {
            0x16 => {
                self.known.handles.push(field(after, "handle"));
                self.known.addresses.push(field(before, "va_addr"));
                self.known.sizes.push(field(before, "size"));
                let gpu_id = field(after, "gpu_id");
                let flags = field(before, "flags") as u32;
                if flags & (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_VRAM) != 0 {
                    if let Some(i) = self.known.gpu_ids.iter().position(|&g| g == gpu_id) {
                        self.known.bo_offsets.push((i, field(after, "mmap_offset")));
                    }
                }
            }
            0x02 => self.known.queue_ids.push(field(after, "queue_id")),
            0x08 => self.known.event_ids.push(field(after, "event_id")),
            _ => {}
        }
    }

    /// The process's queues and the queue managers' agree after every call.
    fn check_counts(&self) {
        let total: u32 = self
            .shared
            .model
            .nodes()
            .iter()
            .map(|n| n.counters().total_queue_count)
            .sum();
        assert_eq!(
            total as usize,
            self.p.queue_count(),
            "queue managers and the process disagree on the number of queues"
        );
        for n in self.shared.model.nodes() {
            let c = n.counters();
            assert!(c.active_queue_count <= c.total_queue_count, "{c:?}");
            assert!(c.active_cp_queue_count <= c.active_queue_count, "{c:?}");
        }
    }

    fn typed<T: IntoBytes + FromBytes + Immutable>(
        &mut self,
        request: u32,
        args: &mut T,
    ) -> Option<i32> {
        let mut bytes = args.as_bytes().to_vec();
        let r = self.ioctl(request, &mut bytes);
        if let Ok((v, _)) = T::read_from_prefix(&bytes) {
            *args = v;
        }
        r
    }

    fn acquire_vm(&mut self) {
        for (r, &gpu) in self.shared.renders.iter().zip(&self.known.gpu_ids.clone()) {
            let mut a = kfd_ioctl_acquire_vm_args {
                drm_fd: r.fd as u32,
                gpu_id: gpu as u32,
            };
            self.typed(AMDKFD_IOC_ACQUIRE_VM, &mut a);
        }
    }

    /// ALLOC + MAP of a writable GTT buffer; its VA, or `None`.
    fn gtt(&mut self, gpu: u32, size: u64) -> Option<u64> {
        let va = self.next_va;
        self.next_va += size.next_multiple_of(1 << 21);
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size,
            gpu_id: gpu,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        self.typed(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a)?;
        let ids = [gpu];
        let ids_addr = self.arena.addr(ARENA_BYTES as u64 - 8);
        self.arena.fill(ARENA_BYTES - 8, &ids[0].to_le_bytes());
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle: a.handle,
            device_ids_array_ptr: ids_addr,
            n_devices: 1,
            n_success: 0,
        };
        self.typed(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut m)?;
        Some(va)
    }

    fn queue_kit(&mut self, gpu: u8, ring_log2: u8, compute: bool) {
        if self.known.gpu_ids.is_empty() {
            return;
        }
        let gi = gpu as usize % self.known.gpu_ids.len();
        let gpu_id = self.known.gpu_ids[gi] as u32;
        let node = self.shared.model.nodes()[gi].clone();
        let ring_size = 1u32 << (10 + ring_log2 % 8);
        let sizes = node.queue_sizes;
        let xcc = node.topo.properties.num_xcc.max(1);
        let ctx_size = ((u64::from(sizes.cwsr_size) + u64::from(sizes.debug_memory_size)) * xcc)
            .next_multiple_of(4096);
        let Some(ring) = self.gtt(gpu_id, u64::from(ring_size)) else {
            return;
        };
        let Some(ptrs) = self.gtt(gpu_id, 4096) else {
            return;
        };
        let (eop, ctx) = if compute {
            let Some(eop) = self.gtt(gpu_id, 4096) else {
                return;
            };
            let Some(ctx) = self.gtt(gpu_id, ctx_size) else {
                return;
            };
            (eop, ctx)
        } else {
            (0, 0)
        };
        self.known.kits.push(Kit {
            gpu: gpu_id,
            ring,
            ring_size,
            ptrs,
            eop,
            ctx,
            ctx_size: sizes.cwsr_size,
            ctl_stack_size: sizes.ctl_stack_size,
        });
    }

    fn fill(&self, desc: &IoctlDesc, arg: &mut [u8], fills: &[Fill]) {
        let fields = desc.arg.fields;
        if fields.is_empty() {
            return;
        }
        for f in fills.iter().take(8) {
            let field = &fields[f.field as usize % fields.len()];
            let v = self.known.value(kind_of(field.name), f.source, &self.arena);
            put(arg, field.offset, field.size, v);
        }
    }

    fn create_queue(&mut self, kit: u8, queue_type: u8, fills: &[Fill]) {
        if self.known.kits.is_empty() {
            return;
        }
        let k = self.known.kits[kit as usize % self.known.kits.len()];
        let mut a = kfd_ioctl_create_queue_args {
            ring_base_address: k.ring,
            write_pointer_address: k.ptrs + 0x38,
            read_pointer_address: k.ptrs + 0x80,
            ring_size: k.ring_size,
            gpu_id: k.gpu,
            queue_type: u32::from(queue_type % 6),
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        };
        if k.eop != 0 {
            a.eop_buffer_address = k.eop;
            a.eop_buffer_size = 4096;
            a.ctx_save_restore_address = k.ctx;
            a.ctx_save_restore_size = k.ctx_size;
            a.ctl_stack_size = k.ctl_stack_size;
        }
        let mut bytes = a.as_bytes().to_vec();
        let desc = commands()
            .find(|d| d.request == AMDKFD_IOC_CREATE_QUEUE)
            .expect("CREATE_QUEUE is in the table");
        self.fill(desc, &mut bytes, fills);
        self.ioctl(AMDKFD_IOC_CREATE_QUEUE, &mut bytes);
    }

    fn run(&mut self, op: Op) {
        match op {
            Op::Raw { request, mut arg } => {
                arg.truncate(1 << 15);
                self.ioctl(request, &mut arg);
            }
            Op::Cmd {
                which,
                arg,
                fills,
                slack,
            } => {
                let n = commands().count();
                let Some(desc) = commands().nth(which as usize % n) else {
                    return;
                };
                let len = desc
                    .size()
                    .saturating_add_signed(isize::from(slack))
                    .min(1 << 15);
                let mut bytes = vec![0u8; len];
                let k = arg.len().min(len);
                bytes[..k].copy_from_slice(&arg[..k]);
                self.fill(desc, &mut bytes, &fills);
                self.ioctl(desc.request, &mut bytes);
            }
            Op::QueueKit {
                gpu,
                ring_log2,
                compute,
            } => self.queue_kit(gpu, ring_log2, compute),
            Op::CreateQueue {
                kit,
                queue_type,
                fills,
            } => self.create_queue(kit, queue_type, &fills),
            Op::Mmap {
                kind,
                gpu,
                value,
                len,
            } => {
                let gpu_id = if self.known.gpu_ids.is_empty() {
                    0
                } else {
                    self.known.gpu_ids[gpu as usize % self.known.gpu_ids.len()] as u32
                };
                let kind = match kind % 4 {
                    0 => KfdMmapType::Mmio,
                    1 => KfdMmapType::ReservedMem,
                    2 => KfdMmapType::Events,
                    _ => KfdMmapType::Doorbell,
                };
                let offset = KfdMmapOffset {
                    kind,
                    gpu_id,
                    value,
                }
                .encode();
                if let Ok(m) = self.p.mmap(offset, len) {
                    assert!(
                        m.offset
                            .checked_add(m.len)
                            .is_some_and(|e| e <= m.memory.len() as u64),
                        "mmap {offset:#x}+{len:#x} maps past its memory: {m:?}"
                    );
                }
            }
            Op::RenderMmap {
                gpu,
                which,
                raw_offset,
                len,
            } => {
                let renders = &self.shared.renders;
                let (gi, offset) = match raw_offset {
                    Some(o) => (gpu as usize % renders.len(), o),
                    None if !self.known.bo_offsets.is_empty() => {
                        self.known.bo_offsets[which as usize % self.known.bo_offsets.len()]
                    }
                    None => return,
                };
                if let Some(r) = renders.get(gi) {
                    if let Ok(m) = r.mmap(offset, len) {
                        assert!(
                            m.offset
                                .checked_add(m.len)
                                .is_some_and(|e| e <= m.memory.len() as u64),
                            "render mmap {offset:#x}+{len:#x} maps past its memory: {m:?}"
                        );
                    }
                }
            }
            Op::Evict { restore } => {
                let _ = if restore {
                    self.p.restore_queues()
                } else {
                    self.p.evict_queues()
                };
                self.check_counts();
            }
            Op::Reset { gpu } => {
                if let Some(&g) = self
                    .known
                    .gpu_ids
                    .get(gpu as usize % self.known.gpu_ids.len().max(1))
                {
                    let _ = self.shared.model.gpu_reset(g as u32);
                    self.check_counts();
                }
            }
            Op::Poke { offset, bytes } => self.arena.fill(offset as usize, &bytes),
        }
    }
}

fuzz_target!(|input: Input| {
    let key = ModelKey::from_bytes(input.preset, input.kernel, input.gpus);
    let shared = shared_model(key);
    let arena = Arc::new(Arena::new());
    arena.fill(
        0,
        &input.user_memory[..input.user_memory.len().min(ARENA_BYTES)],
    );
    let p = open(shared, arena.clone());
    let mut h = Harness {
        shared,
        p,
        arena,
        known: Known::default(),
        next_va: 0x1_0000_0000,
    };
    h.known.gpu_ids = shared
        .model
        .nodes()
        .iter()
        .map(|n| u64::from(n.gpu_id))
        .collect();
    h.known.fds = shared.renders.iter().map(|r| r.fd as u32 as u64).collect();
    if input.acquire_vm {
        h.acquire_vm();
    }
    for op in input.ops.into_iter().take(MAX_OPS) {
        h.run(op);
    }
    let Harness { p, .. } = h;
    drop(p);
    shared
        .baseline
        .assert_restored(&shared.model, "after the process closed");
});
