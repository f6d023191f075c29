//! Packets the queues build from thunk objects: a RELEASE_MEM in the layout of the GPU's
//! generation, the event signal of facts §8.2, raw dwords, and an AQL barrier (its header from
//! `pm4::aql`, the one definition of AQL packets).

use crate::event::SignalTarget;
use pm4::aql::{AqlHeader, AqlPacketType, FenceScope};
use pm4::user::{ReleaseDataSel, ReleaseIntSel, ReleaseMemArgs, ReleaseMemGfx10, ReleaseMemGfx9};
use pm4::{BuildError, Encode, GfxGen, WriteError};

/// RELEASE_MEM in the layout of a generation (dw1 differs between gfx9 and gfx10+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseMem {
    /// gfx9 layout.
    Gfx9(ReleaseMemGfx9),
    /// gfx10/gfx11 layout.
    Gfx10(ReleaseMemGfx10),
}

impl ReleaseMem {
    /// Builds the packet for `gen` with amdgpu's fence cache actions (write back and invalidate
    /// the caches before the write, so the CPU sees everything the queue wrote before it).
    pub fn new(gen: GfxGen, args: &ReleaseMemArgs) -> Result<Self, BuildError> {
        Ok(match gen {
            GfxGen::Gfx9 => ReleaseMem::Gfx9(ReleaseMemGfx9::new(
                args,
                ReleaseMemGfx9::amdgpu_fence_cache(),
            )?),
            GfxGen::Gfx10 | GfxGen::Gfx11 => ReleaseMem::Gfx10(ReleaseMemGfx10::new(
                args,
                ReleaseMemGfx10::amdgpu_fence_cache(),
            )?),
        })
    }

    /// End-of-pipe write of `value` (32 or 64 bits) to `addr`, optionally followed by an
    /// interrupt carrying `int_ctxid`.
    pub fn fence(
        gen: GfxGen,
        addr: u64,
        value: u64,
        wide: bool,
        interrupt: Option<u32>,
    ) -> Result<Self, BuildError> {
        let data_sel = if wide {
            ReleaseDataSel::Data64
        } else {
            ReleaseDataSel::Data32
        };
        let int_sel = if interrupt.is_some() {
            ReleaseIntSel::SendInterruptAfterWriteConfirm
        } else {
            ReleaseIntSel::None
        };
        Self::new(
            gen,
            &ReleaseMemArgs::end_of_pipe(addr, value, data_sel, int_sel, interrupt.unwrap_or(0)),
        )
    }

    /// The signal of facts §8.2: write the event's trigger value into its slot, then interrupt
    /// with the event id as context (`int_sel = 2`, `data_sel = 1`).
    pub fn signal(gen: GfxGen, target: &SignalTarget) -> Result<Self, BuildError> {
        Self::fence(
            gen,
            target.slot_address,
            u64::from(target.value),
            false,
            Some(target.int_ctxid),
        )
    }
}

impl Encode for ReleaseMem {
    fn dwords(&self) -> usize {
        8
    }

    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
        match self {
            ReleaseMem::Gfx9(p) => p.encode_into(out),
            ReleaseMem::Gfx10(p) => p.encode_into(out),
        }
    }
}

/// Dwords already encoded (a packet built elsewhere, or copied from a capture).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawDwords<'a>(pub &'a [u32]);

impl Encode for RawDwords<'_> {
    fn dwords(&self) -> usize {
        self.0.len()
    }

    fn encode_into(&self, out: &mut [u32]) -> Result<usize, WriteError> {
        let available = out.len();
        let n = self.0.len();
        let dst = out.get_mut(..n).ok_or(WriteError::OutOfSpace {
            needed: n,
            available,
        })?;
        dst.copy_from_slice(self.0);
        Ok(n)
    }
}

/// A barrier-AND packet over up to five dependency signals (0 = none) with a completion
/// signal (0 = none), as 16 dwords; dword 0 carries the header.
pub fn aql_barrier_and(dependencies: [u64; 5], completion_signal: u64) -> [u32; 16] {
    let mut p = [0u32; 16];
    p[0] = u32::from(
        AqlHeader::new(
            AqlPacketType::BarrierAnd,
            true,
            FenceScope::System,
            FenceScope::System,
        )
        .0,
    );
    for (i, d) in dependencies.iter().enumerate() {
        p[2 + 2 * i] = *d as u32;
        p[3 + 2 * i] = (*d >> 32) as u32;
    }
    p[14] = completion_signal as u32;
    p[15] = (completion_signal >> 32) as u32;
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use pm4::decode::{Packet, Pm4Decoder};

    #[test]
    fn signal_is_the_kfdtest_release_mem() {
        let t = SignalTarget {
            slot_address: 0x7f12_3400_0018,
            value: 3,
            int_ctxid: 3,
        };
        for gen in [GfxGen::Gfx9, GfxGen::Gfx10] {
            let p = ReleaseMem::signal(gen, &t).unwrap();
            let mut buf = [0u32; 8];
            assert_eq!(p.encode_into(&mut buf), Ok(8));
            // Header 0xC0064900 (facts §4.3); dw2: int_sel 2 at [26:24], data_sel 1 at [31:29].
            assert_eq!(buf[0], 0xC006_4900);
            assert_eq!(buf[2] >> 24 & 7, 2);
            assert_eq!(buf[2] >> 29, 1);
            assert_eq!(
                (buf[3], buf[4], buf[5], buf[7]),
                (0x3400_0018, 0x7f12, 3, 3)
            );
            let d = Pm4Decoder::new(&buf, gen).next().unwrap().unwrap();
            assert!(
                matches!(
                    d.packet,
                    Packet::ReleaseMemGfx9(_) | Packet::ReleaseMemGfx10(_)
                ),
                "{:?}",
                d.packet
            );
        }
        assert!(
            ReleaseMem::fence(GfxGen::Gfx9, 0x1004, 1, true, None).is_err(),
            "64-bit data needs 8-byte alignment"
        );
    }

    #[test]
    fn aql_headers() {
        let p = aql_barrier_and([0x1111_2222_3333_4444, 0, 0, 0, 0], 0xAAAA_BBBB_CCCC_DDDD);
        assert_eq!(p[0], 0x1503);
        assert_eq!((p[2], p[3]), (0x3333_4444, 0x1111_2222));
        assert_eq!((p[14], p[15]), (0xCCCC_DDDD, 0xAAAA_BBBB));
        let mut out = [0u32; 2];
        assert!(RawDwords(&[1, 2, 3]).encode_into(&mut out).is_err());
        assert_eq!(RawDwords(&[1, 2]).encode_into(&mut out), Ok(2));
    }
}
