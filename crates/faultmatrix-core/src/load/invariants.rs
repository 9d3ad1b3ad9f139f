//! Loading an invariants file (`<matrix>.invariants.yaml`, or any file
//! with a top-level `invariants:` and no `rows:`): which invariants explore
//! checks and what it generates. Every error names the file, line and what
//! was expected; all errors of a file are reported together.
//!
//! ```yaml
//! invariants: all                      # or a list of names and own rules
//! except: [request-id]                 # optional
//! generate: { calls: 5, draws: 4, weights: { timeout: 2 } }
//! ```
//!
//! A team's own rule is a map with `name`, `meaning` and one of
//! `max_calls` (with an optional `route`), `max_elapsed`, `never_after`.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::base::diag::{did_you_mean, Diagnostic, FileErrors, LoadErrorKind};
use crate::base::yaml::{self, Positions, Seg, Value};
use crate::load::raw::Dur;
use crate::model::invariants::{Builtin, Generate, Invariant, InvariantSet, Rule, Weights};

/// Whether text is an invariants file rather than a matrix.
pub fn is_invariants(text: &str) -> bool {
    let top = |k: &str| text.lines().any(|l| l.starts_with(k));
    top("invariants:") && !top("rows:")
}

/// What explore generates (`generate:`).
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawGenerate {
    /// Most answers scripted per route (1 to 64; default 5); the last answers every further call.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 64)))]
    calls: Option<u32>,
    /// Most explicit jitter draws (at most 64; default 4).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(max = 64)))]
    draws: Option<u32>,
    /// How often each kind of answer is drawn, relative to the others.
    #[serde(default)]
    weights: Option<RawWeights>,
    /// The bare statuses drawn (100 to 599, at least one).
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1), inner(range(min = 100, max = 599)))
    )]
    statuses: Option<Vec<u16>>,
    /// Probability that a case sets its own deadline (0 to 1; default 0.3).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
    deadline: Option<f64>,
    /// Probability that the request is a create (0 to 1; default 0.25).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
    create: Option<f64>,
    /// Probability that the request carries an idempotency key (0 to 1; default 0.5).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
    key: Option<f64>,
    /// Probability that the request is streamed (0 to 1; default 0.25).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
    stream: Option<f64>,
    /// Probability that a case starts the virtual wall clock somewhere other than the default (0 to 1; default 0.5).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
    wall: Option<f64>,
    /// The runaway guard of each case: most calls (1 to 10000; default 100).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 10000)))]
    max_calls: Option<u32>,
}

/// Relative weights of the kinds of answer (default ok 3, status 2, code 4, mixed 1, retry-after 3, the rest 1, stream 2); at least one above 0.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawWeights {
    /// `200 {"ok":true}`.
    ok: Option<u32>,
    /// A bare status from `statuses`.
    status: Option<u32>,
    /// A registry code's fixture.
    code: Option<u32>,
    /// A status with another code's error body.
    mixed: Option<u32>,
    /// A 429 or 503 with `Retry-After` or `retry-after-ms` (delay-seconds, HTTP-dates, malformed).
    retry_after: Option<u32>,
    /// An upstream that never answers.
    timeout: Option<u32>,
    /// A connection reset.
    reset: Option<u32>,
    /// An answer that is not HTTP.
    malformed: Option<u32>,
    /// A body cut short.
    truncated: Option<u32>,
    /// A 200 stream that ends or breaks, before or after output.
    stream: Option<u32>,
    /// An answer delayed around the attempt timeout.
    slow: Option<u32>,
}

/// A team's own rule: a name, a meaning and exactly one of `max_calls` (with an optional `route`), `max_elapsed`, `never_after`.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", schemars(extend("oneOf" = [
    { "required": ["max_calls"] },
    { "required": ["max_elapsed"] },
    { "required": ["never_after"] }
])))]
pub struct RawRule {
    /// The rule's name (not a built-in invariant's), shown when it breaks.
    name: String,
    /// One line: what must hold.
    meaning: String,
    /// At most this many calls (on `route`, or in all).
    #[serde(default)]
    max_calls: Option<u32>,
    /// The route `max_calls` counts (every route when absent).
    #[serde(default)]
    route: Option<String>,
    /// The system returns within this much virtual time.
    #[serde(default)]
    max_elapsed: Option<Dur>,
    /// Nothing is called after an answer classified as this registry code.
    #[serde(default)]
    never_after: Option<String>,
}

