//! What the thunk costs on top of the model it drives.
//!
//! * `get_version` / `set_event`: one ioctl through the thunk (`Kfd::query_version`,
//!   `Event::set`) against the same ioctl on the model's process directly (argument bytes on the
//!   stack), and `thunk_minus_direct`, the difference measured in alternating blocks so both
//!   see the same machine load. Target: the thunk adds at most 50 ns per call.
//! * `pm4_fence_round_trip`: a RELEASE_MEM fence pushed (into the ring), submitted (write
//!   pointer, doorbell) and waited for, through the thunk, against a minimal client that does the same
//!   with the model's raw surface (ioctl bytes, its device memory, its doorbell page).
//!   Target: within 10 % of the model's own figure.
//! * `pm4_submit`: the CPU side of that submit alone — `push_fence` + `submit` (packet into
//!   the ring, write pointer, doorbell) on a queue no engine thread runs, the bench moving the
//!   read pointer on as a CP would. What the issue #22 row `submit_fence_round_trip` pays on
//!   top of libhsakmt's eight stores, write pointer and doorbell.
//!
//! `cargo bench -p thunk -- --warm-up-time 1 --measurement-time 3`
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, Criterion};
use kfd_model::{MapSource, Model, Process};
use kfd_sys::*;
use std::hint::black_box;
use std::time::{Duration, Instant};
use thunk::model_access::{KfdModelExt, ModelConfig, OpenOptionsModelExt};
use thunk::{EventKind, Kfd, MemoryKind, OpenOptions, Preset, QueueOptions};

fn ioctl_overhead(c: &mut Criterion) {
    // No engine thread: nothing runs beside the calls being measured.
    let config = ModelConfig::new(Preset::Gfx900).with_engine_thread(false);
    let kfd = Kfd::open_with(OpenOptions::model_config(config)).expect("model");
    let model = kfd.model().expect("model").clone();
    let direct = model.open().expect("process");
    let mut g = c.benchmark_group("get_version");
    g.bench_function("model_direct", |b| {
        b.iter(|| {
            let mut v = kfd_ioctl_get_version_args::default();
            direct.call::<GetVersion>(black_box(&mut v)).expect("ioctl");
            black_box(v.minor_version)
        })
    });
    g.bench_function("thunk", |b| {
        b.iter(|| black_box(kfd.query_version().expect("version")))
    });
    g.bench_function("thunk_minus_direct", |b| {
        b.iter_custom(|iters| {
            interleaved(
                iters,
                || {
                    let mut v = kfd_ioctl_get_version_args::default();
                    direct.call::<GetVersion>(black_box(&mut v)).expect("ioctl");
                    black_box(v.minor_version);
                },
                || {
                    black_box(kfd.query_version().expect("version"));
                },
            )
        })
    });
    g.finish();

    let event = kfd.create_event(EventKind::Signal, false).expect("event");
    let mut e = kfd_ioctl_create_event_args {
        event_type: KFD_IOC_EVENT_SIGNAL,
        ..Default::default()
    };
    direct
        .call::<CreateEvent>(&mut e)
        .expect("AMDKFD_IOC_CREATE_EVENT");
    let mut g = c.benchmark_group("set_event");
    g.bench_function("model_direct", |b| {
        b.iter(|| {
            let mut a = kfd_ioctl_set_event_args {
                event_id: black_box(e.event_id),
                pad: 0,
            };
            direct.call::<SetEvent>(&mut a).expect("ioctl");
        })
    });
    g.bench_function("thunk", |b| b.iter(|| event.set().expect("set")));
    g.bench_function("thunk_minus_direct", |b| {
        b.iter_custom(|iters| {
            interleaved(
                iters,
                || {
                    let mut a = kfd_ioctl_set_event_args {
                        event_id: black_box(e.event_id),
                        pad: 0,
                    };
                    direct.call::<SetEvent>(&mut a).expect("ioctl");
                },
                || event.set().expect("set"),
            )
        })
    });
    g.finish();
}

