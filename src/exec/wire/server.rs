//! The fixture server: a row's scripts served over HTTP/1.1 on 127.0.0.1,
//! one listener per route on an ephemeral port, and every request observed
//! (arrival, method, path, selected headers, body size, model, stream flag).
//!
//! State belongs to one [`FixtureServer`] (one row): two rows running in
//! parallel have their own listeners, cursors and counters. Each entry is
//! served once, in order, per route, exactly as the in-process scripted
//! transport serves it:
//!
//! | entry | on the wire |
//! |---|---|
//! | status / full response | status line, headers, body with `content-length`, keep-alive |
//! | `latency` | the answer starts after it (a client that gives up first is a `timeout`) |
//! | `timeout` | nothing is sent; the server waits until the client closes the connection |
//! | `reset` | the socket is closed with `SO_LINGER` 0, so the client sees a TCP RST |
//! | `malformed` | bytes that are not an HTTP response, then the connection is closed |
//! | `truncated` | a 200 head promising twice the body that follows, then the connection is closed (observed as `malformed`) |
//! | stream | `text/event-stream`, chunked; each item a chunk; comment lines kept; a break closes the connection without the last chunk |
//! | a stream's `delay` | nothing is sent for that time; a client that closes meanwhile is a `timeout` |
//!
//! A call beyond the script is answered `500` with `x-should-retry: false`,
//! recorded as a failure, and signalled so the runner can stop the client.
//! Malformed requests get 400 (413 for bodies over [`http::MAX_BODY`], 431
//! for heads over [`http::MAX_HEAD`]) and the connection is closed; they are
//! not calls and consume no script entry.
//!
//! The request side is bounded ([`Limits`]): a head is read by
//! [`http::HeadScan`] (every byte counted once, blank lines before the
//! request included, parsed by `httparse`); a head must be complete within
//! [`HEAD_TIMEOUT`] of the connection's start, or of its first byte on a
//! kept-alive connection (else `408` and close); at most
//! [`MAX_CONNECTIONS`] connections are open at once per server (one more
//! gets `503` and is closed). These are real-clock limits: this server runs
//! on a real-time runtime; the virtual-clock server in [`super::vclock`]
//! reads heads through the same scanner.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};

use super::http::{self, observed_headers, Chunked, Framing, Head, HeadScan, HttpError};
use crate::exec::scripted::Outcome;
use crate::exec::upstream::{Pick, Upstream};
use crate::model::{Answer, RouteScript, SseItem};

/// Longest header value kept in an observation.
const MAX_VALUE: usize = 200;

/// Real time a request head may take: from the connection's start (or, on a
/// kept-alive connection, from the next request's first byte) to its blank
/// line.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections one server keeps open at once (all routes together).
pub const MAX_CONNECTIONS: usize = 256;

/// The request-side limits of a server. [`Limits::default`] is
/// [`HEAD_TIMEOUT`] and [`MAX_CONNECTIONS`]; tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// See [`HEAD_TIMEOUT`].
    pub head_timeout: Duration,
    /// See [`MAX_CONNECTIONS`].
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            head_timeout: HEAD_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}
/// Why a `refused` answer cannot be served on a socket.
pub const REFUSED_ON_A_SOCKET: &str =
    "a `refused` answer cannot be served on a connection already accepted: \
     a listener cannot refuse one connection and accept the next, so over the wire a refusal \
     is decided before the client connects (a `clock: virtual` command system's shim asks the \
     runner; `--over-http` asks the server through its `ConnectGate`)";

