//! Serde shapes that mirror the files exactly (first pass). They hold text
//! and loose values; `validate` turns them into the model with diagnostics.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::yaml::Value;

/// A duration written as `1s`, `250ms` or `0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl schemars::JsonSchema for Dur {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::duration_schema()
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as `1s` or `250ms`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Dur, E> {
                crate::duration::parse(s).map(Dur).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Dur, E> {
                if n == 0 {
                    Ok(Dur(Duration::ZERO))
                } else {
                    Err(E::custom(format!(
                        "`{n}` has no unit: write it as `{n}s` or `{n}ms`"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Dur, E> {
                if n < 0 {
                    Err(E::custom(format!(
                        "`{n}` is negative: a duration is 0 or more"
                    )))
                } else {
                    self.visit_u64(n as u64)
                }
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "`{n}` has no unit: write it as `{n}s` or `{n}ms`"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// A matrix file.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMatrix {
    /// Title line.
    pub title: String,
    /// System name (or a system description).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub system: Option<Value>,
    /// Configuration handed to the system.
    #[serde(default)]
    #[schemars(with = "Option<crate::schema::PolicySchema>")]
    pub policy: Option<Value>,
    /// Path to a reason-code registry, relative to the file.
    #[serde(default)]
    pub registry: Option<String>,
    /// Defaults for every row.
    #[serde(default)]
    pub defaults: Option<RawSettings>,
    /// Tape settings (upstreams for recording, scrub rules): `crate::tape::config`.
    #[serde(default)]
    #[schemars(with = "Option<crate::schema::TapesSchema>")]
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
    /// How long to keep the clock running after the system returns.
    #[serde(default)]
    pub horizon: Option<Dur>,
    /// Virtual time after which a system still running is hung.
    #[serde(default)]
    pub budget: Option<Dur>,
    /// Runaway guard: most calls a row may make.
    #[serde(default)]
    pub max_calls: Option<u32>,
}

/// A row.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRow {
    /// Unique name.
    pub name: String,
    /// Reason the row is ignored.
    #[serde(default)]
    pub ignore: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Route scripts.
    #[serde(default)]
    #[schemars(with = "Option<std::collections::BTreeMap<String, crate::schema::ScriptSchema>>")]
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
    /// How long to keep the clock running after the system returns.
    #[serde(default)]
    pub horizon: Option<Dur>,
    /// Virtual time after which a system still running is hung.
    #[serde(default)]
    pub budget: Option<Dur>,
    /// Runaway guard.
    #[serde(default)]
    pub max_calls: Option<u32>,
    /// Expectations.
    pub expect: RawExpect,
    /// A tape to replay instead of `inject` (relative to the matrix file).
    #[serde(default)]
    pub tape: Option<String>,
    /// The shape a recording of the tape must have.
    #[serde(default)]
    #[schemars(with = "Option<crate::schema::RecordSchema>")]
    pub record: Option<Value>,
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
    /// Trace lines: a block string or a list.
    #[serde(default)]
    #[schemars(with = "Option<crate::schema::TraceSchema>")]
    pub trace: Option<Value>,
    /// Stop reason.
    #[serde(default)]
    pub stop: Option<String>,
    /// Elapsed virtual time (exact or range).
    #[serde(default)]
    pub elapsed: Option<String>,
    /// Final error.
    #[serde(default)]
    pub error: Option<RawError>,
    /// Escalation events.
    #[serde(default)]
    pub escalations: Option<Vec<RawEscalation>>,
    /// Records created.
    #[serde(default)]
    pub records: Option<u32>,
    /// Amplification factor.
    #[serde(default)]
    pub amplification: Option<f64>,
    /// Output delivered to the caller.
    #[serde(default)]
    pub output: Option<String>,
    /// Leave the trace to a reviewed snapshot (`matrices/snapshots/`).
    #[serde(default)]
    pub snapshot: Option<bool>,
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
    #[schemars(with = "Option<std::collections::BTreeMap<String, crate::schema::ScalarSchema>>")]
    pub headers: Option<serde_yaml::Mapping>,
    /// Response body (JSON as YAML, or a string).
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Value>")]
    pub body: Option<Value>,
    /// Virtual delay before answering.
    #[serde(default)]
    pub latency: Option<Dur>,
    /// `timeout`, `reset` or `malformed`.
    #[serde(default)]
    pub fault: Option<String>,
    /// A create request's timeout happened after the record was committed.
    #[serde(default)]
    pub committed: Option<bool>,
    /// Server-sent-event stream.
    #[serde(default)]
    pub stream: Option<RawStream>,
    /// `N` or `forever`.
    #[serde(default)]
    #[schemars(with = "Option<crate::schema::RepeatSchema>")]
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
}
