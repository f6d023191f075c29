//! Golden vectors from the facts (§1, §3, §3.9, §4, §5, §10): header words, sizes,
//! bitfield dwords, and their decoding back into typed fields.

use pm4::decode::{decode_pm4_packet, decode_sdma_packet, DecodeErrorKind, Packet, SdmaPacket};
use pm4::fields::{CachePolicy, CompareFunction, EventType};
use pm4::header::{Opcode, Type3Header, NOP_ONE_DWORD, TYPE2_FILLER};
use pm4::hws::*;
use pm4::sdma::*;
use pm4::user::*;
use pm4::writer::Encode;
use pm4::{GfxGen, SdmaGen};

fn enc<P: Encode>(p: &P) -> Vec<u32> {
    let mut buf = vec![0u32; p.dwords()];
    assert_eq!(p.encode_into(&mut buf), Ok(p.dwords()));
    buf
}

#[test]
fn header_words_of_every_fixed_packet() {
    let cases: [(u32, u32); 16] = [
        (SetResources::HEADER.into_bits(), 0xC006_A000),
        (RunList::HEADER.into_bits(), 0xC002_A500),
        (MapProcess::HEADER.into_bits(), 0xC00E_A100),
        (MapProcessAldebaran::HEADER.into_bits(), 0xC013_A100),
        (MapQueues::HEADER.into_bits(), 0xC005_A200),
        (UnmapQueues::HEADER.into_bits(), 0xC004_A300),
        (QueryStatus::HEADER.into_bits(), 0xC005_A400),
        (WriteDataRegister::HEADER.into_bits(), 0xC003_3700),
        (ReleaseMemGfx9::HEADER.into_bits(), 0xC006_4900),
        (ReleaseMemGfx10::HEADER.into_bits(), 0xC006_4900),
        (WaitRegMem::HEADER.into_bits(), 0xC005_3C00),
        (IndirectBuffer::HEADER.into_bits(), 0xC002_3F00),
        (CopyData::HEADER.into_bits(), 0xC004_4000),
        (DmaData::HEADER.into_bits(), 0xC005_5000),
        (AcquireMemGfx9::HEADER.into_bits(), 0xC005_5800),
        (AcquireMemGfx10::HEADER.into_bits(), 0xC006_5800),
    ];
    for (i, (got, want)) in cases.iter().enumerate() {
        assert_eq!(got, want, "case {i}: {got:#010x} != {want:#010x}");
    }
    assert_eq!(
        EventWrite::cs_partial_flush().to_dwords(),
        [0xC000_4600, 0x0000_0407]
    );
    assert_eq!(NOP_ONE_DWORD, 0xFFFF_1000);
    assert_eq!(TYPE2_FILLER, 0x8000_0000);
    // WRITE_DATA with one data dword: count = N + 2 = 3.
    let wd = WriteData::memory(0x1000, &[7]).unwrap();
    assert_eq!(enc(&wd)[0], 0xC003_3700);
    // Generic formula: (3 << 30) | (total - 2) << 16 | opcode << 8.
    for total in [2usize, 3, 7, 100, 0x4000] {
        let h = Type3Header::for_packet(Opcode::NOP, total).unwrap();
        assert_eq!(
            h.into_bits(),
            (3 << 30) | (((total - 2) as u32) << 16) | 0x1000
        );
    }
}

#[test]
fn packet_sizes_match_the_facts_tables() {
    use std::mem::size_of;
    assert_eq!(size_of::<SetResources>(), 32);
    assert_eq!(size_of::<RunList>(), 16);
    assert_eq!(size_of::<MapProcess>(), 64);
    assert_eq!(size_of::<MapProcessAldebaran>(), 84);
    assert_eq!(size_of::<MapQueues>(), 28);
    assert_eq!(size_of::<UnmapQueues>(), 24);
    assert_eq!(size_of::<QueryStatus>(), 28);
    assert_eq!(size_of::<WriteDataRegister>(), 20);
    assert_eq!(size_of::<ReleaseMemGfx9>(), 32);
    assert_eq!(size_of::<ReleaseMemGfx10>(), 32);
    assert_eq!(size_of::<AcquireMemGfx9>(), 28);
    assert_eq!(size_of::<AcquireMemGfx10>(), 32);
    assert_eq!(size_of::<WaitRegMem>(), 28);
    assert_eq!(size_of::<WaitRegMem64>(), 36);
    assert_eq!(size_of::<IndirectBuffer>(), 16);
    assert_eq!(size_of::<CopyData>(), 24);
    assert_eq!(size_of::<DmaData>(), 28);
    assert_eq!(size_of::<EventWrite>(), 8);
    assert_eq!(size_of::<EventWriteAddr>(), 16);
    assert_eq!(size_of::<DispatchDirect>(), 20);
    assert_eq!(size_of::<SdmaCopyLinear>(), 28);
    assert_eq!(size_of::<SdmaFence>(), 16);
    assert_eq!(size_of::<SdmaTrap>(), 8);
    assert_eq!(size_of::<SdmaPollRegmem>(), 24);
    assert_eq!(size_of::<SdmaConstantFill>(), 20);
    assert_eq!(size_of::<SdmaTimestamp>(), 12);
    assert_eq!(size_of::<SdmaIndirect>(), 24);
    assert_eq!(MapQueues::DWORDS, 7);
    assert_eq!(MapProcessForm::Gfx9.dwords(), 16);
    assert_eq!(MapProcessForm::Aldebaran.dwords(), 21);
}

