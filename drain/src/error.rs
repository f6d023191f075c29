//! One error type for the crate: wrong use is refused with a sentence that says what to
//! change; device and thunk failures keep the thunk's error; corrupt bytes say where.

use std::fmt;

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A configuration or call the channel refuses (slot size, slot count, record size, a
    /// call that does not fit the channel's trigger …). The message says what to change.
    Config(String),
    /// The thunk (driver, memory, queues, events) failed.
    Thunk(thunk::Error),
    /// Bytes the drain read back break the layout: the message names the generation and what
    /// is wrong. Nothing after them is trusted.
    Corrupt {
        /// The slot generation being read.
        generation: u64,
        /// What is wrong.
        what: String,
    },
    /// A record in a drained slot is malformed (from [`crate::layout::Records`]).
    Record(crate::layout::RecordError),
    /// A wait ran out of time; the message says what did not happen.
    Timeout(String),
    /// The channel was closed; producers stop with this.
    Closed,
}

impl Error {
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Error::Config(message.into())
    }

    pub(crate) fn corrupt(generation: u64, what: impl Into<String>) -> Self {
        Error::Corrupt {
            generation,
            what: what.into(),
        }
    }

    /// Whether this is a [`Error::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout(_)) || matches!(self, Error::Thunk(e) if e.is_timeout())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "drain: {m}"),
            Error::Thunk(e) => write!(f, "drain: {e}"),
            Error::Corrupt { generation, what } => {
                write!(f, "drain: slot generation {generation} is corrupt: {what}")
            }
            Error::Record(e) => write!(f, "drain: malformed record: {e}"),
            Error::Timeout(m) => write!(f, "drain: timed out: {m}"),
            Error::Closed => write!(f, "drain: the channel is closed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Thunk(e) => Some(e),
            Error::Record(e) => Some(e),
            _ => None,
        }
    }
}

impl From<thunk::Error> for Error {
    fn from(e: thunk::Error) -> Self {
        Error::Thunk(e)
    }
}

impl From<crate::layout::RecordError> for Error {
    fn from(e: crate::layout::RecordError) -> Self {
        Error::Record(e)
    }
}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        let kind = match &e {
            Error::Config(_) => std::io::ErrorKind::InvalidInput,
            Error::Corrupt { .. } | Error::Record(_) => std::io::ErrorKind::InvalidData,
            Error::Closed => std::io::ErrorKind::BrokenPipe,
            e if e.is_timeout() => std::io::ErrorKind::TimedOut,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, e)
    }
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// A packet that failed to build (a layout or address the packet cannot express).
pub(crate) fn packet(what: &str, e: impl fmt::Display) -> Error {
    Error::Config(format!("cannot build {what}: {e}"))
}
