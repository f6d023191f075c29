//! `kfd_chardev`: the `/dev/kfd` file operations — the ioctl table and mmap.
//!
//! `ioctl` follows `kfd_ioctl`: the command is looked up by its number only; the kernel buffer
//! is the larger of the kernel's and the caller's argument size, zero-filled; the caller's
//! bytes are copied in if the kernel's definition reads its argument, the handler runs, and the
//! caller's size is copied back if the kernel's definition writes it — even when the handler
//! failed (so `n_success` and `wait_result` reach user space on errors).

use crate::config::KernelVersion;
use crate::errno::{Errno, KResult};
use crate::events::WaitResult;
use crate::hw::mem::PAGE_SIZE;
use crate::memory::{alloc_bo, handle_gpu_id, AllocRequest};
use crate::process::{render_file, BoEntry, MapSource, ProcessInner, ProcessState, RuntimeInfo};
use crate::user::UserAccessExt;
use kfd_sys::ioctl::{ioc_nr, ioc_size, Ioctl, IoctlDesc, IOC_READ, IOC_WRITE};
use kfd_sys::v1_8::{
    CrossMemoryCopy, DbgTrap as DkmsDbgTrap, IpcExportHandle, IpcImportHandle, RlcSpm,
};
use kfd_sys::*;

/// The kernel's definition of command `nr`: the 1.18 table (Linux 6.1's ends before
/// `EXPORT_DMABUF`), plus the DKMS-only commands of [`v1_8`].
fn kernel_definition(nr: u32, kernel: KernelVersion) -> Option<&'static IoctlDesc> {
    /// `AMDKFD_COMMAND_END` of interface 1.11 (Linux 6.1): 1.12 added `EXPORT_DMABUF`.
    const COMMAND_END_1_11: u32 = <ExportDmabuf as Ioctl>::NR;
    if (v1_8::AMDKFD_COMMAND_START_2..v1_8::AMDKFD_COMMAND_END_2).contains(&nr) {
        ioctl::find_by_nr(v1_8::AMDKFD_IOCTLS, nr)
    } else if kernel == KernelVersion::Linux6_1 && nr >= COMMAND_END_1_11 {
        None
    } else {
        ioctl::find_by_nr(AMDKFD_IOCTLS, nr)
    }
}

/// Entry point for `ioctl(kfd_fd, request, arg)`. As in `kfd_ioctl`, an unknown command is
/// `ENOTTY` before the caller is checked.
pub(crate) fn ioctl(p: &ProcessInner, request: u32, arg: &mut [u8]) -> KResult<i32> {
    let nr = ioc_nr(request);
    let Some(def) = kernel_definition(nr, p.model.config.kernel) else {
        log::debug!(target: crate::layer::IOCTL, "pasid {:#x}: unknown command nr {nr:#x} (request {request:#010x})", p.pasid);
        return Err(Errno::ENOTTY);
    };
    if crate::user::current_pid() != p.owner_pid {
        return Err(Errno::EBADF);
    }
    let user_size = ioc_size(request);
    if arg.len() < user_size {
        return Err(Errno::EFAULT);
    }
    let mut kbuf = vec![0u8; def.size().max(user_size)];
    let dir = def.dir();
    if dir & IOC_WRITE != 0 {
        kbuf[..user_size].copy_from_slice(&arg[..user_size]);
    }
    log::trace!(target: crate::layer::IOCTL, "pasid {:#x}: {} ({user_size} bytes)", p.pasid, def.name);
    let result = dispatch(p, nr, def.name, &mut kbuf);
    match result {
        Ok(r) => {
            log::debug!(target: crate::layer::IOCTL, "pasid {:#x}: {} = {r}", p.pasid, def.name)
        }
        Err(e) if stops_a_runtime(nr, e) => report_startup_refusal(p, def.name, e),
        Err(e) => {
            log::debug!(target: crate::layer::IOCTL, "pasid {:#x}: {} = {e}", p.pasid, def.name)
        }
    }
    if dir & IOC_READ != 0 {
        arg[..user_size].copy_from_slice(&kbuf[..user_size]);
    }
    result
}

