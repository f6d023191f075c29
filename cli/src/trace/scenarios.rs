//! The scenarios of `kfd trace`. Each drives the model through ioctls, CPU stores into
//! mapped memory and doorbells (and, where the kernel acts on its own, the model's driver
//! entry points) in named steps. The engines run only when a step says so
//! (`Model::run_until_idle`), so every trace is the same from run to run.

use kfd_sys::*;
use pm4::sdma::{SdmaFence, SdmaTrap, SdmaWrite};
use pm4::user::{
    ReleaseDataSel, ReleaseIntSel, ReleaseMemArgs, ReleaseMemGfx10, ReleaseMemGfx9, WriteData,
};
use pm4::{Encode, GfxGen, PacketWriter};

use super::capture::Note;
use super::client::{queue_type_name, Client, QueueInfo, QueueMemory};
use super::session::{Detail, DeviceState, Session};
use crate::decode::{self, Engine};
use crate::error::{CliError, CliResult};
use crate::target::Target;

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
    /// A queue writing outside its GPU VM: the fault becomes a memory event, the process is evicted.
    VmFault,
    /// RELEASE_MEM with an interrupt (or SDMA FENCE + TRAP) signals an event WAIT_EVENTS sees.
    EventSignal,
    /// A kernel from the AQL packet through the CP and the SPI to its waves, one of them
    /// instruction by instruction, to the completion signal and the interrupt.
    Dispatch,
    /// XNACK on: a GPU write to an SVM range not yet mapped faults, the driver migrates and maps
    /// it, and the queue retries the write.
    SvmFault,
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
            Scenario::Dispatch => "dispatch",
            Scenario::SvmFault => "svm-fault",
        }
    }

    /// The preset a scenario runs on unless `--preset` says otherwise.
    pub fn default_preset(self) -> kfd_model::Preset {
        match self {
            // Navi 21 gives KFD 8 HQDs: a ninth queue oversubscribes.
            Scenario::Oversubscribe => kfd_model::Preset::Gfx1030,
            // Per-process XNACK needs GC 9.4.2 (MI200).
            Scenario::SvmFault => kfd_model::Preset::Gfx90a,
            _ => kfd_model::Preset::Gfx900,
        }
    }
}

/// Options the scenarios read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScenarioOptions {
    /// `KFD_IOC_QUEUE_TYPE_*` of the queue the scenario makes (where it makes a choice).
    pub queue_type: u32,
    /// Ring size in bytes.
    pub ring_size: u32,
    /// The wave `dispatch` traces instruction by instruction (its number in the dispatch).
    pub wave: u64,
}

/// The queue types a scenario accepts; the first is its default.
pub fn queue_types(scenario: Scenario) -> &'static [u32] {
    match scenario {
        Scenario::CreateQueue => &[
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            KFD_IOC_QUEUE_TYPE_COMPUTE,
            KFD_IOC_QUEUE_TYPE_SDMA,
        ],
        // The packets are PM4 or SDMA; an AQL queue would need them wrapped in vendor packets.
        Scenario::VmFault | Scenario::EventSignal => {
            &[KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_SDMA]
        }
        Scenario::SvmFault => &[KFD_IOC_QUEUE_TYPE_SDMA, KFD_IOC_QUEUE_TYPE_COMPUTE],
        Scenario::Oversubscribe | Scenario::EvictRestore | Scenario::Dispatch => {
            &[KFD_IOC_QUEUE_TYPE_COMPUTE_AQL]
        }
    }
}

