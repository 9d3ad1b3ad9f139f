//! # faultmatrix
//!
//! Acceptance matrices for the retry and fallback logic of API clients. A
//! matrix file (YAML) says what each route answers ("503, 503 on A, then
//! 200 on B") and the exact trace the client must produce; every row
//! becomes a named `cargo test` that runs the client against a scripted
//! transport on a virtual clock and fails with a readable diff.
//!
//! ## A first matrix
//!
//! ```yaml
//! title: Two-route fallback
//! policy:                          # handed to the system under test (default: the reference system)
//!   routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
//!   backoff: { initial: 1s, factor: 2, cap: 30s }
//! rows:
//!   - name: 503 twice on A then B succeeds
//!     inject: { A: [503, 503], B: [200] }
//!     expect:
//!       trace: |
//!         A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
//!         A2 503 UPSTREAM_UNAVAILABLE switch
//!         B1 200 return
//!       stop: success
//! ```
//!
//! Loading and running it in code (the harness below does this for every
//! row of a tree):
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let text = "title: t
//! policy: { routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }] }
//! rows:
//!   - name: 503 twice on A then B succeeds
//!     inject: { A: [503, 503], B: [200] }
//!     expect:
//!       trace: |
//!         A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
//!         A2 503 UPSTREAM_UNAVAILABLE switch
//!         B1 200 return
//! ";
//! let matrix = faultmatrix::load_text("first.yaml", text, None, &faultmatrix::Systems::new())?;
//! let row = &matrix.rows[0];
//! let (verdict, _) = faultmatrix::run_row(&matrix, row, &faultmatrix::RunOptions::default());
//! assert!(verdict.is_ok(), "{}", verdict.unwrap_err());
//! # Ok(())
//! # }
//! ```
//!
//! ## The harness: every row a `cargo test`
//!
//! A `harness = false` test target turns every row below a folder into a
//! named test (`matrices/first.yaml::503 twice on A then B succeeds`);
//! `--list`, `--exact`, `--skip`, `--ignored` and filters work as in
//! libtest, and under nextest each test parses only its own file.
//!
//! ```toml
//! [[test]]
//! name = "matrices"
//! path = "tests/matrices.rs"
//! harness = false
//! ```
//!
//! ```no_run
//! // tests/matrices.rs
//! fn main() -> std::process::ExitCode {
//!     faultmatrix::Harness::new("matrices").run()
//! }
//! ```
//!
//! ## A custom system
//!
//! A team plugs its own client in by implementing [`System`]: run one
//! logical request through the row's transport and say how it ended. The
//! harness observes every call on the wire itself (waits, decisions), so
//! the system reports only the ending.
//!
//! ```
//! use std::sync::Arc;
//! use faultmatrix::system::{Built, FinalError, RowContext, Success, SystemResult};
//! use faultmatrix::transport::{BoxFuture, Request};
//! use faultmatrix::{Harness, System};
//!
//! /// Calls route `A` once; a 2xx is success.
//! struct OneShot;
//!
//! impl System for OneShot {
//!     fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult> {
//!         Box::pin(async move {
//!             let request = Request { route: "A".into(), ..Request::default() };
//!             match ctx.transport.call(request).await {
//!                 Ok(r) if (200..300).contains(&r.status) => Ok(Success::default()),
//!                 _ => Err(FinalError {
//!                     stop: "failed".into(),
//!                     code: None,
//!                     request_id: Some(ctx.request_id.clone()),
//!                     attempts: Vec::new(),
//!                     omitted: 0,
//!                     output: None,
//!                 }),
//!             }
//!         })
//!     }
//! }
//!
//! // `system: one-shot` in a matrix builds it.
//! let harness = Harness::new("matrices").system(
//!     "one-shot",
//!     Arc::new(|_policy, _registry| Ok(Built::new(Arc::new(OneShot)).routes(["A"]))),
//! );
//! # drop(harness);
//! ```
//!
//! `docs/custom-system.md` walks through a complete client, its factory
//! and its rows.
//!
//! ## The layers
//!
//! | layer | where | what it owns |
//! |---|---|---|
//! | base, contracts, model, load | [`faultmatrix_core`] (re-exported as [`base`], [`contracts`], [`model`], [`load`]) | durations, YAML with positions, diagnostics; the [`System`] and [`Transport`](transport::Transport) contracts; the validated model; loading files |
//! | the controller | [`faultmatrix_controller`] (as [`policy`]) | the reference retry/fallback controller a service can use on its own |
//! | exec | [`exec`] | the scripted upstream, the in-process driver on a paused clock, tapes, the fixture server and command systems |
//! | verdict | [`verdict`] | comparing a row with what was observed: a [`Failure`](verdict::Failure) is data |
//! | engine | [`engine`] | discovery, the plan of a run, the worker pool, generated tests and guardrails |
//! | reports | [`reports`] | text, JUnit, Markdown, HTML, GitHub annotations, terminal |
//! | entry points | [`Harness`], the `faultmatrix` binary | the only code that reads the process's environment |
//!
//! Imports only go downward (a test fails otherwise). The modules below
//! the root are public for tools and tests that need them; the root is the
//! stable surface.
//!
//! ## Features
//!
//! Everything is on by default. A crate that only runs matrices as cargo
//! tests depends on faultmatrix with `default-features = false, features =
//! ["harness"]` and compiles none of the rest:
//!
//! | feature | adds |
//! |---|---|
//! | `harness` | the cargo harness, [`Harness`] (libtest-mimic) |
//! | `wire` | command systems, clock shims, the fixture server ([`exec::wire`]); without it a command row cannot run here (ignored, failed under CI) |
//! | `record` | the HTTP client for real upstreams (hyper over rustls with ring): recording tapes, `faultmatrix client`, `--over-http`; implies `wire` |
//! | `http` | the in-process HTTP seam, `faultmatrix::http` |
//! | `schema` | the JSON Schemas of the file formats (`load::schema`, schemars) |
//! | `html` | the HTML report (`reports::html`) |
//! | `cli` | the binary (clap, mimalloc), with all of the above but `http` |
//!
//! With none of them, rows run through [`run_row`] or the engine.
#![warn(missing_docs)]

