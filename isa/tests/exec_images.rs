//! Image instructions (MIMG): loads, stores, mip levels, resinfo and sampling, assembled by
//! llvm-mc-15 and run on one wave against references computed here from the definitions:
//! the T# (base >> 8, DATA_FORMAT, NUM_FORMAT, WIDTH-1, HEIGHT-1, DST_SEL, BASE_LEVEL,
//! LAST_LEVEL, TYPE, DEPTH, PITCH-1, BASE_ARRAY) and S# (CLAMP_X/Y/Z, FORCE_UNNORMALIZED,
//! XY_MAG/MIN_FILTER, Z_FILTER, BORDER_COLOR_TYPE) fields, the number formats (UNORM =
//! n / (2^bits - 1), SNORM = max(n / (2^(bits-1) - 1), -1), UINT/SINT, FLOAT), the address
//! modes on texel indices, bilinear/trilinear weights, and the interpreter's documented
//! linear layout (rows of PITCH texels, slices of PITCH * HEIGHT, mip levels one after the
//! other from the base address).

// lanes are indexed across several per-lane arrays at once
#![allow(clippy::needless_range_loop)]

mod assemble;

use assemble::asm;

use isa::exec::fault::{Access, MemFault, WaveFault};
use isa::exec::{CodeCache, HostEnv, Mode, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;
const IMG: u64 = 0x10_0000;

const TYPE_1D: u32 = 8;
const TYPE_2D: u32 = 9;
const TYPE_3D: u32 = 10;
const TYPE_1D_ARRAY: u32 = 12;
const TYPE_2D_ARRAY: u32 = 13;

const XYZW: [u32; 4] = [4, 5, 6, 7];
const X001: [u32; 4] = [4, 0, 0, 1];

/// An image resource's fields.
#[derive(Clone, Copy)]
struct T {
    dfmt: u32,
    nfmt: u32,
    w: u32,
    h: u32,
    /// DEPTH: depth-1 (3-D) or the last array slice.
    depth: u32,
    pitch: u32,
    ty: u32,
    sel: [u32; 4],
    base_level: u32,
    last_level: u32,
    base_array: u32,
}

impl T {
    fn new(ty: u32, dfmt: u32, nfmt: u32, w: u32, h: u32) -> T {
        T {
            dfmt,
            nfmt,
            w,
            h,
            depth: 0,
            pitch: w,
            ty,
            sel: XYZW,
            base_level: 0,
            last_level: 0,
            base_array: 0,
        }
    }

    fn words(&self) -> [u32; 8] {
        [
            (IMG >> 8) as u32,
            ((IMG >> 40) as u32 & 0xff) | (self.dfmt << 20) | (self.nfmt << 26),
            (self.w - 1) | ((self.h - 1) << 14),
            self.sel[0]
                | (self.sel[1] << 3)
                | (self.sel[2] << 6)
                | (self.sel[3] << 9)
                | (self.base_level << 12)
                | (self.last_level << 16)
                | (self.ty << 28),
            self.depth | ((self.pitch - 1) << 13),
            self.base_array,
            0,
            0,
        ]
    }
}

/// A sampler's fields.
#[derive(Clone, Copy, Default)]
struct S {
    clamp: [u32; 3],
    unnormalized: bool,
    linear: bool,
    z_filter: u32,
    border: u32,
}

impl S {
    fn words(&self) -> [u32; 4] {
        let f = u32::from(self.linear);
        [
            self.clamp[0]
                | (self.clamp[1] << 3)
                | (self.clamp[2] << 6)
                | (u32::from(self.unnormalized) << 15),
            0x00ff_f000,
            (f << 20) | (f << 22) | (self.z_filter << 24),
            self.border << 30,
        ]
    }
}

/// Runs `src` on `target` with the T# in s[0:7], the S# in s[8:11], `vgprs` set, `mem` at
/// IMG; expects the end of the program.
fn run(
    src: &str,
    target: Target,
    t: &T,
    s: &S,
    vgprs: &[(usize, [u32; 64])],
    mem: &[u8],
) -> (Wave, HostEnv) {
    let (mut wave, mut env, cache) = setup(src, target, t, s, vgprs, mem);
    assert_eq!(wave.run(&cache, &mut env, 100), Stop::EndOfProgram, "{src}");
    (wave, env)
}

fn setup(
    src: &str,
    target: Target,
    t: &T,
    s: &S,
    vgprs: &[(usize, [u32; 64])],
    mem: &[u8],
) -> (Wave, HostEnv, CodeCache) {
    let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
    let mut wave = Wave::new(target, 32, 0);
    wave.pc = BASE;
    wave.mode = Mode((3 << 6) | (1 << 8) | (1 << 9));
    wave.sgpr[0..8].copy_from_slice(&t.words());
    wave.sgpr[8..12].copy_from_slice(&s.words());
    for (r, v) in vgprs {
        wave.vgpr[*r] = *v;
    }
    let mut env = HostEnv::new(0);
    if !mem.is_empty() {
        env.write(IMG, mem);
    }
    (wave, env, CodeCache::new(target, BASE, &code))
}

fn lanes(f: impl Fn(usize) -> u32) -> [u32; 64] {
    std::array::from_fn(f)
}

fn flanes(f: impl Fn(usize) -> f32) -> [u32; 64] {
    std::array::from_fn(|l| f(l).to_bits())
}

fn bytes(n: usize, g: impl Fn(usize) -> u8) -> Vec<u8> {
    (0..n).map(g).collect()
}

fn fbits(v: f64) -> u32 {
    (v as f32).to_bits()
}

/// A component of `bits` bits read as the register value of NUM_FORMAT `nfmt`.
fn convert(raw: u32, bits: u32, nfmt: u32) -> u32 {
    let sext = ((raw << (32 - bits)) as i32) >> (32 - bits);
    match nfmt {
        0 => fbits(f64::from(raw) / ((1u64 << bits) - 1) as f64),
        1 => fbits((f64::from(sext) / ((1u64 << (bits - 1)) - 1) as f64).max(-1.0)),
        4 => raw,
        5 => sext as u32,
        7 if bits == 16 => half_to_f32(raw as u16).to_bits(),
        _ => raw,
    }
}

/// IEEE binary16 to f32 (normal, subnormal, zero, infinity; a NaN keeps its payload).
fn half_to_f32(h: u16) -> f32 {
    if (h >> 10) & 0x1f == 0x1f && h & 0x3ff != 0 {
        return f32::from_bits(
            (u32::from(h >> 15) << 31) | 0x7f80_0000 | (u32::from(h & 0x3ff) << 13),
        );
    }
    let sign = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let e = i32::from((h >> 10) & 0x1f);
    let m = f32::from(h & 0x3ff);
    sign * match e {
        0 => m * 2f32.powi(-24),
        31 => f32::INFINITY,
        _ => (1.0 + m / 1024.0) * 2f32.powi(e - 15),
    }
}

fn le(mem: &[u8], at: usize, n: usize) -> u32 {
    (0..n).fold(0, |v, i| v | u32::from(mem[at + i]) << (8 * i))
}

// ---------------------------------------------------------------------- loads

#[test]
fn load_2d_rgba8_unorm_uses_the_pitch_and_reads_zero_out_of_range() {
    let mut t = T::new(TYPE_2D, 10, 0, 5, 4);
    t.pitch = 8;
    let mem = bytes(8 * 4 * 4, |i| (i * 37 + 11) as u8);
    let xs = lanes(|l| (l % 7) as u32);
    let ys = lanes(|l| (l / 7 % 5) as u32);
    for target in [Target::Gfx900, Target::Gfx90a] {
        let (w, _) = run(
            "image_load v[2:5], v0, s[0:7] dmask:0xf unorm",
            target,
            &t,
            &S::default(),
            &[(0, xs), (1, ys)],
            &mem,
        );
        for l in 0..64 {
            let (x, y) = (xs[l] as usize, ys[l] as usize);
            for c in 0..4 {
                let want = if x < 5 && y < 4 {
                    fbits(f64::from(mem[(y * 8 + x) * 4 + c]) / 255.0)
                } else {
                    0
                };
                assert_eq!(
                    w.vgpr[2 + c][l],
                    want,
                    "{target:?} lane {l} ({x},{y}) comp {c}"
                );
            }
        }
    }
}

#[test]
fn load_formats_dmask_packing_and_dst_sel() {
    // (DATA_FORMAT, NUM_FORMAT, bits, components, DST_SEL, DMASK)
    let cases: [(u32, u32, u32, usize, [u32; 4], u32); 7] = [
        (5, 1, 16, 2, XYZW, 0x3),        // 16_16 SNORM
        (4, 7, 32, 1, X001, 0xf),        // 32 FLOAT, X001
        (1, 4, 8, 1, XYZW, 0xf),         // 8 UINT: y, z read 0, w reads 1
        (2, 7, 16, 1, XYZW, 0x1),        // 16 FLOAT (half)
        (11, 5, 32, 2, XYZW, 0x3),       // 32_32 SINT
        (12, 4, 16, 4, XYZW, 0x5),       // 16_16_16_16 UINT, x and z packed
        (3, 5, 8, 2, [5, 4, 1, 0], 0xf), // 8_8 SINT, swizzled YX10
    ];
    let mem = bytes(4096, |i| (i * 89 + 200) as u8);
    let xs = lanes(|l| (l % 8) as u32);
    let ys = lanes(|l| (l / 8) as u32);
    for (dfmt, nfmt, bits, comps, sel, dmask) in cases {
        let mut t = T::new(TYPE_2D, dfmt, nfmt, 8, 8);
        t.sel = sel;
        let n = dmask.count_ones() as usize;
        let src = format!(
            "image_load v[2:{}], v0, s[0:7] dmask:0x{dmask:x} unorm",
            1 + n
        );
        let (w, _) = run(
            &src,
            Target::Gfx900,
            &t,
            &S::default(),
            &[(0, xs), (1, ys)],
            &mem,
        );
        let bpe = (bits / 8) as usize * comps;
        let one = if nfmt == 4 || nfmt == 5 {
            1
        } else {
            1f32.to_bits()
        };
        for l in 0..64 {
            let at = (ys[l] as usize * 8 + xs[l] as usize) * bpe;
            let fetched: Vec<u32> = (0..4)
                .map(|k| {
                    if k < comps {
                        convert(
                            le(&mem, at + k * (bits / 8) as usize, (bits / 8) as usize),
                            bits,
                            nfmt,
                        )
                    } else if k == 3 {
                        one
                    } else {
                        0
                    }
                })
                .collect();
            let rgba: Vec<u32> = sel
                .iter()
                .map(|&s| match s {
                    4..=7 => fetched[(s - 4) as usize],
                    1 => one,
                    _ => 0,
                })
                .collect();
            let picked: Vec<u32> = (0..4)
                .filter(|k| dmask >> k & 1 == 1)
                .map(|k| rgba[k])
                .collect();
            for (i, want) in picked.iter().enumerate() {
                assert_eq!(
                    w.vgpr[2 + i][l],
                    *want,
                    "{src} dfmt {dfmt} lane {l} reg {i}"
                );
            }
        }
    }
}

#[test]
fn load_d16_packs_halves_and_tfe_writes_a_zero_status() {
    let t = T::new(TYPE_1D, 12, 7, 64, 1); // 16_16_16_16 FLOAT
    let mem: Vec<u8> = (0..64 * 4)
        .flat_map(|i: u32| {
            // halves 1.0 + i/64 and -i/8
            let v = if i % 2 == 0 {
                0x3c00 + i as u16
            } else {
                0xb000 + i as u16
            };
            v.to_le_bytes()
        })
        .collect();
    let xs = lanes(|l| l as u32);
    let (w, _) = run(
        "image_load v[2:3], v0, s[0:7] dmask:0xf unorm d16\n\
         image_load v[4:5], v0, s[0:7] dmask:0x4 unorm tfe",
        Target::Gfx900,
        &t,
        &S::default(),
        &[(0, xs), (5, [7; 64])],
        &mem,
    );
    for l in 0..64 {
        let h = |c: usize| le(&mem, l * 8 + 2 * c, 2);
        assert_eq!(w.vgpr[2][l], h(0) | (h(1) << 16), "lane {l} xy");
        assert_eq!(w.vgpr[3][l], h(2) | (h(3) << 16), "lane {l} zw");
        assert_eq!(
            w.vgpr[4][l],
            half_to_f32(h(2) as u16).to_bits(),
            "lane {l} z"
        );
        assert_eq!(w.vgpr[5][l], 0, "lane {l} TFE status");
    }
}

#[test]
fn load_3d_and_arrays_address_slices_from_base_array() {
    // 3-D 4x3x2, 32 UINT, pitch 5
    let mut t = T::new(TYPE_3D, 4, 4, 4, 3);
    t.depth = 1;
    t.pitch = 5;
    let mem = bytes(4096, |i| (i * 13 + 1) as u8);
    let xs = lanes(|l| (l % 5) as u32);
    let ys = lanes(|l| (l / 5 % 4) as u32);
    let zs = lanes(|l| (l / 20) as u32);
    let (w, _) = run(
        "image_load v3, v0, s[0:7] dmask:0x1 unorm",
        Target::Gfx900,
        &t,
        &S::default(),
        &[(0, xs), (1, ys), (2, zs)],
        &mem,
    );
    for l in 0..64 {
        let (x, y, z) = (xs[l] as usize, ys[l] as usize, zs[l] as usize);
        let want = if x < 4 && y < 3 && z < 2 {
            le(&mem, ((z * 3 + y) * 5 + x) * 4, 4)
        } else {
            0
        };
        assert_eq!(w.vgpr[3][l], want, "3d lane {l} ({x},{y},{z})");
    }
    // 2-D array 4x3, slices 0..=3 in memory, BASE_ARRAY 1: slice s is memory slice s + 1
    let mut t = T::new(TYPE_2D_ARRAY, 4, 4, 4, 3);
    t.depth = 3;
    t.base_array = 1;
    let (w, _) = run(
        "image_load v3, v0, s[0:7] dmask:0x1 unorm da",
        Target::Gfx900,
        &t,
        &S::default(),
        &[(0, xs), (1, ys), (2, zs)],
        &mem,
    );
    for l in 0..64 {
        let (x, y, s) = (xs[l] as usize, ys[l] as usize, zs[l] as usize);
        let want = if x < 4 && y < 3 && s < 3 {
            le(&mem, (((s + 1) * 3 + y) * 4 + x) * 4, 4)
        } else {
            0
        };
        assert_eq!(w.vgpr[3][l], want, "2d array lane {l} ({x},{y},{s})");
    }
    // 1-D array 6 wide, 3 slices: (x, slice), one row per slice
    let mut t = T::new(TYPE_1D_ARRAY, 4, 4, 6, 1);
    t.depth = 2;
    let (w, _) = run(
        "image_load v3, v0, s[0:7] dmask:0x1 unorm da",
        Target::Gfx900,
        &t,
        &S::default(),
        &[
            (0, lanes(|l| (l % 7) as u32)),
            (1, lanes(|l| (l / 7 % 4) as u32)),
        ],
        &mem,
    );
    for l in 0..64 {
        let (x, s) = (l % 7, l / 7 % 4);
        let want = if x < 6 && s < 3 {
            le(&mem, (s * 6 + x) * 4, 4)
        } else {
            0
        };
        assert_eq!(w.vgpr[3][l], want, "1d array lane {l} ({x},{s})");
    }
}

#[test]
fn unmapped_image_memory_is_a_memory_fault() {
    let t = T::new(TYPE_2D, 4, 4, 8, 8);
    let (mut wave, mut env, cache) = setup(
        "image_load v3, v0, s[0:7] dmask:0x1 unorm",
        Target::Gfx900,
        &t,
        &S::default(),
        &[],
        &[],
    );
    assert_eq!(
        wave.run(&cache, &mut env, 10),
        Stop::Fault(WaveFault::Memory(MemFault {
            address: IMG,
            access: Access::Read
        }))
    );
}

// ---------------------------------------------------------------------- stores, mips, resinfo

#[test]
fn store_converts_and_leaves_components_outside_dmask() {
    // 8_8_8_8 UNORM, 8x8: dmask 0x3 writes x and y only
    let t = T::new(TYPE_2D, 10, 0, 8, 8);
    let mem = bytes(8 * 8 * 4, |i| (i * 7 + 5) as u8);
    let xs = lanes(|l| (l % 8) as u32);
    let ys = lanes(|l| (l / 8) as u32);
    let vx = flanes(|l| l as f32 / 50.0 - 0.2); // clamps below 0 and above 1
    let vy = flanes(|l| 1.0 - l as f32 / 63.0);
    let (_, env) = run(
        "image_store v[2:3], v0, s[0:7] dmask:0x3 unorm",
        Target::Gfx900,
        &t,
        &S::default(),
        &[(0, xs), (1, ys), (2, vx), (3, vy)],
        &mem,
    );
    let out = env.read(IMG, mem.len()).unwrap();
    let unorm8 =
        |v: u32| (f64::from(f32::from_bits(v)).clamp(0.0, 1.0) * 255.0).round_ties_even() as u8;
    for l in 0..64 {
        let at = l * 4; // lane l is texel (l % 8, l / 8): row-major, pitch 8
        assert_eq!(out[at], unorm8(vx[l]), "lane {l} x");
        assert_eq!(out[at + 1], unorm8(vy[l]), "lane {l} y");
        assert_eq!(
            out[at + 2..at + 4],
            mem[at + 2..at + 4],
            "lane {l} z, w untouched"
        );
    }
    // 16_16 SINT store of x only, and 32 FLOAT
    for (dfmt, nfmt, bytes_per) in [(5u32, 5u32, 2usize), (4, 7, 4)] {
        let t = T::new(TYPE_2D, dfmt, nfmt, 8, 8);
        let v = lanes(|l| (l as u32).wrapping_mul(0x9e37_79b9));
        let (_, env) = run(
            "image_store v2, v0, s[0:7] dmask:0x1 unorm",
            Target::Gfx90a,
            &t,
            &S::default(),
            &[(0, xs), (1, ys), (2, v)],
            &[0; 1024],
        );
        let out = env.read(IMG, 1024).unwrap();
        let bpe = 4; // 16_16 and 32 are both 4-byte texels
        for l in 0..64 {
            let want = v[l] & if bytes_per == 2 { 0xffff } else { u32::MAX };
            assert_eq!(le(&out, l * bpe, bytes_per), want, "dfmt {dfmt} lane {l}");
        }
    }
}

#[test]
fn mip_levels_follow_each_other_and_resinfo_reports_them() {
    // 2-D 8x6 32 UINT, pitch 8, levels 0..=2: level 1 is 4x3 (pitch 4) at byte 192,
    // level 2 is 2x1 (pitch 2) at byte 192 + 48
    let mut t = T::new(TYPE_2D, 4, 4, 8, 6);
    t.last_level = 2;
    let level = lanes(|l| (l % 3) as u32);
    let xs = lanes(|l| (l / 3 % 4) as u32);
    let ys = lanes(|l| (l / 12 % 3) as u32);
    let data = lanes(|l| 0x1000 + l as u32);
    let (w, env) = run(
        "image_store_mip v4, v[0:3], s[0:7] dmask:0x1 unorm\n\
         s_waitcnt vmcnt(0)\n\
         image_load_mip v5, v[0:3], s[0:7] dmask:0x1 unorm\n\
         image_get_resinfo v[6:9], v2, s[0:7] dmask:0xf",
        Target::Gfx900,
        &t,
        &S::default(),
        &[(0, xs), (1, ys), (2, level), (4, data)],
        &[0; 256],
    );
    let out = env.read(IMG, 256).unwrap();
    let dims = [(8, 6, 8, 0), (4, 3, 4, 192), (2, 1, 2, 240)];
    let mut last_writer = std::collections::HashMap::new();
    for l in 0..64 {
        let (lw, lh, pitch, off) = dims[level[l] as usize];
        let (x, y) = (xs[l] as usize, ys[l] as usize);
        if x < lw && y < lh {
            last_writer.insert(off + (y * pitch + x) * 4, l);
        }
    }
    for l in 0..64 {
        let (lw, lh, pitch, off) = dims[level[l] as usize];
        let (x, y) = (xs[l] as usize, ys[l] as usize);
        if x < lw && y < lh {
            let at = off + (y * pitch + x) * 4;
            let writer = last_writer[&at];
            assert_eq!(le(&out, at, 4), data[writer], "lane {l} memory");
            assert_eq!(w.vgpr[5][l], data[writer], "lane {l} load_mip");
        } else {
            assert_eq!(w.vgpr[5][l], 0, "lane {l} out of its level");
        }
        let (lw, lh) = (
            dims[level[l] as usize].0 as u32,
            dims[level[l] as usize].1 as u32,
        );
        assert_eq!(
            [w.vgpr[6][l], w.vgpr[7][l], w.vgpr[8][l], w.vgpr[9][l]],
            [lw, lh, 1, 3],
            "lane {l} resinfo"
        );
    }
    // a 2-D array reports its slices from BASE_ARRAY as the depth; past the last level, 0
    let mut t = T::new(TYPE_2D_ARRAY, 4, 4, 16, 9);
    t.depth = 5;
    t.base_array = 2;
    let (w, _) = run(
        "image_get_resinfo v[6:8], v2, s[0:7] dmask:0x7",
        Target::Gfx90a,
        &t,
        &S::default(),
        &[(2, lanes(|l| (l % 2) as u32))],
        &[],
    );
    for l in 0..64 {
        let want = if l % 2 == 0 { [16, 9, 4] } else { [0, 0, 0] };
        assert_eq!([w.vgpr[6][l], w.vgpr[7][l], w.vgpr[8][l]], want, "lane {l}");
    }
}

// ---------------------------------------------------------------------- sampling

/// The texel index address mode `mode` makes of `i` in `n` texels, or None for the border;
/// the MIRROR_ONCE modes have mirrored the coordinate already.
fn address(i: i64, n: i64, mode: u32) -> Option<i64> {
    match mode {
        0 => Some(((i % n) + n) % n),
        1 => {
            let p = ((i % (2 * n)) + 2 * n) % (2 * n);
            Some(if p < n { p } else { 2 * n - 1 - p })
        }
        2 | 3 => Some(i.max(0).min(n - 1)),
        _ => (i >= 0 && i < n).then_some(i),
    }
}

/// The texel-space coordinate after the MIRROR_ONCE and HALF_BORDER modes' treatment.
fn adjust(t: f32, n: u32, mode: u32) -> f32 {
    let t = if matches!(mode, 3 | 5 | 7) {
        t.abs()
    } else {
        t
    };
    if matches!(mode, 4 | 5) {
        t.max(-0.5).min(n as f32 + 0.5)
    } else {
        t
    }
}

/// A single-component FLOAT texture w x h x d on the host.
struct Tex {
    w: u32,
    h: u32,
    d: u32,
    v: Vec<f32>,
}

impl Tex {
    fn new(w: u32, h: u32, d: u32) -> Tex {
        let v = (0..w * h * d)
            .map(|i| ((i * 29) % 41) as f32 * 0.75 - 9.0)
            .collect();
        Tex { w, h, d, v }
    }

    fn bytes(&self) -> Vec<u8> {
        self.v.iter().flat_map(|f| f.to_le_bytes()).collect()
    }

    /// The texel at indices, or None for the border.
    fn at(&self, i: [i64; 3], modes: [u32; 3]) -> Option<f32> {
        let x = address(i[0], i64::from(self.w), modes[0])?;
        let y = address(i[1], i64::from(self.h), modes[1])?;
        let z = address(i[2], i64::from(self.d), modes[2])?;
        Some(self.v[((z * i64::from(self.h) + y) * i64::from(self.w) + x) as usize])
    }

    /// Point or (bi/tri)linear sampling at texel-space `t` over `dims` dimensions; the border
    /// texels read `border`.
    fn sample(
        &self,
        t: [f32; 3],
        dims: usize,
        modes: [u32; 3],
        linear: [bool; 3],
        border: f32,
    ) -> f32 {
        let n = [self.w, self.h, self.d];
        let mut lo = [0i64; 3];
        let mut frac = [0f32; 3];
        for k in 0..dims {
            let u = adjust(t[k], n[k], modes[k]);
            if linear[k] {
                let u = u - 0.5;
                lo[k] = u.floor() as i64;
                frac[k] = u - u.floor();
            } else {
                lo[k] = u.floor() as i64;
            }
        }
        let mut sum = 0.0f32;
        for corner in 0..(1 << dims) {
            let mut wgt = 1.0f32;
            let mut idx = lo;
            let mut skip = false;
            for k in 0..dims {
                let bit = (corner >> k) & 1;
                if !linear[k] {
                    skip |= bit == 1;
                    continue;
                }
                idx[k] += bit as i64;
                wgt *= if bit == 1 { frac[k] } else { 1.0 - frac[k] };
            }
            if skip {
                continue;
            }
            sum += wgt * self.at(idx, modes).unwrap_or(border);
        }
        sum
    }
}

fn close(got: u32, want: f32) -> bool {
    let g = f32::from_bits(got);
    (g - want).abs() <= 1e-5 * want.abs().max(1.0)
}

/// Every lane of `reg` holds `want(lane)` as [`close`] judges it; `what` names the lane.
fn assert_lanes_close(
    reg: &[u32; 64],
    want: impl Fn(usize) -> f32,
    what: impl Fn(usize) -> String,
) {
    for l in 0..64 {
        let w = want(l);
        assert!(
            close(reg[l], w),
            "{}: got {}, want {w}",
            what(l),
            f32::from_bits(reg[l])
        );
    }
}

#[test]
fn sample_point_every_address_mode_and_border_color() {
    let tex = Tex::new(4, 3, 1);
    let su = flanes(|l| l as f32 / 64.0 * 3.4 - 1.2);
    let sv = flanes(|l| ((l * 37) % 64) as f32 / 64.0 * 3.4 - 1.2);
    let mut t = T::new(TYPE_2D, 4, 7, 4, 3);
    t.sel = X001;
    for mode in 0..8 {
        for border in 0..3 {
            let s = S {
                clamp: [mode, mode, 0],
                border,
                ..S::default()
            };
            let (w, _) = run(
                "image_sample_lz v[2:5], v0, s[0:7], s[8:11] dmask:0xf",
                Target::Gfx900,
                &t,
                &s,
                &[(0, su), (1, sv)],
                &tex.bytes(),
            );
            for l in 0..64 {
                let (u, v) = (f32::from_bits(su[l]) * 4.0, f32::from_bits(sv[l]) * 3.0);
                let idx = [
                    adjust(u, 4, mode).floor() as i64,
                    adjust(v, 3, mode).floor() as i64,
                    0,
                ];
                let want = match tex.at(idx, [mode, mode, 0]) {
                    Some(x) => [x, 0.0, 0.0, 1.0],
                    None => [[0.0; 4], [0.0, 0.0, 0.0, 1.0], [1.0; 4]][border as usize],
                };
                for c in 0..4 {
                    assert_eq!(
                        w.vgpr[2 + c][l],
                        want[c].to_bits(),
                        "mode {mode} border {border} lane {l} ({u},{v}) comp {c}"
                    );
                }
            }
        }
    }
}

#[test]
fn sample_bilinear_weights_with_unnormalized_coordinates() {
    let tex = Tex::new(5, 4, 1);
    let su = flanes(|l| l as f32 * 0.173 - 2.0);
    let sv = flanes(|l| ((l * 23) % 64) as f32 * 0.11 - 1.5);
    let t = T::new(TYPE_2D, 4, 7, 5, 4);
    // X wraps, Y clamps; unnormalized through the instruction's UNORM bit and through the
    // sampler's FORCE_UNNORMALIZED
    for (src, force) in [
        (
            "image_sample_lz v2, v0, s[0:7], s[8:11] dmask:0x1 unorm",
            false,
        ),
        ("image_sample_lz v2, v0, s[0:7], s[8:11] dmask:0x1", true),
    ] {
        let s = S {
            clamp: [0, 2, 0],
            linear: true,
            unnormalized: force,
            ..S::default()
        };
        let (w, _) = run(
            src,
            Target::Gfx900,
            &t,
            &s,
            &[(0, su), (1, sv)],
            &tex.bytes(),
        );
        let at = |l: usize| [f32::from_bits(su[l]), f32::from_bits(sv[l]), 0.0];
        assert_lanes_close(
            &w.vgpr[2],
            |l| tex.sample(at(l), 2, [0, 2, 0], [true, true, false], 0.0),
            |l| format!("{src} lane {l} {:?}", at(l)),
        );
    }
}

#[test]
fn sample_linear_rgba8_unorm_normalized_mirror_on_both_targets() {
    let (wd, ht) = (6u32, 5u32);
    let mem = bytes((wd * ht * 4) as usize, |i| (i * 53 + 7) as u8);
    let comps: Vec<Tex> = (0..4)
        .map(|c| Tex {
            w: wd,
            h: ht,
            d: 1,
            v: (0..(wd * ht) as usize)
                .map(|i| f32::from(mem[i * 4 + c]) / 255.0)
                .collect(),
        })
        .collect();
    let su = flanes(|l| l as f32 / 64.0 * 2.6 - 0.8);
    let sv = flanes(|l| ((l * 41) % 64) as f32 / 64.0 * 2.6 - 0.8);
    let t = T::new(TYPE_2D, 10, 0, wd, ht);
    let s = S {
        clamp: [1, 1, 1],
        linear: true,
        ..S::default()
    };
    for (target, op) in [
        (Target::Gfx900, "image_sample_lz"),
        (Target::Gfx90a, "image_sample"),
    ] {
        let (w, _) = run(
            &format!("{op} v[2:5], v0, s[0:7], s[8:11] dmask:0xf"),
            target,
            &t,
            &s,
            &[(0, su), (1, sv)],
            &mem,
        );
        let at = |l: usize| {
            [
                f32::from_bits(su[l]) * wd as f32,
                f32::from_bits(sv[l]) * ht as f32,
                0.0,
            ]
        };
        for (c, tex) in comps.iter().enumerate() {
            assert_lanes_close(
                &w.vgpr[2 + c],
                |l| tex.sample(at(l), 2, [1, 1, 1], [true, true, false], 0.0),
                |l| format!("{target:?} lane {l} comp {c}"),
            );
        }
    }
}

#[test]
fn sample_3d_trilinear_z_filter_and_1d_linear() {
    let tex = Tex::new(4, 3, 3);
    let mut t = T::new(TYPE_3D, 4, 7, 4, 3);
    t.depth = 2;
    let su = flanes(|l| l as f32 / 64.0 * 1.4 - 0.2);
    let sv = flanes(|l| ((l * 23) % 64) as f32 / 64.0 * 1.4 - 0.2);
    let sr = flanes(|l| ((l * 45) % 64) as f32 / 64.0 * 1.4 - 0.2);
    // Z_FILTER 0 follows the XY filter (trilinear); 1 is point in Z; 2 linear
    for (z_filter, z_linear) in [(0, true), (1, false), (2, true)] {
        let s = S {
            clamp: [2, 2, 2],
            linear: true,
            z_filter,
            ..S::default()
        };
        let (w, _) = run(
            "image_sample_lz v3, v0, s[0:7], s[8:11] dmask:0x1",
            Target::Gfx900,
            &t,
            &s,
            &[(0, su), (1, sv), (2, sr)],
            &tex.bytes(),
        );
        let at = |l: usize| {
            [
                f32::from_bits(su[l]) * 4.0,
                f32::from_bits(sv[l]) * 3.0,
                f32::from_bits(sr[l]) * 3.0,
            ]
        };
        assert_lanes_close(
            &w.vgpr[3],
            |l| tex.sample(at(l), 3, [2, 2, 2], [true, true, z_linear], 0.0),
            |l| format!("z_filter {z_filter} lane {l}"),
        );
    }
    // 1-D, linear, clamp to border (opaque white)
    let tex = Tex::new(9, 1, 1);
    let t = T::new(TYPE_1D, 4, 7, 9, 1);
    let s = S {
        clamp: [6, 0, 0],
        linear: true,
        border: 2,
        ..S::default()
    };
    let (w, _) = run(
        "image_sample_lz v3, v0, s[0:7], s[8:11] dmask:0x1",
        Target::Gfx900,
        &t,
        &s,
        &[(0, su)],
        &tex.bytes(),
    );
    assert_lanes_close(
        &w.vgpr[3],
        |l| {
            tex.sample(
                [f32::from_bits(su[l]) * 9.0, 0.0, 0.0],
                1,
                [6, 0, 0],
                [true, false, false],
                1.0,
            )
        },
        |l| format!("1d lane {l}"),
    );
}

#[test]
fn sample_l_picks_the_nearest_level_and_array_slices_round() {
    // 2-D array 4x4, 3 slices, 2 levels (level 1: 2x2, pitch 2, after 3 slices of level 0)
    let mut t = T::new(TYPE_2D_ARRAY, 4, 7, 4, 4);
    t.depth = 2;
    t.last_level = 1;
    let level0: Vec<f32> = (0..48).map(|i| i as f32).collect();
    let level1: Vec<f32> = (0..12).map(|i| 100.0 + i as f32).collect();
    let mem: Vec<u8> = level0
        .iter()
        .chain(&level1)
        .flat_map(|f| f.to_le_bytes())
        .collect();
    let su = flanes(|l| (l % 8) as f32 / 8.0 + 0.01);
    let sv = flanes(|l| (l / 8) as f32 / 8.0 + 0.01);
    let slice = flanes(|l| (l % 5) as f32 * 0.75 - 0.6); // rounds to -1..=2, clamped to 0..=2
    let lod = flanes(|l| (l % 4) as f32 * 0.4 - 0.2); // -0.2, 0.2, 0.6, 1.0
    let s = S {
        clamp: [2, 2, 2],
        ..S::default()
    };
    let (w, _) = run(
        "image_sample_l v4, v0, s[0:7], s[8:11] dmask:0x1 da",
        Target::Gfx900,
        &t,
        &s,
        &[(0, su), (1, sv), (2, slice), (3, lod)],
        &mem,
    );
    for l in 0..64 {
        let layer = f32::from_bits(slice[l]).round_ties_even().clamp(0.0, 2.0) as usize;
        let lv = f32::from_bits(lod[l]);
        let level = if lv <= 0.0 {
            0
        } else {
            ((lv + 0.5).floor() as usize).min(1)
        };
        let n = 4 >> level;
        let x = ((f32::from_bits(su[l]) * n as f32).floor() as usize).min(n - 1);
        let y = ((f32::from_bits(sv[l]) * n as f32).floor() as usize).min(n - 1);
        let want = if level == 0 {
            level0[(layer * 4 + y) * 4 + x]
        } else {
            level1[(layer * 2 + y) * 2 + x]
        };
        assert_eq!(
            f32::from_bits(w.vgpr[4][l]),
            want,
            "lane {l} layer {layer} level {level}"
        );
    }
}
