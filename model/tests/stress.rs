//! Stress (issue #11): several threads and several processes on two models at once, with the
//! engine thread on, creating and destroying queues, allocating, mapping and freeing memory,
//! creating and signalling events, submitting packets and waiting for their interrupts — for a
//! fixed number of operations. Every wait is bounded and a watchdog aborts the run with a
//! message if it stops making progress, so a deadlock fails instead of hanging. Afterwards
//! every counter is back at its baseline, and the resident memory measured at checkpoints
//! stays flat.
//!
//! Threads: three worker processes and one that opens and abandons processes on model A
//! (gfx90a, 2 GPUs); one worker process and two threads sharing one process on model B
//! (gfx1030).
//!
//! The figures (operations, processes, RSS at every tenth of the run) print with
//! `cargo test -p kfd-model --test stress -- --nocapture`.

mod common;

use common::*;
use kfd_model::{Model, ModelConfig, Preset};
use kfd_sys::*;
use pm4::sdma::{SdmaFence, SdmaTrap};
use pm4::user::*;
use pm4::{Encode, GfxGen, PacketWriter};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

/// How long one WAIT_EVENTS may take before the run counts as failed (ms).
const WAIT_MS: u32 = 10_000;
const COMPLETE: u32 = KFD_IOC_WAIT_RESULT_COMPLETE;

fn encode<P: Encode + ?Sized>(p: &P) -> Vec<u32> {
    let mut v = vec![0u32; p.dwords()];
    let n = PacketWriter::new(&mut v).push(p).expect("encode");
    v.truncate(n);
    v
}

/// RELEASE_MEM writing `id` to the event slot and raising an interrupt with context `id`.
fn signal_pm4(gen: GfxGen, page_va: u64, id: u32) -> Vec<u32> {
    let args = ReleaseMemArgs::event_signal(page_va + 8 * u64::from(id), id);
    match gen {
        GfxGen::Gfx9 => encode(&ReleaseMemGfx9::new(&args, Default::default()).unwrap()),
        _ => encode(&ReleaseMemGfx10::new(&args, Default::default()).unwrap()),
    }
}

/// Operations done, by kind, summed over every thread.
#[derive(Default)]
struct Progress {
    ops: AtomicU64,
    queues_created: AtomicU64,
    buffers_allocated: AtomicU64,
    submissions: AtomicU64,
    event_signals: AtomicU64,
    processes_opened: AtomicU64,
    evictions: AtomicU64,
}

impl Progress {
    fn add(&self, n: u64) {
        self.ops.fetch_add(n, Ordering::Relaxed);
    }
}

struct LiveQueue {
    id: u32,
    bufs: QueueBufs,
    ring: RingWriter,
    sdma: bool,
}

/// One process worked by one thread.
struct Worker {
    c: Client,
    rng: Rng,
    gen: GfxGen,
    page: Buf,
    /// The event every submission signals (auto-reset).
    done_event: u32,
    /// Events the CPU sets and waits for.
    events: Vec<u32>,
    buffers: Vec<Buf>,
    queues: Vec<LiveQueue>,
    scratch: Buf,
    serial: u32,
}

impl Worker {
    fn new(model: &Model, seed: u64) -> Worker {
        let c = Client::new(model);
        let gen = c.node().gpu.generation;
        let page = c.event_page();
        let done = create_event(&c, KFD_IOC_EVENT_SIGNAL, true, page.handle)
            .expect("first signal event (with the event page)");
        let scratch = c.gtt(4096);
        Worker {
            c,
            rng: Rng(seed | 1),
            gen,
            page,
            done_event: done.event_id,
            events: Vec::new(),
            buffers: Vec::new(),
            queues: Vec::new(),
            scratch,
            serial: 0,
        }
    }

    fn gpu(&mut self) -> u32 {
        let n = self.c.gpus.len() as u64;
        self.c.gpus[self.rng.below(n) as usize]
    }

