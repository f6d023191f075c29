//! Queues executing packets: PM4 NOP / WRITE_DATA / RELEASE_MEM, SDMA copy and fill with a
//! fence, events signalled from PM4 and SDMA queues, ring wraparound, AQL barriers (facts §4,
//! §5, §8.2, c-clients.md). VM faults are in `vm_fault.rs`: a fault evicts the whole process.
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use std::time::Duration;
use thunk::pm4::user::{ReleaseDataSel, ReleaseIntSel, ReleaseMemArgs};
use thunk::{DwordPtr, EventKind, MemoryKind, QueueOptions, SdmaBytePtr, WaitStatus};

#[test]
fn pm4_nop_write_data_and_release_mem() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    assert_eq!(q.push_nop(3).unwrap(), DwordPtr::new(3));
    // WRITE_DATA with two data dwords is 4 + 2 dwords.
    assert_eq!(
        q.push_write_data(buf.gpu_addr(16), &[0xDEAD_BEEF, 0x1234_5678])
            .unwrap(),
        DwordPtr::new(9)
    );
    q.push_release_mem(&ReleaseMemArgs::end_of_pipe(
        buf.gpu_addr(32),
        0x600D,
        ReleaseDataSel::Data32,
        ReleaseIntSel::None,
        0,
    ))
    .unwrap();
    let w = q.push_fence(buf.gpu_addr(64), 0x1_0000_0002).unwrap();
    assert_eq!(w, DwordPtr::new(9 + 8 + 8));
    // Nothing is visible before submit.
    assert_eq!(q.wptr(), DwordPtr::new(0));
    assert_eq!(q.submit().unwrap(), w);
    assert_eq!(
        q.pointers().load_u64(thunk::WRITE_POINTER_OFFSET).unwrap(),
        25
    );
    buf.wait_u64(64, 0x1_0000_0002, T).unwrap();
    assert_eq!(
        buf.read_dwords(16, 2).unwrap(),
        vec![0xDEAD_BEEF, 0x1234_5678]
    );
    assert_eq!(buf.load_u32(32).unwrap(), 0x600D);
    q.wait_idle(T).unwrap();
    assert_eq!(q.rptr(), DwordPtr::new(25), "the CP reports a dword offset");
}

#[test]
fn rollback_discards_unsubmitted_packets() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    q.push_write_data(buf.gpu_addr(0), &[1]).unwrap();
    q.rollback();
    q.push_fence(buf.gpu_addr(8), 7).unwrap();
    q.submit().unwrap();
    buf.wait_u64(8, 7, T).unwrap();
    assert_eq!(
        buf.load_u32(0).unwrap(),
        0,
        "the rolled-back write never ran"
    );
}

#[test]
fn sdma_copy_and_fill_with_fence() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    const N: u64 = 256 << 10;
    let src = gpu.alloc(MemoryKind::Gtt, N).unwrap();
    let dst = gpu.alloc(MemoryKind::Vram, N).unwrap();
    let fill = gpu.alloc(MemoryKind::UserPtr, 8192).unwrap();
    let fence = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let pattern: Vec<u8> = (0..N).map(|i| (i * 7 + 3) as u8).collect();
    src.write(0, &pattern).unwrap();
    let mut q = gpu.create_sdma_queue(&QueueOptions::new()).unwrap();
    q.push_copy(dst.gpu_va(), src.gpu_va(), N).unwrap();
    q.push_fill(fill.gpu_addr(4096), 0xA5A5_5A5A, 4096).unwrap();
    let w = q.push_fence(fence.gpu_va(), 1).unwrap();
    assert_eq!(w.get() % 4, 0, "SDMA write pointers count bytes");
    assert_eq!(q.submit().unwrap(), w);
    fence.wait_u32(0, 1, T).unwrap();
    assert_eq!(dst.read_vec(0, N as usize).unwrap(), pattern);
    assert!(fill
        .read_dwords(4096, 1024)
        .unwrap()
        .iter()
        .all(|&d| d == 0xA5A5_5A5A));
    assert!(
        fill.read_dwords(0, 1024).unwrap().iter().all(|&d| d == 0),
        "only the second page"
    );
    q.wait_idle(T).unwrap();
    assert_eq!(q.rptr(), w, "the engine reports monotonic bytes");
    assert_ne!(q.rptr(), SdmaBytePtr::new(0));
}

