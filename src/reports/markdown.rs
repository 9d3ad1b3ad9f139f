//! A Markdown summary for a pull-request comment: the counts, a table of
//! failed rows with their location, and each failure's diff in a
//! collapsible block.

use std::fmt::Write;

use super::{RowResult, Summary, Verdict};

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Failed rows listed in the table (a pull-request comment holds at most
/// 65,536 characters).
pub const MAX_ROWS: usize = 200;
/// Failed rows whose message is shown.
pub const MAX_DETAILS: usize = 20;

/// Renders the summary.
pub fn render(results: &[RowResult]) -> String {
    render_with(results, &Summary::of(results))
}

/// Renders the summary with the counts of every row run (`results` may
/// hold only the failed and ignored rows).
pub fn render_with(results: &[RowResult], s: &Summary) -> String {
    let s = *s;
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
    for r in failed.iter().take(MAX_ROWS) {
        let _ = writeln!(
            out,
            "| {} | `{}` |",
            cell(&r.id),
            cell(&match &r.verdict {
                Verdict::Failed(f) => f.at.as_ref().map_or("-".to_string(), |a| a.to_string()),
                _ => "-".to_string(),
            })
        );
    }
    if failed.len() > MAX_ROWS {
        let _ = writeln!(out, "| … and {} more | |", failed.len() - MAX_ROWS);
    }
    out.push('\n');
    let shown = failed.len().min(MAX_DETAILS);
    for r in &failed[..shown] {
        if let Verdict::Failed(f) = &r.verdict {
            let _ = writeln!(
                out,
                "<details><summary>{}</summary>\n\n```diff\n{}\n```\n\n</details>\n",
                super::junit::escape(&r.id),
                f.render().trim_end().replace("```", "ʼʼʼ")
            );
        }
    }
    if failed.len() > shown {
        let _ = writeln!(
            out,
            "{} more failures are not shown here: see the JUnit or HTML report.",
            failed.len() - shown
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_stay_within_a_comment() {
        let results: Vec<RowResult> = (0..300)
            .map(|i| RowResult {
                id: format!("m.yaml::row {i}"),
                tags: vec![],
                verdict: Verdict::Failed(crate::verdict::Failure::whole(
                    crate::verdict::Location::at("m.yaml", i, 5),
                    crate::verdict::ProblemKind::Trace,
                    "- a\n+ b\n".repeat(50),
                )),
                observed: None,
                meta: Default::default(),
            })
            .collect();
        let md = render(&results);
        assert!(md.len() < 65_536, "{} bytes", md.len());
        assert_eq!(md.matches("<details>").count(), MAX_DETAILS);
        assert!(md.contains("| … and 100 more | |"));
        assert!(md.contains("280 more failures are not shown here"));
    }
}
