//! Issue #18: an instrumented kernel as the producer, drained while it runs. The producer
//! library (drain/device/producer.cl) and the application kernel (traced_work.cl) are built
//! separately with clang-15 / ld.lld-15 and linked by the loader; the kernel runs on the model
//! (gfx900 and gfx90a) while the channel's SDMA queue drains the slots it fills. Without the
//! LLVM tools, a failure (or a skip with a message where `KFD_SKIP_MISSING_TOOLS=1`:
//! `kfd_testkit`).

use drain::device::{self, fnv1a_words, traced_work_filler, traced_work_value};
use drain::{Channel, ChannelConfig, LossPolicy, SignalWait, Stats, Trigger};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use thunk::{Executable, Gpu, Kfd, MemoryKind, OpenOptions, Preset, QueueOptions, WaitStatus};

const T: Duration = Duration::from_secs(120);
const TARGETS: [(Preset, &str); 2] = [(Preset::Gfx900, "gfx900"), (Preset::Gfx90a, "gfx90a")];

type Built = (Vec<u8>, Vec<u8>, Vec<u8>);

/// The code objects for `mcpu`: (library, instrumented kernel, plain kernel); `None` when
/// clang-15 / ld.lld-15 are missing and skipping is allowed.
fn code(mcpu: &'static str) -> Option<&'static Built> {
    static BUILT: OnceLock<Mutex<HashMap<&'static str, Option<&'static Built>>>> = OnceLock::new();
    let mut map = BUILT.get_or_init(Default::default).lock().unwrap();
    *map.entry(mcpu).or_insert_with(|| {
        kfd_testkit::tools(&["clang-15", "ld.lld-15"])?;
        let built = device::producer_library(mcpu).and_then(|lib| {
            Ok((
                lib,
                device::traced_work(mcpu, true)?,
                device::traced_work(mcpu, false)?,
            ))
        });
        match built {
            Ok(b) => Some(Box::leak(Box::new(b))),
            Err(e) => panic!("building the drain kernels for {mcpu}: {e}"),
        }
    })
}

fn open(preset: Preset) -> (Kfd, Gpu) {
    let _ = env_logger::builder().is_test(true).try_init();
    let kfd = Kfd::open_with(OpenOptions::model(preset, 1)).unwrap();
    let gpu = kfd.gpu(0).unwrap();
    (kfd, gpu)
}

/// What one traced_work dispatch does: `waves` waves (one per workgroup of 64), each
/// `records` steps of `rounds` iterations, a record of `payload_words` words per step.
#[derive(Clone, Copy, Debug)]
struct Work {
    waves: u32,
    rounds: u32,
    records: u32,
    payload_words: u32,
}

impl Work {
    fn items(&self) -> u32 {
        self.waves * 64
    }

    fn record_bytes(&self) -> u64 {
        8 + 4 * u64::from(self.payload_words)
    }

    fn total_bytes(&self) -> u64 {
        u64::from(self.waves * self.records) * self.record_bytes()
    }

    /// out[] as the host computes it.
    fn reference(&self) -> Vec<u32> {
        let n = u64::from(self.records) * u64::from(self.rounds);
        (0..self.items()).map(|g| traced_work_value(g, n)).collect()
    }
}

/// A received record, checked: kind, length, checksum, filler, lane 0's value.
#[derive(Debug, Clone, Copy)]
struct Traced {
    wave: u32,
    step: u32,
    time: u64,
}

fn check_record(r: &drain::Record<'_>, w: &Work) -> Traced {
    assert_eq!(r.kind, device::TRACED_WORK_KIND);
    assert_eq!(r.payload.len() as u32, 4 * w.payload_words);
    let words: Vec<u32> = r
        .payload
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let n = words.len();
    assert_eq!(words[n - 1], fnv1a_words(&words[..n - 1]), "checksum");
    let (wave, step) = (words[0], words[1]);
    assert_eq!(u32::from(r.producer), wave, "the producer id is the wave");
    assert!(
        wave < w.waves && step < w.records,
        "wave {wave} step {step}"
    );
    assert_eq!(
        words[4],
        traced_work_value(wave * 64, u64::from(step + 1) * u64::from(w.rounds)),
        "lane 0's value of wave {wave} after step {step}"
    );
    for (i, &f) in words.iter().enumerate().take(n - 1).skip(5) {
        assert_eq!(f, traced_work_filler(wave, step, i as u32));
    }
    Traced {
        wave,
        step,
        time: u64::from(words[2]) | u64::from(words[3]) << 32,
    }
}

/// What a traced dispatch gave.
#[derive(Debug)]
struct Outcome {
    records: Vec<Traced>,
    /// Records the reader held before the kernel had completed.
    received_while_running: usize,
    /// Whether the last slot was a flush (the kernel-end trigger).
    last_flushed: bool,
    stats: Stats,
    out: Vec<u32>,
}

/// When the reader of [`traced_run`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReaderStart {
    /// At once.
    Now,
    /// Once a lossless producer has found no free slot (the buffer and host ring are full).
    AfterStall,
    /// Once the kernel has completed (drop mode: everything that did not fit was dropped).
    AfterKernel,
}

