//! Interface **1.8 with the ROCm DKMS additions** — the generation Debian bookworm's
//! libhsakmt 5.2.3 (and so rocminfo and ROCr 5.2.3) speaks.
//!
//! It differs from the current interface in three ways:
//!
//! * `CREATE_QUEUE` takes the **88-byte** [`kfd_ioctl_create_queue_args`] (no
//!   `sdma_engine_id`), so its request code is `0xC0584B02` instead of `0xC0604B02`. The same
//!   88-byte form is what every kernel from 1.8 to 1.16 (Linux 6.1 is 1.11) defines.
//! * It knows nothing of 0x23–0x26 (`AVAILABLE_MEMORY` … upstream `DBG_TRAP`).
//! * It adds the DKMS-only commands 0x80–0x84: IPC import/export, the old **`DBG_TRAP` at
//!   0x82** with a 40-byte argument, cross-memory copy and RLC SPM.
//!
//! The request codes of this module were checked against the constants compiled into
//! `libhsakmt.so.1.0.6` of Debian's `libhsakmt1 5.2.3+dfsg-1`.

/// Interface minor version of this generation.
pub const KFD_IOCTL_MINOR_VERSION: u32 = 8;
/// Version of the DKMS debugger API carried by 0x82 (major).
pub const KFD_IOCTL_DBG_MAJOR_VERSION: u32 = 10;
/// Version of the DKMS debugger API carried by 0x82 (minor).
pub const KFD_IOCTL_DBG_MINOR_VERSION: u32 = 1;

/// One past the last upstream command number known to 1.8.
pub const AMDKFD_COMMAND_END: u32 = 0x23;
/// First DKMS-only command number.
pub const AMDKFD_COMMAND_START_2: u32 = 0x80;
/// One past the last DKMS-only command number.
pub const AMDKFD_COMMAND_END_2: u32 = 0x85;

abi_struct! {
    /// `AMDKFD_IOC_CREATE_QUEUE` argument before 1.17 (88 bytes).
    pub struct kfd_ioctl_create_queue_args (88 bytes) {
        /// in: GPU VA of the ring.
        pub ring_base_address: u64,
        /// in: VA of the 64-bit write pointer.
        pub write_pointer_address: u64,
        /// in: VA of the 64-bit read pointer.
        pub read_pointer_address: u64,
        /// out: doorbell mmap offset.
        pub doorbell_offset: u64,
        /// in: ring size in bytes.
        pub ring_size: u32,
        /// in: the GPU.
        pub gpu_id: u32,
        /// in: `KFD_IOC_QUEUE_TYPE_*` (0–3).
        pub queue_type: u32,
        /// in: percentage.
        pub queue_percentage: u32,
        /// in: priority 0–15.
        pub queue_priority: u32,
        /// out: queue id.
        pub queue_id: u32,
        /// in: EOP buffer VA.
        pub eop_buffer_address: u64,
        /// in: EOP buffer size.
        pub eop_buffer_size: u64,
        /// in: CWSR area VA.
        pub ctx_save_restore_address: u64,
        /// in: CWSR area size.
        pub ctx_save_restore_size: u32,
        /// in: control stack size.
        pub ctl_stack_size: u32,
    }
}

impl From<kfd_ioctl_create_queue_args> for crate::kfd_ioctl_create_queue_args {
    /// Widens the 88-byte form the way the kernel does: the new fields read as zero.
    fn from(old: kfd_ioctl_create_queue_args) -> Self {
        Self {
            ring_base_address: old.ring_base_address,
            write_pointer_address: old.write_pointer_address,
            read_pointer_address: old.read_pointer_address,
            doorbell_offset: old.doorbell_offset,
            ring_size: old.ring_size,
            gpu_id: old.gpu_id,
            queue_type: old.queue_type,
            queue_percentage: old.queue_percentage,
            queue_priority: old.queue_priority,
            queue_id: old.queue_id,
            eop_buffer_address: old.eop_buffer_address,
            eop_buffer_size: old.eop_buffer_size,
            ctx_save_restore_address: old.ctx_save_restore_address,
            ctx_save_restore_size: old.ctx_save_restore_size,
            ctl_stack_size: old.ctl_stack_size,
            sdma_engine_id: 0,
            pad: 0,
        }
    }
}

