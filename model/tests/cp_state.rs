//! What the CP keeps per queue for the dispatch work: the SH registers SET_SH_REG writes
//! (per queue, kept across preemption), and packets that run longer than one pass and yield
//! (a large DMA_DATA: the engine moves on and resumes it where it got).

mod common;

use common::*;
use kfd_model::hw::DMA_BYTES_PER_PASS;
use kfd_model::{Model, ModelConfig, Preset};
use kfd_sys::*;
use pm4::regs::ShReg;
use pm4::user::*;
use pm4::GfxGen;

fn stepped(preset: Preset) -> Model {
    model_with(ModelConfig::new(preset).with_engine_thread(false))
}

fn sh(c: &Client, qid: u32) -> Vec<(u32, u32)> {
    c.p.queue_state(qid)
        .expect("mapped once")
        .sh_registers
        .expect("a compute queue has SH registers")
        .iter()
        .map(|(r, v)| (r.0, v))
        .collect()
}

#[test]
fn set_sh_reg_lands_in_the_queues_sh_state_and_survives_preemption() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let node = c.node();
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let (other_id, _other) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_PGM_LO.0, &[0x0040_1000, 0x7f]).unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_PGM_RSRC1.0, &[0x00AC_0081, 0x0000_0090]).unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(
            ShReg::COMPUTE_USER_DATA_0.0,
            &[0xDEAD_0000, 0x7fff, 0x1111, 0x2222],
        )
        .unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_NUM_THREAD_X.0, &[64, 1, 1]).unwrap(),
    );
    c.submit(&q, ring.wptr());
    let a = model.run_until_idle();
    assert_eq!(a.packets, 4);
    let expected = vec![
        (0x2E07, 64),
        (0x2E08, 1),
        (0x2E09, 1),
        (0x2E0C, 0x0040_1000),
        (0x2E0D, 0x7f),
        (0x2E12, 0x00AC_0081),
        (0x2E13, 0x0000_0090),
        (0x2E40, 0xDEAD_0000),
        (0x2E41, 0x7fff),
        (0x2E42, 0x1111),
        (0x2E43, 0x2222),
    ];
    assert_eq!(sh(&c, qid), expected);
    assert_eq!(sh(&c, other_id), [], "SH state is per queue");

    // Preempted (the MQDs saved, the queues off the hardware) and mapped again.
    let preemptions = node.gpu.hws.stats().queue_preemptions;
    c.p.evict_queues().unwrap();
    assert!(node.gpu.hws.mapped_queues().is_empty());
    assert!(node.gpu.hws.stats().queue_preemptions >= preemptions + 2);
    assert_eq!(sh(&c, qid), expected, "kept while off the hardware");
    c.p.restore_queues().unwrap();
    assert_eq!(node.gpu.hws.mapped_queues().len(), 2);
    model.run_until_idle();
    assert_eq!(sh(&c, qid), expected, "restored with the queue");

    // Later packets write over single registers; the rest stays.
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_USER_DATA_1.0, &[0x8000]).unwrap(),
    );
    c.submit(&q, ring.wptr());
    assert_eq!(model.run_until_idle().packets, 1);
    let mut after = expected.clone();
    after[8].1 = 0x8000;
    assert_eq!(sh(&c, qid), after);
}

