//! `RUST_LOG=trace` shows a CREATE_QUEUE travelling layer by layer, one log target per layer
//! (docs/ARCHITECTURE.md): ioctl → pqm → dqm → packet manager (with the runlist disassembly) →
//! HIQ → HWS → HQD slot.

mod common;

use common::*;
use kfd_model::Preset;
use kfd_sys::*;
use std::sync::Mutex;

struct Capture(
    Mutex<Vec<(String, String)>>,
    Mutex<Vec<(log::Level, String)>>,
);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((r.target().to_owned(), r.args().to_string()));
        self.1
            .lock()
            .unwrap()
            .push((r.level(), r.args().to_string()));
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture(Mutex::new(Vec::new()), Mutex::new(Vec::new()));

/// The tests share the logger: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn install_logger() {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Trace);
}

#[test]
fn create_queue_is_traced_through_every_layer() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    install_logger();
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let bufs = c.queue_buffers(c.gpu(), 4096, true);
    let mut a = c.queue_args(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, &bufs);
    LOGGER.0.lock().unwrap().clear();
    c.p.call::<CreateQueue>(&mut a).unwrap();

    let lines = LOGGER.0.lock().unwrap().clone();
    let first = |target: &str, needle: &str| {
        lines
            .iter()
            .position(|(t, m)| t == target && m.contains(needle))
            .unwrap_or_else(|| panic!("no {target} line containing {needle:?} in:\n{lines:#?}"))
    };
    let path = [
        first("kfd::ioctl", "AMDKFD_IOC_CREATE_QUEUE"),
        first("kfd::pqm", "create queue"),
        first("kfd::dqm", "MQD at"),
        first("kfd::pm", "runlist IB"),
        first("kfd::pm", "MAP_QUEUES"),
        first("kfd::kq", "HIQ submit"),
        first("hw::hws", "RUN_LIST"),
        first("hw::hws", "vmid 8"),
    ];
    assert!(
        path.windows(2).all(|w| w[0] < w[1]),
        "layers out of order: {path:?}\n{lines:#?}"
    );
    // The disassembly of the runlist is in the packet-manager trace, a line per packet.
    let listing: Vec<&String> = lines
        .iter()
        .filter(|(t, m)| t == "kfd::pm" && m.contains(": c0"))
        .map(|(_, m)| m)
        .collect();
    assert_eq!(listing.len(), 2, "MAP_PROCESS and MAP_QUEUES: {listing:?}");
    assert!(listing[0].contains("MAP_PROCESS") && listing[1].contains("MAP_QUEUES"));
}

/// A refused ioctl that stops a runtime's start (here ACQUIRE_VM with a descriptor that is no
/// render file) is one warning line per process; refusals the runtimes expect stay at debug.
#[test]
fn a_refusal_that_stops_a_runtime_is_one_warning() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    install_logger();
    let model = model(Preset::Gfx900, 1);
    let c = Client::unbound(&model);
    LOGGER.1.lock().unwrap().clear();
    let mut xnack = kfd_ioctl_set_xnack_mode_args { xnack_enabled: 1 };
    assert_errno(
        c.p.call::<SetXnackMode>(&mut xnack),
        kfd_model::Errno::EPERM,
        "no XNACK on gfx900",
    );
    let mut acq = kfd_ioctl_acquire_vm_args {
        drm_fd: 12345,
        gpu_id: c.gpu(),
    };
    for _ in 0..2 {
        assert_errno(
            c.p.call::<AcquireVm>(&mut acq),
            kfd_model::Errno::EINVAL,
            "not a render file",
        );
    }
    let warnings: Vec<String> = LOGGER
        .1
        .lock()
        .unwrap()
        .iter()
        .filter(|(level, _)| *level <= log::Level::Warn)
        .map(|(_, m)| m.clone())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].contains("AMDKFD_IOC_ACQUIRE_VM refused with EINVAL"),
        "{warnings:#?}"
    );
}
