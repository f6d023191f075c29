//! HWS/HIQ packets of the gfx9/gfx10 PM4 scheduler (facts §3): what the driver writes on
//! the HIQ and into runlist IBs.
//!
//! Each packet is a `#[repr(C)]` zerocopy struct (size asserted against the facts) whose
//! dwords are `bitfield-struct` types with typed fields. Build packets with the `new`
//! constructors, which take an `*Args` struct of typed values and return
//! [`BuildError`] for values that do not fit — the generated `with_*` setters of the
//! dword types panic on too-wide values, the `with_*_checked` ones return `Err`.
//!
//! ```
//! use pm4::hws::*;
//! let mq = MapQueues::new(&MapQueuesArgs {
//!     queue_sel: MapQueueSel::HwsDetermined,
//!     queue_type: MapQueueType::NormalCompute,
//!     engine: QueueEngine::Compute,
//!     gws_control_queue: false,
//!     num_queues: 1,
//!     check_disable: false,
//!     doorbell_offset: 0x1234,
//!     mqd_addr: 0x7000_0000,
//!     wptr_addr: 0x7fff_0000_1000,
//! })?;
//! assert_eq!(MapQueues::DWORDS, 7);
//! assert_eq!(mq.to_dwords()[0], 0xC005_A200);
//! assert_eq!(mq.wptr_addr(), 0x7fff_0000_1000);
//! # Ok::<(), pm4::BuildError>(())
//! ```

use bitfield_struct::bitfield;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::decode::{check_enum, check_reserved, invalid_field, DecodeErrorKind};
use crate::error::{check_align, check_bits, BuildError};
use crate::fields::{hi32, hw_enum, join, lo32, reserved_mask};
use crate::header::{Opcode, Type3Header};
use crate::user::{WriteDataControl, WriteDataDst};
use crate::writer::fixed_packet;

macro_rules! zc_packet {
    ($(#[$m:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name { $($body)* }
    };
}
pub(crate) use zc_packet;

// ---------------------------------------------------------------------------------------
// SET_RESOURCES
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `queue_type` of SET_RESOURCES (dw1 `[31:29]`): which queue the resources are for.
    pub enum ResourceQueueType: 3 bits, catch-all Reserved {
        /// amdgpu's kernel interface queue.
        Kiq = 0 => "KIQ",
        /// KFD's HSA interface queue (what KFD always sends).
        Hiq = 1 => "HIQ",
        /// HSA debug interface queue.
        HsaDebugInterfaceQueue = 4 => "HSA_DEBUG_INTERFACE_QUEUE",
    }
}

/// SET_RESOURCES dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SetResourcesDw1 {
    /// `[15:0]` compute VMIDs given to KFD (`0xFF00`; `0xFFF8` on GC 9.4.1+).
    pub vmid_mask: u16,
    /// `[23:16]` unmap latency in units of 100 ms (KFD: 40).
    pub unmap_latency: u8,
    #[bits(4)]
    __: u8,
    /// `[28]` enable the XNACK-retry-disable check (latest kernels only).
    pub enb_xnack_retry_disable_check: bool,
    /// `[31:29]` queue type.
    #[bits(3)]
    pub queue_type: ResourceQueueType,
}

/// SET_RESOURCES dw6.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SetResourcesDw6 {
    /// `[15:0]` OAC mask (0).
    pub oac_mask: u16,
    #[bits(16)]
    __: u16,
}

/// SET_RESOURCES dw7.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SetResourcesDw7 {
    /// `[9:0]` GDS heap base (0).
    #[bits(10)]
    pub gds_heap_base: u16,
    #[bits(1)]
    __: u8,
    /// `[20:11]` GDS heap size (0).
    #[bits(10)]
    pub gds_heap_size: u16,
    #[bits(11)]
    __: u16,
}

zc_packet! {
    /// SET_RESOURCES (0xA0), 8 dwords, header `0xC006A000` (facts §3.1).
    pub struct SetResources {
        /// dw0.
        pub header: Type3Header,
        /// dw1: VMIDs, unmap latency, queue type.
        pub dw1: SetResourcesDw1,
        /// dw2: HQD slots the scheduler may use, bits 31:0 (`mec*32 + pipe*8 + queue`).
        pub queue_mask_lo: u32,
        /// dw3: queue mask bits 63:32.
        pub queue_mask_hi: u32,
        /// dw4: GWS mask bits 31:0.
        pub gws_mask_lo: u32,
        /// dw5: GWS mask bits 63:32.
        pub gws_mask_hi: u32,
        /// dw6: OAC mask.
        pub dw6: SetResourcesDw6,
        /// dw7: GDS heap.
        pub dw7: SetResourcesDw7,
    }
}
fixed_packet!(
    SetResources,
    Opcode::SET_RESOURCES,
    8,
    "SET_RESOURCES",
    validate
);

/// Field values of a SET_RESOURCES packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetResourcesArgs {
    /// Compute VMID bitmap.
    pub vmid_mask: u16,
    /// Unmap latency in units of 100 ms.
    pub unmap_latency: u8,
    /// Latest-kernel XNACK-chain check bit.
    pub enb_xnack_retry_disable_check: bool,
    /// Queue type (KFD: [`ResourceQueueType::Hiq`]).
    pub queue_type: ResourceQueueType,
    /// HQD slot mask.
    pub queue_mask: u64,
    /// GWS mask (KFD: all ones).
    pub gws_mask: u64,
    /// OAC mask.
    pub oac_mask: u16,
    /// GDS heap base (10 bits).
    pub gds_heap_base: u16,
    /// GDS heap size (10 bits).
    pub gds_heap_size: u16,
}

impl SetResources {
    /// Builds the packet.
    pub fn new(a: &SetResourcesArgs) -> Result<Self, BuildError> {
        const P: &str = "SET_RESOURCES";
        let dw1 = SetResourcesDw1::new()
            .with_vmid_mask(a.vmid_mask)
            .with_unmap_latency(a.unmap_latency)
            .with_enb_xnack_retry_disable_check(a.enb_xnack_retry_disable_check)
            .with_queue_type_checked(a.queue_type)
            .map_err(|_| enum_overflow(P, "queue_type", a.queue_type.into_bits()))?;
        check_bits(P, "gds_heap_base", a.gds_heap_base.into(), 10)?;
        check_bits(P, "gds_heap_size", a.gds_heap_size.into(), 10)?;
        Ok(SetResources {
            header: Self::HEADER,
            dw1,
            queue_mask_lo: lo32(a.queue_mask),
            queue_mask_hi: hi32(a.queue_mask),
            gws_mask_lo: lo32(a.gws_mask),
            gws_mask_hi: hi32(a.gws_mask),
            dw6: SetResourcesDw6::new().with_oac_mask(a.oac_mask),
            dw7: SetResourcesDw7::new()
                .with_gds_heap_base(a.gds_heap_base)
                .with_gds_heap_size(a.gds_heap_size),
        })
    }

    /// The 64-bit HQD slot mask.
    pub const fn queue_mask(&self) -> u64 {
        join(self.queue_mask_lo, self.queue_mask_hi)
    }

