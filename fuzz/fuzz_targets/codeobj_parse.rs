//! Fuzz the code object reader and loader: any bytes as a container (bare code object, offload
//! bundle, HIP host ELF), a code object, a bundle, a metadata note, a kernel object and a target
//! ID string; whatever parses is listed, loaded into host memory, linked and looked up. Checks:
//! no panic; a parsed kernel's descriptor re-encodes to the bytes at its address; a loaded kernel
//! sits at its file address plus the load bias.
#![no_main]

use codeobj::{
    CodeObject, Container, Executable, HostMemory, KernelCode, Metadata, ObjectKind, OffloadBundle,
    TargetId,
};
use libfuzzer_sys::fuzz_target;
use zerocopy::IntoBytes;

fn exercise(co: CodeObject) {
    for k in co.kernels() {
        let _ = k.descriptor.to_directives(&k.name, &co.target().processor);
        if co.kind() != ObjectKind::Relocatable {
            assert_eq!(
                co.bytes_at(k.descriptor_address, 64),
                Some(k.descriptor.as_bytes())
            );
        }
    }
    let _ = (
        co.device_functions().count(),
        co.variables().count(),
        co.metadata(),
    );
    let kernels: Vec<(String, u64)> = co
        .kernels()
        .iter()
        .map(|k| (k.name.clone(), k.descriptor_address))
        .collect();
    let names: Vec<String> = co.symbols().iter().map(|s| s.name.clone()).collect();
    let mut memory = HostMemory::new(0x7f00_0000_0000, 16 << 20);
    let mut exe = Executable::new(co.target().clone());
    let Ok(index) = exe.load(co, &mut memory) else {
        return;
    };
    if exe.freeze(&mut memory).is_err() {
        return;
    }
    let bias = exe
        .code_objects()
        .nth(index)
        .map(|(_, bias)| bias)
        .unwrap_or(0);
    for (name, address) in kernels {
        if let Ok(k) = exe.kernel(&name) {
            // Several kernels may share a name in a hostile file; the first one answers.
            if k.descriptor_address != bias.wrapping_add(address) {
                continue;
            }
            assert_eq!(k.code_object, index);
        }
    }
    for name in &names {
        let _ = (exe.function(name), exe.variable(name));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(container) = Container::parse(data) {
        let _ = container.host_kernels();
        for entry in container.entries() {
            let _ = container.select(&entry.target);
            if let Ok(co) = entry.code_object() {
                exercise(co);
            }
        }
    }
    if let Ok(co) = CodeObject::parse(data) {
        exercise(co);
    }
    if let Ok(bundle) = OffloadBundle::parse(data) {
        for entry in bundle.entries() {
            let _ = (entry.parse_id(), bundle.entry_bytes(entry).len());
        }
    }
    let _ = Metadata::parse(data);
    if let Ok(code) = KernelCode::parse(data) {
        let _ = code.dispatch_info();
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(target) = text.parse::<TargetId>() {
            assert_eq!(target.to_string().parse::<TargetId>().ok(), Some(target));
        }
    }
});
