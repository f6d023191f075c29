//! Bytes → struct → bytes, decoding errors, and the printers.

use mqd::{
    v10_compute_mqd, v10_sdma_mqd, v11_compute_mqd, v11_sdma_mqd, v9_mqd, v9_sdma_mqd,
    ComputeDescriptor, ComputeMqd, Generation, GfxVersion, IntoBytes, MqdConfig, MqdError,
    MqdLayout, QueueKind, QueueProperties, SdmaMqd,
};
use proptest::prelude::*;

fn roundtrip<M: MqdLayout + core::fmt::Debug + PartialEq>(bytes: &[u8]) {
    let mqd = M::read_from_bytes(bytes).expect("exact size");
    assert_eq!(mqd.as_bytes(), bytes, "{}", M::NAME);
    let again = M::read_from_bytes(mqd.as_bytes()).expect("exact size");
    assert_eq!(again, mqd);
}

proptest! {
    #[test]
    fn v9_mqd_roundtrip(bytes in proptest::collection::vec(any::<u8>(), 2048)) {
        roundtrip::<v9_mqd>(&bytes);
    }
    #[test]
    fn v10_compute_mqd_roundtrip(bytes in proptest::collection::vec(any::<u8>(), 2048)) {
        roundtrip::<v10_compute_mqd>(&bytes);
    }
    #[test]
    fn v11_compute_mqd_roundtrip(bytes in proptest::collection::vec(any::<u8>(), 2048)) {
        roundtrip::<v11_compute_mqd>(&bytes);
    }
    #[test]
    fn v9_sdma_mqd_roundtrip(bytes in proptest::collection::vec(any::<u8>(), 512)) {
        roundtrip::<v9_sdma_mqd>(&bytes);
    }
    #[test]
    fn v10_sdma_mqd_roundtrip(bytes in proptest::collection::vec(any::<u8>(), 520)) {
        roundtrip::<v10_sdma_mqd>(&bytes);
    }
    #[test]
    fn v11_sdma_mqd_roundtrip(bytes in proptest::collection::vec(any::<u8>(), 512)) {
        roundtrip::<v11_sdma_mqd>(&bytes);
    }

    /// Any bytes: decode answers Ok or Err, printing a decoded MQD never panics.
    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2200), gen in 0usize..3) {
        let generation = Generation::ALL[gen];
        if let Ok(mqd) = ComputeMqd::decode(generation, &bytes) {
            let _ = mqd.to_string();
            let _ = mqd.dump().to_string();
            let _ = mqd.ring_size_bytes();
            let _ = mqd.eop_size_bytes();
        }
        if let Ok(mqd) = SdmaMqd::decode(generation, &bytes) {
            let _ = mqd.to_string();
            let _ = mqd.dump().to_string();
        }
    }

    /// Any bytes behind a valid header: every accessor and printer answers without panicking.
    #[test]
    fn accessors_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 2048), gen in 0usize..3) {
        bytes[..4].copy_from_slice(&0xC031_0800u32.to_ne_bytes());
        let mut mqd = ComputeMqd::decode(Generation::ALL[gen], &bytes).unwrap();
        let _ = (mqd.ring_size_bytes(), mqd.eop_size_bytes(), mqd.cwsr_area(), mqd.pipe_priority());
        let _ = (mqd.ring_base_address(), mqd.eop_base_address(), mqd.static_thread_masks());
        let _ = (mqd.to_string(), mqd.dump().to_string());
        mqd.set_active(true);
        prop_assert!(mqd.is_active());
        let sdma = SdmaMqd::decode(Generation::ALL[gen], &bytes).unwrap();
        let _ = (mqd::SdmaDescriptor::ring_size_bytes(&sdma), sdma.to_string());
    }

    /// Any properties: the builder returns an error or an MQD that reads them back.
    #[test]
    fn init_never_panics_and_reads_back(
        ring_shift in 0u32..32,
        ring_address in any::<u64>(),
        rptr in any::<u64>(),
        wptr in any::<u64>(),
        doorbell in any::<u32>(),
        eop_size in any::<u32>(),
        priority in 0u32..20,
        percentage in 0u32..120,
        gen in 0usize..3,
        pm4 in any::<bool>(),
    ) {
        let major = [9, 10, 11][gen];
        let config = MqdConfig::new(GfxVersion::new(major, 0, 0));
        let props = QueueProperties {
            kind: if pm4 { QueueKind::ComputePm4 } else { QueueKind::ComputeAql },
            ring_address: ring_address & !0xFF,
            ring_size: 1u32 << ring_shift,
            rptr_address: rptr,
            wptr_address: wptr,
            doorbell_offset: doorbell,
            eop_address: 0x1000,
            eop_size,
            priority,
            percentage,
            ..QueueProperties::default()
        };
        match ComputeMqd::init(&config, &props, 0x2000) {
            Ok(mqd) => {
                prop_assert_eq!(mqd.ring_base_address(), props.ring_address);
                prop_assert_eq!(mqd.ring_size_bytes(), u64::from(props.ring_size));
                prop_assert_eq!(mqd.rptr_report_address(), rptr);
                prop_assert_eq!(mqd.wptr_poll_address(), wptr);
                prop_assert_eq!(mqd.doorbell_offset(), doorbell);
                prop_assert_eq!(mqd.queue_priority(), priority);
                prop_assert_eq!(mqd.is_aql(), !pm4);
                let decoded = ComputeMqd::decode(config.generation().unwrap(), mqd.as_bytes());
                prop_assert_eq!(decoded, Ok(mqd));
            }
            Err(_) => prop_assert!(
                props.ring_size < 1024 || rptr % 4 != 0 || wptr % 4 != 0 || priority > 15
                    || percentage > 100 || doorbell >= 1 << 26
            ),
        }
        let sdma = QueueProperties { kind: QueueKind::Sdma, ..props };
        if let Ok(mqd) = SdmaMqd::init(&config, &sdma) {
            prop_assert_eq!(mqd::SdmaDescriptor::ring_size_bytes(&mqd), u64::from(sdma.ring_size));
            prop_assert_eq!(mqd::SdmaDescriptor::rptr_writeback_address(&mqd), rptr);
        }
    }
}

