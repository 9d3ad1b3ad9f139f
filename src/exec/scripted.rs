//! The scripted transport: serves each route's entries once, in order, on
//! the virtual clock, and records every call as the harness observes it.
//!
//! Calls beyond the script, calls to unscripted routes and runaway loops are
//! harness failures: they are recorded and the row's run is aborted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::contracts::transport::{
    Body, BoxFuture, EventStream, Request, Response, StreamObserver, Transport, TransportError,
};
use crate::model::{Answer, Entry, Repeat, RouteScript, SseItem};

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

/// One route's script being served: each entry once, in order (an entry
/// with `repeat` as often as it says). Shared by the in-process transport
/// and the HTTP fixture server.
#[derive(Debug, Clone)]
pub struct RouteCursor {
    entries: Vec<Entry>,
    cursor: usize,
    served_current: u32,
    served_total: usize,
}

impl RouteCursor {
    /// A cursor at the start of a route's entries.
    pub fn new(entries: Vec<Entry>) -> Self {
        Self {
            entries,
            cursor: 0,
            served_current: 0,
            served_total: 0,
        }
    }

    /// A cursor per scripted route.
    pub fn for_scripts(scripts: &[RouteScript]) -> HashMap<String, RouteCursor> {
        scripts
            .iter()
            .map(|s| (s.route.clone(), RouteCursor::new(s.entries.clone())))
            .collect()
    }

    /// Appends an entry at the end of the script.
    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    /// The entry for call `attempt` on `route`, or the failure message of a
    /// call beyond the script.
    pub fn serve(&mut self, route: &str, attempt: u32) -> Result<Entry, String> {
        let Some(entry) = self.entries.get(self.cursor).cloned() else {
            let n = self.served_total;
            return Err(format!(
                "route {route}: call {attempt} but {n} answer{} scripted",
                if n == 1 { " was" } else { "s were" }
            ));
        };
        self.served_current += 1;
        self.served_total += 1;
        if let Repeat::Times(n) = entry.repeat {
            if self.served_current >= n {
                self.cursor += 1;
                self.served_current = 0;
            }
        }
        Ok(entry)
    }

    /// The failure message when scripted answers were never requested.
    pub fn unused(&self, route: &str) -> Option<String> {
        let mut unused = Vec::new();
        for (i, e) in self.entries.iter().enumerate().skip(self.cursor) {
            let left = match e.repeat {
                Repeat::Forever if i == self.cursor && self.served_current > 0 => 0,
                Repeat::Forever => 1,
                Repeat::Times(n) if i == self.cursor => n - self.served_current,
                Repeat::Times(n) => n,
            };
            for _ in 0..left {
                unused.push(e.label.clone());
            }
        }
        if unused.is_empty() {
            return None;
        }
        let n = unused.len();
        let t = self.served_total;
        Some(format!(
            "route {route}: {n} scripted answer{} never requested ({}); {t} call{} made",
            if n == 1 { " was" } else { "s were" },
            unused.join(", "),
            if t == 1 { " was" } else { "s were" },
        ))
    }
}

/// A committed create's response, replayed for the same idempotency key.
type Stored = (u16, Vec<(String, String)>, String);

struct State {
    routes: HashMap<String, RouteCursor>,
    calls: Vec<CallRecord>,
    failures: Vec<String>,
    records: u32,
    committed: HashMap<String, Stored>,
    max_calls: u32,
}

/// The per-row scripted transport. Cloning shares the row's state.
#[derive(Clone)]
pub struct Scripted {
    state: Arc<Mutex<State>>,
    start: Instant,
    abort: Arc<Notify>,
}

