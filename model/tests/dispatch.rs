//! Kernel dispatch on the model (issue #17): OpenCL C kernels compiled by clang-15 at test
//! time, loaded into GPU memory with `codeobj`'s loader, dispatched through an AQL queue and
//! checked against host references — on gfx900 and gfx90a.

mod common;
mod opencl;

use codeobj::{Executable, LoadedKernel};
use common::*;
use kfd_model::{Model, ModelConfig, Preset, QueueError};
use kfd_sys::*;
use kfd_testkit::assemble;
use std::path::PathBuf;
use std::process::Command;

const COMPLETE: u32 = KFD_IOC_WAIT_RESULT_COMPLETE;
/// A process with a loaded program, an AQL queue and a heap.
struct Gpu {
    model: Model,
    c: Client,
    exe: Executable,
    queue: (u32, QueueBufs),
    heap: Buf,
    heap_used: u64,
    signals: Buf,
    packets: u64,
}

impl Gpu {
    fn new(preset: Preset, mcpu: &str) -> Gpu {
        Gpu::with_config(ModelConfig::new(preset).with_engine_thread(false), mcpu)
    }

    fn with_config(cfg: ModelConfig, mcpu: &str) -> Gpu {
        let model = model_with(cfg);
        let c = Client::new(&model);
        let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        let (_code, exe) = opencl::load(&c, mcpu, &compile_kernels(mcpu));
        let heap = c.alloc_on(c.gpu(), 4 << 20, flags).unwrap();
        let signals = c.gtt(4096);
        let queue = c
            .create_queue_sized(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
            .unwrap();
        Gpu {
            model,
            c,
            exe,
            queue,
            heap,
            heap_used: 0,
            signals,
            packets: 0,
        }
    }

    fn alloc(&mut self, bytes: &[u8]) -> u64 {
        let off = self.heap_used;
        self.heap.write_bytes(off, bytes);
        self.heap_used = (off + bytes.len() as u64).next_multiple_of(256);
        self.heap.va + off
    }

    fn read(&self, va: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.heap.read_bytes(va - self.heap.va, &mut v);
        v
    }

    fn kernel(&self, name: &str) -> LoadedKernel {
        self.exe.kernel(name).unwrap()
    }

    /// Writes a KERNEL_DISPATCH packet and rings the doorbell; returns the completion
    /// signal's address (value 1 before, 0 after).
    fn dispatch(
        &mut self,
        k: &LoadedKernel,
        args: &[u8],
        wg: [u16; 3],
        grid: [u32; 3],
        lds: u32,
    ) -> u64 {
        let kernarg = self.alloc(&{
            let mut a = vec![0u8; (k.descriptor.kernarg_size as usize).max(args.len())];
            a[..args.len()].copy_from_slice(args);
            a
        });
        let sig_off = (self.packets % 64) * 64;
        self.signals.write_u64(sig_off, 1);
        self.signals.write_u64(sig_off + 8, 1);
        let signal = self.signals.va + sig_off;
        let q = &self.queue.1;
        KernelDispatch::of(k, wg, grid, lds, kernarg, signal).write(q, self.packets);
        self.packets += 1;
        self.c.submit(q, self.packets);
        signal
    }

    /// The `amd_queue_t` the CP finds 128 bytes below the read-index report address.
    fn amd_queue_offset(&self) -> u64 {
        // queue_args gives read_pointer_address = ptrs + 0x80 (read_dispatch_id is at 128)
        const READ_POINTER_OFFSET: u64 = 0x80;
        READ_POINTER_OFFSET.wrapping_sub(128)
    }

    /// Points the queue's `queue_inactive_signal` at signals+0xF00 (value 1 at 0xF08 … set to
    /// 0; kind 1), with the mailbox of `event` (its id and its slot in the event page at the
    /// given address) when one is given.
    fn set_queue_inactive_signal(&mut self, event: Option<(&kfd_ioctl_create_event_args, u64)>) {
        self.signals.write_u64(0xF00, 1);
        self.signals.write_u64(0xF08, 0);
        if let Some((ev, page_va)) = event {
            self.signals
                .write_u64(0xF10, page_va + 8 * u64::from(ev.event_id));
            self.signals.write_u32(0xF18, ev.event_id);
        }
        let base = self.amd_queue_offset();
        self.queue
            .1
            .ptrs
            .write_u64(base + 192, self.signals.va + 0xF00);
    }

    /// Dispatches `trap_on_negative` over one 64-lane workgroup whose lane `lane` is negative
    /// (that lane runs `s_trap 2`); returns the completion signal.
    fn dispatch_trap_on_negative(&mut self, lane: usize) -> u64 {
        let mut input = vec![1i32; 64];
        input[lane] = -1;
        let pin = self.alloc(&i32s(&input));
        let pout = self.alloc(&i32s(&[0; 64]));
        let k = self.kernel("trap_on_negative");
        let mut args = pin.to_le_bytes().to_vec();
        args.extend(pout.to_le_bytes());
        self.dispatch(&k, &args, [64, 1, 1], [64, 1, 1], 0)
    }

    fn signal_value(&self, signal: u64) -> u64 {
        self.signals.read_u64(signal - self.signals.va + 8)
    }
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn to_i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn presets() -> [(Preset, &'static str); 2] {
    [(Preset::Gfx900, "gfx900"), (Preset::Gfx90a, "gfx90a")]
}

/// `HW_REG_HW_ID` says where each wave runs: the SPI deals workgroups to the shader engines
/// in turn, then to each engine's compute units; a workgroup's waves go to the SIMDs in turn;
/// the queue's HQD (ME 1 = MEC1, pipe, queue) and VMID are the queue's. HIP's `__smid()` reads
/// SE_ID and CU_ID from it, so every compute unit of the preset shows up.
#[test]
fn hw_id_places_workgroups_over_every_compute_unit_and_names_the_queue() {
    // (preset, mcpu, shader engines, CUs per engine, SE_ID width)
    for (preset, mcpu, engines, per_engine, se_bits) in [
        (Preset::Gfx900, "gfx900", 4u32, 16u32, 2u32),
        (Preset::Gfx90a, "gfx90a", 8, 13, 3),
    ] {
        let mut g = Gpu::new(preset, mcpu);
        let groups = engines * per_engine + 5;
        let waves = groups * 4;
        let out = g.alloc(&vec![0u8; 4 * waves as usize]);
        let k = g.kernel("hw_id");
        let signal = g.dispatch(&k, &out.to_le_bytes(), [256, 1, 1], [256 * groups, 1, 1], 0);
        g.model.run_until_idle();
        assert_eq!(g.signal_value(signal), 0, "{mcpu}");
        let mapped = g.c.node().gpu.hws.mapped_queues();
        let (mec, pipe, queue) = match mapped[0].slot {
            kfd_model::hw::HqdSlot::Compute { mec, pipe, queue } => (mec, pipe, queue),
            s => panic!("{s:?}"),
        };
        let vmid = mapped[0].vmid;
        let ids = to_i32s(&g.read(out, 4 * waves as usize));
        let field = |id: u32, lo: u32, bits: u32| (id >> lo) & ((1 << bits) - 1);
        let mut units = std::collections::BTreeSet::new();
        for (i, &id) in ids.iter().enumerate() {
            let id = id as u32;
            let (group, wave) = (i as u32 / 4, i as u32 % 4);
            let what = format!("{mcpu} group {group} wave {wave}: HW_ID {id:#010x}");
            assert_eq!(field(id, 0, 4), 0, "{what}: WAVE_ID (one wave per SIMD)");
            assert_eq!(field(id, 4, 2), wave, "{what}: SIMD_ID");
            assert_eq!(field(id, 6, 2), u32::from(pipe), "{what}: PIPE_ID");
            assert_eq!(
                field(id, 8, 4),
                (group / engines) % per_engine,
                "{what}: CU_ID"
            );
            assert_eq!(field(id, 12, 1), 0, "{what}: SH_ID");
            assert_eq!(field(id, 13, se_bits), group % engines, "{what}: SE_ID");
            assert_eq!(
                field(id, 16, 4),
                group / (engines * per_engine),
                "{what}: TG_ID"
            );
            assert_eq!(field(id, 20, 4), u32::from(vmid), "{what}: VM_ID");
            assert_eq!(field(id, 24, 3), u32::from(queue), "{what}: QUEUE_ID");
            assert_eq!(field(id, 27, 3), 0, "{what}: STATE_ID");
            assert_eq!(field(id, 30, 2), u32::from(mec) + 1, "{what}: ME_ID");
            units.insert((field(id, 13, se_bits), field(id, 8, 4)));
        }
        assert_eq!(
            units.len() as u32,
            engines * per_engine,
            "{mcpu}: every compute unit ran a workgroup"
        );
        assert_ne!(vmid, 0, "{mcpu}: a KFD VMID, not the kernel's");
    }
}

#[test]
fn vector_add_runs_on_the_model() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        const N: usize = 1000; // not a multiple of the workgroup: the last group is partial
        let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..N).map(|i| 3.0 - i as f32).collect();
        let (pa, pb) = (g.alloc(&f32s(&a)), g.alloc(&f32s(&b)));
        let pc = g.alloc(&f32s(&[-1.0; N + 64]));
        let mut args = Vec::new();
        for p in [pa, pb, pc] {
            args.extend(p.to_le_bytes());
        }
        args.extend((N as u32).to_le_bytes());
        let k = g.kernel("vadd");
        let signal = g.dispatch(&k, &args, [256, 1, 1], [N as u32, 1, 1], 0);
        let act = g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(act.packets, 1, "{mcpu}: one packet retired");
        assert_eq!(
            g.signal_value(signal),
            0,
            "{mcpu}: completion signal decremented"
        );
        let c = g.read(pc, 4 * (N + 64));
        let c: Vec<f32> = c
            .chunks_exact(4)
            .map(|x| f32::from_le_bytes(x.try_into().unwrap()))
            .collect();
        for i in 0..N {
            assert_eq!(c[i], a[i] + b[i], "{mcpu}: c[{i}]");
        }
        assert!(
            c[N..].iter().all(|&x| x == -1.0),
            "{mcpu}: nothing written past the grid"
        );
        assert_eq!(
            g.queue.1.ptrs.read_u64(0x80),
            1,
            "{mcpu}: read index reported"
        );
    }
}

#[test]
fn lds_barriers_and_atomics_across_workgroups() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        const LOCAL: usize = 256;
        const GROUPS: usize = 6;
        const N: usize = LOCAL * GROUPS;
        let input: Vec<i32> = (0..N as i32).map(|i| (i * 7919) % 1000 - 300).collect();
        let pin = g.alloc(&i32s(&input));
        let psums = g.alloc(&i32s(&[0; GROUPS]));
        let ptotal = g.alloc(&i32s(&[5]));
        let ptickets = g.alloc(&i32s(&[-1; N]));
        let pcounter = g.alloc(&i32s(&[0]));
        let k = g.kernel("reduce");
        let mut args = Vec::new();
        for p in [pin, psums, ptotal, ptickets, pcounter] {
            args.extend(p.to_le_bytes());
        }
        // the local pointer: the dynamic LDS starts after the fixed part
        args.extend(k.descriptor.group_segment_fixed_size.to_le_bytes());
        let signal = g.dispatch(
            &k,
            &args,
            [LOCAL as u16, 1, 1],
            [N as u32, 1, 1],
            4 * LOCAL as u32,
        );
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(g.signal_value(signal), 0, "{mcpu}");
        let sums = to_i32s(&g.read(psums, 4 * GROUPS));
        let want: Vec<i32> = input.chunks(LOCAL).map(|c| c.iter().sum()).collect();
        assert_eq!(sums, want, "{mcpu}: per-group LDS sums");
        assert_eq!(
            to_i32s(&g.read(ptotal, 4))[0],
            5 + want.iter().sum::<i32>(),
            "{mcpu}"
        );
        let mut tickets = to_i32s(&g.read(ptickets, 4 * N));
        tickets.sort_unstable();
        assert_eq!(
            tickets,
            (0..N as i32).collect::<Vec<_>>(),
            "{mcpu}: every ticket once"
        );
        assert_eq!(to_i32s(&g.read(pcounter, 4))[0], N as i32, "{mcpu}");
    }
}

