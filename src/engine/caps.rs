//! Silent caps made loud: a route whose `attempts` is above a registry
//! code's `max_attempts` gets fewer calls for that code than the file
//! says (`attempts: 5` became three calls for a 503). `faultmatrix check`
//! warns, naming both places; the caps themselves are found by
//! [`crate::verdict::caps`], which also explains them in a failing row.

use crate::model::Matrix;
use crate::verdict::caps::{caps, Cap};

/// One warning per route (and place of its `attempts`) that a code caps
/// in some row: the route's line in the matrix, each capping code with
/// where its limit is set (the registry, or `codes:` in the matrix).
pub fn warnings(m: &Matrix) -> Vec<String> {
    // Rows share the file's policy and limits unless they set their own:
    // the same cap is reported once.
    let mut groups: Vec<((String, u64, String), Vec<Cap>)> = Vec::new();
    let mut last: Option<&crate::model::Row> = None;
    for row in &m.rows {
        // Most rows share the file's routes and limits: judged once.
        if last.is_some_and(|l| {
            std::sync::Arc::ptr_eq(&l.settings.attempts, &row.settings.attempts)
                && l.settings.codes == row.settings.codes
        }) {
            continue;
        }
        last = Some(row);
        for cap in caps(m, row) {
            let k = (cap.route.clone(), cap.attempts, cap.attempts_at.clone());
            let i = match groups.iter().position(|(g, _)| *g == k) {
                Some(i) => i,
                None => {
                    groups.push((k, Vec::new()));
                    groups.len() - 1
                }
            };
            if !groups[i].1.contains(&cap) {
                groups[i].1.push(cap);
            }
        }
    }
    groups
        .into_iter()
        .map(|((name, attempts, at), caps)| {
            let caps: Vec<String> = caps
                .iter()
                .map(|c| format!("{} at {} ({})", c.code, c.max, c.max_at))
                .collect();
            format!(
                "warning: route {name} allows {attempts} attempts, but a code's `max_attempts` caps it: {}; for those answers {name} gets at most that many calls\n --> {at}\n  = help: the lower of a route's `attempts` and a code's `max_attempts` applies; `codes: {{ CODE: {{ max_attempts: {attempts} }} }}` in the file or a row raises a code's",
                caps.join(", "),
            )
        })
        .collect()
}