fn kfd_set_resources() -> SetResources {
    SetResources::new(&SetResourcesArgs {
        vmid_mask: 0xFF00,
        unmap_latency: 40,
        enb_xnack_retry_disable_check: false,
        queue_type: ResourceQueueType::Hiq,
        queue_mask: 0x0000_0000_FCFC_FCFC,
        gws_mask: u64::MAX,
        oac_mask: 0,
        gds_heap_base: 0,
        gds_heap_size: 0,
    })
    .unwrap()
}

#[test]
fn set_resources_dw1_0x2028ff00() {
    let p = kfd_set_resources();
    let d = p.to_dwords();
    assert_eq!(
        d,
        [
            0xC006_A000,
            0x2028_FF00,
            0xFCFC_FCFC,
            0,
            0xFFFF_FFFF,
            0xFFFF_FFFF,
            0,
            0
        ]
    );
    let (Packet::SetResources(back), 8) = decode_pm4_packet(&d, GfxGen::Gfx9).unwrap() else {
        panic!()
    };
    assert_eq!(back.dw1.queue_type(), ResourceQueueType::Hiq);
    assert_eq!(back.dw1.unmap_latency(), 40);
    assert_eq!(back.queue_mask(), 0xFCFC_FCFC);
}

#[test]
fn map_queues_dw1_0x28401014_and_doorbell_0x48d0() {
    let p = MapQueues::new(&MapQueuesArgs {
        queue_sel: MapQueueSel::HwsDetermined,
        queue_type: MapQueueType::NormalLatencyStatic,
        engine: QueueEngine::SdmaExtended(2),
        gws_control_queue: true,
        num_queues: 1,
        check_disable: false,
        doorbell_offset: 0x1234,
        mqd_addr: 0x1_2345_6000,
        wptr_addr: 0x7fff_dead_b000,
    })
    .unwrap();
    let d = p.to_dwords();
    assert_eq!(d[..3], [0xC005_A200, 0x2840_1014, 0x0000_48D0]);
    assert_eq!(d[3..], [0x2345_6000, 0x1, 0xdead_b000, 0x7fff]);
    let (Packet::MapQueues(back), 7) = decode_pm4_packet(&d, GfxGen::Gfx9).unwrap() else {
        panic!()
    };
    assert_eq!(back.engine(), Some(QueueEngine::SdmaExtended(2)));
    assert_eq!(back.dw1.extended_engine_sel(), ExtendedEngineSel::Sdma0To7);
    assert_eq!(back.dw1.engine_sel(), 2);
    assert_eq!(back.dw1.queue_type(), MapQueueType::NormalLatencyStatic);
    assert!(back.dw1.gws_control_queue());
    assert_eq!(back.dw2.doorbell_offset(), 0x1234);
    assert_eq!(back.mqd_addr(), 0x1_2345_6000);
    assert_eq!(back.wptr_addr(), 0x7fff_dead_b000);
}

#[test]
fn queue_engine_encodings_follow_kfd_rules() {
    assert_eq!(
        QueueEngine::Compute.encode(),
        Some((ExtendedEngineSel::Legacy, 0))
    );
    assert_eq!(
        QueueEngine::SdmaLegacy(1).encode(),
        Some((ExtendedEngineSel::Legacy, 3))
    );
    assert_eq!(QueueEngine::SdmaLegacy(2).encode(), None);
    assert_eq!(
        QueueEngine::SdmaExtended(9).encode(),
        Some((ExtendedEngineSel::Sdma8To15, 1))
    );
    assert_eq!(QueueEngine::SdmaExtended(16).encode(), None);
    assert_eq!(QueueEngine::decode(ExtendedEngineSel::Legacy, 1), None);
    assert_eq!(
        QueueEngine::decode(ExtendedEngineSel::Sdma8To15, 7),
        Some(QueueEngine::SdmaExtended(15))
    );
}

