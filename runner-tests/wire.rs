//! Over-the-wire proof, as one libtest-mimic target (`cargo test --test wire`):
//!
//! - every row of `runner-tests/wire/**/*.yaml`: the openai (sync, async)
//!   and anthropic Python SDKs and the openai Node SDK on the row's virtual
//!   clock, and a reqwest client on the real clock, as command systems
//!   against the fixture server;
//! - `over-http::matrices/seed-fallback.yaml::…`: the seed acceptance matrix
//!   against the reference system over real HTTP, in process (`run
//!   --over-http`);
//! - `client::matrices/seed-fallback.yaml::…`: the same rows against the
//!   reference system run as a command (`faultmatrix client`);
//! - `wrong-client::…`: deliberately wrong clients fail with a diff naming
//!   the call.
//!
//! The SDK rows (`openai-python/`, `anthropic-python/`, `openai-node/`)
//! need `.venv-shims` and `shims/node/sdk/node_modules` (made by
//! `.ci/run`). Whether they are there is decided when the trials are listed
//! (harness requirements), so `--list`, nextest and libtest agree: without
//! them the rows are ignored, and under `CI` they fail with the install
//! command. The wrong clients written with an SDK follow the same rule.
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

/// How to install what the SDK rows need (`.ci/run` does both).
const INSTALL_PYTHON: &str =
    "python3 -m venv .venv-shims && .venv-shims/bin/pip install -r shims/requirements.txt";
const INSTALL_NODE: &str = "(cd shims/node/sdk && npm ci)";

