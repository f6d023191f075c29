//! The semantic tests' assembler: a program of gfx9 assembly text through llvm-mc-15, its
//! encodings collected into the bytes the wave runs (`kfd_testkit::assemble`).

pub use kfd_testkit::assemble as asm;
