//! The SQ's part of a wave's run: its outside world ([`VmEnv`]: global memory through the
//! process's GPU VM, the workgroup's LDS, `s_sendmsg`), the exceptions a wave stops on and
//! the trap handler it enters with them.

use super::polling::Activity;
use super::TrapHandler;
use crate::hw::engine::QueueError;
use crate::hw::vm::{GpuVm, Tlb, VmFault};
use isa::exec::{Access, AtomicRequest, Lanes, MemFault, Wave, WaveEnv, WAVE_SIZE};
use std::sync::atomic::{AtomicBool, Ordering};

/// `queue_inactive_signal` bit ROCr's trap handler sets for `s_trap` (abort, `__builtin_trap`).
pub const QUEUE_ERROR_TRAP: u64 = 1 << 31;
/// `queue_inactive_signal` bit ROCr's trap handler sets for an illegal instruction (the model
/// also reports an instruction it has no semantics for this way).
pub const QUEUE_ERROR_ILLEGAL_INSTRUCTION: u64 = 1 << 30;
/// `queue_inactive_signal` bit ROCr's trap handler sets for a memory violation (TRAPSTS
/// MEM_VIOL without XNACK_ERROR).
pub const QUEUE_ERROR_MEMORY_VIOLATION: u64 = 1 << 29;

/// A wave that stopped on a trap or an exception: it stays halted, and the runtime learns of
/// it through its queue (what ROCr's second-level trap handler does on a GPU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaveException {
    /// The `queue_inactive_signal` error bit.
    pub error: u64,
    /// What happened, for the log.
    pub what: String,
    /// For a memory violation: the VM fault, which the memory hub reports to the driver as
    /// well (amdkfd's memory exception event).
    pub fault: Option<VmFault>,
    /// The wave's trap handler has reported the exception itself and halted the wave
    /// (STATUS.HALT): the queue only stays on the packet. Otherwise (no handler, or the
    /// handler failed) the CP reports it the way ROCr's handler would.
    pub reported: bool,
}

/// An `s_sendmsg` the SQ forwards: SIMM16, M0, and whether the wave sent it from its trap
/// handler (STATUS.PRIV: the SQ interrupt word's PRIV bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqMessage {
    /// `s_sendmsg` SIMM16 (`[3:0]`: the message).
    pub simm16: u16,
    /// M0 when it was sent.
    pub m0: u32,
    /// Sent by a privileged (trap handler) wave.
    pub privileged: bool,
}

/// `s_sendmsg` message id (SIMM16[3:0]) asking the SQ for the wave's queue doorbell.
pub(super) const MSG_GET_DOORBELL: u16 = 10;
/// The doorbell id bits of the MSG_GET_DOORBELL answer.
pub(super) const DOORBELL_ID_MASK: u32 = 0xfff;

/// `TRAPSTS.MEM_VIOL` (bit 8).
const TRAPSTS_MEM_VIOL: u32 = 1 << 8;
/// `TRAPSTS.ILLEGAL_INST` (bit 11).
const TRAPSTS_ILLEGAL_INST: u32 = 1 << 11;
/// `ttmp12`: where the first-level handler leaves the wave's STATUS for the second level.
const TTMP_SAVED_STATUS: usize = 12;

/// What the hardware (and amdkfd's first-level handler, which the model stands in for) does
/// when a wave traps with a handler installed: `{ttmp1, ttmp0}` hold the PC with the trap id
/// in `ttmp1[23:16]` (`s_trap` has set them; an exception saves the faulting PC with id 0 and
/// sets its TRAPSTS bit: MEM_VIOL for a memory violation, ILLEGAL_INST otherwise),
/// `ttmp12` the wave's STATUS, `ttmp14:15` the handler's TMA, STATUS.PRIV is set and the wave
/// continues at TBA. `s_rfe_b64` returns.
pub(super) fn enter_trap_handler(wave: &mut Wave, handler: TrapHandler, error: u64) {
    use isa::exec::wave::sreg::TTMP0;
    if error != QUEUE_ERROR_TRAP {
        wave.sgpr[TTMP0] = wave.pc as u32;
        wave.sgpr[TTMP0 + 1] = (wave.pc >> 32) as u32 & 0xffff;
        wave.trapsts |= if error == QUEUE_ERROR_MEMORY_VIOLATION {
            TRAPSTS_MEM_VIOL
        } else {
            TRAPSTS_ILLEGAL_INST
        };
    }
    wave.sgpr[TTMP0 + TTMP_SAVED_STATUS] = wave.status_value();
    wave.sgpr[TTMP0 + 14] = handler.tma as u32;
    wave.sgpr[TTMP0 + 15] = (handler.tma >> 32) as u32;
    wave.status |= isa::exec::wave::status::PRIV;
    wave.pc = handler.tba;
}

