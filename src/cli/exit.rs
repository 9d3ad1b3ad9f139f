//! The exit statuses of the `faultmatrix` binary, in one place: every
//! subcommand returns one of these.

/// Exit status: every row passed.
pub const EXIT_OK: u8 = 0;
/// Exit status: at least one row failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: bad input (unloadable file, bad argument, nothing found).
pub const EXIT_BAD_INPUT: u8 = 2;