#[test]
fn a_two_dimensional_grid_with_partial_groups() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let (w, h) = (50u32, 7u32);
        let out = g.alloc(&i32s(&vec![-1; (w * h) as usize]));
        let k = g.kernel("grid2d");
        let signal = g.dispatch(&k, &out.to_le_bytes(), [16, 4, 1], [w, h, 1], 0);
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(g.signal_value(signal), 0);
        let got = to_i32s(&g.read(out, (4 * w * h) as usize));
        for y in 0..h {
            for x in 0..w {
                assert_eq!(
                    got[(y * w + x) as usize],
                    (x * 1000 + y) as i32,
                    "{mcpu}: ({x},{y})"
                );
            }
        }
    }
}

#[test]
fn a_wild_pointer_is_a_vm_fault_and_a_memory_exception_event() {
    let mut g = Gpu::new(Preset::Gfx900, "gfx900");
    let mem_ev = create_event(&g.c, KFD_IOC_EVENT_MEMORY, false, 0).unwrap();
    let wild: u64 = 0x7_dead_0000;
    let k = g.kernel("store_to");
    let signal = g.dispatch(&k, &wild.to_le_bytes(), [64, 1, 1], [64, 1, 1], 0);
    g.model.run_until_idle();
    let (r, result, data) = wait_events_data(&g.c, &[mem_ev.event_id], true, 0);
    assert_eq!((r, result), (Ok(0), COMPLETE));
    let m = data[0].data.memory_exception_data();
    assert_eq!((m.va, m.failure.NotPresent), (wild & !0xfff, 1));
    assert!(
        matches!(g.c.p.queue_error(g.queue.0), Some(QueueError::VmFault(f)) if f.va == wild && f.write)
    );
    assert_eq!(g.signal_value(signal), 1, "never a silent success");
}

#[test]
fn gfx1030_dispatches_stop_with_isa_not_modelled() {
    let mut g = Gpu::new(Preset::Gfx1030, "gfx900");
    let k = g.kernel("store_to");
    let p = g.alloc(&i32s(&[0; 64]));
    let signal = g.dispatch(&k, &p.to_le_bytes(), [64, 1, 1], [64, 1, 1], 0);
    g.model.run_until_idle();
    let text = g.c.p.queue_error(g.queue.0).expect("an error").to_string();
    assert!(text.contains("ISA not modelled for this GPU"), "{text}");
    assert_eq!(g.signal_value(signal), 1);
    assert_eq!(to_i32s(&g.read(p, 4))[0], 0, "nothing ran");
}

/// Runs `lds_past_end` over one workgroup of 64 work-items with 260 bytes of dynamic LDS and
/// a stride of 4 ints: lane l uses bytes 16l..16l+4, so lanes 0–31 stay inside the 512 bytes
/// the SPI allocates (one granule, 260 rounded up) and lanes 32–63 are past it. Returns the
/// 192 output ints (-1 where nothing was written) and the completion signal's value.
fn lds_past_end(preset: Preset, mcpu: &str) -> (Vec<i32>, u64, Gpu) {
    let mut g = Gpu::new(preset, mcpu);
    g.set_queue_inactive_signal(None);
    let out = g.alloc(&i32s(&[-1; 192]));
    let k = g.kernel("lds_past_end");
    let mut args = out.to_le_bytes().to_vec();
    args.extend(k.descriptor.group_segment_fixed_size.to_le_bytes());
    args.extend(4u32.to_le_bytes());
    let signal = g.dispatch(&k, &args, [64, 1, 1], [64, 1, 1], 260);
    g.model.run_until_idle();
    let got = to_i32s(&g.read(out, 4 * 192));
    let value = g.signal_value(signal);
    (got, value, g)
}

#[test]
fn lds_past_the_allocation_is_dropped_as_the_hardware_does() {
    if std::env::var_os(kfd_model::config::STRICT_ENV).is_some() {
        return; // the strict child below runs in this binary with the variable set
    }
    for (preset, mcpu) in presets() {
        let (got, signal, g) = lds_past_end(preset, mcpu);
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(signal, 0, "{mcpu}: the dispatch completes");
        for l in 0..64 {
            let inside = l < 32;
            let v = l as i32 + 1;
            let (read, old, after) = (got[l], got[64 + l], got[128 + l]);
            if inside {
                assert_eq!((read, old, after), (v, v, v + 10), "{mcpu}: lane {l}");
            } else {
                assert_eq!(
                    (read, old, after),
                    (0, 0, 0),
                    "{mcpu}: lane {l} is past the LDS"
                );
            }
        }
    }
}

/// The strict half of the LDS test, run by [`lds_past_the_allocation_faults_with_strict_lds`]
/// in a child process of this test binary with `KFD_MODEL_STRICT=lds` (`ModelConfig::new` reads
/// it, and the GPU hands it to every queue's dispatches).
#[test]
#[ignore = "run by lds_past_the_allocation_faults_with_strict_lds with KFD_MODEL_STRICT=lds"]
fn strict_lds_child() {
    assert_eq!(
        std::env::var(kfd_model::config::STRICT_ENV).as_deref(),
        Ok("lds")
    );
    for (preset, mcpu) in presets() {
        let (got, signal, g) = lds_past_end(preset, mcpu);
        assert_eq!(signal, 1, "{mcpu}: never a silent success");
        assert_ne!(
            g.signals.read_u64(0xF08),
            0,
            "{mcpu}: the wave's error is reported"
        );
        assert!(
            got.iter().all(|&x| x == -1),
            "{mcpu}: the wave stopped at the first store past the LDS: {got:?}"
        );
    }
}

#[test]
fn lds_past_the_allocation_faults_with_strict_lds() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "strict_lds_child", "--ignored", "--nocapture"])
        .env(kfd_model::config::STRICT_ENV, "lds")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// kfdtest's PM4 dispatch (`Dispatch::BuildIb`): COMPUTE_PGM_RSRC1.VGPRS = 4 gives a gfx900
/// wave 20 VGPRs (granules of 4; gfx90a's granules are 8: VGPRS = 2 gives 24), while its loop
/// shader names VGPRs past them. Here: v0 = 0x11, a write to v24 (ignored), v1 = v24 (reads
/// v0), a scalar loop of 3 rounds (back 5 dwords) adding 1 to v2 and writing v25, then v1
/// and v2 stored
/// through USER_DATA s[0:1] (v[4:5], in range). Returns the two stored words (0 where nothing was stored), the
/// queue's error and the number of QUEUE_EVENT events that fired.
fn pm4_vgprs_past_the_allocation(preset: Preset, mcpu: &str) -> ([i32; 2], Option<String>, u32) {
    use pm4::regs::ShReg;
    use pm4::user::{DispatchDirect, DispatchInitiator, SetShReg};
    let mut g = Gpu::new(preset, mcpu);
    let out = g.alloc(&i32s(&[0, 0]));
    let code = assemble(
        "v_mov_b32_e32 v0, 0x11\n\
         v_mov_b32_e32 v24, 0x77\n\
         v_mov_b32_e32 v1, v24\n\
         v_mov_b32_e32 v2, 5\n\
         s_mov_b32 s4, 3\n\
         v_add_u32_e32 v25, v2, v2\n\
         v_add_u32_e32 v2, 1, v2\n\
         s_sub_u32 s4, s4, 1\n\
         s_cmp_lg_u32 s4, 0\n\
         s_cbranch_scc1 65531\n\
         v_mov_b32_e32 v4, s0\n\
         v_mov_b32_e32 v5, s1\n\
         flat_store_dword v[4:5], v1\n\
         flat_store_dword v[4:5], v2 offset:4\n\
         s_waitcnt vmcnt(0) lgkmcnt(0)\n\
         s_endpgm\n",
        mcpu,
    );
    let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT
        | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
        | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
    let code_buf = g.c.alloc_on(g.c.gpu(), 4096, flags).unwrap();
    code_buf.write_bytes(0, &code);
    let pgm = code_buf.va;
    let vgpr_granules = if preset == Preset::Gfx90a { 2 } else { 4 };
    // RSRC1: VGPRS [5:0], SGPRS [9:6] = 2 (48); RSRC2: USER_SGPR [5:1] = 2.
    let rsrc = [vgpr_granules | 2 << 6, 2 << 1];
    let page = g.c.event_page();
    let ev = create_event(&g.c, KFD_IOC_EVENT_QUEUE_EVENT, false, page.handle).unwrap();
    let (qid, q) = g.c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(
        &q,
        &SetShReg::new(
            ShReg::COMPUTE_PGM_LO.0,
            &[(pgm >> 8) as u32, (pgm >> 40) as u32],
        )
        .unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_PGM_RSRC1.0, &rsrc).unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(
            ShReg::COMPUTE_USER_DATA_0.0,
            &[out as u32, (out >> 32) as u32],
        )
        .unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_NUM_THREAD_X.0, &[64, 1, 1]).unwrap(),
    );
    ring.push(
        &q,
        &DispatchDirect::new(
            [2, 1, 1],
            DispatchInitiator::new().with_compute_shader_en(true),
        ),
    );
    g.c.submit(&q, ring.wptr());
    g.model.run_until_idle();
    let got = to_i32s(&g.read(out, 8));
    let (_, fired) = wait_events(&g.c, &[ev.event_id], true, 0);
    let error = g.c.p.queue_error(qid).map(|e| e.to_string());
    ([got[0], got[1]], error, u32::from(fired == COMPLETE))
}

#[test]
fn vgprs_past_the_allocation_read_v0_and_writes_to_them_are_ignored() {
    if std::env::var_os(kfd_model::config::STRICT_ENV).is_some() {
        return; // the strict child below runs in this binary with the variable set
    }
    for (preset, mcpu) in presets() {
        let (got, error, fired) = pm4_vgprs_past_the_allocation(preset, mcpu);
        assert_eq!(error, None, "{mcpu}: the queue keeps running");
        assert_eq!(fired, 0, "{mcpu}: no queue event");
        assert_eq!(
            got,
            [0x11, 8],
            "{mcpu}: v24 read as v0; the loop ran its 3 rounds"
        );
    }
}

/// The strict half, run by [`vgprs_past_the_allocation_stop_the_queue_with_strict_vgprs`] in a
/// child process with `KFD_MODEL_STRICT=vgprs`.
#[test]
#[ignore = "run by vgprs_past_the_allocation_stop_the_queue_with_strict_vgprs with KFD_MODEL_STRICT=vgprs"]
fn strict_vgprs_child() {
    assert_eq!(
        std::env::var(kfd_model::config::STRICT_ENV).as_deref(),
        Ok("vgprs")
    );
    for (preset, mcpu) in presets() {
        let (got, error, fired) = pm4_vgprs_past_the_allocation(preset, mcpu);
        let error = error.unwrap_or_else(|| panic!("{mcpu}: the queue stops with an error"));
        assert!(error.contains("v24"), "{mcpu}: {error}");
        assert_eq!(fired, 1, "{mcpu}: the runtime hears of it (QUEUE_EVENT)");
        assert_eq!(got, [0, 0], "{mcpu}: nothing stored");
    }
}

