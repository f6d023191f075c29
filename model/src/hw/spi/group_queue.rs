//! Which workgroup of a dispatch a compute unit runs next.
//!
//! Hardware starts a dispatch's workgroups in order, and a workgroup that has started keeps
//! its wave slots and runs until it ends: every "decoupled look-back" algorithm (rocPRIM and
//! hipCUB scans, partition and select, rocSPARSE's triangular solves) relies on it, since a
//! workgroup waits, spinning, on the results of earlier ones. The model runs more
//! workgroups than it has host threads, a turn at a time, so it keeps the same promise
//! another way:
//!
//! - workgroups start in dispatch order; a thread may take a batch of consecutive new ones,
//!   which count as started when taken and get their first turn, in order, before the thread
//!   takes anything else (those its time slice ends before are the first to run in the
//!   next);
//! - a turn is bounded ([`super::cu::GROUP_TURN`] instructions, less for a workgroup that only
//!   polls), after which an unfinished workgroup is suspended;
//! - suspended workgroups get their turns in sweeps in dispatch order, so each gets one per
//!   sweep, and along a chain of workgroups each waiting on the one before, one sweep
//!   carries the chain as far as it can go;
//! - new workgroups start when no suspended one can run, while fewer are started than there
//!   are threads, or when a whole sweep went by with no workgroup ending or starting (all
//!   wait, maybe for a later one, as at a software grid barrier);
//! - at most as many workgroups are started and not ended as the GPU has wave slots for.
//!
//! So a workgroup runs only once every earlier one has started, and each started one gets
//! a turn within a bounded number of others' turns, however many spin.

use std::collections::BTreeMap;
use std::ops::Range;

/// At most this many new workgroups (of a dispatch without scratch) a compute-unit thread
/// takes at once: one lock per batch instead of one per workgroup, which two threads would
/// otherwise pass back and forth for small workgroups. Fewer near the end of the grid, so
/// the threads finish together.
const CLAIM_BATCH: u64 = 8;

/// The workgroups of one dispatch that have not ended: started ones (`G`, suspended between
/// turns) and those not started yet.
#[derive(Debug, Clone)]
pub(super) struct GroupQueue<G> {
    /// Started workgroups waiting for their next turn, by their number in dispatch order.
    suspended: BTreeMap<u64, G>,
    /// Where the sweep over the suspended workgroups is: the next turn goes to the first at
    /// or after it.
    sweep: u64,
    /// The next workgroup to start, and the grid's count.
    next: u64,
    total: u64,
    /// Workgroups a thread took in a batch and did not reach before its slice ended (the
    /// next to run last): started, so they run before anything else.
    returned: Vec<u64>,
    /// Scratch slots no workgroup holds (`None`: the dispatch has no scratch).
    free_slots: Option<Vec<u32>>,
    /// Workgroups started and not ended, and how many the GPU holds at once.
    resident: u64,
    resident_limit: u64,
    /// Turns suspended workgroups got since a workgroup last started or ended.
    turns_since_progress: usize,
}

/// What a compute-unit thread runs next.
#[derive(Debug)]
pub(super) enum Turn<G> {
    /// Another turn of a started workgroup.
    Resume(G),
    /// Workgroups `first..first + count`, to run in order, each for a turn: the first in
    /// scratch slot `slot` (a batch only comes to dispatches without scratch).
    Start { first: u64, count: u64, slot: u32 },
    /// Nothing to run now: every started workgroup is running or blocked, and no new one
    /// fits.
    Idle,
}

impl<G> GroupQueue<G> {
    /// The queue of a grid of `total` workgroups of which the GPU holds `resident_limit` at
    /// once (at least 1), with the scratch slots `free_slots` (`None`: no scratch).
    pub(super) fn new(total: u64, resident_limit: u64, free_slots: Option<Vec<u32>>) -> Self {
        GroupQueue {
            suspended: BTreeMap::new(),
            sweep: 0,
            next: 0,
            total,
            returned: Vec::new(),
            free_slots,
            resident: 0,
            resident_limit: resident_limit.max(1),
            turns_since_progress: 0,
        }
    }

    /// Workgroups not ended (started or not).
    pub(super) fn left(&self) -> u64 {
        self.resident + (self.total - self.next)
    }

    /// Whether a thread could find something to run (or will, once a running workgroup
    /// gives its turn back).
    pub(super) fn has_waiting(&self) -> bool {
        !self.suspended.is_empty() || !self.returned.is_empty() || self.next < self.total
    }

