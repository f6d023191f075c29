//! Reading what the user hands in — a file, stdin, or text on the command line — as hex text or
//! a raw binary dump, and turning it into dwords or bytes.
//!
//! Hex text is a list of tokens separated by white space or commas. `#`, `;` and `//` start a
//! comment that runs to the end of the line, and a token ending in `:` (an offset label such
//! as `0x0010:`) is skipped. In [`InputFormat::Hex`] each token is one dword value
//! (`c0055800`, `0xC0055800`, `10`); a run of 16, 24, … digits without `0x` is read as
//! consecutive 8-digit dwords. In [`InputFormat::Bytes`] each token is one or more bytes in
//! memory order (`00 58 05 c0`, or `xxd -p` lines), and dwords are little-endian. A binary
//! dump is little-endian dwords.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use crate::error::{CliError, CliResult};

/// How the input is spelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// Hex text if the input is printable text, else a binary dump.
    #[default]
    Auto,
    /// Hex text, one dword value per token.
    Hex,
    /// Hex text, bytes in memory order (little-endian dwords), as `xxd -p` prints.
    Bytes,
    /// A raw binary dump.
    Bin,
}

/// The input and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// `FILE`, `stdin` or `--hex`, for messages.
    pub label: String,
    /// The raw content.
    pub data: Vec<u8>,
    /// The content came from `--hex` and is text whatever it looks like.
    pub is_text_argument: bool,
}

impl Source {
    /// Hex text given on the command line.
    pub fn from_text(text: &str) -> Self {
        Source {
            label: "--hex".to_owned(),
            data: text.as_bytes().to_vec(),
            is_text_argument: true,
        }
    }

    /// The format `format` resolves to for this input.
    pub fn resolve(&self, format: InputFormat) -> InputFormat {
        match format {
            InputFormat::Auto if self.is_text_argument || looks_like_text(&self.data) => {
                InputFormat::Hex
            }
            InputFormat::Auto => InputFormat::Bin,
            other => other,
        }
    }
}

/// Reads `path` (`-` is stdin), or stdin when there is no path and stdin is not a terminal,
/// or `hex` text given on the command line.
pub fn read_source(path: Option<&Path>, hex: Option<&str>) -> CliResult<Source> {
    match (path, hex) {
        (Some(_), Some(_)) => Err(CliError::usage(
            "give either an input FILE or --hex TEXT, not both",
        )),
        (None, Some(text)) => Ok(Source::from_text(text)),
        (Some(p), None) if p != Path::new("-") => {
            let data = std::fs::read(p)
                .map_err(|e| CliError::usage(format!("cannot read '{}': {e}", p.display())))?;
            Ok(Source {
                label: p.display().to_string(),
                data,
                is_text_argument: false,
            })
        }
        (explicit, None) => {
            let stdin = std::io::stdin();
            if explicit.is_none() && stdin.is_terminal() {
                return Err(CliError::usage(
                    "no input: give a FILE, `-` for stdin, or --hex TEXT",
                ));
            }
            let mut data = Vec::new();
            stdin
                .lock()
                .read_to_end(&mut data)
                .map_err(|e| CliError::usage(format!("cannot read stdin: {e}")))?;
            Ok(Source {
                label: "stdin".to_owned(),
                data,
                is_text_argument: false,
            })
        }
    }
}

/// Whether `data` is non-empty printable ASCII text (with white space).
pub fn looks_like_text(data: &[u8]) -> bool {
    !data.is_empty()
        && data
            .iter()
            .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
}

/// Dwords read from an input, and what was left over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dwords {
    /// The dwords, in stream order.
    pub words: Vec<u32>,
    /// Bytes at the end of a binary or byte-text input that do not fill a dword.
    pub trailing_bytes: usize,
    /// The format actually used (never `Auto`).
    pub format: InputFormat,
}

