//! Explore mode (issue 17): generated failure sequences against the
//! invariants, shrunk to a row.
//!
//! - every deliberately broken controller of `rules.rs` is caught, shrunk
//!   to a row of at most four calls (the bounded-error one needs 17: an
//!   error can only overflow its 16 listed attempts after 17 calls), and
//!   the printed row, loaded back from its YAML, fails against the broken
//!   controller and passes against the reference;
//! - a client built on `backon` with its documented `adjust` pattern is
//!   caught by the budget invariant with a minimal row;
//! - the reference system holds every invariant (a smaller count here; the
//!   million-case run is a documented command, docs/explore.md);
//! - the same seed gives the same cases and row on any thread count;
//! - the CLI as a user runs it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use faultmatrix::engine::explore::{Explorer, Found, Options};
use faultmatrix::exec::run::ExecOptions;
use faultmatrix::policy::{AboveCap, Jitter, Policy};
use faultmatrix::system::{Built, FinalError, RowContext, Success, SystemResult, Systems};
use faultmatrix::transport::{BoxFuture, Request};
use faultmatrix::System;

use crate::common::{cli, write};
use crate::rules::{broken, unchanged, Mistake};

/// A matrix for `system` with `policy`, one placeholder row.
fn matrix(system: &str, policy: &str) -> String {
    format!(
        "title: explored\nsystem: {system}\npolicy: {policy}\nrows:\n  - name: placeholder\n    inject: {{ A: [ok] }}\n    expect: {{ stop: success }}\n"
    )
}

