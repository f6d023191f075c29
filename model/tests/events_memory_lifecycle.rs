//! Events through the ioctl surface (both event-page paths, SET → WAIT any/all/timeout),
//! memory of every kind, and process termination releasing everything (facts §7.3–7.5, §8,
//! §9.7).

mod common;

use common::*;
use kfd_model::{Errno, Preset};
use kfd_sys::*;
use std::thread;
use std::time::{Duration, Instant};

fn wait(c: &Client, ids: &[u32], all: bool, timeout: u32) -> (Result<i32, Errno>, u32) {
    wait_events(c, ids, all, timeout)
}

#[test]
fn apu_path_kernel_page_mapped_through_kfd() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let e = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, 0).unwrap();
    assert_eq!(
        (e.event_id, e.event_slot_index, e.event_trigger_data),
        (1, 1, 1)
    );
    assert_eq!(e.event_page_offset, KFD_MMAP_TYPE_EVENTS);
    let page =
        c.p.mmap(e.event_page_offset, KFD_SIGNAL_EVENT_PAGE_SIZE)
            .unwrap();
    assert_eq!(
        page.memory.load_u64((page.offset + 8) as usize),
        Some(u64::MAX),
        "unsignalled slot"
    );
    assert_errno(
        c.p.mmap(KFD_MMAP_TYPE_EVENTS, KFD_SIGNAL_EVENT_PAGE_SIZE + 4096)
            .map(|_| ()),
        Errno::EINVAL,
        "too big",
    );
}

#[test]
fn dgpu_path_user_page_by_handle_once() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let small = c.gtt(16384);
    assert_errno(
        create_event(&c, KFD_IOC_EVENT_SIGNAL, false, small.handle).map(|_| ()),
        Errno::EINVAL,
        "page < 32 KiB",
    );
    let page = c.gtt(KFD_SIGNAL_EVENT_PAGE_SIZE);
    let e = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
    assert_eq!(page.read_u64(8 * u64::from(e.event_slot_index)), u64::MAX);
    assert_errno(
        create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).map(|_| ()),
        Errno::EINVAL,
        "already set",
    );
    // The user page sets the slot count: 4096 slots, 4095 events.
    for _ in 1..4095 {
        create_event(&c, KFD_IOC_EVENT_SIGNAL, false, 0).unwrap();
    }
    assert_errno(
        create_event(&c, KFD_IOC_EVENT_SIGNAL, false, 0).map(|_| ()),
        Errno::ENOSPC,
        "4096 slots",
    );
    // The signal page cannot be freed under the events.
    let ids = [c.gpu()];
    let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
        handle: page.handle,
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: 1,
        n_success: 0,
    };
    c.p.call::<UnmapMemoryFromGpu>(&mut u).unwrap();
    let mut f = kfd_ioctl_free_memory_of_gpu_args {
        handle: page.handle,
    };
    assert_errno(
        c.p.call::<FreeMemoryOfGpu>(&mut f),
        Errno::EPERM,
        "free signal BO",
    );
}

