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
    for (f, l) in files.iter().zip(discover::load_all(files, loader, threads)) {
        match l {
            Loaded::Matrix(m) => {
                report.matrices += 1;
                report.rows += m.rows.len();
                report.warnings.extend(crate::engine::caps::warnings(&m));
                coverage.record(&m);
                if let Some(p) = &m.registry.path {
                    registries
                        .entry(p.clone())
                        .or_insert_with(|| m.registry.clone());
                }
            }
            Loaded::Errors(e) => report.problems.push(e.to_string()),
            Loaded::Registry => given.push(f.clone()),
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
