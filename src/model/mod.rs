//! The validated domain model: what a matrix file means once loading has
//! checked it. Nothing here knows about YAML; positions are kept as paths so
//! a diagnostic or a failing row can point back at its source.

pub mod registry;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::base::duration::DurationSpec;
use crate::base::yaml::{Pos, Positions, Seg};
use crate::contracts::system::System;
use crate::model::registry::Registry;

/// One matrix file, validated.
pub struct Matrix {
    /// The file as the user named it (relative path, `/` separators).
    pub file: String,
    /// The file's text (for diagnostics and row positions).
    pub source: Arc<str>,
    /// The title line.
    pub title: String,
    /// The name of the system under test.
    pub system_name: String,
    /// The system, built from the file's `policy`.
    pub system: Arc<dyn System>,
    /// The reason-code registry in force for this file.
    pub registry: Arc<Registry>,
    /// The rows, in file order.
    pub rows: Vec<Row>,
    /// Error-body paths used to classify answers (empty: the defaults).
    pub body_paths: Vec<String>,
    /// Set when the system is a command: rows run over HTTP (see [`crate::exec::wire`]).
    pub command: Option<Arc<crate::exec::wire::CommandSpec>>,
    positions: OnceLock<Positions>,
}

impl Matrix {
    /// Assembles a validated matrix.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        file: String,
        source: Arc<str>,
        title: String,
        system_name: String,
        system: Arc<dyn System>,
        registry: Arc<Registry>,
        rows: Vec<Row>,
        body_paths: Vec<String>,
    ) -> Self {
        Self {
            file,
            source,
            title,
            system_name,
            system,
            registry,
            rows,
            body_paths,
            command: None,
            positions: OnceLock::new(),
        }
    }

    /// Error-body paths for classification.
    pub fn body_paths(&self) -> &[String] {
        &self.body_paths
    }

    /// The position index of the file, built on first use.
    pub fn positions(&self) -> &Positions {
        self.positions
            .get_or_init(|| Positions::index(&self.source))
    }

    /// Whether the position index has been built (a passing row never
    /// needs it: building it is a second parse of the file).
    pub fn positions_indexed(&self) -> bool {
        self.positions.get().is_some()
    }

    /// Position of a node, indexed on first use.
    pub fn pos(&self, path: &[Seg]) -> Pos {
        self.positions().value(path)
    }

    /// `file:line:col` of a row.
    pub fn row_location(&self, row: &Row) -> String {
        let mut name = row.path.clone();
        name.push(Seg::Key("name".into()));
        let p = self.positions().key(&name);
        format!("{}:{}:{}", self.file, p.line, p.col)
    }

    /// The stable test id of a row: `path/of/file.yaml::row name`.
    pub fn row_id(&self, row: &Row) -> String {
        format!("{}::{}", self.file, row.name)
    }
}

/// One row: a test.
#[derive(Debug, Clone)]
pub struct Row {
    /// Unique within the file.
    pub name: String,
    /// Path of the row node (`rows[3]`).
    pub path: Vec<Seg>,
    /// Why the row is ignored, if it is.
    pub ignore: Option<String>,
    /// Free-form tags for selection.
    pub tags: Vec<String>,
    /// What each route answers, in declaration order.
    pub inject: Vec<RouteScript>,
    /// Run settings after defaults were applied.
    pub settings: Settings,
    /// What must be observed.
    pub expect: Expect,
    /// The tape the row's script comes from, instead of `inject`.
    pub tape: Option<Box<crate::exec::tape::TapeRow>>,
}

/// The scripted answers of one route.
#[derive(Debug, Clone)]
pub struct RouteScript {
    /// The route's name.
    pub route: String,
    /// Entries in serving order.
    pub entries: Vec<Entry>,
}

/// How often an entry is served before the script moves on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Served this many times (at least 1).
    Times(u32),
    /// Served for every remaining call (bounded by the runaway guard).
    Forever,
}

/// One script entry: what one call (or a run of calls) gets.
#[derive(Debug, Clone)]
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
    /// The `ok` shorthand: `200 {"ok":true}`, served once.
    pub fn ok() -> Self {
        Entry {
            answer: Answer::Response(ScriptedResponse {
                status: 200,
                headers: Vec::new(),
                body: Some(r#"{"ok":true}"#.into()),
                stream: None,
            }),
            latency: Duration::ZERO,
            repeat: Repeat::Times(1),
            committed: false,
            label: "ok".into(),
        }
    }
}

/// What an upstream does for one call.
#[derive(Debug, Clone)]
pub enum Answer {
    /// An HTTP response (possibly a stream).
    Response(ScriptedResponse),
    /// The upstream never answers; the client must time out.
    Timeout,
    /// The connection is reset before a response.
    Reset,
    /// The response cannot be parsed as HTTP.
    Malformed,
    /// The response head promises more body than is sent before the
    /// connection closes (observed as `malformed`).
    Truncated,
}

