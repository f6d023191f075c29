//! AQL packets (HSA `hsa.h`, 64 bytes each) and the AMD vendor-specific formats the command
//! processor executes from AQL queues (`hsa_ext_amd.h`'s BARRIER_VALUE, ROCr's PM4-IB), as
//! zerocopy structs, with a decoder that never panics and `Display`.
//!
//! ```
//! use pm4::aql::{decode_aql, AqlHeader, AqlPacket, AqlPacketType, FenceScope};
//! let mut slot = [0u8; 64];
//! let header = AqlHeader::new(AqlPacketType::BarrierAnd, true, FenceScope::System, FenceScope::System);
//! slot[..2].copy_from_slice(&header.0.to_le_bytes());
//! assert!(matches!(decode_aql(&slot), Ok(AqlPacket::BarrierAnd(_))));
//! assert_eq!(header.0, 0x1503);
//! ```

use core::fmt;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Bytes in every AQL packet (`ring::AQL_PACKET_BYTES` as a `usize`).
pub const PACKET_SIZE: usize = 64;

/// `hsa_packet_type_t`: the packet header's `[7:0]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AqlPacketType {
    /// Vendor-specific (AMD: see [`AmdFormat`]).
    VendorSpecific,
    /// Not (yet) a packet: the producer has not published the slot.
    Invalid,
    /// Kernel dispatch.
    KernelDispatch,
    /// Barrier-AND: waits until all dependency signals are 0.
    BarrierAnd,
    /// Agent dispatch.
    AgentDispatch,
    /// Barrier-OR: waits until any dependency signal is 0.
    BarrierOr,
    /// A value HSA does not define.
    Reserved(u8),
}

impl AqlPacketType {
    /// From the raw byte.
    pub const fn from_raw(raw: u8) -> Self {
        match raw {
            0 => Self::VendorSpecific,
            1 => Self::Invalid,
            2 => Self::KernelDispatch,
            3 => Self::BarrierAnd,
            4 => Self::AgentDispatch,
            5 => Self::BarrierOr,
            other => Self::Reserved(other),
        }
    }

    /// The raw byte.
    pub const fn raw(self) -> u8 {
        match self {
            Self::VendorSpecific => 0,
            Self::Invalid => 1,
            Self::KernelDispatch => 2,
            Self::BarrierAnd => 3,
            Self::AgentDispatch => 4,
            Self::BarrierOr => 5,
            Self::Reserved(raw) => raw,
        }
    }

    /// The `HSA_PACKET_TYPE_*` name without the prefix.
    pub const fn name(self) -> &'static str {
        match self {
            Self::VendorSpecific => "VENDOR_SPECIFIC",
            Self::Invalid => "INVALID",
            Self::KernelDispatch => "KERNEL_DISPATCH",
            Self::BarrierAnd => "BARRIER_AND",
            Self::AgentDispatch => "AGENT_DISPATCH",
            Self::BarrierOr => "BARRIER_OR",
            Self::Reserved(_) => "RESERVED",
        }
    }
}

/// `hsa_fence_scope_t` (2-bit header fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FenceScope {
    /// No fence.
    None,
    /// The agent.
    Agent,
    /// The whole system.
    System,
    /// The value 3, which HSA does not define.
    Reserved,
}

impl FenceScope {
    /// From two raw bits.
    pub const fn from_raw(raw: u16) -> Self {
        match raw & 3 {
            0 => Self::None,
            1 => Self::Agent,
            2 => Self::System,
            _ => Self::Reserved,
        }
    }

    /// The raw bits.
    pub const fn raw(self) -> u16 {
        match self {
            Self::None => 0,
            Self::Agent => 1,
            Self::System => 2,
            Self::Reserved => 3,
        }
    }

    /// The `HSA_FENCE_SCOPE_*` name without the prefix.
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Agent => "AGENT",
            Self::System => "SYSTEM",
            Self::Reserved => "RESERVED",
        }
    }
}

/// The 16-bit AQL packet header (`hsa_packet_header_t`): type `[7:0]`, barrier `[8]`,
/// acquire fence scope `[10:9]`, release fence scope `[12:11]`, `[15:13]` reserved.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AqlHeader(pub u16);

