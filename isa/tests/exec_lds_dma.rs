//! MUBUF loads with the `lds` bit ("LDS DMA", `buffer_load_dword ... lds` in Tensile's rocBLAS
//! kernels): programs assembled by llvm-mc-15, run on one wave, LDS compared with a host
//! reference. The reference follows the address rules named in `Wave::mubuf_load_to_lds`:
//! the buffer address and range check of the plain load; lane `l` writes one dword (the
//! loaded value, zero- or sign-extended) at LDS byte `M0[15:0] + OFFSET + 4 * l`; an
//! out-of-range buffer lane writes 0; an EXEC-masked lane writes nothing; a dword past the
//! LDS allocation is dropped (a fault in a strict world).

mod assemble;

use assemble::asm;

use isa::exec::fault::WaveFault;
use isa::exec::{CodeCache, HostEnv, Stop, Wave};
use isa::Target;

const BASE: u64 = 0x1000;
const BUF: u64 = 0x4000;
/// What LDS holds before each program, so that a written 0 and an untouched byte differ.
const LDS_FILL: u8 = 0xa5;

/// One program's world: a buffer at `BUF` in s[8:11] (`stride`, `num_records`), `mem` at
/// `BUF`, SOFFSET s3 = `soffset`, v1 = `v1(lane)`, M0 = `m0`, EXEC = `exec`, `lds_bytes` of LDS
/// filled with `LDS_FILL`.
struct World {
    target: Target,
    stride: u32,
    num_records: u32,
    mem: Vec<u8>,
    soffset: u32,
    v1: fn(usize) -> u32,
    m0: u32,
    exec: u64,
    lds_bytes: usize,
    strict: bool,
}

impl World {
    fn new(mem: Vec<u8>, v1: fn(usize) -> u32) -> Self {
        World {
            target: Target::Gfx900,
            stride: 0,
            num_records: mem.len() as u32,
            mem,
            soffset: 0,
            v1,
            m0: 0,
            exec: u64::MAX,
            lds_bytes: 1024,
            strict: false,
        }
    }

    /// Runs `inst` (one `buffer_load_* ... lds`); the stop, the wave before and after, and
    /// the world after.
    fn run(&self, inst: &str) -> (Stop, Wave, Wave, HostEnv) {
        let code = asm(
            &format!("s_mov_b32 m0, {:#x}\n{inst}\ns_endpgm\n", self.m0),
            self.target.name(),
        );
        let cache = CodeCache::new(self.target, BASE, &code);
        let mut wave = Wave::new(self.target, 16, 16);
        wave.pc = BASE;
        wave.sgpr[3] = self.soffset;
        wave.sgpr[8..12].copy_from_slice(&[BUF as u32, self.stride << 16, self.num_records, 0]);
        for l in 0..64 {
            wave.vgpr[1][l] = (self.v1)(l);
            // VDATA is ignored: these must stay as they are
            wave.vgpr[0][l] = 0xdead_0000 | l as u32;
            wave.vgpr[2][l] = 0xbeef_0000 | l as u32;
        }
        wave.set_exec(self.exec);
        let before = wave.clone();
        let mut env = HostEnv::new(self.lds_bytes);
        env.lds.fill(LDS_FILL);
        env.lds_strict = self.strict;
        env.write(BUF, &self.mem);
        let stop = wave.run(&cache, &mut env, 100);
        (stop, before, wave, env)
    }

