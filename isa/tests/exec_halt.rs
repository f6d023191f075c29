//! STATUS.HALT: `s_sethalt`, and a trap handler that sets HALT with `s_setreg_b32` and
//! returns with `s_rfe_b64` (what ROCr's handler does after reporting an exception). A halted
//! wave stops with `Stop::Halt` at the PC it would resume at and runs nothing further;
//! outside the handler STATUS stays read-only to `s_setreg_b32`.

mod assemble;

use assemble::asm;

use isa::exec::wave::status::{HALT, PRIV};
use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;

fn wave(src: &str, target: Target) -> (Wave, CodeCache) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut w = Wave::new(target, 4, 0);
    w.pc = BASE;
    (w, CodeCache::new(target, BASE, &code))
}

#[test]
fn s_sethalt_stops_the_wave_and_it_stays_stopped() {
    for target in [Target::Gfx900, Target::Gfx90a] {
        // s_sethalt is 4 bytes, s_mov_b32 with an inline constant 4 bytes
        let (mut w, code) = wave("s_mov_b32 s0, 7\ns_sethalt 1\ns_mov_b32 s0, 9", target);
        let mut env = HostEnv::new(0);
        assert_eq!(w.run(&code, &mut env, 100), Stop::Halt);
        assert_eq!((w.pc, w.sgpr[0]), (BASE + 8, 7), "{target:?}");
        assert!(w.halted());
        assert_eq!(w.run(&code, &mut env, 100), Stop::Halt, "still halted");
        assert_eq!((w.pc, w.sgpr[0]), (BASE + 8, 7), "nothing ran");
        // s_sethalt 0 (as a debugger would clear it): the wave goes on
        w.status &= !HALT;
        assert_eq!(w.run(&code, &mut env, 100), Stop::EndOfProgram);
        assert_eq!(w.sgpr[0], 9);
    }
}

#[test]
fn a_trap_handler_sets_halt_and_returns_into_a_halted_wave() {
    for target in [Target::Gfx900, Target::Gfx90a] {
        let (mut w, code) = wave(
            "s_setreg_b32 hwreg(HW_REG_STATUS), s4\ns_mov_b32 s0, 1\ns_rfe_b64 s[2:3]",
            target,
        );
        let mut env = HostEnv::new(0);
        w.status |= PRIV;
        w.sgpr[4] = w.status_value() | HALT;
        w.set_sgpr64(2, 0x2000);
        assert_eq!(w.run(&code, &mut env, 100), Stop::Halt, "{target:?}");
        assert_eq!(w.sgpr[0], 1, "HALT waits for the handler's return");
        assert_eq!(w.pc, 0x2000, "the PC s_rfe_b64 returned to");
        assert_eq!(w.status & (PRIV | HALT), HALT);
    }
}

#[test]
fn a_user_wave_cannot_set_halt_through_s_setreg() {
    let (mut w, code) = wave("s_setreg_b32 hwreg(HW_REG_STATUS), s4", Target::Gfx900);
    let mut env = HostEnv::new(0);
    w.sgpr[4] = HALT;
    assert_eq!(w.run(&code, &mut env, 100), Stop::EndOfProgram);
    assert_eq!(w.status & HALT, 0);
}