#[test]
fn unmap_queues_dw1_0x20000025() {
    let p = UnmapQueues::new(&UnmapQueuesArgs {
        action: UnmapAction::Reset,
        target: UnmapTarget::AllQueues,
        extended_engine_sel: ExtendedEngineSel::Sdma0To7,
        engine_sel: 0,
        num_queues: 1,
    })
    .unwrap();
    assert_eq!(p.to_dwords(), [0xC004_A300, 0x2000_0025, 0, 0, 0, 0]);
    // BY_PASID: queue_sel 1, pasid in dw2.
    let p = UnmapQueues::new(&UnmapQueuesArgs {
        action: UnmapAction::Preempt,
        target: UnmapTarget::Pasid(0x8001),
        extended_engine_sel: ExtendedEngineSel::Legacy,
        engine_sel: 0,
        num_queues: 1,
    })
    .unwrap();
    let d = p.to_dwords();
    assert_eq!(d[1], 0x2000_0010);
    assert_eq!(d[2], 0x8001);
    let (Packet::UnmapQueues(back), 6) = decode_pm4_packet(&d, GfxGen::Gfx10).unwrap() else {
        panic!()
    };
    assert_eq!(back.target(), UnmapTarget::Pasid(0x8001));
    // Specified queues: doorbells in [27:2] of dw2.. and num_queues = count.
    let p = UnmapQueues::new(&UnmapQueuesArgs {
        action: UnmapAction::Preempt,
        target: UnmapTarget::Queues {
            doorbell_offsets: [0x1234, 0x10, 0, 0],
            count: 2,
        },
        extended_engine_sel: ExtendedEngineSel::Legacy,
        engine_sel: 0,
        num_queues: 0,
    })
    .unwrap();
    let d = p.to_dwords();
    assert_eq!(d[1..4], [0x4000_0000, 0x48D0, 0x40]);
}

#[test]
fn run_list_dw3_0x08d00010_and_submit_form() {
    let chain = RunList::new(&RunListArgs::chain(0x1_0000_1000, 0x10, 8)).unwrap();
    assert_eq!(
        chain.to_dwords(),
        [0xC002_A500, 0x0000_1000, 0x1, 0x08D0_0010]
    );
    let submit = RunList::new(&RunListArgs::submit(0x2000, 0x40, 1)).unwrap();
    assert_eq!(submit.to_dwords()[3], 0x0180_0040);
    assert!(
        RunList::new(&RunListArgs::submit(0x2002, 0x40, 1)).is_err(),
        "IB must be dword aligned"
    );
    assert!(
        RunList::new(&RunListArgs::submit(0x2000, 0x40, 16)).is_err(),
        "process_cnt is 4 bits"
    );
    assert!(
        RunList::new(&RunListArgs::submit(0x2000, 1 << 20, 1)).is_err(),
        "ib_size is 20 bits"
    );
}

fn check_vector_map_process_args() -> MapProcessArgs {
    MapProcessArgs {
        pasid: 0x8001,
        exec_cleaner_shader: true,
        debug_vmid: Some(5),
        diq_enable: true,
        process_quantum: 10,
        num_gws: 64,
        sdma_enable: true,
        num_oac: 0xF,
        gds_size: (0xF << 6) | 0x3F,
        num_queues: 3,
        ..MapProcessArgs::default()
    }
}

#[test]
fn map_process_dw1_0x15568001_and_dw13_0x00ffffc0() {
    let p = MapProcess::new(&check_vector_map_process_args()).unwrap();
    let d = p.to_dwords();
    assert_eq!(d[0], 0xC00E_A100);
    assert_eq!(d[1], 0x1556_8001);
    assert_eq!(d[13], 0x00FF_FFC0);
    let (Packet::MapProcess(back), 16) = decode_pm4_packet(&d, GfxGen::Gfx9).unwrap() else {
        panic!()
    };
    assert_eq!(back.common.dw1.debug_vmid(), 5);
    assert!(back.common.dw1.new_debug());
    assert_eq!(back.common.dw13.gds_size_total(), 0x3FF);
    assert_eq!(back.common.dw13.num_gws(), 64);

    let a = MapProcessAldebaran::new(&check_vector_map_process_args()).unwrap();
    let d = a.to_dwords();
    assert_eq!(d[0], 0xC013_A100);
    assert_eq!(d[1], 0x1556_8001);
    assert_eq!(d[13], 0x00FF_FFC0);
    // The form is recognised from the header count (14 vs 19).
    assert!(matches!(
        decode_pm4_packet(&d, GfxGen::Gfx9).unwrap(),
        (Packet::MapProcessAldebaran(_), 21)
    ));
}

