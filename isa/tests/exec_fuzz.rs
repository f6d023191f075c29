//! Random instruction streams through decode, disassembly and execution in a sandboxed
//! memory world: whatever the words, the wave stops with a [`Stop`] — no panic — and a
//! step budget bounds every run.

use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::{decode, disasm, Target};
use proptest::prelude::*;

const BASE: u64 = 0x1000;

/// Runs `words` as code on one wave of `target`; returns how it stopped.
fn run_words(words: &[u32], target: Target, seed: u32) -> Stop {
    let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    // decode + disassemble every offset as the cache will
    for off in (0..code.len()).step_by(4) {
        if let Ok((inst, _)) = decode(&code[off..], BASE + off as u64, target) {
            let _ = disasm(&inst);
        }
    }
    let cache = CodeCache::new(target, BASE, &code);
    let mut env = HostEnv::new(4096);
    env.map(0, 0x1_0000);
    let mut wave = Wave::new(target, 64, 32);
    wave.pc = BASE;
    for (i, s) in wave.sgpr.iter_mut().enumerate().take(102) {
        *s = seed.wrapping_mul(i as u32 + 1) & 0xfffc;
    }
    for (r, v) in wave.vgpr.iter_mut().enumerate() {
        for (l, x) in v.iter_mut().enumerate() {
            *x = seed.rotate_left(r as u32).wrapping_add(4 * l as u32) & 0xfffc;
        }
    }
    // resume through barriers, GWS requests, sleeps and traps a few times, as a CU would
    let mut stop = Stop::BudgetExhausted;
    for _ in 0..8 {
        stop = wave.run(&cache, &mut env, 500);
        match stop {
            Stop::Barrier
            | Stop::Sleep { .. }
            | Stop::Trap { .. }
            | Stop::BudgetExhausted
            | Stop::Halt
            | Stop::Gws(_) => continue,
            _ => break,
        }
    }
    stop
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_words_never_panic(words in prop::collection::vec(any::<u32>(), 1..48), seed in any::<u32>()) {
        for target in [Target::Gfx900, Target::Gfx90a] {
            let _ = run_words(&words, target, seed);
        }
    }

    /// Words drawn from the vector/scalar ALU and memory encodings' opcode spaces, so most
    /// decode and actually execute.
    #[test]
    fn plausible_words_never_panic(
        ops in prop::collection::vec((0usize..8, any::<u32>(), any::<u32>()), 1..32),
        seed in any::<u32>(),
    ) {
        let prefixes: [(u32, u32); 8] = [
            (0x0000_0000, 0x7fff_ffff), // VOP2/VOP1/VOPC
            (0xd000_0000, 0x03ff_ffff), // VOP3
            (0xbe80_0000, 0x007f_ffff), // SOP1
            (0x8000_0000, 0x3fff_ffff), // SOP2
            (0xd800_0000, 0x03ff_ffff), // DS
            (0xdc00_0000, 0x03ff_ffff), // FLAT/GLOBAL/SCRATCH
            (0xe000_0000, 0x03ff_ffff), // MUBUF
            (0xbf80_0000, 0x007f_ffff), // SOPP
        ];
        let mut words = Vec::new();
        for (k, a, b) in ops {
            let (p, m) = prefixes[k];
            words.push(p | (a & m));
            words.push(b);
        }
        for target in [Target::Gfx900, Target::Gfx90a] {
            let _ = run_words(&words, target, seed);
        }
    }
}

#[test]
fn an_endless_loop_stops_at_the_budget() {
    // s_branch -1
    assert_eq!(
        run_words(&[0xbf82_ffff], Target::Gfx900, 0),
        Stop::BudgetExhausted
    );
}
