//! Semantic tests of private and shared memory reached through SCRATCH and FLAT instructions,
//! and of the 16-bit (d16) stores and LDS reads: programs assembled by llvm-mc-15, run on one
//! wave against a [`HostEnv`], memory compared with the layouts AMDGPUUsage ("Address
//! Spaces", "Flat Scratch") and the Vega ISA guide define. Private memory is interleaved per
//! lane as the scratch buffer descriptor interleaves it: byte `p` of lane `l` at
//! `FLAT_SCRATCH + (p / 4) * 256 + l * 4 + p % 4`.

mod assemble;

use assemble::asm;

use isa::exec::wave::sreg;
use isa::exec::{CodeCache, HostEnv, Mode, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;
const SCRATCH: u64 = 0x10_0000;
const GLOBAL: u64 = 0x20_0000;
/// SH_MEM_BASES: shared aperture at 0x0002_0000_0000_0000, private at 0x0001_0000_0000_0000.
const SH_MEM_BASES: u32 = (2 << 16) | 1;
const SHARED_APERTURE: u64 = 2 << 48;
const PRIVATE_APERTURE: u64 = 1 << 48;

struct Run {
    wave: Wave,
    env: HostEnv,
    cache: CodeCache,
}

impl Run {
    fn new(src: &str, target: Target) -> Run {
        let code = asm(&format!("{src}\ns_endpgm\n"), target.name());
        let mut wave = Wave::new(target, 32, 16);
        wave.pc = BASE;
        wave.mode = Mode((3 << 6) | (1 << 8) | (1 << 9));
        wave.sh_mem_bases = SH_MEM_BASES;
        wave.set_sgpr64(sreg::FLAT_SCRATCH_LO, SCRATCH);
        let mut env = HostEnv::new(1024);
        env.map(SCRATCH, 0x1000);
        env.map(GLOBAL, 0x1000);
        Run {
            wave,
            env,
            cache: CodeCache::new(target, BASE, &code),
        }
    }

    fn ok(mut self) -> Run {
        assert_eq!(
            self.wave.run(&self.cache, &mut self.env, 1000),
            Stop::EndOfProgram
        );
        self
    }

    fn u32_at(&self, address: u64) -> u32 {
        let b = self.env.read(address, 4).unwrap();
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn lds_u32(&self, offset: usize) -> u32 {
        u32::from_le_bytes(self.env.lds[offset..offset + 4].try_into().unwrap())
    }
}

fn lanes_of(f: impl Fn(usize) -> u32) -> [u32; 64] {
    let mut a = [0u32; 64];
    for (l, x) in a.iter_mut().enumerate() {
        *x = f(l);
    }
    a
}

#[test]
fn scratch_instructions_use_the_per_lane_interleave() {
    for target in [Target::Gfx900, Target::Gfx90a] {
        let mut r = Run::new(
            "scratch_store_dwordx2 v1, v[2:3], off offset:8\n\
             scratch_store_short v1, v2, off offset:18\n\
             scratch_load_dword v6, off, s0 offset:12\n\
             scratch_load_dwordx2 v[8:9], v1, off offset:8\n\
             scratch_load_ushort v10, v1, off offset:18",
            target,
        );
        r.wave.vgpr[1] = [0; 64];
        r.wave.vgpr[2] = lanes_of(|l| 0x1000 + l as u32);
        r.wave.vgpr[3] = lanes_of(|l| 0x2000 + l as u32);
        r.wave.sgpr[0] = 0;
        let r = r.ok();
        for l in 0..64u64 {
            // dword 2 and 3 of each lane's segment are rows 2 and 3 of the interleave
            assert_eq!(
                r.u32_at(SCRATCH + 2 * 256 + l * 4),
                0x1000 + l as u32,
                "{target:?}"
            );
            assert_eq!(r.u32_at(SCRATCH + 3 * 256 + l * 4), 0x2000 + l as u32);
            // byte 18 = row 4, byte 2 of the lane's dword
            let row4 = r.u32_at(SCRATCH + 4 * 256 + l * 4);
            assert_eq!(row4 >> 16, 0x1000 + l as u32);
            let l = l as usize;
            assert_eq!(r.wave.vgpr[6][l], 0x2000 + l as u32, "SADDR form");
            assert_eq!(
                [r.wave.vgpr[8][l], r.wave.vgpr[9][l]],
                [0x1000 + l as u32, 0x2000 + l as u32]
            );
            assert_eq!(r.wave.vgpr[10][l], 0x1000 + l as u32);
        }
    }
}

#[test]
fn flat_lanes_go_to_private_shared_or_global_by_aperture() {
    let mut r = Run::new(
        "flat_store_dword v[0:1], v2\nflat_load_dword v3, v[0:1]\n\
         flat_atomic_add v4, v[0:1], v5 glc",
        Target::Gfx900,
    );
    // lanes 0-31: private offset 4; 32-47: LDS offset (l-32)*4; 48-63: global
    let addr = |l: usize| -> u64 {
        match l {
            0..=31 => PRIVATE_APERTURE + 4,
            32..=47 => SHARED_APERTURE + (l as u64 - 32) * 4,
            _ => GLOBAL + l as u64 * 4,
        }
    };
    r.wave.vgpr[0] = lanes_of(|l| addr(l) as u32);
    r.wave.vgpr[1] = lanes_of(|l| (addr(l) >> 32) as u32);
    r.wave.vgpr[2] = lanes_of(|l| 500 + l as u32);
    r.wave.vgpr[5] = [10; 64];
    let r = r.ok();
    for l in 0..64 {
        let stored = match l {
            0..=31 => r.u32_at(SCRATCH + 256 + l as u64 * 4),
            32..=47 => r.lds_u32((l - 32) * 4),
            _ => r.u32_at(GLOBAL + l as u64 * 4),
        };
        assert_eq!(
            stored,
            500 + l as u32 + 10,
            "lane {l}: stored, then +10 atomically"
        );
        assert_eq!(r.wave.vgpr[3][l], 500 + l as u32, "lane {l}: loaded back");
        assert_eq!(
            r.wave.vgpr[4][l],
            500 + l as u32,
            "lane {l}: the atomic returns the old value"
        );
    }
    // nothing leaked into the global address the aperture offsets would name
    assert_eq!(r.u32_at(GLOBAL), 0);
}

#[test]
fn flat_lds_access_beyond_the_allocation_reads_zero_or_faults_when_strict() {
    for strict in [false, true] {
        let mut r = Run::new("flat_load_dword v3, v[0:1]", Target::Gfx900);
        r.env.lds_strict = strict;
        r.wave.vgpr[0] = [4096; 64]; // LDS is 1024 bytes
        r.wave.vgpr[1] = [(SHARED_APERTURE >> 32) as u32; 64];
        r.wave.vgpr[3] = [0x5a5a_5a5a; 64];
        let stop = r.wave.run(&r.cache, &mut r.env, 10);
        if strict {
            assert!(matches!(stop, Stop::Fault(_)), "{stop:?}");
        } else {
            // the hardware's out-of-range rule: the read returns 0
            assert_eq!(stop, Stop::EndOfProgram);
            assert_eq!(r.wave.vgpr[3], [0; 64]);
            assert_eq!(r.env.lds_out_of_range.len(), 64, "every lane told");
        }
    }
}

#[test]
fn d16_hi_stores_write_the_high_half() {
    let mut r = Run::new(
        "global_store_short_d16_hi v0, v1, s[0:1]\nglobal_store_byte_d16_hi v0, v1, s[0:1] offset:4\n\
         global_store_short v0, v1, s[0:1] offset:8\n\
         ds_write_b16_d16_hi v2, v1\nds_write_b8_d16_hi v2, v1 offset:4",
        Target::Gfx900,
    );
    r.wave.set_sgpr64(0, GLOBAL);
    r.wave.set_exec(1);
    r.wave.vgpr[0] = [0; 64];
    r.wave.vgpr[1] = [0xabcd_1234; 64];
    r.wave.vgpr[2] = [16; 64];
    let r = r.ok();
    assert_eq!(r.u32_at(GLOBAL), 0xabcd);
    assert_eq!(r.u32_at(GLOBAL + 4), 0xcd);
    assert_eq!(
        r.u32_at(GLOBAL + 8),
        0x1234,
        "the plain short store takes the low half"
    );
    assert_eq!(r.lds_u32(16), 0xabcd);
    assert_eq!(r.lds_u32(20), 0xcd);
}

#[test]
fn lds_d16_reads_keep_the_other_half() {
    let mut r = Run::new(
        "ds_read_u16_d16 v1, v0\nds_read_u16_d16_hi v2, v0\nds_read_i8_d16_hi v3, v0 offset:1\n\
         ds_read_u8_d16 v4, v0 offset:1",
        Target::Gfx900,
    );
    r.env.lds[8..12].copy_from_slice(&0x0000_9e7fu32.to_le_bytes());
    r.wave.set_exec(1);
    r.wave.vgpr[0] = [8; 64];
    for v in 1..=4 {
        r.wave.vgpr[v] = [0x1111_2222; 64];
    }
    let r = r.ok();
    assert_eq!(r.wave.vgpr[1][0], 0x1111_9e7f);
    assert_eq!(r.wave.vgpr[2][0], 0x9e7f_2222);
    // byte 0x9e sign-extended to 16 bits: 0xff9e
    assert_eq!(r.wave.vgpr[3][0], 0xff9e_2222);
    assert_eq!(r.wave.vgpr[4][0], 0x1111_009e);
}

#[test]
fn ds_cmpst_compares_with_data0_and_stores_data1() {
    // Vega ISA DS_CMPST_B32: tmp = MEM[ADDR]; MEM[ADDR] = (tmp == DATA) ? DATA2 : tmp;
    // RETURN_DATA = tmp
    let mut r = Run::new(
        "ds_cmpst_rtn_b32 v3, v0, v1, v2\nds_cmpst_rtn_b64 v[8:9], v4, v[5:6], v[10:11]",
        Target::Gfx900,
    );
    r.wave.set_exec(0b11); // lanes 0 and 1
    r.wave.vgpr[0] = lanes_of(|l| 4 * l as u32); // at LDS 0 and 4
    r.env.lds[0..4].copy_from_slice(&7u32.to_le_bytes());
    r.env.lds[4..8].copy_from_slice(&8u32.to_le_bytes());
    r.wave.vgpr[1] = [7; 64]; // compare: matches lane 0 only
    r.wave.vgpr[2] = [99; 64]; // new value
    r.wave.vgpr[4] = [64; 64];
    r.env.lds[64..72].copy_from_slice(&0x1_0000_0002u64.to_le_bytes());
    r.wave.vgpr[5] = [2; 64];
    r.wave.vgpr[6] = [1; 64]; // compare 0x1_0000_0002: matches
    r.wave.vgpr[10] = [0xdead; 64];
    r.wave.vgpr[11] = [0xbeef; 64];
    let r = r.ok();
    assert_eq!(r.lds_u32(0), 99, "lane 0 matched: DATA1 stored");
    assert_eq!(r.lds_u32(4), 8, "lane 1 did not match: memory kept");
    assert_eq!(
        [r.wave.vgpr[3][0], r.wave.vgpr[3][1]],
        [7, 8],
        "the old values return"
    );
    // both lanes address the same qword; lane 0 matches and stores, lane 1 then sees it
    assert_eq!(r.lds_u32(64), 0xdead);
    assert_eq!(r.lds_u32(68), 0xbeef);
    assert_eq!([r.wave.vgpr[8][0], r.wave.vgpr[9][0]], [2, 1]);
    assert_eq!([r.wave.vgpr[8][1], r.wave.vgpr[9][1]], [0xdead, 0xbeef]);
}
