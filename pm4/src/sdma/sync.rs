//! SDMA packets that order and signal: FENCE, TRAP, POLL_REGMEM, TIMESTAMP and INDIRECT.

use super::*;

// ---------------------------------------------------------------------------------------
// FENCE, TRAP
// ---------------------------------------------------------------------------------------

/// FENCE dw0 (the cache bits exist on SDMA 5+).
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaFenceHeader {
    /// `[7:0]` opcode (FENCE).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (0).
    pub sub_op: u8,
    /// `[18:16]` memory type (SDMA 5+).
    #[bits(3)]
    pub mtype: u8,
    /// `[19]` GCC (SDMA 5+).
    pub gcc: bool,
    /// `[20]` system (SDMA 5+).
    pub sys: bool,
    #[bits(1)]
    __: u8,
    /// `[22]` snoop (SDMA 5+).
    pub snp: bool,
    /// `[23]` GPA (SDMA 5+).
    pub gpa: bool,
    /// `[25:24]` L2 policy (SDMA 5+).
    #[bits(2)]
    pub l2_policy: u8,
    #[bits(6)]
    __: u8,
}

const FENCE_HEADER_RESERVED: u32 = reserved_mask!(SdmaFenceHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, MTYPE_OFFSET / MTYPE_BITS, GCC_OFFSET / GCC_BITS,
    SYS_OFFSET / SYS_BITS, SNP_OFFSET / SNP_BITS, GPA_OFFSET / GPA_BITS, L2_POLICY_OFFSET / L2_POLICY_BITS);

impl SdmaFenceHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = FENCE_HEADER_RESERVED;
}
const FENCE_SDMA5_ONLY: u32 = 0x03FF_0000;

// [`SdmaFence`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaFence {
    /// A fence writing `data` to `addr` (4-byte aligned).
    pub fn new(addr: u64, data: u32) -> Result<Self, BuildError> {
        check_align(Self::NAME, "addr", addr, 4)?;
        Ok(SdmaFence {
            header: SdmaFenceHeader::new().with_op(SdmaOpcode::FENCE),
            addr_lo: lo32(addr),
            addr_hi: hi32(addr),
            data,
        })
    }

    /// The address.
    pub const fn addr(&self) -> u64 {
        join(self.addr_lo, self.addr_hi)
    }

    /// Checks reserved bits as the decoder for `gen` does.
    pub fn validate(&self, gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        let mut reserved = FENCE_HEADER_RESERVED;
        if gen.major() == 4 {
            reserved |= FENCE_SDMA5_ONLY;
        }
        check_reserved(Self::NAME, 0, self.header.into_bits(), reserved)?;
        check_reserved(Self::NAME, 1, self.addr_lo, 0b11)
    }
}

/// TRAP dw1.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaTrapContext {
    /// `[27:0]` interrupt context (→ IH `context_id0`; KFD uses 28 bits as event id).
    #[bits(28)]
    pub int_context: u32,
    #[bits(4)]
    __: u8,
}

// [`SdmaTrap`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaTrap {
    /// A trap with `int_context` (28 bits).
    pub fn new(int_context: u32) -> Result<Self, BuildError> {
        check_bits(Self::NAME, "int_context", int_context.into(), 28)?;
        Ok(SdmaTrap {
            header: SdmaHeader::of(SdmaOpcode::TRAP, 0),
            context: SdmaTrapContext::new().with_int_context(int_context),
        })
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(Self::NAME, 0, self.header.into_bits(), 0xFFFF_0000)?;
        check_reserved(Self::NAME, 1, self.context.into_bits(), 0xF000_0000)
    }
}

// ---------------------------------------------------------------------------------------
// POLL_REGMEM
// ---------------------------------------------------------------------------------------

/// POLL_REGMEM dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaPollHeader {
    /// `[7:0]` opcode (POLL_REGMEM).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (0 = poll).
    pub sub_op: u8,
    #[bits(10)]
    __: u16,
    /// `[26]` HDP flush.
    pub hdp_flush: bool,
    #[bits(1)]
    __: u8,
    /// `[30:28]` comparison.
    #[bits(3)]
    pub func: CompareFunction,
    /// `[31]` 1 = memory, 0 = register.
    pub mem_poll: bool,
}

const POLL_HEADER_RESERVED: u32 = reserved_mask!(SdmaPollHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, HDP_FLUSH_OFFSET / HDP_FLUSH_BITS,
    FUNC_OFFSET / FUNC_BITS, MEM_POLL_OFFSET / MEM_POLL_BITS);

impl SdmaPollHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = POLL_HEADER_RESERVED;
}

/// POLL_REGMEM dw5.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaPollInterval {
    /// `[15:0]` poll interval.
    pub interval: u16,
    /// `[27:16]` retry count (`0xFFF` = infinite).
    #[bits(12)]
    pub retry_count: u16,
    #[bits(4)]
    __: u8,
}

