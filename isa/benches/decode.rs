//! Decode and disassembly rates over a stream of valid instructions of every encoding
//! (built from random words the decoder accepts, so it needs no LLVM).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use isa::{decode, Program, Target};
use std::fmt::Write;

fn stream(target: Target, n: usize) -> Vec<u8> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut out = Vec::with_capacity(n * 8);
    let mut count = 0;
    while count < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = [
            x.to_le_bytes(),
            (x.rotate_left(29) ^ 0x3F80_0000).to_le_bytes(),
        ]
        .concat();
        if let Ok((_, len)) = decode(&bytes, 0, target) {
            out.extend_from_slice(&bytes[..len]);
            count += 1;
        }
    }
    out
}

fn walk(bytes: &[u8], target: Target) -> usize {
    let mut at = 0;
    let mut n = 0;
    while at < bytes.len() {
        let (inst, len) = decode(&bytes[at..], at as u64, target).expect("stream decodes");
        black_box(&inst);
        at += len;
        n += 1;
    }
    n
}

fn benches(c: &mut Criterion) {
    let target = Target::Gfx90a;
    let code = stream(target, 20_000);
    let n = walk(&code, target);
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(code.len() as u64));
    g.bench_function("decode_bytes", |b| {
        b.iter(|| walk(black_box(&code), target))
    });
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("decode_instructions", |b| {
        b.iter(|| walk(black_box(&code), target))
    });
    let mut text = String::with_capacity(128);
    g.bench_function("decode_and_disassemble", |b| {
        b.iter(|| {
            let mut at = 0;
            while at < code.len() {
                let (inst, len) = decode(&code[at..], at as u64, target).expect("stream decodes");
                text.clear();
                let _ = write!(text, "{inst}");
                black_box(&text);
                at += len;
            }
        })
    });
    // The interpreter's path: fetch pre-decoded instructions by address.
    let program = Program::new(&code, 0x1000, target);
    g.bench_function("fetch_predecoded", |b| {
        b.iter(|| {
            let mut addr = 0x1000u64;
            let end = 0x1000 + code.len() as u64;
            while addr < end {
                let inst = program.fetch(addr).expect("decoded");
                addr += u64::from(inst.len);
                black_box(inst);
            }
        })
    });
    g.finish();
}

criterion_group!(decode_benches, benches);
criterion_main!(decode_benches);
