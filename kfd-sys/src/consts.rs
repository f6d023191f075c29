//! Constants, flags and enumerators of `linux/kfd_ioctl.h` (interface 1.18), typed as the
//! fields that carry them.

/// Interface major version reported by `GET_VERSION`.
pub const KFD_IOCTL_MAJOR_VERSION: u32 = 1;
/// Interface minor version this crate spells (1.18: `misc_process_flag`).
pub const KFD_IOCTL_MINOR_VERSION: u32 = 18;

// --- queues ---------------------------------------------------------------------------------

/// PM4 compute queue (write pointer in dwords).
pub const KFD_IOC_QUEUE_TYPE_COMPUTE: u32 = 0x0;
/// SDMA queue (write pointer in bytes), engine chosen by the driver.
pub const KFD_IOC_QUEUE_TYPE_SDMA: u32 = 0x1;
/// AQL compute queue (write pointer in 64-byte packets).
pub const KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: u32 = 0x2;
/// SDMA queue on an xGMI engine.
pub const KFD_IOC_QUEUE_TYPE_SDMA_XGMI: u32 = 0x3;
/// SDMA queue on the engine given in `sdma_engine_id` (1.17).
pub const KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID: u32 = 0x4;

/// Largest `queue_percentage`.
pub const KFD_MAX_QUEUE_PERCENTAGE: u32 = 100;
/// Largest `queue_priority`.
pub const KFD_MAX_QUEUE_PRIORITY: u32 = 15;
/// Smallest ring size; smaller sizes are silently raised to it.
pub const KFD_MIN_QUEUE_RING_SIZE: u32 = 1024;

// --- memory policy --------------------------------------------------------------------------

/// Coherent cache policy.
pub const KFD_IOC_CACHE_POLICY_COHERENT: u32 = 0;
/// Non-coherent cache policy.
pub const KFD_IOC_CACHE_POLICY_NONCOHERENT: u32 = 1;
/// `misc_process_flag`: high-precision MFMA (gfx9.5 only, 1.18).
pub const KFD_PROC_FLAG_MFMA_HIGH_PRECISION: u32 = 1 << 0;

/// GPUs in the deprecated `GET_PROCESS_APERTURES`.
pub const NUM_OF_SUPPORTED_GPUS: u32 = 7;

/// Old debugger API limit.
pub const MAX_ALLOWED_NUM_POINTS: u32 = 100;
/// Old debugger API limit.
pub const MAX_ALLOWED_AW_BUFF_SIZE: u32 = 4096;
/// Old debugger API limit.
pub const MAX_ALLOWED_WAC_BUFF_SIZE: u32 = 128;

/// An invalid file descriptor in `u32` fields.
pub const KFD_INVALID_FD: u32 = 0xffff_ffff;

// --- events ---------------------------------------------------------------------------------

/// Signal event: consumes a slot of the event page.
pub const KFD_IOC_EVENT_SIGNAL: u32 = 0;
/// Topology change.
pub const KFD_IOC_EVENT_NODECHANGE: u32 = 1;
/// Device state change.
pub const KFD_IOC_EVENT_DEVICESTATECHANGE: u32 = 2;
/// Hardware exception (GPU reset).
pub const KFD_IOC_EVENT_HW_EXCEPTION: u32 = 3;
/// System event.
pub const KFD_IOC_EVENT_SYSTEM_EVENT: u32 = 4;
/// Debug event: consumes a slot like a signal event.
pub const KFD_IOC_EVENT_DEBUG_EVENT: u32 = 5;
/// Profile event.
pub const KFD_IOC_EVENT_PROFILE_EVENT: u32 = 6;
/// Queue event.
pub const KFD_IOC_EVENT_QUEUE_EVENT: u32 = 7;
/// Memory exception (GPU VM fault).
pub const KFD_IOC_EVENT_MEMORY: u32 = 8;

