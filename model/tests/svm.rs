//! The SVM API (`AMDKFD_IOC_SVM`, `SET_XNACK_MODE`): ranges that split and join, every
//! attribute and errno, GET_ATTR over several ranges, migration with the bytes intact, queues
//! evicted around a migration, CPU unmap, and XNACK-on recoverable faults from SDMA and from
//! a kernel's loads, stores and atomics.

mod common;
mod opencl;

use common::*;
use kfd_model::svm::{SvmAttributes, DEFAULT_FLAGS};
use kfd_model::{Errno, KResult, Model, ModelConfig, Preset, QueueError};
use kfd_sys::*;
use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};
use pm4::sdma::SdmaWrite;
use std::ptr::NonNull;

const PAGE: u64 = 4096;

fn stepped(preset: Preset, gpus: u32) -> Model {
    model_with(
        ModelConfig::new(preset)
            .with_gpus(gpus)
            .with_engine_thread(false),
    )
}

/// Anonymous memory of `pages` pages, unmapped on drop (unless already unmapped).
struct Anon {
    base: u64,
    len: u64,
}

impl Anon {
    fn new(pages: u64) -> Anon {
        let len = std::num::NonZeroUsize::new((pages * PAGE) as usize).unwrap();
        // SAFETY: a fresh private mapping the test owns.
        let p = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .unwrap();
        Anon {
            base: p.as_ptr() as u64,
            len: pages * PAGE,
        }
    }
    fn at(&self, page: u64) -> u64 {
        self.base + page * PAGE
    }
    fn end(&self) -> u64 {
        self.base + self.len
    }
    fn read_u32(&self, off: u64) -> u32 {
        // SAFETY: inside the mapping; the GPU model is idle while the test reads.
        unsafe { std::ptr::read_volatile((self.base + off) as *const u32) }
    }
    fn write_u32(&self, off: u64, v: u32) {
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile((self.base + off) as *mut u32, v) }
    }
    fn unmap(&mut self) {
        if self.len != 0 {
            // SAFETY: the mapping made in `new`.
            unsafe {
                munmap(
                    NonNull::new(self.base as *mut _).unwrap(),
                    self.len as usize,
                )
            }
            .unwrap();
            self.len = 0;
        }
    }
}

impl Drop for Anon {
    fn drop(&mut self) {
        self.unmap();
    }
}

/// Whether the CPU maps any page of `[addr, addr + len)`: another test thread may map
/// addresses a test just unmapped, so a test that needs a span left unmapped checks it still
/// is after the driver looked (and tries again with a new span otherwise).
fn cpu_maps_any(addr: u64, len: u64) -> bool {
    (0..len / PAGE).any(|p| {
        let page = NonNull::new((addr + p * PAGE) as *mut std::ffi::c_void).unwrap();
        // SAFETY: msync only looks the page up (MS_ASYNC writes nothing back for private
        // memory); an unmapped page is ENOMEM.
        unsafe { nix::sys::mman::msync(page, PAGE as usize, nix::sys::mman::MsFlags::MS_ASYNC) }
            .is_ok()
    })
}

/// Runs `f` on a fresh `pages`-page mapping whose pages `holes` were unmapped again; retried
/// on a new mapping while another thread mapped a hole again before `f` returned.
fn with_holes<T>(pages: u64, holes: &[u64], mut f: impl FnMut(u64) -> T) -> T {
    for _ in 0..50 {
        let mem = Anon::new(pages);
        for &h in holes {
            // SAFETY: a page of the test's own mapping; `mem` unmaps the rest (munmap of an
            // already unmapped page is not an error).
            unsafe { munmap(NonNull::new(mem.at(h) as *mut _).unwrap(), PAGE as usize) }.unwrap();
        }
        let r = f(mem.base);
        if !holes.iter().any(|&h| cpu_maps_any(mem.at(h), PAGE)) {
            return r;
        }
    }
    panic!("50 times another thread mapped the test's unmapped pages again");
}

fn attr(r#type: u32, value: u32) -> kfd_ioctl_svm_attribute {
    kfd_ioctl_svm_attribute { r#type, value }
}

/// AMDKFD_IOC_SVM the way libhsakmt issues it: the attributes follow the header and their
/// size is added to the request's size field. Returns the attributes as the model left them.
fn svm_raw(
    c: &Client,
    op: u32,
    start: u64,
    size: u64,
    nattr: u32,
    attrs: &[kfd_ioctl_svm_attribute],
) -> (KResult<i32>, Vec<kfd_ioctl_svm_attribute>) {
    let head = kfd_ioctl_svm_args {
        start_addr: start,
        size,
        op,
        nattr,
        attrs: [],
    };
    let mut bytes = head.as_bytes().to_vec();
    for a in attrs {
        bytes.extend_from_slice(a.as_bytes());
    }
    let request = with_size(AMDKFD_IOC_SVM, bytes.len()).expect("the attributes fit");
    // SAFETY: the ranges passed are the test's own anonymous memory (or addresses the model
    // must refuse); they outlive the GPU's use of them.
    let r = unsafe { c.p.ioctl(request, &mut bytes) };
    let out = bytes[24..]
        .chunks_exact(8)
        .map(|ch| kfd_ioctl_svm_attribute::read_from_bytes(ch).unwrap())
        .collect();
    (r, out)
}

fn set(c: &Client, start: u64, size: u64, attrs: &[kfd_ioctl_svm_attribute]) -> KResult<i32> {
    svm_raw(
        c,
        KFD_IOCTL_SVM_OP_SET_ATTR,
        start,
        size,
        attrs.len() as u32,
        attrs,
    )
    .0
}

fn get(
    c: &Client,
    start: u64,
    size: u64,
    attrs: &[kfd_ioctl_svm_attribute],
) -> KResult<Vec<kfd_ioctl_svm_attribute>> {
    let (r, out) = svm_raw(
        c,
        KFD_IOCTL_SVM_OP_GET_ATTR,
        start,
        size,
        attrs.len() as u32,
        attrs,
    );
    r.map(|_| out)
}

fn get_one(c: &Client, start: u64, size: u64, r#type: u32, value: u32) -> (u32, u32) {
    let a = get(c, start, size, &[attr(r#type, value)]).unwrap()[0];
    (a.r#type, a.value)
}

fn xnack(c: &Client, mode: i32) -> KResult<i32> {
    let mut a = kfd_ioctl_set_xnack_mode_args {
        xnack_enabled: mode,
    };
    let r = c.p.call::<SetXnackMode>(&mut a);
    r.map(|_| a.xnack_enabled)
}

fn ranges(c: &Client) -> Vec<(u64, u64, u32, SvmAttributes)> {
    c.p.svm_ranges()
}

/// One SDMA WRITE of `data` at `va`, run to idle.
fn sdma_write(c: &Client, q: &QueueBufs, ring: &mut RingWriter, va: u64, data: &[u32]) {
    ring.push(q, &SdmaWrite::new(va, data).unwrap());
    c.submit(q, ring.wptr());
    c.model.run_until_idle();
}

#[test]
fn the_topology_advertises_the_svm_api_on_every_preset() {
    for preset in [Preset::Gfx900, Preset::Gfx90a] {
        let m = stepped(preset, 1);
        let gpu = m.topology().gpus().next().unwrap();
        assert_ne!(
            gpu.properties.capability & u64::from(sysfs::HSA_CAP_SVMAPI_SUPPORTED),
            0,
            "{preset:?}"
        );
    }
}

#[test]
fn header_and_attribute_errnos() {
    let m = stepped(Preset::Gfx90a, 2);
    let c = Client::new(&m);
    let mem = Anon::new(8);
    let (a, b) = (c.gpus[0], c.gpus[1]);
    let ok = [attr(KFD_IOCTL_SVM_ATTR_ACCESS, a)];
    // The header: page-aligned, non-zero start and size, a known op.
    assert_errno(
        set(&c, mem.base + 8, PAGE, &ok),
        Errno::EINVAL,
        "unaligned start",
    );
    assert_errno(set(&c, mem.base, 100, &ok), Errno::EINVAL, "unaligned size");
    assert_errno(set(&c, 0, PAGE, &ok), Errno::EINVAL, "start 0");
    assert_errno(set(&c, mem.base, 0, &ok), Errno::EINVAL, "size 0");
    assert_errno(
        svm_raw(&c, 2, mem.base, PAGE, 1, &ok).0,
        Errno::EINVAL,
        "op 2",
    );
    assert_errno(
        svm_raw(&c, KFD_IOCTL_SVM_OP_SET_ATTR, mem.base, PAGE, 3, &ok).0,
        Errno::EINVAL,
        "more attributes than the request carries",
    );
    // SET_ATTR's attribute checks.
    for (bad, what) in [
        (attr(8, 0), "unknown type 8"),
        (
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, 0x1234),
            "ACCESS to an unknown GPU",
        ),
        (
            attr(KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, 0x1234),
            "ACCESS_IN_PLACE to an unknown GPU",
        ),
        (
            attr(KFD_IOCTL_SVM_ATTR_NO_ACCESS, 0x1234),
            "NO_ACCESS to an unknown GPU",
        ),
        (
            attr(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 0x1234),
            "preferred location unknown GPU",
        ),
        (
            attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0x1234),
            "prefetch location unknown GPU",
        ),
        (
            attr(
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC,
                KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            ),
            "prefetch to UNDEFINED",
        ),
    ] {
        assert_errno(set(&c, mem.base, PAGE, &[bad]), Errno::EINVAL, what);
    }
    assert!(ranges(&c).is_empty(), "a refused SET_ATTR leaves no range");
    // Accepted: preferred UNDEFINED or system memory, any flags, any granularity.
    set(
        &c,
        mem.base,
        PAGE,
        &[
            attr(
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC,
                KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            ),
            attr(
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC,
                KFD_IOCTL_SVM_LOCATION_SYSMEM,
            ),
            attr(KFD_IOCTL_SVM_ATTR_SET_FLAGS, 0xFFFF_FF00),
            attr(KFD_IOCTL_SVM_ATTR_CLR_FLAGS, 0xFFFF_FF00),
            attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 1000),
            attr(KFD_IOCTL_SVM_ATTR_NO_ACCESS, b),
        ],
    )
    .unwrap();
    assert_eq!(
        get_one(&c, mem.base, PAGE, KFD_IOCTL_SVM_ATTR_GRANULARITY, 0).1,
        0x3F,
        "granularity clamped to 0x3F"
    );
    // GET_ATTR refuses the two access types it writes, and unknown GPUs.
    for t in [
        KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE,
        KFD_IOCTL_SVM_ATTR_NO_ACCESS,
        9,
    ] {
        assert_errno(
            get(&c, mem.base, PAGE, &[attr(t, a)]),
            Errno::EINVAL,
            "GET type",
        );
    }
    assert_errno(
        get(
            &c,
            mem.base,
            PAGE,
            &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, 0x1234)],
        ),
        Errno::EINVAL,
        "GET ACCESS of an unknown GPU",
    );
    // A span the CPU does not map: EFAULT, for SET and GET.
    let (set_gone, get_gone) = with_holes(1, &[0], |gone| {
        let granularity = [attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0)];
        (set(&c, gone, PAGE, &ok), get(&c, gone, PAGE, &granularity))
    });
    assert_errno(set_gone, Errno::EFAULT, "SET unmapped");
    assert_errno(get_gone, Errno::EFAULT, "GET unmapped");
    assert_errno(
        with_holes(3, &[1], |holed| set(&c, holed, 3 * PAGE, &ok)),
        Errno::EFAULT,
        "span with a hole",
    );
    // Memory the CPU cannot write (here: PROT_READ) is refused rather than faulting the host.
    let ro = Anon::new(1);
    // SAFETY: the test's own page.
    unsafe {
        nix::sys::mman::mprotect(
            NonNull::new(ro.base as *mut _).unwrap(),
            PAGE as usize,
            ProtFlags::PROT_READ,
        )
    }
    .unwrap();
    assert_errno(
        set(&c, ro.base, PAGE, &ok),
        Errno::EFAULT,
        "read-only memory",
    );
    // A span holding a KFD buffer: EADDRINUSE; and a buffer over an SVM range: EADDRINUSE.
    let buf = c.gtt(PAGE);
    // The CPU maps the buffer's VA too (as libhsakmt maps a BO at its GPU VA).
    // SAFETY: a fresh mapping at an address nothing of this process uses (NOREPLACE).
    let cpu_view = unsafe {
        mmap_anonymous(
            std::num::NonZeroUsize::new(buf.va as usize),
            std::num::NonZeroUsize::new(PAGE as usize).unwrap(),
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_FIXED_NOREPLACE,
        )
    }
    .unwrap();
    assert_errno(
        set(&c, buf.va, PAGE, &ok),
        Errno::EADDRINUSE,
        "SVM over a buffer",
    );
    assert_errno(
        get(&c, buf.va, PAGE, &[attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0)]),
        Errno::EADDRINUSE,
        "GET over a buffer",
    );
    // SAFETY: the mapping just made.
    unsafe { munmap(cpu_view, PAGE as usize) }.unwrap();
    let mut alloc = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: mem.base,
        size: PAGE,
        gpu_id: a,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    assert_errno(
        // SAFETY: a GTT allocation, no USERPTR flag: the argument carries no user address
        // (`va_addr` is a GPU virtual address; `mmap_offset` is read as one only for USERPTR).
        unsafe { ioctl_unchecked::<AllocMemoryOfGpu>(&c.p, &mut alloc) },
        Errno::EADDRINUSE,
        "buffer over an SVM range",
    );
}

