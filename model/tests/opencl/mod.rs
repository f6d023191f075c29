//! OpenCL C kernels for the model's dispatch tests and benches: compiled by clang-15 at run
//! time, loaded by `codeobj` into a GPU buffer of the test client.
#![allow(dead_code)]

use crate::common::{Buf, Client};
use codeobj::{CodeObject, Executable, SegmentMemory, TargetId};
use std::path::Path;

/// Compiles the OpenCL C file `src` for `mcpu` into a code object (`kfd_testkit`'s command).
pub fn compile(src: &Path, mcpu: &str) -> Vec<u8> {
    kfd_testkit::opencl_to_code_object(src, mcpu, &[])
}

/// Loads `code_object` (built for `mcpu`) into a new 1 MiB executable GTT buffer on `c`'s GPU
/// and freezes it: the buffer and the executable, ready to dispatch from.
pub fn load(c: &Client, mcpu: &str, code_object: &[u8]) -> (Buf, Executable) {
    let flags = kfd_sys::KFD_IOC_ALLOC_MEM_FLAGS_GTT
        | kfd_sys::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
        | kfd_sys::KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
    let code = c.alloc_on(c.gpu(), 1 << 20, flags).unwrap();
    let agent: TargetId = format!("amdgcn-amd-amdhsa--{mcpu}").parse().unwrap();
    let mut exe = Executable::new(agent);
    let mut mem = BufMemory {
        buf: &code,
        used: 0,
    };
    exe.load(CodeObject::parse(code_object).unwrap(), &mut mem)
        .unwrap();
    exe.freeze(&mut mem).unwrap();
    (code, exe)
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
