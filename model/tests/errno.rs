//! Every errno row of facts §9.9 that a client can reach, and the dispatcher rules of §7.2.

mod common;

use common::*;
use kfd_model::{Errno, KernelVersion, ModelConfig, Preset, SchedPolicy};
use kfd_sys::*;

fn create(c: &Client, edit: impl FnOnce(&mut kfd_ioctl_create_queue_args)) -> Result<i32, Errno> {
    let bufs = c.queue_buffers(c.gpu(), 4096, true);
    let mut a = c.queue_args(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, &bufs);
    edit(&mut a);
    c.p.call::<CreateQueue>(&mut a)
}

#[test]
fn create_queue_argument_checks() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    assert_errno(
        create(&c, |a| a.queue_percentage = 101),
        Errno::EINVAL,
        "percentage > 100",
    );
    // Only the low byte is the percentage; the next byte is the target XCC.
    create(&c, |a| a.queue_percentage = 0x0164).unwrap();
    assert_errno(
        create(&c, |a| a.queue_priority = 16),
        Errno::EINVAL,
        "priority > 15",
    );
    assert_errno(
        create(&c, |a| a.ring_size = 3000),
        Errno::EINVAL,
        "ring size not a power of two",
    );
    assert_errno(
        create(&c, |a| a.ring_base_address = 0xffff_8000_0000_0000),
        Errno::EFAULT,
        "ring not user",
    );
    assert_errno(
        create(&c, |a| a.read_pointer_address = u64::MAX - 2),
        Errno::EFAULT,
        "rptr not user",
    );
    assert_errno(
        create(&c, |a| a.write_pointer_address = 0x8000_0000_0000),
        Errno::EFAULT,
        "wptr not user",
    );
    let e = create(&c, |a| a.queue_type = 5).unwrap_err();
    assert_eq!(e, Errno::ENOTSUPP);
    assert_eq!(
        e.0, 524,
        "the kernel-internal ENOTSUPP, not EOPNOTSUPP (95)"
    );
    assert_errno(
        create(&c, |a| a.gpu_id = 0x1234),
        Errno::EINVAL,
        "unknown gpu id",
    );
    let sdma = c.queue_buffers(c.gpu(), 4096, false);
    let mut a = c.queue_args(c.gpu(), KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID, &sdma);
    a.sdma_engine_id = 2; // gfx900 has engines 0 and 1.
    assert_errno(
        c.p.call::<CreateQueue>(&mut a),
        Errno::EINVAL,
        "SDMA engine id > max",
    );
}

#[test]
fn binding_needs_the_vm_acquired() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::unbound(&model);
    let mut a = kfd_ioctl_create_queue_args {
        ring_base_address: 0x10_0000,
        write_pointer_address: 0x20_0000,
        read_pointer_address: 0x20_0008,
        ring_size: 4096,
        gpu_id: c.gpu(),
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE,
        queue_percentage: 100,
        ..Default::default()
    };
    assert_errno(c.p.call::<CreateQueue>(&mut a), Errno::ESRCH, "bind failed");
    let mut m = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: 0x1000_0000,
        size: 4096,
        gpu_id: c.gpu(),
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT,
        ..Default::default()
    };
    assert_errno(
        // SAFETY: a GTT allocation, no USERPTR flag: the argument carries no user address, and the
        // process has no VM yet (ENODEV).
        unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut m) },
        Errno::ENODEV,
        "alloc before ACQUIRE_VM",
    );
}

