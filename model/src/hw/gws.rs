//! Global wave sync (GWS): the barrier and semaphore resources a compute queue holds, which
//! waves of every workgroup of a dispatch reach with `ds_gws_*` (HIP's grid-wide
//! `cooperative_groups::this_grid().sync()` is a GWS barrier). The resources belong to the
//! queue, not to one dispatch: HIP initialises a barrier in one kernel and waits on it in the
//! next. A wave that must wait stays in its workgroup (`hw::spi`) until [`Gws::may_go`]
//! lets it; the workgroup meanwhile gives its host thread to the others, since a barrier
//! over the whole grid needs every workgroup to reach it.

use isa::exec::{GwsOp, GwsRequest, GWS_RESOURCES};
use std::sync::{Mutex, MutexGuard};

/// One GWS resource. Hardware keeps one counter per resource and acts on it as a barrier or
/// as a semaphore, whichever instruction reaches it: `ds_gws_init` loads the counter with its
/// operand (a barrier's waves minus one, or a semaphore's count); a barrier wave that finds it
/// at 0 opens the barrier and reloads it with its own operand, any other barrier wave takes 1
/// and waits; `sema_v`/`sema_br` add to it, `sema_p` takes 1 once it is above 0.
#[derive(Debug, Clone, Copy, Default)]
struct Resource {
    /// The counter (0 on a queue's new resources).
    counter: i64,
    /// Times the barrier opened (hardware toggles a flag; a count tells rounds apart too).
    opened: u64,
    /// Times `sema_release_all` ran.
    released: u64,
}

/// The queue's GWS resources.
#[derive(Debug)]
pub struct Gws {
    resources: Mutex<[Resource; GWS_RESOURCES as usize]>,
}

impl Default for Gws {
    fn default() -> Self {
        Gws {
            resources: Mutex::new([Resource::default(); GWS_RESOURCES as usize]),
        }
    }
}

/// What a wave waits for after a GWS instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GwsWait {
    /// A barrier to open.
    Barrier {
        /// The resource.
        resource: u32,
        /// How often it had opened when the wave arrived.
        opened: u64,
    },
    /// A semaphore to have a count to take (or a release of all).
    Semaphore {
        /// The resource.
        resource: u32,
        /// How often all were released when the wave began to wait.
        released: u64,
    },
}

impl Gws {
    fn lock(&self) -> MutexGuard<'_, [Resource; GWS_RESOURCES as usize]> {
        self.resources.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a wave's request: `None` when the wave goes on at once, or what it waits for.
    pub fn apply(&self, req: GwsRequest) -> Option<GwsWait> {
        let mut all = self.lock();
        let r = &mut all[(req.resource % GWS_RESOURCES) as usize];
        let value = i64::from(req.value);
        match req.op {
            GwsOp::Init => {
                r.counter = value;
                None
            }
            GwsOp::Barrier => {
                if r.counter <= 0 {
                    // The last wave opens the barrier; its operand sizes the next round.
                    r.counter = value;
                    r.opened += 1;
                    None
                } else {
                    r.counter -= 1;
                    Some(GwsWait::Barrier {
                        resource: req.resource,
                        opened: r.opened,
                    })
                }
            }
            GwsOp::SemaV => {
                r.counter += 1;
                None
            }
            GwsOp::SemaBr => {
                r.counter += value;
                None
            }
            GwsOp::SemaReleaseAll => {
                r.released += 1;
                None
            }
            GwsOp::SemaP => {
                if r.counter > 0 {
                    r.counter -= 1;
                    None
                } else {
                    Some(GwsWait::Semaphore {
                        resource: req.resource,
                        released: r.released,
                    })
                }
            }
        }
    }

    /// Whether a waiting wave may go on now; a semaphore wave that may takes its count.
    pub fn may_go(&self, wait: GwsWait) -> bool {
        self.check(wait, true)
    }

