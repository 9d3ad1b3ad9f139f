//! JSON Schemas for matrix and registry files, generated with schemars from
//! the same serde shapes the loader uses ([`crate::load::raw`] and the
//! registry shapes in [`crate::load::validate`]), so editors complete keys
//! and flag typos as the loader would.
//!
//! A few fields are loose YAML values in the serde shapes (they are
//! checked in the second pass); their schema is given here by small
//! schema-only types. `faultmatrix schema matrix|registry` prints them;
//! `docs/schema/*.schema.json` ships them (a test keeps those current).

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

/// Which file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A matrix file (`title`, `policy`, `rows`).
    Matrix,
    /// A reason-code registry (`version`, `codes`).
    Registry,
}

/// The schema of a file kind, pretty-printed with a trailing newline.
pub fn render(kind: Kind) -> String {
    let mut schema = match kind {
        Kind::Matrix => schemars::schema_for!(crate::load::raw::RawMatrix),
        Kind::Registry => schemars::schema_for!(crate::load::registry::RawRegistry),
    };
    let title = match kind {
        Kind::Matrix => "faultmatrix matrix file",
        Kind::Registry => "faultmatrix reason-code registry",
    };
    schema.insert("title".into(), title.into());
    if kind == Kind::Matrix {
        // The reference system's policy, when the file runs it: editors
        // complete its keys and flag typos.
        let mut g = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let policy = crate::load::policy::config::policy_schema(&mut g);
        let defs = g.take_definitions(true);
        if let Some(serde_json::Value::Object(all)) = schema.get_mut("$defs") {
            all.extend(defs);
            all.insert("ReferencePolicy".into(), policy.to_value());
        }
        schema.insert(
            "if".into(),
            serde_json::json!({ "anyOf": [
                { "not": { "required": ["system"] } },
                { "properties": { "system": { "const": "reference" } } }
            ] }),
        );
        schema.insert(
            "then".into(),
            serde_json::json!({ "properties": { "policy": { "$ref": "#/$defs/ReferencePolicy" } } }),
        );
    }
    let mut s = serde_json::to_string_pretty(&schema).expect("a schema serialises");
    s.push('\n');
    s
}

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

schema_only!(
    /// A matrix's `tapes:` block (see docs/tapes.md).
    TapesSchema,
    |g| crate::load::tape::tapes_schema(g)
);

schema_only!(
    /// A row's `record:` block (see docs/tapes.md).
    RecordSchema,
    |g| crate::load::tape::record_schema(g)
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
        let map = g.subschema_for::<crate::load::raw::RawEntry>();
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
        let duration = <crate::load::raw::Dur as schemars::JsonSchema>::json_schema(g);
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
                        "routes": { "description": "Declared routes, in fallback order.", "type": "array", "items": { "type": "string" } }
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
    use super::*;

    #[test]
    fn matrix_schema_forbids_unknown_row_keys() {
        let s: serde_json::Value = serde_json::from_str(&render(Kind::Matrix)).unwrap();
        let row = &s["$defs"]["RawRow"];
        assert_eq!(row["additionalProperties"], serde_json::json!(false));
        assert!(row["properties"]["expect"].is_object());
        assert!(s["$defs"]["RawExpect"]["properties"]["snapshot"].is_object());
    }
}
