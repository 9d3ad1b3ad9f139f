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
    calls
        .iter()
        .map(|c| {
            let mut headers = c.headers.clone();
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
                started: round_ms(c.started),
                ended: c.ended.map(round_ms),
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
                    headers,
                },
                entry: c.entry.clone(),
            }
        })
        .collect()
}

/// Runs one row over the wire against a command. Real time, on a fresh
/// current-thread runtime; nothing outlives the call.
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

enum Ended {
    Exited(std::process::ExitStatus),
    Hung,
    Aborted,
    WaitFailed(String),
}

async fn run_async(matrix: &Matrix, row: &Row, spec: &CommandSpec, env: &Env) -> Observation {
    let s = &row.settings;
    let request_id = crate::exec::observation::request_id(&matrix.file, &row.name);
    if row.tape().is_some() {
        return Observation::failed(
            request_id,
            "a row with a tape cannot run over the wire: tapes replay in process only".into(),
        );
    }
    // Listeners in the declared route order (the fallback order a client
    // reads from FAULTMATRIX_ROUTES), then any other scripted route; a
    // declared route the row does not script still listens, so a call to
    // it is observed (and fails the row) instead of being refused.
    let mut scripts: Vec<RouteScript> = Vec::new();
    for r in spec.routes.iter().flatten() {
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
    let options = ServerOptions {
        max_calls: s.max_calls,
        log: false,
        create: s.request.create,
    };
    let server = match FixtureServer::start_with(&scripts, options).await {
        Ok(sv) => sv,
        Err(e) => {
            return Observation::failed(
                request_id,
                format!("cannot bind the fixture server on 127.0.0.1: {e}"),
            )
        }
    };
    let argv: Result<Vec<String>, String> = spec.argv.iter().map(|a| expand(a, env)).collect();
    let argv = match argv {
        Ok(a) => a,
        Err(e) => return Observation::failed(request_id, format!("system.command: {e}")),
    };
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so a hung command's children are killed too.
    #[cfg(unix)]
    cmd.process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let mut routes_var = Vec::new();
    for l in server.listeners() {
        cmd.env(url_var(&l.route), l.url());
        routes_var.push(format!("{}={}", l.route, l.url()));
    }
    cmd.env("FAULTMATRIX_ROUTES", routes_var.join(","));
    cmd.env("FAULTMATRIX_REQUEST_ID", &request_id);
    cmd.env("FAULTMATRIX_ROW", &row.name);
    let file = std::fs::canonicalize(&matrix.file).unwrap_or_else(|_| PathBuf::from(&matrix.file));
    cmd.env("FAULTMATRIX_FILE", file);
    if let Some(d) = s.deadline {
        cmd.env("FAULTMATRIX_DEADLINE_MS", d.as_millis().to_string());
    }
    for (k, v) in &spec.env {
        match expand(v, env) {
            Ok(v) => {
                cmd.env(k, v);
            }
            Err(e) => return Observation::failed(request_id, format!("system.env.{k}: {e}")),
        }
    }
    // The row's own environment, over the file's.
    for (k, v) in &row.settings.env {
        match expand(v, env) {
            Ok(v) => {
                cmd.env(k, v);
            }
            Err(e) => return Observation::failed(request_id, format!("env.{k}: {e}")),
        }
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Observation::failed(
                request_id,
                format!(
                    "cannot start the command `{}`{}: {e}",
                    argv.join(" "),
                    spec.cwd
                        .as_ref()
                        .map(|c| format!(" in {}", c.display()))
                        .unwrap_or_default()
                ),
            )
        }
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
        #[cfg(unix)]
        if let Some(pid) = child.id() {
            // The whole group: `sh -c` wrappers and their children.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    }
    // Let the server see the client's sockets close.
    for _ in 0..40 {
        if server.calls().iter().all(|c| c.ended.is_some()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
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
    let route_order: Vec<String> = row.inject().iter().map(|r| r.route.clone()).collect();
    let report = server.finish(&route_order);
    let mut failures = report.failures;
    let created = report.records;
    // The system "returned" when it printed its result (else when it exited).
    let returned_at = match (&ended, json_at) {
        (Ended::Exited(_), Some(t)) => t.saturating_duration_since(server.start_instant()),
        _ => returned_at,
    };
    // Times count from the first request: process start-up is not the
    // system's behaviour.
    let t0 = report.calls.first().map_or(Duration::ZERO, |c| c.started);
    let mut calls = records(&report.calls);
    let t0 = round_ms(t0);
    for c in &mut calls {
        c.started = c.started.saturating_sub(t0);
        c.ended = c.ended.map(|e| e.saturating_sub(t0));
    }
    let returned_at = returned_at.saturating_sub(t0);
    let text = String::from_utf8_lossy(&stdout);
    let json_line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'));
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
        Some(round_ms(returned_at)),
        ending,
        &matrix.registry,
        matrix.body_paths(),
    );
    Observation {
        calls,
        lines,
        end,
        returned_at: round_ms(returned_at),
        escalations,
        records: created,
        failures,
        request_id,
        tape: None,
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