#[test]
fn linux_6_12_validates_queue_buffers_against_the_gpu_vm() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let sizes = c.node().queue_sizes;
    let stray = c.gtt(8192);
    assert_errno(
        create(&c, |a| a.read_pointer_address = 0x7000_0000_0000),
        Errno::EINVAL,
        "rptr not mapped",
    );
    assert_errno(
        create(&c, |a| a.write_pointer_address = stray.va + 4096),
        Errno::EINVAL,
        "wptr not a page-sized mapping start",
    );
    assert_errno(
        create(&c, |a| a.ring_size = 8192),
        Errno::EINVAL,
        "ring not exactly one mapping of ring_size (a one-page mapping for two pages)",
    );
    // The kernel compares in pages: a ring smaller than a page only has to start a mapping.
    let id = create(&c, |a| a.ring_size = 1024).map(|_| ());
    assert_eq!(id, Ok(()), "a 1 KiB ring in a one-page buffer");
    assert_errno(
        create(&c, |a| a.eop_buffer_size = 2048),
        Errno::EINVAL,
        "EOP smaller than the topology's",
    );
    assert_errno(
        create(&c, |a| a.ctl_stack_size = sizes.ctl_stack_size + 4096),
        Errno::EINVAL,
        "ctl stack size",
    );
    assert_errno(
        create(&c, |a| a.ctx_save_restore_size = sizes.cwsr_size - 4096),
        Errno::EINVAL,
        "CWSR too small",
    );
    assert_errno(
        create(&c, |a| a.ctx_save_restore_address = stray.va),
        Errno::EINVAL,
        "CWSR mapping size",
    );
    create(&c, |_| {}).unwrap();
}

#[test]
fn linux_6_1_checks_none_of_that() {
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_kernel(KernelVersion::Linux6_1));
    let c = Client::new(&model);
    create(&c, |a| {
        a.read_pointer_address = 0x7000_0000_0000;
        a.ctl_stack_size = 0x1000;
        a.eop_buffer_size = 4096;
    })
    .unwrap();
    let mut v = kfd_ioctl_get_version_args::default();
    c.p.call::<GetVersion>(&mut v).unwrap();
    assert_eq!((v.major_version, v.minor_version), (1, 11));
}

#[test]
fn queue_limits() {
    // 127 queues per process per device, then ENOSPC.
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    for _ in 0..127 {
        c.create_queue_on(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 0)
            .unwrap();
    }
    assert_errno(
        c.create_queue_on(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 0)
            .map(|_| ()),
        Errno::ENOSPC,
        "128th queue",
    );

    // The device limit (amdkfd.max_num_of_queues_per_device), then EPERM.
    let mut cfg = ModelConfig::new(Preset::Gfx900);
    cfg.max_queues_per_device = 3;
    let model = model_with(cfg);
    let a = Client::new(&model);
    let b = Client::new(&model);
    a.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    a.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    b.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    assert_errno(
        b.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).map(|_| ()),
        Errno::EPERM,
        "device queue limit",
    );
    assert_eq!(b.p.queue_count(), 1, "the failed queue was rolled back");
}

#[test]
fn no_free_sdma_queue_is_enomem() {
    // Vega 10: 2 engines × 2 queues.
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    for _ in 0..4 {
        c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    }
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).map(|_| ()),
        Errno::ENOMEM,
        "no free SDMA queue",
    );
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA_XGMI).map(|_| ()),
        Errno::ENOMEM,
        "no xGMI engines",
    );
}

#[test]
fn sched_policy_1_refuses_oversubscription() {
    let model = model_with(
        ModelConfig::new(Preset::Gfx1030).with_sched_policy(SchedPolicy::HwsNoOversubscription),
    );
    let c = Client::new(&model);
    for _ in 0..8 {
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    }
    assert_errno(
        c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).map(|_| ()),
        Errno::EPERM,
        "9th compute queue",
    );
    // SDMA queues are not limited by HQDs.
    c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
}

