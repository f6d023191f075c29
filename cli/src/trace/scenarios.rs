//! The scenarios of `kfd trace`. Each drives the model through ioctls (and, where the kernel
//! does it on its own, the model's driver entry points) in named steps.
//!
//! A scenario that needs the model's queue engines (issue #6: the CP and SDMA executing user
//! queues, the interrupt handler) says so and fails with status 2 until they land; adding
//! it is one more function here.

use kfd_sys::*;

use super::client::{queue_type_name, Client, QueueInfo};
use super::session::{Detail, DeviceState, Session};
use crate::error::{CliError, CliResult};

/// The scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// One CREATE_QUEUE and DESTROY_QUEUE through every layer, with the MQD the driver writes.
    CreateQueue,
    /// More compute queues than HQDs: a chained runlist, and the firmware's time slice.
    Oversubscribe,
    /// Eviction and restore (refcounted): queues leave the hardware and come back.
    EvictRestore,
    /// A queue touching memory outside its GPU VM: the fault becomes a memory event (needs the engines).
    VmFault,
    /// RELEASE_MEM with an interrupt signals an event that WAIT_EVENTS sees (needs the engines).
    EventSignal,
}

impl Scenario {
    /// The scenario's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::CreateQueue => "create-queue",
            Scenario::Oversubscribe => "oversubscribe",
            Scenario::EvictRestore => "evict-restore",
            Scenario::VmFault => "vm-fault",
            Scenario::EventSignal => "event-signal",
        }
    }

    /// Whether the scenario needs the engines that execute queues (issue #6).
    pub fn needs_engines(self) -> bool {
        matches!(self, Scenario::VmFault | Scenario::EventSignal)
    }

    /// The preset a scenario runs on unless `--preset` says otherwise.
    pub fn default_preset(self) -> kfd_model::Preset {
        match self {
            // Navi 21 gives KFD 8 HQDs: a ninth queue oversubscribes.
            Scenario::Oversubscribe => kfd_model::Preset::Gfx1030,
            _ => kfd_model::Preset::Gfx900,
        }
    }
}

/// Options the scenarios read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScenarioOptions {
    /// `KFD_IOC_QUEUE_TYPE_*` of the queue `create-queue` makes.
    pub queue_type: u32,
    /// Ring size in bytes.
    pub ring_size: u32,
}

/// Whether the model's queue engines have landed; until then the engine scenarios refuse.
pub const ENGINES_AVAILABLE: bool = false;

/// `Err` (status 2, one line) for a scenario the model cannot run yet.
pub fn check_available(scenario: Scenario) -> CliResult<()> {
    if scenario.needs_engines() && !ENGINES_AVAILABLE {
        return Err(CliError::usage(format!(
            "scenario '{}' needs the model's queue engines (issue #6), which have not landed yet; \
             available now: create-queue, oversubscribe, evict-restore",
            scenario.name()
        )));
    }
    Ok(())
}

/// Runs `scenario` on `session`.
pub fn run(scenario: Scenario, session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    check_available(scenario)?;
    match scenario {
        Scenario::CreateQueue => create_queue(session, options),
        Scenario::Oversubscribe => oversubscribe(session, options),
        Scenario::EvictRestore => evict_restore(session, options),
        Scenario::VmFault | Scenario::EventSignal => Ok(()),
    }
}

fn open(session: &mut Session, who: &str) -> CliResult<Client> {
    session.step(
        format!("{who}: open /dev/kfd, ACQUIRE_VM"),
        Detail::Summary,
        |s| s.client(),
        |c, _| format!("pasid {:#x}", c.pasid()),
    )
}

fn mapped_slot(state: &DeviceState, pasid: u32, doorbell_offset_hint: Option<u32>) -> String {
    let mine: Vec<&str> = state
        .mapped
        .iter()
        .filter(|m| u32::from(m.pasid) == pasid)
        .filter(|m| doorbell_offset_hint.is_none_or(|d| d == m.doorbell))
        .map(|m| m.slot.as_str())
        .collect();
    if mine.is_empty() {
        "not on the hardware".to_owned()
    } else {
        format!("on {}", mine.join(", "))
    }
}

fn doorbell_of(session: &Session, pasid: u32, queue: u32) -> Option<u32> {
    let node = session.node().ok()?;
    let dqm = node.dqm();
    dqm.queue(pasid, queue).map(|q| q.doorbell_off)
}

fn create(
    session: &mut Session,
    client: &Client,
    queue_type: u32,
    ring_size: u32,
    detail: Detail,
    title: String,
) -> CliResult<QueueInfo> {
    // The buffers first, as their own quiet step, so the CREATE_QUEUE step holds only it.
    let args = session.step(
        format!(
            "allocate and map the buffers for the {} queue",
            queue_type_name(queue_type)
        ),
        Detail::Summary,
        |_| client.queue_args(queue_type, ring_size, 7),
        |a, _| {
            if a.eop_buffer_address != 0 {
                format!(
                    "ring {:#x}, pointers {:#x}, EOP {:#x}, CWSR area {:#x}",
                    a.ring_base_address,
                    a.write_pointer_address & !0xfff,
                    a.eop_buffer_address,
                    a.ctx_save_restore_address
                )
            } else {
                format!(
                    "ring {:#x}, pointers {:#x}",
                    a.ring_base_address,
                    a.write_pointer_address & !0xfff
                )
            }
        },
    )?;
    let pasid = client.pasid();
    let info = session.step(
        title,
        detail,
        |_| client.create_queue_with(args),
        |_, _| String::new(),
    )?;
    let doorbell = doorbell_of(session, pasid, info.id);
    if let Some(step) = session.steps.last_mut() {
        let state = step.state.clone();
        step.outcome = format!(
            "queue {} of pasid {pasid:#x}{}, {}",
            info.id,
            doorbell
                .map(|d| format!(", doorbell {d:#x}"))
                .unwrap_or_default(),
            state
                .as_ref()
                .map(|s| mapped_slot(s, pasid, doorbell))
                .unwrap_or_default()
        );
    }
    Ok(info)
}

