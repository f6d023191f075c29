//! The device-side producer: `drain/device/producer.cl`, a library of device functions that
//! an instrumented kernel calls to write records (reserve with a compare-and-swap on the
//! cursor, write, commit with a system-scope release add; lossless producers `s_sleep` while
//! no slot is free, drop-mode producers count; an optional `s_sendmsg` interrupt per filled
//! slot). It follows `LAYOUT.md` exactly as [`crate::HostProducer`] does.
//!
//! The library is *not* compiled into the application: it is built on its own as a shared
//! code object with the functions as global symbols, the application's kernels are built
//! with the calls left undefined, and the loader links both into one executable
//! ([`thunk::Executable::load_linked`]). [`Channel::attach`](crate::Channel::attach) then
//! writes the channel's buffer address into the library's [`BUFFER_VARIABLE`].
//!
//! The device C sources are compiled at run time with Debian's `clang-15` and `ld.lld-15`
//! (OpenCL C 2.0, no device libraries); [`build`] fails with a [`crate::Error::Config`]
//! naming the missing tool when they are not installed.
//!
//! Device API (OpenCL C; the same in HIP with `__device__`):
//!
//! ```c
//! global void *kfd_drain_reserve(uint len, uint kind, uint producer); // NULL: not written
//! void kfd_drain_commit(global void *payload);
//! int kfd_drain_write(uint kind, uint producer, const global uint *payload, uint len);
//! ```

use crate::channel::Channel;
use crate::error::{Error, Result};
use crate::layout::Record;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use thunk::{AqlQueue, Completion, Executable, Gpu, Memory, MemoryKind, QueueOptions};

/// The producer library's source (OpenCL C 2.0).
pub const PRODUCER_SOURCE: &str = include_str!("../device/producer.cl");

/// An application kernel instrumented with the library (`traced_work`), used by
/// `kfd drain --producer kernel`, the tests and the benchmarks. Built with `KFD_DRAIN_OFF`
/// defined it is the same kernel without instrumentation.
pub const TRACED_WORK_SOURCE: &str = include_str!("../device/traced_work.cl");

/// The library's global variable holding the device buffer's address (0: produce nothing).
pub const BUFFER_VARIABLE: &str = "kfd_drain_buffer";

/// The record kind `traced_work` writes.
pub const TRACED_WORK_KIND: u16 = 0x7D1;

/// Words of a `traced_work` record before its filler: wave, step, timestamp (2), value.
pub const TRACED_WORK_FIXED_WORDS: u32 = 5;

/// How a device source becomes a code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// A library: every symbol it defines is exported (the producer library).
    Library,
    /// An application code object whose undefined symbols are left for the loader.
    Application,
}

/// Compiles OpenCL C `source` for `mcpu` (`gfx900`, `gfx90a`, …) with the `defines`
/// (`NAME` or `NAME=value`) into a relocatable object and links it as a shared code object
/// (ld.lld-15 `-shared`, undefined symbols allowed for [`Link::Application`]). Returns the
/// ELF bytes.
pub fn build(source: &str, mcpu: &str, defines: &[&str], link: Link) -> Result<Vec<u8>> {
    if mcpu.is_empty() || !mcpu.chars().all(|c| c.is_ascii_alphanumeric() || c == ':') {
        return Err(Error::config(format!(
            "{mcpu:?} is not a processor name (gfx900, gfx90a, …)"
        )));
    }
    let dir = ScratchDir::new()?;
    let src = dir.0.join("source.cl");
    let obj = dir.0.join("source.o");
    let out = dir.0.join("source.co");
    std::fs::write(&src, source)
        .map_err(|e| Error::config(format!("writing {}: {e}", src.display())))?;
    let mut clang = Command::new("clang-15");
    clang
        .args(["-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa"])
        .arg(format!("-mcpu={mcpu}"))
        .args(["-O2", "-nogpulib", "-fvisibility=default", "-c"]);
    for d in defines {
        clang.arg(format!("-D{d}"));
    }
    run_tool(clang.arg(&src).arg("-o").arg(&obj), "clang-15")?;
    let mut lld = Command::new("ld.lld-15");
    lld.arg("-shared");
    if link == Link::Application {
        lld.arg("--allow-shlib-undefined");
    }
    run_tool(lld.arg(&obj).arg("-o").arg(&out), "ld.lld-15")?;
    std::fs::read(&out).map_err(|e| Error::config(format!("reading {}: {e}", out.display())))
}

