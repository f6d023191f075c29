//! SDMA MQDs: the kernel's `init_mqd_sdma` / `update_mqd_sdma` for SDMA 4.x, 5.x and 6.x
//! (facts §6.5), read-back accessors for the SDMA engine model, and decoding.

use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::error::MqdError;
use crate::layout::MqdLayout;
use crate::props::{Generation, MqdConfig, QueueProperties};
use crate::regs::{SdmaDoorbellOffset, SDMA_RLC_DUMMY_DEFAULT};
use crate::v10::v10_sdma_mqd;
use crate::v11::{v11_sdma_mqd, SdmaSchedCntl};
use crate::v9::v9_sdma_mqd;

/// `RPTR_WRITEBACK_TIMER` as the driver programs it.
const RPTR_WRITEBACK_TIMER: u8 = 6;

/// Generation-independent access to an SDMA MQD, for the SDMA engine model.
pub trait SdmaDescriptor {
    /// The MQD generation.
    fn generation(&self) -> Generation;
    /// The MQD bytes, as they sit in GART memory (the same as zerocopy's `as_bytes`, under
    /// a name that does not collide with it when both traits are in scope).
    fn bytes(&self) -> &[u8];
    /// Ring base address (`sdmax_rlcx_rb_base << 8`).
    fn ring_base_address(&self) -> u64;
    /// Ring size in bytes from `RB_SIZE`: `4 × 2^RB_SIZE` (saturating).
    fn ring_size_bytes(&self) -> u64;
    /// Where the engine writes back its read pointer (`sdmax_rlcx_rb_rptr_addr`).
    fn rptr_writeback_address(&self) -> u64;
    /// Where the engine polls the write pointer: SDMA 6 only (`None` on SDMA 4/5, whose MQD
    /// the driver leaves without one).
    fn wptr_poll_address(&self) -> Option<u64>;
    /// Doorbell dword index (`sdmax_rlcx_doorbell_offset.OFFSET`).
    fn doorbell_offset(&self) -> u32;
    /// `sdma_engine_id`.
    fn engine_id(&self) -> u32;
    /// `sdma_queue_id`: the queue within its engine.
    fn queue_id(&self) -> u32;
    /// `RB_VMID`.
    fn vmid(&self) -> u32;
    /// The saved ring read pointer (`sdmax_rlcx_rb_rptr`/`_hi`), in bytes.
    fn ring_rptr(&self) -> u64;
    /// Saves the ring read pointer.
    fn set_ring_rptr(&mut self, rptr: u64);
    /// The saved ring write pointer (`sdmax_rlcx_rb_wptr`/`_hi`), in bytes.
    fn ring_wptr(&self) -> u64;
    /// Saves the ring write pointer.
    fn set_ring_wptr(&mut self, wptr: u64);
}

/// `RB_SIZE` for a ring of `ring_size` bytes: `log2(dwords)` (0 for an empty ring).
fn rb_size_field(ring_size: u32) -> u8 {
    let dwords = ring_size / 4;
    if dwords <= 1 {
        0
    } else {
        (32 - (dwords - 1).leading_zeros()) as u8
    }
}

fn split(value: u64) -> (u32, u32) {
    (value as u32, (value >> 32) as u32)
}

fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | (u64::from(hi) << 32)
}

fn check(config: &MqdConfig, props: &QueueProperties, mqd: Generation) -> Result<(), MqdError> {
    let config_generation = config.generation()?;
    if config_generation != mqd {
        return Err(MqdError::GenerationMismatch {
            mqd,
            config: config_generation,
        });
    }
    if props.kind.is_compute() {
        return Err(MqdError::WrongQueueKind {
            expected: "SDMA",
            found: props.kind,
        });
    }
    props.validate(config, true)
}

