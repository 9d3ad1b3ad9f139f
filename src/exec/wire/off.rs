//! Rows over the wire in a build without the features they need: each
//! fails, naming the feature, instead of running (the harness marks command
//! rows as rows that cannot run here before it gets this far).

use crate::exec::observation::{request_id, Observation};
use crate::model::{Matrix, Row};

fn unavailable(matrix: &Matrix, row: &Row, why: &str) -> Observation {
    Observation::failed(request_id(&matrix.file, &row.name), why.to_string())
}

/// A command system's row: fails with `UNAVAILABLE`'s reason.
#[cfg(not(feature = "wire"))]
pub fn run_row(
    matrix: &Matrix,
    row: &Row,
    _spec: &crate::model::command::CommandSpec,
    _env: &crate::base::env::Env,
) -> Observation {
    let why = super::unavailable::UNAVAILABLE.unwrap_or("over the wire is not built");
    unavailable(matrix, row, why)
}

/// No program is looked for: the row cannot run in this build.
#[cfg(not(feature = "wire"))]
pub fn program(
    _spec: &crate::model::command::CommandSpec,
    _env: &crate::base::env::Env,
) -> Option<String> {
    None
}

/// An in-process system over real HTTP (`--over-http`), which needs the
/// `record` feature's HTTP client.
pub mod over_http {
    use crate::contracts::system::System;
    use crate::exec::observation::Observation;
    use crate::model::{Matrix, Row};

    /// Fails the row, naming the feature.
    pub fn run_row(
        matrix: &Matrix,
        row: &Row,
        _system: &dyn System,
        _routes: Option<&[String]>,
    ) -> Observation {
        super::unavailable(
            matrix,
            row,
            "`--over-http` runs the system through a real HTTP client, and faultmatrix was \
             built without its `record` feature; enable it: `features = [\"record\"]`",
        )
    }
}
