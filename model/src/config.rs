//! How a model instance is set up: which GPUs, which kernel behaviour, which scheduler policy.

use std::time::Duration;

/// A modelled GPU part: the shared table of `kfd_sys::gpu`, where each preset's facts
/// (topology numbers, versions, generation) are one row.
pub use kfd_sys::gpu::Preset;

/// Which kernel's behaviour the driver model follows where 6.1 and 6.12 differ (buffer
/// validation on CREATE_QUEUE, MQD details, interface version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KernelVersion {
    /// Linux 6.1 (Debian bookworm): interface 1.11, no user-buffer validation.
    Linux6_1,
    /// Linux 6.12: interface 1.17, user queue buffers validated against the GPU VM.
    #[default]
    Linux6_12,
}

impl KernelVersion {
    /// The interface minor version `GET_VERSION` reports.
    pub fn interface_minor(self) -> u32 {
        match self {
            KernelVersion::Linux6_1 => 11,
            KernelVersion::Linux6_12 => 17,
        }
    }
}

/// `amdkfd.sched_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SchedPolicy {
    /// 0: the hardware scheduler with oversubscription (runlist chaining).
    #[default]
    Hws,
    /// 1: the hardware scheduler without oversubscription: creating a compute queue beyond the
    /// VMIDs or HQDs fails with `EPERM`.
    HwsNoOversubscription,
}

/// Everything a model instance is built from.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// The GPU part.
    pub preset: Preset,
    /// How many GPUs of that part (each a topology node after the CPU node).
    pub gpus: u32,
    /// Kernel behaviour to follow.
    pub kernel: KernelVersion,
    /// Scheduler policy.
    pub sched_policy: SchedPolicy,
    /// `amdkfd.queue_preemption_timeout_ms`: how long the driver waits for the preemption
    /// fence before declaring the scheduler hung. The kernel default is 9 s; tests use less.
    pub preemption_timeout: Duration,
    /// `amdkfd.max_num_of_queues_per_device`.
    pub max_queues_per_device: u32,
    /// `amdkfd.hws_max_conc_proc` (`None`: as many as KFD has VMIDs).
    pub hws_max_conc_proc: Option<u32>,
    /// `amdgpu.cwsr_enable`.
    pub cwsr_enable: bool,
    /// Run the engines on a background thread that notices doorbell writes (default). Off,
    /// nothing executes until `Model::step` or `Model::run_until_idle` is called, which makes
    /// tests deterministic.
    pub engine_thread: bool,
    /// The engine thread's CPU-affinity policy (`hw::engine::affinity`): start away from the
    /// creator's core, sleep on the core of the last doorbell store. Default: on, unless
    /// `KFD_MODEL_ENGINE_AFFINITY=0`. Off, the host's scheduler alone places the thread.
    pub engine_affinity: bool,
    /// Faults injected into every GPU when the model starts (see [`crate::faults`]).
    pub faults: Vec<crate::Fault>,
    /// Host threads that run a dispatch's workgroups (the model's compute units). Default:
    /// `KFD_MODEL_CU_THREADS` when set, else the host's available cores.
    pub cu_threads: usize,
    /// What the compute units report instead of tolerating it as the hardware does. Default:
    /// `KFD_MODEL_STRICT` ([`Strict::from_env`]), read once here.
    pub strict: Strict,
    /// System memory the CPU node reports, in bytes (`None`: the host's RAM, at most
    /// [`crate::topology::MAX_SYSTEM_MEMORY`], so the topology never promises more than the host
    /// can back).
    pub system_memory: Option<u64>,
    /// `amdgpu.no_system_mem_limit`: KFD buffers are not held to the system-memory limit
    /// (the TTM limit still holds GTT), as for registering more user memory than the host has.
    pub no_system_mem_limit: bool,
    /// How long after TTM evicted a process's buffers its restore runs (amdkfd's
    /// `PROCESS_RESTORE_TIME_MS`, [`PROCESS_RESTORE_TIME`]); the time the restore backs off
    /// when the buffers do not fit yet is the same.
    pub process_restore_delay: Duration,
}

