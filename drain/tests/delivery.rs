//! In-order, lossless delivery of 1 GiB in each trigger mode, with every record's sequence
//! number and payload (its checksum field included) checked; and what each trigger adds: a
//! partial slot drains by itself on the period, at a kernel end, or on an explicit flush —
//! and not otherwise.

mod common;

use common::*;
use drain::layout::{slot_flags, HOST_FLUSH_PRODUCER};
use drain::synth::{SynthCheck, SynthSource, SYNTH_KIND};
use drain::*;
use std::time::{Duration, Instant};
use thunk::MemoryKind;

const GIB: u64 = 1 << 30;

/// Runs a 1 GiB session and checks what every mode must give: every record, in order, with
/// its bytes intact, nothing dropped, the counters agreeing with each other.
fn one_gib(config: DrainConfig) -> DrainReport {
    let (_kfd, gpu) = model_gpu();
    let t = Instant::now();
    let r = run(&gpu, &config, |_| {}).expect("drain session");
    let record = drain::layout::record_size(config.record_payload);
    let expected_records = GIB.div_ceil(record);
    eprintln!(
        "{:?} / {:?} / {:?}: {} records, {:.2} GB/s, {} slots drained, {} flushes, {} kernel ends, latency {} (wall {:?})",
        config.channel.trigger,
        config.channel.engine,
        config.channel.wait,
        r.records,
        r.gb_per_s,
        r.stats.slots_drained,
        r.stats.flushes,
        r.stats.kernel_ends,
        r.stats.drain_latency,
        t.elapsed()
    );
    assert_eq!(r.records, expected_records, "every record arrived");
    assert_eq!(r.records_written, expected_records);
    assert_eq!(r.records_dropped, 0);
    assert_eq!(r.bytes, expected_records * record);
    assert!(r.bytes >= GIB);
    let s = r.stats;
    assert_eq!(s.records_produced, expected_records);
    assert_eq!(
        s.bytes_produced, r.bytes,
        "the buffer header counts what was committed"
    );
    assert_eq!(s.bytes_drained, r.bytes, "drained = produced");
    assert_eq!(s.bytes_consumed, r.bytes);
    assert_eq!((s.records_dropped, s.bytes_dropped), (0, 0));
    assert_eq!(s.slots_in_flight, 0);
    assert_eq!(s.host_slots_ready, 0);
    assert_eq!(
        s.drain_latency.count, s.slots_drained,
        "one latency sample per slot"
    );
    r
}

#[test]
fn one_gib_on_full_sdma_event() {
    // 600 KiB records in 4 MiB slots: six fit, the seventh closes the slot with a gap.
    let mut c = DrainConfig::new(ChannelConfig::new(4 << 20, 8), GIB);
    c.record_payload = 600 << 10;
    c.verify = Verify::Exact;
    let r = one_gib(c);
    // 1790 records at 6 per slot, the last slot closed by the final flush.
    assert_eq!(r.stats.slots_drained, r.records.div_ceil(6));
    assert_eq!(r.stats.flushes, 1);
}

#[test]
fn one_gib_periodic_pm4_engine_polling() {
    let channel = ChannelConfig::new(1 << 20, 8)
        .trigger(Trigger::Periodic(Duration::from_millis(1)))
        .engine(DrainEngine::Pm4)
        .wait(WaitStrategy::Poll);
    let mut c = DrainConfig::new(channel, GIB);
    c.record_payload = (192 << 10) - 8;
    c.verify = Verify::Exact;
    let r = one_gib(c);
    assert!(r.stats.slots_drained >= GIB / (1 << 20));
}

#[test]
fn one_gib_kernel_end_sdma_event() {
    // Three 256 KiB records per "kernel" and four per 1 MiB slot: most kernel ends find a
    // partly filled slot to drain.
    let channel = ChannelConfig::new(1 << 20, 8).trigger(Trigger::KernelEnd);
    let mut c = DrainConfig::new(channel, GIB);
    c.record_payload = (256 << 10) - 72;
    c.records_per_kernel = 3;
    c.verify = Verify::Exact;
    let r = one_gib(c);
    let kernels = r.records.div_ceil(3);
    assert_eq!(r.stats.kernel_ends, kernels, "every kernel end was seen");
    assert!(r.stats.flushes > 0);
}

