//! Serde shapes that mirror the files exactly (first pass). They hold text
//! and loose values; `validate` turns them into the model with diagnostics.

use serde::Deserialize;

use crate::base::yaml::Value;
use crate::model::tolerance::Tolerance;

pub use faultmatrix_controller::duration::Dur;

/// A mapping read as its pairs, in file order (a row's `inject`). No hash
/// table is built: serde_yaml's `Mapping` hashed every key with SipHash,
/// about 700 instructions a row for two routes. A key written twice is
/// refused as the `Mapping` refused it (the YAML pre-check names it, with
/// both lines, before this runs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pairs(pub Vec<(Value, Value)>);

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Pairs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a YAML mapping")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Pairs, A::Error> {
                let mut out: Vec<(Value, Value)> =
                    Vec::with_capacity(m.size_hint().unwrap_or(0).min(64));
                while let Some(k) = m.next_key::<Value>()? {
                    if out.iter().any(|(x, _)| *x == k) {
                        let shown = serde_yaml::to_string(&k).unwrap_or_default();
                        return Err(serde::de::Error::custom(format!(
                            "duplicate entry with key {}",
                            shown.trim_end()
                        )));
                    }
                    let v = m.next_value::<Value>()?;
                    out.push((k, v));
                }
                Ok(Pairs(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Written back as the mapping it was read from (the JSON Schema shows the
/// field's default, `null`, through it).
impl serde::Serialize for Pairs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'a> IntoIterator for &'a Pairs {
    type Item = (&'a Value, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Value, Value)>,
        fn(&'a (Value, Value)) -> (&'a Value, &'a Value),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

/// The faults a map entry's `fault:` takes: the loader checks them, the
/// JSON Schema enumerates them.
pub const FAULTS: &[&str] = &["timeout", "reset", "refused", "malformed", "truncated"];

// The JSON Schemas of these shapes (feature `schema`): the types that give
// loose values their schema, and the schema functions.
#[cfg(feature = "schema")]
mod schema_types;
#[cfg(feature = "schema")]
pub use schema_types::*;

/// A matrix file: a title, the system under test and its policy, and rows.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawMatrix {
    /// One line describing the file; shown in reports.
    pub title: String,
    /// The system under test (default `reference`, the built-in controller).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<SystemSchema>"))]
    pub system: Option<Value>,
    /// Configuration handed to the system.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<PolicySchema>"))]
    pub policy: Option<Value>,
    /// Where every row's wall clock starts: `{ wall: 2023-09-29T12:00:00Z }`
    /// (an HTTP-date or RFC 3339; default Sun, 06 Nov 1994 08:49:37 GMT).
    #[serde(default)]
    pub clock: Option<crate::load::clock::RawClock>,
    /// A registry code's `max_attempts` for every row of this file, without
    /// a registry file: `{ UPSTREAM_UNAVAILABLE: { max_attempts: 5 } }`.
    #[serde(default)]
    pub codes: Option<crate::load::codes::RawCodes>,
    /// A reason-code registry, relative to this file (default: the built-in registry).
    #[serde(default)]
    pub registry: Option<String>,
    /// Settings applied to every row before its own.
    #[serde(default)]
    pub defaults: Option<RawSettings>,
    /// Tape settings (upstreams for recording, scrub rules): see docs/tapes.md.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<TapesSchema>"))]
    pub tapes: Option<Value>,
    /// The rows.
    #[cfg_attr(feature = "schema", schemars(with = "Vec<RawRow>"))]
    pub rows: Vec<Value>,
}

/// Settings a row may override.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawSettings {
    /// Overrides the system's deadline.
    #[serde(default)]
    pub deadline: Option<Dur>,
    /// Explicit jitter draws in [0, 1).
    #[serde(default)]
    pub jitter: Option<Vec<f64>>,
    /// Seed for the deterministic jitter generator.
    #[serde(default)]
    pub jitter_seed: Option<u64>,
    /// The request the system sends.
    #[serde(default)]
    pub request: Option<RawRequest>,
    /// How long the clock keeps running after the system returns; any call then fails the row (default 1h).
    #[serde(default)]
    pub horizon: Option<Dur>,
    /// Virtual time after which a system still running fails the row as hung (default 1h).
    #[serde(default)]
    pub budget: Option<Dur>,
    /// Runaway guard: most calls a row may make (default 100).
    #[serde(default)]
    pub max_calls: Option<u32>,
    /// Real-time tolerance (over the wire).
    #[serde(default)]
    pub tolerance: Option<RawTolerance>,
}

/// A row.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawRow {
    /// Unique in the file; the test is named `file.yaml::name`.
    pub name: String,
    /// `true` or a reason: the row is ignored (it runs with `cargo test -- --ignored`); `false`: it runs.
    #[serde(default)]
    pub ignore: Ignore,
    /// Words for selection: `faultmatrix run --tag X`, `cargo test -- tag:X`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// What each route answers, in order: `A: [503, 503]`, `B: [200]`. A
    /// key `ROUTE METHOD /path` (`A GET /v1/models: [200]`) is a keyed side
    /// script: it serves the route's calls with that method and path, which
    /// are not attempts (HTTP-seam and command systems only).
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<std::collections::BTreeMap<String, ScriptSchema>>")
    )]
    pub inject: Option<Pairs>,
    /// Overrides the system's deadline.
    #[serde(default)]
    pub deadline: Option<Dur>,
    /// Explicit jitter draws in [0, 1).
    #[serde(default)]
    pub jitter: Option<Vec<f64>>,
    /// Seed for the deterministic jitter generator.
    #[serde(default)]
    pub jitter_seed: Option<u64>,
    /// The request the system sends.
    #[serde(default)]
    pub request: Option<RawRequest>,
    /// How long the clock keeps running after the system returns; any call then fails the row (default 1h).
    #[serde(default)]
    pub horizon: Option<Dur>,
    /// Virtual time after which a system still running fails the row as hung (default 1h).
    #[serde(default)]
    pub budget: Option<Dur>,
    /// Runaway guard: most calls a row may make (default 100).
    #[serde(default)]
    pub max_calls: Option<u32>,
    /// Real-time tolerance (over the wire).
    #[serde(default)]
    pub tolerance: Option<RawTolerance>,
    /// What must be observed: `trace` (or `snapshot: true`), `stop`, ...
    pub expect: RawExpect,
    /// A tape to replay instead of `inject` (relative to the matrix file).
    #[serde(default)]
    pub tape: Option<String>,
    /// The shape a recording of the tape must have.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<RecordSchema>"))]
    pub record: Option<Value>,
    /// Policy keys for this row only, merged over the file's `policy`
    /// (mappings merge key by key; any other value replaces the file's).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<PolicySchema>"))]
    pub policy: Option<Value>,
    /// A command system's environment for this row, added over the
    /// file's `system.env` (`${VAR}` expands as there).
    #[serde(default)]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// Where this row's wall clock starts (over the file's `clock`).
    #[serde(default)]
    pub clock: Option<crate::load::clock::RawClock>,
    /// A registry code's `max_attempts` for this row (over the file's
    /// `codes`): `{ UPSTREAM_UNAVAILABLE: { max_attempts: 5 } }`.
    #[serde(default)]
    pub codes: Option<crate::load::codes::RawCodes>,
}

/// The request a row sends.
#[derive(Debug, Default, Clone, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawRequest {
    /// Model name.
    #[serde(default)]
    pub model: Option<String>,
    /// Streamed response.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Creates something.
    #[serde(default)]
    pub create: Option<bool>,
    /// Carries an idempotency key.
    #[serde(default)]
    pub idempotency_key: Option<bool>,
    /// Size in bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// Routing block (provider pin).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
    pub routing: Option<Value>,
}