/// Loads the instrumented kernel with the library, attaches `config`'s channel, dispatches
/// `w`, starts reading as `start` says, reads until the kernel ended and every committed
/// record arrived.
fn traced_run(
    preset: Preset,
    mcpu: &'static str,
    w: Work,
    config: ChannelConfig,
    start: ReaderStart,
) -> Option<Outcome> {
    let (lib, app, _) = code(mcpu)?;
    let (_kfd, gpu) = open(preset);
    let exe = Executable::load_linked(&gpu, &[app, lib]).unwrap();
    let mut ch = Channel::new(&gpu, config.trigger(Trigger::KernelEnd)).unwrap();
    ch.attach(&exe).unwrap();
    let out = gpu
        .alloc(MemoryKind::Gtt, 4 * u64::from(w.items()))
        .unwrap();
    let k = exe.kernel("traced_work").unwrap();
    let mut args = k.args().unwrap();
    args.push_pointer(out.gpu_va()).unwrap();
    for v in [w.rounds, w.records, w.payload_words] {
        args.push_u32(v).unwrap();
    }
    let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    let done = q
        .dispatch(&k, [w.items(), 1, 1], [64, 1, 1], &args)
        .unwrap();
    ch.drain_at(SignalWait::hsa_completion(done.signal_address()))
        .unwrap();
    let deadline = Instant::now() + T;
    loop {
        let ready = match start {
            ReaderStart::Now => true,
            ReaderStart::AfterStall => ch.stats().producer_stalls > 0,
            ReaderStart::AfterKernel => done.is_complete().unwrap(),
        };
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "{start:?} never came");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut records = Vec::new();
    let mut received_while_running = 0;
    let mut last_flushed = false;
    loop {
        assert!(Instant::now() < deadline, "the session did not end");
        let complete = done.is_complete().unwrap();
        let got = match ch.next_chunk(Some(Duration::from_millis(100))).unwrap() {
            Some(chunk) => {
                let before = records.len();
                for r in chunk.records() {
                    records.push(check_record(&r.unwrap(), &w));
                }
                if !done.is_complete().unwrap() {
                    received_while_running += records.len() - before;
                }
                last_flushed = chunk.flushed();
                true
            }
            None => false,
        };
        if !got {
            let s = ch.stats();
            if complete && s.kernel_ends == 1 && records.len() as u64 == s.records_produced {
                break;
            }
        }
    }
    done.wait(T).unwrap();
    let stats = ch.close().unwrap().stats;
    let out = out
        .read_vec(0, 4 * w.items() as usize)
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    Some(Outcome {
        records,
        received_while_running,
        last_flushed,
        stats,
        out,
    })
}

/// Per wave, the steps received, in arrival order.
fn steps_per_wave(records: &[Traced], waves: u32) -> Vec<Vec<u32>> {
    let mut per = vec![Vec::new(); waves as usize];
    for r in records {
        per[r.wave as usize].push(r.step);
    }
    per
}

