//! Serde shapes that mirror the files exactly (first pass). They hold text
//! and loose values; `validate` turns them into the model with diagnostics.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;

use crate::base::yaml::Value;
use crate::model::tolerance::Tolerance;

pub use faultmatrix_controller::duration::Dur;

/// A matrix file: a title, the system under test and its policy, and rows.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMatrix {
    /// One line describing the file; shown in reports.
    pub title: String,
    /// The system under test (default `reference`, the built-in controller).
    #[serde(default)]
    #[schemars(with = "Option<SystemSchema>")]
    pub system: Option<Value>,
    /// Configuration handed to the system.
    #[serde(default)]
    #[schemars(with = "Option<PolicySchema>")]
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
    #[schemars(with = "Option<TapesSchema>")]
    pub tapes: Option<Value>,
    /// The rows.
    #[schemars(with = "Vec<RawRow>")]
    pub rows: Vec<Value>,
}

/// Settings a row may override.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Deserialize, schemars::JsonSchema)]
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
    #[schemars(with = "Option<std::collections::BTreeMap<String, ScriptSchema>>")]
    pub inject: Option<serde_yaml::Mapping>,
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
    #[schemars(with = "Option<RecordSchema>")]
    pub record: Option<Value>,
    /// Policy keys for this row only, merged over the file's `policy`
    /// (mappings merge key by key; any other value replaces the file's).
    #[serde(default)]
    #[schemars(with = "Option<PolicySchema>")]
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
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
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
    #[schemars(with = "Option<serde_json::Value>")]
    pub routing: Option<Value>,
}

/// Expectations.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    /// One line per call: `A1 503 UPSTREAM_UNAVAILABLE retry wait=1s`.
    #[serde(default)]
    #[schemars(with = "Option<TraceSchema>")]
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
    #[schemars(with = "Option<RequestsSchema>")]
    pub requests: Option<Value>,
}

/// Final error expectations.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEscalation {
    /// Reason code.
    pub code: String,
    /// Target.
    #[serde(default)]
    pub to: Option<String>,
}

/// A script entry (or a registry fixture) written as a map.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
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
    #[schemars(with = "Option<std::collections::BTreeMap<String, HeaderValueSchema>>")]
    pub headers: Option<serde_yaml::Mapping>,
    /// Response body (JSON as YAML, or a string).
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Value>")]
    pub body: Option<Value>,
    /// Virtual delay before answering.
    #[serde(default)]
    pub latency: Option<Dur>,
    /// `timeout`, `reset`, `malformed` or `truncated`.
    #[serde(default)]
    #[schemars(with = "Option<FaultSchema>")]
    pub fault: Option<String>,
    /// A create request's timeout happened after the record was committed.
    #[serde(default)]
    pub committed: Option<bool>,
    /// Server-sent-event stream.
    #[serde(default)]
    pub stream: Option<RawStream>,
    /// `N` or `forever`.
    #[serde(default)]
    #[schemars(with = "Option<RepeatSchema>")]
    pub repeat: Option<Value>,
    /// Registry fixtures only: attempts that fail before the code recovers.
    #[serde(default)]
    pub recovers_after: Option<u32>,
}

/// A scripted stream.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSseItem {
    /// Comment text (`: keep-alive`).
    #[serde(default)]
    pub comment: Option<String>,
    /// Event data (a string, or YAML rendered as JSON).
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Value>")]
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
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
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

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
// A matrix's `tapes:` block (fields documented in docs/tapes.md; no doc
// comments, so the shipped schema stays as it is).
pub(crate) struct RawTapes {
    #[serde(default)]
    #[schemars(with = "Option<std::collections::BTreeMap<String, RawUpstream>>")]
    pub(crate) upstreams: Option<Value>,
    #[serde(default)]
    pub(crate) scrub: Option<RawScrub>,
    #[serde(default)]
    pub(crate) timeout: Option<Dur>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
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

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
// One upstream in `tapes.upstreams`, as a map.
pub(crate) struct RawUpstream {
    pub(crate) url: String,
    #[serde(default)]
    pub(crate) key_env: Option<String>,
    #[serde(default)]
    pub(crate) key_header: Option<String>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
// A row's `record:` block.
pub(crate) struct RawRecord {
    #[serde(default)]
    #[schemars(with = "Option<Vec<ScalarSchema>>")]
    pub(crate) expect: Option<Vec<Value>>,
}

/// JSON Schemas of a matrix's `tapes:` block and a row's `record:` block,
/// generated from the serde shapes they are parsed with (for
/// `faultmatrix schema`).
pub fn tapes_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<RawTapes>()
}

/// See [`tapes_schema`].
pub fn record_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<RawRecord>()
}

