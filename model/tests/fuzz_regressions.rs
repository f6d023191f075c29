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
        assert_errno(c.p.call::<MapMemoryToGpu>(&mut m), Errno::ENOMEM, "map");
        assert_eq!(m.n_success, 0);
        let mut u = kfd_ioctl_unmap_memory_from_gpu_args {
            handle: b.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices,
            n_success: 0,
        };
        assert_errno(
            c.p.call::<UnmapMemoryFromGpu>(&mut u),
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
        c.p.call::<UnmapMemoryFromGpu>(&mut u),
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
    let mut data = [kfd_event_data {
        event_id: ev.event_id,
        ..Default::default()
    }];
    let mut w = kfd_ioctl_wait_events_args {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: u32::MAX,
        wait_for_all: 1,
        timeout: 0,
        wait_result: 99,
    };
    assert_errno(
        // SAFETY: `num_events` (u32::MAX) is far more than `data` holds, but the model refuses an
        // array over its copy-in limit (ENOMEM in `read_array`) before allocating or reading
        // anything: nothing at `events_ptr` is read or written.
        unsafe { ioctl_unchecked::<WaitEvents>(&c.p, &mut w) },
        Errno::ENOMEM,
        "wait",
    );
    assert_eq!(w.wait_result, KFD_IOC_WAIT_RESULT_FAIL);
    assert_eq!(
        wait_events(&c, &[ev.event_id], true, 0),
        (Ok(0), KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
}

/// An AQL packet (16 dwords): `header`, quadwords 1..=6 of the body, a completion signal.
fn aql_packet(header: u32, body: &[(usize, u64)], completion: u64) -> Vec<u32> {
    let mut p = vec![0u32; 16];
    p[0] = header;
    for &(qw, v) in body {
        p[qw * 2] = v as u32;
        p[qw * 2 + 1] = (v >> 32) as u32;
    }
    p[14] = completion as u32;
    p[15] = (completion >> 32) as u32;
    p
}

/// model_engines, `crash-cc7d8b1d…`: an AQL barrier whose dependent signal sat at the top of
/// the address space made the CP compute `signal + 8` with an overflow (a panic in debug
/// builds, a wrapped address in release). The signal's fields are now reached with a checked
/// add: such a signal is a GPU VM fault at the signal's address — the queue stops, the
/// process gets a memory exception, the host goes on.
#[test]
fn aql_signals_at_the_top_of_the_address_space_are_vm_faults() {
    const BARRIER_AND: u32 = 3 | 1 << 8 | 2 << 9 | 2 << 11;
    const BARRIER_VALUE: u32 = 2 << 9 | 2 << 11 | 2 << 16;
    let model = model_with(ModelConfig::new(Preset::Gfx90a).with_engine_thread(false));
    let top = u64::MAX - 3;
    let cases = [
        // A dependent signal of a barrier-AND.
        aql_packet(BARRIER_AND, &[(1, top)], 0),
        // The signal of an AMD barrier-value packet.
        aql_packet(BARRIER_VALUE, &[(1, top)], 0),
        // The completion signal of a barrier without dependencies.
        aql_packet(BARRIER_AND, &[], top),
    ];
    for (i, packet) in cases.iter().enumerate() {
        // A VM fault evicts the process's queues: a fresh process per case.
        let c = Client::new(&model);
        let mem = create_event(&c, KFD_IOC_EVENT_MEMORY, false, 0).unwrap();
        let (qid, q) = c
            .create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL)
            .unwrap_or_else(|e| panic!("case {i}: create queue: {e:?}"));
        for (k, d) in packet.iter().enumerate().skip(1) {
            q.ring.write_u32(4 * k as u64, *d);
        }
        q.ring.write_u32(0, packet[0]);
        c.submit(&q, 1);
        model.run_until_idle();
        match c.p.queue_error(qid) {
            Some(kfd_model::QueueError::VmFault(f)) => {
                assert_eq!((f.va, f.not_present), (top, true), "case {i}")
            }
            other => panic!(
                "case {i}: expected a VM fault at {top:#x}, got {other:?}; {:?}",
                c.p.queue_state(qid)
            ),
        }
        assert_eq!(
            wait_events(&c, &[mem.event_id], true, 0),
            (Ok(0), KFD_IOC_WAIT_RESULT_COMPLETE),
            "case {i}: memory exception delivered"
        );
        assert_eq!(c.destroy_queue(qid), Ok(0));
    }
}