/// `WAIT_EVENTS` completed.
pub const KFD_IOC_WAIT_RESULT_COMPLETE: u32 = 0;
/// `WAIT_EVENTS` timed out.
pub const KFD_IOC_WAIT_RESULT_TIMEOUT: u32 = 1;
/// `WAIT_EVENTS` failed (an event was destroyed).
pub const KFD_IOC_WAIT_RESULT_FAIL: u32 = 2;

/// Slots of the event page (8 bytes each: 32 KiB).
pub const KFD_SIGNAL_EVENT_LIMIT: u32 = 4096;

/// `hw_exception_data.reset_type`: the whole GPU was reset.
pub const KFD_HW_EXCEPTION_WHOLE_GPU_RESET: u32 = 0;
/// `hw_exception_data.reset_type`: one engine was reset.
pub const KFD_HW_EXCEPTION_PER_ENGINE_RESET: u32 = 1;
/// `hw_exception_data.reset_cause`: GPU hang.
pub const KFD_HW_EXCEPTION_GPU_HANG: u32 = 0;
/// `hw_exception_data.reset_cause`: ECC error.
pub const KFD_HW_EXCEPTION_ECC: u32 = 1;

/// `memory_exception_data.ErrorType`: no RAS error.
pub const KFD_MEM_ERR_NO_RAS: u32 = 0;
/// `memory_exception_data.ErrorType`: SRAM ECC.
pub const KFD_MEM_ERR_SRAM_ECC: u32 = 1;
/// `memory_exception_data.ErrorType`: poison consumed.
pub const KFD_MEM_ERR_POISON_CONSUMED: u32 = 2;
/// `memory_exception_data.ErrorType`: GPU hang.
pub const KFD_MEM_ERR_GPU_HANG: u32 = 3;

// --- memory allocation flags ----------------------------------------------------------------

/// Device-local memory.
pub const KFD_IOC_ALLOC_MEM_FLAGS_VRAM: u32 = 1 << 0;
/// System memory mapped through the GART.
pub const KFD_IOC_ALLOC_MEM_FLAGS_GTT: u32 = 1 << 1;
/// Existing user memory (`mmap_offset` carries its CPU address).
pub const KFD_IOC_ALLOC_MEM_FLAGS_USERPTR: u32 = 1 << 2;
/// The process doorbell page.
pub const KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL: u32 = 1 << 3;
/// The MMIO remap (HDP flush) page.
pub const KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP: u32 = 1 << 4;
/// GPU-writable.
pub const KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE: u32 = 1 << 31;
/// GPU-executable.
pub const KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE: u32 = 1 << 30;
/// CPU-visible VRAM.
pub const KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC: u32 = 1 << 29;
/// Do not substitute another memory type.
pub const KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE: u32 = 1 << 28;
/// Memory for AQL queue rings (double mapped).
pub const KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM: u32 = 1 << 27;
/// Fine-grained coherent.
pub const KFD_IOC_ALLOC_MEM_FLAGS_COHERENT: u32 = 1 << 26;
/// Uncached.
pub const KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED: u32 = 1 << 25;
/// Coherent with device-scope atomics.
pub const KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT: u32 = 1 << 24;
/// Physically contiguous VRAM (1.16).
pub const KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS: u32 = 1 << 23;

// --- SMI events -----------------------------------------------------------------------------

/// Not used.
pub const KFD_SMI_EVENT_NONE: u32 = 0;
/// GPU VM fault.
pub const KFD_SMI_EVENT_VMFAULT: u32 = 1;
/// Thermal throttling.
pub const KFD_SMI_EVENT_THERMAL_THROTTLE: u32 = 2;
/// Before a GPU reset.
pub const KFD_SMI_EVENT_GPU_PRE_RESET: u32 = 3;
/// After a GPU reset.
pub const KFD_SMI_EVENT_GPU_POST_RESET: u32 = 4;
/// Page migration started.
pub const KFD_SMI_EVENT_MIGRATE_START: u32 = 5;
/// Page migration ended.
pub const KFD_SMI_EVENT_MIGRATE_END: u32 = 6;
/// GPU page fault started.
pub const KFD_SMI_EVENT_PAGE_FAULT_START: u32 = 7;
/// GPU page fault ended.
pub const KFD_SMI_EVENT_PAGE_FAULT_END: u32 = 8;
/// Queues evicted.
pub const KFD_SMI_EVENT_QUEUE_EVICTION: u32 = 9;
/// Queues restored.
pub const KFD_SMI_EVENT_QUEUE_RESTORE: u32 = 10;
/// Range unmapped from the GPU.
pub const KFD_SMI_EVENT_UNMAP_FROM_GPU: u32 = 11;
/// A process opened KFD.
pub const KFD_SMI_EVENT_PROCESS_START: u32 = 12;
/// A process closed KFD.
pub const KFD_SMI_EVENT_PROCESS_END: u32 = 13;
/// Flag: events of all processes (needs privilege).
pub const KFD_SMI_EVENT_ALL_PROCESS: u32 = 64;

