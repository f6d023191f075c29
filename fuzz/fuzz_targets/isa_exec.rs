//! Fuzz the wave interpreter: any bytes as gfx900 and gfx90a code, decoded and disassembled at
//! every dword, then run on one wave (registers seeded from the input) against a sandboxed
//! host memory of 64 KiB and 4 KiB of LDS, resumed through barriers, global wave sync requests, sleeps and traps. Checks:
//! no panic; every run ends within its step budget with a typed stop.
#![no_main]

use isa::exec::{CodeCache, Stop};
use isa::{decode, disasm, Target};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let seed = data.iter().take(4).fold(0u32, |a, b| (a << 8) | u32::from(*b));
    let code = data.get(4..).unwrap_or(&[]);
    for target in [Target::Gfx900, Target::Gfx90a] {
        for off in (0..code.len()).step_by(4) {
            if let Ok((inst, _)) = decode(&code[off..], 0x1000 + off as u64, target) {
                let _ = disasm(&inst);
            }
        }
        let cache = CodeCache::new(target, 0x1000, code);
        let (mut wave, mut env) = kfd_fuzz::seeded_wave(target, seed);
        for _ in 0..8 {
            match wave.run(&cache, &mut env, 1000) {
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
