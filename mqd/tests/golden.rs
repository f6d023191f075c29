//! The golden MQD values of facts §6.4 and §6.5, checked dword by dword over the whole
//! struct: every listed field has its value and every other dword is zero.

use mqd::{
    v10_compute_mqd, v10_sdma_mqd, v11_compute_mqd, v11_sdma_mqd, v9_mqd, v9_sdma_mqd,
    ComputeDescriptor, ComputeMqd, GfxVersion, KernelVersion, MqdConfig, MqdLayout, QueueKind,
    QueueProperties, SdmaDescriptor, SdmaMqd,
};

const MQD_ADDRESS: u64 = 0x0000_0080_0000_1000;

fn dwords(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Compares every dword; `expected` lists the non-zero ones.
fn assert_only<M: MqdLayout>(mqd: &M, expected: &[(usize, u32)]) {
    let got = dwords(mqd.as_bytes());
    assert_eq!(got.len() * 4, M::SIZE);
    for (index, value) in got.iter().enumerate() {
        let want = expected
            .iter()
            .find(|(i, _)| *i == index)
            .map_or(0, |(_, v)| *v);
        let name = M::field_at(index).map_or("?", |f| f.name);
        assert_eq!(
            *value,
            want,
            "{} dw{index} ({name}): got {value:#010x}, want {want:#010x}",
            M::NAME
        );
    }
}

/// The dwords every generation shares for the golden queue (§6.4, 6.12).
fn common_golden() -> Vec<(usize, u32)> {
    vec![
        (0, 0xC031_0800),   // header
        (11, 1),            // compute_pipelinestat_enable
        (23, 0xFFFF_FFFF),  // static thread mgmt se0
        (24, 0xFFFF_FFFF),  // se1
        (26, 0xFFFF_FFFF),  // se2
        (27, 0xFFFF_FFFF),  // se3
        (128, 0x0000_1000), // cp_mqd_base_addr_lo
        (129, 0x0000_0080), // cp_mqd_base_addr_hi
        (132, 0x4000_5301), // cp_hqd_persistent_state
        (133, 1),           // cp_hqd_pipe_priority
        (134, 7),           // cp_hqd_queue_priority
        (135, 0x111),       // cp_hqd_quantum
        (136, 0x1234_5000), // cp_hqd_pq_base_lo
        (137, 0x7F),        // cp_hqd_pq_base_hi
        (139, 0x3460_0080), // rptr report lo
        (140, 0x7F12),      // rptr report hi
        (141, 0x3460_0038), // wptr poll lo
        (142, 0x7F12),      // wptr poll hi
        (143, 0x0000_401A), // cp_hqd_pq_doorbell_control
        (145, 0x1C01_450F), // cp_hqd_pq_control
        (149, 0x00B0_0000), // cp_hqd_ib_control
        (160, 0x4000),      // hq_status0 / hq_scheduler0
        (162, 0x100),       // cp_mqd_control
        (165, 0x1234_7000), // eop base lo
        (166, 0x7F),        // eop base hi
        (167, 9),           // cp_hqd_eop_control
        (171, 0x3480_0000), // ctx save base lo
        (172, 0x7F12),      // ctx save base hi
        (174, 0x5000),      // cp_hqd_cntl_stack_offset
        (175, 0x5000),      // cp_hqd_cntl_stack_size
        (176, 0x5000),      // cp_hqd_wg_state_offset
        (177, 0x2F_6000),   // cp_hqd_ctx_save_size
        (181, 1),           // cp_hqd_aql_control
    ]
}

fn with(mut base: Vec<(usize, u32)>, changes: &[(usize, u32)]) -> Vec<(usize, u32)> {
    for &(index, value) in changes {
        base.retain(|(i, _)| *i != index);
        base.push((index, value));
    }
    base
}

fn config(major: u8, minor: u8, kernel: KernelVersion) -> MqdConfig {
    MqdConfig::new(GfxVersion::new(major, minor, 0)).with_kernel(kernel)
}

#[test]
fn golden_gfx9_linux_6_12() {
    let mqd = v9_mqd::init(
        &config(9, 0, KernelVersion::Linux6_12),
        &QueueProperties::golden_aql(),
        MQD_ADDRESS,
    )
    .unwrap();
    let expected = with(
        common_golden(),
        &[
            (39, u32::MAX),
            (40, u32::MAX),
            (41, u32::MAX),
            (42, u32::MAX),
        ],
    );
    assert_only(&mqd, &expected);
    assert_eq!(mqd.cp_hqd_pq_control.into_bits(), 0x1C01_450F);
    assert!(mqd.cp_hqd_pq_control.wpp_clamp_en());
    assert_eq!(mqd.cp_hqd_pq_control.slot_based_wptr(), 2);
}

#[test]
fn golden_gfx9_linux_6_1() {
    let mqd = v9_mqd::init(
        &config(9, 0, KernelVersion::Linux6_1),
        &QueueProperties::golden_aql(),
        MQD_ADDRESS,
    )
    .unwrap();
    let expected = with(
        common_golden(),
        &[
            (39, u32::MAX),
            (40, u32::MAX),
            (41, u32::MAX),
            (42, u32::MAX),
            (145, 0x0C01_450F), // no UNORD_DISPATCH
            (160, 0),           // no debugger dispatch-pointer bit
        ],
    );
    assert_only(&mqd, &expected);
}

#[test]
fn golden_gfx10_linux_6_12() {
    let mqd = v10_compute_mqd::init(
        &config(10, 3, KernelVersion::Linux6_12),
        &QueueProperties::golden_aql(),
        MQD_ADDRESS,
    )
    .unwrap();
    let expected = with(common_golden(), &[(145, 0x1808_450F), (149, 0x0030_0000)]);
    assert_only(&mqd, &expected);
    assert_eq!(mqd.cp_hqd_hq_scheduler0, 0x4000);
}

#[test]
fn golden_gfx11_linux_6_12() {
    let mqd = v11_compute_mqd::init(
        &config(11, 0, KernelVersion::Linux6_12),
        &QueueProperties::golden_aql(),
        MQD_ADDRESS,
    )
    .unwrap();
    let expected = with(
        common_golden(),
        &[
            (44, u32::MAX),
            (45, u32::MAX),
            (46, u32::MAX),
            (47, u32::MAX),
            (132, 0x4000_5501), // PRELOAD_SIZE 0x55
            (145, 0x1808_450F),
            (149, 0x0030_0000),
        ],
    );
    assert_only(&mqd, &expected);
}

#[test]
fn gfx10_and_gfx11_on_linux_6_1() {
    for (major, pq) in [(10, 0x0808_450F), (11, 0x0808_450F)] {
        let mqd = ComputeMqd::init(
            &config(major, 0, KernelVersion::Linux6_1),
            &QueueProperties::golden_aql(),
            MQD_ADDRESS,
        )
        .unwrap();
        let dw = dwords(mqd.as_bytes());
        assert_eq!(dw[145], pq, "gfx{major} pq_control");
        assert_eq!(dw[160], 0, "gfx{major} dw160");
    }
}

#[test]
fn gfx11_atomics_and_debugger_workaround() {
    let mut cfg = config(11, 0, KernelVersion::Linux6_12);
    cfg.pcie_atomics = true;
    let mut queue = QueueProperties::golden_aql();
    queue.debugger_workaround = true;
    let mqd = v11_compute_mqd::init(&cfg, &queue, MQD_ADDRESS).unwrap();
    assert_eq!(mqd.cp_hqd_hq_status0, 0x2000_4000);
    assert_eq!(ComputeDescriptor::static_thread_masks(&mqd), [0xFFFF; 8]);
    // Atomics only reach dw160 on gfx11, and not on 6.1.
    let mut cfg9 = config(9, 0, KernelVersion::Linux6_12);
    cfg9.pcie_atomics = true;
    let v9 = v9_mqd::init(&cfg9, &queue, MQD_ADDRESS).unwrap();
    assert_eq!(v9.cp_hqd_hq_status0, 0x4000);
    assert_eq!(ComputeDescriptor::static_thread_masks(&v9), [u32::MAX; 8]);
    cfg.kernel = KernelVersion::Linux6_1;
    let old = v11_compute_mqd::init(&cfg, &queue, MQD_ADDRESS).unwrap();
    assert_eq!(old.cp_hqd_hq_status0, 0);
}

#[test]
fn golden_accessors_read_the_queue_back() {
    let queue = QueueProperties::golden_aql();
    for major in [9, 10, 11] {
        let mut mqd = ComputeMqd::init(
            &config(major, 0, KernelVersion::Linux6_12),
            &queue,
            MQD_ADDRESS,
        )
        .unwrap();
        assert_eq!(mqd.mqd_base_address(), MQD_ADDRESS);
        assert_eq!(mqd.ring_base_address(), queue.ring_address);
        assert_eq!(mqd.ring_size_bytes(), u64::from(queue.ring_size));
        assert_eq!(mqd.rptr_report_address(), queue.rptr_address);
        assert_eq!(mqd.wptr_poll_address(), queue.wptr_address);
        assert_eq!(mqd.doorbell_offset(), 0x1006);
        assert!(mqd.is_aql());
        assert!(!mqd.is_kernel_queue());
        assert_eq!(mqd.pipe_priority(), mqd::PipePriority::Medium);
        assert_eq!(mqd.queue_priority(), 7);
        assert_eq!(mqd.eop_base_address(), queue.eop_address);
        assert_eq!(mqd.eop_size_bytes(), 4096);
        assert_eq!(
            mqd.cwsr_area(),
            Some(mqd::CwsrArea {
                address: queue.ctx_save_address,
                size: 0x2f_6000,
                ctl_stack_size: 0x5000
            })
        );
        assert_eq!(mqd.vmid(), 0);
        // The firmware's fields.
        assert!(!mqd.is_active());
        mqd.set_active(true);
        assert!(mqd.is_active());
        assert_eq!(dwords(mqd.as_bytes())[130], 1);
        mqd.set_hqd_wptr(0x1_0000_0040);
        mqd.set_hqd_rptr(0x40);
        mqd.set_vmid(9);
        mqd.set_queue_doorbell_id0(0x1006);
        let dw = dwords(mqd.as_bytes());
        assert_eq!(
            (dw[182], dw[183], dw[138], dw[131], dw[240]),
            (0x40, 1, 0x40, 9, 0x1006)
        );
        assert_eq!(mqd.hqd_wptr(), 0x1_0000_0040);
        assert_eq!(mqd.hqd_rptr(), 0x40);
        assert_eq!(mqd.vmid(), 9);
        assert_eq!(mqd.queue_doorbell_id0(), 0x1006);
    }
}

/// §6.5: SDMA queue with a 1 MiB ring, VMID 0.
fn sdma_queue() -> QueueProperties {
    QueueProperties {
        kind: QueueKind::Sdma,
        ring_address: 0x7f12_3450_0000,
        ring_size: 1 << 20,
        rptr_address: 0x7f12_3460_0080,
        wptr_address: 0x7f12_3460_0038,
        doorbell_offset: 0x1008,
        percentage: 100,
        sdma_engine_id: 1,
        sdma_queue_id: 3,
        ..QueueProperties::default()
    }
}

#[test]
fn golden_sdma4_v9() {
    let mqd = v9_sdma_mqd::init(&config(9, 0, KernelVersion::Linux6_12), &sdma_queue()).unwrap();
    assert_only(
        &mqd,
        &[
            (0, 0x0006_1024),  // rb_cntl
            (1, 0x1234_5000),  // rb_base
            (2, 0x7F),         // rb_base_hi
            (8, 0x7F12),       // rb_rptr_addr_hi: before lo
            (9, 0x3460_0080),  // rb_rptr_addr_lo
            (22, 0x1008 << 2), // doorbell_offset
            (27, 0xF),         // dummy_reg
            (126, 1),          // sdma_engine_id
            (127, 3),          // sdma_queue_id
        ],
    );
    assert_eq!(mqd.wptr_poll_address(), None);
}

#[test]
fn golden_sdma5_v10() {
    let mqd = v10_sdma_mqd::init(&config(10, 1, KernelVersion::Linux6_12), &sdma_queue()).unwrap();
    assert_only(
        &mqd,
        &[
            (0, 0x0006_1024),
            (1, 0x1234_5000),
            (2, 0x7F),
            (8, 0x7F12),
            (9, 0x3460_0080),
            (22, 0x1008 << 2),
            (27, 0xF),
            (128, 1), // engine id after 128 register dwords
            (129, 3),
        ],
    );
    assert_eq!(core::mem::size_of::<v10_sdma_mqd>(), 520);
}

#[test]
fn golden_sdma6_v11() {
    let mqd = v11_sdma_mqd::init(&config(11, 0, KernelVersion::Linux6_12), &sdma_queue()).unwrap();
    assert_only(
        &mqd,
        &[
            (0, 0x0006_1824), // rb_cntl with F32_WPTR_POLL_ENABLE
            (1, 0x1234_5000),
            (2, 0x7F),
            (7, 0x7F12),       // rb_rptr_addr_hi
            (8, 0x3460_0080),  // rb_rptr_addr_lo
            (19, 0x1008 << 2), // doorbell_offset
            (22, 0x2000),      // sched_cntl CONTEXT_QUANTUM 32
            (25, 0xF),         // dummy_reg
            (26, 0x7F12),      // wptr poll hi
            (27, 0x3460_0038), // wptr poll lo
            (126, 1),
            (127, 3),
        ],
    );
    assert_eq!(mqd.wptr_poll_address(), Some(0x7f12_3460_0038));
}

#[test]
fn sdma_accessors_and_update() {
    let queue = sdma_queue();
    for major in [9, 10, 11] {
        let cfg = config(major, 0, KernelVersion::Linux6_12);
        let mut mqd = SdmaMqd::init(&cfg, &queue).unwrap();
        assert_eq!(mqd.ring_base_address(), queue.ring_address);
        assert_eq!(mqd.ring_size_bytes(), 1 << 20);
        assert_eq!(mqd.rptr_writeback_address(), queue.rptr_address);
        assert_eq!(mqd.doorbell_offset(), 0x1008);
        assert_eq!((mqd.engine_id(), mqd.queue_id()), (1, 3));
        assert_eq!(mqd.vmid(), 0);
        mqd.set_ring_wptr(0x1_0000_0100);
        mqd.set_ring_rptr(0x80);
        assert_eq!((mqd.ring_wptr(), mqd.ring_rptr()), (0x1_0000_0100, 0x80));
        // Update: smaller ring, new VMID; the saved pointers stay.
        let moved = QueueProperties {
            ring_size: 4096,
            ring_address: 0x2000_0000,
            vmid: 9,
            ..queue
        };
        assert!(mqd.update(&cfg, &moved).unwrap());
        assert_eq!(mqd.ring_size_bytes(), 4096);
        assert_eq!(mqd.ring_base_address(), 0x2000_0000);
        assert_eq!(mqd.vmid(), 9);
        assert_eq!(mqd.ring_wptr(), 0x1_0000_0100);
        let parked = QueueProperties {
            percentage: 0,
            ..moved
        };
        assert!(!mqd.update(&cfg, &parked).unwrap());
    }
}

#[test]
fn sdma_sizes_per_generation() {
    assert_eq!(SdmaMqd::size(mqd::Generation::Gfx9), 512);
    assert_eq!(SdmaMqd::size(mqd::Generation::Gfx10), 520);
    assert_eq!(SdmaMqd::size(mqd::Generation::Gfx11), 512);
    assert_eq!(v9_mqd::SIZE, 2048);
    assert_eq!(v10_compute_mqd::SIZE, 2048);
    assert_eq!(v11_compute_mqd::SIZE, 2048);
}