/// One request as the server saw it, and how it was answered.
#[derive(Debug, Clone)]
pub struct WireCall {
    /// Route (listener) it arrived on.
    pub route: String,
    /// Attempt on the route, 1-based.
    pub attempt: u32,
    /// Arrival of the request's first byte, since the server started.
    pub started: Duration,
    /// When the answer was complete, or the client went away.
    pub ended: Option<Duration>,
    /// How it ended.
    pub outcome: Outcome,
    /// Request method.
    pub method: String,
    /// Request target.
    pub path: String,
    /// Request headers (credentials left out, values bounded), lower-case names.
    pub headers: Vec<(String, String)>,
    /// Request body size in bytes (the body itself is not kept).
    pub body_size: u64,
    /// `model` of a JSON body.
    pub model: Option<String>,
    /// `stream` of a JSON body.
    pub stream: bool,
    /// What was kept of the body: the values at the row's asserted paths
    /// only, as pseudo-headers ([`crate::base::json_path::observe`]).
    pub body_seen: Vec<(String, String)>,
    /// Body of the answer (for classification; never printed whole).
    pub answer_body: Option<String>,
    /// Label of the script entry that answered.
    pub entry: String,
}

impl WireCall {
    /// A connection attempt refused at `now` by the route's `refused`
    /// entry (`label`): a call that sent nothing and took no time.
    pub fn refused(route: &str, attempt: u32, now: Duration, label: String) -> Self {
        WireCall {
            route: route.to_string(),
            attempt,
            started: now,
            ended: Some(now),
            outcome: Outcome::Refused,
            method: String::new(),
            path: String::new(),
            headers: Vec::new(),
            body_size: 0,
            model: None,
            stream: false,
            body_seen: Vec::new(),
            answer_body: None,
            entry: label,
        }
    }

    /// A recorded request header by name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct State {
    upstream: Upstream,
    calls: Vec<WireCall>,
    rejected: u32,
}

struct Shared {
    start: Instant,
    state: Mutex<State>,
    abort: Notify,
    /// Woken whenever a call ends (see [`Server::all_ended`]).
    ended: Notify,
    log: bool,
    create: bool,
    limits: Limits,
    body_paths: Vec<crate::base::json_path::JsonPath>,
}

/// How a fixture server behaves beyond its scripts.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// The runaway guard: most calls before the server refuses.
    pub max_calls: u32,
    /// Print a line per answered call to stderr.
    pub log: bool,
    /// Requests create something (the row's `request.create`): a 2xx
    /// answer, or a `committed: true` timeout, creates a record, and a later
    /// request with the same `idempotency-key` gets the committed answer
    /// instead of its scripted one, as the in-process transport does.
    pub create: bool,
    /// Request-body paths the row asserts: all that is kept of bodies.
    pub body_paths: Vec<crate::base::json_path::JsonPath>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        crate::base::lock(&self.state)
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn end(&self, idx: usize, outcome: Outcome) {
        let now = self.now();
        let mut st = self.lock();
        let c = &mut st.calls[idx];
        if c.ended.is_none() {
            c.ended = Some(now);
            c.outcome = outcome;
            self.ended.notify_waiters();
        }
        if self.log {
            eprintln!(
                "{:>8} {} {} {} -> {}",
                crate::base::duration::format(crate::base::duration::round_ms(c.started)),
                crate::exec::trace::call_label(&c.route, c.attempt),
                c.method,
                c.path,
                crate::exec::trace::outcome_token(&c.outcome)
            );
        }
    }
}

/// A route's listener.
#[derive(Debug, Clone)]
pub struct Listener {
    /// Route name.
    pub route: String,
    /// Bound address (always 127.0.0.1).
    pub addr: SocketAddr,
}

impl Listener {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// What the server observed, handed over when a row ends.
#[derive(Debug, Default)]
pub struct WireReport {
    /// Calls in arrival order.
    pub calls: Vec<WireCall>,
    /// Harness failures (extra call, unused entry, runaway).
    pub failures: Vec<String>,
    /// Requests rejected as malformed HTTP (not calls).
    pub rejected: u32,
    /// Records created (create requests only).
    pub records: u32,
}

/// The per-row fixture server. Dropping the runtime that runs it closes
/// every listener and connection.
pub struct FixtureServer {
    shared: Arc<Shared>,
    listeners: Vec<Listener>,
}

impl FixtureServer {
    /// Binds one listener per route on 127.0.0.1 (ephemeral ports) and
    /// starts serving. Must be called inside a tokio runtime with IO and
    /// time enabled.
    pub async fn start(scripts: &[RouteScript], max_calls: u32) -> std::io::Result<Self> {
        Self::start_with(
            scripts,
            ServerOptions {
                max_calls,
                ..ServerOptions::default()
            },
        )
        .await
    }

