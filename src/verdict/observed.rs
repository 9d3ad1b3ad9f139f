//! The observed run of a row as reports need it: trace lines and the
//! timings of every call, captured when the row runs.

use std::time::Duration;

use crate::model::{Matrix, Row};

use crate::exec::run::Observation;

/// One call, for pictures: where it sits on the virtual clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallView {
    /// `A1`.
    pub label: String,
    /// Route name.
    pub route: String,
    /// Outcome token (`503`, `timeout`).
    pub outcome: String,
    /// Reason code, if any.
    pub code: Option<String>,
    /// `retry`, `switch`, `return`, `fail`, `hung`.
    pub decision: String,
    /// Start, since the row began.
    pub start: Duration,
    /// End (answer delivered or abandoned), when it ended.
    pub end: Option<Duration>,
    /// Wait before the next call.
    pub wait: Option<Duration>,
}

/// What reports show of a row's run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObservedRun {
    /// The observed trace, one line per call (plain canonical form).
    pub lines: Vec<String>,
    /// Every call with its timings.
    pub calls: Vec<CallView>,
    /// Virtual time when the system returned.
    pub returned_at: Duration,
    /// The deadline in force, when known (row override or the policy's).
    pub deadline: Option<Duration>,
    /// The stop reason.
    pub stop: String,
}

/// Captures a row's observed run.
pub fn observed_run(matrix: &Matrix, row: &Row, obs: &Observation) -> ObservedRun {
    let calls = obs
        .lines
        .iter()
        .zip(&obs.calls)
        .map(|(l, c)| CallView {
            label: crate::exec::trace::call_label(&l.route, l.attempt),
            route: l.route.clone(),
            outcome: l.outcome.clone(),
            code: l.code.clone(),
            decision: l.decision.clone(),
            start: c.started,
            end: c.ended,
            wait: l.wait,
        })
        .collect();
    ObservedRun {
        lines: obs.lines.iter().map(|l| l.render(None)).collect(),
        calls,
        returned_at: obs.returned_at,
        deadline: row
            .settings
            .deadline
            .or(row.settings.system.as_ref().and_then(|s| s.deadline))
            .or(matrix.deadline),
        stop: obs.stop().to_string(),
    }
}
