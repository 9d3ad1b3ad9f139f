//! Tests of the reason-code registry: generated tests appear and disappear
//! with codes, each guardrail fails with a message naming exactly the
//! offending codes, a terminal code that recovers does not load, the shipped
//! registry's generated tests pass, and the `codes` / `check` commands
//! behave as a user sees them.

use crate::common::{cli, write};
use std::path::Path;
use std::sync::Arc;

use faultmatrix::engine::discover::Found;
use faultmatrix::engine::guardrails::{Coverage, Guardrail};
use faultmatrix::engine::suite::{run_generated, Suite};
use faultmatrix::load::cache;
use faultmatrix::model::registry::Registry;

fn load(path: &Path) -> Arc<Registry> {
    match cache::RegistryCache::new().load(path) {
        Ok(r) => r,
        Err(e) => panic!("registry does not load: {e:?}"),
    }
}

/// Generated ids without the file part.
fn generated(r: &Arc<Registry>) -> Vec<String> {
    Suite::new(r.clone())
        .generated_rows()
        .map(|(_, _, id)| id.split_once("::").unwrap().1.to_string())
        .collect()
}

fn guardrail(r: &Registry, g: Guardrail) -> Result<(), String> {
    g.check(r, &Coverage::new())
}

/// A registry in the shape of the shipped one: codes, then fixtures.
const BASE: &str = r#"version: 1
codes:
  RATE_LIMITED:
    retryable: true
    max_attempts: 4
    escalate_to: capacity-oncall
    match: { status: [429] }
  INVALID_INPUT:
    retryable: false
    escalate_to: client-team
    match: { status: [422] }
fixtures:
  RATE_LIMITED:
    status: 429
    headers: { Retry-After: "3" }
    recovers_after: 2
  INVALID_INPUT:
    status: 422
    body: { error: { code: invalid_input } }
"#;

#[test]
fn adding_a_code_adds_its_generated_tests() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "codes.yaml", BASE);
    let before = generated(&load(&p));
    assert_eq!(
        before,
        [
            "generated::RATE_LIMITED::exhausted: max_attempts calls, 1 escalation, never called again",
            "generated::RATE_LIMITED::recovers: success after recovers_after failures",
            "generated::RATE_LIMITED::Retry-After: each wait is max(backoff, guidance)",
            "generated::INVALID_INPUT::terminal: 1 call, 1 escalation, no timer",
        ]
    );
    let added = BASE.replace(
        "fixtures:\n",
        "  GATEWAY_TIMEOUT:\n    retryable: true\n    max_attempts: 2\n    escalate_to: platform-oncall\n    match: { status: [504] }\n    fixture: { status: 504, recovers_after: 1 }\nfixtures:\n",
    );
    write(dir.path(), "codes.yaml", &added);
    let r = load(&p);
    let after = generated(&r);
    let new: Vec<&String> = after.iter().filter(|id| !before.contains(id)).collect();
    assert_eq!(
        new,
        [
            "generated::GATEWAY_TIMEOUT::exhausted: max_attempts calls, 1 escalation, never called again",
            "generated::GATEWAY_TIMEOUT::recovers: success after recovers_after failures",
        ]
    );
    // And they run and pass against the reference system.
    let suite = Suite::new(r);
    for (m, i, id) in suite.generated_rows() {
        assert_eq!(run_generated(m, i, &Default::default()), Ok(()), "{id}");
    }
}

#[test]
fn generated_traces_encode_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let r = load(&write(dir.path(), "codes.yaml", BASE));
    let suite = Suite::new(r);
    let traces: Vec<(String, Vec<String>)> = suite
        .generated_rows()
        .map(|(m, i, id)| {
            let lines = m.rows[i].expect.trace.as_ref().unwrap();
            (
                id.rsplit("::").next().unwrap().to_string(),
                lines.iter().map(|l| l.text.clone()).collect(),
            )
        })
        .collect();
    let get = |prefix: &str| {
        traces
            .iter()
            .find(|(n, _)| n.starts_with(prefix))
            .map(|(_, t)| t.join("\n"))
            .unwrap()
    };
    // max_attempts 4 calls; each wait is max(1s·2^n, Retry-After 3s).
    assert_eq!(
        get("exhausted"),
        "A1 429 RATE_LIMITED retry wait=3s\nA2 429 RATE_LIMITED retry wait=3s\nA3 429 RATE_LIMITED retry wait=4s\nA4 429 RATE_LIMITED fail"
    );
    assert_eq!(
        get("recovers"),
        "A1 429 RATE_LIMITED retry wait=3s\nA2 429 RATE_LIMITED retry wait=3s\nA3 200 return"
    );
    assert_eq!(
        get("Retry-After"),
        "A1 429 RATE_LIMITED retry wait=3s at=0s\nA2 429 RATE_LIMITED retry wait=3s at=3s\nA3 429 RATE_LIMITED retry wait=4s at=6s\nA4 200 return at=10s"
    );
    assert_eq!(get("terminal"), "A1 422 INVALID_INPUT fail");
}

