//! The AQL layouts of `pm4::aql` against the installed HSA headers (`hsa/hsa.h`,
//! `hsa/hsa_ext_amd.h`, `hsa/amd_hsa_signal.h` from Debian's `libhsa-runtime-dev`; override the
//! include directory with `HSA_INCLUDE_DIR`). A C probe compiled with the system C compiler
//! prints sizes, offsets and enum values; each is compared with the Rust definition. Missing
//! headers are a failure, or a skip where `KFD_SKIP_MISSING_TOOLS=1` (`kfd_testkit`). ROCr's PM4-IB vendor packet is not in
//! the installed headers; its layout is asserted in `pm4::aql`'s unit tests.

use pm4::aql::*;
use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

fn include_dir() -> PathBuf {
    std::env::var_os("HSA_INCLUDE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/include".into())
}

/// Runs the probe; `None` when the headers are absent.
fn probe() -> Option<BTreeMap<String, u64>> {
    let inc = include_dir();
    kfd_testkit::installed_file(
        &inc.join("hsa/hsa.h").display().to_string(),
        "libhsa-runtime-dev (or set HSA_INCLUDE_DIR)",
    )?;
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\n\
         #include <hsa/amd_hsa_signal.h>\n#include <hsa/amd_hsa_queue.h>\n#define P(name, v) printf(\"%s %llu\\n\", name, (unsigned long long)(v))\n\
         int main(void) {\n",
    );
    let items: &[(&str, &str)] = &[
        ("dispatch.size", "sizeof(hsa_kernel_dispatch_packet_t)"),
        (
            "dispatch.setup",
            "offsetof(hsa_kernel_dispatch_packet_t, setup)",
        ),
        (
            "dispatch.workgroup_size_x",
            "offsetof(hsa_kernel_dispatch_packet_t, workgroup_size_x)",
        ),
        (
            "dispatch.workgroup_size_z",
            "offsetof(hsa_kernel_dispatch_packet_t, workgroup_size_z)",
        ),
        (
            "dispatch.grid_size_x",
            "offsetof(hsa_kernel_dispatch_packet_t, grid_size_x)",
        ),
        (
            "dispatch.grid_size_z",
            "offsetof(hsa_kernel_dispatch_packet_t, grid_size_z)",
        ),
        (
            "dispatch.private_segment_size",
            "offsetof(hsa_kernel_dispatch_packet_t, private_segment_size)",
        ),
        (
            "dispatch.group_segment_size",
            "offsetof(hsa_kernel_dispatch_packet_t, group_segment_size)",
        ),
        (
            "dispatch.kernel_object",
            "offsetof(hsa_kernel_dispatch_packet_t, kernel_object)",
        ),
        (
            "dispatch.kernarg_address",
            "offsetof(hsa_kernel_dispatch_packet_t, kernarg_address)",
        ),
        (
            "dispatch.completion_signal",
            "offsetof(hsa_kernel_dispatch_packet_t, completion_signal)",
        ),
        ("agent.size", "sizeof(hsa_agent_dispatch_packet_t)"),
        ("agent.type", "offsetof(hsa_agent_dispatch_packet_t, type)"),
        (
            "agent.return_address",
            "offsetof(hsa_agent_dispatch_packet_t, return_address)",
        ),
        ("agent.arg", "offsetof(hsa_agent_dispatch_packet_t, arg)"),
        (
            "agent.completion_signal",
            "offsetof(hsa_agent_dispatch_packet_t, completion_signal)",
        ),
        ("and.size", "sizeof(hsa_barrier_and_packet_t)"),
        (
            "and.dep_signal",
            "offsetof(hsa_barrier_and_packet_t, dep_signal)",
        ),
        (
            "and.completion_signal",
            "offsetof(hsa_barrier_and_packet_t, completion_signal)",
        ),
        ("or.size", "sizeof(hsa_barrier_or_packet_t)"),
        (
            "or.dep_signal",
            "offsetof(hsa_barrier_or_packet_t, dep_signal)",
        ),
        (
            "or.completion_signal",
            "offsetof(hsa_barrier_or_packet_t, completion_signal)",
        ),
        ("vendor.size", "sizeof(hsa_amd_vendor_packet_header_t)"),
        (
            "vendor.AmdFormat",
            "offsetof(hsa_amd_vendor_packet_header_t, AmdFormat)",
        ),
        ("value.size", "sizeof(hsa_amd_barrier_value_packet_t)"),
        (
            "value.signal",
            "offsetof(hsa_amd_barrier_value_packet_t, signal)",
        ),
        (
            "value.value",
            "offsetof(hsa_amd_barrier_value_packet_t, value)",
        ),
        (
            "value.mask",
            "offsetof(hsa_amd_barrier_value_packet_t, mask)",
        ),
        (
            "value.cond",
            "offsetof(hsa_amd_barrier_value_packet_t, cond)",
        ),
        (
            "value.completion_signal",
            "offsetof(hsa_amd_barrier_value_packet_t, completion_signal)",
        ),
        ("signal.size", "sizeof(amd_signal_t)"),
        ("signal.value", "offsetof(amd_signal_t, value)"),
        (
            "signal.event_mailbox_ptr",
            "offsetof(amd_signal_t, event_mailbox_ptr)",
        ),
        ("signal.event_id", "offsetof(amd_signal_t, event_id)"),
        ("queue.size", "sizeof(amd_queue_t)"),
        (
            "queue.write_dispatch_id",
            "offsetof(amd_queue_t, write_dispatch_id)",
        ),
        (
            "queue.read_dispatch_id",
            "offsetof(amd_queue_t, read_dispatch_id)",
        ),
        (
            "queue.compute_tmpring_size",
            "offsetof(amd_queue_t, compute_tmpring_size)",
        ),
        (
            "queue.scratch_resource_descriptor",
            "offsetof(amd_queue_t, scratch_resource_descriptor)",
        ),
        (
            "queue.scratch_backing_memory_location",
            "offsetof(amd_queue_t, scratch_backing_memory_location)",
        ),
        (
            "queue.scratch_backing_memory_byte_size",
            "offsetof(amd_queue_t, scratch_backing_memory_byte_size)",
        ),
        (
            "queue.scratch_wave64_lane_byte_size",
            "offsetof(amd_queue_t, scratch_wave64_lane_byte_size)",
        ),
        (
            "queue.queue_properties",
            "offsetof(amd_queue_t, queue_properties)",
        ),
        (
            "AMD_QUEUE_PROPERTIES_ENABLE_PROFILING",
            "AMD_QUEUE_PROPERTIES_ENABLE_PROFILING",
        ),
        (
            "queue.queue_inactive_signal",
            "offsetof(amd_queue_t, queue_inactive_signal)",
        ),
        (
            "HSA_PACKET_TYPE_VENDOR_SPECIFIC",
            "HSA_PACKET_TYPE_VENDOR_SPECIFIC",
        ),
        ("HSA_PACKET_TYPE_INVALID", "HSA_PACKET_TYPE_INVALID"),
        (
            "HSA_PACKET_TYPE_KERNEL_DISPATCH",
            "HSA_PACKET_TYPE_KERNEL_DISPATCH",
        ),
        ("HSA_PACKET_TYPE_BARRIER_AND", "HSA_PACKET_TYPE_BARRIER_AND"),
        (
            "HSA_PACKET_TYPE_AGENT_DISPATCH",
            "HSA_PACKET_TYPE_AGENT_DISPATCH",
        ),
        ("HSA_PACKET_TYPE_BARRIER_OR", "HSA_PACKET_TYPE_BARRIER_OR"),
        ("HSA_PACKET_HEADER_BARRIER", "HSA_PACKET_HEADER_BARRIER"),
        (
            "HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE",
            "HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE",
        ),
        (
            "HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE",
            "HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE",
        ),
        ("HSA_FENCE_SCOPE_AGENT", "HSA_FENCE_SCOPE_AGENT"),
        ("HSA_FENCE_SCOPE_SYSTEM", "HSA_FENCE_SCOPE_SYSTEM"),
        (
            "HSA_AMD_PACKET_TYPE_BARRIER_VALUE",
            "HSA_AMD_PACKET_TYPE_BARRIER_VALUE",
        ),
        ("HSA_SIGNAL_CONDITION_LT", "HSA_SIGNAL_CONDITION_LT"),
        ("HSA_SIGNAL_CONDITION_GTE", "HSA_SIGNAL_CONDITION_GTE"),
    ];
    for (name, expr) in items {
        c.push_str(&format!("  P(\"{name}\", {expr});\n"));
    }
    c.push_str("  return 0;\n}\n");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pm4-hsa-probe");
    std::fs::create_dir_all(&dir).expect("create probe directory");
    let (src, exe) = (dir.join("probe.c"), dir.join("probe"));
    std::fs::write(&src, c).expect("write probe.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=gnu11", "-Wall", "-Werror", "-DLITTLEENDIAN_CPU", "-I"])
        .arg(&inc)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` ({e}); install gcc"));
    assert!(
        out.status.success(),
        "the HSA probe did not compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().expect("run the probe");
    assert!(out.status.success());
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_owned(), v.parse().expect("decimal")))
            .collect(),
    )
}

#[test]
fn aql_layouts_match_the_hsa_headers() {
    let Some(c) = probe() else { return };
    let check = |name: &str, rust: usize| {
        assert_eq!(c[name], rust as u64, "{name}: header vs pm4::aql");
    };
    check("dispatch.size", size_of::<KernelDispatchPacket>());
    check("dispatch.setup", offset_of!(KernelDispatchPacket, setup));
    check(
        "dispatch.workgroup_size_x",
        offset_of!(KernelDispatchPacket, workgroup_size_x),
    );
    check(
        "dispatch.workgroup_size_z",
        offset_of!(KernelDispatchPacket, workgroup_size_z),
    );
    check(
        "dispatch.grid_size_x",
        offset_of!(KernelDispatchPacket, grid_size_x),
    );
    check(
        "dispatch.grid_size_z",
        offset_of!(KernelDispatchPacket, grid_size_z),
    );
    check(
        "dispatch.private_segment_size",
        offset_of!(KernelDispatchPacket, private_segment_size),
    );
    check(
        "dispatch.group_segment_size",
        offset_of!(KernelDispatchPacket, group_segment_size),
    );
    check(
        "dispatch.kernel_object",
        offset_of!(KernelDispatchPacket, kernel_object),
    );
    check(
        "dispatch.kernarg_address",
        offset_of!(KernelDispatchPacket, kernarg_address),
    );
    check(
        "dispatch.completion_signal",
        offset_of!(KernelDispatchPacket, completion_signal),
    );
    check("agent.size", size_of::<AgentDispatchPacket>());
    check("agent.type", offset_of!(AgentDispatchPacket, function));
    check(
        "agent.return_address",
        offset_of!(AgentDispatchPacket, return_address),
    );
    check("agent.arg", offset_of!(AgentDispatchPacket, arg));
    check(
        "agent.completion_signal",
        offset_of!(AgentDispatchPacket, completion_signal),
    );
    for kind in ["and", "or"] {
        check(&format!("{kind}.size"), size_of::<BarrierPacket>());
        check(
            &format!("{kind}.dep_signal"),
            offset_of!(BarrierPacket, dep_signal),
        );
        check(
            &format!("{kind}.completion_signal"),
            offset_of!(BarrierPacket, completion_signal),
        );
    }
    check("vendor.size", size_of::<AmdVendorHeader>());
    check("vendor.AmdFormat", offset_of!(AmdVendorHeader, amd_format));
    check("value.size", size_of::<BarrierValuePacket>());
    check("value.signal", offset_of!(BarrierValuePacket, signal));
    check("value.value", offset_of!(BarrierValuePacket, value));
    check("value.mask", offset_of!(BarrierValuePacket, mask));
    check("value.cond", offset_of!(BarrierValuePacket, cond));
    check(
        "value.completion_signal",
        offset_of!(BarrierValuePacket, completion_signal),
    );
    check("value.completion_signal", COMPLETION_SIGNAL_OFFSET);
    check("signal.size", amd_signal::SIZE);
    check("signal.value", amd_signal::VALUE as usize);
    check(
        "signal.event_mailbox_ptr",
        amd_signal::EVENT_MAILBOX_PTR as usize,
    );
    check("signal.event_id", amd_signal::EVENT_ID as usize);
    check("queue.size", amd_queue::SIZE);
    check(
        "queue.write_dispatch_id",
        amd_queue::WRITE_DISPATCH_ID as usize,
    );
    check(
        "queue.read_dispatch_id",
        amd_queue::READ_DISPATCH_ID as usize,
    );
    check(
        "queue.compute_tmpring_size",
        amd_queue::COMPUTE_TMPRING_SIZE as usize,
    );
    check(
        "queue.scratch_resource_descriptor",
        amd_queue::SCRATCH_RESOURCE_DESCRIPTOR as usize,
    );
    check(
        "queue.scratch_backing_memory_location",
        amd_queue::SCRATCH_BACKING_MEMORY_LOCATION as usize,
    );
    check(
        "queue.scratch_backing_memory_byte_size",
        amd_queue::SCRATCH_BACKING_MEMORY_BYTE_SIZE as usize,
    );
    check(
        "queue.scratch_wave64_lane_byte_size",
        amd_queue::SCRATCH_WAVE64_LANE_BYTE_SIZE as usize,
    );
    check(
        "queue.queue_properties",
        amd_queue::QUEUE_PROPERTIES as usize,
    );
    check(
        "AMD_QUEUE_PROPERTIES_ENABLE_PROFILING",
        amd_queue::PROPERTIES_ENABLE_PROFILING as usize,
    );
    check(
        "queue.queue_inactive_signal",
        amd_queue::QUEUE_INACTIVE_SIGNAL as usize,
    );

    let types = [
        (
            "HSA_PACKET_TYPE_VENDOR_SPECIFIC",
            AqlPacketType::VendorSpecific,
        ),
        ("HSA_PACKET_TYPE_INVALID", AqlPacketType::Invalid),
        (
            "HSA_PACKET_TYPE_KERNEL_DISPATCH",
            AqlPacketType::KernelDispatch,
        ),
        ("HSA_PACKET_TYPE_BARRIER_AND", AqlPacketType::BarrierAnd),
        (
            "HSA_PACKET_TYPE_AGENT_DISPATCH",
            AqlPacketType::AgentDispatch,
        ),
        ("HSA_PACKET_TYPE_BARRIER_OR", AqlPacketType::BarrierOr),
    ];
    for (name, t) in types {
        check(name, usize::from(t.raw()));
    }
    check(
        "HSA_PACKET_HEADER_BARRIER",
        AqlHeader::BARRIER_SHIFT as usize,
    );
    check(
        "HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE",
        AqlHeader::ACQUIRE_FENCE_SCOPE_SHIFT as usize,
    );
    check(
        "HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE",
        AqlHeader::RELEASE_FENCE_SCOPE_SHIFT as usize,
    );
    check(
        "HSA_FENCE_SCOPE_AGENT",
        usize::from(FenceScope::Agent.raw()),
    );
    check(
        "HSA_FENCE_SCOPE_SYSTEM",
        usize::from(FenceScope::System.raw()),
    );
    check(
        "HSA_AMD_PACKET_TYPE_BARRIER_VALUE",
        usize::from(AmdFormat::BarrierValue.raw()),
    );
    assert_eq!(
        SignalCondition::from_raw(c["HSA_SIGNAL_CONDITION_LT"] as u32),
        Some(SignalCondition::Lt)
    );
    assert_eq!(
        SignalCondition::from_raw(c["HSA_SIGNAL_CONDITION_GTE"] as u32),
        Some(SignalCondition::Gte)
    );
}
