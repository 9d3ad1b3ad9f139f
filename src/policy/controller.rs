//! The reference retry/fallback controller: ordered routes with attempt
//! budgets, capped exponential backoff with jitter, server guidance, error
//! classification by status and body, a shared deadline, per-attempt
//! timeouts, idempotency rules, a replay guard for streams, and exactly one
//! escalation per failed run.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::backoff::Schedule;
use super::config::{AboveCap, Policy};
use super::retry_after;
use crate::model::{RequestSpec, SseItem};
use crate::registry::{Classified, Observed, Registry};
use crate::system::{
    AttemptNote, Escalation, EscalationSink, FinalError, JitterSource, Success, SystemResult,
};
use crate::transport::{Body, Request, Transport, TransportError};

/// One logical request handed to the controller.
pub struct Invocation<'a> {
    /// Where calls go.
    pub transport: &'a dyn Transport,
    /// What to send.
    pub request: &'a RequestSpec,
    /// The logical request's id (sent with every attempt).
    pub request_id: &'a str,
    /// Overrides the policy's deadline.
    pub deadline: Option<Duration>,
    /// Jitter draws.
    pub jitter: &'a JitterSource,
    /// Escalation sink.
    pub escalations: &'a EscalationSink,
    /// Wall-clock time when the invocation starts (for HTTP-date guidance).
    pub wall_start: SystemTime,
}

/// The controller. Cheap to share; holds no per-request state.
#[derive(Debug, Clone)]
pub struct Controller {
    policy: Policy,
    registry: Arc<Registry>,
}

enum Attempt {
    Success(Option<String>),
    Failed {
        code: Classified,
        guidance: Option<Duration>,
        timeout: bool,
        partial: bool,
    },
}

impl Controller {
    /// A controller for this policy and registry.
    pub fn new(policy: Policy, registry: Arc<Registry>) -> Self {
        Self { policy, registry }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Runs one logical request to success or a final error.
    pub async fn execute(&self, inv: Invocation<'_>) -> SystemResult {
        let p = &self.policy;
        let start = Instant::now();
        let deadline = inv.deadline.or(p.deadline).map(|d| start + d);
        let idem_key = inv
            .request
            .idempotency_key
            .then(|| format!("idem-{}", inv.request_id));
        let mut error = FinalError {
            stop: String::new(),
            code: None,
            request_id: Some(inv.request_id.to_string()),
            attempts: Vec::new(),
            omitted: 0,
        };
        let fail = |mut error: FinalError, stop: &str, code: Option<String>| {
            error.stop = stop.to_string();
            error.code = code.clone();
            if p.escalate {
                let to = code
                    .as_deref()
                    .and_then(|c| self.registry.get(c))
                    .and_then(|d| d.escalate_to.clone());
                inv.escalations.escalate(Escalation {
                    code: code.unwrap_or_else(|| "UNKNOWN".into()),
                    to,
                });
            }
            Err(error)
        };
        let mut last_code: Option<String> = None;
        for (ri, route) in p.routes.iter().enumerate() {
            if ri > 0 && !p.switch_delay.is_zero() {
                if deadline.is_some_and(|dl| Instant::now() + p.switch_delay >= dl) {
                    return fail(error, "deadline", last_code);
                }
                tokio::time::sleep(p.switch_delay).await;
            }
            let mut schedule = Schedule::new(&p.backoff);
            let mut attempt = 0u32;
            loop {
                let now = Instant::now();
                let left = deadline.map(|dl| dl.saturating_duration_since(now));
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
                    headers: vec![("x-retry-count".into(), (attempt - 1).to_string())],
                };
                let per_attempt = left.map_or(p.attempt_timeout, |l| l.min(p.attempt_timeout));
                let wall_now = inv.wall_start + (Instant::now() - start);
                let outcome = self
                    .attempt(inv.transport, request, per_attempt, wall_now)
                    .await;
                let (code, guidance, timeout, partial) = match outcome {
                    Attempt::Success(output) => {
                        return Ok(Success {
                            route: Some(route.name.clone()),
                            output,
                        })
                    }
                    Attempt::Failed {
                        code,
                        guidance,
                        timeout,
                        partial,
                    } => (code, guidance, timeout, partial),
                };
                error.push_attempt(AttemptNote {
                    route: route.name.clone(),
                    attempt,
                    code: code.code.clone(),
                });
                last_code = Some(code.code.clone());
                if partial {
                    return fail(error, "partial-output", last_code);
                }
                let def = if code.known {
                    self.registry.get(&code.code)
                } else {
                    None
                };
                let Some(def) = def.filter(|d| d.retryable || d.switch) else {
                    // Terminal: fail fast, no backoff computed.
                    return fail(error, "terminal", last_code);
                };
                if timeout
                    && inv.request.create
                    && idem_key.is_none()
                    && !p.retry_creates_without_key
                {
                    return fail(error, "not-idempotent", last_code);
                }
                if !def.retryable {
                    break; // switch to the next route
                }
                let budget = def
                    .max_attempts
                    .map_or(route.attempts, |m| m.min(route.attempts));
                if attempt >= budget {
                    break;
                }
                let backoff = schedule.delay(attempt - 1, || inv.jitter.next_unit());
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
                if deadline.is_some_and(|dl| Instant::now() + wait >= dl) {
                    return fail(error, "deadline", last_code);
                }
                tokio::time::sleep(wait).await;
            }
        }
        fail(error, "exhausted", last_code)
    }

    async fn attempt(
        &self,
        transport: &dyn Transport,
        request: Request,
        limit: Duration,
        wall_now: SystemTime,
    ) -> Attempt {
        let paths = &self.policy.body_paths;
        let failed = |obs: Observed<'_>, guidance, timeout, partial| Attempt::Failed {
            code: self.registry.classify(obs, paths).unwrap_or(Classified {
                code: "STREAM_BROKEN".into(),
                known: false,
            }),
            guidance,
            timeout,
            partial,
        };
        let response = match tokio::time::timeout(limit, transport.call(request)).await {
            Err(_) => return failed(Observed::Timeout, None, true, false),
            Ok(Err(TransportError::Reset)) => return failed(Observed::Reset, None, false, false),
            Ok(Err(_)) => return failed(Observed::Malformed, None, false, false),
            Ok(Ok(r)) => r,
        };
        let guidance = retry_after::guidance(
            response
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
            wall_now,
        );
        let status = response.status;
        match response.body {
            Body::Full(text) => match self.registry.classify(
                Observed::Response {
                    status,
                    body: Some(&text),
                },
                paths,
            ) {
                None => Attempt::Success(None),
                Some(code) => Attempt::Failed {
                    code,
                    guidance,
                    timeout: false,
                    partial: false,
                },
            },
            Body::Stream(mut stream) => {
                if !(200..300).contains(&status) {
                    return failed(
                        Observed::Response { status, body: None },
                        guidance,
                        false,
                        false,
                    );
                }
                let mut output = String::new();
                let mut delivered = false;
                while let Some(item) = stream.next().await {
                    match item {
                        Ok(SseItem::Comment(_)) => {}
                        Ok(SseItem::Event { data, .. }) => {
                            delivered = true;
                            output.push_str(&data);
                        }
                        Err(_) => return failed(Observed::Broken, None, false, delivered),
                    }
                }
                Attempt::Success(Some(output))
            }
        }
    }
}
