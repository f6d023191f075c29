//! User compute-queue PM4 packets the CP (MEC) executes (facts §4).
//!
//! Layouts that differ between gfx9 and gfx10/gfx11 are separate types
//! ([`ReleaseMemGfx9`]/[`ReleaseMemGfx10`], [`AcquireMemGfx9`]/[`AcquireMemGfx10`]);
//! fields that exist only on gfx10+ in an otherwise shared layout (WAIT_REG_MEM's
//! `mes_*`/`cache_policy`) are rejected by the gfx9 decoder. Variable-length packets
//! ([`Nop`], [`WriteData`], [`SetShReg`]) are a fixed head plus a borrowed payload.
//!
//! ```
//! use pm4::fields::{CachePolicy, EventType};
//! use pm4::user::*;
//! // kfdtest's gfx9 event signal: dw1 0x00028514, dw2 0x22000000.
//! let rm = ReleaseMemGfx9::new(&ReleaseMemArgs {
//!     event_type: EventType::CacheFlushAndInvTsEvent,
//!     event_index: ReleaseEventIndex::EndOfPipe,
//!     cache_policy: CachePolicy::Lru,
//!     dst_sel: ReleaseDstSel::MemoryController,
//!     int_sel: ReleaseIntSel::SendInterruptAfterWriteConfirm,
//!     data_sel: ReleaseDataSel::Data32,
//!     addr: 0x7f00_0000_0040,
//!     data: 8,
//!     int_ctxid: 8,
//! }, ReleaseCacheGfx9::new().with_tc_wb_action_ena(true).with_tc_action_ena(true))?;
//! assert_eq!(rm.to_dwords()[..3], [0xC006_4900, 0x0002_8514, 0x2200_0000]);
//! # Ok::<(), pm4::BuildError>(())
//! ```

use bitfield_struct::bitfield;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::decode::{check_enum, check_reserved, invalid_field, DecodeErrorKind};
use crate::error::{check_align, check_bits, BuildError, WriteError};
use crate::fields::{
    hi32, hw_enum, join, lo32, reserved_mask, CachePolicy, CompareFunction, EngineSel, EventType,
};
use crate::header::{Opcode, Type3Header, MAX_PACKET_DWORDS};
use crate::hws::{enum_overflow, zc_packet};
use crate::writer::{fixed_packet, space, Encode};
use crate::GfxGen;

// ---------------------------------------------------------------------------------------
// NOP
// ---------------------------------------------------------------------------------------

/// NOP (0x10): a header followed by `count + 1` ignored dwords, or the one-dword NOP
/// `0xFFFF1000` (empty payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nop<'a> {
    /// dw0.
    pub header: Type3Header,
    /// The skipped dwords.
    pub payload: &'a [u32],
}

impl<'a> Nop<'a> {
    /// A NOP carrying `payload` (at most `MAX_PACKET_DWORDS − 1` dwords; an empty
    /// payload gives the one-dword NOP).
    pub fn new(payload: &'a [u32]) -> Result<Self, BuildError> {
        let header = if payload.is_empty() {
            Type3Header::from_bits(crate::header::NOP_ONE_DWORD)
        } else {
            Type3Header::for_packet(Opcode::NOP, payload.len() + 1)?
        };
        Ok(Nop { header, payload })
    }

    /// Total length in dwords.
    pub fn total_dwords(&self) -> usize {
        1 + self.payload.len()
    }
}

impl Encode for Nop<'_> {
    fn dwords(&self) -> usize {
        self.total_dwords()
    }
    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
        let n = self.total_dwords();
        if n > MAX_PACKET_DWORDS {
            return Err(WriteError::Build(BuildError::Length {
                packet: "NOP",
                dwords: n,
                min: 1,
                max: MAX_PACKET_DWORDS,
            }));
        }
        let dst = space(out, n)?;
        let (head, body) = dst.split_at_mut(1);
        head[0] = self.header.into_bits();
        body.copy_from_slice(self.payload);
        Ok(n)
    }
}

// ---------------------------------------------------------------------------------------
// WRITE_DATA
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `dst_sel` of WRITE_DATA (dw1 `[11:8]`).
    pub enum WriteDataDst: 4 bits, catch-all Reserved {
        /// Memory-mapped register (dw2 `[17:0]` = register dword offset).
        MemMappedRegister = 0 => "MEM_MAPPED_REGISTER",
        /// Memory, synchronous via GRBM (gfx ring).
        MemorySyncGrbm = 1 => "MEMORY_SYNC_GRBM",
        /// TC/L2.
        TcL2 = 2 => "TC_L2",
        /// GDS (dw2 `[15:0]`).
        Gds = 3 => "GDS",
        /// Memory, asynchronous (what user queues use).
        Memory = 5 => "MEMORY",
        /// Memory-mapped ADC persistent state.
        MemMappedAdcPersistentState = 6 => "MEM_MAPPED_ADC_PERSISTENT_STATE",
    }
}

/// WRITE_DATA dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct WriteDataControl {
    #[bits(8)]
    __: u8,
    /// `[11:8]` destination.
    #[bits(4)]
    pub dst_sel: WriteDataDst,
    #[bits(4)]
    __: u8,
    /// `[16]` 1 = write every data dword to the same address (`WR_ONE_ADDR`).
    pub addr_incr: bool,
    #[bits(2)]
    __: u8,
    /// `[19]` resume VF.
    pub resume_vf: bool,
    /// `[20]` wait for write confirmation.
    pub wr_confirm: bool,
    #[bits(4)]
    __: u8,
    /// `[26:25]` cache policy.
    #[bits(2)]
    pub cache_policy: CachePolicy,
    #[bits(3)]
    __: u8,
    /// `[31:30]` engine (gfx ring; ME on MEC).
    #[bits(2)]
    pub engine_sel: EngineSel,
}

const WRITE_DATA_CONTROL_RESERVED: u32 = reserved_mask!(WriteDataControl:
    DST_SEL_OFFSET / DST_SEL_BITS, ADDR_INCR_OFFSET / ADDR_INCR_BITS,
    RESUME_VF_OFFSET / RESUME_VF_BITS, WR_CONFIRM_OFFSET / WR_CONFIRM_BITS,
    CACHE_POLICY_OFFSET / CACHE_POLICY_BITS, ENGINE_SEL_OFFSET / ENGINE_SEL_BITS);

impl WriteDataControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = WRITE_DATA_CONTROL_RESERVED;
}

zc_packet! {
    /// The fixed part of WRITE_DATA (dw0–dw3).
    pub struct WriteDataHead {
        /// dw0 (`count = N + 2`).
        pub header: Type3Header,
        /// dw1.
        pub control: WriteDataControl,
        /// dw2: address bits 31:0 (dword aligned), register offset `[17:0]` or GDS
        /// offset `[15:0]`.
        pub dst_addr_lo: u32,
        /// dw3: address bits 63:32.
        pub dst_addr_hi: u32,
    }
}

/// Where a WRITE_DATA writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteDataTarget {
    /// A register dword offset.
    Register(u32),
    /// A GPU virtual address.
    Memory(u64),
    /// A GDS offset.
    Gds(u32),
}

/// WRITE_DATA (0x37): 4 + N dwords, header `count = N + 2` (facts §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteData<'a> {
    /// dw0–dw3.
    pub head: WriteDataHead,
    /// The N data dwords (N ≥ 1).
    pub data: &'a [u32],
}

/// Most data dwords a WRITE_DATA can carry.
pub const WRITE_DATA_MAX_DWORDS: usize = MAX_PACKET_DWORDS - 4;

impl<'a> WriteData<'a> {
    /// The packet name.
    pub const NAME: &'static str = "WRITE_DATA";

    /// A write of `data` (1..=[`WRITE_DATA_MAX_DWORDS`] dwords) to `target` with the
    /// given dw1 options (`dst_sel` is set from `target`; for memory use
    /// [`WriteDataMemSel`] to choose between async memory and TC/L2).
    pub fn new(
        target: WriteDataTarget,
        mem_sel: WriteDataMemSel,
        control: WriteDataControl,
        data: &'a [u32],
    ) -> Result<Self, BuildError> {
        const P: &str = "WRITE_DATA";
        let total = data.len() + 4;
        if data.is_empty() || total > MAX_PACKET_DWORDS {
            return Err(BuildError::Length {
                packet: P,
                dwords: total,
                min: 5,
                max: MAX_PACKET_DWORDS,
            });
        }
        let (dst_sel, lo, hi) = match target {
            WriteDataTarget::Register(reg) => {
                check_bits(P, "reg_offset", reg.into(), 18)?;
                (WriteDataDst::MemMappedRegister, reg, 0)
            }
            WriteDataTarget::Gds(off) => {
                check_bits(P, "gds_offset", off.into(), 16)?;
                (WriteDataDst::Gds, off, 0)
            }
            WriteDataTarget::Memory(addr) => {
                check_align(P, "dst_addr", addr, 4)?;
                let sel = match mem_sel {
                    WriteDataMemSel::Async => WriteDataDst::Memory,
                    WriteDataMemSel::TcL2 => WriteDataDst::TcL2,
                    WriteDataMemSel::SyncGrbm => WriteDataDst::MemorySyncGrbm,
                };
                (sel, lo32(addr), hi32(addr))
            }
        };
        let control = control.with_dst_sel(dst_sel);
        Ok(WriteData {
            head: WriteDataHead {
                header: Type3Header::for_packet(Opcode::WRITE_DATA, total)?,
                control,
                dst_addr_lo: lo,
                dst_addr_hi: hi,
            },
            data,
        })
    }

    /// kfdtest's memory write: async memory, `wr_confirm`, cache policy bypass.
    pub fn memory(addr: u64, data: &'a [u32]) -> Result<Self, BuildError> {
        Self::new(
            WriteDataTarget::Memory(addr),
            WriteDataMemSel::Async,
            WriteDataControl::new()
                .with_wr_confirm(true)
                .with_cache_policy(CachePolicy::Bypass),
            data,
        )
    }

    /// Where the packet writes (by `dst_sel`); `None` for `dst_sel` values without an
    /// address (ADC persistent state, reserved values).
    pub const fn target(&self) -> Option<WriteDataTarget> {
        let h = &self.head;
        match h.control.dst_sel() {
            WriteDataDst::MemMappedRegister => {
                Some(WriteDataTarget::Register(h.dst_addr_lo & 0x3FFFF))
            }
            WriteDataDst::Gds => Some(WriteDataTarget::Gds(h.dst_addr_lo & 0xFFFF)),
            WriteDataDst::Memory | WriteDataDst::TcL2 | WriteDataDst::MemorySyncGrbm => {
                Some(WriteDataTarget::Memory(join(h.dst_addr_lo, h.dst_addr_hi)))
            }
            _ => None,
        }
    }

    /// The destination address (dw2/dw3 joined).
    pub const fn dst_addr(&self) -> u64 {
        join(self.head.dst_addr_lo, self.head.dst_addr_hi)
    }

    /// Total length in dwords.
    pub fn total_dwords(&self) -> usize {
        4 + self.data.len()
    }

