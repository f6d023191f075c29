//! Tearing a channel down mid-stream: the bytes already drained come back, the producers
//! stop, and the driver holds no queue, event or buffer of the channel afterwards.

mod common;

use common::*;
use drain::synth::{SynthCheck, SynthSource, SYNTH_KIND};
use drain::*;
use std::time::Duration;
use thunk::Preset;

/// The process's event page and doorbell page live as long as the process (the driver sets
/// them up with the first event and queue); a first channel makes them, then the count starts.
fn warm_up(backend: &thunk::model_access::ModelBackend, gpu: &thunk::Gpu) -> (usize, usize, usize) {
    Channel::new(gpu, ChannelConfig::new(4096, 2))
        .unwrap()
        .close()
        .unwrap();
    // The GPU keeps a destroyed queue's ring and pointer page for its next queue; counted
    // without them, what is left is the channel's own.
    gpu.release_pooled_queue_buffers();
    resources(backend)
}

/// Reads records of one chunk into `check`; returns how many.
fn read_chunk(ch: &mut Channel, check: &mut SynthCheck) -> u64 {
    let chunk = ch.next_chunk(Some(T)).unwrap().expect("a drained slot");
    let mut n = 0;
    for r in chunk.records() {
        check.check(&r.unwrap()).unwrap();
        n += 1;
    }
    n
}

fn teardown_mid_stream(engine: DrainEngine, trigger: Trigger, preset: Preset) {
    let (backend, _kfd, gpu) = counted_gpu(preset);
    let before = warm_up(&backend, &gpu);
    let config = ChannelConfig::new(8192, 4)
        .host_slots(4)
        .engine(engine)
        .trigger(trigger)
        .producer_timeout(Duration::from_secs(30));
    let mut ch = Channel::new(&gpu, config).unwrap();
    let during = resources(&backend);
    let queues = if trigger == Trigger::KernelEnd { 2 } else { 1 };
    assert_eq!(
        during.1,
        before.1 + queues,
        "the drain queue (and watch queue) exist"
    );
    assert_eq!(during.2, before.2 + 1, "the channel's event exists");
    assert!(
        during.0 >= before.0 + 4,
        "buffer, host ring, control page, IBs (+ ring buffers)"
    );

    // A producer thread that keeps writing until the channel closes under it.
    let mut producer = ch.host_producer(1);
    let handle = std::thread::spawn(move || {
        let mut src = SynthSource::new(120).unwrap();
        loop {
            match producer.produce_with(SYNTH_KIND, 120, |s| src.write_next(s).map(drop)) {
                Ok(Produced::Written { .. }) => {}
                Ok(Produced::Dropped) => unreachable!("lossless"),
                Err(Error::Closed) => return src.next_sequence(),
                Err(e) => panic!("{e}"),
            }
        }
    });
    // Read three slots, then let the drain run ahead into the host ring.
    let mut check = SynthCheck::in_order();
    for _ in 0..3 {
        read_chunk(&mut ch, &mut check);
    }
    let read = check.records;
    let since = std::time::Instant::now();
    let mut ready = 0;
    while ready == 0 && since.elapsed() < T {
        std::thread::sleep(Duration::from_millis(5));
        ready = ch.stats().host_slots_ready;
    }
    assert!(ready > 0, "drained slots are waiting in the host ring");

    let closed = ch.close().unwrap();
    let attempted = handle.join().unwrap();
    // The returned bytes continue exactly where reading stopped: whole records, in order.
    let mut n = 0;
    for r in drain::layout::Records::new(&closed.unread) {
        check.check(&r.unwrap()).unwrap();
        n += 1;
    }
    // Every drained slot holds at least one record (full ones 63; the period may flush
    // partial ones).
    assert!(n >= ready, "{n} records for {ready} drained slots");
    assert_eq!(closed.stats.bytes_consumed, (read + n) * 128);
    assert_eq!(
        closed.stats.bytes_drained, closed.stats.bytes_consumed,
        "everything drained came back"
    );
    assert!(closed.stats.records_produced >= read + n);
    assert!(
        attempted >= closed.stats.records_produced,
        "the producer stopped when the channel closed"
    );
    // The producer was dropped with its thread: nothing of the channel is left in the driver
    // but its queues' rings, which the GPU keeps for reuse until released.
    assert!(gpu.pooled_queue_buffers() <= thunk::Gpu::QUEUE_BUFFER_POOL_MAX);
    gpu.release_pooled_queue_buffers();
    assert_eq!(
        resources(&backend),
        before,
        "buffers, queues, events all released"
    );
}

#[test]
fn teardown_mid_stream_releases_everything_sdma() {
    teardown_mid_stream(DrainEngine::Sdma, Trigger::OnFull, Preset::Gfx900);
}

#[test]
fn teardown_mid_stream_releases_everything_pm4_kernel_end() {
    teardown_mid_stream(DrainEngine::Pm4, Trigger::KernelEnd, Preset::Gfx900);
}

#[test]
fn teardown_on_gfx1030_periodic() {
    teardown_mid_stream(
        DrainEngine::Sdma,
        Trigger::Periodic(Duration::from_millis(1)),
        Preset::Gfx1030,
    );
}

#[test]
fn finish_drains_everything_committed_then_closes() {
    let (backend, _kfd, gpu) = counted_gpu(Preset::Gfx900);
    let before = warm_up(&backend, &gpu);
    let ch = Channel::new(&gpu, ChannelConfig::new(4096, 4)).unwrap();
    let mut p = ch.host_producer(2);
    let mut src = SynthSource::new(48).unwrap();
    // 2.5 slots' worth, never read: 56-byte records, 72 per slot.
    for _ in 0..180 {
        p.produce_with(SYNTH_KIND, 48, |s| src.write_next(s).map(drop))
            .unwrap();
    }
    let closed = ch.finish(T).unwrap();
    assert!(closed.complete);
    let mut check = SynthCheck::in_order();
    for r in drain::layout::Records::new(&closed.unread) {
        check.check(&r.unwrap()).unwrap();
    }
    assert_eq!(check.records, 180);
    assert_eq!(closed.stats.slots_drained, 3);
    assert!(matches!(p.produce(1, b"late"), Err(Error::Closed)));
    drop(p);
    gpu.release_pooled_queue_buffers();
    assert_eq!(resources(&backend), before);
}

#[test]
fn dropping_a_channel_stops_waiting_producers() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(1024, 2).host_slots(2)).unwrap();
    let mut p = ch.host_producer(1);
    let handle = std::thread::spawn(move || loop {
        // Nobody reads: after 4 slots the producer waits, until the channel goes.
        if let Err(e) = p.produce(1, &[0; 100]) {
            return e;
        }
    });
    // Drop the channel only once the producer is waiting, so that the wake-up path runs.
    let deadline = std::time::Instant::now() + T;
    while ch.stats().producers_waiting == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the producer never waited"
        );
        std::thread::yield_now();
    }
    assert_eq!(ch.stats().producers_waiting, 1);
    drop(ch);
    assert!(matches!(handle.join().unwrap(), Error::Closed));
}