/// amdkfd's `PROCESS_RESTORE_TIME_MS`: 100 ms from an eviction to the restore worker (and
/// `PROCESS_BACK_OFF_TIME_MS`, also 100 ms, before a restore that found no room tries again).
pub const PROCESS_RESTORE_TIME: Duration = Duration::from_millis(100);

/// The environment variable that sets [`ModelConfig::cu_threads`].
pub const CU_THREADS_ENV: &str = "KFD_MODEL_CU_THREADS";

/// The default [`ModelConfig::cu_threads`]: `KFD_MODEL_CU_THREADS` when it holds a number
/// from 1 up, else the host's available cores (1 if unknown).
pub fn default_cu_threads() -> usize {
    std::env::var(CU_THREADS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The environment variable listing the deliberate deviations from the hardware the model
/// makes on request: `KFD_MODEL_STRICT=lds,vgprs` (comma-separated; `all` for every one).
pub const STRICT_ENV: &str = "KFD_MODEL_STRICT";

/// Where the model reports what the hardware silently tolerates, to find the kernel bug. By
/// default the model does what the hardware does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Strict {
    /// A DS (or FLAT shared-aperture) access outside the workgroup's LDS allocation stops the
    /// wave as a fault (the hardware drops the write and reads 0).
    pub lds: bool,
    /// An instruction that names a VGPR past the wave's allocation stops the wave as a fault
    /// (the hardware reads VGPR0 for such a source and ignores an instruction with such a
    /// destination).
    pub vgprs: bool,
}

impl Strict {
    /// Parses a `KFD_MODEL_STRICT` value: names separated by commas (`lds`, `vgprs`, `all`); an
    /// unknown name is an error that lists the known ones.
    pub fn parse(spec: &str) -> Result<Strict, String> {
        let mut s = Strict::default();
        for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "lds" => s.lds = true,
                "vgprs" => s.vgprs = true,
                "all" => {
                    s = Strict {
                        lds: true,
                        vgprs: true,
                    }
                }
                other => {
                    return Err(format!(
                        "{STRICT_ENV}: unknown entry {other:?} (known: lds, vgprs, all)"
                    ))
                }
            }
        }
        Ok(s)
    }

    /// [`Strict::parse`] of `KFD_MODEL_STRICT`; unset is the hardware's way, and a value that
    /// does not parse is the hardware's way too, with a warning naming the entry.
    pub fn from_env() -> Strict {
        match std::env::var(STRICT_ENV) {
            Ok(spec) => Strict::parse(&spec).unwrap_or_else(|e| {
                log::warn!(target: crate::layer::MODEL, "{e}; ignored");
                Strict::default()
            }),
            Err(_) => Strict::default(),
        }
    }
}

impl ModelConfig {
    /// One GPU of `preset` with the kernel's default module parameters, following Linux 6.12.
    pub fn new(preset: Preset) -> Self {
        ModelConfig {
            preset,
            gpus: 1,
            kernel: KernelVersion::default(),
            sched_policy: SchedPolicy::default(),
            preemption_timeout: Duration::from_millis(9000),
            max_queues_per_device: 4096,
            hws_max_conc_proc: None,
            cwsr_enable: true,
            engine_thread: true,
            engine_affinity: crate::hw::engine::affinity::default_engine_affinity(),
            faults: Vec::new(),
            cu_threads: default_cu_threads(),
            strict: Strict::from_env(),
            system_memory: None,
            no_system_mem_limit: false,
            process_restore_delay: PROCESS_RESTORE_TIME,
        }
    }

    /// The same with another delay from a TTM eviction to the restore (tests that look at the
    /// evicted state set it long, so that the restore cannot come first).
    pub fn with_process_restore_delay(mut self, delay: Duration) -> Self {
        self.process_restore_delay = delay;
        self
    }