#[test]
fn set_then_wait_any_all_timeout() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let a = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, 0)
        .unwrap()
        .event_id;
    let b = create_event(&c, KFD_IOC_EVENT_SIGNAL, true, 0)
        .unwrap()
        .event_id;
    assert_eq!(
        wait(&c, &[a, b], false, 0),
        (Ok(0), KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
    let t = Instant::now();
    assert_eq!(
        wait(&c, &[a, b], false, 30),
        (Ok(0), KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
    assert!(t.elapsed() >= Duration::from_millis(30));
    c.p.call::<SetEvent>(&mut kfd_ioctl_set_event_args {
        event_id: b,
        pad: 0,
    })
    .unwrap();
    assert_eq!(
        wait(&c, &[a, b], false, 0),
        (Ok(0), KFD_IOC_WAIT_RESULT_COMPLETE)
    );
    // b was auto-reset and is consumed; a is not set: "all" times out.
    assert_eq!(
        wait(&c, &[a, b], true, 0),
        (Ok(0), KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
    c.p.call::<SetEvent>(&mut kfd_ioctl_set_event_args {
        event_id: a,
        pad: 0,
    })
    .unwrap();
    c.p.call::<SetEvent>(&mut kfd_ioctl_set_event_args {
        event_id: b,
        pad: 0,
    })
    .unwrap();
    assert_eq!(
        wait(&c, &[a, b], true, 0),
        (Ok(0), KFD_IOC_WAIT_RESULT_COMPLETE)
    );
    c.p.call::<ResetEvent>(&mut kfd_ioctl_reset_event_args {
        event_id: a,
        pad: 0,
    })
    .unwrap();
    assert_eq!(
        wait(&c, &[a], true, 0),
        (Ok(0), KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
    // Errors.
    assert_eq!(wait(&c, &[12345], true, 0).0, Err(Errno::EINVAL));
    let mem = create_event(&c, KFD_IOC_EVENT_MEMORY, false, 0)
        .unwrap()
        .event_id;
    assert_errno(
        c.p.call::<SetEvent>(&mut kfd_ioctl_set_event_args {
            event_id: mem,
            pad: 0,
        }),
        Errno::EINVAL,
        "set a memory event",
    );
    assert_errno(
        c.p.call::<DestroyEvent>(&mut kfd_ioctl_destroy_event_args {
            event_id: 999,
            pad: 0,
        }),
        Errno::EINVAL,
        "destroy unknown",
    );
    let mut bad = kfd_ioctl_wait_events_args {
        events_ptr: 16,
        num_events: 1,
        ..Default::default()
    };
    assert_errno(
        // SAFETY: `events_ptr` 16 is unmapped: the model copies the array in with
        // `process_vm_readv` (`read_array`), which fails with EFAULT, and returns before writing
        // anything back.
        unsafe { ioctl_unchecked::<WaitEvents>(&c.p, &mut bad) },
        Errno::EFAULT,
        "events_ptr",
    );
}

#[test]
fn a_waiter_blocked_in_the_ioctl_is_woken_by_another_thread() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let a = create_event(&c, KFD_IOC_EVENT_SIGNAL, true, 0)
        .unwrap()
        .event_id;
    thread::scope(|s| {
        s.spawn(|| {
            // Set only once the waiter is inside WAIT_EVENTS, so the wake-up path runs.
            wait_until("a thread in WAIT_EVENTS", || c.p.events().waiting() == 1);
            c.p.call::<SetEvent>(&mut kfd_ioctl_set_event_args {
                event_id: a,
                pad: 0,
            })
            .unwrap();
        });
        assert_eq!(
            wait(&c, &[a], true, 10_000),
            (Ok(0), KFD_IOC_WAIT_RESULT_COMPLETE)
        );
    });
}

#[test]
fn every_memory_kind_allocates_maps_and_frees() {
    let model = model(Preset::Gfx900, 2);
    let c = Client::new(&model);
    let node = c.node();
    let w = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    // VRAM: accounted, CPU-mappable through the render node, visible to the GPU.
    let before = node.vram_available();
    let vram = c
        .alloc_on(c.gpu(), 1 << 20, KFD_IOC_ALLOC_MEM_FLAGS_VRAM | w)
        .unwrap();
    assert_eq!(before - node.vram_available(), 1 << 20);
    vram.write_u64(64, 0x1234_5678);
    let vm = c.p.model().node(c.gpu()).unwrap().clone();
    let _ = vm;
    // GTT with the same checks.
    let gtt = c.gtt(8192);
    gtt.write_u64(0, 7);
    assert_eq!(gtt.read_u64(0), 7);
    // USERPTR: host memory registered at a different GPU address.
    // Leaked: the registration outlives this test's borrows, as USERPTR memory must.
    let host: &mut [u64] = Vec::leak(vec![0u64; 1024 + 512]);
    let aligned = (host.as_mut_ptr() as u64).next_multiple_of(4096);
    let mut up = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: 0x5000_0000_0000,
        size: 4096,
        mmap_offset: aligned,
        gpu_id: c.gpu(),
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | w,
        ..Default::default()
    };
    // SAFETY: a USERPTR of one page at `aligned`, inside `host` (12 KiB, so the page fits), which
    // is leaked and so outlives the registration; the test never reads or writes `host` again, and
    // no GPU work touches the buffer.
    unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut up) }.unwrap();
    assert_eq!(up.mmap_offset, aligned);
    up.mmap_offset = 0x10_0000; // nothing is mapped there
    up.va_addr += 1 << 20;
    assert_errno(
        // SAFETY: USERPTR at 0x10_0000, where nothing is mapped: the model looks the range up in
        // the process's mappings (PROCMAP_QUERY or /proc/self/maps), refuses it with EFAULT, and
        // never populates or dereferences it.
        unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut up) },
        Errno::EFAULT,
        "userptr not mapped",
    );
    up.mmap_offset = aligned + 8;
    assert_errno(
        // SAFETY: USERPTR at `aligned + 8`: the model refuses an address that is not page aligned
        // (EINVAL) before looking it up, populating it or registering it; it dereferences nothing.
        unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut up) },
        Errno::EINVAL,
        "userptr not page aligned",
    );
    // DOORBELL: exactly the 8 KiB slice; mmap offset on the KFD fd.
    let db = c
        .alloc_on(c.gpu(), 8192, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | w)
        .unwrap();
    assert_errno(
        c.alloc_on(c.gpu(), 4096, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL)
            .map(|_| ()),
        Errno::EINVAL,
        "doorbell size",
    );
    // MMIO remap: one page, mapped on the KFD fd.
    let mmio = c
        .alloc_on(c.gpu(), 4096, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP | w)
        .unwrap();
    let off = KfdMmapOffset {
        kind: KfdMmapType::Mmio,
        gpu_id: c.gpu(),
        value: 0,
    }
    .encode();
    c.p.mmap(off, 4096).unwrap();
    assert_errno(
        c.p.mmap(off, 8192).map(|_| ()),
        Errno::EINVAL,
        "MMIO page is one page",
    );
    assert_errno(
        c.p.mmap(
            KfdMmapOffset {
                kind: KfdMmapType::Mmio,
                gpu_id: 0x77,
                value: 0,
            }
            .encode(),
            4096,
        )
        .map(|_| ()),
        Errno::ENODEV,
        "unknown gpu",
    );
    // No type, or two types.
    assert_errno(
        c.alloc_on(c.gpu(), 4096, w).map(|_| ()),
        Errno::EINVAL,
        "no memory type",
    );
    assert_errno(
        c.alloc_on(
            c.gpu(),
            4096,
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT,
        )
        .map(|_| ()),
        Errno::EINVAL,
        "two types",
    );
    assert_errno(
        c.alloc_on(c.gpu(), 0, KFD_IOC_ALLOC_MEM_FLAGS_GTT)
            .map(|_| ()),
        Errno::EINVAL,
        "size 0",
    );
    // VRAM beyond the device.
    assert_errno(
        c.alloc_on(c.gpu(), 64 << 30, KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
            .map(|_| ()),
        Errno::ENOMEM,
        "VRAM exhausted",
    );

    // Freeing a mapped buffer is EBUSY; unmap then free.
    let mut f = kfd_ioctl_free_memory_of_gpu_args {
        handle: vram.handle,
    };
    assert_errno(
        c.p.call::<FreeMemoryOfGpu>(&mut f),
        Errno::EBUSY,
        "still mapped",
    );
    for b in [&vram, &gtt, &db, &mmio] {
        c.free(b).unwrap();
    }
    assert_eq!(node.vram_available(), before);
    assert_errno(
        c.p.call::<FreeMemoryOfGpu>(&mut f),
        Errno::EINVAL,
        "double free",
    );
    // Handles carry the GPU id.
    assert_eq!(gtt.handle >> 32, u64::from(c.gpu()));
}

