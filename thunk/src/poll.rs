//! Waiting for memory the GPU writes: a burst of checks for a few microseconds (a fence or a
//! short dispatch lands within them when the engine has a core of its own), then checks with
//! a yield between every few — on the model the engine that writes the fence is a thread that
//! may need this very core, and on hardware a yield with nothing else runnable returns at
//! once — then sleeps with a growing back-off that never passes the deadline.
//!
//! A yield that comes back late (another thread had the core) is followed by one short sleep
//! per wait: a waiter and the model's engine thread that share a core and hand it to each
//! other at every yield stay too busy for the scheduler to move either (issue #22 measured
//! 36 µs per empty dispatch that way, in some processes for their whole run), while a thread
//! that wakes from a sleep is placed on an idle core.
//!
//! The spinning phase is short on purpose: with more runnable threads than cores, a waiter
//! that spins tens of microseconds before its first yield keeps the model's engine thread off
//! the core it shares, and every wait takes that long (issue #22 measured 100–200 µs per empty
//! dispatch that way, against 2 µs when the engine had a core of its own). Without it, a
//! waiter that yields at once hands its core to any runnable background task (a build at low
//! priority was enough) and an empty dispatch took 25 µs instead of 2 µs.

use std::time::{Duration, Instant};

/// Checks before the clock is first read: most fences land within them.
const FIRST_BURST: u32 = 64;
/// Check without yielding until this much time has passed.
const SPIN_UNTIL: Duration = Duration::from_micros(10);
/// Yield between rounds of checks until this much time has passed.
const YIELD_UNTIL: Duration = Duration::from_millis(3);
/// A yield that returns this late means another thread had this core meanwhile.
const LONG_YIELD: Duration = Duration::from_micros(5);
/// The longest sleep between checks after that.
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Calls `done` until it returns true or `timeout` passes; returns whether it became true.
pub(crate) fn poll_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..FIRST_BURST {
        if done() {
            return true;
        }
        std::hint::spin_loop();
    }
    let start = Instant::now();
    let mut sleep = Duration::from_micros(50);
    let mut slept = false;
    loop {
        // Read the clock only every few checks; it costs more than a check.
        for _ in 0..32 {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            return done();
        }
        if elapsed < SPIN_UNTIL {
            continue;
        }
        if elapsed < YIELD_UNTIL {
            let before = Instant::now();
            std::thread::yield_now();
            if !slept && before.elapsed() >= LONG_YIELD && several_cores() {
                // Another thread ran on this core meanwhile — on the model, likely the engine
                // that will write the value, each handing the core to the other at every
                // yield and both too busy for the scheduler to move either. A real sleep lets
                // the wake-up place this thread on an idle core; once per wait.
                slept = true;
                nap();
            }
        } else {
            std::thread::sleep(sleep.min(timeout - elapsed));
            sleep = (sleep * 2).min(MAX_SLEEP);
        }
    }
}

/// How long the nap after a late yield lasts, and the timer slack it runs with.
const NAP: Duration = Duration::from_micros(1);

/// Sleeps [`NAP`], with the calling thread's timer slack lowered to it meanwhile (then put
/// back: it is the caller's thread). With Linux's default slack of 50 µs the 1 µs sleep
/// lasted about 50 µs, and every wait on a busy machine (where yields come back late) took at
/// least that.
fn nap() {
    let slack = nix::sys::prctl::get_timerslack().ok();
    let lowered = nix::sys::prctl::set_timerslack(NAP.as_nanos() as u64).is_ok();
    std::thread::sleep(NAP);
    if let (true, Some(ns)) = (lowered, slack) {
        let _ = nix::sys::prctl::set_timerslack(u64::try_from(ns).unwrap_or(0));
    }
}

/// Whether this process may run on more than one core (a sleep can move a thread only then).
fn several_cores() -> bool {
    static SEVERAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SEVERAL.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn returns_when_the_condition_holds_or_the_time_is_up() {
        assert!(poll_until(Duration::ZERO, || true));
        let t = Instant::now();
        assert!(!poll_until(Duration::from_millis(20), || false));
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(20), "{waited:?}");
        // A zero timeout checks a bounded number of times and gives up (how long that takes
        // is the host's business: count the checks instead).
        let mut checks = 0u32;
        assert!(!poll_until(Duration::ZERO, || {
            checks += 1;
            false
        }));
        assert_eq!(
            checks,
            FIRST_BURST + 32 + 1,
            "one burst, one round, the last look"
        );
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            f.store(true, Ordering::Release);
        });
        assert!(poll_until(Duration::from_secs(60), || flag.load(Ordering::Acquire)));
        h.join().unwrap();
    }
}
