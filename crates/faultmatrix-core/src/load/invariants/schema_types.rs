//! The JSON Schema of an invariants file (feature `schema`).

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use super::*;

/// A built-in invariant's name, each with its meaning.
pub struct BuiltinNameSchema;

impl JsonSchema for BuiltinNameSchema {
    fn schema_name() -> Cow<'static, str> {
        "BuiltinInvariant".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<serde_json::Value> = Builtin::ALL
            .into_iter()
            .map(|b| serde_json::json!({ "const": b.name(), "description": b.meaning() }))
            .collect();
        json_schema!({
            "description": "A built-in invariant (docs/explore.md).",
            "oneOf": names
        })
    }
}

/// `invariants:`: `all`, or a list of built-in names and own rules.
pub struct InvariantListSchema;

impl JsonSchema for InvariantListSchema {
    fn schema_name() -> Cow<'static, str> {
        "Invariants".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let name = g.subschema_for::<BuiltinNameSchema>();
        let rule = g.subschema_for::<RawRule>();
        json_schema!({
            "description": "`all` (every built-in invariant), or a list of built-in names and own rules.",
            "anyOf": [
                { "const": "all" },
                { "type": "array", "items": { "anyOf": [name, rule] } }
            ]
        })
    }
}

// The loader reads the same keys from the YAML tree, with positions
// (`load_invariants`); this shape only gives the JSON Schema.
/// An explore invariants file (`<matrix>.invariants.yaml`, docs/explore.md):
/// which invariants `faultmatrix explore` checks and what it generates.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct RawInvariantsFile {
    /// Which invariants explore checks.
    #[schemars(with = "InvariantListSchema")]
    invariants: (),
    /// Invariants left out (names among `invariants`).
    #[serde(default)]
    except: Option<Vec<String>>,
    /// What explore generates.
    #[serde(default)]
    generate: Option<RawGenerate>,
}