#[test]
fn deleting_a_fixture_fails_the_fixture_guardrail_naming_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let text = BASE.replace(
        "  INVALID_INPUT:\n    status: 422\n    body: { error: { code: invalid_input } }\n",
        "",
    );
    let r = load(&write(dir.path(), "codes.yaml", &text));
    let shown = r.origin.clone();
    assert_eq!(
        guardrail(&r, Guardrail::HasFixture).unwrap_err(),
        format!("guardrail `every code has a fixture` failed for 1 code: INVALID_INPUT\n  {shown}:8: no fixture: add `fixture:` under the code, or an entry under `fixtures:`\n")
    );
    // Its generated test is gone; the other guardrails still hold, except
    // coverage: nothing injects the code any more.
    assert!(!generated(&r).iter().any(|id| id.contains("INVALID_INPUT")));
    assert_eq!(guardrail(&r, Guardrail::FixtureNamesCode), Ok(()));
    assert_eq!(
        guardrail(&r, Guardrail::Injected).unwrap_err(),
        format!("guardrail `every code is injected by a row or a generated test` failed for 1 code: INVALID_INPUT\n  {shown}:8: no row injects it and it has no generated test (give it a fixture, or inject it in a matrix that says `registry: codes.yaml`)\n")
    );
}

#[test]
fn renaming_a_code_leaves_its_fixture_behind_and_both_guardrails_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = BASE.replacen(
        "  RATE_LIMITED:\n    retryable",
        "  RATE_LIMITED_HIT:\n    retryable",
        1,
    );
    let r = load(&write(dir.path(), "codes.yaml", &text));
    let shown = r.origin.clone();
    assert_eq!(
        guardrail(&r, Guardrail::FixtureNamesCode).unwrap_err(),
        format!("guardrail `every fixture names a code` failed for 1 fixture: RATE_LIMITED\n  {shown}:13: `fixtures.RATE_LIMITED` names no code (left behind after a rename?); did you mean `RATE_LIMITED_HIT`?\n")
    );
    assert_eq!(
        guardrail(&r, Guardrail::HasFixture).unwrap_err(),
        format!("guardrail `every code has a fixture` failed for 1 code: RATE_LIMITED_HIT\n  {shown}:3: no fixture: add `fixture:` under the code, or an entry under `fixtures:` (the fixture `RATE_LIMITED` looks like it; was the code renamed?)\n")
    );
}

#[test]
fn a_terminal_code_configured_to_recover_does_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let text = BASE.replace(
        "    body: { error: { code: invalid_input } }\n",
        "    body: { error: { code: invalid_input } }\n    recovers_after: 3\n",
    );
    let p = write(dir.path(), "codes.yaml", &text);
    let Err(cache::RegistryError {
        kind: cache::RegistryErrorKind::Invalid(e),
        ..
    }) = cache::RegistryCache::new().load(&p)
    else {
        panic!("a terminal code that recovers must not load");
    };
    let shown = cache::display(&p, &std::env::current_dir().unwrap());
    assert_eq!(
        e.to_string(),
        format!("error: terminal code `INVALID_INPUT` is configured to recover after 3 failing calls\n  --> {shown}:20:5\n   |\n20 |     recovers_after: 3\n   |     ^ a terminal code never succeeds on a later attempt: remove `recovers_after`, or make the code retryable\n")
    );
}

