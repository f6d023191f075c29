//! Code objects loaded into a GPU's memory: [`Executable`] (the `codeobj` loader over GPU
//! buffers) and [`Kernel`], what a dispatch needs of one kernel.

use std::path::Path;

use codeobj::{Container, KernelDescriptor, KernelMetadata, SegmentMemory, TargetId};

use crate::error::{Errno, Error, Result};
use crate::memory::{AllocOptions, Memory, MemoryKind};
use crate::va::PAGE_SIZE;
use crate::Gpu;

/// Kernarg segments are at least 16-byte aligned (AMDGPUUsage, "Kernarg segment").
const MIN_KERNARG_ALIGN: u64 = 16;

/// A `codeobj` error as a thunk error of operation `op`.
pub(crate) fn codeobj_error(op: &'static str, e: codeobj::Error) -> Error {
    let errno = match &e {
        codeobj::Error::NotFound { .. } => Errno::ENOENT,
        codeobj::Error::WrongTarget { .. } | codeobj::Error::NoMatchingTarget { .. } => {
            Errno(libc::ENOEXEC)
        }
        codeobj::Error::Memory(_) => Errno::ENOMEM,
        _ => Errno::EINVAL,
    };
    Error::new(op, errno, e.to_string())
}

/// Segment memory in executable GTT buffers of one GPU: the GPU fetches code from them, the
/// CPU writes them while loading. One buffer per code object.
struct GpuSegments<'a> {
    gpu: &'a Gpu,
    buffers: &'a mut Vec<Memory>,
    error: Option<Error>,
}

impl SegmentMemory for GpuSegments<'_> {
    fn allocate(&mut self, size: u64, align: u64) -> codeobj::Result<u64> {
        // Buffers are page-aligned; a larger alignment is met by over-allocating.
        let extra = if align > PAGE_SIZE { align } else { 0 };
        let bytes = size
            .checked_add(extra)
            .filter(|b| *b > 0)
            .ok_or_else(|| codeobj::Error::Memory(format!("segment size {size:#x}")))?;
        let memory = self
            .gpu
            .alloc_with(&AllocOptions::new(MemoryKind::Gtt, bytes).executable())
            .map_err(|e| {
                let text = e.to_string();
                self.error = Some(e);
                codeobj::Error::Memory(text)
            })?;
        let start = memory.gpu_va().next_multiple_of(align.max(1));
        self.buffers.push(memory);
        Ok(start)
    }

    fn write(&mut self, address: u64, bytes: &[u8]) -> codeobj::Result<()> {
        let end = address.checked_add(bytes.len() as u64);
        let buffer = self
            .buffers
            .iter()
            .find(|m| address >= m.gpu_va() && end.is_some_and(|e| e <= m.gpu_va() + m.size()))
            .ok_or_else(|| {
                codeobj::Error::Memory(format!(
                    "{:#x} bytes at {address:#x} are outside the segments",
                    bytes.len()
                ))
            })?;
        buffer
            .write(address - buffer.gpu_va(), bytes)
            .map_err(|e| codeobj::Error::Memory(e.to_string()))
    }
}

/// Code objects loaded into one GPU's memory and linked: the counterpart of an HSA executable.
///
/// The code lives in executable GTT buffers the executable owns; a [`Kernel`] taken from it
/// holds plain addresses, so keep the executable alive while its kernels run.
#[derive(Debug)]
pub struct Executable {
    gpu: Gpu,
    inner: codeobj::Executable,
    segments: Vec<Memory>,
}

impl Executable {
    /// The GPU's target ID (`amdgcn-amd-amdhsa--gfxNNN`) from its topology node.
    pub fn target_of(gpu: &Gpu) -> Result<TargetId> {
        let name = gpu.node().gfx_target_name().ok_or_else(|| {
            Error::bad_answer("load", format!("GPU {} has no gfx target", gpu.id()))
        })?;
        format!("amdgcn-amd-amdhsa--{name}")
            .parse()
            .map_err(|e| codeobj_error("load", e))
    }

    /// Loads the code object for `gpu`'s target from `bytes` — a bare ELF, a clang offload
    /// bundle or a HIP fat binary — links and freezes it.
    pub fn load(gpu: &Gpu, bytes: &[u8]) -> Result<Executable> {
        Executable::load_linked(gpu, &[bytes])
    }