#[test]
fn ranges_split_and_join_and_get_attr_combines_them() {
    let m = stepped(Preset::Gfx90a, 2);
    let c = Client::new(&m);
    let mem = Anon::new(16);
    let (a, b) = (c.gpus[0], c.gpus[1]);
    let all = [
        attr(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 0),
        attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0),
        attr(KFD_IOCTL_SVM_ATTR_SET_FLAGS, 0),
        attr(KFD_IOCTL_SVM_ATTR_CLR_FLAGS, 0),
        attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0),
        attr(KFD_IOCTL_SVM_ATTR_ACCESS, a),
        attr(KFD_IOCTL_SVM_ATTR_ACCESS, b),
    ];
    // No range yet: the defaults (XNACK off: no GPU has access).
    let d = get(&c, mem.base, 16 * PAGE, &all).unwrap();
    assert_eq!(d[0].value, KFD_IOCTL_SVM_LOCATION_UNDEFINED);
    assert_eq!(d[1].value, KFD_IOCTL_SVM_LOCATION_UNDEFINED);
    assert_eq!(d[2].value, DEFAULT_FLAGS);
    assert_eq!(d[3].value, !DEFAULT_FLAGS);
    assert_eq!(d[4].value, 9);
    assert_eq!(d[5].r#type, KFD_IOCTL_SVM_ATTR_NO_ACCESS);
    assert_eq!(d[6].r#type, KFD_IOCTL_SVM_ATTR_NO_ACCESS);

    set(
        &c,
        mem.base,
        16 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, a)],
    )
    .unwrap();
    assert_eq!(ranges(&c).len(), 1);
    // Pages 4..8 read-only with granularity 3, preferred on GPU a: three ranges.
    set(
        &c,
        mem.at(4),
        4 * PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_FLAG_GPU_RO),
            attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 3),
            attr(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, a),
            attr(KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, b),
        ],
    )
    .unwrap();
    let r = ranges(&c);
    assert_eq!(
        r.iter()
            .map(|x| (x.0 - mem.base, x.1 - mem.base))
            .collect::<Vec<_>>(),
        vec![(0, 4 * PAGE), (4 * PAGE, 8 * PAGE), (8 * PAGE, 16 * PAGE)]
    );
    assert_eq!(r[1].3.flags, DEFAULT_FLAGS | KFD_IOCTL_SVM_FLAG_GPU_RO);
    assert_eq!(r[0].3.flags, DEFAULT_FLAGS);

    // Over all three: the flags all have / none has, the smallest granularity, locations that
    // disagree are UNDEFINED, access only what every range grants.
    let g = get(&c, mem.base, 16 * PAGE, &all).unwrap();
    assert_eq!(
        g[0].value, KFD_IOCTL_SVM_LOCATION_UNDEFINED,
        "preferred disagrees"
    );
    assert_eq!(g[2].value, DEFAULT_FLAGS);
    assert_eq!(g[3].value, !(DEFAULT_FLAGS | KFD_IOCTL_SVM_FLAG_GPU_RO));
    assert_eq!(g[4].value, 3);
    assert_eq!(
        g[5].r#type, KFD_IOCTL_SVM_ATTR_ACCESS,
        "a has access everywhere"
    );
    assert_eq!(
        g[6].r#type, KFD_IOCTL_SVM_ATTR_NO_ACCESS,
        "b only in the middle"
    );
    // Over the middle only.
    let g = get(&c, mem.at(4), 4 * PAGE, &all).unwrap();
    assert_eq!(g[0].value, a);
    assert_eq!(g[4].value, 3);
    assert_eq!(g[5].r#type, KFD_IOCTL_SVM_ATTR_ACCESS);
    assert_eq!(g[6].r#type, KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE);
    // Undo the middle's differences: the three ranges join again.
    set(
        &c,
        mem.at(4),
        4 * PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_CLR_FLAGS, KFD_IOCTL_SVM_FLAG_GPU_RO),
            attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 9),
            attr(
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC,
                KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            ),
            attr(KFD_IOCTL_SVM_ATTR_NO_ACCESS, b),
        ],
    )
    .unwrap();
    assert_eq!(ranges(&c).len(), 1);
    assert_eq!(
        (ranges(&c)[0].0, ranges(&c)[0].1),
        (mem.base, mem.base + 16 * PAGE)
    );
}

