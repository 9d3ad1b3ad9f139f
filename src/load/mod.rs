//! Loading: files and text into validated [`Matrix`](crate::model::Matrix)
//! and [`Registry`](crate::model::registry::Registry) values, in two passes (serde
//! shapes in [`raw`], then [`validate`]), collecting every error of a file
//! before anything runs.

pub mod cache;
pub mod policy;
pub mod raw;
pub mod recover;
pub mod schema;
pub mod tape;
pub mod validate;

pub use validate::{builtin_registry, load_file, load_text, registry_from_text, trace_item_pos};