    /// One step of the mix; returns the number of driver operations it did.
    fn step(&mut self, p: &Progress) -> u64 {
        match self.rng.below(100) {
            0..=29 => self.ping_event(p),
            30..=44 => self.memory(p),
            45..=52 => self.queue(p),
            53..=84 => self.submit(p),
            85..=91 => self.query(),
            92..=94 => self.evict(p),
            _ => self.recreate_event(),
        }
    }

    /// SET_EVENT then a bounded WAIT_EVENTS that must complete (CPU-only signal path).
    fn ping_event(&mut self, p: &Progress) -> u64 {
        if self.events.len() < 8 {
            let e = create_event(&self.c, KFD_IOC_EVENT_SIGNAL, true, 0).expect("create event");
            self.events.push(e.event_id);
            return 1;
        }
        let id = self.events[self.rng.below(self.events.len() as u64) as usize];
        let mut s = kfd_ioctl_set_event_args {
            event_id: id,
            pad: 0,
        };
        self.c.p.call::<SetEvent>(&mut s).expect("set event");
        assert_eq!(
            wait_events(&self.c, &[id], true, WAIT_MS),
            (Ok(0), COMPLETE),
            "a set auto-reset event completes a wait"
        );
        p.event_signals.fetch_add(1, Ordering::Relaxed);
        2
    }

    fn memory(&mut self, p: &Progress) -> u64 {
        if self.buffers.len() < 12 && self.rng.below(2) == 0 {
            let gpu = self.gpu();
            let size = 4096 << self.rng.below(5);
            let flags = if self.rng.below(3) == 0 {
                KFD_IOC_ALLOC_MEM_FLAGS_VRAM
            } else {
                KFD_IOC_ALLOC_MEM_FLAGS_GTT
            } | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
            let b = self.c.alloc_on(gpu, size, flags).expect("alloc + map");
            b.write_u64(0, u64::from(self.serial));
            assert_eq!(b.read_u64(0), u64::from(self.serial));
            self.buffers.push(b);
            p.buffers_allocated.fetch_add(1, Ordering::Relaxed);
            2
        } else if !self.buffers.is_empty() {
            let i = self.rng.below(self.buffers.len() as u64) as usize;
            let b = self.buffers.swap_remove(i);
            self.c.free(&b).expect("unmap + free");
            2
        } else {
            0
        }
    }

    fn free_queue_buffers(&self, q: &QueueBufs) {
        for b in [
            Some(&q.ring),
            Some(&q.ptrs),
            q.eop.as_ref(),
            q.ctx.as_ref().map(|c| &c.0),
        ]
        .into_iter()
        .flatten()
        {
            self.c.free(b).expect("free a queue buffer");
        }
    }

    fn queue(&mut self, p: &Progress) -> u64 {
        if self.queues.len() < 3 && self.rng.below(3) != 0 {
            let (ty, sdma) = match self.rng.below(3) {
                0 => (KFD_IOC_QUEUE_TYPE_SDMA, true),
                1 => (KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, false),
                _ => (KFD_IOC_QUEUE_TYPE_COMPUTE, false),
            };
            let gpu = self.c.gpu();
            let (id, bufs) = self
                .c
                .create_queue_on(gpu, ty, 100)
                .expect("create a queue");
            let ring = if sdma {
                RingWriter::sdma(&bufs)
            } else {
                RingWriter::pm4(&bufs)
            };
            // AQL queues are created and destroyed but not fed: mark them with an empty ring.
            let ring = if ty == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL {
                RingWriter {
                    ring_dwords: 0,
                    ..ring
                }
            } else {
                ring
            };
            self.queues.push(LiveQueue {
                id,
                bufs,
                ring,
                sdma,
            });
            p.queues_created.fetch_add(1, Ordering::Relaxed);
            1
        } else if !self.queues.is_empty() {
            let i = self.rng.below(self.queues.len() as u64) as usize;
            let q = self.queues.swap_remove(i);
            assert_eq!(self.c.destroy_queue(q.id), Ok(0), "destroy queue {}", q.id);
            self.free_queue_buffers(&q.bufs);
            1
        } else {
            0
        }
    }

