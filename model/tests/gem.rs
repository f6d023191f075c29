//! amdgpu buffer objects on the render node (issue #20): GEM_CREATE, GEM_MMAP, GEM_VA,
//! GEM_CLOSE and PRIME_HANDLE_TO_FD with the kernel's errnos, and KFD's side of graphics
//! interop: GET_DMABUF_INFO and IMPORT_DMABUF of the exported dma-buf, mapped to the GPU and
//! written by a PM4 queue, read back through the render node's CPU map and the dma-buf.

mod common;

use common::*;
use kfd_model::gem::*;
use kfd_model::{Errno, ModelConfig, Preset, RenderNode};
use kfd_sys::drm::*;
use kfd_sys::*;
use pm4::user::WriteData;
use std::os::fd::{FromRawFd, OwnedFd};

const GTT: u64 = AMDGPU_GEM_DOMAIN_GTT;

fn va_req(handle: u32, operation: u32, va: u64, offset: u64, size: u64) -> GemVaRequest {
    GemVaRequest {
        handle,
        operation,
        flags: AMDGPU_VM_PAGE_WRITEABLE,
        va_address: va,
        offset_in_bo: offset,
        map_size: size,
    }
}

/// `QUERY_STATE(2)` of context `ctx_id`: (flags, reset_status).
fn query(r: &RenderNode, op: u32, ctx_id: u32) -> (u64, u32) {
    use kfd_model::ctx::*;
    let q = CtxRequest {
        op,
        ctx_id,
        ..Default::default()
    };
    match r.ctx(q).unwrap() {
        CtxAnswer::State {
            flags,
            reset_status,
            ..
        } => (flags, reset_status),
        other => panic!("{other:?}"),
    }
}

#[test]
fn gem_ioctls_answer_with_the_kernels_errnos() {
    let model = model(Preset::Gfx900, 1);
    let c = Client::new(&model);
    let r = render(&c);
    assert_errno(r.gem_create(0, 0, GTT, 0), Errno::EINVAL, "size 0");
    assert_errno(
        r.gem_create(4096, 0, 0x40, 0),
        Errno::EINVAL,
        "unknown domain",
    );
    assert_errno(
        r.gem_create(4096, 0, GTT, 1 << 40),
        Errno::EINVAL,
        "unknown flag",
    );
    assert_errno(
        r.gem_create(4096, 0, AMDGPU_GEM_DOMAIN_GDS, 0),
        Errno::EINVAL,
        "GDS",
    );
    let a = r.gem_create(5000, 0, GTT, 0).unwrap();
    let b = r.gem_create(4096, 0, AMDGPU_GEM_DOMAIN_VRAM, 0).unwrap();
    assert_eq!((a, b), (1, 2), "handles count from 1");
    assert_eq!(
        r.gem_objects(),
        vec![(1, 8192), (2, 4096)],
        "sizes are page aligned"
    );
    assert_errno(r.gem_mmap_offset(9), Errno::ENOENT, "mmap of no object");
    let off = r.gem_mmap_offset(a).unwrap();
    assert_eq!(
        r.mmap(off, 8192).unwrap().len,
        8192,
        "the render node maps it"
    );
    assert_errno(r.mmap(off, 8193).map(|_| ()), Errno::EINVAL, "past the end");

    // GEM_VA.
    let va = 0x1_0000_0000;
    let map = |h, v, o, s| r.gem_va(va_req(h, AMDGPU_VA_OP_MAP, v, o, s));
    assert_errno(map(a, 0x8_0000, 0, 4096), Errno::EINVAL, "below 1 MiB");
    assert_errno(map(a, va + 1, 0, 4096), Errno::EINVAL, "unaligned VA");
    assert_errno(map(a, va, 0, 4095), Errno::EINVAL, "unaligned size");
    assert_errno(map(a, va, 4096, 8192), Errno::EINVAL, "past the object");
    assert_errno(map(7, va, 0, 4096), Errno::ENOENT, "no such object");
    assert_errno(map(a, 1 << 47, 0, 4096), Errno::EINVAL, "in the VA hole");
    assert_errno(
        r.gem_va(va_req(a, 9, va, 0, 4096)),
        Errno::EINVAL,
        "unknown operation",
    );
    map(a, va, 0, 8192).unwrap();
    assert_errno(map(b, va + 4096, 0, 4096), Errno::EINVAL, "overlap");
    map(b, va + 8192, 0, 4096).unwrap();
    assert_eq!(r.gem_va_mappings(), 2);
    assert_errno(
        r.gem_va(va_req(a, AMDGPU_VA_OP_UNMAP, va + 8192, 0, 4096)),
        Errno::ENOENT,
        "unmap of another object's mapping",
    );
    r.gem_va(va_req(b, AMDGPU_VA_OP_UNMAP, va + 8192, 0, 4096))
        .unwrap();
    // CLEAR removes what lies in the range, whatever object.
    map(b, va + 8192, 0, 4096).unwrap();
    r.gem_va(va_req(0, AMDGPU_VA_OP_CLEAR, va, 0, 3 * 4096))
        .unwrap();
    assert_eq!(r.gem_va_mappings(), 0);
    // Closing an object drops its mappings.
    map(a, va, 0, 8192).unwrap();
    r.gem_close(a).unwrap();
    assert_eq!(r.gem_va_mappings(), 0);
    assert_errno(r.gem_close(a), Errno::EINVAL, "closed twice");
    assert_errno(r.gem_mmap_offset(a), Errno::ENOENT, "closed");
    assert_errno(
        r.prime_handle_to_fd(b, 0x1000).map(|_| ()),
        Errno::EINVAL,
        "unknown prime flag",
    );
    assert_errno(
        r.prime_handle_to_fd(a, 0).map(|_| ()),
        Errno::ENOENT,
        "export of a closed handle",
    );
    // A VRAM object holds VRAM until closed.
    let before = c.node().vram_available();
    r.gem_close(b).unwrap();
    assert_eq!(c.node().vram_available(), before + 4096);
}

