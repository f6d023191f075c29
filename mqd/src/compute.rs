//! Compute MQDs: the kernel's `init_mqd`, `init_mqd_hiq` and `update_mqd` for gfx9, gfx10 and
//! gfx11 (facts §6.4), read-back accessors for the command processor, and decoding.
//!
//! All three generations share one algorithm; what differs is kept in the private `Quirks` trait:
//! the preload size, the gfx9-only bits (`WPP_CLAMP_EN`, `IB_EXE_DISABLE`, `TRAP_PRESENT`,
//! `FORCE_SIMD_DIST`), which SE masks exist and where, and the name of dw160. Whether CWSR
//! needs a context-save address (gfx9) is [`MqdConfig::cwsr_applies`].

use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::cu_mask::MAX_SHADER_ENGINES;
use crate::error::MqdError;
use crate::layout::MqdLayout;
use crate::props::{
    Generation, GfxVersion, KernelVersion, MqdConfig, PipePriority, QueueKind, QueueProperties,
    UpdateInfo,
};
use crate::regs::{
    CpHqdAqlControl, CpHqdEopControl, CpHqdPersistentState, CpHqdPqDoorbellControl, CpHqdQuantum,
    CpMqdControl, COMPUTE_MQD_HEADER, HQ_STATUS0_DEBUG_DISPATCH_PTR, HQ_STATUS0_PCIE_ATOMICS,
};
use crate::v10::v10_compute_mqd;
use crate::v11::v11_compute_mqd;
use crate::v9::v9_mqd;

/// The CWSR (context save/restore) area a compute MQD points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CwsrArea {
    /// `cp_hqd_ctx_save_base_addr`.
    pub address: u64,
    /// `cp_hqd_ctx_save_size`.
    pub size: u32,
    /// `cp_hqd_cntl_stack_size` (also the control stack and work-group state offsets).
    pub ctl_stack_size: u32,
}

/// Generation-independent access to a compute MQD: what the scheduler and command-processor
/// models read back, and the few fields the firmware writes.
pub trait ComputeDescriptor {
    /// The MQD generation.
    fn generation(&self) -> Generation;
    /// The MQD bytes, as they sit in GART memory (the same as zerocopy's `as_bytes`, under
    /// a name that does not collide with it when both traits are in scope).
    fn bytes(&self) -> &[u8];
    /// `cp_mqd_base_addr`: the MQD's own GPU address.
    fn mqd_base_address(&self) -> u64;
    /// Ring base address (`cp_hqd_pq_base << 8`).
    fn ring_base_address(&self) -> u64;
    /// Ring size in bytes from `QUEUE_SIZE`: `4 × 2^(QUEUE_SIZE+1)` (saturating).
    fn ring_size_bytes(&self) -> u64;
    /// Where the CP reports the read pointer (`cp_hqd_pq_rptr_report_addr`).
    fn rptr_report_address(&self) -> u64;
    /// Where the CP polls the write pointer (`cp_hqd_pq_wptr_poll_addr`).
    fn wptr_poll_address(&self) -> u64;
    /// Doorbell dword index in the doorbell BAR (`DOORBELL_OFFSET`).
    fn doorbell_offset(&self) -> u32;
    /// `true` for an AQL queue (`cp_hqd_aql_control.CONTROL0`), `false` for PM4.
    fn is_aql(&self) -> bool;
    /// `true` for a kernel queue (HIQ): `KMD_QUEUE` in `cp_hqd_pq_control`.
    fn is_kernel_queue(&self) -> bool;
    /// `cp_hqd_active`: set by the firmware while the queue is mapped to an HQD.
    fn is_active(&self) -> bool;
    /// Sets or clears `cp_hqd_active` (the firmware's job when it maps or unmaps).
    fn set_active(&mut self, active: bool);
    /// `cp_hqd_pipe_priority`.
    fn pipe_priority(&self) -> PipePriority;
    /// `cp_hqd_queue_priority` (0–15).
    fn queue_priority(&self) -> u32;
    /// EOP buffer address (`cp_hqd_eop_base_addr << 8`).
    fn eop_base_address(&self) -> u64;
    /// EOP buffer size in bytes from `EOP_SIZE`: `4 × 2^(EOP_SIZE+1)` (saturating); 0 if no
    /// EOP address.
    fn eop_size_bytes(&self) -> u64;
    /// The CWSR area, when `QSWITCH_MODE` is set.
    fn cwsr_area(&self) -> Option<CwsrArea>;
    /// `cp_hqd_vmid`.
    fn vmid(&self) -> u32;
    /// Sets `cp_hqd_vmid` (the scheduler assigns VMIDs when it maps a process).
    fn set_vmid(&mut self, vmid: u32);
    /// `cp_hqd_pq_rptr`: the HQD's saved read pointer (dwords into the ring).
    fn hqd_rptr(&self) -> u32;
    /// Saves the HQD read pointer.
    fn set_hqd_rptr(&mut self, rptr: u32);
    /// `cp_hqd_pq_wptr_lo/hi`: the HQD's saved write pointer.
    fn hqd_wptr(&self) -> u64;
    /// Saves the HQD write pointer.
    fn set_hqd_wptr(&mut self, wptr: u64);
    /// `compute_static_thread_mgmt_se0..7` (zero for SEs the generation has no word for).
    fn static_thread_masks(&self) -> [u32; MAX_SHADER_ENGINES];
    /// `queue_doorbell_id0` (dw240): on the HIQ, the doorbell of a queue the firmware failed
    /// to preempt, 0 if none.
    fn queue_doorbell_id0(&self) -> u32;
    /// Writes `queue_doorbell_id0` (the firmware reports, 6.12 KFD clears after reading).
    fn set_queue_doorbell_id0(&mut self, value: u32);
}