/// Whether a refusal of command `nr` ends a runtime's start: libhsakmt's `hsaKmtOpenKFD` and
/// ROCr's start give up when these fail (the interface version, the apertures, a GPU's VM,
/// its memory policy and trap handler, the runtime's registration). An interrupted wait is
/// no refusal.
fn stops_a_runtime(nr: u32, e: Errno) -> bool {
    let startup = matches!(
        nr,
        <GetVersion as Ioctl>::NR
            | <SetMemoryPolicy as Ioctl>::NR
            | <GetProcessApertures as Ioctl>::NR
            | <SetTrapHandler as Ioctl>::NR
            | <GetProcessAperturesNew as Ioctl>::NR
            | <AcquireVm as Ioctl>::NR
            | <RuntimeEnable as Ioctl>::NR
    );
    startup && e != Errno::ERESTARTSYS && e != Errno::EINTR
}

/// One warning line per process for the first refusal that stops a runtime (the details are
/// at debug level: `KFD_MODEL_LOG=kfd=debug`); later ones stay at debug level.
fn report_startup_refusal(p: &ProcessInner, name: &str, e: Errno) {
    use std::sync::atomic::Ordering;
    if p.startup_refusal_reported.swap(true, Ordering::Relaxed) {
        log::debug!(target: crate::layer::IOCTL, "pasid {:#x}: {name} = {e}", p.pasid);
    } else {
        log::warn!(target: crate::layer::IOCTL, "pasid {:#x}: {name} refused with {e}; a runtime cannot start without it (KFD_MODEL_LOG=kfd=debug says why)", p.pasid);
    }
}

/// Runs `f` on the argument of request `R` held at the start of `kbuf`, then stores it back.
/// The argument's type is `R`'s own ([`Ioctl::Arg`]), so a handler cannot be paired with the
/// wrong struct.
fn with<R: Ioctl>(kbuf: &mut [u8], f: impl FnOnce(&mut R::Arg) -> KResult<i32>) -> KResult<i32> {
    let (mut args, _) = R::Arg::read_from_prefix(kbuf).map_err(|_| Errno::EFAULT)?;
    let result = f(&mut args);
    let n = core::mem::size_of::<R::Arg>();
    kbuf[..n].copy_from_slice(args.as_bytes());
    result
}

fn not_modelled(p: &ProcessInner, what: &str) -> KResult<i32> {
    log::warn!(target: crate::layer::IOCTL, "pasid {:#x}: {what} is not modelled; returning EINVAL", p.pasid);
    Err(Errno::EINVAL)
}

/// The ioctl table: each arm names a kfd-sys request type once. `Request(a) => handler`
/// matches the request's command number and runs `handler` with `a`, the request's own
/// argument struct read from `kbuf` (and written back after); `Request => expr` matches the
/// number and reads nothing. A number listed twice is an unreachable pattern, which
/// `dispatch` denies.
macro_rules! ioctl_table {
    (
        match $nr:ident in $kbuf:ident {
            $( $req:ident $( ($a:ident) )? => $body:expr, )*
            _ => $default:expr $(,)?
        }
    ) => {
        match $nr {
            $( <$req as Ioctl>::NR => ioctl_table!(@arm $req, $kbuf $(, $a)? => $body), )*
            _ => $default,
        }
    };
    (@arm $req:ident, $kbuf:ident, $a:ident => $body:expr) => {
        with::<$req>($kbuf, |$a| $body)
    };
    (@arm $req:ident, $kbuf:ident => $body:expr) => {
        $body
    };
}

