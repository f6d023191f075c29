//! The summarize step of `isa/tools/corpus.py`: decodes every executable section of the
//! corpus's code objects and writes one sample instruction per operand shape.
//!
//! ```sh
//! cargo run --release -p isa --example corpus_scan -- OUT TAG=DIR [TAG=DIR...]
//! ```
//!
//! Each `DIR` holds `gfx900/`, `gfx906/`, `gfx908/` and `gfx90a/` folders of code objects
//! (`bundles.py` makes them); `TAG` names the compiler (`c15`, `c17`). A shape is the
//! instruction's text with register numbers and numbers folded and modifiers kept, so
//! `v_add_f32_e32 v1, v2, v3` and `v_add_f32_e32 v7, v0, v9` are one shape and
//! `... clamp` another. `OUT` gets, per target and mnemonic, the most frequent shapes:
//! `target mnemonic count tags words ; text` (the text as this crate's disassembler prints
//! it; `exec_coverage` checks it against llvm-mc-15). Words the decoder does not know are
//! counted and the first few printed: every one is a decoder gap to look at.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;

use isa::{decode, disasm, Target};

/// Shapes kept per target and mnemonic.
const SAMPLES: usize = 12;

struct Shape {
    target: usize,
    mnemonic: String,
    count: u64,
    words: String,
    text: String,
    /// bit i: seen in the corpus of `Scan::tags[i]`
    tags: u32,
}

#[derive(Default)]
struct Scan {
    tags: Vec<String>,
    shapes: Vec<Shape>,
    /// (target index, mnemonic, shape) -> index into `shapes`
    by_shape: HashMap<(usize, String, String), usize>,
    /// per target: an instruction's bytes -> index into `shapes` (each encoding printed once)
    seen: [HashMap<Vec<u8>, usize>; 4],
    unknown: BTreeMap<(usize, u32), u64>,
    instructions: u64,
}

/// The executable sections of an ELF64 little-endian file, as (offset, size).
fn exec_sections(elf: &[u8]) -> Vec<(usize, usize)> {
    let u16_at = |o: usize| elf.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let (Some(shoff), Some(shentsize), Some(shnum)) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c))
    else {
        return Vec::new();
    };
    const SHF_EXECINSTR: u64 = 4;
    const SHT_PROGBITS: u32 = 1;
    let mut out = Vec::new();
    for i in 0..usize::from(shnum) {
        let h = shoff as usize + i * usize::from(shentsize);
        let Some(hdr) = elf.get(h..h + 64) else {
            break;
        };
        let sh_type = u32::from_le_bytes(hdr[4..8].try_into().unwrap());
        let flags = u64::from_le_bytes(hdr[8..16].try_into().unwrap());
        let offset = u64::from_le_bytes(hdr[24..32].try_into().unwrap()) as usize;
        let size = u64::from_le_bytes(hdr[32..40].try_into().unwrap()) as usize;
        if sh_type == SHT_PROGBITS && flags & SHF_EXECINSTR != 0 && offset + size <= elf.len() {
            out.push((offset, size));
        }
    }
    out
}

/// The text with register numbers and numbers folded; `[0,1,...]` lists after a `:` kept.
fn shape(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
    while i < b.len() {
        let c = b[i];
        if c == b'[' && i > 0 && b[i - 1] == b':' {
            // a bit list: op_sel:[1,0], quad_perm:[...]
            let end = text[i..].find(']').map_or(b.len(), |e| i + e + 1);
            out.push_str(&text[i..end]);
            i = end;
            continue;
        }
        let negative_number = c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
        if !(word(c) || negative_number) {
            out.push(c as char);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < b.len() && word(b[i]) {
            i += 1;
        }
        let w = &text[start..i];
        let reg = ["ttmp", "v", "s", "a"].into_iter().find(|p| {
            w.strip_prefix(p)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|d| d.is_ascii_digit()))
        });
        if let Some(p) = reg {
            out.push_str(p);
        } else if ["ttmp", "v", "s", "a"].contains(&w) && b.get(i) == Some(&b'[') {
            // v[4:7] -> v[4]
            let end = text[i..].find(']').map_or(b.len(), |e| i + e + 1);
            let inner = &text[i + 1..end - 1];
            let width = inner
                .split_once(':')
                .and_then(|(lo, hi)| Some(hi.parse::<u32>().ok()? - lo.parse::<u32>().ok()? + 1))
                .unwrap_or(1);
            out.push_str(&format!("{w}[{width}]"));
            i = end;
        } else if w
            .trim_start_matches('-')
            .starts_with(|d: char| d.is_ascii_digit())
        {
            out.push('N');
        } else {
            out.push_str(w);
        }
    }
    out
}

