//! What the queue engines share — the environment a queue runs in, queue errors, ring
//! fetches — and the background thread that plays the GPU: it notices doorbell writes and
//! steps the engines.
//!
//! The thread polls adaptively: after work it keeps looking (spinning [`HOT_SPIN`], then
//! yielding the CPU between passes until [`WARM_YIELD`]) because a client that just submitted
//! usually submits again; then it sleeps, doubling the sleep up to [`MAX_IDLE_SLEEP`] and, after
//! [`DEEP_IDLE_AFTER`] without work, up to [`DEEP_IDLE_SLEEP`], so an idle model costs next to
//! nothing. [`EngineWaker::wake`] (and [`EngineWaker::doorbell_rung`], what
//! `Model::doorbell_rung` calls) ends a sleep at once; so does a store into a client's doorbell mapping registered with
//! [`DoorbellWatch`] (write-protected while the thread sleeps). Where the thread runs is
//! [`affinity`]'s decision.

pub mod affinity;

use crate::hw::clock::GpuClock;
use crate::hw::doorbell_watch::DoorbellWatch;
use crate::hw::hws::HqdSlot;
use crate::hw::ih::{IhEntry, IhRing};
use crate::hw::vm::{GpuVm, VmFault};
use affinity::{AffinityCounters, AffinityStats, EngineAffinity};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Packets one queue may execute in one pass before the engines move to the next queue.
pub const PASS_BUDGET: usize = 256;
/// How long the thread keeps spinning after the last work it saw (short: a waiter sharing its
/// core must get the CPU).
pub const HOT_SPIN: Duration = Duration::from_micros(20);
/// How long it keeps polling, yielding the CPU between passes, before it starts to sleep.
pub const WARM_YIELD: Duration = Duration::from_millis(2);
/// The longest idle sleep in the first second without work (also how often a parked wait is
/// polled when nothing else runs).
pub const MAX_IDLE_SLEEP: Duration = Duration::from_millis(4);
/// After a second without work: the longest sleep, and so the longest a plain doorbell store
/// waits to be noticed (`Model::doorbell_rung`, which the thunk calls, wakes the thread at once).
pub const DEEP_IDLE_SLEEP: Duration = Duration::from_millis(16);
/// How long without work counts as deep idle.
pub const DEEP_IDLE_AFTER: Duration = Duration::from_secs(1);
/// The sleep when no queue is mapped at all; mapping a runlist wakes the thread.
pub const NOTHING_MAPPED_SLEEP: Duration = Duration::from_millis(50);
/// How often the scheduler firmware rotates an oversubscribed runlist.
pub const TIME_SLICE: Duration = Duration::from_millis(10);
/// The engine thread's timer slack: its timed sleeps end within this of when they say
/// (Linux's default, 50 µs, more than doubles the first polling sleep).
pub const ENGINE_TIMER_SLACK_NS: u64 = 1_000;

/// A queue as the engines see it, for interrupts and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueIdentity {
    /// The HQD or SDMA slot.
    pub slot: HqdSlot,
    /// Owning process.
    pub pasid: u16,
    /// Its VMID.
    pub vmid: u8,
    /// Doorbell dword index in the BAR.
    pub doorbell_offset: u32,
}

/// Why a queue stopped. A VM fault stops the queue until it is mapped again (the faulting
/// packet is retried then); the other errors stop it for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueError {
    /// An access outside the process's GPU mappings.
    VmFault(VmFault),
    /// A packet that does not decode.
    BadPacket {
        /// GPU address of the packet.
        addr: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A packet the model does not execute (shader dispatch, GDS, perf counters, …).
    NotModelled {
        /// GPU address of the packet.
        addr: u64,
        /// What was asked for.
        what: String,
    },
    /// The write pointer is behind the read pointer or more than one ring ahead of it.
    WritePointer {
        /// The write pointer read from memory or the doorbell.
        wptr: u64,
        /// The read pointer.
        rptr: u64,
        /// Ring size in the pointer's unit.
        ring: u64,
        /// The unit ("dwords", "bytes", "packets").
        unit: &'static str,
    },
}