    /// As [`FixtureServer::start`], with options.
    pub async fn start_with(
        scripts: &[RouteScript],
        options: ServerOptions,
    ) -> std::io::Result<Self> {
        Self::start_limited(scripts, options, Limits::default()).await
    }

    /// As [`FixtureServer::start_with`], with request-side limits other
    /// than the defaults.
    pub async fn start_limited(
        scripts: &[RouteScript],
        options: ServerOptions,
        limits: Limits,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            start: Instant::now(),
            state: Mutex::new(State {
                upstream: Upstream::new(scripts, options.max_calls),
                calls: Vec::new(),
                rejected: 0,
            }),
            abort: Notify::new(),
            ended: Notify::new(),
            log: options.log,
            create: options.create,
            limits,
            body_paths: options.body_paths,
        });
        let open = Arc::new(Semaphore::new(limits.max_connections));
        let mut listeners = Vec::new();
        for s in scripts {
            // One listener per route: keyed side scripts share their route's.
            let route = s.key().0;
            if listeners.iter().any(|x: &Listener| x.route == route) {
                continue;
            }
            let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
            let addr = l.local_addr()?;
            listeners.push(Listener {
                route: route.to_string(),
                addr,
            });
            let route: Arc<str> = Arc::from(route);
            let sh = shared.clone();
            let open = open.clone();
            tokio::spawn(async move {
                loop {
                    match l.accept().await {
                        Ok((sock, _)) => {
                            let _ = sock.set_nodelay(true);
                            let Ok(permit) = open.clone().try_acquire_owned() else {
                                tokio::spawn(reject(
                                    sh.clone(),
                                    sock,
                                    HttpError {
                                        status: 503,
                                        message: "too many open connections",
                                    },
                                ));
                                continue;
                            };
                            let (sh, route) = (sh.clone(), route.clone());
                            tokio::spawn(async move {
                                serve_conn(sh, route, sock).await;
                                drop(permit);
                            });
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    }
                }
            });
        }
        Ok(Self { shared, listeners })
    }

    /// The listeners, in script order.
    pub fn listeners(&self) -> &[Listener] {
        &self.listeners
    }

    /// When the row's clock started (the server's start).
    pub fn start_instant(&self) -> Instant {
        self.shared.start
    }

    /// Resolves when a harness failure (extra call, runaway) happened.
    pub async fn aborted(&self) {
        self.shared.abort.notified().await
    }

    /// Whether a harness failure has been recorded.
    pub fn has_failures(&self) -> bool {
        self.shared.lock().upstream.has_failures()
    }

    /// The gate a client that owns its connections asks before each one
    /// (see [`ConnectGate`]).
    pub fn gate(&self) -> ConnectGate {
        ConnectGate(self.shared.clone())
    }

    /// Waits (up to `bound` of real time) until every call so far has
    /// ended: the server's connection tasks see a closed socket as soon as
    /// they run, so this returns once they have, not at a polling tick.
    /// Whether they all had.
    pub async fn all_ended(&self, bound: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let notified = self.shared.ended.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shared.lock().calls.iter().all(|c| c.ended.is_some()) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }

    /// A snapshot of the calls so far.
    pub fn calls(&self) -> Vec<WireCall> {
        self.shared.lock().calls.clone()
    }

    /// Ends the row: unused entries become failures; hands over the record.
    pub fn finish(&self, route_order: &[&str]) -> WireReport {
        let mut st = self.shared.lock();
        let (failures, records) = st.upstream.finish(route_order);
        let mut calls = std::mem::take(&mut st.calls);
        calls.sort_by_key(|c| c.started);
        WireReport {
            calls,
            failures,
            rejected: st.rejected,
            records,
        }
    }
}

/// Asked before a connection to a route: when the route's next entry is
/// `refused`, that entry is the call (recorded now, ended at once, outcome
/// `refused`) and the client must not connect. A listener cannot refuse one
/// connection and accept the next, so only a client that asks can be
/// refused honestly: the in-process system over HTTP (`--over-http`),
/// whose transport the runner owns.
#[derive(Clone)]
pub struct ConnectGate(Arc<Shared>);

