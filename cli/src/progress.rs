//! A live progress line on stderr — only when stderr is a terminal, so pipes, files and
//! tests see nothing of it. It redraws in place (`\r`, then clear to the end of the line) and
//! is erased when finished, leaving the final report to stdout.

use std::io::{self, IsTerminal, Write};

/// The progress line of one long step.
#[derive(Debug)]
pub struct ProgressLine {
    live: bool,
    drawn: bool,
}

impl ProgressLine {
    /// A line drawn only if `wanted` and stderr is a terminal.
    pub fn new(wanted: bool) -> Self {
        ProgressLine {
            live: wanted && io::stderr().is_terminal(),
            drawn: false,
        }
    }

    /// Whether anything will be drawn.
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Replaces the line with `text`.
    pub fn draw(&mut self, text: &str) {
        if !self.live {
            return;
        }
        // Whatever stdout holds goes first, so the line stays under it.
        let _ = io::stdout().flush();
        let mut err = io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{text}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Erases the line.
    pub fn finish(&mut self) {
        if self.live && self.drawn {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A bar of `width` cells for `done` of `total`: `[#########-----------]`.
pub fn bar(done: u64, total: u64, width: usize) -> String {
    let filled = if total == 0 {
        width
    } else {
        ((u128::from(done.min(total)) * width as u128) / u128::from(total)) as usize
    };
    format!("[{}{}]", "#".repeat(filled), "-".repeat(width - filled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_in_proportion() {
        assert_eq!(bar(0, 100, 10), "[----------]");
        assert_eq!(bar(50, 100, 10), "[#####-----]");
        assert_eq!(bar(150, 100, 4), "[####]");
        assert_eq!(bar(0, 0, 3), "[###]");
        let mut p = ProgressLine::new(false);
        p.draw("x");
        assert!(!p.is_live() && !p.drawn);
    }
}