    /// A packet that writes a serial number, then the signal of `done_event`; a bounded wait;
    /// the number must be in memory.
    fn submit(&mut self, p: &Progress) -> u64 {
        let Some(i) = self.queues.iter().position(|q| q.ring.ring_dwords > 0) else {
            return self.queue(p);
        };
        let i = (i + self.rng.below(self.queues.len() as u64) as usize) % self.queues.len();
        if self.queues[i].ring.ring_dwords == 0 {
            return 0;
        }
        self.serial = self.serial.wrapping_add(1);
        let slot = 8 * u64::from(self.serial % 64);
        let (serial, page, id, gen) = (self.serial, self.page.va, self.done_event, self.gen);
        let q = &mut self.queues[i];
        if q.sdma {
            q.ring.push(
                &q.bufs,
                &pm4::sdma::SdmaWrite::new(self.scratch.va + slot, &[serial]).unwrap(),
            );
            q.ring.push(
                &q.bufs,
                &SdmaFence::new(page + 8 * u64::from(id), id).unwrap(),
            );
            q.ring.push(&q.bufs, &SdmaTrap::new(id).unwrap());
        } else {
            q.ring.push(
                &q.bufs,
                &WriteData::memory(self.scratch.va + slot, &[serial]).unwrap(),
            );
            q.ring.write(&q.bufs, &signal_pm4(gen, page, id));
        }
        self.c.submit(&q.bufs, q.ring.wptr());
        let (r, result) = wait_events(&self.c, &[id], true, WAIT_MS);
        assert_eq!(
            (r, result),
            (Ok(0), COMPLETE),
            "queue {} ({}) did not signal within {WAIT_MS} ms; written {}, its event slot {:#x}; \
             the engine's view: {:?}; the HWS maps {:?}",
            q.id,
            if q.sdma { "SDMA" } else { "PM4" },
            self.scratch.read_u32(slot) == serial,
            self.page.read_u64(8 * u64::from(id)),
            self.c.p.queue_state(q.id),
            self.c.node().gpu.hws.mapped_queues(),
        );
        assert_eq!(
            self.scratch.read_u32(slot),
            serial,
            "the packet's write landed"
        );
        p.submissions.fetch_add(1, Ordering::Relaxed);
        2
    }

    fn query(&mut self) -> u64 {
        let gpu = self.gpu();
        match self.rng.below(4) {
            0 => {
                let mut v = kfd_ioctl_get_version_args::default();
                self.c.p.call::<GetVersion>(&mut v).expect("version");
                assert_eq!(v.major_version, 1);
            }
            1 => {
                let mut a = kfd_ioctl_get_clock_counters_args {
                    gpu_id: gpu,
                    ..Default::default()
                };
                self.c.p.call::<GetClockCounters>(&mut a).expect("clocks");
            }
            2 => {
                let mut list = [kfd_process_device_apertures::default(); 8];
                let mut a = kfd_ioctl_get_process_apertures_new_args {
                    kfd_process_device_apertures_ptr: list.as_mut_ptr() as u64,
                    num_of_nodes: 8,
                    pad: 0,
                };
                // SAFETY: `kfd_process_device_apertures_ptr` is `list`, 8 entries owned by this arm
                // until the call returns; the model writes at most `num_of_nodes` (8) of them.
                unsafe { ioctl_unchecked::<GetProcessAperturesNew>(&self.c.p, &mut a) }
                    .expect("apertures");
                assert_eq!(a.num_of_nodes as usize, self.c.gpus.len());
            }
            _ => {
                let mut a = kfd_ioctl_get_available_memory_args {
                    gpu_id: gpu,
                    ..Default::default()
                };
                self.c.p.call::<AvailableMemory>(&mut a).expect("available");
            }
        }
        1
    }

