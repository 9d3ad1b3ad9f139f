//! Checking `expect.requests` against the recorded calls.

use serde_json::Value;

use crate::base::json_path::{kept, BODY_HEADER};
use crate::exec::scripted::CallRecord;
use crate::exec::trace::call_label;
use crate::model::requests::{BodyExpect, HeaderExpect, RequestAssertion};

/// A pseudo-header of a body observation (exact name: paths are case
/// sensitive).
fn body_header<'a>(c: &'a CallRecord, name: &str) -> Option<&'a str> {
    c.request
        .headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// JSON values equal as values: numbers by value (`1` and `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Whether a kept value (canonical JSON, or a digest) is `want`.
fn kept_is(got: &str, want: &Value) -> bool {
    if got.starts_with("#digest ") {
        return kept(want) == got;
    }
    serde_json::from_str::<Value>(got).is_ok_and(|g| json_eq(&g, want))
}

/// A kept value for a message: short, or its size.
fn shown(got: &str) -> String {
    match got.strip_prefix("#digest ") {
        Some(d) => format!("a value of {} bytes", d.split(' ').nth(1).unwrap_or("?")),
        None if got.chars().count() > 120 => {
            format!("`{}…`", got.chars().take(120).collect::<String>())
        }
        None => format!("`{got}`"),
    }
}

/// The problems of one body path over the covered calls.
fn check_body(
    path: &crate::base::json_path::JsonPath,
    want: &BodyExpect,
    covered: &[(usize, &CallRecord)],
    problems: &mut Vec<String>,
) {
    let name = path.header();
    let mut first: Option<(String, &str)> = None;
    for (_, c) in covered {
        let label = call_label(&c.route, c.attempt);
        let bad = match body_header(c, BODY_HEADER) {
            None => Some(
                "no request body was observed: this system calls the transport directly;                  bodies are read through the HTTP seam and over the wire"
                    .to_string(),
            ),
            Some(kind) if kind != "json" => {
                (*want != BodyExpect::Absent).then(|| format!("the request body is {kind}"))
            }
            Some(_) => match (want, body_header(c, &name)) {
                (BodyExpect::Absent, Some(v)) => {
                    Some(format!("expected absent, observed {}", shown(v)))
                }
                (BodyExpect::Absent, None) => None,
                (_, None) => Some("expected present, observed absent".to_string()),
                (BodyExpect::Present, Some(_)) => None,
                (BodyExpect::Is(w), Some(v)) => (!kept_is(v, w))
                    .then(|| format!("expected `{}`, observed {}", kept(w), shown(v))),
                (BodyExpect::Same, Some(v)) => match &first {
                    None => {
                        first = Some((label.clone(), v));
                        None
                    }
                    Some((fl, fv)) => (fv != &v).then(|| {
                        format!(
                            "expected the same value as {fl} ({}), observed {}",
                            shown(fv),
                            shown(v)
                        )
                    }),
                },
            },
        };
        if let Some(msg) = bad {
            problems.push(format!("request {label}: body `{}`: {msg}", path.text));
        }
    }
}

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
        for (path, want) in &a.body {
            check_body(path, want, &covered, &mut problems);
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
    use crate::base::yaml::Value;
    use crate::contracts::transport::Request;
    use crate::exec::scripted::Outcome;
    use crate::load::requests::parse;
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
                    .map(|(a, b)| (a.to_string().into(), b.to_string()))
                    .collect(),
                ..Request::default()
            },
            entry: "500".into(),
        }
    }

    fn parse_yaml(
        s: &str,
    ) -> Result<Vec<RequestAssertion>, Vec<(Vec<crate::base::yaml::Seg>, String)>> {
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

    fn with_body(route: &str, attempt: u32, body: &str, paths: &[&str]) -> CallRecord {
        let paths: Vec<crate::base::json_path::JsonPath> = paths
            .iter()
            .map(|p| crate::base::json_path::JsonPath::parse(p).unwrap())
            .collect();
        let seen = crate::base::json_path::observe(body.as_bytes(), &paths);
        let pairs: Vec<(&str, &str)> = seen.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        call(route, attempt, &pairs)
    }

    #[test]
    fn checks_body_paths_values_presence_and_same() {
        let a = parse_yaml(
            r#"{ "*": { body: { "$.messages[0].role": user, "$.temperature": $absent, "$.user": $same, "$.n": 1.0, "$.tools": $present } } }"#,
        )
        .unwrap();
        let paths = [
            "$.messages[0].role",
            "$.temperature",
            "$.user",
            "$.n",
            "$.tools",
        ];
        let calls = vec![
            with_body(
                "A",
                1,
                r#"{"messages":[{"role":"user"}],"user":"u1","n":1,"tools":[]}"#,
                &paths,
            ),
            with_body(
                "A",
                2,
                r#"{"messages":[{"role":"system"}],"temperature":0.5,"user":"u2","n":1}"#,
                &paths,
            ),
            with_body("B", 1, "not json", &paths),
        ];
        let p = check(&a, &calls);
        assert_eq!(
            p,
            vec![
                "request A2: body `$.messages[0].role`: expected `\"user\"`, observed `\"system\"`",
                "request B1: body `$.messages[0].role`: the request body is not json",
                "request A2: body `$.temperature`: expected absent, observed `0.5`",
                "request A2: body `$.user`: expected the same value as A1 (`\"u1\"`), observed `\"u2\"`",
                "request B1: body `$.user`: the request body is not json",
                "request B1: body `$.n`: the request body is not json",
                "request A2: body `$.tools`: expected present, observed absent",
                "request B1: body `$.tools`: the request body is not json",
            ]
        );
        // A call record from a system without a body says so.
        let p = check(&a, &[call("A", 1, &[])]);
        assert!(p[0].contains("no request body was observed"), "{p:?}");
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