/// `KFD_SMI_EVENT_MASK_FROM_INDEX(i)`: the mask bit of SMI event `i` (`i ≥ 1`).
pub const fn KFD_SMI_EVENT_MASK_FROM_INDEX(i: u32) -> u64 {
    1u64 << (i.wrapping_sub(1) & 63)
}
/// Maximum length of one SMI event line.
pub const KFD_SMI_EVENT_MSG_SIZE: u32 = 96;

/// Migration reason: prefetch.
pub const KFD_MIGRATE_TRIGGER_PREFETCH: u32 = 0;
/// Migration reason: GPU page fault.
pub const KFD_MIGRATE_TRIGGER_PAGEFAULT_GPU: u32 = 1;
/// Migration reason: CPU page fault.
pub const KFD_MIGRATE_TRIGGER_PAGEFAULT_CPU: u32 = 2;
/// Migration reason: TTM eviction.
pub const KFD_MIGRATE_TRIGGER_TTM_EVICTION: u32 = 3;

/// Eviction reason: SVM migration.
pub const KFD_QUEUE_EVICTION_TRIGGER_SVM: u32 = 0;
/// Eviction reason: userptr movement.
pub const KFD_QUEUE_EVICTION_TRIGGER_USERPTR: u32 = 1;
/// Eviction reason: TTM buffer move.
pub const KFD_QUEUE_EVICTION_TRIGGER_TTM: u32 = 2;
/// Eviction reason: suspend.
pub const KFD_QUEUE_EVICTION_TRIGGER_SUSPEND: u32 = 3;
/// Eviction reason: CRIU checkpoint.
pub const KFD_QUEUE_EVICTION_CRIU_CHECKPOINT: u32 = 4;
/// Eviction reason: CRIU restore.
pub const KFD_QUEUE_EVICTION_CRIU_RESTORE: u32 = 5;

/// Unmap reason: MMU notifier.
pub const KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY: u32 = 0;
/// Unmap reason: MMU notifier during migration.
pub const KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE: u32 = 1;
/// Unmap reason: CPU unmap.
pub const KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU: u32 = 2;

// --- CRIU -----------------------------------------------------------------------------------

/// Query process information (pauses the process).
pub const KFD_CRIU_OP_PROCESS_INFO: u32 = 0;
/// Checkpoint.
pub const KFD_CRIU_OP_CHECKPOINT: u32 = 1;
/// Resume after PROCESS_INFO.
pub const KFD_CRIU_OP_UNPAUSE: u32 = 2;
/// Restore.
pub const KFD_CRIU_OP_RESTORE: u32 = 3;
/// Start the restored process.
pub const KFD_CRIU_OP_RESUME: u32 = 4;

// --- MMIO remap page ------------------------------------------------------------------------

/// Offset of `HDP_MEM_FLUSH_CNTL` in the MMIO remap page.
pub const KFD_MMIO_REMAP_HDP_MEM_FLUSH_CNTL: u32 = 0;
/// Offset of `HDP_REG_FLUSH_CNTL` in the MMIO remap page.
pub const KFD_MMIO_REMAP_HDP_REG_FLUSH_CNTL: u32 = 4;

