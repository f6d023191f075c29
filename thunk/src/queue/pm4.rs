//! The PM4 compute kind and its packets.

use super::dword::{
    dword_ring_state, push_dwords, refresh, resize_ring, ring_error, signal_target, with_encoded,
    DwordRingKind,
};
use super::kind::{sealed, Kind};
use super::raw::RawQueue;
use super::Queue;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::gpu::Gpu;
use crate::packets::ReleaseMem;
use crate::poll::poll_until;
use pm4::ring::{DwordPtr, Pm4Ring};
use pm4::user::{ReleaseMemArgs, WriteData};
use pm4::{Encode, GfxGen};
use std::time::Duration;

/// The PM4 compute kind: packets from [`pm4::user`] built for the GPU's generation, write
/// pointer in dwords ([`DwordPtr`]); pushed packets are written into the ring at once and
/// published on submit.
pub struct Pm4 {
    pub(super) ring: Pm4Ring,
    gen: GfxGen,
    /// [`fence_template`] for `gen`.
    fence: [u32; 8],
    /// Write pointer where `ring` starts counting (a multiple of the ring size): moves when
    /// the ring is resized.
    pub(super) base: u64,
}

impl std::fmt::Debug for Pm4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pm4")
            .field("ring", &self.ring)
            .field("gen", &self.gen)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl sealed::Sealed for Pm4 {}

impl DwordRingKind for Pm4 {
    type Ptr = DwordPtr;
    const QUEUE_KIND: Kind = Kind::Pm4;
    const ENGINE_NAME: &'static str = "the CP";
    const FILLER: u32 = pm4::header::NOP_ONE_DWORD;
    const UNITS_PER_DWORD: u64 = 1;

    fn create(gpu: &Gpu, ring_bytes: u32) -> Result<Self> {
        let gen = gpu.generation()?;
        let dwords = (ring_bytes / 4) as usize;
        Ok(Pm4 {
            ring: Pm4Ring::new(dwords).map_err(|e| ring_error("CREATE_QUEUE", e, "dwords"))?,
            gen,
            fence: fence_template(gen)?,
            base: 0,
        })
    }

    fn read_rptr(&self, raw: &RawQueue) -> DwordPtr {
        DwordPtr::new(raw.read_u32_pointer())
    }

    fn is_idle(&self, raw: &RawQueue) -> bool {
        // The CP reports a dword offset inside the ring.
        let size = self.ring.size_dwords() as u64;
        self.read_rptr(raw).slot(size) == self.ring.wptr().slot(size)
    }

    fn reached(raw: &RawQueue, w: u64) -> bool {
        raw.read_u32_pointer() == w % u64::from(raw.ring_size / 4)
    }

    dword_ring_state!(Pm4Ring);
}

/// The RELEASE_MEM of a 64-bit end-of-pipe fence without interrupt, built once per queue by
/// [`ReleaseMem::fence`]; [`fence_dwords`] puts an address and value into it. The address
/// and data dwords (3–6) are the same in every generation's layout.
fn fence_template(gen: GfxGen) -> Result<[u32; 8]> {
    let mut t = [0u32; 8];
    ReleaseMem::fence(gen, 0, 0, true, None)
        .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?
        .encode_into(&mut t)
        .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?;
    Ok(t)
}

/// The fence `template` writing `value` to `addr` (8-byte aligned): what
/// `ReleaseMem::fence(gen, addr, value, true, None)` encodes to.
fn fence_dwords(template: &[u32; 8], addr: u64, value: u64) -> [u32; 8] {
    let mut p = *template;
    p[3] = addr as u32;
    p[4] = (addr >> 32) as u32;
    p[5] = value as u32;
    p[6] = (value >> 32) as u32;
    p
}

impl Queue<Pm4> {
    /// The PM4 generation packets are built for.
    pub fn gfx_gen(&self) -> GfxGen {
        self.kind.gen
    }

    /// The ring discipline state (pointers, free space).
    pub fn ring_state(&self) -> &Pm4Ring {
        &self.kind.ring
    }

    /// The write pointer including pushed, unsubmitted packets.
    pub fn pending_wptr(&self) -> DwordPtr {
        self.kind.pending()
    }

    /// Dwords free right now.
    pub fn free_dwords(&mut self) -> usize {
        refresh(self);
        self.kind.ring.free_dwords()
    }

    /// Appends a packet (not yet visible to the CP); returns the pending write pointer. The
    /// packet is encoded first and goes into the ring past the published write pointer; one
    /// that fails to encode or does not fit leaves the ring and the write pointer as they
    /// were.
    pub fn push<P: Encode + ?Sized>(&mut self, packet: &P) -> Result<DwordPtr> {
        with_encoded(
            packet.dwords(),
            self.kind.ring.size_dwords(),
            |buf| packet.encode_into(buf),
            |dw| push_dwords(self, dw),
        )
    }