#[test]
fn map_process_kfd_values_and_trap_en() {
    let args = MapProcessArgs {
        pasid: 0x8000,
        process_quantum: 10,
        page_table_base: 0x0000_0001_2345_6001,
        sh_mem_bases: 0x0001_0002,
        sh_mem_config: 0x1018,
        tba_addr: 0x7f00_1234_5600,
        tma_addr: 0x7f00_1234_7700,
        trap_en: true,
        sdma_enable: true,
        num_queues: 2,
        ..MapProcessArgs::default()
    };
    let d = MapProcess::new(&args).unwrap().to_dwords();
    assert_eq!(d[1], 0x1400_8000);
    assert_eq!(d[2..6], [0x2345_6001, 0x1, 0x0001_0002, 0x1018]);
    assert_eq!(d[6], 0x0012_3456);
    assert_eq!(d[7], 0x8000_007f, "tba_hi carries TRAP_EN in the gfx9 form");
    assert_eq!(d[8..10], [0x0012_3477, 0x7f]);
    assert_eq!(d[13], (2 << 22) | (1 << 7));
    let (Packet::MapProcess(back), _) = decode_pm4_packet(&d, GfxGen::Gfx9).unwrap() else {
        panic!()
    };
    assert_eq!(back.common.tba_addr(), 0x7f00_1234_5600);
    assert!(back.common.trap_en());
    // Aldebaran-only bits are reserved in the gfx9 form.
    let e = MapProcess::new(&MapProcessArgs { tmz: true, ..args }).unwrap_err();
    assert!(matches!(e, pm4::BuildError::Conflict { .. }));
    assert!(
        MapProcess::new(&MapProcessArgs {
            tba_addr: 0x80,
            ..args
        })
        .is_err(),
        "TBA is 256-byte aligned"
    );
}

#[test]
fn query_status_dw1_0x80000000_kfd_fence() {
    let p = QueryStatus::new(&QueryStatusArgs {
        context_id: 0,
        command: QueryCommand::FenceOnlyAfterWriteAck,
        target: QueryTarget::Completion,
        fence_addr: 0x1_0000_0040,
        fence_value: 100,
    })
    .unwrap();
    assert_eq!(
        p.to_dwords(),
        [0xC005_A400, 0x8000_0000, 0, 0x40, 0x1, 100, 0]
    );
}

#[test]
fn write_data_register_form() {
    let p = WriteDataRegister::new(0x1A36, 0x0000_0064, false).unwrap();
    let d = p.to_dwords();
    assert_eq!(d, [0xC003_3700, 0x0001_0000, 0x1A36, 0, 0x64]);
    let (Packet::WriteData(wd), 5) = decode_pm4_packet(&d, GfxGen::Gfx9).unwrap() else {
        panic!()
    };
    assert_eq!(wd.target(), Some(WriteDataTarget::Register(0x1A36)));
    assert_eq!(wd.as_register_write(), Some(p));
    assert!(WriteDataRegister::new(1 << 18, 0, false).is_err());
}

#[test]
fn write_data_kfdtest_memory_form() {
    let d = enc(&WriteData::memory(0x7f12_3456_7890, &[1, 2, 3]).unwrap());
    // dst_sel 5, wr_confirm, cache_policy bypass (3 << 25).
    assert_eq!(d, [0xC005_3700, 0x0610_0500, 0x3456_7890, 0x7f12, 1, 2, 3]);
    assert!(WriteData::memory(0x1002, &[1]).is_err());
    assert!(WriteData::memory(0x1000, &[]).is_err());
}

#[test]
fn release_mem_gfx9_0x00028514_0x22000000() {
    let cache = ReleaseCacheGfx9::new()
        .with_tc_wb_action_ena(true)
        .with_tc_action_ena(true);
    let p = ReleaseMemGfx9::new(&ReleaseMemArgs::event_signal(0x7f00_0000_0018, 3), cache).unwrap();
    let d = p.to_dwords();
    assert_eq!(
        d,
        [
            0xC006_4900,
            0x0002_8514,
            0x2200_0000,
            0x0000_0018,
            0x7f00,
            3,
            0,
            3
        ]
    );
    let (Packet::ReleaseMemGfx9(back), 8) = decode_pm4_packet(&d, GfxGen::Gfx9).unwrap() else {
        panic!()
    };
    assert_eq!(back.cache.event_type(), EventType::CacheFlushAndInvTsEvent);
    assert_eq!(
        back.tail.data_control.int_sel(),
        ReleaseIntSel::SendInterruptAfterWriteConfirm
    );
    assert_eq!(back.tail.addr(), 0x7f00_0000_0018);
    assert_eq!(back.tail.int_ctxid, 3);

    // amdgpu's fence.
    let p = ReleaseMemGfx9::new(
        &ReleaseMemArgs::event_signal(0x1000, 0),
        ReleaseMemGfx9::amdgpu_fence_cache(),
    )
    .unwrap();
    assert_eq!(p.to_dwords()[1], 0x0023_8514);
}

