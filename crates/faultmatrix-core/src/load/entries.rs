//! Script entries: statuses, words (`timeout`, `reset`, ...), reason codes
//! and mapped entries (status, headers, body, latency, stream), for rows and
//! registry fixtures alike.

use std::time::Duration;

use super::ctx::{child, dyn_key, key, Ctx};
use super::raw::RawEntry;
use crate::base::diag::did_you_mean;
use crate::base::yaml::{self, Seg, Value};
use crate::model::registry::Registry;
use crate::model::{Answer, Entry, Repeat, ScriptedResponse, SseItem, StreamSpec};

/// The largest `repeat` count (1,000,000): with [`MAX_ENTRIES`] the
/// answers of a route stay countable in a `u32`.
pub const MAX_REPEAT: u32 = 1_000_000;

/// The most entries a route's script may list (1,000).
pub const MAX_ENTRIES: usize = 1_000;

pub(crate) const ENTRY_WORDS: [&str; 6] = [
    "timeout",
    "reset",
    "refused",
    "malformed",
    "truncated",
    "ok",
];

pub(crate) fn script_entries(
    cx: &mut Ctx<'_>,
    v: &Value,
    path: &[Seg],
    registry: &Registry,
) -> Vec<Entry> {
    match v {
        Value::Sequence(items) => {
            if items.len() > MAX_ENTRIES {
                cx.error(
                    path,
                    format!("this script has {} entries: the limit is {MAX_ENTRIES} per route (use `repeat` for runs of the same answer)", items.len()),
                );
                return Vec::new();
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                // The common entry, a status written as a number, cannot
                // fail: its path (an allocation) is built only for the others.
                let plain = match item {
                    Value::Number(n) => n.as_u64().filter(|n| (100..=599).contains(n)),
                    _ => None,
                };
                if let Some(n) = plain {
                    out.push(status_entry(n as u16));
                    continue;
                }
                let p = child(path, Seg::Index(i));
                if let Some(e) = entry(cx, item, &p, registry) {
                    if i + 1 < items.len() && e.repeat == Repeat::Forever {
                        cx.error(
                            &p,
                            "an entry that repeats forever must be the last of its route",
                        );
                    }
                    out.push(e);
                }
            }
            if items.is_empty() {
                cx.error(
                    path,
                    "empty script: give at least one answer, or leave the route out",
                );
            }
            out
        }
        // A bare code: the fixture's own attempt-indexed behaviour.
        Value::String(s) if registry.get(s).is_some() => {
            let def = registry.get(s).expect("checked");
            match &def.fixture {
                Some(f) => {
                    let mut failing = f.entry.clone();
                    match f.recovers_after {
                        Some(n) => {
                            failing.repeat = Repeat::Times(n.max(1));
                            vec![failing, Entry::ok()]
                        }
                        None => vec![failing],
                    }
                }
                None => {
                    cx.error(path, format!("code `{s}` has no fixture in the registry"));
                    Vec::new()
                }
            }
        }
        other => entry(cx, other, path, registry).into_iter().collect(),
    }
}

pub(crate) fn status_entry(status: u16) -> Entry {
    Entry {
        answer: Answer::Response(ScriptedResponse {
            status,
            ..ScriptedResponse::default()
        }),
        latency: Duration::ZERO,
        repeat: Repeat::Times(1),
        committed: false,
        label: crate::base::label::status_label(status),
    }
}

pub(crate) fn fault_entry(word: &str) -> Option<Entry> {
    let answer = match word {
        "timeout" => Answer::Timeout,
        "reset" => Answer::Reset,
        "refused" => Answer::Refused,
        "malformed" => Answer::Malformed,
        "truncated" => Answer::Truncated,
        "ok" => return Some(Entry::ok()),
        _ => return None,
    };
    Some(Entry {
        answer,
        latency: Duration::ZERO,
        repeat: Repeat::Times(1),
        committed: false,
        label: word.to_string(),
    })
}

/// A status written as a YAML number: a whole number from 100 to 599, or
/// an error quoting what was written (`2.5`, `-1`, `4294967295`).
fn check_status_number(cx: &mut Ctx<'_>, path: &[Seg], n: &serde_yaml::Number) -> Option<u16> {
    match n.as_i64() {
        Some(i) => check_status(cx, path, i),
        None => {
            cx.error(
                path,
                format!(
                    "status {n} is not an HTTP status: expected a whole number from 100 to 599"
                ),
            );
            None
        }
    }
}

pub(crate) fn check_status(cx: &mut Ctx<'_>, path: &[Seg], n: i64) -> Option<u16> {
    if (100..=599).contains(&n) {
        Some(n as u16)
    } else {
        cx.error(
            path,
            format!("status {n} is not an HTTP status: expected 100 to 599"),
        );
        None
    }
}

