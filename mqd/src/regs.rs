//! Register layouts that are the same on gfx9, gfx10 and gfx11 (facts §6.3, §6.5).
//!
//! Registers whose bit positions move between generations live in their generation's
//! module: [`crate::v9::CpHqdPqControl`] vs [`crate::v10::CpHqdPqControl`], and so on.
//! Bits the facts do not name are kept as anonymous padding, so a value read from a dump
//! survives a decode/encode round trip unchanged.

use bitfield_struct::bitfield;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `CP_HQD_PQ_DOORBELL_CONTROL`: where the queue's doorbell lives in the doorbell BAR.
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CpHqdPqDoorbellControl {
    /// `DOORBELL_MODE`, bit 0.
    pub doorbell_mode: bool,
    /// `DOORBELL_BIF_DROP`, bit 1: set for AQL queues.
    pub doorbell_bif_drop: bool,
    /// `DOORBELL_OFFSET`, bits `[27:2]`: dword index of the doorbell in the BAR.
    #[bits(26)]
    pub doorbell_offset: u32,
    #[bits(2)]
    __: u8,
    /// `DOORBELL_EN`, bit 30.
    pub doorbell_en: bool,
    #[bits(1)]
    __: u8,
}

/// `CP_HQD_PERSISTENT_STATE`: preload and the CWSR queue-switch mode.
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CpHqdPersistentState {
    /// `PRELOAD_REQ`, bit 0.
    pub preload_req: bool,
    #[bits(7)]
    __: u8,
    /// `PRELOAD_SIZE`, bits `[17:8]`: 0x53 on gfx9/gfx10, 0x55 on gfx11.
    #[bits(10)]
    pub preload_size: u16,
    #[bits(12)]
    __: u16,
    /// `QSWITCH_MODE`, bit 30: set when compute-wave save/restore (CWSR) is on.
    pub qswitch_mode: bool,
    #[bits(1)]
    __: u8,
}

/// `CP_MQD_CONTROL`.
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CpMqdControl {
    /// `VMID`, bits `[3:0]`.
    #[bits(4)]
    pub vmid: u8,
    #[bits(4)]
    __: u8,
    /// `PRIV_STATE`, bit 8: the driver always sets it.
    pub priv_state: bool,
    #[bits(23)]
    __: u32,
}

/// `CP_HQD_QUANTUM`: the time slice of the queue on its pipe.
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CpHqdQuantum {
    /// `QUANTUM_EN`, bit 0.
    pub quantum_en: bool,
    #[bits(3)]
    __: u8,
    /// `QUANTUM_SCALE`, bit 4.
    pub quantum_scale: bool,
    #[bits(3)]
    __: u8,
    /// `QUANTUM_DURATION`, bits `[13:8]`.
    #[bits(6)]
    pub quantum_duration: u8,
    #[bits(18)]
    __: u32,
}

/// `CP_HQD_EOP_CONTROL`: size of the end-of-pipe event ring.
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CpHqdEopControl {
    /// `EOP_SIZE`, bits `[5:0]`: the EOP ring holds `2^(EOP_SIZE+1)` dwords.
    #[bits(6)]
    pub eop_size: u8,
    #[bits(26)]
    __: u32,
}

/// `CP_HQD_AQL_CONTROL`.
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CpHqdAqlControl {
    /// `CONTROL0`, bits `[14:0]`: 1 for AQL queues, 0 for PM4 queues.
    #[bits(15)]
    pub control0: u16,
    #[bits(17)]
    __: u32,
}

/// `COMPUTE_PGM_RSRC2` (only `TRAP_PRESENT` is written by the driver, and only on gfx9).
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ComputePgmRsrc2 {
    #[bits(6)]
    __: u8,
    /// `TRAP_PRESENT`, bit 6: a trap handler is installed.
    pub trap_present: bool,
    #[bits(25)]
    __: u32,
}

/// `SDMAx_RLCx_DOORBELL_OFFSET` (all three SDMA generations).
#[bitfield(u32)]
#[derive(PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct SdmaDoorbellOffset {
    #[bits(2)]
    __: u8,
    /// `OFFSET`, bits `[27:2]`: dword index of the doorbell in the BAR.
    #[bits(26)]
    pub offset: u32,
    #[bits(4)]
    __: u8,
}

/// Bit 14 of dw160 (`cp_hqd_hq_status0`, gfx10 `cp_hqd_hq_scheduler0`): the CP sets up the
/// dispatch pointer for the debugger. Written by Linux 6.12, not by 6.1.
pub const HQ_STATUS0_DEBUG_DISPATCH_PTR: u32 = 1 << 14;

/// Bit 29 of dw160 on gfx11: PCIe atomics are supported (RS64 firmware ≥ 509).
pub const HQ_STATUS0_PCIE_ATOMICS: u32 = 1 << 29;

/// The header dword of every compute MQD (facts §6.4).
pub const COMPUTE_MQD_HEADER: u32 = 0xC031_0800;

/// `SDMA_RLC_DUMMY_DEFAULT`, written into `sdmax_rlcx_dummy_reg`.
pub const SDMA_RLC_DUMMY_DEFAULT: u32 = 0xF;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_bit_positions_match_facts() {
        let doorbell = CpHqdPqDoorbellControl::new()
            .with_doorbell_offset(0x1006)
            .with_doorbell_bif_drop(true);
        assert_eq!(doorbell.into_bits(), 0x0000_401A);
        assert_eq!(
            CpHqdPqDoorbellControl::new()
                .with_doorbell_en(true)
                .into_bits(),
            1 << 30
        );
        let persistent = CpHqdPersistentState::new()
            .with_preload_req(true)
            .with_preload_size(0x53)
            .with_qswitch_mode(true);
        assert_eq!(persistent.into_bits(), 0x4000_5301);
        assert_eq!(CpMqdControl::new().with_priv_state(true).into_bits(), 0x100);
        assert_eq!(CpMqdControl::new().with_vmid(0xF).into_bits(), 0xF);
        let quantum = CpHqdQuantum::new()
            .with_quantum_en(true)
            .with_quantum_scale(true)
            .with_quantum_duration(1);
        assert_eq!(quantum.into_bits(), 0x111);
        assert_eq!(CpHqdEopControl::new().with_eop_size(9).into_bits(), 9);
        assert_eq!(CpHqdAqlControl::new().with_control0(1).into_bits(), 1);
        assert_eq!(
            ComputePgmRsrc2::new().with_trap_present(true).into_bits(),
            0x40
        );
        assert_eq!(
            SdmaDoorbellOffset::new().with_offset(0x1006).into_bits(),
            0x4018
        );
    }

    #[test]
    fn unnamed_bits_survive_a_round_trip() {
        let raw = 0xFFFF_FFFF;
        assert_eq!(CpHqdPersistentState::from_bits(raw).into_bits(), raw);
        assert_eq!(CpHqdPqDoorbellControl::from_bits(raw).into_bits(), raw);
        assert_eq!(CpHqdQuantum::from_bits(raw).into_bits(), raw);
    }
}
