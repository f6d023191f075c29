//! The pool of destroyed queues' buffers (issue #22): a new queue reuses the ring and pointer
//! page of a destroyed one, zeroed; the pool is bounded; it holds no reference that keeps the
//! process open; and the reused buffers carry work. The same on the model and (under
//! `KFD_DEVICE`) on real system calls.
#![cfg(feature = "model")]

mod common;

use common::*;
use std::sync::Arc;
use thunk::model_access::{KfdModelExt, ModelBackend, ModelConfig};
use thunk::{Gpu, Kfd, MemoryKind, OpenOptions, QueueOptions};

fn opts() -> QueueOptions {
    QueueOptions::new().ring_size(4096)
}

/// Runs a fence through `q` and waits for it: the queue works from its (reused) pointers.
fn fence_round_trip(gpu: &Gpu, q: &mut thunk::Pm4Queue) {
    let fence = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    q.push_fence(fence.gpu_addr(0), 0xF00D).unwrap();
    q.submit().unwrap();
    fence.wait_u64(0, 0xF00D, T).unwrap();
    q.wait_idle(T).unwrap();
}

#[test]
fn a_destroyed_queues_ring_and_pointers_are_reused_zeroed() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    gpu.release_pooled_queue_buffers();
    let mut q = gpu.create_pm4_queue(&opts()).unwrap();
    fence_round_trip(&gpu, &mut q);
    assert_ne!(
        q.pointers().load_u64(thunk::READ_POINTER_OFFSET).unwrap(),
        0,
        "the read pointer moved"
    );
    let (ring_va, pointers_va) = (q.ring().gpu_va(), q.pointers().gpu_va());
    // Dirty every byte, as a queue that ran for long would.
    q.ring().fill(0, 4096, 0xA5).unwrap();
    q.pointers().fill(0, 4096, 0x5A).unwrap();
    drop(q);
    assert_eq!(gpu.pooled_queue_buffers(), 2);

    let mut q = gpu.create_pm4_queue(&opts()).unwrap();
    assert_eq!(gpu.pooled_queue_buffers(), 0);
    // Both are 4 KiB of the same GTT flags, so either may take either's place.
    let mut old = [ring_va, pointers_va];
    let mut new = [q.ring().gpu_va(), q.pointers().gpu_va()];
    old.sort_unstable();
    new.sort_unstable();
    assert_eq!(new, old, "the ring and pointer page were reused");
    assert!(q.ring().read_vec(0, 4096).unwrap().iter().all(|&b| b == 0));
    assert!(q
        .pointers()
        .read_vec(0, 4096)
        .unwrap()
        .iter()
        .all(|&b| b == 0));
    assert_eq!(q.error_payload(), 0);
    fence_round_trip(&gpu, &mut q);
}

#[test]
fn a_reused_ring_of_an_aql_queue_starts_with_invalid_packets() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_pm4_queue(&opts()).unwrap();
    let mut old = [q.ring().gpu_va(), q.pointers().gpu_va()];
    // Headers of type 2 (KERNEL_DISPATCH) everywhere, in both buffers.
    q.ring().fill(0, 4096, 0x02).unwrap();
    q.pointers().fill(0, 4096, 0x02).unwrap();
    drop(q);
    let aql = gpu.create_aql_queue(&opts()).unwrap();
    let mut new = [aql.ring().gpu_va(), aql.pointers().gpu_va()];
    old.sort_unstable();
    new.sort_unstable();
    assert_eq!(new, old, "the ring and pointer page were reused");
    for slot in 0..64 {
        assert_eq!(
            aql.ring().load_u32(slot * 64).unwrap(),
            1,
            "slot {slot}: INVALID"
        );
        assert_eq!(
            aql.ring().load_u32(slot * 64 + 4).unwrap(),
            0,
            "slot {slot}"
        );
    }
}

#[test]
fn the_pool_is_bounded_and_matches_sizes() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    gpu.release_pooled_queue_buffers();
    let queues: Vec<_> = (0..6)
        .map(|_| gpu.create_pm4_queue(&opts()).unwrap())
        .collect();
    drop(queues);
    // Twelve buffers were freed; the pool kept at most its bound.
    assert_eq!(gpu.pooled_queue_buffers(), Gpu::QUEUE_BUFFER_POOL_MAX);
    // A ring of another size is not taken from the pool (only the pointer page is).
    let big = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(16384))
        .unwrap();
    assert_eq!(big.ring().size(), 16384);
    assert_eq!(gpu.pooled_queue_buffers(), Gpu::QUEUE_BUFFER_POOL_MAX - 1);
    drop(big);
    assert_eq!(gpu.pooled_queue_buffers(), Gpu::QUEUE_BUFFER_POOL_MAX);
    gpu.release_pooled_queue_buffers();
    assert_eq!(gpu.pooled_queue_buffers(), 0);
}

#[test]
fn pooled_buffers_are_driver_buffers_and_are_freed_on_release() {
    if device().is_some() {
        eprintln!("skipped on a device: counting the driver's buffers needs the model");
        return;
    }
    let backend = Arc::new(ModelBackend::new(ModelConfig::new(Preset::Gfx900)).unwrap());
    let kfd = Kfd::open_with(OpenOptions::backend(backend.clone())).unwrap();
    let gpu = kfd.gpu(0).unwrap();
    let count = || backend.process().buffer_count();
    // The first queue maps the doorbell page, which stays.
    drop(gpu.create_pm4_queue(&opts()).unwrap());
    gpu.release_pooled_queue_buffers();
    let before = count();
    drop(gpu.create_pm4_queue(&opts()).unwrap());
    // The ring and the pointer page stay allocated (and mapped) for the next queue …
    assert_eq!(count(), before + 2);
    let q = gpu.create_pm4_queue(&opts()).unwrap();
    assert_eq!(
        count(),
        before + 4,
        "+ EOP and CWSR area, no new ring or pointer page"
    );
    drop(q);
    assert_eq!(count(), before + 2);
    // … until released.
    gpu.release_pooled_queue_buffers();
    assert_eq!(count(), before);
}

#[test]
fn the_pool_does_not_keep_the_device_open() {
    let Some(kfd) = model_kfd(Preset::Gfx900, 1, "watching the process close") else {
        return;
    };
    let model = kfd.model().cloned().unwrap();
    let gpu = kfd.gpu(0).unwrap();
    drop(gpu.create_pm4_queue(&opts()).unwrap());
    assert_eq!(gpu.pooled_queue_buffers(), 2);
    assert_eq!(model.process_count(), 1);
    drop(gpu);
    drop(kfd);
    assert_eq!(
        model.process_count(),
        0,
        "the process closed with buffers in the pool"
    );
}
