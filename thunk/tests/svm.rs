//! The safe SVM API: attributes set and read back over split ranges, prefetch both ways with
//! the bytes intact, SDMA writes into SVM memory, XNACK mode, and XNACK-on recoverable faults.
#![cfg(feature = "model")] // gfx90a (per-process XNACK) exists here only as a model

mod common;

use common::*;
use thunk::{Kfd, QueueOptions, SvmAccess, SvmAttribute, SvmLocation, PAGE_SIZE};

fn gfx90a(why: &str) -> Option<Kfd> {
    model_kfd(Preset::Gfx90a, 1, why)
}

const HOST_ACCESS: u32 = kfd_sys::KFD_IOCTL_SVM_FLAG_HOST_ACCESS;
const COHERENT: u32 = kfd_sys::KFD_IOCTL_SVM_FLAG_COHERENT;
const GPU_RO: u32 = kfd_sys::KFD_IOCTL_SVM_FLAG_GPU_RO;

#[test]
fn attributes_round_trip_and_combine_over_split_ranges() {
    let Some(kfd) = gfx90a("gfx90a") else { return };
    let gpu = kfd.gpu(0).unwrap().id();
    let mem = kfd.svm_alloc(4 * PAGE_SIZE).unwrap();
    // Nothing set yet: the defaults (XNACK off: no access).
    let d = mem.attributes().unwrap();
    assert_eq!(d.preferred_location, SvmLocation::Undefined);
    assert_eq!(d.flags_set, HOST_ACCESS | COHERENT);
    assert_eq!(d.flags_clear, !(HOST_ACCESS | COHERENT));
    assert_eq!(d.granularity, 9);
    assert_eq!(d.access, vec![(gpu, SvmAccess::None)]);
    mem.set_attributes(&[
        SvmAttribute::Access(gpu, SvmAccess::Access),
        SvmAttribute::PreferredLocation(SvmLocation::System),
    ])
    .unwrap();
    mem.set_attributes_at(
        PAGE_SIZE,
        PAGE_SIZE,
        &[
            SvmAttribute::SetFlags(GPU_RO),
            SvmAttribute::Granularity(2),
            SvmAttribute::PreferredLocation(SvmLocation::Gpu(gpu)),
        ],
    )
    .unwrap();
    let all = mem.attributes().unwrap();
    assert_eq!(
        all.preferred_location,
        SvmLocation::Undefined,
        "ranges disagree"
    );
    assert_eq!(all.flags_set, HOST_ACCESS | COHERENT);
    assert_eq!(all.flags_clear, !(HOST_ACCESS | COHERENT | GPU_RO));
    assert_eq!(all.granularity, 2);
    assert_eq!(all.access, vec![(gpu, SvmAccess::Access)]);
    let mid = mem.attributes_at(PAGE_SIZE, PAGE_SIZE).unwrap();
    assert_eq!(mid.preferred_location, SvmLocation::Gpu(gpu));
    assert_eq!(mid.flags_set, HOST_ACCESS | COHERENT | GPU_RO);
    // Errors say which call failed and why.
    assert_err(
        mem.set_attributes(&[SvmAttribute::Prefetch(SvmLocation::Undefined)]),
        thunk::Errno::EINVAL,
        "SVM SET_ATTR",
    );
    assert_err(
        mem.set_attributes(&[SvmAttribute::Access(0xdead, SvmAccess::Access)]),
        thunk::Errno::EINVAL,
        "SVM SET_ATTR",
    );
    assert!(
        mem.set_attributes_at(100, PAGE_SIZE, &[]).is_err(),
        "not whole pages"
    );
    assert!(mem.attributes_at(0, 5 * PAGE_SIZE).is_err(), "past the end");
}

#[test]
fn prefetch_moves_the_bytes_both_ways_and_the_gpu_writes_follow() {
    let Some(kfd) = gfx90a("gfx90a") else { return };
    let gpu = kfd.gpu(0).unwrap();
    let mem = kfd.svm_alloc(2 * PAGE_SIZE).unwrap();
    for i in 0..(2 * PAGE_SIZE / 4) {
        mem.store_u32(i * 4, i as u32 ^ 0xA5A5_0000).unwrap();
    }
    mem.set_attributes(&[SvmAttribute::Access(gpu.id(), SvmAccess::Access)])
        .unwrap();
    let mut q = gpu.create_sdma_queue(&QueueOptions::new()).unwrap();
    mem.prefetch(SvmLocation::Gpu(gpu.id())).unwrap();
    assert_eq!(
        mem.attributes().unwrap().prefetch_location,
        SvmLocation::Gpu(gpu.id())
    );
    q.push_write(mem.addr() + 8, &[0x1111]).unwrap();
    q.submit().unwrap();
    q.wait_idle(T).unwrap();
    assert_eq!(mem.load_u32(8).unwrap(), 0x1111);
    mem.prefetch(SvmLocation::System).unwrap();
    q.push_write(mem.addr() + 12, &[0x2222]).unwrap();
    q.submit().unwrap();
    q.wait_idle(T).unwrap();
    for i in 0..(2 * PAGE_SIZE / 4) {
        let want = match i {
            2 => 0x1111,
            3 => 0x2222,
            _ => i as u32 ^ 0xA5A5_0000,
        };
        assert_eq!(mem.load_u32(i * 4).unwrap(), want, "word {i}");
    }
}