#[test]
fn xnack_mode_is_per_process_and_refused_while_queues_exist() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    assert_eq!(xnack(&c, -1), Ok(0));
    assert_eq!(xnack(&c, 1), Ok(1));
    assert_eq!(xnack(&c, -1), Ok(1));
    let other = Client::new(&m);
    assert_eq!(
        xnack(&other, -1),
        Ok(0),
        "another process keeps its own mode"
    );
    // XNACK on: a new range is accessible by every GPU.
    let mem = Anon::new(1);
    assert_eq!(
        get_one(&c, mem.base, PAGE, KFD_IOCTL_SVM_ATTR_ACCESS, c.gpu()).0,
        KFD_IOCTL_SVM_ATTR_ACCESS
    );
    let (_q, _) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    assert_errno(xnack(&c, 0), Errno::EBUSY, "queues exist");
    assert_errno(xnack(&c, 1), Errno::EBUSY, "even for the current mode");
    assert_eq!(xnack(&c, -1), Ok(1), "querying still works");
}

#[test]
fn migration_both_ways_keeps_the_bytes_and_the_gpu_mapping_follows() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    let node = c.node();
    let mem = Anon::new(4);
    for i in 0..(4 * PAGE / 4) {
        mem.write_u32(i * 4, 0x5000_0000 + i as u32);
    }
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    let vram_before = node.vram_available();
    set(
        &c,
        mem.base,
        4 * PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu),
        ],
    )
    .unwrap();
    assert_eq!(ranges(&c)[0].2, gpu, "in VRAM");
    assert_eq!(node.vram_available(), vram_before - 4 * PAGE);
    for i in 0..(4 * PAGE / 4) {
        assert_eq!(
            mem.read_u32(i * 4),
            0x5000_0000 + i as u32,
            "CPU view intact at {i}"
        );
    }
    // The GPU writes into the VRAM copy; the CPU sees it.
    sdma_write(&c, &q, &mut ring, mem.base + 0x10, &[0xAB, 0xCD]);
    assert_eq!(c.p.queue_error(qid), None);
    assert_eq!((mem.read_u32(0x10), mem.read_u32(0x14)), (0xAB, 0xCD));
    // Back to system memory.
    set(
        &c,
        mem.base,
        4 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0)],
    )
    .unwrap();
    assert_eq!(ranges(&c)[0].2, 0);
    assert_eq!(node.vram_available(), vram_before);
    assert_eq!((mem.read_u32(0x10), mem.read_u32(0x14)), (0xAB, 0xCD));
    assert_eq!(mem.read_u32(4 * PAGE - 4), 0x5000_0000 + (PAGE - 1) as u32);
    sdma_write(&c, &q, &mut ring, mem.base + 0x20, &[0xEF]);
    assert_eq!(mem.read_u32(0x20), 0xEF, "mapped to system memory again");
    let s = c.p.svm_stats();
    assert_eq!((s.migrations_to_vram, s.migrations_to_ram), (1, 1));
    // Half of it to VRAM: the range splits; the halves live apart.
    set(
        &c,
        mem.at(2),
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu)],
    )
    .unwrap();
    let r = ranges(&c);
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].2, r[1].2), (0, gpu));
    assert_eq!(mem.read_u32(2 * PAGE), 0x5000_0000 + (2 * PAGE / 4) as u32);
    sdma_write(&c, &q, &mut ring, mem.at(2) + 8, &[0x77]);
    assert_eq!(mem.read_u32(2 * PAGE + 8), 0x77);
}

#[test]
fn queues_are_evicted_and_restored_around_a_migration() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    let mem = Anon::new(2);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    set(
        &c,
        mem.base,
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)],
    )
    .unwrap();
    assert_eq!(
        c.p.svm_stats().queue_evictions,
        0,
        "no migration, no eviction"
    );
    let active = c.node().counters().active_queue_count;
    set(
        &c,
        mem.base,
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu)],
    )
    .unwrap();
    let s = c.p.svm_stats();
    assert_eq!((s.queue_evictions, s.queue_restores), (1, 1));
    assert_eq!(c.node().counters().active_queue_count, active, "restored");
    sdma_write(&c, &q, &mut ring, mem.base, &[42]);
    assert_eq!(mem.read_u32(0), 42);
    // Evictions nest: a process evicted by someone else stays evicted after a migration.
    c.p.evict_queues().unwrap();
    set(
        &c,
        mem.base,
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0)],
    )
    .unwrap();
    assert_eq!(c.node().counters().active_queue_count, active - 1);
    c.p.restore_queues().unwrap();
    assert_eq!(c.node().counters().active_queue_count, active);
    sdma_write(&c, &q, &mut ring, mem.base + 4, &[43]);
    assert_eq!(mem.read_u32(4), 43);
    assert_eq!(c.p.queue_error(qid), None);
}

#[test]
fn a_cpu_unmap_drops_the_range_and_the_gpu_mapping() {
    let m = stepped(Preset::Gfx90a, 1);
    // A new process per attempt: another test thread may map the freed addresses again
    // before the driver looks, and then the attempt proves nothing.
    for _ in 0..50 {
        let c = Client::new(&m);
        let gpu = c.gpu();
        let mut mem = Anon::new(4);
        let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
        let mut ring = RingWriter::sdma(&q);
        set(
            &c,
            mem.base,
            4 * PAGE,
            &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)],
        )
        .unwrap();
        sdma_write(&c, &q, &mut ring, mem.base, &[1]);
        assert_eq!(mem.read_u32(0), 1);
        let at = mem.base;
        mem.unmap();
        // The next SVM ioctl notices; the span is no longer valid.
        let after = get(&c, at, 4 * PAGE, &[attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0)]);
        if cpu_maps_any(at, 4 * PAGE) {
            continue;
        }
        assert_errno(after, Errno::EFAULT, "GET after munmap");
        assert!(ranges(&c).is_empty());
        assert_eq!(c.p.svm_stats().cpu_unmaps, 1);
        // The GPU no longer maps it: the access is a VM fault, not a crash of the host.
        sdma_write(&c, &q, &mut ring, at, &[2]);
        assert!(
            matches!(c.p.queue_error(qid), Some(QueueError::VmFault(f)) if f.va == at),
            "{:?}",
            c.p.queue_error(qid)
        );
        return;
    }
    panic!("50 times another thread mapped the test's unmapped span again");
}

#[test]
fn the_notifier_entry_drops_part_of_a_range() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let mem = Anon::new(4);
    set(
        &c,
        mem.base,
        4 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, c.gpu())],
    )
    .unwrap();
    c.p.svm_cpu_unmapped(mem.at(1), PAGE);
    let r = ranges(&c);
    assert_eq!(
        r.iter()
            .map(|x| (x.0 - mem.base, x.1 - mem.base))
            .collect::<Vec<_>>(),
        vec![(0, PAGE), (2 * PAGE, 4 * PAGE)]
    );
}

#[test]
fn with_xnack_off_an_unmapped_gpu_access_is_a_vm_fault() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let mem = Anon::new(1);
    // A range without access for the GPU.
    set(
        &c,
        mem.base,
        PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0)],
    )
    .unwrap();
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    sdma_write(&c, &q, &mut ring, mem.base, &[5]);
    assert!(matches!(c.p.queue_error(qid), Some(QueueError::VmFault(_))));
    assert_eq!(mem.read_u32(0), 0);
    assert_eq!(c.p.svm_stats().recoverable_faults, 0);
}

