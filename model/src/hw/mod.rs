//! The hardware side of the model: what the driver programs and what executes queues.
//!
//! * [`gpu`] — one GPU: the parts below, as the driver builds and reaches them;
//! * [`mem`] — device memory (VRAM/GTT buffers, doorbell BAR, event and MMIO pages);
//! * [`vm`] — each process's GPU page tables, checked on every engine access;
//! * [`gart`] — kernel-owned memory the firmware reads by address (MQDs, HIQ, IBs, fences);
//! * [`doorbell`] — the doorbell BAR and the doorbell id rules;
//! * [`clock`] — the GPU timestamp counter;
//! * [`hws`] — the scheduler firmware: HIQ packets, runlists, HQD slots, and the saved
//!   context of every queue;
//! * [`cp`] — the compute micro-engine: executes PM4 and AQL queues mapped in HQDs;
//! * [`spi`] — the shader processor input and compute units: kernel dispatches run as
//!   waves of real gfx9 code;
//! * [`observe`] — the shader counters and the dispatch observer (`kfd run`, `kfd trace`);
//! * [`sdma`] — the SDMA engines: execute SDMA queues;
//! * [`ih`] — the interrupt ring from the engines to the driver;
//! * [`engine`] — what the engines share, and the thread that notices doorbells and runs them.

pub mod clock;
pub mod cp;
pub mod doorbell;
pub mod doorbell_watch;
pub mod engine;
pub mod gart;
pub mod gpu;
pub mod gws;
pub mod heap;
pub mod hws;
pub mod ih;
pub mod mem;
pub mod observe;
pub mod sdma;
pub mod spi;
pub mod vm;