impl std::fmt::Debug for ConnectGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectGate")
    }
}

impl ConnectGate {
    /// Whether this connection attempt to `route` is refused (and the
    /// route's `refused` entry served as a call).
    pub fn refuse(&self, route: &str) -> bool {
        let now = self.0.now();
        let mut st = self.0.lock();
        let Some((attempt, label)) = st.upstream.refuse_connect(route) else {
            return false;
        };
        st.calls.push(WireCall::refused(route, attempt, now, label));
        if st.upstream.has_failures() {
            // The runaway guard stopped the run at this call.
            drop(st);
            self.0.abort.notify_one();
        }
        true
    }
}

pub(crate) fn observe(head: &Head, body: &[u8]) -> (Vec<(String, String)>, Option<String>, bool) {
    let headers = observed_headers(head);
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let model = json
        .as_ref()
        .and_then(|j| j.get("model"))
        .and_then(|m| m.as_str())
        .map(|m| m.chars().take(MAX_VALUE).collect());
    let stream = json
        .as_ref()
        .and_then(|j| j.get("stream"))
        .and_then(|s| s.as_bool())
        .unwrap_or(false);
    (headers, model, stream)
}

/// What a call gets, and the index of its record.
fn pick(shared: &Shared, route: &str, call: WireCall) -> (usize, Pick) {
    let mut st = shared.lock();
    let key = call.header("idempotency-key").map(str::to_string);
    let target = Some((call.method.as_str(), call.path.as_str()));
    let (script, attempt, entry, pick) =
        st.upstream
            .call_at(route, target, shared.create, key.as_deref());
    st.calls.push(WireCall {
        route: script,
        attempt,
        entry,
        ..call
    });
    (st.calls.len() - 1, pick)
}

