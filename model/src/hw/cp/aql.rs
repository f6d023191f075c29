//! The AQL side of the CP: an AQL ring's 64-byte packets (kernel dispatch, barriers, the AMD
//! vendor packets), the completion and `amd_signal_t` protocol, and the scratch ROCr gives a
//! queue in its `amd_queue_t`.

use super::exceptions::{report_inactive, QUEUE_ERROR_INVALID_CODE};
use super::{doorbell_id, placement, CpQueue, CpReadPointer};
use crate::hw::engine::{ExecEnv, IbFrame, QueueError, RunState};
use crate::hw::ih::{
    sq_sendmsg_context, IH_CLIENT_GRBM_CP, SQ_WAVE_CTXID_PRIV, SRC_CP_END_OF_PIPE,
    SRC_SQ_INTERRUPT_MSG,
};
use crate::hw::spi::{amd_queue, DispatchSetup, KernelRun, Scratch};
use crate::hw::vm::{GpuVm, VmFault};
use pm4::aql::{
    amd_signal, decode_aql, AqlError, AqlPacket, AqlPacketType, SignalCondition,
    COMPLETION_SIGNAL_OFFSET, PACKET_SIZE,
};
use pm4::decode::{decode_pm4_packet, Packet};
use pm4::ring::AQL_PACKET_BYTES;

/// The address of the field `offset` bytes into the `amd_signal_t` at `signal` (a 64-bit value
/// from a packet): past the top of the address space it is a fault at the signal, not an
/// overflow.
pub(super) fn signal_field(signal: u64, offset: u64) -> Result<u64, VmFault> {
    signal.checked_add(offset).ok_or(VmFault {
        va: signal,
        write: false,
        not_present: true,
    })
}