    /// The LDS the rules above give for a load of `bytes` (`signed`) whose lane `l` reads
    /// buffer offset `offset(l)` (before SOFFSET) with instruction offset `inst_offset`.
    fn expected_lds(
        &self,
        bytes: usize,
        signed: bool,
        inst_offset: u32,
        offset: impl Fn(usize) -> u32,
    ) -> Vec<u8> {
        let mut lds = vec![LDS_FILL; self.lds_bytes];
        for l in 0..64 {
            if (self.exec >> l) & 1 == 0 {
                continue;
            }
            let off = offset(l);
            let in_range = if self.stride == 0 {
                off < self.num_records
            } else {
                (self.v1)(l) < self.num_records
            };
            let value = if in_range {
                let at = (self.soffset + off) as usize;
                let mut v = 0u32;
                for i in 0..bytes {
                    v |= u32::from(self.mem[at + i]) << (8 * i);
                }
                match (signed, bytes) {
                    (true, 1) => v as u8 as i8 as i32 as u32,
                    (true, 2) => v as u16 as i16 as i32 as u32,
                    _ => v,
                }
            } else {
                0
            };
            let a = ((self.m0 & 0xffff) + inst_offset) as usize + 4 * l;
            if a + 4 <= lds.len() {
                lds[a..a + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
        lds
    }
}

/// Bytes whose high bits are set often, so that sign and zero extension differ.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 73 + 0x81) as u8).collect()
}

fn assert_registers_untouched(before: &Wave, after: &Wave) {
    assert_eq!(before.vgpr, after.vgpr, "an LDS load writes no VGPR");
}

#[test]
fn dword_goes_to_m0_plus_offset_plus_four_per_lane_on_every_gfx9_target() {
    for target in [
        Target::Gfx900,
        Target::Gfx906,
        Target::Gfx908,
        Target::Gfx90a,
    ] {
        let mut w = World::new(pattern(1024), |l| 4 * l as u32);
        w.target = target;
        // only M0[15:0] counts
        w.m0 = 0x0003_0040;
        w.soffset = 8;
        let (stop, before, after, env) =
            w.run("buffer_load_dword v1, s[8:11], s3 offen offset:12 lds");
        assert_eq!(stop, Stop::EndOfProgram, "{target:?}");
        assert_registers_untouched(&before, &after);
        let want = w.expected_lds(4, false, 12, |l| 4 * l as u32 + 12);
        assert_eq!(env.lds, want, "{target:?}");
        // spelled out for lane 5: LDS 0x40 + 12 + 20 holds the buffer's dword at 8 + 20 + 12
        let got = u32::from_le_bytes(env.lds[0x40 + 12 + 20..][..4].try_into().unwrap());
        let mem = u32::from_le_bytes(w.mem[8 + 20 + 12..][..4].try_into().unwrap());
        assert_eq!(got, mem, "{target:?}");
        assert!(env.lds_out_of_range.is_empty());
    }
}

#[test]
fn sub_dword_loads_write_one_extended_dword_per_lane() {
    for (op, bytes, signed) in [
        ("buffer_load_ubyte", 1, false),
        ("buffer_load_sbyte", 1, true),
        ("buffer_load_ushort", 2, false),
        ("buffer_load_sshort", 2, true),
    ] {
        let mut w = World::new(pattern(512), |l| 3 * l as u32);
        w.m0 = 0x20;
        let (stop, before, after, env) = w.run(&format!("{op} v1, s[8:11], 0 offen offset:1 lds"));
        assert_eq!(stop, Stop::EndOfProgram, "{op}");
        assert_registers_untouched(&before, &after);
        assert_eq!(
            env.lds,
            w.expected_lds(bytes, signed, 1, |l| 3 * l as u32 + 1),
            "{op}"
        );
        // the stride is 4 bytes whatever the size: lane 1's dword starts 4 bytes after lane 0's
        let lane1 = u32::from_le_bytes(env.lds[0x20 + 1 + 4..][..4].try_into().unwrap());
        let raw = if bytes == 1 {
            u32::from(w.mem[4])
        } else {
            u32::from(u16::from_le_bytes([w.mem[4], w.mem[5]]))
        };
        let want = match (signed, bytes) {
            (true, 1) => raw as u8 as i8 as i32 as u32,
            (true, _) => raw as u16 as i16 as i32 as u32,
            _ => raw,
        };
        assert_eq!(lane1, want, "{op}");
    }
}

#[test]
fn exec_masked_lanes_write_nothing() {
    let mut w = World::new(pattern(256), |l| 4 * l as u32);
    w.exec = 0xf0f0_0000_1234_8001;
    let (stop, _, _, env) = w.run("buffer_load_dword v1, s[8:11], 0 offen lds");
    assert_eq!(stop, Stop::EndOfProgram);
    assert_eq!(env.lds, w.expected_lds(4, false, 0, |l| 4 * l as u32));
    // lane 1 is masked: its dword keeps the fill
    assert_eq!(env.lds[4..8], [LDS_FILL; 4]);
}

#[test]
fn out_of_range_buffer_lanes_write_zero() {
    // 100 bytes of records: lanes 0..24 read, lanes 25.. are out of range
    let mut w = World::new(pattern(256), |l| 4 * l as u32);
    w.num_records = 100;
    let (stop, _, _, env) = w.run("buffer_load_dword v1, s[8:11], 0 offen lds");
    assert_eq!(stop, Stop::EndOfProgram);
    assert_eq!(env.lds, w.expected_lds(4, false, 0, |l| 4 * l as u32));
    assert_eq!(env.lds[24 * 4..25 * 4], w.mem[96..100]);
    assert_eq!(env.lds[25 * 4..26 * 4], [0; 4]);
}

#[test]
fn indexed_buffer_lanes_use_the_stride() {
    // a structured buffer: 8-byte records, v1 = the record index, 40 records
    let mut w = World::new(pattern(512), |l| l as u32);
    w.stride = 8;
    w.num_records = 40;
    w.m0 = 0x100;
    let (stop, _, _, env) = w.run("buffer_load_dword v1, s[8:11], 0 idxen offset:4 lds");
    assert_eq!(stop, Stop::EndOfProgram);
    assert_eq!(env.lds, w.expected_lds(4, false, 4, |l| 8 * l as u32 + 4));
    // record 39 is in range, record 40 is not
    assert_eq!(env.lds[0x104 + 4 * 39..][..4], w.mem[8 * 39 + 4..][..4]);
    assert_eq!(env.lds[0x104 + 4 * 40..][..4], [0; 4]);
}

#[test]
fn dwords_past_the_lds_allocation_are_dropped() {
    // 128 bytes of LDS from M0 = 64: lanes 0..15 fit, lane 16's dword starts at 128
    let mut w = World::new(pattern(256), |l| 4 * l as u32);
    w.lds_bytes = 128;
    w.m0 = 64;
    let (stop, _, _, env) = w.run("buffer_load_dword v1, s[8:11], 0 offen lds");
    assert_eq!(stop, Stop::EndOfProgram);
    assert_eq!(env.lds, w.expected_lds(4, false, 0, |l| 4 * l as u32));
    assert_eq!(env.lds[64..128], w.mem[0..64]);
    assert_eq!(env.lds_out_of_range, vec![128]);
}

#[test]
fn a_strict_world_stops_at_the_first_dword_past_the_lds_allocation() {
    let mut w = World::new(pattern(256), |l| 4 * l as u32);
    w.lds_bytes = 128;
    w.m0 = 64;
    w.strict = true;
    let (stop, _, _, _) = w.run("buffer_load_dword v1, s[8:11], 0 offen lds");
    assert_eq!(stop, Stop::Fault(WaveFault::LdsOutOfRange { offset: 128 }));
}