fn create_queue(session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    let client = open(session, "process")?;
    let kind = queue_type_name(options.queue_type);
    let info = create(
        session,
        &client,
        options.queue_type,
        options.ring_size,
        Detail::Full,
        format!(
            "CREATE_QUEUE ({kind}, {} KiB ring)",
            options.ring_size / 1024
        ),
    )?;
    session.step(
        format!("DESTROY_QUEUE (queue {})", info.id),
        Detail::Full,
        |_| client.destroy_queue(info.id),
        |_, s| {
            format!(
                "{} queue(s) left, {} mapped",
                s.total_queues,
                s.mapped.len()
            )
        },
    )?;
    close(session, client, "process")
}

fn close(session: &mut Session, client: Client, who: &str) -> CliResult<()> {
    let pasid = client.pasid();
    session.step(
        format!("{who}: close /dev/kfd (process termination)"),
        Detail::Summary,
        move |_| {
            drop(client);
            Ok(())
        },
        move |_, s| format!("pasid {pasid:#x} gone; {} queue(s) left", s.total_queues),
    )
}

fn oversubscribe(session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    let hqds = session.state().hqds;
    if hqds == 0 {
        return Err(CliError::failure("the scheduler has no HQDs"));
    }
    let a = open(session, "process A")?;
    for i in 1..=hqds {
        create(
            session,
            &a,
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            options.ring_size,
            Detail::Summary,
            format!("A: CREATE_QUEUE {i} of {hqds} (fills the HQDs)"),
        )?;
    }
    let b = open(session, "process B")?;
    create(
        session,
        &b,
        KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        options.ring_size,
        Detail::Full,
        format!("B: CREATE_QUEUE — queue {} for {hqds} HQDs", hqds + 1),
    )?;
    if let Some(step) = session.steps.last_mut() {
        if let Some(s) = &step.state {
            step.outcome.push_str(&format!(
                "; runlist {}",
                if s.oversubscribed {
                    "chained (oversubscribed)"
                } else {
                    "not chained"
                }
            ));
        }
    }
    let node = session.node()?;
    session.step(
        "HWS time slice: the firmware rotates the processes it maps",
        Detail::Full,
        |_| {
            node.gpu.hws.tick(&node.gpu.gart);
            Ok(())
        },
        |_, s| {
            let a_on = s
                .mapped
                .iter()
                .filter(|m| u32::from(m.pasid) == a.pasid())
                .count();
            let b_on = s
                .mapped
                .iter()
                .filter(|m| u32::from(m.pasid) == b.pasid())
                .count();
            format!("A has {a_on} queue(s) on HQDs, B has {b_on}")
        },
    )?;
    session.step(
        "HWS time slice again: back to the first quantum",
        Detail::Summary,
        |_| {
            node.gpu.hws.tick(&node.gpu.gart);
            Ok(())
        },
        |_, s| {
            let b_on = s
                .mapped
                .iter()
                .filter(|m| u32::from(m.pasid) == b.pasid())
                .count();
            format!("B has {b_on} queue(s) on HQDs")
        },
    )?;
    close(session, b, "process B")?;
    close(session, a, "process A")
}

fn evict_restore(session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    let client = open(session, "process")?;
    create(
        session,
        &client,
        KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        options.ring_size,
        Detail::Summary,
        "CREATE_QUEUE (AQL compute)".to_owned(),
    )?;
    create(
        session,
        &client,
        KFD_IOC_QUEUE_TYPE_SDMA,
        options.ring_size,
        Detail::Summary,
        "CREATE_QUEUE (SDMA)".to_owned(),
    )?;
    let on_hw = |s: &DeviceState| {
        format!(
            "{} queue(s) on the hardware, {} active",
            s.mapped.len(),
            s.active_queues
        )
    };
    session.step(
        "evict the process's queues (kfd_process_evict_queues: memory eviction, suspend, CRIU)",
        Detail::Full,
        |_| {
            client
                .process
                .evict_queues()
                .map_err(|e| CliError::failure(format!("evict: {e}")))
        },
        |_, s| on_hw(s),
    )?;
    session.step(
        "evict again: the count goes to 2, nothing else happens",
        Detail::Full,
        |_| {
            client
                .process
                .evict_queues()
                .map_err(|e| CliError::failure(format!("evict: {e}")))
        },
        |_, s| on_hw(s),
    )?;
    session.step(
        "restore once: the count goes to 1, the queues stay off",
        Detail::Full,
        |_| {
            client
                .process
                .restore_queues()
                .map_err(|e| CliError::failure(format!("restore: {e}")))
        },
        |_, s| on_hw(s),
    )?;
    session.step(
        "restore again: the last restore maps the queues",
        Detail::Full,
        |_| {
            client
                .process
                .restore_queues()
                .map_err(|e| CliError::failure(format!("restore: {e}")))
        },
        |_, s| on_hw(s),
    )?;
    close(session, client, "process")
}
