//! A doorbell stored by an unmodified client after the model has idled is noticed at once
//! (issue #17 item 9): the client's doorbell mapping is write-protected while the engine
//! thread sleeps, and the store's fault wakes it (`hw::doorbell_watch`). Also here, as they
//! too ring a doorbell after an idle second: the wake-up policy around it (a new queue's
//! runlist, a restore). How long the wake-ups take is measured, not tested:
//! `model/benches/dispatch.rs` (doorbell after idle, through the watch and through
//! `Model::doorbell_rung` with a caller that spins without yielding).

mod common;

use common::*;
use kfd_sys::*;
use pm4::user::WriteData;
use std::time::Duration;

/// `common::watched_pm4_queue`, with the test's logger.
fn watched_queue() -> (kfd_model::Model, Client, QueueBufs, Buf, DoorbellMapping) {
    let _ = env_logger::builder().is_test(true).try_init();
    watched_pm4_queue()
}

/// An idle second: past DEEP_IDLE_AFTER, the engine thread sleeps up to 16 ms between polls
/// with the doorbell mappings write-protected. The sleep only lets time pass; the test then
/// waits for the state it needs (the watch armed).
fn idle_a_second(model: &kfd_model::Model) {
    std::thread::sleep(Duration::from_millis(1100));
    wait_until("the engine thread sleeps watching the doorbells", || {
        model.doorbell_watch_armed()
    });
}

#[test]
fn a_doorbell_stored_after_a_second_of_idle_wakes_the_engine_through_the_watch() {
    let (model, _c, q, mem, bell) = watched_queue();
    let mut writer = RingWriter::pm4(&q);
    // Only the doorbell: the write-pointer location stays as it was. How long each took is
    // `model/benches/dispatch.rs`'s doorbell-after-idle row.
    for i in 1..=3u32 {
        idle_a_second(&model);
        writer.push(&q, &WriteData::memory(mem.va, &[i]).unwrap());
        bell.ring(q.doorbell_offset, writer.wptr());
        wait_until("the packet ran", || mem.read_u32(0) == i);
        assert_eq!(
            model.doorbell_wakeups(),
            u64::from(i),
            "each store after the idle second faulted and woke the engine"
        );
    }
}

#[test]
fn after_idle_the_packets_run_before_the_faulting_doorbell_store_completes() {
    let (model, c, q, mem, bell) = watched_queue();
    let mut ring = RingWriter::pm4(&q);
    for i in 1..=2u32 {
        idle_a_second(&model);
        ring.push(&q, &WriteData::memory(mem.va, &[i]).unwrap());
        ring.push_clock_stamp(&q, mem.va + 8);
        // As libhsakmt's clients and ROCr do: the write-pointer location, then the doorbell.
        q.ptrs.write_u64(0x38, ring.wptr());
        bell.ring(q.doorbell_offset, ring.wptr());
        let after_store = c.gpu_clock();
        wait_until("the packets ran", || {
            mem.read_u32(0) == i && mem.read_u64(8) != 0
        });
        // The store faulted and woke the engine, whose pass read the write-pointer location
        // and ran both packets before it let the store complete.
        assert!(
            mem.read_u64(8) <= after_store,
            "packets stamped at {} ran before the doorbell store returned at {after_store}",
            mem.read_u64(8)
        );
        mem.write_u64(8, 0);
    }
    assert_eq!(
        model.doorbell_wakeups(),
        2,
        "each store faulted and woke the engine"
    );
}

