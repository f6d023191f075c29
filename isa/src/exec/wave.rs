//! The state of one wave: scalar and vector register files, EXEC/VCC/SCC/M0, PC and the
//! hardware registers `s_getreg`/`s_setreg` reach.

use super::fault::WaveFault;
pub use crate::Target;

/// Lanes in a gfx9 wave.
pub const WAVE_SIZE: usize = 64;

/// One vector register: a dword per lane, laid out so per-lane loops vectorise.
pub type Lanes = [u32; WAVE_SIZE];

/// Scalar operand numbers of the gfx9 encoding (SSRC/SDST fields), the index into
/// [`Wave::sgpr`]: `s0`–`s101` are 0–101, then the named registers below.
pub mod sreg {
    /// Number of general scalar registers on gfx9 (`s0`–`s101`).
    pub const SGPR_COUNT: usize = 102;
    /// `flat_scratch_lo`.
    pub const FLAT_SCRATCH_LO: usize = 102;
    /// `flat_scratch_hi`.
    pub const FLAT_SCRATCH_HI: usize = 103;
    /// `xnack_mask_lo`.
    pub const XNACK_MASK_LO: usize = 104;
    /// `xnack_mask_hi`.
    pub const XNACK_MASK_HI: usize = 105;
    /// `vcc_lo`.
    pub const VCC_LO: usize = 106;
    /// `vcc_hi`.
    pub const VCC_HI: usize = 107;
    /// `ttmp0` (gfx9 places ttmp0–ttmp15 at 108–123).
    pub const TTMP0: usize = 108;
    /// `m0`.
    pub const M0: usize = 124;
    /// `exec_lo`.
    pub const EXEC_LO: usize = 126;
    /// `exec_hi`.
    pub const EXEC_HI: usize = 127;
    /// Size of the scalar file as the interpreter stores it (operand numbers 0–127).
    pub const FILE_SIZE: usize = 128;
}

/// Denormal handling of one float class, as the MODE register's FP_DENORM field encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Denorm {
    /// 0: flush denormal inputs and outputs to zero.
    FlushAll,
    /// 1: allow denormal inputs, flush denormal outputs.
    FlushOutput,
    /// 2: flush denormal inputs, allow denormal outputs.
    FlushInput,
    /// 3: allow denormals in and out (IEEE).
    Allow,
}

impl Denorm {
    /// From the 2-bit field.
    pub fn from_bits(bits: u32) -> Self {
        match bits & 3 {
            0 => Denorm::FlushAll,
            1 => Denorm::FlushOutput,
            2 => Denorm::FlushInput,
            _ => Denorm::Allow,
        }
    }
    /// Whether denormal source operands read as zero.
    pub fn flushes_input(self) -> bool {
        matches!(self, Denorm::FlushAll | Denorm::FlushInput)
    }
    /// Whether denormal results are written as zero.
    pub fn flushes_output(self) -> bool {
        matches!(self, Denorm::FlushAll | Denorm::FlushOutput)
    }
}

/// Rounding of one float class, as the MODE register's FP_ROUND field encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Round {
    /// 0: to nearest, ties to even.
    NearestEven,
    /// 1: toward +infinity.
    PlusInf,
    /// 2: toward -infinity.
    MinusInf,
    /// 3: toward zero.
    Zero,
}

impl Round {
    /// From the 2-bit field.
    pub fn from_bits(bits: u32) -> Self {
        match bits & 3 {
            0 => Round::NearestEven,
            1 => Round::PlusInf,
            2 => Round::MinusInf,
            _ => Round::Zero,
        }
    }
}

/// The MODE hardware register (`HW_REG_MODE`), kept as its raw dword; the accessors decode
/// the fields the float ops read: FP_ROUND `[3:0]` (f32 in `[1:0]`, f64/f16 in `[3:2]`),
/// FP_DENORM `[7:4]` (f32 in `[5:4]`, f64/f16 in `[7:6]`), DX10_CLAMP `[8]`, IEEE `[9]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Mode(pub u32);

