//! The validated domain model: what a matrix file means once loading has
//! checked it. Nothing here knows about YAML text or running a row; the
//! model owns its data (positions are kept as paths, so a diagnostic or a
//! failing row can point back at its source).
//!
//! | module | what it holds |
//! |---|---|
//! | [`matrix`] | a matrix file and its system under test (in process, or a command) |
//! | [`row`] | a row: its script (`inject` or a tape), settings, expectations |
//! | [`script`] | script entries: statuses, faults, responses, streams |
//! | [`expect`] | expected trace lines, stop, error, escalations, ... |
//! | [`invariants`] | the invariants explore mode checks, and what it generates |
//! | [`registry`] | reason codes with their fixtures |
//! | [`tape`] | a row's tape and the file's tape settings |
//! | [`command`] | a command system |
//! | [`requests`] | assertions on the requests themselves |
//! | [`tolerance`] | tolerances for real-time rows |

pub mod command;
pub mod expect;
pub mod invariants;
pub mod matrix;
pub mod registry;
pub mod requests;
pub mod row;
pub mod script;
pub mod tape;
pub mod tolerance;

pub use expect::{
    Decision, Expect, ExpectedError, ExpectedEscalation, ExpectedLine, TextSpan, STOP_REASONS,
};
pub use matrix::{Matrix, SystemUnderTest};
pub use row::{JitterInput, RequestSpec, Row, Script, Settings};
pub use script::{
    match_path, side_key, split_key, Answer, Entry, Repeat, RouteScript, ScriptedResponse, SseItem,
    StreamSpec,
};
