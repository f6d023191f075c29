//! The HIQ ring discipline (facts §9.6) and the three write-pointer units (facts §4).

use pm4::decode::{Packet, Pm4Decoder};
use pm4::header::NOP_ONE_DWORD;
use pm4::hws::{RunList, RunListArgs};
use pm4::ring::*;
use pm4::user::EventWrite;
use pm4::GfxGen;

#[test]
fn free_space_is_rptr_plus_size_minus_one_minus_wptr() {
    let mut mem = vec![0u32; 512];
    let mut ring = Pm4Ring::new(512).unwrap();
    assert_eq!(ring.free_dwords(), 511, "one slot always stays empty");
    ring.acquire(&mut mem, 100).unwrap();
    assert_eq!(ring.free_dwords(), 411);
    ring.set_rptr(DwordPtr::new(60));
    assert_eq!(ring.free_dwords(), 471, "(60 + 512 - 1 - 100) mod 512");
    assert_eq!(
        ring.acquire(&mut mem, 472),
        Err(RingError::Full {
            requested: 472,
            free: 471
        })
    );
}

#[test]
fn submit_publishes_and_rollback_discards() {
    let mut mem = vec![0u32; 64];
    let mut ring = Pm4Ring::new(64).unwrap();
    ring.push(&mut mem, &EventWrite::cs_partial_flush())
        .unwrap();
    assert_eq!(ring.wptr(), DwordPtr::new(0));
    assert_eq!(ring.pending_wptr(), DwordPtr::new(2));
    assert_eq!(ring.submit(), DwordPtr::new(2));
    ring.acquire(&mut mem, 10).unwrap();
    ring.rollback();
    assert_eq!(ring.pending_wptr(), DwordPtr::new(2));
    assert_eq!(ring.free_dwords(), 61);
}

#[test]
fn wrap_fills_the_tail_with_one_dword_nops_and_restarts_at_zero() {
    let mut mem = vec![0xAAAA_AAAAu32; 16];
    let mut ring = Pm4Ring::new(16).unwrap();
    ring.acquire(&mut mem, 12).unwrap();
    ring.submit();
    ring.set_rptr(DwordPtr::new(12)); // consumer caught up
    let rl = RunList::new(&RunListArgs::submit(0x1000, 8, 1)).unwrap();
    ring.push(&mut mem, &rl).unwrap(); // 12 + 4 >= 16: wraps (the kernel's test)
    assert_eq!(&mem[12..16], &[NOP_ONE_DWORD; 4]);
    assert_eq!(&mem[0..4], &rl.to_dwords());
    // The write pointer stays monotonic: 12 + 4 NOPs + 4 packet dwords.
    assert_eq!(ring.submit(), DwordPtr::new(20));
    assert_eq!(ring.wptr().slot(16), 4);
    // The consumer sees NOPs then the packet.
    let seen: Vec<_> = Pm4Decoder::new(&mem[12..16], GfxGen::Gfx9)
        .map(|r| r.unwrap().packet.name())
        .collect();
    assert_eq!(seen, ["NOP"; 4]);
    assert!(
        matches!(Pm4Decoder::new(&mem[..4], GfxGen::Gfx9).next(), Some(Ok(d)) if matches!(d.packet, Packet::RunList(_)))
    );
}

#[test]
fn wrap_needs_the_packet_to_fit_before_the_read_pointer() {
    let mut mem = vec![0u32; 16];
    let mut ring = Pm4Ring::new(16).unwrap();
    ring.acquire(&mut mem, 12).unwrap();
    ring.submit();
    ring.set_rptr(DwordPtr::new(4));
    // free = (4 + 16 - 1 - 12) % 16 = 7, so 4 fits by count, but after wrapping 4 >= rptr.
    assert_eq!(ring.free_dwords(), 7);
    assert_eq!(
        ring.acquire(&mut mem, 4),
        Err(RingError::NoSpaceAfterWrap {
            requested: 4,
            rptr_slot: 4
        })
    );
    assert_eq!(
        ring.pending_wptr(),
        DwordPtr::new(12),
        "a failed acquire changes nothing"
    );
    assert!(ring.acquire(&mut mem, 3).is_ok());
}

#[test]
fn ring_checks_its_memory_and_size() {
    assert_eq!(Pm4Ring::new(1), Err(RingError::BadSize { size: 1 }));
    let mut ring = Pm4Ring::new(8).unwrap();
    let mut small = [0u32; 4];
    assert_eq!(
        ring.acquire(&mut small, 1),
        Err(RingError::WrongMemory {
            expected: 8,
            actual: 4
        })
    );
}

#[test]
fn sdma_ring_counts_bytes_and_fills_with_zero() {
    let mut mem = vec![0xFFFF_FFFFu32; 16];
    let mut ring = SdmaRing::new(16).unwrap();
    ring.acquire(&mut mem, 14).unwrap();
    assert_eq!(ring.submit(), SdmaBytePtr::new(56));
    ring.set_rptr(SdmaBytePtr::new(56));
    ring.push(&mut mem, &pm4::sdma::SdmaTrap::new(5).unwrap())
        .unwrap();
    assert_eq!(&mem[14..16], &[0, 0], "SDMA NOPs are zero dwords");
    assert_eq!(&mem[0..2], &[6, 5]);
    assert_eq!(ring.submit(), SdmaBytePtr::new(72));
}

