//! Backpressure and loss: drop mode counts exactly what it drops (records and bytes, as the
//! producers saw them and as the reader misses them); a slow reader in lossless mode slows
//! the producers down but loses nothing.

mod common;

use common::*;
use drain::layout::{header, record_size};
use drain::synth::{SynthCheck, SynthSource, SYNTH_KIND};
use drain::*;
use std::collections::BTreeSet;
use std::time::Duration;

#[test]
fn drop_mode_counts_exactly_what_it_drops() {
    let (_kfd, gpu) = model_gpu();
    // 4 device slots of 4 KiB (63 records of 64 bytes each), 2 host slots, nobody reading
    // while the producers run: most records cannot be placed.
    let config = ChannelConfig::new(4096, 4)
        .host_slots(2)
        .loss(LossPolicy::Drop);
    let mut ch = Channel::new(&gpu, config).unwrap();
    let per_thread = 1500u64;
    let payload = 56u32;
    // Two producer threads, ids 1 and 2; each returns the sequence numbers it wrote.
    let outcomes: Vec<(u16, Vec<u64>, Vec<u64>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..=2u16)
            .map(|id| {
                let mut p = ch.host_producer(id);
                s.spawn(move || {
                    let mut src = SynthSource::new(payload).unwrap();
                    let (mut written, mut dropped) = (Vec::new(), Vec::new());
                    for _ in 0..per_thread {
                        let seq = src.next_sequence();
                        match p
                            .produce_with(SYNTH_KIND, payload, |s| src.write_next(s).map(drop))
                            .unwrap()
                        {
                            Produced::Written { .. } => written.push(seq),
                            Produced::Dropped => {
                                src.skip();
                                dropped.push(seq)
                            }
                        }
                    }
                    (id, written, dropped)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let written: u64 = outcomes.iter().map(|o| o.1.len() as u64).sum();
    let dropped: u64 = outcomes.iter().map(|o| o.2.len() as u64).sum();
    assert_eq!(written + dropped, 2 * per_thread);
    assert!(dropped > 0, "the buffer was too small to keep everything");
    assert!(
        written >= 4 * 63,
        "the device slots filled before anything dropped"
    );
    let size = record_size(payload);
    let s = ch.stats();
    assert_eq!(s.records_dropped, dropped, "the header counts every drop");
    assert_eq!(s.bytes_dropped, dropped * size);
    assert_eq!(s.records_produced, written);
    assert_eq!(s.bytes_produced, written * size);
    // The device header holds the same counts, at the documented offsets.
    let buf = ch.device_buffer();
    assert_eq!(buf.load_u64(header::RECORDS_DROPPED).unwrap(), dropped);
    assert_eq!(buf.load_u64(header::BYTES_DROPPED).unwrap(), dropped * size);
    // Read everything: exactly the written records arrive, per producer in order, and the
    // gaps in each producer's sequence are exactly its drops.
    ch.flush().unwrap();
    let mut got: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    let mut checks = [SynthCheck::with_gaps(), SynthCheck::with_gaps()];
    let mut received = 0;
    while received < written {
        let chunk = ch.next_chunk(Some(T)).unwrap().expect("drained");
        for r in chunk.records() {
            let r = r.unwrap();
            let i = usize::from(r.producer - 1);
            got[i].push(checks[i].check(&r).unwrap());
            received += 1;
        }
    }
    assert!(ch
        .next_chunk(Some(Duration::from_millis(100)))
        .unwrap()
        .is_none());
    for (id, w, d) in &outcomes {
        let i = usize::from(id - 1);
        assert_eq!(
            &got[i], w,
            "producer {id}: the reader got exactly what was written"
        );
        let missing: BTreeSet<u64> = (0..per_thread).filter(|q| !got[i].contains(q)).collect();
        assert_eq!(
            missing,
            d.iter().copied().collect(),
            "producer {id}: the gaps are the drops"
        );
        // The reader sees a gap for every drop before the producer's last written record (a
        // producer may also have had every record dropped, if the other one filled the slots).
        let last = w.last().copied();
        let gaps = d.iter().filter(|&&q| last.is_some_and(|l| q < l)).count() as u64;
        assert_eq!(checks[i].missing, gaps);
    }
    assert_eq!(ch.stats().bytes_drained, written * size);
}

#[test]
fn a_slow_consumer_loses_nothing_in_lossless_mode() {
    let (_kfd, gpu) = model_gpu();
    // A small buffer: 4 slots of 4 KiB, 2 host slots.
    let config = ChannelConfig::new(4096, 4).host_slots(2);
    let mut ch = Channel::new(&gpu, config).unwrap();
    let n = 2000u64;
    let mut p = ch.host_producer(5);
    let max_in_flight = std::thread::scope(|s| {
        let producer = s.spawn(move || {
            let mut src = SynthSource::new(64).unwrap();
            for _ in 0..n {
                let r = p
                    .produce_with(SYNTH_KIND, 64, |s| src.write_next(s).map(drop))
                    .unwrap();
                assert!(
                    matches!(r, Produced::Written { .. }),
                    "lossless never drops"
                );
            }
        });
        let mut check = SynthCheck::in_order();
        let mut max_in_flight = 0;
        let mut finished = false;
        while check.records < n {
            if check_one_chunk(&mut ch, &mut check) {
                max_in_flight = max_in_flight.max(ch.stats().slots_in_flight);
                // The slow part: the reader takes 3 ms per slot.
                std::thread::sleep(Duration::from_millis(3));
            } else if finished {
                ch.flush().unwrap();
            }
            if !finished && producer.is_finished() {
                finished = true;
            }
        }
        producer.join().unwrap();
        max_in_flight
    });
    let s = ch.stats();
    assert_eq!((s.records_dropped, s.bytes_dropped), (0, 0));
    assert_eq!(s.records_produced, n);
    assert_eq!(s.bytes_consumed, n * record_size(64));
    assert!(
        max_in_flight >= 4,
        "the producer was held back with every device slot in use (max {max_in_flight})"
    );
}

/// Checks the records of the next chunk, if one comes within 50 ms.
fn check_one_chunk(ch: &mut Channel, check: &mut SynthCheck) -> bool {
    match ch.next_chunk(Some(Duration::from_millis(50))).unwrap() {
        Some(chunk) => {
            for r in chunk.records() {
                check.check(&r.unwrap()).unwrap();
            }
            true
        }
        None => false,
    }
}
