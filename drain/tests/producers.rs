//! The producers without shader execution: the PM4 producer (WRITE_DATA for small slots,
//! DMA_DATA for large ones, slots marked full by the program) on its own and next to host
//! producers, and its completion signal driving the kernel-end trigger; the byte layout a
//! device-side producer relies on, checked at its documented offsets.

mod common;

use common::*;
use drain::layout::{
    buffer_flags, header, slot, slot_flags, HEADER_PAGE_BYTES, LAYOUT_VERSION, SLOT_HEADER_BYTES,
};
use drain::synth::{SynthCheck, SynthSource, SYNTH_KIND};
use drain::*;
use std::time::Duration;
use thunk::MemoryKind;

fn payloads(n: u64, len: u32) -> Vec<Vec<u8>> {
    let mut src = SynthSource::new(len).unwrap();
    (0..n)
        .map(|_| {
            let mut b = Vec::new();
            src.next_payload(&mut b);
            b
        })
        .collect()
}

fn records(p: &[Vec<u8>]) -> Vec<(u16, &[u8])> {
    p.iter().map(|b| (SYNTH_KIND, b.as_slice())).collect()
}

#[test]
fn pm4_producer_writes_small_slots_inline_and_large_ones_by_dma() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(64 << 10, 4)).unwrap();
    let mut pm4 = ch.pm4_producer(4).unwrap();
    // Run 1: three 40-byte records (one 144-byte slot image, written inline).
    let small = payloads(3, 40);
    let run1 = pm4.run(&records(&small), None, T).unwrap();
    assert_eq!(
        (run1.first_generation, run1.slots, run1.records, run1.bytes),
        (0, 1, 3, 144)
    );
    // Run 2: 300 records of 1 KiB: 63 per 65472-byte record area, five slots by DMA_DATA.
    let big = payloads(300, 1016);
    let run2 = pm4.run(&records(&big), None, T).unwrap();
    assert_eq!((run2.first_generation, run2.slots), (1, 5));
    let mut got = Vec::new();
    while got.len() < 303 {
        let chunk = ch
            .next_chunk(Some(T))
            .unwrap()
            .expect("the program marks slots full");
        assert_eq!(chunk.closer(), 4);
        assert_eq!(
            chunk.flags(),
            slot_flags::FULL,
            "closed by its producer, not a flush"
        );
        for r in chunk.records() {
            let r = r.unwrap();
            assert_eq!(r.producer, 4);
            got.push(r.payload.to_vec());
        }
    }
    assert_eq!(&got[..3], &small[..]);
    assert_eq!(&got[3..], &big[..]);
    pm4.wait(T).unwrap();
    let s = ch.stats();
    assert_eq!(s.records_produced, 303);
    assert_eq!(s.slots_drained, 6);
    assert_eq!(s.flushes, 0);
}

#[test]
fn pm4_and_host_producers_share_a_channel() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(16 << 10, 4).host_slots(4)).unwrap();
    let mut pm4 = ch.pm4_producer(1).unwrap();
    let mut host = ch.host_producer(2);
    let pm4_payloads = payloads(400, 200);
    let n_host = 3000u64;
    std::thread::scope(|s| {
        s.spawn(move || {
            for part in pm4_payloads.chunks(50) {
                pm4.run(&records(part), None, T).unwrap();
            }
            pm4.wait(T).unwrap();
        });
        s.spawn(move || {
            let mut src = SynthSource::new(64).unwrap();
            for _ in 0..n_host {
                host.produce_with(SYNTH_KIND, 64, |s| src.write_next(s).map(drop))
                    .unwrap();
            }
        });
        // Per producer, records arrive in the order they were produced.
        let mut checks = [SynthCheck::in_order(), SynthCheck::in_order()];
        let mut idle = 0;
        while checks[0].records < 400 || checks[1].records < n_host {
            let chunk = ch.next_chunk(Some(Duration::from_millis(100))).unwrap();
            let Some(chunk) = chunk else {
                idle += 1;
                assert!(
                    idle < 200,
                    "stalled at {} / {}",
                    checks[0].records,
                    checks[1].records
                );
                drop(chunk);
                // The host producer's last slot stays partial until flushed.
                ch.flush().unwrap();
                continue;
            };
            for r in chunk.records() {
                let r = r.unwrap();
                checks[usize::from(r.producer - 1)].check(&r).unwrap();
            }
        }
    });
    assert_eq!(ch.stats().records_produced, 400 + n_host);
}