    /// The 64-bit GWS mask.
    pub const fn gws_mask(&self) -> u64 {
        join(self.gws_mask_lo, self.gws_mask_hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        const P: &str = "SET_RESOURCES";
        check_reserved(P, 1, self.dw1.into_bits(), DW1_SR_RESERVED)?;
        check_enum(P, 1, "queue_type", self.dw1.queue_type())?;
        check_reserved(P, 6, self.dw6.into_bits(), DW6_SR_RESERVED)?;
        check_reserved(P, 7, self.dw7.into_bits(), DW7_SR_RESERVED)
    }
}

const DW1_SR_RESERVED: u32 = reserved_mask!(SetResourcesDw1:
    VMID_MASK_OFFSET / VMID_MASK_BITS, UNMAP_LATENCY_OFFSET / UNMAP_LATENCY_BITS,
    ENB_XNACK_RETRY_DISABLE_CHECK_OFFSET / ENB_XNACK_RETRY_DISABLE_CHECK_BITS,
    QUEUE_TYPE_OFFSET / QUEUE_TYPE_BITS);

impl SetResourcesDw1 {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = DW1_SR_RESERVED;
}
const DW6_SR_RESERVED: u32 = reserved_mask!(SetResourcesDw6: OAC_MASK_OFFSET / OAC_MASK_BITS);

impl SetResourcesDw6 {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = DW6_SR_RESERVED;
}
const DW7_SR_RESERVED: u32 = reserved_mask!(SetResourcesDw7:
    GDS_HEAP_BASE_OFFSET / GDS_HEAP_BASE_BITS, GDS_HEAP_SIZE_OFFSET / GDS_HEAP_SIZE_BITS);

impl SetResourcesDw7 {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = DW7_SR_RESERVED;
}

pub(crate) fn enum_overflow(packet: &'static str, field: &'static str, value: u32) -> BuildError {
    BuildError::FieldOutOfRange {
        packet,
        field,
        value: value.into(),
        max: 0,
    }
}

// ---------------------------------------------------------------------------------------
// RUN_LIST
// ---------------------------------------------------------------------------------------

/// RUN_LIST dw3 (also the INDIRECT_BUFFER-like control of the chain packet).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct RunListControl {
    /// `[19:0]` IB size in dwords.
    #[bits(20)]
    pub ib_size: u32,
    /// `[20]` 1 for the chain packet at the end of an oversubscribed IB.
    pub chain: bool,
    /// `[21]` offload polling (0).
    pub offload_polling: bool,
    /// `[22]` chained-runlist idle disable (= chain).
    pub chained_runlist_idle_disable: bool,
    /// `[23]` valid (1).
    pub valid: bool,
    /// `[27:24]` processes in the runlist (4 bits: at most 15).
    #[bits(4)]
    pub process_cnt: u8,
    #[bits(4)]
    __: u8,
}

zc_packet! {
    /// RUN_LIST (0xA5), 4 dwords, header `0xC002A500` (facts §3.2).
    pub struct RunList {
        /// dw0.
        pub header: Type3Header,
        /// dw1: IB address bits `[31:2]` (bits `[1:0]` reserved: the IB is dword aligned).
        pub ib_base_lo: u32,
        /// dw2: IB address bits 63:32.
        pub ib_base_hi: u32,
        /// dw3: size, chain, valid, process count.
        pub control: RunListControl,
    }
}
fixed_packet!(RunList, Opcode::RUN_LIST, 4, "RUN_LIST", validate);

/// Field values of a RUN_LIST packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunListArgs {
    /// Runlist IB GPU address (4-byte aligned).
    pub ib_addr: u64,
    /// IB size in dwords (20 bits).
    pub ib_size_dwords: u32,
    /// Chain packet (end of an oversubscribed IB).
    pub chain: bool,
    /// Offload polling.
    pub offload_polling: bool,
    /// Chained-runlist idle disable.
    pub chained_runlist_idle_disable: bool,
    /// Valid bit.
    pub valid: bool,
    /// Process count (≤ 15).
    pub process_cnt: u8,
}

impl RunListArgs {
    /// The RUN_LIST KFD sends on the HIQ: chain 0, valid 1.
    pub const fn submit(ib_addr: u64, ib_size_dwords: u32, process_cnt: u8) -> Self {
        RunListArgs {
            ib_addr,
            ib_size_dwords,
            chain: false,
            offload_polling: false,
            chained_runlist_idle_disable: false,
            valid: true,
            process_cnt,
        }
    }

    /// The chain RUN_LIST KFD appends to an oversubscribed IB: chain 1, idle-disable 1,
    /// valid 1, pointing back at the IB's own start.
    pub const fn chain(ib_addr: u64, ib_size_dwords: u32, process_cnt: u8) -> Self {
        RunListArgs {
            ib_addr,
            ib_size_dwords,
            chain: true,
            offload_polling: false,
            chained_runlist_idle_disable: true,
            valid: true,
            process_cnt,
        }
    }
}

impl RunList {
    /// Builds the packet.
    pub fn new(a: &RunListArgs) -> Result<Self, BuildError> {
        const P: &str = "RUN_LIST";
        check_align(P, "ib_addr", a.ib_addr, 4)?;
        check_bits(P, "ib_size", a.ib_size_dwords.into(), 20)?;
        check_bits(P, "process_cnt", a.process_cnt.into(), 4)?;
        Ok(RunList {
            header: Self::HEADER,
            ib_base_lo: lo32(a.ib_addr),
            ib_base_hi: hi32(a.ib_addr),
            control: RunListControl::new()
                .with_ib_size(a.ib_size_dwords)
                .with_chain(a.chain)
                .with_offload_polling(a.offload_polling)
                .with_chained_runlist_idle_disable(a.chained_runlist_idle_disable)
                .with_valid(a.valid)
                .with_process_cnt(a.process_cnt),
        })
    }

    /// The IB address.
    pub const fn ib_addr(&self) -> u64 {
        join(self.ib_base_lo, self.ib_base_hi)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved("RUN_LIST", 1, self.ib_base_lo, 0b11)?;
        check_reserved(
            "RUN_LIST",
            3,
            self.control.into_bits(),
            RUN_LIST_CONTROL_RESERVED,
        )
    }
}

const RUN_LIST_CONTROL_RESERVED: u32 = reserved_mask!(RunListControl:
    IB_SIZE_OFFSET / IB_SIZE_BITS, CHAIN_OFFSET / CHAIN_BITS,
    OFFLOAD_POLLING_OFFSET / OFFLOAD_POLLING_BITS,
    CHAINED_RUNLIST_IDLE_DISABLE_OFFSET / CHAINED_RUNLIST_IDLE_DISABLE_BITS,
    VALID_OFFSET / VALID_BITS, PROCESS_CNT_OFFSET / PROCESS_CNT_BITS);

impl RunListControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = RUN_LIST_CONTROL_RESERVED;
}

// ---------------------------------------------------------------------------------------
// MAP_PROCESS (gfx9 16 dw, aldebaran 21 dw)
// ---------------------------------------------------------------------------------------

/// MAP_PROCESS dw1 (both forms; bits 16 and 23 exist only in the aldebaran form).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct MapProcessDw1 {
    /// `[15:0]` process PASID.
    pub pasid: u16,
    /// `[16]` single memory operations (aldebaran form only; reserved in the gfx9 form).
    pub single_memops: bool,
    /// `[17]` run the cleaner shader (6.12+).
    pub exec_cleaner_shader: bool,
    /// `[21:18]` trap debug VMID (6.12+).
    #[bits(4)]
    pub debug_vmid: u8,
    /// `[22]` new debug (set with `debug_vmid`, 6.12+).
    pub new_debug: bool,
    /// `[23]` TMZ (aldebaran form only; reserved in the gfx9 form).
    pub tmz: bool,
    /// `[24]` DIQ enable.
    pub diq_enable: bool,
    /// `[31:25]` process quantum (KFD: 10).
    #[bits(7)]
    pub process_quantum: u8,
}

