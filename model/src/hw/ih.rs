//! The interrupt handler (IH) ring: where the engines post interrupts and the driver's
//! interrupt code reads them, as 32-byte SOC15 entries.
//!
//! Entry layout (eight dwords, as amdgpu's SOC15 IH decoder reads them):
//!
//! | dw | bits | field |
//! |---|---|---|
//! | 0 | 7:0 | client id |
//! | 0 | 15:8 | source id |
//! | 0 | 23:16 | ring id |
//! | 0 | 27:24 | VMID |
//! | 0 | 31 | VMID type |
//! | 1 | 31:0 | timestamp bits 31:0 |
//! | 2 | 15:0 | timestamp bits 47:32 |
//! | 2 | 31 | timestamp source |
//! | 3 | 15:0 | PASID |
//! | 3 | 23:16 | node id |
//! | 4–7 | | source data (context id 0–3) |
//!
//! The ring has a fixed number of entries; when the driver falls behind, new entries are
//! dropped and the overflow counted, as the hardware sets `RB_OVERFLOW`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// IH client: the graphics/compute command processor (`SOC15_IH_CLIENTID_GRBM_CP`).
pub const IH_CLIENT_GRBM_CP: u8 = 0x14;
/// IH client: the VM L2 of the memory hub (`SOC15_IH_CLIENTID_VMC`).
pub const IH_CLIENT_VMC: u8 = 0x12;
/// IH client: the GFX hub's UTCL2 (`SOC15_IH_CLIENTID_UTCL2`).
pub const IH_CLIENT_UTCL2: u8 = 0x1b;
/// IH client of SDMA engine 0 (`SOC15_IH_CLIENTID_SDMA0`); engine *n* is `SDMA0 + n` for the
/// first two engines, as the model numbers all of them.
pub const IH_CLIENT_SDMA0: u8 = 0x08;

/// Source id of a CP end-of-pipe interrupt (`SOC15_INTSRC_CP_END_OF_PIPE`).
pub const SRC_CP_END_OF_PIPE: u8 = 181;
/// Source id of a CP "bad opcode" (queue error) interrupt (`SOC15_INTSRC_CP_BAD_OPCODE`).
pub const SRC_CP_BAD_OPCODE: u8 = 183;
/// Source id of an SDMA TRAP on SDMA 4/5 (`SOC15_INTSRC_SDMA_TRAP`).
pub const SRC_SDMA_TRAP: u8 = 224;
/// Source id of an SDMA TRAP on SDMA 6, which arrives from the GRBM_CP client
/// (`SOC21_INTSRC_SDMA_TRAP`).
pub const SRC_SDMA_TRAP_SOC21: u8 = 49;
/// Source id of an SQ interrupt message (`SOC15_INTSRC_SQ_INTERRUPT_MSG`): `s_sendmsg
/// sendmsg(MSG_INTERRUPT)` from a wave, and SQ errors.
pub const SRC_SQ_INTERRUPT_MSG: u8 = 239;
/// `SQ_INTERRUPT_WORD_WAVE_CTXID.PRIV` (context_id0 bit 13): sent by a trap handler.
pub const SQ_WAVE_CTXID_PRIV: u32 = 1 << 13;
/// `SQ_INTERRUPT_WORD_WAVE_CTXID.ENCODING` shift (context_id0 bits 27:26).
pub const SQ_WAVE_CTXID_ENCODING_SHIFT: u32 = 26;
/// `SQ_INTERRUPT_WORD_ENCODING_INST`: the interrupt came from an `s_sendmsg`.
pub const SQ_ENCODING_INST: u32 = 1;

/// The context ids of a wave's `s_sendmsg(MSG_INTERRUPT)` carrying `data` (M0's low 24
/// bits): data bits 11:0 in context_id0 11:0, 15:12 in context_id0 31:28, 23:16 in
/// context_id1 7:0 (the gfx9 SQ interrupt word), encoding INST, not privileged.
pub fn sq_sendmsg_context(data: u32) -> [u32; 2] {
    let ctx0 = (data & 0xfff)
        | ((data & 0xf000) << 16)
        | (SQ_ENCODING_INST << SQ_WAVE_CTXID_ENCODING_SHIFT);
    [ctx0, (data >> 16) & 0xff]
}

/// The 24 data bits of an SQ interrupt message (amdkfd's `KFD_CONTEXT_ID_GET_SQ_INT_DATA`).
pub fn sq_int_data(ctx0: u32, ctx1: u32) -> u32 {
    (ctx0 & 0xfff) | ((ctx0 >> 16) & 0xf000) | ((ctx1 << 16) & 0xff_0000)
}

/// Source id of a GPU VM fault (`VMC_1_0__SRCID__VM_FAULT` / `UTCL2_1_0__SRCID__FAULT`).
pub const SRC_VM_FAULT: u8 = 0;

