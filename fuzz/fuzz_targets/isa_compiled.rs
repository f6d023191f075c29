//! Fuzz the block compiler against the interpreter: any bytes as gfx900 and gfx90a code (the
//! first 4 seed the registers, the next 8 EXEC, the next 2 MODE), run on two copies of one
//! wave — through compiled blocks and by the interpreter alone — against two copies of a
//! 64 KiB sandboxed memory and 4 KiB of LDS, resumed alike through barriers, sleeps and
//! traps. Checks: no panic; both runs stop alike after every resume, with the same
//! registers, memory and LDS.
#![no_main]

use isa::exec::{CodeCache, Mode, Stop};
use isa::Target;
use libfuzzer_sys::fuzz_target;

fn word<const N: usize>(data: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = data.get(at + i).copied().unwrap_or(0);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let seed = u32::from_be_bytes(word(data, 0));
    let exec = u64::from_le_bytes(word(data, 4));
    let mode = u16::from_le_bytes(word(data, 12));
    let code = data.get(14..).unwrap_or(&[]);
    for target in [Target::Gfx900, Target::Gfx90a] {
        let compiled = CodeCache::new(target, 0x1000, code).with_compiler();
        let interpreted = compiled.clone().without_compiler();
        let (mut wave, env) = kfd_fuzz::seeded_wave(target, seed);
        // EXEC all ones when the input says nothing (the whole-wave memory steps' case)
        wave.set_exec(if exec == 0 { u64::MAX } else { exec });
        wave.mode = Mode(u32::from(mode) & 0x3ff);
        let (mut a, mut env_a) = (wave.clone(), env.clone());
        let (mut b, mut env_b) = (wave, env);
        for _ in 0..8 {
            let stop_a = a.run(&compiled, &mut env_a, 1000);
            let stop_b = b.run(&interpreted, &mut env_b, 1000);
            assert_eq!(stop_a, stop_b);
            assert_eq!(a.pc, b.pc);
            assert_eq!(a.retired, b.retired);
            assert_eq!(a.sgpr, b.sgpr);
            assert_eq!(a.vgpr, b.vgpr);
            assert_eq!(a.agpr, b.agpr);
            assert_eq!((a.scc, a.mode, a.status), (b.scc, b.mode, b.status));
            assert_eq!(env_a.lds, env_b.lds);
            assert_eq!(env_a.read(0, 0x1_0000), env_b.read(0, 0x1_0000));
            match stop_a {
                Stop::Barrier
                | Stop::Sleep { .. }
                | Stop::Trap { .. }
                | Stop::BudgetExhausted
                | Stop::Halt
                | Stop::Gws(_) => {}
                Stop::EndOfProgram | Stop::Fault(_) => break,
            }
        }
    }
});