    /// The packet as the HWS register form, if it is one (register destination, one data
    /// dword, dw3 zero).
    pub fn as_register_write(&self) -> Option<crate::hws::WriteDataRegister> {
        match (self.head.control.dst_sel(), self.data) {
            (WriteDataDst::MemMappedRegister, [value]) if self.head.dst_addr_hi == 0 => {
                Some(crate::hws::WriteDataRegister {
                    header: self.head.header,
                    control: self.head.control,
                    reg_offset: self.head.dst_addr_lo,
                    reserved: 0,
                    data: *value,
                })
            }
            _ => None,
        }
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        const P: &str = "WRITE_DATA";
        let c = self.head.control;
        check_reserved(P, 1, c.into_bits(), WRITE_DATA_CONTROL_RESERVED)?;
        check_enum(P, 1, "dst_sel", c.dst_sel())?;
        check_enum(P, 1, "engine_sel", c.engine_sel())?;
        match c.dst_sel() {
            WriteDataDst::MemMappedRegister | WriteDataDst::MemMappedAdcPersistentState => {
                check_reserved(P, 2, self.head.dst_addr_lo, !0x3FFFF)?;
                check_reserved(P, 3, self.head.dst_addr_hi, u32::MAX)
            }
            WriteDataDst::Gds => {
                check_reserved(P, 2, self.head.dst_addr_lo, !0xFFFF)?;
                check_reserved(P, 3, self.head.dst_addr_hi, u32::MAX)
            }
            _ => check_reserved(P, 2, self.head.dst_addr_lo, 0b11),
        }
    }
}

/// Which memory path a memory WRITE_DATA takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteDataMemSel {
    /// `dst_sel = 5`: memory, asynchronous (user queues).
    Async,
    /// `dst_sel = 2`: TC/L2.
    TcL2,
    /// `dst_sel = 1`: memory synchronous via GRBM (gfx ring).
    SyncGrbm,
}

impl<'a> crate::packets::Pm4Body<'a> for WriteData<'a> {
    const MIN_DWORDS: usize = 5;
    const MAX_DWORDS: usize = MAX_PACKET_DWORDS;

    #[inline(always)]
    fn decode_body(_: Type3Header, words: &'a [u32], _: GfxGen) -> Result<Self, DecodeErrorKind> {
        let wrong = || DecodeErrorKind::WrongLength {
            packet: Self::NAME,
            dwords: words.len(),
            min: 5,
            max: MAX_PACKET_DWORDS,
        };
        let (Some(head), Some(data)) = (words.get(..4), words.get(4..)) else {
            return Err(wrong());
        };
        if data.is_empty() {
            return Err(wrong());
        }
        let head = WriteDataHead::read_from_bytes(head.as_bytes()).map_err(|_| wrong())?;
        let p = WriteData { head, data };
        p.validate()?;
        Ok(p)
    }
}

impl Encode for WriteData<'_> {
    fn dwords(&self) -> usize {
        self.total_dwords()
    }
    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
        let n = self.total_dwords();
        let dst = space(out, n)?;
        let (head, body) = dst.split_at_mut(4);
        head.as_mut_bytes().copy_from_slice(self.head.as_bytes());
        body.copy_from_slice(self.data);
        Ok(n)
    }
}

// ---------------------------------------------------------------------------------------
// RELEASE_MEM
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `event_index` of RELEASE_MEM (dw1 `[11:8]`).
    pub enum ReleaseEventIndex: 4 bits, catch-all Reserved {
        /// End of pipe.
        EndOfPipe = 5 => "END_OF_PIPE",
        /// Shader done.
        ShaderDone = 6 => "SHADER_DONE",
    }
}

hw_enum! {
    /// `dst_sel` of RELEASE_MEM (dw2 `[17:16]`).
    pub enum ReleaseDstSel: 2 bits, catch-all Reserved {
        /// Memory controller.
        MemoryController = 0 => "MEMORY_CONTROLLER",
        /// TC/L2.
        TcL2 = 1 => "TC_L2",
        /// Queue write-pointer register.
        QueueWritePointerRegister = 2 => "QUEUE_WRITE_POINTER_REGISTER",
        /// Queue write-pointer poll-mask bit.
        QueueWritePointerPollMaskBit = 3 => "QUEUE_WRITE_POINTER_POLL_MASK_BIT",
    }
}

hw_enum! {
    /// `int_sel` of RELEASE_MEM (dw2 `[26:24]`).
    pub enum ReleaseIntSel: 3 bits, catch-all Reserved {
        /// No interrupt.
        None = 0 => "NONE",
        /// Interrupt only (`data_sel` must be 0).
        SendInterruptOnly = 1 => "SEND_INTERRUPT_ONLY",
        /// Interrupt after the write is confirmed.
        SendInterruptAfterWriteConfirm = 2 => "SEND_INTERRUPT_AFTER_WRITE_CONFIRM",
        /// Send data after write confirm, no interrupt.
        SendDataAfterWriteConfirm = 3 => "SEND_DATA_AFTER_WRITE_CONFIRM",
        /// Unconditionally send `int_ctxid`.
        UnconditionallySendIntCtxid = 4 => "UNCONDITIONALLY_SEND_INT_CTXID",
        /// Interrupt if the 32-bit compare passes.
        ConditionallySendIntCtxidBasedOn32BitCompare = 5 => "CONDITIONAL_32BIT_COMPARE",
        /// Interrupt if the 64-bit compare passes.
        ConditionallySendIntCtxidBasedOn64BitCompare = 6 => "CONDITIONAL_64BIT_COMPARE",
    }
}

hw_enum! {
    /// `data_sel` of RELEASE_MEM (dw2 `[31:29]`).
    pub enum ReleaseDataSel: 3 bits, catch-all Reserved {
        /// No data.
        None = 0 => "NONE",
        /// 32-bit `data_lo`.
        Data32 = 1 => "SEND_32_BIT_LOW",
        /// 64-bit data.
        Data64 = 2 => "SEND_64_BIT_DATA",
        /// 64-bit GPU clock counter.
        GpuClockCounter = 3 => "SEND_GPU_CLOCK_COUNTER",
        /// CP perf counter / system counter.
        SystemClockCounter = 4 => "SEND_SYSTEM_CLOCK_COUNTER",
        /// Store GDS data.
        StoreGdsData = 5 => "STORE_GDS_DATA_TO_MEMORY",
    }
}

impl ReleaseDataSel {
    /// Bytes written to memory (0, 4 or 8; GDS data: unknown here, 0).
    pub const fn bytes(self) -> u64 {
        match self {
            ReleaseDataSel::Data32 => 4,
            ReleaseDataSel::Data64
            | ReleaseDataSel::GpuClockCounter
            | ReleaseDataSel::SystemClockCounter => 8,
            _ => 0,
        }
    }
}

/// RELEASE_MEM gfx9 dw1: event and cache actions.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct ReleaseCacheGfx9 {
    /// `[5:0]` event type.
    #[bits(6)]
    pub event_type: EventType,
    #[bits(2)]
    __: u8,
    /// `[11:8]` event index.
    #[bits(4)]
    pub event_index: ReleaseEventIndex,
    /// `[12]` TCL1 volatile action.
    pub tcl1_vol_action_ena: bool,
    /// `[13]` TC volatile action.
    pub tc_vol_action_ena: bool,
    #[bits(1)]
    __: u8,
    /// `[15]` L2 writeback.
    pub tc_wb_action_ena: bool,
    /// `[16]` L1 invalidate.
    pub tcl1_action_ena: bool,
    /// `[17]` L2 invalidate.
    pub tc_action_ena: bool,
    #[bits(1)]
    __: u8,
    /// `[19]` TC non-coherent action.
    pub tc_nc_action_ena: bool,
    /// `[20]` TC write-combine action.
    pub tc_wc_action_ena: bool,
    /// `[21]` L2 metadata action.
    pub tc_md_action_ena: bool,
    #[bits(3)]
    __: u8,
    /// `[26:25]` cache policy.
    #[bits(2)]
    pub cache_policy: CachePolicy,
    #[bits(1)]
    __: u8,
    /// `[28]` EOP_EXEC (soc15d.h; the KFD header names bit 29 instead — both kept).
    pub execute: bool,
    /// `[29]` pq_exe_status (KFD header name; see `execute`).
    pub pq_exe_status: bool,
    #[bits(2)]
    __: u8,
}

const RELEASE_CACHE_GFX9_RESERVED: u32 = reserved_mask!(ReleaseCacheGfx9:
    EVENT_TYPE_OFFSET / EVENT_TYPE_BITS, EVENT_INDEX_OFFSET / EVENT_INDEX_BITS,
    TCL1_VOL_ACTION_ENA_OFFSET / TCL1_VOL_ACTION_ENA_BITS, TC_VOL_ACTION_ENA_OFFSET / TC_VOL_ACTION_ENA_BITS,
    TC_WB_ACTION_ENA_OFFSET / TC_WB_ACTION_ENA_BITS, TCL1_ACTION_ENA_OFFSET / TCL1_ACTION_ENA_BITS,
    TC_ACTION_ENA_OFFSET / TC_ACTION_ENA_BITS, TC_NC_ACTION_ENA_OFFSET / TC_NC_ACTION_ENA_BITS,
    TC_WC_ACTION_ENA_OFFSET / TC_WC_ACTION_ENA_BITS, TC_MD_ACTION_ENA_OFFSET / TC_MD_ACTION_ENA_BITS,
    CACHE_POLICY_OFFSET / CACHE_POLICY_BITS, EXECUTE_OFFSET / EXECUTE_BITS,
    PQ_EXE_STATUS_OFFSET / PQ_EXE_STATUS_BITS);

impl ReleaseCacheGfx9 {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = RELEASE_CACHE_GFX9_RESERVED;
}

/// The 13-bit `gcr_cntl` of gfx10+ RELEASE_MEM (dw1 `[24:12]`).
#[bitfield(u16)]
#[derive(PartialEq, Eq)]
pub struct ReleaseGcr {
    /// bit 0: GLM writeback.
    pub glm_wb: bool,
    /// bit 1: GLM invalidate.
    pub glm_inv: bool,
    /// bit 2: GLV invalidate.
    pub glv_inv: bool,
    /// bit 3: GL1 invalidate.
    pub gl1_inv: bool,
    /// bit 4: GL2 unshared.
    pub gl2_us: bool,
    /// bits `[6:5]`: GL2 range mode.
    #[bits(2)]
    pub gl2_range: u8,
    /// bit 7: GL2 discard.
    pub gl2_discard: bool,
    /// bit 8: GL2 invalidate.
    pub gl2_inv: bool,
    /// bit 9: GL2 writeback.
    pub gl2_wb: bool,
    /// bits `[11:10]`: sequencing.
    #[bits(2)]
    pub seq: u8,
    #[bits(4)]
    __: u8,
}

/// RELEASE_MEM gfx10/gfx11 dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct ReleaseCacheGfx10 {
    /// `[5:0]` event type.
    #[bits(6)]
    pub event_type: EventType,
    #[bits(2)]
    __: u8,
    /// `[11:8]` event index.
    #[bits(4)]
    pub event_index: ReleaseEventIndex,
    /// `[24:12]` cache actions.
    #[bits(13)]
    pub gcr_cntl: ReleaseGcr,
    /// `[26:25]` cache policy.
    #[bits(2)]
    pub cache_policy: CachePolicy,
    #[bits(1)]
    __: u8,
    /// `[28]` execute.
    pub execute: bool,
    #[bits(1)]
    __: u8,
    /// `[30]` GLK invalidate.
    pub glk_inv: bool,
    /// `[31]` PWS enable.
    pub pws_enable: bool,
}