impl Mode {
    /// The MODE a dispatch starts with, from the kernel descriptor's COMPUTE_PGM_RSRC1
    /// (float_round_mode_32 `[13:12]`, _16_64 `[15:14]`, float_denorm_mode_32 `[17:16]`,
    /// _16_64 `[19:18]`, ENABLE_DX10_CLAMP `[21]`, ENABLE_IEEE_MODE `[23]`).
    pub fn from_rsrc1(rsrc1: u32) -> Self {
        let round = (rsrc1 >> 12) & 0xf;
        let denorm = (rsrc1 >> 16) & 0xf;
        let dx10 = (rsrc1 >> 21) & 1;
        let ieee = (rsrc1 >> 23) & 1;
        Mode(round | (denorm << 4) | (dx10 << 8) | (ieee << 9))
    }
    /// Rounding of f32 results.
    pub fn round_f32(self) -> Round {
        Round::from_bits(self.0)
    }
    /// Rounding of f64 and f16 results.
    pub fn round_f64_f16(self) -> Round {
        Round::from_bits(self.0 >> 2)
    }
    /// Denormal handling of f32.
    pub fn denorm_f32(self) -> Denorm {
        Denorm::from_bits(self.0 >> 4)
    }
    /// Denormal handling of f64 and f16.
    pub fn denorm_f64_f16(self) -> Denorm {
        Denorm::from_bits(self.0 >> 6)
    }
    /// DX10_CLAMP: the clamp modifier turns NaN into 0 (else NaN passes through).
    pub fn dx10_clamp(self) -> bool {
        self.0 & (1 << 8) != 0
    }
    /// IEEE mode: min/max quiet signalling NaNs and follow IEEE 754-2008 minNum/maxNum.
    pub fn ieee(self) -> bool {
        self.0 & (1 << 9) != 0
    }
    /// GPR_IDX_EN `[27]`: VGPR index mode (`s_set_gpr_idx_on`); M0`[7:0]` is added to the
    /// VALU's VGPR operands that M0`[15:12]` names (SRC0, SRC1, SRC2, VDST).
    pub const GPR_IDX_EN: u32 = 1 << 27;
    /// Whether VGPR index mode is on.
    pub fn gpr_idx(self) -> bool {
        self.0 & Self::GPR_IDX_EN != 0
    }
}

/// Hardware register ids of `s_getreg_b32`/`s_setreg_b32` (the SIMM16 `id` field, `[5:0]`).
pub mod hwreg {
    /// `HW_REG_MODE`.
    pub const MODE: u32 = 1;
    /// `HW_REG_STATUS`.
    pub const STATUS: u32 = 2;
    /// `HW_REG_TRAPSTS`.
    pub const TRAPSTS: u32 = 3;
    /// `HW_REG_HW_ID`.
    pub const HW_ID: u32 = 4;
    /// `HW_REG_GPR_ALLOC`.
    pub const GPR_ALLOC: u32 = 5;
    /// `HW_REG_LDS_ALLOC`.
    pub const LDS_ALLOC: u32 = 6;
    /// `HW_REG_IB_STS`.
    pub const IB_STS: u32 = 7;
    /// `HW_REG_SH_MEM_BASES` (gfx9).
    pub const SH_MEM_BASES: u32 = 15;
}

/// A `s_getreg`/`s_setreg` SIMM16 operand: register id `[5:0]`, bit offset `[10:6]`,
/// field size minus one `[15:11]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwRegField {
    /// Hardware register id (see [`hwreg`]).
    pub id: u32,
    /// First bit of the field.
    pub offset: u32,
    /// Width in bits (1–32).
    pub size: u32,
}

impl HwRegField {
    /// Decodes the SIMM16 operand.
    pub fn from_simm16(simm16: u16) -> Self {
        let v = u32::from(simm16);
        HwRegField {
            id: v & 0x3f,
            offset: (v >> 6) & 0x1f,
            size: ((v >> 11) & 0x1f) + 1,
        }
    }
    /// Mask of the field in its register (a field may run off bit 31: the excess is dropped).
    pub fn mask(self) -> u32 {
        let width_mask = if self.size >= 32 {
            u32::MAX
        } else {
            (1u32 << self.size) - 1
        };
        width_mask << self.offset
    }
}

