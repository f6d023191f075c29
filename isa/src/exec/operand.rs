//! Operand facts the general interpreter and the fast path share, so that the fast path
//! needs nothing from the interpreter: the scalar register file map of an operand and the
//! inline float constants.

use crate::decode::{Operand, SpecialReg};

use super::cache::SrcType;
use super::wave::sreg;

/// The scalar-file index of a register operand (SGPR, TTMP, VCC, EXEC, M0, …).
pub(crate) fn scalar_index(op: Operand) -> Option<usize> {
    Some(match op {
        Operand::Sgpr { first, .. } => usize::from(first),
        Operand::Ttmp { first, .. } => sreg::TTMP0 + usize::from(first),
        Operand::Special { reg, hi, .. } => {
            let base = match reg {
                SpecialReg::FlatScratch => sreg::FLAT_SCRATCH_LO,
                SpecialReg::XnackMask => sreg::XNACK_MASK_LO,
                SpecialReg::Vcc => sreg::VCC_LO,
                SpecialReg::M0 => sreg::M0,
                SpecialReg::Exec => sreg::EXEC_LO,
                _ => return None,
            };
            base + usize::from(hi)
        }
        _ => return None,
    })
}

/// Inline float constants (source codes 240–248) as f16, f32 and f64 bit patterns.
pub(crate) fn float_const(code: u8, ty: SrcType, wide: bool) -> u64 {
    let i = usize::from(code.saturating_sub(240)).min(8);
    const F32: [u32; 9] = [
        0x3f00_0000,
        0xbf00_0000,
        0x3f80_0000,
        0xbf80_0000,
        0x4000_0000,
        0xc000_0000,
        0x4080_0000,
        0xc080_0000,
        0x3e22_f983,
    ];
    const F64: [u64; 9] = [
        0x3fe0_0000_0000_0000,
        0xbfe0_0000_0000_0000,
        0x3ff0_0000_0000_0000,
        0xbff0_0000_0000_0000,
        0x4000_0000_0000_0000,
        0xc000_0000_0000_0000,
        0x4010_0000_0000_0000,
        0xc010_0000_0000_0000,
        0x3fc4_5f30_6dc9_c882,
    ];
    const F16: [u16; 9] = [
        0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118,
    ];
    if wide {
        F64[i]
    } else if ty == SrcType::F16 {
        u64::from(F16[i])
    } else {
        u64::from(F32[i])
    }
}
