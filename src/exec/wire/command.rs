//! Command systems: the system under test is a program in any language,
//! pointed at the row's fixture server.
//!
//! ```yaml
//! system:
//!   command: [python3, client.py]     # program and arguments; ${VAR} and ${VAR:-default} expand
//!   env: { OPENAI_API_KEY: test }     # added to the inherited environment
//!   cwd: clients                      # relative to the matrix file (default: the file's directory)
//!   timeout: 10s                      # the command is killed after this (default 30s, capped by the row's budget)
//! ```
//!
//! For each row the runner starts the row's listeners, runs the command with
//! `FAULTMATRIX_URL_<ROUTE>` (route name upper-cased, non-alphanumerics as
//! `_`) set to each route's base URL, `FAULTMATRIX_ROUTES` (`A=http://…,B=…`),
//! `FAULTMATRIX_REQUEST_ID`, `FAULTMATRIX_ROW`, `FAULTMATRIX_FILE` (absolute
//! path of the matrix), and `FAULTMATRIX_DEADLINE_MS` when the row sets a
//! deadline. It collects the exit status and, if the command prints one, a
//! JSON result as the last line of stdout:
//!
//! ```json
//! {"outcome": "error", "stop": "exhausted", "code": "GATEWAY_TIMEOUT",
//!  "request_id": "req-1", "attempts": ["A1 GATEWAY_TIMEOUT"],
//!  "escalations": [{"code": "GATEWAY_TIMEOUT", "to": "platform-oncall"}],
//!  "output": "…", "route": "B"}
//! ```
//!
//! Without a JSON line, exit status 0 is `success` and anything else is stop
//! `failed`. The trace is built from what the server observed, never from
//! what the command says.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::AsyncReadExt;

use super::server::{FixtureServer, ServerOptions, WireCall};
use crate::base::duration::round_ms;
use crate::base::env::Env;
use crate::contracts::system::{AttemptNote, Escalation, FinalError, Success};
use crate::contracts::transport::Request;
use crate::exec::observation::{Observation, RunEnd};
use crate::exec::scripted::CallRecord;
use crate::exec::trace::{self, Ending};
pub use crate::model::command::CommandSpec;
use crate::model::{Matrix, RouteScript, Row};

/// Expands `${VAR}` and `${VAR:-default}` from the environment; other
/// `${...}` forms (a shell's `${X##*:}`) are left as written.
pub fn expand(text: &str, env: &Env) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`{text}`: `${{` without a closing `}}`"))?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let is_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name {
            // Not ours (for example a shell's `${X##*:}`): left as written.
            out.push_str("${");
            out.push_str(inner);
            out.push('}');
            rest = &after[end + 1..];
            continue;
        }
        match (env.non_empty(name), default) {
            (Some(v), _) => out.push_str(v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "`{text}` uses ${{{name}}}, which is not set in the environment"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The environment variable holding a route's base URL.
pub fn url_var(route: &str) -> String {
    crate::base::label::route_var("FAULTMATRIX_URL_", route)
}

/// The JSON result a command may print as the last line of stdout.
#[derive(Debug, Default, Deserialize)]
struct JsonResult {
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    stop: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default)]
    attempts: Vec<String>,
    #[serde(default)]
    escalations: Vec<JsonEscalation>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    route: Option<String>,
}

#[derive(Debug, Deserialize)]
struct JsonEscalation {
    code: String,
    #[serde(default)]
    to: Option<String>,
}

fn attempt_note(text: &str) -> Option<AttemptNote> {
    let mut parts = text.split_whitespace();
    let label = parts.next()?;
    let code = parts.next().unwrap_or("").to_string();
    let (route, num) = match label.split_once('#') {
        Some((r, n)) => (r, n),
        None => {
            let d = label.len() - label.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            label.split_at(label.len() - d)
        }
    };
    Some(AttemptNote {
        route: route.to_string(),
        attempt: num.parse().ok()?,
        code,
    })
}

/// Keeps the last `n` bytes of a stream, and when a chunk holding `{` (a
/// JSON result, presumably) last arrived.
async fn tail<R: tokio::io::AsyncRead + Unpin>(
    mut r: R,
    n: usize,
) -> (Vec<u8>, Option<std::time::Instant>) {
    let mut keep = Vec::new();
    let mut json_at = None;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return (keep, json_at),
            Ok(k) => {
                if buf[..k].contains(&b'{') {
                    json_at = Some(std::time::Instant::now());
                }
                keep.extend_from_slice(&buf[..k]);
                if keep.len() > 2 * n {
                    keep.drain(..keep.len() - n);
                }
            }
        }
    }
}

