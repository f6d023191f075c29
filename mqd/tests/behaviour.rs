//! The per-generation differences of facts §10 item 2, the HIQ, priority mapping, update
//! semantics (CU mask, GWS, active state, kernel-version differences) and input validation.

use mqd::{
    v10_compute_mqd, v11_compute_mqd, v9_mqd, AddressKind, ComputeDescriptor, ComputeMqd, CuMask,
    Generation, GfxVersion, KernelVersion, MqdConfig, MqdError, QueueKind, QueueProperties,
    ShaderLayout, TopologySizes, UpdateInfo,
};

fn cfg(major: u8) -> MqdConfig {
    MqdConfig::new(GfxVersion::new(major, 0, 0))
}

fn dw(mqd: &ComputeMqd, index: usize) -> u32 {
    let b = mqd.as_bytes();
    u32::from_ne_bytes([
        b[index * 4],
        b[index * 4 + 1],
        b[index * 4 + 2],
        b[index * 4 + 3],
    ])
}

#[test]
fn pm4_queues_get_no_aql_bits() {
    let pm4 = QueueProperties {
        kind: QueueKind::ComputePm4,
        ..QueueProperties::golden_aql()
    };
    for (major, pq) in [(9, 0x1000_050F), (10, 0x1000_050F), (11, 0x1000_050F)] {
        let mqd = ComputeMqd::init(&cfg(major), &pm4, 0x1000).unwrap();
        assert_eq!(dw(&mqd, 145), pq, "gfx{major} pq_control");
        assert_eq!(dw(&mqd, 143), 0x1006 << 2, "no BIF_DROP");
        assert_eq!(dw(&mqd, 181), 0, "aql_control");
        assert!(!mqd.is_aql());
    }
}

#[test]
fn trap_present_only_on_gfx9() {
    let trapped = QueueProperties {
        tba_address: 0x7000_0000,
        ..QueueProperties::golden_aql()
    };
    assert_eq!(
        dw(&ComputeMqd::init(&cfg(9), &trapped, 0).unwrap(), 20),
        0x40
    );
    assert_eq!(
        dw(
            &ComputeMqd::init(&cfg(9), &QueueProperties::golden_aql(), 0).unwrap(),
            20
        ),
        0
    );
    assert_eq!(dw(&ComputeMqd::init(&cfg(10), &trapped, 0).unwrap(), 20), 0);
    assert_eq!(dw(&ComputeMqd::init(&cfg(11), &trapped, 0).unwrap(), 20), 0);
}

#[test]
fn gfx9_needs_a_context_save_address_for_cwsr_gfx10_and_gfx11_do_not() {
    let no_ctx = QueueProperties {
        ctx_save_address: 0,
        ..QueueProperties::golden_aql()
    };
    let v9 = ComputeMqd::init(&cfg(9), &no_ctx, 0).unwrap();
    assert_eq!(dw(&v9, 132), 0x5301);
    assert_eq!(v9.cwsr_area(), None);
    assert_eq!((dw(&v9, 175), dw(&v9, 177)), (0, 0));
    let v10 = ComputeMqd::init(&cfg(10), &no_ctx, 0).unwrap();
    assert_eq!(dw(&v10, 132), 0x4000_5301);
    assert_eq!(
        (dw(&v10, 171), dw(&v10, 175), dw(&v10, 177)),
        (0, 0x5000, 0x2f_6000)
    );
    let v11 = ComputeMqd::init(&cfg(11), &no_ctx, 0).unwrap();
    assert_eq!(dw(&v11, 132), 0x4000_5501);
}

#[test]
fn cwsr_switched_off() {
    for major in [9, 10, 11] {
        let mut config = cfg(major);
        config.cwsr_enabled = false;
        let mqd = ComputeMqd::init(&config, &QueueProperties::golden_aql(), 0).unwrap();
        assert_eq!(dw(&mqd, 132) & (1 << 30), 0, "gfx{major} QSWITCH_MODE");
        assert_eq!(mqd.cwsr_area(), None);
        for index in [171, 172, 174, 175, 176, 177] {
            assert_eq!(dw(&mqd, index), 0, "gfx{major} dw{index}");
        }
    }
}

