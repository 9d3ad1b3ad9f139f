//! Generated tests: for every code of a registry, rows that nobody writes.
//!
//! Each code gets model [`Row`]s run against the reference system under a
//! policy derived from the code, through the same run and compare path as
//! written rows. Their ids are `<registry file>::generated::<CODE>::<case>`:
//!
//! | case | when | script | expected |
//! |---|---|---|---|
//! | `terminal` | `retryable: false` | the fixture on A, forever | `A1 … CODE fail`, stop `terminal`, one escalation to `escalate_to`, no virtual time after the answer |
//! | `switch` | `retryable: false, switch: true` | the fixture on A, 200 on B | `A1 … CODE switch`, `B1 200 return` |
//! | `exhausted` | retryable, `max_attempts: N` | the fixture on A, forever | N calls, stop `exhausted`, one escalation, no later call |
//! | `recovers` | retryable, `recovers_after: K` below N | K failures, then 200 | success on call K+1, no escalation |
//! | `Retry-After` | the fixture sends `Retry-After` or `retry-after-ms`, N ≥ 2 | N-1 failures, then 200 | each wait and call time follows `max(backoff, guidance)` |
//!
//! The expected traces are computed here, from the registry and the fixed
//! generated policy (backoff 1s doubling, capped at 30s, no jitter; server
//! guidance honoured up to 60s; a 60s per-attempt timeout), never by running
//! the system. A terminal code is probed with a route budget of 3 and a second
//! route, so a retry (A2) or a fallback (B1) would show.

use std::sync::Arc;
use std::time::Duration;

use crate::base::duration::{self, DurationSpec};
use crate::base::yaml::Seg;
use crate::model::registry::{Code, Registry};
use crate::model::{
    Answer, Entry, Expect, ExpectedError, ExpectedEscalation, Matrix, Repeat, RouteScript, Row,
    Script, Settings, SystemUnderTest,
};

/// First backoff delay of the generated policy.
pub const INITIAL: Duration = Duration::from_secs(1);
/// Growth of the backoff per retry.
pub const FACTOR: u32 = 2;
/// Cap on a computed backoff delay.
pub const CAP: Duration = Duration::from_secs(30);
/// Most server guidance honoured (longer guidance is clamped to this).
pub const GUIDANCE_CAP: Duration = Duration::from_secs(60);
/// Per-attempt timeout (a `timeout` fixture lasts this long).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(60);
/// Route budget used to probe terminal and switch codes.
pub const PROBE_ATTEMPTS: u32 = 3;

/// One kind of generated test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// A terminal code: one call, one escalation, no timer.
    Terminal,
    /// A code that moves to the next route without retrying.
    Switch,
    /// A retryable code that never recovers: `max_attempts` calls.
    Exhausted,
    /// A transient code that recovers after `recovers_after` failures.
    Recovers,
    /// A code whose fixture sends server guidance.
    RetryAfter,
}

impl Case {
    /// The case's name, the last part of the test id.
    pub fn name(self) -> &'static str {
        match self {
            Case::Terminal => "terminal: 1 call, 1 escalation, no timer",
            Case::Switch => "switch: 1 call, then the next route",
            Case::Exhausted => "exhausted: max_attempts calls, 1 escalation, never called again",
            Case::Recovers => "recovers: success after recovers_after failures",
            Case::RetryAfter => "Retry-After: each wait is max(backoff, guidance)",
        }
    }
}

/// The test id of a generated case.
pub fn test_id(registry: &Registry, code: &str, case: Case) -> String {
    format!("{}::{}", registry.origin, row_name(code, case))
}

fn row_name(code: &str, case: Case) -> String {
    format!("generated::{code}::{}", case.name())
}

/// The cases a code gets. None when the code lacks what they need (a
/// declared `retryable`, a fixture, `max_attempts` for a retryable code):
/// the guardrails name such codes.
pub fn cases(def: &Code) -> Vec<Case> {
    let Some(f) = &def.fixture else {
        return Vec::new();
    };
    if !def.retryable_declared {
        return Vec::new();
    }
    if !def.retryable {
        return vec![if def.switch {
            Case::Switch
        } else {
            Case::Terminal
        }];
    }
    let Some(n) = def.max_attempts else {
        return Vec::new();
    };
    let mut out = vec![Case::Exhausted];
    if f.recovers_after.is_some_and(|k| k < n) {
        out.push(Case::Recovers);
    }
    if n >= 2 && guidance(&f.entry, Duration::ZERO).is_some() {
        out.push(Case::RetryAfter);
    }
    out
}