/// A scripted HTTP response.
#[derive(Debug, Clone, Default)]
pub struct ScriptedResponse {
    /// Status code.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// JSON or text body (ignored when `stream` is set).
    pub body: Option<String>,
    /// A server-sent-event stream.
    pub stream: Option<StreamSpec>,
}

/// A scripted server-sent-event stream.
#[derive(Debug, Clone, Default)]
pub struct StreamSpec {
    /// Items in order.
    pub items: Vec<SseItem>,
    /// Whether the connection breaks after the items instead of ending.
    pub breaks: bool,
}

pub use faultmatrix_controller::{JitterInput, RequestSpec, SseItem};

/// Run settings of a row (row overrides file defaults).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Overrides the system's deadline.
    pub deadline: Option<Duration>,
    /// Jitter input.
    pub jitter: JitterInput,
    /// The request the system sends.
    pub request: RequestSpec,
    /// How long the clock keeps running after the system returns.
    pub horizon: Duration,
    /// Virtual time the system may run before the row fails as hung.
    pub budget: Duration,
    /// Calls after which the runaway guard stops the row.
    pub max_calls: u32,
    /// How far real waits may be from expected ones (over the wire only).
    pub tolerance: crate::exec::wire::Tolerance,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            deadline: None,
            jitter: JitterInput::Seed(0),
            request: RequestSpec {
                size: 1000,
                ..RequestSpec::default()
            },
            horizon: Duration::from_secs(3600),
            budget: Duration::from_secs(3600),
            max_calls: 100,
            tolerance: crate::exec::wire::Tolerance::default(),
        }
    }
}

/// One expected trace line.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedLine {
    /// The line as written (trimmed).
    pub text: String,
    /// Route name.
    pub route: String,
    /// Attempt on the route, 1-based.
    pub attempt: u32,
    /// Outcome token (`503`, `timeout`, `reset`, `malformed`, `broken`).
    pub outcome: String,
    /// Reason code, absent for success.
    pub code: Option<String>,
    /// Decision token.
    pub decision: Decision,
    /// Expected wait before the next call.
    pub wait: Option<DurationSpec>,
    /// Expected virtual time of the call's start.
    pub at: Option<DurationSpec>,
    /// Expected request id sent with the call.
    pub id: Option<String>,
    /// Expected request size in bytes.
    pub size: Option<u64>,
}

/// What followed a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Another call on the same route.
    Retry,
    /// A call on another route.
    Switch,
    /// The system returned success after this call.
    Return,
    /// The system returned an error after this call.
    Fail,
}

impl Decision {
    /// The token in trace text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::Switch => "switch",
            Self::Return => "return",
            Self::Fail => "fail",
        }
    }

    /// All tokens, for diagnostics.
    pub const ALL: [&'static str; 4] = ["retry", "switch", "return", "fail"];

    /// Parses a token.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "retry" => Self::Retry,
            "switch" => Self::Switch,
            "return" => Self::Return,
            "fail" => Self::Fail,
            _ => return None,
        })
    }
}

/// Stop reasons the built-in contract knows. Systems may report others.
pub const STOP_REASONS: [&str; 8] = [
    "success",
    "terminal",
    "exhausted",
    "deadline",
    "partial-output",
    "guidance-refused",
    "not-idempotent",
    "switch-refused",
];

/// An expected escalation event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedEscalation {
    /// Reason code.
    pub code: String,
    /// Target, if asserted.
    pub to: Option<String>,
}

/// Expectations on the final error the caller receives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExpectedError {
    /// The initial request id (`$request_id` means the row's synthetic id).
    pub request_id: Option<String>,
    /// The final code.
    pub code: Option<String>,
    /// The attempts as `A1 CODE` strings.
    pub attempts: Option<Vec<String>>,
    /// Upper bound on the rendered error's length in bytes.
    pub max_len: Option<usize>,
}

/// What a row asserts.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The exact trace, line by line.
    pub trace: Option<Vec<ExpectedLine>>,
    /// Path of the `trace` node, and whether it is a block string.
    pub trace_path: Vec<Seg>,
    /// Stop reason.
    pub stop: Option<String>,
    /// Virtual time from start until the system returned.
    pub elapsed: Option<DurationSpec>,
    /// The final error.
    pub error: Option<ExpectedError>,
    /// Escalation events, in order.
    pub escalations: Option<Vec<ExpectedEscalation>>,
    /// Records created at create endpoints.
    pub records: Option<u32>,
    /// Total bytes sent divided by the first attempt's bytes.
    pub amplification: Option<f64>,
    /// Output delivered to the caller (stream data), if asserted.
    pub output: Option<String>,
    /// The trace (and stop) is compared with a reviewed insta snapshot
    /// instead of `trace` (see [`crate::verdict::snapshot`]).
    pub snapshot: bool,
    /// Assertions on the requests themselves (headers, model, stream).
    pub requests: Vec<crate::exec::wire::assertions::RequestAssertion>,
}