/// What differs between the compute MQD generations.
pub(crate) trait Quirks: MqdLayout + Copy {
    const GENERATION: Generation;
    /// `PRELOAD_SIZE` of `cp_hqd_persistent_state`.
    const PRELOAD_SIZE: u16;
    fn set_static_thread_masks(&mut self, masks: [u32; MAX_SHADER_ENGINES]);
    fn static_thread_masks(&self) -> [u32; MAX_SHADER_ENGINES];
    /// dw160: `cp_hqd_hq_status0` (gfx9/gfx11) or `cp_hqd_hq_scheduler0` (gfx10).
    fn dw160_mut(&mut self) -> &mut u32;
    /// gfx11 only: dw160 bit 29 with PCIe atomics.
    fn atomics_bit(_config: &MqdConfig) -> u32 {
        0
    }
    /// gfx11 only: the debugger workaround narrows the SE masks.
    fn initial_se_mask(_props: &QueueProperties) -> u32 {
        u32::MAX
    }
    /// gfx9 only: `TRAP_PRESENT` when a trap handler is installed.
    fn set_trap_present(&mut self, _tba_address: u64) {}
    /// gfx9 GC ≥ 9.4.2 only: `FORCE_SIMD_DIST` follows the update's GWS flag.
    fn set_force_simd_dist(&mut self, _gc: GfxVersion, _gws: bool) {}
}

/// `order_base_2` of the kernel: the smallest `n` with `2^n ≥ value` (0 for 0 and 1).
fn order_base_2(value: u32) -> i32 {
    if value <= 1 {
        0
    } else {
        (32 - (value - 1).leading_zeros()) as i32
    }
}

/// `QUEUE_SIZE` for a ring of `ring_size` bytes: `log2(dwords) − 1`. A zero ring (an inactive
/// queue) gets 0; the kernel's formula underflows there, on a queue that is never mapped.
fn queue_size_field(ring_size: u32) -> u8 {
    (order_base_2(ring_size / 4) - 1).clamp(0, 63) as u8
}

/// `cp_hqd_eop_control` for an EOP buffer of `eop_size` bytes: `min(0xA, log2(dwords) − 1)`.
/// 6.12 writes 0 for a zero size; the expression itself (6.1 for every size, 6.12 for sizes
/// 1–7) goes to −1 below 8 bytes, which the register receives as `0xFFFFFFFF`.
fn eop_control_value(kernel: KernelVersion, eop_size: u32) -> u32 {
    if kernel == KernelVersion::Linux6_12 && eop_size == 0 {
        return 0;
    }
    (order_base_2(eop_size / 4) - 1).min(0xA) as u32
}

/// Bytes of a ring whose size field says `2^(field+1)` dwords; saturates for the top field
/// values a dump may hold.
fn field_size_bytes(field: u8) -> u64 {
    1u64.checked_shl(u32::from(field) + 3).unwrap_or(u64::MAX)
}

fn split(value: u64) -> (u32, u32) {
    (value as u32, (value >> 32) as u32)
}

fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | (u64::from(hi) << 32)
}

fn check_generation(config: &MqdConfig, mqd: Generation) -> Result<(), MqdError> {
    let config = config.generation()?;
    if config == mqd {
        Ok(())
    } else {
        Err(MqdError::GenerationMismatch { mqd, config })
    }
}

