//! Queues of every kind: created with buffers the driver accepts (6.12 validation, facts §9.9),
//! destroyed on drop, the per-process limit, bad arguments, update and CU mask.
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use kfd_sys::*;
use thunk::model_access::KfdModelExt;
use thunk::{Errno, QueueOptions, QueuePriority, SdmaEngine, ERROR_PAYLOAD_OFFSET};

#[test]
fn pm4_queue_has_all_its_buffers() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let sizes = gpu.queue_sizes().unwrap();
    let q = gpu
        .create_pm4_queue(&QueueOptions::new().ring_size(8192))
        .unwrap();
    assert_eq!(q.queue_type(), KFD_IOC_QUEUE_TYPE_COMPUTE);
    assert_eq!(q.ring_size(), 8192);
    assert_eq!(q.ring().size(), 8192, "one mapping of exactly ring_size");
    assert_eq!(q.pointers().size(), 4096, "rptr/wptr in their own page");
    // The page starts with an amd_queue_t: read_dispatch_id at 128, write_dispatch_id at 56.
    assert_eq!(q.read_pointer_address(), q.pointers().gpu_va() + 128);
    assert_eq!(q.write_pointer_address(), q.pointers().gpu_va() + 56);
    let eop = q.eop_buffer().expect("EOP");
    assert_eq!(eop.size(), u64::from(sizes.eop_buffer_size));
    let ctx = q.context_save_area().expect("CWSR area");
    assert_eq!(ctx.size(), sizes.context_save_area_size());
    // The context-save header (facts Appendix B): debug area after the CWSR area(s),
    // error payload in the pointer page.
    let h = ctx.read_vec(0, 40).unwrap();
    let h = kfd_context_save_area_header::read_from_bytes(&h).unwrap();
    assert_eq!(h.debug_offset, sizes.cwsr_size * sizes.num_xcc);
    assert_eq!(h.debug_size, sizes.debug_memory_size);
    assert_eq!(
        h.err_payload_addr,
        q.pointers().gpu_addr(ERROR_PAYLOAD_OFFSET)
    );
    assert_eq!(h.err_event_id, 0);
    assert_eq!(q.error_payload(), 0);
    // The doorbell: a doorbell-type offset of this GPU, inside the 8 KiB process page.
    let o = KfdMmapOffset::decode(q.doorbell_offset());
    assert_eq!(o.kind, KfdMmapType::Doorbell);
    assert_eq!(o.gpu_id, gpu.id() & 0xFFFF);
    let db = q.doorbell_address().unwrap();
    assert_eq!(db % 8, 0);
    // The page starts where the offset's low bits say, page aligned.
    assert_eq!((db - (q.doorbell_offset() & 8191)) % 4096, 0);
}

/// The packet processor finds the AQL queue's `amd_queue_t` 128 bytes before the read pointer:
/// it is the start of the pointer page, so the fields it reads there are the page's own. With
/// `queue_properties` asking for profiling, a barrier's completion signal gets its timestamps.
#[test]
fn the_aql_pointer_page_is_the_queues_amd_queue_t() {
    use pm4::aql::{amd_queue, amd_signal};
    use std::sync::atomic::Ordering;
    use thunk::{AllocOptions, MemoryKind};
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let mut q = gpu
        .create_aql_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    let page = q.pointers().gpu_va();
    assert_eq!(q.read_pointer_address() - amd_queue::READ_DISPATCH_ID, page);
    assert_eq!(
        q.write_pointer_address() - amd_queue::WRITE_DISPATCH_ID,
        page
    );
    assert_eq!(
        q.pointers()
            .load_u64(amd_queue::QUEUE_INACTIVE_SIGNAL)
            .unwrap(),
        0
    );
    q.pointers()
        .store_u32(
            amd_queue::QUEUE_PROPERTIES,
            amd_queue::PROPERTIES_ENABLE_PROFILING,
        )
        .unwrap();
    let signal = gpu
        .alloc_with(&AllocOptions::new(MemoryKind::Gtt, 4096).coherent())
        .unwrap();
    signal.store_u64(0, 1).unwrap();
    signal.store_u64(amd_signal::VALUE, 1).unwrap();
    q.push_packet(&thunk::packets::aql_barrier_and([0; 5], signal.gpu_va()))
        .unwrap();
    q.submit().unwrap();
    signal.wait_u64(amd_signal::VALUE, 0, T).unwrap();
    let start = signal
        .atomic_u64(amd_signal::START_TS)
        .unwrap()
        .load(Ordering::Acquire);
    let end = signal
        .atomic_u64(amd_signal::END_TS)
        .unwrap()
        .load(Ordering::Acquire);
    assert!(start != 0 && start <= end, "timestamps {start} .. {end}");
}