/// The dwords of `source` read as `format`.
pub fn dwords(source: &Source, format: InputFormat) -> CliResult<Dwords> {
    let format = source.resolve(format);
    let from_bytes = |bytes: &[u8]| {
        let words = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        (words, bytes.len() % 4)
    };
    let (words, trailing_bytes) = match format {
        InputFormat::Bin => from_bytes(&source.data),
        InputFormat::Bytes => from_bytes(&parse_hex_bytes(text_of(source)?)?),
        InputFormat::Hex | InputFormat::Auto => (parse_hex_dwords(text_of(source)?)?, 0),
    };
    Ok(Dwords {
        words,
        trailing_bytes,
        format,
    })
}

/// The bytes of `source` read as `format` (hex dwords become little-endian bytes).
pub fn bytes(source: &Source, format: InputFormat) -> CliResult<Vec<u8>> {
    match source.resolve(format) {
        InputFormat::Bin => Ok(source.data.clone()),
        InputFormat::Bytes => parse_hex_bytes(text_of(source)?),
        InputFormat::Hex | InputFormat::Auto => Ok(parse_hex_dwords(text_of(source)?)?
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect()),
    }
}

fn text_of(source: &Source) -> CliResult<&str> {
    std::str::from_utf8(&source.data).map_err(|e| {
        CliError::usage(format!(
            "{} is not text (byte {:#x} is not UTF-8); use --format bin for a binary dump",
            source.label,
            e.valid_up_to()
        ))
    })
}

/// A token of hex text with its position (1-based line and column).
struct Token<'a> {
    text: &'a str,
    line: usize,
    column: usize,
}

fn tokens(text: &str) -> impl Iterator<Item = Token<'_>> {
    text.lines().enumerate().flat_map(|(i, line)| {
        let end = [line.find('#'), line.find(';'), line.find("//")]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(line.len());
        let code = line.get(..end).unwrap_or(line);
        let mut out = Vec::new();
        // (byte offset, column) where the current token began.
        let mut start: Option<(usize, usize)> = None;
        for (column, (pos, ch)) in code.char_indices().chain([(code.len(), ' ')]).enumerate() {
            let separator = ch.is_whitespace() || ch == ',';
            match (start, separator) {
                (None, false) => start = Some((pos, column)),
                (Some((s, first_column)), true) => {
                    let text = code.get(s..pos).unwrap_or_default();
                    if !text.ends_with(':') {
                        out.push(Token {
                            text,
                            line: i + 1,
                            column: first_column + 1,
                        });
                    }
                    start = None;
                }
                _ => {}
            }
        }
        out
    })
}

fn bad_token(token: &Token<'_>, what: &str) -> CliError {
    CliError::usage(format!(
        "line {}, column {}: '{}' is not {what}",
        token.line, token.column, token.text
    ))
}

fn strip_prefix(text: &str) -> (&str, bool) {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(rest) => (rest, true),
        None => (text, false),
    }
}

/// Parses hex text into dword values (see the module docs).
pub fn parse_hex_dwords(text: &str) -> CliResult<Vec<u32>> {
    let mut words = Vec::new();
    for token in tokens(text) {
        let (digits, prefixed) = strip_prefix(token.text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad_token(&token, "a hex dword"));
        }
        if digits.len() <= 8 {
            words.push(
                u32::from_str_radix(digits, 16).map_err(|_| bad_token(&token, "a hex dword"))?,
            );
        } else if !prefixed && digits.len() % 8 == 0 {
            for chunk in digits.as_bytes().chunks(8) {
                let chunk = std::str::from_utf8(chunk).unwrap_or_default();
                words.push(
                    u32::from_str_radix(chunk, 16).map_err(|_| bad_token(&token, "a hex dword"))?,
                );
            }
        } else {
            return Err(bad_token(
                &token,
                "a hex dword (more than 8 digits; runs without 0x must be whole dwords)",
            ));
        }
    }
    Ok(words)
}

