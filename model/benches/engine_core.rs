//! Where the engine thread sleeps while it watches the doorbells (issue #17 item 9, measured
//! here since issue #33: where a thread runs is the host's decision, so it is a measurement,
//! never a test). Printed, not a criterion bench; each row with the affinity policy on and off
//! (`hw::engine::affinity`, `ModelConfig::engine_affinity`), beside its target:
//!
//! * **follows the doorbell**: four doorbell stores after an idle second each, from the first
//!   two allowed cores in turn (0, 1, 0, 1); after each, the storing core is kept busy 20 ms
//!   (a client that goes on computing), then the engine's core is read 150 ms into its watched
//!   sleep. Target with the policy on: asleep on the storing core in ≥ 3 of 4 rounds.
//! * **leaves a busy core alone**: the doorbell core becomes a core another thread then keeps
//!   busy; where the engine sleeps is sampled 160 times over 800 ms from 100 ms on. Target with
//!   the policy on: on the busy core in < 40 of 160 samples.
//!
//! `KFD_BENCH_ENGINE_CORE_REPEAT` (default 3) repeats each row. Needs two allowed cores.
#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use kfd_model::hw::thread_last_core as last_core;
use kfd_model::{ModelConfig, Preset};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use pm4::user::WriteData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The thread ids of this process's threads named `name` (as `comm` shows it: 15 bytes).
fn threads_named(name: &str) -> Vec<u32> {
    let short = &name[..name.len().min(15)];
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| {
                let e = e.ok()?;
                let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
                (comm.trim_end() == short).then(|| e.file_name().to_str()?.parse().ok())?
            })
            .collect()
        })
        .unwrap_or_default()
}

fn pin_to(core: usize) {
    let mut set = CpuSet::new();
    if set.set(core).is_ok() {
        let _ = sched_setaffinity(Pid::from_raw(0), &set);
    }
}

/// The cores the bench was allowed at its start.
static ALLOWED: std::sync::OnceLock<Option<CpuSet>> = std::sync::OnceLock::new();

fn allowed() -> Option<CpuSet> {
    *ALLOWED.get_or_init(|| sched_getaffinity(Pid::from_raw(0)).ok())
}

/// Lets this thread run on every core the bench was allowed at its start.
fn unpin() {
    if let Some(all) = allowed() {
        let _ = sched_setaffinity(Pid::from_raw(0), &all);
    }
}

/// The first two cores this thread may run on, or `None` with fewer.
fn two_cores() -> Option<[usize; 2]> {
    let all = allowed()?;
    let mut cores = (0..CpuSet::count()).filter(|&c| all.is_set(c).unwrap_or(false));
    Some([cores.next()?, cores.next()?])
}

/// A gfx900 model with a watched PM4 queue and its engine thread's id.
struct Watched {
    model: kfd_model::Model,
    _c: Client,
    q: QueueBufs,
    mem: Buf,
    bell: DoorbellMapping,
    ring: RingWriter,
    engine: u32,
    round: u32,
}

impl Watched {
    fn new(affinity: bool) -> Option<Watched> {
        // The engine thread inherits its creator's CPU mask: create the model unpinned.
        unpin();
        let cfg = ModelConfig::new(Preset::Gfx900).with_engine_affinity(affinity);
        // The last row's thread may still be ending: the new one is the one not seen before.
        let before = threads_named("kfd-model-engines");
        let (model, c, q, mem, bell) = watched_pm4_queue_with(cfg);
        let new_engines = || -> Vec<u32> {
            let mut now = threads_named("kfd-model-engines");
            now.retain(|t| !before.contains(t));
            now
        };
        // A new thread names itself once it runs.
        let since = Instant::now();
        let mut engine = new_engines();
        while engine.len() != 1 && since.elapsed() < HANG {
            std::thread::yield_now();
            engine = new_engines();
        }
        let [engine] = engine[..] else {
            println!("  could not find the one engine thread: {engine:?}");
            return None;
        };
        let ring = RingWriter::pm4(&q);
        Some(Watched {
            model,
            _c: c,
            q,
            mem,
            bell,
            ring,
            engine,
            round: 0,
        })
    }