#[test]
fn every_queue_kind_is_created_and_destroyed() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let count = || kfd.model().map(|m| m.node(gpu.id()).unwrap().counters());
    let before = count();
    let pm4 = gpu.create_pm4_queue(&QueueOptions::new()).unwrap();
    let aql = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    let sdma = gpu.create_sdma_queue(&QueueOptions::new()).unwrap();
    assert_eq!(aql.queue_type(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
    assert_eq!(sdma.queue_type(), KFD_IOC_QUEUE_TYPE_SDMA);
    assert!(aql.context_save_area().is_some());
    assert!(sdma.context_save_area().is_none() && sdma.eop_buffer().is_none());
    assert_eq!(aql.size_packets(), (64 << 10) / 64);
    let ids = [pm4.id(), aql.id(), sdma.id()];
    assert_eq!(ids, [0, 1, 2], "queue ids: first free");
    // All queues of a GPU share one doorbell page: address minus the offset's low bits.
    fn page<K: thunk::QueueKind>(q: &thunk::Queue<K>) -> u64 {
        q.doorbell_address().unwrap() - (q.doorbell_offset() & 8191)
    }
    assert_eq!(page(&pm4), page(&sdma));
    assert_eq!(page(&pm4), page(&aql));
    if let Some(m) = kfd.model() {
        let n = m.node(gpu.id()).unwrap();
        assert_eq!(n.counters().active_queue_count, 3);
        drop(pm4);
        assert_eq!(n.counters().active_queue_count, 2);
        drop((aql, sdma));
        assert_eq!(Some(n.counters()), before);
        assert_eq!(kfd.model().unwrap().process_count(), 1);
    }
}

#[test]
fn sdma_engine_choice() {
    let Some(kfd) = model_kfd(Preset::Gfx90a, 1, "an xGMI SDMA part") else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let x = gpu
        .create_sdma_queue(&QueueOptions::new().sdma_engine(SdmaEngine::Xgmi))
        .unwrap();
    assert_eq!(x.queue_type(), KFD_IOC_QUEUE_TYPE_SDMA_XGMI);
    let e = gpu
        .create_sdma_queue(&QueueOptions::new().sdma_engine(SdmaEngine::Id(4)))
        .unwrap();
    assert_eq!(e.queue_type(), KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID);
    // gfx90a has 2 PCIe + 3 xGMI engines.
    assert_err(
        gpu.create_sdma_queue(&QueueOptions::new().sdma_engine(SdmaEngine::Id(5))),
        Errno::EINVAL,
        "SDMA engine 5 does not exist; gpu",
    );
}

#[test]
fn bad_arguments_are_refused_with_a_reason() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    assert_err(
        gpu.create_pm4_queue(&QueueOptions::new().ring_size(3000)),
        Errno::EINVAL,
        "CREATE_QUEUE: ring size 3000 is not a power of two",
    );
    assert_err(
        gpu.create_sdma_queue(&QueueOptions::new().ring_size(512)),
        Errno::EINVAL,
        "below the driver's minimum of 1024 bytes",
    );
    assert_err(
        gpu.create_aql_queue(&QueueOptions::new().percentage(101)),
        Errno::EINVAL,
        "queue percentage 101 is above 100",
    );
    assert_err(
        QueuePriority::new(16),
        Errno::EINVAL,
        "queue priority 16 is above 15",
    );
    assert_eq!(QueuePriority::new(15).unwrap(), QueuePriority::MAXIMUM);
    assert_eq!(QueuePriority::default().raw(), 7);
}

