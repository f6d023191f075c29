//! Engine benchmarks (issue #6), with the engine thread running as a client would see it:
//! * `doorbell_to_release_mem`: write a RELEASE_MEM, publish the write pointer, ring the
//!   doorbell, spin until the fence value lands. Target: median ≤ 2 µs with the engine hot.
//! * `release_mem_interrupt_to_wait_events`: the same packet with an interrupt that signals an
//!   event; the time until `WAIT_EVENTS` returns. Target: median ≤ 20 µs.
//! * `copy_1MiB/{memcpy,sdma_copy_linear}`: 1 MiB between two GTT buffers by the CPU and by an
//!   SDMA queue (COPY_LINEAR + FENCE). Target: SDMA ≥ 80% of memcpy.
//! * `engine_pass_idle_queue`, `engine_pass_one_release_mem`: one deterministic engine pass
//!   (what each poll of the thread costs, idle and with one packet).
//! * idle engine CPU (printed, not a criterion bench; runs under `cargo bench`): the engine
//!   thread's CPU time over 5 s with a mapped, idle queue. Target: < 1% of a core.
//!
//! The rig uses the Linux 6.1 behaviour, which does not check queue buffers against the VM,
//! so a queue needs only its ring and pointer page.
// criterion's macros generate undocumented public items.
#![allow(missing_docs)]

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use kfd_model::{KernelVersion, MapSource, Model, ModelConfig, Preset, Process, RenderNode};
use kfd_sys::*;
use pm4::sdma::{SdmaCopyLinear, SdmaFence};
use pm4::user::*;
use pm4::{Encode, PacketWriter, SdmaGen};
use std::time::{Duration, Instant};

struct Buf {
    va: u64,
    handle: u64,
    map: MapSource,
}

impl Buf {
    fn off(&self, o: u64) -> usize {
        (self.map.offset + o) as usize
    }
    fn store_u64(&self, o: u64, v: u64) {
        self.map.memory.store_u64(self.off(o), v).unwrap();
    }
    fn load_u64(&self, o: u64) -> u64 {
        self.map.memory.load_u64(self.off(o)).unwrap()
    }
    fn load_u32(&self, o: u64) -> u32 {
        self.map.memory.load_u32(self.off(o)).unwrap()
    }
    fn write_dwords(&self, o: u64, d: &[u32]) {
        self.map.memory.write(self.off(o), d.as_bytes()).unwrap();
    }
    fn host(&self) -> *mut u8 {
        (self.map.memory.host_base() + self.map.offset) as *mut u8
    }
}

struct Rig {
    model: Model,
    p: Process,
    render: RenderNode,
    gpu: u32,
    next_va: std::cell::Cell<u64>,
}

struct Queue {
    ring: Buf,
    ptrs: Buf,
    doorbell: MapSource,
    doorbell_off: usize,
    wptr: u64,
    ring_units: u64,
}

impl Rig {
    fn new() -> Rig {
        Self::with_config(ModelConfig::new(Preset::Gfx900).with_kernel(KernelVersion::Linux6_1))
    }

    fn with_config(cfg: ModelConfig) -> Rig {
        let model = Model::new(cfg).unwrap();
        let p = model.open().unwrap();
        let node = model.topology().gpus().next().unwrap();
        let render = model
            .open_render_node(node.properties.drm_render_minor as u32)
            .unwrap();
        p.call::<AcquireVm>(&mut kfd_ioctl_acquire_vm_args {
            drm_fd: render.fd as u32,
            gpu_id: node.gpu_id,
        })
        .expect("AMDKFD_IOC_ACQUIRE_VM");
        let gpu = node.gpu_id;
        Rig {
            model,
            p,
            render,
            gpu,
            next_va: std::cell::Cell::new(0x1_0000_0000),
        }
    }

    fn gtt(&self, size: u64) -> Buf {
        let va = self.next_va.get();
        self.next_va.set(va + size.next_multiple_of(1 << 21));
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size,
            gpu_id: self.gpu,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        // SAFETY: a GTT allocation carries no user pointer, only the GPU VA it reserves; the
        // model backs it with its own memory.
        unsafe { self.p.call_unchecked::<AllocMemoryOfGpu>(&mut a) }
            .expect("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU");
        let ids = [self.gpu];
        self.p
            .call::<MapMemoryToGpu>(&mut kfd_ioctl_map_memory_to_gpu_args {
                handle: a.handle,
                device_ids_array_ptr: ids.as_ptr() as u64,
                n_devices: 1,
                n_success: 0,
            })
            .expect("AMDKFD_IOC_MAP_MEMORY_TO_GPU");
        let map = self.render.mmap(a.mmap_offset, size).unwrap();
        Buf {
            va,
            handle: a.handle,
            map,
        }
    }

