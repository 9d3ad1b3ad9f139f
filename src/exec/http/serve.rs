//! [`HttpRow`]: the row's transport served as HTTP/1.1 on the row's paused
//! runtime. [`HttpRow::base_url`] binds a loopback listener for a route (on
//! first use) and gives `http://127.0.0.1:PORT`, which any client takes
//! unchanged; [`HttpRow::connect`] gives an in-memory connection to a route
//! for a hyper connector. Both speak the same bytes as the fixture server
//! (`crate::exec::wire::http` writes them):
//!
//! | transport answer | on the wire |
//! |---|---|
//! | response | status line, headers, body with `content-length`, keep-alive |
//! | `latency` | the answer starts after it, on the virtual clock |
//! | `timeout` (never answers) | nothing is sent until the client closes: the call is a timeout at that instant |
//! | reset | the socket is closed with `SO_LINGER` 0 (a TCP RST; an in-memory connection just closes) |
//! | refused | cannot be served (the connection is already accepted): the run ends with stop `seam-error` |
//! | malformed | bytes that are not an HTTP response, then close |
//! | truncated | a 200 head promising twice the body that follows, then close |
//! | event stream | `text/event-stream`, chunked, one chunk per item, comments kept; a break closes without the last chunk |
//! | a stream's `delay` | nothing is sent for that virtual time; a client that closes meanwhile timed out |
//!
//! Requests are read with the fixture server's parser (same limits: heads
//! over 16 KiB, bodies over 1 MiB are answered 431/413 and consume no
//! script entry). Each call is also noted as a [`SeenCall`], from which
//! [`crate::exec::http::HttpSystem`] builds the final error.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::net::{TcpListener, TcpStream};

use crate::base::lock;
use crate::contracts::system::RowContext;
use crate::contracts::transport::{owned_names, Body, Request, TransportError};
use crate::exec::runtime::spawn_row_task;
use crate::exec::scripted::TRUNCATED;
use crate::exec::wire::http::{self, Chunked, Framing, Head, HttpError};

/// Longest request header value kept in an observation.
const MAX_VALUE: usize = 200;
/// Buffer of an in-memory connection, each way.
const DUPLEX_BUFFER: usize = 64 * 1024;
/// What a `malformed` entry writes (the fixture server's bytes).
const MALFORMED: &[u8] = b"HTTP/1.1 2x0 \x00\x01 not a response\r\n\x7f\x7f garbage\r\n\r\n";
/// The body a `truncated` entry starts (the fixture server's bytes).
const TRUNCATED_BODY: &[u8] = br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"#;

/// How a call ended, as the seam saw it on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeenOutcome {
    /// Not answered yet (or never: beyond the script).
    Pending,
    /// A response (for streams: the stream ended cleanly).
    Status {
        /// Status code.
        status: u16,
        /// The body, for classification (never printed whole).
        body: Option<String>,
    },
    /// The client went away before the answer.
    Timeout,
    /// The connection was reset.
    Reset,
    /// A malformed or truncated answer.
    Malformed,
    /// A stream that broke part-way.
    Broken,
}

/// One call the seam served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenCall {
    /// Route.
    pub route: String,
    /// Attempt on the route, 1-based (the trace's numbering).
    pub attempt: u32,
    /// How it ended.
    pub outcome: SeenOutcome,
}

struct Inner {
    ctx: RowContext,
    listeners: Mutex<Vec<(String, SocketAddr)>>,
    seen: Mutex<Vec<SeenCall>>,
    attempts: Mutex<HashMap<String, u32>>,
    errors: Mutex<Vec<String>>,
}

/// A row's upstreams as HTTP servers on the row's runtime. Cloning shares
/// them. Made by [`crate::exec::http::HttpSystem`], whose rows run on a
/// runtime with tokio's I/O driver.
#[derive(Clone)]
pub struct HttpRow {
    inner: Arc<Inner>,
}

