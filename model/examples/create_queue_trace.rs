//! Watch one CREATE_QUEUE travel through the modelled driver and firmware:
//!
//! ```sh
//! RUST_LOG=trace cargo run -p kfd-model --example create_queue_trace
//! ```
//!
//! The log shows the ioctl, the process queue manager, the device queue manager, the packet
//! manager building the runlist (with its PM4 disassembly), the HIQ submission, and the
//! scheduler firmware mapping the queue into an HQD slot.

use kfd_model::{Model, ModelConfig, Preset};
use kfd_sys::*;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("debug")).init();
    let model = Model::new(ModelConfig::new(Preset::Gfx900)).expect("model");
    let p = model.open().expect("open");
    let gpu = model.topology().gpus().next().expect("a GPU");
    let render = model
        .open_render_node(gpu.properties.drm_render_minor as u32)
        .expect("render node");
    let gpu_id = gpu.gpu_id;
    p.call::<AcquireVm>(&mut kfd_ioctl_acquire_vm_args {
        drm_fd: render.fd as u32,
        gpu_id,
    })
    .expect("AMDKFD_IOC_ACQUIRE_VM");

    let mut va = 0x1_0000_0000u64;
    let mut alloc = |size: u64| {
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size,
            gpu_id,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        va += size.next_multiple_of(1 << 21);
        // SAFETY: a GTT allocation carries no user pointer, only the GPU VA it reserves; the
        // model backs it with its own memory.
        unsafe { p.call_unchecked::<AllocMemoryOfGpu>(&mut a) }
            .expect("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU");
        let ids = [gpu_id];
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle: a.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        p.call::<MapMemoryToGpu>(&mut m)
            .expect("AMDKFD_IOC_MAP_MEMORY_TO_GPU");
        a.va_addr
    };
    let sizes = model.node(gpu_id).expect("node").queue_sizes;
    let ring = alloc(4096);
    let ptrs = alloc(4096);
    let eop = alloc(4096);
    let ctx = alloc(u64::from(sizes.cwsr_size + sizes.debug_memory_size).next_multiple_of(4096));
    let mut q = kfd_ioctl_create_queue_args {
        ring_base_address: ring,
        write_pointer_address: ptrs,
        read_pointer_address: ptrs + 8,
        ring_size: 4096,
        gpu_id,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        queue_percentage: 100,
        queue_priority: 7,
        eop_buffer_address: eop,
        eop_buffer_size: 4096,
        ctx_save_restore_address: ctx,
        ctx_save_restore_size: sizes.cwsr_size,
        ctl_stack_size: sizes.ctl_stack_size,
        ..Default::default()
    };
    log::info!("----- CREATE_QUEUE -----");
    p.call::<CreateQueue>(&mut q)
        .expect("AMDKFD_IOC_CREATE_QUEUE");
    let node = model.node(gpu_id).expect("node");
    for m in node.gpu.hws.mapped_queues() {
        println!(
            "HQD {:?}: pasid {:#x} vmid {} doorbell {:#x} MQD {:#x}",
            m.slot, m.pasid, m.vmid, m.queue.doorbell_offset, m.queue.mqd_addr
        );
    }
    println!(
        "queue {} created; doorbell offset {:#x}",
        q.queue_id, q.doorbell_offset
    );
}