#[test]
fn static_thread_masks_sit_where_each_generation_has_them() {
    let v9 = v9_mqd::init(&cfg(9), &QueueProperties::golden_aql(), 0).unwrap();
    assert_eq!(
        [
            v9.compute_static_thread_mgmt_se4,
            v9.compute_static_thread_mgmt_se7
        ],
        [u32::MAX; 2]
    );
    assert_eq!(v9.compute_current_logic_xcc_id(), u32::MAX);
    let v10 = v10_compute_mqd::init(&cfg(10), &QueueProperties::golden_aql(), 0).unwrap();
    assert_eq!(ComputeDescriptor::static_thread_masks(&v10)[4..], [0; 4]);
    let v11 = v11_compute_mqd::init(&cfg(11), &QueueProperties::golden_aql(), 0).unwrap();
    assert_eq!(v11.compute_static_thread_mgmt_se4, u32::MAX);
    assert_eq!(v11.compute_static_thread_mgmt_se7, u32::MAX);
    // dw39-42 of v11 are other registers and stay zero.
    assert_eq!(v11.compute_user_accum_2, 0);
    assert_eq!(v11.compute_pgm_rsrc3, 0);
}

#[test]
fn priority_mapping() {
    for priority in 0..=15u32 {
        let want = match priority {
            0..=6 => 0,
            7..=10 => 1,
            _ => 2,
        };
        let q = QueueProperties {
            priority,
            ..QueueProperties::golden_aql()
        };
        for major in [9, 10, 11] {
            let mqd = ComputeMqd::init(&cfg(major), &q, 0).unwrap();
            assert_eq!(dw(&mqd, 133), want, "pipe priority for {priority}");
            assert_eq!(dw(&mqd, 134), priority);
        }
    }
}

fn hiq() -> QueueProperties {
    QueueProperties::hiq(0x10_0000, 0x20_0000, 0x20_0008, 0x30_0000, 0x2)
}

#[test]
fn hiq_mqd_bits() {
    // 2048-byte ring: QUEUE_SIZE 8; PM4; PRIV_STATE | KMD_QUEUE; 4096-byte EOP: 9.
    for (major, kernel, pq) in [
        (9, KernelVersion::Linux6_12, 0xD000_0508u32),
        (9, KernelVersion::Linux6_1, 0xC000_0508),
        (10, KernelVersion::Linux6_12, 0xD000_0508),
        (11, KernelVersion::Linux6_12, 0xD000_0508),
    ] {
        let config = cfg(major).with_kernel(kernel);
        let mqd = ComputeMqd::init_hiq(&config, &hiq(), 0x8000).unwrap();
        assert_eq!(dw(&mqd, 145), pq, "gfx{major} {kernel}");
        assert_eq!(dw(&mqd, 167), 9);
        assert_eq!(dw(&mqd, 181), 0);
        assert_eq!(dw(&mqd, 143), 0x2 << 2);
        assert!(mqd.is_kernel_queue());
        assert_eq!(mqd.ring_size_bytes(), 2048);
        assert_eq!(mqd.eop_size_bytes(), 4096);
        assert_eq!(mqd.mqd_base_address(), 0x8000);
    }
    // gfx9 without a context-save address: no CWSR; gfx10 with CWSR on: QSWITCH_MODE.
    assert_eq!(
        dw(&ComputeMqd::init_hiq(&cfg(9), &hiq(), 0).unwrap(), 132),
        0x5301
    );
    assert_eq!(
        dw(&ComputeMqd::init_hiq(&cfg(10), &hiq(), 0).unwrap(), 132),
        0x4000_5301
    );
    // The HIQ skips the user-buffer topology checks.
    let strict = cfg(10).with_topology(TopologySizes {
        ctl_stack_size: 0x4000,
        wg_data_size: 0x10_0000,
        cwsr_size: 0x10_4000,
        debug_memory_size: 0xA000,
        eop_buffer_size: 4096,
    });
    assert!(ComputeMqd::init_hiq(&strict, &hiq(), 0).is_ok());
}

#[test]
fn update_changes_ring_and_reports_active_state() {
    for major in [9, 10, 11] {
        let config = cfg(major);
        let mut mqd = ComputeMqd::init(&config, &QueueProperties::golden_aql(), 0x1000).unwrap();
        let before = dw(&mqd, 145);
        let moved = QueueProperties {
            ring_address: 0x5000_0000,
            ring_size: 4096,
            priority: 12,
            ..QueueProperties::golden_aql()
        };
        assert!(mqd.update(&config, &moved, None).unwrap());
        assert_eq!(mqd.ring_base_address(), 0x5000_0000);
        assert_eq!(mqd.ring_size_bytes(), 4096);
        assert_eq!(dw(&mqd, 145), (before & !0x3F) | 9);
        assert_eq!((dw(&mqd, 133), dw(&mqd, 134)), (2, 12));
        // Init-only fields survive an update.
        assert_eq!(dw(&mqd, 0), 0xC031_0800);
        assert_eq!(mqd.mqd_base_address(), 0x1000);
        for parked in [
            QueueProperties {
                percentage: 0,
                ..moved
            },
            QueueProperties {
                ring_size: 0,
                ..moved
            },
            QueueProperties {
                ring_address: 0,
                ..moved
            },
            QueueProperties {
                is_evicted: true,
                ..moved
            },
            QueueProperties {
                is_suspended: true,
                ..moved
            },
        ] {
            assert!(!mqd.update(&config, &parked, None).unwrap());
            assert!(!parked.is_active());
        }
    }
}