impl HttpRow {
    /// The seam over a row's transport. Must run on a runtime with I/O
    /// enabled for [`HttpRow::base_url`] (systems whose
    /// [`crate::System::needs_io`] is true get one).
    pub(crate) fn new(ctx: RowContext) -> Self {
        Self {
            inner: Arc::new(Inner {
                ctx,
                listeners: Mutex::new(Vec::new()),
                seen: Mutex::new(Vec::new()),
                attempts: Mutex::new(HashMap::new()),
                errors: Mutex::new(Vec::new()),
            }),
        }
    }

    /// What the row handed the system: request id, jitter, deadline...
    pub fn ctx(&self) -> &RowContext {
        &self.inner.ctx
    }

    /// The synthetic id of this row's logical request (rows can assert it).
    pub fn request_id(&self) -> &str {
        &self.inner.ctx.request_id
    }

    /// `http://127.0.0.1:PORT` for a route: a listener on the row's runtime,
    /// bound on first use, serving that route's script. Give it to the
    /// client as its base URL.
    ///
    /// If no port can be bound, the error is kept (the run then ends with
    /// stop `seam-error` naming it) and a URL nothing listens on is given.
    pub fn base_url(&self, route: &str) -> String {
        if let Some((_, addr)) = lock(&self.inner.listeners).iter().find(|(r, _)| r == route) {
            return format!("http://{addr}");
        }
        match self.bind(route) {
            Ok(addr) => format!("http://{addr}"),
            Err(e) => {
                lock(&self.inner.errors).push(format!(
                    "cannot bind a loopback listener for route {route}: {e}"
                ));
                "http://127.0.0.1:0".into()
            }
        }
    }

    fn bind(&self, route: &str) -> std::io::Result<SocketAddr> {
        let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let listener = TcpListener::from_std(std_listener)?;
        lock(&self.inner.listeners).push((route.to_string(), addr));
        let inner = self.inner.clone();
        let route: Arc<str> = Arc::from(route);
        spawn_row_task(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let _ = sock.set_nodelay(true);
                spawn_row_task(serve_conn(inner.clone(), route.clone(), sock));
            }
        });
        Ok(addr)
    }

    /// An in-memory connection to a route, for a hyper connector
    /// (`hyper::client::conn::http1::handshake(TokioIo::new(stream))`, or a
    /// `tower::Service<Uri>` that maps the URI's host to a route). Needs no
    /// I/O driver.
    pub fn connect(&self, route: &str) -> DuplexStream {
        let (client, server) = tokio::io::duplex(DUPLEX_BUFFER);
        spawn_row_task(serve_conn(self.inner.clone(), Arc::from(route), server));
        client
    }

    /// The calls served so far, in arrival order.
    pub fn seen(&self) -> Vec<SeenCall> {
        lock(&self.inner.seen).clone()
    }

    /// Problems of the seam itself (a port that could not be bound).
    pub fn errors(&self) -> Vec<String> {
        lock(&self.inner.errors).clone()
    }

    fn note(&self, idx: usize, outcome: SeenOutcome) {
        if let Some(c) = lock(&self.inner.seen).get_mut(idx) {
            c.outcome = outcome;
        }
    }
}

/// A connection the seam serves: TCP or in-memory.
trait Conn: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Closes abruptly: a TCP RST where there is TCP.
    fn reset(self);
}

impl Conn for TcpStream {
    fn reset(self) {
        let _ = self.set_zero_linger();
        drop(self);
    }
}

impl Conn for DuplexStream {
    fn reset(self) {
        drop(self);
    }
}

