//! JUnit XML, valid against the Jenkins xunit plugin's `junit-10.xsd` (the
//! schema GitLab, Jenkins and most CI systems read; the repo's copy of its
//! constraints is `docs/schema/junit-10.xsd`, and a test validates the
//! output against it with xmllint).
//!
//! One `<testsuite>` per matrix file (`file` attribute: the file), one
//! `<testcase>` per row (`classname` the file, `name` the row), with
//! `time` in seconds on every case, suite and the root; `tests`,
//! `failures`, `errors` (files that do not load) and `skipped` (ignored
//! rows) on each suite. Failures carry the full message with its diff as
//! their body. The schema allows no `file`/`line` on a testcase and no
//! `<properties>` inside one, so each row's `file:line` is a suite
//! property named `line: ROW`.
//!
//! Written by hand rather than with `quick-junit`: quick-junit 0.8 always
//! writes `skipped` on `<testsuites>` and `<properties>` inside
//! `<testcase>`, both of which junit-10.xsd rejects.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use super::{RowResult, Summary, Verdict};
use crate::verdict::ProblemKind;

/// Escapes text for XML attributes and character data; control characters
/// XML 1.0 cannot hold are dropped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            '\u{FFFE}' | '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Splits `file.yaml::row` into file and row (a load error has no row).
pub fn split_id(id: &str) -> (&str, &str) {
    id.split_once("::").unwrap_or((id, ""))
}

/// Seconds with millisecond precision, as the schema's `SUREFIRE_TIME`.
fn secs(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

/// Whether a failed result is an error (the file did not load) rather than
/// a failed assertion.
fn is_error(r: &RowResult) -> bool {
    matches!(&r.verdict, Verdict::Failed(f)
        if f.problems.iter().any(|p| p.kind == ProblemKind::Load))
}

/// Renders the JUnit document.
pub fn render(results: &[RowResult]) -> String {
    let mut files: BTreeMap<&str, Vec<&RowResult>> = BTreeMap::new();
    for r in results {
        files.entry(split_id(&r.id).0).or_default().push(r);
    }
    let time_of = |rows: &[&RowResult]| -> Duration {
        rows.iter().filter_map(|r| r.meta.time).sum::<Duration>()
    };
    let all: Vec<&RowResult> = results.iter().collect();
    let total = Summary::of(results);
    let errors = results.iter().filter(|r| is_error(r)).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"faultmatrix\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">",
        results.len(),
        total.failed - errors,
        errors,
        secs(time_of(&all))
    );
    for (file, rows) in files {
        let owned: Vec<RowResult> = rows.iter().map(|r| (*r).clone()).collect();
        let s = Summary::of(&owned);
        let errors = rows.iter().filter(|r| is_error(r)).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\" file=\"{}\">",
            escape(file),
            rows.len(),
            s.failed - errors,
            errors,
            s.ignored,
            secs(time_of(&rows)),
            escape(file),
        );
        let lines: Vec<(&str, usize)> = rows
            .iter()
            .filter_map(|r| {
                let row = split_id(&r.id).1;
                let failed_at = match &r.verdict {
                    Verdict::Failed(f) => f.at.as_ref().and_then(|a| a.line),
                    _ => None,
                };
                Some((row, r.meta.line.or(failed_at)?)).filter(|(row, _)| !row.is_empty())
            })
            .collect();
        if !lines.is_empty() {
            out.push_str("    <properties>\n");
            for (row, line) in lines {
                let _ = writeln!(
                    out,
                    "      <property name=\"line: {}\" value=\"{}:{line}\"/>",
                    escape(row),
                    escape(file)
                );
            }
            out.push_str("    </properties>\n");
        }
        for r in rows {
            let (_, row) = split_id(&r.id);
            let name = if row.is_empty() { "(file)" } else { row };
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
                escape(file),
                escape(name),
                secs(r.meta.time.unwrap_or_default())
            );
            match &r.verdict {
                Verdict::Passed => out.push_str("/>\n"),
                Verdict::Ignored(reason) => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        escape(reason)
                    );
                }
                Verdict::Failed(f) => {
                    let tag = if is_error(r) { "error" } else { "failure" };
                    let _ = writeln!(
                        out,
                        ">\n      <{tag} message=\"{}\" type=\"faultmatrix\">{}</{tag}>\n    </testcase>",
                        escape(&f.headline()),
                        escape(&f.render())
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