    fn queue(&self, queue_type: u32) -> Queue {
        let ring = self.gtt(4096);
        let ptrs = self.gtt(4096);
        let mut a = kfd_ioctl_create_queue_args {
            ring_base_address: ring.va,
            write_pointer_address: ptrs.va,
            read_pointer_address: ptrs.va + 64,
            ring_size: 4096,
            gpu_id: self.gpu,
            queue_type,
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        };
        self.p
            .call::<CreateQueue>(&mut a)
            .expect("AMDKFD_IOC_CREATE_QUEUE");
        let slice = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        let doorbell = self
            .p
            .mmap(a.doorbell_offset & !(slice - 1), slice)
            .unwrap();
        let doorbell_off = (doorbell.offset + (a.doorbell_offset & (slice - 1))) as usize;
        let ring_units = if queue_type == KFD_IOC_QUEUE_TYPE_SDMA {
            4096
        } else {
            1024
        };
        Queue {
            ring,
            ptrs,
            doorbell,
            doorbell_off,
            wptr: 0,
            ring_units,
        }
    }
}

impl Queue {
    /// Writes `dwords` at the write pointer, wrapping at the end of the ring, and publishes
    /// it: wptr memory, then doorbell. The pointer counts dwords (PM4) or bytes (SDMA).
    fn submit(&mut self, dwords: &[u32]) {
        let bytes_per_unit = if self.ring_units == 4096 { 1 } else { 4 };
        let ring_bytes = self.ring_units * bytes_per_unit;
        for (i, d) in dwords.iter().enumerate() {
            let at = (self.wptr * bytes_per_unit + 4 * i as u64) % ring_bytes;
            self.ring.write_dwords(at, &[*d]);
        }
        self.wptr += dwords.len() as u64 * 4 / bytes_per_unit;
        self.ptrs.store_u64(0, self.wptr);
        self.doorbell
            .memory
            .store_u64(self.doorbell_off, self.wptr)
            .unwrap();
    }
}

fn encode<P: Encode>(p: &P) -> Vec<u32> {
    let mut v = vec![0u32; p.dwords()];
    let n = PacketWriter::new(&mut v).push(p).unwrap();
    v.truncate(n);
    v
}

fn release_mem(addr: u64, data: u32, ctxid: u32, int_sel: ReleaseIntSel) -> Vec<u32> {
    encode(
        &ReleaseMemGfx9::new(
            &ReleaseMemArgs::end_of_pipe(
                addr,
                u64::from(data),
                ReleaseDataSel::Data32,
                int_sel,
                ctxid,
            ),
            Default::default(),
        )
        .unwrap(),
    )
}

/// Spins on `done`, yielding now and then so the engine thread gets a core on a busy machine.
fn spin_until(mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    let mut spins = 0u32;
    while !done() {
        spins += 1;
        if spins % 256 == 0 {
            std::thread::yield_now();
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "the engine did not answer"
            );
        } else {
            std::hint::spin_loop();
        }
    }
}

fn latency(c: &mut Criterion) {
    let rig = Rig::new();
    let out = rig.gtt(4096);
    let mut q = rig.queue(KFD_IOC_QUEUE_TYPE_COMPUTE);
    let mut seq = 0u32;
    c.bench_function("doorbell_to_release_mem", |b| {
        b.iter(|| {
            seq = seq.wrapping_add(1);
            q.submit(&release_mem(out.va, seq, 0, ReleaseIntSel::None));
            spin_until(|| out.load_u32(0) == seq);
        })
    });

    // A signal event on a dGPU-style event page.
    let page = rig.gtt(KFD_SIGNAL_EVENT_PAGE_SIZE);
    let mut e = kfd_ioctl_create_event_args {
        event_page_offset: page.handle,
        event_type: KFD_IOC_EVENT_SIGNAL,
        auto_reset: 1,
        ..Default::default()
    };
    rig.p
        .call::<CreateEvent>(&mut e)
        .expect("AMDKFD_IOC_CREATE_EVENT");
    let id = e.event_id;
    let slot = page.va + 8 * u64::from(id);
    let mut data = [kfd_event_data {
        event_id: id,
        ..Default::default()
    }];
    c.bench_function("release_mem_interrupt_to_wait_events", |b| {
        b.iter(|| {
            q.submit(&release_mem(
                slot,
                id,
                id,
                ReleaseIntSel::SendInterruptAfterWriteConfirm,
            ));
            let mut w = kfd_ioctl_wait_events_args {
                events_ptr: data.as_mut_ptr() as u64,
                num_events: 1,
                wait_for_all: 1,
                timeout: 5000,
                wait_result: 99,
            };
            // SAFETY: `events_ptr` is `data`, an event-data array this closure owns and holds no
            // reference into while the model writes its results during the call.
            unsafe { rig.p.call_unchecked::<WaitEvents>(&mut w) }.expect("AMDKFD_IOC_WAIT_EVENTS");
            assert_eq!(w.wait_result, KFD_IOC_WAIT_RESULT_COMPLETE);
        })
    });
}

