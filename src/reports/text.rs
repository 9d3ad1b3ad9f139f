//! Reports of a CLI run: a line per row, failure messages, and the summary
//! line `N passed, N failed`.

use std::io::{self, Write};

/// The verdict on one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every assertion held.
    Passed,
    /// The failure message (diff and problems).
    Failed(String),
    /// Marked `ignore` with this reason.
    Ignored(String),
}

/// One row's result.
#[derive(Debug, Clone)]
pub struct RowResult {
    /// `file::row`.
    pub id: String,
    /// Tags of the row.
    pub tags: Vec<String>,
    /// `file:line:col` of the row (filled for failures).
    pub location: Option<String>,
    /// Verdict.
    pub verdict: Verdict,
    /// The observed run (trace lines and timings), when it was captured for
    /// the HTML report (boxed: results of 100,000 rows stay small).
    pub observed: Option<Box<crate::reports::ObservedRun>>,
}

/// Counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Rows that passed.
    pub passed: usize,
    /// Rows that failed (including files that did not load).
    pub failed: usize,
    /// Rows ignored.
    pub ignored: usize,
}

impl Summary {
    /// Counts verdicts.
    pub fn of(results: &[RowResult]) -> Self {
        let mut s = Self::default();
        for r in results {
            match r.verdict {
                Verdict::Passed => s.passed += 1,
                Verdict::Failed(_) => s.failed += 1,
                Verdict::Ignored(_) => s.ignored += 1,
            }
        }
        s
    }

    /// `N passed, N failed` (and `, N ignored` when any).
    pub fn line(&self) -> String {
        let mut s = format!("{} passed, {} failed", self.passed, self.failed);
        if self.ignored > 0 {
            s.push_str(&format!(", {} ignored", self.ignored));
        }
        s
    }
}

/// Writes the plain text report: a line per row (unless `quiet`), then each
/// failure's message, then the summary line.
pub fn write_text(out: &mut dyn Write, results: &[RowResult], quiet: bool) -> io::Result<()> {
    if !quiet {
        for r in results {
            let tag = match &r.verdict {
                Verdict::Passed => "ok     ",
                Verdict::Failed(_) => "FAILED ",
                Verdict::Ignored(_) => "ignored",
            };
            writeln!(out, "{tag} {}", r.id)?;
        }
    }
    let failed: Vec<&RowResult> = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Failed(_)))
        .collect();
    if !failed.is_empty() {
        writeln!(out, "\nfailures:\n")?;
        for r in failed {
            if let Verdict::Failed(msg) = &r.verdict {
                writeln!(out, "---- {} ----", r.id)?;
                writeln!(out, "{}\n", msg.trim_end())?;
            }
        }
    }
    writeln!(out, "{}", Summary::of(results).line())
}