/// What the harness keeps after a run.
#[derive(Debug, Default)]
pub struct ScriptReport {
    /// Calls in start order.
    pub calls: Vec<CallRecord>,
    /// Harness failures (extra call, unused entry, runaway...).
    pub failures: Vec<String>,
    /// Records created at create endpoints.
    pub records: u32,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Scripted {
    /// A transport serving these scripts; the clock starts now.
    pub fn new(scripts: &[RouteScript], max_calls: u32) -> Self {
        let routes = RouteCursor::for_scripts(scripts);
        Self {
            state: Arc::new(Mutex::new(State {
                routes,
                calls: Vec::new(),
                failures: Vec::new(),
                records: 0,
                committed: HashMap::new(),
                max_calls,
            })),
            start: Instant::now(),
            abort: Arc::new(Notify::new()),
        }
    }

    /// Appends an entry to a route's script (the recorder scripts each
    /// answer as it arrives from the live upstream).
    pub fn push_entry(&self, route: &str, entry: Entry) {
        let mut st = lock(&self.state);
        st.routes
            .entry(route.to_string())
            .or_insert_with(|| RouteCursor::new(Vec::new()))
            .push(entry);
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
        lock(&self.state).failures.push(message);
    }

    /// Ends the row: checks for unused entries and hands over the record.
    pub fn finish(&self, route_order: &[String]) -> ScriptReport {
        let mut st = lock(&self.state);
        let mut failures = std::mem::take(&mut st.failures);
        for route in route_order {
            if let Some(msg) = st.routes.get(route).and_then(|rs| rs.unused(route)) {
                failures.push(msg);
            }
        }
        let mut calls = std::mem::take(&mut st.calls);
        calls.sort_by_key(|c| c.started);
        ScriptReport {
            calls,
            failures,
            records: st.records,
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
}

enum Served {
    Entry(Entry),
    Stored(u16, Vec<(String, String)>, String),
    Stop,
}

impl Transport for Scripted {
    fn call(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
        let now = self.elapsed();
        let (idx, served) = {
            let mut guard = lock(&self.state);
            let st = &mut *guard;
            let total = st.calls.len() as u32;
            let attempt = st.calls.iter().filter(|c| c.route == request.route).count() as u32 + 1;
            let route = request.route.clone();
            let mut served = Served::Stop;
            let mut label = String::from("-");
            if total >= st.max_calls {
                st.failures.push(format!(
                    "runaway guard: the system made more than {} calls (max_calls); it was stopped at {}",
                    st.max_calls,
                    crate::base::label::call_label(&route, attempt)
                ));
            } else {
                match st.routes.get_mut(&route) {
                    None => {
                        let known: Vec<&str> = st.routes.keys().map(String::as_str).collect();
                        st.failures.push(format!(
                            "route {route}: call {attempt} but no answers were scripted for route {route} (scripted routes: {})",
                            if known.is_empty() { "none".to_string() } else { known.join(", ") }
                        ));
                    }
                    Some(rs) => match rs.serve(&route, attempt) {
                        Ok(entry) => {
                            label = entry.label.clone();
                            served = Served::Entry(entry);
                        }
                        Err(msg) => st.failures.push(msg),
                    },
                }
            }
            // Idempotent replay of a committed create.
            if let (Served::Entry(_), true, Some(key)) =
                (&served, request.create, request.idempotency_key.as_ref())
            {
                if let Some((s, h, b)) = st.committed.get(key) {
                    served = Served::Stored(*s, h.clone(), b.clone());
                }
            }
            st.calls.push(CallRecord {
                route,
                attempt,
                started: now,
                ended: None,
                outcome: Outcome::Pending,
                body: None,
                request: request.clone(),
                entry: label,
            });
            (st.calls.len() - 1, served)
        };
        let this = self.clone();
        Box::pin(async move {
            let mut guard = EndGuard {
                t: this.clone(),
                idx,
                armed: true,
            };
            let entry = match served {
                Served::Stop => {
                    guard.armed = false;
                    this.set_end(idx, Some(Outcome::Unscripted));
                    this.abort.notify_one();
                    return std::future::pending().await;
                }
                Served::Stored(status, headers, body) => {
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
                Served::Entry(e) => e,
            };
            if !entry.latency.is_zero() {
                tokio::time::sleep(entry.latency).await;
            }
            match entry.answer {
                Answer::Timeout => {
                    if request.create && entry.committed {
                        let mut st = lock(&this.state);
                        st.records += 1;
                        let body = format!("{{\"id\":\"rec-{}\"}}", st.records);
                        if let Some(key) = &request.idempotency_key {
                            st.committed.insert(key.clone(), (201, Vec::new(), body));
                        }
                    }
                    // Hang until the client gives up; the guard records it.
                    std::future::pending().await
                }
                Answer::Reset => {
                    guard.armed = false;
                    this.set_end(idx, Some(Outcome::Reset));
                    Err(TransportError::Reset)
                }
                Answer::Malformed | Answer::Truncated => {
                    guard.armed = false;
                    this.set_end(idx, Some(Outcome::Malformed));
                    Err(TransportError::Malformed)
                }
                Answer::Response(r) => {
                    guard.armed = false;
                    let ok = (200..300).contains(&r.status);
                    if request.create && ok {
                        let mut st = lock(&this.state);
                        st.records += 1;
                        if let Some(key) = &request.idempotency_key {
                            st.committed.insert(
                                key.clone(),
                                (
                                    r.status,
                                    r.headers.clone(),
                                    r.body.clone().unwrap_or_default(),
                                ),
                            );
                        }
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