#[test]
fn limit_of_127_queues_per_process() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    if gpu
        .node()
        .gfx_version()
        .is_some_and(|v| (v.major, v.minor) == (9, 4) && v.stepping >= 2)
    {
        eprintln!("skipped: GC 9.4.3+ allows 255 queues");
        return;
    }
    let opts = QueueOptions::new().ring_size(4096);
    let queues: Vec<_> = (0..127)
        .map(|i| {
            gpu.create_pm4_queue(&opts)
                .unwrap_or_else(|e| panic!("queue {i}: {e}"))
        })
        .collect();
    let e = gpu.create_pm4_queue(&opts).unwrap_err();
    assert_eq!(e.errno(), Errno::ENOSPC, "{e}");
    assert_eq!(e.op(), "CREATE_QUEUE");
    assert!(e.to_string().contains("maximum number of queues"), "{e}");
    // The failed creation left nothing behind, and freeing one makes room again.
    drop(queues.into_iter().next());
    gpu.create_pm4_queue(&opts).unwrap();
}

#[test]
fn inactive_queue_and_update() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let mut q = gpu
        .create_pm4_queue(&QueueOptions::new().percentage(0))
        .unwrap();
    let active = || {
        kfd.model()
            .map(|m| m.node(gpu.id()).unwrap().counters().active_queue_count)
    };
    assert_eq!(active().unwrap_or(0), 0);
    q.update(100, QueuePriority::HIGH).unwrap();
    assert_eq!((q.percentage(), q.priority()), (100, QueuePriority::HIGH));
    if kfd.model().is_some() {
        assert_eq!(active(), Some(1));
    }
    assert_err(
        q.update(150, QueuePriority::LOW),
        Errno::EINVAL,
        "percentage 150",
    );
    q.update(0, QueuePriority::LOW).unwrap();
    assert_eq!(active().unwrap_or(0), 0);
}

#[test]
fn cu_mask() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    let cus = gpu.node().cu_count() as usize;
    let words = cus.div_ceil(32);
    q.set_cu_mask(&vec![0x5555_5555; words]).unwrap();
    assert_err(q.set_cu_mask(&[]), Errno::EINVAL, "the CU mask is empty");
}

#[test]
fn error_event_goes_into_the_context_save_header() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let ev = kfd.create_event(thunk::EventKind::Signal, false).unwrap();
    let q = gpu
        .create_aql_queue(&QueueOptions::new().error_event(&ev))
        .unwrap();
    let ctx = q.context_save_area().unwrap();
    let h = kfd_context_save_area_header::read_from_bytes(&ctx.read_vec(0, 40).unwrap()).unwrap();
    assert_eq!(h.err_event_id, ev.id());
}

#[test]
fn aql_ring_starts_with_invalid_packets() {
    let kfd = kfd();
    let q = kfd
        .gpu(0)
        .unwrap()
        .create_aql_queue(&QueueOptions::new().ring_size(4096))
        .unwrap();
    for slot in 0..64 {
        assert_eq!(
            q.ring().load_u32(slot * 64).unwrap() & 0xFF,
            1,
            "slot {slot}: INVALID"
        );
    }
}

#[test]
fn multi_xcc_context_save_headers() {
    let Some(kfd) = model_kfd(Preset::Gfx942, 1, "an 8-XCC part") else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let sizes = gpu.queue_sizes().unwrap();
    let q = gpu.create_pm4_queue(&QueueOptions::new()).unwrap();
    let ctx = q.context_save_area().unwrap();
    for i in 0..8u32 {
        let at = u64::from(i) * u64::from(sizes.cwsr_size);
        let h =
            kfd_context_save_area_header::read_from_bytes(&ctx.read_vec(at, 40).unwrap()).unwrap();
        // Each XCC's debugger area sits after all eight CWSR areas.
        assert_eq!(
            u64::from(h.debug_offset) + at,
            8 * u64::from(sizes.cwsr_size) + u64::from(i) * u64::from(sizes.debug_memory_size),
            "xcc {i}"
        );
    }
}