#[test]
fn vgprs_past_the_allocation_stop_the_queue_with_strict_vgprs() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "strict_vgprs_child", "--ignored", "--nocapture"])
        .env(kfd_model::config::STRICT_ENV, "vgprs")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// ROCr's scratch V#: base, SWIZZLE_ENABLE; NUM_RECORDS = size; ELEMENT_SIZE 4 B (1 << 19),
/// INDEX_STRIDE 64 (3 << 21), ADD_TID_ENABLE (1 << 23).
fn scratch_resource(base: u64, size: u32) -> [u32; 4] {
    [
        base as u32,
        ((base >> 32) as u32 & 0xffff) | 1 << 31,
        size,
        1 << 19 | 3 << 21 | 1 << 23,
    ]
}

#[test]
fn out_of_scratch_is_reported_through_queue_inactive_signal_and_the_dispatch_resumes() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        // The queue's amd_queue_t (in the rptr/wptr page, as ROCr lays it out): no scratch yet,
        // and an interrupt signal as queue_inactive_signal.
        let page = g.c.event_page();
        let ev = create_event(&g.c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        let inactive = g.signals.va + 0xF00;
        g.signals.write_u64(0xF00, 1);
        g.signals.write_u64(0xF08, 0);
        g.signals
            .write_u64(0xF10, page.va + 8 * u64::from(ev.event_id));
        g.signals.write_u32(0xF18, ev.event_id);
        let aq = g.queue.1.ptrs.clone();
        let base = g.amd_queue_offset();
        aq.write_u64(base + 192, inactive);
        const N: usize = 256;
        let idx: Vec<i32> = (0..N as i32).map(|i| (i * 37) % 101).collect();
        let pidx = g.alloc(&i32s(&idx));
        let pout = g.alloc(&i32s(&[0; N]));
        let k = g.kernel("private_array");
        assert!(
            k.descriptor.private_segment_fixed_size >= 256,
            "{mcpu}: the array is in scratch"
        );
        let mut args = pidx.to_le_bytes().to_vec();
        args.extend(pout.to_le_bytes());
        let signal = g.dispatch(&k, &args, [64, 1, 1], [N as u32, 1, 1], 0);
        let act = g.model.run_until_idle();
        assert_eq!(act.parked, 1, "{mcpu}: the queue waits for scratch");
        assert_eq!(
            g.signals.read_u64(0xF08),
            1,
            "{mcpu}: error code 1, out of scratch"
        );
        let (r, result) = wait_events(&g.c, &[ev.event_id], true, 0);
        assert_eq!(
            (r, result),
            (Ok(0), COMPLETE),
            "{mcpu}: the signal's event fired"
        );
        assert_eq!(
            g.signal_value(signal),
            1,
            "{mcpu}: the dispatch has not run"
        );
        // The runtime grows the scratch (one wave slot per wave of a workgroup is enough
        // here) and stores 0. Its handler writes the scratch fields as plain stores, in the
        // order its compiler chose: a lane size seen before the release store of 0 must not
        // start the dispatch on the old (here: no) scratch base.
        let lane = k.descriptor.private_segment_fixed_size.next_multiple_of(16);
        aq.write_u32(base + 176, lane);
        let act = g.model.run_until_idle();
        assert_eq!(
            (
                act.parked,
                g.signal_value(signal),
                g.c.p.queue_error(g.queue.0)
            ),
            (1, 1, None),
            "{mcpu}: still waiting for queue_inactive_signal's 0 with only the lane size written"
        );
        let size = lane * 64 * 4;
        let scratch =
            g.c.alloc_on(
                g.c.gpu(),
                u64::from(size),
                KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            )
            .unwrap();
        for (i, d) in scratch_resource(scratch.va, size).iter().enumerate() {
            aq.write_u32(base + 144 + 4 * i as u64, *d);
        }
        aq.write_u64(base + 160, scratch.va);
        aq.write_u64(base + 168, u64::from(size));
        aq.write_u32(base + 176, lane);
        g.signals.write_u64(0xF08, 0);
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(
            g.signal_value(signal),
            0,
            "{mcpu}: completed after the scratch grew"
        );
        let out = to_i32s(&g.read(pout, 4 * N));
        for i in 0..N {
            assert_eq!(out[i], (idx[i] & 63) * 3 + i as i32, "{mcpu}: out[{i}]");
        }
        assert_eq!(g.signals.read_u64(0xF08), 0, "{mcpu}: no second report");
    }
}

#[test]
fn acquire_and_release_fences_with_cache_maintenance() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let flag = g.alloc(&i32s(&[41]));
        let data: Vec<i32> = (0..64).map(|i| i * 2).collect();
        let pdata = g.alloc(&i32s(&data));
        let pout = g.alloc(&i32s(&[0; 64]));
        let k = g.kernel("acquire_flag");
        let mut args = Vec::new();
        for p in [flag, pdata, pout] {
            args.extend(p.to_le_bytes());
        }
        let signal = g.dispatch(&k, &args, [64, 1, 1], [64, 1, 1], 0);
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(g.signal_value(signal), 0);
        let out = to_i32s(&g.read(pout, 256));
        assert_eq!(
            out,
            data.iter().map(|d| d + 41).collect::<Vec<_>>(),
            "{mcpu}"
        );
        assert_eq!(to_i32s(&g.read(flag, 4))[0], 42, "{mcpu}");
    }
}

#[test]
fn s_trap_halts_the_wave_and_reports_through_queue_inactive_signal() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let page = g.c.event_page();
        let ev = create_event(&g.c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        g.set_queue_inactive_signal(Some((&ev, page.va)));
        let signal = g.dispatch_trap_on_negative(5);
        let act = g.model.run_until_idle();
        assert_eq!(
            act.parked, 1,
            "{mcpu}: the queue stays on the halted dispatch"
        );
        assert_eq!(
            g.signals.read_u64(0xF08),
            1 << 31,
            "{mcpu}: ROCr's trap error bit"
        );
        let (r, result) = wait_events(&g.c, &[ev.event_id], true, 0);
        assert_eq!(
            (r, result),
            (Ok(0), COMPLETE),
            "{mcpu}: the signal's event fired"
        );
        assert_eq!(g.signal_value(signal), 1, "{mcpu}: never a silent success");
        // Another pass reports nothing twice.
        g.signals.write_u64(0xF08, 0);
        g.model.run_until_idle();
        assert_eq!(g.signals.read_u64(0xF08), 0, "{mcpu}");
    }
}

#[test]
fn s_trap_reports_ec_queue_wave_trap_through_the_context_save_header_error_payload() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let page = g.c.event_page();
        // ROCr gives both signals the same queue event (its queue_event_).
        let queue_ev = create_event(&g.c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        g.set_queue_inactive_signal(Some((&queue_ev, page.va)));
        // What libhsakmt writes for ROCr's ErrorReason: kfd_context_save_area_header
        // err_payload_addr (byte 24) and err_event_id (byte 32) at the CWSR area's start.
        let (ctx, _) = g
            .queue
            .1
            .ctx
            .as_ref()
            .expect("an AQL queue has a CWSR area");
        g.signals.write_u64(0xE00, 0x100);
        ctx.write_u64(24, g.signals.va + 0xE00);
        ctx.write_u32(32, queue_ev.event_id);
        let signal = g.dispatch_trap_on_negative(9);
        let act = g.model.run_until_idle();
        assert_eq!(
            act.parked, 1,
            "{mcpu}: the queue stays on the halted dispatch"
        );
        assert_eq!(
            g.signals.read_u64(0xE00),
            0x100 | 1 << (EC_QUEUE_WAVE_TRAP - 1),
            "{mcpu}: KFD_EC_MASK(EC_QUEUE_WAVE_TRAP) ORed into the payload"
        );
        let (r, result) = wait_events(&g.c, &[queue_ev.event_id], true, 0);
        assert_eq!(
            (r, result),
            (Ok(0), COMPLETE),
            "{mcpu}: the queue event fired"
        );
        assert_eq!(
            g.signals.read_u64(0xF08),
            1 << 31,
            "{mcpu}: queue_inactive_signal too"
        );
        assert_eq!(g.signal_value(signal), 1, "{mcpu}: never a silent success");
        // The runtime clears both; another pass reports nothing twice.
        g.signals.write_u64(0xE00, 0);
        g.signals.write_u64(0xF08, 0);
        g.model.run_until_idle();
        assert_eq!(g.signals.read_u64(0xE00), 0, "{mcpu}");
    }
}

#[test]
fn pm4_dispatch_direct_runs_the_program_the_sh_registers_name() {
    use pm4::regs::ShReg;
    use pm4::user::{DispatchDirect, DispatchInitiator, SetShReg, WriteData};
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let k = g.kernel("store_ids");
        assert_eq!(
            k.entry_address % 256,
            0,
            "COMPUTE_PGM_LO holds address >> 8"
        );
        let out = g.alloc(&i32s(&[0; 4 * 64 + 1]));
        let kernarg = g.alloc(&out.to_le_bytes());
        // USER_DATA_* laid out as the descriptor's enable bits ask (the ABI's order).
        let p = k.descriptor.kernel_code_properties;
        let mut user = Vec::new();
        if p.enable_sgpr_private_segment_buffer() {
            user.extend([0; 4]);
        }
        for (on, value) in [
            (p.enable_sgpr_dispatch_ptr(), 0),
            (p.enable_sgpr_queue_ptr(), 0),
            (p.enable_sgpr_kernarg_segment_ptr(), kernarg),
            (p.enable_sgpr_dispatch_id(), 0),
            (p.enable_sgpr_flat_scratch_init(), 0),
        ] {
            if on {
                user.extend([value as u32, (value >> 32) as u32]);
            }
        }
        let rsrc = [
            k.descriptor.compute_pgm_rsrc1.into_bits(),
            k.descriptor.compute_pgm_rsrc2.into_bits(),
        ];
        let pgm = k.entry_address >> 8;
        let (qid, q) = g.c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
        let mut ring = RingWriter::pm4(&q);
        ring.push(
            &q,
            &SetShReg::new(ShReg::COMPUTE_PGM_LO.0, &[pgm as u32, (pgm >> 32) as u32]).unwrap(),
        );
        ring.push(
            &q,
            &SetShReg::new(ShReg::COMPUTE_PGM_RSRC1.0, &rsrc).unwrap(),
        );
        ring.push(
            &q,
            &SetShReg::new(ShReg::COMPUTE_USER_DATA_0.0, &user).unwrap(),
        );
        ring.push(
            &q,
            &SetShReg::new(ShReg::COMPUTE_NUM_THREAD_X.0, &[64, 1, 1]).unwrap(),
        );
        ring.push(
            &q,
            &DispatchDirect::new(
                [4, 1, 1],
                DispatchInitiator::new().with_compute_shader_en(true),
            ),
        );
        // After the dispatch: a marker the test checks ran last.
        ring.push(&q, &WriteData::memory(out + 4 * 256, &[0xD0E]).unwrap());
        g.c.submit(&q, ring.wptr());
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(qid), None, "{mcpu}");
        let got = to_i32s(&g.read(out, 4 * 257));
        let want: Vec<i32> = (1..=256).chain([0xD0E]).collect();
        assert_eq!(
            got, want,
            "{mcpu}: every work-item of 4 groups, then the marker"
        );
    }
}