// The JSON Schema of an invariants file (feature `schema`).
#[cfg(feature = "schema")]
mod schema_types;
#[cfg(feature = "schema")]
pub use schema_types::*;

struct Cx<'a> {
    file: &'a str,
    positions: Positions,
    diags: Vec<Diagnostic>,
}

impl Cx<'_> {
    fn error(&mut self, path: &[Seg], message: impl Into<String>, help: Option<String>) {
        let pos = self.positions.value(path);
        self.diags
            .push(Diagnostic::new(self.file, pos, message).help(help));
    }

    fn yaml_error(&mut self, e: yaml::YamlError) {
        let pos = e.pos.unwrap_or_else(|| self.positions.value(&e.path));
        self.diags.push(Diagnostic::new(self.file, pos, e.message));
    }
}

fn key(k: &str) -> Seg {
    Seg::Key(k.into())
}

const FILE_KEYS: [&str; 3] = ["invariants", "except", "generate"];

fn names() -> impl Iterator<Item = &'static str> {
    Builtin::ALL.into_iter().map(Builtin::name)
}

fn builtin_named(cx: &mut Cx<'_>, name: &str, path: &[Seg]) -> Option<Builtin> {
    let b = Builtin::from_name(name);
    if b.is_none() {
        cx.error(
            path,
            format!("unknown invariant `{name}`: expected a built-in name, `all`, or a map with `name`, `meaning` and a rule"),
            did_you_mean(name, names()),
        );
    }
    b
}

/// Loads an invariants file's text. `file` is the name shown in messages.
pub fn load_invariants(file: &str, text: &str) -> Result<InvariantSet, FileErrors> {
    let mut cx = Cx {
        file,
        positions: Positions::index(text),
        diags: Vec::new(),
    };
    let fail = |cx: Cx<'_>, kind| FileErrors {
        kind,
        file: file.to_string(),
        source: Some(text.to_string()),
        diagnostics: cx.diags,
    };
    let value = match yaml::parse_value(text) {
        Ok(v) => v,
        Err(e) => {
            cx.yaml_error(e);
            return Err(fail(cx, LoadErrorKind::Syntax));
        }
    };
    let Value::Mapping(map) = &value else {
        cx.error(
            &[],
            "an invariants file is a mapping with `invariants` (and optionally `except`, `generate`)",
            None,
        );
        return Err(fail(cx, LoadErrorKind::Invalid));
    };
    for k in map.keys() {
        let k = k.as_str().unwrap_or("?");
        if !FILE_KEYS.contains(&k) {
            cx.error(
                &[key(k)],
                format!("unknown key `{k}` in an invariants file: expected one of: invariants, except, generate"),
                did_you_mean(k, FILE_KEYS),
            );
        }
    }
    let mut set = InvariantSet {
        origin: file.to_string(),
        invariants: Vec::new(),
        generate: Generate::default(),
    };
    match map.get("invariants") {
        None => cx.error(
            &[],
            "missing key `invariants`: `all`, or a list of invariant names and rules",
            None,
        ),
        Some(Value::String(s)) if s == "all" => {
            set.invariants = Builtin::ALL.into_iter().map(Invariant::builtin).collect();
        }
        Some(Value::Sequence(items)) => {
            for (i, item) in items.iter().enumerate() {
                let path = [key("invariants"), Seg::Index(i)];
                match item {
                    Value::String(s) => {
                        if let Some(b) = builtin_named(&mut cx, s, &path) {
                            set.invariants.push(Invariant::builtin(b));
                        }
                    }
                    Value::Mapping(_) => {
                        if let Some(inv) = own_rule(&mut cx, item, &path) {
                            set.invariants.push(inv);
                        }
                    }
                    _ => cx.error(&path, "an invariant is a built-in name or a map with `name`, `meaning` and a rule", None),
                }
            }
        }
        Some(_) => cx.error(
            &[key("invariants")],
            "`invariants` is `all` or a list of invariant names and rules",
            None,
        ),
    }
    if let Some(except) = map.get("except") {
        let path = [key("except")];
        match except {
            Value::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = [key("except"), Seg::Index(i)];
                    let Some(name) = item.as_str() else {
                        cx.error(&p, "`except` lists invariant names", None);
                        continue;
                    };
                    if set.get(name).is_none() {
                        cx.error(
                            &p,
                            format!("`except` names `{name}`, which is not among the invariants"),
                            did_you_mean(name, set.invariants.iter().map(|i| i.name.as_str())),
                        );
                    }
                    set.invariants.retain(|inv| inv.name != name);
                }
            }
            _ => cx.error(&path, "`except` lists invariant names", None),
        }
    }
    let mut seen = BTreeSet::new();
    for inv in &set.invariants {
        if !seen.insert(inv.name.clone()) {
            cx.error(
                &[key("invariants")],
                format!("invariant `{}` is declared twice", inv.name),
                None,
            );
        }
    }
    if let Some(g) = map.get("generate") {
        if let Some(g) = generate(&mut cx, g) {
            set.generate = g;
        }
    }
    if cx.diags.is_empty() {
        Ok(set)
    } else {
        Err(fail(cx, LoadErrorKind::Invalid))
    }
}

