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

/// A progress line on stderr (`[12/1000 files]`), drawn only when stderr is
/// a terminal and the run is long enough to need it (20 files or more), or
/// when `FAULTMATRIX_PROGRESS=always`.
pub struct Progress {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicUsize>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts drawing for `total` files (nothing for small runs or pipes).
    pub fn start(total: usize, env: &Env) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicUsize::new(0));
        let forced = env.var("FAULTMATRIX_PROGRESS") == Some("always");
        let draw = forced || (total >= 20 && std::io::stderr().is_terminal());
        let handle = draw.then(|| {
            let stop = stop.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let line = || {
                    let done = done.load(Ordering::Relaxed);
                    let _ = write!(std::io::stderr(), "\r[{done}/{total} files]");
                };
                line();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    line();
                }
                line();
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
            })
        });
        Self { stop, done, handle }
    }

    /// Counts one more finished file.
    pub fn file_done(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Stops and clears the line.
    pub fn finish(mut self) {
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
