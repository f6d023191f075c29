//! A CP queue driven end to end: a submitted IB, a PM4 ring with chained IBs, and a packet
//! that faults, checked in memory, in the reported read pointer and in the interrupts.

use super::{CpQueue, CpReadPointer, CpRing, CpState};
use crate::hw::clock::GpuClock;
use crate::hw::engine::{
    ExecEnv, IbFrame, QueueError, QueueIdentity, QueueRun, QueueStatus, RunState, PASS_BUDGET,
};
use crate::hw::hws::HqdSlot;
use crate::hw::ih::{IhRing, IH_CLIENT_UTCL2, SRC_CP_END_OF_PIPE, SRC_VM_FAULT};
use crate::hw::mem::DeviceMemory;
use crate::hw::vm::{Backing, GpuVm, VmMapping};
use pm4::ring::DwordPtr;
use pm4::user::{IndirectBufferControl, ReleaseMemArgs, ReleaseMemGfx9, WriteData};
use pm4::{GfxGen, PacketWriter};
use std::collections::BTreeMap;
use std::sync::Arc;
use zerocopy::IntoBytes;

const BASE: u64 = 0x10_0000;

fn vm_with(len: u64) -> (GpuVm, Arc<DeviceMemory>) {
    let mem = Arc::new(DeviceMemory::new("cp-test", len).unwrap());
    let mut vm = GpuVm::new();
    vm.map(VmMapping {
        va: BASE,
        len,
        backing: Backing::Device {
            mem: mem.clone(),
            offset: 0,
        },
        writable: true,
        handle: 1,
    });
    (vm, mem)
}

fn id() -> QueueIdentity {
    QueueIdentity {
        slot: HqdSlot::Compute {
            mec: 0,
            pipe: 1,
            queue: 2,
        },
        pasid: 0x8001,
        vmid: 8,
        doorbell_offset: 0x1006,
    }
}

fn queue(ring_dwords: u64) -> CpQueue {
    CpQueue {
        ring: CpRing {
            base: BASE,
            dwords: ring_dwords,
            rptr_report: BASE + 0x8000,
            wptr_addr: BASE + 0x8008,
            aql: false,
        },
        id: id(),
        rptr: CpReadPointer::Pm4(DwordPtr::new(0)),
        last_wptr: CpReadPointer::Pm4(DwordPtr::new(0)),
        ibs: Vec::new(),
        aql_ib_active: false,
        status: QueueStatus::default(),
        gen: GfxGen::Gfx9,
        state: CpState::default(),
        scratch: Vec::new(),
        shader_isa: Err("no shader ISA was given to this queue".into()),
        kernel: None,
        scratch_wait: false,
        wave_halted: false,
        ctx_save_address: 0,
        packet_start_ts: None,
    }
}

