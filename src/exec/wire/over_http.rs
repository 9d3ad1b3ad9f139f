//! An in-process system over real HTTP (`faultmatrix run --over-http`):
//! the row's fixture server on 127.0.0.1, the system's calls sent to it by
//! [`HttpTransport`] over real sockets, on the real clock, in this process.
//!
//! The row is judged as a real-clock command's is (the trace from what the
//! server observed, waits within the row's tolerance), but nothing is
//! spawned and nothing is read again: a row costs the same in a file of
//! 100 rows as in one of 2,000. (`faultmatrix client`, the same system as a
//! command, loads the whole file for each row.)

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::client::HttpTransport;
use super::command::{from_first_call, observation, scripts_for, start_row_server, Ended, Ran};
use crate::contracts::system::{EscalationSink, JitterSource, RowContext, System};
use crate::exec::observation::{request_id, Observation};
use crate::exec::trace::Ending;
use crate::model::command::DEFAULT_TIMEOUT;
use crate::model::{Matrix, Row};

/// The path requested below each base URL (as `faultmatrix client`'s default).
pub const PATH: &str = "/v1/chat/completions";

/// Runs one row of `system` over HTTP against the row's fixture server
/// (`routes`: the routes the system declares), on a fresh real-time
/// current-thread runtime; nothing outlives the call. Measured in real
/// time, it runs while no command row of this process does, as a
/// real-clock command row does (`cargo test --test wire` runs the seed
/// matrix over HTTP beside Python and Node client processes).
pub fn run_row(
    matrix: &Matrix,
    row: &Row,
    system: &dyn System,
    routes: Option<&[String]>,
) -> Observation {
    let _alone = super::real_time_alone();
    match crate::exec::runtime::real_time_runtime() {
        Ok(rt) => rt.block_on(run_async(matrix, row, system, routes)),
        Err(e) => Observation::failed(
            request_id(&matrix.file, &row.name),
            format!("cannot start a runtime for the fixture server: {e}"),
        ),
    }
}

async fn run_async(
    matrix: &Matrix,
    row: &Row,
    system: &dyn System,
    routes: Option<&[String]>,
) -> Observation {
    let s = &row.settings;
    let scripts = scripts_for(row, routes);
    let (request_id, server, bases) = match start_row_server(matrix, row, &scripts).await {
        Ok(started) => started,
        Err(failed) => return failed,
    };
    let transport = match HttpTransport::new(&bases, PATH) {
        // The runner owns this client: a `refused` entry refuses the call
        // before it connects, and the server records it.
        Ok(t) => t.with_gate(server.gate()),
        Err(e) => return Observation::failed(request_id, e),
    };
    // What `exec::run::row_context` builds (not called: `exec::run` calls
    // this module), with the real wall clock, as a client process reads it.
    let ctx = RowContext {
        transport: Arc::new(transport),
        request: s.request.clone(),
        request_id: request_id.clone(),
        deadline: s.deadline,
        jitter: JitterSource::new(&s.jitter),
        escalations: EscalationSink::default(),
        wall_start: SystemTime::now(),
        request_body_paths: crate::model::requests::body_paths(&row.expect.requests).into(),
        side_scripts: row
            .inject()
            .iter()
            .filter(|s| s.key().1.is_some())
            .map(|s| s.route.clone())
            .collect::<Vec<_>>()
            .into(),
    };
    let escalations = ctx.escalations.clone();
    // The limit a command system gets by default, capped by the budget.
    let limit = DEFAULT_TIMEOUT.min(s.budget);
    let mut fut = system.run(ctx);
    let ended = tokio::select! {
        biased;
        _ = server.aborted() => Ended::Aborted,
        r = &mut fut => Ended::Returned(r, escalations.events()),
        _ = tokio::time::sleep(limit) => Ended::Stopped(Ending::Hung),
    };
    let returned_at = server.start_instant().elapsed();
    // Dropping the system closes its sockets; let the server see them close
    // (woken as each call ends: polling every 5 ms cost a row about 1 ms of
    // idle wall time on average).
    drop(fut);
    server.all_ended(Duration::from_millis(200)).await;
    let route_order: Vec<&str> = row.inject().iter().map(|r| r.route.as_str()).collect();
    let report = server.finish(&route_order);
    let (calls, returned_at) = from_first_call(&report.calls, returned_at);
    let mut failures = report.failures;
    if matches!(ended, Ended::Stopped(Ending::Hung)) {
        let waiting = calls
            .iter()
            .rev()
            .find(|c| c.ended.is_none())
            .map(|c| {
                format!(
                    " while waiting on {} (scripted: {})",
                    crate::exec::trace::call_label(&c.route, c.attempt),
                    c.entry
                )
            })
            .unwrap_or_default();
        failures.push(format!(
            "the system was still running after {} (the row's budget, at most {}) and was stopped{waiting}: it has no timeout of its own, or waits too long",
            crate::base::duration::format(limit),
            crate::base::duration::format(DEFAULT_TIMEOUT),
        ));
    }
    let ran = Ran {
        ended,
        calls,
        failures,
        records: report.records,
        returned_at,
        stdout: Vec::new(),
        stderr: Vec::new(),
        limit,
        exact: false,
    };
    observation(matrix, row, request_id, ran)
}
