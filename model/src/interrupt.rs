//! `kfd_interrupt` and `kfd_int_process_v9`/`_v10`: the driver's side of the IH ring. Each
//! entry is checked (its VMID must be one of KFD's) and dispatched by client and source:
//!
//! * CP end-of-pipe (RELEASE_MEM with an interrupt, an AQL completion signal with a mailbox):
//!   signal events by `context_id0`, all 32 bits valid (facts §8.2). GC 9.4.1+ (and older gfx9
//!   parts with new enough MEC firmware) send a context id with every end-of-pipe interrupt,
//!   so the driver drops those whose context id is 0.
//! * SQ interrupt message (a wave's `s_sendmsg(MSG_INTERRUPT)`, encoding INST): signal events
//!   by the message's 24 data bits (M0), as amdkfd's v9 handler does. One sent from a trap
//!   handler (PRIV) first goes to `kfd_set_dbg_ev_from_interrupt`: data bits 9:0 name the
//!   queue by doorbell id, bits 18:10 carry a `KFD_EC_MASK` of exception codes (ROCr's handler
//!   sends 0x400 for `s_trap 2`, EC_QUEUE_WAVE_ABORT); with no debugger attached and the
//!   runtime enabled, a queue exception goes to the runtime (`kfd_send_exception_to_runtime`:
//!   ORed into the error payload its context-save header names, and its error event set)
//!   and the message ends there. Other SQ messages are logged.
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

use crate::device::kfd_vmid_mask;
use crate::device::KfdNode;
use crate::hw::ih::{
    IhEntry, IH_CLIENT_GRBM_CP, IH_CLIENT_SDMA0, IH_CLIENT_UTCL2, IH_CLIENT_VMC, SQ_ENCODING_INST,
    SQ_WAVE_CTXID_ENCODING_SHIFT, SQ_WAVE_CTXID_PRIV, SRC_CP_BAD_OPCODE, SRC_CP_END_OF_PIPE,
    SRC_SDMA_TRAP, SRC_SDMA_TRAP_SOC21, SRC_SQ_INTERRUPT_MSG, SRC_VM_FAULT, VM_FAULT_NOT_PRESENT,
    VM_FAULT_READ_ONLY, VM_FAULT_WRITE,
};
use crate::instance::ModelInner;
use kfd_sys::{kfd_hsa_memory_exception_data, kfd_memory_exception_failure};
use kfd_sys::{
    EC_QUEUE_PACKET_RESERVED, EC_QUEUE_PACKET_UNSUPPORTED, EC_QUEUE_WAVE_MEMORY_VIOLATION,
    KFD_EC_MASK,
};

/// SQ message data from a trap handler: the doorbell id of its queue (`KFD_DEBUG_DOORBELL_ID`).
const DEBUG_DOORBELL_MASK: u32 = 0x3ff;

/// SQ message data from a trap handler: the `KFD_EC_MASK` of its exceptions, bits 18:10
/// (`KFD_DEBUG_TRAP_CODE`).
fn debug_trap_code(data: u32) -> u64 {
    u64::from((data & 0x7_fc00) >> 10)
}

/// `kfd_set_dbg_ev_from_interrupt` without a debugger (the model has none attached, so
/// `kfd_dbg_ev_raise` claims nothing): a queue exception of a process whose runtime is
/// enabled goes to the runtime through the queue `doorbell_id` names on this node. Whether
/// the message was consumed.
fn dbg_ev_from_interrupt(
    p: &crate::process::ProcessInner,
    node: &KfdNode,
    doorbell_id: u32,
    trap_mask: u64,
) -> bool {
    if trap_mask & kfd_sys::KFD_EC_MASK_QUEUE == 0 || !p.lock().runtime.enabled {
        return false;
    }
    let ctx_save = {
        let dqm = node.dqm();
        let Some(q) = dqm
            .qpds
            .iter()
            .filter(|qpd| qpd.pasid == p.pasid)
            .flat_map(|qpd| qpd.queues.iter())
            .find(|q| q.class == crate::dqm::QueueClass::Compute && q.doorbell_id == doorbell_id)
        else {
            return false;
        };
        q.props.ctx_save_address
    };
    let vm = p
        .lock()
        .pdds
        .iter()
        .find(|d| d.node.gpu_id == node.gpu_id)
        .map(|d| d.vm.clone());
    send_exception_to_runtime(p, vm.as_deref(), ctx_save, trap_mask);
    true
}