/// The producer library for `mcpu`.
pub fn producer_library(mcpu: &str) -> Result<Vec<u8>> {
    build(PRODUCER_SOURCE, mcpu, &[], Link::Library)
}

/// `traced_work` for `mcpu`, instrumented (calling the library) or not.
pub fn traced_work(mcpu: &str, instrumented: bool) -> Result<Vec<u8>> {
    let defines: &[&str] = if instrumented {
        &[]
    } else {
        &["KFD_DRAIN_OFF"]
    };
    build(TRACED_WORK_SOURCE, mcpu, defines, Link::Application)
}

/// The processor name of `gpu` (`gfx900`, …) for [`build`].
pub fn processor_of(gpu: &thunk::Gpu) -> Result<String> {
    gpu.node()
        .gfx_target_name()
        .map(|n| n.to_string())
        .ok_or_else(|| Error::config(format!("GPU {:#x} has no gfx target name", gpu.id())))
}

/// FNV-1a over 32-bit words, the checksum `traced_work` puts in a record's last word.
pub fn fnv1a_words(words: &[u32]) -> u32 {
    words
        .iter()
        .fold(0x811C_9DC5, |h, &w| (h ^ w).wrapping_mul(0x0100_0193))
}

/// The filler word `i` of record `step` of wave `wave` in `traced_work`.
pub fn traced_work_filler(wave: u32, step: u32, i: u32) -> u32 {
    wave.wrapping_mul(0x9E37_79B9) ^ step.wrapping_mul(0x85EB_CA6B) ^ i
}

/// The value work-item `gid` of `traced_work` holds after `iterations` LCG steps (what it
/// writes to `out[gid]` after `records × rounds`, and lane 0's value in its records).
pub fn traced_work_value(gid: u32, iterations: u64) -> u32 {
    let mut x = gid.wrapping_mul(2_654_435_761).wrapping_add(1);
    for _ in 0..iterations {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    }
    x
}

/// One `traced_work` dispatch: `waves` waves (workgroups of 64), each running `records`
/// steps of `rounds` LCG iterations and writing a record of `payload_words` words per step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedWork {
    /// Waves (one per workgroup).
    pub waves: u32,
    /// LCG iterations per step (the application's own work between records).
    pub rounds: u32,
    /// Steps, so records, per wave.
    pub records: u32,
    /// Payload words per record (at least 6).
    pub payload_words: u32,
}

impl TracedWork {
    /// Work-items.
    pub fn items(&self) -> u32 {
        self.waves.saturating_mul(64)
    }

    /// Bytes of one record, header included.
    pub fn record_bytes(&self) -> u64 {
        8 + 4 * u64::from(self.payload_words)
    }

    /// The application's results as the host computes them (`out[]`).
    pub fn reference(&self) -> Vec<u32> {
        let n = u64::from(self.records) * u64::from(self.rounds);
        (0..self.items()).map(|g| traced_work_value(g, n)).collect()
    }

    fn check(&self) -> Result<()> {
        if self.waves == 0 || self.waves > 0xFFFF || self.payload_words < 6 {
            return Err(Error::config(format!(
                "traced_work needs 1..=65535 waves and at least 6 payload words, not {self:?}"
            )));
        }
        Ok(())
    }
}

/// The code objects [`TracedDispatch`] loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Piece {
    Library,
    Instrumented,
    Plain,
}

/// Code objects built once per process, by processor.
type BuildCache = Mutex<HashMap<(String, Piece), &'static [u8]>>;

fn cached(mcpu: &str, piece: Piece) -> Result<&'static [u8]> {
    static BUILT: OnceLock<BuildCache> = OnceLock::new();
    let key = (mcpu.to_owned(), piece);
    let cache = BUILT.get_or_init(Default::default);
    if let Some(b) = cache.lock().ok().and_then(|m| m.get(&key).copied()) {
        return Ok(b);
    }
    let bytes = match piece {
        Piece::Library => producer_library(mcpu)?,
        Piece::Instrumented => traced_work(mcpu, true)?,
        Piece::Plain => traced_work(mcpu, false)?,
    };
    // Kept for the process: a few tens of KiB per processor.
    let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    if let Ok(mut m) = cache.lock() {
        m.insert(key, leaked);
    }
    Ok(leaked)
}

