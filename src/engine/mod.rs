//! The engine: finding matrix files, selecting rows, running them, and the
//! tests a registry generates (per-code rows, guardrails); `check`; explore
//! mode (generated sequences against invariants, shrunk to a row).

pub mod caps;
pub mod check;
pub mod chunked;
pub mod discover;
pub mod error;
pub mod explore;
pub mod generate;
pub mod glob;
pub mod guardrails;
pub mod plan;
pub mod pool;
pub mod results;
pub mod run;
pub mod select;
pub mod suite;
