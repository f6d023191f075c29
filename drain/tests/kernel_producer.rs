//! Issue #18: an instrumented kernel as the producer, drained while it runs. The producer
//! library (drain/device/producer.cl) and the application kernel (traced_work.cl) are built
//! separately with clang-15 and linked by the loader; the kernel runs on the model (gfx900 and
//! gfx90a) while the channel's SDMA queue drains the slots it fills.

use drain::device::{self, fnv1a_words, traced_work_filler, traced_work_value};
use drain::{Channel, ChannelConfig, LossPolicy, SignalWait, Trigger};
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use thunk::{Executable, Gpu, Kfd, MemoryKind, OpenOptions, Preset, QueueOptions};

const T: Duration = Duration::from_secs(8);

/// The code objects for `mcpu`: (library, instrumented kernel, plain kernel); `None` with a
/// message when clang-15 / ld.lld-15 are missing.
fn code(mcpu: &'static str) -> Option<&'static (Vec<u8>, Vec<u8>, Vec<u8>)> {
    static BUILT: OnceLock<std::sync::Mutex<HashMap<&'static str, Option<&'static (Vec<u8>, Vec<u8>, Vec<u8>)>>>> =
        OnceLock::new();
    let map = BUILT.get_or_init(Default::default);
    let mut map = map.lock().unwrap();
    *map.entry(mcpu).or_insert_with(|| {
        let built = device::producer_library(mcpu).and_then(|lib| {
            Ok((lib, device::traced_work(mcpu, true)?, device::traced_work(mcpu, false)?))
        });
        match built {
            Ok(b) => Some(Box::leak(Box::new(b))),
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    })
}

fn gpu(preset: Preset) -> (Kfd, Gpu) {
    let kfd = Kfd::open_with(OpenOptions::model(preset, 1)).unwrap();
    let gpu = kfd.gpu(0).unwrap();
    (kfd, gpu)
}

/// What one traced_work dispatch does.
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
}

/// A record of traced_work, checked: wave, step, timestamp, value; filler and checksum right.
#[derive(Debug)]
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
    assert_eq!(u32::from(r.producer), wave, "producer id is the wave");
    assert!(wave < w.waves && step < w.records, "{wave} {step}");
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

#[test]
fn smoke() {
    let Some((lib, app, _)) = code("gfx900") else { return };
    let _ = env_logger::builder().is_test(true).try_init();
    let (_kfd, gpu) = gpu(Preset::Gfx900);
    let exe = Executable::load_linked(&gpu, &[app, lib]).unwrap();
    let mut ch = Channel::new(&gpu, ChannelConfig::new(1024, 4).trigger(Trigger::KernelEnd)).unwrap();
    ch.attach(&exe).unwrap();
    let w = Work { waves: 1, rounds: 4, records: 200, payload_words: 8 };
    let out = gpu.alloc(MemoryKind::Gtt, 4 * u64::from(w.items())).unwrap();
    let k = exe.kernel("traced_work").unwrap();
    let mut args = k.args().unwrap();
    args.push_pointer(out.gpu_va()).unwrap();
    args.push_u32(w.rounds).unwrap().push_u32(w.records).unwrap().push_u32(w.payload_words).unwrap();
    let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    let t0 = Instant::now();
    let done = q.dispatch(&k, [w.items(), 1, 1], [64, 1, 1], &args).unwrap();
    ch.drain_at(SignalWait::hsa_completion(done.signal_address())).unwrap();
    let mut got = 0;
    let mut running_seen = 0;
    while got < w.records {
        let Some(chunk) = ch.next_chunk(Some(T)).unwrap() else {
            let b = ch.device_buffer();
            let hdr: Vec<u64> = (0..32).map(|i| b.load_u64(i * 8).unwrap()).collect();
            panic!("no slot: done {:?} hdr {hdr:x?}", done.value());
        };
        if !done.is_complete().unwrap() {
            running_seen += 1;
        }
        for r in chunk.records() {
            let t = check_record(&r.unwrap(), &w);
            assert_eq!(t.step, got);
            got += 1;
        }
    }
    done.wait(T).unwrap();
    eprintln!("{got} records in {:?}; {running_seen} chunks while running; {:?}", t0.elapsed(), ch.stats());
}
