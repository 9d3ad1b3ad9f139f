//! The plain text report of a CLI run: a line per row, failure messages,
//! and the summary line `N passed, N failed`.

use std::io::{self, Write};

use crate::engine::results::{RowResult, Summary, Verdict};

/// The word a row's line starts with (`ok     `, `FAILED `, `ignored`).
pub fn row_tag(v: &Verdict) -> &'static str {
    match v {
        Verdict::Passed => "ok     ",
        Verdict::Failed(_) => "FAILED ",
        Verdict::Ignored(_) => "ignored",
    }
}

/// Writes the plain text report: a line per row (unless `quiet`), then each
/// failure's message, then the summary line (`summary`: the counts of every
/// row run, which `results` may hold only the failures of).
pub fn write_text(
    out: &mut dyn Write,
    results: &[RowResult],
    summary: &Summary,
    quiet: bool,
) -> io::Result<()> {
    if !quiet {
        for r in results {
            writeln!(out, "{} {}", row_tag(&r.verdict), r.id)?;
        }
    }
    let failed: Vec<&RowResult> = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Failed(_)))
        .collect();
    if !failed.is_empty() {
        writeln!(out, "\nfailures:\n")?;
        for r in failed {
            if let Verdict::Failed(f) = &r.verdict {
                writeln!(out, "---- {} ----", r.id)?;
                writeln!(out, "{}\n", f.render().trim_end())?;
            }
        }
    }
    writeln!(out, "{}", summary.line())
}
