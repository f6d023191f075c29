//! Memory of every kind: allocated the libhsakmt way, CPU-mapped at its GPU address, mapped on
//! one or several GPUs, unmapped and freed on drop (facts §7.3, c-clients.md).
#![cfg(feature = "model")] // they look inside the model when they run on it

mod common;

use common::*;
use std::sync::atomic::Ordering;
use thunk::model_access::KfdModelExt;
use thunk::{Access, AllocOptions, Errno, MemoryKind};

#[test]
fn gtt_vram_and_userptr_are_cpu_visible_at_their_gpu_address() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    for kind in [MemoryKind::Gtt, MemoryKind::Vram, MemoryKind::UserPtr] {
        let m = gpu.alloc(kind, 3 * 4096 + 5).unwrap();
        assert_eq!(m.kind(), kind);
        assert_eq!(m.size(), 4 * 4096, "{kind:?}: rounded up to pages");
        assert_eq!(m.gpu_va() % 4096, 0);
        assert_eq!(m.as_ptr() as u64, m.gpu_va(), "GPU VA = CPU VA");
        assert_eq!(
            m.handle() >> 32,
            u64::from(gpu.id()),
            "handle = gpu_id << 32 | idr"
        );
        assert_eq!(m.owner_gpu_id(), gpu.id());
        assert_eq!(m.mapped_on(), vec![gpu.id()]);
        assert_eq!(m.cpu_access(), Access::ReadWrite);
        m.write(100, b"hello").unwrap();
        assert_eq!(m.read_vec(100, 5).unwrap(), b"hello");
        m.store_u64(4 * 4096 - 8, 0x1122_3344_5566_7788).unwrap();
        assert_eq!(m.load_u32(4 * 4096 - 8).unwrap(), 0x5566_7788);
        m.write_dwords(8, &[1, 2, 3]).unwrap();
        assert_eq!(m.read_dwords(8, 3).unwrap(), vec![1, 2, 3]);
        m.atomic_u32(0).unwrap().fetch_add(5, Ordering::AcqRel);
        assert_eq!(m.load_u32(0).unwrap(), 5);
        // Out of range and misaligned accesses are errors, not faults.
        assert_err(m.read_vec(4 * 4096 - 2, 4), Errno::EINVAL, "outside the");
        assert_err(m.load_u64(4), Errno::EINVAL, "not 8-byte aligned");
        assert_err(m.store_u32(u64::MAX - 3, 0), Errno::EINVAL, "outside the");
    }
}

#[test]
fn doorbell_and_mmio_pages_map_through_kfd() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let db = gpu.alloc(MemoryKind::Doorbell, 8192).unwrap();
    assert_eq!(db.size(), 8192);
    assert_eq!(db.cpu_access(), Access::ReadWrite);
    assert_eq!(db.mapped_on(), vec![gpu.id()]);
    let mmio = gpu.alloc(MemoryKind::MmioRemap, 4096).unwrap();
    assert_eq!(mmio.size(), 4096);
    // HDP flush register reads work (offset 0 and 4: KFD_MMIO_REMAP_HDP_*_FLUSH_CNTL).
    mmio.load_u32(0).unwrap();
    assert_err(
        gpu.alloc(MemoryKind::Doorbell, 4096),
        Errno::EINVAL,
        "exactly 8192 bytes",
    );
    assert_err(
        gpu.alloc(MemoryKind::MmioRemap, 8192),
        Errno::EINVAL,
        "exactly 4096 bytes",
    );
}

#[test]
fn device_only_vram_is_not_cpu_accessible() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let m = gpu
        .alloc_with(&AllocOptions::new(MemoryKind::Vram, 1 << 20).device_only())
        .unwrap();
    assert_eq!(m.cpu_access(), Access::None);
    assert_err(m.load_u32(0), Errno::EACCES, "not mapped for the CPU");
    assert_eq!(m.flags() & kfd_sys::KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, 0);
    // Large buffers get 2 MiB-aligned addresses for large GPU pages.
    let big = gpu.alloc(MemoryKind::Vram, 4 << 20).unwrap();
    assert_eq!(big.gpu_va() % (2 << 20), 0);
}

