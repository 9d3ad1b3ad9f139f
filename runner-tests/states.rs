//! One row in each state a row can be in (issue 13, item 1): it runs and
//! passes; `ignore:` in the matrix; and a row whose harness requirement is
//! not met (a probe that cannot succeed), ignored locally and failing with
//! the install command under `CI=true`.
//!
//! Lists nothing unless `FAULTMATRIX_STATES=1`, so the README's
//! `cargo test` under `CI=true` is not failed by the row that must fail
//! there. `.ci/nextest-archive.sh` runs it under `cargo test` and
//! `cargo nextest run`, with `CI` unset and `CI=true`, and checks that both
//! read each row the same.

use faultmatrix::harness::{Harness, Requirement};

fn main() -> std::process::ExitCode {
    if std::env::var_os("FAULTMATRIX_STATES").is_none() {
        // No trial: nothing listed, nothing run (libtest and nextest both
        // read an empty listing as no tests).
        return std::process::ExitCode::SUCCESS;
    }
    Harness::new("runner-tests/states")
        .requires(Requirement {
            rows: "runner-tests/states/needs/".into(),
            probe: vec!["faultmatrix-states-no-such-program".into()],
            what: "the states fixture's package".into(),
            install: "pip install faultmatrix-states-fixture".into(),
        })
        .run()
}