/// The waves' outside world: the process's GPU VM, the workgroup's LDS and the message log.
pub(super) struct VmEnv<'a> {
    pub(super) vm: &'a GpuVm,
    /// The worker's translation cache.
    pub(super) tlb: &'a mut Tlb,
    pub(super) lds: &'a mut Vec<u8>,
    pub(super) messages: &'a mut Vec<SqMessage>,
    /// The wave runs its trap handler (its messages carry PRIV).
    pub(super) privileged: bool,
    /// What the wave's accesses in this run did (whether it polls).
    pub(super) activity: Activity,
    /// `KFD_MODEL_STRICT=lds`: an LDS access outside the allocation faults.
    pub(super) lds_strict: bool,
    /// The dispatch's "LDS access dropped" warning has been logged.
    pub(super) lds_warned: &'a AtomicBool,
    /// `KFD_MODEL_STRICT=vgprs`: naming a VGPR past the wave's allocation faults.
    pub(super) vgpr_strict: bool,
    /// The dispatch's "VGPR past the allocation" warning has been logged.
    pub(super) vgprs_warned: &'a AtomicBool,
    /// The dispatch's kernel object, to name it in those warnings.
    pub(super) kernel_object: u64,
}

/// The VM fault a wave's retry fault posts.
pub(super) fn retry_fault(m: MemFault) -> QueueError {
    QueueError::VmFault(VmFault {
        va: m.address,
        write: matches!(m.access, Access::Write | Access::Atomic),
        not_present: true,
    })
}

fn mem_fault(f: VmFault, access: Access) -> MemFault {
    MemFault {
        address: f.va,
        access,
    }
}

