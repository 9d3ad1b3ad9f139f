//! The scripted transport: serves each route's entries once, in order, on
//! the virtual clock, and records every call as the harness observes it.
//!
//! Calls beyond the script, calls to unscripted routes and runaway loops are
//! harness failures: they are recorded and the row's run is aborted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::contracts::transport::{
    Body, BoxFuture, EventStream, Request, Response, StreamObserver, Transport, TransportError,
};
use crate::exec::upstream::{Pick, Upstream};
use crate::model::{Answer, Entry, RouteScript, SseItem};

/// How a call ended, as seen from the upstream's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Still in progress (never answered, never abandoned).
    Pending,
    /// Beyond the script (or the runaway guard): never answered.
    Unscripted,
    /// A response with this status (for streams: the stream completed).
    Status(u16),
    /// The client gave up before the answer.
    Timeout,
    /// Connection reset.
    Reset,
    /// Connection refused (nothing reached the upstream).
    Refused,
    /// Malformed response.
    Malformed,
    /// A stream broke part-way.
    Broken {
        /// Data events delivered before the break.
        data_events: usize,
    },
}

/// One observed call.
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// Route.
    pub route: String,
    /// Attempt on the route, 1-based.
    pub attempt: u32,
    /// Virtual time the call started, since the row's start.
    pub started: Duration,
    /// Virtual time the call ended (answer delivered or abandoned).
    pub ended: Option<Duration>,
    /// Outcome.
    pub outcome: Outcome,
    /// Body of the answer (for classification only; never printed whole).
    pub body: Option<String>,
    /// The request as sent.
    pub request: Request,
    /// Label of the script entry that answered.
    pub entry: String,
}

pub use crate::exec::upstream::RouteCursor;

/// The message of the [`TransportError::Other`] a `truncated` entry gives:
/// a 200 whose body stops short. Systems that only tell resets from the
/// rest see it as malformed, as before; the HTTP seam
/// ([`crate::exec::http`]) writes it as a truncated body on the wire.
pub const TRUNCATED: &str = "truncated response: the body stopped short of its content-length";

struct State {
    upstream: Upstream,
    calls: Vec<CallRecord>,
}

/// The per-row scripted transport. Cloning shares the row's state.
#[derive(Clone)]
pub struct Scripted {
    state: Arc<Mutex<State>>,
    start: Instant,
    /// The row's wall clock at `start` (relative header dates read it).
    wall: std::time::SystemTime,
    abort: Arc<Notify>,
}

/// What the harness keeps after a run.
#[derive(Debug, Default)]
pub struct ScriptReport {
    /// Calls in start order.
    pub calls: Vec<CallRecord>,
    /// Side calls, served from keyed scripts (`A GET /v1/models`), whose
    /// `route` is the script's key; kept out of the trace.
    pub side_calls: Vec<CallRecord>,
    /// Harness failures (extra call, unused entry, runaway...).
    pub failures: Vec<String>,
    /// Records created at create endpoints.
    pub records: u32,
}

use crate::base::lock;

