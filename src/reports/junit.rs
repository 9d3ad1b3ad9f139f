//! JUnit XML: one `<testsuite>` per matrix file, one `<testcase>` per row
//! (`classname` the file, `name` the row), failures carrying the full
//! message with its diff, ignored rows as `<skipped>`.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{RowResult, Summary, Verdict};

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
            c => out.push(c),
        }
    }
    out
}

/// Splits `file.yaml::row` into file and row (a load error has no row).
pub fn split_id(id: &str) -> (&str, &str) {
    id.split_once("::").unwrap_or((id, ""))
}

/// Renders the JUnit document.
pub fn render(results: &[RowResult]) -> String {
    let mut files: BTreeMap<&str, Vec<&RowResult>> = BTreeMap::new();
    for r in results {
        files.entry(split_id(&r.id).0).or_default().push(r);
    }
    let total = Summary::of(results);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"faultmatrix\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">",
        results.len(),
        total.failed,
        total.ignored
    );
    for (file, rows) in files {
        let owned: Vec<RowResult> = rows.iter().map(|r| (*r).clone()).collect();
        let s = Summary::of(&owned);
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">",
            escape(file),
            rows.len(),
            s.failed,
            s.ignored
        );
        for r in rows {
            let (_, row) = split_id(&r.id);
            let name = if row.is_empty() { "(file)" } else { row };
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\"",
                escape(file),
                escape(name)
            );
            let _ = write!(out, " file=\"{}\"", escape(file));
            if let Verdict::Failed(f) = &r.verdict {
                if let Some(line) = f.at.as_ref().and_then(|a| a.line) {
                    let _ = write!(out, " line=\"{line}\"");
                }
            }
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
                    let msg = f.render();
                    let first = f.headline();
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\" type=\"faultmatrix\">{}</failure>\n    </testcase>",
                        escape(&first),
                        escape(&msg)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
