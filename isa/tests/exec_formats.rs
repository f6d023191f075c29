//! Typed buffer accesses: `tbuffer_*` (format in the instruction) and `buffer_*_format_*`
//! (format and DST_SEL in the buffer resource). Programs are assembled by llvm-mc-15 and run
//! on one wave; the expected registers and memory are computed here from the formats'
//! definitions (UNORM = n / (2^bits - 1), SNORM = max(n / (2^(bits-1) - 1), -1), USCALED /
//! SSCALED = the integer as a float, UINT / SINT = zero / sign extension, FLOAT = IEEE;
//! missing components read 0, and W reads 1).

mod assemble;

use assemble::asm;

use isa::exec::fault::WaveFault;
use isa::exec::{CodeCache, HostEnv, Mode, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;
const BUF: u64 = 0x4000;

/// A wave with a raw buffer at `BUF` in s[8:11] (`num_records` bytes, resource dword 3
/// `d3`), VGPR v0 = lane * `stride` (the offen offset), and `mem` written at `BUF`.
fn setup(
    src: &str,
    target: Target,
    d3: u32,
    num_records: u32,
    stride: u32,
    mem: &[u8],
) -> (Wave, HostEnv, CodeCache) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut wave = Wave::new(target, 32, 16);
    wave.pc = BASE;
    wave.mode = Mode((3 << 6) | (1 << 8) | (1 << 9));
    wave.sgpr[8..12].copy_from_slice(&[BUF as u32, 0, num_records, d3]);
    for l in 0..64 {
        wave.vgpr[0][l] = l as u32 * stride;
    }
    let mut env = HostEnv::new(1024);
    env.write(BUF, mem);
    (wave, env, CodeCache::new(target, BASE, &code))
}

fn run(src: &str, d3: u32, num_records: u32, stride: u32, mem: &[u8]) -> (Wave, HostEnv) {
    let (mut wave, mut env, cache) = setup(src, Target::Gfx900, d3, num_records, stride, mem);
    assert_eq!(wave.run(&cache, &mut env, 100), Stop::EndOfProgram, "{src}");
    (wave, env)
}

fn f(v: f64) -> u32 {
    (v as f32).to_bits()
}

fn bytes(n: usize, g: impl Fn(usize) -> u8) -> Vec<u8> {
    (0..n).map(g).collect()
}

#[test]
fn tbuffer_8_8_8_8_unorm_loads_normalised_floats() {
    let mem = bytes(256, |i| (i * 37 + 11) as u8);
    let (w, _) = run(
        "tbuffer_load_format_xyzw v[2:5], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_8_8_8_8,BUF_NUM_FORMAT_UNORM] offen",
        0,
        256,
        4,
        &mem,
    );
    for l in 0..64 {
        for c in 0..4 {
            let b = mem[4 * l + c];
            assert_eq!(
                w.vgpr[2 + c][l],
                f(f64::from(b) / 255.0),
                "lane {l} comp {c}"
            );
        }
    }
}

#[test]
fn tbuffer_signed_and_scaled_formats() {
    // 16_16 SNORM, 8 SINT, 16 USCALED and 8_8 SSCALED, each read from the same bytes
    let mem = bytes(256, |i| (i * 89 + 200) as u8);
    let (w, _) = run(
        "tbuffer_load_format_xy v[2:3], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_SNORM] offen\n\
         tbuffer_load_format_x v4, v0, s[8:11], 0 format:[BUF_DATA_FORMAT_8,BUF_NUM_FORMAT_SINT] offen\n\
         tbuffer_load_format_x v5, v0, s[8:11], 0 format:[BUF_DATA_FORMAT_16,BUF_NUM_FORMAT_USCALED] offen\n\
         tbuffer_load_format_xy v[6:7], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_8_8,BUF_NUM_FORMAT_SSCALED] offen",
        0,
        256,
        4,
        &mem,
    );
    for l in 0..64 {
        let h = |i: usize| u16::from_le_bytes([mem[4 * l + 2 * i], mem[4 * l + 2 * i + 1]]);
        for c in 0..2 {
            let want = (f64::from(h(c) as i16) / 32767.0).max(-1.0);
            assert_eq!(w.vgpr[2 + c][l], f(want), "snorm lane {l} comp {c}");
        }
        assert_eq!(
            w.vgpr[4][l],
            mem[4 * l] as i8 as i32 as u32,
            "sint lane {l}"
        );
        assert_eq!(w.vgpr[5][l], f(f64::from(h(0))), "uscaled lane {l}");
        for c in 0..2 {
            let want = f64::from(mem[4 * l + c] as i8);
            assert_eq!(w.vgpr[6 + c][l], f(want), "sscaled lane {l} comp {c}");
        }
    }
}