/// MAP_PROCESS dw13: GWS/OAC/GDS sizes and the queue count.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct MapProcessDw13 {
    /// `[6:0]` GWS entries.
    #[bits(7)]
    pub num_gws: u8,
    /// `[7]` SDMA enable (KFD: 1).
    pub sdma_enable: bool,
    /// `[11:8]` OAC entries.
    #[bits(4)]
    pub num_oac: u8,
    /// `[15:12]` GDS size bits 9:6.
    #[bits(4)]
    pub gds_size_hi: u8,
    /// `[21:16]` GDS size bits 5:0.
    #[bits(6)]
    pub gds_size: u8,
    /// `[31:22]` all user queues of the process on the device (10 bits).
    #[bits(10)]
    pub num_queues: u16,
}

impl MapProcessDw13 {
    /// The full 10-bit GDS size (`gds_size_hi << 6 | gds_size`).
    pub const fn gds_size_total(&self) -> u16 {
        ((self.gds_size_hi() as u16) << 6) | self.gds_size() as u16
    }
}

/// The dwords both MAP_PROCESS forms share (dw0–dw13).
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapProcessCommon {
    /// dw0.
    pub header: Type3Header,
    /// dw1.
    pub dw1: MapProcessDw1,
    /// dw2: page-table base (PDE format) bits 31:0.
    pub vm_context_page_table_base_addr_lo32: u32,
    /// dw3: page-table base bits 63:32.
    pub vm_context_page_table_base_addr_hi32: u32,
    /// dw4: `SH_MEM_BASES` register value.
    pub sh_mem_bases: u32,
    /// dw5: `SH_MEM_CONFIG` register value.
    pub sh_mem_config: u32,
    /// dw6: `tba_addr >> 8`, low 32 bits.
    pub sq_shader_tba_lo: u32,
    /// dw7: `tba_addr >> 8`, high bits (gfx9 form: bit 31 = TRAP_EN).
    pub sq_shader_tba_hi: u32,
    /// dw8: `tma_addr >> 8`, low 32 bits.
    pub sq_shader_tma_lo: u32,
    /// dw9: `tma_addr >> 8`, high 32 bits.
    pub sq_shader_tma_hi: u32,
    /// dw10: reserved (0).
    pub reserved6: u32,
    /// dw11: GDS context area bits 31:0.
    pub gds_addr_lo: u32,
    /// dw12: GDS context area bits 63:32.
    pub gds_addr_hi: u32,
    /// dw13: GWS/OAC/GDS/queue counts.
    pub dw13: MapProcessDw13,
}

/// TRAP_EN in `sq_shader_tba_hi` of the gfx9 form.
pub const TBA_HI_TRAP_EN: u32 = 1 << 31;

zc_packet! {
    /// MAP_PROCESS (0xA1), gfx9 generic form, 16 dwords, header `0xC00EA100`
    /// (facts §3.3).
    pub struct MapProcess {
        /// dw0–dw13.
        pub common: MapProcessCommon,
        /// dw14: completion signal bits 31:0.
        pub completion_signal_lo: u32,
        /// dw15: completion signal bits 63:32.
        pub completion_signal_hi: u32,
    }
}
fixed_packet!(MapProcess, Opcode::MAP_PROCESS, 16, "MAP_PROCESS", validate);

zc_packet! {
    /// MAP_PROCESS (0xA1), aldebaran form used on GC 9.4.2/9.4.3/9.4.4, 21 dwords,
    /// header `0xC013A100` (facts §3.4).
    pub struct MapProcessAldebaran {
        /// dw0–dw13.
        pub common: MapProcessCommon,
        /// dw14: `SPI_GDBG_PER_VMID_CNTL` value.
        pub spi_gdbg_per_vmid_cntl: u32,
        /// dw15–dw18: debugger watch-point controls.
        pub tcp_watch_cntl: [u32; 4],
        /// dw19: completion signal bits 31:0.
        pub completion_signal_lo: u32,
        /// dw20: completion signal bits 63:32.
        pub completion_signal_hi: u32,
    }
}
fixed_packet!(
    MapProcessAldebaran,
    Opcode::MAP_PROCESS,
    21,
    "MAP_PROCESS",
    validate
);

hw_enum! {
    /// Which MAP_PROCESS layout a device uses (chosen by the GC version, facts §3).
    pub enum MapProcessForm: 1 bits, catch-all Reserved {
        /// The generic gfx9 form (any GC ≥ 9.0.1 except 9.4.2/9.4.3/9.4.4, and gfx10).
        Gfx9 = 0 => "GFX9",
        /// The aldebaran form (GC 9.4.2/9.4.3/9.4.4).
        Aldebaran = 1 => "ALDEBARAN",
    }
}

impl MapProcessForm {
    /// Packet length of this form in dwords (16 or 21).
    pub const fn dwords(self) -> usize {
        match self {
            MapProcessForm::Aldebaran => MapProcessAldebaran::DWORDS,
            _ => MapProcess::DWORDS,
        }
    }
}

/// Field values of a MAP_PROCESS packet (both forms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapProcessArgs {
    /// Process PASID.
    pub pasid: u16,
    /// Run the cleaner shader.
    pub exec_cleaner_shader: bool,
    /// Trap debug VMID (4 bits); `Some` also sets `new_debug`.
    pub debug_vmid: Option<u8>,
    /// DIQ enable.
    pub diq_enable: bool,
    /// Process quantum (7 bits; KFD: 10).
    pub process_quantum: u8,
    /// Page-directory base as the VM produces it.
    pub page_table_base: u64,
    /// `SH_MEM_BASES`.
    pub sh_mem_bases: u32,
    /// `SH_MEM_CONFIG`.
    pub sh_mem_config: u32,
    /// Trap handler base address (256-byte aligned; 0 if none).
    pub tba_addr: u64,
    /// Trap memory address (256-byte aligned).
    pub tma_addr: u64,
    /// Set TRAP_EN in `sq_shader_tba_hi` (the gfx9 form does when a TBA exists).
    pub trap_en: bool,
    /// GDS context area.
    pub gds_addr: u64,
    /// GWS entries (7 bits).
    pub num_gws: u8,
    /// SDMA enable (KFD: true).
    pub sdma_enable: bool,
    /// OAC entries (4 bits).
    pub num_oac: u8,
    /// GDS size (10 bits, split into `gds_size_hi`/`gds_size`).
    pub gds_size: u16,
    /// All queues of the process on the device (10 bits).
    pub num_queues: u16,
    /// Completion signal address.
    pub completion_signal: u64,
    /// Aldebaran only: single memory operations.
    pub single_memops: bool,
    /// Aldebaran only: TMZ.
    pub tmz: bool,
    /// Aldebaran only: `SPI_GDBG_PER_VMID_CNTL`.
    pub spi_gdbg_per_vmid_cntl: u32,
    /// Aldebaran only: debugger watch-point controls.
    pub tcp_watch_cntl: [u32; 4],
}