/// A USERPTR registration populates its range for writing, as amdgpu's
/// `amdgpu_ttm_tt_get_user_pages` does with `hmm_range_fault` (KFD registers user memory
/// writable): fresh anonymous pages are resident after ALLOC, each faulted in once, so the
/// CPU's and the GPU's accesses find them; the content stays zero.
/// Thousands of live buffers are blocks of a few shared files (the real driver's buffers are
/// kernel objects, not descriptors of the client: kfdtest's `KFDLocalMemoryTest.Fragmentation`
/// keeps more than a process may have descriptors), each its own bytes, and a block given out
/// again reads zeros.
#[test]
fn many_buffers_are_blocks_of_a_few_files() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    const N: usize = 3000;
    let flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM
        | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
        | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
    let bufs: Vec<Buf> = (0..N)
        .map(|_| c.alloc_on(c.gpu(), 4096, flags).expect("vram"))
        .collect();
    let mut files: Vec<*const kfd_model::hw::DeviceMemory> = bufs
        .iter()
        .map(|b| std::sync::Arc::as_ptr(&b.mem.as_ref().unwrap().memory))
        .collect();
    files.sort();
    files.dedup();
    assert_eq!(
        files.len(),
        1,
        "{N} buffers of 4 KiB lie in one shared file"
    );
    for (i, b) in bufs.iter().enumerate() {
        b.write_u32(0, 0x5eed_0000 + i as u32);
        b.write_u32(4092, !(i as u32));
    }
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(
            (b.read_u32(0), b.read_u32(4092)),
            (0x5eed_0000 + i as u32, !(i as u32)),
            "buffer {i} holds its own bytes"
        );
    }
    let victim = &bufs[N / 2];
    let victim_place = victim.mem.as_ref().unwrap().offset;
    c.free(victim).unwrap();
    let again = c.alloc_on(c.gpu(), 4096, flags).unwrap();
    assert_eq!(
        again.mem.as_ref().unwrap().offset,
        victim_place,
        "the freed block is the best fit"
    );
    let mut page = [0xAAu8; 4096];
    again.read_bytes(0, &mut page);
    assert!(page.iter().all(|&b| b == 0), "a reused block reads zeros");
}

