//! Snapshot rows: a row with `expect: { snapshot: true }` leaves its trace
//! (and stop reason) to an [insta] snapshot that a reviewer accepts.
//!
//! Every snapshot is named explicitly after its file and row and stored
//! beside the matrix, in a `snapshots/` folder:
//!
//! ```text
//! matrices/seed-fallback.yaml  row "503 twice on A then B succeeds"
//! matrices/snapshots/seed-fallback__503_twice_on_a_then_b_succeeds.snap
//! ```
//!
//! insta's settings are per thread, so they are bound inside each trial
//! ([`check`], called from [`crate::verdict::compare::check`] for every snapshot row,
//! whatever runs it: the cargo harness, the CLI, tapes). The usual insta workflow applies: a new or changed trace
//! fails the row and writes `….snap.new` beside the accepted file;
//! `cargo insta review` (or `cargo insta accept`) moves it in.
//!
//! Under CI (`CI` set to anything but `false`/`0`, as insta reads it) a new
//! or changed snapshot fails the row and nothing is written at all, whatever
//! `INSTA_UPDATE` says: the comparison with the accepted file is done here,
//! before insta is called, and insta is only called when they match.
//!
//! [`unreferenced`] lists snapshot files that no snapshot row names; CI
//! rejects them (`faultmatrix snapshots`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::exec::run::Observation;
use crate::model::{Matrix, Row};

/// The folder, beside the matrices, that holds snapshots.
pub const DIR: &str = "snapshots";

pub use crate::base::label::{slug, snapshot_name as name};

/// The folder holding the snapshots of a matrix file.
pub fn dir_of(matrix_file: &str) -> PathBuf {
    let parent = Path::new(matrix_file)
        .parent()
        .unwrap_or_else(|| Path::new(""));
    parent.join(DIR)
}

/// The accepted snapshot file of a row.
pub fn path(matrix_file: &str, row_name: &str) -> PathBuf {
    dir_of(matrix_file).join(format!("{}.snap", name(matrix_file, row_name)))
}

/// What a snapshot holds: the observed trace lines, then `stop: <reason>`.
pub fn contents(obs: &Observation) -> String {
    let mut s = String::new();
    for l in &obs.lines {
        s.push_str(&l.render(None));
        s.push('\n');
    }
    s.push_str("stop: ");
    s.push_str(obs.stop());
    s.push('\n');
    s
}

/// Whether we run under CI, read as insta reads it.
pub fn is_ci() -> bool {
    match std::env::var("CI").ok().as_deref() {
        Some("false") | Some("0") | Some("") => false,
        None => std::env::var("TF_BUILD").is_ok(),
        Some(_) => true,
    }
}

/// The accepted snapshot's text (normalised as insta compares it).
fn accepted(path: &Path) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    let snap = insta::Snapshot::from_file(path).ok()?;
    snap.contents().as_text().map(|t| t.to_string())
}

fn normalise(s: &str) -> String {
    s.trim_end().replace("\r\n", "\n")
}

/// Absolute form of a path relative to the current directory.
fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Whether `INSTA_FORCE_PASS` was set by [`init_process_env`] rather than
/// by the user (or by `cargo insta test`, which collects every pending
/// snapshot before review).
static FORCE_PASS_IS_OURS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether the user asked insta not to fail on snapshot mismatches
/// (`INSTA_FORCE_PASS=1`, as `cargo insta test` does). Never under CI.
fn user_force_pass() -> bool {
    !FORCE_PASS_IS_OURS.load(std::sync::atomic::Ordering::Relaxed)
        && std::env::var("INSTA_FORCE_PASS").as_deref() == Ok("1")
}

