//! # kfd-model — amdkfd and the GPU, in user space
//!
//! A model of the amdkfd kernel driver and of the hardware it drives, so that the whole stack
//! runs and is tested without an AMD GPU, and so that a learner can watch a request travel from
//! ioctl to runlist to hardware queue. Its modules carry the kernel's names.
#![deny(unsafe_op_in_unsafe_fn)]

mod chardev;
pub mod config;
pub mod device;
pub mod dqm;
pub mod errno;
pub mod events;
pub mod faults;
pub mod hw;
mod interrupt;
pub mod kernel_queue;
pub mod memory;
pub mod packet_manager;
pub mod pqm;
pub mod process;
pub mod topology;
pub mod user;

pub use config::{KernelVersion, ModelConfig, Preset, SchedPolicy};
pub use device::KfdNode;
pub use errno::{Errno, KResult};
pub use faults::Fault;
pub use hw::engine::{EngineActivity, QueueError};
pub use hw::hws::EngineQueueState;
pub use process::{MapSource, Model, Process, RenderNode};
