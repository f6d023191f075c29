//! The legacy `amd_kernel_code_t` and its control directives against ROCr's own header
//! (`/usr/include/hsa/amd_hsa_kernel_code.h`, package libhsa-runtime-dev), through a C probe
//! compiled by gcc that prints every field's offset.

use std::mem::{offset_of, size_of};
use std::process::Command;

use codeobj::descriptor::{
    AmdControlDirectives, AmdKernelCode, AmdKernelCodeProperties, ComputePgmRsrc1, ComputePgmRsrc2,
};

const HEADER: &str = "/usr/include/hsa/amd_hsa_kernel_code.h";

macro_rules! fields {
    ($ty:ty, $c:literal: $($field:ident),* $(,)?) => {
        vec![$((concat!($c, ".", stringify!($field)), offset_of!($ty, $field))),*]
    };
}

#[test]
fn legacy_kernel_code_layout_matches_the_rocr_header() {
    if kfd_testkit::installed_file(HEADER, "libhsa-runtime-dev").is_none()
        || kfd_testkit::tool("gcc").is_none()
    {
        return;
    }
    let mut ours = fields!(AmdKernelCode, "amd_kernel_code_t":
        amd_kernel_code_version_major, amd_kernel_code_version_minor, amd_machine_kind,
        amd_machine_version_major, amd_machine_version_minor, amd_machine_version_stepping,
        kernel_code_entry_byte_offset, kernel_code_prefetch_byte_offset,
        kernel_code_prefetch_byte_size, max_scratch_backing_memory_byte_size, compute_pgm_rsrc1,
        compute_pgm_rsrc2, kernel_code_properties, workitem_private_segment_byte_size,
        workgroup_group_segment_byte_size, gds_segment_byte_size, kernarg_segment_byte_size,
        workgroup_fbarrier_count, wavefront_sgpr_count, workitem_vgpr_count, reserved_vgpr_first,
        reserved_vgpr_count, reserved_sgpr_first, reserved_sgpr_count,
        debug_wavefront_private_segment_offset_sgpr, debug_private_segment_buffer_sgpr,
        kernarg_segment_alignment, group_segment_alignment, private_segment_alignment,
        wavefront_size, call_convention, reserved1, runtime_loader_kernel_symbol,
        control_directives,
    );
    ours.extend(fields!(AmdControlDirectives, "amd_control_directives_t":
        enabled_control_directives, enable_break_exceptions, enable_detect_exceptions,
        max_dynamic_group_size, max_flat_grid_size, max_flat_workgroup_size, required_dim,
        reserved1, required_grid_size, required_workgroup_size, reserved2,
    ));
    ours.push(("sizeof(amd_kernel_code_t)", size_of::<AmdKernelCode>()));
    ours.push((
        "sizeof(amd_control_directives_t)",
        size_of::<AmdControlDirectives>(),
    ));

    let mut probe = String::from("#include <stddef.h>\n#include <stdio.h>\n#include <hsa/amd_hsa_kernel_code.h>\nint main(void) {\n");
    for (name, _) in &ours {
        let expr = match name.strip_prefix("sizeof(") {
            Some(ty) => format!("sizeof({ty}"),
            None => {
                let (ty, field) = name.split_once('.').unwrap();
                format!("offsetof({ty}, {field})")
            }
        };
        probe.push_str(&format!("  printf(\"{name} %zu\\n\", (size_t){expr});\n"));
    }
    probe.push_str("  return 0;\n}\n");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("probe.c");
    let binary = dir.path().join("probe");
    std::fs::write(&source, probe).unwrap();
    let status = Command::new("gcc")
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .status()
        .unwrap();
    assert!(status.success(), "the probe does not compile");
    let output = Command::new(&binary).output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let theirs: Vec<(String, usize)> = text
        .lines()
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap();
            (name.to_string(), value.parse().unwrap())
        })
        .collect();
    let ours: Vec<(String, usize)> = ours.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    assert_eq!(ours, theirs);
    assert_eq!(theirs.len(), 47);
}

/// The bits of a register that make a field read non-zero.
fn mask(get: impl Fn(u32) -> u64) -> u32 {
    (0..32)
        .filter(|bit| get(1 << bit) != 0)
        .fold(0, |m, bit| m | 1 << bit)
}

macro_rules! masks {
    ($ty:ident, $prefix:literal: $($c:ident => $field:ident),* $(,)?) => {
        vec![$((concat!($prefix, stringify!($c)), mask(|b| $ty::from_bits(b).$field() as u64))),*]
    };
}