#[test]
fn a_matrix_on_a_broken_registry_points_at_its_registry_key() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "codes.yaml",
        &BASE.replace("status: 422\n", "status: 999\n"),
    );
    let m = write(
        dir.path(),
        "m.yaml",
        "title: t\nregistry: codes.yaml\nrows:\n  - name: r\n    inject: { A: [200] }\n    expect: { stop: success }\n",
    );
    let err = faultmatrix::load::load_file(&m, "m.yaml", &faultmatrix::Systems::new())
        .err()
        .unwrap()
        .to_string();
    let shown = cache::display(
        &dir.path().join("codes.yaml"),
        &std::env::current_dir().unwrap(),
    );
    assert_eq!(
        err,
        format!("error: registry `{shown}` does not load: status 999 is not an HTTP status: expected 100 to 599 ({shown}:18:13)\n --> m.yaml:2:11\n  |\n2 | registry: codes.yaml\n  |           ^ 1 error in the registry\n  = help: run `faultmatrix check {shown}` to see every error\n")
    );
}

#[test]
fn omissions_load_and_each_guardrail_lists_exactly_the_offending_codes() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"version: 1
codes:
  A_OK: { retryable: true, max_attempts: 2, escalate_to: x, match: { status: [503] }, fixture: { status: 503 } }
  NO_RETRYABLE: { match: { status: [418] }, fixture: { status: 418 } }
  NO_BUDGET: { retryable: true, escalate_to: x, match: { status: [502] }, fixture: { status: 502 } }
  NO_TARGET: { retryable: true, max_attempts: 2, match: { status: [504] }, fixture: { status: 504 } }
  NEITHER: { retryable: true, match: { status: [500] }, fixture: { status: 500 } }
  TERMINAL_NO_TARGET: { retryable: false, match: { status: [401] }, fixture: { status: 401 } }
  LATE: { retryable: true, max_attempts: 2, escalate_to: x, match: { status: [529] }, fixture: { status: 529, recovers_after: 2 } }
  STOLEN: { retryable: false, escalate_to: x, match: { status: [403] }, fixture: { status: 503 } }
"#;
    let r = load(&write(dir.path(), "codes.yaml", text));
    let offending = |g: Guardrail| -> String {
        let msg = guardrail(&r, g).err().unwrap_or_default();
        msg.lines()
            .next()
            .unwrap_or("")
            .rsplit(": ")
            .next()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(offending(Guardrail::HasFixture), "");
    assert_eq!(offending(Guardrail::DeclaresRetryable), "NO_RETRYABLE");
    assert_eq!(
        offending(Guardrail::RetryableDeclaresBudget),
        "NO_BUDGET, NO_TARGET, NEITHER"
    );
    assert_eq!(
        offending(Guardrail::TerminalDeclaresEscalation),
        "TERMINAL_NO_TARGET"
    );
    assert_eq!(offending(Guardrail::RecoversWithinBudget), "LATE");
    assert_eq!(offending(Guardrail::FixtureClassifiedAsCode), "STOLEN");
    let budget = guardrail(&r, Guardrail::RetryableDeclaresBudget).unwrap_err();
    assert!(budget.contains(":5: missing max_attempts\n"), "{budget}");
    assert!(budget.contains(":6: missing escalate_to\n"), "{budget}");
    assert!(
        budget.contains(":7: missing max_attempts and escalate_to\n"),
        "{budget}"
    );
    let stolen = guardrail(&r, Guardrail::FixtureClassifiedAsCode).unwrap_err();
    assert!(
        stolen.contains("the fixture (503) is classified as `A_OK`"),
        "{stolen}"
    );
    // A code without retryable gets no generated test; a misclassified
    // fixture's generated test fails with the trace diff.
    let suite = Suite::new(r.clone());
    assert!(!suite.ids().iter().any(|id| id.contains("NO_RETRYABLE")));
    let (m, i, _) = suite
        .generated_rows()
        .find(|(_, _, id)| id.contains("::STOLEN::"))
        .unwrap();
    let failure = run_generated(m, i, &Default::default())
        .unwrap_err()
        .render();
    assert!(
        failure.contains("- A1 503 STOLEN fail\n+ A1 503 A_OK retry wait=1s\n"),
        "{failure}"
    );
    // The failure points at the code in the registry.
    let at = format!("  --> {}:10:3\n", r.origin);
    assert!(failure.contains(&at), "{failure}");
}

