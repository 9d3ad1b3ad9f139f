//! Running one row: a current-thread tokio runtime with paused time (the
//! thread's, reused while rows leave nothing on it: [`crate::exec::runtime`]),
//! the row's scripted transport, the system under test, then the horizon
//! during which any further call is a failure ("never called again").
//!
//! Nothing here sleeps in real time: paused tokio time auto-advances to the
//! next timer whenever the runtime is idle, so waits are exact and instant.

use std::sync::Arc;
use std::time::SystemTime;

use crate::base::env::Env;
use crate::contracts::system::System;
use crate::contracts::system::{EscalationSink, JitterSource, RowContext};
use crate::contracts::transport::Transport;
use crate::exec::scripted::Scripted;
use crate::exec::tape::record::Session;
use crate::exec::tape::{Mode, TapeOutcome};
use crate::exec::trace::{self, Ending};
use crate::model::{Matrix, Row, Settings, SystemUnderTest};

pub use crate::exec::observation::{request_id, Observation, RunEnd};

/// What a row's execution depends on beyond the row: whether tapes are
/// replayed or recorded, and the environment (command systems expand
/// `${VAR}` from it, recordings read upstreams from it).
#[derive(Debug, Clone, Default)]
pub struct ExecOptions {
    /// Replay or record tapes.
    pub mode: Mode,
    /// The environment, captured by the entry point.
    pub env: Arc<Env>,
}

impl ExecOptions {
    /// Options from this environment: recording when `FAULTMATRIX_RECORD`
    /// says so.
    pub fn from_env(env: Env) -> Self {
        Self {
            mode: Mode::from_env(&env),
            env: Arc::new(env),
        }
    }

    /// Options from the process's environment, read now: for a tool or
    /// test that runs a row itself (it is an entry point).
    pub fn capture() -> Self {
        Self::from_env(Env::capture())
    }
}

pub use crate::exec::runtime::{paused_io_runtime, paused_runtime, real_time_runtime};

/// What a row hands its system: the transport, the row's request,
/// deadline and jitter, a fresh escalation sink, and the wall clock's start.
pub fn row_context(
    transport: Arc<dyn Transport>,
    settings: &Settings,
    request_id: String,
    wall_start: SystemTime,
) -> RowContext {
    RowContext {
        transport,
        request: settings.request.clone(),
        request_id,
        deadline: settings.deadline,
        jitter: JitterSource::new(&settings.jitter),
        escalations: EscalationSink::default(),
        wall_start,
        request_body_paths: no_body_paths(),
        side_scripts: no_side_scripts(),
    }
}

/// One shared empty list each: most rows have neither, and an `Arc<[T]>`
/// is an allocation even when empty.
fn no_body_paths() -> Arc<[crate::base::json_path::JsonPath]> {
    static EMPTY: std::sync::OnceLock<Arc<[crate::base::json_path::JsonPath]>> =
        std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::from(Vec::new())).clone()
}

fn no_side_scripts() -> Arc<[String]> {
    static EMPTY: std::sync::OnceLock<Arc<[String]>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::from(Vec::new())).clone()
}

/// Runs a row of a matrix with the process's environment ([`ExecOptions::capture`]).
pub fn run_row(matrix: &Matrix, row: &Row) -> Observation {
    run_row_with(matrix, row, &ExecOptions::capture())
}

/// Runs a row of a matrix, replaying or recording its tape as `opts` says.
pub fn run_row_with(matrix: &Matrix, row: &Row, opts: &ExecOptions) -> Observation {
    let system = match &matrix.system {
        SystemUnderTest::Command(spec) => {
            // A command system runs over HTTP, on its virtual or real clock.
            return crate::exec::wire::run_row(matrix, row, spec, &opts.env);
        }
        #[cfg(not(feature = "record"))]
        SystemUnderTest::OverHttp { .. } => {
            // Its client (hyper with rustls) is the `record` feature's.
            return Observation::failed(
                request_id(&matrix.file, &row.name),
                "running a system over HTTP needs faultmatrix built with the `record` feature (the CLI has it)".into(),
            );
        }
        #[cfg(feature = "record")]
        SystemUnderTest::OverHttp { system, routes, .. } => {
            // The row's own policy, else the file's, over real HTTP.
            let system = row
                .settings
                .system
                .as_ref()
                .map_or_else(|| system.clone(), |s| s.system.clone());
            return crate::exec::wire::over_http::run_row(
                matrix,
                row,
                system.as_ref(),
                routes.as_deref(),
            );
        }
        SystemUnderTest::InProcess { system, .. } => row
            .settings
            .system
            .as_ref()
            .map_or_else(|| system.clone(), |s| s.system.clone()),
    };
    if system.needs_io() {
        // The seam's listeners and connections end with the row; the
        // runtime is reused only when nothing else is left on it.
        return crate::exec::runtime::block_on_paused_io(run_row_async(
            matrix,
            row,
            system.as_ref(),
            opts,
        ));
    }
    crate::exec::runtime::block_on_paused(run_row_async(matrix, row, system.as_ref(), opts))
}

