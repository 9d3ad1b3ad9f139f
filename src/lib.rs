//! # faultmatrix
//!
//! Declarative acceptance matrices for the retry and fallback logic of API
//! clients. A matrix file (YAML) says what each route answers ("503, 503 on
//! A, then 200 on B") and the exact trace the client must produce; every row
//! becomes a named `cargo test` that runs the client against a scripted
//! transport on a virtual clock and fails with a readable diff.
//!
//! The data flow, one module per stage:
//!
//! | stage | module |
//! |---|---|
//! | YAML text in, positions | [`yaml`] |
//! | serde shapes, validation, diagnostics | [`load`], [`diag`] |
//! | the validated model | [`model`], [`registry`] |
//! | running a row on a virtual clock | [`run`], [`script`], [`transport`], [`system`] |
//! | the reference retry/fallback system | [`policy`] |
//! | trace text and comparison | [`trace`], [`compare`] |
//! | cargo test harness, CLI reports | [`harness`], [`report`] |
//! | reason codes: generated tests, guardrails, review table, `check` | [`registry`], [`check`] |
//! | recorded tapes: replay, record, scrub | [`tape`] |
//! | snapshot rows (insta), selection by tag | [`snapshot`], [`select`] |
//! | JUnit, Markdown, HTML, annotations, terminal; `schema`, `snapshots` | [`reports`], [`schema`], [`commands`] |
//! | over HTTP: fixture server, command systems, tolerances | [`wire`] |
#![warn(missing_docs)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod engine;
pub mod exec;
#[cfg(feature = "harness")]
pub mod harness;
pub mod policy;
pub mod reports;
pub mod verdict;

pub use faultmatrix_core::{base, contracts, load, model};

pub use contracts::system::System;
pub use load::systems::Systems;

/// Everything a custom system needs: the [`System`] trait, what a row
/// hands it, how it ends, and how it is built and registered by name.
pub mod system {
    pub use crate::contracts::system::*;
    pub use crate::load::systems::{Built, Factory, Systems};
}

/// The transport a system calls (from the controller crate).
pub mod transport {
    pub use crate::contracts::transport::*;
}
