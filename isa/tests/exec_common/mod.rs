//! Test-side dispatcher: compiles OpenCL C with clang-15, loads the code object with
//! `codeobj`, sets up the ABI's initial wave state (AMDGPUUsage, "Initial Kernel Execution
//! State") and runs every workgroup's waves on the interpreter against a [`HostEnv`].

#![allow(dead_code)]

use std::path::PathBuf;

use codeobj::{CodeObject, Executable, HostMemory, LoadedKernel, TargetId};
use isa::exec::wave::sreg;
use isa::exec::{CodeCache, HostEnv, Mode, Stop, Wave, WaveEnv};
use isa::Target;

/// Where the test kernels' sources are.
pub fn kernel_source(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/exec_kernels")
        .join(name)
}

/// Compiles `source` (a file of `tests/exec_kernels`) for `mcpu` with the `extra` clang flags
/// into a linked code object (shared ELF) and returns its bytes.
pub fn compile(source: &str, mcpu: &str, extra: &[&str]) -> Vec<u8> {
    kfd_testkit::opencl_to_code_object(&kernel_source(source), mcpu, extra)
}

/// A loaded program: the executable's memory mirrored into a [`HostEnv`], and the target.
pub struct Program {
    pub exe: Executable,
    pub target: Target,
    pub mcpu: String,
    pub env: HostEnv,
}

const LOAD_BASE: u64 = 0x1000_0000;
const SCRATCH_BASE: u64 = 0x4000_0000;
const PACKET_ADDR: u64 = 0x2000_0000;
const KERNARG_ADDR: u64 = 0x2000_1000;
/// Where test buffers are placed.
pub const HEAP: u64 = 0x8000_0000;

impl Program {
    /// Loads `elf` for `mcpu`.
    pub fn load(elf: &[u8], mcpu: &str) -> Program {
        let agent: TargetId = format!("amdgcn-amd-amdhsa--{mcpu}")
            .parse()
            .expect("target id");
        let mut exe = Executable::new(agent);
        let mut mem = HostMemory::new(LOAD_BASE, 1 << 26);
        let co = CodeObject::parse(elf).expect("code object parses");
        exe.load(co, &mut mem).expect("loads");
        exe.freeze(&mut mem).expect("freezes");
        let mut env = HostEnv::new(0);
        for (co, bias) in exe.code_objects() {
            for seg in co.segments() {
                let addr = bias.wrapping_add(seg.vaddr);
                let bytes = mem.read(addr, seg.memsz as usize).expect("segment loaded");
                env.write(addr, bytes);
            }
        }
        let target = mcpu.parse().expect("isa target");
        Program {
            exe,
            target,
            mcpu: mcpu.to_string(),
            env,
        }
    }

    /// Allocates and writes a buffer at `address` (test-chosen, inside [`HEAP`]).
    pub fn buffer(&mut self, address: u64, bytes: &[u8]) -> u64 {
        self.env.write(address, bytes);
        address
    }

    /// Reads `len` bytes back.
    pub fn read(&self, address: u64, len: usize) -> Vec<u8> {
        self.env.read(address, len).expect("mapped")
    }

    /// Dispatches `kernel` over `groups` workgroups of `local` work-items (1-D) with the
    /// explicit kernel arguments `args` (already laid out), and runs it to completion.
    pub fn dispatch(&mut self, kernel: &str, args: &[u8], groups: u32, local: u32) {
        let k = self
            .exe
            .kernel(kernel)
            .unwrap_or_else(|e| panic!("kernel {kernel}: {e}"));
        let code = self
            .env
            .read(k.entry_address, k.code_size as usize)
            .expect("code");
        let cache = CodeCache::new(self.target, k.entry_address, &code);
        let kd = k.descriptor;
        // kernarg segment: explicit args then zeroed hidden args
        let mut kernarg = vec![0u8; (kd.kernarg_size as usize).max(args.len())];
        kernarg[..args.len()].copy_from_slice(args);
        self.env.write(KERNARG_ADDR, &kernarg);
        // hsa_kernel_dispatch_packet_t
        let mut pkt = [0u8; 64];
        pkt[2..4].copy_from_slice(&1u16.to_le_bytes()); // setup: 1 dimension
        pkt[4..6].copy_from_slice(&(local as u16).to_le_bytes());
        pkt[6..8].copy_from_slice(&1u16.to_le_bytes());
        pkt[8..10].copy_from_slice(&1u16.to_le_bytes());
        pkt[12..16].copy_from_slice(&(groups * local).to_le_bytes());
        pkt[16..20].copy_from_slice(&1u32.to_le_bytes());
        pkt[20..24].copy_from_slice(&1u32.to_le_bytes());
        pkt[24..28].copy_from_slice(&kd.private_segment_fixed_size.to_le_bytes());
        pkt[28..32].copy_from_slice(&kd.group_segment_fixed_size.to_le_bytes());
        pkt[32..40].copy_from_slice(&k.descriptor_address.to_le_bytes());
        pkt[40..48].copy_from_slice(&KERNARG_ADDR.to_le_bytes());
        self.env.write(PACKET_ADDR, &pkt);
        let waves_per_group = local.div_ceil(64);
        let scratch_per_wave = u64::from(kd.private_segment_fixed_size) * 64;
        if scratch_per_wave > 0 {
            self.env
                .map(SCRATCH_BASE, scratch_per_wave * u64::from(waves_per_group));
        }
        for group in 0..groups {
            self.env.lds = vec![0; kd.group_segment_fixed_size as usize];
            let mut waves: Vec<Wave> = (0..waves_per_group)
                .map(|w| self.initial_wave(&k, group, w, local, scratch_per_wave))
                .collect();
            run_group(&mut waves, &cache, &mut self.env, kernel);
        }
    }