/// STATUS bits the interpreter maintains.
pub mod status {
    /// SCC mirror `[0]`.
    pub const SCC: u32 = 1 << 0;
    /// EXECZ `[9]`: EXEC is zero.
    pub const EXECZ: u32 = 1 << 9;
    /// VCCZ `[10]`: VCC is zero.
    pub const VCCZ: u32 = 1 << 10;
    /// HALT `[13]`.
    pub const HALT: u32 = 1 << 13;
    /// TRAP_EN `[6]`: a trap handler is installed.
    pub const TRAP_EN: u32 = 1 << 6;
    /// PRIV `[5]`: the wave runs privileged (in its trap handler); `s_rfe_b64` clears it.
    pub const PRIV: u32 = 1 << 5;
}

/// What the wave's `HW_ID` register reports (read-only to the wave).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HwId(pub u32);

/// The fields of `HW_REG_HW_ID`: where the wave runs and where it came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HwIdFields {
    /// WAVE_ID `[3:0]`: the wave's slot in its SIMD.
    pub wave_id: u32,
    /// SIMD_ID `[5:4]`.
    pub simd_id: u32,
    /// PIPE_ID `[7:6]`: the pipe of the queue that dispatched it.
    pub pipe_id: u32,
    /// CU_ID `[11:8]`: the compute unit within its shader array.
    pub cu_id: u32,
    /// SH_ID `[12]`: the shader array within its engine.
    pub sh_id: u32,
    /// SE_ID `[14:13]` (`[15:13]` on gfx908 and gfx90a): the shader engine.
    pub se_id: u32,
    /// TG_ID `[19:16]`: the workgroup's slot on its compute unit.
    pub tg_id: u32,
    /// VM_ID `[23:20]`: the VMID of its process.
    pub vm_id: u32,
    /// QUEUE_ID `[26:24]`: the queue within the pipe.
    pub queue_id: u32,
    /// STATE_ID `[29:27]` (graphics only; 0 for compute).
    pub state_id: u32,
    /// ME_ID `[31:30]`: the micro engine (1 and 2: the compute MECs).
    pub me_id: u32,
}

impl HwId {
    /// SE_ID's width: 3 bits on gfx908 and gfx90a (`[15:13]`), 2 on Vega (`[14:13]`).
    fn se_bits(target: Target) -> u32 {
        match target {
            Target::Gfx908 | Target::Gfx90a => 3,
            _ => 2,
        }
    }

    /// The register for `fields` on `target` (each field cut to its width).
    pub fn encode(target: Target, f: &HwIdFields) -> HwId {
        let se_mask = (1 << Self::se_bits(target)) - 1;
        HwId(
            (f.wave_id & 0xf)
                | (f.simd_id & 3) << 4
                | (f.pipe_id & 3) << 6
                | (f.cu_id & 0xf) << 8
                | (f.sh_id & 1) << 12
                | (f.se_id & se_mask) << 13
                | (f.tg_id & 0xf) << 16
                | (f.vm_id & 0xf) << 20
                | (f.queue_id & 7) << 24
                | (f.state_id & 7) << 27
                | (f.me_id & 3) << 30,
        )
    }

    /// The fields of this register on `target`.
    pub fn fields(self, target: Target) -> HwIdFields {
        let r = self.0;
        HwIdFields {
            wave_id: r & 0xf,
            simd_id: (r >> 4) & 3,
            pipe_id: (r >> 6) & 3,
            cu_id: (r >> 8) & 0xf,
            sh_id: (r >> 12) & 1,
            se_id: (r >> 13) & ((1 << Self::se_bits(target)) - 1),
            tg_id: (r >> 16) & 0xf,
            vm_id: (r >> 20) & 0xf,
            queue_id: (r >> 24) & 7,
            state_id: (r >> 27) & 7,
            me_id: (r >> 30) & 3,
        }
    }
}