#[test]
fn with_xnack_on_a_gpu_fault_is_recovered_and_the_access_retried() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    assert_eq!(xnack(&c, 1), Ok(1));
    let mem = Anon::new(4);
    mem.write_u32(0x104, 0x1234);
    // Accessible, preferred in VRAM, but XNACK on maps lazily: nothing is mapped yet.
    set(
        &c,
        mem.base,
        4 * PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, gpu),
            attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 1),
        ],
    )
    .unwrap();
    assert_eq!(ranges(&c)[0].2, 0);
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    // fault -> driver -> migrate (one granule: 2 pages) -> map -> retry.
    sdma_write(&c, &q, &mut ring, mem.base + 0x100, &[0xBEEF]);
    assert_eq!(c.p.queue_error(qid), None, "the retry succeeded");
    assert_eq!(mem.read_u32(0x100), 0xBEEF);
    assert_eq!(mem.read_u32(0x104), 0x1234, "migrated bytes intact");
    let s = c.p.svm_stats();
    assert_eq!((s.recoverable_faults, s.migrations_to_vram), (1, 1));
    // The granule is 2 pages at a 2-page-aligned address, clipped to the range.
    let fault = mem.base + 0x100;
    let gs = (fault & !(2 * PAGE - 1)).max(mem.base);
    let ge = ((fault & !(2 * PAGE - 1)) + 2 * PAGE).min(mem.base + 4 * PAGE);
    let mut want = vec![(gs, ge, gpu), (ge, mem.base + 4 * PAGE, 0)];
    if gs > mem.base {
        want.insert(0, (mem.base, gs, 0));
    }
    let r = ranges(&c);
    assert_eq!(
        r.iter().map(|x| (x.0, x.1, x.2)).collect::<Vec<_>>(),
        want,
        "only the faulting granule moved"
    );
    // An address never registered: a range is made for it, in system memory.
    let plain = Anon::new(1);
    sdma_write(&c, &q, &mut ring, plain.base + 8, &[0x99]);
    assert_eq!(c.p.queue_error(qid), None);
    assert_eq!(plain.read_u32(8), 0x99);
    assert_eq!(c.p.svm_stats().recoverable_faults, 2);
    // No access for the GPU: not recoverable.
    set(
        &c,
        mem.at(2),
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_NO_ACCESS, gpu)],
    )
    .unwrap();
    sdma_write(&c, &q, &mut ring, mem.at(3), &[1]);
    assert!(matches!(c.p.queue_error(qid), Some(QueueError::VmFault(_))));
}

/// Linux 6.12 checks a compute queue's CWSR area: a mapping of the exact size, or SVM ranges
/// mapped on the queue's GPU with GPU_ALWAYS_MAPPED (interface 1.11).
#[test]
fn a_queue_cwsr_area_may_be_an_always_mapped_svm_range() {
    let m = model_with(
        ModelConfig::new(Preset::Gfx90a)
            .with_kernel(kfd_model::KernelVersion::Linux6_12)
            .with_engine_thread(false),
    );
    let c = Client::new(&m);
    let gpu = c.gpu();
    let bufs = c.queue_buffers(gpu, 4096, true);
    let (ctx_buf, sizes) = bufs.ctx.clone().unwrap();
    let pages = ctx_buf.size / PAGE;
    let area = Anon::new(pages);
    let mut a = c.queue_args(gpu, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, &bufs);
    a.ctx_save_restore_address = area.base;
    a.ctx_save_restore_size = sizes.cwsr_size;
    // Not an SVM range yet: refused.
    assert_errno(
        c.p.call::<CreateQueue>(&mut a.clone()),
        Errno::EINVAL,
        "CWSR area neither a buffer nor an SVM range",
    );
    // Accessible but without GPU_ALWAYS_MAPPED: still refused.
    set(
        &c,
        area.base,
        pages * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)],
    )
    .unwrap();
    assert_errno(
        c.p.call::<CreateQueue>(&mut a.clone()),
        Errno::EINVAL,
        "SVM range without GPU_ALWAYS_MAPPED",
    );
    // Only part of the area always-mapped: refused.
    set(
        &c,
        area.base,
        PAGE,
        &[attr(
            KFD_IOCTL_SVM_ATTR_SET_FLAGS,
            KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED,
        )],
    )
    .unwrap();
    if pages > 1 {
        assert_errno(
            c.p.call::<CreateQueue>(&mut a.clone()),
            Errno::EINVAL,
            "only the first page always mapped",
        );
    }
    set(
        &c,
        area.base,
        pages * PAGE,
        &[attr(
            KFD_IOCTL_SVM_ATTR_SET_FLAGS,
            KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED,
        )],
    )
    .unwrap();
    c.p.call::<CreateQueue>(&mut a).unwrap();
    c.destroy_queue(a.queue_id).unwrap();
}

/// A process with `tests/kernels/svm.cl` loaded and an AQL queue.
struct Shader {
    c: Client,
    exe: codeobj::Executable,
    queue: (u32, QueueBufs),
    kernarg: Buf,
    signal: Buf,
    _code: Buf,
}

impl Shader {
    /// Sets XNACK mode `xnack` first (it cannot change once queues exist).
    fn new(m: &Model, mcpu: &str, xnack_on: bool) -> Shader {
        let c = Client::new(m);
        assert_eq!(xnack(&c, i32::from(xnack_on)), Ok(i32::from(xnack_on)));
        let flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        let elf = opencl::compile(
            &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/svm.cl"),
            mcpu,
        );
        let (code, exe) = opencl::load(&c, mcpu, &elf);
        let kernarg = c.alloc_on(c.gpu(), 4096, flags).unwrap();
        let signal = c.gtt(4096);
        let queue = c
            .create_queue_sized(c.gpu(), KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, 100, 4096)
            .unwrap();
        Shader {
            c,
            exe,
            queue,
            kernarg,
            signal,
            _code: code,
        }
    }

    /// Dispatches `name` over `grid` work-items in workgroups of 64 with pointer arguments
    /// `args`, runs the model until idle and returns the completion signal's value (0: done).
    fn run(&self, m: &Model, name: &str, args: &[u64], grid: u32) -> u64 {
        let k = self.exe.kernel(name).unwrap();
        let bytes: Vec<u8> = args.iter().flat_map(|a| a.to_le_bytes()).collect();
        self.kernarg.write_bytes(0, &bytes);
        self.signal.write_u64(0, 1);
        self.signal.write_u64(8, 1);
        let q = &self.queue.1;
        let packet = KernelDispatch::of(
            &k,
            [64, 1, 1],
            [grid, 1, 1],
            0,
            self.kernarg.va,
            self.signal.va,
        );
        packet.write(q, 0);
        self.c.submit(q, 1);
        m.run_until_idle();
        self.signal.read_u64(8)
    }
}

/// Host memory for `svm_scale`: `in` (64 ints), `out` and `count` (two counters a page
/// apart, so one atomic instruction spans two pages).
fn scale_buffers() -> (Anon, Anon, Anon) {
    let input = Anon::new(1);
    for i in 0..64 {
        input.write_u32(4 * i, (i as u32).wrapping_mul(0x9E37_79B9) >> 7);
    }
    (input, Anon::new(1), Anon::new(2))
}

fn check_scaled(input: &Anon, out: &Anon, grid: u64) {
    for i in 0..grid {
        let x = input.read_u32(4 * (i % 64)) as i32;
        assert_eq!(
            out.read_u32(4 * i) as i32,
            x.wrapping_mul(3).wrapping_add(1),
            "out[{i}]"
        );
    }
}

/// XNACK on (gfx90a): a kernel's first atomic, load and store on each page of host memory the
/// GPU does not map yet fault; the driver maps (or migrates) the page and the wave retries
/// that instruction — the dispatch resumes, it does not start over — so the kernel completes
/// with the right data and every atomic applied once, even the instruction whose lanes
/// faulted on their second page only.
#[test]
fn with_xnack_on_a_kernel_faults_on_svm_memory_and_its_waves_retry() {
    let m = stepped(Preset::Gfx90a, 1);
    let s = Shader::new(&m, "gfx90a", true);
    let gpu = s.c.gpu();
    let (input, out, count) = scale_buffers();
    // `in` stays in system memory, `out` prefers the GPU's VRAM, `count` is mapped page by
    // page (granularity 0). With XNACK on nothing is mapped before the GPU touches it.
    set(
        &s.c,
        input.base,
        PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)],
    )
    .unwrap();
    set(
        &s.c,
        out.base,
        PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, gpu),
        ],
    )
    .unwrap();
    set(
        &s.c,
        count.base,
        2 * PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0),
        ],
    )
    .unwrap();
    // svm_scale's atomic targets count[0] for lanes 0-31 and count[1024] for lanes 32-63.
    let grid = 256u32;
    let done = s.run(&m, "svm_scale", &[input.base, out.base, count.base], grid);
    assert_eq!(s.c.p.queue_error(s.queue.0), None);
    assert_eq!(done, 0, "the dispatch completed");
    // Every work-item's element of `out`: in[i % 64] * 3 + 1.
    check_scaled(&input, &out, u64::from(grid));
    assert_eq!(count.read_u32(0), grid / 2, "lanes 0-31 counted once each");
    assert_eq!(
        count.read_u32(PAGE),
        grid / 2,
        "lanes 32-63 counted once each"
    );
    let st = s.c.p.svm_stats();
    // in, out, and the two pages of count: one recovered fault each.
    assert_eq!(st.recoverable_faults, 4);
    assert_eq!(
        st.migrations_to_vram, 1,
        "out moved to its preferred location"
    );
    let loc = |a: u64| ranges(&s.c).iter().find(|r| r.0 <= a && a < r.1).unwrap().2;
    assert_eq!((loc(input.base), loc(out.base)), (0, gpu));
}

