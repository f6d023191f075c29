//! Shared pieces of the fuzz targets: models kept alive across inputs, a sandbox for the user
//! memory ioctl arguments point to, and the leak check every input must pass.
//!
//! The targets keep one model per configuration for the whole run (building one costs far more
//! than an input) and open a fresh process per input. After the process is dropped the model
//! must be back where it started: no registered process, no queue, no runlist, the scheduler
//! running and not hung, the GART and the doorbell BAR holding only what the driver itself
//! allocated at start-up, no VRAM reserved. Anything else is a leak and aborts the run with a
//! message saying which counter moved.

use kfd_model::dqm::DqmCounters;
use kfd_model::user::{SelfProcess, UserAccess};
use kfd_model::{KResult, KernelVersion, Model, ModelConfig, Preset};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Bytes per sandbox page.
pub const PAGE: usize = 4096;
/// Pages of user memory every fuzzed process owns.
pub const ARENA_PAGES: usize = 16;
/// Bytes of user memory every fuzzed process owns.
pub const ARENA_BYTES: usize = PAGE * ARENA_PAGES;

/// One page of sandbox memory, page aligned so that it can back a USERPTR buffer.
#[repr(C, align(4096))]
struct Page([AtomicU64; PAGE / 8]);

/// User memory the harness owns and hands to the model as "the client's memory".
///
/// The model reads and writes client memory with `process_vm_readv`/`writev` on its own pid,
/// which answer `EFAULT` for unmapped addresses — but a pointer taken from fuzz bytes can also
/// land on memory that *is* mapped (the fuzzer's own heap: libFuzzer learns live addresses
/// from comparisons in `/proc/self/maps` parsing). A kernel writing there is correct
/// behaviour, and it would corrupt the fuzzer. So writes are forwarded to the real
/// [`SelfProcess`] path only inside this arena or where nothing can be mapped (below 64 KiB,
/// at or above the 47-bit user limit); other writes fail with `EFAULT` without touching
/// memory. Reads always take the real path: reading mapped memory harms nothing.
pub struct Arena {
    pages: Box<[Page]>,
    /// Writes refused by the guard (for the statistics).
    pub refused_writes: AtomicU64,
}

impl Arena {
    /// A zeroed arena.
    pub fn new() -> Arena {
        let pages = (0..ARENA_PAGES)
            .map(|_| Page(std::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        Arena {
            pages,
            refused_writes: AtomicU64::new(0),
        }
    }

    /// Address of the first byte.
    pub fn base(&self) -> u64 {
        self.pages.as_ptr() as u64
    }

    /// The address `offset` bytes in (wrapped into the arena).
    pub fn addr(&self, offset: u64) -> u64 {
        self.base() + offset % ARENA_BYTES as u64
    }

    /// Stores `bytes` from `offset` (wrapping word-wise; partial words are zero-extended).
    pub fn fill(&self, offset: usize, bytes: &[u8]) {
        for (i, chunk) in bytes.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            let word = (offset / 8 + i) % (ARENA_BYTES / 8);
            self.pages[word / (PAGE / 8)].0[word % (PAGE / 8)]
                .store(u64::from_le_bytes(w), Ordering::Relaxed);
        }
    }

    /// Zeroes the arena.
    pub fn clear(&self) {
        for p in self.pages.iter() {
            for w in &p.0 {
                w.store(0, Ordering::Relaxed);
            }
        }
    }

    fn contains(&self, addr: u64, len: usize) -> bool {
        addr >= self.base()
            && addr
                .checked_add(len as u64)
                .is_some_and(|end| end <= self.base() + ARENA_BYTES as u64)
    }
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

/// Addresses where no mapping can exist in a user process on x86-64.
fn certainly_unmapped(addr: u64, len: usize) -> bool {
    let end = addr.saturating_add(len as u64);
    end <= 0x1_0000 || addr >= 1 << 47
}

impl UserAccess for Arena {
    fn read(&self, addr: u64, buf: &mut [u8]) -> KResult<()> {
        SelfProcess.read(addr, buf)
    }

    fn write(&self, addr: u64, data: &[u8]) -> KResult<()> {
        if data.is_empty()
            || self.contains(addr, data.len())
            || certainly_unmapped(addr, data.len())
        {
            // SAFETY: the range is empty, inside this arena (pages of atomics, written only
            // through shared references, so no `&mut` into them exists), or where nothing can be
            // mapped in a user process (the write is EFAULT).
            unsafe { SelfProcess.write(addr, data) }
        } else {
            self.refused_writes.fetch_add(1, Ordering::Relaxed);
            Err(kfd_model::Errno::EFAULT)
        }
    }
}

/// What a model looks like with no client: captured right after it is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    /// Per GPU: the queue manager's counters.
    pub counters: Vec<DqmCounters>,
    /// Per GPU: GART chunks the driver holds (HIQ, its MQD, the fence, …).
    pub gart_chunks: Vec<usize>,
}

impl Baseline {
    /// The state of `model` now.
    pub fn of(model: &Model) -> Baseline {
        Baseline {
            counters: model.nodes().iter().map(|n| n.counters()).collect(),
            gart_chunks: model
                .nodes()
                .iter()
                .map(|n| n.gpu.gart.chunks_in_use())
                .collect(),
        }
    }

