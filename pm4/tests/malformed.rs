//! Malformed streams: truncation at every length, unknown and unsupported opcodes,
//! reserved bits, impossible field values, per-generation differences, error policies,
//! and a few hundred thousand pseudo-random streams through both decoders.

use std::fmt::Write as _;

use pm4::decode::{
    decode_pm4_packet, decode_sdma_packet, DecodeErrorKind, ErrorPolicy, Packet, Pm4Decoder,
    SdmaDecoder,
};
use pm4::disasm::{Pm4Listing, SdmaListing};
use pm4::header::Opcode;
use pm4::hws::*;
use pm4::sdma::*;
use pm4::user::*;
use pm4::{Encode, GfxGen, PacketWriter, SdmaGen};

fn sample_stream() -> Vec<u32> {
    let mut buf = vec![0u32; 256];
    let mut w = PacketWriter::new(&mut buf);
    w.push(&RunList::new(&RunListArgs::submit(0x1000, 0x40, 2)).unwrap())
        .unwrap();
    w.push(&EventWrite::cs_partial_flush()).unwrap();
    w.push(&WriteData::memory(0x2000, &[1, 2, 3]).unwrap())
        .unwrap();
    w.nop(1).unwrap();
    w.nop(5).unwrap();
    w.push(&AcquireMemGfx9::new(
        AcquireMemGfx9::amdgpu_coher_cntl(),
        AcquireRange::full(4),
    ))
    .unwrap();
    w.push(
        &MapProcess::new(&MapProcessArgs {
            pasid: 1,
            process_quantum: 10,
            ..Default::default()
        })
        .unwrap(),
    )
    .unwrap();
    let n = w.len();
    buf.truncate(n);
    buf
}

#[test]
fn truncated_at_every_length() {
    let stream = sample_stream();
    let full: Vec<_> = Pm4Decoder::new(&stream, GfxGen::Gfx9)
        .collect::<Result<_, _>>()
        .unwrap();
    for cut in 0..stream.len() {
        let items: Vec<_> = Pm4Decoder::new(&stream[..cut], GfxGen::Gfx9).collect();
        // All complete packets before the cut decode; then exactly one Truncated error.
        let complete = full
            .iter()
            .take_while(|d| d.offset + d.words.len() <= cut)
            .count();
        let partial = full
            .iter()
            .find(|d| d.offset < cut && d.offset + d.words.len() > cut);
        assert_eq!(
            items.len(),
            complete + usize::from(partial.is_some()),
            "cut at {cut}"
        );
        for (got, want) in items.iter().zip(&full) {
            if let Ok(got) = got {
                assert_eq!(got, want);
            }
        }
        if let Some(p) = partial {
            let err = items.last().unwrap().as_ref().unwrap_err();
            assert_eq!(err.offset, p.offset);
            assert_eq!(
                err.kind,
                DecodeErrorKind::Truncated {
                    packet: p.packet.name(),
                    needed: p.words.len(),
                    available: cut - p.offset
                },
                "cut at {cut}"
            );
        }
    }
}

#[test]
fn sdma_truncated_at_every_length() {
    let mut buf = vec![0u32; 128];
    let mut w = PacketWriter::new(&mut buf);
    w.push(&SdmaCopyLinear::new(SdmaGen::Sdma5, 0, 0x100, 64).unwrap())
        .unwrap();
    w.push(&SdmaWrite::new(0x40, &[1, 2, 3, 4]).unwrap())
        .unwrap();
    w.push(&SdmaFence::new(0x80, 7).unwrap()).unwrap();
    w.push(&SdmaTrap::new(7).unwrap()).unwrap();
    w.push(&SdmaNop::new(&[0, 0]).unwrap()).unwrap();
    let n = w.len();
    let full: Vec<_> = SdmaDecoder::new(&buf[..n], SdmaGen::Sdma5)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(full.len(), 5);
    for cut in 0..n {
        let items: Vec<_> = SdmaDecoder::new(&buf[..cut], SdmaGen::Sdma5).collect();
        let complete = full
            .iter()
            .take_while(|d| d.offset + d.words.len() <= cut)
            .count();
        let partial = full
            .iter()
            .find(|d| d.offset < cut && d.offset + d.words.len() > cut);
        assert_eq!(
            items.len(),
            complete + usize::from(partial.is_some()),
            "cut at {cut}"
        );
        if let Some(p) = partial {
            let err = items.last().unwrap().as_ref().unwrap_err();
            assert_eq!(err.offset, p.offset);
            assert!(
                matches!(err.kind, DecodeErrorKind::Truncated { .. }),
                "{:?}",
                err.kind
            );
        }
    }
}