/// XNACK off: the same kernel's access to host memory the GPU has no mapping for is a VM
/// fault: the queue stops, a memory-exception event carries the page, the dispatch never
/// completes and nothing is retried.
#[test]
fn with_xnack_off_a_kernel_access_to_unmapped_svm_memory_is_a_vm_fault() {
    let m = stepped(Preset::Gfx90a, 1);
    let s = Shader::new(&m, "gfx90a", false);
    let gpu = s.c.gpu();
    let mem_ev = create_event(&s.c, KFD_IOC_EVENT_MEMORY, false, 0).unwrap();
    let (input, out, count) = scale_buffers();
    // in and out are mapped (XNACK off maps every accessible range at once); count is a range
    // the GPU may not access.
    for b in [&input, &out] {
        set(&s.c, b.base, PAGE, &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)]).unwrap();
    }
    set(
        &s.c,
        count.base,
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_NO_ACCESS, gpu)],
    )
    .unwrap();
    let done = s.run(&m, "svm_scale", &[input.base, out.base, count.base], 64);
    assert_eq!(done, 1, "never a silent success");
    assert!(
        matches!(s.c.p.queue_error(s.queue.0), Some(QueueError::VmFault(f)) if f.va == count.base && f.write),
        "{:?}",
        s.c.p.queue_error(s.queue.0)
    );
    let (r, result, data) = wait_events_data(&s.c, &[mem_ev.event_id], true, 0);
    assert_eq!((r, result), (Ok(0), KFD_IOC_WAIT_RESULT_COMPLETE));
    let e = data[0].data.memory_exception_data();
    assert_eq!((e.va, e.gpu_id, e.failure.NotPresent), (count.base, gpu, 1));
    assert_eq!(out.read_u32(0), 0, "the first instruction faulted");
    assert_eq!(s.c.p.svm_stats().recoverable_faults, 0);
}

/// XNACK on, but the GPU has no access to the range: the driver cannot recover the fault, and
/// the kernel's access stays a VM fault.
#[test]
fn with_xnack_on_a_kernel_fault_without_access_is_still_a_vm_fault() {
    let m = stepped(Preset::Gfx90a, 1);
    let s = Shader::new(&m, "gfx90a", true);
    let gpu = s.c.gpu();
    let (input, out, count) = scale_buffers();
    set(
        &s.c,
        input.base,
        PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_NO_ACCESS, gpu)],
    )
    .unwrap();
    set(
        &s.c,
        count.base,
        2 * PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0),
        ],
    )
    .unwrap();
    let done = s.run(&m, "svm_scale", &[input.base, out.base, count.base], 64);
    assert_eq!(done, 1);
    assert!(
        matches!(s.c.p.queue_error(s.queue.0), Some(QueueError::VmFault(f)) if f.va == input.base && !f.write)
    );
    // count's two pages were mapped (two recovered faults), then the load of `in` failed.
    assert_eq!(s.c.p.svm_stats().recoverable_faults, 2);
    assert_eq!((count.read_u32(0), count.read_u32(PAGE)), (32, 32));
    assert_eq!(out.read_u32(0), 0);
}

/// An SMI event file of `gpu` (AMDKFD_IOC_SMI_EVENTS).
struct Smi(std::os::fd::OwnedFd);

impl Smi {
    fn open(c: &Client, gpu: u32) -> KResult<Smi> {
        use std::os::fd::FromRawFd;
        let mut a = kfd_ioctl_smi_events_args {
            gpuid: gpu,
            anon_fd: u32::MAX,
        };
        c.p.call::<SmiEvents>(&mut a)?;
        // SAFETY: the ioctl handed this descriptor to the caller.
        Ok(Smi(unsafe {
            std::os::fd::OwnedFd::from_raw_fd(a.anon_fd as i32)
        }))
    }

    /// Enables the events `ids`.
    fn enable(&self, ids: &[u32]) {
        let mask = ids
            .iter()
            .fold(0u64, |m, &i| m | KFD_SMI_EVENT_MASK_FROM_INDEX(i));
        assert_eq!(nix::unistd::write(&self.0, &mask.to_ne_bytes()), Ok(8));
    }

    /// Everything queued, as lines; an empty queue reads EAGAIN.
    fn lines(&self) -> Vec<String> {
        use std::os::fd::AsRawFd;
        let mut text = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            match nix::unistd::read(self.0.as_raw_fd(), &mut buf) {
                Ok(0) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(e) => panic!("read: {e}"),
            }
        }
        let text = String::from_utf8(text).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'), "{text:?}");
        text.lines().map(str::to_owned).collect()
    }
}

fn boottime_ns() -> i64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).unwrap();
    t.tv_sec() * 1_000_000_000 + t.tv_nsec()
}

/// Checks the SMI lines against `want` (event id and the text after the timestamp and pid,
/// `"{id:x} {ns} -{pid} {rest}"`) and the timestamps against `[from, to]`, in order.
fn check_smi(lines: &[String], want: &[(u32, String)], from: i64, to: i64) {
    let pid = std::process::id();
    let got: Vec<(u32, String)> = lines
        .iter()
        .map(|l| {
            let mut f = l.splitn(4, ' ');
            let id = u32::from_str_radix(f.next().unwrap(), 16).unwrap();
            let ns: i64 = f.next().unwrap().parse().unwrap();
            assert!(
                from <= ns && ns <= to,
                "{l}: time {ns} outside [{from}, {to}]"
            );
            assert_eq!(f.next(), Some(format!("-{pid}").as_str()), "{l}");
            (id, f.next().unwrap_or("").to_owned())
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn smi_events_file_mask_and_errnos() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    assert_errno(
        Smi::open(&c, 0x1234).map(|_| 0),
        Errno::EINVAL,
        "unknown gpu",
    );
    let smi = Smi::open(&c, c.gpu()).unwrap();
    assert_eq!(
        nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&smi.0), &mut [0u8; 8]),
        Err(nix::errno::Errno::EAGAIN),
        "nothing queued"
    );
    // The file survives exec (the kernel's anon file has no O_CLOEXEC).
    let flags =
        nix::fcntl::fcntl(std::os::fd::AsRawFd::as_raw_fd(&smi.0), nix::fcntl::F_GETFD).unwrap();
    assert_eq!(flags & libc::FD_CLOEXEC, 0);
    assert_eq!(m.node(c.gpu()).unwrap().smi.len(), 1);
    // A client that closed its file is gone.
    drop(smi);
    assert_eq!(m.node(c.gpu()).unwrap().smi.len(), 0);
    // Without a mask nothing is queued; a mask write takes effect for the next event.
    let smi = Smi::open(&c, c.gpu()).unwrap();
    let (_qid, _q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mem = Anon::new(1);
    set(
        &c,
        mem.base,
        PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, c.gpu())],
    )
    .unwrap();
    set(
        &c,
        mem.base,
        PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, c.gpu())],
    )
    .unwrap();
    assert!(smi.lines().is_empty());
    smi.enable(&[KFD_SMI_EVENT_MIGRATE_START]);
    set(
        &c,
        mem.base,
        PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0)],
    )
    .unwrap();
    let lines = smi.lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("5 "), "{lines:?}");
}

/// XNACK off: a prefetch to VRAM starts the migration, evicts the queues, migrates the range
/// and restores the queues; a CPU munmap unmaps it from the GPU. Each client sees what its
/// mask enables, in the kernel's text format and order (kfdtest's HMMProfilingEvent reads the
/// first event and wants the migration start).
#[test]
fn smi_events_of_a_migration_and_a_cpu_unmap() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    let all = Smi::open(&c, gpu).unwrap();
    all.enable(&[
        KFD_SMI_EVENT_MIGRATE_START,
        KFD_SMI_EVENT_MIGRATE_END,
        KFD_SMI_EVENT_QUEUE_EVICTION,
        KFD_SMI_EVENT_QUEUE_RESTORE,
        KFD_SMI_EVENT_UNMAP_FROM_GPU,
    ]);
    let migrations = Smi::open(&c, gpu).unwrap();
    migrations.enable(&[KFD_SMI_EVENT_MIGRATE_END]);
    let (_qid, _q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut mem = Anon::new(2);
    let t0 = boottime_ns();
    set(
        &c,
        mem.base,
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)],
    )
    .unwrap();
    set(
        &c,
        mem.base,
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu)],
    )
    .unwrap();
    let page = mem.base >> 12;
    let undef = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
    let t1 = boottime_ns();
    // The kernel's order: the migration-start event, then the MMU notifier that
    // migrate_vma_setup raises (XNACK off: it stops the queues; no unmap event), the copy,
    // the migration-end event, and the queues back once the range is mapped again.
    check_smi(
        &all.lines(),
        &[
            (
                KFD_SMI_EVENT_MIGRATE_START,
                format!("@{page:x}(2) 0->{gpu:x} {gpu:x}:{undef:x} 0"),
            ),
            (KFD_SMI_EVENT_QUEUE_EVICTION, format!("{gpu:x} 0")),
            (
                KFD_SMI_EVENT_MIGRATE_END,
                format!("@{page:x}(2) 0->{gpu:x} 0"),
            ),
            (KFD_SMI_EVENT_QUEUE_RESTORE, format!("{gpu:x} 0")),
        ],
        t0,
        t1,
    );
    check_smi(
        &migrations.lines(),
        &[(
            KFD_SMI_EVENT_MIGRATE_END,
            format!("@{page:x}(2) 0->{gpu:x} 0"),
        )],
        t0,
        t1,
    );
    // The CPU unmaps the range (the shim's notifier first): the GPU stops mapping it
    // (trigger UNMAP_FROM_CPU).
    c.p.svm_cpu_unmapped(mem.base, mem.len);
    mem.unmap();
    assert!(ranges(&c).is_empty());
    check_smi(
        &all.lines(),
        &[(
            KFD_SMI_EVENT_UNMAP_FROM_GPU,
            format!("@{page:x}(2) {gpu:x} 2"),
        )],
        t1,
        boottime_ns(),
    );
    assert!(migrations.lines().is_empty());
}