/// Bit of `src_data[1]` of a VM fault: the access was a write. (`src_data[0]` holds bits 43:12
/// of the faulting address, `src_data[1]` bits 3:0 its bits 47:44.)
pub const VM_FAULT_WRITE: u32 = 0x20;
/// Flag in `src_data[2]` of a VM fault (model convention): nothing was mapped there.
pub const VM_FAULT_NOT_PRESENT: u32 = 0x1;
/// Flag in `src_data[2]` of a VM fault (model convention): a write hit a read-only mapping.
pub const VM_FAULT_READ_ONLY: u32 = 0x2;

/// Entries the modelled ring holds.
pub const IH_RING_ENTRIES: usize = 1024;

/// One decoded IH entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IhEntry {
    /// Which block raised it.
    pub client_id: u8,
    /// What happened.
    pub source_id: u8,
    /// Ring / queue id (CP: `me << 2 | pipe` and `queue << 4`).
    pub ring_id: u8,
    /// The VMID of the access or queue.
    pub vmid: u8,
    /// 48-bit GPU timestamp.
    pub timestamp: u64,
    /// The PASID of the process.
    pub pasid: u16,
    /// The node (XCC/partition) id.
    pub node_id: u8,
    /// `context_id0..3`.
    pub src_data: [u32; 4],
}

impl IhEntry {
    /// The eight dwords of the ring entry.
    pub fn encode(&self) -> [u32; 8] {
        [
            u32::from(self.client_id)
                | u32::from(self.source_id) << 8
                | u32::from(self.ring_id) << 16
                | u32::from(self.vmid & 0xF) << 24,
            self.timestamp as u32,
            ((self.timestamp >> 32) & 0xFFFF) as u32,
            u32::from(self.pasid) | u32::from(self.node_id) << 16,
            self.src_data[0],
            self.src_data[1],
            self.src_data[2],
            self.src_data[3],
        ]
    }

    /// Reads an entry from its eight dwords.
    pub fn decode(dw: &[u32; 8]) -> IhEntry {
        IhEntry {
            client_id: dw[0] as u8,
            source_id: (dw[0] >> 8) as u8,
            ring_id: (dw[0] >> 16) as u8,
            vmid: ((dw[0] >> 24) & 0xF) as u8,
            timestamp: u64::from(dw[1]) | u64::from(dw[2] & 0xFFFF) << 32,
            pasid: dw[3] as u16,
            node_id: (dw[3] >> 16) as u8,
            src_data: [dw[4], dw[5], dw[6], dw[7]],
        }
    }
}

impl std::fmt::Display for IhEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "client {:#04x} src {} ring {:#04x} vmid {} pasid {:#x} ctx [{:#x}, {:#x}, {:#x}, {:#x}]",
            self.client_id,
            self.source_id,
            self.ring_id,
            self.vmid,
            self.pasid,
            self.src_data[0],
            self.src_data[1],
            self.src_data[2],
            self.src_data[3]
        )
    }
}

/// Injected interrupt faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IhFaults {
    /// Lose the next this many interrupts.
    pub drop_next: u32,
    /// Lose every n-th interrupt (1 = all of them).
    pub drop_every: Option<u32>,
    /// Hold every interrupt back this long before the driver sees it.
    pub delay: Option<Duration>,
}

#[derive(Debug)]
struct Ring {
    dwords: Vec<u32>,
    /// When each entry was posted (for delayed delivery).
    posted_at: Vec<Instant>,
    /// Monotonic entry counters.
    wptr: u64,
    rptr: u64,
    overflows: u64,
    faults: IhFaults,
    offered: u64,
    dropped: u64,
}

/// The IH ring of one GPU.
#[derive(Debug)]
pub struct IhRing {
    ring: Mutex<Ring>,
}

impl Default for IhRing {
    fn default() -> Self {
        Self::new()
    }
}