impl Scripted {
    /// A transport serving these scripts; the clock starts now.
    pub fn new(scripts: &[RouteScript], max_calls: u32) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                upstream: Upstream::new(scripts, max_calls),
                calls: Vec::new(),
            })),
            start: Instant::now(),
            wall: faultmatrix_controller::policy::retry_after::default_wall_start(),
            abort: Arc::new(Notify::new()),
        }
    }

    /// Where the row's wall clock starts (default RFC 9110's example date):
    /// a header written `{ http-date: now+20s }` is 20s after it plus the
    /// virtual time elapsed when the answer is sent.
    pub fn with_wall(mut self, wall: std::time::SystemTime) -> Self {
        self.wall = wall;
        self
    }

    /// Appends an entry to a route's script (the recorder scripts each
    /// answer as it arrives from the live upstream).
    pub fn push_entry(&self, route: &str, entry: Entry) {
        lock(&self.state).upstream.push_entry(route, entry);
    }

    /// Notified when a harness failure aborts the run.
    pub fn abort_signal(&self) -> Arc<Notify> {
        self.abort.clone()
    }

    /// Virtual time since the row started.
    pub fn elapsed(&self) -> Duration {
        Instant::now() - self.start
    }

    /// Calls not yet answered or abandoned, as `A1 (scripted: timeout)`.
    pub fn in_flight(&self) -> Vec<String> {
        lock(&self.state)
            .calls
            .iter()
            .filter(|c| c.ended.is_none())
            .map(|c| {
                format!(
                    "{} (scripted: {})",
                    crate::base::label::call_label(&c.route, c.attempt),
                    c.entry
                )
            })
            .collect()
    }

    /// Records a harness failure from outside the transport.
    pub fn fail(&self, message: String) {
        lock(&self.state).upstream.fail(message);
    }

    /// Ends the row: checks for unused entries and hands over the record.
    pub fn finish(&self, route_order: &[&str]) -> ScriptReport {
        let mut st = lock(&self.state);
        let (failures, records) = st.upstream.finish(route_order);
        let mut calls = std::mem::take(&mut st.calls);
        calls.sort_by_key(|c| c.started);
        // Side calls (served from a keyed script) are not attempts: they
        // neither number nor drive the trace's decisions.
        // Most rows have none: their calls stay where they are (a call
        // record is hundreds of bytes, and partitioning moved each).
        let side = |c: &CallRecord| crate::model::split_key(&c.route).1.is_some();
        let (side_calls, calls) = if calls.iter().any(side) {
            calls.into_iter().partition(side)
        } else {
            (Vec::new(), calls)
        };
        ScriptReport {
            calls,
            side_calls,
            failures,
            records,
        }
    }

    fn set_end(&self, idx: usize, outcome: Option<Outcome>) {
        let now = self.elapsed();
        let mut st = lock(&self.state);
        // Tasks dropped after the row finished find no record: nothing to do.
        let Some(call) = st.calls.get_mut(idx) else {
            return;
        };
        if call.ended.is_none() {
            call.ended = Some(now);
        }
        if let Some(o) = outcome {
            call.outcome = o;
        }
    }
}

struct EndGuard {
    t: Scripted,
    idx: usize,
    armed: bool,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        if self.armed {
            // The client abandoned the call before it was answered.
            self.t.set_end(self.idx, Some(Outcome::Timeout));
        }
    }
}

struct Observer {
    t: Scripted,
    idx: usize,
    status: u16,
    data_events: usize,
}

impl StreamObserver for Observer {
    fn delivered(&mut self, item: &SseItem) {
        if matches!(item, SseItem::Event { .. }) {
            self.data_events += 1;
        }
    }
    fn finished(&mut self, broken: bool) {
        let outcome = if broken {
            Outcome::Broken {
                data_events: self.data_events,
            }
        } else {
            Outcome::Status(self.status)
        };
        self.t.set_end(self.idx, Some(outcome));
    }
    fn abandoned(&mut self) {
        self.t.set_end(self.idx, None);
    }
    fn abandoned_in_pause(&mut self) {
        // The stream stalled and the client's read gave up: a timeout.
        self.t.set_end(self.idx, Some(Outcome::Timeout));
    }
}