/// XNACK on: a prefetch of a range the GPU maps in place sends the migration start, then the
/// unmap its MMU notifier makes (trigger MMU_NOTIFY_MIGRATE), then the migration end.
#[test]
fn smi_events_of_a_migration_with_xnack_on() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    assert_eq!(xnack(&c, 1), Ok(1));
    let smi = Smi::open(&c, gpu).unwrap();
    smi.enable(&[
        KFD_SMI_EVENT_MIGRATE_START,
        KFD_SMI_EVENT_MIGRATE_END,
        KFD_SMI_EVENT_QUEUE_EVICTION,
        KFD_SMI_EVENT_UNMAP_FROM_GPU,
    ]);
    let mem = Anon::new(4);
    let t0 = boottime_ns();
    set(
        &c,
        mem.base,
        4 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, gpu)],
    )
    .unwrap();
    set(
        &c,
        mem.base,
        4 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu)],
    )
    .unwrap();
    let page = mem.base >> 12;
    let undef = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
    check_smi(
        &smi.lines(),
        &[
            (
                KFD_SMI_EVENT_MIGRATE_START,
                format!("@{page:x}(4) 0->{gpu:x} {gpu:x}:{undef:x} 0"),
            ),
            (
                KFD_SMI_EVENT_UNMAP_FROM_GPU,
                format!("@{page:x}(4) {gpu:x} 1"),
            ),
            (
                KFD_SMI_EVENT_MIGRATE_END,
                format!("@{page:x}(4) 0->{gpu:x} 0"),
            ),
        ],
        t0,
        boottime_ns(),
    );
}

/// XNACK on: a recoverable fault is reported from start (`W` write) to end (`M` migrated),
/// with the migration it caused (trigger PAGEFAULT_GPU) between; a fault the driver cannot
/// recover is a device-wide VM_FAULT event naming the process.
#[test]
fn smi_events_of_a_recoverable_fault_and_a_vm_fault() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    assert_eq!(xnack(&c, 1), Ok(1));
    let smi = Smi::open(&c, gpu).unwrap();
    smi.enable(&[
        KFD_SMI_EVENT_VMFAULT,
        KFD_SMI_EVENT_PAGE_FAULT_START,
        KFD_SMI_EVENT_PAGE_FAULT_END,
        KFD_SMI_EVENT_MIGRATE_START,
        KFD_SMI_EVENT_MIGRATE_END,
        KFD_SMI_EVENT_UNMAP_FROM_GPU,
    ]);
    let mem = Anon::new(2);
    set(
        &c,
        mem.base,
        2 * PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, gpu),
            attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0),
        ],
    )
    .unwrap();
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    let t0 = boottime_ns();
    sdma_write(&c, &q, &mut ring, mem.at(1) + 8, &[7]);
    assert_eq!(mem.read_u32(PAGE + 8), 7);
    let p1 = mem.at(1) >> 12;
    let undef = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
    check_smi(
        &smi.lines(),
        &[
            (
                KFD_SMI_EVENT_PAGE_FAULT_START,
                format!("@{p1:x}({gpu:x}) W"),
            ),
            (
                KFD_SMI_EVENT_MIGRATE_START,
                format!("@{p1:x}(1) 0->{gpu:x} {undef:x}:{gpu:x} 1"),
            ),
            (
                KFD_SMI_EVENT_MIGRATE_END,
                format!("@{p1:x}(1) 0->{gpu:x} 1"),
            ),
            (KFD_SMI_EVENT_PAGE_FAULT_END, format!("@{p1:x}({gpu:x}) M")),
        ],
        t0,
        boottime_ns(),
    );
    // No access: the fault is not recovered; a VM_FAULT line "pid:task" for every client.
    set(
        &c,
        mem.base,
        PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_NO_ACCESS, gpu)],
    )
    .unwrap();
    let t1 = boottime_ns();
    sdma_write(&c, &q, &mut ring, mem.base, &[1]);
    assert!(matches!(c.p.queue_error(qid), Some(QueueError::VmFault(_))));
    let lines = smi.lines();
    let p0 = mem.base >> 12;
    check_smi(
        &lines[..1],
        &[(
            KFD_SMI_EVENT_PAGE_FAULT_START,
            format!("@{p0:x}({gpu:x}) W"),
        )],
        t1,
        boottime_ns(),
    );
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    assert_eq!(
        lines[1..],
        [format!("1 {:x}:{}", std::process::id(), comm.trim_end())]
    );
}

fn protect(addr: u64, len: u64, prot: ProtFlags) {
    // SAFETY: pages of the test's own anonymous mappings.
    unsafe { nix::sys::mman::mprotect(NonNull::new(addr as *mut _).unwrap(), len as usize, prot) }
        .unwrap();
}

/// One SDMA linear copy, run to idle.
fn sdma_copy(c: &Client, q: &QueueBufs, ring: &mut RingWriter, src: u64, dst: u64, n: u64) {
    use pm4::sdma::SdmaCopyLinear;
    use pm4::SdmaGen;
    ring.push(
        q,
        &SdmaCopyLinear::new(SdmaGen::Sdma4, src, dst, n).unwrap(),
    );
    c.submit(q, ring.wptr());
    c.model.run_until_idle();
}

/// XNACK off: `mprotect` read-only is an MMU-notifier event: the queues are evicted, the GPU
/// mapping is rebuilt read-only (the GPU reads but a write faults), and the queues restored.
#[test]
fn mprotect_read_only_makes_the_gpu_mapping_read_only() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    let mem = Anon::new(2);
    set(
        &c,
        mem.base,
        2 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)],
    )
    .unwrap();
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    sdma_write(&c, &q, &mut ring, mem.base, &[0x11]);
    assert_eq!(mem.read_u32(0), 0x11);
    let smi = Smi::open(&c, gpu).unwrap();
    smi.enable(&[
        KFD_SMI_EVENT_QUEUE_EVICTION,
        KFD_SMI_EVENT_QUEUE_RESTORE,
        KFD_SMI_EVENT_UNMAP_FROM_GPU,
    ]);
    let t0 = boottime_ns();
    protect(mem.base, PAGE, ProtFlags::PROT_READ);
    c.p.svm_cpu_protection_changed(mem.base, PAGE);
    check_smi(
        &smi.lines(),
        &[
            (KFD_SMI_EVENT_QUEUE_EVICTION, format!("{gpu:x} 0")),
            (KFD_SMI_EVENT_QUEUE_RESTORE, format!("{gpu:x} 0")),
        ],
        t0,
        boottime_ns(),
    );
    let s = c.p.svm_stats();
    assert_eq!(
        (
            s.cpu_protection_changes,
            s.queue_evictions,
            s.queue_restores
        ),
        (1, 1, 1)
    );
    let r = ranges(&c);
    assert_eq!(
        r.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        vec![(mem.base, mem.at(1)), (mem.at(1), mem.at(2))],
        "the range split where the protection changed"
    );
    // The GPU still reads the read-only page and writes the other one.
    sdma_copy(&c, &q, &mut ring, mem.base, mem.at(1) + 16, 4);
    assert_eq!(mem.read_u32(PAGE + 16), 0x11);
    assert_eq!(c.p.queue_error(qid), None);
    // A write to the read-only page is a VM fault on a present page.
    sdma_write(&c, &q, &mut ring, mem.base + 4, &[0x22]);
    assert!(
        matches!(c.p.queue_error(qid), Some(QueueError::VmFault(f)) if f.va == mem.base + 4 && f.write && !f.not_present),
        "{:?}",
        c.p.queue_error(qid)
    );
    assert_eq!(mem.read_u32(4), 0);
    protect(mem.base, PAGE, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE);
}

