//! The wire as a client's retry logic sees it: a request to a named route,
//! and a response (possibly an event stream) or a transport error. The
//! [`Controller`](crate::Controller) calls a [`Transport`]; in production it
//! is a real HTTP client behind the trait, in faultmatrix rows the scripted
//! upstream.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// One item of a server-sent-event stream.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SseItem {
    /// A comment line (`: keep-alive`): not data.
    Comment(String),
    /// An event with data.
    Event {
        /// `event:` field.
        event: Option<String>,
        /// `data:` field.
        data: String,
        /// `id:` field.
        id: Option<String>,
    },
}

/// What kind of request a client sends: what retry rules depend on.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RequestSpec {
    /// Model name, if any.
    pub model: Option<String>,
    /// Whether the response is streamed.
    pub stream: bool,
    /// Whether the request creates something (not idempotent by nature).
    pub create: bool,
    /// Whether the request carries an idempotency key.
    pub idempotency_key: bool,
    /// Request size in bytes (a retry of an LLM call resends all of it).
    pub size: u64,
    /// A routing block (for example a `provider` pin), as canonical JSON
    /// text (compact, keys sorted).
    pub routing: Option<String>,
}

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Headers read from a request, as [`Request::headers`] holds them (the
/// vector is reused in place: the two pair types are the same size).
pub fn owned_names(headers: Vec<(String, String)>) -> Vec<(Cow<'static, str>, String)> {
    headers
        .into_iter()
        .map(|(k, v)| (Cow::Owned(k), v))
        .collect()
}

/// One request, as far as retry logic and the trace care.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// The route (upstream) the request goes to.
    pub route: String,
    /// Request id header the client sends, if any.
    pub request_id: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Whether the response is streamed.
    pub stream: bool,
    /// Whether the request creates something.
    pub create: bool,
    /// Idempotency key header, if any.
    pub idempotency_key: Option<String>,
    /// Bytes sent.
    pub size: u64,
    /// Routing block (for example a `provider` pin), as canonical JSON text.
    pub routing: Option<String>,
    /// Other headers worth observing (never credentials). A name is most
    /// often a constant (`x-retry-count`): borrowed then, not copied for
    /// every request.
    pub headers: Vec<(Cow<'static, str>, String)>,
}

/// A response.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers in order.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Body,
}

impl Response {
    /// A header value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body text, if it is not a stream.
    pub fn text(&self) -> Option<&str> {
        match &self.body {
            Body::Full(s) => Some(s),
            Body::Stream(_) => None,
        }
    }
}

/// A response body.
pub enum Body {
    /// A complete body.
    Full(String),
    /// A server-sent-event stream.
    Stream(EventStream),
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(s) => f.debug_tuple("Full").field(s).finish(),
            Self::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// What ends a stream early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamBroken;

/// Observes a stream being consumed (the harness uses this to time calls).
pub trait StreamObserver: Send {
    /// An item was delivered to the client.
    fn delivered(&mut self, item: &SseItem);
    /// The stream ended; `broken` when the connection dropped.
    fn finished(&mut self, broken: bool);
    /// The client dropped the stream before its end.
    fn abandoned(&mut self);
    /// The client dropped the stream while it was stalled (in a scripted
    /// pause): its read timed out. Default: [`StreamObserver::abandoned`].
    fn abandoned_in_pause(&mut self) {
        self.abandoned()
    }
}

/// A server-sent-event stream.
pub struct EventStream {
    items: VecDeque<SseItem>,
    breaks: bool,
    done: bool,
    observer: Option<Box<dyn StreamObserver>>,
    /// Pauses before each item, and (last) before the end.
    pauses: VecDeque<Duration>,
    /// Inside a pause: a drop now is a read that timed out.
    pausing: bool,
}

impl EventStream {
    /// A stream of these items that ends (or breaks) after them.
    pub fn new(items: Vec<SseItem>, breaks: bool) -> Self {
        Self {
            items: items.into(),
            breaks,
            done: false,
            observer: None,
            pauses: VecDeque::new(),
            pausing: false,
        }
    }

    /// Pauses on the tokio clock (stalls): `pauses[i]` before item `i`,
    /// `pauses[items]` before the end or the break. Under a paused clock a
    /// reader's timeout trips exactly when the pause is longer.
    pub fn with_pauses(mut self, pauses: Vec<Duration>) -> Self {
        self.pauses = pauses.into();
        self
    }

    /// Attaches an observer.
    pub fn observed(mut self, observer: Box<dyn StreamObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Whether the stream is inside a scripted pause (a `next` that was
    /// dropped while it waited).
    pub fn stalled(&self) -> bool {
        self.pausing
    }

    /// The next item; `Some(Err(StreamBroken))` when the connection drops.
    pub async fn next(&mut self) -> Option<Result<SseItem, StreamBroken>> {
        if self.done {
            return None;
        }
        self.pausing = false;
        let pause = self.pauses.pop_front().unwrap_or(Duration::ZERO);
        if !pause.is_zero() {
            self.pausing = true;
            tokio::time::sleep(pause).await;
            self.pausing = false;
        }
        match self.items.pop_front() {
            Some(item) => {
                if let Some(o) = self.observer.as_mut() {
                    o.delivered(&item);
                }
                Some(Ok(item))
            }
            None => {
                self.done = true;
                if let Some(o) = self.observer.as_mut() {
                    o.finished(self.breaks);
                }
                if self.breaks {
                    Some(Err(StreamBroken))
                } else {
                    None
                }
            }
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        if !self.done {
            if let Some(o) = self.observer.as_mut() {
                if self.pausing {
                    o.abandoned_in_pause();
                } else {
                    o.abandoned();
                }
            }
        }
    }
}

/// A transport failure before any response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// The connection was reset.
    Reset,
    /// The connection was refused: the request never reached the server,
    /// so retrying it is safe even for a create.
    Refused,
    /// The response was not valid HTTP.
    Malformed,
    /// Anything else (message for humans).
    Other(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Reset => f.write_str("connection reset"),
            Self::Refused => f.write_str("connection refused"),
            Self::Malformed => f.write_str("malformed response"),
            Self::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TransportError {}

/// Sends requests. Timeouts are the caller's business: a transport may never
/// answer, so callers wrap calls in `tokio::time::timeout`.
pub trait Transport: Send + Sync {
    /// Sends one request.
    fn call(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>>;
}