/// The backoff delay before retry number `retry` (0-based), jitter none.
pub fn backoff(retry: u32) -> Duration {
    let mut d = INITIAL;
    for _ in 0..retry {
        d = d.saturating_mul(FACTOR);
        if d >= CAP {
            return CAP;
        }
    }
    d.min(CAP)
}

/// Server guidance a fixture's answer carries, read at `at` (virtual time
/// since the row's start when the answer arrives, for HTTP dates). Answers without a full response
/// (a fault, a stream that breaks after a 2xx) carry none.
pub fn guidance(entry: &Entry, at: Duration) -> Option<Duration> {
    let Answer::Response(r) = &entry.answer else {
        return None;
    };
    if r.stream.is_some() && (200..300).contains(&r.status) {
        return None;
    }
    let now = crate::load::policy::retry_after::default_wall_start() + at;
    crate::load::policy::retry_after::guidance(
        r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        now,
    )
}

/// The wait the generated policy must take before retry `retry` after an
/// answer carrying `guidance`: `max(backoff, min(guidance, cap))`.
pub fn effective_wait(retry: u32, guidance: Option<Duration>) -> Duration {
    let b = backoff(retry);
    match guidance {
        Some(g) => b.max(g.min(GUIDANCE_CAP)),
        None => b,
    }
}

/// The outcome token a fixture's answer shows in a trace.
pub fn outcome(entry: &Entry) -> String {
    match &entry.answer {
        Answer::Response(r) => match &r.stream {
            Some(s) if s.breaks => "broken".into(),
            _ => r.status.to_string(),
        },
        Answer::Timeout => "timeout".into(),
        Answer::Reset => "reset".into(),
        Answer::Refused => "refused".into(),
        Answer::Malformed | Answer::Truncated => "malformed".into(),
    }
}

/// Virtual time one call with this answer takes.
fn call_time(entry: &Entry) -> Duration {
    match entry.answer {
        Answer::Timeout => ATTEMPT_TIMEOUT,
        _ => entry.latency,
    }
}

fn with_repeat(entry: &Entry, repeat: Repeat) -> Entry {
    let mut e = entry.clone();
    e.repeat = repeat;
    e
}

/// Expected lines being written, with the virtual clock they imply.
struct Lines {
    routes: Vec<String>,
    text: Vec<String>,
    at: Duration,
    with_at: bool,
}

impl Lines {
    fn new(routes: &[&str], with_at: bool) -> Self {
        Self {
            routes: routes.iter().map(|r| r.to_string()).collect(),
            text: Vec::new(),
            at: Duration::ZERO,
            with_at,
        }
    }

    /// A call that takes `took` and is followed by `decision` and `wait`.
    fn call(&mut self, label: &str, rest: &str, took: Duration, wait: Option<Duration>) {
        let mut line = format!("{label} {rest}");
        if let Some(w) = wait.filter(|w| !w.is_zero()) {
            line.push_str(&format!(" wait={}", duration::format(w)));
        }
        if self.with_at {
            line.push_str(&format!(" at={}", duration::format(self.at)));
        }
        self.text.push(line);
        self.at += took + wait.unwrap_or_default();
    }

    fn parse(&self) -> Vec<crate::model::ExpectedLine> {
        self.text
            .iter()
            .map(|t| {
                crate::load::trace_line::parse_line(t, &self.routes)
                    .unwrap_or_else(|e| panic!("generated trace line `{t}` does not parse: {e}"))
            })
            .collect()
    }
}

/// `calls` failing calls on A. The last one ends with `last` (`fail`,
/// `switch`) or, when `None`, retries like the others.
fn failing_lines(def: &Code, fixture: &Entry, calls: u32, last: Option<&str>, lines: &mut Lines) {
    let out = outcome(fixture);
    for i in 1..=calls {
        let took = call_time(fixture);
        let rest = format!("{out} {}", def.name);
        match last {
            Some(end) if i == calls => {
                lines.call(&format!("A{i}"), &format!("{rest} {end}"), took, None)
            }
            _ => {
                // Guidance is read when the answer arrives.
                let g = guidance(fixture, lines.at + took);
                let wait = effective_wait(i - 1, g);
                lines.call(&format!("A{i}"), &format!("{rest} retry"), took, Some(wait));
            }
        }
    }
}

fn escalation(def: &Code) -> Vec<ExpectedEscalation> {
    vec![ExpectedEscalation {
        code: def.name.clone(),
        to: def.escalate_to.clone(),
    }]
}