#[test]
fn linux_6_1_rewrites_pq_control_on_update_6_12_keeps_it() {
    // Visible on the HIQ: its PRIV_STATE|KMD_QUEUE bits were set after init.
    let new = cfg(9);
    let old = cfg(9).with_kernel(KernelVersion::Linux6_1);
    let mut a = ComputeMqd::init_hiq(&new, &hiq(), 0).unwrap();
    let mut b = ComputeMqd::init_hiq(&old, &hiq(), 0).unwrap();
    a.update(&new, &hiq(), None).unwrap();
    b.update(&old, &hiq(), None).unwrap();
    assert_eq!(dw(&a, 145), 0xD000_0508);
    assert_eq!(dw(&b, 145), 0x0000_0508);
}

#[test]
fn eop_zero_guard_differs_between_kernels() {
    let no_eop = QueueProperties {
        eop_address: 0,
        eop_size: 0,
        kind: QueueKind::ComputePm4,
        ..QueueProperties::golden_aql()
    };
    let new = ComputeMqd::init(&cfg(10), &no_eop, 0).unwrap();
    let old = ComputeMqd::init(&cfg(10).with_kernel(KernelVersion::Linux6_1), &no_eop, 0).unwrap();
    assert_eq!(dw(&new, 167), 0);
    assert_eq!(dw(&old, 167), 0xFFFF_FFFF);
    assert_eq!(new.eop_size_bytes(), 0);
    // With an EOP address but no size, 6.1's all-ones EOP_SIZE reads back saturated.
    let sizeless = QueueProperties {
        eop_address: 0x7f12_3470_0000,
        ..no_eop
    };
    let old = ComputeMqd::init(&cfg(9).with_kernel(KernelVersion::Linux6_1), &sizeless, 0).unwrap();
    assert_eq!(old.eop_size_bytes(), u64::MAX);
}

#[test]
fn cu_mask_update_gfx9() {
    let layout = ShaderLayout::uniform(4, 1, 16).unwrap();
    let config = cfg(9).with_shader_layout(layout);
    let mut mqd = v9_mqd::init(&config, &QueueProperties::golden_aql(), 0).unwrap();
    // Bits 0..=3: CU0 of each SE; bit 4: CU1 of SE0.
    let info = UpdateInfo {
        cu_mask: Some(CuMask::from_words(&[0x1F, 0]).unwrap()),
        gws: false,
    };
    mqd.update(&config, &QueueProperties::golden_aql(), Some(&info))
        .unwrap();
    assert_eq!(
        ComputeDescriptor::static_thread_masks(&mqd),
        [0b11, 1, 1, 1, 0, 0, 0, 0]
    );
    // An update without info (UPDATE_QUEUE, eviction) keeps the mask.
    mqd.update(&config, &QueueProperties::golden_aql(), None)
        .unwrap();
    assert_eq!(mqd.compute_static_thread_mgmt_se0, 0b11);
    assert_eq!(mqd.compute_static_thread_mgmt_se4, 0);
}

#[test]
fn cu_mask_update_gfx10_uses_wgp_pairs() {
    // 2 SE x 2 SH x 10 CU: bits 0,1 -> SE0 SH0 WGP0; bits 2,3 -> SE1; bits 4,5 -> SE0 SH1.
    let layout = ShaderLayout::uniform(2, 2, 10).unwrap();
    let config = cfg(10).with_shader_layout(layout);
    let mut mqd = ComputeMqd::init(&config, &QueueProperties::golden_aql(), 0).unwrap();
    let info = UpdateInfo {
        cu_mask: Some(CuMask::from_words(&[0b01_0001, 0, 0]).unwrap()),
        gws: false,
    };
    mqd.update(&config, &QueueProperties::golden_aql(), Some(&info))
        .unwrap();
    assert_eq!(
        mqd.static_thread_masks()[..4],
        [0b11 | (0b11 << 16), 0, 0, 0]
    );
}

