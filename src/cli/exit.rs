//! The exit statuses of the `faultmatrix` binary, in one place: every
//! subcommand returns one of these.

/// Exit status: every row passed.
pub const EXIT_OK: u8 = 0;
/// Exit status: at least one row failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: bad input (unloadable file, bad argument, nothing found).
pub const EXIT_BAD_INPUT: u8 = 2;

use crate::base::diag::{FileErrors, LoadErrorKind};
use crate::engine::error::{EngineError, EngineErrorKind};
use crate::engine::results::Summary;

/// The status for an error that stopped a run before any row ran.
pub fn for_engine_error(e: &EngineError) -> u8 {
    match e.kind {
        EngineErrorKind::NoSuchPath(_)
        | EngineErrorKind::BadGlob { .. }
        | EngineErrorKind::Unreadable { .. }
        | EngineErrorKind::Registry(_) => EXIT_BAD_INPUT,
    }
}

/// The status for a file that does not load.
pub fn for_load_error(e: &FileErrors) -> u8 {
    match e.kind {
        LoadErrorKind::Unreadable | LoadErrorKind::Syntax | LoadErrorKind::Invalid => {
            EXIT_BAD_INPUT
        }
    }
}

/// The status of a finished run: bad input when a file did not load, else
/// failed when a row failed, else ok.
pub fn for_run(load_errors: usize, summary: &Summary) -> u8 {
    if load_errors > 0 {
        EXIT_BAD_INPUT
    } else if summary.failed > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}
