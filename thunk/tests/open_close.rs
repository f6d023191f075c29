//! Opening and closing: version, backend choice, twice in a row, two processes on one model,
//! and the device closing only when the last object is gone.
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use thunk::model_access::{KfdModelExt, OpenOptionsModelExt};
use thunk::{BackendKind, Kfd, OpenOptions};

#[test]
fn open_reports_interface_major_1_and_the_gpus() {
    let kfd = kfd();
    let v = kfd.version();
    assert_eq!(v.major, 1);
    assert!(v.minor >= 11, "interface {v}");
    assert_eq!(kfd.query_version().unwrap(), v);
    assert!(!kfd.gpus().is_empty());
    for (i, g) in kfd.gpus().iter().enumerate() {
        assert_eq!(g.index(), i);
        assert!(g.node().is_gpu());
        assert_eq!(kfd.gpu_by_id(g.id()).as_ref(), Some(g));
    }
    assert!(kfd.gpu(kfd.gpus().len()).is_none());
    assert!(kfd.gpu_by_id(0).is_none(), "gpu id 0 is the CPU");
}

#[test]
fn open_and_close_twice() {
    for round in 0..2 {
        let kfd = kfd();
        let gpu = kfd.gpu(0).expect("a GPU");
        let mem = gpu.alloc(thunk::MemoryKind::Gtt, 4096).unwrap();
        mem.store_u32(0, round).unwrap();
        assert_eq!(mem.load_u32(0).unwrap(), round);
        let e = kfd.create_event(thunk::EventKind::Signal, false).unwrap();
        e.set().unwrap();
        drop((mem, e, gpu));
        if let Some(m) = kfd.model() {
            assert_eq!(m.process_count(), 1);
            let model = m.clone();
            drop(kfd);
            assert_eq!(model.process_count(), 0, "round {round}: closed");
        }
    }
}

#[test]
fn open_without_dev_kfd_falls_back_to_the_model() {
    if std::path::Path::new(thunk::backend::KFD_DEVICE_PATH).exists() {
        eprintln!("skipped: this machine has a real /dev/kfd");
        return;
    }
    let kfd = Kfd::open().unwrap();
    assert_eq!(kfd.backend().kind(), BackendKind::Model);
    assert!(
        kfd.backend().describe().starts_with("model: 1 × gfx900"),
        "{}",
        kfd.backend().describe()
    );
    assert_eq!(kfd.gpus().len(), 1);
}

#[test]
fn a_missing_device_is_a_clear_error() {
    let e = Kfd::open_with(OpenOptions::device("/nonexistent/kfd")).unwrap_err();
    assert_eq!(e.errno(), thunk::Errno::ENOENT);
    assert_eq!(e.op(), "open");
    assert!(
        e.to_string()
            .contains("cannot open /nonexistent/kfd read-write"),
        "{e}"
    );
}

#[test]
fn a_missing_topology_is_a_clear_error() {
    if device().is_some() {
        eprintln!("skipped on a device: uses the model backend");
        return;
    }
    let e = Kfd::open_with(
        OpenOptions::model(Preset::Gfx900, 1).topology_root("/nonexistent/topology"),
    )
    .unwrap_err();
    assert_eq!(e.op(), "topology");
    assert!(
        e.to_string()
            .contains("/nonexistent/topology/generation_id"),
        "{e}"
    );
}

#[test]
fn two_processes_on_one_model_are_separate() {
    let Some(a) = model_kfd(Preset::Gfx900, 1, "two processes on one model") else {
        return;
    };
    let model = a.model().unwrap().clone();
    let b = Kfd::open_with(OpenOptions::model_instance(&model)).unwrap();
    assert_eq!(model.process_count(), 2);
    assert_eq!(a.gpu(0).unwrap().id(), b.gpu(0).unwrap().id());
    let ea = a.create_event(thunk::EventKind::Signal, false).unwrap();
    let eb = b.create_event(thunk::EventKind::Signal, false).unwrap();
    // Each process has its own event ids (the first signal event is id 1 in both).
    assert_eq!((ea.id(), eb.id()), (1, 1));
    // An event of one process cannot be waited on through the other.
    assert_err(
        b.wait_any(&[&ea], Some(std::time::Duration::ZERO)),
        thunk::Errno::EINVAL,
        "belongs to another process",
    );
    drop((ea, a));
    assert_eq!(model.process_count(), 1);
}

#[test]
fn options_from_the_environment() {
    // Only the pure parts: no variable set means auto, unless the test run sets KFD_DEVICE.
    if device().is_some()
        || std::env::var_os("KFD_MODEL_PRESET").is_some()
        || std::env::var_os("KFD_MODEL_GPUS").is_some()
    {
        eprintln!("skipped: the environment chooses the backend");
        return;
    }
    let opts = OpenOptions::from_env().unwrap();
    assert!(format!("{opts:?}").contains("Auto"), "{opts:?}");
}

#[test]
fn opening_twice_at_once_shares_the_process_on_a_device() {
    let a = kfd();
    let b = kfd();
    let ea = a.create_event(thunk::EventKind::Signal, false).unwrap();
    let eb = b.create_event(thunk::EventKind::Signal, false).unwrap();
    if device().is_some() {
        // One KFD process per address space, as the kernel has it: the ids are distinct and
        // each handle can wait on the other's events.
        assert_ne!(ea.id(), eb.id());
        eb.set().unwrap();
        assert_eq!(
            a.wait_any(&[&eb], Some(std::time::Duration::ZERO)).unwrap(),
            thunk::WaitStatus::Signaled
        );
    } else {
        // Two models: two separate processes.
        assert_eq!((ea.id(), eb.id()), (1, 1));
    }
}
