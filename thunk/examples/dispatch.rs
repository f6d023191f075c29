//! A kernel dispatch, the way a tool runs one: open the device (or the model when there is no
//! `/dev/kfd`), load a code object for the GPU's target, build the kernel arguments, dispatch a
//! vector add over an AQL queue and wait for its completion signal's event.
//!
//! ```sh
//! cargo run -p thunk --example dispatch                      # compiles the kernel with clang-15
//! cargo run -p thunk --example dispatch -- kernels.hsaco     # any code object with `vadd`
//! KFD_MODEL_PRESET=gfx90a cargo run -p thunk --example dispatch
//! ```
//!
//! The kernel is `vadd(const float *a, const float *b, float *c, uint n)` of
//! `thunk/tests/kernels/dispatch.cl`.

use std::path::PathBuf;
use std::time::Duration;
use thunk::{Errno, Error, Executable, Kfd, MemoryKind, OpenOptions, QueueOptions};

/// Compiles the test kernels for `target` with clang-15 (`kfd_testkit`'s command: a missing
/// clang-15 or a failed compile stops the example with the reason).
fn compile(target: &str) -> Vec<u8> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/dispatch.cl");
    kfd_testkit::opencl_to_code_object(&src, target, &[])
}

fn main() -> Result<(), Error> {
    env_logger::init();
    let kfd = Kfd::open_with(OpenOptions::from_env()?)?;
    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| Error::new("example", Errno::ENODEV, "no GPU"))?;
    let target = gpu.node().gfx_target_name().unwrap_or_default();
    println!(
        "opened {}, GPU {:#x} ({target})",
        kfd.backend().describe(),
        gpu.id()
    );

    let exe = match std::env::args_os().nth(1) {
        Some(p) => Executable::load_file(&gpu, PathBuf::from(p))?,
        None => Executable::load(&gpu, &compile(&target))?,
    };
    println!("kernels: {:?}", exe.kernel_names()?);
    let kernel = exe.kernel("vadd")?;
    println!(
        "vadd: descriptor at {:#x}, {} kernarg bytes, {} LDS bytes",
        kernel.descriptor_address, kernel.kernarg_size, kernel.group_segment_size
    );

    const N: usize = 1000;
    let bytes = (4 * N) as u64;
    let (a, b, c) = (
        gpu.alloc(MemoryKind::Gtt, bytes)?,
        gpu.alloc(MemoryKind::Gtt, bytes)?,
        gpu.alloc(MemoryKind::Gtt, bytes)?,
    );
    let floats =
        |f: &dyn Fn(usize) -> f32| -> Vec<u8> { (0..N).flat_map(|i| f(i).to_le_bytes()).collect() };
    a.write(0, &floats(&|i| i as f32))?;
    b.write(0, &floats(&|i| 2.0 * i as f32))?;

    let mut args = kernel.args()?;
    args.push_pointer(a.gpu_va())?
        .push_pointer(b.gpu_va())?
        .push_pointer(c.gpu_va())?
        .push_u32(N as u32)?;
    let mut queue = gpu.create_aql_queue(&QueueOptions::new())?;
    let done = queue.dispatch(&kernel, [N as u32, 1, 1], [256, 1, 1], &args)?;
    done.wait(Duration::from_secs(5))?;

    let out = c.read_vec(0, 4 * N)?;
    let wrong = out
        .chunks_exact(4)
        .enumerate()
        .filter(|(i, x)| f32::from_le_bytes([x[0], x[1], x[2], x[3]]) != 3.0 * *i as f32)
        .count();
    println!("vadd over {N} work-items in groups of 256: {wrong} wrong results");
    if wrong != 0 {
        return Err(Error::new("example", Errno::EIO, "wrong results"));
    }
    Ok(())
}
