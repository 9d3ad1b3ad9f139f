//! The fuzz corpus and every crash the fuzzers found, replayed on stable
//! Rust without libFuzzer: each saved input under `fuzz/corpus/<target>/`
//! and `fuzz/regressions/<target>/` goes through the same entry point as
//! its fuzz target (`faultmatrix::exec::fuzz`), which panics on a bounded
//! result broken or a round trip that loses something; a panic anywhere
//! fails this test with the file's name.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use faultmatrix::exec::fuzz::TARGETS;

/// Found at run time, like every fixture of the suite, so an archived
/// build runs on a moved tree (runner-tests/paths.rs).
fn fuzz_dir() -> PathBuf {
    crate::common::workspace().join("fuzz")
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every saved input of one folder kind; returns how many ran and the
/// failures.
fn replay(kind: &str) -> (usize, Vec<String>) {
    let mut ran = 0;
    let mut failures = Vec::new();
    for (name, entry) in TARGETS {
        for file in inputs(&fuzz_dir().join(kind).join(name)) {
            let data = std::fs::read(&file).unwrap();
            ran += 1;
            if let Err(p) = std::panic::catch_unwind(|| entry(&data)) {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let msg: String = msg.chars().take(300).collect();
                failures.push(format!("{name}: {}: {msg}", file.display()));
            }
        }
    }
    (ran, failures)
}

#[test]
fn every_target_has_a_binary_and_a_corpus() {
    let bins: BTreeSet<String> = inputs(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let names: BTreeSet<String> = TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        bins, names,
        "fuzz/fuzz_targets/*.rs and exec::fuzz::TARGETS differ"
    );
    for name in &names {
        let n = inputs(&fuzz_dir().join("corpus").join(name)).len();
        assert!(n > 0, "fuzz/corpus/{name} holds no input");
    }
}

#[test]
fn the_corpus_replays_without_a_panic() {
    let (ran, failures) = replay("corpus");
    assert!(ran >= TARGETS.len(), "only {ran} corpus inputs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_crash_found_stays_fixed() {
    let (ran, failures) = replay("regressions");
    assert!(ran > 0, "fuzz/regressions holds no input");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