/// A wave: 64 lanes of VGPRs (and AGPRs on gfx90a), the scalar file, SCC, PC and the hardware
/// registers.
#[derive(Clone, Debug)]
pub struct Wave {
    /// The target the wave runs on.
    pub target: Target,
    /// Scalar file indexed by operand number (see [`sreg`]); EXEC, VCC, M0, TTMPs live here.
    pub sgpr: [u32; sreg::FILE_SIZE],
    /// Architected VGPRs `v0`..; as many as the kernel descriptor allocated.
    pub vgpr: Vec<Lanes>,
    /// Accumulation registers `a0`.. (gfx90a; empty elsewhere).
    pub agpr: Vec<Lanes>,
    /// Scalar condition code.
    pub scc: bool,
    /// Byte address of the next instruction.
    pub pc: u64,
    /// `HW_REG_MODE`.
    pub mode: Mode,
    /// `HW_REG_STATUS` without the bits derived from live state (SCC, EXECZ, VCCZ).
    pub status: u32,
    /// `HW_REG_TRAPSTS`.
    pub trapsts: u32,
    /// `HW_REG_HW_ID`.
    pub hw_id: HwId,
    /// `HW_REG_LDS_ALLOC` as the dispatcher set it.
    pub lds_alloc: u32,
    /// `HW_REG_SH_MEM_BASES` (private and shared aperture bases for flat addressing).
    pub sh_mem_bases: u32,
    /// Wave priority (`s_setprio`, 0–3).
    pub priority: u8,
    /// Instructions this wave has executed (what the SQ's instruction counters count; an
    /// instruction that faults is not counted).
    pub retired: u64,
    /// Sources of the SDWA instruction being executed, already selected and extended.
    pub(crate) sdwa_src: Option<Box<[Lanes; 2]>>,
    /// A 64-bit DPP instruction is running on its permuted source (see `dpp64`).
    pub(crate) in_dpp64: bool,
}

impl Wave {
    /// A wave with `vgprs` VGPRs and `agprs` AGPRs, all registers zero, EXEC all ones.
    /// Counts are clamped to 256 each (the architectural maximum).
    pub fn new(target: Target, vgprs: usize, agprs: usize) -> Self {
        Self::with_files(target, vgprs, agprs, Vec::new(), Vec::new())
    }

    /// Makes this wave what [`Wave::new`] makes, reusing its register files' allocations (a
    /// compute unit recycles the waves of a finished workgroup).
    pub fn reset(&mut self, target: Target, vgprs: usize, agprs: usize) {
        // Field by field in place (no new wave built and copied over this one); the pattern
        // names every field, so a new one cannot be forgotten here.
        let Wave {
            target: t,
            sgpr,
            vgpr,
            agpr,
            scc,
            pc,
            mode,
            status,
            trapsts,
            hw_id,
            lds_alloc,
            sh_mem_bases,
            priority,
            retired,
            sdwa_src,
            in_dpp64,
        } = self;
        let agprs = if has_agprs(target) { agprs.min(256) } else { 0 };
        vgpr.clear();
        vgpr.resize(vgprs.min(256), [0; WAVE_SIZE]);
        agpr.clear();
        agpr.resize(agprs, [0; WAVE_SIZE]);
        *t = target;
        sgpr.fill(0);
        *scc = false;
        *pc = 0;
        *mode = Mode::default();
        *status = 0;
        *trapsts = 0;
        *hw_id = HwId::default();
        *lds_alloc = 0;
        *sh_mem_bases = 0;
        *priority = 0;
        *retired = 0;
        *sdwa_src = None;
        *in_dpp64 = false;
        self.set_exec(u64::MAX);
    }