impl AqlHeader {
    /// Bit of the barrier flag.
    pub const BARRIER_SHIFT: u32 = 8;
    /// First bit of the acquire fence scope.
    pub const ACQUIRE_FENCE_SCOPE_SHIFT: u32 = 9;
    /// First bit of the release fence scope.
    pub const RELEASE_FENCE_SCOPE_SHIFT: u32 = 11;
    /// Bits no field covers.
    pub const RESERVED_MASK: u16 = 0xE000;

    /// A header with these fields.
    pub const fn new(
        packet_type: AqlPacketType,
        barrier: bool,
        acquire: FenceScope,
        release: FenceScope,
    ) -> Self {
        AqlHeader(
            packet_type.raw() as u16
                | (barrier as u16) << Self::BARRIER_SHIFT
                | acquire.raw() << Self::ACQUIRE_FENCE_SCOPE_SHIFT
                | release.raw() << Self::RELEASE_FENCE_SCOPE_SHIFT,
        )
    }

    /// The packet type.
    pub const fn packet_type(self) -> AqlPacketType {
        AqlPacketType::from_raw(self.0 as u8)
    }

    /// Whether the packet waits for all earlier packets to complete.
    pub const fn barrier(self) -> bool {
        self.0 >> Self::BARRIER_SHIFT & 1 != 0
    }

    /// The scope of the acquire fence before the packet runs.
    pub const fn acquire_fence_scope(self) -> FenceScope {
        FenceScope::from_raw(self.0 >> Self::ACQUIRE_FENCE_SCOPE_SHIFT)
    }

    /// The scope of the release fence after the packet completes.
    pub const fn release_fence_scope(self) -> FenceScope {
        FenceScope::from_raw(self.0 >> Self::RELEASE_FENCE_SCOPE_SHIFT)
    }
}

impl fmt::Display for AqlHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "barrier={} acquire_fence_scope={} release_fence_scope={}",
            self.barrier() as u8,
            self.acquire_fence_scope().name(),
            self.release_fence_scope().name()
        )
    }
}

/// `hsa_kernel_dispatch_packet_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KernelDispatchPacket {
    /// Packet header.
    pub header: AqlHeader,
    /// `[1:0]` number of grid dimensions.
    pub setup: u16,
    /// Work-group size in X (work-items).
    pub workgroup_size_x: u16,
    /// Work-group size in Y.
    pub workgroup_size_y: u16,
    /// Work-group size in Z.
    pub workgroup_size_z: u16,
    /// Reserved.
    pub reserved0: u16,
    /// Grid size in X (work-items).
    pub grid_size_x: u32,
    /// Grid size in Y.
    pub grid_size_y: u32,
    /// Grid size in Z.
    pub grid_size_z: u32,
    /// Private (scratch) bytes per work-item.
    pub private_segment_size: u32,
    /// Group (LDS) bytes per work-group.
    pub group_segment_size: u32,
    /// Address of the kernel descriptor.
    pub kernel_object: u64,
    /// Address of the kernel arguments.
    pub kernarg_address: u64,
    /// Reserved.
    pub reserved2: u64,
    /// Signal decremented on completion (0: none).
    pub completion_signal: u64,
}

/// `hsa_agent_dispatch_packet_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AgentDispatchPacket {
    /// Packet header.
    pub header: AqlHeader,
    /// The function the agent is to run.
    pub function: u16,
    /// Reserved.
    pub reserved0: u32,
    /// Where the result goes.
    pub return_address: u64,
    /// Arguments.
    pub arg: [u64; 4],
    /// Reserved.
    pub reserved2: u64,
    /// Signal decremented on completion (0: none).
    pub completion_signal: u64,
}

/// `hsa_barrier_and_packet_t` and `hsa_barrier_or_packet_t` (same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct BarrierPacket {
    /// Packet header.
    pub header: AqlHeader,
    /// Reserved.
    pub reserved0: u16,
    /// Reserved.
    pub reserved1: u32,
    /// Dependency signals (0: unused slot).
    pub dep_signal: [u64; 5],
    /// Reserved.
    pub reserved2: u64,
    /// Signal decremented on completion (0: none).
    pub completion_signal: u64,
}