fn check_compute(props: &QueueProperties) -> Result<(), MqdError> {
    if props.kind.is_compute() {
        Ok(())
    } else {
        Err(MqdError::WrongQueueKind {
            expected: "compute",
            found: props.kind,
        })
    }
}

/// Everything a compute update needs that can fail, computed before the MQD is touched so a
/// rejected update leaves it unchanged.
fn prepare_update(
    config: &MqdConfig,
    props: &QueueProperties,
    info: Option<&UpdateInfo>,
    generation: Generation,
) -> Result<Option<[u32; MAX_SHADER_ENGINES]>, MqdError> {
    check_generation(config, generation)?;
    check_compute(props)?;
    props.validate(config, false)?;
    match info.and_then(|i| i.cu_mask) {
        None => Ok(None),
        Some(mask) => {
            let layout = config.shader_layout.ok_or(MqdError::NoShaderLayout)?;
            Ok(Some(
                layout.distribute(&mask, generation >= Generation::Gfx10),
            ))
        }
    }
}

macro_rules! impl_compute_mqd {
    ($ty:ident, $pq:ty, $ib:expr, $aql_pq:expr) => {
        impl $ty {
            /// The kernel's `init_mqd` (which ends with `update_mqd`): a fresh MQD for a user
            /// compute queue, stored at GPU address `mqd_address`. Validates `props`,
            /// including the topology checks when `config` carries sizes.
            pub fn init(
                config: &MqdConfig,
                props: &QueueProperties,
                mqd_address: u64,
            ) -> Result<Self, MqdError> {
                check_generation(config, <Self as Quirks>::GENERATION)?;
                check_compute(props)?;
                props.validate(config, true)?;
                let mut mqd = Self::new_zeroed();
                mqd.write_init(config, props, mqd_address);
                mqd.update(config, props, None)?;
                Ok(mqd)
            }

            /// The kernel's `init_mqd_hiq`: a PM4 compute MQD (see
            /// [`QueueProperties::hiq`]) with `PRIV_STATE` and `KMD_QUEUE` set in
            /// `cp_hqd_pq_control`. No user-buffer (topology) checks apply.
            pub fn init_hiq(
                config: &MqdConfig,
                props: &QueueProperties,
                mqd_address: u64,
            ) -> Result<Self, MqdError> {
                check_generation(config, <Self as Quirks>::GENERATION)?;
                check_compute(props)?;
                props.validate(config, false)?;
                let mut mqd = Self::new_zeroed();
                mqd.write_init(config, props, mqd_address);
                mqd.update(config, props, None)?;
                mqd.cp_hqd_pq_control.set_priv_state(true);
                mqd.cp_hqd_pq_control.set_kmd_queue(true);
                Ok(mqd)
            }

            /// The kernel's `update_mqd` on this MQD (UPDATE_QUEUE, SET_CU_MASK, GWS,
            /// eviction, restore): rewrites ring, pointers, doorbell, EOP, priority and,
            /// with `info`, the CU mask. Returns whether the queue is active
            /// ([`QueueProperties::is_active`]). On error the MQD is unchanged.
            pub fn update(
                &mut self,
                config: &MqdConfig,
                props: &QueueProperties,
                info: Option<&UpdateInfo>,
            ) -> Result<bool, MqdError> {
                let se_masks = prepare_update(config, props, info, <Self as Quirks>::GENERATION)?;
                let aql = props.kind == QueueKind::ComputeAql;
                let size = queue_size_field(props.ring_size);
                match config.kernel {
                    KernelVersion::Linux6_1 => {
                        self.cp_hqd_pq_control =
                            <$pq>::new().with_rptr_block_size(5).with_queue_size(size);
                    }
                    KernelVersion::Linux6_12 => self.cp_hqd_pq_control.set_queue_size(size),
                }
                let (lo, hi) = split(props.ring_address >> 8);
                self.cp_hqd_pq_base_lo = lo;
                self.cp_hqd_pq_base_hi = hi;
                let (lo, hi) = split(props.rptr_address);
                self.cp_hqd_pq_rptr_report_addr_lo = lo;
                self.cp_hqd_pq_rptr_report_addr_hi = hi;
                let (lo, hi) = split(props.wptr_address);
                self.cp_hqd_pq_wptr_poll_addr_lo = lo;
                self.cp_hqd_pq_wptr_poll_addr_hi = hi;
                self.cp_hqd_pq_doorbell_control =
                    CpHqdPqDoorbellControl::new().with_doorbell_offset(props.doorbell_offset);
                self.cp_hqd_ib_control = $ib;
                self.cp_hqd_eop_control =
                    CpHqdEopControl::from_bits(eop_control_value(config.kernel, props.eop_size));
                let (lo, hi) = split(props.eop_address >> 8);
                self.cp_hqd_eop_base_addr_lo = lo;
                self.cp_hqd_eop_base_addr_hi = hi;
                self.cp_hqd_iq_timer = 0;
                self.cp_hqd_vmid = props.vmid;
                if aql {
                    self.cp_hqd_pq_control = $aql_pq(
                        self.cp_hqd_pq_control
                            .with_no_update_rptr(true)
                            .with_slot_based_wptr(2)
                            .with_queue_full_en(true),
                    );
                    self.cp_hqd_pq_doorbell_control.set_doorbell_bif_drop(true);
                }
                if config.cwsr_applies(<Self as Quirks>::GENERATION, props) {
                    self.cp_hqd_ctx_save_control = 0;
                }
                if let Some(masks) = se_masks {
                    self.set_static_thread_masks(masks);
                }
                // Validation bounded the priority to 0..=15, so the mapping exists.
                let pipe =
                    PipePriority::from_queue_priority(props.priority).unwrap_or(PipePriority::Low);
                self.cp_hqd_pipe_priority = pipe.to_bits();
                self.cp_hqd_queue_priority = props.priority;
                if let Some(info) = info {
                    self.set_force_simd_dist(config.gc_version, info.gws);
                }
                Ok(props.is_active())
            }

            fn write_init(
                &mut self,
                config: &MqdConfig,
                props: &QueueProperties,
                mqd_address: u64,
            ) {
                self.header = COMPUTE_MQD_HEADER;
                self.compute_pipelinestat_enable = 1;
                self.set_static_thread_masks(
                    [<Self as Quirks>::initial_se_mask(props); MAX_SHADER_ENGINES],
                );
                self.cp_hqd_persistent_state = CpHqdPersistentState::new()
                    .with_preload_req(true)
                    .with_preload_size(<Self as Quirks>::PRELOAD_SIZE);
                if config.kernel == KernelVersion::Linux6_12 {
                    self.cp_hqd_pq_control = <$pq>::new()
                        .with_rptr_block_size(5)
                        .with_unord_dispatch(true);
                }
                self.cp_mqd_control = CpMqdControl::new().with_priv_state(true);
                let (lo, hi) = split(mqd_address);
                self.cp_mqd_base_addr_lo = lo;
                self.cp_mqd_base_addr_hi = hi;
                self.cp_hqd_quantum = CpHqdQuantum::new()
                    .with_quantum_en(true)
                    .with_quantum_scale(true)
                    .with_quantum_duration(1);
                if config.kernel == KernelVersion::Linux6_12 {
                    *self.dw160_mut() =
                        HQ_STATUS0_DEBUG_DISPATCH_PTR | <Self as Quirks>::atomics_bit(config);
                }
                if props.kind == QueueKind::ComputeAql {
                    self.cp_hqd_aql_control = CpHqdAqlControl::new().with_control0(1);
                }
                self.set_trap_present(props.tba_address);
                if config.cwsr_applies(<Self as Quirks>::GENERATION, props) {
                    self.cp_hqd_persistent_state.set_qswitch_mode(true);
                    let (lo, hi) = split(props.ctx_save_address);
                    self.cp_hqd_ctx_save_base_addr_lo = lo;
                    self.cp_hqd_ctx_save_base_addr_hi = hi;
                    self.cp_hqd_ctx_save_size = props.ctx_save_size;
                    self.cp_hqd_cntl_stack_size = props.ctl_stack_size;
                    self.cp_hqd_cntl_stack_offset = props.ctl_stack_size;
                    self.cp_hqd_wg_state_offset = props.ctl_stack_size;
                }
            }

            /// Reads an MQD from a byte dump (at least the struct's size; a longer dump,
            /// such as a whole page, is read from its start). Rejects dumps too short or
            /// whose dw0 is not the compute MQD header.
            pub fn decode(bytes: &[u8]) -> Result<Self, MqdError> {
                let (mqd, _) =
                    Self::read_from_prefix(bytes).map_err(|_| MqdError::DumpTooShort {
                        mqd: <Self as MqdLayout>::NAME,
                        len: bytes.len(),
                        need: <Self as MqdLayout>::SIZE,
                    })?;
                if mqd.header != COMPUTE_MQD_HEADER {
                    return Err(MqdError::BadHeader(mqd.header));
                }
                Ok(mqd)
            }

            /// The key fields with names and values (the same as `Display`).
            pub fn summary(&self) -> crate::print::ComputeSummary<'_> {
                crate::print::ComputeSummary::new(self)
            }
        }

        impl ComputeDescriptor for $ty {
            fn generation(&self) -> Generation {
                <Self as Quirks>::GENERATION
            }
            fn bytes(&self) -> &[u8] {
                IntoBytes::as_bytes(self)
            }
            fn mqd_base_address(&self) -> u64 {
                join(self.cp_mqd_base_addr_lo, self.cp_mqd_base_addr_hi)
            }
            fn ring_base_address(&self) -> u64 {
                join(self.cp_hqd_pq_base_lo, self.cp_hqd_pq_base_hi) << 8
            }
            fn ring_size_bytes(&self) -> u64 {
                field_size_bytes(self.cp_hqd_pq_control.queue_size())
            }
            fn rptr_report_address(&self) -> u64 {
                join(
                    self.cp_hqd_pq_rptr_report_addr_lo,
                    self.cp_hqd_pq_rptr_report_addr_hi,
                )
            }
            fn wptr_poll_address(&self) -> u64 {
                join(
                    self.cp_hqd_pq_wptr_poll_addr_lo,
                    self.cp_hqd_pq_wptr_poll_addr_hi,
                )
            }
            fn doorbell_offset(&self) -> u32 {
                self.cp_hqd_pq_doorbell_control.doorbell_offset()
            }
            fn is_aql(&self) -> bool {
                self.cp_hqd_aql_control.control0() != 0
            }
            fn is_kernel_queue(&self) -> bool {
                self.cp_hqd_pq_control.kmd_queue()
            }
            fn is_active(&self) -> bool {
                self.cp_hqd_active & 1 != 0
            }
            fn set_active(&mut self, active: bool) {
                self.cp_hqd_active = u32::from(active);
            }
            fn pipe_priority(&self) -> PipePriority {
                PipePriority::from_bits(self.cp_hqd_pipe_priority)
            }
            fn queue_priority(&self) -> u32 {
                self.cp_hqd_queue_priority
            }
            fn eop_base_address(&self) -> u64 {
                join(self.cp_hqd_eop_base_addr_lo, self.cp_hqd_eop_base_addr_hi) << 8
            }
            fn eop_size_bytes(&self) -> u64 {
                if self.eop_base_address() == 0 {
                    0
                } else {
                    field_size_bytes(self.cp_hqd_eop_control.eop_size())
                }
            }
            fn cwsr_area(&self) -> Option<CwsrArea> {
                self.cp_hqd_persistent_state
                    .qswitch_mode()
                    .then(|| CwsrArea {
                        address: join(
                            self.cp_hqd_ctx_save_base_addr_lo,
                            self.cp_hqd_ctx_save_base_addr_hi,
                        ),
                        size: self.cp_hqd_ctx_save_size,
                        ctl_stack_size: self.cp_hqd_cntl_stack_size,
                    })
            }
            fn vmid(&self) -> u32 {
                self.cp_hqd_vmid
            }
            fn set_vmid(&mut self, vmid: u32) {
                self.cp_hqd_vmid = vmid;
            }
            fn hqd_rptr(&self) -> u32 {
                self.cp_hqd_pq_rptr
            }
            fn set_hqd_rptr(&mut self, rptr: u32) {
                self.cp_hqd_pq_rptr = rptr;
            }
            fn hqd_wptr(&self) -> u64 {
                join(self.cp_hqd_pq_wptr_lo, self.cp_hqd_pq_wptr_hi)
            }
            fn set_hqd_wptr(&mut self, wptr: u64) {
                let (lo, hi) = split(wptr);
                self.cp_hqd_pq_wptr_lo = lo;
                self.cp_hqd_pq_wptr_hi = hi;
            }
            fn static_thread_masks(&self) -> [u32; MAX_SHADER_ENGINES] {
                <Self as Quirks>::static_thread_masks(self)
            }
            fn queue_doorbell_id0(&self) -> u32 {
                self.queue_doorbell_id0
            }
            fn set_queue_doorbell_id0(&mut self, value: u32) {
                self.queue_doorbell_id0 = value;
            }
        }

        impl core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&self.summary(), f)
            }
        }
    };
}

