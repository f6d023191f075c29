//! The GPU timestamp clock: one monotonic counter per model instance, at a stated frequency,
//! read by `GET_CLOCK_COUNTERS`, `RELEASE_MEM` clock data, `COPY_DATA` from the GPU clock and
//! SDMA `TIMESTAMP`.

use std::time::Instant;

/// Frequency of the modelled GPU timestamp counter (the 100 MHz reference clock).
pub const GPU_CLOCK_HZ: u64 = 100_000_000;

/// A monotonic GPU clock.
#[derive(Debug, Clone, Copy)]
pub struct GpuClock {
    epoch: Instant,
}

impl Default for GpuClock {
    fn default() -> Self {
        Self::new()
    }
}

impl GpuClock {
    /// A clock starting at 0 now.
    pub fn new() -> Self {
        GpuClock {
            epoch: Instant::now(),
        }
    }

    /// Ticks since the epoch at [`GPU_CLOCK_HZ`].
    pub fn now(&self) -> u64 {
        let ns = self.epoch.elapsed().as_nanos();
        (ns * u128::from(GPU_CLOCK_HZ) / 1_000_000_000) as u64
    }
}

/// `CLOCK_MONOTONIC_RAW` in ns (`ktime_get_raw_ns`).
pub fn cpu_clock_ns() -> u64 {
    clock_ns(nix::time::ClockId::CLOCK_MONOTONIC_RAW)
}

/// `CLOCK_BOOTTIME` in ns (`ktime_get_boottime_ns`).
pub fn system_clock_ns() -> u64 {
    clock_ns(nix::time::ClockId::CLOCK_BOOTTIME)
}

fn clock_ns(id: nix::time::ClockId) -> u64 {
    nix::time::clock_gettime(id)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_are_monotonic() {
        let c = GpuClock::new();
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = c.now();
        assert!(b > a && b - a >= GPU_CLOCK_HZ / 1000, "{a} {b}");
        assert!(cpu_clock_ns() > 0 && system_clock_ns() > 0);
    }
}