#[test]
fn checksums_are_recomputed_over_received_bytes() {
    // The hashing check (slower unoptimised) over 32 MiB, so the checksum path runs too.
    let (_kfd, gpu) = model_gpu();
    let mut c = DrainConfig::new(ChannelConfig::new(1 << 20, 4), 32 << 20);
    c.record_payload = 4096 - 8;
    c.verify = Verify::Checksum;
    let r = run(&gpu, &c, |_| {}).unwrap();
    assert_eq!(r.records, (32u64 << 20) / 4096);
}

fn produce_some(channel: &Channel, n: u32) -> Vec<Vec<u8>> {
    let mut p = channel.host_producer(3);
    let mut src = SynthSource::new(40).unwrap();
    (0..n)
        .map(|_| {
            let mut b = Vec::new();
            src.next_payload(&mut b);
            assert!(matches!(
                p.produce(SYNTH_KIND, &b).unwrap(),
                Produced::Written { .. }
            ));
            b
        })
        .collect()
}

fn read_records(channel: &mut Channel, timeout: Duration) -> Option<(Vec<RecordBuf>, u32, u16)> {
    let chunk = channel.next_chunk(Some(timeout)).unwrap()?;
    let recs = chunk
        .records()
        .map(|r| r.unwrap().to_owned_record())
        .collect();
    Some((recs, chunk.flags(), chunk.closer()))
}

#[test]
fn on_full_keeps_a_partial_slot_until_it_fills_or_is_flushed() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(4096, 4)).unwrap();
    let sent = produce_some(&ch, 5);
    assert!(
        read_records(&mut ch, Duration::from_millis(200)).is_none(),
        "no trigger fired"
    );
    assert!(ch.flush().unwrap());
    assert!(!ch.flush().unwrap(), "nothing left to flush");
    let (recs, flags, closer) = read_records(&mut ch, T).expect("flushed slot");
    assert_eq!(
        recs.iter().map(|r| &r.payload).collect::<Vec<_>>(),
        sent.iter().collect::<Vec<_>>()
    );
    assert_eq!(flags, slot_flags::FULL | slot_flags::FLUSHED);
    assert_eq!(closer, HOST_FLUSH_PRODUCER);
    assert_eq!(ch.stats().flushes, 1);
}

#[test]
fn periodic_trigger_drains_a_partial_slot_by_itself() {
    let (_kfd, gpu) = model_gpu();
    let period = Duration::from_millis(5);
    let mut ch = Channel::new(
        &gpu,
        ChannelConfig::new(64 << 10, 4).trigger(Trigger::Periodic(period)),
    )
    .unwrap();
    for round in 0..3u32 {
        let sent = produce_some(&ch, 4 + round);
        let t = Instant::now();
        let (recs, flags, _) = read_records(&mut ch, T).expect("the period closed the slot");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(recs.len(), sent.len(), "round {round}");
        assert_ne!(flags & slot_flags::FLUSHED, 0);
        let mut check = SynthCheck::in_order();
        for r in &recs {
            check
                .check(&Record {
                    kind: r.kind,
                    producer: r.producer,
                    payload: &r.payload,
                })
                .unwrap();
        }
    }
    // Nothing produced: no empty slots are drained.
    assert!(read_records(&mut ch, period * 10).is_none());
    assert_eq!(ch.stats().flushes, 3);
}