    /// [`Wave::new`], its VGPRs and AGPRs in `vgpr` and `agpr` (cleared first).
    fn with_files(
        target: Target,
        vgprs: usize,
        agprs: usize,
        mut vgpr: Vec<Lanes>,
        mut agpr: Vec<Lanes>,
    ) -> Self {
        let agprs = if has_agprs(target) { agprs.min(256) } else { 0 };
        vgpr.clear();
        vgpr.resize(vgprs.min(256), [0; WAVE_SIZE]);
        agpr.clear();
        agpr.resize(agprs, [0; WAVE_SIZE]);
        let mut wave = Wave {
            target,
            sgpr: [0; sreg::FILE_SIZE],
            vgpr,
            agpr,
            scc: false,
            pc: 0,
            mode: Mode::default(),
            status: 0,
            trapsts: 0,
            hw_id: HwId::default(),
            lds_alloc: 0,
            sh_mem_bases: 0,
            priority: 0,
            retired: 0,
            sdwa_src: None,
            in_dpp64: false,
        };
        wave.set_exec(u64::MAX);
        wave
    }

    /// Reads a 64-bit scalar pair starting at operand number `index`.
    #[inline]
    pub fn sgpr64(&self, index: usize) -> u64 {
        let lo = self.sgpr.get(index).copied().unwrap_or(0);
        let hi = self.sgpr.get(index + 1).copied().unwrap_or(0);
        u64::from(lo) | (u64::from(hi) << 32)
    }

    /// Writes a 64-bit scalar pair starting at operand number `index` (out-of-file halves are
    /// dropped; the decoder rejects such operands before execution).
    #[inline]
    pub fn set_sgpr64(&mut self, index: usize, value: u64) {
        if let Some(r) = self.sgpr.get_mut(index) {
            *r = value as u32;
        }
        if let Some(r) = self.sgpr.get_mut(index + 1) {
            *r = (value >> 32) as u32;
        }
    }

    /// EXEC as a 64-bit lane mask.
    #[inline]
    pub fn exec(&self) -> u64 {
        self.sgpr64(sreg::EXEC_LO)
    }

    /// Sets EXEC.
    #[inline]
    pub fn set_exec(&mut self, mask: u64) {
        self.set_sgpr64(sreg::EXEC_LO, mask);
    }

    /// VCC as a 64-bit lane mask.
    #[inline]
    pub fn vcc(&self) -> u64 {
        self.sgpr64(sreg::VCC_LO)
    }

    /// Sets VCC.
    #[inline]
    pub fn set_vcc(&mut self, mask: u64) {
        self.set_sgpr64(sreg::VCC_LO, mask);
    }

    /// M0.
    pub fn m0(&self) -> u32 {
        self.sgpr[sreg::M0]
    }

    /// A VGPR by number, or an operand fault if the kernel did not allocate it.
    ///
    /// On gfx90a VGPRs and AGPRs are one unified file: the AGPRs start at the kernel's
    /// ACC_OFFSET, which is where `vgpr` ends, so `v[n]` past the VGPRs is `a[n - ACC_OFFSET]`.
    pub fn v(&self, index: usize) -> Result<&Lanes, WaveFault> {
        match self.vgpr.get(index) {
            Some(r) => Ok(r),
            None => self
                .unified_agpr(index)
                .ok_or(WaveFault::RegisterOutOfRange {
                    file: 'v',
                    index: index as u32,
                }),
        }
    }

    /// A VGPR by number for writing, or an operand fault if the kernel did not allocate it
    /// (on gfx90a, past the VGPRs, the AGPR at the same place of the unified file).
    pub fn v_mut(&mut self, index: usize) -> Result<&mut Lanes, WaveFault> {
        let n = self.vgpr.len();
        if index < n {
            return Ok(&mut self.vgpr[index]);
        }
        let unified = self.target == Target::Gfx90a;
        match self.agpr.get_mut(index - n) {
            Some(r) if unified => Ok(r),
            _ => Err(WaveFault::RegisterOutOfRange {
                file: 'v',
                index: index as u32,
            }),
        }
    }

    /// gfx90a's unified file seen through a VGPR number at or past ACC_OFFSET.
    fn unified_agpr(&self, index: usize) -> Option<&Lanes> {
        if self.target != Target::Gfx90a {
            return None;
        }
        self.agpr.get(index.checked_sub(self.vgpr.len())?)
    }