fn golden_v9() -> v9_mqd {
    let props = QueueProperties::golden_aql();
    v9_mqd::init(&MqdConfig::new(GfxVersion::new(9, 0, 0)), &props, 0x1000).unwrap()
}

#[test]
fn all_ones_registers_saturate_instead_of_overflowing() {
    let mut bytes = [0xFFu8; 2048];
    bytes[..4].copy_from_slice(&0xC031_0800u32.to_ne_bytes());
    let mqd = ComputeMqd::decode(Generation::Gfx9, &bytes).unwrap();
    assert_eq!(mqd.ring_size_bytes(), u64::MAX);
    assert_eq!(mqd.eop_size_bytes(), u64::MAX);
    let sdma = SdmaMqd::decode(Generation::Gfx10, &[0xFF; 520]).unwrap();
    assert_eq!(mqd::SdmaDescriptor::ring_size_bytes(&sdma), u64::MAX);
}

#[test]
fn short_and_garbage_dumps_are_errors() {
    assert_eq!(
        v9_mqd::decode(&[0u8; 100]),
        Err(MqdError::DumpTooShort {
            mqd: "v9_mqd",
            len: 100,
            need: 2048
        })
    );
    assert_eq!(
        v9_mqd::decode(&[0u8; 100]).unwrap_err().to_string(),
        "100 bytes are too short for a v9_mqd, which needs 2048"
    );
    let garbage = [0xA5u8; 2048];
    assert_eq!(
        v10_compute_mqd::decode(&garbage),
        Err(MqdError::BadHeader(0xA5A5_A5A5))
    );
    assert_eq!(
        v11_compute_mqd::decode(&garbage).unwrap_err().to_string(),
        "dword 0 is 0xa5a5a5a5, not the compute MQD header 0xc0310800"
    );
    assert!(
        v10_sdma_mqd::decode(&[0u8; 512]).is_err(),
        "520 bytes needed"
    );
    assert!(v10_sdma_mqd::decode(&[0u8; 520]).is_ok());
    assert!(SdmaMqd::decode(Generation::Gfx11, &[]).is_err());
}

#[test]
fn decode_reads_a_page_sized_dump_from_its_start() {
    let mqd = golden_v9();
    let mut page = vec![0u8; 4096];
    page[..2048].copy_from_slice(mqd.as_bytes());
    assert_eq!(v9_mqd::decode(&page), Ok(mqd));
    assert_eq!(
        ComputeMqd::decode(Generation::Gfx9, &page),
        Ok(ComputeMqd::V9(mqd))
    );
}