#[test]
fn release_mem_gfx10_0x06603514_and_kfdtest_gcr() {
    let args = ReleaseMemArgs {
        cache_policy: CachePolicy::Bypass,
        ..ReleaseMemArgs::event_signal(0x2000, 1)
    };
    let p = ReleaseMemGfx10::new(&args, ReleaseMemGfx10::amdgpu_fence_cache()).unwrap();
    let d = p.to_dwords();
    assert_eq!(d[1], 0x0660_3514);
    let (Packet::ReleaseMemGfx10(back), 8) = decode_pm4_packet(&d, GfxGen::Gfx11).unwrap() else {
        panic!()
    };
    assert_eq!(back.cache.gcr_cntl().seq(), 1);
    assert!(back.cache.gcr_cntl().gl2_wb());

    let gcr = ReleaseGcr::new()
        .with_seq(1)
        .with_gl2_wb(true)
        .with_gl2_inv(true)
        .with_gl1_inv(true)
        .with_glv_inv(true);
    assert_eq!(
        gcr.into_bits(),
        (1 << 10) | (1 << 9) | (1 << 8) | (1 << 3) | (1 << 2)
    );
    let p = ReleaseMemGfx10::new(
        &ReleaseMemArgs::event_signal(0x2000, 1),
        ReleaseCacheGfx10::new().with_gcr_cntl(gcr),
    )
    .unwrap();
    let dw1 = p.to_dwords()[1];
    assert_eq!(
        dw1 & 0x01FF_F000,
        (1 << 22) | (1 << 21) | (1 << 20) | (1 << 15) | (1 << 14)
    );
}

#[test]
fn acquire_mem_gfx9_0x28c40000_and_gfx10_gcr_0xc3b1() {
    let p = AcquireMemGfx9::new(AcquireMemGfx9::amdgpu_coher_cntl(), AcquireRange::full(0xA));
    assert_eq!(
        p.to_dwords(),
        [
            0xC005_5800,
            0x28C4_0000,
            0xFFFF_FFFF,
            0x00FF_FFFF,
            0,
            0,
            0xA
        ]
    );
    assert!(
        decode_pm4_packet(&p.to_dwords(), GfxGen::Gfx9).is_ok(),
        "amdgpu's size_hi 0xFFFFFF decodes"
    );

    let p = AcquireMemGfx10::new(AcquireMemGfx10::amdgpu_gcr(), AcquireRange::full(0));
    let d = p.to_dwords();
    assert_eq!(d[0], 0xC006_5800);
    assert_eq!(d[1], 0);
    assert_eq!(d[7], 0x0000_C3B1);
    let kfdtest = AcquireGcr::new()
        .with_gl2_inv(true)
        .with_gl1_inv(true)
        .with_glv_inv(true)
        .with_glk_inv(true)
        .with_gli_inv(GliInv::All);
    assert_eq!(kfdtest.into_bits(), 0x4381);
    let (Packet::AcquireMemGfx10(back), 8) = decode_pm4_packet(&d, GfxGen::Gfx10).unwrap() else {
        panic!()
    };
    assert_eq!(back.gcr_cntl.gli_inv(), GliInv::All);
    assert_eq!(back.range.size(), 0xFF_FFFF_FFFF);
}

#[test]
fn wait_reg_mem_copy_data_dma_data_ib_dispatch() {
    let w = WaitRegMem::new(
        &WaitArgs {
            function: CompareFunction::Equal,
            operation: WaitOperation::WaitRegMem,
            target: PollTarget::Memory(0x7f00_0000_1000),
            poll_interval: 4,
            optimize_ace_offload_mode: true,
        },
        1,
        0xFFFF_FFFF,
    )
    .unwrap();
    assert_eq!(
        w.to_dwords(),
        [
            0xC005_3C00,
            0x13,
            0x1000,
            0x7f00,
            1,
            0xFFFF_FFFF,
            0x8000_0004
        ]
    );

    let w64 = WaitRegMem64::new(
        &WaitArgs {
            function: CompareFunction::GreaterEqual,
            operation: WaitOperation::WaitRegMem,
            target: PollTarget::Memory(0x10_0000),
            poll_interval: 10,
            optimize_ace_offload_mode: false,
        },
        0x1_0000_0000,
        u64::MAX,
    )
    .unwrap();
    assert_eq!(w64.to_dwords()[0], 0xC007_9300);
    assert!(WaitRegMem64::new(
        &WaitArgs {
            target: PollTarget::Memory(0x10_0004),
            ..WaitArgs {
                function: CompareFunction::Always,
                operation: WaitOperation::WaitRegMem,
                target: PollTarget::Memory(0),
                poll_interval: 0,
                optimize_ace_offload_mode: false
            }
        },
        0,
        0
    )
    .is_err());

    // amdgpu: GPU clock to memory (src_sel 9, count_sel 1, dst_sel 5, wr_confirm).
    let c = CopyData::new(
        CopyDataControl::new()
            .with_src_sel(CopySrcSel::GpuClockCount)
            .with_dst_sel(CopyDstSel::Memory)
            .with_count_sel(CopyCountSel::Bits64)
            .with_wr_confirm(true),
        0,
        0x3000,
    )
    .unwrap();
    assert_eq!(c.to_dwords(), [0xC004_4000, 0x0011_0509, 0, 0, 0x3000, 0]);

    let ib = IndirectBuffer::new(
        0x1_0000_0100,
        0x40,
        IndirectBufferControl::new().with_cache_policy(CachePolicy::Noa),
    )
    .unwrap();
    assert_eq!(ib.to_dwords(), [0xC002_3F00, 0x100, 0x1, 0x2080_0040]);

    let dma = DmaData::new(
        GfxGen::Gfx10,
        DmaDataControl::new()
            .with_src_sel(DmaSrcSel::Data)
            .with_dst_sel(DmaDstSel::DstAddrTcL2)
            .with_cp_sync(true),
        0xDEAD_BEEF,
        0x4000,
        DmaDataCommand::new().with_byte_count(1 << 22),
    )
    .unwrap();
    assert_eq!(
        dma.to_dwords(),
        [0xC005_5000, 0xC030_0000, 0xDEAD_BEEF, 0, 0x4000, 0, 1 << 22]
    );
    assert!(
        DmaData::new(GfxGen::Gfx9, dma.control, 0, 0, dma.command).is_err(),
        "gfx9 keeps byte_count < 2 MiB"
    );

    let dd = DispatchDirect::new(
        [4, 2, 1],
        DispatchInitiator::new()
            .with_compute_shader_en(true)
            .with_force_start_at_000(true),
    );
    assert_eq!(dd.to_dwords(), [0xC003_1500, 4, 2, 1, 0x5]);
    let sh = SetShReg::new(0x2E40, &[0x1000, 0x7f]).unwrap();
    assert_eq!(enc(&sh), [0xC002_7600, 0x240, 0x1000, 0x7f]);
    assert!(SetShReg::new(0x2BFC, &[1]).is_err());
    // SET_CONTEXT_REG is opcode 0x69 with offsets from 0xA000 (DB_RENDER_CONTROL).
    let ctx = SetContextReg::new(0xA000, &[0x0]).unwrap();
    assert_eq!(enc(&ctx), [0xC001_6900, 0x0, 0x0]);
    assert!(SetContextReg::new(0x9FFF, &[1]).is_err());
    assert!(SetContextReg::new(0xA000, &[]).is_err());
}

