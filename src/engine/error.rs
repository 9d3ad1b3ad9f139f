//! The engine's error: what stops a run before any row runs (a path that
//! does not exist, a bad glob, a folder that cannot be read, a registry
//! that does not load). A struct and a kind, as every layer's error is;
//! the CLI maps each kind to an exit code in one place (`cli::exit`).

use std::fmt;

/// Why the engine could not plan a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    /// What went wrong.
    pub kind: EngineErrorKind,
}

/// The kinds of [`EngineError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineErrorKind {
    /// A path argument that is neither a file, a folder nor a glob.
    #[error("`{0}` does not exist (expected a matrix file, a directory or a glob)")]
    NoSuchPath(String),
    /// A glob that does not parse.
    #[error("bad glob `{pattern}`: {reason}")]
    BadGlob {
        /// The pattern as given.
        pattern: String,
        /// What the glob parser said.
        reason: String,
    },
    /// A folder or file that cannot be read.
    #[error("cannot read `{path}`: {reason}")]
    Unreadable {
        /// The path.
        path: String,
        /// What the operating system said.
        reason: String,
    },
    /// A registry file that does not load (its diagnostics).
    #[error("{0}")]
    Registry(String),
}

impl EngineError {
    /// An error of this kind.
    pub fn new(kind: EngineErrorKind) -> Self {
        Self { kind }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for EngineError {}

impl From<EngineErrorKind> for EngineError {
    fn from(kind: EngineErrorKind) -> Self {
        Self { kind }
    }
}
