//! A doorbell stored by an unmodified client after the model has idled is noticed at once
//! (issue #17 item 9): the client's doorbell mapping is write-protected while the engine
//! thread sleeps, and the store's fault wakes it (`hw::doorbell_watch`).

mod common;

use common::*;
use kfd_model::Preset;
use kfd_sys::*;
use pm4::user::WriteData;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// The client's own shared mapping of its doorbell slice (what the shim's `mmap` makes).
struct DoorbellMapping {
    addr: u64,
    len: u64,
}

impl DoorbellMapping {
    fn new(c: &Client, doorbell_offset: u64) -> DoorbellMapping {
        let slice = KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15;
        let src = c.p.mmap(doorbell_offset & !(slice - 1), slice).unwrap();
        // SAFETY: a new shared mapping of the model's doorbell memory file, owned by this
        // struct and unmapped in Drop.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                slice as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                src.memory.fd().as_raw_fd(),
                src.offset as libc::off_t,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED, "mmap of the doorbell memory");
        DoorbellMapping {
            addr: addr as u64,
            len: slice,
        }
    }

    /// The client's 64-bit doorbell store.
    fn ring(&self, doorbell_offset: u64, value: u64) {
        let at = self.addr + (doorbell_offset & (self.len - 1));
        // SAFETY: an aligned 8-byte slot inside this mapping.
        unsafe { std::ptr::write_volatile(at as *mut u64, value) };
    }
}

impl Drop for DoorbellMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping this struct made.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len as usize) };
    }
}

#[test]
fn a_doorbell_stored_after_a_second_of_idle_wakes_the_engine_through_the_watch() {
    let _ = env_logger::builder().is_test(true).try_init();
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mem = c.gtt(4096);
    let bell = DoorbellMapping::new(&c, q.doorbell_offset);
    // SAFETY: `bell` is a shared mapping of the model's doorbell memory, unmapped only when
    // the test ends.
    unsafe { model.watch_doorbell_mapping(bell.addr, bell.len) }
        .expect("userfaultfd with shared-memory write protection (Linux 5.19+)");
    let mut ring = RingWriter::pm4(&q);
    let mut latencies = Vec::new();
    for i in 1..=3u32 {
        // Past DEEP_IDLE_AFTER: the engine thread sleeps up to 16 ms between polls.
        std::thread::sleep(Duration::from_millis(1100));
        ring.push(&q, &WriteData::memory(mem.va, &[i]).unwrap());
        let t = Instant::now();
        // Only the doorbell: the write-pointer location stays as it was.
        bell.ring(q.doorbell_offset, ring.wptr());
        while mem.read_u32(0) != i {
            assert!(t.elapsed() < Duration::from_secs(5), "the packet ran");
            std::hint::spin_loop();
        }
        latencies.push(t.elapsed());
    }
    latencies.sort();
    eprintln!("doorbell after 1.1 s idle -> packet done: {latencies:?}");
    assert_eq!(
        model.doorbell_wakeups(),
        3,
        "each store after the idle second faulted and woke the engine"
    );
    // Sub-millisecond on an idle host; the bound leaves room for a loaded one.
    assert!(
        latencies[1] < Duration::from_millis(100),
        "median {:?}",
        latencies[1]
    );
}