    /// The next turn for a thread, one of `workers` (the batch size of new workgroups
    /// shrinks near the end of the grid so the threads finish together); `blocked` says
    /// which suspended workgroups cannot run yet (their waves wait for others at a GWS
    /// barrier).
    pub(super) fn next_turn(&mut self, workers: u64, blocked: impl Fn(&G) -> bool) -> Turn<G> {
        if let Some(g) = self.returned.pop() {
            return Turn::Start {
                first: g,
                count: 1,
                slot: 0,
            };
        }
        let room = self.resident_limit.saturating_sub(self.resident);
        let has_slot = self.free_slots.as_ref().is_none_or(|f| !f.is_empty());
        let can_start = self.next < self.total && room > 0 && has_slot;
        let runnable = {
            let mut after = self
                .suspended
                .range(self.sweep..)
                .chain(self.suspended.range(..self.sweep));
            after.find(|(_, g)| !blocked(g)).map(|(&i, _)| i)
        };
        let stalled = self.turns_since_progress >= self.suspended.len();
        let start = can_start && (runnable.is_none() || self.resident < workers || stalled);
        if !start {
            let Some(g) = runnable.and_then(|i| {
                self.sweep = i + 1;
                self.suspended.remove(&i)
            }) else {
                return Turn::Idle;
            };
            self.turns_since_progress += 1;
            return Turn::Resume(g);
        }
        let (count, slot) = match &mut self.free_slots {
            None => {
                let left = self.total - self.next;
                let count = (left / (4 * workers.max(1)))
                    .clamp(1, CLAIM_BATCH)
                    .min(room);
                (count, 0)
            }
            Some(free) => match free.pop() {
                Some(slot) => (1, slot),
                None => return Turn::Idle,
            },
        };
        self.turns_since_progress = 0;
        let first = self.next;
        self.next += count;
        self.resident += count;
        Turn::Start { first, count, slot }
    }

    /// The turn of started workgroup `index` ended before the workgroup did: it waits for
    /// the sweep to come round.
    pub(super) fn suspend(&mut self, index: u64, g: G) {
        self.suspended.insert(index, g);
    }

    /// Started workgroup `index` waits for the driver (a retry fault) and then runs first.
    pub(super) fn suspend_first(&mut self, index: u64, g: G) {
        self.suspended.insert(index, g);
        self.sweep = index;
    }

    /// A started workgroup ended; its scratch slot `slot` is free again.
    pub(super) fn end(&mut self, slot: u32) {
        self.turns_since_progress = 0;
        self.resident = self.resident.saturating_sub(1);
        if let Some(free) = &mut self.free_slots {
            free.push(slot);
        }
    }

