//! `kfd decode`: disassembles a PM4 or SDMA stream into a dword-offset listing.
//!
//! Without colour the listing lines are exactly those of [`pm4::disasm::Pm4Listing`] and
//! [`pm4::disasm::SdmaListing`] (`  0x0000: <hex dwords>  <packet>`); an error line is followed
//! by a caret under the offending dword. PM4 decoding resynchronises after a bad packet whose
//! length is known (`--stop-at-error` stops instead); SDMA decoding stops at the first error,
//! since an unknown SDMA opcode does not say how long it is.

use std::path::PathBuf;

use pm4::decode::{DecodeError, DecodeErrorKind, ErrorPolicy, Pm4Decoder, SdmaDecoder};
use pm4::disasm::LISTING_HEX_DWORDS;
use pm4::header::Type3Header;
use serde::Serialize;

use crate::error::{CliError, CliResult};
use crate::input::{self, InputFormat};
use crate::output::{Out, Style, Tone};
use crate::target::Target;

/// Which command processor's packets the stream holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// PM4 if the first dword is a type-3 header or the type-2 filler, else SDMA.
    #[default]
    Auto,
    /// PM4 type-3 packets (compute queues, the HIQ, runlist IBs).
    Pm4,
    /// SDMA packets.
    Sdma,
}

/// What `kfd decode` was asked.
#[derive(Clone, Debug, clap::Args)]
pub struct DecodeArgs {
    /// The stream: a binary dump or hex text; `-` or nothing reads stdin.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The stream as hex text on the command line ("c0001000 00000000").
    #[arg(long, value_name = "TEXT", conflicts_with = "input")]
    pub hex: Option<String>,
    /// How the input is spelled.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub format: InputFormat,
    /// Packet family.
    #[arg(long, value_enum, default_value_t = Engine::Auto)]
    pub engine: Engine,
    /// GPU generation whose layouts apply: gfx9, gfx10, gfx11, a part (gfx90a) or a GC version.
    #[arg(long, value_name = "TARGET", default_value = "gfx9")]
    pub gfx: Target,
    /// Dwords to skip at the start of the input (offsets stay those of the input).
    #[arg(long, value_name = "DWORDS", default_value_t = 0)]
    pub skip: usize,
    /// Dwords to decode after the skipped ones (default: all).
    #[arg(long, value_name = "DWORDS")]
    pub count: Option<usize>,
    /// Print every dword of long packets on continuation lines (the listing shows 8 and `+N`).
    #[arg(long)]
    pub full: bool,
    /// Stop at the first bad PM4 packet instead of resynchronising.
    #[arg(long)]
    pub stop_at_error: bool,
    /// Print JSON: one object per packet or error.
    #[arg(long)]
    pub json: bool,
}

/// One line of the listing: a packet or an error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// Dword offset in the input.
    pub offset: usize,
    /// The dwords the line covers.
    pub words: Vec<u32>,
    /// Packet name, for a decoded packet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'static str>,
    /// The disassembly (`NAME field=value …`), for a decoded packet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The disassembler's `field=value` pairs, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<(String, String)>,
    /// What is wrong, for an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The offending dword (input offset), for an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_dword: Option<usize>,
    /// For an undecoded opcode with an intact header, the header's disassembly.
    #[serde(skip)]
    pub header: Option<String>,
    /// The error is the input ending inside the packet (more input would decode it).
    #[serde(skip)]
    pub truncated: bool,
}

/// A decoded stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// Where the input came from.
    pub source: String,
    /// `pm4` or `sdma`.
    pub engine: &'static str,
    /// The layouts used (`gfx9`, `SDMA 4 (gfx9)`, …).
    pub layouts: String,
    /// Dwords decoded.
    pub dwords: usize,
    /// Packets and errors in stream order.
    pub entries: Vec<Entry>,
    /// Decoded packets.
    pub packets: usize,
    /// Errors.
    pub errors: usize,
    /// Bytes at the end of the input that do not make a dword.
    pub trailing_bytes: usize,
}

impl Listing {
    /// The first error, as the one line `kfd` prints on stderr.
    pub fn first_error(&self) -> Option<String> {
        let problem = self.entries.iter().find_map(|e| {
            e.error
                .as_ref()
                .map(|msg| (e.error_dword.unwrap_or(e.offset), msg))
        });
        match problem {
            Some((dword, msg)) => Some(format!(
                "{} decode error(s) in {}; first at dword {dword} ({:#x}): {msg}",
                self.errors, self.source, dword
            )),
            None if self.trailing_bytes > 0 => Some(format!(
                "{} ends with {} byte(s) that do not make a whole dword (byte offset {:#x})",
                self.source,
                self.trailing_bytes,
                self.dwords * 4
            )),
            None => None,
        }
    }
}