#[test]
fn a_userptr_registration_populates_its_pages() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    const PAGES: usize = 64;
    let len = std::num::NonZeroUsize::new(PAGES * 4096).unwrap();
    // SAFETY: a fresh private mapping the test owns (never unmapped: the registration
    // outlives it, as USERPTR memory must).
    let mem = unsafe {
        nix::sys::mman::mmap_anonymous(
            None,
            len,
            nix::sys::mman::ProtFlags::PROT_READ | nix::sys::mman::ProtFlags::PROT_WRITE,
            nix::sys::mman::MapFlags::MAP_PRIVATE,
        )
    }
    .unwrap();
    let addr = mem.as_ptr() as u64;
    let resident = || {
        let mut v = [0u8; PAGES];
        // SAFETY: mincore reads the page tables of the test's mapping into one byte per page.
        let r = unsafe { libc::mincore(mem.as_ptr(), PAGES * 4096, v.as_mut_ptr()) };
        assert_eq!(r, 0);
        v.iter().filter(|&&b| b & 1 != 0).count()
    };
    assert_eq!(resident(), 0, "untouched before");
    let mut up = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: addr,
        size: (PAGES * 4096) as u64,
        mmap_offset: addr,
        gpu_id: c.gpu(),
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    // SAFETY: a USERPTR of exactly `mem`, this test's anonymous read-write mapping, never unmapped,
    // so it outlives the registration; the test only asks `mincore` about it, holding no reference
    // into it.
    unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut up) }.unwrap();
    assert_eq!(
        resident(),
        PAGES,
        "every page faulted in by the registration"
    );
    // SAFETY: reads the test's own (registered) mapping.
    let words = unsafe { std::slice::from_raw_parts(addr as *const u64, PAGES * 512) };
    assert!(words.iter().all(|&w| w == 0), "content unchanged");
}

#[test]
fn one_buffer_mapped_to_two_gpus() {
    let model = model(Preset::Gfx90a, 2);
    let c = Client::new(&model);
    let b = c.gtt(4096);
    let ids = [c.gpus[0], c.gpus[1]];
    let mut m = kfd_ioctl_map_memory_to_gpu_args {
        handle: b.handle,
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: 2,
        n_success: 1,
    };
    // n_success = 1: the retry skips the first GPU, already mapped.
    c.p.call::<MapMemoryToGpu>(&mut m).unwrap();
    assert_eq!(m.n_success, 2);
    let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
        handle: b.handle,
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: 2,
        n_success: 0,
    };
    c.p.call::<UnmapMemoryFromGpu>(&mut u).unwrap();
    assert_eq!(u.n_success, 2);
    let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: b.handle };
    c.p.call::<FreeMemoryOfGpu>(&mut f).unwrap();
}

