//! What a row asserts: the expected trace lines, the stop reason, the final
//! error, escalations and the rest.

use crate::base::duration::DurationSpec;
use crate::base::yaml::Seg;
use crate::model::requests::RequestAssertion;

/// One expected trace line. Its route, outcome and code are read from
/// `text` where they were written ([`ExpectedLine::route`] and the others):
/// a copy of each cost three allocations a line, loading and dropping.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExpectedLine {
    /// The line as written (trimmed).
    pub text: String,
    /// Where the route name lies in `text`.
    pub route_at: TextSpan,
    /// Attempt on the route, 1-based.
    pub attempt: u32,
    /// Where the outcome token lies in `text` (`503`, `timeout`, ...).
    pub outcome_at: TextSpan,
    /// Where the reason code lies in `text`; absent for success.
    pub code_at: Option<TextSpan>,
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

/// A part of a line's text: its byte range (`u32`s: a trace line is short).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TextSpan {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl TextSpan {
    /// The span of `part`, a slice of `text`.
    ///
    /// # Panics
    ///
    /// When `part` is not within `text` (a caller's bug).
    pub(crate) fn of(text: &str, part: &str) -> Self {
        let start = (part.as_ptr() as usize)
            .checked_sub(text.as_ptr() as usize)
            .filter(|s| s + part.len() <= text.len())
            .expect("a part of the text");
        Self {
            start: start as u32,
            end: (start + part.len()) as u32,
        }
    }

    /// The spanned text.
    #[inline]
    pub fn get<'t>(&self, text: &'t str) -> &'t str {
        text.get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }
}

impl ExpectedLine {
    /// The route name (`A`).
    #[inline]
    pub fn route(&self) -> &str {
        self.route_at.get(&self.text)
    }

    /// The outcome token (`503`, `timeout`, `reset`, `malformed`, `broken`).
    #[inline]
    pub fn outcome(&self) -> &str {
        self.outcome_at.get(&self.text)
    }

    /// The reason code, absent for success.
    #[inline]
    pub fn code(&self) -> Option<&str> {
        self.code_at.map(|c| c.get(&self.text))
    }
}

/// What followed a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExpectedEscalation {
    /// Reason code.
    pub code: String,
    /// Target, if asserted.
    pub to: Option<String>,
}

/// Expectations on the final error the caller receives.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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
    pub requests: Vec<RequestAssertion>,
    /// Nothing is asserted yet: the row was loaded for bless, which writes
    /// its trace and stop. A pending row never passes.
    pub pending: bool,
}
