//! Driver benchmarks (issue #5):
//! * `create_destroy_queue`: CREATE_QUEUE + DESTROY_QUEUE through the whole path — ioctl
//!   decode, pqm, dqm, MQD build, runlist IB, HIQ, scheduler firmware — and back;
//! * `execute_1024_queues`: one full unmap + map (UNMAP_QUEUES, fence, runlist of 8
//!   MAP_PROCESS + 1024 MAP_QUEUES, RUN_LIST, firmware walk and HQD mapping) with 1024 active
//!   queues across 8 processes. Target: ≤ 200 µs.
// criterion's macros generate undocumented public items.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use kfd_model::packet_manager::UnmapFilter;
use kfd_model::{KernelVersion, Model, ModelConfig, Preset, Process};
use kfd_sys::*;

/// A process with its VM acquired; queue buffers are plain addresses (Linux 6.1 does not
/// check them against the VM).
fn process(model: &Model) -> (Process, kfd_model::RenderNode, u32) {
    let p = model.open().unwrap();
    let gpu = model.topology().gpus().next().unwrap();
    let r = model
        .open_render_node(gpu.properties.drm_render_minor as u32)
        .unwrap();
    p.call::<AcquireVm>(&mut kfd_ioctl_acquire_vm_args {
        drm_fd: r.fd as u32,
        gpu_id: gpu.gpu_id,
    })
    .expect("AMDKFD_IOC_ACQUIRE_VM");
    (p, r, gpu.gpu_id)
}

fn queue_args(gpu_id: u32, n: u64) -> kfd_ioctl_create_queue_args {
    kfd_ioctl_create_queue_args {
        ring_base_address: 0x1000_0000 + n * 0x10_0000,
        write_pointer_address: 0x2000_0000 + n * 64,
        read_pointer_address: 0x2000_0000 + n * 64 + 8,
        ring_size: 4096,
        gpu_id,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        queue_percentage: 100,
        queue_priority: 7,
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    // The queues' buffers are fake addresses: keep the engines still.
    let cfg = ModelConfig::new(Preset::Gfx900)
        .with_kernel(KernelVersion::Linux6_1)
        .with_engine_thread(false);
    let model = Model::new(cfg).unwrap();
    let (p, _r, gpu) = process(&model);
    c.bench_function("create_destroy_queue", |b| {
        b.iter(|| {
            let mut a = queue_args(gpu, 1);
            p.call::<CreateQueue>(&mut a)
                .expect("AMDKFD_IOC_CREATE_QUEUE");
            p.call::<DestroyQueue>(&mut kfd_ioctl_destroy_queue_args {
                queue_id: a.queue_id,
                pad: 0,
            })
            .expect("AMDKFD_IOC_DESTROY_QUEUE");
        })
    });

    let cfg = ModelConfig::new(Preset::Gfx942)
        .with_kernel(KernelVersion::Linux6_1)
        .with_engine_thread(false);
    let model = Model::new(cfg).unwrap();
    let procs: Vec<_> = (0..8).map(|_| process(&model)).collect();
    for (i, (p, _, gpu)) in procs.iter().enumerate() {
        for q in 0..128 {
            p.call::<CreateQueue>(&mut queue_args(*gpu, (i * 128 + q) as u64))
                .expect("AMDKFD_IOC_CREATE_QUEUE");
        }
    }
    let node = model.nodes()[0].clone();
    assert_eq!(node.counters().active_queue_count, 1024);
    c.bench_function("execute_1024_queues", |b| {
        b.iter(|| {
            node.dqm()
                .execute(&node.gpu, UnmapFilter::DynamicQueues)
                .unwrap()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
