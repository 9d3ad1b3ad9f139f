//! The reference retry/fallback controller: ordered routes with attempt
//! budgets, capped exponential backoff with jitter, server guidance, error
//! classification by status and body, a shared deadline, per-attempt
//! timeouts, idempotency rules, a replay guard for streams, and exactly one
//! escalation per failed run.
//!
//! The decision after a failed attempt, in order:
//!
//! 1. output was already delivered (a stream broke or stalled part-way):
//!    stop `partial-output`, never replay;
//! 2. the code is neither retryable nor a switch code: stop `terminal` at
//!    once, no backoff computed, no timer scheduled;
//! 3. the outcome is unknown (timeout, reset, malformed) on a create request
//!    without an idempotency key: stop `not-idempotent`;
//! 4. a switch code (`switch_on`): go to the next route;
//! 5. the route's budget is spent: go to the next route (none left: stop
//!    `exhausted`);
//! 6. otherwise wait `max(backoff, guidance)` (guidance above the cap is
//!    clamped or refused), unless the wait would reach the deadline (stop
//!    `deadline`), and call the same route again.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::backoff::Schedule;
use super::config::{AboveCap, Policy};
use super::retry_after;
use crate::codes::{Classified, Codes, Observed};
use crate::outcome::{
    AttemptNote, Escalation, EscalationSink, FinalError, JitterInput, JitterSource, Success,
    SystemResult,
};
use crate::transport::{Body, Request, RequestSpec, SseItem, Transport, TransportError};

/// Longest route name, code or request id a [`FinalError`] repeats; longer
/// ones are cut (with `...`), so the error stays bounded whatever the input.
pub const MAX_FIELD_LEN: usize = 64;

/// Receives stream data as it arrives, so a service can forward tokens
/// while the controller keeps the replay guard.
pub type OutputSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// One logical request handed to [`Controller::execute`].
///
/// Build it with [`Invocation::new`] and adjust what you need:
///
/// ```
/// # use faultmatrix_controller::{EscalationSink, Invocation, JitterInput, JitterSource, RequestSpec};
/// # use faultmatrix_controller::transport::{BoxFuture, Request, Response, Transport, TransportError};
/// # struct Never;
/// # impl Transport for Never {
/// #     fn call(&self, _r: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
/// #         Box::pin(std::future::pending())
/// #     }
/// # }
/// let request = RequestSpec { create: true, idempotency_key: true, ..RequestSpec::default() };
/// let sink = EscalationSink::default();
/// let inv = Invocation::new(&Never, &request, "req-42")
///     .deadline(std::time::Duration::from_secs(10))
///     .jitter(JitterSource::new(&JitterInput::Seed(1)))
///     .escalations(sink.clone());
/// # drop(inv);
/// ```
pub struct Invocation<'a> {
    transport: &'a dyn Transport,
    request: &'a RequestSpec,
    request_id: &'a str,
    deadline: Option<Duration>,
    jitter: Option<JitterSource>,
    escalations: EscalationSink,
    wall_start: SystemTime,
    on_output: Option<OutputSink<'a>>,
}

impl<'a> Invocation<'a> {
    /// A request `request_id` (sent with every attempt and kept in the final
    /// error) through `transport`. Defaults: the policy's deadline, jitter
    /// from a random seed, a fresh escalation sink (pass your own with
    /// [`Invocation::escalations`] and keep a clone to read the events), the
    /// wall clock's now for `Retry-After` dates, no output sink.
    pub fn new(
        transport: &'a dyn Transport,
        request: &'a RequestSpec,
        request_id: &'a str,
    ) -> Self {
        Self {
            transport,
            request,
            request_id,
            deadline: None,
            jitter: None,
            escalations: EscalationSink::default(),
            wall_start: SystemTime::now(),
            on_output: None,
        }
    }

    /// A deadline for this request, replacing the policy's.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Like [`Invocation::deadline`], `None` keeping the policy's.
    pub fn deadline_opt(mut self, deadline: Option<Duration>) -> Self {
        if deadline.is_some() {
            self.deadline = deadline;
        }
        self
    }

