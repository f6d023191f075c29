//! # kfd-model — amdkfd and the GPU, in user space
//!
//! A model of the amdkfd kernel driver and of the hardware it drives, so that the whole stack
//! runs and is tested without an AMD GPU, and so that a learner can watch a request travel from
//! ioctl to runlist to hardware queue. Its modules carry the kernel's names.
//!
//! * The driver: [`instance`] (the [`Model`]), [`chardev`](crate::Process::ioctl) (the ioctl
//!   table), [`process`], [`render`], [`pqm`],
//!   [`dqm`] (cpsch), [`packet_manager`], [`kernel_queue`] (the HIQ), [`events`], [`memory`],
//!   [`topology`] (presets written as a sysfs tree), and the interrupt handler that turns IH
//!   entries into events.
//! * The hardware ([`hw`]): the scheduler firmware reading the HIQ and mapping queues into HQD
//!   slots, the CP running PM4 and AQL queues, the SDMA engines, the IH ring, per-process GPU
//!   VMs checked on every access, doorbells, GART and the GPU clock.
//! * Execution: a background thread notices doorbell writes (plain stores into the mapped
//!   doorbell page) and runs the mapped queues; [`ModelConfig::with_engine_thread`]`(false)`
//!   plus [`Model::run_until_idle`] make it deterministic.
//! * [`faults`]: make the GPU misbehave on purpose (hung scheduler, lost interrupts, VM
//!   faults…) to watch the driver's failure paths.
//! * [`debugfs`]: what amdkfd's debugfs shows (mapped HQDs, the driver's queues and MQDs,
//!   the HIQ), the read-only contract for tools that watch the driver work.
//!
//! ```
//! use kfd_model::{Model, ModelConfig, Preset};
//! let model = Model::new(ModelConfig::new(Preset::Gfx90a).with_engine_thread(false))?;
//! let process = model.open()?;
//! let mut version = kfd_sys::kfd_ioctl_get_version_args::default();
//! process.call::<kfd_sys::GetVersion>(&mut version)?;
//! assert_eq!(version.major_version, 1);
//! assert_eq!(model.run_until_idle().packets, 0);
//! # Ok::<(), kfd_model::Errno>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
// `unsafe` only in the modules that touch an ABI or a raw mapping; each says why.
#![deny(unsafe_code)]

mod chardev;
pub mod config;
pub mod cs;
pub mod ctx;
pub mod debugfs;
pub mod device;
pub mod dqm;
pub mod errno;
pub mod events;
pub mod eviction;
pub mod faults;
pub mod file;
pub mod gem;
pub mod hw;
pub mod instance;
mod interrupt;
pub mod kernel_queue;
pub mod layer;
pub mod memory;
pub mod packet_manager;
pub mod pqm;
pub mod process;
pub mod render;
pub mod smi;
pub mod svm;
pub mod tmpdirs;
pub mod topology;
pub mod user;

pub use config::{KernelVersion, ModelConfig, Preset, SchedPolicy, CU_THREADS_ENV};
pub use device::KfdNode;
pub use errno::{Errno, KResult};
pub use faults::Fault;
pub use hw::engine::{EngineActivity, QueueError};
pub use hw::hws::EngineQueueState;
pub use instance::Model;
pub use process::{MapSource, Process, ProcessGpuSettings};
pub use render::RenderNode;
