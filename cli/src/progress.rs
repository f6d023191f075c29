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

/// What remains of a run at `bytes_per_s`: `12 s left`, `3 min left`, `2 h 05 min left`;
/// `None` before there is a rate to go by or once it is done.
pub fn time_left(done: u64, total: u64, bytes_per_s: f64) -> Option<String> {
    if done >= total || !(bytes_per_s.is_finite() && bytes_per_s > 0.0) {
        return None;
    }
    let secs = ((total - done) as f64 / bytes_per_s).ceil();
    // Beyond a year the number says nothing more.
    let secs = secs.min(365.0 * 86_400.0) as u64;
    Some(match secs {
        0..=59 => format!("{secs} s left"),
        60..=3599 => format!("{} min left", secs.div_ceil(60)),
        _ => format!("{} h {:02} min left", secs / 3600, (secs % 3600) / 60),
    })
}

/// `done` as a percentage of `total`, `100%` for an empty total.
pub fn percent(done: u64, total: u64) -> String {
    if total == 0 {
        return "100%".into();
    }
    format!("{}%", u128::from(done.min(total)) * 100 / u128::from(total))
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
        assert_eq!(percent(1, 3), "33%");
        assert_eq!(percent(5, 0), "100%");
        let mut p = ProgressLine::new(false);
        p.draw("x");
        assert!(!p.is_live() && !p.drawn);
    }

    #[test]
    fn time_left_from_the_rate() {
        assert_eq!(time_left(0, 100, 10.0).as_deref(), Some("10 s left"));
        assert_eq!(time_left(0, 6_000, 10.0).as_deref(), Some("10 min left"));
        assert_eq!(
            time_left(0, 75_600, 10.0).as_deref(),
            Some("2 h 06 min left")
        );
        assert_eq!(time_left(100, 100, 10.0), None);
        assert_eq!(time_left(0, 100, 0.0), None);
        assert_eq!(time_left(0, 100, f64::NAN), None);
        assert_eq!(
            time_left(0, u64::MAX, 1e-9).as_deref(),
            Some("8760 h 00 min left")
        );
    }
}
