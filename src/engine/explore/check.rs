//! Checking one observed run against invariants. Every check reads what
//! was observed on the wire (calls, their answers, gaps between them), how
//! the system ended, and what the file declares (its policy, registry and
//! the case's own deadline and draws); nothing the system reports about
//! its own decisions is trusted. A violation names the invariant and the
//! call that broke it.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::base::duration::format as dur;
use crate::base::label::call_label;
use crate::engine::explore::case::{Answer, Case, Step};
use crate::exec::run::{Observation, RunEnd};
use crate::exec::scripted::{CallRecord, Outcome};
use crate::load::policy::{AboveCap, Backoff, Jitter, Policy};
use crate::model::invariants::{Builtin, Invariant, Rule};
use crate::model::registry::{Observed, Registry};

/// What the file declares: the policy (when it is the reference system's
/// shape), the routes, the registry and the body paths classification uses.
#[derive(Debug, Clone)]
pub struct Declared {
    /// The `policy:` block read as the reference policy, if it is one.
    pub policy: Option<Policy>,
    /// The system's routes, in order.
    pub routes: Vec<String>,
    /// The registry in force.
    pub registry: Arc<Registry>,
    /// Error-body paths for classification (the declared policy's).
    pub body_paths: Vec<String>,
    /// The default virtual wall clock's start (HTTP-dates are read
    /// against a case's own wall, else this).
    pub wall_start: SystemTime,
    /// The trace lines of a run classify calls as these body paths would
    /// (the matrix's body paths are the declared ones), so their codes
    /// are reused instead of classifying every call again.
    pub lines_classify: bool,
}

impl Declared {
    /// Why an invariant cannot be checked for this file, if it cannot.
    pub fn unchecked(&self, inv: &Invariant) -> Option<&'static str> {
        let needs_policy = matches!(
            inv.rule,
            Rule::Builtin(
                Builtin::Budget
                    | Builtin::Guidance
                    | Builtin::Backoff
                    | Builtin::AttemptTimeout
                    | Builtin::JitterDraws
            )
        );
        (needs_policy && self.policy.is_none())
            .then_some("the file's policy is not a reference policy, so its budgets, backoff and timeouts are unknown")
    }

    fn switches(&self, code: &str) -> bool {
        match self.policy.as_ref().and_then(|p| p.switch_on.as_ref()) {
            Some(list) => list.iter().any(|c| c == code),
            None => self.registry.get(code).is_some_and(|d| d.switch),
        }
    }

    /// Whether a code is terminal under the declared policy: neither
    /// retryable nor a switch code.
    pub fn terminal(&self, code: &str) -> bool {
        !self.switches(code) && !self.registry.get(code).is_some_and(|d| d.retryable)
    }
}

/// An invariant broken by a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The invariant's name.
    pub invariant: String,
    /// What happened, naming the call.
    pub message: String,
}

/// A call's label (`A2`), formatted only when a message names it.
#[derive(Clone, Copy)]
struct Label<'a>(&'a str, u32);

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&call_label(self.0, self.1))
    }
}

/// One observed call with what the checks need to know about it. Built
/// once per run and shared by every invariant; nothing here is allocated
/// unless the answer carried headers.
struct Call<'a> {
    rec: &'a CallRecord,
    label: Label<'a>,
    code: Option<Cow<'a, str>>,
    /// The code is terminal under the declared policy.
    terminal: bool,
    success: bool,
    late: bool,
    ambiguous: bool,
    partial: bool,
    guidance: Option<Duration>,
    headers: Vec<(&'a str, &'a str)>,
}