fn dmabuf_info(c: &Client, fd: i32) -> Result<kfd_ioctl_get_dmabuf_info_args, Errno> {
    let mut a = kfd_ioctl_get_dmabuf_info_args {
        dmabuf_fd: fd as u32,
        ..Default::default()
    };
    // SAFETY: `metadata_ptr` is 0: the model writes metadata only through a non-null
    // `metadata_ptr`; the argument carries no other address.
    unsafe { ioctl_unchecked::<GetDmabufInfo>(&c.p, &mut a) }.map(|_| a)
}

#[test]
fn a_gem_buffer_exported_as_dma_buf_is_imported_mapped_and_written_by_the_gpu() {
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let c = Client::new(&model);
    let r = render(&c);
    let size = 64 << 10;
    let h = r
        .gem_create(size, 0, GTT, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED)
        .unwrap();
    let cpu = r.mmap(r.gem_mmap_offset(h).unwrap(), size).unwrap();
    cpu.memory
        .write(cpu.offset as usize + 4, &7u32.to_ne_bytes());
    let fd = r
        .prime_handle_to_fd(h, (libc::O_CLOEXEC | libc::O_RDWR) as u32)
        .unwrap();
    // SAFETY: the descriptor was just created for this test, which now owns it.
    let dmabuf = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: F_GETFD on the descriptor this test owns.
    let fd_flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    assert_eq!(fd_flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC, "DRM_CLOEXEC");

    let info = dmabuf_info(&c, fd).unwrap();
    assert_eq!(info.size, size);
    assert_eq!(info.gpu_id, c.gpu());
    assert_eq!(
        info.flags,
        KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC
    );
    assert_eq!(info.metadata_size, 0);
    assert_errno(dmabuf_info(&c, 100_000), Errno::EBADF, "not a descriptor");
    let (pipe_r, pipe_w) = nix::unistd::pipe().unwrap();
    assert_errno(
        dmabuf_info(&c, std::os::fd::AsRawFd::as_raw_fd(&pipe_r)),
        Errno::EINVAL,
        "not an amdgpu dma-buf",
    );
    drop((pipe_r, pipe_w));

    let va = 0x7_0000_0000;
    let mut imp = kfd_ioctl_import_dmabuf_args {
        va_addr: va,
        gpu_id: 0xdead,
        dmabuf_fd: fd as u32,
        ..Default::default()
    };
    assert_errno(
        c.p.call::<ImportDmabuf>(&mut imp),
        Errno::EINVAL,
        "unknown gpu",
    );
    imp.gpu_id = c.gpu();
    c.p.call::<ImportDmabuf>(&mut imp).unwrap();
    assert_eq!(
        imp.handle >> 32,
        u64::from(c.gpu()),
        "a KFD handle of that GPU"
    );
    let ids = [c.gpu()];
    let mut m = kfd_ioctl_map_memory_to_gpu_args {
        handle: imp.handle,
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: 1,
        n_success: 0,
    };
    c.p.call::<MapMemoryToGpu>(&mut m).unwrap();

    // The graphics handle goes; the import keeps the buffer.
    r.gem_close(h).unwrap();
    let (_, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
    let mut ring = RingWriter::pm4(&q);
    ring.push(&q, &WriteData::memory(va + 32, &[0xab0c_0de5]).unwrap());
    c.submit(&q, ring.wptr());
    model.run_until_idle();
    let mut word = [0u8; 4];
    cpu.memory
        .read(cpu.offset as usize + 32, &mut word)
        .unwrap();
    assert_eq!(
        u32::from_ne_bytes(word),
        0xab0c_0de5,
        "the CPU map sees the GPU's write"
    );
    cpu.memory.read(cpu.offset as usize + 4, &mut word).unwrap();
    assert_eq!(u32::from_ne_bytes(word), 7);
    // The dma-buf maps the same memory.
    // SAFETY: a fresh read-only shared mapping of the dma-buf, unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: `p` maps `size` bytes; offset 32 is inside.
    let seen = unsafe { std::ptr::read_volatile(p.cast::<u8>().add(32).cast::<u32>()) };
    // SAFETY: unmaps the mapping made above.
    unsafe { libc::munmap(p, size as usize) };
    assert_eq!(seen, 0xab0c_0de5);
    drop(dmabuf);
}

/// `GEM_METADATA` set on a buffer object reaches an importer through KFD's
/// `GET_DMABUF_INFO` (kfdtest's `KFDGraphicsInterop.RegisterGraphicsHandle` reads back 26
/// bytes), and `GEM_OP(GET_GEM_CREATE_INFO)` says how the buffer was created.
#[test]
fn metadata_set_on_a_gem_buffer_reaches_kfds_dmabuf_info() {
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let c = Client::new(&model);
    let r = render(&c);
    let h = r
        .gem_create(
            8192,
            5000,
            AMDGPU_GEM_DOMAIN_VRAM,
            AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED,
        )
        .unwrap();
    assert_eq!(
        r.gem_create_info(h).unwrap(),
        GemCreateInfo {
            bo_size: 8192,
            alignment: 8192,
            domains: AMDGPU_GEM_DOMAIN_VRAM,
            domain_flags: AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED,
        },
        "the alignment in whole pages"
    );
    assert_eq!(r.gem_metadata(h).unwrap(), BoMetadata::default());
    let umd = b"This data is really meta.\0".to_vec();
    let metadata = BoMetadata {
        flags: 0,
        tiling_info: 0x1234,
        data: umd.clone(),
    };
    r.gem_set_metadata(h, metadata.clone()).unwrap();
    assert_eq!(r.gem_metadata(h).unwrap(), metadata);
    let too_long = BoMetadata {
        data: vec![1; AMDGPU_GEM_METADATA_MAX_SIZE + 1],
        ..Default::default()
    };
    assert_errno(r.gem_set_metadata(h, too_long), Errno::EINVAL, "257 bytes");
    assert_errno(r.gem_metadata(99), Errno::ENOENT, "no handle");
    assert_errno(r.gem_create_info(99), Errno::ENOENT, "no handle");

    let fd = r.prime_handle_to_fd(h, libc::O_CLOEXEC as u32).unwrap();
    // SAFETY: the descriptor was just created for this test, which now owns it.
    let _dmabuf = unsafe { OwnedFd::from_raw_fd(fd) };
    let info = dmabuf_info(&c, fd).unwrap();
    assert_eq!(
        info.metadata_size, 26,
        "the size without a buffer to copy to"
    );
    let mut room = [0xEEu8; 64];
    let mut a = kfd_ioctl_get_dmabuf_info_args {
        dmabuf_fd: fd as u32,
        metadata_ptr: room.as_mut_ptr() as u64,
        metadata_size: room.len() as u32,
        ..Default::default()
    };
    // SAFETY: `metadata_ptr` is `room`, 64 bytes of this test, untouched until the call returns;
    // the model writes the metadata there only when it fits in `metadata_size` (64).
    unsafe { ioctl_unchecked::<GetDmabufInfo>(&c.p, &mut a) }.unwrap();
    assert_eq!(a.metadata_size, 26);
    assert_eq!(&room[..26], &umd[..]);
    assert_eq!(room[26], 0xEE, "nothing past the metadata is written");
    assert_eq!(
        a.flags,
        KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC
    );
    let mut small = kfd_ioctl_get_dmabuf_info_args {
        dmabuf_fd: fd as u32,
        metadata_ptr: room.as_mut_ptr() as u64,
        metadata_size: 25,
        ..Default::default()
    };
    assert_errno(
        // SAFETY: `metadata_ptr` is `room` (64 bytes of this test) but `metadata_size` is 25, less
        // than the metadata: the model refuses (EINVAL) before writing through it.
        unsafe { ioctl_unchecked::<GetDmabufInfo>(&c.p, &mut small) },
        Errno::EINVAL,
        "less room than the metadata",
    );
    r.gem_set_metadata(h, BoMetadata::default()).unwrap();
    assert_eq!(dmabuf_info(&c, fd).unwrap().metadata_size, 0, "cleared");
}

/// `GEM_OP(SET_PLACEMENT)` changes a buffer's preferred and allowed domains: the VRAM, GTT
/// and CPU bits of the value are kept and the rest dropped, VRAM alone may also go to GTT,
/// and `GET_GEM_CREATE_INFO` and KFD's `GET_DMABUF_INFO` report the new preferred domain.
#[test]
fn set_placement_changes_the_domains_a_buffer_reports() {
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let c = Client::new(&model);
    let r = render(&c);
    let vram = AMDGPU_GEM_DOMAIN_VRAM;
    let h = r.gem_create(4096, 0, vram, 0).unwrap();
    let fd = r.prime_handle_to_fd(h, libc::O_CLOEXEC as u32).unwrap();
    // SAFETY: the descriptor was just created for this test, which now owns it.
    let _dmabuf = unsafe { OwnedFd::from_raw_fd(fd) };
    assert_eq!(
        dmabuf_info(&c, fd).unwrap().flags,
        KFD_IOC_ALLOC_MEM_FLAGS_VRAM
    );

    let p = r.gem_set_placement(h, GTT).unwrap();
    assert_eq!(
        p,
        Placement {
            preferred_domains: GTT,
            allowed_domains: GTT
        }
    );
    assert_eq!(r.gem_create_info(h).unwrap().domains, GTT);
    assert_eq!(
        dmabuf_info(&c, fd).unwrap().flags,
        KFD_IOC_ALLOC_MEM_FLAGS_GTT,
        "KFD sees the new preferred domain"
    );

    // GDS (0x8), OA (0x20) and an undefined bit (0x100) are dropped, not refused.
    let p = r
        .gem_set_placement(
            h,
            vram | AMDGPU_GEM_DOMAIN_GDS | AMDGPU_GEM_DOMAIN_OA | 0x100,
        )
        .unwrap();
    assert_eq!(
        p,
        Placement {
            preferred_domains: 0x4,
            allowed_domains: 0x6
        },
        "VRAM alone may also go to GTT"
    );
    assert_eq!(r.gem_create_info(h).unwrap().domains, 0x4);

    let p = r
        .gem_set_placement(h, vram | AMDGPU_GEM_DOMAIN_CPU)
        .unwrap();
    assert_eq!(p.allowed_domains, 0x5, "VRAM with CPU: no GTT added");
    let p = r.gem_set_placement(h, 0).unwrap();
    assert_eq!((p.preferred_domains, p.allowed_domains), (0, 0));
    assert_eq!(r.gem_create_info(h).unwrap().domains, 0);

    assert_errno(r.gem_set_placement(99, GTT), Errno::ENOENT, "no handle");
    r.gem_close(h).unwrap();
    assert_errno(r.gem_set_placement(h, GTT), Errno::ENOENT, "closed handle");
}

/// kfdtest's `KFDEvictTest` submission path: a context, a BO list, SDMA IBs submitted with
/// `CS` (sequence numbers from 1) that run through the file's GPU VM, `WAIT_CS` for them.
#[test]
fn an_sdma_ib_submitted_on_a_context_runs_through_the_files_vm() {
    use kfd_model::cs::*;
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let c = Client::new(&model);
    let r = render(&c);
    let (ib_va, target_va) = (0x10_0000_0000, 0x10_0010_0000);
    let ib = r.gem_create(4096, 0, GTT, 0).unwrap();
    let target = r.gem_create(4096, 0, GTT, 0).unwrap();
    r.gem_va(va_req(ib, AMDGPU_VA_OP_MAP, ib_va, 0, 4096))
        .unwrap();
    r.gem_va(va_req(target, AMDGPU_VA_OP_MAP, target_va, 0, 4096))
        .unwrap();
    let ib_cpu = r.mmap(r.gem_mmap_offset(ib).unwrap(), 4096).unwrap();
    let target_cpu = r.mmap(r.gem_mmap_offset(target).unwrap(), 4096).unwrap();
    // SDMA WRITE_LINEAR of one dword (count field = dwords - 1), then NOPs.
    let words = sdma_write_dword_ib(target_va, 0x600d_cafe);
    ib_cpu
        .memory
        .write(ib_cpu.offset as usize, words.as_bytes())
        .unwrap();

    let ctx = new_ctx(r);
    assert_errno(
        r.bo_list(AMDGPU_BO_LIST_OP_CREATE, 0, vec![ib, 77]),
        Errno::ENOENT,
        "handle 77",
    );
    let list = r
        .bo_list(AMDGPU_BO_LIST_OP_CREATE, 0, vec![ib, target])
        .unwrap();
    assert_eq!(list, 1);
    let request = CsRequest {
        ctx_id: ctx,
        bo_list_handle: list,
        ibs: vec![CsIb {
            va_start: ib_va,
            ib_bytes: 32,
            ip_type: AMDGPU_HW_IP_DMA,
            ..Default::default()
        }],
        num_chunks: 1,
        ..Default::default()
    };
    let ring = (AMDGPU_HW_IP_DMA, 0, 0);
    assert_eq!(r.cs_submit(&request), Ok(1));
    assert_eq!(
        target_cpu.memory.load_u32(target_cpu.offset as usize),
        Some(0x600d_cafe),
        "the IB's WRITE reached the target through the file's VM"
    );
    assert_eq!(r.cs_submit(&request), Ok(2));
    assert_eq!(r.wait_cs(ctx, ring, 2), Ok(true));
    assert_errno(r.wait_cs(ctx, ring, 3), Errno::EINVAL, "not handed out");
    assert_errno(
        r.wait_cs(ctx + 1, ring, 1),
        Errno::EINVAL,
        "no such context",
    );
    let mut bad = request.clone();
    bad.ctx_id = ctx + 1;
    assert_errno(r.cs_submit(&bad), Errno::EINVAL, "no such context");
    bad.ctx_id = ctx;
    bad.bo_list_handle = 5;
    assert_errno(r.cs_submit(&bad), Errno::ENOENT, "no such BO list");

    // The same write to an address the file's VM does not map: the SDMA engine faults. As for
    // a PM4 IB that cannot run, the fence signals (3), the IBs after it in the submission do
    // not run (their fences signal: 4), and the context is guilty.
    let unmapped = 0x50_0000_0000u64;
    let mut faulting = words;
    faulting[1] = unmapped as u32;
    faulting[2] = (unmapped >> 32) as u32;
    faulting[4] = 0xbad;
    ib_cpu
        .memory
        .write(ib_cpu.offset as usize + 64, faulting.as_bytes())
        .unwrap();
    target_cpu
        .memory
        .write(target_cpu.offset as usize, &[0; 4])
        .unwrap();
    let mut two = request.clone();
    two.ibs[0].va_start = ib_va + 64;
    two.ibs.push(request.ibs[0]);
    two.num_chunks = 2;
    assert_eq!(r.cs_submit(&two), Ok(4));
    assert_eq!(r.wait_cs(ctx, ring, 4), Ok(true));
    assert_eq!(
        target_cpu.memory.load_u32(target_cpu.offset as usize),
        Some(0),
        "the IB after the faulting one did not run"
    );
    assert_eq!(
        query(r, AMDGPU_CTX_OP_QUERY_STATE2, ctx).0,
        AMDGPU_CTX_QUERY2_FLAGS_RESET | AMDGPU_CTX_QUERY2_FLAGS_GUILTY
    );
    assert_errno(r.cs_submit(&request), Errno::ECANCELED, "a guilty context");
    assert_eq!(r.bo_list(AMDGPU_BO_LIST_OP_DESTROY, list, vec![]), Ok(0));
}

/// A compute-ring IB (`AMDGPU_HW_IP_COMPUTE`) runs through the CP's PM4 processor when it is
/// submitted: its WRITE_DATA lands through the file's VM, its NOPs are skipped, the fence has
/// sequence number 1 and `WAIT_CS` finds it signalled; a GFX-ring IB runs the same way. A
/// packet the model does not decode fails the submission with `EINVAL` rather than hang.
#[test]
fn a_compute_ib_submitted_on_a_context_runs_its_pm4_packets() {
    use kfd_model::cs::*;
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let c = Client::new(&model);
    let r = render(&c);
    let (ib_va, target_va) = (0x20_0000_0000, 0x20_0010_0000);
    let ib = r.gem_create(4096, 0, GTT, 0).unwrap();
    let target = r.gem_create(4096, 0, GTT, 0).unwrap();
    r.gem_va(va_req(ib, AMDGPU_VA_OP_MAP, ib_va, 0, 4096))
        .unwrap();
    r.gem_va(va_req(target, AMDGPU_VA_OP_MAP, target_va, 0, 4096))
        .unwrap();
    let ib_cpu = r.mmap(r.gem_mmap_offset(ib).unwrap(), 4096).unwrap();
    let target_cpu = r.mmap(r.gem_mmap_offset(target).unwrap(), 4096).unwrap();
    let write_ib = |dwords: &[u32]| {
        ib_cpu
            .memory
            .write(ib_cpu.offset as usize, dwords.as_bytes())
            .unwrap();
    };
    let mut words = [0u32; 16];
    let mut w = pm4::writer::PacketWriter::new(&mut words);
    w.push(&WriteData::memory(target_va + 8, &[0x1234_5678, 0x9abc_def0]).unwrap())
        .unwrap();
    w.nop(4).unwrap();
    let len = w.len();
    write_ib(&words[..len]);

    let ctx = new_ctx(r);
    let on = |ip_type: u32, ring: u32, dwords: usize| CsRequest {
        ctx_id: ctx,
        ibs: vec![CsIb {
            va_start: ib_va,
            ib_bytes: dwords as u32 * 4,
            ip_type,
            ring,
            ..Default::default()
        }],
        num_chunks: 1,
        ..Default::default()
    };
    assert_eq!(r.cs_submit(&on(AMDGPU_HW_IP_COMPUTE, 1, len)), Ok(1));
    let load = |at: usize| target_cpu.memory.load_u32(target_cpu.offset as usize + at);
    assert_eq!(load(8), Some(0x1234_5678), "WRITE_DATA's first dword");
    assert_eq!(load(12), Some(0x9abc_def0), "and its second");
    assert_eq!(load(16), Some(0), "nothing past it");
    assert_eq!(r.wait_cs(ctx, (AMDGPU_HW_IP_COMPUTE, 0, 1), 1), Ok(true));
    assert_errno(
        r.wait_cs(ctx, (AMDGPU_HW_IP_COMPUTE, 0, 1), 2),
        Errno::EINVAL,
        "not handed out",
    );

    // The same IB on the GFX ring: its own sequence numbers.
    target_cpu
        .memory
        .write(target_cpu.offset as usize + 8, &[0u8; 8])
        .unwrap();
    assert_eq!(r.cs_submit(&on(AMDGPU_HW_IP_GFX, 0, len)), Ok(1));
    assert_eq!(load(8), Some(0x1234_5678));
    assert_eq!(r.wait_cs(ctx, (AMDGPU_HW_IP_GFX, 0, 0), 1), Ok(true));
    assert_errno(
        r.cs_submit(&on(AMDGPU_HW_IP_GFX, 1, len)),
        Errno::EINVAL,
        "one GFX ring",
    );

    // A type-3 packet with an opcode the model does not know (0xEE), count 0: a job the GPU
    // would hang on. Its fence signals (sequence number 2) and the context turns guilty
    // (QUERY_STATE2: RESET | GUILTY; QUERY_STATE: UNKNOWN_RESET once) and takes no more
    // submissions (ECANCELED).
    write_ib(&[0xC000_EE00, 0]);
    assert_eq!(r.cs_submit(&on(AMDGPU_HW_IP_COMPUTE, 1, 2)), Ok(2));
    assert_eq!(r.wait_cs(ctx, (AMDGPU_HW_IP_COMPUTE, 0, 1), 2), Ok(true));
    assert_eq!(
        query(r, AMDGPU_CTX_OP_QUERY_STATE2, ctx),
        (
            AMDGPU_CTX_QUERY2_FLAGS_RESET | AMDGPU_CTX_QUERY2_FLAGS_GUILTY,
            0
        )
    );
    assert_eq!(
        query(r, AMDGPU_CTX_OP_QUERY_STATE, ctx),
        (0, AMDGPU_CTX_UNKNOWN_RESET)
    );
    assert_eq!(
        query(r, AMDGPU_CTX_OP_QUERY_STATE, ctx),
        (0, AMDGPU_CTX_NO_RESET),
        "reported once"
    );
    write_ib(&words[..len]);
    assert_errno(
        r.cs_submit(&on(AMDGPU_HW_IP_COMPUTE, 1, len)),
        Errno::ECANCELED,
        "a guilty context",
    );

    // An IB that ends inside a packet (the WRITE_DATA's last dword is cut off) is the same
    // kind of failure, on a fresh context; what CS checks before running (a ring that does
    // not exist) is EINVAL and leaves the context innocent.
    let ctx = new_ctx(r);
    let on = |ip_type: u32, ring: u32, dwords: usize| CsRequest {
        ctx_id: ctx,
        ..on(ip_type, ring, dwords)
    };
    assert_errno(
        r.cs_submit(&on(AMDGPU_HW_IP_COMPUTE, 8, len)),
        Errno::EINVAL,
        "8 compute rings",
    );
    assert_eq!(query(r, AMDGPU_CTX_OP_QUERY_STATE2, ctx), (0, 0));
    assert_eq!(r.cs_submit(&on(AMDGPU_HW_IP_COMPUTE, 1, 5)), Ok(1));
    assert_eq!(
        query(r, AMDGPU_CTX_OP_QUERY_STATE2, ctx).0,
        AMDGPU_CTX_QUERY2_FLAGS_RESET | AMDGPU_CTX_QUERY2_FLAGS_GUILTY
    );
}
