//! Checking `expect.requests` against the recorded calls.

use crate::exec::scripted::CallRecord;
use crate::exec::trace::call_label;
use crate::model::requests::{HeaderExpect, RequestAssertion};

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
                    .map(|(a, b)| (a.to_string(), b.to_string()))
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
