//! Each rule of the reference system (issue 3, rules 1 to 9) has matrix
//! rows that pass against it; this test shows those rows have teeth. For
//! every rule it runs a row of `matrices/` against a deliberately broken
//! system (the controller with a mutated policy, or a thin wrapper that
//! makes one mistake) and asserts that the row FAILS, with a message naming
//! the difference. The same row is first checked to pass against the
//! reference system, so a failure here can only come from the breakage.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use faultmatrix::base::yaml::Value;
use faultmatrix::exec::run::run_row;
use faultmatrix::load::load_text;
use faultmatrix::model::registry::Registry;
use faultmatrix::model::SseItem;
use faultmatrix::policy::{Controller, Invocation, Jitter, Policy};
use faultmatrix::system::{
    AttemptNote, Built, EscalationSink, Factory, RowContext, System, SystemResult, Systems,
};
use faultmatrix::transport::{
    Body, BoxFuture, EventStream, Request, Response, Transport, TransportError,
};
/// The verdict on a row, rendered as every report prints it.
fn check(
    m: &faultmatrix::model::Matrix,
    r: &faultmatrix::model::Row,
    obs: &faultmatrix::exec::run::Observation,
) -> Result<(), String> {
    faultmatrix::verdict::check(m, r, obs).map_err(|f| f.render())
}

/// The one mistake a broken system makes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mistake {
    /// None beyond its mutated policy.
    None,
    /// Sleeps a backoff before looking at the classification.
    SleepsBeforeTerminal,
    /// Computes a (jittered) backoff before looking at the classification.
    DrawsBeforeTerminal,
    /// Starts over with fresh counters once every budget is spent.
    ResetsCounters,
    /// Tries a terminal answer once more.
    RetriesTerminal,
    /// Never hears of the deadline.
    IgnoresDeadline,
    /// Reads HTTP-dates against the real clock, not the virtual one.
    RealWallClock,
    /// Reads HTTP-dates against the default virtual wall clock, not the
    /// row's `clock.wall` (explore's generated walls catch it).
    DefaultWallClock,
    /// Reports a failed run twice.
    EscalatesTwice,
    /// Reports nothing.
    NeverEscalates,
    /// Loses the initial request id.
    LosesRequestId,
    /// Keeps every attempt in the final error.
    UnboundedError,
    /// A transport layer that sends no idempotency key.
    DropsKey,
    /// A transport layer that buffers streams and reports a break as a reset
    /// (the controller never sees that output was delivered).
    HidesPartialOutput,
    /// A stream parser that treats comments as data.
    CommentsAsData,
    /// Appends to the context on every attempt.
    GrowsContext,
}

struct Broken {
    controller: Controller,
    mistake: Mistake,
}

impl System for Broken {
    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult> {
        Box::pin(async move {
            let tap: Arc<dyn Transport> = Arc::new(Tap {
                inner: ctx.transport.clone(),
                mistake: self.mistake,
                calls: AtomicU64::new(0),
            });
            let invocation = || {
                let sink = match self.mistake {
                    Mistake::NeverEscalates => EscalationSink::default(),
                    _ => ctx.escalations.clone(),
                };
                let inv = Invocation::new(tap.as_ref(), &ctx.request, &ctx.request_id)
                    .jitter(ctx.jitter.clone())
                    .escalations(sink);
                let inv = match self.mistake {
                    Mistake::IgnoresDeadline => inv,
                    _ => inv.deadline_opt(ctx.deadline),
                };
                match self.mistake {
                    Mistake::RealWallClock => inv.wall_start(SystemTime::now()),
                    Mistake::DefaultWallClock => {
                        inv.wall_start(faultmatrix::policy::retry_after::default_wall_start())
                    }
                    _ => inv.wall_start(ctx.wall_start),
                }
            };
            let result = self.controller.execute(invocation()).await;
            match (self.mistake, result) {
                (Mistake::SleepsBeforeTerminal, Err(e)) if e.stop == "terminal" => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Err(e)
                }
                (Mistake::DrawsBeforeTerminal, Err(e)) if e.stop == "terminal" => {
                    let _ = ctx.jitter.next_unit();
                    Err(e)
                }
                (Mistake::RetriesTerminal, Err(e)) if e.stop == "terminal" => {
                    self.controller.execute(invocation()).await
                }
                (Mistake::ResetsCounters, Err(e)) if e.stop == "exhausted" => {
                    self.controller.execute(invocation()).await
                }
                (Mistake::EscalatesTwice, Err(e)) => {
                    for ev in ctx.escalations.events() {
                        ctx.escalations.escalate(ev);
                    }
                    Err(e)
                }
                (Mistake::LosesRequestId, Err(mut e)) => {
                    e.request_id = None;
                    Err(e)
                }
                (Mistake::UnboundedError, Err(mut e)) => {
                    let extra: Vec<AttemptNote> = (0..e.omitted)
                        .map(|i| AttemptNote {
                            route: "X".into(),
                            attempt: i as u32 + 1,
                            code: "UPSTREAM_UNAVAILABLE".into(),
                        })
                        .collect();
                    e.attempts.extend(extra);
                    e.omitted = 0;
                    Err(e)
                }
                (_, r) => r,
            }
        })
    }
}

