//! Runlists after sequences of creates and destroys across processes, decoded and compared
//! field by field (facts §3, §9.6, §10 items 5–7), and the firmware's HQD table after each step.

mod common;

use common::*;
use kfd_model::hw::{HqdSlot, MappedQueue};
use kfd_model::{ModelConfig, Preset};
use kfd_sys::*;
use mqd::ComputeDescriptor;
use pm4::hws::{MapQueueSel, MapQueueType, QueueEngine};
use pm4::Packet;

/// (pasid, num_queues) of every MAP_PROCESS and the doorbells of the MAP_QUEUES after it.
fn shape(node: &kfd_model::KfdNode) -> Vec<(u16, u16, Vec<u32>)> {
    let mut out: Vec<(u16, u16, Vec<u32>)> = Vec::new();
    for p in runlist(node) {
        match p {
            Packet::MapProcess(m) => {
                out.push((m.common.dw1.pasid(), m.common.dw13.num_queues(), vec![]))
            }
            Packet::MapProcessAldebaran(m) => {
                out.push((m.common.dw1.pasid(), m.common.dw13.num_queues(), vec![]))
            }
            Packet::MapQueues(q) => out
                .last_mut()
                .expect("a process first")
                .2
                .push(q.dw2.doorbell_offset()),
            Packet::RunList(_) => {}
            other => panic!("unexpected {} in a runlist", other.name()),
        }
    }
    out
}

fn doorbell_of(c: &Client, qid: u32) -> u32 {
    c.node()
        .dqm()
        .queue(c.pasid(), qid)
        .expect("queue")
        .doorbell_off
}

#[test]
fn one_aql_queue_is_mapped_field_by_field() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let node = c.node();
    assert_eq!(
        node.gpu.hws.hqd_slots().len(),
        24,
        "SET_RESOURCES gave 24 HQDs (mask 0xFCFCFCFC)"
    );
    assert!(runlist(&node).is_empty(), "nothing to run yet");

    let (qid, bufs) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let rl = runlist(&node);
    assert_eq!(rl.len(), 2, "MAP_PROCESS + MAP_QUEUES, no chain");
    let Packet::MapProcess(mp) = rl[0] else {
        panic!("MAP_PROCESS first, got {}", rl[0].name())
    };
    let m = mp.common;
    assert_eq!(
        mp.common.header.into_bits(),
        0xC00E_A100,
        "16-dword MAP_PROCESS header"
    );
    assert_eq!(m.dw1.pasid() as u32, c.pasid());
    assert_eq!(m.dw1.process_quantum(), 10);
    assert_eq!(m.dw13.num_queues(), 1);
    assert!(m.dw13.sdma_enable());
    assert_eq!(m.sh_mem_bases, 0x0001_0002);
    assert_eq!(
        m.sh_mem_config, 0x1018,
        "unaligned mode + RETRY_DISABLE on gfx9 with XNACK off"
    );
    assert_ne!(m.page_table_base(), 0);
    // CWSR trap handler at 0x2000: tba >> 8 and TRAP_EN on the generic gfx9 form.
    assert_eq!(m.sq_shader_tba_lo, 0x20);
    assert_eq!(m.sq_shader_tba_hi, 1 << 31);
    let Packet::MapQueues(mq) = rl[1] else {
        panic!("MAP_QUEUES second")
    };
    assert_eq!(mq.dw1.queue_sel(), MapQueueSel::HwsDetermined);
    assert_eq!(mq.dw1.queue_type(), MapQueueType::NormalCompute);
    assert_eq!(mq.engine(), Some(QueueEngine::Compute));
    assert_eq!(mq.dw1.num_queues(), 1);
    assert_eq!(mq.wptr_addr(), bufs.wptr_va());
    assert_eq!(mq.dw2.doorbell_offset(), doorbell_of(&c, qid));

    // The firmware mapped it into the first HQD (MEC0 pipe 0 queue 2) with the first KFD VMID,
    // and marked the MQD active in GART.
    let hqds = node.gpu.hws.mapped_queues();
    assert_eq!(hqds.len(), 1);
    let MappedQueue {
        slot,
        pasid,
        vmid,
        queue,
        ..
    } = hqds[0];
    assert_eq!(
        slot,
        HqdSlot::Compute {
            mec: 0,
            pipe: 0,
            queue: 2
        }
    );
    assert_eq!((pasid as u32, vmid), (c.pasid(), 8));
    assert_eq!(queue.mqd_addr, mq.mqd_addr());
    let mut bytes = [0u8; 2048];
    node.gpu.gart.read(mq.mqd_addr(), &mut bytes).unwrap();
    let mqd = mqd::ComputeMqd::decode(mqd::Generation::Gfx9, &bytes).unwrap();
    assert!(mqd.is_active() && mqd.is_aql());
    assert_eq!(mqd.vmid(), 8);
    assert_eq!(mqd.ring_base_address(), bufs.ring.va);
    assert_eq!(mqd.doorbell_offset(), doorbell_of(&c, qid));

    let cnt = node.counters();
    assert_eq!(
        (
            cnt.processes_count,
            cnt.active_queue_count,
            cnt.total_queue_count
        ),
        (1, 1, 1)
    );
    assert!(cnt.active_runlist);
}

