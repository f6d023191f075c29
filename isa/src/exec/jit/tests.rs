//! Differential tests: random programs of the hot instruction forms (VALU f32 and integer,
//! carries, compares, `v_cmpx`, SALU, EXEC manipulation, branches, `s_waitcnt`, scalar loads,
//! GLOBAL and LDS dword accesses, some with VOP3 modifiers the compiler leaves to the
//! interpreter) run compiled and interpreted from the same random state (registers, EXEC,
//! MODE rounding and denormals, memory), and must end alike: stop, every register, memory,
//! LDS, retired count.

use super::super::wave::{Mode, Wave, WAVE_SIZE};
use super::super::{CodeCache, HostEnv, Stop};
use super::{Step, SADDR_OFF};
use crate::decode::decode;
use crate::Target;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Lane values that exercise the f32 and integer edge cases: zeros, denormals, NaNs
/// (quiet, signalling, negative), infinities, ±1, ±2^24, the extremes.
const VALUES: [u32; 16] = [
    0,
    0x8000_0000,
    0x0000_0001,
    0x807f_ffff,
    0x7fc0_0000,
    0x7f80_0001,
    0xffc1_2345,
    0x7f80_0000,
    0xff80_0000,
    0x3f80_0000,
    0xbf80_0000,
    0x4b80_0000,
    0x7f7f_ffff,
    0xffff_ffff,
    0x0000_0003,
    0x3eaa_aaab,
];

const BASE: u64 = 0x1000;
/// Global memory the programs read and write: 4 KiB.
const GLOBAL: u64 = 0x10_0000;
const GLOBAL_LEN: u64 = 0x1000;
const LDS_LEN: usize = 512;

/// VGPRs the random ALU ops write (v12–v15 hold addresses).
const ALU_VGPRS: u32 = 12;
/// SGPRs the random ALU ops write (s16–s19 hold bases).
const ALU_SGPRS: u32 = 16;

/// A random VALU/SALU source operand code (9-bit VOP form: 256+ is a VGPR).
fn vsrc(rng: &mut Rng) -> u32 {
    match rng.below(8) {
        0..=3 => 256 + rng.below(16) as u32,
        4 => rng.below(20) as u32,                              // s0–s19
        5 => rng.pick(&[106, 107, 126, 124]),                   // vcc, exec_lo, m0
        6 => 128 + rng.below(81) as u32,                        // inline integers
        _ => rng.pick(&[240, 241, 242, 243, 244, 247, 248u32]), // inline floats
    }
}

fn ssrc(rng: &mut Rng) -> u32 {
    match rng.below(4) {
        0 | 1 => rng.below(20) as u32,
        2 => 128 + rng.below(81) as u32,
        _ => rng.pick(&[106, 126, 240, 242]),
    }
}

fn vdst(rng: &mut Rng) -> u32 {
    rng.below(u64::from(ALU_VGPRS)) as u32
}

