//! The hardware side of the model: what the driver programs and what executes queues.
//!
//! * [`mem`] — device memory (VRAM/GTT buffers, doorbell BAR, event and MMIO pages);
//! * [`vm`] — each process's GPU page tables, checked on every engine access.

pub mod mem;
pub mod vm;
