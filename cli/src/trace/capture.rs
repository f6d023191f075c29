//! The log sink behind `kfd trace`: it keeps every record of the model's layers with its
//! time, and at each record looks at the GPU's memory the way a debugger would — the HIQ
//! ring (new packets since the last look) and every watched MQD in GART (which dwords
//! changed) — so that each change is shown under the layer that made it.
//!
//! Everything it reads is plain GART memory, which needs no lock of the model: the sink is
//! called while the driver or the firmware holds theirs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use kfd_model::KfdNode;
use mqd::{ComputeDescriptor, ComputeMqd, Generation};
use serde::Serialize;

use crate::decode::{self, Engine, Entry};
use crate::logging::RecordSink;
use crate::mqd_fields::{self, FieldChange, FieldValue, Table};
use crate::target::Target;

/// Something the sink saw in GPU memory at a record, or a line that belongs to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Note {
    /// Packets that appeared on the HIQ since the last look (ring-slot offsets).
    HiqPackets {
        /// The new write pointer (dwords, monotonic).
        wptr: u64,
        /// The packets.
        packets: Vec<Entry>,
    },
    /// Packets a client wrote into a user queue (ring offsets).
    Written {
        /// Where.
        what: String,
        /// The packets.
        packets: Vec<Entry>,
    },
    /// A line of the packet manager's runlist IB listing.
    RunlistLine {
        /// The listing line as the packet manager logged it.
        line: String,
    },
    /// An MQD that appeared: its non-zero dwords.
    MqdInit {
        /// GART address.
        address: u64,
        /// C struct name.
        r#struct: &'static str,
        /// Which queue it belongs to, when known.
        queue: Option<String>,
        /// Non-zero dwords.
        fields: Vec<FieldValue>,
    },
    /// Lines that belong to the record (a decoded packet, a wave's registers, what an
    /// instruction changed).
    Lines {
        /// The lines.
        lines: Vec<String>,
    },
    /// A wave launched (`kfd trace dispatch`; the timeline draws it on its CU).
    WaveStart {
        /// Its number in the dispatch.
        index: u64,
        /// Its workgroup.
        workgroup: [u32; 3],
        /// Its index in the workgroup.
        wave: u32,
        /// The shader engine, compute unit (within its shader array) and SIMD the SPI placed
        /// it on (its `HW_ID`).
        se: u32,
        /// See `se`.
        cu: u32,
        /// See `se`.
        simd: u32,
    },
    /// A wave ended.
    WaveEnd {
        /// Its number in the dispatch.
        index: u64,
        /// Instructions it executed.
        instructions: u64,
    },
    /// Dwords of a watched MQD that changed.
    MqdChange {
        /// GART address.
        address: u64,
        /// C struct name.
        r#struct: &'static str,
        /// Which queue it belongs to, when known.
        queue: Option<String>,
        /// The changed dwords.
        changes: Vec<FieldChange>,
    },
}

/// One log record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Captured {
    /// Nanoseconds since the trace began.
    pub t_ns: u64,
    /// The log target (`kfd::dqm`).
    pub target: String,
    /// `ERROR` … `TRACE`.
    pub level: String,
    /// The message.
    pub message: String,
    /// What memory showed at this record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
}

struct HiqWatch {
    ring_base: u64,
    ring_dwords: u64,
    wptr_address: u64,
    last_wptr: u64,
}

struct MqdWatch {
    table: Table,
    last: Vec<u8>,
}

struct Watches {
    gpu: Arc<KfdNode>,
    generation: Generation,
    hiq: Option<HiqWatch>,
    mqds: BTreeMap<u64, MqdWatch>,
    labels: BTreeMap<u64, String>,
}

#[derive(Default)]
struct State {
    records: Vec<Captured>,
    watches: Option<Watches>,
}

/// The sink. Attach it with [`crate::logging::attach`].
pub struct Capture {
    epoch: Instant,
    state: Mutex<State>,
}