impl CpQueue {
    /// One pass over an AQL ring: the vendor packet's IB entered first, then the packets up to
    /// the write index, at most `budget` of them (counted in `done`).
    pub(super) fn run_aql(
        &mut self,
        env: &mut ExecEnv<'_>,
        doorbell: u64,
        budget: usize,
        done: &mut usize,
        scratch: &mut Vec<u32>,
    ) -> Result<RunState, QueueError> {
        let packets = self.ring.packets();
        if packets == 0 {
            return Ok(RunState::Idle);
        }
        let wptr = self.wptr(env, doorbell, packets)?;
        while *done < budget {
            let CpReadPointer::Aql(rptr) = self.rptr else {
                return Ok(RunState::Idle);
            };
            let pkt = self.ring.base + rptr.slot(packets) * AQL_PACKET_BYTES;
            if self.aql_ib_active {
                match self.step_ib(env, scratch)? {
                    Some(s @ (RunState::Parked | RunState::Yielded)) => return Ok(s),
                    Some(_) => *done += 1,
                    None if self.ibs.is_empty() => {
                        self.aql_ib_active = false;
                        self.complete_aql(env, pkt)?;
                    }
                    None => {}
                }
                continue;
            }
            if wptr == rptr.get() {
                return Ok(RunState::Idle);
            }
            let slot = read_aql_slot(env.vm, pkt)?;
            let packet = decode_aql(&slot).map_err(|e| match e {
                AqlError::UnknownAmdFormat(f) => QueueError::NotModelled {
                    addr: pkt,
                    what: format!("AMD vendor AQL format {f}"),
                },
                AqlError::UnknownType(_) | AqlError::WrongSize(_) => QueueError::BadPacket {
                    addr: pkt,
                    reason: e.to_string(),
                },
            })?;
            log::trace!(target: crate::layer::CP, "{pkt:#x}: AQL {packet}");
            if self.packet_start_ts.is_none() && !matches!(packet, AqlPacket::Invalid(_)) {
                self.packet_start_ts = Some(env.clock.now());
            }
            match packet {
                AqlPacket::Invalid(_) => return Ok(RunState::Idle),
                AqlPacket::KernelDispatch(k) => {
                    if self.kernel.is_none() {
                        let queue_addr = self
                            .ring
                            .rptr_report
                            .wrapping_sub(amd_queue::READ_DISPATCH_ID);
                        let target = match self.shader_isa.clone() {
                            Ok(t) => t,
                            Err(why) => {
                                // As for code the CP cannot run: error 8 ("invalid code") in
                                // queue_inactive_signal, which ROCr reports as
                                // HSA_STATUS_ERROR_INVALID_CODE_OBJECT; the queue stops.
                                report_inactive(env, queue_addr, QUEUE_ERROR_INVALID_CODE)?;
                                return Err(QueueError::NotModelled {
                                    addr: pkt,
                                    what: format!(
                                        "shader execution (AQL KERNEL_DISPATCH of kernel object {:#x}): {why}",
                                        k.kernel_object
                                    ),
                                });
                            }
                        };
                        // After an out-of-scratch stop the scratch fields are read only
                        // once the runtime's release store of 0 into queue_inactive_signal
                        // says it has written them all: its handler writes them as plain
                        // stores in whatever order its compiler chose, so a new lane size
                        // read early may come with the old (or no) scratch base.
                        if self.scratch_wait {
                            if let Some(waiting) = self.scratch_grown(env, pkt, queue_addr)? {
                                return Ok(waiting);
                            }
                        }
                        let scratch = aql_scratch(env.vm, queue_addr);
                        if k.private_segment_size > scratch.lane_bytes {
                            return self.out_of_scratch(env, pkt, queue_addr);
                        }
                        let setup = DispatchSetup {
                            process: self.state.process,
                            doorbell_id: doorbell_id(&env.queue),
                            placement: placement(&env.queue, self.state.shader_array),
                            ..DispatchSetup::from_aql(
                                target,
                                pkt,
                                &k,
                                queue_addr,
                                rptr.get(),
                                scratch,
                            )
                        };
                        let kept = std::mem::take(&mut self.state.code);
                        let mut run = KernelRun::start(env.vm, setup)?
                            .with_cu_threads(self.state.cu_threads)
                            .with_strict(self.state.strict)
                            .with_gws(self.state.gws.clone())
                            .with_code(env.vm, kept);
                        if let Some(a) = &self.state.shader_activity {
                            run.watch(a);
                        }
                        self.kernel = Some(Box::new(run));
                    }
                    let Some(run) = self.kernel.as_mut() else {
                        return Ok(RunState::Idle);
                    };
                    let finished = run.step(env.vm);
                    let messages = run.take_messages();
                    let halted = run.exception().cloned();
                    // The memory hub raises a VM fault when the access faults, before the
                    // faulting wave's trap handler can send anything.
                    if let Some(ex) = halted.as_ref().filter(|ex| ex.fault.is_some()) {
                        self.wave_exception(env, pkt, ex.clone())?;
                    }
                    for m in messages {
                        log::debug!(
                            target: crate::layer::SPI,
                            "s_sendmsg {:#x} m0 {:#x}{}",
                            m.simm16,
                            m.m0,
                            if m.privileged { " (trap handler)" } else { "" }
                        );
                        // SIMM16[3:0] is the message; the SQ forwards MSG_INTERRUPT with M0,
                        // marked PRIV when the trap handler sent it.
                        if m.simm16 & 0xf == MSG_INTERRUPT {
                            let [mut ctx0, ctx1] = sq_sendmsg_context(m.m0 & 0xff_ffff);
                            if m.privileged {
                                ctx0 |= SQ_WAVE_CTXID_PRIV;
                            }
                            env.interrupt(
                                IH_CLIENT_GRBM_CP,
                                SRC_SQ_INTERRUPT_MSG,
                                [ctx0, ctx1, 0, 0],
                            );
                        }
                    }
                    if let Some(ex) = halted {
                        return self.wave_exception(env, pkt, ex);
                    }
                    let Some(run) = self.kernel.as_mut() else {
                        return Ok(RunState::Idle);
                    };
                    let retry = run.awaits_retry();
                    if !matches!(finished, Ok(false)) && !retry {
                        run.watch_end(finished.is_err());
                    }
                    match finished {
                        Ok(false) => return Ok(RunState::Yielded),
                        Ok(true) => {
                            if let Some(mut run) = self.kernel.take() {
                                self.state.code = run.take_code();
                            }
                            self.complete_aql(env, pkt)?;
                            *done += 1;
                        }
                        Err(e) => {
                            // A retry fault keeps the dispatch: it resumes once remapped.
                            if !retry {
                                self.kernel = None;
                            }
                            return Err(e);
                        }
                    }
                }
                AqlPacket::AgentDispatch(_) => {
                    return Err(QueueError::NotModelled {
                        addr: pkt,
                        what: "an AQL AGENT_DISPATCH".into(),
                    })
                }
                AqlPacket::BarrierAnd(b) | AqlPacket::BarrierOr(b) => {
                    let mut any = false;
                    let mut all = true;
                    let mut deps = 0;
                    for signal in b.dependencies() {
                        deps += 1;
                        let value = env.vm.load_u64(signal_field(signal, amd_signal::VALUE)?)?;
                        any |= value == 0;
                        all &= value == 0;
                    }
                    let ready = if b.header.packet_type() == AqlPacketType::BarrierAnd {
                        all
                    } else {
                        any || deps == 0
                    };
                    if !ready {
                        return Ok(RunState::Parked);
                    }
                    self.complete_aql(env, pkt)?;
                    *done += 1;
                }
                // hsa_ext_amd.h: a null signal is a satisfied dependency (ROCclr sends one
                // with mask 0 when a barrier-value packet has nothing to wait for).
                AqlPacket::BarrierValue(v) if v.signal == 0 => {
                    self.complete_aql(env, pkt)?;
                    *done += 1;
                }
                AqlPacket::BarrierValue(v) => {
                    let Some(cond) = SignalCondition::from_raw(v.cond) else {
                        return Err(QueueError::BadPacket {
                            addr: pkt,
                            reason: format!(
                                "BARRIER_VALUE condition {} is not one of EQ, NE, LT, GTE",
                                v.cond
                            ),
                        });
                    };
                    let current = env
                        .vm
                        .load_u64(signal_field(v.signal, amd_signal::VALUE)?)?
                        & v.mask as u64;
                    if !cond.holds(current as i64, v.value) {
                        return Ok(RunState::Parked);
                    }
                    self.complete_aql(env, pkt)?;
                    *done += 1;
                }
                AqlPacket::Pm4Ib(ib) => match decode_pm4_packet(&ib.pm4_ib_command, self.gen) {
                    Ok((Packet::IndirectBuffer(ib), _)) => {
                        self.enter_ib(IbFrame::new(ib.ib_addr(), ib.control.ib_size()))?;
                        self.aql_ib_active = true;
                    }
                    Ok((other, _)) => {
                        return Err(QueueError::BadPacket {
                            addr: pkt,
                            reason: format!(
                                "a PM4-IB vendor packet must hold INDIRECT_BUFFER, not {}",
                                other.name()
                            ),
                        })
                    }
                    Err(e) => {
                        return Err(QueueError::BadPacket {
                            addr: pkt,
                            reason: format!("PM4-IB vendor packet: {e}"),
                        })
                    }
                },
            }
        }
        Ok(RunState::Busy)
    }

