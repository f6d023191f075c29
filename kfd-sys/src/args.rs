//! Argument structs of the queue, memory, event, aperture, dma-buf, SVM and CRIU ioctls
//! (interface 1.18). Offsets are those of the C header on x86-64; "in" means user space fills
//! the field, "out" that the kernel writes it.

use crate::layout::{read_member, write_member};

abi_struct! {
    /// `AMDKFD_IOC_GET_VERSION`.
    pub struct kfd_ioctl_get_version_args (8 bytes) {
        /// out: always 1.
        pub major_version: u32,
        /// out: the interface minor version (17 on Linux 6.12).
        pub minor_version: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_CREATE_QUEUE` (96 bytes since 1.17; see
    /// [`crate::v1_8::kfd_ioctl_create_queue_args`] for the 88-byte form).
    pub struct kfd_ioctl_create_queue_args (96 bytes) {
        /// in: GPU VA of the ring (256-byte aligned).
        pub ring_base_address: u64,
        /// in: VA of the 64-bit write pointer.
        pub write_pointer_address: u64,
        /// in: VA of the 64-bit read pointer the engine reports to.
        pub read_pointer_address: u64,
        /// out: mmap offset of the doorbell page; low bits locate the queue's doorbell in it.
        pub doorbell_offset: u64,
        /// in: ring size in bytes (power of two, at least [`crate::KFD_MIN_QUEUE_RING_SIZE`]).
        pub ring_size: u32,
        /// in: the target GPU.
        pub gpu_id: u32,
        /// in: one of `KFD_IOC_QUEUE_TYPE_*`.
        pub queue_type: u32,
        /// in: bits `[7:0]` percentage 0–100 (0 creates the queue inactive), `[15:8]` target XCC.
        pub queue_percentage: u32,
        /// in: 0–15.
        pub queue_priority: u32,
        /// out: queue id within the process.
        pub queue_id: u32,
        /// in: VA of the end-of-pipe buffer (compute queues).
        pub eop_buffer_address: u64,
        /// in: EOP buffer size in bytes.
        pub eop_buffer_size: u64,
        /// in: VA of the context save/restore (CWSR) area.
        pub ctx_save_restore_address: u64,
        /// in: size of the CWSR area.
        pub ctx_save_restore_size: u32,
        /// in: size of the control stack inside the CWSR area.
        pub ctl_stack_size: u32,
        /// in: engine for `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID` (1.17).
        pub sdma_engine_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_DESTROY_QUEUE`.
    pub struct kfd_ioctl_destroy_queue_args (8 bytes) {
        /// in: queue to destroy.
        pub queue_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_UPDATE_QUEUE`.
    pub struct kfd_ioctl_update_queue_args (24 bytes) {
        /// in: new ring address.
        pub ring_base_address: u64,
        /// in: queue to update.
        pub queue_id: u32,
        /// in: new ring size in bytes.
        pub ring_size: u32,
        /// in: new percentage (0 makes the queue inactive).
        pub queue_percentage: u32,
        /// in: new priority 0–15.
        pub queue_priority: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SET_CU_MASK`.
    pub struct kfd_ioctl_set_cu_mask_args (16 bytes) {
        /// in: queue to restrict.
        pub queue_id: u32,
        /// in: number of mask **bits** (a non-zero multiple of 32).
        pub num_cu_mask: u32,
        /// in: VA of the `u32` mask array.
        pub cu_mask_ptr: u64,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_GET_QUEUE_WAVE_STATE`.
    pub struct kfd_ioctl_get_queue_wave_state_args (24 bytes) {
        /// in: where to copy the control stack.
        pub ctl_stack_address: u64,
        /// out: bytes of control stack in use.
        pub ctl_stack_used_size: u32,
        /// out: bytes of the save area in use.
        pub save_area_used_size: u32,
        /// in: the queue.
        pub queue_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_AVAILABLE_MEMORY` (1.9).
    pub struct kfd_ioctl_get_available_memory_args (16 bytes) {
        /// out: bytes still allocatable.
        pub available: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SET_MEMORY_POLICY`. The last field was `pad` before 1.18.
    pub struct kfd_ioctl_set_memory_policy_args (32 bytes) {
        /// in: base of the alternate aperture.
        pub alternate_aperture_base: u64,
        /// in: size of the alternate aperture.
        pub alternate_aperture_size: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// in: `KFD_IOC_CACHE_POLICY_*` for the default aperture.
        pub default_policy: u32,
        /// in: `KFD_IOC_CACHE_POLICY_*` for the alternate aperture.
        pub alternate_policy: u32,
        /// in: `KFD_PROC_FLAG_*` (1.18; named `pad` before).
        pub misc_process_flag: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_GET_CLOCK_COUNTERS`. All counters are monotonic.
    pub struct kfd_ioctl_get_clock_counters_args (40 bytes) {
        /// out: GPU timestamp counter.
        pub gpu_clock_counter: u64,
        /// out: CPU timestamp (raw monotonic clock, ns).
        pub cpu_clock_counter: u64,
        /// out: system clock (boot time, ns).
        pub system_clock_counter: u64,
        /// out: frequency of `system_clock_counter` in Hz.
        pub system_clock_freq: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// Apertures of one GPU for the calling process.
    pub struct kfd_process_device_apertures (56 bytes) {
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

abi_struct! {
    /// `AMDKFD_IOC_GET_PROCESS_APERTURES` (deprecated, at most
    /// [`crate::NUM_OF_SUPPORTED_GPUS`] GPUs).
    pub struct kfd_ioctl_get_process_apertures_args (400 bytes) {
        /// out: one entry per GPU.
        pub process_apertures: [kfd_process_device_apertures; crate::NUM_OF_SUPPORTED_GPUS as usize],
        /// out: entries filled.
        pub num_of_nodes: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_GET_PROCESS_APERTURES_NEW`.
    pub struct kfd_ioctl_get_process_apertures_new_args (16 bytes) {
        /// in: VA of a user array of [`kfd_process_device_apertures`].
        pub kfd_process_device_apertures_ptr: u64,
        /// in: array capacity (0 asks for the count); out: entries filled.
        pub num_of_nodes: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// Deprecated `AMDKFD_IOC_DBG_REGISTER_DEPRECATED`.
    pub struct kfd_ioctl_dbg_register_args (8 bytes) {
        /// in: the GPU.
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// Deprecated `AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED`.
    pub struct kfd_ioctl_dbg_unregister_args (8 bytes) {
        /// in: the GPU.
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// Deprecated `AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED`.
    pub struct kfd_ioctl_dbg_address_watch_args (16 bytes) {
        /// in: pointer to the watch-point content.
        pub content_ptr: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// in: buffer size including `gpu_id` and this field.
        pub buf_size_in_bytes: u32,
    }
}

abi_struct! {
    /// Deprecated `AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED`.
    pub struct kfd_ioctl_dbg_wave_control_args (16 bytes) {
        /// in: pointer to the wave-control content.
        pub content_ptr: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// in: buffer size including `gpu_id` and this field.
        pub buf_size_in_bytes: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_CREATE_EVENT`.
    pub struct kfd_ioctl_create_event_args (32 bytes) {
        /// in (first call on a dGPU): BO handle of the user-allocated event page;
        /// out: mmap offset of the event page.
        pub event_page_offset: u64,
        /// out: value a queue writes to signal the event (signal events only).
        pub event_trigger_data: u32,
        /// in: one of `KFD_IOC_EVENT_*`.
        pub event_type: u32,
        /// in: non-zero for an auto-reset event.
        pub auto_reset: u32,
        /// in: node, for the event types that need one.
        pub node_id: u32,
        /// out: the event id (never 0).
        pub event_id: u32,
        /// out: slot of the event in the event page.
        pub event_slot_index: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_DESTROY_EVENT`.
    pub struct kfd_ioctl_destroy_event_args (8 bytes) {
        /// in: the event.
        pub event_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SET_EVENT`.
    pub struct kfd_ioctl_set_event_args (8 bytes) {
        /// in: the event.
        pub event_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_RESET_EVENT`.
    pub struct kfd_ioctl_reset_event_args (8 bytes) {
        /// in: the event.
        pub event_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// Why a memory access faulted.
    pub struct kfd_memory_exception_failure (16 bytes) {
        /// Page not present or supervisor privilege.
        pub NotPresent: u32,
        /// Write access to a read-only page.
        pub ReadOnly: u32,
        /// Execute access to a page marked no-execute.
        pub NoExecute: u32,
        /// The exact fault address is unknown.
        pub imprecise: u32,
    }
}

abi_struct! {
    /// Payload of a memory-exception event.
    pub struct kfd_hsa_memory_exception_data (32 bytes) {
        /// Fault kind.
        pub failure: kfd_memory_exception_failure,
        /// Faulting virtual address.
        pub va: u64,
        /// The GPU.
        pub gpu_id: u32,
        /// `KFD_MEM_ERR_*`.
        pub ErrorType: u32,
    }
}

abi_struct! {
    /// Payload of a hardware-exception event.
    pub struct kfd_hsa_hw_exception_data (16 bytes) {
        /// `KFD_HW_EXCEPTION_WHOLE_GPU_RESET` or `_PER_ENGINE_RESET`.
        pub reset_type: u32,
        /// `KFD_HW_EXCEPTION_GPU_HANG` or `_ECC`.
        pub reset_cause: u32,
        /// Non-zero if VRAM contents were lost.
        pub memory_lost: u32,
        /// The GPU.
        pub gpu_id: u32,
    }
}

abi_struct! {
    /// Payload of a signal event in `WAIT_EVENTS` (1.14).
    pub struct kfd_hsa_signal_event_data (8 bytes) {
        /// in/out: the event age the waiter last saw (0 = not used).
        pub last_event_age: u64,
    }
}

abi_struct! {
    /// The anonymous union at the start of [`kfd_event_data`], kept as its 32 bytes with typed
    /// accessors for each member (C unions cannot derive zerocopy's `IntoBytes`).
    #[repr(align(8))]
    pub struct kfd_event_data_union (32 bytes) {
        /// The raw union bytes.
        pub bytes: [u8; 32],
    }
}

impl kfd_event_data_union {
    /// The `memory_exception_data` member.
    pub fn memory_exception_data(&self) -> kfd_hsa_memory_exception_data {
        read_member(&self.bytes)
    }
    /// Stores the `memory_exception_data` member.
    pub fn set_memory_exception_data(&mut self, value: kfd_hsa_memory_exception_data) {
        write_member(&mut self.bytes, &value)
    }
    /// The `hw_exception_data` member.
    pub fn hw_exception_data(&self) -> kfd_hsa_hw_exception_data {
        read_member(&self.bytes)
    }
    /// Stores the `hw_exception_data` member.
    pub fn set_hw_exception_data(&mut self, value: kfd_hsa_hw_exception_data) {
        write_member(&mut self.bytes, &value)
    }
    /// The `signal_event_data` member (1.14).
    pub fn signal_event_data(&self) -> kfd_hsa_signal_event_data {
        read_member(&self.bytes)
    }
    /// Stores the `signal_event_data` member.
    pub fn set_signal_event_data(&mut self, value: kfd_hsa_signal_event_data) {
        write_member(&mut self.bytes, &value)
    }
}

abi_struct! {
    /// One entry of the `WAIT_EVENTS` array.
    pub struct kfd_event_data (48 bytes) {
        /// The anonymous union: exception payload (out) or signal age (in/out).
        pub data: kfd_event_data_union,
        /// Pointer to an extension structure (unused).
        pub kfd_event_data_ext: u64,
        /// in: the event to wait for.
        pub event_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_WAIT_EVENTS`.
    pub struct kfd_ioctl_wait_events_args (24 bytes) {
        /// in: VA of an array of [`kfd_event_data`].
        pub events_ptr: u64,
        /// in: number of entries.
        pub num_events: u32,
        /// in: non-zero to wait for all events instead of any.
        pub wait_for_all: u32,
        /// in: milliseconds; 0 polls, `0xFFFFFFFF` waits forever.
        pub timeout: u32,
        /// out: `KFD_IOC_WAIT_RESULT_*`.
        pub wait_result: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SET_SCRATCH_BACKING_VA`.
    pub struct kfd_ioctl_set_scratch_backing_va_args (16 bytes) {
        /// in: scratch backing VA.
        pub va_addr: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_GET_TILE_CONFIG`.
    pub struct kfd_ioctl_get_tile_config_args (40 bytes) {
        /// in: VA of the tile-config array.
        pub tile_config_ptr: u64,
        /// in: VA of the macro-tile-config array.
        pub macro_tile_config_ptr: u64,
        /// in: capacity; out: entries filled.
        pub num_tile_configs: u32,
        /// in: capacity; out: entries filled.
        pub num_macro_tile_configs: u32,
        /// in: the GPU.
        pub gpu_id: u32,
        /// out: `GB_ADDR_CONFIG`.
        pub gb_addr_config: u32,
        /// out: number of banks.
        pub num_banks: u32,
        /// out: number of ranks.
        pub num_ranks: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SET_TRAP_HANDLER`.
    pub struct kfd_ioctl_set_trap_handler_args (24 bytes) {
        /// in: trap base address.
        pub tba_addr: u64,
        /// in: trap memory address.
        pub tma_addr: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_ACQUIRE_VM`.
    pub struct kfd_ioctl_acquire_vm_args (8 bytes) {
        /// in: an open DRM render-node fd of the GPU.
        pub drm_fd: u32,
        /// in: the GPU.
        pub gpu_id: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`.
    pub struct kfd_ioctl_alloc_memory_of_gpu_args (40 bytes) {
        /// in: VA the buffer will have on every GPU.
        pub va_addr: u64,
        /// in: size in bytes.
        pub size: u64,
        /// out: handle, `(gpu_id << 32) | idr handle`.
        pub handle: u64,
        /// in (USERPTR): the CPU address; out: render-node mmap offset.
        pub mmap_offset: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// in: `KFD_IOC_ALLOC_MEM_FLAGS_*`.
        pub flags: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_FREE_MEMORY_OF_GPU`.
    pub struct kfd_ioctl_free_memory_of_gpu_args (8 bytes) {
        /// in: handle from ALLOC.
        pub handle: u64,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_MAP_MEMORY_TO_GPU`.
    pub struct kfd_ioctl_map_memory_to_gpu_args (24 bytes) {
        /// in: handle from ALLOC.
        pub handle: u64,
        /// in: VA of a `u32` array of GPU ids.
        pub device_ids_array_ptr: u64,
        /// in: entries in the array.
        pub n_devices: u32,
        /// in/out: devices done so far (start with 0; equals `n_devices` on success).
        pub n_success: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU`.
    pub struct kfd_ioctl_unmap_memory_from_gpu_args (24 bytes) {
        /// in: handle from ALLOC.
        pub handle: u64,
        /// in: VA of a `u32` array of GPU ids.
        pub device_ids_array_ptr: u64,
        /// in: entries in the array.
        pub n_devices: u32,
        /// in/out: devices done so far.
        pub n_success: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_ALLOC_QUEUE_GWS`.
    pub struct kfd_ioctl_alloc_queue_gws_args (16 bytes) {
        /// in: the queue.
        pub queue_id: u32,
        /// in: GWS entries wanted.
        pub num_gws: u32,
        /// out: first entry allocated.
        pub first_gws: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_GET_DMABUF_INFO`.
    pub struct kfd_ioctl_get_dmabuf_info_args (32 bytes) {
        /// out: buffer size.
        pub size: u64,
        /// in: VA for the metadata.
        pub metadata_ptr: u64,
        /// in: space provided; out: metadata size.
        pub metadata_size: u32,
        /// out: the GPU.
        pub gpu_id: u32,
        /// out: `KFD_IOC_ALLOC_MEM_FLAGS_*`.
        pub flags: u32,
        /// in: the dma-buf fd.
        pub dmabuf_fd: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_IMPORT_DMABUF`.
    pub struct kfd_ioctl_import_dmabuf_args (24 bytes) {
        /// in: VA to place the buffer at.
        pub va_addr: u64,
        /// out: handle.
        pub handle: u64,
        /// in: the GPU.
        pub gpu_id: u32,
        /// in: the dma-buf fd.
        pub dmabuf_fd: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_EXPORT_DMABUF` (1.12).
    pub struct kfd_ioctl_export_dmabuf_args (16 bytes) {
        /// in: handle from ALLOC.
        pub handle: u64,
        /// in: fd flags.
        pub flags: u32,
        /// out: the new dma-buf fd.
        pub dmabuf_fd: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SMI_EVENTS`.
    pub struct kfd_ioctl_smi_events_args (8 bytes) {
        /// in: the GPU.
        pub gpuid: u32,
        /// out: anonymous fd delivering SMI event lines.
        pub anon_fd: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_CRIU_OP`.
    pub struct kfd_ioctl_criu_args (56 bytes) {
        /// in/out: VA of a [`kfd_criu_device_bucket`] array (CHECKPOINT, RESTORE).
        pub devices: u64,
        /// in/out: VA of a [`kfd_criu_bo_bucket`] array (CHECKPOINT, RESTORE).
        pub bos: u64,
        /// in/out: VA of the private data (CHECKPOINT, RESTORE).
        pub priv_data: u64,
        /// in/out: size of the private data.
        pub priv_data_size: u64,
        /// in/out: number of GPUs.
        pub num_devices: u32,
        /// in/out: number of BOs.
        pub num_bos: u32,
        /// in/out: number of opaque objects.
        pub num_objects: u32,
        /// in/out: pid of the target process.
        pub pid: u32,
        /// in: `KFD_CRIU_OP_*`.
        pub op: u32,
        /// The 4 bytes of tail padding C adds implicitly (no C member of this name).
        pub tail_pad: u32,
    }
}

abi_struct! {
    /// One GPU in a CRIU image.
    pub struct kfd_criu_device_bucket (16 bytes) {
        /// GPU id the process saw.
        pub user_gpu_id: u32,
        /// GPU id on the restoring machine.
        pub actual_gpu_id: u32,
        /// Render-node fd.
        pub drm_fd: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// One buffer in a CRIU image.
    pub struct kfd_criu_bo_bucket (48 bytes) {
        /// VA.
        pub addr: u64,
        /// Size.
        pub size: u64,
        /// mmap offset.
        pub offset: u64,
        /// mmap offset after restore.
        pub restored_offset: u64,
        /// The user GPU id.
        pub gpu_id: u32,
        /// `KFD_IOC_ALLOC_MEM_FLAGS_*`.
        pub alloc_flags: u32,
        /// dma-buf fd.
        pub dmabuf_fd: u32,
        /// Padding.
        pub pad: u32,
    }
}

abi_struct! {
    /// One SVM attribute: a type and its value.
    pub struct kfd_ioctl_svm_attribute (8 bytes) {
        /// `KFD_IOCTL_SVM_ATTR_*`.
        pub r#type: u32,
        /// Meaning depends on the type.
        pub value: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SVM` header; `nattr` [`kfd_ioctl_svm_attribute`]s follow it in memory.
    pub struct kfd_ioctl_svm_args (24 bytes) {
        /// in: start of the range.
        pub start_addr: u64,
        /// in: size of the range.
        pub size: u64,
        /// in: `KFD_IOCTL_SVM_OP_*`.
        pub op: u32,
        /// in: number of attributes following.
        pub nattr: u32,
        /// The flexible array member (zero-sized here).
        pub attrs: [kfd_ioctl_svm_attribute; 0],
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SET_XNACK_MODE`.
    pub struct kfd_ioctl_set_xnack_mode_args (4 bytes) {
        /// in: 0 off, >0 on, <0 query; out: the current mode.
        pub xnack_enabled: i32,
    }
}