    fn evict(&mut self, p: &Progress) -> u64 {
        self.c.p.evict_queues().expect("evict");
        self.c.p.restore_queues().expect("restore");
        p.evictions.fetch_add(1, Ordering::Relaxed);
        2
    }

    fn recreate_event(&mut self) -> u64 {
        let Some(id) = self.events.pop() else {
            return 0;
        };
        let mut d = kfd_ioctl_destroy_event_args {
            event_id: id,
            pad: 0,
        };
        self.c
            .p
            .call::<DestroyEvent>(&mut d)
            .expect("destroy event");
        let e = create_event(&self.c, KFD_IOC_EVENT_SIGNAL, true, 0).expect("create event");
        self.events.push(e.event_id);
        2
    }

    /// Everything back: queues destroyed, buffers freed, events destroyed.
    fn tidy(mut self) -> u64 {
        let mut ops = 0;
        for q in std::mem::take(&mut self.queues) {
            assert_eq!(self.c.destroy_queue(q.id), Ok(0));
            self.free_queue_buffers(&q.bufs);
            ops += 1;
        }
        for b in std::mem::take(&mut self.buffers) {
            self.c.free(&b).expect("free");
            ops += 2;
        }
        ops
    }
}

/// A thread that opens processes, gives them a queue, buffers and events, submits once and
/// closes them without tidying up: the driver's process-termination path under load.
fn churn(model: &Model, p: &Progress, stop: &AtomicBool, seed: u64) {
    let mut rng = Rng(seed | 1);
    while !stop.load(Ordering::Relaxed) {
        let mut w = Worker::new(model, rng.next());
        p.processes_opened.fetch_add(1, Ordering::Relaxed);
        let mut ops = 4;
        for _ in 0..(2 + rng.below(6)) {
            ops += w.step(p);
        }
        p.add(ops);
        drop(w);
    }
}

/// Two threads on one process: a ping-pong of auto-reset events (each thread sets what the
/// other waits for, so every wake-up crosses threads), with buffers allocated, mapped, unmapped
/// and freed by both in between.
fn shared_process_pair(model: &Model, p: &Progress, ops_each: u64) {
    let proc_ = model.open().expect("open");
    let node = model.nodes()[0].clone();
    let render = model
        .open_render_node(node.topo.properties.drm_render_minor as u32)
        .expect("render node");
    let mut vm = kfd_ioctl_acquire_vm_args {
        drm_fd: render.fd as u32,
        gpu_id: node.gpu_id,
    };
    proc_.call::<AcquireVm>(&mut vm).expect("acquire vm");
    p.processes_opened.fetch_add(1, Ordering::Relaxed);
    let event = || {
        let mut e = kfd_ioctl_create_event_args {
            event_type: KFD_IOC_EVENT_SIGNAL,
            auto_reset: 1,
            ..Default::default()
        };
        proc_.call::<CreateEvent>(&mut e).expect("create event");
        e.event_id
    };
    let (ping, pong) = (event(), event());
    let wait = |id: u32| {
        let mut data = [kfd_event_data {
            event_id: id,
            ..Default::default()
        }];
        let mut w = kfd_ioctl_wait_events_args {
            events_ptr: data.as_mut_ptr() as u64,
            num_events: 1,
            wait_for_all: 1,
            timeout: WAIT_MS,
            wait_result: 0,
        };
        // SAFETY: `events_ptr` is `data`, one `kfd_event_data` of this closure, untouched until the
        // call returns; the model reads and writes only that entry.
        unsafe { ioctl_unchecked::<WaitEvents>(&proc_, &mut w) }.expect("wait");
        assert_eq!(
            w.wait_result, COMPLETE,
            "event {id} set by the other thread within {WAIT_MS} ms"
        );
    };
    let set = |id: u32| {
        let mut s = kfd_ioctl_set_event_args {
            event_id: id,
            pad: 0,
        };
        proc_.call::<SetEvent>(&mut s).expect("set event");
    };
    // ALLOC + MAP + UNMAP + FREE of a GTT buffer at `va`.
    let buffer = |va: u64| {
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size: 8192,
            gpu_id: node.gpu_id,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        // SAFETY: a GTT allocation, no USERPTR flag: the argument carries no user address
        // (`va_addr` is a GPU virtual address; `mmap_offset` is read as one only for USERPTR).
        unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&proc_, &mut a) }.expect("alloc");
        let ids = [node.gpu_id];
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle: a.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        proc_.call::<MapMemoryToGpu>(&mut m).expect("map");
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle: a.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        proc_.call::<UnmapMemoryFromGpu>(&mut u).expect("unmap");
        let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: a.handle };
        proc_.call::<FreeMemoryOfGpu>(&mut f).expect("free");
    };
    thread::scope(|s| {
        s.spawn(|| {
            for i in 0..ops_each / 8 {
                set(ping);
                buffer(0x7000_0000 + (i % 64) * 0x10_0000);
                wait(pong);
                p.add(6);
            }
        });
        s.spawn(|| {
            for i in 0..ops_each / 8 {
                wait(ping);
                buffer(0x9000_0000 + (i % 64) * 0x10_0000);
                set(pong);
                p.add(6);
                p.event_signals.fetch_add(2, Ordering::Relaxed);
            }
        });
    });
    drop(render);
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("resident pages");
    pages * 4096
}

