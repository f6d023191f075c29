//! The builders' inputs: what the queue is ([`QueueProperties`]), what the device and kernel
//! are ([`MqdConfig`]), and what an update carries besides ([`UpdateInfo`]).

use core::fmt;

use crate::cu_mask::{CuMask, ShaderLayout};
use crate::cwsr::TopologySizes;
use crate::error::{AddressKind, MqdError};

// The generation and version types are the shared ones of `kfd_sys::gpu`, so every layer
// means the same thing by "gfx10".
pub use kfd_sys::gpu::{Generation, GfxVersion};

/// The kernel whose `init_mqd`/`update_mqd` the builders reproduce.
///
/// | difference | 6.1 | 6.12 |
/// |---|---|---|
/// | `UNORD_DISPATCH` (pq_control bit 28) | not set | set at init |
/// | dw160 `1<<14` (debugger dispatch pointer), gfx11 `1<<29` (atomics) | not written | written |
/// | `update` of `cp_hqd_pq_control` | rewrites the register as `5<<8 \| size` (+ AQL bits) | replaces only `QUEUE_SIZE` |
/// | `cp_hqd_eop_control` for an EOP buffer under 8 bytes | the formula underflows to `0xFFFFFFFF` | 0 |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KernelVersion {
    /// Linux 6.1 (Debian bookworm).
    Linux6_1,
    /// Linux 6.12 (Debian trixie); the default.
    #[default]
    Linux6_12,
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KernelVersion::Linux6_1 => "Linux 6.1",
            KernelVersion::Linux6_12 => "Linux 6.12",
        })
    }
}

/// What runs on the queue, which decides the MQD kind and format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// A compute queue fed PM4 packets (`KFD_IOC_QUEUE_TYPE_COMPUTE`); the HIQ is one too.
    ComputePm4,
    /// A compute queue fed AQL packets (`KFD_IOC_QUEUE_TYPE_COMPUTE_AQL`).
    #[default]
    ComputeAql,
    /// An SDMA queue (`SDMA`, `SDMA_XGMI`, `SDMA_BY_ENG_ID`: same MQD).
    Sdma,
}

impl QueueKind {
    /// `true` for the two compute kinds.
    pub fn is_compute(self) -> bool {
        !matches!(self, QueueKind::Sdma)
    }
}

impl fmt::Display for QueueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueueKind::ComputePm4 => "PM4 compute",
            QueueKind::ComputeAql => "AQL compute",
            QueueKind::Sdma => "SDMA",
        })
    }
}

/// `cp_hqd_pipe_priority`: the pipe arbitration class of a compute queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PipePriority {
    /// 0: `CS_LOW` (queue priorities 0–6).
    Low,
    /// 1: `CS_MEDIUM` (queue priorities 7–10).
    Medium,
    /// 2: `CS_HIGH` (queue priorities 11–15).
    High,
    /// A value the driver never writes, kept as read from a dump.
    Other(u32),
}

impl PipePriority {
    /// The kernel's mapping of a 0–15 queue priority; `None` above 15.
    pub fn from_queue_priority(priority: u32) -> Option<Self> {
        match priority {
            0..=6 => Some(PipePriority::Low),
            7..=10 => Some(PipePriority::Medium),
            11..=15 => Some(PipePriority::High),
            _ => None,
        }
    }

    /// The register value.
    pub fn to_bits(self) -> u32 {
        match self {
            PipePriority::Low => 0,
            PipePriority::Medium => 1,
            PipePriority::High => 2,
            PipePriority::Other(v) => v,
        }
    }

    /// From the register value.
    pub fn from_bits(value: u32) -> Self {
        match value {
            0 => PipePriority::Low,
            1 => PipePriority::Medium,
            2 => PipePriority::High,
            v => PipePriority::Other(v),
        }
    }
}

impl fmt::Display for PipePriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipePriority::Low => f.write_str("CS_LOW"),
            PipePriority::Medium => f.write_str("CS_MEDIUM"),
            PipePriority::High => f.write_str("CS_HIGH"),
            PipePriority::Other(v) => write!(f, "{v} (unknown)"),
        }
    }
}