/// Runs command `nr`, whose kernel definition is named `name`, on the argument bytes `kbuf`.
#[deny(unreachable_patterns)]
fn dispatch(p: &ProcessInner, nr: u32, name: &str, kbuf: &mut [u8]) -> KResult<i32> {
    ioctl_table! {
        match nr in kbuf {
            GetVersion(a) => {
                a.major_version = KFD_IOCTL_MAJOR_VERSION;
                a.minor_version = p.model.config.kernel.interface_minor();
                Ok(0)
            },
            // The 88-byte form of 1.8 too: `kbuf` is this definition's size, zero-extended.
            CreateQueue(a) => crate::pqm::create_queue(p, a),
            DestroyQueue(a) => crate::pqm::destroy_queue(p, a.queue_id),
            SetMemoryPolicy(a) => set_memory_policy(p, a),
            GetClockCounters(a) => get_clock_counters(p, a),
            GetProcessApertures(a) => get_process_apertures(p, a),
            UpdateQueue(a) => crate::pqm::update_queue(p, a),
            CreateEvent(a) => create_event(p, a),
            DestroyEvent(a) => p.events.destroy(a.event_id).map(|_| 0),
            SetEvent(a) => p.events.set(a.event_id).map(|_| 0),
            ResetEvent(a) => p.events.reset(a.event_id).map(|_| 0),
            WaitEvents(a) => wait_events(p, a),
            // The old debugger interface: the handlers are stubs returning -EPERM.
            DbgRegisterDeprecated => Err(Errno::EPERM),
            DbgUnregisterDeprecated => Err(Errno::EPERM),
            DbgAddressWatchDeprecated => Err(Errno::EPERM),
            DbgWaveControlDeprecated => Err(Errno::EPERM),
            SetScratchBackingVa(a) => set_scratch_backing_va(p, a),
            GetTileConfig(a) => get_tile_config(p, a),
            SetTrapHandler(a) => set_trap_handler(p, a),
            GetProcessAperturesNew(a) => get_process_apertures_new(p, a),
            AcquireVm(a) => acquire_vm(p, a),
            AllocMemoryOfGpu(a) => alloc_memory(p, a),
            FreeMemoryOfGpu(a) => free_memory(p, a),
            MapMemoryToGpu(a) => map_memory(
                p,
                a.handle,
                a.device_ids_array_ptr,
                a.n_devices,
                &mut a.n_success,
                true,
            ),
            UnmapMemoryFromGpu(a) => map_memory(
                p,
                a.handle,
                a.device_ids_array_ptr,
                a.n_devices,
                &mut a.n_success,
                false,
            ),
            SetCuMask(a) => crate::pqm::set_cu_mask(p, a),
            GetQueueWaveState(a) => crate::pqm::get_wave_state(p, a),
            GetDmabufInfo(a) => get_dmabuf_info(p, a),
            ImportDmabuf(a) => import_dmabuf(p, a),
            AllocQueueGws(a) => crate::pqm::alloc_gws(p, a),
            SmiEvents(a) => crate::smi::open(p, a),
            // The header is followed by `nattr` attributes: the handler reads all of `kbuf`.
            Svm => crate::svm::ioctl(p, kbuf),
            SetXnackMode(a) => set_xnack_mode(p, a),
            CriuOp => not_modelled(p, name),
            AvailableMemory(a) => available_memory(p, a),
            ExportDmabuf => not_modelled(p, name),
            RuntimeEnable(a) => runtime_enable(p, a),
            DbgTrap(a) => dbg_trap(p, a),
            IpcImportHandle => not_modelled(p, name),
            IpcExportHandle => not_modelled(p, name),
            DkmsDbgTrap(a) => dkms_dbg_trap(p, a),
            CrossMemoryCopy => not_modelled(p, name),
            RlcSpm => not_modelled(p, name),
            _ => Err(Errno::ENOTTY),
        }
    }
}

fn available_memory(p: &ProcessInner, a: &mut kfd_ioctl_get_available_memory_args) -> KResult<i32> {
    let st = p.lock();
    let i = st.pdd_index(a.gpu_id)?;
    a.available = st.pdds[i].node.vram_available();
    Ok(0)
}

/// The DKMS generation's `DBG_TRAP` ([`v1_8::AMDKFD_IOC_DBG_TRAP`]): its version query, its
/// way to RUNTIME_ENABLE (upstream a command of its own: data1 enables, data2 asks for TTMP
/// save, ptr is r_debug), and otherwise a debugger operation on a target.
fn dkms_dbg_trap(p: &ProcessInner, a: &mut v1_8::kfd_ioctl_dbg_trap_args) -> KResult<i32> {
    if a.op == v1_8::KFD_IOC_DBG_TRAP_GET_VERSION {
        a.data1 = v1_8::KFD_IOCTL_DBG_MAJOR_VERSION;
        a.data2 = v1_8::KFD_IOCTL_DBG_MINOR_VERSION;
        Ok(0)
    } else if a.op == v1_8::KFD_IOC_DBG_TRAP_RUNTIME_ENABLE && a.pid == p.owner_pid {
        let mut mode_mask = 0;
        if a.data1 != 0 {
            mode_mask |= KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK;
            if a.data2 != 0 {
                mode_mask |= KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK;
            }
        }
        let mut r = kfd_ioctl_runtime_enable_args {
            r_debug: a.ptr,
            mode_mask,
            capabilities_mask: 0,
        };
        runtime_enable(p, &mut r)
    } else {
        dbg_trap_target(p, a.pid)
    }
}

/// Debugger operations need the target ptrace-attached, which nothing in the model is.
fn dbg_trap_target(p: &ProcessInner, pid: u32) -> KResult<i32> {
    if pid == p.owner_pid {
        Err(Errno::EPERM)
    } else {
        Err(Errno::ESRCH)
    }
}