fn last_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Converts server observations into call records (times to the ms).
pub fn records(calls: &[WireCall]) -> Vec<CallRecord> {
    records_with(calls, round_ms)
}

/// Converts server observations into call records, times through `time`
/// (to the ms on the real clock, exact on the virtual one).
pub fn records_with(calls: &[WireCall], time: fn(Duration) -> Duration) -> Vec<CallRecord> {
    calls
        .iter()
        .map(|c| {
            let mut headers = c.headers.clone();
            headers.extend(c.body_seen.iter().cloned());
            headers.push((":method".into(), c.method.clone()));
            headers.push((":path".into(), c.path.clone()));
            let request_id = c
                .header("x-request-id")
                .or_else(|| c.header("x-client-request-id"))
                .map(str::to_string);
            let idempotency_key = c
                .header("idempotency-key")
                .or_else(|| c.header("x-idempotency-key"))
                .map(str::to_string);
            CallRecord {
                route: c.route.clone(),
                attempt: c.attempt,
                started: time(c.started),
                ended: c.ended.map(time),
                outcome: c.outcome.clone(),
                body: c.answer_body.clone(),
                request: Request {
                    route: c.route.clone(),
                    request_id,
                    model: c.model.clone(),
                    stream: c.stream,
                    create: c.method == "POST",
                    idempotency_key,
                    size: c.body_size,
                    routing: None,
                    headers: crate::contracts::transport::owned_names(headers),
                },
                entry: c.entry.clone(),
            }
        })
        .collect()
}

/// Runs one row over the wire against a command on the real clock, on a
/// fresh current-thread runtime; nothing outlives the call. (The virtual
/// clock is [`super::vclock`]; [`super::run_row`] picks.)
pub fn run_row(matrix: &Matrix, row: &Row, spec: &CommandSpec, env: &Env) -> Observation {
    let rt = match crate::exec::runtime::real_time_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            return Observation::failed(
                crate::exec::observation::request_id(&matrix.file, &row.name),
                format!("cannot start a runtime for the fixture server: {e}"),
            )
        }
    };
    rt.block_on(run_async(matrix, row, spec, env))
}

/// How the command's run ended.
pub(super) enum Ended {
    Exited(std::process::ExitStatus),
    /// Killed at the real-time limit (the message is built from the calls).
    Hung,
    /// Stopped by the runner, which already said why (a virtual limit, a
    /// client blocked in real time): the trace ends `hung` or `aborted`.
    Stopped(Ending),
    Aborted,
    WaitFailed(String),
    /// An in-process system returned this, with these escalations
    /// (`super::over_http`, with the `record` feature): no JSON line to read.
    #[cfg_attr(not(feature = "record"), allow(dead_code))]
    Returned(crate::contracts::system::SystemResult, Vec<Escalation>),
}

/// How the command ended, in words (for [`super::said`]).
fn ended_text(ended: &Ended, limit: Duration) -> String {
    match ended {
        Ended::Exited(status) => status.to_string(),
        Ended::Hung => format!(
            "killed after {} (the row's budget)",
            crate::base::duration::format(limit)
        ),
        Ended::Stopped(_) => "stopped by the runner".to_string(),
        Ended::Aborted => "killed: the fixture server aborted the row".to_string(),
        Ended::WaitFailed(e) => format!("waiting for it failed: {e}"),
        Ended::Returned(..) => "returned in process (over HTTP)".to_string(),
    }
}

/// The row's routes, in the order its listeners are started: the declared
/// route order (the fallback order a client reads from
/// `FAULTMATRIX_ROUTES`), then any other scripted route; a declared route
/// the row does not script still listens, so a call to it is observed (and
/// fails the row) instead of being refused.
pub(super) fn row_scripts(row: &Row, spec: &CommandSpec) -> Vec<RouteScript> {
    scripts_for(row, spec.routes.as_deref())
}

/// The row's scripts for these declared routes (see [`row_scripts`]).
pub(super) fn scripts_for(row: &Row, declared: Option<&[String]>) -> Vec<RouteScript> {
    let mut scripts: Vec<RouteScript> = Vec::new();
    for r in declared.into_iter().flatten() {
        let has_side = row
            .inject()
            .iter()
            .any(|x| matches!(x.key(), (route, Some(_)) if route == r));
        if has_side && !row.inject().iter().any(|x| &x.route == r) {
            // Only keyed scripts: a call matching none gets a near-miss
            // report, not an empty main script's "0 answers".
            continue;
        }
        let entries = row
            .inject()
            .iter()
            .find(|x| &x.route == r)
            .map(|x| x.entries.clone())
            .unwrap_or_default();
        scripts.push(RouteScript {
            route: r.clone(),
            entries,
        });
    }
    for x in row.inject() {
        if !scripts.iter().any(|s| s.route == x.route) {
            scripts.push(x.clone());
        }
    }
    scripts
}

