//! Issue #23 item 2: the errnos where the model had drifted from amdkfd, one test per row.
//! What the kernel returns was read in `kfd_chardev.c`, `amdgpu_amdkfd_gpuvm.c`,
//! `kfd_events.c` and `amdgpu_vm.c` of Linux 6.1 and 6.12; where they differ the model
//! follows `KernelVersion`.

mod common;

use common::*;
use kfd_model::{Errno, KernelVersion, ModelConfig, Preset};
use kfd_sys::*;
use std::time::{Duration, Instant};

fn model_k(kernel: KernelVersion, gpus: u32) -> kfd_model::Model {
    model_with(
        ModelConfig::new(Preset::Gfx900)
            .with_gpus(gpus)
            .with_kernel(kernel)
            .with_engine_thread(false)
            // The limits below are worked out for 64 GiB, whatever the host has.
            .with_system_memory(64 << 30),
    )
}

/// ALLOC_MEMORY_OF_GPU only (no map); never USERPTR (this safe function gives the model no
/// user address).
fn alloc(c: &Client, va: u64, size: u64, flags: u32) -> Result<u64, Errno> {
    assert_eq!(
        flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
        0,
        "alloc makes no USERPTR"
    );
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size,
        gpu_id: c.gpu(),
        flags,
        ..Default::default()
    };
    // SAFETY: no USERPTR flag (asserted above): the argument carries no user address (`va_addr` is
    // a GPU virtual address; `mmap_offset` is read as one only for USERPTR).
    unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut a) }.map(|_| a.handle)
}

fn gtt_flags() -> u32 {
    KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
}

/// MAP (or UNMAP) `handle` on `gpus`; returns the result and `n_success`.
fn map(c: &Client, handle: u64, gpus: &[u32], on: bool) -> (Result<i32, Errno>, u32) {
    let (device_ids_array_ptr, n_devices) = (gpus.as_ptr() as u64, gpus.len() as u32);
    if on {
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle,
            device_ids_array_ptr,
            n_devices,
            n_success: 0,
        };
        (c.p.call::<MapMemoryToGpu>(&mut m), m.n_success)
    } else {
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle,
            device_ids_array_ptr,
            n_devices,
            n_success: 0,
        };
        (c.p.call::<UnmapMemoryFromGpu>(&mut u), u.n_success)
    }
}

fn free(c: &Client, handle: u64) -> Result<i32, Errno> {
    let mut f = kfd_ioctl_free_memory_of_gpu_args { handle };
    c.p.call::<FreeMemoryOfGpu>(&mut f)
}

/// `amdgpu_amdkfd_gpuvm_unmap_memory_from_gpu`: "If no VMs were reserved, it means the BO
/// wasn't actually mapped" → EINVAL, in both kernels.
#[test]
fn unmapping_a_buffer_that_is_not_mapped_is_einval() {
    for kernel in [KernelVersion::Linux6_1, KernelVersion::Linux6_12] {
        let model = model_k(kernel, 2);
        let c = Client::new(&model);
        let h = alloc(&c, 0x1_0000_0000, 4096, gtt_flags()).unwrap();
        let (r, n) = map(&c, h, &[c.gpus[0]], false);
        assert_errno(r, Errno::EINVAL, "never mapped");
        assert_eq!(n, 0);
        // Mapped on GPU 0 only: GPU 0 unmaps, GPU 1 is EINVAL with n_success 1.
        assert_eq!(map(&c, h, &[c.gpus[0]], true).0, Ok(0));
        let (r, n) = map(&c, h, &[c.gpus[0], c.gpus[1]], false);
        assert_errno(r, Errno::EINVAL, "not mapped on the second GPU");
        assert_eq!(n, 1, "the first GPU was unmapped");
        // Unmapped twice.
        assert_errno(map(&c, h, &[c.gpus[0]], false).0, Errno::EINVAL, "again");
        assert_eq!(free(&c, h), Ok(0));
    }
}

