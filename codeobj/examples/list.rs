//! Lists what a code object file holds: for each device code object its target, kernels
//! (descriptor, entry, code size, registers), device functions and variables with sizes; for a
//! HIP program also the host kernel handles and stubs.
//!
//! `cargo run -p codeobj --example list -- <file> [<agent target ID>]`

use codeobj::{Container, Executable, HostMemory, SymbolKind, TargetId};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: list <code object | offload bundle | HIP program> [agent target ID]");
        std::process::exit(2);
    };
    let agent = args.next();
    if let Err(e) = run(&path, agent.as_deref()) {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    }
}

fn run(path: &str, agent: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    let bytes = std::fs::read(path)?;
    let container = Container::parse(&bytes)?;
    println!(
        "{path}: {:?}, {} device code object(s)",
        container.kind(),
        container.entries().len()
    );
    for entry in container.entries() {
        let co = entry.code_object()?;
        println!(
            "\n{} at file offset {:#x}, {} bytes: target {}, code object {:?}",
            entry.id,
            entry.file_offset,
            entry.bytes.len(),
            co.target(),
            co.version()
        );
        for k in co.kernels() {
            let (sgprs, vgprs) = k
                .metadata
                .as_ref()
                .map_or((0, 0), |m| (m.sgpr_count, m.vgpr_count));
            println!(
                "  kernel   {:<40} kd {:#8x} entry {:#8x} {:>6} B  kernarg {:>4} B  sgpr {sgprs} vgpr {vgprs}",
                k.name,
                k.descriptor_address,
                k.entry_address,
                k.code_size,
                k.descriptor.kernarg_size
            );
        }
        for f in co.device_functions() {
            println!(
                "  function {:<40} {:#8x} {:>6} B  {:?}",
                f.name, f.value, f.size, f.binding
            );
        }
        for v in co.variables() {
            println!(
                "  variable {:<40} {:#8x} {:>6} B  {:?}",
                v.name, v.value, v.size, v.binding
            );
        }
        for u in co.undefined_symbols() {
            println!("  needs    {}", u.name);
        }
    }
    for k in container.host_kernels()? {
        println!(
            "\nhost handle {:#x} {} (stub {}) -> device kernel {}",
            k.handle.address,
            k.handle.name,
            k.stub.as_ref().map_or("-".to_string(), |s| format!(
                "{} @ {:#x}",
                s.name, s.address
            )),
            k.device_name
        );
    }
    if let Some(agent) = agent {
        let agent: TargetId = agent.parse()?;
        let co = container.code_object_for(&agent)?;
        let mut memory = HostMemory::new(0x7f00_0000_0000, 1 << 30);
        let mut exe = Executable::new(agent.clone());
        exe.load(co, &mut memory)?;
        exe.freeze(&mut memory)?;
        println!("\nloaded for {agent}:");
        for k in exe.kernels()? {
            println!(
                "  kernel   {:<40} kd {:#x} entry {:#x}",
                k.name, k.descriptor_address, k.entry_address
            );
        }
        for f in exe.symbols_of(SymbolKind::DeviceFunction)? {
            println!("  function {:<40} {:#x}", f.name, f.address);
        }
    }
    Ok(())
}
