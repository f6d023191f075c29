//! `kfd_node`: one GPU as the driver sees it — its topology node, its hardware
//! ([`Gpu`], built here from the preset and the topology) and its device queue manager.

use crate::config::{ModelConfig, Preset};
use crate::dqm::{dqm_config, packet_manager, Dqm, DqmCounters};
use crate::errno::{Errno, KResult};
use crate::hw::doorbell::DoorbellLayout;
pub use crate::hw::gpu::{Gpu, GpuConfig, GART_SIZE};
use crate::topology::{Node, Topology};
use kfd_sys::gpu::DoorbellAssignment;
use mqd::TopologySizes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One GPU.
#[derive(Debug)]
pub struct KfdNode {
    /// Index among the model's GPUs (0-based).
    pub index: usize,
    /// The topology `gpu_id`.
    pub gpu_id: u32,
    /// The part.
    pub preset: Preset,
    /// The topology node.
    pub topo: Node,
    /// Sizes `CREATE_QUEUE` is validated against.
    pub queue_sizes: TopologySizes,
    /// The hardware.
    pub gpu: Arc<Gpu>,
    /// VRAM allocated so far.
    pub vram_used: AtomicU64,
    /// Render-node mmap offset → buffer (for `mmap` on the render node).
    pub(crate) bo_offsets: Mutex<HashMap<u64, std::sync::Weak<crate::memory::Bo>>>,
    /// The graphics driver's VRAM buffers on this GPU, oldest first: what a KFD restore may
    /// move out of VRAM to make room ([`crate::eviction`]).
    pub(crate) graphics_vram: Mutex<Vec<std::sync::Weak<crate::memory::Bo>>>,
    next_bo_offset: AtomicU64,
    dqm: Mutex<Dqm>,
    /// Readers of the GPU's SMI events (`AMDKFD_IOC_SMI_EVENTS`).
    pub smi: crate::smi::SmiClients,
}

/// First render-node mmap offset handed out (DRM's `DRM_FILE_PAGE_OFFSET_START` in bytes).
pub const DRM_FILE_OFFSET_START: u64 = 0x1_0000_0000;

impl KfdNode {
    /// Builds GPU `index` of `config` from its topology node.
    pub fn new(config: &ModelConfig, topology: &Topology, index: usize) -> KResult<KfdNode> {
        let topo = topology.gpus().nth(index).cloned().ok_or(Errno::ENODEV)?;
        let layout = match config.preset.facts().doorbells {
            DoorbellAssignment::Vega10 => DoorbellLayout::VEGA10,
            DoorbellAssignment::Vega20 => DoorbellLayout::VEGA20,
        };
        let queue_sizes = Topology::queue_sizes(config.preset);
        let cfg = dqm_config(&topo, config.preset, queue_sizes, config);
        let pm = packet_manager(&cfg, config.preset, config);
        Ok(KfdNode {
            index,
            gpu_id: topo.gpu_id,
            preset: config.preset,
            queue_sizes,
            gpu: Arc::new(Gpu::new(gpu_config(layout, config, &topo))?),
            topo,
            vram_used: AtomicU64::new(0),
            bo_offsets: Mutex::new(HashMap::new()),
            graphics_vram: Mutex::new(Vec::new()),
            next_bo_offset: AtomicU64::new(DRM_FILE_OFFSET_START),
            dqm: Mutex::new(Dqm::new(cfg, pm)),
            smi: crate::smi::SmiClients::default(),
        })
    }

    /// The device queue manager, locked.
    pub fn dqm(&self) -> MutexGuard<'_, Dqm> {
        self.dqm.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The queue manager's counters.
    pub fn counters(&self) -> DqmCounters {
        self.dqm().counters()
    }

    /// Brings the scheduler up (`start_cpsch`).
    pub fn start(&self) -> KResult<()> {
        self.dqm().start(&self.gpu)
    }

    /// VRAM size.
    pub fn vram_size(&self) -> u64 {
        self.topo.vram_size()
    }

    /// VRAM still allocatable.
    pub fn vram_available(&self) -> u64 {
        self.vram_size()
            .saturating_sub(self.vram_used.load(Ordering::Relaxed))
    }

    /// Reserves `size` bytes of VRAM, or `ENOMEM`.
    pub fn reserve_vram(&self, size: u64) -> KResult<()> {
        let total = self.vram_size();
        self.vram_used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(size).filter(|&u| u <= total)
            })
            .map(|_| ())
            .map_err(|_| Errno::ENOMEM)
    }

    /// Returns reserved VRAM.
    pub fn release_vram(&self, size: u64) {
        let _ = self
            .vram_used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                Some(u.saturating_sub(size))
            });
    }

    /// A fresh render-node mmap offset for a buffer of `size` bytes.
    pub(crate) fn new_bo_offset(&self, size: u64) -> u64 {
        self.next_bo_offset
            .fetch_add(size.max(4096).next_multiple_of(4096), Ordering::Relaxed)
    }

    /// The GC (graphics/compute) IP version.
    pub fn gc_version(&self) -> (u32, u32, u32) {
        self.preset.gc_version()
    }

    /// Whether the part supports per-process XNACK (GC 9.4.2, 9.4.3).
    pub fn supports_xnack(&self) -> bool {
        matches!(self.gc_version(), (9, 4, 2..=4))
    }
}

/// The hardware of GPU `topo` of `config`: its parts as the preset and topology say.
fn gpu_config(doorbells: DoorbellLayout, config: &ModelConfig, topo: &Node) -> GpuConfig {
    let preset = config.preset;
    let p = &topo.properties;
    GpuConfig {
        doorbells,
        mqd_gen: preset.generation(),
        sdma_gen: sdma_gen(preset),
        sdma_engines: (p.num_sdma_engines + p.num_sdma_xgmi_engines) as u8,
        sdma_queues_per_engine: p.num_sdma_queues_per_engine as u8,
        shader_isa: preset.name().to_string(),
        cu_threads: config.cu_threads,
        strict: config.strict,
        shader_array: shader_array(topo),
        heap_name: format!("buffers-{:x}", topo.gpu_id),
    }
}

/// The SDMA IP version of the preset's engines (the oldest of its generation's for one the
/// packet layouts do not know).
fn sdma_gen(preset: Preset) -> pm4::SdmaGen {
    let v = preset.facts().sdma;
    pm4::SdmaGen::from_ip_version(v.major, v.minor)
        .unwrap_or_else(|| pm4::SdmaGen::from(preset.generation()))
}

/// The compute units as the topology describes them: `array_count` shader arrays in engines
/// of `simd_arrays_per_engine`, the node's active CUs spread evenly.
fn shader_array(topo: &Node) -> crate::hw::spi::ShaderArray {
    let p = &topo.properties;
    let count = |v: u64| u32::try_from(v).unwrap_or(u32::MAX).max(1);
    let arrays_per_engine = count(p.simd_arrays_per_engine);
    let engines = (count(p.array_count) / arrays_per_engine).max(1);
    crate::hw::spi::ShaderArray {
        engines,
        arrays_per_engine,
        cus_per_engine: (count(topo.cu_count()) / engines).max(1),
        simds_per_cu: count(p.simd_per_cu),
        waves_per_simd: count(p.max_waves_per_simd),
    }
}