#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
pub mod engine;
pub mod exec;
#[cfg(feature = "harness")]
pub mod harness;
pub mod policy;
pub mod reports;
pub mod verdict;

pub use faultmatrix_core::{base, contracts, load, model};

pub use base::duration::{self, DurationSpec};
pub use contracts::system::System;
pub use engine::run::{run_row, RunOptions};
#[cfg(feature = "harness")]
pub use harness::Harness;
pub use load::systems::Systems;
pub use load::{load_file, load_text};
pub use model::registry::Registry;
pub use model::{Matrix, Row};
pub use verdict::Failure;

/// Everything a custom system needs in one place: the [`System`] trait,
/// what a row hands it ([`RowContext`]), how it ends ([`Success`],
/// [`FinalError`], escalations), and how it is built from a matrix's
/// `policy` block and registered by name ([`Built`], [`Factory`],
/// [`Systems`]), with the YAML and duration types a factory reads.
pub mod system {
    pub use crate::contracts::system::*;
    pub use crate::load::raw::Dur;
    pub use crate::load::systems::{Built, Factory, Systems};
    pub use crate::model::registry::{Classified, Observed, Registry};
    pub use faultmatrix_core::base::yaml::{self, Seg, Value, YamlError};
}

/// The in-process HTTP seam (feature `http`): reqwest and hyper clients
/// run unchanged against a row's scripts on the virtual clock. See
/// [`exec::http`] and `docs/custom-system.md`.
#[cfg(feature = "http")]
pub mod http {
    pub use crate::contracts::system::{default_final_error, ClassifiedCall};
    pub use crate::exec::http::*;
}

/// The transport a system calls (from the controller crate).
pub mod transport {
    pub use crate::contracts::transport::*;
}