impl WaveEnv for VmEnv<'_> {
    fn load(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        out: &mut [Lanes],
    ) -> Result<(), MemFault> {
        self.vm
            .load_lanes(self.tlb, addresses, exec, bytes as usize, out)
            .map_err(|f| mem_fault(f, Access::Read))?;
        let lane = exec.trailing_zeros() as usize;
        if let (Some(a), Some(v)) = (addresses.get(lane), out.first().and_then(|d| d.get(lane))) {
            self.activity.read(*a, *v);
        }
        Ok(())
    }

    fn store(
        &mut self,
        addresses: &[u64; WAVE_SIZE],
        exec: u64,
        bytes: u32,
        data: &[Lanes],
    ) -> Result<(), MemFault> {
        self.activity.write();
        self.vm
            .store_lanes(self.tlb, addresses, exec, bytes as usize, data)
            .map_err(|f| mem_fault(f, Access::Write))
    }

    fn load_run(&mut self, address: u64, out: &mut Lanes) -> bool {
        let done = self.vm.load_run(self.tlb, address, out);
        if done {
            self.activity.read(address, out[0]);
        }
        done
    }

    fn store_run(&mut self, address: u64, data: &Lanes) -> bool {
        self.activity.write();
        self.vm.store_run(self.tlb, address, data)
    }

    fn load_scalar(&mut self, address: u64, out: &mut [u32]) -> Result<(), MemFault> {
        // s_load_dwordx16 at most: no allocation for the common sizes
        let mut small = [0u8; 64];
        let mut large = Vec::new();
        let buf = match small.get_mut(..out.len() * 4) {
            Some(b) => b,
            None => {
                large.resize(out.len() * 4, 0);
                &mut large[..]
            }
        };
        self.vm
            .read_for_wave(self.tlb, address, buf)
            .map_err(|f| mem_fault(f, Access::Read))?;
        for (d, c) in out.iter_mut().zip(buf.chunks_exact(4)) {
            *d = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        self.activity
            .read(address, out.first().copied().unwrap_or(0));
        Ok(())
    }

    fn store_scalar(&mut self, address: u64, data: &[u32]) -> Result<(), MemFault> {
        // s_store_dwordx4 at most
        let mut bytes = [0u8; 16];
        let n = (data.len() * 4).min(bytes.len());
        for (c, d) in bytes.chunks_exact_mut(4).zip(data) {
            c.copy_from_slice(&d.to_le_bytes());
        }
        self.activity.write();
        // `GpuVm::write` checks the whole range (present and writable) before it writes.
        self.vm
            .write_for_wave(self.tlb, address, &bytes[..n])
            .map_err(|f| mem_fault(f, Access::Write))
    }

    fn atomic(
        &mut self,
        r: &AtomicRequest<'_>,
        old: &mut [u64; WAVE_SIZE],
    ) -> Result<(), MemFault> {
        // A fault leaves memory untouched, so a retried instruction applies each lane once.
        let size = if r.wide { 8 } else { 4 };
        for lane in (0..WAVE_SIZE).filter(|l| r.exec >> l & 1 != 0) {
            self.vm
                .probe(r.addresses[lane], size, true)
                .map_err(|f| mem_fault(f, Access::Atomic))?;
        }
        for lane in (0..WAVE_SIZE).filter(|l| r.exec >> l & 1 != 0) {
            let (src, cmp) = (r.src[lane], r.cmp[lane]);
            let op = r.op;
            old[lane] = if r.wide {
                self.vm
                    .update_u64(r.addresses[lane], |v| op.apply(v, src, cmp, true))
            } else {
                self.vm
                    .update_u32(r.addresses[lane], |v| {
                        op.apply(u64::from(v), src, cmp, false) as u32
                    })
                    .map(u64::from)
            }
            .map_err(|f| mem_fault(f, Access::Atomic))?;
            // An atomic that left memory as it was (a poll with `atomicOr(p, 0)`) only read.
            let new = op.apply(old[lane], src, cmp, r.wide);
            let unchanged = if r.wide {
                new == old[lane]
            } else {
                new as u32 == old[lane] as u32
            };
            if unchanged {
                self.activity.read(r.addresses[lane], old[lane] as u32);
            } else {
                self.activity.write();
            }
        }
        Ok(())
    }

    fn lds(&mut self) -> &mut [u8] {
        self.lds
    }

    fn lds_strict(&self) -> bool {
        self.lds_strict
    }

    fn lds_out_of_range(&mut self, offset: u32) {
        if !self.lds_warned.swap(true, Ordering::Relaxed) {
            log::warn!(
                target: crate::layer::SPI,
                "dispatch {:#x}: LDS access at byte {offset:#x} is past the workgroup's {} bytes: \
                 dropped as the hardware does (writes lost, reads 0); {}=lds reports it instead",
                self.kernel_object,
                self.lds.len(),
                crate::config::STRICT_ENV
            );
        }
    }

    fn vgpr_strict(&self) -> bool {
        self.vgpr_strict
    }

    fn vgpr_out_of_range(&mut self, index: u32, destination: bool) {
        if !self.vgprs_warned.swap(true, Ordering::Relaxed) {
            let what = if destination {
                "writing it, the instruction is ignored"
            } else {
                "reading it reads v0"
            };
            log::warn!(
                target: crate::layer::SPI,
                "dispatch {:#x}: v{index} is past the wave's VGPR allocation \
                 (COMPUTE_PGM_RSRC1.VGPRS): {what}, as the hardware does; {}=vgprs reports it \
                 instead",
                self.kernel_object,
                crate::config::STRICT_ENV
            );
        }
    }

    fn send_message(&mut self, simm16: u16, m0: u32) {
        self.messages.push(SqMessage {
            simm16,
            m0,
            privileged: self.privileged,
        });
    }

    fn shader_clock(&mut self) -> u64 {
        crate::hw::clock::cpu_clock_ns()
    }

    fn real_time(&mut self) -> u64 {
        crate::hw::clock::cpu_clock_ns() / 10
    }
}