impl Scan {
    fn file(&mut self, t: usize, target: Target, tag: u32, elf: &[u8]) {
        for (offset, size) in exec_sections(elf) {
            let code = &elf[offset..offset + size];
            let mut at = 0;
            while at + 4 <= code.len() {
                let rest = &code[at..];
                match decode(rest, at as u64, target) {
                    Ok((inst, len)) => {
                        self.instructions += 1;
                        let bytes = &rest[..len];
                        let i = match self.seen[t].get(bytes) {
                            Some(&i) => i,
                            None => {
                                let i = self.shape_of(t, &inst, bytes);
                                if self.seen[t].len() > 4_000_000 {
                                    self.seen[t].clear(); // bounded memory: forget, recompute
                                }
                                self.seen[t].insert(bytes.to_vec(), i);
                                i
                            }
                        };
                        self.shapes[i].count += 1;
                        self.shapes[i].tags |= 1 << tag;
                        at += len;
                    }
                    Err(_) => {
                        let w = u32::from_le_bytes(rest[..4].try_into().unwrap());
                        *self.unknown.entry((t, w)).or_default() += 1;
                        at += 4;
                    }
                }
            }
        }
    }

    /// The index of the shape of `inst` (its first sample: `bytes`).
    fn shape_of(&mut self, t: usize, inst: &isa::Instruction, bytes: &[u8]) -> usize {
        let text = disasm(inst);
        let mnemonic = text.split_whitespace().next().unwrap_or("").to_string();
        let key = (t, mnemonic.clone(), shape(&text));
        if let Some(&i) = self.by_shape.get(&key) {
            return i;
        }
        let words = bytes
            .chunks(4)
            .map(|w| {
                let mut d = [0u8; 4];
                d[..w.len()].copy_from_slice(w);
                format!("{:08X}", u32::from_le_bytes(d))
            })
            .collect::<Vec<_>>()
            .join(" ");
        self.shapes.push(Shape {
            target: t,
            mnemonic,
            count: 0,
            words,
            text,
            tags: 0,
        });
        self.by_shape.insert(key, self.shapes.len() - 1);
        self.shapes.len() - 1
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((out, dirs)) = args.split_first() else {
        eprintln!("usage: corpus_scan OUT TAG=DIR [TAG=DIR...]");
        std::process::exit(2);
    };
    let mut scan = Scan::default();
    for spec in dirs {
        let Some((tag, dir)) = spec.split_once('=') else {
            eprintln!("corpus_scan: {spec:?} is not TAG=DIR");
            std::process::exit(2);
        };
        let tag_index = scan.tags.len() as u32;
        scan.tags.push(tag.to_string());
        for (t, target) in Target::ALL.into_iter().enumerate() {
            let d = Path::new(dir).join(target.name());
            let Ok(entries) = fs::read_dir(&d) else {
                continue;
            };
            let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            files.sort();
            let before = scan.instructions;
            for f in &files {
                if let Ok(elf) = fs::read(f) {
                    scan.file(t, target, tag_index, &elf);
                }
            }
            eprintln!(
                "corpus_scan: {tag} {target}: {} code objects, {} instructions",
                files.len(),
                scan.instructions - before
            );
        }
    }
    let mut per_mnemonic: BTreeMap<(usize, &str), Vec<&Shape>> = BTreeMap::new();
    for s in &scan.shapes {
        per_mnemonic
            .entry((s.target, s.mnemonic.as_str()))
            .or_default()
            .push(s);
    }
    let mut text = String::from(
        "# Generated by isa/tools/corpus.py (isa/examples/corpus_scan.rs): the gfx9 instructions\n\
         # in the compiler corpus (c15: clang-15 builds, c17: clang-17 builds), the most frequent\n\
         # operand shapes of each mnemonic.\n\
         # target mnemonic count corpora words ; text\n",
    );
    for ((t, m), mut shapes) in per_mnemonic {
        shapes.sort_by(|a, b| b.count.cmp(&a.count).then(a.text.cmp(&b.text)));
        for s in shapes.into_iter().take(SAMPLES) {
            let tags: Vec<&str> = (0..scan.tags.len())
                .filter(|i| s.tags >> i & 1 != 0)
                .map(|i| scan.tags[i].as_str())
                .collect();
            text.push_str(&format!(
                "{} {m} {} {} {} ; {}\n",
                Target::ALL[t].name(),
                s.count,
                tags.join(","),
                s.words,
                s.text
            ));
        }
    }
    if let Err(e) = fs::write(out, text) {
        eprintln!("corpus_scan: {out}: {e}");
        std::process::exit(1);
    }
    for (t, target) in Target::ALL.into_iter().enumerate() {
        let words: Vec<_> = scan.unknown.iter().filter(|((u, _), _)| *u == t).collect();
        let total: u64 = words.iter().map(|(_, n)| **n).sum();
        eprintln!(
            "corpus_scan: {target}: {total} words not decoded ({} distinct)",
            words.len()
        );
        let mut top = words.clone();
        top.sort_by(|a, b| b.1.cmp(a.1));
        for ((_, w), n) in top.into_iter().take(12) {
            eprintln!("  {w:08X} x{n}");
        }
    }
}
