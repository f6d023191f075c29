//! # thunk — a safe Rust thunk over `/dev/kfd`
//!
//! What libhsakmt is to C, this crate is to Rust: it opens the amdkfd driver, reads the
//! topology, allocates and maps GPU memory, creates PM4, AQL and SDMA user-mode queues with
//! their doorbells, and creates and waits on events — with a type for every kernel object that
//! cleans up after itself, and errors that say what to change instead of a bare errno.
//!
//! The same code runs on two backends ([`Backend`]): [`DevKfd`], real system calls on
//! `/dev/kfd` and `/dev/dri/renderD*`, and `ModelBackend` (feature `model`, on by default),
//! the in-process model of the driver and GPU from `kfd-model`. No model type is needed to use
//! the thunk: [`OpenOptions::model`] takes the shared [`Preset`]; what looks inside the model
//! is the escape hatch `model_access` (feature `model`). [`Kfd::open`] takes the real
//! device when `/dev/kfd` exists and the model otherwise; [`Kfd::open_with`] chooses.
//!
//! ## Example: a WRITE_DATA and a fence on a raw PM4 queue
//!
//! ```no_run
//! use std::time::Duration;
//! use thunk::{Kfd, MemoryKind, QueueOptions};
//!
//! let kfd = Kfd::open()?;
//! let gpu = kfd.gpu(0).expect("a GPU");
//! let buf = gpu.alloc(MemoryKind::Gtt, 4096)?;
//! let mut queue = gpu.create_pm4_queue(&QueueOptions::new())?;
//! queue.push_write_data(buf.gpu_addr(0), &[0xC0FFEE])?;
//! queue.push_fence(buf.gpu_addr(8), 1)?;
//! queue.submit()?;
//! buf.wait_u64(8, 1, Duration::from_secs(1))?;
//! assert_eq!(buf.load_u32(0)?, 0xC0FFEE);
//! # Ok::<(), thunk::Error>(())
//! ```
//!
//! (`examples/raw_queue.rs` is the same with an event.) Objects on the model need no GPU:
//!
//! ```
//! # #[cfg(feature = "model")] {
//! use thunk::{EventKind, Kfd, OpenOptions, Preset, WaitStatus};
//! use std::time::Duration;
//!
//! let kfd = Kfd::open_with(OpenOptions::model(Preset::Gfx900, 1))?;
//! let node = kfd.gpu(0).unwrap().node().clone();
//! assert_eq!(node.gfx_target_name().as_deref(), Some("gfx900"));
//! let event = kfd.create_event(EventKind::Signal, false)?;
//! assert_eq!(event.wait(Some(Duration::ZERO))?, WaitStatus::TimedOut);
//! event.set()?;
//! assert_eq!(event.wait(Some(Duration::from_secs(1)))?, WaitStatus::Signaled);
//! # }
//! # Ok::<(), thunk::Error>(())
//! ```
//!
//! ## Opening
//!
//! [`OpenOptions`] chooses the backend: [`OpenOptions::device`] (a path, normally `/dev/kfd`),
//! [`OpenOptions::model`] (a preset and a number of GPUs), `model_access::OpenOptionsModelExt`
//! (a full model configuration, or another process on an existing model),
//! [`OpenOptions::backend`] (anything implementing
//! [`Backend`]), or [`OpenOptions::from_env`]: `KFD_DEVICE=<path>`, else
//! `KFD_MODEL_PRESET=<gfx900|gfx90a|gfx942|gfx1030>` and `KFD_MODEL_GPUS=<n>`, else automatic.
//! Opening reads the interface version (major 1 required), reads the topology, opens every
//! GPU's render node and acquires its address space (`ACQUIRE_VM`).
//!
//! A real kernel keeps one KFD process per address space, so on a device a second open while
//! the first is alive shares it, render nodes stay open for the life of the process, and the
//! event page is kept across close and re-open. Each model open is a separate process.
//!
//! ## How it is organised
//!
//! The types follow the kernel's object hierarchy, as `kvm-ioctls` does:
//!
//! | type | is | made by | on drop |
//! |---|---|---|---|
//! | [`Kfd`] | the process's open `/dev/kfd` | [`Kfd::open`], [`OpenOptions`] | closes when nothing uses it |
//! | [`Gpu`] | a GPU whose address space the process acquired | [`Kfd::gpus`] | — |
//! | [`Memory`] | a buffer (VRAM, GTT, USERPTR, doorbell, MMIO) | [`Gpu::alloc`] | GPU unmap, free, CPU unmap |
//! | [`Pm4Queue`], [`AqlQueue`], [`SdmaQueue`] | a user-mode queue | [`Gpu::create_pm4_queue`] … | destroy, then free its buffers (the ring and pointer page go to a small per-GPU pool the next queue reuses, zeroed: [`Gpu::pooled_queue_buffers`]) |
//! | [`Event`] | an event | [`Kfd::create_event`] | destroy |
//! | [`Executable`] | code objects loaded into GPU memory | [`Executable::load`] | frees the code |
//! | [`Completion`] | a kernel dispatch in flight | [`AqlQueue::dispatch`] | frees its signal and kernargs |
//!
//! Every object holds a reference to the process, so none can outlive what it needs: the
//! device stays open until the last of them is dropped, and a queue keeps its ring, pointers,
//! EOP and context-save buffers alive until it is destroyed. Modules:
//!
//! | module | holds |
//! |---|---|
//! | [`backend`] | the [`Backend`] trait and its two implementations |
//! | [`topology`] | the sysfs topology parsed into types, with the derived queue sizes |
//! | `kfd`, `gpu` | opening, process- and GPU-wide ioctls (clocks, apertures, XNACK, trap handler, scratch) |
//! | `memory` | [`Memory`] and [`AllocOptions`] |
//! | `queue` | the three queue kinds, [`QueueOptions`] |
//! | `event` | [`Event`], waits, [`SignalTarget`] |
//! | `svm` | [`SvmMemory`]: shared virtual memory ranges, their attributes, prefetch |
//! | [`packets`] | RELEASE_MEM per generation, AQL headers |
//! | `executable`, `dispatch` | [`Executable`], [`Kernel`], [`KernelArgs`], [`AqlQueue::dispatch`], [`Completion`] |
//!
//! ## Safety
//!
//! `unsafe` is confined to the system calls (`ioctl`, `mmap`) and to the one module that
//! touches mapped memory; each block says why it is sound. Memory the GPU writes is only ever
//! read through bounds-checked copies and atomics, never through a Rust slice. No input from
//! the device — an ioctl answer, a sysfs file, a read pointer — can make the thunk panic.
//!
//! Logging goes through `log` with the targets `thunk::open`, `thunk::memory`, `thunk::queue`
//! and `thunk::event`.
#![deny(unsafe_code)]