#[test]
fn a_large_dma_data_yields_between_passes_and_resumes_where_it_got() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    const BYTES: u32 = 1 << 20 | 12; // 4 full passes and a short fifth
    let src = c.gtt(u64::from(BYTES));
    let dst = c.gtt(u64::from(BYTES));
    let pattern: Vec<u8> = (0..BYTES).map(|i| (i % 253) as u8).collect();
    src.write_bytes(0, &pattern);
    let out = c.gtt(4096);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(
        &q,
        &DmaData::new(
            GfxGen::Gfx9,
            DmaDataControl::new()
                .with_src_sel(DmaSrcSel::SrcAddrTcL2)
                .with_dst_sel(DmaDstSel::DstAddrTcL2),
            src.va,
            dst.va,
            DmaDataCommand::new().with_byte_count(BYTES),
        )
        .unwrap(),
    );
    ring.push(&q, &WriteData::memory(out.va, &[7]).unwrap());
    c.submit(&q, ring.wptr());

    let passes = u64::from(BYTES).div_ceil(DMA_BYTES_PER_PASS) as usize;
    assert_eq!(passes, 5);
    for pass in 1..passes {
        let a = model.step();
        assert_eq!(
            (a.packets, a.yielded, a.parked, a.busy),
            (0, 1, 0, 0),
            "pass {pass}: still running"
        );
        assert!(a.progressed(), "a yield is progress: the loop comes back");
        let st = c.p.queue_state(qid).unwrap();
        assert_eq!(st.rptr, 0, "the read pointer stays on the running packet");
        assert!(!st.parked);
        assert_eq!(st.error, None);
        let copied = pass as u64 * DMA_BYTES_PER_PASS;
        let mut got = vec![0u8; 16];
        dst.read_bytes(copied - 8, &mut got);
        assert_eq!(got[..8], pattern[copied as usize - 8..copied as usize]);
        assert_eq!(got[8..], [0; 8], "pass {pass}: nothing past the chunk yet");
        assert_eq!(out.read_u32(0), 0, "the next packet waits");
    }
    let a = model.step();
    assert_eq!((a.packets, a.yielded), (2, 0));
    let mut got = vec![0u8; BYTES as usize];
    dst.read_bytes(0, &mut got);
    assert!(got == pattern, "the copy is complete and exact");
    assert_eq!(out.read_u32(0), 7);

    // run_until_idle keeps stepping a yielding queue until it is done.
    dst.write_bytes(0, &vec![0u8; BYTES as usize]);
    ring.push(
        &q,
        &DmaData::new(
            GfxGen::Gfx9,
            DmaDataControl::new()
                .with_src_sel(DmaSrcSel::SrcAddrTcL2)
                .with_dst_sel(DmaDstSel::DstAddrTcL2),
            src.va,
            dst.va,
            DmaDataCommand::new().with_byte_count(BYTES),
        )
        .unwrap(),
    );
    c.submit(&q, ring.wptr());
    let a = model.run_until_idle();
    assert_eq!(a.packets, 1);
    dst.read_bytes(0, &mut got);
    assert!(got == pattern);
    assert_eq!(c.p.queue_state(qid).unwrap().error, None);
}

#[test]
fn a_yielded_dma_survives_preemption() {
    let model = stepped(Preset::Gfx900);
    let c = Client::new(&model);
    let node = c.node();
    const BYTES: u32 = 3 * (256 << 10);
    let dst = c.gtt(u64::from(BYTES));
    let fill = 0xA5A5_5A5A;
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(
        &q,
        &DmaData::new(
            GfxGen::Gfx9,
            DmaDataControl::new()
                .with_src_sel(DmaSrcSel::Data)
                .with_dst_sel(DmaDstSel::DstAddrTcL2),
            u64::from(fill),
            dst.va,
            DmaDataCommand::new().with_byte_count(BYTES),
        )
        .unwrap(),
    );
    c.submit(&q, ring.wptr());
    assert_eq!(model.step().yielded, 1);
    c.p.evict_queues().unwrap();
    assert!(node.gpu.hws.mapped_queues().is_empty());
    c.p.restore_queues().unwrap();
    assert_eq!(
        model.step().yielded,
        1,
        "the second chunk after the restore"
    );
    let a = model.step();
    assert_eq!((a.packets, a.yielded), (1, 0));
    for off in (0..u64::from(BYTES)).step_by(4096) {
        assert_eq!(dst.read_u32(off), fill, "at {off:#x}");
    }
    assert_eq!(dst.read_u32(u64::from(BYTES) - 4), fill);
    let st = c.p.queue_state(qid).unwrap();
    assert_eq!((st.packets, st.error), (1, None));
}