#[test]
fn update_destroy_and_cu_mask_errors() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let (q, _) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    let mut u = kfd_ioctl_update_queue_args {
        queue_id: 77,
        queue_percentage: 50,
        ..Default::default()
    };
    assert_errno(
        c.p.call::<UpdateQueue>(&mut u),
        Errno::EFAULT,
        "update unknown queue (sic)",
    );
    assert_errno(c.destroy_queue(77), Errno::EINVAL, "destroy unknown queue");
    u.queue_id = q;
    u.queue_priority = 16;
    assert_errno(
        c.p.call::<UpdateQueue>(&mut u),
        Errno::EINVAL,
        "update priority > 15",
    );
    u.queue_priority = 7;
    u.ring_size = 3000;
    assert_errno(
        c.p.call::<UpdateQueue>(&mut u),
        Errno::EINVAL,
        "update ring size",
    );
    let mask = [0xFFFF_FFFFu32; 2];
    let mut m = kfd_ioctl_set_cu_mask_args {
        queue_id: q,
        num_cu_mask: 0,
        cu_mask_ptr: mask.as_ptr() as u64,
    };
    assert_errno(
        c.p.call::<SetCuMask>(&mut m),
        Errno::EINVAL,
        "CU mask count 0",
    );
    m.num_cu_mask = 48;
    assert_errno(
        c.p.call::<SetCuMask>(&mut m),
        Errno::EINVAL,
        "CU mask not a multiple of 32",
    );
    m.num_cu_mask = 64;
    m.cu_mask_ptr = 8;
    assert_errno(
        c.p.call::<SetCuMask>(&mut m),
        Errno::EFAULT,
        "CU mask pointer",
    );
    m.cu_mask_ptr = mask.as_ptr() as u64;
    c.p.call::<SetCuMask>(&mut m).unwrap();
}

#[test]
fn signal_slots_run_out() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let mut n = 0;
    loop {
        let mut e = kfd_ioctl_create_event_args {
            event_type: KFD_IOC_EVENT_SIGNAL,
            ..Default::default()
        };
        match c.p.call::<CreateEvent>(&mut e) {
            Ok(_) => n += 1,
            Err(e) => {
                assert_eq!(e, Errno::ENOSPC);
                break;
            }
        }
    }
    assert_eq!(
        n, 255,
        "the kernel page offers 256 slots and id 0 is reserved"
    );
}

#[test]
fn dispatcher_rules() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    // Unknown command numbers.
    let mut b = [0u8; 8];
    assert_eq!(
        raw_ioctl(&c.p, ioctl::iowr::<[u8; 8]>(0x27), &mut b),
        Err(Errno::ENOTTY)
    );
    assert_eq!(
        raw_ioctl(&c.p, ioctl::iowr::<[u8; 8]>(0x00), &mut b),
        Err(Errno::ENOTTY)
    );
    assert_eq!(
        raw_ioctl(&c.p, ioctl::iowr::<[u8; 8]>(0x90), &mut b),
        Err(Errno::ENOTTY)
    );
    // The deprecated debugger ioctls.
    for req in [
        AMDKFD_IOC_DBG_REGISTER_DEPRECATED,
        AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED,
    ] {
        let mut a = [0u8; 16];
        assert_eq!(raw_ioctl(&c.p, req, &mut a), Err(Errno::EPERM));
    }
    // A buffer shorter than the request's size is a copy fault.
    let mut short = [0u8; 4];
    assert_eq!(
        raw_ioctl(&c.p, AMDKFD_IOC_GET_VERSION, &mut short),
        Err(Errno::EFAULT)
    );
    // Lookup is by number: a GET_VERSION with a 16-byte size gets the 8 bytes and keeps the rest.
    let mut big = [0xAAu8; 16];
    raw_ioctl(&c.p, ioctl::ior::<[u8; 16]>(0x01), &mut big).unwrap();
    assert_eq!(u32::from_le_bytes(big[0..4].try_into().unwrap()), 1);
    assert_eq!(u32::from_le_bytes(big[4..8].try_into().unwrap()), 17);
    assert_eq!(
        &big[8..],
        &[0u8; 8],
        "IOR: the kernel's zero-filled buffer is copied back"
    );
}

#[test]
fn the_88_byte_create_queue_of_libhsakmt_5_2_still_works() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let bufs = c.queue_buffers(c.gpu(), 4096, false);
    let new = c.queue_args(c.gpu(), KFD_IOC_QUEUE_TYPE_SDMA, &bufs);
    let mut old =
        v1_8::kfd_ioctl_create_queue_args::read_from_bytes(&new.as_bytes()[..88]).unwrap();
    c.p.call::<v1_8::CreateQueue>(&mut old).unwrap();
    assert_eq!(
        KfdMmapOffset::decode(old.doorbell_offset).kind,
        KfdMmapType::Doorbell
    );
    assert_eq!(c.p.queue_count(), 1);
    // The DKMS debugger entry answers its version query.
    let mut t = v1_8::kfd_ioctl_dbg_trap_args {
        op: v1_8::KFD_IOC_DBG_TRAP_GET_VERSION,
        ..Default::default()
    };
    // SAFETY: the DKMS DBG_TRAP version query answers in the argument itself; `ptr` is 0 and never
    // dereferenced.
    unsafe { ioctl_unchecked::<v1_8::DbgTrap>(&c.p, &mut t) }.unwrap();
    assert_eq!((t.data1, t.data2), (10, 1));
}

