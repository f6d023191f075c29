//! Fuzz the PM4 decoder: any bytes, as dwords, for every generation and error policy.
//! Checks: no panic, packets stay inside the input, every decoded packet re-encodes to
//! exactly its dwords, Display and the listing never panic.
#![no_main]

use std::fmt::Write as _;

use libfuzzer_sys::fuzz_target;
use pm4::decode::{ErrorPolicy, Pm4Decoder};
use pm4::disasm::Pm4Listing;
use pm4::{Encode, GfxGen};

fuzz_target!(|data: &[u8]| {
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut out = vec![0u32; 0x4001];
    let mut text = String::new();
    for gen in [GfxGen::Gfx9, GfxGen::Gfx10, GfxGen::Gfx11] {
        for policy in [ErrorPolicy::Stop, ErrorPolicy::Resync] {
            for item in Pm4Decoder::new(&words, gen).with_policy(policy) {
                match item {
                    Ok(d) => {
                        assert!(d.offset + d.words.len() <= words.len());
                        let n = d.packet.encode_into(&mut out).expect("decoded packets encode");
                        assert_eq!(&out[..n], d.words);
                        text.clear();
                        write!(text, "{}", d.packet).unwrap();
                    }
                    Err(e) => {
                        assert!(e.offset <= words.len());
                        text.clear();
                        write!(text, "{e}").unwrap();
                    }
                }
            }
        }
        text.clear();
        write!(text, "{}", Pm4Listing::new(&words, gen)).unwrap();
    }
});
