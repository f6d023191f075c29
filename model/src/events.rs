//! `kfd_events`: the per-process event table, the signal event page, `WAIT_EVENTS`, and the
//! entry the interrupt path calls to signal events by context id (facts §7.5, §8).
//!
//! Signal events own a slot of the event page: slot *i* belongs to event id *i*, id 0 is
//! reserved at process creation (so the first signal event is id 1), an unsignalled slot holds
//! `u64::MAX`. A GPU signals event *i* by writing slot *i* and raising an interrupt whose
//! context id is *i*; the interrupt handler looks at the slot, acknowledges it (writes `u64::MAX`
//! back) and sets the event. Other events (memory exception, hardware exception, …) get ids from
//! `0x4000_0000` and are set by the driver.

use crate::errno::{Errno, KResult};
use crate::hw::mem::DeviceMemory;
use crate::user::{UserAccess, UserAccessExt};
use kfd_sys::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// First id of non-signal events (`(INT_MAX >> 1) + 1`).
pub const FIRST_NONSIGNAL_EVENT_ID: u32 = 0x4000_0000;
/// Last id of non-signal events.
pub const LAST_NONSIGNAL_EVENT_ID: u32 = 0x7fff_ffff;
/// Slots usable in a kernel-allocated event page before it is mmapped ("the oldest user mode
/// expects 256 event slots").
pub const KERNEL_PAGE_DEFAULT_SLOTS: usize = 256;

/// Where the event page lives.
#[derive(Debug, Clone)]
pub struct EventPage {
    /// The memory holding the slots.
    pub mem: Arc<DeviceMemory>,
    /// Byte offset of slot 0 inside `mem`.
    pub offset: usize,
    /// Allocated by the kernel (APU path, mmapped through `KFD_MMAP_TYPE_EVENTS`) rather than a
    /// user buffer (dGPU path).
    pub kernel_allocated: bool,
}

impl EventPage {
    fn slot_offset(&self, slot: u32) -> usize {
        self.offset + 8 * slot as usize
    }

    /// The value of slot `slot`.
    pub fn slot(&self, slot: u32) -> u64 {
        self.mem
            .load_u64(self.slot_offset(slot))
            .unwrap_or(KFD_UNSIGNALED_EVENT_SLOT)
    }

    /// Writes slot `slot`.
    pub fn set_slot(&self, slot: u32, value: u64) {
        let _ = self.mem.store_u64(self.slot_offset(slot), value);
    }
}

#[derive(Debug)]
struct Event {
    event_type: u32,
    auto_reset: bool,
    signaled: bool,
    /// Bumped on every signal; never 0 or 1 after wrapping (1.14 `last_event_age`).
    age: u64,
    /// Waiters (by id) currently registered on this event.
    waiters: Vec<u64>,
    memory_exception: kfd_hsa_memory_exception_data,
    hw_exception: kfd_hsa_hw_exception_data,
}

impl Event {
    fn is_signal_like(&self) -> bool {
        matches!(
            self.event_type,
            KFD_IOC_EVENT_SIGNAL | KFD_IOC_EVENT_DEBUG_EVENT
        )
    }
}

#[derive(Debug, Default)]
struct Waiter {
    /// Per waited event (by position in the request): activated.
    activated: Vec<bool>,
    /// An event this waiter waits on was destroyed.
    failed: bool,
}

#[derive(Debug, Default)]
struct State {
    page: Option<EventPage>,
    /// Bytes of the page user space can see (`signal_mapped_size`).
    mapped_size: usize,
    /// Signal events allocated, counting the reserved id 0.
    signal_event_count: usize,
    events: BTreeMap<u32, Event>,
    next_nonsignal: u32,
    waiters: HashMap<u64, Waiter>,
    next_waiter: u64,
}

/// What a `WAIT_EVENTS` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitResult {
    /// All (or any) events signalled: `KFD_IOC_WAIT_RESULT_COMPLETE`.
    Complete,
    /// The timeout passed: `KFD_IOC_WAIT_RESULT_TIMEOUT`.
    Timeout,
}

/// The event table of one process.
#[derive(Debug)]
pub struct EventTable {
    state: Mutex<State>,
    wake: Condvar,
}

impl Default for EventTable {
    fn default() -> Self {
        Self::new()
    }
}

