//! Loading: files and text into validated [`Matrix`](crate::model::Matrix)
//! and [`Registry`](crate::model::registry::Registry) values, in two passes
//! (serde shapes in [`raw`], then validation into the model), collecting
//! every error of a file before anything runs.
//!
//! | module | what it owns |
//! |---|---|
//! | [`raw`], [`recover`] | serde shapes that mirror the files; every shape error of a row |
//! | [`ctx`] | collecting one file's diagnostics with positions |
//! | [`matrix`] | a matrix file: fast path, slow path, registry, system, rows |
//! | [`rows`], [`settings`], [`entries`], [`expect`] | a row, its settings, script entries, expectations |
//! | [`clock`] | `clock:`: where a file's or row's wall clock starts |
//! | [`header_date`] | a header written relative to the wall clock (`{ http-date: now+20s }`) |
//! | [`codes`] | `codes:`: a registry code's `max_attempts` set per file or row |
//! | [`row_policy`] | a row's own `policy` keys, merged over the file's |
//! | [`trace_line`] | the grammar of an expected trace line |
//! | [`registry`], [`cache`] | registry files, the built-in registry, parsed once per text |
//! | `builtin` | the built-in registry's fixtures as Rust data |
//! | [`policy`], [`systems`] | the reference system's `policy:` and systems by name |
//! | [`command`], [`tape`], [`requests`] | command systems, tapes, request assertions |
//! | [`schema`] | the JSON Schemas of matrix and registry files |

pub mod built;
mod builtin;
pub mod cache;
pub mod clock;
pub mod codes;
pub mod command;
pub mod ctx;
pub mod entries;
pub mod expect;
pub mod header_date;
pub mod invariants;
pub mod matrix;
pub mod policy;
pub mod raw;
pub mod recover;
pub mod registry;
pub mod requests;
pub mod row_policy;
pub mod rows;
#[cfg(feature = "schema")]
pub mod schema;
pub mod settings;
pub mod stored;
pub mod systems;
pub mod tape;
pub mod trace_line;

pub use expect::trace_item_pos;
pub use matrix::{load_file, load_text, Loader};
pub use registry::{builtin_registry, registry_from_text};