/// `kfd_ioctl_map_memory_to_gpu` / `_unmap_`: `kfd_process_device_translate_handle` failing is
/// ENOMEM; a handle naming an unknown GPU is EINVAL (no process device).
#[test]
fn map_and_unmap_of_an_unknown_handle_are_enomem() {
    let model = model_k(KernelVersion::Linux6_12, 1);
    let c = Client::new(&model);
    let bogus = (u64::from(c.gpu()) << 32) | 0x7777;
    for on in [true, false] {
        assert_errno(map(&c, bogus, &[c.gpu()], on).0, Errno::ENOMEM, "bogus idr");
        assert_errno(
            map(&c, 0x1234_0000_0001, &[c.gpu()], on).0,
            Errno::EINVAL,
            "unknown gpu in the handle",
        );
    }
    // FREE of an unknown handle stays EINVAL.
    assert_errno(free(&c, bogus), Errno::EINVAL, "free bogus");
}

/// Linux 6.12 (`queue_refcount` on the buffer's VA): unmapping any buffer a live queue was
/// validated with is EBUSY, so it cannot be freed either (still mapped: EBUSY); after
/// DESTROY_QUEUE both work. Linux 6.1 takes no reference.
#[test]
fn queue_buffers_stay_mapped_while_the_queue_lives_on_6_12() {
    let model = model_k(KernelVersion::Linux6_12, 1);
    let c = Client::new(&model);
    let (id, bufs) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let eop = bufs.eop.as_ref().unwrap().handle;
    let ctx = bufs.ctx.as_ref().unwrap().0.handle;
    for (h, what) in [
        (bufs.ring.handle, "ring"),
        (bufs.ptrs.handle, "rptr/wptr"),
        (eop, "eop"),
        (ctx, "cwsr area"),
    ] {
        let (r, n) = map(&c, h, &[c.gpu()], false);
        assert_errno(r, Errno::EBUSY, what);
        assert_eq!(n, 0, "{what}");
        assert_errno(free(&c, h), Errno::EBUSY, what);
    }
    // A buffer no queue uses is unaffected.
    c.free(&c.gtt(4096)).unwrap();
    c.destroy_queue(id).unwrap();
    c.free(&bufs.ring).unwrap();
    c.free(&bufs.ptrs).unwrap();

    // UPDATE_QUEUE to a new ring moves the hold to it.
    let (id, bufs) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let ring2 = c.gtt(4096);
    let mut u = kfd_ioctl_update_queue_args {
        ring_base_address: ring2.va,
        queue_id: id,
        ring_size: 4096,
        queue_percentage: 100,
        queue_priority: 7,
    };
    c.p.call::<UpdateQueue>(&mut u).unwrap();
    assert_errno(
        map(&c, ring2.handle, &[c.gpu()], false).0,
        Errno::EBUSY,
        "the new ring",
    );
    c.free(&bufs.ring).expect("the old ring is free to go");
    c.destroy_queue(id).unwrap();
    c.free(&ring2).unwrap();

    // Linux 6.1: nothing holds the buffers.
    let model = model_k(KernelVersion::Linux6_1, 1);
    let c = Client::new(&model);
    let (_id, bufs) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    c.free(&bufs.ring).expect("6.1 lets the ring go");
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// `amdgpu_amdkfd_reserve_mem_limit`: GTT counts against the system limit and the TTM limit,
/// for the whole machine (every GPU together); over either is ENOMEM. With the topology's
/// 64 GiB of system memory: 6.12 TTM = half of RAM = 32 GiB (system 64 − 1 − 1.5 = 61.5 GiB);
/// 6.1 TTM = 3/8 = 24 GiB (system 15/16 = 60 GiB). Allocations are lazy: tens of GiB cost no
/// resident memory.
#[test]
fn gtt_allocations_stop_at_the_system_memory_limits() {
    const GIB: u64 = 1 << 30;
    for (kernel, ttm_limit) in [
        (KernelVersion::Linux6_12, 32 * GIB),
        (KernelVersion::Linux6_1, 24 * GIB),
    ] {
        let model = model_k(kernel, 2);
        let c = Client::new(&model);
        let before = rss();
        // Half the limit on each GPU: exactly at the limit, which is allowed.
        let half = ttm_limit / 2;
        let a = alloc(&c, 0x10_0000_0000, half, gtt_flags()).expect("first half");
        let mut b = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: 0x20_0000_0000,
            size: half,
            gpu_id: c.gpus[1],
            flags: gtt_flags(),
            ..Default::default()
        };
        // SAFETY: a GTT allocation, no USERPTR flag: the argument carries no user address
        // (`va_addr` is a GPU virtual address; `mmap_offset` is read as one only for USERPTR).
        unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut b) }
            .expect("second half, other GPU");
        assert!(
            rss() < before + (64 << 20),
            "{kernel:?}: {} GiB allocated lazily",
            ttm_limit / GIB
        );
        // One more page on either GPU is over.
        assert_errno(
            alloc(&c, 0x30_0000_0000, 4096, gtt_flags()),
            Errno::ENOMEM,
            "one page over the TTM limit",
        );
        b.gpu_id = c.gpus[1];
        b.va_addr = 0x30_0000_0000;
        b.size = 4096;
        assert_errno(
            // SAFETY: a GTT allocation, no USERPTR flag: the argument carries no user address
            // (`va_addr` is a GPU virtual address; `mmap_offset` is read as one only for USERPTR).
            unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut b) },
            Errno::ENOMEM,
            "the limit is machine-wide",
        );
        // Freeing gives it back.
        free(&c, a).unwrap();
        let small = alloc(&c, 0x30_0000_0000, 4096, gtt_flags()).expect("after a free");
        free(&c, small).unwrap();
        // A single buffer over the limit, and the 1 TiB.
        for size in [ttm_limit + 4096, 1 << 40] {
            assert_errno(
                alloc(&c, 0x40_0000_0000, size, gtt_flags()),
                Errno::ENOMEM,
                "one big buffer",
            );
        }
        // VRAM is limited by the GPU's own memory, not these.
        let v = alloc(
            &c,
            0x50_0000_0000,
            1 << 30,
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        )
        .expect("VRAM");
        free(&c, v).unwrap();
    }
}

