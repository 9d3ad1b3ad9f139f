//! Trace text: one line per call, `A1 503 UPSTREAM_UNAVAILABLE retry wait=1s`.
//!
//! The observed trace is derived from what the scripted transport saw
//! (starts, ends, answers) and from the system's final result: decisions and
//! waits are never reported by the system. Observed lines are rendered in
//! the shape of the expected ones (a wait inside an expected range is shown
//! as the range; optional fields appear only where expected), so a diff
//! shows only real differences.

use std::time::Duration;

use crate::base::duration::{self, DurationSpec};
use crate::exec::scripted::{CallRecord, Outcome};
use crate::model::registry::{Observed, Registry};
use crate::model::ExpectedLine;

pub use crate::base::label::call_label;

/// One observed call, ready to print.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedLine {
    /// Route.
    pub route: String,
    /// Attempt on the route.
    pub attempt: u32,
    /// `503`, `timeout`, `reset`, `malformed`, `broken`, `unanswered`.
    pub outcome: String,
    /// Normalized code, `None` for success.
    pub code: Option<String>,
    /// `retry`, `switch`, `return`, `fail`; `hung` or `aborted` when the
    /// system never returned.
    pub decision: &'static str,
    /// Wait before the next call, when there is one.
    pub wait: Option<Duration>,
    /// Start time since the row began.
    pub at: Duration,
    /// Request id sent.
    pub id: Option<String>,
    /// Request size.
    pub size: u64,
    /// Whether the call came after the system had returned.
    pub late: bool,
}

/// Outcome token of a call.
pub fn outcome_token(o: &Outcome) -> String {
    match o {
        Outcome::Pending => "unanswered".into(),
        Outcome::Unscripted => "unscripted".into(),
        Outcome::Status(s) => crate::base::label::status_label(*s),
        Outcome::Timeout => "timeout".into(),
        Outcome::Reset => "reset".into(),
        Outcome::Refused => "refused".into(),
        Outcome::Malformed => "malformed".into(),
        Outcome::Broken { .. } => "broken".into(),
    }
}

/// How the run ended, for deriving the last decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The system returned success.
    Success,
    /// The system returned an error.
    Failure,
    /// The system was still running when the row's budget ran out.
    Hung,
    /// The harness stopped the system (extra call, runaway).
    Aborted,
}

/// Builds observed lines from call records.
pub fn observe(
    calls: &[CallRecord],
    returned_at: Option<Duration>,
    ending: Ending,
    registry: &Registry,
    body_paths: &[String],
) -> Vec<ObservedLine> {
    let mut out = Vec::with_capacity(calls.len());
    for (i, c) in calls.iter().enumerate() {
        let late = returned_at.is_some_and(|r| c.started > r);
        let next = calls.get(i + 1);
        let code = match &c.outcome {
            Outcome::Pending | Outcome::Unscripted => None,
            Outcome::Status(s) => registry
                .classify(
                    Observed::Response {
                        status: *s,
                        body: c.body.as_deref(),
                    },
                    body_paths,
                )
                .map(|k| k.code),
            Outcome::Timeout => registry
                .classify(Observed::Timeout, body_paths)
                .map(|k| k.code),
            Outcome::Reset => registry
                .classify(Observed::Reset, body_paths)
                .map(|k| k.code),
            Outcome::Refused => registry
                .classify(Observed::Refused, body_paths)
                .map(|k| k.code),
            Outcome::Malformed => registry
                .classify(Observed::Malformed, body_paths)
                .map(|k| k.code),
            Outcome::Broken { .. } => registry
                .classify(Observed::Broken, body_paths)
                .map(|k| k.code),
        };
        let (decision, wait) = match next {
            Some(n) if late || returned_at.is_none_or(|r| n.started <= r) => {
                let end = c.ended.unwrap_or(c.started);
                let wait = n.started.saturating_sub(end);
                let d = if n.route == c.route {
                    "retry"
                } else {
                    "switch"
                };
                (d, Some(wait))
            }
            _ => {
                let d = match ending {
                    Ending::Success => "return",
                    Ending::Failure => "fail",
                    Ending::Hung => "hung",
                    Ending::Aborted => "aborted",
                };
                (d, None)
            }
        };
        out.push(ObservedLine {
            route: c.route.clone(),
            attempt: c.attempt,
            outcome: outcome_token(&c.outcome),
            code,
            decision,
            wait,
            at: c.started,
            id: c.request.request_id.clone(),
            size: c.request.size,
            late,
        });
    }
    out
}

fn spec_text(spec: Option<&DurationSpec>, actual: Duration) -> String {
    match spec {
        Some(s) if s.holds(actual) => s.to_string(),
        _ => duration::format(actual),
    }
}

impl ObservedLine {
    /// Canonical text, shaped like `expected` when given.
    pub fn render(&self, expected: Option<&ExpectedLine>) -> String {
        let mut s = format!("{} {}", call_label(&self.route, self.attempt), self.outcome);
        if let Some(code) = &self.code {
            s.push(' ');
            s.push_str(code);
        }
        s.push(' ');
        s.push_str(self.decision);
        if let Some(w) = self.wait {
            let exp = expected.and_then(|e| e.wait.as_ref());
            if !w.is_zero() || exp.is_some() {
                s.push_str(" wait=");
                s.push_str(&spec_text(exp, w));
            }
        }
        if let Some(e) = expected {
            if let Some(at) = &e.at {
                s.push_str(" at=");
                s.push_str(&spec_text(Some(at), self.at));
            }
            if e.id.is_some() {
                s.push_str(" id=");
                s.push_str(self.id.as_deref().unwrap_or("-"));
            }
            if e.size.is_some() {
                s.push_str(&format!(" size={}", self.size));
            }
        }
        s
    }
}

pub use crate::load::trace_line::OUTCOMES;