impl QueueError {
    /// The error code carried in the queue-error interrupt (model convention).
    pub fn code(&self) -> u32 {
        match self {
            QueueError::VmFault(_) => 1,
            QueueError::BadPacket { .. } => 2,
            QueueError::NotModelled { .. } => 3,
            QueueError::WritePointer { .. } => 4,
        }
    }
}

impl std::fmt::Display for QueueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueError::VmFault(v) => write!(f, "{v}"),
            QueueError::BadPacket { addr, reason } => {
                write!(f, "malformed packet at {addr:#x}: {reason}")
            }
            QueueError::NotModelled { addr, what } => {
                write!(f, "{what} (packet at {addr:#x}) is not modelled")
            }
            QueueError::WritePointer {
                wptr,
                rptr,
                ring,
                unit,
            } => write!(
                f,
                "write pointer {wptr:#x} is not within one ring ({ring} {unit}) ahead of the read pointer {rptr:#x}; \
                 write pointers are monotonic counters"
            ),
        }
    }
}

impl std::error::Error for QueueError {}

impl From<VmFault> for QueueError {
    fn from(f: VmFault) -> Self {
        QueueError::VmFault(f)
    }
}

/// How a queue's pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunState {
    /// Nothing (more) to do: read pointer = write pointer, or the next packet is incomplete.
    #[default]
    Idle,
    /// Waiting on memory (WAIT_REG_MEM, POLL_REGMEM, an AQL barrier).
    Parked,
    /// Out of budget with work left.
    Busy,
    /// A packet still running (work that outlives one time slice, like a wave) gave the
    /// engine back; it resumes where it was on the next pass. Neither parked nor idle.
    Yielded,
    /// Stopped by an error.
    Halted,
}

/// What a pass over one queue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueRun {
    /// Packets completed.
    pub packets: usize,
    /// Where it stopped.
    pub state: RunState,
}

/// What a pass over all the engines of a GPU (or all GPUs) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineActivity {
    /// Packets completed.
    pub packets: usize,
    /// Queues out of budget (more work is ready).
    pub busy: usize,
    /// Queues whose running packet yielded (it continues on the next pass).
    pub yielded: usize,
    /// Queues waiting on memory.
    pub parked: usize,
    /// Queues stopped by an error.
    pub halted: usize,
    /// Interrupts delivered to the driver.
    pub interrupts: usize,
    /// Mapped queues the pass looked at.
    pub queues: usize,
    /// Queues held back by an injected slow engine.
    pub throttled: usize,
    /// GPUs with interrupts held back by an injected delay.
    pub delayed_interrupts: usize,
}

impl EngineActivity {
    /// Whether the pass changed anything.
    pub fn progressed(&self) -> bool {
        self.packets > 0 || self.busy > 0 || self.yielded > 0 || self.interrupts > 0
    }

    /// Whether work is waiting on time rather than on memory (a slow engine, delayed
    /// interrupts): another pass a little later will make progress.
    pub fn pending_in_time(&self) -> bool {
        self.throttled > 0 || self.delayed_interrupts > 0
    }

    /// Adds a queue's pass.
    pub fn add_queue(&mut self, r: QueueRun) {
        self.queues += 1;
        self.packets += r.packets;
        match r.state {
            RunState::Busy => self.busy += 1,
            RunState::Yielded => self.yielded += 1,
            RunState::Parked => self.parked += 1,
            RunState::Halted => self.halted += 1,
            RunState::Idle => {}
        }
    }