async fn run_row_async(
    matrix: &Matrix,
    row: &Row,
    system: &dyn System,
    opts: &ExecOptions,
) -> Observation {
    let s = &row.settings;
    let request_id = request_id(&matrix.file, &row.name);
    let (transport, system_transport, session): (Scripted, Arc<dyn Transport>, _) = match row.tape()
    {
        None => {
            let t = Scripted::new(row.inject(), s.max_calls).with_wall(
                s.wall
                    .unwrap_or_else(crate::load::policy::retry_after::default_wall_start),
            );
            (t.clone(), Arc::new(t), None)
        }
        Some(tape) => match Session::open(tape, &opts.mode, &opts.env, s.max_calls) {
            Ok((t, system, session)) => (t, system, Some(session)),
            Err(message) => {
                let mut obs = Observation::failed(request_id, message.clone());
                obs.tape = Some(TapeOutcome::Unavailable(message));
                return obs;
            }
        },
    };
    let abort = transport.abort_signal();
    let mut ctx = row_context(
        system_transport,
        s,
        request_id.clone(),
        s.wall
            .unwrap_or_else(crate::load::policy::retry_after::default_wall_start),
    );
    let paths = crate::model::requests::body_paths(&row.expect.requests);
    if !paths.is_empty() {
        ctx.request_body_paths = paths.into();
    }
    let sides: Vec<String> = row
        .inject()
        .iter()
        .filter(|s| s.key().1.is_some())
        .map(|s| s.route.clone())
        .collect();
    if !sides.is_empty() {
        ctx.side_scripts = sides.into();
    }
    let jitter = ctx.jitter.clone();
    let escalations = ctx.escalations.clone();
    let mut fut = system.run(ctx);
    let end = tokio::select! {
        biased;
        _ = abort.notified() => RunEnd::Aborted,
        r = &mut fut => RunEnd::Returned(r),
        _ = tokio::time::sleep(s.budget) => RunEnd::Hung,
    };
    // What the system was waiting on, before dropping it marks calls abandoned.
    let in_flight = transport.in_flight();
    drop(fut);
    let returned_at = transport.elapsed();
    // Keep the clock running: any later call is a failure. Once the
    // system's future is dropped only a task it spawned can call; with none
    // alive the horizon could see nothing, and waiting for it was a timer
    // tokio's wheel cascades down four levels (an hour): about 7,800
    // instructions of a row's 84,000. (A `spawn_blocking` closure is not a
    // task here; its call at the instant the system returned was never
    // seen as late, horizon or not.)
    if !matches!(end, RunEnd::Aborted)
        && tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
            > 0
    {
        tokio::select! {
            biased;
            _ = abort.notified() => {}
            _ = tokio::time::sleep(s.horizon) => {}
        }
    }
    if let Some(n) = jitter.overrun() {
        transport.fail(format!(
            "the row scripted {n} jitter draw{} but the system asked for more",
            if n == 1 { "" } else { "s" }
        ));
    }
    let route_order: Vec<&str> = row.inject().iter().map(|r| r.route.as_str()).collect();
    let (report, tape) = match &session {
        Some(session) => {
            let (report, outcome) = session.finish();
            (report, Some(outcome))
        }
        None => (transport.finish(&route_order), None),
    };
    let mut failures = report.failures;
    if matches!(end, RunEnd::Hung) {
        let waiting = in_flight
            .last()
            .map(|w| format!(" while waiting on {w}"))
            .unwrap_or_default();
        failures.push(format!(
            "the system was still running after the row's budget of {}{waiting}: it has no timeout of its own, or waits too long",
            crate::base::duration::format(s.budget)
        ));
    }
    let late: Vec<String> = report
        .calls
        .iter()
        .filter(|c| c.started > returned_at)
        .map(|c| {
            format!(
                "{} at {}",
                trace::call_label(&c.route, c.attempt),
                crate::base::duration::format(c.started)
            )
        })
        .collect();
    if !late.is_empty() && !matches!(end, RunEnd::Aborted) {
        failures.push(format!(
            "called again after the system returned at {}: {} (expected: never called again)",
            crate::base::duration::format(returned_at),
            late.join(", ")
        ));
    }
    let ending = match &end {
        RunEnd::Returned(Ok(_)) => Ending::Success,
        RunEnd::Returned(Err(_)) => Ending::Failure,
        RunEnd::Hung => Ending::Hung,
        RunEnd::Aborted => Ending::Aborted,
    };
    let body_paths = matrix.body_paths();
    let lines = trace::observe(
        &report.calls,
        Some(returned_at),
        ending,
        &matrix.registry,
        body_paths,
    );
    Observation {
        calls: report.calls,
        lines,
        end,
        returned_at,
        escalations: escalations.events(),
        records: report.records,
        failures,
        request_id,
        tape,
        command: None,
    }
}