/// The SPI decodes code in 64 KiB windows from where a wave's PC first lands. A program that
/// starts a code buffer and branches to an 8-byte instruction (a SOP1 with a literal) whose
/// first dword is the first window's last runs it whole: decoding never depends on where a
/// window ends. Where nothing is mapped after the first dword, fetching the second is a VM
/// fault at its address, as on hardware.
#[test]
fn an_instruction_across_the_end_of_a_code_window_runs_whole() {
    use pm4::regs::ShReg;
    use pm4::user::{DispatchDirect, DispatchInitiator, SetShReg};
    const WINDOW: usize = 64 << 10;
    for (preset, mcpu) in presets() {
        for cut_by_mapping in [false, true] {
            let mut g = Gpu::new(preset, mcpu);
            let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
            // A mapping that ends after the literal's dword, or right before it.
            let size = if cut_by_mapping { WINDOW } else { 2 * WINDOW };
            let code =
                g.c.alloc_on(
                    g.c.gpu(),
                    size as u64,
                    flags | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE,
                )
                .unwrap();
            // s_branch to the window's last dword (the offset counts dwords after the branch).
            let mut prog = assemble(&format!("s_branch {}", (WINDOW - 8) / 4), mcpu);
            prog.resize(WINDOW - 4, 0);
            let tail = assemble(
                "s_mov_b32 s2, 0x12345678
                 v_mov_b32 v1, s2
                 v_mov_b32 v0, 0
                 global_store_dword v0, v1, s[0:1]
                 s_waitcnt vmcnt(0)
                 s_endpgm",
                mcpu,
            );
            assert_eq!(
                tail[..8],
                [0xff, 0x00, 0x82, 0xbe, 0x78, 0x56, 0x34, 0x12],
                "s_mov_b32 s2 from a literal: 8 bytes"
            );
            prog.extend_from_slice(&tail);
            prog.truncate(size);
            code.write_bytes(0, &prog);
            let out = g.alloc(&i32s(&[0]));
            let pgm = code.va >> 8;
            let (qid, q) = g.c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
            let mut ring = RingWriter::pm4(&q);
            ring.push(
                &q,
                &SetShReg::new(ShReg::COMPUTE_PGM_LO.0, &[pgm as u32, (pgm >> 32) as u32]).unwrap(),
            );
            // RSRC1: the fewest VGPRs, 16 SGPRs; RSRC2: two user SGPRs (USER_SGPR, bits 5:1).
            ring.push(
                &q,
                &SetShReg::new(ShReg::COMPUTE_PGM_RSRC1.0, &[1 << 6, 2 << 1]).unwrap(),
            );
            ring.push(
                &q,
                &SetShReg::new(
                    ShReg::COMPUTE_USER_DATA_0.0,
                    &[out as u32, (out >> 32) as u32],
                )
                .unwrap(),
            );
            ring.push(
                &q,
                &SetShReg::new(ShReg::COMPUTE_NUM_THREAD_X.0, &[64, 1, 1]).unwrap(),
            );
            ring.push(
                &q,
                &DispatchDirect::new(
                    [1, 1, 1],
                    DispatchInitiator::new().with_compute_shader_en(true),
                ),
            );
            g.c.submit(&q, ring.wptr());
            g.model.run_until_idle();
            let error = g.c.p.queue_error(qid);
            if cut_by_mapping {
                let literal = code.va + WINDOW as u64;
                assert!(
                    matches!(error, Some(QueueError::VmFault(f)) if f.va == literal && !f.write),
                    "{mcpu}: the literal at {literal:#x} is not mapped: {error:?}"
                );
                assert_eq!(to_i32s(&g.read(out, 4)), [0], "{mcpu}");
            } else {
                assert_eq!(error, None, "{mcpu}");
                assert_eq!(to_i32s(&g.read(out, 4)), [0x12345678], "{mcpu}");
            }
        }
    }
}

/// busy_hash's result for work-item `i`, on the host.
fn busy_hash_ref(i: u32, rounds: u32) -> u32 {
    let mut h = i.wrapping_mul(2654435761);
    for r in 0..rounds {
        h = (h ^ (h >> 13)).wrapping_mul(0x5bd1e995).wrapping_add(r);
    }
    h
}

/// Runs busy_hash over `groups` workgroups of 64 on `threads` compute-unit threads; returns
/// the output and the two atomic sums.
fn busy_hash_on(preset: Preset, mcpu: &str, threads: usize, groups: u32) -> (Vec<u32>, [u32; 2]) {
    let cfg = ModelConfig::new(preset)
        .with_engine_thread(false)
        .with_cu_threads(threads);
    let mut g = Gpu::with_config(cfg, mcpu);
    let n = 64 * groups as usize;
    let out = g.alloc(&i32s(&vec![0; n]));
    let sum = g.alloc(&i32s(&[0, 0]));
    let mut args = Vec::new();
    for p in [out, sum] {
        args.extend(p.to_le_bytes());
    }
    args.extend(300u32.to_le_bytes());
    let k = g.kernel("busy_hash");
    let signal = g.dispatch(&k, &args, [64, 1, 1], [n as u32, 1, 1], 0);
    g.model.run_until_idle();
    assert_eq!(
        g.c.p.queue_error(g.queue.0),
        None,
        "{mcpu}, {threads} threads"
    );
    assert_eq!(g.signal_value(signal), 0, "{mcpu}, {threads} threads");
    let out = to_i32s(&g.read(out, 4 * n))
        .iter()
        .map(|&v| v as u32)
        .collect();
    let s = to_i32s(&g.read(sum, 8));
    (out, [s[0] as u32, s[1] as u32])
}

#[test]
fn workgroups_on_one_and_several_host_threads_give_the_same_exact_result() {
    for (preset, mcpu) in presets() {
        const GROUPS: u32 = 24;
        let n = 64 * GROUPS;
        let want: Vec<u32> = (0..n).map(|i| busy_hash_ref(i, 300)).collect();
        let want_sum = want.iter().fold(0u32, |a, h| a.wrapping_add(h & 0xffff));
        let one = busy_hash_on(preset, mcpu, 1, GROUPS);
        assert_eq!(one.0, want, "{mcpu}: 1 thread against the host");
        assert_eq!(one.1, [want_sum, n], "{mcpu}: 1 thread's atomics");
        let four = busy_hash_on(preset, mcpu, 4, GROUPS);
        assert_eq!(four.0, want, "{mcpu}: 4 threads against the host");
        assert_eq!(
            four.1,
            [want_sum, n],
            "{mcpu}: atomics from 4 threads lose no update"
        );
    }
}

/// A GWS semaphore of count 1 (`ds_gws_init` loads it, as kfdtest's KFDGWSTest.Semaphore
/// does) guards a plain read-modify-write that many waves of many workgroups, on several host
/// threads, repeat: each wave waits in `ds_gws_sema_p` until the one inside leaves with
/// `ds_gws_sema_v`, so no increment is lost and no wave ever finds another inside.
#[test]
fn a_gws_semaphore_of_one_gives_many_waves_mutual_exclusion() {
    for (preset, mcpu) in presets() {
        let cfg = ModelConfig::new(preset)
            .with_engine_thread(false)
            .with_cu_threads(4);
        let mut g = Gpu::with_config(cfg, mcpu);
        let mut a = kfd_ioctl_alloc_queue_gws_args {
            queue_id: g.queue.0,
            num_gws: 1,
            ..Default::default()
        };
        g.c.p.call::<AllocQueueGws>(&mut a).unwrap();
        assert_eq!(a.first_gws, 0, "{mcpu}");
        let init = g.kernel("gws_init");
        let signal = g.dispatch(&init, &1u32.to_le_bytes(), [64, 1, 1], [64, 1, 1], 0);
        g.model.run_until_idle();
        assert_eq!(g.signal_value(signal), 0, "{mcpu}: init");
        const GROUPS: u32 = 12;
        const WAVES_PER_GROUP: u32 = 4;
        const ROUNDS: u32 = 3;
        let total = g.alloc(&i32s(&[7]));
        let inside = g.alloc(&i32s(&[0]));
        let overlaps = g.alloc(&i32s(&[0]));
        let mut args = Vec::new();
        for p in [total, inside, overlaps] {
            args.extend(p.to_le_bytes());
        }
        args.extend(ROUNDS.to_le_bytes());
        let k = g.kernel("gws_mutex");
        let local = 64 * WAVES_PER_GROUP;
        let signal = g.dispatch(&k, &args, [local as u16, 1, 1], [local * GROUPS, 1, 1], 0);
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(
            g.signal_value(signal),
            0,
            "{mcpu}: every wave got through the semaphore"
        );
        let waves = GROUPS * WAVES_PER_GROUP;
        assert_eq!(
            to_i32s(&g.read(total, 4))[0],
            7 + (waves * ROUNDS) as i32,
            "{mcpu}: no increment lost"
        );
        assert_eq!(
            to_i32s(&g.read(overlaps, 4))[0],
            0,
            "{mcpu}: one wave inside at a time"
        );
        assert_eq!(to_i32s(&g.read(inside, 4))[0], 0, "{mcpu}");
    }
}

#[test]
fn the_cu_thread_count_comes_from_the_config_or_the_environment() {
    let cfg = ModelConfig::new(Preset::Gfx900);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match std::env::var(kfd_model::CU_THREADS_ENV) {
        Ok(v) => assert_eq!(cfg.cu_threads.to_string(), v.trim()),
        Err(_) => assert_eq!(cfg.cu_threads, cores, "default: the host's cores"),
    }
    assert_eq!(cfg.clone().with_cu_threads(3).cu_threads, 3);
    assert_eq!(cfg.with_cu_threads(0).cu_threads, 1, "at least one");
}