fn first_error(words: &[u32], gen: GfxGen) -> DecodeErrorKind {
    decode_pm4_packet(words, gen).unwrap_err().kind
}

#[test]
fn unknown_and_unsupported_opcodes() {
    assert_eq!(
        first_error(&[0xC000_EE00, 0], GfxGen::Gfx9),
        DecodeErrorKind::UnknownOpcode {
            opcode: Opcode(0xEE),
            dwords: 2
        }
    );
    assert_eq!(
        first_error(&[0xC002_1600, 1, 2, 3], GfxGen::Gfx9),
        DecodeErrorKind::UnsupportedOpcode {
            opcode: Opcode::DISPATCH_INDIRECT,
            dwords: 4
        }
    );
    let text = first_error(&[0xC002_1600, 1, 2, 3], GfxGen::Gfx9).to_string();
    assert_eq!(
        text,
        "opcode 0x16 (DISPATCH_INDIRECT) is not decoded (4 dwords)"
    );
}

#[test]
fn bad_packet_types_and_type2() {
    assert_eq!(
        first_error(&[0x0000_1234], GfxGen::Gfx9),
        DecodeErrorKind::BadPacketType { header: 0x1234 }
    );
    assert_eq!(
        first_error(&[0x4000_0000], GfxGen::Gfx9),
        DecodeErrorKind::BadPacketType {
            header: 0x4000_0000
        }
    );
    assert_eq!(
        decode_pm4_packet(&[0x8000_0000], GfxGen::Gfx9).unwrap(),
        (Packet::Type2Filler, 1)
    );
    assert_eq!(
        first_error(&[0x8000_0001], GfxGen::Gfx9),
        DecodeErrorKind::ReservedBits {
            packet: "TYPE2",
            dword: 0,
            bits: 1
        }
    );
}

#[test]
fn reserved_bits_are_reported_with_their_dword() {
    let mq = MapQueues::new(&MapQueuesArgs {
        queue_sel: MapQueueSel::HwsDetermined,
        queue_type: MapQueueType::NormalCompute,
        engine: QueueEngine::Compute,
        gws_control_queue: false,
        num_queues: 1,
        check_disable: false,
        doorbell_offset: 8,
        mqd_addr: 0,
        wptr_addr: 0,
    })
    .unwrap();
    let mut d = mq.to_dwords();
    d[1] |= 1;
    assert_eq!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::ReservedBits {
            packet: "MAP_QUEUES",
            dword: 1,
            bits: 1
        }
    );
    let mut d = mq.to_dwords();
    d[2] |= 0x8000_0000;
    assert_eq!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::ReservedBits {
            packet: "MAP_QUEUES",
            dword: 2,
            bits: 0x8000_0000
        }
    );
    // Header bits [7:2].
    let mut d = mq.to_dwords();
    d[0] |= 0x4;
    assert_eq!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::ReservedBits {
            packet: "MAP_QUEUES",
            dword: 0,
            bits: 4
        }
    );
    // The message names the packet, the dword and the bits.
    let e = decode_pm4_packet(&d, GfxGen::Gfx9).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at dword 0: MAP_QUEUES: reserved bits 0x00000004 set in dw0"
    );
    // shader_type (bit 1) is a field, not reserved.
    let mut d = mq.to_dwords();
    d[0] |= 0x2;
    assert!(decode_pm4_packet(&d, GfxGen::Gfx9).is_ok());
}