impl Quirks for v9_mqd {
    const GENERATION: Generation = Generation::Gfx9;
    const PRELOAD_SIZE: u16 = 0x53;
    fn set_static_thread_masks(&mut self, m: [u32; MAX_SHADER_ENGINES]) {
        [
            self.compute_static_thread_mgmt_se0,
            self.compute_static_thread_mgmt_se1,
            self.compute_static_thread_mgmt_se2,
            self.compute_static_thread_mgmt_se3,
            self.compute_static_thread_mgmt_se4,
            self.compute_static_thread_mgmt_se5,
            self.compute_static_thread_mgmt_se6,
            self.compute_static_thread_mgmt_se7,
        ] = m;
    }
    fn static_thread_masks(&self) -> [u32; MAX_SHADER_ENGINES] {
        [
            self.compute_static_thread_mgmt_se0,
            self.compute_static_thread_mgmt_se1,
            self.compute_static_thread_mgmt_se2,
            self.compute_static_thread_mgmt_se3,
            self.compute_static_thread_mgmt_se4,
            self.compute_static_thread_mgmt_se5,
            self.compute_static_thread_mgmt_se6,
            self.compute_static_thread_mgmt_se7,
        ]
    }
    fn dw160_mut(&mut self) -> &mut u32 {
        &mut self.cp_hqd_hq_status0
    }
    fn set_trap_present(&mut self, tba_address: u64) {
        if tba_address != 0 {
            self.compute_pgm_rsrc2.set_trap_present(true);
        }
    }
    fn set_force_simd_dist(&mut self, gc: GfxVersion, gws: bool) {
        if gc >= GfxVersion::new(9, 4, 2) {
            self.compute_resource_limits.set_force_simd_dist(gws);
        }
    }
}

