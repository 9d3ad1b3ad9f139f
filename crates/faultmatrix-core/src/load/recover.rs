//! Error recovery for the serde pass: after a shape error, the offending
//! key is removed and the node deserialised again, so one file (and one
//! row) reports every shape error it holds, not only the first, and the
//! rest of the row can still be validated.

use serde::de::DeserializeOwned;

use crate::base::yaml::{self, Seg, Value, YamlError};

/// Most shape errors collected from one node.
const MAX_ERRORS: usize = 32;

/// Deserialises `value` (found at `base`), collecting every shape error.
/// Returns the value with offending keys left out (when what remains
/// deserialises) and the errors, in the order serde met them.
pub fn from_value_all<T: DeserializeOwned>(
    value: &Value,
    base: &[Seg],
) -> (Option<T>, Vec<YamlError>) {
    // The common case: the node is well formed, and nothing is cloned.
    let first = match yaml::from_value::<T>(value, base) {
        Ok(t) => return (Some(t), Vec::new()),
        Err(e) => e,
    };
    let mut v = value.clone();
    let mut errors: Vec<YamlError> = Vec::new();
    let mut pending = Some(first);
    let mut removed: Vec<Vec<Seg>> = Vec::new();
    while errors.len() < MAX_ERRORS {
        let attempt = match pending.take() {
            Some(e) => Err(e),
            None => yaml::from_value::<T>(&v, base),
        };
        match attempt {
            Ok(t) => return (Some(t), errors),
            Err(e) => {
                let rel: Vec<Seg> = e.path.get(base.len()..).unwrap_or_default().to_vec();
                // A required key we removed ourselves: already reported.
                if let Some(field) = quoted(&e.message, "missing field") {
                    let mut p = rel.clone();
                    p.push(Seg::Key(field.into()));
                    if removed.contains(&p) {
                        return (None, errors);
                    }
                }
                let target = removal_target(&v, &rel, &e.message);
                errors.push(e);
                match target {
                    Some(p) if remove(&mut v, &p) => removed.push(p),
                    _ => return (None, errors),
                }
            }
        }
    }
    (None, errors)
}

/// The word in backquotes after `prefix` (`unknown field `x``).
fn quoted(message: &str, prefix: &str) -> Option<String> {
    message
        .strip_prefix(prefix)
        .and_then(|rest| rest.split('`').nth(1))
        .map(str::to_string)
}

/// The key to remove so the error goes away: the unknown key itself, or
/// the deepest mapping key on the error's path.
fn removal_target(v: &Value, rel: &[Seg], message: &str) -> Option<Vec<Seg>> {
    if let Some(field) = quoted(message, "unknown field") {
        let mut p = rel.to_vec();
        if p.last() != Some(&Seg::Key(field.as_str().into())) {
            p.push(Seg::Key(field.into()));
        }
        return Some(p);
    }
    let mut p = rel.to_vec();
    while let Some(last) = p.last() {
        if matches!(last, Seg::Key(_)) && get(v, &p[..p.len() - 1]).is_some_and(Value::is_mapping) {
            return Some(p);
        }
        p.pop();
    }
    None
}

fn get<'a>(v: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    let mut cur = v;
    for seg in path {
        cur = match seg {
            Seg::Key(k) => cur.as_mapping()?.get(k.as_str())?,
            Seg::Index(i) => cur.as_sequence()?.get(*i)?,
        };
    }
    Some(cur)
}

fn remove(v: &mut Value, path: &[Seg]) -> bool {
    let Some((Seg::Key(k), parent)) = path.split_last() else {
        return false;
    };
    let mut cur = v;
    for seg in parent {
        cur = match seg {
            Seg::Key(k) => match cur.as_mapping_mut().and_then(|m| m.get_mut(k.as_str())) {
                Some(c) => c,
                None => return false,
            },
            Seg::Index(i) => match cur.as_sequence_mut().and_then(|s| s.get_mut(*i)) {
                Some(c) => c,
                None => return false,
            },
        };
    }
    cur.as_mapping_mut()
        .and_then(|m| m.remove(k.as_str()))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::raw::RawRow;

    #[test]
    fn collects_every_shape_error_of_a_row() {
        let v: Value = serde_yaml::from_str(
            "name: a\ninejct: {}\ndeadline: 5\nexpect: { stop: success, trcae: x }\n",
        )
        .unwrap();
        let (row, errors) = from_value_all::<RawRow>(&v, &[Seg::Key("rows".into())]);
        let messages: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages.iter().any(|m| m.contains("`inejct`")));
        assert!(messages.iter().any(|m| m.contains("`trcae`")));
        assert!(messages.iter().any(|m| m.contains("no unit")));
        let row = row.expect("what remains deserialises");
        assert_eq!(row.expect.stop.as_deref(), Some("success"));
    }
}