/// A transport layer between the controller and the row's transport.
struct Tap {
    inner: Arc<dyn Transport>,
    mistake: Mistake,
    calls: AtomicU64,
}

impl Transport for Tap {
    fn call(&self, mut req: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        match self.mistake {
            Mistake::DropsKey => req.idempotency_key = None,
            Mistake::GrowsContext => req.size += 1000 * n,
            _ => {}
        }
        let answer = self.inner.call(req);
        let mistake = self.mistake;
        Box::pin(async move {
            let resp = answer.await?;
            let Body::Stream(mut stream) = resp.body else {
                return Ok(resp);
            };
            let mut items = Vec::new();
            let mut broke = false;
            while let Some(item) = stream.next().await {
                match item {
                    Ok(i) => items.push(i),
                    Err(_) => broke = true,
                }
            }
            match mistake {
                Mistake::HidesPartialOutput if broke => return Err(TransportError::Reset),
                Mistake::CommentsAsData => {
                    for i in &mut items {
                        if let SseItem::Comment(c) = i {
                            *i = SseItem::Event {
                                event: None,
                                data: c.clone(),
                                id: None,
                            };
                        }
                    }
                }
                _ => {}
            }
            Ok(Response {
                status: resp.status,
                headers: resp.headers,
                body: Body::Stream(EventStream::new(items, broke)),
            })
        })
    }
}

/// A factory for the controller with `mutate` applied to the file's policy,
/// making `mistake`.
pub(crate) fn broken(mutate: fn(&mut Policy), mistake: Mistake) -> Factory {
    Arc::new(move |v: &Value, reg: &Arc<Registry>| {
        let mut policy = faultmatrix::policy::from_value(v)?;
        mutate(&mut policy);
        Ok(Built {
            routes: Some(policy.routes.iter().map(|r| r.name.clone()).collect()),
            body_paths: policy.body_paths.clone(),
            system: Arc::new(Broken {
                controller: Controller::new(policy, reg.table.clone()),
                mistake,
            }),
            deadline: None,
        })
    })
}

pub(crate) fn unchanged(_: &mut Policy) {}

/// Runs `row` of `matrices/<file>`: it passes against the reference, and
/// fails against the broken system with a message containing each of
/// `wants`. Returns the failure message.
fn breaks(file: &str, row: &str, system: Factory, wants: &[&str]) -> String {
    let path = format!("{}/matrices/{file}", crate::common::workspace().display());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let display = format!("matrices/{file}");
    let run = |text: &str, systems: &Systems| {
        let m = load_text(&display, text, None, systems).unwrap_or_else(|e| panic!("{e}"));
        let r = m
            .rows
            .iter()
            .find(|r| r.name == row)
            .unwrap_or_else(|| panic!("no row `{row}` in {display}"));
        let obs = run_row(&m, r);
        check(&m, r, &obs)
    };
    if let Err(msg) = run(&text, &Systems::new()) {
        panic!("the row must pass against the reference system first:\n{msg}");
    }
    let swapped = text.replacen("system: reference", "system: broken", 1);
    assert_ne!(swapped, text, "{display} names no `system: reference`");
    let mut systems = Systems::new();
    systems.register("broken", system);
    let msg = match run(&swapped, &systems) {
        Ok(()) => panic!("`{row}` passed against the broken system: the rule is not tested"),
        Err(msg) => msg,
    };
    for want in wants {
        assert!(
            msg.contains(want),
            "the failure of `{row}` does not mention {want:?}:\n{msg}"
        );
    }
    msg
}

