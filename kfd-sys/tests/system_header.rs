//! The layout test that cannot drift from the real header.
//!
//! It reads the kernel uapi headers installed on this machine (`linux/kfd_ioctl.h` and
//! `linux/kfd_sysfs.h` from `linux-libc-dev`; override with `KFD_IOCTL_H` / `KFD_SYSFS_H`),
//! finds every struct, ioctl request code, `#define` constant and enumerator they declare,
//! compiles a C probe against them that prints each item's size, field offsets and values, and
//! compares every one with `kfd-sys`. Anything the header has and `kfd-sys` lacks is a failure.
//!
//! The header is older than `kfd-sys` on Debian bookworm (interface 1.11 against 1.18). The
//! differences that history explains are checked both ways: the old form in `kfd-sys`
//! ([`kfd_sys::v1_8`]) must equal the header, the current form must equal the facts.
//! Items newer than the header are checked against `amdkfd-facts.md` Appendix B in
//! `facts_appendix_b.rs`.

use kfd_sys::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An installed header and its text.
struct Header {
    path: PathBuf,
    text: String,
}

fn load(env: &str, default: &str) -> Header {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| default.into());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); install Debian's linux-libc-dev (`make test` does) \
             or point {env} at a copy of the header",
            path.display()
        )
    });
    Header { path, text }
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// `KFD_IOCTL_MINOR_VERSION` of the header.
fn minor_version(text: &str) -> u32 {
    text.lines()
        .find_map(|l| l.strip_prefix("#define KFD_IOCTL_MINOR_VERSION"))
        .and_then(|v| v.trim().parse().ok())
        .expect("header has no KFD_IOCTL_MINOR_VERSION")
}

/// Names of top-level `struct name {` definitions.
fn struct_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("struct "))
        .filter(|rest| rest.trim_end().ends_with('{'))
        .map(|rest| ident(rest).to_owned())
        .collect()
}

/// Object-like `#define NAME value` macros (function-like macros, include guards and the
/// ioctl request codes are handled elsewhere).
fn object_macros(text: &str) -> (Vec<String>, Vec<String>) {
    let mut ioctls = Vec::new();
    let mut constants = Vec::new();
    for rest in text.lines().filter_map(|l| l.strip_prefix("#define ")) {
        let name = ident(rest);
        let after = &rest[name.len()..];
        if after.starts_with('(') || after.trim().is_empty() {
            continue; // function-like macro or include guard
        }
        if name.starts_with("AMDKFD_IOC_") {
            ioctls.push(name.to_owned());
        } else {
            constants.push(name.to_owned());
        }
    }
    (ioctls, constants)
}

/// Enumerator names of every `enum ... { ... }` block.
fn enumerators(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !inside {
            inside = line.starts_with("enum ") && line.contains('{');
            continue;
        }
        if line.starts_with('}') {
            inside = false;
            continue;
        }
        let t = line.trim();
        let name = ident(t);
        let after = t[name.len()..].trim_start();
        if !name.is_empty()
            && (after.starts_with('=') || after.starts_with(',') || after.is_empty())
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// The C member name of a `kfd-sys` field, or `None` where C has no member (implicit padding).
fn c_member(strukt: &str, field: &str, header_minor: u32) -> Option<String> {
    match (strukt, field) {
        // Anonymous unions: probe through their first member, which spans the whole union.
        ("kfd_event_data", "data") => Some("memory_exception_data".into()),
        ("kfd_ioctl_dbg_trap_args", "args") => Some("enable".into()),
        // 1.18 renamed the last field.
        ("kfd_ioctl_set_memory_policy_args", "misc_process_flag") if header_minor < 18 => {
            Some("pad".into())
        }
        // C pads the struct's tail implicitly; zerocopy needs the field spelled out.
        ("kfd_ioctl_criu_args", "tail_pad") => None,
        _ => Some(field.trim_start_matches("r#").into()),
    }
}

/// The `kfd-sys` layout the header's struct must equal.
fn our_layout(name: &str, header_minor: u32) -> Option<StructLayout> {
    if name == "kfd_ioctl_create_queue_args" && header_minor < 17 {
        // Before 1.17 the struct is the 88-byte form.
        return Some(<v1_8::kfd_ioctl_create_queue_args as AbiLayout>::ABI_LAYOUT);
    }
    ALL_STRUCTS.iter().find(|s| s.name == name).copied()
}

macro_rules! values {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), $name as u64)),*]
    };
}

