//! Topology read through the backend's sysfs root: nodes, properties, banks, caches, links, the
//! gfx version and the queue sizes the driver validates (facts §9.9).
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use kfd_sys::sysfs::HSA_IOLINK_TYPE_PCIEXPRESS;
use thunk::model_access::KfdModelExt;

#[test]
fn gpu_nodes_carry_what_queues_and_memory_need() {
    let kfd = kfd();
    let topo = kfd.topology();
    assert!(topo.nodes.iter().any(|n| !n.is_gpu()), "a CPU node");
    assert_eq!(topo.gpus().count(), kfd.gpus().len());
    for gpu in kfd.gpus() {
        let n = gpu.node();
        assert_ne!(n.gpu_id, 0);
        assert_eq!(topo.gpu(n.gpu_id), Some(n));
        let v = n.gfx_version().expect("a gfx version");
        assert!(v.major >= 9, "{v}");
        assert!(n.cu_count() > 0);
        assert!(n.properties.simd_per_cu > 0);
        assert_eq!(gpu.render_minor(), n.render_minor().unwrap());
        assert!(
            n.caches.iter().any(|c| c.is_hsacu()),
            "ROCr needs an HSACU cache"
        );
        let sizes = gpu.queue_sizes().unwrap();
        assert_eq!(sizes.eop_buffer_size, 4096);
        assert_eq!(sizes.ctl_stack_size % 4096, 0);
        assert_eq!(sizes.cwsr_size, sizes.ctl_stack_size + sizes.wg_data_size);
        assert_eq!(sizes.context_save_area_size() % 4096, 0);
        if n.properties.ctl_stack_size != 0 {
            // 6.12 publishes the values CREATE_QUEUE checks; the thunk must use exactly them.
            assert_eq!(u64::from(sizes.ctl_stack_size), n.properties.ctl_stack_size);
            assert_eq!(u64::from(sizes.cwsr_size), n.properties.cwsr_size);
        }
    }
}

#[test]
fn gfx900_model_topology_matches_the_facts() {
    let Some(kfd) = model_kfd(Preset::Gfx900, 1, "exact gfx900 values") else {
        return;
    };
    let topo = kfd.topology();
    assert_eq!(topo.nodes.len(), 2);
    let cpu = &topo.nodes[0];
    assert_eq!((cpu.index, cpu.gpu_id), (0, 0));
    assert!(cpu.properties.cpu_cores_count > 0);
    assert_eq!(cpu.io_links.len(), 1);
    assert_eq!(cpu.io_links[0].link_type, HSA_IOLINK_TYPE_PCIEXPRESS);
    let gpu = &topo.nodes[1];
    assert_eq!(gpu.index, 1);
    assert_eq!(gpu.gfx_target_name().as_deref(), Some("gfx900"));
    assert_eq!(gpu.properties.gfx_target_version, 90000);
    assert_eq!(gpu.cu_count(), 64);
    assert!(gpu.is_dgpu());
    assert_eq!(gpu.vram_size(), 16 << 30);
    assert_eq!(gpu.generation().unwrap(), kfd_sys::gpu::Generation::Gfx9);
    assert_eq!(gpu.sdma_gen().unwrap(), pm4::SdmaGen::Sdma4);
    // Facts §9.9 for 64 CUs of gfx900: ctl stack 0x5000, CWSR 0x1545000, debug 0x10000.
    let s = gpu.queue_sizes().unwrap();
    assert_eq!(
        (
            s.ctl_stack_size,
            s.cwsr_size,
            s.debug_memory_size,
            s.num_xcc
        ),
        (0x5000, 0x0154_5000, 0x1_0000, 1)
    );
    assert_eq!(s.context_save_area_size(), 0x0155_5000);
    // What the thunk parsed is what the model wrote.
    let m = kfd.model().unwrap();
    let theirs = m.topology().gpus().next().unwrap();
    assert_eq!(gpu.gpu_id, theirs.gpu_id);
    assert_eq!(gpu.properties.simd_count, theirs.properties.simd_count);
    assert_eq!(gpu.mem_banks.len(), theirs.mem_banks.len());
    assert_eq!(gpu.caches.len(), theirs.caches.len());
    assert_eq!(gpu.caches[0].sibling_map, theirs.caches[0].sibling_map);
    assert_eq!(gpu.io_links.len(), theirs.io_links.len());
    assert_eq!(
        u64::from(s.ctl_stack_size),
        theirs.properties.ctl_stack_size
    );
}

#[test]
fn multi_gpu_and_multi_xcc_parts() {
    let Some(kfd) = model_kfd(Preset::Gfx942, 2, "two MI300X") else {
        return;
    };
    let gpus = kfd.gpus();
    assert_eq!(gpus.len(), 2);
    assert_ne!(gpus[0].id(), gpus[1].id());
    assert_ne!(gpus[0].render_minor(), gpus[1].render_minor());
    let n = gpus[0].node();
    assert_eq!(n.gfx_target_name().as_deref(), Some("gfx942"));
    assert_eq!(n.num_xcc(), 8);
    let s = gpus[0].queue_sizes().unwrap();
    assert_eq!(s.num_xcc, 8);
    // The area covers every XCC's CWSR and debugger space.
    assert_eq!(
        s.context_save_area_size(),
        ((u64::from(s.cwsr_size) + u64::from(s.debug_memory_size)) * 8).next_multiple_of(4096)
    );
    let k = kfd.model().unwrap();
    assert_eq!(
        s.cwsr_size,
        k.node(gpus[0].id()).unwrap().queue_sizes.cwsr_size
    );
}

#[test]
fn reread_gives_the_same_topology() {
    let kfd = kfd();
    assert_eq!(&kfd.reread_topology().unwrap(), kfd.topology());
}
