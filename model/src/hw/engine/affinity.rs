//! Where the engine thread runs: the model's CPU-affinity policy, on its own so that its
//! effect can be measured with it on and off (`ModelConfig::engine_affinity`,
//! `KFD_MODEL_ENGINE_AFFINITY=0`) and its decisions tested without a scheduler.
//!
//! Two decisions, both taken on the engine thread:
//! - **At start, away from its creator's core.** A new thread tends to start on its
//!   creator's core, and a client that then waits for the engine by spinning shares that core
//!   with the engine's own spinning: each round trip took the engine's whole hot spin (21.5 µs
//!   instead of 0.5 µs) until the scheduler moved one of them, which for a short program
//!   (issue #22's 100-round runs: 79 of 108 processes) was never.
//! - **Before a watched sleep, back to the doorbell's core** ([`DoorbellCore`]): the core of
//!   the thread whose store last woke it (`userfaultfd` names the faulting thread; its core is
//!   read from `/proc` as the engine is about to sleep, off the doorbell path; where the
//!   kernel does not name it, the core the wake-up ran on). A client rings from the same
//!   thread, which mostly keeps its core, and on a small host the next store's fault wakes the
//!   engine on that core; a thread asleep on another one is migrated there and runs its pass
//!   with the other core's caches. (On an idle many-core host the scheduler wakes it on an
//!   idle core instead: the core the wake-up ran on is not the storer's.) On a
//!   2-vCPU guest, of 40 stores after an idle second, the 26 that found the engine thread
//!   asleep on their own core saw doorbell to packets executed in 26 µs at p50 (22–44 µs and
//!   one 140), the 14 that found it on the other core in 57 µs (36–60 µs, and 164 and 215).
//!   The thread drifts off that core while it polls after the store (the load balancer moves
//!   it off a core the client keeps busy) and when a timeout wakes it while that core is busy.
//!   Moving onto a core that another thread keeps busy waits for that thread's time slice
//!   (3.9 ms measured), and a doorbell rung from elsewhere meanwhile waits as long: so a slow
//!   move backs off, until the next doorbell store wakes the thread (its core was free then:
//!   the storing thread blocked in the fault).
//!
//! The policy ([`DoorbellCore`]) is a pure state machine: it is told the cores and times and
//! says where to go. [`EngineAffinity`] is the thin layer that asks the host where the thread
//! runs and moves it, and counts what it decided (`Model::engine_affinity`); `model/benches`
//! measure what the moves buy (`dispatch`'s doorbell-after-idle rows, `engine_core`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The environment variable that turns the policy off (`0`, `off`, `false`, `no`).
pub const ENGINE_AFFINITY_ENV: &str = "KFD_MODEL_ENGINE_AFFINITY";

/// The default of `ModelConfig::engine_affinity`: on, unless [`ENGINE_AFFINITY_ENV`] says
/// otherwise.
pub fn default_engine_affinity() -> bool {
    engine_affinity_from(std::env::var(ENGINE_AFFINITY_ENV).ok().as_deref())
}

/// The policy's switch as [`ENGINE_AFFINITY_ENV`] sets it: off for `0`, `off`, `false` or
/// `no` (any case, spaces around ignored), on otherwise and when unset.
fn engine_affinity_from(value: Option<&str>) -> bool {
    value.is_none_or(|v| {
        !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        )
    })
}

/// The doorbell-core policy: where the engine thread should be before it sleeps watching the
/// doorbells.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DoorbellCore {
    /// The core a doorbell store last woke the thread on.
    core: Option<usize>,
    /// No move before this: the last one had to wait for a busy core.
    not_before: Option<Instant>,
    backoff: Duration,
}

impl DoorbellCore {
    /// A move that took longer waited for the core's current thread: that core is busy.
    pub const SLOW_MOVE: Duration = Duration::from_millis(1);
    /// The first pause after a slow move.
    pub const MIN_BACKOFF: Duration = Duration::from_secs(1);
    /// The longest pause between moves onto a core that keeps being busy.
    pub const MAX_BACKOFF: Duration = Duration::from_secs(16);

    /// A doorbell store's fault woke the thread on `core` (where the host says it runs now;
    /// `None` when it cannot tell). The scheduler runs it on the storing core (that thread is
    /// about to block in the fault), which was free then: any back-off ends.
    pub fn woken_by_doorbell(&mut self, core: Option<usize>) {
        if core.is_some() {
            self.core = core;
        }
        self.backoff = Duration::ZERO;
        self.not_before = None;
    }