    /// A thread's slice ended before it reached the workgroups `unreached` of its batch:
    /// they are the first to run in the next.
    pub(super) fn give_back(&mut self, unreached: Range<u64>) {
        self.returned.extend(unreached.rev());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workgroup of the simulated look-back: it ends in the turn in which every earlier
    /// one has ended, and spins otherwise.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Spinner(u64);

    /// Runs a look-back grid of `total` workgroups on `threads` simulated threads taking
    /// turns round robin, every thread giving back the batch it did not reach every
    /// `slice_turns` turns (a slice ending); returns the turns taken until every workgroup
    /// ended, or `None` past `limit`. Panics if workgroups start out of order.
    fn lookback(
        total: u64,
        threads: usize,
        limit: u64,
        resident: u64,
        slice_turns: u64,
    ) -> Option<u64> {
        let mut q: GroupQueue<Spinner> = GroupQueue::new(total, resident, None);
        let mut ended = vec![false; total as usize];
        let mut started = 0u64;
        let mut batches: Vec<Range<u64>> = vec![0..0; threads];
        for turn in 0..limit {
            if ended.iter().all(|&e| e) {
                return Some(turn);
            }
            if turn % slice_turns == 0 {
                for b in &mut batches {
                    q.give_back(std::mem::replace(b, 0..0));
                }
            }
            let t = (turn % threads as u64) as usize;
            let g = match batches[t].next() {
                Some(g) => g,
                None => match q.next_turn(threads as u64, |_| false) {
                    Turn::Resume(Spinner(g)) => g,
                    Turn::Start { first, count, .. } => {
                        if first >= started {
                            assert_eq!(first, started, "workgroups start in order");
                            started = first + count;
                        }
                        batches[t] = first + 1..first + count;
                        first
                    }
                    Turn::Idle => continue,
                },
            };
            if ended[..g as usize].iter().all(|&e| e) {
                ended[g as usize] = true;
                q.end(0);
            } else {
                q.suspend(g, Spinner(g));
            }
        }
        None
    }

    #[test]
    fn a_lookback_grid_ends_on_any_thread_count_in_bounded_turns() {
        for threads in [1, 2, 3, 16] {
            for slice_turns in [1, 5, 64] {
                let turns = lookback(500, threads, 1_000_000, 10_000, slice_turns);
                let turns = turns.unwrap_or_else(|| panic!("{threads} threads: no progress"));
                // Each workgroup's chain link costs at most a round over the resident ones.
                assert!(
                    turns < 200_000,
                    "{threads} threads, {slice_turns}: {turns} turns"
                );
            }
        }
    }

    #[test]
    fn a_lookback_grid_ends_with_few_resident_workgroups() {
        for resident in [1, 2, 7] {
            let turns = lookback(300, 4, 1_000_000, resident, 13);
            assert!(turns.is_some(), "{resident} resident");
        }
    }

    #[test]
    fn new_workgroups_start_while_started_ones_spin() {
        // A grid barrier: every workgroup spins until all have started, which needs new
        // ones to start while the started ones take their turns.
        let mut q: GroupQueue<Spinner> = GroupQueue::new(64, 64, None);
        let mut started = 0u64;
        for _ in 0..10_000 {
            match q.next_turn(1, |_| false) {
                Turn::Resume(g) => q.suspend(g.0, g),
                Turn::Start { first, count, .. } => {
                    started = first + count;
                    for g in first..first + count {
                        q.suspend(g, Spinner(g));
                    }
                }
                Turn::Idle => break,
            }
            if started == 64 {
                break;
            }
        }
        assert_eq!(started, 64);
    }

    #[test]
    fn no_more_workgroups_start_than_the_gpu_holds() {
        let mut q: GroupQueue<Spinner> = GroupQueue::new(100, 3, None);
        let Turn::Start {
            first: 0, count: 3, ..
        } = q.next_turn(1, |_| false)
        else {
            panic!("a batch of the 3 the GPU holds")
        };
        for g in 0..3 {
            q.suspend(g, Spinner(g));
        }
        assert_eq!(q.left(), 100);
        // Only started ones run until one ends; then the next starts.
        loop {
            match q.next_turn(1, |_| false) {
                Turn::Resume(Spinner(1)) => break,
                Turn::Resume(g) => q.suspend(g.0, g),
                other => panic!("{other:?}"),
            }
        }
        q.end(0);
        // After at most a sweep over the two still started, the next one starts.
        let mut started = None;
        for _ in 0..3 {
            match q.next_turn(1, |_| false) {
                Turn::Start { first, .. } => {
                    started = Some(first);
                    break;
                }
                Turn::Resume(g) => q.suspend(g.0, g),
                Turn::Idle => break,
            }
        }
        assert_eq!(started, Some(3));
        assert_eq!(q.left(), 99);
    }

    #[test]
    fn scratch_slots_bound_the_started_workgroups_and_come_back() {
        let mut q: GroupQueue<Spinner> = GroupQueue::new(10, 100, Some(vec![1, 0]));
        let Turn::Start {
            first: 0,
            count: 1,
            slot: 0,
        } = q.next_turn(4, |_| false)
        else {
            panic!()
        };
        let Turn::Start {
            first: 1,
            count: 1,
            slot: 1,
        } = q.next_turn(4, |_| false)
        else {
            panic!()
        };
        assert!(matches!(q.next_turn(4, |_| false), Turn::Idle));
        q.end(0);
        assert!(matches!(
            q.next_turn(4, |_| false),
            Turn::Start {
                first: 2,
                slot: 0,
                ..
            }
        ));
    }

    #[test]
    fn blocked_workgroups_wait_and_others_run() {
        let mut q: GroupQueue<Spinner> = GroupQueue::new(1, 10, None);
        let Turn::Start { first: 0, .. } = q.next_turn(1, |_| false) else {
            panic!()
        };
        q.suspend(0, Spinner(0));
        assert!(matches!(q.next_turn(1, |_| true), Turn::Idle));
        assert!(matches!(
            q.next_turn(1, |_| false),
            Turn::Resume(Spinner(0))
        ));
    }
}
