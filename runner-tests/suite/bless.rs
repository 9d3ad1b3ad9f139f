//! Bless (issue 14, item 1): `faultmatrix run --bless` and
//! `FAULTMATRIX_BLESS=1` write failing and new rows' observed values into
//! their YAML files in place. These tests run the binary in a throw-away
//! tree and prove, on every shipped matrix, that an edit changes only the
//! blessed value.

use std::path::Path;

use faultmatrix::base::yaml_edit::NewValue;
use faultmatrix::load::Loader;
use faultmatrix::system::Systems;

use crate::common::{cli, cli_env, write};

const FILE: &str = "# A file with comments, anchors and flow style: bless keeps them.
title: bless  # the title
policy:
  routes: [{ name: A, attempts: 3 }, { name: B, attempts: 1 }]
  backoff: &b { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s

rows:
  # A wrong wait and a wrong stop.
  - name: wrong wait
    inject: { A: [503, 503, 200] }   # two failures
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE retry wait=5s
        A3 200 return
      stop: exhausted  # wrong

  - name: new row
    inject: { A: [503, 200] }
    expect: {}

  - name: passing
    inject: { A: [200] }
    expect: { stop: success }
";

/// The same file as a reviewer would have written it by hand.
const BLESSED: &str = "# A file with comments, anchors and flow style: bless keeps them.
title: bless  # the title
policy:
  routes: [{ name: A, attempts: 3 }, { name: B, attempts: 1 }]
  backoff: &b { initial: 1s, factor: 2, cap: 30s, jitter: none }
  deadline: 30s

rows:
  # A wrong wait and a wrong stop.
  - name: wrong wait
    inject: { A: [503, 503, 200] }   # two failures
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE retry wait=2s
        A3 200 return
      stop: success  # wrong

  - name: new row
    inject: { A: [503, 200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 200 return
      stop: success

  - name: passing
    inject: { A: [200] }
    expect: { stop: success }
";

#[test]
fn bless_writes_failing_and_new_rows_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "matrices/a.yaml", FILE);
    // Without bless: the new row cannot load, the wrong row fails.
    let (code, _, _) = cli(dir.path(), &["run", "matrices/"]);
    assert_ne!(code, 0);
    let (code, out, err) = cli(dir.path(), &["run", "--bless", "matrices/"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("blessed 2 rows") && out.contains("matrices/a.yaml::new row (trace, stop)"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), BLESSED);
    // Reviewed and committed, it passes as written by hand.
    let (code, out, _) = cli(dir.path(), &["run", "matrices/"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("blessed"), "{out}");
    // No stray temporary file.
    let names: Vec<_> = std::fs::read_dir(dir.path().join("matrices"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn the_environment_variable_blesses_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "matrices/a.yaml", FILE);
    let (code, out, err) = cli_env(
        dir.path(),
        &["run", "matrices/"],
        &[("FAULTMATRIX_BLESS", "1"), ("CI", "false")],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), BLESSED);
}

#[test]
fn bless_is_refused_under_ci() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "matrices/a.yaml", FILE);
    let (code, _, err) = cli_env(
        dir.path(),
        &["run", "--bless", "matrices/"],
        &[("CI", "true")],
    );
    assert_ne!(code, 0);
    assert!(err.contains("refused under CI"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), FILE);
}

#[test]
fn a_run_that_went_wrong_is_not_blessed() {
    let text = "title: t\npolicy: { routes: [{ name: A, attempts: 3 }] }\nrows:\n  - name: too few answers\n    inject: { A: [503] }\n    expect: { stop: success }\n";
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "matrices/a.yaml", text);
    let (code, out, _) = cli(dir.path(), &["run", "--bless", "matrices/"]);
    assert_ne!(code, 0);
    assert!(
        out.contains("not blessed: the run itself went wrong"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn the_harness_blesses_with_its_options() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "matrices/a.yaml", FILE);
    let session = std::sync::Arc::new(faultmatrix::verdict::bless::Session::new());
    let opts = faultmatrix::engine::run::RunOptions {
        bless: Some(session.clone()),
        ..Default::default()
    };
    // The harness resolves the matrix file as the CLI does: relative to the
    // working directory, which is the test's; give it the absolute root.
    let harness = faultmatrix::Harness::new(dir.path().join("matrices")).options(opts);
    let args = libtest_mimic::Arguments {
        test_threads: Some(2),
        quiet: true,
        // The nested run's report goes to a file, not this test's output.
        logfile: Some(dir.path().join("nested.log").display().to_string()),
        ..Default::default()
    };
    let trials = harness.trials(&args).unwrap();
    let conclusion = libtest_mimic::run(&args, trials);
    assert_eq!(conclusion.num_failed, 0);
    assert_eq!(session.written().len(), 2, "{:?}", session.written());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), BLESSED);
}