    /// After an idle second, a WRITE_DATA rung from `core` by a store into the doorbell
    /// mapping; returns once it landed.
    fn ring_after_idle_from(&mut self, core: usize) {
        pin_to(core);
        std::thread::sleep(Duration::from_millis(1100));
        wait_until("the engine sleeps watching", || {
            self.model.doorbell_watch_armed()
        });
        self.round += 1;
        self.ring.push(
            &self.q,
            &WriteData::memory(self.mem.va, &[self.round]).unwrap(),
        );
        self.bell.ring(self.q.doorbell_offset, self.ring.wptr());
        let round = self.round;
        wait_until("the packet ran", || self.mem.read_u32(0) == round);
    }
}

/// Rounds of four stores from alternating cores: how often the engine then slept on the
/// storing core.
fn follows_the_doorbell(affinity: bool, cores: [usize; 2]) -> Option<usize> {
    let mut w = Watched::new(affinity)?;
    let rounds = [cores[0], cores[1], cores[0], cores[1]];
    let mut slept_on = Vec::new();
    let mut policy_core = Vec::new();
    for &core in &rounds {
        w.ring_after_idle_from(core);
        let busy = Instant::now();
        while busy.elapsed() < Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        std::thread::sleep(Duration::from_millis(150));
        slept_on.push(last_core(w.engine));
        policy_core.push(w.model.engine_affinity().doorbell_core);
    }
    let followed = rounds
        .iter()
        .zip(&slept_on)
        .filter(|(a, b)| Some(**a) == **b)
        .count();
    println!(
        "  policy {}: stores from {rounds:?}, engine asleep on {slept_on:?}: {followed} of 4; the \
         policy took the doorbell's core for {policy_core:?} and asked for {} moves ({} slow)",
        on_off(affinity),
        w.model.engine_affinity().doorbell_moves,
        w.model.engine_affinity().slow_moves
    );
    Some(followed)
}

/// The doorbell core kept busy by another thread: in how many of 160 samples the engine was
/// found on it.
fn leaves_a_busy_core_alone(affinity: bool, [busy_core, free_core]: [usize; 2]) -> Option<usize> {
    let mut w = Watched::new(affinity)?;
    let stop = Arc::new(AtomicBool::new(false));
    w.ring_after_idle_from(busy_core);
    let hog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            pin_to(busy_core);
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    pin_to(free_core);
    std::thread::sleep(Duration::from_millis(100));
    let mut on_busy = 0;
    for _ in 0..160 {
        std::thread::sleep(Duration::from_millis(5));
        on_busy += usize::from(last_core(w.engine) == Some(busy_core));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = hog.join();
    let a = w.model.engine_affinity();
    println!(
        "  policy {}: on the busy core in {on_busy} of 160 samples; the policy asked for {} \
         moves, {} of them slow (back-off)",
        on_off(affinity),
        a.doorbell_moves,
        a.slow_moves
    );
    Some(on_busy)
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on "
    } else {
        "off"
    }
}

fn main() {
    // `cargo bench` passes `--bench`; this bench takes no arguments of its own.
    let Some(cores) = two_cores() else {
        println!("engine core: one core allowed, nothing to measure");
        return;
    };
    let repeat: usize = std::env::var("KFD_BENCH_ENGINE_CORE_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    println!("engine core: follows the doorbell (target, policy on: ≥ 3 of 4 rounds)");
    for _ in 0..repeat {
        for affinity in [true, false] {
            follows_the_doorbell(affinity, cores);
        }
    }
    println!("engine core: leaves a busy core alone (target, policy on: < 40 of 160 samples)");
    for _ in 0..repeat {
        for affinity in [true, false] {
            leaves_a_busy_core_alone(affinity, cores);
        }
    }
}