/// The Python the SDK rows use: the shims' venv's when there is one.
fn python() -> PathBuf {
    let venv = root().join(".venv-shims/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// The Python SDK rows need both SDKs importable by [`python`] (looked up
/// without importing them: an import takes seconds).
fn python_sdks(py: &Path, rows: &str) -> faultmatrix::harness::Requirement {
    faultmatrix::harness::Requirement {
        rows: rows.into(),
        probe: vec![
            py.display().to_string(),
            "-c".into(),
            "import importlib.util as u, sys; sys.exit(not (u.find_spec('openai') and u.find_spec('anthropic')))".into(),
        ],
        what: "the openai and anthropic Python SDKs".into(),
        install: INSTALL_PYTHON.into(),
    }
}

/// The Node rows need node and the openai npm package.
fn node_sdk(rows: &str) -> faultmatrix::harness::Requirement {
    let pkg = root().join("shims/node/sdk/node_modules/openai/package.json");
    faultmatrix::harness::Requirement {
        rows: rows.into(),
        probe: vec![
            "node".into(),
            "-e".into(),
            format!("require('fs').accessSync({:?})", pkg.display().to_string()),
        ],
        what: "the openai npm package".into(),
        install: INSTALL_NODE.into(),
    }
}

/// Whether a probe passes (for the wrong-client trials, which are not
/// harness rows).
fn met(req: &faultmatrix::harness::Requirement) -> bool {
    let Some((prog, args)) = req.probe.split_first() else {
        return true;
    };
    Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
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
    let cases: [(&str, &[&str]); 9] = [
        (
            "runner-tests/wire-wrong/openai-python/refused.yaml",
            &[
                "- api1 refused CONNECTION_REFUSED fail\n+ api1 refused CONNECTION_REFUSED retry wait=500ms\n+ api2 200 return",
                "first difference: expected line 1 of the trace, at runner-tests/wire-wrong/openai-python/refused.yaml:",
            ],
        ),
        (
            "runner-tests/wire-wrong/openai-python/wrong.yaml",
            &[
                "- api1 400 INVALID_REQUEST fail\n+ api1 400 INVALID_REQUEST retry wait=1s",
                "first difference: expected line 1 of the trace, at runner-tests/wire-wrong/openai-python/wrong.yaml:",
            ],
        ),
        (
            "runner-tests/wire-wrong/openai-node/wrong.yaml",
            &[
                "- api1 429 RATE_LIMITED retry wait=2s\n+ api1 429 RATE_LIMITED retry wait=500ms",
                "first difference: expected line 1 of the trace, at runner-tests/wire-wrong/openai-node/wrong.yaml:",
            ],
        ),
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
                // The measured wait itself (200ms, more on a loaded
                // machine) is not asserted: only that it misses short.
                "- A1 429 RATE_LIMITED retry wait=1s\n+ A1 429 RATE_LIMITED retry wait=",
                "A1 wait (after A1, before the next call): observed ",
                "expected 1s ±(50ms + 10%) +1s late = 850ms..2150ms: ",
                "ms too short",
            ],
        ),
        (
            "runner-tests/wire-wrong/warm-parent/exits.yaml",
            &[
                "the warm parent did not finish its imports: the warm parent closed its channel; its output ends with:",
                "  | sabotage: the warm parent speaks on its stderr and exits",
                "`system.warm: false` runs one process per row instead",
            ],
        ),
        (
            "runner-tests/wire-wrong/warm-parent/killed.yaml",
            &[
                "the warm parent's channel closed while its child ran the row (parent pid ",
                "its output ends with:\n  | sabotage: the warm parent speaks on its stderr",
            ],
        ),
        (
            "runner-tests/wire-wrong/short-wait.yaml",
            &[
                "- A1 503 UPSTREAM_UNAVAILABLE retry wait=2s\n+ A1 503 UPSTREAM_UNAVAILABLE retry wait=",
                "expected 2s ±(20ms + 0%) +1s late = 1980ms..3020ms: ",
                "ms too short",
            ],
        ),
        (
            "runner-tests/wire-wrong/uncapped-wait.yaml",
            &[
                // 5s where 2s is expected: past the late window (3250ms)
                // by 1750ms on an idle machine, more on a loaded one.
                "- A1 503 UPSTREAM_UNAVAILABLE retry wait=2s\n+ A1 503 UPSTREAM_UNAVAILABLE retry wait=5",
                "expected 2s ±(50ms + 10%) +1s late = 1750ms..3250ms: ",
                "ms too late",
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

/// The seed matrix's rows, each run over HTTP as `prepare` makes the
/// matrix run, named `{prefix}::file::row`.
fn seed_wire_trials(prefix: &'static str, prepare: fn(&mut faultmatrix::Matrix)) -> Vec<Trial> {
    let mut m = load("matrices/seed-fallback.yaml");
    prepare(&mut m);
    let m = std::sync::Arc::new(m);
    (0..m.rows.len())
        .map(|i| {
            let m = m.clone();
            Trial::test(format!("{prefix}::{}", m.row_id(&m.rows[i])), move || {
                let row = &m.rows[i];
                let obs = faultmatrix::exec::run::run_row(&m, row);
                faultmatrix::verdict::check(&m, row, &obs)
                    .map_err(|f| f.render())
                    .map_err(Failed::from)
            })
        })
        .collect()
}

fn seed_over_http_trials() -> Vec<Trial> {
    let mut trials = seed_wire_trials("over-http", |m| {
        faultmatrix::cli::wire::over_http(m);
        assert!(
            matches!(
                m.system,
                faultmatrix::model::SystemUnderTest::OverHttp { .. }
            ),
            "the seed matrix runs the reference system"
        );
    });
    trials.extend(seed_wire_trials("client", |m| {
        faultmatrix::cli::wire::as_client_command(m, &paths::bin().to_string_lossy());
        assert!(
            m.command().is_some(),
            "the seed matrix runs the reference system"
        );
    }));
    trials
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
    let harness = faultmatrix::harness::Harness::new("runner-tests/wire")
        .requires(python_sdks(&py, "runner-tests/wire/openai-python/"))
        .requires(python_sdks(&py, "runner-tests/wire/anthropic-python/"))
        .requires(node_sdk("runner-tests/wire/openai-node/"));
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
    // The wrong clients written with an SDK: ignored without it, failing
    // under CI with the install command; never passed unrun.
    let ci = std::env::var_os("CI").is_some();
    let wrong_needs = [
        ("/wire-wrong/openai-python/", python_sdks(&py, "")),
        ("/wire-wrong/openai-node/", node_sdk("")),
    ];
    let unmet: Vec<(&str, String)> = wrong_needs
        .iter()
        .filter(|(_, r)| !met(r))
        .map(|(p, r)| {
            (
                *p,
                format!(
                    "{} is not installed; install it with: {}",
                    r.what, r.install
                ),
            )
        })
        .collect();
    trials.extend(wrong_client_trials().into_iter().map(|t| {
        match unmet.iter().find(|(p, _)| t.name().contains(p)) {
            None => t,
            Some(_) if !ci => t.with_ignored_flag(true),
            Some((_, why)) => {
                let why = format!("CI is set but {why}");
                Trial::test(t.name().to_string(), move || Err(Failed::from(why)))
            }
        }
    }));
    libtest_mimic::run(&args, trials).exit_code()
}
