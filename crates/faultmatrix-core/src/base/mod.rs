//! Base: what every layer above speaks. Durations, the YAML front end with
//! positions, compiler-style diagnostics, server-sent events as text. Imports
//! nothing of the crate.

pub mod confine;
pub mod diag;
pub mod duration;
pub mod env;
pub mod json;
pub mod json_path;
pub mod label;
pub mod paths;
pub mod redact;
pub mod sse;
pub mod text;
pub mod url;
pub mod yaml;
pub mod yaml_edit;

pub use faultmatrix_controller::outcome::lock;