#[test]
fn apertures_and_misc_queries() {
    let model = model(Preset::Gfx900, 2);
    let c = Client::new(&model);
    let mut n = kfd_ioctl_get_process_apertures_new_args::default();
    // SAFETY: `num_of_nodes` is 0: the model only returns the count and writes nothing through
    // `kfd_process_device_apertures_ptr` (0).
    unsafe { ioctl_unchecked::<GetProcessAperturesNew>(&c.p, &mut n) }.unwrap();
    assert_eq!(n.num_of_nodes, 2);
    let mut ap = [kfd_process_device_apertures::default(); 2];
    n.kfd_process_device_apertures_ptr = ap.as_mut_ptr() as u64;
    // SAFETY: `kfd_process_device_apertures_ptr` is `ap`, 2 entries of this test, untouched until
    // the call returns; the model writes at most `num_of_nodes` (2).
    unsafe { ioctl_unchecked::<GetProcessAperturesNew>(&c.p, &mut n) }.unwrap();
    assert_eq!((ap[0].gpu_id, ap[1].gpu_id), (c.gpus[0], c.gpus[1]));
    assert_eq!(ap[0].lds_base, 0x1_0000_0000_0000);
    assert_eq!(ap[0].scratch_base, 0x2_0000_0000_0000);
    let mut old = kfd_ioctl_get_process_apertures_args::default();
    c.p.call::<GetProcessApertures>(&mut old).unwrap();
    assert_eq!(old.num_of_nodes, 2);
    assert_eq!(old.process_apertures[1], ap[1]);

    let mut clk = kfd_ioctl_get_clock_counters_args {
        gpu_id: c.gpu(),
        ..Default::default()
    };
    c.p.call::<GetClockCounters>(&mut clk).unwrap();
    let first = clk.gpu_clock_counter;
    thread::sleep(Duration::from_millis(2));
    c.p.call::<GetClockCounters>(&mut clk).unwrap();
    assert!(clk.gpu_clock_counter > first);
    assert_eq!(clk.system_clock_freq, 1_000_000_000);

    let mut avail = kfd_ioctl_get_available_memory_args {
        gpu_id: c.gpu(),
        ..Default::default()
    };
    c.p.call::<AvailableMemory>(&mut avail).unwrap();
    assert_eq!(avail.available, 16 << 30);

    // XNACK: gfx900 cannot turn it on; querying works.
    let mut x = kfd_ioctl_set_xnack_mode_args { xnack_enabled: -1 };
    c.p.call::<SetXnackMode>(&mut x).unwrap();
    assert_eq!(x.xnack_enabled, 0);
    x.xnack_enabled = 1;
    assert_errno(
        c.p.call::<SetXnackMode>(&mut x),
        Errno::EPERM,
        "no XNACK on gfx900",
    );

    let mut pol = kfd_ioctl_set_memory_policy_args {
        gpu_id: c.gpu(),
        default_policy: 2,
        ..Default::default()
    };
    assert_errno(
        c.p.call::<SetMemoryPolicy>(&mut pol),
        Errno::EINVAL,
        "bad policy",
    );
    pol.default_policy = KFD_IOC_CACHE_POLICY_NONCOHERENT;
    c.p.call::<SetMemoryPolicy>(&mut pol).unwrap();

    let mut tiles = [0xFFu32; 4];
    let mut macros = [0xFFu32; 2];
    let mut t = kfd_ioctl_get_tile_config_args {
        tile_config_ptr: tiles.as_mut_ptr() as u64,
        macro_tile_config_ptr: macros.as_mut_ptr() as u64,
        num_tile_configs: 4,
        num_macro_tile_configs: 2,
        gpu_id: c.gpu(),
        ..Default::default()
    };
    // SAFETY: `tile_config_ptr` and `macro_tile_config_ptr` are `tiles` (4 u32) and `macros` (2
    // u32) of this test, untouched until the call returns; the model writes at most
    // `num_tile_configs` and `num_macro_tile_configs` entries.
    unsafe { ioctl_unchecked::<GetTileConfig>(&c.p, &mut t) }.unwrap();
    assert_eq!((t.num_tile_configs, tiles), (4, [0; 4]));

    let mut rt = kfd_ioctl_runtime_enable_args {
        mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
        ..Default::default()
    };
    // SAFETY: RUNTIME_ENABLE's only address is `r_debug`, 0 here, which the model only records for
    // a debugger and never dereferences.
    unsafe { ioctl_unchecked::<RuntimeEnable>(&c.p, &mut rt) }.unwrap();
    assert_errno(
        // SAFETY: RUNTIME_ENABLE's only address is `r_debug`, 0 here, which the model only records
        // for a debugger and never dereferences.
        unsafe { ioctl_unchecked::<RuntimeEnable>(&c.p, &mut rt) },
        Errno::EBUSY,
        "runtime already enabled",
    );

    let mut acq = kfd_ioctl_acquire_vm_args {
        drm_fd: 12345,
        gpu_id: c.gpu(),
    };
    assert_errno(
        c.p.call::<AcquireVm>(&mut acq),
        Errno::EINVAL,
        "not a render fd",
    );
    acq.drm_fd = c.renders[1].fd as u32;
    assert_errno(
        c.p.call::<AcquireVm>(&mut acq),
        Errno::EINVAL,
        "render node of another GPU",
    );
    acq.drm_fd = c.renders[0].fd as u32;
    c.p.call::<AcquireVm>(&mut acq).unwrap();
    let other = model.open_render_node(128).unwrap();
    acq.drm_fd = other.fd as u32;
    assert_errno(
        c.p.call::<AcquireVm>(&mut acq),
        Errno::EBUSY,
        "another file of the same GPU",
    );
}