#[test]
fn tbuffer_32bit_float_and_uint_x1_to_x4() {
    let mem = bytes(1024, |i| (i * 13 + 7) as u8);
    let (w, _) = run(
        "tbuffer_load_format_xyzw v[2:5], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_32_32_32_32,BUF_NUM_FORMAT_FLOAT] offen\n\
         tbuffer_load_format_xyz v[6:8], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_32_32_32,BUF_NUM_FORMAT_UINT] offen\n\
         tbuffer_load_format_xyzw v[9:12], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_32_32,BUF_NUM_FORMAT_FLOAT] offen\n\
         tbuffer_load_format_xyzw v[13:16], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_32,BUF_NUM_FORMAT_UINT] offen",
        0,
        1024,
        16,
        &mem,
    );
    for l in 0..64 {
        let d = |i: usize| {
            let p = 16 * l + 4 * i;
            u32::from_le_bytes([mem[p], mem[p + 1], mem[p + 2], mem[p + 3]])
        };
        for c in 0..4 {
            assert_eq!(w.vgpr[2 + c][l], d(c), "32_32_32_32 lane {l}");
        }
        for c in 0..3 {
            assert_eq!(w.vgpr[6 + c][l], d(c), "32_32_32 lane {l}");
        }
        // two components: z reads 0, w reads 1.0
        assert_eq!(
            [w.vgpr[9][l], w.vgpr[10][l], w.vgpr[11][l], w.vgpr[12][l]],
            [d(0), d(1), 0, 1.0f32.to_bits()]
        );
        // one integer component: y, z read 0, w reads 1
        assert_eq!(
            [w.vgpr[13][l], w.vgpr[14][l], w.vgpr[15][l], w.vgpr[16][l]],
            [d(0), 0, 0, 1]
        );
    }
}

#[test]
fn tbuffer_stores_convert_to_the_format() {
    // lane l stores 4 floats to 8_8_8_8 UNORM and 2 integers to 16_16 UINT
    let src = "tbuffer_store_format_xyzw v[2:5], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_8_8_8_8,BUF_NUM_FORMAT_UNORM] offen\n\
               tbuffer_store_format_xy v[6:7], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_UINT] offen offset:256\n\
               tbuffer_store_format_x v8, v0, s[8:11], 0 format:[BUF_DATA_FORMAT_16,BUF_NUM_FORMAT_FLOAT] offen offset:512";
    let (mut w, mut env, cache) = setup(src, Target::Gfx900, 0, 1024, 4, &[0xAA; 1024]);
    let vals = [-0.5f32, 0.25, 0.5, 1.5, 0.999, f32::NAN, 2.0 / 255.0, 1.0];
    for l in 0..64 {
        for c in 0..4 {
            w.vgpr[2 + c][l] = vals[(l + c) % vals.len()].to_bits();
        }
        w.vgpr[6][l] = 0x1234_0000 | l as u32;
        w.vgpr[7][l] = 0xffff_ff00 + l as u32;
        w.vgpr[8][l] = (l as f32 * 0.5 + 1.0).to_bits();
    }
    w.set_exec(u64::MAX >> 1); // lane 63 stores nothing
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    let mem = env.read(BUF, 1024).unwrap();
    for l in 0..64 {
        for c in 0..4 {
            let v = f64::from(vals[(l + c) % vals.len()]);
            let v = if v.is_nan() { 0.0 } else { v };
            let want = (v.clamp(0.0, 1.0) * 255.0).round_ties_even() as u8;
            let got = mem[4 * l + c];
            assert_eq!(
                got,
                if l == 63 { 0xAA } else { want },
                "unorm lane {l} comp {c}"
            );
        }
        let p = 256 + 4 * l;
        let lo = u16::from_le_bytes([mem[p], mem[p + 1]]);
        let hi = u16::from_le_bytes([mem[p + 2], mem[p + 3]]);
        if l == 63 {
            assert_eq!((lo, hi), (0xAAAA, 0xAAAA));
        } else {
            assert_eq!((lo, hi), (l as u16, 0xff00 + l as u16), "uint lane {l}");
        }
        // 16 FLOAT: lane l stores l/2 + 1, exact in f16 (10-bit mantissa)
        let h = u16::from_le_bytes([mem[512 + 4 * l], mem[513 + 4 * l]]);
        if l != 63 {
            let x = l as f32 * 0.5 + 1.0;
            let e = x.log2().floor() as i32;
            let mant = ((x / 2f32.powi(e) - 1.0) * 1024.0) as u16;
            assert_eq!(h, ((e + 15) as u16) << 10 | mant, "f16 lane {l}");
        }
    }
}

