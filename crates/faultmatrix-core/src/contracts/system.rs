//! The system under test: the trait a team implements to plug its client in,
//! what a row hands it (transport, request, jitter, escalation sink) and what
//! it returns. Building systems from a matrix's `policy` block is
//! [`crate::load::systems`].

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::contracts::transport::{BoxFuture, Transport};
use faultmatrix_controller::RequestSpec;

/// Code under test. `run` performs one logical request through the
/// transport and reports how it ended.
pub trait System: Send + Sync {
    /// Runs one row's request.
    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult>;
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
}