    /// The store that last woke the thread came from `core` (read after the wake-up): the
    /// doorbell's core, in place of the one the wake-up ran on.
    pub fn stored_from(&mut self, core: usize) {
        self.core = Some(core);
    }

    /// Before a watched sleep, on core `now_core` at `now`: the core to move to, or `None` to
    /// stay — no doorbell core known yet, already there (or the host cannot tell), or a move
    /// since the last doorbell found that core busy and the back-off has not run out.
    pub fn before_sleep(&self, now_core: Option<usize>, now: Instant) -> Option<usize> {
        let core = self.core?;
        if now_core.is_none_or(|c| c == core) || self.not_before.is_some_and(|t| now < t) {
            return None;
        }
        Some(core)
    }

    /// The move [`DoorbellCore::before_sleep`] asked for took `took`, ending at `now`. A slow
    /// one waited for a busy core: leave it alone for 1 s, doubling up to 16 s while it stays
    /// busy. A quick one ends any back-off.
    pub fn moved(&mut self, took: Duration, now: Instant) {
        if took > Self::SLOW_MOVE {
            self.backoff = (self.backoff * 2).clamp(Self::MIN_BACKOFF, Self::MAX_BACKOFF);
            self.not_before = Some(now + self.backoff);
        } else {
            self.backoff = Duration::ZERO;
            self.not_before = None;
        }
    }

    /// The core a doorbell store last woke the thread on.
    pub fn core(&self) -> Option<usize> {
        self.core
    }

    /// The current back-off (zero when moves are allowed).
    #[cfg(test)]
    pub fn backoff(&self) -> Duration {
        self.backoff
    }
}

/// What the policy decided so far (counts since the model started): the model's own decisions,
/// which tests may check, unlike where the host then ran the thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AffinityStats {
    /// Whether the policy is on.
    pub enabled: bool,
    /// Moves off the creator's core at start (0 or 1).
    pub start_moves: u64,
    /// Doorbell wake-ups that told the policy a core.
    pub doorbell_cores: u64,
    /// Moves back to the doorbell's core before a watched sleep.
    pub doorbell_moves: u64,
    /// Of those, moves that had to wait for a busy core and started a back-off.
    pub slow_moves: u64,
    /// The core the policy takes for the doorbell's now, if any.
    pub doorbell_core: Option<usize>,
}

/// The counters behind [`AffinityStats`], shared between the engine thread and the model.
#[derive(Debug)]
pub struct AffinityCounters {
    enabled: std::sync::atomic::AtomicBool,
    start_moves: AtomicU64,
    doorbell_cores: AtomicU64,
    doorbell_moves: AtomicU64,
    slow_moves: AtomicU64,
    /// [`AffinityStats::doorbell_core`], `usize::MAX` for none.
    doorbell_core: AtomicUsize,
}

impl Default for AffinityCounters {
    fn default() -> Self {
        AffinityCounters {
            enabled: Default::default(),
            start_moves: Default::default(),
            doorbell_cores: Default::default(),
            doorbell_moves: Default::default(),
            slow_moves: Default::default(),
            doorbell_core: AtomicUsize::new(usize::MAX),
        }
    }
}

impl AffinityCounters {
    /// A snapshot.
    pub fn stats(&self) -> AffinityStats {
        AffinityStats {
            enabled: self.enabled.load(Ordering::Relaxed),
            start_moves: self.start_moves.load(Ordering::Relaxed),
            doorbell_cores: self.doorbell_cores.load(Ordering::Relaxed),
            doorbell_moves: self.doorbell_moves.load(Ordering::Relaxed),
            slow_moves: self.slow_moves.load(Ordering::Relaxed),
            doorbell_core: Some(self.doorbell_core.load(Ordering::Relaxed))
                .filter(|&c| c != usize::MAX),
        }
    }
}

/// The policy applied to the calling (engine) thread: asks the host where it runs, moves it.
/// Disabled, every method does nothing.
#[derive(Debug)]
pub struct EngineAffinity {
    enabled: bool,
    doorbell: DoorbellCore,
    /// The thread whose store woke the engine last, until its core is read.
    storer: Option<u32>,
    counters: Arc<AffinityCounters>,
}

impl EngineAffinity {
    /// The policy, on or off, counting into `counters`.
    pub fn new(enabled: bool, counters: Arc<AffinityCounters>) -> Self {
        counters.enabled.store(enabled, Ordering::Relaxed);
        EngineAffinity {
            enabled,
            doorbell: DoorbellCore::default(),
            storer: None,
            counters,
        }
    }

