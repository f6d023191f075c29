//! Properties: the record parser never panics and never reads outside its bytes, whatever
//! they are; records round-trip through the framing; and through a channel, any mix of
//! record sizes and flush points comes out in order, byte for byte.

mod common;

use drain::layout::{encode_record_header, record_size, RecordError, Records};
use drain::*;
use proptest::prelude::*;
use std::sync::OnceLock;
use std::time::Duration;

fn frame(records: &[(u16, u16, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (kind, producer, payload) in records {
        for w in encode_record_header(payload.len() as u32, *kind, *producer) {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(payload);
        out.resize(out.len().next_multiple_of(8), 0);
    }
    out
}

fn record() -> impl Strategy<Value = (u16, u16, Vec<u8>)> {
    (
        1..=u16::MAX,
        any::<u16>(),
        prop::collection::vec(any::<u8>(), 0..200),
    )
}

proptest! {
    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let mut it = Records::new(&bytes);
        let mut covered = 0usize;
        for r in it.by_ref() {
            match r {
                Ok(r) => {
                    covered += r.size() as usize;
                    prop_assert!(r.kind != 0);
                    prop_assert!(r.payload.len() <= bytes.len());
                }
                Err(RecordError::TruncatedHeader { offset, left }) => prop_assert_eq!(offset + left, bytes.len()),
                Err(RecordError::TruncatedPayload { offset, length, left }) => {
                    prop_assert!(length as usize > left);
                    prop_assert_eq!(offset + 8 + left, bytes.len());
                }
                Err(RecordError::InvalidKind { offset }) => prop_assert!(offset < bytes.len()),
            }
        }
        prop_assert!(it.offset() <= bytes.len());
        prop_assert!(covered <= bytes.len() + 7);
    }

    #[test]
    fn framing_round_trips(records in prop::collection::vec(record(), 0..20)) {
        let bytes = frame(&records);
        prop_assert_eq!(bytes.len() as u64, records.iter().map(|r| record_size(r.2.len() as u32)).sum::<u64>());
        let parsed: Vec<_> = Records::new(&bytes).map(|r| r.unwrap()).collect();
        prop_assert_eq!(parsed.len(), records.len());
        for (p, r) in parsed.iter().zip(&records) {
            prop_assert_eq!((p.kind, p.producer, p.payload), (r.0, r.1, r.2.as_slice()));
        }
    }
}

fn gpu() -> &'static thunk::Gpu {
    static GPU: OnceLock<(thunk::Kfd, thunk::Gpu)> = OnceLock::new();
    &GPU.get_or_init(common::model_gpu).1
}

/// What a producer does next.
#[derive(Clone, Debug)]
enum Step {
    Record(Vec<u8>),
    Flush,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        8 => prop::collection::vec(any::<u8>(), 0..=952).prop_map(Step::Record),
        1 => Just(Step::Flush),
    ];
    prop::collection::vec(step, 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_sizes_and_flushes_come_out_in_order(steps in steps(), engine_pm4 in any::<bool>()) {
        let engine = if engine_pm4 { DrainEngine::Pm4 } else { DrainEngine::Sdma };
        let config = ChannelConfig::new(1024, 3).host_slots(2).engine(engine).wait(WaitStrategy::Poll);
        let mut ch = Channel::new(gpu(), config).unwrap();
        let mut p = ch.host_producer(1);
        let sent: Vec<Vec<u8>> = steps.iter().filter_map(|s| match s {
            Step::Record(b) => Some(b.clone()),
            Step::Flush => None,
        }).collect();
        let mut got: Vec<Vec<u8>> = Vec::new();
        let read = |ch: &mut Channel, got: &mut Vec<Vec<u8>>, wait: Duration| {
            while let Some(c) = ch.next_chunk(Some(wait)).unwrap() {
                for r in c.records() {
                    got.push(r.unwrap().payload.to_vec());
                }
            }
        };
        for s in &steps {
            match s {
                Step::Record(b) => {
                    // Lossless with 3 slots: read now and then so the producer never waits long.
                    p.produce(1, b).unwrap();
                }
                Step::Flush => {
                    ch.flush().unwrap();
                }
            }
            read(&mut ch, &mut got, Duration::ZERO);
        }
        ch.flush().unwrap();
        while got.len() < sent.len() {
            let before = got.len();
            read(&mut ch, &mut got, Duration::from_millis(200));
            prop_assert!(got.len() > before, "stalled at {} of {}", got.len(), sent.len());
        }
        prop_assert_eq!(got, sent);
    }
}