/// One random instruction of the hot forms, as dwords. Encodings from `llvm-mc-15
/// -mcpu=gfx906 -show-encoding`; the random fields are placed at the bit positions of the
/// gfx9 formats (VOP2 `src0[8:0] vsrc1[16:9] vdst[24:17] op[30:25]`, VOP3 `vdst[7:0]`,
/// `src0[8:0] src1[17:9] src2[26:18] neg[31:29]` in dword 1, SOP2 `ssrc0[7:0] ssrc1[15:8]
/// sdst[22:16]`).
fn random_inst(rng: &mut Rng, target: Target) -> Vec<u32> {
    // VOP2 opcodes at [30:25]: add_f32, sub_f32, mul_f32, mac_f32, max_f32, add_u32,
    // sub_u32, and, or, xor, lshlrev, lshrrev, mul_u32_u24, add_co, addc_co, cndmask, fmac
    const VOP2: [u32; 17] = [
        0x01, 0x02, 0x05, 0x16, 0x0b, 0x34, 0x35, 0x13, 0x14, 0x15, 0x12, 0x10, 0x08, 0x19, 0x1c,
        0x00, 0x3b,
    ];
    // VOPC opcodes at [24:17]: cmp_gt_u32, cmp_lt_f32, cmpx_gt_u32
    const VOPC: [u32; 3] = [0xcc, 0x41, 0xdc];
    // VOP3 opcodes at [25:16] of dword 0: fma_f32, mad_u32_u24, lshl_add_u32, add3_u32,
    // mul_lo_u32
    const VOP3: [u32; 5] = [0x1cb, 0x1c3, 0x1fd, 0x1ff, 0x285];
    // SOP2 opcodes at [29:23] (with [31:30] = 2): add_u32, addc_u32, mul_i32, lshl_b32,
    // and_b32
    const SOP2: [u32; 5] = [0x00, 0x04, 0x24, 0x1c, 0x0c];
    let literal =
        |rng: &mut Rng, src: u32| -> Option<u32> { (src == 255).then(|| rng.pick(&VALUES)) };
    match rng.below(16) {
        0..=4 => {
            // v_fmac_f32 (the last) is gfx906 and later
            let ops = if target == Target::Gfx900 {
                &VOP2[..VOP2.len() - 1]
            } else {
                &VOP2[..]
            };
            let op = rng.pick(ops);
            // a literal source sometimes
            let src0 = if rng.below(10) == 0 { 255 } else { vsrc(rng) };
            let vsrc1 = rng.below(16) as u32;
            let mut v = vec![src0 | vsrc1 << 9 | vdst(rng) << 17 | op << 25];
            v.extend(literal(rng, src0));
            v
        }
        5 => {
            let op = rng.pick(&VOPC);
            vec![vsrc(rng) | (rng.below(16) as u32) << 9 | op << 17 | 0x3e << 25]
        }
        6 | 7 => {
            let op = rng.pick(&VOP3);
            // now and then a modifier (neg on a float op, clamp): the interpreter's case
            // (neg on v_fma_f32 only: the integer ops do not take it)
            let (neg, clamp) = if rng.below(8) == 0 && op == 0x1cb {
                (rng.below(8) as u32, rng.below(2) as u32)
            } else {
                (0, 0)
            };
            let w0 = vdst(rng) | clamp << 15 | op << 16 | 0xd0 << 24;
            // one scalar source at most (the constant bus), the others VGPRs or inline
            let other = |rng: &mut Rng| {
                if rng.below(4) == 0 {
                    128 + rng.below(81) as u32
                } else {
                    256 + rng.below(16) as u32
                }
            };
            // v_mul_lo_u32 has two sources: SRC2 is 0
            let src2 = if op == 0x285 { 0 } else { other(rng) };
            let w1 = vsrc(rng) | other(rng) << 9 | src2 << 18 | neg << 29;
            vec![w0, w1]
        }
        8 | 9 => {
            let op = rng.pick(&SOP2);
            let sdst = rng.below(u64::from(ALU_SGPRS)) as u32;
            vec![ssrc(rng) | ssrc(rng) << 8 | sdst << 16 | op << 23 | 2 << 30]
        }
        10 => match rng.below(5) {
            // s_cmp_lg_u32 / s_cmp_lt_i32 ssrc0, ssrc1
            0 => vec![ssrc(rng) | ssrc(rng) << 8 | 0xbf07 << 16],
            1 => vec![ssrc(rng) | ssrc(rng) << 8 | 0xbf04 << 16],
            // s_and_saveexec_b64 s[2k:2k+1], s[2j:2j+1]
            2 => vec![
                (2 * rng.below(8) as u32)
                    | 0x20 << 8
                    | (2 * rng.below(8) as u32) << 16
                    | 0xbe80 << 16,
            ],
            // s_or_b64 exec, exec, s[2j:2j+1]
            3 => vec![0x7e | (2 * rng.below(8) as u32) << 8 | 0x87fe << 16],
            // s_mov_b64 exec, s[2j:2j+1]
            _ => vec![(2 * rng.below(8) as u32) | 0x01 << 8 | 0xbefe << 16],
        },
        11 => {
            // s_load_dword sN, s[16:17], imm (N < 16); s_waitcnt
            let sdata = rng.below(16) as u32;
            let offset = 4 * rng.below(64) as u32;
            vec![sdata << 6 | 8 | 0xc002 << 16, offset, 0xbf8c_0070]
        }
        12 | 13 => {
            // global_load_dword / global_store_dword, vaddr v14 (a run) or v15 (scattered) with
            // s[18:19], or v[12:13] (64-bit addresses) with off
            let load = rng.below(2) == 0;
            let (vaddr, saddr) = match rng.below(3) {
                0 => (14, 18),
                1 => (15, 18),
                _ => (12, u32::from(SADDR_OFF)),
            };
            let offset = (rng.below(1024) as i32 - 512) as u32 & 0x1fff;
            let op = if load { 0x14 } else { 0x1c };
            let w0 = offset | 2 << 14 | op << 18 | 0x37 << 26;
            let data = rng.below(u64::from(ALU_VGPRS)) as u32;
            let w1 = if load {
                vaddr | saddr << 16 | data << 24
            } else {
                vaddr | data << 8 | saddr << 16
            };
            vec![w0, w1, 0xbf8c_0f70]
        }
        14 => {
            // ds_read_b32 / ds_write_b32 at v14 (in range) or v15 (some lanes past the end)
            let load = rng.below(2) == 0;
            let addr = rng.pick(&[14u32, 15]);
            let offset = 4 * rng.below(32) as u32;
            // ds_read_b32 0x36, ds_write_b32 0x0d, ds_read2_b32 0x37 (offset0 [7:0] and
            // offset1 [15:8] in dwords)
            let two = load && rng.below(2) == 0;
            let op = if two {
                0x37
            } else if load {
                0x36
            } else {
                0x0d
            };
            let offset = if two {
                rng.below(256) as u32 | (rng.below(256) as u32) << 8
            } else {
                offset
            };
            let w0 = offset | op << 17 | 0x36 << 26;
            // (ds_read2_b32 writes a pair: its first register below v11)
            let data = rng.below(u64::from(ALU_VGPRS) - 1) as u32;
            let w1 = if load {
                addr | data << 24
            } else {
                addr | data << 8
            };
            vec![w0, w1]
        }
        _ => vec![0xbf80_0000], // s_nop 0
    }
}