/// Runs `scenario` on `session`.
pub fn run(scenario: Scenario, session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    match scenario {
        Scenario::CreateQueue => create_queue(session, options),
        Scenario::Oversubscribe => oversubscribe(session, options),
        Scenario::EvictRestore => evict_restore(session, options),
        Scenario::VmFault => vm_fault(session, options),
        Scenario::EventSignal => event_signal(session, options),
        Scenario::Dispatch => super::dispatch::dispatch(session, options),
        Scenario::SvmFault => svm_fault(session, options),
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
    let doorbell = node.debugfs().queue_doorbell(pasid, queue);
    doorbell
}

fn create(
    session: &mut Session,
    client: &Client,
    queue_type: u32,
    ring_size: u32,
    detail: Detail,
    title: String,
) -> CliResult<(QueueInfo, QueueMemory)> {
    // The buffers first, as their own quiet step, so the CREATE_QUEUE step holds only it.
    let (args, memory) = session.step(
        format!(
            "allocate and map the buffers for the {} queue",
            queue_type_name(queue_type)
        ),
        Detail::Summary,
        |_| client.queue_args(queue_type, ring_size, 7),
        |(a, _), _| {
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
    Ok((info, memory))
}

fn create_queue(session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    let client = open(session, "process")?;
    let kind = queue_type_name(options.queue_type);
    let (info, _) = create(
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
    let (pasid_a, pasid_b) = (a.pasid(), b.pasid());
    // What a time slice changed: queues per process on HQDs, and which queues (by doorbell
    // offset) came on and went off.
    let rotation = move |before: &Vec<u32>, s: &DeviceState| {
        let count = |pasid: u32| {
            s.mapped
                .iter()
                .filter(|m| u32::from(m.pasid) == pasid)
                .count()
        };
        let now: Vec<u32> = s.mapped.iter().map(|m| m.doorbell).collect();
        let list = |v: Vec<u32>| {
            if v.is_empty() {
                "none".to_owned()
            } else {
                v.iter()
                    .map(|d| format!("{d:#x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let on = list(
            now.iter()
                .copied()
                .filter(|d| !before.contains(d))
                .collect(),
        );
        let off = list(
            before
                .iter()
                .copied()
                .filter(|d| !now.contains(d))
                .collect(),
        );
        format!(
            "A has {} queue(s) on HQDs, B has {}; doorbell(s) on: {on}; off: {off}",
            count(pasid_a),
            count(pasid_b)
        )
    };
    let tick = move |s: &mut Session| {
        let before: Vec<u32> = s.state().mapped.iter().map(|m| m.doorbell).collect();
        node.hws_time_slice();
        Ok(before)
    };
    session.step(
        "HWS time slice: the quantum ends, every queue is preempted, mapping resumes at the \
         first queue left out (queue by queue)",
        Detail::Full,
        tick.clone(),
        rotation,
    )?;
    session.step(
        "HWS time slice again: the next queue left out gets its turn",
        Detail::Summary,
        tick,
        rotation,
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

fn encode<P: Encode + ?Sized>(packet: &P) -> CliResult<Vec<u32>> {
    let mut words = vec![0u32; packet.dwords()];
    let n = PacketWriter::new(&mut words)
        .push(packet)
        .map_err(|e| CliError::failure(format!("cannot encode a packet: {e}")))?;
    words.truncate(n);
    Ok(words)
}

fn build_error(e: pm4::BuildError) -> CliError {
    CliError::failure(format!("cannot build a packet: {e}"))
}

/// RELEASE_MEM writing `data` (32 bits) to `addr` at end of pipe, with an interrupt carrying
/// `ctxid` after the write is confirmed (facts §4.3, §8.2).
fn release_mem_with_interrupt(
    gen: GfxGen,
    addr: u64,
    data: u32,
    ctxid: u32,
) -> CliResult<Vec<u32>> {
    let args = ReleaseMemArgs::end_of_pipe(
        addr,
        u64::from(data),
        ReleaseDataSel::Data32,
        ReleaseIntSel::SendInterruptAfterWriteConfirm,
        ctxid,
    );
    match gen {
        GfxGen::Gfx9 => {
            encode(&ReleaseMemGfx9::new(&args, Default::default()).map_err(build_error)?)
        }
        GfxGen::Gfx10 | GfxGen::Gfx11 => {
            encode(&ReleaseMemGfx10::new(&args, Default::default()).map_err(build_error)?)
        }
    }
}

/// The target whose layouts the session's GPU uses.
fn target_of(session: &Session) -> Target {
    Target::of_preset(session.preset)
}

/// Writes `words` into the ring at the start, stores the write pointer in the queue's unit
/// (dwords for PM4, bytes for SDMA) and rings the doorbell — one step, with the packets.
fn submit(
    session: &mut Session,
    client: &Client,
    queue: &QueueInfo,
    memory: &QueueMemory,
    words: &[u32],
    what: &str,
) -> CliResult<u64> {
    let sdma = queue.queue_type == KFD_IOC_QUEUE_TYPE_SDMA;
    let wptr = if sdma {
        words.len() as u64 * 4
    } else {
        words.len() as u64
    };
    let unit = if sdma { "bytes" } else { "dwords" };
    let engine = if sdma { Engine::Sdma } else { Engine::Pm4 };
    let (_, packets) = decode::decode_words(words, 0, engine, target_of(session), false);
    let (ring, wptr_address) = (queue.ring.0, queue.wptr_address);
    let doorbell = queue.doorbell_offset;
    session.step(
        format!("client: {what} → ring, write pointer, doorbell"),
        Detail::Full,
        |s| {
            memory.write_ring(0, words)?;
            s.note(
                kfd_model::layer::USER,
                format!("{} dwords written at ring {ring:#x}", words.len()),
                vec![Note::Written {
                    what: format!("ring {ring:#x}"),
                    packets,
                }],
            );
            memory.store_wptr(wptr)?;
            s.note("user", format!("write pointer {wptr} ({unit}) stored at {wptr_address:#x}"), Vec::new());
            client.ring_doorbell(queue, wptr)?;
            s.note(
                kfd_model::layer::USER,
                format!("doorbell (mmap offset {doorbell:#x}) = {wptr}; nothing runs until the engines look"),
                Vec::new(),
            );
            Ok(wptr)
        },
        |_, _| format!("write pointer {wptr} {unit}"),
    )
}

/// The engines run until nothing moves.
fn run_engines(
    session: &mut Session,
    client: &Client,
    queue: &QueueInfo,
    sdma: bool,
) -> CliResult<()> {
    let engine = if sdma { "SDMA engine" } else { "CP" };
    let model = session.model.clone();
    let qid = queue.id;
    session
        .step(
            format!(
                "the {engine} runs the queue; interrupts reach the driver (Model::run_until_idle)"
            ),
            Detail::Full,
            |_| Ok(model.run_until_idle()),
            |activity, _| {
                let state = client.process.queue_state(qid);
                let mut text = format!(
                    "{} packet(s), {} interrupt(s)",
                    activity.packets, activity.interrupts
                );
                if let Some(st) = state {
                    text.push_str(&format!("; read pointer {} {}", st.rptr, st.unit));
                    if let Some(e) = st.error {
                        text.push_str(&format!("; queue stopped: {e}"));
                    }
                }
                text
            },
        )
        .map(|_| ())
}

fn wait(
    session: &mut Session,
    client: &Client,
    event_id: u32,
    memory: bool,
) -> CliResult<kfd_event_data> {
    let (result, data) = session.step(
        format!("WAIT_EVENTS on event {}", event_name(event_id)),
        Detail::Full,
        |_| client.wait_event(event_id, 1000),
        |(result, data), _| {
            let name = match *result {
                KFD_IOC_WAIT_RESULT_COMPLETE => "COMPLETE",
                KFD_IOC_WAIT_RESULT_TIMEOUT => "TIMEOUT",
                _ => "FAIL",
            };
            if memory && *result == KFD_IOC_WAIT_RESULT_COMPLETE {
                let m = data.data.memory_exception_data();
                format!(
                    "{name}: memory exception at va {:#x} on gpu {:#x} (not present {}, read-only {})",
                    m.va, m.gpu_id, m.failure.NotPresent, m.failure.ReadOnly
                )
            } else {
                name.to_owned()
            }
        },
    )?;
    if result != KFD_IOC_WAIT_RESULT_COMPLETE {
        return Err(CliError::failure(format!(
            "WAIT_EVENTS on event {event_id} returned wait result {result}, not COMPLETE"
        )));
    }
    Ok(data)
}

/// Signal events are small numbers; the others start at 0x40000000 and read better in hex.
fn event_name(id: u32) -> String {
    if id >= 0x4000_0000 {
        format!("{id:#x}")
    } else {
        id.to_string()
    }
}

fn queue_type_for(scenario: Scenario, options: ScenarioOptions) -> u32 {
    let allowed = queue_types(scenario);
    if allowed.contains(&options.queue_type) {
        options.queue_type
    } else {
        allowed
            .first()
            .copied()
            .unwrap_or(KFD_IOC_QUEUE_TYPE_COMPUTE)
    }
}

fn event_signal(session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    let queue_type = queue_type_for(Scenario::EventSignal, options);
    let sdma = queue_type == KFD_IOC_QUEUE_TYPE_SDMA;
    let client = open(session, "process")?;
    let (page, event) = session.step(
        "allocate the event page; CREATE_EVENT (signal, auto-reset) hands it to the driver",
        Detail::Summary,
        |_| {
            let page = client.buffer(KFD_SIGNAL_EVENT_PAGE_SIZE)?;
            let event = client.create_event(KFD_IOC_EVENT_SIGNAL, true, page.handle)?;
            Ok((page, event))
        },
        |(page, e), _| {
            format!(
                "event {} (slot {:#x} = page + 8 x {}), trigger data {:#x}",
                e.event_id,
                page.va + 8 * u64::from(e.event_slot_index),
                e.event_slot_index,
                e.event_trigger_data
            )
        },
    )?;
    let (queue, memory) = create(
        session,
        &client,
        queue_type,
        options.ring_size,
        Detail::Summary,
        format!("CREATE_QUEUE ({})", queue_type_name(queue_type)),
    )?;
    let id = event.event_id;
    let slot = page.va + 8 * u64::from(event.event_slot_index);
    let (words, what) = if sdma {
        let mut w = encode(&SdmaFence::new(slot, id).map_err(build_error)?)?;
        w.extend(encode(&SdmaTrap::new(id).map_err(build_error)?)?);
        (
            w,
            format!("SDMA FENCE to the event slot + TRAP with context {id}"),
        )
    } else {
        let gen = target_of(session).generation();
        (
            release_mem_with_interrupt(gen, slot, id, id)?,
            format!("RELEASE_MEM (int_sel 2, data_sel 1, int_ctxid {id}) to the event slot"),
        )
    };
    submit(session, &client, &queue, &memory, &words, &what)?;
    run_engines(session, &client, &queue, sdma)?;
    wait(session, &client, id, false)?;
    if let Some(step) = session.steps.last_mut() {
        if let Some(v) = page.read_u64(8 * u64::from(event.event_slot_index)) {
            step.outcome.push_str(&format!("; slot now {v:#x}"));
        }
    }
    close(session, client, "process")
}

/// An address no buffer of the scenario is mapped at.
const UNMAPPED_VA: u64 = 0xdead_b008;

fn vm_fault(session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    let queue_type = queue_type_for(Scenario::VmFault, options);
    let sdma = queue_type == KFD_IOC_QUEUE_TYPE_SDMA;
    let client = open(session, "process")?;
    let event = session.step(
        "CREATE_EVENT (memory exception)",
        Detail::Summary,
        |_| client.create_event(KFD_IOC_EVENT_MEMORY, false, 0),
        |e, _| format!("event {:#x}", e.event_id),
    )?;
    let (queue, memory) = create(
        session,
        &client,
        queue_type,
        options.ring_size,
        Detail::Summary,
        format!("CREATE_QUEUE ({})", queue_type_name(queue_type)),
    )?;
    let data = [0x0BAD_F00D_u32];
    let (words, what) = if sdma {
        (
            encode(&SdmaWrite::new(UNMAPPED_VA, &data).map_err(build_error)?)?,
            format!("an SDMA WRITE to {UNMAPPED_VA:#x}, where nothing is mapped"),
        )
    } else {
        (
            encode(&WriteData::memory(UNMAPPED_VA, &data).map_err(build_error)?)?,
            format!("a WRITE_DATA to {UNMAPPED_VA:#x}, where nothing is mapped"),
        )
    };
    submit(session, &client, &queue, &memory, &words, &what)?;
    run_engines(session, &client, &queue, sdma)?;
    wait(session, &client, event.event_id, true)?;
    close(session, client, "process")
}

fn svm_fault(session: &mut Session, options: ScenarioOptions) -> CliResult<()> {
    let queue_type = queue_type_for(Scenario::SvmFault, options);
    let sdma = queue_type == KFD_IOC_QUEUE_TYPE_SDMA;
    let client = open(session, "process")?;
    let gpu = session.gpu_id;
    session.step(
        "SET_XNACK_MODE 1 (GPU page faults become recoverable)",
        Detail::Summary,
        |_| {
            let mut a = kfd_ioctl_set_xnack_mode_args { xnack_enabled: 1 };
            client.ioctl::<SetXnackMode>(&mut a)?;
            Ok(a.xnack_enabled)
        },
        |on, _| format!("XNACK {}", if *on > 0 { "on" } else { "off" }),
    )?;
    let pages = 2;
    let range = Client::svm_memory(pages);
    let attr = |r#type, value| kfd_ioctl_svm_attribute { r#type, value };
    session.step(
        format!("SVM SET_ATTR [{range:#x}, +{:#x}): ACCESS and PREFERRED_LOC gpu {gpu:#x}, GRANULARITY 0 (one page)", pages * 4096),
        Detail::Full,
        |_| {
            client.svm(
                KFD_IOCTL_SVM_OP_SET_ATTR,
                range,
                pages * 4096,
                &[
                    attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
                    attr(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, gpu),
                    attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0),
                ],
            )
        },
        |_, _| "a range in system memory; with XNACK on nothing is mapped on the GPU yet".to_owned(),
    )?;
    let (queue, memory) = create(
        session,
        &client,
        queue_type,
        options.ring_size,
        Detail::Summary,
        format!("CREATE_QUEUE ({})", queue_type_name(queue_type)),
    )?;
    let target = range + 0x10;
    let data = [0x5EED_F00D_u32];
    let (words, what) = if sdma {
        (
            encode(&SdmaWrite::new(target, &data).map_err(build_error)?)?,
            format!("an SDMA WRITE to {target:#x}, inside the range"),
        )
    } else {
        (
            encode(&WriteData::memory(target, &data).map_err(build_error)?)?,
            format!("a WRITE_DATA to {target:#x}, inside the range"),
        )
    };
    submit(session, &client, &queue, &memory, &words, &what)?;
    run_engines(session, &client, &queue, sdma)?;
    let process = &client.process;
    session.step(
        "the CPU reads the word; where the range lives now",
        Detail::Summary,
        |_| {
            let mut word = [0u8; 4];
            kfd_model::user::SelfProcess
                .read(target, &mut word)
                .map_err(|e| CliError::failure(format!("reading {target:#x}: {e}")))?;
            Ok((
                u32::from_le_bytes(word),
                process.svm_ranges(),
                process.svm_stats(),
            ))
        },
        |(word, ranges, stats), _| {
            let places: Vec<String> = ranges
                .iter()
                .map(|(s, e, loc, _)| {
                    let at = if *loc == 0 {
                        "system memory".to_owned()
                    } else {
                        format!("VRAM of gpu {loc:#x}")
                    };
                    format!("[{s:#x}, {e:#x}) in {at}")
                })
                .collect();
            format!(
                "{word:#x}; {} recovered fault(s), {} migration(s) to VRAM; {}",
                stats.recoverable_faults,
                stats.migrations_to_vram,
                places.join(", ")
            )
        },
    )?;
    close(session, client, "process")
}
