//! Property tests: for every packet kind, typed field values within their valid ranges
//! are built, encoded, decoded again, and must come back equal — alone and in mixed
//! streams, for every generation.

use pm4::decode::{Packet, Pm4Decoder, SdmaDecoder, SdmaPacket};
use pm4::fields::{CachePolicy, CompareFunction, EngineSel, EventType, FieldEnum};
use pm4::hws::*;
use pm4::sdma::*;
use pm4::user::*;
use pm4::{Encode, GfxGen, PacketWriter, SdmaGen};
use proptest::prelude::*;
use proptest::sample::select;

fn en<E: FieldEnum>() -> impl Strategy<Value = E> {
    select(E::ALL.to_vec())
}

fn event_type() -> impl Strategy<Value = EventType> {
    (0u32..64).prop_map(EventType::from_bits)
}

/// A packet whose variable payload is owned, so strategies can produce it.
#[derive(Clone, Debug)]
enum Owned {
    Fixed(Packet<'static>),
    Register(WriteDataRegister),
    Nop(Vec<u32>),
    WriteData(WriteDataTarget, WriteDataMemSel, WriteDataControl, Vec<u32>),
    SetShReg(u32, Vec<u32>),
    SetContextReg(u32, Vec<u32>),
}

impl Owned {
    fn with_packet<R>(&self, f: impl FnOnce(Packet<'_>) -> R) -> R {
        match self {
            Owned::Fixed(p) => f(*p),
            Owned::Register(r) => f(Packet::WriteData(WriteData {
                head: WriteDataHead {
                    header: r.header,
                    control: r.control,
                    dst_addr_lo: r.reg_offset,
                    dst_addr_hi: 0,
                },
                data: std::slice::from_ref(&r.data),
            })),
            Owned::Nop(v) => f(Packet::Nop(Nop::new(v).unwrap())),
            Owned::WriteData(t, s, c, d) => {
                f(Packet::WriteData(WriteData::new(*t, *s, *c, d).unwrap()))
            }
            Owned::SetShReg(reg, v) => f(Packet::SetShReg(SetShReg::new(*reg, v).unwrap())),
            Owned::SetContextReg(reg, v) => {
                f(Packet::SetContextReg(SetContextReg::new(*reg, v).unwrap()))
            }
        }
    }
}

fn arb_set_resources() -> impl Strategy<Value = Owned> {
    (
        any::<u16>(),
        any::<u8>(),
        any::<bool>(),
        en::<ResourceQueueType>(),
        any::<u64>(),
        any::<u64>(),
        any::<u16>(),
        0u16..1024,
        0u16..1024,
    )
        .prop_map(
            |(
                vmid_mask,
                unmap_latency,
                x,
                queue_type,
                queue_mask,
                gws_mask,
                oac_mask,
                gds_heap_base,
                gds_heap_size,
            )| {
                Owned::Fixed(Packet::SetResources(
                    SetResources::new(&SetResourcesArgs {
                        vmid_mask,
                        unmap_latency,
                        enb_xnack_retry_disable_check: x,
                        queue_type,
                        queue_mask,
                        gws_mask,
                        oac_mask,
                        gds_heap_base,
                        gds_heap_size,
                    })
                    .unwrap(),
                ))
            },
        )
}

fn arb_run_list() -> impl Strategy<Value = Owned> {
    (any::<u64>(), 0u32..1 << 20, any::<[bool; 4]>(), 0u8..16).prop_map(|(addr, size, b, cnt)| {
        Owned::Fixed(Packet::RunList(
            RunList::new(&RunListArgs {
                ib_addr: addr & !3,
                ib_size_dwords: size,
                chain: b[0],
                offload_polling: b[1],
                chained_runlist_idle_disable: b[2],
                valid: b[3],
                process_cnt: cnt,
            })
            .unwrap(),
        ))
    })
}

fn arb_map_process() -> impl Strategy<Value = Owned> {
    let a = (
        any::<u16>(),
        any::<[bool; 6]>(),
        proptest::option::of(0u8..16),
        0u8..128,
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
    );
    let b = (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        0u8..128,
        0u8..16,
        0u16..1024,
        0u16..1024,
        any::<u64>(),
    );
    let c = (
        any::<u32>(),
        any::<[u32; 4]>(),
        any::<bool>(),
        any::<bool>(),
    );
    (a, b, c).prop_map(
        |(
            (pasid, f, debug_vmid, quantum, ptb, bases, config),
            (tba, tma, gds, gws, oac, gds_size, nq, sig),
            (spi, watch, aldebaran, trap_en),
        )| {
            let args = MapProcessArgs {
                pasid,
                exec_cleaner_shader: f[0],
                debug_vmid,
                diq_enable: f[1],
                process_quantum: quantum,
                page_table_base: ptb,
                sh_mem_bases: bases,
                sh_mem_config: config,
                tba_addr: tba & 0x7FFF_FFFF_FF00,
                tma_addr: tma & !0xFF,
                trap_en,
                gds_addr: gds,
                num_gws: gws,
                sdma_enable: f[2],
                num_oac: oac,
                gds_size,
                num_queues: nq,
                completion_signal: sig,
                single_memops: aldebaran && f[3],
                tmz: aldebaran && f[4],
                spi_gdbg_per_vmid_cntl: if aldebaran { spi } else { 0 },
                tcp_watch_cntl: if aldebaran { watch } else { [0; 4] },
            };
            let form = if aldebaran {
                MapProcessForm::Aldebaran
            } else {
                MapProcessForm::Gfx9
            };
            match AnyMapProcess::new(form, &args).unwrap() {
                AnyMapProcess::Gfx9(p) => Owned::Fixed(Packet::MapProcess(p)),
                AnyMapProcess::Aldebaran(p) => Owned::Fixed(Packet::MapProcessAldebaran(p)),
            }
        },
    )
}

fn arb_engine() -> impl Strategy<Value = QueueEngine> {
    prop_oneof![
        Just(QueueEngine::Compute),
        (0u8..2).prop_map(QueueEngine::SdmaLegacy),
        (0u8..16).prop_map(QueueEngine::SdmaExtended)
    ]
}

fn arb_map_queues() -> impl Strategy<Value = Owned> {
    (
        en::<MapQueueSel>(),
        en::<MapQueueType>(),
        arb_engine(),
        any::<[bool; 2]>(),
        0u8..8,
        0u32..1 << 26,
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(
            |(
                queue_sel,
                queue_type,
                engine,
                b,
                num_queues,
                doorbell_offset,
                mqd_addr,
                wptr_addr,
            )| {
                Owned::Fixed(Packet::MapQueues(
                    MapQueues::new(&MapQueuesArgs {
                        queue_sel,
                        queue_type,
                        engine,
                        gws_control_queue: b[0],
                        num_queues,
                        check_disable: b[1],
                        doorbell_offset,
                        mqd_addr,
                        wptr_addr,
                    })
                    .unwrap(),
                ))
            },
        )
}

fn arb_unmap_queues() -> impl Strategy<Value = Owned> {
    let target = prop_oneof![
        (
            [0u32..1 << 26, 0u32..1 << 26, 0u32..1 << 26, 0u32..1 << 26],
            1u8..=4
        )
            .prop_map(|(doorbell_offsets, count)| UnmapTarget::Queues {
                doorbell_offsets,
                count
            }),
        any::<u16>().prop_map(UnmapTarget::Pasid),
        Just(UnmapTarget::AllQueues),
        Just(UnmapTarget::DynamicQueues),
    ];
    (
        en::<UnmapAction>(),
        target,
        en::<ExtendedEngineSel>(),
        0u8..8,
        0u8..8,
    )
        .prop_map(|(action, target, ext, sel, n)| {
            Owned::Fixed(Packet::UnmapQueues(
                UnmapQueues::new(&UnmapQueuesArgs {
                    action,
                    target,
                    extended_engine_sel: ext,
                    engine_sel: sel,
                    num_queues: n,
                })
                .unwrap(),
            ))
        })
}

fn arb_query_status() -> impl Strategy<Value = Owned> {
    let target = prop_oneof![
        Just(QueryTarget::Completion),
        any::<u16>().prop_map(|pasid| QueryTarget::Process { pasid }),
        (0u32..1 << 26, 0u8..8).prop_map(|(doorbell_offset, engine_sel)| QueryTarget::Queue {
            doorbell_offset,
            engine_sel
        }),
    ];
    (
        0u32..1 << 28,
        en::<QueryCommand>(),
        target,
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(context_id, command, target, addr, value)| {
            Owned::Fixed(Packet::QueryStatus(
                QueryStatus::new(&QueryStatusArgs {
                    context_id,
                    command,
                    target,
                    fence_addr: addr & !7,
                    fence_value: value,
                })
                .unwrap(),
            ))
        })
}

fn arb_write_data() -> impl Strategy<Value = Owned> {
    let target = prop_oneof![
        (0u32..1 << 18).prop_map(WriteDataTarget::Register),
        (0u32..1 << 16).prop_map(WriteDataTarget::Gds),
        any::<u64>().prop_map(|a| WriteDataTarget::Memory(a & !3)),
    ];
    let sel = select(vec![
        WriteDataMemSel::Async,
        WriteDataMemSel::TcL2,
        WriteDataMemSel::SyncGrbm,
    ]);
    let control =
        (any::<[bool; 3]>(), en::<CachePolicy>(), en::<EngineSel>()).prop_map(|(b, cp, es)| {
            WriteDataControl::new()
                .with_addr_incr(b[0])
                .with_resume_vf(b[1])
                .with_wr_confirm(b[2])
                .with_cache_policy(cp)
                .with_engine_sel(es)
        });
    prop_oneof![
        (
            target,
            sel,
            control,
            proptest::collection::vec(any::<u32>(), 1..40)
        )
            .prop_map(|(t, s, c, d)| Owned::WriteData(t, s, c, d)),
        (0u32..1 << 18, any::<u32>(), any::<bool>())
            .prop_map(|(r, v, c)| Owned::Register(WriteDataRegister::new(r, v, c).unwrap())),
    ]
}

fn arb_release_args() -> impl Strategy<Value = ReleaseMemArgs> {
    (
        event_type(),
        en::<ReleaseEventIndex>(),
        en::<CachePolicy>(),
        en::<ReleaseDstSel>(),
        en::<ReleaseIntSel>(),
        en::<ReleaseDataSel>(),
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
    )
        .prop_map(
            |(
                event_type,
                event_index,
                cache_policy,
                dst_sel,
                int_sel,
                data_sel,
                addr,
                data,
                int_ctxid,
            )| {
                let data_sel = if int_sel == ReleaseIntSel::SendInterruptOnly {
                    ReleaseDataSel::None
                } else {
                    data_sel
                };
                ReleaseMemArgs {
                    event_type,
                    event_index,
                    cache_policy,
                    dst_sel,
                    int_sel,
                    data_sel,
                    addr: addr & !7,
                    data,
                    int_ctxid,
                }
            },
        )
}

fn arb_release(gen: GfxGen) -> BoxedStrategy<Owned> {
    match gen {
        GfxGen::Gfx9 => (arb_release_args(), any::<u32>())
            .prop_map(|(a, r)| {
                let cache = ReleaseCacheGfx9::from_bits(r & !ReleaseCacheGfx9::RESERVED_MASK);
                Owned::Fixed(Packet::ReleaseMemGfx9(
                    ReleaseMemGfx9::new(&a, cache).unwrap(),
                ))
            })
            .boxed(),
        _ => (arb_release_args(), any::<u32>(), 0u8..4, 0u8..4)
            .prop_map(|(a, r, pipe, action)| {
                let cache = ReleaseCacheGfx10::from_bits(r & !ReleaseCacheGfx10::RESERVED_MASK);
                let mut p = ReleaseMemGfx10::new(&a, cache).unwrap();
                p.tail.data_control = p
                    .tail
                    .data_control
                    .with_mes_intr_pipe(pipe)
                    .with_mes_action_id(action);
                Owned::Fixed(Packet::ReleaseMemGfx10(p))
            })
            .boxed(),
    }
}

fn arb_range() -> impl Strategy<Value = AcquireRange> {
    prop_oneof![
        any::<u16>().prop_map(AcquireRange::full),
        (0u64..1 << 40, 0u64..1 << 56, any::<u16>())
            .prop_map(|(s, b, p)| AcquireRange::new(s, b, p).unwrap()),
    ]
}

fn arb_acquire(gen: GfxGen) -> BoxedStrategy<Owned> {
    match gen {
        GfxGen::Gfx9 => (any::<u32>(), arb_range())
            .prop_map(|(r, range)| {
                Owned::Fixed(Packet::AcquireMemGfx9(AcquireMemGfx9::new(
                    CoherCntl::from_bits(r & !CoherCntl::RESERVED_MASK),
                    range,
                )))
            })
            .boxed(),
        _ => (any::<u32>(), arb_range())
            .prop_map(|(r, range)| {
                Owned::Fixed(Packet::AcquireMemGfx10(AcquireMemGfx10::new(
                    AcquireGcr::from_bits(r & !AcquireGcr::RESERVED_MASK),
                    range,
                )))
            })
            .boxed(),
    }
}

fn arb_wait(gen: GfxGen) -> impl Strategy<Value = Owned> {
    let target = prop_oneof![
        any::<u64>().prop_map(|a| PollTarget::Memory(a & !7)),
        (0u32..1 << 18, 0u32..1 << 18)
            .prop_map(|(reg, write_reg)| PollTarget::Register { reg, write_reg }),
    ];
    let gfx10 = gen != GfxGen::Gfx9;
    (
        en::<CompareFunction>(),
        en::<WaitOperation>(),
        target,
        any::<u16>(),
        any::<bool>(),
        any::<u64>(),
        any::<u64>(),
        en::<EngineSel>(),
        0u8..4,
        any::<bool>(),
        en::<CachePolicy>(),
        any::<bool>(),
    )
        .prop_map(
            move |(
                function,
                operation,
                target,
                poll_interval,
                opt,
                reference,
                mask,
                es,
                pipe,
                action,
                cp,
                wide,
            )| {
                let args = WaitArgs {
                    function,
                    operation,
                    target,
                    poll_interval,
                    optimize_ace_offload_mode: opt,
                };
                let mut control = if wide {
                    WaitRegMem64::new(&args, reference, mask).unwrap().control
                } else {
                    WaitRegMem::new(&args, reference as u32, mask as u32)
                        .unwrap()
                        .control
                };
                control = control.with_engine_sel(es);
                if gfx10 {
                    control = control
                        .with_mes_intr_pipe(pipe)
                        .with_mes_action(action)
                        .with_cache_policy(cp);
                }
                if wide {
                    let mut p = WaitRegMem64::new(&args, reference, mask).unwrap();
                    p.control = control;
                    Owned::Fixed(Packet::WaitRegMem64(p))
                } else {
                    let mut p = WaitRegMem::new(&args, reference as u32, mask as u32).unwrap();
                    p.control = control;
                    Owned::Fixed(Packet::WaitRegMem(p))
                }
            },
        )
}

fn arb_misc(gen: GfxGen) -> impl Strategy<Value = Owned> {
    let ib = (any::<u64>(), 0u32..1 << 20, any::<u32>()).prop_map(|(a, s, r)| {
        Owned::Fixed(Packet::IndirectBuffer(
            IndirectBuffer::new(
                a & !3,
                s,
                IndirectBufferControl::from_bits(r & !IndirectBufferControl::RESERVED_MASK),
            )
            .unwrap(),
        ))
    });
    let copy = (
        en::<CopySrcSel>(),
        en::<CopyDstSel>(),
        en::<CopyCountSel>(),
        any::<[bool; 2]>(),
        en::<CachePolicy>(),
        en::<CachePolicy>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(s, d, c, b, scp, dcp, src, dst)| {
            let control = CopyDataControl::new()
                .with_src_sel(s)
                .with_dst_sel(d)
                .with_count_sel(c)
                .with_wr_confirm(b[0])
                .with_pq_exe_status(b[1])
                .with_src_cache_policy(scp)
                .with_dst_cache_policy(dcp);
            Owned::Fixed(Packet::CopyData(
                CopyData::new(control, src & !7, dst & !7).unwrap(),
            ))
        });
    let dma = (any::<u32>(), any::<u64>(), any::<u64>(), any::<u32>()).prop_map(
        move |(c, src, dst, cmd)| {
            let mut command = DmaDataCommand::from_bits(cmd);
            if gen == GfxGen::Gfx9 {
                command = command.with_byte_count(command.byte_count() & DMA_DATA_GFX9_MAX_BYTES);
            }
            Owned::Fixed(Packet::DmaData(
                DmaData::new(
                    gen,
                    DmaDataControl::from_bits(c & !DmaDataControl::RESERVED_MASK),
                    src,
                    dst,
                    command,
                )
                .unwrap(),
            ))
        },
    );
    let event = (
        event_type(),
        (0u32..16).prop_map(EventWriteIndex::from_bits),
        0u8..4,
        any::<bool>(),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(t, i, mode, off, addr)| match addr {
            None => {
                let mut p = EventWrite::new(t, i).unwrap();
                p.control = p
                    .control
                    .with_samp_plst_cntr_mode(mode)
                    .with_offload_enable(off);
                Owned::Fixed(Packet::EventWrite(p))
            }
            Some(a) => {
                let mut p = EventWriteAddr::new(t, i, a & !7).unwrap();
                p.control = p
                    .control
                    .with_samp_plst_cntr_mode(mode)
                    .with_offload_enable(off);
                Owned::Fixed(Packet::EventWriteAddr(p))
            }
        });
    let sh = (
        SH_REG_BASE..SH_REG_BASE + 0x10000,
        proptest::collection::vec(any::<u32>(), 1..20),
    )
        .prop_map(|(r, v)| Owned::SetShReg(r, v));
    let ctx = (
        CONTEXT_REG_BASE..CONTEXT_REG_BASE + 0x10000,
        proptest::collection::vec(any::<u32>(), 1..20),
    )
        .prop_map(|(r, v)| Owned::SetContextReg(r, v));
    let dispatch = (any::<[u32; 3]>(), any::<u32>()).prop_map(|(d, i)| {
        Owned::Fixed(Packet::DispatchDirect(DispatchDirect::new(
            d,
            DispatchInitiator::from_bits(i),
        )))
    });
    let nop = proptest::collection::vec(any::<u32>(), 0..30).prop_map(Owned::Nop);
    prop_oneof![
        ib,
        copy,
        dma,
        event,
        sh,
        ctx,
        dispatch,
        nop,
        Just(Owned::Fixed(Packet::Type2Filler))
    ]
}

fn arb_packet(gen: GfxGen) -> impl Strategy<Value = Owned> {
    prop_oneof![
        arb_set_resources(),
        arb_run_list(),
        arb_map_process(),
        arb_map_queues(),
        arb_unmap_queues(),
        arb_query_status(),
        arb_write_data(),
        arb_release(gen),
        arb_acquire(gen),
        arb_wait(gen),
        arb_misc(gen),
    ]
}

fn arb_gen() -> impl Strategy<Value = GfxGen> {
    select(vec![GfxGen::Gfx9, GfxGen::Gfx10, GfxGen::Gfx11])
}

proptest! {
    #![proptest_config(ProptestConfig {
        // Under Miri every case is interpreted: a handful per property.
        cases: if cfg!(miri) { 8 } else { 2000 },
        .. ProptestConfig::default()
    })]