/// XNACK on: a protection change takes the pages from the GPU (UNMAP_FROM_GPU, trigger
/// MMU_NOTIFY); the next access faults them in again if the CPU mapping allows it, and a
/// write to a page the CPU may only read is not recovered.
#[test]
fn mprotect_with_xnack_on_unmaps_and_the_fault_checks_the_cpu_protection() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    assert_eq!(xnack(&c, 1), Ok(1));
    let mem = Anon::new(1);
    set(&c, mem.base, PAGE, &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)]).unwrap();
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    sdma_write(&c, &q, &mut ring, mem.base, &[1]);
    assert_eq!(c.p.svm_stats().recoverable_faults, 1);
    let smi = Smi::open(&c, gpu).unwrap();
    smi.enable(&[KFD_SMI_EVENT_UNMAP_FROM_GPU, KFD_SMI_EVENT_QUEUE_EVICTION]);
    let t0 = boottime_ns();
    protect(mem.base, PAGE, ProtFlags::PROT_READ);
    c.p.svm_cpu_protection_changed(mem.base, PAGE);
    let page = mem.base >> 12;
    check_smi(
        &smi.lines(),
        &[(
            KFD_SMI_EVENT_UNMAP_FROM_GPU,
            format!("@{page:x}(1) {gpu:x} 0"),
        )],
        t0,
        boottime_ns(),
    );
    // Writable again: the next write faults and is recovered.
    protect(mem.base, PAGE, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE);
    c.p.svm_cpu_protection_changed(mem.base, PAGE);
    sdma_write(&c, &q, &mut ring, mem.base, &[2]);
    assert_eq!(
        (mem.read_u32(0), c.p.svm_stats().recoverable_faults),
        (2, 2)
    );
    // Read-only: a write faults and the driver refuses it.
    protect(mem.base, PAGE, ProtFlags::PROT_READ);
    c.p.svm_cpu_protection_changed(mem.base, PAGE);
    sdma_write(&c, &q, &mut ring, mem.base, &[3]);
    assert!(matches!(c.p.queue_error(qid), Some(QueueError::VmFault(f)) if f.write));
    assert_eq!(
        (mem.read_u32(0), c.p.svm_stats().recoverable_faults),
        (2, 2)
    );
    protect(mem.base, PAGE, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE);
}

/// fork: the parent's ranges are invalidated (XNACK off: queues evicted and restored) and the
/// GPU keeps working on the parent's pages; the child gets its own copy of a range that
/// lives in VRAM — its writes do not reach the parent, and it reads the parent's bytes.
#[test]
fn fork_gives_the_child_a_private_copy_and_the_parent_keeps_its_gpu_mapping() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    let mem = Anon::new(2);
    mem.write_u32(0, 0xAAAA);
    set(
        &c,
        mem.base,
        2 * PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu),
        ],
    )
    .unwrap();
    assert_eq!(ranges(&c)[0].2, gpu, "in VRAM");
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    let smi = Smi::open(&c, gpu).unwrap();
    smi.enable(&[KFD_SMI_EVENT_QUEUE_EVICTION, KFD_SMI_EVENT_QUEUE_RESTORE]);
    let base = mem.base;
    // SAFETY: the child only reads and writes the test's memory and leaves with _exit.
    match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            // SAFETY: the range, private to this child now.
            let ok = unsafe {
                let seen = std::ptr::read_volatile(base as *const u32);
                std::ptr::write_volatile(base as *mut u32, 0xC0DE);
                seen == 0xAAAA && std::ptr::read_volatile(base as *const u32) == 0xC0DE
            };
            // SAFETY: leaves the child without running the parent's destructors.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        nix::unistd::ForkResult::Parent { child } => {
            let t0 = boottime_ns();
            c.p.svm_forked();
            let status = nix::sys::wait::waitpid(child, None).unwrap();
            assert_eq!(
                status,
                nix::sys::wait::WaitStatus::Exited(child, 0),
                "the child read the parent's bytes from its own copy"
            );
            check_smi(
                &smi.lines(),
                &[
                    (KFD_SMI_EVENT_QUEUE_EVICTION, format!("{gpu:x} 0")),
                    (KFD_SMI_EVENT_QUEUE_RESTORE, format!("{gpu:x} 0")),
                ],
                t0,
                boottime_ns(),
            );
        }
    }
    assert_eq!(
        mem.read_u32(0),
        0xAAAA,
        "the child's write stayed in the child"
    );
    sdma_write(&c, &q, &mut ring, mem.base + 8, &[0xBB]);
    assert_eq!(mem.read_u32(8), 0xBB);
    assert_eq!(c.p.queue_error(qid), None);
}

/// A private anonymous mapping of `bytes` that reserves no swap and is never touched.
fn lazy(bytes: u64) -> Anon {
    let len = std::num::NonZeroUsize::new(bytes as usize).unwrap();
    // SAFETY: a fresh private mapping the test owns (unmapped by Anon's drop).
    let p = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
        )
    }
    .unwrap();
    Anon {
        base: p.as_ptr() as u64,
        len: bytes,
    }
}

/// `svm_range_new` / `svm_range_switch_xnack_reserve_mem`: with XNACK off every SVM page
/// counts against the machine's system-memory limit (as USERPTR memory); with XNACK on none
/// does. With 1 GiB of system memory, Linux 6.12's limit is (1 GiB − 1/64) / 2 = 504 MiB.
#[test]
fn svm_memory_counts_against_the_system_limit_only_with_xnack_off() {
    const MIB: u64 = 1 << 20;
    let m = model_with(
        ModelConfig::new(Preset::Gfx90a)
            .with_engine_thread(false)
            .with_system_memory(1 << 30),
    );
    let c = Client::new(&m);
    let gpu = c.gpu();
    let acc = [attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)];
    let mut a = lazy(300 * MIB);
    let mut b = lazy(300 * MIB);
    set(&c, a.base, a.len, &acc).unwrap();
    assert_eq!(c.p.svm_stats().reserved_bytes, 300 * MIB);
    // Setting attributes again on held pages reserves nothing more.
    set(
        &c,
        a.base,
        a.len,
        &[attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 4)],
    )
    .unwrap();
    assert_eq!(c.p.svm_stats().reserved_bytes, 300 * MIB);
    assert_errno(
        set(&c, b.base, b.len, &acc),
        Errno::ENOMEM,
        "600 MiB > 504 MiB",
    );
    assert!(ranges(&c).iter().all(|r| r.1 <= b.base || r.0 >= b.end()));
    // XNACK on: nothing is held, so b fits.
    assert_eq!(xnack(&c, 1), Ok(1));
    assert_eq!(c.p.svm_stats().reserved_bytes, 0);
    set(&c, b.base, b.len, &acc).unwrap();
    assert_eq!(c.p.svm_stats().reserved_bytes, 0);
    // XNACK off must hold both: over the limit, refused, and the mode stays on.
    assert_errno(xnack(&c, 0), Errno::ENOMEM, "600 MiB of ranges");
    assert_eq!(xnack(&c, -1), Ok(1));
    // The CPU unmaps b (telling the driver first, as the shim does: a parallel test may map
    // the address again before the driver looks): its range goes, and XNACK off holds a.
    c.p.svm_cpu_unmapped(b.base, b.len);
    b.unmap();
    assert_eq!(xnack(&c, 0), Ok(0));
    assert_eq!(c.p.svm_stats().reserved_bytes, 300 * MIB);
    let d = lazy(204 * MIB);
    let e = lazy(4096);
    set(&c, d.base, d.len, &acc).unwrap();
    assert_eq!(
        c.p.svm_stats().reserved_bytes,
        504 * MIB,
        "exactly at the limit"
    );
    assert_errno(set(&c, e.base, e.len, &acc), Errno::ENOMEM, "one page over");
    // Unmapping a gives its 300 MiB back.
    c.p.svm_cpu_unmapped(a.base, a.len);
    a.unmap();
    set(&c, e.base, e.len, &acc).unwrap();
    assert_eq!(c.p.svm_stats().reserved_bytes, 204 * MIB + 4096);
}

/// SET_ATTR's granularity as each kernel keeps it: Linux 6.1 stores the value's low byte as
/// given (kfdtest 5.x's SetGetAttributesTest sets 0xFF and reads 0xFF back); Linux 6.7 and
/// later clamp it to 0x3F first.
#[test]
fn the_granularity_is_stored_as_the_followed_kernel_stores_it() {
    for (kernel, want) in [
        (kfd_model::KernelVersion::Linux6_1, [0xFF, 0xFF, 0x3F, 0]),
        (kfd_model::KernelVersion::Linux6_12, [0x3F, 0x3F, 0x3F, 0]),
    ] {
        let m = model_with(
            ModelConfig::new(Preset::Gfx90a)
                .with_engine_thread(false)
                .with_kernel(kernel),
        );
        let c = Client::new(&m);
        let mem = Anon::new(1);
        for (value, want) in [0xFF, 0x1FF, 0x3F, 0].into_iter().zip(want) {
            set(
                &c,
                mem.base,
                PAGE,
                &[attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, value)],
            )
            .unwrap();
            assert_eq!(
                get_one(&c, mem.base, PAGE, KFD_IOCTL_SVM_ATTR_GRANULARITY, 0).1,
                want,
                "{kernel:?}: granularity {value:#x}"
            );
        }
    }
}