    /// Sums two passes.
    pub fn merge(&mut self, o: EngineActivity) {
        self.packets += o.packets;
        self.busy += o.busy;
        self.yielded += o.yielded;
        self.parked += o.parked;
        self.halted += o.halted;
        self.interrupts += o.interrupts;
        self.queues += o.queues;
        self.throttled += o.throttled;
        self.delayed_interrupts += o.delayed_interrupts;
    }
}

/// An indirect buffer being executed: where it is, how long, how far the engine got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbFrame {
    /// GPU address of the first dword.
    pub addr: u64,
    /// Size in dwords.
    pub dwords: u32,
    /// Dwords consumed so far.
    pub pos: u32,
}

impl IbFrame {
    /// A frame at the start of an IB.
    pub fn new(addr: u64, dwords: u32) -> Self {
        IbFrame {
            addr,
            dwords,
            pos: 0,
        }
    }

    /// GPU address of the next dword.
    pub fn cursor(&self) -> u64 {
        // Wrapping: an IB address near the top of the address space then simply faults.
        self.addr.wrapping_add(4 * u64::from(self.pos))
    }

    /// Dwords left.
    pub fn remaining(&self) -> u32 {
        self.dwords.saturating_sub(self.pos)
    }
}

/// What executing one packet asks of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Done; go on with the next packet.
    Next,
    /// The condition is not met yet: stay on this packet and poll it again later.
    Park,
    /// The packet is still running and gives the engine back (its time slice is over): stay
    /// on it and continue it on the next pass, from where it got.
    Yield,
    /// Done; run this IB, then continue after the packet.
    Call(IbFrame),
    /// Done; continue in this IB instead of the current one (a chained IB).
    Chain(IbFrame),
}

/// What every engine keeps about a queue besides its pointers: why it stopped, whether it
/// waits, how much it ran — and the bookkeeping of one pass.
#[derive(Debug, Clone, Default)]
pub struct QueueStatus {
    halted: Option<QueueError>,
    parked: bool,
    packets: u64,
}

impl QueueStatus {
    /// Why the queue stopped, if it did.
    pub fn error(&self) -> Option<&QueueError> {
        self.halted.as_ref()
    }

    /// Waiting on memory at the end of its last pass.
    pub fn is_parked(&self) -> bool {
        self.parked
    }

    /// Packets executed so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Forgets the error (a GPU reset restarts the engines).
    pub fn clear_error(&mut self) {
        self.halted = None;
        self.parked = false;
    }

    /// Mapped again: a queue stopped by a VM fault retries the faulting packet.
    pub fn retry_after_fault(&mut self) {
        if matches!(self.halted, Some(QueueError::VmFault(_))) {
            self.halted = None;
        }
    }

    /// The pass of a stopped queue: nothing runs.
    pub fn halted_run(&self) -> Option<QueueRun> {
        self.halted.is_some().then_some(QueueRun {
            packets: 0,
            state: RunState::Halted,
        })
    }

    /// Records a pass that completed `done` packets and ended with `result`; an error stops the
    /// queue, is logged under `target` and posted as an interrupt by `post`.
    pub fn finish(
        &mut self,
        done: usize,
        result: Result<RunState, QueueError>,
        id: &QueueIdentity,
        target: &str,
        post: impl FnOnce(&QueueError),
    ) -> QueueRun {
        self.packets += done as u64;
        self.parked = result == Ok(RunState::Parked);
        let state = match result {
            Ok(state) => state,
            Err(e) => {
                // A VM fault may be one the driver recovers (XNACK replay); the driver logs
                // the ones it cannot, as amdkfd does.
                let level = match e {
                    QueueError::VmFault(_) => log::Level::Debug,
                    _ => log::Level::Error,
                };
                log::log!(
                    target: target,
                    level,
                    "pasid {:#x} queue (doorbell {:#x}, {:?}) stopped: {e}",
                    id.pasid,
                    id.doorbell_offset,
                    id.slot
                );
                post(&e);
                self.halted = Some(e);
                RunState::Halted
            }
        };
        QueueRun {
            packets: done,
            state,
        }
    }
}

