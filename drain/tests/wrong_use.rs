//! Wrong use is a clear error, and allocates nothing: slot sizes that are zero or not a
//! multiple of 256, too few slots, records that cannot be framed, calls that do not fit the
//! channel.

mod common;

use common::*;
use drain::*;
use std::time::Duration;
use thunk::Preset;

fn config_error(r: Result<Channel>) -> String {
    match r {
        Err(Error::Config(m)) => m,
        Err(e) => panic!("expected a configuration error, got {e}"),
        Ok(_) => panic!("expected a configuration error, got a channel"),
    }
}

#[test]
fn bad_geometry_is_refused_before_anything_is_allocated() {
    let (backend, _kfd, gpu) = counted_gpu(Preset::Gfx900);
    let before = resources(&backend);
    let m = config_error(Channel::new(&gpu, ChannelConfig::new(1000, 4)));
    assert!(
        m.contains("slot size 1000 is not a multiple of 256 bytes (try 1024)"),
        "{m}"
    );
    let m = config_error(Channel::new(&gpu, ChannelConfig::new(0, 4)));
    assert!(m.contains("slot size 0"), "{m}");
    let m = config_error(Channel::new(&gpu, ChannelConfig::new(4096, 1)));
    assert!(m.contains("1 slot(s) are too few: at least 2"), "{m}");
    let m = config_error(Channel::new(&gpu, ChannelConfig::new(4096, 0)));
    assert!(m.contains("0 slot(s) are too few"), "{m}");
    let m = config_error(Channel::new(
        &gpu,
        ChannelConfig::new(4096, 4).host_slots(1),
    ));
    assert!(m.contains("1 host slot(s) are too few"), "{m}");
    let m = config_error(Channel::new(
        &gpu,
        ChannelConfig::new(4096, 4).host_slots(5000),
    ));
    assert!(m.contains("more than the 1024"), "{m}");
    let m = config_error(Channel::new(&gpu, ChannelConfig::new(2 << 30, 2)));
    assert!(m.contains("above the largest slot"), "{m}");
    assert_eq!(resources(&backend), before, "nothing was allocated");
    // The error reads well for a user.
    let e = Channel::new(&gpu, ChannelConfig::new(300, 2)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "drain: slot size 300 is not a multiple of 256 bytes (try 512)"
    );
    let io: std::io::Error = e.into();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn records_that_cannot_be_framed_are_refused() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(256, 2)).unwrap();
    let mut p = ch.host_producer(1);
    assert_eq!(p.max_payload(), 256 - 64 - 8);
    let e = p.produce(0, b"x").unwrap_err();
    assert!(e.to_string().contains("record kind 0 is reserved"), "{e}");
    let e = p.produce(1, &[0; 185]).unwrap_err();
    assert!(
        e.to_string()
            .contains("185-byte payload does not fit a slot: at most 184"),
        "{e}"
    );
    // The largest record fills a slot exactly and closes it.
    assert!(matches!(
        p.produce(1, &[7; 184]).unwrap(),
        Produced::Written {
            generation: 0,
            offset: 0
        }
    ));
    let chunk = ch
        .next_chunk(Some(T))
        .unwrap()
        .expect("a full slot drains by itself");
    assert_eq!(chunk.len(), 192);
    assert_eq!(chunk.closer(), 1);
    drop(chunk);
    // A fill closure that writes past its record is stopped; the record still commits.
    let e = p.produce_with(1, 8, |s| s.write(4, &[0; 8])).unwrap_err();
    assert!(
        e.to_string().contains("runs past the record's 8 bytes"),
        "{e}"
    );
    ch.flush().unwrap();
    assert_eq!(
        ch.next_chunk(Some(T))
            .unwrap()
            .expect("committed anyway")
            .len(),
        16
    );
    let mut pm4 = ch.pm4_producer(2).unwrap();
    let e = pm4.run(&[(0, b"x")], None, T).unwrap_err();
    assert!(
        e.to_string().contains("record 0: kind 0 is reserved"),
        "{e}"
    );
    let e = pm4.run(&[(1, &[0; 300])], None, T).unwrap_err();
    assert!(
        e.to_string().contains("300-byte payload does not fit"),
        "{e}"
    );
    let e = pm4
        .run(
            &[(1, b"x")],
            Some(Completion {
                address: 0x1002,
                value: 1,
            }),
            T,
        )
        .unwrap_err();
    assert!(e.to_string().contains("not 4-byte aligned"), "{e}");
}

#[test]
fn calls_that_do_not_fit_the_channel_are_refused() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(4096, 2)).unwrap();
    let e = ch
        .drain_at(SignalWait::new(0x1000, Condition::Equal, 0))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("needs a channel built with Trigger::KernelEnd (this one is OnFull)"),
        "{e}"
    );
    // A GPU has few SDMA queues (gfx900: 2 engines × 2): each channel gives its back on drop.
    drop(ch);
    let mut ch = Channel::new(
        &gpu,
        ChannelConfig::new(4096, 2).trigger(Trigger::KernelEnd),
    )
    .unwrap();
    let e = ch
        .drain_at(SignalWait::new(0x1002, Condition::Equal, 0))
        .unwrap_err();
    assert!(e.to_string().contains("not 4-byte aligned"), "{e}");
    drop(ch);
    // Waiting with nothing produced: a timeout that says what did not happen.
    let mut ch = Channel::new(
        &gpu,
        ChannelConfig::new(4096, 2).read_timeout(Duration::from_millis(50)),
    )
    .unwrap();
    let e = ch.read(&mut [0; 16]).unwrap_err();
    assert!(e.is_timeout());
    assert!(e.to_string().contains("no drained data within 50ms"), "{e}");
    assert!(ch.next_chunk(Some(Duration::ZERO)).unwrap().is_none());
    drop(ch);
    // A lossless producer with nobody reading gives up after its timeout, saying why.
    let ch = Channel::new(
        &gpu,
        ChannelConfig::new(256, 2)
            .host_slots(2)
            .producer_timeout(Duration::from_millis(100)),
    )
    .unwrap();
    let mut p = ch.host_producer(1);
    let e = loop {
        match p.produce(1, &[0; 184]) {
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    assert!(e.is_timeout(), "{e}");
    assert!(
        e.to_string().contains("is anyone reading the channel?"),
        "{e}"
    );
}

#[test]
fn synthetic_sizes_are_checked() {
    let e = drain::synth::SynthSource::new(20).unwrap_err();
    assert!(
        e.to_string()
            .contains("multiple of 8 bytes and at least 16, not 20"),
        "{e}"
    );
    let (_kfd, gpu) = model_gpu();
    let mut c = DrainConfig::new(ChannelConfig::new(4096, 2), 1 << 20);
    c.record_payload = 8192;
    let e = run(&gpu, &c, |_| {}).unwrap_err();
    assert!(
        e.to_string()
            .contains("8192-byte records do not fit 4096-byte slots (at most 4024)"),
        "{e}"
    );
}