#[test]
fn cu_mask_needs_a_layout_and_a_failed_update_changes_nothing() {
    let config = cfg(9);
    let mut mqd = ComputeMqd::init(&config, &QueueProperties::golden_aql(), 0).unwrap();
    let before = mqd;
    let info = UpdateInfo {
        cu_mask: Some(CuMask::from_words(&[1]).unwrap()),
        gws: false,
    };
    let moved = QueueProperties {
        ring_address: 0x9000_0000,
        ..QueueProperties::golden_aql()
    };
    assert_eq!(
        mqd.update(&config, &moved, Some(&info)),
        Err(MqdError::NoShaderLayout)
    );
    assert_eq!(mqd, before);
    let bad = QueueProperties {
        priority: 16,
        ..moved
    };
    assert_eq!(
        mqd.update(&config, &bad, None),
        Err(MqdError::PriorityTooHigh(16))
    );
    assert_eq!(mqd, before);
}

#[test]
fn force_simd_dist_follows_gws_on_gc_9_4_2_only() {
    let aldebaran = MqdConfig::new(GfxVersion::new(9, 4, 2));
    let mut mqd = v9_mqd::init(&aldebaran, &QueueProperties::golden_aql(), 0).unwrap();
    assert!(!mqd.compute_resource_limits.force_simd_dist());
    let gws = UpdateInfo {
        cu_mask: None,
        gws: true,
    };
    mqd.update(&aldebaran, &QueueProperties::golden_aql(), Some(&gws))
        .unwrap();
    assert_eq!(mqd.compute_resource_limits.into_bits(), 1 << 23);
    mqd.update(&aldebaran, &QueueProperties::golden_aql(), None)
        .unwrap();
    assert!(
        mqd.compute_resource_limits.force_simd_dist(),
        "NULL info keeps it"
    );
    mqd.update(
        &aldebaran,
        &QueueProperties::golden_aql(),
        Some(&UpdateInfo::default()),
    )
    .unwrap();
    assert!(!mqd.compute_resource_limits.force_simd_dist());
    let vega = cfg(9);
    let mut old = v9_mqd::init(&vega, &QueueProperties::golden_aql(), 0).unwrap();
    old.update(&vega, &QueueProperties::golden_aql(), Some(&gws))
        .unwrap();
    assert_eq!(old.compute_resource_limits.into_bits(), 0);
}

