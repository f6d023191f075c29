//! Fault injection (issue #11): lost and delayed interrupts, a slow engine, VM faults at chosen
//! addresses, a full HIQ and a hung scheduler — and the driver's kernel-like answers.

mod common;

use common::*;
use kfd_model::{Errno, Fault, ModelConfig, Preset};
use kfd_sys::*;
use pm4::user::*;
use pm4::{Encode, PacketWriter};
use std::time::{Duration, Instant};

fn stepped(cfg: ModelConfig) -> kfd_model::Model {
    model_with(cfg.with_engine_thread(false))
}

fn signal(page_va: u64, id: u32) -> Vec<u32> {
    let p = ReleaseMemGfx9::new(
        &ReleaseMemArgs::event_signal(page_va + 8 * u64::from(id), id),
        Default::default(),
    )
    .unwrap();
    let mut v = vec![0u32; p.dwords()];
    PacketWriter::new(&mut v).push(&p).unwrap();
    v
}

const COMPLETE: u32 = KFD_IOC_WAIT_RESULT_COMPLETE;
const TIMEOUT: u32 = KFD_IOC_WAIT_RESULT_TIMEOUT;

#[test]
fn a_lost_interrupt_leaves_the_event_unsignalled_until_the_next_one() {
    let model = stepped(ModelConfig::new(Preset::Gfx900));
    let c = Client::new(&model);
    model
        .inject_fault(c.gpu(), Fault::LoseInterrupts(1))
        .unwrap();
    let page = c.event_page();
    let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.write(&q, &signal(page.va, ev.event_id));
    c.submit(&q, ring.wptr());
    let a = model.run_until_idle();
    assert_eq!((a.packets, a.interrupts), (1, 0));
    assert_eq!(c.node().gpu.ih.dropped(), 1);
    assert_eq!(wait_events(&c, &[ev.event_id], true, 0), (Ok(0), TIMEOUT));
    let slot = page.read_u64(8 * u64::from(ev.event_id));
    assert_eq!(
        (slot as u32, slot != u64::MAX),
        (ev.event_id, true),
        "the slot was written (32-bit data); nobody acknowledged it"
    );
    // The next interrupt gets through and finds the slot.
    ring.write(&q, &signal(page.va, ev.event_id));
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    assert_eq!(wait_events(&c, &[ev.event_id], true, 0), (Ok(0), COMPLETE));
}

#[test]
fn losing_every_interrupt_keeps_memory_results_but_no_events() {
    let model = stepped(ModelConfig::new(Preset::Gfx900).with_fault(Fault::LoseEveryInterrupt(1)));
    let c = Client::new(&model);
    let page = c.event_page();
    let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    for _ in 0..3 {
        ring.push(
            &q,
            &pm4::sdma::SdmaFence::new(page.va + 8 * u64::from(ev.event_id), 1).unwrap(),
        );
        ring.push(&q, &pm4::sdma::SdmaTrap::new(ev.event_id).unwrap());
    }
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    assert_eq!(c.node().gpu.ih.dropped(), 3);
    assert_eq!(wait_events(&c, &[ev.event_id], true, 0), (Ok(0), TIMEOUT));
    assert_eq!(q.ptrs.read_u64(0x80), ring.wptr(), "the queue itself ran");
    // Clearing the fault brings interrupts back.
    model.clear_faults(c.gpu()).unwrap();
    ring.push(&q, &pm4::sdma::SdmaTrap::new(ev.event_id).unwrap());
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    assert_eq!(wait_events(&c, &[ev.event_id], true, 0), (Ok(0), COMPLETE));
}

