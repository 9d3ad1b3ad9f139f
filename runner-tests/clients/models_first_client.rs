//! An SDK-shaped client: before its first create it lists the models once
//! (`GET /v1/models`, no retry, as SDKs that validate a model name do),
//! then posts `POST /v1/chat/completions` through reqwest-middleware +
//! reqwest-retry (the policy of `middleware_client.rs`). The preliminary
//! GET is what keyed scripts (`A GET /v1/models: [...]`) serve, so it does
//! not eat the route's script. Nothing in it knows about faultmatrix.

use reqwest_middleware::ClientBuilder;
use reqwest_retry::policies::ExponentialBackoff;
use reqwest_retry::{Jitter, RetryTransientMiddleware};

use crate::middleware_client::Settings;

/// Lists the models, then creates a completion, retried by the middleware;
/// a non-2xx answer to either is an error.
pub async fn create_after_models(
    base: &str,
    s: &Settings,
) -> Result<String, reqwest_middleware::Error> {
    let inner = reqwest::Client::builder()
        .timeout(s.timeout.0)
        .build()
        .map_err(reqwest_middleware::Error::Reqwest)?;
    inner
        .get(format!("{base}/v1/models"))
        .send()
        .await?
        .error_for_status()?;
    let policy = ExponentialBackoff::builder()
        .retry_bounds(s.min.0, s.max.0)
        .jitter(Jitter::None)
        .build_with_max_retries(s.max_retries);
    let client = ClientBuilder::new(inner)
        .with(RetryTransientMiddleware::new_with_policy(policy))
        .build();
    let resp = client
        .post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}"#)
        .send()
        .await?;
    let resp = resp.error_for_status()?;
    Ok(resp.text().await?)
}
