//! Events from the CPU side: the event page on both paths, set/reset/wait, auto-reset, any/all
//! with timeout, exception events (facts §7.5, §8.1, §8.3).
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use std::time::{Duration, Instant};
use thunk::{Errno, EventKind, WaitMode, WaitStatus};

const NOW: Option<Duration> = Some(Duration::ZERO);

#[test]
fn signal_event_set_wait_reset() {
    let kfd = kfd();
    let e = kfd.create_event(EventKind::Signal, false).unwrap();
    assert_eq!(e.kind(), EventKind::Signal);
    assert!(!e.auto_reset());
    let slot = e.slot().expect("signal events own a slot");
    assert!((1..4096).contains(&slot), "slot 0 is reserved");
    assert_eq!(e.trigger_value(), e.id());
    assert_eq!(e.slot_value(), Some(u64::MAX), "unsignalled slot");
    assert_eq!(e.wait(NOW).unwrap(), WaitStatus::TimedOut);
    e.set().unwrap();
    assert_eq!(
        e.wait(Some(Duration::from_secs(1))).unwrap(),
        WaitStatus::Signaled
    );
    // Manual reset: stays signalled until reset.
    assert_eq!(e.wait(NOW).unwrap(), WaitStatus::Signaled);
    e.reset().unwrap();
    assert_eq!(e.wait(NOW).unwrap(), WaitStatus::TimedOut);
}

#[test]
fn auto_reset_event_is_consumed_by_the_wait() {
    let kfd = kfd();
    let e = kfd.create_event(EventKind::Signal, true).unwrap();
    e.set().unwrap();
    assert_eq!(e.wait(NOW).unwrap(), WaitStatus::Signaled);
    assert_eq!(e.wait(NOW).unwrap(), WaitStatus::TimedOut);
}

#[test]
fn wait_any_and_all_with_timeout() {
    let kfd = kfd();
    let a = kfd.create_event(EventKind::Signal, false).unwrap();
    let b = kfd.create_event(EventKind::Signal, false).unwrap();
    assert_ne!(a.id(), b.id());
    let t = Instant::now();
    assert_eq!(
        kfd.wait_any(&[&a, &b], Some(Duration::from_millis(50)))
            .unwrap(),
        WaitStatus::TimedOut
    );
    let waited = t.elapsed();
    assert!(waited >= Duration::from_millis(45), "waited {waited:?}");
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    b.set().unwrap();
    assert_eq!(kfd.wait_any(&[&a, &b], NOW).unwrap(), WaitStatus::Signaled);
    assert_eq!(
        kfd.wait_all(&[&a, &b], Some(Duration::from_millis(20)))
            .unwrap(),
        WaitStatus::TimedOut
    );
    // A waiter in another thread is woken by the set.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            tx.send(thread_id()).unwrap();
            kfd.wait_all(&[&a, &b], Some(Duration::from_secs(5)))
        });
        until_blocked(&kfd, rx.recv().unwrap());
        a.set().unwrap();
        assert_eq!(h.join().unwrap().unwrap(), WaitStatus::Signaled);
    });
    let out = kfd.wait_events(&[&a, &b], WaitMode::All, NOW).unwrap();
    assert_eq!(out.status, WaitStatus::Signaled);
    assert_eq!(out.data.len(), 2);
    assert!(matches!(out.data[0], thunk::EventData::Signal { .. }));
    assert_err(
        kfd.wait_any(&[], NOW),
        Errno::EINVAL,
        "no events to wait for",
    );
}

#[test]
fn exception_events_have_no_slot_and_cannot_be_set() {
    let kfd = kfd();
    let m = kfd.create_event(EventKind::MemoryException, false).unwrap();
    let h = kfd.create_event(EventKind::HwException, false).unwrap();
    assert!(
        m.id() >= 0x4000_0000 && h.id() >= 0x4000_0000,
        "non-signal ids (facts §7.5)"
    );
    assert_eq!(m.slot(), None);
    assert_eq!(m.signal_target(), None);
    assert_err(m.set(), Errno::EINVAL, "SET_EVENT: event");
    assert_eq!(m.wait_data(NOW).unwrap(), None);
}

#[test]
fn signal_target_points_into_the_event_page() {
    let kfd = kfd();
    let e1 = kfd.create_event(EventKind::Signal, false).unwrap();
    let e2 = kfd.create_event(EventKind::Signal, false).unwrap();
    let t1 = e1.signal_target().unwrap();
    let t2 = e2.signal_target().unwrap();
    assert_eq!((t1.value, t1.int_ctxid), (e1.trigger_value(), e1.id()));
    // Slots are 8 bytes apart in one page: page + 8 * slot.
    let page = t1.slot_address - 8 * u64::from(e1.slot().unwrap());
    assert_eq!(t2.slot_address, page + 8 * u64::from(e2.slot().unwrap()));
    assert_eq!(page % 4096, 0);
}

#[test]
fn both_event_page_paths() {
    use thunk::{OpenOptions, PagePath};
    if device().is_some() {
        eprintln!("skipped on a device: forces each page path on the model");
        return;
    }
    for path in [PagePath::UserBuffers, PagePath::KernelPages] {
        let kfd =
            thunk::Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1).page_path(path)).unwrap();
        assert_eq!(kfd.uses_user_pages(), path == PagePath::UserBuffers);
        let e = kfd.create_event(EventKind::Signal, false).unwrap();
        assert_eq!(e.id(), 1, "{path:?}: the first signal event is id 1");
        assert_eq!(e.slot_value(), Some(u64::MAX), "{path:?}");
        e.set().unwrap();
        assert_eq!(
            e.wait(Some(Duration::from_secs(1))).unwrap(),
            WaitStatus::Signaled
        );
        // The whole 4096-slot page is usable on both paths (the kernel page is mapped at
        // 32 KiB, which lifts the 256-slot default).
        let many: Vec<_> = (0..300)
            .map(|_| kfd.create_event(EventKind::Signal, false).unwrap())
            .collect();
        assert!(many.iter().all(|e| e.slot_value() == Some(u64::MAX)));
        // Auto path decides dGPU for gfx900 (it has VRAM).
        let auto = thunk::Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1)).unwrap();
        assert!(auto.uses_user_pages());
    }
}

#[test]
fn destroyed_events_are_gone() {
    let kfd = kfd();
    let e = kfd.create_event(EventKind::Signal, false).unwrap();
    let id = e.id();
    drop(e);
    // The id is free again: the next signal event reuses the lowest free slot.
    let f = kfd.create_event(EventKind::Signal, false).unwrap();
    assert_eq!(f.id(), id);
}
