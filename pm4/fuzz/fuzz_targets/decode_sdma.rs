//! Fuzz the SDMA decoder: any bytes, as dwords, for SDMA 4, 5 and 6.
#![no_main]

use std::fmt::Write as _;

use libfuzzer_sys::fuzz_target;
use pm4::decode::SdmaDecoder;
use pm4::disasm::SdmaListing;
use pm4::{Encode, SdmaGen};

fuzz_target!(|data: &[u8]| {
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut out = vec![0u32; (1 << 20) + 8];
    let mut text = String::new();
    for gen in SdmaGen::ALL {
        for item in SdmaDecoder::new(&words, gen) {
            match item {
                Ok(d) => {
                    assert!(d.offset + d.words.len() <= words.len());
                    let n = d.packet.encode_into(&mut out).expect("decoded packets encode");
                    assert_eq!(&out[..n], d.words);
                    text.clear();
                    write!(text, "{}", d.packet).unwrap();
                }
                Err(e) => {
                    text.clear();
                    write!(text, "{e}").unwrap();
                }
            }
        }
        text.clear();
        write!(text, "{}", SdmaListing::new(&words, gen)).unwrap();
    }
});