impl MapProcessCommon {
    fn build(a: &MapProcessArgs, form: MapProcessForm) -> Result<Self, BuildError> {
        const P: &str = "MAP_PROCESS";
        check_bits(P, "process_quantum", a.process_quantum.into(), 7)?;
        let debug_vmid = a.debug_vmid.unwrap_or(0);
        check_bits(P, "debug_vmid", debug_vmid.into(), 4)?;
        check_bits(P, "num_gws", a.num_gws.into(), 7)?;
        check_bits(P, "num_oac", a.num_oac.into(), 4)?;
        check_bits(P, "gds_size", a.gds_size.into(), 10)?;
        check_bits(P, "num_queues", a.num_queues.into(), 10)?;
        check_align(P, "tba_addr", a.tba_addr, 256)?;
        check_align(P, "tma_addr", a.tma_addr, 256)?;
        let tba = a.tba_addr >> 8;
        let tma = a.tma_addr >> 8;
        if a.trap_en {
            check_bits(P, "tba_addr", a.tba_addr, 39 + 8)?;
        }
        if form == MapProcessForm::Gfx9 && (a.single_memops || a.tmz) {
            return Err(BuildError::Conflict {
                packet: P,
                reason: "single_memops and tmz exist only in the aldebaran form",
            });
        }
        let header = match form {
            MapProcessForm::Aldebaran => MapProcessAldebaran::HEADER,
            _ => MapProcess::HEADER,
        };
        Ok(MapProcessCommon {
            header,
            dw1: MapProcessDw1::new()
                .with_pasid(a.pasid)
                .with_single_memops(a.single_memops)
                .with_exec_cleaner_shader(a.exec_cleaner_shader)
                .with_debug_vmid(debug_vmid)
                .with_new_debug(a.debug_vmid.is_some())
                .with_tmz(a.tmz)
                .with_diq_enable(a.diq_enable)
                .with_process_quantum(a.process_quantum),
            vm_context_page_table_base_addr_lo32: lo32(a.page_table_base),
            vm_context_page_table_base_addr_hi32: hi32(a.page_table_base),
            sh_mem_bases: a.sh_mem_bases,
            sh_mem_config: a.sh_mem_config,
            sq_shader_tba_lo: lo32(tba),
            sq_shader_tba_hi: hi32(tba) | if a.trap_en { TBA_HI_TRAP_EN } else { 0 },
            sq_shader_tma_lo: lo32(tma),
            sq_shader_tma_hi: hi32(tma),
            reserved6: 0,
            gds_addr_lo: lo32(a.gds_addr),
            gds_addr_hi: hi32(a.gds_addr),
            dw13: MapProcessDw13::new()
                .with_num_gws(a.num_gws)
                .with_sdma_enable(a.sdma_enable)
                .with_num_oac(a.num_oac)
                .with_gds_size_hi(((a.gds_size >> 6) & 0xF) as u8)
                .with_gds_size((a.gds_size & 0x3F) as u8)
                .with_num_queues(a.num_queues),
        })
    }

    /// Page-directory base.
    pub const fn page_table_base(&self) -> u64 {
        join(
            self.vm_context_page_table_base_addr_lo32,
            self.vm_context_page_table_base_addr_hi32,
        )
    }

    /// Trap handler base address (TRAP_EN masked off).
    pub const fn tba_addr(&self) -> u64 {
        join(
            self.sq_shader_tba_lo,
            self.sq_shader_tba_hi & !TBA_HI_TRAP_EN,
        ) << 8
    }

    /// Whether TRAP_EN (bit 31 of `sq_shader_tba_hi`) is set.
    pub const fn trap_en(&self) -> bool {
        self.sq_shader_tba_hi & TBA_HI_TRAP_EN != 0
    }

    /// Trap memory address.
    pub const fn tma_addr(&self) -> u64 {
        join(self.sq_shader_tma_lo, self.sq_shader_tma_hi) << 8
    }

    /// GDS context area.
    pub const fn gds_addr(&self) -> u64 {
        join(self.gds_addr_lo, self.gds_addr_hi)
    }

    fn validate(&self, form: MapProcessForm) -> Result<(), DecodeErrorKind> {
        const P: &str = "MAP_PROCESS";
        let mut reserved = MAP_PROCESS_DW1_RESERVED;
        if form == MapProcessForm::Gfx9 {
            reserved |=
                (1 << MapProcessDw1::SINGLE_MEMOPS_OFFSET) | (1 << MapProcessDw1::TMZ_OFFSET);
        }
        check_reserved(P, 1, self.dw1.into_bits(), reserved)?;
        check_reserved(P, 10, self.reserved6, u32::MAX)
    }
}

const MAP_PROCESS_DW1_RESERVED: u32 = reserved_mask!(MapProcessDw1:
    PASID_OFFSET / PASID_BITS, SINGLE_MEMOPS_OFFSET / SINGLE_MEMOPS_BITS,
    EXEC_CLEANER_SHADER_OFFSET / EXEC_CLEANER_SHADER_BITS, DEBUG_VMID_OFFSET / DEBUG_VMID_BITS,
    NEW_DEBUG_OFFSET / NEW_DEBUG_BITS, TMZ_OFFSET / TMZ_BITS, DIQ_ENABLE_OFFSET / DIQ_ENABLE_BITS,
    PROCESS_QUANTUM_OFFSET / PROCESS_QUANTUM_BITS);

impl MapProcessDw1 {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = MAP_PROCESS_DW1_RESERVED;
}

impl MapProcess {
    /// Builds the gfx9 form. `single_memops`/`tmz` set is an error (reserved here).
    pub fn new(a: &MapProcessArgs) -> Result<Self, BuildError> {
        Ok(MapProcess {
            common: MapProcessCommon::build(a, MapProcessForm::Gfx9)?,
            completion_signal_lo: lo32(a.completion_signal),
            completion_signal_hi: hi32(a.completion_signal),
        })
    }

    /// Completion signal address.
    pub const fn completion_signal(&self) -> u64 {
        join(self.completion_signal_lo, self.completion_signal_hi)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        self.common.validate(MapProcessForm::Gfx9)
    }
}

impl MapProcessAldebaran {
    /// Builds the aldebaran form.
    pub fn new(a: &MapProcessArgs) -> Result<Self, BuildError> {
        Ok(MapProcessAldebaran {
            common: MapProcessCommon::build(a, MapProcessForm::Aldebaran)?,
            spi_gdbg_per_vmid_cntl: a.spi_gdbg_per_vmid_cntl,
            tcp_watch_cntl: a.tcp_watch_cntl,
            completion_signal_lo: lo32(a.completion_signal),
            completion_signal_hi: hi32(a.completion_signal),
        })
    }

    /// Completion signal address.
    pub const fn completion_signal(&self) -> u64 {
        join(self.completion_signal_lo, self.completion_signal_hi)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        self.common.validate(MapProcessForm::Aldebaran)
    }
}

/// A MAP_PROCESS of either form, for code that picks the form at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyMapProcess {
    /// 16-dword gfx9 form.
    Gfx9(MapProcess),
    /// 21-dword aldebaran form.
    Aldebaran(MapProcessAldebaran),
}

impl AnyMapProcess {
    /// Builds the form given explicitly.
    pub fn new(form: MapProcessForm, a: &MapProcessArgs) -> Result<Self, BuildError> {
        match form {
            MapProcessForm::Aldebaran => Ok(AnyMapProcess::Aldebaran(MapProcessAldebaran::new(a)?)),
            MapProcessForm::Gfx9 => Ok(AnyMapProcess::Gfx9(MapProcess::new(a)?)),
            MapProcessForm::Reserved(v) => Err(enum_overflow("MAP_PROCESS", "form", v.into())),
        }
    }