// --- SVM ------------------------------------------------------------------------------------

/// Host access guaranteed.
pub const KFD_IOCTL_SVM_FLAG_HOST_ACCESS: u32 = 0x0000_0001;
/// Fine-grained coherence.
pub const KFD_IOCTL_SVM_FLAG_COHERENT: u32 = 0x0000_0002;
/// Any GPU of the hive may be the preferred location.
pub const KFD_IOCTL_SVM_FLAG_HIVE_LOCAL: u32 = 0x0000_0004;
/// GPUs only read.
pub const KFD_IOCTL_SVM_FLAG_GPU_RO: u32 = 0x0000_0008;
/// GPU may execute.
pub const KFD_IOCTL_SVM_FLAG_GPU_EXEC: u32 = 0x0000_0010;
/// GPUs mostly read.
pub const KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY: u32 = 0x0000_0020;
/// Keep the GPU mapping valid as if XNACK were off (1.11).
pub const KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED: u32 = 0x0000_0040;
/// Coherence with device-scope atomics.
pub const KFD_IOCTL_SVM_FLAG_EXT_COHERENT: u32 = 0x0000_0080;

/// Set attributes.
pub const KFD_IOCTL_SVM_OP_SET_ATTR: u32 = 0;
/// Get attributes.
pub const KFD_IOCTL_SVM_OP_GET_ATTR: u32 = 1;

/// Location: system memory.
pub const KFD_IOCTL_SVM_LOCATION_SYSMEM: u32 = 0;
/// Location: undefined.
pub const KFD_IOCTL_SVM_LOCATION_UNDEFINED: u32 = 0xffff_ffff;

/// Attribute: preferred location (GPU id, 0 = system).
pub const KFD_IOCTL_SVM_ATTR_PREFERRED_LOC: u32 = 0;
/// Attribute: prefetch location.
pub const KFD_IOCTL_SVM_ATTR_PREFETCH_LOC: u32 = 1;
/// Attribute: GPU may access.
pub const KFD_IOCTL_SVM_ATTR_ACCESS: u32 = 2;
/// Attribute: GPU may access in place.
pub const KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE: u32 = 3;
/// Attribute: GPU may not access.
pub const KFD_IOCTL_SVM_ATTR_NO_ACCESS: u32 = 4;
/// Attribute: flags to set.
pub const KFD_IOCTL_SVM_ATTR_SET_FLAGS: u32 = 5;
/// Attribute: flags to clear.
pub const KFD_IOCTL_SVM_ATTR_CLR_FLAGS: u32 = 6;
/// Attribute: migration granularity (log2 pages).
pub const KFD_IOCTL_SVM_ATTR_GRANULARITY: u32 = 7;

// --- debugger (1.13) ------------------------------------------------------------------------

/// Wave launch override: OR with the current mask.
pub const KFD_DBG_TRAP_OVERRIDE_OR: u32 = 0;
/// Wave launch override: replace the current mask.
pub const KFD_DBG_TRAP_OVERRIDE_REPLACE: u32 = 1;

/// Trap on invalid FP operation.
pub const KFD_DBG_TRAP_MASK_FP_INVALID: u32 = 1;
/// Trap on denormal FP input.
pub const KFD_DBG_TRAP_MASK_FP_INPUT_DENORMAL: u32 = 2;
/// Trap on FP divide by zero.
pub const KFD_DBG_TRAP_MASK_FP_DIVIDE_BY_ZERO: u32 = 4;
/// Trap on FP overflow.
pub const KFD_DBG_TRAP_MASK_FP_OVERFLOW: u32 = 8;
/// Trap on FP underflow.
pub const KFD_DBG_TRAP_MASK_FP_UNDERFLOW: u32 = 16;
/// Trap on inexact FP result.
pub const KFD_DBG_TRAP_MASK_FP_INEXACT: u32 = 32;
/// Trap on integer divide by zero.
pub const KFD_DBG_TRAP_MASK_INT_DIVIDE_BY_ZERO: u32 = 64;
/// Trap on address watch.
pub const KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH: u32 = 128;
/// Trap on memory violation.
pub const KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION: u32 = 256;
/// Trap when a wave starts.
pub const KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START: u32 = 1 << 30;
/// Trap when a wave ends.
pub const KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END: u32 = 1 << 31;