const RELEASE_CACHE_GFX10_RESERVED: u32 = reserved_mask!(ReleaseCacheGfx10:
    EVENT_TYPE_OFFSET / EVENT_TYPE_BITS, EVENT_INDEX_OFFSET / EVENT_INDEX_BITS,
    GCR_CNTL_OFFSET / GCR_CNTL_BITS, CACHE_POLICY_OFFSET / CACHE_POLICY_BITS,
    EXECUTE_OFFSET / EXECUTE_BITS, GLK_INV_OFFSET / GLK_INV_BITS, PWS_ENABLE_OFFSET / PWS_ENABLE_BITS);

impl ReleaseCacheGfx10 {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = RELEASE_CACHE_GFX10_RESERVED;
}

/// RELEASE_MEM dw2 (both layouts; `mes_*` exist on gfx10+ only).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct ReleaseDataControl {
    #[bits(16)]
    __: u16,
    /// `[17:16]` destination.
    #[bits(2)]
    pub dst_sel: ReleaseDstSel,
    #[bits(2)]
    __: u8,
    /// `[21:20]` MES interrupt pipe (gfx10+).
    #[bits(2)]
    pub mes_intr_pipe: u8,
    /// `[23:22]` MES action id (gfx10+).
    #[bits(2)]
    pub mes_action_id: u8,
    /// `[26:24]` interrupt select.
    #[bits(3)]
    pub int_sel: ReleaseIntSel,
    #[bits(2)]
    __: u8,
    /// `[31:29]` data select.
    #[bits(3)]
    pub data_sel: ReleaseDataSel,
}

const RELEASE_DATA_RESERVED: u32 = reserved_mask!(ReleaseDataControl:
    DST_SEL_OFFSET / DST_SEL_BITS, MES_INTR_PIPE_OFFSET / MES_INTR_PIPE_BITS,
    MES_ACTION_ID_OFFSET / MES_ACTION_ID_BITS, INT_SEL_OFFSET / INT_SEL_BITS,
    DATA_SEL_OFFSET / DATA_SEL_BITS);

impl ReleaseDataControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = RELEASE_DATA_RESERVED;
}
const RELEASE_DATA_GFX10_ONLY: u32 = (0b11 << ReleaseDataControl::MES_INTR_PIPE_OFFSET)
    | (0b11 << ReleaseDataControl::MES_ACTION_ID_OFFSET);

/// The generation-independent field values of a RELEASE_MEM (dw2–dw7 and the event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseMemArgs {
    /// Event type (usually `CACHE_FLUSH_AND_INV_TS_EVENT`).
    pub event_type: EventType,
    /// Event index (usually end of pipe).
    pub event_index: ReleaseEventIndex,
    /// Cache policy of the write.
    pub cache_policy: CachePolicy,
    /// Destination.
    pub dst_sel: ReleaseDstSel,
    /// Interrupt select.
    pub int_sel: ReleaseIntSel,
    /// Data select.
    pub data_sel: ReleaseDataSel,
    /// Address (4-byte aligned for 32-bit data, 8-byte for 64-bit data).
    pub addr: u64,
    /// Data (or compare data).
    pub data: u64,
    /// Interrupt context id (becomes the IH `context_id0`).
    pub int_ctxid: u32,
}

impl ReleaseMemArgs {
    /// An end-of-pipe fence (`CACHE_FLUSH_AND_INV_TS_EVENT`, memory controller, LRU): writes
    /// `data` with `data_sel` to `addr`, then interrupts with `int_ctxid` per `int_sel`.
    pub const fn end_of_pipe(
        addr: u64,
        data: u64,
        data_sel: ReleaseDataSel,
        int_sel: ReleaseIntSel,
        int_ctxid: u32,
    ) -> Self {
        ReleaseMemArgs {
            event_type: EventType::CacheFlushAndInvTsEvent,
            event_index: ReleaseEventIndex::EndOfPipe,
            cache_policy: CachePolicy::Lru,
            dst_sel: ReleaseDstSel::MemoryController,
            int_sel,
            data_sel,
            addr,
            data,
            int_ctxid,
        }
    }

    /// The event signal of facts §8.2 (what kfdtest sends): the 32-bit event id written to
    /// its slot at `slot_addr`, then an interrupt after the write with the id as context
    /// (`int_sel = 2`, `data_sel = 1`).
    pub const fn event_signal(slot_addr: u64, event_id: u32) -> Self {
        Self::end_of_pipe(
            slot_addr,
            event_id as u64,
            ReleaseDataSel::Data32,
            ReleaseIntSel::SendInterruptAfterWriteConfirm,
            event_id,
        )
    }
}

/// Fields shared by both RELEASE_MEM layouts (dw2–dw7).
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseMemTail {
    /// dw2: destination, interrupt and data selects.
    pub data_control: ReleaseDataControl,
    /// dw3: address bits 31:0.
    pub address_lo: u32,
    /// dw4: address bits 63:32.
    pub address_hi: u32,
    /// dw5: data bits 31:0.
    pub data_lo: u32,
    /// dw6: data bits 63:32.
    pub data_hi: u32,
    /// dw7: interrupt context id.
    pub int_ctxid: u32,
}

impl ReleaseMemTail {
    fn build(a: &ReleaseMemArgs) -> Result<Self, BuildError> {
        const P: &str = "RELEASE_MEM";
        let align = if a.data_sel.bytes() == 8 { 8 } else { 4 };
        check_align(P, "addr", a.addr, align)?;
        if a.int_sel == ReleaseIntSel::SendInterruptOnly && a.data_sel != ReleaseDataSel::None {
            return Err(BuildError::Conflict {
                packet: P,
                reason: "int_sel SEND_INTERRUPT_ONLY requires data_sel NONE",
            });
        }
        let data_control = ReleaseDataControl::new()
            .with_dst_sel(a.dst_sel)
            .with_int_sel_checked(a.int_sel)
            .map_err(|_| enum_overflow(P, "int_sel", a.int_sel.into_bits()))?
            .with_data_sel_checked(a.data_sel)
            .map_err(|_| enum_overflow(P, "data_sel", a.data_sel.into_bits()))?;
        Ok(ReleaseMemTail {
            data_control,
            address_lo: lo32(a.addr),
            address_hi: hi32(a.addr),
            data_lo: lo32(a.data),
            data_hi: hi32(a.data),
            int_ctxid: a.int_ctxid,
        })
    }

    /// Destination address.
    pub const fn addr(&self) -> u64 {
        join(self.address_lo, self.address_hi)
    }

    /// Data (64 bits; only the low 32 are written with `data_sel = Data32`).
    pub const fn data(&self) -> u64 {
        join(self.data_lo, self.data_hi)
    }

    fn validate(&self, gen: GfxGen) -> Result<(), DecodeErrorKind> {
        const P: &str = "RELEASE_MEM";
        let mut reserved = RELEASE_DATA_RESERVED;
        if gen == GfxGen::Gfx9 {
            reserved |= RELEASE_DATA_GFX10_ONLY;
        }
        let c = self.data_control;
        check_reserved(P, 2, c.into_bits(), reserved)?;
        check_enum(P, 2, "int_sel", c.int_sel())?;
        check_enum(P, 2, "data_sel", c.data_sel())?;
        if c.int_sel() == ReleaseIntSel::SendInterruptOnly && c.data_sel() != ReleaseDataSel::None {
            return Err(invalid_field(P, 2, "data_sel", c.data_sel().into_bits()));
        }
        let align_mask = if c.data_sel().bytes() == 8 {
            0b111
        } else {
            0b11
        };
        if c.data_sel() != ReleaseDataSel::None {
            check_reserved(P, 3, self.address_lo, align_mask)?;
        }
        Ok(())
    }
}

zc_packet! {
    /// RELEASE_MEM (0x49), gfx9 layout, 8 dwords, header `0xC0064900` (facts §4.3).
    pub struct ReleaseMemGfx9 {
        /// dw0.
        pub header: Type3Header,
        /// dw1: event and cache actions.
        pub cache: ReleaseCacheGfx9,
        /// dw2–dw7.
        pub tail: ReleaseMemTail,
    }
}
fixed_packet!(
    ReleaseMemGfx9,
    Opcode::RELEASE_MEM,
    8,
    "RELEASE_MEM",
    validate
);

zc_packet! {
    /// RELEASE_MEM (0x49), gfx10/gfx11 layout, 8 dwords, header `0xC0064900`.
    pub struct ReleaseMemGfx10 {
        /// dw0.
        pub header: Type3Header,
        /// dw1: event and GCR cache actions.
        pub cache: ReleaseCacheGfx10,
        /// dw2–dw7.
        pub tail: ReleaseMemTail,
    }
}
fixed_packet!(
    ReleaseMemGfx10,
    Opcode::RELEASE_MEM,
    8,
    "RELEASE_MEM",
    validate
);

impl ReleaseMemGfx9 {
    /// Builds the packet; `cache` carries the cache-action bits (its event fields are
    /// replaced by those of `a`).
    pub fn new(a: &ReleaseMemArgs, cache: ReleaseCacheGfx9) -> Result<Self, BuildError> {
        const P: &str = "RELEASE_MEM";
        let cache = cache
            .with_event_type_checked(a.event_type)
            .map_err(|_| enum_overflow(P, "event_type", a.event_type.into_bits()))?
            .with_event_index_checked(a.event_index)
            .map_err(|_| enum_overflow(P, "event_index", a.event_index.into_bits()))?
            .with_cache_policy(a.cache_policy);
        Ok(ReleaseMemGfx9 {
            header: Self::HEADER,
            cache,
            tail: ReleaseMemTail::build(a)?,
        })
    }

    /// amdgpu's gfx9 fence cache actions: TCL1 | TC | TC_MD | TC_WB (dw1 `0x00238514`
    /// with the usual event).
    pub const fn amdgpu_fence_cache() -> ReleaseCacheGfx9 {
        ReleaseCacheGfx9::new()
            .with_tcl1_action_ena(true)
            .with_tc_action_ena(true)
            .with_tc_md_action_ena(true)
            .with_tc_wb_action_ena(true)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved(
            "RELEASE_MEM",
            1,
            self.cache.into_bits(),
            RELEASE_CACHE_GFX9_RESERVED,
        )?;
        check_enum("RELEASE_MEM", 1, "event_index", self.cache.event_index())?;
        self.tail.validate(GfxGen::Gfx9)
    }
}

impl ReleaseMemGfx10 {
    /// Builds the packet; `cache` carries the GCR bits and flags (its event fields and
    /// cache policy are replaced by those of `a`).
    pub fn new(a: &ReleaseMemArgs, cache: ReleaseCacheGfx10) -> Result<Self, BuildError> {
        const P: &str = "RELEASE_MEM";
        let cache = cache
            .with_event_type_checked(a.event_type)
            .map_err(|_| enum_overflow(P, "event_type", a.event_type.into_bits()))?
            .with_event_index_checked(a.event_index)
            .map_err(|_| enum_overflow(P, "event_index", a.event_index.into_bits()))?
            .with_cache_policy(a.cache_policy);
        Ok(ReleaseMemGfx10 {
            header: Self::HEADER,
            cache,
            tail: ReleaseMemTail::build(a)?,
        })
    }