    /// The shared dwords.
    pub const fn common(&self) -> &MapProcessCommon {
        match self {
            AnyMapProcess::Gfx9(p) => &p.common,
            AnyMapProcess::Aldebaran(p) => &p.common,
        }
    }
}

impl crate::writer::Encode for AnyMapProcess {
    fn dwords(&self) -> usize {
        match self {
            AnyMapProcess::Gfx9(_) => MapProcess::DWORDS,
            AnyMapProcess::Aldebaran(_) => MapProcessAldebaran::DWORDS,
        }
    }
    fn encode_into(&self, out: &mut [u32]) -> Result<usize, crate::error::WriteError> {
        match self {
            AnyMapProcess::Gfx9(p) => p.encode_into(out),
            AnyMapProcess::Aldebaran(p) => p.encode_into(out),
        }
    }
}

// ---------------------------------------------------------------------------------------
// MAP_QUEUES / UNMAP_QUEUES engine selection
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `extended_engine_sel` of MAP_QUEUES/UNMAP_QUEUES (dw1 `[3:2]`).
    pub enum ExtendedEngineSel: 2 bits, catch-all Reserved {
        /// Legacy `engine_sel` meaning (0 compute, 2 SDMA0, 3 SDMA1).
        Legacy = 0 => "LEGACY",
        /// `engine_sel` selects SDMA0..7.
        Sdma0To7 = 1 => "SDMA0_7",
        /// `engine_sel` selects SDMA8..15 (6.12+, GC 9.4.3).
        Sdma8To15 = 2 => "SDMA8_15",
    }
}

/// The engine a MAP_QUEUES packet maps a queue on: the meaning of the
/// (`extended_engine_sel`, `engine_sel`) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueEngine {
    /// A compute queue (0, 0).
    Compute,
    /// SDMA engine 0 or 1 in the legacy encoding (0, 2 + engine) — used when the engine
    /// id is < 2 and SDMA IP < 5.2.
    SdmaLegacy(u8),
    /// SDMA engine 0..15 in the extended encoding (1 or 2, engine mod 8).
    SdmaExtended(u8),
}

impl QueueEngine {
    /// The (`extended_engine_sel`, `engine_sel`) pair, or `None` for an engine number out
    /// of range.
    pub const fn encode(self) -> Option<(ExtendedEngineSel, u8)> {
        match self {
            QueueEngine::Compute => Some((ExtendedEngineSel::Legacy, 0)),
            QueueEngine::SdmaLegacy(e) if e < 2 => Some((ExtendedEngineSel::Legacy, 2 + e)),
            QueueEngine::SdmaExtended(e) if e < 8 => Some((ExtendedEngineSel::Sdma0To7, e)),
            QueueEngine::SdmaExtended(e) if e < 16 => Some((ExtendedEngineSel::Sdma8To15, e - 8)),
            _ => None,
        }
    }

    /// The engine of a (`extended_engine_sel`, `engine_sel`) pair, or `None` when the
    /// pair means nothing.
    pub const fn decode(ext: ExtendedEngineSel, engine_sel: u8) -> Option<Self> {
        match (ext, engine_sel) {
            (ExtendedEngineSel::Legacy, 0) => Some(QueueEngine::Compute),
            (ExtendedEngineSel::Legacy, 2) => Some(QueueEngine::SdmaLegacy(0)),
            (ExtendedEngineSel::Legacy, 3) => Some(QueueEngine::SdmaLegacy(1)),
            (ExtendedEngineSel::Sdma0To7, e) if e < 8 => Some(QueueEngine::SdmaExtended(e)),
            (ExtendedEngineSel::Sdma8To15, e) if e < 8 => Some(QueueEngine::SdmaExtended(e + 8)),
            _ => None,
        }
    }
}

impl core::fmt::Display for QueueEngine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            QueueEngine::Compute => f.write_str("COMPUTE"),
            QueueEngine::SdmaLegacy(e) | QueueEngine::SdmaExtended(e) => write!(f, "SDMA{e}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// MAP_QUEUES
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `queue_sel` of MAP_QUEUES (dw1 `[5:4]`).
    pub enum MapQueueSel: 2 bits, catch-all Reserved {
        /// Map to the slots given in the packet.
        MapToSpecifiedSlots = 0 => "SPECIFIED_SLOTS",
        /// The scheduler picks the slots (KFD).
        HwsDetermined = 1 => "HWS_DETERMINED",
    }
}

hw_enum! {
    /// `queue_type` of MAP_QUEUES (dw1 `[23:21]`).
    pub enum MapQueueType: 3 bits, catch-all Reserved {
        /// Normal compute queue.
        NormalCompute = 0 => "NORMAL_COMPUTE",
        /// Debug interface queue (DIQ).
        DebugInterfaceQueue = 1 => "DEBUG_INTERFACE_QUEUE",
        /// Normal-latency static queue (process in debug mode).
        NormalLatencyStatic = 2 => "NORMAL_LATENCY_STATIC",
        /// Low-latency static queue.
        LowLatencyStatic = 3 => "LOW_LATENCY_STATIC",
    }
}

/// MAP_QUEUES dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct MapQueuesDw1 {
    #[bits(2)]
    __: u8,
    /// `[3:2]` extended engine select.
    #[bits(2)]
    pub extended_engine_sel: ExtendedEngineSel,
    /// `[5:4]` queue select.
    #[bits(2)]
    pub queue_sel: MapQueueSel,
    #[bits(6)]
    __: u8,
    /// `[12]` the queue owns GWS.
    pub gws_control_queue: bool,
    #[bits(8)]
    __: u8,
    /// `[23:21]` queue type.
    #[bits(3)]
    pub queue_type: MapQueueType,
    #[bits(2)]
    __: u8,
    /// `[28:26]` engine select; its meaning depends on `extended_engine_sel`
    /// (see [`QueueEngine`]).
    #[bits(3)]
    pub engine_sel: u8,
    /// `[31:29]` number of queues (KFD: 1).
    #[bits(3)]
    pub num_queues: u8,
}

/// MAP_QUEUES dw2 (also the doorbell dwords of UNMAP_QUEUES).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct DoorbellDw {
    #[bits(1)]
    __: u8,
    /// `[1]` check disable (MAP_QUEUES only; 0).
    pub check_disable: bool,
    /// `[27:2]` doorbell dword index in the doorbell BAR.
    #[bits(26)]
    pub doorbell_offset: u32,
    #[bits(4)]
    __: u8,
}

zc_packet! {
    /// MAP_QUEUES (0xA2), HWS form, 7 dwords, header `0xC005A200` (facts §3.5).
    pub struct MapQueues {
        /// dw0.
        pub header: Type3Header,
        /// dw1: selects and type.
        pub dw1: MapQueuesDw1,
        /// dw2: doorbell.
        pub dw2: DoorbellDw,
        /// dw3: MQD GPU address bits 31:0.
        pub mqd_addr_lo: u32,
        /// dw4: MQD address bits 63:32.
        pub mqd_addr_hi: u32,
        /// dw5: user write-pointer address bits 31:0.
        pub wptr_addr_lo: u32,
        /// dw6: write-pointer address bits 63:32.
        pub wptr_addr_hi: u32,
    }
}
fixed_packet!(MapQueues, Opcode::MAP_QUEUES, 7, "MAP_QUEUES", validate);

