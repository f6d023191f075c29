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

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, IsTerminal, Read};
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

/// The tokens of `text`, whose first line is line `first_line` of the input and starts at
/// column `first_column + 1`.
fn tokens_from(
    text: &str,
    first_line: usize,
    first_column: usize,
) -> impl Iterator<Item = Token<'_>> {
    text.lines().enumerate().flat_map(move |(i, line)| {
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
                (Some((s, token_column)), true) => {
                    let text = code.get(s..pos).unwrap_or_default();
                    if !text.ends_with(':') {
                        out.push(Token {
                            text,
                            line: first_line + i,
                            column: token_column + 1 + if i == 0 { first_column } else { 0 },
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
    hex_dwords_into(text, (1, 0), &mut words)?;
    Ok(words)
}

/// Appends the dwords of hex text starting at line `first_line` to `words`.
fn hex_dwords_into(
    text: &str,
    (first_line, first_column): (usize, usize),
    words: &mut Vec<u32>,
) -> CliResult<()> {
    for token in tokens_from(text, first_line, first_column) {
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
    Ok(())
}

/// Parses hex text into bytes in memory order (see the module docs).
pub fn parse_hex_bytes(text: &str) -> CliResult<Vec<u8>> {
    let mut bytes = Vec::new();
    hex_bytes_into(text, (1, 0), &mut bytes)?;
    Ok(bytes)
}

/// Appends the bytes of hex text starting at line `first_line` to `bytes`.
fn hex_bytes_into(
    text: &str,
    (first_line, first_column): (usize, usize),
    bytes: &mut Vec<u8>,
) -> CliResult<()> {
    for token in tokens_from(text, first_line, first_column) {
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
    Ok(())
}

/// Where a comment (`#`, `;` or `//`) starts in a piece of a line.
fn comment_start(piece: &[u8]) -> Option<usize> {
    piece
        .iter()
        .enumerate()
        .find(|&(i, &b)| b == b'#' || b == b';' || (b == b'/' && piece.get(i + 1) == Some(&b'/')))
        .map(|(i, _)| i)
}

/// The longest hex token [`DwordReader`] accepts (a run of digits without white space).
pub const MAX_TOKEN: usize = 64 << 10;

/// How much [`DwordReader`] reads from the input at a time.
const READ_BLOCK: usize = 64 << 10;

/// Dwords read from a file, stdin or `--hex` text as they are needed: memory stays bounded
/// whatever the input's size (`kfd decode --count 4 /dev/zero` reads 16 bytes). Binary input
/// is little-endian dwords; hex text is read a block at a time, cut between tokens (a token
/// may be up to [`MAX_TOKEN`] bytes).
pub struct DwordReader {
    /// `FILE`, `stdin` or `--hex`, for messages.
    pub label: String,
    /// The format in use (never `Auto`): `Auto` looks at the first block read.
    pub format: InputFormat,
    reader: Box<dyn BufRead>,
    /// Parsed dwords not handed out yet.
    pending: VecDeque<u32>,
    /// Bytes not yet making a dword (binary and byte-text input).
    carry: Vec<u8>,
    /// Text read but not parsed yet (the end of a line, cut inside a token).
    text: Vec<u8>,
    /// Line (1-based) and column (0-based) where `text` starts.
    line: usize,
    column: usize,
    /// The current line's comment has started.
    in_comment: bool,
    ended: bool,
}

impl std::fmt::Debug for DwordReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DwordReader")
            .field("label", &self.label)
            .field("format", &self.format)
            .field("line", &self.line)
            .finish_non_exhaustive()
    }
}

impl DwordReader {
    /// Opens `path` (`-` is stdin), or stdin when there is no path and stdin is not a terminal,
    /// or `hex` text given on the command line; nothing is read beyond the first block.
    pub fn open(path: Option<&Path>, hex: Option<&str>, format: InputFormat) -> CliResult<Self> {
        let (label, reader, is_text_argument): (String, Box<dyn BufRead>, bool) = match (path, hex)
        {
            (Some(_), Some(_)) => {
                return Err(CliError::usage(
                    "give either an input FILE or --hex TEXT, not both",
                ))
            }
            (None, Some(text)) => (
                "--hex".to_owned(),
                Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
                true,
            ),
            (Some(p), None) if p != Path::new("-") => {
                let file = std::fs::File::open(p)
                    .map_err(|e| CliError::usage(format!("cannot read '{}': {e}", p.display())))?;
                (
                    p.display().to_string(),
                    Box::new(BufReader::with_capacity(READ_BLOCK, file)),
                    false,
                )
            }
            (explicit, None) => {
                let stdin = std::io::stdin();
                if explicit.is_none() && stdin.is_terminal() {
                    return Err(CliError::usage(
                        "no input: give a FILE, `-` for stdin, or --hex TEXT",
                    ));
                }
                (
                    "stdin".to_owned(),
                    Box::new(BufReader::with_capacity(READ_BLOCK, stdin)),
                    false,
                )
            }
        };
        Self::from_reader(label, reader, is_text_argument, format)
    }

    /// A reader over any `BufRead` (tests, or an already open stream).
    pub fn from_reader(
        label: String,
        mut reader: Box<dyn BufRead>,
        is_text_argument: bool,
        format: InputFormat,
    ) -> CliResult<Self> {
        let format = match format {
            InputFormat::Auto if is_text_argument => InputFormat::Hex,
            InputFormat::Auto => {
                let first = reader
                    .fill_buf()
                    .map_err(|e| CliError::usage(format!("cannot read {label}: {e}")))?;
                if looks_like_text(first) {
                    InputFormat::Hex
                } else {
                    InputFormat::Bin
                }
            }
            other => other,
        };
        Ok(DwordReader {
            label,
            format,
            reader,
            pending: VecDeque::new(),
            carry: Vec::new(),
            text: Vec::new(),
            line: 1,
            column: 0,
            in_comment: false,
            ended: false,
        })
    }

    /// Reads until `want` dwords are pending or the input ends.
    fn fill(&mut self, want: usize) -> CliResult<()> {
        while self.pending.len() < want && !self.ended {
            match self.format {
                InputFormat::Bin | InputFormat::Auto => self.read_binary(want)?,
                InputFormat::Hex | InputFormat::Bytes => self.read_text()?,
            }
        }
        Ok(())
    }

    fn read_binary(&mut self, want: usize) -> CliResult<()> {
        let need = (want - self.pending.len())
            .saturating_mul(4)
            .saturating_sub(self.carry.len())
            .clamp(1, READ_BLOCK);
        let mut block = vec![0u8; need];
        let n = loop {
            match self.reader.read(&mut block) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(CliError::usage(format!("cannot read {}: {e}", self.label))),
            }
        };
        if n == 0 {
            self.ended = true;
            return Ok(());
        }
        self.carry.extend_from_slice(&block[..n]);
        self.take_carry_dwords();
        Ok(())
    }

    fn take_carry_dwords(&mut self) {
        let whole = self.carry.len() / 4 * 4;
        self.pending.extend(
            self.carry[..whole]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        self.carry.drain(..whole);
    }

    fn read_text(&mut self) -> CliResult<()> {
        let n = {
            let block = self
                .reader
                .fill_buf()
                .map_err(|e| CliError::usage(format!("cannot read {}: {e}", self.label)))?;
            let n = block.len().min(READ_BLOCK);
            self.text.extend_from_slice(&block[..n]);
            n
        };
        self.reader.consume(n);
        if n == 0 {
            self.ended = true;
            let rest = std::mem::take(&mut self.text);
            return self.parse_piece(&rest, true);
        }
        while let Some(nl) = self.text.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.text.drain(..=nl).collect();
            self.parse_piece(&line, true)?;
        }
        // A long line is parsed up to its last separator; the cut token waits for the rest.
        if self.text.len() >= MAX_TOKEN {
            let cut = if comment_start(&self.text).is_some() {
                Some(self.text.len())
            } else {
                self.text
                    .iter()
                    .rposition(|&b| b.is_ascii_whitespace() || b == b',')
                    .map(|i| i + 1)
            };
            let Some(cut) = cut else {
                return Err(CliError::usage(format!(
                    "line {}, column {}: a token longer than {MAX_TOKEN} bytes; for a binary \
                     dump use --format bin",
                    self.line,
                    self.column + 1
                )));
            };
            let piece: Vec<u8> = self.text.drain(..cut).collect();
            self.parse_piece(&piece, false)?;
        }
        Ok(())
    }

    /// Parses `piece`, a whole line (`ends_line`) or the start of one.
    fn parse_piece(&mut self, piece: &[u8], ends_line: bool) -> CliResult<()> {
        let (line, column) = (self.line, self.column);
        if ends_line {
            self.line += 1;
            self.column = 0;
        }
        if self.in_comment {
            self.in_comment = !ends_line;
            return Ok(());
        }
        let marker = comment_start(piece);
        let code = &piece[..marker.unwrap_or(piece.len())];
        let text = std::str::from_utf8(code).map_err(|e| {
            CliError::usage(format!(
                "{} is not text (line {line}, column {}: not UTF-8); use --format bin for a \
                 binary dump",
                self.label,
                column + e.valid_up_to() + 1
            ))
        })?;
        if !ends_line {
            self.column += text.chars().count();
            self.in_comment = marker.is_some();
        }
        if self.format == InputFormat::Bytes {
            hex_bytes_into(text, (line, column), &mut self.carry)?;
            self.take_carry_dwords();
        } else {
            let mut words = Vec::new();
            hex_dwords_into(text, (line, column), &mut words)?;
            self.pending.extend(words);
        }
        Ok(())
    }

    /// Skips up to `n` dwords; returns how many there were.
    pub fn skip(&mut self, n: usize) -> CliResult<usize> {
        let mut skipped = 0;
        while skipped < n {
            let step = (n - skipped).min(READ_BLOCK);
            self.fill(step)?;
            let got = step.min(self.pending.len());
            if got == 0 {
                break;
            }
            self.pending.drain(..got);
            skipped += got;
        }
        Ok(skipped)
    }

    /// Appends up to `max` more dwords to `out`; returns how many (0 at the end).
    pub fn read_into(&mut self, max: usize, out: &mut Vec<u32>) -> CliResult<usize> {
        self.fill(max)?;
        let got = max.min(self.pending.len());
        out.extend(self.pending.drain(..got));
        Ok(got)
    }

    /// Whether every dword has been handed out and the input has ended.
    pub fn at_end(&mut self) -> CliResult<bool> {
        self.fill(1)?;
        Ok(self.pending.is_empty())
    }

    /// Bytes at the end of a binary or byte-text input that do not fill a dword (known once
    /// the input has ended).
    pub fn trailing_bytes(&self) -> usize {
        if self.ended {
            self.carry.len()
        } else {
            0
        }
    }
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