/// `kfd_event_create`: SIGNAL and DEBUG take a slot; every other type, known or not, is
/// `create_other_event` — it succeeds with an id from 0x40000000 and no slot. SET_EVENT on it
/// is EINVAL (only signal events can be set from the CPU). The model matches the kernel.
#[test]
fn create_event_with_an_unknown_type_makes_an_other_event_as_the_kernel_does() {
    let model = model_k(KernelVersion::Linux6_12, 1);
    let c = Client::new(&model);
    let e = create_event(&c, 42, false, 0).expect("unknown type succeeds in the kernel too");
    assert!(e.event_id >= 0x4000_0000, "non-signal id {:#x}", e.event_id);
    assert_eq!((e.event_slot_index, e.event_page_offset), (0, 0));
    let mut s = kfd_ioctl_set_event_args {
        event_id: e.event_id,
        pad: 0,
    };
    assert_errno(
        c.p.call::<SetEvent>(&mut s),
        Errno::EINVAL,
        "not a signal event",
    );
    let mut d = kfd_ioctl_destroy_event_args {
        event_id: e.event_id,
        pad: 0,
    };
    c.p.call::<DestroyEvent>(&mut d).unwrap();
}

/// `kfd_wait_on_events` with no events: 0 activated of 0 is complete at the first check —
/// result 0, wait result COMPLETE, at once, for "any" and "all" alike.
#[test]
fn waiting_on_no_events_completes_at_once() {
    let model = model_k(KernelVersion::Linux6_12, 1);
    let c = Client::new(&model);
    for all in [false, true] {
        let start = Instant::now();
        let (r, result) = wait_events(&c, &[], all, 10_000);
        assert_eq!(r, Ok(0));
        assert_eq!(result, KFD_IOC_WAIT_RESULT_COMPLETE, "all = {all}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "did not wait out 10 s"
        );
    }
}