#[test]
fn sdma_counts_are_bytes_minus_one() {
    let copy = SdmaCopyLinear::new(SdmaGen::Sdma4, 0x1000, 0x2_0000_3000, 0x40_0000).unwrap();
    assert_eq!(
        copy.to_dwords(),
        [0x1, 0x3F_FFFF, 0, 0x1000, 0, 0x3000, 0x2]
    );
    assert!(SdmaCopyLinear::new(SdmaGen::Sdma5, 0, 0, 0x40_0001).is_err());
    assert!(SdmaCopyLinear::new(SdmaGen::Sdma6, 0, 0, 0x40_0001).is_ok());
    assert!(SdmaCopyLinear::new(SdmaGen::Sdma6, 0, 0, 0).is_err());

    let fill = SdmaConstantFill::new(SdmaGen::Sdma5, 0x8000, 0xCAFE, 256).unwrap();
    assert_eq!(fill.to_dwords(), [0x8000_000B, 0x8000, 0, 0xCAFE, 255]);

    let write = SdmaWrite::new(0x1_0000_0004, &[9, 8, 7]).unwrap();
    assert_eq!(enc(&write), [0x2, 0x4, 0x1, 2, 9, 8, 7]);

    let fence = SdmaFence::new(0x7f00_0000_0010, 42).unwrap();
    assert_eq!(fence.to_dwords(), [0x5, 0x10, 0x7f00, 42]);
    let trap = SdmaTrap::new(0x0ABC_DEF1).unwrap();
    assert_eq!(trap.to_dwords(), [0x6, 0x0ABC_DEF1]);
    assert!(
        SdmaTrap::new(0x1000_0000).is_err(),
        "int_context is 28 bits"
    );

    let poll =
        SdmaPollRegmem::memory(0x100, CompareFunction::Equal, 1, u32::MAX, 10, 0xFFF).unwrap();
    assert_eq!(
        poll.to_dwords(),
        [0xB000_0008, 0x100, 0, 1, u32::MAX, 0x0FFF_000A]
    );
    let ts = SdmaTimestamp::new(TimestampOp::GetGlobal, 0x9000).unwrap();
    assert_eq!(ts.to_dwords(), [0x0000_020D, 0x9000, 0]);
    let ib = SdmaIndirect::new(0x1_0000_0020, 64, 3, 0).unwrap();
    assert_eq!(ib.to_dwords(), [0x0003_0004, 0x20, 1, 64, 0, 0]);

    for (words, gen) in [
        (copy.to_dwords().to_vec(), SdmaGen::Sdma4),
        (enc(&write), SdmaGen::Sdma5),
        (fill.to_dwords().to_vec(), SdmaGen::Sdma6),
    ] {
        let (p, n) = decode_sdma_packet(&words, gen).unwrap();
        assert_eq!(n, words.len());
        assert_eq!(enc(&p), words);
    }
    let (SdmaPacket::CopyLinear(c), 7) =
        decode_sdma_packet(&copy.to_dwords(), SdmaGen::Sdma4).unwrap()
    else {
        panic!()
    };
    assert_eq!(c.byte_count(), 0x40_0000);
}

