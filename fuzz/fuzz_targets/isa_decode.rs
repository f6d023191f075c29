//! Random instruction streams through the isa decoder and disassembler, for every target:
//! no panic, lengths within the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for target in isa::Target::ALL {
        let mut at = 0usize;
        while at < data.len() {
            match isa::decode(&data[at..], at as u64, target) {
                Ok((inst, len)) => {
                    assert!(len > 0 && len <= data.len() - at);
                    let _ = inst.to_string();
                    at += len;
                }
                Err(_) => at += 4,
            }
        }
    }
});