impl Quirks for v10_compute_mqd {
    const GENERATION: Generation = Generation::Gfx10;
    const PRELOAD_SIZE: u16 = 0x53;
    fn set_static_thread_masks(&mut self, m: [u32; MAX_SHADER_ENGINES]) {
        let [se0, se1, se2, se3, ..] = m;
        self.compute_static_thread_mgmt_se0 = se0;
        self.compute_static_thread_mgmt_se1 = se1;
        self.compute_static_thread_mgmt_se2 = se2;
        self.compute_static_thread_mgmt_se3 = se3;
    }
    fn static_thread_masks(&self) -> [u32; MAX_SHADER_ENGINES] {
        [
            self.compute_static_thread_mgmt_se0,
            self.compute_static_thread_mgmt_se1,
            self.compute_static_thread_mgmt_se2,
            self.compute_static_thread_mgmt_se3,
            0,
            0,
            0,
            0,
        ]
    }
    fn dw160_mut(&mut self) -> &mut u32 {
        &mut self.cp_hqd_hq_scheduler0
    }
}

impl Quirks for v11_compute_mqd {
    const GENERATION: Generation = Generation::Gfx11;
    const PRELOAD_SIZE: u16 = 0x55;
    fn set_static_thread_masks(&mut self, m: [u32; MAX_SHADER_ENGINES]) {
        [
            self.compute_static_thread_mgmt_se0,
            self.compute_static_thread_mgmt_se1,
            self.compute_static_thread_mgmt_se2,
            self.compute_static_thread_mgmt_se3,
            self.compute_static_thread_mgmt_se4,
            self.compute_static_thread_mgmt_se5,
            self.compute_static_thread_mgmt_se6,
            self.compute_static_thread_mgmt_se7,
        ] = m;
    }
    fn static_thread_masks(&self) -> [u32; MAX_SHADER_ENGINES] {
        [
            self.compute_static_thread_mgmt_se0,
            self.compute_static_thread_mgmt_se1,
            self.compute_static_thread_mgmt_se2,
            self.compute_static_thread_mgmt_se3,
            self.compute_static_thread_mgmt_se4,
            self.compute_static_thread_mgmt_se5,
            self.compute_static_thread_mgmt_se6,
            self.compute_static_thread_mgmt_se7,
        ]
    }
    fn dw160_mut(&mut self) -> &mut u32 {
        &mut self.cp_hqd_hq_status0
    }
    fn atomics_bit(config: &MqdConfig) -> u32 {
        if config.pcie_atomics {
            HQ_STATUS0_PCIE_ATOMICS
        } else {
            0
        }
    }
    fn initial_se_mask(props: &QueueProperties) -> u32 {
        if props.debugger_workaround {
            0x0000_FFFF
        } else {
            u32::MAX
        }
    }
}

