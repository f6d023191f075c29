//! gfx90a's DPP `row_newbcast:n` on 32-bit operands (MI200 ISA guide, DPP_CTRL 0x150–0x15F:
//! every lane of a row reads lane n of that row), with the row/bank masks, neg/abs source
//! modifiers and EXEC as for every DPP control.

mod assemble;

use assemble::asm;

use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;

fn run(src: &str, exec: u64) -> Wave {
    let code = asm(&format!("{src}\ns_endpgm\n"), "gfx90a");
    let mut w = Wave::new(Target::Gfx90a, 16, 0);
    w.pc = BASE;
    for l in 0..64 {
        w.vgpr[2][l] = (l as f32 * 1.5 - 10.0).to_bits();
        w.vgpr[3][l] = (l as f32).to_bits();
        w.vgpr[1][l] = 0xdead_0000 | l as u32;
        w.vgpr[4][l] = l as u32 * 7;
    }
    w.set_exec(exec);
    let cache = CodeCache::new(Target::Gfx90a, BASE, &code);
    let mut env = HostEnv::new(0);
    assert_eq!(w.run(&cache, &mut env, 10), Stop::EndOfProgram, "{src}");
    w
}

fn v2(l: usize) -> f32 {
    l as f32 * 1.5 - 10.0
}

#[test]
fn mov_reads_lane_n_of_each_row() {
    for n in [0usize, 3, 15] {
        let w = run(
            &format!("v_mov_b32_dpp v5, v4 row_newbcast:{n} row_mask:0xf bank_mask:0xf"),
            u64::MAX,
        );
        for l in 0..64 {
            assert_eq!(w.vgpr[5][l], ((l & !15) + n) as u32 * 7, "n {n} lane {l}");
        }
    }
}

#[test]
fn float_add_with_neg_and_row_mask() {
    // rows 0 and 2 enabled: they compute -v2[row + 15] + v3; rows 1 and 3 keep v1
    let w = run(
        "v_add_f32_dpp v1, -v2, v3 row_newbcast:15 row_mask:0x5 bank_mask:0xf",
        u64::MAX,
    );
    for l in 0..64 {
        let row = l / 16;
        let want = if row % 2 == 0 {
            (-v2((l & !15) + 15) + l as f32).to_bits()
        } else {
            0xdead_0000 | l as u32
        };
        assert_eq!(w.vgpr[1][l], want, "lane {l}");
    }
}

#[test]
fn inactive_source_lane_skips_the_write_unless_bound_ctrl() {
    // lane 1 of every row is off in EXEC; row_newbcast:1 reads it
    let exec = !0x0002_0002_0002_0002u64;
    let w = run(
        "v_mov_b32_dpp v1, v4 row_newbcast:1 row_mask:0xf bank_mask:0xf",
        exec,
    );
    for l in 0..64 {
        assert_eq!(w.vgpr[1][l], 0xdead_0000 | l as u32, "no write, lane {l}");
    }
    let w = run(
        "v_mov_b32_dpp v1, v4 row_newbcast:1 row_mask:0xf bank_mask:0xf bound_ctrl:0",
        exec,
    );
    for l in 0..64 {
        let want = if (exec >> l) & 1 != 0 {
            0
        } else {
            0xdead_0000 | l as u32
        };
        assert_eq!(w.vgpr[1][l], want, "bound_ctrl reads 0, lane {l}");
    }
}