/// Field values of a MAP_QUEUES packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapQueuesArgs {
    /// Queue select (KFD: [`MapQueueSel::HwsDetermined`]).
    pub queue_sel: MapQueueSel,
    /// Queue type.
    pub queue_type: MapQueueType,
    /// Engine (compute or an SDMA engine).
    pub engine: QueueEngine,
    /// The queue owns GWS.
    pub gws_control_queue: bool,
    /// Number of queues (3 bits; KFD: 1).
    pub num_queues: u8,
    /// Check disable.
    pub check_disable: bool,
    /// Doorbell dword index (26 bits).
    pub doorbell_offset: u32,
    /// MQD GPU address.
    pub mqd_addr: u64,
    /// User write-pointer address.
    pub wptr_addr: u64,
}

impl MapQueues {
    /// Builds the packet.
    #[inline]
    pub fn new(a: &MapQueuesArgs) -> Result<Self, BuildError> {
        const P: &str = "MAP_QUEUES";
        let Some((ext, sel)) = a.engine.encode() else {
            return Err(BuildError::Conflict {
                packet: P,
                reason: "SDMA engine number out of range",
            });
        };
        // All fields are range-checked first, then both dwords are composed in one step
        // (this constructor is on the runlist hot path).
        let queue_sel = a.queue_sel.into_bits();
        let queue_type = a.queue_type.into_bits();
        if queue_sel > 3 {
            return Err(enum_overflow(P, "queue_sel", queue_sel));
        }
        if queue_type > 7 {
            return Err(enum_overflow(P, "queue_type", queue_type));
        }
        check_bits(P, "num_queues", a.num_queues.into(), 3)?;
        check_bits(P, "doorbell_offset", a.doorbell_offset.into(), 26)?;
        let dw1 = (ext.into_bits() << MapQueuesDw1::EXTENDED_ENGINE_SEL_OFFSET)
            | (queue_sel << MapQueuesDw1::QUEUE_SEL_OFFSET)
            | ((a.gws_control_queue as u32) << MapQueuesDw1::GWS_CONTROL_QUEUE_OFFSET)
            | (queue_type << MapQueuesDw1::QUEUE_TYPE_OFFSET)
            | ((sel as u32) << MapQueuesDw1::ENGINE_SEL_OFFSET)
            | ((a.num_queues as u32) << MapQueuesDw1::NUM_QUEUES_OFFSET);
        let dw2 = ((a.check_disable as u32) << DoorbellDw::CHECK_DISABLE_OFFSET)
            | (a.doorbell_offset << DoorbellDw::DOORBELL_OFFSET_OFFSET);
        Ok(MapQueues {
            header: Self::HEADER,
            dw1: MapQueuesDw1::from_bits(dw1),
            dw2: DoorbellDw::from_bits(dw2),
            mqd_addr_lo: lo32(a.mqd_addr),
            mqd_addr_hi: hi32(a.mqd_addr),
            wptr_addr_lo: lo32(a.wptr_addr),
            wptr_addr_hi: hi32(a.wptr_addr),
        })
    }

    /// The engine, or `None` if the select pair is meaningless.
    pub const fn engine(&self) -> Option<QueueEngine> {
        QueueEngine::decode(self.dw1.extended_engine_sel(), self.dw1.engine_sel())
    }

    /// MQD GPU address.
    pub const fn mqd_addr(&self) -> u64 {
        join(self.mqd_addr_lo, self.mqd_addr_hi)
    }

    /// User write-pointer address.
    pub const fn wptr_addr(&self) -> u64 {
        join(self.wptr_addr_lo, self.wptr_addr_hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        const P: &str = "MAP_QUEUES";
        check_reserved(P, 1, self.dw1.into_bits(), MAP_QUEUES_DW1_RESERVED)?;
        check_enum(P, 1, "extended_engine_sel", self.dw1.extended_engine_sel())?;
        check_enum(P, 1, "queue_sel", self.dw1.queue_sel())?;
        check_enum(P, 1, "queue_type", self.dw1.queue_type())?;
        if self.engine().is_none() {
            return Err(invalid_field(
                P,
                1,
                "engine_sel",
                self.dw1.engine_sel().into(),
            ));
        }
        check_reserved(P, 2, self.dw2.into_bits(), DOORBELL_DW_RESERVED)
    }
}

const MAP_QUEUES_DW1_RESERVED: u32 = reserved_mask!(MapQueuesDw1:
    EXTENDED_ENGINE_SEL_OFFSET / EXTENDED_ENGINE_SEL_BITS, QUEUE_SEL_OFFSET / QUEUE_SEL_BITS,
    GWS_CONTROL_QUEUE_OFFSET / GWS_CONTROL_QUEUE_BITS, QUEUE_TYPE_OFFSET / QUEUE_TYPE_BITS,
    ENGINE_SEL_OFFSET / ENGINE_SEL_BITS, NUM_QUEUES_OFFSET / NUM_QUEUES_BITS);

impl MapQueuesDw1 {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = MAP_QUEUES_DW1_RESERVED;
}
const DOORBELL_DW_RESERVED: u32 = reserved_mask!(DoorbellDw:
    CHECK_DISABLE_OFFSET / CHECK_DISABLE_BITS, DOORBELL_OFFSET_OFFSET / DOORBELL_OFFSET_BITS);

impl DoorbellDw {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = DOORBELL_DW_RESERVED;
}

// ---------------------------------------------------------------------------------------
// UNMAP_QUEUES
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `action` of UNMAP_QUEUES (dw1 `[1:0]`).
    pub enum UnmapAction: 2 bits, catch-all Reserved {
        /// Preempt the queues (save state).
        Preempt = 0 => "PREEMPT_QUEUES",
        /// Reset the queues.
        Reset = 1 => "RESET_QUEUES",
        /// Disable the process's queues.
        DisableProcessQueues = 2 => "DISABLE_PROCESS_QUEUES",
    }
}

hw_enum! {
    /// `queue_sel` of UNMAP_QUEUES (dw1 `[5:4]`).
    pub enum UnmapQueueSel: 2 bits, catch-all Reserved {
        /// The queues whose doorbells follow.
        SpecifiedQueues = 0 => "PERFORM_REQUEST_ON_SPECIFIED_QUEUES",
        /// All queues of a PASID.
        PasidQueues = 1 => "PERFORM_REQUEST_ON_PASID_QUEUES",
        /// All queues.
        AllActiveQueues = 2 => "PERFORM_REQUEST_ON_ALL_ACTIVE_QUEUES",
        /// All non-static queues.
        DynamicQueuesOnly = 3 => "PERFORM_REQUEST_ON_DYNAMIC_QUEUES_ONLY",
    }
}

/// UNMAP_QUEUES dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct UnmapQueuesDw1 {
    /// `[1:0]` action.
    #[bits(2)]
    pub action: UnmapAction,
    /// `[3:2]` extended engine select (KFD: 1 iff SDMA IP ≥ 5.2).
    #[bits(2)]
    pub extended_engine_sel: ExtendedEngineSel,
    /// `[5:4]` which queues.
    #[bits(2)]
    pub queue_sel: UnmapQueueSel,
    #[bits(20)]
    __: u32,
    /// `[28:26]` engine select (KFD: always 0 = compute, even for SDMA queues).
    #[bits(3)]
    pub engine_sel: u8,
    /// `[31:29]` number of doorbell offsets used (queue_sel = specified).
    #[bits(3)]
    pub num_queues: u8,
}

/// Which queues an UNMAP_QUEUES acts on, with the dw2–dw5 operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnmapTarget {
    /// The queues with these doorbell offsets (1 to 4 of them; the first `count`).
    Queues {
        /// Doorbell dword indices (26 bits each).
        doorbell_offsets: [u32; 4],
        /// How many are used (1..=4).
        count: u8,
    },
    /// All queues of a process.
    Pasid(u16),
    /// All queues.
    AllQueues,
    /// All non-static queues.
    DynamicQueues,
}

