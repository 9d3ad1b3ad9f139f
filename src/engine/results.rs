//! The results of a run, as values: one [`RowResult`] per row (or per file
//! that does not load, per generated test, per guardrail), and the counts.

use crate::engine::discover::Found;
use crate::verdict::{Failure, Location, ObservedRun, ProblemKind};

/// The verdict on one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every assertion held.
    Passed,
    /// Why it failed.
    Failed(Failure),
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
    /// Verdict.
    pub verdict: Verdict,
    /// The observed run (trace lines and timings), when it was captured for
    /// the HTML report (boxed: results of 100,000 rows stay small).
    pub observed: Option<Box<ObservedRun>>,
    /// How long it took and where it is written (for JUnit and live lines).
    pub meta: RowMeta,
}

/// What reports show about a row besides its verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowMeta {
    /// Wall-clock time the row took to run (`None`: not run, or not timed).
    pub time: Option<std::time::Duration>,
    /// 1-based line of the row's `name` in its file.
    pub line: Option<usize>,
    /// What kind of test it is (reports say why a result has no trace).
    pub kind: RowKind,
}

/// What a result is a result of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RowKind {
    /// A row written in a matrix file.
    #[default]
    Row,
    /// A row a registry generates for one of its codes.
    Generated,
    /// A guardrail: a check of a registry file, with no calls.
    Guardrail,
    /// A file that does not load.
    File,
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
            s.count(&r.verdict);
        }
        s
    }

    /// Counts one verdict.
    pub fn count(&mut self, v: &Verdict) {
        match v {
            Verdict::Passed => self.passed += 1,
            Verdict::Failed(_) => self.failed += 1,
            Verdict::Ignored(_) => self.ignored += 1,
        }
    }

    /// Adds another summary's counts.
    pub fn add(&mut self, other: &Summary) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.ignored += other.ignored;
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

/// A file that does not load, as one failed result.
pub fn load_failure(found: &Found, text: String) -> RowResult {
    RowResult {
        id: found.display.clone(),
        tags: Vec::new(),
        verdict: Verdict::Failed(Failure::whole(
            Location::file(&found.display),
            ProblemKind::Load,
            text,
        )),
        observed: None,
        meta: RowMeta {
            kind: RowKind::File,
            ..RowMeta::default()
        },
    }
}