#[test]
fn lossless_kernel_records_all_arrive_in_order_while_the_kernel_runs() {
    for (preset, mcpu) in TARGETS {
        // 2 waves × 120 records of 40 bytes = 9600 bytes through 4 slots of 1 KiB (and 4 host
        // slots): more than both hold, so the kernel cannot end before the reader has taken
        // slots, and producers must wait while the reader sleeps first.
        let w = Work {
            waves: 2,
            rounds: 3,
            records: 120,
            payload_words: 8,
        };
        let config = ChannelConfig::new(1024, 4);
        assert!(w.total_bytes() > 2 * 4 * 1024);
        let Some(o) = traced_run(preset, mcpu, w, config, ReaderStart::AfterStall) else {
            return;
        };
        let per = steps_per_wave(&o.records, w.waves);
        for (wave, steps) in per.iter().enumerate() {
            assert_eq!(
                *steps,
                (0..w.records).collect::<Vec<_>>(),
                "{mcpu}: wave {wave}: every record, in order"
            );
        }
        // Timestamps never go back within a wave.
        for wave in 0..w.waves {
            let times: Vec<u64> = o
                .records
                .iter()
                .filter(|r| r.wave == wave)
                .map(|r| r.time)
                .collect();
            assert!(
                times.windows(2).all(|p| p[0] <= p[1]),
                "{mcpu}: wave {wave} times"
            );
        }
        assert!(
            o.received_while_running > 0,
            "{mcpu}: records reached the reader while the kernel ran"
        );
        let s = o.stats;
        assert_eq!(s.records_produced, u64::from(w.waves * w.records), "{mcpu}");
        assert_eq!(s.bytes_produced, w.total_bytes(), "{mcpu}");
        assert_eq!(s.bytes_drained, w.total_bytes(), "{mcpu}");
        assert_eq!((s.records_dropped, s.bytes_dropped), (0, 0), "{mcpu}");
        assert!(
            s.producer_stalls > 0,
            "{mcpu}: lossless producers waited: {s:?}"
        );
        assert_eq!(s.kernel_ends, 1, "{mcpu}");
        // 9600 bytes = 10 slots of 960 exactly: the kernel-end flush finds nothing to close.
        assert!(!o.last_flushed, "{mcpu}");
        assert_eq!(s.slots_drained, 10, "{mcpu}");
        assert_eq!(o.out, w.reference(), "{mcpu}: the application's results");
        eprintln!(
            "{mcpu}: {} records, {} while the kernel ran, {} producer stalls, {} slots",
            o.records.len(),
            o.received_while_running,
            s.producer_stalls,
            s.slots_drained
        );
    }
}

#[test]
fn drop_mode_counts_exactly_what_it_drops() {
    for (preset, mcpu) in TARGETS {
        let w = Work {
            waves: 2,
            rounds: 2,
            records: 100,
            payload_words: 14, // 64-byte records: 15 per 960-byte slot
        };
        let config = ChannelConfig::new(1024, 4).loss(LossPolicy::Drop);
        // The reader starts after the kernel: the buffer and host ring hold 8 slots of 15
        // records, the other 80 of the 200 are dropped.
        let Some(o) = traced_run(preset, mcpu, w, config, ReaderStart::AfterKernel) else {
            return;
        };
        let s = o.stats;
        let total = u64::from(w.waves * w.records);
        let received = o.records.len() as u64;
        assert_eq!(s.records_dropped, 80, "{mcpu}: {s:?}");
        assert_eq!(
            received, s.records_produced,
            "{mcpu}: every written record arrived"
        );
        assert_eq!(
            received + s.records_dropped,
            total,
            "{mcpu}: written + dropped = all"
        );
        assert_eq!(
            s.bytes_dropped,
            s.records_dropped * w.record_bytes(),
            "{mcpu}"
        );
        assert_eq!(
            s.producer_stalls, 0,
            "{mcpu}: drop-mode producers never wait"
        );
        for (wave, steps) in steps_per_wave(&o.records, w.waves).iter().enumerate() {
            assert!(
                steps.windows(2).all(|p| p[0] < p[1]),
                "{mcpu}: wave {wave}: in order, gaps only"
            );
        }
        assert_eq!(s.bytes_drained, s.bytes_produced, "{mcpu}: {s:?}");
        // A partly filled last slot was closed by the kernel-end flush.
        assert_eq!(
            o.last_flushed,
            s.bytes_produced % 960 != 0,
            "{mcpu}: the kernel-end flush: {s:?}"
        );
        assert_eq!(o.out, w.reference(), "{mcpu}: the application's results");
        eprintln!("{mcpu}: {received} received, {} dropped", s.records_dropped);
    }
}