/// A random program: instructions, forward conditional branches over some of them, then
/// `s_endpgm`.
fn random_program(rng: &mut Rng, target: Target) -> Vec<u8> {
    let n = 4 + rng.below(28) as usize;
    let insts: Vec<Vec<u32>> = (0..n).map(|_| random_inst(rng, target)).collect();
    let mut words = Vec::new();
    // no branch inside the run another branch skips, so every target is an instruction
    let mut skipped_until = 0;
    for (i, inst) in insts.iter().enumerate() {
        if rng.below(6) == 0 && i + 1 < n && i >= skipped_until {
            // s_cbranch_{scc0,scc1,vccz,execz} or s_branch over the next k instructions
            let k = 1 + rng.below((n - i - 1).min(3) as u64) as usize;
            let skip: usize = insts[i..i + k].iter().map(Vec::len).sum();
            skipped_until = i + k;
            let op = rng.pick(&[0x84u32, 0x85, 0x86, 0x88, 0x82]);
            words.push(skip as u32 | op << 16 | 0xbf00 << 16);
        }
        words.extend(inst);
    }
    words.push(0xbf81_0000); // s_endpgm
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A wave and a world in a random state: lane values from [`VALUES`] and random bits, address
/// registers (v14 a dword run, v15 scattered with some lanes past LDS and global memory,
/// v[12:13] 64-bit addresses), random EXEC (often full), VCC, SCC and MODE.
fn random_state(rng: &mut Rng, target: Target) -> (Wave, HostEnv) {
    let mut w = Wave::new(target, 16, 0);
    w.pc = BASE;
    for v in 0..ALU_VGPRS as usize {
        for l in 0..WAVE_SIZE {
            w.vgpr[v][l] = if rng.below(3) == 0 {
                rng.next() as u32
            } else {
                rng.pick(&VALUES)
            };
        }
    }
    let run_start = 4 * rng.below(128) as u32 + 0x200;
    for l in 0..WAVE_SIZE {
        w.vgpr[14][l] = 4 * l as u32;
        w.vgpr[15][l] = if rng.below(40) == 0 {
            0x800 + rng.below(0x2000) as u32
        } else {
            4 * rng.below(120) as u32
        };
        let a = GLOBAL + u64::from(run_start) + 4 * l as u64;
        w.vgpr[12][l] = a as u32;
        w.vgpr[13][l] = (a >> 32) as u32;
    }
    for s in 0..ALU_SGPRS as usize {
        w.sgpr[s] = if rng.below(2) == 0 {
            rng.next() as u32
        } else {
            rng.pick(&VALUES)
        };
    }
    w.set_sgpr64(16, GLOBAL);
    w.set_sgpr64(18, GLOBAL + 0x400 + 4 * rng.below(64));
    w.set_vcc(rng.next());
    w.scc = rng.below(2) == 0;
    w.set_exec(match rng.below(4) {
        0 | 1 => u64::MAX,
        2 => rng.next(),
        _ => 0,
    });
    // MODE: random rounding and denormal fields, DX10_CLAMP and IEEE
    w.mode = Mode(rng.below(0x400) as u32);
    if rng.below(2) == 0 {
        // the common case: round to nearest even
        w.mode.0 &= !0xf;
    }
    let mut env = HostEnv::new(LDS_LEN);
    env.map(GLOBAL, GLOBAL_LEN);
    let bytes: Vec<u8> = (0..GLOBAL_LEN / 4)
        .flat_map(|_| {
            let v = if rng.below(2) == 0 {
                rng.pick(&VALUES)
            } else {
                rng.next() as u32
            };
            v.to_le_bytes()
        })
        .collect();
    env.write(GLOBAL, &bytes);
    for b in env.lds.iter_mut() {
        *b = rng.next() as u8;
    }
    (w, env)
}

fn assert_same(a: &(Wave, HostEnv, Stop), b: &(Wave, HostEnv, Stop), what: &str) {
    assert_eq!(a.2, b.2, "stop: {what}");
    assert_eq!(a.0.pc, b.0.pc, "pc: {what}");
    assert_eq!(a.0.vgpr, b.0.vgpr, "vgprs: {what}");
    assert_eq!(a.0.sgpr, b.0.sgpr, "sgprs: {what}");
    assert_eq!(
        (a.0.scc, a.0.mode, a.0.retired),
        (b.0.scc, b.0.mode, b.0.retired),
        "scc, mode, retired: {what}"
    );
    assert_eq!(a.1.lds, b.1.lds, "lds: {what}");
    assert_eq!(
        a.1.read(GLOBAL, GLOBAL_LEN as usize),
        b.1.read(GLOBAL, GLOBAL_LEN as usize),
        "global memory: {what}"
    );
    assert_eq!(a.1.lds_out_of_range, b.1.lds_out_of_range, "{what}");
}

fn listing(code: &[u8], target: Target) -> String {
    let mut out = String::new();
    let mut off = 0;
    while off < code.len() {
        match decode(&code[off..], BASE + off as u64, target) {
            Ok((inst, len)) => {
                out += &format!("{:#x}: {inst}\n", BASE + off as u64);
                off += len.max(4);
            }
            Err(e) => {
                out += &format!("{:#x}: {e}\n", BASE + off as u64);
                off += 4;
            }
        }
    }
    out
}

/// Counts of compiled steps by kind over every block of `code` built so far.
fn tally(code: &CodeCache, counts: &mut std::collections::BTreeMap<&'static str, usize>) {
    let Some(blocks) = code.blocks() else { return };
    for slot in blocks.slots.iter() {
        let Some(Some(block)) = slot.get() else {
            continue;
        };
        for p in block.steps.iter() {
            let name = match p.step {
                Step::Valu(_) => "valu",
                Step::Salu(_) => "salu",
                Step::Nop => "nop",
                Step::GlobalLoadDword { .. } => "global_load_dword",
                Step::GlobalStoreDword { .. } => "global_store_dword",
                Step::DsReadB32 { .. } => "ds_read_b32",
                Step::DsRead2B32 { .. } => "ds_read2_b32",
                Step::DsWriteB32 { .. } => "ds_write_b32",
                Step::Branch { .. } => "branch",
                Step::Interp => "interpreted",
            };
            *counts.entry(name).or_default() += 1;
        }
    }
}

#[test]
fn compiled_programs_match_the_interpreter() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut counts = std::collections::BTreeMap::new();
    let mut stops = std::collections::BTreeMap::new();
    let mut instructions = 0u64;
    const PROGRAMS: usize = 4000;
    for i in 0..PROGRAMS {
        let target = rng.pick(&[Target::Gfx900, Target::Gfx906, Target::Gfx90a]);
        let code = random_program(&mut rng, target);
        let compiled = CodeCache::new(target, BASE, &code).with_compiler();
        let interpreted = compiled.clone().without_compiler();
        let (wave, env) = random_state(&mut rng, target);
        // a budget that ends inside the program now and then, then the rest
        let budgets = if rng.below(4) == 0 {
            vec![1 + rng.below(20), 10_000]
        } else {
            vec![10_000]
        };
        let mut a = (wave.clone(), env.clone(), Stop::BudgetExhausted);
        let mut b = (wave, env, Stop::BudgetExhausted);
        for budget in budgets {
            if a.2 != Stop::BudgetExhausted {
                break;
            }
            a.2 = a.0.run(&compiled, &mut a.1, budget);
            b.2 = b.0.run(&interpreted, &mut b.1, budget);
            let what = format!(
                "program {i} on {target:?}, budget {budget}:\n{}",
                listing(&code, target)
            );
            assert_same(&a, &b, &what);
        }
        instructions += a.0.retired;
        let stop = match &a.2 {
            Stop::Fault(f) => format!("fault {}", f.to_string().split(' ').next().unwrap_or("")),
            s => format!("{s:?}"),
        };
        *stops.entry(stop).or_insert(0usize) += 1;
        tally(&compiled, &mut counts);
    }
    eprintln!("{PROGRAMS} programs, {instructions} instructions retired; steps compiled: {counts:?}; stops: {stops:?}");
    // the generator reaches every compiled form, and most programs run to their end
    for form in [
        "valu",
        "salu",
        "nop",
        "global_load_dword",
        "global_store_dword",
        "ds_read_b32",
        "ds_read2_b32",
        "ds_write_b32",
        "branch",
        "interpreted",
    ] {
        assert!(
            counts.get(form).copied().unwrap_or(0) > 500,
            "{form}: {counts:?}"
        );
    }
    assert!(
        stops.get("EndOfProgram").copied().unwrap_or(0) > PROGRAMS / 2,
        "{stops:?}"
    );
}

