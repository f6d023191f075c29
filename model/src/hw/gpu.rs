//! One GPU's hardware, as the driver reaches it: GART memory, the doorbell BAR, the MMIO page,
//! the clock, the scheduler firmware with its engines, the interrupt ring, the compute units'
//! counters and the page tables the VMIDs translate with. The driver builds it from a
//! [`GpuConfig`] (`device::KfdNode`) and programs it only through these parts.

use crate::config::Strict;
use crate::errno::KResult;
use crate::hw::clock::GpuClock;
use crate::hw::doorbell::{DoorbellBar, DoorbellLayout};
use crate::hw::engine::{EngineActivity, EngineWaker};
use crate::hw::gart::Gart;
use crate::hw::hws::Hws;
use crate::hw::ih::IhRing;
use crate::hw::mem::DeviceMemory;
use crate::hw::observe::ShaderActivity;
use crate::hw::spi::ShaderArray;
use crate::hw::vm::GpuVm;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// What one GPU is made of.
#[derive(Debug, Clone)]
pub struct GpuConfig {
    /// How the doorbell BAR is laid out.
    pub doorbells: DoorbellLayout,
    /// The part's generation: its MQD and PM4 packet layouts.
    pub generation: kfd_sys::gpu::Generation,
    /// The SDMA engines' IP version.
    pub sdma_gen: pm4::SdmaGen,
    /// SDMA engines (PCIe and XGMI).
    pub sdma_engines: u8,
    /// Queues each SDMA engine runs.
    pub sdma_queues_per_engine: u8,
    /// The shader ISA (`gfx900`, …) its compute units run.
    pub shader_isa: String,
    /// Host threads a dispatch's workgroups run on.
    pub cu_threads: usize,
    /// What dispatches report instead of tolerating it.
    pub strict: Strict,
    /// The compute units' layout.
    pub shader_array: ShaderArray,
    /// The name of the memory its buffers are carved from.
    pub heap_name: String,
}

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
    /// The part's generation: its MQD and PM4 packet layouts.
    pub generation: kfd_sys::gpu::Generation,
    /// Page tables by page-directory base: what a VMID set up by `MAP_PROCESS` translates with.
    page_tables: RwLock<HashMap<u64, Arc<RwLock<GpuVm>>>>,
    /// The model's engine thread, woken when a runlist is mapped.
    waker: OnceLock<Arc<EngineWaker>>,
    /// Injected VM fault ranges (given to every address space registered).
    injected_vm_faults: Mutex<Vec<(u64, u64)>>,
    next_pd_base: AtomicU64,
}

impl Gpu {
    /// Builds the GPU `config` describes.
    pub fn new(config: GpuConfig) -> KResult<Gpu> {
        let generation = config.generation;
        Ok(Gpu {
            gart: Gart::new(GART_SIZE)?,
            doorbells: DoorbellBar::new(config.doorbells)?,
            mmio: Arc::new(DeviceMemory::new("mmio remap", 4096)?),
            heap: crate::hw::heap::DeviceHeap::new(&config.heap_name),
            clock: GpuClock::new(),
            hws: Hws::new(
                generation,
                config.sdma_engines,
                config.sdma_queues_per_engine,
            )
            .with_sdma_gen(config.sdma_gen)
            .with_shader_isa(&config.shader_isa)
            .with_cu_threads(config.cu_threads)
            .with_strict(config.strict)
            .with_shader_array(config.shader_array),
            ih: IhRing::new(),
            shader: Arc::new(ShaderActivity::default()),
            generation,
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
    /// (`DoorbellWatch::overlaps`).
    pub fn is_watched_doorbell_mapping(&self, start: u64, end: u64) -> bool {
        self.waker
            .get()
            .and_then(|w| w.doorbell_watch())
            .is_some_and(|w| w.overlaps(start, end))
    }

    /// The engine thread's doorbell-watch epoch, if its doorbell mappings are protected now
    /// (`EngineWaker::watched_epoch`).
    pub fn engines_watched_epoch(&self) -> Option<u64> {
        self.waker.get().and_then(|w| w.watched_epoch())
    }

    /// Wakes the engine thread (new queues are mapped), unless a doorbell store would have
    /// woken it at every moment since `epoch` (`EngineWaker::wake_unless_watched_since`;
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
