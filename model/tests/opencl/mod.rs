//! OpenCL C kernels for the model's dispatch tests and benches: compiled by clang-15 at run
//! time, loaded by `codeobj` into a GPU buffer of the test client.
#![allow(dead_code)]

use crate::common::Buf;
use codeobj::SegmentMemory;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Compiles the OpenCL C file `src` for `mcpu` into a code object.
pub fn compile(src: &Path, mcpu: &str) -> Vec<u8> {
    // Tests run in parallel: one output file per compile.
    static SERIAL: AtomicU32 = AtomicU32::new(0);
    let n = SERIAL.fetch_add(1, Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!(
        "kfd-model-opencl-{}-{mcpu}-{n}.hsaco",
        std::process::id()
    ));
    let status = Command::new(kfd_testkit::require("clang-15"))
        .args([
            "-x",
            "cl",
            "-cl-std=CL2.0",
            "-target",
            "amdgcn-amd-amdhsa",
            "-nogpulib",
            "-O2",
        ])
        .arg(format!("-mcpu={mcpu}"))
        .arg(src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("clang-15 runs");
    assert!(status.success(), "clang-15 failed for {mcpu}");
    let elf = std::fs::read(&out).expect("code object");
    let _ = std::fs::remove_file(&out);
    elf
}

/// [`SegmentMemory`] inside one GPU buffer of the model.
pub struct BufMemory<'a> {
    /// The buffer segments are placed in.
    pub buf: &'a Buf,
    /// Bytes of it already given out.
    pub used: u64,
}

impl SegmentMemory for BufMemory<'_> {
    fn allocate(&mut self, size: u64, align: u64) -> codeobj::Result<u64> {
        let start = (self.buf.va + self.used).next_multiple_of(align.max(1));
        if start + size > self.buf.va + self.buf.size {
            return Err(codeobj::Error::Memory("code buffer full".into()));
        }
        self.used = start + size - self.buf.va;
        Ok(start)
    }

    fn write(&mut self, address: u64, bytes: &[u8]) -> codeobj::Result<()> {
        self.buf.write_bytes(address - self.buf.va, bytes);
        Ok(())
    }
}
