//! # faultmatrix-controller
//!
//! A retry/fallback controller for API clients, for production services:
//! ordered routes with attempt budgets, capped exponential backoff with
//! none / full / equal / decorrelated jitter, server guidance
//! (`Retry-After` as seconds and all three HTTP-date forms, and
//! `retry-after-ms`) with a cap, classification by status *and* error body,
//! one deadline shared by all routes with per-attempt timeouts, idempotency
//! rules for create requests, a replay guard for streams, a bounded final
//! error and exactly one escalation event per failed run.
//!
//! It is the reference system of [faultmatrix](https://crates.io/crates/faultmatrix),
//! whose acceptance matrices specify every rule; this crate depends on
//! nothing but `serde` and tokio's `time` feature.
//!
//! # Using it
//!
//! Implement [`Transport`](transport::Transport) over your HTTP client: the
//! controller hands it a [`Request`](transport::Request) naming the route
//! (your upstream), the request id and the idempotency key to send; your
//! transport holds the actual payload. The controller returns the answer's
//! body (or the concatenated stream data) in [`Success::output`], or a
//! bounded, sanitized [`FinalError`], and reports one escalation event per
//! failed run.
//!
//! ```
//! use std::time::Duration;
//! use faultmatrix_controller::transport::{Body, BoxFuture, Request, Response, Transport, TransportError};
//! use faultmatrix_controller::{Backoff, Codes, Controller, EscalationSink, Invocation, Jitter, Policy, RequestSpec, RouteConfig};
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
//! let policy = Policy {
//!     routes: vec![RouteConfig::new("primary", 2), RouteConfig::new("backup", 2)],
//!     backoff: Backoff {
//!         initial: Duration::from_millis(100),
//!         cap: Duration::from_secs(2),
//!         jitter: Jitter::Full,
//!         ..Backoff::default()
//!     },
//!     deadline: Some(Duration::from_secs(30)),
//!     ..Policy::default()
//! };
//! let controller = Controller::new(policy, Codes::builtin());
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
//!
//! # Configuration files
//!
//! [`PolicyConfig`] is the serde shape of a configuration file; read it
//! with the format crate your service already uses and
//! [`validate`](PolicyConfig::validate) it into a [`Policy`]: every problem
//! comes back at its key (`policy.routes[0].attempts: ...`). Every key, its
//! default and the decision order are in faultmatrix's
//! `docs/configuration.md`.
//!
//! # Modules
//!
//! | module | what it owns |
//! |---|---|
//! | [`transport`] | the request, response and stream types and the [`Transport`](transport::Transport) trait |
//! | [`outcome`] | [`Success`], [`FinalError`], escalations, jitter draws |
//! | [`codes`] | reason codes and the classification of answers |
//! | [`policy`] | the controller, its configuration, backoff and server guidance |
//! | [`duration`] | durations as configuration files write them (`1s`, `250ms`) |
//! | [`json`] | reading one string out of a JSON error body |
#![warn(missing_docs)]

pub mod codes;
pub mod duration;
pub mod json;
pub mod outcome;
pub mod policy;
pub mod transport;

pub use codes::{Classified, CodeDef, Codes, Observed, StatusMatch};
pub use outcome::{
    AttemptNote, Escalation, EscalationSink, FinalError, JitterInput, JitterSource, Success,
    SystemResult,
};
pub use policy::config::{
    AboveCap, Backoff, BackoffConfig, ConfigError, ConfigErrors, Jitter, KeySeg, Policy,
    PolicyConfig, RetryAfter, RetryAfterConfig, RouteConfig, RouteEntry,
};
pub use policy::controller::{Controller, Invocation, OutputSink, MAX_FIELD_LEN};
pub use transport::{RequestSpec, SseItem};