pub(crate) fn entry(
    cx: &mut Ctx<'_>,
    v: &Value,
    path: &[Seg],
    registry: &Registry,
) -> Option<Entry> {
    match v {
        Value::Number(n) => check_status_number(cx, path, n).map(status_entry),
        Value::String(s) => {
            if let Some(e) = fault_entry(s) {
                return Some(e);
            }
            if let Ok(n) = s.parse::<i64>() {
                return check_status(cx, path, n).map(status_entry);
            }
            if let Some(def) = registry.get(s) {
                return match &def.fixture {
                    Some(f) => {
                        let mut e = f.entry.clone();
                        e.label = s.clone();
                        Some(e)
                    }
                    None => {
                        cx.error(path, format!("code `{s}` has no fixture in the registry"));
                        None
                    }
                };
            }
            let pos = cx.pos(path);
            let candidates = ENTRY_WORDS.iter().copied().chain(registry.names());
            cx.error_at(
                pos,
                format!("unknown script entry `{s}`"),
                Some("expected a status such as 503, timeout, reset, malformed, ok, or a reason code".into()),
                did_you_mean(s, candidates),
            );
            None
        }
        Value::Mapping(_) => {
            // A status that is not one is said as such, not as a missing
            // `status`, `fault` or `code`.
            let at = child(path, key("status"));
            match v.get("status") {
                Some(Value::Number(n)) if check_status_number(cx, &at, n).is_none() => return None,
                Some(
                    other @ (Value::String(_)
                    | Value::Bool(_)
                    | Value::Sequence(_)
                    | Value::Mapping(_)),
                ) => {
                    let shown = match other {
                        Value::String(s) => format!("`{}`", crate::base::label::escape(s)),
                        Value::Bool(b) => format!("`{b}`"),
                        _ => "a list or mapping".to_string(),
                    };
                    cx.error(
                        &at,
                        format!("status {shown} is not an HTTP status: expected a whole number from 100 to 599"),
                    );
                    return None;
                }
                _ => {}
            }
            let raw: RawEntry = {
                let (raw, errors) = super::recover::from_value_all(v, path);
                for e in errors {
                    cx.yaml_error(e);
                }
                raw?
            };
            if raw.recovers_after.is_some() {
                cx.error(&child(path, key("recovers_after")), "`recovers_after` belongs in a registry fixture, not a script entry: repeat the failing entry instead");
            }
            let mut e = entry_from_raw(cx, &raw, path, registry, false)?;
            e.repeat = match &raw.repeat {
                None => Repeat::Times(1),
                Some(Value::String(s)) if s == "forever" => Repeat::Forever,
                Some(Value::Number(n))
                    if n.as_u64().is_some_and(|n| n >= 1 && n <= MAX_REPEAT as u64) =>
                {
                    Repeat::Times(n.as_u64().expect("checked") as u32)
                }
                Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > MAX_REPEAT as u64) => {
                    cx.error(
                        &child(path, key("repeat")),
                        format!("`repeat: {n}` is above the limit of {MAX_REPEAT}: write `forever` for an answer that never runs out"),
                    );
                    Repeat::Times(1)
                }
                Some(_) => {
                    cx.error(
                        &child(path, key("repeat")),
                        "`repeat` is a count of at least 1, or `forever`",
                    );
                    Repeat::Times(1)
                }
            };
            if let Repeat::Times(n) = e.repeat {
                if n > 1 {
                    e.label = format!("{} x{n}", e.label);
                }
            } else {
                e.label = format!("{} forever", e.label);
            }
            Some(e)
        }
        _ => {
            cx.error(path, "a script entry is a status (503), a word (timeout, reset, malformed, ok), a reason code, or a map with `status`");
            None
        }
    }
}

