//! Any input, any bytes: the decoders and the hex reader return entries or errors, never
//! panic, and the listing covers the stream in order.

use kfd_cli::decode::{decode_words, render_entry, Engine};
use kfd_cli::drain_tool::parse_duration;
use kfd_cli::input::{parse_hex_bytes, parse_hex_dwords};
use kfd_cli::mqd_tool;
use kfd_cli::output::Style;
use kfd_cli::target::Target;
use kfd_cli::units;
use proptest::prelude::*;

fn targets() -> impl Strategy<Value = Target> {
    prop_oneof![Just("gfx9"), Just("gfx10"), Just("gfx11"), Just("gfx90a")]
        .prop_map(|t| t.parse::<Target>().expect("known target"))
}

/// Dwords biased towards packet headers, so that decoding goes past the first dword.
fn stream() -> impl Strategy<Value = Vec<u32>> {
    proptest::collection::vec(
        prop_oneof![
            any::<u32>(),
            (0u32..0x100, 0u32..0x40)
                .prop_map(|(op, count)| 0xC000_0000 | (count << 16) | (op << 8)),
            (0u32..16, 0u32..8).prop_map(|(op, sub)| op | (sub << 8)),
            Just(0xFFFF_1000),
        ],
        0..64,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn decoding_never_panics_and_entries_are_ordered(words in stream(), target in targets(), stop in any::<bool>(), sdma in any::<bool>()) {
        let engine = if sdma { Engine::Sdma } else { Engine::Pm4 };
        let (_, entries) = decode_words(&words, 7, engine, target, stop);
        let mut next = 7;
        for e in &entries {
            prop_assert!(e.offset >= next, "entries overlap: {} < {next}", e.offset);
            prop_assert!(!e.words.is_empty() || words.is_empty());
            prop_assert_eq!(e.name.is_some(), e.error.is_none());
            if let Some(d) = e.error_dword {
                prop_assert!(d >= e.offset && d < 7 + words.len().max(1));
            }
            next = e.offset + e.words.len().max(1);
            for line in render_entry(e, true, Style::new(sdma)) {
                prop_assert!(!line.contains('\n'));
            }
        }
        prop_assert!(next <= 7 + words.len().max(1));
    }

    #[test]
    fn hex_text_never_panics(text in "[0-9a-fxX:,;#/ \\t\\nzé_+-]{0,200}") {
        let _ = parse_hex_dwords(&text);
        let _ = parse_hex_bytes(&text);
    }

    #[test]
    fn dword_values_round_trip_through_hex_text(words in proptest::collection::vec(any::<u32>(), 0..50)) {
        let text: Vec<String> = words.iter().enumerate().map(|(i, w)| if i % 2 == 0 { format!("{w:08x}") } else { format!("0x{w:X}") }).collect();
        prop_assert_eq!(parse_hex_dwords(&text.join(" ")).unwrap(), words);
    }

    #[test]
    fn any_dump_decodes_or_says_why(bytes in proptest::collection::vec(any::<u8>(), 0..2100), target in targets()) {
        match mqd_tool::decode(&bytes, target, None) {
            Ok(m) => prop_assert!(!m.bytes().is_empty()),
            Err(e) => prop_assert_eq!(e.code, 2),
        }
    }

    #[test]
    fn durations_parse_or_say_why(text in "[0-9.µsmnuh ]{0,12}|\\PC{0,12}") {
        match parse_duration(&text) {
            Ok(d) => prop_assert!(d.as_secs_f64().is_finite()),
            Err(e) => prop_assert!(e.contains(&text) || e.contains("out of range") || e.contains("not a")),
        }
    }

    #[test]
    fn every_size_and_time_formats(bytes in any::<u64>(), ns in any::<u64>(), f in any::<f64>()) {
        prop_assert!(!units::bytes(bytes).is_empty());
        prop_assert!(!units::duration(std::time::Duration::from_nanos(ns)).is_empty());
        prop_assert!(!units::nanos(f).is_empty());
    }
}
