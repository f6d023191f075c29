//! Bytes from outside (an ioctl argument, a dump) become ABI structs only through zerocopy,
//! which reports a wrong length or alignment as an error — never a panic or an out-of-bounds
//! read. Checked for every struct of both generations.

use kfd_sys::*;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// A buffer aligned for any ABI struct, so that misalignment is only what a test makes it.
#[repr(C, align(16))]
struct Aligned([u8; 512]);

fn check<
    T: FromBytes + IntoBytes + KnownLayout + Immutable + AbiLayout + PartialEq + core::fmt::Debug,
>() {
    let size = T::ABI_LAYOUT.size;
    let mut buf = Aligned([0; 512]);
    for (i, b) in buf.0.iter_mut().enumerate() {
        *b = i as u8;
    }
    let bytes = &buf.0[..];

    // Exact size, aligned: ok, and the bytes round-trip.
    let value = T::read_from_bytes(&bytes[..size]).expect("exact size");
    assert_eq!(value.as_bytes(), &bytes[..size]);
    let by_ref = T::ref_from_bytes(&bytes[..size]).expect("aligned");
    assert_eq!(by_ref, &value);

    // Short or long: an error.
    if size > 0 {
        assert!(
            T::read_from_bytes(&bytes[..size - 1]).is_err(),
            "{} short",
            T::ABI_LAYOUT.name
        );
        assert!(T::ref_from_bytes(&bytes[..size - 1]).is_err());
        assert!(T::read_from_bytes(&[]).is_err());
    }
    assert!(
        T::read_from_bytes(&bytes[..size + 1]).is_err(),
        "{} long",
        T::ABI_LAYOUT.name
    );

    // Misaligned: a by-reference view is refused, a copy still works.
    if T::ABI_LAYOUT.align > 1 {
        assert!(
            T::ref_from_bytes(&bytes[1..size + 1]).is_err(),
            "{} misaligned",
            T::ABI_LAYOUT.name
        );
        assert!(T::read_from_bytes(&bytes[1..size + 1]).is_ok());
    }

    // A prefix read consumes exactly the struct.
    let (_, rest) = T::read_from_prefix(&bytes[..size + 3]).expect("prefix");
    assert_eq!(rest.len(), 3);
}

macro_rules! check_all {
    ($($ty:ty),* $(,)?) => {{
        let mut n = 0;
        $( check::<$ty>(); n += 1; )*
        n
    }};
}

#[test]
fn short_long_and_misaligned_bytes_are_errors() {
    let n = check_all![
        kfd_ioctl_get_version_args,
        kfd_ioctl_create_queue_args,
        kfd_ioctl_destroy_queue_args,
        kfd_ioctl_update_queue_args,
        kfd_ioctl_set_cu_mask_args,
        kfd_ioctl_get_queue_wave_state_args,
        kfd_ioctl_get_available_memory_args,
        kfd_dbg_device_info_entry,
        kfd_ioctl_set_memory_policy_args,
        kfd_ioctl_get_clock_counters_args,
        kfd_process_device_apertures,
        kfd_ioctl_get_process_apertures_args,
        kfd_ioctl_get_process_apertures_new_args,
        kfd_ioctl_dbg_register_args,
        kfd_ioctl_dbg_unregister_args,
        kfd_ioctl_dbg_address_watch_args,
        kfd_ioctl_dbg_wave_control_args,
        kfd_ioctl_create_event_args,
        kfd_ioctl_destroy_event_args,
        kfd_ioctl_set_event_args,
        kfd_ioctl_reset_event_args,
        kfd_memory_exception_failure,
        kfd_hsa_memory_exception_data,
        kfd_hsa_hw_exception_data,
        kfd_hsa_signal_event_data,
        kfd_event_data,
        kfd_ioctl_wait_events_args,
        kfd_ioctl_set_scratch_backing_va_args,
        kfd_ioctl_get_tile_config_args,
        kfd_ioctl_set_trap_handler_args,
        kfd_ioctl_acquire_vm_args,
        kfd_ioctl_alloc_memory_of_gpu_args,
        kfd_ioctl_free_memory_of_gpu_args,
        kfd_ioctl_map_memory_to_gpu_args,
        kfd_ioctl_unmap_memory_from_gpu_args,
        kfd_ioctl_alloc_queue_gws_args,
        kfd_ioctl_get_dmabuf_info_args,
        kfd_ioctl_import_dmabuf_args,
        kfd_ioctl_export_dmabuf_args,
        kfd_ioctl_smi_events_args,
        kfd_ioctl_criu_args,
        kfd_criu_device_bucket,
        kfd_criu_bo_bucket,
        kfd_ioctl_svm_attribute,
        kfd_ioctl_svm_args,
        kfd_ioctl_set_xnack_mode_args,
        kfd_runtime_info,
        kfd_ioctl_runtime_enable_args,
        kfd_queue_snapshot_entry,
        kfd_context_save_area_header_wave_state,
        kfd_context_save_area_header,
        kfd_ioctl_dbg_trap_enable_args,
        kfd_ioctl_dbg_trap_send_runtime_event_args,
        kfd_ioctl_dbg_trap_set_exceptions_enabled_args,
        kfd_ioctl_dbg_trap_set_wave_launch_override_args,
        kfd_ioctl_dbg_trap_set_wave_launch_mode_args,
        kfd_ioctl_dbg_trap_suspend_queues_args,
        kfd_ioctl_dbg_trap_resume_queues_args,
        kfd_ioctl_dbg_trap_set_node_address_watch_args,
        kfd_ioctl_dbg_trap_clear_node_address_watch_args,
        kfd_ioctl_dbg_trap_set_flags_args,
        kfd_ioctl_dbg_trap_query_debug_event_args,
        kfd_ioctl_dbg_trap_query_exception_info_args,
        kfd_ioctl_dbg_trap_queue_snapshot_args,
        kfd_ioctl_dbg_trap_device_snapshot_args,
        kfd_ioctl_dbg_trap_args,
        v1_8::kfd_ioctl_create_queue_args,
        v1_8::kfd_ioctl_dbg_trap_args,
        v1_8::kfd_ioctl_ipc_export_handle_args,
        v1_8::kfd_ioctl_ipc_import_handle_args,
        v1_8::kfd_memory_range,
        v1_8::kfd_ioctl_cross_memory_copy_args,
        v1_8::kfd_ioctl_spm_args,
        v1_8::kfd_queue_snapshot_entry,
        v1_8::kfd_dbg_device_info_entry,
    ];
    // Every struct of both generations is in the list above.
    assert_eq!(n, ALL_STRUCTS.len() + v1_8::STRUCTS.len());
}