/// A `traced_work` dispatch in flight on a queue of its own: instrumented (the producer
/// library linked in by the loader and attached to a channel) or plain.
#[derive(Debug)]
pub struct TracedDispatch {
    // The completion first: its drop looks at the signal while the queue still exists.
    completion: Completion,
    queue: AqlQueue,
    out: Memory,
    work: TracedWork,
    _executable: Executable,
}

impl TracedDispatch {
    /// Builds (once per process) and loads the kernel for `gpu`, attaches `channel` when
    /// given (instrumented; otherwise the plain kernel), and dispatches `work`.
    pub fn start(gpu: &Gpu, work: TracedWork, channel: Option<&Channel>) -> Result<Self> {
        work.check()?;
        let mcpu = processor_of(gpu)?;
        let executable = match channel {
            Some(ch) => {
                let app = cached(&mcpu, Piece::Instrumented)?;
                let lib = cached(&mcpu, Piece::Library)?;
                let exe = Executable::load_linked(gpu, &[app, lib])?;
                ch.attach(&exe)?;
                exe
            }
            None => Executable::load(gpu, cached(&mcpu, Piece::Plain)?)?,
        };
        let out = gpu.alloc(MemoryKind::Gtt, 4 * u64::from(work.items()))?;
        let kernel = executable.kernel("traced_work")?;
        let mut args = kernel.args()?;
        args.push_pointer(out.gpu_va())?;
        for v in [work.rounds, work.records, work.payload_words] {
            args.push_u32(v)?;
        }
        let mut queue = gpu.create_aql_queue(&QueueOptions::new())?;
        let completion = queue.dispatch(&kernel, [work.items(), 1, 1], [64, 1, 1], &args)?;
        Ok(TracedDispatch {
            completion,
            queue,
            out,
            work,
            _executable: executable,
        })
    }

    /// The dispatch's completion signal.
    pub fn completion(&self) -> &Completion {
        &self.completion
    }

    /// Whether the kernel ended.
    pub fn is_complete(&self) -> Result<bool> {
        Ok(self.completion.is_complete()?)
    }