/// Waves launch normally.
pub const KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL: u32 = 0;
/// Waves launch halted.
pub const KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT: u32 = 1;
/// Waves launch in debug mode.
pub const KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG: u32 = 3;

/// Watch reads.
pub const KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ: u32 = 0;
/// Watch non-reads.
pub const KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD: u32 = 1;
/// Watch atomics.
pub const KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC: u32 = 2;
/// Watch all accesses.
pub const KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL: u32 = 3;

/// Precise memory operations.
pub const KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP: u32 = 1;
/// Precise ALU operations.
pub const KFD_DBG_TRAP_FLAG_SINGLE_ALU_OP: u32 = 2;

/// No exception.
pub const EC_NONE: u32 = 0;
/// Queue: wave aborted.
pub const EC_QUEUE_WAVE_ABORT: u32 = 1;
/// Queue: wave trap.
pub const EC_QUEUE_WAVE_TRAP: u32 = 2;
/// Queue: math error.
pub const EC_QUEUE_WAVE_MATH_ERROR: u32 = 3;
/// Queue: illegal instruction.
pub const EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION: u32 = 4;
/// Queue: memory violation.
pub const EC_QUEUE_WAVE_MEMORY_VIOLATION: u32 = 5;
/// Queue: aperture violation.
pub const EC_QUEUE_WAVE_APERTURE_VIOLATION: u32 = 6;
/// Packet: invalid dispatch dimensions.
pub const EC_QUEUE_PACKET_DISPATCH_DIM_INVALID: u32 = 16;
/// Packet: invalid group segment size.
pub const EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID: u32 = 17;
/// Packet: invalid code object.
pub const EC_QUEUE_PACKET_DISPATCH_CODE_INVALID: u32 = 18;
/// Packet: reserved packet type.
pub const EC_QUEUE_PACKET_RESERVED: u32 = 19;
/// Packet: unsupported packet.
pub const EC_QUEUE_PACKET_UNSUPPORTED: u32 = 20;
/// Packet: invalid work-group size.
pub const EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID: u32 = 21;
/// Packet: invalid register setup.
pub const EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID: u32 = 22;
/// Packet: unsupported vendor packet.
pub const EC_QUEUE_PACKET_VENDOR_UNSUPPORTED: u32 = 23;
/// Queue: preemption failed.
pub const EC_QUEUE_PREEMPTION_ERROR: u32 = 30;
/// Queue: new queue created.
pub const EC_QUEUE_NEW: u32 = 31;
/// Device: queue deleted.
pub const EC_DEVICE_QUEUE_DELETE: u32 = 32;
/// Device: memory violation.
pub const EC_DEVICE_MEMORY_VIOLATION: u32 = 33;
/// Device: RAS error.
pub const EC_DEVICE_RAS_ERROR: u32 = 34;
/// Device: fatal halt.
pub const EC_DEVICE_FATAL_HALT: u32 = 35;
/// Device: new device.
pub const EC_DEVICE_NEW: u32 = 36;
/// Process: runtime event.
pub const EC_PROCESS_RUNTIME: u32 = 48;
/// Process: device removed.
pub const EC_PROCESS_DEVICE_REMOVE: u32 = 49;
/// One past the last exception code.
pub const EC_MAX: u32 = 50;

/// `KFD_EC_MASK(ecode)`: the mask bit of exception code `ecode` (`1 ≤ ecode < 65`).
pub const fn KFD_EC_MASK(ecode: u32) -> u64 {
    1u64 << (ecode.wrapping_sub(1) & 63)
}

