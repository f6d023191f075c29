//! What the CP reports when a queue or one of its waves stops: the interrupt of a stopped
//! queue, the out-of-scratch protocol, and a halted wave's error in `queue_inactive_signal`
//! and in the context-save header's error payload.

use super::aql::{notify_signal, signal_field};
use super::CpQueue;
use crate::hw::doorbell::DoorbellBar;
use crate::hw::engine::{ExecEnv, QueueError, RunState};
use crate::hw::ih::{
    IH_CLIENT_GRBM_CP, IH_CLIENT_UTCL2, SRC_CP_BAD_OPCODE, SRC_CP_END_OF_PIPE, SRC_VM_FAULT,
    VM_FAULT_NOT_PRESENT, VM_FAULT_READ_ONLY, VM_FAULT_WRITE,
};
use crate::hw::spi::{amd_queue, WaveException, QUEUE_ERROR_TRAP};
use crate::hw::vm::VmFault;
use pm4::aql::amd_signal;

impl CpQueue {
    /// The CP's out-of-scratch protocol (ROCr's dynamic scratch): the queue stops on the
    /// dispatch, error code 1 goes into `queue_inactive_signal` with its event; when the
    /// runtime has grown the scratch it stores 0 there and the dispatch starts
    /// ([`CpQueue::scratch_grown`]).
    pub(super) fn out_of_scratch(
        &mut self,
        env: &ExecEnv<'_>,
        pkt: u64,
        queue_addr: u64,
    ) -> Result<RunState, QueueError> {
        let vm = env.vm;
        let signal = vm.load_u64(queue_addr + amd_queue::QUEUE_INACTIVE_SIGNAL)?;
        if signal == 0 {
            return Err(QueueError::NotModelled {
                addr: pkt,
                what: "a dispatch needing more scratch on a queue without queue_inactive_signal"
                    .into(),
            });
        }
        log::debug!(target: crate::layer::CP, "{pkt:#x}: out of scratch; signalling {signal:#x}");
        vm.store_u64(
            signal_field(signal, amd_signal::VALUE)?,
            QUEUE_ERROR_OUT_OF_SCRATCH,
        )?;
        notify_signal(env, signal)?;
        self.scratch_wait = true;
        Ok(RunState::Parked)
    }

    /// Whether the runtime has answered an out-of-scratch stop: `None` once it stored 0 into
    /// `queue_inactive_signal` (loaded with acquire, so the scratch fields it wrote before
    /// are seen); the queue stays parked while the value is still the error code. Any other
    /// value (ROCr stores -1 when it gives up) leaves the queue stopped with an error.
    pub(super) fn scratch_grown(
        &mut self,
        env: &ExecEnv<'_>,
        pkt: u64,
        queue_addr: u64,
    ) -> Result<Option<RunState>, QueueError> {
        let vm = env.vm;
        let signal = vm.load_u64(queue_addr + amd_queue::QUEUE_INACTIVE_SIGNAL)?;
        match vm.load_u64(signal_field(signal, amd_signal::VALUE)?)? {
            0 => {
                self.scratch_wait = false;
                Ok(None)
            }
            QUEUE_ERROR_OUT_OF_SCRATCH => Ok(Some(RunState::Parked)),
            other => Err(QueueError::NotModelled {
                addr: pkt,
                what: format!(
                    "a dispatch whose scratch the runtime did not grow (queue_inactive_signal {:#x})",
                    other
                ),
            }),
        }
    }

    /// A wave of the dispatch at `pkt` halted on a trap or exception; the queue stays on the
    /// packet with the wave halted. A memory violation is also the VM fault the memory hub
    /// reports. When the wave's trap handler reported the exception itself (ROCr's, which
    /// the model runs), that is all. Otherwise (no handler, or the handler failed) the CP
    /// does what ROCr's handler would: the error bit goes into `queue_inactive_signal`
    /// (atomically, once) and its event fires; without such a signal the queue stops with an
    /// error.
    pub(super) fn wave_exception(
        &mut self,
        env: &ExecEnv<'_>,
        pkt: u64,
        ex: WaveException,
    ) -> Result<RunState, QueueError> {
        if self.wave_halted {
            return Ok(RunState::Parked);
        }
        // A memory violation is reported as the VM fault it is: the memory hub's interrupt,
        // on which amdkfd signals the memory exception event and evicts the process's
        // queues (ROCr prints its "Memory access fault" message and aborts).
        if let Some(f) = ex.fault {
            log::error!(target: crate::layer::SPI, "{pkt:#x}: wave halted: {}", ex.what);
            post_queue_error(
                env,
                IH_CLIENT_GRBM_CP,
                IH_CLIENT_UTCL2,
                &QueueError::VmFault(f),
            );
            self.wave_halted = true;
            return Ok(RunState::Parked);
        }
        if ex.reported {
            log::error!(target: crate::layer::SPI, "{pkt:#x}: wave halted by its trap handler: {}", ex.what);
            self.wave_halted = true;
            return Ok(RunState::Parked);
        }
        let vm = env.vm;
        let queue_addr = self
            .ring
            .rptr_report
            .wrapping_sub(amd_queue::READ_DISPATCH_ID);
        let signal = vm
            .load_u64(queue_addr + amd_queue::QUEUE_INACTIVE_SIGNAL)
            .unwrap_or(0);
        if signal == 0 {
            self.kernel = None;
            return Err(QueueError::NotModelled {
                addr: pkt,
                what: format!(
                    "a halted wave ({}) on a queue without queue_inactive_signal",
                    ex.what
                ),
            });
        }
        log::error!(target: crate::layer::SPI, "{pkt:#x}: wave halted: {}", ex.what);
        vm.update_u64(signal_field(signal, amd_signal::VALUE)?, |v| v | ex.error)?;
        notify_signal(env, signal)?;
        self.report_queue_exception(env, &ex)?;
        self.wave_halted = true;
        Ok(RunState::Parked)
    }

