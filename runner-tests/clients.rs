//! Real Rust HTTP clients, unchanged, in-process on the virtual clock
//! through the HTTP seam (`cargo test --test clients`):
//!
//! | system | client | rows |
//! |---|---|---|
//! | `reqwest-client` | `clients/reqwest_policy.rs` (also run over the wire) | `clients/reqwest/` |
//! | `reqwest-retry` | `clients/middleware_client.rs`: reqwest-middleware + reqwest-retry `ExponentialBackoff` | `clients/reqwest-retry/` |
//! | `backon` | `clients/backon_client.rs`: backon's `ExponentialBuilder` | `clients/backon/` |
//! | `models-first` | `clients/models_first_client.rs`: `GET /v1/models`, then a create retried by reqwest-retry | `clients/models-first/` |
//!
//! Each row of `runner-tests/clients/*/*.yaml` is a test. The trials named
//! `wrong-expectation::…` run the rows of `clients/wrong/` (deliberately
//! wrong expectations, and backon's docs example running away) and pass
//! only when the row fails with the diff written beside them.

use std::process::ExitCode;
use std::sync::Arc;

use faultmatrix::engine::discover::{self, Found, Loaded};
use faultmatrix::http::{HttpRow, HttpSystem, Seen};
use faultmatrix::system::{AttemptNote, FinalError};
use faultmatrix::{Harness, RunOptions};
use libtest_mimic::{Arguments, Failed, Trial};

// The workspace is found at run time (an archived build runs elsewhere).
#[allow(dead_code)]
#[path = "paths.rs"]
mod paths;

#[path = "clients/backon_client.rs"]
mod backon_client;
#[path = "clients/middleware_client.rs"]
mod middleware_client;
#[path = "clients/models_first_client.rs"]
mod models_first_client;
#[path = "clients/reqwest_policy.rs"]
mod reqwest_policy;

/// The reqwest client of the over-the-wire tests, with its own error
/// mapped (its rows assert `stop: terminal-status`, `code: HTTP_401`).
fn reqwest_client() -> faultmatrix::system::Factory {
    HttpSystem::new(["A", "B"], |row: HttpRow| async move {
        let routes = [
            ("A".to_string(), row.base_url("A")),
            ("B".to_string(), row.base_url("B")),
        ];
        reqwest_policy::run(&reqwest_policy::client(), &routes, row.request_id(), "").await
    })
    .map_error(|e: &reqwest_policy::ClientError, seen: &Seen| {
        let mut err = FinalError {
            stop: e.stop.into(),
            code: e.code.clone(),
            request_id: Some(seen.request_id.clone()),
            attempts: Vec::new(),
            omitted: 0,
            output: None,
        };
        for a in &e.attempts {
            let (label, code) = a.split_once(' ').unwrap_or((a, ""));
            let route: String = label.chars().take_while(|c| c.is_alphabetic()).collect();
            err.push_attempt(AttemptNote {
                attempt: label[route.len()..].parse().unwrap_or(0),
                route,
                code: code.into(),
            });
        }
        err
    })
    .factory()
}

/// reqwest-middleware + reqwest-retry; the default final error.
fn reqwest_retry() -> faultmatrix::system::Factory {
    HttpSystem::with_policy(["A"], |s: &middleware_client::Settings, row: HttpRow| {
        let s = s.clone();
        async move { middleware_client::fetch(&row.base_url("A"), &s).await }
    })
    .factory()
}

/// Lists the models, then creates with reqwest-retry; the default final
/// error. Its rows key the preliminary GET's script by method and path.
fn models_first() -> faultmatrix::system::Factory {
    HttpSystem::with_policy(["A"], |s: &middleware_client::Settings, row: HttpRow| {
        let s = s.clone();
        async move { models_first_client::create_after_models(&row.base_url("A"), &s).await }
    })
    .factory()
}

/// backon; the default final error.
fn backon() -> faultmatrix::system::Factory {
    HttpSystem::with_policy(["A"], |s: &backon_client::Settings, row: HttpRow| {
        let s = s.clone();
        async move { backon_client::fetch(&row.base_url("A"), &s).await }
    })
    .factory()
}

fn harness(root: &str) -> Harness {
    Harness::new(root)
        .system("reqwest-client", reqwest_client())
        .system("reqwest-retry", reqwest_retry())
        .system("backon", backon())
        .system("models-first", models_first())
}

/// A row of `clients/wrong/` must fail, and its failure must hold every
/// text of `FILE.expected` (paragraphs separated by a blank line).
fn wrong_trials() -> Vec<Trial> {
    let dir = paths::workspace().join("runner-tests/clients/wrong");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    files.sort();
    let loader = faultmatrix::load::Loader::new(systems());
    let mut trials = Vec::new();
    for path in files {
        let display = format!(
            "runner-tests/clients/wrong/{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        let expected_path = path.with_extension("expected");
        let found = Found {
            path: path.clone(),
            display: display.clone(),
        };
        let m = match discover::load_one(&found, &loader) {
            Loaded::Matrix(m) => Arc::new(*m),
            Loaded::Errors(e) => {
                let msg = e.to_string();
                trials.push(Trial::test(
                    format!("wrong-expectation::{display}"),
                    move || Err(Failed::from(msg)),
                ));
                continue;
            }
            Loaded::Registry => continue,
        };
        for i in 0..m.rows.len() {
            let m = m.clone();
            let expected_path = expected_path.clone();
            let name = format!("wrong-expectation::{display}::{}", m.rows[i].name);
            trials.push(Trial::test(name, move || {
                let expected = std::fs::read_to_string(&expected_path)
                    .map_err(|e| format!("cannot read {}: {e}", expected_path.display()))?;
                let row = &m.rows[i];
                let failure = match faultmatrix::run_row(&m, row, &RunOptions::default()).0 {
                    Ok(()) => {
                        return Err("the row passed, but its expectation is wrong on purpose".into())
                    }
                    Err(f) => f.render(),
                };
                for part in expected
                    .split("\n\n")
                    .map(str::trim_end)
                    .filter(|p| !p.is_empty())
                {
                    if !failure.contains(part) {
                        return Err(format!(
                            "the failure does not contain:\n{part}\n\nit was:\n{failure}"
                        )
                        .into());
                    }
                }
                Ok(())
            }));
        }
    }
    trials
}

fn systems() -> faultmatrix::Systems {
    let mut s = faultmatrix::Systems::new();
    s.register("reqwest-client", reqwest_client());
    s.register("reqwest-retry", reqwest_retry());
    s.register("backon", backon());
    s.register("models-first", models_first());
    s
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let h = harness("runner-tests/clients").globs(&[
        "reqwest/*.yaml",
        "reqwest-retry/*.yaml",
        "backon/*.yaml",
        "models-first/*.yaml",
    ]);
    let mut trials = match h.trials(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    trials.extend(wrong_trials());
    libtest_mimic::run(&args, trials).exit_code()
}