#[test]
fn summary_names_the_fields_that_matter() {
    let text = golden_v9().to_string();
    for line in [
        "v9_mqd (gfx9 compute, AQL)",
        "mqd base address      0x0000000000001000",
        "ring base / size      0x00007f1234500000 / 0x40000 bytes",
        "rptr report address   0x00007f1234600080",
        "wptr poll address     0x00007f1234600038",
        "doorbell              dword 0x1006",
        "active                no",
        "priority              pipe CS_MEDIUM (1), queue 7",
        "eop base / size       0x00007f1234700000 / 0x1000 bytes",
        "cwsr area             0x00007f1234800000, 0x2f6000 bytes, control stack 0x5000",
        "dw145 cp_hqd_pq_control                0x1c01450f",
        "dw160 cp_hqd_hq_status0                0x00004000",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let v10 = ComputeMqd::decode(Generation::Gfx10, golden_v9().as_bytes()).unwrap();
    assert!(v10.to_string().contains("dw160 cp_hqd_hq_scheduler0"));
}

#[test]
fn full_dump_lists_every_nonzero_field_with_its_dword() {
    let mqd = golden_v9();
    let dump = mqd.dump();
    let text = dump.to_string();
    assert!(
        text.starts_with("v9_mqd: 36 non-zero of 512 dwords\n"),
        "{text}"
    );
    assert!(text.contains("  dw0   header = 0xc0310800\n"));
    assert!(text.contains("  dw145 cp_hqd_pq_control = 0x1c01450f\n"));
    assert!(text.contains(
        "  dw39  compute_static_thread_mgmt_se4 = 0xffffffff (GC 9.4.3: compute_current_logic_xcc_id)\n"
    ));
    assert!(!text.contains("cp_hqd_active"));
    assert_eq!(dump.nonzero().count(), 36);
    // A non-zero reserved dword shows up with its position in the reserved range.
    let mut odd = mqd;
    odd.reserved_43[2] = 7;
    assert!(odd
        .dump()
        .to_string()
        .contains("  dw45  reserved_43+2 = 0x00000007\n"));
}

#[test]
fn sdma_summary() {
    let props = QueueProperties {
        kind: QueueKind::Sdma,
        ring_address: 0x10_0000,
        ring_size: 1 << 20,
        rptr_address: 0x20_0000,
        wptr_address: 0x20_0008,
        doorbell_offset: 0x1008,
        sdma_engine_id: 1,
        sdma_queue_id: 2,
        percentage: 100,
        ..QueueProperties::default()
    };
    let v11 = SdmaMqd::init(&MqdConfig::new(GfxVersion::new(11, 0, 0)), &props).unwrap();
    let text = v11.to_string();
    assert!(text.contains("v11_sdma_mqd (gfx11 SDMA)"), "{text}");
    assert!(text.contains("wptr poll address     0x0000000000200008"));
    assert!(text.contains("engine / queue        1 / 2"));
    assert!(text.contains("dw0   sdmax_rlcx_rb_cntl               0x00061824"));
    let v9 = SdmaMqd::init(&MqdConfig::new(GfxVersion::new(9, 0, 0)), &props).unwrap();
    assert!(v9
        .to_string()
        .contains("wptr poll address     none (SDMA 4/5)"));
    assert!(v9
        .dump()
        .to_string()
        .contains("  dw126 sdma_engine_id = 0x00000001\n"));
}

#[test]
fn field_tables_cover_each_struct_exactly() {
    fn check<M: MqdLayout>() {
        let mut next = 0;
        for field in M::FIELDS {
            assert_eq!(field.dword, next, "{} {}", M::NAME, field.name);
            next += field.dwords;
        }
        assert_eq!(next * 4, M::SIZE, "{}", M::NAME);
    }
    check::<v9_mqd>();
    check::<v10_compute_mqd>();
    check::<v11_compute_mqd>();
    check::<v9_sdma_mqd>();
    check::<v10_sdma_mqd>();
    check::<v11_sdma_mqd>();
    assert_eq!(
        v9_mqd::field_named("cp_mqd_stride_size").unwrap().dword,
        226
    );
    assert_eq!(
        v11_compute_mqd::field_named("gws_63_val").unwrap().dword,
        511
    );
    assert_eq!(
        v10_sdma_mqd::field_named("sdma_queue_id").unwrap().dword,
        129
    );
    assert_eq!(
        v11_sdma_mqd::field_at(19).unwrap().name,
        "sdmax_rlcx_doorbell_offset"
    );
    let named = |fields: &[mqd::FieldInfo]| fields.iter().filter(|f| !f.is_reserved()).count();
    // Appendix A counts (v9 without the four GC 9.4.3 union aliases).
    assert_eq!(named(v9_mqd::FIELDS), 214);
    assert_eq!(named(v10_compute_mqd::FIELDS), 209);
    assert_eq!(named(v11_compute_mqd::FIELDS), 292);
    assert_eq!(named(v9_sdma_mqd::FIELDS), 44);
    assert_eq!(named(v10_sdma_mqd::FIELDS), 44);
    assert_eq!(named(v11_sdma_mqd::FIELDS), 47);
}
