//! Proof that building a runlist and decoding a 1 MiB stream allocate nothing: a counting
//! global allocator around the exact work the benchmarks measure.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

use pm4::decode::{Pm4Decoder, SdmaDecoder};
use pm4::disasm::Pm4Listing;
use pm4::hws::*;
use pm4::user::*;
use pm4::{GfxGen, PacketWriter};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set while the measured work runs: only that thread's allocations count (the test
    /// harness's other threads allocate when they like).
    static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn count() {
    if COUNTING.try_with(|c| c.get()).unwrap_or(false) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call unchanged to `System`, which upholds the `GlobalAlloc`
// contract; the counter has no effect on the memory returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's `layout` obligations are passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System.alloc` with this `layout` (above).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as for `dealloc`; `new_size` obligations are the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCS.load(Ordering::SeqCst) - before
}

/// A sink for text that does not allocate.
struct Sink(usize);
impl std::fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

fn map_queues(i: u32) -> MapQueues {
    MapQueues::new(&MapQueuesArgs {
        queue_sel: MapQueueSel::HwsDetermined,
        queue_type: MapQueueType::NormalCompute,
        engine: QueueEngine::Compute,
        gws_control_queue: false,
        num_queues: 1,
        check_disable: false,
        doorbell_offset: 0x1000 + 2 * i,
        mqd_addr: 0x10_0000 + u64::from(i) * 0x1000,
        wptr_addr: 0x7f00_0000_0000 + u64::from(i) * 8,
    })
    .unwrap()
}

// One test function: the counter is global, so concurrent tests would disturb it.
#[test]
fn runlist_build_decode_and_listing_allocate_nothing() {
    let mut ib = vec![0u32; 8 * MapProcess::DWORDS + 128 * MapQueues::DWORDS + RunList::DWORDS];
    // 1 MiB; 4 KiB under Miri, which interprets every dword.
    let mut stream = vec![0u32; if cfg!(miri) { 1 << 10 } else { 1 << 18 }];
    let mut sink = Sink(0);
    // The counter itself works: a heap allocation is seen.
    assert!(allocations_during(|| drop(std::hint::black_box(vec![1u8; 16]))) >= 1);

    let n = allocations_during(|| {
        let mut w = PacketWriter::new(&mut ib);
        for p in 0..8u32 {
            let args = MapProcessArgs {
                pasid: 0x8000 + p as u16,
                process_quantum: 10,
                sdma_enable: true,
                num_queues: 16,
                ..Default::default()
            };
            w.push(&MapProcess::new(&args).unwrap()).unwrap();
            for q in 0..16 {
                w.push(&map_queues(p * 16 + q)).unwrap();
            }
        }
        w.push(&RunList::new(&RunListArgs::chain(0x1000, 8 * 16 + 128 * 7 + 4, 8)).unwrap())
            .unwrap();
        assert_eq!(w.len(), 8 * 16 + 128 * 7 + 4);
    });
    assert_eq!(n, 0, "building the runlist allocated {n} times");

    let n = allocations_during(|| {
        let mut w = PacketWriter::new(&mut stream);
        let mut i = 0u32;
        while w.remaining() >= 16 {
            match i % 4 {
                0 => w
                    .push(&WriteData::memory(0x1000, &[i, i + 1]).unwrap())
                    .unwrap(),
                1 => w.push(&EventWrite::cs_partial_flush()).unwrap(),
                2 => w
                    .push(&AcquireMemGfx9::new(
                        AcquireMemGfx9::amdgpu_coher_cntl(),
                        AcquireRange::full(4),
                    ))
                    .unwrap(),
                _ => w
                    .push(&IndirectBuffer::new(0x2000, 64, IndirectBufferControl::new()).unwrap())
                    .unwrap(),
            };
            i += 1;
        }
        let end = w.len();
        let mut count = 0;
        for item in Pm4Decoder::new(&stream[..end], GfxGen::Gfx9) {
            let d = item.unwrap();
            count += d.words.len();
        }
        assert_eq!(count, end);
        // Disassembly of the runlist and an SDMA stream through a non-allocating sink.
        write!(sink, "{}", Pm4Listing::new(&ib, GfxGen::Gfx9)).unwrap();
        for item in SdmaDecoder::new(&[0, 0, 6, 7], pm4::SdmaGen::Sdma5) {
            write!(sink, "{}", item.unwrap().packet).unwrap();
        }
    });
    assert_eq!(n, 0, "decoding allocated {n} times");
    assert!(sink.0 > 10_000);
}
