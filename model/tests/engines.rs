//! The engines that execute queues (issue #6): PM4 and AQL on the CP, SDMA, interrupts into
//! events, VM faults, the write-pointer units and ring wraparound, preemption of a waiting
//! queue (facts §4, §5, §8, §9.10). Most tests turn the engine thread off and drive the
//! engines with `run_until_idle`, so they are deterministic; the ones about waking
//! `WAIT_EVENTS` keep the thread on, as a real client would see it.

mod common;

use common::*;
use kfd_model::{Model, ModelConfig, Preset, QueueError};
use kfd_sys::*;
use pm4::fields::CompareFunction;
use pm4::sdma::{
    SdmaConstantFill, SdmaCopyLinear, SdmaCopyLinearBroadcast, SdmaCopyLinearSubWind, SdmaFence,
    SdmaPollRegmem, SdmaTimestamp, SdmaTrap, SdmaWrite, SubWindSurface, TimestampOp,
};
use pm4::user::*;
use pm4::{Encode, GfxGen, PacketWriter, SdmaGen};

const COMPLETE: u32 = KFD_IOC_WAIT_RESULT_COMPLETE;

/// A model whose engines run only when the test steps them.
fn stepped(preset: Preset) -> Model {
    model_with(ModelConfig::new(preset).with_engine_thread(false))
}

fn encode<P: Encode + ?Sized>(p: &P) -> Vec<u32> {
    let mut v = vec![0u32; p.dwords()];
    let n = PacketWriter::new(&mut v).push(p).expect("encode");
    v.truncate(n);
    v
}

fn release_mem(
    gen: GfxGen,
    addr: u64,
    data: u64,
    ctxid: u32,
    int: ReleaseIntSel,
    sel: ReleaseDataSel,
) -> Vec<u32> {
    let args = ReleaseMemArgs::end_of_pipe(addr, data, sel, int, ctxid);
    match gen {
        GfxGen::Gfx9 => encode(&ReleaseMemGfx9::new(&args, Default::default()).unwrap()),
        _ => encode(&ReleaseMemGfx10::new(&args, Default::default()).unwrap()),
    }
}

/// kfdtest's way of signalling event `id` from a compute queue (facts §8.2).
fn signal_event(gen: GfxGen, page_va: u64, id: u32) -> Vec<u32> {
    release_mem(
        gen,
        page_va + 8 * u64::from(id),
        u64::from(id),
        id,
        ReleaseIntSel::SendInterruptAfterWriteConfirm,
        ReleaseDataSel::Data32,
    )
}

fn wait_mem(addr: u64, function: CompareFunction, reference: u32) -> WaitRegMem {
    WaitRegMem::new(
        &WaitArgs {
            function,
            operation: WaitOperation::WaitRegMem,
            target: PollTarget::Memory(addr),
            poll_interval: 4,
            optimize_ace_offload_mode: true,
        },
        reference,
        u32::MAX,
    )
    .unwrap()
}

fn ib(addr: u64, dwords: usize, chain: bool) -> IndirectBuffer {
    IndirectBuffer::new(
        addr,
        dwords as u32,
        IndirectBufferControl::new().with_chain(chain),
    )
    .unwrap()
}

fn gen_of(c: &Client) -> GfxGen {
    c.node().gpu.generation
}

/// The wrapped dword read pointer a PM4 queue reports.
fn reported_rptr(q: &QueueBufs) -> u32 {
    q.ptrs.read_u32(0x80)
}

#[test]
fn write_data_and_release_mem_interrupt_wake_wait_events() {
    for preset in [Preset::Gfx900, Preset::Gfx90a, Preset::Gfx1030] {
        // The engine thread notices the doorbell by itself.
        let model = model(preset, 1);
        let c = Client::new(&model);
        let gen = gen_of(&c);
        let page = c.event_page();
        let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, true, page.handle).unwrap();
        let out = c.gtt(4096);
        let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
        let mut ring = RingWriter::pm4(&q);
        ring.push(
            &q,
            &WriteData::memory(out.va + 16, &[0xC0FF_EE00, 0xBEEF]).unwrap(),
        );
        ring.write(&q, &signal_event(gen, page.va, ev.event_id));
        c.submit(&q, ring.wptr());
        let (r, result) = wait_events(&c, &[ev.event_id], true, HANG_MS);
        assert_eq!((r, result), (Ok(0), COMPLETE), "{preset}");
        assert_eq!(out.read_u32(16), 0xC0FF_EE00);
        assert_eq!(out.read_u32(20), 0xBEEF);
        assert_eq!(
            reported_rptr(&q),
            ring.wptr() as u32,
            "rptr reported in dwords"
        );
        assert_eq!(
            page.read_u64(8 * u64::from(ev.event_id)),
            u64::MAX,
            "the interrupt handler acknowledged the slot"
        );
        let st = c.p.queue_state(qid).unwrap();
        assert_eq!((st.packets, st.unit, st.error), (2, "dwords", None));
        // A second round through the same queue (auto-reset event consumed by the first wait).
        ring.write(&q, &signal_event(gen, page.va, ev.event_id));
        c.submit(&q, ring.wptr());
        model.doorbell_rung(c.gpu());
        assert_eq!(
            wait_events(&c, &[ev.event_id], true, HANG_MS),
            (Ok(0), COMPLETE)
        );
    }
}

/// PASIDs are 16 bits wide (MAP_PROCESS, IH entries). Past 0xFFFF the model wraps to the first
/// free one, skipping live processes, and a process with a wrapped PASID still gets its queue's
/// interrupts. (The model once counted on past 0xFFFF: after 32,767 processes an interrupt
/// carried the truncated PASID, found no process, and the waiter timed out.)
#[test]
fn pasids_stay_16_bit_wrap_past_live_processes_and_get_their_interrupts() {
    use kfd_model::process::{FIRST_PASID, PASID_END};
    let model = model(Preset::Gfx900, 1);
    let kept = model.open().unwrap();
    assert_eq!(kept.pasid(), FIRST_PASID);
    let mut last = 0;
    for _ in FIRST_PASID + 1..PASID_END {
        last = model.open().unwrap().pasid();
    }
    assert_eq!(
        last, 0xFFFF,
        "every 16-bit PASID from the first was handed out once"
    );
    let c = Client::new(&model);
    assert_eq!(
        c.p.pasid(),
        FIRST_PASID + 1,
        "wrapped, past the live {FIRST_PASID:#x}"
    );
    let page = c.event_page();
    let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, true, page.handle).unwrap();
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.write(&q, &signal_event(gen_of(&c), page.va, ev.event_id));
    c.submit(&q, ring.wptr());
    assert_eq!(
        wait_events(&c, &[ev.event_id], true, HANG_MS),
        (Ok(0), COMPLETE),
        "the interrupt found the process of the wrapped PASID"
    );
    drop(kept);
    assert_eq!(
        model.open().unwrap().pasid(),
        FIRST_PASID + 2,
        "round robin, not lowest free"
    );
}

