//! A failure is data: where (file, line, column, row) and what (a list of
//! problems, each with its kind and its text). It is built once, by the
//! verdict, and rendered once per report: the terminal and libtest print
//! [`Failure::render`], JUnit and GitHub annotations read
//! [`Failure::at`] directly. No layer edits another's message and no
//! reporter parses one back apart.

use std::fmt;

/// Where a failure points: a file, and the line and column when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as the user named it (`matrices/x.yaml`).
    pub file: String,
    /// 1-based line.
    pub line: Option<usize>,
    /// 1-based column.
    pub col: Option<usize>,
}

impl Location {
    /// A position in a file.
    pub fn at(file: impl Into<String>, line: usize, col: usize) -> Self {
        Self {
            file: file.into(),
            line: Some(line),
            col: Some(col),
        }
    }

    /// A whole file.
    pub fn file(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            line: None,
            col: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.col {
                write!(f, ":{c}")?;
            }
        }
        Ok(())
    }
}

/// What kind of problem a row has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// The observed trace differs from the expected one (a diff).
    Trace,
    /// `expect.stop`.
    Stop,
    /// `expect.elapsed`.
    Elapsed,
    /// `expect.error`.
    Error,
    /// `expect.escalations`.
    Escalations,
    /// `expect.records`.
    Records,
    /// `expect.amplification`.
    Amplification,
    /// `expect.output`.
    Output,
    /// The contract of a terminal stop (one call, one escalation, no timer).
    Terminal,
    /// `expect.requests`.
    Requests,
    /// Real time outside the row's tolerance (over the wire).
    Tolerance,
    /// What the harness saw on the wire: an extra call, an unused answer,
    /// a runaway loop, a hung system, a late call.
    Harness,
    /// The row's tape could not be replayed.
    Tape,
    /// A recording did not happen as asked.
    Recording,
    /// The row's snapshot is new or differs.
    Snapshot,
    /// Context: the observed trace of a row that asserts no trace.
    ObservedTrace,
    /// Context: what a command system printed, and how to run it by hand.
    CommandOutput,
    /// A file that does not load (its diagnostics).
    Load,
    /// A registry guardrail.
    Guardrail,
    /// What bless wrote into the row's file, or why it did not.
    Bless,
}

/// One problem: its kind and its text (possibly several lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// The text, as the report prints it.
    pub detail: String,
}

impl Problem {
    /// A problem of this kind.
    /// Credentials in URLs are removed from the text
    /// ([`crate::base::redact::url_credentials`]).
    pub fn new(kind: ProblemKind, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let detail = match crate::base::redact::url_credentials(&detail) {
            std::borrow::Cow::Borrowed(_) => detail,
            std::borrow::Cow::Owned(clean) => clean,
        };
        Self { kind, detail }
    }
}

/// Why a row (or a file, or a guardrail) failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The row's name; `None` for a file that does not load or a guardrail.
    pub row: Option<String>,
    /// Where to look.
    pub at: Option<Location>,
    /// What went wrong, in the order the report shows it.
    pub problems: Vec<Problem>,
}

impl Failure {
    /// A row's failure.
    pub fn row(name: impl Into<String>, at: Location, problems: Vec<Problem>) -> Self {
        Self {
            row: Some(name.into()),
            at: Some(at),
            problems,
        }
    }

    /// A failure of a whole file or check, with one problem.
    pub fn whole(at: Location, kind: ProblemKind, detail: impl Into<String>) -> Self {
        Self {
            row: None,
            at: Some(at),
            problems: vec![Problem::new(kind, detail)],
        }
    }

    /// Whether a problem of this kind is present.
    pub fn has(&self, kind: ProblemKind) -> bool {
        self.problems.iter().any(|p| p.kind == kind)
    }

    /// The message every text report prints: for a row,
    /// ``row `NAME` failed`` and `--> file:line:col`, then each problem.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(row) = &self.row {
            let row = crate::base::label::escape(row);
            out.push_str(&format!("row `{row}` failed\n"));
            if let Some(at) = &self.at {
                out.push_str(&format!("  --> {at}\n"));
            }
        }
        for p in &self.problems {
            out.push_str(&p.detail);
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }

    /// The first line a report can use as a title.
    pub fn headline(&self) -> String {
        match &self.row {
            Some(row) => format!("row `{}` failed", crate::base::label::escape(row)),
            None => self
                .problems
                .iter()
                .flat_map(|p| p.detail.lines())
                .find(|l| !l.trim().is_empty())
                .unwrap_or("failed")
                .to_string(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for Failure {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_never_carries_a_urls_credentials() {
        let p = Problem::new(
            ProblemKind::Harness,
            "cannot reach http://user:hunter2@127.0.0.1:9/v1",
        );
        assert_eq!(p.detail, "cannot reach http://***@127.0.0.1:9/v1");
    }

    #[test]
    fn renders_a_row_failure_once() {
        let f = Failure::row(
            "r",
            Location::at("m.yaml", 3, 5),
            vec![
                Problem::new(
                    ProblemKind::Stop,
                    "stop: expected `success`, observed `exhausted`",
                ),
                Problem::new(
                    ProblemKind::Harness,
                    "route A: call 2 but 1 answer was scripted\n",
                ),
            ],
        );
        assert_eq!(
            f.render(),
            "row `r` failed\n  --> m.yaml:3:5\nstop: expected `success`, observed `exhausted`\nroute A: call 2 but 1 answer was scripted\n"
        );
        assert_eq!(f.headline(), "row `r` failed");
        assert!(f.has(ProblemKind::Harness) && !f.has(ProblemKind::Trace));
        let w = Failure::whole(
            Location::file("codes.yaml"),
            ProblemKind::Guardrail,
            "\nbad\n",
        );
        assert_eq!(w.render(), "\nbad\n");
        assert_eq!(w.headline(), "bad");
        assert_eq!(Location::file("x").to_string(), "x");
    }
}
