//! Request assertions: what a row says about the requests themselves, per
//! call, without capturing credentials or bodies.
//!
//! ```yaml
//! expect:
//!   requests:
//!     "*":  { headers: { idempotency-key: $same, x-stainless-retry-count: $retries }, model: gpt-4o-mini, stream: false }
//!     A1:   { method: POST, path: /v1/chat/completions }
//! ```
//!
//! Keys are call labels (`A1`, `B2`) or `"*"` for every call. A header's
//! expected value is a literal, or one of `$present`, `$absent`, `$same`
//! (present, and identical on every call the assertion covers) and
//! `$retries` (the number of calls made before this one). Credential
//! headers (`authorization`, `cookie`, `*api-key*`, `*token*`...) are never
//! recorded, so asserting on them is refused when the file loads.
//!
//! The checks run on call records, so they hold in-process too (there the
//! reference system sends `x-retry-count` and `idempotency-key`).

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use crate::base::yaml::{Seg, Value};
use crate::exec::scripted::CallRecord;
use crate::exec::trace::call_label;
use crate::exec::wire::server::is_secret_header;

/// The JSON Schema of `expect.requests` (for editors).
pub struct RequestsSchema;

impl JsonSchema for RequestsSchema {
    fn schema_name() -> Cow<'static, str> {
        "Requests".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Assertions on the requests, by call label (`A1`) or `\"*\"` for every call; see docs/over-the-wire.md.",
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "headers": {
                        "description": "Header name to a value, or `$present`, `$absent`, `$same` (identical on every covered call), `$retries` (calls made before this one). Credential headers cannot be asserted.",
                        "type": "object",
                        "additionalProperties": { "type": ["string", "number", "boolean"] }
                    },
                    "model": { "description": "The `model` of the JSON body.", "type": "string" },
                    "stream": { "description": "The `stream` flag of the JSON body.", "type": "boolean" },
                    "method": { "description": "The request method.", "type": "string" },
                    "path": { "description": "The request target.", "type": "string" }
                }
            }
        })
    }
}

/// What a header must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderExpect {
    /// Exactly this value.
    Is(String),
    /// Present, any value.
    Present,
    /// Not sent.
    Absent,
    /// Present and identical on every covered call.
    Same,
    /// Equal to the number of calls made before this one.
    Retries,
}

/// Assertions on one call (or all calls).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestAssertion {
    /// `A1`, or `*` for every call.
    pub call: String,
    /// Header expectations, lower-case names.
    pub headers: Vec<(String, HeaderExpect)>,
    /// Expected model.
    pub model: Option<String>,
    /// Expected stream flag.
    pub stream: Option<bool>,
    /// Expected method.
    pub method: Option<String>,
    /// Expected path.
    pub path: Option<String>,
}