impl EventTable {
    /// An empty table with event id 0 reserved.
    pub fn new() -> Self {
        EventTable {
            state: Mutex::new(State {
                signal_event_count: 1,
                next_nonsignal: FIRST_NONSIGNAL_EVENT_ID,
                ..Default::default()
            }),
            wake: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The event page, if one exists.
    pub fn page(&self) -> Option<EventPage> {
        self.lock().page.clone()
    }

    /// Uses a user buffer as the event page (dGPU path, the first `CREATE_EVENT` with a handle).
    /// `EINVAL` if a page is already set or the buffer is smaller than 4096 slots.
    pub fn set_user_page(&self, mem: Arc<DeviceMemory>, offset: usize, size: usize) -> KResult<()> {
        let mut s = self.lock();
        if s.page.is_some() {
            log::debug!(target: crate::layer::EVENTS, "event page is already set");
            return Err(Errno::EINVAL);
        }
        if size < KFD_SIGNAL_EVENT_PAGE_SIZE as usize {
            return Err(Errno::EINVAL);
        }
        let page = EventPage {
            mem,
            offset,
            kernel_allocated: false,
        };
        page.mem
            .fill(offset, KFD_SIGNAL_EVENT_PAGE_SIZE as usize, 0xFF)
            .ok_or(Errno::EINVAL)?;
        s.mapped_size = size.min(KFD_SIGNAL_EVENT_PAGE_SIZE as usize);
        s.page = Some(page);
        Ok(())
    }

    fn ensure_kernel_page(s: &mut State) -> KResult<()> {
        if s.page.is_none() {
            let mem = DeviceMemory::new("event page", KFD_SIGNAL_EVENT_PAGE_SIZE)
                .map_err(|_| Errno::ENOMEM)?;
            mem.fill(0, mem.len(), 0xFF).ok_or(Errno::ENOMEM)?;
            s.page = Some(EventPage {
                mem: Arc::new(mem),
                offset: 0,
                kernel_allocated: true,
            });
            s.mapped_size = KERNEL_PAGE_DEFAULT_SLOTS * 8;
        }
        Ok(())
    }

    /// `mmap(KFD_MMAP_TYPE_EVENTS)`: maps the kernel-allocated page; the mapped size becomes the
    /// number of usable slots. `EINVAL` above 32 KiB or before any page exists.
    pub fn mmap_page(&self, len: u64) -> KResult<(Arc<DeviceMemory>, u64)> {
        let mut s = self.lock();
        if len > KFD_SIGNAL_EVENT_PAGE_SIZE || len == 0 {
            return Err(Errno::EINVAL);
        }
        let page = s.page.clone().ok_or(Errno::EINVAL)?;
        s.mapped_size = len as usize;
        Ok((page.mem, page.offset as u64))
    }

    /// `CREATE_EVENT`. Returns (event id, trigger data, page offset, slot index).
    pub fn create(&self, event_type: u32, auto_reset: bool) -> KResult<(u32, u32, u64, u32)> {
        let mut s = self.lock();
        let event = Event {
            event_type,
            auto_reset,
            signaled: false,
            age: 1,
            waiters: Vec::new(),
            memory_exception: Default::default(),
            hw_exception: Default::default(),
        };
        if event.is_signal_like() {
            Self::ensure_kernel_page(&mut s)?;
            if s.signal_event_count >= s.mapped_size / 8 {
                log::debug!(target: crate::layer::EVENTS, "signal event slots exhausted");
                return Err(Errno::ENOSPC);
            }
            let limit = (s.mapped_size / 8) as u32;
            let id = (1..limit)
                .find(|id| !s.events.contains_key(id))
                .ok_or(Errno::ENOSPC)?;
            if let Some(page) = &s.page {
                page.set_slot(id, KFD_UNSIGNALED_EVENT_SLOT);
            }
            s.events.insert(id, event);
            s.signal_event_count += 1;
            Ok((id, id, KFD_MMAP_TYPE_EVENTS, id))
        } else {
            let start = s.next_nonsignal;
            let id = (start..=LAST_NONSIGNAL_EVENT_ID)
                .chain(FIRST_NONSIGNAL_EVENT_ID..start)
                .find(|id| !s.events.contains_key(id))
                .ok_or(Errno::ENOMEM)?;
            s.next_nonsignal = if id == LAST_NONSIGNAL_EVENT_ID {
                FIRST_NONSIGNAL_EVENT_ID
            } else {
                id + 1
            };
            s.events.insert(id, event);
            Ok((id, 0, 0, 0))
        }
    }

    /// `DESTROY_EVENT`: waiters on it fail.
    pub fn destroy(&self, id: u32) -> KResult<()> {
        let mut s = self.lock();
        let ev = s.events.remove(&id).ok_or(Errno::EINVAL)?;
        if ev.is_signal_like() {
            s.signal_event_count -= 1;
        }
        for w in ev.waiters {
            if let Some(waiter) = s.waiters.get_mut(&w) {
                waiter.failed = true;
            }
        }
        drop(s);
        self.wake.notify_all();
        Ok(())
    }

    /// `set_event`: the event becomes signalled unless it is auto-reset and someone is waiting
    /// (the waiters consume it), its age moves on, and every registered waiter — which watches
    /// the age — is activated.
    fn set_locked(s: &mut State, id: u32) {
        let Some(ev) = s.events.get_mut(&id) else {
            return;
        };
        ev.signaled = !ev.auto_reset || ev.waiters.is_empty();
        ev.age = match ev.age.wrapping_add(1) {
            0 => 2,
            a => a,
        };
    }

    /// `SET_EVENT`: only signal events can be set from the CPU.
    pub fn set(&self, id: u32) -> KResult<()> {
        let mut s = self.lock();
        match s.events.get(&id) {
            Some(ev) if ev.event_type == KFD_IOC_EVENT_SIGNAL => {}
            _ => return Err(Errno::EINVAL),
        }
        Self::set_locked(&mut s, id);
        drop(s);
        self.wake.notify_all();
        Ok(())
    }

    /// `RESET_EVENT`.
    pub fn reset(&self, id: u32) -> KResult<()> {
        let mut s = self.lock();
        match s.events.get_mut(&id) {
            Some(ev) if ev.event_type == KFD_IOC_EVENT_SIGNAL => {
                ev.signaled = false;
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    /// No events.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether event `id` is currently signalled (for tests and tracing).
    pub fn is_signaled(&self, id: u32) -> Option<bool> {
        self.lock().events.get(&id).map(|e| e.signaled)
    }

    /// The interrupt path (`kfd_signal_event_interrupt`): a queue raised an interrupt carrying
    /// `partial_id`, of which `valid_bits` are meaningful. Returns the ids signalled.
    pub fn signal_interrupt(&self, partial_id: u32, valid_bits: u32) -> Vec<u32> {
        let mut s = self.lock();
        let Some(page) = s.page.clone() else {
            return Vec::new();
        };
        let mut fired = Vec::new();
        let slots = (s.mapped_size / 8) as u32;
        let is_pending = |s: &State, id: u32| {
            id < slots
                && s.events.get(&id).is_some_and(|e| e.is_signal_like())
                && page.slot(id) != KFD_UNSIGNALED_EVENT_SLOT
        };
        let partial_id = if valid_bits < 32 {
            partial_id & ((1u32 << valid_bits) - 1)
        } else {
            partial_id
        };
        if valid_bits >= 12 {
            // The context id can name every slot: look at that one only.
            if is_pending(&s, partial_id) {
                fired.push(partial_id);
            }
        } else if valid_bits > 0 {
            // Too few bits: every id that matches them is a candidate.
            let step = 1u64 << valid_bits;
            let mut id = u64::from(partial_id);
            while id < u64::from(slots) {
                if is_pending(&s, id as u32) {
                    fired.push(id as u32);
                }
                id += step;
            }
        }
        if fired.is_empty() {
            // Fallback: scan every signal event whose slot was written.
            let ids: Vec<u32> = s.events.keys().copied().collect();
            fired.extend(ids.into_iter().filter(|&id| is_pending(&s, id)));
        }
        for &id in &fired {
            page.set_slot(id, KFD_UNSIGNALED_EVENT_SLOT);
            Self::set_locked(&mut s, id);
        }
        drop(s);
        if !fired.is_empty() {
            log::debug!(target: crate::layer::EVENTS, "interrupt ctxid {partial_id:#x} ({valid_bits} bits) signals {fired:?}");
            self.wake.notify_all();
        }
        fired
    }

    /// A GPU VM fault of this process: every memory event gets the data and is set.
    pub fn signal_memory_exception(&self, data: kfd_hsa_memory_exception_data) -> usize {
        self.signal_typed(KFD_IOC_EVENT_MEMORY, |ev| ev.memory_exception = data)
    }

    /// A GPU reset or hang: every hardware-exception event gets the data and is set.
    pub fn signal_hw_exception(&self, data: kfd_hsa_hw_exception_data) -> usize {
        self.signal_typed(KFD_IOC_EVENT_HW_EXCEPTION, |ev| ev.hw_exception = data)
    }

    /// A queue of this process stopped with an error: every QUEUE_EVENT event is set.
    pub fn signal_queue_error(&self) -> usize {
        self.signal_typed(KFD_IOC_EVENT_QUEUE_EVENT, |_| {})
    }

    fn signal_typed(&self, event_type: u32, mut fill: impl FnMut(&mut Event)) -> usize {
        let mut s = self.lock();
        let ids: Vec<u32> = s
            .events
            .iter()
            .filter(|(_, e)| e.event_type == event_type)
            .map(|(&id, _)| id)
            .collect();
        for &id in &ids {
            if let Some(ev) = s.events.get_mut(&id) {
                fill(ev);
            }
            Self::set_locked(&mut s, id);
        }
        drop(s);
        self.wake.notify_all();
        ids.len()
    }

    /// Threads blocked in `WAIT_EVENTS` on this table right now: a waiter counts from the moment
    /// it registered on its events (a `SET_EVENT` after that wakes it) until it returns.
    pub fn waiting(&self) -> usize {
        self.lock().waiters.len()
    }

    /// `WAIT_EVENTS` on the `kfd_event_data` array at `events_ptr`.
    pub fn wait(
        &self,
        user: &dyn UserAccess,
        events_ptr: u64,
        num_events: u32,
        wait_for_all: bool,
        timeout_ms: u32,
    ) -> KResult<WaitResult> {
        let mut data: Vec<kfd_event_data> = user.read_array(events_ptr, num_events as usize)?;
        // No events: "all of none" is complete at once, whatever `wait_for_all` says (the
        // kernel counts 0 activated of 0).
        if data.is_empty() {
            return Ok(WaitResult::Complete);
        }
        let deadline = match timeout_ms {
            u32::MAX => None,
            t => Some(Instant::now() + Duration::from_millis(u64::from(t.min(0x7FFF_FFFF)))),
        };
        let mut s = self.lock();
        // Register a waiter on every event, activating it at once where the event is signalled
        // (consuming auto-reset events) or its age moved past the caller's.
        for d in &data {
            if !s.events.contains_key(&d.event_id) {
                return Err(Errno::EINVAL);
            }
        }
        let wid = s.next_waiter;
        s.next_waiter += 1;
        let mut activated = vec![false; data.len()];
        for (i, d) in data.iter().enumerate() {
            let Some(ev) = s.events.get_mut(&d.event_id) else {
                continue;
            };
            let last_age = d.data.signal_event_data().last_event_age;
            if ev.event_type == KFD_IOC_EVENT_SIGNAL && last_age != 0 && last_age != ev.age {
                activated[i] = true;
            } else if ev.signaled {
                activated[i] = true;
                if ev.auto_reset {
                    ev.signaled = false;
                }
            }
            ev.waiters.push(wid);
        }
        s.waiters.insert(
            wid,
            Waiter {
                activated,
                failed: false,
            },
        );
        let mut last_ages: Vec<u64> = data
            .iter()
            .map(|d| s.events.get(&d.event_id).map_or(0, |e| e.age))
            .collect();

        let outcome = loop {
            // Activations since registration: an event's age moved.
            let waiter_failed = s.waiters.get(&wid).is_some_and(|w| w.failed);
            let mut act = s
                .waiters
                .get(&wid)
                .map(|w| w.activated.clone())
                .unwrap_or_default();
            for (i, d) in data.iter().enumerate() {
                if let Some(ev) = s.events.get_mut(&d.event_id) {
                    // `set_locked` left an auto-reset event unsignalled: we consume it.
                    if ev.age != last_ages[i] {
                        act[i] = true;
                    }
                    last_ages[i] = ev.age;
                }
            }
            if let Some(w) = s.waiters.get_mut(&wid) {
                w.activated.clone_from(&act);
            }
            if waiter_failed {
                break Err(Errno::EIO);
            }
            let done = if wait_for_all {
                act.iter().all(|&a| a)
            } else {
                act.iter().any(|&a| a)
            };
            if done {
                break Ok(WaitResult::Complete);
            }
            let now = Instant::now();
            match deadline {
                Some(d) if now >= d => break Ok(WaitResult::Timeout),
                Some(d) => {
                    s = self
                        .wake
                        .wait_timeout(s, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                None => s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner()),
            }
        };

        // Unregister, and copy event data out for the activated events.
        let act = s
            .waiters
            .remove(&wid)
            .map(|w| w.activated)
            .unwrap_or_default();
        for (i, d) in data.iter_mut().enumerate() {
            let Some(ev) = s.events.get_mut(&d.event_id) else {
                continue;
            };
            ev.waiters.retain(|&w| w != wid);
            if !act.get(i).copied().unwrap_or(false) {
                continue;
            }
            match ev.event_type {
                KFD_IOC_EVENT_MEMORY => d.data.set_memory_exception_data(ev.memory_exception),
                KFD_IOC_EVENT_HW_EXCEPTION => d.data.set_hw_exception_data(ev.hw_exception),
                KFD_IOC_EVENT_SIGNAL if d.data.signal_event_data().last_event_age != 0 => {
                    d.data.set_signal_event_data(kfd_hsa_signal_event_data {
                        last_event_age: ev.age,
                    })
                }
                _ => {}
            }
        }
        drop(s);
        if outcome.is_ok() {
            user.write_array(events_ptr, &data)?;
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::ClientMemory;
    use std::thread;

    fn wait(
        t: &EventTable,
        ids: &[u32],
        all: bool,
        timeout: u32,
    ) -> (KResult<WaitResult>, Vec<kfd_event_data>) {
        let mut data: Vec<kfd_event_data> = ids
            .iter()
            .map(|&event_id| kfd_event_data {
                event_id,
                ..Default::default()
            })
            .collect();
        let r = t.wait(
            &ClientMemory,
            data.as_mut_ptr() as u64,
            ids.len() as u32,
            all,
            timeout,
        );
        (r, data)
    }

    /// Blocks until `n` threads wait on `t` (at most 5 s, then fails the test): a setter that
    /// only sleeps might run before the waiter is inside the wait, and test nothing.
    fn until_waiting(t: &EventTable, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while t.waiting() < n {
            assert!(Instant::now() < deadline, "no thread entered WAIT_EVENTS");
            thread::yield_now();
        }
    }

    #[test]
    fn ids_start_at_one_and_the_kernel_page_has_255_free_slots() {
        let t = EventTable::new();
        let (id, trigger, offset, slot) = t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap();
        assert_eq!((id, trigger, offset, slot), (1, 1, KFD_MMAP_TYPE_EVENTS, 1));
        for expect in 2..256 {
            assert_eq!(t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap().0, expect);
        }
        assert_eq!(t.create(KFD_IOC_EVENT_SIGNAL, false), Err(Errno::ENOSPC));
        // Mapping the whole page makes all 4096 slots usable.
        t.mmap_page(KFD_SIGNAL_EVENT_PAGE_SIZE).unwrap();
        assert_eq!(t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap().0, 256);
        let (mem_id, ..) = t.create(KFD_IOC_EVENT_MEMORY, false).unwrap();
        assert_eq!(mem_id, FIRST_NONSIGNAL_EVENT_ID);
    }

    #[test]
    fn a_user_page_must_hold_4096_slots_and_be_set_once() {
        let t = EventTable::new();
        let mem = Arc::new(DeviceMemory::new("ev", 65536).unwrap());
        assert_eq!(t.set_user_page(mem.clone(), 0, 16384), Err(Errno::EINVAL));
        t.set_user_page(mem.clone(), 0, 65536).unwrap();
        assert_eq!(
            mem.load_u64(8 * 4095),
            Some(u64::MAX),
            "slots start unsignalled"
        );
        assert_eq!(t.set_user_page(mem, 0, 65536), Err(Errno::EINVAL));
    }

    #[test]
    fn set_wait_any_all_and_timeout() {
        let t = EventTable::new();
        let a = t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap().0;
        let b = t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap().0;
        assert_eq!(wait(&t, &[a, b], false, 0).0, Ok(WaitResult::Timeout));
        t.set(a).unwrap();
        assert_eq!(wait(&t, &[a, b], false, 0).0, Ok(WaitResult::Complete));
        assert_eq!(wait(&t, &[a, b], true, 10).0, Ok(WaitResult::Timeout));
        t.set(b).unwrap();
        assert_eq!(wait(&t, &[a, b], true, 0).0, Ok(WaitResult::Complete));
        // Manual reset: still signalled until RESET_EVENT.
        assert_eq!(t.is_signaled(a), Some(true));
        t.reset(a).unwrap();
        assert_eq!(wait(&t, &[a], true, 0).0, Ok(WaitResult::Timeout));
        assert_eq!(wait(&t, &[999], true, 0).0, Err(Errno::EINVAL));
    }

    #[test]
    fn auto_reset_is_consumed_by_one_wait() {
        let t = EventTable::new();
        let a = t.create(KFD_IOC_EVENT_SIGNAL, true).unwrap().0;
        t.set(a).unwrap();
        assert_eq!(wait(&t, &[a], true, 0).0, Ok(WaitResult::Complete));
        assert_eq!(wait(&t, &[a], true, 0).0, Ok(WaitResult::Timeout));
    }

    #[test]
    fn a_waiter_is_woken_by_another_thread() {
        let t = Arc::new(EventTable::new());
        let a = t.create(KFD_IOC_EVENT_SIGNAL, true).unwrap().0;
        let t2 = t.clone();
        let setter = thread::spawn(move || {
            until_waiting(&t2, 1);
            t2.set(a).unwrap();
        });
        assert_eq!(wait(&t, &[a], true, 5000).0, Ok(WaitResult::Complete));
        setter.join().unwrap();
        // The waiter consumed the auto-reset signal.
        assert_eq!(t.is_signaled(a), Some(false));
    }

    #[test]
    fn destroying_a_waited_event_fails_the_wait() {
        let t = Arc::new(EventTable::new());
        let a = t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap().0;
        let t2 = t.clone();
        let killer = thread::spawn(move || {
            until_waiting(&t2, 1);
            t2.destroy(a).unwrap();
        });
        assert_eq!(wait(&t, &[a], true, 5000).0, Err(Errno::EIO));
        killer.join().unwrap();
        assert_eq!(t.destroy(a), Err(Errno::EINVAL));
    }

    #[test]
    fn interrupts_need_the_slot_written_and_fall_back_to_a_scan() {
        let t = EventTable::new();
        let a = t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap().0;
        let b = t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap().0;
        let page = t.page().unwrap();
        // A context id without a slot write signals nothing.
        assert!(t.signal_interrupt(a, 32).is_empty());
        // The CP path: slot written, ctxid = id, 32 valid bits.
        page.set_slot(a, u64::from(a));
        assert_eq!(t.signal_interrupt(a, 32), vec![a]);
        assert_eq!(page.slot(a), u64::MAX, "acknowledged");
        // A wrong context id still finds the written slot by scanning.
        page.set_slot(b, 7);
        assert_eq!(t.signal_interrupt(0, 32), vec![b]);
        // The SDMA path: 28 valid bits.
        page.set_slot(b, 1);
        assert_eq!(t.signal_interrupt(b | 0xF000_0000, 28), vec![b]);
        assert_eq!(t.is_signaled(b), Some(true));
        // Fewer than 12 valid bits: every id matching them is looked at (with 8 bits, ids 1
        // and 257 alias; only the written slot fires).
        t.mmap_page(KFD_SIGNAL_EVENT_PAGE_SIZE).unwrap();
        let ids: Vec<u32> = (0..300)
            .map(|_| t.create(KFD_IOC_EVENT_SIGNAL, false).unwrap().0)
            .collect();
        assert!(ids.contains(&257));
        page.set_slot(257, 1);
        assert_eq!(t.signal_interrupt(1, 8), vec![257]);
    }

    #[test]
    fn exception_events_carry_their_data_to_the_waiter() {
        let t = EventTable::new();
        let m = t.create(KFD_IOC_EVENT_MEMORY, false).unwrap().0;
        let data = kfd_hsa_memory_exception_data {
            va: 0xdead_0000,
            gpu_id: 0x4f3a,
            ..Default::default()
        };
        assert_eq!(t.signal_memory_exception(data), 1);
        let (r, out) = wait(&t, &[m], true, 0);
        assert_eq!(r, Ok(WaitResult::Complete));
        assert_eq!(out[0].data.memory_exception_data().va, 0xdead_0000);
        assert_eq!(out[0].data.memory_exception_data().gpu_id, 0x4f3a);
    }

    #[test]
    fn event_age_lets_a_waiter_catch_a_signal_it_missed() {
        let t = EventTable::new();
        let a = t.create(KFD_IOC_EVENT_SIGNAL, true).unwrap().0;
        let mut d = [kfd_event_data {
            event_id: a,
            ..Default::default()
        }];
        d[0].data
            .set_signal_event_data(kfd_hsa_signal_event_data { last_event_age: 1 });
        t.set(a).unwrap(); // age 2
        t.reset(a).unwrap();
        let r = t.wait(&ClientMemory, d.as_mut_ptr() as u64, 1, true, 0);
        assert_eq!(r, Ok(WaitResult::Complete));
        assert_eq!(d[0].data.signal_event_data().last_event_age, 2);
    }
}
