//! Helpers shared by the suite's modules: running the built CLI in a
//! directory, and writing fixture files into a temporary tree.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../paths.rs"]
mod paths;
pub use paths::{bin, workspace};

/// Runs the built `faultmatrix` binary in `dir` with `args` and returns its
/// exit code (`-1` when killed by a signal), stdout and stderr.
///
/// The variables that switch the CLI's modes (`FAULTMATRIX_RECORD`,
/// `FAULTMATRIX_BLESS`, `FAULTMATRIX_PROGRESS`, `FAULTMATRIX_CACHE`, and `CI`/`GITHUB_ACTIONS`,
/// which refuse blessing and change reports) are removed so that neither a
/// developer's shell nor the CI job running the tests can change a test's
/// outcome; a test about CI passes them in `env`.
pub fn cli_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(dir);
    for var in [
        "FAULTMATRIX_RECORD",
        "FAULTMATRIX_BLESS",
        "FAULTMATRIX_PROGRESS",
        "FAULTMATRIX_CACHE",
        "CI",
        "GITHUB_ACTIONS",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin().display()));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`cli_env`] with no extra environment.
pub fn cli(dir: &Path, args: &[&str]) -> (i32, String, String) {
    cli_env(dir, args, &[])
}

/// Writes `text` to `dir/name`, creating parent directories, and returns
/// the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}