/// Reads until the client closes (or errors). Data sent meanwhile is dropped.
async fn until_closed(sock: &mut TcpStream) {
    let mut buf = [0u8; 1024];
    loop {
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// A stream's scripted pause: false when the client closed meanwhile (its
/// read timed out).
async fn pause(sock: &mut TcpStream, pause: Duration) -> bool {
    if pause.is_zero() {
        return true;
    }
    let _ = sock.flush().await;
    tokio::select! {
        _ = tokio::time::sleep(pause) => true,
        _ = until_closed(sock) => false,
    }
}

async fn reject(shared: Arc<Shared>, mut sock: TcpStream, e: HttpError) {
    shared.lock().rejected += 1;
    let body = format!(
        "{{\"error\":{{\"message\":\"faultmatrix fixture server: {}\",\"type\":\"bad_request\"}}}}",
        e.message
    );
    let bytes = http::response_bytes(e.status, &[], body.as_bytes(), true);
    let _ = sock.write_all(&bytes).await;
    let _ = sock.shutdown().await;
    // Lingering close: read what the client is still sending for a short
    // while, so closing with unread bytes does not reset the connection
    // before the client has read the answer.
    let linger = async {
        let mut chunk = [0u8; 8192];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, linger).await;
}

/// How long, and for how many bytes, a rejected connection is drained
/// before it is closed.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1024 * 1024;

async fn serve_conn(shared: Arc<Shared>, route: Arc<str>, mut sock: TcpStream) {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    // The first head is timed from the connection's start.
    let mut deadline = Some(tokio::time::Instant::now() + shared.limits.head_timeout);
    loop {
        // The head.
        let mut arrived = (!buf.is_empty()).then(|| shared.now());
        let mut scan = HeadScan::new();
        let (head, used) = loop {
            match scan.scan(&buf) {
                Ok(Some(h)) => break h,
                Ok(None) => {}
                Err(e) => return reject(shared, sock, e).await,
            }
            if deadline.is_none() && !buf.is_empty() {
                // A kept-alive connection: timed from the request's first byte.
                deadline = Some(tokio::time::Instant::now() + shared.limits.head_timeout);
            }
            let mut chunk = [0u8; 4096];
            let read = match deadline {
                Some(at) => match tokio::time::timeout_at(at, sock.read(&mut chunk)).await {
                    Ok(r) => r,
                    Err(_) if buf.is_empty() => {
                        // Nothing was sent: not a request, just close.
                        let _ = sock.shutdown().await;
                        return;
                    }
                    Err(_) => {
                        let e = HttpError {
                            status: 408,
                            message: "request head not complete in time",
                        };
                        return reject(shared, sock, e).await;
                    }
                },
                None => sock.read(&mut chunk).await,
            };
            match read {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if arrived.is_none() {
                        arrived = Some(shared.now());
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
            }
        };
        deadline = None;
        buf.drain(..used);
        let started = arrived.unwrap_or_else(|| shared.now());
        // The body. A client that asks first (curl does above 1 KiB) is told
        // to go on, so it does not wait a second before sending.
        let expects_continue = head
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        if expects_continue
            && buf.is_empty()
            && matches!(head.framing(), Ok(Framing::Length(n)) if n > 0 && n <= http::MAX_BODY as u64)
            && sock
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .is_err()
        {
            return;
        }
        let body = match head.framing() {
            Err(e) => return reject(shared, sock, e).await,
            Ok(Framing::None) => Vec::new(),
            Ok(Framing::Length(n)) => {
                if n > http::MAX_BODY as u64 {
                    return reject(
                        shared,
                        sock,
                        HttpError {
                            status: 413,
                            message: "request body too large",
                        },
                    )
                    .await;
                }
                let n = n as usize;
                while buf.len() < n {
                    let mut chunk = [0u8; 8192];
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
                buf.drain(..n).collect()
            }
            Ok(Framing::Chunked) => {
                let mut dec = Chunked::default();
                loop {
                    match dec.feed(&buf, http::MAX_BODY) {
                        Err(e) => return reject(shared, sock, e).await,
                        Ok((used, done)) => {
                            buf.drain(..used);
                            if done {
                                break;
                            }
                        }
                    }
                    let mut chunk = [0u8; 8192];
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
                dec.data
            }
        };
        let (headers, model, stream) = observe(&head, &body);
        let call = WireCall {
            route: route.to_string(),
            attempt: 0,
            started,
            ended: None,
            outcome: Outcome::Pending,
            method: head.method.clone(),
            path: head.target.chars().take(MAX_VALUE).collect(),
            headers,
            body_size: body.len() as u64,
            model,
            stream,
            body_seen: crate::base::json_path::observe(&body, &shared.body_paths),
            answer_body: None,
            entry: "-".into(),
        };
        let client_close = head
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
            || head.minor == 0;
        let key = call.header("idempotency-key").map(str::to_string);
        let (idx, mut entry) = match pick(&shared, &route, call) {
            (i, Pick::Entry(e)) => (i, e),
            (i, Pick::Stored((status, headers, body))) => {
                let bytes = http::response_bytes(status, &headers, body.as_bytes(), client_close);
                let ok = sock.write_all(&bytes).await.is_ok();
                shared.lock().calls[i].answer_body = Some(body);
                shared.end(
                    i,
                    if ok {
                        Outcome::Status(status)
                    } else {
                        Outcome::Reset
                    },
                );
                if !ok || client_close {
                    let _ = sock.shutdown().await;
                    return;
                }
                continue;
            }
            (i, Pick::Refused) => {
                let body = br#"{"error":{"message":"faultmatrix: no answer was scripted for this call","type":"fixture_exhausted"}}"#;
                let bytes = http::response_bytes(
                    500,
                    &[("x-should-retry".into(), "false".into())],
                    body,
                    true,
                );
                let _ = sock.write_all(&bytes).await;
                shared.end(i, Outcome::Unscripted);
                shared.abort.notify_one();
                let _ = sock.shutdown().await;
                return;
            }
        };
        if !entry.latency.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(entry.latency) => {}
                _ = until_closed(&mut sock) => {
                    shared.end(idx, Outcome::Timeout);
                    return;
                }
            }
        }
        // A real-clock client reads the real wall clock.
        crate::exec::upstream::render_dates(&mut entry, std::time::SystemTime::now());
        if let Answer::Response(r) = &entry.answer {
            if shared.create && (200..300).contains(&r.status) {
                let body = r.body.clone().unwrap_or_default();
                shared
                    .lock()
                    .upstream
                    .created(key.as_deref(), (r.status, r.headers.clone(), body));
            }
        }
        match entry.answer {
            Answer::Refused => {
                // The connection is already accepted: refusing it now
                // would be a lie. The loader refuses these rows on the real
                // clock and `--over-http` refuses through the gate before
                // connecting; this is the guard for a server used otherwise.
                shared.lock().upstream.fail(REFUSED_ON_A_SOCKET.into());
                let _ = sock.set_zero_linger();
                shared.end(idx, Outcome::Unscripted);
                shared.abort.notify_one();
                return;
            }
            Answer::Timeout => {
                if shared.create && entry.committed {
                    shared
                        .lock()
                        .upstream
                        .committed_before_timeout(key.as_deref());
                }
                until_closed(&mut sock).await;
                shared.end(idx, Outcome::Timeout);
                return;
            }
            Answer::Reset => {
                let _ = sock.set_zero_linger();
                shared.end(idx, Outcome::Reset);
                drop(sock);
                return;
            }
            Answer::Malformed => {
                let _ = sock
                    .write_all(b"HTTP/1.1 2x0 \x00\x01 not a response\r\n\x7f\x7f garbage\r\n\r\n")
                    .await;
                let _ = sock.shutdown().await;
                shared.end(idx, Outcome::Malformed);
                return;
            }
            Answer::Truncated => {
                let body = br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"#;
                let mut bytes = http::response_bytes(200, &[], body, true);
                // Promise twice the body, send the half, close.
                let promised = format!("content-length: {}", body.len() * 2);
                let text = String::from_utf8_lossy(&bytes)
                    .replace(&format!("content-length: {}", body.len()), &promised);
                bytes = text.into_bytes();
                let _ = sock.write_all(&bytes).await;
                let _ = sock.shutdown().await;
                shared.end(idx, Outcome::Malformed);
                return;
            }
            Answer::Response(r) => match r.stream {
                None => {
                    let body = r.body.unwrap_or_default();
                    let bytes =
                        http::response_bytes(r.status, &r.headers, body.as_bytes(), client_close);
                    let ok = sock.write_all(&bytes).await.is_ok();
                    shared.lock().calls[idx].answer_body = Some(body);
                    shared.end(
                        idx,
                        if ok {
                            Outcome::Status(r.status)
                        } else {
                            Outcome::Reset
                        },
                    );
                    if !ok || client_close {
                        let _ = sock.shutdown().await;
                        return;
                    }
                }
                Some(spec) => {
                    let mut ok = sock
                        .write_all(&http::stream_head(r.status, &r.headers))
                        .await
                        .is_ok();
                    let mut data_events = 0;
                    for (i, item) in spec.items.iter().enumerate() {
                        if !ok {
                            break;
                        }
                        if !pause(&mut sock, spec.pause_before(i)).await {
                            shared.end(idx, Outcome::Timeout);
                            return;
                        }
                        ok = sock.write_all(&http::sse_chunk(item)).await.is_ok();
                        if ok && matches!(item, SseItem::Event { .. }) {
                            data_events += 1;
                        }
                    }
                    let _ = sock.flush().await;
                    if ok && !pause(&mut sock, spec.pause_before(spec.items.len())).await {
                        shared.end(idx, Outcome::Timeout);
                        return;
                    }
                    if spec.breaks || !ok {
                        shared.end(idx, Outcome::Broken { data_events });
                        let _ = sock.shutdown().await;
                        return;
                    }
                    let ok = sock.write_all(http::LAST_CHUNK).await.is_ok();
                    shared.end(
                        idx,
                        if ok {
                            Outcome::Status(r.status)
                        } else {
                            Outcome::Broken { data_events }
                        },
                    );
                    if !ok || client_close {
                        let _ = sock.shutdown().await;
                        return;
                    }
                }
            },
        }
    }
}