    /// Panics with what leaked when `model` is not back at this baseline.
    pub fn assert_restored(&self, model: &Model, what: &str) {
        assert_eq!(
            model.process_count(),
            0,
            "{what}: a process is still registered"
        );
        for (i, n) in model.nodes().iter().enumerate() {
            let c = n.counters();
            assert!(!c.is_hws_hang, "{what}: gpu {i}: the scheduler hung: {c:?}");
            assert_eq!(
                c, self.counters[i],
                "{what}: gpu {i}: queue manager counters"
            );
            assert_eq!(
                n.gpu.gart.chunks_in_use(),
                self.gart_chunks[i],
                "{what}: gpu {i}: GART chunks leaked"
            );
            assert_eq!(
                n.gpu.doorbells.slices_in_use(),
                0,
                "{what}: gpu {i}: doorbell slices leaked"
            );
            assert_eq!(
                n.vram_available(),
                n.vram_size(),
                "{what}: gpu {i}: VRAM still reserved"
            );
            assert!(
                n.gpu.hws.mapped_queues().is_empty(),
                "{what}: gpu {i}: queues still mapped on the HWS"
            );
        }
    }
}

/// Which model an input runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModelKey {
    /// The GPU part.
    pub preset: Preset,
    /// Kernel behaviour.
    pub kernel: KernelVersion,
    /// Number of GPUs.
    pub gpus: u32,
}

impl ModelKey {
    /// A key from three fuzz bytes.
    pub fn from_bytes(preset: u8, kernel: u8, gpus: u8) -> ModelKey {
        ModelKey {
            preset: Preset::ALL[preset as usize % Preset::ALL.len()],
            kernel: if kernel.is_multiple_of(4) {
                KernelVersion::Linux6_1
            } else {
                KernelVersion::Linux6_12
            },
            gpus: 1 + u32::from(gpus % 2),
        }
    }
}

/// A model kept for the whole run, with its baseline.
pub struct SharedModel {
    /// The model (engine thread off: the target drives the engines).
    pub model: Model,
    /// Its state with no client.
    pub baseline: Baseline,
    /// Render nodes, one per GPU, opened once (their fd numbers go into ACQUIRE_VM).
    pub renders: Vec<kfd_model::RenderNode>,
}

/// The model of `key`, built on first use. Engine thread off and a short preemption timeout,
/// so that a scheduler that does not answer is seen within an input's time.
pub fn shared_model(key: ModelKey) -> &'static SharedModel {
    static MODELS: OnceLock<Mutex<HashMap<ModelKey, &'static SharedModel>>> = OnceLock::new();
    let mut map = MODELS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry(key).or_insert_with(|| {
        let cfg = ModelConfig::new(key.preset)
            .with_gpus(key.gpus)
            .with_kernel(key.kernel)
            .with_engine_thread(false)
            .with_preemption_timeout(Duration::from_millis(100));
        let model = Model::new(cfg).expect("the model starts");
        let baseline = Baseline::of(&model);
        let renders = model
            .topology()
            .gpus()
            .map(|n| {
                model
                    .open_render_node(n.properties.drm_render_minor as u32)
                    .expect("render node")
            })
            .collect();
        Box::leak(Box::new(SharedModel {
            model,
            baseline,
            renders,
        }))
    })
}

/// A fresh process on a shared model whose user memory is `arena`.
pub fn open(shared: &SharedModel, arena: Arc<Arena>) -> kfd_model::Process {
    shared.model.open_with(arena).expect("open /dev/kfd")
}

/// The isa targets' starting point: a 64-lane wave of `target` at 0x1000 with 32 VGPRs, its
/// SGPRs and VGPRs seeded from `seed` (dword-aligned values below 64 KiB, so many addresses
/// land in the sandbox), and a host memory of 4 KiB of LDS with 64 KiB mapped at 0.
pub fn seeded_wave(target: isa::Target, seed: u32) -> (isa::exec::Wave, isa::exec::HostEnv) {
    let mut env = isa::exec::HostEnv::new(4096);
    env.map(0, 0x1_0000);
    let mut wave = isa::exec::Wave::new(target, 64, 32);
    wave.pc = 0x1000;
    for (i, s) in wave.sgpr.iter_mut().enumerate().take(102) {
        *s = seed.wrapping_mul(i as u32 + 1) & 0xfffc;
    }
    for (r, v) in wave.vgpr.iter_mut().enumerate() {
        for (l, x) in v.iter_mut().enumerate() {
            *x = seed.rotate_left(r as u32).wrapping_add(4 * l as u32) & 0xfffc;
        }
    }
    (wave, env)
}
