//! `faultmatrix check`: validates matrices and registries without running a
//! row. Every file is loaded (schema errors are reported with positions);
//! every registry, whether given or named by a given matrix, has its
//! guardrails checked, the coverage guardrail counting the rows of the
//! given matrices. The exit status is for CI: 0 when nothing is wrong, 2
//! otherwise.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::discover::{self, Found, Loaded};
use crate::engine::guardrails::{self, Coverage};
use crate::engine::suite::Suite;
use crate::load::Loader;
use crate::model::registry::Registry;
use crate::model::Matrix;

/// What `check` found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// Matrix files that loaded.
    pub matrices: usize,
    /// Rows in them.
    pub rows: usize,
    /// Registries checked (given, or named by a matrix).
    pub registries: usize,
    /// Codes in those registries.
    pub codes: usize,
    /// Problems, each a rendered message (diagnostics or a guardrail).
    pub problems: Vec<String>,
    /// Warnings: what holds but may surprise (a code's `max_attempts`
    /// capping a route's `attempts`). They do not fail `check`.
    pub warnings: Vec<String>,
}

impl CheckReport {
    /// The summary line.
    pub fn summary(&self) -> String {
        let n = self.problems.len();
        format!(
            "checked {} matri{} ({} rows) and {} registr{} ({} codes): {} problem{}",
            self.matrices,
            if self.matrices == 1 { "x" } else { "ces" },
            self.rows,
            self.registries,
            if self.registries == 1 { "y" } else { "ies" },
            self.codes,
            n,
            if n == 1 { "" } else { "s" }
        )
    }

    /// Writes every problem, then the summary line.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        for p in &self.problems {
            writeln!(out, "{}\n", p.trim_end())?;
        }
        for w in &self.warnings {
            writeln!(out, "{}\n", w.trim_end())?;
        }
        writeln!(out, "{}", self.summary())
    }
}

/// Checks files (matrices and registries).
pub fn check(files: &[Found], loader: &Loader, threads: usize) -> CheckReport {
    let mut report = CheckReport::default();
    let mut coverage = Coverage::new();
    // Registries by canonical path (given files first, then those named by
    // matrices), in a stable order.
    let mut registries: BTreeMap<PathBuf, Arc<Registry>> = BTreeMap::new();
    let mut given = Vec::new();
    // Each file gives what the report needs, not its matrix: memory holds
    // one model a thread, and a large file is checked a chunk at a time.
    let sizes = crate::engine::chunked::Sizes::default();
    let checked = crate::engine::pool::map(files, threads, |_, f| check_file(f, loader, sizes));
    for (f, c) in files.iter().zip(checked) {
        match c {
            FileCheck::Matrix {
                rows,
                warnings,
                codes,
                registry,
            } => {
                report.matrices += 1;
                report.rows += rows;
                report.warnings.extend(warnings);
                coverage.merge(codes);
                if let Some((p, r)) = registry {
                    registries.entry(p).or_insert(r);
                }
            }
            FileCheck::Errors(e) => report.problems.push(e),
            FileCheck::Registry => given.push(f.clone()),
        }
    }
    for f in &given {
        match Suite::load(f, &loader.registries) {
            Ok(s) => {
                let key = s.registry.path.clone().unwrap_or_else(|| f.path.clone());
                registries.insert(key, s.registry.clone());
            }
            Err(msg) => {
                report.registries += 1;
                report.problems.push(msg);
            }
        }
    }
    for r in registries.values() {
        report.registries += 1;
        report.codes += r.codes.len();
        for (g, msg) in guardrails::failures(r, &coverage) {
            let (head, details) = msg.trim_end().split_once('\n').unwrap_or((&msg, ""));
            report.problems.push(format!(
                "error: {head}\n  = test: {}\n{details}",
                g.test_id(r)
            ));
        }
    }
    report
}