impl_compute_mqd!(
    v9_mqd,
    crate::v9::CpHqdPqControl,
    crate::v9::CpHqdIbControl::new()
        .with_min_ib_avail_size(3)
        .with_ib_exe_disable(true),
    |pq: crate::v9::CpHqdPqControl| pq.with_wpp_clamp_en(true)
);
impl_compute_mqd!(
    v10_compute_mqd,
    crate::v10::CpHqdPqControl,
    crate::v10::CpHqdIbControl::new().with_min_ib_avail_size(3),
    |pq: crate::v10::CpHqdPqControl| pq
);
impl_compute_mqd!(
    v11_compute_mqd,
    crate::v11::CpHqdPqControl,
    crate::v11::CpHqdIbControl::new().with_min_ib_avail_size(3),
    |pq: crate::v11::CpHqdPqControl| pq
);

/// A compute MQD of any generation: what a driver model stores per queue so that it is
/// written once for gfx9, gfx10 and gfx11.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeMqd {
    /// gfx9.
    V9(v9_mqd),
    /// gfx10.
    V10(v10_compute_mqd),
    /// gfx11.
    V11(v11_compute_mqd),
}

macro_rules! each_compute {
    ($self:expr, $m:ident => $body:expr) => {
        match $self {
            ComputeMqd::V9($m) => $body,
            ComputeMqd::V10($m) => $body,
            ComputeMqd::V11($m) => $body,
        }
    };
}