// ---------------------------------------------------------------- schema-only types
//
// Fields that are loose YAML values in the shapes above (checked in the
// second pass) get their JSON Schema from these.

pub use faultmatrix_controller::duration::duration_schema;

macro_rules! schema_only {
    ($(#[$doc:meta])* $name:ident, |$g:ident| $body:expr) => {
        $(#[$doc])*
        pub struct $name;
        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).trim_end_matches("Schema").into()
            }
            fn json_schema($g: &mut SchemaGenerator) -> Schema {
                $body
            }
        }
    };
}

schema_only!(
    /// The configuration handed to the system (for `reference`: routes,
    /// backoff, deadline...). Checked by the system when the file loads.
    PolicySchema,
    |_g| json_schema!({
        "description": "Configuration handed to the system under test. For the reference system (`system: reference` or no `system`): `routes`, `backoff`, `deadline`, `attempt_timeout`, `switch_delay`, `retry_after`, `body_paths`, `switch_on`, `retry_creates_without_key`; see docs/configuration.md.",
        "type": ["object", "null"]
    })
);

/// The faults a map entry's `fault:` takes: the loader checks them, the
/// JSON Schema enumerates them.
pub const FAULTS: &[&str] = &["timeout", "reset", "refused", "malformed", "truncated"];

schema_only!(
    /// A map entry's `fault`: one of [`FAULTS`].
    FaultSchema,
    |_g| json_schema!({
        "description": "A fault instead of a response.",
        "enum": FAULTS
    })
);

schema_only!(
    /// A matrix's `tapes:` block (see docs/tapes.md).
    TapesSchema,
    |g| tapes_schema(g)
);

schema_only!(
    /// A row's `record:` block (see docs/tapes.md).
    RecordSchema,
    |g| record_schema(g)
);

schema_only!(
    /// Expected trace: a block of lines or a list of lines.
    TraceSchema,
    |_g| json_schema!({
        "description": "The expected trace, one call per line: `<route><attempt> <outcome> [CODE] <decision> [wait=..] [at=..] [id=..] [size=..]`, e.g. `A1 503 UPSTREAM_UNAVAILABLE retry wait=1s`.",
        "anyOf": [
            { "type": "string" },
            { "type": "array", "items": { "type": "string" } }
        ]
    })
);

schema_only!(
    /// `N` (at least 1) or `forever`.
    RepeatSchema,
    |_g| json_schema!({
        "description": "How often the entry is served: a count of at least 1, or `forever` (bounded by the runaway guard).",
        "anyOf": [
            { "type": "integer", "minimum": 1 },
            { "const": "forever" }
        ]
    })
);

schema_only!(
    /// A header value.
    ScalarSchema,
    |_g| json_schema!({ "type": ["string", "number", "boolean"] })
);

schema_only!(
    /// A scripted response header's value: a scalar, or an HTTP-date
    /// relative to the wall clock (`{ http-date: now+20s, form: rfc850 }`).
    HeaderValueSchema,
    |_g| json_schema!({
        "anyOf": [
            { "type": ["string", "number", "boolean"] },
            {
                "description": "An HTTP-date relative to the row's wall clock when the answer is sent.",
                "type": "object",
                "additionalProperties": false,
                "required": ["http-date"],
                "properties": {
                    "http-date": { "type": "string", "pattern": "^\\s*now\\s*([+-].+)?$" },
                    "form": { "enum": faultmatrix_controller::policy::retry_after::DateForm::NAMES.map(|(n, _)| n) }
                }
            }
        ]
    })
);

