//! A row's own `policy` keys: merged over the file's `policy` and built
//! into a system for that row, with the same factory and the same messages
//! as the file's (errors point at the row's keys when they come from them).

use std::sync::Arc;

use super::ctx::Ctx;
use crate::base::yaml::{Seg, Value, YamlError};
use crate::load::built::Factory;
use crate::model::registry::Registry;
use crate::model::row::RowSystem;

/// `over` merged onto `base`: mappings key by key (recursively), any other
/// value of `over` replaces `base`'s (a row's `routes` list replaces the
/// file's).
pub fn merge(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (Value::Mapping(b), Value::Mapping(o)) => {
            let mut out = b.clone();
            for (k, v) in o {
                let merged = match out.get(k) {
                    Some(bv) => merge(bv, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Mapping(out)
        }
        (_, o) => o.clone(),
    }
}

/// Whether `path` (below `policy`) is written in `over`.
fn written(over: &Value, path: &[Seg]) -> bool {
    let mut cur = over;
    for seg in path {
        cur = match (seg, cur) {
            (Seg::Key(k), Value::Mapping(m)) => match m.get(Value::String(k.to_string())) {
                Some(v) => v,
                None => return false,
            },
            (Seg::Index(i), Value::Sequence(s)) => match s.get(*i) {
                Some(v) => v,
                None => return false,
            },
            _ => return false,
        };
    }
    true
}

/// Builds the row's system from the file's policy and the row's keys, or
/// reports why not (at the row's key when the error comes from it).
/// Returns the system, the routes it calls, and the merged policy it was
/// built from (what the model cache stores to build it again).
pub(crate) fn build(
    cx: &mut Ctx<'_>,
    factory: &Factory,
    file_policy: Option<&Value>,
    over: &Value,
    row_path: &[Seg],
    registry: &Arc<Registry>,
) -> Option<(RowSystem, Option<Vec<String>>, Value)> {
    let merged = merge(file_policy.unwrap_or(&Value::Null), over);
    match factory(&merged, registry) {
        Ok(b) => Some((
            RowSystem {
                system: b.system,
                deadline: b.deadline,
            },
            b.routes,
            merged,
        )),
        Err(errors) => {
            for mut e in errors {
                let below = match e.path.first() {
                    Some(Seg::Key(k)) if k == "policy" => e.path[1..].to_vec(),
                    _ => e.path.clone(),
                };
                if written(over, &below) || below.is_empty() {
                    let mut p = row_path.to_vec();
                    p.push(Seg::Key("policy".into()));
                    p.extend(below);
                    e = YamlError { path: p, ..e };
                }
                cx.yaml_error(e);
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_mappings_and_replaces_the_rest() {
        let base: Value =
            serde_yaml::from_str("{ routes: [a, b], backoff: { initial: 1s, factor: 2 } }")
                .unwrap();
        let over: Value = serde_yaml::from_str("{ routes: [c], backoff: { factor: 3 } }").unwrap();
        let want: Value =
            serde_yaml::from_str("{ routes: [c], backoff: { initial: 1s, factor: 3 } }").unwrap();
        assert_eq!(merge(&base, &over), want);
    }
}