    /// amdgpu's gfx10/11 fence cache actions: GCR SEQ=1 | GL2_WB | GLM_INV | GLM_WB
    /// (dw1 `0x06603514` with the usual event and cache policy bypass).
    pub const fn amdgpu_fence_cache() -> ReleaseCacheGfx10 {
        ReleaseCacheGfx10::new().with_gcr_cntl(
            ReleaseGcr::new()
                .with_seq(1)
                .with_gl2_wb(true)
                .with_glm_inv(true)
                .with_glm_wb(true),
        )
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved(
            "RELEASE_MEM",
            1,
            self.cache.into_bits(),
            RELEASE_CACHE_GFX10_RESERVED,
        )?;
        check_enum("RELEASE_MEM", 1, "event_index", self.cache.event_index())?;
        self.tail.validate(GfxGen::Gfx10)
    }
}

// ---------------------------------------------------------------------------------------
// ACQUIRE_MEM
// ---------------------------------------------------------------------------------------

/// gfx9 `CP_COHER_CNTL` (ACQUIRE_MEM dw1 `[30:0]`) plus `engine_sel` `[31]`.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct CoherCntl {
    #[bits(3)]
    __: u8,
    /// bit 3: TC non-coherent action.
    pub tc_nc_action_ena: bool,
    /// bit 4: TC write-combine action.
    pub tc_wc_action_ena: bool,
    /// bit 5: TC metadata invalidate.
    pub tc_inv_metadata_action_ena: bool,
    #[bits(9)]
    __: u16,
    /// bit 15: TCL1 volatile action.
    pub tcl1_vol_action_ena: bool,
    #[bits(2)]
    __: u8,
    /// bit 18: TC writeback.
    pub tc_wb_action_ena: bool,
    #[bits(3)]
    __: u8,
    /// bit 22: TCL1 invalidate.
    pub tcl1_action_ena: bool,
    /// bit 23: TC invalidate.
    pub tc_action_ena: bool,
    #[bits(1)]
    __: u8,
    /// bit 25: CB action.
    pub cb_action_ena: bool,
    /// bit 26: DB action.
    pub db_action_ena: bool,
    /// bit 27: scalar cache invalidate.
    pub sh_kcache_action_ena: bool,
    /// bit 28: scalar cache volatile action.
    pub sh_kcache_vol_action_ena: bool,
    /// bit 29: instruction cache invalidate.
    pub sh_icache_action_ena: bool,
    /// bit 30: scalar cache writeback.
    pub sh_kcache_wb_action_ena: bool,
    /// bit 31: engine select (0 ME, 1 PFP).
    pub engine_sel_pfp: bool,
}

const COHER_CNTL_RESERVED: u32 = reserved_mask!(CoherCntl:
    TC_NC_ACTION_ENA_OFFSET / TC_NC_ACTION_ENA_BITS, TC_WC_ACTION_ENA_OFFSET / TC_WC_ACTION_ENA_BITS,
    TC_INV_METADATA_ACTION_ENA_OFFSET / TC_INV_METADATA_ACTION_ENA_BITS,
    TCL1_VOL_ACTION_ENA_OFFSET / TCL1_VOL_ACTION_ENA_BITS, TC_WB_ACTION_ENA_OFFSET / TC_WB_ACTION_ENA_BITS,
    TCL1_ACTION_ENA_OFFSET / TCL1_ACTION_ENA_BITS, TC_ACTION_ENA_OFFSET / TC_ACTION_ENA_BITS,
    CB_ACTION_ENA_OFFSET / CB_ACTION_ENA_BITS, DB_ACTION_ENA_OFFSET / DB_ACTION_ENA_BITS,
    SH_KCACHE_ACTION_ENA_OFFSET / SH_KCACHE_ACTION_ENA_BITS,
    SH_KCACHE_VOL_ACTION_ENA_OFFSET / SH_KCACHE_VOL_ACTION_ENA_BITS,
    SH_ICACHE_ACTION_ENA_OFFSET / SH_ICACHE_ACTION_ENA_BITS,
    SH_KCACHE_WB_ACTION_ENA_OFFSET / SH_KCACHE_WB_ACTION_ENA_BITS,
    ENGINE_SEL_PFP_OFFSET / ENGINE_SEL_PFP_BITS);

impl CoherCntl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = COHER_CNTL_RESERVED;
}

hw_enum! {
    /// GCR `GLI_INV` (instruction cache invalidate mode).
    pub enum GliInv: 2 bits, catch-all Reserved {
        /// No invalidate.
        Nop = 0 => "NOP",
        /// Invalidate all.
        All = 1 => "ALL",
        /// Invalidate a range.
        Range = 2 => "RANGE",
        /// Invalidate first and last lines.
        FirstLast = 3 => "FIRST_LAST",
    }
}

/// gfx10+ `GCR_CNTL` (ACQUIRE_MEM dw7 `[18:0]`).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct AcquireGcr {
    /// `[1:0]` instruction cache invalidate.
    #[bits(2)]
    pub gli_inv: GliInv,
    /// `[3:2]` GL1 range mode.
    #[bits(2)]
    pub gl1_range: u8,
    /// `[4]` GLM writeback.
    pub glm_wb: bool,
    /// `[5]` GLM invalidate.
    pub glm_inv: bool,
    /// `[6]` GLK writeback.
    pub glk_wb: bool,
    /// `[7]` GLK invalidate.
    pub glk_inv: bool,
    /// `[8]` GLV invalidate.
    pub glv_inv: bool,
    /// `[9]` GL1 invalidate.
    pub gl1_inv: bool,
    /// `[10]` GL2 unshared.
    pub gl2_us: bool,
    /// `[12:11]` GL2 range mode.
    #[bits(2)]
    pub gl2_range: u8,
    /// `[13]` GL2 discard.
    pub gl2_discard: bool,
    /// `[14]` GL2 invalidate.
    pub gl2_inv: bool,
    /// `[15]` GL2 writeback.
    pub gl2_wb: bool,
    /// `[17:16]` sequencing.
    #[bits(2)]
    pub seq: u8,
    /// `[18]` range is a physical address.
    pub range_is_pa: bool,
    #[bits(13)]
    __: u16,
}

const ACQUIRE_GCR_RESERVED: u32 = reserved_mask!(AcquireGcr:
    GLI_INV_OFFSET / GLI_INV_BITS, GL1_RANGE_OFFSET / GL1_RANGE_BITS, GLM_WB_OFFSET / GLM_WB_BITS,
    GLM_INV_OFFSET / GLM_INV_BITS, GLK_WB_OFFSET / GLK_WB_BITS, GLK_INV_OFFSET / GLK_INV_BITS,
    GLV_INV_OFFSET / GLV_INV_BITS, GL1_INV_OFFSET / GL1_INV_BITS, GL2_US_OFFSET / GL2_US_BITS,
    GL2_RANGE_OFFSET / GL2_RANGE_BITS, GL2_DISCARD_OFFSET / GL2_DISCARD_BITS,
    GL2_INV_OFFSET / GL2_INV_BITS, GL2_WB_OFFSET / GL2_WB_BITS, SEQ_OFFSET / SEQ_BITS,
    RANGE_IS_PA_OFFSET / RANGE_IS_PA_BITS);

impl AcquireGcr {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = ACQUIRE_GCR_RESERVED;
}

/// ACQUIRE_MEM range and poll interval (dw2–dw6 of both layouts).
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquireRange {
    /// dw2: coherence size bits 31:0.
    pub coher_size: u32,
    /// dw3: coherence size bits 39:32 in `[7:0]`. Bits `[31:8]` are not checked:
    /// amdgpu writes `0xFFFFFF` here.
    pub coher_size_hi: u32,
    /// dw4: coherence base bits 31:0.
    pub coher_base_lo: u32,
    /// dw5: coherence base bits 55:32 in `[23:0]`.
    pub coher_base_hi: u32,
    /// dw6: poll interval `[15:0]`.
    pub poll_interval: u32,
}

impl AcquireRange {
    /// amdgpu's "everything" range (size `0xFFFFFFFF`, size_hi `0xFFFFFF`, base 0) with
    /// the given poll interval.
    pub const fn full(poll_interval: u16) -> Self {
        AcquireRange {
            coher_size: 0xFFFF_FFFF,
            coher_size_hi: 0x00FF_FFFF,
            coher_base_lo: 0,
            coher_base_hi: 0,
            poll_interval: poll_interval as u32,
        }
    }

    /// A range from a 40-bit size and 56-bit base (both in the units the CP uses).
    pub fn new(size: u64, base: u64, poll_interval: u16) -> Result<Self, BuildError> {
        check_bits("ACQUIRE_MEM", "coher_size", size, 40)?;
        check_bits("ACQUIRE_MEM", "coher_base", base, 56)?;
        Ok(AcquireRange {
            coher_size: lo32(size),
            coher_size_hi: hi32(size),
            coher_base_lo: lo32(base),
            coher_base_hi: hi32(base),
            poll_interval: poll_interval.into(),
        })
    }

    /// Coherence size (`coher_size_hi[7:0] << 32 | coher_size`).
    pub const fn size(&self) -> u64 {
        join(self.coher_size, self.coher_size_hi & 0xFF)
    }

    /// Coherence base.
    pub const fn base(&self) -> u64 {
        join(self.coher_base_lo, self.coher_base_hi & 0x00FF_FFFF)
    }

    fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved("ACQUIRE_MEM", 5, self.coher_base_hi, 0xFF00_0000)?;
        check_reserved("ACQUIRE_MEM", 6, self.poll_interval, 0xFFFF_0000)
    }
}

zc_packet! {
    /// ACQUIRE_MEM (0x58), gfx9 layout, 7 dwords, header `0xC0055800` (facts §4.4).
    pub struct AcquireMemGfx9 {
        /// dw0.
        pub header: Type3Header,
        /// dw1: `CP_COHER_CNTL`.
        pub coher_cntl: CoherCntl,
        /// dw2–dw6.
        pub range: AcquireRange,
    }
}
fixed_packet!(
    AcquireMemGfx9,
    Opcode::ACQUIRE_MEM,
    7,
    "ACQUIRE_MEM",
    validate
);

zc_packet! {
    /// ACQUIRE_MEM (0x58), gfx10/gfx11 layout, 8 dwords, header `0xC0065800`.
    pub struct AcquireMemGfx10 {
        /// dw0.
        pub header: Type3Header,
        /// dw1: unused on gfx10+ (0).
        pub coher_cntl: u32,
        /// dw2–dw6.
        pub range: AcquireRange,
        /// dw7: `GCR_CNTL`.
        pub gcr_cntl: AcquireGcr,
    }
}
fixed_packet!(
    AcquireMemGfx10,
    Opcode::ACQUIRE_MEM,
    8,
    "ACQUIRE_MEM",
    validate
);

