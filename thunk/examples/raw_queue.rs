//! A raw PM4 queue, the way a tool writes one: open the device (or the model when there is no
//! `/dev/kfd`), pick a GPU, create a PM4 compute queue, write a WRITE_DATA and a RELEASE_MEM
//! that signals an event, submit, wait.
//!
//! ```sh
//! cargo run -p thunk --example raw_queue
//! RUST_LOG=thunk=debug cargo run -p thunk --example raw_queue       # what the thunk does
//! KFD_DEVICE=/dev/kfd cargo run -p thunk --example raw_queue        # a real GPU
//! ```

use std::time::Duration;
use thunk::{EventKind, Kfd, MemoryKind, OpenOptions, QueueOptions, WaitStatus};

fn main() -> Result<(), thunk::Error> {
    env_logger::init();
    // KFD_DEVICE=<path> picks a device, KFD_MODEL_PRESET=<preset> a model; otherwise /dev/kfd if it
    // exists, else the model.
    let kfd = Kfd::open_with(OpenOptions::from_env()?)?;
    println!(
        "opened {} (KFD interface {})",
        kfd.backend().describe(),
        kfd.version()
    );

    let gpu = kfd
        .gpu(0)
        .ok_or_else(|| thunk::Error::new("example", thunk::Errno::ENODEV, "no GPU"))?;
    let node = gpu.node();
    println!(
        "gpu {:#x}: {} ({}), {} CUs",
        gpu.id(),
        node.name,
        node.gfx_target_name().unwrap_or_default(),
        node.cu_count()
    );

    // A buffer the GPU writes and the CPU reads, at the same address for both.
    let buf = gpu.alloc(MemoryKind::Gtt, 4096)?;
    let done = kfd.create_event(EventKind::Signal, false)?;
    let mut queue = gpu.create_pm4_queue(&QueueOptions::new().ring_size(4096))?;
    println!(
        "queue {}: ring {:#x}, doorbell {:#x}",
        queue.id(),
        queue.ring().gpu_va(),
        queue.doorbell_address().unwrap_or(0)
    );

    queue.push_write_data(buf.gpu_addr(0), &[0xC0FF_EE00, 0x0000_BEEF])?;
    // RELEASE_MEM: write the event's slot and interrupt with its id (facts §8.2).
    queue.push_signal(&done)?;
    let wptr = queue.submit()?;
    println!("submitted up to {wptr}");

    match done.wait(Some(Duration::from_secs(5)))? {
        WaitStatus::Signaled => println!("event {} signalled", done.id()),
        WaitStatus::TimedOut => {
            return Err(thunk::Error::timeout(
                "example",
                "the queue did not signal the event within 5 s",
            ))
        }
    }
    let words = buf.read_dwords(0, 2)?;
    println!("buffer: {:#010x} {:#010x}", words[0], words[1]);
    assert_eq!(words, [0xC0FF_EE00, 0x0000_BEEF]);
    queue.wait_idle(Duration::from_secs(1))?;
    println!("read pointer {} = write pointer", queue.rptr());
    Ok(())
}
