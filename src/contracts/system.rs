//! The system under test: the trait a team implements to plug its client in,
//! what a row hands it (transport, request, jitter, escalation sink), what it
//! returns, and the registry that finds a system by the name a matrix gives.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::base::yaml::{Value, YamlError};
use crate::contracts::transport::{BoxFuture, Transport};
use crate::model::registry::Registry;
use crate::model::RequestSpec;

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

/// A built system and what it knows about routes.
pub struct Built {
    /// The system.
    pub system: Arc<dyn System>,
    /// Route names it calls, when known (used to check `inject` and traces).
    pub routes: Option<Vec<String>>,
    /// Error-body paths that name a code (empty: the defaults).
    pub body_paths: Vec<String>,
}

/// Builds a system from a matrix's `policy` block.
pub type Factory =
    Arc<dyn Fn(&Value, &Arc<Registry>) -> Result<Built, Vec<YamlError>> + Send + Sync>;

/// Systems by name.
#[derive(Clone)]
pub struct Systems {
    map: BTreeMap<String, Factory>,
}

impl Default for Systems {
    fn default() -> Self {
        let mut s = Self {
            map: BTreeMap::new(),
        };
        s.register("reference", Arc::new(crate::load::policy::build_reference));
        s
    }
}

impl Systems {
    /// The built-in systems (`reference`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a system under a name.
    pub fn register(&mut self, name: &str, factory: Factory) -> &mut Self {
        self.map.insert(name.to_string(), factory);
        self
    }

    /// A factory by name.
    pub fn get(&self, name: &str) -> Option<&Factory> {
        self.map.get(name)
    }

    /// Registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}
