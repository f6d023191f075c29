//! # kfd-model — amdkfd and the GPU, in user space
//!
//! This crate will hold a model of the amdkfd kernel driver (chardev, process, pqm, dqm,
//! packet manager, kernel queue, events, topology) and of the hardware it drives (HWS
//! scheduler firmware, CP/MEC, SDMA engines, interrupt ring, GPU VM, doorbells), so that the
//! whole stack runs and is tested without an AMD GPU. It decodes ioctl argument bytes with
//! `kfd-sys` exactly as the kernel would. Filled by issues #5 and #6.
#![forbid(unsafe_code)]
