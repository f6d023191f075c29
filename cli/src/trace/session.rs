//! A traced run of the model: the model, the capture attached to the log, and the steps a
//! scenario takes, each with the records its layers logged and the state it left behind.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use kfd_model::debugfs::Slot;
use kfd_model::{KfdNode, Model, ModelConfig, Preset};
use serde::Serialize;

use super::capture::{Capture, Captured, Note};
use super::client::{Client, IoctlSpan, Spans};
use crate::error::{CliError, CliResult};
use crate::logging;

/// How much of a step the text output shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// The whole layer tree.
    Full,
    /// One line (setup and repetition); `--all` shows it in full.
    Summary,
}

/// A queue on a hardware slot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SlotUse {
    /// `MEC0 pipe 0 queue 2`, `SDMA1 queue 0`.
    pub slot: String,
    /// Whether it is a compute HQD.
    pub compute: bool,
    /// Owner.
    pub pasid: u16,
    /// The VMID the firmware gave the owner.
    pub vmid: u8,
    /// Doorbell dword index.
    pub doorbell: u32,
    /// GART address of the MQD.
    pub mqd: u64,
}

/// What the driver and the firmware hold after a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceState {
    /// Processes with queues (registered).
    pub processes: u32,
    /// Active queues.
    pub active_queues: u32,
    /// All queues.
    pub total_queues: u32,
    /// A runlist is mapped.
    pub active_runlist: bool,
    /// The runlist is chained (more than the hardware holds).
    pub oversubscribed: bool,
    /// Compute HQDs the scheduler may use.
    pub hqds: usize,
    /// Queues on hardware slots, in slot order.
    pub mapped: Vec<SlotUse>,
}

/// One step of a scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// What the step does (`CREATE_QUEUE`).
    pub title: String,
    /// Shown in full or as one line.
    pub detail: Detail,
    /// The outcome in a few words.
    pub outcome: String,
    /// Start, microseconds since the trace began.
    pub start_us: f64,
    /// End.
    pub end_us: f64,
    /// What the layers logged, in order.
    pub records: Vec<Captured>,
    /// The ioctls the step made.
    pub ioctls: Vec<IoctlSpan>,
    /// The device afterwards.
    pub state: Option<DeviceState>,
}

/// A traced model run.
pub struct Session {
    /// The model.
    pub model: Model,
    /// Its (first) GPU.
    pub gpu_id: u32,
    /// The preset.
    pub preset: Preset,
    /// Steps taken so far.
    pub steps: Vec<Step>,
    capture: Arc<Capture>,
    spans: Spans,
    epoch: Instant,
    _guard: logging::SinkGuard,
}

/// The name of a hardware slot.
pub fn slot_name(slot: &Slot) -> String {
    slot.to_string()
}

impl Session {
    /// Brings up a model of `config` with the capture attached, so the driver's bring-up is
    /// the first step. The engines run only when a step asks, whatever `config` says.
    pub fn start(config: ModelConfig) -> CliResult<Session> {
        let preset = config.preset;
        let epoch = Instant::now();
        let capture = Arc::new(Capture::new(epoch));
        let guard = logging::attach(capture.clone());
        let start_us = 0.0;
        // The engines run only when a step asks (run_until_idle), so traces are repeatable.
        let model = Model::new(config.with_engine_thread(false))
            .map_err(|e| CliError::failure(format!("the model did not start: {e}")))?;
        let node = model
            .nodes()
            .first()
            .cloned()
            .ok_or_else(|| CliError::failure("the model has no GPU"))?;
        let debugfs = node.debugfs();
        capture.watch_gpu(
            node.clone(),
            debugfs.generation(),
            debugfs.hiq_mqd_address(),
        );
        let mut session = Session {
            gpu_id: node.gpu_id,
            model,
            preset,
            steps: Vec::new(),
            capture,
            spans: Rc::new(RefCell::new(Vec::new())),
            epoch,
            _guard: guard,
        };
        let records = session.capture.take();
        let state = session.state();
        session.steps.push(Step {
            title: "driver bring-up (start_cpsch)".to_owned(),
            detail: Detail::Summary,
            outcome: format!("HIQ loaded, SET_RESOURCES: {} HQDs", state.hqds),
            start_us,
            end_us: session.now_us(),
            records,
            ioctls: Vec::new(),
            state: Some(state),
        });
        Ok(session)
    }

    fn now_us(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1e6
    }

    /// The GPU node.
    pub fn node(&self) -> CliResult<Arc<KfdNode>> {
        self.model
            .node(self.gpu_id)
            .cloned()
            .ok_or_else(|| CliError::failure("GPU vanished"))
    }

    /// Opens a new process (a client with its VM acquired).
    pub fn client(&self) -> CliResult<Client> {
        Client::open(&self.model, self.gpu_id, self.spans.clone(), self.epoch)
    }

