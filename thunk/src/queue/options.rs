//! How to create a queue: ring size, percentage, priority, SDMA engine, error event.

use super::kind::Kind;
use crate::error::{Error, Result};
use crate::event::Event;
use kfd_sys::*;
use pm4::ring::AQL_PACKET_BYTES;

/// Default ring size: 64 KiB.
pub const DEFAULT_RING_SIZE: u32 = 64 << 10;

/// A queue priority, 0 (lowest) to 15 (highest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueuePriority(u8);

impl QueuePriority {
    /// HSA `MINIMUM` (−3).
    pub const MINIMUM: QueuePriority = QueuePriority(0);
    /// HSA `LOW` (−2).
    pub const LOW: QueuePriority = QueuePriority(3);
    /// HSA `BELOW_NORMAL` (−1).
    pub const BELOW_NORMAL: QueuePriority = QueuePriority(5);
    /// HSA `NORMAL` (0): what libhsakmt uses by default.
    pub const NORMAL: QueuePriority = QueuePriority(7);
    /// HSA `ABOVE_NORMAL` (+1).
    pub const ABOVE_NORMAL: QueuePriority = QueuePriority(9);
    /// HSA `HIGH` (+2).
    pub const HIGH: QueuePriority = QueuePriority(11);
    /// HSA `MAXIMUM` (+3).
    pub const MAXIMUM: QueuePriority = QueuePriority(15);

    /// A raw priority (0–15).
    pub fn new(raw: u32) -> Result<Self> {
        u8::try_from(raw)
            .ok()
            .filter(|&p| u32::from(p) <= KFD_MAX_QUEUE_PRIORITY)
            .map(QueuePriority)
            .ok_or_else(|| {
                Error::invalid(
                    "CREATE_QUEUE",
                    format!("queue priority {raw} is above {KFD_MAX_QUEUE_PRIORITY}"),
                )
            })
    }

    /// The raw value.
    pub fn raw(self) -> u32 {
        u32::from(self.0)
    }
}

impl Default for QueuePriority {
    fn default() -> Self {
        QueuePriority::NORMAL
    }
}

/// Which SDMA engine an SDMA queue runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SdmaEngine {
    /// Any PCIe SDMA engine (`KFD_IOC_QUEUE_TYPE_SDMA`).
    #[default]
    Any,
    /// Any xGMI SDMA engine (`KFD_IOC_QUEUE_TYPE_SDMA_XGMI`).
    Xgmi,
    /// This engine (`KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID`, interface 1.17+).
    Id(u32),
}

/// How to create a queue.
#[derive(Clone, Debug)]
pub struct QueueOptions {
    pub(super) ring_size: u32,
    pub(super) percentage: u32,
    pub(super) priority: QueuePriority,
    pub(super) sdma_engine: SdmaEngine,
    pub(super) error_event: Option<u32>,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            ring_size: DEFAULT_RING_SIZE,
            percentage: 100,
            priority: QueuePriority::NORMAL,
            sdma_engine: SdmaEngine::Any,
            error_event: None,
        }
    }
}

impl QueueOptions {
    /// A 64 KiB ring, 100 %, normal priority.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ring size in bytes: a power of two, at least 1024 (the driver's minimum).
    pub fn ring_size(mut self, bytes: u32) -> Self {
        self.ring_size = bytes;
        self
    }

    /// Queue percentage 0–100 (0 creates the queue inactive).
    pub fn percentage(mut self, percentage: u32) -> Self {
        self.percentage = percentage;
        self
    }

    /// Priority.
    pub fn priority(mut self, priority: QueuePriority) -> Self {
        self.priority = priority;
        self
    }

    /// The SDMA engine (SDMA queues only).
    pub fn sdma_engine(mut self, engine: SdmaEngine) -> Self {
        self.sdma_engine = engine;
        self
    }

    /// The event the firmware signals on a queue error (compute queues: written into the
    /// context-save header's `err_event_id`).
    pub fn error_event(mut self, event: &Event) -> Self {
        self.error_event = Some(event.id());
        self
    }

    pub(super) fn validate(&self, kind: Kind) -> Result<()> {
        const OP: &str = "CREATE_QUEUE";
        let r = self.ring_size;
        if !r.is_power_of_two() {
            return Err(Error::invalid(
                OP,
                format!("ring size {r} is not a power of two"),
            ));
        }
        if r < KFD_MIN_QUEUE_RING_SIZE {
            return Err(Error::invalid(
                OP,
                format!(
                    "ring size {r} is below the driver's minimum of {KFD_MIN_QUEUE_RING_SIZE} bytes"
                ),
            ));
        }
        if kind == Kind::Aql && u64::from(r) < 2 * AQL_PACKET_BYTES {
            return Err(Error::invalid(OP, "an AQL ring holds at least two packets"));
        }
        if self.percentage > KFD_MAX_QUEUE_PERCENTAGE {
            return Err(Error::invalid(
                OP,
                format!(
                    "queue percentage {} is above {KFD_MAX_QUEUE_PERCENTAGE}",
                    self.percentage
                ),
            ));
        }
        Ok(())
    }
}