/// The thunk's extra time, measured in blocks of 32 calls in the order direct, thunk, thunk,
/// direct (ABBA), so that both see the same machine load and a drift in it cancels; the signed
/// differences are summed over the sample (a sample where the thunk came out faster counts as
/// 1 ns: criterion needs a time).
fn interleaved(iters: u64, mut direct: impl FnMut(), mut thunk: impl FnMut()) -> Duration {
    let mut extra_ns: i128 = 0;
    let mut left = iters;
    let time = |n: u64, f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_nanos() as i128
    };
    while left > 0 {
        let n = left.min(64);
        let (a, b) = (n / 2, n - n / 2);
        let d1 = time(a, &mut direct);
        let t1 = time(a, &mut thunk);
        let t2 = time(b, &mut thunk);
        let d2 = time(b, &mut direct);
        extra_ns += (t1 + t2) - (d1 + d2);
        left -= n;
    }
    Duration::from_nanos(extra_ns.max(1) as u64)
}

/// The smallest client of the model that runs a PM4 queue: buffers by ioctl, packets and
/// pointers written straight into the model's device memory, its doorbell page by `mmap` source.
struct DirectQueue {
    model: Model,
    gpu_id: u32,
    ring: MapSource,
    ring_va: u64,
    pointers: MapSource,
    fence: MapSource,
    fence_va: u64,
    doorbell: MapSource,
    doorbell_byte: usize,
    wptr: u64,
    _process: Process,
    _render: kfd_model::RenderNode,
}

const RING_DWORDS: u64 = 1024;

impl DirectQueue {
    fn new(model: &Model) -> DirectQueue {
        let p = model.open().expect("process");
        let node = model.topology().gpus().next().expect("gpu").clone();
        let gpu_id = node.gpu_id;
        let render = model
            .open_render_node(node.properties.drm_render_minor as u32)
            .expect("render");
        let mut a = kfd_ioctl_acquire_vm_args {
            drm_fd: render.fd as u32,
            gpu_id,
        };
        p.call::<AcquireVm>(&mut a).expect("AMDKFD_IOC_ACQUIRE_VM");
        let mut next_va = 0x40_0000_0000u64;
        let mut alloc = |size: u64| -> (u64, Option<MapSource>) {
            let va = next_va;
            next_va += size.next_multiple_of(2 << 20);
            let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
                va_addr: va,
                size,
                gpu_id,
                flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
                ..Default::default()
            };
            // SAFETY: a GTT allocation carries no user pointer, only the GPU VA it reserves; the
            // model backs it with its own memory.
            unsafe { p.call_unchecked::<AllocMemoryOfGpu>(&mut a) }
                .expect("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU");
            let ids = [gpu_id];
            let mut m = kfd_ioctl_map_memory_to_gpu_args {
                handle: a.handle,
                device_ids_array_ptr: ids.as_ptr() as u64,
                n_devices: 1,
                n_success: 0,
            };
            p.call::<MapMemoryToGpu>(&mut m)
                .expect("AMDKFD_IOC_MAP_MEMORY_TO_GPU");
            (va, render.mmap(a.mmap_offset, size).ok())
        };
        let (ring_va, ring) = alloc(RING_DWORDS * 4);
        let (ptr_va, pointers) = alloc(4096);
        let (fence_va, fence) = alloc(4096);
        let (eop_va, _) = alloc(4096);
        let sizes = model.node(gpu_id).expect("node").queue_sizes;
        let ctx_size = (u64::from(sizes.cwsr_size) + u64::from(sizes.debug_memory_size))
            .next_multiple_of(4096);
        let (ctx_va, _) = alloc(ctx_size);
        let mut q = kfd_ioctl_create_queue_args {
            ring_base_address: ring_va,
            write_pointer_address: ptr_va + 64,
            read_pointer_address: ptr_va,
            ring_size: (RING_DWORDS * 4) as u32,
            gpu_id,
            queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE,
            queue_percentage: 100,
            queue_priority: 7,
            eop_buffer_address: eop_va,
            eop_buffer_size: 4096,
            ctx_save_restore_address: ctx_va,
            ctx_save_restore_size: sizes.cwsr_size,
            ctl_stack_size: sizes.ctl_stack_size,
            ..Default::default()
        };
        p.call::<CreateQueue>(&mut q)
            .expect("AMDKFD_IOC_CREATE_QUEUE");
        let doorbell = p
            .mmap(q.doorbell_offset & !8191, 8192)
            .expect("doorbell page");
        DirectQueue {
            model: model.clone(),
            gpu_id,
            ring: ring.expect("ring memory"),
            ring_va,
            pointers: pointers.expect("pointer memory"),
            fence: fence.expect("fence memory"),
            fence_va,
            doorbell,
            doorbell_byte: (q.doorbell_offset & 8191) as usize,
            wptr: 0,
            _process: p,
            _render: render,
        }
    }

    /// RELEASE_MEM of `value` to the fence, submit, spin until it lands.
    fn round_trip(&mut self, value: u64) {
        let packet =
            thunk::packets::ReleaseMem::fence(pm4::GfxGen::Gfx9, self.fence_va, value, true, None)
                .expect("packet");
        let mut dw = [0u32; 8];
        pm4::Encode::encode_into(&packet, &mut dw).expect("encode");
        let mut slot = self.wptr % RING_DWORDS;
        if slot + 8 > RING_DWORDS {
            // Fill the tail with one-dword NOPs and start over at 0.
            let tail = vec![0xFFFF_1000u32; (RING_DWORDS - slot) as usize];
            self.ring
                .memory
                .write(
                    self.ring.offset as usize + slot as usize * 4,
                    tail.as_bytes(),
                )
                .expect("ring");
            self.wptr += RING_DWORDS - slot;
            slot = 0;
        }
        self.ring
            .memory
            .write(self.ring.offset as usize + slot as usize * 4, dw.as_bytes())
            .expect("ring");
        self.wptr += 8;
        self.pointers
            .memory
            .store_u64(self.pointers.offset as usize + 64, self.wptr)
            .expect("wptr");
        self.doorbell
            .memory
            .store_u64(
                self.doorbell.offset as usize + self.doorbell_byte,
                self.wptr,
            )
            .expect("doorbell");
        self.model.doorbell_rung(self.gpu_id);
        let at = self.fence.offset as usize;
        while self.fence.memory.load_u64(at) != Some(value) {
            std::hint::spin_loop();
        }
        let _ = self.ring_va;
    }
}