#[test]
fn rows_of_matrices_count_as_coverage() {
    let dir = tempfile::tempdir().unwrap();
    let text = "version: 1\ncodes:\n  RARE: { retryable: false, escalate_to: x, match: { status: [451] } }\n";
    let p = write(dir.path(), "codes.yaml", text);
    let r = load(&p);
    assert!(guardrail(&r, Guardrail::Injected).is_err());
    let m = write(
        dir.path(),
        "m.yaml",
        "title: t\nregistry: codes.yaml\nrows:\n  - name: r\n    inject: { A: [{ status: 451 }] }\n    expect: { stop: terminal }\n",
    );
    let found = Found {
        path: m.clone(),
        display: "m.yaml".into(),
    };
    let coverage =
        faultmatrix::engine::suite::coverage_of(&[found], &faultmatrix::load::Loader::default(), 1);
    assert_eq!(Guardrail::Injected.check(&r, &coverage), Ok(()));
    // Still no fixture: that guardrail keeps failing.
    assert!(guardrail(&r, Guardrail::HasFixture).is_err());
}

#[test]
fn the_shipped_registry_passes_its_generated_tests_and_guardrails() {
    let root = crate::common::workspace().join("matrices");
    let r = load(&root.join("codes.yaml"));
    let suite = Suite::new(r.clone());
    let mut n = 0;
    for (m, i, id) in suite.generated_rows() {
        assert_eq!(run_generated(m, i, &Default::default()), Ok(()), "{id}");
        n += 1;
    }
    // Every code has at least one generated test.
    for c in &r.codes {
        assert!(
            suite
                .ids()
                .iter()
                .any(|id| id.contains(&format!("::{}::", c.name))),
            "{} has no generated test",
            c.name
        );
    }
    assert!(n >= r.codes.len());
    let all = faultmatrix::engine::discover::find(
        &root,
        &faultmatrix::engine::discover::globset(&["**/*.yaml".into()]).unwrap(),
        &std::env::current_dir().unwrap(),
    )
    .unwrap();
    let coverage =
        faultmatrix::engine::suite::coverage_of(&all, &faultmatrix::load::Loader::default(), 2);
    for g in Guardrail::ALL {
        assert_eq!(g.check(&r, &coverage), Ok(()), "{}", g.name());
    }
}

#[test]
fn the_harness_makes_trials_and_exact_selection_of_coverage_loads_the_matrices() {
    let dir = tempfile::tempdir().unwrap();
    let text = "version: 1\ncodes:\n  RARE: { retryable: false, escalate_to: x, match: { status: [451] } }\n";
    write(dir.path(), "codes.yaml", text);
    write(
        dir.path(),
        "m.yaml",
        "title: t\nregistry: codes.yaml\nrows:\n  - name: r\n    inject: { A: [{ status: 451 }] }\n    expect: { stop: terminal }\n",
    );
    let h = faultmatrix::harness::Harness::new(dir.path());
    let shown = faultmatrix::engine::discover::display_name(
        &dir.path().join("codes.yaml"),
        &std::env::current_dir().unwrap(),
    );
    let id = format!("{shown}::guardrail::every code is injected by a row or a generated test");
    let all = h.trials(&libtest_mimic::Arguments::default()).unwrap();
    let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
    assert!(names.contains(&id.as_str()), "{names:?}");
    assert!(names.contains(&format!("{shown}::guardrail::every code has a fixture").as_str()));
    let args = libtest_mimic::Arguments {
        exact: true,
        filter: Some(id.clone()),
        test_threads: Some(1),
        quiet: true,
        // The nested run's report goes to a file, not this test's output.
        logfile: Some(dir.path().join("nested.log").display().to_string()),
        ..Default::default()
    };
    let trials = h.trials(&args).unwrap();
    let c = libtest_mimic::run(&args, trials);
    assert_eq!((c.num_passed, c.num_failed), (1, 0));
}

// ------------------------------------------------------------------- CLI