    /// The driver's and the firmware's state now.
    pub fn state(&self) -> DeviceState {
        let Some(node) = self.model.node(self.gpu_id) else {
            return DeviceState {
                processes: 0,
                active_queues: 0,
                total_queues: 0,
                active_runlist: false,
                oversubscribed: false,
                hqds: 0,
                mapped: Vec::new(),
            };
        };
        let c = node.counters();
        let hws = node.debugfs().hws();
        DeviceState {
            processes: c.processes_count,
            active_queues: c.active_queue_count,
            total_queues: c.total_queue_count,
            active_runlist: c.active_runlist,
            oversubscribed: hws.oversubscribed,
            hqds: hws.hqd_count,
            mapped: hws
                .mapped
                .iter()
                .map(|m| SlotUse {
                    slot: slot_name(&m.slot),
                    compute: matches!(m.slot, Slot::Compute { .. }),
                    pasid: m.pasid,
                    vmid: m.vmid,
                    doorbell: m.doorbell_offset,
                    mqd: m.mqd_address,
                })
                .collect(),
        }
    }

    /// (MQD address, "pasid … queue …") of every queue the driver holds.
    fn queue_mqds(&self) -> Vec<(u64, String)> {
        let Some(node) = self.model.node(self.gpu_id) else {
            return Vec::new();
        };
        node.debugfs()
            .queues()
            .into_iter()
            .map(|q| {
                (
                    q.mqd_address,
                    format!("pasid {:#x} queue {}", q.pasid, q.queue_id),
                )
            })
            .collect()
    }

    /// Runs one step: `action` does it, its records and ioctls are collected, and the
    /// device state afterwards is kept. `outcome` describes the result.
    pub fn step<T>(
        &mut self,
        title: impl Into<String>,
        detail: Detail,
        action: impl FnOnce(&mut Session) -> CliResult<T>,
        outcome: impl FnOnce(&T, &DeviceState) -> String,
    ) -> CliResult<T> {
        let start_us = self.now_us();
        let spans_before = self.spans.borrow().len();
        // Records between steps (none normally) belong to no step.
        let _ = self.capture.take();
        let result = action(self);
        let mut records = self.capture.take();
        // Queues that exist now: label MQDs and catch any the log did not announce.
        let late = self.capture.sync_mqds(&self.queue_mqds());
        if !late.is_empty() {
            records.push(Captured {
                t_ns: self.capture.now_ns(),
                target: "kfd::dqm".to_owned(),
                level: "DEBUG".to_owned(),
                message: "MQDs in GART after the step".to_owned(),
                notes: late,
            });
        }
        let records = attach_listing_lines(records);
        let ioctls = self
            .spans
            .borrow()
            .get(spans_before..)
            .unwrap_or_default()
            .to_vec();
        let state = self.state();
        let title = title.into();
        let outcome_text = match &result {
            Ok(value) => outcome(value, &state),
            Err(e) => format!("failed: {}", e.one_line()),
        };
        self.steps.push(Step {
            title,
            detail,
            outcome: outcome_text,
            start_us,
            end_us: self.now_us(),
            records,
            ioctls,
            state: Some(state),
        });
        result
    }

    /// Adds a record of what the client does without a system call (a store into mapped
    /// memory or a doorbell).
    pub fn note(&self, target: &str, message: String, notes: Vec<Note>) {
        self.capture.push(target, message, notes);
    }

    /// The capture (for an observer that adds records as the model runs).
    pub fn capture(&self) -> Arc<Capture> {
        self.capture.clone()
    }

    /// The ioctls of the whole run.
    pub fn ioctls(&self) -> Vec<IoctlSpan> {
        self.spans.borrow().clone()
    }
}

/// Folds the packet manager's listing lines (`  0x0000: …`) into the record before them.
fn attach_listing_lines(records: Vec<Captured>) -> Vec<Captured> {
    let mut out: Vec<Captured> = Vec::with_capacity(records.len());
    for r in records {
        let is_listing = r.target == "kfd::pm" && r.message.trim_start().starts_with("0x");
        if is_listing {
            if let Some(prev) = out.iter_mut().rev().find(|p| p.target == "kfd::pm") {
                prev.notes.push(Note::RunlistLine {
                    line: r.message.clone(),
                });
                continue;
            }
        }
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(target: &str, message: &str) -> Captured {
        Captured {
            t_ns: 0,
            target: target.to_owned(),
            level: "TRACE".to_owned(),
            message: message.to_owned(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn listing_lines_join_the_packet_manager_record() {
        let out = attach_listing_lines(vec![
            rec("kfd::pm", "runlist IB: 1 process(es)"),
            rec("kfd::pm", "  0x0000: c00ea100  MAP_PROCESS"),
            rec("kfd::pm", "  0x0010: c005a200  MAP_QUEUES"),
            rec("kfd::kq", "HIQ submit: wptr 12"),
        ]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].notes.len(), 2);
        assert!(
            matches!(&out[0].notes[1], Note::RunlistLine { line } if line.contains("MAP_QUEUES"))
        );
        assert_eq!(
            slot_name(&Slot::Compute {
                mec: 0,
                pipe: 1,
                queue: 2
            }),
            "MEC0 pipe 1 queue 2"
        );
        assert_eq!(
            slot_name(&Slot::Sdma {
                engine: 1,
                queue: 0
            }),
            "SDMA1 queue 0"
        );
    }
}
