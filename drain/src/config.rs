//! How a channel is built: buffer geometry, trigger, wait strategy, loss policy, engine.

use crate::error::{Error, Result};
use crate::layout::{MAX_SLOT_BYTES, MIN_SLOTS, SLOT_ALIGN};
use std::time::Duration;

/// When slots are drained. Every trigger drains a slot as soon as it is full — the drain
/// queue is always pre-loaded with a program per slot — and the periodic and kernel-end
/// triggers add points where a partly filled slot is closed and drained too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Only full slots drain (and explicit [`crate::Channel::flush`] calls). The engine waits
    /// on each slot's commit counter; the CPU only tops up the program ring.
    OnFull,
    /// Additionally, every period the reading side closes the slot being filled if it holds
    /// anything, so records reach the CPU at most about one period after their commit.
    Periodic(Duration),
    /// Additionally, a second queue of the channel's engine kind waits for application
    /// completion signals ([`crate::Channel::drain_at`]); when one reaches its value the queue
    /// publishes it and raises the channel's interrupt, and the reading side closes the slot
    /// being filled (a CPU compare-and-swap: the engines have no atomics), which then drains.
    /// A tool gets each kernel's records without adding work to the application's queue and
    /// without a CPU watching the signal.
    KernelEnd,
}

/// How the reading side waits for drained slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaitStrategy {
    /// Sleep in `WAIT_EVENTS` on the channel's event, which every drained slot signals
    /// (FENCE + TRAP or RELEASE_MEM with an interrupt). Costs no CPU while idle.
    #[default]
    Event,
    /// Spin on the fence the drain engine writes (yielding between checks). Lowest latency;
    /// costs a CPU while waiting. The drain programs raise no interrupts in this mode.
    Poll,
}

/// What a producer does when the slot it needs has not been drained yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossPolicy {
    /// Wait until it is drained: nothing is lost, a slow consumer slows producers down.
    #[default]
    Lossless,
    /// Drop the record and count it (records and bytes, in the buffer header and in
    /// [`crate::Stats`]); producers never wait.
    Drop,
}

/// Which engine runs the drain programs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DrainEngine {
    /// An SDMA queue: POLL_REGMEM, COPY_LINEAR (through an IB), WRITE, FENCE, TRAP. Leaves the
    /// compute pipes to the application.
    #[default]
    Sdma,
    /// A PM4 compute queue: WAIT_REG_MEM, DMA_DATA (through an IB), WRITE_DATA, RELEASE_MEM.
    Pm4,
}

/// How to build a [`crate::Channel`].
///
/// ```
/// use drain::{ChannelConfig, LossPolicy, Trigger, WaitStrategy};
/// use std::time::Duration;
/// let c = ChannelConfig::new(1 << 20, 8)
///     .trigger(Trigger::Periodic(Duration::from_millis(5)))
///     .wait(WaitStrategy::Poll)
///     .loss(LossPolicy::Drop);
/// assert!(c.validate().is_ok());
/// let e = ChannelConfig::new(1000, 8).validate().unwrap_err();
/// assert!(e.to_string().contains("multiple of 256"), "{e}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Slot size S in bytes: a multiple of 256, at most 1 GiB.
    pub slot_size: u32,
    /// Device slots N (at least 2).
    pub slot_count: u32,
    /// Host slots H: how many drained slots may wait for the reader (at least 2). Default N.
    pub host_slots: u32,
    /// When slots drain.
    pub trigger: Trigger,
    /// How the reader waits.
    pub wait: WaitStrategy,
    /// What producers do when the buffer is full.
    pub loss: LossPolicy,
    /// Which engine drains.
    pub engine: DrainEngine,
    /// How long a blocking read waits for data before it fails with a timeout.
    pub read_timeout: Duration,
    /// How long a lossless host producer waits for a free slot before it fails.
    pub producer_timeout: Duration,
    /// Whether device producers announce every slot they fill with an `s_sendmsg` interrupt
    /// (the channel creates an event for it and names it in the buffer header; see
    /// [`crate::Channel::slot_full_event`]). Off by default: the drain queue needs no
    /// announcement, it waits on the slot's commit counter.
    pub notify_full: bool,
}

impl ChannelConfig {
    /// `slot_count` slots of `slot_size` bytes, as many host slots, on-full trigger, event
    /// waits, lossless, SDMA; 10 s read and producer timeouts.
    pub fn new(slot_size: u32, slot_count: u32) -> Self {
        ChannelConfig {
            slot_size,
            slot_count,
            host_slots: slot_count,
            trigger: Trigger::OnFull,
            wait: WaitStrategy::Event,
            loss: LossPolicy::Lossless,
            engine: DrainEngine::Sdma,
            read_timeout: Duration::from_secs(10),
            producer_timeout: Duration::from_secs(10),
            notify_full: false,
        }
    }

