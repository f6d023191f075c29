//! A device that answers nonsense: the thunk over a backend that corrupts chosen ioctl answers
//! of the model. Every such answer becomes an error that says what was wrong — never a panic,
//! never a half-made object left behind (the `vfio-ioctls` way: swap the syscall layer).
#![cfg(feature = "model")]
#![allow(unsafe_code)]

use kfd_sys::*;
use std::path::Path;
use std::sync::Arc;
use thunk::model_access::{ModelBackend, ModelConfig};
use thunk::{
    Backend, BackendKind, Errno, EventKind, Kfd, MapTarget, MemoryKind, OpenOptions, Preset,
    QueueOptions, RenderNode,
};

type Fix = Box<dyn Fn(u32, &mut [u8]) + Send + Sync>;

/// The model, with `fix` applied to the answer of every successful ioctl.
struct Corrupt {
    inner: Arc<ModelBackend>,
    fix: Fix,
}

impl std::fmt::Debug for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Corrupt")
    }
}

impl Backend for Corrupt {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn describe(&self) -> String {
        format!("corrupted {}", self.inner.describe())
    }
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<i32, Errno> {
        // SAFETY: forwarded from our caller, who owns the addresses in `arg`.
        let r = unsafe { self.inner.ioctl(request, arg) }?;
        (self.fix)(request, arg);
        Ok(r)
    }
    unsafe fn mmap(&self, target: MapTarget, offset: u64) -> Result<(), Errno> {
        // SAFETY: forwarded from our caller, who owns `target`.
        unsafe { self.inner.mmap(target, offset) }
    }
    fn open_render_node(&self, minor: u32) -> Result<Box<dyn RenderNode>, Errno> {
        self.inner.open_render_node(minor)
    }
    fn topology_root(&self) -> &Path {
        self.inner.topology_root()
    }
    fn doorbell_rung(&self, gpu_id: u32) {
        self.inner.doorbell_rung(gpu_id)
    }
}

/// A model process whose answers to `request` are rewritten by `edit`.
fn corrupt<T: FromBytes + IntoBytes + Immutable>(
    request: u32,
    edit: impl Fn(&mut T) + Send + Sync + 'static,
) -> (Kfd, Arc<ModelBackend>) {
    let inner = Arc::new(ModelBackend::new(ModelConfig::new(Preset::Gfx900)).unwrap());
    let model = inner.clone();
    let fix: Fix = Box::new(move |req, arg| {
        if kfd_sys::ioctl::ioc_nr(req) == kfd_sys::ioctl::ioc_nr(request) {
            let n = core::mem::size_of::<T>();
            if let Ok((mut v, _)) = T::read_from_prefix(arg) {
                edit(&mut v);
                arg[..n].copy_from_slice(v.as_bytes());
            }
        }
    });
    let kfd = Kfd::open_with(OpenOptions::backend(Arc::new(Corrupt { inner, fix }))).unwrap();
    (kfd, model)
}

#[test]
fn a_wrong_interface_major_refuses_to_open() {
    let inner = Arc::new(ModelBackend::new(ModelConfig::new(Preset::Gfx900)).unwrap());
    let fix: Fix = Box::new(|req, arg| {
        if req == AMDKFD_IOC_GET_VERSION {
            arg[0] = 2;
        }
    });
    let e = Kfd::open_with(OpenOptions::backend(Arc::new(Corrupt { inner, fix }))).unwrap_err();
    assert_eq!(e.errno(), Errno::ENOTTY);
    assert!(e.to_string().contains("speaks KFD interface 2.17"), "{e}");
}

#[test]
fn a_doorbell_of_another_gpu_is_refused_and_the_queue_destroyed() {
    let (kfd, backend) = corrupt(
        AMDKFD_IOC_CREATE_QUEUE,
        |a: &mut kfd_ioctl_create_queue_args| {
            a.doorbell_offset = KfdMmapOffset::doorbell(0x1234, 8).encode();
        },
    );
    let gpu = kfd.gpu(0).unwrap();
    let buffers = backend.process().buffer_count();
    let e = gpu.create_pm4_queue(&QueueOptions::new()).unwrap_err();
    assert_eq!(e.errno(), Errno::EIO);
    assert!(
        e.to_string().contains("is not a doorbell of gpu 0x4f3a"),
        "{e}"
    );
    // The queue the driver made was destroyed and its buffers freed, but for the ring and
    // pointer page, which wait in the pool for the next queue until released.
    assert_eq!(backend.process().queue_count(), 0);
    assert_eq!(gpu.pooled_queue_buffers(), 2);
    assert_eq!(backend.process().buffer_count(), buffers + 2);
    gpu.release_pooled_queue_buffers();
    assert_eq!(gpu.pooled_queue_buffers(), 0);
    assert_eq!(backend.process().buffer_count(), buffers);
}