/// `kfd_send_exception_to_runtime`: `error_reason` is ORed into the error payload the queue's
/// context-save header points at (`err_payload_addr` @24), and the event it names
/// (`err_event_id` @32) is set. The kernel reads and writes these through the process's CPU
/// mapping (user memory); where the model's client has none at that address (the model's
/// own tests keep GPU buffers in the model only), the same bytes are reached through the
/// process's GPU VM on the node (CREATE_QUEUE made sure the CWSR area is GPU-mapped). Memory
/// reachable neither way ends it silently, as the kernel's worker does.
fn send_exception_to_runtime(
    p: &crate::process::ProcessInner,
    vm: Option<&std::sync::RwLock<crate::hw::vm::GpuVm>>,
    header: u64,
    error_reason: u64,
) {
    use crate::user::UserAccessExt;
    let user = p.user.as_ref();
    let gpu = |f: &dyn Fn(&crate::hw::vm::GpuVm) -> Option<u64>| {
        vm.and_then(|vm| f(&vm.read().unwrap_or_else(|e| e.into_inner())))
    };
    let read_u64 = |a: u64| {
        user.read_value::<u64>(a)
            .ok()
            .or_else(|| gpu(&|vm| vm.load_u64(a).ok()))
    };
    let Some(payload) = read_u64(header + 24) else {
        return;
    };
    let Some(current) = read_u64(payload) else {
        return;
    };
    let value = current | error_reason;
    if user.write_value(payload, &value).is_err()
        && gpu(&|vm| vm.store_u64(payload, value).ok().map(|()| 0)).is_none()
    {
        return;
    }
    let event_id = user
        .read_value::<u32>(header + 32)
        .ok()
        .or_else(|| gpu(&|vm| vm.load_u32(header + 32).ok().map(u64::from)).map(|v| v as u32));
    let Some(event_id) = event_id else {
        return;
    };
    let set = p.events.set(event_id);
    log::debug!(
        target: crate::layer::INTERRUPT,
        "pasid {:#x}: queue exception {error_reason:#x} to the runtime: payload {payload:#x}, event {event_id} ({set:?})",
        p.pasid
    );
}

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
        log::debug!(target: crate::layer::INTERRUPT, "ignored (VMID {} is not KFD's): {e}", e.vmid);
        return;
    }
    let Some(p) = model.process(u32::from(e.pasid)) else {
        log::debug!(target: crate::layer::INTERRUPT, "no process with pasid {:#x}: {e}", e.pasid);
        return;
    };
    let ctxid = e.src_data[0];
    match (e.client_id, e.source_id) {
        (IH_CLIENT_GRBM_CP, SRC_CP_END_OF_PIPE) => {
            if ctxid == 0 && drops_zero_ctxid(node) {
                log::trace!(target: crate::layer::INTERRUPT, "end-of-pipe with context id 0 dropped");
                return;
            }
            let fired = p.events.signal_interrupt(ctxid, 32);
            log::debug!(target: crate::layer::INTERRUPT, "pasid {:#x}: CP end-of-pipe ctxid {ctxid:#x} -> events {fired:?}", e.pasid);
        }
        (IH_CLIENT_GRBM_CP, SRC_SQ_INTERRUPT_MSG) => {
            let encoding = (ctxid >> SQ_WAVE_CTXID_ENCODING_SHIFT) & 3;
            if encoding == SQ_ENCODING_INST {
                let data = crate::hw::ih::sq_int_data(ctxid, e.src_data[1]);
                if ctxid & SQ_WAVE_CTXID_PRIV != 0
                    && dbg_ev_from_interrupt(
                        &p,
                        node,
                        data & DEBUG_DOORBELL_MASK,
                        debug_trap_code(data),
                    )
                {
                    return;
                }
                let fired = p.events.signal_interrupt(data, 24);
                log::debug!(target: crate::layer::INTERRUPT, "pasid {:#x}: SQ s_sendmsg data {data:#x} -> events {fired:?}", e.pasid);
            } else {
                log::debug!(target: crate::layer::INTERRUPT, "pasid {:#x}: SQ interrupt (encoding {encoding}) not handled: {e}", e.pasid);
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
                    log::warn!(target: crate::layer::INTERRUPT, "remapping the queues after a recovered fault failed: {err:?}");
                }
                log::debug!(
                    target: crate::layer::INTERRUPT,
                    "pasid {:#x}: recovered GPU VM fault at page {:#x} on gpu {:#x}; queues remapped",
                    e.pasid,
                    data.va,
                    node.gpu_id
                );
                return;
            }
            log::warn!(
                target: crate::layer::INTERRUPT,
                "pasid {:#x}: GPU VM fault at page {:#x} on gpu {:#x}; evicting the process's queues",
                e.pasid,
                data.va,
                node.gpu_id
            );
            crate::smi::vm_fault(node, p.owner_pid);
            if let Err(err) = node.dqm().evict_process(&node.gpu, p.pasid) {
                log::warn!(target: crate::layer::INTERRUPT, "evicting after the VM fault failed: {err:?}");
            }
            p.events.signal_memory_exception(data);
        }
        (_, SRC_CP_BAD_OPCODE) => {
            let error = node.gpu.hws.queue_error(e.src_data[1]);
            let reason = error
                .as_ref()
                .map_or_else(|| "unknown".to_owned(), |q| q.to_string());
            log::error!(
                target: crate::layer::INTERRUPT,
                "pasid {:#x}: queue with doorbell {:#x} stopped: {reason}",
                e.pasid,
                e.src_data[1]
            );
            // As the kernel's `kfd_set_dbg_ev_from_interrupt`: the runtime hears of the
            // stopped queue through its error payload and event, and reports it instead of
            // waiting for packets that will never complete.
            let ecode = error
                .as_ref()
                .map_or(EC_QUEUE_PACKET_RESERVED, exception_code);
            if !dbg_ev_from_interrupt(&p, node, ctxid & DEBUG_DOORBELL_MASK, KFD_EC_MASK(ecode)) {
                p.events.signal_queue_error();
            }
        }
        _ => log::debug!(target: crate::layer::INTERRUPT, "unhandled interrupt: {e}"),
    }
}

/// The exception code (`KFD_EC`) a queue error reaches the runtime as: a packet the model does
/// not execute is an unsupported packet, anything malformed a reserved one.
fn exception_code(error: &crate::hw::engine::QueueError) -> u32 {
    use crate::hw::engine::QueueError;
    match error {
        QueueError::NotModelled { .. } => EC_QUEUE_PACKET_UNSUPPORTED,
        QueueError::VmFault(_) => EC_QUEUE_WAVE_MEMORY_VIOLATION,
        QueueError::BadPacket { .. } | QueueError::WritePointer { .. } => EC_QUEUE_PACKET_RESERVED,
    }
}

fn sdma_trap(events: &crate::events::EventTable, e: &IhEntry) {
    let ctxid = e.src_data[0];
    let fired = events.signal_interrupt(ctxid & 0x0FFF_FFFF, 28);
    log::debug!(target: crate::layer::INTERRUPT, "pasid {:#x}: SDMA trap ctxid {ctxid:#x} -> events {fired:?}", e.pasid);
}