/// The program and its arguments, expanded.
pub(super) fn expand_argv(spec: &CommandSpec, env: &Env) -> Result<Vec<String>, String> {
    spec.argv
        .iter()
        .map(|a| expand(a, env))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("system.command: {e}"))
}

/// The row's variables for the command (`routes`: each route's name and
/// base URL), then the system's own `env` and the row's `env`, expanded.
pub(super) fn row_vars(
    matrix: &Matrix,
    row: &Row,
    spec: &CommandSpec,
    env: &Env,
    routes: &[(String, String)],
    request_id: &str,
) -> Result<Vec<(String, String)>, String> {
    let mut vars = Vec::new();
    let mut routes_var = Vec::new();
    for (route, url) in routes {
        vars.push((url_var(route), url.clone()));
        routes_var.push(format!("{route}={url}"));
    }
    vars.push(("FAULTMATRIX_ROUTES".into(), routes_var.join(",")));
    vars.push(("FAULTMATRIX_REQUEST_ID".into(), request_id.to_string()));
    vars.push(("FAULTMATRIX_ROW".into(), row.name.clone()));
    let file = std::fs::canonicalize(&matrix.file).unwrap_or_else(|_| PathBuf::from(&matrix.file));
    vars.push(("FAULTMATRIX_FILE".into(), file.display().to_string()));
    if let Some(d) = row.settings.deadline {
        vars.push(("FAULTMATRIX_DEADLINE_MS".into(), d.as_millis().to_string()));
    }
    vars.extend(system_env(spec, env)?);
    // The row's own environment, over the file's.
    for (k, v) in &row.settings.env {
        let v = expand(v, env).map_err(|e| format!("env.{k}: {e}"))?;
        vars.push((k.clone(), v));
    }
    Ok(vars)
}

/// The system's own `env`, expanded.
pub(super) fn system_env(spec: &CommandSpec, env: &Env) -> Result<Vec<(String, String)>, String> {
    spec.env
        .iter()
        .map(|(k, v)| {
            expand(v, env)
                .map(|v| (k.clone(), v))
                .map_err(|e| format!("system.env.{k}: {e}"))
        })
        .collect()
}

/// The command with its arguments, working directory and the row's
/// variables (`routes`: each route's name and base URL). Standard streams
/// are the caller's.
pub(super) fn base_command(
    matrix: &Matrix,
    row: &Row,
    spec: &CommandSpec,
    env: &Env,
    routes: &[(String, String)],
    request_id: &str,
) -> Result<(tokio::process::Command, Vec<String>), String> {
    let argv = expand_argv(spec, env)?;
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    // Its own process group, so a hung command's children are killed too.
    #[cfg(unix)]
    cmd.process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in row_vars(matrix, row, spec, env, routes, request_id)? {
        cmd.env(k, v);
    }
    Ok((cmd, argv))
}

/// Why a command could not start.
pub(super) fn spawn_error(argv: &[String], spec: &CommandSpec, e: &std::io::Error) -> String {
    format!(
        "cannot start the command `{}`{}: {e}",
        argv.join(" "),
        spec.cwd
            .as_ref()
            .map(|c| format!(" in {}", c.display()))
            .unwrap_or_default()
    )
}

/// Kills the command's whole process group (`sh -c` wrappers and their
/// children).
pub(super) fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// A row's fixture server, started for a system that runs over the wire
/// (a command here, the in-process reference system in
/// [`super::over_http`]): the row's request id, the server, and each
/// route's base URL. A row with a tape, or a server that cannot bind,
/// gives the failed observation instead.
pub(super) async fn start_row_server(
    matrix: &Matrix,
    row: &Row,
    scripts: &[RouteScript],
) -> Result<(String, FixtureServer, Vec<(String, String)>), Observation> {
    let s = &row.settings;
    let request_id = crate::exec::observation::request_id(&matrix.file, &row.name);
    if row.tape().is_some() {
        return Err(Observation::failed(
            request_id,
            "a row with a tape cannot run over the wire: tapes replay in process only".into(),
        ));
    }
    let options = ServerOptions {
        max_calls: s.max_calls,
        log: false,
        create: s.request.create,
        body_paths: crate::model::requests::body_paths(&row.expect.requests),
    };
    let server = match FixtureServer::start_with(scripts, options).await {
        Ok(sv) => sv,
        Err(e) => {
            return Err(Observation::failed(
                request_id,
                format!("cannot bind the fixture server on 127.0.0.1: {e}"),
            ))
        }
    };
    let routes = server
        .listeners()
        .iter()
        .map(|l| (l.route.clone(), l.url()))
        .collect();
    Ok((request_id, server, routes))
}

