//! The one error type of the command line: a message for one line of stderr and the exit
//! status that goes with it.

use std::fmt;

/// Exit status for bad arguments or bad input (the same as clap's usage errors).
pub const EXIT_USAGE: u8 = 2;
/// Exit status when the work itself failed (the model refused, a file could not be written).
pub const EXIT_FAILURE: u8 = 1;

/// Why a subcommand stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// What went wrong, without a trailing newline; printed after `kfd: `.
    pub message: String,
    /// The process exit status.
    pub code: u8,
}

impl CliError {
    /// Bad arguments or bad input: exit status 2.
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: EXIT_USAGE,
        }
    }

    /// The work failed for a reason that is not the user's input: exit status 1.
    pub fn failure(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: EXIT_FAILURE,
        }
    }

    /// The same error with `context: ` in front of its message (a closed stdout stays the
    /// quiet stop it is).
    pub fn context(self, context: impl fmt::Display) -> Self {
        if self.message == crate::output::BROKEN_PIPE {
            return self;
        }
        CliError {
            message: format!("{context}: {}", self.message),
            code: self.code,
        }
    }

    /// A failure `what: message`, where a message that already starts with `what`'s first
    /// word (`CREATE_QUEUE: …` under `CREATE_QUEUE (AQL)`) does not say it twice.
    pub fn failure_in(what: &str, message: impl fmt::Display) -> Self {
        let message = message.to_string();
        let word = what.split_whitespace().next().unwrap_or(what);
        match message.strip_prefix(word).and_then(|r| r.strip_prefix(':')) {
            Some(rest) if !word.is_empty() => CliError::failure(format!("{what}:{rest}")),
            _ => CliError::failure(format!("{what}: {message}")),
        }
    }

    /// The message as exactly one line (newlines in wrapped errors become `; `).
    pub fn one_line(&self) -> String {
        let mut line = String::with_capacity(self.message.len());
        for (i, part) in self
            .message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            if i > 0 {
                line.push_str("; ");
            }
            line.push_str(part);
        }
        line
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.one_line())
    }
}

impl std::error::Error for CliError {}

/// `Result` with [`CliError`].
pub type CliResult<T> = Result<T, CliError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_joins_wrapped_messages() {
        let e = CliError::usage("first\n\n  second  \nthird");
        assert_eq!(e.one_line(), "first; second; third");
        assert_eq!(e.code, EXIT_USAGE);
        assert_eq!(
            CliError::failure("x").context("decode").message,
            "decode: x"
        );
    }

    #[test]
    fn a_context_is_said_once() {
        let e = CliError::failure_in("CREATE_QUEUE", "CREATE_QUEUE: no room");
        assert_eq!(e.message, "CREATE_QUEUE: no room");
        let e = CliError::failure_in("CREATE_QUEUE (AQL)", "CREATE_QUEUE: no room");
        assert_eq!(e.message, "CREATE_QUEUE (AQL): no room");
        let e = CliError::failure_in("PM4 queue", "CREATE_QUEUE: no room");
        assert_eq!(e.message, "PM4 queue: CREATE_QUEUE: no room");
    }
}