#[test]
fn an_sdma_copy_completes_while_a_kernel_spins_on_a_host_flag() {
    use pm4::sdma::{SdmaCopyLinear, SdmaFence, SdmaTrap};
    use pm4::SdmaGen;
    for (preset, mcpu) in presets() {
        // The engine thread runs the model, as for a real client.
        let cfg = ModelConfig::new(preset).with_cu_threads(2);
        let mut g = Gpu::with_config(cfg, mcpu);
        let flag = g.alloc(&i32s(&[0]));
        let out = g.alloc(&i32s(&[0; 128]));
        let mut args = flag.to_le_bytes().to_vec();
        args.extend(out.to_le_bytes());
        let k = g.kernel("spin_until_flag");
        let signal = g.dispatch(&k, &args, [64, 1, 1], [128, 1, 1], 0);
        // An SDMA copy on another queue of the same process, signalled by an event.
        let page = g.c.event_page();
        let ev = create_event(&g.c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        let src = g.c.gtt(1 << 16);
        let dst = g.c.gtt(1 << 16);
        let pattern: Vec<u8> = (0..1u32 << 16).map(|i| (i * 13 + 5) as u8).collect();
        src.write_bytes(0, &pattern);
        let (_, q) = g.c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
        let mut ring = RingWriter::sdma(&q);
        ring.push(
            &q,
            &SdmaCopyLinear::new(SdmaGen::Sdma4, src.va, dst.va, 1 << 16).unwrap(),
        );
        ring.push(
            &q,
            &SdmaFence::new(page.va + 8 * u64::from(ev.event_id), ev.event_id).unwrap(),
        );
        ring.push(&q, &SdmaTrap::new(ev.event_id).unwrap());
        g.c.submit(&q, ring.wptr());
        assert_eq!(
            wait_events(&g.c, &[ev.event_id], true, HANG_MS),
            (Ok(0), COMPLETE),
            "{mcpu}: the copy completed"
        );
        let mut got = vec![0u8; 1 << 16];
        dst.read_bytes(0, &mut got);
        assert!(got == pattern, "{mcpu}: the copy is exact");
        assert_eq!(g.signal_value(signal), 1, "{mcpu}: the kernel still spins");
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        g.heap.write_u32(flag - g.heap.va, 7);
        wait_until("the kernel to see the flag", || g.signal_value(signal) == 0);
        let got = to_i32s(&g.read(out, 4 * 128));
        assert_eq!(got, (0..128).map(|i| 7 + i).collect::<Vec<_>>(), "{mcpu}");
    }
}

/// Dispatches busy_hash over `groups` workgroups of 64 with `rounds` steps; returns the output
/// and sum addresses and the completion signal.
fn start_busy_hash(g: &mut Gpu, groups: u32, rounds: u32) -> (u64, u64, u64) {
    let n = 64 * groups as usize;
    let out = g.alloc(&i32s(&vec![0; n]));
    let sum = g.alloc(&i32s(&[0, 0]));
    let mut args = Vec::new();
    for p in [out, sum] {
        args.extend(p.to_le_bytes());
    }
    args.extend(rounds.to_le_bytes());
    let k = g.kernel("busy_hash");
    let signal = g.dispatch(&k, &args, [64, 1, 1], [n as u32, 1, 1], 0);
    (out, sum, signal)
}

#[test]
fn evicting_the_process_suspends_a_running_kernel_and_restore_resumes_it_exactly() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        const GROUPS: u32 = 64;
        const ROUNDS: u32 = 2000;
        let n = (64 * GROUPS) as usize;
        let (out, sum, signal) = start_busy_hash(&mut g, GROUPS, ROUNDS);
        let written = |g: &Gpu| {
            to_i32s(&g.read(out, 4 * n))
                .iter()
                .filter(|&&v| v != 0)
                .count()
        };
        // Run time slices until some workgroups have ended.
        let mut passes = 0;
        while written(&g) == 0 {
            g.model.step();
            passes += 1;
            assert!(passes < 100_000, "{mcpu}: the kernel makes progress");
        }
        let before = to_i32s(&g.read(out, 4 * n));
        assert!(
            written(&g) < n && g.signal_value(signal) == 1,
            "{mcpu}: evicted mid-kernel"
        );
        g.c.p.evict_queues().unwrap();
        assert!(
            g.c.node().gpu.hws.mapped_queues().is_empty(),
            "{mcpu}: nothing mapped"
        );
        for _ in 0..20 {
            g.model.step();
        }
        assert_eq!(
            to_i32s(&g.read(out, 4 * n)),
            before,
            "{mcpu}: no wave runs while the queue is unmapped"
        );
        assert_eq!(g.signal_value(signal), 1, "{mcpu}");
        g.c.p.restore_queues().unwrap();
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(g.signal_value(signal), 0, "{mcpu}: completed after restore");
        let got: Vec<u32> = to_i32s(&g.read(out, 4 * n))
            .iter()
            .map(|&v| v as u32)
            .collect();
        let want: Vec<u32> = (0..n as u32).map(|i| busy_hash_ref(i, ROUNDS)).collect();
        assert_eq!(got, want, "{mcpu}: every work-item exact");
        let sums = to_i32s(&g.read(sum, 8));
        let want_sum = want.iter().fold(0u32, |a, h| a.wrapping_add(h & 0xffff));
        assert_eq!(
            [sums[0] as u32, sums[1] as u32],
            [want_sum, n as u32],
            "{mcpu}: every atomic once (no workgroup ran twice)"
        );
    }
}

/// A spinning kernel on the engine thread: the flag and output addresses and its signal.
fn start_spinning(g: &mut Gpu) -> (u64, u64, u64) {
    let flag = g.alloc(&i32s(&[0]));
    let out = g.alloc(&i32s(&[0; 64]));
    let mut args = flag.to_le_bytes().to_vec();
    args.extend(out.to_le_bytes());
    let k = g.kernel("spin_until_flag");
    let signal = g.dispatch(&k, &args, [64, 1, 1], [64, 1, 1], 0);
    (flag, out, signal)
}

#[test]
fn destroying_the_queue_stops_its_waves() {
    use pm4::user::WriteData;
    let mut g = Gpu::with_config(ModelConfig::new(Preset::Gfx900), "gfx900");
    let (flag, out, signal) = start_spinning(&mut g);
    wait_until("the spinning waves run", || {
        g.model.shader_counts().instructions > 0
    });
    assert_eq!(g.signal_value(signal), 1, "still spinning");
    let t = std::time::Instant::now();
    g.c.destroy_queue(g.queue.0).unwrap();
    eprintln!(
        "destroying the queue of a spinning kernel took {:?}",
        t.elapsed()
    );
    // The waves are gone: the flag they wait for changes nothing any more. Another queue's
    // packets, run twice by the engine thread after the flag changed, show that the engines
    // went on meanwhile; the waves, had they stayed, would have run in those passes.
    let stopped = g.model.shader_counts();
    g.heap.write_u32(flag - g.heap.va, 9);
    let mem = g.c.gtt(4096);
    let (_, q) = g.c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    for i in 1..=2u32 {
        ring.push(&q, &WriteData::memory(mem.va, &[i]).unwrap());
        g.c.submit(&q, ring.wptr());
        wait_until("the other queue's WRITE_DATA", || mem.read_u32(0) == i);
    }
    assert_eq!(
        g.model.shader_counts(),
        stopped,
        "no wave ran after the destroy"
    );
    assert_eq!(to_i32s(&g.read(out, 4))[0], 0, "no wave ran after destroy");
    assert_eq!(g.signal_value(signal), 1);
}

#[test]
fn ending_the_process_stops_its_waves_and_a_never_ending_kernel_blocks_no_other_process() {
    use pm4::user::WriteData;
    let mut g = Gpu::with_config(ModelConfig::new(Preset::Gfx900), "gfx900");
    let (_flag, _out, signal) = start_spinning(&mut g);
    // Another process's PM4 queue runs while the first one's kernel never ends.
    let other = Client::new(&g.model);
    let mem = other.gtt(4096);
    // Creating it goes through the HIQ (UNMAP_QUEUES, RUN_LIST), which the firmware serves
    // between two time slices of the spinning kernel.
    // (How long it waits is printed, not tested: a never-ending kernel would block it for
    // good, not for a while.)
    let t = std::time::Instant::now();
    let (_, q) = other.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    eprintln!(
        "CREATE_QUEUE beside a spinning kernel took {:?}",
        t.elapsed()
    );
    let mut ring = RingWriter::pm4(&q);
    for i in 0..16u32 {
        ring.push(
            &q,
            &WriteData::memory(mem.va + 4 * u64::from(i), &[i + 100]).unwrap(),
        );
        other.submit(&q, ring.wptr());
        wait_until("the other process's WRITE_DATA", || {
            mem.read_u32(4 * u64::from(i)) == i + 100
        });
    }
    assert_eq!(g.signal_value(signal), 1, "the first kernel still spins");
    let node = g.c.node();
    assert_eq!(node.gpu.hws.mapped_queues().len(), 2);
    // The spinning process ends: its queue and waves go.
    let Gpu { c, queue, .. } = g;
    drop(queue);
    drop(c);
    wait_until("the ended process's queue to leave the GPU", || {
        node.gpu.hws.mapped_queues().len() == 1
    });
}

/// A private array through PM4 DISPATCH_DIRECT: the client writes the scratch V# into
/// COMPUTE_USER_DATA_0..3, COMPUTE_TMPRING_SIZE (WAVES 11:0, WAVESIZE 24:12 in KiB) and
/// COMPUTE_DISPATCH_SCRATCH_BASE_LO/HI (address >> 8), as kfdtest's Dispatch does; the SPI
/// gives each wave its offset in the ring.
fn pm4_private_array(
    preset: Preset,
    mcpu: &str,
    wg: u32,
    waves: u32,
) -> (Gpu, u32, u64, Buf, Vec<i32>, u32) {
    use pm4::regs::ShReg;
    use pm4::user::{DispatchDirect, DispatchInitiator, SetShReg, WriteData};
    let cfg = ModelConfig::new(preset)
        .with_engine_thread(false)
        .with_cu_threads(2);
    let mut g = Gpu::with_config(cfg, mcpu);
    let k = g.kernel("private_array");
    let d = k.descriptor;
    assert!(d.compute_pgm_rsrc2.enable_private_segment(), "SCRATCH_EN");
    const N: usize = 512;
    let idx: Vec<i32> = (0..N as i32).map(|i| (i * 29) % 97).collect();
    let pidx = g.alloc(&i32s(&idx));
    let pout = g.alloc(&i32s(&[0; N + 1]));
    let mut kernarg = pidx.to_le_bytes().to_vec();
    kernarg.extend(pout.to_le_bytes());
    let kernarg = g.alloc(&kernarg);
    // The kernel reads its workgroup size from a dispatch packet: the client provides one.
    let mut packet = [0u8; 64];
    packet[4..6].copy_from_slice(&(wg as u16).to_le_bytes());
    packet[12..16].copy_from_slice(&(N as u32).to_le_bytes());
    let packet = g.alloc(&packet);
    // WAVESIZE in KiB for 64 lanes of the kernel's private segment.
    let wave_kib = (d.private_segment_fixed_size * 64).div_ceil(1024);
    let size = waves * wave_kib * 1024;
    let scratch =
        g.c.alloc_on(
            g.c.gpu(),
            u64::from(size),
            KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        )
        .unwrap();
    let p = d.kernel_code_properties;
    let mut user: Vec<u32> = Vec::new();
    assert!(p.enable_sgpr_private_segment_buffer());
    // Lanes of a wave are 4-byte interleaved, so the lane stride is WAVESIZE / 64.
    user.extend(scratch_resource(scratch.va, size));
    for (on, value) in [
        (p.enable_sgpr_dispatch_ptr(), packet),
        (p.enable_sgpr_queue_ptr(), 0),
        (p.enable_sgpr_kernarg_segment_ptr(), kernarg),
        (p.enable_sgpr_dispatch_id(), 0),
        (p.enable_sgpr_flat_scratch_init(), scratch.va),
    ] {
        if on {
            user.extend([value as u32, (value >> 32) as u32]);
        }
    }
    let pgm = k.entry_address >> 8;
    let (qid, q) = g.c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(
        &q,
        &SetShReg::new(
            ShReg::COMPUTE_PGM_LO.0,
            &[
                pgm as u32,
                (pgm >> 32) as u32,
                0,
                0,
                (scratch.va >> 8) as u32,
                (scratch.va >> 40) as u32,
            ],
        )
        .unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(
            ShReg::COMPUTE_PGM_RSRC1.0,
            &[
                d.compute_pgm_rsrc1.into_bits(),
                d.compute_pgm_rsrc2.into_bits(),
            ],
        )
        .unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_TMPRING_SIZE.0, &[wave_kib << 12 | waves]).unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_USER_DATA_0.0, &user).unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_NUM_THREAD_X.0, &[wg, 1, 1]).unwrap(),
    );
    ring.push(
        &q,
        &DispatchDirect::new(
            [N as u32 / wg, 1, 1],
            DispatchInitiator::new().with_compute_shader_en(true),
        ),
    );
    ring.push(
        &q,
        &WriteData::memory(pout + 4 * N as u64, &[0xD0E]).unwrap(),
    );
    g.c.submit(&q, ring.wptr());
    g.model.run_until_idle();
    (g, qid, pout, scratch, idx, wave_kib * 1024)
}

