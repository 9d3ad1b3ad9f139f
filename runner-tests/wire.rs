//! Over-the-wire proof, as one libtest-mimic target (`cargo test --test wire`):
//!
//! - every row of `runner-tests/wire/**/*.yaml`: the openai Python SDK and a
//!   reqwest client run as command systems against the fixture server;
//! - `over-http::matrices/seed-fallback.yaml::…`: the seed acceptance matrix
//!   against the reference system run as a command (`faultmatrix client`);
//! - `wrong-client::…`: deliberately wrong clients fail with a diff naming
//!   the call.
//!
//! The openai rows need `.venv` (made by `.ci/run`). Whether the SDK is
//! there is decided when the trials are listed (a harness requirement), so
//! `--list`, nextest and libtest agree: without it the rows are ignored,
//! and under `CI` they fail with the install command.
//!
//! Paths are found at run time (`runner-tests/paths.rs`), so an archived
//! build runs on a moved checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

use faultmatrix::engine::discover::{self, Found, Loaded};
use libtest_mimic::{Arguments, Failed, Trial};

#[path = "paths.rs"]
mod paths;

fn root() -> PathBuf {
    paths::workspace()
}

/// Builds the reqwest example (examples are not built for `--test wire`),
/// unless `FAULTMATRIX_REQWEST_CLIENT` already names a built one (an
/// archived build run elsewhere: `.ci/nextest-archive.sh`).
fn reqwest_client() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("FAULTMATRIX_REQWEST_CLIENT").map(PathBuf::from) {
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "FAULTMATRIX_REQWEST_CLIENT={} is not a file",
                p.display()
            ))
        };
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--example", "reqwest-client"])
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("cargo build --example reqwest-client failed".into());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("no target directory")?;
    Ok(dir.join("examples").join("reqwest-client"))
}

/// The Python the openai rows use: the venv's when there is one.
fn python() -> PathBuf {
    let venv = root().join(".venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// The openai rows need the SDK importable by [`python`].
fn openai_sdk(py: &Path) -> faultmatrix::harness::Requirement {
    faultmatrix::harness::Requirement {
        rows: "runner-tests/wire/openai/".into(),
        probe: vec![
            py.display().to_string(),
            "-c".into(),
            "import openai".into(),
        ],
        what: "the openai Python SDK".into(),
        install: "python3 -m venv .venv && .venv/bin/pip install -r runner-tests/wire/openai/requirements.txt".into(),
    }
}

fn load(path: &str) -> faultmatrix::model::Matrix {
    let found = Found {
        path: root().join(path),
        display: path.to_string(),
    };
    match discover::load_one(&found, &faultmatrix::load::Loader::default()) {
        Loaded::Matrix(m) => *m,
        Loaded::Errors(e) => panic!("{e}"),
        Loaded::Registry => panic!("{path} is a registry"),
    }
}

fn wrong_client_trials() -> Vec<Trial> {
    let cases: [(&str, &[&str]); 3] = [
        (
            "runner-tests/wire-wrong/extra-retry.yaml",
            &[
                "- A3 503 UPSTREAM_UNAVAILABLE switch\n+ A3 503 UPSTREAM_UNAVAILABLE retry wait=",
                "+ A4 503 UPSTREAM_UNAVAILABLE switch\n  B1 200 return\n",
                "first difference: expected line 3 of the trace, at runner-tests/wire-wrong/extra-retry.yaml:17",
            ],
        ),
        (
            "runner-tests/wire-wrong/ignore-retry-after.yaml",
            &[
                "- A1 429 RATE_LIMITED retry wait=1s\n+ A1 429 RATE_LIMITED retry wait=2",
                "A1 wait (after A1, before the next call): observed 2",
                "expected 1s ±(50ms + 10%) = 850ms..1150ms: ",
                "ms too short",
            ],
        ),
        (
            "runner-tests/wire-wrong/short-wait.yaml",
            &[
                "- A1 500 SERVER_ERROR retry wait=200ms\n+ A1 500 SERVER_ERROR retry wait=1",
                "expected 200ms ±(50ms + 10%) = 130ms..270ms: ",
                "ms too short",
            ],
        ),
    ];
    cases
        .into_iter()
        .map(|(file, wants)| {
            Trial::test(format!("wrong-client::{file}"), move || {
                let m = load(file);
                let row = &m.rows[0];
                let obs = faultmatrix::exec::run::run_row(&m, row);
                match faultmatrix::verdict::check(&m, row, &obs).map_err(|f| f.render()) {
                    Ok(()) => Err(Failed::from(format!("{file}: the wrong client passed"))),
                    Err(msg) => {
                        for w in wants {
                            if !msg.contains(w) {
                                return Err(Failed::from(format!(
                                    "the failure message lacks {w:?}:\n{msg}"
                                )));
                            }
                        }
                        Ok(())
                    }
                }
            })
        })
        .collect()
}

fn seed_over_http_trials() -> Vec<Trial> {
    let mut m = load("matrices/seed-fallback.yaml");
    faultmatrix::cli::wire::over_http(&mut m, &paths::bin().to_string_lossy());
    assert!(
        m.command().is_some(),
        "the seed matrix runs the reference system"
    );
    let m = std::sync::Arc::new(m);
    (0..m.rows.len())
        .map(|i| {
            let m = m.clone();
            Trial::test(format!("over-http::{}", m.row_id(&m.rows[i])), move || {
                let row = &m.rows[i];
                let obs = faultmatrix::exec::run::run_row(&m, row);
                faultmatrix::verdict::check(&m, row, &obs)
                    .map_err(|f| f.render())
                    .map_err(Failed::from)
            })
        })
        .collect()
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    std::env::set_current_dir(root()).expect("the crate root exists");
    std::env::set_var("FAULTMATRIX_BIN", paths::bin());
    let listing = args.list;
    // Prepare only what the selected trials need (nextest runs one per process).
    let wants = |words: &[&str]| {
        !listing
            && args
                .filter
                .as_deref()
                .is_none_or(|f| !args.exact || words.iter().any(|w| f.contains(w)))
    };
    if wants(&["reqwest", "wrong-client"]) {
        match reqwest_client() {
            Ok(p) => std::env::set_var("FAULTMATRIX_REQWEST_CLIENT", p),
            Err(e) => eprintln!("warning: {e}: the reqwest rows will fail"),
        }
    }
    let py = python();
    std::env::set_var("FAULTMATRIX_PYTHON", &py);
    let harness = faultmatrix::harness::Harness::new("runner-tests/wire").requires(openai_sdk(&py));
    let mut trials = match harness.trials(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(101);
        }
    };
    if trials.is_empty() && !args.exact {
        eprintln!("error: no rows under runner-tests/wire: zero rows is a failure");
        return std::process::ExitCode::from(101);
    }
    trials.extend(seed_over_http_trials());
    trials.extend(wrong_client_trials());
    libtest_mimic::run(&args, trials).exit_code()
}