#[test]
fn impossible_field_values() {
    // WRITE_DATA dst_sel 4 does not exist.
    let mut d = WriteData::memory(0x1000, &[1]).unwrap();
    d.head.control = d.head.control.with_dst_sel(WriteDataDst::Reserved(4));
    let mut buf = [0u32; 5];
    d.encode_into(&mut buf).unwrap();
    assert_eq!(
        first_error(&buf, GfxGen::Gfx9),
        DecodeErrorKind::InvalidField {
            packet: "WRITE_DATA",
            dword: 1,
            field: "dst_sel",
            value: 4
        }
    );
    // MAP_QUEUES legacy engine_sel 1 means nothing.
    let mut mq = MapQueues::new(&MapQueuesArgs {
        queue_sel: MapQueueSel::HwsDetermined,
        queue_type: MapQueueType::NormalCompute,
        engine: QueueEngine::Compute,
        gws_control_queue: false,
        num_queues: 1,
        check_disable: false,
        doorbell_offset: 8,
        mqd_addr: 0,
        wptr_addr: 0,
    })
    .unwrap();
    mq.dw1 = mq.dw1.with_engine_sel(1);
    assert_eq!(
        first_error(&mq.to_dwords(), GfxGen::Gfx9),
        DecodeErrorKind::InvalidField {
            packet: "MAP_QUEUES",
            dword: 1,
            field: "engine_sel",
            value: 1
        }
    );
    // RELEASE_MEM data_sel 7, int_sel 7, misaligned 64-bit address.
    let base = [0xC006_4900u32, 0x0000_0514, 0x4200_0000, 0x1000, 0, 0, 0, 0];
    let mut d = base;
    d[2] = 0xE000_0000;
    assert!(matches!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::InvalidField {
            field: "data_sel",
            value: 7,
            ..
        }
    ));
    let mut d = base;
    d[2] = 0x0700_0000;
    assert!(matches!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::InvalidField {
            field: "int_sel",
            value: 7,
            ..
        }
    ));
    let mut d = base;
    d[3] = 0x1004;
    assert_eq!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::ReservedBits {
            packet: "RELEASE_MEM",
            dword: 3,
            bits: 4
        }
    );
    // int_sel "interrupt only" with data.
    let mut d = base;
    d[2] = 0x2100_0000;
    assert!(matches!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::InvalidField {
            field: "data_sel",
            ..
        }
    ));
    // event_index 0 is not a RELEASE_MEM index.
    let mut d = base;
    d[1] = 0x14;
    assert!(matches!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::InvalidField {
            field: "event_index",
            value: 0,
            ..
        }
    ));
    // INDIRECT_BUFFER without valid.
    let d = [0xC002_3F00, 0x1000, 0, 0x40];
    assert!(matches!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::InvalidField { field: "valid", .. }
    ));
}