    /// An AGPR by number, or an operand fault.
    pub fn a(&self, index: usize) -> Result<&Lanes, WaveFault> {
        self.agpr.get(index).ok_or(WaveFault::RegisterOutOfRange {
            file: 'a',
            index: index as u32,
        })
    }

    /// An AGPR by number for writing, or an operand fault.
    pub fn a_mut(&mut self, index: usize) -> Result<&mut Lanes, WaveFault> {
        self.agpr
            .get_mut(index)
            .ok_or(WaveFault::RegisterOutOfRange {
                file: 'a',
                index: index as u32,
            })
    }

    /// Writes `value` into VGPR `index` in the lanes EXEC enables; other lanes keep their data.
    pub fn write_v_masked(&mut self, index: usize, value: &Lanes) -> Result<(), WaveFault> {
        let exec = self.exec();
        let dst = self.v_mut(index)?;
        write_masked(dst, value, exec);
        Ok(())
    }

    /// The STATUS register as `s_getreg` reads it: stored bits plus SCC, EXECZ and VCCZ from
    /// live state.
    pub fn status_value(&self) -> u32 {
        let mut s = self.status & !(status::SCC | status::EXECZ | status::VCCZ);
        if self.scc {
            s |= status::SCC;
        }
        if self.exec() == 0 {
            s |= status::EXECZ;
        }
        if self.vcc() == 0 {
            s |= status::VCCZ;
        }
        s
    }

    /// Full value of a hardware register, or `None` for an id the model does not implement.
    pub fn hwreg(&self, id: u32) -> Option<u32> {
        Some(match id {
            hwreg::MODE => self.mode.0,
            hwreg::STATUS => self.status_value(),
            hwreg::TRAPSTS => self.trapsts,
            hwreg::HW_ID => self.hw_id.0,
            hwreg::GPR_ALLOC => self.gpr_alloc(),
            hwreg::LDS_ALLOC => self.lds_alloc,
            hwreg::IB_STS => 0,
            hwreg::SH_MEM_BASES => self.sh_mem_bases,
            _ => return None,
        })
    }

    /// `s_getreg_b32`: the field, shifted down to bit 0.
    pub fn getreg(&self, field: HwRegField) -> Result<u32, WaveFault> {
        let value = self
            .hwreg(field.id)
            .ok_or(WaveFault::UnsupportedHwReg { id: field.id })?;
        Ok((value & field.mask()) >> field.offset)
    }

    /// Whether the wave is halted: STATUS.HALT set outside the trap handler.
    pub fn halted(&self) -> bool {
        self.status & (status::HALT | status::PRIV) == status::HALT
    }

    /// `s_setreg_b32`: replaces the field with the low bits of `value`. Only MODE and the
    /// writable TRAPSTS bits can be set by a user wave (and STATUS.HALT by the trap handler);
    /// writes to read-only registers are ignored as the hardware ignores them.
    pub fn setreg(&mut self, field: HwRegField, value: u32) -> Result<(), WaveFault> {
        let mask = field.mask();
        let shifted = value.wrapping_shl(field.offset) & mask;
        match field.id {
            hwreg::MODE => self.mode = Mode((self.mode.0 & !mask) | shifted),
            hwreg::TRAPSTS => self.trapsts = (self.trapsts & !mask) | shifted,
            // The trap handler may set or clear HALT (ROCr's halts the wave it reported this
            // way before `s_rfe_b64`); the model keeps the other STATUS bits read-only.
            hwreg::STATUS if self.status & status::PRIV != 0 => {
                let m = mask & status::HALT;
                self.status = (self.status & !m) | (shifted & m);
            }
            hwreg::STATUS | hwreg::HW_ID | hwreg::GPR_ALLOC | hwreg::LDS_ALLOC | hwreg::IB_STS => {}
            hwreg::SH_MEM_BASES => {}
            id => return Err(WaveFault::UnsupportedHwReg { id }),
        }
        Ok(())
    }