#[test]
fn libhsakmt_5_2_enables_the_runtime_through_the_dkms_debugger_entry() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let enable = |on: u32| {
        let mut t = v1_8::kfd_ioctl_dbg_trap_args {
            op: v1_8::KFD_IOC_DBG_TRAP_RUNTIME_ENABLE,
            pid: std::process::id(),
            data1: on,
            data2: 1,
            ..Default::default()
        };
        // SAFETY: the DKMS DBG_TRAP's RUNTIME_ENABLE takes `ptr` (0) as `r_debug`, which the model
        // only records and never dereferences.
        unsafe { ioctl_unchecked::<v1_8::DbgTrap>(&c.p, &mut t) }
    };
    assert_eq!(enable(1), Ok(0));
    assert_errno(
        enable(1),
        Errno::EBUSY,
        "already enabled, as RUNTIME_ENABLE (0x25) says",
    );
    assert_eq!(enable(0), Ok(0));
    // Another pid is a debugger operation on a process nobody attached to.
    let mut t = v1_8::kfd_ioctl_dbg_trap_args {
        op: v1_8::KFD_IOC_DBG_TRAP_RUNTIME_ENABLE,
        pid: 1,
        data1: 1,
        ..Default::default()
    };
    assert_errno(
        // SAFETY: another pid: the DKMS DBG_TRAP is ESRCH before any field but `op` and `pid` is
        // used; `ptr` is 0.
        unsafe { ioctl_unchecked::<v1_8::DbgTrap>(&c.p, &mut t) },
        Errno::ESRCH,
        "pid 1",
    );
    c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    assert_errno(enable(1), Errno::EEXIST, "queues exist");
}

/// RUNTIME_ENABLE (interface 1.13) as `kfd_ioctl_runtime_enable`: enabling twice is EBUSY,
/// enabling once queues exist EEXIST, disabling always succeeds and allows enabling again;
/// nothing is written back. DBG_TRAP on a process that is not debug-enabled is EINVAL, on a
/// pid with no KFD process ESRCH. Linux 6.1 (interface 1.11) has neither (ENOTTY).
#[test]
fn runtime_enable_and_the_debug_state_as_the_kernel() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let runtime = |mode_mask: u32| {
        let mut r = kfd_ioctl_runtime_enable_args {
            r_debug: 0x7fff_0000_1000,
            mode_mask,
            capabilities_mask: 0xabcd,
        };
        // SAFETY: RUNTIME_ENABLE's only address is `r_debug`, a made-up value here, which the model
        // only records for a debugger and never dereferences.
        unsafe { ioctl_unchecked::<RuntimeEnable>(&c.p, &mut r) }.map(|_| r.capabilities_mask)
    };
    let enable = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK | KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK;
    assert_eq!(
        runtime(0),
        Ok(0xabcd),
        "disabling a disabled runtime; nothing written back"
    );
    assert_eq!(runtime(enable), Ok(0xabcd));
    assert_errno(runtime(enable), Errno::EBUSY, "enabled twice");
    assert_eq!(runtime(0), Ok(0xabcd));
    assert_eq!(
        runtime(KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK),
        Ok(0xabcd),
        "again after disable"
    );
    assert_eq!(runtime(0), Ok(0xabcd));
    c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).unwrap();
    assert_errno(runtime(enable), Errno::EEXIST, "queues exist");

    let trap = |pid: u32, op: u32| {
        let mut t = kfd_ioctl_dbg_trap_args {
            pid,
            op,
            ..Default::default()
        };
        // SAFETY: every address field is 0, and the model refuses a DBG_TRAP on a process that is
        // not debug-enabled (ESRCH, EINVAL, or not modelled) looking only at `pid` and `op`.
        unsafe { ioctl_unchecked::<DbgTrap>(&c.p, &mut t) }
    };
    let me = std::process::id();
    assert_errno(
        trap(me, KFD_IOC_DBG_TRAP_SET_FLAGS),
        Errno::EINVAL,
        "not debug-enabled",
    );
    assert_errno(
        trap(me, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT),
        Errno::EINVAL,
        "not debug-enabled",
    );
    assert_errno(
        trap(1, KFD_IOC_DBG_TRAP_ENABLE),
        Errno::ESRCH,
        "pid 1 has no KFD process here",
    );

    let old = model_with(ModelConfig::new(Preset::Gfx900).with_kernel(KernelVersion::Linux6_1));
    let c = Client::new(&old);
    let mut r = kfd_ioctl_runtime_enable_args {
        mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
        ..Default::default()
    };
    assert_errno(
        // SAFETY: on Linux 6.1 RUNTIME_ENABLE is ENOTTY before the argument is looked at; its only
        // address, `r_debug`, is 0 anyway.
        unsafe { ioctl_unchecked::<RuntimeEnable>(&c.p, &mut r) },
        Errno::ENOTTY,
        "Linux 6.1 has no RUNTIME_ENABLE",
    );
}