#[test]
fn generation_dependent_layouts() {
    // RELEASE_MEM with mes_intr_pipe set: reserved on gfx9, a field on gfx10+.
    let d = [0xC006_4900u32, 0x0000_0514, 0x0010_0000, 0, 0, 0, 0, 0];
    assert_eq!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::ReservedBits {
            packet: "RELEASE_MEM",
            dword: 2,
            bits: 0x0010_0000
        }
    );
    assert!(matches!(
        decode_pm4_packet(&d, GfxGen::Gfx10).unwrap().0,
        Packet::ReleaseMemGfx10(_)
    ));
    // The same dw1 means different things.
    let d = [0xC006_4900u32, 0x0660_3514, 0x2000_0000, 0, 0, 0, 0, 0];
    assert!(matches!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::ReservedBits { dword: 1, .. }
    ));
    // ACQUIRE_MEM lengths.
    let g9 =
        AcquireMemGfx9::new(AcquireMemGfx9::amdgpu_coher_cntl(), AcquireRange::full(4)).to_dwords();
    assert_eq!(
        first_error(&g9, GfxGen::Gfx10),
        DecodeErrorKind::WrongLength {
            packet: "ACQUIRE_MEM",
            dwords: 7,
            min: 8,
            max: 8
        }
    );
    let g10 =
        AcquireMemGfx10::new(AcquireMemGfx10::amdgpu_gcr(), AcquireRange::full(4)).to_dwords();
    assert_eq!(
        first_error(&g10, GfxGen::Gfx9),
        DecodeErrorKind::WrongLength {
            packet: "ACQUIRE_MEM",
            dwords: 8,
            min: 7,
            max: 7
        }
    );
    // WAIT_REG_MEM cache_policy exists on gfx10+ only.
    let d = [0xC005_3C00u32, 0x0200_0013, 0x1000, 0, 1, 1, 4];
    assert!(matches!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::ReservedBits { dword: 1, .. }
    ));
    assert!(decode_pm4_packet(&d, GfxGen::Gfx11).is_ok());
    // MAP_PROCESS with any other length.
    let mut d = vec![0xC00F_A100u32];
    d.resize(17, 0);
    assert_eq!(
        first_error(&d, GfxGen::Gfx9),
        DecodeErrorKind::WrongLength {
            packet: "MAP_PROCESS",
            dwords: 17,
            min: 16,
            max: 21
        }
    );
    // SDMA: count wider than 22 bits only on SDMA 6; backwards only on SDMA 5+.
    let mut c = SdmaCopyLinear::new(SdmaGen::Sdma6, 0, 0, 1 << 24).unwrap();
    assert!(SdmaDecoder::new(&c.to_dwords(), SdmaGen::Sdma6)
        .next()
        .unwrap()
        .is_ok());
    let e = SdmaDecoder::new(&c.to_dwords(), SdmaGen::Sdma5)
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::ReservedBits {
            packet: "SDMA_COPY_LINEAR",
            dword: 1,
            bits: 0x00C0_0000
        }
    );
    c.count = 0;
    c.header = c.header.with_backwards(true);
    assert!(SdmaDecoder::new(&c.to_dwords(), SdmaGen::Sdma5)
        .next()
        .unwrap()
        .is_ok());
    assert!(SdmaDecoder::new(&c.to_dwords(), SdmaGen::Sdma4)
        .next()
        .unwrap()
        .is_err());
}

#[test]
fn sdma_unknown_and_unsupported() {
    let e = SdmaDecoder::new(&[0x0000_0003], SdmaGen::Sdma4)
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::UnknownSdmaOpcode { op: 3, sub_op: 0 }
    );
    let e = SdmaDecoder::new(&[0x0000_0007, 0, 0], SdmaGen::Sdma4)
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::UnsupportedSdmaOpcode {
            op: SdmaOpcode::SEM,
            sub_op: 0
        }
    );
    let e = SdmaDecoder::new(&[0x0000_0101, 0, 0, 0, 0, 0, 0], SdmaGen::Sdma4)
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::UnsupportedSdmaOpcode {
            op: SdmaOpcode::COPY,
            sub_op: 1
        }
    );
    // WRITE whose count disagrees with nothing: count is the length, so a too-long count truncates.
    let e = SdmaDecoder::new(&[0x2, 0, 0, 10, 1], SdmaGen::Sdma4)
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::Truncated {
            packet: "SDMA_WRITE_LINEAR",
            needed: 15,
            available: 5
        }
    );
    // Zero dwords are one-dword NOPs.
    assert_eq!(
        SdmaDecoder::new(&[0, 0, 0], SdmaGen::Sdma6)
            .filter(|r| r.is_ok())
            .count(),
        3
    );
}

