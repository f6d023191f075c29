//! `amdgpu_ctx`: the command-submission contexts of one render-node file
//! (`DRM_IOCTL_AMDGPU_CTX`), what `amdgpu_cs_ctx_create`, `amdgpu_cs_ctx_free`,
//! `amdgpu_cs_query_reset_state(2)` and the stable-power-state calls of libdrm_amdgpu send.
//!
//! A context is a number the file hands out (the lowest free one from 1, at most
//! [`AMDGPU_VM_MAX_NUM_CTX`]` - 1` live), its scheduling priority and its stable power state.
//! A context one of whose IBs stopped on the GPU ([`crate::cs`]'s failure rule: the job a real
//! GPU would hang on, which the driver's timeout resets) is guilty: `QUERY_STATE2` reports
//! `RESET | GUILTY`, `QUERY_STATE` once `AMDGPU_CTX_UNKNOWN_RESET`, and its later submissions
//! fail with `ECANCELED`. The reset touches nothing else (other contexts see none, VRAM is
//! never lost). The stable power state is kept per context; the kernel's rule that
//! only one context of a device holds a non-default one at a time (`EBUSY`) is not modelled.

use crate::errno::{Errno, KResult};
use kfd_sys::drm::*;
use std::collections::BTreeMap;

/// `AMDGPU_VM_MAX_NUM_CTX`: context ids are below it.
pub const AMDGPU_VM_MAX_NUM_CTX: u32 = 4096;

/// `DRM_IOCTL_AMDGPU_CTX`'s input (`struct drm_amdgpu_ctx_in`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CtxRequest {
    /// `AMDGPU_CTX_OP_*`.
    pub op: u32,
    /// The operation's flags (the stable power state for `SET_STABLE_PSTATE`).
    pub flags: u32,
    /// The context (all but `ALLOC_CTX`).
    pub ctx_id: u32,
    /// `AMDGPU_CTX_PRIORITY_*` (`ALLOC_CTX`).
    pub priority: i32,
}

/// `DRM_IOCTL_AMDGPU_CTX`'s output (`union drm_amdgpu_ctx_out`), by operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtxAnswer {
    /// `ALLOC_CTX`: the new context.
    Alloc {
        /// Its id.
        ctx_id: u32,
    },
    /// `FREE_CTX` and `SET_STABLE_PSTATE`: nothing written.
    Done,
    /// `QUERY_STATE` / `QUERY_STATE2`.
    State {
        /// `AMDGPU_CTX_QUERY2_FLAGS_*` (`QUERY_STATE2`), 0 for `QUERY_STATE`.
        flags: u64,
        /// Hangs this context caused.
        hangs: u32,
        /// `AMDGPU_CTX_*_RESET` (`QUERY_STATE`).
        reset_status: u32,
    },
    /// `GET_STABLE_PSTATE`.
    Pstate {
        /// `AMDGPU_CTX_STABLE_PSTATE_*`.
        flags: u32,
    },
}

#[derive(Debug, Clone)]
struct Ctx {
    priority: i32,
    stable_pstate: u32,
    /// The last sequence number handed out per ring (`ip_type`, `ip_instance`, `ring`).
    submitted: BTreeMap<(u32, u32, u32), u64>,
    /// A job of it hung (`amdgpu_ctx.guilty`).
    guilty: bool,
    /// `QUERY_STATE` has not reported that reset yet.
    reset_unreported: bool,
}

/// The contexts of one render-node file (`amdgpu_ctx_mgr`).
#[derive(Debug, Default)]
pub struct CtxTable {
    contexts: BTreeMap<u32, Ctx>,
}

/// Whether `priority` is one of the named priorities (`UNSET` is not).
fn priority_is_valid(priority: i32) -> bool {
    matches!(
        priority,
        AMDGPU_CTX_PRIORITY_VERY_LOW
            | AMDGPU_CTX_PRIORITY_LOW
            | AMDGPU_CTX_PRIORITY_NORMAL
            | AMDGPU_CTX_PRIORITY_HIGH
            | AMDGPU_CTX_PRIORITY_VERY_HIGH
    )
}

/// Whether the calling process may raise a context above normal priority: it holds
/// `CAP_SYS_NICE` (a render node never makes its opener DRM master).
fn may_raise_priority() -> bool {
    const CAP_SYS_NICE: u32 = 23;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_NICE) != 0)
}

