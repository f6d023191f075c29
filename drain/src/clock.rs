//! The GPU timestamp counter seen from the CPU: drain programs stamp the moment a slot
//! became full in GPU ticks; the reader turns that into a latency against its own clock.

use std::time::{Duration, Instant};
use thunk::Gpu;

/// The rate the modelled counter runs at, and the usual one on gfx9+ (the 100 MHz
/// reference clock); replaced by a measurement once samples are [`RECALIBRATE`] apart.
const NOMINAL_HZ: f64 = 100e6;
/// How often the anchor is renewed, and the shortest span the rate is measured over.
const RECALIBRATE: Duration = Duration::from_millis(500);

/// An anchor pairing a GPU tick count with an `Instant`, and the tick rate measured against
/// `Instant` (the clock latencies are read with).
#[derive(Debug)]
pub(crate) struct GpuClock {
    gpu: Gpu,
    anchor: Option<(u64, Instant)>,
    first: Option<(u64, Instant)>,
    hz: f64,
}

impl GpuClock {
    pub fn new(gpu: &Gpu) -> Self {
        let mut c = GpuClock {
            gpu: gpu.clone(),
            anchor: None,
            first: None,
            hz: NOMINAL_HZ,
        };
        c.sample();
        c
    }

    fn sample(&mut self) {
        let before = Instant::now();
        let counters = self.gpu.clock_counters();
        // The GPU was sampled somewhere inside the call: take the middle.
        let at = before + before.elapsed() / 2;
        match counters {
            Ok(k) if k.gpu != 0 => {
                match self.first {
                    None => self.first = Some((k.gpu, at)),
                    Some((g0, t0)) => {
                        let dt = at.saturating_duration_since(t0);
                        if dt >= RECALIBRATE && k.gpu > g0 {
                            self.hz = (k.gpu - g0) as f64 / dt.as_secs_f64();
                        }
                    }
                }
                self.anchor = Some((k.gpu, at));
            }
            Ok(_) | Err(_) => {
                log::debug!(target: "drain", "no GPU clock; drain latencies are not measured");
            }
        }
    }

    /// How long ago GPU tick `stamp` was; `None` without a clock or for a stamp of 0.
    pub fn age(&mut self, stamp: u64) -> Option<Duration> {
        let (_, at) = self.anchor?;
        if stamp == 0 {
            return None;
        }
        if at.elapsed() >= RECALIBRATE {
            self.sample();
        }
        let (g, at) = self.anchor?;
        let now_ticks = g as f64 + at.elapsed().as_secs_f64() * self.hz;
        let ticks = (now_ticks - stamp as f64).max(0.0);
        Some(Duration::from_secs_f64(ticks / self.hz))
    }
}