fn read(gpu: &KfdNode, address: u64, len: usize) -> Option<Vec<u8>> {
    let mut bytes = vec![0u8; len];
    gpu.debugfs().read(address, &mut bytes)?;
    Some(bytes)
}

/// The address after `MQD at ` in a dqm message.
fn mqd_address_in(message: &str) -> Option<u64> {
    let rest = message.split("MQD at ").nth(1)?;
    let hex = rest.strip_prefix("0x")?;
    let end = hex
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(hex.len());
    u64::from_str_radix(hex.get(..end)?, 16).ok()
}

impl Watches {
    fn table_for(&self, bytes: &[u8]) -> Table {
        mqd_fields::table(self.generation, mqd_fields::detect_kind(bytes))
    }

    fn new_hiq_packets(&mut self) -> Option<Note> {
        let hiq = self.hiq.as_mut()?;
        let wptr = self.gpu.debugfs().load_u64(hiq.wptr_address)?;
        if wptr == hiq.last_wptr || hiq.ring_dwords == 0 {
            return None;
        }
        let from = hiq.last_wptr;
        hiq.last_wptr = wptr;
        if wptr < from || wptr - from > hiq.ring_dwords {
            return None; // the ring was reset or lapped: nothing sensible to list
        }
        let ring = read(&self.gpu, hiq.ring_base, (hiq.ring_dwords * 4) as usize)?;
        let ring: Vec<u32> = ring
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let (start, end) = (
            (from % hiq.ring_dwords) as usize,
            (wptr % hiq.ring_dwords) as usize,
        );
        let segments = if start < end {
            vec![(start, end)]
        } else {
            vec![(start, ring.len()), (0, end)]
        };
        let target = Target::of_generation(self.generation);
        let mut packets = Vec::new();
        for (a, b) in segments {
            if let Some(words) = ring.get(a..b) {
                packets.extend(decode::decode_words(words, a, Engine::Pm4, target, false).1);
            }
        }
        Some(Note::HiqPackets { wptr, packets })
    }

    fn changed_mqds(&mut self) -> Vec<Note> {
        let mut notes = Vec::new();
        for (&address, watch) in &mut self.mqds {
            let Some(now) = read(&self.gpu, address, watch.table.size) else {
                continue;
            };
            if now != watch.last {
                let changes = mqd_fields::diff(&watch.table, &watch.last, &now);
                watch.last = now;
                notes.push(Note::MqdChange {
                    address,
                    r#struct: watch.table.name,
                    queue: self.labels.get(&address).cloned(),
                    changes,
                });
            }
        }
        notes
    }

    fn add_mqd(&mut self, address: u64, queue: Option<String>) -> Option<Note> {
        if self.mqds.contains_key(&address) {
            return None;
        }
        let probe = read(&self.gpu, address, 2048)
            .or_else(|| read(&self.gpu, address, 520))
            .or_else(|| read(&self.gpu, address, 512))?;
        let table = self.table_for(&probe);
        let bytes = probe.get(..table.size)?.to_vec();
        let fields = mqd_fields::values(&table, &bytes, false);
        if let Some(label) = &queue {
            self.labels.insert(address, label.clone());
        }
        self.mqds.insert(address, MqdWatch { table, last: bytes });
        Some(Note::MqdInit {
            address,
            r#struct: table.name,
            queue,
            fields,
        })
    }
}

impl Default for Capture {
    fn default() -> Self {
        Self::new(Instant::now())
    }
}

