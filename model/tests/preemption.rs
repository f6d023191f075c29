//! The preemption fence protocol (UNMAP_QUEUES + QUERY_STATUS 10 → 100), its timeout path
//! (`ETIME`, then `EIO` until the GPU is reset), failed preemptions reported in the HIQ MQD,
//! and eviction/restore (facts §9.5, §9.7, §9.8).

mod common;

use common::*;
use kfd_model::hw::HwsFaults;
use kfd_model::packet_manager::KFD_FENCE_COMPLETED;
use kfd_model::{Errno, KernelVersion, ModelConfig, Preset};
use kfd_sys::*;

#[test]
fn every_change_preempts_then_fences_then_maps() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let node = c.node();
    let s0 = node.gpu.hws.stats();
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let s1 = node.gpu.hws.stats();
    // First queue: nothing was mapped, so no unmap; just a runlist.
    assert_eq!(
        (
            s1.unmaps - s0.unmaps,
            s1.fences - s0.fences,
            s1.runlists - s0.runlists
        ),
        (0, 0, 1)
    );
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let s2 = node.gpu.hws.stats();
    assert_eq!(
        (
            s2.unmaps - s1.unmaps,
            s2.fences - s1.fences,
            s2.runlists - s1.runlists
        ),
        (1, 1, 1)
    );
    let fence = node.dqm().fence_addr().unwrap();
    assert_eq!(node.gpu.gart.load_u64(fence), Some(KFD_FENCE_COMPLETED));
    assert_eq!(
        s2.queue_preemptions - s1.queue_preemptions,
        1,
        "the first queue left its HQD"
    );
    assert_eq!(node.gpu.hws.mapped_queues().len(), 2);
}

#[test]
fn a_silent_scheduler_times_out_then_everything_is_eio_until_reset() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let node = c.node();
    let (q0, _) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    // A hardware-exception event to observe the reset.
    let mut ev = kfd_ioctl_create_event_args {
        event_type: KFD_IOC_EVENT_HW_EXCEPTION,
        ..Default::default()
    };
    c.p.call::<CreateEvent>(&mut ev).unwrap();

    node.gpu.hws.set_faults(HwsFaults {
        hang: true,
        ..Default::default()
    });
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).map(|_| ()),
        Errno::ETIME,
        "no fence",
    );
    assert!(node.counters().is_hws_hang);
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).map(|_| ()),
        Errno::EIO,
        "hung: EIO",
    );
    // Destroying still frees the queue (the kernel's PQM tolerates ETIME/EIO).
    assert_errno(c.destroy_queue(q0), Errno::EIO, "destroy while hung");
    assert_eq!(c.p.queue_count(), 0);
    assert_eq!(node.counters().total_queue_count, 0);

    model.gpu_reset(c.gpu()).unwrap();
    assert!(!node.counters().is_hws_hang);
    let mut data = [kfd_event_data {
        event_id: ev.event_id,
        ..Default::default()
    }];
    let mut w = kfd_ioctl_wait_events_args {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: 1,
        wait_for_all: 1,
        timeout: 0,
        wait_result: 99,
    };
    // SAFETY: `events_ptr` is `data`, one `kfd_event_data` of this test, untouched until the call
    // returns; the model reads and writes only that entry.
    unsafe { ioctl_unchecked::<WaitEvents>(&c.p, &mut w) }.unwrap();
    assert_eq!(
        w.wait_result, KFD_IOC_WAIT_RESULT_COMPLETE,
        "the reset raised the hw exception"
    );
    let hw = data[0].data.hw_exception_data();
    assert_eq!(
        (hw.reset_type, hw.reset_cause, hw.gpu_id),
        (
            KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
            KFD_HW_EXCEPTION_GPU_HANG,
            c.gpu()
        )
    );
    // After the reset the scheduler works again.
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    assert_eq!(node.gpu.hws.mapped_queues().len(), 2);
}

#[test]
fn other_processes_see_eio_too_until_reset() {
    let model = model(Preset::Gfx900, 1);
    let a = Client::new(&model);
    let b = Client::new(&model);
    a.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    a.node().gpu.hws.set_faults(HwsFaults {
        hang: true,
        ..Default::default()
    });
    assert_errno(
        b.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).map(|_| ()),
        Errno::ETIME,
        "first to notice",
    );
    assert_errno(
        a.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).map(|_| ()),
        Errno::EIO,
        "the device is hung",
    );
    // Events and memory do not need the scheduler.
    let mut ev = kfd_ioctl_create_event_args {
        event_type: KFD_IOC_EVENT_SIGNAL,
        ..Default::default()
    };
    b.p.call::<CreateEvent>(&mut ev).unwrap();
    b.gtt(4096);
}