impl Call<'_> {
    fn end(&self) -> Duration {
        self.rec.ended.unwrap_or(self.rec.started)
    }

    fn header(&self) -> String {
        self.headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn classify(d: &Declared, rec: &CallRecord) -> Option<String> {
    let obs = match &rec.outcome {
        Outcome::Pending | Outcome::Unscripted => return None,
        Outcome::Status(s) => Observed::Response {
            status: *s,
            body: rec.body.as_deref(),
        },
        Outcome::Timeout => Observed::Timeout,
        Outcome::Reset => Observed::Reset,
        Outcome::Refused => Observed::Refused,
        Outcome::Malformed => Observed::Malformed,
        Outcome::Broken { .. } => Observed::Broken,
    };
    d.registry.classify(obs, &d.body_paths).map(|c| c.code)
}

/// The headers a step's answer carries: a guidance header, or a code
/// fixture's own headers (borrowed, never cloned).
fn step_headers<'a>(d: &'a Declared, step: &'a Step) -> Vec<(&'a str, &'a str)> {
    match &step.answer {
        Answer::Guidance { header, value, .. } => vec![(header.name(), value.as_str())],
        Answer::Code(c) => match d.registry.get(c).and_then(|def| def.fixture.as_ref()) {
            Some(f) => match &f.entry.answer {
                crate::model::Answer::Response(r) => r
                    .headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
                _ => Vec::new(),
            },
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn calls<'a>(d: &'a Declared, case: &'a Case, obs: &'a Observation) -> Vec<Call<'a>> {
    // The trace's lines classify each call with the file's body paths; when
    // those are the declared ones, their codes are the ones checked here.
    let lines = (d.lines_classify && obs.lines.len() == obs.calls.len()).then_some(&obs.lines);
    obs.calls
        .iter()
        .enumerate()
        .map(|(i, rec)| {
            let step = case
                .route_index(&rec.route)
                .and_then(|ri| case.step(ri, rec.attempt));
            let code: Option<Cow<'a, str>> = match lines {
                Some(lines) => lines[i].code.as_deref().map(Cow::Borrowed),
                None => classify(d, rec).map(Cow::Owned),
            };
            let success = matches!(rec.outcome, Outcome::Status(_)) && code.is_none();
            let headers = step.map_or_else(Vec::new, |s| step_headers(d, s));
            let guidance = match &rec.outcome {
                Outcome::Status(_) if !headers.is_empty() => {
                    let now = case.wall.unwrap_or(d.wall_start) + rec.ended.unwrap_or(rec.started);
                    crate::load::policy::retry_after::guidance(headers.iter().copied(), now)
                }
                _ => None,
            };
            Call {
                label: Label(&rec.route, rec.attempt),
                rec,
                terminal: code.as_deref().is_some_and(|c| d.terminal(c)),
                code,
                success,
                late: rec.started > obs.returned_at,
                // The request may or may not have taken effect.
                ambiguous: matches!(
                    rec.outcome,
                    Outcome::Timeout | Outcome::Reset | Outcome::Malformed | Outcome::Broken { .. }
                ),
                partial: matches!(rec.outcome, Outcome::Broken { data_events } if data_events > 0),
                guidance,
                headers,
            }
        })
        .collect()
}

fn scale(d: Duration, by: f64) -> Duration {
    let n = (d.as_nanos() as f64 * by).round();
    if n >= u64::MAX as f64 {
        Duration::from_nanos(u64::MAX)
    } else {
        Duration::from_nanos(n.max(0.0) as u64)
    }
}

fn jitter_name(j: Jitter) -> &'static str {
    match j {
        Jitter::None => "no jitter",
        Jitter::Full => "full jitter",
        Jitter::Equal => "equal jitter",
        Jitter::Decorrelated => "decorrelated jitter",
    }
}

/// The backoff the declared policy gives retry `n` (0-based) with draw `u`.
fn backoff(b: &Backoff, n: u32, previous: Duration, u: f64) -> Duration {
    let capped = scale(b.initial, b.factor.powi(n.min(1024) as i32)).min(b.cap);
    match b.jitter {
        Jitter::None => capped,
        Jitter::Full => scale(capped, u),
        Jitter::Equal => capped / 2 + scale(capped / 2, u),
        Jitter::Decorrelated => {
            let hi = (previous * 3).max(b.initial);
            (b.initial + scale(hi - b.initial, u)).min(b.cap)
        }
    }
}