/// Parses hex text into bytes in memory order (see the module docs).
pub fn parse_hex_bytes(text: &str) -> CliResult<Vec<u8>> {
    let mut bytes = Vec::new();
    for token in tokens(text) {
        let (digits, _) = strip_prefix(token.text);
        if digits.is_empty()
            || digits.len() % 2 != 0
            || !digits.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(bad_token(&token, "hex bytes (pairs of hex digits)"));
        }
        for pair in digits.as_bytes().chunks(2) {
            let pair = std::str::from_utf8(pair).unwrap_or_default();
            bytes.push(u8::from_str_radix(pair, 16).map_err(|_| bad_token(&token, "a hex byte"))?);
        }
    }
    Ok(bytes)
}

/// Writes `data` to `path` (`-` is stdout).
pub fn write_output(path: &Path, data: &[u8]) -> CliResult<()> {
    if path == Path::new("-") {
        let mut out = crate::output::Out::stdout();
        out.bytes(data)?;
        return out.flush();
    }
    std::fs::write(path, data)
        .map_err(|e| CliError::failure(format!("cannot write '{}': {e}", path.display())))
}

/// A path argument that may be `-`.
pub type PathArg = PathBuf;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_dwords_with_comments_labels_prefixes_and_runs() {
        let text =
            "# header\n0x0000: c0055800 0X28C40000, ffffffff ; tail\n  10 // x\nc0001000ffff1000\n";
        assert_eq!(
            parse_hex_dwords(text).unwrap(),
            vec![
                0xC005_5800,
                0x28C4_0000,
                0xFFFF_FFFF,
                0x10,
                0xC000_1000,
                0xFFFF_1000
            ]
        );
    }

    #[test]
    fn bad_tokens_are_located() {
        let e = parse_hex_dwords("c0001000\n  10 zz\n").unwrap_err();
        assert_eq!(e.message, "line 2, column 6: 'zz' is not a hex dword");
        assert_eq!(e.code, 2);
        let e = parse_hex_dwords("0x123456789").unwrap_err();
        assert!(e.message.contains("more than 8 digits"), "{}", e.message);
        let e = parse_hex_dwords("123456789").unwrap_err();
        assert!(e.message.starts_with("line 1, column 1"), "{}", e.message);
        assert!(parse_hex_dwords("0x").is_err());
    }

    #[test]
    fn hex_bytes_are_little_endian_dwords() {
        let src = Source::from_text("00 10 ff ff\n005805c0");
        let d = dwords(&src, InputFormat::Bytes).unwrap();
        assert_eq!(d.words, vec![0xFFFF_1000, 0xC005_5800]);
        assert_eq!(d.trailing_bytes, 0);
        assert!(parse_hex_bytes("123").is_err());
    }

    #[test]
    fn auto_tells_text_from_binary_and_counts_trailing_bytes() {
        let bin = Source {
            label: "x".into(),
            data: vec![0x00, 0x10, 0xFF, 0xFF, 0x01, 0x02],
            is_text_argument: false,
        };
        let d = dwords(&bin, InputFormat::Auto).unwrap();
        assert_eq!(
            (d.words, d.trailing_bytes, d.format),
            (vec![0xFFFF_1000], 2, InputFormat::Bin)
        );
        let text = Source {
            label: "x".into(),
            data: b"ffff1000\n".to_vec(),
            is_text_argument: false,
        };
        assert_eq!(
            dwords(&text, InputFormat::Auto).unwrap().format,
            InputFormat::Hex
        );
        assert!(!looks_like_text(b""));
        assert_eq!(
            bytes(&text, InputFormat::Auto).unwrap(),
            vec![0x00, 0x10, 0xFF, 0xFF]
        );
    }

    #[test]
    fn non_utf8_text_is_a_clear_error() {
        let src = Source {
            label: "dump".into(),
            data: vec![b'a', 0xFF],
            is_text_argument: false,
        };
        let e = dwords(&src, InputFormat::Hex).unwrap_err();
        assert!(e.message.contains("not text"), "{}", e.message);
    }
}
