//! One GPU of the process: its topology node, the per-GPU ioctls, and the factory for its
//! memory and queues.

use crate::error::{Error, Result};
use crate::kfd::Session;
use crate::topology::{Node, QueueSizes};
use kfd_sys::*;
use std::sync::Arc;

/// A GPU of the process (a topology node whose address space the process acquired). Cheap to
/// clone; keeps the device open.
#[derive(Clone)]
pub struct Gpu {
    pub(crate) session: Arc<Session>,
    pub(crate) index: usize,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("gpu_id", &format_args!("{:#x}", self.id()))
            .field("name", &self.node().name)
            .finish()
    }
}

impl PartialEq for Gpu {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.session, &other.session) && self.index == other.index
    }
}

impl Eq for Gpu {}

/// The three clocks `GET_CLOCK_COUNTERS` samples together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockCounters {
    /// The GPU timestamp counter.
    pub gpu: u64,
    /// The CPU clock (`CLOCK_MONOTONIC_RAW`), ns.
    pub cpu: u64,
    /// The system clock (`CLOCK_BOOTTIME`), ns.
    pub system: u64,
    /// Frequency of the system clock, Hz.
    pub system_frequency: u64,
}

/// The apertures of one GPU in the process's address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Apertures {
    /// The GPU.
    pub gpu_id: u32,
    /// LDS aperture, first and last address.
    pub lds: (u64, u64),
    /// Scratch aperture, first and last address.
    pub scratch: (u64, u64),
    /// GPU virtual memory, first and last address.
    pub gpuvm: (u64, u64),
}

impl Apertures {
    pub(crate) fn from_raw(a: &kfd_process_device_apertures) -> Self {
        Apertures {
            gpu_id: a.gpu_id,
            lds: (a.lds_base, a.lds_limit),
            scratch: (a.scratch_base, a.scratch_limit),
            gpuvm: (a.gpuvm_base, a.gpuvm_limit),
        }
    }
}

/// Cache policy of an aperture (`SET_MEMORY_POLICY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachePolicy {
    /// Coherent with the CPU.
    Coherent,
    /// Not coherent.
    NonCoherent,
}

impl CachePolicy {
    fn raw(self) -> u32 {
        match self {
            CachePolicy::Coherent => KFD_IOC_CACHE_POLICY_COHERENT,
            CachePolicy::NonCoherent => KFD_IOC_CACHE_POLICY_NONCOHERENT,
        }
    }
}

impl Gpu {
    pub(crate) fn new(session: Arc<Session>, index: usize) -> Gpu {
        Gpu { session, index }
    }

    /// The topology `gpu_id`.
    pub fn id(&self) -> u32 {
        self.session.gpus[self.index].gpu_id
    }

    /// Position among the process's GPUs.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The topology node.
    pub fn node(&self) -> &Node {
        self.session.node(self.index)
    }

    /// The render minor the process acquired this GPU's address space through.
    pub fn render_minor(&self) -> u32 {
        self.session.gpus[self.index].render.minor()
    }

    /// The graphics generation (its MQD and PM4 packet layouts).
    pub fn generation(&self) -> Result<kfd_sys::gpu::Generation> {
        self.node().generation()
    }

    /// The SDMA packet generation.
    pub fn sdma_gen(&self) -> Result<pm4::SdmaGen> {
        self.node().sdma_gen()
    }

    /// The queue buffer sizes the driver validates.
    pub fn queue_sizes(&self) -> Result<QueueSizes> {
        self.node().queue_sizes()
    }

    /// The process as a [`crate::Kfd`] handle.
    pub fn kfd(&self) -> crate::Kfd {
        crate::Kfd {
            session: self.session.clone(),
        }
    }

    /// Samples the GPU, CPU and system clocks (`GET_CLOCK_COUNTERS`).
    pub fn clock_counters(&self) -> Result<ClockCounters> {
        let mut a = kfd_ioctl_get_clock_counters_args {
            gpu_id: self.id(),
            ..Default::default()
        };
        self.session
            .ioctl::<GetClockCounters>(&mut a)
            .map_err(|e| Error::ioctl("GET_CLOCK_COUNTERS", e, self.label()))?;
        Ok(ClockCounters {
            gpu: a.gpu_clock_counter,
            cpu: a.cpu_clock_counter,
            system: a.system_clock_counter,
            system_frequency: a.system_clock_freq,
        })
    }

    /// VRAM the process can still allocate on this GPU (`AVAILABLE_MEMORY`, interface 1.9+).
    pub fn available_memory(&self) -> Result<u64> {
        let mut a = kfd_ioctl_get_available_memory_args {
            gpu_id: self.id(),
            ..Default::default()
        };
        self.session
            .ioctl::<AvailableMemory>(&mut a)
            .map_err(|e| Error::ioctl("AVAILABLE_MEMORY", e, self.label()))?;
        Ok(a.available)
    }

    /// This GPU's apertures.
    pub fn apertures(&self) -> Result<Apertures> {
        let id = self.id();
        self.kfd()
            .apertures()?
            .into_iter()
            .find(|a| a.gpu_id == id)
            .ok_or_else(|| {
                Error::bad_answer(
                    "GET_PROCESS_APERTURES_NEW",
                    format!("the driver listed no apertures for gpu {id:#x}"),
                )
            })
    }

    /// Installs a trap handler: `tba` is the GPU address of its code, `tma` of its data
    /// (`SET_TRAP_HANDLER`).
    pub fn set_trap_handler(&self, tba: u64, tma: u64) -> Result<()> {
        let mut a = kfd_ioctl_set_trap_handler_args {
            tba_addr: tba,
            tma_addr: tma,
            gpu_id: self.id(),
            pad: 0,
        };
        self.session
            .ioctl::<SetTrapHandler>(&mut a)
            .map_err(|e| Error::ioctl("SET_TRAP_HANDLER", e, self.label()))?;
        Ok(())
    }

    /// Tells the driver where the process's scratch backing memory starts
    /// (`SET_SCRATCH_BACKING_VA`).
    pub fn set_scratch_backing(&self, va: u64) -> Result<()> {
        let mut a = kfd_ioctl_set_scratch_backing_va_args {
            va_addr: va,
            gpu_id: self.id(),
            pad: 0,
        };
        self.session
            .ioctl::<SetScratchBackingVa>(&mut a)
            .map_err(|e| Error::ioctl("SET_SCRATCH_BACKING_VA", e, self.label()))?;
        Ok(())
    }

    /// Sets the default cache policy and an alternate aperture with its own policy
    /// (`SET_MEMORY_POLICY`; libhsakmt sets coherent/coherent with no alternate aperture).
    pub fn set_memory_policy(
        &self,
        default: CachePolicy,
        alternate: CachePolicy,
        alternate_aperture: Option<(u64, u64)>,
    ) -> Result<()> {
        let (base, size) = alternate_aperture.unwrap_or((0, 0));
        let mut a = kfd_ioctl_set_memory_policy_args {
            alternate_aperture_base: base,
            alternate_aperture_size: size,
            gpu_id: self.id(),
            default_policy: default.raw(),
            alternate_policy: alternate.raw(),
            ..Default::default()
        };
        self.session
            .ioctl::<SetMemoryPolicy>(&mut a)
            .map_err(|e| Error::ioctl("SET_MEMORY_POLICY", e, self.label()))?;
        Ok(())
    }

    pub(crate) fn label(&self) -> String {
        format!("gpu {:#x}", self.id())
    }
}