    /// Where jitter draws come from (a seed or explicit draws make waits
    /// reproducible).
    pub fn jitter(mut self, jitter: JitterSource) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// Where the one escalation event of a failed run goes (a clone shares
    /// the events).
    pub fn escalations(mut self, sink: EscalationSink) -> Self {
        self.escalations = sink;
        self
    }

    /// The wall-clock time at the start, against which `Retry-After`
    /// HTTP-dates are read (it advances with the clock the controller runs
    /// on).
    pub fn wall_start(mut self, at: SystemTime) -> Self {
        self.wall_start = at;
        self
    }

    /// Receives each stream data event as it arrives.
    pub fn on_output(mut self, sink: OutputSink<'a>) -> Self {
        self.on_output = Some(sink);
        self
    }
}

/// The controller: a [`Policy`] and a table of reason [`Codes`]. Cheap to
/// clone and share; it holds no per-request state, so one controller serves
/// any number of concurrent [`Controller::execute`] calls.
#[derive(Debug, Clone)]
pub struct Controller {
    policy: Policy,
    codes: Arc<Codes>,
}

enum Attempt {
    Success(Option<String>),
    Failed {
        code: Classified,
        guidance: Option<Duration>,
        /// The request may or may not have taken effect.
        ambiguous: bool,
        /// Output reached the caller before the failure: that output.
        partial: Option<String>,
    },
}

/// Whether a wait of `wait` from now would end at or past `deadline`.
fn reaches(deadline: Option<Instant>, wait: Duration) -> bool {
    deadline.is_some_and(|dl| Instant::now().checked_add(wait).is_none_or(|end| end >= dl))
}