macro_rules! impl_sdma_mqd {
    ($ty:ident, $generation:expr, $rb_cntl:ty, $extra:expr, $wptr_poll:expr) => {
        impl $ty {
            /// The kernel's `init_mqd_sdma`: a zeroed MQD, then [`Self::update`].
            pub fn init(config: &MqdConfig, props: &QueueProperties) -> Result<Self, MqdError> {
                check(config, props, $generation)?;
                let mut mqd = Self::new_zeroed();
                mqd.update(config, props)?;
                Ok(mqd)
            }

            /// The kernel's `update_mqd_sdma`: ring, read-pointer write-back, doorbell,
            /// engine and queue id. Returns whether the queue is active. On error the MQD is
            /// unchanged.
            pub fn update(
                &mut self,
                config: &MqdConfig,
                props: &QueueProperties,
            ) -> Result<bool, MqdError> {
                check(config, props, $generation)?;
                self.sdmax_rlcx_rb_cntl = <$rb_cntl>::new()
                    .with_rb_size(rb_size_field(props.ring_size))
                    .with_rb_vmid(props.vmid as u8)
                    .with_rptr_writeback_enable(true)
                    .with_rptr_writeback_timer(RPTR_WRITEBACK_TIMER);
                let (lo, hi) = split(props.ring_address >> 8);
                self.sdmax_rlcx_rb_base = lo;
                self.sdmax_rlcx_rb_base_hi = hi;
                let (lo, hi) = split(props.rptr_address);
                self.sdmax_rlcx_rb_rptr_addr_lo = lo;
                self.sdmax_rlcx_rb_rptr_addr_hi = hi;
                self.sdmax_rlcx_doorbell_offset =
                    SdmaDoorbellOffset::new().with_offset(props.doorbell_offset);
                self.sdma_engine_id = props.sdma_engine_id;
                self.sdma_queue_id = props.sdma_queue_id;
                self.sdmax_rlcx_dummy_reg = SDMA_RLC_DUMMY_DEFAULT;
                #[allow(clippy::redundant_closure_call)]
                ($extra)(self, config, props);
                Ok(props.is_active())
            }

            /// Reads an SDMA MQD from a byte dump (at least the struct's size; a longer dump
            /// is read from its start). SDMA MQDs carry no signature, so only the length is
            /// checked.
            pub fn decode(bytes: &[u8]) -> Result<Self, MqdError> {
                Self::read_from_prefix(bytes)
                    .map(|(mqd, _)| mqd)
                    .map_err(|_| MqdError::DumpTooShort {
                        mqd: <Self as MqdLayout>::NAME,
                        len: bytes.len(),
                        need: <Self as MqdLayout>::SIZE,
                    })
            }

            /// The key fields with names and values (the same as `Display`).
            pub fn summary(&self) -> crate::print::SdmaSummary<'_> {
                crate::print::SdmaSummary::new(self)
            }
        }

        impl SdmaDescriptor for $ty {
            fn generation(&self) -> Generation {
                $generation
            }
            fn bytes(&self) -> &[u8] {
                IntoBytes::as_bytes(self)
            }
            fn ring_base_address(&self) -> u64 {
                join(self.sdmax_rlcx_rb_base, self.sdmax_rlcx_rb_base_hi) << 8
            }
            fn ring_size_bytes(&self) -> u64 {
                1u64.checked_shl(u32::from(self.sdmax_rlcx_rb_cntl.rb_size()) + 2)
                    .unwrap_or(u64::MAX)
            }
            fn rptr_writeback_address(&self) -> u64 {
                join(
                    self.sdmax_rlcx_rb_rptr_addr_lo,
                    self.sdmax_rlcx_rb_rptr_addr_hi,
                )
            }
            fn wptr_poll_address(&self) -> Option<u64> {
                #[allow(clippy::redundant_closure_call)]
                ($wptr_poll)(self)
            }
            fn doorbell_offset(&self) -> u32 {
                self.sdmax_rlcx_doorbell_offset.offset()
            }
            fn engine_id(&self) -> u32 {
                self.sdma_engine_id
            }
            fn queue_id(&self) -> u32 {
                self.sdma_queue_id
            }
            fn vmid(&self) -> u32 {
                u32::from(self.sdmax_rlcx_rb_cntl.rb_vmid())
            }
            fn ring_rptr(&self) -> u64 {
                join(self.sdmax_rlcx_rb_rptr, self.sdmax_rlcx_rb_rptr_hi)
            }
            fn set_ring_rptr(&mut self, rptr: u64) {
                let (lo, hi) = split(rptr);
                self.sdmax_rlcx_rb_rptr = lo;
                self.sdmax_rlcx_rb_rptr_hi = hi;
            }
            fn ring_wptr(&self) -> u64 {
                join(self.sdmax_rlcx_rb_wptr, self.sdmax_rlcx_rb_wptr_hi)
            }
            fn set_ring_wptr(&mut self, wptr: u64) {
                let (lo, hi) = split(wptr);
                self.sdmax_rlcx_rb_wptr = lo;
                self.sdmax_rlcx_rb_wptr_hi = hi;
            }
        }

        impl core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&self.summary(), f)
            }
        }
    };
}