fn set_memory_policy(p: &ProcessInner, a: &mut kfd_ioctl_set_memory_policy_args) -> KResult<i32> {
    let ok = |v| v == KFD_IOC_CACHE_POLICY_COHERENT || v == KFD_IOC_CACHE_POLICY_NONCOHERENT;
    if !ok(a.default_policy) || !ok(a.alternate_policy) {
        return Err(Errno::EINVAL);
    }
    let mut st = p.lock();
    let i = st.pdd_index(a.gpu_id)?;
    let pdd = &mut st.pdds[i];
    pdd.bind().map_err(|_| Errno::ESRCH)?;
    pdd.default_policy = a.default_policy;
    pdd.alternate_policy = a.alternate_policy;
    Ok(0)
}

fn get_clock_counters(p: &ProcessInner, a: &mut kfd_ioctl_get_clock_counters_args) -> KResult<i32> {
    a.gpu_clock_counter = p
        .model
        .node_by_gpu_id(a.gpu_id)
        .map_or(0, |n| n.gpu.clock.now());
    a.cpu_clock_counter = crate::hw::clock::cpu_clock_ns();
    a.system_clock_counter = crate::hw::clock::system_clock_ns();
    a.system_clock_freq = 1_000_000_000;
    Ok(0)
}

fn get_process_apertures(
    p: &ProcessInner,
    a: &mut kfd_ioctl_get_process_apertures_args,
) -> KResult<i32> {
    let st = p.lock();
    let n = st.pdds.len().min(NUM_OF_SUPPORTED_GPUS as usize);
    for (slot, pdd) in a.process_apertures.iter_mut().zip(&st.pdds) {
        *slot = pdd.apertures();
    }
    a.num_of_nodes = n as u32;
    Ok(0)
}

fn get_process_apertures_new(
    p: &ProcessInner,
    a: &mut kfd_ioctl_get_process_apertures_new_args,
) -> KResult<i32> {
    let st = p.lock();
    if a.num_of_nodes == 0 {
        a.num_of_nodes = st.pdds.len() as u32;
        return Ok(0);
    }
    let n = st.pdds.len().min(a.num_of_nodes as usize);
    let list: Vec<kfd_process_device_apertures> =
        st.pdds[..n].iter().map(|d| d.apertures()).collect();
    p.user
        .write_array(a.kfd_process_device_apertures_ptr, &list)?;
    a.num_of_nodes = n as u32;
    Ok(0)
}

fn create_event(p: &ProcessInner, a: &mut kfd_ioctl_create_event_args) -> KResult<i32> {
    if a.event_page_offset != 0 {
        // dGPU: the first call names a user buffer to be the event page.
        let handle = a.event_page_offset;
        let mut st = p.lock();
        let i = st.pdd_index(handle_gpu_id(handle))?;
        st.pdds[i].bind()?;
        let bo = st
            .bos
            .get(&handle)
            .map(|e| e.bo.clone())
            .ok_or(Errno::EINVAL)?;
        drop(st);
        let (mem, offset) = bo.device_memory().ok_or(Errno::EINVAL)?;
        p.events.set_user_page(mem, offset, bo.size as usize)?;
    }
    let (id, trigger, offset, slot) = p.events.create(a.event_type, a.auto_reset != 0)?;
    a.event_id = id;
    a.event_trigger_data = trigger;
    a.event_page_offset = offset;
    a.event_slot_index = slot;
    Ok(0)
}

fn wait_events(p: &ProcessInner, a: &mut kfd_ioctl_wait_events_args) -> KResult<i32> {
    match p.events.wait(
        p.user.as_ref(),
        a.events_ptr,
        a.num_events,
        a.wait_for_all != 0,
        a.timeout,
    ) {
        Ok(WaitResult::Complete) => {
            a.wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
            Ok(0)
        }
        Ok(WaitResult::Timeout) => {
            a.wait_result = KFD_IOC_WAIT_RESULT_TIMEOUT;
            Ok(0)
        }
        Err(e) => {
            a.wait_result = KFD_IOC_WAIT_RESULT_FAIL;
            Err(e)
        }
    }
}

