//! Tests of the runner itself: each failure mode of a row gives exactly the
//! message a QA engineer reads, the harness honours libtest's selection
//! rules, and the CLI behaves as a user runs it.

use crate::common::{cli, write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use faultmatrix::harness::Harness;
use faultmatrix::load::load_text;
use faultmatrix::model::Matrix;
use faultmatrix::system::{Built, Success, System, Systems};
use faultmatrix::transport::{BoxFuture, Request};

/// Loads `yaml` as `t.yaml` and returns every row's verdict message.
fn verdicts_with(yaml: &str, systems: &Systems) -> Vec<Result<(), String>> {
    let m =
        load_text("t.yaml", yaml, None, systems).unwrap_or_else(|e| panic!("load failed:\n{e}"));
    rows(&m)
}

fn rows(m: &Matrix) -> Vec<Result<(), String>> {
    m.rows
        .iter()
        .map(|r| {
            let obs = faultmatrix::exec::run::run_row(m, r);
            faultmatrix::verdict::check(m, r, &obs).map_err(|f| f.render())
        })
        .collect()
}

/// Runs and judges a row as the harness does.
fn run_and_check(m: &Matrix, r: &faultmatrix::model::Row) -> Result<(), String> {
    let opts = faultmatrix::engine::run::RunOptions::default();
    faultmatrix::engine::run::run_row(m, r, &opts)
        .0
        .map_err(|f| f.render())
}

fn verdicts(yaml: &str) -> Vec<Result<(), String>> {
    verdicts_with(yaml, &Systems::new())
}

fn only_failure(yaml: &str) -> String {
    let mut v = verdicts(yaml);
    assert_eq!(v.len(), 1);
    v.remove(0).expect_err("the row should fail")
}

const HEAD: &str = "title: t
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 1 }]
  backoff: { initial: 1s, factor: 2, cap: 30s }
rows:
";

#[test]
fn a_wrong_expectation_fails_with_exactly_this_diff() {
    let yaml = format!(
        "{HEAD}  - name: wrong wait
    inject: {{ A: [503, 200] }}
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=2s
        A2 200 return
      stop: success
"
    );
    assert_eq!(
        only_failure(&yaml),
        "row `wrong wait` failed
  --> t.yaml:6:5
trace differs (- expected, + observed):
- A1 503 UPSTREAM_UNAVAILABLE retry wait=2s
+ A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
  A2 200 return
first difference: expected line 1 of the trace, at t.yaml:10
"
    );
}

#[test]
fn breaking_one_expected_line_names_that_line() {
    let good = format!(
        "{HEAD}  - name: fallback
    inject: {{ A: [503, 503], B: [200] }}
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
"
    );
    assert_eq!(verdicts(&good), vec![Ok(())]);
    let bad = good.replace("B1 200 return", "B1 200 fail");
    let msg = only_failure(&bad);
    assert!(msg.contains("- B1 200 fail\n+ B1 200 return\n"), "{msg}");
    assert!(
        msg.contains("expected line 3 of the trace, at t.yaml:12"),
        "{msg}"
    );
}

#[test]
fn a_call_beyond_the_script_fails_naming_route_and_counts() {
    let yaml = format!(
        "{HEAD}  - name: extra call
    inject: {{ A: [503] }}
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE fail
"
    );
    assert_eq!(
        only_failure(&yaml),
        "row `extra call` failed
  --> t.yaml:6:5
trace differs (- expected, + observed):
- A1 503 UPSTREAM_UNAVAILABLE fail
+ A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
+ A2 unscripted aborted
first difference: expected line 1 of the trace, at t.yaml:10
route A: call 2 but 1 answer was scripted
"
    );
}

#[test]
fn an_entry_never_requested_fails_the_row() {
    let yaml = format!(
        "{HEAD}  - name: unused
    inject: {{ A: [200, 200], B: [200] }}
    expect:
      trace: |
        A1 200 return
"
    );
    assert_eq!(
        only_failure(&yaml),
        "row `unused` failed
  --> t.yaml:6:5
route A: 1 scripted answer was never requested (200); 1 call was made
route B: 1 scripted answer was never requested (200); 0 calls were made
"
    );
}

#[test]
fn a_call_to_an_unscripted_route_fails() {
    let yaml = format!(
        "{HEAD}  - name: no B script
    inject: {{ A: [503, 503] }}
    expect:
      stop: success
"
    );
    let msg = only_failure(&yaml);
    assert!(
        msg.contains(
            "route B: call 1 but no answers were scripted for route B (scripted routes: A)"
        ),
        "{msg}"
    );
}

