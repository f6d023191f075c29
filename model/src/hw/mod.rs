//! The hardware side of the model: what the driver programs and what executes queues.
//!
//! * [`mem`] — device memory (VRAM/GTT buffers, doorbell BAR, event and MMIO pages);
//! * [`vm`] — each process's GPU page tables, checked on every engine access;
//! * [`gart`] — kernel-owned memory the firmware reads by address (MQDs, HIQ, IBs, fences);
//! * [`doorbell`] — the doorbell BAR and the doorbell id rules;
//! * [`clock`] — the GPU timestamp counter;
//! * [`hws`] — the scheduler firmware: HIQ packets, runlists, HQD slots.

pub mod clock;
pub mod doorbell;
pub mod gart;
pub mod hws;
pub mod mem;
pub mod vm;
