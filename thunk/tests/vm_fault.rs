//! GPU VM faults: memory dropped while a queue still writes to it faults the GPU, not the host,
//! and the fault arrives as a memory-exception event (facts §8.1, §8.3). A fault evicts the
//! whole process's queues, so these tests live in their own binary (one process on a device).
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use thunk::{EventData, EventKind, MemoryKind, QueueOptions};

#[test]
fn memory_dropped_before_the_queue_that_writes_it_faults_the_gpu_not_the_host() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let fault = kfd.create_event(EventKind::MemoryException, false).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let addr = buf.gpu_addr(0x40);
    let mut q = gpu.create_pm4_queue(&QueueOptions::new()).unwrap();
    drop(buf);
    // The queue still holds the stale address; the GPU's page tables no longer map it.
    q.push_write_data(addr, &[0xBAD]).unwrap();
    q.submit().unwrap();
    match fault.wait_data(Some(T)).unwrap() {
        Some(EventData::MemoryException(m)) => {
            assert_eq!(m.gpu_id, gpu.id());
            assert_eq!(m.va & !0xFFF, addr & !0xFFF, "{:#x}", m.va);
        }
        other => panic!("expected a memory exception, got {other:?}"),
    }
    // The faulting queue is still an object that can be dropped cleanly.
    drop(q);
}

#[test]
fn fault_on_a_buffer_unmapped_from_the_gpu() {
    // On a device this would be a second fault in a process already evicted by the first.
    let Some(kfd) = model_kfd(Preset::Gfx900, 1, "a second VM fault in a fresh process") else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let fault = kfd.create_event(EventKind::MemoryException, false).unwrap();
    // A buffer the CPU sees but the GPU does not.
    let hidden = gpu
        .alloc_with(&thunk::AllocOptions::new(MemoryKind::Gtt, 4096).map_to(&[]))
        .unwrap();
    let mut q = gpu.create_sdma_queue(&QueueOptions::new()).unwrap();
    q.push_fence(hidden.gpu_addr(0x80), 1).unwrap();
    q.submit().unwrap();
    match fault.wait_data(Some(T)).unwrap() {
        Some(EventData::MemoryException(m)) => {
            assert_eq!(m.gpu_id, gpu.id());
            assert_eq!(m.va & !0xFFF, hidden.gpu_va(), "{:#x}", m.va);
        }
        other => panic!("expected a memory exception, got {other:?}"),
    }
    // The CPU side is untouched.
    assert_eq!(hidden.load_u32(0x80).unwrap(), 0);
}
