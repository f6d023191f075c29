//! The Rust thunk's `DevKfd` backend — real system calls on `/dev/kfd` — timed by criterion on
//! four of the operations `tests/c/hsakmt_bench.c` times with libhsakmt. The comparison with
//! libhsakmt itself is `tests/c/bench.sh`, which alternates the two sides round by round
//! (the thunk's side there is `kfd bench --ops`):
//!
//! ```sh
//! KFD_DEVICE=/dev/kfd LD_PRELOAD=target/release/libkfd_preload.so \
//!     cargo bench -p kfd-preload --bench devkfd
//! ```
//!
//! Run on its own (`cargo bench -p kfd-preload --bench devkfd`) without `KFD_DEVICE` it times
//! whatever `OpenOptions::from_env` picks (the in-process model when there is no /dev/kfd).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;
use thunk::{EventKind, Kfd, MemoryKind, OpenOptions, QueueOptions, WaitStatus};

fn open() -> Kfd {
    let options = OpenOptions::from_env().expect("KFD_DEVICE / KFD_MODEL options");
    let kfd = Kfd::open_with(options).expect("open the KFD backend");
    eprintln!("devkfd bench on {}", kfd.backend().describe());
    kfd
}

fn devkfd(c: &mut Criterion) {
    let kfd = open();
    let gpu = kfd.gpu(0).expect("a GPU");
    let mut g = c.benchmark_group("devkfd");

    g.bench_function("pm4_queue_create_destroy", |b| {
        b.iter(|| {
            drop(
                gpu.create_pm4_queue(&QueueOptions::new().ring_size(4096))
                    .expect("queue"),
            )
        })
    });

    g.bench_function("alloc_map_unmap_free_64k", |b| {
        b.iter(|| drop(gpu.alloc(MemoryKind::Vram, 64 << 10).expect("alloc")))
    });

    let event = kfd.create_event(EventKind::Signal, true).expect("event");
    g.bench_function("event_set_wait", |b| {
        b.iter(|| {
            event.set().expect("set");
            let status = event.wait(Some(Duration::from_secs(1))).expect("wait");
            assert_eq!(status, WaitStatus::Signaled);
        })
    });

    let fence = gpu.alloc(MemoryKind::Gtt, 4096).expect("fence buffer");
    let mut queue = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .expect("queue");
    let mut seq = 0u64;
    g.bench_function("submit_fence_round_trip", |b| {
        b.iter(|| {
            seq += 1;
            queue.push_fence(fence.gpu_addr(0), seq).expect("fence");
            queue.submit().expect("submit");
            fence
                .wait_u64(0, seq, Duration::from_secs(1))
                .expect("fence value");
        })
    });
    g.finish();
}

criterion_group!(benches, devkfd);
criterion_main!(benches);
