//! Tapes: recorded bad days, replayed in order.
//!
//! A row may take its script from a tape instead of `inject`:
//!
//! ```yaml
//! - name: rate limited twice, then served
//!   tape: tapes/rate-limited.yaml      # relative to the matrix file
//!   record: { expect: [429, 429, 200] } # the shape a recording must have
//!   expect:
//!     trace: |
//!       A1 429 RATE_LIMITED retry wait=1s
//!       A2 429 RATE_LIMITED retry wait=2s
//!       A3 200 return
//! ```
//!
//! **Replay** (the default) serves each recorded interaction once, in
//! order, across routes. A call must match the next interaction on host
//! (route), model, stream flag and routing block (key order ignored); the
//! prompt is not matched. A mismatch, a call beyond the tape, an answer left
//! unused, a missing tape and an edited tape (digest mismatch) each fail the
//! row with their own message. Waits come from the virtual clock: timing is
//! not on the tape.
//!
//! **Recording** (`FAULTMATRIX_RECORD=1`, or `faultmatrix record`) sends the
//! row's calls to live upstreams (`tapes.upstreams` in the matrix, or
//! `FAULTMATRIX_UPSTREAM_<ROUTE>`), scrubs each exchange, serves the
//! scrubbed answer to the system, and writes the tape next to its final
//! place. The tape is moved in (an atomic rename) only when the upstream
//! answered in the shape the row asked for and the row passed; otherwise
//! the old tape stays byte-for-byte. The system runs on the paused virtual
//! clock while each real call runs on tokio's blocking pool, which stops
//! the clock from auto-advancing: a recording row sees exactly the virtual
//! waits its replay will see.
//!
//! | file | owns |
//! |---|---|
//! | [`format`] | the tape file (version 1), its digest, reading and writing |
//! | [`replay`] | the ordered replay transport |
//! | [`record`] | the recording transport, the cue check, the atomic commit |
//! | `interrupt` | the live temp files, removed when SIGINT, SIGTERM or SIGHUP ends the process |
//! | [`http`] | a minimal HTTP/1.1 client and the SSE parser |
//! | [`upstream`] | a scripted loopback upstream for record-mode tests |

pub mod format;
pub mod http;
mod interrupt;
pub mod record;
pub mod replay;
pub mod upstream;

use std::collections::BTreeMap;

use crate::base::env::Env;

pub use crate::model::tape::{TapeConfig, TapeRow, Upstream};
pub use format::{Tape, TapeError, TapeErrorKind};
pub use record::TapeOutcome;

/// The environment variable that turns recording on (`1`, `true`, `yes`).
pub const RECORD_ENV: &str = "FAULTMATRIX_RECORD";

/// Prefix of the environment variables that give a route's base URL
/// (`FAULTMATRIX_UPSTREAM_A`); `<name>_KEY` gives its credential.
pub const UPSTREAM_ENV: &str = "FAULTMATRIX_UPSTREAM_";

/// Whether rows replay tapes or record them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Replay tapes (the default).
    #[default]
    Replay,
    /// Record tapes from live upstreams.
    Record(RecordOptions),
}

/// Recording options beyond the matrix's own `tapes:` block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordOptions {
    /// Base URL per route, overriding the matrix.
    pub upstreams: BTreeMap<String, String>,
    /// Credential per route, overriding the environment.
    pub keys: BTreeMap<String, String>,
    /// Whether `FAULTMATRIX_UPSTREAM_<ROUTE>[_KEY]` are consulted.
    pub env: bool,
}

impl Mode {
    /// Recording when `FAULTMATRIX_RECORD` is `1`/`true`/`yes` (upstreams
    /// from `FAULTMATRIX_UPSTREAM_<ROUTE>`), else replay.
    pub fn from_env(env: &Env) -> Mode {
        if env.flag(RECORD_ENV) {
            Mode::Record(RecordOptions {
                env: true,
                ..RecordOptions::default()
            })
        } else {
            Mode::Replay
        }
    }
}

/// The environment variable naming a route's base URL:
/// `FAULTMATRIX_UPSTREAM_OPENAI_PRIMARY` for `openai-primary`.
pub fn upstream_env(route: &str) -> String {
    crate::base::label::route_var(UPSTREAM_ENV, route)
}