    /// amdkfd's side of a wave exception for a runtime that registered an error payload in
    /// the queue's context-save header (ROCr with KFD exception reporting): the exception's
    /// `KFD_EC_MASK` is ORed into `err_payload_addr` and event `err_event_id` is signalled.
    /// Such a runtime clears `queue_inactive_signal` and acts on this payload instead.
    /// The event goes through the end-of-pipe interrupt path, which fires only an event
    /// whose mailbox slot was written: ROCr uses one event for both signals, and
    /// `notify_signal` has just written it. (When ROCr's own handler runs, amdkfd does this
    /// from the handler's SQ interrupt message: `crate::interrupt`.)
    fn report_queue_exception(&self, env: &ExecEnv<'_>, ex: &WaveException) -> Result<(), VmFault> {
        if self.ctx_save_address == 0 {
            return Ok(());
        }
        let vm = env.vm;
        let header = self.ctx_save_address;
        let payload = vm.load_u64(header + CTX_SAVE_HEADER_ERR_PAYLOAD_ADDR)?;
        let event_id = vm.load_u32(header + CTX_SAVE_HEADER_ERR_EVENT_ID)?;
        if payload == 0 {
            return Ok(());
        }
        let code = if ex.error == QUEUE_ERROR_TRAP {
            kfd_sys::EC_QUEUE_WAVE_TRAP
        } else {
            kfd_sys::EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION
        };
        log::debug!(target: crate::layer::CP, "queue exception {code}: payload {payload:#x}, event {event_id}");
        vm.update_u64(payload, |v| v | kfd_sys::KFD_EC_MASK(code))?;
        if event_id != 0 {
            env.interrupt(IH_CLIENT_GRBM_CP, SRC_CP_END_OF_PIPE, [event_id, 0, 0, 0]);
        }
        Ok(())
    }
}

/// `kfd_context_save_area_header.err_payload_addr`'s offset.
const CTX_SAVE_HEADER_ERR_PAYLOAD_ADDR: u64 =
    std::mem::offset_of!(kfd_sys::kfd_context_save_area_header, err_payload_addr) as u64;
/// `kfd_context_save_area_header.err_event_id`'s offset.
const CTX_SAVE_HEADER_ERR_EVENT_ID: u64 =
    std::mem::offset_of!(kfd_sys::kfd_context_save_area_header, err_event_id) as u64;

/// `queue_inactive_signal` error code: the dispatch's code cannot run ("invalid code").
pub(super) const QUEUE_ERROR_INVALID_CODE: u64 = 8;

/// ORs `error` into the `queue_inactive_signal` of the `amd_queue_t` at `queue` and wakes
/// its waiters; nothing when the queue has no such signal (not a ROCr queue).
pub(super) fn report_inactive(env: &ExecEnv<'_>, queue: u64, error: u64) -> Result<(), VmFault> {
    let vm = env.vm;
    let signal = vm
        .load_u64(queue.wrapping_add(amd_queue::QUEUE_INACTIVE_SIGNAL))
        .unwrap_or(0);
    if signal == 0 {
        return Ok(());
    }
    vm.update_u64(signal_field(signal, amd_signal::VALUE)?, |v| v | error)?;
    notify_signal(env, signal)
}

/// `queue_inactive_signal` error code: the dispatch needs more scratch than the queue has.
const QUEUE_ERROR_OUT_OF_SCRATCH: u64 = 1;

/// Posts the interrupt a stopped queue raises: a VM fault from the memory hub (`fault_client`)
/// or a queue error from the engine (`engine_client`).
pub(crate) fn post_queue_error(
    env: &ExecEnv<'_>,
    engine_client: u8,
    fault_client: u8,
    e: &QueueError,
) {
    match e {
        QueueError::VmFault(f) => {
            let page = f.va >> 12;
            let mut data1 = ((page >> 32) & 0xF) as u32;
            if f.write {
                data1 |= VM_FAULT_WRITE;
            }
            let kind = if f.not_present {
                VM_FAULT_NOT_PRESENT
            } else {
                VM_FAULT_READ_ONLY
            };
            env.interrupt(fault_client, SRC_VM_FAULT, [page as u32, data1, kind, 0]);
        }
        other => {
            let id = DoorbellBar::slice_and_id(env.queue.doorbell_offset).map_or(0, |(_, id)| id);
            env.interrupt(
                engine_client,
                SRC_CP_BAD_OPCODE,
                [
                    (id & 0x3FF) | other.code() << 10,
                    env.queue.doorbell_offset,
                    0,
                    0,
                ],
            );
        }
    }
}