/// Parses `expect.requests`. Errors carry the path of the offending node.
pub fn parse(
    value: &Value,
    path: &[Seg],
) -> Result<Vec<RequestAssertion>, Vec<(Vec<Seg>, String)>> {
    let at = |extra: &[Seg]| {
        let mut p = path.to_vec();
        p.extend_from_slice(extra);
        p
    };
    let Value::Mapping(map) = value else {
        return Err(vec![(
            path.to_vec(),
            "`requests` maps a call (`A1`, or `\"*\"` for every call) to what its request must carry".into(),
        )]);
    };
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (k, v) in map {
        let Some(call) = k.as_str() else {
            errors.push((
                path.to_vec(),
                "`requests` keys are call labels such as `A1`, or `\"*\"`".into(),
            ));
            continue;
        };
        let kp = at(&[Seg::Key(call.into())]);
        let valid_label = call == "*"
            || (call.len() > 1
                && call.ends_with(|c: char| c.is_ascii_digit())
                && !call.starts_with(|c: char| c.is_ascii_digit()));
        if !valid_label {
            errors.push((kp.clone(), format!("`{call}` is not a call label: write the route and attempt, as in `A1`, or `\"*\"` for every call")));
            continue;
        }
        let Value::Mapping(fields) = v else {
            errors.push((
                kp,
                "expected a map with `headers`, `model`, `stream`, `method` or `path`".into(),
            ));
            continue;
        };
        let mut a = RequestAssertion {
            call: call.to_string(),
            headers: Vec::new(),
            model: None,
            stream: None,
            method: None,
            path: None,
        };
        for (fk, fv) in fields {
            let name = fk.as_str().unwrap_or("");
            let fp = {
                let mut p = kp.clone();
                p.push(Seg::Key(name.into()));
                p
            };
            match (name, fv) {
                ("headers", Value::Mapping(h)) => {
                    for (hk, hv) in h {
                        let Some(hn) = hk.as_str() else { continue };
                        let hp = {
                            let mut p = fp.clone();
                            p.push(Seg::Key(hn.into()));
                            p
                        };
                        if is_secret_header(hn) {
                            errors.push((hp, format!("`{hn}` is a credential header: faultmatrix never records credentials, so it cannot be asserted")));
                            continue;
                        }
                        let e = match hv {
                            Value::String(s) => match s.as_str() {
                                "$present" => HeaderExpect::Present,
                                "$absent" => HeaderExpect::Absent,
                                "$same" => HeaderExpect::Same,
                                "$retries" => HeaderExpect::Retries,
                                other if other.starts_with('$') => {
                                    let hint = crate::base::diag::did_you_mean(
                                        other,
                                        ["$present", "$absent", "$same", "$retries"],
                                    )
                                    .map(|h| format!(" ({h})"))
                                    .unwrap_or_default();
                                    errors.push((hp, format!("unknown header check `{other}`: expected a value, or one of $present, $absent, $same, $retries{hint}")));
                                    continue;
                                }
                                other => HeaderExpect::Is(other.to_string()),
                            },
                            Value::Number(n) => HeaderExpect::Is(n.to_string()),
                            Value::Bool(b) => HeaderExpect::Is(b.to_string()),
                            _ => {
                                errors.push((hp, "a header check is a value or one of $present, $absent, $same, $retries".into()));
                                continue;
                            }
                        };
                        a.headers.push((hn.to_ascii_lowercase(), e));
                    }
                }
                ("model", Value::String(s)) => a.model = Some(s.clone()),
                ("stream", Value::Bool(b)) => a.stream = Some(*b),
                ("method", Value::String(s)) => a.method = Some(s.clone()),
                ("path", Value::String(s)) => a.path = Some(s.clone()),
                ("headers" | "model" | "stream" | "method" | "path", _) => {
                    errors.push((fp, format!("`{name}` has the wrong type: headers is a map, stream is true/false, the others are text")));
                }
                (other, _) => {
                    let hint = crate::base::diag::did_you_mean(
                        other,
                        ["headers", "model", "stream", "method", "path"],
                    )
                    .map(|h| format!(" ({h})"))
                    .unwrap_or_default();
                    errors.push((fp, format!("unknown key `{other}` in a request assertion: expected headers, model, stream, method or path{hint}")));
                }
            }
        }
        out.push(a);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A header of a recorded call (in-process calls carry the idempotency key
/// as a field; over the wire `:method` and `:path` are pseudo-headers).
fn header<'a>(c: &'a CallRecord, name: &str) -> Option<&'a str> {
    c.request
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .or_else(|| {
            (name == "idempotency-key")
                .then_some(c.request.idempotency_key.as_deref())
                .flatten()
        })
}

/// Checks the assertions against the calls; one problem per mismatch.
pub fn check(assertions: &[RequestAssertion], calls: &[CallRecord]) -> Vec<String> {
    let mut problems = Vec::new();
    for a in assertions {
        let covered: Vec<(usize, &CallRecord)> = calls
            .iter()
            .enumerate()
            .filter(|(_, c)| a.call == "*" || call_label(&c.route, c.attempt) == a.call)
            .collect();
        if covered.is_empty() && a.call != "*" {
            problems.push(format!(
                "requests.{}: no such call was made ({} call{} observed)",
                a.call,
                calls.len(),
                if calls.len() == 1 { "" } else { "s" }
            ));
            continue;
        }
        for (name, want) in &a.headers {
            let mut first: Option<(String, &str)> = None;
            for (i, c) in &covered {
                let label = call_label(&c.route, c.attempt);
                let got = header(c, name);
                let bad = match (want, got) {
                    (HeaderExpect::Absent, Some(v)) => {
                        Some(format!("expected absent, observed `{v}`"))
                    }
                    (HeaderExpect::Absent, None) => None,
                    (_, None) => Some("expected present, observed absent".to_string()),
                    (HeaderExpect::Present, Some(_)) => None,
                    (HeaderExpect::Is(w), Some(v)) => {
                        (w != v).then(|| format!("expected `{w}`, observed `{v}`"))
                    }
                    (HeaderExpect::Retries, Some(v)) => (v != i.to_string())
                        .then(|| format!("expected `{i}` (calls before this one), observed `{v}`")),
                    (HeaderExpect::Same, Some(v)) => match &first {
                        None => {
                            first = Some((label.clone(), v));
                            None
                        }
                        Some((fl, fv)) => (fv != &v).then(|| {
                            format!("expected the same value as {fl} (`{fv}`), observed `{v}`")
                        }),
                    },
                };
                if let Some(msg) = bad {
                    problems.push(format!("request {label}: header `{name}`: {msg}"));
                }
            }
        }
        for (_, c) in &covered {
            let label = call_label(&c.route, c.attempt);
            if let Some(m) = &a.model {
                if c.request.model.as_deref() != Some(m.as_str()) {
                    problems.push(format!(
                        "request {label}: model: expected `{m}`, observed `{}`",
                        c.request.model.as_deref().unwrap_or("-")
                    ));
                }
            }
            if let Some(s) = a.stream {
                if c.request.stream != s {
                    problems.push(format!(
                        "request {label}: stream: expected {s}, observed {}",
                        c.request.stream
                    ));
                }
            }
            for (field, want) in [(":method", &a.method), (":path", &a.path)] {
                if let Some(w) = want {
                    let got = header(c, field);
                    if got != Some(w.as_str()) {
                        problems.push(format!(
                            "request {label}: {}: expected `{w}`, observed `{}`",
                            &field[1..],
                            got.unwrap_or("-")
                        ));
                    }
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::transport::Request;
    use crate::exec::scripted::Outcome;
    use std::time::Duration;

    fn call(route: &str, attempt: u32, headers: &[(&str, &str)]) -> CallRecord {
        CallRecord {
            route: route.into(),
            attempt,
            started: Duration::ZERO,
            ended: None,
            outcome: Outcome::Status(500),
            body: None,
            request: Request {
                route: route.into(),
                model: Some("m".into()),
                headers: headers
                    .iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect(),
                ..Request::default()
            },
            entry: "500".into(),
        }
    }

    fn parse_yaml(s: &str) -> Result<Vec<RequestAssertion>, Vec<(Vec<Seg>, String)>> {
        let v: Value = serde_yaml::from_str(s).unwrap();
        parse(&v, &[])
    }

    #[test]
    fn checks_same_and_retries() {
        let a = parse_yaml(r#"{ "*": { headers: { idempotency-key: $same, x-retry: $retries }, model: m }, A2: { stream: true } }"#).unwrap();
        let calls = vec![
            call("A", 1, &[("idempotency-key", "k1"), ("x-retry", "0")]),
            call("A", 2, &[("idempotency-key", "k2"), ("x-retry", "2")]),
        ];
        let p = check(&a, &calls);
        assert_eq!(
            p,
            vec![
                "request A2: header `idempotency-key`: expected the same value as A1 (`k1`), observed `k2`",
                "request A2: header `x-retry`: expected `1` (calls before this one), observed `2`",
                "request A2: stream: expected true, observed false",
            ]
        );
    }

    #[test]
    fn refuses_credentials_and_unknown_checks() {
        let e = parse_yaml("{ A1: { headers: { Authorization: $present } } }").unwrap_err();
        assert!(e[0].1.contains("credential"), "{e:?}");
        let e = parse_yaml("{ A1: { headers: { x: $presnt } } }").unwrap_err();
        assert!(e[0].1.contains("did you mean `$present`"), "{e:?}");
        let e = parse_yaml("{ A1: { modle: x } }").unwrap_err();
        assert!(e[0].1.contains("did you mean `model`"), "{e:?}");
        let e = parse_yaml("{ 1A: { model: x } }").unwrap_err();
        assert!(e[0].1.contains("not a call label"), "{e:?}");
    }

    #[test]
    fn missing_call_is_named() {
        let a = parse_yaml("{ B1: { model: m } }").unwrap();
        let p = check(&a, &[call("A", 1, &[])]);
        assert_eq!(
            p,
            vec!["requests.B1: no such call was made (1 call observed)"]
        );
    }
}
