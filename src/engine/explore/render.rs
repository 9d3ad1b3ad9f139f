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

/// A wall clock as `clock.wall` reads it: RFC 3339 in UTC, with the
/// fraction of a second when there is one.
pub fn wall_text(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let s = d.as_secs() as i64;
    let (y, m, day) = crate::load::policy::retry_after::civil_from_days(s.div_euclid(86_400));
    let tod = s.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}",
        tod / 3600,
        tod / 60 % 60,
        tod % 60
    );
    if d.subsec_nanos() != 0 {
        let frac = format!("{:09}", d.subsec_nanos());
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('Z');
    out
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
    if let Some(wall) = r.case.wall {
        s.push_str(&format!(
            "    clock: {{ wall: {} }}\n",
            quoted(&wall_text(wall))
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn walls_print_as_the_loader_reads_them() {
        for (s, n) in crate::engine::explore::generate::WALLS {
            let t = UNIX_EPOCH + Duration::new(s, n);
            let text = wall_text(t);
            assert_eq!(crate::load::clock::parse_wall(&text), Ok(t), "{text}");
        }
        let t: SystemTime = UNIX_EPOCH + Duration::new(1_695_988_800, 500_000_000);
        assert_eq!(wall_text(t), "2023-09-29T12:00:00.5Z");
    }
}
