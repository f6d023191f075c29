//! The text form of a trace: every step with its layer tree — each log record indented by
//! the depth of its layer on the path ioctl → pqm → dqm → packet manager → HIQ → HWS → HQD
//! → CP → SPI → SQ — with the packets and MQD changes seen at it.

use super::capture::{Captured, Note};
use super::session::{Detail, DeviceState, Step};
use crate::decode;
use crate::output::{Style, Tone};

use kfd_model::layer::{self, Layer};

/// The layer a record belongs to: the model's layer of its target ([`kfd_model::layer`]), or
/// `log` at depth 0 for a target outside the path.
pub fn layer_of(target: &str, message: &str) -> Layer {
    layer::layer_of(target, message).unwrap_or(Layer {
        target: "",
        tag: "log",
        depth: 0,
    })
}

/// The path, for the legend.
pub const PATH: &str =
    "ioctl → pqm → dqm → pm (packet manager) → HIQ → HWS → HQD → CP/SDMA → IH → irq → events";

/// The path of a kernel dispatch, for the legend of `kfd trace dispatch`.
pub const DISPATCH_PATH: &str =
    "client (AQL packet, doorbell) → CP → SPI (workgroups, waves) → SQ (instructions) → CP (completion signal) → IH → irq → events";

const TAG_WIDTH: usize = 7;

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

/// `fetch HIQ 0x008: RUN_LIST` for the firmware's long `HIQ 0x008: RUN_LIST …` line, when the
/// packet is already listed under the HIQ.
fn short_hws_line(message: &str) -> Option<String> {
    let rest = message.strip_prefix("HIQ 0x")?;
    let (slot, text) = rest.split_once(": ")?;
    let name = text.split_whitespace().next()?;
    Some(format!("fetches HIQ 0x{slot}: {name}"))
}

fn note_lines(note: &Note, pad: &str, style: Style, out: &mut Vec<String>) {
    match note {
        Note::HiqPackets { wptr, packets } => {
            out.push(format!(
                "{pad}{}",
                style.paint(Tone::Dim, &format!("ring (wptr {wptr}):"))
            ));
            for p in packets {
                for line in decode::render_entry(p, false, style) {
                    out.push(format!("{pad}{line}"));
                }
            }
        }
        Note::Written { what, packets } => {
            out.push(format!(
                "{pad}{}",
                style.paint(Tone::Dim, &format!("{what}:"))
            ));
            for p in packets {
                for line in decode::render_entry(p, false, style) {
                    out.push(format!("{pad}{line}"));
                }
            }
        }
        Note::Lines { lines } => {
            for line in lines {
                out.push(format!("{pad}  {line}"));
            }
        }
        Note::WaveStart { .. } | Note::WaveEnd { .. } => {}
        Note::RunlistLine { line } => {
            out.push(format!("{pad}{}", style.paint(Tone::Dim, line)));
        }
        Note::MqdInit {
            address,
            r#struct,
            queue,
            fields,
        } => {
            out.push(format!(
                "{pad}{} {struct} at {address:#x}{}: {} non-zero dwords",
                style.paint(Tone::Changed, "MQD written"),
                queue
                    .as_ref()
                    .map(|q| format!(" ({q})"))
                    .unwrap_or_default(),
                fields.len()
            ));
            for f in fields {
                out.push(format!(
                    "{pad}  {} {:<34} {:#010x}",
                    style.paint(Tone::Dim, &format!("dw{:<3}", f.dword)),
                    f.name,
                    f.value
                ));
            }
        }
        Note::MqdChange {
            address,
            r#struct,
            queue,
            changes,
        } => {
            out.push(format!(
                "{pad}{} {struct} at {address:#x}{}:",
                style.paint(Tone::Changed, "MQD changed"),
                queue
                    .as_ref()
                    .map(|q| format!(" ({q})"))
                    .unwrap_or_default(),
            ));
            for c in changes {
                out.push(format!(
                    "{pad}  {} {:<34} {:#010x} → {}",
                    style.paint(Tone::Dim, &format!("dw{:<3}", c.dword)),
                    c.name,
                    c.old,
                    style.paint(Tone::Changed, &format!("{:#010x}", c.new))
                ));
            }
        }
    }
}