    /// Retires the AQL packet at `pkt`: its completion signal is decremented (and its event
    /// mailbox written and an interrupt raised when it has one), the slot is set back to
    /// INVALID and the read index moves on.
    fn complete_aql(&mut self, env: &ExecEnv<'_>, pkt: u64) -> Result<(), QueueError> {
        let vm = env.vm;
        let signal = vm.load_u64(pkt + COMPLETION_SIGNAL_OFFSET as u64)?;
        let start_ts = self.packet_start_ts.take();
        if signal != 0 {
            // With AMD_QUEUE_PROPERTIES_ENABLE_PROFILING the CP stamps the signal before the
            // decrement: ROCr's hsa_amd_profiling_get_dispatch_time (HIP events) reads them.
            // A queue without an amd_queue_t (no read-pointer report, or none mapped there)
            // has no profiling bit.
            let queue_addr = self
                .ring
                .rptr_report
                .wrapping_sub(amd_queue::READ_DISPATCH_ID);
            let properties = match self.ring.rptr_report {
                0 => 0,
                _ => vm
                    .load_u32(queue_addr.wrapping_add(amd_queue::QUEUE_PROPERTIES))
                    .unwrap_or(0),
            };
            if properties & amd_queue::PROPERTIES_ENABLE_PROFILING != 0 {
                let end = env.clock.now();
                let start = start_ts.unwrap_or(end).min(end);
                vm.store_u64(signal_field(signal, amd_signal::START_TS)?, start)?;
                vm.store_u64(signal_field(signal, amd_signal::END_TS)?, end)?;
            }
            let old = vm.fetch_add_u64(signal_field(signal, amd_signal::VALUE)?, u64::MAX)?;
            log::debug!(target: crate::layer::CP, "{pkt:#x}: retired; completion signal {signal:#x}: {old} -> {}", old.wrapping_sub(1));
            notify_signal(env, signal)?;
        }
        let dw0 = vm.load_u32(pkt)?;
        vm.store_u32(pkt, (dw0 & !0xFF) | u32::from(AqlPacketType::Invalid.raw()))?;
        if let CpReadPointer::Aql(r) = self.rptr {
            self.rptr = CpReadPointer::Aql(r.add(1));
        }
        self.report_rptr(vm)?;
        Ok(())
    }
}