#[test]
fn event_signalled_from_a_pm4_queue() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let ev = kfd.create_event(EventKind::Signal, false).unwrap();
    let mut q = gpu.create_pm4_queue(&QueueOptions::new()).unwrap();
    assert_eq!(ev.wait(Some(Duration::ZERO)).unwrap(), WaitStatus::TimedOut);
    q.push_signal(&ev).unwrap();
    q.submit().unwrap();
    assert_eq!(ev.wait(Some(T)).unwrap(), WaitStatus::Signaled);
    // The driver acknowledged the slot (set it back to unsignalled) when it handled the
    // interrupt (facts §8.2).
    assert_eq!(ev.slot_value(), Some(u64::MAX));
}

#[test]
fn event_signalled_from_an_sdma_queue() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let ev = kfd.create_event(EventKind::Signal, true).unwrap();
    let mut q = gpu.create_sdma_queue(&QueueOptions::new()).unwrap();
    for round in 0..3 {
        q.push_signal(&ev).unwrap();
        q.submit().unwrap();
        assert_eq!(
            ev.wait(Some(T)).unwrap(),
            WaitStatus::Signaled,
            "round {round}"
        );
        // Auto-reset: consumed by the wait.
        assert_eq!(ev.wait(Some(Duration::ZERO)).unwrap(), WaitStatus::TimedOut);
    }
}

#[test]
fn wait_all_on_events_from_two_queues() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let a = kfd.create_event(EventKind::Signal, false).unwrap();
    let b = kfd.create_event(EventKind::Signal, false).unwrap();
    let mut pm4 = gpu.create_pm4_queue(&QueueOptions::new()).unwrap();
    let mut sdma = gpu.create_sdma_queue(&QueueOptions::new()).unwrap();
    pm4.push_signal(&a).unwrap();
    pm4.submit().unwrap();
    assert_eq!(
        kfd.wait_any(&[&a, &b], Some(T)).unwrap(),
        WaitStatus::Signaled
    );
    assert_eq!(
        kfd.wait_all(&[&a, &b], Some(Duration::from_millis(20)))
            .unwrap(),
        WaitStatus::TimedOut
    );
    sdma.push_signal(&b).unwrap();
    sdma.submit().unwrap();
    assert_eq!(
        kfd.wait_all(&[&a, &b], Some(T)).unwrap(),
        WaitStatus::Signaled
    );
}

#[test]
fn pm4_ring_wraps_around() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    // 1024 dwords; each round is WRITE_DATA (5) + fence (8) = 13 dwords, so 300 rounds go
    // round the ring almost four times, with NOP filler at every wrap.
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    let mut wraps = 0;
    let mut last_slot = 0;
    for i in 0..300u64 {
        q.push_write_data(buf.gpu_addr(1024), &[i as u32]).unwrap();
        let w = q.push_fence(buf.gpu_addr(0), i + 1).unwrap();
        q.submit().unwrap();
        buf.wait_u64(0, i + 1, T).unwrap();
        assert_eq!(buf.load_u32(1024).unwrap(), i as u32, "round {i}");
        if w.slot(1024) < last_slot {
            wraps += 1;
        }
        last_slot = w.slot(1024);
    }
    assert!(wraps >= 3, "{wraps} wraps");
    assert!(q.wptr().get() > 3 * 1024);
    q.wait_idle(T).unwrap();
    assert_eq!(q.rptr().slot(1024), q.wptr().slot(1024));
}

#[test]
fn sdma_ring_wraps_around() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let fence = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu
        .create_sdma_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    // A FENCE is 16 bytes: 1000 of them go round the 4 KiB ring almost four times.
    for i in 1..=1000u32 {
        q.push_fence(fence.gpu_va(), i).unwrap();
        q.submit().unwrap();
        fence.wait_u32(0, i, T).unwrap();
    }
    assert!(q.wptr().get() > 3 * 4096, "bytes: {}", q.wptr());
    q.wait_idle(T).unwrap();
}