#[test]
fn release_mem_writes_64_bit_data_and_the_gpu_clock() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let gen = gen_of(&c);
    let out = c.gtt(4096);
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    let none = ReleaseIntSel::None;
    ring.write(
        &q,
        &release_mem(
            gen,
            out.va,
            0x1122_3344_5566_7788,
            0,
            none,
            ReleaseDataSel::Data64,
        ),
    );
    ring.write(
        &q,
        &release_mem(
            gen,
            out.va + 8,
            0xFFFF_FFFF_0000_0042,
            0,
            none,
            ReleaseDataSel::Data32,
        ),
    );
    ring.write(
        &q,
        &release_mem(
            gen,
            out.va + 16,
            0,
            0,
            none,
            ReleaseDataSel::GpuClockCounter,
        ),
    );
    let copy_clock = CopyData::new(
        CopyDataControl::new()
            .with_src_sel(CopySrcSel::GpuClockCount)
            .with_dst_sel(CopyDstSel::Memory)
            .with_count_sel(CopyCountSel::Bits64),
        0,
        out.va + 24,
    )
    .unwrap();
    ring.push(&q, &copy_clock);
    let mut clk = kfd_ioctl_get_clock_counters_args {
        gpu_id: c.gpu(),
        ..Default::default()
    };
    c.p.call::<GetClockCounters>(&mut clk).unwrap();
    let before = clk.gpu_clock_counter;
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    c.p.call::<GetClockCounters>(&mut clk).unwrap();
    let after = clk.gpu_clock_counter;
    assert_eq!(out.read_u64(0), 0x1122_3344_5566_7788);
    assert_eq!(
        out.read_u64(8),
        0x42,
        "32-bit data writes the low dword only"
    );
    let (t1, t2) = (out.read_u64(16), out.read_u64(24));
    assert!(
        before <= t1 && t1 <= t2 && t2 <= after,
        "{before} {t1} {t2} {after}: one GPU clock"
    );
}

