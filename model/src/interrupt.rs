//! `kfd_interrupt` and `kfd_int_process_v9`/`_v10`: the driver's side of the IH ring. Each
//! entry is checked (its VMID must be one of KFD's) and dispatched by client and source:
//!
//! * CP end-of-pipe (RELEASE_MEM with an interrupt, an AQL completion signal with a mailbox):
//!   signal events by `context_id0`, all 32 bits valid (facts §8.2). GC 9.4.1+ (and older gfx9
//!   parts with new enough MEC firmware) send a context id with every end-of-pipe interrupt,
//!   so the driver drops those whose context id is 0.
//! * SQ interrupt message (a wave's `s_sendmsg(MSG_INTERRUPT)`, encoding INST, not from a
//!   trap handler): signal events by the message's 24 data bits (M0), as amdkfd's v9 handler
//!   does; other SQ messages are logged.
//! * SDMA TRAP: signal events by `context_id0 & 0x0FFFFFFF`, 28 valid bits.
//! * VM fault (VMC / UTCL2): every MEMORY event of the process gets the fault (page address,
//!   GPU, not-present or read-only) and is set, and the process's queues are evicted
//!   (`kfd_dqm_evict_pasid`), as amdkfd does — unless the process runs with XNACK on and the
//!   SVM code recovers the fault (`svm_range_restore_pages`): then the queues are remapped and
//!   retry the faulting packet, and no event is signalled.
//! * Queue error (CP bad opcode; the model also posts its other queue errors this way): the
//!   process's QUEUE_EVENT events are set — a model extension, the kernel leaves those events
//!   to the debugger path — and the error is logged; [`crate::Process::queue_error`] tells
//!   what happened.

use crate::device::KfdNode;
use crate::dqm::kfd_vmid_mask;
use crate::hw::ih::{
    IhEntry, IH_CLIENT_GRBM_CP, IH_CLIENT_SDMA0, IH_CLIENT_UTCL2, IH_CLIENT_VMC, SQ_ENCODING_INST,
    SQ_WAVE_CTXID_ENCODING_SHIFT, SQ_WAVE_CTXID_PRIV, SRC_CP_BAD_OPCODE, SRC_CP_END_OF_PIPE,
    SRC_SDMA_TRAP, SRC_SDMA_TRAP_SOC21, SRC_SQ_INTERRUPT_MSG, SRC_VM_FAULT, VM_FAULT_NOT_PRESENT,
    VM_FAULT_READ_ONLY, VM_FAULT_WRITE,
};
use crate::process::ModelInner;
use kfd_sys::{kfd_hsa_memory_exception_data, kfd_memory_exception_failure};

/// MEC firmware of GC 9.0.1 from which every end-of-pipe interrupt carries a context id.
const GC_9_0_1_CTXID_FW: u64 = 0x817a;
/// The same for GC 9.1, 9.2, 9.3 and 9.4.0.
const GC_9_X_CTXID_FW: u64 = 0x17a;

/// Whether the part's firmware always sends context ids, so a 0 context id is spurious.
fn drops_zero_ctxid(node: &KfdNode) -> bool {
    let fw = node.topo.properties.fw_version;
    match node.gc_version() {
        (9, 0, 1) => fw >= GC_9_0_1_CTXID_FW,
        (9, 1..=3, _) | (9, 4, 0) => fw >= GC_9_X_CTXID_FW,
        (9, ..) => true,
        _ => false,
    }
}

fn is_sdma_client(client: u8) -> bool {
    (IH_CLIENT_SDMA0..IH_CLIENT_SDMA0 + 8).contains(&client)
}

/// Drains the IH ring of `node` and handles every entry. Returns the number handled.
pub(crate) fn process_interrupts(model: &ModelInner, node: &KfdNode) -> usize {
    let entries = node.gpu.ih.drain();
    for e in &entries {
        handle(model, node, e);
    }
    entries.len()
}