    /// The ABI's initial state for wave `w` of workgroup `group`.
    fn initial_wave(
        &self,
        k: &LoadedKernel,
        group: u32,
        w: u32,
        local: u32,
        scratch_per_wave: u64,
    ) -> Wave {
        let kd = &k.descriptor;
        let props = kd.kernel_code_properties;
        let rsrc1 = kd.compute_pgm_rsrc1;
        let rsrc2 = kd.compute_pgm_rsrc2;
        let total_vgprs = kd.vgpr_count(&self.mcpu) as usize;
        let (vgprs, agprs) = if self.target == Target::Gfx90a {
            let accum = (usize::from(kd.rsrc3_gfx90a().accum_offset()) + 1) * 4;
            (accum.min(total_vgprs), total_vgprs.saturating_sub(accum))
        } else {
            (total_vgprs, 0)
        };
        let mut wave = Wave::new(self.target, vgprs, agprs);
        wave.pc = k.entry_address;
        wave.mode = Mode::from_rsrc1(rsrc1.into_bits());
        let mut s = 0usize;
        if props.enable_sgpr_private_segment_buffer() {
            // V#: base, swizzled, index stride 64, add thread id (gfx9 scratch layout)
            let base = SCRATCH_BASE;
            let dwords = [
                base as u32,
                ((base >> 32) as u32 & 0xffff) | (1 << 31),
                u32::MAX,
                (3 << 21) | (1 << 23),
            ];
            wave.sgpr[s..s + 4].copy_from_slice(&dwords);
            s += 4;
        }
        if props.enable_sgpr_dispatch_ptr() {
            wave.set_sgpr64(s, PACKET_ADDR);
            s += 2;
        }
        if props.enable_sgpr_queue_ptr() {
            wave.set_sgpr64(s, 0);
            s += 2;
        }
        if props.enable_sgpr_kernarg_segment_ptr() {
            wave.set_sgpr64(s, KERNARG_ADDR);
            s += 2;
        }
        if props.enable_sgpr_dispatch_id() {
            wave.set_sgpr64(s, 0);
            s += 2;
        }
        if props.enable_sgpr_flat_scratch_init() {
            wave.set_sgpr64(s, u64::from(w) * scratch_per_wave);
            s += 2;
        }
        if props.enable_sgpr_private_segment_size() {
            wave.sgpr[s] = kd.private_segment_fixed_size;
            s += 1;
        }
        assert_eq!(
            s,
            usize::from(rsrc2.user_sgpr_count()),
            "user SGPRs laid out as the descriptor counts them"
        );
        if rsrc2.enable_sgpr_workgroup_id_x() {
            wave.sgpr[s] = group;
            s += 1;
        }
        if rsrc2.enable_sgpr_workgroup_id_y() {
            wave.sgpr[s] = 0;
            s += 1;
        }
        if rsrc2.enable_sgpr_workgroup_id_z() {
            wave.sgpr[s] = 0;
            s += 1;
        }
        if rsrc2.enable_sgpr_workgroup_info() {
            wave.sgpr[s] = 0;
            s += 1;
        }
        if rsrc2.enable_private_segment() {
            // private segment wave byte offset
            wave.sgpr[s] = (u64::from(w) * scratch_per_wave) as u32;
        }
        let lanes = (local - w * 64).min(64);
        wave.set_exec(if lanes == 64 {
            u64::MAX
        } else {
            (1u64 << lanes) - 1
        });
        let mut ids = [0u32; 64];
        for (l, id) in ids.iter_mut().enumerate() {
            *id = w * 64 + l as u32; // x only; y = z = 0 (packed or not, the same bits)
        }
        wave.vgpr[0] = ids;
        let _ = sreg::M0;
        wave
    }
}

/// Runs a workgroup's waves, releasing barriers when every live wave has arrived.
pub fn run_group(waves: &mut [Wave], cache: &CodeCache, env: &mut HostEnv, kernel: &str) {
    let mut done = vec![false; waves.len()];
    let mut at_barrier = vec![false; waves.len()];
    let mut steps = 0u64;
    loop {
        let mut progressed = false;
        for (i, wave) in waves.iter_mut().enumerate() {
            if done[i] || at_barrier[i] {
                continue;
            }
            progressed = true;
            match wave.run(cache, env as &mut dyn WaveEnv, 10_000) {
                Stop::EndOfProgram => done[i] = true,
                Stop::Barrier => at_barrier[i] = true,
                Stop::BudgetExhausted => {
                    steps += 10_000;
                    assert!(steps < 50_000_000, "{kernel}: no end after {steps} steps");
                }
                other => panic!("{kernel}: wave {i} stopped with {other:?}"),
            }
        }
        if done.iter().all(|d| *d) {
            return;
        }
        let live_waiting = done.iter().zip(&at_barrier).all(|(d, b)| *d || *b);
        if live_waiting {
            at_barrier.iter_mut().for_each(|b| *b = false);
        } else {
            assert!(progressed, "{kernel}: deadlock");
        }
    }
}

/// Little-endian bytes of a slice of plain numbers.
pub fn bytes_of_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian bytes of u64s.
pub fn bytes_of_u64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Reads u32s back.
pub fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Reads u64s back.
pub fn u64s(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Kernel arguments: appends each value at its natural alignment.
#[derive(Default)]
pub struct Args(pub Vec<u8>);

impl Args {
    /// A 64-bit value (pointer, long, double).
    pub fn u64(mut self, v: u64) -> Self {
        while self.0.len() % 8 != 0 {
            self.0.push(0);
        }
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A 32-bit value (int, float).
    pub fn u32(mut self, v: u32) -> Self {
        while self.0.len() % 4 != 0 {
            self.0.push(0);
        }
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
}
