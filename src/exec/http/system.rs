//! [`HttpSystem`]: a system from "call my client and tell me how it
//! ended". The client gets a base URL per route ([`HttpRow`]); when it
//! fails, the final error, its attempts and the one escalation are built
//! from what the seam observed and the matrix's registry, unless the team
//! maps its own error ([`HttpSystem::map_error`]).
//!
//! ```no_run
//! use faultmatrix::http::HttpSystem;
//! use faultmatrix::Harness;
//!
//! fn main() -> std::process::ExitCode {
//!     let client = HttpSystem::new(["A"], |row| async move {
//!         let resp = reqwest::get(format!("{}/v1/ping", row.base_url("A"))).await?;
//!         resp.error_for_status().map(|_| ())
//!     });
//!     Harness::new("matrices").system("ping", client.factory()).run()
//! }
//! ```

use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::base::yaml::Value;
use crate::contracts::system::{
    default_final_error, read_policy, ClassifiedCall, Escalation, FinalError, RowContext, Success,
    System, SystemResult,
};
use crate::contracts::transport::BoxFuture;
use crate::exec::http::serve::{HttpRow, SeenCall, SeenOutcome};
use crate::load::systems::{Built, Factory};
use crate::model::registry::{Observed, Registry};

/// What the seam observed of a run, classified with the matrix's
/// registry (the trace's codes): what an error mapping reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The row's request id.
    pub request_id: String,
    /// Every call, in arrival order.
    pub calls: Vec<ClassifiedCall>,
}

impl Seen {
    fn new(request_id: &str, calls: &[SeenCall], registry: &Registry) -> Self {
        let calls = calls
            .iter()
            .filter(|c| crate::model::split_key(&c.route).1.is_none())
            .map(|c| {
                let observed = match &c.outcome {
                    SeenOutcome::Status { status, body } => Observed::Response {
                        status: *status,
                        body: body.as_deref(),
                    },
                    SeenOutcome::Pending | SeenOutcome::Timeout => Observed::Timeout,
                    SeenOutcome::Reset => Observed::Reset,
                    SeenOutcome::Malformed => Observed::Malformed,
                    SeenOutcome::Broken => Observed::Broken,
                };
                let classified = registry.classify(observed, &[]);
                let (code, retryable) = match classified {
                    None => ("OK".to_string(), false),
                    Some(k) => {
                        let retryable =
                            k.known && registry.get(&k.code).is_some_and(|d| d.retryable);
                        (k.code, retryable)
                    }
                };
                ClassifiedCall {
                    route: c.route.clone(),
                    attempt: c.attempt,
                    code,
                    retryable,
                }
            })
            .collect();
        Self {
            request_id: request_id.to_string(),
            calls,
        }
    }

    /// The default final error ([`default_final_error`]): every call an
    /// attempt, the last call's code, stop `terminal` or `exhausted`.
    pub fn final_error(&self) -> FinalError {
        default_final_error(&self.request_id, &self.calls)
    }
}

type RunFn<P, E> = dyn Fn(&P, HttpRow) -> BoxFuture<'static, Result<(), E>> + Send + Sync;
type MapFn<E> = dyn Fn(&E, &Seen) -> FinalError + Send + Sync;

/// A client run as a system: `P` is the matrix's `policy` block
/// (deserialized, `()` when there is none), `E` the client's error.
pub struct HttpSystem<P, E> {
    routes: Vec<String>,
    run: Arc<RunFn<P, E>>,
    map: Option<Arc<MapFn<E>>>,
}

impl<P, E> Clone for HttpSystem<P, E> {
    fn clone(&self) -> Self {
        Self {
            routes: self.routes.clone(),
            run: self.run.clone(),
            map: self.map.clone(),
        }
    }
}

fn route_names<I, S>(routes: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    routes.into_iter().map(Into::into).collect()
}

impl<E: Send + 'static> HttpSystem<(), E> {
    /// A client that calls these routes (in fallback order; rows may only
    /// script these) and takes no `policy` block. `run` is called once per
    /// row; any `Ok` is success, any `Err` a failure.
    pub fn new<I, S, F, Fut, T>(routes: I, run: F) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
        F: Fn(HttpRow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        Self {
            routes: route_names(routes),
            run: Arc::new(move |_: &(), row| {
                let fut = run(row);
                Box::pin(async move { fut.await.map(|_| ()) })
            }),
            map: None,
        }
    }
}

impl<P, E> HttpSystem<P, E>
where
    P: DeserializeOwned + Send + Sync + 'static,
    E: Send + 'static,
{
    /// A client configured by the matrix's `policy` block, read into `P`
    /// (a typo or a wrong type is a load error with file, line and column;
    /// use `#[serde(deny_unknown_fields)]`).
    pub fn with_policy<I, S, F, Fut, T>(routes: I, run: F) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
        F: Fn(&P, HttpRow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        Self {
            routes: route_names(routes),
            run: Arc::new(move |p: &P, row| {
                let fut = run(p, row);
                Box::pin(async move { fut.await.map(|_| ()) })
            }),
            map: None,
        }
    }

    /// The team's own error mapping, instead of the default
    /// ([`Seen::final_error`]). The escalation is still the one event for
    /// the returned error's code.
    pub fn map_error(
        mut self,
        map: impl Fn(&E, &Seen) -> FinalError + Send + Sync + 'static,
    ) -> Self {
        self.map = Some(Arc::new(map));
        self
    }

    /// The factory to register (`Harness::system("name", client.factory())`).
    pub fn factory(self) -> Factory {
        Arc::new(move |policy: &Value, registry: &Arc<Registry>| {
            let policy: P = read_policy(policy)?;
            Ok(Built::new(Arc::new(Running {
                client: self.clone(),
                policy,
                registry: registry.clone(),
            }))
            .routes(self.routes.clone()))
        })
    }
}

/// A built [`HttpSystem`]: the client, its policy, the matrix's registry.
struct Running<P, E> {
    client: HttpSystem<P, E>,
    policy: P,
    registry: Arc<Registry>,
}

impl<P, E> System for Running<P, E>
where
    P: Send + Sync + 'static,
    E: Send + 'static,
{
    fn sees_requests(&self) -> bool {
        true
    }

    fn needs_io(&self) -> bool {
        true
    }

    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult> {
        Box::pin(async move {
            let escalations = ctx.escalations.clone();
            let request_id = ctx.request_id.clone();
            let row = HttpRow::new(ctx);
            let result = (self.client.run)(&self.policy, row.clone()).await;
            let seen = Seen::new(&request_id, &row.seen(), &self.registry);
            let errors = row.errors();
            if !errors.is_empty() {
                return Err(FinalError {
                    stop: "seam-error".into(),
                    code: Some(errors.join("; ")),
                    request_id: Some(request_id),
                    attempts: Vec::new(),
                    omitted: 0,
                    output: None,
                });
            }
            match result {
                Ok(()) => Ok(Success {
                    route: seen.calls.last().map(|c| c.route.clone()),
                    output: None,
                }),
                Err(e) => {
                    let err = match &self.client.map {
                        Some(map) => map(&e, &seen),
                        None => seen.final_error(),
                    };
                    if let Some(code) = &err.code {
                        let to = self.registry.get(code).and_then(|d| d.escalate_to.clone());
                        escalations.escalate(Escalation {
                            code: code.clone(),
                            to,
                        });
                    }
                    Err(err)
                }
            }
        })
    }
}