    /// The same with `gpus` GPUs.
    pub fn with_gpus(mut self, gpus: u32) -> Self {
        self.gpus = gpus;
        self
    }

    /// The same following another kernel.
    pub fn with_kernel(mut self, kernel: KernelVersion) -> Self {
        self.kernel = kernel;
        self
    }

    /// The same with another scheduler policy.
    pub fn with_sched_policy(mut self, policy: SchedPolicy) -> Self {
        self.sched_policy = policy;
        self
    }

    /// The same with another preemption timeout.
    pub fn with_preemption_timeout(mut self, timeout: Duration) -> Self {
        self.preemption_timeout = timeout;
        self
    }

    /// Adds a fault to inject into every GPU.
    pub fn with_fault(mut self, fault: crate::Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// Adds the faults listed in `KFD_MODEL_FAULTS` (see [`crate::faults`]); an error names
    /// the entry it could not read.
    pub fn with_env_faults(mut self) -> Result<Self, String> {
        if let Ok(spec) = std::env::var(crate::faults::FAULTS_ENV) {
            let list = crate::Fault::parse_list(&spec)
                .map_err(|e| format!("{}: {e}", crate::faults::FAULTS_ENV))?;
            self.faults.extend(list);
        }
        Ok(self)
    }

    /// The same with `threads` host threads running workgroups (at least 1).
    pub fn with_cu_threads(mut self, threads: usize) -> Self {
        self.cu_threads = threads.max(1);
        self
    }

    /// The same with what the compute units report instead of tolerating it.
    pub fn with_strict(mut self, strict: Strict) -> Self {
        self.strict = strict;
        self
    }

    /// The same with a CPU node of `bytes` of system memory, whatever the host has (the
    /// driver's memory limits follow it; buffers are backed lazily).
    pub fn with_system_memory(mut self, bytes: u64) -> Self {
        self.system_memory = Some(bytes);
        self
    }

    /// The same with `amdgpu.no_system_mem_limit` set or cleared.
    pub fn with_no_system_mem_limit(mut self, on: bool) -> Self {
        self.no_system_mem_limit = on;
        self
    }

    /// Turns the engine thread's CPU-affinity policy on or off (see
    /// [`ModelConfig::engine_affinity`]).
    pub fn with_engine_affinity(mut self, on: bool) -> Self {
        self.engine_affinity = on;
        self
    }

    /// Turns the background engine thread on or off (see [`ModelConfig::engine_thread`]).
    pub fn with_engine_thread(mut self, on: bool) -> Self {
        self.engine_thread = on;
        self
    }
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig::new(Preset::Gfx900)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse_by_name() {
        for &p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>(), Ok(p));
        }
        assert_eq!("GFX90A".parse::<Preset>(), Ok(Preset::Gfx90a));
        let err = "gfx1100".parse::<Preset>().unwrap_err().to_string();
        assert!(err.contains("gfx900, gfx90a, gfx942, gfx1030"), "{err}");
    }

    #[test]
    fn strict_entries_parse() {
        assert_eq!(Strict::parse(""), Ok(Strict::default()));
        let lds = Strict {
            lds: true,
            vgprs: false,
        };
        let all = Strict {
            lds: true,
            vgprs: true,
        };
        assert_eq!(Strict::parse("lds"), Ok(lds));
        assert_eq!(
            Strict::parse("vgprs"),
            Ok(Strict {
                lds: false,
                vgprs: true
            })
        );
        assert_eq!(Strict::parse("lds, vgprs"), Ok(all));
        assert_eq!(Strict::parse(" all ,"), Ok(all));
        let err = Strict::parse("lds,regs").unwrap_err();
        assert!(
            err.contains("\"regs\"") && err.contains("known: lds"),
            "{err}"
        );
    }
}