/// The COPY_LINEAR counts each runtime writes: ROCr splits a copy at 0x3FFFFF bytes on
/// gfx900–gfx908 and gfx101x (count 0x3FFFFE) and at 0x3FFFFFFF bytes on gfx90a, gfx94x, gfx103x
/// and gfx11 (count 0x3FFFFFFE); kfdtest copies 2 MiB (count 0x1FFFFF) or, in newer versions,
/// 1 GiB (count 0x3FFFFFFF) per packet. The IP version decides which the engine takes.
#[test]
fn sdma_copy_count_width_follows_the_ip_version() {
    let gens = [
        ((4, 0), SdmaGen::Sdma4),
        ((4, 2), SdmaGen::Sdma4),
        ((4, 4), SdmaGen::Sdma4_4),
        ((5, 0), SdmaGen::Sdma5),
        ((5, 2), SdmaGen::Sdma5_2),
        ((6, 0), SdmaGen::Sdma6),
    ];
    for ((major, minor), gen) in gens {
        assert_eq!(SdmaGen::from_ip_version(major, minor), Some(gen));
        let wide = gen != SdmaGen::Sdma4 && gen != SdmaGen::Sdma5;
        for (count, fits) in [
            (0x1F_FFFF, true),
            (0x3F_FFFE, true),
            (0x3F_FFFF, true),
            (0x40_0000, wide),
            (0x3FFF_FFFE, wide),
            (0x3FFF_FFFF, wide),
        ] {
            let words = [0x1, count, 0, 0x1000, 0, 0x2000, 0];
            match decode_sdma_packet(&words, gen) {
                Ok((SdmaPacket::CopyLinear(c), 7)) if fits => {
                    assert_eq!(c.byte_count(), u64::from(count) + 1, "{gen:?}")
                }
                Err(e) if !fits => assert_eq!(
                    e.kind,
                    DecodeErrorKind::ReservedBits {
                        packet: "SDMA_COPY_LINEAR",
                        dword: 1,
                        bits: count & !0x3F_FFFF
                    },
                    "{gen:?} count {count:#x}"
                ),
                other => panic!("{gen:?} count {count:#x}: {other:?}"),
            }
        }
        assert_eq!(
            SdmaCopyLinear::new(gen, 0, 0, 1 << 30).is_ok(),
            wide,
            "{gen:?} builds a 1 GiB copy"
        );
        assert!(SdmaCopyLinear::new(gen, 0, 0, (1 << 30) + 1).is_err());
        // CONSTANT_FILL's count stays 22 bits before SDMA 6.
        assert_eq!(
            max_fill_bytes(gen),
            1 << if gen == SdmaGen::Sdma6 { 30 } else { 22 }
        );
    }
    assert_eq!(SdmaGen::from_ip_version(3, 0), None);
    assert_eq!(SdmaGen::from_ip_version(7, 0), None);
}

/// COPY_LINEAR with the broadcast bit (dw0 `[27]`) as kfdtest's two-destination copy and
/// ROCr's broadcast copy write it: 9 dwords, the second destination in dw7/dw8. SDMA 4.0–4.2
/// have no such packet: the bit is reserved there.
#[test]
fn sdma_broadcast_copy_dwords() {
    let words = [
        0x0800_0001, // op COPY, sub_op LINEAR, broadcast
        0x3F_FFFF,   // 4 MiB
        0,
        0x1000,
        0x7F,
        0x2000,
        0x1,
        0x3000,
        0x2,
    ];
    let p = SdmaCopyLinearBroadcast::new(
        SdmaGen::Sdma4_4,
        0x7F_0000_1000,
        0x1_0000_2000,
        0x2_0000_3000,
        4 << 20,
    )
    .unwrap();
    assert_eq!(p.to_dwords(), words);
    assert_eq!(std::mem::size_of::<SdmaCopyLinearBroadcast>(), 36);
    for gen in [
        SdmaGen::Sdma4_4,
        SdmaGen::Sdma5,
        SdmaGen::Sdma5_2,
        SdmaGen::Sdma6,
    ] {
        let (SdmaPacket::CopyLinearBroadcast(c), 9) = decode_sdma_packet(&words, gen).unwrap()
        else {
            panic!("not a broadcast copy on {gen:?}")
        };
        assert_eq!(
            (c.src(), c.dsts(), c.byte_count()),
            (0x7F_0000_1000, [0x1_0000_2000, 0x2_0000_3000], 4 << 20)
        );
    }
    let e = decode_sdma_packet(&words, SdmaGen::Sdma4).unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::ReservedBits {
            packet: "SDMA_COPY_LINEAR",
            dword: 0,
            bits: 1 << 27
        }
    );
    assert!(SdmaCopyLinearBroadcast::new(SdmaGen::Sdma4, 0, 0, 0, 4).is_err());
    // Only the source and destination swaps (and on SDMA 6 the cache policies) are fields
    // of dw2; the broadcast form has no backwards bit.
    let mut bad = words;
    bad[2] = 1 << 30;
    assert!(decode_sdma_packet(&bad, SdmaGen::Sdma4_4).is_err());
    let mut bad = words;
    bad[0] |= 1 << 25;
    assert!(decode_sdma_packet(&bad, SdmaGen::Sdma5).is_err());
    let mut swaps = words;
    swaps[2] = 2 << 8 | 1 << 16 | 3 << 24;
    let (SdmaPacket::CopyLinearBroadcast(c), 9) =
        decode_sdma_packet(&swaps, SdmaGen::Sdma4_4).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (c.params.dst2_sw(), c.params.dst1_sw(), c.params.src_sw()),
        (EndianSwap::Swap32, EndianSwap::Swap16, EndianSwap::Swap64)
    );
}