#[test]
fn tbuffer_d16_loads_pack_halves() {
    let mem = bytes(256, |i| (i * 41 + 3) as u8);
    let (w, _) = run(
        "tbuffer_load_format_d16_xy v2, v0, s[8:11], 0 format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_UINT] offen\n\
         tbuffer_load_format_d16_xyzw v[3:4], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_FLOAT] offen",
        0,
        256,
        4,
        &mem,
    );
    for l in 0..64 {
        let word = u32::from_le_bytes([mem[4 * l], mem[4 * l + 1], mem[4 * l + 2], mem[4 * l + 3]]);
        assert_eq!(w.vgpr[2][l], word, "uint halves lane {l}");
        // f16 -> f32 -> f16 is exact for every non-NaN half; NaNs stay NaNs
        let h = |x: u32| x & 0x7c00 == 0x7c00 && x & 0x3ff != 0;
        let (lo, hi) = (w.vgpr[3][l] & 0xffff, w.vgpr[3][l] >> 16);
        if !h(word & 0xffff) {
            assert_eq!(lo, word & 0xffff, "float lo lane {l}");
        }
        if !h(word >> 16) {
            assert_eq!(hi, word >> 16, "float hi lane {l}");
        }
        assert_eq!(w.vgpr[4][l], 0x3c00 << 16, "z = 0, w = 1.0 (f16 0x3c00)");
    }
}

#[test]
fn buffer_load_format_uses_the_resource_format_and_dst_sel() {
    // V# dword 3: DST_SEL x=W(7) y=Z(6) z=1 w=0, NUM_FORMAT UINT (4), DATA_FORMAT 8_8_8_8 (10)
    let d3 = 7 | 6 << 3 | 1 << 6 | 4 << 12 | 10 << 15;
    let mem = bytes(256, |i| (i * 7 + 1) as u8);
    let (w, _) = run(
        "buffer_load_format_xyzw v[2:5], v0, s[8:11], 0 offen\nbuffer_load_format_x v6, v0, s[8:11], 0 offen offset:4",
        d3,
        128,
        4,
        &mem,
    );
    for l in 0..64 {
        let in_range = 4 * l < 128;
        let b = |c: usize| {
            if in_range {
                u32::from(mem[4 * l + c])
            } else {
                0
            }
        };
        assert_eq!(
            [w.vgpr[2][l], w.vgpr[3][l], w.vgpr[4][l], w.vgpr[5][l]],
            [b(3), b(2), if in_range { 1 } else { 0 }, 0],
            "lane {l}"
        );
        let next = if 4 * l + 4 < 128 {
            u32::from(mem[4 * l + 7])
        } else {
            0
        };
        assert_eq!(w.vgpr[6][l], next, "offset:4 lane {l}");
    }
}

#[test]
fn exec_masked_lanes_keep_their_registers() {
    let src = "tbuffer_load_format_x v2, v0, s[8:11], 0 format:[BUF_DATA_FORMAT_32,BUF_NUM_FORMAT_UINT] offen";
    let (mut w, mut env, cache) = setup(src, Target::Gfx900, 0, 256, 4, &bytes(256, |i| i as u8));
    w.vgpr[2] = [0xdead_beef; 64];
    w.set_exec(0x5555_5555_5555_5555);
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    for l in 0..64 {
        let want = if l % 2 == 0 {
            u32::from_le_bytes([
                4 * l as u8,
                4 * l as u8 + 1,
                4 * l as u8 + 2,
                4 * l as u8 + 3,
            ])
        } else {
            0xdead_beef
        };
        assert_eq!(w.vgpr[2][l], want, "lane {l}");
    }
}

#[test]
fn packed_10_11_11_format_is_an_illegal_instruction_fault() {
    let src = "tbuffer_load_format_x v2, v0, s[8:11], 0 format:[BUF_DATA_FORMAT_10_11_11,BUF_NUM_FORMAT_FLOAT] offen";
    let (mut w, mut env, cache) = setup(src, Target::Gfx900, 0, 256, 4, &[0; 256]);
    match w.run(&cache, &mut env, 100) {
        Stop::Fault(WaveFault::IllegalInstruction { disassembly, .. }) => {
            assert!(
                disassembly.contains("tbuffer_load_format_x"),
                "{disassembly}"
            )
        }
        other => panic!("expected an illegal-instruction fault, got {other:?}"),
    }
}

#[test]
fn gfx90a_tbuffer_loads_into_agprs() {
    let src = "tbuffer_load_format_xy a[2:3], v0, s[8:11], 0 format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_UINT] offen";
    let mem = bytes(256, |i| (i * 5) as u8);
    let (mut w, mut env, cache) = setup(src, Target::Gfx90a, 0, 256, 4, &mem);
    assert_eq!(w.run(&cache, &mut env, 100), Stop::EndOfProgram);
    for l in 0..64 {
        let h = |i: usize| {
            u32::from(u16::from_le_bytes([
                mem[4 * l + 2 * i],
                mem[4 * l + 2 * i + 1],
            ]))
        };
        assert_eq!((w.agpr[2][l], w.agpr[3][l]), (h(0), h(1)), "lane {l}");
    }
}