/// A system that never stops calling route A.
struct Looping;
impl System for Looping {
    fn run(
        &self,
        ctx: faultmatrix::system::RowContext,
    ) -> BoxFuture<'_, faultmatrix::system::SystemResult> {
        Box::pin(async move {
            loop {
                let _ = ctx
                    .transport
                    .call(Request {
                        route: "A".into(),
                        ..Request::default()
                    })
                    .await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    }
}

/// A system that waits forever without a timeout of its own.
struct Hanging;
impl System for Hanging {
    fn run(
        &self,
        ctx: faultmatrix::system::RowContext,
    ) -> BoxFuture<'_, faultmatrix::system::SystemResult> {
        Box::pin(async move {
            let _ = ctx
                .transport
                .call(Request {
                    route: "A".into(),
                    ..Request::default()
                })
                .await;
            Ok(Success::default())
        })
    }
}

/// A system that sleeps `Duration::MAX` between two calls: tokio clamps
/// such a sleep to about 30 years, which no row may wait for.
struct SleepsForever;
impl System for SleepsForever {
    fn run(
        &self,
        ctx: faultmatrix::system::RowContext,
    ) -> BoxFuture<'_, faultmatrix::system::SystemResult> {
        Box::pin(async move {
            let call = || {
                ctx.transport.call(Request {
                    route: "A".into(),
                    ..Request::default()
                })
            };
            let _ = call().await;
            tokio::time::sleep(Duration::MAX).await;
            let _ = call().await;
            Ok(Success::default())
        })
    }
}

/// A system that returns at once but keeps calling in the background.
struct CallsAfterReturn;
impl System for CallsAfterReturn {
    fn run(
        &self,
        ctx: faultmatrix::system::RowContext,
    ) -> BoxFuture<'_, faultmatrix::system::SystemResult> {
        Box::pin(async move {
            let t = ctx.transport.clone();
            let _ = t
                .call(Request {
                    route: "A".into(),
                    ..Request::default()
                })
                .await;
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(600)).await;
                let _ = t
                    .call(Request {
                        route: "A".into(),
                        ..Request::default()
                    })
                    .await;
            });
            Ok(Success::default())
        })
    }
}

fn custom_systems() -> Systems {
    let mut s = Systems::new();
    let plain = |sys: Arc<dyn System>| -> faultmatrix::system::Factory {
        Arc::new(move |_, _| {
            Ok(Built {
                system: sys.clone(),
                routes: Some(vec!["A".into()]),
                body_paths: Vec::new(),
                deadline: None,
            })
        })
    };
    s.register("looping", plain(Arc::new(Looping)));
    s.register("hanging", plain(Arc::new(Hanging)));
    s.register("sleeps-forever", plain(Arc::new(SleepsForever)));
    s.register("calls-after-return", plain(Arc::new(CallsAfterReturn)));
    s
}

#[test]
fn a_runaway_system_is_stopped_by_the_guard() {
    let yaml = "title: t
system: looping
rows:
  - name: loops
    max_calls: 5
    inject:
      A: [{ status: 503, repeat: forever }]
    expect:
      stop: exhausted
";
    let v = verdicts_with(yaml, &custom_systems());
    let msg = v[0].clone().expect_err("runaway must fail");
    assert!(
        msg.contains("stop: expected `exhausted`, observed `aborted`"),
        "{msg}"
    );
    assert!(
        msg.contains(
            "runaway guard: the system made more than 5 calls (max_calls); it was stopped at A6"
        ),
        "{msg}"
    );
}

#[test]
fn a_hung_system_fails_at_the_budget_not_in_real_time() {
    let yaml = "title: t
system: hanging
rows:
  - name: hangs
    budget: 10m
    inject:
      A: [timeout]
    expect:
      stop: success
";
    let started = std::time::Instant::now();
    let v = verdicts_with(yaml, &custom_systems());
    // The row hangs for its 10m budget on the virtual clock; a run that
    // slept in real time would take 10 minutes. 60s is far from both, so a
    // loaded machine cannot make it miss.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "virtual time must not sleep"
    );
    let msg = v[0].clone().expect_err("hang must fail");
    assert!(
        msg.contains("the system was still running after the row's budget of 600s while waiting on A1 (scripted: timeout)"),
        "{msg}"
    );
}

