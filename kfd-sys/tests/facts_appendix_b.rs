//! Every struct layout of `amdkfd-facts.md` Appendix B (measured with gcc on the Linux 6.12
//! headers), checked against `kfd-sys`. This covers what the installed 1.11 header cannot:
//! the debugger API, `export_dmabuf`, `signal_event_data`, the 96-byte `create_queue_args`.
//! Offsets listed there for union members and unnamed members are checked through the
//! `kfd-sys` field that holds them.

use kfd_sys::{AbiLayout, StructLayout, ALL_STRUCTS};

/// A struct as Appendix B lists it: name, size in bytes, (offset, field) pairs.
type FactsRow = (&'static str, usize, &'static [(usize, &'static str)]);

const APPENDIX_B: &[FactsRow] = &[
    (
        "kfd_ioctl_get_version_args",
        8,
        &[(0, "major_version"), (4, "minor_version")],
    ),
    (
        "kfd_ioctl_create_queue_args",
        96,
        &[
            (0, "ring_base_address"),
            (8, "write_pointer_address"),
            (16, "read_pointer_address"),
            (24, "doorbell_offset"),
            (32, "ring_size"),
            (36, "gpu_id"),
            (40, "queue_type"),
            (44, "queue_percentage"),
            (48, "queue_priority"),
            (52, "queue_id"),
            (56, "eop_buffer_address"),
            (64, "eop_buffer_size"),
            (72, "ctx_save_restore_address"),
            (80, "ctx_save_restore_size"),
            (84, "ctl_stack_size"),
            (88, "sdma_engine_id"),
            (92, "pad"),
        ],
    ),
    (
        "kfd_ioctl_destroy_queue_args",
        8,
        &[(0, "queue_id"), (4, "pad")],
    ),
    (
        "kfd_ioctl_update_queue_args",
        24,
        &[
            (0, "ring_base_address"),
            (8, "queue_id"),
            (12, "ring_size"),
            (16, "queue_percentage"),
            (20, "queue_priority"),
        ],
    ),
    (
        "kfd_ioctl_set_cu_mask_args",
        16,
        &[(0, "queue_id"), (4, "num_cu_mask"), (8, "cu_mask_ptr")],
    ),
    (
        "kfd_ioctl_get_queue_wave_state_args",
        24,
        &[
            (0, "ctl_stack_address"),
            (8, "ctl_stack_used_size"),
            (12, "save_area_used_size"),
            (16, "queue_id"),
            (20, "pad"),
        ],
    ),
    (
        "kfd_ioctl_get_available_memory_args",
        16,
        &[(0, "available"), (8, "gpu_id"), (12, "pad")],
    ),
    (
        "kfd_dbg_device_info_entry",
        120,
        &[
            (0, "exception_status"),
            (8, "lds_base"),
            (16, "lds_limit"),
            (24, "scratch_base"),
            (32, "scratch_limit"),
            (40, "gpuvm_base"),
            (48, "gpuvm_limit"),
            (56, "gpu_id"),
            (60, "location_id"),
            (64, "vendor_id"),
            (68, "device_id"),
            (72, "revision_id"),
            (76, "subsystem_vendor_id"),
            (80, "subsystem_device_id"),
            (84, "fw_version"),
            (88, "gfx_target_version"),
            (92, "simd_count"),
            (96, "max_waves_per_simd"),
            (100, "array_count"),
            (104, "simd_arrays_per_engine"),
            (108, "num_xcc"),
            (112, "capability"),
            (116, "debug_prop"),
        ],
    ),
    (
        "kfd_ioctl_set_memory_policy_args",
        32,
        &[
            (0, "alternate_aperture_base"),
            (8, "alternate_aperture_size"),
            (16, "gpu_id"),
            (20, "default_policy"),
            (24, "alternate_policy"),
            (28, "pad"),
        ],
    ),
    (
        "kfd_ioctl_get_clock_counters_args",
        40,
        &[
            (0, "gpu_clock_counter"),
            (8, "cpu_clock_counter"),
            (16, "system_clock_counter"),
            (24, "system_clock_freq"),
            (32, "gpu_id"),
            (36, "pad"),
        ],
    ),
    (
        "kfd_process_device_apertures",
        56,
        &[
            (0, "lds_base"),
            (8, "lds_limit"),
            (16, "scratch_base"),
            (24, "scratch_limit"),
            (32, "gpuvm_base"),
            (40, "gpuvm_limit"),
            (48, "gpu_id"),
            (52, "pad"),
        ],
    ),
    (
        "kfd_ioctl_get_process_apertures_args",
        400,
        &[
            (0, "process_apertures"),
            (392, "num_of_nodes"),
            (396, "pad"),
        ],
    ),
    (
        "kfd_ioctl_get_process_apertures_new_args",
        16,
        &[
            (0, "kfd_process_device_apertures_ptr"),
            (8, "num_of_nodes"),
            (12, "pad"),
        ],
    ),
    (
        "kfd_ioctl_dbg_register_args",
        8,
        &[(0, "gpu_id"), (4, "pad")],
    ),
    (
        "kfd_ioctl_dbg_unregister_args",
        8,
        &[(0, "gpu_id"), (4, "pad")],
    ),
    (
        "kfd_ioctl_dbg_address_watch_args",
        16,
        &[(0, "content_ptr"), (8, "gpu_id"), (12, "buf_size_in_bytes")],
    ),
    (
        "kfd_ioctl_dbg_wave_control_args",
        16,
        &[(0, "content_ptr"), (8, "gpu_id"), (12, "buf_size_in_bytes")],
    ),
    (
        "kfd_ioctl_create_event_args",
        32,
        &[
            (0, "event_page_offset"),
            (8, "event_trigger_data"),
            (12, "event_type"),
            (16, "auto_reset"),
            (20, "node_id"),
            (24, "event_id"),
            (28, "event_slot_index"),
        ],
    ),
    (
        "kfd_ioctl_destroy_event_args",
        8,
        &[(0, "event_id"), (4, "pad")],
    ),
    (
        "kfd_ioctl_set_event_args",
        8,
        &[(0, "event_id"), (4, "pad")],
    ),
    (
        "kfd_ioctl_reset_event_args",
        8,
        &[(0, "event_id"), (4, "pad")],
    ),
    (
        "kfd_memory_exception_failure",
        16,
        &[
            (0, "NotPresent"),
            (4, "ReadOnly"),
            (8, "NoExecute"),
            (12, "imprecise"),
        ],
    ),
    (
        "kfd_hsa_memory_exception_data",
        32,
        &[
            (0, "failure"),
            (16, "va"),
            (24, "gpu_id"),
            (28, "ErrorType"),
        ],
    ),
    (
        "kfd_hsa_hw_exception_data",
        16,
        &[
            (0, "reset_type"),
            (4, "reset_cause"),
            (8, "memory_lost"),
            (12, "gpu_id"),
        ],
    ),
    ("kfd_hsa_signal_event_data", 8, &[(0, "last_event_age")]),
    (
        "kfd_event_data",
        48,
        &[(32, "kfd_event_data_ext"), (40, "event_id"), (44, "pad")],
    ),
    (
        "kfd_ioctl_wait_events_args",
        24,
        &[
            (0, "events_ptr"),
            (8, "num_events"),
            (12, "wait_for_all"),
            (16, "timeout"),
            (20, "wait_result"),
        ],
    ),
    (
        "kfd_ioctl_set_scratch_backing_va_args",
        16,
        &[(0, "va_addr"), (8, "gpu_id"), (12, "pad")],
    ),
    (
        "kfd_ioctl_get_tile_config_args",
        40,
        &[
            (0, "tile_config_ptr"),
            (8, "macro_tile_config_ptr"),
            (16, "num_tile_configs"),
            (20, "num_macro_tile_configs"),
            (24, "gpu_id"),
            (28, "gb_addr_config"),
            (32, "num_banks"),
            (36, "num_ranks"),
        ],
    ),
    (
        "kfd_ioctl_set_trap_handler_args",
        24,
        &[
            (0, "tba_addr"),
            (8, "tma_addr"),
            (16, "gpu_id"),
            (20, "pad"),
        ],
    ),
    (
        "kfd_ioctl_acquire_vm_args",
        8,
        &[(0, "drm_fd"), (4, "gpu_id")],
    ),
    (
        "kfd_ioctl_alloc_memory_of_gpu_args",
        40,
        &[
            (0, "va_addr"),
            (8, "size"),
            (16, "handle"),
            (24, "mmap_offset"),
            (32, "gpu_id"),
            (36, "flags"),
        ],
    ),
    ("kfd_ioctl_free_memory_of_gpu_args", 8, &[(0, "handle")]),
    (
        "kfd_ioctl_map_memory_to_gpu_args",
        24,
        &[
            (0, "handle"),
            (8, "device_ids_array_ptr"),
            (16, "n_devices"),
            (20, "n_success"),
        ],
    ),
    (
        "kfd_ioctl_unmap_memory_from_gpu_args",
        24,
        &[
            (0, "handle"),
            (8, "device_ids_array_ptr"),
            (16, "n_devices"),
            (20, "n_success"),
        ],
    ),
    (
        "kfd_ioctl_alloc_queue_gws_args",
        16,
        &[
            (0, "queue_id"),
            (4, "num_gws"),
            (8, "first_gws"),
            (12, "pad"),
        ],
    ),
    (
        "kfd_ioctl_get_dmabuf_info_args",
        32,
        &[
            (0, "size"),
            (8, "metadata_ptr"),
            (16, "metadata_size"),
            (20, "gpu_id"),
            (24, "flags"),
            (28, "dmabuf_fd"),
        ],
    ),
    (
        "kfd_ioctl_import_dmabuf_args",
        24,
        &[
            (0, "va_addr"),
            (8, "handle"),
            (16, "gpu_id"),
            (20, "dmabuf_fd"),
        ],
    ),
    (
        "kfd_ioctl_export_dmabuf_args",
        16,
        &[(0, "handle"), (8, "flags"), (12, "dmabuf_fd")],
    ),
    (
        "kfd_ioctl_smi_events_args",
        8,
        &[(0, "gpuid"), (4, "anon_fd")],
    ),
    (
        "kfd_ioctl_criu_args",
        56,
        &[
            (0, "devices"),
            (8, "bos"),
            (16, "priv_data"),
            (24, "priv_data_size"),
            (32, "num_devices"),
            (36, "num_bos"),
            (40, "num_objects"),
            (44, "pid"),
            (48, "op"),
        ],
    ),
    (
        "kfd_criu_device_bucket",
        16,
        &[
            (0, "user_gpu_id"),
            (4, "actual_gpu_id"),
            (8, "drm_fd"),
            (12, "pad"),
        ],
    ),
    (
        "kfd_criu_bo_bucket",
        48,
        &[
            (0, "addr"),
            (8, "size"),
            (16, "offset"),
            (24, "restored_offset"),
            (32, "gpu_id"),
            (36, "alloc_flags"),
            (40, "dmabuf_fd"),
            (44, "pad"),
        ],
    ),
    ("kfd_ioctl_svm_attribute", 8, &[(0, "type"), (4, "value")]),
    (
        "kfd_ioctl_svm_args",
        24,
        &[
            (0, "start_addr"),
            (8, "size"),
            (16, "op"),
            (20, "nattr"),
            (24, "attrs"),
        ],
    ),
    ("kfd_ioctl_set_xnack_mode_args", 4, &[(0, "xnack_enabled")]),
    (
        "kfd_runtime_info",
        16,
        &[(0, "r_debug"), (8, "runtime_state"), (12, "ttmp_setup")],
    ),
    (
        "kfd_ioctl_runtime_enable_args",
        16,
        &[(0, "r_debug"), (8, "mode_mask"), (12, "capabilities_mask")],
    ),
    (
        "kfd_queue_snapshot_entry",
        64,
        &[
            (0, "exception_status"),
            (8, "ring_base_address"),
            (16, "write_pointer_address"),
            (24, "read_pointer_address"),
            (32, "ctx_save_restore_address"),
            (40, "queue_id"),
            (44, "gpu_id"),
            (48, "ring_size"),
            (52, "queue_type"),
            (56, "ctx_save_restore_area_size"),
            (60, "reserved"),
        ],
    ),
    (
        "kfd_context_save_area_header",
        40,
        &[
            (16, "debug_offset"),
            (20, "debug_size"),
            (24, "err_payload_addr"),
            (32, "err_event_id"),
            (36, "reserved1"),
        ],
    ),
    (
        "kfd_ioctl_dbg_trap_enable_args",
        24,
        &[
            (0, "exception_mask"),
            (8, "rinfo_ptr"),
            (16, "rinfo_size"),
            (20, "dbg_fd"),
        ],
    ),
    (
        "kfd_ioctl_dbg_trap_send_runtime_event_args",
        16,
        &[(0, "exception_mask"), (8, "gpu_id"), (12, "queue_id")],
    ),
    (
        "kfd_ioctl_dbg_trap_set_exceptions_enabled_args",
        8,
        &[(0, "exception_mask")],
    ),
    (
        "kfd_ioctl_dbg_trap_set_wave_launch_override_args",
        16,
        &[
            (0, "override_mode"),
            (4, "enable_mask"),
            (8, "support_request_mask"),
            (12, "pad"),
        ],
    ),
    (
        "kfd_ioctl_dbg_trap_set_wave_launch_mode_args",
        8,
        &[(0, "launch_mode"), (4, "pad")],
    ),
    (
        "kfd_ioctl_dbg_trap_suspend_queues_args",
        24,
        &[
            (0, "exception_mask"),
            (8, "queue_array_ptr"),
            (16, "num_queues"),
            (20, "grace_period"),
        ],
    ),
    (
        "kfd_ioctl_dbg_trap_resume_queues_args",
        16,
        &[(0, "queue_array_ptr"), (8, "num_queues"), (12, "pad")],
    ),
    (
        "kfd_ioctl_dbg_trap_set_node_address_watch_args",
        24,
        &[
            (0, "address"),
            (8, "mode"),
            (12, "mask"),
            (16, "gpu_id"),
            (20, "id"),
        ],
    ),
    (
        "kfd_ioctl_dbg_trap_clear_node_address_watch_args",
        8,
        &[(0, "gpu_id"), (4, "id")],
    ),
    (
        "kfd_ioctl_dbg_trap_set_flags_args",
        8,
        &[(0, "flags"), (4, "pad")],
    ),
    (
        "kfd_ioctl_dbg_trap_query_debug_event_args",
        16,
        &[(0, "exception_mask"), (8, "gpu_id"), (12, "queue_id")],
    ),
    (
        "kfd_ioctl_dbg_trap_query_exception_info_args",
        24,
        &[
            (0, "info_ptr"),
            (8, "info_size"),
            (12, "source_id"),
            (16, "exception_code"),
            (20, "clear_exception"),
        ],
    ),
    (
        "kfd_ioctl_dbg_trap_queue_snapshot_args",
        24,
        &[
            (0, "exception_mask"),
            (8, "snapshot_buf_ptr"),
            (16, "num_queues"),
            (20, "entry_size"),
        ],
    ),
    (
        "kfd_ioctl_dbg_trap_device_snapshot_args",
        24,
        &[
            (0, "exception_mask"),
            (8, "snapshot_buf_ptr"),
            (16, "num_devices"),
            (20, "entry_size"),
        ],
    ),
    ("kfd_ioctl_dbg_trap_args", 32, &[(0, "pid"), (4, "op")]),
];

/// The kfd-sys field that holds a facts field whose name differs.
fn our_field(strukt: &str, field: &str) -> String {
    match (strukt, field) {
        // 1.18 renamed the pad of set_memory_policy_args.
        ("kfd_ioctl_set_memory_policy_args", "pad") => "misc_process_flag".into(),
        ("kfd_ioctl_svm_attribute", "type") => "r#type".into(),
        _ => field.into(),
    }
}

fn layout(name: &str) -> StructLayout {
    ALL_STRUCTS
        .iter()
        .find(|s| s.name == name)
        .copied()
        .unwrap_or_else(|| panic!("facts list struct {name}, kfd-sys does not have it"))
}

#[test]
fn every_appendix_b_layout_matches() {
    let mut fields = 0;
    for &(name, size, listed) in APPENDIX_B {
        let ours = layout(name);
        assert_eq!(ours.size, size, "sizeof({name})");
        for &(offset, field) in listed {
            let f = ours
                .field(&our_field(name, field))
                .unwrap_or_else(|| panic!("{name}.{field} missing in kfd-sys"));
            assert_eq!(f.offset, offset, "offsetof({name}, {field})");
            fields += 1;
        }
    }
    assert_eq!(APPENDIX_B.len(), 65);
    println!(
        "{} structs and {fields} field offsets of Appendix B agree",
        APPENDIX_B.len()
    );
}

/// The unions and the nested struct Appendix B describes in prose.
#[test]
fn unions_and_nested_members() {
    let ev = layout("kfd_event_data");
    assert_eq!(
        (ev.field("data").map(|f| (f.offset, f.size))),
        Some((0, 32))
    );
    let trap = layout("kfd_ioctl_dbg_trap_args");
    assert_eq!(
        trap.field("args").map(|f| (f.offset, f.size)),
        Some((8, 24))
    );
    let hdr = <kfd_sys::kfd_context_save_area_header as AbiLayout>::ABI_LAYOUT;
    assert_eq!(
        hdr.field("wave_state").map(|f| (f.offset, f.size)),
        Some((0, 16))
    );

    // Union members read back what was stored, and only their own bytes.
    let mut data = kfd_sys::kfd_event_data::default();
    let hw = kfd_sys::kfd_hsa_hw_exception_data {
        reset_type: 1,
        reset_cause: 2,
        memory_lost: 3,
        gpu_id: 4,
    };
    data.data.set_hw_exception_data(hw);
    assert_eq!(data.data.hw_exception_data(), hw);
    assert_eq!(data.data.memory_exception_data().failure.NotPresent, 1);
    assert_eq!(data.data.bytes[16..], [0u8; 16]);
    data.data
        .set_signal_event_data(kfd_sys::kfd_hsa_signal_event_data {
            last_event_age: 0x1_0000_0002,
        });
    assert_eq!(data.data.signal_event_data().last_event_age, 0x1_0000_0002);
    assert_eq!(
        data.data.hw_exception_data().memory_lost,
        3,
        "bytes past the member untouched"
    );
}