#[test]
fn a_full_ring_says_so_and_recovers() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    // Without a submit the CP reads nothing: 1023 dwords fit, then the ring is full.
    let mut pushed = 0;
    let err = loop {
        match q.push_nop(16) {
            Ok(_) => pushed += 16,
            Err(e) => break e,
        }
    };
    assert_eq!(pushed, 1008);
    assert_eq!(err.errno(), thunk::Errno::ENOSPC);
    assert!(err.to_string().contains("ring full"), "{err}");
    q.submit().unwrap();
    q.wait_idle(T).unwrap();
    q.wait_for_space(512, T).unwrap();
    q.push_fence(buf.gpu_va(), 5).unwrap();
    q.submit().unwrap();
    buf.wait_u64(0, 5, T).unwrap();
}

#[test]
fn aql_barrier_packets_advance_the_read_index() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let mut q = gpu
        .create_aql_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    for i in 0..70u64 {
        let idx = q
            .push_packet(&thunk::packets::aql_barrier_and([0; 5], 0))
            .unwrap();
        assert_eq!(idx.get(), i);
        q.submit().unwrap();
        if i % 16 == 15 {
            q.wait_idle(T).unwrap();
        }
    }
    q.wait_idle(T).unwrap();
    assert_eq!(
        q.rptr().get(),
        70,
        "the read index counts packets (64 slots, wrapped once)"
    );
}

#[test]
fn pm4_ring_resized_while_in_use() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    let mut value = 0u64;
    let mut run = |q: &mut thunk::Pm4Queue, rounds: u64| {
        for _ in 0..rounds {
            value += 1;
            q.push_write_data(buf.gpu_addr(64), &[value as u32])
                .unwrap();
            q.push_fence(buf.gpu_addr(0), value).unwrap();
            q.submit().unwrap();
            buf.wait_u64(0, value, T).unwrap();
            assert_eq!(buf.load_u32(64).unwrap(), value as u32);
        }
    };
    run(&mut q, 7);
    let old_ring = q.ring().gpu_va();
    // Grow: the write pointer moves on to a multiple of the new size, the CP follows.
    q.resize_ring(64 << 10, T).unwrap();
    assert_eq!((q.ring_size(), q.ring().size()), (64 << 10, 64 << 10));
    assert_ne!(q.ring().gpu_va(), old_ring);
    assert_eq!(q.wptr().get() % (16 << 10), 0);
    // Seven rounds of WRITE_DATA (5 dwords) and a fence (8) are 91 dwords, padded to the
    // first multiple of the larger ring; the new ring counts from its start.
    assert_eq!(q.wptr(), DwordPtr::new(16 << 10));
    assert_eq!(q.pending_wptr(), q.wptr());
    assert_eq!(q.ring_state().wptr(), DwordPtr::new(0));
    run(&mut q, 1);
    assert_eq!(
        q.ring().load_u32(0).unwrap(),
        0xC003_3700,
        "the next WRITE_DATA's header is the new ring's first dword"
    );
    run(&mut q, 299);
    // Shrink again, then wrap the small ring a few times.
    q.resize_ring(4096, T).unwrap();
    assert_eq!(q.ring_size(), 4096);
    // 16384 + 300 × 13 dwords, padded to a multiple of the larger (the old) ring.
    assert_eq!(q.wptr(), DwordPtr::new(2 * (16 << 10)));
    assert_eq!(q.ring_state().wptr(), DwordPtr::new(0));
    run(&mut q, 200);
    // Nothing pushed may be pending, and the size must be valid.
    q.push_nop(2).unwrap();
    assert_err(
        q.resize_ring(8192, T),
        thunk::Errno::EINVAL,
        "submit or roll them back",
    );
    q.rollback();
    assert_err(
        q.resize_ring(3000, T),
        thunk::Errno::EINVAL,
        "not a power of two",
    );
}

