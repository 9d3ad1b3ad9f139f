//! Tapes as the model knows them: a row's tape (where it is, the shape a
//! recording must have) and the file's tape settings (upstreams to record
//! from, scrub rules). Reading, replaying and recording tapes is execution.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::base::redact::Scrubber;

/// Tape settings of a matrix file (the `tapes:` block).
#[derive(Debug, Clone)]
pub struct TapeConfig {
    /// Base URL per route, for recording.
    pub upstreams: BTreeMap<String, Upstream>,
    /// Scrub rules.
    pub scrub: Scrubber,
    /// Real time a recorded call may take before it counts as a timeout.
    pub timeout: Duration,
}

impl Default for TapeConfig {
    fn default() -> Self {
        Self {
            upstreams: BTreeMap::new(),
            scrub: Scrubber::default(),
            timeout: Duration::from_secs(30),
        }
    }
}

/// A route's live upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// `http://host:port[/prefix]`.
    pub url: String,
    /// Environment variable holding the credential to send.
    pub key_env: Option<String>,
    /// Header carrying the credential (default `authorization: Bearer`).
    pub key_header: Option<String>,
}

/// A row's tape.
#[derive(Debug, Clone)]
pub struct TapeRow {
    /// The tape's path, resolved against the matrix file's directory.
    pub path: PathBuf,
    /// The path as shown in messages.
    pub file: String,
    /// The path as written in the row.
    pub written: String,
    /// The answers a recording must get, as outcome tokens (`429`,
    /// `timeout`, `broken`); `None`: the outcomes of `expect.trace`.
    pub record_expect: Option<Vec<String>>,
    /// The file's tape settings.
    pub config: Arc<TapeConfig>,
    /// The root the tape stays inside (canonical; see
    /// [`crate::base::confine`]): a recording re-checks its target against
    /// it right before writing.
    pub root: PathBuf,
}
