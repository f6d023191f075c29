//! The one error type of the crate: every rejected input says what was wrong and by how much.

use core::fmt;

use crate::props::{Generation, GfxVersion, QueueKind};

/// Which address of a queue an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressKind {
    /// The ring buffer (`cp_hqd_pq_base`, `sdmax_rlcx_rb_base`).
    Ring,
    /// The end-of-pipe buffer (`cp_hqd_eop_base_addr`).
    Eop,
    /// The user read pointer the engine reports to.
    ReadPointer,
    /// The user write pointer the engine polls.
    WritePointer,
    /// The context save/restore (CWSR) area.
    ContextSave,
}

impl fmt::Display for AddressKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressKind::Ring => "ring",
            AddressKind::Eop => "EOP buffer",
            AddressKind::ReadPointer => "read pointer",
            AddressKind::WritePointer => "write pointer",
            AddressKind::ContextSave => "context save area",
        })
    }
}

/// Everything that can be wrong with the input of a builder, a decoder or a size formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MqdError {
    /// The ring size (bytes) is not a power of two.
    RingSizeNotPowerOfTwo(u32),
    /// The ring size (bytes) is below the kernel's 1024-byte minimum.
    RingSizeTooSmall(u32),
    /// An address that the hardware stores shifted or in units is not aligned enough.
    MisalignedAddress {
        /// Which address.
        kind: AddressKind,
        /// The address given.
        address: u64,
        /// The alignment required, in bytes.
        alignment: u64,
    },
    /// The queue priority exceeds 15.
    PriorityTooHigh(u32),
    /// The queue percentage exceeds 100.
    PercentageTooHigh(u32),
    /// The VMID exceeds 15.
    VmidTooHigh(u32),
    /// The doorbell dword index does not fit the 26-bit `DOORBELL_OFFSET` field.
    DoorbellOffsetTooLarge(u32),
    /// A CU mask whose bit count is zero or not a multiple of 32.
    CuMaskLength(u32),
    /// A CU mask whose words do not hold as many bits as it claims.
    CuMaskTooShort {
        /// Bits claimed.
        bits: u32,
        /// Words supplied.
        words: usize,
    },
    /// A CU mask was given but the configuration has no shader-engine layout to spread it over.
    NoShaderLayout,
    /// The shader-engine layout exceeds what the MQD can express.
    InvalidShaderLayout {
        /// Shader engines.
        shader_engines: u32,
        /// Shader arrays per engine.
        sh_per_se: u32,
        /// CUs in the largest shader array.
        cu_per_sh: u32,
    },
    /// The CWSR area is smaller than the topology's `cwsr_size`.
    CwsrAreaTooSmall {
        /// Bytes given.
        size: u32,
        /// Bytes required.
        required: u32,
    },
    /// The control stack size differs from the topology's `ctl_stack_size`.
    ControlStackSizeMismatch {
        /// Bytes given.
        size: u32,
        /// Bytes required.
        required: u32,
    },
    /// The control stack does not fit inside the CWSR area.
    ControlStackLargerThanArea {
        /// Control stack bytes.
        ctl_stack_size: u32,
        /// CWSR area bytes.
        area_size: u32,
    },
    /// The EOP buffer is smaller than the topology's `eop_buffer_size`.
    EopTooSmall {
        /// Bytes given.
        size: u32,
        /// Bytes required.
        required: u32,
    },
    /// A compute builder got SDMA properties or the other way round.
    WrongQueueKind {
        /// What the builder makes.
        expected: &'static str,
        /// What the properties say.
        found: QueueKind,
    },
    /// The configuration's GC version belongs to another MQD generation than the struct.
    GenerationMismatch {
        /// Generation of the MQD struct.
        mqd: Generation,
        /// Generation of the configuration.
        config: Generation,
    },
    /// No MQD generation of this crate serves that GC version (gfx9, gfx10, gfx11 do).
    UnsupportedGfxVersion(GfxVersion),
    /// A byte dump too short for the MQD it should hold.
    DumpTooShort {
        /// The struct expected.
        mqd: &'static str,
        /// Bytes given.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// A compute MQD dump whose dw0 is not the compute MQD header `0xC0310800`.
    BadHeader(u32),
    /// A topology input that the size formulas divide by is zero.
    ZeroTopologyInput(&'static str),
    /// A topology-derived size does not fit in 32 bits.
    TopologySizeOverflow(&'static str),
}

impl fmt::Display for MqdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MqdError::RingSizeNotPowerOfTwo(size) => {
                write!(f, "ring size {size} is not a power of two")
            }
            MqdError::RingSizeTooSmall(size) => write!(
                f,
                "ring size {size} is below the 1024-byte minimum (the kernel raises it; see `raise_ring_size`)"
            ),
            MqdError::MisalignedAddress {
                kind,
                address,
                alignment,
            } => write!(
                f,
                "{kind} address {address:#x} is not {alignment}-byte aligned"
            ),
            MqdError::PriorityTooHigh(p) => write!(f, "priority {p} exceeds 15"),
            MqdError::PercentageTooHigh(p) => write!(f, "queue percentage {p} exceeds 100"),
            MqdError::VmidTooHigh(v) => write!(f, "VMID {v} exceeds 15"),
            MqdError::DoorbellOffsetTooLarge(d) => write!(
                f,
                "doorbell offset {d:#x} does not fit the 26-bit DOORBELL_OFFSET field"
            ),
            MqdError::CuMaskLength(bits) => write!(
                f,
                "CU mask has {bits} bits; it must be a non-zero multiple of 32"
            ),
            MqdError::CuMaskTooShort { bits, words } => write!(
                f,
                "CU mask claims {bits} bits but only {words} 32-bit words were given"
            ),
            MqdError::NoShaderLayout => f.write_str(
                "a CU mask needs the shader-engine layout (MqdConfig::shader_layout) to be distributed",
            ),
            MqdError::InvalidShaderLayout {
                shader_engines,
                sh_per_se,
                cu_per_sh,
            } => write!(
                f,
                "shader layout {shader_engines} SE x {sh_per_se} SH x {cu_per_sh} CU cannot be expressed: \
                 at most 8 shader engines, 2 shader arrays per engine and 16 CUs per array"
            ),
            MqdError::CwsrAreaTooSmall { size, required } => write!(
                f,
                "CWSR area {size:#x} bytes is smaller than the {required:#x} the topology requires"
            ),
            MqdError::ControlStackSizeMismatch { size, required } => write!(
                f,
                "control stack size {size:#x} differs from the {required:#x} the topology requires"
            ),
            MqdError::ControlStackLargerThanArea {
                ctl_stack_size,
                area_size,
            } => write!(
                f,
                "control stack {ctl_stack_size:#x} bytes does not fit in the {area_size:#x}-byte CWSR area"
            ),
            MqdError::EopTooSmall { size, required } => write!(
                f,
                "EOP buffer {size:#x} bytes is smaller than the {required:#x} the topology requires"
            ),
            MqdError::WrongQueueKind { expected, found } => {
                write!(f, "a {expected} MQD cannot be built for a {found} queue")
            }
            MqdError::GenerationMismatch { mqd, config } => write!(
                f,
                "a {mqd} MQD cannot be built with a {config} configuration"
            ),
            MqdError::UnsupportedGfxVersion(v) => write!(
                f,
                "GC version {v} has no MQD generation here (gfx9, gfx10 and gfx11 are supported)"
            ),
            MqdError::DumpTooShort { mqd, len, need } => write!(
                f,
                "{len} bytes are too short for a {mqd}, which needs {need}"
            ),
            MqdError::BadHeader(found) => write!(
                f,
                "dword 0 is {found:#010x}, not the compute MQD header 0xc0310800"
            ),
            MqdError::ZeroTopologyInput(name) => {
                write!(f, "topology input {name} is 0; the size formulas divide by it")
            }
            MqdError::TopologySizeOverflow(name) => {
                write!(f, "topology-derived {name} does not fit in 32 bits")
            }
        }
    }
}

impl core::error::Error for MqdError {}