/// COPY_LINEAR_SUB_WIND dwords worked out by hand from the field positions (op `[7:0]`,
/// sub_op `[15:8]`, elementsize `[31:29]`; x `[13:0]`/y `[29:16]`; z `[10:0]`/pitch−1
/// `[31:13]`; slice pitch−1 `[27:0]`; rect−1 in dw11/dw12).
#[test]
fn sdma_copy_linear_sub_wind_dwords() {
    let src = SubWindSurface {
        addr: 0x1_0000_1000,
        x: 3,
        y: 5,
        z: 0,
        pitch: 64,
        slice_pitch: 4096,
    };
    let dst = SubWindSurface {
        addr: 0x2000,
        x: 1,
        y: 2,
        z: 1,
        pitch: 32,
        slice_pitch: 1024,
    };
    let p = SdmaCopyLinearSubWind::new(2, src, dst, [10, 4, 2]).unwrap();
    let words = [
        0x4000_0401, // op 1, sub_op 4, elementsize 2 (4-byte elements)
        0x1000,
        0x1,
        0x0005_0003, // src_x 3, src_y 5
        63 << 13,    // src_z 0, src_pitch 64 − 1
        4095,        // src_slice_pitch 4096 − 1
        0x2000,
        0,
        0x0002_0001, // dst_x 1, dst_y 2
        (31 << 13) | 1,
        1023,
        0x0003_0009, // rect 10 × 4
        1,           // depth 2
    ];
    assert_eq!(p.to_dwords(), words);
    assert_eq!(std::mem::size_of::<SdmaCopyLinearSubWind>(), 52);
    assert_eq!(p.byte_count(), 10 * 4 * 2 * 4);
    for gen in [SdmaGen::Sdma4, SdmaGen::Sdma5, SdmaGen::Sdma6] {
        let (SdmaPacket::CopyLinearSubWind(c), 13) = decode_sdma_packet(&words, gen).unwrap()
        else {
            panic!("not decoded as a sub-window copy on {gen:?}")
        };
        assert_eq!(
            (c.src(), c.dst(), c.rect(), c.element_bytes()),
            (src, dst, [10, 4, 2], 4)
        );
    }
    // The largest values each field holds, stored minus one where the hardware does.
    let big = SubWindSurface {
        addr: 0xFFFF_FFFF_FFFF_FFFC,
        x: (1 << 14) - 1,
        y: (1 << 14) - 1,
        z: (1 << 11) - 1,
        pitch: 1 << 19,
        slice_pitch: 1 << 28,
    };
    let p = SdmaCopyLinearSubWind::new(4, big, big, [1 << 14, 1 << 14, 1 << 11]).unwrap();
    let w = p.to_dwords();
    assert_eq!(w[0], 0x8000_0401);
    assert_eq!([w[3], w[4], w[5]], [0x3FFF_3FFF, 0xFFFF_E7FF, 0x0FFF_FFFF]);
    assert_eq!([w[11], w[12]], [0x3FFF_3FFF, 0x7FF]);
    // Out of range: element over 16 bytes, zero or too large extents, unaligned base.
    assert!(SdmaCopyLinearSubWind::new(5, src, dst, [1, 1, 1]).is_err());
    assert!(SdmaCopyLinearSubWind::new(0, src, dst, [0, 1, 1]).is_err());
    assert!(SdmaCopyLinearSubWind::new(0, src, dst, [1 << 14, 1, (1 << 11) + 1]).is_err());
    assert!(SdmaCopyLinearSubWind::new(0, big, dst, [1 << 14, 1, 1]).is_ok());
    let bad = SubWindSurface {
        pitch: (1 << 19) + 1,
        ..src
    };
    assert!(SdmaCopyLinearSubWind::new(0, bad, dst, [1, 1, 1]).is_err());
    let bad = SubWindSurface {
        addr: 0x1002,
        ..src
    };
    assert!(SdmaCopyLinearSubWind::new(0, bad, dst, [1, 1, 1]).is_err());
    let bad = SubWindSurface { x: 1 << 14, ..src };
    assert!(SdmaCopyLinearSubWind::new(0, src, bad, [1, 1, 1]).is_err());
}