impl AcquireMemGfx9 {
    /// Builds the packet.
    pub const fn new(coher_cntl: CoherCntl, range: AcquireRange) -> Self {
        AcquireMemGfx9 {
            header: Self::HEADER,
            coher_cntl,
            range,
        }
    }

    /// amdgpu's gfx9 full invalidate: ICACHE | KCACHE | TC | TCL1 | TC_WB (`0x28C40000`).
    pub const fn amdgpu_coher_cntl() -> CoherCntl {
        CoherCntl::new()
            .with_sh_icache_action_ena(true)
            .with_sh_kcache_action_ena(true)
            .with_tc_action_ena(true)
            .with_tcl1_action_ena(true)
            .with_tc_wb_action_ena(true)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved(
            "ACQUIRE_MEM",
            1,
            self.coher_cntl.into_bits(),
            COHER_CNTL_RESERVED,
        )?;
        self.range.validate()
    }
}

impl AcquireMemGfx10 {
    /// Builds the packet.
    pub const fn new(gcr_cntl: AcquireGcr, range: AcquireRange) -> Self {
        AcquireMemGfx10 {
            header: Self::HEADER,
            coher_cntl: 0,
            range,
            gcr_cntl,
        }
    }

    /// amdgpu's gfx10+ full invalidate (`0xC3B1`): GL2_INV | GL2_WB | GLM_INV | GLM_WB |
    /// GL1_INV | GLV_INV | GLK_INV | GLI_INV(ALL).
    pub const fn amdgpu_gcr() -> AcquireGcr {
        AcquireGcr::new()
            .with_gl2_inv(true)
            .with_gl2_wb(true)
            .with_glm_inv(true)
            .with_glm_wb(true)
            .with_gl1_inv(true)
            .with_glv_inv(true)
            .with_glk_inv(true)
            .with_gli_inv(GliInv::All)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved("ACQUIRE_MEM", 1, self.coher_cntl, u32::MAX)?;
        self.range.validate()?;
        check_reserved(
            "ACQUIRE_MEM",
            7,
            self.gcr_cntl.into_bits(),
            ACQUIRE_GCR_RESERVED,
        )
    }
}

// ---------------------------------------------------------------------------------------
// WAIT_REG_MEM / WAIT_REG_MEM64
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `mem_space` of WAIT_REG_MEM (dw1 `[5:4]`).
    pub enum WaitMemSpace: 2 bits, catch-all Reserved {
        /// Poll a register.
        Register = 0 => "REGISTER_SPACE",
        /// Poll memory.
        Memory = 1 => "MEMORY_SPACE",
    }
}

hw_enum! {
    /// `operation` of WAIT_REG_MEM (dw1 `[7:6]`).
    pub enum WaitOperation: 2 bits, catch-all Reserved {
        /// Wait on a register or memory.
        WaitRegMem = 0 => "WAIT_REG_MEM",
        /// Write a register, then wait on another.
        WrWaitWrReg = 1 => "WR_WAIT_WR_REG",
        /// Wait on memory, preemptable.
        WaitMemPreemptable = 3 => "WAIT_MEM_PREEMPTABLE",
    }
}

/// WAIT_REG_MEM dw1 (also WAIT_REG_MEM64).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct WaitRegMemControl {
    /// `[2:0]` comparison.
    #[bits(3)]
    pub function: CompareFunction,
    #[bits(1)]
    __: u8,
    /// `[5:4]` register or memory.
    #[bits(2)]
    pub mem_space: WaitMemSpace,
    /// `[7:6]` operation.
    #[bits(2)]
    pub operation: WaitOperation,
    /// `[9:8]` engine (gfx ring; ME on MEC).
    #[bits(2)]
    pub engine_sel: EngineSel,
    #[bits(12)]
    __: u16,
    /// `[23:22]` MES interrupt pipe (gfx10+).
    #[bits(2)]
    pub mes_intr_pipe: u8,
    /// `[24]` MES action (gfx10+).
    pub mes_action: bool,
    /// `[26:25]` cache policy (gfx10+).
    #[bits(2)]
    pub cache_policy: CachePolicy,
    #[bits(5)]
    __: u8,
}

const WAIT_CONTROL_RESERVED: u32 = reserved_mask!(WaitRegMemControl:
    FUNCTION_OFFSET / FUNCTION_BITS, MEM_SPACE_OFFSET / MEM_SPACE_BITS,
    OPERATION_OFFSET / OPERATION_BITS, ENGINE_SEL_OFFSET / ENGINE_SEL_BITS,
    MES_INTR_PIPE_OFFSET / MES_INTR_PIPE_BITS, MES_ACTION_OFFSET / MES_ACTION_BITS,
    CACHE_POLICY_OFFSET / CACHE_POLICY_BITS);

impl WaitRegMemControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = WAIT_CONTROL_RESERVED;
}
const WAIT_CONTROL_GFX10_ONLY: u32 = (0b11 << WaitRegMemControl::MES_INTR_PIPE_OFFSET)
    | (1 << WaitRegMemControl::MES_ACTION_OFFSET)
    | (0b11 << WaitRegMemControl::CACHE_POLICY_OFFSET);

/// WAIT_REG_MEM poll-interval dword (dw6; dw8 of WAIT_REG_MEM64).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct WaitPollControl {
    /// `[15:0]` poll interval.
    pub poll_interval: u16,
    #[bits(15)]
    __: u16,
    /// `[31]` optimize ACE offload mode (kfdtest sets it).
    pub optimize_ace_offload_mode: bool,
}

const WAIT_POLL_RESERVED: u32 = reserved_mask!(WaitPollControl:
    POLL_INTERVAL_OFFSET / POLL_INTERVAL_BITS,
    OPTIMIZE_ACE_OFFLOAD_MODE_OFFSET / OPTIMIZE_ACE_OFFLOAD_MODE_BITS);

impl WaitPollControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = WAIT_POLL_RESERVED;
}

/// What a WAIT_REG_MEM polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollTarget {
    /// A memory address.
    Memory(u64),
    /// A register dword offset; `write_reg` is the register written first by
    /// `WR_WAIT_WR_REG` (dw3).
    Register {
        /// Polled register.
        reg: u32,
        /// Second register (dw3 `[17:0]`).
        write_reg: u32,
    },
}

zc_packet! {
    /// WAIT_REG_MEM (0x3C), 7 dwords, header `0xC0053C00` (facts §4.5).
    pub struct WaitRegMem {
        /// dw0.
        pub header: Type3Header,
        /// dw1.
        pub control: WaitRegMemControl,
        /// dw2: poll address bits 31:0 (dword aligned) or register `[17:0]`.
        pub poll_addr_lo: u32,
        /// dw3: poll address bits 63:32 or second register `[17:0]`.
        pub poll_addr_hi: u32,
        /// dw4: reference.
        pub reference: u32,
        /// dw5: mask.
        pub mask: u32,
        /// dw6: poll interval.
        pub poll: WaitPollControl,
    }
}
fixed_packet!(
    WaitRegMem,
    Opcode::WAIT_REG_MEM,
    7,
    "WAIT_REG_MEM",
    validate_gen
);

/// Field values of a WAIT_REG_MEM (the 64-bit form takes 64-bit `reference`/`mask`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitArgs {
    /// Comparison.
    pub function: CompareFunction,
    /// Operation.
    pub operation: WaitOperation,
    /// What to poll.
    pub target: PollTarget,
    /// Poll interval.
    pub poll_interval: u16,
    /// Optimize ACE offload mode.
    pub optimize_ace_offload_mode: bool,
}

fn wait_words(
    p: &'static str,
    a: &WaitArgs,
    align: u64,
) -> Result<(WaitRegMemControl, u32, u32), BuildError> {
    let (space, lo, hi) = match a.target {
        PollTarget::Memory(addr) => {
            check_align(p, "poll_addr", addr, align)?;
            (WaitMemSpace::Memory, lo32(addr), hi32(addr))
        }
        PollTarget::Register { reg, write_reg } => {
            check_bits(p, "reg", reg.into(), 18)?;
            check_bits(p, "write_reg", write_reg.into(), 18)?;
            (WaitMemSpace::Register, reg, write_reg)
        }
    };
    let control = WaitRegMemControl::new()
        .with_function_checked(a.function)
        .map_err(|_| enum_overflow(p, "function", a.function.into_bits()))?
        .with_operation_checked(a.operation)
        .map_err(|_| enum_overflow(p, "operation", a.operation.into_bits()))?
        .with_mem_space(space);
    Ok((control, lo, hi))
}

fn wait_target(control: WaitRegMemControl, lo: u32, hi: u32) -> PollTarget {
    match control.mem_space() {
        WaitMemSpace::Memory => PollTarget::Memory(join(lo, hi)),
        _ => PollTarget::Register {
            reg: lo & 0x3FFFF,
            write_reg: hi & 0x3FFFF,
        },
    }
}

fn wait_validate(
    p: &'static str,
    gen: GfxGen,
    control: WaitRegMemControl,
    [lo, hi]: [u32; 2],
    align_mask: u32,
    (poll, poll_dw): (WaitPollControl, usize),
) -> Result<(), DecodeErrorKind> {
    let mut reserved = WAIT_CONTROL_RESERVED;
    if gen == GfxGen::Gfx9 {
        reserved |= WAIT_CONTROL_GFX10_ONLY;
    }
    check_reserved(p, 1, control.into_bits(), reserved)?;
    check_enum(p, 1, "function", control.function())?;
    check_enum(p, 1, "mem_space", control.mem_space())?;
    check_enum(p, 1, "operation", control.operation())?;
    check_enum(p, 1, "engine_sel", control.engine_sel())?;
    match control.mem_space() {
        WaitMemSpace::Memory => check_reserved(p, 2, lo, align_mask)?,
        _ => {
            check_reserved(p, 2, lo, !0x3FFFF)?;
            check_reserved(p, 3, hi, !0x3FFFF)?;
        }
    }
    check_reserved(p, poll_dw, poll.into_bits(), WAIT_POLL_RESERVED)
}

impl WaitRegMem {
    /// Builds the packet (32-bit reference and mask).
    pub fn new(a: &WaitArgs, reference: u32, mask: u32) -> Result<Self, BuildError> {
        let (control, lo, hi) = wait_words("WAIT_REG_MEM", a, 4)?;
        Ok(WaitRegMem {
            header: Self::HEADER,
            control,
            poll_addr_lo: lo,
            poll_addr_hi: hi,
            reference,
            mask,
            poll: WaitPollControl::new()
                .with_poll_interval(a.poll_interval)
                .with_optimize_ace_offload_mode(a.optimize_ace_offload_mode),
        })
    }

    /// What the packet polls.
    pub fn target(&self) -> PollTarget {
        wait_target(self.control, self.poll_addr_lo, self.poll_addr_hi)
    }

    /// Checks reserved bits and field values as the decoder for `gen` does.
    pub fn validate(&self, gen: GfxGen) -> Result<(), DecodeErrorKind> {
        let addr = [self.poll_addr_lo, self.poll_addr_hi];
        wait_validate(
            "WAIT_REG_MEM",
            gen,
            self.control,
            addr,
            0b11,
            (self.poll, 6),
        )
    }
}

