//! The debugger interface of 1.13+: device and queue snapshots, runtime enable, the context
//! save area header, and `AMDKFD_IOC_DBG_TRAP` with its per-operation arguments.

use crate::layout::{read_member, write_member};

abi_struct! {
    /// One device of a `KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT`.
    pub struct kfd_dbg_device_info_entry (120 bytes) {
        /// Raised exceptions (`KFD_EC_MASK` bits).
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
        /// PCI location.
        pub location_id: u32,
        /// PCI vendor id.
        pub vendor_id: u32,
        /// PCI device id.
        pub device_id: u32,
        /// PCI revision.
        pub revision_id: u32,
        /// PCI subsystem vendor id.
        pub subsystem_vendor_id: u32,
        /// PCI subsystem device id.
        pub subsystem_device_id: u32,
        /// MEC firmware version.
        pub fw_version: u32,
        /// gfx target version, e.g. 90010 for gfx901.
        pub gfx_target_version: u32,
        /// SIMD count.
        pub simd_count: u32,
        /// Maximum waves per SIMD.
        pub max_waves_per_simd: u32,
        /// Shader arrays.
        pub array_count: u32,
        /// Shader arrays per engine.
        pub simd_arrays_per_engine: u32,
        /// XCC count.
        pub num_xcc: u32,
        /// `HSA_CAP_*` bits.
        pub capability: u32,
        /// `HSA_DBG_*` bits.
        pub debug_prop: u32,
    }
}