/// The `field=value` tokens of a disassembly line.
pub fn fields_of(text: &str) -> Vec<(String, String)> {
    text.split_whitespace()
        .filter_map(|token| {
            let (key, value) = token.split_once('=')?;
            let key_ok = !key.is_empty()
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
            key_ok.then(|| (key.to_owned(), value.to_owned()))
        })
        .collect()
}

fn error_dword(e: &DecodeError) -> usize {
    match e.kind {
        DecodeErrorKind::ReservedBits { dword, .. }
        | DecodeErrorKind::InvalidField { dword, .. } => e.offset + dword,
        _ => e.offset,
    }
}

fn error_entry(all: &[u32], base: usize, e: &DecodeError, len: usize) -> Entry {
    let words = all.get(e.offset..).unwrap_or_default();
    let words = words.get(..len.min(words.len())).unwrap_or_default();
    let header = match e.kind {
        DecodeErrorKind::UnknownOpcode { .. } | DecodeErrorKind::UnsupportedOpcode { .. } => words
            .first()
            .map(|&w| Type3Header::from_bits(w).to_string()),
        _ => None,
    };
    Entry {
        offset: base + e.offset,
        words: words.to_vec(),
        name: None,
        text: None,
        fields: Vec::new(),
        error: Some(e.kind.to_string()),
        error_dword: Some(base + error_dword(e)),
        header,
        truncated: matches!(e.kind, DecodeErrorKind::Truncated { .. }),
    }
}

fn packet_entry(
    base: usize,
    offset: usize,
    words: &[u32],
    name: &'static str,
    text: String,
) -> Entry {
    Entry {
        offset: base + offset,
        words: words.to_vec(),
        name: Some(name),
        fields: fields_of(&text),
        text: Some(text),
        error: None,
        error_dword: None,
        header: None,
        truncated: false,
    }
}

/// Chooses PM4 or SDMA for `words`.
pub fn detect_engine(words: &[u32]) -> Engine {
    match words.first() {
        Some(&w) if w >> 30 == 3 || w == 0x8000_0000 => Engine::Pm4,
        Some(_) => Engine::Sdma,
        None => Engine::Pm4,
    }
}

/// Decodes `words` (the input from dword `base` on).
pub fn decode_words(
    words: &[u32],
    base: usize,
    engine: Engine,
    target: Target,
    stop_at_error: bool,
) -> (Engine, Vec<Entry>) {
    let engine = match engine {
        Engine::Auto => detect_engine(words),
        e => e,
    };
    let mut entries = Vec::new();
    if engine == Engine::Sdma {
        for item in SdmaDecoder::new(words, target.sdma()) {
            match item {
                Ok(d) => entries.push(packet_entry(
                    base,
                    d.offset,
                    d.words,
                    d.packet.name(),
                    d.packet.to_string(),
                )),
                Err(e) => {
                    let len = words.len().saturating_sub(e.offset);
                    entries.push(error_entry(words, base, &e, len));
                }
            }
        }
        return (engine, entries);
    }
    let policy = if stop_at_error {
        ErrorPolicy::Stop
    } else {
        ErrorPolicy::Resync
    };
    let mut dec = Pm4Decoder::new(words, target.generation()).with_policy(policy);
    while let Some(item) = dec.next() {
        match item {
            Ok(d) => entries.push(packet_entry(
                base,
                d.offset,
                d.words,
                d.packet.name(),
                d.packet.to_string(),
            )),
            Err(e) => {
                // After a resync the next position says where the bad packet ended; after a
                // stop the rest of the stream is shown.
                let len = if dec.position() > e.offset {
                    dec.position() - e.offset
                } else {
                    words.len().saturating_sub(e.offset)
                };
                entries.push(error_entry(words, base, &e, len));
            }
        }
    }
    (engine, entries)
}

const HEX_COLUMN: usize = 4 * 9 - 1;

fn hex_column(words: &[u32], mark: Option<usize>, style: Style) -> String {
    let mut out = String::new();
    let mut width = 0;
    for (i, w) in words.iter().take(LISTING_HEX_DWORDS).enumerate() {
        if i > 0 {
            out.push(' ');
            width += 1;
        }
        let hex = format!("{w:08x}");
        let tone = if mark == Some(i) {
            Tone::Error
        } else {
            Tone::Dim
        };
        out.push_str(&style.paint(tone, &hex));
        width += 8;
    }
    if words.len() > LISTING_HEX_DWORDS {
        let more = format!(" +{}", words.len() - LISTING_HEX_DWORDS);
        width += more.len();
        out.push_str(&more);
    }
    for _ in width..HEX_COLUMN {
        out.push(' ');
    }
    out
}