abi_struct! {
    /// `AMDKFD_IOC_DBG_TRAP` (DKMS, 0x82): one generic argument block for every operation.
    pub struct kfd_ioctl_dbg_trap_args (40 bytes) {
        /// in/out: exception mask (meaning per operation).
        pub exception_mask: u64,
        /// in: user pointer (meaning per operation).
        pub ptr: u64,
        /// in: target process.
        pub pid: u32,
        /// in: one of this module's `KFD_IOC_DBG_TRAP_*`.
        pub op: u32,
        /// in/out: operation argument 1.
        pub data1: u32,
        /// in/out: operation argument 2.
        pub data2: u32,
        /// in/out: operation argument 3.
        pub data3: u32,
        /// in/out: operation argument 4.
        pub data4: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_IPC_EXPORT_HANDLE` (DKMS, 0x81).
    pub struct kfd_ioctl_ipc_export_handle_args (32 bytes) {
        /// in: buffer handle.
        pub handle: u64,
        /// out: shareable handle.
        pub share_handle: [u32; 4],
        /// in: the GPU.
        pub gpu_id: u32,
        /// in: flags.
        pub flags: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_IPC_IMPORT_HANDLE` (DKMS, 0x80).
    pub struct kfd_ioctl_ipc_import_handle_args (48 bytes) {
        /// out: buffer handle.
        pub handle: u64,
        /// in: VA to place the buffer at.
        pub va_addr: u64,
        /// out: render-node mmap offset.
        pub mmap_offset: u64,
        /// in: shareable handle from the exporter.
        pub share_handle: [u32; 4],
        /// in: the GPU.
        pub gpu_id: u32,
        /// out: allocation flags.
        pub flags: u32,
    }
}

abi_struct! {
    /// One range of a cross-memory copy.
    pub struct kfd_memory_range (16 bytes) {
        /// Start VA.
        pub va_addr: u64,
        /// Size in bytes.
        pub size: u64,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_CROSS_MEMORY_COPY` (DKMS, 0x83).
    pub struct kfd_ioctl_cross_memory_copy_args (48 bytes) {
        /// in: the remote process.
        pub pid: u32,
        /// in: [`KFD_CROSS_MEMORY_RW_BIT`] set for a write to the remote process.
        pub flags: u32,
        /// in: VA of the source [`kfd_memory_range`] array.
        pub src_mem_range_array: u64,
        /// in: entries in that array.
        pub src_mem_array_size: u64,
        /// in: VA of the destination [`kfd_memory_range`] array.
        pub dst_mem_range_array: u64,
        /// in: entries in that array.
        pub dst_mem_array_size: u64,
        /// out: bytes copied.
        pub bytes_copied: u64,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_RLC_SPM` (DKMS, 0x84): streaming performance monitor.
    pub struct kfd_ioctl_spm_args (32 bytes) {
        /// in: destination buffer (0 stops streaming).
        pub dest_buf: u64,
        /// in: destination buffer size.
        pub buf_size: u32,
        /// in: `KFD_IOCTL_SPM_OP_*`.
        pub op: u32,
        /// in: timeout in ms; out: time left.
        pub timeout: u32,
        /// in: the GPU.
        pub gpu_id: u32,
        /// out: bytes copied to the previous buffer.
        pub bytes_copied: u32,
        /// out: non-zero if data was lost.
        pub has_data_loss: u32,
    }
}

abi_struct! {
    /// One queue of the DKMS queue snapshot (128 bytes, unlike the 64-byte upstream entry).
    pub struct kfd_queue_snapshot_entry (128 bytes) {
        /// Raised exceptions.
        pub exception_status: u64,
        /// Ring VA.
        pub ring_base_address: u64,
        /// Write-pointer VA.
        pub write_pointer_address: u64,
        /// Read-pointer VA.
        pub read_pointer_address: u64,
        /// CWSR area VA.
        pub ctx_save_restore_address: u64,
        /// Queue id.
        pub queue_id: u32,
        /// The GPU.
        pub gpu_id: u32,
        /// Ring size.
        pub ring_size: u32,
        /// `KFD_IOC_QUEUE_TYPE_*`.
        pub queue_type: u32,
        /// Reserved.
        pub reserved: [u32; 18],
    }
}

abi_struct! {
    /// One device of the DKMS device snapshot (64 bytes, unlike the 120-byte upstream entry).
    pub struct kfd_dbg_device_info_entry (64 bytes) {
        /// Raised exceptions.
        pub exception_status: u64,
        /// LDS aperture base.
        pub lds_base: u64,
        /// LDS aperture limit.
        pub lds_limit: u64,
        /// Scratch aperture base.
        pub scratch_base: u64,
        /// Scratch aperture limit.
        pub scratch_limit: u64,
        /// GPUVM aperture base.
        pub gpuvm_base: u64,
        /// GPUVM aperture limit.
        pub gpuvm_limit: u64,
        /// The GPU.
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

/// Cross-memory copy flag: the remote side is written (clear: read).
pub const KFD_CROSS_MEMORY_RW_BIT: u32 = 1 << 0;

/// SPM: acquire exclusive access.
pub const KFD_IOCTL_SPM_OP_ACQUIRE: u32 = 0;
/// SPM: release exclusive access.
pub const KFD_IOCTL_SPM_OP_RELEASE: u32 = 1;
/// SPM: set or unset the destination buffer.
pub const KFD_IOCTL_SPM_OP_SET_DEST_BUF: u32 = 2;

/// Queue suspend flag: clear the queue status.
pub const KFD_DBG_EV_FLAG_CLEAR_STATUS: u32 = 1;
/// An invalid GPU id.
pub const KFD_INVALID_GPUID: u32 = 0xffff_ffff;
/// An invalid queue id.
pub const KFD_INVALID_QUEUEID: u32 = 0xffff_ffff;

/// DKMS `DBG_TRAP` op: enable/disable (data1) a debug session.
pub const KFD_IOC_DBG_TRAP_ENABLE: u32 = 0;
/// DKMS `DBG_TRAP` op: wave launch trap override.
pub const KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE: u32 = 1;
/// DKMS `DBG_TRAP` op: wave launch mode.
pub const KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE: u32 = 2;
/// DKMS `DBG_TRAP` op: suspend queues.
pub const KFD_IOC_DBG_TRAP_NODE_SUSPEND: u32 = 3;
/// DKMS `DBG_TRAP` op: resume queues.
pub const KFD_IOC_DBG_TRAP_NODE_RESUME: u32 = 4;
/// DKMS `DBG_TRAP` op: query raised exceptions.
pub const KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT: u32 = 5;
/// DKMS `DBG_TRAP` op: snapshot queues.
pub const KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT: u32 = 6;
/// DKMS `DBG_TRAP` op: debugger API version (data1 major, data2 minor).
pub const KFD_IOC_DBG_TRAP_GET_VERSION: u32 = 7;
/// DKMS `DBG_TRAP` op: clear an address watch.
pub const KFD_IOC_DBG_TRAP_CLEAR_ADDRESS_WATCH: u32 = 8;
/// DKMS `DBG_TRAP` op: set an address watch.
pub const KFD_IOC_DBG_TRAP_SET_ADDRESS_WATCH: u32 = 9;
/// DKMS `DBG_TRAP` op: precise memory operations.
pub const KFD_IOC_DBG_TRAP_SET_PRECISE_MEM_OPS: u32 = 10;
/// DKMS `DBG_TRAP` op: query exception details.
pub const KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO: u32 = 11;
/// DKMS `DBG_TRAP` op: snapshot devices.
pub const KFD_IOC_DBG_TRAP_DEVICE_SNAPSHOT: u32 = 12;
/// DKMS `DBG_TRAP` op: runtime enable.
pub const KFD_IOC_DBG_TRAP_RUNTIME_ENABLE: u32 = 13;
/// DKMS `DBG_TRAP` op: raise exceptions to the runtime.
pub const KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT: u32 = 14;
/// DKMS `DBG_TRAP` op: set the debugger's exception mask.
pub const KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED: u32 = 15;

ioctl_table! {
    /// Every ioctl of this generation: the DKMS-only and changed ones first, then the upstream
    /// ones it shares unchanged with the current interface.
    pub const AMDKFD_IOCTLS = {
        define {
            /// Create a user queue with the 88-byte argument.
            AMDKFD_IOC_CREATE_QUEUE = iowr(0x02, kfd_ioctl_create_queue_args) as CreateQueue: Safe;
            /// Import a buffer shared by another process (DKMS).
            AMDKFD_IOC_IPC_IMPORT_HANDLE = iowr(0x80, kfd_ioctl_ipc_import_handle_args) as IpcImportHandle: Safe;
            /// Export a buffer for another process (DKMS).
            AMDKFD_IOC_IPC_EXPORT_HANDLE = iowr(0x81, kfd_ioctl_ipc_export_handle_args) as IpcExportHandle: Safe;
            /// The DKMS debugger entry point (upstream moved `DBG_TRAP` to 0x26).
            AMDKFD_IOC_DBG_TRAP = iowr(0x82, kfd_ioctl_dbg_trap_args) as DbgTrap: Unsafe;
            /// Copy between this and another process's GPU memory (DKMS).
            AMDKFD_IOC_CROSS_MEMORY_COPY = iowr(0x83, kfd_ioctl_cross_memory_copy_args) as CrossMemoryCopy: Unsafe;
            /// Streaming performance monitor (DKMS).
            AMDKFD_IOC_RLC_SPM = iowr(0x84, kfd_ioctl_spm_args) as RlcSpm: Unsafe;
        }
        reuse {
            AMDKFD_IOC_GET_VERSION, GetVersion;
            AMDKFD_IOC_DESTROY_QUEUE, DestroyQueue;
            AMDKFD_IOC_SET_MEMORY_POLICY, SetMemoryPolicy;
            AMDKFD_IOC_GET_CLOCK_COUNTERS, GetClockCounters;
            AMDKFD_IOC_GET_PROCESS_APERTURES, GetProcessApertures;
            AMDKFD_IOC_UPDATE_QUEUE, UpdateQueue;
            AMDKFD_IOC_CREATE_EVENT, CreateEvent;
            AMDKFD_IOC_DESTROY_EVENT, DestroyEvent;
            AMDKFD_IOC_SET_EVENT, SetEvent;
            AMDKFD_IOC_RESET_EVENT, ResetEvent;
            AMDKFD_IOC_WAIT_EVENTS, WaitEvents;
            AMDKFD_IOC_DBG_REGISTER_DEPRECATED, DbgRegisterDeprecated;
            AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, DbgUnregisterDeprecated;
            AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, DbgAddressWatchDeprecated;
            AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, DbgWaveControlDeprecated;
            AMDKFD_IOC_SET_SCRATCH_BACKING_VA, SetScratchBackingVa;
            AMDKFD_IOC_GET_TILE_CONFIG, GetTileConfig;
            AMDKFD_IOC_SET_TRAP_HANDLER, SetTrapHandler;
            AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, GetProcessAperturesNew;
            AMDKFD_IOC_ACQUIRE_VM, AcquireVm;
            AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, AllocMemoryOfGpu;
            AMDKFD_IOC_FREE_MEMORY_OF_GPU, FreeMemoryOfGpu;
            AMDKFD_IOC_MAP_MEMORY_TO_GPU, MapMemoryToGpu;
            AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, UnmapMemoryFromGpu;
            AMDKFD_IOC_SET_CU_MASK, SetCuMask;
            AMDKFD_IOC_GET_QUEUE_WAVE_STATE, GetQueueWaveState;
            AMDKFD_IOC_GET_DMABUF_INFO, GetDmabufInfo;
            AMDKFD_IOC_IMPORT_DMABUF, ImportDmabuf;
            AMDKFD_IOC_ALLOC_QUEUE_GWS, AllocQueueGws;
            AMDKFD_IOC_SMI_EVENTS, SmiEvents;
            AMDKFD_IOC_SVM, Svm;
            AMDKFD_IOC_SET_XNACK_MODE, SetXnackMode;
            AMDKFD_IOC_CRIU_OP, CriuOp;
        }
    }
}

/// The structs that exist only in, or differ in, this generation.
pub const STRUCTS: &[crate::StructLayout] = layouts![
    kfd_ioctl_create_queue_args,
    kfd_ioctl_dbg_trap_args,
    kfd_ioctl_ipc_export_handle_args,
    kfd_ioctl_ipc_import_handle_args,
    kfd_memory_range,
    kfd_ioctl_cross_memory_copy_args,
    kfd_ioctl_spm_args,
    kfd_queue_snapshot_entry,
    kfd_dbg_device_info_entry,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ioctl::{find_by_nr, ioc_nr};

    /// The request codes compiled into Debian's libhsakmt 5.2.3 for the commands that differ.
    #[test]
    fn request_codes_match_debian_libhsakmt() {
        assert_eq!(AMDKFD_IOC_CREATE_QUEUE, 0xc058_4b02);
        assert_eq!(AMDKFD_IOC_IPC_IMPORT_HANDLE, 0xc030_4b80);
        assert_eq!(AMDKFD_IOC_IPC_EXPORT_HANDLE, 0xc020_4b81);
        assert_eq!(AMDKFD_IOC_DBG_TRAP, 0xc028_4b82);
        assert_eq!(AMDKFD_IOC_CROSS_MEMORY_COPY, 0xc030_4b83);
        assert_eq!(AMDKFD_IOC_RLC_SPM, 0xc020_4b84);
        assert_eq!(AMDKFD_IOC_GET_VERSION, 0x8008_4b01);
        assert_eq!(AMDKFD_IOC_SET_XNACK_MODE, 0xc004_4b21);
    }

    #[test]
    fn table_covers_1_to_0x22_and_0x80_to_0x84_once() {
        let mut nrs: [u32; 39] = [0; 39];
        for (slot, d) in nrs.iter_mut().zip(AMDKFD_IOCTLS) {
            *slot = d.nr();
            assert_eq!(d.size(), d.arg.size, "{}", d.name);
        }
        assert_eq!(AMDKFD_IOCTLS.len(), nrs.len());
        nrs.sort_unstable();
        let expected = (1..AMDKFD_COMMAND_END).chain(AMDKFD_COMMAND_START_2..AMDKFD_COMMAND_END_2);
        assert!(nrs.iter().copied().eq(expected));
        assert_eq!(ioc_nr(AMDKFD_IOC_DBG_TRAP), 0x82);
        assert_eq!(find_by_nr(AMDKFD_IOCTLS, 0x26), None);
    }

    #[test]
    fn old_create_queue_widens_with_zero_engine() {
        let old = kfd_ioctl_create_queue_args {
            ring_size: 4096,
            queue_type: 1,
            ..Default::default()
        };
        let new: crate::kfd_ioctl_create_queue_args = old.into();
        assert_eq!(
            (new.ring_size, new.queue_type, new.sdma_engine_id),
            (4096, 1, 0)
        );
        // The first 88 bytes are identical: the kernel's zero-extension.
        use zerocopy::IntoBytes;
        assert_eq!(&new.as_bytes()[..88], old.as_bytes());
    }
}