/// A CPU thread keeps reading a range while another moves it between VRAM and system memory
/// (kfdtest's MultiThreadMigrationTest): the kernel holds the CPU's faults until the pages
/// moved, so the reader never sees anything but the data, here never a zero. The last word is
/// the one a copy reaches last.
#[test]
fn cpu_reads_during_migrations_keep_seeing_the_data() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    const PAGES: u64 = 512;
    let mem = Anon::new(PAGES);
    for i in 0..PAGES * PAGE / 4 {
        mem.write_u32(i * 4, 0x1000_0000 | i as u32);
    }
    set(
        &c,
        mem.base,
        PAGES * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)],
    )
    .unwrap();
    let last = mem.base + PAGES * PAGE - 4;
    let want = 0x1000_0000 | (PAGES * PAGE / 4 - 1) as u32;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (reads, wrong) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let (mut reads, mut wrong) = (0u64, 0u64);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: the range stays mapped throughout (each migration replaces its
                // mapping in one step); only its backing changes.
                let v = unsafe { std::ptr::read_volatile(last as *const u32) };
                reads += 1;
                if v != want {
                    wrong += 1;
                }
            }
            (reads, wrong)
        });
        for _ in 0..100 {
            for loc in [gpu, 0] {
                set(
                    &c,
                    mem.base,
                    PAGES * PAGE,
                    &[attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, loc)],
                )
                .unwrap();
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        reader.join().unwrap()
    });
    let s = c.p.svm_stats();
    assert_eq!((s.migrations_to_vram, s.migrations_to_ram), (100, 100));
    assert!(reads > 0);
    assert_eq!(
        wrong, 0,
        "{wrong} of {reads} reads saw other data during a migration"
    );
    for i in 0..PAGES * PAGE / 4 {
        assert_eq!(mem.read_u32(i * 4), 0x1000_0000 | i as u32, "word {i}");
    }
}

/// A range of a file's shared mapping (kfdtest's MigrateFileBackedRangeTest): the kernel
/// migrates anonymous pages only, so with the GPU preferred and prefetched the range stays in
/// system memory — the file's pages — and an SDMA fill reaches the file, which keeps it after
/// munmap.
#[test]
fn a_file_backed_range_stays_in_the_file_and_gpu_writes_reach_it() {
    use std::io::{Read, Seek, Write};
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&[0x30; PAGE as usize]).unwrap();
    let len = std::num::NonZeroUsize::new(PAGE as usize).unwrap();
    // SAFETY: a fresh shared mapping of the test's own file.
    let map = unsafe {
        nix::sys::mman::mmap(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_SHARED,
            &file,
            0,
        )
    }
    .unwrap();
    let va = map.as_ptr() as u64;
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    set(
        &c,
        va,
        PAGE,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, gpu),
            attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu),
        ],
    )
    .unwrap();
    assert_eq!(ranges(&c)[0].2, 0, "a file's pages stay in system memory");
    assert_eq!(c.p.svm_stats().migrations_to_vram, 0);
    sdma_write(&c, &q, &mut ring, va, &[0x3333_3333; 4]);
    assert_eq!(c.p.queue_error(qid), None);
    c.p.svm_cpu_unmapped(va, PAGE);
    // SAFETY: the mapping made above; nothing uses it any more.
    unsafe { munmap(map, PAGE as usize) }.unwrap();
    let mut back = vec![0u8; PAGE as usize];
    file.rewind().unwrap();
    file.read_exact(&mut back).unwrap();
    assert_eq!(&back[..16], &[0x33; 16], "the GPU's write is in the file");
    assert_eq!(back[16], 0x30);
}

/// The process's resident anonymous and shared memory (`/proc/self/status`), bytes.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .filter(|l| l.starts_with("RssAnon:") || l.starts_with("RssShmem:"))
        .map(|l| {
            let kib: u64 = l.split_whitespace().nth(1).unwrap().parse().unwrap();
            kib * 1024
        })
        .sum()
}

/// A range prefetched to VRAM is accounted there but costs host memory only where it is
/// touched (kfdtest's KFDSVMEvictTest prefetches more than the host holds): a GiB of untouched
/// memory moved to VRAM and read by SDMA adds next to nothing to the process's resident
/// memory; the GPU reads zeros and then what the CPU wrote.
#[test]
fn a_range_in_vram_costs_host_memory_only_where_touched() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    const LEN: u64 = 1 << 30;
    let len = std::num::NonZeroUsize::new(LEN as usize).unwrap();
    // SAFETY: a fresh private mapping the test owns, unmapped below.
    let mem = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
        )
    }
    .unwrap();
    let base = mem.as_ptr() as u64;
    let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_SDMA).unwrap();
    let mut ring = RingWriter::sdma(&q);
    let out = Anon::new(4);
    set(
        &c,
        out.base,
        4 * PAGE,
        &[attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu)],
    )
    .unwrap();
    let vram = c.node().vram_available();
    let before = resident_bytes();
    set(
        &c,
        base,
        LEN,
        &[
            attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu),
        ],
    )
    .unwrap();
    assert_eq!(ranges(&c)[0].2, gpu, "in VRAM");
    assert_eq!(vram - c.node().vram_available(), LEN, "accounted to VRAM");
    out.write_u32(0, 0xFFFF_FFFF);
    sdma_copy(&c, &q, &mut ring, base + LEN / 2, out.base, 4 * PAGE);
    assert_eq!(c.p.queue_error(qid), None);
    assert_eq!(out.read_u32(0), 0, "untouched VRAM reads zero");
    let grown = resident_bytes().saturating_sub(before);
    assert!(
        grown < 256 << 20,
        "a GiB moved to VRAM and read made the process {grown} bytes bigger"
    );
    // SAFETY: a page of the mapping above.
    unsafe { std::ptr::write_volatile((base + LEN / 2) as *mut u32, 0x0BAD_CAFE) };
    sdma_copy(&c, &q, &mut ring, base + LEN / 2, out.base, 4);
    assert_eq!(out.read_u32(0), 0x0BAD_CAFE);
    c.p.svm_cpu_unmapped(base, LEN);
    // SAFETY: the mapping made above.
    unsafe { munmap(mem, LEN as usize) }.unwrap();
    assert_eq!(c.node().vram_available(), vram, "VRAM given back");
}

/// A range that does not fit a full VRAM makes room as TTM does: the process's other ranges
/// there go back to system memory, least recently placed first, with the SMI trigger
/// TTM_EVICTION; their bytes stay intact.
#[test]
fn a_full_vram_evicts_the_least_recently_placed_range() {
    let m = stepped(Preset::Gfx90a, 1);
    let c = Client::new(&m);
    let gpu = c.gpu();
    let node = c.node();
    const MIB: u64 = 1 << 20;
    // All but 2 MiB of VRAM is someone else's.
    let taken = node.vram_available() - 2 * MIB;
    node.reserve_vram(taken).unwrap();
    let smi = Smi::open(&c, gpu).unwrap();
    smi.enable(&[KFD_SMI_EVENT_MIGRATE_START]);
    let pieces: Vec<Anon> = (0..3).map(|_| Anon::new(MIB / PAGE)).collect();
    for (i, a) in pieces.iter().enumerate() {
        a.write_u32(0, 0xA000 + i as u32);
        set(
            &c,
            a.base,
            MIB,
            &[
                attr(KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
                attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu),
            ],
        )
        .unwrap_or_else(|e| panic!("prefetch of piece {i}: {e}"));
    }
    let loc = |a: &Anon| {
        ranges(&c)
            .iter()
            .find(|r| r.0 <= a.base && a.base < r.1)
            .map(|r| r.2)
            .unwrap()
    };
    assert_eq!(
        [loc(&pieces[0]), loc(&pieces[1]), loc(&pieces[2])],
        [0, gpu, gpu],
        "the first placed went back to system memory"
    );
    assert_eq!(c.p.svm_stats().vram_evictions, 1);
    assert_eq!(node.vram_available(), 0);
    let evictions: Vec<String> = smi
        .lines()
        .into_iter()
        .filter(|l| l.ends_with(" 3"))
        .collect();
    assert_eq!(evictions.len(), 1, "{evictions:?}");
    assert!(
        evictions[0].contains(&format!("@{:x}(100) {gpu:x}->0 ", pieces[0].base >> 12)),
        "{evictions:?}"
    );
    for (i, a) in pieces.iter().enumerate() {
        assert_eq!(a.read_u32(0), 0xA000 + i as u32);
    }
    node.release_vram(taken);
}
