//! Global wave sync (`ds_gws_*`): the wave stops with the request for the dispatcher (the
//! resources are the queue's), its PC past the instruction; the resource is M0[21:16] plus
//! the offset, the value comes from the ADDR register of the first active lane (an AGPR with
//! gfx90a's ACC bit).

mod assemble;

use assemble::asm;

use isa::exec::{CodeCache, GwsOp, GwsRequest, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;

fn wave(src: &str, target: Target) -> (Wave, CodeCache, usize) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut w = Wave::new(target, 8, 8);
    w.pc = BASE;
    let len = code.len();
    (w, CodeCache::new(target, BASE, &code), len)
}

#[test]
fn each_gws_instruction_stops_the_wave_with_its_request() {
    for target in [Target::Gfx900, Target::Gfx90a] {
        let src = "s_mov_b32 m0, 0x50000
v_mov_b32 v2, 0x11
s_mov_b64 exec, 0xf0
v_mov_b32 v2, 23
ds_gws_init v2 offset:3 gds
ds_gws_barrier v2 gds
ds_gws_sema_br v2 offset:70 gds
ds_gws_sema_v gds
ds_gws_sema_p offset:1 gds
ds_gws_sema_release_all gds";
        let (mut w, code, len) = wave(src, target);
        let mut env = HostEnv::new(0);
        let want = [
            (GwsOp::Init, 8, 23),
            (GwsOp::Barrier, 5, 23),
            // 5 + 70 wraps around the 64 resources
            (GwsOp::SemaBr, 11, 23),
            (GwsOp::SemaV, 5, 0),
            (GwsOp::SemaP, 6, 0),
            (GwsOp::SemaReleaseAll, 5, 0),
        ];
        // Two moves with a literal (8 bytes) and two with an inline constant (4) come first;
        // each DS instruction is 8 bytes.
        for (k, (op, resource, value)) in want.into_iter().enumerate() {
            assert_eq!(
                w.run(&code, &mut env, 100),
                Stop::Gws(GwsRequest {
                    op,
                    resource,
                    value
                }),
                "{target:?}"
            );
            assert_eq!(w.pc, BASE + 24 + 8 * (k as u64 + 1), "the PC is past it");
        }
        assert_eq!(w.run(&code, &mut env, 100), Stop::EndOfProgram);
        assert_eq!(w.pc, BASE + len as u64 - 4, "at s_endpgm");
        // Lane 0 (inactive) held 0x11: the value is the first active lane's.
    }
}

#[test]
fn on_gfx90a_the_acc_bit_takes_the_value_from_an_agpr() {
    let src = "v_accvgpr_write_b32 a4, 9\nds_gws_barrier a4 gds";
    let (mut w, code, _) = wave(src, Target::Gfx90a);
    let mut env = HostEnv::new(0);
    assert_eq!(
        w.run(&code, &mut env, 100),
        Stop::Gws(GwsRequest {
            op: GwsOp::Barrier,
            resource: 0,
            value: 9
        })
    );
}