impl Capture {
    /// A sink whose times count from `epoch`.
    pub fn new(epoch: Instant) -> Self {
        Capture {
            epoch,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts looking at `gpu`'s memory: the HIQ behind `hiq_mqd` and, from now on, every MQD
    /// the device queue manager reports.
    pub fn watch_gpu(&self, gpu: Arc<KfdNode>, generation: Generation, hiq_mqd: Option<u64>) {
        let hiq = hiq_mqd.and_then(|address| {
            let bytes = read(&gpu, address, 2048)?;
            let mqd = ComputeMqd::decode(generation, &bytes).ok()?;
            let ring_dwords = mqd.ring_size_bytes() / 4;
            let wptr_address = mqd.wptr_poll_address();
            Some(HiqWatch {
                ring_base: mqd.ring_base_address(),
                ring_dwords,
                wptr_address,
                last_wptr: gpu.debugfs().load_u64(wptr_address).unwrap_or(0),
            })
        });
        self.lock().watches = Some(Watches {
            gpu,
            generation,
            hiq,
            mqds: BTreeMap::new(),
            labels: BTreeMap::new(),
        });
    }

    /// Brings the MQD watch list in line with the queues that exist (address, label): new
    /// ones are watched from their current bytes, gone ones dropped. Returns notes for MQDs
    /// seen here for the first time.
    pub fn sync_mqds(&self, queues: &[(u64, String)]) -> Vec<Note> {
        let mut state = self.lock();
        let Some(w) = state.watches.as_mut() else {
            return Vec::new();
        };
        w.mqds.retain(|a, _| queues.iter().any(|(q, _)| q == a));
        w.labels.retain(|a, _| queues.iter().any(|(q, _)| q == a));
        let mut notes = Vec::new();
        for (address, label) in queues {
            w.labels.insert(*address, label.clone());
            notes.extend(w.add_mqd(*address, Some(label.clone())));
        }
        notes
    }

    /// Adds a record of the scenario's own (target `user`: what the client does by itself,
    /// without a system call).
    pub fn push(&self, target: &str, message: String, notes: Vec<Note>) {
        let t_ns = self.now_ns();
        self.lock().records.push(Captured {
            t_ns,
            target: target.to_owned(),
            level: "INFO".to_owned(),
            message,
            notes,
        });
    }

    /// Takes the records captured so far.
    pub fn take(&self) -> Vec<Captured> {
        std::mem::take(&mut self.lock().records)
    }

    /// Nanoseconds since the epoch.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl RecordSink for Capture {
    fn record(&self, record: &log::Record<'_>) {
        let t_ns = self.now_ns();
        let target = record.target().to_owned();
        let message = record.args().to_string();
        let mut state = self.lock();
        let mut notes = Vec::new();
        if let Some(w) = state.watches.as_mut() {
            notes.extend(w.new_hiq_packets());
            notes.extend(w.changed_mqds());
            if target == kfd_model::layer::DQM {
                if let Some(address) = mqd_address_in(&message) {
                    // "pasid 0x8001 queue 0: Compute, …" names the queue.
                    let label = message.split(':').next().map(str::to_owned);
                    notes.extend(w.add_mqd(address, label));
                }
            }
        }
        state.records.push(Captured {
            t_ns,
            target,
            level: record.level().to_string(),
            message,
            notes,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mqd_addresses_are_read_from_dqm_messages() {
        assert_eq!(
            mqd_address_in("pasid 0x8001 queue 0: Compute, doorbell 0 (BAR dw 0x1000), MQD at 0xff0000002800, active"),
            Some(0xff00_0000_2800)
        );
        assert_eq!(mqd_address_in("MQD at nowhere"), None);
        assert_eq!(mqd_address_in("no address"), None);
    }

    #[test]
    fn records_are_kept_with_their_layer_and_time() {
        let c = Capture::default();
        c.record(
            &log::Record::builder()
                .target("kfd::pqm")
                .level(log::Level::Debug)
                .args(format_args!("create queue"))
                .build(),
        );
        let r = c.take();
        assert_eq!(r.len(), 1);
        assert_eq!(
            (
                r[0].target.as_str(),
                r[0].level.as_str(),
                r[0].message.as_str()
            ),
            ("kfd::pqm", "DEBUG", "create queue")
        );
        assert!(r[0].notes.is_empty());
        assert!(c.take().is_empty());
    }
}