#[test]
fn cli_codes_prints_the_review_table() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "matrices/codes.yaml",
        &format!("title: Gateway codes\n{BASE}"),
    );
    let (code, out, err) = cli(dir.path(), &["codes"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "# Gateway codes\n\
         \n\
         Registry `matrices/codes.yaml`: 2 codes. \"calls\" is what the generated tests observe for a code that never recovers.\n\
         \n\
         | code | retryable | calls | escalate to | matches | fixture | fixture status | recovers after | generated tests |\n\
         |---|---|---|---|---|---|---|---|---|\n\
         | RATE_LIMITED | yes | 4 | capacity-oncall | status 429 | 429, Retry-After: 3 | ok | 2 failing calls | exhausted, recovers, Retry-After |\n\
         | INVALID_INPUT | no | 1 | client-team | status 422 | 422 `invalid_input` | ok | never | terminal |\n\
         \n\
         ## Guardrails\n\
         \n\
         Every guardrail that needs no matrix holds.\n"
    );
    // A missing fixture shows in the table and under the guardrails.
    write(
        dir.path(),
        "matrices/codes.yaml",
        &BASE.replace(
            "  INVALID_INPUT:\n    status: 422\n    body: { error: { code: invalid_input } }\n",
            "",
        ),
    );
    let (code, out, _) = cli(dir.path(), &["codes", "matrices/codes.yaml"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("| INVALID_INPUT | no | 1 | client-team | status 422 | **missing** | **missing** | never | **none** |\n"),
        "{out}"
    );
    assert!(
        out.contains("- guardrail `every code has a fixture` failed for 1 code: INVALID_INPUT\n  - matrices/codes.yaml:8: no fixture"),
        "{out}"
    );
    let (code, _, err) = cli(dir.path(), &["codes", "nope.yaml"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: cannot read registry `nope.yaml`"),
        "{err}"
    );
}

#[test]
fn cli_check_validates_without_running_and_exits_for_ci() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/codes.yaml", BASE);
    write(
        dir.path(),
        "matrices/m.yaml",
        "title: t\nregistry: codes.yaml\nrows:\n  - name: would fail if run\n    inject: { A: [RATE_LIMITED, 200] }\n    expect: { stop: terminal }\n",
    );
    let (code, out, _) = cli(dir.path(), &["check"]);
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "checked 1 matrix (1 rows) and 1 registry (2 codes): 0 problems\n"
        )
    );
    // Rename a code: its fixture is left behind, and the row's trace no
    // longer names a known code.
    write(
        dir.path(),
        "matrices/codes.yaml",
        &BASE.replacen(
            "  RATE_LIMITED:\n    retryable",
            "  THROTTLED:\n    retryable",
            1,
        ),
    );
    let (code, out, _) = cli(dir.path(), &["check", "matrices/codes.yaml"]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(
        out,
        "error: guardrail `every code has a fixture` failed for 1 code: THROTTLED\n  = test: matrices/codes.yaml::guardrail::every code has a fixture\n  matrices/codes.yaml:3: no fixture: add `fixture:` under the code, or an entry under `fixtures:`\n\
         \n\
         error: guardrail `every fixture names a code` failed for 1 fixture: RATE_LIMITED\n  = test: matrices/codes.yaml::guardrail::every fixture names a code\n  matrices/codes.yaml:13: `fixtures.RATE_LIMITED` names no code (left behind after a rename?)\n\
         \n\
         error: guardrail `every code is injected by a row or a generated test` failed for 1 code: THROTTLED\n  = test: matrices/codes.yaml::guardrail::every code is injected by a row or a generated test\n  matrices/codes.yaml:3: no row injects it and it has no generated test (give it a fixture, or inject it in a matrix that says `registry: codes.yaml`)\n\
         \n\
         checked 0 matrices (0 rows) and 1 registry (2 codes): 3 problems\n"
    );
    let (code, out, _) = cli(dir.path(), &["check"]);
    assert_eq!(code, 2);
    assert!(
        out.contains("error: unknown script entry `RATE_LIMITED`\n --> matrices/m.yaml:5:19\n"),
        "{out}"
    );
    assert!(
        out.ends_with("checked 0 matrices (0 rows) and 1 registry (2 codes): 4 problems\n"),
        "{out}"
    );
}

