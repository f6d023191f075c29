//! The eviction a graphics submission causes (issue #35, item 2; upstream kfdtest's
//! `KFDEvictTest.BasicTest` in small): KFD VRAM buffers fill the GPU's VRAM, a render-node
//! context submits an IB whose BO list names a VRAM buffer that does not fit, TTM evicts the
//! KFD buffers, amdkfd stops the process's queues (SMI `QUEUE_EVICTION`, trigger TTM) and
//! restores them after `PROCESS_RESTORE_TIME_MS` (SMI `QUEUE_RESTORE`); the KFD queue then
//! runs what was submitted meanwhile, and the KFD buffers kept their bytes.

mod common;

use common::*;
use kfd_model::cs::*;
use kfd_model::eviction::EvictionStats;
use kfd_model::gem::*;
use kfd_model::{ModelConfig, Preset};
use kfd_sys::drm::*;
use kfd_sys::*;
use pm4::user::WriteData;
use std::time::Duration;

const MIB: u64 = 1 << 20;
/// The graphics buffer the submission needs in VRAM.
const GRAPHICS_VRAM: u64 = 64 * MIB;
/// VRAM left free beside the KFD buffers.
const LEFT_FREE: u64 = MIB;
const IB_VA: u64 = 0x30_0000_0000;
const GRAPHICS_VA: u64 = 0x30_0100_0000;

/// An SMI event file of the client's GPU with queue eviction and restore enabled.
struct Smi(std::os::fd::OwnedFd);

impl Smi {
    fn open(c: &Client) -> Smi {
        use std::os::fd::FromRawFd;
        let mut a = kfd_ioctl_smi_events_args {
            gpuid: c.gpu(),
            anon_fd: u32::MAX,
        };
        c.p.call::<SmiEvents>(&mut a).unwrap();
        // SAFETY: the ioctl handed this descriptor to the caller.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(a.anon_fd as i32) };
        let mask = KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_QUEUE_EVICTION)
            | KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_QUEUE_RESTORE);
        assert_eq!(nix::unistd::write(&fd, &mask.to_ne_bytes()), Ok(8));
        Smi(fd)
    }

    /// The queued lines without their timestamps: `"<id hex> -<pid> <rest>"`.
    fn lines(&self) -> Vec<String> {
        use std::os::fd::AsRawFd;
        let mut text = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            match nix::unistd::read(self.0.as_raw_fd(), &mut buf) {
                Ok(0) | Err(nix::errno::Errno::EAGAIN) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(e) => panic!("read: {e}"),
            }
        }
        String::from_utf8(text)
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                assert!(f.len() >= 3, "{l:?}");
                assert!(f[1].parse::<u64>().is_ok(), "a timestamp in {l:?}");
                format!("{} {}", f[0], f[2..].join(" "))
            })
            .collect()
    }
}

/// The KFD side (a PM4 queue, a small VRAM buffer with a pattern, VRAM filled to
/// [`LEFT_FREE`]) and the graphics side (a context, a GTT IB and a VRAM buffer that does not
/// fit, mapped in the file's VM, in one BO list).
struct Scene {
    model: kfd_model::Model,
    c: Client,
    qid: u32,
    q: QueueBufs,
    target: Buf,
    filler: Buf,
    ctx: u32,
    list: u32,
    graphics: u32,
    node: std::sync::Arc<kfd_model::KfdNode>,
}

