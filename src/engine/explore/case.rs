//! A generated case: what each route answers, the jitter draws, the
//! deadline and the request. A case becomes a model [`Row`] (run like any
//! hand-written row) and, once shrunk, YAML a QA engineer can commit
//! (`render`). Both come from the same [`Step`]s, so the printed row is the
//! row that ran.

use std::time::{Duration, SystemTime};

use crate::model::registry::Registry;
use crate::model::{
    Answer as ModelAnswer, Entry, Expect, JitterInput, Repeat, RequestSpec, RouteScript, Row,
    Script, ScriptedResponse, Settings, SseItem, StreamSpec,
};

/// Which guidance header an answer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Header {
    /// `Retry-After` (delay-seconds or an HTTP-date).
    RetryAfter,
    /// `retry-after-ms`.
    RetryAfterMs,
}

impl Header {
    /// The header's name as sent.
    pub fn name(self) -> &'static str {
        match self {
            Header::RetryAfter => "Retry-After",
            Header::RetryAfterMs => "retry-after-ms",
        }
    }
}

/// What one call gets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Answer {
    /// `200 {"ok":true}`.
    Ok,
    /// A bare status, no body.
    Status(u16),
    /// A registry code's fixture.
    Code(String),
    /// A status with another code's error body: the body decides.
    Mixed {
        /// The status sent.
        status: u16,
        /// The code whose fixture body is sent.
        code: String,
    },
    /// A status with server guidance.
    Guidance {
        /// The status sent.
        status: u16,
        /// Which header.
        header: Header,
        /// Its value, as sent (may be malformed, past, huge).
        value: String,
    },
    /// Never answers.
    Timeout,
    /// Connection reset.
    Reset,
    /// Not HTTP.
    Malformed,
    /// A body cut short.
    Truncated,
    /// A `200` stream: `data` events, optionally after a keep-alive comment,
    /// ending or breaking.
    Stream {
        /// Data events before the end (or the break).
        data: u8,
        /// A `: keep-alive` comment first.
        comment: bool,
        /// The connection breaks after the items.
        breaks: bool,
    },
}

impl Answer {
    /// How complex the answer is, for shrinking (`ok` is simplest).
    pub fn weight(&self) -> u32 {
        match self {
            Answer::Ok => 0,
            Answer::Status(_) => 1,
            Answer::Timeout | Answer::Reset => 2,
            Answer::Malformed | Answer::Truncated => 3,
            Answer::Code(_) => 2,
            Answer::Mixed { .. } => 4,
            Answer::Guidance { .. } => 4,
            Answer::Stream { data, .. } => 3 + *data as u32,
        }
    }
}

/// One scripted answer and its latency.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Step {
    /// What the upstream does.
    pub answer: Answer,
    /// Virtual time before it starts.
    pub latency: Duration,
}

/// The request of a case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RequestKind {
    /// A create (not idempotent by nature).
    pub create: bool,
    /// It carries an idempotency key.
    pub key: bool,
    /// It is streamed.
    pub stream: bool,
}

/// One generated case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Every route of the system, in order, with at least one step; the
    /// last step answers every further call.
    pub routes: Vec<(String, Vec<Step>)>,
    /// Explicit jitter draws in `[0, 1)` (multiples of 1/16, printed exactly).
    pub draws: Vec<f64>,
    /// The row's own deadline.
    pub deadline: Option<Duration>,
    /// The request.
    pub request: RequestKind,
    /// Where the row's virtual wall clock starts (`clock: { wall: ... }`);
    /// `None` is the default (Sun, 06 Nov 1994 08:49:37 GMT).
    pub wall: Option<SystemTime>,
}

impl Case {
    /// The step that answers call `attempt` (1-based) on route `ri`.
    pub fn step(&self, ri: usize, attempt: u32) -> Option<&Step> {
        let steps = &self.routes.get(ri)?.1;
        let i = (attempt as usize)
            .saturating_sub(1)
            .min(steps.len().checked_sub(1)?);
        steps.get(i)
    }

    /// The index of a route by name.
    pub fn route_index(&self, route: &str) -> Option<usize> {
        self.routes.iter().position(|(r, _)| r == route)
    }