zc_packet! {
    /// UNMAP_QUEUES (0xA3), 6 dwords, header `0xC004A300` (facts §3.6).
    pub struct UnmapQueues {
        /// dw0.
        pub header: Type3Header,
        /// dw1: action and selects.
        pub dw1: UnmapQueuesDw1,
        /// dw2–dw5: PASID in dw2 `[15:0]` (queue_sel = PASID), or doorbell offsets
        /// `[27:2]` (queue_sel = specified).
        pub operands: [u32; 4],
    }
}
fixed_packet!(
    UnmapQueues,
    Opcode::UNMAP_QUEUES,
    6,
    "UNMAP_QUEUES",
    validate
);

/// Field values of an UNMAP_QUEUES packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnmapQueuesArgs {
    /// Preempt, reset or disable.
    pub action: UnmapAction,
    /// Which queues.
    pub target: UnmapTarget,
    /// Extended engine select (KFD: `Sdma0To7` iff SDMA IP ≥ 5.2, else `Legacy`).
    pub extended_engine_sel: ExtendedEngineSel,
    /// Engine select (3 bits; KFD: 0).
    pub engine_sel: u8,
    /// `num_queues` for targets other than `Queues` (KFD writes 1).
    pub num_queues: u8,
}

impl UnmapQueues {
    /// Builds the packet; for [`UnmapTarget::Queues`] `num_queues` is the count.
    pub fn new(a: &UnmapQueuesArgs) -> Result<Self, BuildError> {
        const P: &str = "UNMAP_QUEUES";
        check_bits(P, "engine_sel", a.engine_sel.into(), 3)?;
        check_bits(P, "num_queues", a.num_queues.into(), 3)?;
        let mut operands = [0u32; 4];
        let (queue_sel, num_queues) = match a.target {
            UnmapTarget::Queues {
                doorbell_offsets,
                count,
            } => {
                if count == 0 || count > 4 {
                    return Err(BuildError::FieldOutOfRange {
                        packet: P,
                        field: "num_queues",
                        value: count.into(),
                        max: 4,
                    });
                }
                for (slot, &off) in operands
                    .iter_mut()
                    .zip(doorbell_offsets.iter())
                    .take(count.into())
                {
                    *slot = DoorbellDw::new()
                        .with_doorbell_offset_checked(off)
                        .map_err(|_| BuildError::FieldOutOfRange {
                            packet: P,
                            field: "doorbell_offset",
                            value: off.into(),
                            max: (1 << 26) - 1,
                        })?
                        .into_bits();
                }
                (UnmapQueueSel::SpecifiedQueues, count)
            }
            UnmapTarget::Pasid(pasid) => {
                operands[0] = pasid.into();
                (UnmapQueueSel::PasidQueues, a.num_queues)
            }
            UnmapTarget::AllQueues => (UnmapQueueSel::AllActiveQueues, a.num_queues),
            UnmapTarget::DynamicQueues => (UnmapQueueSel::DynamicQueuesOnly, a.num_queues),
        };
        let dw1 = UnmapQueuesDw1::new()
            .with_action_checked(a.action)
            .map_err(|_| enum_overflow(P, "action", a.action.into_bits()))?
            .with_extended_engine_sel_checked(a.extended_engine_sel)
            .map_err(|_| {
                enum_overflow(P, "extended_engine_sel", a.extended_engine_sel.into_bits())
            })?
            .with_queue_sel(queue_sel)
            .with_engine_sel(a.engine_sel)
            .with_num_queues(num_queues);
        Ok(UnmapQueues {
            header: Self::HEADER,
            dw1,
            operands,
        })
    }

    /// The queues acted on, from `queue_sel` and the operands. For specified queues the
    /// count is `num_queues` clamped to 4.
    pub fn target(&self) -> UnmapTarget {
        match self.dw1.queue_sel() {
            UnmapQueueSel::SpecifiedQueues | UnmapQueueSel::Reserved(_) => {
                let mut doorbell_offsets = [0u32; 4];
                for (d, &raw) in doorbell_offsets.iter_mut().zip(self.operands.iter()) {
                    *d = DoorbellDw::from_bits(raw).doorbell_offset();
                }
                UnmapTarget::Queues {
                    doorbell_offsets,
                    count: self.dw1.num_queues().min(4),
                }
            }
            UnmapQueueSel::PasidQueues => UnmapTarget::Pasid(self.operands[0] as u16),
            UnmapQueueSel::AllActiveQueues => UnmapTarget::AllQueues,
            UnmapQueueSel::DynamicQueuesOnly => UnmapTarget::DynamicQueues,
        }
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        const P: &str = "UNMAP_QUEUES";
        check_reserved(P, 1, self.dw1.into_bits(), UNMAP_DW1_RESERVED)?;
        check_enum(P, 1, "action", self.dw1.action())?;
        check_enum(P, 1, "extended_engine_sel", self.dw1.extended_engine_sel())?;
        match self.dw1.queue_sel() {
            UnmapQueueSel::SpecifiedQueues => {
                let n = self.dw1.num_queues();
                if n == 0 || n > 4 {
                    return Err(invalid_field(P, 1, "num_queues", n.into()));
                }
                for (i, &raw) in self.operands.iter().enumerate().take(n.into()) {
                    check_reserved(P, 2 + i, raw, DOORBELL_DW_RESERVED | 0b10)?;
                }
                Ok(())
            }
            UnmapQueueSel::PasidQueues => check_reserved(P, 2, self.operands[0], 0xFFFF_0000),
            _ => Ok(()),
        }
    }
}

const UNMAP_DW1_RESERVED: u32 = reserved_mask!(UnmapQueuesDw1:
    ACTION_OFFSET / ACTION_BITS, EXTENDED_ENGINE_SEL_OFFSET / EXTENDED_ENGINE_SEL_BITS,
    QUEUE_SEL_OFFSET / QUEUE_SEL_BITS, ENGINE_SEL_OFFSET / ENGINE_SEL_BITS,
    NUM_QUEUES_OFFSET / NUM_QUEUES_BITS);

impl UnmapQueuesDw1 {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = UNMAP_DW1_RESERVED;
}

// ---------------------------------------------------------------------------------------
// QUERY_STATUS
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `interrupt_sel` of QUERY_STATUS (dw1 `[29:28]`).
    pub enum QueryInterruptSel: 2 bits, catch-all Reserved {
        /// Completion status (KFD).
        CompletionStatus = 0 => "COMPLETION_STATUS",
        /// Status of a process (PASID in dw2).
        ProcessStatus = 1 => "PROCESS_STATUS",
        /// Status of a queue (doorbell in dw2).
        QueueStatus = 2 => "QUEUE_STATUS",
    }
}

hw_enum! {
    /// `command` of QUERY_STATUS (dw1 `[31:30]`).
    pub enum QueryCommand: 2 bits, catch-all Reserved {
        /// Interrupt only.
        InterruptOnly = 0 => "INTERRUPT_ONLY",
        /// Write the fence immediately.
        FenceOnlyImmediate = 1 => "FENCE_ONLY_IMMEDIATE",
        /// Write the fence after the write acknowledge (KFD).
        FenceOnlyAfterWriteAck = 2 => "FENCE_ONLY_AFTER_WRITE_ACK",
        /// Fence, wait for the write acknowledge, then interrupt.
        FenceWaitForWriteAckSendInterrupt = 3 => "FENCE_WAIT_FOR_WRITE_ACK_SEND_INTERRUPT",
    }
}

