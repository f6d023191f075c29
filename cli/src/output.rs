//! Where output goes and how it looks: a writer over stdout that turns a closed pipe into a
//! quiet stop, and the colour decision (only on a terminal, never with `NO_COLOR`).

use std::io::{self, IsTerminal, Write};

use crate::error::{CliError, CliResult};

/// When to use colour (`--color`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether to colour output written to stdout.
    pub fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && io::stdout().is_terminal()
            }
        }
    }
}

/// ANSI styling that collapses to plain text when colour is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    enabled: bool,
}

/// A colour or emphasis of [`Style::paint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Packet and field names.
    Name,
    /// Offsets and raw hex: dim.
    Dim,
    /// Errors.
    Error,
    /// Headings.
    Bold,
    /// Values that changed.
    Changed,
    /// Layer tags, by depth.
    Layer(usize),
}

impl Style {
    /// Styling on or off.
    pub const fn new(enabled: bool) -> Self {
        Style { enabled }
    }

    /// No colour.
    pub const fn plain() -> Self {
        Style { enabled: false }
    }

    /// Whether escapes are written.
    pub fn enabled(self) -> bool {
        self.enabled
    }

    /// `text` wrapped in the escape for `tone` (or unchanged when colour is off).
    pub fn paint(self, tone: Tone, text: &str) -> String {
        if !self.enabled {
            return text.to_owned();
        }
        let code = match tone {
            Tone::Name => "1;36",
            Tone::Dim => "2",
            Tone::Error => "1;31",
            Tone::Bold => "1",
            Tone::Changed => "33",
            Tone::Layer(depth) => match depth % 6 {
                0 => "1;34",
                1 => "1;35",
                2 => "1;32",
                3 => "1;33",
                4 => "1;36",
                _ => "1;31",
            },
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

/// Buffered stdout. A closed pipe (`kfd decode big.bin | head`) ends the program quietly
/// with status 0 instead of an error.
pub struct Out {
    inner: io::BufWriter<io::StdoutLock<'static>>,
}

/// Why writing stopped.
#[derive(Debug)]
pub enum WriteStop {
    /// The reader went away; stop quietly.
    BrokenPipe,
    /// Any other I/O error.
    Io(io::Error),
}

impl From<io::Error> for WriteStop {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            WriteStop::BrokenPipe
        } else {
            WriteStop::Io(e)
        }
    }
}

impl Out {
    /// Locks stdout.
    pub fn stdout() -> Self {
        Out {
            inner: io::BufWriter::new(io::stdout().lock()),
        }
    }

    /// Writes `text` and a newline.
    pub fn line(&mut self, text: &str) -> CliResult<()> {
        self.inner
            .write_all(text.as_bytes())
            .and_then(|()| self.inner.write_all(b"\n"))
            .map_err(io_error)
    }

    /// Writes `text` as it is.
    pub fn text(&mut self, text: &str) -> CliResult<()> {
        self.inner.write_all(text.as_bytes()).map_err(io_error)
    }

    /// Writes raw bytes.
    pub fn bytes(&mut self, data: &[u8]) -> CliResult<()> {
        self.inner.write_all(data).map_err(io_error)
    }

    /// Writes `value` as pretty JSON and a newline.
    pub fn json<T: serde::Serialize>(&mut self, value: &T) -> CliResult<()> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| CliError::failure(format!("cannot format JSON: {e}")))?;
        self.line(&text)
    }

    /// Flushes.
    pub fn flush(&mut self) -> CliResult<()> {
        self.inner.flush().map_err(io_error)
    }
}

/// Marker message of a closed pipe; `run` turns it into a quiet exit.
pub(crate) const BROKEN_PIPE: &str = "\u{0}broken pipe";

fn io_error(e: io::Error) -> CliError {
    match WriteStop::from(e) {
        WriteStop::BrokenPipe => CliError {
            message: BROKEN_PIPE.to_owned(),
            code: 0,
        },
        WriteStop::Io(e) => CliError::failure(format!("cannot write to stdout: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_style_adds_nothing_and_colour_wraps() {
        assert_eq!(Style::plain().paint(Tone::Name, "NOP"), "NOP");
        assert_eq!(
            Style::new(true).paint(Tone::Error, "bad"),
            "\x1b[1;31mbad\x1b[0m"
        );
        assert!(!ColorChoice::Never.enabled());
        assert!(ColorChoice::Always.enabled());
    }

    #[test]
    fn broken_pipe_is_a_quiet_stop() {
        let e = io_error(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!((e.message.as_str(), e.code), (BROKEN_PIPE, 0));
        let e = io_error(io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(e.code, 1);
    }
}