#[test]
fn stop_and_resync_policies() {
    // good, unknown opcode (length known), type-1 header, good.
    let stream = [
        0xC000_4600,
        0x407,
        0xC001_EE00,
        0xAA,
        0xBB,
        0x4000_0000,
        0xFFFF_1000,
    ];
    let stop: Vec<_> = Pm4Decoder::new(&stream, GfxGen::Gfx9).collect();
    assert_eq!(stop.len(), 2);
    assert!(stop[1].is_err());
    let resync: Vec<_> = Pm4Decoder::new(&stream, GfxGen::Gfx9)
        .with_policy(ErrorPolicy::Resync)
        .collect();
    let summary: Vec<_> = resync
        .iter()
        .map(|r| r.as_ref().map(|d| d.offset).map_err(|e| e.offset))
        .collect();
    assert_eq!(summary, [Ok(0), Err(2), Err(5), Ok(6)]);
    // The listing shows all of it.
    let text = Pm4Listing::new(&stream, GfxGen::Gfx9).to_string();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[1].starts_with("  0x0002: c001ee00 000000aa 000000bb"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].ends_with("; error: unknown opcode 0xee (3 dwords)"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("; error: header 0x40000000 has packet type 1 (expected 3)"),
        "{}",
        lines[2]
    );
    assert!(lines[3].ends_with("NOP (1 dword)"));
}

/// A tiny xorshift generator (no extra crate).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const PM4_OPCODES: [u8; 24] = [
    0x10, 0x15, 0x16, 0x37, 0x3C, 0x3F, 0x40, 0x46, 0x49, 0x50, 0x58, 0x76, 0x93, 0xA0, 0xA1, 0xA2,
    0xA3, 0xA4, 0xA5, 0x22, 0x5C, 0x00, 0xFF, 0x79,
];

/// A stream mixing random dwords with plausible headers (so decoding goes deep).
fn random_pm4(rng: &mut XorShift, out: &mut Vec<u32>) {
    out.clear();
    let len = rng.below(48) as usize;
    while out.len() < len {
        match rng.below(4) {
            0 => out.push(rng.next() as u32),
            1 => out.push(0xFFFF_1000),
            _ => {
                let op = PM4_OPCODES[rng.below(PM4_OPCODES.len() as u64) as usize] as u32;
                let count = rng.below(24) as u32;
                out.push(0xC000_0000 | (count << 16) | (op << 8) | (rng.below(3) as u32 & 2));
                for _ in 0..=count {
                    // Mostly small values: valid selects and aligned addresses are likely.
                    let v = match rng.below(3) {
                        0 => rng.next() as u32,
                        1 => (rng.next() as u32) & 0x0707_0F3F,
                        _ => 0,
                    };
                    out.push(v);
                }
            }
        }
    }
}

fn random_sdma(rng: &mut XorShift, out: &mut Vec<u32>) {
    out.clear();
    let len = rng.below(48) as usize;
    while out.len() < len {
        match rng.below(3) {
            0 => out.push(rng.next() as u32),
            _ => {
                let op = rng.below(17) as u32;
                let sub = if rng.below(4) == 0 {
                    rng.below(4) as u32
                } else {
                    0
                };
                let hi = if rng.below(2) == 0 {
                    0
                } else {
                    (rng.next() as u32) & 0x0003_0000
                };
                out.push(op | (sub << 8) | hi);
                for _ in 0..rng.below(9) {
                    out.push(if rng.below(2) == 0 {
                        rng.below(64) as u32
                    } else {
                        rng.next() as u32 & !3
                    });
                }
            }
        }
    }
}

/// A `fmt::Write` sink that only counts.
struct Sink(usize);
impl std::fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