impl IhRing {
    /// An empty ring of [`IH_RING_ENTRIES`] entries.
    pub fn new() -> Self {
        IhRing {
            ring: Mutex::new(Ring {
                dwords: vec![0; IH_RING_ENTRIES * 8],
                posted_at: vec![Instant::now(); IH_RING_ENTRIES],
                wptr: 0,
                rptr: 0,
                overflows: 0,
                faults: IhFaults::default(),
                offered: 0,
                dropped: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the injected faults.
    pub fn set_faults(&self, faults: IhFaults) {
        self.lock().faults = faults;
    }

    /// The injected faults.
    pub fn faults(&self) -> IhFaults {
        self.lock().faults
    }

    /// Interrupts lost to an injected fault.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Posts an entry; `false` (and the overflow counted) if the ring is full.
    pub fn push(&self, entry: &IhEntry) -> bool {
        let mut r = self.lock();
        r.offered += 1;
        let every = r
            .faults
            .drop_every
            .is_some_and(|n| n > 0 && r.offered % u64::from(n) == 0);
        if r.faults.drop_next > 0 || every {
            r.faults.drop_next = r.faults.drop_next.saturating_sub(1);
            r.dropped += 1;
            log::warn!(target: crate::layer::IH, "interrupt lost (injected fault): {entry}");
            return false;
        }
        if r.wptr - r.rptr >= IH_RING_ENTRIES as u64 {
            r.overflows += 1;
            log::error!(target: crate::layer::IH, "IH ring overflow: dropped {entry}");
            return false;
        }
        let index = (r.wptr % IH_RING_ENTRIES as u64) as usize;
        r.dwords[index * 8..index * 8 + 8].copy_from_slice(&entry.encode());
        r.posted_at[index] = Instant::now();
        r.wptr += 1;
        log::trace!(target: crate::layer::IH, "IH <- {entry}");
        true
    }

    /// Takes every pending entry that is due, oldest first.
    pub fn drain(&self) -> Vec<IhEntry> {
        let mut r = self.lock();
        let mut out = Vec::with_capacity((r.wptr - r.rptr) as usize);
        let now = Instant::now();
        while r.rptr < r.wptr {
            let index = (r.rptr % IH_RING_ENTRIES as u64) as usize;
            if let Some(d) = r.faults.delay {
                if now.duration_since(r.posted_at[index]) < d {
                    break;
                }
            }
            let slot = index * 8;
            let mut dw = [0u32; 8];
            dw.copy_from_slice(&r.dwords[slot..slot + 8]);
            out.push(IhEntry::decode(&dw));
            r.rptr += 1;
        }
        out
    }

    /// Whether entries are waiting.
    pub fn is_pending(&self) -> bool {
        let r = self.lock();
        r.wptr != r.rptr
    }

    /// Entries dropped because the ring was full.
    pub fn overflows(&self) -> u64 {
        self.lock().overflows
    }

    /// Entries posted so far.
    pub fn posted(&self) -> u64 {
        self.lock().wptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_the_soc15_layout() {
        let e = IhEntry {
            client_id: IH_CLIENT_GRBM_CP,
            source_id: SRC_CP_END_OF_PIPE,
            ring_id: 0x15,
            vmid: 9,
            timestamp: 0x1234_5678_9abc,
            pasid: 0x8001,
            node_id: 0,
            src_data: [7, 0, 0, 0],
        };
        let dw = e.encode();
        assert_eq!(dw[0], 0x0915_b514);
        assert_eq!(dw[3] & 0xFFFF, 0x8001, "PASID in dword 3 [15:0]");
        assert_eq!(dw[4], 7, "context_id0 in dword 4");
        assert_eq!(IhEntry::decode(&dw), e);
    }

    #[test]
    fn the_ring_drops_and_counts_when_full() {
        let ih = IhRing::new();
        let e = IhEntry::default();
        for _ in 0..IH_RING_ENTRIES {
            assert!(ih.push(&e));
        }
        assert!(!ih.push(&e));
        assert_eq!(ih.overflows(), 1);
        assert_eq!(ih.drain().len(), IH_RING_ENTRIES);
        assert!(!ih.is_pending());
        assert!(ih.push(&e), "room again after the driver caught up");
    }
}

#[cfg(test)]
mod fault_tests {
    use super::*;

    #[test]
    fn injected_losses_and_delays() {
        let ih = IhRing::new();
        ih.set_faults(IhFaults {
            drop_next: 1,
            drop_every: Some(3),
            delay: None,
        });
        let posted: Vec<bool> = (0..6).map(|_| ih.push(&IhEntry::default())).collect();
        // The first is lost by drop_next, the third and sixth by drop_every.
        assert_eq!(posted, [false, true, false, true, true, false]);
        assert_eq!((ih.dropped(), ih.drain().len()), (3, 3));
        ih.set_faults(IhFaults {
            delay: Some(Duration::from_millis(20)),
            ..Default::default()
        });
        ih.push(&IhEntry::default());
        assert!(ih.drain().is_empty() && ih.is_pending(), "held back");
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(ih.drain().len(), 1);
    }

    #[test]
    fn sq_sendmsg_context_splits_m0_the_way_amdkfd_reassembles_it() {
        // 24 data bits 0xABCDEF: 0xDEF in ctx0[11:0], 0xC in ctx0[31:28], 0xAB in ctx1[7:0]
        let [ctx0, ctx1] = sq_sendmsg_context(0xAB_CDEF);
        assert_eq!(ctx0, 0xC000_0DEF | 1 << 26, "encoding INST, PRIV clear");
        assert_eq!(ctx1, 0xAB);
        assert_eq!(ctx0 & SQ_WAVE_CTXID_PRIV, 0);
        assert_eq!(sq_int_data(ctx0, ctx1), 0xAB_CDEF);
        assert_eq!(
            sq_int_data(0xFFFF_FFFF, 0xFFFF_FFFF),
            0xFF_FFFF,
            "24 bits at most"
        );
    }
}