zc_packet! {
    /// WAIT_REG_MEM64 (0x93, gfx10+ MEC header), 9 dwords: 64-bit reference and mask,
    /// qword-aligned address (facts §4.5).
    pub struct WaitRegMem64 {
        /// dw0.
        pub header: Type3Header,
        /// dw1.
        pub control: WaitRegMemControl,
        /// dw2: poll address bits 31:0 (qword aligned) or register.
        pub poll_addr_lo: u32,
        /// dw3: poll address bits 63:32 or second register.
        pub poll_addr_hi: u32,
        /// dw4: reference bits 31:0.
        pub reference_lo: u32,
        /// dw5: reference bits 63:32.
        pub reference_hi: u32,
        /// dw6: mask bits 31:0.
        pub mask_lo: u32,
        /// dw7: mask bits 63:32.
        pub mask_hi: u32,
        /// dw8: poll interval.
        pub poll: WaitPollControl,
    }
}
fixed_packet!(
    WaitRegMem64,
    Opcode::WAIT_REG_MEM64,
    9,
    "WAIT_REG_MEM64",
    validate_gen
);

impl WaitRegMem64 {
    /// Builds the packet (64-bit reference and mask).
    pub fn new(a: &WaitArgs, reference: u64, mask: u64) -> Result<Self, BuildError> {
        let (control, lo, hi) = wait_words("WAIT_REG_MEM64", a, 8)?;
        Ok(WaitRegMem64 {
            header: Self::HEADER,
            control,
            poll_addr_lo: lo,
            poll_addr_hi: hi,
            reference_lo: lo32(reference),
            reference_hi: hi32(reference),
            mask_lo: lo32(mask),
            mask_hi: hi32(mask),
            poll: WaitPollControl::new()
                .with_poll_interval(a.poll_interval)
                .with_optimize_ace_offload_mode(a.optimize_ace_offload_mode),
        })
    }

    /// What the packet polls.
    pub fn target(&self) -> PollTarget {
        wait_target(self.control, self.poll_addr_lo, self.poll_addr_hi)
    }

    /// 64-bit reference.
    pub const fn reference(&self) -> u64 {
        join(self.reference_lo, self.reference_hi)
    }

    /// 64-bit mask.
    pub const fn mask(&self) -> u64 {
        join(self.mask_lo, self.mask_hi)
    }

    /// Checks reserved bits and field values as the decoder for `gen` does.
    pub fn validate(&self, gen: GfxGen) -> Result<(), DecodeErrorKind> {
        let addr = [self.poll_addr_lo, self.poll_addr_hi];
        wait_validate(
            "WAIT_REG_MEM64",
            gen,
            self.control,
            addr,
            0b111,
            (self.poll, 8),
        )
    }
}

// ---------------------------------------------------------------------------------------
// INDIRECT_BUFFER
// ---------------------------------------------------------------------------------------

/// INDIRECT_BUFFER dw3.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct IndirectBufferControl {
    /// `[19:0]` IB size in dwords.
    #[bits(20)]
    pub ib_size: u32,
    /// `[20]` chain.
    pub chain: bool,
    /// `[21]` offload polling (MEC) / PRE_ENB (gfx ring).
    pub offload_polling: bool,
    /// `[22]` volatile.
    pub volatile: bool,
    /// `[23]` valid (must be 1).
    pub valid: bool,
    /// `[27:24]` VMID (0 for user queues).
    #[bits(4)]
    pub vmid: u8,
    /// `[29:28]` cache policy.
    #[bits(2)]
    pub cache_policy: CachePolicy,
    #[bits(1)]
    __: u8,
    /// `[31]` privileged.
    pub privileged: bool,
}

const IB_CONTROL_RESERVED: u32 = reserved_mask!(IndirectBufferControl:
    IB_SIZE_OFFSET / IB_SIZE_BITS, CHAIN_OFFSET / CHAIN_BITS, OFFLOAD_POLLING_OFFSET / OFFLOAD_POLLING_BITS,
    VOLATILE_OFFSET / VOLATILE_BITS, VALID_OFFSET / VALID_BITS, VMID_OFFSET / VMID_BITS,
    CACHE_POLICY_OFFSET / CACHE_POLICY_BITS, PRIVILEGED_OFFSET / PRIVILEGED_BITS);

impl IndirectBufferControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = IB_CONTROL_RESERVED;
}

zc_packet! {
    /// INDIRECT_BUFFER (0x3F), 4 dwords, header `0xC0023F00` (facts §4.6).
    pub struct IndirectBuffer {
        /// dw0.
        pub header: Type3Header,
        /// dw1: IB address bits 31:2 (bits `[1:0]` = swap, 0 on little endian).
        pub ib_base_lo: u32,
        /// dw2: IB address bits 63:32.
        pub ib_base_hi: u32,
        /// dw3: size and flags.
        pub control: IndirectBufferControl,
    }
}
fixed_packet!(
    IndirectBuffer,
    Opcode::INDIRECT_BUFFER,
    4,
    "INDIRECT_BUFFER",
    validate
);

impl IndirectBuffer {
    /// An IB of `size_dwords` (20 bits) at `addr` (4-byte aligned), `valid = 1`, VMID 0;
    /// other flags come from `control` (its size and valid bit are replaced).
    pub fn new(
        addr: u64,
        size_dwords: u32,
        control: IndirectBufferControl,
    ) -> Result<Self, BuildError> {
        const P: &str = "INDIRECT_BUFFER";
        check_align(P, "ib_base", addr, 4)?;
        check_bits(P, "ib_size", size_dwords.into(), 20)?;
        Ok(IndirectBuffer {
            header: Self::HEADER,
            ib_base_lo: lo32(addr),
            ib_base_hi: hi32(addr),
            control: control.with_ib_size(size_dwords).with_valid(true),
        })
    }

    /// IB address.
    pub const fn ib_addr(&self) -> u64 {
        join(self.ib_base_lo, self.ib_base_hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        const P: &str = "INDIRECT_BUFFER";
        check_reserved(P, 1, self.ib_base_lo, 0b11)?;
        check_reserved(P, 3, self.control.into_bits(), IB_CONTROL_RESERVED)?;
        if !self.control.valid() {
            return Err(invalid_field(P, 3, "valid", 0));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// COPY_DATA
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `src_sel` of COPY_DATA (dw1 `[3:0]`).
    pub enum CopySrcSel: 4 bits, catch-all Reserved {
        /// Memory-mapped register.
        MemMappedRegister = 0 => "MEM_MAPPED_REGISTER",
        /// Memory (TC L2; "obsolete" name on gfx10).
        Memory = 1 => "MEMORY",
        /// TC L2.
        TcL2 = 2 => "TC_L2",
        /// GDS.
        Gds = 3 => "GDS",
        /// Performance counters.
        Perfcounters = 4 => "PERFCOUNTERS",
        /// Immediate data (dw2/dw3).
        ImmediateData = 5 => "IMMEDIATE_DATA",
        /// Atomic return data.
        AtomicReturnData = 6 => "ATOMIC_RETURN_DATA",
        /// GDS atomic return data 0.
        GdsAtomicReturnData0 = 7 => "GDS_ATOMIC_RETURN_DATA0",
        /// GDS atomic return data 1.
        GdsAtomicReturnData1 = 8 => "GDS_ATOMIC_RETURN_DATA1",
        /// GPU clock count.
        GpuClockCount = 9 => "GPU_CLOCK_COUNT",
        /// System clock count.
        SystemClockCount = 10 => "SYSTEM_CLOCK_COUNT",
    }
}

hw_enum! {
    /// `dst_sel` of COPY_DATA (dw1 `[11:8]`).
    pub enum CopyDstSel: 4 bits, catch-all Reserved {
        /// Memory-mapped register.
        MemMappedRegister = 0 => "MEM_MAPPED_REGISTER",
        /// TC L2.
        TcL2 = 2 => "TC_L2",
        /// GDS.
        Gds = 3 => "GDS",
        /// Performance counters.
        Perfcounters = 4 => "PERFCOUNTERS",
        /// Memory.
        Memory = 5 => "MEMORY",
        /// Memory-mapped register (DC).
        MemMappedRegisterDc = 6 => "MEM_MAPPED_REG_DC",
    }
}

hw_enum! {
    /// `count_sel` of COPY_DATA (dw1 `[16]`).
    pub enum CopyCountSel: 1 bits, catch-all Reserved {
        /// 32-bit copy.
        Bits32 = 0 => "32_BITS",
        /// 64-bit copy.
        Bits64 = 1 => "64_BITS",
    }
}

/// COPY_DATA dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct CopyDataControl {
    /// `[3:0]` source.
    #[bits(4)]
    pub src_sel: CopySrcSel,
    #[bits(4)]
    __: u8,
    /// `[11:8]` destination.
    #[bits(4)]
    pub dst_sel: CopyDstSel,
    #[bits(1)]
    __: u8,
    /// `[14:13]` source cache policy.
    #[bits(2)]
    pub src_cache_policy: CachePolicy,
    #[bits(1)]
    __: u8,
    /// `[16]` 32 or 64 bits.
    #[bits(1)]
    pub count_sel: CopyCountSel,
    #[bits(3)]
    __: u8,
    /// `[20]` wait for write confirmation.
    pub wr_confirm: bool,
    #[bits(4)]
    __: u8,
    /// `[26:25]` destination cache policy.
    #[bits(2)]
    pub dst_cache_policy: CachePolicy,
    #[bits(2)]
    __: u8,
    /// `[29]` PQ execution status.
    pub pq_exe_status: bool,
    #[bits(2)]
    __: u8,
}

const COPY_CONTROL_RESERVED: u32 = reserved_mask!(CopyDataControl:
    SRC_SEL_OFFSET / SRC_SEL_BITS, DST_SEL_OFFSET / DST_SEL_BITS,
    SRC_CACHE_POLICY_OFFSET / SRC_CACHE_POLICY_BITS, COUNT_SEL_OFFSET / COUNT_SEL_BITS,
    WR_CONFIRM_OFFSET / WR_CONFIRM_BITS, DST_CACHE_POLICY_OFFSET / DST_CACHE_POLICY_BITS,
    PQ_EXE_STATUS_OFFSET / PQ_EXE_STATUS_BITS);

impl CopyDataControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = COPY_CONTROL_RESERVED;
}

zc_packet! {
    /// COPY_DATA (0x40), 6 dwords, header `0xC0044000` (facts §4.7).
    pub struct CopyData {
        /// dw0.
        pub header: Type3Header,
        /// dw1.
        pub control: CopyDataControl,
        /// dw2: source address bits 31:0 / register `[17:0]` / immediate bits 31:0.
        pub src_lo: u32,
        /// dw3: source address bits 63:32 / immediate bits 63:32.
        pub src_hi: u32,
        /// dw4: destination address bits 31:0 / register `[17:0]`.
        pub dst_lo: u32,
        /// dw5: destination address bits 63:32.
        pub dst_hi: u32,
    }
}
fixed_packet!(CopyData, Opcode::COPY_DATA, 6, "COPY_DATA", validate);

fn copy_src_is_memory(sel: CopySrcSel) -> bool {
    matches!(sel, CopySrcSel::Memory | CopySrcSel::TcL2)
}

fn copy_dst_is_memory(sel: CopyDstSel) -> bool {
    matches!(sel, CopyDstSel::Memory | CopyDstSel::TcL2)
}

impl CopyData {
    /// Builds the packet from `control` and the raw source/destination operands
    /// (addresses, register offsets or an immediate, per the selects). Memory operands
    /// must be 4-byte aligned (8-byte for 64-bit copies).
    pub fn new(control: CopyDataControl, src: u64, dst: u64) -> Result<Self, BuildError> {
        const P: &str = "COPY_DATA";
        let align = if control.count_sel() == CopyCountSel::Bits64 {
            8
        } else {
            4
        };
        if copy_src_is_memory(control.src_sel()) {
            check_align(P, "src_addr", src, align)?;
        }
        if copy_dst_is_memory(control.dst_sel()) {
            check_align(P, "dst_addr", dst, align)?;
        }
        Ok(CopyData {
            header: Self::HEADER,
            control,
            src_lo: lo32(src),
            src_hi: hi32(src),
            dst_lo: lo32(dst),
            dst_hi: hi32(dst),
        })
    }