impl Scene {
    fn new(cfg: ModelConfig) -> Scene {
        let model = model_with(cfg);
        let c = Client::new(&model);
        let (qid, q) = c.create_queue(KFD_IOC_QUEUE_TYPE_COMPUTE).unwrap();
        let vram = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        let target = c.alloc_on(c.gpu(), 4096, vram).unwrap();
        target.write_u32(0, 0x1111_2222);
        let node = c.node();
        let filler_size = node.vram_available() - LEFT_FREE;
        let filler = c.alloc_on(c.gpu(), filler_size, vram).unwrap();
        filler.write_u32(filler_size - 4, 0x3333_4444);
        assert_eq!(node.vram_available(), LEFT_FREE);

        let r = render(&c);
        let ib = r.gem_create(4096, 0, AMDGPU_GEM_DOMAIN_GTT, 0).unwrap();
        let graphics = r
            .gem_create(GRAPHICS_VRAM, 0, AMDGPU_GEM_DOMAIN_VRAM, 0)
            .unwrap();
        assert_eq!(
            node.vram_available(),
            LEFT_FREE,
            "a VRAM buffer that does not fit is created in GTT"
        );
        for (h, va, len) in [(ib, IB_VA, 4096), (graphics, GRAPHICS_VA, GRAPHICS_VRAM)] {
            r.gem_va(GemVaRequest {
                handle: h,
                operation: AMDGPU_VA_OP_MAP,
                flags: AMDGPU_VM_PAGE_WRITEABLE,
                va_address: va,
                offset_in_bo: 0,
                map_size: len,
            })
            .unwrap();
        }
        // SDMA WRITE_LINEAR of one dword into the graphics buffer, then NOPs.
        let ib_cpu = r.mmap(r.gem_mmap_offset(ib).unwrap(), 4096).unwrap();
        let words = sdma_write_dword_ib(GRAPHICS_VA, 0x600d_cafe);
        ib_cpu
            .memory
            .write(ib_cpu.offset as usize, words.as_bytes())
            .unwrap();
        let ctx = new_ctx(r);
        let list = r
            .bo_list(AMDGPU_BO_LIST_OP_CREATE, 0, vec![ib, graphics])
            .unwrap();
        Scene {
            model,
            c,
            qid,
            q,
            target,
            filler,
            ctx,
            list,
            graphics,
            node,
        }
    }

    /// The submission: the SDMA IB on the context, with the BO list.
    fn request(&self) -> CsRequest {
        CsRequest {
            ctx_id: self.ctx,
            bo_list_handle: self.list,
            ibs: vec![CsIb {
                va_start: IB_VA,
                ib_bytes: 32,
                ip_type: AMDGPU_HW_IP_DMA,
                ..Default::default()
            }],
            num_chunks: 1,
            ..Default::default()
        }
    }

    fn submit(&self) {
        assert_eq!(render(&self.c).cs_submit(&self.request()), Ok(1));
        let r = render(&self.c);
        let g = r
            .mmap(r.gem_mmap_offset(self.graphics).unwrap(), 4096)
            .unwrap();
        assert_eq!(
            g.memory.load_u32(g.offset as usize),
            Some(0x600d_cafe),
            "the IB ran"
        );
    }

    /// Puts a WRITE_DATA of `value` to the target's offset 8 on the KFD queue.
    fn kfd_write(&self, value: u32) {
        let mut w = RingWriter::pm4(&self.q);
        w.push(
            &self.q,
            &WriteData::memory(self.target.va + 8, &[value]).unwrap(),
        );
        self.c.submit(&self.q, w.wptr());
    }

    fn kfd_buffers_intact(&self) {
        assert_eq!(self.target.read_u32(0), 0x1111_2222);
        assert_eq!(self.filler.read_u32(self.filler.size - 4), 0x3333_4444);
    }
}

/// While evicted: the KFD buffers are out of VRAM and the graphics buffer is in, one SMI
/// eviction with the TTM trigger (2), and the process's queue does not run what its doorbell
/// asks for. The restore is set an hour away, so it cannot come first on a busy host.
#[test]
fn a_submission_that_needs_vram_evicts_the_kfd_process_and_stops_its_queues() {
    let s = Scene::new(
        ModelConfig::new(Preset::Gfx900)
            .with_engine_thread(false)
            .with_process_restore_delay(Duration::from_secs(3600)),
    );
    let smi = Smi::open(&s.c);
    s.model.run_until_idle();
    let before = s
        .model
        .node(s.c.gpu())
        .unwrap()
        .counters()
        .active_queue_count;
    assert_eq!(before, 1);
    s.submit();
    assert_eq!(
        s.c.p.eviction_stats(),
        EvictionStats {
            evictions: 1,
            restores: 0,
            evicted_buffers: 2,
        },
        "both KFD VRAM buffers (the small one first: it is the oldest)"
    );
    assert_eq!(
        s.node.vram_available(),
        LEFT_FREE + 4096 + s.filler.size - GRAPHICS_VRAM,
        "the KFD buffers' VRAM went to the graphics buffer"
    );
    let pid = std::process::id();
    assert_eq!(
        smi.lines(),
        vec![format!("9 -{pid} {:x} 2", s.c.gpu())],
        "QUEUE_EVICTION (9), trigger KFD_QUEUE_EVICTION_TRIGGER_TTM (2)"
    );
    assert_eq!(s.node.counters().active_queue_count, 0, "the queue is off");
    assert!(!s.c.p.queue_state(s.qid).unwrap().mapped);

    s.kfd_write(0xabcd_0001);
    for _ in 0..3 {
        s.model.run_until_idle();
    }
    assert_eq!(s.target.read_u32(8), 0, "an evicted queue runs nothing");
    s.kfd_buffers_intact();

    // A second submission: the graphics buffer is in VRAM already, nothing more is evicted.
    assert_eq!(render(&s.c).cs_submit(&s.request()), Ok(2));
    assert_eq!(s.c.p.eviction_stats().evictions, 1);
    assert!(smi.lines().is_empty());
}