/// Exception codes raised per queue.
pub const KFD_EC_MASK_QUEUE: u64 = KFD_EC_MASK(EC_QUEUE_WAVE_ABORT)
    | KFD_EC_MASK(EC_QUEUE_WAVE_TRAP)
    | KFD_EC_MASK(EC_QUEUE_WAVE_MATH_ERROR)
    | KFD_EC_MASK(EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION)
    | KFD_EC_MASK(EC_QUEUE_WAVE_MEMORY_VIOLATION)
    | KFD_EC_MASK(EC_QUEUE_WAVE_APERTURE_VIOLATION)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_DIM_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_CODE_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_RESERVED)
    | KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED)
    | KFD_EC_MASK(EC_QUEUE_PREEMPTION_ERROR)
    | KFD_EC_MASK(EC_QUEUE_NEW);
/// Exception codes raised per device.
pub const KFD_EC_MASK_DEVICE: u64 = KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE)
    | KFD_EC_MASK(EC_DEVICE_RAS_ERROR)
    | KFD_EC_MASK(EC_DEVICE_FATAL_HALT)
    | KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION)
    | KFD_EC_MASK(EC_DEVICE_NEW);
/// Exception codes raised per process.
pub const KFD_EC_MASK_PROCESS: u64 =
    KFD_EC_MASK(EC_PROCESS_RUNTIME) | KFD_EC_MASK(EC_PROCESS_DEVICE_REMOVE);
/// Exception codes that concern a packet.
pub const KFD_EC_MASK_PACKET: u64 = KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_DIM_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_CODE_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_RESERVED)
    | KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID)
    | KFD_EC_MASK(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED);

/// `KFD_DBG_EC_IS_VALID(ecode)`.
pub const fn KFD_DBG_EC_IS_VALID(ecode: u32) -> bool {
    ecode > EC_NONE && ecode < EC_MAX
}
/// `KFD_DBG_EC_TYPE_IS_QUEUE(ecode)`.
pub const fn KFD_DBG_EC_TYPE_IS_QUEUE(ecode: u32) -> bool {
    KFD_DBG_EC_IS_VALID(ecode) && KFD_EC_MASK(ecode) & KFD_EC_MASK_QUEUE != 0
}
/// `KFD_DBG_EC_TYPE_IS_DEVICE(ecode)`.
pub const fn KFD_DBG_EC_TYPE_IS_DEVICE(ecode: u32) -> bool {
    KFD_DBG_EC_IS_VALID(ecode) && KFD_EC_MASK(ecode) & KFD_EC_MASK_DEVICE != 0
}
/// `KFD_DBG_EC_TYPE_IS_PROCESS(ecode)`.
pub const fn KFD_DBG_EC_TYPE_IS_PROCESS(ecode: u32) -> bool {
    KFD_DBG_EC_IS_VALID(ecode) && KFD_EC_MASK(ecode) & KFD_EC_MASK_PROCESS != 0
}
/// `KFD_DBG_EC_TYPE_IS_PACKET(ecode)`.
pub const fn KFD_DBG_EC_TYPE_IS_PACKET(ecode: u32) -> bool {
    KFD_DBG_EC_IS_VALID(ecode) && KFD_EC_MASK(ecode) & KFD_EC_MASK_PACKET != 0
}

/// Runtime not enabled.
pub const DEBUG_RUNTIME_STATE_DISABLED: u32 = 0;
/// Runtime enabled.
pub const DEBUG_RUNTIME_STATE_ENABLED: u32 = 1;
/// Runtime enabled, busy.
pub const DEBUG_RUNTIME_STATE_ENABLED_BUSY: u32 = 2;
/// Runtime enabled, error.
pub const DEBUG_RUNTIME_STATE_ENABLED_ERROR: u32 = 3;

/// `RUNTIME_ENABLE` mode: enable.
pub const KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK: u32 = 1;
/// `RUNTIME_ENABLE` mode: set up trap temporaries.
pub const KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK: u32 = 2;

