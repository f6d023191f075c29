//! Criterion benchmarks of the targets:
//! (a) build a runlist IB of 8 MAP_PROCESS + 128 MAP_QUEUES (target ≤ 5 ns per MAP_QUEUES);
//! (b) decode a 1 MiB mixed user-queue stream (target ≥ 2 GB/s).
//! Both run on preallocated buffers; `tests/no_alloc.rs` proves they allocate nothing.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pm4::decode::{Pm4Decoder, SdmaDecoder};
use pm4::fields::CompareFunction;
use pm4::hws::*;
use pm4::sdma::{SdmaCopyLinear, SdmaFence, SdmaTrap};
use pm4::user::*;
use pm4::{GfxGen, PacketWriter, SdmaGen};

const RUNLIST_DWORDS: usize = 8 * MapProcess::DWORDS + 128 * MapQueues::DWORDS;

fn build_runlist(ib: &mut [u32], base: u64) -> usize {
    let mut w = PacketWriter::new(ib);
    for p in 0..8u32 {
        let args = MapProcessArgs {
            pasid: 0x8000 + p as u16,
            process_quantum: 10,
            page_table_base: base + u64::from(p) * 0x1000,
            sh_mem_bases: 0x0001_0002,
            sh_mem_config: 0x1018,
            sdma_enable: true,
            num_queues: 16,
            ..Default::default()
        };
        w.push(&MapProcess::new(&args).unwrap()).unwrap();
        for q in 0..16u32 {
            let i = p * 16 + q;
            let mq = MapQueues::new(&MapQueuesArgs {
                queue_sel: MapQueueSel::HwsDetermined,
                queue_type: MapQueueType::NormalCompute,
                engine: QueueEngine::Compute,
                gws_control_queue: false,
                num_queues: 1,
                check_disable: false,
                doorbell_offset: 0x1000 + 2 * i,
                mqd_addr: base + u64::from(i) * 0x1000,
                wptr_addr: 0x7f00_0000_0000 + u64::from(i) * 8,
            })
            .unwrap();
            w.push(&mq).unwrap();
        }
    }
    w.len()
}

fn mixed_user_stream(words: &mut [u32]) -> usize {
    let signal = ReleaseMemArgs::event_signal(0x7f00_0000_0040, 8);
    let release = ReleaseMemGfx9::new(&signal, ReleaseMemGfx9::amdgpu_fence_cache()).unwrap();
    let acquire = AcquireMemGfx9::new(AcquireMemGfx9::amdgpu_coher_cntl(), AcquireRange::full(4));
    let wait = WaitRegMem::new(
        &WaitArgs {
            function: CompareFunction::Equal,
            operation: WaitOperation::WaitRegMem,
            target: PollTarget::Memory(0x7f00_0000_0080),
            poll_interval: 4,
            optimize_ace_offload_mode: true,
        },
        1,
        u32::MAX,
    )
    .unwrap();
    let ib = IndirectBuffer::new(0x10_0000, 256, IndirectBufferControl::new()).unwrap();
    let copy = CopyData::new(
        CopyDataControl::new()
            .with_src_sel(CopySrcSel::GpuClockCount)
            .with_dst_sel(CopyDstSel::Memory)
            .with_count_sel(CopyCountSel::Bits64),
        0,
        0x7f00_0000_0100,
    )
    .unwrap();
    let dispatch = DispatchDirect::new(
        [64, 1, 1],
        DispatchInitiator::new().with_compute_shader_en(true),
    );
    let sh_values = [0x1000u32, 0x7f, 0x0, 0x1];
    let data = [1u32, 2, 3, 4];
    let mut w = PacketWriter::new(words);
    let mut i = 0usize;
    while w.remaining() >= 16 {
        let r = match i % 9 {
            0 => w.push(&SetShReg::new(0x2E40, &sh_values).unwrap()),
            1 => w.push(&dispatch),
            2 => w.push(&EventWrite::cs_partial_flush()),
            3 => w.push(&acquire),
            4 => w.push(&release),
            5 => w.push(&wait),
            6 => w.push(&WriteData::memory(0x7f00_0000_0200, &data).unwrap()),
            7 => w.push(&copy),
            _ => w.push(&ib),
        };
        r.unwrap();
        i += 1;
    }
    let rest = w.remaining();
    w.nop(rest).unwrap();
    w.len()
}

fn bench_encode(c: &mut Criterion) {
    let mut ib = vec![0u32; RUNLIST_DWORDS];
    let mut g = c.benchmark_group("encode");
    g.throughput(Throughput::Elements(128));
    g.bench_function("runlist_8_map_process_128_map_queues", |b| {
        b.iter(|| black_box(build_runlist(black_box(&mut ib), black_box(0x40_0000))))
    });
    g.finish();

    let mut one = [0u32; 7];
    let mut g = c.benchmark_group("encode_one");
    g.throughput(Throughput::Elements(1));
    g.bench_function("map_queues", |b| {
        b.iter(|| {
            let mq = MapQueues::new(black_box(&MapQueuesArgs {
                queue_sel: MapQueueSel::HwsDetermined,
                queue_type: MapQueueType::NormalCompute,
                engine: QueueEngine::Compute,
                gws_control_queue: false,
                num_queues: 1,
                check_disable: false,
                doorbell_offset: 0x1234,
                mqd_addr: 0x40_0000,
                wptr_addr: 0x7f00_0000_1000,
            }))
            .unwrap();
            PacketWriter::new(black_box(&mut one)).push(&mq).unwrap()
        })
    });
    g.finish();
}

fn bench_decode(c: &mut Criterion) {
    let mut words = vec![0u32; (1 << 20) / 4];
    let n = mixed_user_stream(&mut words);
    let packets = Pm4Decoder::new(&words[..n], GfxGen::Gfx9).count();
    println!(
        "decode stream: {} bytes, {packets} packets, {:.1} dwords/packet",
        n * 4,
        n as f64 / packets as f64
    );
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes((n * 4) as u64));
    g.bench_function("pm4_1MiB_mixed_user_stream", |b| {
        b.iter(|| {
            let mut dwords = 0usize;
            for item in Pm4Decoder::new(black_box(&words[..n]), GfxGen::Gfx9) {
                dwords += item.unwrap().words.len();
            }
            dwords
        })
    });

    let mut sdma = vec![0u32; (1 << 20) / 4];
    let mut w = PacketWriter::new(&mut sdma);
    let copy = SdmaCopyLinear::new(SdmaGen::Sdma5, 0x1000, 0x2000, 4096).unwrap();
    let fence = SdmaFence::new(0x7f00_0000_0040, 1).unwrap();
    let trap = SdmaTrap::new(1).unwrap();
    while w.remaining() >= 7 {
        w.push(&copy).unwrap();
        if w.remaining() >= 6 {
            w.push(&fence).unwrap();
            w.push(&trap).unwrap();
        }
    }
    let m = w.len();
    g.throughput(Throughput::Bytes((m * 4) as u64));
    g.bench_function("sdma_1MiB_copy_fence_trap", |b| {
        b.iter(|| {
            let mut dwords = 0usize;
            for item in SdmaDecoder::new(black_box(&sdma[..m]), SdmaGen::Sdma5) {
                dwords += item.unwrap().words.len();
            }
            dwords
        })
    });
    g.finish();
}

criterion_group!(benches, bench_encode, bench_decode);
criterion_main!(benches);
