//! What building a system from a matrix's `policy` block gives: the
//! system, and what the loader checks rows against.

use std::sync::Arc;
use std::time::Duration;

use crate::base::yaml::{Value, YamlError};
use crate::contracts::system::System;
use crate::model::registry::Registry;

/// A built system and what it knows about routes.
pub struct Built {
    /// The system.
    pub system: Arc<dyn System>,
    /// Route names it calls, when known (used to check `inject` and traces).
    pub routes: Option<Vec<String>>,
    /// Error-body paths that name a code (empty: the defaults).
    pub body_paths: Vec<String>,
    /// The deadline the system applies, when it has one (reports draw it).
    pub deadline: Option<Duration>,
}

impl Built {
    /// A system that declares no routes, body paths or deadline.
    pub fn new(system: Arc<dyn System>) -> Self {
        Self {
            system,
            routes: None,
            body_paths: Vec::new(),
            deadline: None,
        }
    }

    /// The routes the system calls, in fallback order: rows may only
    /// script and expect these.
    pub fn routes<I, S>(mut self, routes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.routes = Some(routes.into_iter().map(Into::into).collect());
        self
    }
}

/// Builds a system from a matrix's `policy` block.
pub type Factory =
    Arc<dyn Fn(&Value, &Arc<Registry>) -> Result<Built, Vec<YamlError>> + Send + Sync>;
