//! Bad input, data-driven: every folder under `runner-tests/bad-inputs/`
//! is one case, holding the input (`m.yaml` for a matrix file or `r.yaml`
//! for a registry file) and `expected.txt`, the exact diagnostics the loader
//! must render for it, compiler style. The input is loaded under its own
//! file name (`m.yaml`, `r.yaml`), so the messages do not depend on where
//! the checkout lives.
//!
//! Add a case: make a folder with the input and an empty `expected.txt`,
//! run `FAULTMATRIX_UPDATE_EXPECTED=1 cargo test --test suite diagnostics::`
//! (refused under `CI=true`), and review the written file in the diff.

use std::path::PathBuf;

use faultmatrix::load::{load_text, registry_from_text};
use faultmatrix::Systems;

fn cases_dir() -> PathBuf {
    crate::common::workspace().join("runner-tests/bad-inputs")
}

/// One case: its folder, the input's file name and text, and the expected
/// diagnostics.
struct Case {
    dir: PathBuf,
    input: &'static str,
    /// The input's text, `None` when it is not UTF-8.
    yaml: Option<String>,
    expected: String,
}

fn cases() -> Vec<Case> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap_or_else(|e| panic!("{}: {e}", cases_dir().display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let inputs: Vec<&'static str> = ["m.yaml", "r.yaml"]
                .into_iter()
                .filter(|f| dir.join(f).is_file())
                .collect();
            assert_eq!(
                inputs.len(),
                1,
                "{}: a case holds exactly one of m.yaml (matrix) or r.yaml (registry)",
                dir.display()
            );
            let input = inputs[0];
            let read = |f: &str| {
                std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{}/{f}: {e}", dir.display()))
            };
            Case {
                // Input that is not UTF-8 is loaded from its file (below).
                yaml: String::from_utf8(read(input)).ok(),
                expected: String::from_utf8(read("expected.txt")).expect("expected.txt is UTF-8"),
                input,
                dir,
            }
        })
        .collect()
}

fn render(case: &Case) -> String {
    let (input, systems) = (case.input, Systems::new());
    let result = match (&case.yaml, input) {
        (Some(yaml), "m.yaml") => load_text(input, yaml, None, &systems).map(|_| ()),
        (Some(yaml), _) => registry_from_text(input, yaml).map(|_| ()),
        // Bytes that are not text are only ever met reading a file.
        (None, _) => faultmatrix::load::Loader::new(systems)
            .load_file(&case.dir.join(input), input)
            .map(|_| ()),
    };
    match result {
        Ok(()) => "(loaded without errors)".to_string(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_bad_input_gives_its_exact_message() {
    let cases = cases();
    assert!(cases.len() >= 40, "the corpus holds at least 40 cases");
    let update = std::env::var_os("FAULTMATRIX_UPDATE_EXPECTED").is_some();
    assert!(
        !(update && std::env::var("CI").is_ok_and(|v| v == "true")),
        "FAULTMATRIX_UPDATE_EXPECTED is refused under CI=true"
    );
    let mut failures = Vec::new();
    for case in &cases {
        let got = render(case);
        if got == case.expected {
            continue;
        }
        if update {
            std::fs::write(case.dir.join("expected.txt"), &got).unwrap();
            continue;
        }
        failures.push(format!(
            "---- {} ----\nexpected:\n{}\ngot:\n{got}",
            case.dir.display(),
            case.expected
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_case_that_loads_is_not_a_bad_input() {
    // The corpus is of bad inputs: a case whose input loads would pass
    // against an `expected.txt` saying so, asserting nothing about errors.
    for case in cases() {
        assert_ne!(
            case.expected,
            "(loaded without errors)",
            "{}: the input loads; a bad-input case must fail to load",
            case.dir.display()
        );
    }
}