#[test]
fn indirect_buffers_nest_two_levels_and_chain() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let out = c.gtt(4096);
    let ibs = c.gtt(8192);
    let w = |i: u64, v: u32| encode(&WriteData::memory(out.va + 4 * i, &[v]).unwrap());
    // IB3 (chained to from IB1): writes slot 3.
    let ib3 = w(3, 3);
    ibs.write_bytes(0x800, zerocopy_bytes(&ib3));
    // IB2 (called from IB1): writes slot 2.
    let ib2 = w(2, 2);
    ibs.write_bytes(0x400, zerocopy_bytes(&ib2));
    // IB1: slot 1, call IB2, slot 4, chain to IB3, then a write that must never run.
    let mut ib1 = w(1, 1);
    ib1.extend(encode(&ib(ibs.va + 0x400, ib2.len(), false)));
    ib1.extend(w(4, 4));
    ib1.extend(encode(&ib(ibs.va + 0x800, ib3.len(), true)));
    ib1.extend(w(9, 99));
    ibs.write_bytes(0, zerocopy_bytes(&ib1));
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(&q, &ib(ibs.va, ib1.len(), false));
    ring.write(&q, &w(5, 5));
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    let got: Vec<u32> = (0..10).map(|i| out.read_u32(4 * i)).collect();
    assert_eq!(
        got,
        [0, 1, 2, 3, 4, 5, 0, 0, 0, 0],
        "after the chain, IB1's tail is skipped"
    );
    assert_eq!(reported_rptr(&q), ring.wptr() as u32);
    assert_eq!(c.p.queue_state(qid).unwrap().error, None);

    // A third level is more than the MEC's IB1/IB2: the queue stops with a clear error.
    ibs.write_bytes(
        0x1000,
        zerocopy_bytes(&encode(&ib(ibs.va + 0x1400, 4, false))),
    );
    ibs.write_bytes(
        0x1400,
        zerocopy_bytes(&encode(&ib(ibs.va + 0x1800, 5, false))),
    );
    ibs.write_bytes(0x1800, zerocopy_bytes(&w(6, 6)));
    ring.write(&q, &encode(&ib(ibs.va + 0x1000, 4, false)));
    c.submit(&q, ring.wptr());
    let a = model.run_until_idle();
    assert_eq!(a.halted, 1);
    match c.p.queue_error(qid) {
        Some(QueueError::NotModelled { what, .. }) => {
            assert!(what.contains("nested deeper"), "{what}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(out.read_u32(24), 0);
}

fn zerocopy_bytes(d: &[u32]) -> &[u8] {
    <[u32] as IntoBytes>::as_bytes(d)
}

#[test]
fn wait_reg_mem_parks_until_another_queue_releases_it() {
    for preset in [Preset::Gfx900, Preset::Gfx1030] {
        let model = stepped(preset);
        let c = Client::new(&model);
        let flags = c.gtt(4096);
        let (waiter_id, waiter) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
        let (_, releaser) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
        let mut a = RingWriter::pm4(&waiter);
        if preset == Preset::Gfx1030 {
            // The 64-bit form exists from gfx10 on.
            let w64 = WaitRegMem64::new(
                &WaitArgs {
                    function: CompareFunction::Equal,
                    operation: WaitOperation::WaitRegMem,
                    target: PollTarget::Memory(flags.va),
                    poll_interval: 4,
                    optimize_ace_offload_mode: false,
                },
                0x1_0000_0001,
                u64::MAX,
            )
            .unwrap();
            a.push(&waiter, &w64);
        } else {
            a.push(&waiter, &wait_mem(flags.va, CompareFunction::Equal, 1));
        }
        a.push(&waiter, &WriteData::memory(flags.va + 64, &[7]).unwrap());
        c.submit(&waiter, a.wptr());
        let act = model.run_until_idle();
        assert_eq!(
            (act.parked, flags.read_u32(64)),
            (1, 0),
            "{preset}: parked, nothing after it ran"
        );
        let st = c.p.queue_state(waiter_id).unwrap();
        assert!(st.parked && st.rptr == 0, "{st:?}");
        // The other queue writes the flag.
        let mut b = RingWriter::pm4(&releaser);
        if preset == Preset::Gfx1030 {
            b.push(&releaser, &WriteData::memory(flags.va, &[1, 1]).unwrap());
        } else {
            b.push(&releaser, &WriteData::memory(flags.va, &[1]).unwrap());
        }
        c.submit(&releaser, b.wptr());
        let act = model.run_until_idle();
        assert_eq!((act.parked, flags.read_u32(64)), (0, 7), "{preset}");
        assert_eq!(reported_rptr(&waiter), a.wptr() as u32);
    }
}

#[test]
fn every_compare_function_of_wait_reg_mem() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let mem = c.gtt(4096);
    mem.write_u32(0, 5);
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    use CompareFunction::*;
    let cases = [
        (Always, 0, true),
        (Less, 6, true),
        (Less, 5, false),
        (LessEqual, 5, true),
        (Equal, 5, true),
        (Equal, 4, false),
        (NotEqual, 4, true),
        (GreaterEqual, 5, true),
        (Greater, 5, false),
        (Greater, 4, true),
    ];
    for (f, reference, met) in cases {
        let before = ring.wptr();
        ring.push(&q, &wait_mem(mem.va, f, reference));
        c.submit(&q, ring.wptr());
        let a = model.run_until_idle();
        assert_eq!(a.parked == 0, met, "5 {f} {reference}");
        if !met {
            // Release it by changing the value it polls.
            let v = match f {
                Less => reference - 1,
                Equal => reference,
                Greater => reference + 1,
                _ => unreachable!(),
            };
            mem.write_u32(0, v);
            assert_eq!(model.run_until_idle().parked, 0);
            mem.write_u32(0, 5);
        }
        assert_eq!(
            u64::from(reported_rptr(&q)),
            ring.wptr() % 1024,
            "from {before}"
        );
    }
}

#[test]
fn sdma_copy_fence_and_trap_signal_an_event() {
    for preset in [Preset::Gfx900, Preset::Gfx1030] {
        let model = model(preset, 1);
        let c = Client::new(&model);
        let sgen = if preset == Preset::Gfx1030 {
            SdmaGen::Sdma5
        } else {
            SdmaGen::Sdma4
        };
        let page = c.event_page();
        let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        let src = c.gtt(1 << 20);
        let dst = c.gtt(1 << 20);
        let pattern: Vec<u8> = (0..(1u32 << 20)).map(|i| (i * 7 + 3) as u8).collect();
        src.write_bytes(0, &pattern);
        let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
        let mut ring = RingWriter::sdma(&q);
        ring.push(
            &q,
            &SdmaCopyLinear::new(sgen, src.va, dst.va, 1 << 20).unwrap(),
        );
        ring.push(
            &q,
            &SdmaFence::new(page.va + 8 * u64::from(ev.event_id), ev.event_id).unwrap(),
        );
        ring.push(&q, &SdmaTrap::new(ev.event_id).unwrap());
        c.submit(&q, ring.wptr());
        assert_eq!(
            wait_events(&c, &[ev.event_id], true, HANG_MS),
            (Ok(0), COMPLETE),
            "{preset}"
        );
        let mut got = vec![0u8; 1 << 20];
        dst.read_bytes(0, &mut got);
        assert!(got == pattern, "1 MiB copied");
        assert_eq!(
            q.ptrs.read_u64(0x80),
            ring.wptr(),
            "rptr written back in bytes"
        );
        let st = c.p.queue_state(qid).unwrap();
        assert_eq!((st.unit, st.packets, st.wptr), ("bytes", 3, ring.wptr()));
    }
}

/// gfx90a's SDMA 4.4 takes the 30-bit COPY_LINEAR counts ROCr 6.1 writes for copies of 4 MiB
/// and more, and the broadcast copy (one source, two destinations) kfdtest's P2P test and
/// ROCr write; gfx900's SDMA 4.0 has 22-bit counts and no broadcast copy, and stops the
/// queue on either as a packet with reserved bits set.
#[test]
fn sdma_4_4_copies_30_bit_counts_and_broadcasts() {
    const BYTES: u64 = 5 << 20;
    let pattern: Vec<u8> = (0..BYTES as u32).map(|i| (i * 13 + 1) as u8).collect();
    for (preset, sgen) in [
        (Preset::Gfx90a, SdmaGen::Sdma4_4),
        (Preset::Gfx900, SdmaGen::Sdma4),
    ] {
        let model = stepped(preset);
        let c = Client::new(&model);
        let src = c.gtt(BYTES);
        src.write_bytes(0, &pattern);
        let dst = [c.gtt(BYTES), c.gtt(BYTES), c.gtt(BYTES)];
        let out = c.gtt(4096);
        let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
        let mut ring = RingWriter::sdma(&q);
        // One packet of 5 MiB: count 0x4FFFFF, as ROCr writes it on gfx90a.
        let mut copy = SdmaCopyLinear::new(SdmaGen::Sdma4_4, src.va, dst[0].va, BYTES).unwrap();
        assert_eq!(copy.count, 0x4F_FFFF);
        ring.push(&q, &copy);
        ring.push(&q, &SdmaFence::new(out.va, 1).unwrap());
        c.submit(&q, ring.wptr());
        model.run_until_idle();
        let error = c.p.queue_error(qid);
        if sgen == SdmaGen::Sdma4 {
            assert!(
                format!("{error:?}").contains("reserved bits 0x00400000 set in dw1"),
                "{preset}: {error:?}"
            );
            assert_eq!(out.read_u32(0), 0, "{preset}: stopped at the copy");
            // Counts up to 22 bits still copy (after the stop, on a new queue).
            let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
            let mut ring = RingWriter::sdma(&q);
            copy.count = 0x3F_FFFF;
            ring.push(&q, &copy);
            ring.push(&q, &SdmaFence::new(out.va, 2).unwrap());
            // The broadcast bit is reserved on SDMA 4.0.
            let mut bcast =
                SdmaCopyLinearBroadcast::new(SdmaGen::Sdma4_4, src.va, dst[1].va, dst[2].va, 4096)
                    .unwrap();
            bcast.count = 4095;
            ring.push(&q, &bcast);
            ring.push(&q, &SdmaFence::new(out.va, 3).unwrap());
            c.submit(&q, ring.wptr());
            model.run_until_idle();
            assert_eq!(
                out.read_u32(0),
                2,
                "{preset}: the 4 MiB copy ran, not the broadcast"
            );
            let error = c.p.queue_error(qid);
            assert!(
                format!("{error:?}").contains("reserved bits 0x08000000 set in dw0"),
                "{preset}: {error:?}"
            );
            let mut got = vec![0u8; 4 << 20];
            dst[0].read_bytes(0, &mut got);
            assert!(got[..] == pattern[..4 << 20], "{preset}: 4 MiB copied");
            continue;
        }
        assert_eq!(error, None, "{preset}");
        assert_eq!(out.read_u32(0), 1, "{preset}");
        let mut got = vec![0u8; BYTES as usize];
        dst[0].read_bytes(0, &mut got);
        assert!(got == pattern, "{preset}: 5 MiB in one packet");
        // Broadcast: the same 5 MiB from one packet into two buffers.
        let bcast =
            SdmaCopyLinearBroadcast::new(sgen, src.va, dst[1].va, dst[2].va, BYTES).unwrap();
        ring.push(&q, &bcast);
        ring.push(&q, &SdmaFence::new(out.va, 2).unwrap());
        c.submit(&q, ring.wptr());
        model.run_until_idle();
        assert_eq!(
            (c.p.queue_error(qid), out.read_u32(0)),
            (None, 2),
            "{preset}"
        );
        for d in &dst[1..] {
            d.read_bytes(0, &mut got);
            assert!(got == pattern, "{preset}: both broadcast destinations");
        }
    }
}

#[test]
fn sdma_write_fill_timestamp_and_poll() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let out = c.gtt(8192);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    ring.push(&q, &SdmaWrite::new(out.va, &[1, 2, 3]).unwrap());
    ring.push(
        &q,
        &SdmaConstantFill::new(SdmaGen::Sdma4, out.va + 0x100, 0xA5A5_5A5A, 64).unwrap(),
    );
    ring.push(
        &q,
        &SdmaTimestamp::new(TimestampOp::GetGlobal, out.va + 0x200).unwrap(),
    );
    ring.push(
        &q,
        &SdmaPollRegmem::memory(out.va + 0x300, CompareFunction::Equal, 9, 0xFF, 10, 0xFFF)
            .unwrap(),
    );
    ring.push(&q, &SdmaFence::new(out.va + 0x400, 0x77).unwrap());
    c.submit(&q, ring.wptr());
    let a = model.run_until_idle();
    assert_eq!(a.parked, 1, "POLL_REGMEM waits");
    assert_eq!(
        (out.read_u32(0), out.read_u32(4), out.read_u32(8)),
        (1, 2, 3)
    );
    assert!((0..16).all(|i| out.read_u32(0x100 + 4 * i) == 0xA5A5_5A5A));
    assert_eq!(out.read_u32(0x140), 0, "fill stops at 64 bytes");
    assert!(out.read_u64(0x200) > 0, "global timestamp");
    assert_eq!(out.read_u32(0x400), 0, "the fence waits behind the poll");
    out.write_u32(0x300, 0x1209); // masked with 0xFF: 0x09
    model.run_until_idle();
    assert_eq!(out.read_u32(0x400), 0x77);
    assert!(!c.p.queue_state(qid).unwrap().parked);
}

