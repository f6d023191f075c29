//! ioctl request codes: the Linux `_IOC` encoding, its decoding, and every `AMDKFD_IOC_*` code
//! of the current interface generation (1.18), with a descriptor table.
//!
//! A request code packs `dir[31:30] | size[29:16] | type[15:8] | nr[7:0]` (asm-generic layout,
//! which x86-64 uses). amdkfd's dispatcher looks commands up **by `nr` only** and takes the
//! argument size from the code itself; that is why an old 88-byte `CREATE_QUEUE`
//! ([`crate::v1_8::AMDKFD_IOC_CREATE_QUEUE`]) still works on a 1.17+ kernel.

use crate::args::*;
use crate::debug::*;
use crate::layout::{AbiLayout, StructLayout};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `_IOC_NONE`: no data transfer.
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE`: user space writes the argument (the kernel copies it in).
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: user space reads the argument (the kernel copies it out).
pub const IOC_READ: u32 = 2;

const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = 8;
const IOC_SIZESHIFT: u32 = 16;
const IOC_DIRSHIFT: u32 = 30;
const IOC_SIZEMASK: u32 = (1 << 14) - 1;

/// The ioctl "type" (magic) byte of amdkfd: `'K'`.
pub const AMDKFD_IOCTL_BASE: u32 = b'K' as u32;

/// `_IOC(dir, type, nr, size)`.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    (dir << IOC_DIRSHIFT)
        | (ty << IOC_TYPESHIFT)
        | (nr << IOC_NRSHIFT)
        | (((size as u32) & IOC_SIZEMASK) << IOC_SIZESHIFT)
}

/// `AMDKFD_IO(nr)`: an amdkfd command without argument.
pub const fn io(nr: u32) -> u32 {
    ioc(IOC_NONE, AMDKFD_IOCTL_BASE, nr, 0)
}

/// `AMDKFD_IOR(nr, T)`: the kernel writes a `T` back to user space.
pub const fn ior<T>(nr: u32) -> u32 {
    ioc(IOC_READ, AMDKFD_IOCTL_BASE, nr, core::mem::size_of::<T>())
}

/// `AMDKFD_IOW(nr, T)`: the kernel reads a `T` from user space.
pub const fn iow<T>(nr: u32) -> u32 {
    ioc(IOC_WRITE, AMDKFD_IOCTL_BASE, nr, core::mem::size_of::<T>())
}

/// `AMDKFD_IOWR(nr, T)`: a `T` is copied in and back out.
pub const fn iowr<T>(nr: u32) -> u32 {
    ioc(
        IOC_READ | IOC_WRITE,
        AMDKFD_IOCTL_BASE,
        nr,
        core::mem::size_of::<T>(),
    )
}

/// `_IOC_NR(cmd)`: the command number, what amdkfd dispatches on.
pub const fn ioc_nr(cmd: u32) -> u32 {
    (cmd >> IOC_NRSHIFT) & 0xFF
}

/// `_IOC_TYPE(cmd)`: the magic byte (`'K'` for amdkfd).
pub const fn ioc_type(cmd: u32) -> u32 {
    (cmd >> IOC_TYPESHIFT) & 0xFF
}

/// `_IOC_SIZE(cmd)`: the argument size in bytes encoded in the code.
pub const fn ioc_size(cmd: u32) -> usize {
    ((cmd >> IOC_SIZESHIFT) & IOC_SIZEMASK) as usize
}

/// `_IOC_DIR(cmd)`: a combination of [`IOC_READ`] and [`IOC_WRITE`].
pub const fn ioc_dir(cmd: u32) -> u32 {
    cmd >> IOC_DIRSHIFT
}

/// `cmd` with its argument size replaced by `size` bytes: the code of a request whose argument
/// is a fixed header followed by a variable part (`AMDKFD_IOC_SVM` and its attributes, as
/// libhsakmt sends it). `None` when `size` does not fit the 14-bit size field.
pub const fn with_size(cmd: u32, size: usize) -> Option<u32> {
    if size > IOC_SIZEMASK as usize {
        return None;
    }
    Some((cmd & !(IOC_SIZEMASK << IOC_SIZESHIFT)) | ((size as u32) << IOC_SIZESHIFT))
}

/// One ioctl of a generation's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoctlDesc {
    /// The C macro name, e.g. `AMDKFD_IOC_CREATE_QUEUE`.
    pub name: &'static str,
    /// The full request code.
    pub request: u32,
    /// Layout of the argument struct.
    pub arg: StructLayout,
    /// Safe code may issue it (see [`SafeIoctl`]).
    pub safe: bool,
}

impl IoctlDesc {
    /// The command number (`_IOC_NR`).
    pub const fn nr(&self) -> u32 {
        ioc_nr(self.request)
    }

    /// The argument size encoded in the request code.
    pub const fn size(&self) -> usize {
        ioc_size(self.request)
    }

    /// The direction bits (`_IOC_DIR`).
    pub const fn dir(&self) -> u32 {
        ioc_dir(self.request)
    }

    /// `"IOR"`, `"IOW"`, `"IOWR"` or `"IO"`, as the header spells the macro.
    pub const fn dir_name(&self) -> &'static str {
        match self.dir() {
            IOC_READ => "IOR",
            IOC_WRITE => "IOW",
            3 => "IOWR",
            _ => "IO",
        }
    }
}

/// An ioctl as a type: its request code and its argument type, declared together by the one
/// table that defines the code, so a typed call cannot pair a code with the wrong struct.
///
/// Every request of [`AMDKFD_IOCTLS`] has one (`GetVersion` for [`AMDKFD_IOC_GET_VERSION`], …),
/// an uninhabited enum used only as a type argument: `kfd.ioctl::<GetVersion>(&mut args)`.
pub trait Ioctl {
    /// The C macro name, e.g. `AMDKFD_IOC_GET_VERSION`.
    const NAME: &'static str;
    /// The full request code; its size field is the size of [`Ioctl::Arg`].
    const REQUEST: u32;
    /// The command number (`_IOC_NR` of [`Ioctl::REQUEST`]), what amdkfd dispatches on; a
    /// constant, so a driver's dispatcher can match on `<CreateQueue as Ioctl>::NR`.
    const NR: u32 = ioc_nr(Self::REQUEST);
    /// Whether the request is a [`SafeIoctl`].
    const SAFE: bool;
    /// The argument struct.
    type Arg: FromBytes + IntoBytes + KnownLayout + Immutable + AbiLayout;
}

/// The ioctls that safe code may issue: whatever the argument holds, the call cannot make the
/// kernel or the GPU write memory of the process that was not already given to the GPU.
///
/// Their arguments carry ids, handles, flags, sizes, values copied in and out, GPU virtual
/// addresses (the GPU reaches those only through its own page tables, that is, only memory
/// already handed to it — as any packet it executes may), and at most pointers the kernel only
/// *reads* with `copy_from_user` (a bad one is `EFAULT`).
///
/// The others are `unsafe` to issue: `ALLOC_MEMORY_OF_GPU` (a `USERPTR` buffer hands process
/// memory to the GPU), `SVM` (the same for ranges), `WAIT_EVENTS`, `GET_PROCESS_APERTURES_NEW`,
/// `GET_TILE_CONFIG`, `GET_QUEUE_WAVE_STATE` and `GET_DMABUF_INFO` (the kernel writes an
/// output array at a user address), `CRIU_OP`, `RUNTIME_ENABLE`, `DBG_TRAP` and the DKMS
/// `CROSS_MEMORY_COPY` and `RLC_SPM`. Their callers promise that those addresses are memory
/// they own for the call's effects and their lifetime.
pub trait SafeIoctl: Ioctl {}

/// The descriptor whose number is `nr` in `table`, as amdkfd's dispatcher finds it.
pub fn find_by_nr(table: &'static [IoctlDesc], nr: u32) -> Option<&'static IoctlDesc> {
    table.iter().find(|d| d.nr() == nr)
}

/// First command number of the amdkfd table.
pub const AMDKFD_COMMAND_START: u32 = 0x01;
/// One past the last command number of interface 1.18 (`DBG_TRAP` is 0x26).
pub const AMDKFD_COMMAND_END: u32 = 0x27;

ioctl_table! {
    /// Every ioctl of interface 1.18 in command-number order.
    pub const AMDKFD_IOCTLS = {
        define {
            /// Query the interface version (major 1).
            AMDKFD_IOC_GET_VERSION = ior(0x01, kfd_ioctl_get_version_args) as GetVersion: Safe;
            /// Create a user queue (96-byte argument since 1.17).
            AMDKFD_IOC_CREATE_QUEUE = iowr(0x02, kfd_ioctl_create_queue_args) as CreateQueue: Safe;
            /// Destroy a user queue.
            AMDKFD_IOC_DESTROY_QUEUE = iowr(0x03, kfd_ioctl_destroy_queue_args) as DestroyQueue: Safe;
            /// Set the default and alternate cache policy of the process apertures.
            AMDKFD_IOC_SET_MEMORY_POLICY = iow(0x04, kfd_ioctl_set_memory_policy_args) as SetMemoryPolicy: Safe;
            /// Read GPU, CPU and system clock counters.
            AMDKFD_IOC_GET_CLOCK_COUNTERS = iowr(0x05, kfd_ioctl_get_clock_counters_args) as GetClockCounters: Safe;
            /// Deprecated fixed-size (7 GPUs) aperture query.
            AMDKFD_IOC_GET_PROCESS_APERTURES = ior(0x06, kfd_ioctl_get_process_apertures_args) as GetProcessApertures: Safe;
            /// Change ring address/size, percentage or priority of a queue.
            AMDKFD_IOC_UPDATE_QUEUE = iow(0x07, kfd_ioctl_update_queue_args) as UpdateQueue: Safe;
            /// Create an event (signal, exception, …).
            AMDKFD_IOC_CREATE_EVENT = iowr(0x08, kfd_ioctl_create_event_args) as CreateEvent: Safe;
            /// Destroy an event.
            AMDKFD_IOC_DESTROY_EVENT = iow(0x09, kfd_ioctl_destroy_event_args) as DestroyEvent: Safe;
            /// Signal an event from the CPU.
            AMDKFD_IOC_SET_EVENT = iow(0x0A, kfd_ioctl_set_event_args) as SetEvent: Safe;
            /// Clear an event's signalled state.
            AMDKFD_IOC_RESET_EVENT = iow(0x0B, kfd_ioctl_reset_event_args) as ResetEvent: Safe;
            /// Wait for any or all of a list of events.
            AMDKFD_IOC_WAIT_EVENTS = iowr(0x0C, kfd_ioctl_wait_events_args) as WaitEvents: Unsafe;
            /// Old debugger API: returns `-EPERM` on current kernels.
            AMDKFD_IOC_DBG_REGISTER_DEPRECATED = iow(0x0D, kfd_ioctl_dbg_register_args) as DbgRegisterDeprecated: Safe;
            /// Old debugger API: returns `-EPERM` on current kernels.
            AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED = iow(0x0E, kfd_ioctl_dbg_unregister_args) as DbgUnregisterDeprecated: Safe;
            /// Old debugger API: returns `-EPERM` on current kernels.
            AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED = iow(0x0F, kfd_ioctl_dbg_address_watch_args) as DbgAddressWatchDeprecated: Unsafe;
            /// Old debugger API: returns `-EPERM` on current kernels.
            AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED = iow(0x10, kfd_ioctl_dbg_wave_control_args) as DbgWaveControlDeprecated: Unsafe;
            /// Give the kernel the scratch backing VA (pre-gfx9 style).
            AMDKFD_IOC_SET_SCRATCH_BACKING_VA = iowr(0x11, kfd_ioctl_set_scratch_backing_va_args) as SetScratchBackingVa: Safe;
            /// Read the GPU tiling configuration.
            AMDKFD_IOC_GET_TILE_CONFIG = iowr(0x12, kfd_ioctl_get_tile_config_args) as GetTileConfig: Unsafe;
            /// Install the trap handler (TBA/TMA).
            AMDKFD_IOC_SET_TRAP_HANDLER = iow(0x13, kfd_ioctl_set_trap_handler_args) as SetTrapHandler: Safe;
            /// Aperture query for any number of GPUs.
            AMDKFD_IOC_GET_PROCESS_APERTURES_NEW = iowr(0x14, kfd_ioctl_get_process_apertures_new_args) as GetProcessAperturesNew: Unsafe;
            /// Bind the process to the GPU VM of a DRM render-node fd.
            AMDKFD_IOC_ACQUIRE_VM = iow(0x15, kfd_ioctl_acquire_vm_args) as AcquireVm: Safe;
            /// Allocate a buffer (VRAM, GTT, USERPTR, doorbell, MMIO remap).
            AMDKFD_IOC_ALLOC_MEMORY_OF_GPU = iowr(0x16, kfd_ioctl_alloc_memory_of_gpu_args) as AllocMemoryOfGpu: Unsafe;
            /// Free a buffer.
            AMDKFD_IOC_FREE_MEMORY_OF_GPU = iow(0x17, kfd_ioctl_free_memory_of_gpu_args) as FreeMemoryOfGpu: Safe;
            /// Map a buffer into the GPU VM of one or more GPUs.
            AMDKFD_IOC_MAP_MEMORY_TO_GPU = iowr(0x18, kfd_ioctl_map_memory_to_gpu_args) as MapMemoryToGpu: Safe;
            /// Unmap a buffer from one or more GPUs.
            AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU = iowr(0x19, kfd_ioctl_unmap_memory_from_gpu_args) as UnmapMemoryFromGpu: Safe;
            /// Restrict a queue to a set of compute units.
            AMDKFD_IOC_SET_CU_MASK = iow(0x1A, kfd_ioctl_set_cu_mask_args) as SetCuMask: Safe;
            /// Read a preempted queue's control stack / save area usage.
            AMDKFD_IOC_GET_QUEUE_WAVE_STATE = iowr(0x1B, kfd_ioctl_get_queue_wave_state_args) as GetQueueWaveState: Unsafe;
            /// Describe a dma-buf.
            AMDKFD_IOC_GET_DMABUF_INFO = iowr(0x1C, kfd_ioctl_get_dmabuf_info_args) as GetDmabufInfo: Unsafe;
            /// Import a dma-buf as a buffer.
            AMDKFD_IOC_IMPORT_DMABUF = iowr(0x1D, kfd_ioctl_import_dmabuf_args) as ImportDmabuf: Safe;
            /// Give a queue global wave sync (GWS) entries.
            AMDKFD_IOC_ALLOC_QUEUE_GWS = iowr(0x1E, kfd_ioctl_alloc_queue_gws_args) as AllocQueueGws: Safe;
            /// Open an SMI event file descriptor.
            AMDKFD_IOC_SMI_EVENTS = iowr(0x1F, kfd_ioctl_smi_events_args) as SmiEvents: Safe;
            /// Shared virtual memory attributes (followed by `nattr` attributes).
            AMDKFD_IOC_SVM = iowr(0x20, kfd_ioctl_svm_args) as Svm: Unsafe;
            /// Query or set the process XNACK (retry on fault) mode.
            AMDKFD_IOC_SET_XNACK_MODE = iowr(0x21, kfd_ioctl_set_xnack_mode_args) as SetXnackMode: Safe;
            /// Checkpoint/restore operations.
            AMDKFD_IOC_CRIU_OP = iowr(0x22, kfd_ioctl_criu_args) as CriuOp: Unsafe;
            /// Free memory available for allocation on a GPU.
            AMDKFD_IOC_AVAILABLE_MEMORY = iowr(0x23, kfd_ioctl_get_available_memory_args) as AvailableMemory: Safe;
            /// Export a buffer as a dma-buf (1.12).
            AMDKFD_IOC_EXPORT_DMABUF = iowr(0x24, kfd_ioctl_export_dmabuf_args) as ExportDmabuf: Safe;
            /// Runtime enable handshake with a debugger (1.13).
            AMDKFD_IOC_RUNTIME_ENABLE = iowr(0x25, kfd_ioctl_runtime_enable_args) as RuntimeEnable: Unsafe;
            /// Debugger operations on a target process (1.13).
            AMDKFD_IOC_DBG_TRAP = iowr(0x26, kfd_ioctl_dbg_trap_args) as DbgTrap: Unsafe;
        }
        reuse {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips() {
        let cmd = AMDKFD_IOC_CREATE_QUEUE;
        assert_eq!(ioc_nr(cmd), 0x02);
        assert_eq!(ioc_type(cmd), u32::from(b'K'));
        assert_eq!(ioc_size(cmd), 96);
        assert_eq!(ioc_dir(cmd), IOC_READ | IOC_WRITE);
    }

    #[test]
    fn with_size_replaces_only_the_size_field() {
        // SVM with two 8-byte attributes after its 24-byte header.
        assert_eq!(with_size(AMDKFD_IOC_SVM, 24 + 16), Some(0xc0284b20));
        assert_eq!(with_size(AMDKFD_IOC_SVM, 24), Some(AMDKFD_IOC_SVM));
        assert_eq!(with_size(AMDKFD_IOC_SVM, 0x3FFF), Some(0xffff4b20));
        assert_eq!(with_size(AMDKFD_IOC_SVM, 0x4000), None);
    }

    #[test]
    fn table_is_numbered_one_to_command_end() {
        for (i, d) in AMDKFD_IOCTLS.iter().enumerate() {
            assert_eq!(d.nr(), AMDKFD_COMMAND_START + i as u32, "{}", d.name);
            assert_eq!(d.size(), d.arg.size, "{}", d.name);
            assert_eq!(ioc_type(d.request), AMDKFD_IOCTL_BASE);
        }
        assert_eq!(
            AMDKFD_IOCTLS.len() as u32,
            AMDKFD_COMMAND_END - AMDKFD_COMMAND_START
        );
        assert_eq!(
            find_by_nr(AMDKFD_IOCTLS, 0x26).map(|d| d.name),
            Some("AMDKFD_IOC_DBG_TRAP")
        );
        assert!(find_by_nr(AMDKFD_IOCTLS, 0x27).is_none());
    }

    fn request_of<R: Ioctl>() -> (u32, usize, bool) {
        (R::REQUEST, core::mem::size_of::<R::Arg>(), R::SAFE)
    }

    fn safe_name<R: SafeIoctl>() -> &'static str {
        R::NAME
    }

    #[test]
    fn request_types_carry_their_code_and_argument() {
        assert_eq!(
            request_of::<CreateQueue>(),
            (AMDKFD_IOC_CREATE_QUEUE, 96, true)
        );
        assert_eq!(request_of::<GetVersion>(), (0x80084b01, 8, true));
        assert_eq!(request_of::<AllocMemoryOfGpu>(), (0xc0284b16, 40, false));
        assert_eq!(
            request_of::<crate::v1_8::CreateQueue>(),
            (crate::v1_8::AMDKFD_IOC_CREATE_QUEUE, 88, true)
        );
        assert_eq!(safe_name::<DestroyQueue>(), "AMDKFD_IOC_DESTROY_QUEUE");
        assert_eq!(<DbgTrap as Ioctl>::NR, 0x26);
        assert_eq!(<crate::v1_8::DbgTrap as Ioctl>::NR, 0x82);
        // The kernel writes through an address in these arguments, or hands user memory to
        // the GPU.
        for name in [
            "AMDKFD_IOC_WAIT_EVENTS",
            "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
            "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW",
            "AMDKFD_IOC_SVM",
            "AMDKFD_IOC_DBG_TRAP",
        ] {
            let d = AMDKFD_IOCTLS.iter().find(|d| d.name == name).unwrap();
            assert!(!d.safe, "{name}");
        }
        assert_eq!(AMDKFD_IOCTLS.iter().filter(|d| !d.safe).count(), 12);
        let v18 = crate::v1_8::AMDKFD_IOCTLS;
        assert!(v18
            .iter()
            .any(|d| d.name == "AMDKFD_IOC_SET_EVENT" && d.safe));
    }

    /// Facts §7.2: full request codes computed with the real macros on x86-64.
    #[test]
    fn request_codes_match_the_facts_table() {
        let expected: [(u32, u32); 38] = [
            (AMDKFD_IOC_GET_VERSION, 0x80084b01),
            (AMDKFD_IOC_CREATE_QUEUE, 0xc0604b02),
            (AMDKFD_IOC_DESTROY_QUEUE, 0xc0084b03),
            (AMDKFD_IOC_SET_MEMORY_POLICY, 0x40204b04),
            (AMDKFD_IOC_GET_CLOCK_COUNTERS, 0xc0284b05),
            (AMDKFD_IOC_GET_PROCESS_APERTURES, 0x81904b06),
            (AMDKFD_IOC_UPDATE_QUEUE, 0x40184b07),
            (AMDKFD_IOC_CREATE_EVENT, 0xc0204b08),
            (AMDKFD_IOC_DESTROY_EVENT, 0x40084b09),
            (AMDKFD_IOC_SET_EVENT, 0x40084b0a),
            (AMDKFD_IOC_RESET_EVENT, 0x40084b0b),
            (AMDKFD_IOC_WAIT_EVENTS, 0xc0184b0c),
            (AMDKFD_IOC_DBG_REGISTER_DEPRECATED, 0x40084b0d),
            (AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, 0x40084b0e),
            (AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, 0x40104b0f),
            (AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, 0x40104b10),
            (AMDKFD_IOC_SET_SCRATCH_BACKING_VA, 0xc0104b11),
            (AMDKFD_IOC_GET_TILE_CONFIG, 0xc0284b12),
            (AMDKFD_IOC_SET_TRAP_HANDLER, 0x40184b13),
            (AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, 0xc0104b14),
            (AMDKFD_IOC_ACQUIRE_VM, 0x40084b15),
            (AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, 0xc0284b16),
            (AMDKFD_IOC_FREE_MEMORY_OF_GPU, 0x40084b17),
            (AMDKFD_IOC_MAP_MEMORY_TO_GPU, 0xc0184b18),
            (AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, 0xc0184b19),
            (AMDKFD_IOC_SET_CU_MASK, 0x40104b1a),
            (AMDKFD_IOC_GET_QUEUE_WAVE_STATE, 0xc0184b1b),
            (AMDKFD_IOC_GET_DMABUF_INFO, 0xc0204b1c),
            (AMDKFD_IOC_IMPORT_DMABUF, 0xc0184b1d),
            (AMDKFD_IOC_ALLOC_QUEUE_GWS, 0xc0104b1e),
            (AMDKFD_IOC_SMI_EVENTS, 0xc0084b1f),
            (AMDKFD_IOC_SVM, 0xc0184b20),
            (AMDKFD_IOC_SET_XNACK_MODE, 0xc0044b21),
            (AMDKFD_IOC_CRIU_OP, 0xc0384b22),
            (AMDKFD_IOC_AVAILABLE_MEMORY, 0xc0104b23),
            (AMDKFD_IOC_EXPORT_DMABUF, 0xc0104b24),
            (AMDKFD_IOC_RUNTIME_ENABLE, 0xc0104b25),
            (AMDKFD_IOC_DBG_TRAP, 0xc0204b26),
        ];
        for (got, want) in expected {
            assert_eq!(got, want, "{got:#x} != {want:#x}");
        }
    }
}