    #[test]
    fn pm4_packet_round_trips((gen, owned) in arb_gen().prop_flat_map(|g| (Just(g), arb_packet(g)))) {
        owned.with_packet(|p| {
            let mut buf = vec![0u32; p.dwords()];
            prop_assert_eq!(p.encode_into(&mut buf), Ok(buf.len()));
            let mut dec = Pm4Decoder::new(&buf, gen);
            let d = dec.next().expect("one packet").map_err(|e| TestCaseError::fail(format!("{e} for {p:?}")))?;
            prop_assert_eq!(d.offset, 0);
            prop_assert_eq!(d.words.len(), buf.len());
            prop_assert_eq!(d.packet, p);
            prop_assert!(dec.next().is_none());
            if let Owned::Register(r) = &owned {
                let Packet::WriteData(wd) = d.packet else { return Err(TestCaseError::fail("not WRITE_DATA")) };
                prop_assert_eq!(wd.as_register_write(), Some(*r));
            }
            // The one-line text never is empty and starts with the opcode name.
            let text = d.packet.to_string();
            prop_assert!(text.starts_with(d.packet.name()), "{}", text);
            Ok(())
        })?;
    }

    #[test]
    fn pm4_streams_round_trip((gen, packets) in arb_gen().prop_flat_map(|g| (Just(g), proptest::collection::vec(arb_packet(g), 1..16)))) {
        let mut buf = vec![0u32; 4096];
        let mut w = PacketWriter::new(&mut buf);
        let mut offsets = Vec::new();
        for o in &packets {
            offsets.push(w.len());
            o.with_packet(|p| w.push(&p).map(|_| ())).unwrap();
        }
        let n = w.len();
        let decoded: Vec<_> = Pm4Decoder::new(&buf[..n], gen).collect::<Result<_, _>>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(decoded.len(), packets.len());
        for ((d, o), off) in decoded.iter().zip(&packets).zip(&offsets) {
            prop_assert_eq!(d.offset, *off);
            o.with_packet(|p| { prop_assert_eq!(d.packet, p); Ok(()) })?;
        }
    }
}