#[test]
fn pm4_ring_wraps_over_many_laps() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let out = c.gtt(4096);
    // A one-page ring: 1024 dwords.
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    let mut rptr = 0u64;
    let mut straddled = 0;
    let n = 8000u32;
    for i in 0..n {
        let data: Vec<u32> = (0..=(i % 4)).map(|k| i * 16 + k).collect();
        let p = WriteData::memory(out.va + 16 * u64::from(i % 256), &data).unwrap();
        let len = p.dwords() as u64;
        if ring.free_dwords(rptr) < len {
            c.submit(&q, ring.wptr());
            model.run_until_idle();
            assert_eq!(
                u64::from(reported_rptr(&q)),
                ring.wptr() % 1024,
                "all consumed"
            );
            rptr = ring.wptr();
        }
        if ring.wptr() % 1024 + len > 1024 {
            straddled += 1;
        }
        ring.push(&q, &p);
    }
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    assert!(ring.wptr() / 1024 > 40, "{} laps", ring.wptr() / 1024);
    assert!(
        straddled > 10,
        "packets crossed the end of the ring {straddled} times"
    );
    for i in n - 256..n {
        let slot = 16 * u64::from(i % 256);
        for k in 0..=(i % 4) {
            assert_eq!(
                out.read_u32(slot + 4 * u64::from(k)),
                i * 16 + k,
                "packet {i}"
            );
        }
    }
}

#[test]
fn sdma_ring_wraps_over_many_laps() {
    let model = stepped(Preset::Gfx90a);
    let c = Client::new(&model);
    let out = c.gtt(4096);
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    let mut rptr_dw = 0u64;
    let n = 6000u32;
    for i in 0..n {
        let data: Vec<u32> = (0..=(i % 3)).map(|k| i * 8 + k).collect();
        let p = SdmaWrite::new(out.va + 16 * u64::from(i % 256), &data).unwrap();
        let len = p.dwords() as u64;
        if ring.free_dwords(rptr_dw) < len {
            c.submit(&q, ring.wptr());
            model.run_until_idle();
            assert_eq!(q.ptrs.read_u64(0x80), ring.wptr(), "monotonic byte rptr");
            rptr_dw = ring.wptr_dw;
        }
        ring.push(&q, &p);
    }
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    assert!(ring.wptr_dw / 1024 > 30, "{} laps", ring.wptr_dw / 1024);
    assert_eq!(q.ptrs.read_u64(0x80), ring.wptr());
    for i in n - 256..n {
        let slot = 16 * u64::from(i % 256);
        for k in 0..=(i % 3) {
            assert_eq!(
                out.read_u32(slot + 4 * u64::from(k)),
                i * 8 + k,
                "packet {i}"
            );
        }
    }
}

/// What COPY_LINEAR_SUB_WIND must leave in `dst` (a host copy of the destination buffer):
/// element (x, y, z) of a surface is at `addr + ((x + y·pitch + z·slice_pitch) << es)`.
fn sub_wind_reference(
    es: u32,
    src: &[u8],
    s: SubWindSurface,
    dst: &mut [u8],
    d: SubWindSurface,
    rect: [u32; 3],
    (src_base, dst_base): (u64, u64),
) {
    let at = |v: SubWindSurface, base: u64, x: u32, y: u32, z: u32| {
        let e = u64::from(v.x + x)
            + u64::from(v.y + y) * u64::from(v.pitch)
            + u64::from(v.z + z) * u64::from(v.slice_pitch);
        ((v.addr - base) + (e << es)) as usize
    };
    let eb = 1usize << es;
    for z in 0..rect[2] {
        for y in 0..rect[1] {
            for x in 0..rect[0] {
                let (from, to) = (at(s, src_base, x, y, z), at(d, dst_base, x, y, z));
                dst[to..to + eb].copy_from_slice(&src[from..from + eb]);
            }
        }
    }
}

#[test]
fn sdma_sub_window_copy_moves_exactly_the_box() {
    const SIZE: u64 = 64 << 10;
    // SDMA 4 (gfx900) with 4- and 1-byte elements, SDMA 5 (gfx1030) with 16-byte ones.
    for (preset, es) in [
        (Preset::Gfx900, 2u8),
        (Preset::Gfx900, 0),
        (Preset::Gfx1030, 4),
    ] {
        let model = stepped(preset);
        let c = Client::new(&model);
        let (src, dst, out) = (c.gtt(SIZE), c.gtt(SIZE), c.gtt(4096));
        let pattern: Vec<u8> = (0..SIZE as u32).map(|i| (i * 13 + i / 251) as u8).collect();
        src.write_bytes(0, &pattern);
        let mut expect = vec![0xEEu8; SIZE as usize];
        dst.write_bytes(0, &expect);
        // Different pitches, origins on every axis, a box of 13 × 7 × 3 elements.
        let s = SubWindSurface {
            addr: src.va + 0x40,
            x: 3,
            y: 2,
            z: 1,
            pitch: 40,
            slice_pitch: 40 * 12,
        };
        let d = SubWindSurface {
            addr: dst.va + 0x8,
            x: 5,
            y: 1,
            z: 0,
            pitch: 24,
            slice_pitch: 24 * 10 + 4,
        };
        let rect = [13, 7, 3];
        let p = SdmaCopyLinearSubWind::new(es, s, d, rect).unwrap();
        let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
        let mut ring = RingWriter::sdma(&q);
        ring.push(&q, &p);
        ring.push(&q, &SdmaFence::new(out.va, 0x5EB).unwrap());
        c.submit(&q, ring.wptr());
        model.run_until_idle();
        assert_eq!(c.p.queue_error(qid), None, "{preset} es={es}");
        assert_eq!(out.read_u32(0), 0x5EB, "the fence behind the copy");
        sub_wind_reference(
            u32::from(es),
            &pattern,
            s,
            &mut expect,
            d,
            rect,
            (src.va, dst.va),
        );
        let mut got = vec![0u8; SIZE as usize];
        dst.read_bytes(0, &mut got);
        let moved = expect.iter().filter(|&&b| b != 0xEE).count();
        assert!(moved > 0 && moved <= (13 * 7 * 3) << es);
        let bad: Vec<_> = (0..got.len())
            .filter(|&i| got[i] != expect[i])
            .take(8)
            .collect();
        assert!(bad.is_empty(), "{preset} es={es}: bytes differ at {bad:x?}");
    }
}