/// Every constant of `kfd-sys` that a uapi header may define, by its C name.
const OUR_CONSTANTS: &[(&str, u64)] = values![
    KFD_IOCTL_MAJOR_VERSION,
    KFD_IOCTL_MINOR_VERSION,
    AMDKFD_IOCTL_BASE,
    AMDKFD_COMMAND_START,
    AMDKFD_COMMAND_END,
    KFD_IOC_QUEUE_TYPE_COMPUTE,
    KFD_IOC_QUEUE_TYPE_SDMA,
    KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
    KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
    KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
    KFD_MAX_QUEUE_PERCENTAGE,
    KFD_MAX_QUEUE_PRIORITY,
    KFD_MIN_QUEUE_RING_SIZE,
    KFD_IOC_CACHE_POLICY_COHERENT,
    KFD_IOC_CACHE_POLICY_NONCOHERENT,
    KFD_PROC_FLAG_MFMA_HIGH_PRECISION,
    NUM_OF_SUPPORTED_GPUS,
    MAX_ALLOWED_NUM_POINTS,
    MAX_ALLOWED_AW_BUFF_SIZE,
    MAX_ALLOWED_WAC_BUFF_SIZE,
    KFD_INVALID_FD,
    KFD_IOC_EVENT_SIGNAL,
    KFD_IOC_EVENT_NODECHANGE,
    KFD_IOC_EVENT_DEVICESTATECHANGE,
    KFD_IOC_EVENT_HW_EXCEPTION,
    KFD_IOC_EVENT_SYSTEM_EVENT,
    KFD_IOC_EVENT_DEBUG_EVENT,
    KFD_IOC_EVENT_PROFILE_EVENT,
    KFD_IOC_EVENT_QUEUE_EVENT,
    KFD_IOC_EVENT_MEMORY,
    KFD_IOC_WAIT_RESULT_COMPLETE,
    KFD_IOC_WAIT_RESULT_TIMEOUT,
    KFD_IOC_WAIT_RESULT_FAIL,
    KFD_SIGNAL_EVENT_LIMIT,
    KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
    KFD_HW_EXCEPTION_PER_ENGINE_RESET,
    KFD_HW_EXCEPTION_GPU_HANG,
    KFD_HW_EXCEPTION_ECC,
    KFD_MEM_ERR_NO_RAS,
    KFD_MEM_ERR_SRAM_ECC,
    KFD_MEM_ERR_POISON_CONSUMED,
    KFD_MEM_ERR_GPU_HANG,
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
    KFD_SMI_EVENT_NONE,
    KFD_SMI_EVENT_VMFAULT,
    KFD_SMI_EVENT_THERMAL_THROTTLE,
    KFD_SMI_EVENT_GPU_PRE_RESET,
    KFD_SMI_EVENT_GPU_POST_RESET,
    KFD_SMI_EVENT_MIGRATE_START,
    KFD_SMI_EVENT_MIGRATE_END,
    KFD_SMI_EVENT_PAGE_FAULT_START,
    KFD_SMI_EVENT_PAGE_FAULT_END,
    KFD_SMI_EVENT_QUEUE_EVICTION,
    KFD_SMI_EVENT_QUEUE_RESTORE,
    KFD_SMI_EVENT_UNMAP_FROM_GPU,
    KFD_SMI_EVENT_PROCESS_START,
    KFD_SMI_EVENT_PROCESS_END,
    KFD_SMI_EVENT_ALL_PROCESS,
    KFD_SMI_EVENT_MSG_SIZE,
    KFD_MIGRATE_TRIGGER_PREFETCH,
    KFD_MIGRATE_TRIGGER_PAGEFAULT_GPU,
    KFD_MIGRATE_TRIGGER_PAGEFAULT_CPU,
    KFD_MIGRATE_TRIGGER_TTM_EVICTION,
    KFD_QUEUE_EVICTION_TRIGGER_SVM,
    KFD_QUEUE_EVICTION_TRIGGER_USERPTR,
    KFD_QUEUE_EVICTION_TRIGGER_TTM,
    KFD_QUEUE_EVICTION_TRIGGER_SUSPEND,
    KFD_QUEUE_EVICTION_CRIU_CHECKPOINT,
    KFD_QUEUE_EVICTION_CRIU_RESTORE,
    KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY,
    KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE,
    KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU,
    KFD_CRIU_OP_PROCESS_INFO,
    KFD_CRIU_OP_CHECKPOINT,
    KFD_CRIU_OP_UNPAUSE,
    KFD_CRIU_OP_RESTORE,
    KFD_CRIU_OP_RESUME,
    KFD_MMIO_REMAP_HDP_MEM_FLUSH_CNTL,
    KFD_MMIO_REMAP_HDP_REG_FLUSH_CNTL,
    KFD_IOCTL_SVM_FLAG_HOST_ACCESS,
    KFD_IOCTL_SVM_FLAG_COHERENT,
    KFD_IOCTL_SVM_FLAG_HIVE_LOCAL,
    KFD_IOCTL_SVM_FLAG_GPU_RO,
    KFD_IOCTL_SVM_FLAG_GPU_EXEC,
    KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY,
    KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED,
    KFD_IOCTL_SVM_FLAG_EXT_COHERENT,
    KFD_IOCTL_SVM_OP_SET_ATTR,
    KFD_IOCTL_SVM_OP_GET_ATTR,
    KFD_IOCTL_SVM_LOCATION_SYSMEM,
    KFD_IOCTL_SVM_LOCATION_UNDEFINED,
    KFD_IOCTL_SVM_ATTR_PREFERRED_LOC,
    KFD_IOCTL_SVM_ATTR_PREFETCH_LOC,
    KFD_IOCTL_SVM_ATTR_ACCESS,
    KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE,
    KFD_IOCTL_SVM_ATTR_NO_ACCESS,
    KFD_IOCTL_SVM_ATTR_SET_FLAGS,
    KFD_IOCTL_SVM_ATTR_CLR_FLAGS,
    KFD_IOCTL_SVM_ATTR_GRANULARITY,
    KFD_DBG_TRAP_OVERRIDE_OR,
    KFD_DBG_TRAP_OVERRIDE_REPLACE,
    KFD_DBG_TRAP_MASK_FP_INVALID,
    KFD_DBG_TRAP_MASK_FP_INPUT_DENORMAL,
    KFD_DBG_TRAP_MASK_FP_DIVIDE_BY_ZERO,
    KFD_DBG_TRAP_MASK_FP_OVERFLOW,
    KFD_DBG_TRAP_MASK_FP_UNDERFLOW,
    KFD_DBG_TRAP_MASK_FP_INEXACT,
    KFD_DBG_TRAP_MASK_INT_DIVIDE_BY_ZERO,
    KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH,
    KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION,
    KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START,
    KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END,
    KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL,
    KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT,
    KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG,
    KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ,
    KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD,
    KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC,
    KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL,
    KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP,
    KFD_DBG_TRAP_FLAG_SINGLE_ALU_OP,
    EC_NONE,
    EC_QUEUE_WAVE_ABORT,
    EC_QUEUE_WAVE_TRAP,
    EC_QUEUE_WAVE_MATH_ERROR,
    EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION,
    EC_QUEUE_WAVE_MEMORY_VIOLATION,
    EC_QUEUE_WAVE_APERTURE_VIOLATION,
    EC_QUEUE_PACKET_DISPATCH_DIM_INVALID,
    EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID,
    EC_QUEUE_PACKET_DISPATCH_CODE_INVALID,
    EC_QUEUE_PACKET_RESERVED,
    EC_QUEUE_PACKET_UNSUPPORTED,
    EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID,
    EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID,
    EC_QUEUE_PACKET_VENDOR_UNSUPPORTED,
    EC_QUEUE_PREEMPTION_ERROR,
    EC_QUEUE_NEW,
    EC_DEVICE_QUEUE_DELETE,
    EC_DEVICE_MEMORY_VIOLATION,
    EC_DEVICE_RAS_ERROR,
    EC_DEVICE_FATAL_HALT,
    EC_DEVICE_NEW,
    EC_PROCESS_RUNTIME,
    EC_PROCESS_DEVICE_REMOVE,
    EC_MAX,
    KFD_EC_MASK_QUEUE,
    KFD_EC_MASK_DEVICE,
    KFD_EC_MASK_PROCESS,
    KFD_EC_MASK_PACKET,
    DEBUG_RUNTIME_STATE_DISABLED,
    DEBUG_RUNTIME_STATE_ENABLED,
    DEBUG_RUNTIME_STATE_ENABLED_BUSY,
    DEBUG_RUNTIME_STATE_ENABLED_ERROR,
    KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
    KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK,
    KFD_DBG_QUEUE_ERROR_BIT,
    KFD_DBG_QUEUE_INVALID_BIT,
    KFD_DBG_QUEUE_ERROR_MASK,
    KFD_DBG_QUEUE_INVALID_MASK,
    KFD_IOC_DBG_TRAP_ENABLE,
    KFD_IOC_DBG_TRAP_DISABLE,
    KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT,
    KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED,
    KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE,
    KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE,
    KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
    KFD_IOC_DBG_TRAP_RESUME_QUEUES,
    KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH,
    KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH,
    KFD_IOC_DBG_TRAP_SET_FLAGS,
    KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT,
    KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO,
    KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT,
    KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT,
    // linux/kfd_sysfs.h
    HSA_CAP_HOT_PLUGGABLE,
    HSA_CAP_ATS_PRESENT,
    HSA_CAP_SHARED_WITH_GRAPHICS,
    HSA_CAP_QUEUE_SIZE_POW2,
    HSA_CAP_QUEUE_SIZE_32BIT,
    HSA_CAP_QUEUE_IDLE_EVENT,
    HSA_CAP_VA_LIMIT,
    HSA_CAP_WATCH_POINTS_SUPPORTED,
    HSA_CAP_WATCH_POINTS_TOTALBITS_MASK,
    HSA_CAP_WATCH_POINTS_TOTALBITS_SHIFT,
    HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK,
    HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT,
    HSA_CAP_DOORBELL_TYPE_PRE_1_0,
    HSA_CAP_DOORBELL_TYPE_1_0,
    HSA_CAP_DOORBELL_TYPE_2_0,
    HSA_CAP_AQL_QUEUE_DOUBLE_MAP,
    HSA_CAP_TRAP_DEBUG_SUPPORT,
    HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED,
    HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED,
    HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED,
    HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED,
    HSA_CAP_MEM_EDCSUPPORTED,
    HSA_CAP_RASEVENTNOTIFY,
    HSA_CAP_ASIC_REVISION_MASK,
    HSA_CAP_ASIC_REVISION_SHIFT,
    HSA_CAP_SRAM_EDCSUPPORTED,
    HSA_CAP_SVMAPI_SUPPORTED,
    HSA_CAP_FLAGS_COHERENTHOSTACCESS,
    HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED,
    HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED,
    HSA_CAP_PER_QUEUE_RESET_SUPPORTED,
    HSA_CAP_RESERVED,
    HSA_CAP2_PER_SDMA_QUEUE_RESET_SUPPORTED,
    HSA_CAP2_RESERVED,
    HSA_DBG_WATCH_ADDR_MASK_LO_BIT_MASK,
    HSA_DBG_WATCH_ADDR_MASK_LO_BIT_SHIFT,
    HSA_DBG_WATCH_ADDR_MASK_HI_BIT_MASK,
    HSA_DBG_WATCH_ADDR_MASK_HI_BIT_SHIFT,
    HSA_DBG_DISPATCH_INFO_ALWAYS_VALID,
    HSA_DBG_WATCHPOINTS_EXCLUSIVE,
    HSA_DBG_RESERVED,
    HSA_MEM_HEAP_TYPE_SYSTEM,
    HSA_MEM_HEAP_TYPE_FB_PUBLIC,
    HSA_MEM_HEAP_TYPE_FB_PRIVATE,
    HSA_MEM_HEAP_TYPE_GPU_GDS,
    HSA_MEM_HEAP_TYPE_GPU_LDS,
    HSA_MEM_HEAP_TYPE_GPU_SCRATCH,
    HSA_MEM_FLAGS_HOT_PLUGGABLE,
    HSA_MEM_FLAGS_NON_VOLATILE,
    HSA_MEM_FLAGS_RESERVED,
    HSA_CACHE_TYPE_DATA,
    HSA_CACHE_TYPE_INSTRUCTION,
    HSA_CACHE_TYPE_CPU,
    HSA_CACHE_TYPE_HSACU,
    HSA_CACHE_TYPE_RESERVED,
    HSA_IOLINK_TYPE_UNDEFINED,
    HSA_IOLINK_TYPE_HYPERTRANSPORT,
    HSA_IOLINK_TYPE_PCIEXPRESS,
    HSA_IOLINK_TYPE_AMBA,
    HSA_IOLINK_TYPE_MIPI,
    HSA_IOLINK_TYPE_QPI_1_1,
    HSA_IOLINK_TYPE_RESERVED1,
    HSA_IOLINK_TYPE_RESERVED2,
    HSA_IOLINK_TYPE_RAPID_IO,
    HSA_IOLINK_TYPE_INFINIBAND,
    HSA_IOLINK_TYPE_RESERVED3,
    HSA_IOLINK_TYPE_XGMI,
    HSA_IOLINK_TYPE_XGOP,
    HSA_IOLINK_TYPE_GZ,
    HSA_IOLINK_TYPE_ETHERNET_RDMA,
    HSA_IOLINK_TYPE_RDMA_OTHER,
    HSA_IOLINK_TYPE_OTHER,
    HSA_IOLINK_FLAGS_ENABLED,
    HSA_IOLINK_FLAGS_NON_COHERENT,
    HSA_IOLINK_FLAGS_NO_ATOMICS_32_BIT,
    HSA_IOLINK_FLAGS_NO_ATOMICS_64_BIT,
    HSA_IOLINK_FLAGS_NO_PEER_TO_PEER_DMA,
    HSA_IOLINK_FLAGS_RESERVED,
];