    /// Whether a waiting wave could go on now, taking nothing.
    pub fn could_go(&self, wait: GwsWait) -> bool {
        self.check(wait, false)
    }

    fn check(&self, wait: GwsWait, take: bool) -> bool {
        let mut all = self.lock();
        match wait {
            GwsWait::Barrier { resource, opened } => all[resource as usize].opened != opened,
            GwsWait::Semaphore { resource, released } => {
                let r = &mut all[resource as usize];
                if r.released != released {
                    true
                } else if r.counter > 0 {
                    if take {
                        r.counter -= 1;
                    }
                    true
                } else {
                    false
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(op: GwsOp, resource: u32, value: u32) -> GwsRequest {
        GwsRequest {
            op,
            resource,
            value,
        }
    }

    #[test]
    fn a_barrier_opens_when_its_last_wave_arrives_and_rearms() {
        let g = Gws::default();
        assert_eq!(g.apply(req(GwsOp::Init, 3, 2)), None);
        let w1 = g.apply(req(GwsOp::Barrier, 3, 2)).unwrap();
        let w2 = g.apply(req(GwsOp::Barrier, 3, 2)).unwrap();
        assert!(!g.may_go(w1) && !g.may_go(w2));
        assert_eq!(g.apply(req(GwsOp::Barrier, 3, 2)), None, "third of three");
        assert!(g.may_go(w1) && g.may_go(w2));
        // The next round counts three again; another resource is untouched.
        let w = g.apply(req(GwsOp::Barrier, 3, 2)).unwrap();
        assert!(!g.could_go(w));
        assert_eq!(g.apply(req(GwsOp::Barrier, 4, 0)), None, "one wave");
    }

    #[test]
    fn semaphore_p_waits_for_v_br_or_release_all() {
        let g = Gws::default();
        let w = g.apply(req(GwsOp::SemaP, 0, 0)).unwrap();
        assert!(!g.could_go(w));
        g.apply(req(GwsOp::SemaV, 0, 0));
        assert!(g.could_go(w) && g.could_go(w), "peeking takes nothing");
        assert!(g.may_go(w));
        assert!(!g.may_go(w), "the count was taken");
        g.apply(req(GwsOp::SemaBr, 0, 2));
        assert_eq!(g.apply(req(GwsOp::SemaP, 0, 0)), None);
        assert_eq!(g.apply(req(GwsOp::SemaP, 0, 0)), None);
        let w = g.apply(req(GwsOp::SemaP, 0, 0)).unwrap();
        g.apply(req(GwsOp::SemaReleaseAll, 0, 0));
        assert!(g.may_go(w));
    }

    #[test]
    fn init_loads_the_semaphore_count_that_sema_p_takes() {
        let g = Gws::default();
        assert_eq!(g.apply(req(GwsOp::Init, 5, 2)), None);
        assert_eq!(g.apply(req(GwsOp::SemaP, 5, 0)), None, "count 2");
        assert_eq!(g.apply(req(GwsOp::SemaP, 5, 0)), None, "count 1");
        let w = g.apply(req(GwsOp::SemaP, 5, 0)).expect("count 0: waits");
        assert!(!g.could_go(w));
        g.apply(req(GwsOp::SemaV, 5, 0));
        assert!(g.may_go(w));
        // A new init replaces the count; init 0 makes the first P wait.
        g.apply(req(GwsOp::Init, 5, 0));
        assert!(g.apply(req(GwsOp::SemaP, 5, 0)).is_some());
    }

    #[test]
    fn a_barrier_on_an_uninitialised_resource_opens_at_once_then_counts_its_operand() {
        let g = Gws::default();
        assert_eq!(g.apply(req(GwsOp::Barrier, 7, 1)), None, "counter 0: opens");
        let w = g.apply(req(GwsOp::Barrier, 7, 1)).expect("counter 1");
        assert_eq!(g.apply(req(GwsOp::Barrier, 7, 1)), None, "second of two");
        assert!(g.may_go(w));
    }
}