schema_only!(
    /// A registry status match: `429` or `5xx`.
    StatusMatchSchema,
    |_g| json_schema!({
        "anyOf": [
            { "type": "integer", "minimum": 100, "maximum": 599 },
            { "type": "string", "pattern": "^[1-5]xx$" }
        ]
    })
);

schema_only!(
    /// One script entry: a status, a word, a reason code, or a map.
    EntrySchema,
    |g| {
        let map = g.subschema_for::<RawEntry>();
        json_schema!({
            "description": "What one call gets: a status (503), `timeout`, `reset`, `malformed`, `ok`, a reason code from the registry (RATE_LIMITED), or a map with `status`, `headers`, `body`, `latency`, `stream`, `repeat`.",
            "anyOf": [
                { "type": "integer", "minimum": 100, "maximum": 599 },
                { "type": "string" },
                map
            ]
        })
    }
);

schema_only!(
    /// A route's script: a list of entries, one entry, or a bare code.
    ScriptSchema,
    |g| {
        let entry = g.subschema_for::<EntrySchema>();
        json_schema!({
            "description": "What the route answers, in order: a list of entries, or a reason code alone (its registry fixture, recovering as the registry says).",
            "anyOf": [
                { "type": "array", "items": entry.clone() },
                entry
            ]
        })
    }
);

/// The JSON Schema of `system:` (a registered name, or a command block).
pub struct SystemSchema;

impl schemars::JsonSchema for SystemSchema {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "System".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let duration = <Dur as schemars::JsonSchema>::json_schema(g);
        schemars::json_schema!({
            "description": "The system under test: a registered name (default `reference`), or a command run over HTTP (docs/over-the-wire.md).",
            "anyOf": [
                { "type": "string" },
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["command"],
                    "properties": {
                        "command": { "description": "Program and arguments; `${VAR}` and `${VAR:-default}` expand.", "type": "array", "items": { "type": "string" }, "minItems": 1 },
                        "env": { "description": "Added to the environment.", "type": "object", "additionalProperties": { "type": "string" } },
                        "cwd": { "description": "Working directory, relative to the matrix file (default: its directory).", "type": "string" },
                        "timeout": duration,
                        "routes": { "description": "Declared routes, in fallback order.", "type": "array", "items": { "type": "string" } },
                        "clock": { "description": "`virtual`: the row's clock, shared with a Python or Node client through its shim (default for those interpreters); `real`: the real clock, waits judged within the tolerance.", "enum": ["virtual", "real"] },
                        "warm": { "description": "On the virtual clock, pay start-up ahead of the row (default true): Python, one warm parent per worker imports the program once and forks a child per row; Node, a spare process per worker is started and requires the program's modules before its row.", "type": "boolean" }
                    }
                }
            ]
        })
    }
}

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
                    "body": {
                        "description": "JSON paths of the request body (`$.messages[0].role`) to a value (compared as JSON), or `$present`, `$absent`, `$same` (identical on every covered call); `$$x` is the text `$x`. Only these paths' values are kept.",
                        "type": "object",
                        "propertyNames": { "pattern": "^\\$" }
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

#[cfg(test)]
mod tests {
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

impl JsonSchema for Ignore {
    fn schema_name() -> Cow<'static, str> {
        "Ignore".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "`true` or a reason: the row is ignored; `false` (or absent): it runs.",
            "anyOf": [
                { "type": "boolean" },
                { "type": "string", "minLength": 1, "not": { "pattern": "^\\s*([Tt]rue|[Ff]alse|[Yy]es|[Nn]o|[Oo]n|[Oo]ff|[YyNn])\\s*$" } },
                { "type": "null" }
            ]
        })
    }
}
