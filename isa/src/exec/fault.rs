//! Why a wave stopped, and the typed faults it can raise.

use std::fmt;

/// Kind of memory access that faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// A load (scalar or vector).
    Read,
    /// A store.
    Write,
    /// An atomic read-modify-write.
    Atomic,
    /// An instruction fetch.
    Fetch,
}

/// A fault the outside world reports for a memory access (the model turns it into a GPU VM
/// fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemFault {
    /// The first faulting byte address.
    pub address: u64,
    /// What the wave was doing.
    pub access: Access,
}

/// A fault that ends the wave.
///
/// How each compares with the hardware (the ISA guides' "Out-of-range behavior" section of
/// chapter 3, and the exceptions of TRAPSTS): an illegal instruction and a memory fault are what
/// the hardware reports too (TRAPSTS.ILLEGAL_INST, a memory violation or VM fault), except
/// that an instruction the hardware runs and the interpreter does not is a gap of the model
/// (listed in `isa/COVERAGE.md`); an LDS access past the allocation is dropped by the
/// hardware, and is a fault only in a strict world; a register past the allocation is read as
/// register 0 and written nowhere by the hardware (the instruction is nullified), which the
/// interpreter does not follow: it reports the register; an unmodelled hardware register is a
/// gap of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaveFault {
    /// An instruction the interpreter has no semantics for; `disassembly` names it.
    IllegalInstruction {
        /// Its byte address.
        pc: u64,
        /// Its text as the disassembler prints it (or the raw dwords if it does not decode).
        disassembly: String,
    },
    /// A memory access the outside world refused.
    Memory(MemFault),
    /// A register operand beyond what the kernel allocated (`v300`, `a12` without AGPRs, …).
    RegisterOutOfRange {
        /// `'s'`, `'v'` or `'a'`.
        file: char,
        /// Register number.
        index: u32,
    },
    /// An `s_getreg`/`s_setreg` of a hardware register the model does not implement.
    UnsupportedHwReg {
        /// The register id.
        id: u32,
    },
    /// An LDS access outside the workgroup's allocation, in a strict world only
    /// ([`WaveEnv::lds_strict`](super::WaveEnv::lds_strict)): the hardware drops the write
    /// and reads 0, as the interpreter does otherwise.
    LdsOutOfRange {
        /// Byte offset into LDS.
        offset: u32,
    },
}

impl fmt::Display for WaveFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaveFault::IllegalInstruction { pc, disassembly } => {
                write!(f, "illegal instruction at {pc:#x}: {disassembly}")
            }
            WaveFault::Memory(m) => {
                write!(f, "memory fault ({:?}) at {:#x}", m.access, m.address)
            }
            WaveFault::RegisterOutOfRange { file, index } => {
                write!(f, "register {file}{index} is not allocated")
            }
            WaveFault::UnsupportedHwReg { id } => write!(f, "hardware register {id} not modelled"),
            WaveFault::LdsOutOfRange { offset } => write!(f, "LDS offset {offset:#x} out of range"),
        }
    }
}

impl std::error::Error for WaveFault {}

impl From<MemFault> for WaveFault {
    fn from(m: MemFault) -> Self {
        WaveFault::Memory(m)
    }
}

/// Why [`run`](super::Wave) returned. The caller resumes the wave by calling it again
/// (except after [`Stop::EndOfProgram`] and [`Stop::Fault`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `s_endpgm`.
    EndOfProgram,
    /// `s_barrier`: the CU releases the wave when every wave of the workgroup has arrived.
    Barrier,
    /// `s_sleep`: the wave sleeps about `64 * cycles` clocks (the operand's units).
    Sleep {
        /// The `s_sleep` operand.
        cycles: u32,
    },
    /// The step budget is used up; the wave can be resumed.
    BudgetExhausted,
    /// `s_trap`: the trap id; the TTMP registers hold the saved state as the ISA says
    /// (PC in ttmp0/ttmp1 with the trap id in ttmp1 `[23:16]`).
    Trap {
        /// The trap id (SIMM16 `[7:0]`).
        id: u8,
    },
    /// A fault ended the wave.
    Fault(WaveFault),
    /// A global wave sync instruction (`ds_gws_*`). The PC is past it; the dispatcher applies
    /// it to the queue's GWS resource and resumes the wave when it may go on (a barrier once
    /// every wave it counts has arrived, a semaphore P once the count allows).
    Gws(GwsRequest),
    /// STATUS.HALT is set outside the trap handler (`s_sethalt 1`, or a trap handler that set
    /// HALT with `s_setreg_b32 hwreg(HW_REG_STATUS)` and returned with `s_rfe_b64`): the wave
    /// executes nothing until HALT is cleared. The PC is where it would resume.
    Halt,
}

/// What a `ds_gws_*` instruction asks of the GWS resource it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GwsRequest {
    /// The operation.
    pub op: GwsOp,
    /// The resource: `M0[21:16]` plus the instruction's offset, modulo the 64 resources.
    pub resource: u32,
    /// The operand (ADDR's VGPR in the first active lane; 0 without one): for init and
    /// barrier, the number of waves the barrier counts minus one; for `sema_br`, the count
    /// to release.
    pub value: u32,
}

/// The global wave sync operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GwsOp {
    /// `ds_gws_init`: sets up a barrier for `value + 1` waves.
    Init,
    /// `ds_gws_sema_v`: semaphore count + 1.
    SemaV,
    /// `ds_gws_sema_br`: semaphore count + `value`.
    SemaBr,
    /// `ds_gws_sema_p`: waits until the count is above 0, then takes 1.
    SemaP,
    /// `ds_gws_barrier`: waits until `value + 1` waves have arrived.
    Barrier,
    /// `ds_gws_sema_release_all`: releases every wave waiting in `sema_p`.
    SemaReleaseAll,
}

/// How many GWS resources a queue has (`M0[21:16]` names one).
pub const GWS_RESOURCES: u32 = 64;
