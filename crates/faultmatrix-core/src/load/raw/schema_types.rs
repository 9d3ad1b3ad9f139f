//! The JSON Schemas of the raw shapes (feature `schema`, for `faultmatrix
//! schema` and editors): schema functions, and the types whose only job is
//! to give a loose value (checked in the second pass) its schema.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use super::*;

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