/// A render node's compute-ring IB runs to its end (WRITE_DATA, RELEASE_MEM); one that
/// chains to itself forever stops at the packet budget instead of hanging.
#[test]
fn a_submitted_ib_runs_to_its_end_or_to_the_budget() {
    let (vm, mem) = vm_with(0x10000);
    let clock = GpuClock::new();
    let ih = IhRing::new();
    let mut regs = BTreeMap::new();
    let mut env = ExecEnv {
        vm: &vm,
        clock: &clock,
        registers: &mut regs,
        ih: &ih,
        queue: id(),
    };
    let mut ib = [0u32; 16];
    let mut w = PacketWriter::new(&mut ib);
    w.push(&WriteData::memory(BASE + 0x9000, &[0x5151]).unwrap())
        .unwrap();
    let rm = ReleaseMemGfx9::new(
        &ReleaseMemArgs::event_signal(BASE + 0x9008, 9),
        Default::default(),
    )
    .unwrap();
    w.push(&rm).unwrap();
    let n = w.len();
    mem.write(0x2000, ib[..n].as_bytes()).unwrap();
    let frame = IbFrame::new(BASE + 0x2000, n as u32);
    let ran = CpQueue::run_submitted_ib(GfxGen::Gfx9, id(), frame, &mut env, 100);
    assert_eq!(ran.unwrap(), 2);
    assert_eq!(mem.load_u32(0x9000), Some(0x5151));
    assert_eq!(mem.load_u32(0x9008), Some(9));

    let mut looping = [0u32; 8];
    let n = PacketWriter::new(&mut looping)
        .push(
            &pm4::user::IndirectBuffer::new(
                BASE + 0x4000,
                4,
                IndirectBufferControl::new().with_chain(true),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(n, 4);
    mem.write(0x4000, looping[..n].as_bytes()).unwrap();
    let frame = IbFrame::new(BASE + 0x4000, 4);
    let ran = CpQueue::run_submitted_ib(GfxGen::Gfx9, id(), frame, &mut env, 100);
    assert!(
        matches!(ran, Err(QueueError::NotModelled { ref what, .. }) if what.contains("more than 100 packets")),
        "{ran:?}"
    );
}

#[test]
fn write_data_and_release_mem_in_an_ib_chain() {
    let (vm, mem) = vm_with(0x10000);
    let clock = GpuClock::new();
    let ih = IhRing::new();
    let mut regs = BTreeMap::new();
    // IB A at 0x2000 writes 1 to 0x9000 and chains to IB B at 0x3000, which RELEASE_MEMs 7
    // to 0x9008 with an interrupt.
    let mut ib_b = [0u32; 8];
    let rm = ReleaseMemGfx9::new(
        &ReleaseMemArgs::event_signal(BASE + 0x9008, 7),
        Default::default(),
    )
    .unwrap();
    let n_b = PacketWriter::new(&mut ib_b).push(&rm).unwrap();
    mem.write(0x3000, ib_b[..n_b].as_bytes()).unwrap();
    let mut ib_a = [0u32; 16];
    let mut w = PacketWriter::new(&mut ib_a);
    w.push(&WriteData::memory(BASE + 0x9000, &[1]).unwrap())
        .unwrap();
    w.push(
        &pm4::user::IndirectBuffer::new(
            BASE + 0x3000,
            n_b as u32,
            IndirectBufferControl::new().with_chain(true),
        )
        .unwrap(),
    )
    .unwrap();
    let n_a = w.len();
    mem.write(0x2000, ib_a[..n_a].as_bytes()).unwrap();
    let mut ring = [0u32; 8];
    let n = PacketWriter::new(&mut ring)
        .push(
            &pm4::user::IndirectBuffer::new(
                BASE + 0x2000,
                n_a as u32,
                IndirectBufferControl::new(),
            )
            .unwrap(),
        )
        .unwrap();
    mem.write(0, ring[..n].as_bytes()).unwrap();
    mem.store_u64(0x8008, n as u64).unwrap();
    let mut q = queue(1024);
    let mut env = ExecEnv {
        vm: &vm,
        clock: &clock,
        registers: &mut regs,
        ih: &ih,
        queue: id(),
    };
    let r = q.run(&mut env, 0, PASS_BUDGET);
    // The ring's IB, WRITE_DATA, the chained IB, RELEASE_MEM.
    assert_eq!(
        r,
        QueueRun {
            packets: 4,
            state: RunState::Idle
        }
    );
    assert_eq!(q.ib_depth(), 0, "both IBs finished");
    assert_eq!(mem.load_u32(0x9000), Some(1));
    assert_eq!(mem.load_u32(0x9008), Some(7));
    assert_eq!(mem.load_u32(0x8000), Some(4), "wrapped rptr in dwords");
    let irq = ih.drain();
    assert_eq!(irq.len(), 1);
    assert_eq!(irq[0].source_id, SRC_CP_END_OF_PIPE);
    assert_eq!(irq[0].src_data[0], 7);
    assert_eq!(irq[0].ring_id, (1 << 2) | 1 | (2 << 4));
}

#[test]
fn a_bad_address_halts_with_a_vm_fault_interrupt() {
    let (vm, mem) = vm_with(0x10000);
    let clock = GpuClock::new();
    let ih = IhRing::new();
    let mut regs = BTreeMap::new();
    let mut ring = [0u32; 8];
    let n = PacketWriter::new(&mut ring)
        .push(&WriteData::memory(0xdead_0000, &[1]).unwrap())
        .unwrap();
    mem.write(0, ring[..n].as_bytes()).unwrap();
    mem.store_u64(0x8008, n as u64).unwrap();
    let mut q = queue(1024);
    let mut env = ExecEnv {
        vm: &vm,
        clock: &clock,
        registers: &mut regs,
        ih: &ih,
        queue: id(),
    };
    assert_eq!(q.run(&mut env, 0, PASS_BUDGET).state, RunState::Halted);
    assert!(matches!(q.error(), Some(QueueError::VmFault(f)) if f.va == 0xdead_0000 && f.write));
    let irq = ih.drain();
    assert_eq!(
        (irq[0].client_id, irq[0].source_id),
        (IH_CLIENT_UTCL2, SRC_VM_FAULT)
    );
    assert_eq!(irq[0].src_data[0], 0xdead0, "page number");
    assert_eq!(q.rptr().get(), 0, "the faulting packet is not consumed");
}