/// The guidance the declared policy waits for: `None` when it is not
/// honoured or refused.
fn honoured(p: &Policy, g: Option<Duration>) -> Option<Duration> {
    let g = g.filter(|_| p.retry_after.honor)?;
    if g > p.retry_after.cap {
        match p.retry_after.above_cap {
            AboveCap::Refuse => None,
            AboveCap::Clamp => Some(p.retry_after.cap),
        }
    } else {
        Some(g)
    }
}

fn route_budget(p: &Policy, route: &str) -> Option<u32> {
    p.routes
        .iter()
        .find(|r| r.name == route)
        .map(|r| r.attempts)
}

/// Checks one invariant; `None` when it holds.
pub fn check(inv: &Invariant, d: &Declared, case: &Case, obs: &Observation) -> Option<Violation> {
    let calls = calls(d, case, obs);
    let run: Vec<&Call<'_>> = calls.iter().filter(|c| !c.late).collect();
    check_calls(inv, d, case, obs, &calls, &run).map(|message| Violation {
        invariant: inv.name.clone(),
        message,
    })
}

/// Checks every invariant; the violations in checking order.
pub fn check_all(
    invariants: &[Invariant],
    d: &Declared,
    case: &Case,
    obs: &Observation,
) -> Vec<Violation> {
    let calls = calls(d, case, obs);
    let run: Vec<&Call<'_>> = calls.iter().filter(|c| !c.late).collect();
    invariants
        .iter()
        .filter(|i| d.unchecked(i).is_none())
        .filter_map(|inv| {
            check_calls(inv, d, case, obs, &calls, &run).map(|message| Violation {
                invariant: inv.name.clone(),
                message,
            })
        })
        .collect()
}