fn own_rule(cx: &mut Cx<'_>, v: &Value, path: &[Seg]) -> Option<Invariant> {
    let raw: RawRule = match yaml::from_value(v, path) {
        Ok(r) => r,
        Err(e) => {
            cx.yaml_error(e);
            return None;
        }
    };
    if Builtin::from_name(&raw.name).is_some() {
        cx.error(
            path,
            format!(
                "`{}` is a built-in invariant: list it by name, or give your rule another name",
                raw.name
            ),
            None,
        );
        return None;
    }
    let rules = [
        raw.max_calls.is_some(),
        raw.max_elapsed.is_some(),
        raw.never_after.is_some(),
    ];
    if rules.iter().filter(|r| **r).count() != 1 {
        cx.error(
            path,
            format!(
                "rule `{}` needs exactly one of: max_calls, max_elapsed, never_after",
                raw.name
            ),
            None,
        );
        return None;
    }
    if raw.route.is_some() && raw.max_calls.is_none() {
        cx.error(path, "`route` goes with `max_calls`", None);
        return None;
    }
    let rule = if let Some(calls) = raw.max_calls {
        Rule::MaxCalls {
            route: raw.route,
            calls,
        }
    } else if let Some(d) = raw.max_elapsed {
        Rule::MaxElapsed(d.0)
    } else {
        Rule::NeverAfter(raw.never_after.unwrap_or_default())
    };
    Some(Invariant {
        name: raw.name,
        meaning: raw.meaning,
        rule,
    })
}