impl_sdma_mqd!(
    v9_sdma_mqd,
    Generation::Gfx9,
    crate::v9::SdmaRbCntl,
    |_: &mut v9_sdma_mqd, _: &MqdConfig, _: &QueueProperties| {},
    |_: &v9_sdma_mqd| None
);
impl_sdma_mqd!(
    v10_sdma_mqd,
    Generation::Gfx10,
    crate::v10::SdmaRbCntl,
    |_: &mut v10_sdma_mqd, _: &MqdConfig, _: &QueueProperties| {},
    |_: &v10_sdma_mqd| None
);
impl_sdma_mqd!(
    v11_sdma_mqd,
    Generation::Gfx11,
    crate::v11::SdmaRbCntl,
    |m: &mut v11_sdma_mqd, config: &MqdConfig, props: &QueueProperties| {
        m.sdmax_rlcx_rb_cntl.set_f32_wptr_poll_enable(true);
        let (lo, hi) = split(props.wptr_address);
        m.sdmax_rlcx_rb_wptr_poll_addr_lo = lo;
        m.sdmax_rlcx_rb_wptr_poll_addr_hi = hi;
        m.sdmax_rlcx_sched_cntl =
            SdmaSchedCntl::new().with_context_quantum(config.sdma_phase_quantum);
    },
    |m: &v11_sdma_mqd| Some(join(
        m.sdmax_rlcx_rb_wptr_poll_addr_lo,
        m.sdmax_rlcx_rb_wptr_poll_addr_hi
    ))
);

/// An SDMA MQD of any generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdmaMqd {
    /// SDMA 4.x (gfx9).
    V9(v9_sdma_mqd),
    /// SDMA 5.x (gfx10).
    V10(v10_sdma_mqd),
    /// SDMA 6.x (gfx11).
    V11(v11_sdma_mqd),
}

macro_rules! each_sdma {
    ($self:expr, $m:ident => $body:expr) => {
        match $self {
            SdmaMqd::V9($m) => $body,
            SdmaMqd::V10($m) => $body,
            SdmaMqd::V11($m) => $body,
        }
    };
}

impl SdmaMqd {
    /// `init_mqd_sdma` for the generation of `config`.
    pub fn init(config: &MqdConfig, props: &QueueProperties) -> Result<Self, MqdError> {
        Ok(match config.generation()? {
            Generation::Gfx9 => SdmaMqd::V9(v9_sdma_mqd::init(config, props)?),
            Generation::Gfx10 => SdmaMqd::V10(v10_sdma_mqd::init(config, props)?),
            Generation::Gfx11 => SdmaMqd::V11(v11_sdma_mqd::init(config, props)?),
        })
    }

    /// `update_mqd_sdma`; returns whether the queue is active.
    pub fn update(
        &mut self,
        config: &MqdConfig,
        props: &QueueProperties,
    ) -> Result<bool, MqdError> {
        each_sdma!(self, m => m.update(config, props))
    }