fn unpreemptible(kernel: KernelVersion) -> (Client, u32, u32) {
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_kernel(kernel));
    let c = Client::new(&model);
    let (stuck, _) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let node = c.node();
    let doorbell = node.dqm().queue(c.pasid(), stuck).unwrap().doorbell_off;
    node.gpu.hws.set_faults(HwsFaults {
        unpreemptible_doorbell: Some(doorbell),
        ..Default::default()
    });
    (c, stuck, doorbell)
}

#[test]
fn a_queue_that_will_not_preempt_hangs_6_1() {
    let (c, _, _) = unpreemptible(KernelVersion::Linux6_1);
    // The fence arrives, but the HIQ MQD names a queue that stayed on the hardware.
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).map(|_| ()),
        Errno::ETIME,
        "6.1: ETIME",
    );
    assert!(c.node().counters().is_hws_hang);
}

#[test]
fn a_queue_that_will_not_preempt_is_reset_on_6_12() {
    let (c, stuck, doorbell) = unpreemptible(KernelVersion::Linux6_12);
    // The per-queue reset rescues the operation.
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let node = c.node();
    assert!(!node.counters().is_hws_hang);
    assert!(node
        .gpu
        .hws
        .mapped_queues()
        .iter()
        .all(|m| m.queue.doorbell_offset != doorbell));
    // ... but the process has a reset queue: updating its queues is refused.
    let mut u = kfd_ioctl_update_queue_args {
        queue_id: stuck,
        queue_percentage: 50,
        queue_priority: 7,
        ..Default::default()
    };
    assert_errno(
        c.p.call::<UpdateQueue>(&mut u),
        Errno::EACCES,
        "update on a reset queue",
    );
}

#[test]
fn eviction_is_refcounted_and_restore_maps_again() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let node = c.node();
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    assert_eq!(node.gpu.hws.mapped_queues().len(), 2);

    c.p.evict_queues().unwrap();
    c.p.evict_queues().unwrap();
    assert!(node.gpu.hws.mapped_queues().is_empty());
    let cnt = node.counters();
    assert_eq!(
        (
            cnt.active_queue_count,
            cnt.total_queue_count,
            cnt.processes_count
        ),
        (0, 2, 1)
    );
    // A queue created while evicted starts evicted (inactive).
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    assert_eq!(node.counters().active_queue_count, 0);

    c.p.restore_queues().unwrap();
    assert!(
        node.gpu.hws.mapped_queues().is_empty(),
        "one restore for two evictions"
    );
    c.p.restore_queues().unwrap();
    assert_eq!(node.gpu.hws.mapped_queues().len(), 3);
    assert_eq!(node.counters().active_queue_count, 3);
    // A restore too many does nothing.
    c.p.restore_queues().unwrap();
    assert_eq!(node.gpu.hws.mapped_queues().len(), 3);
}

#[test]
fn update_queue_deactivates_and_reactivates() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let node = c.node();
    let (q, bufs) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let mut u = kfd_ioctl_update_queue_args {
        ring_base_address: bufs.ring.va,
        queue_id: q,
        ring_size: 4096,
        queue_percentage: 0,
        queue_priority: 15,
    };
    c.p.call::<UpdateQueue>(&mut u).unwrap();
    assert_eq!(node.counters().active_queue_count, 0);
    assert!(node.gpu.hws.mapped_queues().is_empty());
    u.queue_percentage = 100;
    c.p.call::<UpdateQueue>(&mut u).unwrap();
    assert_eq!(node.counters().active_queue_count, 1);
    // The MQD carries the new priority: 15 → pipe priority HIGH (2).
    let mqd_addr = node.gpu.hws.mapped_queues()[0].queue.mqd_addr;
    let mut bytes = [0u8; 2048];
    node.gpu.gart.read(mqd_addr, &mut bytes).unwrap();
    let m = mqd::ComputeMqd::decode(mqd::Generation::Gfx9, &bytes).unwrap();
    use mqd::ComputeDescriptor;
    assert_eq!(m.queue_priority(), 15);
    assert_eq!(m.pipe_priority(), mqd::PipePriority::High);
}
