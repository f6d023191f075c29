//! `kfd_node`: one GPU as the driver sees it — its topology node, its hardware (GART, doorbell
//! BAR, MMIO page, clock, page-table registry) and its device queue manager.

use crate::config::{ModelConfig, Preset};
use crate::dqm::{dqm_config, packet_manager, Dqm, DqmCounters};
use crate::errno::{Errno, KResult};
use crate::hw::clock::GpuClock;
use crate::hw::doorbell::{DoorbellBar, DoorbellLayout};
use crate::hw::engine::{EngineActivity, EngineWaker};
use crate::hw::gart::Gart;
use crate::hw::hws::Hws;
use crate::hw::ih::IhRing;
use crate::hw::mem::DeviceMemory;
use crate::hw::observe::ShaderActivity;
use crate::hw::vm::GpuVm;
use crate::topology::{Node, Topology};
use kfd_sys::gpu::DoorbellAssignment;
use mqd::TopologySizes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

/// Size of the modelled GART aperture of each GPU.
pub const GART_SIZE: u64 = 64 << 20;

/// The hardware of one GPU that the driver programs.
#[derive(Debug)]
pub struct Gpu {
    /// Kernel-owned memory reachable by GART address.
    pub gart: Gart,
    /// The doorbell BAR.
    pub doorbells: DoorbellBar,
    /// The MMIO remap page (HDP flush registers).
    pub mmio: Arc<DeviceMemory>,
    /// Where its buffers (VRAM and GTT of KFD) are carved from.
    pub heap: Arc<crate::hw::heap::DeviceHeap>,
    /// The timestamp clock.
    pub clock: GpuClock,
    /// The scheduler firmware (and the engines' saved queue contexts).
    pub hws: Hws,
    /// The interrupt ring from the engines to the driver.
    pub ih: IhRing,
    /// The compute units' counters and observer.
    pub shader: Arc<ShaderActivity>,
    /// PM4 packet layouts of the part.
    pub pm4_gen: pm4::GfxGen,
    /// MQD layouts of the part.
    pub mqd_gen: mqd::Generation,
    /// Page tables by page-directory base: what a VMID set up by `MAP_PROCESS` translates with.
    page_tables: RwLock<HashMap<u64, Arc<RwLock<GpuVm>>>>,
    /// The model's engine thread, woken when a runlist is mapped.
    waker: OnceLock<Arc<EngineWaker>>,
    /// Injected VM fault ranges (given to every address space registered).
    injected_vm_faults: Mutex<Vec<(u64, u64)>>,
    next_pd_base: AtomicU64,
}

impl Gpu {
    fn new(layout: DoorbellLayout, config: &ModelConfig, topo: &Node) -> KResult<Gpu> {
        let preset = config.preset;
        let mqd_gen = preset.generation();
        let pm4_gen = pm4::GfxGen::from(mqd_gen);
        let p = &topo.properties;
        let engines = (p.num_sdma_engines + p.num_sdma_xgmi_engines) as u8;
        Ok(Gpu {
            gart: Gart::new(GART_SIZE)?,
            doorbells: DoorbellBar::new(layout)?,
            mmio: Arc::new(DeviceMemory::new("mmio remap", 4096)?),
            heap: crate::hw::heap::DeviceHeap::new(&format!("buffers-{:x}", topo.gpu_id)),
            clock: GpuClock::new(),
            hws: Hws::new(
                pm4_gen,
                mqd_gen,
                engines,
                p.num_sdma_queues_per_engine as u8,
            )
            .with_sdma_gen(sdma_gen(preset))
            .with_shader_isa(preset.name())
            .with_cu_threads(config.cu_threads)
            .with_strict(config.strict)
            .with_shader_array(shader_array(topo)),
            ih: IhRing::new(),
            shader: Arc::new(ShaderActivity::default()),
            pm4_gen,
            mqd_gen,
            page_tables: RwLock::new(HashMap::new()),
            waker: OnceLock::new(),
            injected_vm_faults: Mutex::new(Vec::new()),
            next_pd_base: AtomicU64::new(0x0000_00f4_0000_0000),
        })
    }

    /// Connects the GPU to the model's engine thread (once).
    pub(crate) fn set_waker(&self, waker: Arc<EngineWaker>) {
        let _ = self.waker.set(waker);
    }

    /// Whether `[start, end)` overlaps a client's doorbell mapping the engine watches
    /// ([`DoorbellWatch::overlaps`](crate::hw::doorbell_watch::DoorbellWatch::overlaps)).
    pub fn is_watched_doorbell_mapping(&self, start: u64, end: u64) -> bool {
        self.waker
            .get()
            .and_then(|w| w.doorbell_watch())
            .is_some_and(|w| w.overlaps(start, end))
    }

    /// The engine thread's doorbell-watch epoch, if its doorbell mappings are protected now
    /// ([`EngineWaker::watched_epoch`]).
    pub fn engines_watched_epoch(&self) -> Option<u64> {
        self.waker.get().and_then(|w| w.watched_epoch())
    }

    /// Wakes the engine thread (new queues are mapped), unless a doorbell store would have
    /// woken it at every moment since `epoch` ([`EngineWaker::wake_unless_watched_since`];
    /// `None` always wakes it).
    pub fn wake_engines_unless_watched_since(&self, epoch: Option<u64>) {
        if let Some(w) = self.waker.get() {
            w.wake_unless_watched_since(epoch);
        }
    }

    /// One pass of the CP and SDMA engines over the queues mapped now.
    pub fn run_engines(&self) -> EngineActivity {
        self.hws.run_queues(self)
    }

    /// Applies `f` to every registered address space.
    fn each_vm(&self, mut f: impl FnMut(&mut GpuVm)) {
        let tables = self.page_tables.read().unwrap_or_else(|e| e.into_inner());
        for vm in tables.values() {
            f(&mut vm.write().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Injects a VM fault range into every address space of this GPU, present and future.
    pub fn inject_vm_fault(&self, va: u64, len: u64) {
        self.injected_vm_faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((va, len));
        self.each_vm(|vm| vm.inject_fault(va, len));
    }

    /// Removes every injected fault of this GPU: firmware, engines, interrupts, VM.
    pub fn clear_faults(&self) {
        self.hws.set_faults(Default::default());
        self.ih.set_faults(Default::default());
        self.injected_vm_faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.each_vm(GpuVm::clear_injected_faults);
    }

    /// Registers a process address space and returns its page-directory base (the value
    /// `MAP_PROCESS` carries in `vm_context_page_table_base_addr`).
    pub fn register_vm(&self, vm: Arc<RwLock<GpuVm>>) -> u64 {
        for &(va, len) in self
            .injected_vm_faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            vm.write()
                .unwrap_or_else(|e| e.into_inner())
                .inject_fault(va, len);
        }
        let base = self.next_pd_base.fetch_add(0x1000, Ordering::Relaxed);
        self.page_tables
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(base, vm);
        base
    }

    /// Forgets an address space.
    pub fn unregister_vm(&self, pd_base: u64) {
        self.page_tables
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pd_base);
    }

    /// The address space of a page-directory base.
    pub fn vm(&self, pd_base: u64) -> Option<Arc<RwLock<GpuVm>>> {
        self.page_tables
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&pd_base)
            .cloned()
    }
}

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
            gpu: Arc::new(Gpu::new(layout, config, &topo)?),
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