fn round_trip(c: &mut Criterion) {
    let kfd = Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1)).expect("model");
    let model = kfd.model().expect("model").clone();
    let mut direct = DirectQueue::new(&model);
    let gpu = kfd.gpu(0).expect("gpu");
    let fence = gpu.alloc(MemoryKind::Gtt, 4096).expect("fence");
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .expect("queue");
    let mut g = c.benchmark_group("pm4_fence_round_trip");
    let mut n = 0u64;
    g.bench_function("model_direct", |b| {
        b.iter(|| {
            n += 1;
            direct.round_trip(n);
        })
    });
    let mut m = 0u64;
    let mut thunk_trip = || {
        m += 1;
        q.push_fence(fence.gpu_va(), m).expect("push");
        q.submit().expect("submit");
        fence.wait_u64(0, m, Duration::from_secs(5)).expect("fence");
    };
    g.bench_function("thunk", |b| b.iter(&mut thunk_trip));
    g.bench_function("thunk_minus_direct", |b| {
        b.iter_custom(|iters| {
            interleaved(
                iters,
                || {
                    n += 1;
                    direct.round_trip(n);
                },
                &mut thunk_trip,
            )
        })
    });
    g.finish();
}

fn submit(c: &mut Criterion) {
    // No engine thread: the queue's packets are never run, so the measurement is the CPU's.
    let config = ModelConfig::new(Preset::Gfx900).with_engine_thread(false);
    let kfd = Kfd::open_with(OpenOptions::model_config(config)).expect("model");
    let gpu = kfd.gpu(0).expect("gpu");
    let fence = gpu.alloc(MemoryKind::Gtt, 4096).expect("fence");
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .expect("queue");
    let ring_dwords = u64::from(q.ring_size() / 4);
    let mut g = c.benchmark_group("pm4_submit");
    let mut m = 0u64;
    g.bench_function("push_fence_submit", |b| {
        b.iter(|| {
            m += 1;
            q.push_fence(fence.gpu_va(), m).expect("push");
            let w = q.submit().expect("submit");
            // The CP's part: it has read everything (a dword offset inside the ring).
            q.pointers()
                .store_u32(thunk::READ_POINTER_OFFSET, (w.get() % ring_dwords) as u32)
                .expect("rptr");
        })
    });
    g.finish();
}

criterion_group!(benches, ioctl_overhead, round_trip, submit);
criterion_main!(benches);
