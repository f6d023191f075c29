//! Which VGPRs an instruction names, for the out-of-range rules of the Vega and CDNA ISA
//! guides ("Out-of-Range behavior", VGPRs): a wave owns the VGPRs its dispatch allocated
//! (COMPUTE_PGM_RSRC1.VGPRS granules); a VGPR number at or past that is out of range. A source
//! out of range reads VGPR0; an instruction whose destination is out of range is ignored (a
//! memory or LDS read, or an atomic with return, is issued as with EXEC = 0: no access at
//! all); an instruction with several destinations writes none when one is out of range.
//!
//! The destination is found from the encoding, not from the printed operands alone: a MUBUF
//! load returns into VDATA, an atomic with GLC set returns into VDST (FLAT) or VDATA (MUBUF).

use super::cache::MemKind;
use crate::decode::{Instruction, Operand};
use crate::table::{prop, Enc};

/// The VGPRs one instruction names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VgprUse {
    /// The VGPRs it writes: first and count (`None`: no VGPR destination).
    pub dest: Option<(u16, u16)>,
    /// One past the highest VGPR it names, sources and destination together (0: none).
    pub end: u16,
}

/// A VGPR operand's first register and count.
fn vgprs(op: Option<Operand>) -> Option<(u16, u16)> {
    match op {
        Some(Operand::Vgpr { first, count }) => Some((u16::from(first), u16::from(count))),
        _ => None,
    }
}

/// The VGPRs `inst` names; `fields` are its operands of fields A, B, C, D and E.
pub fn vgpr_use(inst: &Instruction, fields: &[Option<Operand>; 5], mem: MemKind) -> VgprUse {
    let [w0, w1] = inst.words;
    let props = inst.row().props;
    let [_, b, _, d, _] = *fields;
    let dest = match inst.enc {
        Enc::Flat | Enc::Global | Enc::Scratch => match mem {
            MemKind::Load { bytes, .. } => Some(((w1 >> 24) as u16, bytes.div_ceil(4) as u16)),
            MemKind::Atomic { wide, .. } if (w0 >> 16) & 1 != 0 => {
                Some(((w1 >> 24) as u16, if wide { 2 } else { 1 }))
            }
            MemKind::Atomic { .. } | MemKind::Store { .. } => None,
            MemKind::Other => vgprs(d),
        },
        Enc::Mubuf | Enc::Mtbuf => match mem {
            MemKind::Load { .. } => vgprs(b),
            MemKind::Atomic { wide, .. } if (w0 >> 14) & 1 != 0 => {
                Some((((w1 >> 8) & 0xff) as u16, if wide { 2 } else { 1 }))
            }
            MemKind::Atomic { .. } | MemKind::Store { .. } => None,
            MemKind::Other if props & prop::NAMED_LOAD != 0 => vgprs(b),
            MemKind::Other => None,
        },
        Enc::Mimg => {
            let returns = if props & prop::IMAGE_ATOMIC != 0 {
                (w0 >> 13) & 1 != 0
            } else {
                props & prop::IMAGE_STORE == 0
            };
            if returns {
                vgprs(b)
            } else {
                None
            }
        }
        _ => vgprs(d),
    };
    let mut end = dest.map_or(0, |(f, n)| f + n);
    for &op in inst.operands() {
        if let Some((f, n)) = vgprs(Some(op)) {
            end = end.max(f + n);
        }
    }
    VgprUse { dest, end }
}