impl CtxTable {
    /// `amdgpu_ctx_ioctl`. An unknown operation, an unknown context and bad stable-pstate
    /// flags are `EINVAL`; a priority that is not one of the named ones counts as normal (the
    /// kernel accepts garbage there for old user space); a priority above normal without
    /// `CAP_SYS_NICE` is `EACCES`; a file with [`AMDGPU_VM_MAX_NUM_CTX`]` - 1` live contexts
    /// answers `ENOSPC`.
    pub fn ioctl(&mut self, r: CtxRequest) -> KResult<CtxAnswer> {
        match r.op {
            AMDGPU_CTX_OP_ALLOC_CTX => {
                let priority = if priority_is_valid(r.priority) {
                    r.priority
                } else {
                    AMDGPU_CTX_PRIORITY_NORMAL
                };
                if priority > AMDGPU_CTX_PRIORITY_NORMAL && !may_raise_priority() {
                    return Err(Errno::EACCES);
                }
                // The lowest id not taken: the first gap in the sorted ids.
                let id = (1..)
                    .zip(self.contexts.keys())
                    .find(|(want, &have)| *want != have)
                    .map_or(self.contexts.len() as u32 + 1, |(want, _)| want);
                if id >= AMDGPU_VM_MAX_NUM_CTX {
                    return Err(Errno::ENOSPC);
                }
                self.contexts.insert(
                    id,
                    Ctx {
                        priority,
                        stable_pstate: AMDGPU_CTX_STABLE_PSTATE_NONE,
                        submitted: BTreeMap::new(),
                        guilty: false,
                        reset_unreported: false,
                    },
                );
                log::debug!(target: crate::layer::GEM, "CTX alloc {id} (priority {priority})");
                Ok(CtxAnswer::Alloc { ctx_id: id })
            }
            AMDGPU_CTX_OP_FREE_CTX => {
                self.contexts.remove(&r.ctx_id).ok_or(Errno::EINVAL)?;
                Ok(CtxAnswer::Done)
            }
            AMDGPU_CTX_OP_QUERY_STATE => {
                let ctx = self.contexts.get_mut(&r.ctx_id).ok_or(Errno::EINVAL)?;
                let reset = std::mem::take(&mut ctx.reset_unreported);
                Ok(CtxAnswer::State {
                    flags: 0,
                    hangs: 0,
                    reset_status: if reset {
                        AMDGPU_CTX_UNKNOWN_RESET
                    } else {
                        AMDGPU_CTX_NO_RESET
                    },
                })
            }
            AMDGPU_CTX_OP_QUERY_STATE2 => {
                let ctx = self.contexts.get(&r.ctx_id).ok_or(Errno::EINVAL)?;
                Ok(CtxAnswer::State {
                    flags: if ctx.guilty {
                        AMDGPU_CTX_QUERY2_FLAGS_RESET | AMDGPU_CTX_QUERY2_FLAGS_GUILTY
                    } else {
                        0
                    },
                    hangs: 0,
                    reset_status: 0,
                })
            }
            AMDGPU_CTX_OP_GET_STABLE_PSTATE => {
                if r.flags != 0 {
                    return Err(Errno::EINVAL);
                }
                let ctx = self.contexts.get(&r.ctx_id).ok_or(Errno::EINVAL)?;
                Ok(CtxAnswer::Pstate {
                    flags: ctx.stable_pstate,
                })
            }
            AMDGPU_CTX_OP_SET_STABLE_PSTATE => {
                let state = r.flags & AMDGPU_CTX_STABLE_PSTATE_FLAGS_MASK;
                if r.flags != state || state > AMDGPU_CTX_STABLE_PSTATE_PEAK {
                    return Err(Errno::EINVAL);
                }
                let ctx = self.contexts.get_mut(&r.ctx_id).ok_or(Errno::EINVAL)?;
                ctx.stable_pstate = state;
                Ok(CtxAnswer::Done)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// A submission of context `id` to `ring` (`ip_type`, `ip_instance`, `ring`): its sequence
    /// number, counting from 1 per ring (`EINVAL` for no such context).
    pub fn submit(&mut self, id: u32, ring: (u32, u32, u32)) -> KResult<u64> {
        let ctx = self.contexts.get_mut(&id).ok_or(Errno::EINVAL)?;
        let seq = ctx.submitted.entry(ring).or_insert(0);
        *seq += 1;
        Ok(*seq)
    }

    /// Marks context `id` guilty of a hang (the driver's job timeout reset the ring).
    pub fn mark_guilty(&mut self, id: u32) {
        if let Some(ctx) = self.contexts.get_mut(&id) {
            ctx.guilty = true;
            ctx.reset_unreported = true;
        }
    }

    /// Whether context `id` is guilty of a hang (`false` for no such context).
    pub fn is_guilty(&self, id: u32) -> bool {
        self.contexts.get(&id).is_some_and(|c| c.guilty)
    }

    /// The last sequence number context `id` handed out on `ring` (0 for none; `EINVAL` for
    /// no such context).
    pub fn last_submitted(&self, id: u32, ring: (u32, u32, u32)) -> KResult<u64> {
        let ctx = self.contexts.get(&id).ok_or(Errno::EINVAL)?;
        Ok(ctx.submitted.get(&ring).copied().unwrap_or(0))
    }

    /// The priority context `id` was created with, if it is live.
    pub fn priority(&self, id: u32) -> Option<i32> {
        self.contexts.get(&id).map(|c| c.priority)
    }

    /// How many contexts are live.
    pub fn len(&self) -> usize {
        self.contexts.len()
    }

    /// Whether no context is live.
    pub fn is_empty(&self) -> bool {
        self.contexts.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(op: u32, ctx_id: u32) -> CtxRequest {
        CtxRequest {
            op,
            ctx_id,
            ..Default::default()
        }
    }

    #[test]
    fn contexts_take_the_lowest_free_id_and_answer_the_kernels_errnos() {
        let mut t = CtxTable::default();
        let alloc = |t: &mut CtxTable, priority| {
            t.ioctl(CtxRequest {
                op: AMDGPU_CTX_OP_ALLOC_CTX,
                priority,
                ..Default::default()
            })
        };
        assert_eq!(alloc(&mut t, 0), Ok(CtxAnswer::Alloc { ctx_id: 1 }));
        assert_eq!(
            alloc(&mut t, 12345),
            Ok(CtxAnswer::Alloc { ctx_id: 2 }),
            "garbage priority counts as normal"
        );
        assert_eq!(t.priority(2), Some(AMDGPU_CTX_PRIORITY_NORMAL));
        assert_eq!(
            alloc(&mut t, AMDGPU_CTX_PRIORITY_LOW),
            Ok(CtxAnswer::Alloc { ctx_id: 3 })
        );
        assert_eq!(t.ioctl(req(AMDGPU_CTX_OP_FREE_CTX, 1)), Ok(CtxAnswer::Done));
        assert_eq!(t.ioctl(req(AMDGPU_CTX_OP_FREE_CTX, 1)), Err(Errno::EINVAL));
        assert_eq!(alloc(&mut t, 0), Ok(CtxAnswer::Alloc { ctx_id: 1 }));
        let no_reset = CtxAnswer::State {
            flags: 0,
            hangs: 0,
            reset_status: AMDGPU_CTX_NO_RESET,
        };
        assert_eq!(t.ioctl(req(AMDGPU_CTX_OP_QUERY_STATE, 2)), Ok(no_reset));
        assert_eq!(t.ioctl(req(AMDGPU_CTX_OP_QUERY_STATE2, 3)), Ok(no_reset));
        assert_eq!(
            t.ioctl(req(AMDGPU_CTX_OP_QUERY_STATE, 9)),
            Err(Errno::EINVAL)
        );
        assert_eq!(t.ioctl(req(0, 1)), Err(Errno::EINVAL), "op 0");
        assert_eq!(t.ioctl(req(7, 1)), Err(Errno::EINVAL), "op 7");
        let set = |t: &mut CtxTable, flags| {
            t.ioctl(CtxRequest {
                op: AMDGPU_CTX_OP_SET_STABLE_PSTATE,
                flags,
                ctx_id: 2,
                ..Default::default()
            })
        };
        assert_eq!(set(&mut t, 5), Err(Errno::EINVAL), "above PEAK");
        assert_eq!(set(&mut t, 0x11), Err(Errno::EINVAL), "outside the mask");
        assert_eq!(
            set(&mut t, AMDGPU_CTX_STABLE_PSTATE_PEAK),
            Ok(CtxAnswer::Done)
        );
        assert_eq!(
            t.ioctl(req(AMDGPU_CTX_OP_GET_STABLE_PSTATE, 2)),
            Ok(CtxAnswer::Pstate { flags: 4 })
        );
        assert_eq!(t.len(), 3);
        for _ in t.len()..AMDGPU_VM_MAX_NUM_CTX as usize - 1 {
            alloc(&mut t, 0).unwrap();
        }
        assert_eq!(t.len(), AMDGPU_VM_MAX_NUM_CTX as usize - 1);
        assert_eq!(alloc(&mut t, 0), Err(Errno::ENOSPC));
    }
}