/// Reads until the client closes (or errors). Data sent meanwhile is dropped.
async fn until_closed<S: Conn>(sock: &mut S) {
    // Small: it is part of the connection task's future, which tokio moves.
    let mut buf = [0u8; 64];
    loop {
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

async fn reject<S: Conn>(mut sock: S, e: HttpError) {
    let body = format!(
        "{{\"error\":{{\"message\":\"faultmatrix http seam: {}\",\"type\":\"bad_request\"}}}}",
        e.message
    );
    let bytes = http::response_bytes(e.status, &[], body.as_bytes(), true);
    let _ = sock.write_all(&bytes).await;
    let _ = sock.shutdown().await;
}

/// Reads what the socket has into `buf`'s spare room (no buffer on the
/// task's stack: the future stays small); false at the end or on an error.
async fn read_more<S: Conn>(sock: &mut S, buf: &mut Vec<u8>) -> bool {
    buf.reserve(4096);
    matches!(sock.read_buf(buf).await, Ok(n) if n > 0)
}

/// Reads one request (head and body) from `buf` and the socket.
async fn read_request<S: Conn>(
    sock: &mut S,
    buf: &mut Vec<u8>,
) -> Result<Option<(Head, Vec<u8>)>, HttpError> {
    let mut scan = http::HeadScan::new();
    let (head, used) = loop {
        if let Some(h) = scan.scan(buf)? {
            break h;
        }
        if !read_more(sock, buf).await {
            return Ok(None);
        }
    };
    buf.drain(..used);
    let body = match head.framing()? {
        Framing::None => Vec::new(),
        Framing::Length(n) => {
            if n > http::MAX_BODY as u64 {
                return Err(HttpError {
                    status: 413,
                    message: "request body too large",
                });
            }
            let n = n as usize;
            while buf.len() < n {
                if !read_more(sock, buf).await {
                    return Ok(None);
                }
            }
            buf.drain(..n).collect()
        }
        Framing::Chunked => {
            let mut dec = Chunked::default();
            loop {
                let (used, done) = dec.feed(buf, http::MAX_BODY)?;
                buf.drain(..used);
                if done {
                    break;
                }
                if !read_more(sock, buf).await {
                    return Ok(None);
                }
            }
            dec.data
        }
    };
    Ok(Some((head, body)))
}

/// The request as the transport and the trace see it.
fn to_request(ctx: &RowContext, route: &str, head: &Head, body: &[u8]) -> Request {
    let mut headers = http::observed_headers(head);
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let request_id = get("x-request-id").or_else(|| get("x-client-request-id"));
    let idempotency_key = get("idempotency-key").or_else(|| get("x-idempotency-key"));
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let model = json
        .as_ref()
        .and_then(|j| j.get("model"))
        .and_then(|m| m.as_str())
        .map(|m| m.chars().take(MAX_VALUE).collect())
        .or_else(|| ctx.request.model.clone());
    let stream = json
        .as_ref()
        .and_then(|j| j.get("stream"))
        .and_then(|s| s.as_bool())
        .unwrap_or(ctx.request.stream);
    headers.extend(crate::base::json_path::observe(
        body,
        &ctx.request_body_paths,
    ));
    headers.push((":method".into(), head.method.clone()));
    headers.push((
        ":path".into(),
        head.target.chars().take(MAX_VALUE).collect(),
    ));
    Request {
        route: route.to_string(),
        request_id,
        model,
        stream,
        create: ctx.request.create,
        idempotency_key,
        size: body.len() as u64,
        routing: ctx.request.routing.clone(),
        headers: owned_names(headers),
    }
}

async fn serve_conn<S: Conn>(inner: Arc<Inner>, route: Arc<str>, mut sock: S) {
    let row = HttpRow {
        inner: inner.clone(),
    };
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        let (head, body) = match read_request(&mut sock, &mut buf).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => return reject(sock, e).await,
        };
        let close = head
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
            || head.minor == 0;
        let request = to_request(&inner.ctx, &route, &head, &body);
        // A call matching a keyed side script is numbered apart from the
        // route's attempts (and kept out of the final error's attempts).
        let side =
            crate::model::side_key(&route, &head.method, crate::model::match_path(&head.target));
        let counted = if inner.ctx.side_scripts.contains(&side) {
            side
        } else {
            route.to_string()
        };
        let idx = {
            let attempt = {
                let mut a = lock(&inner.attempts);
                let n = a.entry(counted.clone()).or_insert(0);
                *n += 1;
                *n
            };
            let mut seen = lock(&inner.seen);
            seen.push(SeenCall {
                route: counted,
                attempt,
                outcome: SeenOutcome::Pending,
            });
            seen.len() - 1
        };
        let call = inner.ctx.transport.call(request);
        let answer = tokio::select! {
            r = call => Some(r),
            _ = until_closed(&mut sock) => None,
        };
        let response = match answer {
            // The client gave up first; dropping the call marks it a timeout.
            None => return row.note(idx, SeenOutcome::Timeout),
            Some(Err(TransportError::Reset)) => {
                row.note(idx, SeenOutcome::Reset);
                return sock.reset();
            }
            Some(Err(TransportError::Refused)) => {
                // The connection is already accepted: it cannot be refused
                // any more. The run ends with stop `seam-error` saying so.
                lock(&inner.errors).push(format!(
                    "route {route}: a `refused` answer cannot be served through the HTTP seam: \
                     its connection was already accepted (`refused` is for systems that call \
                     the transport directly)"
                ));
                row.note(idx, SeenOutcome::Reset);
                return sock.reset();
            }
            Some(Err(TransportError::Other(m))) if m == TRUNCATED => {
                // Promise twice the body, send the half, close.
                let mut bytes = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    TRUNCATED_BODY.len() * 2
                )
                .into_bytes();
                bytes.extend_from_slice(TRUNCATED_BODY);
                let _ = sock.write_all(&bytes).await;
                let _ = sock.shutdown().await;
                return row.note(idx, SeenOutcome::Malformed);
            }
            Some(Err(_)) => {
                let _ = sock.write_all(MALFORMED).await;
                let _ = sock.shutdown().await;
                return row.note(idx, SeenOutcome::Malformed);
            }
            Some(Ok(r)) => r,
        };
        match response.body {
            Body::Full(text) => {
                let bytes = http::response_bytes(
                    response.status,
                    &response.headers,
                    text.as_bytes(),
                    close,
                );
                let ok = sock.write_all(&bytes).await.is_ok();
                row.note(
                    idx,
                    if ok {
                        SeenOutcome::Status {
                            status: response.status,
                            body: Some(text),
                        }
                    } else {
                        SeenOutcome::Reset
                    },
                );
                if !ok || close {
                    let _ = sock.shutdown().await;
                    return;
                }
            }
            Body::Stream(mut events) => {
                let mut ok = sock
                    .write_all(&http::stream_head(response.status, &response.headers))
                    .await
                    .is_ok();
                let mut broken = false;
                while ok {
                    // A client that gives up during a scripted pause (its
                    // read timed out) closes the connection meanwhile.
                    let next = tokio::select! {
                        n = events.next() => Some(n),
                        _ = until_closed(&mut sock) => None,
                    };
                    let Some(next) = next else {
                        let stalled = events.stalled();
                        drop(events);
                        return row.note(
                            idx,
                            if stalled {
                                SeenOutcome::Timeout
                            } else {
                                SeenOutcome::Broken
                            },
                        );
                    };
                    match next {
                        Some(Ok(item)) => {
                            ok = sock.write_all(&http::sse_chunk(&item)).await.is_ok()
                        }
                        Some(Err(_)) => {
                            broken = true;
                            break;
                        }
                        None => break,
                    }
                }
                if broken || !ok {
                    row.note(idx, SeenOutcome::Broken);
                    let _ = sock.flush().await;
                    let _ = sock.shutdown().await;
                    return;
                }
                let ok = sock.write_all(http::LAST_CHUNK).await.is_ok();
                row.note(
                    idx,
                    if ok {
                        SeenOutcome::Status {
                            status: response.status,
                            body: None,
                        }
                    } else {
                        SeenOutcome::Broken
                    },
                );
                if !ok || close {
                    let _ = sock.shutdown().await;
                    return;
                }
            }
        }
    }
}