fn error(def: &Code, calls: u32) -> ExpectedError {
    let attempts = (calls as usize <= crate::contracts::system::FinalError::MAX_ATTEMPTS)
        .then(|| (1..=calls).map(|i| format!("A{i} {}", def.name)).collect());
    ExpectedError {
        request_id: Some("$request_id".into()),
        code: Some(def.name.clone()),
        attempts,
        max_len: None,
    }
}

fn row(def: &Code, case: Case, inject: Vec<RouteScript>, lines: &Lines, expect: Expect) -> Row {
    let mut settings = Settings::default();
    // Room for every expected call and then some, so a runaway shows in the
    // trace before the guard stops it.
    let calls = lines.text.len() as u32;
    settings.max_calls = calls + 10;
    settings.budget = lines.at + ATTEMPT_TIMEOUT * (calls + 10) + Duration::from_secs(3600);
    Row {
        name: row_name(&def.name, case),
        path: vec![Seg::Key("codes".into()), Seg::Key(def.name.as_str().into())],
        ignore: None,
        tags: vec!["generated".into(), def.name.clone()],
        script: Script::Inject(inject),
        settings,
        expect: Expect {
            trace: Some(lines.parse()),
            // Not in the file: failure messages give no trace line number.
            trace_path: Vec::new(),
            ..expect
        },
    }
}

fn script(route: &str, entries: Vec<Entry>) -> RouteScript {
    RouteScript {
        route: route.into(),
        entries,
    }
}

/// The rows of one code, one per case.
pub fn rows(def: &Code) -> Vec<Row> {
    let Some(f) = &def.fixture else {
        return Vec::new();
    };
    let fx = &f.entry;
    let mut out = Vec::new();
    for case in cases(def) {
        let r = match case {
            Case::Terminal => {
                let mut l = Lines::new(&["A", "B"], false);
                failing_lines(def, fx, 1, Some("fail"), &mut l);
                let elapsed = matches!(fx.answer, Answer::Response(_))
                    .then(|| DurationSpec::Exact(call_time(fx)));
                row(
                    def,
                    case,
                    vec![script("A", vec![with_repeat(fx, Repeat::Forever)])],
                    &l,
                    Expect {
                        stop: Some("terminal".into()),
                        elapsed,
                        error: Some(error(def, 1)),
                        escalations: Some(escalation(def)),
                        ..Expect::default()
                    },
                )
            }
            Case::Switch => {
                let mut l = Lines::new(&["A", "B"], false);
                failing_lines(def, fx, 1, Some("switch"), &mut l);
                l.call("B1", "200 return", Duration::ZERO, None);
                row(
                    def,
                    case,
                    vec![
                        script("A", vec![with_repeat(fx, Repeat::Forever)]),
                        script("B", vec![Entry::ok()]),
                    ],
                    &l,
                    Expect {
                        stop: Some("success".into()),
                        escalations: Some(Vec::new()),
                        ..Expect::default()
                    },
                )
            }
            Case::Exhausted => {
                let n = def.max_attempts.unwrap_or(1);
                let mut l = Lines::new(&["A"], false);
                failing_lines(def, fx, n, Some("fail"), &mut l);
                row(
                    def,
                    case,
                    vec![script("A", vec![with_repeat(fx, Repeat::Forever)])],
                    &l,
                    Expect {
                        stop: Some("exhausted".into()),
                        error: Some(error(def, n)),
                        escalations: Some(escalation(def)),
                        ..Expect::default()
                    },
                )
            }
            Case::Recovers | Case::RetryAfter => {
                let n = def.max_attempts.unwrap_or(1);
                let k = match case {
                    Case::Recovers => f.recovers_after.unwrap_or(1),
                    _ => n - 1,
                };
                let mut l = Lines::new(&["A"], case == Case::RetryAfter);
                failing_lines(def, fx, k, None, &mut l);
                l.call(&format!("A{}", k + 1), "200 return", Duration::ZERO, None);
                let elapsed = (case == Case::RetryAfter).then_some(DurationSpec::Exact(l.at));
                row(
                    def,
                    case,
                    vec![script(
                        "A",
                        vec![with_repeat(fx, Repeat::Times(k)), Entry::ok()],
                    )],
                    &l,
                    Expect {
                        stop: Some("success".into()),
                        elapsed,
                        escalations: Some(Vec::new()),
                        ..Expect::default()
                    },
                )
            }
        };
        out.push(r);
    }
    out
}

