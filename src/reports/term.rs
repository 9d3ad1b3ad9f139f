//! Terminal niceties: coloured diffs and a progress line for long runs when
//! the output is a terminal; plain text on a pipe (or with `NO_COLOR`).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::base::env::Env;

/// Whether stdout gets colour: a terminal, and `NO_COLOR` unset.
pub fn colour_stdout(env: &Env) -> bool {
    std::io::stdout().is_terminal() && env.var("NO_COLOR").is_none()
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const BOLD_RED: &str = "\x1b[1;31m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// Colours a report: removed lines red, added lines green, headlines bold.
pub fn colourise(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let colour = if body.starts_with("- ") {
            Some(RED)
        } else if body.starts_with("+ ") {
            Some(GREEN)
        } else if body.starts_with("FAILED")
            || body.starts_with("row `")
            || body.starts_with("error")
        {
            Some(BOLD_RED)
        } else if body.trim_start().starts_with("--> ") || body.starts_with("---- ") {
            Some(CYAN)
        } else {
            None
        };
        match colour {
            Some(c) => {
                out.push_str(c);
                out.push_str(body);
                out.push_str(RESET);
            }
            None => out.push_str(body),
        }
        out.push_str(nl);
    }
    out
}

/// When the progress line is drawn, from `FAULTMATRIX_PROGRESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Unset or `auto`: on a terminal (stderr), once the run has lasted a
    /// second.
    Auto,
    /// `always` (or `1`): from the start, even on a pipe.
    Always,
    /// `never` (or `0`, `off`): not at all.
    Never,
}

impl ProgressMode {
    /// Reads `FAULTMATRIX_PROGRESS`.
    pub fn from_env(env: &Env) -> Self {
        match env
            .var("FAULTMATRIX_PROGRESS")
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("always" | "1" | "on") => Self::Always,
            Some("never" | "0" | "off") => Self::Never,
            _ => Self::Auto,
        }
    }
}

/// How long a run lasts before `auto` progress is drawn.
pub const PROGRESS_AFTER: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Shared {
    /// Whether the progress line is on the screen now.
    shown: bool,
    /// Row lines not yet flushed.
    pending: Vec<u8>,
    last_flush: Option<std::time::Instant>,
}

/// The live part of a run's output: a line per row on stdout as each row
/// finishes, and a progress line on stderr (`[3/12 files, 57 rows]`) drawn
/// as [`ProgressMode`] says. Row lines and the progress line share the
/// terminal: the progress line is cleared before row lines are written
/// and redrawn after.
pub struct Progress {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicUsize>,
    rows: Arc<AtomicUsize>,
    shared: Arc<std::sync::Mutex<Shared>>,
    lines: bool,
    colour: bool,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts for `total` files: row lines on stdout when `lines`
    /// (coloured when `colour`), the progress line as `mode` says.
    pub fn live(total: usize, mode: ProgressMode, lines: bool, colour: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicUsize::new(0));
        let rows = Arc::new(AtomicUsize::new(0));
        let shared = Arc::new(std::sync::Mutex::new(Shared::default()));
        let draw = match mode {
            ProgressMode::Always => Some(Duration::ZERO),
            ProgressMode::Never => None,
            ProgressMode::Auto => std::io::stderr().is_terminal().then_some(PROGRESS_AFTER),
        };
        let handle = draw.map(|after| {
            let (stop, done, rows, shared) =
                (stop.clone(), done.clone(), rows.clone(), shared.clone());
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                let line = || {
                    let mut s = crate::base::lock(&shared);
                    let (d, r) = (done.load(Ordering::Relaxed), rows.load(Ordering::Relaxed));
                    let _ = write!(std::io::stderr(), "\r[{d}/{total} files, {r} rows]");
                    s.shown = true;
                };
                while !stop.load(Ordering::Relaxed) {
                    if started.elapsed() >= after {
                        line();
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                if started.elapsed() >= after {
                    line();
                    let mut s = crate::base::lock(&shared);
                    let _ = write!(std::io::stderr(), "\r\x1b[2K");
                    s.shown = false;
                }
            })
        });
        Self {
            stop,
            done,
            rows,
            shared,
            lines,
            colour,
            handle,
        }
    }

    /// A progress line only (no row lines), as before: `auto` unless
    /// `FAULTMATRIX_PROGRESS` says otherwise.
    pub fn start(total: usize, env: &Env) -> Self {
        Self::live(total, ProgressMode::from_env(env), false, false)
    }

    /// Counts one more finished row, and writes its line.
    pub fn row_done(&self, r: &crate::engine::results::RowResult) {
        self.rows.fetch_add(1, Ordering::Relaxed);
        if !self.lines {
            return;
        }
        let line = format!("{} {}\n", super::text::row_tag(&r.verdict), r.id);
        let line = if self.colour { colourise(&line) } else { line };
        let mut s = crate::base::lock(&self.shared);
        s.pending.extend_from_slice(line.as_bytes());
        // Flushed at most every 50 ms (and at each file's end), so 100,000
        // rows are not 100,000 writes, and a slow row is seen at once.
        let now = std::time::Instant::now();
        if s.last_flush
            .is_none_or(|t| now - t >= Duration::from_millis(50))
        {
            Self::flush(&mut s, now);
        }
    }

    fn flush(s: &mut Shared, now: std::time::Instant) {
        if s.pending.is_empty() {
            return;
        }
        if s.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            s.shown = false;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&s.pending);
        let _ = out.flush();
        s.pending.clear();
        s.last_flush = Some(now);
    }

    /// Counts one more finished file (and flushes its row lines).
    pub fn file_done(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
        Self::flush(
            &mut crate::base::lock(&self.shared),
            std::time::Instant::now(),
        );
    }

    /// Flushes the row lines, stops and clears the progress line.
    pub fn finish(mut self) {
        Self::flush(
            &mut crate::base::lock(&self.shared),
            std::time::Instant::now(),
        );
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_diff_lines_only() {
        let c = colourise("  A1 503 retry\n- A2 200 return\n+ A2 503 fail\n");
        assert_eq!(
            c,
            "  A1 503 retry\n\x1b[31m- A2 200 return\x1b[0m\n\x1b[32m+ A2 503 fail\x1b[0m\n"
        );
    }
}