// ---------------------------------------------------------------------------------------
// SDMA
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum OwnedSdma {
    Fixed(SdmaPacket<'static>),
    Nop(Vec<u32>),
    Write(u64, bool, EndianSwap, Vec<u32>),
}

impl OwnedSdma {
    fn with_packet<R>(&self, f: impl FnOnce(SdmaPacket<'_>) -> R) -> R {
        match self {
            OwnedSdma::Fixed(p) => f(*p),
            OwnedSdma::Nop(v) => f(SdmaPacket::Nop(SdmaNop::new(v).unwrap())),
            OwnedSdma::Write(dst, tmz, sw, data) => {
                let mut p = SdmaWrite::new(*dst, data).unwrap();
                p.head.header = p.head.header.with_tmz(*tmz);
                p.head.count = p.head.count.with_sw(*sw);
                f(SdmaPacket::Write(p))
            }
        }
    }
}

fn arb_sdma(gen: SdmaGen) -> impl Strategy<Value = OwnedSdma> {
    let max_copy = max_copy_bytes(gen);
    let sdma5 = gen.major() >= 5;
    let sdma6 = gen.major() == 6;
    let copy = (
        any::<u64>(),
        any::<u64>(),
        1..=max_copy,
        any::<[bool; 3]>(),
        en::<EndianSwap>(),
        en::<EndianSwap>(),
        0u8..8,
        0u8..8,
    )
        .prop_map(move |(s, d, n, b, ssw, dsw, scp, dcp)| {
            let mut p = SdmaCopyLinear::new(gen, s, d, n).unwrap();
            p.header = p
                .header
                .with_encrypt(b[0])
                .with_tmz(b[1])
                .with_backwards(b[2] && sdma5);
            p.params = p.params.with_src_sw(ssw).with_dst_sw(dsw);
            if sdma6 {
                p.params = p
                    .params
                    .with_src_cache_policy(scp)
                    .with_dst_cache_policy(dcp);
            }
            OwnedSdma::Fixed(SdmaPacket::CopyLinear(p))
        });
    let sub_wind = (
        (
            any::<u64>(),
            0u32..1 << 14,
            0u32..1 << 14,
            0u32..1 << 11,
            1u32..=1 << 19,
            1u32..=1 << 28,
        ),
        (
            any::<u64>(),
            0u32..1 << 14,
            0u32..1 << 14,
            0u32..1 << 11,
            1u32..=1 << 19,
            1u32..=1 << 28,
        ),
        (
            1u32..=1 << 14,
            1u32..=1 << 14,
            1u32..=1 << 11,
            0u8..=4,
            any::<bool>(),
        ),
        (en::<EndianSwap>(), en::<EndianSwap>(), 0u8..8, 0u8..8),
    )
        .prop_map(move |(s, d, (rx, ry, rz, es, tmz), (ssw, dsw, scp, dcp))| {
            let surf =
                |(a, x, y, z, pitch, slice_pitch): (u64, u32, u32, u32, u32, u32)| SubWindSurface {
                    addr: a & !3,
                    x,
                    y,
                    z,
                    pitch,
                    slice_pitch,
                };
            let mut p = SdmaCopyLinearSubWind::new(es, surf(s), surf(d), [rx, ry, rz]).unwrap();
            assert_fields_round_trip(&p, surf(s), surf(d), [rx, ry, rz]);
            p.header = p.header.with_tmz(tmz);
            p.rect_z = p.rect_z.with_src_sw(ssw).with_dst_sw(dsw);
            if sdma6 {
                p.rect_z = p
                    .rect_z
                    .with_src_cache_policy(scp)
                    .with_dst_cache_policy(dcp);
            }
            OwnedSdma::Fixed(SdmaPacket::CopyLinearSubWind(p))
        });
    let write = (
        any::<u64>(),
        any::<bool>(),
        en::<EndianSwap>(),
        proptest::collection::vec(any::<u32>(), 1..40),
    )
        .prop_map(|(d, t, sw, data)| OwnedSdma::Write(d & !3, t, sw, data));
    let fence = (any::<u64>(), any::<u32>(), any::<u32>()).prop_map(move |(a, v, h)| {
        let mut p = SdmaFence::new(a & !3, v).unwrap();
        if sdma5 {
            p.header =
                SdmaFenceHeader::from_bits((h & 0x03FF_0000 & !SdmaFenceHeader::RESERVED_MASK) | 5);
        }
        OwnedSdma::Fixed(SdmaPacket::Fence(p))
    });
    let trap =
        (0u32..1 << 28).prop_map(|c| OwnedSdma::Fixed(SdmaPacket::Trap(SdmaTrap::new(c).unwrap())));
    let poll = (
        any::<u64>(),
        en::<CompareFunction>(),
        any::<u32>(),
        any::<u32>(),
        any::<u16>(),
        0u16..4096,
        any::<[bool; 2]>(),
    )
        .prop_map(|(a, f, r, m, i, rc, b)| {
            let mut p = SdmaPollRegmem::memory(a & !3, f, r, m, i, rc).unwrap();
            p.header = p.header.with_hdp_flush(b[0]).with_mem_poll(b[1]);
            OwnedSdma::Fixed(SdmaPacket::PollRegmem(p))
        });
    let fill = (
        any::<u64>(),
        any::<u32>(),
        1..=max_fill_bytes(gen),
        en::<EndianSwap>(),
        en::<FillSize>(),
    )
        .prop_map(move |(d, v, n, sw, fs)| {
            let mut p = SdmaConstantFill::new(gen, d & !3, v, n).unwrap();
            p.header = p.header.with_sw(sw).with_fillsize(fs);
            OwnedSdma::Fixed(SdmaPacket::ConstantFill(p))
        });
    let ts = (en::<TimestampOp>(), any::<u64>()).prop_map(|(op, v)| {
        let v = if op == TimestampOp::Set { v } else { v & !7 };
        OwnedSdma::Fixed(SdmaPacket::Timestamp(SdmaTimestamp::new(op, v).unwrap()))
    });
    let ib = (
        any::<u64>(),
        0u32..1 << 20,
        0u8..16,
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(b, s, v, c, p)| {
            let mut ib = SdmaIndirect::new(b & !31, s, v, c).unwrap();
            ib.header = ib.header.with_privileged(p);
            OwnedSdma::Fixed(SdmaPacket::Indirect(ib))
        });
    let nop = proptest::collection::vec(any::<u32>(), 0..30).prop_map(OwnedSdma::Nop);
    // Where the engine has no broadcast copy, a plain copy stands in for it.
    let broadcast = (
        [any::<u64>(), any::<u64>(), any::<u64>()],
        1..=max_copy,
        any::<[bool; 2]>(),
        [en::<EndianSwap>(), en::<EndianSwap>(), en::<EndianSwap>()],
        [0u8..8, 0u8..8, 0u8..8],
    )
        .prop_map(
            move |([s, d1, d2], n, b, [ssw, sw1, sw2], [scp, cp1, cp2])| {
                let Ok(mut p) = SdmaCopyLinearBroadcast::new(gen, s, d1, d2, n) else {
                    return OwnedSdma::Fixed(SdmaPacket::CopyLinear(
                        SdmaCopyLinear::new(gen, s, d1, n).unwrap(),
                    ));
                };
                assert_eq!((p.src(), p.dsts(), p.byte_count()), (s, [d1, d2], n));
                p.header = p.header.with_encrypt(b[0]).with_tmz(b[1]);
                p.params = p
                    .params
                    .with_src_sw(ssw)
                    .with_dst1_sw(sw1)
                    .with_dst2_sw(sw2);
                if sdma6 {
                    p.params = p
                        .params
                        .with_src_cache_policy(scp)
                        .with_dst1_cache_policy(cp1)
                        .with_dst2_cache_policy(cp2);
                }
                OwnedSdma::Fixed(SdmaPacket::CopyLinearBroadcast(p))
            },
        );
    prop_oneof![copy, sub_wind, write, fence, trap, poll, fill, ts, ib, nop, broadcast]
}

/// The accessors give back what the builder was given (minus-one encodings undone).
fn assert_fields_round_trip(
    p: &SdmaCopyLinearSubWind,
    src: SubWindSurface,
    dst: SubWindSurface,
    rect: [u32; 3],
) {
    assert_eq!((p.src(), p.dst(), p.rect()), (src, dst, rect));
}

fn arb_sdma_gen() -> impl Strategy<Value = SdmaGen> {
    select(SdmaGen::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // Under Miri every case is interpreted: a handful per property.
        cases: if cfg!(miri) { 8 } else { 1000 },
        .. ProptestConfig::default()
    })]

    #[test]
    fn sdma_streams_round_trip((gen, packets) in arb_sdma_gen().prop_flat_map(|g| (Just(g), proptest::collection::vec(arb_sdma(g), 1..12)))) {
        let mut buf = vec![0u32; 2048];
        let mut w = PacketWriter::new(&mut buf);
        for o in &packets {
            o.with_packet(|p| w.push(&p).map(|_| ())).unwrap();
        }
        let n = w.len();
        let decoded: Vec<_> = SdmaDecoder::new(&buf[..n], gen).collect::<Result<_, _>>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(decoded.len(), packets.len());
        for (d, o) in decoded.iter().zip(&packets) {
            o.with_packet(|p| { prop_assert_eq!(d.packet, p); Ok(()) })?;
            prop_assert!(d.packet.to_string().starts_with(d.packet.name()));
        }
    }
}
