//! The remaining process- and GPU-wide calls: clock counters, apertures, available memory,
//! XNACK mode, trap handler, scratch backing, memory policy, and the raw ioctl escape hatch.
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use kfd_sys::*;
use thunk::{CachePolicy, Errno, MemoryKind};

#[test]
fn clock_counters_advance() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let a = gpu.clock_counters().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let b = gpu.clock_counters().unwrap();
    assert!(b.gpu > a.gpu, "{a:?} {b:?}");
    assert!(b.cpu > a.cpu && b.system > a.system);
    assert_eq!(a.system_frequency, 1_000_000_000, "ns clocks");
}

#[test]
fn apertures_of_every_gpu() {
    let kfd = kfd();
    let all = kfd.apertures().unwrap();
    assert_eq!(all.len(), kfd.gpus().len());
    for gpu in kfd.gpus() {
        let a = gpu.apertures().unwrap();
        assert_eq!(a.gpu_id, gpu.id());
        assert!(a.lds.0 < a.lds.1 && a.scratch.0 < a.scratch.1 && a.gpuvm.0 < a.gpuvm.1);
        // Every buffer the thunk hands out lies in the GPUVM aperture.
        let m = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
        assert!(a.gpuvm.0 <= m.gpu_va() && m.gpu_va() + m.size() - 1 <= a.gpuvm.1);
    }
}

#[test]
fn available_memory_is_at_most_the_vram() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let avail = gpu.available_memory().unwrap();
    assert!(avail <= gpu.node().vram_size(), "{avail}");
}

#[test]
fn xnack_mode_query_and_set() {
    let kfd = kfd();
    let on = kfd.xnack_mode().unwrap();
    // Setting the current mode is always allowed.
    kfd.set_xnack_mode(on).unwrap();
    let _q = kfd
        .gpu(0)
        .unwrap()
        .create_pm4_queue(&thunk::QueueOptions::new())
        .unwrap();
    // With a queue alive the mode cannot change, whether or not the part could switch it.
    let e = kfd.set_xnack_mode(!on).unwrap_err();
    assert_eq!(e.errno(), Errno::EBUSY, "{e}");
    assert_eq!(e.op(), "SET_XNACK_MODE");
    assert_eq!(
        kfd.xnack_mode().unwrap(),
        on,
        "the refused call changed nothing"
    );
}

#[test]
fn trap_handler_scratch_and_memory_policy() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let code = gpu
        .alloc_with(&thunk::AllocOptions::new(MemoryKind::Vram, 8192).executable())
        .unwrap();
    gpu.set_trap_handler(code.gpu_va(), code.gpu_addr(4096))
        .unwrap();
    gpu.set_scratch_backing(0x1_0000_0000).unwrap();
    gpu.set_memory_policy(CachePolicy::Coherent, CachePolicy::NonCoherent, None)
        .unwrap();
    // The driver recorded each value for this GPU (on a device nothing shows them).
    if let Some(m) = model_of(&kfd, "the recorded trap handler, scratch and policy") {
        let all = m.process_gpu_settings();
        let s = all.iter().find(|s| s.gpu_id == gpu.id()).expect("this GPU");
        assert_eq!(
            (s.tba_addr, s.tma_addr, s.scratch_va),
            (code.gpu_va(), code.gpu_va() + 4096, 0x1_0000_0000)
        );
        assert_eq!(
            (s.default_policy, s.alternate_policy),
            (
                KFD_IOC_CACHE_POLICY_COHERENT,
                KFD_IOC_CACHE_POLICY_NONCOHERENT
            )
        );
    }
}

#[test]
fn raw_ioctl_is_typed_by_its_request() {
    let kfd = kfd();
    let mut v = kfd_ioctl_get_version_args::default();
    kfd.ioctl::<GetVersion>(&mut v).unwrap();
    assert_eq!(v.major_version, 1);
    // A request and a struct of another size cannot meet any more: the request type names its
    // argument type (`kfd.ioctl::<CreateQueue>(&mut destroy_args)` does not compile: CREATE_QUEUE
    // is `SafeIoctl`, so the safe `ioctl` takes it, but only with its own
    // `kfd_ioctl_create_queue_args`).
    // The backend refuses short buffers outright.
    let mut three = [0u8; 3];
    assert_eq!(
        // SAFETY: GET_VERSION's argument carries no address.
        unsafe { kfd.backend().ioctl(AMDKFD_IOC_GET_VERSION, &mut three) },
        Err(Errno::EFAULT)
    );
    // A driver error carries the operation and the errno.
    let mut d = kfd_ioctl_destroy_queue_args {
        queue_id: 999,
        pad: 0,
    };
    assert_err(
        kfd.ioctl::<DestroyQueue>(&mut d),
        Errno::EINVAL,
        "AMDKFD_IOC_DESTROY_QUEUE",
    );
}