async fn run_async(matrix: &Matrix, row: &Row, spec: &CommandSpec, env: &Env) -> Observation {
    let s = &row.settings;
    let scripts = row_scripts(row, spec);
    let (request_id, server, routes) = match start_row_server(matrix, row, &scripts).await {
        Ok(started) => started,
        Err(failed) => return failed,
    };
    let (mut cmd, argv) = match base_command(matrix, row, spec, env, &routes, &request_id) {
        Ok(c) => c,
        Err(e) => return Observation::failed(request_id, e),
    };
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Observation::failed(request_id, spawn_error(&argv, spec, &e)),
    };
    let out = tokio::spawn(tail(child.stdout.take().expect("piped"), 64 * 1024));
    let err = tokio::spawn(tail(child.stderr.take().expect("piped"), 16 * 1024));
    let limit = spec.timeout.min(s.budget);
    let ended = tokio::select! {
        biased;
        _ = server.aborted() => Ended::Aborted,
        r = child.wait() => match r {
            Ok(st) => Ended::Exited(st),
            Err(e) => Ended::WaitFailed(e.to_string()),
        },
        _ = tokio::time::sleep(limit) => Ended::Hung,
    };
    let returned_at = server.start_instant().elapsed();
    if !matches!(ended, Ended::Exited(_)) {
        kill_group(child.id());
        let _ = child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    }
    // Let the server see the client's sockets close.
    server.all_ended(Duration::from_millis(200)).await;
    let (stdout, json_at) = tokio::time::timeout(Duration::from_secs(2), out)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let (stderr, _) = tokio::time::timeout(Duration::from_secs(2), err)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let route_order: Vec<&str> = row.inject().iter().map(|r| r.route.as_str()).collect();
    let report = server.finish(&route_order);
    // The system "returned" when it printed its result (else when it exited).
    let returned_at = match (&ended, json_at) {
        (Ended::Exited(_), Some(t)) => t.saturating_duration_since(server.start_instant()),
        _ => returned_at,
    };
    let (calls, returned_at) = from_first_call(&report.calls, returned_at);
    let ran = Ran {
        ended,
        calls,
        failures: report.failures,
        records: report.records,
        returned_at,
        stdout,
        stderr,
        limit,
        exact: false,
    };
    observation(matrix, row, request_id, ran)
}

/// The calls as records, and when the system returned, with times counted
/// from the first request (rounded to the ms): process start-up is not the
/// system's behaviour.
pub(super) fn from_first_call(
    calls: &[WireCall],
    returned_at: Duration,
) -> (Vec<CallRecord>, Duration) {
    let t0 = round_ms(calls.first().map_or(Duration::ZERO, |c| c.started));
    let mut records = records(calls);
    for c in &mut records {
        c.started = c.started.saturating_sub(t0);
        c.ended = c.ended.map(|e| e.saturating_sub(t0));
    }
    (records, returned_at.saturating_sub(t0))
}

/// What a command's run left, for [`observation`].
pub(super) struct Ran {
    pub ended: Ended,
    pub calls: Vec<CallRecord>,
    pub failures: Vec<String>,
    pub records: u32,
    /// When the system returned (its JSON result, else its exit).
    pub returned_at: Duration,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The real-time limit (for the message of [`Ended::Hung`]).
    pub limit: Duration,
    /// Times are exact (the virtual clock), not measured to the ms.
    pub exact: bool,
}