/// What a queue's packets may touch while it runs.
pub struct ExecEnv<'a> {
    /// The process's GPU address space.
    pub vm: &'a GpuVm,
    /// The GPU clock.
    pub clock: &'a GpuClock,
    /// The GPU's register file (what register writes and reads of user packets reach).
    pub registers: &'a mut BTreeMap<u32, u32>,
    /// Where interrupts go.
    pub ih: &'a IhRing,
    /// The queue running.
    pub queue: QueueIdentity,
}

impl ExecEnv<'_> {
    /// Posts an interrupt of this queue.
    pub fn interrupt(&self, client_id: u8, source_id: u8, src_data: [u32; 4]) {
        let ring_id = match self.queue.slot {
            // amdgpu decodes CP ring ids as me [3:2], pipe [1:0], queue [6:4].
            HqdSlot::Compute { mec, pipe, queue } => ((mec + 1) << 2) | (pipe & 3) | (queue << 4),
            HqdSlot::Sdma { queue, .. } => queue,
        };
        self.ih.push(&IhEntry {
            client_id,
            source_id,
            ring_id,
            vmid: self.queue.vmid,
            timestamp: self.clock.now() & 0xFFFF_FFFF_FFFF,
            pasid: self.queue.pasid,
            node_id: 0,
            src_data,
        });
    }
}

/// Reads `n` dwords of a ring of `ring_dwords` starting at slot `start`, wrapping at the end.
pub fn read_ring(
    vm: &GpuVm,
    base: u64,
    ring_dwords: u64,
    start: u64,
    n: usize,
    out: &mut Vec<u32>,
) -> Result<(), VmFault> {
    out.clear();
    out.resize(n, 0);
    let first = (ring_dwords - start).min(n as u64) as usize;
    vm.read(
        base + start * 4,
        zerocopy::IntoBytes::as_mut_bytes(&mut out[..first]),
    )?;
    if first < n {
        vm.read(base, zerocopy::IntoBytes::as_mut_bytes(&mut out[first..]))?;
    }
    Ok(())
}

/// Reads `n` dwords at `addr` (an IB).
pub fn read_linear(vm: &GpuVm, addr: u64, n: usize, out: &mut Vec<u32>) -> Result<(), VmFault> {
    out.clear();
    out.resize(n, 0);
    vm.read(addr, zerocopy::IntoBytes::as_mut_bytes(&mut out[..]))
}

/// The write pointer a queue sees: the larger of the value at its write-pointer address and
/// the doorbell. (The driver clears a queue's doorbell when it creates the queue, so a value
/// left by an earlier queue with the same doorbell cannot leak in.) The write-pointer location
/// is only polled: if it is not mapped, the doorbell alone counts and no fault is raised, as
/// the CP takes the write pointer from the doorbell write.
pub fn write_pointer(vm: &GpuVm, wptr_addr: u64, doorbell: u64) -> u64 {
    let mem = if wptr_addr == 0 {
        0
    } else {
        vm.load_u64(wptr_addr).unwrap_or(0)
    };
    mem.max(doorbell)
}

/// A monotonic read pointer from a saved wrapped one: the position `wrapped` (mod `ring`) at
/// or before `wptr`, within one ring.
pub fn unwrap_pointer(wptr: u64, wrapped: u64, ring: u64) -> u64 {
    if ring == 0 {
        return wptr;
    }
    let behind = (wptr % ring + ring - wrapped % ring) % ring;
    wptr - behind.min(wptr)
}

#[derive(Debug, Default)]
struct WakeState {
    woken: bool,
}

/// No core known ([`EngineWaker`]'s core fields).
const NO_CORE: usize = usize::MAX;