#[test]
fn processes_newest_first_queues_newest_first_inactive_counted_not_mapped() {
    let model = model(Preset::Gfx900, 1);
    let a = Client::new(&model);
    let b = Client::new(&model);
    let node = a.node();
    let (a0, _) = a.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let (a1, _) = a.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    // An inactive queue: percentage 0.
    let (a2, _) = a
        .create_queue_on(a.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE, 0)
        .unwrap();
    let (b0, _) = b.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let (pa, pb) = (a.pasid() as u16, b.pasid() as u16);
    assert_eq!(
        shape(&node),
        vec![
            (pb, 1, vec![doorbell_of(&b, b0)]),
            (pa, 3, vec![doorbell_of(&a, a1), doorbell_of(&a, a0)]),
        ],
        "B registered last so it comes first; A's num_queues counts its inactive queue"
    );
    assert_eq!(node.gpu.hws.mapped_queues().len(), 3);
    let c = node.counters();
    assert_eq!(
        (
            c.processes_count,
            c.active_queue_count,
            c.active_cp_queue_count,
            c.total_queue_count
        ),
        (2, 3, 2, 4)
    );

    // Destroying B's only queue: as in destroy_queue_cpsch, the new runlist is sent while the
    // queue is still on B's list (num_queues 1, nothing to map) and B is unregistered after.
    b.destroy_queue(b0).unwrap();
    assert_eq!(
        shape(&node),
        vec![
            (pb, 1, vec![]),
            (pa, 3, vec![doorbell_of(&a, a1), doorbell_of(&a, a0)])
        ]
    );
    assert_eq!(node.counters().processes_count, 1, "B is unregistered now");
    // The next change drops B; a1 is still counted while its runlist goes out.
    a.destroy_queue(a1).unwrap();
    assert_eq!(shape(&node), vec![(pa, 3, vec![doorbell_of(&a, a0)])]);
    // Destroying an inactive queue changes nothing the hardware runs: no new runlist.
    let runlists = node.gpu.hws.stats().runlists;
    a.destroy_queue(a2).unwrap();
    assert_eq!(node.gpu.hws.stats().runlists, runlists);
    assert_eq!(shape(&node), vec![(pa, 3, vec![doorbell_of(&a, a0)])]);
    // The last active queue: unmapped, and with nothing active no runlist is sent.
    a.destroy_queue(a0).unwrap();
    assert!(runlist(&node).is_empty());
    assert!(node.gpu.hws.mapped_queues().is_empty());
    let c = node.counters();
    assert_eq!(
        (c.processes_count, c.active_queue_count, c.total_queue_count),
        (0, 0, 0)
    );
    assert!(!c.active_runlist);
}

#[test]
fn more_compute_queues_than_hqds_chains_the_runlist() {
    // gfx1030 gives KFD only 8 HQDs.
    let model = model(Preset::Gfx1030, 1);
    let c = Client::new(&model);
    let node = c.node();
    assert_eq!(node.gpu.hws.hqd_slots().len(), 8);
    for _ in 0..8 {
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    }
    assert!(
        !matches!(runlist(&node).last(), Some(Packet::RunList(_))),
        "8 queues fit"
    );
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let rl = runlist(&node);
    let (ib_addr, ib_dwords) = node.dqm().pm.runlist_ib().unwrap();
    let Some(Packet::RunList(chain)) = rl.last() else {
        panic!("a chain RUN_LIST closes the IB")
    };
    assert!(
        chain.control.chain()
            && chain.control.valid()
            && chain.control.chained_runlist_idle_disable()
    );
    assert_eq!(
        chain.ib_addr(),
        ib_addr,
        "the chain points back at the start of the same IB"
    );
    assert_eq!(
        chain.control.ib_size(),
        ib_dwords,
        "... and covers the whole allocation"
    );
    assert_eq!(ib_dwords as usize, 16 + 9 * 7 + 4);
    assert!(node.gpu.hws.oversubscribed());
    assert_eq!(
        node.gpu.hws.mapped_queues().len(),
        8,
        "the firmware fills the 8 HQDs"
    );
}

