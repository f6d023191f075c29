//! The GPU timestamp counter seen from the CPU: drain programs stamp the moment a slot
//! became full in GPU ticks; the reader turns that into a latency against its own clock.

use std::time::{Duration, Instant};
use thunk::Gpu;

/// The rate the modelled counter runs at, and the usual one on gfx9+ (the 100 MHz
/// reference clock); corrected by measurement after [`RECALIBRATE`].
const NOMINAL_HZ: f64 = 100e6;
/// How far apart two samples must be to estimate the counter's rate.
const RECALIBRATE: Duration = Duration::from_millis(500);

/// An anchor pairing a GPU tick count with an `Instant`, and the tick rate.
#[derive(Debug)]
pub(crate) struct GpuClock {
    gpu: Gpu,
    anchor: Option<(u64, u64, Instant)>,
    first: Option<(u64, u64)>,
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
        let now = before + before.elapsed() / 2;
        match counters {
            Ok(k) if k.gpu != 0 => {
                match self.first {
                    None => self.first = Some((k.gpu, k.cpu)),
                    Some((g0, c0)) if k.cpu > c0 => {
                        let dt = (k.cpu - c0) as f64 * 1e-9;
                        if dt >= RECALIBRATE.as_secs_f64() && k.gpu > g0 {
                            self.hz = (k.gpu - g0) as f64 / dt;
                        }
                    }
                    Some(_) => {}
                }
                self.anchor = Some((k.gpu, k.cpu, now));
            }
            Ok(_) | Err(_) => {
                log::debug!(target: "drain", "no GPU clock; drain latencies are not measured");
            }
        }
    }

    /// How long ago GPU tick `stamp` was; `None` without a clock or for a stamp of 0.
    pub fn age(&mut self, stamp: u64) -> Option<Duration> {
        let (g, _, at) = self.anchor?;
        if stamp == 0 {
            return None;
        }
        if at.elapsed() >= RECALIBRATE {
            self.sample();
        }
        let (g_anchor, _, at) = self.anchor.unwrap_or((g, 0, at));
        let now_ticks = g_anchor as f64 + at.elapsed().as_secs_f64() * self.hz;
        let ticks = (now_ticks - stamp as f64).max(0.0);
        Some(Duration::from_secs_f64(ticks / self.hz))
    }
}