impl Transport for Scripted {
    fn call(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
        let now = self.elapsed();
        // What the answer needs of the request; the request itself goes
        // into the call's record (moved, not copied).
        let create = request.create;
        let idempotency_key = request.idempotency_key.clone();
        let (idx, served) = {
            let mut st = lock(&self.state);
            let header = |name: &str| {
                request
                    .headers
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.as_str())
            };
            let target = header(":method").zip(header(":path"));
            let (script, attempt, label, pick) = st.upstream.call_at(
                &request.route,
                target,
                request.create,
                request.idempotency_key.as_deref(),
            );
            st.calls.push(CallRecord {
                route: script,
                attempt,
                started: now,
                ended: None,
                outcome: Outcome::Pending,
                body: None,
                request,
                entry: label,
            });
            (st.calls.len() - 1, pick)
        };
        let this = self.clone();
        Box::pin(async move {
            let mut guard = EndGuard {
                t: this.clone(),
                idx,
                armed: true,
            };
            let entry = match served {
                Pick::Refused => {
                    guard.armed = false;
                    this.set_end(idx, Some(Outcome::Unscripted));
                    this.abort.notify_one();
                    return std::future::pending().await;
                }
                Pick::Stored((status, headers, body)) => {
                    guard.armed = false;
                    {
                        let mut st = lock(&this.state);
                        if let Some(c) = st.calls.get_mut(idx) {
                            c.body = Some(body.clone());
                        }
                    }
                    this.set_end(idx, Some(Outcome::Status(status)));
                    return Ok(Response {
                        status,
                        headers,
                        body: Body::Full(body),
                    });
                }
                Pick::Entry(e) => e,
            };
            if !entry.latency.is_zero() {
                tokio::time::sleep(entry.latency).await;
            }
            let mut entry = entry;
            // The clock is read only for an answer with relative dates.
            if entry.has_dates() {
                crate::exec::upstream::render_dates(&mut entry, this.wall + this.elapsed());
            }
            match entry.answer {
                Answer::Timeout => {
                    if create && entry.committed {
                        lock(&this.state)
                            .upstream
                            .committed_before_timeout(idempotency_key.as_deref());
                    }
                    // Hang until the client gives up; the guard records it.
                    std::future::pending().await
                }
                Answer::Reset => {
                    guard.armed = false;
                    this.set_end(idx, Some(Outcome::Reset));
                    Err(TransportError::Reset)
                }
                Answer::Refused => {
                    guard.armed = false;
                    this.set_end(idx, Some(Outcome::Refused));
                    Err(TransportError::Refused)
                }
                Answer::Malformed => {
                    guard.armed = false;
                    this.set_end(idx, Some(Outcome::Malformed));
                    Err(TransportError::Malformed)
                }
                Answer::Truncated => {
                    guard.armed = false;
                    this.set_end(idx, Some(Outcome::Malformed));
                    Err(TransportError::Other(TRUNCATED.into()))
                }
                Answer::Response(r) => {
                    guard.armed = false;
                    let ok = (200..300).contains(&r.status);
                    if create && ok {
                        lock(&this.state).upstream.created(
                            idempotency_key.as_deref(),
                            (
                                r.status,
                                r.headers.clone(),
                                r.body.clone().unwrap_or_default(),
                            ),
                        );
                    }
                    match r.stream {
                        Some(spec) => {
                            {
                                let mut st = lock(&this.state);
                                if let Some(c) = st.calls.get_mut(idx) {
                                    c.outcome = Outcome::Status(r.status);
                                }
                            }
                            let observer = Observer {
                                t: this.clone(),
                                idx,
                                status: r.status,
                                data_events: 0,
                            };
                            let stream = EventStream::new(spec.items, spec.breaks)
                                .with_pauses(spec.pauses)
                                .observed(Box::new(observer));
                            Ok(Response {
                                status: r.status,
                                headers: r.headers,
                                body: Body::Stream(stream),
                            })
                        }
                        None => {
                            let body = r.body.unwrap_or_default();
                            {
                                let mut st = lock(&this.state);
                                if let Some(c) = st.calls.get_mut(idx) {
                                    c.body = Some(body.clone());
                                }
                            }
                            this.set_end(idx, Some(Outcome::Status(r.status)));
                            Ok(Response {
                                status: r.status,
                                headers: r.headers,
                                body: Body::Full(body),
                            })
                        }
                    }
                }
            }
        })
    }
}
