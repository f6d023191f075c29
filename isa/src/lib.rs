//! The gfx9 instruction set (GCN5 gfx900/gfx906, CDNA2 gfx90a).
//!
//! Placeholder root written by the execution branch (`i-exec`) before the instruction table,
//! decoder and disassembler (branch `i-isa`) landed; it is replaced by that branch's `lib.rs`,
//! which only needs to keep `pub mod exec;`.

#![forbid(unsafe_code)]

pub mod exec;
