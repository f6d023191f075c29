//! Loading code objects and dispatching kernels through the thunk (issue #16 item 5), on the
//! model: OpenCL C kernels compiled by clang-15 at test time (missing, a failure, or a skip
//! where `KFD_SKIP_MISSING_TOOLS=1`: `kfd_testkit`), loaded with `Executable`, dispatched with `AqlQueue::dispatch` and checked
//! against host references.

mod common;

use common::*;
use std::path::PathBuf;
use thunk::{Errno, Executable, Gpu, Kfd, MemoryKind, QueueOptions, WaitStatus};

/// Compiles tests/kernels/dispatch.cl for `mcpu` as code object version `cov`; `None` without
/// clang-15 when skipping is allowed.
fn compile(mcpu: &str, cov: u32) -> Option<Vec<u8>> {
    kfd_testkit::tool("clang-15")?;
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/dispatch.cl");
    let cov = format!("-mcode-object-version={cov}");
    Some(kfd_testkit::opencl_to_code_object(&src, mcpu, &[&cov]))
}

/// A model GPU of `preset` with the kernels for `mcpu` loaded.
fn setup(preset: Preset, mcpu: &str, cov: u32) -> Option<(Kfd, Gpu, Executable)> {
    let code = compile(mcpu, cov)?;
    let kfd = model_kfd(preset, 1, "dispatching on a chosen GPU")?;
    let gpu = kfd.gpu(0).unwrap();
    let exe = Executable::load(&gpu, &code).expect("load");
    Some((kfd, gpu, exe))
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn vector_add_with_a_partial_last_workgroup_matches_the_host() {
    // v4 takes the group size from the dispatch packet, v5 from the hidden arguments.
    for (preset, mcpu, cov) in [
        (Preset::Gfx900, "gfx900", 4),
        (Preset::Gfx90a, "gfx90a", 4),
        (Preset::Gfx900, "gfx900", 5),
        (Preset::Gfx90a, "gfx90a", 5),
    ] {
        let Some((_kfd, gpu, exe)) = setup(preset, mcpu, cov) else {
            return;
        };
        const N: usize = 1000; // 3 full groups of 256 and one of 232
        let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.25).collect();
        let b: Vec<f32> = (0..N).map(|i| 7.0 - i as f32).collect();
        let buf = |bytes: &[u8]| {
            let m = gpu.alloc(MemoryKind::Gtt, bytes.len() as u64).unwrap();
            m.write(0, bytes).unwrap();
            m
        };
        let (ma, mb) = (buf(&f32s(&a)), buf(&f32s(&b)));
        let mc = buf(&f32s(&[-1.0; N + 64]));
        let k = exe.kernel("vadd").unwrap();
        let mut args = k.args().unwrap();
        args.push_pointer(ma.gpu_va()).unwrap();
        args.push_pointer(mb.gpu_va()).unwrap();
        args.push_pointer(mc.gpu_va()).unwrap();
        args.push_u32(N as u32).unwrap();
        let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
        let done = q
            .dispatch(&k, [N as u32, 1, 1], [256, 1, 1], &args)
            .unwrap();
        done.wait(T).unwrap();
        assert_eq!(done.value().unwrap(), 0, "{mcpu} v{cov}");
        let c: Vec<f32> = mc
            .read_vec(0, 4 * (N + 64))
            .unwrap()
            .chunks_exact(4)
            .map(|x| f32::from_le_bytes(x.try_into().unwrap()))
            .collect();
        for i in 0..N {
            assert_eq!(c[i], a[i] + b[i], "{mcpu} v{cov}: c[{i}]");
        }
        assert!(
            c[N..].iter().all(|&x| x == -1.0),
            "{mcpu} v{cov}: nothing past the grid"
        );
        assert_eq!(q.rptr().get(), 1, "{mcpu} v{cov}: one packet retired");
    }
}