/// Wakes the engine thread (a doorbell was rung) and tells it to stop.
#[derive(Debug)]
pub struct EngineWaker {
    state: Mutex<WakeState>,
    cv: Condvar,
    stop: AtomicBool,
    sleeping: AtomicBool,
    /// A doorbell was rung through [`EngineWaker::doorbell_rung`] since the engine's last
    /// pass began: a sleep about to start must not start (the ringer may have looked at
    /// `sleeping` before it was set, and then woke nobody).
    rung: AtomicBool,
    /// The core the engine thread last found itself on while idle ([`NO_CORE`]: unknown).
    engine_core: AtomicUsize,
    /// The core of the thread that last rang through [`EngineWaker::doorbell_rung`].
    ringer_core: AtomicUsize,
    /// The clients' doorbell mappings, write-protected while the thread sleeps.
    watch: OnceLock<Arc<DoorbellWatch>>,
    /// Work is coming (a doorbell store faulted): poll hot again, as after work.
    kicked: AtomicBool,
    /// Times [`EngineWaker::wake`] ended a sleep.
    wakes: AtomicU64,
    /// What the thread's CPU-affinity policy decided.
    affinity: Arc<AffinityCounters>,
}

impl Default for EngineWaker {
    fn default() -> Self {
        EngineWaker {
            state: Mutex::default(),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            rung: AtomicBool::new(false),
            engine_core: AtomicUsize::new(NO_CORE),
            ringer_core: AtomicUsize::new(NO_CORE),
            watch: OnceLock::new(),
            kicked: AtomicBool::new(false),
            wakes: AtomicU64::new(0),
            affinity: Arc::default(),
        }
    }
}

impl EngineWaker {
    /// Ends the thread's sleep now.
    pub fn wake(&self) {
        self.wake_if_asleep();
    }

    /// [`EngineWaker::wake`]; `true` when the thread was asleep (or falling asleep) and this
    /// call woke it.
    fn wake_if_asleep(&self) -> bool {
        if !self.sleeping.load(Ordering::SeqCst) {
            return false;
        }
        self.wakes.fetch_add(1, Ordering::Relaxed);
        self.state.lock().unwrap_or_else(|e| e.into_inner()).woken = true;
        self.cv.notify_one();
        if let Some(w) = self.watch.get() {
            w.notify();
        }
        true
    }

    /// Wakes the thread for a doorbell the calling thread just rang, and if the thread was
    /// asleep, yields the caller's core once. The scheduler often wakes the engine thread on
    /// the caller's core; a caller that then spins for the result without yielding (a plain
    /// `while` loop over memory) held it off for a whole time slice, 3.9 ms on every one of 12
    /// doorbells after an idle second, against 40 µs for a caller that yields. When the engine
    /// thread woke on another core the yield returns at once.
    ///
    /// An engine thread that is awake on the caller's core (polling for the next doorbell)
    /// gets the core the same way, and it does not then spin for [`HOT_SPIN`] holding it off
    /// the caller (`spawn`): on a 2-core machine with the other core busy, the two took turns
    /// on one core, each holding it about 22 µs per round trip (a caller's first polling
    /// burst, then the engine's hot spin), and a fence round trip took 44–105 µs instead of
    /// under 1 µs. (Waiting blocked there instead of yielding, woken by the next ring, was
    /// measured too: the scheduler then kept the two threads on one core, 6–9 µs a round
    /// trip.)
    pub fn doorbell_rung(&self) {
        let here = affinity::current_core().unwrap_or(NO_CORE);
        self.ringer_core.store(here, Ordering::Relaxed);
        // Before `sleeping` is read: either the engine's sleep sees this, or this sees it
        // asleep (both sequentially consistent).
        self.rung.store(true, Ordering::SeqCst);
        if self.wake_if_asleep()
            || (here != NO_CORE && self.engine_core.load(Ordering::Relaxed) == here)
        {
            std::thread::yield_now();
        }
    }

    /// Whether the last ringer ran on `core`, the engine thread's own.
    fn ringer_shares(&self, core: usize) -> bool {
        core != NO_CORE && self.ringer_core.load(Ordering::Relaxed) == core
    }

