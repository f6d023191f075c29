//! A pre-decoded code object: every dword address of a code range decoded once, so an
//! interpreter fetches an [`Instruction`] by address without decoding or allocating.

use crate::decode::{decode, DecodeError, Instruction};
use crate::Target;

/// Code decoded at every dword offset (instructions can start at any dword; a branch may
/// land inside what a linear walk took as a literal).
pub struct Program {
    base: u64,
    slots: Vec<Result<Instruction, DecodeError>>,
}

impl Program {
    /// Decode `code`, which is loaded at `base` (dword aligned), for `target`.
    pub fn new(code: &[u8], base: u64, target: Target) -> Program {
        let slots = (0..code.len() / 4)
            .map(|i| decode(&code[i * 4..], base + 4 * i as u64, target).map(|(inst, _)| inst))
            .collect();
        Program { base, slots }
    }

    /// The instruction at `addr`, or why there is none (`Truncated` outside the range).
    #[inline]
    pub fn fetch(&self, addr: u64) -> Result<&Instruction, DecodeError> {
        let off = addr.wrapping_sub(self.base);
        let slot = if off % 4 == 0 {
            self.slots.get((off / 4) as usize)
        } else {
            None
        };
        match slot {
            Some(Ok(inst)) => Ok(inst),
            Some(Err(e)) => Err(*e),
            None => Err(DecodeError::Truncated {
                addr,
                word: 0,
                needed: 4,
                available: 0,
            }),
        }
    }

    /// The address of the first dword.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Number of dwords covered.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the program covers no code.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}