/// The text lines of one entry (the listing line, then any continuation or caret line).
pub fn render_entry(entry: &Entry, full: bool, style: Style) -> Vec<String> {
    let mark = entry
        .error_dword
        .and_then(|d| d.checked_sub(entry.offset))
        .filter(|&i| i < entry.words.len());
    let mut line = format!(
        "  {}: {}  ",
        style.paint(Tone::Dim, &format!("{:#06x}", entry.offset)),
        hex_column(&entry.words, mark, style)
    );
    match (&entry.text, &entry.error) {
        (Some(text), _) => {
            let (name, rest) = text.split_once(' ').unwrap_or((text.as_str(), ""));
            line.push_str(&style.paint(Tone::Name, name));
            if !rest.is_empty() {
                line.push(' ');
                line.push_str(rest);
            }
        }
        (None, Some(error)) => {
            if let Some(h) = &entry.header {
                line.push_str(h);
                line.push(' ');
            }
            line.push_str(&style.paint(Tone::Error, &format!("; error: {error}")));
        }
        (None, None) => {}
    }
    let mut lines = vec![line];
    if full && entry.words.len() > LISTING_HEX_DWORDS {
        for (i, chunk) in entry.words.chunks(LISTING_HEX_DWORDS).enumerate().skip(1) {
            let offset = entry.offset + i * LISTING_HEX_DWORDS;
            let hex: Vec<String> = chunk.iter().map(|w| format!("{w:08x}")).collect();
            lines.push(format!(
                "  {}  {}",
                style.paint(Tone::Dim, &format!("{offset:#06x}")),
                style.paint(Tone::Dim, &hex.join(" "))
            ));
        }
    }
    if let (Some(i), Some(dword)) = (mark.filter(|&i| i < LISTING_HEX_DWORDS), entry.error_dword) {
        // "  0x0000: " is 10 columns; each dword takes 9.
        let pad = " ".repeat(10 + 9 * i);
        lines.push(format!(
            "{pad}{} dword {dword} ({dword:#x})",
            style.paint(Tone::Error, "^^^^^^^^")
        ));
    }
    lines
}

/// Dwords decoded per step: the input is read, decoded and printed this much at a time, so
/// memory stays bounded whatever the input's size.
pub const CHUNK_DWORDS: usize = 16 << 10;

/// A packet still cut at this many carried dwords is reported as truncated (the longest PM4
/// packet is 16 Ki + 2 dwords; SDMA WRITE_LINEAR carries up to 2^20).
const MAX_CARRY_DWORDS: usize = 1 << 21;

/// Counts kept while the listing streams out.
#[derive(Default)]
struct Tally {
    dwords: usize,
    packets: usize,
    errors: usize,
    first_error: Option<(usize, String)>,
}