    /// Size for shrinking: steps, their complexity, draws, deadline, flags.
    pub fn size(&self) -> u64 {
        let steps: u64 = self
            .routes
            .iter()
            .flat_map(|(_, s)| s)
            .map(|s| 8 + s.answer.weight() as u64 + (!s.latency.is_zero()) as u64 * 2)
            .sum();
        steps
            + self.draws.len() as u64
            + self.draws.iter().filter(|d| **d != 0.0).count() as u64
            + self.deadline.is_some() as u64 * 2
            + self.wall.is_some() as u64 * 2
            + self.request.create as u64
            + self.request.key as u64
            + self.request.stream as u64
    }

    /// The request the system sends.
    pub fn request_spec(&self) -> RequestSpec {
        RequestSpec {
            stream: self.request.stream,
            create: self.request.create,
            idempotency_key: self.request.key,
            size: 1000,
            ..RequestSpec::default()
        }
    }

    /// The case as a row, run like any other: each route's steps in order,
    /// the last repeated for every further call.
    pub fn to_row(&self, registry: &Registry, max_calls: u32) -> Row {
        let scripts = self
            .routes
            .iter()
            .map(|(route, steps)| {
                let mut entries: Vec<Entry> = steps.iter().map(|s| entry(s, registry)).collect();
                if let Some(last) = entries.last_mut() {
                    last.repeat = Repeat::Forever;
                }
                RouteScript {
                    route: route.clone(),
                    entries,
                }
            })
            .collect();
        Row {
            name: "explore".into(),
            path: Vec::new(),
            ignore: None,
            tags: Vec::new(),
            script: Script::Inject(scripts),
            settings: Settings {
                deadline: self.deadline,
                jitter: JitterInput::Draws(self.draws.clone()),
                request: self.request_spec(),
                max_calls,
                wall: self.wall,
                ..Settings::default()
            },
            expect: Expect::default(),
        }
    }
}

fn response(status: u16, headers: Vec<(String, String)>, body: Option<String>) -> ModelAnswer {
    ModelAnswer::Response(ScriptedResponse {
        status,
        headers,
        body,
        stream: None,
        dates: Vec::new(),
    })
}

/// The error body of a code's fixture, when it has one.
pub fn fixture_body(registry: &Registry, code: &str) -> Option<String> {
    let f = registry.get(code)?.fixture.as_ref()?;
    match &f.entry.answer {
        ModelAnswer::Response(r) => r.body.clone(),
        _ => None,
    }
}

/// The stream items of a stream answer.
pub fn stream_items(data: u8, comment: bool) -> Vec<SseItem> {
    let mut items = Vec::new();
    if comment {
        items.push(SseItem::Comment("keep-alive".into()));
    }
    for i in 0..data {
        items.push(SseItem::Event {
            event: None,
            data: format!("t{}", i + 1),
            id: None,
        });
    }
    items
}

/// The model entry of a step (served once).
pub fn entry(step: &Step, registry: &Registry) -> Entry {
    let mut e = match &step.answer {
        Answer::Ok => Entry::ok(),
        Answer::Code(c) => match registry.get(c).and_then(|d| d.fixture.as_ref()) {
            Some(f) => {
                let mut e = f.entry.clone();
                e.label = c.clone();
                e
            }
            None => Entry::ok(),
        },
        other => {
            let answer = match other {
                Answer::Status(s) => response(*s, Vec::new(), None),
                Answer::Mixed { status, code } => {
                    response(*status, Vec::new(), fixture_body(registry, code))
                }
                Answer::Guidance {
                    status,
                    header,
                    value,
                } => response(
                    *status,
                    vec![(header.name().to_string(), value.clone())],
                    None,
                ),
                Answer::Timeout => ModelAnswer::Timeout,
                Answer::Reset => ModelAnswer::Reset,
                Answer::Malformed => ModelAnswer::Malformed,
                Answer::Truncated => ModelAnswer::Truncated,
                Answer::Stream {
                    data,
                    comment,
                    breaks,
                } => ModelAnswer::Response(ScriptedResponse {
                    status: 200,
                    headers: Vec::new(),
                    body: None,
                    stream: Some(StreamSpec {
                        items: stream_items(*data, *comment),
                        breaks: *breaks,
                        pauses: Vec::new(),
                    }),
                    dates: Vec::new(),
                }),
                Answer::Ok | Answer::Code(_) => unreachable!("handled above"),
            };
            Entry {
                answer,
                latency: Duration::ZERO,
                repeat: Repeat::Times(1),
                committed: false,
                label: "explore".into(),
            }
        }
    };
    e.latency = step.latency;
    e.repeat = Repeat::Times(1);
    e
}