impl BarrierPacket {
    /// The dependency signals in use.
    pub fn dependencies(&self) -> impl Iterator<Item = u64> + '_ {
        self.dep_signal.iter().copied().filter(|&s| s != 0)
    }
}

/// `hsa_amd_packet_type_t`: the AMD vendor packet format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmdFormat {
    /// A PM4 INDIRECT_BUFFER to run (ROCr `AMD_AQL_FORMAT_PM4_IB`).
    Pm4Ib,
    /// Wait for a signal value (`HSA_AMD_PACKET_TYPE_BARRIER_VALUE`).
    BarrierValue,
    /// A format not known here.
    Other(u8),
}

impl AmdFormat {
    /// From the raw byte.
    pub const fn from_raw(raw: u8) -> Self {
        match raw {
            1 => Self::Pm4Ib,
            2 => Self::BarrierValue,
            other => Self::Other(other),
        }
    }

    /// The raw byte.
    pub const fn raw(self) -> u8 {
        match self {
            Self::Pm4Ib => 1,
            Self::BarrierValue => 2,
            Self::Other(raw) => raw,
        }
    }
}

/// `hsa_amd_vendor_packet_header_t`: the AQL header, then the AMD format.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AmdVendorHeader {
    /// Packet header (type VENDOR_SPECIFIC).
    pub header: AqlHeader,
    /// [`AmdFormat`] raw byte.
    pub amd_format: u8,
    /// Reserved.
    pub reserved: u8,
}

/// `hsa_signal_condition_t` as the BARRIER_VALUE packet carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignalCondition {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<` (signed).
    Lt,
    /// `>=` (signed).
    Gte,
}

impl SignalCondition {
    /// From the raw value, `None` for one HSA does not define.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        Some(match raw {
            0 => Self::Eq,
            1 => Self::Ne,
            2 => Self::Lt,
            3 => Self::Gte,
            _ => return None,
        })
    }

    /// Whether `value` (already masked) satisfies the condition against `reference`.
    pub const fn holds(self, value: i64, reference: i64) -> bool {
        match self {
            Self::Eq => value == reference,
            Self::Ne => value != reference,
            Self::Lt => value < reference,
            Self::Gte => value >= reference,
        }
    }

    /// The `HSA_SIGNAL_CONDITION_*` name without the prefix.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Eq => "EQ",
            Self::Ne => "NE",
            Self::Lt => "LT",
            Self::Gte => "GTE",
        }
    }
}

/// `hsa_amd_barrier_value_packet_t`: waits until `(signal value & mask) cond value`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct BarrierValuePacket {
    /// Vendor header (format BARRIER_VALUE).
    pub header: AmdVendorHeader,
    /// Reserved.
    pub reserved0: u32,
    /// The signal to watch.
    pub signal: u64,
    /// The value to compare with.
    pub value: i64,
    /// Mask applied to the signal's value first.
    pub mask: i64,
    /// [`SignalCondition`] raw value.
    pub cond: u32,
    /// Reserved.
    pub reserved1: u32,
    /// Reserved.
    pub reserved2: u64,
    /// Reserved.
    pub reserved3: u64,
    /// Signal decremented on completion (0: none).
    pub completion_signal: u64,
}

/// ROCr's `amd_aql_pm4_ib_packet_t`: a PM4 INDIRECT_BUFFER packet the CP runs.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Pm4IbPacket {
    /// Vendor header (format PM4_IB).
    pub header: AmdVendorHeader,
    /// The 4-dword PM4 INDIRECT_BUFFER packet.
    pub pm4_ib_command: [u32; 4],
    /// Dwords left in the slot after the command (ROCr writes 10).
    pub dw_count_remain: u32,
    /// Reserved.
    pub reserved: [u32; 8],
    /// Signal decremented on completion (0: none).
    pub completion_signal: u64,
}