fn copy(c: &mut Criterion) {
    const SIZE: u64 = 1 << 20;
    let rig = Rig::new();
    let src = rig.gtt(SIZE);
    let dst = rig.gtt(SIZE);
    let fence = rig.gtt(4096);
    // SAFETY: both are live 1 MiB mappings of distinct buffers owned by the rig.
    unsafe { std::ptr::write_bytes(src.host(), 0x5A, SIZE as usize) };
    let mut q = rig.queue(KFD_IOC_QUEUE_TYPE_SDMA);
    let mut g = c.benchmark_group("copy_1MiB");
    g.throughput(Throughput::Bytes(SIZE));
    g.bench_function(BenchmarkId::from_parameter("memcpy"), |b| {
        b.iter(|| {
            // SAFETY: as above; the regions do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src.host(), dst.host(), SIZE as usize) }
        })
    });
    let copy = encode(&SdmaCopyLinear::new(SdmaGen::Sdma4, src.va, dst.va, SIZE).unwrap());
    let mut seq = 0u32;
    g.bench_function(BenchmarkId::from_parameter("sdma_copy_linear"), |b| {
        b.iter(|| {
            seq = seq.wrapping_add(1);
            let mut packets = copy.clone();
            packets.extend(encode(&SdmaFence::new(fence.va, seq).unwrap()));
            q.submit(&packets);
            spin_until(|| fence.load_u32(0) == seq);
        })
    });
    g.finish();
    // (Only when the SDMA bench ran: a criterion filter may have skipped it.)
    if seq > 0 {
        assert_eq!(dst.load_u64(SIZE - 8), 0x5A5A_5A5A_5A5A_5A5A);
    }
}

/// CPU time (ns) of the model's engine threads, from `/proc/self/task/*/schedstat`.
fn engine_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim_end().starts_with("kfd-model-engin"))
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn idle_engine_cpu() {
    let rig = Rig::new();
    let out = rig.gtt(4096);
    let mut q = rig.queue(KFD_IOC_QUEUE_TYPE_COMPUTE);
    q.submit(&release_mem(out.va, 1, 0, ReleaseIntSel::None));
    spin_until(|| out.load_u32(0) == 1);
    // Let the thread cool down to its idle sleep first.
    std::thread::sleep(Duration::from_millis(100));
    let window = Duration::from_secs(5);
    let before = engine_cpu_ns();
    std::thread::sleep(window);
    let used = engine_cpu_ns() - before;
    let pct = used as f64 / window.as_nanos() as f64 * 100.0;
    println!(
        "idle_engine_cpu: {:.3}% of a core over {} s (one mapped, idle queue; {} µs of CPU)",
        pct,
        window.as_secs(),
        used / 1000
    );
}

/// The cost of one engine pass (`Model::step`) with one mapped, idle queue: what every poll
/// of the engine thread costs while a client is idle.
fn pass(c: &mut Criterion) {
    let rig = Rig::with_config(
        ModelConfig::new(Preset::Gfx900)
            .with_kernel(KernelVersion::Linux6_1)
            .with_engine_thread(false),
    );
    let out = rig.gtt(4096);
    let mut q = rig.queue(KFD_IOC_QUEUE_TYPE_COMPUTE);
    c.bench_function("engine_pass_idle_queue", |b| b.iter(|| rig.model.step()));
    let mut seq = 0u32;
    c.bench_function("engine_pass_one_release_mem", |b| {
        b.iter(|| {
            seq = seq.wrapping_add(1);
            q.submit(&release_mem(out.va, seq, 0, ReleaseIntSel::None));
            rig.model.step();
        })
    });
    assert_eq!(out.load_u32(0), seq);
}

criterion_group!(benches, latency, copy, pass);

fn main() {
    benches();
    // Only under `cargo bench` (which passes --bench), not when tests build the target.
    if std::env::args().any(|a| a == "--bench") {
        idle_engine_cpu();
    }
    Criterion::default().configure_from_args().final_summary();
}