/// Runs the plain or the instrumented kernel without a channel; returns out[].
fn untraced_out(gpu: &Gpu, code: &[&[u8]], w: Work) -> Vec<u32> {
    let exe = Executable::load_linked(gpu, code).unwrap();
    let out = gpu
        .alloc(MemoryKind::Gtt, 4 * u64::from(w.items()))
        .unwrap();
    let k = exe.kernel("traced_work").unwrap();
    let mut args = k.args().unwrap();
    args.push_pointer(out.gpu_va()).unwrap();
    for v in [w.rounds, w.records, w.payload_words] {
        args.push_u32(v).unwrap();
    }
    let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    q.dispatch(&k, [w.items(), 1, 1], [64, 1, 1], &args)
        .unwrap()
        .wait(T)
        .unwrap();
    out.read_vec(0, 4 * w.items() as usize)
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn instrumentation_leaves_the_application_results_unchanged() {
    for (preset, mcpu) in TARGETS {
        let Some((lib, app, plain)) = code(mcpu) else {
            return;
        };
        let w = Work {
            waves: 3,
            rounds: 5,
            records: 20,
            payload_words: 6,
        };
        let (_kfd, gpu) = open(preset);
        let reference = w.reference();
        assert_eq!(untraced_out(&gpu, &[plain], w), reference, "{mcpu}: plain");
        // The library linked in but no channel attached: every call returns NULL.
        assert_eq!(
            untraced_out(&gpu, &[app, lib], w),
            reference,
            "{mcpu}: unattached"
        );
        // Attached: the records flow and the results are the same.
        let Some(o) = traced_run(
            preset,
            mcpu,
            w,
            ChannelConfig::new(4096, 2),
            ReaderStart::Now,
        ) else {
            return;
        };
        assert_eq!(o.out, reference, "{mcpu}: traced");
        assert_eq!(o.records.len() as u32, w.waves * w.records, "{mcpu}");
        // 1920 bytes in a 4032-byte slot: only the kernel-end flush drains them.
        assert!(o.last_flushed, "{mcpu}");
        assert_eq!((o.stats.flushes, o.stats.slots_drained), (1, 1), "{mcpu}");
    }
}

#[test]
fn the_kernel_announces_full_slots_with_s_sendmsg() {
    for (preset, mcpu) in TARGETS {
        let Some((lib, app, _)) = code(mcpu) else {
            return;
        };
        let (_kfd, gpu) = open(preset);
        let exe = Executable::load_linked(&gpu, &[app, lib]).unwrap();
        let mut ch = Channel::new(&gpu, ChannelConfig::new(1024, 4).notify_full(true)).unwrap();
        ch.attach(&exe).unwrap();
        // Layout: the header names the event's mailbox slot, id and value.
        let b = ch.device_buffer();
        let e = ch
            .slot_full_event()
            .expect("an event")
            .signal_target()
            .unwrap();
        assert_eq!(
            b.load_u64(drain::layout::header::NOTIFY_MAILBOX).unwrap(),
            e.slot_address
        );
        assert_eq!(
            b.load_u32(drain::layout::header::NOTIFY_EVENT_ID).unwrap(),
            e.int_ctxid
        );
        let w = Work {
            waves: 1,
            rounds: 2,
            records: 72, // 40-byte records, 24 per slot: exactly 3 slots
            payload_words: 8,
        };
        let out = gpu
            .alloc(MemoryKind::Gtt, 4 * u64::from(w.items()))
            .unwrap();
        let k = exe.kernel("traced_work").unwrap();
        let mut args = k.args().unwrap();
        args.push_pointer(out.gpu_va()).unwrap();
        for v in [w.rounds, w.records, w.payload_words] {
            args.push_u32(v).unwrap();
        }
        let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
        let done = q
            .dispatch(&k, [w.items(), 1, 1], [64, 1, 1], &args)
            .unwrap();
        // Nobody reads before the first interrupt: the wake-up is the kernel's s_sendmsg
        // (the drain's own interrupts go to the channel's other event).
        let woke = ch
            .slot_full_event()
            .unwrap()
            .wait(Some(Duration::from_secs(60)))
            .unwrap();
        assert_eq!(woke, WaitStatus::Signaled, "{mcpu}");
        let mut got = 0;
        while got < w.records {
            let chunk = ch.next_chunk(Some(T)).unwrap().expect("a slot");
            for r in chunk.records() {
                assert_eq!(check_record(&r.unwrap(), &w).step, got);
                got += 1;
            }
        }
        done.wait(T).unwrap();
        let s = ch.stats();
        assert_eq!(s.slots_drained, 3, "{mcpu}");
        assert_eq!(s.slots_notified, 3, "{mcpu}: one interrupt per full slot");
        assert_eq!(out.load_u32(0).unwrap(), w.reference()[0], "{mcpu}");
    }
}

#[test]
fn a_kernel_killed_midway_leaves_the_channel_clean() {
    for (preset, mcpu) in TARGETS {
        let Some((lib, app, _)) = code(mcpu) else {
            return;
        };
        let (_kfd, gpu) = open(preset);
        let exe = Executable::load_linked(&gpu, &[app, lib]).unwrap();
        let mut ch = Channel::new(&gpu, ChannelConfig::new(1024, 2).host_slots(2)).unwrap();
        ch.attach(&exe).unwrap();
        let w = Work {
            waves: 2,
            rounds: 1,
            records: 1000, // 80 KB: far more than the 4 KiB of slots the unread channel holds
            payload_words: 8,
        };
        let out = gpu
            .alloc(MemoryKind::Gtt, 4 * u64::from(w.items()))
            .unwrap();
        let k = exe.kernel("traced_work").unwrap();
        let mut args = k.args().unwrap();
        args.push_pointer(out.gpu_va()).unwrap();
        for v in [w.rounds, w.records, w.payload_words] {
            args.push_u32(v).unwrap();
        }
        let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
        let done = q
            .dispatch(&k, [w.items(), 1, 1], [64, 1, 1], &args)
            .unwrap();
        // Nobody reads: the producers fill everything and stall in s_sleep.
        let deadline = Instant::now() + T;
        while ch.stats().producer_stalls == 0 {
            assert!(
                Instant::now() < deadline,
                "{mcpu}: the producers never stalled"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // Kill it: destroy the application's queue mid-kernel.
        drop(q);
        assert!(
            !done.is_complete().unwrap(),
            "{mcpu}: killed, not completed"
        );
        std::mem::forget(done); // its signal buffer belonged to the dead dispatch
        let before = ch.stats();
        assert!(
            before.records_produced > 0 && before.records_produced < u64::from(w.waves * w.records)
        );
        // The channel still works: flush the partial slot and read what was committed.
        ch.flush().unwrap();
        let mut records = Vec::new();
        while let Some(chunk) = ch.next_chunk(Some(Duration::from_millis(500))).unwrap() {
            for r in chunk.records() {
                records.push(check_record(&r.unwrap(), &w));
            }
        }
        let closed = ch.close().unwrap();
        assert!(closed.unread.is_empty(), "{mcpu}");
        assert_eq!(
            records.len() as u64,
            closed.stats.records_produced,
            "{mcpu}: every committed record"
        );
        for (wave, steps) in steps_per_wave(&records, w.waves).iter().enumerate() {
            assert_eq!(
                *steps,
                (0..steps.len() as u32).collect::<Vec<_>>(),
                "{mcpu}: wave {wave}"
            );
        }
        // And the GPU is usable: a new channel with a host producer moves records.
        let mut again = Channel::new(&gpu, ChannelConfig::new(1024, 2)).unwrap();
        again
            .host_producer(3)
            .produce(9, b"after the kill")
            .unwrap();
        again.flush().unwrap();
        let chunk = again.next_chunk(Some(T)).unwrap().expect("drained");
        let r = chunk.records().next().unwrap().unwrap();
        assert_eq!((r.kind, r.payload), (9, &b"after the kill"[..]));
        eprintln!(
            "{mcpu}: killed after {} records; all {} read back",
            before.records_produced,
            records.len()
        );
    }
}

#[test]
fn a_drain_session_with_the_kernel_producer() {
    for (preset, mcpu) in TARGETS {
        if code(mcpu).is_none() {
            return;
        }
        let (_kfd, gpu) = open(preset);
        // 16 KiB of 64-byte records from 2 waves through 4 KiB of slots and 4 KiB of host ring.
        let channel = ChannelConfig::new(1024, 4).trigger(Trigger::KernelEnd);
        let mut c = drain::DrainConfig::new(channel, 16 << 10);
        c.producer = drain::ProducerKind::Kernel;
        c.record_payload = 56;
        c.kernel_waves = 2;
        let r = drain::run(&gpu, &c, |_| {}).unwrap();
        assert_eq!(
            (r.records, r.records_written, r.records_dropped),
            (256, 256, 0),
            "{mcpu}"
        );
        assert_eq!(r.bytes, 16 << 10, "{mcpu}");
        assert_eq!(r.application_results_ok, Some(true), "{mcpu}");
        assert!(r.records_during_kernel > 0, "{mcpu}: {r:?}");
        assert_eq!(r.stats.kernel_ends, 1, "{mcpu}");
        // Too small a payload for the kernel's record is refused, not truncated.
        c.record_payload = 16;
        assert!(matches!(
            drain::run(&gpu, &c, |_| {}),
            Err(drain::Error::Config(_))
        ));
    }
}
