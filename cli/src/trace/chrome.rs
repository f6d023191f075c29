//! The timeline of a trace in the Chrome trace-event format (JSON), which Perfetto and
//! `chrome://tracing` open: the steps and ioctls as spans, every record as an instant on its
//! layer's track, per queue the spans it spent on a hardware slot, and (for a dispatch) each
//! wave as a span on the compute unit that ran it.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::capture::Note;
use super::client::IoctlSpan;
use super::render::layer_of;
use super::session::Step;

const DRIVER: u32 = 1;
const GPU: u32 = 2;
const QUEUES: u32 = 3;
const WAVES: u32 = 4;
/// Wave slots per compute unit track group (`tid = (se * 16 + cu) * WAVE_SLOTS + wave in
/// workgroup + 1`):
/// a workgroup has at most 16 waves of 64.
const WAVE_SLOTS: u32 = 16;

const TRACKS: &[(&str, u32, u32)] = &[
    ("steps", DRIVER, 1),
    ("client", DRIVER, 9),
    ("ioctl", DRIVER, 2),
    ("process", DRIVER, 3),
    ("memory", DRIVER, 3),
    ("gem", DRIVER, 3),
    ("ttm", DRIVER, 3),
    ("svm", DRIVER, 3),
    ("events", DRIVER, 4),
    ("irq", DRIVER, 4),
    ("smi", DRIVER, 4),
    ("pqm", DRIVER, 5),
    ("dqm", DRIVER, 6),
    ("pm", DRIVER, 7),
    ("model", DRIVER, 8),
    ("faults", DRIVER, 8),
    ("user", DRIVER, 8),
    ("log", DRIVER, 8),
    ("HIQ", GPU, 1),
    ("HWS", GPU, 2),
    ("HQD", GPU, 3),
    ("CP", GPU, 4),
    ("SDMA", GPU, 5),
    ("VM", GPU, 6),
    ("mem", GPU, 6),
    ("IH", GPU, 7),
    ("engine", GPU, 8),
    ("SPI", GPU, 9),
    ("SQ", GPU, 10),
];

fn track(tag: &str) -> (u32, u32) {
    TRACKS
        .iter()
        .find(|(t, _, _)| *t == tag)
        .map_or((DRIVER, 8), |&(_, pid, tid)| (pid, tid))
}

fn short(message: &str) -> String {
    let mut s: String = message.chars().take(64).collect();
    if message.chars().count() > 64 {
        s.push('…');
    }
    s
}

#[derive(Default)]
struct Residency {
    label: String,
    open: Option<(f64, String)>,
    spans: Vec<(f64, f64, String)>,
}