/// `SET_SCRATCH_BACKING_VA`: amdkfd binds the process and keeps the address
/// (`qpd.sh_hidden_private_base`). Only GFX7/GFX8 ever program it into
/// SH_HIDDEN_PRIVATE_BASE_VMID (without the HWS, through `kfd2kgd->set_scratch_backing_va`,
/// which the GFX9 interface does not have), and the GFX9 MAP_PROCESS packet has no field for
/// it: on the modelled parts a PM4 dispatch's scratch comes from
/// COMPUTE_DISPATCH_SCRATCH_BASE and COMPUTE_TMPRING_SIZE alone, and this address is stored
/// and reported, never used.
fn set_scratch_backing_va(
    p: &ProcessInner,
    a: &mut kfd_ioctl_set_scratch_backing_va_args,
) -> KResult<i32> {
    let mut st = p.lock();
    let i = st.pdd_index(a.gpu_id)?;
    st.pdds[i].bind()?;
    st.pdds[i].scratch_va = a.va_addr;
    Ok(0)
}

/// `GB_ADDR_CONFIG` the modelled parts report.
const GB_ADDR_CONFIG: u32 = 0x2A11_4042;

fn get_tile_config(p: &ProcessInner, a: &mut kfd_ioctl_get_tile_config_args) -> KResult<i32> {
    let st = p.lock();
    st.pdd_index(a.gpu_id)?;
    drop(st);
    a.gb_addr_config = GB_ADDR_CONFIG;
    a.num_banks = 0;
    a.num_ranks = 0;
    // gfx9 and later have no tiling tables: all entries are zero.
    let tiles = a.num_tile_configs.min(32) as usize;
    let macros = a.num_macro_tile_configs.min(16) as usize;
    p.user.write_array(a.tile_config_ptr, &vec![0u32; tiles])?;
    p.user
        .write_array(a.macro_tile_config_ptr, &vec![0u32; macros])?;
    a.num_tile_configs = tiles as u32;
    a.num_macro_tile_configs = macros as u32;
    Ok(0)
}

fn set_trap_handler(p: &ProcessInner, a: &mut kfd_ioctl_set_trap_handler_args) -> KResult<i32> {
    let mut st = p.lock();
    let i = st.pdd_index(a.gpu_id)?;
    st.pdds[i].bind().map_err(|_| Errno::ESRCH)?;
    st.pdds[i].set_trap_handler(a.tba_addr, a.tma_addr)?;
    Ok(0)
}

fn acquire_vm(p: &ProcessInner, a: &mut kfd_ioctl_acquire_vm_args) -> KResult<i32> {
    let mut st = p.lock();
    let i = st.pdd_index(a.gpu_id)?;
    let (file, gpu) = render_file(&p.model, a.drm_fd as i32).ok_or(Errno::EINVAL)?;
    if gpu != a.gpu_id {
        return Err(Errno::EINVAL);
    }
    let pdd = &mut st.pdds[i];
    if let Some(existing) = pdd.drm_file {
        return if existing == file {
            Ok(0)
        } else {
            Err(Errno::EBUSY)
        };
    }
    if p.model.config.cwsr_enable {
        pdd.init_cwsr()?;
    }
    pdd.drm_file = Some(file);
    pdd.pd_base = pdd.node.gpu.register_vm(pdd.vm.clone());
    log::debug!(target: crate::layer::PROCESS, "pasid {:#x}: VM of gpu {:#x} acquired, PD base {:#x}", p.pasid, a.gpu_id, pdd.pd_base);
    Ok(0)
}

fn alloc_memory(p: &ProcessInner, a: &mut kfd_ioctl_alloc_memory_of_gpu_args) -> KResult<i32> {
    let mut st = p.lock();
    // A buffer may not take pages an SVM range holds (`EADDRINUSE`, before any other check
    // but the size).
    if a.size != 0 {
        crate::svm::reap_cpu_unmapped(p, &mut st);
        let first = a.va_addr & !(PAGE_SIZE as u64 - 1);
        let end = a.va_addr.saturating_add(a.size);
        if st.svm.overlaps(first, end) {
            log::debug!(target: crate::layer::MEMORY, "va {:#x}+{:#x} is held by an SVM range", a.va_addr, a.size);
            return Err(Errno::EADDRINUSE);
        }
    }
    let i = st.pdd_index(a.gpu_id)?;
    let pdd = &mut st.pdds[i];
    pdd.bind()?;
    let slice = if a.flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL != 0 {
        Some(pdd.doorbell_slice()?)
    } else {
        None
    };
    let handle = pdd.alloc_handle();
    let req = AllocRequest {
        va: a.va_addr,
        size: a.size,
        flags: a.flags,
        user_addr: a.mmap_offset,
    };
    let bo = match alloc_bo(&pdd.node, handle, req, slice, &p.model.mem_limit) {
        Ok(bo) => bo,
        Err(e) => {
            pdd.free_handle(handle);
            return Err(e);
        }
    };
    a.handle = handle;
    a.mmap_offset = bo.mmap_offset;
    st.bos.insert(
        handle,
        BoEntry {
            bo,
            mapped_on: Default::default(),
        },
    );
    Ok(0)
}