    /// Source operand (dw2/dw3 joined).
    pub const fn src(&self) -> u64 {
        join(self.src_lo, self.src_hi)
    }

    /// Destination operand (dw4/dw5 joined).
    pub const fn dst(&self) -> u64 {
        join(self.dst_lo, self.dst_hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        const P: &str = "COPY_DATA";
        let c = self.control;
        check_reserved(P, 1, c.into_bits(), COPY_CONTROL_RESERVED)?;
        check_enum(P, 1, "src_sel", c.src_sel())?;
        check_enum(P, 1, "dst_sel", c.dst_sel())?;
        let align = if c.count_sel() == CopyCountSel::Bits64 {
            0b111
        } else {
            0b11
        };
        if copy_src_is_memory(c.src_sel()) {
            check_reserved(P, 2, self.src_lo, align)?;
        }
        if copy_dst_is_memory(c.dst_sel()) {
            check_reserved(P, 4, self.dst_lo, align)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// DMA_DATA
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `dst_sel` of DMA_DATA (dw1 `[21:20]`).
    pub enum DmaDstSel: 2 bits, catch-all Reserved {
        /// Destination address (DAS).
        DstAddr = 0 => "DST_ADDR",
        /// GDS.
        Gds = 1 => "GDS",
        /// Nowhere.
        Nowhere = 2 => "NOWHERE",
        /// Destination address via L2.
        DstAddrTcL2 = 3 => "DST_ADDR_TC_L2",
    }
}

hw_enum! {
    /// `src_sel` of DMA_DATA (dw1 `[30:29]`).
    pub enum DmaSrcSel: 2 bits, catch-all Reserved {
        /// Source address (SAS).
        SrcAddr = 0 => "SRC_ADDR",
        /// GDS.
        Gds = 1 => "GDS",
        /// Immediate 32-bit data in dw2.
        Data = 2 => "DATA",
        /// Source address via L2.
        SrcAddrTcL2 = 3 => "SRC_ADDR_TC_L2",
    }
}

/// DMA_DATA dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct DmaDataControl {
    /// `[0]` engine (0 ME, 1 PFP; gfx ring).
    pub engine_pfp: bool,
    #[bits(12)]
    __: u16,
    /// `[14:13]` source cache policy.
    #[bits(2)]
    pub src_cache_policy: CachePolicy,
    #[bits(5)]
    __: u8,
    /// `[21:20]` destination.
    #[bits(2)]
    pub dst_sel: DmaDstSel,
    #[bits(3)]
    __: u8,
    /// `[26:25]` destination cache policy.
    #[bits(2)]
    pub dst_cache_policy: CachePolicy,
    #[bits(2)]
    __: u8,
    /// `[30:29]` source.
    #[bits(2)]
    pub src_sel: DmaSrcSel,
    /// `[31]` CP sync.
    pub cp_sync: bool,
}

const DMA_CONTROL_RESERVED: u32 = reserved_mask!(DmaDataControl:
    ENGINE_PFP_OFFSET / ENGINE_PFP_BITS, SRC_CACHE_POLICY_OFFSET / SRC_CACHE_POLICY_BITS,
    DST_SEL_OFFSET / DST_SEL_BITS, DST_CACHE_POLICY_OFFSET / DST_CACHE_POLICY_BITS,
    SRC_SEL_OFFSET / SRC_SEL_BITS, CP_SYNC_OFFSET / CP_SYNC_BITS);

impl DmaDataControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = DMA_CONTROL_RESERVED;
}

/// DMA_DATA dw6: byte count and address-space flags.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct DmaDataCommand {
    /// `[25:0]` bytes to copy (gfx9: keep ≤ 2 MiB − 1, facts §4.8).
    #[bits(26)]
    pub byte_count: u32,
    /// `[26]` source address space is a register.
    pub sas: bool,
    /// `[27]` destination address space is a register.
    pub das: bool,
    /// `[28]` do not increment the source address.
    pub saic: bool,
    /// `[29]` do not increment the destination address.
    pub daic: bool,
    /// `[30]` wait for prior writes (RAW).
    pub raw_wait: bool,
    /// `[31]` disable write confirm.
    pub dis_wc: bool,
}

zc_packet! {
    /// DMA_DATA (0x50), 7 dwords, header `0xC0055000` (facts §4.8).
    pub struct DmaData {
        /// dw0.
        pub header: Type3Header,
        /// dw1.
        pub control: DmaDataControl,
        /// dw2: source address bits 31:0, or the 32-bit fill data (`src_sel = DATA`).
        pub src_addr_lo: u32,
        /// dw3: source address bits 63:32.
        pub src_addr_hi: u32,
        /// dw4: destination address bits 31:0.
        pub dst_addr_lo: u32,
        /// dw5: destination address bits 63:32.
        pub dst_addr_hi: u32,
        /// dw6: byte count and flags.
        pub command: DmaDataCommand,
    }
}
fixed_packet!(DmaData, Opcode::DMA_DATA, 7, "DMA_DATA", validate);

/// Largest DMA_DATA byte count that is safe on gfx9 (`[20:0]`, facts §4.8/§10.15).
pub const DMA_DATA_GFX9_MAX_BYTES: u32 = (1 << 21) - 1;

impl DmaData {
    /// Builds the packet. `command.byte_count` must fit 26 bits, and 21 bits on gfx9
    /// (the gfx9 header documents a narrower field).
    pub fn new(
        gen: GfxGen,
        control: DmaDataControl,
        src: u64,
        dst: u64,
        command: DmaDataCommand,
    ) -> Result<Self, BuildError> {
        if gen == GfxGen::Gfx9 && command.byte_count() > DMA_DATA_GFX9_MAX_BYTES {
            return Err(BuildError::FieldOutOfRange {
                packet: "DMA_DATA",
                field: "byte_count",
                value: command.byte_count().into(),
                max: DMA_DATA_GFX9_MAX_BYTES.into(),
            });
        }
        Ok(DmaData {
            header: Self::HEADER,
            control,
            src_addr_lo: lo32(src),
            src_addr_hi: hi32(src),
            dst_addr_lo: lo32(dst),
            dst_addr_hi: hi32(dst),
            command,
        })
    }

    /// Source address (or fill data in the low 32 bits).
    pub const fn src(&self) -> u64 {
        join(self.src_addr_lo, self.src_addr_hi)
    }

    /// Destination address.
    pub const fn dst(&self) -> u64 {
        join(self.dst_addr_lo, self.dst_addr_hi)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved(
            "DMA_DATA",
            1,
            self.control.into_bits(),
            DMA_CONTROL_RESERVED,
        )
    }
}

// ---------------------------------------------------------------------------------------
// EVENT_WRITE
// ---------------------------------------------------------------------------------------

hw_enum! {
    /// `event_index` of EVENT_WRITE (dw1 `[11:8]`). Open: graphics-ring indices exist.
    pub enum EventWriteIndex: 4 bits, catch-all Other {
        /// Other events.
        Other0 = 0 => "OTHER",
        /// Sample pipeline statistics.
        SamplePipelinestat = 2 => "SAMPLE_PIPELINESTAT",
        /// CS/VS/PS partial flush.
        CsVsPsPartialFlush = 4 => "CS_VS_PS_PARTIAL_FLUSH",
        /// Sample stream-out statistics.
        SampleStreamoutstats = 8 => "SAMPLE_STREAMOUTSTATS",
        /// Sample stream-out statistics 1.
        SampleStreamoutstats1 = 9 => "SAMPLE_STREAMOUTSTATS1",
        /// Sample stream-out statistics 2.
        SampleStreamoutstats2 = 10 => "SAMPLE_STREAMOUTSTATS2",
        /// Sample stream-out statistics 3.
        SampleStreamoutstats3 = 11 => "SAMPLE_STREAMOUTSTATS3",
    }
}

/// EVENT_WRITE dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct EventWriteControl {
    /// `[5:0]` event type.
    #[bits(6)]
    pub event_type: EventType,
    #[bits(2)]
    __: u8,
    /// `[11:8]` event index.
    #[bits(4)]
    pub event_index: EventWriteIndex,
    #[bits(17)]
    __: u32,
    /// `[30:29]` sample pipeline-stat counter mode.
    #[bits(2)]
    pub samp_plst_cntr_mode: u8,
    /// `[31]` offload enable.
    pub offload_enable: bool,
}

const EVENT_WRITE_RESERVED: u32 = reserved_mask!(EventWriteControl:
    EVENT_TYPE_OFFSET / EVENT_TYPE_BITS, EVENT_INDEX_OFFSET / EVENT_INDEX_BITS,
    SAMP_PLST_CNTR_MODE_OFFSET / SAMP_PLST_CNTR_MODE_BITS, OFFLOAD_ENABLE_OFFSET / OFFLOAD_ENABLE_BITS);

impl EventWriteControl {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = EVENT_WRITE_RESERVED;
}

zc_packet! {
    /// EVENT_WRITE (0x46) without address, 2 dwords, header `0xC0004600` (facts §4.9).
    pub struct EventWrite {
        /// dw0.
        pub header: Type3Header,
        /// dw1.
        pub control: EventWriteControl,
    }
}
fixed_packet!(EventWrite, Opcode::EVENT_WRITE, 2, "EVENT_WRITE", validate);

zc_packet! {
    /// EVENT_WRITE (0x46) of a sampling event, with an address: 4 dwords.
    pub struct EventWriteAddr {
        /// dw0.
        pub header: Type3Header,
        /// dw1.
        pub control: EventWriteControl,
        /// dw2: address bits 31:0 (qword aligned).
        pub address_lo: u32,
        /// dw3: address bits 63:32.
        pub address_hi: u32,
    }
}
fixed_packet!(
    EventWriteAddr,
    Opcode::EVENT_WRITE,
    4,
    "EVENT_WRITE",
    validate
);

impl EventWrite {
    /// An event without address.
    pub fn new(event_type: EventType, event_index: EventWriteIndex) -> Result<Self, BuildError> {
        Ok(EventWrite {
            header: Self::HEADER,
            control: event_control(event_type, event_index)?,
        })
    }