    /// Loads several code objects (each a bare ELF, offload bundle or HIP fat binary; the one
    /// for `gpu`'s target is taken from each) into one executable and links them together:
    /// an undefined symbol of one — a device function, a variable — binds to the global
    /// definition another exports, the first in `objects` order. This is how a tool's
    /// library of device functions joins an application's kernels at load time.
    pub fn load_linked(gpu: &Gpu, objects: &[&[u8]]) -> Result<Executable> {
        if objects.is_empty() {
            return Err(Error::invalid("load", "no code object to load"));
        }
        let agent = Executable::target_of(gpu)?;
        let mut inner = codeobj::Executable::new(agent.clone());
        let mut segments = Vec::new();
        let mut memory = GpuSegments {
            gpu,
            buffers: &mut segments,
            error: None,
        };
        let mut loaded = Ok(());
        for bytes in objects {
            loaded = Container::parse(bytes)
                .and_then(|c| c.code_object_for(&agent))
                .and_then(|co| inner.load(co, &mut memory).map(drop));
            if loaded.is_err() {
                break;
            }
        }
        let loaded = loaded.and_then(|_| inner.freeze(&mut memory));
        if let Err(e) = loaded {
            // An allocation failure keeps the driver's errno.
            return Err(memory
                .error
                .take()
                .unwrap_or_else(|| codeobj_error("load", e)));
        }
        Ok(Executable {
            gpu: gpu.clone(),
            inner,
            segments,
        })
    }

    /// [`Executable::load`] of the file at `path`.
    pub fn load_file(gpu: &Gpu, path: impl AsRef<Path>) -> Result<Executable> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| {
            Error::new(
                "load",
                Errno(e.raw_os_error().unwrap_or(Errno::EIO.0)),
                format!("{}: {e}", path.display()),
            )
        })?;
        Executable::load(gpu, &bytes)
    }

    /// The GPU the code was loaded for.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The loader's view: symbols, functions, variables and their addresses.
    pub fn code(&self) -> &codeobj::Executable {
        &self.inner
    }

    /// The GPU buffers holding the loaded segments.
    pub fn segments(&self) -> &[Memory] {
        &self.segments
    }

    /// Writes `bytes` into the global variable `name` (a tool setting up a library it linked
    /// in, before any kernel runs); `ENOENT` when there is no such variable, `EINVAL` when
    /// `bytes` is longer than it.
    pub fn write_variable(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let v = self
            .inner
            .variable(name)
            .map_err(|e| codeobj_error("write variable", e))?;
        if bytes.len() as u64 > v.size {
            return Err(Error::invalid(
                "write variable",
                format!("{} bytes do not fit {name} ({} bytes)", bytes.len(), v.size),
            ));
        }
        let buffer = self
            .segments
            .iter()
            .find(|m| v.address >= m.gpu_va() && v.address + v.size <= m.gpu_va() + m.size())
            .ok_or_else(|| {
                Error::invalid(
                    "write variable",
                    format!("{name} at {:#x} is outside the loaded segments", v.address),
                )
            })?;
        buffer.write(v.address - buffer.gpu_va(), bytes)
    }

    /// The kernel of that name (or its `.kd` symbol); `ENOENT` when there is none.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let k = self
            .inner
            .kernel(name)
            .map_err(|e| codeobj_error("kernel", e))?;
        let descriptor = k.descriptor;
        let (kernarg_size, kernarg_align) = match &k.metadata {
            Some(m) => (
                m.kernarg_segment_size
                    .max(u64::from(descriptor.kernarg_size)),
                m.kernarg_segment_align.max(MIN_KERNARG_ALIGN),
            ),
            None => (u64::from(descriptor.kernarg_size), MIN_KERNARG_ALIGN),
        };
        if !kernarg_align.is_power_of_two() {
            return Err(Error::invalid(
                "kernel",
                format!("{name}: kernarg alignment {kernarg_align} is not a power of two"),
            ));
        }
        Ok(Kernel {
            name: k.name,
            gpu_id: self.gpu.id(),
            descriptor_address: k.descriptor_address,
            kernarg_size,
            kernarg_align,
            group_segment_size: descriptor.group_segment_fixed_size,
            private_segment_size: descriptor.private_segment_fixed_size,
            descriptor,
            metadata: k.metadata,
        })
    }

    /// The names of all kernels.
    pub fn kernel_names(&self) -> Result<Vec<String>> {
        Ok(self
            .inner
            .kernels()
            .map_err(|e| codeobj_error("kernel", e))?
            .into_iter()
            .map(|k| k.name)
            .collect())
    }
}

/// One kernel of an [`Executable`]: what an AQL dispatch packet names and sizes.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The kernel's name.
    pub name: String,
    /// The GPU its executable was loaded on.
    pub gpu_id: u32,
    /// GPU address of its kernel descriptor (the packet's `kernel_object`).
    pub descriptor_address: u64,
    /// Bytes of kernel arguments, hidden ones included.
    pub kernarg_size: u64,
    /// Alignment of the kernarg segment (at least 16).
    pub kernarg_align: u64,
    /// Fixed LDS bytes per workgroup.
    pub group_segment_size: u32,
    /// Fixed scratch bytes per work-item.
    pub private_segment_size: u32,
    /// The decoded kernel descriptor.
    pub descriptor: KernelDescriptor,
    /// The metadata note's entry (code objects v3 and later).
    pub metadata: Option<KernelMetadata>,
}
