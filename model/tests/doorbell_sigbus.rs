//! The doorbell watch resolves a client's write-protect fault in the client's own thread, with
//! a process-wide SIGBUS handler (`hw::doorbell_watch`). A SIGBUS it does not own (here: a
//! load past the end of a shared memory file) must still reach the handler the process had
//! installed before, and doorbell stores must keep working. (Its own test binary: signal
//! dispositions are process-wide.)

mod common;

use common::*;
use kfd_model::Preset;
use kfd_sys::*;
use pm4::user::WriteData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The address of the last SIGBUS the test's own handler received.
static FOREIGN_SIGBUS_AT: AtomicU64 = AtomicU64::new(0);

/// The process's handler from before the model: records the address and maps a zero page
/// over it, so the access that faulted succeeds when retried.
extern "C" fn earlier_handler(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as u64;
    FOREIGN_SIGBUS_AT.store(addr, Ordering::SeqCst);
    // SAFETY: replaces the faulting page of the test's own mapping with anonymous memory.
    unsafe {
        libc::mmap(
            (addr & !0xfff) as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
            -1,
            0,
        )
    };
}

#[test]
fn a_sigbus_outside_the_doorbells_reaches_the_earlier_handler_and_doorbells_still_wake_the_engine()
{
    // SAFETY: a zeroed sigaction with the fields set below is valid.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = earlier_handler as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO;
    // SAFETY: installs the test's handler for SIGBUS.
    assert_eq!(
        unsafe { libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()) },
        0
    );

    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mem = c.gtt(4096);
    let bell = DoorbellMapping::new(&c, q.doorbell_offset);
    // SAFETY: `bell` is a shared mapping of the model's doorbell memory, unmapped only when
    // the test ends.
    unsafe { model.watch_doorbell_mapping(bell.addr, bell.len) }
        .expect("userfaultfd with shared-memory write protection (Linux 5.19+)");

    // A load past the end of an empty shared memory file: SIGBUS (BUS_ADRERR).
    // SAFETY: memfd_create with a valid name.
    let fd = unsafe { libc::memfd_create(c"sigbus-test".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: a new shared mapping of the empty file, used only by this test.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    // SAFETY: a read of a mapped page (past the file's end: SIGBUS, which the test's
    // handler resolves).
    let v = unsafe { std::ptr::read_volatile(page as *const u32) };
    assert_eq!(v, 0, "the earlier handler's zero page");
    assert_eq!(
        FOREIGN_SIGBUS_AT.load(Ordering::SeqCst),
        page as u64,
        "the SIGBUS went to the handler installed before the model's"
    );

    // The watch still resolves doorbell stores after an idle second.
    let mut ring = RingWriter::pm4(&q);
    for i in 1..=2u32 {
        std::thread::sleep(Duration::from_millis(1100));
        ring.push(&q, &WriteData::memory(mem.va, &[i]).unwrap());
        let t = Instant::now();
        bell.ring(q.doorbell_offset, ring.wptr());
        while mem.read_u32(0) != i {
            assert!(t.elapsed() < Duration::from_secs(5), "the packet ran");
            std::thread::sleep(Duration::from_micros(10));
        }
    }
    assert_eq!(model.doorbell_wakeups(), 2, "each store woke the engine");
    assert_eq!(
        FOREIGN_SIGBUS_AT.load(Ordering::SeqCst),
        page as u64,
        "doorbell faults never reach the earlier handler"
    );
    // SAFETY: unmapping and closing what this test created.
    unsafe {
        libc::munmap(page, 4096);
        libc::close(fd);
    }
}