/// `kfd_ioctl_get_dmabuf_info`: size, GPU, KFD memory flags and the user-mode metadata
/// (`GEM_METADATA`) of an amdgpu dma-buf. `metadata_size` says the room at `metadata_ptr`
/// and comes back as the metadata's size; with a pointer, less room than the metadata is
/// `EINVAL` (`amdgpu_bo_get_metadata`), and the bytes are copied there; without one only the
/// size comes back.
fn get_dmabuf_info(p: &ProcessInner, a: &mut kfd_ioctl_get_dmabuf_info_args) -> KResult<i32> {
    let gem = p.model.dmabufs.lookup(a.dmabuf_fd as i32)?;
    let bo = &gem.bo;
    a.size = bo.size;
    a.gpu_id = bo.node.gpu_id;
    // amdgpu_amdkfd_get_dmabuf_info: VRAM when that is the preferred domain, else GTT; PUBLIC
    // when the CPU must reach it.
    a.flags = if gem.placement().preferred_domains & kfd_sys::drm::AMDGPU_GEM_DOMAIN_VRAM != 0 {
        KFD_IOC_ALLOC_MEM_FLAGS_VRAM
    } else {
        KFD_IOC_ALLOC_MEM_FLAGS_GTT
    };
    if gem.flags & kfd_sys::drm::AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED != 0 {
        a.flags |= KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
    }
    let metadata = gem.metadata().data;
    if a.metadata_ptr != 0 {
        if (a.metadata_size as usize) < metadata.len() {
            return Err(Errno::EINVAL);
        }
        p.user.write(a.metadata_ptr, &metadata)?;
    }
    a.metadata_size = metadata.len() as u32;
    log::debug!(target: crate::layer::MEMORY, "pasid {:#x}: dma-buf fd {}: {:#x} bytes on gpu {:#x}, flags {:#x}, {} bytes of metadata", p.pasid, a.dmabuf_fd, a.size, a.gpu_id, a.flags, a.metadata_size);
    Ok(0)
}

/// `kfd_ioctl_import_dmabuf`: a KFD buffer handle at `va_addr` for the GEM object behind an
/// amdgpu dma-buf; MAP_MEMORY_TO_GPU then maps it like any buffer.
fn import_dmabuf(p: &ProcessInner, a: &mut kfd_ioctl_import_dmabuf_args) -> KResult<i32> {
    let mut st = p.lock();
    let i = st.pdd_index(a.gpu_id)?;
    let pdd = &mut st.pdds[i];
    pdd.bind()?;
    let gem = p.model.dmabufs.lookup(a.dmabuf_fd as i32)?;
    let handle = pdd.alloc_handle();
    let bo = match crate::memory::import_bo(&pdd.node, handle, a.va_addr, gem) {
        Ok(bo) => bo,
        Err(e) => {
            pdd.free_handle(handle);
            return Err(e);
        }
    };
    log::debug!(target: crate::layer::MEMORY, "pasid {:#x}: dma-buf fd {} imported at va {:#x} ({:#x} bytes), handle {handle:#x}", p.pasid, a.dmabuf_fd, a.va_addr, bo.size);
    a.handle = handle;
    st.bos.insert(
        handle,
        BoEntry {
            bo,
            mapped_on: Default::default(),
        },
    );
    Ok(0)
}

fn free_memory(p: &ProcessInner, a: &mut kfd_ioctl_free_memory_of_gpu_args) -> KResult<i32> {
    let mut st = p.lock();
    let i = st.pdd_index(handle_gpu_id(a.handle))?;
    let entry = st.bos.get(&a.handle).ok_or(Errno::EINVAL)?;
    if p.events.page().is_some_and(|pg| {
        entry
            .bo
            .device_memory()
            .is_some_and(|(m, off)| std::sync::Arc::ptr_eq(&m, &pg.mem) && off == pg.offset)
            && !pg.kernel_allocated
    }) {
        log::debug!(target: crate::layer::MEMORY, "freeing the signal event page is not allowed");
        return Err(Errno::EPERM);
    }
    if !entry.mapped_on.is_empty() {
        return Err(Errno::EBUSY);
    }
    st.bos.remove(&a.handle);
    st.pdds[i].free_handle(a.handle);
    Ok(0)
}

