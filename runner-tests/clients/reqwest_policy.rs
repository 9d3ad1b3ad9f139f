//! A Rust service's retry/fallback client, written as a team would write it
//! with reqwest and a base URL per upstream. Nothing in it knows about
//! faultmatrix. It runs two ways:
//!
//! - in-process on the virtual clock (`cargo test --test clients`,
//!   `runner-tests/clients/reqwest/*.yaml`): the harness hands it a base URL
//!   per route served by faultmatrix's HTTP seam;
//! - as a command over the wire (`runner-tests/clients/reqwest_client.rs`,
//!   `runner-tests/wire/reqwest/*.yaml`): base URLs from the environment.
//!
//! The documented policy (what the matrices specify):
//!
//! - upstreams in the order given;
//! - at most [`MAX_ATTEMPTS`] calls per upstream, the first included;
//! - retried: 429, every 5xx, timeouts ([`ATTEMPT_TIMEOUT`] per call) and
//!   connection errors; any other status fails at once, with no fallback;
//! - the wait before a retry is the server's guidance when it sends one
//!   (`retry-after-ms`, else `Retry-After` in seconds), capped at
//!   [`GUIDANCE_CAP`]; otherwise `BACKOFF * 2^n` (200ms, 400ms), no jitter;
//! - an upstream whose attempts are spent hands over to the next at once;
//! - every call carries `x-request-id`, the same `idempotency-key`, and
//!   `x-retry-count` (calls made before this one).
//!
//! `wrong` makes it deliberately wrong, to show the diffs a broken client
//! gets: `extra-retry` (one attempt too many), `ignore-retry-after`,
//! `short-wait` (half the backoff), `uncapped` (guidance honoured past
//! the 2s cap: a wait far too long).

use std::time::Duration;

/// Calls per upstream, the first included.
const MAX_ATTEMPTS: u32 = 3;
/// First backoff step.
const BACKOFF: Duration = Duration::from_millis(200);
/// Longest server guidance honoured.
const GUIDANCE_CAP: Duration = Duration::from_secs(2);
/// Per-call timeout.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(500);

enum Attempt {
    Ok,
    Retryable(String, Option<Duration>),
    Fatal(String),
}

fn guidance(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms > 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    get("retry-after")
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_secs)
}

async fn attempt(
    client: &reqwest::Client,
    base: &str,
    request_id: &str,
    retry_count: u32,
) -> Attempt {
    let body =
        r#"{"model":"gpt-4o-mini","stream":false,"messages":[{"role":"user","content":"ping"}]}"#;
    let sent = client
        .post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .header("x-request-id", request_id)
        .header("idempotency-key", format!("idem-{request_id}"))
        .header("x-retry-count", retry_count.to_string())
        .body(body)
        .send()
        .await;
    let resp = match sent {
        Ok(r) => r,
        Err(e) if e.is_timeout() => return Attempt::Retryable("TIMEOUT".into(), None),
        Err(_) => return Attempt::Retryable("CONNECTION".into(), None),
    };
    let status = resp.status().as_u16();
    let wait = guidance(resp.headers());
    match resp.text().await {
        Err(e) if e.is_timeout() => Attempt::Retryable("TIMEOUT".into(), None),
        Err(_) => Attempt::Retryable("CONNECTION".into(), None),
        Ok(_) if (200..300).contains(&status) => Attempt::Ok,
        Ok(_) if status == 429 || status >= 500 => {
            Attempt::Retryable(format!("HTTP_{status}"), wait)
        }
        Ok(_) => Attempt::Fatal(format!("HTTP_{status}")),
    }
}

/// How a failed run ended, as the client reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    /// `terminal-status` or `exhausted`.
    pub stop: &'static str,
    /// `HTTP_503`, or `None` when the last failure was not an HTTP status.
    pub code: Option<String>,
    /// Attempts as `A1 HTTP_503`.
    pub attempts: Vec<String>,
}

/// A client with the per-call timeout.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(ATTEMPT_TIMEOUT)
        .build()
        .expect("a plain-HTTP client builds")
}

/// Runs one logical request over `routes` (name, base URL) in order;
/// returns the route that answered.
pub async fn run(
    client: &reqwest::Client,
    routes: &[(String, String)],
    request_id: &str,
    wrong: &str,
) -> Result<String, ClientError> {
    let max = if wrong == "extra-retry" {
        MAX_ATTEMPTS + 1
    } else {
        MAX_ATTEMPTS
    };
    let mut calls = 0u32;
    let mut attempts = Vec::new();
    let mut last = String::new();
    for (route, base) in routes {
        for n in 1..=max {
            let outcome = attempt(client, base, request_id, calls).await;
            calls += 1;
            match outcome {
                Attempt::Ok => return Ok(route.clone()),
                Attempt::Fatal(code) => {
                    attempts.push(format!("{route}{n} {code}"));
                    return Err(ClientError {
                        stop: "terminal-status",
                        code: Some(code),
                        attempts,
                    });
                }
                Attempt::Retryable(code, guidance) => {
                    attempts.push(format!("{route}{n} {code}"));
                    last = code;
                    if n == max {
                        break; // next upstream, at once
                    }
                    let backoff = BACKOFF * 2u32.pow(n - 1);
                    let mut wait = match guidance {
                        Some(g) if wrong == "uncapped" => g,
                        Some(g) if wrong != "ignore-retry-after" => g.min(GUIDANCE_CAP),
                        _ => backoff,
                    };
                    if wrong == "short-wait" {
                        wait /= 2;
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
    Err(ClientError {
        stop: "exhausted",
        code: last.starts_with("HTTP_").then_some(last),
        attempts,
    })
}
