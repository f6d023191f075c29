//! `kfd_process`: one client of `/dev/kfd` — its PASID, its per-GPU data (VM, doorbell slice,
//! buffer handles, apertures), its events and queues.

// Unsafe here: `Process::ioctl` takes client addresses (an `unsafe fn`).
#![allow(unsafe_code)]

use crate::device::KfdNode;
use crate::errno::{Errno, KResult};
use crate::events::EventTable;
use crate::file::FileIdentity;
use crate::hw::doorbell::DoorbellIds;
use crate::hw::engine::QueueError;
use crate::hw::hws::EngineQueueState;
use crate::hw::mem::DeviceMemory;
use crate::hw::vm::GpuVm;
use crate::instance::{Model, ModelInner};
use crate::memory::Bo;
use crate::pqm::Pqm;
use crate::render::*;
use crate::user::UserAccess;
use kfd_sys::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

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

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
    pub(crate) fn new(node: Arc<KfdNode>) -> Self {
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
        log::debug!(target: crate::layer::PROCESS, "pasid {:#x} terminated", self.pasid);
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
