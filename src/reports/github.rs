//! GitHub Actions workflow commands: an `::error file=…,line=…::` line per
//! failed row, at the row's file and line, so the failure shows in the
//! pull request's diff view. Emitted when `GITHUB_ACTIONS=true`.

use super::{RowResult, Verdict};

/// Whether we run under GitHub Actions.
pub fn enabled() -> bool {
    std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true")
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

/// Splits `file:line:col` (the file may itself hold `:` on other systems).
pub fn split_location(loc: &str) -> (String, Option<usize>, Option<usize>) {
    let mut parts = loc.rsplitn(3, ':');
    let col = parts.next().and_then(|c| c.parse().ok());
    let line = parts.next().and_then(|l| l.parse().ok());
    match (line, col, parts.next()) {
        (Some(l), Some(c), Some(f)) => (f.to_string(), Some(l), Some(c)),
        _ => (loc.to_string(), None, None),
    }
}

/// The annotation lines for failed rows.
pub fn annotations(results: &[RowResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        let Verdict::Failed(msg) = &r.verdict else {
            continue;
        };
        let loc = r.location.as_deref().unwrap_or(&r.id);
        let (file, line, col) = split_location(loc);
        let mut props = format!("file={}", escape_prop(&file));
        if let Some(l) = line {
            props.push_str(&format!(",line={l}"));
        }
        if let Some(c) = col {
            props.push_str(&format!(",col={c}"));
        }
        let title = r.id.split_once("::").map_or("matrix file", |(_, row)| row);
        props.push_str(&format!(",title={}", escape_prop(title)));
        out.push(format!("::error {props}::{}", escape_data(msg.trim_end())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotates_at_the_rows_file_and_line() {
        let r = RowResult {
            id: "matrices/a.yaml::x, y".into(),
            tags: vec![],
            location: Some("matrices/a.yaml:12:5".into()),
            verdict: Verdict::Failed("row failed\n- A1\n+ A2 50%".into()),
            observed: None,
        };
        assert_eq!(
            annotations(&[r]),
            vec!["::error file=matrices/a.yaml,line=12,col=5,title=x%2C y::row failed%0A- A1%0A+ A2 50%25".to_string()]
        );
    }
}