#[test]
fn kernel_end_trigger_drains_when_the_signal_reaches_its_value() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(
        &gpu,
        ChannelConfig::new(64 << 10, 4).trigger(Trigger::KernelEnd),
    )
    .unwrap();
    let signal = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    // An HSA-style completion signal: value (i64 at byte 8) goes from 1 to 0.
    signal.store_u64(8, 1).unwrap();
    assert_eq!(
        ch.drain_at(SignalWait::hsa_completion(signal.gpu_va()))
            .unwrap(),
        0
    );
    let sent = produce_some(&ch, 6);
    assert!(
        read_records(&mut ch, Duration::from_millis(200)).is_none(),
        "the kernel has not ended"
    );
    signal.store_u64(8, 0).unwrap();
    let (recs, flags, closer) = read_records(&mut ch, T).expect("drained at kernel end");
    assert_eq!(recs.len(), sent.len());
    assert_eq!(recs[5].payload, sent[5]);
    assert_ne!(flags & slot_flags::FLUSHED, 0);
    assert_eq!(closer, HOST_FLUSH_PRODUCER);
    // A second kernel, waited on with a counter instead.
    signal.store_u32(0, 0).unwrap();
    assert_eq!(
        ch.drain_at(SignalWait::new(signal.gpu_va(), Condition::GreaterEqual, 2))
            .unwrap(),
        1
    );
    produce_some(&ch, 2);
    signal.store_u32(0, 1).unwrap();
    assert!(
        read_records(&mut ch, Duration::from_millis(200)).is_none(),
        "1 < 2"
    );
    signal.store_u32(0, 2).unwrap();
    assert_eq!(read_records(&mut ch, T).expect("second kernel").0.len(), 2);
    assert_eq!(ch.stats().kernel_ends, 2);
}

#[test]
fn read_gives_the_framed_record_bytes_in_order() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(1024, 2).host_slots(2)).unwrap();
    let mut p = ch.host_producer(9);
    // 5 slots' worth of 3-byte records: 16 bytes each, 60 per 960-byte record area.
    let n = 300u32;
    let reader = std::thread::scope(|s| {
        let h = s.spawn(move || {
            for i in 0..n {
                p.produce(2, &[i as u8, (i >> 8) as u8, 0xAB]).unwrap();
            }
        });
        let mut bytes = Vec::new();
        let mut buf = [0u8; 40]; // deliberately not a multiple of the record size
        while bytes.len() < (n as usize - 60) * 16 {
            let k = ch.read(&mut buf).unwrap();
            assert!(k > 0);
            bytes.extend_from_slice(&buf[..k]);
        }
        h.join().unwrap();
        ch.flush().unwrap();
        while bytes.len() < n as usize * 16 {
            let k = ch.read(&mut buf).unwrap();
            bytes.extend_from_slice(&buf[..k]);
        }
        bytes
    });
    assert_eq!(reader.len(), n as usize * 16);
    for (i, rec) in reader.chunks_exact(16).enumerate() {
        assert_eq!(&rec[..4], &3u32.to_le_bytes(), "length");
        assert_eq!(
            &rec[4..8],
            &(2u32 | 9 << 16).to_le_bytes(),
            "kind | producer << 16"
        );
        assert_eq!(&rec[8..11], &[i as u8, (i >> 8) as u8, 0xAB]);
    }
    assert_eq!(ch.try_read(&mut [0u8; 8]).unwrap(), 0);
    let e = ch.read(&mut [0u8; 8]);
    assert!(matches!(e, Err(ref e) if e.is_timeout()), "{e:?}");
}

#[test]
fn record_stream_yields_owned_records_and_ends_when_idle() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(4096, 4)).unwrap();
    let sent = produce_some(&ch, 300);
    ch.flush().unwrap();
    let got: Vec<RecordBuf> = ch
        .records(Duration::from_millis(300))
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got.len(), 300);
    assert!(got
        .iter()
        .zip(&sent)
        .all(|(g, s)| g.payload == *s && g.kind == SYNTH_KIND && g.producer == 3));
}

#[test]
fn the_last_progress_report_is_the_whole_session_even_when_it_is_short() {
    // 4 MiB with a report due only every hour: the one report is the final one.
    let (_kfd, gpu) = model_gpu();
    let mut c = DrainConfig::new(ChannelConfig::new(1 << 20, 4), 4 << 20);
    c.record_payload = 4096 - 8;
    c.progress_every = Duration::from_secs(3600);
    let mut reports = Vec::new();
    let r = run(&gpu, &c, |p| reports.push((p.bytes, p.records))).unwrap();
    assert_eq!(reports, vec![(r.bytes, r.records)]);
    assert_eq!(r.records, (4u64 << 20) / 4096);
}