#[test]
fn code_object_v5_hidden_arguments_reach_the_kernel() {
    for (preset, mcpu) in [(Preset::Gfx900, "gfx900"), (Preset::Gfx90a, "gfx90a")] {
        let Some((_kfd, gpu, exe)) = setup(preset, mcpu, 5) else {
            return;
        };
        let k = exe.kernel("hidden_args").unwrap();
        let meta = k.metadata.as_ref().expect("metadata");
        let offset_of = |kind: &str| {
            meta.args
                .iter()
                .find(|a| a.value_kind == kind)
                .unwrap_or_else(|| panic!("{kind} in the metadata"))
                .offset
        };
        let implicit = offset_of("hidden_block_count_x");
        assert_eq!(implicit, 16, "after a pointer and a uint, 8-aligned");
        // AMDGPUUsage v5: grid_dims 64 bytes into the implicit arguments.
        assert_eq!(offset_of("hidden_grid_dims"), implicit + 64);
        const WORDS: u32 = 17; // through hidden_grid_dims
        let out = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
        out.fill(0, 4096, 0xEE).unwrap();
        let mut args = k.args().unwrap();
        args.push_pointer(out.gpu_va())
            .unwrap()
            .push_u32(WORDS)
            .unwrap();
        let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
        // 1000 × 6 work-items in groups of 64 × 4: 15 rem 40 by 1 rem 2.
        let done = q.dispatch(&k, [1000, 6, 1], [64, 4, 1], &args).unwrap();
        done.wait(T).unwrap();
        let got = u32s(&out.read_vec(0, 4 * (WORDS as usize + 1)).unwrap());
        let mut want = vec![0u32; WORDS as usize + 1];
        want[0..3].copy_from_slice(&[15, 1, 1]); // hidden_block_count_x/y/z
        want[3] = 64 | 4 << 16; // hidden_group_size_x, _y
        want[4] = 1 | 40 << 16; // hidden_group_size_z, hidden_remainder_x
        want[5] = 2; // hidden_remainder_y, _z
                     // 6..10 reserved, 10..16 hidden_global_offset_x/y/z: zero
        want[16] = 2; // hidden_grid_dims
        want[WORDS as usize] = 64; // __builtin_amdgcn_workgroup_size_x() reads the hidden arg
        assert_eq!(got, want, "{mcpu}");
    }
}

#[test]
fn hidden_arguments_land_at_their_metadata_offsets() {
    for cov in [4, 5] {
        let Some((_kfd, _gpu, exe)) = setup(Preset::Gfx900, "gfx900", cov) else {
            return;
        };
        let k = exe.kernel("hidden_args").unwrap();
        let meta = k.metadata.clone().expect("metadata");
        // clang-15: v4 appends 56 bytes of hidden arguments, v5 256.
        assert_eq!(
            k.kernarg_size,
            if cov == 4 { 72 } else { 16 + 256 },
            "v{cov}"
        );
        let mut args = k.args().unwrap();
        args.push_pointer(0x1234_5678_9000).unwrap();
        args.push_u32(77).unwrap();
        let bytes = args.finish([1000, 3, 1], [256, 2, 1]).unwrap();
        assert_eq!(bytes.len() as u64, k.kernarg_size, "v{cov}");
        assert_eq!(&bytes[0..8], &0x1234_5678_9000u64.to_le_bytes(), "v{cov}");
        assert_eq!(&bytes[8..12], &77u32.to_le_bytes(), "v{cov}");
        let field = |kind: &str| {
            meta.args.iter().find(|a| a.value_kind == kind).map(|a| {
                let at = a.offset as usize;
                let mut v = [0u8; 8];
                v[..a.size as usize].copy_from_slice(&bytes[at..at + a.size as usize]);
                u64::from_le_bytes(v)
            })
        };
        assert_eq!(field("hidden_global_offset_x"), Some(0), "v{cov}");
        assert_eq!(field("hidden_global_offset_z"), Some(0), "v{cov}");
        if cov == 5 {
            assert_eq!(field("hidden_block_count_x"), Some(3));
            assert_eq!(field("hidden_block_count_y"), Some(1));
            assert_eq!(field("hidden_remainder_x"), Some(232));
            assert_eq!(field("hidden_remainder_y"), Some(1));
            assert_eq!(field("hidden_group_size_x"), Some(256));
            assert_eq!(field("hidden_group_size_y"), Some(2));
            assert_eq!(field("hidden_grid_dims"), Some(2));
        } else {
            assert_eq!(field("hidden_block_count_x"), None, "v4 has none");
            // Buffers a runtime provides (hostcall, multigrid sync) are left zero.
            assert_eq!(field("hidden_hostcall_buffer"), Some(0));
            assert_eq!(field("hidden_multigrid_sync_arg"), Some(0));
            assert!(bytes[12..].iter().all(|&b| b == 0));
        }
    }
}