fn generate(cx: &mut Cx<'_>, v: &Value) -> Option<Generate> {
    let path = [key("generate")];
    let raw: RawGenerate = match yaml::from_value(v, &path) {
        Ok(r) => r,
        Err(e) => {
            cx.yaml_error(e);
            return None;
        }
    };
    let mut g = Generate::default();
    let before = cx.diags.len();
    if let Some(c) = raw.calls {
        if !(1..=64).contains(&c) {
            cx.error(
                &[key("generate"), key("calls")],
                "`calls` is between 1 and 64",
                None,
            );
        }
        g.calls = c;
    }
    if let Some(d) = raw.draws {
        if d > 64 {
            cx.error(
                &[key("generate"), key("draws")],
                "`draws` is at most 64",
                None,
            );
        }
        g.draws = d;
    }
    if let Some(m) = raw.max_calls {
        if !(1..=10_000).contains(&m) {
            cx.error(
                &[key("generate"), key("max_calls")],
                "`max_calls` is between 1 and 10000",
                None,
            );
        }
        g.max_calls = m;
    }
    if let Some(s) = raw.statuses {
        if s.is_empty() || s.iter().any(|s| !(100..=599).contains(s)) {
            cx.error(
                &[key("generate"), key("statuses")],
                "`statuses` lists HTTP statuses (100 to 599), at least one",
                None,
            );
        }
        g.statuses = s;
    }
    for (name, value, slot) in [
        ("deadline", raw.deadline, &mut g.deadline),
        ("create", raw.create, &mut g.create),
        ("key", raw.key, &mut g.key),
        ("stream", raw.stream, &mut g.stream),
        ("wall", raw.wall, &mut g.wall),
    ] {
        if let Some(p) = value {
            if !(0.0..=1.0).contains(&p) {
                cx.error(
                    &[key("generate"), key(name)],
                    format!("`{name}` is a probability between 0 and 1"),
                    None,
                );
            }
            *slot = p;
        }
    }
    if let Some(w) = raw.weights {
        let d = Weights::default();
        g.weights = Weights {
            ok: w.ok.unwrap_or(d.ok),
            status: w.status.unwrap_or(d.status),
            code: w.code.unwrap_or(d.code),
            mixed: w.mixed.unwrap_or(d.mixed),
            retry_after: w.retry_after.unwrap_or(d.retry_after),
            timeout: w.timeout.unwrap_or(d.timeout),
            reset: w.reset.unwrap_or(d.reset),
            malformed: w.malformed.unwrap_or(d.malformed),
            truncated: w.truncated.unwrap_or(d.truncated),
            stream: w.stream.unwrap_or(d.stream),
            slow: w.slow.unwrap_or(d.slow),
        };
        let w = &g.weights;
        let total = [
            w.ok,
            w.status,
            w.code,
            w.mixed,
            w.retry_after,
            w.timeout,
            w.reset,
            w.malformed,
            w.truncated,
            w.stream,
            w.slow,
        ]
        .iter()
        .map(|x| *x as u64)
        .sum::<u64>();
        if total == 0 {
            cx.error(
                &[key("generate"), key("weights")],
                "`weights` turns every kind of answer off: at least one must be above 0",
                None,
            );
        }
    }
    (cx.diags.len() == before).then_some(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        load_invariants("x.invariants.yaml", text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn all_and_except() {
        let set = load_invariants("x", "invariants: all\nexcept: [request-id]\n").unwrap();
        assert_eq!(set.invariants.len(), Builtin::ALL.len() - 1);
        assert!(set.get("request-id").is_none());
        assert!(set.get("budget").is_some());
    }

    #[test]
    fn own_rules_and_generate() {
        let text = "invariants:\n  - budget\n  - { name: two-on-b, meaning: B at most twice, max_calls: 2, route: B }\n  - { name: quick, meaning: ten seconds, max_elapsed: 10s }\ngenerate: { calls: 3, weights: { timeout: 0 } }\n";
        let set = load_invariants("x", text).unwrap();
        assert_eq!(set.invariants.len(), 3);
        assert_eq!(
            set.invariants[1].rule,
            Rule::MaxCalls {
                route: Some("B".into()),
                calls: 2
            }
        );
        assert_eq!(set.generate.calls, 3);
        assert_eq!(set.generate.weights.timeout, 0);
        assert_eq!(set.generate.weights.ok, Weights::default().ok);
    }

    #[test]
    fn bad_input_names_the_line() {
        let e = err("invariants:\n  - budget\n  - budgte\n");
        assert!(e.contains("unknown invariant `budgte`"), "{e}");
        assert!(e.contains("x.invariants.yaml:3:5"), "{e}");
        assert!(e.contains("did you mean `budget`"), "{e}");
        let e = err("invariants: all\ngenerate: { calls: 0 }\n");
        assert!(e.contains("`calls` is between 1 and 64"), "{e}");
        assert!(e.contains(":2:"), "{e}");
        let e = err("invariants: all\ngenrate: {}\n");
        assert!(e.contains("unknown key `genrate`"), "{e}");
        let e = err("invariants:\n  - { name: x, meaning: y }\n");
        assert!(e.contains("exactly one of"), "{e}");
        let e = err("rows: []\n");
        assert!(e.contains("missing key `invariants`"), "{e}");
        let e = err("invariants: all\ngenerate: { weights: { ok: 0, status: 0, code: 0, mixed: 0, retry-after: 0, timeout: 0, reset: 0, malformed: 0, truncated: 0, stream: 0, slow: 0 } }\n");
        assert!(e.contains("turns every kind of answer off"), "{e}");
    }
}
