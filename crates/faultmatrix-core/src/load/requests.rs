//! Reading `expect.requests` into [`RequestAssertion`]s.

use crate::base::yaml::{Seg, Value};
pub use crate::model::requests::{HeaderExpect, RequestAssertion};

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
                ("model", Value::String(s)) => a.model = Some(s.clone()),
                ("stream", Value::Bool(b)) => a.stream = Some(*b),
                ("method", Value::String(s)) => a.method = Some(s.clone()),
                ("path", Value::String(s)) => a.path = Some(s.clone()),
                ("headers" | "model" | "stream" | "method" | "path", _) => {
                    errors.push((fp, format!("`{name}` has the wrong type: headers is a map, stream is true/false, the others are text")));
                }
                (other, _) => {
                    let hint = crate::base::diag::hint_suffix(
                        other,
                        ["headers", "model", "stream", "method", "path"],
                    );
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
    }
}
