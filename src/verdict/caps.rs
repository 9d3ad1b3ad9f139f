//! Limits explained: where a registry code's `max_attempts` caps a route
//! below its `attempts` (`attempts: 5` became three calls for a 503), with
//! both places, for `faultmatrix check`'s warning and for a failing row's
//! diff ("route A switched after 3 calls, not 5: ...").
//!
//! A code's limit is the registry's, or the one the file's or the row's
//! `codes:` sets (the row's last); a route's `attempts` is the file's
//! `policy`, or the row's `policy` when the row sets its routes (both kept
//! by loading in the row's settings: a failing row costs no re-read of a
//! large file).

use crate::exec::run::Observation;
use crate::model::{Matrix, Row};

/// One route whose `attempts` a code's `max_attempts` caps, for one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cap {
    /// The route.
    pub route: String,
    /// Its `attempts`.
    pub attempts: u64,
    /// Where `attempts` is written: `m.yaml:3:33`.
    pub attempts_at: String,
    /// The capping code.
    pub code: String,
    /// Its `max_attempts`.
    pub max: u32,
    /// Where the limit is set: `built-in registry`, `codes.yaml:12`, or
    /// `m.yaml:4:40, \`codes\``.
    pub max_at: String,
}

/// The caps in force for a row of a matrix on the reference system (other
/// systems' policies are their own: none). Reads what loading kept (the
/// written `attempts`, the `codes` limits, the registry) and the matrix's
/// position index, never the file's text again.
pub fn caps(m: &Matrix, row: &Row) -> Vec<Cap> {
    let mut out = Vec::new();
    for w in row.settings.attempts.iter() {
        let mut attempts_at: Option<String> = None;
        for c in m.registry.codes.iter().filter(|c| c.def.retryable) {
            let set = row
                .settings
                .codes
                .iter()
                .rev()
                .find(|l| l.code == c.def.name);
            let max = match (set, c.def.max_attempts) {
                (Some(l), _) => l.max_attempts,
                (None, Some(max)) => max,
                (None, None) => continue,
            };
            if u64::from(max) >= w.attempts {
                continue;
            }
            let max_at = match set {
                Some(l) => {
                    let p = m.pos(&l.path);
                    format!("{}:{}:{}, `codes`", m.file, p.line, p.col)
                }
                None if c.line == 0 => m.registry.origin.clone(),
                None => format!("{}:{}", m.registry.origin, c.line),
            };
            let attempts_at = attempts_at
                .get_or_insert_with(|| {
                    let p = m.pos(&w.path);
                    format!("{}:{}:{}", m.file, p.line, p.col)
                })
                .clone();
            out.push(Cap {
                route: w.route.clone(),
                attempts: w.attempts,
                attempts_at,
                code: c.def.name.clone(),
                max,
                max_at,
            });
        }
    }
    out
}

/// Why a route stopped short, for a failing row's report: one line per
/// route whose last call was cut by a code's `max_attempts` below the
/// route's `attempts` (the route switched, or the run stopped).
pub fn explain(m: &Matrix, row: &Row, obs: &Observation) -> Vec<String> {
    let caps = caps(m, row);
    if caps.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, line) in obs.lines.iter().enumerate() {
        if !matches!(line.decision, "switch" | "fail") {
            continue;
        }
        // The route's last call.
        if obs.lines[i + 1..].iter().any(|l| l.route == line.route) {
            continue;
        }
        let Some(code) = &line.code else { continue };
        let Some(cap) = caps.iter().find(|c| {
            c.route == line.route
                && &c.code == code
                && u64::from(line.attempt) >= u64::from(c.max)
                && u64::from(line.attempt) < c.attempts
        }) else {
            continue;
        };
        let what = if line.decision == "switch" {
            "switched"
        } else {
            "stopped"
        };
        out.push(format!(
            "route {} {what} after {} call{}, not {}: {} caps it at {} ({}), below the route's `attempts: {}` ({}); set `codes: {{ {}: {{ max_attempts: {} }} }}` in the row or file to allow more",
            cap.route,
            line.attempt,
            if line.attempt == 1 { "" } else { "s" },
            cap.attempts,
            cap.code,
            cap.max,
            cap.max_at,
            cap.attempts,
            cap.attempts_at,
            cap.code,
            cap.attempts,
        ));
    }
    out
}