#[test]
fn more_processes_than_vmids_time_slice() {
    // No engine thread: its own time slices would race the one this test takes.
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let clients: Vec<Client> = (0..9).map(|_| Client::new(&model)).collect();
    for c in &clients {
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    }
    let node = clients[0].node();
    let rl = runlist(&node);
    assert!(
        matches!(rl.last(), Some(Packet::RunList(r)) if r.control.chain()),
        "9 processes > 8 VMIDs"
    );
    let mapped: Vec<u16> = node
        .gpu
        .hws
        .mapped_queues()
        .iter()
        .map(|m| m.pasid)
        .collect();
    assert_eq!(mapped.len(), 8, "one quantum holds 8 processes");
    let newest = clients[8].pasid() as u16;
    assert!(mapped.contains(&newest));
    // A time slice maps the one left out.
    let before: std::collections::BTreeSet<u16> = mapped.into_iter().collect();
    node.gpu.hws.tick(&node.gpu.gart);
    let after: std::collections::BTreeSet<u16> = node
        .gpu
        .hws
        .mapped_queues()
        .iter()
        .map(|m| m.pasid)
        .collect();
    assert_ne!(before, after);
    assert_eq!(node.gpu.hws.stats().rotations, 1);
    let vmids: std::collections::BTreeSet<u8> = node
        .gpu
        .hws
        .mapped_queues()
        .iter()
        .map(|m| m.vmid)
        .collect();
    assert_eq!(vmids, (8..16).collect(), "VMIDs 8-15 (mask 0xFF00)");
}

#[test]
fn aldebaran_uses_the_21_dword_map_process_without_trap_en() {
    let model = model(Preset::Gfx90a, 1);
    let c = Client::new(&model);
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let node = c.node();
    let rl = runlist(&node);
    let Packet::MapProcessAldebaran(m) = rl[0] else {
        panic!("aldebaran MAP_PROCESS, got {}", rl[0].name())
    };
    assert_eq!(m.common.header.count(), 19, "21 dwords");
    assert_eq!(
        m.common.sq_shader_tba_hi & (1 << 31),
        0,
        "no TRAP_EN in the aldebaran form"
    );
    // GC 9.4.2 gives KFD VMIDs 3-15 and allows per-process XNACK.
    let mapped = node.gpu.hws.mapped_queues();
    assert_eq!(mapped[0].vmid, 3);
    assert_eq!(m.common.sh_mem_config, 0x1018);
}

