//! The reference retry/fallback system: the default system under test and a
//! controller a service can adopt behind its own [`Transport`].
//!
//! ```
//! use std::sync::Arc;
//! use faultmatrix::policy::{Controller, Invocation, Policy};
//! use faultmatrix::registry::Registry;
//! use faultmatrix::system::{EscalationSink, JitterSource};
//! use faultmatrix::model::{JitterInput, RequestSpec};
//! use faultmatrix::transport::{Body, BoxFuture, Request, Response, Transport, TransportError};
//!
//! /// A transport that always answers 200 (a real one wraps an HTTP client).
//! struct AlwaysOk;
//! impl Transport for AlwaysOk {
//!     fn call(&self, _req: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
//!         Box::pin(async { Ok(Response { status: 200, headers: vec![], body: Body::Full("{}".into()) }) })
//!     }
//! }
//!
//! let yaml = "routes: [{name: primary, attempts: 2}, {name: backup, attempts: 2}]\ndeadline: 30s";
//! let policy = Policy::from_value(&serde_yaml::from_str(yaml).unwrap()).unwrap();
//! let controller = Controller::new(policy, Registry::builtin());
//! let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! let result = rt.block_on(controller.execute(Invocation {
//!     transport: &AlwaysOk,
//!     request: &RequestSpec::default(),
//!     request_id: "req-1",
//!     deadline: None,
//!     jitter: &JitterSource::new(&JitterInput::Seed(7)),
//!     escalations: &EscalationSink::default(),
//!     wall_start: std::time::SystemTime::now(),
//! }));
//! assert_eq!(result.unwrap().route.as_deref(), Some("primary"));
//! ```

pub mod backoff;
pub mod config;
pub mod controller;
pub mod retry_after;

use std::sync::Arc;

pub use config::{AboveCap, Backoff, Jitter, Policy, RetryAfter, RouteConfig};
pub use controller::{Controller, Invocation};

use crate::registry::Registry;
use crate::system::{Built, RowContext, System, SystemResult};
use crate::transport::BoxFuture;
use crate::yaml::{Value, YamlError};

/// The reference system: a [`Controller`] run once per row.
pub struct Reference {
    controller: Controller,
}

impl System for Reference {
    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult> {
        Box::pin(async move {
            self.controller
                .execute(Invocation {
                    transport: ctx.transport.as_ref(),
                    request: &ctx.request,
                    request_id: &ctx.request_id,
                    deadline: ctx.deadline,
                    jitter: &ctx.jitter,
                    escalations: &ctx.escalations,
                    wall_start: ctx.wall_start,
                })
                .await
        })
    }
}

/// Factory for the `reference` system.
pub fn build_reference(policy: &Value, registry: &Arc<Registry>) -> Result<Built, Vec<YamlError>> {
    let policy = Policy::from_value(policy)?;
    let routes = policy.routes.iter().map(|r| r.name.clone()).collect();
    let body_paths = policy.body_paths.clone();
    Ok(Built {
        body_paths,
        system: Arc::new(Reference {
            controller: Controller::new(policy, registry.clone()),
        }),
        routes: Some(routes),
    })
}