/// Aborts the test process with `what` if `done` is not signalled within `limit`.
fn watchdog(limit: Duration, progress: Arc<Progress>) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
            eprintln!(
                "stress: no end after {limit:?} ({} operations done): a deadlock or a lost wake-up; aborting",
                progress.ops.load(Ordering::Relaxed)
            );
            std::process::abort();
        }
    });
    tx
}

struct Baseline {
    gart: Vec<usize>,
}

fn baseline(m: &Model) -> Baseline {
    Baseline {
        gart: m
            .nodes()
            .iter()
            .map(|n| n.gpu.gart.chunks_in_use())
            .collect(),
    }
}

fn assert_back_to_baseline(m: &Model, b: &Baseline, name: &str) {
    // The engine thread may still be finishing its last pass over unmapped queues.
    wait_until(&format!("{name}: every process gone"), || {
        m.process_count() == 0
    });
    for (i, n) in m.nodes().iter().enumerate() {
        let c = n.counters();
        assert_eq!(
            (
                c.processes_count,
                c.active_queue_count,
                c.active_cp_queue_count,
                c.total_queue_count,
                c.gws_queue_count
            ),
            (0, 0, 0, 0, 0),
            "{name} gpu {i}: {c:?}"
        );
        assert!(
            c.sched_running && !c.is_hws_hang && !c.active_runlist,
            "{name} gpu {i}: {c:?}"
        );
        assert_eq!(
            n.gpu.gart.chunks_in_use(),
            b.gart[i],
            "{name} gpu {i}: GART chunks"
        );
        assert_eq!(
            n.gpu.doorbells.slices_in_use(),
            0,
            "{name} gpu {i}: doorbell slices"
        );
        assert_eq!(n.vram_available(), n.vram_size(), "{name} gpu {i}: VRAM");
        assert!(
            n.gpu.hws.mapped_queues().is_empty(),
            "{name} gpu {i}: HWS queues"
        );
    }
}