#[test]
fn a_watched_doorbell_mapping_is_refused_as_userptr_and_as_an_svm_range() {
    let (_model, c, _q, _mem, bell) = watched_queue();
    // amdkfd refuses both over its VM_IO doorbell mappings (EFAULT); on the model the GPU
    // would otherwise store through the write-protected mapping from the engine thread.
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: bell.addr,
        size: bell.len,
        mmap_offset: bell.addr,
        gpu_id: c.gpu(),
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    assert_eq!(
        // SAFETY: a USERPTR over the watched doorbell mapping, which the model must refuse: it
        // looks the range up in the process's mappings (PROCMAP_QUERY or /proc/self/maps) and among
        // its watched doorbell mappings and returns EFAULT before populating a page or making the
        // `UserMemory` the GPU would reach; nothing is dereferenced.
        unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut a) },
        Err(kfd_model::Errno::EFAULT)
    );
    let head = kfd_ioctl_svm_args {
        start_addr: bell.addr,
        size: 4096,
        op: KFD_IOCTL_SVM_OP_SET_ATTR,
        nattr: 1,
        attrs: [],
    };
    let access = kfd_ioctl_svm_attribute {
        r#type: KFD_IOCTL_SVM_ATTR_ACCESS,
        value: c.gpu(),
    };
    let mut bytes = zerocopy::IntoBytes::as_bytes(&head).to_vec();
    bytes.extend_from_slice(zerocopy::IntoBytes::as_bytes(&access));
    let request = AMDKFD_IOC_SVM + (8 << 16);
    // SAFETY: the range is the test's doorbell mapping, which the model must refuse.
    let r = unsafe { c.p.ioctl(request, &mut bytes) };
    assert_eq!(r, Err(kfd_model::Errno::EFAULT));
}

#[test]
fn a_queue_created_while_the_engine_sleeps_watched_does_not_wake_it_and_its_first_doorbell_does() {
    let (model, c, _q, mem, _bell) = watched_queue();
    wait_until("the engine thread sleeps watching the doorbells", || {
        model.doorbell_watch_armed()
    });
    let woken = model.engine_wakeups();
    // A new queue has nothing to run before its first doorbell: the runlist that maps it
    // needs no pass now (a wake-up would only cost the client a TLB shootdown later).
    let (id, q2) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    assert!(
        model.doorbell_watch_armed(),
        "the new runlist left the watch armed"
    );
    assert_eq!(
        model.engine_wakeups(),
        woken,
        "creating a queue woke the watching engine thread"
    );
    // Its first doorbell, through the client's mapping (mapped and watched as the shim does
    // on the client's mmap), wakes the engine and runs the packet.
    let bell2 = DoorbellMapping::new(&c, q2.doorbell_offset);
    // SAFETY: `bell2` maps the model's doorbell memory until the end of this test.
    unsafe { model.watch_doorbell_mapping(bell2.addr, bell2.len) }.unwrap();
    let mut ring = RingWriter::pm4(&q2);
    ring.push(&q2, &WriteData::memory(mem.va, &[0x5eed]).unwrap());
    q2.ptrs.write_u64(0x38, ring.wptr());
    let faults = model.doorbell_wakeups();
    bell2.ring(q2.doorbell_offset, ring.wptr());
    wait_until("the new queue's packet ran", || mem.read_u32(0) == 0x5eed);
    assert_eq!(
        model.doorbell_wakeups(),
        faults + 1,
        "the store faulted and woke the engine"
    );
    c.destroy_queue(id).unwrap();
}

#[test]
fn queues_restored_after_an_eviction_wake_the_watching_engine_for_their_pending_work() {
    let (model, c, q, mem, _bell) = watched_queue();
    let mut ring = RingWriter::pm4(&q);
    // The engine thread leaves its sleep every 16 ms for a pass; a restore that lands in
    // that window finds it awake and has nothing to wake (its pass sees the queue). Such a
    // round says nothing, and the next one tries again.
    let mut woke = false;
    for round in 1..=5u32 {
        wait_until("the engine thread sleeps watching the doorbells", || {
            model.doorbell_watch_armed()
        });
        c.p.evict_queues().unwrap();
        // Work written while the queue is off the GPU, and no doorbell: the restore must
        // bring the engine to it, the watch would not.
        ring.push(&q, &WriteData::memory(mem.va, &[round]).unwrap());
        q.ptrs.write_u64(0x38, ring.wptr());
        let woken = model.engine_wakeups();
        c.p.restore_queues().unwrap();
        woke = model.engine_wakeups() > woken;
        wait_until("the restored queue's packet ran", || {
            mem.read_u32(0) == round
        });
        if woke {
            break;
        }
    }
    assert!(woke, "the restored runlist woke the engine thread");
}
