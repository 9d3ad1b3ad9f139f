//! Reports: the plain text of a run ([`text`]), JUnit XML ([`junit`]), a
//! Markdown summary for a pull-request comment ([`markdown`]), a
//! self-contained HTML page with a timeline picture of every row's trace
//! ([`html`]), GitHub Actions annotations ([`github`]), terminal colour and
//! progress ([`term`]), and a registry's review table ([`table`]).
//!
//! Every report is built from [`RowResult`]s, values the engine returns;
//! the observed run of a row ([`ObservedRun`]) is captured when the row
//! runs, so reports never re-run or re-read anything, and failures are
//! [`Failure`](crate::verdict::Failure) values that no report parses.

pub mod github;
#[cfg(feature = "html")]
pub mod html;
pub mod junit;
pub mod markdown;
pub mod table;
pub mod term;
pub mod text;

pub use crate::engine::results::{RowResult, Summary, Verdict};
pub use crate::verdict::{CallView, ObservedRun};
