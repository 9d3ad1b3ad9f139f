//! The reference retry/fallback system and its controller.
//!
//! The controller is its own crate, `faultmatrix-controller`, which a
//! production service depends on with nothing but serde and tokio's `time`
//! feature; this module re-exports it together with the reference system
//! (`system: reference`) and the reading of a matrix's `policy:` block
//! ([`from_yaml_str`], [`from_value`]). Every configuration key, its
//! default and meaning: `docs/configuration.md`.
//!
//! # Using the controller in a service
//!
//! ```
//! use std::time::Duration;
//! use faultmatrix::policy::{Codes, Controller, Invocation};
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
//! let policy = faultmatrix::policy::from_yaml_str(
//!     "routes: [{name: primary, attempts: 2}, {name: backup, attempts: 2}]\n\
//!      backoff: {initial: 100ms, factor: 2, cap: 2s, jitter: full}\n\
//!      deadline: 30s",
//! )
//! .expect("a valid policy");
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

pub use faultmatrix_core::load::policy::*;