#[test]
fn pm4_dispatch_with_scratch_from_tmpring_size_runs_a_private_array() {
    for (preset, mcpu) in presets() {
        // Workgroups of 2 waves in a ring of 4 waves: 2 workgroups in flight at most.
        let (g, qid, pout, scratch, idx, wave_bytes) = pm4_private_array(preset, mcpu, 128, 4);
        assert_eq!(g.c.p.queue_error(qid), None, "{mcpu}");
        let out = to_i32s(&g.read(pout, 4 * (idx.len() + 1)));
        for (i, &x) in idx.iter().enumerate() {
            assert_eq!(out[i], (x & 63) * 3 + i as i32, "{mcpu}: out[{i}]");
        }
        assert_eq!(
            out[idx.len()],
            0xD0E,
            "{mcpu}: the marker after the dispatch"
        );
        // Each wave of a workgroup had its own slice of the ring: the second one's was used.
        let mut second = vec![0u8; wave_bytes as usize];
        scratch.read_bytes(u64::from(wave_bytes), &mut second);
        assert!(
            second.iter().any(|&b| b != 0),
            "{mcpu}: the second wave's slice was used"
        );
    }
}

#[test]
fn pm4_scratch_too_small_for_a_workgroup_stops_the_queue() {
    let (g, qid, pout, _, _, _) = pm4_private_array(Preset::Gfx900, "gfx900", 128, 1);
    let err = g.c.p.queue_error(qid).expect("an error").to_string();
    assert!(err.contains("does not fit its scratch"), "{err}");
    assert_eq!(to_i32s(&g.read(pout, 4))[0], 0, "nothing ran");
}

/// A trap handler that counts traps at TMA[0] and sums their ids at TMA[4] (atomically: lane
/// 0 of v0..v2 is saved in ttmps and restored, as SCC and EXEC are), then returns past the
/// `s_trap` with `s_rfe_b64`.
const COUNTING_TRAP_HANDLER: &str = "
s_cselect_b32 ttmp8, 1, 0
s_mov_b64 ttmp[2:3], exec
s_mov_b64 exec, 1
v_readlane_b32 ttmp4, v0, 0
v_readlane_b32 ttmp5, v1, 0
v_readlane_b32 ttmp6, v2, 0
v_mov_b32 v0, ttmp14
v_mov_b32 v1, ttmp15
v_mov_b32 v2, 1
global_atomic_add v[0:1], v2, off
s_bfe_u32 ttmp7, ttmp1, 0x80010
v_mov_b32 v2, ttmp7
global_atomic_add v[0:1], v2, off offset:4
s_waitcnt vmcnt(0)
v_writelane_b32 v0, ttmp4, 0
v_writelane_b32 v1, ttmp5, 0
v_writelane_b32 v2, ttmp6, 0
s_mov_b64 exec, ttmp[2:3]
s_and_b32 ttmp1, ttmp1, 0xffff
s_add_u32 ttmp0, ttmp0, 4
s_addc_u32 ttmp1, ttmp1, 0
s_cmp_lg_u32 ttmp8, 0
s_rfe_b64 ttmp[0:1]
";

/// Installs `handler` (assembled for `mcpu`) with SET_TRAP_HANDLER and a fresh TMA page, then
/// gives the test a new AQL queue (the runlist that maps it carries TBA/TMA in MAP_PROCESS).
/// Returns the TMA buffer.
fn install_trap_handler(g: &mut Gpu, mcpu: &str, handler: &str) -> Buf {
    let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    let code =
        g.c.alloc_on(g.c.gpu(), 4096, flags | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE)
            .unwrap();
    code.write_bytes(0, &assemble(handler, mcpu));
    let tma = g.c.alloc_on(g.c.gpu(), 4096, flags).unwrap();
    let mut a = kfd_ioctl_set_trap_handler_args {
        tba_addr: code.va,
        tma_addr: tma.va,
        gpu_id: g.c.gpu(),
        pad: 0,
    };
    g.c.p.call::<SetTrapHandler>(&mut a).unwrap();
    g.c.destroy_queue(g.queue.0).unwrap();
    g.queue =
        g.c.create_queue_sized(g.c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
            .unwrap();
    g.packets = 0;
    tma
}

#[test]
fn an_installed_trap_handler_counts_s_trap_and_returns_so_the_kernel_completes() {
    for (preset, mcpu) in presets() {
        let cfg = ModelConfig::new(preset)
            .with_engine_thread(false)
            .with_cu_threads(2);
        let mut g = Gpu::with_config(cfg, mcpu);
        let tma = install_trap_handler(&mut g, mcpu, COUNTING_TRAP_HANDLER);
        const N: usize = 256; // 4 waves
        const TRAPS: u32 = 3;
        let out = g.alloc(&i32s(&[0; N]));
        let mut args = out.to_le_bytes().to_vec();
        args.extend(TRAPS.to_le_bytes());
        let k = g.kernel("debugtrap_loop");
        let signal = g.dispatch(&k, &args, [128, 1, 1], [N as u32, 1, 1], 0);
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}");
        assert_eq!(g.signal_value(signal), 0, "{mcpu}: the kernel completed");
        let got = to_i32s(&g.read(out, 4 * N));
        assert_eq!(got, (1..=N as i32).collect::<Vec<_>>(), "{mcpu}");
        assert_eq!(
            tma.read_u32(0),
            4 * TRAPS,
            "{mcpu}: the handler ran once per s_trap of each wave"
        );
        assert_eq!(
            tma.read_u32(4),
            4 * TRAPS * 3,
            "{mcpu}: ttmp1[23:16] held trap id 3 (llvm.debugtrap)"
        );
    }
}

#[test]
fn a_trap_handler_that_fails_leaves_the_original_error_for_the_runtime() {
    let mut g = Gpu::new(Preset::Gfx900, "gfx900");
    // The handler counts the trap, then traps itself (a nested trap is not taken while PRIV
    // is set).
    let counting = COUNTING_TRAP_HANDLER
        .split("s_waitcnt vmcnt(0)")
        .next()
        .unwrap();
    let tma = install_trap_handler(&mut g, "gfx900", &format!("{counting}\ns_trap 7\n"));
    g.set_queue_inactive_signal(None);
    let signal = g.dispatch_trap_on_negative(3);
    let act = g.model.run_until_idle();
    assert_eq!(act.parked, 1, "the queue stays on the halted dispatch");
    assert_eq!(
        g.signals.read_u64(0xF08),
        1 << 31,
        "the s_trap 2 the handler was handling"
    );
    assert_eq!(
        (tma.read_u32(0), tma.read_u32(4)),
        (1, 2),
        "the handler ran for s_trap 2"
    );
    assert_eq!(g.signal_value(signal), 1);
}

#[test]
fn gfx942_and_gfx1030_dispatches_report_isa_not_modelled_to_the_runtime() {
    for preset in [Preset::Gfx942, Preset::Gfx1030] {
        let mut g = Gpu::new(preset, "gfx900");
        let page = g.c.event_page();
        let ev = create_event(&g.c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        g.set_queue_inactive_signal(Some((&ev, page.va)));
        let k = g.kernel("store_to");
        let p = g.alloc(&i32s(&[0; 64]));
        let signal = g.dispatch(&k, &p.to_le_bytes(), [64, 1, 1], [64, 1, 1], 0);
        g.model.run_until_idle();
        let text = g.c.p.queue_error(g.queue.0).expect("an error").to_string();
        assert!(
            text.contains("ISA not modelled for this GPU"),
            "{preset}: {text}"
        );
        assert_eq!(
            g.signals.read_u64(0xF08),
            8,
            "{preset}: error 8 (invalid code) in queue_inactive_signal"
        );
        assert_eq!(
            wait_events(&g.c, &[ev.event_id], true, 0),
            (Ok(0), COMPLETE),
            "{preset}: the runtime's queue event fired"
        );
        assert_eq!(g.signal_value(signal), 1, "{preset}");
        assert_eq!(to_i32s(&g.read(p, 4))[0], 0, "{preset}: nothing ran");
    }
}

#[test]
fn a_gfx942_pm4_dispatch_stops_the_queue_with_isa_not_modelled() {
    use pm4::user::{DispatchDirect, DispatchInitiator};
    let g = Gpu::new(Preset::Gfx942, "gfx900");
    let (qid, q) = g.c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(
        &q,
        &DispatchDirect::new(
            [1, 1, 1],
            DispatchInitiator::new().with_compute_shader_en(true),
        ),
    );
    g.c.submit(&q, ring.wptr());
    g.model.run_until_idle();
    let text = g.c.p.queue_error(qid).expect("an error").to_string();
    assert!(text.contains("ISA not modelled for this GPU"), "{text}");
}

#[test]
fn a_queue_reuses_decoded_code_only_while_memory_still_holds_it() {
    use pm4::regs::ShReg;
    use pm4::user::{DispatchDirect, DispatchInitiator, SetShReg};
    let g = Gpu::new(Preset::Gfx900, "gfx900");
    let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    let code =
        g.c.alloc_on(g.c.gpu(), 4096, flags | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE)
            .unwrap();
    let out = g.c.gtt(4096);
    // Stores `value` at the address in s[0:1] (COMPUTE_USER_DATA_0/1).
    let program = |value: u32| {
        assemble(
            &format!(
                "v_mov_b32 v1, {value:#x}
v_mov_b32 v2, s0
v_mov_b32 v3, s1
global_store_dword v[2:3], v1, off
s_waitcnt vmcnt(0)
s_endpgm"
            ),
            "gfx900",
        )
    };
    let (qid, q) = g.c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    let pgm = code.va >> 8;
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_PGM_LO.0, &[pgm as u32, (pgm >> 32) as u32]).unwrap(),
    );
    // RSRC1 0: 4 VGPRs; RSRC2: USER_SGPR (bits 5:1) = 2.
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_PGM_RSRC1.0, &[0, 2 << 1]).unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(
            ShReg::COMPUTE_USER_DATA_0.0,
            &[out.va as u32, (out.va >> 32) as u32],
        )
        .unwrap(),
    );
    ring.push(
        &q,
        &SetShReg::new(ShReg::COMPUTE_NUM_THREAD_X.0, &[1, 1, 1]).unwrap(),
    );
    let dispatch = DispatchDirect::new(
        [1, 1, 1],
        DispatchInitiator::new().with_compute_shader_en(true),
    );
    for value in [0x11, 0x11, 0x22] {
        code.write_bytes(0, &program(value));
        ring.push(&q, &dispatch);
        g.c.submit(&q, ring.wptr());
        g.model.run_until_idle();
        assert_eq!(g.c.p.queue_error(qid), None);
        assert_eq!(
            out.read_u32(0),
            value,
            "the dispatch ran the code in memory now"
        );
    }
}

#[test]
fn profiling_queues_get_start_and_end_timestamps_in_the_completion_signal() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let k = g.kernel("vadd");
        let out = g.alloc(&f32s(&[0.0; 64]));
        let mut args = Vec::new();
        for p in [out, out, out] {
            args.extend(p.to_le_bytes());
        }
        args.extend(64u32.to_le_bytes());
        // Without AMD_QUEUE_PROPERTIES_ENABLE_PROFILING the CP leaves start_ts/end_ts alone.
        let plain = g.dispatch(&k, &args, [64, 1, 1], [64, 1, 1], 0);
        g.model.run_until_idle();
        let ts = |g: &Gpu, s: u64| {
            let off = s - g.signals.va;
            (g.signals.read_u64(off + 32), g.signals.read_u64(off + 40))
        };
        assert_eq!(g.signal_value(plain), 0, "{mcpu}");
        assert_eq!(ts(&g, plain), (0, 0), "{mcpu}: no profiling, no timestamps");
        // amd_queue_t.queue_properties (offset 0xb4) bit 3: profiling on.
        let base = g.amd_queue_offset();
        g.queue.1.ptrs.write_u32(base + 0xb4, 1 << 3);
        let gpu_clock = |g: &Gpu| {
            let mut clk = kfd_ioctl_get_clock_counters_args {
                gpu_id: g.c.gpu(),
                ..Default::default()
            };
            g.c.p.call::<GetClockCounters>(&mut clk).unwrap();
            clk.gpu_clock_counter
        };
        let before = gpu_clock(&g);
        let profiled = g.dispatch(&k, &args, [64, 1, 1], [64, 1, 1], 0);
        g.model.run_until_idle();
        let after = gpu_clock(&g);
        let (start, end) = ts(&g, profiled);
        assert_eq!(g.signal_value(profiled), 0, "{mcpu}");
        assert!(
            before <= start && start <= end && end <= after,
            "{mcpu}: GPU clock {before} <= start {start} <= end {end} <= {after}"
        );
    }
}