#[test]
fn aql_ring_hands_out_64_byte_slots() {
    let mut mem = vec![0u32; 64];
    let mut ring = AqlRing::new(64).unwrap();
    assert_eq!(ring.size_packets(), 4);
    for i in 0..4 {
        let (slot, at) = ring.next_slot(&mut mem).unwrap();
        assert_eq!(slot.len(), 16);
        slot[0] = i;
        assert_eq!(at, AqlSlotPtr::new(i.into()));
    }
    assert!(matches!(
        ring.next_slot(&mut mem),
        Err(RingError::Full { .. })
    ));
    ring.set_rptr(AqlSlotPtr::new(1));
    let (slot, at) = ring.next_slot(&mut mem).unwrap();
    slot[0] = 4;
    assert_eq!(at.slot(4), 0);
    assert_eq!(mem[0], 4);
    assert_eq!(AqlRing::new(40), Err(RingError::BadSize { size: 40 }));
}

#[test]
fn pointer_units_convert_explicitly() {
    let aql = AqlSlotPtr::new(3);
    assert_eq!(aql.to_dwords(), DwordPtr::new(48));
    assert_eq!(aql.to_bytes(), 192);
    assert_eq!(AqlSlotPtr::from_dwords(DwordPtr::new(48)), Some(aql));
    assert_eq!(AqlSlotPtr::from_dwords(DwordPtr::new(47)), None);
    let dw = DwordPtr::new(10);
    assert_eq!(SdmaBytePtr::from_dwords(dw), SdmaBytePtr::new(40));
    assert_eq!(SdmaBytePtr::new(40).to_dwords(), Some(dw));
    assert_eq!(SdmaBytePtr::new(42).to_dwords(), None);
    assert_eq!(DwordPtr::new(1000).slot(512), 488);
    assert_eq!(DwordPtr::new(1000).slot(0), 0);
    assert_eq!(DwordPtr::new(u64::MAX).add(2), DwordPtr::new(1));
    assert_eq!(DwordPtr::new(5).distance_from(DwordPtr::new(2)), 3);
    assert_eq!(SdmaBytePtr::new(0x40).to_string(), "0x40 bytes");
}

/// `place` + `commit` with the caller writing the memory is `acquire`, dword for dword and
/// error for error — on power-of-two rings (masked slots) and others (divided slots).
#[test]
fn place_and_commit_match_acquire() {
    for size in [16usize, 64, 1024, 24, 1000] {
        let (mut a_mem, mut b_mem) = (vec![0u32; size], vec![0u32; size]);
        let mut a = Pm4Ring::new(size).unwrap();
        let mut b = Pm4Ring::new(size).unwrap();
        let mut seed = 0x2545_F491_4F6C_DD1Du64 ^ size as u64;
        let mut rptr = 0u64;
        for step in 0..5000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = (seed % 40) as usize + 1;
            let got_a = a.acquire(&mut a_mem, n).map(|d| {
                d.fill(step);
                d.len()
            });
            let got_b = b.place(n).map(|p| {
                b_mem[p.filler_range()].fill(p.filler());
                b_mem[p.packet_range()].fill(step);
                assert_eq!(p.advance_dwords(), (p.filler_range().len() + n) as u64);
                assert!(b.commit(&p));
                p.packet_range().len()
            });
            assert_eq!(got_a, got_b, "size {size}, step {step}");
            assert_eq!(a_mem, b_mem, "size {size}, step {step}");
            assert_eq!(a.pending_wptr(), b.pending_wptr());
            assert_eq!(a.free_dwords(), b.free_dwords());
            if seed % 3 == 0 {
                assert_eq!(a.submit(), b.submit());
                // The consumer reads part of what was submitted.
                let w = a.wptr().get();
                rptr += (w - rptr) * (seed % 5) / 4;
                rptr = rptr.min(w);
                a.set_rptr(DwordPtr::new(rptr));
                b.set_rptr(DwordPtr::new(rptr));
            } else if seed % 7 == 0 {
                a.rollback();
                b.rollback();
            }
        }
    }
}

#[test]
fn a_placement_is_only_committed_to_the_ring_state_it_was_made_from() {
    let mut ring = Pm4Ring::new(64).unwrap();
    let p = ring.place(8).unwrap();
    assert_eq!(
        ring.pending_wptr(),
        DwordPtr::new(0),
        "placing changes nothing"
    );
    let q = ring.place(4).unwrap();
    assert!(ring.commit(&q));
    assert!(!ring.commit(&p), "the ring moved on since");
    assert_eq!(ring.pending_wptr(), DwordPtr::new(4));
    assert_eq!(
        ring.place(64),
        Err(RingError::Full {
            requested: 64,
            free: 59
        })
    );
}