/// A render file bound to a real descriptor is the same file through every duplicate of it
/// (libhsakmt 6.x hands ACQUIRE_VM libdrm_amdgpu's `F_DUPFD_CLOEXEC` copy), lives while any
/// of them is open, and is not the file of another open of the same node.
#[test]
fn acquire_vm_through_a_duplicate_of_the_render_descriptor() {
    use std::os::fd::AsRawFd;
    let model = model(Preset::Gfx900, 1);
    let c = Client::unbound(&model);
    let memfd = |name| {
        nix::sys::memfd::memfd_create(name, nix::sys::memfd::MemFdCreateFlag::empty()).unwrap()
    };
    let opened = memfd(c"renderD128");
    let mut render = model.open_render_node(128).unwrap();
    let synthetic = render.fd;
    render.bind_fd(opened.as_raw_fd()).unwrap();
    let dup =
        nix::fcntl::fcntl(opened.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(0)).unwrap();
    drop(opened);
    let mut acq = kfd_ioctl_acquire_vm_args {
        drm_fd: synthetic as u32,
        gpu_id: c.gpu(),
    };
    assert_errno(
        c.p.call::<AcquireVm>(&mut acq),
        Errno::EINVAL,
        "the synthetic number is gone once a real descriptor is bound",
    );
    let other_open = memfd(c"other");
    acq.drm_fd = other_open.as_raw_fd() as u32;
    assert_errno(
        c.p.call::<AcquireVm>(&mut acq),
        Errno::EINVAL,
        "a descriptor of another open file",
    );
    acq.drm_fd = dup as u32;
    c.p.call::<AcquireVm>(&mut acq)
        .expect("ACQUIRE_VM through the duplicate");
    let again = nix::unistd::dup(dup).unwrap();
    acq.drm_fd = again as u32;
    c.p.call::<AcquireVm>(&mut acq)
        .expect("the same file again: no EBUSY");
    nix::unistd::close(again).unwrap();
    nix::unistd::close(dup).unwrap();
    drop(render);
}

#[test]
fn termination_releases_everything() {
    let model = model(Preset::Gfx900, 1);
    let node = model.nodes()[0].clone();
    let gart_before = node.gpu.gart.chunks_in_use();
    let vram_before = node.vram_available();
    let survivor = Client::new(&model);
    survivor
        .create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL)
        .unwrap();
    {
        let c = Client::new(&model);
        for t in [
            KFD_IOC_QUEUE_TYPE_COMPUTE,
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            KFD_IOC_QUEUE_TYPE_SDMA,
        ] {
            c.create_queue(t).unwrap();
        }
        c.alloc_on(c.gpu(), 1 << 20, KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
            .unwrap();
        for _ in 0..5 {
            create_event(&c, KFD_IOC_EVENT_SIGNAL, false, 0).unwrap();
        }
        assert_eq!(model.process_count(), 2);
        assert_eq!(node.counters().total_queue_count, 4);
        assert_eq!(node.gpu.doorbells.slices_in_use(), 2);
        assert!(c.p.buffer_count() > 5);
        // c and its open render nodes drop here: process termination.
    }
    assert_eq!(model.process_count(), 1);
    let cnt = node.counters();
    assert_eq!(
        (
            cnt.processes_count,
            cnt.active_queue_count,
            cnt.total_queue_count
        ),
        (1, 1, 1)
    );
    assert_eq!(node.gpu.doorbells.slices_in_use(), 1);
    assert_eq!(
        node.gpu.hws.mapped_queues().len(),
        1,
        "the survivor's queue is mapped again"
    );
    drop(survivor);
    let cnt = node.counters();
    assert_eq!(
        (
            cnt.processes_count,
            cnt.active_queue_count,
            cnt.total_queue_count
        ),
        (0, 0, 0)
    );
    assert_eq!(node.gpu.doorbells.slices_in_use(), 0);
    assert_eq!(
        node.gpu.gart.chunks_in_use(),
        gart_before,
        "every MQD and runlist IB returned"
    );
    assert_eq!(node.vram_available(), vram_before);
    assert!(node.gpu.hws.mapped_queues().is_empty());
}
