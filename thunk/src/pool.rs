//! Queue buffers kept for the next queue (issue #22).
//!
//! Creating a queue needs a ring buffer and a page for its read and write pointers; destroying
//! it frees both. A process that creates and destroys queues often (a runtime opening a queue
//! per stream, a test harness) pays four system calls per buffer each time, on top of the
//! queue's own. So when a queue is destroyed, its ring and pointer page (GTT, CPU-mapped) go to
//! a small per-GPU pool instead of being freed, and the next queue that asks for a buffer of the
//! same kind, size and flags takes one from there, zeroed — as a new buffer would be, so a new
//! queue never sees an old queue's pointers or packets.
//!
//! The pool is bounded ([`MAX_BUFFERS`] buffers and [`MAX_BYTES`] bytes per GPU; what does not
//! fit is freed as usual) and holds plain driver handles and address ranges, not
//! [`crate::Memory`]: a `Memory` holds the process's session, and the pool lives in that
//! session, so holding one would keep the session alive forever. The session frees what is
//! left when it closes; [`crate::Gpu::release_pooled_queue_buffers`] frees it earlier. The
//! same rules hold on a real `/dev/kfd`: the buffers stay allocated and mapped on the GPU
//! while pooled (the kernel only refuses to free a ring a live queue holds, and no live queue
//! holds a pooled one).

use crate::memory::{MemoryKind, RawBuffer};

/// At most this many buffers wait in one GPU's pool.
pub const MAX_BUFFERS: usize = 8;
/// At most this many bytes wait in one GPU's pool.
pub const MAX_BYTES: u64 = 1 << 20;

/// A buffer no object owns, waiting for reuse.
#[derive(Debug)]
pub(crate) struct PooledBuffer {
    pub kind: MemoryKind,
    pub buf: RawBuffer,
    /// The GPUs it is mapped on.
    pub mapped_on: Vec<u32>,
}

/// One GPU's pool.
#[derive(Debug, Default)]
pub(crate) struct BufferPool {
    entries: Vec<PooledBuffer>,
    bytes: u64,
}

impl BufferPool {
    /// Keeps `entry` if it is a GTT buffer mapped on its own GPU only and there is room;
    /// otherwise gives it back.
    pub fn put(&mut self, entry: PooledBuffer) -> Result<(), PooledBuffer> {
        let size = entry.buf.range.len();
        let fits = self.entries.len() < MAX_BUFFERS
            && self.bytes.saturating_add(size) <= MAX_BYTES
            && entry.kind == MemoryKind::Gtt
            && entry.mapped_on == [entry.buf.gpu_id]
            && size > 0;
        if !fits {
            return Err(entry);
        }
        self.bytes += size;
        self.entries.push(entry);
        Ok(())
    }

    /// Takes a buffer of `kind`, `size` bytes (page-rounded) and allocation `flags`, mapped on
    /// `gpu_id` only — the most recently pooled one.
    pub fn take(
        &mut self,
        kind: MemoryKind,
        size: u64,
        flags: u32,
        gpu_id: u32,
    ) -> Option<PooledBuffer> {
        let i = self.entries.iter().rposition(|e| {
            e.kind == kind
                && e.buf.range.len() == size
                && e.buf.flags == flags
                && e.buf.gpu_id == gpu_id
                && e.mapped_on == [gpu_id]
        })?;
        let entry = self.entries.swap_remove(i);
        self.bytes -= entry.buf.range.len();
        Some(entry)
    }

    /// Buffers waiting.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Takes every buffer out (to free them).
    pub fn drain(&mut self) -> Vec<PooledBuffer> {
        self.bytes = 0;
        std::mem::take(&mut self.entries)
    }
}
