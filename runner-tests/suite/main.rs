//! The runner's own tests, as one integration binary (`cargo test --test
//! suite`), laid out like the anchors': one module per concern and one
//! `common` module of shared helpers. The libtest-mimic harnesses
//! (`matrices`, `custom_system`, `wire`) stay their own binaries because
//! each has its own `main`.
//!
//! Select a concern with a name filter, as libtest takes it:
//! `cargo test --test suite tapes::`.

mod common;
// `cargo tree`, shared with the crates' dependency tests.
#[path = "../../crates/test-support/cargo_tree.rs"]
mod cargo_tree;

mod alloc;
mod authoring;
mod bless;
mod command_output;
mod diagnostics;
mod docs;
mod explore;
mod friction;
mod fuzz_regressions;
mod globs;
mod hardening;
mod html_browser;
mod http_seam;
mod interrupt;
mod junit;
mod layers;
mod light_build;
mod live;
mod model_cache;
mod registry;
mod rough_edges;
mod rules;
mod runner;
mod schema;
mod tapes;
mod wire_server;