/// The reference policy a code's rows run under.
pub fn policy_yaml(def: &Code) -> String {
    let routes = if def.retryable {
        format!(
            "[{{ name: A, attempts: {} }}]",
            def.max_attempts.unwrap_or(1)
        )
    } else {
        format!("[{{ name: A, attempts: {PROBE_ATTEMPTS} }}, {{ name: B, attempts: 1 }}]")
    };
    format!(
        "routes: {routes}\n\
         backoff: {{ initial: {}, factor: {FACTOR}, cap: {}, jitter: none }}\n\
         attempt_timeout: {}\n\
         retry_after: {{ honor: true, cap: {}, above_cap: clamp }}\n",
        duration::format(INITIAL),
        duration::format(CAP),
        duration::format(ATTEMPT_TIMEOUT),
        duration::format(GUIDANCE_CAP),
    )
}

/// One matrix per code that has generated rows, in registry order. Each
/// matrix is named after the registry file, so row ids read
/// `matrices/codes.yaml::generated::RATE_LIMITED::exhausted: …`.
pub fn generate(registry: &Arc<Registry>) -> Vec<Matrix> {
    let source: Arc<str> = registry.source.clone().unwrap_or_else(|| Arc::from(""));
    let mut out = Vec::new();
    for def in &registry.codes {
        let rows = rows(def);
        if rows.is_empty() {
            continue;
        }
        let policy = crate::base::yaml::parse_value(&policy_yaml(def))
            .unwrap_or_else(|e| panic!("the generated policy does not parse: {}", e.message));
        let built = match crate::load::policy::build_reference(&policy, registry) {
            Ok(b) => b,
            Err(e) => panic!(
                "the generated policy is invalid: {}",
                e.first().map_or("", |e| e.message.as_str())
            ),
        };
        out.push(Matrix::new(
            registry.origin.clone(),
            source.clone(),
            format!("generated tests of {}", def.name),
            SystemUnderTest::InProcess {
                name: "reference".into(),
                system: built.system,
            },
            registry.clone(),
            rows,
            Vec::new(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traces(text: &str) -> Vec<(String, String, Result<(), String>)> {
        let r = Arc::new(crate::load::registry_from_text("codes.yaml", text).unwrap());
        let mut out = Vec::new();
        for m in generate(&r) {
            for (i, row) in m.rows.iter().enumerate() {
                let t: Vec<&str> = row
                    .expect
                    .trace
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|l| l.text.as_str())
                    .collect();
                let verdict = crate::engine::suite::run_generated(&m, i, &Default::default())
                    .map_err(|f| f.render());
                out.push((row.name.clone(), t.join("\n"), verdict));
            }
        }
        out
    }

    #[test]
    fn guidance_in_milliseconds_and_as_an_http_date() {
        // retry-after-ms wins over Retry-After; an HTTP date 3s after the
        // virtual wall clock's start is read when the answer arrives (after
        // 1s of latency) and shrinks as virtual time passes.
        let text = r#"version: 1
codes:
  MS:
    retryable: true
    max_attempts: 3
    escalate_to: x
    match: { status: [429] }
    fixture: { status: 429, headers: { retry-after-ms: "1500", Retry-After: "9" } }
  DATE:
    retryable: true
    max_attempts: 3
    escalate_to: x
    match: { status: [503] }
    fixture: { status: 503, latency: 1s, headers: { Retry-After: "Sun, 06 Nov 1994 08:49:40 GMT" } }
"#;
        let got = traces(text);
        let find = |name: &str| got.iter().find(|(n, _, _)| n == name).unwrap();
        let (_, t, v) =
            find("generated::MS::exhausted: max_attempts calls, 1 escalation, never called again");
        assert_eq!(
            t,
            "A1 429 MS retry wait=1500ms\nA2 429 MS retry wait=2s\nA3 429 MS fail"
        );
        assert_eq!(v, &Ok(()));
        let (_, t, v) = find("generated::DATE::Retry-After: each wait is max(backoff, guidance)");
        assert_eq!(
            t,
            "A1 503 DATE retry wait=2s at=0s\nA2 503 DATE retry wait=2s at=3s\nA3 200 return at=6s"
        );
        assert_eq!(v, &Ok(()));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let got: Vec<u64> = (0..7).map(|r| backoff(r).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(backoff(500), CAP);
    }

    #[test]
    fn the_wait_is_the_larger_of_backoff_and_guidance() {
        let two = Some(Duration::from_secs(2));
        assert_eq!(effective_wait(0, two), Duration::from_secs(2));
        assert_eq!(effective_wait(2, two), Duration::from_secs(4));
        assert_eq!(
            effective_wait(0, Some(Duration::from_secs(600))),
            GUIDANCE_CAP
        );
        assert_eq!(effective_wait(1, None), Duration::from_secs(2));
    }
}