#[test]
fn completion_wakes_the_event_and_polling_works_too() {
    let Some((_kfd, gpu, exe)) = setup(Preset::Gfx900, "gfx900", 4) else {
        return;
    };
    let k = exe.kernel("vadd").unwrap();
    let mem = gpu.alloc(MemoryKind::Gtt, 4096).unwrap();
    let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    let mut completions = Vec::new();
    for _ in 0..2 {
        let mut args = k.args().unwrap();
        for _ in 0..3 {
            args.push_pointer(mem.gpu_va()).unwrap();
        }
        args.push_u32(64).unwrap();
        completions.push(q.dispatch(&k, [64, 1, 1], [64, 1, 1], &args).unwrap());
    }
    let done = &completions[0];
    let event = done.event().expect("a signal event");
    // The interrupt path: the event fires (its mailbox was written) without polling.
    assert_eq!(event.wait(Some(T)).unwrap(), WaitStatus::Signaled);
    done.wait(T).unwrap();
    assert_eq!(done.value().unwrap(), 0);
    completions[1].wait_polling(T).unwrap();
    assert_eq!(completions[1].packet_index(), 1);
    assert_ne!(
        completions[0].signal_address(),
        completions[1].signal_address()
    );
}

#[test]
fn unknown_kernel_wrong_target_and_garbage_are_errors() {
    let Some((_kfd, gpu, exe)) = setup(Preset::Gfx900, "gfx900", 4) else {
        return;
    };
    let e = exe.kernel("no_such_kernel").unwrap_err();
    assert_eq!(e.errno(), Errno::ENOENT);
    assert!(e.to_string().contains("no_such_kernel"), "{e}");
    let mut names = exe.kernel_names().unwrap();
    names.sort();
    assert_eq!(names, ["hidden_args", "vadd"]);

    let gfx90a = compile("gfx90a", 4).unwrap();
    let e = Executable::load(&gpu, &gfx90a).unwrap_err();
    assert_eq!(e.errno(), Errno(libc::ENOEXEC), "{e}");
    assert!(e.to_string().contains("gfx90a"), "{e}");

    for garbage in [&b""[..], b"\x7fELF", &[0xAB; 300]] {
        assert!(Executable::load(&gpu, garbage).is_err());
    }
    let e = Executable::load_file(&gpu, "/nonexistent/kernels.hsaco").unwrap_err();
    assert_eq!(e.errno(), Errno::ENOENT);
}

#[test]
fn load_file_reads_a_code_object_from_a_path() {
    let Some(code) = compile("gfx90a", 4) else {
        return;
    };
    let Some(kfd) = model_kfd(Preset::Gfx90a, 1, "a gfx90a") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.hsaco");
    std::fs::write(&path, code).unwrap();
    let exe = Executable::load_file(&kfd.gpu(0).unwrap(), &path).unwrap();
    let k = exe.kernel("vadd").unwrap();
    assert_eq!(
        k.kernarg_size, 28,
        "v4 vadd: three pointers and a uint, no hidden ones"
    );
    assert_eq!(
        k.descriptor_address % 64,
        0,
        "kernel descriptors are 64-byte aligned"
    );
    assert!(exe
        .segments()
        .iter()
        .any(|m| (m.gpu_va()..m.gpu_va() + m.size()).contains(&k.descriptor_address)));
}