/// `amdgpu_vm_bo_map`'s checks of a buffer's GPU VA: not 0, page aligned, inside the 48-bit
/// GPU address space. The kernel takes any VA at ALLOC and refuses a bad one here.
fn gpu_va_ok(va: u64, size: u64) -> bool {
    const GPU_VA_END: u64 = 1 << 48;
    va != 0
        && va % PAGE_SIZE as u64 == 0
        && va.checked_add(size).is_some_and(|end| end <= GPU_VA_END)
}

fn map_memory(
    p: &ProcessInner,
    handle: u64,
    ids_ptr: u64,
    n_devices: u32,
    n_success: &mut u32,
    map: bool,
) -> KResult<i32> {
    if n_devices == 0 || *n_success > n_devices {
        return Err(Errno::EINVAL);
    }
    let ids: Vec<u32> = p.user.read_array(ids_ptr, n_devices as usize)?;
    let mut st = p.lock();
    let owner = st.pdd_index(handle_gpu_id(handle))?;
    if map {
        st.pdds[owner].bind()?;
    }
    // An unknown handle is ENOMEM in both directions (the kernel's choice).
    let bo = st
        .bos
        .get(&handle)
        .map(|e| e.bo.clone())
        .ok_or(Errno::ENOMEM)?;
    let queues_pin_buffers = p.model.config.kernel == KernelVersion::Linux6_12;
    for (i, &gpu_id) in ids.iter().enumerate().skip(*n_success as usize) {
        let ProcessState { pdds, bos, pqm, .. } = &mut *st;
        let d = pdds
            .iter()
            .position(|x| x.node.gpu_id == gpu_id)
            .ok_or(Errno::EINVAL)?;
        let entry = bos.get_mut(&handle).ok_or(Errno::ENOMEM)?;
        if map {
            pdds[d].bind()?;
            let mut vm = pdds[d].vm.write().unwrap_or_else(|e| e.into_inner());
            if !entry.mapped_on.contains(&d) {
                if !gpu_va_ok(bo.va, bo.size) {
                    log::debug!(target: crate::layer::MEMORY, "va {:#x}+{:#x} is not a valid GPU VA range", bo.va, bo.size);
                    return Err(Errno::EINVAL);
                }
                if !vm.map(bo.vm_mapping()) {
                    log::debug!(target: crate::layer::MEMORY, "va {:#x}+{:#x} overlaps a mapping on gpu {gpu_id:#x}", bo.va, bo.size);
                    return Err(Errno::EINVAL);
                }
                entry.mapped_on.insert(d);
            }
        } else {
            if !entry.mapped_on.contains(&d) {
                log::debug!(target: crate::layer::MEMORY, "buffer {handle:#x} is not mapped on gpu {gpu_id:#x}");
                return Err(Errno::EINVAL);
            }
            // Linux 6.12 keeps a queue's buffers mapped while the queue lives.
            if queues_pin_buffers && pqm.holds(handle, d) {
                log::debug!(target: crate::layer::MEMORY, "buffer {handle:#x} is in use by a queue on gpu {gpu_id:#x}");
                return Err(Errno::EBUSY);
            }
            entry.mapped_on.remove(&d);
            pdds[d]
                .vm
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .unmap(bo.va);
        }
        *n_success = i as u32 + 1;
    }
    Ok(0)
}

fn set_xnack_mode(p: &ProcessInner, a: &mut kfd_ioctl_set_xnack_mode_args) -> KResult<i32> {
    let mut st = p.lock();
    if a.xnack_enabled >= 0 {
        // The kernel refuses any set, even to the current mode, while queues exist.
        if !st.pqm.is_empty() {
            return Err(Errno::EBUSY);
        }
        let want = a.xnack_enabled > 0;
        if want != st.xnack_enabled {
            if want && !st.pdds.iter().all(|d| d.node.supports_xnack()) {
                return Err(Errno::EPERM);
            }
            // SVM memory counts against the system-memory limit only with XNACK off.
            crate::svm::switch_xnack_reserve_mem(p, &mut st, want)?;
            // The mapping policy differs per mode (XNACK on maps lazily).
            crate::svm::sync_gpu_mappings(&st);
        }
    }
    a.xnack_enabled = i32::from(st.xnack_enabled);
    Ok(0)
}