const _: () = {
    assert!(core::mem::size_of::<KernelDispatchPacket>() == PACKET_SIZE);
    assert!(core::mem::size_of::<AgentDispatchPacket>() == PACKET_SIZE);
    assert!(core::mem::size_of::<BarrierPacket>() == PACKET_SIZE);
    assert!(core::mem::size_of::<BarrierValuePacket>() == PACKET_SIZE);
    assert!(core::mem::size_of::<Pm4IbPacket>() == PACKET_SIZE);
};

/// Byte offset of `completion_signal` in every AQL packet.
pub const COMPLETION_SIGNAL_OFFSET: usize = 56;

/// ROCr's `amd_signal_t` (64 bytes): the offsets the command processor uses.
pub mod amd_signal {
    /// Size of the structure.
    pub const SIZE: usize = 64;
    /// `value` (64-bit, signed): decremented on completion, 0 = done.
    pub const VALUE: u64 = 8;
    /// `event_mailbox_ptr`: where `event_id` is written on completion (0: none).
    pub const EVENT_MAILBOX_PTR: u64 = 16;
    /// `event_id` (32-bit).
    pub const EVENT_ID: u64 = 24;
    /// `start_ts`: GPU clock when the packet started (written on profiling queues).
    pub const START_TS: u64 = 32;
    /// `end_ts`: GPU clock when the packet completed (written on profiling queues).
    pub const END_TS: u64 = 40;
}

/// ROCr's `amd_queue_t` (256 bytes, `amd_hsa_queue.h`): the offsets the command processor
/// reads. The MQD's read-pointer report address points at `read_dispatch_id`, so the CP finds
/// the structure 128 bytes before it.
pub mod amd_queue {
    /// Size of the structure.
    pub const SIZE: usize = 256;
    /// `write_dispatch_id`: the AQL write index, where the MQD's write-pointer address points.
    pub const WRITE_DISPATCH_ID: u64 = 56;
    /// `read_dispatch_id`: the AQL read index the CP reports.
    pub const READ_DISPATCH_ID: u64 = 128;
    /// `compute_tmpring_size` (32-bit).
    pub const COMPUTE_TMPRING_SIZE: u64 = 140;
    /// `scratch_resource_descriptor[4]`.
    pub const SCRATCH_RESOURCE_DESCRIPTOR: u64 = 144;
    /// `scratch_backing_memory_location`.
    pub const SCRATCH_BACKING_MEMORY_LOCATION: u64 = 160;
    /// `scratch_backing_memory_byte_size`.
    pub const SCRATCH_BACKING_MEMORY_BYTE_SIZE: u64 = 168;
    /// `scratch_wave64_lane_byte_size` (32-bit).
    pub const SCRATCH_WAVE64_LANE_BYTE_SIZE: u64 = 176;
    /// `queue_properties` (32-bit).
    pub const QUEUE_PROPERTIES: u64 = 180;
    /// `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING` in `queue_properties`: the CP stamps each
    /// completion signal's `start_ts` and `end_ts`.
    pub const PROPERTIES_ENABLE_PROFILING: u32 = 1 << 3;
    /// `queue_inactive_signal`: where the CP reports why it stopped the queue.
    pub const QUEUE_INACTIVE_SIGNAL: u64 = 192;
}

/// A decoded AQL packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AqlPacket {
    /// The slot is not published yet (type INVALID).
    Invalid(AqlHeader),
    /// Kernel dispatch.
    KernelDispatch(KernelDispatchPacket),
    /// Agent dispatch.
    AgentDispatch(AgentDispatchPacket),
    /// Barrier-AND.
    BarrierAnd(BarrierPacket),
    /// Barrier-OR.
    BarrierOr(BarrierPacket),
    /// AMD vendor BARRIER_VALUE.
    BarrierValue(BarrierValuePacket),
    /// AMD vendor PM4 IB.
    Pm4Ib(Pm4IbPacket),
}

/// Why a 64-byte slot is not an AQL packet this crate knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AqlError {
    /// The header's type is not one HSA defines.
    UnknownType(u8),
    /// A vendor-specific packet of a format not known here.
    UnknownAmdFormat(u8),
    /// The slot is not 64 bytes.
    WrongSize(usize),
}

