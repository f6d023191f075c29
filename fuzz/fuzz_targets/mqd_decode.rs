//! Fuzz the MQD decoder and printers: arbitrary bytes as a compute and as an SDMA MQD of every
//! generation, then `Display`, the summary, the field dump and every read-back accessor; a
//! decoded MQD must re-encode to exactly the bytes it came from. Decoded MQDs are also put
//! through `update` with queue properties from the input, as the driver model does with an
//! MQD it reads back from GART memory.
#![no_main]

use std::fmt::Write as _;

use libfuzzer_sys::fuzz_target;
use mqd::{
    ComputeDescriptor, ComputeMqd, CuMask, Generation, GfxVersion, KernelVersion, MqdConfig,
    QueueKind, QueueProperties, SdmaDescriptor, SdmaMqd, UpdateInfo,
};

/// Reads a little-endian value from the input tail (zero past the end).
fn word(tail: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = tail.get(i * 8..) {
        let n = s.len().min(8);
        b[..n].copy_from_slice(&s[..n]);
    }
    u64::from_le_bytes(b)
}

fn gc_of(gen: Generation, pick: u64) -> GfxVersion {
    match gen {
        Generation::Gfx9 => [
            GfxVersion::new(9, 0, 1),
            GfxVersion::new(9, 4, 2),
            GfxVersion::new(9, 4, 3),
        ][pick as usize % 3],
        Generation::Gfx10 => GfxVersion::new(10, 3, 0),
        Generation::Gfx11 => GfxVersion::new(11, 0, 0),
    }
}

/// Queue properties and an MQD configuration made from the 8-byte words of `tail`.
fn props(gen: Generation, tail: &[u8]) -> (MqdConfig, QueueProperties, Option<UpdateInfo>) {
    let w = |i| word(tail, i);
    let mut cfg = MqdConfig::new(gc_of(gen, w(0))).with_kernel(if w(1) & 1 == 0 {
        KernelVersion::Linux6_1
    } else {
        KernelVersion::Linux6_12
    });
    cfg.cwsr_enabled = w(1) & 2 != 0;
    cfg.pcie_atomics = w(1) & 4 != 0;
    cfg.sdma_phase_quantum = (w(1) >> 8) as u8;
    let kind = match w(2) % 3 {
        0 => QueueKind::ComputePm4,
        1 => QueueKind::ComputeAql,
        _ => QueueKind::Sdma,
    };
    let p = QueueProperties {
        kind,
        ring_address: w(3),
        ring_size: w(4) as u32,
        rptr_address: w(5),
        wptr_address: w(6),
        doorbell_offset: (w(4) >> 32) as u32,
        eop_address: w(7),
        eop_size: w(8) as u32,
        ctx_save_address: w(9),
        ctx_save_size: (w(8) >> 32) as u32,
        ctl_stack_size: w(10) as u32,
        priority: (w(10) >> 32) as u32 % 32,
        percentage: w(11) as u32 % 128,
        vmid: (w(11) >> 32) as u32 % 16,
        tba_address: w(12),
        sdma_engine_id: w(13) as u32 % 16,
        sdma_queue_id: (w(13) >> 32) as u32 % 16,
        debugger_workaround: w(14) & 1 != 0,
        is_evicted: w(14) & 2 != 0,
        is_suspended: w(14) & 4 != 0,
    };
    let info = (w(15) & 1 != 0).then(|| UpdateInfo {
        cu_mask: CuMask::new(
            32 * (1 + (w(15) >> 1) as u32 % 4),
            &[
                w(16) as u32,
                (w(16) >> 32) as u32,
                w(17) as u32,
                (w(17) >> 32) as u32,
            ],
        )
        .ok(),
        gws: w(15) & 2 != 0,
    });
    (cfg, p, info)
}

fuzz_target!(|data: &[u8]| {
    let mut text = String::new();
    for gen in Generation::ALL {
        if let Ok(mut m) = ComputeMqd::decode(gen, data) {
            let n = m.as_bytes().len();
            assert_eq!(
                m.as_bytes(),
                &data[..n],
                "compute MQD re-encodes to its bytes"
            );
            assert_eq!(ComputeDescriptor::generation(&m), gen);
            text.clear();
            write!(text, "{m}\n{}\n{}", m.summary(), m.dump()).unwrap();
            let _ = (
                m.struct_name(),
                m.mqd_base_address(),
                m.ring_base_address(),
                m.ring_size_bytes(),
                m.rptr_report_address(),
                m.wptr_poll_address(),
                m.doorbell_offset(),
                m.is_aql(),
                m.is_kernel_queue(),
                ComputeDescriptor::is_active(&m),
                m.pipe_priority(),
                m.queue_priority(),
                m.eop_base_address(),
                m.eop_size_bytes(),
                m.cwsr_area(),
                ComputeDescriptor::vmid(&m),
            );
            let (cfg, p, info) = props(gen, &data[n..]);
            if let Ok(active) = m.update(&cfg, &p, info.as_ref()) {
                assert_eq!(
                    active,
                    ComputeDescriptor::is_active(&m),
                    "update reports the new state"
                );
                text.clear();
                write!(text, "{m}").unwrap();
            }
            if let Ok(fresh) = ComputeMqd::init(&cfg, &p, word(data, 0)) {
                let back = ComputeMqd::decode(gen, fresh.as_bytes());
                if cfg.generation() == Ok(gen) {
                    assert_eq!(back, Ok(fresh), "an MQD built by init decodes to itself");
                }
            }
        }
        if let Ok(mut m) = SdmaMqd::decode(gen, data) {
            let n = m.as_bytes().len();
            assert_eq!(n, SdmaMqd::size(gen));
            assert_eq!(m.as_bytes(), &data[..n], "SDMA MQD re-encodes to its bytes");
            text.clear();
            write!(text, "{m}\n{}\n{}", m.summary(), m.dump()).unwrap();
            let _ = (
                m.struct_name(),
                m.ring_base_address(),
                m.ring_size_bytes(),
                m.rptr_writeback_address(),
                m.wptr_poll_address(),
                SdmaDescriptor::doorbell_offset(&m),
                m.engine_id(),
                m.queue_id(),
                SdmaDescriptor::vmid(&m),
                m.ring_rptr(),
                m.ring_wptr(),
            );
            let (cfg, p, _) = props(gen, &data[n..]);
            if m.update(&cfg, &p).is_ok() {
                text.clear();
                write!(text, "{m}").unwrap();
            }
        }
    }
});