/// QUERY_STATUS dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct QueryStatusDw1 {
    /// `[27:0]` context id (KFD: 0).
    #[bits(28)]
    pub context_id: u32,
    /// `[29:28]` what to report.
    #[bits(2)]
    pub interrupt_sel: QueryInterruptSel,
    /// `[31:30]` fence/interrupt command.
    #[bits(2)]
    pub command: QueryCommand,
}

/// QUERY_STATUS dw2 when `interrupt_sel` is queue status (KFD header layout).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct QueryQueueDw2 {
    #[bits(2)]
    __: u8,
    /// `[27:2]` doorbell offset.
    #[bits(26)]
    pub doorbell_offset: u32,
    /// `[30:28]` engine select (KFD header; amdgpu's soc15d.h disagrees, facts §3.7).
    #[bits(3)]
    pub engine_sel: u8,
    #[bits(1)]
    __: u8,
}

/// What a QUERY_STATUS asks about, with its dw2 operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryTarget {
    /// Completion status (dw2 = 0).
    Completion,
    /// A process.
    Process {
        /// Its PASID.
        pasid: u16,
    },
    /// A queue.
    Queue {
        /// Doorbell offset (26 bits).
        doorbell_offset: u32,
        /// Engine select (3 bits).
        engine_sel: u8,
    },
}

zc_packet! {
    /// QUERY_STATUS (0xA4), 7 dwords, header `0xC005A400` (facts §3.7).
    pub struct QueryStatus {
        /// dw0.
        pub header: Type3Header,
        /// dw1: context id, interrupt select, command.
        pub dw1: QueryStatusDw1,
        /// dw2: PASID `[15:0]` or doorbell/engine (see [`QueryStatus::target`]).
        pub dw2: u32,
        /// dw3: fence address bits 31:0.
        pub addr_lo: u32,
        /// dw4: fence address bits 63:32.
        pub addr_hi: u32,
        /// dw5: fence value bits 31:0 (KFD: 100).
        pub data_lo: u32,
        /// dw6: fence value bits 63:32.
        pub data_hi: u32,
    }
}
fixed_packet!(
    QueryStatus,
    Opcode::QUERY_STATUS,
    7,
    "QUERY_STATUS",
    validate
);

/// Field values of a QUERY_STATUS packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryStatusArgs {
    /// Context id (28 bits).
    pub context_id: u32,
    /// Fence/interrupt command.
    pub command: QueryCommand,
    /// What to ask about.
    pub target: QueryTarget,
    /// Fence address (8-byte aligned).
    pub fence_addr: u64,
    /// Fence value (KFD: 100).
    pub fence_value: u64,
}

impl QueryStatus {
    /// Builds the packet.
    pub fn new(a: &QueryStatusArgs) -> Result<Self, BuildError> {
        const P: &str = "QUERY_STATUS";
        check_bits(P, "context_id", a.context_id.into(), 28)?;
        check_align(P, "fence_addr", a.fence_addr, 8)?;
        let (sel, dw2) = match a.target {
            QueryTarget::Completion => (QueryInterruptSel::CompletionStatus, 0),
            QueryTarget::Process { pasid } => (QueryInterruptSel::ProcessStatus, pasid.into()),
            QueryTarget::Queue {
                doorbell_offset,
                engine_sel,
            } => {
                check_bits(P, "doorbell_offset", doorbell_offset.into(), 26)?;
                check_bits(P, "engine_sel", engine_sel.into(), 3)?;
                (
                    QueryInterruptSel::QueueStatus,
                    QueryQueueDw2::new()
                        .with_doorbell_offset(doorbell_offset)
                        .with_engine_sel(engine_sel)
                        .into_bits(),
                )
            }
        };
        let dw1 = QueryStatusDw1::new()
            .with_context_id(a.context_id)
            .with_interrupt_sel(sel)
            .with_command_checked(a.command)
            .map_err(|_| enum_overflow(P, "command", a.command.into_bits()))?;
        Ok(QueryStatus {
            header: Self::HEADER,
            dw1,
            dw2,
            addr_lo: lo32(a.fence_addr),
            addr_hi: hi32(a.fence_addr),
            data_lo: lo32(a.fence_value),
            data_hi: hi32(a.fence_value),
        })
    }

    /// What the packet asks about.
    pub const fn target(&self) -> QueryTarget {
        match self.dw1.interrupt_sel() {
            QueryInterruptSel::ProcessStatus => QueryTarget::Process {
                pasid: self.dw2 as u16,
            },
            QueryInterruptSel::QueueStatus => {
                let q = QueryQueueDw2::from_bits(self.dw2);
                QueryTarget::Queue {
                    doorbell_offset: q.doorbell_offset(),
                    engine_sel: q.engine_sel(),
                }
            }
            _ => QueryTarget::Completion,
        }
    }

    /// Fence address.
    pub const fn fence_addr(&self) -> u64 {
        join(self.addr_lo, self.addr_hi)
    }

    /// Fence value.
    pub const fn fence_value(&self) -> u64 {
        join(self.data_lo, self.data_hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        const P: &str = "QUERY_STATUS";
        check_enum(P, 1, "interrupt_sel", self.dw1.interrupt_sel())?;
        match self.dw1.interrupt_sel() {
            QueryInterruptSel::CompletionStatus => check_reserved(P, 2, self.dw2, u32::MAX),
            QueryInterruptSel::ProcessStatus => check_reserved(P, 2, self.dw2, 0xFFFF_0000),
            _ => check_reserved(P, 2, self.dw2, 0x8000_0003),
        }?;
        check_reserved(P, 3, self.addr_lo, 0b111)
    }
}

// ---------------------------------------------------------------------------------------
// WRITE_DATA register form
// ---------------------------------------------------------------------------------------

zc_packet! {
    /// WRITE_DATA (0x37), memory-mapped register form the HWS path uses, 5 dwords,
    /// header `0xC0033700` (facts §3.8). Decodes as [`crate::user::WriteData`]
    /// (see [`crate::user::WriteData::as_register_write`]).
    pub struct WriteDataRegister {
        /// dw0.
        pub header: Type3Header,
        /// dw1: `dst_sel = 0` (register), `addr_incr = 1`.
        pub control: WriteDataControl,
        /// dw2: register dword offset `[17:0]`.
        pub reg_offset: u32,
        /// dw3: reserved (0).
        pub reserved: u32,
        /// dw4: the value.
        pub data: u32,
    }
}
fixed_packet!(WriteDataRegister, Opcode::WRITE_DATA, 5, "WRITE_DATA");

impl WriteDataRegister {
    /// A write of `value` to register dword offset `reg_offset` (18 bits) with
    /// `addr_incr = 1` as KFD writes it.
    pub fn new(reg_offset: u32, value: u32, wr_confirm: bool) -> Result<Self, BuildError> {
        check_bits("WRITE_DATA", "reg_offset", reg_offset.into(), 18)?;
        Ok(WriteDataRegister {
            header: Self::HEADER,
            control: WriteDataControl::new()
                .with_dst_sel(WriteDataDst::MemMappedRegister)
                .with_addr_incr(true)
                .with_wr_confirm(wr_confirm),
            reg_offset,
            reserved: 0,
            data: value,
        })
    }
}