impl fmt::Display for AqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AqlError::UnknownType(t) => write!(f, "AQL packet type {t} does not exist"),
            AqlError::UnknownAmdFormat(a) => write!(f, "AMD vendor AQL format {a}"),
            AqlError::WrongSize(n) => write!(f, "an AQL packet is 64 bytes, not {n}"),
        }
    }
}

impl core::error::Error for AqlError {}

/// Decodes one 64-byte AQL slot. Never panics.
pub fn decode_aql(slot: &[u8]) -> Result<AqlPacket, AqlError> {
    fn read<T: FromBytes>(slot: &[u8]) -> Result<T, AqlError> {
        T::read_from_bytes(slot).map_err(|_| AqlError::WrongSize(slot.len()))
    }
    if slot.len() != PACKET_SIZE {
        return Err(AqlError::WrongSize(slot.len()));
    }
    let vendor: AmdVendorHeader = read(slot.get(..4).unwrap_or_default())?;
    Ok(match vendor.header.packet_type() {
        AqlPacketType::Invalid => AqlPacket::Invalid(vendor.header),
        AqlPacketType::KernelDispatch => AqlPacket::KernelDispatch(read(slot)?),
        AqlPacketType::AgentDispatch => AqlPacket::AgentDispatch(read(slot)?),
        AqlPacketType::BarrierAnd => AqlPacket::BarrierAnd(read(slot)?),
        AqlPacketType::BarrierOr => AqlPacket::BarrierOr(read(slot)?),
        AqlPacketType::VendorSpecific => match AmdFormat::from_raw(vendor.amd_format) {
            AmdFormat::BarrierValue => AqlPacket::BarrierValue(read(slot)?),
            AmdFormat::Pm4Ib => AqlPacket::Pm4Ib(read(slot)?),
            AmdFormat::Other(raw) => return Err(AqlError::UnknownAmdFormat(raw)),
        },
        AqlPacketType::Reserved(raw) => return Err(AqlError::UnknownType(raw)),
    })
}

impl AqlPacket {
    /// The packet header.
    pub fn header(&self) -> AqlHeader {
        match self {
            AqlPacket::Invalid(h) => *h,
            AqlPacket::KernelDispatch(p) => p.header,
            AqlPacket::AgentDispatch(p) => p.header,
            AqlPacket::BarrierAnd(p) | AqlPacket::BarrierOr(p) => p.header,
            AqlPacket::BarrierValue(p) => p.header.header,
            AqlPacket::Pm4Ib(p) => p.header.header,
        }
    }

    /// The packet's name as the disassembly prints it.
    pub fn name(&self) -> &'static str {
        match self {
            AqlPacket::Invalid(_) => "INVALID",
            AqlPacket::KernelDispatch(_) => "KERNEL_DISPATCH",
            AqlPacket::AgentDispatch(_) => "AGENT_DISPATCH",
            AqlPacket::BarrierAnd(_) => "BARRIER_AND",
            AqlPacket::BarrierOr(_) => "BARRIER_OR",
            AqlPacket::BarrierValue(_) => "AMD_BARRIER_VALUE",
            AqlPacket::Pm4Ib(_) => "AMD_PM4_IB",
        }
    }
}

impl fmt::Display for KernelDispatchPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "KERNEL_DISPATCH {} dimensions={} workgroup={}x{}x{} grid={}x{}x{} private_segment_size={} group_segment_size={} kernel_object={:#x} kernarg_address={:#x} completion_signal={:#x}",
            self.header,
            self.setup & 3,
            self.workgroup_size_x,
            self.workgroup_size_y,
            self.workgroup_size_z,
            self.grid_size_x,
            self.grid_size_y,
            self.grid_size_z,
            self.private_segment_size,
            self.group_segment_size,
            self.kernel_object,
            self.kernarg_address,
            self.completion_signal
        )
    }
}

