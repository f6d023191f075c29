//! The project's own kernel, `axpy` (`cli/kernels/axpy.cl`: `y[i] = a * x[i] + y[i]` over
//! unsigned integers), kept as code objects for gfx900 and gfx90a so that `kfd demo` and
//! `kfd trace dispatch` run a real kernel without a compiler installed. `cli/kernels/regenerate.sh`
//! holds the exact clang-15 commands that rebuild them; `cli/tests/kernels.rs` checks that
//! rebuilding gives the same machine code.

use thunk::{Executable, Gpu, Kernel, KernelArgs, Memory, MemoryKind};

use crate::error::{CliError, CliResult};

/// Where the kernel's source is, from the repository root.
pub const AXPY_SOURCE: &str = "cli/kernels/axpy.cl";
/// The kernel's name.
pub const AXPY: &str = "axpy";

/// The kept code objects by processor.
const KEPT: [(&str, &[u8]); 2] = [
    ("gfx900", include_bytes!("../kernels/axpy-gfx900.hsaco")),
    ("gfx90a", include_bytes!("../kernels/axpy-gfx90a.hsaco")),
];

/// The kept code object of `axpy` for `processor`, if there is one.
pub fn kept_code_object(processor: &str) -> Option<&'static [u8]> {
    KEPT.iter().find(|(p, _)| *p == processor).map(|(_, b)| *b)
}

/// The processors a code object is kept for.
pub fn kept_processors() -> Vec<&'static str> {
    KEPT.iter().map(|(p, _)| *p).collect()
}

/// `x[i]`.
pub fn x_value(i: u32) -> u32 {
    i
}

/// `y[i]` before the kernel runs.
pub fn y_before(i: u32) -> u32 {
    0x1000 + i
}

/// `y[i]` after: the host's reference.
pub fn y_after(a: u32, i: u32) -> u32 {
    a.wrapping_mul(x_value(i)).wrapping_add(y_before(i))
}

/// `axpy` loaded on a GPU with its two buffers filled.
pub struct Axpy {
    /// The loaded code (keep it alive while the kernel runs).
    pub exe: Executable,
    /// The kernel.
    pub kernel: Kernel,
    /// The processor the code object is for.
    pub processor: &'static str,
    /// Size of the kept code object in bytes.
    pub code_object_bytes: usize,
    /// `x`, in GTT.
    pub x: Memory,
    /// `y`, in GTT.
    pub y: Memory,
    /// Elements.
    pub n: u32,
    /// The scalar.
    pub a: u32,
}

fn thunk_err(what: &'static str) -> impl Fn(thunk::Error) -> CliError {
    move |e| CliError::failure_in(what, e)
}

impl Axpy {
    /// Loads the kept code object for `gpu`'s processor and fills `x` and `y` (`n` elements).
    pub fn load(gpu: &Gpu, n: u32, a: u32) -> CliResult<Axpy> {
        let target = Executable::target_of(gpu).map_err(thunk_err("the GPU's target"))?;
        let (processor, code) = KEPT
            .iter()
            .find(|(p, _)| *p == target.processor)
            .copied()
            .ok_or_else(|| {
                CliError::failure(format!(
                    "no kept code object of {AXPY} for {} (kept: {})",
                    target.processor,
                    kept_processors().join(", ")
                ))
            })?;
        let exe = Executable::load(gpu, code).map_err(thunk_err("loading the code object"))?;
        let kernel = exe.kernel(AXPY).map_err(thunk_err("the kernel"))?;
        let bytes = u64::from(n.max(1)) * 4;
        let buffer = |f: fn(u32) -> u32| -> CliResult<Memory> {
            let m = gpu
                .alloc(MemoryKind::Gtt, bytes)
                .map_err(thunk_err("allocating a buffer"))?;
            let data: Vec<u8> = (0..n).flat_map(|i| f(i).to_le_bytes()).collect();
            m.write(0, &data).map_err(thunk_err("filling a buffer"))?;
            Ok(m)
        };
        let x = buffer(x_value)?;
        let y = buffer(y_before)?;
        Ok(Axpy {
            exe,
            kernel,
            processor,
            code_object_bytes: code.len(),
            x,
            y,
            n,
            a,
        })
    }

    /// The kernel arguments: `x`, `y`, `a`, `n`.
    pub fn args(&self) -> CliResult<KernelArgs> {
        let mut args = self.kernel.args().map_err(thunk_err("kernel arguments"))?;
        args.push_pointer(self.x.gpu_va())
            .and_then(|a| a.push_pointer(self.y.gpu_va()))
            .and_then(|a| a.push_u32(self.a))
            .and_then(|a| a.push_u32(self.n))
            .map_err(thunk_err("kernel arguments"))?;
        Ok(args)
    }

    /// How many elements of `y` equal the host's reference.
    pub fn correct(&self) -> CliResult<u32> {
        let bytes = self
            .y
            .read_vec(0, u64::from(self.n) as usize * 4)
            .map_err(thunk_err("reading y"))?;
        Ok(bytes
            .chunks_exact(4)
            .zip(0..)
            .filter(|(c, i)| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) == y_after(self.a, *i))
            .count() as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kept_code_object_holds_the_kernel_for_its_processor() {
        for (processor, bytes) in KEPT {
            let co = codeobj::CodeObject::parse(bytes).expect("parses");
            assert_eq!(co.target().processor, processor);
            let names: Vec<&str> = co.kernels().iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names, [AXPY], "{processor}");
        }
        assert!(kept_code_object("gfx1030").is_none());
    }

    #[test]
    fn the_reference_is_a_times_x_plus_y() {
        assert_eq!(y_after(3, 0), 0x1000);
        assert_eq!(y_after(3, 10), 30 + 0x100a);
        assert_eq!(y_after(u32::MAX, 1), 0x1000, "wraps as the GPU's u32 does");
    }
}