abi_struct! {
    /// Runtime state shared with a debugger.
    pub struct kfd_runtime_info (16 bytes) {
        /// The runtime's `r_debug` address.
        pub r_debug: u64,
        /// `DEBUG_RUNTIME_STATE_*`.
        pub runtime_state: u32,
        /// Non-zero if trap temporaries are set up.
        pub ttmp_setup: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_RUNTIME_ENABLE`.
    pub struct kfd_ioctl_runtime_enable_args (16 bytes) {
        /// in: the runtime's `r_debug` address.
        pub r_debug: u64,
        /// in: `KFD_RUNTIME_ENABLE_MODE_*`.
        pub mode_mask: u32,
        /// out: what KFD supports.
        pub capabilities_mask: u32,
    }
}

abi_struct! {
    /// One queue of a `KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT`.
    pub struct kfd_queue_snapshot_entry (64 bytes) {
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
        /// Ring size in bytes.
        pub ring_size: u32,
        /// `KFD_IOC_QUEUE_TYPE_*`.
        pub queue_type: u32,
        /// CWSR area size.
        pub ctx_save_restore_area_size: u32,
        /// Reserved.
        pub reserved: u32,
    }
}

abi_struct! {
    /// The `wave_state` member of [`kfd_context_save_area_header`].
    pub struct kfd_context_save_area_header_wave_state (16 bytes) {
        /// Offset of the control stack in the save area.
        pub control_stack_offset: u32,
        /// Size of the control stack.
        pub control_stack_size: u32,
        /// Offset of the wave state.
        pub wave_state_offset: u32,
        /// Size of the wave state.
        pub wave_state_size: u32,
    }
}

abi_struct! {
    /// Header user space writes at the start of a queue's context save area.
    pub struct kfd_context_save_area_header (40 bytes) {
        /// Where the firmware keeps the control stack and wave state.
        pub wave_state: kfd_context_save_area_header_wave_state,
        /// Offset of the debugger area.
        pub debug_offset: u32,
        /// Size of the debugger area.
        pub debug_size: u32,
        /// Where KFD reports queue errors.
        pub err_payload_addr: u64,
        /// Event to signal on a queue error.
        pub err_event_id: u32,
        /// Reserved.
        pub reserved1: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_ENABLE`.
    pub struct kfd_ioctl_dbg_trap_enable_args (24 bytes) {
        /// in: exceptions to raise to the debugger.
        pub exception_mask: u64,
        /// in: buffer for [`kfd_runtime_info`].
        pub rinfo_ptr: u64,
        /// in/out: size of that buffer.
        pub rinfo_size: u32,
        /// in: fd KFD notifies the debugger through.
        pub dbg_fd: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT`.
    pub struct kfd_ioctl_dbg_trap_send_runtime_event_args (16 bytes) {
        /// in: exceptions to raise to the runtime.
        pub exception_mask: u64,
        /// in: target device.
        pub gpu_id: u32,
        /// in: target queue.
        pub queue_id: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED`.
    pub struct kfd_ioctl_dbg_trap_set_exceptions_enabled_args (8 bytes) {
        /// in: exceptions to raise to the debugger from now on.
        pub exception_mask: u64,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE`.
    pub struct kfd_ioctl_dbg_trap_set_wave_launch_override_args (16 bytes) {
        /// in: `KFD_DBG_TRAP_OVERRIDE_*`.
        pub override_mode: u32,
        /// in/out: `KFD_DBG_TRAP_MASK_*` requested / previously enabled.
        pub enable_mask: u32,
        /// in/out: requested / supported mask.
        pub support_request_mask: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE`.
    pub struct kfd_ioctl_dbg_trap_set_wave_launch_mode_args (8 bytes) {
        /// in: `KFD_DBG_TRAP_WAVE_LAUNCH_MODE_*`.
        pub launch_mode: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_SUSPEND_QUEUES`.
    pub struct kfd_ioctl_dbg_trap_suspend_queues_args (24 bytes) {
        /// in: raised exceptions to clear.
        pub exception_mask: u64,
        /// in: VA of a `u32` queue-id array (status bits written back).
        pub queue_array_ptr: u64,
        /// in: entries in the array.
        pub num_queues: u32,
        /// in: wave time allowance before preemption, in 1K-clock units.
        pub grace_period: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_RESUME_QUEUES`.
    pub struct kfd_ioctl_dbg_trap_resume_queues_args (16 bytes) {
        /// in: VA of a `u32` queue-id array.
        pub queue_array_ptr: u64,
        /// in: entries in the array.
        pub num_queues: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH`.
    pub struct kfd_ioctl_dbg_trap_set_node_address_watch_args (24 bytes) {
        /// in: watched address.
        pub address: u64,
        /// in: `KFD_DBG_TRAP_ADDRESS_WATCH_MODE_*`.
        pub mode: u32,
        /// in: address mask.
        pub mask: u32,
        /// in: the GPU.
        pub gpu_id: u32,
        /// out: watch id.
        pub id: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH`.
    pub struct kfd_ioctl_dbg_trap_clear_node_address_watch_args (8 bytes) {
        /// in: the GPU.
        pub gpu_id: u32,
        /// in: watch id.
        pub id: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_SET_FLAGS`.
    pub struct kfd_ioctl_dbg_trap_set_flags_args (8 bytes) {
        /// in: `KFD_DBG_TRAP_FLAG_*` to enable; out: previously enabled.
        pub flags: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT`.
    pub struct kfd_ioctl_dbg_trap_query_debug_event_args (16 bytes) {
        /// in: exceptions to clear; out: raised exceptions.
        pub exception_mask: u64,
        /// out: source device.
        pub gpu_id: u32,
        /// out: source queue.
        pub queue_id: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO`.
    pub struct kfd_ioctl_dbg_trap_query_exception_info_args (24 bytes) {
        /// in: buffer for the exception info.
        pub info_ptr: u64,
        /// in/out: buffer size / required size.
        pub info_size: u32,
        /// in: GPU or queue id.
        pub source_id: u32,
        /// in: the exception (`EC_*`).
        pub exception_code: u32,
        /// in: non-zero clears it.
        pub clear_exception: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT`.
    pub struct kfd_ioctl_dbg_trap_queue_snapshot_args (24 bytes) {
        /// in: raised exceptions to clear.
        pub exception_mask: u64,
        /// in: VA of a [`kfd_queue_snapshot_entry`] array.
        pub snapshot_buf_ptr: u64,
        /// in/out: capacity / queues that exist.
        pub num_queues: u32,
        /// in/out: entry stride / bytes filled per entry.
        pub entry_size: u32,
    }
}

abi_struct! {
    /// `KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT`.
    pub struct kfd_ioctl_dbg_trap_device_snapshot_args (24 bytes) {
        /// in: raised exceptions to clear.
        pub exception_mask: u64,
        /// in: VA of a [`kfd_dbg_device_info_entry`] array.
        pub snapshot_buf_ptr: u64,
        /// in/out: capacity / devices that exist.
        pub num_devices: u32,
        /// in/out: entry stride / bytes filled per entry.
        pub entry_size: u32,
    }
}

abi_struct! {
    /// The per-operation union of [`kfd_ioctl_dbg_trap_args`], kept as its 24 bytes with a
    /// typed accessor per member.
    #[repr(align(8))]
    pub struct kfd_ioctl_dbg_trap_args_union (24 bytes) {
        /// The raw union bytes.
        pub bytes: [u8; 24],
    }
}

macro_rules! union_members {
    ($ty:ident { $($get:ident / $set:ident : $member:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("The `", stringify!($get), "` member.")]
                pub fn $get(&self) -> $member {
                    read_member(&self.bytes)
                }
                #[doc = concat!("Stores the `", stringify!($get), "` member.")]
                pub fn $set(&mut self, value: $member) {
                    write_member(&mut self.bytes, &value)
                }
            )*
        }
    };
}

union_members!(kfd_ioctl_dbg_trap_args_union {
    enable / set_enable: kfd_ioctl_dbg_trap_enable_args,
    send_runtime_event / set_send_runtime_event: kfd_ioctl_dbg_trap_send_runtime_event_args,
    set_exceptions_enabled / set_set_exceptions_enabled:
        kfd_ioctl_dbg_trap_set_exceptions_enabled_args,
    launch_override / set_launch_override: kfd_ioctl_dbg_trap_set_wave_launch_override_args,
    launch_mode / set_launch_mode: kfd_ioctl_dbg_trap_set_wave_launch_mode_args,
    suspend_queues / set_suspend_queues: kfd_ioctl_dbg_trap_suspend_queues_args,
    resume_queues / set_resume_queues: kfd_ioctl_dbg_trap_resume_queues_args,
    set_node_address_watch / set_set_node_address_watch:
        kfd_ioctl_dbg_trap_set_node_address_watch_args,
    clear_node_address_watch / set_clear_node_address_watch:
        kfd_ioctl_dbg_trap_clear_node_address_watch_args,
    set_flags / set_set_flags: kfd_ioctl_dbg_trap_set_flags_args,
    query_debug_event / set_query_debug_event: kfd_ioctl_dbg_trap_query_debug_event_args,
    query_exception_info / set_query_exception_info:
        kfd_ioctl_dbg_trap_query_exception_info_args,
    queue_snapshot / set_queue_snapshot: kfd_ioctl_dbg_trap_queue_snapshot_args,
    device_snapshot / set_device_snapshot: kfd_ioctl_dbg_trap_device_snapshot_args,
});

abi_struct! {
    /// `AMDKFD_IOC_DBG_TRAP` (0x26, 1.13): `op` selects the member of `args`.
    pub struct kfd_ioctl_dbg_trap_args (32 bytes) {
        /// in: target process.
        pub pid: u32,
        /// in: `KFD_IOC_DBG_TRAP_*`.
        pub op: u32,
        /// in/out: the operation's arguments.
        pub args: kfd_ioctl_dbg_trap_args_union,
    }
}