fn vram_available(kfd: &Kfd, gpu_id: u32) -> u64 {
    let mut a = kfd_sys::kfd_ioctl_get_available_memory_args {
        gpu_id,
        ..Default::default()
    };
    kfd.ioctl::<kfd_sys::AvailableMemory>(&mut a).unwrap();
    a.available
}

#[test]
fn vram_is_taken_while_the_memory_lives_there() {
    let Some(kfd) = gfx90a("gfx90a") else { return };
    let gpu = kfd.gpu(0).unwrap().id();
    let before = vram_available(&kfd, gpu);
    let mem = kfd.svm_alloc(4 * PAGE_SIZE).unwrap();
    mem.set_attributes(&[
        SvmAttribute::Access(gpu, SvmAccess::Access),
        SvmAttribute::Prefetch(SvmLocation::Gpu(gpu)),
    ])
    .unwrap();
    assert_eq!(vram_available(&kfd, gpu), before - 4 * PAGE_SIZE);
    drop(mem);
    // Dropping moved it back to system memory first.
    assert_eq!(vram_available(&kfd, gpu), before);
}

#[test]
fn xnack_on_a_fault_is_recovered_and_the_write_lands() {
    let Some(kfd) = gfx90a("gfx90a") else { return };
    let gpu = kfd.gpu(0).unwrap();
    assert!(!kfd.xnack_mode().unwrap());
    kfd.set_xnack_mode(true).unwrap();
    assert!(kfd.xnack_mode().unwrap());
    let mem = kfd.svm_alloc(PAGE_SIZE).unwrap();
    // With XNACK on every GPU may access a new range; nothing is mapped until it faults.
    mem.set_attributes(&[SvmAttribute::PreferredLocation(SvmLocation::Gpu(gpu.id()))])
        .unwrap();
    assert_eq!(
        mem.attributes().unwrap().access,
        vec![(gpu.id(), SvmAccess::Access)]
    );
    let mut q = gpu.create_sdma_queue(&QueueOptions::new()).unwrap();
    assert_err(
        kfd.set_xnack_mode(false),
        thunk::Errno::EBUSY,
        "SET_XNACK_MODE",
    );
    q.push_write(mem.addr() + 0x40, &[0xFACE]).unwrap();
    q.submit().unwrap();
    q.wait_idle(T).unwrap();
    assert_eq!(
        mem.load_u32(0x40).unwrap(),
        0xFACE,
        "the faulting write was retried"
    );
}

/// SMI events: a prefetch to VRAM and back is reported as MIGRATE_START/END lines on the
/// GPU's SMI file (`@page(pages) from->to`, gpu ids in hex, 0 = system memory, trigger 0 =
/// prefetch); events the mask leaves out are not queued.
#[test]
fn smi_events_report_a_prefetch_both_ways() {
    let Some(kfd) = gfx90a("gfx90a") else { return };
    let gpu = kfd.gpu(0).unwrap().id();
    let smi = kfd.smi_events(gpu).unwrap();
    assert!(kfd.smi_events(0xdead).is_err(), "unknown gpu");
    smi.enable(&[kfd_sys::KFD_SMI_EVENT_MIGRATE_END]).unwrap();
    let mem = kfd.svm_alloc(2 * PAGE_SIZE).unwrap();
    mem.set_attributes(&[SvmAttribute::Access(gpu, SvmAccess::Access)])
        .unwrap();
    mem.prefetch(SvmLocation::Gpu(gpu)).unwrap();
    mem.prefetch(SvmLocation::System).unwrap();
    let page = mem.addr() >> 12;
    let pid = std::process::id();
    let rest: Vec<String> = smi
        .read_lines()
        .unwrap()
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, ' ').collect();
            assert_eq!(f[0], "6", "{l}");
            assert!(f[1].parse::<i64>().unwrap() > 0, "{l}");
            assert_eq!(f[2], format!("-{pid}"), "{l}");
            f[3].to_owned()
        })
        .collect();
    assert_eq!(
        rest,
        vec![
            format!("@{page:x}(2) 0->{gpu:x} 0"),
            format!("@{page:x}(2) {gpu:x}->0 0")
        ]
    );
    assert!(smi.read_lines().unwrap().is_empty());
}