#[test]
fn pseudo_random_streams_never_panic_and_reencode_exactly() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut words = Vec::with_capacity(128);
    let mut buf = vec![0u32; 0x4001];
    let mut sink = Sink(0);
    let (mut ok, mut err) = (0u64, 0u64);
    // Miri interprets every step: a few hundred streams there still walk every decoder path.
    const STREAMS: usize = if cfg!(miri) { 300 } else { 150_000 };
    for i in 0..STREAMS {
        random_pm4(&mut rng, &mut words);
        let gen = [GfxGen::Gfx9, GfxGen::Gfx10, GfxGen::Gfx11][i % 3];
        let policy = if i % 2 == 0 {
            ErrorPolicy::Stop
        } else {
            ErrorPolicy::Resync
        };
        let mut last_end = 0;
        for item in Pm4Decoder::new(&words, gen).with_policy(policy) {
            match item {
                Ok(d) => {
                    ok += 1;
                    assert!(d.offset >= last_end && d.offset + d.words.len() <= words.len());
                    assert_eq!(&words[d.offset..d.offset + d.words.len()], d.words);
                    last_end = d.offset + d.words.len();
                    // A decoded packet encodes back to exactly its dwords.
                    let n = d.packet.encode_into(&mut buf).unwrap();
                    assert_eq!(&buf[..n], d.words, "{:?}", d.packet);
                    write!(sink, "{}", d.packet).unwrap();
                }
                Err(e) => {
                    err += 1;
                    assert!(e.offset <= words.len());
                    write!(sink, "{e}").unwrap();
                }
            }
        }
        write!(sink, "{}", Pm4Listing::new(&words, gen)).unwrap();
    }
    for i in 0..STREAMS {
        random_sdma(&mut rng, &mut words);
        let gen = SdmaGen::ALL[i % SdmaGen::ALL.len()];
        for item in SdmaDecoder::new(&words, gen) {
            match item {
                Ok(d) => {
                    ok += 1;
                    let n = d.packet.encode_into(&mut buf).unwrap();
                    assert_eq!(&buf[..n], d.words, "{:?}", d.packet);
                    write!(sink, "{}", d.packet).unwrap();
                }
                Err(e) => {
                    err += 1;
                    write!(sink, "{e}").unwrap();
                }
            }
        }
        write!(sink, "{}", SdmaListing::new(&words, gen)).unwrap();
    }
    println!(
        "{} streams: {ok} packets decoded, {err} errors, {} bytes of text",
        2 * STREAMS,
        sink.0
    );
    // (100 000 and 10 000 for the full 150 000 streams.)
    let streams = STREAMS as u64;
    assert!(
        ok > streams * 2 / 3 && err > streams / 15,
        "the generator must reach both paths: ok={ok} err={err}"
    );
}

#[test]
fn sdma_sub_wind_reserved_bits_and_element_size() {
    let s = SubWindSurface {
        addr: 0x1000,
        pitch: 16,
        slice_pitch: 256,
        ..Default::default()
    };
    let good = SdmaCopyLinearSubWind::new(1, s, s, [4, 4, 1])
        .unwrap()
        .to_dwords();
    let err = |words: &[u32], gen| decode_sdma_packet(words, gen).unwrap_err().kind;
    let with = |dw: usize, bits: u32| {
        let mut w = good;
        w[dw] |= bits;
        w
    };
    // elementsize 5..=7 is not an element the engine has.
    assert_eq!(
        err(&with(0, 5 << 29), SdmaGen::Sdma4),
        DecodeErrorKind::InvalidField {
            packet: "SDMA_COPY_LINEAR_SUB_WIND",
            dword: 0,
            field: "elementsize",
            value: 5,
        }
    );
    for (dw, bits) in [
        (0, 1 << 16),
        (1, 0b10),
        (3, 1 << 14),
        (4, 1 << 11),
        (5, 1 << 28),
        (6, 1),
        (8, 1 << 31),
        (9, 1 << 12),
        (10, 1 << 31),
        (11, 1 << 30),
        (12, 1 << 11),
        (12, 1 << 31),
    ] {
        assert_eq!(
            err(&with(dw, bits), SdmaGen::Sdma5),
            DecodeErrorKind::ReservedBits {
                packet: "SDMA_COPY_LINEAR_SUB_WIND",
                dword: dw,
                bits,
            },
            "dw{dw} bits {bits:#x}"
        );
    }
    // Cache policies exist on SDMA 6 only.
    let policy = with(12, 0b101 << 26);
    assert!(decode_sdma_packet(&policy, SdmaGen::Sdma6).is_ok());
    assert!(matches!(
        err(&policy, SdmaGen::Sdma4),
        DecodeErrorKind::ReservedBits { dword: 12, .. }
    ));
    // Truncated at every length.
    for cut in 1..13 {
        assert!(matches!(
            err(&good[..cut], SdmaGen::Sdma4),
            DecodeErrorKind::Truncated { needed: 13, .. }
        ));
    }
}