pub mod backend;
mod dispatch;
mod error;
mod event;
mod executable;
mod gpu;
mod kfd;
mod memory;
#[cfg(feature = "model")]
pub mod model_access;
pub mod packets;
mod poll;
mod pool;
mod queue;
mod svm;
pub mod topology;
mod va;

pub use backend::{Backend, BackendKind, DevKfd, MapTarget, RenderNode};
pub use dispatch::{
    Completion, KernelArgs, COMPLETION_POOL_SLOTS, MAX_GROUP_SEGMENT_SIZE, MAX_KERNARG_SIZE,
    MAX_WORKGROUP_SIZE,
};
pub use error::{Errno, Error, Result};
pub use event::{
    Event, EventData, EventKind, HwException, MemoryException, SignalTarget, WaitMode, WaitOutcome,
    WaitStatus,
};
pub use executable::{Executable, Kernel};
pub use gpu::{Apertures, CachePolicy, ClockCounters, Gpu};
pub use kfd::{InterfaceVersion, Kfd, OpenOptions, PagePath};
pub use memory::{AllocOptions, Memory, MemoryKind};
pub use queue::{
    Aql, AqlQueue, Pm4, Pm4Queue, Queue, QueueKind, QueueOptions, QueuePriority, Sdma, SdmaEngine,
    SdmaQueue, DEFAULT_RING_SIZE, ERROR_PAYLOAD_OFFSET, READ_POINTER_OFFSET, WRITE_POINTER_OFFSET,
};
pub use svm::{SmiEvents, SvmAccess, SvmAttribute, SvmAttributes, SvmLocation, SvmMemory};
pub use topology::{Node, QueueSizes, Topology};
pub use va::{Access, PAGE_SIZE};

pub use codeobj;
pub use pm4;

// Every handle can move to and be shared between threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Kfd>();
    send_sync::<Gpu>();
    send_sync::<Memory>();
    send_sync::<SvmMemory>();
    send_sync::<Event>();
    send_sync::<Pm4Queue>();
    send_sync::<SdmaQueue>();
    send_sync::<AqlQueue>();
};
pub use pm4::ring::{AqlSlotPtr, DwordPtr, SdmaBytePtr};

/// The parts the model knows and the graphics generations: the shared table of
/// `kfd_sys::gpu`, needed to name a model without depending on the model crate.
pub use kfd_sys::gpu::{Generation, GfxVersion, Preset};
