//! A row's `expect`: trace lines (with their positions), stop, elapsed,
//! error, escalations, records, amplification, output, snapshot, requests.

use super::ctx::{child, key, Ctx};
use super::raw::RawExpect;
use crate::base::diag::{did_you_mean, Lines};
use crate::base::duration::DurationSpec;
use crate::base::yaml::{Pos, Positions, Seg, Value};
use crate::model::registry::Registry;
use crate::model::{Expect, ExpectedError, ExpectedEscalation, STOP_REASONS};

/// Position of the `i`-th line of an expected trace (a list item, or a line
/// of a block string).
pub fn trace_item_pos(positions: &Positions, source: &str, path: &[Seg], i: usize) -> Pos {
    trace_item_pos_in(positions, &Lines::new(source), path, i)
}

/// [`trace_item_pos`] with the source's lines indexed once.
pub(crate) fn trace_item_pos_in(
    positions: &Positions,
    lines: &Lines<'_>,
    path: &[Seg],
    i: usize,
) -> Pos {
    let item = child(path, Seg::Index(i));
    let item_pos = positions.value(&item);
    let node_pos = positions.value(path);
    if item_pos != node_pos {
        return item_pos;
    }
    // A block scalar's position is its first content line; an inline
    // string's is its own line.
    let mut n = node_pos.line.max(1);
    let mut seen = 0;
    while let Some(l) = lines.get(n) {
        n += 1;
        if l.trim().is_empty() {
            continue;
        }
        if seen == i {
            let col = l.len() - l.trim_start().len() + 1;
            return Pos { line: n - 1, col };
        }
        seen += 1;
    }
    Pos {
        line: node_pos.line + 1 + i,
        col: node_pos.col,
    }
}

