//! Graphics-only encodings (EXP, MIMG) decode and disassemble, and executing one is a typed
//! illegal-instruction fault that names it — the compute model has no export or texture path.

mod assemble;

use assemble::asm;

use isa::exec::fault::WaveFault;
use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

fn faults_naming(src: &str, target: Target, name: &str) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut w = Wave::new(target, 16, 0);
    w.pc = 0x1000;
    w.vgpr[1] = [7; 64];
    let cache = CodeCache::new(target, 0x1000, &code);
    let mut env = HostEnv::new(0);
    match w.run(&cache, &mut env, 10) {
        Stop::Fault(WaveFault::IllegalInstruction { pc, disassembly }) => {
            assert_eq!(pc, 0x1000);
            assert!(disassembly.starts_with(name), "{disassembly}");
        }
        other => panic!("{src}: expected an illegal-instruction fault, got {other:?}"),
    }
    assert_eq!(w.vgpr[1], [7; 64], "nothing written");
}

#[test]
fn exports_and_images_are_illegal_instruction_faults() {
    faults_naming(
        "exp mrt0 v1, v1, v1, v1 done vm",
        Target::Gfx900,
        "exp mrt0 v1, v1, v1, v1 done vm",
    );
    for target in [Target::Gfx900, Target::Gfx90a] {
        faults_naming(
            "image_load v[2:5], v0, s[0:7] dmask:0xf",
            target,
            "image_load v[2:5], v0, s[0:7] dmask:0xf",
        );
        faults_naming(
            "image_sample v1, v0, s[0:7], s[8:11] dmask:0x1",
            target,
            "image_sample v1, v0, s[0:7], s[8:11] dmask:0x1",
        );
    }
}