fn open(dir: &Path, text: &str, invariants: Option<&str>, systems: &Systems) -> Explorer {
    write(dir, "m.yaml", text);
    if let Some(inv) = invariants {
        write(dir, "m.invariants.yaml", inv);
    }
    Explorer::open(
        &dir.join("m.yaml"),
        "m.yaml",
        None,
        systems,
        ExecOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn options(seed: u64, cases: u64, threads: usize) -> Options {
    Options {
        seed,
        cases,
        threads,
        ..Options::default()
    }
}

const BASE: &str = "{ routes: [{ name: A, attempts: 3 }, { name: B, attempts: 1 }], backoff: { initial: 1s, factor: 2, cap: 30s }, attempt_timeout: 2s }";

/// Explores `policy` on the controller broken by `mutate` and `mistake`:
/// a violation of one of `caught_by` is found, shrunk to at most
/// `most_calls` calls, and the printed row fails against the broken
/// system and passes against the reference.
fn catches(
    policy: &str,
    mutate: fn(&mut Policy),
    mistake: Mistake,
    caught_by: &[&str],
    most_calls: usize,
) -> Found {
    catches_with(policy, None, mutate, mistake, caught_by, most_calls)
}

/// [`catches`] with an invariants file.
fn catches_with(
    policy: &str,
    invariants: Option<&str>,
    mutate: fn(&mut Policy),
    mistake: Mistake,
    caught_by: &[&str],
    most_calls: usize,
) -> Found {
    let dir = tempfile::tempdir().unwrap();
    let mut systems = Systems::new();
    systems.register("broken", broken(mutate, mistake));
    let ex = open(dir.path(), &matrix("broken", policy), invariants, &systems);
    let report = ex.explore(&options(1, 50_000, 2));
    let found = report
        .found
        .unwrap_or_else(|| panic!("no violation in {} cases", report.cases));
    let why = format!(
        "invariant `{}`: {}\n{}",
        found.violation.invariant, found.violation.message, found.row
    );
    assert!(
        caught_by.contains(&found.violation.invariant.as_str()),
        "caught by another invariant than {caught_by:?}: {why}"
    );
    assert!(found.calls <= most_calls, "{} calls: {why}", found.calls);
    assert!(
        found.calls <= found.original_calls,
        "shrinking added calls: {why}"
    );
    let v = ex.verify(&found.row, &found.row_name);
    match v.reference {
        Some(Ok(())) => {}
        Some(Err(e)) => panic!("the printed row fails against the reference:\n{e}\n{why}"),
        None => panic!("no reference to check against: {why}"),
    }
    if v.system.is_ok() {
        panic!("the printed row passes against the broken system: {why}");
    }
    assert!(found.row.contains(&format!(
        "# explore: invariant `{}` broken",
        found.violation.invariant
    )));
    // A generated wall clock stays in the row only when it matters.
    if !matches!(mistake, Mistake::DefaultWallClock | Mistake::RealWallClock) {
        assert!(
            found.case.wall.is_none(),
            "the wall was not shrunk away: {why}"
        );
        assert!(!found.row.contains("clock:"), "{why}");
    }
    found
}

fn with(policy: &str, extra: &str) -> String {
    format!("{}, {extra} }}", policy.trim_end_matches('}').trim_end())
}

// ------------------------------------------------------------ 1. backoff

#[test]
fn broken_backoff_growth_factor() {
    catches(
        BASE,
        |p| p.backoff.factor = 3.0,
        Mistake::None,
        &["backoff"],
        4,
    );
}

#[test]
fn broken_backoff_cap() {
    let policy = "{ routes: [{ name: A, attempts: 3 }, { name: B, attempts: 1 }], backoff: { initial: 1s, factor: 2, cap: 1500ms }, attempt_timeout: 2s }";
    catches(
        policy,
        |p| p.backoff.cap = Duration::from_secs(3600),
        Mistake::None,
        &["backoff"],
        4,
    );
}

#[test]
fn broken_full_jitter() {
    let policy = "{ routes: [{ name: A, attempts: 3 }], backoff: { initial: 1s, factor: 2, cap: 30s, jitter: full } }";
    catches(
        policy,
        |p| p.backoff.jitter = Jitter::Equal,
        Mistake::None,
        &["backoff"],
        4,
    );
}

#[test]
fn broken_equal_jitter() {
    let policy = "{ routes: [{ name: A, attempts: 3 }], backoff: { initial: 1s, factor: 2, cap: 30s, jitter: equal } }";
    catches(
        policy,
        |p| p.backoff.jitter = Jitter::Full,
        Mistake::None,
        &["backoff"],
        4,
    );
}

#[test]
fn broken_decorrelated_jitter() {
    let policy = "{ routes: [{ name: A, attempts: 3 }], backoff: { initial: 1s, factor: 2, cap: 30s, jitter: decorrelated } }";
    catches(
        policy,
        |p| p.backoff.jitter = Jitter::Full,
        Mistake::None,
        &["backoff"],
        4,
    );
}

// ------------------------------------------------------------ 2. guidance

#[test]
fn broken_guidance_not_honoured() {
    catches(
        BASE,
        |p| p.retry_after.honor = false,
        Mistake::None,
        &["guidance", "backoff"],
        4,
    );
}

#[test]
fn broken_http_dates_on_the_real_clock() {
    catches(
        BASE,
        unchanged,
        Mistake::RealWallClock,
        &["guidance", "backoff"],
        4,
    );
}

#[test]
fn broken_http_dates_on_the_default_wall_print_the_wall() {
    // Correct on the default wall, wrong on any other: only a generated
    // wall finds it, and the printed row keeps its `clock`.
    let found = catches(
        BASE,
        unchanged,
        Mistake::DefaultWallClock,
        &["guidance", "backoff"],
        4,
    );
    assert!(found.case.wall.is_some(), "{}", found.row);
    assert!(found.row.contains("    clock: { wall: \""), "{}", found.row);
}

#[test]
fn broken_guidance_refused_where_clamped() {
    catches(
        BASE,
        |p| p.retry_after.above_cap = AboveCap::Refuse,
        Mistake::None,
        &["guidance"],
        4,
    );
}

#[test]
fn broken_guidance_clamped_where_refused() {
    catches(
        &with(BASE, "retry_after: { above_cap: refuse }"),
        |p| p.retry_after.above_cap = AboveCap::Clamp,
        Mistake::None,
        &["guidance"],
        4,
    );
}

// ------------------------------------------------------ 3. classification

#[test]
fn broken_body_does_not_override_the_status() {
    catches(
        BASE,
        |p| p.body_paths = vec!["nowhere".into()],
        Mistake::None,
        &["terminal", "honest-stop", "no-call-after-success"],
        4,
    );
}

#[test]
fn broken_model_unavailable_does_not_switch() {
    catches(
        BASE,
        |p| p.switch_on = Some(Vec::new()),
        Mistake::None,
        &["honest-stop"],
        4,
    );
}

#[test]
fn broken_sleeps_after_a_terminal_code() {
    catches(
        BASE,
        unchanged,
        Mistake::SleepsBeforeTerminal,
        &["terminal"],
        4,
    );
}

#[test]
fn broken_draws_jitter_for_a_terminal_code() {
    catches(
        BASE,
        unchanged,
        Mistake::DrawsBeforeTerminal,
        &["jitter-draws"],
        4,
    );
}

#[test]
fn broken_retries_a_terminal_code() {
    catches(
        BASE,
        unchanged,
        Mistake::RetriesTerminal,
        &["terminal", "budget"],
        4,
    );
}

// ------------------------------------------------------------- 4. budgets

#[test]
fn broken_budget_without_the_first_call() {
    catches(
        BASE,
        |p| p.routes.iter_mut().for_each(|r| r.attempts += 1),
        Mistake::None,
        &["budget"],
        4,
    );
}

#[test]
fn broken_counters_reset() {
    let policy = "{ routes: [{ name: A, attempts: 1 }, { name: B, attempts: 1 }] }";
    catches(policy, unchanged, Mistake::ResetsCounters, &["budget"], 4);
}

#[test]
fn broken_switch_delay() {
    catches(
        BASE,
        |p| p.switch_delay = Duration::from_secs(2),
        Mistake::None,
        &["backoff"],
        4,
    );
}

// ------------------------------------------------------------ 5. deadline

#[test]
fn broken_ignores_the_deadline() {
    catches(
        &with(BASE, "deadline: 3s"),
        |p| p.deadline = None,
        Mistake::IgnoresDeadline,
        &["deadline"],
        4,
    );
}

#[test]
fn broken_attempt_timeout() {
    catches(
        BASE,
        |p| p.attempt_timeout = Duration::from_secs(5),
        Mistake::None,
        &["attempt-timeout"],
        4,
    );
}

// --------------------------------------------------------- 6. idempotency

#[test]
fn broken_retries_creates_without_a_key() {
    catches(
        BASE,
        |p| p.retry_creates_without_key = true,
        Mistake::None,
        &["create-key"],
        4,
    );
}

#[test]
fn broken_transport_drops_the_key() {
    catches(BASE, unchanged, Mistake::DropsKey, &["create-key"], 4);
}

// ------------------------------------------------------------- 7. streams

#[test]
fn broken_replays_partial_output() {
    catches(
        BASE,
        unchanged,
        Mistake::HidesPartialOutput,
        &["no-replay"],
        4,
    );
}

#[test]
fn broken_comments_as_data() {
    catches(
        BASE,
        unchanged,
        Mistake::CommentsAsData,
        &["honest-stop"],
        4,
    );
}

// ------------------------------------------------ 8. final error, escalation

#[test]
fn broken_loses_the_request_id() {
    catches(BASE, unchanged, Mistake::LosesRequestId, &["request-id"], 4);
}

#[test]
fn broken_unbounded_error() {
    // The error overflows its 16 listed attempts only after 17 calls, so
    // the shrunk row has at least that many. Six routes of three attempts,
    // as matrices/final-error-bounded.yaml; long runs of failures are rare
    // by default, so this file generates 503s only.
    let policy = "{ routes: [{ name: A, attempts: 3 }, { name: B, attempts: 3 }, { name: C, attempts: 3 }, { name: D, attempts: 3 }, { name: E, attempts: 3 }, { name: F, attempts: 3 }], backoff: { initial: 10ms, factor: 1, cap: 10ms } }";
    let inv = "invariants: all\ngenerate: { deadline: 0, weights: { ok: 0, status: 1, code: 0, mixed: 0, retry-after: 0, timeout: 0, reset: 0, malformed: 0, truncated: 0, stream: 0, slow: 0 }, statuses: [503] }\n";
    let found = catches_with(
        policy,
        Some(inv),
        unchanged,
        Mistake::UnboundedError,
        &["bounded-error"],
        18,
    );
    assert!(found.calls >= 17, "{}", found.row);
}

#[test]
fn broken_escalates_twice() {
    catches(
        BASE,
        unchanged,
        Mistake::EscalatesTwice,
        &["one-escalation", "terminal"],
        4,
    );
}

#[test]
fn broken_never_escalates() {
    catches(
        BASE,
        unchanged,
        Mistake::NeverEscalates,
        &["terminal", "one-escalation"],
        4,
    );
}

// ------------------------------------------------------- 9. amplification

#[test]
fn broken_grows_the_context() {
    catches(BASE, unchanged, Mistake::GrowsContext, &["same-request"], 4);
}

// ------------------------------------------------------------- the reference

#[test]
fn the_reference_holds_every_invariant() {
    let dir = tempfile::tempdir().unwrap();
    for policy in [
        BASE,
        "{ routes: [{ name: A, attempts: 3 }, { name: B, attempts: 2 }], backoff: { initial: 500ms, factor: 3, cap: 4s, jitter: decorrelated }, deadline: 5s, attempt_timeout: 1s, retry_after: { cap: 10s, above_cap: refuse } }",
        "{ routes: [{ name: A, attempts: 2, backoff: { jitter: equal } }, { name: B, attempts: 3, backoff: { jitter: full } }], switch_delay: 250ms }",
    ] {
        let ex = open(dir.path(), &matrix("reference", policy), None, &Systems::new());
        let report = ex.explore(&options(7, 3000, 2));
        assert_eq!(report.cases, 3000);
        assert!(report.unchecked.is_empty(), "{:?}", report.unchecked);
        if let Some(f) = report.found {
            panic!(
                "the reference breaks `{}`: {}\n{}",
                f.violation.invariant, f.violation.message, f.row
            );
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_row_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut systems = Systems::new();
    systems.register("broken", broken(unchanged, Mistake::ResetsCounters));
    let ex = open(dir.path(), &matrix("broken", BASE), None, &systems);
    let one = ex.explore(&options(42, 20_000, 1)).found.expect("found");
    let four = ex.explore(&options(42, 20_000, 4)).found.expect("found");
    assert_eq!(one.index, four.index);
    assert_eq!(one.row, four.row);
    let other = ex.explore(&options(43, 20_000, 2)).found.expect("found");
    assert!(other.row.contains("seed 43"), "{}", other.row);
}

// ------------------------------------------------------------------ backon

/// A client built on `backon` exactly as its documentation shows `adjust`
/// (docs.rs/backon 1.6, `Retry::adjust`): the server's `Retry-After`
/// replaces the next backoff. `adjust` receives `None` once `max_times`
/// retries are spent, and the documented closure returns
/// `Some(retry_after)` whatever it received, so a server that keeps
/// sending `Retry-After` is retried without end.
struct BackonClient {
    builder: backon::ExponentialBuilder,
    timeout: Duration,
}

#[derive(Debug)]
struct HttpError {
    headers: Vec<(String, String)>,
}

impl System for BackonClient {
    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult> {
        use backon::Retryable;
        Box::pin(async move {
            let fetch = || async {
                let call = ctx.transport.call(Request {
                    route: "A".into(),
                    request_id: Some(ctx.request_id.clone()),
                    size: ctx.request.size,
                    ..Request::default()
                });
                match tokio::time::timeout(self.timeout, call).await {
                    Ok(Ok(r)) if (200..300).contains(&r.status) => Ok(()),
                    Ok(Ok(r)) => Err(HttpError { headers: r.headers }),
                    _ => Err(HttpError {
                        headers: Vec::new(),
                    }),
                }
            };
            let result = fetch
                .retry(self.builder)
                .sleep(tokio::time::sleep)
                .adjust(|err: &HttpError, dur| {
                    // The documented closure, over this transport's headers.
                    match err
                        .headers
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case("Retry-After"))
                    {
                        Some((_, retry_after)) => {
                            let retry_after = retry_after.parse::<u64>().unwrap_or(0);
                            Some(Duration::from_secs(retry_after))
                        }
                        None => dur,
                    }
                })
                .await;
            match result {
                Ok(()) => Ok(Success::default()),
                Err(_) => {
                    ctx.escalations.escalate(faultmatrix::system::Escalation {
                        code: "UNKNOWN".into(),
                        to: None,
                    });
                    Err(FinalError {
                        stop: "failed".into(),
                        code: None,
                        request_id: Some(ctx.request_id.clone()),
                        attempts: Vec::new(),
                        omitted: 0,
                        output: None,
                    })
                }
            }
        })
    }
}

/// The backon client configured from a reference-shaped policy: route A's
/// attempts (the first call included) and its backoff.
fn backon_factory() -> faultmatrix::system::Factory {
    Arc::new(|v, _reg| {
        let p = faultmatrix::policy::from_value(v)?;
        let retries = p.routes[0].attempts.saturating_sub(1) as usize;
        let b = p.backoff_for(&p.routes[0]).clone();
        Ok(Built::new(Arc::new(BackonClient {
            builder: backon::ExponentialBuilder::default()
                .with_min_delay(b.initial)
                .with_factor(b.factor as f32)
                .with_max_delay(b.cap)
                .with_max_times(retries),
            timeout: p.attempt_timeout,
        }))
        .routes(["A"]))
    })
}

#[test]
fn backon_adjust_is_caught_by_the_budget_invariant() {
    let dir = tempfile::tempdir().unwrap();
    let mut systems = Systems::new();
    systems.register("backon", backon_factory());
    // backon's defaults: 3 retries (4 calls), 1s doubling, 60s cap.
    let policy = "{ routes: [{ name: A, attempts: 4 }], backoff: { initial: 1s, factor: 2, cap: 60s }, attempt_timeout: 10s }";
    let inv = "invariants: [budget, returns]\ngenerate: { max_calls: 12 }\n";
    let ex = open(dir.path(), &matrix("backon", policy), Some(inv), &systems);
    let found = ex
        .explore(&options(1, 20_000, 2))
        .found
        .expect("the backon client breaks an invariant");
    assert_eq!(found.violation.invariant, "budget", "{}", found.row);
    assert!(
        found
            .violation
            .message
            .contains("A5 is call 5 on route A, whose budget is 4 attempts"),
        "{}",
        found.violation.message
    );
    // The client keeps calling while the server sends `Retry-After`;
    // shrinking ends that with a success one call past the budget, so the
    // run is minimal: the four calls the budget allows and the fifth, and
    // the guidance that makes it (a plain 429 there keeps backon within
    // its budget).
    assert_eq!(found.calls, 5, "{}", found.row);
    assert!(found.row.contains("Retry-After"), "{}", found.row);
    assert!(found.row.contains("      \"A\": ["), "{}", found.row);
    assert!(found.row.contains("A4 "), "{}", found.row);
    assert!(!found.row.contains("\n        A5 "), "{}", found.row);
    let v = ex.verify(&found.row, &found.row_name);
    assert!(
        v.system.is_err(),
        "the row passes against backon:\n{}",
        found.row
    );
    assert_eq!(v.reference, Some(Ok(())), "{}", found.row);
}

/// A system that never returns on its first run and returns at once on
/// every later one: what a real process on a loaded machine can look like.
struct HangsOnce(std::sync::atomic::AtomicBool);

impl System for HangsOnce {
    fn run(&self, _ctx: RowContext) -> BoxFuture<'_, SystemResult> {
        let first = !self.0.swap(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            if first {
                std::future::pending::<()>().await;
            }
            Ok(Success {
                route: Some("A".into()),
                output: None,
            })
        })
    }
}

/// A case whose break a second run does not reproduce is still reported,
/// and says what the run that broke it did.
#[test]
fn a_break_the_shrink_cannot_repeat_says_what_the_first_run_did() {
    let dir = tempfile::tempdir().unwrap();
    let mut systems = Systems::new();
    let factory: faultmatrix::system::Factory =
        Arc::new(|_v, _reg| Ok(Built::new(Arc::new(HangsOnce(Default::default()))).routes(["A"])));
    systems.register("hangs-once", factory);
    let policy = "{ routes: [{ name: A, attempts: 2 }] }";
    let inv = "invariants: [returns]\n";
    let ex = open(
        dir.path(),
        &matrix("hangs-once", policy),
        Some(inv),
        &systems,
    );
    let found = ex
        .explore(&options(1, 10, 1))
        .found
        .expect("the first run hangs");
    assert_eq!(found.violation.invariant, "returns", "{}", found.row);
    let m = &found.violation.message;
    assert!(m.contains("a run is not deterministic"), "{m}");
    assert!(
        m.contains("; the first run: the system was still running at "),
        "{m}"
    );
}

// --------------------------------------------------------------------- CLI

#[test]
fn cli_explore_passes_on_the_reference_and_reports_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "m.yaml", &matrix("reference", BASE));
    let (code, out, err) = cli(
        dir.path(),
        &["explore", "m.yaml", "--cases", "300", "--seed", "5"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("17 invariants checked, seed 5"), "{out}");
    assert!(out.contains("ok: 300 cases held every invariant"), "{out}");

    write(
        dir.path(),
        "m.invariants.yaml",
        "invariants:\n  - budget\n  - deadlien\n",
    );
    let (code, out, err) = cli(dir.path(), &["explore", "m.yaml", "--cases", "10"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("unknown invariant `deadlien`"), "{err}");
    assert!(err.contains("m.invariants.yaml:3:5"), "{err}");
    assert!(err.contains("did you mean `deadline`"), "{err}");

    // The invariants file is not a matrix: `run` skips it.
    write(dir.path(), "m.invariants.yaml", "invariants: [budget]\n");
    let (code, out, err) = cli(dir.path(), &["run", "."]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = cli(dir.path(), &["explore", "m.yaml", "--time", "5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--time"), "{err}");
}

#[test]
fn cli_explore_writes_the_row_that_fails() {
    // A reference system whose file declares a budget it cannot keep is
    // not possible; a custom own rule is: B at most once.
    let dir = tempfile::tempdir().unwrap();
    let policy = "{ routes: [{ name: A, attempts: 1 }, { name: B, attempts: 3 }] }";
    write(dir.path(), "m.yaml", &matrix("reference", policy));
    write(
        dir.path(),
        "m.invariants.yaml",
        "invariants:\n  - { name: b-once, meaning: B is called at most once, max_calls: 1, route: B }\n",
    );
    let (code, out, err) = cli(dir.path(), &["explore", "m.yaml", "--write"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("FAILED: invariant `b-once` broken"), "{out}");
    assert!(
        out.contains("B2 is call 2 on route B; at most 1 allowed"),
        "{out}"
    );
    assert!(out.contains("appended the row to m.yaml"), "{out}");
    // The written file runs: the new row records what the reference does, so it passes.
    let (code, out, err) = cli(dir.path(), &["run", "m.yaml"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("explore b-once seed 1"), "{out}");
}

// ------------------------------------------- a command system (Python)

/// The repository's small Python client (`runner-tests/explore-python/`,
/// standard library only) runs on the virtual clock through the shim: its
/// own rows pass, `faultmatrix explore` holds every invariant of its
/// invariants file over a few generated cases, and the copy made wrong on
/// purpose (it retries a 4xx) is caught by `terminal` and shrunk; the
/// printed row reproduces the wrong client and fails against the right one.
#[test]
fn a_python_command_system_is_explored_on_the_virtual_clock() {
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output();
    assert!(
        python.is_ok_and(|o| o.status.success()),
        "python3 is needed (standard library only) for the command-system exploration"
    );
    let here = std::env::current_dir().unwrap();
    let dir = "runner-tests/explore-python";
    let (code, out, err) = cli(&here, &["run", &format!("{dir}/client.yaml")]);
    assert_eq!(code, 0, "the client's own rows: {out}{err}");
    let (code, out, err) = cli(
        &here,
        &["explore", &format!("{dir}/client.yaml"), "--cases", "16"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ok: 16 cases held every invariant"), "{out}");

    let inv = here.join(dir).join("client.invariants.yaml");
    let ex = Explorer::open(
        &here.join(dir).join("wrong.yaml"),
        "wrong.yaml",
        Some((&inv, "client.invariants.yaml")),
        &Systems::new(),
        ExecOptions::capture(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report = ex.explore(&Options {
        seed: 1,
        cases: 200,
        threads: 2,
        shrink_runs: 300,
        ..Options::default()
    });
    let found = report
        .found
        .unwrap_or_else(|| panic!("no violation in {} cases", report.cases));
    let why = format!("{}\n{}", found.violation.message, found.row);
    assert_eq!(found.violation.invariant, "terminal", "{why}");
    assert!(found.calls <= 4, "{} calls: {why}", found.calls);
    assert!(found.row.contains("expect: the observed run"), "{why}");
    let v = ex.verify(&found.row, &found.row_name);
    assert_eq!(
        v.system,
        Ok(()),
        "the row does not reproduce the wrong client: {why}"
    );
    assert!(v.reference.is_none());
    // Against the right client the row fails: it records the retry of a 4xx.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        here.join(dir).join("client.py"),
        tmp.path().join("client.py"),
    )
    .unwrap();
    let right = std::fs::read_to_string(here.join(dir).join("client.yaml")).unwrap();
    write(
        tmp.path(),
        "m.yaml",
        &faultmatrix::engine::explore::with_row(&right, &found.row, false),
    );
    let (code, out, err) = cli(tmp.path(), &["run", "m.yaml"]);
    assert_eq!(
        code, 1,
        "the row passes against the right client: {out}{err}\n{why}"
    );
}