/// After `PROCESS_RESTORE_TIME_MS` on the engine thread: the KFD buffers are back in VRAM
/// (the idle graphics buffer moved out to make room), the queue is mapped again (SMI
/// `QUEUE_RESTORE`), the write submitted while evicted lands, and the buffers kept their bytes.
#[test]
fn the_restore_brings_the_buffers_and_queues_back_and_pending_work_runs() {
    let s = Scene::new(ModelConfig::new(Preset::Gfx900));
    let smi = Smi::open(&s.c);
    s.submit();
    assert_eq!(s.c.p.eviction_stats().evictions, 1);
    s.kfd_write(0xabcd_0002);
    wait_until("the restore", || s.c.p.eviction_stats().restores == 1);
    wait_until("the write submitted while evicted", || {
        s.target.read_u32(8) == 0xabcd_0002
    });
    assert_eq!(
        s.c.p.eviction_stats(),
        EvictionStats {
            evictions: 1,
            restores: 1,
            evicted_buffers: 0,
        }
    );
    assert_eq!(
        s.node.vram_available(),
        LEFT_FREE,
        "the KFD buffers hold their VRAM again, the graphics buffer is in GTT"
    );
    assert_eq!(s.node.counters().active_queue_count, 1);
    assert!(s.c.p.queue_state(s.qid).unwrap().mapped);
    s.kfd_buffers_intact();
    let pid = std::process::id();
    let gpu = s.c.gpu();
    assert_eq!(
        smi.lines(),
        vec![format!("9 -{pid} {gpu:x} 2"), format!("a -{pid} {gpu:x} 0")],
        "QUEUE_EVICTION then QUEUE_RESTORE (10; Linux 6.12 adds a 0: not rescheduled)"
    );
}

/// A KFD VRAM allocation that does not fit beside idle graphics buffers: amdkfd's own limit
/// counts only KFD's buffers, and TTM moves the graphics buffers to GTT to place it (before,
/// the model answered `ENOMEM`).
#[test]
fn a_kfd_allocation_moves_idle_graphics_buffers_out_of_vram() {
    let model = model_with(ModelConfig::new(Preset::Gfx900).with_engine_thread(false));
    let c = Client::new(&model);
    let node = c.node();
    let free = node.vram_available();
    let r = render(&c);
    let graphics = r
        .gem_create(GRAPHICS_VRAM, 0, AMDGPU_GEM_DOMAIN_VRAM, 0)
        .unwrap();
    assert_eq!(
        node.vram_available(),
        free - GRAPHICS_VRAM,
        "created in VRAM"
    );
    let vram = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    let size = free - GRAPHICS_VRAM / 2;
    let kfd = c
        .alloc_on(c.gpu(), size, vram)
        .expect("TTM makes room for a KFD buffer that fits in VRAM");
    assert_eq!(
        node.vram_available(),
        GRAPHICS_VRAM / 2,
        "the graphics buffer went to GTT"
    );
    kfd.write_u32(size - 4, 0x5555_6666);
    assert_eq!(kfd.read_u32(size - 4), 0x5555_6666);
    // More than VRAM holds, even with every graphics buffer out: ENOMEM as before.
    assert!(c.alloc_on(c.gpu(), GRAPHICS_VRAM, vram).is_err());
    let _ = graphics;
}
