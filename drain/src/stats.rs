//! Counters and drain-latency percentiles.

use std::time::Duration;

/// Sub-buckets per power of two (3 bits: values are kept to within 1/8).
const SUB_BITS: u32 = 3;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB as usize;

/// A log-linear histogram of nanosecond values: constant size, no allocation per sample,
/// percentiles to within 12.5 %.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
    min: u64,
    max: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: Box::new([0; BUCKETS]),
            total: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let sub = (v >> (e - SUB_BITS)) & (SUB - 1);
    ((e - SUB_BITS + 1) as u64 * SUB + sub) as usize
}

fn bucket_low(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let e = i / SUB + u64::from(SUB_BITS) - 1;
    (SUB + i % SUB) << (e - u64::from(SUB_BITS))
}

impl LatencyHistogram {
    /// Adds one sample.
    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if let Some(c) = self.counts.get_mut(bucket(ns)) {
            *c += 1;
        }
        self.total += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value below which `q` (0..=1) of the samples lie (the lower edge of its bucket,
    /// clamped to the exact minimum and maximum).
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let v = bucket_low(i).clamp(self.min, self.max);
                return Some(Duration::from_nanos(v));
            }
        }
        Some(Duration::from_nanos(self.max))
    }

    /// The summary: count, p50, p90, p99, max.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.total,
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
            max: (self.total > 0).then(|| Duration::from_nanos(self.max)),
        }
    }
}

/// Percentiles of the drain latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: Option<Duration>,
    /// 90th percentile.
    pub p90: Option<Duration>,
    /// 99th percentile.
    pub p99: Option<Duration>,
    /// Largest sample.
    pub max: Option<Duration>,
}

impl std::fmt::Display for LatencySummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e6);
        write!(
            f,
            "p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, max {:.1} µs ({} slots)",
            us(self.p50),
            us(self.p90),
            us(self.p99),
            us(self.max),
            self.count
        )
    }
}

/// A channel's counters ([`crate::Channel::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records producers committed (buffer header).
    pub records_produced: u64,
    /// Record bytes producers committed, headers and padding included (buffer header).
    pub bytes_produced: u64,
    /// Records drop-mode producers dropped (buffer header).
    pub records_dropped: u64,
    /// Record bytes dropped, headers and padding included (buffer header).
    pub bytes_dropped: u64,
    /// Record bytes that reached host memory.
    pub bytes_drained: u64,
    /// Slots that reached host memory.
    pub slots_drained: u64,
    /// Record bytes handed to the reader (read, chunks released, records taken).
    pub bytes_consumed: u64,
    /// Slot generations reserved by producers but not drained yet (being filled, full and
    /// waiting for the engine, or copied and not yet published).
    pub slots_in_flight: u64,
    /// Drained slots waiting for the reader.
    pub host_slots_ready: u64,
    /// Slots the channel closed early (periodic, kernel-end and explicit flushes).
    pub flushes: u64,
    /// Kernel-end watches that completed.
    pub kernel_ends: u64,
    /// Time from the drain engine taking a slot (its wait on the full slot ended — at once
    /// when the slot filled, if its program was already queued) to the reader seeing it
    /// drained: copy, fence, interrupt and wake-up. The GPU timestamp is related to the CPU
    /// clock through `GET_CLOCK_COUNTERS`, so values are good to the few microseconds that
    /// call takes.
    pub drain_latency: LatencySummary,
    /// Host producers of a lossless channel waiting for a free slot right now: nobody is
    /// reading fast enough (back-pressure).
    pub producers_waiting: u64,
    /// Records whose lossless producer found its slot not drained yet and waited (device
    /// producers count this in the buffer header; host producers do not).
    pub producer_stalls: u64,
    /// Slot-full interrupts device producers sent (`s_sendmsg`; with
    /// [`crate::ChannelConfig::notify_full`]).
    pub slots_notified: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            7,
            8,
            9,
            15,
            16,
            17,
            31,
            32,
            1000,
            1 << 40,
            u64::MAX,
        ] {
            let i = bucket(v);
            assert!(i < BUCKETS, "{v}");
            assert!(i >= last);
            last = i;
            let lo = bucket_low(i);
            assert!(lo <= v, "{v}: bucket low {lo}");
            assert!(v - lo <= v / 8 + 1, "{v}: bucket low {lo} is too far");
        }
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = LatencyHistogram::default();
        assert_eq!(h.quantile(0.5), None);
        for us in 1..=100u64 {
            h.record(Duration::from_micros(us));
        }
        let s = h.summary();
        assert_eq!(s.count, 100);
        let p50 = s.p50.unwrap().as_nanos() as f64;
        assert!((50_000.0 * 0.875..=50_000.0).contains(&p50), "{p50}");
        let p99 = s.p99.unwrap().as_nanos() as f64;
        assert!((99_000.0 * 0.875..=99_000.0).contains(&p99), "{p99}");
        assert_eq!(s.max, Some(Duration::from_micros(100)));
        assert_eq!(h.quantile(0.0), Some(Duration::from_micros(1)));
    }
}