/// `kfd_mmap`: the type is offset bits [63:62]; doorbell, reserved-memory and MMIO need a GPU
/// (`kfd_device_by_id`, else ENODEV), so offset 0 — MMIO with GPU id 0 — is ENODEV.
/// `kfd_event_mmap` is EINVAL above 32 KiB or before an event page exists.
/// `kfd_reserved_mem_mmap` hands out exactly two pages (TBA/TMA), EINVAL for another size.
#[test]
fn kfd_mmap_errnos() {
    let model = model_k(KernelVersion::Linux6_12, 1);
    let c = Client::new(&model);
    let gpu = u64::from(c.gpu()) << 46;
    assert_eq!(c.p.mmap(0, 4096).unwrap_err(), Errno::ENODEV, "offset 0");
    assert_eq!(
        c.p.mmap(KFD_MMAP_TYPE_DOORBELL | (0x1234 << 46), 8192)
            .unwrap_err(),
        Errno::ENODEV,
        "unknown gpu"
    );
    assert_eq!(
        c.p.mmap(KFD_MMAP_TYPE_EVENTS, 4096).unwrap_err(),
        Errno::EINVAL,
        "no event page yet"
    );
    let reserved = KFD_MMAP_TYPE_RESERVED_MEM | gpu;
    assert_eq!(
        c.p.mmap(reserved, 4096).unwrap_err(),
        Errno::EINVAL,
        "one page"
    );
    let m = c.p.mmap(reserved, 8192).expect("TBA/TMA pages");
    assert_eq!(m.len, 8192);
    assert_eq!(m.memory.load_u64(8184), Some(0), "zeroed");
    // MMIO with a GPU: exactly one page.
    assert_eq!(
        c.p.mmap(KFD_MMAP_TYPE_MMIO | gpu, 8192).unwrap_err(),
        Errno::EINVAL
    );
    c.p.mmap(KFD_MMAP_TYPE_MMIO | gpu, 4096).unwrap();
    // The event page exists after the first signal event; above 32 KiB is EINVAL.
    create_event(&c, KFD_IOC_EVENT_SIGNAL, false, 0).unwrap();
    assert_eq!(
        c.p.mmap(KFD_MMAP_TYPE_EVENTS, 64 << 10).unwrap_err(),
        Errno::EINVAL
    );
    c.p.mmap(KFD_MMAP_TYPE_EVENTS, 32 << 10).unwrap();
}