impl ComputeMqd {
    /// `init_mqd` for the generation of `config` (see [`v9_mqd::init`]).
    pub fn init(
        config: &MqdConfig,
        props: &QueueProperties,
        mqd_address: u64,
    ) -> Result<Self, MqdError> {
        Ok(match config.generation()? {
            Generation::Gfx9 => ComputeMqd::V9(v9_mqd::init(config, props, mqd_address)?),
            Generation::Gfx10 => {
                ComputeMqd::V10(v10_compute_mqd::init(config, props, mqd_address)?)
            }
            Generation::Gfx11 => {
                ComputeMqd::V11(v11_compute_mqd::init(config, props, mqd_address)?)
            }
        })
    }

    /// `init_mqd_hiq` for the generation of `config` (see [`v9_mqd::init_hiq`]).
    pub fn init_hiq(
        config: &MqdConfig,
        props: &QueueProperties,
        mqd_address: u64,
    ) -> Result<Self, MqdError> {
        Ok(match config.generation()? {
            Generation::Gfx9 => ComputeMqd::V9(v9_mqd::init_hiq(config, props, mqd_address)?),
            Generation::Gfx10 => {
                ComputeMqd::V10(v10_compute_mqd::init_hiq(config, props, mqd_address)?)
            }
            Generation::Gfx11 => {
                ComputeMqd::V11(v11_compute_mqd::init_hiq(config, props, mqd_address)?)
            }
        })
    }

    /// `update_mqd` (see [`v9_mqd::update`]); returns whether the queue is active.
    pub fn update(
        &mut self,
        config: &MqdConfig,
        props: &QueueProperties,
        info: Option<&UpdateInfo>,
    ) -> Result<bool, MqdError> {
        each_compute!(self, m => m.update(config, props, info))
    }

    /// Reads a compute MQD of `generation` from a dump (see [`v9_mqd::decode`]).
    pub fn decode(generation: Generation, bytes: &[u8]) -> Result<Self, MqdError> {
        Ok(match generation {
            Generation::Gfx9 => ComputeMqd::V9(v9_mqd::decode(bytes)?),
            Generation::Gfx10 => ComputeMqd::V10(v10_compute_mqd::decode(bytes)?),
            Generation::Gfx11 => ComputeMqd::V11(v11_compute_mqd::decode(bytes)?),
        })
    }

    /// The MQD bytes, as they sit in GART memory.
    pub fn as_bytes(&self) -> &[u8] {
        each_compute!(self, m => IntoBytes::as_bytes(m))
    }

    /// The C struct name of the variant.
    pub fn struct_name(&self) -> &'static str {
        match self {
            ComputeMqd::V9(_) => v9_mqd::NAME,
            ComputeMqd::V10(_) => v10_compute_mqd::NAME,
            ComputeMqd::V11(_) => v11_compute_mqd::NAME,
        }
    }

    /// The key fields with names and values.
    pub fn summary(&self) -> crate::print::ComputeSummary<'_> {
        each_compute!(self, m => m.summary())
    }

    /// Every non-zero field with its dword index (see [`crate::print::FieldDump`]).
    pub fn dump(&self) -> crate::print::AnyDump<'_> {
        match self {
            ComputeMqd::V9(m) => crate::print::AnyDump::V9(m.dump()),
            ComputeMqd::V10(m) => crate::print::AnyDump::V10(m.dump()),
            ComputeMqd::V11(m) => crate::print::AnyDump::V11(m.dump()),
        }
    }
}