#[test]
fn a_misaligned_doorbell_is_refused() {
    let (kfd, _model) = corrupt(
        AMDKFD_IOC_CREATE_QUEUE,
        |a: &mut kfd_ioctl_create_queue_args| {
            a.doorbell_offset += 3;
        },
    );
    let e = kfd
        .gpu(0)
        .unwrap()
        .create_sdma_queue(&QueueOptions::new())
        .unwrap_err();
    assert_eq!(e.errno(), Errno::EIO, "{e}");
}

#[test]
fn a_buffer_handle_of_another_gpu_is_refused() {
    let (kfd, _model) = corrupt(
        AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
        |a: &mut kfd_ioctl_alloc_memory_of_gpu_args| a.handle ^= 0x7 << 32,
    );
    let e = kfd
        .gpu(0)
        .unwrap()
        .alloc(MemoryKind::Gtt, 4096)
        .unwrap_err();
    assert_eq!(e.errno(), Errno::EIO);
    assert!(e.to_string().contains("names gpu"), "{e}");
}

#[test]
fn an_event_slot_outside_the_page_is_refused() {
    let (kfd, backend) = corrupt(
        AMDKFD_IOC_CREATE_EVENT,
        |a: &mut kfd_ioctl_create_event_args| a.event_slot_index = 5000,
    );
    let e = kfd.create_event(EventKind::Signal, false).unwrap_err();
    assert_eq!(e.errno(), Errno::EIO);
    assert!(
        e.to_string()
            .contains("slot 5000 is outside the 4096-slot event page"),
        "{e}"
    );
    // The event the driver did make was destroyed again.
    assert!(backend.process().events().is_empty());
}

#[test]
fn an_unknown_wait_result_is_an_error() {
    let (kfd, _model) = corrupt(
        AMDKFD_IOC_WAIT_EVENTS,
        |a: &mut kfd_ioctl_wait_events_args| {
            a.wait_result = 7;
        },
    );
    let ev = kfd.create_event(EventKind::Signal, false).unwrap();
    ev.set().unwrap();
    let e = ev.wait(Some(std::time::Duration::ZERO)).unwrap_err();
    assert_eq!(e.errno(), Errno::EIO);
    assert!(e.to_string().contains("wait result 7"), "{e}");
}

#[test]
fn an_absurd_aperture_count_is_bounded() {
    let (kfd, _model) = corrupt(
        AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
        |a: &mut kfd_ioctl_get_process_apertures_new_args| a.num_of_nodes = u32::MAX,
    );
    let list = kfd.apertures().unwrap();
    assert!(list.len() <= 10, "{}", list.len());
}

#[test]
fn garbage_read_pointers_do_not_panic() {
    let kfd = Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1)).unwrap();
    let gpu = kfd.gpu(0).unwrap();
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(4096).percentage(0))
        .unwrap();
    for bad in [u32::MAX, 1024, 1023, 0x8000_0000] {
        q.pointers()
            .store_u32(thunk::READ_POINTER_OFFSET, bad)
            .unwrap();
        // Whatever the pointer says, pushing fills the ring and then reports it full.
        let mut n = 0;
        while q.push_nop(64).is_ok() {
            n += 1;
            assert!(n < 64, "the ring holds at most 1023 dwords");
        }
        q.rollback();
    }
    let mut s = gpu
        .create_sdma_queue(&QueueOptions::new().ring_size(4096).percentage(0))
        .unwrap();
    s.pointers()
        .store_u64(thunk::READ_POINTER_OFFSET, u64::MAX - 3)
        .unwrap();
    let _ = s.push_fence(0x1000, 1);
    let mut a = gpu
        .create_aql_queue(&QueueOptions::new().ring_size(4096).percentage(0))
        .unwrap();
    a.pointers()
        .store_u64(thunk::READ_POINTER_OFFSET, u64::MAX)
        .unwrap();
    let _ = a.push_packet(&thunk::packets::aql_barrier_and([0; 5], 0));
}
