//! JSON Schemas for matrix, registry and invariants files, generated with schemars from
//! the same serde shapes the loader uses ([`crate::load::raw`] and the
//! registry shapes in [`crate::load::validate`]), so editors complete keys
//! and flag typos as the loader would.
//!
//! A few fields are loose YAML values in the serde shapes (they are
//! checked in the second pass); their schema is given here by small
//! schema-only types. `faultmatrix schema matrix|registry|invariants` prints them;
//! `docs/schema/*.schema.json` ships them (a test keeps those current).

/// Which file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A matrix file (`title`, `policy`, `rows`).
    Matrix,
    /// A reason-code registry (`version`, `codes`).
    Registry,
    /// An explore invariants file (`invariants`, `except`, `generate`).
    Invariants,
}

/// The schema of a file kind, pretty-printed with a trailing newline.
pub fn render(kind: Kind) -> String {
    let mut schema = match kind {
        Kind::Matrix => schemars::schema_for!(crate::load::raw::RawMatrix),
        Kind::Registry => schemars::schema_for!(crate::load::registry::RawRegistry),
        Kind::Invariants => schemars::schema_for!(crate::load::invariants::RawInvariantsFile),
    };
    let title = match kind {
        Kind::Matrix => "faultmatrix matrix file",
        Kind::Registry => "faultmatrix reason-code registry",
        Kind::Invariants => "faultmatrix explore invariants file",
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
        // The reference system's stop reasons, enforced by the loader for
        // its files (a custom system may report others).
        schema.insert(
            "then".into(),
            serde_json::json!({ "properties": {
                "policy": { "$ref": "#/$defs/ReferencePolicy" },
                "rows": { "items": { "properties": { "expect": { "properties": {
                    "stop": { "enum": crate::model::STOP_REASONS }
                } } } } }
            } }),
        );
    }
    let mut s = serde_json::to_string_pretty(&schema).expect("a schema serialises");
    s.push('\n');
    s
}

pub use crate::load::raw::{duration_schema, EntrySchema, SystemSchema};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invariants_schema_lists_every_builtin() {
        let s: serde_json::Value = serde_json::from_str(&render(Kind::Invariants)).unwrap();
        assert_eq!(s["additionalProperties"], serde_json::json!(false));
        assert_eq!(s["required"], serde_json::json!(["invariants"]));
        let names = s["$defs"]["BuiltinInvariant"]["oneOf"].as_array().unwrap();
        assert_eq!(names.len(), crate::model::invariants::Builtin::ALL.len());
        assert_eq!(names[0]["const"], "budget");
        assert_eq!(
            s["$defs"]["RawWeights"]["properties"]["retry-after"]["type"],
            serde_json::json!(["integer", "null"])
        );
    }

    #[test]
    fn matrix_schema_forbids_unknown_row_keys() {
        let s: serde_json::Value = serde_json::from_str(&render(Kind::Matrix)).unwrap();
        let row = &s["$defs"]["RawRow"];
        assert_eq!(row["additionalProperties"], serde_json::json!(false));
        assert!(row["properties"]["expect"].is_object());
        assert!(s["$defs"]["RawExpect"]["properties"]["snapshot"].is_object());
    }
}