impl ComputeDescriptor for ComputeMqd {
    fn generation(&self) -> Generation {
        each_compute!(self, m => ComputeDescriptor::generation(m))
    }
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn mqd_base_address(&self) -> u64 {
        each_compute!(self, m => m.mqd_base_address())
    }
    fn ring_base_address(&self) -> u64 {
        each_compute!(self, m => m.ring_base_address())
    }
    fn ring_size_bytes(&self) -> u64 {
        each_compute!(self, m => m.ring_size_bytes())
    }
    fn rptr_report_address(&self) -> u64 {
        each_compute!(self, m => m.rptr_report_address())
    }
    fn wptr_poll_address(&self) -> u64 {
        each_compute!(self, m => m.wptr_poll_address())
    }
    fn doorbell_offset(&self) -> u32 {
        each_compute!(self, m => m.doorbell_offset())
    }
    fn is_aql(&self) -> bool {
        each_compute!(self, m => m.is_aql())
    }
    fn is_kernel_queue(&self) -> bool {
        each_compute!(self, m => m.is_kernel_queue())
    }
    fn is_active(&self) -> bool {
        each_compute!(self, m => ComputeDescriptor::is_active(m))
    }
    fn set_active(&mut self, active: bool) {
        each_compute!(self, m => m.set_active(active))
    }
    fn pipe_priority(&self) -> PipePriority {
        each_compute!(self, m => m.pipe_priority())
    }
    fn queue_priority(&self) -> u32 {
        each_compute!(self, m => m.queue_priority())
    }
    fn eop_base_address(&self) -> u64 {
        each_compute!(self, m => m.eop_base_address())
    }
    fn eop_size_bytes(&self) -> u64 {
        each_compute!(self, m => m.eop_size_bytes())
    }
    fn cwsr_area(&self) -> Option<CwsrArea> {
        each_compute!(self, m => m.cwsr_area())
    }
    fn vmid(&self) -> u32 {
        each_compute!(self, m => m.vmid())
    }
    fn set_vmid(&mut self, vmid: u32) {
        each_compute!(self, m => m.set_vmid(vmid))
    }
    fn hqd_rptr(&self) -> u32 {
        each_compute!(self, m => m.hqd_rptr())
    }
    fn set_hqd_rptr(&mut self, rptr: u32) {
        each_compute!(self, m => m.set_hqd_rptr(rptr))
    }
    fn hqd_wptr(&self) -> u64 {
        each_compute!(self, m => m.hqd_wptr())
    }
    fn set_hqd_wptr(&mut self, wptr: u64) {
        each_compute!(self, m => m.set_hqd_wptr(wptr))
    }
    fn static_thread_masks(&self) -> [u32; MAX_SHADER_ENGINES] {
        each_compute!(self, m => ComputeDescriptor::static_thread_masks(m))
    }
    fn queue_doorbell_id0(&self) -> u32 {
        each_compute!(self, m => ComputeDescriptor::queue_doorbell_id0(m))
    }
    fn set_queue_doorbell_id0(&mut self, value: u32) {
        each_compute!(self, m => m.set_queue_doorbell_id0(value))
    }
}

impl core::fmt::Display for ComputeMqd {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        each_compute!(self, m => core::fmt::Display::fmt(m, f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_base_2_rounds_up() {
        assert_eq!(order_base_2(0), 0);
        assert_eq!(order_base_2(1), 0);
        assert_eq!(order_base_2(2), 1);
        assert_eq!(order_base_2(3), 2);
        assert_eq!(order_base_2(1024), 10);
        assert_eq!(order_base_2(1025), 11);
        assert_eq!(order_base_2(u32::MAX), 32);
    }

    #[test]
    fn queue_size_field_values() {
        assert_eq!(queue_size_field(1024), 7);
        assert_eq!(queue_size_field(2048), 8);
        assert_eq!(queue_size_field(256 * 1024), 15);
        assert_eq!(queue_size_field(1 << 31), 28);
        assert_eq!(queue_size_field(0), 0);
    }

    #[test]
    fn eop_control_formula_per_kernel() {
        assert_eq!(eop_control_value(KernelVersion::Linux6_12, 4096), 9);
        assert_eq!(eop_control_value(KernelVersion::Linux6_1, 4096), 9);
        // Capped at 0xA (0x800 dwords).
        assert_eq!(eop_control_value(KernelVersion::Linux6_12, 1 << 20), 0xA);
        assert_eq!(eop_control_value(KernelVersion::Linux6_12, 8), 0);
        // The zero guard exists only in 6.12.
        assert_eq!(eop_control_value(KernelVersion::Linux6_12, 0), 0);
        assert_eq!(eop_control_value(KernelVersion::Linux6_1, 0), 0xFFFF_FFFF);
        // Non-power-of-two sizes round up like order_base_2: 3000/4 = 750 -> 10 - 1 = 9.
        assert_eq!(eop_control_value(KernelVersion::Linux6_12, 3000), 9);
    }
}