/// `kfd_ioctl`: a number outside the table is ENOTTY. Linux 6.1's table ends at 0x23
/// (`AMDKFD_COMMAND_END` 0x24), so EXPORT_DMABUF, RUNTIME_ENABLE and DBG_TRAP are ENOTTY
/// there and known on 6.12.
#[test]
fn command_numbers_past_the_versions_table_are_enotty() {
    for (kernel, known_0x25) in [
        (KernelVersion::Linux6_1, false),
        (KernelVersion::Linux6_12, true),
    ] {
        let model = model_k(kernel, 1);
        let c = Client::new(&model);
        let mut b = [0u8; 32];
        for nr in [0x00, 0x27, 0x7f, 0x85, 0xff] {
            // SAFETY: no ioctl has these numbers: nothing reads or writes through `b`.
            let r = unsafe { c.p.ioctl(ioctl::iowr::<[u8; 32]>(nr), &mut b) };
            assert_eq!(r, Err(Errno::ENOTTY), "{kernel:?} nr {nr:#x}");
        }
        for nr in [0x24, 0x26] {
            // SAFETY: `b` is zeros: EXPORT_DMABUF and DBG_TRAP see null addresses and fail
            // before any write through them.
            let r = unsafe { c.p.ioctl(ioctl::iowr::<[u8; 32]>(nr), &mut b) };
            assert_eq!(
                r == Err(Errno::ENOTTY),
                !known_0x25,
                "{kernel:?} nr {nr:#x}: {r:?}"
            );
        }
        let mut r = kfd_ioctl_runtime_enable_args {
            mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
            ..Default::default()
        };
        // SAFETY: RUNTIME_ENABLE's only address is `r_debug`, 0 here, which the model only records
        // for a debugger and never dereferences. On Linux 6.1 the request is ENOTTY before the
        // argument is looked at.
        let got = unsafe { ioctl_unchecked::<RuntimeEnable>(&c.p, &mut r) };
        if known_0x25 {
            assert_eq!(got, Ok(0));
        } else {
            assert_errno(got, Errno::ENOTTY, "RUNTIME_ENABLE on 6.1");
        }
        // The last command 6.1 has still works.
        let mut a = kfd_ioctl_get_available_memory_args {
            gpu_id: c.gpu(),
            ..Default::default()
        };
        c.p.call::<AvailableMemory>(&mut a).unwrap();
    }
}

/// Every command of kfd-sys's tables (interface 1.18 and the DKMS-only ones of 1.8) reaches a
/// handler on Linux 6.12: none falls through the model's dispatch to ENOTTY, which only a
/// number outside the tables may answer.
#[test]
fn every_command_of_the_tables_reaches_a_handler() {
    let model = model_k(KernelVersion::Linux6_12, 1);
    let c = Client::new(&model);
    let dkms = v1_8::AMDKFD_IOCTLS
        .iter()
        .filter(|d| d.nr() >= v1_8::AMDKFD_COMMAND_START_2);
    for d in AMDKFD_IOCTLS.iter().chain(dkms) {
        let mut b = vec![0u8; d.size()];
        // SAFETY: an all-zero argument: every address is null, every count, id and handle
        // zero, so each handler fails its checks or answers inside the argument; nothing is
        // read or written through an address.
        let r = unsafe { c.p.ioctl(d.request, &mut b) };
        assert_ne!(r, Err(Errno::ENOTTY), "{}", d.name);
    }
}

/// ALLOC_MEMORY_OF_GPU does not look at the VA (only at SVM ranges, which this test makes
/// none of; see tests/svm.rs); `amdgpu_vm_bo_map` at MAP time refuses VA 0, an unaligned VA, a range past the
/// 48-bit GPU address space, and a range overlapping another mapping, all EINVAL.
#[test]
fn bad_or_overlapping_vas_are_refused_at_map_not_at_alloc() {
    for kernel in [KernelVersion::Linux6_1, KernelVersion::Linux6_12] {
        let model = model_k(kernel, 1);
        let c = Client::new(&model);
        let first = alloc(&c, 0x1_0000_0000, 0x4000, gtt_flags()).unwrap();
        assert_eq!(map(&c, first, &[c.gpu()], true).0, Ok(0));
        for (va, what) in [
            (0x1_0000_2000, "overlaps the first buffer"),
            (0x2_0000_0800, "unaligned"),
            (0, "VA 0"),
            ((1 << 48) - 0x1000, "ends past 48 bits"),
        ] {
            let h = alloc(&c, va, 0x4000, gtt_flags())
                .unwrap_or_else(|e| panic!("{kernel:?} {what}: ALLOC takes any VA, got {e:?}"));
            let (r, n) = map(&c, h, &[c.gpu()], true);
            assert_errno(r, Errno::EINVAL, what);
            assert_eq!(n, 0, "{what}");
            assert_eq!(free(&c, h), Ok(0), "{what}: never mapped, so free works");
        }
    }
}