/// The kernel's minimum ring size in bytes (`KFD_MIN_QUEUE_RING_SIZE`).
pub const MIN_RING_SIZE: u32 = 1024;

/// What CREATE_QUEUE does to a small ring size: anything under 1024 bytes (0 included)
/// silently becomes 1024. The builders take the already-raised size and reject smaller ones.
pub fn raise_ring_size(ring_size: u32) -> u32 {
    ring_size.max(MIN_RING_SIZE)
}

/// The queue as the kernel's `struct queue_properties` describes it: everything a builder
/// needs to write an MQD.
///
/// Addresses are GPU virtual addresses. Sizes are in bytes. A zero ring size, zero ring
/// address or zero percentage is legal and makes the queue inactive (UPDATE_QUEUE uses it
/// to park a queue).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueProperties {
    /// Compute PM4, compute AQL or SDMA.
    pub kind: QueueKind,
    /// Ring base address; 256-byte aligned (the MQD stores it `>> 8`).
    pub ring_address: u64,
    /// Ring size in bytes: 0 (inactive) or a power of two ≥ 1024.
    pub ring_size: u32,
    /// Where the engine reports its read pointer; dword aligned.
    pub rptr_address: u64,
    /// Where the engine polls the write pointer; dword aligned.
    pub wptr_address: u64,
    /// Dword index of the queue's doorbell in the doorbell BAR (`doorbell_off`).
    pub doorbell_offset: u32,
    /// EOP buffer address (compute); 256-byte aligned.
    pub eop_address: u64,
    /// EOP buffer size in bytes (compute; 4096 in practice).
    pub eop_size: u32,
    /// CWSR (context save/restore) area address (compute).
    pub ctx_save_address: u64,
    /// CWSR area size in bytes (`ctx_save_restore_area_size`).
    pub ctx_save_size: u32,
    /// Control stack size in bytes, at the start of the CWSR area.
    pub ctl_stack_size: u32,
    /// Queue priority 0–15.
    pub priority: u32,
    /// Queue percentage 0–100 (the low byte of the ioctl's `queue_percentage`).
    pub percentage: u32,
    /// VMID; 0 under the hardware scheduler, which assigns VMIDs itself.
    pub vmid: u32,
    /// Trap handler base address (`tba_addr`); non-zero sets `TRAP_PRESENT` on gfx9.
    pub tba_address: u64,
    /// SDMA engine the queue runs on.
    pub sdma_engine_id: u32,
    /// Queue index within the SDMA engine.
    pub sdma_queue_id: u32,
    /// gfx11 debugger CWSR workaround (`is_dbg_wa`): static thread masks become `0x0000FFFF`.
    pub debugger_workaround: bool,
    /// The owning process is evicted.
    pub is_evicted: bool,
    /// The queue is suspended (debugger).
    pub is_suspended: bool,
}

impl QueueProperties {
    /// The AQL queue of the golden example in facts §6.4 (priority 7, a 256 KiB ring, 4 KiB
    /// EOP, a `0x2f6000`-byte CWSR area with a `0x5000`-byte control stack, doorbell dword
    /// `0x1006`): a complete, valid compute queue for examples, tests and benchmarks.
    pub fn golden_aql() -> Self {
        QueueProperties {
            kind: QueueKind::ComputeAql,
            ring_address: 0x7f12_3450_0000,
            ring_size: 256 * 1024,
            rptr_address: 0x7f12_3460_0080,
            wptr_address: 0x7f12_3460_0038,
            doorbell_offset: 0x1006,
            eop_address: 0x7f12_3470_0000,
            eop_size: 4096,
            ctx_save_address: 0x7f12_3480_0000,
            ctx_save_size: 0x2f_6000,
            ctl_stack_size: 0x5000,
            priority: 7,
            percentage: 100,
            ..QueueProperties::default()
        }
    }

