//! A client built on `backon`, the way its docs show it: an async `fetch`
//! with `.retry(ExponentialBuilder::default())`, `.when(...)` choosing what
//! is retried, and (optionally) the docs' `.adjust(...)` example that
//! honours `Retry-After`. Nothing in it knows about faultmatrix.
//!
//! What the library does (backon 1.6.0 `backoff/exponential.rs`
//! `ExponentialBackoff::next`, `retry.rs` `Retry::poll`):
//!
//! - schedule: `ExponentialBuilder::default()` is factor 2, min 1s, max
//!   60s, `max_times` 3, no jitter: waits 1s, 2s, 4s, each capped at the
//!   max; then `next()` is `None`;
//! - classification: `when` (default: every error) decides; an error it
//!   rejects is returned at once;
//! - give-up: when the backoff's `next()` is `None` the last error is
//!   returned... unless `adjust` turns that `None` into `Some`: the docs'
//!   example returns `Some(Retry-After)` whenever the header is present, so
//!   a server that keeps sending `Retry-After` is retried forever.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};

/// What a call failed with.
#[derive(Debug)]
pub enum FetchError {
    /// A non-2xx answer and its `Retry-After`, if any.
    Status(u16, Option<String>),
    /// No answer (timeout, reset, malformed).
    Transport(reqwest::Error),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Status(s, _) => write!(f, "upstream answered {s}"),
            FetchError::Transport(e) => write!(f, "upstream unreachable: {e}"),
        }
    }
}

impl std::error::Error for FetchError {}

impl FetchError {
    /// The team's choice of what to retry: 429, 5xx and transport errors.
    pub fn is_transient(&self) -> bool {
        match self {
            FetchError::Status(s, _) => *s == 429 || *s >= 500,
            FetchError::Transport(_) => true,
        }
    }
}

/// How the client uses `adjust`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Adjust {
    /// No `adjust`: the backoff alone.
    #[default]
    None,
    /// The docs' example: `Retry-After` replaces the backoff, even when the
    /// backoff is spent.
    DocsExample,
    /// `Retry-After` replaces the backoff only while there is one.
    WhileBudgetLeft,
}

/// The client's settings.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `adjust` as used.
    #[serde(default)]
    pub adjust: Adjust,
    /// Per-call timeout.
    #[serde(default = "ten_seconds")]
    pub timeout: faultmatrix::system::Dur,
}

fn ten_seconds() -> faultmatrix::system::Dur {
    faultmatrix::system::Dur(Duration::from_secs(10))
}

async fn fetch_once(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    let resp = client
        .get(url)
        .send()
        .await
        .map_err(FetchError::Transport)?;
    let status = resp.status().as_u16();
    if !resp.status().is_success() {
        let retry_after = resp
            .headers()
            .get("Retry-After")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        return Err(FetchError::Status(status, retry_after));
    }
    resp.text().await.map_err(FetchError::Transport)
}

fn retry_after(e: &FetchError) -> Option<Duration> {
    match e {
        FetchError::Status(_, Some(v)) => Some(Duration::from_secs(v.parse::<u64>().unwrap_or(0))),
        _ => None,
    }
}

/// Fetches `/v1/models` from `base`, retried by backon.
pub async fn fetch(base: &str, s: &Settings) -> Result<String, FetchError> {
    let client = reqwest::Client::builder()
        .timeout(s.timeout.0)
        .build()
        .map_err(FetchError::Transport)?;
    let url = format!("{base}/v1/models");
    let call = || fetch_once(&client, &url);
    let retry = call
        .retry(ExponentialBuilder::default())
        .when(FetchError::is_transient);
    match s.adjust {
        Adjust::None => retry.await,
        Adjust::DocsExample => {
            retry
                .adjust(|e, dur| match retry_after(e) {
                    Some(ra) => Some(ra),
                    None => dur,
                })
                .await
        }
        Adjust::WhileBudgetLeft => {
            retry
                .adjust(|e, dur| dur.map(|d| retry_after(e).unwrap_or(d)))
                .await
        }
    }
}