/// What checking one file gave.
enum FileCheck {
    /// A matrix: its rows, warnings, the codes it uses, its registry file.
    Matrix {
        rows: usize,
        warnings: Vec<String>,
        codes: Coverage,
        registry: Option<(PathBuf, Arc<Registry>)>,
    },
    /// Its errors, rendered.
    Errors(String),
    /// A registry file.
    Registry,
}

/// What a matrix (or each chunk of a large one) adds to its file's check.
#[derive(Default)]
struct Seen {
    rows: usize,
    warnings: Vec<String>,
    codes: Coverage,
    registry: Option<(PathBuf, Arc<Registry>)>,
}

impl Seen {
    fn add(&mut self, m: &Matrix) {
        self.rows += m.rows.len();
        // A chunk repeats its file's warnings: each is kept once.
        for w in crate::engine::caps::warnings(m) {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        self.codes.record(m);
        if let Some(p) = &m.registry.path {
            self.registry
                .get_or_insert_with(|| (p.clone(), m.registry.clone()));
        }
    }

    fn done(self) -> FileCheck {
        FileCheck::Matrix {
            rows: self.rows,
            warnings: self.warnings,
            codes: self.codes,
            registry: self.registry,
        }
    }
}

/// Checks one file: loaded whole, or a chunk at a time when it is large
/// ([`crate::engine::chunked`]).
fn check_file(f: &Found, loader: &Loader, sizes: crate::engine::chunked::Sizes) -> FileCheck {
    use crate::engine::chunked::{self, Checked, Opened};
    let mut seen = Seen::default();
    let loaded = match chunked::open(f, loader, sizes) {
        Opened::Whole => discover::load_one(f, loader),
        Opened::Refused(e) => Loaded::Errors(e),
        Opened::Chunks(c) => match c.check(|m| seen.add(m)) {
            Checked::Valid => return seen.done(),
            Checked::Errors(e) => Loaded::Errors(e),
            Checked::Whole(l) => {
                seen = Seen::default();
                l
            }
        },
    };
    match loaded {
        Loaded::Matrix(m) => {
            seen.add(&m);
            seen.done()
        }
        Loaded::Errors(e) => FileCheck::Errors(e.to_string()),
        Loaded::Registry => FileCheck::Registry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file checked a chunk at a time counts every row once and gives
    /// each warning once, as when loaded whole.
    #[test]
    fn a_large_file_is_checked_a_chunk_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.yaml");
        // Route A's 5 attempts are capped by a code's max_attempts of 2:
        // a warning for the file, which every chunk sees.
        let row = |n: &str| {
            format!("  - name: {n}\n    inject: {{ A: [429, 200] }}\n    expect: {{ trace: \"A1 429 RATE_LIMITED retry wait=1s\\nA2 200 return\" }}\n")
        };
        let rows: String = (0..6).map(|i| row(&format!("r{i}"))).collect();
        std::fs::write(
            &path,
            format!("title: t\ncodes:\n  RATE_LIMITED: {{ max_attempts: 2 }}\npolicy:\n  routes: [{{ name: A, attempts: 5 }}]\n  backoff: {{ initial: 1s, factor: 2, cap: 30s, jitter: none }}\nrows:\n{rows}"),
        )
        .unwrap();
        let found = Found {
            path,
            display: "big.yaml".into(),
        };
        let loader = Loader::new(crate::Systems::new());
        let small = crate::engine::chunked::Sizes {
            above: 0,
            chunk: 1,
            whole: crate::base::confine::MAX_FILE_BYTES,
        };
        let whole = check_file(&found, &loader, crate::engine::chunked::Sizes::default());
        let chunked = check_file(&found, &loader, small);
        let (
            FileCheck::Matrix {
                rows: a,
                warnings: wa,
                ..
            },
            FileCheck::Matrix {
                rows: b,
                warnings: wb,
                ..
            },
        ) = (whole, chunked)
        else {
            panic!("both check")
        };
        assert_eq!((a, b), (6, 6));
        assert_eq!(wa.len(), 1, "{wa:?}");
        assert_eq!(wa, wb);
    }
}