fn matrix_files() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir("matrices")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn blessing_a_shipped_row_changes_only_its_value() {
    let loader = Loader::new(Systems::new());
    let mut checked = 0;
    for path in matrix_files() {
        let display = path.display().to_string();
        let original = std::fs::read_to_string(&path).unwrap();
        let Ok(m) = loader.load_file(Path::new(&path), &display) else {
            continue; // registry files
        };
        for row in m.rows.iter().filter(|r| r.expect.trace.is_some()) {
            let lines: Vec<String> = row
                .expect
                .trace
                .as_ref()
                .unwrap()
                .iter()
                .map(|l| l.text.clone())
                .collect();
            let changed = vec![
                "A1 503 UPSTREAM_UNAVAILABLE retry wait=1m30s".to_string(),
                "A2 200 return".to_string(),
            ];
            let blessed = faultmatrix::verdict::bless::edit(
                &original,
                row,
                &[(vec!["trace"], NewValue::Lines(changed.clone()))],
            )
            .unwrap_or_else(|e| panic!("{display}::{}: {e}", row.name));
            assert_ne!(blessed, original);
            // Only the trace's lines differ: the same prefix and suffix.
            let prefix = original
                .bytes()
                .zip(blessed.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            let suffix = original
                .bytes()
                .rev()
                .zip(blessed.bytes().rev())
                .take_while(|(a, b)| a == b)
                .count();
            let removed = &original[prefix..original.len() - suffix.min(original.len() - prefix)];
            for l in removed.lines().filter(|l| !l.trim().is_empty()) {
                assert!(
                    lines
                        .iter()
                        .any(|t| l.contains(t.as_str()) || t.contains(l.trim())),
                    "{display}::{}: bless changed `{l}`, which is not a trace line",
                    row.name
                );
            }
            // Revert the value: the file equals the original, byte for byte.
            let reverted = faultmatrix::verdict::bless::edit(
                &blessed,
                row,
                &[(vec!["trace"], NewValue::Lines(lines.clone()))],
            )
            .unwrap();
            assert_eq!(reverted, original, "{display}::{}", row.name);
            // A stop too.
            if let Some(stop) = &row.expect.stop {
                let other = if stop == "success" {
                    "exhausted"
                } else {
                    "success"
                };
                let b = faultmatrix::verdict::bless::edit(
                    &original,
                    row,
                    &[(vec!["stop"], NewValue::Str(other.into()))],
                )
                .unwrap();
                let back = faultmatrix::verdict::bless::edit(
                    &b,
                    row,
                    &[(vec!["stop"], NewValue::Str(stop.clone()))],
                )
                .unwrap();
                assert_eq!(back, original, "{display}::{} stop", row.name);
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} rows checked");
}

#[test]
fn the_guide_s_new_row_blesses_into_the_hand_written_one() {
    let dir = tempfile::tempdir().unwrap();
    let before = std::fs::read_to_string("docs/examples/bless/new-row.yaml").unwrap();
    let after = std::fs::read_to_string("docs/examples/blessed.yaml").unwrap();
    let file = write(dir.path(), "docs/examples/bless/new-row.yaml", &before);
    let (code, out, err) = cli(dir.path(), &["run", "--bless", "docs/examples/bless/"]);
    assert_eq!(code, 0, "{out}{err}");
    // The schema comment's relative path differs by one folder; nothing else.
    let blessed = std::fs::read_to_string(file).unwrap();
    assert_eq!(blessed.replace("../../schema/", "../schema/"), after);
}
