//! # drain — trace buffers from GPU to CPU over a raw queue
//!
//! This crate will hold channels that move trace records written by GPU kernels into
//! GPU-side buffers back to the CPU while the kernels run, over the tool's own SDMA or PM4
//! queue, with a documented device-side buffer protocol. Filled by issue #9.
#![forbid(unsafe_code)]
