//! `kfd_node`: one GPU as the driver sees it — its topology node, its hardware
//! ([`Gpu`], built here from the preset and the topology) and its device queue manager.

use crate::config::{KernelVersion, ModelConfig, Preset};
use crate::dqm::{Dqm, DqmConfig, DqmCounters};
use crate::errno::{Errno, KResult};
use crate::hw::doorbell::DoorbellLayout;
pub use crate::hw::gpu::{Gpu, GpuConfig, GART_SIZE};
use crate::packet_manager::PacketManager;
use crate::topology::{Node, Topology};
use kfd_sys::gpu::DoorbellAssignment;
use mqd::{MqdConfig, TopologySizes};
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
        generation: preset.generation(),
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

// Device init (`kgd2kfd_device_init`): the DQM's and packet manager's configuration from
// the preset and the topology node.

/// Builds the DQM configuration of a GPU from its topology node.
pub fn dqm_config(
    topo: &Node,
    preset: Preset,
    queue_sizes: TopologySizes,
    config: &ModelConfig,
) -> DqmConfig {
    let p = &topo.properties;
    let gc = preset.facts().gc;
    let (major, minor, step) = preset.gc_version();
    let kernel = match config.kernel {
        KernelVersion::Linux6_1 => mqd::KernelVersion::Linux6_1,
        KernelVersion::Linux6_12 => mqd::KernelVersion::Linux6_12,
    };
    let mut mqd_cfg = MqdConfig::new(gc).with_kernel(kernel);
    mqd_cfg.cwsr_enabled = config.cwsr_enable;
    let arrays = p.array_count.max(1) as u32;
    let per_engine = p.simd_arrays_per_engine.max(1) as u32;
    let cus = topo.cu_count() as u32;
    let ses = (arrays / per_engine).min(8);
    if let Ok(layout) = mqd::ShaderLayout::uniform(ses, per_engine, cus / arrays) {
        mqd_cfg = mqd_cfg.with_shader_layout(layout);
    }
    if config.kernel == KernelVersion::Linux6_12 {
        mqd_cfg = mqd_cfg.with_topology(queue_sizes);
    }
    // Fixed numbering `mec*32 + pipe*8 + queue`; amdgpu keeps queues 0 and 1 of each pipe.
    let queue_mask: u64 = if p.num_cp_queues <= 8 {
        0x0C0C_0C0C
    } else {
        0xFCFC_FCFC
    };
    let sh_mem_config_base = match (major, minor, step) {
        (10, ..) => 0x18 | (3 << 14),
        (9, 4, 3..=4) => 0x18 | (1 << 8),
        _ => 0x18,
    };
    DqmConfig {
        policy: config.sched_policy,
        kernel: config.kernel,
        preemption_timeout: config.preemption_timeout,
        max_queues_per_device: config.max_queues_per_device,
        max_queues_per_process: if matches!((major, minor, step), (9, 4, 3..=4)) {
            255
        } else {
            127
        },
        vmid_mask: kfd_vmid_mask(preset),
        queue_mask,
        sdma_engines: p.num_sdma_engines as u32,
        xgmi_sdma_engines: p.num_sdma_xgmi_engines as u32,
        sdma_queues_per_engine: p.num_sdma_queues_per_engine as u32,
        cwsr_enable: config.cwsr_enable,
        has_gws: major == 9 && p.num_gws > 0,
        sh_mem_config_base,
        per_process_xnack: matches!((major, minor, step), (9, 4, 2)),
        mqd: mqd_cfg,
    }
}

/// VMIDs given to KFD: `0xFF00` (8–15), or `0xFFF8` (3–15) on GC 9.4.1–9.4.4.
pub fn kfd_vmid_mask(preset: Preset) -> u16 {
    match preset.gc_version() {
        (9, 4, 1..=4) => 0xFFF8,
        _ => 0xFF00,
    }
}

/// The packet manager of a GPU: MAP_PROCESS form by GC version, extended SDMA engine select
/// from SDMA 5.2, processes per quantum = min(`hws_max_conc_proc`, KFD VMIDs).
pub fn packet_manager(cfg: &DqmConfig, preset: Preset, config: &ModelConfig) -> PacketManager {
    let form = match preset.gc_version() {
        (9, 4, 2..=4) => pm4::hws::MapProcessForm::Aldebaran,
        _ => pm4::hws::MapProcessForm::Gfx9,
    };
    let (sm, sn, _) = preset.sdma_version();
    let use_ext_eng = (sm, sn) >= (5, 2);
    let vmids = cfg.vmid_mask.count_ones();
    let max_proc = config.hws_max_conc_proc.map_or(vmids, |m| m.min(vmids));
    PacketManager::new(form, use_ext_eng, max_proc, cfg.queue_mask.count_ones())
}