/// A wait tokio would clamp (about 30 years) never passes as a shorter
/// one: a row's budget is at most 87600h (docs/format.md, "Limits"), so
/// the row fails at its budget, on the virtual clock, naming it.
#[test]
fn a_sleep_tokio_would_clamp_fails_the_row_at_its_budget() {
    let yaml = "title: t
system: sleeps-forever
rows:
  - name: sleeps for ever
    budget: 87600h
    inject:
      A: [503, 200]
    expect:
      stop: success
";
    let started = std::time::Instant::now();
    let v = verdicts_with(yaml, &custom_systems());
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "virtual time must not sleep"
    );
    let msg = v[0].clone().expect_err("a 30-year sleep must fail the row");
    assert!(
        msg.contains("the system was still running after the row's budget of 315360000s"),
        "{msg}"
    );
}

#[test]
fn a_call_after_return_fails_never_called_again() {
    let yaml = "title: t
system: calls-after-return
rows:
  - name: background retry
    inject:
      A: [200, 200]
    expect:
      stop: success
";
    let v = verdicts_with(yaml, &custom_systems());
    let msg = v[0].clone().expect_err("late call must fail");
    assert!(
        msg.contains("called again after the system returned at 0s: A2 at 600s (expected: never called again)"),
        "{msg}"
    );
}

#[test]
fn a_malformed_file_reports_every_error_with_positions() {
    let yaml = "title: t
policy:
  routes: [{ name: A, attempts: 2 }]
rows:
  - name: one
    inejct: { A: [503] }
    expect: { stop: success }
  - name: two
    inject: { A: [RATE_LIMTED] }
    expect: { stop: sucess }
";
    let err = load_text("t.yaml", yaml, None, &Systems::new())
        .err()
        .expect("must not load");
    assert_eq!(
        err.to_string(),
        "error: unknown key `inejct` in row `one`
 --> t.yaml:6:5
  |
6 |     inejct: { A: [503] }
  |     ^ expected one of: name, ignore, tags, inject, deadline, jitter, jitter_seed, request, horizon, budget, max_calls, tolerance, expect, tape, record, policy, env, clock, codes
  = help: did you mean `inject`?

error: unknown script entry `RATE_LIMTED`
 --> t.yaml:9:19
  |
9 |     inject: { A: [RATE_LIMTED] }
  |                   ^ expected a status such as 503, timeout, reset, malformed, ok, or a reason code
  = help: did you mean `RATE_LIMITED`?

error: unknown stop reason `sucess`
  --> t.yaml:10:21
   |
10 |     expect: { stop: sucess }
   |                     ^ expected one of: success, terminal, exhausted, deadline, partial-output, guidance-refused, not-idempotent, switch-refused
   = help: did you mean `success`?
"
    );
}

#[test]
fn runs_are_deterministic() {
    let yaml = format!(
        "{HEAD}  - name: jittered
    jitter_seed: 42
    inject: {{ A: [503, 503], B: [200] }}
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=0s..10s
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
"
    )
    .replace("cap: 30s }", "cap: 30s, jitter: full }");
    let m = load_text("t.yaml", &yaml, None, &Systems::new()).unwrap();
    let first: Vec<String> = faultmatrix::exec::run::run_row(&m, &m.rows[0])
        .lines
        .iter()
        .map(|l| l.render(None))
        .collect();
    for _ in 0..20 {
        let again: Vec<String> = faultmatrix::exec::run::run_row(&m, &m.rows[0])
            .lines
            .iter()
            .map(|l| l.render(None))
            .collect();
        assert_eq!(first, again);
    }
    assert_eq!(rows(&m), vec![Ok(())]);
}

// ------------------------------------------------------------ the harness

const GOOD: &str = "title: good
rows:
  - name: ok row
    inject: { A: [200] }
    expect: { trace: A1 200 return }
  - name: skipped row
    ignore: waiting for the fix of ticket 12
    inject: { A: [200] }
    expect: { trace: A1 200 return }
";

#[test]
fn exact_selection_parses_only_the_named_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.yaml", GOOD);
    write(dir.path(), "broken.yaml", "title: [unclosed");
    let h = Harness::new(dir.path());
    let all = h
        .trials(&libtest_mimic::Arguments::from_iter(["t"]))
        .unwrap();
    // Two rows plus one failing trial for the broken file.
    assert_eq!(all.len(), 3);
    let a = dir.path().join("a.yaml");
    let exact = |row: &str| {
        let name = format!("{}::{row}", a.display());
        let trials = h
            .trials(&libtest_mimic::Arguments::from_iter([
                "t",
                "--exact",
                name.as_str(),
            ]))
            .unwrap();
        (name, trials)
    };
    // Only a.yaml is loaded (broken.yaml is not parsed), and of it only
    // the asked row (its text is in the plain shape `one_row` reads).
    let (name, one) = exact("ok row");
    assert_eq!(one.len(), 1, "only the asked row of a.yaml");
    assert_eq!(one[0].name(), name);
    assert!(!one[0].has_ignored_flag());
    let (name, one) = exact("skipped row");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].name(), name);
    assert!(one[0].has_ignored_flag(), "its `ignore:` still holds");
}