/// Compiles `tests/kernels/dispatch.cl` for `mcpu`.
fn compile_kernels(mcpu: &str) -> Vec<u8> {
    opencl::compile(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/dispatch.cl"),
        mcpu,
    )
}

/// A trap handler that reports the way ROCr's does: it reads TRAPSTS, asks the SQ for its
/// queue's doorbell (`s_sendmsg MSG_GET_DOORBELL` with EXEC_LO bit 31 set, answered in
/// EXEC_LO), stores TRAPSTS, the answer, ttmp1, ttmp0 and ttmp12 at TMA[0..20], interrupts the
/// host with the answer in M0 (`MSG_INTERRUPT`) and halts the wave (`s_sethalt 1`, effective
/// when `s_rfe_b64` leaves the handler). (Branch offsets are numbers: `assemble` reads
/// encodings, which leave label fixups open.)
const REPORTING_TRAP_HANDLER: &str = "
s_getreg_b32 ttmp2, hwreg(HW_REG_TRAPSTS)
s_mov_b32 exec_lo, 0x80000000
s_sendmsg sendmsg(MSG_GET_DOORBELL)
s_nop 7
s_bitcmp0_b32 exec_lo, 31
s_cbranch_scc0 65533
s_mov_b32 ttmp3, exec_lo
s_mov_b64 exec, 1
v_mov_b32 v0, ttmp14
v_mov_b32 v1, ttmp15
v_mov_b32 v2, ttmp2
global_store_dword v[0:1], v2, off
v_mov_b32 v2, ttmp3
global_store_dword v[0:1], v2, off offset:4
v_mov_b32 v2, ttmp1
global_store_dword v[0:1], v2, off offset:8
v_mov_b32 v2, ttmp0
global_store_dword v[0:1], v2, off offset:12
v_mov_b32 v2, ttmp12
global_store_dword v[0:1], v2, off offset:16
s_waitcnt vmcnt(0)
s_mov_b32 m0, ttmp3
s_sendmsg sendmsg(MSG_INTERRUPT)
s_sethalt 1
s_rfe_b64 ttmp[0:1]
";

/// What ROCr 5.2's gfx9 trap handler does for `s_trap 2` on a runtime without KFD exception
/// reporting, in scalar instructions only: it finds its queue's `amd_queue_t` through the
/// doorbell (`MSG_GET_DOORBELL`) and the table TMA[0] points to (one pointer per doorbell),
/// swaps the error code 1 << 31 into `queue_inactive_signal`'s value (`s_atomic_swap_x2`
/// with GLC, the old value kept at TMA[0x20]), writes the signal's event id into its event
/// mailbox (`s_store_dword`), interrupts the host with M0 = 0 and halts the wave.
const SIGNALLING_TRAP_HANDLER: &str = "
s_mov_b32 ttmp2, exec_lo
s_mov_b32 exec_lo, 0x80000000
s_sendmsg sendmsg(MSG_GET_DOORBELL)
s_nop 7
s_bitcmp0_b32 exec_lo, 31
s_cbranch_scc0 65533
s_and_b32 ttmp3, exec_lo, 0x3ff
s_mov_b32 exec_lo, ttmp2
s_lshl_b32 ttmp3, ttmp3, 3
s_load_dwordx2 ttmp[4:5], ttmp[14:15], 0x0 glc
s_waitcnt lgkmcnt(0)
s_load_dwordx2 ttmp[4:5], ttmp[4:5], ttmp3 glc
s_waitcnt lgkmcnt(0)
s_load_dwordx2 ttmp[4:5], ttmp[4:5], 0xc0 glc
s_waitcnt lgkmcnt(0)
s_mov_b32 ttmp6, 0x80000000
s_mov_b32 ttmp7, 0
s_atomic_swap_x2 ttmp[6:7], ttmp[4:5], 0x8 glc
s_waitcnt lgkmcnt(0)
s_store_dwordx2 ttmp[6:7], ttmp[14:15], 0x20 glc
s_load_dwordx2 ttmp[8:9], ttmp[4:5], 0x10 glc
s_load_dword ttmp10, ttmp[4:5], 0x18 glc
s_waitcnt lgkmcnt(0)
s_store_dword ttmp10, ttmp[8:9], 0x0 glc
s_waitcnt lgkmcnt(0)
s_mov_b32 m0, 0
s_sendmsg sendmsg(MSG_INTERRUPT)
s_sethalt 1
s_rfe_b64 ttmp[0:1]
";

/// What ROCr 5.2's gfx9 handler does when the runtime enabled KFD exception reporting: it
/// interrupts the host with M0 = its queue's doorbell id | the exception's `KFD_EC_MASK`
/// shifted by 10 (0x400: EC_QUEUE_WAVE_ABORT for `s_trap 2`) and halts the wave.
const EC_TRAP_HANDLER: &str = "
s_mov_b32 ttmp2, exec_lo
s_mov_b32 exec_lo, 0x80000000
s_sendmsg sendmsg(MSG_GET_DOORBELL)
s_nop 7
s_bitcmp0_b32 exec_lo, 31
s_cbranch_scc0 65533
s_and_b32 ttmp3, exec_lo, 0x3ff
s_mov_b32 exec_lo, ttmp2
s_or_b32 ttmp3, ttmp3, 0x400
s_mov_b32 m0, ttmp3
s_sendmsg sendmsg(MSG_INTERRUPT)
s_sethalt 1
s_rfe_b64 ttmp[0:1]
";

/// What a trap handler stored with [`REPORTING_TRAP_HANDLER`]: (TRAPSTS, MSG_GET_DOORBELL's
/// answer, trap id, PC, saved STATUS).
fn handler_report(tma: &Buf) -> (u32, u32, u32, u64, u32) {
    let ttmp1 = tma.read_u32(8);
    (
        tma.read_u32(0),
        tma.read_u32(4),
        (ttmp1 >> 16) & 0xff,
        u64::from(ttmp1 & 0xffff) << 32 | u64::from(tma.read_u32(12)),
        tma.read_u32(16),
    )
}

/// The doorbell index (in its process's slice) of a queue: the byte offset in the 8 KiB
/// slice that its doorbell mmap offset carries, over 8.
fn doorbell_index(q: &QueueBufs) -> u32 {
    ((q.doorbell_offset & 0x1fff) / 8) as u32
}

/// TRAPSTS.MEM_VIOL and ILLEGAL_INST; STATUS.PRIV.
const TRAPSTS_MEM_VIOL: u32 = 1 << 8;
const TRAPSTS_ILLEGAL_INST: u32 = 1 << 11;
const STATUS_PRIV: u32 = 1 << 5;

#[test]
fn a_vm_fault_enters_the_trap_handler_with_mem_viol_and_is_reported_as_a_memory_exception() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let tma = install_trap_handler(&mut g, mcpu, REPORTING_TRAP_HANDLER);
        let mem_ev = create_event(&g.c, KFD_IOC_EVENT_MEMORY, false, 0).unwrap();
        g.set_queue_inactive_signal(None);
        let wild: u64 = 0x7_dead_0000;
        let k = g.kernel("store_to");
        let signal = g.dispatch(&k, &wild.to_le_bytes(), [64, 1, 1], [64, 1, 1], 0);
        let act = g.model.run_until_idle();
        let (trapsts, doorbell, trap_id, pc, status) = handler_report(&tma);
        assert_eq!(
            trapsts & (TRAPSTS_MEM_VIOL | TRAPSTS_ILLEGAL_INST),
            TRAPSTS_MEM_VIOL,
            "{mcpu}: the handler saw TRAPSTS.MEM_VIOL"
        );
        assert_eq!(trap_id, 0, "{mcpu}: an exception, not an s_trap");
        assert!(
            (k.entry_address..k.entry_address + k.code_size).contains(&pc),
            "{mcpu}: ttmp1:0 hold the faulting instruction's PC {pc:#x}"
        );
        assert_eq!(
            status & STATUS_PRIV,
            0,
            "{mcpu}: ttmp12 = the wave's STATUS"
        );
        assert_eq!(
            (doorbell & (1 << 31), doorbell & 0x3ff),
            (0, doorbell_index(&g.queue.1)),
            "{mcpu}: MSG_GET_DOORBELL answered {doorbell:#x}"
        );
        // The driver learns of the fault as amdkfd reports it.
        let (r, result, data) = wait_events_data(&g.c, &[mem_ev.event_id], true, 0);
        assert_eq!((r, result), (Ok(0), COMPLETE), "{mcpu}");
        let m = data[0].data.memory_exception_data();
        assert_eq!((m.va, m.failure.NotPresent), (wild & !0xfff, 1), "{mcpu}");
        // amdkfd evicts the process's queues on the fault, before the handler's report
        // reaches the runtime: the halted dispatch is not run, and queue_inactive_signal
        // stays clear (the runtime reports the memory exception).
        assert_eq!(act.parked, 0, "{mcpu}");
        assert_eq!(g.signals.read_u64(0xF08), 0, "{mcpu}");
        assert_eq!(g.signal_value(signal), 1, "{mcpu}: never a silent success");
    }
}

#[test]
fn msg_get_doorbell_answers_the_queue_doorbell_and_the_reporting_handler_halts_the_wave() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let tma = install_trap_handler(&mut g, mcpu, REPORTING_TRAP_HANDLER);
        g.set_queue_inactive_signal(None);
        let signal = g.dispatch_trap_on_negative(5);
        let act = g.model.run_until_idle();
        let (trapsts, doorbell, trap_id, _, _) = handler_report(&tma);
        assert_eq!(trap_id, 2, "{mcpu}: s_trap 2");
        assert_eq!(
            trapsts & (TRAPSTS_MEM_VIOL | TRAPSTS_ILLEGAL_INST),
            0,
            "{mcpu}"
        );
        assert_eq!(
            (doorbell & (1 << 31), doorbell & 0x3ff),
            (0, doorbell_index(&g.queue.1)),
            "{mcpu}: MSG_GET_DOORBELL answered {doorbell:#x}"
        );
        assert_eq!(act.parked, 1, "{mcpu}: the handler halted the wave");
        assert_eq!(
            g.signals.read_u64(0xF08),
            0,
            "{mcpu}: the handler reported; the CP adds nothing of its own"
        );
        assert_eq!(g.signal_value(signal), 1, "{mcpu}");
    }
}

/// A queue that traps on lane 5 of `trap_on_negative`, with queue_inactive_signal at
/// signals+0xF00 (value at 0xF08, mailbox → `ev`'s slot, event id `ev`).
fn trap_dispatch(g: &mut Gpu, ev: &kfd_ioctl_create_event_args, page_va: u64) -> u64 {
    g.set_queue_inactive_signal(Some((ev, page_va)));
    g.dispatch_trap_on_negative(5)
}

