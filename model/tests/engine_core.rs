//! Where the engine thread sleeps while it watches the doorbells (issue #17 item 9): on the
//! core of the last doorbell store that woke it. That store's thread rings again from the
//! same core, and its fault then wakes the engine where it sleeps, with no migration; but not
//! on a core that stays busy. The tests find the engine thread by name among the process's
//! threads, so they take turns and each waits until its model's thread is the only one.

mod common;

use common::*;
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use pm4::user::WriteData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One model (and so one engine thread) at a time in this process.
static ONE_MODEL: Mutex<()> = Mutex::new(());

/// The thread ids of this process's threads named `name` (as `comm` shows it: 15 bytes).
fn threads_named(name: &str) -> Vec<u32> {
    let short = &name[..name.len().min(15)];
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            (comm.trim_end() == short).then(|| e.file_name().to_str()?.parse().ok())?
        })
        .collect()
}

/// The core thread `tid` last ran on (field 39 of its `stat`).
fn last_core(tid: u32) -> usize {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    after_comm
        .split(' ')
        .nth(39 - 3)
        .and_then(|f| f.parse().ok())
        .unwrap()
}

fn pin_to(core: usize) {
    let mut set = CpuSet::new();
    set.set(core).unwrap();
    sched_setaffinity(Pid::from_raw(0), &set).unwrap();
}

/// The first two cores this thread may run on, or `None` with fewer.
fn two_cores() -> Option<[usize; 2]> {
    let all = sched_getaffinity(Pid::from_raw(0)).unwrap();
    let mut cores = (0..CpuSet::count()).filter(|&c| all.is_set(c).unwrap_or(false));
    Some([cores.next()?, cores.next()?])
}

/// A gfx900 model with a PM4 queue, 4 KiB of GTT, the client's own doorbell mapping watched,
/// and the model's engine thread (once it is the only one in the process).
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
    fn new() -> Watched {
        let (model, c, q, mem, bell) = watched_pm4_queue();
        // A new thread names itself once it runs; an earlier test's thread ends soon after
        // its model.
        let since = Instant::now();
        let mut engine = threads_named("kfd-model-engines");
        while engine.len() != 1 && since.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
            engine = threads_named("kfd-model-engines");
        }
        assert_eq!(engine.len(), 1, "one model, one engine thread: {engine:?}");
        let ring = RingWriter::pm4(&q);
        Watched {
            model,
            _c: c,
            q,
            mem,
            bell,
            ring,
            engine: engine[0],
            round: 0,
        }
    }

    /// After an idle second (past DEEP_IDLE_AFTER: the doorbells are watched and the engine
    /// sleeps), a WRITE_DATA rung from `core` by a store into the doorbell mapping; returns
    /// once it landed.
    fn ring_after_idle_from(&mut self, core: usize) {
        pin_to(core);
        std::thread::sleep(Duration::from_millis(1100));
        self.round += 1;
        let wakeups = self.model.doorbell_wakeups();
        self.ring.push(
            &self.q,
            &WriteData::memory(self.mem.va, &[self.round]).unwrap(),
        );
        self.bell.ring(self.q.doorbell_offset, self.ring.wptr());
        let t = Instant::now();
        while self.mem.read_u32(0) != self.round {
            assert!(t.elapsed() < Duration::from_secs(5), "the packet ran");
            std::hint::spin_loop();
        }
        assert_eq!(
            self.model.doorbell_wakeups(),
            wakeups + 1,
            "the store woke the engine"
        );
    }
}

#[test]
fn the_watching_engine_sleeps_on_the_core_of_the_doorbell_store_that_last_woke_it() {
    let _one = ONE_MODEL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cores) = two_cores() else {
        eprintln!("one core allowed: nothing to choose between; skipped");
        return;
    };
    let mut w = Watched::new();
    // Each core twice in turn, so that the engine has to follow the store to the other core.
    let rounds = [cores[0], cores[1], cores[0], cores[1]];
    let mut slept_on = Vec::new();
    for &core in &rounds {
        w.ring_after_idle_from(core);
        // Keep this core busy past the engine's hot period (WARM_YIELD), as a client that
        // goes on computing does: the load balancer then moves the polling engine thread
        // to the idle core, and only going back before it sleeps brings it here again.
        let busy = Instant::now();
        while busy.elapsed() < Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        // Asleep, watched, and through a few of its 16 ms timeouts.
        std::thread::sleep(Duration::from_millis(150));
        slept_on.push(last_core(w.engine));
    }
    // The scheduler wakes the engine on the storing core only when nothing else runs there;
    // one round may meet another process. Without the return, the engine ended rounds 2 and
    // 4 on the first core: 2 of 4.
    let followed = rounds.iter().zip(&slept_on).filter(|(a, b)| a == b).count();
    assert!(
        followed >= 3,
        "the engine thread sleeps on the core of the store that woke it: stores from {rounds:?}, \
         engine asleep on {slept_on:?}"
    );
}

#[test]
fn the_watching_engine_leaves_its_doorbell_core_alone_while_another_thread_keeps_it_busy() {
    let _one = ONE_MODEL.lock().unwrap_or_else(|e| e.into_inner());
    let Some([busy_core, free_core]) = two_cores() else {
        eprintln!("one core allowed: nothing to choose between; skipped");
        return;
    };
    let mut w = Watched::new();
    // The doorbell core becomes `busy_core`, and a thread of this process keeps it busy
    // from then on; this one waits on the other core.
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
    // The engine's timeouts (every 16 ms) wake it on the free core. Sample where it sleeps
    // for 800 ms, from 100 ms on (its first move back may have to wait for the busy core).
    std::thread::sleep(Duration::from_millis(100));
    let mut on_busy = 0;
    for _ in 0..160 {
        std::thread::sleep(Duration::from_millis(5));
        on_busy += usize::from(last_core(w.engine) == busy_core);
    }
    stop.store(true, Ordering::Relaxed);
    hog.join().unwrap();
    // Moving back before every sleep, the engine was found on the busy core in most samples.
    assert!(
        on_busy < 40,
        "the engine thread keeps moving onto a core another thread keeps busy: found there in \
         {on_busy} of 160 samples"
    );
}
