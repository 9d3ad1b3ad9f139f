//! What routes answer: script entries (a status, a fault, a full response
//! or an event stream), each served once, in order, or repeated.

use std::time::Duration;

pub use faultmatrix_controller::SseItem;

/// The scripted answers of one route, or of one route's side calls.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RouteScript {
    /// The route's name (`A`), or for a keyed side script the route, method
    /// and path (`A GET /v1/models`, see [`side_key`]).
    pub route: String,
    /// Entries in serving order.
    pub entries: Vec<Entry>,
}

impl RouteScript {
    /// The route and, for a keyed side script, its method and path.
    pub fn key(&self) -> (&str, Option<(&str, &str)>) {
        split_key(&self.route)
    }
}

/// The name of a keyed side script: `A GET /v1/models`.
pub fn side_key(route: &str, method: &str, path: &str) -> String {
    format!("{route} {method} {path}")
}

/// Splits a script name into its route and, for a keyed side script, its
/// method and path (`A GET /v1/models` -> `A`, `GET`, `/v1/models`).
pub fn split_key(name: &str) -> (&str, Option<(&str, &str)>) {
    // Most keys are a route alone (asked on every call and every finish),
    // a few bytes long: a plain loop, not a searcher set up for each.
    if !name.bytes().any(|b| b == b' ') {
        return (name, None);
    }
    let mut parts = name.splitn(3, ' ');
    let route = parts.next().unwrap_or(name);
    match (parts.next(), parts.next()) {
        (Some(m), Some(p)) => (route, Some((m, p))),
        _ => (name, None),
    }
}

/// The path a request is matched on: its target without the query string.
pub fn match_path(target: &str) -> &str {
    target.split(['?', '#']).next().unwrap_or(target)
}

/// How often an entry is served before the script moves on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Repeat {
    /// Served this many times (at least 1).
    Times(u32),
    /// Served for every remaining call (bounded by the runaway guard).
    Forever,
}

/// One script entry: what one call (or a run of calls) gets.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// What the upstream does.
    pub answer: Answer,
    /// Virtual time before the answer starts.
    pub latency: Duration,
    /// How often it is served.
    pub repeat: Repeat,
    /// For create requests: whether a timeout happened after the upstream
    /// committed the record.
    pub committed: bool,
    /// Short text for messages (`503`, `timeout`, `RATE_LIMITED`).
    pub label: String,
}

impl Entry {
    /// Whether the answer has header dates written relative to the moment
    /// it is sent (`{ http-date: now+20s }`), to render then.
    pub fn has_dates(&self) -> bool {
        matches!(&self.answer, Answer::Response(r) if !r.dates.is_empty())
    }

    /// The `ok` shorthand: `200 {"ok":true}`, served once.
    pub fn ok() -> Self {
        Entry {
            answer: Answer::Response(ScriptedResponse {
                status: 200,
                headers: Vec::new(),
                body: Some(r#"{"ok":true}"#.into()),
                stream: None,
                dates: Vec::new(),
            }),
            latency: Duration::ZERO,
            repeat: Repeat::Times(1),
            committed: false,
            label: "ok".into(),
        }
    }
}

/// What an upstream does for one call.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Answer {
    /// An HTTP response (possibly a stream).
    Response(ScriptedResponse),
    /// The upstream never answers; the client must time out.
    Timeout,
    /// The connection is reset before a response.
    Reset,
    /// The connection is refused: nothing reaches the upstream (in
    /// process only; see `docs/over-the-wire.md` for why not on a socket).
    Refused,
    /// The response cannot be parsed as HTTP.
    Malformed,
    /// The response head promises more body than is sent before the
    /// connection closes (observed as `malformed`).
    Truncated,
}

/// A scripted HTTP response.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ScriptedResponse {
    /// Status code.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// JSON or text body (ignored when `stream` is set).
    pub body: Option<String>,
    /// A server-sent-event stream.
    pub stream: Option<StreamSpec>,
    /// Headers whose value is an HTTP-date relative to the wall clock when
    /// the answer goes out (`retry-after: { http-date: now+20s }`); see
    /// [`ScriptedResponse::render_dates`].
    pub dates: Vec<RelativeDate>,
}

/// A header value written relative to "now": an HTTP-date `offset` after
/// (or before) the row's wall clock at the moment the answer is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RelativeDate {
    /// Index of the header in [`ScriptedResponse::headers`].
    pub header: usize,
    /// Whether the date is in the past (`now-5s`).
    pub past: bool,
    /// Distance from now.
    pub offset: Duration,
    /// Which of the three HTTP-date forms is written.
    pub form: faultmatrix_controller::policy::retry_after::DateForm,
}

impl ScriptedResponse {
    /// Writes every relative date against `now` (the row's wall clock as
    /// the answer goes out) into its header, once: the in-process
    /// transport, the fixture servers and the virtual-clock server call it
    /// when they send the answer.
    pub fn render_dates(&mut self, now: std::time::SystemTime) {
        for d in std::mem::take(&mut self.dates) {
            let at = if d.past {
                now.checked_sub(d.offset).unwrap_or(std::time::UNIX_EPOCH)
            } else {
                now + d.offset
            };
            if let Some(h) = self.headers.get_mut(d.header) {
                h.1 =
                    faultmatrix_controller::policy::retry_after::format_http_date(at, d.form as u8);
            }
        }
    }
}

/// A scripted server-sent-event stream.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct StreamSpec {
    /// Items in order.
    pub items: Vec<SseItem>,
    /// Whether the connection breaks after the items instead of ending.
    pub breaks: bool,
    /// Virtual pauses (stalls): `pauses[i]` before `items[i]`, and
    /// `pauses[items.len()]` before the end or the break. Empty: no pause.
    pub pauses: Vec<Duration>,
}

impl StreamSpec {
    /// The pause before item `i` (`i == items.len()`: before the end).
    pub fn pause_before(&self, i: usize) -> Duration {
        self.pauses.get(i).copied().unwrap_or(Duration::ZERO)
    }
}
