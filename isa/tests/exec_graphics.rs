//! Exports (EXP) decode and disassemble, and executing one is a typed illegal-instruction
//! fault that names it: the compute model has no export path. Image instructions (MIMG) run
//! (tests/exec_images.rs), but one whose image resource is not a valid T# (here all zero:
//! TYPE 0) is the same typed fault, as are the MIMG operations the model leaves out
//! (gather4, image atomics) given a valid T#.

mod assemble;

use assemble::asm;

use isa::exec::fault::WaveFault;
use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

fn faults_naming(src: &str, target: Target, name: &str) {
    faults_naming_with(src, target, name, &[]);
}

/// As `faults_naming`, with `sgprs` written from s0 first.
fn faults_naming_with(src: &str, target: Target, name: &str, sgprs: &[u32]) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut w = Wave::new(target, 16, 0);
    w.pc = 0x1000;
    w.vgpr[1] = [7; 64];
    w.sgpr[..sgprs.len()].copy_from_slice(sgprs);
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
fn exports_invalid_image_resources_and_unmodelled_images_are_illegal_instruction_faults() {
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
    // a valid 2-D 8_8_8_8 UNORM T# (s[0:7]) and a zero sampler (s[8:11])
    let t = [
        0x100,
        10 << 20,
        3 | (3 << 14),
        0x9000_0000 | 0xfac,
        0,
        0,
        0,
        0,
    ];
    let mut sgprs = t.to_vec();
    sgprs.extend([0; 4]);
    faults_naming_with(
        "image_gather4 v[2:5], v0, s[0:7], s[8:11] dmask:0x1",
        Target::Gfx900,
        "image_gather4 v[2:5], v0, s[0:7], s[8:11] dmask:0x1",
        &sgprs,
    );
    for target in [Target::Gfx900, Target::Gfx90a] {
        faults_naming_with(
            "image_atomic_add v1, v0, s[0:7] dmask:0x1",
            target,
            "image_atomic_add v1, v0, s[0:7] dmask:0x1",
            &sgprs,
        );
    }
}