/// Sets process-wide insta defaults for a runner that owns the process
/// (the cargo harness, the CLI), before any thread starts: snapshot
/// mismatches are reported by faultmatrix's own message rather than a
/// panic (`INSTA_FORCE_PASS`), and the workspace is the current directory
/// (`INSTA_WORKSPACE_ROOT`). Variables the user set are left alone.
pub fn init_process_env(quiet: bool) {
    let cwd = std::env::current_dir().unwrap_or_default();
    let set = |k: &str, v: &std::ffi::OsStr| {
        if std::env::var_os(k).is_none() {
            std::env::set_var(k, v);
            true
        } else {
            false
        }
    };
    if set("INSTA_FORCE_PASS", "1".as_ref()) {
        FORCE_PASS_IS_OURS.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    set("INSTA_WORKSPACE_ROOT", cwd.as_os_str());
    if quiet {
        set("INSTA_OUTPUT", "none".as_ref());
    }
}

/// Checks a snapshot row's observed trace against its accepted snapshot.
/// `Ok(())` when they match, when insta accepted in place
/// (`INSTA_UPDATE=always`), or when the user set `INSTA_FORCE_PASS=1` as
/// `cargo insta test` does (the pending file is written for review). Under
/// CI a difference always fails and nothing is written.
pub fn check(matrix: &Matrix, row: &Row, obs: &Observation) -> Result<(), String> {
    let observed = contents(obs);
    let file = path(&matrix.file, &row.name);
    let shown = file.display().to_string();
    let old = accepted(&absolute(&file));
    let same = old
        .as_deref()
        .is_some_and(|o| normalise(o) == normalise(&observed));
    let diff_text =
        |old: &str| crate::verdict::compare::diff(&format!("{}\n", normalise(old)), &observed);
    if !same && is_ci() {
        return Err(match &old {
            None => format!(
                "snapshot {shown} does not exist (new snapshot under CI: nothing was written)\nobserved:\n{}\
                 run `cargo test` locally, then `cargo insta review` and commit the accepted snapshot\n",
                indent(&observed)
            ),
            Some(o) => format!(
                "snapshot {shown} differs (- accepted, + observed; under CI nothing was written):\n{}\
                 run `cargo test` locally, then `cargo insta review` and commit the accepted snapshot\n",
                diff_text(o)
            ),
        });
    }
    let dir = absolute(&dir_of(&matrix.file));
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_input_file(absolute(Path::new(&matrix.file)));
    settings.set_description(format!("{} :: {}", matrix.file, row.name));
    let snap_name = name(&matrix.file, &row.name);
    let outcome = settings.bind(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            insta::assert_snapshot!(snap_name.as_str(), observed.as_str());
        }))
    });
    // insta may have accepted in place (`INSTA_UPDATE=always`, `cargo insta
    // test --accept`); otherwise the accepted file is unchanged.
    let _ = outcome;
    if same || accepted(&absolute(&file)).is_some_and(|n| normalise(&n) == normalise(&observed)) {
        return Ok(());
    }
    if user_force_pass() {
        // `cargo insta test`: the pending snapshot is written; review decides.
        return Ok(());
    }
    let pending = format!("{shown}.new");
    Err(match &old {
        None => format!(
            "new snapshot {shown} (written to {pending}):\n{}\
             review it with `cargo insta review` (or accept with `cargo insta accept`)\n",
            indent(&observed)
        ),
        Some(o) => format!(
            "snapshot {shown} differs (- accepted, + observed; written to {pending}):\n{}\
             review it with `cargo insta review` (or accept with `cargo insta accept`)\n",
            diff_text(o)
        ),
    })
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}

/// Adds a snapshot row's snapshot check to the verdict of its other
/// assertions (`main`); problems of both are reported together. Other rows
/// pass `main` through.
pub fn with_snapshot(
    matrix: &Matrix,
    row: &Row,
    obs: &Observation,
    main: Result<(), String>,
) -> Result<(), String> {
    if !row.expect.snapshot {
        return main;
    }
    match (main, check(matrix, row, obs)) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(m), Ok(())) => Err(m),
        (Ok(()), Err(s)) => Err(format!(
            "row `{}` failed\n  --> {}\n{s}",
            row.name,
            matrix.row_location(row)
        )),
        (Err(m), Err(s)) => Err(format!("{m}{s}")),
    }
}

/// Snapshot files (`*.snap`) in `snapshots/` folders beside the given
/// matrices that no snapshot row of those matrices names.
pub fn unreferenced(matrices: &[Matrix]) -> Vec<PathBuf> {
    let mut dirs: HashSet<PathBuf> = HashSet::new();
    let mut wanted: HashSet<PathBuf> = HashSet::new();
    for m in matrices {
        dirs.insert(dir_of(&m.file));
        for r in &m.rows {
            if r.expect.snapshot {
                wanted.insert(path(&m.file, &r.name));
            }
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let is_snap = p.extension().is_some_and(|x| x == "snap");
            if is_snap && !wanted.contains(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Pending snapshots (`*.snap.new`, not reviewed yet) beside the given
/// matrices.
pub fn pending(matrices: &[Matrix]) -> Vec<PathBuf> {
    let dirs: HashSet<PathBuf> = matrices.iter().map(|m| dir_of(&m.file)).collect();
    let mut out: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|e| e.flatten().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".snap.new"))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_file_and_row() {
        assert_eq!(slug("503 twice on A, then B!"), "503_twice_on_a_then_b");
        assert_eq!(
            path("matrices/sub/x-y.yaml", "A then B"),
            Path::new("matrices/sub/snapshots/x_y__a_then_b.snap")
        );
        assert_eq!(slug("***"), "row");
    }
}