#[test]
fn register_bit_fields_match_the_rocr_header() {
    if kfd_testkit::installed_file(HEADER, "libhsa-runtime-dev").is_none()
        || kfd_testkit::tool("gcc").is_none()
    {
        return;
    }
    let mut ours = masks!(ComputePgmRsrc1, "AMD_COMPUTE_PGM_RSRC_ONE_":
        GRANULATED_WORKITEM_VGPR_COUNT => granulated_workitem_vgpr_count,
        GRANULATED_WAVEFRONT_SGPR_COUNT => granulated_wavefront_sgpr_count,
        PRIORITY => priority,
        FLOAT_ROUND_MODE_32 => float_round_mode_32,
        FLOAT_ROUND_MODE_16_64 => float_round_mode_16_64,
        FLOAT_DENORM_MODE_32 => float_denorm_mode_32,
        FLOAT_DENORM_MODE_16_64 => float_denorm_mode_16_64,
        PRIV => privileged,
        ENABLE_DX10_CLAMP => enable_dx10_clamp,
        DEBUG_MODE => debug_mode,
        ENABLE_IEEE_MODE => enable_ieee_mode,
        BULKY => bulky,
        CDBG_USER => cdbg_user,
    );
    ours.extend(masks!(ComputePgmRsrc2, "AMD_COMPUTE_PGM_RSRC_TWO_":
        ENABLE_SGPR_PRIVATE_SEGMENT_WAVE_BYTE_OFFSET => enable_private_segment,
        USER_SGPR_COUNT => user_sgpr_count,
        ENABLE_TRAP_HANDLER => enable_trap_handler,
        ENABLE_SGPR_WORKGROUP_ID_X => enable_sgpr_workgroup_id_x,
        ENABLE_SGPR_WORKGROUP_ID_Y => enable_sgpr_workgroup_id_y,
        ENABLE_SGPR_WORKGROUP_ID_Z => enable_sgpr_workgroup_id_z,
        ENABLE_SGPR_WORKGROUP_INFO => enable_sgpr_workgroup_info,
        ENABLE_VGPR_WORKITEM_ID => enable_vgpr_workitem_id,
        ENABLE_EXCEPTION_ADDRESS_WATCH => enable_exception_address_watch,
        ENABLE_EXCEPTION_MEMORY_VIOLATION => enable_exception_memory,
        GRANULATED_LDS_SIZE => granulated_lds_size,
        ENABLE_EXCEPTION_IEEE_754_FP_INVALID_OPERATION => enable_exception_ieee_754_fp_invalid_operation,
        ENABLE_EXCEPTION_FP_DENORMAL_SOURCE => enable_exception_fp_denormal_source,
        ENABLE_EXCEPTION_IEEE_754_FP_DIVISION_BY_ZERO => enable_exception_ieee_754_fp_division_by_zero,
        ENABLE_EXCEPTION_IEEE_754_FP_OVERFLOW => enable_exception_ieee_754_fp_overflow,
        ENABLE_EXCEPTION_IEEE_754_FP_UNDERFLOW => enable_exception_ieee_754_fp_underflow,
        ENABLE_EXCEPTION_IEEE_754_FP_INEXACT => enable_exception_ieee_754_fp_inexact,
        ENABLE_EXCEPTION_INT_DIVISION_BY_ZERO => enable_exception_int_divide_by_zero,
    ));
    ours.extend(
        masks!(AmdKernelCodeProperties, "AMD_KERNEL_CODE_PROPERTIES_":
            ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER => enable_sgpr_private_segment_buffer,
            ENABLE_SGPR_DISPATCH_PTR => enable_sgpr_dispatch_ptr,
            ENABLE_SGPR_QUEUE_PTR => enable_sgpr_queue_ptr,
            ENABLE_SGPR_KERNARG_SEGMENT_PTR => enable_sgpr_kernarg_segment_ptr,
            ENABLE_SGPR_DISPATCH_ID => enable_sgpr_dispatch_id,
            ENABLE_SGPR_FLAT_SCRATCH_INIT => enable_sgpr_flat_scratch_init,
            ENABLE_SGPR_PRIVATE_SEGMENT_SIZE => enable_sgpr_private_segment_size,
            ENABLE_SGPR_GRID_WORKGROUP_COUNT_X => enable_sgpr_grid_workgroup_count_x,
            ENABLE_SGPR_GRID_WORKGROUP_COUNT_Y => enable_sgpr_grid_workgroup_count_y,
            ENABLE_SGPR_GRID_WORKGROUP_COUNT_Z => enable_sgpr_grid_workgroup_count_z,
            ENABLE_ORDERED_APPEND_GDS => enable_ordered_append_gds,
            PRIVATE_ELEMENT_SIZE => private_element_size,
            IS_PTR64 => is_ptr64,
            IS_DYNAMIC_CALLSTACK => is_dynamic_callstack,
            IS_DEBUG_ENABLED => is_debug_enabled,
            IS_XNACK_ENABLED => is_xnack_enabled,
        ),
    );
    // The v3+ 16-bit properties share bits 0-6 with the legacy word.
    for bit in 0..7 {
        let legacy = AmdKernelCodeProperties::from_bits(1 << bit).into_bits();
        let v3 = codeobj::KernelCodeProperties::from_bits(1 << bit).into_bits();
        assert_eq!(u32::from(v3), legacy);
    }
    let mut probe = String::from(
        "#include <stdio.h>\n#include <hsa/amd_hsa_kernel_code.h>\nint main(void) {\n",
    );
    for (name, _) in &ours {
        probe.push_str(&format!("  printf(\"{name} %#x\\n\", (unsigned){name});\n"));
    }
    probe.push_str("  return 0;\n}\n");
    let dir = tempfile::tempdir().unwrap();
    let (source, binary) = (dir.path().join("masks.c"), dir.path().join("masks"));
    std::fs::write(&source, probe).unwrap();
    assert!(Command::new("gcc")
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .status()
        .unwrap()
        .success());
    let text = String::from_utf8(Command::new(&binary).output().unwrap().stdout).unwrap();
    let theirs: Vec<(String, u32)> = text
        .lines()
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap();
            let value = value
                .strip_prefix("0x")
                .map_or(0, |h| u32::from_str_radix(h, 16).unwrap());
            (name.to_string(), value)
        })
        .collect();
    let ours: Vec<(String, u32)> = ours.into_iter().map(|(n, m)| (n.to_string(), m)).collect();
    assert_eq!(ours, theirs);
    assert_eq!(theirs.len(), 47);
}