/// Runs `kfd decode`: reads only the dwords `--skip` and `--count` ask for, and prints each
/// chunk of the listing as soon as it is decoded.
pub fn run(args: &DecodeArgs, style: Style) -> CliResult<()> {
    let mut input =
        input::DwordReader::open(args.input.as_deref(), args.hex.as_deref(), args.format)?;
    let label = input.label.clone();
    let skipped = input.skip(args.skip)?;
    if skipped < args.skip {
        return Err(CliError::usage(if skipped == 0 {
            format!("{label} holds no dwords to decode")
        } else {
            format!(
                "--skip {} is past the end of {label} ({skipped} dwords)",
                args.skip
            )
        }));
    }
    let mut remaining = args.count.unwrap_or(usize::MAX);
    let mut buf = Vec::new();
    remaining -= input.read_into(CHUNK_DWORDS.min(remaining), &mut buf)?;
    if buf.is_empty() && args.skip == 0 && input.at_end()? {
        let trailing = input.trailing_bytes();
        return Err(CliError::usage(if trailing > 0 {
            format!(
                "{label} holds {trailing} byte(s), less than one dword: nothing to decode \
                 (--format bytes reads bytes in memory order, 4 to a dword)"
            )
        } else {
            format!("{label} holds no dwords to decode")
        }));
    }
    let engine = match args.engine {
        Engine::Auto => detect_engine(&buf),
        e => e,
    };
    let (engine_name, layouts) = match engine {
        Engine::Sdma => (
            "sdma",
            format!(
                "SDMA {} ({})",
                args.gfx.sdma().major(),
                args.gfx.generation()
            ),
        ),
        _ => ("pm4", args.gfx.generation().to_string()),
    };
    // Input that fits one chunk is listed as before; longer input is streamed and its dword
    // count comes last.
    let streamed = remaining > 0 && !input.at_end()?;
    let mut out = Out::stdout();
    if args.json {
        out.text(&format!(
            "{{\n  \"source\": {},\n  \"engine\": \"{engine_name}\",\n  \"layouts\": {},\n  \"entries\": [",
            json_string(&label)?,
            json_string(&layouts)?
        ))?;
    } else {
        let heading = if engine == Engine::Sdma {
            layouts.clone()
        } else {
            format!("PM4 {layouts}")
        };
        let size = if streamed {
            "streamed".to_owned()
        } else {
            format!("{} dword(s)", buf.len())
        };
        out.line(&style.paint(Tone::Dim, &format!("; {heading}, {size} from {label}")))?;
    }
    let mut tally = Tally::default();
    let mut base = args.skip;
    loop {
        let at_end = remaining == 0 || input.at_end()?;
        let (_, mut entries) = decode_words(&buf, base, engine, args.gfx, args.stop_at_error);
        // A packet cut by the end of the chunk is decoded again with the next one.
        let carry_from = match entries.last() {
            Some(last) if !at_end && last.truncated && buf.len() < MAX_CARRY_DWORDS => {
                Some(last.offset - base)
            }
            _ => None,
        };
        if carry_from.is_some() {
            entries.pop();
        }
        let decoded = carry_from.unwrap_or(buf.len());
        // SDMA stops at its first error; so does PM4 with --stop-at-error.
        let stop = entries.iter().any(|e| e.error.is_some())
            && (engine == Engine::Sdma || args.stop_at_error);
        for entry in &entries {
            if entry.error.is_some() {
                tally.errors += 1;
                if tally.first_error.is_none() {
                    tally.first_error = entry
                        .error
                        .clone()
                        .map(|m| (entry.error_dword.unwrap_or(entry.offset), m));
                }
            } else {
                tally.packets += 1;
            }
            if args.json {
                let sep = if tally.packets + tally.errors > 1 {
                    ","
                } else {
                    ""
                };
                out.text(&format!("{sep}\n    {}", json_compact(entry)?))?;
            } else {
                for line in render_entry(entry, args.full, style) {
                    out.line(&line)?;
                }
            }
        }
        tally.dwords += decoded;
        if stop || at_end && carry_from.is_none() {
            break;
        }
        buf.drain(..decoded);
        base += decoded;
        let want = CHUNK_DWORDS.min(remaining);
        remaining -= input.read_into(want, &mut buf)?;
    }
    let trailing_bytes = if remaining > 0 {
        input.trailing_bytes()
    } else {
        0
    };
    let listing = Listing {
        source: label,
        engine: engine_name,
        layouts,
        dwords: tally.dwords,
        entries: Vec::new(),
        packets: tally.packets,
        errors: tally.errors,
        trailing_bytes,
    };
    if args.json {
        out.line(&format!(
            "\n  ],\n  \"dwords\": {},\n  \"packets\": {},\n  \"errors\": {},\n  \"trailing_bytes\": {}\n}}",
            listing.dwords, listing.packets, listing.errors, listing.trailing_bytes
        ))?;
    } else {
        let totals = format!("{} packet(s), {} error(s)", listing.packets, listing.errors);
        let footer = if streamed {
            format!("; {} dword(s), {totals}", listing.dwords)
        } else {
            format!("; {totals}")
        };
        out.line(&style.paint(Tone::Dim, &footer))?;
    }
    out.flush()?;
    let first_error = match tally.first_error {
        Some((dword, msg)) => Some(format!(
            "{} decode error(s) in {}; first at dword {dword} ({:#x}): {msg}",
            listing.errors, listing.source, dword
        )),
        None => listing.first_error(),
    };
    match first_error {
        Some(message) => Err(CliError::usage(message)),
        None => Ok(()),
    }
}

fn json_string(s: &str) -> CliResult<String> {
    serde_json::to_string(s).map_err(|e| CliError::failure(format!("cannot format JSON: {e}")))
}

