//! Rough edges of issue 13, a test each: the snapshot header names the
//! matrix file (never this checkout's source), nested harness runs inside
//! tests do not leak their summary into the log, and the scripts do not
//! pipe into `head` under `pipefail` (exit 141).

use std::path::Path;

use crate::common::{workspace, write};

const SNAPSHOT_ROW: &str = "title: s
policy:
  routes: [{ name: A, attempts: 2 }]
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
rows:
  - name: retry then success
    inject: { A: [503, 200] }
    expect: { snapshot: true }
";

fn header(snap: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(snap).unwrap_or_else(|e| panic!("{}: {e}", snap.display()));
    let head = text
        .strip_prefix("---\n")
        .unwrap()
        .split("\n---\n")
        .next()
        .unwrap();
    head.lines()
        .map(|l| {
            let (k, v) = l.split_once(": ").unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn assert_names_the_matrix(snap: &Path) {
    let h = header(snap);
    let get = |k: &str| h.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    assert_eq!(get("source"), Some("\"matrices/s.yaml\""), "{h:?}");
    assert_eq!(get("input_file"), Some("\"matrices/s.yaml\""), "{h:?}");
    assert_eq!(get("assertion_line"), Some("6"), "the row's line: {h:?}");
    let checkout = workspace().display().to_string();
    for (k, v) in &h {
        assert!(!v.contains("src/"), "{k} names faultmatrix's source: {v}");
        assert!(
            !v.contains(&checkout),
            "{k} names the faultmatrix checkout: {v}"
        );
    }
}

/// Runs `faultmatrix run PATH` in `dir` with INSTA_UPDATE=always.
fn accept(dir: &Path, path: &str) {
    let o = std::process::Command::new(crate::common::bin())
        .args(["run", path])
        .current_dir(dir)
        .env_remove("CI")
        .env_remove("TF_BUILD")
        .env("INSTA_UPDATE", "always")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn the_snapshot_header_names_the_matrix_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/s.yaml", SNAPSHOT_ROW);
    let snap = dir
        .path()
        .join("matrices/snapshots/s__retry_then_success.snap");
    accept(dir.path(), "matrices");
    assert_names_the_matrix(&snap);
    // A consumer crate names its matrices by an absolute path (from its
    // CARGO_MANIFEST_DIR) and runs from its own root: the same header.
    std::fs::remove_file(&snap).unwrap();
    accept(
        dir.path(),
        &dir.path().join("matrices").display().to_string(),
    );
    assert_names_the_matrix(&snap);
}

fn files_under(dir: &Path, ext: &str, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

#[test]
fn nested_harness_runs_write_their_report_to_a_logfile() {
    // libtest_mimic::run prints `test result: ... N filtered out` to stdout,
    // which lands in the middle of `cargo test`'s own log unless the nested
    // run is given a logfile. Only the harness entry points print.
    let root = workspace();
    let mut files = Vec::new();
    files_under(&root.join("src"), "rs", &mut files);
    files_under(&root.join("runner-tests"), "rs", &mut files);
    let entry_points = [
        "src/harness.rs",
        "runner-tests/wire.rs",
        "runner-tests/clients.rs",
    ];
    let mut leaks = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        let calls = text.matches("libtest_mimic::run(").count();
        let allowed = usize::from(entry_points.contains(&rel.as_str()));
        let logged = text.matches("logfile: Some(").count();
        if calls > allowed + logged {
            leaks.push(format!(
                "{rel}: {calls} nested runs, {logged} with a logfile"
            ));
        }
    }
    assert!(
        leaks.is_empty(),
        "nested runs print into the test log:\n{}",
        leaks.join("\n")
    );
}

#[test]
fn scripts_do_not_pipe_into_head_under_pipefail() {
    // `ls | head -1` under `set -o pipefail` dies with 141 when head
    // closes the pipe before ls is done (bench/bench.sh, one run in five).
    let root = workspace();
    let mut files = Vec::new();
    files_under(&root.join("bench"), "sh", &mut files);
    files_under(&root.join(".ci"), "sh", &mut files);
    files.push(root.join(".ci/run"));
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if !text.contains("pipefail") {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let code = line.split(" #").next().unwrap_or("");
            if code.trim_start().starts_with('#') {
                continue;
            }
            if code.contains("| head") || code.contains("|head") {
                bad.push(format!(
                    "{}:{}: {}",
                    f.strip_prefix(&root).unwrap().display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "a pipe into head under pipefail:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_test_finds_paths_through_compile_time_variables() {
    // An archived build runs on another checkout (`--workspace-remap`):
    // paths baked in by env! point into the checkout that built it.
    let root = workspace();
    let mut files = Vec::new();
    files_under(&root.join("runner-tests"), "rs", &mut files);
    files_under(&root.join("crates"), "rs", &mut files);
    let needles = [
        format!("{}!(\"CARGO_MANIFEST_DIR\")", "env"),
        format!("{}!(\"CARGO_BIN_EXE_", "env"),
    ];
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if needles.iter().any(|n| line.contains(n.as_str())) {
                found.push(format!(
                    "{}:{}: {}",
                    f.strip_prefix(&root).unwrap().display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "compile-time paths (use runner-tests/paths.rs):\n{}",
        found.join("\n")
    );
}
