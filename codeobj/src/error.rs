//! The crate's one error type: every failure on outside input is one of these, never a panic.

use std::fmt;

/// What went wrong while reading, selecting or loading a code object.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a well-formed file of the kind expected.
    Malformed {
        /// Which structure was being read (e.g. "ELF header", "offload bundle entry").
        what: &'static str,
        /// What was wrong with it.
        detail: String,
    },
    /// A well-formed file of a kind or version this crate does not handle.
    Unsupported(String),
    /// A target ID string that does not parse.
    InvalidTargetId(String),
    /// A container holds no code object for the agent's target.
    NoMatchingTarget {
        /// The agent's target ID.
        agent: String,
        /// The target IDs the container offers.
        available: Vec<String>,
    },
    /// A code object built for another target than the executable's agent.
    WrongTarget {
        /// The code object's target ID.
        code_object: String,
        /// The agent's target ID.
        agent: String,
    },
    /// A symbol that a relocation needs is defined by no code object of the executable.
    UndefinedSymbol {
        /// The symbol's name.
        name: String,
        /// The index (load order) of the code object that references it.
        code_object: usize,
    },
    /// Two code objects of one executable define the same global symbol.
    DuplicateSymbol(String),
    /// A relocation type the loader does not apply, or one that does not fit its place.
    Relocation {
        /// The relocation's type number (`R_AMDGPU_*`).
        r_type: u32,
        /// The relocation's offset in the code object's virtual addresses.
        offset: u64,
        /// Why it was refused.
        detail: String,
    },
    /// The segment memory provider failed.
    Memory(String),
    /// The operation needs an executable in another state (loading vs frozen).
    State(&'static str),
    /// A lookup by name found nothing.
    NotFound {
        /// What was looked for ("kernel", "function", "variable", "symbol").
        kind: &'static str,
        /// The name looked up.
        name: String,
    },
}

impl Error {
    pub(crate) fn malformed(what: &'static str, detail: impl Into<String>) -> Self {
        Error::Malformed {
            what,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Malformed { what, detail } => write!(f, "malformed {what}: {detail}"),
            Error::Unsupported(s) => write!(f, "unsupported: {s}"),
            Error::InvalidTargetId(s) => write!(f, "invalid target ID {s:?}"),
            Error::NoMatchingTarget { agent, available } => write!(
                f,
                "no code object for target {agent} (the file has: {})",
                if available.is_empty() {
                    "none".to_string()
                } else {
                    available.join(", ")
                }
            ),
            Error::WrongTarget { code_object, agent } => {
                write!(f, "code object for {code_object} cannot run on {agent}")
            }
            Error::UndefinedSymbol { name, code_object } => write!(
                f,
                "undefined symbol {name:?} (referenced by code object #{code_object})"
            ),
            Error::DuplicateSymbol(name) => {
                write!(f, "symbol {name:?} is defined by two code objects")
            }
            Error::Relocation {
                r_type,
                offset,
                detail,
            } => write!(f, "relocation type {r_type} at {offset:#x}: {detail}"),
            Error::Memory(s) => write!(f, "segment memory: {s}"),
            Error::State(s) => write!(f, "executable state: {s}"),
            Error::NotFound { kind, name } => write!(f, "no {kind} named {name:?}"),
        }
    }
}

impl std::error::Error for Error {}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
