//! Waiting for memory the GPU writes: spin briefly (a fence usually lands within microseconds),
//! then yield, then sleep with a growing back-off, never past the deadline.

use std::time::{Duration, Instant};

const SPINS: u32 = 4000;
const YIELDS: u32 = 200;
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Calls `done` until it returns true or `timeout` passes; returns whether it became true.
pub(crate) fn poll_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    if done() {
        return true;
    }
    let start = Instant::now();
    let mut round = 0u32;
    let mut sleep = Duration::from_micros(10);
    loop {
        if done() {
            return true;
        }
        round = round.saturating_add(1);
        if round < SPINS {
            std::hint::spin_loop();
            if round % 256 != 0 {
                continue;
            }
        } else if round < SPINS + YIELDS {
            std::thread::yield_now();
        } else {
            let left = timeout.saturating_sub(start.elapsed());
            std::thread::sleep(sleep.min(left));
            sleep = (sleep * 2).min(MAX_SLEEP);
        }
        if start.elapsed() >= timeout {
            return done();
        }
    }
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
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            f.store(true, Ordering::Release);
        });
        assert!(poll_until(Duration::from_secs(5), || flag.load(Ordering::Acquire)));
        h.join().unwrap();
    }
}
