//! The wave interpreter: a wave of 64 lanes executing against [`WaveEnv`], the small trait
//! for the world outside the wave.
//!
//! - [`wave`]: the register state ([`Wave`]) and MODE/STATUS/TRAPSTS.
//! - [`env`](mod@env): [`WaveEnv`] (memory by address per instruction, atomics, LDS, messages,
//!   clocks) and [`HostEnv`], a host-memory world for tests.
//! - [`int`], [`float`], [`half`], [`lanes`], [`media`], [`mfma`]: the semantics as pure functions of operands,
//!   each following the definitions of AMD's Vega and MI200 ISA guides.
//! - [`coverage`]: which decoded instructions the interpreter does not run.
//! - [`fault`]: why a wave stops ([`Stop`]) and its typed faults ([`WaveFault`]).
//! - MIMG image instructions (`image_load`/`image_store` and their `_mip` forms,
//!   `image_get_resinfo`, `image_sample`/`_lz`/`_l`) read the T# and S# from SGPRs and run
//!   over a linear image layout through [`WaveEnv`]'s memory calls (private `interp::image`).
//! - `fast` (private): the fast path [`CodeCache`] plans once per code address for the
//!   common VALU/SALU instructions and branches; everything else, and every case the plan
//!   does not cover at run time, goes through the general interpreter with the same results.
//! - [`jit`]: the block compiler: straight-line runs of code pre-decoded into blocks of steps
//!   on the fast path's kernels (and compiled global/LDS dword accesses), run without a
//!   per-instruction lookup; the interpreter takes whatever a block does not cover.

pub mod cache;
pub mod coverage;
pub mod env;
mod fast;
pub mod fault;
pub mod float;
pub mod half;
pub mod int;
mod interp;
pub mod jit;
pub mod lanes;
pub mod media;
pub mod mfma;
mod operand;
pub mod vgpr_range;
pub mod wave;

pub use cache::CodeCache;
pub use env::{AtomicOp, AtomicRequest, HostEnv, WaveEnv};
pub use fault::{Access, GwsOp, GwsRequest, MemFault, Stop, WaveFault, GWS_RESOURCES};
pub use wave::{Lanes, Mode, Target, Wave, WAVE_SIZE};