#[test]
fn a_pm4_program_completion_signal_drives_the_kernel_end_trigger() {
    let (_kfd, gpu) = model_gpu();
    let mut ch = Channel::new(
        &gpu,
        ChannelConfig::new(64 << 10, 4).trigger(Trigger::KernelEnd),
    )
    .unwrap();
    let done = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut pm4 = ch.pm4_producer(6).unwrap();
    let mut host = ch.host_producer(7);
    for kernel in 1..=3u32 {
        ch.drain_at(SignalWait::new(done.gpu_addr(0), Condition::Equal, kernel))
            .unwrap();
        // A host producer writes into the slot being filled; the PM4 "kernel" closes that
        // slot, fills its own and signals its end.
        host.produce(9, &kernel.to_le_bytes()).unwrap();
        let p = payloads(2, 24);
        let run = pm4
            .run(
                &records(&p),
                Some(Completion {
                    address: done.gpu_addr(0),
                    value: kernel,
                }),
                T,
            )
            .unwrap();
        assert_eq!(run.slots, 1);
        host.produce(9, &(kernel + 100).to_le_bytes()).unwrap();
        // Everything up to the kernel end arrives without a flush call: the host record
        // before it, the kernel's own slot, and the host record after it in the slot the
        // kernel-end flush closed (it came before the signal was seen, so it is in).
        let mut kinds = Vec::new();
        while kinds.len() < 4 {
            let chunk = ch
                .next_chunk(Some(T))
                .unwrap()
                .expect("drained at kernel end");
            kinds.extend(chunk.records().map(|r| {
                let r = r.unwrap();
                (r.producer, r.payload.len())
            }));
        }
        assert_eq!(
            kinds,
            vec![(7, 4), (6, 24), (6, 24), (7, 4)],
            "kernel {kernel}"
        );
        assert_eq!(done.load_u32(0).unwrap(), kernel);
    }
    assert_eq!(ch.stats().kernel_ends, 3);
}

#[test]
fn the_device_buffer_holds_the_documented_bytes() {
    let (_kfd, gpu) = model_gpu();
    let config = ChannelConfig::new(1024, 3).loss(LossPolicy::Drop);
    let mut ch = Channel::new(&gpu, config).unwrap();
    let b = ch.device_buffer();
    let l = *ch.layout();
    assert_eq!(b.read_vec(header::MAGIC, 8).unwrap(), b"KFDDRAIN");
    assert_eq!(b.load_u32(header::VERSION).unwrap(), LAYOUT_VERSION);
    assert_eq!(b.load_u32(header::HEADER_BYTES).unwrap(), 4096);
    assert_eq!(b.load_u32(header::SLOT_SIZE).unwrap(), 1024);
    assert_eq!(b.load_u32(header::SLOT_COUNT).unwrap(), 3);
    assert_eq!(b.load_u32(header::SLOT_HEADER_BYTES).unwrap(), 64);
    assert_eq!(b.load_u32(header::FLAGS).unwrap(), buffer_flags::DROP);
    assert_eq!(l.total_bytes(), 4096 + 3 * 1024);
    for i in 0..3 {
        assert_eq!(l.slot_offset(i), HEADER_PAGE_BYTES + u64::from(i) * 1024);
        assert_eq!(
            b.load_u32(l.slot_offset(i) + slot::SEQUENCE).unwrap(),
            i,
            "slot {i} starts at generation {i}"
        );
    }
    // One 5-byte record: 16 bytes at the start of slot 0's record area.
    let mut p = ch.host_producer(0x0102);
    assert_eq!(
        p.produce(0x0A0B, b"hello").unwrap(),
        Produced::Written {
            generation: 0,
            offset: 0
        }
    );
    let rec = l.slot_offset(0) + u64::from(SLOT_HEADER_BYTES);
    assert_eq!(b.read_dwords(rec, 2).unwrap(), vec![5, 0x0102_0A0B]);
    assert_eq!(b.read_vec(rec + 8, 5).unwrap(), b"hello");
    assert_eq!(b.load_u64(header::CURSOR).unwrap(), 16);
    assert_eq!(b.load_u32(l.slot_offset(0) + slot::COMMITTED).unwrap(), 16);
    assert_eq!(b.load_u64(header::RECORDS_PRODUCED).unwrap(), 1);
    assert_eq!(b.load_u64(header::BYTES_PRODUCED).unwrap(), 16);
    // A 950-byte record does not fit the 944 bytes left: it closes slot 0 at 16 (committing
    // the 944-byte gap) and goes to generation 1.
    assert_eq!(
        p.produce(1, &[0xEE; 950]).unwrap(),
        Produced::Written {
            generation: 1,
            offset: 0
        }
    );
    assert_eq!(b.load_u64(header::CURSOR).unwrap(), 960 + 960);
    // Slot 0 drained by itself (full): the engine reset it for generation 0 + 3.
    let chunk = ch.next_chunk(Some(T)).unwrap().expect("slot 0 is full");
    assert_eq!(
        (chunk.generation(), chunk.len(), chunk.closer()),
        (0, 16, 0x0102)
    );
    drop(chunk);
    let b = ch.device_buffer();
    let s0 = l.slot_offset(0);
    assert_eq!(b.load_u32(s0 + slot::SEQUENCE).unwrap(), 3);
    assert_eq!(
        b.read_dwords(s0 + slot::COMMITTED, 4).unwrap(),
        vec![0, 0, 0, 0],
        "committed, end, flags, closer"
    );
    // Slot 1 holds exactly the 950-byte record (960 bytes = P): it closed and filled its
    // slot, which drains by itself too.
    let s1 = l.slot_offset(1);
    drop(p);
    let chunk = ch.next_chunk(Some(T)).unwrap().expect("slot 1 is full");
    assert_eq!((chunk.generation(), chunk.len()), (1, 960));
    assert_eq!(chunk.flags(), slot_flags::FULL);
    drop(chunk);
    let b = ch.device_buffer();
    assert_eq!(b.load_u32(s1 + slot::SEQUENCE).unwrap(), 4);
}
