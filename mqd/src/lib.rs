//! # mqd — Memory Queue Descriptors
//!
//! This crate will hold the MQDs the amdkfd driver writes for every hardware queue —
//! `v9_mqd`, `v10_compute_mqd`, `v11_compute_mqd` and the SDMA MQDs of the same
//! generations — as zerocopy structs with every named field at its dword index, builders that
//! reproduce the kernel's `init_mqd`/`update_mqd`, and a pretty-printer.
//! It is filled by issue #4; until then it is intentionally empty.
#![no_std]
#![forbid(unsafe_code)]