// ------------------------------------------------------------ 1. backoff

#[test]
fn rule_1_backoff_growth_factor() {
    breaks(
        "backoff.yaml",
        "the cap takes effect on the fourth retry",
        broken(
            |p| p.routes[2].backoff.as_mut().unwrap().factor = 3.0,
            Mistake::None,
        ),
        &[
            "- capped2 429 RATE_LIMITED retry wait=8s",
            "+ capped2 429 RATE_LIMITED retry wait=12s",
        ],
    );
}

#[test]
fn rule_1_backoff_cap() {
    breaks(
        "backoff.yaml",
        "the cap takes effect on the fourth retry",
        broken(
            |p| {
                for r in &mut p.routes {
                    if let Some(b) = &mut r.backoff {
                        b.cap = Duration::from_secs(3600);
                    }
                }
            },
            Mistake::None,
        ),
        &["+ capped4 429 RATE_LIMITED retry wait=32s"],
    );
}

#[test]
fn rule_1_backoff_full_jitter_draws() {
    breaks(
        "backoff.yaml",
        "full jitter with explicit draws gives exact waits",
        broken(
            |p| p.routes[0].backoff.as_mut().unwrap().jitter = Jitter::Equal,
            Mistake::None,
        ),
        &["+ full1 429 RATE_LIMITED retry wait=750ms"],
    );
}

#[test]
fn rule_1_backoff_equal_jitter_bounds() {
    // Full jitter where equal is configured goes below half the capped
    // delay for this seed.
    breaks(
        "backoff.yaml",
        "equal jitter keeps each wait within half and all of the capped delay",
        broken(
            |p| p.routes[1].backoff.as_mut().unwrap().jitter = Jitter::Full,
            Mistake::None,
        ),
        &["trace differs"],
    );
}

#[test]
fn rule_1_backoff_decorrelated() {
    breaks(
        "backoff.yaml",
        "decorrelated jitter grows from the previous wait and stops at the cap",
        broken(
            |p| p.routes[3].backoff.as_mut().unwrap().jitter = Jitter::Full,
            Mistake::None,
        ),
        &["+ decorrelated1 429 RATE_LIMITED retry wait=500ms"],
    );
}

// ------------------------------------------------------------ 2. guidance

#[test]
fn rule_2_guidance_is_honored() {
    breaks(
        "retry-after.yaml",
        "delay-seconds longer than the backoff is honored",
        broken(|p| p.retry_after.honor = false, Mistake::None),
        &[
            "- A1 503 UPSTREAM_UNAVAILABLE retry wait=5s",
            "+ A1 503 UPSTREAM_UNAVAILABLE retry wait=1s",
        ],
    );
}

#[test]
fn rule_2_http_dates_use_the_virtual_clock() {
    breaks(
        "retry-after.yaml",
        "IMF-fixdate is read against the virtual wall clock",
        broken(unchanged, Mistake::RealWallClock),
        &["+ A1 503 UPSTREAM_UNAVAILABLE retry wait=1s"],
    );
}

#[test]
fn rule_2_guidance_above_the_cap_is_clamped() {
    breaks(
        "retry-after.yaml",
        "guidance above the cap is clamped to the cap",
        broken(
            |p| p.retry_after.above_cap = faultmatrix::policy::AboveCap::Refuse,
            Mistake::None,
        ),
        &["+ A1 503 UPSTREAM_UNAVAILABLE fail"],
    );
}

#[test]
fn rule_2_guidance_above_the_cap_is_refused() {
    breaks(
        "retry-after-refuse.yaml",
        "delay-seconds above the cap stops the run",
        broken(
            |p| p.retry_after.above_cap = faultmatrix::policy::AboveCap::Clamp,
            Mistake::None,
        ),
        &["stop: expected `guidance-refused`"],
    );
}

