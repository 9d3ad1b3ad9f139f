//! Verdicts: a row's expectations against what was observed, snapshots
//! included.

pub mod compare;
pub mod requests;
pub mod snapshot;
pub mod tolerance;