#[test]
fn sdma_engine_select_follows_the_ip_version() {
    // SDMA 4.0 (gfx900): legacy engine_sel 2 + engine.
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let engines: Vec<_> = runlist(&c.node())
        .into_iter()
        .filter_map(|p| {
            if let Packet::MapQueues(q) = p {
                q.engine()
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        engines,
        vec![QueueEngine::SdmaLegacy(1), QueueEngine::SdmaLegacy(0)],
        "id mod #engines"
    );
    let slots: Vec<HqdSlot> = c
        .node()
        .gpu
        .hws
        .mapped_queues()
        .iter()
        .map(|m| m.slot)
        .collect();
    assert_eq!(
        slots,
        vec![
            HqdSlot::Sdma {
                engine: 0,
                queue: 0
            },
            HqdSlot::Sdma {
                engine: 1,
                queue: 0
            }
        ]
    );

    // SDMA 5.2 (gfx1030): extended engine select.
    let navi = common::model(Preset::Gfx1030, 1);
    let c = Client::new(&navi);
    c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let rl = runlist(&c.node());
    let Packet::MapQueues(q) = rl[1] else {
        panic!()
    };
    assert_eq!(q.engine(), Some(QueueEngine::SdmaExtended(0)));
    assert_eq!(c.node().counters().active_cp_queue_count, 0);
}

#[test]
fn sdma_by_engine_id_and_xgmi_pick_their_engines() {
    let model = model(Preset::Gfx90a, 1);
    let c = Client::new(&model);
    let bufs = c.queue_buffers(c.gpu(), 4096, false);
    let mut a = c.queue_args(c.gpu(), KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID, &bufs);
    a.sdma_engine_id = 3; // xGMI engine 1 (2 PCIe engines first).
    c.p.call::<CreateQueue>(&mut a).unwrap();
    let node = c.node();
    let q = node.dqm().queue(c.pasid(), a.queue_id).cloned().unwrap();
    assert!(matches!(
        q.class,
        kfd_model::dqm::QueueClass::Sdma {
            engine: 3,
            xgmi: true,
            ..
        }
    ));
    let (x, _) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA_XGMI).unwrap();
    let q = node.dqm().queue(c.pasid(), x).cloned().unwrap();
    assert!(matches!(
        q.class,
        kfd_model::dqm::QueueClass::Sdma {
            engine: 2,
            xgmi: true,
            ..
        }
    ));
}

#[test]
fn doorbell_offsets_locate_the_queue_in_the_process_slice() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let (q0, b0) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let (q1, b1) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let (s0, s1) = (
        KfdMmapOffset::decode(b0.doorbell_offset),
        KfdMmapOffset::decode(b1.doorbell_offset),
    );
    assert_eq!((s0.kind, s0.gpu_id), (KfdMmapType::Doorbell, c.gpu()));
    assert_eq!(
        (s0.value, s1.value),
        (0, 8),
        "doorbells 0 and 1: 8-byte slots"
    );
    // The BAR dword index in MQD/MAP_QUEUES and the byte offset agree.
    let node = c.node();
    let dqm = node.dqm();
    let d0 = dqm.queue(c.pasid(), q0).unwrap().doorbell_off;
    let d1 = dqm.queue(c.pasid(), q1).unwrap().doorbell_off;
    assert_eq!(d1 - d0, 2);
    assert_eq!((u64::from(d0) * 4) % 8192, s0.value);
    drop(dqm);
    // Mapping the slice needs exactly 8 KiB.
    let page = b0.doorbell_offset & !8191;
    assert_errno(
        c.p.mmap(page, 4096),
        kfd_model::Errno::EINVAL,
        "doorbell mmap must be 8 KiB",
    );
    let m = c.p.mmap(page, 8192).unwrap();
    // A store through the mapping is what the engines see.
    m.memory
        .store_u64((m.offset + s1.value) as usize, 0x40)
        .unwrap();
    let (slice, id) = kfd_model::hw::DoorbellBar::slice_and_id(d1).unwrap();
    assert_eq!(node.gpu.doorbells.read(slice, id), 0x40);
}

#[test]
fn one_process_with_more_queues_than_hqds_time_slices_queue_by_queue() {
    // gfx1030 gives KFD 8 HQDs; one process makes 12 PM4 queues, each with a WRITE_DATA.
    let model = model_with(ModelConfig::new(Preset::Gfx1030).with_engine_thread(false));
    let c = Client::new(&model);
    let node = c.node();
    let out = c.gtt(4096);
    let queues: Vec<_> = (0..12u32)
        .map(|i| {
            let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
            let mut ring = RingWriter::pm4(&q);
            ring.push(
                &q,
                &pm4::user::WriteData::memory(out.va + 4 * u64::from(i), &[0x100 + i]).unwrap(),
            );
            c.submit(&q, ring.wptr());
            q
        })
        .collect();
    assert!(node.gpu.hws.oversubscribed());
    let doorbells = |m: Vec<MappedQueue>| -> std::collections::BTreeSet<u32> {
        m.iter().map(|m| m.queue.doorbell_offset).collect()
    };
    let first = doorbells(node.gpu.hws.mapped_queues());
    assert_eq!(first.len(), 8, "a quantum fills the 8 HQDs");
    // The next quantum starts with the 4 queues left out, then 4 of the first 8.
    node.gpu.hws.tick(&node.gpu.gart);
    let second = doorbells(node.gpu.hws.mapped_queues());
    assert_eq!(second.len(), 8);
    assert_eq!(
        second.difference(&first).count(),
        4,
        "every queue left out comes on"
    );
    assert_eq!(node.gpu.hws.quanta_per_round(), 12);
    model.run_until_idle();
    for i in 0..12u64 {
        assert_eq!(out.read_u32(4 * i), 0x100 + i as u32, "queue {i} ran");
    }
    drop(queues);
}