    /// Asks device producers for an `s_sendmsg` interrupt per filled slot.
    pub fn notify_full(mut self, notify: bool) -> Self {
        self.notify_full = notify;
        self
    }

    /// Sets the trigger.
    pub fn trigger(mut self, trigger: Trigger) -> Self {
        self.trigger = trigger;
        self
    }

    /// Sets the wait strategy.
    pub fn wait(mut self, wait: WaitStrategy) -> Self {
        self.wait = wait;
        self
    }

    /// Sets the loss policy.
    pub fn loss(mut self, loss: LossPolicy) -> Self {
        self.loss = loss;
        self
    }

    /// Sets the drain engine.
    pub fn engine(mut self, engine: DrainEngine) -> Self {
        self.engine = engine;
        self
    }

    /// Sets the number of host slots.
    pub fn host_slots(mut self, host_slots: u32) -> Self {
        self.host_slots = host_slots;
        self
    }

    /// Sets the read timeout.
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Sets the producer timeout.
    pub fn producer_timeout(mut self, timeout: Duration) -> Self {
        self.producer_timeout = timeout;
        self
    }

    /// Checks the configuration; every refusal says what to change.
    pub fn validate(&self) -> Result<()> {
        let s = self.slot_size;
        if s == 0 {
            return Err(Error::config(
                "slot size 0: a slot needs room for its 64-byte header and records; use a multiple of 256 bytes (e.g. 65536)",
            ));
        }
        if s % SLOT_ALIGN != 0 {
            return Err(Error::config(format!(
                "slot size {s} is not a multiple of {SLOT_ALIGN} bytes (try {})",
                (s / SLOT_ALIGN + 1) * SLOT_ALIGN
            )));
        }
        if s > MAX_SLOT_BYTES {
            return Err(Error::config(format!(
                "slot size {s} is above the largest slot of {MAX_SLOT_BYTES} bytes (1 GiB)"
            )));
        }
        if self.slot_count < MIN_SLOTS {
            return Err(Error::config(format!(
                "{} slot(s) are too few: at least {MIN_SLOTS}, one being filled while another drains",
                self.slot_count
            )));
        }
        if self.host_slots < MIN_SLOTS {
            return Err(Error::config(format!(
                "{} host slot(s) are too few: at least {MIN_SLOTS}, one being read while another is drained into",
                self.host_slots
            )));
        }
        // One drain program per host slot stays queued; keep the program ring and the
        // per-host-slot timestamps within bounds.
        if self.host_slots > MAX_HOST_SLOTS {
            return Err(Error::config(format!(
                "{} host slots are more than the {MAX_HOST_SLOTS} a channel supports",
                self.host_slots
            )));
        }
        let total = |n: u32| u64::from(n).checked_mul(u64::from(s));
        for (what, n) in [("device", self.slot_count), ("host", self.host_slots)] {
            match total(n) {
                Some(b) if b <= MAX_BUFFER_BYTES => {}
                _ => {
                    return Err(Error::config(format!(
                        "{n} {what} slots of {s} bytes exceed {} GiB",
                        MAX_BUFFER_BYTES >> 30
                    )))
                }
            }
        }
        if let Trigger::Periodic(p) = self.trigger {
            if p < Duration::from_micros(100) {
                return Err(Error::config(format!(
                    "a flush period of {p:?} is shorter than 100 µs; the reading side could do nothing but flush"
                )));
            }
        }
        Ok(())
    }
}

/// The most host slots a channel takes.
pub const MAX_HOST_SLOTS: u32 = 1024;

/// The largest device buffer or host ring (64 GiB).
pub const MAX_BUFFER_BYTES: u64 = 64 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_use_is_refused_with_a_reason() {
        let e = ChannelConfig::new(0, 4).validate().unwrap_err();
        assert!(
            matches!(e, Error::Config(ref m) if m.contains("slot size 0")),
            "{e}"
        );
        let e = ChannelConfig::new(4100, 4).validate().unwrap_err();
        assert!(
            e.to_string()
                .contains("not a multiple of 256 bytes (try 4352)"),
            "{e}"
        );
        let e = ChannelConfig::new(4096, 1).validate().unwrap_err();
        assert!(e.to_string().contains("too few"), "{e}");
        let e = ChannelConfig::new(4096, 0).validate().unwrap_err();
        assert!(e.to_string().contains("0 slot(s) are too few"), "{e}");
        let e = ChannelConfig::new(4096, 4)
            .host_slots(1)
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("host slot"), "{e}");
        let e = ChannelConfig::new(1 << 30, 128).validate().unwrap_err();
        assert!(e.to_string().contains("exceed"), "{e}");
        let e = ChannelConfig::new(4096, 4)
            .trigger(Trigger::Periodic(Duration::from_micros(10)))
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("period"), "{e}");
        assert!(ChannelConfig::new(256, 2).validate().is_ok());
        assert!(ChannelConfig::new(1 << 30, 2).validate().is_ok());
    }
}