#[test]
fn cli_run_and_list_include_generated_tests_and_guardrails() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "matrices/codes.yaml", BASE);
    let (code, out, _) = cli(dir.path(), &["list"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 4 + Guardrail::ALL.len(), "{out}");
    assert!(out.contains(
        "matrices/codes.yaml::generated::INVALID_INPUT::terminal: 1 call, 1 escalation, no timer\n"
    ));
    let (code, out, _) = cli(dir.path(), &["run", "-q"]);
    assert_eq!((code, out.as_str()), (0, "12 passed, 0 failed\n"));
    // A code without a fixture fails its guardrails in `run` too.
    write(
        dir.path(),
        "matrices/codes.yaml",
        &BASE.replace(
            "  INVALID_INPUT:\n    status: 422\n    body: { error: { code: invalid_input } }\n",
            "",
        ),
    );
    let (code, out, _) = cli(dir.path(), &["run", "-q"]);
    assert_eq!(code, 1);
    assert!(out.contains("---- matrices/codes.yaml::guardrail::every code has a fixture ----\nguardrail `every code has a fixture` failed for 1 code: INVALID_INPUT\n"), "{out}");
    assert!(out.ends_with("9 passed, 2 failed\n"), "{out}");
}

#[test]
fn registry_schema_errors_are_load_errors_with_positions() {
    // (registry text, the first diagnostic's headline and line)
    let cases: [(&str, &str, usize); 5] = [
        (
            "version: 1\ncodes:\n  X: { retryable: false, escalate_to: t, fixture: { status: 400 } }\nfixtures:\n  X: { status: 400 }\n",
            "code `X` has two fixtures",
            5,
        ),
        (
            "version: 1\ncodes:\n  X:\n    retryable: false\n    max_attempts: 3\n    escalate_to: t\n",
            "terminal code `X` declares `max_attempts: 3`",
            5,
        ),
        (
            "version: 1\ncodes:\n  X: { retryable: true, max_attempts: 0, escalate_to: t }\n",
            "`max_attempts` is 0: it counts the first call, so it is at least 1",
            3,
        ),
        (
            "version: 1\ncodes:\n  X: { retryable: true, max_attempts: 2, escalate_to: t }\nfixtures:\n  X: { status: 503, recovers_after: 0 }\n",
            "`recovers_after` is 0: it counts the failing calls before the code recovers, so it is at least 1",
            5,
        ),
        (
            "version: 1\ncodes:\n  X: { retryable: true, max_attempts: 2, escalate_to: t, fixtures: {} }\n",
            "unknown key `fixtures` in `codes.X`",
            3,
        ),
    ];
    for (text, headline, line) in cases {
        let e = match faultmatrix::load::registry_from_text("codes.yaml", text) {
            Ok(_) => panic!("loads: {text}"),
            Err(e) => e,
        };
        let d = &e.diagnostics[0];
        assert_eq!((d.message.as_str(), d.pos.line), (headline, line), "{e}");
    }
}

#[test]
fn a_registry_that_does_not_load_is_one_failing_trial_named_after_it() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "codes.yaml",
        &BASE.replace(
            "    recovers_after: 2\n",
            "    recovers_after: 2\n    repeat: 3\n",
        ),
    );
    let h = faultmatrix::harness::Harness::new(dir.path());
    let trials = h.trials(&libtest_mimic::Arguments::default()).unwrap();
    let shown = faultmatrix::engine::discover::display_name(
        &dir.path().join("codes.yaml"),
        &std::env::current_dir().unwrap(),
    );
    let names: Vec<&str> = trials.iter().map(|t| t.name()).collect();
    assert_eq!(names, [shown.as_str()]);
}

#[test]
fn cli_check_of_a_matrix_checks_the_registry_it_names() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "codes.yaml",
        "version: 1\ncodes:\n  RARE: { retryable: true, match: { status: [451] }, fixture: { status: 451 } }\n",
    );
    write(
        dir.path(),
        "m.yaml",
        "title: t\nregistry: codes.yaml\nrows:\n  - name: r\n    inject: { A: [RARE, 200] }\n    expect: { stop: success }\n",
    );
    let (code, out, _) = cli(dir.path(), &["check", "m.yaml"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.starts_with("error: guardrail `every retryable code declares max_attempts and escalate_to` failed for 1 code: RARE\n  = test: codes.yaml::guardrail::every retryable code declares max_attempts and escalate_to\n  codes.yaml:3: missing max_attempts and escalate_to\n"),
        "{out}"
    );
    assert!(
        out.ends_with("checked 1 matrix (1 rows) and 1 registry (1 codes): 1 problem\n"),
        "{out}"
    );
}
