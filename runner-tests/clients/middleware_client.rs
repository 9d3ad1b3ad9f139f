//! A client built on `reqwest-middleware` + `reqwest-retry`, the way their
//! READMEs show it: a `reqwest::Client` wrapped in a `ClientWithMiddleware`
//! with `RetryTransientMiddleware` and an `ExponentialBackoff` policy
//! (from `retry-policies`). Nothing in it knows about faultmatrix.
//!
//! What the libraries do (reqwest-retry 0.9.1 `middleware.rs`
//! `execute_with_retry`, `retryable_strategy.rs`; retry-policies 0.5.2
//! `policies/exponential_backoff.rs`):
//!
//! - schedule: after the n-th failure (n from 0) wait
//!   `min(max_retry_interval, min_retry_interval * base^n)` (defaults 1s,
//!   30 min, base 2), jittered by `Jitter::Full` (a uniform draw in
//!   `[0, 1)` times the wait) unless another jitter is chosen;
//! - classification (`DefaultRetryableStrategy`): 5xx, 408 and 429 are
//!   transient; other 4xx, 1xx and 3xx fatal; a timeout, a connect error,
//!   an incomplete message and a reset are transient; body, decode and
//!   other request errors (a malformed head) fatal; `Retry-After` is not
//!   read;
//! - give-up: after `max_n_retries` retries (`build_with_max_retries`) the
//!   last result is returned as it is: a 5xx is an `Ok` response.

use std::time::Duration;

use reqwest_middleware::ClientBuilder;
use reqwest_retry::policies::ExponentialBackoff;
use reqwest_retry::{Jitter, RetryTransientMiddleware};

/// The client's settings.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Retries after the first call.
    pub max_retries: u32,
    /// First wait.
    #[serde(default = "one_second")]
    pub min: faultmatrix::system::Dur,
    /// Longest wait.
    #[serde(default = "half_an_hour")]
    pub max: faultmatrix::system::Dur,
    /// `none`, `full` (the library's default) or `bounded`.
    #[serde(default)]
    pub jitter: JitterChoice,
    /// Per-call timeout.
    #[serde(default = "ten_seconds")]
    pub timeout: faultmatrix::system::Dur,
}

/// The jitter a [`Settings`] names.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JitterChoice {
    /// Exact waits.
    None,
    /// The library's default.
    #[default]
    Full,
    /// Between half the minimum and the wait.
    Bounded,
}

fn one_second() -> faultmatrix::system::Dur {
    faultmatrix::system::Dur(Duration::from_secs(1))
}
fn half_an_hour() -> faultmatrix::system::Dur {
    faultmatrix::system::Dur(Duration::from_secs(1800))
}
fn ten_seconds() -> faultmatrix::system::Dur {
    faultmatrix::system::Dur(Duration::from_secs(10))
}

/// Fetches `/v1/models` from `base`, retried by the middleware; a non-2xx
/// final answer is an error.
pub async fn fetch(base: &str, s: &Settings) -> Result<String, reqwest_middleware::Error> {
    let jitter = match s.jitter {
        JitterChoice::None => Jitter::None,
        JitterChoice::Full => Jitter::Full,
        JitterChoice::Bounded => Jitter::Bounded,
    };
    let policy = ExponentialBackoff::builder()
        .retry_bounds(s.min.0, s.max.0)
        .jitter(jitter)
        .build_with_max_retries(s.max_retries);
    let inner = reqwest::Client::builder()
        .timeout(s.timeout.0)
        .build()
        .map_err(reqwest_middleware::Error::Reqwest)?;
    let client = ClientBuilder::new(inner)
        .with(RetryTransientMiddleware::new_with_policy(policy))
        .build();
    let resp = client.get(format!("{base}/v1/models")).send().await?;
    let resp = resp.error_for_status()?;
    Ok(resp.text().await?)
}
