//! Objects dropped in any order: a queue before the memory it writes, and the process handle
//! before everything made from it. The device closes when the last object goes. (Memory
//! dropped before the queue that writes it is in `vm_fault.rs`.)
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use thunk::model_access::{KfdModelExt, OpenOptionsModelExt};
use thunk::{AllocOptions, EventKind, MemoryKind, QueueOptions, WaitStatus};

#[test]
fn queue_dropped_before_the_memory_it_wrote() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu.create_pm4_queue(&QueueOptions::new()).unwrap();
    q.push_fence(buf.gpu_va(), 42).unwrap();
    q.submit().unwrap();
    buf.wait_u64(0, 42, T).unwrap();
    drop(q);
    assert_eq!(buf.load_u64(0).unwrap(), 42);
    if let Some(m) = kfd.model() {
        assert_eq!(m.node(gpu.id()).unwrap().counters().active_queue_count, 0);
    }
}

#[test]
fn process_handle_dropped_while_objects_live() {
    let kfd = kfd();
    let model = kfd.model().cloned();
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let ev = kfd.create_event(EventKind::Signal, false).unwrap();
    let mut q = gpu.create_sdma_queue(&QueueOptions::new()).unwrap();
    drop(gpu);
    drop(kfd);
    // Everything still works: the process stays open for them.
    q.push_fence(buf.gpu_va(), 9).unwrap();
    q.push_signal(&ev).unwrap();
    q.submit().unwrap();
    assert_eq!(ev.wait(Some(T)).unwrap(), WaitStatus::Signaled);
    assert_eq!(buf.load_u32(0).unwrap(), 9);
    if let Some(m) = &model {
        assert_eq!(m.process_count(), 1);
    }
    // Dropped in an unusual order: the event the queue signals, then the buffer it wrote,
    // then the queue — which closes the process.
    drop(ev);
    drop(buf);
    drop(q);
    if let Some(m) = &model {
        assert_eq!(m.process_count(), 0, "closed with the last object");
    }
}

#[test]
fn every_drop_order_cleans_up() {
    let Some(first) = model_kfd(Preset::Gfx900, 1, "counting the driver's objects") else {
        return;
    };
    let model = first.model().unwrap().clone();
    drop(first);
    // Six objects, dropped in six rotations of their order.
    for rotation in 0..6 {
        let kfd = thunk::Kfd::open_with(thunk::OpenOptions::model_instance(&model)).unwrap();
        let gpu = kfd.gpu(0).unwrap();
        let mut objects: Vec<Box<dyn std::any::Any>> = vec![
            Box::new(gpu.alloc(MemoryKind::Vram, 1 << 20).unwrap()),
            Box::new(gpu.create_pm4_queue(&QueueOptions::new()).unwrap()),
            Box::new(kfd.create_event(EventKind::Signal, true).unwrap()),
            Box::new(gpu.create_aql_queue(&QueueOptions::new()).unwrap()),
            Box::new(
                gpu.alloc_with(&AllocOptions::new(MemoryKind::Gtt, 8192))
                    .unwrap(),
            ),
            Box::new(kfd.clone()),
        ];
        drop((kfd, gpu));
        objects.rotate_left(rotation);
        let n = model
            .node(model.topology().gpus().next().unwrap().gpu_id)
            .unwrap();
        assert_eq!(n.counters().active_queue_count, 2);
        while let Some(o) = objects.pop() {
            drop(o);
        }
        assert_eq!(model.process_count(), 0, "rotation {rotation}");
        assert_eq!(n.counters().active_queue_count, 0, "rotation {rotation}");
    }
}