/// Cuts `s` to [`MAX_FIELD_LEN`] bytes (on a char boundary).
fn clip(s: &str) -> String {
    if s.len() <= MAX_FIELD_LEN {
        return s.to_string();
    }
    let mut end = MAX_FIELD_LEN - 3;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

impl Controller {
    /// A controller for this policy and code table
    /// ([`Codes::builtin`] is the default table).
    pub fn new(policy: Policy, codes: Arc<Codes>) -> Self {
        Self { policy, codes }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The code table.
    pub fn codes(&self) -> &Arc<Codes> {
        &self.codes
    }

    /// Runs one logical request to success or a final error. It sleeps on
    /// the tokio clock, so under a paused clock every wait is exact and
    /// instant.
    pub async fn execute(&self, inv: Invocation<'_>) -> SystemResult {
        let p = &self.policy;
        let start = Instant::now();
        let jitter = inv.jitter.clone().unwrap_or_else(|| {
            let mut h = RandomState::new().build_hasher();
            h.write(inv.request_id.as_bytes());
            JitterSource::new(&JitterInput::Seed(h.finish()))
        });
        let deadline = inv.deadline.or(p.deadline).map(|d| start + d);
        let idem_key = inv
            .request
            .idempotency_key
            .then(|| format!("idem-{}", inv.request_id));
        let mut error = FinalError {
            stop: String::new(),
            code: None,
            // Set when the run fails: a run that succeeds never shows it.
            request_id: None,
            attempts: Vec::new(),
            omitted: 0,
            output: None,
        };
        let fail = |mut error: FinalError, stop: &str, code: Option<String>| {
            error.request_id = Some(clip(inv.request_id));
            error.stop = stop.to_string();
            error.code = code.as_deref().map(clip);
            let to = code
                .as_deref()
                .and_then(|c| self.codes.get(c))
                .and_then(|d| d.escalate_to.clone());
            inv.escalations.escalate(Escalation {
                code: code.unwrap_or_else(|| "UNKNOWN".into()),
                to,
            });
            Err(error)
        };
        let mut last_code: Option<String> = None;
        for (ri, route) in p.routes.iter().enumerate() {
            if ri > 0 && !p.switch_delay.is_zero() {
                if reaches(deadline, p.switch_delay) {
                    return fail(error, "deadline", last_code);
                }
                tokio::time::sleep(p.switch_delay).await;
            }
            let mut schedule = Schedule::new(p.backoff_for(route));
            let mut attempt = 0u32;
            loop {
                let left = deadline.map(|dl| dl.saturating_duration_since(Instant::now()));
                if left.is_some_and(|l| l.is_zero()) {
                    return fail(error, "deadline", last_code);
                }
                attempt += 1;
                let request = Request {
                    route: route.name.clone(),
                    request_id: Some(inv.request_id.to_string()),
                    model: inv.request.model.clone(),
                    stream: inv.request.stream,
                    create: inv.request.create,
                    idempotency_key: idem_key.clone(),
                    size: inv.request.size,
                    routing: inv.request.routing.clone(),
                    headers: vec![("x-retry-count".into(), retry_count(attempt - 1))],
                };
                let outcome = self.attempt(&inv, request, deadline, start).await;
                let (code, guidance, ambiguous, partial) = match outcome {
                    Attempt::Success(output) => {
                        return Ok(Success {
                            route: Some(route.name.clone()),
                            output,
                        })
                    }
                    Attempt::Failed {
                        code,
                        guidance,
                        ambiguous,
                        partial,
                    } => (code, guidance, ambiguous, partial),
                };
                error.push_attempt(AttemptNote {
                    route: clip(&route.name),
                    attempt,
                    code: clip(&code.code),
                });
                let known = code.known;
                let name = last_code.insert(code.code);
                // One lookup for both: whether the code is retryable, and
                // whether it moves to the next route at once (`switch_on`
                // when the policy lists codes, else the table's `switch`).
                let found = self.codes.get(name);
                let def = found.filter(|_| known);
                let switch = match &p.switch_on {
                    Some(list) => list.iter().any(|c| c == name),
                    None => found.is_some_and(|d| d.switch),
                };
                if let Some(output) = partial {
                    error.output = Some(output.into());
                    return fail(error, "partial-output", last_code);
                }
                let retryable = def.is_some_and(|d| d.retryable);
                if !switch && !retryable {
                    // Terminal: fail fast, no backoff computed or scheduled.
                    return fail(error, "terminal", last_code);
                }
                if ambiguous
                    && inv.request.create
                    && idem_key.is_none()
                    && !p.retry_creates_without_key
                {
                    return fail(error, "not-idempotent", last_code);
                }
                if switch {
                    break;
                }
                let budget = def
                    .and_then(|d| d.max_attempts)
                    .map_or(route.attempts, |m| m.min(route.attempts));
                if attempt >= budget {
                    break;
                }
                let backoff = schedule.delay(attempt - 1, || jitter.next_unit());
                let mut wait = backoff;
                if let Some(g) = guidance.filter(|_| p.retry_after.honor) {
                    if g > p.retry_after.cap {
                        match p.retry_after.above_cap {
                            AboveCap::Refuse => return fail(error, "guidance-refused", last_code),
                            AboveCap::Clamp => wait = wait.max(p.retry_after.cap),
                        }
                    } else {
                        wait = wait.max(g);
                    }
                }
                if reaches(deadline, wait) {
                    return fail(error, "deadline", last_code);
                }
                if wait.is_zero() {
                    // No wait: yield, as a sleep would, without a timer. On
                    // a real clock tokio rounds every timer up to its next
                    // millisecond, so `sleep(0)` waited 0-1 ms of wall time
                    // (most of a zero-backoff row over HTTP).
                    yield_once().await;
                } else {
                    tokio::time::sleep(wait).await;
                }
            }
        }
        fail(error, "exhausted", last_code)
    }

    /// What is left before `deadline`, capped by the per-attempt timeout.
    fn limit(&self, deadline: Option<Instant>) -> Duration {
        let t = self.policy.attempt_timeout;
        deadline.map_or(t, |dl| t.min(dl.saturating_duration_since(Instant::now())))
    }

    async fn attempt(
        &self,
        inv: &Invocation<'_>,
        request: Request,
        deadline: Option<Instant>,
        start: Instant,
    ) -> Attempt {
        let paths = &self.policy.body_paths;
        let failed = |obs: Observed<'_>, guidance, ambiguous, partial| Attempt::Failed {
            code: self.codes.classify(obs, paths).unwrap_or(Classified {
                code: "STREAM_BROKEN".into(),
                known: false,
            }),
            guidance,
            ambiguous,
            partial,
        };
        let limit = self.limit(deadline);
        // An answer that is there at once (a scripted one always is) needs
        // no timer: tokio's `timeout` polls its future before its timer
        // too, so this changes nothing but the cost (a clock read and a
        // timer built and dropped, about 300 instructions a call).
        let mut call = inv.transport.call(request);
        let answered = match std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await {
            Poll::Ready(r) => Ok(r),
            Poll::Pending => tokio::time::timeout(limit, call).await,
        };
        let response = match answered {
            Err(_) => return failed(Observed::Timeout, None, true, None),
            Ok(Err(TransportError::Reset)) => return failed(Observed::Reset, None, true, None),
            // Refused: the request never left, so it is not ambiguous.
            Ok(Err(TransportError::Refused)) => {
                return failed(Observed::Refused, None, false, None)
            }
            Ok(Err(_)) => return failed(Observed::Malformed, None, true, None),
            Ok(Ok(r)) => r,
        };
        // HTTP-dates are read against the virtual wall clock when the
        // answer arrives, not when the call started.
        // Read only when there is a header to read it against (a clock
        // read costs about a hundred instructions).
        let guidance = if response.headers.is_empty() {
            None
        } else {
            let wall_now = inv.wall_start + (Instant::now() - start);
            retry_after::guidance(
                response
                    .headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
                wall_now,
            )
        };
        let status = response.status;
        match response.body {
            Body::Full(text) => match self.codes.classify(
                Observed::Response {
                    status,
                    body: Some(&text),
                },
                paths,
            ) {
                None => Attempt::Success(Some(text)),
                Some(code) => Attempt::Failed {
                    code,
                    guidance,
                    ambiguous: false,
                    partial: None,
                },
            },
            Body::Stream(mut stream) => {
                if !(200..300).contains(&status) {
                    return failed(
                        Observed::Response { status, body: None },
                        guidance,
                        false,
                        None,
                    );
                }
                let mut output = String::new();
                let mut delivered = false;
                loop {
                    // Each event must come within the attempt timeout, and
                    // the whole stream within the deadline.
                    let next = tokio::time::timeout(self.limit(deadline), stream.next()).await;
                    match next {
                        Err(_) => {
                            return failed(
                                Observed::Timeout,
                                None,
                                true,
                                delivered.then(|| output.clone()),
                            )
                        }
                        Ok(None) => break,
                        Ok(Some(Ok(SseItem::Comment(_)))) => {}
                        Ok(Some(Ok(SseItem::Event { data, .. }))) => {
                            delivered = true;
                            if let Some(sink) = inv.on_output {
                                sink(&data);
                            }
                            output.push_str(&data);
                        }
                        Ok(Some(Err(_))) => {
                            return failed(
                                Observed::Broken,
                                None,
                                true,
                                delivered.then(|| output.clone()),
                            )
                        }
                    }
                }
                Attempt::Success(Some(output))
            }
        }
    }
}

/// The `x-retry-count` header's value: a single digit written directly
/// (most requests), others through the formatter (about 150 instructions).
fn retry_count(n: u32) -> String {
    match u8::try_from(n) {
        Ok(d @ 0..=9) => char::from(b'0' + d).to_string(),
        _ => n.to_string(),
    }
}

/// Returns to the executor once, as a sleep would, then goes on: a zero
/// wait without a timer. (tokio's `task::yield_now` needs its `rt`
/// feature; this crate asks tokio for `time` only.)
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::RouteConfig;
    use crate::transport::{BoxFuture, EventStream, Response};
    use std::sync::Mutex;

    /// The retry count header reads as the number written out.
    #[test]
    fn retry_counts_are_the_numbers_written_out() {
        for n in (0..=120).chain([u32::MAX]) {
            assert_eq!(super::retry_count(n), n.to_string());
        }
    }

    /// Answers every call with `make(route)`.
    struct Fixed<F>(F);
    impl<F> Transport for Fixed<F>
    where
        F: Fn(&str) -> Response + Send + Sync,
    {
        fn call(&self, req: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
            let r = (self.0)(&req.route);
            Box::pin(async move { Ok(r) })
        }
    }

    fn run(c: &Controller, t: &dyn Transport, req: &RequestSpec, id: &str) -> SystemResult {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(c.execute(Invocation::new(t, req, id)))
    }

    #[test]
    fn final_error_is_bounded_and_carries_no_body_or_credentials() {
        let secret = "sk-live-0123456789abcdef";
        let policy = Policy {
            routes: (0..10)
                .map(|i| RouteConfig::new(format!("route-{i}-{}", "x".repeat(100)), 3))
                .collect(),
            backoff: crate::policy::config::Backoff {
                initial: Duration::from_millis(1),
                factor: 1.0,
                cap: Duration::from_millis(1),
                jitter: crate::policy::config::Jitter::None,
            },
            ..Policy::default()
        };
        let c = Controller::new(policy, Codes::builtin());
        let t = Fixed(move |_: &str| Response {
            status: 503,
            headers: vec![("authorization".into(), format!("Bearer {secret}"))],
            body: Body::Full(format!(r#"{{"error":{{"message":"bad key {secret}"}}}}"#)),
        });
        let long_id = "r".repeat(500);
        let err = run(&c, &t, &RequestSpec::default(), &long_id).unwrap_err();
        assert_eq!(err.stop, "exhausted");
        assert_eq!(err.attempts.len(), FinalError::MAX_ATTEMPTS);
        assert_eq!(err.omitted, 30 - FinalError::MAX_ATTEMPTS);
        let text = err.to_string();
        let debug = format!("{err:?}");
        for shown in [&text, &debug] {
            assert!(!shown.contains("sk-live"), "{shown}");
            assert!(!shown.contains("bad key"), "{shown}");
        }
        // Every field is clipped, so the rendering has a fixed upper bound.
        let per_attempt = 2 * MAX_FIELD_LEN + 12 + 2;
        let bound = 64 + 3 * MAX_FIELD_LEN + FinalError::MAX_ATTEMPTS * per_attempt;
        assert!(text.len() <= bound, "{} > {bound}", text.len());
        assert!(text.len() < 2_500, "{}", text.len());
        assert!(err.request_id.unwrap().len() <= MAX_FIELD_LEN);
        assert!(err.attempts.iter().all(|a| a.route.len() <= MAX_FIELD_LEN));
    }

    #[test]
    fn stream_data_reaches_the_output_sink_as_it_arrives_comments_do_not() {
        let c = Controller::new(Policy::default(), Codes::builtin());
        let t = Fixed(|_: &str| Response {
            status: 200,
            headers: vec![],
            body: Body::Stream(EventStream::new(
                vec![
                    SseItem::Comment("keep-alive".into()),
                    SseItem::Event {
                        event: None,
                        data: "Hel".into(),
                        id: None,
                    },
                    SseItem::Comment("keep-alive".into()),
                    SseItem::Event {
                        event: None,
                        data: "lo".into(),
                        id: None,
                    },
                ],
                false,
            )),
        });
        let seen = Mutex::new(Vec::<String>::new());
        let sink = |d: &str| seen.lock().unwrap().push(d.to_string());
        let req = RequestSpec {
            stream: true,
            ..RequestSpec::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let ok = rt
            .block_on(c.execute(Invocation::new(&t, &req, "r").on_output(&sink)))
            .unwrap();
        assert_eq!(ok.output.as_deref(), Some("Hello"));
        assert_eq!(*seen.lock().unwrap(), ["Hel", "lo"]);
    }

    #[test]
    fn a_zero_wait_takes_no_timer() {
        // Each call takes 0.5 ms of the paused clock. A timer always waits
        // for tokio's next millisecond tick, so a zero backoff that slept
        // would round 0.5 ms up to 1 ms (on a real clock: 0-1 ms of wall
        // time a retry). Without a timer the row's time is its calls'.
        use std::sync::atomic::{AtomicU32, Ordering};
        struct HalfMs(AtomicU32);
        impl Transport for HalfMs {
            fn call(&self, _: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
                let status = if self.0.fetch_add(1, Ordering::SeqCst) < 2 {
                    503
                } else {
                    200
                };
                Box::pin(async move {
                    tokio::time::advance(Duration::from_micros(500)).await;
                    Ok(Response {
                        status,
                        headers: vec![],
                        body: Body::Full(String::new()),
                    })
                })
            }
        }
        let policy = Policy {
            routes: vec![RouteConfig::new("A", 2), RouteConfig::new("B", 2)],
            backoff: crate::policy::config::Backoff {
                initial: Duration::ZERO,
                factor: 2.0,
                cap: Duration::ZERO,
                jitter: crate::policy::config::Jitter::None,
            },
            ..Policy::default()
        };
        let c = Controller::new(policy, Codes::builtin());
        let t = HalfMs(AtomicU32::new(0));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let (ok, took) = rt.block_on(async {
            let t0 = Instant::now();
            let ok = c
                .execute(Invocation::new(&t, &RequestSpec::default(), "r"))
                .await;
            (ok, Instant::now() - t0)
        });
        assert_eq!(ok.unwrap().route.as_deref(), Some("B"));
        assert_eq!(t.0.load(Ordering::SeqCst), 3);
        assert_eq!(took, Duration::from_micros(1500));
    }

    #[test]
    fn a_full_body_is_the_output() {
        let c = Controller::new(Policy::default(), Codes::builtin());
        let t = Fixed(|_: &str| Response {
            status: 200,
            headers: vec![],
            body: Body::Full(r#"{"id":"x"}"#.into()),
        });
        let ok = run(&c, &t, &RequestSpec::default(), "r").unwrap();
        assert_eq!(ok.output.as_deref(), Some(r#"{"id":"x"}"#));
        assert_eq!(ok.route.as_deref(), Some("A"));
    }

    #[test]
    fn without_a_jitter_source_draws_are_random_and_within_bounds() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let policy = Policy {
            backoff: crate::policy::config::Backoff {
                jitter: crate::policy::config::Jitter::Full,
                ..crate::policy::config::Backoff::default()
            },
            ..Policy::default()
        };
        let c = Controller::new(policy, Codes::builtin());
        let waits: Vec<Duration> = (0..8)
            .map(|_| {
                let n = AtomicU32::new(0);
                let t = Fixed(move |_: &str| Response {
                    status: if n.fetch_add(1, Ordering::SeqCst) == 0 {
                        503
                    } else {
                        200
                    },
                    headers: vec![],
                    body: Body::Full(String::new()),
                });
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .start_paused(true)
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let t0 = Instant::now();
                    c.execute(Invocation::new(&t, &RequestSpec::default(), "same-id"))
                        .await
                        .unwrap();
                    Instant::now() - t0
                })
            })
            .collect();
        assert!(
            waits.iter().all(|w| *w <= Duration::from_secs(1)),
            "{waits:?}"
        );
        assert!(waits.iter().any(|w| *w != waits[0]), "{waits:?}");
    }

    #[test]
    fn clip_cuts_on_a_char_boundary() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(100);
        let c = clip(&long);
        assert!(c.len() <= MAX_FIELD_LEN && c.ends_with("..."), "{c}");
    }
}
