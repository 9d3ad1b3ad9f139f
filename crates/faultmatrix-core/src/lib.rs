//! # faultmatrix-core
//!
//! The lower layers of [faultmatrix](https://crates.io/crates/faultmatrix):
//! what a matrix or registry file means, and reading one into that
//! meaning with every error reported like a compiler's. No runner, no
//! command line, no test harness: faultmatrix builds those on top.
//!
//! | layer | module | what it owns |
//! |---|---|---|
//! | base | [`base`] | durations, the YAML front end with positions, diagnostics, SSE, labels, the one redaction list, the captured environment |
//! | contracts | [`contracts`] | the [`System`](contracts::system::System) trait and the transport it calls |
//! | model | [`model`] | matrices, rows, scripts, expectations, registries, tapes, commands, tolerances |
//! | load | [`load`] | files into the model: serde shapes, validation by concern, the trace-line grammar, registries, schemas, systems by name |
//!
//! Each layer imports only the ones above it in this table (a test in
//! faultmatrix's suite fails on an upward import or a cycle).
#![warn(missing_docs)]

pub mod base;
pub mod contracts;
pub mod load;
pub mod model;