    /// `HW_REG_GPR_ALLOC`: VGPR_SIZE `[13:8]` in blocks of 4 minus one, SGPR_SIZE `[27:24]` in
    /// blocks of 16 minus one (the model allocates the whole 102 + specials).
    fn gpr_alloc(&self) -> u32 {
        let vgpr_blocks = (self.vgpr.len() + self.agpr.len()).div_ceil(4).max(1) as u32 - 1;
        let sgpr_blocks = 112u32.div_ceil(16) - 1;
        ((vgpr_blocks & 0x3f) << 8) | ((sgpr_blocks & 0xf) << 24)
    }
}

/// Copies `value` into `dst` in the lanes `mask` enables, leaving the other lanes unchanged.
#[inline]
pub fn write_masked(dst: &mut Lanes, value: &Lanes, mask: u64) {
    if mask == u64::MAX {
        *dst = *value;
        return;
    }
    for lane in 0..WAVE_SIZE {
        // all-ones in enabled lanes: a select without branches, which vectorises
        let on = 0u32.wrapping_sub(((mask >> lane) & 1) as u32);
        dst[lane] = (value[lane] & on) | (dst[lane] & !on);
    }
}

/// Applies `op` to every lane (all 64: callers mask the result with [`write_masked`]); a
/// straight loop over arrays the compiler vectorises.
#[inline]
pub fn map2(a: &Lanes, b: &Lanes, op: impl Fn(u32, u32) -> u32) -> Lanes {
    let mut out = [0u32; WAVE_SIZE];
    for lane in 0..WAVE_SIZE {
        out[lane] = op(a[lane], b[lane]);
    }
    out
}

/// Whether the target has accumulation registers (gfx908, gfx90a).
pub fn has_agprs(target: Target) -> bool {
    matches!(target, Target::Gfx908 | Target::Gfx90a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hw_id_fields_sit_where_the_isa_guides_put_them() {
        let f = HwIdFields {
            wave_id: 9,
            simd_id: 3,
            pipe_id: 2,
            cu_id: 15,
            sh_id: 1,
            se_id: 7,
            tg_id: 5,
            vm_id: 8,
            queue_id: 6,
            state_id: 0,
            me_id: 1,
        };
        // gfx900: SE_ID is [14:13], so SE 7 keeps only 3; bit 15 stays clear.
        let vega = HwId::encode(Target::Gfx900, &f);
        assert_eq!(vega.0, 0x4685_7fb9);
        assert_eq!(vega.fields(Target::Gfx900), HwIdFields { se_id: 3, ..f });
        // gfx90a: SE_ID is [15:13].
        let mi200 = HwId::encode(Target::Gfx90a, &f);
        assert_eq!(mi200.0, 0x4685_ffb9);
        assert_eq!(mi200.fields(Target::Gfx90a), f);
        assert_eq!(HwId(u32::MAX).fields(Target::Gfx906).state_id, 7);
    }

    #[test]
    fn reset_makes_what_new_makes() {
        let mut w = Wave::new(Target::Gfx90a, 8, 4);
        w.pc = 0x1000;
        w.sgpr[3] = 7;
        w.v_mut(2).unwrap()[5] = 9;
        w.agpr[1][0] = 3;
        w.scc = true;
        w.set_exec(5);
        w.status = 1;
        w.retired = 11;
        w.reset(Target::Gfx900, 12, 4);
        assert_eq!(
            format!("{w:?}"),
            format!("{:?}", Wave::new(Target::Gfx900, 12, 4))
        );
        assert_eq!((w.vgpr.len(), w.agpr.len(), w.exec()), (12, 0, u64::MAX));
        w.v_mut(11).unwrap()[63] = 1;
        w.reset(Target::Gfx90a, 300, 300);
        assert_eq!(
            format!("{w:?}"),
            format!("{:?}", Wave::new(Target::Gfx90a, 300, 300))
        );
        assert_eq!((w.vgpr.len(), w.agpr.len()), (256, 256));
    }
}