/// The trace-event JSON of `steps`.
pub fn timeline(scenario: &str, preset: &str, steps: &[Step], ioctls: &[IoctlSpan]) -> Value {
    let mut events: Vec<Value> = Vec::new();
    for (pid, name) in [
        (DRIVER, "kfd driver (model)"),
        (GPU, "GPU firmware and engines (model)"),
        (QUEUES, "queues on hardware slots"),
        (WAVES, "waves on compute units (model)"),
    ] {
        events.push(json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}));
        events.push(json!({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}}));
    }
    let mut named = std::collections::BTreeSet::new();
    for &(tag, pid, tid) in TRACKS {
        if named.insert((pid, tid)) {
            events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": tag}}));
        }
    }
    for step in steps {
        events.push(json!({
            "name": step.title, "cat": "step", "ph": "X", "pid": DRIVER, "tid": 1,
            "ts": step.start_us, "dur": (step.end_us - step.start_us).max(0.0),
            "args": {"outcome": step.outcome},
        }));
    }
    for io in ioctls {
        events.push(json!({
            "name": io.name.trim_start_matches("AMDKFD_IOC_"), "cat": "ioctl", "ph": "X",
            "pid": DRIVER, "tid": 2, "ts": io.start_us, "dur": (io.end_us - io.start_us).max(0.0),
            "args": {"pasid": format!("{:#x}", io.pasid), "result": io.result},
        }));
    }
    events.extend(wave_spans(steps));
    let mut queues: BTreeMap<u64, Residency> = BTreeMap::new();
    let mut last_end = 0.0f64;
    let mut previous_sdma: BTreeMap<u64, String> = BTreeMap::new();
    for step in steps {
        last_end = last_end.max(step.end_us);
        let slot_of = |mqd: u64| {
            step.state
                .as_ref()
                .and_then(|s| s.mapped.iter().find(|m| m.mqd == mqd))
                .map(|m| format!("{} (vmid {})", m.slot, m.vmid))
        };
        let mut firmware_times = Vec::new();
        for r in &step.records {
            let ts = r.t_ns as f64 / 1000.0;
            let layer = layer_of(&r.target, &r.message);
            let (pid, tid) = track(layer.tag);
            if pid == GPU {
                firmware_times.push(ts);
            }
            events.push(json!({
                "name": short(&r.message), "cat": r.target, "ph": "i", "s": "t",
                "pid": pid, "tid": tid, "ts": ts,
                "args": {"message": r.message, "level": r.level},
            }));
            for note in &r.notes {
                let Note::MqdChange {
                    address,
                    queue,
                    changes,
                    ..
                } = note
                else {
                    continue;
                };
                let Some(active) = changes.iter().find(|c| c.name == "cp_hqd_active") else {
                    continue;
                };
                let q = queues.entry(*address).or_default();
                if let Some(label) = queue {
                    q.label = label.clone();
                }
                match (active.new != 0, q.open.take()) {
                    (true, None) => {
                        q.open = Some((ts, slot_of(*address).unwrap_or_else(|| "HQD".to_owned())))
                    }
                    (true, Some(open)) => q.open = Some(open),
                    (false, Some((start, slot))) => q.spans.push((start, ts, slot)),
                    (false, None) => {}
                }
            }
        }
        // SDMA MQDs carry no active bit: their slots come from the state after each step.
        let sdma: BTreeMap<u64, String> = step
            .state
            .iter()
            .flat_map(|s| s.mapped.iter().filter(|m| !m.compute))
            .map(|m| (m.mqd, format!("{} (vmid {})", m.slot, m.vmid)))
            .collect();
        let first = firmware_times.first().copied().unwrap_or(step.start_us);
        let last = firmware_times.last().copied().unwrap_or(step.end_us);
        for (mqd, slot) in &previous_sdma {
            if sdma.get(mqd) != Some(slot) {
                let q = queues.entry(*mqd).or_default();
                if let Some((start, slot)) = q.open.take() {
                    q.spans.push((start, first, slot));
                }
            }
        }
        for (mqd, slot) in &sdma {
            if previous_sdma.get(mqd) != Some(slot) {
                queues.entry(*mqd).or_default().open = Some((last, slot.clone()));
            }
        }
        previous_sdma = sdma;
    }
    for (i, (address, q)) in queues.iter_mut().enumerate() {
        let tid = i as u32 + 1;
        let label = if q.label.is_empty() {
            format!("MQD {address:#x}")
        } else {
            q.label.clone()
        };
        events.push(json!({"name": "thread_name", "ph": "M", "pid": QUEUES, "tid": tid, "args": {"name": label}}));
        if let Some((start, slot)) = q.open.take() {
            q.spans.push((start, last_end, slot));
        }
        for (start, end, slot) in &q.spans {
            events.push(json!({
                "name": format!("on {slot}"), "cat": "queue", "ph": "X", "pid": QUEUES, "tid": tid,
                "ts": start, "dur": (end - start).max(0.0),
                "args": {"mqd": format!("{address:#x}")},
            }));
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"scenario": scenario, "preset": preset, "tool": "kfd trace"},
    })
}

/// Each wave from its launch to its end, on a track per compute unit and wave slot (the
/// model runs workgroups one after another, so waves of different CUs do not overlap).
fn wave_spans(steps: &[Step]) -> Vec<Value> {
    let mut started: BTreeMap<u64, (f64, [u32; 3], u32, [u32; 3])> = BTreeMap::new();
    let mut out = Vec::new();
    let mut tracks = std::collections::BTreeSet::new();
    for r in steps.iter().flat_map(|s| &s.records) {
        let ts = r.t_ns as f64 / 1000.0;
        for note in &r.notes {
            match note {
                Note::WaveStart {
                    index,
                    workgroup,
                    wave,
                    se,
                    cu,
                    simd,
                } => {
                    started.insert(*index, (ts, *workgroup, *wave, [*se, *cu, *simd]));
                }
                Note::WaveEnd {
                    index,
                    instructions,
                } => {
                    let Some((start, wg, wave, [se, cu, simd])) = started.remove(index) else {
                        continue;
                    };
                    // A track per compute unit (SE_ID has at most 3 bits, CU_ID 4) and wave.
                    let unit = se * 16 + cu;
                    let tid = unit * WAVE_SLOTS + wave.min(WAVE_SLOTS - 1) + 1;
                    if tracks.insert(tid) {
                        out.push(
                            json!({"name": "thread_name", "ph": "M", "pid": WAVES, "tid": tid,
                            "args": {"name": format!("SE {se} CU {cu} wave slot {wave} (SIMD {simd})")}}),
                        );
                    }
                    out.push(json!({
                        "name": format!("wave #{index}"), "cat": "wave", "ph": "X",
                        "pid": WAVES, "tid": tid, "ts": start, "dur": (ts - start).max(0.0),
                        "args": {"workgroup": wg, "wave_in_workgroup": wave, "instructions": instructions},
                    }));
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_exist_for_every_layer_tag() {
        let layers = kfd_model::layer::LAYERS
            .iter()
            .chain([&kfd_model::layer::HQD]);
        for layer in layers {
            assert!(
                TRACKS.iter().any(|&(t, _, _)| t == layer.tag),
                "no track for {}",
                layer.tag
            );
        }
        assert_ne!(track("HQD"), track("HWS"));
        assert_eq!(short(&"x".repeat(70)).chars().count(), 65);
        let v = timeline("s", "gfx900", &[], &[]);
        assert!(v["traceEvents"].as_array().is_some_and(|e| !e.is_empty()));
    }
}