/// The tree lines of the records of one step.
pub fn record_lines(records: &[Captured], style: Style) -> Vec<String> {
    let hiq_listed = records
        .iter()
        .any(|r| r.notes.iter().any(|n| matches!(n, Note::HiqPackets { .. })));
    let mut out = Vec::new();
    for r in records {
        let layer = layer_of(&r.target, &r.message);
        let message = if r.target == layer::HWS && hiq_listed {
            short_hws_line(&r.message).unwrap_or_else(|| r.message.clone())
        } else {
            r.message.clone()
        };
        let tag = style.paint(
            Tone::Layer(layer.depth),
            &format!("{:<TAG_WIDTH$}", layer.tag),
        );
        let message = match r.level.as_str() {
            "ERROR" | "WARN" => style.paint(Tone::Error, &message),
            _ => message,
        };
        out.push(format!("{}{tag} {message}", indent(layer.depth + 1)));
        let pad = format!("{}{}", indent(layer.depth + 1), " ".repeat(TAG_WIDTH + 1));
        for note in &r.notes {
            note_lines(note, &pad, style, &mut out);
        }
    }
    out
}

/// The state block after a full step.
pub fn state_lines(state: &DeviceState, style: Style) -> Vec<String> {
    let mut out = vec![format!(
        "  {} processes {}, queues {} active / {} total, runlist {}, HQDs {}/{} in use",
        style.paint(Tone::Bold, "state:"),
        state.processes,
        state.active_queues,
        state.total_queues,
        match (state.active_runlist, state.oversubscribed) {
            (false, _) => "none",
            (true, false) => "mapped",
            (true, true) => "mapped, chained (oversubscribed)",
        },
        state.mapped.iter().filter(|m| m.compute).count(),
        state.hqds
    )];
    for m in &state.mapped {
        out.push(format!(
            "    {:<22} pasid {:#x} vmid {:<2} doorbell {:#x} MQD {:#x}",
            m.slot, m.pasid, m.vmid, m.doorbell, m.mqd
        ));
    }
    out
}

/// The whole trace as text: a heading per step; full steps with their tree and state.
pub fn steps_lines(steps: &[Step], all: bool, style: Style) -> Vec<String> {
    let mut out = Vec::new();
    let total = steps.len();
    for (i, step) in steps.iter().enumerate() {
        let full = all || step.detail == Detail::Full;
        let number = format!("[{}/{total}]", i + 1);
        let dur = step.end_us - step.start_us;
        let outcome = if step.outcome.is_empty() {
            String::new()
        } else {
            format!(" — {}", step.outcome)
        };
        if full {
            out.push(String::new());
            out.push(format!(
                "{} {}{outcome}  {}",
                style.paint(Tone::Bold, &number),
                style.paint(Tone::Bold, &step.title),
                style.paint(Tone::Dim, &format!("({dur:.0} µs)"))
            ));
            out.extend(record_lines(&step.records, style));
            if let Some(state) = &step.state {
                out.extend(state_lines(state, style));
            }
        } else {
            out.push(format!(
                "{} {}{outcome}",
                style.paint(Tone::Dim, &number),
                step.title
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_follow_the_path() {
        let depth = |t: &str, m: &str| layer_of(t, m).depth;
        assert!(depth("kfd::ioctl", "") < depth("kfd::pqm", ""));
        assert!(depth("kfd::kq", "") < depth("hw::hws", "RUN_LIST"));
        assert_eq!(
            layer_of("hw::hws", "pasid 0x8001 queue doorbell 0x1000 -> Compute").tag,
            "HQD"
        );
        assert!(depth("hw::hws", "x -> y") < depth("hw::cp", ""));
        assert_eq!(layer_of("kfd::ttm", "").tag, "ttm");
        assert_eq!(layer_of("something", "").tag, "log");
    }

    #[test]
    fn firmware_lines_shorten_only_when_listed() {
        assert_eq!(
            short_hws_line("HIQ 0x008: RUN_LIST ib_base=0xff0000001e00 ib_size=23").as_deref(),
            Some("fetches HIQ 0x008: RUN_LIST")
        );
        assert_eq!(short_hws_line("RUN_LIST: IB"), None);
        let r = Captured {
            t_ns: 0,
            target: "hw::hws".into(),
            level: "TRACE".into(),
            message: "HIQ 0x008: RUN_LIST ib_base=0x1".into(),
            notes: vec![],
        };
        let lines = record_lines(std::slice::from_ref(&r), Style::plain());
        assert_eq!(
            lines,
            ["            HWS     HIQ 0x008: RUN_LIST ib_base=0x1"]
        );
    }
}