// ---------------------------------------------------------------- the CLI

#[test]
fn cli_run_prints_a_line_per_row_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/good.yaml", GOOD);
    let (code, out, _) = cli(dir.path(), &["run"]);
    assert_eq!(
        out,
        "ok      matrices/good.yaml::ok row\nignored matrices/good.yaml::skipped row\n1 passed, 0 failed, 1 ignored\n"
    );
    assert_eq!(code, 0);
}

#[test]
fn cli_run_fails_with_the_diff_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "m/x.yaml",
        &GOOD.replace(
            "A1 200 return }\n  - name: skipped",
            "A1 503 return }\n  - name: skipped",
        ),
    );
    let (code, out, _) = cli(dir.path(), &["run", "m"]);
    assert_eq!(code, 1);
    assert!(out.contains("FAILED  m/x.yaml::ok row"), "{out}");
    assert!(out.contains("- A1 503 return\n+ A1 200 return\n"), "{out}");
    assert!(out.ends_with("0 passed, 1 failed, 1 ignored\n"), "{out}");
}

#[test]
fn cli_bad_input_exits_2_and_zero_rows_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "m/bad.yaml", "title: x\nrows: []\n");
    let (code, out, _) = cli(dir.path(), &["run", "m"]);
    assert_eq!(code, 2);
    assert!(
        out.contains("error: `rows` is empty: a matrix needs at least one row"),
        "{out}"
    );
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    let (code, _, err) = cli(dir.path(), &["run", "empty"]);
    assert_eq!(code, 2);
    assert!(err.contains("zero rows is a failure, not a pass"), "{err}");
    let (code, _, err) = cli(dir.path(), &["run", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("`nope` does not exist"), "{err}");
}

#[test]
fn cli_list_prints_row_ids_and_globs_select_files() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/a/good.yaml", GOOD);
    write(
        dir.path(),
        "matrices/b/other.yaml",
        &GOOD.replace("title: good", "title: other"),
    );
    let (code, out, _) = cli(dir.path(), &["list", "matrices/a/*.yaml"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "matrices/a/good.yaml::ok row\nmatrices/a/good.yaml::skipped row\n"
    );
}

// ------------------------------------------------------- the README example

/// The failure shown in the README is the real output for a client that
/// waits 2 s where the seed matrix expects 1 s.
#[test]
fn the_readme_failure_example_is_real_output() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let after = readme
        .split("If the client waited 2 s instead of 1 s, the test fails with:")
        .nth(1)
        .expect("README shows a failure example");
    let block = after
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a text block follows");
    let seed = std::fs::read_to_string("matrices/seed-fallback.yaml").unwrap();
    let slow = seed.replace("backoff: { initial: 1s", "backoff: { initial: 2s");
    assert_ne!(seed, slow, "the seed matrix sets initial: 1s");
    // `registry: codes.yaml` resolves next to the seed matrix.
    let dir = Some(Path::new("matrices"));
    let m = load_text("matrices/seed-fallback.yaml", &slow, dir, &Systems::new()).unwrap();
    let row = m
        .rows
        .iter()
        .find(|r| r.name == "503 twice on A then B succeeds")
        .unwrap();
    let obs = faultmatrix::exec::run::run_row(&m, row);
    let msg = faultmatrix::verdict::check(&m, row, &obs)
        .unwrap_err()
        .render();
    assert_eq!(msg, block);
}

/// Passing rows never index the file's positions (a second YAML parse that
/// only diagnostics and failures need): a performance regression guard.
#[test]
fn passing_rows_do_not_parse_the_file_twice() {
    let yaml = format!(
        "{HEAD}  - name: fallback
    inject: {{ A: [503, 503], B: [200] }}
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
"
    );
    let m = load_text("t.yaml", &yaml, None, &Systems::new()).unwrap();
    assert!(
        !m.positions_indexed(),
        "loading a valid file needs no positions"
    );
    let row = &m.rows[0];
    assert_eq!(run_and_check(&m, row), Ok(()));
    assert!(!m.positions_indexed(), "a passing row needs no positions");
    let bad = yaml.replace("B1 200 return", "B1 200 fail");
    let m = load_text("t.yaml", &bad, None, &Systems::new()).unwrap();
    assert!(run_and_check(&m, &m.rows[0]).is_err());
    assert!(m.positions_indexed(), "a failure points at its line");
}