/// `s_sendmsg` message id (SIMM16[3:0]) of an interrupt to the host.
const MSG_INTERRUPT: u16 = 1;

/// Wakes the waiters of the `amd_signal_t` at `signal`: when it has an event mailbox, its
/// event id goes there and the CP raises the end-of-pipe interrupt that amdkfd turns into the
/// event.
pub(super) fn notify_signal(env: &ExecEnv<'_>, signal: u64) -> Result<(), VmFault> {
    let vm = env.vm;
    let mailbox = vm.load_u64(signal_field(signal, amd_signal::EVENT_MAILBOX_PTR)?)?;
    if mailbox != 0 {
        let event_id = vm.load_u32(signal_field(signal, amd_signal::EVENT_ID)?)?;
        vm.store_u64(mailbox, u64::from(event_id))?;
        env.interrupt(IH_CLIENT_GRBM_CP, SRC_CP_END_OF_PIPE, [event_id, 0, 0, 0]);
    }
    Ok(())
}

/// The AQL packet in the slot at `pkt`, read as the HSA packet protocol orders it: the
/// producer fills the body, then stores the first dword (header and setup) with release
/// semantics, and the write pointer may move before either (ROCr bumps `write_dispatch_id`,
/// which the CP polls, before it fills the slot). So the first dword is loaded first, with
/// acquire, and the copy of the whole slot after it keeps that dword: a header seen valid
/// comes with the body written before it, never with the slot's stale body (which a single
/// 64-byte copy, loading its halves in whatever order the compiler chose, could return).
fn read_aql_slot(vm: &GpuVm, pkt: u64) -> Result<[u8; PACKET_SIZE], VmFault> {
    let first = vm.load_u32(pkt)?;
    let mut slot = [0u8; PACKET_SIZE];
    vm.read(pkt, &mut slot)?;
    slot[..4].copy_from_slice(&first.to_le_bytes());
    Ok(slot)
}

/// The scratch ROCr set up in the `amd_queue_t` at `queue`; none when it cannot be read.
fn aql_scratch(vm: &GpuVm, queue: u64) -> Scratch {
    let read = || -> Result<Scratch, VmFault> {
        let mut resource = [0u32; 4];
        for (i, r) in resource.iter_mut().enumerate() {
            *r = vm.load_u32(queue + amd_queue::SCRATCH_RESOURCE_DESCRIPTOR + 4 * i as u64)?;
        }
        Ok(Scratch {
            resource,
            base: vm.load_u64(queue + amd_queue::SCRATCH_BACKING_MEMORY_LOCATION)?,
            size: vm.load_u64(queue + amd_queue::SCRATCH_BACKING_MEMORY_BYTE_SIZE)?,
            lane_bytes: vm.load_u32(queue + amd_queue::SCRATCH_WAVE64_LANE_BYTE_SIZE)?,
            max_waves: None,
        })
    };
    read().unwrap_or_default()
}
