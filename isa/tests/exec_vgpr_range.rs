//! VGPRs past a wave's allocation, as the Vega and MI200 ISA guides' out-of-range rules say
//! ("Out-of-Range behavior", VGPRs: a source out of range reads VGPR0; an instruction whose
//! destination is out of range is ignored, a memory read or an atomic with return issued as
//! with EXEC = 0; with several destinations none is written), and as a strict world reports
//! them (`WaveEnv::vgpr_strict`). kfdtest's PM4 dispatches allocate 20 VGPRs on gfx900 and run
//! a loop shader that uses v0–v28.

mod assemble;

use assemble::asm;

use isa::exec::fault::WaveFault;
use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;
/// The test waves' allocation: 5 granules of 4 (COMPUTE_PGM_RSRC1.VGPRS = 4 on gfx900).
const VGPRS: usize = 20;

fn run(
    src: &str,
    target: Target,
    strict: bool,
    setup: impl FnOnce(&mut Wave, &mut HostEnv),
) -> (Wave, HostEnv, Stop) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut w = Wave::new(target, VGPRS, 0);
    w.pc = BASE;
    let mut env = HostEnv::new(4096);
    env.vgpr_strict = strict;
    setup(&mut w, &mut env);
    let cache = CodeCache::new(target, BASE, &code);
    let stop = w.run(&cache, &mut env, 10_000);
    (w, env, stop)
}

fn lanes(f: impl Fn(usize) -> u32) -> [u32; 64] {
    std::array::from_fn(f)
}

#[test]
fn a_source_past_the_allocation_reads_vgpr0() {
    for target in [Target::Gfx900, Target::Gfx90a] {
        let (w, env, stop) = run("v_add_u32_e32 v1, v25, v2", target, false, |w, _| {
            w.vgpr[0] = lanes(|l| 1000 + l as u32);
            w.vgpr[2] = lanes(|l| l as u32);
        });
        assert_eq!(stop, Stop::EndOfProgram, "{target:?}");
        assert_eq!(
            w.vgpr[1],
            lanes(|l| 1000 + 2 * l as u32),
            "{target:?}: v25 is v0"
        );
        assert_eq!(env.vgpr_out_of_range, [(25, false)], "{target:?}");
    }
}

#[test]
fn an_instruction_whose_destination_is_past_the_allocation_is_ignored() {
    // v_add_co_u32 with VDST out of range writes neither VDST nor the carry (several
    // destinations: none is written); the next instruction runs.
    let (w, env, stop) = run(
        "v_add_co_u32_e64 v28, s[4:5], v0, v0\nv_mov_b32_e32 v3, 9",
        Target::Gfx900,
        false,
        |w, _| {
            w.vgpr[0] = lanes(|_| u32::MAX);
            w.sgpr[4] = 0x1234;
            w.sgpr[5] = 0x5678;
        },
    );
    assert_eq!(stop, Stop::EndOfProgram);
    assert_eq!(
        (w.sgpr[4], w.sgpr[5]),
        (0x1234, 0x5678),
        "carry-out not written"
    );
    assert_eq!(w.vgpr[3], [9; 64]);
    assert_eq!(env.vgpr_out_of_range, [(28, true)]);
}

#[test]
fn a_load_into_registers_past_the_allocation_is_issued_with_no_lane() {
    // The address is unmapped: issued as with EXEC = 0 the load does not fault. A 4-dword
    // load whose last dword is out of range is nullified whole (v[18:21] against 20).
    for src in [
        "global_load_dword v24, v[0:1], off",
        "global_load_dwordx4 v[18:21], v[0:1], off",
        "global_atomic_add v22, v[0:1], v2, off glc",
        "buffer_load_dword v23, v0, s[8:11], 0 offen",
    ] {
        let (w, env, stop) = run(src, Target::Gfx900, false, |w, _| {
            w.vgpr[0] = [0xdead_0000; 64];
            w.vgpr[1] = [0; 64];
            w.vgpr[18] = [7; 64];
            w.vgpr[19] = [7; 64];
            w.sgpr[8..12].copy_from_slice(&[0xdead_0000, 0, 0xffff_ffff, 0x0002_7000]);
        });
        assert_eq!(stop, Stop::EndOfProgram, "{src}: no memory access");
        assert_eq!((w.vgpr[18], w.vgpr[19]), ([7; 64], [7; 64]), "{src}");
        assert!(
            env.vgpr_out_of_range.iter().all(|&(_, d)| d),
            "{src}: {:?}",
            env.vgpr_out_of_range
        );
    }
    // A store names no destination: its out-of-range data register is read as v0.
    let (_, env, stop) = run(
        "global_store_dword v[0:1], v26, off",
        Target::Gfx900,
        false,
        |w, env| {
            env.map(0x8000, 4096);
            w.vgpr[0] = lanes(|l| 0x8000 + 4 * l as u32);
            w.vgpr[1] = [0; 64];
        },
    );
    assert_eq!(stop, Stop::EndOfProgram);
    let word = env.read(0x8000 + 4 * 5, 4).unwrap();
    assert_eq!(
        u32::from_le_bytes(word.try_into().unwrap()),
        0x8000 + 4 * 5,
        "v26 read as v0 (the address)"
    );
}

#[test]
fn a_strict_world_reports_the_register_instead() {
    for (src, index) in [
        ("v_add_u32_e32 v1, v25, v2", 25),
        ("v_mov_b32_e32 v20, 0", 20),
        ("global_load_dwordx2 v[19:20], v[0:1], off", 20),
    ] {
        let (_, env, stop) = run(src, Target::Gfx900, true, |_, _| {});
        assert_eq!(
            stop,
            Stop::Fault(WaveFault::RegisterOutOfRange { file: 'v', index }),
            "{src}"
        );
        assert!(env.vgpr_out_of_range.is_empty());
    }
}

#[test]
fn on_gfx90a_the_unified_file_ends_after_the_agprs() {
    // 20 VGPRs and 8 AGPRs: v27 is a7, v28 is past the file.
    let code = asm(
        "v_mov_b32_e32 v1, v27\nv_mov_b32_e32 v2, v28\ns_endpgm\n",
        "gfx90a",
    );
    let mut w = Wave::new(Target::Gfx90a, VGPRS, 8);
    w.pc = BASE;
    w.vgpr[0] = [5; 64];
    w.agpr[7] = [6; 64];
    let mut env = HostEnv::new(0);
    let cache = CodeCache::new(Target::Gfx90a, BASE, &code);
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    assert_eq!((w.vgpr[1], w.vgpr[2]), ([6; 64], [5; 64]));
    assert_eq!(env.vgpr_out_of_range, [(28, false)]);
}