fn handle(model: &ModelInner, node: &KfdNode, e: &IhEntry) {
    if kfd_vmid_mask(node.preset) & (1 << e.vmid) == 0 {
        log::debug!(target: "kfd::interrupt", "ignored (VMID {} is not KFD's): {e}", e.vmid);
        return;
    }
    let Some(p) = model.process(u32::from(e.pasid)) else {
        log::debug!(target: "kfd::interrupt", "no process with pasid {:#x}: {e}", e.pasid);
        return;
    };
    let ctxid = e.src_data[0];
    match (e.client_id, e.source_id) {
        (IH_CLIENT_GRBM_CP, SRC_CP_END_OF_PIPE) => {
            if ctxid == 0 && drops_zero_ctxid(node) {
                log::trace!(target: "kfd::interrupt", "end-of-pipe with context id 0 dropped");
                return;
            }
            let fired = p.events.signal_interrupt(ctxid, 32);
            log::debug!(target: "kfd::interrupt", "pasid {:#x}: CP end-of-pipe ctxid {ctxid:#x} -> events {fired:?}", e.pasid);
        }
        (IH_CLIENT_GRBM_CP, SRC_SQ_INTERRUPT_MSG) => {
            let encoding = (ctxid >> SQ_WAVE_CTXID_ENCODING_SHIFT) & 3;
            if encoding == SQ_ENCODING_INST && ctxid & SQ_WAVE_CTXID_PRIV == 0 {
                let data = crate::hw::ih::sq_int_data(ctxid, e.src_data[1]);
                let fired = p.events.signal_interrupt(data, 24);
                log::debug!(target: "kfd::interrupt", "pasid {:#x}: SQ s_sendmsg data {data:#x} -> events {fired:?}", e.pasid);
            } else {
                log::debug!(target: "kfd::interrupt", "pasid {:#x}: SQ interrupt (encoding {encoding}) not handled: {e}", e.pasid);
            }
        }
        (IH_CLIENT_GRBM_CP, SRC_SDMA_TRAP_SOC21) => sdma_trap(&p.events, e),
        (client, SRC_SDMA_TRAP) if is_sdma_client(client) => sdma_trap(&p.events, e),
        (IH_CLIENT_VMC | IH_CLIENT_UTCL2, SRC_VM_FAULT) => {
            let page = u64::from(e.src_data[0]) | u64::from(e.src_data[1] & 0xF) << 32;
            let data = kfd_hsa_memory_exception_data {
                failure: kfd_memory_exception_failure {
                    NotPresent: u32::from(e.src_data[2] & VM_FAULT_NOT_PRESENT != 0),
                    ReadOnly: u32::from(e.src_data[2] & VM_FAULT_READ_ONLY != 0),
                    NoExecute: 0,
                    imprecise: 0,
                },
                va: page << 12,
                gpu_id: node.gpu_id,
                ErrorType: 0,
            };
            // XNACK on: a retry fault goes to the SVM code, which maps the page; the queue is
            // then unmapped and mapped again so that it retries the faulting packet.
            let write = e.src_data[1] & VM_FAULT_WRITE != 0;
            if e.src_data[2] & VM_FAULT_NOT_PRESENT != 0
                && crate::svm::restore_pages(&p, node, data.va, write)
            {
                let pd_base = p
                    .lock()
                    .pdds
                    .iter()
                    .find(|d| d.node.gpu_id == node.gpu_id)
                    .map_or(0, |d| d.pd_base);
                let mut dqm = node.dqm();
                let retried = dqm
                    .evict_process(&node.gpu, p.pasid)
                    .and_then(|()| dqm.restore_process(&node.gpu, p.pasid, pd_base));
                if let Err(err) = retried {
                    log::warn!(target: "kfd::interrupt", "remapping the queues after a recovered fault failed: {err:?}");
                }
                log::debug!(
                    target: "kfd::interrupt",
                    "pasid {:#x}: recovered GPU VM fault at page {:#x} on gpu {:#x}; queues remapped",
                    e.pasid,
                    data.va,
                    node.gpu_id
                );
                return;
            }
            log::warn!(
                target: "kfd::interrupt",
                "pasid {:#x}: GPU VM fault at page {:#x} on gpu {:#x}; evicting the process's queues",
                e.pasid,
                data.va,
                node.gpu_id
            );
            crate::smi::vm_fault(node, p.owner_pid);
            if let Err(err) = node.dqm().evict_process(&node.gpu, p.pasid) {
                log::warn!(target: "kfd::interrupt", "evicting after the VM fault failed: {err:?}");
            }
            p.events.signal_memory_exception(data);
        }
        (_, SRC_CP_BAD_OPCODE) => {
            let reason = node
                .gpu
                .hws
                .queue_error(e.src_data[1])
                .map_or_else(|| "unknown".to_owned(), |q| q.to_string());
            log::error!(
                target: "kfd::interrupt",
                "pasid {:#x}: queue with doorbell {:#x} stopped: {reason}",
                e.pasid,
                e.src_data[1]
            );
            p.events.signal_queue_error();
        }
        _ => log::debug!(target: "kfd::interrupt", "unhandled interrupt: {e}"),
    }
}

fn sdma_trap(events: &crate::events::EventTable, e: &IhEntry) {
    let ctxid = e.src_data[0];
    let fired = events.signal_interrupt(ctxid & 0x0FFF_FFFF, 28);
    log::debug!(target: "kfd::interrupt", "pasid {:#x}: SDMA trap ctxid {ctxid:#x} -> events {fired:?}", e.pasid);
}
