//! GitHub Actions workflow commands: an `::error file=…,line=…::` line per
//! failed row, at the row's file and line, so the failure shows in the
//! pull request's diff view. Emitted when `GITHUB_ACTIONS=true`.

use super::{RowResult, Verdict};
use crate::base::env::Env;

/// Whether we run under GitHub Actions.
pub fn enabled(env: &Env) -> bool {
    env.var("GITHUB_ACTIONS") == Some("true")
}

/// Escapes a message (`%`, CR, LF) as the workflow-command syntax needs.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value (also `:` and `,`).
fn escape_prop(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The annotation lines for failed rows.
pub fn annotations(results: &[RowResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        let Verdict::Failed(failure) = &r.verdict else {
            continue;
        };
        let file = failure
            .at
            .as_ref()
            .map_or(r.id.as_str(), |a| a.file.as_str());
        let mut props = format!("file={}", escape_prop(file));
        if let Some(l) = failure.at.as_ref().and_then(|a| a.line) {
            props.push_str(&format!(",line={l}"));
        }
        if let Some(c) = failure.at.as_ref().and_then(|a| a.col) {
            props.push_str(&format!(",col={c}"));
        }
        let title = r.id.split_once("::").map_or("matrix file", |(_, row)| row);
        props.push_str(&format!(",title={}", escape_prop(title)));
        out.push(format!(
            "::error {props}::{}",
            escape_data(failure.render().trim_end())
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotates_at_the_rows_file_and_line() {
        use crate::verdict::{Failure, Location, Problem, ProblemKind};
        let r = RowResult {
            id: "matrices/a.yaml::x, y".into(),
            tags: vec![],
            verdict: Verdict::Failed(Failure {
                row: None,
                at: Some(Location::at("matrices/a.yaml", 12, 5)),
                problems: vec![Problem::new(
                    ProblemKind::Trace,
                    "row failed\n- A1\n+ A2 50%",
                )],
            }),
            observed: None,
            meta: Default::default(),
        };
        assert_eq!(
            annotations(&[r]),
            vec!["::error file=matrices/a.yaml,line=12,col=5,title=x%2C y::row failed%0A- A1%0A+ A2 50%25".to_string()]
        );
    }
}