/// Whether a header value equals ours. C evaluates `(1 << 31)` as a negative `int`, which the
/// probe's widening to `unsigned long long` sign-extends; in the `__u32` field that carries it
/// the value is `0x80000000`, so such values compare at 32 bits.
fn same_value(theirs: u64, ours: u64) -> bool {
    let sign_extended_int = theirs >> 31 == 0x1_FFFF_FFFF;
    theirs == ours || (sign_extended_int && theirs & 0xFFFF_FFFF == ours)
}

/// What the C probe printed.
#[derive(Default)]
struct Probe {
    /// struct → (size, align)
    structs: BTreeMap<String, (usize, usize)>,
    /// (struct, C member) → (offset, size; `None` for a flexible array)
    fields: BTreeMap<(String, String), (usize, Option<usize>)>,
    /// name → value
    values: BTreeMap<String, u64>,
}

fn run_probe(c_source: &str) -> Probe {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kfd-sys-abi-probe");
    std::fs::create_dir_all(&dir).expect("create probe directory");
    let src = dir.join("probe.c");
    let exe = dir.join("probe");
    std::fs::write(&src, c_source).expect("write probe.c");
    let stand_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .arg("-std=gnu11")
        .arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(&stand_in)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` ({e}); install gcc"));
    assert!(
        out.status.success(),
        "the C probe did not compile against the header — kfd-sys names a member the header \
         lacks, or the header changed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().expect("run the C probe");
    assert!(out.status.success(), "the C probe failed");
    let mut probe = Probe::default();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |s: &str| s.parse::<u64>().expect("probe prints decimals");
        match w.as_slice() {
            ["S", name, size, align] => {
                probe
                    .structs
                    .insert(name.to_string(), (num(size) as usize, num(align) as usize));
            }
            ["F", s, f, off, size] => {
                let size = (*size != "-").then(|| num(size) as usize);
                probe
                    .fields
                    .insert((s.to_string(), f.to_string()), (num(off) as usize, size));
            }
            ["V", name, value] => {
                probe.values.insert(name.to_string(), num(value));
            }
            _ => panic!("unexpected probe line {line:?}"),
        }
    }
    probe
}

#[test]
#[cfg_attr(
    miri,
    ignore = "reads /usr/include and runs the C compiler: system calls Miri cannot make"
)]
fn system_headers_match_kfd_sys() {
    let ioctl_h = load("KFD_IOCTL_H", "/usr/include/linux/kfd_ioctl.h");
    let sysfs_h = load("KFD_SYSFS_H", "/usr/include/linux/kfd_sysfs.h");
    let minor = minor_version(&ioctl_h.text);
    let mut failures: Vec<String> = Vec::new();

    let structs = struct_names(&ioctl_h.text);
    let (ioctls, mut constants) = object_macros(&ioctl_h.text);
    let (_, sysfs_constants) = object_macros(&sysfs_h.text);
    let sysfs_count = sysfs_constants.len();
    constants.extend(sysfs_constants);
    constants.extend(enumerators(&ioctl_h.text));

    // --- generate the probe ---------------------------------------------------------------
    let mut c = String::new();
    let _ = writeln!(c, "#include <stdio.h>\n#include <stddef.h>");
    let _ = writeln!(
        c,
        "#include \"{}\"\n#include \"{}\"",
        ioctl_h.path.display(),
        sysfs_h.path.display()
    );
    let _ = writeln!(c, "int main(void) {{");
    let mut field_count = 0;
    for s in &structs {
        let Some(ours) = our_layout(s, minor) else {
            failures.push(format!("the header defines struct {s}, kfd-sys does not"));
            continue;
        };
        let _ = writeln!(
            c,
            "  printf(\"S {s} %zu %zu\\n\", sizeof(struct {s}), _Alignof(struct {s}));"
        );
        for f in ours.fields {
            let Some(m) = c_member(s, f.name, minor) else {
                continue;
            };
            field_count += 1;
            if f.size == 0 {
                let _ = writeln!(
                    c,
                    "  printf(\"F {s} {m} %zu -\\n\", offsetof(struct {s}, {m}));"
                );
            } else {
                let _ = writeln!(
                    c,
                    "  printf(\"F {s} {m} %zu %zu\\n\", offsetof(struct {s}, {m}), \
                     sizeof(((struct {s} *)0)->{m}));"
                );
            }
        }
    }
    for name in ioctls.iter().chain(&constants) {
        let _ = writeln!(
            c,
            "  printf(\"V {name} %llu\\n\", (unsigned long long)({name}));"
        );
    }
    let _ = writeln!(c, "  return 0;\n}}");
    let probe = run_probe(&c);

    // --- structs --------------------------------------------------------------------------
    for s in &structs {
        let Some(ours) = our_layout(s, minor) else {
            continue;
        };
        let (size, align) = probe.structs[s.as_str()];
        if (size, align) != (ours.size, ours.align) {
            failures.push(format!(
                "struct {s}: header size/align {size}/{align}, kfd-sys {}/{}",
                ours.size, ours.align
            ));
        }
        let mut end = 0;
        for f in ours.fields {
            if f.offset != end {
                failures.push(format!(
                    "struct {s}: kfd-sys leaves a gap before {}",
                    f.name
                ));
            }
            end = f.offset + f.size;
            let Some(m) = c_member(s, f.name, minor) else {
                continue;
            };
            let (off, c_size) = probe.fields[&(s.clone(), m.clone())];
            if off != f.offset || c_size.unwrap_or(0) != f.size {
                failures.push(format!(
                    "{s}.{m}: header offset {off} size {c_size:?}, kfd-sys {}.{} offset {} size {}",
                    s, f.name, f.offset, f.size
                ));
            }
        }
        if end != ours.size {
            failures.push(format!(
                "struct {s}: kfd-sys fields end at {end}, size is {}",
                ours.size
            ));
        }
    }

    // --- ioctl request codes --------------------------------------------------------------
    for name in &ioctls {
        let theirs = probe.values[name.as_str()] as u32;
        let ours = if name == "AMDKFD_IOC_CREATE_QUEUE" && minor < 17 {
            v1_8::AMDKFD_IOC_CREATE_QUEUE
        } else {
            match AMDKFD_IOCTLS.iter().find(|d| d.name == name) {
                Some(d) => d.request,
                None => {
                    failures.push(format!("the header defines {name}, kfd-sys does not"));
                    continue;
                }
            }
        };
        if ours != theirs {
            failures.push(format!(
                "{name}: header {theirs:#010x}, kfd-sys {ours:#010x}"
            ));
        }
    }

    // --- constants and enumerators --------------------------------------------------------
    for name in &constants {
        let theirs = probe.values[name.as_str()];
        let Some(&(_, ours)) = OUR_CONSTANTS.iter().find(|(n, _)| n == name) else {
            failures.push(format!("the header defines {name}, kfd-sys does not"));
            continue;
        };
        let agrees = match name.as_str() {
            // Newer than the header: kfd-sys may only be ahead.
            "KFD_IOCTL_MINOR_VERSION" => ours >= theirs,
            "AMDKFD_COMMAND_END" => {
                let last = ioctls
                    .iter()
                    .map(|n| probe.values[n.as_str()] as u32 & 0xFF)
                    .max();
                theirs == u64::from(last.unwrap_or(0)) + 1 && ours >= theirs
            }
            // Bits leave the reserved set as they are assigned.
            "HSA_CAP_RESERVED" => ours & !theirs == 0,
            _ => same_value(theirs, ours),
        };
        if !agrees {
            failures.push(format!("{name}: header {theirs:#x}, kfd-sys {ours:#x}"));
        }
    }

    // --- the documented difference, the other way round -----------------------------------
    if minor < 17 {
        // Facts §7.2: 1.17 grew create_queue_args from 88 to 96 bytes.
        assert_eq!(AMDKFD_IOC_CREATE_QUEUE, 0xC060_4B02);
        assert_eq!(v1_8::AMDKFD_IOC_CREATE_QUEUE, 0xC058_4B02);
        let cq = <kfd_ioctl_create_queue_args as AbiLayout>::ABI_LAYOUT;
        assert_eq!(cq.size, 96);
        assert_eq!(cq.field("sdma_engine_id").map(|f| f.offset), Some(88));
    }

    assert!(
        failures.is_empty(),
        "kfd-sys disagrees with the installed headers:\n  {}",
        failures.join("\n  ")
    );
    println!(
        "checked against {} (interface 1.{minor}) and {}: {} structs ({field_count} fields), \
         {} ioctl request codes, {} constants and enumerators ({sysfs_count} from kfd_sysfs.h)",
        ioctl_h.path.display(),
        sysfs_h.path.display(),
        structs.len(),
        ioctls.len(),
        constants.len(),
    );
    if minor < 17 {
        println!(
            "documented differences, checked both ways: create_queue_args 88 B / {:#010x} in the \
             header = kfd_sys::v1_8, 96 B / {AMDKFD_IOC_CREATE_QUEUE:#010x} in kfd-sys = facts §7.2",
            v1_8::AMDKFD_IOC_CREATE_QUEUE
        );
    }
}
