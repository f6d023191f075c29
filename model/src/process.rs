//! `kfd_process`: one client of `/dev/kfd` — its PASID, its per-GPU data (VM, doorbell slice,
//! buffer handles, apertures), its events and queues — and the model instance that owns the
//! GPUs.

// Unsafe here: `Process::ioctl` and the doorbell watch take client addresses (`unsafe fn`s).
#![allow(unsafe_code)]

use crate::config::ModelConfig;
use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::events::EventTable;
use crate::file::FileIdentity;
use crate::hw::doorbell::DoorbellIds;
use crate::hw::engine::{EngineActivity, EngineWaker, QueueError};
use crate::hw::hws::EngineQueueState;
use crate::hw::mem::DeviceMemory;
use crate::hw::vm::GpuVm;
use crate::memory::Bo;
use crate::pqm::Pqm;
use crate::topology::Topology;
use crate::user::{ClientMemory, UserAccess};
use kfd_sys::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};

/// LDS aperture base of gfx9+ (`MAKE_LDS_APP_BASE_V9`).
pub const LDS_APERTURE_BASE: u64 = 0x0001_0000_0000_0000;
/// Scratch aperture base of gfx9+ (`MAKE_SCRATCH_APP_BASE_V9`).
pub const SCRATCH_APERTURE_BASE: u64 = 0x0002_0000_0000_0000;
/// Size of the LDS and scratch apertures.
pub const APERTURE_SIZE: u64 = 0x1_0000_0000;
/// Lowest user GPUVM address (`SVM_USER_BASE`: above the CWSR TBA/TMA pages).
pub const GPUVM_BASE: u64 = 0x4000;
/// One past the highest user GPUVM address (47-bit user half of a 48-bit VA space).
pub const GPUVM_END: u64 = 1 << 47;

/// First PASID handed out.
pub const FIRST_PASID: u32 = 0x8001;

/// One past the highest PASID: they are 16 bits wide (MAP_PROCESS, the IH ring), so the
/// model hands out `FIRST_PASID..PASID_END` in turn, skipping live ones, and wraps.
pub const PASID_END: u32 = 0x1_0000;

/// What a client maps for an mmap offset: `len` bytes of `memory`'s file from `offset`.
#[derive(Debug, Clone)]
pub struct MapSource {
    /// The memory; map `memory.fd()` with `MAP_SHARED`.
    pub memory: Arc<DeviceMemory>,
    /// File offset to map from.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// A render node opened on the model (`/dev/dri/renderD<minor>`).
#[derive(Debug)]
pub struct RenderNode {
    model: Arc<ModelInner>,
    /// The GPU behind it.
    pub node: Arc<KfdNode>,
    /// A unique id of this open file.
    pub file_id: u64,
    /// A descriptor number that names it to `ACQUIRE_VM`: a synthetic one (no real
    /// descriptor stands for the file) until [`RenderNode::bind_fd`] gives it a real one.
    pub fd: i32,
    /// How the driver finds this file from a descriptor.
    key: RenderFileKey,
    /// The file's GEM objects and GPU VA mappings.
    gem: Mutex<crate::gem::GemFile>,
    /// The file's command-submission contexts.
    contexts: Mutex<crate::ctx::CtxTable>,
    /// The file's BO lists.
    bo_lists: Mutex<crate::cs::BoLists>,
}

impl RenderNode {
    /// The render minor.
    pub fn minor(&self) -> u32 {
        self.node.topo.properties.drm_render_minor as u32
    }

    /// Makes the open file behind the real descriptor `fd` (the shim's) this render file: from
    /// now on `ACQUIRE_VM` knows it through `fd` and through every descriptor that names the
    /// same open file (its duplicates, as the kernel's `fget` does), and no longer through
    /// the synthetic number. `EBADF` when `fd` is not open.
    pub fn bind_fd(&mut self, fd: i32) -> KResult<()> {
        let key = RenderFileKey::File(FileIdentity::of(fd)?);
        let mut files = lock(&self.model.render_files);
        files.remove(&self.key);
        files.insert(key, (self.file_id, self.node.gpu_id));
        self.key = key;
        self.fd = fd;
        Ok(())
    }

