//! Base: what every layer above speaks. Durations, the YAML front end with
//! positions, compiler-style diagnostics, server-sent events as text. Imports
//! nothing of the crate.

pub mod diag;
pub mod duration;
pub mod sse;
pub mod yaml;
