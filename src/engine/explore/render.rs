//! A shrunk case as a complete YAML row, ready to paste under `rows:` (or
//! appended by `--write`): the answers each route served, the jitter draws,
//! deadline and request, the expected trace and stop, and comments naming
//! the invariant broken and what the system did instead.

use std::time::Duration;

use crate::base::duration::format as dur;
use crate::engine::explore::case::{Answer, Case, Step};
use crate::model::registry::Registry;

/// A YAML double-quoted string.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn with_latency(mut map: Vec<String>, latency: Duration) -> String {
    if !latency.is_zero() {
        map.push(format!("latency: {}", dur(latency)));
    }
    format!("{{ {} }}", map.join(", "))
}

/// One step as a script entry.
pub fn step_yaml(step: &Step, registry: &Registry) -> String {
    let lat = step.latency;
    match &step.answer {
        Answer::Ok if lat.is_zero() => "ok".into(),
        Answer::Ok => with_latency(
            vec![
                "status: 200".into(),
                format!("body: {}", quoted(r#"{"ok":true}"#)),
            ],
            lat,
        ),
        Answer::Status(s) if lat.is_zero() => s.to_string(),
        Answer::Status(s) => with_latency(vec![format!("status: {s}")], lat),
        Answer::Code(c) => with_latency(vec![format!("code: {c}")], lat),
        Answer::Mixed { status, code } => {
            let mut m = vec![format!("status: {status}")];
            if let Some(b) = super::case::fixture_body(registry, code) {
                m.push(format!("body: {}", quoted(&b)));
            }
            with_latency(m, lat)
        }
        Answer::Guidance {
            status,
            header,
            value,
        } => with_latency(
            vec![
                format!("status: {status}"),
                format!("headers: {{ {}: {} }}", header.name(), quoted(value)),
            ],
            lat,
        ),
        Answer::Timeout | Answer::Reset | Answer::Malformed | Answer::Truncated => {
            let word = match step.answer {
                Answer::Timeout => "timeout",
                Answer::Reset => "reset",
                Answer::Malformed => "malformed",
                _ => "truncated",
            };
            if lat.is_zero() {
                word.into()
            } else {
                with_latency(vec![format!("fault: {word}")], lat)
            }
        }
        Answer::Stream {
            data,
            comment,
            breaks,
        } => {
            let mut events = Vec::new();
            if *comment {
                events.push("{ comment: keep-alive }".to_string());
            }
            for i in 0..*data {
                events.push(format!("{{ data: t{} }}", i + 1));
            }
            with_latency(
                vec![
                    "status: 200".into(),
                    format!(
                        "stream: {{ events: [{}], break: {breaks} }}",
                        events.join(", ")
                    ),
                ],
                lat,
            )
        }
    }
}

/// What a printed row holds besides its answers.
#[derive(Debug, Clone)]
pub struct RowText<'a> {
    /// The row's name.
    pub name: String,
    /// Comment lines above the row (without `# `).
    pub comments: Vec<String>,
    /// The steps each route served, in route order (routes never called left out).
    pub served: Vec<(String, Vec<Step>)>,
    /// Jitter draws.
    pub draws: Vec<f64>,
    /// The case.
    pub case: &'a Case,
    /// The runaway guard, when it is not the default.
    pub max_calls: Option<u32>,
    /// Expected trace lines.
    pub trace: Vec<String>,
    /// Expected stop.
    pub stop: Option<String>,
    /// More `expect` keys, one line each (`records: 1`).
    pub extra: Vec<String>,
}

/// The row as YAML, indented as an item of `rows:` (two spaces).
pub fn row_yaml(r: &RowText<'_>, registry: &Registry) -> String {
    let mut s = String::new();
    for c in &r.comments {
        s.push_str("  # ");
        s.push_str(c);
        s.push('\n');
    }
    s.push_str(&format!("  - name: {}\n", quoted(&r.name)));
    let draws: Vec<String> = r.draws.iter().map(|d| d.to_string()).collect();
    s.push_str(&format!("    jitter: [{}]\n", draws.join(", ")));
    if let Some(dl) = r.case.deadline {
        s.push_str(&format!("    deadline: {}\n", dur(dl)));
    }
    let q = r.case.request;
    if q.create || q.key || q.stream {
        s.push_str(&format!(
            "    request: {{ create: {}, idempotency_key: {}, stream: {} }}\n",
            q.create, q.key, q.stream
        ));
    }
    if let Some(m) = r.max_calls {
        s.push_str(&format!("    max_calls: {m}\n"));
    }
    if r.served.is_empty() {
        s.push_str("    inject: {}\n");
    } else {
        s.push_str("    inject:\n");
        for (route, steps) in &r.served {
            let entries: Vec<String> = steps.iter().map(|st| step_yaml(st, registry)).collect();
            s.push_str(&format!(
                "      {}: [{}]\n",
                quoted(route),
                entries.join(", ")
            ));
        }
    }
    s.push_str("    expect:\n");
    if r.trace.is_empty() {
        s.push_str("      trace: []\n");
    } else {
        s.push_str("      trace: |\n");
        for l in &r.trace {
            s.push_str("        ");
            s.push_str(l);
            s.push('\n');
        }
    }
    if let Some(stop) = &r.stop {
        s.push_str(&format!("      stop: {stop}\n"));
    }
    for e in &r.extra {
        s.push_str("      ");
        s.push_str(e);
        s.push('\n');
    }
    s
}
