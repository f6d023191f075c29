//! One builder call per generation for the facts §6.4 golden queue (AQL, priority 7, CWSR
//! on), printing the key dwords; then the SDMA `rb_cntl` of §6.5 and one full summary.
//!
//! Run with `cargo run -p mqd --example key_dwords`.

use mqd::{
    ComputeMqd, GfxVersion, KernelVersion, MqdConfig, QueueKind, QueueProperties, SdmaDescriptor,
    SdmaMqd,
};

/// The dwords the closing note of issue #4 quotes, by dword index and name.
const KEY_DWORDS: &[(usize, &str)] = &[
    (145, "cp_hqd_pq_control"),
    (132, "cp_hqd_persistent_state"),
    (149, "cp_hqd_ib_control"),
    (167, "cp_hqd_eop_control"),
    (143, "cp_hqd_pq_doorbell_control"),
    (136, "cp_hqd_pq_base_lo"),
    (137, "cp_hqd_pq_base_hi"),
    (165, "cp_hqd_eop_base_addr_lo"),
    (166, "cp_hqd_eop_base_addr_hi"),
    (133, "cp_hqd_pipe_priority"),
    (134, "cp_hqd_queue_priority"),
    (160, "hq_status0 / hq_scheduler0"),
    (162, "cp_mqd_control"),
    (135, "cp_hqd_quantum"),
    (181, "cp_hqd_aql_control"),
];

fn dword(bytes: &[u8], index: usize) -> u32 {
    bytes
        .get(index * 4..index * 4 + 4)
        .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

fn main() -> Result<(), mqd::MqdError> {
    let queue = QueueProperties::golden_aql();
    let builds = [
        (
            "gfx9 (6.12)",
            GfxVersion::new(9, 0, 0),
            KernelVersion::Linux6_12,
        ),
        (
            "gfx9 (6.1)",
            GfxVersion::new(9, 0, 0),
            KernelVersion::Linux6_1,
        ),
        (
            "gfx10 (6.12)",
            GfxVersion::new(10, 3, 0),
            KernelVersion::Linux6_12,
        ),
        (
            "gfx11 (6.12)",
            GfxVersion::new(11, 0, 0),
            KernelVersion::Linux6_12,
        ),
    ];
    let mut mqds = Vec::new();
    for (label, gc, kernel) in builds {
        let config = MqdConfig::new(gc).with_kernel(kernel);
        // The one builder call per generation:
        let mqd = ComputeMqd::init(&config, &queue, 0x1000)?;
        mqds.push((label, mqd));
    }

    print!("{:<40}", "field");
    for (label, _) in &mqds {
        print!(" {label:>12}");
    }
    println!();
    for &(index, name) in KEY_DWORDS {
        print!("{:<40}", format!("dw{index} {name}"));
        for (_, mqd) in &mqds {
            print!("   {:#010x}", dword(mqd.as_bytes(), index));
        }
        println!();
    }

    let sdma_queue = QueueProperties {
        kind: QueueKind::Sdma,
        ring_size: 1 << 20,
        ..queue
    };
    println!();
    for gc in [
        GfxVersion::new(9, 0, 0),
        GfxVersion::new(10, 3, 0),
        GfxVersion::new(11, 0, 0),
    ] {
        let sdma = SdmaMqd::init(&MqdConfig::new(gc), &sdma_queue)?;
        println!(
            "{:<14} sdmax_rlcx_rb_cntl {:#010x} (1 MiB ring), ring {:#x} bytes",
            sdma.struct_name(),
            dword(sdma.as_bytes(), 0),
            sdma.ring_size_bytes()
        );
    }

    if let Some((_, gfx9)) = mqds.first() {
        println!();
        print!("{gfx9}");
    }
    Ok(())
}