#[test]
fn a_large_sub_window_copy_spans_passes_and_a_fault_stops_the_queue() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let (src, dst, out) = (c.gtt(64 << 10), c.gtt(64 << 10), c.gtt(4096));
    let pattern: Vec<u8> = (0..(64u32 << 10)).map(|i| (i ^ (i >> 8)) as u8).collect();
    src.write_bytes(0, &pattern);
    // 2 × 8192 rows of one byte: more rows than one pass copies.
    let surf = |addr| SubWindSurface {
        addr,
        pitch: 2,
        slice_pitch: 2 * 8192,
        ..Default::default()
    };
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    let p = SdmaCopyLinearSubWind::new(0, surf(src.va), surf(dst.va), [1, 8192, 2]).unwrap();
    ring.push(&q, &p);
    ring.push(&q, &SdmaFence::new(out.va, 1).unwrap());
    c.submit(&q, ring.wptr());
    let first = model.step();
    assert_eq!(first.yielded, 1, "the copy gives the engine back");
    assert_eq!(out.read_u32(0), 0);
    model.run_until_idle();
    assert_eq!(out.read_u32(0), 1);
    let mut got = vec![0u8; 64 << 10];
    dst.read_bytes(0, &mut got);
    for (i, &b) in got.iter().enumerate() {
        let want = if i % 2 == 0 && i < 2 * 8192 * 2 {
            pattern[i]
        } else {
            0
        };
        assert_eq!(b, want, "byte {i:#x}");
    }

    // A destination nothing is mapped at: a write fault at the box's first element stops
    // the queue; the fence behind it does not run.
    let bad = SubWindSurface {
        addr: 0xdead_0000,
        x: 4,
        y: 1,
        pitch: 64,
        slice_pitch: 64 * 64,
        ..Default::default()
    };
    let p = SdmaCopyLinearSubWind::new(2, surf(src.va), bad, [8, 8, 1]).unwrap();
    ring.push(&q, &p);
    ring.push(&q, &SdmaFence::new(out.va, 2).unwrap());
    c.submit(&q, ring.wptr());
    let a = model.run_until_idle();
    assert_eq!(a.interrupts, 1, "the fault");
    match c.p.queue_error(qid) {
        Some(QueueError::VmFault(f)) => {
            assert_eq!((f.va, f.write), (0xdead_0000 + ((4 + 64) << 2), true))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(out.read_u32(0), 1);
}

#[test]
fn a_bad_address_raises_a_memory_exception_and_the_host_keeps_running() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let node = c.node();
    let mem_ev = create_event(&c, KFD_IOC_EVENT_MEMORY, false, 0).unwrap();
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(&q, &WriteData::memory(0xdead_b008, &[1]).unwrap());
    c.submit(&q, ring.wptr());
    let (r, result, data) = wait_events_data(&c, &[mem_ev.event_id], true, HANG_MS);
    assert_eq!((r, result), (Ok(0), COMPLETE));
    let m = data[0].data.memory_exception_data();
    assert_eq!(
        (m.va, m.gpu_id),
        (0xdead_b000, c.gpu()),
        "the faulting page"
    );
    assert_eq!((m.failure.NotPresent, m.failure.ReadOnly), (1, 0));
    match c.p.queue_error(qid) {
        Some(QueueError::VmFault(f)) => assert!(f.write && f.va == 0xdead_b008),
        other => panic!("{other:?}"),
    }
    // amdkfd evicts the process's queues on a VM fault.
    assert_eq!(node.counters().active_queue_count, 0);
    assert!(node.gpu.hws.mapped_queues().is_empty());

    // Another process is unaffected.
    let other = Client::new(&model);
    let out = other.gtt(4096);
    let (_, q2) = other.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring2 = RingWriter::pm4(&q2);
    ring2.push(&q2, &WriteData::memory(out.va, &[42]).unwrap());
    other.submit(&q2, ring2.wptr());
    wait_until("the other process's WRITE_DATA", || out.read_u32(0) == 42);

    // Restoring the queues retries the faulting packet: it faults again, and the process is
    // evicted again.
    let posted = node.gpu.ih.posted();
    c.p.restore_queues().unwrap();
    wait_until("a second fault", || node.gpu.ih.posted() > posted);
    let mapped = || {
        node.gpu
            .hws
            .mapped_queues()
            .iter()
            .any(|m| u32::from(m.pasid) == c.pasid())
    };
    wait_until("the process evicted again", || !mapped());
}

#[test]
fn a_write_to_a_read_only_buffer_is_a_read_only_fault() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let mem_ev = create_event(&c, KFD_IOC_EVENT_MEMORY, false, 0).unwrap();
    let ro = c
        .alloc_on(c.gpu(), 4096, KFD_IOC_ALLOC_MEM_FLAGS_GTT)
        .unwrap();
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    ring.push(&q, &SdmaFence::new(ro.va + 0x40, 1).unwrap());
    c.submit(&q, ring.wptr());
    let a = model.run_until_idle();
    assert_eq!(a.interrupts, 1, "the fault");
    let (r, result, data) = wait_events_data(&c, &[mem_ev.event_id], true, 0);
    assert_eq!((r, result), (Ok(0), COMPLETE));
    let m = data[0].data.memory_exception_data();
    assert_eq!(
        (m.va, m.failure.NotPresent, m.failure.ReadOnly),
        (ro.va, 0, 1)
    );
    assert!(matches!(c.p.queue_error(qid), Some(QueueError::VmFault(f)) if !f.not_present));
    assert_eq!(ro.read_u32(0x40), 0);
}

/// An `amd_signal_t` in `buf` at `off`: kind USER, the value, and optionally an event
/// mailbox (the event slot) with the event id.
fn amd_signal(buf: &Buf, off: u64, value: i64, mailbox: Option<(u64, u32)>) -> u64 {
    buf.write_u64(off, 1);
    buf.write_u64(off + 8, value as u64);
    let (mb, id) = mailbox.unwrap_or((0, 0));
    buf.write_u64(off + 16, mb);
    buf.write_u32(off + 24, id);
    buf.va + off
}

/// An AQL packet (16 dwords) with `header`, body dwords 1..14 and a completion signal.
fn aql_packet(header: u16, dw0_hi: u16, body: &[(usize, u64)], completion: u64) -> [u32; 16] {
    let mut p = [0u32; 16];
    p[0] = u32::from(header) | u32::from(dw0_hi) << 16;
    for &(qw, v) in body {
        p[qw * 2] = v as u32;
        p[qw * 2 + 1] = (v >> 32) as u32;
    }
    p[14] = completion as u32;
    p[15] = (completion >> 32) as u32;
    p
}

const BARRIER_AND: u16 = 3 | 1 << 8 | 2 << 9 | 2 << 11;
const BARRIER_OR: u16 = 5 | 1 << 8 | 2 << 9 | 2 << 11;
const VENDOR: u16 = 2 << 9 | 2 << 11;

