//! The reference retry/fallback system: the default system under test
//! (`system: reference`) and a controller a service can adopt behind its own
//! [`Transport`](crate::transport::Transport).
//!
//! | piece | what it holds |
//! |---|---|
//! | [`Policy`] ([`config`]) | routes and budgets, backoff, deadline, timeouts, guidance, classification knobs |
//! | [`Controller`] ([`controller`]) | the decision loop: retry, switch, stop, escalate |
//! | [`Invocation`] | one logical request: transport, request, id, deadline, jitter, sinks |
//! | [`backoff`] | `initial * factor^retry`, capped, jitter none / full / equal / decorrelated |
//! | [`retry_after`] | `Retry-After` (seconds, three HTTP-date forms) and `retry-after-ms` |
//!
//! Every configuration key, its default and meaning: `docs/configuration.md`.
//!
//! # Using the controller in a service
//!
//! Implement [`Transport`](crate::transport::Transport) over your HTTP
//! client: the controller hands it a [`Request`](crate::transport::Request)
//! naming the route (your upstream), the request id and the idempotency key
//! to send; your transport holds the actual payload. The controller returns
//! the answer's body (or the concatenated stream data) in
//! [`Success::output`](crate::system::Success), or a bounded, sanitized
//! [`FinalError`](crate::system::FinalError), and reports one escalation
//! event per failed run.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use faultmatrix::policy::{Controller, Invocation, Policy};
//! use faultmatrix::registry::Registry;
//! use faultmatrix::system::EscalationSink;
//! use faultmatrix::model::RequestSpec;
//! use faultmatrix::transport::{Body, BoxFuture, Request, Response, Transport, TransportError};
//!
//! /// Stands in for an HTTP client: the primary is down, the backup answers.
//! struct Upstreams;
//! impl Transport for Upstreams {
//!     fn call(&self, req: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
//!         let status = if req.route == "primary" { 503 } else { 200 };
//!         Box::pin(async move {
//!             Ok(Response { status, headers: vec![], body: Body::Full(r#"{"text":"hi"}"#.into()) })
//!         })
//!     }
//! }
//!
//! let policy = Policy::from_yaml_str(
//!     "routes: [{name: primary, attempts: 2}, {name: backup, attempts: 2}]\n\
//!      backoff: {initial: 100ms, factor: 2, cap: 2s, jitter: full}\n\
//!      deadline: 30s",
//! )
//! .expect("a valid policy");
//! let controller = Controller::new(policy, Registry::builtin());
//! let escalations = EscalationSink::default();
//! let request = RequestSpec { size: 2_000, ..RequestSpec::default() };
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! let result = rt.block_on(
//!     controller.execute(
//!         Invocation::new(&Upstreams, &request, "req-1")
//!             .deadline(Duration::from_secs(5))
//!             .escalations(escalations.clone()),
//!     ),
//! );
//! let success = result.expect("the backup answers");
//! assert_eq!(success.route.as_deref(), Some("backup"));
//! assert_eq!(success.output.as_deref(), Some(r#"{"text":"hi"}"#));
//! assert!(escalations.events().is_empty());
//! ```

pub mod backoff;
pub mod config;
pub mod controller;
pub mod retry_after;

use std::sync::Arc;

pub use config::{AboveCap, Backoff, Jitter, Policy, RetryAfter, RouteConfig};
pub use controller::{Controller, Invocation, OutputSink, MAX_FIELD_LEN};

use crate::registry::Registry;
use crate::system::{Built, RowContext, System, SystemResult};
use crate::transport::BoxFuture;
use crate::yaml::{Seg, Value, YamlError};

/// The reference system: a [`Controller`] run once per row.
pub struct Reference {
    controller: Controller,
}

impl Reference {
    /// The system for this controller (register variants of it in
    /// [`Systems`](crate::system::Systems) to compare policies).
    pub fn new(controller: Controller) -> Self {
        Self { controller }
    }

    /// The controller.
    pub fn controller(&self) -> &Controller {
        &self.controller
    }
}

impl System for Reference {
    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult> {
        Box::pin(async move {
            let inv = Invocation::new(ctx.transport.as_ref(), &ctx.request, &ctx.request_id)
                .deadline_opt(ctx.deadline)
                .jitter(ctx.jitter.clone())
                .escalations(ctx.escalations.clone())
                .wall_start(ctx.wall_start);
            self.controller.execute(inv).await
        })
    }
}

/// Checks the policy's code names against the registry.
fn check_codes(policy: &Policy, registry: &Registry) -> Vec<YamlError> {
    let mut errors = Vec::new();
    for (i, code) in policy.switch_on.iter().flatten().enumerate() {
        if registry.get(code).is_none() {
            let hint = crate::diag::did_you_mean(code, registry.names())
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
            errors.push(YamlError {
                pos: None,
                path: vec![
                    Seg::Key("policy".into()),
                    Seg::Key("switch_on".into()),
                    Seg::Index(i),
                ],
                message: format!(
                    "unknown reason code `{code}`: codes come from the registry ({}){hint}",
                    registry.origin
                ),
            });
        }
    }
    errors
}

/// Factory for the `reference` system: parses the `policy:` block.
pub fn build_reference(policy: &Value, registry: &Arc<Registry>) -> Result<Built, Vec<YamlError>> {
    let policy = Policy::from_value(policy)?;
    let errors = check_codes(&policy, registry);
    if !errors.is_empty() {
        return Err(errors);
    }
    let routes = policy.routes.iter().map(|r| r.name.clone()).collect();
    let body_paths = policy.body_paths.clone();
    Ok(Built {
        body_paths,
        system: Arc::new(Reference::new(Controller::new(policy, registry.clone()))),
        routes: Some(routes),
    })
}

#[cfg(test)]
mod tests {
    use crate::load::load_text;
    use crate::system::Systems;

    fn errors(policy: &str) -> String {
        let text = format!(
            "title: t\npolicy:\n{policy}\nrows:\n  - name: r\n    inject: {{ A: [200] }}\n    expect: {{ stop: success }}\n"
        );
        match load_text("m.yaml", &text, None, &Systems::new()) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn policy_problems_are_diagnostics_with_positions() {
        let e = errors("  routes: [{ name: A }]\n  switch_on: [MODEL_UNAVAILBLE]");
        assert!(e.contains("unknown reason code `MODEL_UNAVAILBLE`"), "{e}");
        assert!(e.contains("did you mean `MODEL_UNAVAILABLE`"), "{e}");
        assert!(e.contains("m.yaml:4:"), "{e}");
        let e = errors("  routes: [{ name: A, backoff: { jitter: ful } }]");
        assert!(e.contains("unknown value `ful`"), "{e}");
        assert!(e.contains("did you mean `full`"), "{e}");
        let e = errors("  routes: [{ name: A }]\n  retry_after: { above_cap: refuze }");
        assert!(e.contains("did you mean `refuse`"), "{e}");
        assert_eq!(errors("  routes: [{ name: A }]\n  switch_on: []"), "");
    }
}