impl fmt::Display for AqlPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AqlPacket::Invalid(h) => write!(f, "INVALID {h}"),
            AqlPacket::KernelDispatch(p) => p.fmt(f),
            AqlPacket::AgentDispatch(p) => write!(
                f,
                "AGENT_DISPATCH {} function={} return_address={:#x} completion_signal={:#x}",
                p.header, p.function, p.return_address, p.completion_signal
            ),
            AqlPacket::BarrierAnd(p) | AqlPacket::BarrierOr(p) => {
                write!(f, "{} {} dep_signal=[", self.name(), p.header)?;
                for (i, s) in p.dep_signal.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{s:#x}")?;
                }
                write!(f, "] completion_signal={:#x}", p.completion_signal)
            }
            AqlPacket::BarrierValue(p) => {
                write!(
                    f,
                    "AMD_BARRIER_VALUE {} signal={:#x} ",
                    p.header.header, p.signal
                )?;
                match SignalCondition::from_raw(p.cond) {
                    Some(c) => write!(f, "cond={}", c.name())?,
                    None => write!(f, "cond={:#x}", p.cond)?,
                }
                write!(
                    f,
                    " value={:#x} mask={:#x} completion_signal={:#x}",
                    p.value, p.mask, p.completion_signal
                )
            }
            AqlPacket::Pm4Ib(p) => {
                let c = p.pm4_ib_command;
                write!(
                    f,
                    "AMD_PM4_IB {} command=[{:#010x},{:#010x},{:#010x},{:#010x}] dw_count_remain={} completion_signal={:#x}",
                    p.header.header, c[0], c[1], c[2], c[3], p.dw_count_remain, p.completion_signal
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn header_bits() {
        let h = AqlHeader::new(
            AqlPacketType::KernelDispatch,
            true,
            FenceScope::Agent,
            FenceScope::System,
        );
        // type 2, barrier bit 8, acquire 1 << 9, release 2 << 11.
        assert_eq!(h.0, 2 | 1 << 8 | 1 << 9 | 2 << 11);
        assert_eq!(h.packet_type(), AqlPacketType::KernelDispatch);
        assert!(h.barrier());
        assert_eq!(h.acquire_fence_scope(), FenceScope::Agent);
        assert_eq!(h.release_fence_scope(), FenceScope::System);
    }

    #[test]
    fn offsets_follow_hsa_h() {
        assert_eq!(offset_of!(KernelDispatchPacket, grid_size_x), 12);
        assert_eq!(offset_of!(KernelDispatchPacket, kernel_object), 32);
        assert_eq!(offset_of!(KernelDispatchPacket, kernarg_address), 40);
        assert_eq!(offset_of!(BarrierPacket, dep_signal), 8);
        assert_eq!(offset_of!(BarrierValuePacket, signal), 8);
        assert_eq!(offset_of!(BarrierValuePacket, cond), 32);
        assert_eq!(offset_of!(Pm4IbPacket, pm4_ib_command), 4);
        assert_eq!(offset_of!(Pm4IbPacket, dw_count_remain), 20);
        for off in [
            offset_of!(KernelDispatchPacket, completion_signal),
            offset_of!(AgentDispatchPacket, completion_signal),
            offset_of!(BarrierPacket, completion_signal),
            offset_of!(BarrierValuePacket, completion_signal),
            offset_of!(Pm4IbPacket, completion_signal),
        ] {
            assert_eq!(off, COMPLETION_SIGNAL_OFFSET);
        }
    }

    #[test]
    fn decode_never_panics_and_rejects_what_hsa_does_not_define() {
        let mut slot = [0u8; 64];
        slot[0] = 9;
        assert_eq!(decode_aql(&slot), Err(AqlError::UnknownType(9)));
        slot[0] = 0;
        slot[2] = 7;
        assert_eq!(decode_aql(&slot), Err(AqlError::UnknownAmdFormat(7)));
        assert_eq!(decode_aql(&slot[..63]), Err(AqlError::WrongSize(63)));
        assert_eq!(decode_aql(&[]), Err(AqlError::WrongSize(0)));
        for t in 0..=255u8 {
            slot[0] = t;
            for fmt in 0..=3u8 {
                slot[2] = fmt;
                let _ = decode_aql(&slot);
            }
        }
        slot[0] = 0;
        slot[2] = 2;
        slot[32] = 3; // cond GTE
        match decode_aql(&slot) {
            Ok(AqlPacket::BarrierValue(p)) => {
                assert_eq!(
                    SignalCondition::from_raw(p.cond),
                    Some(SignalCondition::Gte)
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