#[test]
fn read_only_buffers_refuse_cpu_writes() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let m = gpu
        .alloc_with(&AllocOptions::new(MemoryKind::Gtt, 4096).read_only())
        .unwrap();
    assert_eq!(m.flags() & kfd_sys::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, 0);
    assert_eq!(m.cpu_access(), Access::ReadOnly);
    assert_eq!(m.read_vec(0, 4).unwrap(), vec![0; 4]);
    assert_err(m.write(0, &[1]), Errno::EACCES, "read-only");
}

#[test]
fn zero_sized_buffers_are_refused() {
    let kfd = kfd();
    assert_err(
        kfd.gpu(0).unwrap().alloc(MemoryKind::Gtt, 0),
        Errno::EINVAL,
        "size 0",
    );
}

#[test]
fn buffers_are_freed_on_drop() {
    let Some(kfd) = model_kfd(Preset::Gfx900, 1, "counting the driver's buffers") else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let before_avail = gpu.available_memory().unwrap();
    let process = kfd.model().unwrap();
    assert_eq!(process.process_count(), 1);
    let vram = gpu.alloc(MemoryKind::Vram, 64 << 20).unwrap();
    assert_eq!(gpu.available_memory().unwrap(), before_avail - (64 << 20));
    let gtt = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let va = vram.gpu_va();
    drop(vram);
    assert_eq!(gpu.available_memory().unwrap(), before_avail);
    // The CPU range went with it: the address is no longer mapped in this process.
    assert!(!is_mapped(va));
    assert!(is_mapped(gtt.gpu_va()));
}

/// Whether `addr` is inside a mapping of this process (/proc/self/maps).
fn is_mapped(addr: u64) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.split_once('-'))
        .filter_map(|(a, b)| {
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .any(|(a, b)| a <= addr && addr < b)
}

#[test]
fn one_buffer_mapped_on_several_gpus() {
    let Some(kfd) = model_kfd(Preset::Gfx90a, 3, "three GPUs") else {
        return;
    };
    let gpus = kfd.gpus();
    let refs: Vec<&thunk::Gpu> = gpus.iter().collect();
    let m = gpus[0]
        .alloc_with(&AllocOptions::new(MemoryKind::Gtt, 8192).map_to(&refs))
        .unwrap();
    let ids: Vec<u32> = gpus.iter().map(|g| g.id()).collect();
    assert_eq!(m.mapped_on(), ids);
    m.unmap_from(&[&gpus[1]]).unwrap();
    assert_eq!(m.mapped_on(), vec![ids[0], ids[2]]);
    m.map_to(&[&gpus[1], &gpus[1]]).unwrap();
    assert_eq!(m.mapped_on(), vec![ids[0], ids[2], ids[1]]);
    // Unmapped from all: still allocated and CPU-visible.
    m.unmap_from(&refs).unwrap();
    assert!(m.mapped_on().is_empty());
    m.store_u32(0, 9).unwrap();
    // Not mapped anywhere at allocation.
    let n = gpus[2]
        .alloc_with(&AllocOptions::new(MemoryKind::Vram, 4096).map_to(&[]))
        .unwrap();
    assert!(n.mapped_on().is_empty());
    // GPUs of another process are refused.
    let other = thunk::Kfd::open_with(thunk::OpenOptions::model(Preset::Gfx900, 1)).unwrap();
    let og = other.gpu(0).unwrap();
    assert_err(
        m.map_to(&[&og]),
        Errno::EINVAL,
        "belongs to another process",
    );
}

#[test]
fn memory_outlives_nothing_it_needs() {
    let kfd = kfd();
    let gpu = kfd.gpu(0).unwrap();
    let m = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    drop(gpu);
    drop(kfd);
    // The process is still open for the buffer's sake.
    m.store_u32(0, 1).unwrap();
    assert_eq!(m.load_u32(0).unwrap(), 1);
}
