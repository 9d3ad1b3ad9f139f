//! Request assertions: what a row says about the requests themselves, per
//! call, without capturing credentials or bodies.
//!
//! ```yaml
//! expect:
//!   requests:
//!     "*":  { headers: { idempotency-key: $same, x-stainless-retry-count: $retries }, model: gpt-4o-mini, stream: false }
//!     A1:   { method: POST, path: /v1/chat/completions }
//!     A2:   { body: { "$.messages[0].role": user, "$.temperature": $absent, "$.user": $same } }
//! ```
//!
//! Keys are call labels (`A1`, `B2`) or `"*"` for every call. A header's
//! expected value is a literal, or one of `$present`, `$absent`, `$same`
//! (present, and identical on every call the assertion covers) and
//! `$retries` (the number of calls made before this one). Credential
//! headers (`authorization`, `cookie`, `*api-key*`, `*token*`...) are never
//! recorded, so asserting on them is refused when the file loads.
//!
//! `body` asserts JSON paths of the request body (see
//! [`crate::base::json_path`]): a value (YAML, compared as JSON), or
//! `$present`, `$absent`, `$same`. Only the asserted paths' values are kept
//! of a body, never the body.
//!
//! The checks run on call records, so they hold in-process too (there the
//! reference system sends `x-retry-count` and `idempotency-key`; a system
//! that calls the transport directly sends no body, so `body` holds only
//! through the HTTP seam and over the wire).

use crate::base::json_path::JsonPath;

/// What a header must be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// What the value at a body path must be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BodyExpect {
    /// Equal to this JSON value.
    #[serde(with = "json_text")]
    Is(serde_json::Value),
    /// Present, any value (`null` included).
    Present,
    /// Not in the body.
    Absent,
    /// Present and identical on every covered call.
    Same,
}

/// Assertions on one call (or all calls).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// JSON paths of the request body and what they must hold.
    pub body: Vec<(JsonPath, BodyExpect)>,
}

/// Every body path a row's request assertions name, once each: what the
/// transport keeps of request bodies.
pub fn body_paths(assertions: &[RequestAssertion]) -> Vec<JsonPath> {
    let mut out: Vec<JsonPath> = Vec::new();
    for a in assertions {
        for (p, _) in &a.body {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
    }
    out
}

/// A JSON value stored as its text: the model cache's binary form cannot
/// hold a self-describing value.
mod json_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &serde_json::Value, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<serde_json::Value, D::Error> {
        let text = <&str>::deserialize(d)?;
        serde_json::from_str(text).map_err(serde::de::Error::custom)
    }
}