// [`SdmaPollRegmem`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaPollRegmem {
    /// A poll of memory at `addr` (4-byte aligned) until `(value & mask) func reference`.
    pub fn memory(
        addr: u64,
        func: CompareFunction,
        reference: u32,
        mask: u32,
        interval: u16,
        retry_count: u16,
    ) -> Result<Self, BuildError> {
        check_align(Self::NAME, "addr", addr, 4)?;
        check_bits(Self::NAME, "retry_count", retry_count.into(), 12)?;
        Ok(SdmaPollRegmem {
            header: SdmaPollHeader::new()
                .with_op(SdmaOpcode::POLL_REGMEM)
                .with_func_checked(func)
                .map_err(|_| enum_overflow(Self::NAME, "func", func.into_bits()))?
                .with_mem_poll(true),
            addr_lo: lo32(addr),
            addr_hi: hi32(addr),
            reference,
            mask,
            interval: SdmaPollInterval::new()
                .with_interval(interval)
                .with_retry_count(retry_count),
        })
    }

    /// The address (memory) or register byte offset.
    pub const fn addr(&self) -> u64 {
        join(self.addr_lo, self.addr_hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(Self::NAME, 0, self.header.into_bits(), POLL_HEADER_RESERVED)?;
        check_enum(Self::NAME, 0, "func", self.header.func())?;
        check_reserved(Self::NAME, 1, self.addr_lo, 0b11)?;
        check_reserved(Self::NAME, 5, self.interval.into_bits(), 0xF000_0000)
    }
}

// ---------------------------------------------------------------------------------------
// TIMESTAMP
// ---------------------------------------------------------------------------------------

/// TIMESTAMP dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaTimestampHeader {
    /// `[7:0]` opcode (TIMESTAMP).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` which timestamp operation.
    #[bits(8)]
    pub sub_op: TimestampOp,
    #[bits(16)]
    __: u16,
}

// [`SdmaTimestamp`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaTimestamp {
    /// A GET or GET_GLOBAL writing the timestamp to `addr` (8-byte aligned), or a SET
    /// of the counter to `addr_or_value`.
    pub fn new(op: TimestampOp, addr_or_value: u64) -> Result<Self, BuildError> {
        if op != TimestampOp::Set {
            check_align(Self::NAME, "addr", addr_or_value, 8)?;
        }
        Ok(SdmaTimestamp {
            header: SdmaTimestampHeader::new()
                .with_op(SdmaOpcode::TIMESTAMP)
                .with_sub_op(op),
            lo: lo32(addr_or_value),
            hi: hi32(addr_or_value),
        })
    }

    /// The address (GET) or value (SET).
    pub const fn operand(&self) -> u64 {
        join(self.lo, self.hi)
    }

    /// Checks reserved bits and field values as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(Self::NAME, 0, self.header.into_bits(), 0xFFFF_0000)?;
        check_enum(Self::NAME, 0, "sub_op", self.header.sub_op())?;
        if self.header.sub_op() != TimestampOp::Set {
            check_reserved(Self::NAME, 1, self.lo, 0b111)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// INDIRECT
// ---------------------------------------------------------------------------------------

/// INDIRECT dw0.
#[bitfield(u32)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, PartialEq, Eq)]
pub struct SdmaIndirectHeader {
    /// `[7:0]` opcode (INDIRECT).
    #[bits(8)]
    pub op: SdmaOpcode,
    /// `[15:8]` sub-opcode (0).
    pub sub_op: u8,
    /// `[19:16]` VMID.
    #[bits(4)]
    pub vmid: u8,
    #[bits(11)]
    __: u16,
    /// `[31]` privileged.
    pub privileged: bool,
}

const INDIRECT_HEADER_RESERVED: u32 = reserved_mask!(SdmaIndirectHeader:
    OP_OFFSET / OP_BITS, SUB_OP_OFFSET / SUB_OP_BITS, VMID_OFFSET / VMID_BITS, PRIVILEGED_OFFSET / PRIVILEGED_BITS);

impl SdmaIndirectHeader {
    /// Bits no named field covers; the decoder rejects packets with any of them set.
    pub const RESERVED_MASK: u32 = INDIRECT_HEADER_RESERVED;
}

// [`SdmaIndirect`]'s dwords: its row of the packet table (`sdma_packets!`).

impl SdmaIndirect {
    /// An IB of `size_dwords` (20 bits) at `base` (32-byte aligned) run with `vmid`.
    pub fn new(base: u64, size_dwords: u32, vmid: u8, csa: u64) -> Result<Self, BuildError> {
        check_align(Self::NAME, "base", base, 32)?;
        check_bits(Self::NAME, "ib_size", size_dwords.into(), 20)?;
        check_bits(Self::NAME, "vmid", vmid.into(), 4)?;
        Ok(SdmaIndirect {
            header: SdmaIndirectHeader::new()
                .with_op(SdmaOpcode::INDIRECT)
                .with_vmid(vmid),
            base_lo: lo32(base),
            base_hi: hi32(base),
            ib_size: size_dwords,
            csa_lo: lo32(csa),
            csa_hi: hi32(csa),
        })
    }

    /// IB address.
    pub const fn base(&self) -> u64 {
        join(self.base_lo, self.base_hi)
    }

    /// Context-save area.
    pub const fn csa(&self) -> u64 {
        join(self.csa_lo, self.csa_hi)
    }

    /// Checks reserved bits as the decoder does.
    pub fn validate(&self, _gen: SdmaGen) -> Result<(), DecodeErrorKind> {
        check_reserved(
            Self::NAME,
            0,
            self.header.into_bits(),
            INDIRECT_HEADER_RESERVED,
        )?;
        check_reserved(Self::NAME, 1, self.base_lo, 0x1F)?;
        check_reserved(Self::NAME, 3, self.ib_size, 0xFFF0_0000)
    }
}