#[test]
fn delayed_interrupts_complete_waits_late() {
    let model = model_with(
        ModelConfig::new(Preset::Gfx900)
            // Long enough that the first wait below, 5 ms right after the submit, can only
            // end before it unless the host stalls this thread for a whole second.
            .with_fault(Fault::DelayInterrupts(Duration::from_secs(1))),
    );
    let c = Client::new(&model);
    let page = c.event_page();
    let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.write(&q, &signal(page.va, ev.event_id));
    let t = Instant::now();
    c.submit(&q, ring.wptr());
    assert_eq!(wait_events(&c, &[ev.event_id], true, 5), (Ok(0), TIMEOUT));
    assert_eq!(
        wait_events(&c, &[ev.event_id], true, HANG_MS),
        (Ok(0), COMPLETE)
    );
    assert!(t.elapsed() >= Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(
        reported_rptr(&q),
        ring.wptr() as u32,
        "the packet ran at once"
    );
}

fn reported_rptr(q: &QueueBufs) -> u32 {
    q.ptrs.read_u32(0x80)
}

#[test]
fn a_slow_engine_runs_one_packet_at_a_time_without_blocking_the_driver() {
    let model = stepped(ModelConfig::new(Preset::Gfx900));
    let c = Client::new(&model);
    let out = c.gtt(4096);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    model
        .inject_fault(c.gpu(), Fault::SlowEngine(Duration::from_millis(3)))
        .unwrap();
    let mut ring = RingWriter::pm4(&q);
    for i in 0..8 {
        ring.push(
            &q,
            &WriteData::memory(out.va + 4 * i, &[i as u32 + 1]).unwrap(),
        );
    }
    c.submit(&q, ring.wptr());
    let t = Instant::now();
    assert_eq!(model.step().packets, 1);
    assert_eq!(model.step().throttled, 1, "held back until its time");
    // The driver is not held up by the slow engine.
    c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    model.run_until_idle();
    assert!(
        t.elapsed() >= Duration::from_millis(21),
        "{:?}",
        t.elapsed()
    );
    assert!((0..8).all(|i| out.read_u32(4 * i) == i as u32 + 1));
    assert_eq!(c.p.queue_state(qid).unwrap().packets, 8);
}

#[test]
fn an_injected_vm_fault_hits_only_its_range() {
    let model = stepped(ModelConfig::new(Preset::Gfx90a));
    let c = Client::new(&model);
    let mem_ev = create_event(&c, KFD_IOC_EVENT_MEMORY, false, 0).unwrap();
    let buf = c.gtt(8192);
    model
        .inject_fault(
            c.gpu(),
            Fault::VmFault {
                va: buf.va + 4096,
                len: 4096,
            },
        )
        .unwrap();
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(&q, &WriteData::memory(buf.va + 16, &[1]).unwrap());
    ring.push(&q, &WriteData::memory(buf.va + 4096 + 16, &[2]).unwrap());
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    assert_eq!((buf.read_u32(16), buf.read_u32(4096 + 16)), (1, 0));
    let (r, result, data) = wait_events_data(&c, &[mem_ev.event_id], true, 0);
    assert_eq!((r, result), (Ok(0), COMPLETE));
    assert_eq!(data[0].data.memory_exception_data().va, buf.va + 4096);
    assert!(matches!(
        c.p.queue_error(qid),
        Some(kfd_model::QueueError::VmFault(_))
    ));
    // The driver still sees the buffer as mapped: the fault is the hardware's.
    let node = c.node();
    assert_eq!(
        node.counters().active_queue_count,
        0,
        "evicted after the fault"
    );
    // Cleared and restored, the queue retries the packet and goes on.
    model.clear_faults(c.gpu()).unwrap();
    c.p.restore_queues().unwrap();
    model.run_until_idle();
    assert_eq!(buf.read_u32(4096 + 16), 2);
    assert_eq!(c.p.queue_error(qid), None);
}

#[test]
fn a_full_hiq_fails_the_ioctl_with_enomem_and_leaves_no_trace() {
    let model = stepped(ModelConfig::new(Preset::Gfx900));
    let c = Client::new(&model);
    let node = c.node();
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let before = node.counters();
    let chunks = node.gpu.gart.chunks_in_use();
    model.inject_fault(c.gpu(), Fault::HiqFull).unwrap();
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).map(|_| ()),
        Errno::ENOMEM,
        "no room on the HIQ for the runlist",
    );
    assert_eq!(node.counters(), before, "counters unchanged");
    assert_eq!(node.gpu.gart.chunks_in_use(), chunks, "the MQD was freed");
    assert_eq!(c.p.queue_count(), 1);
    model.clear_faults(c.gpu()).unwrap();
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    assert_eq!(node.counters().active_queue_count, 2);
}

#[test]
fn faults_from_the_environment() {
    // Only this test touches the variable.
    std::env::set_var(
        kfd_model::faults::FAULTS_ENV,
        "scheduler-hang, slow-engine=1ms",
    );
    let cfg = ModelConfig::new(Preset::Gfx900).with_env_faults().unwrap();
    std::env::set_var(kfd_model::faults::FAULTS_ENV, "warp-drive");
    let err = ModelConfig::new(Preset::Gfx900)
        .with_env_faults()
        .unwrap_err();
    std::env::remove_var(kfd_model::faults::FAULTS_ENV);
    assert!(
        err.starts_with("KFD_MODEL_FAULTS: unknown fault 'warp-drive'"),
        "{err}"
    );
    assert_eq!(
        cfg.faults,
        [
            Fault::SchedulerHang,
            Fault::SlowEngine(Duration::from_millis(1))
        ]
    );
    // A model that starts with a hung scheduler: the first runlist goes out unanswered (mapping
    // waits for nothing), the next change waits for the preemption fence and times out, then
    // everything is EIO until a reset brings the scheduler back.
    let model = stepped(cfg);
    let c = Client::new(&model);
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).map(|_| ()),
        Errno::ETIME,
        "hang",
    );
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).map(|_| ()),
        Errno::EIO,
        "hung",
    );
    model.gpu_reset(c.gpu()).unwrap();
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
}
