//! The expected-behaviour table: a registry as the Markdown review artifact
//! (`faultmatrix codes`), one line per code, for whoever owns escalation.
//! The "calls" column is the number of calls the generated tests observe,
//! not a promise about production timing.

use std::fmt::Write;

use crate::engine::generate;
use crate::engine::guardrails::{self, Coverage, Guardrail};
use crate::model::registry::{Code, Registry, StatusMatch};
use crate::model::Answer;

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn missing(what: &str) -> String {
    format!("**{what}**")
}

fn matches(c: &Code) -> String {
    let mut parts = Vec::new();
    if !c.statuses.is_empty() {
        let s: Vec<String> = c
            .statuses
            .iter()
            .map(|s| match s {
                StatusMatch::Exact(n) => n.to_string(),
                StatusMatch::Class(k) => format!("{k}xx"),
            })
            .collect();
        parts.push(format!("status {}", s.join(", ")));
    }
    if !c.body.is_empty() {
        parts.push(format!("body {}", c.body.join(", ")));
    }
    if let Some(o) = &c.outcome {
        parts.push(format!("outcome {o}"));
    }
    if parts.is_empty() {
        "—".into()
    } else {
        parts.join("; ")
    }
}

fn fixture(r: &Registry, c: &Code) -> (String, String) {
    let Some(f) = &c.fixture else {
        return (missing("missing"), missing("missing"));
    };
    let mut what = generate::outcome(&f.entry);
    if let Answer::Response(resp) = &f.entry.answer {
        if let Some(v) = resp.body.as_deref().and_then(body_code) {
            write!(what, " `{v}`").expect("writing to a string");
        }
        for (k, v) in &resp.headers {
            let lower = k.to_ascii_lowercase();
            if lower == "retry-after" || lower == "retry-after-ms" {
                write!(what, ", {k}: {v}").expect("writing to a string");
            }
        }
    }
    if !f.entry.latency.is_zero() {
        write!(
            what,
            ", after {}",
            crate::base::duration::format(f.entry.latency)
        )
        .expect("writing to a string");
    }
    let status = match guardrails::classify(r, &f.entry, &[]) {
        Some(code) if code == c.name => "ok".to_string(),
        Some(code) => missing(&format!("classified as {code}")),
        None => missing("classified as success"),
    };
    (what, status)
}

/// The first code-like value of a JSON error body (`error.code`,
/// `error.type`, `code`), for the fixture column.
fn body_code(body: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    crate::model::registry::DEFAULT_BODY_PATHS
        .iter()
        .find_map(|p| {
            let mut v = &json;
            for part in p.split('.') {
                v = v.get(part)?;
            }
            v.as_str().map(str::to_string)
        })
}

/// Renders the review table in Markdown, followed by stray fixtures and the
/// guardrails that fail (the coverage guardrail is left out: it needs the
/// matrices, see `faultmatrix check`).
pub fn markdown(r: &Registry) -> String {
    let mut out = String::new();
    let title = r.title.as_deref().unwrap_or("Reason codes");
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(
        out,
        "Registry `{}`: {} codes. \"calls\" is what the generated tests observe for a code that never recovers.\n",
        r.origin,
        r.codes.len()
    );
    out.push_str("| code | retryable | calls | escalate to | matches | fixture | fixture status | recovers after | generated tests |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for c in &r.codes {
        let retryable = match (c.retryable_declared, c.retryable, c.switch) {
            (false, _, _) => missing("undeclared"),
            (true, true, _) => "yes".into(),
            (true, false, true) => "no (switches route)".into(),
            (true, false, false) => "no".into(),
        };
        let calls = match (c.retryable_declared, c.retryable, c.switch) {
            (false, _, _) => "—".to_string(),
            (true, false, false) => "1".into(),
            (true, false, true) => "1, then the next route".into(),
            (true, true, _) => c
                .max_attempts
                .map_or_else(|| missing("missing"), |n| n.to_string()),
        };
        let escalate = c.escalate_to.clone().unwrap_or_else(|| missing("missing"));
        let (fx, status) = fixture(r, c);
        let recovers = match (&c.fixture, c.retryable) {
            (_, false) => "never".to_string(),
            (Some(f), true) => f.recovers_after.map_or("never".into(), |k| {
                format!("{k} failing call{}", if k == 1 { "" } else { "s" })
            }),
            (None, true) => "—".into(),
        };
        let cases: Vec<&str> = generate::cases(c)
            .iter()
            .map(|k| k.name().split(':').next().unwrap_or(""))
            .collect();
        let tests = if cases.is_empty() {
            missing("none")
        } else {
            cases.join(", ")
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&c.name),
            retryable,
            calls,
            cell(&escalate),
            cell(&matches(c)),
            cell(&fx),
            cell(&status),
            recovers,
            tests
        );
    }
    if !r.stray_fixtures.is_empty() {
        out.push_str("\n## Fixtures that name no code\n\n");
        for s in &r.stray_fixtures {
            let _ = writeln!(out, "- `{}` ({}:{})", s.name, r.origin, s.line);
        }
    }
    let failing: Vec<(Guardrail, String)> = guardrails::failures(r, &Coverage::new())
        .into_iter()
        .filter(|(g, _)| !g.needs_coverage())
        .collect();
    out.push_str("\n## Guardrails\n\n");
    if failing.is_empty() {
        out.push_str("Every guardrail that needs no matrix holds.\n");
    } else {
        for (_, msg) in failing {
            let mut lines = msg.lines();
            if let Some(head) = lines.next() {
                let _ = writeln!(out, "- {head}");
            }
            for l in lines {
                let _ = writeln!(out, "  - {}", l.trim());
            }
        }
    }
    out
}
