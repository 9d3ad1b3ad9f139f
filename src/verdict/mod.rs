//! Verdicts: a row's expectations against what was observed. A failure is
//! data ([`Failure`]: where, and a list of problems), built once here and
//! rendered by each report.
//!
//! | module | what it owns |
//! |---|---|
//! | [`failure`] | [`Failure`], [`Problem`], [`Location`] |
//! | [`compare`] | the trace diff and every other assertion |
//! | [`caps`] | a code's `max_attempts` capping a route's `attempts`, explained |
//! | [`lines`] | an observed call against its expected line, by value |
//! | [`snapshot`] | snapshot rows and their files |
//! | [`tape`] | tape rows: replay problems, committing or discarding a recording |
//! | [`tolerance`] | snapping real-time waits onto expected ones |
//! | [`requests`] | `expect.requests` |
//! | [`observed`] | what reports show of a row's run |
//! | [`bless`] | observed values written back into the row's file |

pub mod bless;
pub mod caps;
pub mod compare;
pub mod failure;
pub mod lines;
pub mod observed;
pub mod requests;
pub mod snapshot;
pub mod tape;
pub mod tolerance;

pub use failure::{Failure, Location, Problem, ProblemKind};
pub use observed::{observed_run, CallView, ObservedRun};

use crate::exec::run::Observation;
use crate::model::{Matrix, Row};

/// How verdicts are reached beyond the row itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Snapshot rows.
    pub snapshots: snapshot::Options,
}

/// Judges a row's observation. Over the wire (real time) waits within the
/// row's tolerance are first snapped onto the expected values; a snapshot
/// row's snapshot and a tape row's tape are judged with the rest, and a
/// recording is committed only when everything held. Returns the verdict
/// and the observation as judged.
pub fn judge(
    matrix: &Matrix,
    row: &Row,
    mut obs: Observation,
    opts: &Options,
) -> (Result<(), Failure>, Observation) {
    // Real-clock rows only: a virtual-clock command compares exactly.
    if matrix.real_clock() {
        tolerance::snap(row, &mut obs, &row.settings.tolerance);
    }
    let mut problems = tape::problems(row, &obs, || {
        let mut p = compare::problems(matrix, row, &obs);
        if row.expect.snapshot {
            if let Err(s) = snapshot::check(matrix, row, &obs, &opts.snapshots) {
                p.push(s);
            }
        }
        p
    });
    if let (false, Some(said)) = (problems.is_empty(), &obs.command) {
        problems.push(Problem::new(
            ProblemKind::CommandOutput,
            compare::command_output(said),
        ));
    }
    let result = if problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::row(&row.name, row_location(matrix, row), problems))
    };
    (result, obs)
}

/// Judges a row with default options (no snapshot writes beyond insta's
/// defaults, tapes as observed): for tests and tools that run one row.
pub fn check(matrix: &Matrix, row: &Row, obs: &Observation) -> Result<(), Failure> {
    judge(matrix, row, obs.clone(), &Options::default()).0
}

/// Where a row is written: its `name` key.
pub fn row_location(matrix: &Matrix, row: &Row) -> Location {
    let p = matrix.row_pos(row);
    Location::at(&matrix.file, p.line, p.col)
}
