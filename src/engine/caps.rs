//! Silent caps made loud: a route whose `attempts` is above a registry
//! code's `max_attempts` gets fewer calls for that code than the file
//! says (`attempts: 5` became three calls for a 503). `faultmatrix check`
//! warns, naming both places.

use crate::base::yaml::{self, Seg, Value};
use crate::model::Matrix;

/// One warning per route of the reference policy whose attempts a code
/// caps: the route's line in the matrix, each capping code with its line
/// in the registry.
pub fn warnings(m: &Matrix) -> Vec<String> {
    if m.system_name() != "reference" {
        return Vec::new();
    }
    let Ok(doc) = yaml::parse_value(&m.source) else {
        return Vec::new();
    };
    let Some(routes) = doc
        .get("policy")
        .and_then(|p| p.get("routes"))
        .and_then(Value::as_sequence)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, r) in routes.iter().enumerate() {
        let (Some(name), Some(attempts)) = (
            r.get("name").and_then(Value::as_str),
            r.get("attempts").and_then(Value::as_u64),
        ) else {
            continue;
        };
        let caps: Vec<String> = m
            .registry
            .codes
            .iter()
            .filter(|c| c.def.retryable)
            .filter_map(|c| c.def.max_attempts.map(|max| (c, max)))
            .filter(|(_, max)| u64::from(*max) < attempts)
            .map(|(c, max)| match c.line {
                0 => format!("{} at {max} ({})", c.def.name, m.registry.origin),
                line => format!("{} at {max} ({}:{line})", c.def.name, m.registry.origin),
            })
            .collect();
        if caps.is_empty() {
            continue;
        }
        let at = m.pos(&[
            Seg::Key("policy".into()),
            Seg::Key("routes".into()),
            Seg::Index(i),
            Seg::Key("attempts".into()),
        ]);
        out.push(format!(
            "warning: route {name} allows {attempts} attempts, but the registry caps {}: for those answers {name} gets at most that many calls\n --> {}:{}:{}\n  = help: the lower of a route's `attempts` and a code's `max_attempts` applies",
            caps.join(", "),
            m.file,
            at.line,
            at.col
        ));
    }
    out
}