#[test]
fn invalid_input_is_an_error_with_a_clear_message() {
    let config = cfg(9);
    let cases: Vec<(QueueProperties, &str)> = vec![
        (
            QueueProperties {
                ring_size: 3000,
                ..QueueProperties::golden_aql()
            },
            "ring size 3000 is not a power of two",
        ),
        (
            QueueProperties {
                ring_size: 512,
                ..QueueProperties::golden_aql()
            },
            "ring size 512 is below the 1024-byte minimum (the kernel raises it; see `raise_ring_size`)",
        ),
        (
            QueueProperties {
                priority: 16,
                ..QueueProperties::golden_aql()
            },
            "priority 16 exceeds 15",
        ),
        (
            QueueProperties {
                percentage: 101,
                ..QueueProperties::golden_aql()
            },
            "queue percentage 101 exceeds 100",
        ),
        (
            QueueProperties {
                ring_address: 0x7f12_3450_0080,
                ..QueueProperties::golden_aql()
            },
            "ring address 0x7f1234500080 is not 256-byte aligned",
        ),
        (
            QueueProperties {
                eop_address: 0x7f12_3470_0010,
                ..QueueProperties::golden_aql()
            },
            "EOP buffer address 0x7f1234700010 is not 256-byte aligned",
        ),
        (
            QueueProperties {
                rptr_address: 0x7f12_3460_0082,
                ..QueueProperties::golden_aql()
            },
            "read pointer address 0x7f1234600082 is not 4-byte aligned",
        ),
        (
            QueueProperties {
                vmid: 16,
                ..QueueProperties::golden_aql()
            },
            "VMID 16 exceeds 15",
        ),
        (
            QueueProperties {
                doorbell_offset: 1 << 26,
                ..QueueProperties::golden_aql()
            },
            "doorbell offset 0x4000000 does not fit the 26-bit DOORBELL_OFFSET field",
        ),
        (
            QueueProperties {
                ctl_stack_size: 0x30_0000,
                ..QueueProperties::golden_aql()
            },
            "control stack 0x300000 bytes does not fit in the 0x2f6000-byte CWSR area",
        ),
        (
            QueueProperties {
                kind: QueueKind::Sdma,
                ..QueueProperties::golden_aql()
            },
            "a compute MQD cannot be built for a SDMA queue",
        ),
    ];
    for (props, message) in cases {
        let err = v9_mqd::init(&config, &props, 0).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
    assert_eq!(
        CuMask::new(33, &[0, 0]).unwrap_err().to_string(),
        "CU mask has 33 bits; it must be a non-zero multiple of 32"
    );
    assert_eq!(
        v10_compute_mqd::init(&config, &QueueProperties::golden_aql(), 0)
            .unwrap_err()
            .to_string(),
        "a gfx10 MQD cannot be built with a gfx9 configuration"
    );
    assert_eq!(
        ComputeMqd::init(
            &MqdConfig::new(GfxVersion::new(12, 0, 0)),
            &QueueProperties::golden_aql(),
            0
        )
        .unwrap_err()
        .to_string(),
        "GC version gfx1200 has no MQD generation here (gfx9, gfx10 and gfx11 are supported)"
    );
    assert_eq!(
        mqd::SdmaMqd::init(&config, &QueueProperties::golden_aql()).unwrap_err(),
        MqdError::WrongQueueKind {
            expected: "SDMA",
            found: QueueKind::ComputeAql
        }
    );
}

#[test]
fn topology_checks_on_user_queues() {
    let sizes = TopologySizes {
        ctl_stack_size: 0x5000,
        wg_data_size: 0x2f_1000,
        cwsr_size: 0x2f_6000,
        debug_memory_size: 0x1_0000,
        eop_buffer_size: 4096,
    };
    let config = cfg(9).with_topology(sizes);
    assert!(v9_mqd::init(&config, &QueueProperties::golden_aql(), 0).is_ok());
    let small = QueueProperties {
        ctx_save_size: 0x1000,
        ctl_stack_size: 0x1000,
        ..QueueProperties::golden_aql()
    };
    assert_eq!(
        v9_mqd::init(&config, &small, 0).unwrap_err().to_string(),
        "CWSR area 0x1000 bytes is smaller than the 0x2f6000 the topology requires"
    );
    let wrong_stack = QueueProperties {
        ctl_stack_size: 0x4000,
        ..QueueProperties::golden_aql()
    };
    assert_eq!(
        v9_mqd::init(&config, &wrong_stack, 0).unwrap_err(),
        MqdError::ControlStackSizeMismatch {
            size: 0x4000,
            required: 0x5000
        }
    );
    let small_eop = QueueProperties {
        eop_size: 2048,
        ..QueueProperties::golden_aql()
    };
    assert_eq!(
        v9_mqd::init(&config, &small_eop, 0).unwrap_err(),
        MqdError::EopTooSmall {
            size: 2048,
            required: 4096
        }
    );
    // gfx10 always uses CWSR when it is on, so a queue without an area is rejected there.
    let no_area = QueueProperties {
        ctx_save_address: 0,
        ctx_save_size: 0,
        ctl_stack_size: 0,
        ..QueueProperties::golden_aql()
    };
    assert!(v9_mqd::init(&config, &no_area, 0).is_ok());
    let config10 = cfg(10).with_topology(sizes);
    assert!(matches!(
        v10_compute_mqd::init(&config10, &no_area, 0),
        Err(MqdError::CwsrAreaTooSmall { size: 0, .. })
    ));
}

#[test]
fn misaligned_write_pointer_names_the_pointer() {
    let props = QueueProperties {
        wptr_address: 0x7f12_3460_0039,
        ..QueueProperties::golden_aql()
    };
    assert_eq!(
        v11_compute_mqd::init(&cfg(11), &props, 0),
        Err(MqdError::MisalignedAddress {
            kind: AddressKind::WritePointer,
            address: 0x7f12_3460_0039,
            alignment: 4
        })
    );
}

#[test]
fn raise_ring_size_applies_the_kernel_minimum() {
    assert_eq!(mqd::raise_ring_size(0), 1024);
    assert_eq!(mqd::raise_ring_size(256), 1024);
    assert_eq!(mqd::raise_ring_size(4096), 4096);
    let raised = QueueProperties {
        ring_size: mqd::raise_ring_size(256),
        ..QueueProperties::golden_aql()
    };
    let mqd = ComputeMqd::init(&cfg(10), &raised, 0).unwrap();
    assert_eq!(mqd.ring_size_bytes(), 1024);
}

#[test]
fn generation_names() {
    assert_eq!(GfxVersion::from_target_version(90010).to_string(), "gfx90a");
    assert_eq!(GfxVersion::new(10, 3, 0).to_string(), "gfx1030");
    assert_eq!(GfxVersion::new(11, 0, 0).target_version(), 110000);
    assert_eq!(
        GfxVersion::new(9, 4, 2).generation(),
        Some(Generation::Gfx9)
    );
    assert_eq!(KernelVersion::default(), KernelVersion::Linux6_12);
}