/// Converts a mapped entry (script entry or registry fixture).
pub(crate) fn entry_from_raw(
    cx: &mut Ctx<'_>,
    raw: &RawEntry,
    path: &[Seg],
    registry: &Registry,
    fixture: bool,
) -> Option<Entry> {
    let kinds = [
        raw.status.is_some(),
        raw.fault.is_some(),
        raw.code.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if kinds != 1 {
        let msg = if fixture {
            "a fixture gives exactly one of `status` or `fault`"
        } else {
            "an entry gives exactly one of `status`, `fault` or `code`"
        };
        cx.error(path, msg);
        return None;
    }
    if fixture && raw.code.is_some() {
        cx.error(
            &child(path, key("code")),
            "a fixture cannot refer to another code",
        );
        return None;
    }
    let latency = raw.latency.map_or(Duration::ZERO, |d| d.0);
    if let Some(why) = crate::base::duration::sub_millisecond(latency) {
        cx.error(&child(path, key("latency")), format!("`latency`: {why}"));
    }
    let committed = raw.committed.unwrap_or(false);
    if let Some(code) = &raw.code {
        let Some(def) = registry.get(code) else {
            let pos = cx.pos(&child(path, key("code")));
            cx.error_at(
                pos,
                format!("unknown reason code `{code}`"),
                None,
                did_you_mean(code, registry.names()),
            );
            return None;
        };
        let Some(f) = &def.fixture else {
            cx.error(
                &child(path, key("code")),
                format!("code `{code}` has no fixture in the registry"),
            );
            return None;
        };
        let mut e = f.entry.clone();
        e.latency = latency;
        e.committed = committed;
        e.label = code.clone();
        return Some(e);
    }
    if let Some(f) = &raw.fault {
        if raw.headers.is_some() || raw.body.is_some() || raw.stream.is_some() {
            cx.error(
                path,
                format!("a `{f}` fault has no response: drop `headers`, `body` and `stream`"),
            );
        }
        let Some(mut e) = fault_entry(f).filter(|_| super::raw::FAULTS.contains(&f.as_str()))
        else {
            let pos = cx.pos(&child(path, key("fault")));
            cx.error_at(
                pos,
                format!("unknown fault `{f}`"),
                Some(format!(
                    "expected one of: {}",
                    super::raw::FAULTS.join(", ")
                )),
                did_you_mean(f, super::raw::FAULTS.iter().copied()),
            );
            return None;
        };
        e.latency = latency;
        e.committed = committed;
        return Some(e);
    }
    let status = check_status(
        cx,
        &child(path, key("status")),
        raw.status.expect("checked") as i64,
    )?;
    let mut headers = Vec::new();
    let mut dates = Vec::new();
    if let Some(h) = &raw.headers {
        for (k, v) in h {
            let name = k.as_str().map(str::to_string);
            let value = match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                // `{ http-date: now+20s }`: rendered when the answer is sent.
                Value::Mapping(_) if name.is_some() => {
                    let at = child(
                        &child(path, key("headers")),
                        dyn_key(name.as_deref().unwrap_or("")),
                    );
                    dates.extend(super::header_date::parse(cx, v, &at, headers.len()));
                    Some(String::new())
                }
                _ => None,
            };
            match (name, value) {
                (Some(n), Some(v)) => headers.push((n, v)),
                _ => cx.error(
                    &child(path, key("headers")),
                    "headers are `Name: value` pairs of words, numbers or strings",
                ),
            }
        }
    }
    let body = match &raw.body {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => match yaml::to_json(other) {
            Ok(j) => Some(j.to_string()),
            Err(e) => {
                cx.error(
                    &child(path, key("body")),
                    format!("body cannot be written as JSON: {e}"),
                );
                None
            }
        },
    };
    let stream = raw.stream.as_ref().map(|s| {
        let mut items = Vec::new();
        let mut pauses = Vec::new();
        let mut pause = Duration::ZERO;
        for (i, it) in s.events.iter().enumerate() {
            let ip = child(&child(&child(path, key("stream")), key("events")), Seg::Index(i));
            if let Some(d) = it.delay {
                pause = pause.saturating_add(d.0);
            }
            let before = items.len();
            match (&it.comment, &it.data) {
                (None, None) if it.delay.is_some() && it.event.is_none() && it.id.is_none() => {}
                (Some(c), None) if it.event.is_none() && it.id.is_none() => items.push(SseItem::Comment(c.clone())),
                (None, Some(d)) => {
                    let data = match d {
                        Value::String(s) => s.clone(),
                        other => yaml::to_json(other).map(|j| j.to_string()).unwrap_or_default(),
                    };
                    items.push(SseItem::Event {
                        event: it.event.clone(),
                        data,
                        id: it.id.clone(),
                    })
                }
                _ => cx.error(&ip, "a stream item is either `comment: text` or `data: ...` (with optional `event` and `id`), each with an optional `delay`, or a `delay` alone (a pause with nothing sent)"),
            }
            if items.len() > before {
                if !pause.is_zero() {
                    pauses.resize(before + 1, Duration::ZERO);
                    pauses[before] = pause;
                }
                pause = Duration::ZERO;
            }
        }
        if !pause.is_zero() {
            pauses.resize(items.len() + 1, Duration::ZERO);
            pauses[items.len()] = pause;
        }
        StreamSpec {
            items,
            breaks: s.breaks,
            pauses,
        }
    });
    let label = if stream.as_ref().is_some_and(|s| s.breaks) {
        format!("{status} stream break")
    } else if stream.is_some() {
        format!("{status} stream")
    } else {
        status.to_string()
    };
    Some(Entry {
        answer: Answer::Response(ScriptedResponse {
            status,
            headers,
            body,
            stream,
            dates,
        }),
        latency,
        repeat: Repeat::Times(1),
        committed,
        label,
    })
}
