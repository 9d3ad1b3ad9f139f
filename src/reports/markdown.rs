//! A Markdown summary for a pull-request comment: the counts, a table of
//! failed rows with their location, and each failure's diff in a
//! collapsible block.

use std::fmt::Write;

use super::{RowResult, Summary, Verdict};

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Renders the summary.
pub fn render(results: &[RowResult]) -> String {
    let s = Summary::of(results);
    let mut out = String::new();
    let icon = if s.failed == 0 { "✅" } else { "❌" };
    let _ = writeln!(out, "## {icon} faultmatrix: {}\n", s.line());
    let failed: Vec<&RowResult> = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Failed(_)))
        .collect();
    if failed.is_empty() {
        let _ = writeln!(out, "All {} rows passed.", s.passed);
        return out;
    }
    out.push_str("| row | where |\n|---|---|\n");
    for r in &failed {
        let _ = writeln!(
            out,
            "| {} | `{}` |",
            cell(&r.id),
            cell(r.location.as_deref().unwrap_or("-"))
        );
    }
    out.push('\n');
    for r in failed {
        if let Verdict::Failed(msg) = &r.verdict {
            let _ = writeln!(
                out,
                "<details><summary>{}</summary>\n\n```diff\n{}\n```\n\n</details>\n",
                super::junit::escape(&r.id),
                msg.trim_end().replace("```", "ʼʼʼ")
            );
        }
    }
    out
}
