//! A model instance: the GPUs, the driver state they share (PASIDs, render files, dma-bufs,
//! pending restores) and the engine thread, and the door a client opens processes through.

// Unsafe here: the doorbell watch takes a client address range (`unsafe fn`).
#![allow(unsafe_code)]

use crate::config::ModelConfig;
use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::events::EventTable;
use crate::hw::engine::{EngineActivity, EngineWaker};
use crate::pqm::Pqm;
use crate::process::{
    lock, Process, ProcessDevice, ProcessGpuSettings, ProcessInner, ProcessState, RuntimeInfo,
    FIRST_PASID, PASID_END,
};
use crate::render::{RenderFileKey, RenderNode};
use crate::topology::Topology;
use crate::user::{ClientMemory, UserAccess};
use kfd_sys::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// State shared by everything of one model instance.
#[derive(Debug)]
pub(crate) struct ModelInner {
    pub config: ModelConfig,
    pub topology: Topology,
    pub nodes: Vec<Arc<KfdNode>>,
    pub mem_limit: Arc<crate::memory::KfdMemLimit>,
    pub(crate) processes: Mutex<BTreeMap<u32, Weak<ProcessInner>>>,
    next_pasid: AtomicU32,
    /// Render files by how descriptors name them → (render file id, gpu id).
    pub(crate) render_files: Mutex<HashMap<RenderFileKey, (u64, u32)>>,
    pub(crate) next_render_file: AtomicU64,
    pub(crate) next_fake_fd: AtomicI32,
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
        log::info!(target: crate::layer::MODEL, "model up: {} × {} ({:?})", config.gpus, config.preset, config.kernel);
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
                log::error!(target: crate::layer::MODEL, "cannot start the engine thread: {e}");
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
        log::warn!(target: crate::layer::MODEL, "run_until_idle: still busy after {MAX_PASSES} passes");
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
    /// (the hardware's `doorbell_watch`). An error (no `userfaultfd` on this host) leaves the
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
        log::trace!(target: crate::layer::ENGINE, "doorbell rung on gpu {gpu_id:#x}");
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

    /// Installs (or with `None` removes) the dispatch observer of the GPU with topology id
    /// `gpu_id` (`ENODEV` if there is none): the door through which a tool watches the compute
    /// units; dispatches that start later report to it.
    pub fn set_dispatch_observer(
        &self,
        gpu_id: u32,
        observer: Option<std::sync::Arc<dyn crate::hw::observe::DispatchObserver>>,
    ) -> KResult<()> {
        let node = self.node(gpu_id).ok_or(Errno::ENODEV)?;
        node.gpu.shader.set_observer(observer);
        Ok(())
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
        log::debug!(target: crate::layer::PROCESS, "open: pasid {pasid:#x}");
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
        Ok(RenderNode::open(&self.inner, node))
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