    /// Appends already-encoded dwords.
    pub fn push_raw(&mut self, dwords: &[u32]) -> Result<DwordPtr> {
        push_dwords(self, dwords)
    }

    /// Appends a NOP of `dwords` dwords (header included).
    pub fn push_nop(&mut self, dwords: usize) -> Result<DwordPtr> {
        let max = pm4::header::MAX_PACKET_DWORDS;
        if dwords == 0 || dwords > max {
            return Err(Error::invalid(
                "push",
                format!("a NOP is 1 to {max} dwords, not {dwords}"),
            ));
        }
        with_encoded(
            dwords,
            self.kind.ring.size_dwords(),
            |buf| pm4::writer::write_nop(buf, dwords),
            |dw| push_dwords(self, dw),
        )
    }

    /// Appends a WRITE_DATA of `data` to `addr` (4-byte aligned).
    pub fn push_write_data(&mut self, addr: u64, data: &[u32]) -> Result<DwordPtr> {
        let p = WriteData::memory(addr, data)
            .map_err(|e| Error::invalid("WRITE_DATA", e.to_string()))?;
        self.push(&p)
    }

    /// Appends a RELEASE_MEM built from `args` in this GPU's layout.
    pub fn push_release_mem(&mut self, args: &ReleaseMemArgs) -> Result<DwordPtr> {
        let p = ReleaseMem::new(self.kind.gen, args)
            .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?;
        self.push(&p)
    }

    /// Appends an end-of-pipe fence: RELEASE_MEM writing the 64-bit `value` to `addr`
    /// (8-byte aligned) once everything before it completed.
    pub fn push_fence(&mut self, addr: u64, value: u64) -> Result<DwordPtr> {
        if addr % 8 == 0 {
            // The queue's template with the address and value put in: no packet built.
            let p = fence_dwords(&self.kind.fence, addr, value);
            return push_dwords(self, &p);
        }
        // Misaligned: the builder says why.
        let p = ReleaseMem::fence(self.kind.gen, addr, value, true, None)
            .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?;
        self.push(&p)
    }

    /// Appends the signal of `event` (facts §8.2): RELEASE_MEM writing the trigger value into
    /// the event's slot, then an interrupt with the event id.
    pub fn push_signal(&mut self, event: &Event) -> Result<DwordPtr> {
        let t = signal_target(event)?;
        let p = ReleaseMem::signal(self.kind.gen, &t)
            .map_err(|e| Error::invalid("RELEASE_MEM", e.to_string()))?;
        self.push(&p)
    }

    /// Gives the queue a new ring of `bytes` (`UPDATE_QUEUE` with a new ring address and size).
    /// Needs nothing pushed and unsubmitted; waits until the CP has read everything, then pads
    /// the old ring with NOPs until the write pointer is a multiple of both ring sizes, so the
    /// CP's read position means the same in the old and the new ring.
    pub fn resize_ring(&mut self, bytes: u32, timeout: Duration) -> Result<()> {
        resize_ring(self, bytes, timeout)
    }

    /// Waits until at least `dwords` are free.
    pub fn wait_for_space(&mut self, dwords: usize, timeout: Duration) -> Result<()> {
        let size = self.kind.ring.size_dwords();
        let r = poll_until(timeout, || {
            let rp = DwordPtr::new(self.raw.read_u32_pointer());
            let w = self.kind.ring.pending_wptr().slot(size as u64) as usize;
            (rp.slot(size as u64) as usize + size - 1 - w) % size >= dwords
        });
        refresh(self);
        if r {
            Ok(())
        } else {
            Err(Error::timeout(
                "wait",
                format!(
                    "queue {}: {dwords} dwords did not become free within {timeout:?} ({} free)",
                    self.raw.queue_id,
                    self.kind.ring.free_dwords()
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-queue fence template with an address and value put in is, dword for dword,
    /// the packet the RELEASE_MEM builder makes, in every generation's layout.
    #[test]
    fn fence_template_matches_the_builder() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for gen in [GfxGen::Gfx9, GfxGen::Gfx10, GfxGen::Gfx11] {
            let t = fence_template(gen).unwrap();
            let mut cases = vec![(0, 0), (8, 1), (0xFFFF_FFFF_FFFF_FFF8, u64::MAX)];
            for _ in 0..1000 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                cases.push((seed & !7, seed.rotate_left(29)));
            }
            for (addr, value) in cases {
                let mut want = [0u32; 8];
                ReleaseMem::fence(gen, addr, value, true, None)
                    .unwrap()
                    .encode_into(&mut want)
                    .unwrap();
                assert_eq!(
                    fence_dwords(&t, addr, value),
                    want,
                    "{gen:?} {addr:#x} {value:#x}"
                );
            }
        }
    }
}
