//! # thunk — a safe Rust thunk over `/dev/kfd`
//!
//! This crate will be to Rust what libhsakmt is to C: topology, memory, queues, doorbells and
//! events over one `Backend` trait with two implementations — real syscalls on `/dev/kfd` and
//! the in-process model — with RAII types for every kernel object. Filled by issue #7.
#![forbid(unsafe_code)]