/// Expectations.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    /// One line per call: `A1 503 UPSTREAM_UNAVAILABLE retry wait=1s`.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<TraceSchema>"))]
    pub trace: Option<Value>,
    /// Why the run ended: success, terminal, exhausted, deadline, partial-output, ...
    #[serde(default)]
    pub stop: Option<String>,
    /// Virtual time until the system returned: `0s`, or a range `2s..3s`.
    #[serde(default)]
    pub elapsed: Option<String>,
    /// The final error: request_id (`$request_id`), code, attempts, max_len.
    #[serde(default)]
    pub error: Option<RawError>,
    /// Escalation events in order: `[{ code: AUTH_FAILED, to: security-oncall }]`.
    #[serde(default)]
    pub escalations: Option<Vec<RawEscalation>>,
    /// Records created at create endpoints (idempotency).
    #[serde(default)]
    pub records: Option<u32>,
    /// Total bytes sent divided by the first attempt's bytes.
    #[serde(default)]
    pub amplification: Option<f64>,
    /// Output delivered to the caller.
    #[serde(default)]
    pub output: Option<String>,
    /// Leave the trace to a reviewed snapshot (`matrices/snapshots/`).
    #[serde(default)]
    pub snapshot: Option<bool>,
    /// Request assertions, by call label.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<RequestsSchema>"))]
    pub requests: Option<Value>,
}

/// Final error expectations.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawError {
    /// Initial request id.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Final code.
    #[serde(default)]
    pub code: Option<String>,
    /// Attempts as `A1 CODE`.
    #[serde(default)]
    pub attempts: Option<Vec<String>>,
    /// Bound on the error's rendered size.
    #[serde(default)]
    pub max_len: Option<usize>,
}