// ------------------------------------------------------ 3. classification

#[test]
fn rule_3_the_body_overrides_the_status() {
    breaks(
        "classification.yaml",
        "a 500 whose error.code is invalid_request is terminal",
        broken(|p| p.body_paths = vec!["nowhere".into()], Mistake::None),
        &[
            "+ A1 500 SERVER_ERROR retry wait=1s",
            "stop: expected `terminal`",
        ],
    );
}

#[test]
fn rule_3_model_unavailable_switches() {
    breaks(
        "classification.yaml",
        "a model-unavailable 404 switches to B without waiting",
        broken(|p| p.switch_on = Some(Vec::new()), Mistake::None),
        &[
            "+ A1 404 MODEL_UNAVAILABLE fail",
            "stop: expected `success`, observed `terminal`",
        ],
    );
}

#[test]
fn rule_3_terminal_codes_schedule_no_time() {
    breaks(
        "terminal.yaml",
        "INVALID_INPUT (422) makes one call and escalates once",
        broken(unchanged, Mistake::SleepsBeforeTerminal),
        &[
            "terminal stop: 1s of virtual time passed after the answer",
            "elapsed: expected 0s, observed 1s",
        ],
    );
}

#[test]
fn rule_3_terminal_codes_take_no_jitter_draw() {
    // The article's subtle bug: the code is classified terminal, but a
    // backoff was computed first. The row scripts no jitter draw at all.
    breaks(
        "terminal.yaml",
        "INVALID_INPUT (422) makes one call and escalates once",
        broken(unchanged, Mistake::DrawsBeforeTerminal),
        &["the row scripted 0 jitter draws but the system asked for more"],
    );
}

#[test]
fn rule_3_a_retried_terminal_code_breaks_the_terminal_contract() {
    // The harness's own check, without any trace expectation: two calls
    // answered AUTH_FAILED cannot end in a `terminal` stop.
    let text = "title: t\nsystem: broken\npolicy: { routes: [{ name: A, attempts: 2 }] }\nrows:\n  - name: r\n    inject: { A: [401, 401] }\n    expect: { stop: terminal }\n";
    let mut systems = Systems::new();
    systems.register("broken", broken(unchanged, Mistake::RetriesTerminal));
    let m = load_text("t.yaml", text, None, &systems).unwrap_or_else(|e| panic!("{e}"));
    let obs = run_row(&m, &m.rows[0]);
    let msg = check(&m, &m.rows[0], &obs).unwrap_err();
    assert!(
        msg.contains("terminal stop: expected exactly 1 call answered AUTH_FAILED, observed 2"),
        "{msg}"
    );
    assert!(
        msg.contains("terminal stop: expected exactly 1 escalation event, observed 2"),
        "{msg}"
    );
}

// ------------------------------------------------------------- 4. budgets

#[test]
fn rule_4_budgets_count_the_first_call() {
    breaks(
        "budgets.yaml",
        "the route budget counts the first call",
        broken(
            |p| p.routes.iter_mut().for_each(|r| r.attempts += 1),
            Mistake::None,
        ),
        &["route A: call 5 but 4 answers were scripted"],
    );
}

#[test]
fn rule_4_counters_are_never_reset() {
    breaks(
        "budgets.yaml",
        "after every budget is spent the run stops and nothing is called again",
        broken(unchanged, Mistake::ResetsCounters),
        &[
            "+ B2 429 RATE_LIMITED switch",
            "+ A5 429 RATE_LIMITED retry wait=1s",
        ],
    );
}

#[test]
fn rule_4_switch_delay_is_its_own_setting() {
    breaks(
        "budgets.yaml",
        "the switch to the next route has no delay by default",
        broken(|p| p.switch_delay = Duration::from_secs(2), Mistake::None),
        &["+ A4 429 RATE_LIMITED switch wait=2s"],
    );
}

// ------------------------------------------------------------ 5. deadline

