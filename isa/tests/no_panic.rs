//! Any bytes through decode and disassembly: no panic, a length within the input, and an
//! error that names the address for anything not decoded.

use isa::{decode, DecodeError, Target};
use proptest::prelude::*;

fn addr_of(e: &DecodeError) -> u64 {
    match *e {
        DecodeError::Truncated { addr, .. }
        | DecodeError::UnknownOpcode { addr, .. }
        | DecodeError::Illegal { addr, .. }
        | DecodeError::Unsupported { addr, .. } => addr,
    }
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        Just(Target::Gfx900),
        Just(Target::Gfx906),
        Just(Target::Gfx908),
        Just(Target::Gfx90a)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn random_words_never_panic(words in proptest::collection::vec(any::<u32>(), 0..4), cut in 0usize..4, addr in any::<u64>(), t in target()) {
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        bytes.truncate(bytes.len().saturating_sub(cut));
        match decode(&bytes, addr, t) {
            Ok((inst, len)) => {
                prop_assert!(len <= bytes.len());
                prop_assert!(len == 4 || len == 8 || len == 12);
                prop_assert_eq!(usize::from(inst.len), len);
                let text = inst.to_string();
                prop_assert!(text.starts_with(inst.op.mnemonic()));
            }
            Err(e) => {
                prop_assert_eq!(addr_of(&e), addr);
                let needle = format!("{:#x}", addr);
                prop_assert!(e.to_string().contains(&needle));
            }
        }
    }

    /// A stream decodes instruction after instruction, each from where the last ended.
    #[test]
    fn streams_walk_without_panic(words in proptest::collection::vec(any::<u32>(), 0..64), t in target()) {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut at = 0usize;
        while at < bytes.len() {
            match decode(&bytes[at..], at as u64, t) {
                Ok((inst, len)) => {
                    let _ = inst.to_string();
                    at += len;
                }
                Err(_) => at += 4,
            }
        }
        prop_assert!(at >= bytes.len());
    }
}

#[test]
fn rdna_targets_are_refused() {
    for name in ["gfx1030", "gfx1100", "gfx1010", "gfx1201"] {
        let e = name.parse::<Target>().unwrap_err();
        assert!(e.to_string().contains("RDNA"), "{name}: {e}");
    }
    assert_eq!("gfx90a:xnack+".parse::<Target>(), Ok(Target::Gfx90a));
    assert_eq!("gfx906".parse::<Target>(), Ok(Target::Gfx906));
    assert!("gfx800".parse::<Target>().is_err());
}

#[test]
fn errors_name_word_and_address() {
    // VINTRP is recognised and refused, with the word and the address in the message.
    let e = decode(&0xD400_0000u32.to_le_bytes(), 0x1234, Target::Gfx900).unwrap_err();
    assert_eq!(
        e,
        DecodeError::Unsupported {
            addr: 0x1234,
            word: 0xD400_0000,
            encoding: "VINTRP"
        }
    );
    assert_eq!(
        e.to_string(),
        "0x1234: word 0xd4000000: VINTRP encoding is not decoded"
    );
    // A MIMG instruction cut after its first dword.
    let e = decode(&0xF000_0000u32.to_le_bytes(), 0x1234, Target::Gfx900).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::Truncated {
                addr: 0x1234,
                word: 0xF000_0000,
                needed: 8,
                available: 4
            }
        ),
        "{e:?}"
    );
    // A VOP3 instruction cut after its first dword.
    let e = decode(&0xD1FD_0000u32.to_le_bytes(), 8, Target::Gfx900).unwrap_err();
    assert!(matches!(
        e,
        DecodeError::Truncated {
            addr: 8,
            needed: 8,
            available: 4,
            ..
        }
    ));
    // SOPK opcode 28 does not exist.
    let e = decode(
        &(0xB000_0000u32 | 28 << 23).to_le_bytes(),
        0,
        Target::Gfx900,
    )
    .unwrap_err();
    assert!(matches!(
        e,
        DecodeError::UnknownOpcode {
            encoding: "SOPK",
            opcode: 28,
            ..
        }
    ));
    // v_fmac_f64 exists on gfx90a only (VOP2 opcode 4 is v_mul_legacy_f32 elsewhere).
    let w = (4u32 << 25 | 4 << 17 | 8 << 9 | 0x102).to_le_bytes();
    assert_eq!(
        decode(&w, 0, Target::Gfx90a).unwrap().0.to_string(),
        "v_fmac_f64_e32 v[4:5], v[2:3], v[8:9]"
    );
    assert_eq!(
        decode(&w, 0, Target::Gfx900).unwrap().0.to_string(),
        "v_mul_legacy_f32_e32 v4, v2, v8"
    );
}

#[test]
fn instruction_is_small_and_copy() {
    fn is_copy<T: Copy>() {}
    is_copy::<isa::Instruction>();
    assert!(
        std::mem::size_of::<isa::Instruction>() <= 96,
        "{}",
        std::mem::size_of::<isa::Instruction>()
    );
}