fn check_calls(
    inv: &Invariant,
    d: &Declared,
    case: &Case,
    obs: &Observation,
    calls: &[Call<'_>],
    run: &[&Call<'_>],
) -> Option<String> {
    if d.unchecked(inv).is_some() {
        return None;
    }
    let deadline = case
        .deadline
        .or_else(|| d.policy.as_ref().and_then(|p| p.deadline));
    let policy = d.policy.as_ref();
    let b = match &inv.rule {
        Rule::Builtin(b) => *b,
        Rule::MaxCalls { route, calls: most } => {
            let mut n = 0;
            for c in calls {
                if route.as_ref().is_none_or(|r| *r == c.rec.route) {
                    n += 1;
                    if n > *most {
                        let on = route
                            .as_ref()
                            .map_or("in all".to_string(), |r| format!("on route {r}"));
                        return Some(format!(
                            "{} is call {n} {on}; at most {most} allowed",
                            c.label
                        ));
                    }
                }
            }
            return None;
        }
        Rule::MaxElapsed(most) => {
            return (obs.returned_at > *most).then(|| {
                format!(
                    "the system returned at {}, later than {}",
                    dur(obs.returned_at),
                    dur(*most)
                )
            })
        }
        Rule::NeverAfter(code) => {
            let i = calls.iter().position(|c| c.code.as_deref() == Some(code))?;
            let next = calls.get(i + 1)?;
            return Some(format!(
                "{} was called after {} answered {code}",
                next.label, calls[i].label
            ));
        }
    };
    match b {
        Builtin::Budget => {
            let p = policy?;
            let mut seen: Vec<(&str, u32)> = Vec::new();
            for c in calls {
                let Some(budget) = route_budget(p, &c.rec.route) else {
                    return Some(format!(
                        "{} is on route {}, which the policy does not declare",
                        c.label, c.rec.route
                    ));
                };
                let n = match seen.iter_mut().find(|(r, _)| *r == c.rec.route) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        seen.push((&c.rec.route, 1));
                        1
                    }
                };
                if n > budget {
                    return Some(format!(
                        "{} is call {n} on route {}, whose budget is {budget} attempt{} (the first call included)",
                        c.label,
                        c.rec.route,
                        if budget == 1 { "" } else { "s" }
                    ));
                }
            }
            let total: u32 = p.routes.iter().map(|r| r.attempts).sum();
            (calls.len() as u32 > total).then(|| {
                format!(
                    "{} calls in all, more than the {total} the budgets add up to",
                    calls.len()
                )
            })
        }
        Builtin::NoCallAfterSuccess => {
            let i = calls.iter().position(|c| c.success)?;
            let next = calls.get(i + 1)?;
            Some(format!(
                "{} was called after {} succeeded ({})",
                next.label,
                calls[i].label,
                crate::exec::trace::outcome_token(&calls[i].rec.outcome)
            ))
        }
        Builtin::Terminal => {
            for (i, c) in calls.iter().enumerate() {
                if c.late || c.partial {
                    continue;
                }
                let Some(code) = c.code.as_deref().filter(|_| c.terminal) else {
                    continue;
                };
                if let Some(next) = calls.get(i + 1) {
                    return Some(format!(
                        "{} was called after {} answered {code}, a terminal code (one call, then fail)",
                        next.label, c.label
                    ));
                }
                match &obs.end {
                    RunEnd::Returned(Ok(_)) => {
                        return Some(format!(
                            "the system reported success after {}'s terminal answer {code}",
                            c.label
                        ))
                    }
                    RunEnd::Returned(Err(_)) => {
                        let after = obs.returned_at.saturating_sub(c.end());
                        if !after.is_zero() {
                            return Some(format!(
                                "{} of virtual time passed after {}'s terminal answer {code} (no timer may follow a terminal code)",
                                dur(after),
                                c.label
                            ));
                        }
                        if obs.escalations.len() != 1 {
                            return Some(format!(
                                "{} answered {code}, a terminal code, and the run escalated {} time{} (exactly once expected)",
                                c.label,
                                obs.escalations.len(),
                                if obs.escalations.len() == 1 { "" } else { "s" }
                            ));
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        Builtin::Deadline => {
            let dl = deadline?;
            for c in run {
                if c.rec.started >= dl {
                    return Some(format!(
                        "{} started at {}, at or after the {} deadline",
                        c.label,
                        dur(c.rec.started),
                        dur(dl)
                    ));
                }
                if c.end() > dl {
                    return Some(format!(
                        "{} ran until {}, past the {} deadline",
                        c.label,
                        dur(c.end()),
                        dur(dl)
                    ));
                }
            }
            (obs.returned_at > dl).then(|| {
                format!(
                    "the system returned at {}, after the {} deadline{}",
                    dur(obs.returned_at),
                    dur(dl),
                    run.last()
                        .map(|c| format!(" (last call {})", c.label))
                        .unwrap_or_default()
                )
            })
        }
        Builtin::Guidance => {
            let p = policy?;
            for w in run.windows(2) {
                let (c, next) = (w[0], w[1]);
                let Some(g) = c.guidance.filter(|_| p.retry_after.honor) else {
                    continue;
                };
                if next.rec.route != c.rec.route {
                    continue;
                }
                let wait = next.rec.started.saturating_sub(c.end());
                let required = if g > p.retry_after.cap {
                    if p.retry_after.above_cap == AboveCap::Refuse {
                        return Some(format!(
                            "{} retried after {}'s guidance of {} ({}), above the {} cap, which the policy refuses",
                            next.label,
                            c.label,
                            dur(g),
                            c.header(),
                            dur(p.retry_after.cap)
                        ));
                    }
                    p.retry_after.cap
                } else {
                    g
                };
                if wait < required {
                    return Some(format!(
                        "{} → {} waited {}, less than the server's guidance of {} ({}{})",
                        c.label,
                        next.label,
                        dur(wait),
                        dur(required),
                        c.header(),
                        if required < g { ", clamped to the cap" } else { "" }
                    ));
                }
            }
            if obs.stop() == "guidance-refused" {
                let last = run.last()?;
                let above = last.guidance.is_some_and(|g| g > p.retry_after.cap);
                if !(above && p.retry_after.honor && p.retry_after.above_cap == AboveCap::Refuse) {
                    return Some(format!(
                        "the run stopped `guidance-refused` after {} ({}), but the policy {}",
                        last.label,
                        if last.header().is_empty() { "no guidance".into() } else { last.header() },
                        if p.retry_after.above_cap == AboveCap::Clamp {
                            format!("clamps guidance above the {} cap", dur(p.retry_after.cap))
                        } else {
                            "refuses only guidance above the cap".to_string()
                        }
                    ));
                }
            }
            None
        }
        Builtin::Backoff => {
            let p = policy?;
            let mut k = 0usize;
            let mut previous: Vec<(String, Duration)> = Vec::new();
            for w in run.windows(2) {
                let (c, next) = (w[0], w[1]);
                let wait = next.rec.started.saturating_sub(c.end());
                // After a success, a terminal code or partial output the
                // policy declares no wait at all: other invariants judge
                // any call that follows.
                if c.success || c.partial || c.terminal {
                    continue;
                }
                if next.rec.route != c.rec.route {
                    if wait != p.switch_delay {
                        return Some(format!(
                            "{} → {} waited {}; the declared switch delay is {}",
                            c.label,
                            next.label,
                            dur(wait),
                            dur(p.switch_delay)
                        ));
                    }
                    continue;
                }
                let Some(route) = p.routes.iter().find(|r| r.name == c.rec.route) else {
                    continue;
                };
                let b = p.backoff_for(route);
                let prev = previous
                    .iter()
                    .find(|(r, _)| *r == route.name)
                    .map_or(b.initial, |(_, d)| *d);
                let u = if b.jitter == Jitter::None {
                    0.0
                } else {
                    k += 1;
                    case.draws.get(k - 1).copied().unwrap_or(0.0)
                };
                let n = c.rec.attempt.saturating_sub(1);
                let delay = backoff(b, n, prev, u);
                match previous.iter_mut().find(|(r, _)| *r == route.name) {
                    Some(slot) => slot.1 = delay,
                    None => previous.push((route.name.clone(), delay)),
                }
                let refused = c.guidance.is_some_and(|g| {
                    p.retry_after.honor
                        && g > p.retry_after.cap
                        && p.retry_after.above_cap == AboveCap::Refuse
                });
                if refused {
                    continue;
                }
                let want = honoured(p, c.guidance).map_or(delay, |g| delay.max(g));
                // Timers fire on whole milliseconds (tokio's wheel), so a
                // wait may be up to 1ms longer than computed, never shorter.
                let early = want.saturating_sub(wait) > Duration::from_micros(1);
                let late = wait.saturating_sub(want) >= Duration::from_millis(1);
                if early || late {
                    let draw = if b.jitter == Jitter::None {
                        String::new()
                    } else {
                        format!(", draw {u}")
                    };
                    let guided = if want > delay {
                        format!(", raised to the server's guidance {}", dur(want))
                    } else {
                        String::new()
                    };
                    return Some(format!(
                        "{} → {} waited {}; the declared backoff gives {}{guided} (retry {} on route {}: initial {}, factor {}, cap {}, {}{draw})",
                        c.label,
                        next.label,
                        dur(wait),
                        dur(delay),
                        n + 1,
                        route.name,
                        dur(b.initial),
                        b.factor,
                        dur(b.cap),
                        jitter_name(b.jitter)
                    ));
                }
            }
            None
        }
        Builtin::AttemptTimeout => {
            let p = policy?;
            for c in run {
                let Some(ended) = c.rec.ended else { continue };
                let left = deadline.map(|dl| dl.saturating_sub(c.rec.started));
                let limit = left.map_or(p.attempt_timeout, |l| l.min(p.attempt_timeout));
                let took = ended.saturating_sub(c.rec.started);
                if took > limit {
                    return Some(format!(
                        "{} ran {}, longer than the {} attempt timeout{}",
                        c.label,
                        dur(took),
                        dur(limit),
                        if limit < p.attempt_timeout {
                            " (what was left of the deadline)"
                        } else {
                            ""
                        }
                    ));
                }
            }
            None
        }
        Builtin::NeverCalledAgain => {
            let late = calls.iter().find(|c| c.late)?;
            Some(format!(
                "{} at {} came after the system returned at {}",
                late.label,
                dur(late.rec.started),
                dur(obs.returned_at)
            ))
        }
        Builtin::Returns => match &obs.end {
            RunEnd::Returned(_) => None,
            RunEnd::Hung => Some(format!(
                "the system was still running at {}{}",
                dur(obs.returned_at),
                calls
                    .last()
                    .map(|c| format!(" after {}", c.label))
                    .unwrap_or_default()
            )),
            RunEnd::Aborted => Some(format!(
                "the harness stopped the system{}: {}",
                calls
                    .last()
                    .map(|c| format!(" at {}", c.label))
                    .unwrap_or_default(),
                obs.failures.first().map_or("aborted", |s| s.as_str())
            )),
        },
        Builtin::OneEscalation => {
            let n = obs.escalations.len();
            let last = run.last().map_or("the run".to_string(), |c| c.label.to_string());
            match &obs.end {
                RunEnd::Returned(Err(e)) if n != 1 => Some(format!(
                    "the run failed (stop `{}`, after {last}) and escalated {n} time{} (exactly once expected)",
                    e.stop,
                    if n == 1 { "" } else { "s" }
                )),
                RunEnd::Returned(Ok(_)) if n > 0 => Some(format!(
                    "the run succeeded (after {last}) and still escalated {n} time{}",
                    if n == 1 { "" } else { "s" }
                )),
                _ => None,
            }
        }
        Builtin::NoReplay => {
            let i = run.iter().position(|c| c.partial)?;
            let next = run.get(i + 1)?;
            Some(format!(
                "{} was sent after {}'s stream delivered output and broke (a replay{})",
                next.label,
                run[i].label,
                if next.rec.route != run[i].rec.route {
                    " on another route"
                } else {
                    ""
                }
            ))
        }
        Builtin::CreateKey => {
            if policy.is_some_and(|p| p.retry_creates_without_key) {
                return None;
            }
            for w in run.windows(2) {
                let (c, next) = (w[0], w[1]);
                if c.rec.request.create
                    && c.rec.request.idempotency_key.is_none()
                    && c.ambiguous
                {
                    return Some(format!(
                        "{} resent a create that carries no idempotency key after {} {} (its outcome is unknown: a duplicate may be created)",
                        next.label,
                        c.label,
                        match c.rec.outcome {
                            Outcome::Timeout => "timed out",
                            Outcome::Reset => "was reset",
                            Outcome::Broken { .. } => "broke off its stream",
                            _ => "got a malformed answer",
                        }
                    ));
                }
            }
            None
        }
        Builtin::HonestStop => {
            let last = run.last();
            let label = last.map_or("no call".to_string(), |c| c.label.to_string());
            match &obs.end {
                RunEnd::Returned(Ok(_)) => {
                    let c = last?;
                    (!c.success).then(|| {
                        format!(
                            "the system reported success, but its last call {} answered {}",
                            c.label,
                            crate::exec::trace::outcome_token(&c.rec.outcome)
                        )
                    })
                }
                RunEnd::Returned(Err(e)) => match e.stop.as_str() {
                    "terminal" => {
                        let c = last?;
                        match c.code.as_deref() {
                            Some(code) if !d.terminal(code) => Some(format!(
                                "the run stopped `terminal` after {} answered {code}, which the declared policy {}",
                                c.label,
                                if d.switches(code) { "switches on (to the next route)" } else { "retries" }
                            )),
                            _ => None,
                        }
                    }
                    "partial-output" => (!run.iter().any(|c| c.partial)).then(|| {
                        format!("the run stopped `partial-output` after {label}, but no call delivered output")
                    }),
                    "deadline" => deadline.is_none().then(|| {
                        format!("the run stopped `deadline` after {label}, but no deadline is set")
                    }),
                    "exhausted" => {
                        let c = last?;
                        let last_route = d.routes.last()?;
                        (c.rec.route != *last_route).then(|| {
                            format!(
                                "the run stopped `exhausted` after {}, but route {last_route} was never tried",
                                c.label
                            )
                        })
                    }
                    "not-idempotent" => {
                        let c = last?;
                        (!(c.ambiguous && c.rec.request.create && c.rec.request.idempotency_key.is_none())).then(|| {
                            format!(
                                "the run stopped `not-idempotent` after {}, which was not a create with an unknown outcome sent without a key",
                                c.label
                            )
                        })
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        Builtin::RequestId => match &obs.end {
            RunEnd::Returned(Err(e)) if e.request_id.as_deref() != Some(&obs.request_id) => {
                Some(format!(
                    "the final error's request id is `{}`, not `{}`, the id of the request{}",
                    e.request_id.as_deref().unwrap_or("-"),
                    obs.request_id,
                    run.first()
                        .map(|c| format!(" (sent with {})", c.label))
                        .unwrap_or_default()
                ))
            }
            _ => None,
        },
        Builtin::BoundedError => match &obs.end {
            RunEnd::Returned(Err(e)) if e.attempts.len() > 16 => Some(format!(
                "the final error lists {} attempts after {} calls (at most 16, the rest counted in `omitted`)",
                e.attempts.len(),
                run.len()
            )),
            _ => None,
        },
        Builtin::SameRequest => {
            let first = run.first()?;
            let a = &first.rec.request;
            for c in &run[1..] {
                let b = &c.rec.request;
                let what = if b.size != a.size {
                    format!("size {} where {} sent {}", b.size, first.label, a.size)
                } else if b.request_id != a.request_id {
                    format!(
                        "request id {} where {} sent {}",
                        b.request_id.as_deref().unwrap_or("-"),
                        first.label,
                        a.request_id.as_deref().unwrap_or("-")
                    )
                } else if b.model != a.model {
                    format!("another model than {}", first.label)
                } else if b.stream != a.stream {
                    format!("stream={} where {} sent stream={}", b.stream, first.label, a.stream)
                } else {
                    continue;
                };
                return Some(format!("{} was sent with {what}", c.label));
            }
            None
        }
        Builtin::JitterDraws => {
            let p = policy?;
            let overrun = obs
                .failures
                .iter()
                .any(|f| f.contains("jitter draw") && f.contains("asked for more"));
            if !overrun {
                return None;
            }
            let jittered = |route: &str| {
                p.routes
                    .iter()
                    .find(|r| r.name == route)
                    .is_some_and(|r| p.backoff_for(r).jitter != Jitter::None)
            };
            let retries = run
                .windows(2)
                .filter(|w| w[0].rec.route == w[1].rec.route && jittered(&w[0].rec.route))
                .count();
            let refused_at_end = matches!(obs.stop(), "deadline" | "guidance-refused")
                && run.last().is_some_and(|c| jittered(&c.rec.route));
            let allowed = retries + refused_at_end as usize;
            (case.draws.len() >= allowed).then(|| {
                format!(
                    "the system drew more jitter than the {} scripted draw{}, though its {retries} jittered retr{} need at most {allowed}{}",
                    case.draws.len(),
                    if case.draws.len() == 1 { "" } else { "s" },
                    if retries == 1 { "y" } else { "ies" },
                    run.last().map(|c| format!(" (last call {})", c.label)).unwrap_or_default()
                )
            })
        }
    }
}