    /// At the thread's start: off the core of the thread that made the model (`creator`, as
    /// `sched_getcpu` told it there).
    pub fn at_start(&mut self, creator: Option<usize>) {
        if let (true, Some(cpu)) = (self.enabled, creator) {
            if hop_to(|c| c != cpu) {
                self.counters.start_moves.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A doorbell store's fault woke the thread; `storer` is the storing thread when the
    /// kernel named it. Its core is the doorbell's core: read before the next watched sleep,
    /// not here, on the doorbell path. Until then the core this wake-up runs on stands in.
    pub fn woken_by_doorbell(&mut self, storer: Option<u32>) {
        if !self.enabled {
            return;
        }
        self.storer = storer;
        let core = current_core();
        if storer.is_none() && core.is_some() {
            self.counters.doorbell_cores.fetch_add(1, Ordering::Relaxed);
        }
        self.doorbell.woken_by_doorbell(core);
    }

    /// Before a watched sleep: back to the doorbell's core, as [`DoorbellCore`] decides.
    pub fn before_watched_sleep(&mut self) {
        if !self.enabled {
            return;
        }
        if let Some(core) = self.storer.take().and_then(thread_last_core) {
            self.counters.doorbell_cores.fetch_add(1, Ordering::Relaxed);
            self.doorbell.stored_from(core);
        }
        if let Some(core) = self.doorbell.core() {
            self.counters.doorbell_core.store(core, Ordering::Relaxed);
        }
        let Some(core) = self.doorbell.before_sleep(current_core(), Instant::now()) else {
            return;
        };
        let started = Instant::now();
        if !hop_to(|c| c == core) {
            // Not a core this thread may run on (it inherits its creator's mask): stay.
            return;
        }
        let took = started.elapsed();
        self.counters.doorbell_moves.fetch_add(1, Ordering::Relaxed);
        if took > DoorbellCore::SLOW_MOVE {
            self.counters.slow_moves.fetch_add(1, Ordering::Relaxed);
        }
        self.doorbell.moved(took, Instant::now());
    }
}

/// The core the calling thread runs on, if the host says.
pub fn current_core() -> Option<usize> {
    nix::sched::sched_getcpu().ok()
}

/// The core thread `tid` of this process last ran on (`processor`, field 39 of its
/// `/proc/self/task/<tid>/stat`), if the host says.
pub fn thread_last_core(tid: u32) -> Option<usize> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    last_core_in_stat(&stat)
}

/// Field 39 of a `stat` line. The command name (field 2) is in parentheses and may hold
/// spaces and parentheses: fields are counted after its last `)`.
fn last_core_in_stat(stat: &str) -> Option<usize> {
    let after_comm = stat.get(stat.rfind(')')? + 2..)?;
    after_comm.split(' ').nth(39 - 3)?.parse().ok()
}

/// Moves the calling thread onto the allowed cores that `to` accepts, then allows it every
/// core it was allowed before: it stays where it landed until the scheduler moves it. Does
/// nothing unless some but not all allowed cores are accepted; `true` when it moved.
fn hop_to(to: impl Fn(usize) -> bool) -> bool {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let Ok(all) = sched_getaffinity(Pid::from_raw(0)) else {
        return false;
    };
    let mut there = CpuSet::new();
    let (mut allowed, mut accepted) = (0, 0);
    for c in (0..CpuSet::count()).filter(|&c| all.is_set(c).unwrap_or(false)) {
        allowed += 1;
        if to(c) && there.set(c).is_ok() {
            accepted += 1;
        }
    }
    if accepted == 0 || accepted == allowed {
        return false;
    }
    if sched_setaffinity(Pid::from_raw(0), &there).is_err() {
        return false;
    }
    // Moved now; from here on the scheduler places the thread as it likes.
    let _ = sched_setaffinity(Pid::from_raw(0), &all);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn no_move_before_a_doorbell_has_named_a_core() {
        let p = DoorbellCore::default();
        assert_eq!(p.before_sleep(Some(1), Instant::now()), None);
    }

    #[test]
    fn the_thread_goes_back_to_the_core_the_last_doorbell_woke_it_on() {
        let t0 = Instant::now();
        let mut p = DoorbellCore::default();
        p.woken_by_doorbell(Some(0));
        assert_eq!(p.before_sleep(Some(0), t0), None, "already there");
        assert_eq!(p.before_sleep(Some(1), t0), Some(0), "drifted: back");
        assert_eq!(p.before_sleep(None, t0), None, "the host cannot tell: stay");
        // The next doorbell woke it on core 1: that is the core now.
        p.woken_by_doorbell(Some(1));
        assert_eq!(p.before_sleep(Some(0), t0), Some(1));
        // A wake-up whose core is unknown keeps the last one known.
        p.woken_by_doorbell(None);
        assert_eq!(p.core(), Some(1));
    }

    #[test]
    fn the_storing_threads_core_replaces_the_core_the_wake_up_ran_on() {
        let t0 = Instant::now();
        let mut p = DoorbellCore::default();
        // Woken on an idle core 8 by a store from core 3.
        p.woken_by_doorbell(Some(8));
        p.stored_from(3);
        assert_eq!(p.core(), Some(3));
        assert_eq!(p.before_sleep(Some(8), t0), Some(3));
        assert_eq!(p.before_sleep(Some(3), t0), None);
    }

    #[test]
    fn the_core_is_field_39_of_stat_counted_after_the_command_name() {
        let fields_after_comm: Vec<String> = (3..=52).map(|f| f.to_string()).collect();
        let line = format!("4242 (a (tricky) name) {}", fields_after_comm.join(" "));
        assert_eq!(last_core_in_stat(&line), Some(39));
        assert_eq!(last_core_in_stat("4242 (cut short) S 1 2"), None);
        assert_eq!(last_core_in_stat("no parentheses"), None);
        assert_eq!(last_core_in_stat(")"), None);
        // This thread's own line parses.
        assert!(thread_last_core(nix::unistd::gettid().as_raw() as u32).is_some());
    }

    #[test]
    fn a_slow_move_backs_off_doubling_up_to_sixteen_seconds() {
        let t0 = Instant::now();
        let mut p = DoorbellCore::default();
        p.woken_by_doorbell(Some(0));
        let slow = DoorbellCore::SLOW_MOVE + Duration::from_micros(1);
        let mut now = t0;
        let mut pauses = Vec::new();
        for _ in 0..7 {
            assert_eq!(p.before_sleep(Some(1), now), Some(0), "allowed at {now:?}");
            p.moved(slow, now);
            pauses.push(p.backoff().as_secs());
            // Just before the back-off runs out: stay; at its end: move again.
            let until = now + p.backoff();
            assert_eq!(
                p.before_sleep(Some(1), until - Duration::from_millis(1)),
                None
            );
            now = until;
        }
        assert_eq!(pauses, [1, 2, 4, 8, 16, 16, 16]);
    }

    #[test]
    fn a_quick_move_or_a_doorbell_ends_the_back_off() {
        let t0 = Instant::now();
        let slow = DoorbellCore::SLOW_MOVE * 2;
        let mut p = DoorbellCore::default();
        p.woken_by_doorbell(Some(0));
        p.moved(slow, t0);
        p.moved(slow, at(t0, 1000));
        assert_eq!(p.backoff(), Duration::from_secs(2));
        // A doorbell store woke it on its core, which was free then.
        p.woken_by_doorbell(Some(0));
        assert_eq!(p.backoff(), Duration::ZERO);
        assert_eq!(p.before_sleep(Some(1), at(t0, 1001)), Some(0));
        // A quick move ends a back-off as well.
        p.moved(slow, at(t0, 1001));
        assert_eq!(p.before_sleep(Some(1), at(t0, 1002)), None);
        p.moved(Duration::from_micros(10), at(t0, 1002));
        assert_eq!(p.backoff(), Duration::ZERO);
        assert_eq!(p.before_sleep(Some(1), at(t0, 1003)), Some(0));
    }

    #[test]
    fn the_switch_reads_common_spellings_of_off() {
        // Only the parser: the environment is the process's and tests run in parallel.
        for off in ["0", "off", "OFF", "false", " no "] {
            assert!(!engine_affinity_from(Some(off)), "{off:?} turns it off");
        }
        for on in ["1", "on", "yes", ""] {
            assert!(engine_affinity_from(Some(on)), "{on:?} leaves it on");
        }
        assert!(engine_affinity_from(None), "on by default");
    }

    #[test]
    fn disabled_the_policy_moves_nothing_and_counts_nothing() {
        let counters = Arc::new(AffinityCounters::default());
        let mut a = EngineAffinity::new(false, counters.clone());
        a.at_start(current_core());
        a.woken_by_doorbell(Some(nix::unistd::gettid().as_raw() as u32));
        a.before_watched_sleep();
        assert_eq!(
            counters.stats(),
            AffinityStats {
                enabled: false,
                ..Default::default()
            }
        );
    }
}
