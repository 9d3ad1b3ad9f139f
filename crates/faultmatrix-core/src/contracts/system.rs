//! The system under test: the trait a team implements to plug its client in,
//! what a row hands it (transport, request, jitter, escalation sink) and what
//! it returns. Building systems from a matrix's `policy` block is
//! [`crate::load::systems`].

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::base::json_path::JsonPath;
use crate::contracts::transport::{BoxFuture, Transport};
use faultmatrix_controller::RequestSpec;

/// Code under test. `run` performs one logical request through the
/// transport and reports how it ended.
pub trait System: Send + Sync {
    /// Runs one row's request.
    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult>;

    /// Whether the row's runtime needs tokio's I/O driver (sockets on the
    /// paused clock), as the HTTP seam does. Default: no, time only.
    fn needs_io(&self) -> bool {
        false
    }

    /// Whether the transport's calls carry a method and path (the HTTP
    /// seam's do), so scripts keyed by them (`A GET /v1/models`) can be
    /// served. Default: no; a row with keyed scripts is then a load error.
    fn sees_requests(&self) -> bool {
        false
    }
}

pub use faultmatrix_controller::outcome::{
    AttemptNote, Escalation, EscalationSink, FinalError, JitterSource, Success, SystemResult,
};

/// Everything a row gives the system.
#[derive(Clone)]
pub struct RowContext {
    /// Where requests go.
    pub transport: Arc<dyn Transport>,
    /// What to send.
    pub request: RequestSpec,
    /// The synthetic id of this logical request.
    pub request_id: String,
    /// A deadline set by the row, overriding the system's own.
    pub deadline: Option<Duration>,
    /// Jitter draws.
    pub jitter: JitterSource,
    /// Escalation sink.
    pub escalations: EscalationSink,
    /// Wall-clock time at the row's start (for `Retry-After` dates); the
    /// wall clock advances with the virtual clock.
    pub wall_start: SystemTime,
    /// The request-body paths the row asserts (`expect.requests[..].body`):
    /// what a transport that sees bodies keeps of them (the HTTP seam does,
    /// with [`crate::base::json_path::observe`]).
    pub request_body_paths: Arc<[JsonPath]>,
    /// The row's keyed side scripts (`A GET /v1/models`, see
    /// [`crate::model::side_key`]): a transport that sees methods and paths
    /// (the HTTP seam) keeps calls matching one out of the attempts.
    pub side_scripts: Arc<[String]>,
}

/// One call of a failed run as the harness classified it: what the
/// default final error is built from ([`default_final_error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassifiedCall {
    /// Route.
    pub route: String,
    /// Attempt on the route, 1-based.
    pub attempt: u32,
    /// Reason code (`OK` for a success).
    pub code: String,
    /// Whether the code is retried (the registry says).
    pub retryable: bool,
}

/// The final error of a failed run, built from its calls: every call an
/// attempt (bounded), the last call's code, and the stop `terminal` when
/// that code is not retried, else `exhausted` (the client gave up on a
/// transient failure). A client that stops for another reason (a deadline)
/// maps its own error instead.
pub fn default_final_error(request_id: &str, calls: &[ClassifiedCall]) -> FinalError {
    let last = calls.last();
    let mut err = FinalError {
        stop: match last {
            Some(c) if !c.retryable => "terminal".into(),
            Some(_) => "exhausted".into(),
            None => "no-call".into(),
        },
        code: last.map(|c| c.code.clone()),
        request_id: Some(request_id.to_string()),
        attempts: Vec::new(),
        omitted: 0,
        output: None,
    };
    for c in calls {
        err.push_attempt(AttemptNote {
            route: c.route.clone(),
            attempt: c.attempt,
            code: c.code.clone(),
        });
    }
    err
}

/// Reads a matrix's `policy` block into a system's own settings type; a
/// typo or a wrong type is a diagnostic with file, line and column (use
/// `#[serde(deny_unknown_fields)]`). What a factory calls first.
pub fn read_policy<T: serde::de::DeserializeOwned>(
    policy: &crate::base::yaml::Value,
) -> Result<T, Vec<crate::base::yaml::YamlError>> {
    crate::base::yaml::from_value(policy, &[crate::base::yaml::Seg::Key("policy".into())])
        .map_err(|e| vec![e])
}
