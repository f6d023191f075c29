//! Code windows: the waves' code decoded a window at a time around a PC, shared by a
//! dispatch's compute-unit threads and kept by the queue for its next dispatch while memory
//! still holds the same bytes.

use super::{locked, KernelRun};
use crate::hw::vm::GpuVm;
use isa::exec::{Access, CodeCache, MemFault};
use isa::Target;
use std::sync::{Arc, Mutex};

/// Bytes of code decoded around a PC (a window; a branch outside it decodes another).
const CODE_WINDOW: u64 = 64 << 10;

/// Decoded code windows a queue keeps from one dispatch to the next.
pub const KEPT_CODE_WINDOWS: usize = 8;

/// A window of code decoded for the waves, with the bytes it was decoded from (a later
/// dispatch reuses it only while memory still holds those bytes).
#[derive(Debug, Clone)]
pub struct DecodedCode {
    start: u64,
    bytes: Arc<[u8]>,
    pub(super) cache: Arc<CodeCache>,
}

impl KernelRun {
    /// Gives the dispatch code windows an earlier one decoded; those whose bytes changed in
    /// memory since (new code loaded at the same address) are dropped.
    pub fn with_code(mut self, vm: &GpuVm, kept: Vec<DecodedCode>) -> Self {
        let mut buf = Vec::new();
        self.code = kept
            .into_iter()
            .filter(|c| {
                buf.resize(c.bytes.len(), 0);
                vm.read(c.start, &mut buf).is_ok() && buf[..] == c.bytes[..]
            })
            .collect();
        self
    }

    /// The code windows the dispatch decoded (for the next dispatch of the queue), the most
    /// recent first, at most [`KEPT_CODE_WINDOWS`].
    pub fn take_code(&mut self) -> Vec<DecodedCode> {
        let mut code = std::mem::take(&mut self.code);
        code.reverse();
        code.truncate(KEPT_CODE_WINDOWS);
        code
    }

    /// Decodes the code window around `pc` into this thread's cache and the dispatch's.
    pub(super) fn decode_at(
        &self,
        vm: &GpuVm,
        pc: u64,
        local_code: &mut Vec<Arc<CodeCache>>,
        shared_code: &Mutex<Vec<DecodedCode>>,
    ) -> Result<Arc<CodeCache>, MemFault> {
        if let Some(c) = locked(shared_code).iter().find(|c| holds(&c.cache, pc)) {
            local_code.push(c.cache.clone());
            return Ok(c.cache.clone());
        }
        let c = code_window(vm, self.setup.target, pc)?;
        let cache = c.cache.clone();
        locked(shared_code).push(c);
        local_code.push(cache.clone());
        Ok(cache)
    }
}

/// Whether `code` holds the whole instruction at `pc`. An instruction whose first dword is
/// a window's last and whose second is not in it is cut by the window, not by memory: the
/// window around `pc` decodes it whole.
pub(super) fn holds(code: &CodeCache, pc: u64) -> bool {
    !matches!(
        code.get(pc),
        None | Some(Err(isa::DecodeError::Truncated { .. }))
    )
}

/// Decodes the code window around `pc`: inside the mapping that holds it, plus the first
/// dword after the mapping when memory is mapped there (an 8-byte instruction may start in
/// one mapping's last dword and end in the next's first, as the fetch of hardware sees one
/// address space).
fn code_window(vm: &GpuVm, target: Target, pc: u64) -> Result<DecodedCode, MemFault> {
    let fault = MemFault {
        address: pc,
        access: Access::Fetch,
    };
    let m = vm.lookup(pc).ok_or(fault)?;
    let start = pc.saturating_sub(CODE_WINDOW / 4).max(m.va) & !3;
    let mapping_end = m.va + m.len;
    let end = pc.saturating_add(CODE_WINDOW).min(mapping_end);
    let mut bytes = vec![0u8; (end - start) as usize];
    vm.read(start, &mut bytes).map_err(|_| fault)?;
    if end == mapping_end {
        let mut next = [0u8; 4];
        if vm.read(end, &mut next).is_ok() {
            bytes.extend_from_slice(&next);
        }
    }
    Ok(DecodedCode {
        start,
        cache: Arc::new(CodeCache::new(target, start, &bytes)),
        bytes: bytes.into(),
    })
}