#[test]
fn copy_out_happens_even_on_error() {
    let model = model(Preset::Gfx900, 2);
    let c = Client::new(&model);
    let b = c.gtt(4096);
    // Map to [gpu0, bogus]: the first succeeds, n_success says so, then EINVAL.
    let ids = [c.gpus[0], 0xdead];
    let mut m = kfd_ioctl_map_memory_to_gpu_args {
        handle: b.handle,
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: 2,
        n_success: 0,
    };
    assert_errno(
        c.p.call::<MapMemoryToGpu>(&mut m),
        Errno::EINVAL,
        "unknown device",
    );
    assert_eq!(m.n_success, 1, "copied back despite the error");
    m.n_success = 3;
    assert_errno(
        c.p.call::<MapMemoryToGpu>(&mut m),
        Errno::EINVAL,
        "n_success > n_devices",
    );
}

/// The raw entry ([`kfd_model::Process::ioctl`]), for the dispatcher's rules on codes that
/// name no request type: unknown numbers, deprecated entries, sizes other than the argument's.
fn raw_ioctl(p: &kfd_model::Process, request: u32, bytes: &mut [u8]) -> kfd_model::KResult<i32> {
    // SAFETY: the argument bytes given here are zeros or 0xAA filler, never an address the
    // model would use: the requests are unknown, refused (EPERM, EFAULT) or GET_VERSION.
    unsafe { p.ioctl(request, bytes) }
}

#[test]
fn gws_is_one_queue_per_process_on_each_device() {
    let model = model(Preset::Gfx900, 2);
    let c = Client::new(&model);
    let gws = |queue_id: u32, num_gws: u32| {
        let mut a = kfd_ioctl_alloc_queue_gws_args {
            queue_id,
            num_gws,
            ..Default::default()
        };
        c.p.call::<AllocQueueGws>(&mut a)
    };
    let (q0, _) = c
        .create_queue_on(c.gpus[0], KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100)
        .unwrap();
    let (q1, _) = c
        .create_queue_on(c.gpus[1], KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100)
        .unwrap();
    let (q0b, _) = c
        .create_queue_on(c.gpus[0], KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100)
        .unwrap();
    assert_errno(gws(q0, 0), Errno::EINVAL, "release without GWS");
    gws(q0, 1).unwrap();
    // ROCr gives each GPU's cooperative queue GWS: the other device is not affected.
    gws(q1, 1).unwrap();
    assert_errno(gws(q0b, 1), Errno::EBUSY, "a second GWS queue on device 0");
    assert_errno(gws(q0, 1), Errno::EBUSY, "the same queue again");
    gws(q0, 0).unwrap();
    gws(q0b, 1).unwrap();
    assert_errno(gws(99, 1), Errno::EINVAL, "no such queue");
}