/// The row's observation from what the command did and printed.
pub(super) fn observation(matrix: &Matrix, row: &Row, request_id: String, ran: Ran) -> Observation {
    let Ran {
        ended,
        calls,
        mut failures,
        records: created,
        returned_at,
        stdout,
        stderr,
        limit,
        exact,
    } = ran;
    // Side calls (served from keyed scripts) are not attempts: they neither
    // number nor drive the trace's decisions.
    let calls: Vec<CallRecord> = calls
        .into_iter()
        .filter(|c| crate::model::split_key(&c.route).1.is_none())
        .collect();
    let time = if exact { |d| d } else { round_ms };
    let text = String::from_utf8_lossy(&stdout);
    let json_line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'));
    let said = super::said::output(ended_text(&ended, limit), &stdout, &stderr, json_line);
    let result: Option<JsonResult> = json_line.and_then(|l| serde_json::from_str(l).ok());
    if json_line.is_some() && result.is_none() {
        failures.push(format!(
            "the command's last JSON line is not a result object: {}",
            json_line
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect::<String>()
        ));
    }
    let mut escalations = Vec::new();
    let end = match &ended {
        Ended::Aborted => RunEnd::Aborted,
        Ended::Stopped(e) => match e {
            Ending::Hung => RunEnd::Hung,
            _ => RunEnd::Aborted,
        },
        Ended::Hung => {
            let waiting = calls
                .iter()
                .rev()
                .find(|c| c.ended.is_none())
                .map(|c| {
                    format!(
                        " while waiting on {} (scripted: {})",
                        trace::call_label(&c.route, c.attempt),
                        c.entry
                    )
                })
                .unwrap_or_default();
            failures.push(format!(
                "the command was still running after {} (the row's budget) and was killed{waiting}: it has no timeout of its own, or waits too long",
                crate::base::duration::format(limit)
            ));
            RunEnd::Hung
        }
        Ended::WaitFailed(e) => {
            failures.push(format!("waiting for the command failed: {e}"));
            RunEnd::Aborted
        }
        Ended::Returned(result, reported) => {
            escalations = reported.clone();
            RunEnd::Returned(result.clone())
        }
        Ended::Exited(status) => {
            let r = result.unwrap_or_default();
            escalations = r
                .escalations
                .iter()
                .map(|e| Escalation {
                    code: e.code.clone(),
                    to: e.to.clone(),
                })
                .collect();
            let success = match r.outcome.as_deref() {
                Some("success") => true,
                Some(_) => false,
                None => status.success(),
            };
            if json_line.is_none()
                && !status.success()
                && row.expect.stop.as_deref() != Some("failed")
            {
                failures.push(format!(
                    "the command exited with {status} and printed no JSON result; stderr ends with:\n{}",
                    last_lines(&stderr, 12)
                ));
            }
            if success {
                RunEnd::Returned(Ok(Success {
                    route: r.route,
                    output: r.output,
                }))
            } else {
                let mut e = FinalError {
                    stop: r.stop.unwrap_or_else(|| "failed".into()),
                    code: r.code,
                    request_id: r.request_id,
                    attempts: Vec::new(),
                    omitted: 0,
                    output: r.output.map(String::into_boxed_str),
                };
                for a in &r.attempts {
                    if let Some(n) = attempt_note(a) {
                        e.push_attempt(n);
                    }
                }
                RunEnd::Returned(Err(e))
            }
        }
    };
    let ending = match &end {
        RunEnd::Returned(Ok(_)) => Ending::Success,
        RunEnd::Returned(Err(_)) => Ending::Failure,
        RunEnd::Hung => Ending::Hung,
        RunEnd::Aborted => Ending::Aborted,
    };
    let lines = trace::observe(
        &calls,
        Some(time(returned_at)),
        ending,
        &matrix.registry,
        matrix.body_paths(),
    );
    Observation {
        calls,
        lines,
        end,
        returned_at: time(returned_at),
        escalations,
        records: created,
        failures,
        request_id,
        tape: None,
        command: Some(said),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_variables() {
        let env = Env::from_pairs([("FM_TEST_EXPAND", "py")]);
        assert_eq!(expand("${FM_TEST_EXPAND}3", &env).unwrap(), "py3");
        assert_eq!(
            expand("${FM_TEST_UNSET_X:-python3}", &env).unwrap(),
            "python3"
        );
        assert!(expand("${FM_TEST_UNSET_X}", &env)
            .unwrap_err()
            .contains("not set"));
        assert!(expand("${oops", &env).is_err());
        assert_eq!(expand("${X##*:}", &env).unwrap(), "${X##*:}");
        assert_eq!(url_var("openai-primary"), "FAULTMATRIX_URL_OPENAI_PRIMARY");
    }

    #[test]
    fn parses_attempt_notes() {
        let n = attempt_note("gpt4#2 RATE_LIMITED").unwrap();
        assert_eq!(
            (n.route.as_str(), n.attempt, n.code.as_str()),
            ("gpt4", 2, "RATE_LIMITED")
        );
        let n = attempt_note("A1 TIMEOUT").unwrap();
        assert_eq!((n.route.as_str(), n.attempt), ("A", 1));
    }
}