/// Bit set in a queue-id array entry when suspend/resume hit a hardware error.
pub const KFD_DBG_QUEUE_ERROR_BIT: u32 = 30;
/// Bit set in a queue-id array entry when the queue is invalid.
pub const KFD_DBG_QUEUE_INVALID_BIT: u32 = 31;
/// `1 << KFD_DBG_QUEUE_ERROR_BIT`.
pub const KFD_DBG_QUEUE_ERROR_MASK: u32 = 1 << KFD_DBG_QUEUE_ERROR_BIT;
/// `1 << KFD_DBG_QUEUE_INVALID_BIT`.
pub const KFD_DBG_QUEUE_INVALID_MASK: u32 = 1 << KFD_DBG_QUEUE_INVALID_BIT;

/// `DBG_TRAP` op: enable debugging.
pub const KFD_IOC_DBG_TRAP_ENABLE: u32 = 0;
/// `DBG_TRAP` op: disable debugging.
pub const KFD_IOC_DBG_TRAP_DISABLE: u32 = 1;
/// `DBG_TRAP` op: raise exceptions to the runtime.
pub const KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT: u32 = 2;
/// `DBG_TRAP` op: set the debugger's exception mask.
pub const KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED: u32 = 3;
/// `DBG_TRAP` op: wave launch trap override.
pub const KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE: u32 = 4;
/// `DBG_TRAP` op: wave launch mode.
pub const KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE: u32 = 5;
/// `DBG_TRAP` op: suspend queues.
pub const KFD_IOC_DBG_TRAP_SUSPEND_QUEUES: u32 = 6;
/// `DBG_TRAP` op: resume queues.
pub const KFD_IOC_DBG_TRAP_RESUME_QUEUES: u32 = 7;
/// `DBG_TRAP` op: set an address watch.
pub const KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH: u32 = 8;
/// `DBG_TRAP` op: clear an address watch.
pub const KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH: u32 = 9;
/// `DBG_TRAP` op: set wave flags.
pub const KFD_IOC_DBG_TRAP_SET_FLAGS: u32 = 10;
/// `DBG_TRAP` op: query raised exceptions.
pub const KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT: u32 = 11;
/// `DBG_TRAP` op: query exception details.
pub const KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO: u32 = 12;
/// `DBG_TRAP` op: snapshot queues.
pub const KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT: u32 = 13;
/// `DBG_TRAP` op: snapshot devices.
pub const KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT: u32 = 14;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_masks_classify_codes() {
        assert_eq!(KFD_EC_MASK(EC_QUEUE_WAVE_ABORT), 1);
        assert_eq!(KFD_EC_MASK(EC_PROCESS_DEVICE_REMOVE), 1 << 48);
        assert!(KFD_DBG_EC_TYPE_IS_QUEUE(EC_QUEUE_NEW));
        assert!(!KFD_DBG_EC_TYPE_IS_QUEUE(EC_DEVICE_NEW));
        assert!(KFD_DBG_EC_TYPE_IS_DEVICE(EC_DEVICE_MEMORY_VIOLATION));
        assert!(KFD_DBG_EC_TYPE_IS_PROCESS(EC_PROCESS_RUNTIME));
        assert!(KFD_DBG_EC_TYPE_IS_PACKET(EC_QUEUE_PACKET_UNSUPPORTED));
        assert!(!KFD_DBG_EC_IS_VALID(EC_NONE) && !KFD_DBG_EC_IS_VALID(EC_MAX));
        assert_eq!(KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_VMFAULT), 1);
        assert_eq!(
            KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_ALL_PROCESS),
            1 << 63
        );
    }

    #[test]
    fn alloc_flags_are_distinct_bits() {
        let flags = [
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
            KFD_IOC_ALLOC_MEM_FLAGS_GTT,
            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
            KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL,
            KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP,
            KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE,
            KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
            KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE,
            KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM,
            KFD_IOC_ALLOC_MEM_FLAGS_COHERENT,
            KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED,
            KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT,
            KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS,
        ];
        let all = flags.iter().fold(0u32, |acc, f| {
            assert_eq!(f.count_ones(), 1);
            assert_eq!(acc & f, 0, "{f:#x} repeated");
            acc | f
        });
        assert_eq!(all, 0xFF80_001F);
    }
}
