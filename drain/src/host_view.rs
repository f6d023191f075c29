//! The one place this crate hands out a Rust slice of memory an engine writes: a drained
//! host slot, borrowed by [`crate::Chunk`] for zero-copy reads. zerocopy cannot serve here —
//! it types bytes the program already owns, while this memory is a device mapping the thunk
//! only exposes as a pointer — so the borrow is built from the pointer, under the channel's
//! own discipline that keeps the engine away from the slot while it is borrowed.
#![allow(unsafe_code)]

use crate::error::{Error, Result};
use thunk::{Access, Memory};

/// The bytes `[offset, offset + len)` of `host` as a slice; a range outside `host` or a host
/// buffer without CPU mapping is an error.
///
/// # Safety
///
/// No engine (nor anything else) may write those bytes while the returned borrow lives. The
/// channel upholds this for a host slot whose generation it has seen drained (an acquire load
/// of the drain fence) and has not yet released: a host slot is written only by the drain
/// program of the generation `H` after it, and that program is queued only once the reader
/// released the slot, which needs the `&mut` borrow that the slice's lifetime holds.
pub(crate) unsafe fn drained_bytes(host: &Memory, offset: u64, len: usize) -> Result<&[u8]> {
    let end = offset
        .checked_add(len as u64)
        .filter(|&e| e <= host.size())
        .ok_or_else(|| {
            Error::config(format!(
                "host ring view {offset:#x}+{len:#x} is outside the {:#x}-byte ring",
                host.size()
            ))
        })?;
    let _ = end;
    if host.cpu_access() == Access::None {
        return Err(Error::config("the host ring is not mapped for the CPU"));
    }
    if len == 0 {
        return Ok(&[]);
    }
    let start = usize::try_from(offset).map_err(|_| Error::config("host ring offset overflows"))?;
    // SAFETY: `host` is a live CPU mapping of `host.size()` bytes at `as_ptr()` (readable:
    // checked above) that stays mapped for as long as `&host` is borrowed, which bounds the
    // returned lifetime; `[start, start + len)` lies inside it (checked above). The bytes are
    // initialised (device memory is always initialised to something) and, by this function's
    // contract, not written by anyone while the slice lives.
    Ok(unsafe { std::slice::from_raw_parts(host.as_ptr().add(start).cast_const(), len) })
}
