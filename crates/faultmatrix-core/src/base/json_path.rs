//! JSON paths into request bodies (`$.messages[0].role`), and what an
//! observation keeps of a body: the values at the asserted paths, never the
//! body itself.
//!
//! The grammar is the JSONPath subset that names one node: `$`, then any of
//! `.name`, `["name"]` (for names with dots or spaces) and `[N]`.
//!
//! ```
//! use faultmatrix_core::base::json_path::JsonPath;
//! let p = JsonPath::parse("$.messages[0].role").unwrap();
//! let body: serde_json::Value =
//!     serde_json::from_str(r#"{"messages":[{"role":"user"}]}"#).unwrap();
//! assert_eq!(p.select(&body), Some(&serde_json::json!("user")));
//! ```

use serde_json::Value;

/// Longest value kept for a path, as canonical JSON; longer values are
/// kept as a digest (see [`kept`]).
pub const MAX_KEPT: usize = 4096;

/// The pseudo-header saying how a request body was read when paths are
/// asserted: `json`, `not json` or `empty`.
pub const BODY_HEADER: &str = ":body";

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Step {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// A path naming one node of a JSON document.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JsonPath {
    /// As written.
    pub text: String,
    /// Its steps from the root.
    pub steps: Vec<Step>,
}

impl JsonPath {
    /// Parses `$.a.b[0]["c d"]`; the error says what was expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        let expected =
            "a JSON path such as `$.messages[0].role` ($, then `.name`, `[\"name\"]` or `[N]`)";
        let Some(mut rest) = text.strip_prefix('$') else {
            return Err(format!("`{text}` is not {expected}"));
        };
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let end = r.find(['.', '[']).unwrap_or(r.len());
                let name = &r[..end];
                if name.is_empty() {
                    return Err(format!("`{text}` has an empty name: expected {expected}"));
                }
                steps.push(Step::Key(name.to_string()));
                rest = &r[end..];
            } else if let Some(r) = rest.strip_prefix("[\"") {
                let Some(end) = r.find("\"]") else {
                    return Err(format!("`{text}`: `[\"` without a closing `\"]`"));
                };
                steps.push(Step::Key(r[..end].to_string()));
                rest = &r[end + 2..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let Some(end) = r.find(']') else {
                    return Err(format!("`{text}`: `[` without a closing `]`"));
                };
                let n: usize = r[..end].parse().map_err(|_| {
                    format!(
                        "`{text}`: `[{}]` is not an index: expected {expected}",
                        &r[..end]
                    )
                })?;
                steps.push(Step::Index(n));
                rest = &r[end + 1..];
            } else {
                return Err(format!("`{text}` is not {expected}"));
            }
        }
        Ok(Self {
            text: text.to_string(),
            steps,
        })
    }

    /// The node the path names, if the document has it.
    pub fn select<'a>(&self, mut v: &'a Value) -> Option<&'a Value> {
        for s in &self.steps {
            v = match (s, v) {
                (Step::Key(k), Value::Object(m)) => m.get(k)?,
                (Step::Index(i), Value::Array(a)) => a.get(*i)?,
                _ => return None,
            };
        }
        Some(v)
    }

    /// The pseudo-header carrying this path's kept value.
    pub fn header(&self) -> String {
        format!("{BODY_HEADER} {}", self.text)
    }
}

/// What an observation keeps of a value: its canonical JSON, or beyond
/// [`MAX_KEPT`] bytes a digest that still compares (`#digest <fnv> <len>`).
pub fn kept(v: &Value) -> String {
    let text = crate::base::json::canonical(v);
    if text.len() <= MAX_KEPT {
        return text;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("#digest {h:016x} {}", text.len())
}

/// The pseudo-headers a request with this body gets when `paths` are
/// asserted: [`BODY_HEADER`] (`json`, `not json`, `empty`), and one
/// `:body <path>` per path present, holding its [`kept`] value. Nothing
/// when no path is asserted: bodies are never kept otherwise.
pub fn observe(body: &[u8], paths: &[JsonPath]) -> Vec<(String, String)> {
    if paths.is_empty() {
        return Vec::new();
    }
    if body.is_empty() {
        return vec![(BODY_HEADER.into(), "empty".into())];
    }
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        return vec![(BODY_HEADER.into(), "not json".into())];
    };
    let mut out = vec![(BODY_HEADER.to_string(), "json".to_string())];
    for p in paths {
        if out.iter().any(|(k, _)| *k == p.header()) {
            continue;
        }
        if let Some(v) = p.select(&json) {
            out.push((p.header(), kept(v)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_selects() {
        let body = br#"{"messages":[{"role":"system"},{"role":"user"}],"a.b":{"c":null},"n":1.5}"#;
        let j: Value = serde_json::from_slice(body).unwrap();
        let sel = |p: &str| JsonPath::parse(p).unwrap().select(&j).cloned();
        assert_eq!(sel("$.messages[1].role"), Some(Value::from("user")));
        assert_eq!(sel(r#"$["a.b"].c"#), Some(Value::Null));
        assert_eq!(sel("$.messages[2]"), None);
        assert_eq!(sel("$.n.x"), None);
        assert_eq!(sel("$").map(|v| v.is_object()), Some(true));
        for bad in ["messages", "$.", "$..a", "$[x]", "$[0", r#"$["a"#, "$a"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keeps_only_the_asserted_values() {
        let paths = [
            JsonPath::parse("$.model").unwrap(),
            JsonPath::parse("$.missing").unwrap(),
        ];
        let big = "x".repeat(MAX_KEPT * 2);
        let body = format!(r#"{{"model":"m","secret":"{big}"}}"#);
        let seen = observe(body.as_bytes(), &paths);
        assert_eq!(
            seen,
            vec![
                (":body".to_string(), "json".to_string()),
                (":body $.model".to_string(), "\"m\"".to_string())
            ]
        );
        assert!(observe(body.as_bytes(), &[]).is_empty());
        assert_eq!(observe(b"", &paths)[0].1, "empty");
        assert_eq!(observe(b"{", &paths)[0].1, "not json");
        let long = kept(&Value::from(big.clone()));
        assert!(long.starts_with("#digest ") && long.len() < 64, "{long}");
        assert_eq!(long, kept(&Value::from(big)));
    }
}