#[test]
fn sdma_ring_resized_while_in_use() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let fence = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu
        .create_sdma_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    let run = |q: &mut thunk::SdmaQueue, from: u32, to: u32| {
        for i in from..to {
            q.push_fence(fence.gpu_va(), i).unwrap();
            q.submit().unwrap();
            fence.wait_u32(0, i, T).unwrap();
        }
    };
    run(&mut q, 1, 10);
    q.resize_ring(32 << 10, T).unwrap();
    assert_eq!(
        q.wptr().get() % (32 << 10),
        0,
        "bytes, a multiple of the new ring"
    );
    // Nine 16-byte FENCEs are 36 dwords, padded to the new ring's 8192 dwords.
    assert_eq!(q.wptr(), SdmaBytePtr::new(32 << 10));
    assert_eq!(q.ring_state().wptr(), SdmaBytePtr::new(0));
    run(&mut q, 10, 3000);
    q.resize_ring(4096, T).unwrap();
    // 8192 + 2990 × 4 dwords = 20152, padded to a multiple of the larger (the old) ring.
    assert_eq!(q.wptr(), SdmaBytePtr::new(3 * (32 << 10)));
    run(&mut q, 3000, 3400);
    q.wait_idle(T).unwrap();
    assert_eq!(q.rptr(), q.wptr());
}

/// A packet that fails to encode partway, after writing some of its dwords.
struct HalfEncoded;

/// A packet that claims to be longer than any ring.
struct Endless;

impl thunk::pm4::Encode for Endless {
    fn dwords(&self) -> usize {
        usize::MAX
    }

    fn encode_into(&self, out: &mut [u32]) -> Result<usize, thunk::pm4::WriteError> {
        out.fill(0xBAD0_BAD0);
        Ok(out.len())
    }
}

impl thunk::pm4::Encode for HalfEncoded {
    fn dwords(&self) -> usize {
        6
    }

    fn encode_into(&self, out: &mut [u32]) -> Result<usize, thunk::pm4::WriteError> {
        out[..3].fill(0xBAD0_BAD0);
        Err(thunk::pm4::WriteError::OutOfSpace {
            needed: 6,
            available: 3,
        })
    }
}

/// Packets go straight into the ring, so a packet that fails to encode, or does not fit,
/// must not reach it: the ring memory and the write pointers stay as they were, and the
/// queue goes on working.
#[test]
fn a_refused_packet_leaves_the_ring_and_the_write_pointer_untouched() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let buf = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    q.push_fence(buf.gpu_addr(0), 1).unwrap();
    q.submit().unwrap();
    buf.wait_u64(0, 1, T).unwrap();
    q.push_nop(4).unwrap(); // pushed, not submitted
    let ring = q.ring().read_dwords(0, 1024).unwrap();
    let (w, pending) = (q.wptr(), q.pending_wptr());
    assert_eq!(pending, DwordPtr::new(12));
    for refused in [
        q.push(&HalfEncoded).unwrap_err(),
        q.push(&Endless).unwrap_err(),
        q.push_nop(2000).unwrap_err(),       // longer than the ring
        q.push_raw(&[0; 1024]).unwrap_err(), // as long as the ring
        q.push_fence(buf.gpu_addr(4), 2).unwrap_err(), // misaligned
    ] {
        assert!(
            matches!(refused.errno(), thunk::Errno::EINVAL | thunk::Errno::ENOSPC),
            "{refused}"
        );
        assert_eq!(q.ring().read_dwords(0, 1024).unwrap(), ring, "{refused}");
        assert_eq!((q.wptr(), q.pending_wptr()), (w, pending), "{refused}");
    }
    // What was pushed before the refusals still runs, and what comes after.
    q.push_fence(buf.gpu_addr(8), 3).unwrap();
    q.submit().unwrap();
    buf.wait_u64(8, 3, T).unwrap();
    q.wait_idle(T).unwrap();
    assert_eq!(q.rptr(), DwordPtr::new(20));
}