/// An escalation event.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawEscalation {
    /// Reason code.
    pub code: String,
    /// Target.
    #[serde(default)]
    pub to: Option<String>,
}

/// A script entry (or a registry fixture) written as a map.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawEntry {
    /// HTTP status.
    #[serde(default)]
    pub status: Option<u16>,
    /// A registry code whose fixture this entry uses.
    #[serde(default)]
    pub code: Option<String>,
    /// Response headers.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<std::collections::BTreeMap<String, HeaderValueSchema>>")
    )]
    pub headers: Option<serde_yaml::Mapping>,
    /// Response body (JSON as YAML, or a string).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
    pub body: Option<Value>,
    /// Virtual delay before answering.
    #[serde(default)]
    pub latency: Option<Dur>,
    /// `timeout`, `reset`, `malformed` or `truncated`.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<FaultSchema>"))]
    pub fault: Option<String>,
    /// A create request's timeout happened after the record was committed.
    #[serde(default)]
    pub committed: Option<bool>,
    /// Server-sent-event stream.
    #[serde(default)]
    pub stream: Option<RawStream>,
    /// `N` or `forever`.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<RepeatSchema>"))]
    pub repeat: Option<Value>,
    /// Registry fixtures only: attempts that fail before the code recovers.
    #[serde(default)]
    pub recovers_after: Option<u32>,
}

/// A scripted stream.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawStream {
    /// Items in order.
    #[serde(default)]
    pub events: Vec<RawSseItem>,
    /// Break the connection after the items.
    #[serde(default, rename = "break")]
    pub breaks: bool,
}

/// One stream item: a comment or an event.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawSseItem {
    /// Comment text (`: keep-alive`).
    #[serde(default)]
    pub comment: Option<String>,
    /// Event data (a string, or YAML rendered as JSON).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Value>"))]
    pub data: Option<Value>,
    /// Event name.
    #[serde(default)]
    pub event: Option<String>,
    /// Event id.
    #[serde(default)]
    pub id: Option<String>,
    /// Virtual pause before this item (a stall); alone, a pause with
    /// nothing sent (last in the list: before the end or the break).
    #[serde(default)]
    pub delay: Option<Dur>,
}

/// `tolerance:` as written: `{ abs: 50ms, rel: 10%, late: 1s }` (any may be left out).
/// Over the wire only: how far a real wait may be from the expected one.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawTolerance {
    /// Absolute slack, early and late (default 50ms).
    #[serde(default)]
    pub abs: Option<Dur>,
    /// Relative slack, early and late, of the expected value: `10%` or a fraction such as `0.1` (default 10%).
    #[serde(default)]
    pub rel: Option<RawRel>,
    /// Extra slack on the late side only, for a loaded machine: load makes real waits longer, never shorter (default 1s; `0s` for a symmetric window).
    #[serde(default)]
    pub late: Option<Dur>,
}

/// A relative tolerance as written: `10%` or a fraction such as `0.1`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum RawRel {
    /// `0.1`.
    Fraction(f64),
    /// `10%`.
    Percent(String),
}

impl RawTolerance {
    /// Applies the written fields on top of `base`.
    pub fn apply(&self, base: Tolerance) -> Result<Tolerance, String> {
        let mut t = base;
        if let Some(a) = self.abs {
            t.abs = a.0;
        }
        if let Some(l) = self.late {
            t.late = l.0;
        }
        if let Some(r) = &self.rel {
            let v = match r {
                RawRel::Fraction(f) => *f,
                RawRel::Percent(s) => {
                    let num = s.trim().strip_suffix('%').ok_or_else(|| {
                        format!("`rel: {s}` is not a percentage: write it as `10%` or `0.1`")
                    })?;
                    num.trim()
                        .parse::<f64>()
                        .map_err(|_| format!("`rel: {s}` is not a percentage: write it as `10%`"))?
                        / 100.0
                }
            };
            if !(v.is_finite() && (0.0..=10.0).contains(&v)) {
                return Err(format!(
                    "`rel` is {v}: a relative tolerance is a fraction from 0 to 10 (0% to 1000%)"
                ));
            }
            t.rel = v;
        }
        Ok(t)
    }
}

// ---------------------------------------------------------------- tapes

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
// A matrix's `tapes:` block (fields documented in docs/tapes.md; no doc
// comments, so the shipped schema stays as it is).
pub(crate) struct RawTapes {
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<std::collections::BTreeMap<String, RawUpstream>>")
    )]
    pub(crate) upstreams: Option<Value>,
    #[serde(default)]
    pub(crate) scrub: Option<RawScrub>,
    #[serde(default)]
    pub(crate) timeout: Option<Dur>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
