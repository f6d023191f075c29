//! `Wave::retired`: the count of executed instructions the model's SQ counters and `kfd run`
//! report. Encodings are llvm-mc-15's for gfx900 (`-show-encoding`).

use isa::exec::{CodeCache, HostEnv, Stop, Wave, WaveFault};
use isa::Target;

const BASE: u64 = 0x1000;

/// `s_mov_b32 s0, 5`, `s_nop 0`, `s_load_dword s2, s[0:1], 0x0`, `s_endpgm`.
const PROGRAM: [u32; 5] = [
    0xbe80_0085,
    0xbf80_0000,
    0xc002_0080,
    0x0000_0000,
    0xbf81_0000,
];

fn code() -> CodeCache {
    let bytes: Vec<u8> = PROGRAM.iter().flat_map(|w| w.to_le_bytes()).collect();
    CodeCache::new(Target::Gfx900, BASE, &bytes)
}

#[test]
fn every_executed_instruction_is_counted_once_across_budgets() {
    let code = code();
    let mut env = HostEnv::new(0);
    // s0 = 5 makes the load read address 5 (dword-aligned down to 4): map it.
    env.map(0, 4096);
    let mut wave = Wave::new(Target::Gfx900, 4, 0);
    wave.pc = BASE;
    assert_eq!(wave.retired, 0);
    assert_eq!(wave.run(&code, &mut env, 1), Stop::BudgetExhausted);
    assert_eq!(wave.retired, 1);
    assert_eq!(wave.run(&code, &mut env, 100), Stop::EndOfProgram);
    // s_mov, s_nop, s_load and s_endpgm.
    assert_eq!(wave.retired, 4);
}

#[test]
fn a_faulting_instruction_is_not_counted() {
    let code = code();
    // Nothing mapped: the scalar load faults.
    let mut env = HostEnv::new(0);
    let mut wave = Wave::new(Target::Gfx900, 4, 0);
    wave.pc = BASE;
    let stop = wave.run(&code, &mut env, 100);
    assert!(
        matches!(stop, Stop::Fault(WaveFault::Memory(_))),
        "{stop:?}"
    );
    assert_eq!(wave.retired, 2, "s_mov and s_nop ran, the load faulted");
}
