//! What every integration test uses: the `Kfd` to test against.
//!
//! The tests need the default `model` feature. By default they run on the in-process model
//! (one gfx900). With `KFD_DEVICE=<path>` set
//! (e.g. `/dev/kfd`, or the model behind the LD_PRELOAD shim) the same tests run through the
//! real-syscall backend; tests that need something only the model offers (several GPUs, a
//! look inside the driver) then skip with a message, and the tests of one binary take turns,
//! since they share the one KFD process the kernel gives an address space.
#![allow(dead_code)]

use std::time::Duration;
use thunk::model_access::KfdModelExt;
use thunk::{Kfd, OpenOptions};

pub use thunk::Preset;

/// Generous timeout for anything the GPU does: long enough for a 2-core host kept busy by
/// other programs; running out of it means a hang, never slowness.
pub const T: Duration = Duration::from_secs(60);

/// The device path when the tests run on a device.
pub fn device() -> Option<String> {
    std::env::var("KFD_DEVICE").ok().filter(|s| !s.is_empty())
}

fn init_log() {
    let _ = env_logger::builder().is_test(true).try_init();
}

/// On a device every test of a binary shares the one KFD process of the address space (the
/// kernel's rule), so tests that count queues or fault the GPU must not overlap: on a device
/// each test holds this lock from its first `kfd()` until its thread ends.
static DEVICE_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

thread_local! {
    static DEVICE_TURN: std::cell::RefCell<Option<std::sync::MutexGuard<'static, ()>>> =
        const { std::cell::RefCell::new(None) };
}

fn take_device_turn() {
    DEVICE_TURN.with(|t| {
        let mut t = t.borrow_mut();
        if t.is_none() {
            *t = Some(DEVICE_TESTS.lock().unwrap_or_else(|e| e.into_inner()));
        }
    });
}

/// The process under test: the device named by `KFD_DEVICE`, else a gfx900 model.
pub fn kfd() -> Kfd {
    init_log();
    if device().is_some() {
        take_device_turn();
    }
    let opts = match device() {
        Some(path) => OpenOptions::device(path),
        None => OpenOptions::model(Preset::Gfx900, 1),
    };
    match opts.open() {
        Ok(k) => k,
        Err(e) => panic!("opening the backend under test: {e}"),
    }
}

/// A model of `gpus` × `preset`, or `None` (with a message) when the tests run on a device.
pub fn model_kfd(preset: Preset, gpus: u32, why: &str) -> Option<Kfd> {
    init_log();
    if let Some(d) = device() {
        eprintln!("skipped on {d}: {why} needs the model");
        return None;
    }
    Some(Kfd::open_with(OpenOptions::model(preset, gpus)).expect("model"))
}

/// The model behind `kfd`, or `None` (with a message) on a device.
pub fn model_of<'a>(kfd: &'a Kfd, why: &str) -> Option<&'a kfd_model::Model> {
    match kfd.model() {
        Some(m) => Some(m),
        None => {
            eprintln!("skipped on a device: {why} looks inside the model");
            None
        }
    }
}

/// The calling thread's id, for [`until_blocked`].
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions and touches no memory.
    unsafe { libc::gettid() }
}

/// Returns once thread `tid` of this process is blocked in `WAIT_EVENTS` (fails the test after
/// [`T`]): on the model the driver's count of waiting threads says so; on a device, the thread is
/// asleep (`S` in `/proc/self/task/<tid>/stat`), which it only is inside the wait. A setter that
/// merely sleeps first may run before the waiter is there, and then tests nothing.
pub fn until_blocked(kfd: &Kfd, tid: i32) {
    let deadline = std::time::Instant::now() + T;
    let stat = format!("/proc/self/task/{tid}/stat");
    let blocked = || match kfd.model() {
        Some(m) => m.event_waiters() > 0,
        None => std::fs::read_to_string(&stat)
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .map(|rest| rest.trim_start().starts_with('S'))
            })
            .unwrap_or(false),
    };
    while !blocked() {
        assert!(
            std::time::Instant::now() < deadline,
            "thread {tid} did not block in WAIT_EVENTS within {T:?}"
        );
        std::thread::yield_now();
    }
}

/// Asserts that `r` failed with `errno` and that the message says `says`.
pub fn assert_err<T: std::fmt::Debug>(r: thunk::Result<T>, errno: thunk::Errno, says: &str) {
    match r {
        Ok(v) => panic!("expected {errno:?} ({says}), got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.errno(), errno, "{e}");
            assert!(e.to_string().contains(says), "{e:?} does not say {says:?}");
        }
    }
}
