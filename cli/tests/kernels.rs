//! The code objects kept in cli/kernels/ are what cli/kernels/regenerate.sh builds from
//! cli/kernels/axpy.cl and empty.cl: the same machine code (`.text`) and the same kernel descriptor
//! (`.rodata`). Needs clang-15 (missing: `kfd_testkit`'s policy).

use object::read::elf::ElfFile64;
use object::{Object, ObjectSection};
use std::path::PathBuf;
use std::process::Command;

fn section(bytes: &[u8], name: &str) -> Vec<u8> {
    let elf = ElfFile64::<object::Endianness>::parse(bytes).expect("an ELF code object");
    elf.section_by_name(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .data()
        .expect("section data")
        .to_vec()
}

#[test]
fn the_kept_code_objects_are_what_regenerate_sh_builds() {
    if kfd_testkit::tool("clang-15").is_none() {
        return;
    }
    let kernels = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let out = std::env::temp_dir().join(format!("kfd-kernels-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let status = Command::new("sh")
        .arg(kernels.join("regenerate.sh"))
        .arg(&out)
        .status()
        .expect("sh runs");
    assert!(status.success(), "regenerate.sh failed");
    for name in ["axpy-gfx900", "axpy-gfx90a", "empty-gfx900", "empty-gfx90a"] {
        let name = format!("{name}.hsaco");
        let kept = std::fs::read(kernels.join(&name)).expect("kept code object");
        let fresh = std::fs::read(out.join(&name)).expect("rebuilt code object");
        for s in [".text", ".rodata"] {
            assert_eq!(
                section(&kept, s),
                section(&fresh, s),
                "{name} {s}: run cli/kernels/regenerate.sh and commit the result"
            );
        }
    }
    std::fs::remove_dir_all(&out).unwrap();
}