    /// `CS_PARTIAL_FLUSH` with index 4: dw1 `0x00000407`.
    pub const fn cs_partial_flush() -> Self {
        EventWrite {
            header: Self::HEADER,
            control: EventWriteControl::new()
                .with_event_type(EventType::CsPartialFlush)
                .with_event_index(EventWriteIndex::CsVsPsPartialFlush),
        }
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved(
            "EVENT_WRITE",
            1,
            self.control.into_bits(),
            EVENT_WRITE_RESERVED,
        )
    }
}

impl EventWriteAddr {
    /// A sampling event writing to `addr` (8-byte aligned).
    pub fn new(
        event_type: EventType,
        event_index: EventWriteIndex,
        addr: u64,
    ) -> Result<Self, BuildError> {
        check_align("EVENT_WRITE", "address", addr, 8)?;
        Ok(EventWriteAddr {
            header: Self::HEADER,
            control: event_control(event_type, event_index)?,
            address_lo: lo32(addr),
            address_hi: hi32(addr),
        })
    }

    /// The address.
    pub const fn addr(&self) -> u64 {
        join(self.address_lo, self.address_hi)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved(
            "EVENT_WRITE",
            1,
            self.control.into_bits(),
            EVENT_WRITE_RESERVED,
        )?;
        check_reserved("EVENT_WRITE", 2, self.address_lo, 0b111)
    }
}

fn event_control(
    event_type: EventType,
    event_index: EventWriteIndex,
) -> Result<EventWriteControl, BuildError> {
    EventWriteControl::new()
        .with_event_type_checked(event_type)
        .map_err(|_| enum_overflow("EVENT_WRITE", "event_type", event_type.into_bits()))?
        .with_event_index_checked(event_index)
        .map_err(|_| enum_overflow("EVENT_WRITE", "event_index", event_index.into_bits()))
}

// ---------------------------------------------------------------------------------------
// SET_SH_REG and SET_CONTEXT_REG
// ---------------------------------------------------------------------------------------

/// First SH register dword address; SET_SH_REG offsets are relative to it.
pub const SH_REG_BASE: u32 = 0x2C00;

/// First context register dword address; SET_CONTEXT_REG offsets are relative to it.
pub const CONTEXT_REG_BASE: u32 = 0xA000;

/// dw1 of SET_SH_REG and SET_CONTEXT_REG.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct ShRegOffset {
    /// `[15:0]` register dword offset from the space's first register ([`SH_REG_BASE`],
    /// [`CONTEXT_REG_BASE`]).
    pub reg_offset: u16,
    #[bits(16)]
    __: u16,
}

zc_packet! {
    /// The fixed part of a register-write packet (dw0–dw1).
    pub struct SetRegHead {
        /// dw0 (`count = N`).
        pub header: Type3Header,
        /// dw1: first register, as a dword offset from the space's first register.
        pub offset: ShRegOffset,
    }
}

/// A register space that a SET_*_REG packet writes: its packet and its first register.
pub trait RegisterSpace: Copy + core::fmt::Debug + PartialEq + Eq {
    /// The packet name.
    const NAME: &'static str;
    /// The packet's opcode.
    const OPCODE: Opcode;
    /// The first register's dword address; the packet carries offsets from it.
    const BASE: u32;
    /// A register of the space, by dword address.
    type Reg;
    /// The register at dword address `addr`.
    fn reg(addr: u32) -> Self::Reg;
    /// The name of the register at dword address `addr`, if known.
    fn reg_name(addr: u32) -> Option<&'static str>;
}

/// The SH (compute shader) registers: SET_SH_REG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShSpace;

impl RegisterSpace for ShSpace {
    const NAME: &'static str = "SET_SH_REG";
    const OPCODE: Opcode = Opcode::SET_SH_REG;
    const BASE: u32 = SH_REG_BASE;
    type Reg = crate::regs::ShReg;
    fn reg(addr: u32) -> Self::Reg {
        crate::regs::ShReg(addr)
    }
    fn reg_name(addr: u32) -> Option<&'static str> {
        crate::regs::sh_reg_name(addr)
    }
}

/// The context (graphics state) registers: SET_CONTEXT_REG, a graphics-ring packet; compute
/// queues have no context registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextSpace;

impl RegisterSpace for ContextSpace {
    const NAME: &'static str = "SET_CONTEXT_REG";
    const OPCODE: Opcode = Opcode::SET_CONTEXT_REG;
    const BASE: u32 = CONTEXT_REG_BASE;
    type Reg = crate::regs::ContextReg;
    fn reg(addr: u32) -> Self::Reg {
        crate::regs::ContextReg(addr)
    }
    fn reg_name(addr: u32) -> Option<&'static str> {
        crate::regs::context_reg_name(addr)
    }
}

/// A register-write packet: 2 + N dwords writing N consecutive registers of space `S`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetRegs<'a, S: RegisterSpace> {
    /// dw0–dw1.
    pub head: SetRegHead,
    /// The register values (N ≥ 1).
    pub values: &'a [u32],
    space: core::marker::PhantomData<S>,
}

/// SET_SH_REG (0x76): 2 + N dwords writing N consecutive SH registers.
pub type SetShReg<'a> = SetRegs<'a, ShSpace>;

/// SET_CONTEXT_REG (0x69): 2 + N dwords writing N consecutive context registers.
pub type SetContextReg<'a> = SetRegs<'a, ContextSpace>;

impl<'a, S: RegisterSpace> SetRegs<'a, S> {
    /// The packet name.
    pub const NAME: &'static str = S::NAME;

    /// Writes `values` to consecutive registers starting at dword address `reg` (at least
    /// the space's first register).
    pub fn new(reg: u32, values: &'a [u32]) -> Result<Self, BuildError> {
        let offset = reg
            .checked_sub(S::BASE)
            .ok_or(BuildError::FieldOutOfRange {
                packet: S::NAME,
                field: "reg",
                value: reg.into(),
                max: (S::BASE + 0xFFFF).into(),
            })?;
        check_bits(S::NAME, "reg_offset", offset.into(), 16)?;
        let total = values.len() + 2;
        if values.is_empty() || total > MAX_PACKET_DWORDS {
            return Err(BuildError::Length {
                packet: S::NAME,
                dwords: total,
                min: 3,
                max: MAX_PACKET_DWORDS,
            });
        }
        Ok(SetRegs {
            head: SetRegHead {
                header: Type3Header::for_packet(S::OPCODE, total)?,
                offset: ShRegOffset::new().with_reg_offset(offset as u16),
            },
            values,
            space: core::marker::PhantomData,
        })
    }

    /// Dword address of the first register written.
    pub fn first_register(&self) -> u32 {
        S::BASE + self.head.offset.reg_offset() as u32
    }

    /// Total length in dwords.
    pub fn total_dwords(&self) -> usize {
        2 + self.values.len()
    }

    /// The registers written, in order, with their values.
    pub fn registers(&self) -> impl Iterator<Item = (S::Reg, u32)> + 'a {
        let first = self.first_register();
        (first..)
            .zip(self.values.iter().copied())
            .map(|(r, v)| (S::reg(r), v))
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self) -> Result<(), DecodeErrorKind> {
        check_reserved(S::NAME, 1, self.head.offset.into_bits(), 0xFFFF_0000)
    }
}

impl<'a, S: RegisterSpace> crate::packets::Pm4Body<'a> for SetRegs<'a, S> {
    const MIN_DWORDS: usize = 3;
    const MAX_DWORDS: usize = MAX_PACKET_DWORDS;

    #[inline(always)]
    fn decode_body(_: Type3Header, words: &'a [u32], _: GfxGen) -> Result<Self, DecodeErrorKind> {
        let wrong = || DecodeErrorKind::WrongLength {
            packet: S::NAME,
            dwords: words.len(),
            min: 3,
            max: MAX_PACKET_DWORDS,
        };
        let (Some(head), Some(values)) = (words.get(..2), words.get(2..)) else {
            return Err(wrong());
        };
        if values.is_empty() {
            return Err(wrong());
        }
        let head = SetRegHead::read_from_bytes(head.as_bytes()).map_err(|_| wrong())?;
        let p = SetRegs {
            head,
            values,
            space: core::marker::PhantomData,
        };
        p.validate()?;
        Ok(p)
    }
}

impl<S: RegisterSpace> Encode for SetRegs<'_, S> {
    fn dwords(&self) -> usize {
        self.total_dwords()
    }
    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
        let n = self.total_dwords();
        let dst = space(out, n)?;
        let (head, body) = dst.split_at_mut(2);
        head.as_mut_bytes().copy_from_slice(self.head.as_bytes());
        body.copy_from_slice(self.values);
        Ok(n)
    }
}

// ---------------------------------------------------------------------------------------
// DISPATCH_DIRECT
// ---------------------------------------------------------------------------------------

/// `COMPUTE_DISPATCH_INITIATOR` (DISPATCH_DIRECT dw4). The named bits are the ones
/// shared by gfx9–gfx11; the others differ per generation and are kept but not checked.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct DispatchInitiator {
    /// bit 0: start the compute shader.
    pub compute_shader_en: bool,
    /// bit 1: allow partial thread groups.
    pub partial_tg_en: bool,
    /// bit 2: force start at (0,0,0).
    pub force_start_at_000: bool,
    /// bit 3: ordered append enable.
    pub ordered_append_enbl: bool,
    /// bit 4: ordered append mode.
    pub ordered_append_mode: bool,
    /// bit 5: dimensions are in threads, not thread groups.
    pub use_thread_dimensions: bool,
    /// bit 6: order mode.
    pub order_mode: bool,
    #[bits(3)]
    __: u8,
    /// bit 10: scalar L1 invalidate volatile.
    pub scalar_l1_inv_vol: bool,
    /// bit 11: vector L1 invalidate volatile.
    pub vector_l1_inv_vol: bool,
    #[bits(2)]
    __: u8,
    /// bit 14: restore (CWSR).
    pub restore: bool,
    /// bit 15: wave32 (gfx10+).
    pub cs_w32_en: bool,
    #[bits(16)]
    __: u16,
}

zc_packet! {
    /// DISPATCH_DIRECT (0x15), 5 dwords, header `0xC0031500`: thread-group counts and the
    /// dispatch initiator.
    pub struct DispatchDirect {
        /// dw0.
        pub header: Type3Header,
        /// dw1: groups in X.
        pub dim_x: u32,
        /// dw2: groups in Y.
        pub dim_y: u32,
        /// dw3: groups in Z.
        pub dim_z: u32,
        /// dw4: `COMPUTE_DISPATCH_INITIATOR`.
        pub initiator: DispatchInitiator,
    }
}
fixed_packet!(
    DispatchDirect,
    Opcode::DISPATCH_DIRECT,
    5,
    "DISPATCH_DIRECT",
    unchecked
);

impl DispatchDirect {
    /// Builds the packet.
    pub const fn new(dims: [u32; 3], initiator: DispatchInitiator) -> Self {
        DispatchDirect {
            header: Self::HEADER,
            dim_x: dims[0],
            dim_y: dims[1],
            dim_z: dims[2],
            initiator,
        }
    }

    /// Total number of thread groups (or threads with `use_thread_dimensions`).
    pub const fn groups(&self) -> u128 {
        self.dim_x as u128 * self.dim_y as u128 * self.dim_z as u128
    }
}