    /// The doorbell watch's epoch while it is armed ([`DoorbellWatch::armed_epoch`]): pass
    /// it to [`EngineWaker::wake_unless_watched_since`] after a change that needs a pass only
    /// once a doorbell rings.
    pub fn watched_epoch(&self) -> Option<u64> {
        self.watch.get().and_then(|w| w.armed_epoch())
    }

    /// Wakes the thread unless the doorbell mappings were write-protected all along since
    /// `epoch` was taken ([`EngineWaker::watched_epoch`]): then the next doorbell store wakes
    /// it anyway, and a wake-up now would only cost the client (a thread of its address space
    /// running on another core turns its next `munmap` into a TLB shootdown: issue #22
    /// measured 35 µs per queue created on a 2-vCPU guest). `None` always wakes it.
    pub fn wake_unless_watched_since(&self, epoch: Option<u64>) {
        match epoch {
            Some(e) if self.watched_epoch() == Some(e) => {}
            _ => self.wake(),
        }
    }

    /// How many times [`EngineWaker::wake`] ended the thread's sleep.
    pub fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::Relaxed)
    }

    /// What the thread's CPU-affinity policy decided so far.
    pub fn affinity(&self) -> AffinityStats {
        self.affinity.stats()
    }

    /// Watches the clients' doorbell mappings with `watch` while the thread sleeps (once;
    /// `false` when a watch was already set).
    pub fn set_doorbell_watch(&self, watch: Arc<DoorbellWatch>) -> bool {
        self.watch.set(watch).is_ok()
    }

    /// The doorbell watch, if one was set.
    pub fn doorbell_watch(&self) -> Option<&Arc<DoorbellWatch>> {
        self.watch.get()
    }

    /// Asks the thread to exit.
    pub fn stop(&self) {
        if let Some(w) = self.watch.get() {
            w.stop();
        }
        self.stop.store(true, Ordering::Release);
        self.state.lock().unwrap_or_else(|e| e.into_inner()).woken = true;
        self.cv.notify_one();
    }

    /// Sleeps up to `d`, until woken. With the doorbell mappings write-protected, the sleep
    /// is the watch's: a store into them ends it, without any other thread in between.
    fn sleep(&self, d: Duration) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.sleeping.store(true, Ordering::SeqCst);
        // A doorbell rung since the last pass began, by a caller that saw the thread awake:
        // the next pass is due now.
        if self.rung.swap(false, Ordering::SeqCst) {
            s.woken = true;
        }
        if !s.woken {
            match self.watch.get().filter(|w| w.is_armed()) {
                Some(w) => {
                    // `wake` sets `woken` under the lock, then notifies the watch: a wake-up
                    // after this check ends the wait.
                    drop(s);
                    if w.wait(d) {
                        self.kicked.store(true, Ordering::Release);
                    }
                    s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                }
                None => {
                    s = self
                        .cv
                        .wait_timeout(s, d)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        s.woken = false;
        self.sleeping.store(false, Ordering::Release);
    }
}

/// Starts the engine thread. `step` runs one pass over every GPU (and delivers the
/// interrupts); it returns `None` once the model is gone, which ends the thread. `tick` is
/// called every [`TIME_SLICE`]. `affinity_policy` turns the thread's CPU-affinity policy on
/// ([`affinity`]).
pub fn spawn(
    waker: Arc<EngineWaker>,
    affinity_policy: bool,
    step: impl Fn() -> Option<EngineActivity> + Send + 'static,
    tick: impl Fn() -> bool + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let creator_cpu = affinity::current_core();
    let mut affinity = EngineAffinity::new(affinity_policy, waker.affinity.clone());
    std::thread::Builder::new()
        .name("kfd-model-engines".into())
        .spawn(move || {
            affinity.at_start(creator_cpu);
            // The thread's timed sleeps (the polling ones, 20 µs and up) end when they say,
            // not up to the default 50 µs later.
            if let Err(e) = nix::sys::prctl::set_timerslack(ENGINE_TIMER_SLACK_NS) {
                log::debug!(target: crate::layer::ENGINE, "timer slack not set: {e}");
            }
            let mut last_work = Instant::now();
            let mut last_tick = Instant::now();
            let mut sleep = Duration::from_micros(20);
            log::debug!(target: crate::layer::ENGINE, "engine thread started");
            while !waker.stop.load(Ordering::Acquire) {
                // A doorbell rung from here on is seen by this pass or keeps the next sleep
                // from starting.
                waker.rung.store(false, Ordering::SeqCst);
                let Some(activity) = step() else { break };
                let now = Instant::now();
                if now.duration_since(last_tick) >= TIME_SLICE {
                    last_tick = now;
                    if !tick() {
                        break;
                    }
                }
                let kicked = waker.kicked.swap(false, Ordering::AcqRel);
                if kicked {
                    let storer = waker.watch.get().and_then(|w| w.last_storer());
                    affinity.woken_by_doorbell(storer);
                }
                if activity.progressed() || kicked {
                    last_work = now;
                    sleep = Duration::from_micros(20);
                    // Awake with work: the clients' stores need not fault.
                    if let Some(w) = waker.watch.get() {
                        w.disarm();
                    }
                    continue;
                }
                let idle = now.duration_since(last_work);
                if activity.pending_in_time() {
                    waker.sleep(Duration::from_micros(50));
                } else if activity.queues == 0 {
                    waker.sleep(NOTHING_MAPPED_SLEEP);
                } else if idle < WARM_YIELD {
                    let core = affinity::current_core().unwrap_or(NO_CORE);
                    waker.engine_core.store(core, Ordering::Relaxed);
                    // Spinning on the ringer's core would keep the ringer from its result.
                    if idle < HOT_SPIN && !waker.ringer_shares(core) {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                } else {
                    // Write-protect the doorbell mappings first, then look once more: a store
                    // before the protection is seen by that pass, one after it faults and
                    // ends the sleep (`DoorbellWatch::wait`).
                    match waker.watch.get() {
                        Some(w) if w.arm() => continue,
                        Some(w) if w.is_armed() => affinity.before_watched_sleep(),
                        _ => {}
                    }
                    waker.sleep(sleep);
                    let cap = if idle < DEEP_IDLE_AFTER {
                        MAX_IDLE_SLEEP
                    } else {
                        DEEP_IDLE_SLEEP
                    };
                    sleep = (sleep * 2).min(cap);
                }
            }
            // A store that faulted while the last pass ran must not wait for a next one.
            if let Some(w) = waker.watch.get() {
                w.stop();
            }
            log::debug!(target: crate::layer::ENGINE, "engine thread stopped");
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_pointers_unwrap_within_one_ring() {
        assert_eq!(unwrap_pointer(0, 0, 1024), 0);
        assert_eq!(unwrap_pointer(1030, 6, 1024), 1030);
        assert_eq!(unwrap_pointer(1030, 1000, 1024), 1000);
        assert_eq!(unwrap_pointer(5000, 900, 1024), 4996);
        assert_eq!(unwrap_pointer(3, 1000, 1024), 0, "never below zero");
    }

    #[test]
    fn queue_errors_say_what_to_do() {
        let e = QueueError::WritePointer {
            wptr: 0x10,
            rptr: 0x20,
            ring: 1024,
            unit: "dwords",
        };
        assert!(e.to_string().contains("monotonic"));
        let e = QueueError::NotModelled {
            addr: 0x1000,
            what: "shader execution (KERNEL_DISPATCH)".into(),
        };
        assert_eq!(
            e.to_string(),
            "shader execution (KERNEL_DISPATCH) (packet at 0x1000) is not modelled"
        );
    }
}
