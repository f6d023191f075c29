//! Events: created by the process, set by the CPU or signalled by a queue, waited on with a
//! timeout (facts §7.5, §8).
//!
//! A signal event owns a slot of the process's event page; a queue signals it by writing the
//! slot (event page address + 8 × slot) and raising an interrupt whose context id is the event
//! id. [`Event::signal_target`] gives exactly those values, and the queues build the packets
//! from them in one call ([`crate::Pm4Queue::push_signal`], [`crate::SdmaQueue::push_signal`]).
//!
//! The event page reaches the process the way the device expects: on a discrete GPU the thunk
//! allocates it (a 32 KiB GTT buffer mapped on every GPU) and hands its handle to the first
//! `CREATE_EVENT`; on an APU the kernel allocates it and the thunk maps it through `/dev/kfd`.

// An ioctl whose argument carries a user address, upholding its contract.
#![allow(unsafe_code)]

use crate::error::{Errno, Error, Result};
use crate::kfd::{lock, Kfd, Session};
use crate::memory::{alloc_raw, free_raw, map_raw, MemoryKind};
use crate::va::{map_kfd_over, Access, VaRange};
use kfd_sys::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The kinds of event (`KFD_IOC_EVENT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// Set by the CPU or signalled by a queue through the event page.
    Signal,
    /// Topology change.
    NodeChange,
    /// Device state change.
    DeviceStateChange,
    /// GPU reset or hang; waiting returns [`EventData::HwException`].
    HwException,
    /// System event.
    SystemEvent,
    /// Debugger event (takes a signal slot).
    DebugEvent,
    /// Profiler event.
    ProfileEvent,
    /// Queue event.
    QueueEvent,
    /// GPU memory fault; waiting returns [`EventData::MemoryException`].
    MemoryException,
}

impl EventKind {
    /// The `KFD_IOC_EVENT_*` value.
    pub fn raw(self) -> u32 {
        match self {
            EventKind::Signal => KFD_IOC_EVENT_SIGNAL,
            EventKind::NodeChange => KFD_IOC_EVENT_NODECHANGE,
            EventKind::DeviceStateChange => KFD_IOC_EVENT_DEVICESTATECHANGE,
            EventKind::HwException => KFD_IOC_EVENT_HW_EXCEPTION,
            EventKind::SystemEvent => KFD_IOC_EVENT_SYSTEM_EVENT,
            EventKind::DebugEvent => KFD_IOC_EVENT_DEBUG_EVENT,
            EventKind::ProfileEvent => KFD_IOC_EVENT_PROFILE_EVENT,
            EventKind::QueueEvent => KFD_IOC_EVENT_QUEUE_EVENT,
            EventKind::MemoryException => KFD_IOC_EVENT_MEMORY,
        }
    }

    /// Whether events of this kind own a slot of the event page.
    pub fn uses_slot(self) -> bool {
        matches!(self, EventKind::Signal | EventKind::DebugEvent)
    }
}

/// A GPU memory fault, as a memory-exception event reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryException {
    /// The faulting GPU virtual address.
    pub va: u64,
    /// The GPU.
    pub gpu_id: u32,
    /// Page not present.
    pub not_present: bool,
    /// Write to a read-only page.
    pub read_only: bool,
    /// Execution of a no-execute page.
    pub no_execute: bool,
    /// The address is not exact.
    pub imprecise: bool,
    /// `KFD_MEM_ERR_*`.
    pub error_type: u32,
}

/// A GPU reset, as a hardware-exception event reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwException {
    /// The GPU.
    pub gpu_id: u32,
    /// `KFD_HW_EXCEPTION_WHOLE_GPU_RESET` or `_PER_ENGINE_RESET`.
    pub reset_type: u32,
    /// `KFD_HW_EXCEPTION_GPU_HANG` or `_ECC`.
    pub reset_cause: u32,
    /// VRAM contents were lost.
    pub memory_lost: bool,
}

/// What `WAIT_EVENTS` reported for one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventData {
    /// A signal event: its age after the wait (interface 1.14+; 0 when not reported).
    Signal {
        /// `last_event_age`.
        age: u64,
    },
    /// A memory exception.
    MemoryException(MemoryException),
    /// A hardware exception.
    HwException(HwException),
    /// Any other kind: no payload.
    None,
}

impl EventData {
    fn decode(kind: EventKind, d: &kfd_event_data) -> EventData {
        match kind {
            EventKind::Signal | EventKind::DebugEvent => EventData::Signal {
                age: d.data.signal_event_data().last_event_age,
            },
            EventKind::MemoryException => {
                let m = d.data.memory_exception_data();
                EventData::MemoryException(MemoryException {
                    va: m.va,
                    gpu_id: m.gpu_id,
                    not_present: m.failure.NotPresent != 0,
                    read_only: m.failure.ReadOnly != 0,
                    no_execute: m.failure.NoExecute != 0,
                    imprecise: m.failure.imprecise != 0,
                    error_type: m.ErrorType,
                })
            }
            EventKind::HwException => {
                let h = d.data.hw_exception_data();
                EventData::HwException(HwException {
                    gpu_id: h.gpu_id,
                    reset_type: h.reset_type,
                    reset_cause: h.reset_cause,
                    memory_lost: h.memory_lost != 0,
                })
            }
            _ => EventData::None,
        }
    }
}

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitStatus {
    /// The event (any of them, or all of them) was signalled.
    Signaled,
    /// The timeout passed first.
    TimedOut,
}

/// Wait for any or for all of several events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Complete when one is signalled.
    Any,
    /// Complete when every one is signalled.
    All,
}

/// The result of [`Kfd::wait_events`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitOutcome {
    /// How the wait ended.
    pub status: WaitStatus,
    /// Per event, in the order given: the data the driver reported.
    pub data: Vec<EventData>,
}

/// What a queue writes and raises to signal an event (facts §8.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalTarget {
    /// GPU address of the event's slot: event page + 8 × slot.
    pub slot_address: u64,
    /// The value to write into the slot (`event_trigger_data`, the event id).
    pub value: u32,
    /// The interrupt context id (the event id).
    pub int_ctxid: u32,
}

/// The process's event page.
#[derive(Debug)]
pub(crate) struct EventPage {
    range: VaRange,
    /// The buffer handle on the user-buffer (dGPU) path (for logs; the driver refuses to free
    /// the event page and releases it with the process).
    #[allow(dead_code)]
    handle: Option<u64>,
}

impl EventPage {
    fn slot_address(&self, slot: u32) -> u64 {
        self.range.addr() + 8 * u64::from(slot)
    }
}

/// An event page a real device keeps across close and re-open in one process.
pub(crate) struct RetainedEventPage;

static RETAINED: Mutex<Option<EventPage>> = Mutex::new(None);

impl RetainedEventPage {
    pub(crate) fn retain(page: EventPage) {
        let mut r = lock(&RETAINED);
        if r.is_none() {
            *r = Some(page);
        }
    }

    fn take() -> Option<EventPage> {
        lock(&RETAINED).take()
    }
}

const SLOTS: u32 = KFD_SIGNAL_EVENT_LIMIT;

/// An event of the process. Dropping it destroys it (`DESTROY_EVENT`).
pub struct Event {
    session: Arc<Session>,
    id: u32,
    kind: EventKind,
    auto_reset: bool,
    trigger: u32,
    slot: Option<u32>,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("auto_reset", &self.auto_reset)
            .field("slot", &self.slot)
            .finish()
    }
}

fn raw_create(
    session: &Session,
    kind: EventKind,
    auto_reset: bool,
    page_handle: u64,
) -> core::result::Result<kfd_ioctl_create_event_args, Errno> {
    let mut a = kfd_ioctl_create_event_args {
        event_page_offset: page_handle,
        event_type: kind.raw(),
        auto_reset: u32::from(auto_reset),
        ..Default::default()
    };
    session.ioctl::<CreateEvent>(&mut a)?;
    Ok(a)
}

fn raw_destroy(session: &Session, id: u32) -> core::result::Result<(), Errno> {
    let mut d = kfd_ioctl_destroy_event_args {
        event_id: id,
        pad: 0,
    };
    session.ioctl::<DestroyEvent>(&mut d).map(drop)
}

/// Creates the event page on the user-buffer path and the first signal event with it.
fn create_with_user_page(
    session: &Session,
    kind: EventKind,
    auto_reset: bool,
) -> Result<(kfd_ioctl_create_event_args, EventPage)> {
    let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT
        | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
        | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
    let buf = alloc_raw(
        session,
        0,
        MemoryKind::Gtt,
        KFD_SIGNAL_EVENT_PAGE_SIZE,
        flags,
        true,
    )?;
    let ids: Vec<u32> = session.gpus.iter().map(|g| g.gpu_id).collect();
    let undo = |e: Error| {
        let _ = map_raw(session, buf.handle, &ids, false);
        let _ = free_raw(session, buf.handle);
        e
    };
    map_raw(session, buf.handle, &ids, true).map_err(undo)?;
    let args = match raw_create(session, kind, auto_reset, buf.handle) {
        Ok(a) => a,
        Err(Errno::EINVAL) => {
            // The process already has an event page: a real device keeps it across close and
            // re-open. Use the one kept from the earlier open, if this process has it.
            let err = Error::ioctl("CREATE_EVENT", Errno::EINVAL, "setting the event page");
            let Some(old) = RetainedEventPage::take() else {
                return Err(undo(err));
            };
            let _ = undo(err);
            let a = raw_create(session, kind, auto_reset, 0).map_err(|e| {
                Error::ioctl("CREATE_EVENT", e, "with the event page of an earlier open")
            })?;
            log::info!(target: "thunk::event", "reusing the event page at {:#x} kept from an earlier open", old.range.addr());
            return Ok((a, old));
        }
        Err(e) => {
            return Err(undo(Error::ioctl(
                "CREATE_EVENT",
                e,
                format_args!("first {kind:?} event, event page buffer {:#x}", buf.handle),
            )))
        }
    };
    log::debug!(target: "thunk::event", "event page: GTT buffer {:#x} at {:#x}, mapped on {} GPU(s)", buf.handle, buf.range.addr(), ids.len());
    Ok((
        args,
        EventPage {
            range: buf.range,
            handle: Some(buf.handle),
        },
    ))
}

/// Creates the first signal event on the kernel-page path and maps the page the kernel made.
fn create_with_kernel_page(
    session: &Session,
    kind: EventKind,
    auto_reset: bool,
) -> Result<(kfd_ioctl_create_event_args, EventPage)> {
    let a = raw_create(session, kind, auto_reset, 0)
        .map_err(|e| Error::ioctl("CREATE_EVENT", e, format_args!("first {kind:?} event")))?;
    let undo = |e: Error| {
        let _ = raw_destroy(session, a.event_id);
        e
    };
    let mut range = VaRange::reserve(KFD_SIGNAL_EVENT_PAGE_SIZE, 4096).map_err(undo)?;
    map_kfd_over(
        session.backend.as_ref(),
        &mut range,
        Access::ReadWrite,
        a.event_page_offset,
    )
    .map_err(|e| {
        undo(Error::new(
            "mmap",
            e,
            format!(
                "cannot map the kernel's event page (offset {:#x})",
                a.event_page_offset
            ),
        ))
    })?;
    log::debug!(target: "thunk::event", "event page: kernel page mapped at {:#x}", range.addr());
    Ok((
        a,
        EventPage {
            range,
            handle: None,
        },
    ))
}

impl Kfd {
    /// Creates an event. Signal events are manual-reset unless `auto_reset` (then a wait
    /// consumes the signal). The first signal event also sets up the event page.
    pub fn create_event(&self, kind: EventKind, auto_reset: bool) -> Result<Event> {
        let session = &self.session;
        let (a, slot) = if kind.uses_slot() {
            let mut page = lock(&session.event_page);
            let a = match &*page {
                Some(_) => raw_create(session, kind, auto_reset, 0)
                    .map_err(|e| Error::ioctl("CREATE_EVENT", e, format_args!("{kind:?} event")))?,
                None => {
                    let (a, p) = if session.user_pages {
                        create_with_user_page(session, kind, auto_reset)?
                    } else {
                        create_with_kernel_page(session, kind, auto_reset)?
                    };
                    *page = Some(p);
                    a
                }
            };
            if a.event_slot_index >= SLOTS {
                let _ = raw_destroy(session, a.event_id);
                return Err(Error::bad_answer(
                    "CREATE_EVENT",
                    format!(
                        "slot {} is outside the {SLOTS}-slot event page",
                        a.event_slot_index
                    ),
                ));
            }
            (a, Some(a.event_slot_index))
        } else {
            let a = raw_create(session, kind, auto_reset, 0)
                .map_err(|e| Error::ioctl("CREATE_EVENT", e, format_args!("{kind:?} event")))?;
            (a, None)
        };
        log::debug!(target: "thunk::event", "created {kind:?} event {} (slot {:?})", a.event_id, slot);
        Ok(Event {
            session: session.clone(),
            id: a.event_id,
            kind,
            auto_reset,
            trigger: a.event_trigger_data,
            slot,
        })
    }

    /// Waits for events; `timeout` `None` waits forever. Every event must belong to this
    /// process.
    pub fn wait_events(
        &self,
        events: &[&Event],
        mode: WaitMode,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome> {
        const OP: &str = "WAIT_EVENTS";
        if events.is_empty() {
            return Err(Error::invalid(OP, "no events to wait for"));
        }
        if let Some(e) = events
            .iter()
            .find(|e| !Arc::ptr_eq(&e.session, &self.session))
        {
            return Err(Error::invalid(
                OP,
                format!("event {} belongs to another process", e.id),
            ));
        }
        let mut data: Vec<kfd_event_data> = events
            .iter()
            .map(|e| kfd_event_data {
                event_id: e.id,
                ..Default::default()
            })
            .collect();
        let status = raw_wait(&self.session, &mut data, mode, timeout)?;
        let data = events
            .iter()
            .zip(&data)
            .map(|(e, d)| EventData::decode(e.kind, d))
            .collect();
        Ok(WaitOutcome { status, data })
    }

    /// Waits until any of `events` is signalled.
    pub fn wait_any(&self, events: &[&Event], timeout: Option<Duration>) -> Result<WaitStatus> {
        Ok(self.wait_events(events, WaitMode::Any, timeout)?.status)
    }

    /// Waits until all of `events` are signalled.
    pub fn wait_all(&self, events: &[&Event], timeout: Option<Duration>) -> Result<WaitStatus> {
        Ok(self.wait_events(events, WaitMode::All, timeout)?.status)
    }
}

/// `WAIT_EVENTS` on `data` (one entry per event, `event_id` set); the driver fills in each
/// entry's event data. Allocates nothing: [`Event::wait`] passes one entry on the stack.
fn raw_wait(
    session: &Session,
    data: &mut [kfd_event_data],
    mode: WaitMode,
    timeout: Option<Duration>,
) -> Result<WaitStatus> {
    const OP: &str = "WAIT_EVENTS";
    let mut a = kfd_ioctl_wait_events_args {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: u32::try_from(data.len()).map_err(|_| Error::invalid(OP, "too many events"))?,
        wait_for_all: u32::from(mode == WaitMode::All),
        timeout: timeout_ms(timeout),
        // What libhsakmt sends: the kernel always writes the result, and an argument the
        // driver leaves unchanged costs a shim or a tracer nothing to copy back.
        wait_result: KFD_IOC_WAIT_RESULT_COMPLETE,
    };
    // SAFETY: `events_ptr` points at `data`, `num_events` entries, alive and not otherwise
    // borrowed until the call returns; the kernel writes only inside it.
    let r = unsafe { session.ioctl_unchecked::<WaitEvents>(&mut a) };
    let ids = || data.iter().map(|d| d.event_id).collect::<Vec<u32>>();
    r.map_err(|e| Error::ioctl(OP, e, format_args!("events {:?}", ids())))?;
    match a.wait_result {
        KFD_IOC_WAIT_RESULT_COMPLETE => Ok(WaitStatus::Signaled),
        KFD_IOC_WAIT_RESULT_TIMEOUT => Ok(WaitStatus::TimedOut),
        other => Err(Error::bad_answer(
            OP,
            format!("events {:?}: wait result {other}", ids()),
        )),
    }
}

/// `WAIT_EVENTS` milliseconds: `None` is infinite (`0xFFFFFFFF`); a non-zero duration under a
/// millisecond rounds up to 1 so it does not become a poll.
fn timeout_ms(timeout: Option<Duration>) -> u32 {
    match timeout {
        None => u32::MAX,
        Some(d) if d.is_zero() => 0,
        Some(d) => {
            let ms = d.as_millis().max(1);
            u32::try_from(ms).unwrap_or(u32::MAX - 1).min(u32::MAX - 1)
        }
    }
}

impl Event {
    /// The event id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The kind.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// Whether a wait consumes the signal.
    pub fn auto_reset(&self) -> bool {
        self.auto_reset
    }

    /// The slot of the event page, for signal and debug events.
    pub fn slot(&self) -> Option<u32> {
        self.slot
    }

    /// `event_trigger_data`: what a queue writes into the slot.
    pub fn trigger_value(&self) -> u32 {
        self.trigger
    }

    /// What a queue writes and raises to signal this event; `None` for events without a slot.
    pub fn signal_target(&self) -> Option<SignalTarget> {
        let slot = self.slot?;
        let page = lock(&self.session.event_page);
        let page = page.as_ref()?;
        Some(SignalTarget {
            slot_address: page.slot_address(slot),
            value: self.trigger,
            int_ctxid: self.id,
        })
    }

    /// The current value of the event's slot (`u64::MAX` while unsignalled; the driver resets
    /// it when it handles the interrupt).
    pub fn slot_value(&self) -> Option<u64> {
        let slot = self.slot?;
        let page = lock(&self.session.event_page);
        page.as_ref()?
            .range
            .atomic_u64(8 * u64::from(slot))
            .ok()
            .map(|a| a.load(std::sync::atomic::Ordering::Acquire))
    }

    /// Signals the event from the CPU (`SET_EVENT`; signal events only).
    pub fn set(&self) -> Result<()> {
        let mut a = kfd_ioctl_set_event_args {
            event_id: self.id,
            pad: 0,
        };
        self.session
            .ioctl::<SetEvent>(&mut a)
            .map_err(|e| Error::ioctl("SET_EVENT", e, format_args!("event {}", self.id)))?;
        Ok(())
    }

    /// Clears the event (`RESET_EVENT`; signal events only).
    pub fn reset(&self) -> Result<()> {
        let mut a = kfd_ioctl_reset_event_args {
            event_id: self.id,
            pad: 0,
        };
        self.session
            .ioctl::<ResetEvent>(&mut a)
            .map_err(|e| Error::ioctl("RESET_EVENT", e, format_args!("event {}", self.id)))?;
        Ok(())
    }

    /// Waits for this event; `None` waits forever.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<WaitStatus> {
        // The common case, without the general path's allocations.
        let mut data = [kfd_event_data {
            event_id: self.id,
            ..Default::default()
        }];
        raw_wait(&self.session, &mut data, WaitMode::Any, timeout)
    }

    /// Waits for this event and returns what the driver reported with it (the fault of a
    /// memory-exception event, the reset of a hardware-exception event); `None` on timeout.
    pub fn wait_data(&self, timeout: Option<Duration>) -> Result<Option<EventData>> {
        let out = self.kfd().wait_events(&[self], WaitMode::Any, timeout)?;
        Ok(match out.status {
            WaitStatus::Signaled => out.data.first().copied(),
            WaitStatus::TimedOut => None,
        })
    }

    fn kfd(&self) -> Kfd {
        Kfd {
            session: self.session.clone(),
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Err(e) = raw_destroy(&self.session, self.id) {
            log::warn!(target: "thunk::event", "destroying event {}: {}", self.id, Error::ioctl("DESTROY_EVENT", e, ""));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_in_milliseconds() {
        assert_eq!(timeout_ms(None), u32::MAX);
        assert_eq!(timeout_ms(Some(Duration::ZERO)), 0);
        assert_eq!(timeout_ms(Some(Duration::from_micros(10))), 1);
        assert_eq!(timeout_ms(Some(Duration::from_millis(250))), 250);
        assert_eq!(
            timeout_ms(Some(Duration::from_secs(u64::MAX))),
            u32::MAX - 1
        );
    }
}