#[test]
fn bad_arguments_and_sizes_are_refused_before_a_packet_is_written() {
    let Some((_kfd, gpu, exe)) = setup(Preset::Gfx900, "gfx900", 4) else {
        return;
    };
    let k = exe.kernel("vadd").unwrap();
    let mut args = k.args().unwrap();
    let e = args.push_u32(1).unwrap_err();
    assert_eq!(e.errno(), Errno::EINVAL, "a pointer is 8 bytes: {e}");
    for _ in 0..3 {
        args.push_pointer(0x1000).unwrap();
    }
    let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    let e = q.dispatch(&k, [64, 1, 1], [64, 1, 1], &args).unwrap_err();
    assert!(e.to_string().contains("takes 4 arguments, 3 given"), "{e}");
    args.push_u32(64).unwrap();
    let e = args.push_u32(1).unwrap_err();
    assert!(e.to_string().contains("one too many"), "{e}");
    for (grid, wg) in [
        ([0, 1, 1], [64, 1, 1]),
        ([64, 1, 1], [0, 1, 1]),
        ([2048, 1, 1], [1024, 2, 1]),
    ] {
        let e = q.dispatch(&k, grid, wg, &args).unwrap_err();
        assert_eq!(e.errno(), Errno::EINVAL, "{grid:?} {wg:?}: {e}");
    }
    let other = exe.kernel("hidden_args").unwrap();
    assert!(q.dispatch(&other, [64, 1, 1], [64, 1, 1], &args).is_err());
    assert_eq!(q.wptr().get(), 0, "no packet written");
}

#[test]
fn a_faulting_dispatch_times_out_instead_of_hanging() {
    let Some((kfd, gpu, exe)) = setup(Preset::Gfx900, "gfx900", 4) else {
        return;
    };
    let fault = kfd
        .create_event(thunk::EventKind::MemoryException, false)
        .unwrap();
    let k = exe.kernel("vadd").unwrap();
    let mut args = k.args().unwrap();
    for _ in 0..3 {
        args.push_pointer(0x7_dead_0000).unwrap();
    }
    args.push_u32(64).unwrap();
    let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    let done = q.dispatch(&k, [64, 1, 1], [64, 1, 1], &args).unwrap();
    assert_eq!(
        fault.wait(Some(T)).unwrap(),
        WaitStatus::Signaled,
        "a VM fault"
    );
    let e = done
        .wait(std::time::Duration::from_millis(200))
        .unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert_eq!(done.value().unwrap(), 1, "never a silent success");
}

#[test]
fn completion_slots_are_reused_and_overflow_gets_its_own_buffer() {
    let Some((_kfd, gpu, exe)) = setup(Preset::Gfx900, "gfx900", 4) else {
        return;
    };
    let k = exe.kernel("vadd").unwrap();
    const IN_FLIGHT: usize = 80; // more than the pool's 64 slots
    const N: usize = 64;
    let a = gpu
        .alloc(MemoryKind::Gtt, (IN_FLIGHT * N * 4) as u64)
        .unwrap();
    let b = gpu
        .alloc(MemoryKind::Gtt, (IN_FLIGHT * N * 4) as u64)
        .unwrap();
    let c = gpu
        .alloc(MemoryKind::Gtt, (IN_FLIGHT * N * 4) as u64)
        .unwrap();
    for i in 0..IN_FLIGHT * N {
        a.store_u32(i as u64 * 4, (i as f32).to_bits()).unwrap();
        b.store_u32(i as u64 * 4, 0.5f32.to_bits()).unwrap();
    }
    let mut q = gpu
        .create_aql_queue(&QueueOptions::new().ring_size(128 * 64))
        .unwrap();
    let dispatch = |q: &mut thunk::AqlQueue, d: usize| {
        let offset = (d * N * 4) as u64;
        let mut args = k.args().unwrap();
        for m in [&a, &b, &c] {
            args.push_pointer(m.gpu_addr(offset)).unwrap();
        }
        args.push_u32(N as u32).unwrap();
        q.dispatch(&k, [N as u32, 1, 1], [N as u16, 1, 1], &args)
            .unwrap()
    };
    let completions: Vec<_> = (0..IN_FLIGHT).map(|d| dispatch(&mut q, d)).collect();
    for done in &completions {
        done.wait(T).unwrap();
    }
    for i in 0..IN_FLIGHT * N {
        let got = f32::from_bits(c.load_u32(i as u64 * 4).unwrap());
        assert_eq!(got, i as f32 + 0.5, "element {i}");
    }
    let addresses: Vec<u64> = completions.iter().map(|c| c.signal_address()).collect();
    let mut distinct = addresses.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        IN_FLIGHT,
        "every dispatch in flight has its own signal"
    );
    // The first 64 share one pool buffer, a page apart; the rest have buffers of their own.
    let pool = addresses[0];
    for (d, &addr) in addresses.iter().enumerate().take(64) {
        assert_eq!(addr, pool + d as u64 * 4096, "pooled slot of dispatch {d}");
    }
    for &addr in &addresses[64..] {
        assert!(
            !(pool..pool + 64 * 4096).contains(&addr),
            "{addr:#x} is outside the pool"
        );
    }
    drop(completions);
    // Retired slots come back: the next dispatch uses a pooled signal again.
    let again = dispatch(&mut q, 0);
    assert!((pool..pool + 64 * 4096).contains(&again.signal_address()));
    again.wait(T).unwrap();
}