fn put_aql(q: &QueueBufs, index: u64, p: &[u32; 16]) {
    let slot = index % (q.ring.size / 64);
    q.ring.write_bytes(slot * 64 + 4, zerocopy_bytes(&p[1..]));
    // The header goes last, as the HSA producer protocol requires.
    q.ring.write_u32(slot * 64, p[0]);
}

#[test]
fn aql_barrier_and_across_queues_then_or_and_barrier_value() {
    let model = stepped(Preset::Gfx90a);
    let c = Client::new(&model);
    let page = c.event_page();
    let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
    let sigs = c.gtt(4096);
    let dep = amd_signal(&sigs, 0, 1, None);
    let done = amd_signal(
        &sigs,
        64,
        1,
        Some((page.va + 8 * u64::from(ev.event_id), ev.event_id)),
    );
    let (a_id, a) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let (_, b) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    // Queue A waits for `dep`, then completes `done` (which has an event mailbox).
    put_aql(&a, 0, &aql_packet(BARRIER_AND, 0, &[(1, dep)], done));
    c.submit(&a, 1);
    let act = model.run_until_idle();
    assert_eq!(act.parked, 1);
    assert_eq!(
        (sigs.read_u64(72), a.ptrs.read_u64(0x80)),
        (1, 0),
        "A waits"
    );
    // Queue B's barrier has no dependencies; its completion signal is A's dependency.
    put_aql(&b, 0, &aql_packet(BARRIER_AND, 0, &[], dep));
    c.submit(&b, 1);
    let act = model.run_until_idle();
    assert_eq!((act.parked, act.packets), (0, 2));
    assert_eq!(
        (sigs.read_u64(8), sigs.read_u64(72)),
        (0, 0),
        "both signals decremented"
    );
    assert_eq!(a.ptrs.read_u64(0x80), 1, "read_dispatch_id, in packets");
    assert_eq!(
        a.ring.read_u32(0) & 0xFF,
        1,
        "the consumed slot is INVALID again"
    );
    assert_eq!(
        wait_events(&c, &[ev.event_id], true, 0),
        (Ok(0), COMPLETE),
        "mailbox interrupt"
    );

    // Barrier-OR: one of its dependencies is done already.
    let pending = amd_signal(&sigs, 128, 1, None);
    let or_done = amd_signal(&sigs, 192, 1, None);
    put_aql(
        &a,
        1,
        &aql_packet(BARRIER_OR, 0, &[(1, pending), (2, dep)], or_done),
    );
    // AMD BARRIER_VALUE: wait until (value & 0xF0) == 0x50 (condition EQ = 0).
    let watched = amd_signal(&sigs, 256, 0x0F, None);
    let bv_done = amd_signal(&sigs, 320, 1, None);
    put_aql(
        &a,
        2,
        &aql_packet(
            VENDOR,
            2,
            &[(1, watched), (2, 0x50), (3, 0xF0), (4, 0)],
            bv_done,
        ),
    );
    c.submit(&a, 3);
    let act = model.run_until_idle();
    assert_eq!(
        (act.parked, sigs.read_u64(200), sigs.read_u64(328)),
        (1, 0, 1)
    );
    sigs.write_u64(264, 0x5F);
    model.run_until_idle();
    assert_eq!(sigs.read_u64(328), 0);
    assert_eq!(a.ptrs.read_u64(0x80), 3);
    assert_eq!(c.p.queue_state(a_id).unwrap().unit, "packets");
}

/// ROCclr (HIP 5.7) writes a BARRIER_VALUE with a null signal, value 0, mask 0 and EQ when
/// it has nothing to wait for; `hsa_ext_amd.h` calls a null signal a satisfied dependency.
#[test]
fn a_barrier_value_packet_with_a_null_signal_completes_at_once() {
    for preset in [Preset::Gfx900, Preset::Gfx90a] {
        let model = stepped(preset);
        let c = Client::new(&model);
        let sigs = c.gtt(4096);
        let done = amd_signal(&sigs, 0, 2, None);
        let (id, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
        // Also with a mask and a condition that a signal value of 0 would not meet.
        put_aql(
            &q,
            0,
            &aql_packet(VENDOR, 2, &[(2, 0), (3, 0), (4, 0)], done),
        );
        put_aql(
            &q,
            1,
            &aql_packet(VENDOR, 2, &[(2, 7), (3, u64::MAX), (4, 0)], done),
        );
        c.submit(&q, 2);
        let act = model.run_until_idle();
        assert_eq!((act.parked, act.packets), (0, 2), "{preset:?}");
        assert_eq!(sigs.read_u64(8), 0, "{preset:?}: both packets completed");
        assert_eq!(q.ptrs.read_u64(0x80), 2, "{preset:?}: read_dispatch_id");
        assert_eq!(c.p.queue_error(id), None, "{preset:?}: no VM fault at 0x8");
    }
}

#[test]
fn an_aql_pm4_ib_vendor_packet_runs_pm4() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let out = c.gtt(4096);
    let sigs = c.gtt(4096);
    let done = amd_signal(&sigs, 0, 1, None);
    let ibuf = c.gtt(4096);
    let body = encode(&WriteData::memory(out.va, &[0x1234]).unwrap());
    ibuf.write_bytes(0, zerocopy_bytes(&body));
    let cmd = encode(&ib(ibuf.va, body.len(), false));
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let mut p = aql_packet(VENDOR, 1, &[], done);
    p[1..5].copy_from_slice(&cmd);
    p[5] = 0xA; // dw_cnt_remain
    put_aql(&q, 0, &p);
    c.submit(&q, 1);
    model.run_until_idle();
    assert_eq!(
        (out.read_u32(0), sigs.read_u64(8), q.ptrs.read_u64(0x80)),
        (0x1234, 0, 1)
    );
}

#[test]
fn a_dispatch_stops_the_queue_with_a_clear_error() {
    // gfx1030: the model runs gfx9 kernels (tests/dispatch.rs), not RDNA ones.
    let model = model(Preset::Gfx1030, 1);
    let c = Client::new(&model);
    let qev = create_event(&c, KFD_IOC_EVENT_QUEUE_EVENT, true, 0).unwrap();
    let sigs = c.gtt(4096);
    let done = amd_signal(&sigs, 0, 1, None);
    let (aql_id, aql) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    // hsa_kernel_dispatch_packet_t: setup 1 dimension, 64x1x1 workgroup, 1024x1x1 grid.
    let mut p = aql_packet(2 | 2 << 9 | 2 << 11, 1, &[(4, 0x7000_0000)], done);
    p[1] = 64 | 1 << 16;
    p[2] = 1;
    p[3] = 1024;
    p[4] = 1;
    p[5] = 1;
    put_aql(&aql, 0, &p);
    c.submit(&aql, 1);
    assert_eq!(
        wait_events(&c, &[qev.event_id], true, HANG_MS),
        (Ok(0), COMPLETE)
    );
    let err = c.p.queue_error(aql_id).expect("an error");
    let text = err.to_string();
    assert!(
        text.contains("shader execution") && text.contains("not modelled"),
        "{text}"
    );
    assert!(text.contains("KERNEL_DISPATCH"), "{text}");
    assert!(text.contains("ISA not modelled for this GPU"), "{text}");
    assert_eq!(
        sigs.read_u64(8),
        1,
        "never a silent success: the signal is untouched"
    );
    assert_eq!(aql.ptrs.read_u64(0x80), 0);

    // DISPATCH_DIRECT on a PM4 queue is refused the same way.
    let (pm4_id, pm4q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&pm4q);
    ring.push(
        &pm4q,
        &DispatchDirect::new(
            [4, 1, 1],
            DispatchInitiator::new().with_compute_shader_en(true),
        ),
    );
    c.submit(&pm4q, ring.wptr());
    assert_eq!(
        wait_events(&c, &[qev.event_id], true, HANG_MS),
        (Ok(0), COMPLETE)
    );
    let text = c.p.queue_error(pm4_id).unwrap().to_string();
    assert!(text.contains("DISPATCH_DIRECT 4x1x1"), "{text}");
}