/// The vector add loop the `exec` bench runs compiles to one block of compiled steps: no
/// instruction of it is left to the interpreter.
#[test]
fn the_vadd_loop_compiles_whole() {
    let words: [u32; 14] = [
        0x2402_0082, // v_lshlrev_b32_e32 v1, 2, v0
        0xdc50_8000,
        0x0200_0001, // global_load_dword v2, v1, s[0:1]
        0xdc50_8000,
        0x0302_0001, // global_load_dword v3, v1, s[2:3]
        0xbf8c_0f70, // s_waitcnt vmcnt(0)
        0x0204_0702, // v_add_f32_e32 v2, v2, v3
        0xdc70_8000,
        0x0004_0201, // global_store_dword v1, v2, s[4:5]
        0x6800_00c0, // v_add_u32_e32 v0, 64, v0
        0x8006_8106, // s_add_u32 s6, s6, 1
        0xbf07_0706, // s_cmp_lg_u32 s6, s7
        0xbf85_fff3, // s_cbranch_scc1 -13
        0xbf81_0000, // s_endpgm
    ];
    let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let cache = CodeCache::new(Target::Gfx900, BASE, &code).with_compiler();
    let block = cache
        .blocks()
        .and_then(|b| b.at(&cache, BASE))
        .expect("a block");
    let kinds: Vec<&str> = block
        .steps
        .iter()
        .map(|p| match p.step {
            Step::Valu(_) => "valu",
            Step::Salu(_) => "salu",
            Step::Nop => "nop",
            Step::GlobalLoadDword { .. } => "load",
            Step::GlobalStoreDword { .. } => "store",
            Step::Branch { target, .. } if target == BASE => "branch to start",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "valu",
            "load",
            "load",
            "nop",
            "valu",
            "store",
            "valu",
            "salu",
            "salu",
            "branch to start"
        ]
    );
    assert_eq!(block.vgpr_end, 4);
}
