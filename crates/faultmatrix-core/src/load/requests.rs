//! Reading `expect.requests` into [`RequestAssertion`]s.

use crate::base::json_path::JsonPath;
use crate::base::yaml::{Seg, Value};
pub use crate::model::requests::{BodyExpect, HeaderExpect, RequestAssertion};

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
                "expected a map with `headers`, `body`, `model`, `stream`, `method` or `path`"
                    .into(),
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
            body: Vec::new(),
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
                        if crate::base::redact::is_credential_header(hn) {
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
                                    let hint = crate::base::diag::hint_suffix(
                                        other,
                                        ["$present", "$absent", "$same", "$retries"],
                                    );
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
                ("body", Value::Mapping(b)) => {
                    for (bk, bv) in b {
                        let Some(text) = bk.as_str() else {
                            errors.push((
                                fp.clone(),
                                "`body` keys are JSON paths such as `$.messages[0].role`".into(),
                            ));
                            continue;
                        };
                        let bp = {
                            let mut p = fp.clone();
                            p.push(Seg::Key(text.into()));
                            p
                        };
                        let path = match JsonPath::parse(text) {
                            Ok(p) => p,
                            Err(e) => {
                                errors.push((bp, e));
                                continue;
                            }
                        };
                        let e = match bv {
                            // `$$x` is the text `$x`.
                            Value::String(s) if s.starts_with("$$") => {
                                BodyExpect::Is(serde_json::Value::String(s[1..].to_string()))
                            }
                            Value::String(s) if s.starts_with('$') => match s.as_str() {
                                "$present" => BodyExpect::Present,
                                "$absent" => BodyExpect::Absent,
                                "$same" => BodyExpect::Same,
                                other => {
                                    let hint = crate::base::diag::hint_suffix(
                                        other,
                                        ["$present", "$absent", "$same"],
                                    );
                                    errors.push((bp, format!("unknown body check `{other}`: expected a value, or one of $present, $absent, $same{hint}")));
                                    continue;
                                }
                            },
                            other => match crate::base::yaml::to_json(other) {
                                Ok(j) => BodyExpect::Is(j),
                                Err(e) => {
                                    errors.push((
                                        bp,
                                        format!("this value cannot be compared as JSON: {e}"),
                                    ));
                                    continue;
                                }
                            },
                        };
                        a.body.push((path, e));
                    }
                }
                ("model", Value::String(s)) => a.model = Some(s.clone()),
                ("stream", Value::Bool(b)) => a.stream = Some(*b),
                ("method", Value::String(s)) => a.method = Some(s.clone()),
                ("path", Value::String(s)) => a.path = Some(s.clone()),
                ("headers" | "body" | "model" | "stream" | "method" | "path", _) => {
                    errors.push((fp, format!("`{name}` has the wrong type: headers and body are maps, stream is true/false, the others are text")));
                }
                (other, _) => {
                    let hint = crate::base::diag::hint_suffix(
                        other,
                        ["headers", "body", "model", "stream", "method", "path"],
                    );
                    errors.push((fp, format!("unknown key `{other}` in a request assertion: expected headers, body, model, stream, method or path{hint}")));
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
#[cfg(test)]
mod tests {
    use super::*;

    fn parse_yaml(s: &str) -> Result<Vec<RequestAssertion>, Vec<(Vec<Seg>, String)>> {
        let v: Value = serde_yaml::from_str(s).unwrap();
        parse(&v, &[])
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
        let e = parse_yaml(r#"{ A1: { body: { "messages[0]": x } } }"#).unwrap_err();
        assert!(e[0].1.contains("is not a JSON path"), "{e:?}");
        let e = parse_yaml(r#"{ A1: { body: { "$.x": $sam } } }"#).unwrap_err();
        assert!(e[0].1.contains("did you mean `$same`"), "{e:?}");
        let e = parse_yaml(r#"{ A1: { bdy: { "$.x": 1 } } }"#).unwrap_err();
        assert!(e[0].1.contains("did you mean `body`"), "{e:?}");
        let e = parse_yaml(r#"{ A1: { body: [x] } }"#).unwrap_err();
        assert!(e[0].1.contains("wrong type"), "{e:?}");
    }

    #[test]
    fn reads_body_checks_as_json() {
        let a = parse_yaml(
            r#"{ "*": { body: { "$.n": 1, "$.m": { a: [true] }, "$.s": "$$x", "$.u": $same } } }"#,
        );
        let a = a.unwrap();
        let checks: Vec<(&str, &BodyExpect)> = a[0]
            .body
            .iter()
            .map(|(p, e)| (p.text.as_str(), e))
            .collect();
        assert_eq!(
            checks,
            vec![
                ("$.n", &BodyExpect::Is(serde_json::json!(1))),
                ("$.m", &BodyExpect::Is(serde_json::json!({"a": [true]}))),
                ("$.s", &BodyExpect::Is(serde_json::json!("$x"))),
                ("$.u", &BodyExpect::Same),
            ]
        );
    }
}