#[test]
fn malformed_packets_and_runaway_write_pointers_stop_the_queue() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let qev = create_event(&c, KFD_IOC_EVENT_QUEUE_EVENT, false, 0).unwrap();
    let (id1, q1) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    // A type-0 header, then a scheduler packet the user queue may not run.
    q1.ring.write_u32(0, 0x0000_1234);
    c.submit(&q1, 1);
    let a = model.run_until_idle();
    assert_eq!(a.halted, 1);
    assert!(matches!(
        c.p.queue_error(id1),
        Some(QueueError::BadPacket { .. })
    ));
    assert_eq!(wait_events(&c, &[qev.event_id], true, 0), (Ok(0), COMPLETE));

    let (id2, q2) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    c.submit(&q2, 5000); // the ring holds 1024 dwords
    model.run_until_idle();
    let e = c.p.queue_error(id2).unwrap();
    assert!(
        matches!(
            e,
            QueueError::WritePointer {
                wptr: 5000,
                rptr: 0,
                ring: 1024,
                ..
            }
        ),
        "{e}"
    );

    let (id3, q3) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    c.submit(&q3, 6); // bytes, not dword aligned
    model.run_until_idle();
    assert!(matches!(
        c.p.queue_error(id3),
        Some(QueueError::WritePointer { .. })
    ));
}

#[test]
fn a_waiting_queue_is_preempted_and_restored_without_losing_a_packet() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let node = c.node();
    let mem = c.gtt(4096);
    let ibuf = c.gtt(4096);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(&q, &WriteData::memory(mem.va + 0x10, &[1]).unwrap());
    // The wait sits inside an IB, after a write in the same IB.
    let mut body = encode(&WriteData::memory(mem.va + 0x14, &[2]).unwrap());
    body.extend(encode(&wait_mem(mem.va, CompareFunction::Equal, 1)));
    body.extend(encode(&WriteData::memory(mem.va + 0x18, &[3]).unwrap()));
    ibuf.write_bytes(0, zerocopy_bytes(&body));
    ring.push(&q, &ib(ibuf.va, body.len(), false));
    ring.push(&q, &WriteData::memory(mem.va + 0x1c, &[4]).unwrap());
    c.submit(&q, ring.wptr());
    assert_eq!(model.run_until_idle().parked, 1);
    assert_eq!((mem.read_u32(0x14), mem.read_u32(0x18)), (2, 0));
    // Eviction unmaps the queue: the HWS saves its pointers in the MQD.
    c.p.evict_queues().unwrap();
    assert!(node.gpu.hws.mapped_queues().is_empty());
    let mqd_addr = node.dqm().queue(c.pasid(), qid).unwrap().mqd_mem.gpu_addr;
    let mut bytes = [0u8; 2048];
    node.gpu.gart.read(mqd_addr, &mut bytes).unwrap();
    let mqd = mqd::ComputeMqd::decode(node.gpu.generation, &bytes).unwrap();
    use mqd::ComputeDescriptor;
    assert_eq!(
        mqd.hqd_rptr(),
        9,
        "saved rptr in dwords: past WRITE_DATA (5) and the IB packet (4)"
    );
    assert!(!mqd.is_active());
    let st = c.p.queue_state(qid).unwrap();
    assert!(!st.mapped);
    // More work arrives while the queue is off the hardware; the wait is released too.
    ring.push(&q, &WriteData::memory(mem.va + 0x20, &[5]).unwrap());
    c.submit(&q, ring.wptr());
    mem.write_u32(0, 1);
    assert_eq!(
        model.run_until_idle().packets,
        0,
        "nothing runs while evicted"
    );
    c.p.restore_queues().unwrap();
    assert_eq!(node.gpu.hws.mapped_queues().len(), 1);
    model.run_until_idle();
    let got: Vec<u32> = (0..5).map(|i| mem.read_u32(0x10 + 4 * i)).collect();
    assert_eq!(
        got,
        [1, 2, 3, 4, 5],
        "every packet ran exactly where it stopped"
    );
    assert_eq!(u64::from(reported_rptr(&q)), ring.wptr());
    assert_eq!(c.p.queue_state(qid).unwrap().packets, 7);
}

#[test]
fn an_end_of_pipe_with_context_id_zero_is_dropped_on_gc_9_4() {
    // gfx900 (old MEC firmware): a wrong context id still finds the written slot by scanning.
    // gfx90a: the firmware always sends context ids, so the driver drops ctxid 0.
    for (preset, fires) in [(Preset::Gfx900, true), (Preset::Gfx90a, false)] {
        let model = stepped(preset);
        let c = Client::new(&model);
        let gen = gen_of(&c);
        let page = c.event_page();
        let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
        let mut ring = RingWriter::pm4(&q);
        let slot = page.va + 8 * u64::from(ev.event_id);
        ring.write(
            &q,
            &release_mem(
                gen,
                slot,
                1,
                0,
                ReleaseIntSel::SendInterruptAfterWriteConfirm,
                ReleaseDataSel::Data32,
            ),
        );
        c.submit(&q, ring.wptr());
        assert_eq!(model.run_until_idle().interrupts, 1);
        let expected = if fires {
            KFD_IOC_WAIT_RESULT_COMPLETE
        } else {
            KFD_IOC_WAIT_RESULT_TIMEOUT
        };
        assert_eq!(
            wait_events(&c, &[ev.event_id], true, 0),
            (Ok(0), expected),
            "{preset}"
        );
    }
}

#[test]
fn a_recreated_queue_on_a_reused_mqd_starts_afresh() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let node = c.node();
    let out = c.gtt(4096);
    let (id1, q1) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mqd1 = node.dqm().queue(c.pasid(), id1).unwrap().mqd_mem.gpu_addr;
    let mut ring = RingWriter::pm4(&q1);
    for i in 0..10 {
        ring.push(&q1, &WriteData::memory(out.va, &[i]).unwrap());
    }
    c.submit(&q1, ring.wptr());
    model.run_until_idle();
    c.destroy_queue(id1).unwrap();
    let (id2, q2) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    assert_eq!(
        node.dqm().queue(c.pasid(), id2).unwrap().mqd_mem.gpu_addr,
        mqd1,
        "same GART chunk"
    );
    let mut ring2 = RingWriter::pm4(&q2);
    ring2.push(&q2, &WriteData::memory(out.va + 4, &[77]).unwrap());
    c.submit(&q2, ring2.wptr());
    model.run_until_idle();
    assert_eq!(out.read_u32(4), 77);
    let st = c.p.queue_state(id2).unwrap();
    assert_eq!((st.rptr, st.packets, st.error), (5, 1, None));
}

