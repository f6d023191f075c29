//! # drain — trace buffers from GPU to CPU over the tool's own raw queue
//!
//! A profiler or tracer instruments GPU kernels to write records into a GPU-side buffer, and
//! must get those bytes to the CPU *while the kernels run* — without serialising the
//! application's kernels and without burning a CPU. A [`Channel`] does that with a raw queue of
//! its own (SDMA by default, a PM4 compute queue as the alternative), pre-loaded with one
//! small program per buffer slot: *wait until the slot is full, copy it to host memory, reset
//! it, publish a fence, raise an interrupt*. The engine drains slot after slot with no CPU
//! action per slot; the CPU only tops the program ring up as the reader frees host slots.
//!
//! ```
//! # fn main() -> Result<(), drain::Error> {
//! use drain::{Channel, ChannelConfig, Trigger};
//! use std::time::Duration;
//!
//! // The in-process model of the driver and GPU (no GPU needed); `Kfd::open()` takes a
//! // real /dev/kfd when there is one.
//! let kfd = thunk::Kfd::open_with(thunk::OpenOptions::model(thunk::Preset::Gfx900, 1))?;
//! let gpu = kfd.gpu(0).expect("a GPU");
//!
//! // 4 slots of 64 KiB; partly filled slots drain every 2 ms as well.
//! let config = ChannelConfig::new(64 << 10, 4).trigger(Trigger::Periodic(Duration::from_millis(2)));
//! let mut channel = Channel::new(&gpu, config)?;
//!
//! // A producer on a CPU thread (an instrumented kernel does the same with GPU atomics).
//! let mut producer = channel.host_producer(1);
//! for i in 0..100u32 {
//!     producer.produce(1, &i.to_le_bytes())?;
//! }
//!
//! // Records come back in order, zero-copy from the host ring.
//! let mut seen = 0u32;
//! while seen < 100 {
//!     let chunk = channel.next_chunk(Some(Duration::from_secs(5)))?.expect("drained");
//!     for record in chunk.records() {
//!         let record = record?;
//!         assert_eq!(record.payload, seen.to_le_bytes());
//!         seen += 1;
//!     }
//! }
//! let closed = channel.close()?;
//! assert_eq!(closed.stats.records_produced, 100);
//! # Ok(()) }
//! ```
//!
//! ## The pieces
//!
//! * **The device buffer** ([`layout`], `LAYOUT.md`): a versioned byte layout — a header page
//!   with the cursor and counters, then N slots of S bytes, each a 64-byte header (sequence,
//!   committed bytes, end, flags, closer) and records framed as length + kind + producer +
//!   payload. Producers *reserve* with a compare-and-swap on the cursor, *write* with plain
//!   stores and *commit* with a release add ([`protocol`] has the steps and the memory-ordering
//!   rules for fine- and coarse-grained memory).
//! * **Triggers** ([`Trigger`]): every slot drains as soon as it is full; [`Trigger::Periodic`]
//!   also closes the slot being filled every period, [`Trigger::KernelEnd`] when an
//!   application completion signal reaches a value ([`Channel::drain_at`] — the wait runs on a
//!   queue, not on the application's queue, not on a CPU). [`Channel::flush`] closes on demand.
//! * **The reader**: [`Channel::read`] (and `std::io::Read`) gives the record bytes in order,
//!   [`Channel::next_chunk`] borrows a drained slot from the host ring without a copy, and
//!   [`Chunk::records`] / [`Channel::records`] iterate records. Waits sleep on the channel's
//!   event ([`WaitStrategy::Event`], the default) or spin on the drain fence
//!   ([`WaitStrategy::Poll`], lowest latency).
//! * **Backpressure and loss** ([`LossPolicy`]): lossless producers wait for a drained slot;
//!   drop-mode producers drop and count, never silently. [`Channel::stats`] reports bytes
//!   produced, drained, dropped, slots in flight and drain-latency percentiles.
//! * **Kernels as producers** ([`device`]): `drain/device/producer.cl`, a library of device
//!   functions (reserve, commit; `s_sleep` while lossless, counted drops, an optional
//!   `s_sendmsg` per filled slot) built as its own code object and linked into an
//!   application's executable by the loader; [`Channel::attach`] points it at the buffer.
//!   [`ProducerKind::Kernel`] runs an instrumented kernel in a [`run`] session.
//! * **Producers without shaders**: [`HostProducer`] (a CPU thread, valid on shared-memory
//!   devices and the model) and [`Pm4Producer`] (PM4 programs writing records with
//!   WRITE_DATA/DMA_DATA and marking slots full). Both follow the protocol a kernel follows.
//! * **Sessions** ([`run`]): channel + producer thread + verifying reader + progress, the hook
//!   for `kfd drain`; [`synth`] makes records that carry sequence numbers and checksums.
//!
//! | module | holds |
//! |---|---|
//! | [`layout`] | offsets, flags, [`layout::Layout`], record framing and parsing |
//! | [`protocol`] | the producer protocol and memory-ordering rules (docs) |
//! | `config` | [`ChannelConfig`], [`Trigger`], [`WaitStrategy`], [`LossPolicy`], [`DrainEngine`] |
//! | `channel` | [`Channel`], [`Chunk`], [`RecordStream`], [`SignalWait`], [`Closed`] |
//! | `program` | the drain programs (SDMA and PM4) and the kernel-end watch queue |
//! | `producer`, `pm4_producer` | [`HostProducer`], [`Pm4Producer`] |
//! | `stats` | [`Stats`], [`LatencyHistogram`] |
//! | [`device`] | the device-side producer library, its build, an instrumented kernel |
//! | [`synth`], [`run`](fn@run) | verifiable records, whole sessions |
//!
//! Logging goes through `log` with the target `drain`.
//!
//! ## Safety
//!
//! One `unsafe` block, in the module that lends a drained host slot as a slice for
//! [`Channel::next_chunk`]: zerocopy cannot type device memory it does not own, and the
//! channel's program discipline keeps the engine off a slot while it is lent. Everything read
//! back from the device is checked; corrupt bytes are an [`Error::Corrupt`], never a panic.
#![deny(unsafe_code)]

mod channel;
mod clock;
mod config;
pub mod device;
mod error;
mod host_view;
pub mod layout;
mod pm4_producer;
mod producer;
mod program;
pub mod protocol;
mod run;
mod stats;
pub mod synth;

pub use channel::{control, Channel, Chunk, Closed, Condition, RecordStream, SignalWait};
pub use config::{
    ChannelConfig, DrainEngine, LossPolicy, Trigger, WaitStrategy, MAX_BUFFER_BYTES, MAX_HOST_SLOTS,
};
pub use error::{Error, Result};
pub use layout::{Record, RecordBuf};
pub use pm4_producer::{Completion, Pm4Producer, Pm4Run};
pub use producer::{HostProducer, Produced, RecordSpace};
pub use run::{run, thread_cpu_time, DrainConfig, DrainReport, ProducerKind, Progress, Verify};
pub use stats::{LatencyHistogram, LatencySummary, Stats};