#[test]
fn a_handler_swaps_the_error_into_queue_inactive_signal_with_scalar_atomics_and_halts() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let tma = install_trap_handler(&mut g, mcpu, SIGNALLING_TRAP_HANDLER);
        // TMA[0] → a table of amd_queue_t pointers indexed by doorbell id
        let table = 0x100u64;
        tma.write_u64(0, tma.va + table);
        let amd_queue = g.queue.1.ptrs.va + g.amd_queue_offset();
        tma.write_u64(table + 8 * u64::from(doorbell_index(&g.queue.1)), amd_queue);
        tma.write_u64(0x20, 0xdead);
        let page = g.c.event_page();
        let ev = create_event(&g.c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        let signal = trap_dispatch(&mut g, &ev, page.va);
        let act = g.model.run_until_idle();
        assert_eq!(act.parked, 1, "{mcpu}: the handler halted the wave");
        assert_eq!(
            g.signals.read_u64(0xF08),
            1 << 31,
            "{mcpu}: the handler's s_atomic_swap_x2 wrote ROCr's trap code"
        );
        assert_eq!(
            tma.read_u64(0x20),
            0,
            "{mcpu}: GLC returned the old value 0"
        );
        let (r, result) = wait_events(&g.c, &[ev.event_id], true, 0);
        assert_eq!(
            (r, result),
            (Ok(0), COMPLETE),
            "{mcpu}: the mailbox store and MSG_INTERRUPT fired the signal's event"
        );
        assert_eq!(g.signal_value(signal), 1, "{mcpu}: never a silent success");
        assert_eq!(g.c.p.queue_error(g.queue.0), None, "{mcpu}: no queue error");
    }
}

#[test]
fn a_handler_message_with_an_exception_code_reaches_the_runtime_through_the_error_payload() {
    for (preset, mcpu) in presets() {
        for runtime in [true, false] {
            let mut g = Gpu::new(preset, mcpu);
            if runtime {
                // RUNTIME_ENABLE needs a process without queues
                g.c.destroy_queue(g.queue.0).unwrap();
                let mut r = kfd_ioctl_runtime_enable_args {
                    mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
                    ..Default::default()
                };
                // SAFETY: RUNTIME_ENABLE's only address is `r_debug`, 0 here, which the model only
                // records for a debugger and never dereferences.
                unsafe { ioctl_unchecked::<RuntimeEnable>(&g.c.p, &mut r) }.unwrap();
                g.queue =
                    g.c.create_queue_sized(g.c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
                        .unwrap();
            }
            let _tma = install_trap_handler(&mut g, mcpu, EC_TRAP_HANDLER);
            let page = g.c.event_page();
            let queue_ev = create_event(&g.c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
            let (ctx, _) = g
                .queue
                .1
                .ctx
                .as_ref()
                .expect("an AQL queue has a CWSR area");
            g.signals.write_u64(0xE00, 0x100);
            ctx.write_u64(24, g.signals.va + 0xE00);
            ctx.write_u32(32, queue_ev.event_id);
            let signal = trap_dispatch(&mut g, &queue_ev, page.va);
            let act = g.model.run_until_idle();
            assert_eq!(act.parked, 1, "{mcpu}: the handler halted the wave");
            if runtime {
                let (r, result) = wait_events(&g.c, &[queue_ev.event_id], true, HANG_MS);
                assert_eq!((r, result), (Ok(0), COMPLETE), "{mcpu}: err_event_id set");
            }
            let want = if runtime {
                0x100 | KFD_EC_MASK(EC_QUEUE_WAVE_ABORT)
            } else {
                0x100
            };
            assert_eq!(
                g.signals.read_u64(0xE00),
                want,
                "{mcpu}, runtime enabled {runtime}: amdkfd sends the queue exception to an \
                 enabled runtime only"
            );
            assert_eq!(g.signals.read_u64(0xF08), 0, "{mcpu}: no CP stand-in");
            assert_eq!(g.signal_value(signal), 1, "{mcpu}");
        }
    }
}

/// A packet the model does not execute stops the queue; as amdkfd's
/// `kfd_set_dbg_ev_from_interrupt`, the CP's queue-error interrupt reaches an enabled runtime
/// through the queue's error payload (`KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED)`) and event, so
/// it reports the error instead of waiting for a completion that never comes.
#[test]
fn a_packet_the_model_cannot_run_reaches_the_runtime_as_a_queue_exception() {
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        g.c.destroy_queue(g.queue.0).unwrap();
        let mut r = kfd_ioctl_runtime_enable_args {
            mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
            ..Default::default()
        };
        // SAFETY: RUNTIME_ENABLE's only address is `r_debug`, 0 here, which the model only records
        // for a debugger and never dereferences.
        unsafe { ioctl_unchecked::<RuntimeEnable>(&g.c.p, &mut r) }.unwrap();
        g.queue =
            g.c.create_queue_sized(g.c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
                .unwrap();
        let page = g.c.event_page();
        let queue_ev = create_event(&g.c, KFD_IOC_EVENT_SIGNAL, false, page.handle).unwrap();
        let (ctx, _) = g
            .queue
            .1
            .ctx
            .as_ref()
            .expect("an AQL queue has a CWSR area");
        g.signals.write_u64(0xE00, 0);
        ctx.write_u64(24, g.signals.va + 0xE00);
        ctx.write_u32(32, queue_ev.event_id);
        // An AGENT_DISPATCH packet (type 4), barrier bit set, system-scope fences.
        let header: u32 = 4 | 1 << 8 | 2 << 9 | 2 << 11;
        g.queue.1.ring.write_u32(0, header);
        g.packets = 1;
        g.c.submit(&g.queue.1, 1);
        g.model.run_until_idle();
        let (r, result) = wait_events(&g.c, &[queue_ev.event_id], true, 1000);
        assert_eq!((r, result), (Ok(0), COMPLETE), "{mcpu}: err_event_id set");
        assert_eq!(
            g.signals.read_u64(0xE00),
            KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED),
            "{mcpu}: the runtime sees an unsupported packet"
        );
    }
}

/// Instructions that reach the SPI's own paths (barriers, traps, messages, halts, sleeps,
/// loops that never end, GWS waits that never open, wild stores and kernarg loads), mixed
/// into the random ones.
const HOSTILE_SNIPPETS: [&str; 11] = [
    "s_barrier",
    "s_trap 2",
    "s_sendmsg sendmsg(MSG_INTERRUPT)",
    "s_sethalt 1",
    "s_sleep 1",
    "s_branch 0xffff",
    "ds_gws_barrier v0 offset:1 gds",
    "ds_gws_sema_p gds",
    "global_store_dword v[0:1], v2, off",
    "s_load_dwordx2 s[0:1], s[4:5], 0x0",
    "s_endpgm",
];

/// Hostile kernels: random instruction words (any that decode) mixed with the snippets above,
/// dispatched as 2 workgroups of 2 waves with LDS, each by a process of its own (a VM fault
/// leaves a process's queues evicted, as amdkfd does). Whatever a kernel does, the model
/// neither panics nor hangs: after a few engine passes the dispatch has completed, stopped its
/// queue with an error, or is still running (an endless loop, a barrier that never opens, a
/// halted wave), and destroying the queue and ending the process end it at once. Afterwards
/// another process still computes correctly.
/// `HOSTILE_KERNELS=N HOSTILE_SEED=S` run a longer hunt.
#[test]
fn random_kernels_never_crash_or_hang_the_model() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let kernels = env("HOSTILE_KERNELS", 100) as usize;
    let seed = env("HOSTILE_SEED", 0x9e37_79b9_7f4a_7c15);
    for (preset, mcpu) in presets() {
        let mut g = Gpu::new(preset, mcpu);
        let target = match preset {
            Preset::Gfx90a => isa::Target::Gfx90a,
            _ => isa::Target::Gfx900,
        };
        let snippets: Vec<Vec<u8>> = HOSTILE_SNIPPETS.iter().map(|s| assemble(s, mcpu)).collect();
        // A descriptor compiled by clang (kernarg, work-item ids, LDS), pointed at new code,
        // with every register a random instruction may name.
        let mut kd = g.kernel("reduce").descriptor;
        kd.kernel_code_entry_byte_offset = 256;
        kd.group_segment_fixed_size = kd.group_segment_fixed_size.max(1024);
        kd.private_segment_fixed_size = 0;
        let vgpr_granules = if target == isa::Target::Gfx90a {
            31
        } else {
            63
        };
        kd.compute_pgm_rsrc1 = kd
            .compute_pgm_rsrc1
            .with_granulated_workitem_vgpr_count(vgpr_granules)
            .with_granulated_wavefront_sgpr_count(12);
        let mut rng = Rng(seed ^ target as u64 | 1);
        let (mut completed, mut stopped, mut running) = (0, 0, 0);
        for _ in 0..kernels {
            let h = Client::new(&g.model);
            let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT
                | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
            let code = h.alloc_on(h.gpu(), 8192, flags).unwrap();
            let data = h.gtt(4096);
            let mut text = Vec::new();
            while text.len() < 12 * 4 {
                if rng.next() % 8 == 0 {
                    let k = (rng.next() % snippets.len() as u64) as usize;
                    // The endless ones (a loop on itself, GWS waits) only now and then.
                    if !(5..=7).contains(&k) || rng.next() % 6 == 0 {
                        text.extend_from_slice(&snippets[k]);
                    }
                    continue;
                }
                let words = [rng.next() as u32, rng.next() as u32, rng.next() as u32];
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                if let Ok((_, len)) = isa::decode(&bytes, code.va + 256, target) {
                    text.extend_from_slice(&bytes[..len]);
                }
            }
            text.extend_from_slice(snippets.last().unwrap());
            code.write_bytes(0, zerocopy::IntoBytes::as_bytes(&kd));
            code.write_bytes(256, &text);
            let (qid, q) = h
                .create_queue_sized(h.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
                .unwrap();
            data.write_u64(8, 1);
            let dispatch = KernelDispatch {
                workgroup: [128, 1, 1],
                grid: [256, 1, 1],
                private_segment_size: 0,
                group_segment_size: kd.group_segment_fixed_size,
                kernel_object: code.va,
                kernarg: data.va + 256,
                completion_signal: data.va,
            };
            dispatch.write(&q, 0);
            h.submit(&q, 1);
            for _ in 0..6 {
                g.model.step();
            }
            if data.read_u64(8) == 0 {
                completed += 1;
            } else if h.p.queue_error(qid).is_some() {
                stopped += 1;
            } else {
                running += 1;
            }
            // A kernel that never ends must not hold the destroy and the exit (a hang would
            // hold the test; how long they take is no test's business).
            h.destroy_queue(qid).unwrap();
            drop(h);
        }
        eprintln!(
            "{mcpu}: {kernels} random kernels: {completed} completed, {stopped} stopped their \
             queue, {running} still running when destroyed"
        );
        assert!(
            completed > 0 && stopped > 0 && running > 0,
            "{mcpu}: every outcome is exercised ({completed}/{stopped}/{running})"
        );
        // The model is still sound: another process computes correctly.
        const N: usize = 300;
        let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
        let (pa, pb) = (g.alloc(&f32s(&a)), g.alloc(&f32s(&a)));
        let pc = g.alloc(&f32s(&[0.0; N]));
        let mut args = Vec::new();
        for p in [pa, pb, pc] {
            args.extend(p.to_le_bytes());
        }
        args.extend((N as u32).to_le_bytes());
        let k = g.kernel("vadd");
        let signal = g.dispatch(&k, &args, [64, 1, 1], [N as u32, 1, 1], 0);
        g.model.run_until_idle();
        assert_eq!(g.signal_value(signal), 0, "{mcpu}");
        let c = g.read(pc, 4 * N);
        for (i, x) in c.chunks_exact(4).enumerate() {
            assert_eq!(
                f32::from_le_bytes(x.try_into().unwrap()),
                2.0 * i as f32,
                "{mcpu}"
            );
        }
    }
}