// `tapes.scrub`.
pub(crate) struct RawScrub {
    #[serde(default)]
    pub(crate) headers: Vec<String>,
    #[serde(default)]
    pub(crate) json_paths: Vec<String>,
    #[serde(default)]
    pub(crate) prefixes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
// One upstream in `tapes.upstreams`, as a map.
pub(crate) struct RawUpstream {
    pub(crate) url: String,
    #[serde(default)]
    pub(crate) key_env: Option<String>,
    #[serde(default)]
    pub(crate) key_header: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
// A row's `record:` block.
pub(crate) struct RawRecord {
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<ScalarSchema>>"))]
    pub(crate) expect: Option<Vec<Value>>,
}

/// A row's `ignore:`: `true`, `false`, or a reason (a non-empty string that
/// is not a spelling of a boolean). `ignore: false` and `ignore: ""` used to
/// ignore the row; anything but these forms is now an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ignore(pub Option<String>);

impl<'de> Deserialize<'de> for Ignore {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Ignore;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`true`, `false`, or a reason such as `flaky upstream, see #12`")
            }
            fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Ignore, E> {
                Ok(Ignore(b.then(|| "ignored".to_string())))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Ignore, E> {
                Ok(Ignore(None))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Ignore, E> {
                let t = s.trim();
                if t.is_empty() {
                    return Err(E::custom(
                        "`ignore` is an empty reason: write `ignore: true`, a reason, or remove the key",
                    ));
                }
                let lower = t.to_ascii_lowercase();
                if ["true", "false", "yes", "no", "on", "off", "y", "n"].contains(&lower.as_str()) {
                    return Err(E::custom(format!(
                        "`ignore: \"{t}\"` is a quoted word, not a boolean: write `ignore: true`, `ignore: false`, or a reason"
                    )));
                }
                Ok(Ignore(Some(t.to_string())))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    /// `inject` read as pairs keeps the file's order, refuses a key
    /// written twice and anything but a mapping, as serde_yaml's `Mapping`
    /// did.
    #[test]
    fn pairs_keep_order_and_refuse_a_key_twice_and_other_shapes() {
        use super::{Pairs, Value};
        let p: Pairs = serde_yaml::from_str("{ B: [200], A: [503, 503] }").unwrap();
        let keys: Vec<&str> = p.into_iter().filter_map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["B", "A"]);
        assert_eq!(
            p.0[1].1,
            serde_yaml::from_str::<Value>("[503, 503]").unwrap()
        );
        let e = serde_yaml::from_str::<Pairs>("{ A: [503], A: [200] }").unwrap_err();
        assert!(e.to_string().contains("duplicate entry with key A"), "{e}");
        for (text, want) in [
            ("5", "invalid type: integer `5`, expected a YAML mapping"),
            ("[1]", "invalid type: sequence, expected a YAML mapping"),
        ] {
            let e = serde_yaml::from_str::<Pairs>(text).unwrap_err();
            assert!(e.to_string().contains(want), "{text}: {e}");
        }
    }

    use std::time::Duration;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn parses_written_tolerances() {
        let base = Tolerance::default();
        let raw: RawTolerance = serde_yaml::from_str("{ abs: 20ms, rel: 5% }").unwrap();
        assert_eq!(
            raw.apply(base).unwrap(),
            Tolerance {
                abs: ms(20),
                rel: 0.05,
                late: base.late,
            }
        );
        let raw: RawTolerance = serde_yaml::from_str("{ late: 250ms }").unwrap();
        assert_eq!(
            raw.apply(base).unwrap(),
            Tolerance {
                late: ms(250),
                ..base
            }
        );
        let raw: RawTolerance = serde_yaml::from_str("{ late: 0s }").unwrap();
        assert_eq!(raw.apply(base).unwrap().late, Duration::ZERO);
        for (text, want) in [
            ("{ late: 5 }", "`5` has no unit"),
            ("{ late: 5x }", "unknown unit `x`"),
            ("{ late: -1 }", "negative"),
            ("{ late: [1s] }", "a duration such as"),
            ("{ lat: 1s }", "unknown field `lat`"),
        ] {
            match serde_yaml::from_str::<RawTolerance>(text) {
                Ok(r) => panic!("{text} was accepted as {r:?}"),
                Err(e) => assert!(e.to_string().contains(want), "{text}: {e}"),
            }
        }
        let raw: RawTolerance = serde_yaml::from_str("{ rel: 0.25 }").unwrap();
        assert_eq!(raw.apply(base).unwrap().rel, 0.25);
        let raw: RawTolerance = serde_yaml::from_str("{ rel: ten }").unwrap();
        assert!(raw.apply(base).unwrap_err().contains("percentage"));
        let raw: RawTolerance = serde_yaml::from_str("{ rel: -1 }").unwrap();
        assert!(raw.apply(base).unwrap_err().contains("fraction"));
    }
}