    /// `mmap` on the render node: the buffer whose `mmap_offset` ALLOC returned.
    pub fn mmap(&self, offset: u64, len: u64) -> KResult<MapSource> {
        let bo = lock(&self.node.bo_offsets)
            .get(&offset)
            .and_then(Weak::upgrade)
            .ok_or(Errno::EINVAL)?;
        if len == 0 || len > bo.size {
            return Err(Errno::EINVAL);
        }
        let (memory, off) = bo.device_memory().ok_or(Errno::EINVAL)?;
        Ok(MapSource {
            memory,
            offset: off as u64,
            len,
        })
    }
}

impl RenderNode {
    /// `DRM_IOCTL_AMDGPU_GEM_CREATE`: a buffer of `size` bytes aligned to `alignment` bytes in
    /// `domains` (`AMDGPU_GEM_DOMAIN_*`) with `flags` (`AMDGPU_GEM_CREATE_*`); returns its GEM
    /// handle.
    pub fn gem_create(&self, size: u64, alignment: u64, domains: u64, flags: u64) -> KResult<u32> {
        lock(&self.gem).create(&self.node, size, alignment, domains, flags)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_METADATA`, `SET_METADATA`.
    pub fn gem_set_metadata(&self, handle: u32, metadata: crate::gem::BoMetadata) -> KResult<()> {
        lock(&self.gem).set_metadata(handle, metadata)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_METADATA`, `GET_METADATA`.
    pub fn gem_metadata(&self, handle: u32) -> KResult<crate::gem::BoMetadata> {
        lock(&self.gem).metadata(handle)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_OP`, `GET_GEM_CREATE_INFO`.
    pub fn gem_create_info(&self, handle: u32) -> KResult<crate::gem::GemCreateInfo> {
        lock(&self.gem).create_info(handle)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_OP`, `SET_PLACEMENT`: the buffer's new domains.
    pub fn gem_set_placement(&self, handle: u32, value: u64) -> KResult<crate::gem::Placement> {
        lock(&self.gem).set_placement(handle, value)
    }

    /// `DRM_IOCTL_AMDGPU_BO_LIST`: `operation` (`AMDGPU_BO_LIST_OP_*`) on list `list` with
    /// the GEM `handles` (`ENOENT` for one that is not open, or an unknown list to update;
    /// `EINVAL` for an unknown operation); the list's id (0 after `DESTROY`).
    pub fn bo_list(&self, operation: u32, list: u32, handles: Vec<u32>) -> KResult<u32> {
        use kfd_sys::drm::*;
        if matches!(
            operation,
            AMDGPU_BO_LIST_OP_CREATE | AMDGPU_BO_LIST_OP_UPDATE
        ) {
            let gem = lock(&self.gem);
            for &h in &handles {
                gem.object(h)?;
            }
        }
        let mut lists = lock(&self.bo_lists);
        match operation {
            AMDGPU_BO_LIST_OP_CREATE => Ok(lists.create(handles)),
            AMDGPU_BO_LIST_OP_DESTROY => {
                lists.destroy(list);
                Ok(0)
            }
            AMDGPU_BO_LIST_OP_UPDATE => lists.update(list, handles).map(|()| list),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `DRM_IOCTL_AMDGPU_CS`: validates the submission (`EINVAL` for an unknown context or a
    /// bad chunk, `ENOENT` for an unknown BO list, `ECANCELED` on a guilty context), moves the
    /// BO list's VRAM buffers into VRAM — evicting KFD buffers when they do not fit
    /// ([`crate::eviction`]) — then runs the IBs on their SDMA engines or, for GFX and compute
    /// rings, through the CP's PM4 processor, through the file's GPU VM, and returns the
    /// sequence number of the last. An IB that stops on the GPU (a fault, a packet that does
    /// not decode or that the model cannot run) is what a real GPU would hang on: its fence
    /// signals all the same, the IBs after it are not run (their fences signal too), and the
    /// context becomes guilty ([`crate::cs`]'s failure rule).
    pub fn cs_submit(&self, request: &crate::cs::CsRequest) -> KResult<u64> {
        use crate::hw::engine::{ExecEnv, IbFrame, QueueIdentity};
        let p = &self.node.topo.properties;
        let dma_rings = (p.num_sdma_engines + p.num_sdma_xgmi_engines) as u32;
        let mut contexts = lock(&self.contexts);
        contexts.last_submitted(request.ctx_id, (0, 0, 0))?;
        if contexts.is_guilty(request.ctx_id) {
            return Err(Errno::ECANCELED);
        }
        let bo_list: Vec<u32> = match request.bo_list_handle {
            0 => Vec::new(),
            list => lock(&self.bo_lists)
                .get(list)
                .ok_or(Errno::ENOENT)?
                .to_vec(),
        };
        crate::cs::check(request, dma_rings)?;
        let wanted: Vec<Arc<crate::memory::Bo>> = {
            let gem = lock(&self.gem);
            bo_list
                .iter()
                .filter_map(|&h| gem.object(h).ok())
                .filter(|o| o.prefers_vram())
                .map(|o| o.bo.clone())
                .collect()
        };
        crate::eviction::validate_for_submission(&self.model, &self.node, &wanted);
        let gem = lock(&self.gem);
        let sdma_gen = pm4::SdmaGen::from(self.node.gpu.mqd_gen);
        let gfx_gen = pm4::GfxGen::from(self.node.gpu.mqd_gen);
        let mut seq = 0;
        let mut hung = false;
        for ib in &request.ibs {
            let ring = (ib.ip_type, ib.ip_instance, ib.ring);
            if hung {
                // Cancelled with the job that hung: its fence signals without running it.
                seq = contexts.submit(request.ctx_id, ring)?;
                continue;
            }
            let on_cp = ib.ip_type != kfd_sys::drm::AMDGPU_HW_IP_DMA;
            let slot = if on_cp {
                // The graphics driver's kernel rings sit on pipes KFD does not use; the
                // identity only names the engine in messages.
                crate::hw::hws::HqdSlot::Compute {
                    mec: 0,
                    pipe: 0,
                    queue: ib.ring as u8,
                }
            } else {
                crate::hw::hws::HqdSlot::Sdma {
                    engine: ib.ring as u8,
                    queue: 0,
                }
            };
            let id = QueueIdentity {
                slot,
                pasid: 0,
                vmid: 0,
                doorbell_offset: 0,
            };
            // The graphics driver's own interrupts (fences, traps) go to amdgpu, not to KFD.
            let ih = crate::hw::ih::IhRing::new();
            let mut registers = Default::default();
            let mut env = ExecEnv {
                vm: gem.vm(),
                clock: &self.node.gpu.clock,
                registers: &mut registers,
                ih: &ih,
                queue: id,
            };
            let frame = IbFrame::new(ib.va_start, ib.ib_bytes / 4);
            let budget = crate::cs::SUBMITTED_IB_BUDGET;
            let (ran, engine) = if on_cp {
                let ran =
                    crate::hw::cp::CpQueue::run_submitted_ib(gfx_gen, id, frame, &mut env, budget);
                (ran, format!("ip {} ring {}", ib.ip_type, ib.ring))
            } else {
                let ran = crate::hw::sdma::SdmaQueue::run_submitted_ib(
                    sdma_gen, id, frame, &mut env, budget,
                );
                (ran, format!("sdma{}", ib.ring))
            };
            match ran {
                Ok(n) => {
                    log::debug!(target: "kfd::gem", "CS ctx {} {engine}: IB {:#x} ({} bytes), {n} packet(s)", request.ctx_id, ib.va_start, ib.ib_bytes)
                }
                Err(e) => {
                    log::error!(target: "kfd::gem", "CS ctx {} {engine}: the IB at {:#x} stopped: {e}; the ring is reset, its fence signals and the context is guilty", request.ctx_id, ib.va_start);
                    contexts.mark_guilty(request.ctx_id);
                    hung = true;
                }
            }
            seq = contexts.submit(request.ctx_id, ring)?;
        }
        Ok(seq)
    }

    /// `DRM_IOCTL_AMDGPU_WAIT_CS`: whether submission `seq` of context `ctx_id` on `ring`
    /// (`ip_type`, `ip_instance`, `ring`) has completed — always, once submitted (`EINVAL` for
    /// an unknown context or a sequence number not handed out yet).
    pub fn wait_cs(&self, ctx_id: u32, ring: (u32, u32, u32), seq: u64) -> KResult<bool> {
        let last = lock(&self.contexts).last_submitted(ctx_id, ring)?;
        if seq > last {
            return Err(Errno::EINVAL);
        }
        Ok(true)
    }

    /// `DRM_IOCTL_AMDGPU_CTX`: allocates, frees or queries one of the file's submission
    /// contexts.
    pub fn ctx(&self, request: crate::ctx::CtxRequest) -> KResult<crate::ctx::CtxAnswer> {
        lock(&self.contexts).ioctl(request)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_MMAP`: the offset at which `mmap` of this render node reaches
    /// the buffer.
    pub fn gem_mmap_offset(&self, handle: u32) -> KResult<u64> {
        lock(&self.gem).mmap_offset(handle)
    }

    /// `DRM_IOCTL_AMDGPU_GEM_VA`: maps, unmaps or clears ranges of the file's GPU VM.
    pub fn gem_va(&self, request: crate::gem::GemVaRequest) -> KResult<()> {
        lock(&self.gem).va(request)
    }

    /// `DRM_IOCTL_GEM_CLOSE`.
    pub fn gem_close(&self, handle: u32) -> KResult<()> {
        lock(&self.gem).close(handle)
    }

    /// `DRM_IOCTL_PRIME_HANDLE_TO_FD`: the buffer as a dma-buf descriptor. `flags` may hold
    /// `O_CLOEXEC` and `O_RDWR` (`DRM_CLOEXEC`, `DRM_RDWR`); anything else is `EINVAL`.
    pub fn prime_handle_to_fd(&self, handle: u32, flags: u32) -> KResult<i32> {
        let allowed = (libc::O_CLOEXEC | libc::O_RDWR) as u32;
        if flags & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        let cloexec = flags & libc::O_CLOEXEC as u32 != 0;
        lock(&self.gem).export(&self.model.dmabufs, handle, cloexec)
    }

    /// (handle, size) of each GEM object, for inspection.
    pub fn gem_objects(&self) -> Vec<(u32, u64)> {
        lock(&self.gem).handles()
    }

    /// How many `GEM_VA` mappings the file has.
    pub fn gem_va_mappings(&self) -> usize {
        lock(&self.gem).vm().len()
    }
}

impl Drop for RenderNode {
    fn drop(&mut self) {
        lock(&self.model.render_files).remove(&self.key);
    }
}

/// How the driver finds a render file from a descriptor number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum RenderFileKey {
    /// A number handed out by the model itself, for in-process clients with no real
    /// descriptor (far above any real descriptor: the kernel's limit is 2^20).
    Synthetic(i32),
    /// The open file a real descriptor names.
    File(FileIdentity),
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// State shared by everything of one model instance.
#[derive(Debug)]
pub(crate) struct ModelInner {
    pub config: ModelConfig,
    pub topology: Topology,
    pub nodes: Vec<Arc<KfdNode>>,
    pub mem_limit: Arc<crate::memory::KfdMemLimit>,
    processes: Mutex<BTreeMap<u32, Weak<ProcessInner>>>,
    next_pasid: AtomicU32,
    /// Render files by how descriptors name them → (render file id, gpu id).
    render_files: Mutex<HashMap<RenderFileKey, (u64, u32)>>,
    next_render_file: AtomicU64,
    next_fake_fd: AtomicI32,
    /// dma-bufs exported from GEM objects, for KFD's import.
    pub dmabufs: crate::gem::DmaBufTable,
    /// Wakes (and stops) the engine thread.
    engine: Arc<EngineWaker>,
    /// Restores of processes whose buffers TTM evicted, by when they are due.
    pub restores: crate::eviction::RestoreQueue,
}

impl Drop for ModelInner {
    fn drop(&mut self) {
        self.engine.stop();
    }
}

impl ModelInner {
    /// One pass of every GPU's engines, then the driver's interrupt handling; first the
    /// restores of evicted processes that are due (the kernel's delayed work).
    pub fn step(&self) -> EngineActivity {
        crate::eviction::run_due_restores(self);
        let mut a = EngineActivity::default();
        for node in &self.nodes {
            a.merge(node.gpu.run_engines());
            a.interrupts += crate::interrupt::process_interrupts(self, node);
            if node.gpu.ih.is_pending() {
                a.delayed_interrupts += 1;
            }
        }
        a
    }

    /// The next free PASID after the last one handed out, reserved until its process is
    /// inserted (`ENOSPC` when every PASID is live). Round robin rather than the lowest free
    /// one, so an interrupt still in flight for an ended process meets no new owner.
    fn alloc_pasid(&self) -> KResult<u32> {
        let mut processes = lock(&self.processes);
        let span = PASID_END - FIRST_PASID;
        let start = self.next_pasid.load(Ordering::Relaxed);
        for i in 0..span {
            let pasid = FIRST_PASID + (start - FIRST_PASID + i) % span;
            if let std::collections::btree_map::Entry::Vacant(v) = processes.entry(pasid) {
                v.insert(Weak::new());
                self.next_pasid.store(
                    FIRST_PASID + (pasid + 1 - FIRST_PASID) % span,
                    Ordering::Relaxed,
                );
                return Ok(pasid);
            }
        }
        Err(Errno::ENOSPC)
    }

    /// A scheduler time slice on every GPU (rotates oversubscribed runlists).
    pub fn tick(&self) {
        for node in &self.nodes {
            node.gpu.hws.tick(&node.gpu.gart);
        }
    }

    pub fn node_by_gpu_id(&self, gpu_id: u32) -> Option<&Arc<KfdNode>> {
        self.nodes.iter().find(|n| n.gpu_id == gpu_id)
    }

    /// The live processes, in PASID order.
    pub fn live_processes(&self) -> Vec<Arc<ProcessInner>> {
        lock(&self.processes)
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// The process of a PASID (the interrupt path uses this).
    pub fn process(&self, pasid: u32) -> Option<Arc<ProcessInner>> {
        lock(&self.processes).get(&pasid).and_then(Weak::upgrade)
    }
}

/// A model instance: the GPUs and the driver that serves them.
#[derive(Debug, Clone)]
pub struct Model {
    pub(crate) inner: Arc<ModelInner>,
}

impl Model {
    /// Builds the GPUs of `config` and starts the driver on them.
    pub fn new(config: ModelConfig) -> KResult<Model> {
        if config.gpus == 0 || config.gpus > 64 {
            return Err(Errno::EINVAL);
        }
        let topology = Topology::from_config(&config);
        let nodes = (0..config.gpus as usize)
            .map(|i| KfdNode::new(&config, &topology, i).map(Arc::new))
            .collect::<KResult<Vec<_>>>()?;
        for n in &nodes {
            n.start()?;
        }
        log::info!(target: "kfd::model", "model up: {} × {} ({:?})", config.gpus, config.preset, config.kernel);
        for n in &nodes {
            for f in &config.faults {
                f.apply(&n.gpu);
            }
        }
        let engine_thread = config.engine_thread;
        let engine_affinity = config.engine_affinity;
        let engine = Arc::new(EngineWaker::default());
        for n in &nodes {
            n.gpu.set_waker(engine.clone());
        }
        let inner = Arc::new(ModelInner {
            mem_limit: Arc::new(
                crate::memory::KfdMemLimit::for_topology(&topology, config.kernel)
                    .with_no_system_mem_limit(config.no_system_mem_limit),
            ),
            config,
            topology,
            nodes,
            processes: Mutex::new(BTreeMap::new()),
            next_pasid: AtomicU32::new(FIRST_PASID),
            render_files: Mutex::new(HashMap::new()),
            next_render_file: AtomicU64::new(1),
            next_fake_fd: AtomicI32::new(0x4000_0000),
            dmabufs: Default::default(),
            engine: engine.clone(),
            restores: Default::default(),
        });
        if engine_thread {
            let (a, b) = (Arc::downgrade(&inner), Arc::downgrade(&inner));
            crate::hw::engine::spawn(
                engine,
                engine_affinity,
                move || a.upgrade().map(|m| m.step()),
                move || b.upgrade().map(|m| m.tick()).is_some(),
            )
            .map_err(|e| {
                log::error!(target: "kfd::model", "cannot start the engine thread: {e}");
                Errno::EAGAIN
            })?;
        }
        Ok(Model { inner })
    }

    /// One pass of the engines over every mapped queue of every GPU, then the interrupts they
    /// raised (the deterministic alternative to the engine thread).
    pub fn step(&self) -> EngineActivity {
        self.inner.step()
    }

    /// Runs the engines until nothing moves: every mapped queue is idle, parked on a wait
    /// that is not met, or stopped. With an oversubscribed runlist the scheduler is also
    /// rotated so that every queue gets its turn. Returns the work done (packets and
    /// interrupts in total; parked and halted queues as the last pass left them).
    pub fn run_until_idle(&self) -> EngineActivity {
        const MAX_PASSES: usize = 1_000_000;
        const MAX_TIME: std::time::Duration = std::time::Duration::from_secs(60);
        let start = std::time::Instant::now();
        let mut total = EngineActivity::default();
        let mut quiet_rotations = 0usize;
        for _ in 0..MAX_PASSES {
            let a = self.inner.step();
            total.packets += a.packets;
            total.interrupts += a.interrupts;
            if a.progressed() {
                quiet_rotations = 0;
                continue;
            }
            // A slow engine or delayed interrupts: work that only needs time.
            if a.pending_in_time() && start.elapsed() < MAX_TIME {
                std::thread::sleep(std::time::Duration::from_micros(100));
                continue;
            }
            let rotations = self
                .inner
                .nodes
                .iter()
                .map(|n| n.gpu.hws.quanta_per_round())
                .max()
                .unwrap_or(0);
            if quiet_rotations < rotations {
                self.inner.tick();
                quiet_rotations += 1;
                continue;
            }
            total.parked = a.parked;
            total.halted = a.halted;
            return total;
        }
        log::warn!(target: "kfd::model", "run_until_idle: still busy after {MAX_PASSES} passes");
        total.busy = 1;
        total
    }

    /// Injects a fault into GPU `gpu_id` (see [`crate::faults`]).
    pub fn inject_fault(&self, gpu_id: u32, fault: crate::Fault) -> KResult<()> {
        fault.apply(&self.node(gpu_id).ok_or(Errno::EINVAL)?.gpu);
        Ok(())
    }

    /// Removes every injected fault of GPU `gpu_id`. (A hung scheduler stays hung: that state
    /// is the driver's, and only a GPU reset clears it.)
    pub fn clear_faults(&self, gpu_id: u32) -> KResult<()> {
        self.node(gpu_id).ok_or(Errno::EINVAL)?.gpu.clear_faults();
        Ok(())
    }

    /// Registers a client's mapping of a doorbell page (`len` bytes at `addr`, what its
    /// `mmap` of a doorbell offset returned): a store into it wakes the engine thread at once
    /// even after a long idle, through a write-protecting `userfaultfd`
    /// ([`crate::hw::doorbell_watch`]). An error (no `userfaultfd` on this host) leaves the
    /// engine's polling sleep as the only way it notices the store.
    ///
    /// # Safety
    /// `addr..addr + len` must be a shared mapping of this model's doorbell memory, kept as
    /// such until it is unmapped: stores into it may briefly wait for the model.
    pub unsafe fn watch_doorbell_mapping(&self, addr: u64, len: u64) -> std::io::Result<()> {
        if !self.inner.config.engine_thread {
            return Ok(());
        }
        let engine = &self.inner.engine;
        let watch = match engine.doorbell_watch() {
            Some(w) => w.clone(),
            None => {
                let w = crate::hw::doorbell_watch::DoorbellWatch::new()?;
                engine.set_doorbell_watch(w.clone());
                engine.doorbell_watch().cloned().unwrap_or(w)
            }
        };
        // SAFETY: this function's contract is `watch`'s: the caller promised `addr..addr+len`
        // is a shared mapping of this model's doorbell memory, kept so until it is unmapped.
        unsafe { watch.watch(addr, len) }
    }

    /// How many times a store into a watched doorbell mapping woke the sleeping engine
    /// thread (0 without [`Model::watch_doorbell_mapping`]).
    pub fn doorbell_wakeups(&self) -> u64 {
        self.inner
            .engine
            .doorbell_watch()
            .map_or(0, |w| w.wakeups())
    }

    /// Whether the watched doorbell mappings are write-protected now: the engine thread is
    /// asleep (or about to be) and the next store into them wakes it.
    pub fn doorbell_watch_armed(&self) -> bool {
        self.inner
            .engine
            .doorbell_watch()
            .is_some_and(|w| w.is_armed())
    }

    /// How many times a request woke the sleeping engine thread: a doorbell rung through
    /// [`Model::doorbell_rung`], a runlist mapped with work the thread could not know of
    /// (stores into watched doorbell mappings are counted by [`Model::doorbell_wakeups`]).
    pub fn engine_wakeups(&self) -> u64 {
        self.inner.engine.wakes()
    }

    /// What the engine thread's CPU-affinity policy decided so far
    /// ([`ModelConfig::engine_affinity`]): moves it asked for, not where the host ran it.
    pub fn engine_affinity(&self) -> crate::hw::engine::affinity::AffinityStats {
        self.inner.engine.affinity()
    }

    /// Tells the engines a doorbell of `gpu_id` was just written, so they look now instead of
    /// at their next poll. Optional: the engine thread notices doorbell writes by itself.
    pub fn doorbell_rung(&self, gpu_id: u32) {
        log::trace!(target: "hw::engine", "doorbell rung on gpu {gpu_id:#x}");
        self.inner.engine.doorbell_rung();
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.inner.config
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    /// The GPUs.
    pub fn nodes(&self) -> &[Arc<KfdNode>] {
        &self.inner.nodes
    }

    /// The shader counters of every GPU added up: dispatches, workgroups, waves, instructions
    /// and wave faults since the model was built.
    pub fn shader_counts(&self) -> crate::hw::observe::ShaderCounts {
        self.nodes()
            .iter()
            .map(|n| n.gpu.shader.counts())
            .fold(Default::default(), |a, b| a + b)
    }

    /// The GPU with topology id `gpu_id`.
    pub fn node(&self, gpu_id: u32) -> Option<&Arc<KfdNode>> {
        self.inner.node_by_gpu_id(gpu_id)
    }

    /// Opens `/dev/kfd` as a new process (as a separate OS process would), reading user memory
    /// of this process.
    pub fn open(&self) -> KResult<Process> {
        self.open_with(Arc::new(ClientMemory))
    }

    /// Opens `/dev/kfd` with a custom view of user memory.
    pub fn open_with(&self, user: Arc<dyn UserAccess>) -> KResult<Process> {
        let pasid = self.inner.alloc_pasid()?;
        let pdds = self
            .inner
            .nodes
            .iter()
            .map(|n| ProcessDevice::new(n.clone()))
            .collect();
        for n in &self.inner.nodes {
            n.dqm().attach_process(pasid);
        }
        let inner = Arc::new(ProcessInner {
            model: self.inner.clone(),
            pasid,
            owner_pid: crate::user::current_pid(),
            events: EventTable::new(),
            state: Mutex::new(ProcessState {
                pdds,
                bos: BTreeMap::new(),
                xnack_enabled: false,
                runtime: RuntimeInfo::default(),
                pqm: Pqm::default(),
                svm: crate::svm::SvmRanges::default(),
                eviction: Default::default(),
            }),
            user,
            svm_deferred: Mutex::new(Vec::new()),
            startup_refusal_reported: Default::default(),
        });
        lock(&self.inner.processes).insert(pasid, Arc::downgrade(&inner));
        log::debug!(target: "kfd::process", "open: pasid {pasid:#x}");
        Ok(Process { inner })
    }

    /// Opens the render node `/dev/dri/renderD<minor>`; `ENODEV` if no modelled GPU has it.
    pub fn open_render_node(&self, minor: u32) -> KResult<RenderNode> {
        let node = self
            .inner
            .nodes
            .iter()
            .find(|n| n.topo.properties.drm_render_minor == u64::from(minor))
            .ok_or(Errno::ENODEV)?
            .clone();
        let file_id = self.inner.next_render_file.fetch_add(1, Ordering::Relaxed);
        let fd = self.inner.next_fake_fd.fetch_add(1, Ordering::Relaxed);
        let key = RenderFileKey::Synthetic(fd);
        lock(&self.inner.render_files).insert(key, (file_id, node.gpu_id));
        Ok(RenderNode {
            model: self.inner.clone(),
            node,
            file_id,
            fd,
            key,
            gem: Mutex::new(Default::default()),
            contexts: Mutex::new(Default::default()),
            bo_lists: Mutex::new(Default::default()),
        })
    }

    /// A GPU reset (after a hang, or requested): the scheduler restarts, the hang state
    /// clears, active queues are mapped again, and every process with queues on the GPU gets
    /// its hardware-exception events set (whole-GPU reset, cause: hang).
    pub fn gpu_reset(&self, gpu_id: u32) -> KResult<()> {
        let node = self.node(gpu_id).ok_or(Errno::EINVAL)?.clone();
        let pasids = node.dqm().reset(&node.gpu)?;
        let data = kfd_hsa_hw_exception_data {
            reset_type: KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
            reset_cause: KFD_HW_EXCEPTION_GPU_HANG,
            memory_lost: 0,
            gpu_id,
        };
        for pasid in pasids {
            if let Some(p) = self.inner.process(pasid) {
                p.events.signal_hw_exception(data);
            }
        }
        Ok(())
    }

    /// Live processes.
    pub fn process_count(&self) -> usize {
        lock(&self.inner.processes)
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    /// Threads of all live processes blocked in `WAIT_EVENTS` right now (see
    /// [`EventTable::waiting`]): lets a test set an event only once its waiter is inside the wait.
    pub fn event_waiters(&self) -> usize {
        lock(&self.inner.processes)
            .values()
            .filter_map(Weak::upgrade)
            .map(|p| p.events.waiting())
            .sum()
    }

    /// What each live process set on each of its GPUs through the per-GPU ioctls, for
    /// inspection (tests, traces): one entry per process and GPU, by PASID then GPU.
    pub fn process_gpu_settings(&self) -> Vec<ProcessGpuSettings> {
        let processes: Vec<_> = lock(&self.inner.processes)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        let mut out: Vec<ProcessGpuSettings> = processes
            .iter()
            .flat_map(|p| {
                p.lock()
                    .pdds
                    .iter()
                    .map(|d| ProcessGpuSettings {
                        pasid: p.pasid,
                        gpu_id: d.node.gpu_id,
                        default_policy: d.default_policy,
                        alternate_policy: d.alternate_policy,
                        tba_addr: d.tba_addr,
                        tma_addr: d.tma_addr,
                        scratch_va: d.scratch_va,
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_by_key(|s| (s.pasid, s.gpu_id));
        out
    }

    /// Writes the sysfs topology tree under `root`.
    pub fn write_sysfs(&self, root: &std::path::Path) -> std::io::Result<()> {
        self.inner.topology.write_sysfs(root)
    }
}

/// What a process set on one GPU through `SET_MEMORY_POLICY`, `SET_TRAP_HANDLER` and
/// `SET_SCRATCH_BACKING_VA` (see [`Model::process_gpu_settings`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessGpuSettings {
    /// The process.
    pub pasid: u32,
    /// The GPU.
    pub gpu_id: u32,
    /// `KFD_IOC_CACHE_POLICY_*` of the default aperture.
    pub default_policy: u32,
    /// `KFD_IOC_CACHE_POLICY_*` of the alternate aperture.
    pub alternate_policy: u32,
    /// Trap handler base address (0: none set).
    pub tba_addr: u64,
    /// Trap handler memory address.
    pub tma_addr: u64,
    /// Scratch backing virtual address (0: none set).
    pub scratch_va: u64,
}

/// Per-process data of one GPU (`kfd_process_device`).
#[derive(Debug)]
pub(crate) struct ProcessDevice {
    pub node: Arc<KfdNode>,
    /// `ACQUIRE_VM` done: the render file the VM came from.
    pub drm_file: Option<u64>,
    pub vm: Arc<RwLock<GpuVm>>,
    /// Page-directory base registered with the GPU (0 until the VM is acquired).
    pub pd_base: u64,
    pub doorbell_slice: Option<u32>,
    pub doorbell_ids: DoorbellIds,
    pub free_idrs: BTreeSet<u32>,
    pub next_idr: u32,
    pub default_policy: u32,
    pub alternate_policy: u32,
    pub tba_addr: u64,
    pub tma_addr: u64,
    pub scratch_va: u64,
    /// With CWSR, the trap-handler pages mapped at [`CWSR_TBA_ADDR`](crate::dqm::CWSR_TBA_ADDR)
    /// (`qpd->cwsr_kaddr`): the first-level handler's code, and its TMA, where
    /// `SET_TRAP_HANDLER` writes the process's own handler.
    pub cwsr: Option<Arc<crate::hw::mem::DeviceMemory>>,
}

impl ProcessDevice {
    fn new(node: Arc<KfdNode>) -> Self {
        let ids = DoorbellIds::new(&node.gpu.doorbells.layout);
        ProcessDevice {
            node,
            drm_file: None,
            vm: Arc::new(RwLock::new(GpuVm::new())),
            pd_base: 0,
            doorbell_slice: None,
            doorbell_ids: ids,
            free_idrs: BTreeSet::new(),
            next_idr: 0,
            default_policy: KFD_IOC_CACHE_POLICY_COHERENT,
            alternate_policy: KFD_IOC_CACHE_POLICY_COHERENT,
            tba_addr: 0,
            tma_addr: 0,
            scratch_va: 0,
            cwsr: None,
        }
    }

    /// `kfd_process_device_init_cwsr_dgpu`: with CWSR, two pages at
    /// [`CWSR_TBA_ADDR`](crate::dqm::CWSR_TBA_ADDR) of the process's GPU VM, holding the
    /// first-level trap handler's code, which the GPU reads (not writes); its TMA is zero (no
    /// handler of the process's own) until `SET_TRAP_HANDLER`.
    pub fn init_cwsr(&mut self) -> KResult<()> {
        if self.cwsr.is_some() {
            return Ok(());
        }
        let len = crate::dqm::CWSR_TBA_TMA_SIZE;
        let mem = Arc::new(crate::hw::mem::DeviceMemory::new("cwsr tba/tma", len)?);
        mem.write(0, &crate::hw::spi::FIRST_LEVEL_TRAP_HANDLER)
            .ok_or(Errno::ENOMEM)?;
        let mapping = crate::hw::vm::VmMapping {
            va: crate::dqm::CWSR_TBA_ADDR,
            len,
            backing: crate::hw::vm::Backing::Device {
                mem: mem.clone(),
                offset: 0,
            },
            writable: false,
            handle: 0,
        };
        if !self
            .vm
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .map(mapping)
        {
            return Err(Errno::ENOMEM);
        }
        self.cwsr = Some(mem);
        Ok(())
    }

    /// `kfd_process_set_trap_handler`: with CWSR the process's handler goes into the
    /// first-level handler's TMA (TBA, then TMA, as two quadwords), which that handler reads
    /// when a wave traps; without, it is what `MAP_PROCESS` names.
    pub fn set_trap_handler(&mut self, tba: u64, tma: u64) -> KResult<()> {
        self.tba_addr = tba;
        self.tma_addr = tma;
        if let Some(mem) = &self.cwsr {
            let mut second_level = [0u8; 16];
            second_level[..8].copy_from_slice(&tba.to_le_bytes());
            second_level[8..].copy_from_slice(&tma.to_le_bytes());
            mem.write(crate::dqm::CWSR_TMA_OFFSET as usize, &second_level)
                .ok_or(Errno::EINVAL)?;
        }
        Ok(())
    }

    /// `kfd_bind_process_to_device`: needs the VM acquired.
    pub fn bind(&mut self) -> KResult<()> {
        if self.drm_file.is_none() {
            return Err(Errno::ENODEV);
        }
        Ok(())
    }

    /// The process doorbell slice, allocated on first use (`kfd_get_process_doorbells`).
    pub fn doorbell_slice(&mut self) -> KResult<u32> {
        if let Some(s) = self.doorbell_slice {
            return Ok(s);
        }
        let s = self.node.gpu.doorbells.alloc_slice()?;
        self.doorbell_slice = Some(s);
        Ok(s)
    }

    pub fn apertures(&self) -> kfd_process_device_apertures {
        kfd_process_device_apertures {
            lds_base: LDS_APERTURE_BASE,
            lds_limit: LDS_APERTURE_BASE + APERTURE_SIZE - 1,
            scratch_base: SCRATCH_APERTURE_BASE,
            scratch_limit: SCRATCH_APERTURE_BASE + APERTURE_SIZE - 1,
            gpuvm_base: GPUVM_BASE,
            gpuvm_limit: GPUVM_END - 1,
            gpu_id: self.node.gpu_id,
            pad: 0,
        }
    }

    pub fn alloc_handle(&mut self) -> u64 {
        let idr = match self.free_idrs.pop_first() {
            Some(i) => i,
            None => {
                self.next_idr += 1;
                self.next_idr - 1
            }
        };
        (u64::from(self.node.gpu_id) << 32) | u64::from(idr)
    }

    pub fn free_handle(&mut self, handle: u64) {
        self.free_idrs.insert(handle as u32);
    }
}

/// A buffer and the GPUs (by index) it is mapped to.
#[derive(Debug)]
pub(crate) struct BoEntry {
    pub bo: Arc<Bo>,
    pub mapped_on: BTreeSet<usize>,
}

#[derive(Debug)]
pub(crate) struct ProcessState {
    pub pdds: Vec<ProcessDevice>,
    pub bos: BTreeMap<u64, BoEntry>,
    pub xnack_enabled: bool,
    /// What `RUNTIME_ENABLE` set (`kfd_process.runtime_info`).
    pub runtime: RuntimeInfo,
    pub pqm: Pqm,
    /// SVM ranges (`kfd_process.svms`).
    pub svm: crate::svm::SvmRanges,
    /// Its buffers TTM evicted for the graphics driver, and the restore due.
    pub eviction: crate::eviction::ProcessEviction,
}

/// The runtime's registration with the driver (`kfd_runtime_info`): set by `RUNTIME_ENABLE`,
/// cleared by its disable form. While it is enabled, queue exceptions go to the runtime.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RuntimeInfo {
    /// `DEBUG_RUNTIME_STATE_ENABLED`.
    pub enabled: bool,
    /// The runtime's `r_debug` address (for a debugger to find its loaded code objects).
    pub r_debug: u64,
    /// The runtime asked for the trap temporaries to be set up at wave launch
    /// (`KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK`).
    pub ttmp_setup: bool,
}

impl ProcessState {
    pub fn pdd_index(&self, gpu_id: u32) -> KResult<usize> {
        self.pdds
            .iter()
            .position(|p| p.node.gpu_id == gpu_id)
            .ok_or(Errno::EINVAL)
    }
}

/// A process's kernel-side object.
pub(crate) struct ProcessInner {
    pub model: Arc<ModelInner>,
    pub pasid: u32,
    pub owner_pid: u32,
    pub events: EventTable,
    pub state: Mutex<ProcessState>,
    pub user: Arc<dyn UserAccess>,
    /// CPU unmaps reported while the state was locked, for the next SVM entry.
    pub svm_deferred: Mutex<Vec<crate::svm::CpuChange>>,
    /// A refusal that stops a runtime was reported (one warning line per process).
    pub startup_refusal_reported: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for ProcessInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessInner")
            .field("pasid", &self.pasid)
            .finish_non_exhaustive()
    }
}

impl ProcessInner {
    pub fn lock(&self) -> MutexGuard<'_, ProcessState> {
        lock(&self.state)
    }

    /// Process termination: queues, buffers, doorbells, address spaces, events — everything.
    fn terminate(&self) {
        let mut st = self.lock();
        crate::pqm::terminate(self, &mut st);
        crate::svm::teardown(self, &mut st);
        for pdd in &mut st.pdds {
            pdd.vm
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .unmap_handle_all();
            if pdd.pd_base != 0 {
                pdd.node.gpu.unregister_vm(pdd.pd_base);
            }
            if let Some(slice) = pdd.doorbell_slice.take() {
                pdd.node.gpu.doorbells.free_slice(slice);
            }
        }
        st.bos.clear();
        log::debug!(target: "kfd::process", "pasid {:#x} terminated", self.pasid);
    }
}

/// An open `/dev/kfd`: the entry surface of the model, the same as the real device's.
#[derive(Debug)]
pub struct Process {
    pub(crate) inner: Arc<ProcessInner>,
}

impl Process {
    /// The PASID.
    pub fn pasid(&self) -> u32 {
        self.inner.pasid
    }

    /// The model this process belongs to.
    pub fn model(&self) -> Model {
        Model {
            inner: self.inner.model.clone(),
        }
    }

    /// `ioctl(fd, request, arg)`: `arg` holds at least the bytes the request code's size field
    /// names; they are read and written back as the kernel would. Returns the ioctl's
    /// non-negative result or the errno.
    ///
    /// # Safety
    ///
    /// The model reads and writes client memory directly, as the kernel and the GPU do: every
    /// address inside the argument bytes (queue ring, read/write-pointer, EOP and save-area
    /// addresses, a `USERPTR` buffer's user address, `WAIT_EVENTS`' event array, the output
    /// array of `GET_PROCESS_APERTURES_NEW`, …) must be memory of this process that the caller
    /// owns for the call's effects and their lifetime — for output arrays until the call
    /// returns, for memory a queue or a GPU mapping reaches until the queue is destroyed or the
    /// buffer freed — with no Rust reference into what the model writes meanwhile.
    ///
    /// This is the raw entry: the request code is not checked against the argument's type, so
    /// it also takes codes no request type names (unknown numbers, wrong sizes or directions,
    /// the variable-length `SVM`), as a shim forwarding a client's calls or a test of the
    /// dispatcher's refusals needs. Typed code uses [`Process::call`] (safe, for
    /// [`kfd_sys::SafeIoctl`] requests) or [`Process::call_unchecked`] (any request).
    pub unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> KResult<i32> {
        crate::chardev::ioctl(&self.inner, request, arg)
    }

    /// A typed ioctl that safe code may issue ([`kfd_sys::SafeIoctl`]): its argument makes
    /// the model write no process memory outside the argument and map none for the GPU.
    pub fn call<R: kfd_sys::SafeIoctl>(&self, arg: &mut R::Arg) -> KResult<i32> {
        use kfd_sys::IntoBytes;
        // SAFETY: a `SafeIoctl` argument holds no address the model writes through (it reads
        // user arrays with `process_vm_readv`, EFAULT on a bad one; GPU addresses resolve
        // through the GPU VM) and hands no process memory to the GPU.
        unsafe { self.ioctl(R::REQUEST, arg.as_mut_bytes()) }
    }

    /// A typed ioctl of any request, including those whose argument carries user addresses
    /// the model writes through or hands to the GPU (`ALLOC_MEMORY_OF_GPU` with `USERPTR`,
    /// `WAIT_EVENTS`, `GET_PROCESS_APERTURES_NEW`, `SVM` without attributes, …): the request
    /// code and the argument type come together from `R`, so they cannot disagree.
    ///
    /// # Safety
    ///
    /// As [`Process::ioctl`]: every address inside `arg` is memory of this process that the
    /// caller owns for everything the request does with it and for as long as it does (an
    /// output array until the call returns; memory a queue or a GPU mapping reaches until the
    /// queue is destroyed or the buffer freed), with no Rust reference into what the model
    /// writes meanwhile.
    pub unsafe fn call_unchecked<R: kfd_sys::Ioctl>(&self, arg: &mut R::Arg) -> KResult<i32> {
        use kfd_sys::IntoBytes;
        // SAFETY: the argument bytes are `arg`'s own; the addresses inside them are valid for
        // the request by the caller's contract, which is `ioctl`'s.
        unsafe { self.ioctl(R::REQUEST, arg.as_mut_bytes()) }
    }

    /// `mmap(fd, offset, len)` on `/dev/kfd`: doorbell, event and MMIO pages.
    pub fn mmap(&self, offset: u64, len: u64) -> KResult<MapSource> {
        crate::chardev::mmap(&self.inner, offset, len)
    }

    /// `kfd_process_evict_queues`: takes every queue of the process off the GPUs (what memory
    /// eviction, suspend or CRIU do). Refcounted with [`Process::restore_queues`].
    pub fn evict_queues(&self) -> KResult<()> {
        let st = self.inner.lock();
        let mut result = Ok(());
        for pdd in &st.pdds {
            let r = pdd
                .node
                .dqm()
                .evict_process(&pdd.node.gpu, self.inner.pasid);
            result = result.and(r);
        }
        result
    }

    /// `kfd_process_restore_queues`: the matching restore; the last one maps the queues again.
    pub fn restore_queues(&self) -> KResult<()> {
        let st = self.inner.lock();
        let mut result = Ok(());
        for pdd in &st.pdds {
            let r = pdd
                .node
                .dqm()
                .restore_process(&pdd.node.gpu, self.inner.pasid, pdd.pd_base);
            result = result.and(r);
        }
        result
    }

    /// The SVM ranges: start, end, where the bytes are (0: system memory, else a gpu_id) and
    /// attributes, after dropping the pages the CPU unmapped.
    pub fn svm_ranges(&self) -> Vec<(u64, u64, u32, crate::svm::SvmAttributes)> {
        let mut st = self.inner.lock();
        crate::svm::reap_cpu_unmapped(&self.inner, &mut st);
        st.svm
            .iter()
            .map(|r| (r.start, r.end, r.actual_loc(), r.attrs))
            .collect()
    }

    /// What TTM evictions for the graphics driver did to this process so far.
    pub fn eviction_stats(&self) -> crate::eviction::EvictionStats {
        self.inner.lock().eviction.stats()
    }

    /// What the SVM code did so far (migrations, evictions, recovered faults, CPU unmaps).
    pub fn svm_stats(&self) -> crate::svm::SvmStats {
        self.inner.lock().svm.stats
    }

    /// The MMU notifier the model cannot get from the kernel: the CPU is unmapping
    /// `[addr, addr+len)`, so the SVM ranges there go and the GPUs stop mapping them (a shim
    /// that sees `munmap` calls this before the pages go; otherwise the next SVM ioctl or GPU
    /// fault notices). It never blocks: when the process is busy (possibly on this very
    /// thread, inside the driver) the unmap is queued and handled by the next SVM entry, as
    /// the kernel defers its notifier work.
    pub fn svm_cpu_unmapped(&self, addr: u64, len: u64) {
        crate::user::forget_populated(addr, len);
        let end = addr.saturating_add(len);
        match self.inner.state.try_lock() {
            Ok(mut st) => {
                crate::svm::reap_cpu_unmapped(&self.inner, &mut st);
                crate::svm::cpu_unmapped(&self.inner, &mut st, addr, end);
            }
            Err(_) => lock(&self.inner.svm_deferred).push(crate::svm::CpuChange::Unmap(addr, end)),
        }
    }

    /// The MMU notifier for a protection change: the CPU changed what it may do with
    /// `[addr, addr+len)` (`mprotect`; called after the change). SVM ranges there follow the
    /// new protection on the GPUs: with XNACK off the queues are evicted while the GPU
    /// mappings are rebuilt (read-only, or none), with XNACK on the GPUs lose the pages and
    /// fault them in again. Never blocks, as [`Process::svm_cpu_unmapped`].
    pub fn svm_cpu_protection_changed(&self, addr: u64, len: u64) {
        let end = addr.saturating_add(len);
        match self.inner.state.try_lock() {
            // Most protection changes touch no SVM range: nothing to look at then.
            Ok(mut st) if st.svm.overlaps(addr, end) => {
                crate::svm::reap_cpu_unmapped(&self.inner, &mut st);
                crate::svm::cpu_protection_changed(&self.inner, &mut st, addr, end);
            }
            Ok(_) => {}
            Err(_) => {
                lock(&self.inner.svm_deferred).push(crate::svm::CpuChange::Protect(addr, end))
            }
        }
    }

    /// The MMU notifier at `fork`: the process's private pages became copy-on-write, so
    /// every SVM range is invalidated as for a protection change (the GPUs keep reaching the
    /// parent's pages once they are mapped again). The child's copies of ranges in VRAM are
    /// made private to it by the model's fork handler.
    pub fn svm_forked(&self) {
        self.svm_cpu_protection_changed(0, u64::MAX);
    }

    /// The event table (for the interrupt path and inspection).
    pub fn events(&self) -> &EventTable {
        &self.inner.events
    }

    /// Buffers currently allocated.
    pub fn buffer_count(&self) -> usize {
        self.inner.lock().bos.len()
    }

    /// Queues currently existing.
    pub fn queue_count(&self) -> usize {
        self.inner.lock().pqm.len()
    }

    /// What the engines report about queue `queue_id` (its read pointer, packets executed,
    /// whether it waits or stopped); `None` for an unknown queue or one never mapped.
    pub fn queue_state(&self, queue_id: u32) -> Option<EngineQueueState> {
        self.inner.model.nodes.iter().find_map(|n| {
            let mqd = n.dqm().queue(self.inner.pasid, queue_id)?.mqd_mem.gpu_addr;
            n.gpu.hws.queue_state(mqd)
        })
    }

    /// Why queue `queue_id` stopped, if it did (a VM fault, a malformed packet, a packet the
    /// model does not execute such as a shader dispatch).
    pub fn queue_error(&self, queue_id: u32) -> Option<QueueError> {
        self.queue_state(queue_id)?.error
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.inner.terminate();
        lock(&self.inner.model.processes).remove(&self.inner.pasid);
    }
}

impl GpuVm {
    /// Removes every mapping (process termination).
    pub fn unmap_handle_all(&mut self) {
        *self = GpuVm::new();
    }
}

/// The render file (id, gpu id) behind descriptor number `fd` (`fget` and the check that
/// it is an amdgpu DRM file): a synthetic number of the model's, else the open file a real
/// descriptor names.
pub(crate) fn render_file(model: &ModelInner, fd: i32) -> Option<(u64, u32)> {
    let files = lock(&model.render_files);
    if let Some(f) = files.get(&RenderFileKey::Synthetic(fd)) {
        return Some(*f);
    }
    let key = RenderFileKey::File(FileIdentity::of(fd).ok()?);
    files.get(&key).copied()
}