    /// Reads an SDMA MQD of `generation` from a dump.
    pub fn decode(generation: Generation, bytes: &[u8]) -> Result<Self, MqdError> {
        Ok(match generation {
            Generation::Gfx9 => SdmaMqd::V9(v9_sdma_mqd::decode(bytes)?),
            Generation::Gfx10 => SdmaMqd::V10(v10_sdma_mqd::decode(bytes)?),
            Generation::Gfx11 => SdmaMqd::V11(v11_sdma_mqd::decode(bytes)?),
        })
    }

    /// Size in bytes of an SDMA MQD of `generation` (512, 520, 512).
    pub fn size(generation: Generation) -> usize {
        match generation {
            Generation::Gfx9 => v9_sdma_mqd::SIZE,
            Generation::Gfx10 => v10_sdma_mqd::SIZE,
            Generation::Gfx11 => v11_sdma_mqd::SIZE,
        }
    }

    /// The MQD bytes, as they sit in GART memory.
    pub fn as_bytes(&self) -> &[u8] {
        each_sdma!(self, m => IntoBytes::as_bytes(m))
    }

    /// The C struct name of the variant.
    pub fn struct_name(&self) -> &'static str {
        match self {
            SdmaMqd::V9(_) => v9_sdma_mqd::NAME,
            SdmaMqd::V10(_) => v10_sdma_mqd::NAME,
            SdmaMqd::V11(_) => v11_sdma_mqd::NAME,
        }
    }

    /// The key fields with names and values.
    pub fn summary(&self) -> crate::print::SdmaSummary<'_> {
        each_sdma!(self, m => m.summary())
    }

    /// Every non-zero field with its dword index.
    pub fn dump(&self) -> crate::print::AnyDump<'_> {
        match self {
            SdmaMqd::V9(m) => crate::print::AnyDump::V9Sdma(m.dump()),
            SdmaMqd::V10(m) => crate::print::AnyDump::V10Sdma(m.dump()),
            SdmaMqd::V11(m) => crate::print::AnyDump::V11Sdma(m.dump()),
        }
    }
}

impl SdmaDescriptor for SdmaMqd {
    fn generation(&self) -> Generation {
        each_sdma!(self, m => SdmaDescriptor::generation(m))
    }
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn ring_base_address(&self) -> u64 {
        each_sdma!(self, m => m.ring_base_address())
    }
    fn ring_size_bytes(&self) -> u64 {
        each_sdma!(self, m => m.ring_size_bytes())
    }
    fn rptr_writeback_address(&self) -> u64 {
        each_sdma!(self, m => m.rptr_writeback_address())
    }
    fn wptr_poll_address(&self) -> Option<u64> {
        each_sdma!(self, m => m.wptr_poll_address())
    }
    fn doorbell_offset(&self) -> u32 {
        each_sdma!(self, m => m.doorbell_offset())
    }
    fn engine_id(&self) -> u32 {
        each_sdma!(self, m => m.engine_id())
    }
    fn queue_id(&self) -> u32 {
        each_sdma!(self, m => m.queue_id())
    }
    fn vmid(&self) -> u32 {
        each_sdma!(self, m => m.vmid())
    }
    fn ring_rptr(&self) -> u64 {
        each_sdma!(self, m => m.ring_rptr())
    }
    fn set_ring_rptr(&mut self, rptr: u64) {
        each_sdma!(self, m => m.set_ring_rptr(rptr))
    }
    fn ring_wptr(&self) -> u64 {
        each_sdma!(self, m => m.ring_wptr())
    }
    fn set_ring_wptr(&mut self, wptr: u64) {
        each_sdma!(self, m => m.set_ring_wptr(wptr))
    }
}

impl core::fmt::Display for SdmaMqd {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        each_sdma!(self, m => core::fmt::Display::fmt(m, f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rb_size_is_log2_of_dwords() {
        assert_eq!(rb_size_field(1 << 20), 18);
        assert_eq!(rb_size_field(1024), 8);
        assert_eq!(rb_size_field(0), 0);
    }
}