/// Runs `total` operations over every worker and returns the figures.
fn run(total: u64, limit: Duration) {
    let a = Model::new(
        ModelConfig::new(Preset::Gfx90a)
            .with_gpus(2)
            .with_preemption_timeout(Duration::from_secs(5)),
    )
    .expect("model A");
    let b = Model::new(
        ModelConfig::new(Preset::Gfx1030).with_preemption_timeout(Duration::from_secs(5)),
    )
    .expect("model B");
    let (base_a, base_b) = (baseline(&a), baseline(&b));
    let progress = Arc::new(Progress::default());
    let done = watchdog(limit, progress.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    // Model A: three worker processes and a churning one; model B: one worker process.
    let models = [a.clone(), a.clone(), a.clone(), b.clone()];
    let workers = models.len() as u64;
    let mut handles = Vec::new();
    for (i, m) in models.into_iter().enumerate() {
        let p = progress.clone();
        handles.push(thread::spawn(move || {
            let mut w = Worker::new(&m, 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1));
            p.processes_opened.fetch_add(1, Ordering::Relaxed);
            let share = total / workers;
            let mut mine = 0;
            while mine < share {
                let n = w.step(&p);
                mine += n;
                p.add(n);
            }
            p.add(w.tidy());
        }));
    }
    let pair = {
        let (m, p) = (b.clone(), progress.clone());
        thread::spawn(move || shared_process_pair(&m, &p, total / 8))
    };
    let churner = {
        let (m, p, s) = (a.clone(), progress.clone(), stop.clone());
        thread::spawn(move || churn(&m, &p, &s, 7))
    };
    // RSS at every tenth of the run.
    let mut checkpoints = Vec::new();
    let mut next = 0;
    while handles.iter().any(|h| !h.is_finished()) || !pair.is_finished() {
        let ops = progress.ops.load(Ordering::Relaxed);
        if ops >= next * total / 10 && next <= 10 {
            checkpoints.push((ops, rss_bytes(), start.elapsed()));
            next += 1;
        }
        thread::sleep(Duration::from_millis(5));
    }
    for h in handles {
        h.join().expect("a worker failed");
    }
    pair.join().expect("the threads sharing a process failed");
    stop.store(true, Ordering::Relaxed);
    churner.join().expect("the churning thread failed");
    let elapsed = start.elapsed();
    checkpoints.push((progress.ops.load(Ordering::Relaxed), rss_bytes(), elapsed));
    let _ = done.send(());
    assert_back_to_baseline(&a, &base_a, "model A");
    assert_back_to_baseline(&b, &base_b, "model B");

    let p = &*progress;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    println!(
        "stress: {} operations in {:.1} s by 7 threads on 2 models ({} processes opened): \
         {} queues created, {} buffers, {} packet submissions waited for, {} event signals, \
         {} evict/restore pairs",
        get(&p.ops),
        elapsed.as_secs_f64(),
        get(&p.processes_opened),
        get(&p.queues_created),
        get(&p.buffers_allocated),
        get(&p.submissions),
        get(&p.event_signals),
        get(&p.evictions)
    );
    for (ops, rss, t) in &checkpoints {
        println!(
            "stress:   at {ops:>8} ops ({:>6.1} s): RSS {:>6.1} MiB",
            t.as_secs_f64(),
            *rss as f64 / (1 << 20) as f64
        );
    }
    // Flat: from the second checkpoint (past warm-up: thread stacks, the allocator's arenas)
    // to the end, resident memory grows by less than 8 MiB — 8 bytes per operation.
    if checkpoints.len() >= 3 {
        let warm = checkpoints[1].1;
        let last = checkpoints.last().map_or(warm, |c| c.1);
        assert!(
            last < warm + (8 << 20),
            "resident memory grew from {} MiB to {} MiB over the run",
            warm >> 20,
            last >> 20
        );
    }
    assert!(get(&p.submissions) > 0 && get(&p.queues_created) > 0);
}

/// One million operations fit a debug build in well under two minutes (about 45 s here), so
/// the full run is part of every `cargo test`.
#[test]
fn stress_one_million_operations() {
    run(1_000_000, Duration::from_secs(600));
}