    /// Waits for the kernel to end.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        Ok(self.completion.wait(timeout)?)
    }

    /// The application queue.
    pub fn queue(&self) -> &AqlQueue {
        &self.queue
    }

    /// What the dispatch does.
    pub fn work(&self) -> &TracedWork {
        &self.work
    }

    /// `out[]`, the application's results.
    pub fn results(&self) -> Result<Vec<u32>> {
        Ok(self
            .out
            .read_vec(0, 4 * self.work.items() as usize)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// Verifies `traced_work` records as they arrive: kind, length, checksum, filler, lane 0's
/// value, and per wave the step order (consecutive when lossless, increasing with gaps in
/// drop mode).
#[derive(Clone, Debug)]
pub struct TracedCheck {
    work: TracedWork,
    next: Vec<u32>,
    gaps: bool,
    generation: u64,
}

impl TracedCheck {
    /// A checker for `work`; `gaps` allows dropped records.
    pub fn new(work: TracedWork, gaps: bool) -> Self {
        TracedCheck {
            work,
            next: vec![0; work.waves as usize],
            gaps,
            generation: 0,
        }
    }

    /// Records per wave seen so far (the next step expected).
    pub fn next_steps(&self) -> &[u32] {
        &self.next
    }

    /// Checks one record; a [`Error::Corrupt`] says what is wrong.
    pub fn check(&mut self, r: &Record<'_>) -> Result<()> {
        let bad = |what: String| Err(Error::corrupt(self.generation, what));
        let w = &self.work;
        if r.kind != TRACED_WORK_KIND || r.payload.len() as u64 != 4 * u64::from(w.payload_words) {
            return bad(format!(
                "kind {:#x} with {} payload bytes is not a traced_work record",
                r.kind,
                r.payload.len()
            ));
        }
        let words: Vec<u32> = r
            .payload
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let n = words.len();
        let (last, body) = match words.split_last() {
            Some(x) => x,
            None => return bad("an empty record".into()),
        };
        if *last != fnv1a_words(body) {
            return bad(format!("checksum {last:#x} does not match the payload"));
        }
        let (wave, step) = (words[0], words[1]);
        let Some(next) = self.next.get_mut(wave as usize) else {
            return bad(format!("wave {wave} is not in the dispatch"));
        };
        if u32::from(r.producer) != wave & 0xFFFF || step >= w.records {
            return bad(format!("producer {} / wave {wave} step {step}", r.producer));
        }
        if step < *next || (!self.gaps && step != *next) {
            return bad(format!("wave {wave}: step {step} where {} was next", *next));
        }
        let value = traced_work_value(
            wave.wrapping_mul(64),
            u64::from(step + 1) * u64::from(w.rounds),
        );
        if words[4] != value {
            return bad(format!(
                "wave {wave} step {step}: value {:#x}, not {value:#x}",
                words[4]
            ));
        }
        for (i, &f) in words
            .iter()
            .enumerate()
            .take(n - 1)
            .skip(TRACED_WORK_FIXED_WORDS as usize)
        {
            if f != traced_work_filler(wave, step, i as u32) {
                return bad(format!("wave {wave} step {step}: filler word {i}"));
            }
        }
        *next = step + 1;
        Ok(())
    }
}

fn run_tool(cmd: &mut Command, name: &str) -> Result<()> {
    let out = cmd.output().map_err(|e| {
        Error::config(format!(
            "{name} is needed to build the device producer and could not run: {e} \
             (Debian: apt-get install clang-15 lld-15)"
        ))
    })?;
    if !out.status.success() {
        return Err(Error::config(format!(
            "{name} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// A private directory under the system's temporary directory, removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<Self> {
        static SERIAL: AtomicU32 = AtomicU32::new(0);
        let n = SERIAL.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kfd-drain-device-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::config(format!("creating {}: {e}", dir.display())))?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(Path::new(&self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_offset_and_prime() {
        // FNV-1a 32 of no data is the offset basis; one zero word is one xor-multiply.
        assert_eq!(fnv1a_words(&[]), 0x811C_9DC5);
        assert_eq!(fnv1a_words(&[0]), 0x811C_9DC5u32.wrapping_mul(0x0100_0193));
    }

    /// The payload `traced_work` writes for `wave`'s `step` (`words` words).
    fn payload(work: &TracedWork, wave: u32, step: u32) -> Vec<u8> {
        let value = traced_work_value(wave * 64, u64::from(step + 1) * u64::from(work.rounds));
        let mut w = vec![wave, step, 0x1234, 0, value];
        for i in 5..work.payload_words - 1 {
            w.push(traced_work_filler(wave, step, i));
        }
        w.push(fnv1a_words(&w));
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn traced_check_takes_good_records_and_names_bad_ones() {
        let work = TracedWork {
            waves: 2,
            rounds: 3,
            records: 10,
            payload_words: 8,
        };
        let rec = |producer: u16, payload: &[u8]| Record {
            kind: TRACED_WORK_KIND,
            producer,
            payload: payload.to_vec().leak(),
        };
        let mut c = TracedCheck::new(work, false);
        c.check(&rec(0, &payload(&work, 0, 0))).unwrap();
        c.check(&rec(1, &payload(&work, 1, 0))).unwrap();
        c.check(&rec(0, &payload(&work, 0, 1))).unwrap();
        assert_eq!(c.next_steps(), &[2, 1]);
        let fails = |c: &mut TracedCheck, r: Record<'_>, what: &str| {
            let e = c.check(&r).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        };
        // A repeat, a gap (lossless), a wave outside the dispatch, a flipped bit, a wrong kind.
        fails(
            &mut c,
            rec(0, &payload(&work, 0, 1)),
            "step 1 where 2 was next",
        );
        fails(
            &mut c,
            rec(0, &payload(&work, 0, 3)),
            "step 3 where 2 was next",
        );
        fails(
            &mut c,
            rec(2, &payload(&work, 2, 0)),
            "wave 2 is not in the dispatch",
        );
        let mut bad = payload(&work, 0, 2);
        bad[20] ^= 1;
        fails(&mut c, rec(0, &bad), "checksum");
        let mut wrong = rec(0, &payload(&work, 0, 2));
        wrong.kind = 1;
        fails(&mut c, wrong, "not a traced_work record");
        // Drop mode: gaps are fine, going back is not.
        let mut d = TracedCheck::new(work, true);
        d.check(&rec(0, &payload(&work, 0, 4))).unwrap();
        fails(
            &mut d,
            rec(0, &payload(&work, 0, 2)),
            "step 2 where 5 was next",
        );
    }

    #[test]
    fn bad_processor_names_are_refused_before_any_tool_runs() {
        for bad in ["", "gfx900 -o /etc/x", "../gfx900"] {
            assert!(
                matches!(producer_library(bad), Err(Error::Config(_))),
                "{bad:?}"
            );
        }
    }
}
