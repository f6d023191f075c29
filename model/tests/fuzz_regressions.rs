//! Inputs the fuzz targets (`fuzz/`, issue #11) found crashing the model, kept as tests of
//! the behaviour that replaced the crash. Each test names its target and what it found.

mod common;

use common::*;
use kfd_model::{Errno, ModelConfig, Preset};
use kfd_sys::*;

/// model_ioctl, `oom-48ef5f3a…`: UNMAP_MEMORY_FROM_GPU with `n_devices` 0x6F6F_FB6F made the
/// model allocate a 7.5 GB GPU-id array before reading it. The kernel copies the array into a
/// `kmalloc_array` buffer, which fails above 4 MiB: `ENOMEM`, and nothing else happens.
#[test]
fn huge_device_id_arrays_are_enomem_not_an_allocation() {
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let c = Client::new(&model);
    let b = c.gtt(4096);
    let ids = [c.gpu()];
    for n_devices in [0x6F6F_FB6F, u32::MAX, (4 << 20) / 4 + 1] {
        let mut m = kfd_ioctl_map_memory_to_gpu_args {
            handle: b.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices,
            n_success: 0,
        };
        assert_errno(
            ioctl(&c.p, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut m),
            Errno::ENOMEM,
            "map",
        );
        assert_eq!(m.n_success, 0);
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle: b.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices,
            n_success: 0,
        };
        assert_errno(
            ioctl(&c.p, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &mut u),
            Errno::ENOMEM,
            "unmap",
        );
    }
    // 4 MiB of ids is still accepted as an allocation: the array is read, and the first
    // id is the buffer's GPU, so it is unmapped; the next id (0) is not a GPU.
    let mut big = vec![0u32; (4 << 20) / 4];
    big[0] = c.gpu();
    let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
        handle: b.handle,
        device_ids_array_ptr: big.as_ptr() as u64,
        n_devices: big.len() as u32,
        n_success: 0,
    };
    assert_errno(
        ioctl(&c.p, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &mut u),
        Errno::EINVAL,
        "unmap with a 4 MiB id array",
    );
    assert_eq!(u.n_success, 1, "the first GPU was done");
    // The process goes on working.
    c.free(&c.gtt(8192)).expect("a normal map/unmap/free");
}

/// The same for WAIT_EVENTS: `num_events` u32::MAX asked for a 96 GiB `kfd_event_data`
/// array. `ENOMEM`, with the wait result FAIL written back.
#[test]
fn huge_event_arrays_are_enomem() {
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let c = Client::new(&model);
    let page = c.event_page();
    let ev = create_event(&c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
    let data = [kfd_event_data {
        event_id: ev.event_id,
        ..Default::default()
    }];
    let mut w = kfd_ioctl_wait_events_args {
        events_ptr: data.as_ptr() as u64,
        num_events: u32::MAX,
        wait_for_all: 1,
        timeout: 0,
        wait_result: 99,
    };
    assert_errno(
        ioctl(&c.p, AMDKFD_IOC_WAIT_EVENTS, &mut w),
        Errno::ENOMEM,
        "wait",
    );
    assert_eq!(w.wait_result, KFD_IOC_WAIT_RESULT_FAIL);
    assert_eq!(
        wait_events(&c, &[ev.event_id], true, 0),
        (Ok(0), KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
}