#[test]
fn an_oversubscribed_runlist_runs_every_process_in_turn() {
    // gfx900 gives KFD 8 VMIDs: 10 processes cannot all be mapped at once.
    let model = stepped(Preset::Gfx900);
    let clients: Vec<Client> = (0..10).map(|_| Client::new(&model)).collect();
    let mut outs = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let out = c.gtt(4096);
        let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
        let mut ring = RingWriter::pm4(&q);
        ring.push(&q, &WriteData::memory(out.va, &[100 + i as u32]).unwrap());
        c.submit(&q, ring.wptr());
        outs.push(out);
    }
    let node = clients[0].node();
    assert!(node.gpu.hws.oversubscribed());
    model.run_until_idle();
    let got: Vec<u32> = outs.iter().map(|o| o.read_u32(0)).collect();
    assert_eq!(got, (100..110).collect::<Vec<_>>());
}

#[test]
fn the_engine_thread_notices_a_doorbell_without_being_told() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let out = c.gtt(4096);
    let mut ring = RingWriter::pm4(&q);
    ring.push(&q, &WriteData::memory(out.va, &[9]).unwrap());
    c.submit(&q, ring.wptr());
    wait_until("the WRITE_DATA, noticed without doorbell_rung", || {
        out.read_u32(0) == 9
    });
    assert_eq!(c.p.queue_state(qid).unwrap().error, None);
}

#[test]
fn dma_data_event_write_and_acquire_mem() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let buf = c.gtt(16384);
    let src: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    buf.write_bytes(0, &src);
    buf.write_u32(0x3000, 0xFEED_F00D);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    let dma = |src_sel, src: u64, dst: u64, cmd: DmaDataCommand| {
        DmaData::new(
            GfxGen::Gfx9,
            DmaDataControl::new()
                .with_src_sel(src_sel)
                .with_dst_sel(DmaDstSel::DstAddrTcL2)
                .with_cp_sync(true),
            src,
            dst,
            cmd,
        )
        .unwrap()
    };
    ring.push(
        &q,
        &AcquireMemGfx9::new(CoherCntl::new(), AcquireRange::full(10)),
    );
    // Copy 1000 bytes, fill 64 bytes with immediate data, replicate one dword (saic).
    ring.push(
        &q,
        &dma(
            DmaSrcSel::SrcAddrTcL2,
            buf.va,
            buf.va + 0x1000,
            DmaDataCommand::new().with_byte_count(1000),
        ),
    );
    ring.push(
        &q,
        &dma(
            DmaSrcSel::Data,
            0xABCD_0123,
            buf.va + 0x2000,
            DmaDataCommand::new().with_byte_count(64),
        ),
    );
    ring.push(
        &q,
        &dma(
            DmaSrcSel::SrcAddr,
            buf.va + 0x3000,
            buf.va + 0x3100,
            DmaDataCommand::new().with_byte_count(32).with_saic(true),
        ),
    );
    ring.push(&q, &EventWrite::cs_partial_flush());
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    let mut got = vec![0u8; 1000];
    buf.read_bytes(0x1000, &mut got);
    assert_eq!(got, src);
    assert!((0..16).all(|i| buf.read_u32(0x2000 + 4 * i) == 0xABCD_0123));
    assert_eq!(buf.read_u32(0x2040), 0, "64 bytes, no more");
    assert!((0..8).all(|i| buf.read_u32(0x3100 + 4 * i) == 0xFEED_F00D));
    let st = c.p.queue_state(qid).unwrap();
    assert_eq!((st.packets, st.error), (5, None));
}

#[test]
fn sdma_indirect_buffers_and_the_local_timestamp() {
    let model = stepped(Preset::Gfx1030);
    let c = Client::new(&model);
    let out = c.gtt(8192);
    let ibuf = c.gtt(4096);
    let mut body = encode(&SdmaWrite::new(out.va, &[11, 12]).unwrap());
    body.extend(encode(&SdmaFence::new(out.va + 8, 13).unwrap()));
    ibuf.write_bytes(0, zerocopy_bytes(&body));
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    ring.push(
        &q,
        &pm4::sdma::SdmaIndirect::new(ibuf.va, body.len() as u32, 0, 0).unwrap(),
    );
    ring.push(&q, &SdmaFence::new(out.va + 12, 14).unwrap());
    // SET the engine's local timestamp far ahead, then read it back and the global one.
    ring.push(&q, &SdmaTimestamp::new(TimestampOp::Set, 1 << 50).unwrap());
    ring.push(
        &q,
        &SdmaTimestamp::new(TimestampOp::Get, out.va + 0x100).unwrap(),
    );
    ring.push(
        &q,
        &SdmaTimestamp::new(TimestampOp::GetGlobal, out.va + 0x108).unwrap(),
    );
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    let got: Vec<u32> = (0..4).map(|i| out.read_u32(4 * i)).collect();
    assert_eq!(
        got,
        [11, 12, 13, 14],
        "the IB ran before the packet after it"
    );
    let (local, global) = (out.read_u64(0x100), out.read_u64(0x108));
    assert!(
        local >= 1 << 50 && local - (1 << 50) < 100_000_000,
        "{local:#x}"
    );
    assert!(global < 1 << 50, "the global clock is not affected by SET");
}

#[test]
fn sdma_atomic_add64_decrements_a_signal_and_other_atomic_ops_stop_the_queue() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let buf = c.gtt(4096);
    buf.write_u64(0x10, 3);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    // ATOMIC (op 10), atomic_op ADD64 (47) in [31:25]: address, source -1, compare, interval.
    let target = buf.va + 0x10;
    let add64 = |src: u64| {
        [
            10 | 47 << 25,
            target as u32,
            (target >> 32) as u32,
            src as u32,
            (src >> 32) as u32,
            0,
            0,
            0,
        ]
    };
    ring.write(&q, &add64(u64::MAX));
    ring.write(&q, &add64(u64::MAX));
    c.submit(&q, ring.wptr());
    let act = model.run_until_idle();
    assert_eq!(act.packets, 2);
    assert_eq!(buf.read_u64(0x10), 1, "3 - 1 - 1");
    assert_eq!(c.p.queue_error(qid), None);
    // ADD32 (op 15 is not modelled): a clear error, the value untouched.
    ring.write(
        &q,
        &[
            10 | 15 << 25,
            target as u32,
            (target >> 32) as u32,
            1,
            0,
            0,
            0,
            0,
        ],
    );
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    let text = c.p.queue_error(qid).expect("an error").to_string();
    assert!(text.contains("SDMA ATOMIC operation 15"), "{text}");
    assert_eq!(buf.read_u64(0x10), 1);
}