fn json_compact(entry: &Entry) -> CliResult<String> {
    serde_json::to_string(entry).map_err(|e| CliError::failure(format!("cannot format JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pm4::disasm::{Pm4Listing, SdmaListing};

    fn plain(entries: &[Entry]) -> String {
        entries
            .iter()
            .filter(|e| e.error.is_none())
            .flat_map(|e| render_entry(e, false, Style::plain()))
            .map(|l| l + "\n")
            .collect()
    }

    /// ACQUIRE_MEM + RELEASE_MEM of the pm4 listing example (facts §4.3/§4.4).
    const USER_QUEUE: [u32; 15] = [
        0xc0055800, 0x28c40000, 0xffffffff, 0x00ffffff, 0, 0, 4, 0xc0064900, 0x00028514,
        0x22000000, 0x34000018, 0x00007f12, 3, 0, 3,
    ];

    #[test]
    fn plain_lines_match_the_pm4_listing() {
        let (engine, entries) =
            decode_words(&USER_QUEUE, 0, Engine::Auto, Target::default(), false);
        assert_eq!(engine, Engine::Pm4);
        let names: Vec<_> = entries.iter().map(|e| e.name).collect();
        assert_eq!(names, [Some("ACQUIRE_MEM"), Some("RELEASE_MEM")]);
        assert_eq!((entries[0].offset, entries[1].offset), (0, 7));
        assert_eq!(
            plain(&entries),
            Pm4Listing::new(&USER_QUEUE, pm4::GfxGen::Gfx9).to_string()
        );
        let fields = &entries[1].fields;
        assert!(
            fields.contains(&("int_ctxid".to_owned(), "0x3".to_owned())),
            "{fields:?}"
        );
        assert!(fields.contains(&("event_index".to_owned(), "END_OF_PIPE".to_owned())));
    }

    #[test]
    fn sdma_is_detected_and_matches_its_listing() {
        let s = [0x0000_0005, 0x3400_0018, 0x0000_7f12, 3, 0x0000_0006, 3];
        let (engine, entries) = decode_words(&s, 0, Engine::Auto, Target::default(), false);
        assert_eq!(engine, Engine::Sdma);
        assert_eq!(
            plain(&entries),
            SdmaListing::new(&s, pm4::SdmaGen::Sdma4).to_string()
        );
        assert_eq!(entries[1].name, Some("SDMA_TRAP"));
    }

    #[test]
    fn errors_point_at_the_offending_dword_and_resync() {
        // NOP, then a WRITE_DATA whose dst_sel (dw1 [11:8]) is 0xF, then a NOP.
        let s = [
            0xFFFF_1000,
            0xC003_3700,
            0x0000_0F00,
            0x1000,
            0,
            7,
            0xFFFF_1000,
        ];
        let (_, entries) = decode_words(&s, 100, Engine::Pm4, Target::default(), false);
        let bad = entries
            .iter()
            .find(|e| e.error.is_some())
            .expect("an error");
        assert_eq!(bad.offset, 101);
        assert_eq!(bad.words.len(), 5, "resync after the packet's count");
        assert_eq!(entries.last().unwrap().name, Some("NOP"));
        assert_eq!(entries.last().unwrap().offset, 106);
        let dword = bad.error_dword.unwrap();
        assert!((101..106).contains(&dword), "{dword}");
        let lines = render_entry(bad, false, Style::plain());
        assert_eq!(lines.len(), 2, "{lines:?}");
        let caret = lines[1].find('^').unwrap();
        assert_eq!(caret, 10 + 9 * (dword - 101), "{lines:?}");
        assert!(lines[1].ends_with(&format!("dword {dword} ({dword:#x})")));
    }

    #[test]
    fn stop_policy_ends_at_the_first_error() {
        let s = [0x4000_0000, 0xFFFF_1000];
        let (_, entries) = decode_words(&s, 0, Engine::Pm4, Target::default(), true);
        assert_eq!(entries.len(), 1);
        assert!(entries[0]
            .error
            .as_deref()
            .unwrap()
            .contains("packet type 1"));
    }

    #[test]
    fn full_prints_continuation_lines() {
        let mut s = vec![0xC00A_1000]; // NOP with 11 body dwords
        s.extend(1..=11u32);
        let (_, entries) = decode_words(&s, 0, Engine::Pm4, Target::default(), false);
        let lines = render_entry(&entries[0], true, Style::plain());
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("+4"));
        assert_eq!(lines[1], "  0x0008  00000008 00000009 0000000a 0000000b");
    }

    #[test]
    fn fields_are_key_value_tokens() {
        assert_eq!(
            fields_of("ACQUIRE_MEM coher_cntl=0x28c40000 (tc_wb|tcl1) engine_sel=ME x= =y"),
            vec![
                ("coher_cntl".to_owned(), "0x28c40000".to_owned()),
                ("engine_sel".to_owned(), "ME".to_owned()),
                ("x".to_owned(), String::new()),
            ]
        );
    }
}