/// `kfd_ioctl_runtime_enable`: the runtime registers (its `r_debug` address, whether the
/// trap temporaries are set up at wave launch) or deregisters. Enabling twice is `EBUSY`,
/// enabling with queues already created `EEXIST`; disabling always succeeds. The kernel
/// writes nothing back (`capabilities_mask` returns as it came). A process whose debug trap
/// is enabled would wait here for its debugger's answer; no process of the model is
/// debug-enabled (see [`dbg_trap`]).
fn runtime_enable(p: &ProcessInner, a: &mut kfd_ioctl_runtime_enable_args) -> KResult<i32> {
    let mut st = p.lock();
    if a.mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK != 0 {
        if st.runtime.enabled {
            return Err(Errno::EBUSY);
        }
        if !st.pqm.is_empty() {
            return Err(Errno::EEXIST);
        }
        st.runtime = RuntimeInfo {
            enabled: true,
            r_debug: a.r_debug,
            ttmp_setup: a.mode_mask & KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK != 0,
        };
        log::debug!(target: crate::layer::IOCTL, "pasid {:#x}: runtime enabled, r_debug {:#x}, ttmp setup {}", p.pasid, a.r_debug, st.runtime.ttmp_setup);
    } else {
        st.runtime = RuntimeInfo::default();
    }
    Ok(0)
}

/// `kfd_ioctl_set_debug_trap` as far as the model goes: each process has a model of its
/// own, so no other process is known (`ESRCH`, as for a pid with no KFD process); a process
/// may enable debugging of itself, which the model does not (a warning and `EINVAL`); any
/// other operation on a process that is not debug-enabled is `EINVAL`.
fn dbg_trap(p: &ProcessInner, a: &kfd_ioctl_dbg_trap_args) -> KResult<i32> {
    if a.pid != p.owner_pid {
        return Err(Errno::ESRCH);
    }
    if a.op == KFD_IOC_DBG_TRAP_ENABLE {
        let what = format!("{} enable (the debugger interface)", DbgTrap::NAME);
        return not_modelled(p, &what);
    }
    log::debug!(target: crate::layer::IOCTL, "pasid {:#x}: debug trap op {} on a process that is not debug-enabled", p.pasid, a.op);
    Err(Errno::EINVAL)
}

/// Entry point for `mmap(kfd_fd, offset, len)`. The type comes from offset bits [63:62];
/// doorbell, reserved-memory and MMIO need a known GPU id (else `ENODEV`), so offset 0 (MMIO
/// type, GPU id 0) is `ENODEV`.
pub(crate) fn mmap(p: &ProcessInner, offset: u64, len: u64) -> KResult<MapSource> {
    let o = KfdMmapOffset::decode(offset);
    match o.kind {
        KfdMmapType::Events => {
            let (memory, off) = p.events.mmap_page(len)?;
            Ok(MapSource {
                memory,
                offset: off,
                len,
            })
        }
        kind => {
            let mut st = p.lock();
            let i = st.pdd_index(o.gpu_id).map_err(|_| Errno::ENODEV)?;
            let pdd = &mut st.pdds[i];
            match kind {
                KfdMmapType::Doorbell => {
                    if len != KFD_DOORBELL_PROCESS_SLICE_SIZE_SOC15 {
                        return Err(Errno::EINVAL);
                    }
                    let slice = pdd.doorbell_slice()?;
                    let memory = pdd.node.gpu.doorbells.memory().clone();
                    let off = crate::hw::doorbell::DoorbellBar::slice_offset(slice) as u64;
                    Ok(MapSource {
                        memory,
                        offset: off,
                        len,
                    })
                }
                KfdMmapType::Mmio => {
                    if len != PAGE_SIZE as u64 {
                        return Err(Errno::EINVAL);
                    }
                    Ok(MapSource {
                        memory: pdd.node.gpu.mmio.clone(),
                        offset: 0,
                        len,
                    })
                }
                // `kfd_reserved_mem_mmap`: two fresh zeroed pages for the CWSR trap handler
                // (TBA/TMA), which user mode fills.
                KfdMmapType::ReservedMem => {
                    if len != crate::dqm::CWSR_TBA_TMA_SIZE {
                        return Err(Errno::EINVAL);
                    }
                    let memory = crate::hw::mem::DeviceMemory::new("cwsr tba/tma", len)
                        .map_err(|_| Errno::ENOMEM)?;
                    Ok(MapSource {
                        memory: std::sync::Arc::new(memory),
                        offset: 0,
                        len,
                    })
                }
                // Handled before the GPU lookup.
                KfdMmapType::Events => Err(Errno::EINVAL),
            }
        }
    }
}