    /// The kernel's `QUEUE_IS_ACTIVE`: ring size, ring address and percentage non-zero and
    /// the queue neither evicted nor suspended.
    pub fn is_active(&self) -> bool {
        self.ring_size > 0
            && self.ring_address != 0
            && self.percentage > 0
            && !self.is_evicted
            && !self.is_suspended
    }

    /// The properties the driver gives its HIQ: a PM4 compute queue with a 2048-byte ring
    /// and a 4096-byte EOP buffer, at 100 percent.
    pub fn hiq(
        ring_address: u64,
        rptr_address: u64,
        wptr_address: u64,
        eop_address: u64,
        doorbell_offset: u32,
    ) -> Self {
        QueueProperties {
            kind: QueueKind::ComputePm4,
            ring_address,
            ring_size: HIQ_RING_SIZE,
            rptr_address,
            wptr_address,
            doorbell_offset,
            eop_address,
            eop_size: HIQ_EOP_SIZE,
            percentage: 100,
            ..QueueProperties::default()
        }
    }

    /// Checks everything a builder relies on; `config` adds the topology checks when it
    /// carries [`TopologySizes`]. `user_queue` is false for the kernel's own HIQ, which does
    /// not go through the user-buffer validation.
    pub fn validate(&self, config: &MqdConfig, user_queue: bool) -> Result<(), MqdError> {
        if self.ring_size != 0 {
            if !self.ring_size.is_power_of_two() {
                return Err(MqdError::RingSizeNotPowerOfTwo(self.ring_size));
            }
            if self.ring_size < MIN_RING_SIZE {
                return Err(MqdError::RingSizeTooSmall(self.ring_size));
            }
        }
        check_aligned(AddressKind::Ring, self.ring_address, 256)?;
        check_aligned(AddressKind::ReadPointer, self.rptr_address, 4)?;
        check_aligned(AddressKind::WritePointer, self.wptr_address, 4)?;
        if self.priority > 15 {
            return Err(MqdError::PriorityTooHigh(self.priority));
        }
        if self.percentage > 100 {
            return Err(MqdError::PercentageTooHigh(self.percentage));
        }
        if self.vmid > 15 {
            return Err(MqdError::VmidTooHigh(self.vmid));
        }
        if self.doorbell_offset >= 1 << 26 {
            return Err(MqdError::DoorbellOffsetTooLarge(self.doorbell_offset));
        }
        if !self.kind.is_compute() {
            return Ok(());
        }
        check_aligned(AddressKind::Eop, self.eop_address, 256)?;
        let generation = config.generation()?;
        if !config.cwsr_applies(generation, self) {
            return self.check_eop(config, user_queue);
        }
        if self.ctl_stack_size > self.ctx_save_size {
            return Err(MqdError::ControlStackLargerThanArea {
                ctl_stack_size: self.ctl_stack_size,
                area_size: self.ctx_save_size,
            });
        }
        if let (Some(sizes), true) = (config.topology, user_queue) {
            if self.ctx_save_size < sizes.cwsr_size {
                return Err(MqdError::CwsrAreaTooSmall {
                    size: self.ctx_save_size,
                    required: sizes.cwsr_size,
                });
            }
            if self.ctl_stack_size != sizes.ctl_stack_size {
                return Err(MqdError::ControlStackSizeMismatch {
                    size: self.ctl_stack_size,
                    required: sizes.ctl_stack_size,
                });
            }
        }
        self.check_eop(config, user_queue)
    }

    fn check_eop(&self, config: &MqdConfig, user_queue: bool) -> Result<(), MqdError> {
        match config.topology {
            Some(sizes) if user_queue && self.eop_size < sizes.eop_buffer_size => {
                Err(MqdError::EopTooSmall {
                    size: self.eop_size,
                    required: sizes.eop_buffer_size,
                })
            }
            _ => Ok(()),
        }
    }
}

fn check_aligned(kind: AddressKind, address: u64, alignment: u64) -> Result<(), MqdError> {
    if address % alignment == 0 {
        Ok(())
    } else {
        Err(MqdError::MisalignedAddress {
            kind,
            address,
            alignment,
        })
    }
}

