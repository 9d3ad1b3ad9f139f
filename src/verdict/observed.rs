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
    /// How the wait is labelled when it is not just its duration (an
    /// expected range, `0s..1s`).
    pub wait_text: Option<String>,
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
    /// The row's expected trace drawn the same way (calls placed by their
    /// `at=` or by the expected waits), when the row asserts a trace and
    /// failed: a reviewer compares the two pictures.
    pub expected: Option<Vec<CallView>>,
    /// The expected stop, when asserted.
    pub expected_stop: Option<String>,
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
            decision: l.decision.to_string(),
            start: c.started,
            end: c.ended,
            wait: l.wait,
            wait_text: None,
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
        expected: None,
        expected_stop: None,
    }
}

/// [`observed_run`] of a failed row: with its expected trace as a picture.
pub fn failed_run(matrix: &Matrix, row: &Row, obs: &Observation) -> ObservedRun {
    let mut run = observed_run(matrix, row, obs);
    run.expected = row
        .expect
        .trace
        .as_ref()
        .map(|lines| expected_calls(lines, &run.calls));
    run.expected_stop = row.expect.stop.clone();
    run
}

/// Expected lines placed on the clock: a call starts at its `at=` (the
/// lower bound of a range), else when the previous one ended plus the
/// expected wait (its lower bound). A call takes as long as the observed
/// call of the same label did (an expectation says nothing of latency),
/// else no time.
fn expected_calls(lines: &[crate::model::ExpectedLine], observed: &[CallView]) -> Vec<CallView> {
    use crate::base::duration::DurationSpec;
    let lo = |s: &DurationSpec| match s {
        DurationSpec::Exact(d) => *d,
        DurationSpec::Range(l, _) => *l,
    };
    let mut out: Vec<CallView> = Vec::with_capacity(lines.len());
    let mut next = Duration::ZERO;
    for l in lines {
        let label = crate::exec::trace::call_label(l.route(), l.attempt);
        let start = l.at.as_ref().map_or(next, lo);
        let took = observed
            .iter()
            .find(|c| c.label == label)
            .and_then(|c| c.end.map(|e| e.saturating_sub(c.start)))
            .unwrap_or_default();
        let end = start + took;
        let wait = l.wait.as_ref().map(lo);
        next = end + wait.unwrap_or_default();
        out.push(CallView {
            label,
            route: l.route().to_string(),
            outcome: l.outcome().to_string(),
            code: l.code().map(str::to_string),
            decision: l.decision.as_str().to_string(),
            start,
            end: Some(end),
            wait,
            wait_text: match &l.wait {
                Some(DurationSpec::Range(a, b)) => Some(format!(
                    "{}..{}",
                    crate::base::duration::format(*a),
                    crate::base::duration::format(*b)
                )),
                _ => None,
            },
        });
    }
    out
}
