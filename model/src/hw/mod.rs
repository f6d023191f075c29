//! The hardware side of the model: what the driver programs and what executes queues.
//!
//! Its rooms are private to the crate, laid along the dispatch path:
//!
//! * `gpu` — one GPU: the parts below, as the driver builds and reaches them;
//! * `mem` — device memory (VRAM/GTT buffers, doorbell BAR, event and MMIO pages);
//! * `vm` — each process's GPU page tables, checked on every engine access;
//! * `gart` — kernel-owned memory the firmware reads by address (MQDs, HIQ, IBs, fences);
//! * `doorbell` — the doorbell BAR and the doorbell id rules;
//! * `clock` — the GPU timestamp counter;
//! * `hws` — the scheduler firmware: HIQ packets, runlists, HQD slots, and the saved
//!   context of every queue;
//! * `cp` — the compute micro-engine: executes PM4 and AQL queues mapped in HQDs;
//! * `spi` — the shader processor input, compute units and sequencer: kernel dispatches run
//!   as waves of real gfx9 code;
//! * `sdma` — the SDMA engines: execute SDMA queues;
//! * `ih` — the interrupt ring from the engines to the driver;
//! * `engine` — what the engines share, and the thread that notices doorbells and runs them.
//!
//! Outside the crate the hardware has one door: [`observe`] (the shader counters and the
//! dispatch observer `kfd run` and `kfd trace` install) and the few facts re-exported here
//! ([`GPU_CLOCK_HZ`], [`HqdSlot`], [`MappedQueue`], [`HwsFaults`], …) that tools and the
//! driver's tests name.

pub(crate) mod clock;
pub(crate) mod cp;
pub(crate) mod doorbell;
pub(crate) mod doorbell_watch;
pub(crate) mod engine;
pub(crate) mod gart;
pub(crate) mod gpu;
pub(crate) mod gws;
pub(crate) mod heap;
pub(crate) mod hws;
pub(crate) mod ih;
pub(crate) mod mem;
pub(crate) mod sdma;
pub(crate) mod spi;
pub(crate) mod vm;

pub mod observe;

// The door's facts (see the module documentation).
pub use clock::GPU_CLOCK_HZ;
pub use cp::DMA_BYTES_PER_PASS;
pub use doorbell::DoorbellBar;
pub use engine::affinity::thread_last_core;
pub use hws::{HqdSlot, HwsFaults, MappedQueue};
pub use mem::DeviceMemory;