pub(crate) fn validate_expect(
    cx: &mut Ctx<'_>,
    raw: &RawExpect,
    path: Vec<Seg>,
    routes: &[String],
    registry: &Registry,
    check_stops: bool,
) -> Expect {
    let trace_path = child(&path, key("trace"));
    let mut expect = Expect {
        trace_path: trace_path.clone(),
        ..Expect::default()
    };
    let mut asserted = false;
    if let Some(t) = &raw.trace {
        asserted = true;
        // Borrowed from the node: each line is parsed into its own fields.
        let texts: Vec<&str> = match t {
            Value::String(s) => crate::base::text::lines(s)
                .filter(|l| !crate::base::text::trim(l).is_empty())
                .collect(),
            Value::Sequence(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| match v {
                    Value::String(s) => Some(s.as_str()),
                    _ => {
                        cx.error(&child(&trace_path, Seg::Index(i)), "a trace line is a string such as `A1 503 UPSTREAM_UNAVAILABLE retry wait=1s`");
                        None
                    }
                })
                .collect(),
            _ => {
                cx.error(&trace_path, "`trace` is a block of lines (`trace: |`) or a list of strings");
                Vec::new()
            }
        };
        let mut lines = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            match super::trace_line::parse_line(text, routes) {
                Ok(l) => {
                    if let Some(code) = l.code() {
                        if registry.get(code).is_none() && !is_http_code(code) {
                            let pos = {
                                let (p, l) = cx.indexed();
                                trace_item_pos_in(p, l, &trace_path, i)
                            };
                            let pos = crate::base::diag::token_pos_in(
                                cx.line(pos.line),
                                pos,
                                &format!("`{code}`"),
                            );
                            cx.error_at(
                                pos,
                                format!(
                                    "unknown reason code `{code}` in trace line `{}`",
                                    text.trim()
                                ),
                                Some(format!(
                                    "codes come from the registry ({})",
                                    registry.origin
                                )),
                                did_you_mean(code, registry.names()),
                            );
                        }
                    }
                    lines.push(l)
                }
                Err(msg) => {
                    let pos = {
                        let (p, l) = cx.indexed();
                        trace_item_pos_in(p, l, &trace_path, i)
                    };
                    let (msg, help) = crate::base::diag::split_hint(&msg);
                    let line = cx.line(pos.line);
                    // A tab is shown where it is, not at the word before it.
                    let control = line
                        .filter(|_| text.contains(|c: char| c.is_control()))
                        .and_then(|l| {
                            let from = l.char_indices().nth(pos.col.saturating_sub(1))?.0;
                            let at = l[from..].find(|c: char| c.is_control())?;
                            Some(l[..from + at].chars().count() + 1)
                        });
                    let pos = match control {
                        Some(col) => Pos {
                            line: pos.line,
                            col,
                        },
                        None => crate::base::diag::token_pos_in(line, pos, &msg),
                    };
                    cx.error_at(pos, format!("bad trace line: {msg}"), None, help);
                }
            }
        }
        if lines.is_empty() && !texts.is_empty() {
            // errors reported above
        } else if texts.is_empty() {
            cx.error(&trace_path, "`trace` is empty: a row that expects no call says so with `stop` and an empty `inject`");
        }
        expect.trace = Some(lines);
    }
    if let Some(stop) = &raw.stop {
        asserted = true;
        if check_stops && !STOP_REASONS.contains(&stop.as_str()) {
            let pos = cx.pos(&child(&path, key("stop")));
            cx.error_at(
                pos,
                format!("unknown stop reason `{stop}`"),
                Some(format!("expected one of: {}", STOP_REASONS.join(", "))),
                did_you_mean(stop, STOP_REASONS),
            );
        }
        expect.stop = Some(stop.clone());
    }
    if let Some(e) = &raw.elapsed {
        asserted = true;
        match DurationSpec::parse(e) {
            Ok(s) => expect.elapsed = Some(s),
            Err(m) => cx.error(&child(&path, key("elapsed")), format!("elapsed: {m}")),
        }
    }
    if let Some(e) = &raw.error {
        asserted = true;
        if e.request_id.is_none() && e.code.is_none() && e.attempts.is_none() && e.max_len.is_none()
        {
            // `error: {}` or `error: { attempts: null }` would pass whatever
            // the final error is.
            cx.error(
                &child(&path, key("error")),
                "`error` asserts nothing: give at least one of `code`, `attempts`, `request_id` or `max_len`",
            );
        }
        if let Some(code) = &e.code {
            check_code(
                cx,
                code,
                &child(&child(&path, key("error")), key("code")),
                registry,
            );
        }
        expect.error = Some(ExpectedError {
            request_id: e.request_id.clone(),
            code: e.code.clone(),
            attempts: e.attempts.clone(),
            max_len: e.max_len,
        });
    }
    if let Some(list) = &raw.escalations {
        asserted = true;
        let mut out = Vec::new();
        for (i, esc) in list.iter().enumerate() {
            let p = child(
                &child(&child(&path, key("escalations")), Seg::Index(i)),
                key("code"),
            );
            check_code(cx, &esc.code, &p, registry);
            out.push(ExpectedEscalation {
                code: esc.code.clone(),
                to: esc.to.clone(),
            });
        }
        expect.escalations = Some(out);
    }
    if let Some(r) = raw.records {
        asserted = true;
        expect.records = Some(r);
    }
    if let Some(a) = raw.amplification {
        asserted = true;
        if !(a.is_finite() && a >= 0.0) {
            cx.error(
                &child(&path, key("amplification")),
                "`amplification` is a ratio such as 3 or 1.5",
            );
        }
        expect.amplification = Some(a);
    }
    if let Some(o) = &raw.output {
        asserted = true;
        expect.output = Some(o.clone());
    }
    if raw.snapshot == Some(true) {
        asserted = true;
        expect.snapshot = true;
        if raw.trace.is_some() {
            let pos = cx.key_pos(&child(&path, key("snapshot")));
            cx.error_at(
                pos,
                "give either `trace` or `snapshot: true`, not both",
                Some("a snapshot row keeps its trace in the snapshot file".into()),
                None,
            );
        }
    }
    if let Some(r) = &raw.requests {
        asserted = true;
        match super::requests::parse(r, &child(&path, key("requests"))) {
            Ok(a) => expect.requests = a,
            Err(errors) => {
                for (p, m) in errors {
                    cx.error(&p, m);
                }
            }
        }
    }
    if !asserted && cx.pending_ok {
        expect.pending = true;
    } else if !asserted {
        cx.error(
            &path,
            "the row asserts nothing: give `trace`, `stop` or another expectation (or write what it does with `faultmatrix run --bless`)",
        );
    }
    expect
}

pub(crate) fn is_http_code(code: &str) -> bool {
    code.strip_prefix("HTTP_")
        .is_some_and(|n| n.len() == 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

pub(crate) fn check_code(cx: &mut Ctx<'_>, code: &str, path: &[Seg], registry: &Registry) {
    if registry.get(code).is_none() && !is_http_code(code) {
        let pos = cx.pos(path);
        cx.error_at(
            pos,
            format!("unknown reason code `{code}`"),
            Some(format!(
                "codes come from the registry ({})",
                registry.origin
            )),
            did_you_mean(code, registry.names()),
        );
    }
}