/// Builds codeobj's test source `name` (codeobj/tests/src) for gfx900 as a shared code object;
/// `None` without clang-15 / ld.lld-15 when skipping is allowed.
fn shared_object(name: &str, allow_undefined: bool) -> Option<Vec<u8>> {
    kfd_testkit::tools(&["clang-15", "ld.lld-15"])?;
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../codeobj/tests/src")
        .join(name);
    let obj = kfd_testkit::opencl_to_object(&src, "gfx900", &["-fvisibility=default"]);
    let link: &[&str] = if allow_undefined {
        &["--allow-shlib-undefined"]
    } else {
        &[]
    };
    Some(kfd_testkit::link_shared(&obj, link))
}

#[test]
fn kernels_call_device_functions_of_another_code_object() {
    // kernels.cl calls lib_add and reads lib_counter, which only devlib.cl defines: the loader
    // links them; the calls need a stack, which the queue's scratch provides.
    let (Some(kernels), Some(lib)) = (
        shared_object("kernels.cl", true),
        shared_object("devlib.cl", false),
    ) else {
        return;
    };
    let Some(kfd) = model_kfd(Preset::Gfx900, 1, "linking two code objects") else {
        return;
    };
    let gpu = kfd.gpu(0).unwrap();
    let exe = Executable::load_linked(&gpu, &[&kernels, &lib]).expect("linked");
    let k = exe.kernel("add_kernel").unwrap();
    assert!(
        k.private_segment_size > 0,
        "a kernel with calls has a stack"
    );
    let out = gpu.alloc(MemoryKind::Gtt, 4 * 64).unwrap();
    let run = |q: &mut thunk::AqlQueue| {
        let mut args = k.args().unwrap();
        args.push_pointer(out.gpu_va()).unwrap();
        args.push_i32(30).unwrap().push_i32(12).unwrap();
        q.dispatch(&k, [64, 1, 1], [64, 1, 1], &args)
            .unwrap()
            .wait(T)
            .unwrap();
        u32s(&out.read_vec(0, 4 * 64).unwrap())
    };
    let mut q = gpu.create_aql_queue(&QueueOptions::new()).unwrap();
    // lib_add(a, b) = a + b + lib_counter (7) + *lib_private_ptr (11); then + lib_counter.
    assert_eq!(run(&mut q), vec![30 + 12 + 7 + 11 + 7; 64]);
    // A tool sets the library's variable after loading: both reads see it.
    exe.write_variable("lib_counter", &100i32.to_le_bytes())
        .unwrap();
    assert_eq!(run(&mut q), vec![30 + 12 + 100 + 11 + 100; 64]);
    // Wrong uses are errors: no such variable, a value larger than it, nothing to load.
    assert_eq!(
        exe.write_variable("no_such", &[0; 4]).unwrap_err().errno(),
        Errno::ENOENT
    );
    assert_eq!(
        exe.write_variable("lib_counter", &[0; 8])
            .unwrap_err()
            .errno(),
        Errno::EINVAL
    );
    assert_eq!(
        Executable::load_linked(&gpu, &[]).unwrap_err().errno(),
        Errno::EINVAL
    );
    // The library twice: its symbols are defined twice.
    assert!(Executable::load_linked(&gpu, &[&kernels, &lib, &lib]).is_err());
}
