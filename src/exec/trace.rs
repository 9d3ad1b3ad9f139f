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
use crate::model::{Decision, ExpectedLine};

/// `A1`, or `gpt4#1` when the route name ends in a digit.
pub fn call_label(route: &str, attempt: u32) -> String {
    if route.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{route}#{attempt}")
    } else {
        format!("{route}{attempt}")
    }
}

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
    pub decision: String,
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
        Outcome::Status(s) => s.to_string(),
        Outcome::Timeout => "timeout".into(),
        Outcome::Reset => "reset".into(),
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
                (d.to_string(), Some(wait))
            }
            _ => {
                let d = match ending {
                    Ending::Success => "return",
                    Ending::Failure => "fail",
                    Ending::Hung => "hung",
                    Ending::Aborted => "aborted",
                };
                (d.to_string(), None)
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
        s.push_str(&self.decision);
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

/// Parses one expected line. `routes` are the names a label may use.
pub fn parse_line(text: &str, routes: &[String]) -> Result<ExpectedLine, String> {
    let text = text.trim();
    let mut tokens = text.split_whitespace();
    let label = tokens
        .next()
        .ok_or("empty trace line: expected `<route><attempt> <outcome> [CODE] <decision>`")?;
    let (route, attempt) = parse_label(label, routes)?;
    let outcome = tokens
        .next()
        .ok_or_else(|| format!("`{label}` has no outcome: expected a status such as `503`, or `timeout`, `reset`, `malformed`, `broken`"))?;
    if !(outcome.len() == 3 && outcome.bytes().all(|b| b.is_ascii_digit())
        || OUTCOMES.contains(&outcome))
    {
        return Err(format!(
            "`{outcome}` is not an outcome: expected a status such as `503`, or one of {}",
            OUTCOMES.join(", ")
        ));
    }
    let mut code = None;
    let mut decision = None;
    let mut rest = Vec::new();
    for tok in tokens {
        if decision.is_none() {
            if let Some(d) = Decision::parse(tok) {
                decision = Some(d);
                continue;
            }
            if code.is_none()
                && tok
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            {
                code = Some(tok.to_string());
                continue;
            }
            let hint = crate::base::diag::did_you_mean(tok, Decision::ALL)
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
            return Err(format!(
                "`{tok}` is not a decision: expected one of retry, switch, return, fail{hint}"
            ));
        }
        rest.push(tok);
    }
    let decision = decision.ok_or_else(|| {
        format!("`{text}` has no decision: expected one of retry, switch, return, fail at the end")
    })?;
    let mut line = ExpectedLine {
        text: text.to_string(),
        route,
        attempt,
        outcome: outcome.to_string(),
        code,
        decision,
        wait: None,
        at: None,
        id: None,
        size: None,
    };
    for tok in rest {
        let (k, v) = tok.split_once('=').ok_or_else(|| {
            format!("`{tok}` is not a field: expected `wait=`, `at=`, `id=` or `size=`")
        })?;
        match k {
            "wait" => line.wait = Some(DurationSpec::parse(v).map_err(|e| format!("wait: {e}"))?),
            "at" => line.at = Some(DurationSpec::parse(v).map_err(|e| format!("at: {e}"))?),
            "id" => line.id = Some(v.to_string()),
            "size" => {
                line.size = Some(
                    v.parse()
                        .map_err(|_| format!("size: `{v}` is not a number of bytes"))?,
                )
            }
            other => {
                let hint = crate::base::diag::did_you_mean(other, ["wait", "at", "id", "size"])
                    .map(|h| format!(" ({h})"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown field `{other}`: expected `wait=`, `at=`, `id=` or `size=`{hint}"
                ));
            }
        }
    }
    if matches!(decision, Decision::Return | Decision::Fail) && line.wait.is_some() {
        return Err(format!(
            "`{text}` ends the run ({}) but gives a wait: only `retry` and `switch` are followed by a wait",
            decision.as_str()
        ));
    }
    Ok(line)
}

/// Outcome words other than a status.
pub const OUTCOMES: [&str; 6] = [
    "timeout",
    "reset",
    "malformed",
    "broken",
    "unanswered",
    "unscripted",
];

fn parse_label(label: &str, routes: &[String]) -> Result<(String, u32), String> {
    let (name, num) = match label.split_once('#') {
        Some((n, a)) => (n, a),
        None => {
            let digits = label.len() - label.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            if digits == 0 {
                return Err(format!(
                    "`{label}` has no attempt number: write the route and the attempt, as in `A1`"
                ));
            }
            // Prefer a declared route that the label starts with.
            let mut found = None;
            for r in routes {
                if let Some(rest) = label.strip_prefix(r.as_str()) {
                    if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
                        found = Some((&label[..r.len()], rest));
                    }
                }
            }
            found.unwrap_or_else(|| label.split_at(label.len() - digits))
        }
    };
    let attempt: u32 = num
        .parse()
        .map_err(|_| format!("`{label}`: `{num}` is not an attempt number"))?;
    if attempt == 0 {
        return Err(format!(
            "`{label}`: attempts count from 1 (the first call is 1)"
        ));
    }
    if !routes.is_empty() && !routes.iter().any(|r| r == name) {
        let hint = crate::base::diag::did_you_mean(name, routes.iter().map(String::as_str))
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        return Err(format!(
            "`{label}` names route `{name}`, which is not declared: routes are {}{hint}",
            routes.join(", ")
        ));
    }
    Ok((name.to_string(), attempt))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes() -> Vec<String> {
        vec!["A".into(), "B".into(), "gpt4".into()]
    }

    #[test]
    fn parses_full_line() {
        let l = parse_line(
            "A2 503 UPSTREAM_UNAVAILABLE retry wait=0s..1s at=1s",
            &routes(),
        )
        .unwrap();
        assert_eq!((l.route.as_str(), l.attempt), ("A", 2));
        assert_eq!(l.code.as_deref(), Some("UPSTREAM_UNAVAILABLE"));
        assert_eq!(l.decision, Decision::Retry);
        assert!(l.wait.is_some() && l.at.is_some());
        let l = parse_line("gpt4#3 200 return", &routes()).unwrap();
        assert_eq!((l.route.as_str(), l.attempt, l.code), ("gpt4", 3, None));
    }

    #[test]
    fn explains_bad_lines() {
        let e = parse_line("C1 200 return", &routes()).unwrap_err();
        assert!(e.contains("route `C`"), "{e}");
        let e = parse_line("A1 200 retrun", &routes()).unwrap_err();
        assert!(e.contains("did you mean `return`"), "{e}");
        let e = parse_line("A1 200 return wait=1s", &routes()).unwrap_err();
        assert!(e.contains("only `retry` and `switch`"), "{e}");
        assert!(parse_line("A 200 return", &routes())
            .unwrap_err()
            .contains("attempt"));
        assert!(parse_line("A0 200 return", &routes())
            .unwrap_err()
            .contains("count from 1"));
    }
}
