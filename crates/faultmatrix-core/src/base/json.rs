//! JSON text in a canonical form.

/// Canonical JSON: object keys sorted at every level, so key order never
/// matters.
pub fn canonical(v: &serde_json::Value) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                serde_json::Value::Object(out)
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // serde_json's map keeps insertion order only with `preserve_order`;
    // sorting the insertion makes the text canonical either way.
    sorted(v).to_string()
}
