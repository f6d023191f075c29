//! The render-node uapi the shim and the model spell (DRM and amdgpu GEM structs, request
//! codes, domain and VA constants) against the installed `libdrm/amdgpu_drm.h` and
//! `libdrm/drm.h` (Debian's libdrm-dev; `AMDGPU_DRM_H` overrides the amdgpu header's path):
//! a C probe prints every size, offset and value, and each must equal the Rust one.

use kfd_preload::drm::*;
use kfd_sys::drm::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Every item checked: its name in the probe's output, and the Rust value.
fn expected() -> BTreeMap<String, u64> {
    use core::mem::{offset_of, size_of};
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: u64| {
        m.insert(k.to_owned(), v);
    };
    // Structs: size and every field's offset.
    put("sizeof drm_version", size_of::<DrmVersion>() as u64);
    put(
        "off drm_version.name_len",
        offset_of!(DrmVersion, name_len) as u64,
    );
    put("off drm_version.name", offset_of!(DrmVersion, name) as u64);
    put(
        "off drm_version.date_len",
        offset_of!(DrmVersion, date_len) as u64,
    );
    put("off drm_version.desc", offset_of!(DrmVersion, desc) as u64);
    put("sizeof drm_amdgpu_info", size_of::<DrmAmdgpuInfo>() as u64);
    put(
        "off drm_amdgpu_info.return_size",
        offset_of!(DrmAmdgpuInfo, return_size) as u64,
    );
    put(
        "off drm_amdgpu_info.query",
        offset_of!(DrmAmdgpuInfo, query) as u64,
    );
    put(
        "off drm_amdgpu_info.read_mmr_reg.dword_offset",
        offset_of!(DrmAmdgpuInfo, mmr_dword_offset) as u64,
    );
    put(
        "off drm_amdgpu_info.read_mmr_reg.count",
        offset_of!(DrmAmdgpuInfo, mmr_count) as u64,
    );
    put(
        "off drm_amdgpu_info.read_mmr_reg.instance",
        offset_of!(DrmAmdgpuInfo, mmr_instance) as u64,
    );
    put(
        "off drm_amdgpu_info.read_mmr_reg.flags",
        offset_of!(DrmAmdgpuInfo, mmr_flags) as u64,
    );
    // The unions are as large as their input member; the output overlays it.
    put(
        "sizeof drm_amdgpu_gem_create",
        size_of::<DrmAmdgpuGemCreateIn>() as u64,
    );
    put(
        "sizeof drm_amdgpu_gem_create_in",
        size_of::<DrmAmdgpuGemCreateIn>() as u64,
    );
    put(
        "off drm_amdgpu_gem_create_in.bo_size",
        offset_of!(DrmAmdgpuGemCreateIn, bo_size) as u64,
    );
    put(
        "off drm_amdgpu_gem_create_in.alignment",
        offset_of!(DrmAmdgpuGemCreateIn, alignment) as u64,
    );
    put(
        "off drm_amdgpu_gem_create_in.domains",
        offset_of!(DrmAmdgpuGemCreateIn, domains) as u64,
    );
    put(
        "off drm_amdgpu_gem_create_in.domain_flags",
        offset_of!(DrmAmdgpuGemCreateIn, domain_flags) as u64,
    );
    put(
        "sizeof drm_amdgpu_gem_create_out",
        size_of::<DrmAmdgpuGemCreateOut>() as u64,
    );
    put(
        "off drm_amdgpu_gem_create_out.handle",
        offset_of!(DrmAmdgpuGemCreateOut, handle) as u64,
    );
    put(
        "sizeof drm_amdgpu_gem_mmap",
        size_of::<DrmAmdgpuGemMmapIn>() as u64,
    );
    put(
        "sizeof drm_amdgpu_gem_mmap_in",
        size_of::<DrmAmdgpuGemMmapIn>() as u64,
    );
    put(
        "off drm_amdgpu_gem_mmap_in.handle",
        offset_of!(DrmAmdgpuGemMmapIn, handle) as u64,
    );
    put("sizeof drm_amdgpu_gem_mmap_out", 8);
    put("off drm_amdgpu_gem_mmap_out.addr_ptr", 0);
    put(
        "sizeof drm_amdgpu_gem_va",
        size_of::<DrmAmdgpuGemVa>() as u64,
    );
    put(
        "off drm_amdgpu_gem_va.handle",
        offset_of!(DrmAmdgpuGemVa, handle) as u64,
    );
    put(
        "off drm_amdgpu_gem_va.operation",
        offset_of!(DrmAmdgpuGemVa, operation) as u64,
    );
    put(
        "off drm_amdgpu_gem_va.flags",
        offset_of!(DrmAmdgpuGemVa, flags) as u64,
    );
    put(
        "off drm_amdgpu_gem_va.va_address",
        offset_of!(DrmAmdgpuGemVa, va_address) as u64,
    );
    put(
        "off drm_amdgpu_gem_va.offset_in_bo",
        offset_of!(DrmAmdgpuGemVa, offset_in_bo) as u64,
    );
    put(
        "off drm_amdgpu_gem_va.map_size",
        offset_of!(DrmAmdgpuGemVa, map_size) as u64,
    );
    put("sizeof drm_gem_close", size_of::<DrmGemClose>() as u64);
    put(
        "off drm_gem_close.handle",
        offset_of!(DrmGemClose, handle) as u64,
    );
    put(
        "sizeof drm_prime_handle",
        size_of::<DrmPrimeHandle>() as u64,
    );
    put(
        "off drm_prime_handle.handle",
        offset_of!(DrmPrimeHandle, handle) as u64,
    );
    put(
        "off drm_prime_handle.flags",
        offset_of!(DrmPrimeHandle, flags) as u64,
    );
    put(
        "off drm_prime_handle.fd",
        offset_of!(DrmPrimeHandle, fd) as u64,
    );
    // Request codes.
    put("DRM_IOCTL_VERSION", u64::from(DRM_IOCTL_VERSION));
    put("DRM_IOCTL_AMDGPU_INFO", u64::from(DRM_IOCTL_AMDGPU_INFO));
    put(
        "DRM_IOCTL_AMDGPU_GEM_CREATE",
        u64::from(DRM_IOCTL_AMDGPU_GEM_CREATE),
    );
    put(
        "DRM_IOCTL_AMDGPU_GEM_MMAP",
        u64::from(DRM_IOCTL_AMDGPU_GEM_MMAP),
    );
    put(
        "DRM_IOCTL_AMDGPU_GEM_VA",
        u64::from(DRM_IOCTL_AMDGPU_GEM_VA),
    );
    put("DRM_IOCTL_GEM_CLOSE", u64::from(DRM_IOCTL_GEM_CLOSE));
    put(
        "DRM_IOCTL_PRIME_HANDLE_TO_FD",
        u64::from(DRM_IOCTL_PRIME_HANDLE_TO_FD),
    );
    for (name, code) in [
        ("DRM_IOCTL_AMDGPU_CTX", DRM_IOCTL_AMDGPU_CTX),
        ("DRM_IOCTL_AMDGPU_BO_LIST", DRM_IOCTL_AMDGPU_BO_LIST),
        ("DRM_IOCTL_AMDGPU_CS", DRM_IOCTL_AMDGPU_CS),
        (
            "DRM_IOCTL_AMDGPU_GEM_METADATA",
            DRM_IOCTL_AMDGPU_GEM_METADATA,
        ),
        ("DRM_IOCTL_AMDGPU_WAIT_CS", DRM_IOCTL_AMDGPU_WAIT_CS),
        ("DRM_IOCTL_AMDGPU_GEM_OP", DRM_IOCTL_AMDGPU_GEM_OP),
    ] {
        put(name, u64::from(code));
    }
    // Constants the model decodes.
    put("AMDGPU_GEM_DOMAIN_CPU", AMDGPU_GEM_DOMAIN_CPU);
    put("AMDGPU_GEM_DOMAIN_GTT", AMDGPU_GEM_DOMAIN_GTT);
    put("AMDGPU_GEM_DOMAIN_VRAM", AMDGPU_GEM_DOMAIN_VRAM);
    put("AMDGPU_GEM_DOMAIN_GDS", AMDGPU_GEM_DOMAIN_GDS);
    put("AMDGPU_GEM_DOMAIN_GWS", AMDGPU_GEM_DOMAIN_GWS);
    put("AMDGPU_GEM_DOMAIN_OA", AMDGPU_GEM_DOMAIN_OA);
    put("AMDGPU_GEM_DOMAIN_MASK", AMDGPU_GEM_DOMAIN_MASK);
    put(
        "AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED",
        AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED,
    );
    put("AMDGPU_VA_OP_MAP", u64::from(AMDGPU_VA_OP_MAP));
    put("AMDGPU_VA_OP_UNMAP", u64::from(AMDGPU_VA_OP_UNMAP));
    put("AMDGPU_VA_OP_CLEAR", u64::from(AMDGPU_VA_OP_CLEAR));
    put("AMDGPU_VA_OP_REPLACE", u64::from(AMDGPU_VA_OP_REPLACE));
    put(
        "AMDGPU_VM_PAGE_WRITEABLE",
        u64::from(AMDGPU_VM_PAGE_WRITEABLE),
    );
    put("AMDGPU_VM_PAGE_PRT", u64::from(AMDGPU_VM_PAGE_PRT));
    put(
        "AMDGPU_INFO_ACCEL_WORKING",
        u64::from(AMDGPU_INFO_ACCEL_WORKING),
    );
    put("AMDGPU_INFO_VRAM_GTT", u64::from(AMDGPU_INFO_VRAM_GTT));
    put("AMDGPU_INFO_DEV_INFO", u64::from(AMDGPU_INFO_DEV_INFO));
    put("AMDGPU_INFO_MEMORY", u64::from(AMDGPU_INFO_MEMORY));
    put(
        "AMDGPU_INFO_READ_MMR_REG",
        u64::from(AMDGPU_INFO_READ_MMR_REG),
    );
    put("DRM_CLOEXEC", libc::O_CLOEXEC as u64);
    put("DRM_RDWR", libc::O_RDWR as u64);
    m
}