#[test]
fn rule_5_a_wait_past_the_deadline_is_not_taken() {
    breaks(
        "deadline.yaml",
        "a wait that would end past the deadline is not taken",
        broken(|p| p.deadline = None, Mistake::IgnoresDeadline),
        &[
            "stop: expected `deadline`",
            "route A: call 2 but 1 answer was scripted",
        ],
    );
}

#[test]
fn rule_5_the_attempt_timeout_is_capped_by_the_deadline() {
    breaks(
        "deadline.yaml",
        "the attempt timeout is capped by what is left of the deadline",
        broken(|p| p.deadline = None, Mistake::IgnoresDeadline),
        &["elapsed: expected 3s, observed 4s"],
    );
}

#[test]
fn rule_5_the_attempt_timeout_applies() {
    breaks(
        "deadline.yaml",
        "a call that does not answer times out after attempt_timeout",
        broken(
            |p| p.attempt_timeout = Duration::from_secs(5),
            Mistake::None,
        ),
        &["+ A2 200 return at=6s"],
    );
}

// --------------------------------------------------------- 6. idempotency

#[test]
fn rule_6_create_timeouts_need_a_key() {
    breaks(
        "idempotency.yaml",
        "a create timeout without a key is not retried",
        broken(|p| p.retry_creates_without_key = true, Mistake::None),
        &[
            "stop: expected `not-idempotent`",
            "route A: call 2 but 1 answer was scripted",
        ],
    );
}

#[test]
fn rule_6_the_duplicate_creation_test_counts_records() {
    breaks(
        "idempotency.yaml",
        "duplicate creation test - a retried create with a key makes one record",
        broken(unchanged, Mistake::DropsKey),
        &["records: expected 1, observed 2"],
    );
}

// ------------------------------------------------------------- 7. streams

#[test]
fn rule_7_partial_output_is_never_replayed() {
    breaks(
        "streams.yaml",
        "a break after output stops with partial-output and B is never called",
        broken(unchanged, Mistake::HidesPartialOutput),
        &[
            "stop: expected `partial-output`",
            "route A: call 2 but 1 answer was scripted",
        ],
    );
}

#[test]
fn rule_7_comments_are_not_data() {
    breaks(
        "streams.yaml",
        "a break after a keep-alive comment only is an ordinary transient failure",
        broken(unchanged, Mistake::CommentsAsData),
        &["stop: expected `success`, observed `partial-output`"],
    );
}

// ------------------------------------------------ 8. final error, escalation

#[test]
fn rule_8_the_error_keeps_the_request_id() {
    breaks(
        "final-error.yaml",
        "exhausted routes give the whole account of the run",
        broken(unchanged, Mistake::LosesRequestId),
        &["error.request_id: expected `req-", "observed `-`"],
    );
}

#[test]
fn rule_8_the_error_is_bounded() {
    breaks(
        "final-error-bounded.yaml",
        "eighteen attempts are summed up in sixteen and a count",
        broken(unchanged, Mistake::UnboundedError),
        &["error.attempts: expected", "above max_len 480"],
    );
}

#[test]
fn rule_8_exactly_one_escalation() {
    breaks(
        "final-error.yaml",
        "exhausted routes give the whole account of the run",
        broken(unchanged, Mistake::EscalatesTwice),
        &["escalations: expected [GATEWAY_TIMEOUT -> platform-oncall], observed [GATEWAY_TIMEOUT -> platform-oncall, GATEWAY_TIMEOUT -> platform-oncall]"],
    );
}

#[test]
fn rule_8_a_failed_run_escalates() {
    breaks(
        "final-error.yaml",
        "a terminal stop names the one attempt and escalates once",
        broken(unchanged, Mistake::NeverEscalates),
        &["escalations: expected [AUTH_FAILED -> security-oncall], observed []"],
    );
}

// ------------------------------------------------------- 9. amplification

#[test]
fn rule_9_amplification_and_sizes() {
    breaks(
        "amplification.yaml",
        "two retries resend the whole context twice",
        broken(unchanged, Mistake::GrowsContext),
        &[
            "+ A2 503 UPSTREAM_UNAVAILABLE retry wait=2s size=49000",
            "amplification: expected 3, observed 3.062 (147000 bytes sent, first attempt 48000)",
        ],
    );
}