/// HIQ ring size in bytes (QUEUE_SIZE field 8).
pub const HIQ_RING_SIZE: u32 = 2048;
/// HIQ EOP buffer size in bytes.
pub const HIQ_EOP_SIZE: u32 = 4096;

/// The device and kernel an MQD is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MqdConfig {
    /// GC IP version (`KFD_GC_VERSION`): selects the generation; GC ≥ 9.4.2 also enables
    /// `FORCE_SIMD_DIST` for GWS queues.
    pub gc_version: GfxVersion,
    /// Whose `init_mqd`/`update_mqd` to reproduce.
    pub kernel: KernelVersion,
    /// Compute-wave save/restore on (amdgpu `cwsr_enable`, default on).
    pub cwsr_enabled: bool,
    /// gfx11: PCIe atomics supported (with RS64 firmware ≥ 509), sets dw160 bit 29 on 6.12.
    pub pcie_atomics: bool,
    /// SDMA 6 `CONTEXT_QUANTUM` (`amdgpu_sdma_phase_quantum`, default 32).
    pub sdma_phase_quantum: u8,
    /// Shader-engine layout, needed to apply a CU mask.
    pub shader_layout: Option<ShaderLayout>,
    /// Topology-derived sizes; when present, user compute queues are checked against them
    /// as Linux 6.12's CREATE_QUEUE does (CWSR area, control stack, EOP size).
    pub topology: Option<TopologySizes>,
}

impl MqdConfig {
    /// The defaults for a GC version: Linux 6.12, CWSR on, no PCIe atomics, SDMA quantum 32,
    /// no shader layout, no topology checks.
    pub const fn new(gc_version: GfxVersion) -> Self {
        MqdConfig {
            gc_version,
            kernel: KernelVersion::Linux6_12,
            cwsr_enabled: true,
            pcie_atomics: false,
            sdma_phase_quantum: 32,
            shader_layout: None,
            topology: None,
        }
    }

    /// The same configuration for another kernel version.
    pub const fn with_kernel(mut self, kernel: KernelVersion) -> Self {
        self.kernel = kernel;
        self
    }

    /// The same configuration with a shader-engine layout for CU masks.
    pub const fn with_shader_layout(mut self, layout: ShaderLayout) -> Self {
        self.shader_layout = Some(layout);
        self
    }

    /// The same configuration checking user queues against topology sizes.
    pub const fn with_topology(mut self, sizes: TopologySizes) -> Self {
        self.topology = Some(sizes);
        self
    }

    /// The MQD generation of [`Self::gc_version`].
    pub fn generation(&self) -> Result<Generation, MqdError> {
        self.gc_version
            .generation()
            .ok_or(MqdError::UnsupportedGfxVersion(self.gc_version))
    }

    /// Whether CWSR state goes into a compute MQD: gfx9 needs CWSR on *and* a context-save
    /// address; gfx10/gfx11 look only at the global switch.
    pub fn cwsr_applies(&self, generation: Generation, props: &QueueProperties) -> bool {
        match generation {
            Generation::Gfx9 => self.cwsr_enabled && props.ctx_save_address != 0,
            Generation::Gfx10 | Generation::Gfx11 => self.cwsr_enabled,
        }
    }
}

/// What the kernel passes to `update_mqd` beside the queue properties (`struct
/// mqd_update_info`). `None` in its place is the kernel's NULL: UPDATE_QUEUE, eviction and
/// restore leave the CU mask and `FORCE_SIMD_DIST` as they are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateInfo {
    /// SET_CU_MASK: the new mask, distributed over the shader engines.
    pub cu_mask: Option<CuMask>,
    /// The queue holds GWS (`UPDATE_FLAG_IS_GWS`): on gfx9 GC ≥ 9.4.2 sets
    /// `FORCE_SIMD_DIST`, and clears it when false.
    pub gws: bool,
}
