//! A command system: the program run per row against the fixture server,
//! with its environment, working directory and time limit.

use std::path::PathBuf;
use std::time::Duration;

/// Default time a command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A command system, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandSpec {
    /// Program and arguments (unexpanded).
    pub argv: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Working directory (absolute or relative to the runner's directory).
    pub cwd: Option<PathBuf>,
    /// Time after which the command is killed.
    pub timeout: Duration,
    /// Route names the command calls, when declared.
    pub routes: Option<Vec<String>>,
}