/// The C expression the probe prints for an item name.
fn c_expr(name: &str) -> String {
    if let Some(t) = name.strip_prefix("sizeof ") {
        let kind = if matches!(t, "drm_amdgpu_gem_create" | "drm_amdgpu_gem_mmap") {
            "union"
        } else {
            "struct"
        };
        format!("sizeof({kind} {t})")
    } else if let Some(f) = name.strip_prefix("off ") {
        let (t, field) = f.split_once('.').expect("struct.field");
        format!("offsetof(struct {t}, {field})")
    } else {
        name.to_owned()
    }
}

#[test]
fn render_node_uapi_matches_libdrm_headers() {
    let header = std::env::var_os("AMDGPU_DRM_H")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/include/libdrm/amdgpu_drm.h".into());
    assert!(
        header.exists(),
        "{} is missing: install Debian's libdrm-dev (scripts/ensure-deps.sh does)",
        header.display()
    );
    let include = header.parent().expect("header directory");
    let want = expected();
    let mut src = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <fcntl.h>\n\
         #include <drm.h>\n#include <amdgpu_drm.h>\nint main(void) {\n",
    );
    for name in want.keys() {
        src.push_str(&format!(
            "    printf(\"%s=%llu\\n\", \"{name}\", (unsigned long long)({}));\n",
            c_expr(name)
        ));
    }
    src.push_str("    return 0;\n}\n");
    let dir = std::env::temp_dir().join(format!("amdgpu-drm-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("probe directory");
    let (c, exe) = (dir.join("probe.c"), dir.join("probe"));
    std::fs::write(&c, src).expect("write the probe");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=gnu11", "-Wall", "-Werror", "-I"])
        .arg(include)
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` ({e})"));
    assert!(
        out.status.success(),
        "the probe does not compile against {}:\n{}",
        header.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().expect("run the probe");
    let _ = std::fs::remove_dir_all(&dir);
    let got: BTreeMap<String, u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.parse().expect("a number")))
        .collect();
    let diff: Vec<String> = want
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: header {:?}, Rust {v}", got.get(k)))
        .collect();
    assert!(diff.is_empty(), "differences:\n{}", diff.join("\n"));
    println!(
        "{} items equal in {} and drm.h",
        want.len(),
        header.display()
    );
}
