//! AGPRs: on gfx90a the VGPRs and AGPRs are one unified file whose AGPRs start at the
//! kernel's ACC_OFFSET (MI200 ISA guide, "Unified VGPR file"; AMDGPUUsage
//! `.amdhsa_accum_offset`), so `v[ACC_OFFSET + i]` is `a[i]`; gfx908 keeps two files. The
//! instructions that move data to and from AGPRs (`v_accvgpr_*`, MFMA C/D, DS and buffer
//! data with the ACC bit) are checked to address that storage.

mod assemble;

use assemble::asm;

use isa::exec::fault::WaveFault;
use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;
/// The VGPR count of the test waves: ACC_OFFSET on gfx90a.
const ACC_OFFSET: usize = 16;

fn wave(src: &str, target: Target) -> (Wave, HostEnv, CodeCache) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut w = Wave::new(target, ACC_OFFSET, 16);
    w.pc = BASE;
    (w, HostEnv::new(4096), CodeCache::new(target, BASE, &code))
}

fn lanes(f: impl Fn(usize) -> u32) -> [u32; 64] {
    std::array::from_fn(f)
}

#[test]
fn gfx90a_vgprs_past_acc_offset_are_the_agprs() {
    // a3 written by v_accvgpr_write is read back as v19 (= 16 + 3); v20 written by a VALU op
    // is read back by v_accvgpr_read from a4
    let (mut w, mut env, cache) = wave(
        "v_accvgpr_write_b32 a3, v0\nv_mov_b32_e32 v1, v19\nv_add_u32_e32 v20, 5, v0\nv_accvgpr_read_b32 v2, a4",
        Target::Gfx90a,
    );
    w.vgpr[0] = lanes(|l| l as u32 * 3 + 1);
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    for l in 0..64 {
        let x = l as u32 * 3 + 1;
        assert_eq!(w.agpr[3][l], x);
        assert_eq!(w.vgpr[1][l], x, "v19 is a3, lane {l}");
        assert_eq!(w.agpr[4][l], x + 5, "v20 is a4, lane {l}");
        assert_eq!(w.vgpr[2][l], x + 5);
    }
}

#[test]
fn gfx908_keeps_separate_files() {
    // gfx908 has no v19 in a 16-VGPR wave: an out-of-range source reads v0 (the ISA guides'
    // out-of-range rule), not a1's AGPR; a strict world faults.
    let (mut w, mut env, cache) = wave("v_mov_b32_e32 v1, v19", Target::Gfx908);
    w.vgpr[0] = lanes(|l| l as u32 + 7);
    w.agpr[3] = lanes(|_| 0xbad);
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    assert_eq!(w.vgpr[1], lanes(|l| l as u32 + 7));
    assert_eq!(env.vgpr_out_of_range, [(19, false)]);
    let (mut w, mut env, cache) = wave("v_mov_b32_e32 v1, v19", Target::Gfx908);
    env.vgpr_strict = true;
    match w.run(&cache, &mut env, 100) {
        Stop::Fault(WaveFault::RegisterOutOfRange {
            file: 'v',
            index: 19,
        }) => {}
        other => panic!("strict: {other:?}"),
    }
}

#[test]
fn gfx90a_mfma_result_in_agprs_is_visible_through_the_unified_file() {
    // 4x4x1 f32: 16 blocks; with A = 2 and B = 3 everywhere and C = a[0:3] = lane index,
    // every D element is 6 + C
    let (mut w, mut env, cache) = wave(
        "v_mfma_f32_4x4x1f32 a[0:3], v0, v1, a[0:3]\nv_mov_b32_e32 v2, v17\nv_mfma_f32_4x4x1f32 v[4:7], v0, v1, v[16:19]",
        Target::Gfx90a,
    );
    w.vgpr[0] = [2.0f32.to_bits(); 64];
    w.vgpr[1] = [3.0f32.to_bits(); 64];
    for r in 0..4 {
        w.agpr[r] = lanes(|l| (l as f32 + r as f32).to_bits());
    }
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    for l in 0..64 {
        for r in 0..4 {
            let once = l as f32 + r as f32 + 6.0;
            assert_eq!(f32::from_bits(w.agpr[r][l]), once, "a{r} lane {l}");
            // the second MFMA reads C from v[16:19] = a[0:3] and writes VGPRs
            assert_eq!(
                f32::from_bits(w.vgpr[4 + r][l]),
                once + 6.0,
                "v{} lane {l}",
                4 + r
            );
        }
        assert_eq!(w.vgpr[2][l], w.agpr[1][l], "v17 is a1");
    }
}

#[test]
fn gfx90a_ds_data_and_results_in_agprs() {
    // ds_write_b32 from a1, ds_read_b32 into a2, ds_add_rtn_u32 with a3 returning into a4
    let (mut w, mut env, cache) = wave(
        "ds_write_b32 v0, a1\nds_read_b32 a2, v0\nds_add_rtn_u32 a4, v0, a3\nds_read_b32 v5, v0\nds_swizzle_b32 a5, v0 offset:swizzle(SWAP,1)",
        Target::Gfx90a,
    );
    w.vgpr[0] = lanes(|l| 4 * l as u32);
    w.agpr[1] = lanes(|l| 1000 + l as u32);
    w.agpr[3] = lanes(|l| l as u32);
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    for l in 0..64 {
        let x = 1000 + l as u32;
        assert_eq!(w.agpr[2][l], x, "ds_read into a2 lane {l}");
        assert_eq!(w.agpr[4][l], x, "returned pre-op value lane {l}");
        assert_eq!(w.vgpr[5][l], x + l as u32, "memory after the add lane {l}");
        // swizzle SWAP,1 exchanges neighbouring lanes of v0 (a VGPR source) into a5
        assert_eq!(w.agpr[5][l], 4 * (l ^ 1) as u32, "swizzle lane {l}");
    }
}

#[test]
fn gfx90a_buffer_loads_and_stores_with_agpr_data() {
    let (mut w, mut env, cache) = wave(
        "buffer_load_dwordx2 a[6:7], v0, s[8:11], 0 offen\nbuffer_store_dword a8, v0, s[8:11], 0 offen offset:512\nglobal_load_dword a9, v[2:3], off",
        Target::Gfx90a,
    );
    let mem: Vec<u8> = (0..1024).map(|i| (i * 7 + 3) as u8).collect();
    env.write(0x4000, &mem);
    w.sgpr[8..12].copy_from_slice(&[0x4000, 0, 1024, 0]);
    w.vgpr[0] = lanes(|l| 8 * l as u32);
    w.vgpr[2] = lanes(|l| 0x4000 + 4 * l as u32);
    w.vgpr[3] = [0; 64];
    w.agpr[8] = lanes(|l| 0xabc0_0000 | l as u32);
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    let d = |p: usize| u32::from_le_bytes([mem[p], mem[p + 1], mem[p + 2], mem[p + 3]]);
    let after = env.read(0x4000, 1024).unwrap();
    for l in 0..64 {
        assert_eq!(
            (w.agpr[6][l], w.agpr[7][l]),
            (d(8 * l), d(8 * l + 4)),
            "lane {l}"
        );
        assert_eq!(w.agpr[9][l], d(4 * l), "global load lane {l}");
        if 8 * l + 512 + 4 <= 1024 {
            let p = 8 * l + 512;
            let got = u32::from_le_bytes([after[p], after[p + 1], after[p + 2], after[p + 3]]);
            assert_eq!(got, 0xabc0_0000 | l as u32, "stored from a8, lane {l}");
        }
    }
}
